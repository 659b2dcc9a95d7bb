"""The gradient table: each primitive op's local rule, applied to one node, against torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from chapters.grading import expect_close
from tinyfw import Tensor, dtypes
from tinyfw.uop import gradient
from tinyfw.uop.ops import Ops, UOp

pytestmark = pytest.mark.task("02.gradient_rules")

RNG = np.random.default_rng(2)


def leaf(array: np.ndarray) -> UOp:
    """A graph node holding array (a buffer, viewed in the array's shape)."""
    return Tensor(array).uop


def value(node: UOp) -> np.ndarray:
    """The value of a graph node, computed."""
    return Tensor(node).numpy()


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def positive(*shape: int) -> np.ndarray:
    return RNG.uniform(0.5, 2.0, shape)


class Case:
    """One op applied to sources, the same op in torch, and the sources' values."""

    def __init__(self, op: Ops, build: Callable[..., UOp], reference: Callable[..., Any],
                 *inputs: np.ndarray):
        self.op, self.build, self.reference, self.inputs = op, build, reference, inputs


def check(case: Case) -> None:
    """The op's rule, given a random upstream gradient, gives torch's gradient for each source."""
    sources = [leaf(x) for x in case.inputs]
    node = case.build(*sources)
    assert node.op is case.op, f"test setup: built {node.op}, not {case.op}"
    upstream = randn(*node.shape)
    rule = gradient.gradient_rules()[case.op]
    grads = rule(leaf(upstream), node)
    assert len(grads) == len(node.src), \
        f"the {case.op.name} rule returned {len(grads)} gradients for {len(node.src)} sources"
    ts = [torch.tensor(x, requires_grad=x.dtype.kind == "f") for x in case.inputs]
    out = case.reference(*ts)
    wanted = [t for t in ts if t.requires_grad]
    expected = iter(torch.autograd.grad(out, wanted, torch.tensor(upstream)))
    for i, (t, g) in enumerate(zip(ts, grads)):
        what = f"{case.op.name} rule, gradient of source {i}"
        if not t.requires_grad:
            assert g is None, f"{what}: a {node.src[i].dtype.name} source gets no gradient (None)"
            continue
        assert isinstance(g, UOp), f"{what}: expected a UOp, got {g!r}"
        expect_close(value(g), next(expected).numpy(), rtol=1e-7, atol=1e-9, what=what,
                     dtype=case.inputs[i].dtype)


CASES: dict[str, list[Case]] = {
    "add_mul": [
        Case(Ops.ADD, lambda a, b: a + b, lambda a, b: a + b, randn(2, 3), randn(2, 3)),
        Case(Ops.MUL, lambda a, b: a * b, lambda a, b: a * b, randn(2, 3), randn(2, 3)),
    ],
    "fdiv": [
        Case(Ops.FDIV, lambda a, b: a / b, lambda a, b: a / b, randn(2, 3), positive(2, 3)),
    ],
    "neg_reciprocal_sqrt": [
        Case(Ops.NEG, lambda a: -a, lambda a: -a, randn(4)),
        Case(Ops.RECIPROCAL, UOp.reciprocal, torch.reciprocal, positive(2, 3)),
        Case(Ops.SQRT, UOp.sqrt, torch.sqrt, positive(5)),
    ],
    "exp2_log2_sin": [
        Case(Ops.EXP2, UOp.exp2, torch.exp2, randn(2, 3)),
        Case(Ops.LOG2, UOp.log2, torch.log2, positive(2, 3)),
        Case(Ops.SIN, UOp.sin, torch.sin, randn(3, 2) * 3),
    ],
    "max_splits_ties": [
        Case(Ops.MAX, UOp.maximum, torch.maximum,
             np.array([1.0, 5.0, 3.0, -2.0, 0.0]), np.array([2.0, 1.0, 3.0, -2.0, -1.0])),
    ],
    "cast": [
        Case(Ops.CAST, lambda a: a.cast(dtypes.float64), lambda a: a.double(),
             randn(2, 3).astype(np.float32)),
    ],
    "where_routes": [
        Case(Ops.WHERE, lambda c, a, b: c.where(a, b), torch.where,
             np.array([[True, False, True], [False, False, True]]), randn(2, 3), randn(2, 3)),
    ],
    "reduce_sum": [
        Case(Ops.REDUCE, lambda a: a.sum((0, 2)), lambda a: a.sum((0, 2), keepdim=True),
             randn(2, 3, 4)),
        Case(Ops.REDUCE, lambda a: a.sum((1,)), lambda a: a.sum(1, keepdim=True), randn(3, 4)),
    ],
    "reduce_max_shares_ties": [
        Case(Ops.REDUCE, lambda a: a.reduce(Ops.MAX, (1,)), lambda a: a.amax(1, keepdim=True),
             np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [5.0, 1.0, 4.0, -5.0]])),
        Case(Ops.REDUCE, lambda a: a.reduce(Ops.MAX, (0, 1)),
             lambda a: a.amax((0, 1), keepdim=True),
             np.array([[1.0, 7.0], [7.0, 0.0], [-1.0, 2.0]])),
    ],
    "reshape_permute": [
        Case(Ops.RESHAPE, lambda a: a.reshape((6, 4)), lambda a: a.reshape(6, 4), randn(2, 3, 4)),
        Case(Ops.PERMUTE, lambda a: a.permute((2, 0, 1)), lambda a: a.permute(2, 0, 1),
             randn(2, 3, 4)),
        Case(Ops.PERMUTE, lambda a: a.permute((1, 3, 0, 2)), lambda a: a.permute(1, 3, 0, 2),
             randn(2, 3, 4, 5)),
    ],
    "expand": [
        Case(Ops.EXPAND, lambda a: a.expand((3, 5, 4)), lambda a: a.expand(3, 5, 4),
             randn(3, 1, 4)),
        Case(Ops.EXPAND, lambda a: a.expand((2, 3)), lambda a: a.expand(2, 3), randn(1, 1)),
    ],
    "pad_shrink_flip": [
        Case(Ops.PAD, lambda a: a.pad(((1, 2), (0, 3))),
             lambda a: torch.nn.functional.pad(a, (0, 3, 1, 2)), randn(2, 3)),
        Case(Ops.SHRINK, lambda a: a.shrink(((1, 3), (2, 5))), lambda a: a[1:3, 2:5],
             randn(4, 5)),
        Case(Ops.FLIP, lambda a: a.flip((True, False, True)), lambda a: a.flip(0, 2),
             randn(2, 3, 4)),
    ],
    "contiguous_copy": [
        Case(Ops.CONTIGUOUS, UOp.contiguous, lambda a: a * 1, randn(2, 3)),
        Case(Ops.COPY, lambda a: UOp(Ops.COPY, a.dtype, (a,), "NUMPY"), lambda a: a * 1,
             randn(3)),
    ],
}


