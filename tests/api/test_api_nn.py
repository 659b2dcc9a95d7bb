"""The nn functional ops of the whole-API issue give torch.nn.functional's values, gradients and
exception types: attention, losses, convolution of any rank, pooling, unpooling, resizing."""
from __future__ import annotations

import math

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.helpers import check, check_error
from tinyfw import Tensor

# On a backend device only the distinct cases of each parametrized test run (the device
# subset, tests/conftest.py); CPU and NUMPY run them all.
pytestmark = pytest.mark.device_subset

# ---------------------------------------------------------------------------------------------
# scaled_dot_product_attention


@pytest.mark.parametrize("q, k, v", [((2, 3, 4), (2, 5, 4), (2, 5, 6)),
                                     ((2, 2, 4, 8), (2, 2, 4, 8), (2, 2, 4, 8)),
                                     ((2, 3, 5, 4), (1, 3, 6, 4), (1, 3, 6, 2)),
                                     ((2, 3, 4), (2, 0, 4), (2, 0, 6)),
                                     ((2, 0, 4), (2, 5, 4), (2, 5, 6))], ids=str)
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa(q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...], causal: bool) -> None:
    """Plain and causal attention (top-left aligned when L != S), batch and head broadcasting;
    no keys (torch's zeros) and no queries."""
    check([q, k, v], lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
          lambda q, k, v: q.scaled_dot_product_attention(k, v, is_causal=causal), atol=1e-5)


def test_sdpa_masks_and_scale() -> None:
    """A bool mask keeps where True (a row with nothing kept gives 0), a float mask is added."""
    keep = np.random.default_rng(3).random((3, 5)) > 0.4
    keep[0] = False
    check([(2, 3, 4), (2, 5, 4), (2, 5, 6), keep],
          lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
          lambda q, k, v, m: q.scaled_dot_product_attention(k, v, attn_mask=m), atol=1e-5)
    check([(2, 3, 4), (2, 5, 4), (2, 5, 6), (3, 5)],
          lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3),
          lambda q, k, v, m: q.scaled_dot_product_attention(k, v, attn_mask=m, scale=0.3),
          atol=1e-5)


def test_sdpa_gqa() -> None:
    """enable_gqa shares each key/value head among its group of query heads."""
    check([(2, 6, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3)],
          lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
          lambda q, k, v: q.scaled_dot_product_attention(k, v, enable_gqa=True), atol=1e-5)
    check_error([(2, 6, 3, 4), (2, 4, 5, 4), (2, 4, 5, 3)],
                lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
                lambda q, k, v: q.scaled_dot_product_attention(k, v, enable_gqa=True))


def test_sdpa_dropout() -> None:
    """dropout_p=1 drops everything (torch applies it outside training too); 0.5 keeps about
    half the weights, scaled by 2, so the mean output stays about the same."""
    q, k, v = Tensor.ones(1, 4, 8), Tensor.ones(1, 64, 8), Tensor.ones(1, 64, 1)
    assert np.all(q.scaled_dot_product_attention(k, v, dropout_p=1.0).numpy() == 0)
    Tensor.manual_seed(0)
    out = Tensor.ones(1, 256, 8).scaled_dot_product_attention(k, v, dropout_p=0.5).numpy()
    assert abs(out.mean() - 1) < 0.1 and out.std() > 0.01


def test_sdpa_errors() -> None:
    """torch's exception types: a mask with is_causal, mismatched sizes, a bad dropout_p."""
    check_error([(2, 3, 4), (2, 5, 4), (2, 5, 6), (3, 5)],
                lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m, is_causal=True),
                lambda q, k, v, m: q.scaled_dot_product_attention(k, v, m, is_causal=True))
    check_error([(2, 3, 4), (2, 5, 3), (2, 5, 6)], F.scaled_dot_product_attention,
                lambda q, k, v: q.scaled_dot_product_attention(k, v))
    with pytest.raises(ValueError):
        Tensor.ones(1, 2, 2).scaled_dot_product_attention(Tensor.ones(1, 2, 2),
                                                          Tensor.ones(1, 2, 2), dropout_p=2.0)


