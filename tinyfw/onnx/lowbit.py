"""ONNX's narrow element types: float8 (four formats), float4 (e2m1), int4/uint4 and int2/uint2.
tinyfw has no dtype for them, so a value of one is *carried* in a wider dtype that holds each of
its values exactly (float32 for the floats, int8 or uint8 for the ints), and every op that makes
one rounds (floats, to nearest even) or wraps (ints) to the narrow type's values, as ONNX's
Cast, CastLike and QuantizeLinear define. ONNX itself allows these types in few operators: the
runner lets a carried value into casts, (de)quantization and ops that move values without
computing new ones (carried_results), and refuses any other op on one (NotImplementedError),
so no arithmetic can see a carrier's extra range."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto, helper

from tinyfw.dtype import DType, dtypes
from tinyfw.tensor import Tensor


@dataclass(frozen=True)
class FloatFormat:
    """A narrow float: its mantissa bits, exponent bias, largest finite value, whether it has
    an inf (else an overflow without saturation is a NaN), a NaN, and a -0.0 (fnuz: no)."""
    mantissa: int
    bias: int
    largest: float
    has_inf: bool
    has_nan: bool
    negative_zero: bool


FLOATS: dict[int, FloatFormat] = {
    TensorProto.FLOAT8E4M3FN: FloatFormat(3, 7, 448.0, False, True, True),
    TensorProto.FLOAT8E4M3FNUZ: FloatFormat(3, 8, 240.0, False, True, False),
    TensorProto.FLOAT8E5M2: FloatFormat(2, 15, 57344.0, True, True, True),
    TensorProto.FLOAT8E5M2FNUZ: FloatFormat(2, 16, 57344.0, False, True, False),
    TensorProto.FLOAT4E2M1: FloatFormat(1, 1, 6.0, False, False, True),
}
# a narrow int: its carrier, least and largest value
INTS: dict[int, tuple[DType, int, int]] = {
    TensorProto.INT4: (dtypes.int8, -8, 7), TensorProto.UINT4: (dtypes.uint8, 0, 15),
    TensorProto.INT2: (dtypes.int8, -2, 1), TensorProto.UINT2: (dtypes.uint8, 0, 3),
}
CARRIED: dict[int, DType] = {**{t: dtypes.float32 for t in FLOATS},
                             **{t: carrier for t, (carrier, _, _) in INTS.items()}}
# ops that pass values on as they are (a carried value stays carried, of the same type)
MOVES = frozenset({"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",
                   "Expand", "Concat", "Gather", "Slice", "Split", "Tile"})


def name(elem_type: int) -> str:
    return str(TensorProto.DataType.Name(elem_type))


def to_float(x: Tensor, elem_type: int, saturate: bool = True) -> Tensor:
    """x (any dtype) rounded to the narrow float elem_type, to nearest even, as float32: a
    value past the largest finite one (inf included) becomes the largest with saturate (always
    for float4, which has no inf nor NaN), else inf or NaN as the format has; NaN stays NaN
    (float4: -0.0, as ONNX's reference gives); fnuz formats have no -0.0."""
    fmt = FLOATS[elem_type]
    wide = dtypes.float64 if x.dtype == dtypes.float64 else dtypes.float32
    bits, fraction, bias = (dtypes.int64, 52, 1023) if wide == dtypes.float64 else \
        (dtypes.int32, 23, 127)
    x = x.cast(wide)
    a = x.abs()
    exponent = (a.bitcast(bits) >> fraction) - bias  # floor(log2 a) for a normal a
    exponent = exponent.maximum(1 - fmt.bias)  # the narrow type's subnormals: its least one
    step = ((exponent - fmt.mantissa + bias) << fraction).bitcast(wide)  # 2**(e - mantissa)
    r = (a / step).round() * step
    past = r > fmt.largest  # (an inf's too)
    if saturate or not (fmt.has_inf or fmt.has_nan):
        r = past.where(fmt.largest, r)
    else:
        r = past.where(math.inf if fmt.has_inf else math.nan, r)
    negative = x.bitcast(bits) < 0  # the sign bit: -0.0 and a negative NaN too
    if not fmt.has_nan:
        r, negative = a.isnan().where(0.0, r), negative | a.isnan()
    if not fmt.negative_zero:
        negative = negative & (r != 0)
    return negative.where(-r, r).cast(dtypes.float32)


def to_int(x: Tensor, elem_type: int) -> Tensor:
    """x as the narrow int elem_type, in its carrier: a float truncated toward zero, then (as
    any int) wrapped around the type's range, as ONNX's Cast (C's conversion) gives."""
    carrier, low, high = INTS[elem_type]
    size = high - low + 1
    if x.dtype.is_float:
        v = x.cast(dtypes.float64 if x.dtype == dtypes.float64 else dtypes.float32).trunc()
        v = v.isnan().where(0.0, v)
        wrapped = v - ((v - low) / size).floor() * size
        return wrapped.cast(carrier)
    wide = dtypes.int64 if x.dtype in (dtypes.int64, dtypes.uint64, dtypes.uint32) else \
        dtypes.int32
    return ((x.cast(wide) - low) % size + low).cast(carrier)


def cast_to(x: Tensor, elem_type: int, saturate: bool = True) -> Tensor:
    """x as the narrow elem_type, in its carrier."""
    if elem_type in FLOATS:
        return to_float(x, elem_type, saturate)
    return to_int(x, elem_type)


def limits(elem_type: int) -> tuple[int, int]:
    """A narrow int's least and largest value."""
    _, low, high = INTS[elem_type]
    return low, high


def carried_array(arr: np.ndarray, elem_type: int) -> np.ndarray:
    """An array of a narrow type (as onnx's numpy_helper gives it: ml_dtypes) in its carrier."""
    return np.asarray(arr).astype(CARRIED[elem_type].np)


def narrow_array(arr: np.ndarray, elem_type: int) -> np.ndarray:
    """A carrier's values as an array of the narrow type (ml_dtypes, as onnx's tests hold it):
    exact, since each value is one of the type's."""
    return np.asarray(arr).astype(helper.tensor_dtype_to_np_dtype(elem_type))


def carried_results(op: str, attrs: dict[str, object], types: list[int | None],
                    n_outputs: int) -> list[int | None]:
    """The narrow types of a node's outputs (None: an ordinary dtype), given its inputs' (None
    for an ordinary one); NotImplementedError for an op tinyfw does not run on a narrow value."""
    if op == "Cast":
        to = attrs.get("to")
        return [to if isinstance(to, int) and to in CARRIED else None]
    if op == "CastLike":
        return [types[1] if len(types) > 1 else None]
    if op == "QuantizeLinear":
        to = attrs.get("output_dtype") or (types[2] if len(types) > 2 else None)
        return [to if isinstance(to, int) and to in CARRIED else None]
    given = [t for t in types if t is not None]
    if not given or op in ("DequantizeLinear", "Shape", "Size"):
        return [None] * n_outputs
    if op in MOVES and types[0] is not None and len(set(given)) == 1:
        return [types[0]] * n_outputs
    raise NotImplementedError(
        f"an input of type {name(given[0])}, which tinyfw carries in "
        f"{CARRIED[given[0]].name}: it runs only Cast, CastLike, QuantizeLinear, "
        f"DequantizeLinear and ops that move values ({', '.join(sorted(MOVES))}) on one")
