"""Neural networks: layers (nn.Linear, nn.Conv2d, ...), optimizers (nn.optim), saving and
loading (nn.state) and datasets (nn.datasets), named as in tinygrad."""
from tinyfw.nn import datasets
from tinyfw.nn import optim, state
from tinyfw.nn.layers import BatchNorm, BatchNorm2d, Conv2d, Dropout, Embedding, LayerNorm, Linear

__all__ = ["Linear", "Conv2d", "BatchNorm", "BatchNorm2d", "LayerNorm", "Embedding", "Dropout",
           "datasets", "optim", "state"]
