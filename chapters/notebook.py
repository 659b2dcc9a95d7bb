"""Notebooks: use("05") loads your chapter into tinyfw, and a cell that needs a task you have not
written says so in one line instead of a traceback, so the rest of the notebook still runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from chapters import learner
from chapters.grading import NOT_DONE, find_not_done
from chapters.tasks import Layout, Task, default_layout, discover, join_words, task_pointer

_installed: UnwrittenTasks | None = None  # the handler of the running IPython, if any


def use(chapter: str | int, impl: str | os.PathLike[str] | None = None) -> list[Path]:
    """Patches the learner's chapter into tinyfw (chapters.learner.use); inside IPython, a cell
    stopped by an unwritten task then prints one line and the notebook runs on."""
    files = learner.use(chapter, impl)
    shell = running_shell()
    if shell is not None:
        install(shell, impl)
    return files


def running_shell() -> Any:
    """The IPython shell running this code (a notebook's kernel), or None outside IPython."""
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython
    return get_ipython()


def install(shell: Any, impl: str | os.PathLike[str] | None = None,
            layout: Layout | None = None) -> UnwrittenTasks:
    """Makes shell report unwritten tasks in one line (again after a second use(): once)."""
    global _installed
    if _installed is not None:
        shell.events.unregister("post_run_cell", _installed.after_cell)
    _installed = UnwrittenTasks(impl, layout)
    shell.set_custom_exc((Exception,), _installed.handle)
    shell.events.register("post_run_cell", _installed.after_cell)
    return _installed


class UnwrittenTasks:
    """IPython hooks: a 'not done yet' error becomes one line and the cell counts as run."""

    def __init__(self, impl: str | os.PathLike[str] | None = None,
                 layout: Layout | None = None) -> None:
        self.layout = layout or default_layout()
        self.impl_dir = learner.resolve_impl(impl, self.layout)
        self.tasks: dict[str, Task] = {task.id: task for task in discover(self.layout)}
        self.missing: list[str] = []  # the unwritten tasks met so far, first met first
        self.forgiven: BaseException | None = None  # the error of this cell reported in a line

    def line_for(self, error: BaseException) -> str | None:
        """The one line for an error an unwritten task explains; None for any other error."""
        not_done = find_not_done(error)
        if not_done is not None:
            named = str(not_done)[len(NOT_DONE):].split()
            task_id = named[0].rstrip(":") if named else "?"
            if task_id not in self.missing:
                self.missing.append(task_id)
            task = self.tasks.get(task_id)
            where = task_pointer(task, self.impl_dir, self.layout) if task else str(not_done)
            return f"this section needs task {task_id} (not written yet): {where}"
        if isinstance(error, NameError) and self.missing:
            name = getattr(error, "name", None) or str(error)
            tasks = "task" if len(self.missing) == 1 else "tasks"
            return (f"this cell needs {name}, which a cell above did not make: it needs "
                    f"{tasks} {join_words(self.missing)} (not written yet)")
        return None

    def handle(self, shell: Any, kind: type[BaseException], error: BaseException,
               traceback: TracebackType | None, tb_offset: int | None = None) -> None:
        """IPython's custom exception handler: the one line, or the usual traceback."""
        line = self.line_for(error)
        if line is None:
            shell.showtraceback((kind, error, traceback), tb_offset=tb_offset,
                                running_compiled_code=True)
            return
        print(line)
        self.forgiven = error

    def after_cell(self, result: Any) -> None:
        """post_run_cell: a cell stopped by an unwritten task counts as run, so a notebook run
        from top to bottom goes on to the next cell."""
        error = getattr(result, "error_in_exec", None)
        if error is not None and error is self.forgiven:
            result.error_in_exec = None
        self.forgiven = None
