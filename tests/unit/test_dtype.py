"""dtypes follow PyTorch: the promotion table, scalars, casts and the dtypes ops return.

tinyfw's default int is int32 where torch's is int64: wherever torch answers int64 only because
that is its default (a Python int), tinyfw answers int32. Sums of ints and bools are int64 in
both: a sum must not overflow where torch's does not. The indices ops return (argmax, sort,
topk, nonzero...) are int64 as torch's (int32 on WEBGPU, which has no 64-bit ints).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from tests.helpers import (TORCH_DTYPES, numpy_of, same_dtype, tinyfw_dtype_like_torch,
                           torch_of)
from tinyfw import DType, Tensor, dtypes
from tinyfw.dtype import promote_types, scalar_result_type, to_dtype

ALL = dtypes.all()
PAIRS = list(itertools.product(ALL, ALL))


def zeros(dtype, shape=(2,)) -> Tensor:
    """A tensor of zeros of dtype (a constant, whatever the shape)."""
    return Tensor.zeros(*shape, dtype=dtype) if shape else Tensor.zeros((), dtype=dtype)


def test_dtype_basics() -> None:
    """Names, sizes, kinds, numpy dtypes, lookups by name and the defaults."""
    for d in ALL:
        assert d.np == np.dtype(d.name if d.name != "bool" else np.bool_)
        assert d.itemsize == d.np.itemsize
        assert to_dtype(d.name) is d and dtypes.from_np(d.np) is d
        assert TORCH_DTYPES[d].itemsize == d.itemsize
    assert dtypes.default_float is dtypes.float32 and dtypes.default_int is dtypes.int32
    assert dtypes.float is dtypes.float32 and dtypes.double is dtypes.float64
    assert dtypes.half is dtypes.float16 and dtypes.long is dtypes.int64
    with pytest.raises(TypeError):
        to_dtype("complex64")


def torch_answer(fn, *args) -> DType | type[Exception]:
    """torch's dtype for fn(*args), as a tinyfw dtype, or the type of the error it raises (it
    promotes uint16, uint32 and uint64 to nothing but floats and themselves)."""
    try:
        return tinyfw_dtype_like_torch(fn(*args))
    except RuntimeError:
        return RuntimeError


def same_answer(expected: DType | type[Exception], fn, what: str) -> None:
    """fn() gives a result of dtype expected, or raises expected (an error type) as torch."""
    if isinstance(expected, DType):
        assert fn().dtype == expected, what
    else:
        with pytest.raises(expected, match="Promotion for uint16, uint32, uint64"):
            fn()


@pytest.mark.parametrize("a, b", PAIRS, ids=lambda d: d.name)
def test_promote_types_table(a, b) -> None:
    """promote_types and tensor-tensor ops give torch.promote_types for every pair, or its
    RuntimeError for the pairs it refuses."""
    expected = torch_answer(torch.promote_types, TORCH_DTYPES[a], TORCH_DTYPES[b])
    same_answer(expected, lambda: Tensor.ones(1, dtype=promote_types(a, b)), "promote_types")
    same_answer(expected, lambda: zeros(a) + zeros(b), "a + b")
    same_answer(expected, lambda: zeros(a) * zeros(b, (3, 1)), "a * b broadcast")
    same_answer(expected, lambda: zeros(a).maximum(zeros(b)), "maximum")


@pytest.mark.parametrize("a, b", PAIRS, ids=lambda d: d.name)
def test_zero_dim_tensor_promotion(a, b) -> None:
    """A 0-d tensor only decides the dtype when it is of a higher category (torch.result_type)."""
    ta, tb = torch.zeros(2, dtype=TORCH_DTYPES[a]), torch.zeros((), dtype=TORCH_DTYPES[b])
    expected = torch_answer(torch.result_type, ta, tb)
    same_answer(expected, lambda: zeros(a) + zeros(b, ()), "a + 0-d b")
    same_answer(expected, lambda: zeros(b, ()) + zeros(a), "0-d b + a")
    both_0d = torch_answer(torch.result_type, torch.zeros((), dtype=ta.dtype), tb)
    same_answer(both_0d, lambda: zeros(a, ()) + zeros(b, ()), "0-d a + 0-d b")


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("scalar", [True, 2, -3, 2.5], ids=repr)
def test_python_scalar_promotion(dtype, scalar) -> None:
    """Tensor op Python scalar: the scalar only counts by its category (torch.result_type)."""
    ref = torch.result_type(torch.zeros(2, dtype=TORCH_DTYPES[dtype]), scalar)
    expected = tinyfw_dtype_like_torch(ref, default_int=dtype != dtypes.int64)
    assert scalar_result_type(dtype, scalar) == expected
    assert (zeros(dtype) * scalar).dtype == expected
    assert (scalar * zeros(dtype)).dtype == expected
    if not (dtype.is_unsigned and scalar == -3):
        assert (zeros(dtype) + scalar).dtype == expected


def test_scalar_promotion_examples() -> None:
    """The cases people trip on: int tensor times a float, float16 times a float, bool plus int."""
    assert (Tensor([1, 2]) * 2.5).dtype == dtypes.float32
    assert (Tensor([1, 2], dtype=dtypes.float16) * 2.5).dtype == dtypes.float16
    assert (Tensor([1, 2], dtype=dtypes.int8) * 1000).dtype == dtypes.int8
    assert (Tensor([True]) + 1).dtype == dtypes.int32
    assert (Tensor([True]) + True).dtype == dtypes.bool
    assert (Tensor([1.0], dtype=dtypes.float64) + 1).dtype == dtypes.float64


SIGNED_VALUES = [-100, -7, -1, 0, 1, 7, 100]
FLOAT_VALUES = [-100.7, -7.5, -1.2, -0.5, 0.0, 0.5, 1.9, 7.5, 100.2]


def _cast_values(src, dst) -> np.ndarray:
    """Values of src that cast to dst the same way everywhere (no negative float to unsigned)."""
    if src.is_bool:
        return np.array([True, False, True])
    if src.is_unsigned:
        return np.array([0, 1, 7, 100, 255], src.np)
    if src.is_int:
        return np.array(SIGNED_VALUES, src.np)
    values = np.array(FLOAT_VALUES, src.np)
    return values[values >= 0] if dst.is_unsigned else values


@pytest.mark.parametrize("src, dst", PAIRS, ids=lambda d: d.name)
def test_casts(src, dst) -> None:
    """cast between every pair gives torch's values: floats truncate to ints, nonzero is True."""
    values = _cast_values(src, dst)
    out = Tensor(values).cast(dst)
    ref = torch_of(values).to(TORCH_DTYPES[dst])
    assert out.dtype == dst
    np.testing.assert_array_equal(out.numpy(), numpy_of(ref))


