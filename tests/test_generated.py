"""exercises/ and solutions/ are exactly what tools.generate makes from tinyfw's markers.

The committed copies are checked (git's HEAD), not a learner's working files: work in exercises/
never fails these tests. Without git (a tarball), the files whose working copy differs cannot
be checked: the test says which and skips.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from chapters.tasks import anchor_problems, default_layout, discover
from tools.generate import stale_files

LAYOUT = default_layout()


def test_markers_are_well_formed() -> None:
    """Every exercise region in tinyfw parses (discover raises TaskError otherwise)."""
    discover(LAYOUT)


def test_each_anchor_is_a_heading_of_its_chapter_readme() -> None:
    """Each task's #anchor is a heading id of chapters/NN_name/README.md."""
    assert anchor_problems(LAYOUT) == []


def test_generated_files_are_up_to_date() -> None:
    """No generated file is missing, stale or extra: each committed copy (or, not committed
    yet, the working copy) is what tinyfw's markers generate."""
    problems, unchecked = stale_files(LAYOUT, LAYOUT.root)
    assert not problems, "run python -m tools.generate and commit:\n" + "\n".join(problems)
    if unchecked:
        pytest.skip(f"no git repository: the committed copies of {', '.join(unchecked)} "
                    "cannot be read (their working copies differ: your work?); every other "
                    "generated file matches")


def test_check_command_is_clean() -> None:
    """python -m tools.generate --check exits 0."""
    done = subprocess.run([sys.executable, "-m", "tools.generate", "--check"], cwd=LAYOUT.root,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
