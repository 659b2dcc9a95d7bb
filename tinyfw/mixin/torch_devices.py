"""torch's ways of naming a device and a dtype, turned into tinyfw's (Tensor.to and .cuda take
them; tinyfw.torch.device is the class here)."""
from __future__ import annotations

from typing import Any

from tinyfw.device import Device
from tinyfw.dtype import DType
from tinyfw.mixin.core import TensorCore


class device:  # noqa: N801  (torch's name)
    """torch.device("cpu"), torch.device("cuda:0"): a device by torch's name; str() is
    torch's spelling, .tinyfw tinyfw's (CPU, CUDA)."""

    def __init__(self, type: Any, index: int | None = None):  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index
        kind, _, idx = str(type).partition(":")
        self.type: str = kind.lower()
        self.index: int | None = int(idx) if idx else index

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    @property
    def tinyfw(self) -> str:
        return tinyfw_device(str(self))


def cuda_available() -> bool:
    """Whether tinyfw's CUDA device starts here (a GPU and its driver; tinyfw.probe also runs a
    kernel on it)."""
    if "CUDA" not in Device.names:
        return False
    try:
        Device["CUDA"]
    except Exception:  # no driver, no GPU: each fails in its own way
        return False
    return True


def tinyfw_device(name: Any) -> str:
    """tinyfw's device for torch's name: "cpu" is CPU, "cuda" CUDA where there is one (else
    torch's error); a tinyfw name ("CL", "WEBGPU") is taken as it is."""
    text = str(name.type if isinstance(name, device) and name.index is None else name)
    kind = text.partition(":")[0].lower()
    if kind == "cuda" and not cuda_available():
        raise RuntimeError("Found no NVIDIA driver on your system. Please check that you have an "
                           "NVIDIA GPU and installed a driver (tinyfw's CUDA device does not run "
                           "here; CPU, CL or WEBGPU may: torch.device('cpu'))")
    if kind == "mps":
        raise RuntimeError("tinyfw has no MPS device: use 'cpu' (or tinyfw's CL or WEBGPU)")
    return Device.canonicalize(text)


def device_and_dtype(*args: Any, **kwargs: Any) -> tuple[str | None, DType | None]:
    """The (device, dtype) of to(...)'s torch forms: to(device), to(dtype), to(device, dtype),
    to(tensor), to(device=..., dtype=...); non_blocking and copy are accepted."""
    dev: Any = kwargs.pop("device", None)
    dt: Any = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("copy", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, TensorCore):  # (a Tensor)
            dev, dt = a.device, a.dtype
        elif isinstance(a, DType):
            dt = a
        elif isinstance(a, (str, device)):
            dev = a
        elif isinstance(a, bool):
            continue  # non_blocking given by position
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    return (None if dev is None else tinyfw_device(dev)), dt
