"""Loads a learner's chapter code into tinyfw: use("02") patches it in, unuse() restores.

Every change is made through one pytest.MonkeyPatch, which unuse() undoes. A function is
replaced where tinyfw looks it up. tinyfw's engine keeps what it made (schedules, kernels,
programs) under keys of what it was given, not of its own code, so each swap, made or undone,
ends with tinyfw.engine.caches.forget_built(): the next tensor is scheduled, lowered, rendered
and compiled by the code in place now.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import importlib.util
import os
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import CellType, FunctionType, ModuleType
from typing import Any

import pytest

from tinyfw.engine.caches import forget_built

from chapters.tasks import (ExerciseModule, Layout, chapter_dir, default_layout, discover,
                            display_path, exercise_modules, normalize_chapter)

IMPL_ENV = "TINYFW_IMPL"
PROBE = "__tinyfw_ran__"  # the function a learner's file calls as each task's code starts
MISSING = object()
PATCHABLE = (FunctionType, staticmethod, classmethod, property)


class LearnerLoadError(Exception):
    """The learner's file of a chapter cannot be loaded (syntax error, crash at import, ...)."""


@dataclass(frozen=True)
class Swap:
    """One name use() set: owner.name (a class's or a module's) held original, now value."""

    owner: Any
    name: str
    original: Any
    value: Any


@dataclass
class _Patch:
    """What use() changed (undone by its MonkeyPatch), and how often the learner's code ran."""

    chapter: str
    impl_dir: Path
    monkeypatch: pytest.MonkeyPatch = field(default_factory=pytest.MonkeyPatch)
    files: list[Path] = field(default_factory=list)
    swaps: list[Swap] = field(default_factory=list)
    module_names: list[str] = field(default_factory=list)
    layout: Layout = field(default_factory=default_layout)
    tasks: set[str] = field(default_factory=set)
    calls: dict[str, Counter[str]] = field(default_factory=dict)  # chapter -> unit -> calls
    # count_calls: where each task's code starts in the learner's files (a probe each), and
    # how often it ran; the units counted by their calls instead (their task's lines not found)
    probes: list[tuple[str, str, str]] = field(default_factory=list)  # (chapter, unit, task)
    runs: list[int] = field(default_factory=list)
    whole_units: set[tuple[str, str]] = field(default_factory=set)  # (chapter, unit)

    def ran(self, index: int) -> None:
        """Counts one start of the task's code of probe index (a learner's file calls it)."""
        self.runs[index] += 1

    def set(self, owner: Any, name: str, value: Any) -> None:
        """Sets owner.name (a class's attribute or a module's global), to be undone later."""
        self.swaps.append(Swap(owner, name, owner.__dict__.get(name, MISSING), value))
        _put(self.monkeypatch, owner, name, value)


def _put(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, value: Any) -> None:
    """Sets (or, for MISSING, deletes) a class's attribute or a module's global, undoably."""
    if isinstance(owner, type):
        if value is not MISSING:
            monkeypatch.setattr(owner, name, value, raising=False)
        else:
            monkeypatch.delattr(owner, name, raising=False)
    elif value is not MISSING:
        monkeypatch.setitem(owner.__dict__, name, value)
    else:
        monkeypatch.delitem(owner.__dict__, name, raising=False)


_active: _Patch | None = None


def resolve_impl(impl: str | os.PathLike[str] | None = None,
                 layout: Layout | None = None) -> Path:
    """Folder of chapter folders to grade: exercises (default), solutions, or a path."""
    layout = layout or default_layout()
    choice = os.fspath(impl) if impl is not None else os.environ.get(IMPL_ENV) or "exercises"
    if choice == "exercises":
        return layout.exercises_dir
    if choice == "solutions":
        return layout.solutions_dir
    path = Path(choice).expanduser().resolve()
    if not path.is_dir():
        raise LearnerLoadError(f"--impl {choice}: no such folder (expected 'exercises', "
                               "'solutions' or a folder holding NN_name chapter folders)")
    return path


