"""A regression MLP in plain PyTorch: layers initialized with nn.init (xavier_uniform_,
zeros_, kaiming_normal_), MSELoss, SmoothL1Loss to report, a DataLoader over a TensorDataset
with drop_last, RMSprop and ExponentialLR."""
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_model():
    model = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 16), nn.GELU(),
                          nn.Linear(16, 1))
    for m in model.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    nn.init.kaiming_normal_(model[2].weight, nonlinearity="relu")
    return model


def main(initial_state=None, steps=5):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (50, 3)).astype(np.float32)
    y = (np.sin(2 * x[:, :1]) + x[:, 1:2] * x[:, 2:3]).astype(np.float32)
    torch.manual_seed(0)
    model = make_model()
    if initial_state is not None:
        model.load_state_dict(initial_state)
    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    loader = DataLoader(TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=16,
                        drop_last=True)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    criterion = nn.MSELoss()
    losses = []
    while len(losses) < steps:
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if len(losses) == steps:
                break
        scheduler.step()
    with torch.no_grad():
        report = nn.SmoothL1Loss()(model(torch.tensor(x)), torch.tensor(y)).item()
    return losses + [report], start


if __name__ == "__main__":
    print(main()[0])
