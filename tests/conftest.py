"""Fixtures shared by tinyfw's tests: what the device under test (DEVICE) cannot do, and which
cases of the larger Tensor API suites a backend device runs (the device subset, below)."""
from __future__ import annotations

import math
import os
import shutil
import tempfile
import uuid
from typing import Any
from collections.abc import Hashable, Iterator
from pathlib import Path
from types import TracebackType

import numpy as np
import pytest

from chapters.grade_cache import CACHE_ENV
from tinyfw import DType, dtypes
from tinyfw.device import Device
from tinyfw.engine.caches import forget_built
from tinyfw.renderer.base import NotSupportedError

# The dtypes a device cannot compute with. WGSL has 32-bit scalars only (f16 is an optional
# feature that tinyfw does not ask for), so WEBGPU has no float64, int64, uint64 or float16.
UNSUPPORTED_DTYPES: dict[str, frozenset[DType]] = {
    "WEBGPU": frozenset({dtypes.float64, dtypes.int64, dtypes.uint64, dtypes.float16}),
}


class NeedsDtypes:
    """`with NeedsDtypes(dtypes.float64): ...` runs the block. Where the device (DEVICE) cannot
    compute with one of the dtypes, the block must raise NotSupportedError naming that dtype and
    the device, and the test is then skipped with a reason that says so (`pytest -ra` lists
    it), rather than passing or skipping silently."""

    def __init__(self, *needed: DType) -> None:
        self.device = Device.DEFAULT
        lacking = UNSUPPORTED_DTYPES.get(self.device, frozenset())
        self.missing = [d for d in needed if d in lacking]

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> bool:
        __tracebackhide__ = True  # failures and skips point at the test's `with` line
        if not self.missing or (error is not None and not isinstance(error, NotSupportedError)):
            return False  # nothing to check, or another error: let it through
        names = ", ".join(d.name for d in self.missing)
        if error is None:
            pytest.fail(f"{self.device} has no {names}, yet this ran without NotSupportedError")
        message = str(error)
        assert f"not supported on {self.device}" in message and \
            any(d.name in message for d in self.missing), \
            f"NotSupportedError should name the dtype ({names}) and {self.device}: {message!r}"
        pytest.skip(f"not supported on {self.device}: {names} (NotSupportedError checked)")


@pytest.fixture
def monkeypatch() -> Iterator[pytest.MonkeyPatch]:
    """pytest's monkeypatch, which also empties the engine's caches once its patches are
    undone: a test that swapped a function of the scheduler, the lowering or a renderer leaves
    no schedule or program made with it to the next test. (The engine's keys hold no code:
    a swap is said with tinyfw.engine.caches.forget_built, as chapters/learner.py says its.)"""
    with pytest.MonkeyPatch.context() as patch:
        yield patch
    forget_built()


@pytest.fixture
def needs_dtypes() -> type[NeedsDtypes]:
    """`with needs_dtypes(dtypes.float64): ...`: see NeedsDtypes."""
    return NeedsDtypes


# ---------------------------------------------------------------------------------------------
# The device subset
#
# A module marked `pytestmark = pytest.mark.device_subset` (the op suite, and the scan, shape,
# creation, nn, elementwise, linalg and call-form API suites) parametrizes each method over many
# shapes, arguments and dtypes. On CPU and NUMPY every case runs. On a backend device (CL, WEBGPU,
# CUDAEMU) nearly all the time goes to compiling kernels and each case compiles new ones, so there
# a parametrized test runs its distinct cases only: in collection order, a case runs when one of
# its parameters shows a kind that no case kept before it (of the same test) showed. The kind of a
# parameter's value:
#
# - a scalar (None, a bool, a str, an int, a float, a dtype, a function): the value itself.
#   Scalars choose the op, the mode, the dtype, the axis, the shift, the norm: each value of
#   each scalar parameter runs at least once, edge values such as a shift past the width too.
# - a tuple or list (a shape, a padding, sizes, an argument list): its type, its length and
#   the kinds of its elements, a number by its sign alone (negative, zero or positive, int or
#   float; inf and nan apart). So (3, 4) and (4, 3) are one case, and an empty (0, 3), a 0-d
#   (), a cropping (-1, 2) and a longer (2, 3, 4) are others.
# - a dict: each key with the kind of its value; a numpy array: its dtype, rank, emptiness.
#
# So every test, every method, dtype, mode and flag, and every empty, 0-d, negative or
# higher-rank case still runs on every device; what only CPU and NUMPY run is the same thing
# again at another size. The cases left out are deselected (pytest counts them as such).
# The first value of each parameter is the one a device pairs the other parameters' new values
# with, so a list starts with its most telling value: a shape of several elements, not ().
# `DEVICE=CL pytest --collect-only -q FILE` lists the cases a device runs;
# TINYFW_DEVICE_SUBSET=0 runs every case on every device.

