"""ONNX's element types and tinyfw's dtypes: the table, and the lookup that refuses a type
tinyfw has none of (the runner and the operators read both)."""
from __future__ import annotations

from onnx import TensorProto

from tinyfw.dtype import DType, dtypes

# ONNX's element types that tinyfw has. float8, float4, int4/uint4 and int2/uint2 values are
# carried in a wider dtype (tinyfw/onnx/lowbit.py); the others (strings, complex numbers,
# float8e8m0) are refused when a model using them is loaded.
ONNX_DTYPES: dict[int, DType] = {
    TensorProto.FLOAT: dtypes.float32, TensorProto.DOUBLE: dtypes.float64,
    TensorProto.FLOAT16: dtypes.float16, TensorProto.BFLOAT16: dtypes.bfloat16,
    TensorProto.INT8: dtypes.int8, TensorProto.INT16: dtypes.int16,
    TensorProto.INT32: dtypes.int32, TensorProto.INT64: dtypes.int64,
    TensorProto.UINT8: dtypes.uint8, TensorProto.UINT16: dtypes.uint16,
    TensorProto.UINT32: dtypes.uint32, TensorProto.UINT64: dtypes.uint64,
    TensorProto.BOOL: dtypes.bool,
}


def dtype_of(elem_type: int, where: str) -> DType:
    """tinyfw's dtype for an ONNX element type; NotImplementedError naming `where` if none."""
    if elem_type in ONNX_DTYPES:
        return ONNX_DTYPES[elem_type]
    name = TensorProto.DataType.Name(elem_type) if elem_type in TensorProto.DataType.values() \
        else str(elem_type)
    raise NotImplementedError(f"{where}: tinyfw has no dtype {name}")
