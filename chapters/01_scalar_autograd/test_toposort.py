"""Task 2: toposort lists every node once, each after its sources, without recursing."""

from __future__ import annotations

import pytest

from chapters.grading import without_recursion
from tinyfw.scalar import Value

pytestmark = pytest.mark.task("01.toposort")


def node(name: str, *src: Value) -> Value:
    """A node made directly with the constructor (no ops needed), named for messages."""
    return Value(0.0, src, "op" if src else "", label=name)


def check_order(order: list[Value], expected: set[str]) -> None:
    """order holds exactly the expected nodes, each once, each after all of its sources."""
    assert isinstance(order, list), f"toposort should return a list, got {type(order).__name__}"
    names = [v.label for v in order]
    assert len({id(v) for v in order}) == len(order), f"a node appears more than once: {names}"
    assert set(names) == expected, f"expected the nodes {sorted(expected)}, got {names}"
    position = {id(v): i for i, v in enumerate(order)}
    for i, v in enumerate(order):
        late = [s.label for s in v.src if position[id(s)] > i]
        assert not late, f"{v.label} comes before its source(s) {late}: {names}"


def test_a_leaf_alone() -> None:
    """A leaf's order is just the leaf."""
    x = node("x")
    order = x.toposort()
    assert isinstance(order, list) and len(order) == 1 and order[0] is x, \
        f"x.toposort() for a leaf x should be [x], got {order}"


def test_a_chain() -> None:
    """x -> y -> z comes out as [x, y, z]."""
    x = node("x")
    y = node("y", x)
    z = node("z", y)
    order = z.toposort()
    assert [v.label for v in order] == ["x", "y", "z"], \
        f"expected [x, y, z], got {[v.label for v in order]}"


def test_a_diamond_lists_the_shared_node_once() -> None:
    """d = f(b, c) with b and c both made from a: a once, first; d last."""
    a = node("a")
    b = node("b", a)
    c = node("c", a)
    d = node("d", b, c)
    order = d.toposort()
    check_order(order, {"a", "b", "c", "d"})
    assert order[-1] is d, "the root should come last"


def test_same_source_twice() -> None:
    """A node whose two sources are the same node (like x * x) lists that node once."""
    x = node("x")
    square = node("square", x, x)
    check_order(square.toposort(), {"x", "square"})


def test_only_what_the_root_depends_on() -> None:
    """Nodes the root does not depend on (a user of the root, an unrelated leaf) are left out."""
    a, b, unrelated = node("a"), node("b"), node("unrelated")
    root = node("root", a, b)
    node("user_of_root", root, unrelated)
    check_order(root.toposort(), {"a", "b", "root"})


def test_a_wide_and_deep_graph() -> None:
    """Layers of nodes that each use two nodes of the layer below, and a few leaves on the side."""
    below = [node(f"leaf{i}") for i in range(6)]
    names = {v.label for v in below}
    for depth in range(5):
        below = [node(f"n{depth}_{i}", below[i], below[(i + 1) % len(below)], below[0])
                 for i in range(len(below))]
        names |= {v.label for v in below}
    root = node("root", *below)
    check_order(root.toposort(), names | {"root"})


def test_a_chain_of_100000_nodes() -> None:
    """A chain far deeper than Python's recursion limit (about 1000) still sorts."""
    first = node("n0")
    last = first
    for i in range(1, 100_001):
        last = Value(0.0, (last,), "op", label=f"n{i}")
    with without_recursion("Value.toposort() on a chain of 100001 nodes"):
        order = last.toposort()
    assert len(order) == 100_001, f"expected 100001 nodes, got {len(order)}"
    assert order[0] is first and order[-1] is last, "the chain should run from n0 to the root"
    wrong = next((i for i in range(1, len(order)) if order[i].src[0] is not order[i - 1]), None)
    assert wrong is None, f"order[{wrong}] is {order[wrong].label}: not right after its source"