# ---------------------------------------------------------------------------------------------
# losses

TARGETS = np.array([0, 4, -100, 2, 1, 3], dtype=np.int32)  # torch gets them .long()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(reduction: str, weighted: bool) -> None:
    """nll_loss with class weights and the default ignore_index (-100), 2-D and N-D input."""
    w = np.linspace(0.5, 2, 5).astype(np.float32)
    for shape, target in (((6, 5), TARGETS), ((2, 5, 3), TARGETS.reshape(2, 3))):
        check([shape, target, w],
              lambda x, y, w: F.nll_loss(x, y.long(), w.detach() if weighted else None,
                                             reduction=reduction),
              lambda x, y, w: x.nll_loss(y, w.detach() if weighted else None,
                                             reduction=reduction),
              atol=1e-5)
    check([(5,), np.array(3, dtype=np.int32)], lambda x, y: F.nll_loss(x, y.long()),
          lambda x, y: x.nll_loss(y))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_ignore_and_weight(reduction: str, smoothing: float) -> None:
    """cross_entropy with class indices, ignore_index, class weights and label smoothing."""
    w = np.linspace(0.5, 2, 5).astype(np.float32)
    kw: dict[str, Any] = {"reduction": reduction, "label_smoothing": smoothing}
    check([(6, 5), TARGETS, w], lambda x, y, w: F.cross_entropy(x, y.long(), w.detach(), **kw),
          lambda x, y, w: x.cross_entropy(y, weight=w.detach(), **kw), atol=1e-5)
    check([(2, 5, 3), TARGETS.reshape(2, 3) % 5], lambda x, y: F.cross_entropy(x, y.long(), **kw,
                                                                             ignore_index=1),
          lambda x, y: x.cross_entropy(y, **kw, ignore_index=1), atol=1e-5)


def test_loss_errors() -> None:
    """An out-of-range class is torch's IndexError, a batch mismatch its ValueError."""
    def ints(*values: int) -> np.ndarray:
        return np.array(values, dtype=np.int32)

    check_error([(3, 4), ints(0, 5, 1)], lambda x, y: F.nll_loss(x, y.long()),
                lambda x, y: x.nll_loss(y))
    check_error([(3, 4), ints(0, 1)], lambda x, y: F.nll_loss(x, y.long()),
                lambda x, y: x.nll_loss(y))
    check_error([(3, 4), ints(0, -2, 1)], lambda x, y: F.cross_entropy(x, y.long()),
                lambda x, y: x.cross_entropy(y))
    check_error([(3, 4), ints(0, 1, 1), (3,)], lambda x, y, w: F.nll_loss(x, y.long(), w),
                lambda x, y, w: x.nll_loss(y, w))


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_bce_logits_pos_weight(reduction: str) -> None:
    """binary_crossentropy_logits with pos_weight broadcast along the classes, large logits."""
    y = (np.random.default_rng(1).random((4, 3)) > 0.5).astype(np.float32)
    check([(4, 3), y, np.array([0.5, 1.0, 3.0], dtype=np.float32)],
          lambda x, y, p: F.binary_cross_entropy_with_logits(x, y, pos_weight=p.detach(),
                                                             reduction=reduction),
          lambda x, y, p: x.binary_crossentropy_logits(y, reduction,
                                                             pos_weight=p.detach()),
          low=-30, high=30, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# convolution

CONVS: list[tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ((2, 3, 9), (4, 3, 3), {}),
    ((2, 4, 10), (6, 2, 3), {"groups": 2, "stride": 2, "padding": 1, "dilation": 2}),
    ((2, 3, 8), (2, 3, 4), {"padding": "same"}),
    ((2, 3, 7, 6), (4, 3, 2, 3), {"padding": "same", "dilation": 2}),
    ((3, 7, 6), (4, 3, 3, 3), {"padding": "valid"}),
    ((1, 2, 5, 6, 4), (4, 2, 3, 2, 2), {}),
    ((2, 4, 5, 5, 6), (2, 2, 2, 3, 2), {"groups": 2, "stride": (1, 2, 2), "padding": (1, 0, 1)}),
]
TORCH_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONVS, ids=str)
def test_conv_any_rank(x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                       kwargs: dict[str, Any]) -> None:
    """conv2d takes 1-D to 3-D (the weight's rank decides), unbatched, 'same' and 'valid'."""
    conv = TORCH_CONV[len(w_shape) - 2]
    check([x_shape, w_shape, (w_shape[0],)], lambda x, w, b: conv(x, w, b, **kwargs),
          lambda x, w, b: x.conv2d(w, b, **kwargs), atol=1e-5, grad_atol=1e-4)


