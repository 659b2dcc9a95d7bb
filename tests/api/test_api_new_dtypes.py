"""uint16, uint32, uint64 and bfloat16 on every device: values in and out bit for bit, bfloat16
arithmetic as torch computes it (in float32, each result rounded to bfloat16), unsigned
arithmetic that wraps, casts at the edges as torch gives them, and bitcast in the graph.

torch implements few ops for uint16, uint32 and uint64 (no add, no comparison: it raises
NotImplementedError). Where it has the op, tinyfw is checked against it; where it has not,
against numpy's unsigned arithmetic, which wraps around as C's does.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import pytest
import torch

from tests.helpers import TORCH_DTYPES, numpy_of, torch_of
from tinyfw import DType, Tensor, dtypes

NeedsDtypesFixture = Callable[..., AbstractContextManager[None]]
BF16 = dtypes.bfloat16.np
UNSIGNED = [dtypes.uint16, dtypes.uint32, dtypes.uint64]
NEW = [*UNSIGNED, dtypes.bfloat16]


def edge_values(dtype: DType) -> np.ndarray:
    """The values at a dtype's edges: 0, 1, the limits, and for bfloat16 the special floats."""
    if dtype == dtypes.bfloat16:
        values = [0.0, -0.0, 1.0, -2.5, 3.3895314e38, -3.3895314e38, np.inf, -np.inf, np.nan,
                  1.1754944e-38, 9.2e-41, -1e-40, 1.0078125, 65280.0]
        return np.array(values, np.float32).astype(BF16)
    top = int(dtypes.max(dtype))
    return np.array([0, 1, 2, 255, 256, top // 2, top // 2 + 1, top - 1, top], dtype.np)


def same_bits(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    __tracebackhide__ = True
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, \
        f"{what}: {actual.dtype}{actual.shape}, expected {expected.dtype}{expected.shape}"
    assert actual.tobytes() == expected.tobytes(), f"{what}: {actual} != {expected}"


@pytest.mark.parametrize("dtype", NEW, ids=lambda d: d.name)
def test_values_in_and_out_bit_for_bit(dtype: DType, needs_dtypes: NeedsDtypesFixture) -> None:
    """An array of edge values goes in and comes out unchanged, also through a kernel (a flip
    made contiguous); tolist and item give Python numbers."""
    values = edge_values(dtype)
    with needs_dtypes(dtype):
        t = Tensor(values)
        assert t.dtype == dtype
        same_bits(t.numpy(), values, "in and out")
        same_bits(t.flip(0).contiguous().numpy(), values[::-1].copy(), "through a kernel")
        expected = values.astype(np.float32).tolist() if dtype.is_float else values.tolist()
        np.testing.assert_array_equal(t.tolist(), expected)
        assert type(t[1].item()) is (float if dtype.is_float else int)


def test_bfloat16_bits_survive_a_kernel(needs_dtypes: NeedsDtypesFixture) -> None:
    """Every one of 4096 random 16-bit patterns, signaling NaNs among them, is copied exactly
    through a kernel and through bitcasts to int16 and back."""
    bits = np.random.default_rng(0).integers(0, 2**16, 4096).astype(np.uint16)
    bits[:4] = [0x7F81, 0xFF80 | 0x01, 0x7FC0, 0x0001]  # signaling NaNs, a quiet one, denormal
    values = bits.view(BF16)
    with needs_dtypes(dtypes.bfloat16):
        t = Tensor(values)
        same_bits(t.flip(0).contiguous().numpy(), values[::-1].copy(), "a copy")
        round_trip = t.bitcast(dtypes.int16).bitcast(dtypes.bfloat16)
        same_bits(round_trip.numpy(), values, "bfloat16 -> int16 -> bfloat16")
        same_bits(t.bitcast(dtypes.uint16).numpy(), bits, "bfloat16 -> uint16")


@pytest.mark.parametrize("dtype, value", [
    (dtypes.uint16, 65536), (dtypes.uint16, -1), (dtypes.uint16, -70000), (dtypes.uint8, -255),
    (dtypes.uint8, -256), (dtypes.uint32, -2**31 - 1), (dtypes.uint32, 2**32),
    (dtypes.uint64, 2**63), (dtypes.uint64, -1), (dtypes.uint64, 2**64), (dtypes.int8, 128),
    (dtypes.int64, 2**63)], ids=repr)
def test_creation_checks_the_range_as_torch(dtype: DType, value: int) -> None:
    """A Python int that a dtype asked for can't hold is torch's error; a negative one whose
    magnitude an unsigned dtype of 8 to 32 bits holds wraps around, as in torch."""
    try:
        expected = torch.tensor([value], dtype=TORCH_DTYPES[dtype]).tolist()
    except (RuntimeError, OverflowError, ValueError) as error:
        with pytest.raises(type(error)):
            Tensor([value], dtype=dtype)
    else:
        assert Tensor([value], dtype=dtype).tolist() == expected


def test_uint64_past_int64(needs_dtypes: NeedsDtypesFixture) -> None:
    """uint64 values and constants past 2**63 keep their value."""
    t = Tensor([2**64 - 1, 2**63], dtype=dtypes.uint64)
    assert t.tolist() == [2**64 - 1, 2**63]
    with needs_dtypes(dtypes.uint64):
        assert Tensor.full((2,), 2**63 + 5, dtype=dtypes.uint64).tolist() == [2**63 + 5] * 2


# --- bfloat16 arithmetic: torch computes in float32 and rounds each result to bfloat16
BF16_UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": lambda x: -x, "abs": lambda x: x.abs(), "exp": lambda x: x.exp(),
    "log": lambda x: x.abs().log(), "sqrt": lambda x: x.abs().sqrt(), "sin": lambda x: x.sin(),
    "tanh": lambda x: x.tanh(), "sigmoid": lambda x: x.sigmoid(), "relu": lambda x: x.relu(),
    "floor": lambda x: x.floor(), "square": lambda x: x * x, "reciprocal": lambda x: 1 / x,
    "sum": lambda x: x.sum(), "sum_axis": lambda x: x.reshape(4, 8).sum(1),
    "mean": lambda x: x.mean(), "max": lambda x: x.max(), "softmax": lambda x: x.softmax(0),
    "to_float32": lambda x: x.float(), "to_int32": lambda x: (x * 100).int(),
}
BF16_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "maximum": lambda a, b: a.maximum(b), "lt": lambda a, b: a < b,
    "eq": lambda a, b: a == b,
    "where": lambda a, b: ((a < b).where(a, b) if isinstance(a, Tensor) else
                           torch.where(a < b, a, b)),
    "plus_float32": lambda a, b: a + b.float(), "plus_int": lambda a, b: a + 3,
    "matmul": lambda a, b: a.reshape(4, 8) @ b.reshape(8, 4),
}


def _bf16_inputs(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 3, 32).astype(np.float32).astype(BF16)


def _agree_with_torch(out: Tensor, ref: torch.Tensor, what: str, steps: int = 1) -> None:
    """Same dtype and values; floats within `steps` bfloat16 rounding steps (a float32 result
    on the edge between two bfloat16s may round either way; a step is 2**-7 relative at most)."""
    __tracebackhide__ = True
    assert out.dtype.name == str(ref.dtype).removeprefix("torch."), \
        f"{what}: dtype {out.dtype.name}, torch {ref.dtype}"
    got, want = out.numpy(), numpy_of(ref)
    if ref.is_floating_point():
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=steps * 2**-7, atol=1e-30, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("name", list(BF16_UNARY))
def test_bfloat16_unary_as_torch(name: str) -> None:
    """bfloat16 in, bfloat16 out (or torch's dtype), as torch's values."""
    x = _bf16_inputs(1)
    fn = BF16_UNARY[name]
    _agree_with_torch(fn(Tensor(x)), fn(torch_of(x)), name)


@pytest.mark.parametrize("name", list(BF16_BINARY))
def test_bfloat16_binary_as_torch(name: str) -> None:
    a, b = _bf16_inputs(2), _bf16_inputs(3)
    fn = BF16_BINARY[name]
    _agree_with_torch(fn(Tensor(a), Tensor(b)), fn(torch_of(a), torch_of(b)), name)


def test_bfloat16_rounds_each_result() -> None:
    """1 + 2**-8 is halfway between two bfloat16s and rounds to even (1.0); 1 + 3 * 2**-8 rounds
    up (to 1 + 2**-6); with a float32 the result is float32 and exact; a sum of 300 ones is 300
    (accumulated in float32), where bfloat16 steps by 2 past 256."""
    one = Tensor([1.0, 1.0], dtype=dtypes.bfloat16)
    half_step = Tensor([2**-8, 3 * 2**-8], dtype=dtypes.bfloat16)
    assert (one + half_step).dtype == dtypes.bfloat16
    assert (one + half_step).tolist() == [1.0, 1.0 + 2**-6]
    assert (one + Tensor([2**-8, 3 * 2**-8])).tolist() == [1.0 + 2**-8, 1.0 + 3 * 2**-8]
    assert Tensor.ones(300, dtype=dtypes.bfloat16).sum().item() == 300.0


def test_bfloat16_gradients_as_torch() -> None:
    """Gradients flow through bfloat16 as in torch (bfloat16 gradients)."""
    x = _bf16_inputs(4)
    t = Tensor(x, requires_grad=True)
    ref = torch_of(x).requires_grad_(True)
    (t.tanh() * t).sum().backward()
    (ref.tanh() * ref).sum().backward()
    assert t.grad is not None and ref.grad is not None
    _agree_with_torch(t.grad, ref.grad, "gradient of sum(tanh(x) * x)", steps=2)


# --- unsigned arithmetic: torch's where it has the op, numpy's wrapping where it has not
def _unsigned_pair(dtype: DType) -> tuple[np.ndarray, np.ndarray]:
    a = edge_values(dtype)
    return a, np.roll(a, 3) | dtype.np.type(1)  # b is never 0


UNSIGNED_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b, "lt": lambda a, b: a < b,
    "ne": lambda a, b: a != b, "maximum": lambda a, b: np.maximum(a, b),
    "and": lambda a, b: a & b, "xor": lambda a, b: a ^ b, "neg": lambda a, b: -a,
}
TINYFW_OPS = {**UNSIGNED_OPS, "maximum": lambda a, b: a.maximum(b)}


