"""A character-level LSTM language model in plain PyTorch: Embedding, an LSTM with
batch_first and an initial state, Linear, CrossEntropyLoss over every position, Adam and
gradient clipping."""
import torch
import torch.nn.functional as F
from torch import nn

TEXT = "the quick brown fox jumps over the lazy dog. " * 4


class CharLM(nn.Module):
    def __init__(self, vocab, hidden=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, 8)
        self.lstm = nn.LSTM(8, hidden, num_layers=1, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, state=None):
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


def main(initial_state=None, steps=2):
    chars = sorted(set(TEXT))
    ids = torch.tensor([chars.index(c) for c in TEXT])
    torch.manual_seed(0)
    model = CharLM(len(chars))
    if initial_state is not None:
        model.load_state_dict(initial_state)
    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    seq, batch = 3, 4
    losses = []
    for step in range(steps):
        starts = [(step * 7 + 11 * b) % (len(TEXT) - seq - 1) for b in range(batch)]
        x = torch.stack([ids[s:s + seq] for s in starts])
        y = torch.stack([ids[s + 1:s + seq + 1] for s in starts])
        h0 = torch.zeros(1, batch, 16)
        logits, _ = model(x, (h0, h0))
        loss = F.cross_entropy(logits.reshape(-1, len(chars)), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses, start


if __name__ == "__main__":
    print(main()[0])
