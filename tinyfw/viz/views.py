"""Pictures of views: which memory element each element of a small view reads (graphviz)."""

from __future__ import annotations

import html
from collections.abc import Mapping
from itertools import product

import graphviz
import numpy as np

from tinyfw.shape.view import ShapeTracker, View

Viewish = ShapeTracker | View
MAX_ELEMENTS = 400  # a bigger view would be a wall of numbers, not a picture
PALETTE = ["#bfdbfe", "#fde68a", "#bbf7d0", "#fecaca", "#ddd6fe", "#fed7aa", "#a5f3fc",
           "#f5d0fe", "#d9f99d", "#e5e7eb"]
MASKED = "#9ca3af"


def view_indices(view: View) -> tuple[np.ndarray, np.ndarray]:
    """The memory index each element of one view reads, and whether it is valid, worked out
    with numpy from the view's fields alone (no index expressions)."""
    grid = np.indices(view.shape, dtype=np.int64)
    index = np.full(view.shape, view.offset, dtype=np.int64)
    valid = np.ones(view.shape, dtype=bool)
    for d, stride in enumerate(view.strides):
        index += grid[d] * stride
        if view.mask is not None:
            valid &= (grid[d] >= view.mask[d][0]) & (grid[d] < view.mask[d][1])
    return index, valid


def tracker_indices(st: Viewish) -> tuple[np.ndarray, np.ndarray]:
    """The buffer index each element of a view or a stack of views reads, and whether it is
    valid: each view's indices looked up in the (flattened) indices of the view below."""
    views = st.views if isinstance(st, ShapeTracker) else (st,)
    index, valid = view_indices(views[-1])
    for level in range(len(views) - 2, -1, -1):
        below_index, below_valid = (a.reshape(-1) for a in view_indices(views[level]))
        outside = valid & ((index < 0) | (index >= below_index.size))
        if outside.any():
            at = tuple(int(i) for i in np.argwhere(outside)[0])
            raise ValueError(f"element {at} of view {level + 1} reads element {index[at]} of "
                             f"view {level}, which has only {below_index.size} elements")
        safe = np.where(valid, index, 0)
        index, valid = below_index[safe], valid & below_valid[safe]
    return index, valid


def _cell(text: str, color: str) -> str:
    """One table cell."""
    return (f'<TD BGCOLOR="{color}" FIXEDSIZE="TRUE" WIDTH="28" HEIGHT="22">'
            f"{html.escape(text)}</TD>")


def _grid(index: np.ndarray, valid: np.ndarray, prefix: tuple[int, ...]) -> str:
    """A table of the last two axes (one row for one axis, one cell for none)."""
    rows = index.shape[-2] if index.ndim >= 2 else 1
    cols = index.shape[-1] if index.ndim >= 1 else 1
    index, valid = index.reshape(rows, cols), valid.reshape(rows, cols)
    lines = ['<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3">']
    if prefix:
        head = "[" + ", ".join(map(str, prefix)) + ", ...]"
        lines.append(f'<TR><TD COLSPAN="{cols}" BORDER="0"><FONT POINT-SIZE="9">{head}</FONT>'
                     "</TD></TR>")
    for r in range(rows):
        cells = [_cell(str(index[r, c]), PALETTE[index[r, c] % len(PALETTE)]) if valid[r, c]
                 else _cell("·", MASKED) for c in range(cols)]
        lines.append("<TR>" + "".join(cells) + "</TR>")
    return "".join(lines) + "</TABLE>"


def _memory_row(index: np.ndarray, valid: np.ndarray, size: int) -> str:
    """The buffer as a row of cells; those the view reads are coloured like the grid."""
    read = set(index[valid].tolist())
    cells = [_cell(str(k), PALETTE[k % len(PALETTE)] if k in read else "#ffffff")
             for k in range(size)]
    return ('<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3">'
            f'<TR><TD COLSPAN="{size}" BORDER="0"><FONT POINT-SIZE="9">memory</FONT></TD></TR>'
            "<TR>" + "".join(cells) + "</TR></TABLE>")


def _fields(st: Viewish) -> list[str]:
    """One line per view: shape, strides, offset and mask."""
    views = st.views if isinstance(st, ShapeTracker) else (st,)
    return [(f"view {i}: " if len(views) > 1 else "")
            + f"shape {v.shape} strides {v.strides} offset {v.offset}"
            + (f" mask {v.mask}" if v.mask is not None else "") for i, v in enumerate(views)]


def _labels(title: str, st: Viewish, memory_size: int | None) -> tuple[str, str, str]:
    """HTML labels of one view's three parts: title and fields, index grid, memory row."""
    index, valid = tracker_indices(st)
    if index.size > MAX_ELEMENTS:
        raise ValueError(f"a view of {index.size} elements is too big to draw "
                         f"(at most {MAX_ELEMENTS})")
    lead = index.shape[:-2]
    if index.size == 0:
        blocks = ["(no elements)"]
    elif lead:
        blocks = [_grid(index[p], valid[p], p) for p in product(*map(range, lead))]
    else:
        blocks = [_grid(index, valid, ())]
    size = memory_size if memory_size is not None else \
        int(index[valid].max()) + 1 if valid.any() else 1
    lines = [f"<B>{html.escape(title)}</B>"] if title else []
    lines += [f'<FONT POINT-SIZE="9">{html.escape(line)}</FONT>' for line in _fields(st)]
    head = "<" + "<BR/>".join(lines) + ">"
    grid = ('<<TABLE BORDER="0" CELLSPACING="8"><TR>'
            + "".join(f"<TD>{b}</TD>" for b in blocks) + "</TR></TABLE>>")
    memory = f"<{_memory_row(index, valid, size)}>"
    return head, grid, memory


def draw_views(views: Mapping[str, Viewish], memory_size: int | None = None,
               fmt: str = "svg") -> graphviz.Digraph:
    """Each view side by side as a grid of the memory index each element reads (masked
    elements grey), above the memory row with the elements it reads in the same colours."""
    dot = graphviz.Digraph(format=fmt, graph_attr={"nodesep": "0.5", "ranksep": "0.05"})
    dot.attr("node", shape="plaintext", fontname="Helvetica", fontsize="11", margin="0")
    dot.attr("edge", style="invis")
    for i, (title, st) in enumerate(views.items()):
        parts = [f"{part} {i}" for part in ("head", "grid", "memory")]
        for name, label in zip(parts, _labels(title, st, memory_size)):
            dot.node(name, label)
        dot.edge(parts[0], parts[1])
        dot.edge(parts[1], parts[2])
    return dot


def draw_view(st: Viewish, title: str = "", memory_size: int | None = None,
              fmt: str = "svg") -> graphviz.Digraph:
    """One view (or stack of views) as a grid of memory indices above the memory it reads."""
    return draw_views({title: st}, memory_size, fmt)
