"""tinyfw: a small deep-learning framework, built chapter by chapter."""
from tinyfw.device import Device
from tinyfw.dtype import DType, dtypes
from tinyfw.tensor import Tensor

__all__ = ["Tensor", "dtypes", "DType", "Device"]
