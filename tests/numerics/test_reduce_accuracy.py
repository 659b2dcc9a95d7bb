"""Long float32 sums and means are accurate, and integer sums don't overflow, as in torch.

The references are numpy float64 computations of the same values, and the tolerances are ones
that a sum kept in one float32 accumulator fails: such a sum of 2e7 ones stops at 16777216
(2**24 + 1 rounds back to 2**24), of 2**28 twos at 2**25, of 4M uniform values it is off by 6e-3
(relative), and the variance of 1e4 + randn(1e5) comes out as 56 rather than about 1 (the mean
is off by more than the spread). Integer and bool sums are int64, as torch's are.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tinyfw import Tensor, dtypes

DEVICES = ["CPU", "NUMPY"]
RTOL = 1e-6  # a float32 sum in partial sums is within a few ulps; one accumulator is not


def relative_error(got: np.ndarray | float, ref: np.ndarray | float) -> float:
    """The largest |got - ref| / |ref|."""
    got64, ref64 = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    return float(np.max(np.abs(got64 - ref64) / np.abs(ref64)))


@pytest.mark.parametrize("device", DEVICES)
def test_sum_of_2e7_ones_is_exact(device: str) -> None:
    """2e7 ones sum to 2e7 exactly (one float32 accumulator stops at 2**24 = 16777216)."""
    assert Tensor.ones(20_000_000, device=device).sum().item() == 20_000_000.0


def test_sum_of_2_to_28_twos_is_exact() -> None:
    """(ones(2**28) + 1).sum() is 2**29 on CPU (one accumulator stops at 2**25; NUMPY would
    hold gigabytes of temporaries, so it is left out)."""
    assert (Tensor.ones(2 ** 28, device="CPU") + 1).sum().item() == 2.0 ** 29


@pytest.mark.parametrize("device", DEVICES)
def test_sum_and_mean_of_4m_uniform(device: str) -> None:
    """The sum and the mean of 4M uniform [0, 1) values are within 1e-6 of float64's (one
    accumulator: 6e-3)."""
    x = np.random.default_rng(0).random(4_000_000, dtype=np.float32)
    t = Tensor(x, device=device)
    got_sum, got_mean = t.sum(), t.mean()
    Tensor.realize_all(got_sum, got_mean)
    assert relative_error(got_sum.item(), x.astype(np.float64).sum()) <= RTOL
    assert relative_error(got_mean.item(), x.astype(np.float64).mean()) <= RTOL


@pytest.mark.parametrize("n", [100_000, 1_000_000])
@pytest.mark.parametrize("device", DEVICES)
def test_var_and_std_of_offset_values(device: str, n: int) -> None:
    """var and std of 1e4 + randn(n) are within 1e-3 of float64's (an inaccurate mean gave
    56.07 and 7.49 for n = 1e5, 17138 for the variance at n = 1e6)."""
    x = (1e4 + np.random.default_rng(n).standard_normal(n)).astype(np.float32)
    x64 = x.astype(np.float64)
    t = Tensor(x, device=device)
    var, std = t.var(), t.std()
    Tensor.realize_all(var, std)
    assert relative_error(var.item(), x64.var(ddof=1)) <= 1e-3, var.item()
    assert relative_error(std.item(), x64.std(ddof=1)) <= 1e-3, std.item()


@pytest.mark.parametrize("device", DEVICES)
def test_float16_mean_of_ones(device: str) -> None:
    """The float16 mean of 1e5 ones is 1.0 with dtype float16, as torch's (summed in float16,
    the sum overflows to inf, and 1e5 is inf in float16 too: the mean was NaN)."""
    got = Tensor.ones(100_000, dtype=dtypes.float16, device=device).mean()
    ref = torch.ones(100_000, dtype=torch.float16).mean()
    assert got.dtype == dtypes.float16
    assert got.item() == ref.item() == 1.0


@pytest.mark.parametrize("device", DEVICES)
def test_int32_sum_into_int64(device: str) -> None:
    """Tensor([2**30] * 3).sum() is 3221225472, an int64, as in torch (int32 overflowed)."""
    got = Tensor([2 ** 30] * 3, device=device).sum()
    assert got.dtype == dtypes.int64
    assert got.item() == torch.tensor([2 ** 30] * 3, dtype=torch.int32).sum().item() == 3221225472


SMALL_INTS = {"bool": (np.bool_, torch.bool, [True, False, True, True]),
              "int8": (np.int8, torch.int8, [100, 100, 100, -3]),
              "uint8": (np.uint8, torch.uint8, [200, 200, 200, 1]),
              "int16": (np.int16, torch.int16, [30000, 30000, 30000, -1])}


@pytest.mark.parametrize("name", sorted(SMALL_INTS))
@pytest.mark.parametrize("device", DEVICES)
def test_small_int_and_bool_sums_are_int64(device: str, name: str) -> None:
    """A sum of bools, int8, uint8 or int16 is an int64, with torch's value (no wrap-around)."""
    np_dtype, torch_dtype, values = SMALL_INTS[name]
    ref = torch.tensor(values, dtype=torch_dtype).sum()
    got = Tensor(np.array(values, dtype=np_dtype), device=device).sum()
    assert ref.dtype == torch.int64
    assert got.dtype == dtypes.int64
    assert got.item() == ref.item()


@pytest.mark.parametrize("device", DEVICES)
def test_sum_along_an_axis_of_long_rows(device: str) -> None:
    """Each row sum and mean of a 3 x 3_000_001 uniform array, and the same reduced along the
    first axis of its transpose (a strided reduce), is within 1e-6 of float64's."""
    a = np.random.default_rng(1).random((3, 3_000_001), dtype=np.float32)
    ref_sum, ref_mean = a.astype(np.float64).sum(1), a.astype(np.float64).mean(1)
    t = Tensor(a, device=device)
    rows, means, columns = t.sum(1), t.mean(1), t.permute(1, 0).sum(0)
    Tensor.realize_all(rows, means, columns)
    assert relative_error(rows.numpy(), ref_sum) <= RTOL
    assert relative_error(means.numpy(), ref_mean) <= RTOL
    assert relative_error(columns.numpy(), ref_sum) <= RTOL
