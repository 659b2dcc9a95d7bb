"""Graphviz drawings of a Tensor's lazy graph (a Digraph shows itself as SVG in Jupyter)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import graphviz

from tinyfw.uop.ops import Ops, UOp, find_reduce

Drawable = Any  # a UOp, or anything with a .uop (a Tensor)
STYLE = {  # fill colour and shape per kind of node
    "buffer": {"shape": "cylinder", "fillcolor": "#dbeafe"},
    "const": {"shape": "ellipse", "fillcolor": "#f3f4f6", "fontsize": "9"},
    "op": {"shape": "box", "fillcolor": "#ffffff"},
    "grad": {"shape": "box", "fillcolor": "#ffedd5", "color": "#ea580c"},
}


def _uop(x: Drawable) -> UOp:
    """The graph node behind a Tensor (or the node itself)."""
    return x if isinstance(x, UOp) else x.uop


def _named(xs: Drawable | Sequence[Drawable] | Mapping[str, Drawable] | None,
           prefix: str) -> dict[str, UOp]:
    """Roots to draw, by the name each gets in the drawing."""
    if xs is None:
        return {}
    if isinstance(xs, Mapping):
        return {str(k): _uop(v) for k, v in xs.items()}
    seq = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    return {(prefix if len(seq) == 1 else f"{prefix} {i}"): _uop(x) for i, x in enumerate(seq)}


def _arg_text(node: UOp) -> str:
    """A short text for a node's argument ('' when it has none worth showing)."""
    if node.op is Ops.BUFFER:
        return f"on {node.arg.device}"
    if node.op is Ops.REDUCE:
        return f"{node.arg[0].name} over axes {node.arg[1]}"
    if node.op is Ops.FLIP:
        return f"axes {tuple(i for i, f in enumerate(node.arg) if f)}"
    if node.op in (Ops.RESHAPE, Ops.EXPAND):  # the argument is the new shape, shown already
        return ""
    return "" if node.arg is None else str(node.arg)


def label(node: UOp) -> str:
    """The text of a node: its op, its shape and dtype, and its argument."""
    if node.op is Ops.CONST:
        return f"CONST {node.arg!r}\\n{node.dtype.name}"
    lines = [node.op.name, f"{node.shape} {node.dtype.name}", _arg_text(node)]
    return "\\n".join(line for line in lines if line)


def _reachable(roots: list[UOp], limit: int) -> tuple[list[UOp], bool]:
    """Up to limit nodes below roots (DEVICE leaves skipped), nearest first; True if cut short."""
    found, seen, i = [], set(), 0
    for r in roots:
        if r not in seen:
            seen.add(r)
            found.append(r)
    while i < len(found):
        for s in found[i].src:
            if s not in seen and s.op is not Ops.DEVICE:
                if len(found) >= limit:
                    return found, True
                seen.add(s)
                found.append(s)
        i += 1
    return found, False


def draw_graph(*tensors: Drawable,
               grads: Drawable | Sequence[Drawable] | Mapping[str, Drawable] | None = None,
               rankdir: str = "LR", max_nodes: int = 300, fmt: str = "svg") -> graphviz.Digraph:
    """The lazy graph below tensors (and below grads, shaded orange) with data flowing along edges.
    Buffers are blue cylinders, constants grey ovals; a node shared by both graphs is drawn once."""
    outs, grad_roots = _named(list(tensors), "out"), _named(grads, "grad")
    forward, cut_f = _reachable(list(outs.values()), max_nodes)
    backward, cut_b = _reachable(list(grad_roots.values()), max_nodes)
    in_forward = set(forward)
    dot = graphviz.Digraph(format=fmt, graph_attr={"rankdir": rankdir})
    dot.attr("node", fontname="Helvetica", fontsize="10", style="filled,rounded")
    dot.attr("edge", color="#6b7280", arrowsize="0.6")
    drawn: dict[UOp, None] = {}  # insertion-ordered, so the drawing is the same every time
    for node in forward + backward:
        if node in drawn:
            continue
        drawn[node] = None
        kind = ("buffer" if node.op is Ops.BUFFER else "const" if node.op is Ops.CONST
                else "op" if node in in_forward else "grad")
        dot.node(str(id(node)), label(node), **STYLE[kind])
    for node in drawn:
        for s in node.src:
            if s in drawn:
                dot.edge(str(id(s)), str(id(node)))
    for i, (name, root) in enumerate([*outs.items(), *grad_roots.items()]):
        dot.node(f"name {i}", name, shape="plaintext", style="", fontsize="11")
        dot.edge(str(id(root)), f"name {i}", style="dashed", arrowhead="none")
    if cut_f or cut_b:
        dot.attr(label=f"(only the {max_nodes} nodes nearest each output are drawn)")
    return dot


