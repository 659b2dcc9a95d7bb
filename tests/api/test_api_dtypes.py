"""The dtype queries, comparisons and bitwise names of issue 11 give torch's values, dtypes and
exception types."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from tests.helpers import check
from tinyfw import Tensor, dtypes

INT_DTYPES = [(np.int8, torch.int8), (np.int16, torch.int16), (np.int32, torch.int32),
              (np.uint8, torch.uint8)]


def _pair(dt: type, torch_dt: torch.dtype) -> tuple[Tensor, torch.Tensor]:
    """The same small ints (some negative where the dtype allows) in tinyfw and torch."""
    lo = 0 if np.dtype(dt).kind == "u" else -9
    data = np.arange(lo, lo + 12).astype(dt).reshape(3, 4)
    return Tensor(data), torch.tensor(data, dtype=torch_dt)


@pytest.mark.parametrize("name", ["eq", "ne"])
def test_eq_ne(name: str) -> None:
    """eq and ne against a tensor and a scalar, with broadcasting, as torch's."""
    check([(3, 4), (4,)], lambda a, b: getattr(a, name)(b.round()).float() + 0,
          lambda a, b: getattr(a, name)(b.round()).float() + 0, grad=False)
    a = Tensor([1.0, 2.0, 3.0])
    assert a.eq(2).dtype == dtypes.bool and a.eq(2).tolist() == [False, True, False]
    assert a.ne(2).tolist() == [True, False, True]


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
@pytest.mark.parametrize("dts", INT_DTYPES, ids=lambda d: d[1].__repr__())
def test_bitwise(name: str, dts: tuple[type, torch.dtype]) -> None:
    """The bitwise methods on ints, with a tensor, a scalar and reversed, as torch's."""
    f, t = _pair(*dts)
    for other_f, other_t in ((f.flip(1), t.flip(1)), (5, 5)):
        out = getattr(f, name)(other_f)
        ref = getattr(t, name)(other_t)
        assert out.dtype.name == str(ref.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(out.numpy(), ref.numpy())
    np.testing.assert_array_equal(getattr(f, name)(6, reverse=True).numpy(),
                                  getattr(t, name)(6).numpy())


def test_bitwise_bool_and_float() -> None:
    """Bools combine as logic; floats raise torch's NotImplementedError-like error."""
    a, b = Tensor([True, False, True]), Tensor([True, True, False])
    assert a.bitwise_xor(b).tolist() == [False, True, True]
    with pytest.raises(NotImplementedError):
        torch.tensor([1.0]).bitwise_and(torch.tensor([1.0]))  # type: ignore[call-overload]
    with pytest.raises(NotImplementedError):
        Tensor([1.0]).bitwise_and(Tensor([1.0]))


@pytest.mark.parametrize("dts", INT_DTYPES, ids=lambda d: d[1].__repr__())
def test_reverse_shifts(dts: tuple[type, torch.dtype]) -> None:
    """2 << t and -100 >> t (a Python int shifted by each element) as torch, counts from 0 to
    past the dtype's bits."""
    bits = np.dtype(dts[0]).itemsize * 8
    counts = np.arange(0, bits + 3).astype(dts[0])
    f, t = Tensor(counts), torch.tensor(counts, dtype=dts[1])
    for x in (1, 3, -1, -100) if np.dtype(dts[0]).kind == "i" else (1, 3, 200):
        for left in (True, False):
            out = (x << f) if left else (x >> f)
            ref = (x << t) if left else (x >> t)
            assert out.dtype.name == str(ref.dtype).removeprefix("torch.")
            valid = slice(None) if not left else slice(0, bits)  # torch: past bits is UB in C
            np.testing.assert_array_equal(out.numpy()[valid], ref.numpy()[valid],
                                          err_msg=f"{x} {'<<' if left else '>>'} counts")


def test_reverse_shift_of_float_raises() -> None:
    with pytest.raises(NotImplementedError):
        _ = 2 << Tensor([1.0])


def test_allclose() -> None:
    """allclose is a Python bool, as torch's, with rtol, atol and equal_nan."""
    a, b = [1.0, 2.0, float("nan")], [1.0, 2.00001, float("nan")]
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.0, "atol": 0.0, "equal_nan": True}):
        got = Tensor(a).allclose(Tensor(b), **kw)  # type: ignore[arg-type]
        assert got is torch.tensor(a).allclose(torch.tensor(b), **kw)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        torch.tensor([1.0]).allclose(torch.tensor([1]))
    with pytest.raises(RuntimeError):
        Tensor([1.0]).allclose(Tensor([1]))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_var_mean(axis: int | tuple[int, ...] | None) -> None:
    """var_mean gives (var, mean) as torch.var_mean, with gradients."""
    check([(3, 5)], lambda x: torch.var_mean(x, dim=axis, keepdim=True),
          lambda x: x.var_mean(axis, keepdim=True))
    check([(4, 3)], lambda x: torch.var_mean(x, dim=axis, correction=0),
          lambda x: x.var_mean(axis, correction=0))


