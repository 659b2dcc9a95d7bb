"""Random calls over the whole Tensor API against torch (issue 38, "Keep finding them"): scans,
sort/topk, scatter/gather, einsum, interpolate, transposed and 1-3d convolutions, pools with every
option, losses with every option, advanced indexing and setitem, integer and float16/bfloat16 math.

Each program draws one entry of API (below), its arguments, and inputs whose values are drawn to
hit edges on purpose: ties, +-inf, nan, -0.0, empty shapes, the limits of integer dtypes. It runs
on tinyfw (on the device given by DEVICE) and on torch, and compares:

- the exception: where torch raises, tinyfw raises an exception of the same class (or a subclass),
  or gives an answer (tinyfw may accept more); where torch answers, tinyfw must not raise;
- each result's shape and dtype, exactly (int64 is not int32; on a device without 64-bit ints,
  WEBGPU, torch's int64 results are tinyfw's index dtype, int32, by design);
- each result's values, nan equal to nan, infinities matching, within a tolerance set by the
  dtype (exact for ints and bools);
- the gradient of every float32 input where torch gives one, of (out * weights).sum().

A fixed-seed slice of SLICE programs runs in the normal test run (seeds 0..SLICE-1, one test a
chunk of programs); TINYFW_DIFF_PROGRAMS=5000 runs that many instead (a long run, by hand), and
TINYFW_DIFF_FIRST=N starts at seed N. Each mismatch names its seed and the program, so that
`TINYFW_DIFF_SEED=1234 pytest tests/numerics/test_differential_api.py -k replay -s` replays one.

Mismatches that are real tinyfw bugs not fixed yet are listed in KNOWN: each has a pinned case
that runs as xfail(strict=True), so that it fails loudly once fixed, and a predicate that lets
the random run count the same bug instead of failing on it again.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.helpers import numpy_of, torch_of
from tinyfw import Device, Tensor, dtypes
from tinyfw.mixin.core import index_dtype
from tinyfw.renderer.base import NotSupportedError

pytestmark = pytest.mark.device_subset

SLICE = 100
CHUNK = 50
F32, F16, BF16, F64 = np.float32, np.float16, dtypes.bfloat16.np, np.float64
INTS = (np.int8, np.int16, np.int32, np.int64, np.uint8)
FLOATS = (F32, F32, F32, F16, BF16)  # float32 most often: its gradients are compared
INF, NAN = math.inf, math.nan

Arrays = list[Any]  # numpy arrays, or Python values passed as they are
Kw = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# inputs with edge values drawn on purpose


@dataclass
class Draw:
    """A program's random source: numpy's generator and how edgy this program is."""
    rng: np.random.Generator
    special: bool  # nan, +-inf and -0.0 among float values
    ties: bool  # values from a grid of few values: ties everywhere
    empty: bool  # shapes with a 0 now and then
    limits: bool  # integer values at their dtype's limits

    def int(self, lo: int, hi: int) -> int:
        """An int in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def pick(self, seq: Any) -> Any:
        return seq[int(self.rng.integers(len(seq)))]

    def coin(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def shape(self, ndim: int, lo: int = 1, hi: int = 5) -> tuple[int, ...]:
        dims = [self.int(lo, hi) for _ in range(ndim)]
        if self.empty and ndim and self.coin(0.5):
            dims[self.int(0, ndim - 1)] = 0
        return tuple(dims)

    def floats(self, shape: tuple[int, ...], dtype: Any = F32, lo: float = -3.0,
               hi: float = 3.0) -> np.ndarray:
        if self.ties:
            x = self.rng.integers(-2, 3, size=shape).astype(np.float64) * 0.5
        else:
            x = self.rng.uniform(lo, hi, size=shape)
        x = np.array(x, dtype=np.float64)
        if self.special and x.size:
            mask = np.asarray(self.rng.random(size=shape) < 0.2)
            x[mask] = self.rng.choice([NAN, INF, -INF, -0.0], size=int(mask.sum()))
        return np.asarray(x).astype(dtype)

    def ints(self, shape: tuple[int, ...], dtype: Any = np.int32, lo: int = -4,
             hi: int = 4) -> np.ndarray:
        info = np.iinfo(dtype)
        x = self.rng.integers(max(lo, info.min), min(hi, info.max) + 1, size=shape)
        x = np.array(x).astype(dtype)
        if self.limits and x.size:
            mask = np.asarray(self.rng.random(size=shape) < 0.3)
            x[mask] = self.rng.choice([info.min, info.max, info.max - 1, info.min + 1],
                                      size=int(mask.sum())).astype(dtype)
        return x

    def values(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        if dtype == np.bool_:
            return np.asarray(self.rng.random(size=shape) < 0.5)
        if np.dtype(dtype).kind in "iu":
            return self.ints(shape, dtype)
        return self.floats(shape, dtype)

    def axis(self, ndim: int) -> int:
        return self.int(-ndim, ndim - 1) if ndim else self.pick([0, -1])


def new_draw(seed: int) -> Draw:
    rng = np.random.default_rng([38, seed])
    flags = rng.random(4)
    return Draw(rng, special=bool(flags[0] < 0.35), ties=bool(flags[1] < 0.4),
                empty=bool(flags[2] < 0.15), limits=bool(flags[3] < 0.4))


# ---------------------------------------------------------------------------------------------
# the API, one entry a family of calls


@dataclass(frozen=True)
class Entry:
    """draw(d) -> (inputs, kw); tiny(*inputs, **kw) and ref(*inputs, **kw) make the results.
    grad: float32 inputs require grad (their gradients are compared)."""
    name: str
    draw: Callable[[Draw], tuple[Arrays, Kw]]
    tiny: Callable[..., Any]
    ref: Callable[..., Any]
    grad: bool = True
    rtol: float = 1e-4  # for float32; float16/bfloat16 results take their own
    atol: float = 1e-5
    index_outputs: tuple[int, ...] = ()  # results compared as indices (see tie_free_indices)


API: list[Entry] = []


def entry(name: str, draw: Callable[[Draw], tuple[Arrays, Kw]], tiny: Callable[..., Any],
          ref: Callable[..., Any] | None = None, **opts: Any) -> None:
    API.append(Entry(name, draw, tiny, ref or tiny, **opts))


UNARY = ["exp", "log", "sqrt", "sigmoid", "tanh", "relu", "abs", "neg", "floor", "ceil", "round",
         "trunc", "sign", "reciprocal", "sin", "cos", "exp2", "log2", "expm1", "log1p", "rsqrt",
         "square", "softsign", "erf", "isnan", "isinf", "isfinite", "logical_not"]


def draw_unary(d: Draw) -> tuple[Arrays, Kw]:
    return [d.floats(d.shape(d.int(0, 3)), d.pick(FLOATS))], {"op": d.pick(UNARY)}


entry("unary", draw_unary, lambda x, op: getattr(x, op)())

ACTIVATIONS = [("gelu", F.gelu), ("silu", F.silu), ("softplus", F.softplus), ("elu", F.elu),
               ("leaky_relu", F.leaky_relu), ("hardswish", F.hardswish), ("mish", F.mish),
               ("hardsigmoid", F.hardsigmoid), ("relu6", F.relu6), ("selu", F.selu),
               ("logsigmoid", F.logsigmoid), ("hardtanh", F.hardtanh)]


def draw_activation(d: Draw) -> tuple[Arrays, Kw]:
    return [d.floats(d.shape(d.int(0, 3)), d.pick(FLOATS))], {"i": d.int(0, len(ACTIVATIONS) - 1)}


entry("activation", draw_activation, lambda x, i: getattr(x, ACTIVATIONS[i][0])(),
      lambda x, i: ACTIVATIONS[i][1](x))

BINARY_FLOAT = ["add", "sub", "mul", "truediv", "maximum", "minimum", "pow", "eq", "lt", "ge",
                "ne", "atan2_free_copysign"]
BINARY_INT = ["add", "sub", "mul", "floordiv", "mod", "maximum", "minimum", "eq", "lt",
              "and", "or", "xor", "lshift", "rshift"]
OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "pow": lambda a, b: a ** b, "eq": lambda a, b: a == b, "lt": lambda a, b: a < b,
    "ge": lambda a, b: a >= b, "ne": lambda a, b: a != b, "and": lambda a, b: a & b,
    "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
    "lshift": lambda a, b: a << b, "rshift": lambda a, b: a >> b,
    "maximum": lambda a, b: a.maximum(b) if isinstance(a, Tensor) else torch.maximum(a, b),
    "minimum": lambda a, b: a.minimum(b) if isinstance(a, Tensor) else torch.minimum(a, b),
    "atan2_free_copysign": lambda a, b: a.copysign(b),
}


def broadcast_pair(d: Draw) -> tuple[tuple[int, ...], tuple[int, ...]]:
    shape = d.shape(d.int(0, 3))
    other = tuple(1 if d.coin(0.3) else n for n in shape)[d.int(0, len(shape)):]
    return (shape, other) if d.coin() else (other, shape)


def draw_binary(d: Draw) -> tuple[Arrays, Kw]:
    a, b = broadcast_pair(d)
    if d.coin(0.45):
        dt = d.pick(INTS)
        op = d.pick(BINARY_INT)
        x, y = d.ints(a, dt), d.ints(b, dt)
        if op in ("lshift", "rshift"):
            y = np.abs(d.ints(b, dt, 0, 3).astype(np.int64)).clip(0, 3).astype(dt)
        if op in ("floordiv", "mod"):
            y = np.where(y == 0, 1, y).astype(dt)  # torch raises on an integer division by 0
    else:
        dt = d.pick(FLOATS)
        op = d.pick(BINARY_FLOAT)
        x, y = d.floats(a, dt), d.floats(b, dt)
    if d.coin(0.2):  # a Python number as the second operand
        y = y.reshape(-1)[0].item() if y.size else 2
    return [x, y], {"op": op}


entry("binary", draw_binary, lambda x, y, op: OPS[op](x, y))

REDUCE = ["sum", "mean", "max", "min", "prod", "argmax", "argmin", "std", "var", "logsumexp",
          "any", "all"]


def draw_reduce(d: Draw) -> tuple[Arrays, Kw]:
    ndim = d.int(0, 3)
    op = d.pick(REDUCE)
    dt = np.bool_ if op in ("any", "all") else d.pick(FLOATS + (np.int32, np.int64))
    x = d.values(d.shape(ndim), dt)
    kw: Kw = {"op": op, "keepdim": d.coin()}
    if op in ("argmax", "argmin", "logsumexp", "max", "min") or d.coin(0.6):
        kw["axis"] = d.axis(ndim)
    elif op not in ("argmax", "argmin") and ndim > 1 and d.coin():
        kw["axis"] = (0, ndim - 1)
    if op in ("std", "var"):
        kw["correction"] = d.pick([0, 1, 2])
    return [x], kw


def tiny_reduce(x: Tensor, op: str, keepdim: bool, axis: Any = None, **kw: Any) -> Any:
    if op in ("max", "min") and axis is not None:  # torch's form (tinygrad's max(axis): amax)
        return getattr(x, op)(dim=axis, keepdim=keepdim).values
    out = getattr(x, op)(axis, keepdim=keepdim, **kw) if axis is not None or op not in \
        ("argmax", "argmin", "logsumexp") else getattr(x, op)(keepdim=keepdim, **kw)
    return out


def ref_reduce(x: torch.Tensor, op: str, keepdim: bool, axis: Any = None, **kw: Any) -> Any:
    if op in ("max", "min") and axis is not None:
        return getattr(x, op)(axis, keepdim=keepdim).values  # tinyfw's max(axis): values
    if op in ("sum", "mean", "prod", "std", "var", "any", "all", "amax", "amin", "logsumexp",
              "argmax", "argmin"):
        if axis is None:
            if op in ("prod",):
                out = x.prod()
                return out.reshape([1] * x.ndim) if keepdim else out
            if op in ("argmax", "argmin"):
                return getattr(x, op)(keepdim=keepdim)
            axis = tuple(range(x.ndim))
        if op == "prod" and isinstance(axis, tuple):
            for a in sorted((a % max(x.ndim, 1) for a in axis), reverse=True):
                x = x.prod(a, keepdim=keepdim) if x.ndim else x.prod()
            return x
        return getattr(x, op)(axis, keepdim=keepdim, **kw)
    return getattr(x, op)(keepdim=keepdim)


entry("reduce", draw_reduce, tiny_reduce, ref_reduce)

SCANS = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]


