"""Pushing views to the leaves: every movement op becomes a change of the views the kernel's
loads read through, so no kernel holds a movement op."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_close, expect_equal
from tinyfw import Tensor
from tinyfw.engine.schedule import apply_movement
from tinyfw.uop.ops import MOVEMENT, Ops, UOp
from tinyfw.shape.view import ShapeTracker

pytestmark = pytest.mark.task("04.push_views")

RNG = np.random.default_rng(44)


def data(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def leaves(item, op: Ops = Ops.LOAD) -> list[UOp]:
    """The LOAD (or CONST) nodes of a scheduled kernel."""
    return [n for n in item.ast.toposort() if n.op is op]


# a (4, 3) view of a (3, 4) buffer: transposed, so a reshape cannot always merge into it
START = ShapeTracker.from_shape((3, 4)).permute((1, 0))

MOVES = {
    "reshape": (lambda t: t.reshape(2, 2, 3), lambda st: st.reshape((2, 2, 3))),
    "permute": (lambda t: t.permute(1, 0), lambda st: st.permute((1, 0))),
    "expand": (lambda t: t.reshape(4, 1, 3).expand(4, 5, 3), None),
    "pad": (lambda t: t.pad(((1, 0), (0, 2))), lambda st: st.pad(((1, 0), (0, 2)))),
    "shrink": (lambda t: t.shrink(((1, 3), (0, 2))), lambda st: st.shrink(((1, 3), (0, 2)))),
    "flip": (lambda t: t.flip(0), lambda st: st.flip((True, False))),
}


@pytest.mark.parametrize("name", list(MOVES))
def test_apply_movement_matches_the_shapetracker(name: str) -> None:
    """apply_movement(st, node) is st followed by the node's movement op, with the node's arg."""
    make, expected = MOVES[name]
    node = make(Tensor(data(4, 3))).uop
    assert node.op in MOVEMENT
    if name == "expand":  # a reshape to (4, 1, 3) first, then the expand
        st = apply_movement(START, node.src[0])
        assert st == START.reshape((4, 1, 3))
        assert apply_movement(st, node) == st.expand((4, 5, 3))
        return
    got = apply_movement(START, node)
    assert got == expected(START), f"{name}: got {got}"
    assert got.shape == node.shape


def test_a_reshape_that_cannot_merge_stacks_a_view() -> None:
    node = Tensor(data(4, 3)).reshape(12).uop
    got = apply_movement(START, node)
    assert len(got.views) == 2 and got == START.reshape((12,))


def test_a_movement_chain_over_a_buffer_is_one_kernel() -> None:
    """x.T.flip(0)[1:] * 2: one kernel reading x through one view; nothing is copied."""
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x = Tensor(a)
    out = x.T.flip(0)[1:] * 2
    items = out.schedule()
    assert [item.name for item in items] == ["E_3_3"] and items[0].inputs == (x.uop,)
    (load,) = leaves(items[0])
    want = ShapeTracker.from_shape((3, 4)).permute((1, 0)).flip((True, False)).shrink(
        ((1, 4), (0, 3)))
    assert load.src[0].arg == want
    expect_equal(out, a.T[::-1][1:] * 2)


def test_views_reach_every_leaf() -> None:
    """(x * 2 + y).T transposes both loads, and the constant's view too."""
    a, b = data(3, 4), data(3, 4)
    out = (Tensor(a) * 2 + Tensor(b)).T
    (item,) = out.schedule()
    for load in leaves(item):
        assert load.src[0].arg.views[-1].strides == (1, 4), load.src[0].arg
    (const,) = leaves(item, Ops.CONST)
    assert const.shape == (4, 3) and const.src[0].arg.views[-1].strides == (0, 0)
    expect_close(out, (a * 2 + b).T)


def test_broadcasting_is_a_zero_stride() -> None:
    """In a @ w's kernel, a reads through strides (5, 1, 0) and w through (0, 6, 1)."""
    a, b = data(4, 5), data(5, 6)
    x, w = Tensor(a), Tensor(b)
    (item,) = (x @ w).schedule()
    views = {item.inputs[load.arg - 1]: load.src[0].arg.views[-1] for load in leaves(item)}
    assert views[x.uop].shape == (4, 5, 6) and views[x.uop].strides == (5, 1, 0)
    assert views[w.uop].shape == (4, 5, 6) and views[w.uop].strides == (0, 6, 1)
    expect_close(x @ w, a @ b, rtol=1e-5, atol=1e-5)


def test_no_kernel_holds_a_movement_op() -> None:
    a, b = data(4, 6), data(6, 4)
    x, y = Tensor(a), Tensor(b)
    padding = ((1, 0), (0, 1))
    out = ((x.T[::2].pad(padding) + y[1::2].flip(1).pad(padding)).reshape(5, 4) * 2).sum(0)
    items = out.schedule()
    assert len(items) == 1
    ops = {n.op for n in items[0].ast.toposort()}
    assert not ops & MOVEMENT, f"movement ops left in the kernel: {ops & MOVEMENT}"
    assert sorted(n.arg for n in leaves(items[0])) == [1, 2]
    want = (np.pad(a.T[::2] + b[1::2, ::-1], padding).reshape(5, 4) * 2).sum(0)
    expect_close(out, want, rtol=1e-5, atol=1e-5)


def test_padding_a_buffer_is_a_mask() -> None:
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    out = Tensor(a).pad(((1, 1), (0, 2))) * 2 + 1
    (item,) = out.schedule()
    (load,) = leaves(item)
    assert load.src[0].arg.views[-1].mask == ((1, 4), (0, 4))
    expect_equal(out, np.pad(a, ((1, 1), (0, 2))) * 2 + 1)


def test_movement_above_a_reduce() -> None:
    """A reshape of a sum stays in the sum's kernel; the transpose of a sum reads its buffer."""
    a = data(3, 4)
    x = Tensor(a)
    kept = x.sum(1).reshape(1, 3) * 2
    assert [item.name for item in kept.schedule()] == ["r_3_4"]
    turned = x.sum(1, keepdim=True).T * 2
    items = turned.schedule()
    assert [item.name for item in items] == ["r_3_4", "E_1_3"]
    (load,) = leaves(items[1])
    assert load.src[0].arg.shape == (1, 3)
    expect_close(turned, a.sum(1, keepdims=True).T * 2, rtol=1e-5)
