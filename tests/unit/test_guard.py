"""Guards (tinyfw/engine/guard.py): a write to any namespace watched makes a guard fail, a read
never does, on the version tags and on the fallback that compares contents."""
from __future__ import annotations

import os
import sys
import types

import pytest

from tinyfw.engine import guard


class Part:
    """A class whose methods and instance settings a guard watches."""

    def method(self) -> int:
        return 1


@pytest.fixture(params=["tags", "fallback"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test with the dicts' version tags, and with the comparison used where there are
    none."""
    if request.param == "fallback":
        monkeypatch.setattr(guard, "TAGS", False)
    return str(request.param)


def test_the_version_tags_are_read_on_this_cpython() -> None:
    """CPython 3.11 to 3.13 keep a version tag in every dict, where the import's check finds it
    (a Python without one falls back, and this test says so)."""
    if sys.implementation.name == "cpython" and (3, 11) <= sys.version_info < (3, 14):
        assert guard.TAGS


def test_reads_keep_a_guard(mode: str) -> None:
    module, part = types.ModuleType("watched"), Part()
    module.value = 1  # type: ignore[attr-defined]
    part.flag = True  # type: ignore[attr-defined]
    watching = guard.Guard([module, Part, part, os.environ])
    assert module.value == 1 and part.method() == 1 and part.flag  # type: ignore[attr-defined]
    assert os.environ.get("TINYFW_GUARD_TEST") is None
    assert watching.holds()


def test_a_function_set_in_a_module_breaks_its_guard(mode: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("watched")
    module.f = len  # type: ignore[attr-defined]
    watching = guard.Guard([module])
    monkeypatch.setattr(module, "f", abs)
    assert not watching.holds()


def test_a_write_into_a_module_dict_breaks_its_guard(mode: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """chapters/learner.py swaps a learner's functions in so, past any __setattr__."""
    module = types.ModuleType("watched")
    watching = guard.Guard([module])
    monkeypatch.setitem(module.__dict__, "f", abs)
    assert not watching.holds()


def test_a_method_patched_onto_a_class_breaks_its_guard(mode: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    watching = guard.Guard([Part])
    monkeypatch.setattr(Part, "method", lambda self: 2)
    assert not watching.holds()


def test_an_instance_setting_breaks_its_guard(mode: str) -> None:
    part = Part()
    part.flag = True  # type: ignore[attr-defined]
    watching = guard.Guard([part])
    part.flag = False  # type: ignore[attr-defined]
    assert not watching.holds()


def test_an_environment_variable_set_or_removed_breaks_its_guard(
        mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    watching = guard.Guard([os.environ])
    monkeypatch.setenv("TINYFW_GUARD_TEST", "1")
    assert not watching.holds()
    watching = guard.Guard([os.environ])
    monkeypatch.delenv("TINYFW_GUARD_TEST")
    assert not watching.holds()


def test_getenv_follows_the_environment(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """guard.getenv is os.getenv, remembered only until os.environ is written."""
    monkeypatch.delenv("TINYFW_GUARD_TEST", raising=False)
    assert guard.getenv("TINYFW_GUARD_TEST", "none") == "none"
    monkeypatch.setenv("TINYFW_GUARD_TEST", "2")
    assert guard.getenv("TINYFW_GUARD_TEST", "none") == "2"
    monkeypatch.setenv("TINYFW_GUARD_TEST", "")
    assert guard.getenv("TINYFW_GUARD_TEST", "none") == ""
    monkeypatch.delenv("TINYFW_GUARD_TEST")
    assert guard.getenv("TINYFW_GUARD_TEST", "none") == "none"


def test_debug_level_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from tinyfw.engine.debug import debug_level
    monkeypatch.setenv("DEBUG", "2")
    assert debug_level() == 2
    monkeypatch.setenv("DEBUG", "0")
    assert debug_level() == 0
