# Exercises of chapter 03, generated from tinyfw/runtime/ops_numpy.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/03_lazy_graph
# generated text id: bf0714b85fbf1325 (lets tools.generate tell your edits apart)
"""The reference device NUMPY: an interpreter runs each kernel's AST with numpy, every loop
iteration at once. It renders and compiles nothing (NumpyRenderer): its program is the AST
itself."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from tinyfw.device import Buffer, Runtime
from tinyfw.dtype import DType, dtypes
from tinyfw.renderer.base import Renderer
from tinyfw.shape.symbolic import Var
from tinyfw.uop.ops import Ops, UOp
from tinyfw.shape.view import ShapeTracker


def _c_idiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division rounding toward zero (C), where numpy's // rounds down; x / 0 is 0, and
    MIN / -1 is MIN (the negation wraps, as in torch). a minus its remainder (C's, with the sign
    of a) is a multiple of b between 0 and a, so it cannot overflow and numpy's // of it is
    exact; dividing magnitudes instead goes wrong for MIN, whose magnitude wraps to MIN."""
    safe_b = np.where(b == 0, 1, b)
    q = (a - np.fmod(a, safe_b)) // safe_b  # numpy's MIN // -1 is MIN, with a warning
    return np.where(b == 0, 0, q).astype(a.dtype)


def _c_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Remainder with the sign of the dividend (C); x % 0 is 0 for ints."""
    if a.dtype.kind == "f":
        return np.fmod(a, b)
    safe_b = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, np.fmod(a, safe_b)).astype(a.dtype)


def widen(x: np.ndarray) -> np.ndarray:
    """x, or x as float32 where it is bfloat16: numpy computes bfloat16 through float32 (exact:
    every bfloat16 is a float32), as torch and tinyfw's kernels do."""
    return x.astype(np.float32) if x.dtype == dtypes.bfloat16.np else x


def cast(x: np.ndarray, dtype: DType) -> np.ndarray:
    """x converted to dtype the way C on x86 converts (as torch does): floats truncate toward
    zero, nonzero is true, bfloat16 goes through float32. A float out of an int type's range
    (NaN, the infinities) is undefined in C: it gives what x86 gives, through a signed int of
    32 or 64 bits (tinyfw/codegen/emulate.py writes the same out for the compiled devices)."""
    x = widen(x)
    if dtype.is_bool:
        return x != 0
    if dtype == dtypes.bfloat16:
        return x.astype(np.float32).astype(dtype.np)
    if dtype.is_int and x.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            return _float_to_int(x, dtype)
    return x.astype(dtype.np)


def _float_to_int(x: np.ndarray, dtype: DType) -> np.ndarray:
    """Floats to an int type: through the signed int of 32 or 64 bits, as x86 converts; past
    2**31 (2**63) a uint32 (uint64) converts x - 2**31 (2**63) and sets the top bit."""
    if x.dtype.itemsize == 2:  # float16: as torch, through float32 (exact)
        x = x.astype(np.float32)
    signed = np.dtype(np.int64 if dtype.itemsize == 8 else np.int32)
    small = x.astype(signed).astype(dtype.np)
    if dtype not in (dtypes.uint32, dtypes.uint64):
        return small
    top = 2 ** (8 * dtype.itemsize - 1)
    big = (x - x.dtype.type(top)).astype(signed).astype(dtype.np) ^ dtype.np.type(top)
    return np.where((x < top) | np.isnan(x), small, big)


def _bool_or(fn_bool: Callable, fn_other: Callable) -> Callable:
    return lambda a, b: fn_bool(a, b) if a.dtype == np.bool_ else fn_other(a, b)


@functools.cache
def alu_rules() -> dict[Ops, Callable[..., np.ndarray]]:
    """What each elementwise primitive op computes, as a numpy function of its sources."""
    # TODO 03.alu: write this part. The chapter explains it:
    #   chapters/03_lazy_graph/README.md#evaluating-the-primitive-ops
    raise NotImplementedError("not done yet: 03.alu")


def fold(op: Ops, dtype: DType, operands: list[tuple[Any, DType]]) -> Any:
    """The value of an elementwise op (or CAST) of constants (value, dtype), by this device's
    rules, as a Python number of dtype; None for an op with no rule here (a renderer folds
    constants with it: renderer/wgsl.py)."""
    if op is not Ops.CAST and op not in alu_rules():
        return None
    args = [np.array([value], dtype=dt.np) for value, dt in operands]
    with np.errstate(all="ignore"):
        value = cast(args[0], dtype) if op is Ops.CAST else alu_rules()[op](*args)
    return np.asarray(value).astype(dtype.np)[0].item()


def reduce_axes(x: np.ndarray, op: Ops, axes: tuple[int, ...], dtype: DType) -> np.ndarray:
    """x summed or maxed over axes, which stay as size-1 axes (float16 sums add up in float32)."""
    # TODO 03.reduce: write this part. The chapter explains it:
    #   chapters/03_lazy_graph/README.md#evaluating-the-primitive-ops
    raise NotImplementedError("not done yet: 03.reduce")


