"""Random calls over the API at edge values (issue 38's "keep finding them"): each case draws an
op (scans, sort/topk, scatter/gather, einsum, interpolate, convolutions, pools with options,
losses with options, elementwise float and integer math) and inputs of one flavor (ties, +-inf
and NaN, an empty axis, integer limits, plain), runs it in tinyfw and torch (tests/helpers.py:
values, dtypes and gradients; or the same exception type where torch raises).

CI runs a fixed-seed slice (TINYFW_EDGE_CASES, default 150 draws on CPU and NUMPY, 40 on the
backend devices); a longer run by hand:
`TINYFW_EDGE_CASES=3000 .venv/bin/python -m pytest tests/numerics/test_differential_edges.py \
-q -n 0`
(TINYFW_EDGE_SEED picks another sequence). Known differences that remain are listed in KNOWN
with why, and skipped."""
from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.helpers import check, check_error
from tinyfw import Tensor
from tinyfw.device import Device
from tinyfw.renderer.base import NotSupportedError

INF, NAN = math.inf, math.nan
# a backend device (CL, WEBGPU, CUDAEMU) compiles kernels for every case: fewer draws there
CASES = int(os.environ.get("TINYFW_EDGE_CASES",
                           "150" if Device.DEFAULT in ("CPU", "NUMPY") else "40"))
SEED = int(os.environ.get("TINYFW_EDGE_SEED", "0"))

pytestmark = pytest.mark.device_subset

FLAVORS = ["plain", "ties", "special", "empty"]
I32 = np.iinfo(np.int32)


def floats(rng: np.random.Generator, shape: tuple[int, ...], flavor: str) -> np.ndarray:
    """Float32 inputs of a flavor: plain (uniform), ties (small integers, many equal), special
    (a third nan, +-inf, -0.0 or huge), empty (the last axis of length 0)."""
    if flavor == "empty":
        shape = (*shape[:-1], 0)
    if flavor == "ties":
        return rng.integers(-1, 2, shape).astype(np.float32)
    x = rng.uniform(-2, 2, shape).astype(np.float32)
    if flavor == "special":
        picks = np.array([NAN, INF, -INF, -0.0, 0.0, 1e30, -1e30], np.float32)
        x = np.where(rng.random(shape) < 0.35, picks[rng.integers(0, len(picks), shape)], x)
    return x.astype(np.float32)


def ints(rng: np.random.Generator, shape: tuple[int, ...], flavor: str) -> np.ndarray:
    """int32 inputs: small values, or (special) with int32's limits among them."""
    if flavor == "empty":
        shape = (*shape[:-1], 0)
    x = rng.integers(-5, 6, shape).astype(np.int32)
    if flavor == "special":
        picks = np.array([I32.min, I32.max, -1, 0, I32.min + 1], np.int32)
        x = np.where(rng.random(shape) < 0.35, picks[rng.integers(0, len(picks), shape)], x)
    return x


def labels(rng: np.random.Generator, n: int, classes: int, flavor: str) -> list[int]:
    """Class targets (a Python list: int64 in torch, int32 in tinyfw), some ignored (-100)."""
    out = rng.integers(0, classes, n)
    if flavor in ("special", "ties"):
        out = np.where(rng.random(n) < 0.5, -100, out)
    return [int(v) for v in out]


Inputs = Callable[[np.random.Generator, str], list[Any]]
Op = tuple[str, Callable[..., Any], Callable[..., Any] | None, Inputs]


def same(fn: Callable[..., Any]) -> tuple[Callable[..., Any], None]:
    return fn, None


def x1(shape: tuple[int, ...]) -> Inputs:
    return lambda rng, fl: [floats(rng, shape, fl)]


def is_torch(x: Any) -> bool:
    return isinstance(x, torch.Tensor)


