"""Walking the graph: your OnnxRunner._run(graph, env, known). The nodes run in the order the
graph lists them, each once; a node's inputs are read from env by name, and each named output
is put in env for the nodes after it ("" is an optional input or output left out)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from chapters.grading import expect_close, expect_equal
from chapters.learner import reference
from tinyfw.onnx import OnnxRunner
from tinyfw.onnx.registry import Known

pytestmark = pytest.mark.task("14.walk")
RNG = np.random.default_rng(14)


def make_model(nodes: list[onnx.NodeProto], inputs: dict[str, np.ndarray],
               outputs: list[str], initializers: dict[str, np.ndarray] | None = None
               ) -> onnx.ModelProto:
    """A model of nodes, its float32 inputs, its outputs (types left to the run)."""
    graph = helper.make_graph(
        nodes, "walk",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None) for name in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def run(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The model run by tinyfw (the chapter's other tasks: tinyfw's own code)."""
    with reference("14.fold", "14.gemm", "14.conv_pads", "14.reshape", "14.broadcast"):
        return {k: v.numpy() for k, v in OnnxRunner(model)(inputs).items()}


def test_a_diamond_and_a_chain() -> None:
    """x feeds two nodes whose outputs meet again: every output is read where it is needed."""
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"),
             helper.make_node("Neg", ["x"], ["b"], name="neg"),
             helper.make_node("Add", ["a", "b"], ["c"], name="add"),
             helper.make_node("Mul", ["c", "x"], ["y"], name="mul"),
             helper.make_node("Sigmoid", ["y"], ["z"], name="sigmoid")]
    model = make_model(nodes, {"x": x}, ["y", "z"])
    want = ReferenceEvaluator(model).run(None, {"x": x})
    got = run(model, {"x": x})
    expect_close(got["y"], want[0], what="output y of Relu/Neg/Add/Mul")
    expect_close(got["z"], want[1], what="output z = Sigmoid(y)")


def test_each_node_runs_once_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """_run calls self._node(node, args, known, env) once per node, in the graph's order, with
    the node's inputs as a list of Tensors; after it env holds every named output."""
    x = RNG.standard_normal((2, 5)).astype(np.float32)
    w = RNG.standard_normal((5, 3)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Split", ["r"], ["r0", "r1"], name="split", axis=0),
             helper.make_node("Add", ["r0", "r1"], ["y"], name="add")]
    model = make_model(nodes, {"x": x}, ["y"], {"w": w})
    runner = OnnxRunner(model)
    seen: list[tuple[str, list[Any]]] = []
    original = OnnxRunner._node

    def spy(self: OnnxRunner, node: Any, args: list[Any], known: Known, env: Any) -> Any:
        seen.append((node.name, list(args)))
        return original(self, node, args, known, env)

    monkeypatch.setattr(OnnxRunner, "_node", spy)
    env: dict[str, Any] = {"": None, "w": runner.weights["w"], "x": runner._input("x", x)}
    with reference("14.fold", "14.gemm", "14.conv_pads", "14.reshape", "14.broadcast"):
        runner._run(runner.graph, env, Known())
    expect_equal([name for name, _args in seen], ["matmul", "relu", "split", "add"],
                 what="the nodes _run computed with self._node, in order")
    expect_equal([len(args) for _name, args in seen], [2, 1, 1, 2],
                 what="how many inputs each node was given")
    assert seen[0][1][0] is env["x"] and seen[0][1][1] is env["w"], \
        "MatMul's inputs must be env['x'] and env['w'] themselves, in the node's order"
    for name in ("h", "r", "r0", "r1", "y"):
        assert name in env, f"after _run, env has no value named {name!r} (a node's output)"
    h = np.maximum(x @ w, 0)
    expect_close(env["y"].numpy(), h[:1] + h[1:], what="env['y'] after _run")


def test_an_output_left_out_is_not_stored() -> None:
    """Dropout's second output (its mask) is left out (""), and so is Clip's min input: Clip
    must get None for it, so env[""] stays None whatever Dropout returned there."""
    x = (RNG.standard_normal((4, 4)) * 3).astype(np.float32)
    hi = np.array(1.0, np.float32)
    nodes = [helper.make_node("Dropout", ["x"], ["d", ""], name="dropout"),
             helper.make_node("Clip", ["d", "", "hi"], ["y"], name="clip")]
    model = make_model(nodes, {"x": x}, ["y"], {"hi": hi})
    got = run(model, {"x": x})
    expect_close(got["y"], np.minimum(x, 1.0), what="Clip(Dropout(x), min left out, max 1)")


def test_a_graph_out_of_order_is_refused() -> None:
    """A node whose input no earlier node computed raises RuntimeError naming the node and
    the input, the nodes before it having run."""
    x = RNG.standard_normal(3).astype(np.float32)
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="first"),
             helper.make_node("Neg", ["b"], ["y"], name="second"),
             helper.make_node("Abs", ["a"], ["b"], name="third")]
    model = make_model(nodes, {"x": x}, ["y"])
    try:
        run(model, {"x": x})
    except NotImplementedError:
        raise
    except RuntimeError as error:
        message = str(error)
    else:
        raise AssertionError("running a graph whose node 'second' reads 'b' before node "
                             "'third' computes it raised no RuntimeError")
    for part in ("'second'", "'b'"):
        assert part in message, (f"the RuntimeError must name the node ('second') and the "
                                 f"input ('b'); it says: {message}")
