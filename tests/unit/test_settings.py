"""engine/settings.py reads the environment at each call, as os.getenv would."""
from __future__ import annotations

import os

import pytest

from tinyfw.engine.settings import beam_width, debug_level, fusing, optimizing, setting


def test_a_change_of_the_environment_is_read_at_the_next_call(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NOOPT", "BEAM", "FMA", "DEBUG"):
        monkeypatch.delenv(name, raising=False)
    assert (optimizing(), beam_width(), fusing(), debug_level()) == (True, 0, True, 0)
    monkeypatch.setenv("NOOPT", "1")
    monkeypatch.setenv("BEAM", "4")
    monkeypatch.setenv("FMA", "0")
    os.environ["DEBUG"] = "3"  # (as a notebook cell sets it; monkeypatch restores it)
    assert (optimizing(), beam_width(), fusing(), debug_level()) == (False, 4, False, 3)
    monkeypatch.setenv("DEBUG", "loud")
    assert debug_level() == 0
    del os.environ["NOOPT"]
    assert optimizing()


@pytest.mark.parametrize("value", ["", "0", "1", "é ünïcode", "x" * 1000])
def test_setting_is_os_getenv(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("TINYFW_SETTING_CHECK", value)
    assert setting("TINYFW_SETTING_CHECK", "d") == os.getenv("TINYFW_SETTING_CHECK", "d")
    monkeypatch.delenv("TINYFW_SETTING_CHECK")
    assert setting("TINYFW_SETTING_CHECK", "d") == "d"
