"""Assertions and helpers for chapter tests whose failures show what differs, where, and why."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import numpy as np

SHOWN_ELEMENTS = 24
NOT_GRADED = "not graded here:"  # a test needing hardware this machine lacks
NOT_DONE = "not done yet:"  # how a stub's NotImplementedError starts
_shown: dict[str, str] = {}  # title -> text, shown with the failure of the running test


def find_not_done(error: BaseException | None) -> NotImplementedError | None:
    """A stub's NotImplementedError('not done yet: ...') in an exception, its causes or group."""
    seen: set[int] = set()
    pending = [error]
    while pending:
        current = pending.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, NotImplementedError) and str(current).startswith(NOT_DONE):
            return current
        pending += [current.__cause__, current.__context__]
        pending += list(getattr(current, "exceptions", ()))
    return None


def show_on_failure(title: str, text: str) -> None:
    """Shows text (like generated source) under title if the running test fails; a later call
    with the same title replaces it, so a failure shows what produced the values it checked."""
    _shown[title] = text


def take_shown() -> dict[str, str]:
    """What the running test asked to show if it fails (title -> text), forgetting it."""
    shown = dict(_shown)
    _shown.clear()
    return shown


def without_recursion(call: str) -> RecursionCheck:
    """with without_recursion("f() on a deep chain"): a RecursionError in the block fails the
    test saying to use an explicit stack."""
    return RecursionCheck(call)


class RecursionCheck:
    """Turns a RecursionError inside the block into a failure saying to use an explicit stack."""

    def __init__(self, call: str) -> None:
        self.call = call

    def __enter__(self) -> None:
        """Nothing to set up."""

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        """Raises the teaching failure in place of a RecursionError; lets anything else by."""
        __tracebackhide__ = True  # pytest shows the test's line, not this one
        if kind is not None and issubclass(kind, RecursionError):
            raise AssertionError(
                f"{self.call} recursed deeper than Python allows (RecursionError): use an "
                "explicit stack, a list of the nodes still to visit and a loop that pops from "
                "it, instead of a function that calls itself") from None


def as_array(value: Any) -> np.ndarray:
    """A numpy array of a scalar, list, numpy array or anything with .numpy() (a Tensor)."""
    if hasattr(value, "numpy") and callable(value.numpy) and not isinstance(value, np.generic):
        value = value.numpy()
    return np.asarray(value)


def _item(value: Any) -> str:
    """A plain Python repr of one element (6.0 rather than np.float64(6.0))."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _show(array: np.ndarray) -> str:
    """Abbreviated values of an array (a plain repr for a scalar)."""
    if array.shape == ():
        return _item(array[()])
    return np.array2string(array, threshold=SHOWN_ELEMENTS, edgeitems=3, separator=", ",
                           max_line_width=88)


def _describe(label: str, array: np.ndarray) -> str:
    """Labelled shape, dtype and values; a long array goes on indented lines below."""
    kind = f"{array.dtype} scalar" if array.shape == () else f"shape {array.shape} {array.dtype}"
    values = _show(array)
    if "\n" in values:
        return f"  {label:<8}  {kind}:\n" + "\n".join("      " + line
                                                     for line in values.splitlines())
    return f"  {label:<8}  {kind}: {values}"


def _title(what: str, problem: str) -> str:
    """First line of a failure message."""
    return f"{what}: {problem}" if what else problem


def _report(what: str, problem: str, actual: np.ndarray, expected: np.ndarray,
            extra: list[str] | None = None) -> str:
    """The whole failure message."""
    lines = [_title(what, problem), _describe("expected", expected), _describe("actual", actual)]
    return "\n".join(lines + (extra or []))


def _is_numeric(array: np.ndarray) -> bool:
    """Whether an array holds numbers or booleans (not objects or strings)."""
    return array.dtype.kind in "biufc"


def _check_shape_and_dtype(actual: np.ndarray, expected: np.ndarray, what: str,
                           dtype: Any) -> None:
    """Raises AssertionError when shapes differ or the actual dtype is not the one asked for."""
    __tracebackhide__ = True  # pytest shows the test's line, not this one
    if actual.shape != expected.shape:
        raise AssertionError(_report(what, "shapes differ", actual, expected))
    if dtype is not None and actual.dtype != np.dtype(dtype):
        raise AssertionError(_report(what, f"dtype is {actual.dtype}, expected {np.dtype(dtype)}",
                                     actual, expected))


def _first_difference(wrong: np.ndarray, actual: np.ndarray, expected: np.ndarray) -> list[str]:
    """Lines naming the first differing index with both values, and how many differ."""
    positions = np.argwhere(wrong)
    index = tuple(int(i) for i in positions[0])
    if not index:
        return []
    line = (f"  first difference at index {index}: expected {_item(expected[index])}, "
            f"actual {_item(actual[index])} ({len(positions)} of {wrong.size} elements differ)")
    return [line]


def expect_close(actual: Any, expected: Any, *, rtol: float = 1e-5, atol: float = 1e-6,
                 what: str = "", dtype: Any = None) -> None:
    """Asserts actual equals expected within |actual - expected| <= atol + rtol * |expected|."""
    __tracebackhide__ = True  # pytest shows the test's line, not this one
    actual_array, expected_array = as_array(actual), as_array(expected)
    if not (_is_numeric(actual_array) and _is_numeric(expected_array)):
        raise AssertionError(_report(what, "expect_close compares numbers only", actual_array,
                                     expected_array))
    _check_shape_and_dtype(actual_array, expected_array, what, dtype)
    close = np.isclose(actual_array, expected_array, rtol=rtol, atol=atol, equal_nan=True)
    if not close.all():
        raise AssertionError(_report(what, f"values differ (rtol={rtol:g}, atol={atol:g})",
                                     actual_array, expected_array,
                                     _first_difference(~close, actual_array, expected_array)))


def expect_equal(actual: Any, expected: Any, *, what: str = "", dtype: Any = None) -> None:
    """Asserts actual equals expected exactly: same shape, same values (NaN matches NaN)."""
    __tracebackhide__ = True  # pytest shows the test's line, not this one
    actual_array, expected_array = as_array(actual), as_array(expected)
    _check_shape_and_dtype(actual_array, expected_array, what, dtype)
    equal = np.asarray(actual_array == expected_array, dtype=bool)
    if equal.shape != actual_array.shape:
        equal = np.broadcast_to(equal, actual_array.shape)
    if _is_numeric(actual_array) and _is_numeric(expected_array):
        both_nan = np.isnan(actual_array.astype(np.complex128)) & np.isnan(
            expected_array.astype(np.complex128))
        equal = equal | both_nan
    if not equal.all():
        raise AssertionError(_report(what, "values differ", actual_array, expected_array,
                                     _first_difference(~equal, actual_array, expected_array)))