def test_conv_errors() -> None:
    """torch's exception types: 'same' with a stride, an unknown padding word, wrong ranks."""
    check_error([(1, 2, 5, 5), (2, 2, 3, 3)], lambda x, w: F.conv2d(x, w, stride=2, padding="same"),
                lambda x, w: x.conv2d(w, stride=2, padding="same"))
    check_error([(1, 2, 5, 5), (2, 2, 3, 3)], lambda x, w: F.conv2d(x, w, padding="full"),
                lambda x, w: x.conv2d(w, padding="full"))
    check_error([(2, 5), (2, 2, 3, 3)], F.conv2d, lambda x, w: x.conv2d(w))
    check_error([(1, 2, 5), (2, 2, 3)], lambda x, w: F.conv1d(x, w, groups=2),
                lambda x, w: x.conv2d(w, groups=2))


CONV_TS: list[tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ((2, 3, 6), (3, 2, 3), {}),
    ((2, 4, 5), (4, 1, 3), {"stride": 2, "groups": 2, "output_padding": 1}),
    ((2, 2, 4, 5), (2, 3, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
    ((2, 4, 4, 4), (4, 1, 3, 2), {"groups": 2, "dilation": 2, "stride": (3, 2),
                                  "padding": (1, 0)}),
    ((2, 4, 4), (2, 3, 2, 2), {"stride": 2}),
    ((1, 2, 3, 4, 3), (2, 2, 2, 3, 2), {"stride": (2, 1, 2), "padding": (0, 1, 1)}),
]
TORCH_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV_TS, ids=str)
def test_conv_transpose(x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                        kwargs: dict[str, Any]) -> None:
    """conv_transpose2d of 1-D to 3-D: stride, padding, output_padding, dilation, groups."""
    conv = TORCH_CONV_T[len(w_shape) - 2]
    groups = kwargs.get("groups", 1)
    check([x_shape, w_shape, (w_shape[1] * groups,)], lambda x, w, b: conv(x, w, b, **kwargs),
          lambda x, w, b: x.conv_transpose2d(w, b, **kwargs), atol=1e-5, grad_atol=1e-4)


def test_conv_transpose_errors() -> None:
    """output_padding must be below stride or dilation; channels must match the weight."""
    check_error([(1, 2, 5, 5), (2, 2, 3, 3)],
                lambda x, w: F.conv_transpose2d(x, w, output_padding=1),
                lambda x, w: x.conv_transpose2d(w, output_padding=1))
    check_error([(1, 3, 5, 5), (2, 2, 3, 3)], F.conv_transpose2d,
                lambda x, w: x.conv_transpose2d(w))


# ---------------------------------------------------------------------------------------------
# pooling

POOLS: list[dict[str, Any]] = [
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
    {"kernel_size": 2, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": (3, 2), "stride": (2, 3), "padding": (1, 0), "ceil_mode": True},
    {"kernel_size": 3, "stride": 1, "padding": 1},
]


@pytest.mark.parametrize("kwargs", POOLS, ids=str)
def test_max_pool_ceil_and_indices(kwargs: dict[str, Any]) -> None:
    """max_pool2d with ceil_mode, and return_indices as torch's flat indices."""
    check([(2, 3, 7, 8)], lambda x: F.max_pool2d(x, **kwargs),
          lambda x: x.max_pool2d(**kwargs))
    check([(2, 3, 7, 8)], lambda x: F.max_pool2d(x, **kwargs, return_indices=True),
          lambda x: x.max_pool2d(**kwargs, return_indices=True))


@pytest.mark.parametrize("kwargs", POOLS + [{"kernel_size": 2}, {"kernel_size": 2, "dilation": 2}],
                         ids=str)
def test_max_pool_picks_torch_place_among_ties_nan_and_inf(kwargs: dict[str, Any]) -> None:
    """Values of few levels (ties everywhere), NaNs, -inf windows and +inf: the same maxima,
    indices and gradient as torch's (the first of tied maxima, the last NaN, a window of -inf
    its first place). Its backward has one reduce at most, the windows' gradients summed back
    into the input: the maxima's places are found by elementwise ops, not by reduces over the
    windows."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 3, (2, 3, 9, 9)).astype(np.float32)
    x[0, 0, 0, :2], x[1, 1, 2:4, 2:4], x[0, 2, 4, 4] = np.nan, -np.inf, np.inf
    ours, theirs = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, indices = ours.max_pool2d(**kwargs, return_indices=True)
    expected, expected_indices = F.max_pool2d(theirs, **kwargs, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    weights = rng.standard_normal(expected.shape).astype(np.float32)
    (expected * torch.tensor(weights)).sum().backward()
    (out * Tensor(weights)).sum().backward()
    assert ours.grad is not None and theirs.grad is not None
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6)
    grad = Tensor(x, requires_grad=True)
    grad.max_pool2d(**kwargs).sum().backward()
    assert grad.grad is not None
    kernels = [item.name for item in grad.grad.schedule()]
    assert len([name for name in kernels if name.startswith("r_")]) <= 1, kernels


def test_pool_padding_over_half_the_kernel() -> None:
    """Padding past half the kernel is torch's RuntimeError, for both poolings."""
    check_error([(1, 1, 6, 6)], lambda x: F.max_pool2d(x, 3, padding=2),
                lambda x: x.max_pool2d(3, padding=2))
    check_error([(1, 1, 6, 6)], lambda x: F.avg_pool2d(x, (3, 2), padding=(1, 2)),
                lambda x: x.avg_pool2d((3, 2), padding=(1, 2)))
    check_error([(1, 1, 9, 9)], lambda x: F.max_pool2d(x, 3, padding=2, dilation=2),
                lambda x: x.max_pool2d(3, padding=2, dilation=2))  # the kernel, not its reach


@pytest.mark.parametrize("kwargs", POOLS, ids=str)
@pytest.mark.parametrize("include", [True, False])
def test_avg_pool_ceil(kwargs: dict[str, Any], include: bool) -> None:
    """avg_pool2d with ceil_mode and count_include_pad: torch's divisors at the edges."""
    check([(2, 3, 7, 8)], lambda x: F.avg_pool2d(x, **kwargs, count_include_pad=include),
          lambda x: x.avg_pool2d(**kwargs, count_include_pad=include))


@pytest.mark.parametrize("kwargs", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2,
                                                          "padding": 1}], ids=str)