def loop_vars(shape: tuple[int, ...]) -> list[Var]:
    """One index variable per axis of shape."""
    return [Var(f"i{d}", 0, max(s - 1, 0)) for d, s in enumerate(shape)]


def read_view(memory: np.ndarray, st: ShapeTracker, fill: object = 0) -> np.ndarray:
    """Every element of a view: memory at the view's index where valid, fill elsewhere."""
    # TODO 03.read_view: write this part. The chapter explains it:
    #   chapters/03_lazy_graph/README.md#reading-memory-through-a-view
    raise NotImplementedError("not done yet: 03.read_view")


def evaluate(node: UOp, src: list[np.ndarray], buffers: list[np.ndarray]) -> np.ndarray:
    """The value of one node of a kernel, given the values of its sources."""
    if node.op is Ops.LOAD:
        return read_view(buffers[node.arg], node.src[0].arg)
    if node.op is Ops.CONST:  # one number in memory; its view only ever reads index 0
        return read_view(np.array([node.arg], dtype=node.dtype.np), node.src[0].arg)
    if node.op is Ops.CAST:
        return cast(src[0], node.dtype)
    if node.op is Ops.BITCAST:
        return src[0].view(node.dtype.np)
    if node.op is Ops.REDUCE:
        return reduce_axes(src[0], node.arg[0], node.arg[1], node.dtype)
    rule = alu_rules()[node.op]
    return np.asarray(rule(*map(widen, src))).astype(node.dtype.np, copy=False)


def run_kernel(ast: UOp, buffers: list[np.ndarray]) -> None:
    """Run one kernel: evaluate its expression everywhere at once and store it in buffers[0]."""
    assert ast.op is Ops.STORE
    values: dict[UOp, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for node in ast.src[1].toposort():
            if node.op is not Ops.VIEW:
                values[node] = evaluate(node, [values[s] for s in node.src
                                               if s.op is not Ops.VIEW], buffers)
    result = values[ast.src[1]]
    index, valid = ast.src[0].arg.to_indexed(loop_vars(result.shape))
    shape: tuple[int, ...] = result.shape  # for numpy's stubs, tuple[Any, ...] would pick ()
    grid = {f"i{d}": g for d, g in enumerate(np.indices(shape, sparse=True))}
    at = np.broadcast_to(np.asarray(index.evaluate(grid)), result.shape)
    buffers[0][at.reshape(-1)] = result.reshape(-1)


ALIGNMENT = 64  # bytes: a cache line, and the width of an AVX-512 register
ALIGNED_FROM = 4096  # bytes: smaller buffers start where numpy puts them


class NumpyAllocator:
    """Memory of the NUMPY reference device (and of CPU and CUDAEMU): a flat numpy array per
    buffer."""

    def alloc(self, size: int, dtype: DType) -> np.ndarray:
        """Zeroed memory (np.zeros: the pages are mapped when first written) that starts on a
        cache line (ALIGNMENT bytes). numpy's own large arrays start 16 bytes past one, so every
        64-byte vector load of an AVX-512 kernel straddled two lines: a 1024 x 1024 matmul took
        42 ms rather than 31 (a 2-core Xeon; bench/README.md). A buffer under ALIGNED_FROM
        bytes is numpy's own: aligning costs 2 us an allocation, more than its loads lose."""
        itemsize = dtype.itemsize
        if size * itemsize < ALIGNED_FROM:
            return np.zeros(size, dtype=dtype.np)
        raw = np.zeros(size * itemsize + ALIGNMENT, dtype=np.uint8)
        start = -raw.ctypes.data % ALIGNMENT
        return raw[start:start + size * itemsize].view(dtype.np)

    def copyin(self, dest: np.ndarray, src: np.ndarray) -> None:
        """Copy src (any shape and strides) into the flat dest in one pass: src.reshape(-1) of
        a strided array would make a temporary copy first."""
        np.copyto(dest.reshape(src.shape), src, casting="unsafe")

    def copyout(self, src: np.ndarray, size: int, dtype: DType) -> np.ndarray:
        """A new array: the caller's to change."""
        return src.copy()


class NumpyProgram:
    """The program of a kernel on NUMPY: the interpreter, which reads the kernel's AST."""

    def __init__(self, name: str, binary: Any = None):
        self.name = name  # (binary: nothing was compiled)

    def __call__(self, ast: UOp, buffers: list[np.ndarray]) -> None:
        """Run the kernel's AST on the buffers (the output first)."""
        run_kernel(ast, buffers)


class NumpyRenderer(Renderer):
    """What NUMPY's kernels can do: the interpreter runs each one's AST as it is, so nothing is
    optimized, rendered or compiled (Renderer's defaults otherwise: float64, exact fmod)."""

    name = "NUMPY"
    compiles = False


class NumpyRuntime(Runtime):
    """The reference device: no source, no compiler; the interpreter evaluates each AST."""

    def __init__(self) -> None:
        super().__init__("NUMPY", NumpyAllocator(), renderer=NumpyRenderer(), compiler=None,
                         program=NumpyProgram)

    def run(self, program: Any, item: Any, out: Buffer, inputs: list[Buffer]) -> None:
        memory = [out.ensure_allocated()] + [b.numpy() for b in inputs]
        program(item.ast, memory)
