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

INF, NAN = math.inf, math.nan

# on a backend device (CL, WEBGPU, CUDAEMU) only the distinct cases run (tests/conftest.py)
pytestmark = pytest.mark.device_subset


def f32(values: Any) -> np.ndarray:
    return np.array(values, dtype=np.float32)


# --- losses ------------------------------------------------------------------------------------
# (class targets and indices as Python lists: int64 in torch, tinyfw's default int, int32, in
# tinyfw, so that they run on WEBGPU, which has no int64)
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
    ("ce_all_ignored", [LOGITS, [-100, -100, -100]],
     lambda x, t: F.cross_entropy(x, t), lambda x, t: x.cross_entropy(t)),
    ("ce_all_ignored_sum", [LOGITS, [-100, -100, -100]],
     lambda x, t: F.cross_entropy(x, t, reduction="sum"),
     lambda x, t: x.cross_entropy(t, reduction="sum")),
    ("ce_some_ignored", [LOGITS, [1, -100, 2]],
     lambda x, t: F.cross_entropy(x, t), lambda x, t: x.cross_entropy(t)),
    ("ce_ignore_index_2", [LOGITS, [2, 2, 2]],
     lambda x, t: F.cross_entropy(x, t, ignore_index=2),
     lambda x, t: x.cross_entropy(t, ignore_index=2)),
    ("nll_all_ignored", [LOGITS, [-100, -100, -100]],
     lambda x, t: F.nll_loss(x.log_softmax(1), t),
     lambda x, t: x.log_softmax(1).nll_loss(t)),
    ("nll_all_ignored_weighted", [LOGITS, [-100, -100, -100], f32([1.0, 2.0, 0.5])],
     lambda x, t, w: F.nll_loss(x.log_softmax(1), t, weight=w.detach()),
     lambda x, t, w: x.log_softmax(1).nll_loss(t, weight=w.detach())),
    # a masked (-inf) logit of another class: a finite loss
    ("ce_masked_logit", [LOGITS, [0, 0, 1]],
     lambda x, t: F.cross_entropy(x, t), lambda x, t: x.cross_entropy(t)),
    ("ce_masked_logit_none", [LOGITS, [0, 2, 1]],
     lambda x, t: F.cross_entropy(x, t, reduction="none"),
     lambda x, t: x.cross_entropy(t, reduction="none")),
    ("ce_masked_logit_weighted", [LOGITS, [0, 0, 1], f32([0.5, 1.0, 2.0])],
     lambda x, t, w: F.cross_entropy(x, t, weight=w.detach()),
     lambda x, t, w: x.cross_entropy(t, weight=w.detach())),
    # label smoothing: a -inf logit makes the loss inf, as torch
    ("ce_smoothing_masked", [LOGITS, [0, 0, 1]],
     lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
     lambda x, t: x.cross_entropy(t, label_smoothing=0.1)),
    ("ce_smoothing_masked_ignored", [LOGITS, [0, -100, 1]],
     lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
     lambda x, t: x.cross_entropy(t, label_smoothing=0.1)),
    ("ce_smoothing_all_ignored", [LOGITS, [-100, -100, -100]],
     lambda x, t: F.cross_entropy(x, t, label_smoothing=0.2),
     lambda x, t: x.cross_entropy(t, label_smoothing=0.2)),
    ("ce_smoothing_none", [LOGITS, [0, -100, 1]],
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


# --- gradients at ties, bounds, +-inf, NaN and empty input -------------------------------------
# Every row: a name, the function on a tinyfw tensor, the same on a torch tensor, and the input.
TIES = [[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-INF, -INF, 0.0, 0.0], [NAN, 1.0, NAN, 1.0]]
SPECIAL = [[0.0, -0.0, 1.0, -1.0], [INF, -INF, NAN, 2.0], [6.0, -6.0, 3.0, -3.0],
           [1e-30, -1e-30, 100.0, -100.0]]
# each value 16 times: torch's CPU kernels take their vectorized path for all of them, whose
# answer at NaN differs from their scalar loop's for some (hardtanh: 0, not 1); tinyfw follows
# the vectorized one, which any tensor of more than a few elements gets
WIDE = np.repeat(f32(SPECIAL), 16, axis=1).tolist()
WIDE_TIES = np.repeat(f32(TIES + SPECIAL), 16, axis=1).tolist()
LOGS = [[-1.0, 0.0, -0.0, 0.5], [INF, -INF, NAN, 2.0], [-2.0, 1.0, -0.5, 1e-30]]


GRAD_CASES: list[tuple[str, Any, Any, list[list[float]]]] = [
    ("max_all", lambda x: x.max(), lambda x: x.max(), TIES[:2]),
    ("amax", lambda x: x.max(1), lambda x: x.amax(1), TIES),
    ("amin", lambda x: x.min(1), lambda x: x.amin(1), TIES),
    ("amax_multi", lambda x: x.max((0, 1)), lambda x: x.amax((0, 1)), TIES[:2]),
    ("sort", lambda x: x.sort(1)[0], lambda x: x.sort(1)[0], TIES),
    ("sort_descending", lambda x: x.sort(1, descending=True)[0],
     lambda x: x.sort(1, descending=True)[0], TIES),
    ("cummax", lambda x: x.cummax(1)[0], lambda x: x.cummax(1)[0], TIES),
    ("cummin", lambda x: x.cummin(1)[0], lambda x: x.cummin(1)[0], TIES),
    ("gather_argmax", lambda x: x.gather(1, x.argmax(1, keepdim=True)),
     lambda x: x.gather(1, x.argmax(1, keepdim=True)), TIES),
    ("maximum", lambda x: x.maximum(x.flip(1)), lambda x: x.maximum(x.flip(1)), TIES + SPECIAL),
    ("minimum", lambda x: x.minimum(x.flip(1)), lambda x: x.minimum(x.flip(1)), TIES + SPECIAL),
    ("clamp", lambda x: x.clamp(0.0, 2.0), lambda x: x.clamp(0.0, 2.0), WIDE_TIES),
    ("clamp_min", lambda x: x.clamp(min=0.0), lambda x: x.clamp(min=0.0), WIDE_TIES),
    ("clamp_max", lambda x: x.clamp(max=1.0), lambda x: x.clamp(max=1.0), WIDE_TIES),
    ("relu", lambda x: x.relu(), lambda x: x.relu(), WIDE_TIES),
    ("relu6", lambda x: x.relu6(), F.relu6, WIDE),
    ("hardtanh", lambda x: x.hardtanh(), F.hardtanh, WIDE),
    ("leaky_relu", lambda x: x.leaky_relu(0.1), lambda x: F.leaky_relu(x, 0.1), WIDE),
    ("elu", lambda x: x.elu(), F.elu, WIDE),
    ("celu", lambda x: x.celu(), F.celu, WIDE),
    ("selu", lambda x: x.selu(), F.selu, WIDE),
    ("hardsigmoid", lambda x: x.hardsigmoid(), F.hardsigmoid, WIDE),
    ("hardswish", lambda x: x.hardswish(), F.hardswish, WIDE),
    ("softplus", lambda x: x.softplus(), F.softplus, WIDE),
    ("abs", lambda x: x.abs(), lambda x: x.abs(), WIDE),
    ("sqrt", lambda x: x.sqrt(), lambda x: x.sqrt(), WIDE),
    ("pow_half", lambda x: x ** 0.5, lambda x: x ** 0.5, SPECIAL),
    ("norm_at_zero", lambda x: (x * 0).square().sum(1).sqrt(),
     lambda x: (x * 0).square().sum(1).sqrt(), SPECIAL),
    ("where", lambda x: (x > 1).where(x, 0.0), lambda x: torch.where(x > 1, x, 0.0),
     TIES + SPECIAL),
    ("logsumexp", lambda x: x.logsumexp(1), lambda x: x.logsumexp(1), TIES + SPECIAL),
    ("softmax_masked_rows", lambda x: x.softmax(1), lambda x: x.softmax(1),
     [[-INF, -INF], [0.0, -INF], [1.0, 2.0]]),
    ("log_softmax_masked_rows", lambda x: x.log_softmax(1), lambda x: x.log_softmax(1),
     [[-INF, -INF], [0.0, -INF], [1.0, 2.0]]),
    ("prod_zeros", lambda x: x.prod(1), lambda x: x.prod(1),
     [[0.0, 2.0, 3.0], [0.0, 0.0, 3.0], [1.0, 2.0, 3.0]]),
    ("cumsum_inf", lambda x: x.cumsum(1), lambda x: x.cumsum(1), [[INF, 1.0, -INF]]),
    ("std_constant", lambda x: x.std(1), lambda x: x.std(1), [[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]]),
    ("sum_empty", lambda x: x[:, :0].sum(1), lambda x: x[:, :0].sum(1), [[1.0, 2.0]]),
    ("mean_empty", lambda x: x[:, :0].mean(1), lambda x: x[:, :0].mean(1), [[1.0, 2.0]]),
    ("logsumexp_empty", lambda x: x[:, :0].logsumexp(1), lambda x: x[:, :0].logsumexp(1),
     [[1.0, 2.0]]),
    ("softmax_empty", lambda x: x[:, :0].softmax(1), lambda x: x[:, :0].softmax(1),
     [[1.0, 2.0]]),
    ("lerp_inf", lambda x: x.lerp(x.flip(1), 0.5), lambda x: x.lerp(x.flip(1), 0.5),
     [[INF, 1.0], [2.0, -INF], [1.0, 3.0]]),
    ("lerp_weights", lambda x: x.lerp(x.flip(1) * 2, 0.25), lambda x: x.lerp(x.flip(1) * 2, 0.25),
     [[INF, 1.0], [2.0, -INF], [1.0, 3.0]]),
    # outside the domain: torch's formula's value (issue 40)
    ("log", lambda x: x.log(), lambda x: x.log(), LOGS),
    ("log2", lambda x: x.log2(), lambda x: x.log2(), LOGS),
    ("log10", lambda x: x.log10(), lambda x: x.log10(), LOGS),
    ("log1p", lambda x: x.log1p(), lambda x: x.log1p(), LOGS + [[-2.0, -1.0, -1.5, 0.0]]),
    ("x_log_x", lambda x: x * x.log(), lambda x: x * x.log(), LOGS),
    ("acosh", lambda x: x.acosh(), lambda x: x.acosh(), LOGS + [[1.0, 0.5, 2.0, -2.0]]),
    ("atanh", lambda x: x.atanh(), lambda x: x.atanh(), LOGS + [[1.0, -1.0, 2.0, -2.0]]),
    ("asinh", lambda x: x.asinh(), lambda x: x.asinh(), LOGS + [[1e30, -1e30, 0.0, 1.0]]),
    ("asin", lambda x: x.asin(), lambda x: x.asin(), LOGS + [[1.0, -1.0, 2.0, -2.0]]),
    ("acos", lambda x: x.acos(), lambda x: x.acos(), LOGS + [[1.0, -1.0, 2.0, -2.0]]),
    ("rsqrt", lambda x: x.rsqrt(), lambda x: x.rsqrt(), LOGS),
    ("reciprocal", lambda x: x.reciprocal(), lambda x: x.reciprocal(), LOGS),
]


@pytest.mark.parametrize("name, fn, torch_fn, values", GRAD_CASES,
                         ids=[c[0] for c in GRAD_CASES])
def test_gradient_at_edges_like_torch(name: str, fn: Any, torch_fn: Any,
                                      values: list[list[float]]) -> None:
    """The value and the gradient (of a weighted sum) are torch's, NaN where torch's is NaN."""
    check([f32(values)], torch_fn, fn)


# --- other answers that were not torch's --------------------------------------------------------
COLUMN = f32([[1.0], [2.0], [3.0]])


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "std", "var"])
def test_no_axes_reduce_all(name: str, keepdim: bool) -> None:
    """An empty tuple of axes reduces every axis, as torch's sum, mean, amax, amin, std, var."""
    own = {"amax": "max", "amin": "min"}.get(name, name)
    # torch's std and var over () give the value over all, yet a gradient of inf and nan
    check([COLUMN], lambda x: getattr(x, name)((), keepdim=keepdim),
          lambda x: getattr(x, own)((), keepdim=keepdim), grad=name not in ("std", "var"))


