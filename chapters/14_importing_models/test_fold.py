"""Shapes folded to constants: your folds(opdef, node, args, known), whether a node runs on the
NUMPY device at once with its values kept known, and place_folded(outs, known, device), its
outputs put on the model's device (known when small). A shape computation (Shape, Gather,
Unsqueeze, Concat) folds this way, and the Reshape it feeds reads its values without running a
kernel."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from chapters.grading import expect_close, expect_equal
from chapters.learner import reference
from tinyfw import Tensor
from tinyfw.onnx import OnnxRunner, runner
from tinyfw.onnx.registry import OPS, Known, NodeInfo, OpDef

pytestmark = pytest.mark.task("14.fold")
LIMIT = runner.FOLD_LIMIT  # 4096


def known_tensor(known: Known, *shape: int) -> Tensor:
    value = np.ones(shape, np.float32)
    return known.add(Tensor(value, device="NUMPY"), value)


def info(op: str = "Add", graphs: dict[str, Any] | None = None) -> NodeInfo:
    return NodeInfo(op, "node", ["a", "b"], ["y"], {}, 17, graphs or {})


def fn(*args: Any) -> None:
    """An operator function, never called here."""


def test_what_folds() -> None:
    """A node folds when its operator may (OpDef.fold), it has no subgraph, every input given
    is known (None, an input left out, does not count), and they hold at most FOLD_LIMIT
    elements together."""
    known = Known()
    small, other = known_tensor(known, 2, 3), known_tensor(known, 64, 64)
    unknown = Tensor(np.ones((2, 3), np.float32))
    may, may_not = OpDef(fn, None, True), OpDef(fn, None, False)
    cases = [
        ("two known inputs of 6 elements", may, info(), [small, small], True),
        ("an input left out (None) and a known one", may, info(), [None, small], True),
        ("no input at all (a Constant)", may, info("Constant"), [], True),
        ("exactly FOLD_LIMIT known elements", may, info(), [other], True),
        ("FOLD_LIMIT + 6 known elements", may, info(), [other, small], False),
        ("an input whose values are not known", may, info(), [small, unknown], False),
        ("an operator registered with fold=False", may_not, info("Unique"), [small], False),
        ("a node with a subgraph (If's branches)", may, info("If", {"then_branch": object()}),
         [small], False),
    ]
    for what, opdef, node, args, want in cases:
        got = runner.folds(opdef, node, args, known)
        assert bool(got) is want, f"folds() for {what}: returned {got!r}, expected {want}"


def test_placing_folded_outputs() -> None:
    """Each output becomes a Tensor on the model's device holding its values (the known ones,
    or computed now); it is known when it holds at most FOLD_LIMIT elements; None stays
    None."""
    known = Known()
    values = np.arange(6, dtype=np.int64).reshape(2, 3)
    first = known.add(Tensor(values, device="NUMPY"), values)
    second = Tensor(np.full(3, 7.0, np.float32), device="NUMPY") * 2  # computed, not known
    big = Tensor(np.zeros(LIMIT + 1, np.float32), device="NUMPY")
    placed = runner.place_folded([first, None, second, big], known, "CPU")
    assert isinstance(placed, list) and len(placed) == 4, \
        f"place_folded returned {placed!r:.80}, not a list of one entry per output"
    assert placed[1] is None, f"an output left out (None) must stay None, not {placed[1]!r}"
    for i, want in ((0, values), (2, np.full(3, 14.0, np.float32)),
                    (3, np.zeros(LIMIT + 1, np.float32))):
        t = placed[i]
        assert isinstance(t, Tensor) and t.device == "CPU", \
            f"output {i} must be a Tensor on the model's device CPU, not {t!r:.80}"
        expect_equal(t.numpy(), want, what=f"placed output {i}'s values")
    for i, want in ((0, values), (2, np.full(3, 14.0, np.float32))):
        got = known.get(placed[i])
        assert got is not None, f"placed output {i} ({want.size} elements) must be known"
        expect_equal(np.asarray(got), want, what=f"the known values of placed output {i}")
    assert placed[3] not in known, \
        f"placed output 3 holds {LIMIT + 1} elements, more than FOLD_LIMIT: it is not known"


def test_a_shape_computation_folds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): every node of the shape
    computation runs on NUMPY (folded); Reshape, whose x is the model's input, runs on the
    model's device (CPU), reading the shape [2, -1] as values."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
             helper.make_node("Concat", ["n1", "minus_one"], ["dims"], name="concat", axis=0),
             helper.make_node("Reshape", ["x", "dims"], ["y"], name="reshape")]
    inits = {"zero": np.array(0, np.int64), "axes": np.array([0], np.int64),
             "minus_one": np.array([-1], np.int64)}
    graph = helper.make_graph(
        nodes, "fold", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    devices: dict[str, str] = {}
    for op in ("Gather", "Unsqueeze", "Concat", "Reshape"):
        opdef = OPS[op]

        def spy(n: Any, *args: Any, _fn: Any = opdef.fn) -> Any:
            devices[n.name] = n.device
            return _fn(n, *args)
        monkeypatch.setitem(OPS, op, OpDef(spy, opdef.check, opdef.fold))
    with reference("14.walk", "14.gemm", "14.conv_pads", "14.reshape", "14.broadcast"):
        y = OnnxRunner(model, device="CPU")({"x": x})["y"]
    want = {"gather": "NUMPY", "unsqueeze": "NUMPY", "concat": "NUMPY", "reshape": "CPU"}
    assert devices == want, (f"the device each node ran on: expected {want}, actual {devices} "
                             "(a folded node runs on NUMPY)")
    expect_close(y.numpy(), x.reshape(2, 12), what="y = x reshaped to [2, -1]")
