"""Prints the course progress table, grading each chapter apart (in parallel subprocesses).

    python -m chapters                  # every chapter
    python -m chapters 05               # chapter 05 only (several: python -m chapters 05 07)
    python -m chapters -j 2 --impl solutions
    python -m chapters reset 11.search  # start a task again (or a file: reset exercises/...)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chapters import learner
from chapters.grade_cache import cached_run
from chapters.grading import NOT_GRADED
from chapters.tasks import (Layout, TaskError, chapter_dirs, chapter_title, default_layout,
                            discover, normalize_chapter)

TIMEOUT_S = 1800
MAX_WORKERS = 8


@dataclass(frozen=True)
class ChapterProgress:
    """How far the graded code of one chapter is."""

    number: str
    title: str
    passed: int
    total: int
    status: str
    detail: str = ""
    finished: tuple[str, ...] = ()  # the tasks whose tests all pass
    ungraded: tuple[str, ...] = ()  # the tasks whose every test needs hardware this machine lacks


def run_chapter(folder: Path, impl: str | None, layout: Layout) -> tuple[int, dict | None, str]:
    """Runs one chapter's tests in a subprocess: (exit code, progress json or None, output).
    Within a test session that sets TINYFW_GRADE_CACHE, a run on the same files happens once."""
    try:
        impl_dir: Path | None = learner.resolve_impl(impl, layout)
    except learner.LearnerLoadError:
        impl_dir = None
    return cached_run(folder, impl_dir, layout, lambda: _run_chapter(folder, impl, layout))


def _run_chapter(folder: Path, impl: str | None, layout: Layout) -> tuple[int, dict | None, str]:
    """Runs one chapter's tests in a subprocess, always."""
    with tempfile.TemporaryDirectory(prefix="tinyfw-progress-") as scratch:
        progress_path = Path(scratch) / "progress.json"
        command = [sys.executable, "-m", "pytest", str(folder), "-q", "-p", "no:cacheprovider",
                   "--progress-json", str(progress_path)]
        if impl is not None:
            command += ["--impl", impl]
        try:
            done = subprocess.run(command, cwd=layout.root, capture_output=True, text=True,
                                  timeout=TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            return -1, None, f"timed out after {TIMEOUT_S} s"
        progress = None
        if progress_path.is_file():
            progress = json.loads(progress_path.read_text(encoding="utf-8"))
        return done.returncode, progress, done.stdout + done.stderr


def short_title(number: str, title: str) -> str:
    """A chapter title without a leading copy of its number ('01 · Scalar' -> 'Scalar')."""
    match = re.match(r"(?i)(chapter\s+)?0*(\d+)\s*[·:.|\u2013\u2014-]?\s+", title)
    return title[match.end():] if match and int(match[2]) == int(number) else title


def not_graded_here(test: dict[str, Any]) -> bool:
    """A test that needs hardware this machine lacks: it counts neither as passed nor failed."""
    return test["outcome"] == "skipped" and test["message"].startswith(NOT_GRADED)


def finished_tasks(task_ids: list[str], tests: list[dict[str, Any]]) -> list[str]:
    """The tasks, of task_ids and in their order, that are finished: each has a graded test
    and all its graded tests passed (tests are a --progress-json's, each naming its task)."""
    outcomes: dict[str, list[str]] = {task_id: [] for task_id in task_ids}
    for test in tests:
        if not not_graded_here(test):
            outcomes.setdefault(test["task"], []).append(test["outcome"])
    return [task_id for task_id in task_ids
            if outcomes[task_id] and all(outcome == "passed" for outcome in outcomes[task_id])]


def ungraded_tasks(task_ids: list[str], tests: list[dict[str, Any]]) -> list[str]:
    """The tasks, of task_ids, that have tests and none graded here (no such hardware)."""
    tests_of: dict[str, list[dict[str, Any]]] = {task_id: [] for task_id in task_ids}
    for test in tests:
        tests_of.setdefault(test["task"], []).append(test)
    return [task_id for task_id in task_ids
            if tests_of[task_id] and all(not_graded_here(test) for test in tests_of[task_id])]


def grade_chapter(number: str, folder: Path, impl: str | None, layout: Layout) -> ChapterProgress:
    """Progress of one chapter: tasks whose tests all pass, out of the tasks it has."""
    title = short_title(number, chapter_title(folder))
    try:
        task_ids = [task.id for task in discover(layout, number)]
    except TaskError as error:
        return ChapterProgress(number, title, 0, 0, "broken", str(error))
    code, progress, output = run_chapter(folder, impl, layout)
    if progress is None or code not in (0, 1) or progress["collect_errors"]:
        lines = [line for line in output.strip().splitlines() if line.strip()]
        return ChapterProgress(number, title, 0, len(task_ids), "broken",
                               lines[-1] if lines else f"exit code {code}")
    not_graded = sum(1 for test in progress["tests"] if not_graded_here(test))
    finished = tuple(finished_tasks(task_ids, progress["tests"]))
    ungraded = tuple(ungraded_tasks(task_ids, progress["tests"]))
    passed = len(finished)
    if not task_ids:
        status = "no tasks"
    elif passed == len(task_ids):
        status = "done"
    elif passed == 0 and not any(test["outcome"] == "passed" for test in progress["tests"]):
        status = "not started"
    else:
        status = "in progress"
    load_error = next(iter(progress["load_errors"].values()), "")
    if load_error:
        return ChapterProgress(number, title, passed, len(task_ids), "broken",
                               load_error.split("\n")[0], finished, ungraded)
    detail = f"{not_graded} test(s) not graded here: no such hardware" if not_graded else ""
    return ChapterProgress(number, title, passed, len(task_ids), status, detail, finished,
                           ungraded)


def table(rows: list[ChapterProgress]) -> str:
    """The progress table as text."""
    names = [f"{row.number} {row.title}" for row in rows]
    width = max([len("chapter")] + [len(name) for name in names])
    lines = [f"{'chapter':<{width}}  {'tasks':>7}  status", "-" * (width + 24)]
    for name, row in zip(names, rows):
        line = f"{name:<{width}}  {f'{row.passed}/{row.total}':>7}  {row.status}"
        lines.append(line + (f"  ({row.detail})" if row.detail else ""))
    return "\n".join(lines)


def default_workers() -> int:
    """Parallel chapter runs when -j is not given: one per CPU core, at most MAX_WORKERS."""
    return max(1, min(os.cpu_count() or 1, MAX_WORKERS))


def selected(folders: dict[str, Path], chapters: list[str]) -> dict[str, Path]:
    """The chapter folders named on the command line (all when none is); TaskError if one is
    not a chapter."""
    if not chapters:
        return folders
    numbers = [normalize_chapter(chapter) for chapter in chapters]
    unknown = [number for number in numbers if number not in folders]
    if unknown:
        raise TaskError(f"no chapter {', '.join(unknown)} (chapters: {', '.join(folders)})")
    return {number: folders[number] for number in sorted(set(numbers))}


def main(argv: list[str] | None = None, layout: Layout | None = None) -> int:
    """Command line entry: grade the chapters asked for, each in its own subprocess, and print
    the table; `reset TARGET` starts a task or a file again (chapters/reset.py)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["reset"]:
        from chapters import reset
        return reset.main(argv[1:], layout)
    parser = argparse.ArgumentParser(prog="python -m chapters", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapters", nargs="*", metavar="NN",
                        help="chapters to grade, like 05 or 5 or 05_codegen (default: all)")
    parser.add_argument("--impl", default=None,
                        help="exercises (default, or env TINYFW_IMPL), solutions, or a folder")
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help=f"chapters graded at once (default: one per CPU core, at most "
                             f"{MAX_WORKERS})")
    args = parser.parse_args(argv)
    if args.jobs is not None and args.jobs < 1:
        parser.error("-j needs a number of workers of 1 or more")
    layout = layout or default_layout()
    impl = args.impl
    if impl not in (None, "exercises", "solutions"):
        impl = str(Path(impl).resolve())
    try:
        folders = selected(chapter_dirs(layout), args.chapters)
    except TaskError as error:
        print(f"error: {error}")
        return 2 if args.chapters else 0
    workers = max(1, min(len(folders), args.jobs or default_workers()))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        rows = list(pool.map(lambda item: grade_chapter(item[0], item[1], impl, layout),
                             folders.items()))
    print(table(rows) if rows else "no chapters yet")
    print("\nGrade one chapter with: python -m chapters NN (its row), "
          "python -m pytest chapters/NN (each test)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
