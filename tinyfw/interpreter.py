"""The reference device: evaluates a lazy graph op by op with numpy."""
from __future__ import annotations

from typing import Callable

import numpy as np

from tinyfw.dtype import DType, dtypes
from tinyfw.uop import Ops, UOp


def _c_idiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division rounding toward zero (C), where numpy's // rounds down."""
    safe_b = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(safe_b)
    return np.where(b == 0, 0, np.where((a < 0) != (b < 0), -q, q)).astype(a.dtype)


def _c_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Remainder with the sign of the dividend (C)."""
    if a.dtype.kind == "f":
        return np.fmod(a, b)
    safe_b = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, np.fmod(a, safe_b)).astype(a.dtype)


def _cast(x: np.ndarray, dtype: DType) -> np.ndarray:
    if dtype.is_bool:
        return x != 0
    if dtype.is_int and x.dtype.kind == "f":  # C truncation; out-of-range values are undefined
        x = np.trunc(np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0))
    return x.astype(dtype.np)


def _reduce(x: np.ndarray, node: UOp) -> np.ndarray:
    op, axes = node.arg
    if op is Ops.ADD:
        acc = np.float32 if node.dtype == dtypes.float16 else node.dtype.np
        return np.sum(x, axis=axes, keepdims=True, dtype=acc).astype(node.dtype.np)
    if x.size == 0:
        return np.full(node.shape, dtypes.min(node.dtype), dtype=node.dtype.np)
    return np.max(x, axis=axes, keepdims=True)


def _logical_or_bitwise(fn_bool: Callable, fn_int: Callable) -> Callable:
    return lambda a, b: fn_bool(a, b) if a.dtype == np.bool_ else fn_int(a, b)


ALU_RULES: dict[Ops, Callable[..., np.ndarray]] = {
    Ops.NEG: lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.negative(x),
    Ops.EXP2: np.exp2, Ops.LOG2: np.log2, Ops.SIN: np.sin, Ops.SQRT: np.sqrt,
    Ops.RECIPROCAL: lambda x: np.reciprocal(x), Ops.TRUNC: np.trunc,
    Ops.ADD: _logical_or_bitwise(np.logical_or, np.add),
    Ops.MUL: _logical_or_bitwise(np.logical_and, np.multiply),
    Ops.MAX: np.maximum, Ops.MOD: _c_mod, Ops.IDIV: _c_idiv,
    Ops.CMPLT: np.less, Ops.CMPNE: np.not_equal,
    Ops.AND: np.bitwise_and, Ops.OR: np.bitwise_or, Ops.XOR: np.bitwise_xor,
    Ops.WHERE: np.where,
}


def evaluate(node: UOp, src: list[np.ndarray]) -> np.ndarray:
    """The value of one node given the values of its sources."""
    op, arg = node.op, node.arg
    if op is Ops.BUFFER:
        return arg.numpy()
    if op is Ops.CONST:
        return np.array(arg, dtype=node.dtype.np)
    if op is Ops.CAST:
        return _cast(src[0], node.dtype)
    if op in ALU_RULES:
        return np.asarray(ALU_RULES[op](*src)).astype(node.dtype.np, copy=False)
    if op is Ops.REDUCE:
        return _reduce(src[0], node)
    x = src[0] if src else None
    if op is Ops.RESHAPE:
        return x.reshape(arg)
    if op is Ops.PERMUTE:
        return x.transpose(arg)
    if op is Ops.EXPAND:
        return np.broadcast_to(x, arg)
    if op is Ops.PAD:
        return np.pad(x, arg)
    if op is Ops.SHRINK:
        return x[tuple(slice(b, e) for b, e in arg)]
    if op is Ops.FLIP:
        return np.flip(x, axis=tuple(i for i, f in enumerate(arg) if f))
    if op in (Ops.CONTIGUOUS, Ops.DETACH, Ops.COPY):
        return x
    raise NotImplementedError(f"the interpreter has no rule for {op}")


def run(root: UOp, known: Callable[[UOp], np.ndarray | None] = lambda node: None) -> np.ndarray:
    """The value of root, evaluating each node of its graph once (sources first). Nodes whose
    value `known` gives are not evaluated, and neither is anything below them."""
    values: dict[UOp, np.ndarray] = {}
    stack: list[tuple[UOp, bool]] = [(root, False)]
    with np.errstate(all="ignore"):
        while stack:  # depth first, sources before users, never below a known value
            node, sources_ready = stack.pop()
            if node in values or node.op is Ops.DEVICE:
                continue
            if (value := known(node)) is not None:
                values[node] = value
            elif sources_ready:
                values[node] = evaluate(node, [values[s] for s in node.src
                                               if s.op is not Ops.DEVICE])
            else:
                stack.append((node, True))
                stack.extend((s, False) for s in node.src if s not in values)
    return values[root]
