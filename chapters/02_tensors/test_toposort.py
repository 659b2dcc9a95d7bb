"""Ordering the graph: the nodes between the root and the targets, sources before users."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import without_recursion
from tinyfw import dtypes
from tinyfw.uop import gradient
from tinyfw.device import Buffer
from tinyfw.uop.ops import Ops, UOp

pytestmark = pytest.mark.task("02.toposort")


def leaf(n: int = 3) -> UOp:
    """A fresh buffer node of n float32 elements (a distinct node each call)."""
    return UOp(Ops.BUFFER, dtypes.float32, (), Buffer("NUMPY", n, dtypes.float32, np.ones(n)))


def names(order: list[UOp], named: dict[str, UOp]) -> list[str]:
    """The names of the nodes of an order ('?' for a node with no name)."""
    by_node = {node: name for name, node in named.items()}
    return [by_node.get(node, "?") for node in order]


def check_order(order: list[UOp], expected: set[str], named: dict[str, UOp]) -> None:
    """order holds exactly the expected nodes, each once, each after its sources in order."""
    got = names(order, named)
    assert isinstance(order, list), f"toposort should return a list, got {type(order).__name__}"
    assert len(got) == len(set(got)), f"a node appears twice: {got}"
    assert set(got) == expected, f"expected the nodes {sorted(expected)}, got {got}"
    for i, node in enumerate(order):
        late = [names([s], named)[0] for s in node.src if s in order[i + 1:]]
        assert not late, f"{got[i]} comes before its source(s) {late}: {got}"


@pytest.fixture
def graph() -> dict[str, UOp]:
    """a, b, c leaves; d = a*b; e = d + c; f = sin(d); root = e*f (d is shared: a diamond)."""
    a, b, c, unused = leaf(), leaf(), leaf(), leaf()
    d = a * b
    e, f = d + c, d.sin()
    return {"a": a, "b": b, "c": c, "d": d, "e": e, "f": f, "root": e * f, "unused": unused}


def test_sources_come_first(graph: dict[str, UOp]) -> None:
    """Targets a, b and c reach every node: each appears once, after its sources, root last."""
    targets = {graph["a"], graph["b"], graph["c"]}
    order = gradient.toposort(graph["root"], targets)
    check_order(order, {"a", "b", "c", "d", "e", "f", "root"}, graph)
    assert order[-1] is graph["root"], "the root depends on everything, so it comes last"


def test_prunes_branches_that_reach_no_target(graph: dict[str, UOp]) -> None:
    """With target c, only c, e and root lie on a path from the root to a target."""
    check_order(gradient.toposort(graph["root"], {graph["c"]}), {"c", "e", "root"}, graph)
    check_order(gradient.toposort(graph["root"], {graph["a"]}),
                {"a", "d", "e", "f", "root"}, graph)


def test_stops_at_targets(graph: dict[str, UOp]) -> None:
    """The sources of a target are left out unless they lead to another target."""
    check_order(gradient.toposort(graph["root"], {graph["d"]}), {"d", "e", "f", "root"}, graph)
    check_order(gradient.toposort(graph["root"], {graph["d"], graph["a"]}),
                {"a", "d", "e", "f", "root"}, graph)
    check_order(gradient.toposort(graph["e"], {graph["e"]}), {"e"}, graph)


def test_no_target_reached(graph: dict[str, UOp]) -> None:
    """A target the root does not depend on gives an empty order."""
    check_order(gradient.toposort(graph["root"], {graph["unused"]}), set(), graph)
    check_order(gradient.toposort(graph["root"], set()), set(), graph)


def test_deep_graph_without_recursion() -> None:
    """A chain 5000 nodes deep (deeper than Python's recursion limit) is ordered."""
    x = start = leaf()
    chain = [x]
    for i in range(5000):
        x = -x if i % 2 else x.sin()
        chain.append(x)
    with without_recursion("toposort(root, targets) on a chain of 5001 nodes"):
        order = gradient.toposort(x, {start})
    assert len(order) == len(chain), f"expected {len(chain)} nodes, got {len(order)}"
    assert all(a is b for a, b in zip(order, chain)), "the chain is out of order"
