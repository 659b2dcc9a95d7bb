"""The device subset (tests/conftest.py): which cases of a parametrized test a backend device
runs. Sizes repeat a case; every scalar value, dtype, empty, 0-d and negative case is new."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pytest

from tests.conftest import distinct_cases, value_kind
from tinyfw import dtypes


def test_sizes_are_one_kind_and_edges_are_others() -> None:
    """Shapes of one rank with positive sizes are one kind; empty, 0-d, negative, another rank
    or float elements are each a kind of their own."""
    assert value_kind((3, 4)) == value_kind((4, 3)) == value_kind((1, 64))
    kinds = {value_kind(v) for v in [(3, 4), (0, 3), (), (-1, 2), (2, 3, 4), (1.5, 2), [3, 4]]}
    assert len(kinds) == 7
    assert value_kind((0, 3)) == value_kind((3, 0))  # both empty
    assert value_kind((math.inf,)) != value_kind((math.nan,)) != value_kind((1.0,))


def test_scalars_are_their_own_kind() -> None:
    """Ints, floats, strings, flags, dtypes and functions are kinds by value: each runs."""
    values = [0, 1, 40, -1, 0.5, 2.0, math.inf, "reflect", True, None, dtypes.int32, np.float32]
    assert len({value_kind(v) for v in values}) == len(values)
    assert value_kind(math.nan) == value_kind(float("nan"))
    # a dict (keyword arguments): each key with its value's kind
    assert value_kind({"stride": 2, "padding": (1, 2)}) == value_kind({"padding": (2, 1),
                                                                       "stride": 2})
    assert value_kind({"stride": 2}) != value_kind({"stride": 3})
    assert value_kind({"padding": "same"}) != value_kind({"padding": "valid"})
    assert value_kind(np.zeros((2, 0))) != value_kind(np.zeros((2, 1)))


@dataclass
class _CallSpec:
    """A parametrized case's parameter values, as pytest's callspec holds them."""
    params: dict[str, Any]


@dataclass
class _Item:
    """What distinct_cases reads of a pytest item."""
    nodeid: str
    callspec: _CallSpec | None = None


def _items(test: str, cases: list[dict[str, Any]]) -> list[_Item]:
    """One item per case of a parametrized test."""
    return [_Item(f"t.py::{test}[{i}]", _CallSpec(case)) for i, case in enumerate(cases)]


def _kept(items: list[_Item]) -> list[str]:
    """The node ids of the items a backend device runs."""
    return [item.nodeid for item in distinct_cases(cast(list[pytest.Item], items))]


def test_a_case_runs_when_it_shows_something_new() -> None:
    """The first case runs; a case at another size of the same kind does not; a new scalar
    value, a new dtype or an empty shape does; each test is judged apart."""
    items = _items("tril", [
        {"k": 0, "shape": (3, 4), "dtype": "float32"},
        {"k": 0, "shape": (4, 3), "dtype": "float32"},  # the same at another size
        {"k": 0, "shape": (3, 4), "dtype": "int32"},    # a new dtype
        {"k": 0, "shape": (0, 3), "dtype": "float32"},  # empty
        {"k": 100, "shape": (4, 3), "dtype": "int32"},  # a new k
        {"k": 100, "shape": (3, 0), "dtype": "int32"},  # nothing new
    ]) + _items("diag", [{"k": 0, "shape": (3, 4), "dtype": "float32"}])
    items.append(_Item("t.py::test_plain"))
    assert _kept(items) == ["t.py::tril[0]", "t.py::tril[2]", "t.py::tril[3]", "t.py::tril[4]",
                            "t.py::diag[0]", "t.py::test_plain"]
