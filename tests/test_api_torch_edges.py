"""torch's answer at the edges (issue 38): losses that stay finite where torch's do, gradients
at ties, at +-inf and NaN, on empty or fully masked input, and the other quiet answers that were
not torch's. Each case runs the same function on tinyfw and on torch (tests/helpers.py's check:
values, dtypes, gradients; check_error: the exception type), on the device given by DEVICE."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.helpers import check, check_error
from tinyfw import Tensor

INF, NAN = math.inf, math.nan


def f32(values: Any) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def i64(values: Any) -> np.ndarray:
    return np.array(values, dtype=np.int64)


# --- losses ------------------------------------------------------------------------------------
LOGITS = f32([[1.0, 2.0, -0.5], [3.0, -INF, 0.0], [0.5, 0.5, 0.5]])
LOSS_CASES: list[tuple[str, list[Any], Any, Any]] = [
    # binary cross entropy: each log clamped at -100, torch's finite gradient at 0 and 1
    ("bce_edges", [f32([0.0, 0.5, 1.0]), f32([0.0, 1.0, 1.0])],
     lambda p, y: F.binary_cross_entropy(p, y), lambda p, y: p.binary_crossentropy(y)),
    ("bce_zero_against_one", [f32([0.0, 0.5, 1.0, 1.0]), f32([1.0, 1.0, 0.0, 0.3])],
     lambda p, y: F.binary_cross_entropy(p, y), lambda p, y: p.binary_crossentropy(y)),
    ("bce_none", [f32([0.0, 1e-30, 0.25, 1.0]), f32([1.0, 0.0, 0.5, 1.0])],
     lambda p, y: F.binary_cross_entropy(p, y, reduction="none"),
     lambda p, y: p.binary_crossentropy(y, reduction="none")),
    ("bce_sum", [f32([[0.1, 0.9], [0.0, 1.0]]), f32([[0.0, 1.0], [0.0, 0.0]])],
     lambda p, y: F.binary_cross_entropy(p, y, reduction="sum"),
     lambda p, y: p.binary_crossentropy(y, reduction="sum")),
    # cross entropy and nll: every target ignored gives a nan mean and a zero gradient
    ("ce_all_ignored", [LOGITS, i64([-100, -100, -100])],
     lambda x, t: F.cross_entropy(x, t), lambda x, t: x.cross_entropy(t)),
    ("ce_all_ignored_sum", [LOGITS, i64([-100, -100, -100])],
     lambda x, t: F.cross_entropy(x, t, reduction="sum"),
     lambda x, t: x.cross_entropy(t, reduction="sum")),
    ("ce_some_ignored", [LOGITS, i64([1, -100, 2])],
     lambda x, t: F.cross_entropy(x, t), lambda x, t: x.cross_entropy(t)),
    ("ce_ignore_index_2", [LOGITS, i64([2, 2, 2])],
     lambda x, t: F.cross_entropy(x, t, ignore_index=2),
     lambda x, t: x.cross_entropy(t, ignore_index=2)),
    ("nll_all_ignored", [LOGITS, i64([-100, -100, -100])],
     lambda x, t: F.nll_loss(x.log_softmax(1), t),
     lambda x, t: x.log_softmax(1).nll_loss(t)),
    ("nll_all_ignored_weighted", [LOGITS, i64([-100, -100, -100]), f32([1.0, 2.0, 0.5])],
     lambda x, t, w: F.nll_loss(x.log_softmax(1), t, weight=w.detach()),
     lambda x, t, w: x.log_softmax(1).nll_loss(t, weight=w.detach())),
    # a masked (-inf) logit of another class: a finite loss
    ("ce_masked_logit", [LOGITS, i64([0, 0, 1])],
     lambda x, t: F.cross_entropy(x, t), lambda x, t: x.cross_entropy(t)),
    ("ce_masked_logit_none", [LOGITS, i64([0, 2, 1])],
     lambda x, t: F.cross_entropy(x, t, reduction="none"),
     lambda x, t: x.cross_entropy(t, reduction="none")),
    ("ce_masked_logit_weighted", [LOGITS, i64([0, 0, 1]), f32([0.5, 1.0, 2.0])],
     lambda x, t, w: F.cross_entropy(x, t, weight=w.detach()),
     lambda x, t, w: x.cross_entropy(t, weight=w.detach())),
    # label smoothing: a -inf logit makes the loss inf, as torch
    ("ce_smoothing_masked", [LOGITS, i64([0, 0, 1])],
     lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
     lambda x, t: x.cross_entropy(t, label_smoothing=0.1)),
    ("ce_smoothing_masked_ignored", [LOGITS, i64([0, -100, 1])],
     lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
     lambda x, t: x.cross_entropy(t, label_smoothing=0.1)),
    ("ce_smoothing_all_ignored", [LOGITS, i64([-100, -100, -100])],
     lambda x, t: F.cross_entropy(x, t, label_smoothing=0.2),
     lambda x, t: x.cross_entropy(t, label_smoothing=0.2)),
    ("ce_smoothing_none", [LOGITS, i64([0, -100, 1])],
     lambda x, t: F.cross_entropy(x, t, label_smoothing=0.3, reduction="none"),
     lambda x, t: x.cross_entropy(t, label_smoothing=0.3, reduction="none")),
]


@pytest.mark.parametrize("name, inputs, torch_fn, tinyfw_fn", LOSS_CASES,
                         ids=[c[0] for c in LOSS_CASES])
def test_loss_like_torch(name: str, inputs: list[Any], torch_fn: Any, tinyfw_fn: Any) -> None:
    """The loss's value (nan, inf or finite as torch's) and its gradient (0, not nan, for
    ignored targets; torch's at p = 0 and 1 for binary cross entropy)."""
    check(inputs, torch_fn, tinyfw_fn, weighted=False)


@pytest.mark.parametrize("p, y", [([1.5, 0.5], [1.0, 0.0]), ([-0.1, 0.5], [1.0, 0.0]),
                                  ([0.5, 0.5], [2.0, 0.0]), ([NAN, 0.5], [1.0, 0.0])])
def test_bce_out_of_range_raises(p: list[float], y: list[float]) -> None:
    """A probability or target outside [0, 1] raises torch's RuntimeError."""
    check_error([f32(p), f32(y)], lambda a, b: F.binary_cross_entropy(a, b),
                lambda a, b: a.binary_crossentropy(b))


# --- max pooling: the whole gradient to the place torch picks -----------------------------------
def _pool_torch(n: int, **kw: Any) -> Any:
    return lambda x: getattr(F, f"max_pool{n}d")(x, **kw)


POOL_CASES: list[tuple[tuple[int, ...], dict[str, Any]]] = [
    ((1, 1, 2, 2), {"kernel_size": 2}),
    ((1, 1, 3), {"kernel_size": (2,), "stride": 1}),
    ((2, 2, 7), {"kernel_size": (3,), "stride": 2, "padding": 1}),
    ((2, 2, 6, 6), {"kernel_size": 2}),
    ((2, 2, 6, 7), {"kernel_size": 3, "stride": 1}),
    ((1, 2, 7, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((1, 2, 7, 8), {"kernel_size": (2, 3), "stride": (2, 1), "ceil_mode": True}),
    ((1, 1, 9, 9), {"kernel_size": 3, "stride": 2, "dilation": 2, "padding": 1}),
    ((1, 2, 4, 4, 4), {"kernel_size": (2, 2, 2)}),
    ((1, 1, 5, 4, 5), {"kernel_size": (3, 2, 3), "stride": 1, "padding": (1, 0, 1)}),
]


@pytest.mark.parametrize("shape, kwargs", POOL_CASES, ids=[str(c[1]) for c in POOL_CASES])
@pytest.mark.parametrize("values", ["ones", "ties", "relu", "inf", "nan"])
def test_max_pool_gradient_to_torch_place(shape: tuple[int, ...], kwargs: dict[str, Any],
                                          values: str) -> None:
    """max pooling over tied maxima (all ones; small integers; the zeros after a ReLU), -inf
    windows and NaNs: the value, the indices and the gradient are torch's (all of a window's
    gradient to the first maximum, the last NaN; overlapping windows add up)."""
    n = len(shape) - 2
    kw = {**kwargs, "kernel_size": kwargs["kernel_size"]}
    kernel = kw["kernel_size"]
    kw["kernel_size"] = kernel if isinstance(kernel, tuple) else (kernel,) * n
    rng = np.random.default_rng(len(shape) * 7 + len(kwargs))
    x = {"ones": np.ones(shape), "ties": rng.integers(0, 3, shape),
         "relu": np.maximum(rng.integers(-3, 2, shape), 0),
         "inf": np.where(rng.random(shape) < 0.7, -INF, rng.integers(0, 2, shape)),
         "nan": np.where(rng.random(shape) < 0.2, NAN, rng.integers(0, 2, shape))}[values]
    x = f32(x)
    torch_kw = {**kw, "kernel_size": kw["kernel_size"] if n > 1 else kw["kernel_size"][0]}
    check([x], _pool_torch(n, **torch_kw), lambda t: t.max_pool2d(**kw), weighted=True)
    check([x], _pool_torch(n, **torch_kw, return_indices=True),
          lambda t: t.max_pool2d(**kw, return_indices=True))