def test_no_axes_any_all_reduce_none() -> None:
    """any and all with an empty tuple of axes reduce nothing, as torch's."""
    check([COLUMN], lambda x: x.any(()), grad=False)
    check([COLUMN], lambda x: x.all(()), grad=False)


@pytest.mark.parametrize("fn", ["any", "all"])
@pytest.mark.parametrize("shape, axis", [((2, 0), 1), ((0, 3), 0), ((0,), None), ((2, 0), None),
                                         ((0, 3), 1)])
def test_any_all_over_nothing(fn: str, shape: tuple[int, ...], axis: int | None) -> None:
    """any over nothing is False, all over nothing True, as torch's."""
    check([f32(np.zeros(shape))], lambda x: getattr(x, fn)() if axis is None else
          getattr(x, fn)(axis), grad=False)


def test_float16_std_computed_wide(needs_dtypes: Any) -> None:
    """float16's std is computed in float32 and rounded once: 60000, though the variance is
    inf in float16, as torch's."""
    from tinyfw import dtypes
    with needs_dtypes(dtypes.float16):
        x = np.array([60000, -60000, 0], np.float16)
        check([x], lambda t: t.std(), grad=False, rtol=1e-3)
        check([x], lambda t: t.var(), grad=False, rtol=1e-3)
        check([np.array([[60000, -60000, 0], [1, 2, 3]], np.float16)],
              lambda t: t.std(1, keepdim=True), grad=False, rtol=1e-3)