def _load_error(path: Path, layout: Layout, error: BaseException) -> LearnerLoadError:
    """A LearnerLoadError naming the file and line where loading it failed."""
    shown = display_path(path, layout)
    if isinstance(error, SyntaxError):
        code = (error.text or "").rstrip("\n")
        detail = f"\n    {code.strip()}" if code.strip() else ""
        if detail and error.offset:
            caret = error.offset - 1 - (len(code) - len(code.lstrip()))
            detail += "\n    " + " " * max(caret, 0) + "^"
        return LearnerLoadError(f"cannot load {shown}, line {error.lineno}: "
                                f"{type(error).__name__}: {error.msg}{detail}")
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if Path(frame.filename) == path]
    line = f", line {frames[-1].lineno}" if frames else ""
    code = f"\n    {frames[-1].line}" if frames and frames[-1].line else ""
    return LearnerLoadError(f"cannot load {shown}{line}: "
                            f"{type(error).__name__}: {error}{code}")


# Exercise files whose name changed when tinyfw's flat files moved into folders (issue 10):
# new name -> the name a learner's older copy has.
RENAMED = {"ops_numpy.py": "interpreter.py", "lower.py": "codegen.py", "cstyle.py": "renderer_c.py",
           "opencl_c.py": "renderer_cl.py", "ops_cl.py": "runtime_cl.py",
           "cuda_c.py": "renderer_cuda.py", "ops_cuda.py": "runtime_cuda.py",
           "wgsl.py": "renderer_wgsl.py", "ops_webgpu.py": "runtime_webgpu.py"}


def probed(tree: ast.Module, first: int, last: int, index: int) -> bool:
    """Puts a call PROBE(index) before the first statement of lines first..last (1-based) in
    the outermost block holding one: the start of a task's code. False if there is none."""
    level: list[ast.AST] = [tree]
    while level:
        for node in level:
            for _name, value in ast.iter_fields(node):
                if not isinstance(value, list):
                    continue
                for position, statement in enumerate(value):
                    if isinstance(statement, ast.stmt) and first <= statement.lineno <= last:
                        call = ast.Call(ast.Name(PROBE, ast.Load()), [ast.Constant(index)], [])
                        probe = ast.copy_location(ast.Expr(call), statement)
                        value.insert(position, ast.fix_missing_locations(probe))
                        return True
        level = [child for node in level for child in ast.iter_child_nodes(node)]
    return False


def load_file(path: Path, name: str, layout: Layout,
              probes: Sequence[tuple[int, int, int]] = (),
              ran: Callable[[int], None] | None = None) -> ModuleType:
    """Runs a learner's file as a fresh module called name; LearnerLoadError if it fails.
    probes: (first line, last line, index) of code that calls ran(index) as it starts; the
    indexes of those with no statement are put in the module's __tinyfw_unprobed__."""
    if not path.is_file():
        old = path.with_name(RENAMED.get(path.name, path.name))
        if old != path and old.is_file():
            raise LearnerLoadError(f"cannot load {display_path(path, layout)}: your work is in "
                                   f"{old.name}, the file's old name; rename it to {path.name}")
        shown = display_path(path, layout)
        fix = (f" (get the stub back with: python -m chapters reset {shown})"
               if path.resolve().is_relative_to(layout.exercises_dir.resolve()) else "")
        raise LearnerLoadError(f"cannot load {shown}: no such file{fix}")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        text = path.read_text(encoding="utf-8")
        if probes:
            tree = ast.parse(text, str(path))
            module.__dict__["__tinyfw_unprobed__"] = {
                index for first, last, index in probes if not probed(tree, first, last, index)}
            module.__dict__[PROBE] = ran
            code = compile(tree, str(path), "exec", dont_inherit=True)
        else:
            code = compile(text, str(path), "exec", dont_inherit=True)
        exec(code, module.__dict__)
    except Exception as error:
        sys.modules.pop(name, None)
        raise _load_error(path, layout, error) from None
    return module