OPS: list[Op] = [
    # scans, sorts, selections
    ("cumsum", *same(lambda x: x.cumsum(1)), x1((3, 5))),
    ("cumprod", *same(lambda x: x.cumprod(1)), x1((3, 5))),
    ("cummax", *same(lambda x: x.cummax(1)[0]), x1((3, 5))),
    ("cummin", *same(lambda x: x.cummin(1)[0]), x1((3, 5))),
    ("logcumsumexp", *same(lambda x: x.logcumsumexp(1)), x1((3, 5))),
    ("sort", *same(lambda x: x.sort(1)[0]), x1((3, 6))),
    ("sort_desc", *same(lambda x: x.sort(1, descending=True)[0]), x1((3, 6))),
    ("topk", *same(lambda x: x.topk(2, 1)[0]), x1((3, 6))),
    ("argmax", *same(lambda x: x.argmax(1)), x1((3, 6))),
    ("argmin", *same(lambda x: x.argmin(1)), x1((3, 6))),
    ("gather_argmax", *same(lambda x: x.gather(1, x.argmax(1, keepdim=True))), x1((3, 6))),
    # reductions
    ("amax", lambda x: x.amax(1), lambda x: x.max(1), x1((3, 6))),
    ("amin", lambda x: x.amin(0), lambda x: x.min(0), x1((3, 6))),
    ("sum", *same(lambda x: x.sum(1)), x1((3, 6))),
    ("mean", *same(lambda x: x.mean(1)), x1((3, 6))),
    ("prod", *same(lambda x: x.prod(1)), x1((3, 6))),
    ("std", *same(lambda x: x.std(1)), x1((3, 6))),
    ("var", *same(lambda x: x.var(0)), x1((3, 6))),
    ("logsumexp", *same(lambda x: x.logsumexp(1)), x1((3, 6))),
    ("softmax", *same(lambda x: x.softmax(1)), x1((3, 6))),
    ("log_softmax", *same(lambda x: x.log_softmax(1)), x1((3, 6))),
    ("any", *same(lambda x: (x > 0).any(1)), x1((3, 6))),
    ("all", *same(lambda x: (x > 0).all(1)), x1((3, 6))),
    # elementwise float math
    *[(name, *same(lambda x, n=name: getattr(x, n)()), x1((4, 5))) for name in
      ["exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "abs", "sign",
       "floor", "ceil", "round", "trunc", "reciprocal", "erf", "atan", "asinh", "acosh",
       "atanh", "log1p", "expm1", "log2", "exp2", "square"]],
    ("gelu", F.gelu, lambda x: x.gelu(), x1((4, 5))),
    ("silu", F.silu, lambda x: x.silu(), x1((4, 5))),
    ("elu", F.elu, lambda x: x.elu(), x1((4, 5))),
    ("softplus", F.softplus, lambda x: x.softplus(), x1((4, 5))),
    ("hardswish", F.hardswish, lambda x: x.hardswish(), x1((4, 5))),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda x: x.leaky_relu(0.1), x1((4, 5))),
    ("clamp", *same(lambda x: x.clamp(-1.0, 1.0)), x1((4, 5))),
    ("maximum", *same(lambda x, y: x.maximum(y)),
     lambda rng, fl: [floats(rng, (4, 5), fl), floats(rng, (4, 5), fl)]),
    ("minimum", *same(lambda x, y: x.minimum(y)),
     lambda rng, fl: [floats(rng, (4, 5), fl), floats(rng, (4, 5), fl)]),
    ("pow", *same(lambda x, y: x ** y),
     lambda rng, fl: [floats(rng, (4, 5), fl), floats(rng, (4, 5), fl)]),
    ("div", *same(lambda x, y: x / y),
     lambda rng, fl: [floats(rng, (4, 5), fl), floats(rng, (4, 5), fl)]),
    ("fmod", *same(lambda x, y: x.fmod(y)),
     lambda rng, fl: [floats(rng, (4, 5), fl), floats(rng, (4, 5), fl)]),
    ("remainder", *same(lambda x, y: x % y),
     lambda rng, fl: [floats(rng, (4, 5), fl), floats(rng, (4, 5), fl)]),
    ("where", lambda x, y: torch.where(x > y, x, y), lambda x, y: (x > y).where(x, y),
     lambda rng, fl: [floats(rng, (4, 5), fl), floats(rng, (4, 5), fl)]),
    ("lerp", *same(lambda x, y: x.lerp(y, 0.7)),
     lambda rng, fl: [floats(rng, (4, 5), fl), floats(rng, (4, 5), fl)]),
    # integer math
    ("int_floordiv", *same(lambda a, b: a // b),
     lambda rng, fl: [ints(rng, (4, 5), fl), ints(rng, (4, 5), fl)]),
    ("int_mod", *same(lambda a, b: a % b),
     lambda rng, fl: [ints(rng, (4, 5), fl), ints(rng, (4, 5), fl)]),
    ("int_add", *same(lambda a, b: a + b),
     lambda rng, fl: [ints(rng, (4, 5), fl), ints(rng, (4, 5), fl)]),
    ("int_mul", *same(lambda a, b: a * b),
     lambda rng, fl: [ints(rng, (4, 5), fl), ints(rng, (4, 5), fl)]),
    ("int_neg_abs", *same(lambda a: (-a).abs()), lambda rng, fl: [ints(rng, (4, 5), fl)]),
    ("int_shift", *same(lambda a, b: (a << (b % 8)) + (a >> (b % 8))),
     lambda rng, fl: [ints(rng, (4, 5), fl), ints(rng, (4, 5), fl)]),
    ("int_bitwise", *same(lambda a, b: (a & b) ^ (a | b)),
     lambda rng, fl: [ints(rng, (4, 5), fl), ints(rng, (4, 5), fl)]),
    ("int_sum", *same(lambda a: a.sum(1)), lambda rng, fl: [ints(rng, (4, 5), fl)]),
    ("int_cumsum", *same(lambda a: a.cumsum(1)), lambda rng, fl: [ints(rng, (4, 5), fl)]),
    ("int_max", lambda a: a.amax(1), lambda a: a.max(1), lambda rng, fl: [ints(rng, (4, 5), fl)]),
    # einsum, scatter
    ("einsum_mm", lambda x, y: torch.einsum("ij,jk->ik", x, y),
     lambda x, y: Tensor.einsum("ij,jk->ik", x, y),
     lambda rng, fl: [floats(rng, (3, 4), "plain" if fl == "empty" else fl),
                      floats(rng, (4, 2), "plain" if fl == "empty" else fl)]),
    ("scatter_add", lambda x, s: x.scatter_add(1, torch.tensor([[0, 1, 0], [2, 2, 2]]), s),
     lambda x, s: x.scatter_reduce(1, Tensor([[0, 1, 0], [2, 2, 2]]), s, "sum"),
     lambda rng, fl: [floats(rng, (2, 4), "plain" if fl == "empty" else fl),
                      floats(rng, (2, 3), "plain" if fl == "empty" else fl)]),
    # convolution, pooling, resizing
    ("conv2d", lambda x, w: F.conv2d(x, w, padding=1), lambda x, w: x.conv2d(w, padding=1),
     lambda rng, fl: [floats(rng, (1, 2, 4, 5), "plain" if fl == "empty" else fl),
                      floats(rng, (3, 2, 3, 3), "plain" if fl == "empty" else fl)]),
    ("conv_transpose2d", lambda x, w: F.conv_transpose2d(x, w, stride=2),
     lambda x, w: x.conv_transpose2d(w, stride=2),
     lambda rng, fl: [floats(rng, (1, 2, 3, 3), "plain" if fl == "empty" else fl),
                      floats(rng, (2, 3, 2, 2), "plain" if fl == "empty" else fl)]),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2), lambda x: x.max_pool2d(2),
     lambda rng, fl: [floats(rng, (1, 2, 4, 6), "plain" if fl == "empty" else fl)]),
    ("max_pool2d_overlap", lambda x: F.max_pool2d(x, 3, 1, 1), lambda x: x.max_pool2d(3, 1, 1, 1),
     lambda rng, fl: [floats(rng, (1, 2, 4, 6), "plain" if fl == "empty" else fl)]),
    ("max_pool2d_ceil", lambda x: F.max_pool2d(x, 2, ceil_mode=True),
     lambda x: x.max_pool2d(2, ceil_mode=True),
     lambda rng, fl: [floats(rng, (1, 2, 5, 5), "plain" if fl == "empty" else fl)]),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
     lambda x: x.avg_pool2d(3, 2, padding=1, count_include_pad=False),
     lambda rng, fl: [floats(rng, (1, 2, 5, 6), "plain" if fl == "empty" else fl)]),
    ("interpolate_bilinear", lambda x: F.interpolate(x, size=(5, 3), mode="bilinear"),
     lambda x: x.interpolate((5, 3), mode="bilinear"),
     lambda rng, fl: [floats(rng, (1, 2, 3, 4), "plain" if fl == "empty" else fl)]),
    ("interpolate_bicubic", lambda x: F.interpolate(x, size=(5, 3), mode="bicubic"),
     lambda x: x.interpolate((5, 3), mode="bicubic"),
     lambda rng, fl: [floats(rng, (1, 2, 3, 4), "plain" if fl == "empty" else fl)]),
    # losses
    ("cross_entropy", lambda x, t: F.cross_entropy(x, t), lambda x, t: x.cross_entropy(t),
     lambda rng, fl: [floats(rng, (4, 3), "plain" if fl == "empty" else fl),
                      labels(rng, 4, 3, fl)]),
    ("cross_entropy_smooth", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.2),
     lambda x, t: x.cross_entropy(t, label_smoothing=0.2),
     lambda rng, fl: [floats(rng, (4, 3), "plain" if fl == "empty" else fl),
                      labels(rng, 4, 3, fl)]),
    ("nll_loss_sum", lambda x, t: F.nll_loss(x, t, reduction="sum"),
     lambda x, t: x.nll_loss(t, reduction="sum"),
     lambda rng, fl: [floats(rng, (4, 3), "plain" if fl == "empty" else fl),
                      labels(rng, 4, 3, fl)]),
    ("bce_logits", lambda x, y: F.binary_cross_entropy_with_logits(x, y.sigmoid()),
     lambda x, y: x.binary_crossentropy_logits(y.sigmoid()),
     lambda rng, fl: [floats(rng, (4, 3), fl), floats(rng, (4, 3), fl)]),
    ("bce", lambda x, y: F.binary_cross_entropy(x.sigmoid(), y.sigmoid().round()),
     lambda x, y: x.sigmoid().binary_crossentropy(y.sigmoid().round()),
     lambda rng, fl: [floats(rng, (4, 3), fl), floats(rng, (4, 3), fl)]),
    ("mse", lambda x, y: F.mse_loss(x, y), lambda x, y: x.mse(y),
     lambda rng, fl: [floats(rng, (4, 3), fl), floats(rng, (4, 3), fl)]),
]

