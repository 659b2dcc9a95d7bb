"""The CPU device: kernels rendered as C, compiled by the system's C compiler, run with ctypes."""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from tinyfw.codegen import Kernel, Program, lower
from tinyfw.device import Buffer, NumpyAllocator, Runtime
from tinyfw.renderer_c import render

# -ffp-contract=off: gcc would fuse a*b+c into one fma (rounded once) where it sees fit, so the same
# expression could give different bits in two kernels (and differ from the NUMPY reference).
# -fno-tree-loop-vectorize: gcc 12.2's loop vectorizer miscompiles tinyfw's reduces. Given a float
# sum whose inner loop walks memory backwards (a flip: `acc += data1[ridx0*2 - ridx1 + 1]`), it
# turns the unrolled inner loop into an in-order ("fold-left") reduction chain with the load
# permutation {1 0}, adds both lanes of the vector load, and keeps one of the scalar adds it
# replaced: every element but one per row is counted twice (-fdump-tree-vect-details shows
# "using an in-order (fold-left) reduction"; 80 instead of 55 for a flipped 5x2 sum, at -O2
# and at -O3, with or without -march=native). A float reduction may not be reordered
# (no -ffast-math), so the loop vectorizer has little to gain in tinyfw's kernels anyway;
# chapter 11 vectorizes explicitly (vector types), and the SLP vectorizer stays on.
# tests/test_movement_exhaustive.py runs every small movement chain reduced over each axis.
COMPILE_FLAGS = ["-O2", "-march=native", "-fPIC", "-shared", "-fno-math-errno", "-ffp-contract=off",
                 "-fno-tree-loop-vectorize"]


def cache_dir() -> Path:
    """Where compiled kernels are kept: $TINYFW_CACHE, else ~/.cache/tinyfw/kernels."""
    base = os.getenv("TINYFW_CACHE") or os.path.join(
        os.getenv("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "tinyfw")
    path = Path(base) / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def find_compiler() -> str:
    """The C compiler: $CC, else cc, gcc or clang, whichever is installed."""
    for name in (os.getenv("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    raise RuntimeError("the CPU device needs a C compiler: install gcc (apt-get install gcc) "
                       "or set CC")


class ClangStyleCompiler:
    """Source in, shared library out; libraries are cached on disk by a hash of their source."""

    def compile(self, source: str) -> Path:
        flags = COMPILE_FLAGS
        key = hashlib.sha256((source + " ".join(flags)).encode()).hexdigest()[:24]
        lib = cache_dir() / f"{key}.so"
        if not lib.exists():
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "kernel.so"
                cmd = [find_compiler(), *flags, "-x", "c", "-", "-o", str(out), "-lm"]
                done = subprocess.run(cmd, input=source.encode(), capture_output=True)
                if done.returncode != 0:
                    raise RuntimeError("C compiler failed:\n" + done.stderr.decode() +
                                       "\n--- source ---\n" + source)
                os.replace(out, lib)  # atomic: another process may compile the same kernel
        return lib


class CPUProgram:
    """A compiled kernel: a function in a shared library, called with the buffers' addresses."""

    def __init__(self, name: str, lib_path: Path):
        self.lib = ctypes.CDLL(str(lib_path))
        self.fn = getattr(self.lib, name)
        self.fn.restype = None

    def __call__(self, *buffers: np.ndarray) -> None:
        self.fn(*(ctypes.c_void_p(b.ctypes.data) for b in buffers))


class CPURuntime(Runtime):
    """The compiled CPU device: memory is numpy arrays; kernels are lowered, rendered as C,
    compiled once (cached in memory and on disk) and called."""

    def __init__(self) -> None:
        super().__init__("CPU", NumpyAllocator())
        self.compiler = ClangStyleCompiler()

    def source(self, item: Any) -> str:
        """The C source of a scheduled kernel."""
        return render(self.program(item))

    def program(self, item: Any) -> Program:
        return lower(Kernel.from_ast(item.ast, item.name))

    def code(self) -> tuple[Any, ...]:
        return (lower, render)

    def build(self, item: Any, source: str) -> CPUProgram:
        return CPUProgram(item.name, self.compiler.compile(source))

    def run(self, item: Any, out: Buffer, inputs: list[Buffer]) -> None:
        program = self.prepare(item)
        arrays = [out.ensure_allocated()] + [b.ensure_allocated() if b.device == "CPU"
                                             else b.numpy() for b in inputs]
        program(*arrays)