def test_cast_shorthands() -> None:
    """float, half, double, int, long and bool cast to what their names say."""
    x = Tensor([1.5, -2.5, 0.0])
    assert [t.dtype for t in (x.float(), x.half(), x.double(), x.int(), x.long(), x.bool())] == \
        [dtypes.float32, dtypes.float16, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.bool]
    assert x.int().tolist() == [1, -2, 0] and x.bool().tolist() == [True, True, False]
    assert x.cast("int8").dtype == dtypes.int8 and x.cast(dtypes.float32) is not None


# (id, tinyfw fn, input dtype, the dtype tinyfw gives); TORCH_RESULTS holds the torch fns
RESULTS = [
    ("int_div_int", lambda x: x / x, dtypes.int32, dtypes.float32),
    ("int64_div_int", lambda x: x / 2, dtypes.int64, dtypes.float32),
    ("half_div_int", lambda x: x / 3, dtypes.float16, dtypes.float16),
    ("bool_div", lambda x: x / x, dtypes.bool, dtypes.float32),
    ("exp_int", lambda x: x.exp(), dtypes.int32, dtypes.float32),
    ("exp_bool", lambda x: x.exp(), dtypes.bool, dtypes.float32),
    ("log_uint8", lambda x: x.log(), dtypes.uint8, dtypes.float32),
    ("sqrt_int8", lambda x: x.sqrt(), dtypes.int8, dtypes.float32),
    ("sigmoid_int", lambda x: x.sigmoid(), dtypes.int32, dtypes.float32),
    ("sin_int64", lambda x: x.sin(), dtypes.int64, dtypes.float32),
    ("reciprocal_int", lambda x: x.reciprocal(), dtypes.int16, dtypes.float32),
    ("exp_half", lambda x: x.exp(), dtypes.float16, dtypes.float16),
    ("lt_int", lambda x: x < 1, dtypes.int32, dtypes.bool),
    ("eq_float", lambda x: x == 2, dtypes.float32, dtypes.bool),
    ("ne_float64", lambda x: x != 1.5, dtypes.float64, dtypes.bool),
    ("ge_bool", lambda x: x >= True, dtypes.bool, dtypes.bool),
    ("sum_bool", lambda x: x.sum(), dtypes.bool, dtypes.int64),
    ("sum_int8", lambda x: x.sum(), dtypes.int8, dtypes.int64),
    ("sum_uint8", lambda x: x.sum(0), dtypes.uint8, dtypes.int64),
    ("sum_int32", lambda x: x.sum(), dtypes.int32, dtypes.int64),
    ("sum_int64", lambda x: x.sum(), dtypes.int64, dtypes.int64),
    ("sum_half", lambda x: x.sum(), dtypes.float16, dtypes.float16),
    ("max_bool", lambda x: x.max(), dtypes.bool, dtypes.bool),
    ("max_int8", lambda x: x.max(), dtypes.int8, dtypes.int8),
    ("any_int", lambda x: x.any(), dtypes.int32, dtypes.bool),
    ("all_float", lambda x: x.all(), dtypes.float32, dtypes.bool),
    ("argmax_float", lambda x: x.argmax(), dtypes.float32, dtypes.int64),
    ("floordiv_int", lambda x: x // 2, dtypes.int32, dtypes.int32),
    ("mod_int8", lambda x: x % 3, dtypes.int8, dtypes.int8),
    ("floordiv_float", lambda x: x // 2, dtypes.float32, dtypes.float32),
    ("neg_int8", lambda x: -x, dtypes.int8, dtypes.int8),
    ("abs_int16", lambda x: x.abs(), dtypes.int16, dtypes.int16),
    ("int_pow_2", lambda x: x ** 2, dtypes.int32, dtypes.int32),
    ("int_matmul", lambda x: x.reshape(1, -1) @ x.reshape(-1, 1), dtypes.int32, dtypes.int32),
    ("relu_int", lambda x: x.relu(), dtypes.int32, dtypes.int32),
    ("floor_int", lambda x: x.floor(), dtypes.int32, dtypes.int32),
    ("softmax_half", lambda x: x.softmax(), dtypes.float16, dtypes.float16),
    ("cat_int_float", lambda x: Tensor.cat(x, x.float()), dtypes.int32, dtypes.float32),
    ("where_int_float", lambda x: (x > 1).where(x, x.float()), dtypes.int32, dtypes.float32),
    ("where_int_scalar", lambda x: (x > 1).where(x, 0), dtypes.int8, dtypes.int8),
    ("logical_not_int", lambda x: x.logical_not(), dtypes.int32, dtypes.bool),
    ("and_int8_bool", lambda x: x & (x > 1), dtypes.int8, dtypes.int8),
]

TORCH_RESULTS = {
    "int_div_int": lambda x: x / x, "int64_div_int": lambda x: x / 2,
    "half_div_int": lambda x: x / 3, "bool_div": lambda x: x / x, "exp_int": torch.exp,
    "exp_bool": torch.exp, "log_uint8": torch.log, "sqrt_int8": torch.sqrt,
    "sigmoid_int": torch.sigmoid, "sin_int64": torch.sin, "reciprocal_int": torch.reciprocal,
    "exp_half": torch.exp, "lt_int": lambda x: x < 1, "eq_float": lambda x: x == 2,
    "ne_float64": lambda x: x != 1.5, "ge_bool": lambda x: x >= True, "sum_bool": torch.sum,
    "sum_int8": torch.sum, "sum_uint8": lambda x: x.sum(0), "sum_int32": torch.sum,
    "sum_int64": torch.sum, "sum_half": torch.sum, "max_bool": torch.amax, "max_int8": torch.amax,
    "any_int": torch.any, "all_float": torch.all, "argmax_float": torch.argmax,
    "floordiv_int": lambda x: x // 2, "mod_int8": lambda x: x % 3,
    "floordiv_float": lambda x: x // 2, "neg_int8": lambda x: -x, "abs_int16": torch.abs,
    "int_pow_2": lambda x: x ** 2, "int_matmul": lambda x: x.reshape(1, -1) @ x.reshape(-1, 1),
    "relu_int": torch.relu, "floor_int": torch.floor,
    "softmax_half": lambda x: torch.softmax(x, -1),
    "cat_int_float": lambda x: torch.cat([x, x.float()]),
    "where_int_float": lambda x: torch.where(x > 1, x, x.float()),
    "where_int_scalar": lambda x: torch.where(x > 1, x, 0),
    "logical_not_int": torch.logical_not, "and_int8_bool": lambda x: x & (x > 1),
}


@pytest.mark.parametrize("name, fn, dtype, expected", RESULTS, ids=[r[0] for r in RESULTS])
def test_result_dtypes(name: str, fn, dtype, expected) -> None:
    """Common ops return torch's dtype (torch's int64 defaults being tinyfw's int32)."""
    values = np.array([1, 2, 3]).astype(dtype.np)
    out = fn(Tensor(values))
    assert out.dtype == expected
    ref = TORCH_RESULTS[name](torch.tensor(values))
    assert same_dtype(out.dtype, ref.dtype), (out.dtype, ref.dtype)
    out.numpy()  # it computes, and the buffer's dtype agrees
    assert out.numpy().dtype == expected.np


def test_mean_of_int_is_float32() -> None:
    """mean of ints is float32 (torch refuses ints here; tinyfw follows tinygrad)."""
    assert Tensor([1, 2]).mean().dtype == dtypes.float32
    assert Tensor([True, False]).mean().item() == 0.5


def test_creation_dtypes() -> None:
    """Creation functions' dtypes: arange int or float, full by its fill, eye float32."""
    assert Tensor.arange(3).dtype == dtypes.int32 and Tensor.arange(3.0).dtype == dtypes.float32
    assert Tensor.arange(0, 1, 0.5).dtype == dtypes.float32
    assert Tensor.full((2,), 1.0).dtype == dtypes.float32 and Tensor.eye(2).dtype == dtypes.float32
    assert Tensor.rand(2).dtype == dtypes.float32 and Tensor.randint(2).dtype == dtypes.int32
    assert Tensor([1, 2]).one_hot(3).dtype == dtypes.int32


def test_int_pow_stays_int() -> None:
    """Integer powers of integer tensors are exact integers."""
    x = Tensor([2, 3])
    assert (x ** 10).dtype == dtypes.int32 and (x ** 10).tolist() == [1024, 59049]
    assert (2 ** x).dtype == dtypes.int32 and (2 ** x).tolist() == [4, 8]
    assert (x ** x).dtype == dtypes.int32 and (x ** x).tolist() == [4, 27]


def test_each_dtype_exists_once() -> None:
    """Equal dtypes are one object (so == and hash are identity's, in C): made again, loaded
    from a pickle, copied or replaced with the same fields, a dtype is the one of dtypes."""
    import copy
    import dataclasses
    import pickle
    from tinyfw.dtype import VectorDType
    assert DType("float32", 4, "f") is dtypes.float32
    assert DType(name="int8", itemsize=1, kind="i") is dtypes.int8
    assert pickle.loads(pickle.dumps(dtypes.bfloat16)) is dtypes.bfloat16
    assert copy.deepcopy(dtypes.bool) is dtypes.bool
    assert dataclasses.replace(dtypes.float16) is dtypes.float16
    vector = VectorDType.of(dtypes.float32, 4)
    assert VectorDType.of(dtypes.float32, 4) is vector and vector != dtypes.float32
    assert {dtypes.float32: 1}[DType("float32", 4, "f")] == 1