DEVICES_RUNNING_EVERY_CASE = frozenset({"CPU", "NUMPY"})
_GRADE_CACHE = pytest.StashKey[Path]()


# ---------------------------------------------------------------------------------------------
# Workers
#
# scripts/test.sh runs tests/ on two workers with `--dist loadgroup`; tests/workers.py says
# which tests run together on one worker (a module, or one of the course's two gradings) and
# hands out the longest groups first.


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # (a hook of pytest-xdist's, if loaded)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With --dist loadgroup, tests/workers.py's scheduler (else pytest-xdist's own)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.workers import WorkerGroups  # (pytest-xdist only where it runs)
    return WorkerGroups(config, log)


def pytest_configure(config: pytest.Config) -> None:
    """Registers the device_subset marker; gives the session a folder of chapter grading runs
    (chapters/grade_cache.py) that its workers share, so that the course graded by
    test_grading, test_progress and test_capstone on the same files runs once."""
    config.addinivalue_line("markers", "device_subset: on a backend device, run only the "
                            "distinct cases of each parametrized test (tests/conftest.py)")
    if CACHE_ENV not in os.environ:
        run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex
        folder = Path(tempfile.gettempdir()) / f"tinyfw-grades-{run_id}"
        os.environ[CACHE_ENV] = str(folder)
        config.stash[_GRADE_CACHE] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    """Removes the session's folder of grading runs, where this process made it."""
    folder = config.stash.get(_GRADE_CACHE, None)
    if folder is not None and not hasattr(config, "workerinput"):
        shutil.rmtree(folder, ignore_errors=True)


def _number_kind(x: float) -> str:
    """A number inside a tuple or list by its sign and type: 'positive int', 'nan', ..."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    sign = "negative" if x < 0 else "zero" if x == 0 else "positive"
    return f"{sign} {'float' if isinstance(x, float) else 'int'}"


def _element_kind(x: object) -> Hashable:
    """The kind of an element of a tuple or list: numbers by sign, anything else as a value."""
    if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool):
        return _number_kind(float(x) if isinstance(x, np.floating) else x)
    return value_kind(x)


def value_kind(value: object) -> Hashable:
    """What makes a parameter's value a different case on a device (see above)."""
    if isinstance(value, (tuple, list)):
        return type(value).__name__, len(value), frozenset(_element_kind(x) for x in value)
    if isinstance(value, dict):
        return "dict", frozenset((key, value_kind(x)) for key, x in value.items())
    if isinstance(value, np.ndarray):
        return "array", value.dtype.str, value.ndim, value.size == 0
    if isinstance(value, float) and math.isnan(value):
        return "nan"  # nan != nan: every nan the same kind
    # with its type: True and 1 (and 1.0) are equal in Python, yet not the same case
    return type(value).__name__, value if isinstance(value, Hashable) else repr(value)


def distinct_cases(items: list[pytest.Item]) -> list[pytest.Item]:
    """The items that show a (parameter, kind) not shown by an earlier kept item of the same
    test; items that are not parametrized all stay."""
    seen: dict[str, set[tuple[str, Hashable]]] = {}
    kept = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None:
            kept.append(item)
            continue
        shown = seen.setdefault(item.nodeid.split("[")[0], set())
        kinds = {(name, value_kind(value)) for name, value in callspec.params.items()}
        if not kinds <= shown:
            shown |= kinds
            kept.append(item)
    return kept


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker of --dist loadgroup, puts the longest groups first (tests/workers.py); on a
    backend device, deselects the repeated cases of device_subset modules."""
    if getattr(config.option, "loadgroup", False):  # (set on pytest-xdist's workers only)
        from tests.workers import order_longest_first
        order_longest_first(items)
    if Device.DEFAULT in DEVICES_RUNNING_EVERY_CASE or \
            os.getenv("TINYFW_DEVICE_SUBSET", "1") == "0":
        return
    marked = [item for item in items if item.get_closest_marker("device_subset")]
    kept = {id(item) for item in distinct_cases(marked)}
    left_out = [item for item in marked if id(item) not in kept]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        dropped = {id(item) for item in left_out}
        items[:] = [item for item in items if id(item) not in dropped]
