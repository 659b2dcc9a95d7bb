"""Devices and their memory: the backend contract every device implements."""
from __future__ import annotations

import importlib
import os
from types import BuiltinFunctionType, FunctionType, MethodType
from typing import Any, Protocol
from collections.abc import Callable

import numpy as np

from tinyfw.dtype import DType
from tinyfw.renderer.base import Renderer


class Allocator(Protocol):
    """What a device must provide to hold data: allocate, copy host data in, copy it out."""

    def alloc(self, size: int, dtype: DType) -> Any: ...
    def copyin(self, dest: Any, src: np.ndarray) -> None: ...
    def copyout(self, src: Any, size: int, dtype: DType) -> np.ndarray: ...


class Buffer:
    """Flat memory of `size` elements of `dtype` on a device; allocated on first use. With a
    `base` (a buffer of the same device and dtype, at least as large), it has no memory of its
    own: it is the first `size` elements of base's (TinyJit's memory planner shares memory so,
    tinyfw/engine/memory.py)."""

    made = 0  # buffers made so far (each one's serial: TinyJit tells its constants by it)

    def __init__(self, device: str, size: int, dtype: DType, initial: np.ndarray | None = None,
                 base: Buffer | None = None):
        self.device, self.size, self.dtype = device, size, dtype
        Buffer.made += 1
        self.serial = Buffer.made
        self.constant = False  # a number's value, never written (engine/const_args.py)
        self.base: Buffer | None = base
        assert base is None or (base.base is None and base.device == device and
                                base.dtype == dtype and base.size >= size), "a bad base"
        self._opaque: Any = None
        # where the memory is the host's (a numpy array): its address, once a launch asked for
        # it (numpy's .ctypes.data costs about a microsecond each time; tinyfw/runtime/c_library.py)
        self.address: int | None = None
        if initial is not None:
            self.copyin(initial)

    def __repr__(self) -> str:
        return f"<Buffer {self.device} {self.size} {self.dtype.name}>"

    @property
    def allocated(self) -> bool:
        return self._opaque is not None

    def ensure_allocated(self) -> Any:
        """The device memory of this buffer, allocating it if needed."""
        if self._opaque is None and self.base is not None:
            # numpy memory (CPU, NUMPY, CUDAEMU): a view of its first elements; a device's own
            # (CL, CUDA, WEBGPU): the base's as it is, whose allocators copy just `size`
            memory = self.base.ensure_allocated()
            self._opaque = memory[:self.size] if isinstance(memory, np.ndarray) else memory
        if self._opaque is None:
            self._opaque = Device[self.device].allocator.alloc(self.size, self.dtype)
        return self._opaque

    def copyin(self, data: np.ndarray) -> Buffer:
        """Fill the buffer from host memory (copied: the buffer never aliases data)."""
        assert data.size == self.size, f"copyin of {data.size} elements into {self.size}"
        # copy=False: data of the buffer's dtype already goes to the allocator as it is (astype
        # copied it, a whole temporary array, before the allocator copied it again)
        data = np.asarray(data).astype(self.dtype.np, copy=False)
        Device[self.device].allocator.copyin(self.ensure_allocated(), data)
        return self

    def host_view(self) -> np.ndarray:
        """The buffer's memory as a flat numpy array to read: itself, with no copy, where the
        device keeps its memory in numpy arrays (CPU, NUMPY, CUDAEMU), else a host copy."""
        memory = self.ensure_allocated()
        if isinstance(memory, np.ndarray) and memory.dtype == self.dtype.np:
            return memory
        return self.numpy()

    def numpy(self) -> np.ndarray:
        """A host copy of the buffer, flat: a new, writable array that shares no memory with the
        buffer (Tensor.numpy returns it as it is)."""
        memory = self.ensure_allocated()
        out = Device[self.device].allocator.copyout(memory, self.size, self.dtype)
        # Every allocator here copies; another one might hand back a view of its
        # memory or a read-only array (np.frombuffer): copy those rather than give them out.
        shared = isinstance(memory, np.ndarray) and np.may_share_memory(out, memory)
        return out.copy() if shared or not out.flags.writeable else out


