"""tinyfw.onnx's OnnxRunner on small graphs made here: the ways a model is given, refusals at
load time naming the node, dynamic shapes, external data, TinyJit, and the command line."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tinyfw import Tensor, TinyJit  # noqa: E402
from tinyfw.onnx import OnnxRunner  # noqa: E402
from tinyfw.onnx.__main__ import main  # noqa: E402


def linear_model(opset: int = 17) -> onnx.ModelProto:
    """y = relu(x @ w + b), x of shape (batch, 3), batch given at call time."""
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(3, 2) - 2, "w")
    b = numpy_helper.from_array(np.array([0.5, -1.0], np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"],
                                                                         ["z"]),
         helper.make_node("Relu", ["z"], ["y"], name="relu")],
        "linear", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def expected(x: np.ndarray) -> np.ndarray:
    w = np.arange(6, dtype=np.float32).reshape(3, 2) - 2
    return np.maximum(x @ w + np.array([0.5, -1.0], np.float32), 0)


def test_a_model_as_proto_bytes_or_path(tmp_path: Path) -> None:
    model = linear_model()
    path = tmp_path / "linear.onnx"
    onnx.save(model, str(path))
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    for given in (model, model.SerializeToString(), path, str(path)):
        out = OnnxRunner(given)({"x": x})
        np.testing.assert_allclose(out["y"].numpy(), expected(x), rtol=1e-6)


def test_dynamic_batch_and_a_tensor_input() -> None:
    runner = OnnxRunner(linear_model())
    for batch in (1, 5):
        x = np.ones((batch, 3), np.float32)
        np.testing.assert_allclose(runner({"x": Tensor(x)})["y"].numpy(), expected(x))


def test_wrong_dtype_or_shape_is_refused() -> None:
    runner = OnnxRunner(linear_model())
    with pytest.raises(TypeError, match="'x' must be float32"):
        runner({"x": np.ones((2, 3), np.int32)})
    with pytest.raises(ValueError, match="'x' must have shape"):
        runner({"x": np.ones((2, 4), np.float32)})


def test_an_operator_tinyfw_lacks_is_refused_at_load_naming_the_node() -> None:
    model = linear_model()
    model.graph.node[2].op_type = "NoSuchOp"
    with pytest.raises(NotImplementedError, match="node 'relu' \\(NoSuchOp\\): tinyfw has no "
                                                  "operator NoSuchOp"):
        OnnxRunner(model)


def test_a_dtype_tinyfw_lacks_is_refused_at_load() -> None:
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], name="to_e8m0", to=TensorProto.FLOAT8E8M0)],
        "cast", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT8E8M0, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])
    with pytest.raises(NotImplementedError, match="FLOAT8E8M0"):
        OnnxRunner(model)


def test_external_data_files(tmp_path: Path) -> None:
    model = linear_model()
    onnx.save(model, str(tmp_path / "big.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    assert (tmp_path / "weights.bin").exists()
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(OnnxRunner(tmp_path / "big.onnx")({"x": x})["y"].numpy(),
                               expected(x))


def test_inside_tinyjit() -> None:
    runner = OnnxRunner(linear_model())
    step = TinyJit(lambda x: runner({"x": x})["y"].realize())
    rng = np.random.default_rng(1)
    for _ in range(4):
        x = rng.standard_normal((3, 3)).astype(np.float32)
        np.testing.assert_allclose(step(Tensor(x)).numpy(), expected(x), rtol=1e-6)


def test_shape_arithmetic_folds_to_constants() -> None:
    """Reshape to (batch * 3,) through Shape, Gather, Mul and Concat, as exporters write it."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Mul", ["n", "three"], ["n3"]),
             helper.make_node("Unsqueeze", ["n3", "axes"], ["dims"]),
             helper.make_node("Reshape", ["x", "dims"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array(3, np.int64), "three"),
             numpy_helper.from_array(np.array([0], np.int64), "axes")]
    graph = helper.make_graph(nodes, "fold", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["batch", 3])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [None])], inits)
    runner = OnnxRunner(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(runner({"x": x})["y"].numpy(), x.reshape(-1))


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "linear.onnx"
    onnx.save(linear_model(), str(path))
    np.save(tmp_path / "x.npy", np.ones((2, 3), np.float32))
    assert main([str(path), "--input", f"x={tmp_path / 'x.npy'}", "--runs", "1"]) == 0
    printed = capsys.readouterr().out
    assert "input  x: float32 ['batch', 3]" in printed
    assert "output y: float32 [2, 2]" in printed and "ms" in printed