@pytest.mark.parametrize("name", list(UNSIGNED_OPS))
@pytest.mark.parametrize("dtype", UNSIGNED, ids=lambda d: d.name)
def test_unsigned_ops_wrap_as_numpy(dtype: DType, name: str,
                                    needs_dtypes: NeedsDtypesFixture) -> None:
    """At the edges of the type: sums and products wrap around, -x is 2**n - x, // and % are
    unsigned, comparisons see values past 2**31 (or 2**63) as large."""
    a, b = _unsigned_pair(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np.asarray(UNSIGNED_OPS[name](a, b))
    with needs_dtypes(dtype):
        out = TINYFW_OPS[name](Tensor(a), Tensor(b)).numpy()
        np.testing.assert_array_equal(out, expected, err_msg=f"{name} of {dtype.name}")
        assert out.dtype == expected.dtype


@pytest.mark.parametrize("dtype", UNSIGNED, ids=lambda d: d.name)
def test_unsigned_ops_torch_has(dtype: DType, needs_dtypes: NeedsDtypesFixture) -> None:
    """Where torch computes with the barebones unsigned types: sum, prod and cumsum into int64,
    true division into float32, ==, bitwise and, sort, cat, indexing, float and int casts."""
    a = edge_values(dtype)
    ta = torch.tensor(a.astype(np.int64) if dtype != dtypes.uint64 else a.view(np.int64)) \
        .to(TORCH_DTYPES[dtype])
    order = [5, 0, 8, 1, 7, 2, 6, 3, 4]

    def shuffled(x: Any) -> Any:  # (torch has no flip or roll for these types)
        return x[Tensor(order) if isinstance(x, Tensor) else torch.tensor(order)]

    checks: dict[str, Callable[[Any], Any]] = {
        "sum": lambda x: x.sum(), "prod": lambda x: x[:3].prod(),
        "cumsum": lambda x: x.cumsum(0), "div": lambda x: x / shuffled(x),
        "eq": lambda x: x == shuffled(x), "and": lambda x: x & shuffled(x),
        "sort": lambda x: shuffled(x).sort()[0], "cat": lambda x: x.cat(x) if isinstance(
            x, Tensor) else torch.cat([x, x]), "float": lambda x: x.float(),
    }
    with needs_dtypes(dtype):
        for name, fn in checks.items():
            if name in ("sum", "prod", "cumsum"):  # int64 results
                with needs_dtypes(dtypes.int64):
                    _agree_with_torch(fn(Tensor(a)), fn(ta), f"{name} of {dtype.name}")
            else:
                _agree_with_torch(fn(Tensor(a)), fn(ta), f"{name} of {dtype.name}")


def test_promotion_refused_as_torch() -> None:
    """uint16, uint32 and uint64 combine with themselves and floats only: with another int or
    a bool, torch's RuntimeError; with a Python int they stay themselves."""
    u = Tensor([1, 2], dtype=dtypes.uint32)
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64"):
        u + Tensor([1, 2])
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64"):
        u * Tensor([True, False])
    assert (u + 1).dtype == dtypes.uint32 and (u * 2.5).dtype == dtypes.float32
    assert (u + Tensor([1.0], dtype=dtypes.bfloat16)).dtype == dtypes.bfloat16


# --- casts at the edges
# Floats whose cast to each int type C defines (or that wrap the same everywhere): torch's.
IN_RANGE = [-5.0, -1.5, -0.0, 0.7, 255.9, 65535.0, 3e9, 2.0**31, 4294967040.0]
# Floats C leaves undefined for some int type (NaN, the infinities, out of range): torch's own
# answer depends on whether the element fell in a vector lane or in the scalar tail of its
# loop (x86 converts them differently), so tinyfw fixes one rule, that of torch's vector lanes,
# and every device follows it: through the signed int of 32 (64) bits, and from 2**31 (2**63)
# on, a uint32 (uint64) takes x - 2**31 (2**63) with the top bit set.
OUT_OF_RANGE = [5e9, -5e9, 1e19, 2.0**32, 2.0**63, 2.0**64, float("nan"), float("inf"),
                float("-inf")]
TARGETS = [dtypes.uint32, dtypes.uint64, dtypes.int32, dtypes.uint16, dtypes.int8]


def _signed(value: float, bits: int) -> int:
    """x86's conversion to a signed int of 32 or 64 bits: truncated, or -2**(bits-1) when
    that does not fit (NaN and the infinities too)."""
    if math.isfinite(value) and -2.0**(bits - 1) <= math.trunc(value) < 2.0**(bits - 1):
        return math.trunc(value)
    return -2 ** (bits - 1)


def the_rule(value: float, target: DType) -> int:
    """tinyfw's cast of a float to an int type, in plain Python: the oracle for the range C
    leaves undefined."""
    bits = 8 * target.itemsize
    if target in (dtypes.uint32, dtypes.uint64):
        top = 2 ** (bits - 1)
        if math.isnan(value) or value < top:
            return _signed(value, bits) % 2**bits
        return (_signed(value - top, bits) % 2**bits) ^ top
    wrapped = _signed(value, 64 if bits == 64 else 32) % 2**bits
    return wrapped - 2**bits if not target.is_unsigned and wrapped >= 2**(bits - 1) else wrapped


def _in_range(target: DType) -> list[float]:
    lo, hi = -2.0**31 if target.is_unsigned else dtypes.min(target), dtypes.max(target)
    return [v for v in IN_RANGE if lo < v < float(hi) + 1]


@pytest.mark.parametrize("target", TARGETS, ids=lambda d: d.name)
@pytest.mark.parametrize("source", [dtypes.float32, dtypes.float64, dtypes.float16,
                                    dtypes.bfloat16], ids=lambda d: d.name)
def test_float_to_int_casts(source: DType, target: DType,
                            needs_dtypes: NeedsDtypesFixture) -> None:
    """Within the range C defines: torch's values. Outside it: the one rule above, the same on
    every device (a float16 or bfloat16 converts through float32, exactly)."""
    inside = np.array(_in_range(target), np.float64).astype(np.float32).astype(source.np)
    with np.errstate(over="ignore"):  # to float16: infinities, as meant
        outside = np.array(OUT_OF_RANGE, np.float64).astype(source.np)
    expected = [the_rule(float(v), target) for v in outside.astype(np.float64)]
    with needs_dtypes(source, target):
        got = Tensor(inside).cast(target).numpy()
        ref = torch_of(inside).to(TORCH_DTYPES[target]).numpy()
        np.testing.assert_array_equal(got, ref, err_msg=f"{source.name} -> {target.name}")
        got = Tensor(outside).cast(target).numpy()
        np.testing.assert_array_equal(got, np.array(expected, target.np),
                                      err_msg=f"{source.name} -> {target.name}, out of range")


# --- bitcast
BITCAST_PAIRS = [(dtypes.float32, dtypes.int32), (dtypes.int32, dtypes.uint32),
                 (dtypes.uint32, dtypes.float32), (dtypes.int16, dtypes.uint16),
                 (dtypes.uint16, dtypes.bfloat16), (dtypes.bfloat16, dtypes.int16),
                 (dtypes.int8, dtypes.uint8), (dtypes.float16, dtypes.int16),
                 (dtypes.uint16, dtypes.float16), (dtypes.float64, dtypes.uint64),
                 (dtypes.int64, dtypes.float64)]


def _bits_of(dtype: DType) -> np.ndarray:
    """Patterns of dtype's width whose only NaN of any float of that width is the quiet one
    numpy and torch make (CL and CUDA compute float16 as float: a float16 NaN with another
    payload comes back as that one)."""
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    bits = np.array([0, 1, 2**(8 * dtype.itemsize - 1), 0x3C, 0x7F, 0xFF, 0x3C00, 0x7E00,
                     0xFC00, 0x3F800000, 0x7FC00000, 0xFF800000, 0x3FF0000000000000],
                    np.uint64)
    return bits[bits < 2 ** (8 * dtype.itemsize)].astype(width).view(dtype.np)


@pytest.mark.parametrize("pair", BITCAST_PAIRS, ids=lambda p: f"{p[0].name}-{p[1].name}")
def test_bitcast_in_the_graph(pair: tuple[DType, DType],
                              needs_dtypes: NeedsDtypesFixture) -> None:
    """bitcast reads the same bits as another dtype, also of a computed (lazy) tensor, as
    numpy's view; no gradient flows through it."""
    source, target = pair
    values = _bits_of(source)
    with needs_dtypes(source, target):
        t = Tensor(values)
        same_float16_bits(t.bitcast(target).numpy(), values.view(target.np), "of a buffer")
        flipped = t.flip(0).bitcast(target)
        same_float16_bits(flipped.numpy(), values[::-1].copy().view(target.np), "of a view")


def same_float16_bits(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    """same_bits, except that a float16 NaN may come back with another payload (PoCL writes
    every float16 NaN as 0x7fff): there, NaN is enough."""
    __tracebackhide__ = True
    if actual.dtype == np.float16 and actual.shape == expected.shape:
        nan = np.isnan(expected)
        assert np.array_equal(np.isnan(actual), nan), f"{what}: NaN where {actual} != {expected}"
        actual, expected = actual[~nan], expected[~nan]
    same_bits(actual, expected, what)


SIZE_CHANGES = [(np.float32, dtypes.uint8), (np.float32, dtypes.int16),
                (np.uint8, dtypes.float32), (np.int16, dtypes.bfloat16),
                (np.float32, dtypes.float64), (np.uint16, dtypes.uint64),
                (np.float64, dtypes.uint16)]


@pytest.mark.parametrize("pair", SIZE_CHANGES, ids=lambda p: f"{np.dtype(p[0])}-{p[1].name}")
def test_bitcast_to_another_itemsize(pair: tuple[type, DType],
                                     needs_dtypes: NeedsDtypesFixture) -> None:
    """To a dtype of another itemsize the last axis grows or shrinks, the bytes of an element
    in little-endian order, as torch's view(dtype)."""
    source, target = pair
    values = np.arange(1, 17, dtype=np.uint8).view(source).reshape(2, -1)
    words = [dtypes.uint64] if 8 in (np.dtype(source).itemsize, target.itemsize) else []
    with needs_dtypes(dtypes.from_np(np.dtype(source)), target, *words):
        out = Tensor(values).bitcast(target).numpy()
        same_bits(out, values.view(target.np), f"{np.dtype(source)} -> {target.name}")


def test_bitcast_errors_and_gradient() -> None:
    """Torch's RuntimeErrors (a last axis the ratio does not divide, a 0-d tensor); the result
    of a float that requires grad does not require it; to and from bool it is the cast."""
    with pytest.raises(RuntimeError):
        torch.zeros(3, dtype=torch.uint8).view(torch.float64)
    with pytest.raises(RuntimeError):
        Tensor.zeros(3, dtype=dtypes.uint8).bitcast(dtypes.float64)
    with pytest.raises(RuntimeError):
        torch.zeros(()).view(torch.float64)
    with pytest.raises(RuntimeError):
        Tensor.zeros(()).bitcast(dtypes.float64)
    x = Tensor([1.0, 2.0], requires_grad=True)
    assert not x.bitcast(dtypes.int32).requires_grad
    assert Tensor([True, False]).bitcast(dtypes.uint8).tolist() == [1, 0]
    assert Tensor([2, 0], dtype=dtypes.uint8).bitcast(dtypes.bool).tolist() == [True, False]


@pytest.mark.parametrize("value", [2**63, 2**64 - 1, 2**64, -2**63 - 1], ids=repr)
@pytest.mark.parametrize("dtype", [dtypes.bool, dtypes.int8, dtypes.int64, dtypes.uint8,
                                   dtypes.float16, dtypes.float32], ids=repr)
def test_a_python_int_past_int64_as_torch(dtype: DType, value: int,
                                          needs_dtypes: NeedsDtypesFixture) -> None:
    """An int operand past int64: one of uint64's range is a float to a float tensor and its
    bits, wrapped, to an int tensor (torch's values); a bool tensor is torch's RuntimeError,
    and an int past uint64, or below int64, torch's OverflowError."""
    tx = torch.tensor([1, 3], dtype=TORCH_DTYPES[dtype])
    for name, op in (("add", lambda a: a + value), ("rsub", lambda a: value - a),
                     ("mul", lambda a: a * value), ("lt", lambda a: a < value),
                     ("truediv", lambda a: a / value), ("rtruediv", lambda a: value / a),
                     ("floordiv", lambda a: a // value), ("mod", lambda a: a % value),
                     ("pow", lambda a: a ** value), ("rpow", lambda a: value ** a),
                     ("lshift", lambda a: a << value), ("rshift", lambda a: a >> value)):
        try:
            expected = op(tx)
        except (RuntimeError, OverflowError, NotImplementedError) as error:
            with pytest.raises(type(error)):
                op(Tensor([1, 3], dtype=dtype))
            continue
        with needs_dtypes(dtype):
            got = op(Tensor([1, 3], dtype=dtype))
            assert got.dtype.name == str(expected.dtype).removeprefix("torch."), name
            np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6, err_msg=name)