def draw_scan(d: Draw) -> tuple[Arrays, Kw]:
    ndim = d.int(1, 3)
    op = d.pick(SCANS)
    dt = d.pick(FLOATS + (np.int32, np.int64)) if op != "logcumsumexp" else d.pick(FLOATS)
    return [d.values(d.shape(ndim), dt)], {"op": op, "axis": d.axis(ndim)}


entry("scan", draw_scan, lambda x, op, axis: getattr(x, op)(axis),
      lambda x, op, axis: getattr(x, op)(axis))


def draw_sort(d: Draw) -> tuple[Arrays, Kw]:
    ndim = d.int(1, 3)
    x = d.values(d.shape(ndim), d.pick(FLOATS + (np.int32, np.int64)))
    return [x], {"dim": d.axis(ndim), "descending": d.coin()}


entry("sort", draw_sort, lambda x, dim, descending: x.sort(dim, descending, stable=True),
      lambda x, dim, descending: x.sort(dim=dim, descending=descending, stable=True))
entry("argsort", draw_sort, lambda x, dim, descending: x.argsort(dim, descending, stable=True),
      lambda x, dim, descending: x.argsort(dim=dim, descending=descending, stable=True))


def draw_topk(d: Draw) -> tuple[Arrays, Kw]:
    ndim = d.int(1, 3)
    x = d.values(d.shape(ndim), d.pick(FLOATS + (np.int32,)))
    dim = d.axis(ndim)
    n = x.shape[dim]
    return [x], {"k": d.int(0, n + (1 if d.coin(0.1) else 0)), "dim": dim, "largest": d.coin()}