def _rebind_class(obj: Any, old: type, new: type) -> Any:
    """The same function/descriptor with its zero-argument super() cell pointing at new."""
    if isinstance(obj, (staticmethod, classmethod)):
        return type(obj)(_rebind_class(obj.__func__, old, new))
    if type(obj) is property:
        fget, fset, fdel = [None if f is None else _rebind_class(f, old, new)
                            for f in (obj.fget, obj.fset, obj.fdel)]
        return property(fget, fset, fdel, obj.__doc__)
    if not isinstance(obj, FunctionType) or "__class__" not in obj.__code__.co_freevars:
        return obj
    index = obj.__code__.co_freevars.index("__class__")
    assert obj.__closure__ is not None
    if obj.__closure__[index].cell_contents is not old:
        return obj
    cells = list(obj.__closure__)
    cells[index] = CellType(new)
    copy = FunctionType(obj.__code__, obj.__globals__, obj.__name__, obj.__defaults__,
                        tuple(cells))
    copy.__kwdefaults__ = obj.__kwdefaults__
    copy.__dict__.update(obj.__dict__)
    for attribute in ("__doc__", "__qualname__", "__module__", "__annotations__"):
        setattr(copy, attribute, getattr(obj, attribute))
    return copy


def _defined_in(obj: Any, module: ModuleType) -> bool:
    """Whether a function or class was defined by the given module's code."""
    return getattr(obj, "__module__", None) == module.__name__


def _swap_everywhere(patch: _Patch, original: Any, new: Any) -> None:
    """Re-points every module global that is original to new (tests imported it by name too)."""
    if original is MISSING:
        return
    for module in list(sys.modules.values()):
        names = getattr(module, "__dict__", None)
        if not isinstance(names, dict):
            continue
        for attribute, value in list(names.items()):
            if value is original:
                patch.set(module, attribute, new)


def _counted(value: Any, calls: Counter[str], qualname: str) -> Any:
    """The same function or descriptor, counting each call in calls[qualname]."""
    if isinstance(value, (staticmethod, classmethod)):
        return type(value)(_counted(value.__func__, calls, qualname))
    if type(value) is property:
        fget, fset, fdel = [None if f is None else _counted(f, calls, qualname)
                            for f in (value.fget, value.fset, value.fdel)]
        return property(fget, fset, fdel, value.__doc__)
    if not isinstance(value, FunctionType):
        return value
    function: Callable[..., Any] = value

    @functools.wraps(function)
    def counting(*args: Any, **kwargs: Any) -> Any:
        """Counts the call, then makes it."""
        __tracebackhide__ = True  # pytest shows the learner's line, not this one
        calls[qualname] += 1
        return function(*args, **kwargs)
    return counting


def _patch_module(patch: _Patch, exercise: ExerciseModule, learner: ModuleType,
                  layout: Layout, only: Collection[str] | None, count_calls: bool) -> None:
    """Puts a learner module's units (of the tasks in only, or all) and additions into tinyfw;
    re-points its shared globals (to tinyfw's code, for the units not put in)."""
    target = importlib.import_module(exercise.module)
    shown = display_path(Path(learner.__file__ or ""), layout)
    tasks_of: dict[str, set[str]] = {}
    for region in exercise.regions:
        tasks_of.setdefault(region.qualname, set()).add(region.task_id)
    top_units: set[str] = set()
    for qualname, task_ids in tasks_of.items():
        *owners, name = qualname.split(".")
        target_owner: Any = target
        learner_owner: Any = learner
        for owner in owners:
            target_owner = target_owner.__dict__[owner]
            learner_owner = learner_owner.__dict__.get(owner)
            if not isinstance(learner_owner, type):
                raise LearnerLoadError(f"{shown} lacks class {'.'.join(owners)} "
                                       f"(needed for {qualname}); restore it from "
                                       f"{display_path(exercise.path, layout)}")
        if name not in learner_owner.__dict__:
            raise LearnerLoadError(f"{shown} lacks {qualname}(); restore it from "
                                   f"{display_path(exercise.path, layout)}")
        if only is not None and not task_ids <= set(only):
            continue  # a unit with a task not chosen stays tinyfw's
        patch.tasks |= task_ids
        value = learner_owner.__dict__[name]
        if owners:
            value = _rebind_class(value, learner_owner, target_owner)
        if count_calls:
            calls = patch.calls.setdefault(exercise.chapter, Counter())
            calls[qualname] = 0
            unprobed = learner.__dict__.get("__tinyfw_unprobed__", set())
            indexes = [index for index, (chapter, unit, _task) in enumerate(patch.probes)
                       if (chapter, unit) == (exercise.chapter, qualname)]
            if not indexes or any(index in unprobed for index in indexes):
                patch.whole_units.add((exercise.chapter, qualname))
                value = _counted(value, calls, qualname)  # (its calls: the best we can)
        if owners:
            patch.set(target_owner, name, value)
        else:
            top_units.add(name)
            original = target.__dict__.get(name, MISSING)
            patch.set(target, name, value)
            _swap_everywhere(patch, original, value)
            learner.__dict__[name] = value  # (counted) when the learner's own code calls it
    for name, value in list(vars(learner).items()):
        if name.startswith("__") and name.endswith("__"):
            continue
        shared = target.__dict__.get(name, MISSING)
        if shared is MISSING:
            if isinstance(value, (FunctionType, type)) and _defined_in(value, learner):
                patch.set(target, name, value)
            continue
        if isinstance(value, type) and isinstance(shared, type) and _defined_in(value, learner):
            _add_methods(patch, value, shared)
        if name not in top_units:
            learner.__dict__[name] = shared


