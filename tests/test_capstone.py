"""python -m chapters.capstone trains the MNIST MLP with the learner's chapters loaded at once,
and names the chapters still to finish."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from chapters.tasks import chapter_dirs, default_layout

LAYOUT = default_layout()


def capstone(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "chapters.capstone", *args], cwd=LAYOUT.root,
                          capture_output=True, text=True, timeout=600, check=True)
    return done.stdout


def test_with_every_chapter_done_it_is_your_framework() -> None:
    out = capstone("--impl", "solutions", "--steps", "60")
    accuracy = float(out.split("test accuracy ")[1].split()[0])
    assert accuracy > 0.8, out
    assert "every chapter is yours" in out and "stands in" not in out


def test_missing_chapters_are_named(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "tools.generate", "--out", str(tmp_path)],
                   cwd=LAYOUT.root, capture_output=True, timeout=300, check=True)
    out = capstone("--impl", str(tmp_path / "exercises"), "--steps", "20")
    for folder in chapter_dirs(LAYOUT).values():
        assert f"{folder.name}" in out and "still to write" in out
    assert "test accuracy" in out and "still to finish" in out
