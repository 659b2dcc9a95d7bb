"""grid_sample, affine_grid, fold and det against torch (issue 41 added them for ONNX's
GridSample, AffineGrid, Col2Im and Det; tinyfw.torch's functional names use them too)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tinyfw.torch as tt
from tinyfw.dtype import dtypes
import tinyfw.torch.nn.functional as TF

RNG = np.random.default_rng(0)
CASES = [(d, mode, pad, ac) for d, mode, pad, ac in itertools.product(
    (2, 3), ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection"), (False, True))
    if not (d == 3 and mode == "bicubic")]


@pytest.mark.parametrize("d, mode, padding, align_corners", CASES)
def test_grid_sample_as_torch(d: int, mode: str, padding: str, align_corners: bool) -> None:
    """Points inside and outside the image (coordinates to +-1.4), every mode and padding."""
    x = RNG.normal(size=(2, 3) + (4, 5, 6)[:d]).astype(np.float32)
    grid = RNG.uniform(-1.4, 1.4, size=(2,) + (3, 4, 2)[:d] + (d,)).astype(np.float32)
    kw = {"mode": mode, "padding_mode": padding, "align_corners": align_corners}
    ref = F.grid_sample(torch.tensor(x), torch.tensor(grid), **kw).numpy()
    got = TF.grid_sample(tt.tensor(x), tt.tensor(grid), **kw).numpy()
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=1e-4)


def test_grid_sample_refuses_what_torch_refuses() -> None:
    x, grid = np.zeros((1, 1, 2, 2, 2), np.float32), np.zeros((1, 1, 1, 1, 3), np.float32)
    for lib, fn in ((torch, F), (tt, TF)):
        with pytest.raises(RuntimeError):
            fn.grid_sample(lib.tensor(x), lib.tensor(grid), mode="bicubic")
        with pytest.raises(ValueError):
            fn.grid_sample(lib.tensor(x), lib.tensor(grid), mode="area")


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 3, 2, 4, 5), (1, 1, 1, 3)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_as_torch(size: tuple[int, ...], align_corners: bool) -> None:
    d = len(size) - 2
    theta = RNG.normal(size=(size[0], d, d + 1)).astype(np.float32)
    ref = F.affine_grid(torch.tensor(theta), size, align_corners=align_corners).numpy()
    got = TF.affine_grid(tt.tensor(theta), size, align_corners=align_corners).numpy()
    np.testing.assert_allclose(got, ref, atol=1e-5)


@pytest.mark.parametrize("out, kernel, dilation, padding, stride", [
    ((5, 6), (2, 3), 1, 0, 1), ((7, 8), (3, 2), (2, 1), 1, (2, 3)), ((4, 4), 1, 1, 0, 1),
    ((9, 7), (2, 2), 2, (1, 2), 2)])
def test_fold_as_torch(out: tuple[int, int], kernel: object, dilation: object, padding: object,
                       stride: object) -> None:
    """Blocks summed back, an inf among them kept where it belongs (only additions)."""
    blocks = F.unfold(torch.zeros(1, 3, *out), kernel, dilation, padding, stride).shape[1:]
    x = RNG.normal(size=(2, *blocks)).astype(np.float32)
    x[0, 0, 0] = np.inf
    ref = F.fold(torch.tensor(x), out, kernel, dilation, padding, stride).numpy()
    got = TF.fold(tt.tensor(x), out, kernel, dilation, padding, stride).numpy()
    np.testing.assert_allclose(got, ref, atol=1e-5)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4), (6, 6), (0, 0), (2, 0, 0)])
def test_det_as_torch(shape: tuple[int, ...]) -> None:
    a = RNG.normal(size=shape).astype(np.float32)
    ref = torch.linalg.det(torch.tensor(a)).numpy()
    np.testing.assert_allclose(tt.tensor(a).det().numpy(), ref, rtol=1e-4, atol=1e-5)


def test_det_singular_swapped_and_its_gradient() -> None:
    singular = np.array([[1, 2, 3], [2, 4, 6], [1, 0, 1]], np.float32)
    assert tt.tensor(singular).det().item() == 0
    assert tt.det(tt.tensor([[0.0, 1.0], [1.0, 0.0]])).item() == -1.0  # one row swap
    a = RNG.normal(size=(3, 3)).astype(np.float32)
    ref = torch.tensor(a, requires_grad=True)
    torch.linalg.det(ref).backward()
    got = tt.tensor(a, requires_grad=True)
    got.det().backward()
    np.testing.assert_allclose(got.grad.numpy(), ref.grad.numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="square"):
        tt.zeros(2, 3).det()


def test_positions_past_int32_take_the_64_bit_index_dtype() -> None:
    """grid_sample and RoiAlign read an image plane through flat positions: int32 while they
    fit (below 2**31), the device's int64 past that, and a device without int64 refuses the
    plane (a RuntimeError that says so) rather than wrap around to another pixel."""
    from tinyfw.mixin.sampling import position_dtype
    assert position_dtype(2**31, "CPU") == dtypes.int32
    assert position_dtype(2**31 + 1, "CPU") == dtypes.int64
    with pytest.raises(RuntimeError, match="64-bit positions"):
        position_dtype(2**31 + 1, "WEBGPU")