PLAIN = (str, int, float, bool, type(None))


def part_identity(part: Any) -> tuple[Any, ...]:
    """A device's part (a compiler, a program class) as plain values, for a program's key
    (tinyfw/engine/program.py): the qualified name of its class (of itself, a class or a
    function) and its settings: each attribute of its own that is a str, a number, a bool or
    None, or a list or tuple of those, and the name of each function it holds."""
    if part is None or isinstance(part, (type, FunctionType, BuiltinFunctionType, MethodType)):
        return (_qualified(part),)
    settings: list[tuple[str, Any]] = []
    for name, value in vars(part).items():
        if isinstance(value, PLAIN):
            settings.append((name, value))
        elif isinstance(value, (list, tuple)) and all(isinstance(v, PLAIN) for v in value):
            settings.append((name, tuple(value)))
        elif callable(value) and hasattr(value, "__qualname__"):
            settings.append((name, _qualified(value)))
    return (_qualified(type(part)), *settings)


def _qualified(code: Any) -> str:
    """A class's or a function's module and qualified name ("" for None)."""
    if code is None:
        return ""
    name = getattr(code, "__qualname__", None) or repr(code)
    return f"{getattr(code, '__module__', '')}.{name}"


class Runtime:
    """A device, which holds only its parts (tinygrad v0.9's `Compiled` is the model): a name,
    an allocator, a renderer (a kernel's linear program to source), a compiler (source to a
    binary; None where the program class builds the source itself, or nothing is compiled) and
    a program class (a binary loaded, ready to launch). tinyfw/engine/program.py turns a kernel
    into a program with these parts; the device only launches programs (`run`). What the
    device's kernels can do (threads, vectors, float64, limits...) its renderer's fields say
    (tinyfw/renderer/base.py), which codegen and the engine read, never the device's name."""

    cores: int = 1                 # how many cores run a threaded kernel at once (CPU)
    graph: Any = None              # its DeviceGraph class (tinyfw/runtime/graph.py), if any

    def __init__(self, name: str, allocator: Allocator, renderer: Renderer,
                 compiler: Any = None, program: Callable[..., Any] | None = None):
        self.name, self.allocator = name, allocator
        self.renderer: Renderer = renderer
        self.compiler = compiler
        self.program = program

    # (the renderer's fields the front end reads, here for tinyfw/tensor.py and its mixins)
    @property
    def has_float64(self) -> bool:
        """Whether the device computes in float64 (Renderer.has_float64)."""
        return self.renderer.has_float64

    @property
    def has_fmod(self) -> bool:
        """Whether it computes C's exact fmod of floats (Renderer.has_fmod)."""
        return self.renderer.has_fmod

    @property
    def max_reduce(self) -> int | None:
        """The longest reduce one thread may run, None for no limit (Renderer.max_reduce)."""
        return self.renderer.max_reduce

    def identity(self) -> tuple[Any, ...]:
        """The device's parts as plain values, part of a program's key (engine/program.py): its
        name and cores, its renderer's class and fields (Renderer.identity), and each other
        part's class and settings (part_identity)."""
        return (self.name, self.cores, self.renderer.identity(),
                *map(part_identity, self.parts()))

    def parts(self) -> tuple[Any, ...]:
        """The parts a program is made with, but the renderer: the compilers (the one each
        kernel gets: compiler_for) and the program class."""
        return (self.compiler, self.program)

    def compiler_for(self, kernel: Any) -> Any:
        """The compiler of one kernel: the device's (CPU compiles reduces with other flags)."""
        return self.compiler

    def load(self, name: str, binary: Any, buffers: int) -> Any:
        """The binary of kernel `name` (of `buffers` buffers, the output first) loaded by the
        program class, ready to launch."""
        if self.program is None:
            raise NotImplementedError(f"{self.name} has no program class")
        return self.program(name, binary)

    def load_many(self, kernels: list[tuple[str, Any, int]]) -> list[Any]:
        """Several kernels' binaries (name, binary, buffers each) loaded, in order: one by one
        here; a device that builds many kernels in one go for the price of one (CL) does so."""
        return [self.load(name, binary, buffers) for name, binary, buffers in kernels]

    def run(self, program: Any, item: Any, out: Buffer, inputs: list[Buffer]) -> None:
        """Launch a loaded program of a scheduled kernel, writing out from inputs."""
        raise NotImplementedError(f"{self.name} cannot run kernels")

    def synchronize(self) -> None:
        """Waits until every kernel launched so far has finished (run() may only queue it)."""


