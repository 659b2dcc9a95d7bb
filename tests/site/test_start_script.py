"""scripts/start.sh says before each step what it does and how long it takes, and shows progress.

The script runs for real, in a copy of the repo's layout where setup, mkdocs and Python are
stand-ins that print what the real ones print (mkdocs: a line per notebook it executes) and
take a few seconds, so that the heartbeat has something to beat through.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAKE_MKDOCS = """#!/bin/bash
echo "INFO    -  Building documentation to directory: build/site" >&2
for nb in chapters/*/notebook.ipynb; do
  echo "INFO    -  Converting notebook (execute=True): $PWD/$nb" >&2
  sleep 1
done
echo "INFO    -  Documentation built in 2.00 seconds" >&2
exit "${FAKE_MKDOCS_STATUS:-0}"
"""
FAKE_PYTHON = """#!/bin/bash
echo "python $*"
"""


def fake_repo(tmp_path: Path) -> Path:
    """start.sh and env.sh in a tree with two chapters, a slow setup, fake mkdocs and python."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("start.sh", "env.sh"):
        shutil.copy(ROOT / "scripts" / name, repo / "scripts" / name)
    (repo / "scripts" / "setup.sh").write_text("echo 'setup: fake'; sleep 2\n")
    (repo / "tinyfw").mkdir()
    (repo / "tinyfw" / "tour.py").touch()
    for chapter in ("01_one", "02_two"):
        (repo / "chapters" / chapter).mkdir(parents=True)
        (repo / "chapters" / chapter / "notebook.ipynb").touch()
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in (("mkdocs", FAKE_MKDOCS), ("python", FAKE_PYTHON)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return repo


def run_start(repo: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """start.sh in the fake repo, a heartbeat every second."""
    return subprocess.run(["bash", str(repo / "scripts" / "start.sh")], capture_output=True,
                          text=True, timeout=60, check=False,
                          env={**os.environ, "TINYFW_HEARTBEAT_S": "1", **env})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    return fake_repo(tmp_path)


def test_each_step_is_announced_with_its_time_then_shows_progress(repo: Path) -> None:
    done = run_start(repo)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    steps = [i for i, line in enumerate(lines) if re.match(r"start: step \d of 4, ", line)]
    assert len(steps) == 4, done.stdout
    # every announcement says how long its step takes, before the step's own output
    for i in steps[:3]:
        assert re.search(r"second|minute", lines[i]), lines[i]
    assert lines[steps[0] + 1] == "setup: fake"
    assert lines[steps[1] + 1] == "python -m tinyfw.tour"
    assert "serving the site at http://127.0.0.1:8000/" in lines[steps[3]]
    # progress: a numbered line per notebook, a heartbeat while setup and the site run
    assert "start: site: notebook 1 of 2, chapters/01_one/notebook.ipynb" in lines
    assert "start: site: notebook 2 of 2, chapters/02_two/notebook.ipynb" in lines
    assert any(line.startswith("start: setting up: still running") for line in lines)
    assert any(line.startswith("start: building the site: still running") for line in lines)
    assert any(re.fullmatch(r"start: site built in \d+ s", line) for line in lines)


def test_a_failed_site_build_stops_the_script_with_its_status(repo: Path) -> None:
    done = run_start(repo, FAKE_MKDOCS_STATUS="3")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "serving the site" not in done.stdout
