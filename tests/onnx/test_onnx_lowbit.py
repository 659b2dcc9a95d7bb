"""ONNX's narrow types (float8 in four formats, float4, int4/uint4, int2/uint2), carried in a
wider dtype (tinyfw/onnx/lowbit.py): casts round and wrap exactly as ml_dtypes (ONNX's own
reference) does, over every kind of value; an op that would compute on a carrier is refused."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tinyfw.onnx import OnnxRunner
from tinyfw.onnx.backend import TinyfwBackend

FLOATS = [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2,
          TensorProto.FLOAT8E5M2FNUZ, TensorProto.FLOAT4E2M1]
INTS = [TensorProto.INT4, TensorProto.UINT4, TensorProto.INT2, TensorProto.UINT2]


def _values(dtype: type) -> np.ndarray:
    """Every kind of value a cast meets: each value of the narrow float type and the midpoints
    between neighbours (ties to even), just past the largest, subnormals, zeros, inf, nan, and
    random numbers over many magnitudes."""
    info = ml_dtypes.finfo(dtype)
    exact = np.unique(np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64))
    exact = exact[np.isfinite(exact)]
    mids = (exact[1:] + exact[:-1]) / 2
    rng = np.random.default_rng(0)
    rand = rng.standard_normal(2000) * 10.0 ** rng.uniform(-12, 6, 2000)
    edges = [float(info.max) * 1.01, -float(info.max) * 1.2, float(info.max) * 1e3, 1e-30,
             -0.0, 0.0, np.inf, -np.inf, np.nan]
    return np.concatenate([exact, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                           rand, edges]).astype(np.float32)


def _cast_model(to: int, saturate: int) -> onnx.ModelProto:
    node = helper.make_node("Cast", ["x"], ["y"], to=to, saturate=saturate)
    graph = helper.make_graph([node], "cast", [helper.make_tensor_value_info("x", 1, None)],
                              [helper.make_tensor_value_info("y", to, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("to", FLOATS, ids=TensorProto.DataType.Name)
def test_cast_to_a_narrow_float_rounds_as_the_reference(to: int, saturate: int) -> None:
    dtype = helper.tensor_dtype_to_np_dtype(to)
    x = _values(dtype)
    got = TinyfwBackend.prepare(_cast_model(to, saturate)).run([x])[0]
    if saturate and to != TensorProto.FLOAT4E2M1:
        expected = onnx.numpy_helper.saturate_cast(x, dtype)
    else:
        expected = x.astype(dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8),
                                  err_msg=f"{TensorProto.DataType.Name(to)} bits")


@pytest.mark.parametrize("to", INTS, ids=TensorProto.DataType.Name)
def test_cast_to_a_narrow_int_truncates_and_wraps(to: int) -> None:
    dtype = helper.tensor_dtype_to_np_dtype(to)
    x = np.array([-20.7, -9, -8.5, -3, -2, -1.5, -0.5, 0, 0.9, 1, 2, 3.99, 7, 8, 15.5, 16, 33],
                 np.float32)
    got = TinyfwBackend.prepare(_cast_model(to, 1)).run([x])[0]
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.astype(np.int32), x.astype(dtype).astype(np.int32))


def test_arithmetic_on_a_narrow_value_is_refused() -> None:
    """A carrier (float32 for float8) holds more than the narrow type: an op that computes on
    it (ONNX does not allow Add on float8) is refused, naming the node and the type."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["y"], name="add")], "add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT8E4M3FN, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    runner = OnnxRunner(model)
    x = np.array([1.0, 2.0], np.float32).astype(ml_dtypes.float8_e4m3fn)
    with pytest.raises(NotImplementedError, match=r"node 'add' \(Add\).*FLOAT8E4M3FN"):
        runner({"x": x})


def test_a_narrow_value_moves_through_reshape_and_keeps_its_type() -> None:
    nodes = [helper.make_node("Cast", ["x"], ["c"], to=TensorProto.INT4),
             helper.make_node("Reshape", ["c", "shape"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.INT4, [2, 2])],
        [helper.make_tensor("shape", TensorProto.INT64, [2], [2, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    rep = TinyfwBackend.prepare(model)
    got = rep.run([np.array([1, -9, 7, 8], np.float32)])[0]
    assert got.dtype == ml_dtypes.int4
    np.testing.assert_array_equal(got.astype(np.int8), [[1, 7], [7, -8]])
    assert rep.runner.carried_outputs == {"y": TensorProto.INT4}


def test_a_narrow_value_cast_to_float_is_an_ordinary_value() -> None:
    """Cast from float8 to float32 keeps the carrier's very values: what it gives is a float32
    value like any other (Add takes it), while the float8 input stays float8."""
    nodes = [helper.make_node("Cast", ["x"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["f", "f"], ["y"]),
             helper.make_node("Identity", ["x"], ["same"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT8E5M2, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("same", TensorProto.FLOAT8E5M2, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    rep = TinyfwBackend.prepare(model)
    x = np.array([1.5, -3.0, 0.25], np.float32).astype(ml_dtypes.float8_e5m2)
    y, same = rep.run([x])
    assert y.dtype == np.float32 and same.dtype == ml_dtypes.float8_e5m2
    np.testing.assert_array_equal(y, [3.0, -6.0, 0.5])
    np.testing.assert_array_equal(same.astype(np.float32), [1.5, -3.0, 0.25])