class _DeviceRegistry:
    """Device["NUMPY"] gives a device; Device.DEFAULT names the default device.

    A name may carry an index: "CPU:1", "NUMPY:2", "CL:0" are devices of one kind, each with
    buffers of its own, so one machine can play several (chapter 13: tinyfw/multi.py shards a
    tensor over them). Index 0 is the plain name ("CPU:0" is "CPU", exactly today's device).
    The devices of one kind share one runtime (its compiler, its caches): on one machine the
    index only says whose memory a buffer is, and a COPY between two of them is a transfer."""

    def __init__(self) -> None:
        self._runtimes: dict[str, Runtime] = {}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(_RUNTIMES)

    def canonicalize(self, name: str | None) -> str:
        """A device name in its standard spelling ('numpy' and 'NUMPY:0' -> 'NUMPY', 'cpu:1'
        -> 'CPU:1')."""
        if name is None:
            return self.DEFAULT
        base, _, index = str(name).partition(":")
        base = base.upper()
        if base not in self.names:
            raise RuntimeError(f"unknown device {name!r}: tinyfw has {', '.join(self.names)}")
        if index in ("", "0"):
            return base
        if not index.isdigit():
            raise RuntimeError(f"bad device index in {name!r}: say KIND:n, n a number >= 0")
        return f"{base}:{int(index)}"

    @property
    def DEFAULT(self) -> str:
        return self.canonicalize(os.getenv("DEVICE", "CPU"))

    def __getitem__(self, name: str) -> Runtime:
        if isinstance(name, tuple):  # a tensor over many devices (tinyfw/multi.py) asks what
            return self[name[0]]     # its devices can do: the first one answers for all
        if (runtime := self._runtimes.get(name)) is not None:  # (a standard name, started)
            return runtime
        name = self.canonicalize(name)
        if name not in self._runtimes:
            kind = kind_of(name)
            if kind not in self._runtimes:
                module, cls = _RUNTIMES[kind]
                self._runtimes[kind] = getattr(importlib.import_module(module), cls)()
            self._runtimes[name] = self._runtimes[kind]  # "CPU:1" runs on CPU's runtime
        return self._runtimes[name]


def kind_of(device: str) -> str:
    """The kind of a device name, its index dropped: 'CPU:1' -> 'CPU'."""
    return device.partition(":")[0]


# Every device: the module and class of its runtime, imported when the device is first used.
_RUNTIMES: dict[str, tuple[str, str]] = {
    "CPU": ("tinyfw.runtime.ops_cpu", "CPURuntime"),
    "NUMPY": ("tinyfw.runtime.ops_numpy", "NumpyRuntime"),
    "CL": ("tinyfw.runtime.ops_cl", "CLRuntime"),
    "CUDA": ("tinyfw.runtime.ops_cuda", "CUDARuntime"),
    "CUDAEMU": ("tinyfw.runtime.ops_cuda", "CUDAEmulatorRuntime"),
    "WEBGPU": ("tinyfw.runtime.ops_webgpu", "WebGPURuntime"),
}

Device = _DeviceRegistry()