@pytest.mark.parametrize("kwargs", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 1,
                                                         "padding": 1},
                                    {"kernel_size": 3, "stride": 1, "padding": 1,
                                     "count_include_pad": False},
                                    {"kernel_size": 3, "stride": 2, "padding": 1,
                                     "ceil_mode": True}])
def test_avg_pool_of_int64_truncates(kwargs: dict[str, Any], needs_dtypes: Any) -> None:
    """avg_pool2d of int64 stays int64, each mean truncated toward 0, as torch's."""
    from tinyfw import dtypes
    with needs_dtypes(dtypes.int64):
        x = np.arange(-20, 20, dtype=np.int64).reshape(1, 2, 4, 5)
        check([x], lambda t: F.avg_pool2d(t, **kwargs), lambda t: t.avg_pool2d(**kwargs))


def test_avg_pool_of_bool_raises() -> None:
    """avg_pool2d of a bool tensor raises torch's NotImplementedError."""
    check_error([np.ones((1, 1, 2, 2), bool)], lambda t: F.avg_pool2d(t, 2),
                lambda t: t.avg_pool2d(2))


@pytest.mark.parametrize("reduce", ["max", "min"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_max_min_names(reduce: str, include_self: bool) -> None:
    """scatter_reduce takes torch's "max" and "min" (as amax and amin); as torch, its backward
    then raises a RuntimeError."""
    inputs = [f32([1.0, 2.0, 3.0, 4.0]), [0, 0, 1, 3, 3], f32([5.0, -7.0, 1.0, 9.0, 2.0])]
    fn = lambda x, i, s: x.scatter_reduce(0, i, s, reduce=reduce,  # noqa: E731
                                          include_self=include_self)
    check(inputs, fn, grad=False)
    check_error(inputs, lambda x, i, s: fn(_needing_grad(x), i, s).sum().backward() or x)


def _needing_grad(x: Any) -> Any:
    x.requires_grad = True
    return x


SHIFT_VALUES = [1, -3, 100, 7, -128, 5, 5, 5, 1, 3, 127, 0]
SHIFT_COUNTS = [1, 2, 3, 0, 1, 7, 8, 9, -1, 100, 6, 31]


@pytest.mark.parametrize("op", ["lshift", "rshift"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
def test_shift_by_tensor_of_counts(op: str, dtype: str, needs_dtypes: Any) -> None:
    """a << counts and a >> counts for an int tensor of counts, elementwise, as torch: a count
    below 0 or past the dtype's width shifts everything out (0, or -1 right of a negative)."""
    from tinyfw import dtypes
    with needs_dtypes(getattr(dtypes, dtype)):
        a = np.array(SHIFT_VALUES).astype(dtype)
        n = np.array(SHIFT_COUNTS).astype(dtype)
        fn = (lambda x, c: x << c) if op == "lshift" else (lambda x, c: x >> c)
        check([a, n], fn, grad=False)
        check([a.reshape(3, 4), n[:4]], fn, grad=False)  # counts broadcast


def test_shift_by_tensor_dtypes_and_errors() -> None:
    """An int8 tensor shifted by int32 counts is int32 (the promotion); a float count or value
    raises torch's NotImplementedError."""
    check([np.array([1, 2, -3], np.int8), np.array([1, 2, 3], np.int32)], lambda x, c: x << c,
          grad=False)
    check_error([np.array([1.0], np.float32), np.array([1], np.int32)],
                lambda x, c: x << c)
    check_error([np.array([1], np.int32), np.array([1.0], np.float32)],
                lambda x, c: x >> c)


INTERPOLATE_SIZES = [((1, 2, 4, 5), (7, 3)), ((2, 1, 6, 3), (3, 8)), ((1, 1, 1, 4), (3, 2)),
                     ((1, 1, 5, 5), (5, 5))]


@pytest.mark.parametrize("shape, size", INTERPOLATE_SIZES, ids=str)
@pytest.mark.parametrize("mode, corners", [("nearest-exact", None), ("bicubic", False),
                                           ("bicubic", True), ("area", None)])
def test_interpolate_more_modes(shape: tuple[int, ...], size: tuple[int, ...], mode: str,
                                corners: bool | None) -> None:
    """interpolate's nearest-exact, bicubic (with and without align_corners) and area modes,
    values and gradients, as torch's."""
    check([shape], lambda x: F.interpolate(x, size=size, mode=mode, align_corners=corners),
          lambda x: x.interpolate(size, mode=mode, align_corners=bool(corners)), atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest-exact", "bicubic", "area"])
@pytest.mark.parametrize("scale", [0.5, 1.7, 3.0])
def test_interpolate_more_modes_by_scale(mode: str, scale: float) -> None:
    """The new modes with a scale_factor, as torch's (area: pooled to the size)."""
    check([(1, 2, 5, 7)], lambda x: F.interpolate(x, scale_factor=scale, mode=mode),
          lambda x: x.interpolate(scale_factor=scale, mode=mode), atol=1e-5)


@pytest.mark.parametrize("shape, size", INTERPOLATE_SIZES + [((1, 3, 7, 2), (3, 11))], ids=str)
@pytest.mark.parametrize("mode, corners", [("bilinear", False), ("bilinear", True),
                                           ("bicubic", False), ("bicubic", True),
                                           ("nearest", None), ("nearest-exact", None)])
def test_interpolate_uint8_rounds_as_torch(shape: tuple[int, ...], size: tuple[int, ...],
                                           mode: str, corners: bool | None) -> None:
    """uint8 resizing gives torch's values to the unit (its integer weights, one axis at a
    time, each pass rounded and clamped)."""
    x = np.random.default_rng(sum(shape)).integers(0, 256, shape).astype(np.uint8)
    check([x], lambda t: F.interpolate(t, size=size, mode=mode, align_corners=corners),
          lambda t: t.interpolate(size, mode=mode, align_corners=bool(corners)), atol=0,
          rtol=0)


def test_interpolate_uint8_area_raises() -> None:
    """area (adaptive average pooling) of uint8 raises torch's NotImplementedError."""
    check_error([np.ones((1, 1, 4, 4), np.uint8)],
                lambda t: F.interpolate(t, size=(2, 2), mode="area"),
                lambda t: t.interpolate((2, 2), mode="area"))


@pytest.mark.parametrize("values", [[[0, 1, 0], [2, 0, 3]], [0.0, -1.5, 0.0, 2.0], [[0, 0]], 5,
                                    0, [True, False, True]], ids=str)
@pytest.mark.parametrize("size, fill", [(0, -1), (2, -1), (5, -1), (4, 7)])
def test_nonzero_static(values: Any, size: int, fill: int, needs_dtypes: Any) -> None:
    """nonzero_static: the first `size` nonzero indices, then rows of fill_value, as torch's."""
    from tinyfw import dtypes
    want = torch.nonzero_static(torch.tensor(values), size=size, fill_value=fill)
    # an empty result computes nothing, so it needs no int64 kernel (WEBGPU has none)
    with needs_dtypes(*([dtypes.int64] if want.numel() else [])):
        check([np.array(values)], lambda t: torch.nonzero_static(t, size=size, fill_value=fill),
              lambda t: t.nonzero_static(size=size, fill_value=fill), grad=False)


def test_nonzero_static_negative_size_raises() -> None:
    check_error([np.array([1, 0])], lambda t: torch.nonzero_static(t, size=-1),
                lambda t: t.nonzero_static(size=-1))


# --- float16 selects on a toolchain that cannot assemble them -----------------------------------
def test_float16_select_builds_for_avx512fp16_targets() -> None:
    """gcc 12 with binutils 2.40 emits a zero-masked vmovsh (which the assembler refuses) for a
    float16 select on a processor with AVX512-FP16: the flags tinyfw compiles with for such a
    processor (probed once) build it, and the float16 relu kernel tinyfw renders."""
    from tinyfw.runtime.c_compiler import FLOAT16_PROBE, builds, compile_flags, find_compiler
    flags = compile_flags("sapphirerapids")
    assert flags[-2:] == ["-x", "c"]
    relu = FLOAT16_PROBE.replace("tf_probe", "E_4_7").replace("i < 7", "i < 28")
    for source in (FLOAT16_PROBE, relu):
        assert builds(find_compiler(), flags[:-2], source), f"{flags} cannot build a select"


@pytest.mark.parametrize("fn", ["relu", "clamp", "where", "maximum", "hardtanh", "abs"])
def test_float16_selects_like_torch(fn: str, needs_dtypes: Any) -> None:
    """float16 relu, clamp, where, maximum, hardtanh and abs compile and give torch's values."""
    from tinyfw import dtypes
    ops = {"relu": lambda x: x.relu(), "clamp": lambda x: x.clamp(-0.5, 0.5),
           "where": lambda x: (x > 0).where(x, x * 2) if not isinstance(x, torch.Tensor)
           else torch.where(x > 0, x, x * 2),
           "maximum": lambda x: x.maximum(x * 0.5), "hardtanh": lambda x: F.hardtanh(x)
           if isinstance(x, torch.Tensor) else x.hardtanh(), "abs": lambda x: x.abs()}
    with needs_dtypes(dtypes.float16):
        for shape in [(4, 7), (1000,)]:
            x = np.random.default_rng(0).uniform(-2, 2, shape).astype(np.float16)
            check([x], ops[fn], grad=False, atol=1e-3, rtol=1e-3)