# (op, flavor) pairs whose difference from torch is known and not fixed yet, with why: skipped
KNOWN: dict[tuple[str, str], str] = {
    ("mean", "special"): "1e30 + x - 1e30: torch's vectorized sum order loses x, tinyfw's keeps "
                         "more (a rounding-order difference, not a wrong mean)",
    # found by this test, not fixed yet (issue 38's report lists them):
    ("std", "special"): "squares of 1e30 overflow float32: tinyfw's std is inf where torch's, "
                        "accumulated in float64, is 4e29",
    ("var", "special"): "squares of 1e30 overflow float32 (see std); gradients at inf too",
    ("interpolate_bilinear", "special"): "resizing is a product with a weight matrix: an inf "
                                         "or NaN input times its zero weights spreads NaN to "
                                         "outputs torch computes from the other taps only",
    ("interpolate_bicubic", "special"): "as interpolate_bilinear",
    ("conv_transpose2d", "special"): "the zeros put between inputs for the stride, times an "
                                     "inf weight, give NaN where torch (no zeros put in) "
                                     "gives +-inf or a finite value",
    ("gelu", "special"): "torch's vectorized gelu(inf) is NaN (its scalar loop's is inf), "
                         "tinyfw's inf",
    ("cumsum", "special"): "1e30 - 1e30 + x: tinyfw's scan adds in another order than torch's "
                           "loop (a rounding-order difference)",
    ("bce_logits", "special"): "an infinite logit against a target of 1: torch's loss is NaN "
                               "(inf - inf), tinyfw's inf (found, not fixed)",
}
_INF_GRAD = ("the gradient at +-inf or NaN inputs: torch's formula gives nan or inf in other "
             "places than the chain rule through tinyfw's ops (values agree)")
