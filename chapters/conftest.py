"""Grades chapters: patches each chapter's learner code into tinyfw and explains failures."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from chapters import learner
from chapters.grading import NOT_DONE, NOT_GRADED, find_not_done, take_shown
from chapters.tasks import (CHAPTER_RE, Layout, Task, TaskError, default_layout, discover,
                            task_pointer)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Adds --impl and --progress-json."""
    group = parser.getgroup("tinyfw course")
    group.addoption("--impl", default=None,
                    help="code to grade: exercises (default, or env TINYFW_IMPL), solutions, "
                         "or a folder holding NN_name chapter folders")
    group.addoption("--progress-json", default=None, metavar="PATH",
                    help="write each test's outcome and task to PATH")


def pytest_configure(config: pytest.Config) -> None:
    """Registers the task marker and the grader."""
    config.addinivalue_line("markers", "task(id): the exercise task (like 02.toposort) a test "
                                       "grades")
    config.addinivalue_line("markers", "needs_device(name): runs only where the device works "
                                       "(a GPU); elsewhere reported as not graded here")
    if not config.pluginmanager.has_plugin("tinyfw-grader"):
        config.pluginmanager.register(Grader(config), "tinyfw-grader")


SPEED_CHAPTER = 11  # where kernels get optimizations (tinyfw/codegen/opt.py)
_NOOPT_AS_GIVEN = os.environ.get("NOOPT")


def without_optimizations(chapter: str | None) -> None:
    """Chapters before 11 grade kernels as chapter 05 lowers them, with no optimizations
    (NOOPT=1), so their listings and the learner's lowering are what runs; chapter 11 and
    after get them, unless NOOPT was set to begin with."""
    if chapter is not None and int(chapter) < SPEED_CHAPTER:
        os.environ["NOOPT"] = "1"
    elif _NOOPT_AS_GIVEN is None:
        os.environ.pop("NOOPT", None)
    else:
        os.environ["NOOPT"] = _NOOPT_AS_GIVEN


class ShortFailure:
    """A failure shown as a few plain lines instead of a traceback."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.reprcrash = _Crash(text.splitlines()[0])

    def toterminal(self, writer: Any) -> None:
        """Writes the lines (pytest calls this to show the failure)."""
        for line in self.text.splitlines():
            writer.line(line)

    def __str__(self) -> str:
        return self.text


class _Crash:
    """The one-line message pytest's short summary shows for a failure."""

    def __init__(self, message: str) -> None:
        self.message = message


