"""Conv's auto_pad: your rules.conv_pads(auto_pad, sizes, kernel, strides, dilations, pads),
each spatial axis's (before, after) padding. SAME_UPPER and SAME_LOWER pad so that the output
has ceil(size / stride) positions, the odd one out after (UPPER) or before (LOWER); VALID pads
nothing; NOTSET takes the pads attribute (all the befores, then all the afters)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from chapters.grading import expect_close, expect_equal
from chapters.learner import reference
from tinyfw.onnx import OnnxRunner, rules

pytestmark = pytest.mark.task("14.conv_pads")
RNG = np.random.default_rng(142)

CASES = [  # auto_pad, sizes, kernel, strides, dilations, pads -> expected
    ("SAME_UPPER", [5], [3], [1], [1], None, [(1, 1)]),
    ("SAME_UPPER", [6], [4], [1], [1], None, [(1, 2)]),
    ("SAME_LOWER", [6], [4], [1], [1], None, [(2, 1)]),
    ("SAME_UPPER", [6, 5], [3, 3], [2, 2], [1, 1], None, [(0, 1), (1, 1)]),
    ("SAME_LOWER", [6, 5], [3, 3], [2, 2], [1, 1], None, [(1, 0), (1, 1)]),
    ("SAME_UPPER", [7], [3], [1], [2], None, [(2, 2)]),
    ("SAME_UPPER", [5], [1], [3], [1], None, [(0, 0)]),
    ("VALID", [6, 5], [3, 3], [2, 2], [1, 1], None, [(0, 0), (0, 0)]),
    ("NOTSET", [6, 5], [3, 3], [1, 1], [1, 1], [1, 2, 3, 4], [(1, 3), (2, 4)]),
    ("NOTSET", [6, 5], [3, 3], [1, 1], [1, 1], None, [(0, 0), (0, 0)]),
]


@pytest.mark.parametrize("auto_pad, sizes, kernel, strides, dilations, pads, want", CASES)
def test_pads(auto_pad: str, sizes: list[int], kernel: list[int], strides: list[int],
              dilations: list[int], pads: list[int] | None, want: list[tuple[int, int]]) -> None:
    got = rules.conv_pads(auto_pad, sizes, kernel, strides, dilations, pads)
    expect_equal([tuple(int(p) for p in pair) for pair in got], want,
                 what=f"rules.conv_pads({auto_pad!r}, sizes={sizes}, kernel={kernel}, "
                      f"strides={strides}, dilations={dilations}, pads={pads})")


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
def test_conv_nodes_against_onnx(auto_pad: str) -> None:
    """A Conv node with auto_pad, a stride of 2 and an even kernel over a 7 x 6 image gives
    the shape and the values of ONNX's reference evaluator."""
    x, w = RNG.standard_normal((1, 2, 7, 6)).astype(np.float32), \
        RNG.standard_normal((3, 2, 4, 3)).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], auto_pad=auto_pad, strides=[2, 2])
    graph = helper.make_graph(
        [node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)],
        initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    with reference("14.walk", "14.fold", "14.gemm", "14.reshape", "14.broadcast"):
        got = OnnxRunner(model)({"x": x})["y"].numpy()
    expect_close(got, want, rtol=1e-4, atol=1e-5,
                 what=f"Conv(auto_pad={auto_pad}, strides=[2, 2]) of x (1, 2, 7, 6) and a "
                      "3 x 2 x 4 x 3 kernel")