entry("topk", draw_topk, lambda x, k, dim, largest: x.topk(k, dim, largest),
      lambda x, k, dim, largest: x.topk(k, dim, largest), index_outputs=(1,))


def draw_gather(d: Draw) -> tuple[Arrays, Kw]:
    ndim = d.int(1, 3)
    shape = d.shape(ndim)
    dim = d.axis(ndim)
    ishape = tuple(d.int(0 if d.empty else 1, n) if n else 0 for n in shape)
    hi = shape[dim] - 1
    index = d.rng.integers(-hi - 1 if d.coin(0.2) else 0, hi + 1, size=ishape) if hi >= 0 else \
        np.zeros(ishape, np.int64)
    return [d.floats(shape, d.pick(FLOATS)), index.astype(np.int64)], {"dim": dim}


entry("gather", draw_gather, lambda x, i, dim: x.gather(dim, i),
      lambda x, i, dim: x.gather(dim, i))


def draw_scatter(d: Draw, reduce: bool) -> tuple[Arrays, Kw]:
    ndim = d.int(1, 3)
    shape = d.shape(ndim, lo=1)
    dim = d.axis(ndim)
    ishape = tuple(d.int(1, n) if n else 0 for n in shape)
    if reduce:
        index = d.rng.integers(0, shape[dim], size=ishape) if shape[dim] else np.zeros(ishape)
    else:  # distinct targets along dim: torch leaves the winner of duplicates unspecified
        ax = dim % ndim
        moved = ishape[:ax] + ishape[ax + 1:] + (ishape[ax],)
        rows = [d.rng.permutation(shape[ax])[:ishape[ax]] for _ in range(math.prod(moved[:-1]))]
        index = np.moveaxis(np.array(rows, dtype=np.int64).reshape(moved), -1, ax)
    dt = d.pick(FLOATS)
    kw: Kw = {"dim": dim}
    if reduce:
        kw["reduce"] = d.pick(["sum", "prod", "mean", "amax", "amin"])
        kw["include_self"] = d.coin()
    return [d.floats(shape, dt), index.astype(np.int64), d.floats(ishape, dt)], kw


entry("scatter", lambda d: draw_scatter(d, False), lambda x, i, s, dim: x.scatter(dim, i, s),
      lambda x, i, s, dim: x.scatter(dim, i, s))
entry("scatter_reduce", lambda d: draw_scatter(d, True),
      lambda x, i, s, **kw: x.scatter_reduce(kw["dim"], i, s, kw["reduce"],
                                             include_self=kw["include_self"]),
      lambda x, i, s, **kw: x.scatter_reduce(kw["dim"], i, s, kw["reduce"],
                                             include_self=kw["include_self"]))