def test_max_unpool(kwargs: dict[str, Any]) -> None:
    """max_unpool2d puts max_pool2d's values back at their indices (overlapping windows too)."""
    x = np.random.default_rng(2).standard_normal((2, 3, 6, 7)).astype(np.float32)
    t_out, t_idx = F.max_pool2d(torch.tensor(x), **kwargs, return_indices=True)
    f_out, f_idx = Tensor(x).max_pool2d(**kwargs, return_indices=True)
    check([t_out.numpy(), t_idx.numpy().astype(np.int32)],
          lambda v, i: F.max_unpool2d(v, i.long(), **kwargs, output_size=(6, 7)),
          lambda v, i: v.max_unpool2d(i, **kwargs, output_size=(6, 7)))
    np.testing.assert_allclose(f_out.max_unpool2d(f_idx, **kwargs, output_size=(6, 7)).numpy(),
                               F.max_unpool2d(t_out, t_idx, **kwargs, output_size=(6, 7)))
    edges = np.array([[[[math.inf, -1.0], [-math.inf, math.nan]]]], np.float32)
    where = np.array([[[[0, 5], [10, 15]]]], np.int32)
    check([edges, where], lambda v, i: F.max_unpool2d(v, i.long(), 2),
          lambda v, i: v.max_unpool2d(i, 2))  # inf, -inf and nan stay where they go
    bad = np.array([[[[0, 1], [2, 99]]]], dtype=np.int32)
    check_error([(1, 1, 2, 2), bad], lambda v, i: F.max_unpool2d(v, i.long(), 2),
                lambda v, i: v.max_unpool2d(i, 2))