# --- schedules and kernels (chapter 04) ---
KERNEL_STYLE = {
    "kernel": {"shape": "box", "fillcolor": "#fef3c7", "color": "#b45309"},
    "reduce": {"shape": "box", "fillcolor": "#fde68a", "color": "#b45309"},
    "copy": {"shape": "box", "fillcolor": "#e0e7ff", "color": "#4338ca"},
    "buffer": {"shape": "cylinder", "fillcolor": "#dbeafe"},
    "result": {"shape": "cylinder", "fillcolor": "#dcfce7", "color": "#15803d"},
}


def _buffer_text(node: UOp, computed: bool, show_device: bool) -> str:
    """A buffer of a schedule: its shape and dtype, and what computed it (if a step did)."""
    where = f" on {node.device}" if show_device else ""
    made = f"a {node.op.name}" if computed else "given"
    return f"{node.shape} {node.dtype.name}{where}\\n({made})"


def draw_schedule(items: Sequence[Any], rankdir: str = "LR",
                  fmt: str = "svg") -> graphviz.Digraph:
    """A schedule as a dataflow picture: each kernel a box named by its kernel name (copies too),
    each buffer a cylinder, edges from the buffers a kernel reads to it and on to the one it
    writes. An edge's number is the buffer number the kernel's LOAD (1, 2, ...) or STORE (0) uses.
    Green cylinders are the buffers no later kernel of the schedule reads: the results."""
    dot = graphviz.Digraph(format=fmt, graph_attr={"rankdir": rankdir})
    dot.attr("node", fontname="Helvetica", fontsize="10", style="filled,rounded")
    dot.attr("edge", color="#6b7280", arrowsize="0.6", fontsize="8")
    names: dict[UOp, str] = {}
    read = {node for item in items for node in item.inputs}
    computed = {item.output for item in items}
    show_device = len({item.device for item in items}) > 1

    def buffer(node: UOp) -> str:
        if node not in names:
            names[node] = f"b{len(names)}"
            kind = "buffer" if node in read else "result"
            dot.node(names[node], _buffer_text(node, node in computed, show_device),
                     **KERNEL_STYLE[kind])
        return names[node]

    for i, item in enumerate(items):
        if item.ast is None:
            kind = "copy"
        else:
            kind = "reduce" if find_reduce(item.ast) is not None else "kernel"
        dot.node(f"k{i}", f"{i}: {item.name}", **KERNEL_STYLE[kind])
        for n, node in enumerate(item.inputs):
            dot.edge(buffer(node), f"k{i}", label=f" {n + 1}")
        dot.edge(f"k{i}", buffer(item.output), label=" 0")
    return dot


def _view_text(st: Any) -> list[str]:
    """Lines describing a ShapeTracker: per view its shape, strides, offset and mask."""
    lines = []
    for view in st.views:
        lines.append(f"shape {view.shape}  strides {view.strides}")
        extra = [f"offset {view.offset}"] if view.offset else []
        extra += [f"mask {view.mask}"] if view.mask is not None else []
        if extra:
            lines.append("  ".join(extra))
    return lines


def kernel_label(node: UOp) -> str:
    """The text of one node of a kernel's AST (a LOAD, CONST or STORE shows its view)."""
    if node.op is Ops.LOAD:
        lines = [f"LOAD buffer {node.arg}  {node.dtype.name}", *_view_text(node.src[0].arg)]
    elif node.op is Ops.STORE:
        lines = [f"STORE buffer {node.arg}  {node.dtype.name}", *_view_text(node.src[0].arg)]
    elif node.op is Ops.CONST:
        lines = [f"CONST {node.arg!r}  {node.dtype.name}", f"shape {node.shape}"]
    elif node.op is Ops.REDUCE:
        lines = [f"REDUCE {node.arg[0].name}", f"axes {node.arg[1]}",
                 f"{node.src[0].shape} -> {node.shape}"]
    else:
        lines = [node.op.name, f"{node.shape} {node.dtype.name}"]
    return "\\n".join(lines)


def draw_kernel(ast: UOp | Any, fmt: str = "svg") -> graphviz.Digraph:
    """A kernel's AST (or a ScheduleItem's), STORE at the top, LOADs and CONSTs at the bottom:
    each LOAD names the input buffer it reads and the view it reads it through (one line of
    shape and strides per view, then offset and mask where they are not the plain ones)."""
    ast = ast if isinstance(ast, UOp) else ast.ast
    dot = graphviz.Digraph(format=fmt, graph_attr={"rankdir": "BT"})
    dot.attr("node", fontname="Helvetica", fontsize="10", style="filled,rounded")
    dot.attr("edge", color="#6b7280", arrowsize="0.6")
    fills = {Ops.LOAD: "#dbeafe", Ops.STORE: "#dcfce7", Ops.CONST: "#f3f4f6",
             Ops.REDUCE: "#fde68a"}
    drawn = [n for n in ast.toposort() if n.op is not Ops.VIEW]
    for node in drawn:
        dot.node(str(id(node)), kernel_label(node), shape="box",
                 fillcolor=fills.get(node.op, "#ffffff"))
    for node in drawn:
        for s in node.src:
            if s.op is not Ops.VIEW:
                dot.edge(str(id(s)), str(id(node)))
    return dot
