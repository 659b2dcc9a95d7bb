"""Chapter grading runs kept for reuse within one test session (opt-in, TINYFW_GRADE_CACHE).

tinyfw's own test suite grades the course several times over: the CI proof
(tests/course/test_grading), the progress table (tests/course/test_progress) and the capstone
each grade every chapter on the solutions and on fresh stubs. A chapter's grade depends only on
the files its run reads (the chapter folder, the graded chapter folder of --impl, the harness in
chapters/, tinyfw/) and a few settings, so a run whose inputs are byte for byte those of an
earlier run gives the same result: the suite sets TINYFW_GRADE_CACHE to a folder of its own and
each distinct run happens once. Learners never see this: without the variable every grading
runs.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chapters.tasks import Layout

CACHE_ENV = "TINYFW_GRADE_CACHE"
# Environment variables that differ between the test session's workers (or tests) and do not
# change what a chapter's tests do; every other variable is part of a run's inputs. COLUMNS and
# LINES are the terminal's size, which GNU readline writes into the C environment of a process
# that loads it: a subprocess inherits them where the process itself never sees them in
# os.environ, and without them here the suite's grading runs missed the cache, each run twice.
VOLATILE = ("PYTEST_", CACHE_ENV)
TERMINAL_SIZE = ("COLUMNS", "LINES")

Result = tuple[int, "dict[str, Any] | None", str]


def _add_tree(hasher: Any, root: Path) -> None:
    """Adds every file under root (names and bytes, compiled caches left out) to hasher."""
    hasher.update(f"\0tree {root.name}\0".encode())
    if root.is_file():
        hasher.update(root.read_bytes())
        return
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            hasher.update(f"\0{path.relative_to(root)}\0".encode())
            hasher.update(path.read_bytes())


def run_key(folder: Path, impl_dir: Path, layout: Layout) -> str:
    """A digest of everything a grading run of folder against impl_dir reads."""
    hasher = hashlib.sha256(sys.executable.encode())
    for name, value in sorted(os.environ.items()):
        if not name.startswith(VOLATILE) and name not in TERMINAL_SIZE:
            hasher.update(f"\0{name}={value}".encode())
    _add_tree(hasher, folder)
    _add_tree(hasher, impl_dir / folder.name)
    _add_tree(hasher, layout.package_dir)
    for harness in sorted(layout.chapters_dir.glob("*.py")):
        _add_tree(hasher, harness)
    return hasher.hexdigest()


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Holds an exclusive lock on path while the block runs (other processes wait)."""
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cached_run(folder: Path, impl_dir: Path | None, layout: Layout,
               run: Callable[[], Result]) -> Result:
    """run()'s result, taken from TINYFW_GRADE_CACHE when an earlier run had the same inputs;
    a run that gave no progress report (a crash, a time-out) is never kept."""
    cache = os.environ.get(CACHE_ENV)
    if not cache or impl_dir is None:
        return run()
    folder_cache = Path(cache)
    folder_cache.mkdir(parents=True, exist_ok=True)
    key = run_key(folder, impl_dir, layout)
    stored = folder_cache / f"{key}.json"
    with _locked(folder_cache / f"{key}.lock"):
        if stored.is_file():
            code, progress, output = json.loads(stored.read_text(encoding="utf-8"))
            return code, progress, output
        result = run()
        if result[1] is not None:
            scratch = stored.with_suffix(".tmp")
            scratch.write_text(json.dumps(result), encoding="utf-8")
            scratch.replace(stored)
        return result
