"""Realized on request: targets, CONTIGUOUS and COPY get buffers; every elementwise op between
them fuses into one kernel."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_close
from tinyfw import Tensor
from tinyfw.engine import realize
from tinyfw.engine.schedule import find_materialized, is_realized_explicitly
from tinyfw.uop.ops import Ops

pytestmark = pytest.mark.task("04.realized")

RNG = np.random.default_rng(41)


def data(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def names(items: list) -> list[str]:
    return [item.name for item in items]


def test_targets_are_realized() -> None:
    """A node is realized when it is a target, and not merely for being computed."""
    x = Tensor(data(3, 4))
    y = x * 2 + 1
    assert is_realized_explicitly(y.uop, {y.uop}) is True, "a target must be realized"
    assert not is_realized_explicitly((x * 2).uop, {y.uop}), \
        "x * 2 is not a target, not a CONTIGUOUS and not a COPY: it should fuse"
    assert not is_realized_explicitly(x.sum(1).uop, {y.uop})


def test_contiguous_and_copy_are_realized() -> None:
    """CONTIGUOUS and COPY are realized even when nobody asked for them."""
    x = Tensor(data(3, 4), device="NUMPY")
    assert is_realized_explicitly((x * 2).contiguous().uop, set())
    copy = (x * 2).to("CPU").uop
    assert copy.op is Ops.COPY and is_realized_explicitly(copy, set())
    for t in (x * 2, x.T, x.max(0), (x > 0).where(x, 0)):
        assert not is_realized_explicitly(t.uop, set()), f"{t.uop.op} is not realized by itself"


def test_an_elementwise_chain_is_one_kernel() -> None:
    """Eight elementwise ops over two buffers: one kernel, E_3_4, reading each buffer once."""
    a, b = data(3, 4), data(3, 4)
    x, y = Tensor(a), Tensor(b)
    out = ((x * 2 + 1).exp() * y - 3 * x).abs().sqrt()
    assert find_materialized([out.uop], realize.is_loaded) == {out.uop}
    items = out.schedule()
    assert names(items) == ["E_3_4"], f"expected one kernel E_3_4, got {names(items)}"
    assert set(items[0].inputs) == {x.uop, y.uop} and len(items[0].inputs) == 2
    expect_close(out, np.sqrt(np.abs(np.exp(a * 2 + 1) * b - 3 * a)), rtol=1e-5)


def test_an_elementwise_chain_into_a_sum_is_one_kernel() -> None:
    """The chapter's first example: ((x * 2 + 1).relu() * x).sum() is the kernel r_3_4."""
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x = Tensor(a)
    y = ((x * 2 + 1).relu() * x).sum()
    items = y.schedule()
    assert names(items) == ["r_3_4"] and items[0].inputs == (x.uop,)
    expect_close(y, 1078.0)


def test_contiguous_splits_a_chain() -> None:
    a = data(3, 4)
    x = Tensor(a)
    stored = (x * 2).contiguous()
    out = stored + 1
    items = out.schedule()
    assert names(items) == ["E_3_4", "E_3_4"]
    assert items[0].output is stored.uop and items[1].inputs == (stored.uop,)
    expect_close(out, a * 2 + 1)


def test_targets_scheduled_together_each_get_a_kernel() -> None:
    """y and z = y + 1 asked for together: y is stored, and z's kernel reads it."""
    a = data(3, 4)
    x = Tensor(a)
    y = (x * 2).exp()
    z = y + 1
    items = y.schedule(z)
    assert names(items) == ["E_3_4", "E_3_4"]
    assert items[0].output is y.uop and items[1].inputs == (y.uop,)
    Tensor.realize_all(y, z)
    expect_close(z, np.exp(a * 2) + 1, rtol=1e-5)


def test_a_realized_value_is_read_not_recomputed() -> None:
    a = data(3, 4)
    h = (Tensor(a) * 2).sum(1)
    h.realize()
    items = (h.exp() + 1).schedule()
    assert names(items) == ["E_3"] and items[0].inputs == (h.uop,)
    assert Ops.REDUCE not in {n.op for n in items[0].ast.toposort()}
    expect_close(h.exp() + 1, np.exp(a.sum(1) * 2) + 1, rtol=1e-5)


def test_a_copy_is_a_step_of_its_own() -> None:
    """A COPY is a transfer (ast None) between the kernel that computes what it copies and the
    kernel that uses the copy."""
    a = data(3, 4)
    x = Tensor(a, device="NUMPY")
    moved = (x * 2).to("CPU") + 1
    items = moved.schedule()
    assert names(items) == ["E_3_4", "copy 12", "E_3_4"]
    assert [item.ast is None for item in items] == [False, True, False]
    assert [item.device for item in items] == ["NUMPY", "CPU", "CPU"]
    expect_close(moved, a * 2 + 1)
