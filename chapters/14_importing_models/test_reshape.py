"""Reshape's 0 and -1: your rules.reshape_dims(shape, dims, allowzero), the shape Reshape gives
a tensor of `shape` when asked for `dims`, every size written out. A 0 copies the input's size
at its position (with allowzero, a 0 is a size of 0); one -1 is the size that keeps the number
of elements; ValueError when no size does."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from chapters.grading import expect_close, expect_equal
from chapters.learner import reference
from tinyfw.onnx import OnnxRunner, rules

pytestmark = pytest.mark.task("14.reshape")

CASES = [  # shape, dims, allowzero -> expected
    ((2, 3, 4), [6, 4], False, [6, 4]),
    ((2, 3, 4), [0, -1], False, [2, 12]),
    ((2, 3, 4), [-1], False, [24]),
    ((2, 3, 4), [4, 0, 2], False, [4, 3, 2]),
    ((2, 3, 4), [-1, 0, 0], False, [2, 3, 4]),
    ((2, 3, 4), [1, -1, 1, 2], False, [1, 12, 1, 2]),
    ((0, 3), [0, 3], True, [0, 3]),
    ((0, 3), [3, 0], True, [3, 0]),
    ((1,), [], False, []),
]


@pytest.mark.parametrize("shape, dims, allowzero, want", CASES)
def test_dims(shape: tuple[int, ...], dims: list[int], allowzero: bool, want: list[int]) -> None:
    got = rules.reshape_dims(shape, dims, allowzero)
    expect_equal([int(d) for d in got], want,
                 what=f"rules.reshape_dims({shape}, {dims}, allowzero={allowzero})")


@pytest.mark.parametrize("shape, dims, allowzero", [((2, 3, 4), [5, -1], False),
                                                    ((2, 3), [-1, -1], False),
                                                    ((0, 3), [3, 0, -1], True)])
def test_no_size_fits(shape: tuple[int, ...], dims: list[int], allowzero: bool) -> None:
    """24 elements are no multiple of 5; two -1s are ambiguous; beside a size of 0 (allowzero)
    any -1 would do."""
    try:
        got = rules.reshape_dims(shape, dims, allowzero)
    except ValueError:
        return
    raise AssertionError(f"rules.reshape_dims({shape}, {dims}, allowzero={allowzero}) returned "
                         f"{got!r}; no shape fits, so it must raise ValueError")


@pytest.mark.parametrize("dims, allowzero", [([0, -1], 0), ([4, 0, 2], 0), ([-1, 4], 0),
                                             ([2, 12], 1)])
def test_reshape_nodes_against_onnx(dims: list[int], allowzero: int) -> None:
    """A Reshape node (its shape an initializer) of a (2, 3, 4) input gives what ONNX's
    reference evaluator gives."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], allowzero=allowzero)
    graph = helper.make_graph(
        [node], "reshape", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)],
        initializer=[numpy_helper.from_array(np.array(dims, np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    with reference("14.walk", "14.fold", "14.gemm", "14.conv_pads", "14.broadcast"):
        got = OnnxRunner(model)({"x": x})["y"].numpy()
    expect_close(got, want, what=f"Reshape(x (2, 3, 4), shape={dims}, allowzero={allowzero})")