# (op, flavor) pairs whose values agree and whose gradients are known to differ: values only
KNOWN_GRAD: dict[tuple[str, str], str] = {
    ("topk", "ties"): "which of tied values torch's topk returns is unspecified (its index "
                      "choice differs from tinyfw's stable one); the gradient follows it",
    **{(op, "special"): _INF_GRAD for op in
       ("cumprod", "var", "std", "softmax", "log_softmax", "logcumsumexp", "cross_entropy",
        "cross_entropy_smooth", "interpolate_bilinear", "interpolate_bicubic",
        "conv_transpose2d", "conv2d", "logsumexp", "prod")},
    **{(op, "special"): "torch's vectorized and scalar loops give different gradients at NaN "
                        "(and silu/gelu nan at +-inf): which one depends on the element's place"
       for op in ("elu", "hardswish", "silu", "gelu")},
    ("bce", "special"): "the target's gradient at a NaN target (found, not fixed)",
    ("remainder", "special"): "the divisor's gradient at an infinite divisor: inf, torch NaN",
}


def draws() -> list[tuple[int, str, str]]:
    """The fixed sequence of (case number, op name, flavor) this run checks."""
    rng = np.random.default_rng(SEED)
    return [(i, OPS[rng.integers(0, len(OPS))][0], FLAVORS[rng.integers(0, len(FLAVORS))])
            for i in range(CASES)]


OPS_BY_NAME = {op[0]: op for op in OPS}


@pytest.mark.parametrize("case, name, flavor", draws(), ids=[f"{c}-{n}-{f}"
                                                               for c, n, f in draws()])
def test_edge_call_like_torch(case: int, name: str, flavor: str) -> None:
    """The drawn op on inputs of the drawn flavor: torch's values, dtypes and gradients, or
    torch's exception type."""
    if (name, flavor) in KNOWN:
        pytest.skip(KNOWN[(name, flavor)])
    _, torch_fn, tiny_fn, make = OPS_BY_NAME[name]
    inputs = make(np.random.default_rng(SEED * 100003 + case), flavor)
    try:
        torch_fn(*[torch.tensor(np.asarray(a)) for a in inputs])
    except Exception:  # noqa: BLE001 - torch refuses: tinyfw must raise the same type
        check_error(inputs, torch_fn, tiny_fn)
        return
    try:
        check(inputs, torch_fn, tiny_fn, atol=1e-4, rtol=1e-3,
              grad=(name, flavor) not in KNOWN_GRAD)
    except NotSupportedError as e:  # what a device cannot compute (WEBGPU's float fmod)
        pytest.skip(f"not supported on {Device.DEFAULT}: {e}")
