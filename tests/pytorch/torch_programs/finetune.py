"""Fine-tuning in plain PyTorch: a backbone's weights saved with torch.save and loaded with
torch.load into a new model, the backbone frozen (requires_grad_(False), eval() for its
BatchNorm), a new head trained with SGD (Nesterov momentum, weight decay) and MultiStepLR
over the parameters that require grad."""
import io

import numpy as np
import torch
from torch import nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        return self.pool(torch.relu(self.bn(self.conv(x)))).flatten(1)


class Model(nn.Module):
    def __init__(self, classes=4):
        super().__init__()
        self.backbone = Backbone()
        self.head = nn.Linear(8, classes)

    def forward(self, x):
        return self.head(self.backbone(x))


def main(initial_state=None, steps=4):
    rng = np.random.default_rng(0)
    images = torch.tensor(rng.standard_normal((8, 3, 8, 8)).astype(np.float32))
    labels = torch.tensor(rng.integers(0, 4, 8))
    torch.manual_seed(0)
    pretrained = Model()
    if initial_state is not None:
        pretrained.load_state_dict(initial_state)
    start = {k: v.detach().clone() for k, v in pretrained.state_dict().items()}
    buffer = io.BytesIO()
    torch.save(pretrained.backbone.state_dict(), buffer)
    buffer.seek(0)

    model = Model()
    model.backbone.load_state_dict(torch.load(buffer, weights_only=True))
    model.head.load_state_dict(pretrained.head.state_dict())
    model.backbone.requires_grad_(False)
    model.backbone.eval()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(trainable, lr=0.1, momentum=0.9, nesterov=True,
                                weight_decay=1e-3)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2], gamma=0.1)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    frozen = (model.backbone.conv.weight - pretrained.backbone.conv.weight).abs().sum().item()
    return losses + [len(trainable), frozen], start


if __name__ == "__main__":
    print(main()[0])