class Grader:
    """Patches the chapter of each test into tinyfw and turns failures into pointers."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.layout: Layout = default_layout()
        impl = config.getoption("impl", default=None)
        if impl not in (None, "exercises", "solutions"):
            impl = str(Path(config.invocation_params.dir, impl))
        self.impl: str | None = impl
        self._tasks: dict[str, Task] | None = None
        self.current: str | None = None
        self.load_error: Exception | None = None
        self.task_of: dict[str, str] = {}
        self.results: dict[str, dict[str, Any]] = {}
        self.collect_errors: list[dict[str, str]] = []
        self.usage_errors: list[str] = []
        self.load_errors: dict[str, str] = {}
        self.load_error_shown: set[str] = set()

    @property
    def tasks(self) -> dict[str, Task]:
        """Task id -> task, for every task of the course."""
        if self._tasks is None:
            try:
                self._tasks = {task.id: task for task in discover(self.layout)}
            except TaskError as error:
                self.usage_errors.append(str(error))
                raise pytest.UsageError(f"exercise markers: {error}") from error
        return self._tasks

    def chapter_of(self, path: Path) -> str | None:
        """Chapter number of a test file inside chapters/NN_name/, else None."""
        try:
            parts = path.resolve().relative_to(self.layout.chapters_dir.resolve()).parts
        except ValueError:
            return None
        match = CHAPTER_RE.match(parts[0]) if len(parts) > 1 else None
        return match["number"] if match else None

    def impl_dir(self) -> Path | None:
        """Folder of chapter folders being graded, None if --impl names no folder."""
        try:
            return learner.resolve_impl(self.impl, self.layout)
        except learner.LearnerLoadError:
            return None

    def pointer(self, task: Task) -> str:
        """'fill in f() in exercises/NN_x/m.py; read chapters/NN_x/README.md#anchor'."""
        return task_pointer(task, self.impl_dir() or self.layout.exercises_dir, self.layout)

    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        """Skips a link like chapters/02 -> 02_tensors met while collecting chapters/."""
        chapters = self.layout.chapters_dir.resolve()
        if collection_path.is_symlink() and collection_path.parent.resolve() == chapters:
            target = collection_path.resolve()
            if target.parent == chapters and target.is_dir():
                return True
        return None

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Checks that each chapter test names exactly one existing task of its chapter, then
        puts the chapter tests in task order."""
        problems = []
        for item in items:
            chapter = self.chapter_of(item.path)
            if chapter is None:
                continue
            markers = list(item.iter_markers(name="task"))
            if len(markers) != 1:
                problems.append(f"{item.nodeid}: needs exactly one @pytest.mark.task(\"NN.name\"),"
                                f" has {len(markers)}")
                continue
            args = markers[0].args
            task_id = args[0] if len(args) == 1 and isinstance(args[0], str) else None
            task = self.tasks.get(task_id or "")
            if task is None or task.chapter != chapter:
                known = ", ".join(t for t, v in self.tasks.items() if v.chapter == chapter)
                problems.append(f"{item.nodeid}: task marker {args!r} names no task of chapter "
                                f"{chapter} (tasks: {known or 'none'})")
                continue
            self.task_of[item.nodeid] = task_id or ""
            item.user_properties.append(("task", task_id))
        if problems:
            self.usage_errors += problems
            raise pytest.UsageError("task markers of chapter tests:\n  " + "\n  ".join(problems))
        self.sort_in_task_order(items)

    def sort_in_task_order(self, items: list[pytest.Item]) -> None:
        """Reorders chapter tests in place by chapter, then task order (the README's), then
        their collected order, so a fresh chapter fails first at its first task."""
        position = {task_id: index for index, task_id in enumerate(self.tasks)}
        slots = [index for index, item in enumerate(items) if item.nodeid in self.task_of]
        chapter_items = sorted((items[index] for index in slots),
                               key=lambda item: position[self.task_of[item.nodeid]])
        for index, item in zip(slots, chapter_items, strict=True):
            items[index] = item

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Makes sure the test's chapter, and only it, is patched in; fails it if that can't."""
        take_shown()  # nothing left over from the test before
        chapter = self.chapter_of(item.path)
        if chapter != self.current:
            learner.unuse()
            self.current, self.load_error = chapter, None
            without_optimizations(chapter)
            if chapter is not None:
                try:
                    learner.use(chapter, self.impl, self.layout)
                except (learner.LearnerLoadError, TaskError) as error:
                    self.load_error = error
        if self.load_error is not None:
            item.user_properties.append(("load_error", f"{chapter}: {self.load_error}"))
            if chapter in self.load_error_shown:  # said in full once: the others say one line
                first_line = str(self.load_error).splitlines()[0]
                pytest.skip(f"{first_line} (see the first failure of chapter {chapter})")
            self.load_error_shown.add(str(chapter))
            raise learner.LearnerLoadError(str(self.load_error))
        for marker in item.iter_markers(name="needs_device"):
            from tinyfw.device import Device
            try:
                Device[marker.args[0]]  # starts the device: fails where its hardware is missing
            except Exception as error:  # each backend fails in its own way; it says why
                why = str(error).splitlines()[0]
                pytest.skip(f"{NOT_GRADED} needs a working {marker.args[0]} device ({why})")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Any:
        """Rewrites the failure report of a chapter test into a pointer to what to do."""
        report = yield
        shown = take_shown() if call.when == "call" else {}
        task = self.tasks.get(self.task_of.get(item.nodeid, ""))
        if task is None or not report.failed or call.excinfo is None:
            return report
        error = call.excinfo.value
        not_done = find_not_done(error)
        if isinstance(error, learner.LearnerLoadError):
            report.longrepr = ShortFailure(f"{error}\nNo test of chapter {task.chapter} can run "
                                           "until this file loads: this one fails, the others "
                                           "are skipped.")
            report.when = "call"
        elif not_done is not None:
            named = str(not_done)[len(NOT_DONE):].split()
            stub_task = self.tasks.get(named[0] if named else "", task)
            report.longrepr = ShortFailure(f"{NOT_DONE} {stub_task.id}: {self.pointer(stub_task)}")
            report.when = "call"
        elif report.when == "call":
            sections = [*shown.items(), ("what to work on", f"{task.id}: {self.pointer(task)}")]
            for title, text in sections:
                if hasattr(report.longrepr, "addsection"):
                    report.longrepr.addsection(title, text)
                else:
                    report.longrepr = f"{report.longrepr}\n{title}:\n{text}"
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Records the outcome of each test for --progress-json (with xdist, in the controller)."""
        properties = dict(report.user_properties)
        entry = self.results.setdefault(report.nodeid, {
            "nodeid": report.nodeid, "task": properties.get("task"),
            "outcome": "passed", "message": ""})
        if "load_error" in properties:
            chapter, _, message = str(properties["load_error"]).partition(": ")
            self.load_errors.setdefault(chapter, message)
        if report.failed:
            if entry["outcome"] in ("passed", "xpassed"):
                entry["outcome"] = "failed" if report.when == "call" else "error"
                entry["message"] = report.longreprtext[:4000]
        elif report.skipped and entry["outcome"] == "passed":
            entry["outcome"] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
            if isinstance(report.longrepr, tuple):  # (file, line, "Skipped: reason")
                entry["message"] = str(report.longrepr[2]).removeprefix("Skipped: ")
        elif report.when == "call" and hasattr(report, "wasxfail"):
            entry["outcome"] = "xpassed"

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Records collection errors for --progress-json."""
        if report.failed:
            self.collect_errors.append({"nodeid": report.nodeid,
                                        "message": report.longreprtext[:4000]})

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Restores tinyfw and writes --progress-json."""
        learner.unuse()
        self.current = None
        path = self.config.getoption("progress_json", default=None)
        if not path or hasattr(self.config, "workerinput"):
            return
        progress = {"exitstatus": int(exitstatus), "impl": self.impl or "",
                    "tests": list(self.results.values()), "collect_errors": self.collect_errors,
                    "usage_errors": self.usage_errors, "load_errors": self.load_errors}
        target = Path(self.config.invocation_params.dir, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(progress, indent=1) + "\n", encoding="utf-8")
