"""exercises/ and solutions/ are exactly what tools.generate makes from tinyfw's markers.

A learner's work in exercises/ never fails these tests: each generated file states the id of
the text it was generated as (a line of its header), and a file a learner edited is up to date
when that id is what tinyfw's markers generate now. Where CI is set (a fresh clone, no one's
work in it) every file must be exactly as generated.
"""

from __future__ import annotations

import os
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
    """No generated file is missing, stale or extra: each is what tinyfw's markers generate,
    or a learner's edit of exactly that (in CI: exactly that)."""
    problems, unchecked = stale_files(LAYOUT, LAYOUT.root, strict=bool(os.environ.get("CI")))
    assert not problems, "run python -m tools.generate:\n" + "\n".join(problems)
    if unchecked:
        pytest.skip(f"not checked: {', '.join(unchecked)} (a learner's edits of no current "
                    "stub; every other generated file matches)")


def test_check_command_is_clean() -> None:
    """python -m tools.generate --check exits 0."""
    done = subprocess.run([sys.executable, "-m", "tools.generate", "--check"], cwd=LAYOUT.root,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
