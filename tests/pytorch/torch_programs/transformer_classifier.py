"""A small Transformer encoder classifier in plain PyTorch: token and position embeddings,
TransformerEncoder (batch_first, a key padding mask), mean pooling over the real tokens,
CrossEntropyLoss with label smoothing, AdamW and OneCycleLR."""
import numpy as np
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, vocab=20, d_model=16, classes=3, max_len=8):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d_model, padding_idx=0)
        self.positions = nn.Parameter(torch.zeros(1, max_len, d_model))
        layer = nn.TransformerEncoderLayer(d_model, nhead=2, dim_feedforward=32, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, classes)

    def forward(self, x):
        pad = x == 0
        h = self.encoder(self.tokens(x) + self.positions[:, :x.shape[1]],
                         src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).float()
        pooled = (h * keep).sum(dim=1) / keep.sum(dim=1)
        return self.head(self.norm(pooled))


def batch(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 20, (6, 8))
    lengths = rng.integers(4, 9, 6)
    for i, n in enumerate(lengths):
        x[i, n:] = 0
    y = (x[:, 0] % 3)
    return torch.tensor(x), torch.tensor(y)


def main(initial_state=None, steps=3):
    torch.manual_seed(0)
    model = Classifier()
    if initial_state is not None:
        model.load_state_dict(initial_state)
    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=steps)
    losses = []
    for step in range(steps):
        x, y = batch(step)
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return losses, start


if __name__ == "__main__":
    print(main()[0])
