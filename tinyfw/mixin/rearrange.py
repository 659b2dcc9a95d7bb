"""einops' rearrange pattern ("b (h w) c -> b h w c") as a reshape, a permute and a reshape."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tinyfw.helpers import prod

if TYPE_CHECKING:
    from tinyfw.tensor import Tensor

Groups = list[list[str]]  # one list of axis names per dimension of a side
REST, GROUPED_REST = "...", "(...)"  # '...' alone, and '...' inside a group: "(...)" or "(a ...)"


def parse_side(side: str) -> Groups:
    """The groups of one side of a pattern: "b (h w) 1" is [["b"], ["h", "w"], []]."""
    groups: Groups = []
    for token in re.findall(r"\([^()]*\)|\.\.\.|[^\s()]+|[()]", side):
        if token in "()":
            raise ValueError(f"rearrange: unbalanced parentheses in {side!r}")
        if token.startswith("("):
            inner = [n for n in token[1:-1].split() if n != "1"]
            groups.append([GROUPED_REST if n == "..." else n for n in inner])
        elif token == "1":
            groups.append([])
        elif token == "..." or token.isidentifier():
            groups.append([token])
        else:
            raise ValueError(f"rearrange: {token!r} is not an axis name in {side!r}")
    return groups


def _expand_ellipsis(groups: Groups, count: int) -> Groups:
    """'...' replaced by count names of its own: each in a group of its own when '...' stands
    alone, all in the group when it is inside one."""
    rest = [f"...{i}" for i in range(count)]
    out: Groups = []
    for g in groups:
        if g == [REST]:
            out.extend([[n] for n in rest])
        else:
            out.append([m for n in g for m in (rest if n == GROUPED_REST else [n])])
    return out


def _rest_count(groups: Groups) -> int:
    """How many times '...' appears on a side."""
    return sum(n in (REST, GROUPED_REST) for g in groups for n in g)


def _axis_sizes(groups: Groups, shape: tuple[int, ...], given: dict[str, int]) -> dict[str, int]:
    """The size of every name on the left, from the input's shape and the sizes given."""
    sizes = dict(given)
    for group, size in zip(groups, shape):
        unknown = [n for n in group if n not in sizes]
        if len(unknown) > 1:
            raise ValueError(f"rearrange: cannot infer the sizes of {unknown} from {size}")
        known = prod(sizes[n] for n in group if n in sizes)
        if unknown:
            if known == 0 or size % known:
                raise ValueError(f"rearrange: dimension of size {size} cannot be split into "
                                 f"{group}")
            sizes[unknown[0]] = size // known
        elif known != size:
            raise ValueError(f"rearrange: {group} has size {known}, the input has {size}")
    return sizes


def rearrange(x: Tensor, formula: str, **sizes: int) -> Tensor:
    """x rearranged as einops' rearrange pattern says: axes split by (a b) on the left, joined
    by (a b) on the right, reordered, '...' for the axes not named and 1 for a size-1 axis."""
    if formula.count("->") != 1:
        raise ValueError(f"rearrange: the pattern needs one '->', got {formula!r}")
    left, right = (parse_side(s) for s in formula.split("->"))
    if _rest_count(left) > 1 or _rest_count(right) > 1:
        raise ValueError("rearrange: '...' can appear once on each side")
    if any(GROUPED_REST in g for g in left):
        raise ValueError("rearrange: '(...)' can only be on the right side")
    rest = x.ndim - (len(left) - (1 if [REST] in left else 0))
    if rest < 0 or ([REST] not in left and rest != 0):
        raise ValueError(f"rearrange: the left side of {formula!r} has {len(left)} dimensions, "
                         f"the input {x.ndim}")
    left, right = _expand_ellipsis(left, rest), _expand_ellipsis(right, rest)
    names_left = [n for g in left for n in g]
    names_right = [n for g in right for n in g]
    if sorted(names_left) != sorted(names_right) or len(set(names_left)) != len(names_left):
        raise ValueError(f"rearrange: each name must appear once on each side: {formula!r}")
    axis_size = _axis_sizes(left, x.shape, sizes)
    split = x.reshape(tuple(axis_size[n] for n in names_left))
    moved = split.permute(tuple(names_left.index(n) for n in names_right))
    return moved.reshape(tuple(prod(axis_size[n] for n in g) for g in right))
