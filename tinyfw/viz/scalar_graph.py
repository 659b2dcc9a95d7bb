"""Graphviz drawings of computation graphs (a Digraph shows itself as SVG in Jupyter)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import graphviz

if TYPE_CHECKING:
    from tinyfw.scalar import Value

_RECORD_SPECIALS = str.maketrans({c: "\\" + c for c in "{}|<>\"\\"})


def _record_text(text: str) -> str:
    """text with graphviz record-label syntax characters escaped."""
    return text.translate(_RECORD_SPECIALS)


def _scalar_nodes(root: Value, max_nodes: int) -> tuple[list[Value], bool]:
    """Up to max_nodes nodes reachable from root, nearest first, and whether some were left out."""
    found: list[Value] = [root]
    seen = {id(root)}
    i = 0
    while i < len(found):
        for s in found[i].src:
            if id(s) not in seen:
                if len(found) == max_nodes:
                    return found, True
                seen.add(id(s))
                found.append(s)
        i += 1
    return found, False


def draw_scalar_graph(
    root: Value, rankdir: str = "LR", max_nodes: int = 300, fmt: str = "svg"
) -> graphviz.Digraph:
    """A drawing of root's graph: one box per Value (label, data, grad), one oval per op."""
    dot = graphviz.Digraph(format=fmt, graph_attr={"rankdir": rankdir})
    dot.attr("node", fontname="Helvetica", fontsize="11")
    nodes, truncated = _scalar_nodes(root, max_nodes)
    drawn = {id(v) for v in nodes}
    for v in nodes:
        name = str(id(v))
        fields = [f"data {v.data:.4g}", f"grad {v.grad:.4g}"]
        if v.label:
            fields.insert(0, _record_text(v.label))
        color = "#dbeafe" if not v.src else ("#fde68a" if v is root else "#f3f4f6")
        dot.node(name, "{" + " | ".join(fields) + "}", shape="record", style="filled",
                 fillcolor=color)
        if v.src:
            op = f"{name}_op"  # no ':' in node names: graphviz would read it as a port
            dot.node(op, v.op or "?", shape="ellipse", fontsize="10")
            dot.edge(op, name)
            for s in v.src:
                if id(s) in drawn:
                    dot.edge(str(id(s)), op)
    if truncated:
        dot.attr(label=f"(only the {max_nodes} nodes nearest the root are drawn)")
    return dot