def _add_methods(patch: _Patch, learner_class: type, target_class: type) -> None:
    """Copies the methods a learner added to a class (ones tinyfw's class lacks) onto it."""
    for name, value in learner_class.__dict__.items():
        if name not in target_class.__dict__ and isinstance(value, PATCHABLE):
            patch.set(target_class, name, _rebind_class(value, learner_class, target_class))
        elif isinstance(value, type) and isinstance(target_class.__dict__.get(name), type):
            _add_methods(patch, value, target_class.__dict__[name])


def use(chapter: str | int, impl: str | os.PathLike[str] | None = None,
        layout: Layout | None = None) -> list[Path]:
    """Patches the learner's code of a chapter into tinyfw; returns the files loaded."""
    return use_many([chapter], impl, layout)


def use_many(chapters: Sequence[str | int], impl: str | os.PathLike[str] | None = None,
             layout: Layout | None = None, *, only: Collection[str] | None = None,
             count_calls: bool = False) -> list[Path]:
    """Patches the learner's code of several chapters into tinyfw at once (their own
    framework, as far as they have written it); returns the files loaded. With only, just
    those tasks' code is the learner's (tinyfw's stays for the rest); with count_calls, calls()
    then says how often each of the learner's functions put in was called."""
    global _active
    unuse()
    layout = layout or default_layout()
    numbers = [normalize_chapter(chapter) for chapter in chapters]
    impl_dir = resolve_impl(impl, layout)
    patch = _Patch(chapter=numbers[0] if len(numbers) == 1 else ",".join(numbers),
                   impl_dir=impl_dir, layout=layout)
    loaded: list[tuple[ExerciseModule, ModuleType]] = []
    try:
        for number in numbers:
            folder = impl_dir / chapter_dir(number, layout).name
            for exercise in exercise_modules(layout):
                if exercise.chapter != number:
                    continue
                name = f"_learner_{number}_{exercise.module.replace('.', '_')}"
                path = folder / exercise.basename
                probes = _probes(patch, exercise, path, layout) if count_calls else []
                loaded.append((exercise, load_file(path, name, layout, probes, patch.ran)))
                patch.module_names.append(name)
                patch.files.append(path)
        for exercise, learner in loaded:
            _patch_module(patch, exercise, learner, layout, only, count_calls)
    except BaseException:
        _restore(patch)
        raise
    _active = patch
    forget_built()  # (what the engine made with tinyfw's code)
    return list(patch.files)


