"""tinyfw: a small deep-learning framework, built chapter by chapter."""
from tinyfw.device import Device
from tinyfw.dtype import DType, dtypes
from tinyfw.tensor import Tensor
from tinyfw.engine.jit import TinyJit  # noqa: E402  (after Tensor: jit.py uses it)
from tinyfw import nn  # noqa: E402

__all__ = ["Tensor", "TinyJit", "nn", "dtypes", "DType", "Device"]
