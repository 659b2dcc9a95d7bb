"""Gemm: your rules.gemm(a, b, c, trans_a, trans_b, alpha, beta), alpha * A' @ B' + beta * C
with A' = a transposed when trans_a (B' likewise), and C broadcast to the product's shape."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from chapters.grading import expect_close
from chapters.learner import reference
from tinyfw import Tensor
from tinyfw.onnx import OnnxRunner, rules

pytestmark = pytest.mark.task("14.gemm")
RNG = np.random.default_rng(141)


def make_model(nodes: list[onnx.NodeProto], inputs: dict[str, np.ndarray],
               outputs: list[str], initializers: dict[str, np.ndarray] | None = None
               ) -> onnx.ModelProto:
    """A model of nodes, its float32 inputs, its outputs (types left to the run)."""
    graph = helper.make_graph(
        nodes, "gemm",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None) for name in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def run(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The model run by tinyfw (the chapter's other tasks: tinyfw's own code)."""
    with reference("14.walk", "14.fold", "14.conv_pads", "14.reshape", "14.broadcast"):
        return {k: v.numpy() for k, v in OnnxRunner(model)(inputs).items()}


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("trans_a, trans_b", [(False, False), (True, False), (False, True),
                                              (True, True)])
def test_transposes(trans_a: bool, trans_b: bool) -> None:
    """A is (M, K), or (K, M) with trans_a; B is (K, N), or (N, K) with trans_b; no C."""
    a = f32(*((4, 3) if trans_a else (3, 4)))
    b = f32(*((5, 4) if trans_b else (4, 5)))
    out = rules.gemm(Tensor(a), Tensor(b), None, trans_a, trans_b, 1.0, 1.0)
    want = (a.T if trans_a else a) @ (b.T if trans_b else b)
    expect_close(out, want, rtol=1e-5, atol=1e-5, dtype=np.float32,
                 what=f"rules.gemm(a {a.shape}, b {b.shape}, None, {trans_a}, {trans_b}, 1, 1)")


@pytest.mark.parametrize("c_shape", [(), (5,), (1, 5), (3, 1), (3, 5)])
def test_scales_and_a_broadcast_c(c_shape: tuple[int, ...]) -> None:
    """alpha scales the product, beta scales C, and C of any shape that broadcasts to (M, N)
    is added (a scalar, a row, a column, or the whole matrix)."""
    a, b, c = f32(3, 4), f32(4, 5), f32(*c_shape)
    out = rules.gemm(Tensor(a), Tensor(b), Tensor(c), False, False, 0.5, -2.0)
    expect_close(out, 0.5 * (a @ b) - 2.0 * c, rtol=1e-5, atol=1e-5, dtype=np.float32,
                 what=f"rules.gemm(a (3, 4), b (4, 5), c {c_shape}, alpha=0.5, beta=-2)")


def test_gemm_nodes_against_onnx() -> None:
    """Gemm nodes with their attributes (transA, transB, alpha, beta; absent ones take their
    defaults 0, 0, 1.0, 1.0) give what ONNX's reference evaluator gives."""
    x, w, bias = f32(2, 6), f32(4, 6), f32(4)
    nodes = [helper.make_node("Gemm", ["x", "w", "bias"], ["h"], transB=1),
             helper.make_node("Gemm", ["h", "v"], ["y"], transA=1, alpha=0.25),
             helper.make_node("Gemm", ["x", "u", "c"], ["z"], alpha=2.0, beta=0.5)]
    inits = {"w": w, "bias": bias, "v": f32(2, 3), "u": f32(6, 3), "c": f32(2, 1)}
    model = make_model(nodes, {"x": x}, ["h", "y", "z"], inits)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    got = run(model, {"x": x})
    for name, expected in zip(("h", "y", "z"), want):
        expect_close(got[name], expected, rtol=1e-5, atol=1e-5,
                     what=f"Gemm output {name} (tinyfw against onnx.reference)")