@pytest.mark.parametrize("group", list(CASES))
def test_rule_matches_torch(group: str) -> None:
    """Each rule turns the gradient at a node's output into torch's gradient at its sources."""
    for case in CASES[group]:
        check(case)


# Every op the Tensor front end records, except the leaves (DEVICE, BUFFER, CONST).
RECORDED = ["NEG", "EXP2", "LOG2", "SIN", "SQRT", "RECIPROCAL", "TRUNC", "CAST", "ADD", "MUL",
            "MAX", "MOD", "IDIV", "FDIV", "CMPLT", "CMPNE", "AND", "OR", "XOR", "WHERE", "REDUCE",
            "RESHAPE", "PERMUTE", "EXPAND", "PAD", "SHRINK", "FLIP", "CONTIGUOUS", "DETACH", "COPY"]


def test_table_covers_every_op() -> None:
    """Every op a tensor's graph can hold, besides leaves, has a rule: backward can meet any."""
    rules = gradient.gradient_rules()
    missing = [name for name in RECORDED if Ops[name] not in rules]
    assert not missing, f"gradient_rules() has no rule for {', '.join(missing)}"


def test_no_gradient_ops_return_none() -> None:
    """DETACH, TRUNC and the integer and boolean ops pass no gradient on: None per source."""
    f, i, b = leaf(randn(4)), leaf(np.arange(1, 5, dtype=np.int32)), leaf(np.array([True] * 4))
    nodes = [f.detach(), f.alu(Ops.TRUNC), i.alu(Ops.MOD, i), i.alu(Ops.IDIV, i), f < f,
             f.ne(f), b.alu(Ops.AND, b), b.alu(Ops.OR, b), b.alu(Ops.XOR, b)]
    rules = gradient.gradient_rules()
    for node in nodes:
        grads = rules[node.op](leaf(np.ones(4, dtype=node.dtype.np)), node)
        assert tuple(grads) == (None,) * len(node.src), \
            f"the {node.op.name} rule should return {(None,) * len(node.src)}, got {grads!r}"
