"""tinyfw: a small deep-learning framework, built chapter by chapter."""
from tinyfw.device import Device
from tinyfw.dtype import DType, dtypes
from tinyfw.tensor import Tensor
from tinyfw.jit.jit import TinyJit  # noqa: E402  (after Tensor: jit.py uses it)

__all__ = ["Tensor", "TinyJit", "nn", "dtypes", "DType", "Device"]


def __getattr__(name: str) -> object:
    """tinyfw.nn is imported when first used (`from tinyfw import nn` or `tinyfw.nn`): a
    program that only computes with tensors does not pay for layers, optimizers and datasets
    at import."""
    if name == "nn":
        import importlib
        return importlib.import_module("tinyfw.nn")
    raise AttributeError(f"module 'tinyfw' has no attribute {name!r}")
