"""The figures the docs give about the code are the code's: the number of primitive ops.

What counts as a primitive op: a member of `tinyfw.uop.ops.Ops` that a graph built by the Tensor
front end can hold, that is every member but the three kernel ops (`VIEW`, `LOAD`, `STORE`,
`ops.KERNEL`) that only the scheduler writes into a kernel's AST. The three leaves (`DEVICE`,
`BUFFER`, `CONST`) count: they are nodes of the graph as much as `ADD` is.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tinyfw import Tensor
from tinyfw.uop.ops import KERNEL, Ops, UOp

ROOT = Path(__file__).resolve().parents[2]
PRIMITIVE = [op for op in Ops if op not in KERNEL]
# "34 primitive ops", "about thirty primitive operations", "a few dozen primitive ops": a count
# (digits or number words) in the two words before "primitive op(eration)s".
COUNTED = re.compile(r"\b((?:[\w-]+\s+)?[\w-]+)\s+primitive\s+op(?:eration)?s\b")
NUMBER_WORDS = re.compile(r"\d|dozen|twenty|thirty|forty|fifty|hundred|few|several|handful",
                          re.IGNORECASE)


def doc_files() -> list[Path]:
    """Every text a learner or user reads: the README, the site's pages, the chapters' texts."""
    return [ROOT / "README.md", *sorted((ROOT / "site").glob("*.md")),
            *sorted((ROOT / "chapters").glob("[0-9][0-9]_*/README.md"))]


def ops_in(*tensors: Tensor) -> set[Ops]:
    """The ops of every node in the graphs of these tensors."""
    seen: set[Ops] = set()
    todo: list[UOp] = [t.uop for t in tensors]
    done: set[int] = set()
    while todo:
        node = todo.pop()
        if id(node) not in done:
            done.add(id(node))
            seen.add(node.op)
            todo.extend(node.src)
    return seen


def test_the_front_end_emits_every_primitive_op() -> None:
    """The count's definition holds: the Tensor API builds graphs of exactly these ops."""
    x, i = Tensor([1.0, 2.0, 3.0]), Tensor([1, 2, 3])
    moved = x.reshape(3, 1).permute(1, 0).expand(2, 3).pad(((0, 0), (1, 1)))
    graphs = [x.exp2() + x.log2() + x.sin() + x.sqrt() + x.reciprocal() + x.trunc() - x,
              (x * x / x).max(), x.maximum(x), i % 2 + i // 2 + (i & 1) + (i | 1) + (i ^ 1),
              (x < x).where(x, x), x != x, moved.shrink(((0, 1), (0, 2))).flip(0),
              (x + 1).contiguous(), x.detach(), x.to("NUMPY"), x.bitcast("int32"), x.cast("int32"),
              x.shard(("CPU", "CPU:1"))]
    emitted, primitive = ops_in(*graphs), set(PRIMITIVE)
    assert emitted <= primitive, f"kernel ops in a front-end graph: {emitted - primitive}"
    assert primitive <= emitted, f"never emitted: {sorted(o.name for o in primitive - emitted)}"


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_count_of_primitive_ops_is_the_code_s(path: Path) -> None:
    """A page that counts the primitive ops gives their exact number, not "about thirty"."""
    text = path.read_text(encoding="utf-8")
    counts = [m.group(1) for m in COUNTED.finditer(text) if NUMBER_WORDS.search(m.group(1))]
    wrong = [c for c in counts if c.split()[-1] != str(len(PRIMITIVE))]
    assert not wrong, (f"{path.relative_to(ROOT)} counts the primitive ops as {wrong}; "
                       f"tinyfw/uop/ops.py has {len(PRIMITIVE)} (Ops less ops.KERNEL)")


@pytest.mark.parametrize("page", ["README.md", "site/index.md", "site/architecture.md",
                                  "chapters/02_tensors/README.md"])
def test_the_main_pages_give_the_number(page: str) -> None:
    """The pages that introduce the lazy graph say how many primitive ops it has."""
    text = (ROOT / page).read_text(encoding="utf-8")
    assert re.search(rf"\b{len(PRIMITIVE)}\s+primitive\s+op", text), (
        f"{page} does not say that the graph has {len(PRIMITIVE)} primitive ops")
