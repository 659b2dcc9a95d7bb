"""chapters/grade_cache.py: a grading run is reused only when every file and setting it reads
is the same."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from chapters.grade_cache import CACHE_ENV, cached_run
from chapters.tasks import Layout


def make_layout(root: Path) -> Layout:
    """A tiny project: tinyfw/, chapters/ with one chapter, solutions/ for it."""
    for name in ("tinyfw/__init__.py", "chapters/tasks.py", "chapters/01_x/test_a.py",
                 "solutions/01_x/a.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n")
    return Layout(root)


def test_a_run_is_reused_only_on_the_same_files(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Same files: the stored result; a changed exercise, test, framework file or setting: a
    new run; without TINYFW_GRADE_CACHE: always a run; a run with no report is not kept."""
    layout = make_layout(tmp_path / "project")
    folder, impl = layout.chapters_dir / "01_x", tmp_path / "project" / "solutions"
    runs: list[int] = []

    def run() -> tuple[int, dict | None, str]:
        runs.append(1)
        return 0, {"tests": [len(runs)]}, "output"

    def grade() -> int:
        progress = cached_run(folder, impl, layout, run)[1]
        assert progress is not None
        return progress["tests"][0]

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    assert (grade(), grade()) == (1, 1)
    copy = tmp_path / "copy"
    shutil.copytree(impl, copy)
    assert cached_run(folder, copy, layout, run)[1] == {"tests": [1]}  # same bytes elsewhere
    for changed in (impl / "01_x" / "a.py", folder / "test_a.py",
                    layout.package_dir / "__init__.py", layout.chapters_dir / "tasks.py"):
        changed.write_text(changed.read_text() + "# changed\n")
        before = len(runs)
        assert grade() == before + 1 and grade() == before + 1, changed
    monkeypatch.setenv("NOOPT", "0" if os.environ.get("NOOPT") == "1" else "1")
    assert grade() == len(runs) == 6
    monkeypatch.delenv(CACHE_ENV)
    assert grade() == 7 and grade() == 8
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache2"))
    assert cached_run(folder, impl, layout, lambda: (-1, None, "timed out"))[1] is None
    assert grade() == 9
