"""Broadcasting shapes: your rules.broadcast_shape(*shapes), ONNX's multidirectional (numpy's)
broadcasting. Shapes are aligned at their last axes, 1s stand in front of the shorter ones; on
each axis the sizes other than 1 must agree (ValueError if not), and the result takes that
size, or 1. Expand broadcasts its input and the shape it is given this way."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from chapters.grading import expect_close, expect_equal
from chapters.learner import reference
from tinyfw.onnx import OnnxRunner, rules

pytestmark = pytest.mark.task("14.broadcast")

CASES = [  # shapes -> expected
    ([(2, 3, 4), (4,)], (2, 3, 4)),
    ([(2, 1, 4), (3, 1)], (2, 3, 4)),
    ([(5,), (1,)], (5,)),
    ([(), (3,)], (3,)),
    ([(1, 1), ()], (1, 1)),
    ([(1,), (2, 1), (1, 1, 3)], (1, 2, 3)),
    ([(0, 1), (1, 5)], (0, 5)),
    ([(7,)], (7,)),
]


@pytest.mark.parametrize("shapes, want", CASES)
def test_shapes(shapes: list[tuple[int, ...]], want: tuple[int, ...]) -> None:
    got = rules.broadcast_shape(*shapes)
    expect_equal(tuple(int(d) for d in got), want,
                 what=f"rules.broadcast_shape{tuple(shapes)}")
    assert isinstance(got, tuple), f"broadcast_shape must return a tuple, not {type(got)}"


@pytest.mark.parametrize("shapes", [[(2, 3), (4,)], [(2, 3), (3, 2)], [(0,), (5,)]])
def test_shapes_that_do_not_broadcast(shapes: list[tuple[int, ...]]) -> None:
    try:
        got = rules.broadcast_shape(*shapes)
    except ValueError:
        return
    raise AssertionError(f"rules.broadcast_shape{tuple(shapes)} returned {got!r}; the sizes "
                         "on an axis disagree, so it must raise ValueError")


@pytest.mark.parametrize("x_shape, shape", [((3, 1), [2, 1, 4]), ((2, 3), [3]),
                                            ((2, 3), [1, 1]), ((1, 4), [3, 1])])
def test_expand_nodes_against_onnx(x_shape: tuple[int, ...], shape: list[int]) -> None:
    """Expand(x, shape) has the shape broadcast_shape(x.shape, shape): a shape of fewer axes
    or of 1s leaves x's sizes, and x's 1s stretch to the shape's sizes."""
    x = np.arange(np.prod(x_shape), dtype=np.float32).reshape(x_shape)
    node = helper.make_node("Expand", ["x", "shape"], ["y"])
    graph = helper.make_graph(
        [node], "expand", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)],
        initializer=[numpy_helper.from_array(np.array(shape, np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    with reference("14.walk", "14.fold", "14.gemm", "14.conv_pads", "14.reshape"):
        got = OnnxRunner(model)({"x": x})["y"].numpy()
    expect_close(got, want, what=f"Expand(x {x_shape}, shape={shape})")
