"""Kernel libraries loaded in this process: CPUProgram calls a kernel of a library through
ctypes; at most MAX_LOADED_LIBRARIES are loaded at once, the least recently called unloaded
first (and loaded again, verified again, when next called)."""
from __future__ import annotations

import _ctypes
import ctypes
import os
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from tinyfw.device import Buffer
from tinyfw.runtime.c_compiler import ClangStyleCompiler, made_by
from tinyfw.runtime.disk_cache import remove_file

# How many kernel libraries one process keeps loaded at once. Each loaded library holds a few
# memory maps, and Linux allows a process about 65,530 (vm.max_map_count): with every library
# kept, a process failed to load any kernel after about 13,000 ("failed to map segment"). The
# least recently called library is unloaded past this many; its program loads it again when
# it is next called.
MAX_LOADED_LIBRARIES = 1000


# --- libraries loaded in this process ---
def _open_library(data: bytes, directory: Path) -> ctypes.CDLL:
    """Load a library from bytes just verified. They are written to a private file (a fresh
    name in the cache directory, deleted once loaded): dlopen maps a file, and the cache's own
    file could be truncated or replaced by another process between the check and the map."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".loaded-", suffix=".so")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return ctypes.CDLL(tmp)  # a unique name: dlopen never hands back another's handle
    finally:
        remove_file(tmp)  # the mapping outlives the name


# Loaded programs, least recently called first. Guarded by _lock: threads call kernels at once.
# Reentrant: while a thread holds it (loading a library allocates), the garbage collector may
# run a device graph's finalizer on that thread, whose unhold takes it again (a plain Lock
# waited for itself there: a test run hung in test_jit_graph).
_loaded: OrderedDict[CPUProgram, None] = OrderedDict()
_lock = threading.RLock()


def address_of(buffer: Buffer) -> int:
    """The address of a buffer's memory (a numpy array on this device), kept on the buffer."""
    if buffer.address is None:
        memory = buffer.ensure_allocated()
        try:  # (cheaper than numpy's memory.ctypes.data, which makes an object each time)
            buffer.address = ctypes.addressof(ctypes.c_char.from_buffer(memory))
        except (TypeError, ValueError):  # (no byte to point at, or read-only memory)
            buffer.address = int(memory.ctypes.data)
    return buffer.address


def loaded_libraries() -> int:
    """How many kernel libraries this process has loaded now."""
    with _lock:
        return len(_loaded)


def _evict_beyond_limit(keep: CPUProgram) -> None:
    """Unload the least recently called libraries (not keep, none mid-call) past the limit."""
    excess = len(_loaded) - max(MAX_LOADED_LIBRARIES, 1)
    for program in list(_loaded):
        if excess <= 0:
            break
        if program is not keep and program.running == 0:
            program._close()
            excess -= 1


class CPUProgram:
    """A compiled kernel: a function in a shared library, called with the buffers' addresses.
    The library is loaded while the program is among the MAX_LOADED_LIBRARIES most recently
    called; unloaded, it is loaded again (its entry verified again) by the next call."""

    def __init__(self, name: str, lib_path: Path | str, source: str | None = None,
                 compiler: ClangStyleCompiler | None = None):
        self.name, self.path, self.source = name, Path(lib_path), source
        # the flags it was compiled with: the compiler's that made it, if it was made here
        self.compiler = compiler or made_by.get(self.path) or ClangStyleCompiler()
        self.lib: ctypes.CDLL | None = None
        self.fn: Any = None    # the kernel's function; None while the library is unloaded
        self.running = 0       # calls under way (in any thread): never unloaded meanwhile
        self.threaded = False  # takes (core, cores) after the buffers: run on every core
        self._acquire()  # load now: a missing function fails here, not at the first call
        self._release()

    def __repr__(self) -> str:
        """The kernel's name, its library and whether it is loaded."""
        return f"<CPUProgram {self.name} {self.path.name} loaded={self.loaded}>"

    @property
    def loaded(self) -> bool:
        """Whether the library is loaded now."""
        return self.fn is not None

    def __call__(self, *buffers: np.ndarray) -> None:
        """Run the kernel on the buffers (the output first), loading its library if need be."""
        self.call(*[ctypes.c_void_p(b.ctypes.data) for b in buffers])

    def call(self, *args: Any) -> None:
        """Call the kernel's function with these ctypes arguments, loading it if need be."""
        self._call(args, typed=False)

    def call_pointers(self, *addresses: int) -> None:
        """Call the kernel's function with the buffers' addresses (Python ints), loading it if
        need be. (Its parameters are typed as pointers at the first such call: ctypes converts
        them in C, faster than a c_void_p made for each.)"""
        self._call(addresses, typed=True)

    def _call(self, args: tuple[Any, ...], typed: bool) -> None:
        with _lock:  # (_acquire's first step, written out: most calls find it loaded)
            if (fn := self.fn) is not None:
                _loaded.move_to_end(self)
                self.running += 1
        if fn is None:
            fn = self._acquire()
        try:
            if typed and fn.argtypes is None:
                fn.argtypes = [ctypes.c_void_p] * len(args)
            fn(*args)
        finally:
            self._release()

    def hold(self) -> None:
        """Keep the library loaded until unhold: a device graph calls the function by its
        address (tinyfw/runtime/graph_cpu.py)."""
        self._acquire()

    def unhold(self) -> None:
        """The hold is over."""
        self._release()

    def address(self) -> int:
        """The address of the kernel's function (held: see hold)."""
        assert self.running > 0 and self.fn is not None, "hold() the program first"
        return int(ctypes.cast(self.fn, ctypes.c_void_p).value or 0)

    def unload(self) -> None:
        """Unload the library now (the next call loads it again)."""
        with _lock:
            if self.running == 0:
                self._close()

    def _acquire(self) -> Any:
        """The kernel's function, loaded if need be, marked in use until _release: another
        thread's load cannot unload it mid-call (calling into an unloaded library crashes)."""
        with _lock:
            if self.fn is not None:
                _loaded.move_to_end(self)
                self.running += 1
                return self.fn
        data = self.compiler.library_bytes(self.path, self.source)  # may compile: unlocked
        with _lock:
            if self.fn is None:  # (unless another thread loaded it meanwhile)
                lib = _open_library(data, self.path.parent)
                try:
                    fn = getattr(lib, self.name)
                except AttributeError:
                    _dlclose(lib)
                    raise
                fn.restype = None
                self.lib, self.fn = lib, fn
                self.threaded = hasattr(lib, "tf_threaded")  # (ThreadedC's mark)
                _loaded[self] = None
            _loaded.move_to_end(self)
            self.running += 1
            _evict_beyond_limit(keep=self)
            return self.fn

    def _release(self) -> None:
        """The call that _acquire allowed is done."""
        with _lock:
            self.running -= 1

    def _close(self) -> None:
        """Unload the library (with _lock held, no call under way)."""
        if self.lib is not None:
            lib, self.lib, self.fn = self.lib, None, None
            _loaded.pop(self, None)
            _dlclose(lib)


def _dlclose(lib: ctypes.CDLL) -> None:
    """Unload a library ctypes loaded (ctypes itself never does). Its functions must not be
    called again: their code is no longer mapped."""
    _ctypes.dlclose(lib._handle)
