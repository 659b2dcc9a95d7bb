"""A small MNIST-style CNN in plain PyTorch: Conv2d, BatchNorm2d, MaxPool2d, Dropout, a
DataLoader over a TensorDataset, CrossEntropyLoss, SGD with momentum and StepLR. The images
are synthetic (each class a bright block at its own place, plus noise), so the program runs
in seconds without a download."""
import numpy as np
import torch
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.0), nn.Linear(16 * 4 * 4, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    images = rng.normal(0, 0.3, (n, 1, 16, 16)).astype(np.float32)
    for i, c in enumerate(labels):
        r, col = divmod(int(c), 5)
        images[i, 0, 2 + 6 * r:6 + 6 * r, 1 + 3 * col:4 + 3 * col] += 2.0
    return torch.from_numpy(images), torch.from_numpy(labels)


def main(initial_state=None, steps=4):
    torch.manual_seed(0)
    model = Net()
    if initial_state is not None:
        model.load_state_dict(initial_state)
    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    loader = DataLoader(TensorDataset(*data()), batch_size=16, shuffle=False)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    losses = []
    model.train()
    for images, labels in loader:
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if len(losses) == steps:
            break
    model.eval()
    with torch.no_grad():
        images, labels = data(32, seed=1)
        accuracy = (model(images).argmax(dim=1) == labels).float().mean().item()
    return losses + [accuracy], start


if __name__ == "__main__":
    print(main()[0])
