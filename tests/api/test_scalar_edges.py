"""Edges of ops with a Python number, against torch: a remainder by an infinite divisor or of
a signed zero, an int tensor divided by a number its dtype cannot hold, shift counts past the
dtype's bits or negative (taken in the tensor's dtype, as torch takes them)."""
from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import numpy as np
import pytest
import torch

from tinyfw import Tensor, dtypes
from tinyfw.dtype import DType

from tests.helpers import TORCH_DTYPES

NeedsDtypesFixture = Callable[..., AbstractContextManager[None]]

INF, NAN = float("inf"), float("nan")
FLOATS = [1.0, -1.0, 0.0, -0.0, 3.5, -3.5, INF, -INF, NAN, 1e-40, 7e30]


def same(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    """The same values, nan where nan (its sign bit aside), and the same sign of zero."""
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0, err_msg=what)
    numbers = ~np.isnan(expected)
    assert (np.signbit(got) == np.signbit(expected))[numbers].all(), \
        f"{what}: {got} against {expected}"


@pytest.mark.parametrize("divisor", [INF, -INF, NAN, 0.0, -0.0, 2.0, -2.0, 0.3, 1e-30], ids=repr)
def test_remainder_by_a_number_as_torch(divisor: float) -> None:
    """x % d and d % x: 1 % inf is 1 and -1 % inf is inf (where a - floor(a / b) * b would be
    nan), signs of zero and a quotient of 1e31 as torch's (C's fmod, then the divisor added
    where the signs differ); on WEBGPU, which has no exact fmod, the edges by infinities."""
    x = Tensor(FLOATS)
    t = torch.tensor(FLOATS)
    if Tensor([1.0]).device.startswith("WEBGPU"):
        got = (x % divisor).numpy()
        expected = (t % divisor).numpy()
        edges = np.isinf(divisor) & np.isfinite(np.array(FLOATS))
        if np.isinf(divisor):
            same(got[edges], expected[edges], f"x % {divisor}")
        return
    same((x % divisor).numpy(), (t % divisor).numpy(), f"x % {divisor}")
    same((divisor % x).numpy(), (divisor % t).numpy(), f"{divisor} % x")


def test_remainder_of_tensors_as_torch() -> None:
    """A thousand float32 remainders with quotients up to the hundreds: torch's, bit for bit
    where the device has C's fmod."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1000).astype(np.float32) * 100
    b = rng.standard_normal(1000).astype(np.float32)
    got, expected = (Tensor(a) % Tensor(b)).numpy(), (torch.tensor(a) % torch.tensor(b)).numpy()
    if Tensor([1.0]).device.startswith("WEBGPU"):
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-3)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [dtypes.uint8, dtypes.int8, dtypes.int32, dtypes.bool], ids=repr)
@pytest.mark.parametrize("number", [300, 2**40, -7, 3, 2.5, True], ids=repr)
def test_true_division_keeps_the_number(dtype: DType, number: int | float) -> None:
    """An int tensor divided by (or dividing) a Python number: the number's own value (a uint8
    tensor / 300 is not / 44, its wrap into uint8), float32 as in torch."""
    base = [1, 0, 3] if dtype != dtypes.bool else [True, False, True]
    x, t = Tensor(base, dtype=dtype), torch.tensor(base, dtype=TORCH_DTYPES[dtype])
    for what, got, expected in (("x / n", x / number, t / number),
                                ("n / x", number / x, number / t)):
        assert got.dtype == dtypes.float32, what
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6, err_msg=what)


@pytest.mark.parametrize("dtype", [dtypes.int8, dtypes.uint8, dtypes.int32, dtypes.int64],
                         ids=repr)
def test_shift_counts_as_torch(dtype: DType, needs_dtypes: NeedsDtypesFixture) -> None:
    """x << n and x >> n for counts inside the dtype, at and past its bits, wrapping around
    it (int8 << 260 shifts by 4, as torch), and negative (every bit shifted out)."""
    base = [1, 3, -4, 127, -128] if dtype != dtypes.uint8 else [1, 3, 200, 255, 0]
    t = torch.tensor(base, dtype=TORCH_DTYPES[dtype])
    for count in (0, 1, 5, 7, 8, 9, 31, 32, 63, 64, 260, 2**33 + 1, -1, -7, -260):
        with needs_dtypes(dtype):
            x = Tensor(base, dtype=dtype)
            assert (x << count).tolist() == (t << count).tolist(), f"<< {count}"
            assert (x >> count).tolist() == (t >> count).tolist(), f">> {count}"