def _probes(patch: _Patch, exercise: ExerciseModule, path: Path,
            layout: Layout) -> list[tuple[int, int, int]]:
    """(first line, last line, probe index) of each task's code in the learner's copy of an
    exercise file, found against its stub (chapters/reset.py); a probe index is registered in
    patch for each. Regions whose lines cannot be found get none (their unit's calls count)."""
    from chapters.reset import region_lines, stub_of  # (tools.generate: only when counting)

    stub = stub_of(exercise, layout)
    if stub is None or not path.is_file():
        return []
    current = path.read_text(encoding="utf-8").splitlines(keepends=True)
    regions = sorted(exercise.regions, key=lambda region: region.open_line)
    found = []
    for region, lines in zip(regions, region_lines(current, stub)):
        if lines is None:
            continue
        found.append((lines[1] + 1, lines[2], len(patch.probes)))
        patch.probes.append((exercise.chapter, region.qualname, region.task_id))
        patch.runs.append(0)
    return found


def _restore(patch: _Patch) -> None:
    """Undoes a patch and forgets its learner modules."""
    patch.monkeypatch.undo()
    patch.swaps.clear()
    for name in patch.module_names:
        sys.modules.pop(name, None)
    forget_built()  # (what the engine made with the learner's code)


def unuse() -> None:
    """Restores tinyfw to its own code."""
    global _active
    if _active is not None:
        patch, _active = _active, None
        _restore(patch)


def active() -> tuple[str, Path] | None:
    """(chapter, implementation folder) now patched in, or None."""
    return None if _active is None else (_active.chapter, _active.impl_dir)


def patched_tasks() -> set[str]:
    """The tasks whose code is now the learner's (empty when nothing is patched in)."""
    return set() if _active is None else set(_active.tasks)


def calls() -> dict[str, dict[str, int]]:
    """Chapter -> the learner's functions patched in with count_calls, each with how often the
    learner's task code in it ran so far (0 for never): the starts of the task's own lines, not
    the function's calls (a function may be called and run tinyfw's path around the task). A
    function whose task lines could not be found in the learner's file counts its calls."""
    if _active is None:
        return {}
    counts = {chapter: dict(units) for chapter, units in sorted(_active.calls.items())}
    for (chapter, unit, _task), runs in zip(_active.probes, _active.runs):
        if unit in counts.get(chapter, {}) and (chapter, unit) not in _active.whole_units:
            counts[chapter][unit] += runs
    return counts


def task_runs() -> dict[str, int]:
    """Task -> how often the learner's code of it ran so far, for the tasks patched in with
    count_calls whose lines were found (calls() counts the others by their functions' calls)."""
    if _active is None:
        return {}
    runs: dict[str, int] = {}
    for (chapter, unit, task), count in zip(_active.probes, _active.runs):
        if task in _active.tasks and unit in _active.calls.get(chapter, {}) \
                and (chapter, unit) not in _active.whole_units:
            runs[task] = runs.get(task, 0) + count
    return runs


def counted_by_calls() -> set[tuple[str, str]]:
    """(chapter, unit) of the functions calls() counts by their calls (lines not found)."""
    return set() if _active is None else set(_active.whole_units)


@contextlib.contextmanager
def reference(*task_ids: str) -> Iterator[None]:
    """Runs tinyfw's own code for the named tasks of the active chapter inside the block, so a
    test of one task does not depend on the learner's other tasks of the same chapter."""
    if _active is None:
        yield
        return
    tasks = {task.id: task for chapter in _active.chapter.split(",")
             for task in discover(_active.layout, chapter)}
    learner_code = []
    for task_id in task_ids:
        for unit in tasks[task_id].units:
            owner: Any = importlib.import_module(unit.module)
            *owners, name = unit.qualname.split(".")
            for part in owners:
                owner = owner.__dict__[part]
            learner_code.append(owner.__dict__[name])
    swapped = [swap for swap in _active.swaps
               if any(swap.owner.__dict__.get(swap.name) is code for code in learner_code)]
    with pytest.MonkeyPatch.context() as monkeypatch:
        for swap in swapped:
            _put(monkeypatch, swap.owner, swap.name, swap.original)
        forget_built()
        try:
            yield
        finally:
            monkeypatch.undo()
            forget_built()