# ---------------------------------------------------------------------------------------------
# interpolate


@pytest.mark.parametrize("shape, size, mode", [
    ((2, 3, 7), (12,), "linear"), ((2, 3, 7), (4,), "nearest"),
    ((2, 2, 5, 6), (8, 3), "bilinear"), ((2, 2, 5, 6), (9, 11), "nearest"),
    ((1, 2, 3, 4, 5), (5, 3, 7), "trilinear"), ((2, 2, 5, 6), (1, 1), "bilinear")], ids=str)
@pytest.mark.parametrize("align", [False, True])
def test_interpolate(shape: tuple[int, ...], size: tuple[int, ...], mode: str,
                     align: bool) -> None:
    """interpolate by size: nearest and (bi/tri)linear, with and without align_corners."""
    if mode == "nearest" and align:
        pytest.skip("align_corners is only for the linear modes (its error is tested below)")
    corners = align if mode != "nearest" else None
    check([shape], lambda x: F.interpolate(x, size=size, mode=mode, align_corners=corners),
          lambda x: x.interpolate(size, mode=mode, align_corners=align), atol=1e-5)


def test_interpolate_keeps_an_inf_to_the_outputs_made_of_it() -> None:
    """An inf or nan reaches only the outputs it has a weight in (not every output through a
    0 * inf): nearest as torch's; linear where torch's formula does not itself multiply the
    inf by a weight of 0 (tests/numerics/test_differential_api.py: interpolate_zero_weight_nan)."""
    inf = float("inf")
    check([[[[inf, 1.0]]]], lambda x: F.interpolate(x, size=4),
          lambda x: x.interpolate((4,), mode="nearest"), grad=False)
    check([[[[math.nan, -inf, -0.0]]]], lambda x: F.interpolate(x, size=1, mode="linear"),
          lambda x: x.interpolate((1,), mode="linear"), grad=False)
    out = Tensor([[[1.0, 2.0, inf, 4.0, 5.0, 6.0]]]).interpolate((3,), mode="linear").numpy()
    np.testing.assert_array_equal(out, [[[1.5, inf, 5.5]]])


def test_interpolate_scale_factor_and_errors() -> None:
    """scale_factor instead of size; torch's errors for both/neither and a mode's wrong rank."""
    check([(2, 2, 4, 5)], lambda x: F.interpolate(x, scale_factor=2.5, mode="bilinear"),
          lambda x: x.interpolate(scale_factor=2.5, mode="bilinear"), atol=1e-5)
    check([(2, 2, 4, 5)], lambda x: F.interpolate(x, scale_factor=(0.5, 2.0)),
          lambda x: x.interpolate(scale_factor=(0.5, 2.0), mode="nearest"))
    check_error([(2, 2, 4, 5)], lambda x: F.interpolate(x),
                lambda x: x.interpolate(mode="nearest"))
    check_error([(2, 2, 4, 5)], lambda x: F.interpolate(x, size=(3, 3), align_corners=True),
                lambda x: x.interpolate((3, 3), mode="nearest", align_corners=True))
    check_error([(2, 2, 4, 5)], lambda x: F.interpolate(x, size=(3, 3, 3), mode="trilinear"),
                lambda x: x.interpolate((3, 3, 3), mode="trilinear"))
    check_error([(2, 2, 4, 5)], lambda x: F.interpolate(x, size=(3, 3), mode="trilinear"),
                lambda x: x.interpolate((3, 3), mode="trilinear"))
    for shape, size in (((1, 1, 0), (4,)), ((1, 2, 3, 0), (2, 2)), ((1, 1, 3), (0,))):
        # an empty spatial axis on either side: torch's RuntimeError, not a wrong index
        check_error([shape], lambda x, size=size: F.interpolate(x, size=size),
                    lambda x, size=size: x.interpolate(size, mode="nearest"))