@pytest.mark.parametrize("dt", [dtypes.bool, dtypes.uint8, dtypes.int16, dtypes.int32,
                                dtypes.float16, dtypes.float32])
def test_dtype_facts(dt: object) -> None:
    """element_size, nbytes and is_floating_point as torch's, for the same dtype and shape."""
    f = Tensor.zeros(2, 3, dtype=dt)  # type: ignore[arg-type]
    t = torch.zeros(2, 3, dtype=getattr(torch, f.dtype.name))
    assert f.element_size() == t.element_size()
    assert f.nbytes() == t.nbytes
    assert f.is_floating_point() == t.is_floating_point()


def test_short() -> None:
    """short() casts to int16, truncating floats toward zero as torch."""
    x = [1.7, -2.9, 300.0]
    out = Tensor(x).short()
    assert out.dtype == dtypes.int16
    assert out.tolist() == torch.tensor(x).short().tolist()


def test_ufix_usum_uprod() -> None:
    """tinygrad's helpers: ufix makes a scalar a tensor of self's dtype (a float one for a
    float scalar and an int tensor); usum and uprod fold + and * (| and & for bools)."""
    a = Tensor([1, 2, 3])
    assert a.ufix(2).dtype == a.dtype and a.ufix(2).item() == 2
    assert a.ufix(2.5).dtype == dtypes.default_float
    assert a.ufix(a) is a
    assert a.usum(a, 1).tolist() == [3, 5, 7]
    assert a.uprod(a, 2).tolist() == [2, 8, 18]
    t, f = Tensor([True, False]), Tensor([False, False])
    assert t.usum(f).tolist() == [True, False] and t.uprod(f).tolist() == [False, False]


BITCAST_PAIRS = [("float32", "int32"), ("int32", "float32"), ("float16", "int16"),
                 ("int16", "float16"), ("uint8", "int8"), ("int8", "uint8"), ("bool", "uint8"),
                 ("float64", "int64"), ("int64", "float64")]


def same_bytes(actual: np.ndarray, expected: np.ndarray, float16: bool) -> None:
    """The same bytes; where float16 is on either side of the bitcast, a float16 NaN only has
    to stay a NaN (CL and CUDA compute float16 as float, and their conversions do not keep a
    NaN's payload: Tensor.bitcast)."""
    if float16:
        nan = np.isnan(expected.view(np.float16))
        np.testing.assert_array_equal(np.isnan(actual.view(np.float16)), nan)
        actual, expected = actual[~nan], expected[~nan]
    np.testing.assert_array_equal(actual.view(np.uint8), expected.view(np.uint8))


@pytest.mark.parametrize("src,dst", BITCAST_PAIRS)
def test_bitcast(src: str, dst: str, needs_dtypes: Any) -> None:
    """bitcast gives numpy's view of the same bits, and a round trip gives the input back."""
    data = np.array([[0, 1, -1, 3], [100, -7, 42, 5]])
    arr = data.astype(src) if src != "bool" else data > 0
    if src.startswith("float"):
        arr = arr * np.array(0.37, src) + np.array([np.inf, -0.0, np.nan, 1e-3], src)
    float16 = "float16" in (src, dst)
    with needs_dtypes(getattr(dtypes, src), getattr(dtypes, dst)):
        x = Tensor(arr)
        out = x.bitcast(dst)
        assert out.dtype == getattr(dtypes, dst) and out.shape == x.shape
        same_bytes(out.numpy(), arr.view(dst if dst != "bool" else np.bool_), float16)
        back = out.bitcast(src).numpy()
        same_bytes(back, arr, float16)
        plain = np.nan_to_num(arr)  # (a kernel may rewrite a nan's payload bits: no nan here)
        flipped = Tensor(plain).flip(0).bitcast(dst).numpy()  # of a lazy tensor too
        same_bytes(flipped, plain[::-1].copy().view(flipped.dtype), float16)


def test_bitcast_known_bits_and_errors() -> None:
    """1.0f is 0x3f800000 as torch's view(int32); another itemsize of a 0-d tensor raises
    torch's error (of more dimensions: tests/api/test_api_new_dtypes.py)."""
    assert Tensor([1.0, -2.0]).bitcast(dtypes.int32).tolist() == \
        torch.tensor([1.0, -2.0]).view(torch.int32).tolist()
    assert Tensor([1.0]).bitcast("float32").dtype == dtypes.float32
    with pytest.raises(RuntimeError):
        torch.tensor(1.0).view(torch.int16)
    with pytest.raises(RuntimeError):
        Tensor(1.0).bitcast(dtypes.int16)
