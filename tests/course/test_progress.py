"""python -m chapters: every chapter done with the solutions, 0 of N with fresh stubs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from chapters.tasks import chapter_dirs, default_layout, discover

LAYOUT = default_layout()


def progress_rows(impl: str) -> dict[str, str]:
    """Chapter number -> its row of the table printed by python -m chapters --impl=impl."""
    done = subprocess.run([sys.executable, "-m", "chapters", f"--impl={impl}"], cwd=LAYOUT.root,
                          capture_output=True, text=True, timeout=3600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {line[:2]: line for line in done.stdout.splitlines() if line[:2].isdigit()}
    assert set(rows) == set(chapter_dirs(LAYOUT)), done.stdout
    return rows


def task_count(number: str) -> int:
    """How many tasks the chapter's markers define."""
    return len(discover(LAYOUT, number))


def test_solutions_complete_every_chapter() -> None:
    """With the solutions each chapter shows N/N tasks and 'done'."""
    for number, row in progress_rows("solutions").items():
        total = task_count(number)
        words = row.split("(")[0].split()  # without "(N test(s) not graded here: ...)"
        assert total > 0 and words[-2:] == [f"{total}/{total}", "done"], row


def test_stubs_start_every_chapter_at_zero(tmp_path: Path) -> None:
    """With fresh stubs each chapter shows 0/N tasks and 'not started'."""
    subprocess.run([sys.executable, "-m", "tools.generate", "--out", str(tmp_path)],
                   cwd=LAYOUT.root, capture_output=True, timeout=300, check=True)
    for number, row in progress_rows(str(tmp_path / "exercises")).items():
        total = task_count(number)
        words = row.split("(")[0].split()
        assert words[-3:] == [f"0/{total}", "not", "started"], row