EINSUM = [("ij,jk->ik", [(3, 4), (4, 2)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
          ("ij->ji", [(2, 3)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]), ("i,i->", [(4,), (4,)]),
          ("i,j->ij", [(3,), (2,)]), ("...ij,...jk", [(2, 3, 4), (4, 1)]), ("ij->", [(0, 3)]),
          ("ij,ij->i", [(2, 3), (2, 3)]), ("abc->cb", [(2, 3, 4)])]


def draw_einsum(d: Draw) -> tuple[Arrays, Kw]:
    i = d.int(0, len(EINSUM) - 1)
    return [d.floats(s) for s in EINSUM[i][1]], {"i": i}


entry("einsum", draw_einsum, lambda *xs, i: Tensor.einsum(EINSUM[i][0], *xs),
      lambda *xs, i: torch.einsum(EINSUM[i][0], *xs))

MODES = {1: ["nearest", "linear"], 2: ["nearest", "bilinear"], 3: ["nearest", "trilinear"]}


def draw_interpolate(d: Draw) -> tuple[Arrays, Kw]:
    nd = d.int(1, 3)
    shape = (d.int(1, 2), d.int(1, 2)) + d.shape(nd, 1, 4)
    mode = d.pick(MODES[nd])
    kw: Kw = {"mode": mode, "size": tuple(d.int(1, 6) for _ in range(nd))}
    if mode != "nearest":
        kw["align_corners"] = d.coin()
    return [d.floats(shape, d.pick(FLOATS))], kw


def tiny_interpolate(x: Tensor, mode: str, size: tuple[int, ...], **kw: Any) -> Tensor:
    return x.interpolate(size, mode={"bilinear": "linear", "trilinear": "linear"}.get(mode, mode),
                         **kw)


entry("interpolate", draw_interpolate, tiny_interpolate,
      lambda x, **kw: F.interpolate(x, **kw))


def conv_options(d: Draw, nd: int, transposed: bool) -> tuple[Arrays, Kw]:
    groups = d.pick([1, 1, 2])
    cin, cout = groups * d.int(1, 2), groups * d.int(1, 2)
    k = tuple(d.int(1, 3) for _ in range(nd))
    stride = d.pick([1, 2, (1,) * nd, tuple(d.int(1, 2) for _ in range(nd))])
    dilation = d.pick([1, 1, 2])
    padding = d.pick([0, 1, (0,) * nd, tuple(d.int(0, 2) for _ in range(nd))])
    spatial = tuple(d.int(1, 6) for _ in range(nd))
    x = d.floats((d.int(1, 2), cin) + spatial)
    w = d.floats((cin, cout // groups) + k if transposed else (cout, cin // groups) + k)
    kw: Kw = {"stride": stride, "dilation": dilation, "padding": padding, "groups": groups}
    if transposed and d.coin(0.4):
        s = stride if isinstance(stride, int) else max(stride)
        kw["output_padding"] = d.int(0, s)  # torch refuses output_padding >= stride or dilation
    inputs = [x, w] + ([d.floats((cout,))] if d.coin() else [])
    return inputs, kw


def draw_conv(d: Draw) -> tuple[Arrays, Kw]:
    return conv_options(d, d.int(1, 3), False)


def draw_conv_transpose(d: Draw) -> tuple[Arrays, Kw]:
    return conv_options(d, d.int(1, 3), True)


TORCH_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
TORCH_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}

entry("conv", draw_conv, lambda x, w, b=None, **kw: x.conv2d(w, b, **kw),
      lambda x, w, b=None, **kw: TORCH_CONV[x.ndim - 2](x, w, b, **kw), rtol=1e-3, atol=1e-4)
entry("conv_transpose", draw_conv_transpose,
      lambda x, w, b=None, **kw: x.conv_transpose2d(w, b, **kw),
      lambda x, w, b=None, **kw: TORCH_CONV_T[x.ndim - 2](
          x, w, b, stride=kw["stride"], padding=kw["padding"],
          output_padding=kw.get("output_padding", 0), groups=kw["groups"],
          dilation=kw["dilation"]), rtol=1e-3, atol=1e-4)


def draw_pool(d: Draw, kind: str) -> tuple[Arrays, Kw]:
    nd = d.int(1, 3)
    spatial = tuple(d.int(1, 6) for _ in range(nd))
    dt = d.pick(FLOATS + ((np.int32, np.int64) if kind == "max" else ()))
    x = d.values((d.int(1, 2), d.int(1, 2)) + spatial, dt)
    k = tuple(d.int(1, 3) for _ in range(nd))
    kw: Kw = {"kernel_size": k, "stride": d.pick([None, 1, 2, tuple(d.int(1, 3) for _ in k)]),
              "padding": d.pick([0, 0, 1, tuple(d.int(0, 1) for _ in k)]),
              "ceil_mode": d.coin()}
    if kind == "max":
        kw["dilation"] = d.pick([1, 1, 2])
        kw["return_indices"] = d.coin(0.3)
    else:
        kw["count_include_pad"] = d.coin()
    return [x], kw


def tiny_pool(x: Tensor, kind: str, **kw: Any) -> Any:
    nd = x.ndim - 2
    kw = {k: (v,) * nd if isinstance(v, int) and not isinstance(v, bool) and k != "stride" else v
          for k, v in kw.items()}
    if isinstance(kw.get("stride"), int):
        kw["stride"] = (kw["stride"],) * nd
    return x.max_pool2d(**kw) if kind == "max" else x.avg_pool2d(**kw)


TORCH_POOL = {("max", 1): F.max_pool1d, ("max", 2): F.max_pool2d, ("max", 3): F.max_pool3d,
              ("avg", 1): F.avg_pool1d, ("avg", 2): F.avg_pool2d, ("avg", 3): F.avg_pool3d}

entry("max_pool", lambda d: draw_pool(d, "max"), lambda x, **kw: tiny_pool(x, "max", **kw),
      lambda x, **kw: TORCH_POOL["max", x.ndim - 2](x, **kw))
entry("avg_pool", lambda d: draw_pool(d, "avg"), lambda x, **kw: tiny_pool(x, "avg", **kw),
      lambda x, **kw: TORCH_POOL["avg", x.ndim - 2](x, **kw))

REDUCTIONS = ["mean", "sum", "none"]


def draw_cross_entropy(d: Draw) -> tuple[Arrays, Kw]:
    n, c = d.int(0 if d.empty else 1, 4), d.int(1, 4)
    logits = d.floats((n, c))
    ignore = d.pick([-100, 0, 1])
    target = d.rng.integers(0, c, size=(n,))
    if d.coin(0.3):
        target[d.rng.random(n) < 0.6] = ignore
    kw: Kw = {"reduction": d.pick(REDUCTIONS), "ignore_index": ignore}
    if d.coin(0.4):
        kw["label_smoothing"] = d.pick([0.0, 0.1, 0.5])
    inputs = [logits, target.astype(np.int64)]
    if d.coin(0.3):
        inputs.append(np.abs(d.floats((c,))) if not d.special else d.rng.uniform(0, 2, c)
                      .astype(F32))
    return inputs, kw


entry("cross_entropy", draw_cross_entropy,
      lambda x, y, w=None, **kw: x.cross_entropy(y, weight=w, **kw),
      lambda x, y, w=None, **kw: F.cross_entropy(x, y, weight=w, **kw))


def draw_nll(d: Draw) -> tuple[Arrays, Kw]:
    inputs, kw = draw_cross_entropy(d)
    kw.pop("label_smoothing", None)
    return inputs, kw


entry("nll_loss", draw_nll, lambda x, y, w=None, **kw: x.log_softmax(-1).nll_loss(y, w, **kw),
      lambda x, y, w=None, **kw: F.nll_loss(x.log_softmax(-1), y, w, **kw))


def draw_bce(d: Draw) -> tuple[Arrays, Kw]:
    shape = d.shape(d.int(0, 2))
    if d.ties:
        p = d.rng.choice([0.0, 0.5, 1.0], size=shape).astype(F32)
    else:
        p = d.rng.uniform(0, 1, size=shape).astype(F32)
    y = d.rng.choice([0.0, 1.0, 0.3], size=shape).astype(F32)
    return [p, y], {"reduction": d.pick(REDUCTIONS)}


entry("binary_cross_entropy", draw_bce, lambda p, y, **kw: p.binary_crossentropy(y, **kw),
      lambda p, y, **kw: F.binary_cross_entropy(p, y, **kw))


def draw_bce_logits(d: Draw) -> tuple[Arrays, Kw]:
    shape = d.shape(d.int(1, 2))
    inputs = [d.floats(shape, lo=-30, hi=30), d.rng.choice([0.0, 1.0, 0.3], size=shape)
              .astype(F32)]
    if d.coin(0.3):
        inputs.append(d.rng.uniform(0.5, 3, size=shape[-1:]).astype(F32))
    return inputs, {"reduction": d.pick(REDUCTIONS)}


entry("bce_with_logits", draw_bce_logits,
      lambda x, y, pw=None, **kw: x.binary_crossentropy_logits(y, pos_weight=pw, **kw),
      lambda x, y, pw=None, **kw: F.binary_cross_entropy_with_logits(x, y, pos_weight=pw, **kw))


def draw_mse(d: Draw) -> tuple[Arrays, Kw]:
    shape = d.shape(d.int(0, 2))
    return [d.floats(shape), d.floats(shape)], {"reduction": d.pick(REDUCTIONS)}


entry("mse", draw_mse, lambda x, y, **kw: x.mse(y, **kw),
      lambda x, y, **kw: F.mse_loss(x, y, **kw))


def draw_softmax(d: Draw) -> tuple[Arrays, Kw]:
    ndim = d.int(1, 3)
    return [d.floats(d.shape(ndim), d.pick(FLOATS))], \
        {"op": d.pick(["softmax", "log_softmax"]), "axis": d.axis(ndim)}


entry("softmax", draw_softmax, lambda x, op, axis: getattr(x, op)(axis),
      lambda x, op, axis: getattr(x, op)(axis))


def draw_index(d: Draw) -> tuple[Arrays, Kw]:
    shape = d.shape(d.int(1, 3), lo=1)
    x = d.values(shape, d.pick(FLOATS + (np.int32,)))
    n = shape[0]
    kind = d.pick(["int", "bool", "slice", "pair"])
    if kind == "int":
        idx = d.rng.integers(-n, n, size=d.shape(d.int(0, 2), 0, 4)) if n else np.zeros(0)
        return [x, idx.astype(np.int64)], {"kind": kind}
    if kind == "bool":
        return [x, d.rng.random(shape[:d.int(1, len(shape))]) < 0.5], {"kind": kind}
    if kind == "pair" and len(shape) >= 2:
        m = d.int(0, 4) if shape[0] and shape[1] else 0
        i = d.rng.integers(-shape[0], max(shape[0], 1), size=m)
        j = d.rng.integers(-shape[1], max(shape[1], 1), size=m)
        return [x, i.astype(np.int64), j.astype(np.int64)], {"kind": kind}
    start, stop, step = d.int(-n - 1, n + 1), d.int(-n - 1, n + 1), d.pick([1, 2, 3])
    return [x], {"kind": "slice", "sl": (start, stop, step)}


def do_index(x: Any, *idx: Any, kind: str, sl: tuple[int, int, int] | None = None) -> Any:
    if kind == "slice":
        assert sl is not None
        return x[slice(*sl), None]
    if kind == "pair":
        return x[idx[0], idx[1]]
    return x[idx[0]]


entry("index", draw_index, do_index)


def draw_setitem(d: Draw) -> tuple[Arrays, Kw]:
    inputs, kw = draw_index(d)
    if kw["kind"] == "slice":
        kw["value"] = d.pick([2.5, -1.0, 7.0])
    elif kw["kind"] == "int":  # distinct positions: duplicates leave torch's winner unspecified
        idx = inputs[1]
        n = inputs[0].shape[0]
        inputs[1] = np.unique(idx % n if n else idx)[: idx.size].astype(np.int64)
        kw["value"] = d.pick([3.0, -2.0])
    else:
        kw["value"] = d.pick([3.0, -2.0])
    return inputs, kw


def tiny_setitem(x: Tensor, *idx: Any, kind: str, value: float,
                 sl: tuple[int, int, int] | None = None) -> Tensor:
    x = x.clone() if hasattr(x, "clone") else x
    if kind == "slice":
        assert sl is not None
        x[slice(*sl)] = value
    elif kind == "pair":
        x[idx[0], idx[1]] = value
    else:
        x[idx[0]] = value
    return x


def ref_setitem(x: torch.Tensor, *idx: Any, **kw: Any) -> torch.Tensor:
    with torch.no_grad():
        return tiny_setitem(x.detach(), *idx, **kw)


entry("setitem", draw_setitem, lambda *a, **kw: tiny_setitem(*a, **kw), ref_setitem, grad=False)

PAD_MODES = ["constant", "reflect", "replicate", "circular"]


def draw_pad(d: Draw) -> tuple[Arrays, Kw]:
    ndim = d.int(1, 3)
    shape = (1,) + d.shape(ndim)
    mode = d.pick(PAD_MODES)
    pads = [d.int(-1 if mode == "constant" else 0, 2) for _ in range(2 * d.int(1, ndim))]
    return [d.floats(shape, d.pick(FLOATS))], {"pads": tuple(pads), "mode": mode}


entry("pad", draw_pad, lambda x, pads, mode: x.pad(pads, mode=mode),
      lambda x, pads, mode: F.pad(x, pads, mode=mode))


def draw_shape_op(d: Draw) -> tuple[Arrays, Kw]:
    ndim = d.int(1, 3)
    x = d.values(d.shape(ndim), d.pick(FLOATS + INTS))
    op = d.pick(["flip", "roll", "repeat_interleave", "tril", "triu", "clamp", "where",
                 "masked_fill", "cat", "one_hot"])
    kw: Kw = {"op": op, "axis": d.axis(ndim), "n": d.int(-2, 3)}
    return [x], kw


def shape_op(x: Any, op: str, axis: int, n: int) -> Any:
    torch_side = isinstance(x, torch.Tensor)
    if op == "flip":
        return x.flip(axis) if not torch_side else x.flip((axis,))
    if op == "roll":
        return x.roll(n, axis)
    if op == "repeat_interleave":
        return x.repeat_interleave(abs(n), axis)
    if op in ("tril", "triu"):
        return getattr(x, op)(n)
    if op == "clamp":
        return x.clamp(n, n - 1) if x.dtype not in (torch.bool,) else x
    if op == "where":
        return (x > 0).where(x, n) if not torch_side else torch.where(x > 0, x, n)
    if op == "masked_fill":
        return x.masked_fill(x < 0, n)
    if op == "cat":
        return x.cat(x, dim=axis) if not torch_side else torch.cat([x, x], axis)
    return (x.cast(dtypes.int64) if not torch_side else x.long()).abs().clamp(0, 3).one_hot(4) \
        if not torch_side else F.one_hot(x.long().abs().clamp(0, 3), 4)


entry("shape_op", draw_shape_op, shape_op)


def draw_cast(d: Draw) -> tuple[Arrays, Kw]:
    src = d.pick(FLOATS + INTS + (np.bool_,))
    x = d.values(d.shape(d.int(0, 2)), src)
    if np.dtype(src).kind == "f":  # a float out of an int's range casts to an unspecified int
        x = np.where(np.isfinite(x.astype(F32)), x, 0).astype(src)
    dst = d.pick(FLOATS + INTS + (np.bool_,))
    if np.dtype(src).kind == "f" and np.dtype(dst).kind in "iu":
        info = np.iinfo(dst)
        x = np.clip(x.astype(F32), max(info.min, -100), min(info.max, 100)).astype(src)
    return [x], {"dst": np.dtype(dst).name if dst is not BF16 else "bfloat16"}


entry("cast", draw_cast, lambda x, dst: x.cast(getattr(dtypes, dst)),
      lambda x, dst: x.to(getattr(torch, dst)), grad=False)


# ---------------------------------------------------------------------------------------------
# running and comparing


@dataclass
class Outcome:
    """What one framework did: its results (numpy, torch dtype name) or its exception."""
    values: list[np.ndarray] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    grads: list[np.ndarray | None] = field(default_factory=list)
    error: BaseException | None = None


class Mismatch(AssertionError):
    def __init__(self, kind: str, message: str, actual: Any = None, expected: Any = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.actual, self.expected = actual, expected  # the values that differ, where any

    def differ_as(self, tinyfw: Callable[[np.ndarray], np.ndarray],
                  ref: Callable[[np.ndarray], np.ndarray], anywhere: bool = False) -> bool:
        """Where the values differ, tinyfw's all (or, anywhere, some) pass `tinyfw` and
        torch's there pass `ref`."""
        if self.actual is None:
            return False
        a, x = (np.asarray(v, dtype=np.float64) for v in (self.actual, self.expected))
        differ = ~np.isclose(a, x, rtol=1e-3, atol=1e-5, equal_nan=True)
        both = tinyfw(a[differ]) & ref(x[differ])
        return bool(differ.any() and (both.any() if anywhere else both.all()))


def as_list(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (list, tuple)) else [out]


def dtype_name(dt: Any) -> str:
    if isinstance(dt, torch.dtype):
        return str(dt).removeprefix("torch.")
    return str(dt.name)


def run_torch(e: Entry, inputs: Arrays, kw: Kw, weights_seed: int) -> Outcome:
    ts = [torch_of(a) if isinstance(a, np.ndarray) else a for a in inputs]
    for t in ts:
        if e.grad and isinstance(t, torch.Tensor) and t.dtype == torch.float32:
            t.requires_grad_(True)
    try:
        outs = [o for o in as_list(e.ref(*ts, **kw)) if isinstance(o, torch.Tensor)]
    except Exception as err:  # noqa: BLE001 - the exception is the answer compared
        return Outcome(error=err)
    got = Outcome(values=[numpy_of(o) for o in outs], dtypes=[dtype_name(o.dtype) for o in outs])
    weighted = [(o * torch.tensor(w, dtype=o.dtype)).sum() for o, w in
                zip(outs, weights(outs, weights_seed)) if o.requires_grad]
    if weighted:
        try:
            sum(weighted[1:], weighted[0]).backward()
        except RuntimeError:
            weighted = []
    got.grads = [t.grad.numpy() if weighted and t.grad is not None else
                 (np.zeros(t.shape, np.float32) if weighted and t.requires_grad else None)
                 for t in ts if isinstance(t, torch.Tensor)]
    return got


def weights(outs: list[Any], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.5, 1.5, size=tuple(o.shape)) for o in outs]


def run_tinyfw(e: Entry, inputs: Arrays, kw: Kw, weights_seed: int, grad: bool) -> Outcome:
    ts = [Tensor(a) if isinstance(a, np.ndarray) else a for a in inputs]
    for t in ts:
        if grad and e.grad and isinstance(t, Tensor) and t.dtype == dtypes.float32:
            t.requires_grad = True
    try:
        outs = [o for o in as_list(e.tiny(*ts, **kw)) if isinstance(o, Tensor)]
        got = Outcome(values=[o.numpy() for o in outs], dtypes=[dtype_name(o.dtype) for o in outs])
        if grad:
            weighted = [(o * Tensor(w, dtype=o.dtype)).sum() for o, w in
                        zip(outs, weights(outs, weights_seed)) if o.requires_grad]
            if weighted:
                sum(weighted[1:], weighted[0]).backward()
            got.grads = [(t.grad.numpy() if t.grad is not None else
                          np.zeros(t.shape, np.float32)) if weighted and t.requires_grad
                         else None for t in ts if isinstance(t, Tensor)]
    except Exception as err:  # noqa: BLE001 - the exception is the answer compared
        return Outcome(error=err)
    return got


def tolerance(e: Entry, dt: str) -> tuple[float, float]:
    if dt == "float16":
        return 1e-2, 1e-2
    if dt == "bfloat16":
        return 2e-2, 2e-2
    return (e.rtol, e.atol) if dt in ("float32", "float64") else (0.0, 0.0)


def close(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> bool:
    a, x = np.asarray(actual), np.asarray(expected)
    if a.shape != x.shape:
        return False
    a64, x64 = a.astype(np.float64), x.astype(np.float64)
    finite = np.isfinite(x64)
    scale = float(np.abs(x64[finite]).max()) if finite.any() else 1.0
    return bool(np.allclose(a64, x64, rtol=rtol, atol=atol * max(1.0, scale), equal_nan=True)
                and np.array_equal(np.isnan(a64), np.isnan(x64)))


def index_close(x: np.ndarray, dim: int, actual: np.ndarray, expected: np.ndarray) -> bool:
    """Indices of tied values may differ: the values they pick must be the same."""
    if actual.shape != expected.shape:
        return False
    x64 = x.astype(np.float64)
    try:
        a = np.take_along_axis(x64, actual.astype(np.int64), dim)
    except IndexError:
        return False
    b = np.take_along_axis(x64, expected.astype(np.int64), dim)
    return bool(np.array_equal(a, b, equal_nan=True))


def compare(e: Entry, inputs: Arrays, kw: Kw, seed: int) -> None:
    """Raises Mismatch where tinyfw is not torch (see the module's docstring)."""
    ref = run_torch(e, inputs, kw, seed)
    grad = ref.error is None and any(g is not None for g in ref.grads)
    got = run_tinyfw(e, inputs, kw, seed, grad)
    if isinstance(got.error, NotSupportedError) and Device.DEFAULT not in ("CPU", "NUMPY"):
        pytest.skip(f"not supported on {Device.DEFAULT}: {got.error}")
    if ref.error is not None:
        if isinstance(ref.error, NotImplementedError):
            return  # torch leaves it undefined: any answer or error of tinyfw's will do
        if got.error is not None and not isinstance(got.error, type(ref.error)):
            raise Mismatch("error", f"tinyfw raised {type(got.error).__name__}({got.error}), "
                           f"torch {type(ref.error).__name__}({ref.error})")
        return
    if got.error is not None:
        raise Mismatch("raises", f"tinyfw raised {type(got.error).__name__}({got.error}); "
                       f"torch gives {ref.values} {ref.dtypes}")
    if len(got.values) != len(ref.values):
        raise Mismatch("count", f"{len(got.values)} results, torch {len(ref.values)}")
    for i, (a, x, adt, xdt) in enumerate(zip(got.values, ref.values, got.dtypes, ref.dtypes)):
        if adt != (index_dtype(Device.DEFAULT).name if xdt == "int64" else xdt):
            raise Mismatch("dtype", f"result {i}: dtype {adt}, torch {xdt}")
        if a.shape != x.shape:
            raise Mismatch("shape", f"result {i}: shape {a.shape}, torch {x.shape}")
        if i in e.index_outputs:
            ok = index_close(inputs[0], kw.get("dim", -1), a, x)
        else:
            ok = close(a, x, *tolerance(e, xdt))
        if not ok:
            raise Mismatch("value", f"result {i}: {a.tolist()}, torch {x.tolist()}", a, x)
    for i, (a, x) in enumerate(zip(got.grads, ref.grads)):
        if x is None or a is None:
            continue
        if not close(a, x, e.rtol * 10, e.atol * 10):
            raise Mismatch("grad", f"gradient of input {i}: {a.tolist()}, torch {x.tolist()}")


def program(seed: int) -> tuple[Entry, Arrays, Kw]:
    d = new_draw(seed)
    e = API[seed % len(API)]  # every entry in turn: any slice of len(API) seeds draws all
    inputs, kw = e.draw(d)
    return e, inputs, kw


def describe(e: Entry, inputs: Arrays, kw: Kw) -> str:
    def show(a: Any) -> str:
        if isinstance(a, np.ndarray):
            return f"{np.dtype(a.dtype).name}{list(a.shape)} {a.tolist()}"
        return repr(a)
    return f"{e.name}({', '.join(show(a) for a in inputs)}, **{kw})"


# ---------------------------------------------------------------------------------------------
# known bugs: each a pinned case (xfail, strict) and the predicate the random run counts it by


@dataclass(frozen=True)
class Known:
    name: str
    reason: str
    seed: int  # a program that shows it
    matches: Callable[[Entry, Arrays, Kw, Mismatch], bool]


def nonfinite(inputs: Arrays) -> bool:
    return any(isinstance(a, np.ndarray) and (a.dtype.kind == "f" or a.dtype == BF16) and
               not np.isfinite(a.astype(np.float64)).all() for a in inputs)


def empty(inputs: Arrays) -> bool:
    return any(isinstance(a, np.ndarray) and a.size == 0 for a in inputs)


INDEX_RESULTS = ("sort", "argsort", "topk", "max_pool", "reduce", "scan")

# Real tinyfw bugs found by this test and not fixed on this branch (issue 38): none now.
KNOWN: list[Known] = []

# Programs that showed a bug once, kept as cases: softmax's gradient over a row holding +inf
# (exp's gradient at -inf), scatter_reduce(prod)'s gradient at inf and nan.
FIXED_SEEDS = [554, 4126]

# torch's answers not to follow, each with its reason: counted, not failed.
def differ_nonfinite(m: Any) -> bool:
    """Whether the values differ, and at every place they differ one side is inf or nan."""
    if m.actual is None:
        return False
    a, x = (np.asarray(v, dtype=np.float64) for v in (m.actual, m.expected))
    differ = ~np.isclose(a, x, rtol=1e-3, atol=1e-5, equal_nan=True)
    return bool(differ.any() and (~np.isfinite(a[differ]) | ~np.isfinite(x[differ])).all())


QUIRKS: list[Known] = [
    Known("conv_nonfinite",
          "where an input or weight holds an inf or a nan, torch's conv and conv_transpose give "
          "nan or inf as its kernels' arithmetic makes them (zeros of padding or of a stride "
          "multiplied in, even at outputs no non-finite value reaches: seed 574's "
          "conv_transpose), tinyfw's as its own arithmetic makes them; they differ only where "
          "one of them is not finite", 294,
          lambda e, i, kw, m: e.name in ("conv", "conv_transpose") and m.kind == "value"
          and nonfinite(i) and differ_nonfinite(m)),
    Known("bce_logits_inf", "torch's binary_cross_entropy_with_logits at a logit of -inf (or "
          "+inf with a target of 1) is nan (0 * inf, inf - inf); tinyfw gives the limit: inf, "
          "or 0 for a sure, right guess", 496,
          lambda e, i, kw, m: e.name == "bce_with_logits" and m.kind == "value"
          and nonfinite(i) and m.differ_as(lambda a: ~np.isnan(a), np.isnan)),
    Known("prod_grad_nonfinite",
          "torch's cumprod and prod gradients are nan at an inf or nan input where the true "
          "gradient (the product of the other inputs) is finite; tinyfw gives the finite value",
          1880, lambda e, i, kw, m: e.name in ("scan", "reduce") and
          kw["op"] in ("cumprod", "prod") and m.kind == "grad" and nonfinite(i)),
    Known("logcumsumexp_grad_neginf",
          "torch's logcumsumexp gradient is nan at a -inf input whose running result is -inf "
          "(exp(-inf - -inf)); tinyfw gives the limit", 1236,
          lambda e, i, kw, m: e.name == "scan" and kw["op"] == "logcumsumexp"
          and m.kind == "grad" and nonfinite(i)),
    Known("conv_grad_nonfinite",
          "torch's conv_transpose weight gradient is nan where an inf input meets a zero output "
          "gradient (a cropped output: 0 * inf); tinyfw gives 0", 1526,
          lambda e, i, kw, m: e.name in ("conv", "conv_transpose") and m.kind == "grad"
          and nonfinite(i)),
    Known("gelu_inf", "torch's gelu of +inf is nan; tinyfw gives inf, the limit", 1933,
          lambda e, i, kw, m: e.name == "activation" and ACTIVATIONS[kw["i"]][0] == "gelu"
          and m.kind == "value" and m.differ_as(np.isinf, np.isnan)),
    Known("silu_grad_neginf", "torch's silu gradient at -inf is nan; tinyfw gives 0, the limit",
          4453, lambda e, i, kw, m: e.name == "activation" and m.kind == "grad"
          and ACTIVATIONS[kw["i"]][0] == "silu" and nonfinite(i)),
    Known("max_pool_window_in_padding",
          "a max_pool window wholly in the padding (dilation lets every tap miss the input): "
          "both give -inf, but torch sends that window's gradient (and index) to an input "
          "element whose value is not its maximum; tinyfw to none (gradient 0, index -1)", 4131,
          lambda e, i, kw, m: e.name == "max_pool" and m.kind in ("grad", "value")
          and window_in_padding(i[0], kw)),
    Known("interpolate_zero_weight_nan",
          "torch's linear, bilinear, trilinear and bicubic interpolation multiply some inputs "
          "by a weight of 0 (an edge input read twice, some exact source points), so that an "
          "inf there makes nan of outputs that equal a finite input or that input itself: "
          "[[[-1.16, -inf, 3.]]] to size 3 (linear) gives torch [-1.16, nan, 3]; tinyfw's "
          "outputs depend only on the inputs of nonzero weight: [-1.16, -inf, 3]", 1720,
          lambda e, i, kw, m: e.name == "interpolate" and m.kind == "value" and nonfinite(i)
          and m.differ_as(lambda a: ~np.isnan(a), np.isnan)),
    Known("topk_tie_order",
          "torch's topk orders tied values in no stated order (0.0 and -0.0 here: its "
          "selection is not stable), so the gradient weight of each result may reach another "
          "of the tied inputs; the values and the tied places agree", 2611,
          lambda e, i, kw, m: e.name == "topk" and m.kind == "grad" and has_ties(i[0])),
    Known("conv_transpose_empty_output",
          "torch's conv_transpose with an output of size 0 along an axis raises RuntimeError "
          "(Output size is too small) for most shapes but returns the empty tensor for some "
          "(input (2, 2, 6, 1, 2), weight (2, 1, 1, 2, 1), padding 1); tinyfw always raises "
          "RuntimeError", 42,
          lambda e, i, kw, m: e.name == "conv_transpose" and m.kind == "raises"),
    Known("piecewise_grad_nan",
          "torch's gradient at nan of relu6, hardtanh, hardswish, elu and selu depends on the "
          "tensor's size: its vectorized loop (a tensor of more than a few elements) gives 0 "
          "(relu6, hardtanh) or nan, its scalar loop passes the gradient (1, selu 1.0507); "
          "tinyfw gives the vectorized loop's answer at every size", 365,
          lambda e, i, kw, m: e.name == "activation" and m.kind == "grad" and nonfinite(i)
          and ACTIVATIONS[kw["i"]][0] in ("relu6", "hardtanh", "hardswish", "selu", "elu")),
    Known("scatter_reduce_extreme_grad",
          "torch's scatter_reduce(amax/amin) gradient: with include_self=False it still counts "
          "a tie of self's in the shares given to src (which then add up to less than the "
          "gradient); with a nan in self it gives nan where no src lands (0 * grad / 0); tinyfw "
          "shares the gradient evenly among the values equal to the result, as torch does "
          "otherwise", 2334,
          lambda e, i, kw, m: e.name == "scatter_reduce" and m.kind == "grad"
          and kw["reduce"] in ("amax", "amin") and (not kw["include_self"] or nonfinite(i))),
    Known("selu_mish_grad_inf",
          "torch's mish gradient at +inf is nan (inf * 0 inside its formula); tinyfw the limit",
          197, lambda e, i, kw, m: e.name == "activation" and m.kind == "grad" and nonfinite(i)
          and ACTIVATIONS[kw["i"]][0] == "mish"),
]


def has_ties(x: np.ndarray) -> bool:
    """Whether x holds a value twice (0.0 and -0.0 count as one)."""
    flat = x.astype(np.float64).ravel() + 0.0  # (-0.0 + 0.0 is 0.0)
    return bool(np.unique(flat).size < flat.size)


def window_in_padding(x: np.ndarray, kw: Kw) -> bool:
    """Whether a max_pool window of x lies wholly in the padding (tinyfw's index is -1)."""
    picked = tiny_pool(Tensor(x), "max", **{**kw, "return_indices": True})[1]
    return bool((picked.numpy() < 0).any())


def known(e: Entry, inputs: Arrays, kw: Kw, m: Mismatch) -> Known | None:
    return next((k for k in KNOWN + QUIRKS if k.matches(e, inputs, kw, m)), None)


def run_programs(seeds: range) -> tuple[int, list[str], dict[str, int]]:
    failures: list[str] = []
    counted: dict[str, int] = {}
    ran = 0
    for seed in seeds:
        e, inputs, kw = program(seed)
        ran += 1
        try:
            compare(e, inputs, kw, seed)
        except Mismatch as m:
            k = known(e, inputs, kw, m)
            if k is not None:
                counted[k.name] = counted.get(k.name, 0) + 1
                continue
            failures.append(f"seed {seed}: {describe(e, inputs, kw)}\n  {m.kind}: {m}")
        except pytest.skip.Exception:
            continue
    return ran, failures, counted


def program_count() -> tuple[int, int]:
    return int(os.getenv("TINYFW_DIFF_FIRST", "0")), int(os.getenv("TINYFW_DIFF_PROGRAMS",
                                                                    str(SLICE)))


FIRST, COUNT = program_count()


@pytest.mark.parametrize("chunk", list(range(1, (COUNT + CHUNK - 1) // CHUNK + 1)))
def test_random_api_programs(chunk: int) -> None:
    """CHUNK programs, the chunk-th CHUNK from seed FIRST: every one gives torch's answer (or a
    KNOWN bug's). On a backend device (CL, WEBGPU, CUDAEMU: a device_subset module, see
    tests/conftest.py) the first chunk runs, as every chunk number is one kind of case."""
    start = FIRST + (chunk - 1) * CHUNK
    ran, failures, counted = run_programs(range(start, min(start + CHUNK, FIRST + COUNT)))
    if counted:
        print(f"known bugs met: {counted}")
    assert not failures, f"{len(failures)} of {ran} programs differ from torch:\n" + \
        "\n".join(failures[:20])


@pytest.mark.skipif("TINYFW_DIFF_SEED" not in os.environ, reason="replays TINYFW_DIFF_SEED")
def test_replay_seed() -> None:
    seed = int(os.environ["TINYFW_DIFF_SEED"])
    e, inputs, kw = program(seed)
    print(describe(e, inputs, kw))
    compare(e, inputs, kw, seed)


@pytest.mark.parametrize("seed", FIXED_SEEDS)
def test_fixed_seed(seed: int) -> None:
    """A program that showed a KNOWN bug before it was fixed gives torch's answer."""
    e, inputs, kw = program(seed)
    compare(e, inputs, kw, seed)


KNOWN_CASES = [pytest.param(k, marks=pytest.mark.xfail(strict=True, raises=Mismatch,
                                                      reason=k.reason), id=k.name)
               for k in KNOWN]


@pytest.mark.parametrize("case", KNOWN_CASES)
def test_known_bug(case: Known) -> None:
    """The program that shows a KNOWN bug gives torch's answer (xfail, strict: until fixed)."""
    e, inputs, kw = program(case.seed)
    try:
        compare(e, inputs, kw, case.seed)
    except Mismatch as m:
        if not case.matches(e, inputs, kw, m):  # another mismatch: a failure, not an xfail
            raise AssertionError(f"seed {case.seed}: not the known mismatch: {m}") from None
        raise


def test_every_quirk_is_on_the_correctness_page() -> None:
    """Each answer of torch's not followed (QUIRKS) is named on site/correctness.md."""
    page = (Path(__file__).resolve().parents[2] / "site" / "correctness.md").read_text()
    assert [k.name for k in QUIRKS if f"`{k.name}`" not in page] == []


def test_every_entry_drawn() -> None:
    """The slice draws every entry of API at least once (and several times)."""
    assert SLICE >= 3 * len(API)
    drawn = {program(seed)[0].name for seed in range(SLICE)}
    assert drawn == {e.name for e in API}, f"never drawn: {({e.name for e in API}) - drawn}"
