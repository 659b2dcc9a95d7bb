"""Small helpers shared by every layer of tinyfw."""
from __future__ import annotations

import functools
import operator
from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")


def prod(xs: Iterable[int]) -> int:
    """The product of a sequence of ints (1 for an empty one)."""
    return functools.reduce(operator.mul, xs, 1)


def argfix(*args) -> tuple:
    """Accept both f(1, 2, 3) and f((1, 2, 3)) and return the tuple."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def all_int(xs: Iterable) -> bool:
    """True when every element is a Python int (bools excluded)."""
    return all(isinstance(x, int) and not isinstance(x, bool) for x in xs)


def normalize_axis(axis: int, ndim: int) -> int:
    """A possibly negative axis as a positive index, with PyTorch's IndexError when out of range."""
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not lo <= axis <= hi:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {axis})")
    return axis % ndim if ndim > 0 else 0


def shape_str(shape: tuple[int, ...]) -> str:
    """A shape the way PyTorch prints it in errors: [2, 3]."""
    return "[" + ", ".join(str(s) for s in shape) + "]"


def ceildiv(a: int, b: int) -> int:
    """a / b rounded up."""
    return -(-a // b)
