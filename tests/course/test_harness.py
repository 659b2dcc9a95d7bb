"""Unit and end-to-end tests of the grading harness on a fake framework (tests/course/fixtures)."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chapters import learner
from chapters.__main__ import ChapterProgress, short_title, table
from chapters.grading import expect_close, expect_equal
from chapters.tasks import (Layout, TaskError, anchor_problems, chapter_dirs, chapter_title,
                            discover, heading_ids, slugify)
from tools import generate

REPO = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "harness_repo"
HARNESS_FILES = ["chapters/__init__.py", "chapters/__main__.py", "chapters/conftest.py",
                 "chapters/grading.py", "chapters/learner.py", "chapters/reset.py",
                 "chapters/tasks.py",
                 "tools/__init__.py", "tools/generate.py"]
LAYOUT = Layout(FIXTURE, "fakefw")


# ---------------------------------------------------------------- fixtures and helpers


@pytest.fixture
def fakefw(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    """The fake framework importable as fakefw; restored and forgotten afterwards."""
    monkeypatch.syspath_prepend(str(FIXTURE))
    for name in ("fakefw.counter", "fakefw.shapes", "fakefw.sums"):
        importlib.import_module(name)
    yield sys.modules["fakefw"]
    learner.unuse()
    for name in [name for name in sys.modules if name.split(".")[0] == "fakefw"]:
        del sys.modules[name]


@pytest.fixture
def generated(tmp_path: Path) -> Path:
    """Folder holding exercises/ and solutions/ generated from the fake framework."""
    generate.write_files(LAYOUT, tmp_path)
    return tmp_path


def learner_copy(generated: Path, tmp_path: Path, kind: str = "solutions") -> Path:
    """A learner's folder of chapter folders, copied from generated exercises or solutions."""
    target = tmp_path / "learner"
    shutil.copytree(generated / kind, target)
    return target


def edit(path: Path, old: str, new: str) -> None:
    """Replaces one exact piece of a file's text."""
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def write_package(root: Path, files: dict[str, str]) -> Layout:
    """A layout of a throwaway package 'pkg' made of the given files."""
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return Layout(root, "pkg")


def mini_repo(dest: Path) -> Path:
    """A runnable copy of the repo: our harness, the fake framework as tinyfw, fake chapters."""
    shutil.copytree(FIXTURE / "fakefw", dest / "tinyfw")
    shutil.copytree(FIXTURE / "chapters", dest / "chapters")
    (dest / "tools").mkdir()
    for relative in HARNESS_FILES:
        shutil.copy(REPO / relative, dest / relative)
    (dest / "pytest.ini").write_text(
        "[pytest]\naddopts = -p no:cacheprovider --import-mode=importlib"
        " -p no:hypothesispytest\n")
    (dest / "chapters" / "02").symlink_to("02_more")
    run(dest, "-m", "tools.generate")
    return dest


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Runs python with args in cwd, returning its output: TINYFW_IMPL unset, and CI unset (the
    mini repo plays a learner's clone, where the check of the generated files is lenient)."""
    unset = {learner.IMPL_ENV, "CI"}
    env = {name: value for name, value in os.environ.items() if name not in unset}
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False, env=env)


def grade(repo: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Runs pytest on the mini repo's chapters; returns the process and its progress json."""
    progress = repo / "progress.json"
    progress.unlink(missing_ok=True)
    done = run(repo, "-m", "pytest", *args, "-q", "--progress-json", str(progress))
    assert progress.is_file(), done.stdout + done.stderr
    return done, json.loads(progress.read_text())


def outcomes(progress: dict[str, Any]) -> dict[str, str]:
    """Test name -> outcome."""
    return {test["nodeid"].split("::")[-1]: test["outcome"] for test in progress["tests"]}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mini repo shared by the end-to-end tests that only read it."""
    return mini_repo(tmp_path_factory.mktemp("repo"))


# ---------------------------------------------------------------- tasks.py


def test_discover_finds_tasks_units_and_anchors() -> None:
    """Tasks are grouped by id across regions, with every unit they span."""
    tasks = {task.id: task for task in discover(LAYOUT)}
    assert list(tasks) == ["01.add", "01.double", "01.total", "02.area", "02.perimeter"]
    assert [(u.module, u.qualname) for u in tasks["01.add"].units] == [
        ("fakefw.counter", "Num.__add__"), ("fakefw.counter", "Tally.__add__")]
    assert [u.qualname for u in tasks["01.double"].units] == ["Num.doubled", "Num.zero"]
    assert tasks["02.perimeter"].units[0].qualname == "perimeter"
    assert tasks["01.double"].anchor == "doubling-and-zero"
    assert tasks["02.area"].files == (FIXTURE / "fakefw" / "shapes.py",)
    assert [task.id for task in discover(LAYOUT, "2")] == ["02.area", "02.perimeter"]


REGION = "# >>> exercise 03.job #a-job\n"
END = "# <<< exercise\n"


@pytest.mark.parametrize("source, message", [
    ("def f():\n    " + REGION + "    return 1\n", "never closed"),
    ("def f():\n    return 1\n    " + END, "without an opening"),
    ("def f():\n    " + REGION + "    " + REGION + "    return 1\n    " + END + "    " + END,
     "opened inside"),
    ("def f():\n    # >>> exercise 3.job #a-job\n    return 1\n    " + END, "malformed"),
    ("def f():\n    # >>> exercise 03.job\n    return 1\n    " + END, "malformed"),
    (REGION + "x = 1\n" + END, "inside the body of one function"),
    ("class A:\n    " + REGION + "    x = 1\n    " + END, "inside the body of one function"),
    ("class A:\n    " + REGION + "    def f(self):\n        return 1\n    " + END,
     "inside the body of one function"),
    ("def f():\n    " + REGION + "    # only a comment\n    " + END + "    pass\n",
     "holds no code"),
    ("def f():\n    " + REGION + "    return 1\n" + END, "not indented like"),
    ("def f():\n    " + REGION + "    x = 1\n\n\ndef g():\n    return 2\n    " + END,
     "inside the body of one function"),
    ("def f():\n    " + REGION + "    return 1\n    " + END +
     "def g():\n    # >>> exercise 04.job #b\n    return 1\n    " + END, "in one module"),
    ("def f(x):\n    for i in x:\n        y = i\n    " + REGION + "        return y\n    " + END,
     "whole statements"),
], ids=["unclosed", "stray-close", "nested", "bad-number", "no-anchor", "module-level",
        "class-body", "around-def", "empty", "indent", "two-functions", "two-chapters",
        "deeper-code"])
def test_bad_markers_are_rejected(tmp_path: Path, source: str, message: str) -> None:
    """Unclosed, nested, malformed or misplaced regions raise TaskError naming the file."""
    layout = write_package(tmp_path, {"__init__.py": "", "mod.py": source})
    with pytest.raises(TaskError, match=message) as caught:
        discover(layout)
    assert "mod.py" in str(caught.value)


def test_unit_is_innermost_patchable_function(tmp_path: Path) -> None:
    """A method of a nested class is Outer.Inner.f; a nested def belongs to its outer def."""
    layout = write_package(tmp_path, {"mod.py": """\
        class Outer:
            class Inner:
                def f(self):
                    # >>> exercise 05.inner #x
                    return 1
                    # <<< exercise

        def g():
            def helper():
                # >>> exercise 05.nested #x
                return 2
                # <<< exercise
            return helper()
        """})
    units = {task.id: task.units[0].qualname for task in discover(layout)}
    assert units == {"05.inner": "Outer.Inner.f", "05.nested": "g"}


def test_one_task_has_one_anchor(tmp_path: Path) -> None:
    """All regions of a task must point at the same README heading."""
    source = ("def f():\n    # >>> exercise 03.job #one\n    return 1\n    " + END +
              "def g():\n    # >>> exercise 03.job #two\n    return 1\n    " + END)
    layout = write_package(tmp_path, {"mod.py": source})
    with pytest.raises(TaskError, match="anchors #one, #two"):
        discover(layout)


def test_slugify_matches_mkdocs_toc() -> None:
    """Heading ids follow mkdocs' default toc slugs (checked against Markdown 3.x)."""
    markdown = textwrap.dedent("""\
        # Demo: numbers
        ## Doubling and `zero`
        ## The `Value.__add__` method!
        ## Über café — naïve
        ## Doubling and zero
        ## Links [here](http://x) and **bold** *it*
        ## Custom {#my-id}
        ## 1.2 Ordering the graph: toposort()
        ```
        # not a heading
        ```
        """)
    assert heading_ids(markdown) == [
        "demo-numbers", "doubling-and-zero", "the-value__add__-method", "uber-cafe-naive",
        "doubling-and-zero_1", "links-here-and-bold-it", "my-id",
        "12-ordering-the-graph-toposort"]
    assert slugify("  Ordering the graph ") == "ordering-the-graph"


def test_anchor_problems_name_missing_headings(tmp_path: Path) -> None:
    """An anchor that is no heading of the chapter README is reported."""
    shutil.copytree(FIXTURE, tmp_path / "repo")
    layout = Layout(tmp_path / "repo", "fakefw")
    assert anchor_problems(layout) == []
    readme = layout.chapters_dir / "02_more" / "README.md"
    edit(readme, "## The perimeter", "## Perimeter")
    assert anchor_problems(layout) == [
        "task 02.perimeter: #the-perimeter is not a heading of chapters/02_more/README.md"]
    shutil.rmtree(layout.chapters_dir / "01_demo")
    assert "no chapter folder chapters/01_*/" in anchor_problems(layout)[0]


def test_chapter_folders_and_titles() -> None:
    """Chapter folders are found by number; titles come from the README's first heading."""
    folders = chapter_dirs(LAYOUT)
    assert {number: path.name for number, path in folders.items()} == {
        "01": "01_demo", "02": "02_more"}
    assert chapter_title(folders["01"]) == "Demo: numbers"


# ---------------------------------------------------------------- tools/generate.py


def test_exercise_file_replaces_regions_with_stubs(generated: Path) -> None:
    """Each region becomes a TODO and a raise, indented like its marker; imports are absolute."""
    text = (generated / "exercises" / "01_demo" / "counter.py").read_text()
    assert text.startswith("# Exercises of chapter 01, generated from fakefw/counter.py")
    assert "python -m pytest chapters/01_demo\n" in text
    assert "from fakefw.base import twice\n" in text
    assert ">>> exercise" not in text and "<<< exercise" not in text
    assert ("        other = other if isinstance(other, Num) else Num(other)\n"
            "        # TODO 01.add: write this part. The chapter explains it:\n"
            "        #   chapters/01_demo/README.md#adding-numbers\n"
            '        raise NotImplementedError("not done yet: 01.add")\n') in text
    assert ('    # TODO 01.total: write this part. The chapter explains it:\n'
            '    #   chapters/01_demo/README.md#summing-many\n'
            '    raise NotImplementedError("not done yet: 01.total")\n') in text
    assert text.count("not done yet: 01.double") == 2
    shapes = (generated / "exercises" / "02_more" / "shapes.py").read_text()
    assert "from fakefw import base\nfrom fakefw.base import (\n    twice,\n)\n" in shapes
    assert 'raise ValueError("negative side")' in shapes and "def half" not in shapes


def test_solution_file_is_the_source_with_a_header(generated: Path) -> None:
    """The solution differs from the source only by its header and absolute imports."""
    source = (FIXTURE / "fakefw" / "counter.py").read_text().splitlines()
    solution = (generated / "solutions" / "01_demo" / "counter.py").read_text().splitlines()
    assert solution[0].startswith("# Solutions of chapter 01, generated from fakefw/counter.py")
    body = solution[len(solution) - len(source):]
    assert [line for line in body if line not in source] == ["from fakefw.base import twice"]
    assert len([line for line in solution[:len(solution) - len(source)]]) == 4
    assert solution[3].startswith("# generated text id: ")


def test_generated_files_import_cleanly(fakefw: types.ModuleType, generated: Path) -> None:
    """Exercise and solution files import without error (stubs raise only when called)."""
    for path in sorted(generated.rglob("*.py")):
        module = learner.load_file(path, f"_probe_{path.parent.parent.name}_{path.stem}", LAYOUT)
        del sys.modules[module.__name__]


def test_relative_imports_of_any_level(tmp_path: Path) -> None:
    """from . / from .. / from .x imports become absolute imports of the package."""
    layout = write_package(tmp_path, {
        "__init__.py": "", "top.py": "X = 1\n", "sub/__init__.py": "", "sub/leaf.py": "Y = 2\n",
        "sub/work.py": """\
            from .. import top
            from ..top import X
            from . import leaf
            from .leaf import Y


            def f():
                from .leaf import Y as Z
                # >>> exercise 06.f #f
                return X + Y + Z + top.X + leaf.Y
                # <<< exercise
            """})
    (tmp_path / "chapters" / "06_six").mkdir(parents=True)
    text = generate.generated_files(layout)["solutions/06_six/work.py"]
    assert ("from pkg import top\nfrom pkg.top import X\nfrom pkg.sub import leaf\n"
            "from pkg.sub.leaf import Y\n") in text
    assert "    from pkg.sub.leaf import Y as Z\n" in text


def test_check_lists_missing_stale_and_extra_files(tmp_path: Path) -> None:
    """--check exits 1 naming each bad file; a learner's edit is no problem (except with
    --strict); writing refuses to overwrite it unless told to, keeping a copy, and is
    deterministic."""
    assert generate.main(["--check", "--out", str(tmp_path)], LAYOUT) == 1
    assert generate.main(["--out", str(tmp_path)], LAYOUT) == 0
    first = {p: p.read_bytes() for p in sorted(tmp_path.rglob("*.py"))}
    assert generate.main(["--check", "--out", str(tmp_path)], LAYOUT) == 0
    counter = tmp_path / "exercises" / "01_demo" / "counter.py"
    counter.write_text(counter.read_text() + "# edited\n")
    assert generate.stale_files(LAYOUT, tmp_path) == ([], [])
    assert generate.stale_files(LAYOUT, tmp_path, strict=True) == (
        ["stale:   exercises/01_demo/counter.py"], [])
    older = tmp_path / "exercises" / "02_more" / "shapes.py"
    lines = older.read_text().splitlines(keepends=True)
    older.write_text(generate.with_id("".join(lines[:3] + lines[4:]) + "# older markers\n"))
    (tmp_path / "solutions" / "02_more" / "shapes.py").unlink()
    (tmp_path / "solutions" / "02_more" / "old.py").write_text("# a learner's notes\n")
    assert generate.stale_files(LAYOUT, tmp_path) == (
        ["stale:   exercises/02_more/shapes.py", "missing: solutions/02_more/shapes.py"], [])
    assert generate.stale_files(LAYOUT, tmp_path, strict=True)[0][-1] == (
        "extra:   solutions/02_more/old.py")
    assert generate.main(["--check", "--out", str(tmp_path)], LAYOUT) == 1
    assert generate.main(["--out", str(tmp_path)], LAYOUT) == 3
    assert counter.read_text().endswith("# edited\n")
    assert generate.main(["--out", str(tmp_path), "--overwrite-my-work"], LAYOUT) == 0
    assert {p: p.read_bytes() for p in first} == first
    kept = list((tmp_path / generate.BACKUP_DIR).glob("*/exercises/01_demo/counter.py"))
    assert [path.read_text()[-9:] for path in kept] == ["# edited\n"]
    assert (tmp_path / "solutions" / "02_more" / "old.py").exists()


def test_write_removes_only_generated_extras(tmp_path: Path, generated: Path) -> None:
    """A generated file no longer wanted is removed when it is as generated; one a learner
    edited is kept unless told otherwise; a hand-written one is left."""
    stale = generated / "exercises" / "03_gone" / "gone.py"
    stale.parent.mkdir()
    text = "# Exercises of chapter 03, generated from x by `python -m tools.generate`.\n"
    stale.write_text(text + "# edited\n")
    with pytest.raises(generate.LearnersWorkError, match="exercises/03_gone/gone.py"):
        generate.write_files(LAYOUT, generated)
    stale.write_text(generate.with_id(text))
    changes = generate.write_files(LAYOUT, generated)
    assert changes == ["removed: exercises/03_gone/gone.py"]
    assert not stale.parent.exists()


def test_generate_refuses_a_region_of_partial_statements(tmp_path: Path) -> None:
    """A region that does not hold whole statements of one block is refused."""
    layout = write_package(tmp_path, {"mod.py": """\
        def f(x):
            if x:
                # >>> exercise 07.f #f
                return 1
            else:
                # <<< exercise
                return 2
        """})
    (tmp_path / "chapters" / "07_seven").mkdir(parents=True)
    with pytest.raises(TaskError, match="whole statements of one block"):
        generate.generated_files(layout)


# ---------------------------------------------------------------- chapters/learner.py


def test_stubs_raise_not_done_until_unuse(fakefw: types.ModuleType, generated: Path) -> None:
    """With the stubs in, tinyfw's classes and functions raise 'not done yet'; unuse restores."""
    from fakefw import counter
    from fakefw.counter import Num
    learner.use("01", generated / "exercises", LAYOUT)
    assert learner.active() == ("01", generated / "exercises")
    with pytest.raises(NotImplementedError, match="^not done yet: 01.add$"):
        Num(1.0) + Num(2.0)
    with pytest.raises(NotImplementedError, match="01.double"):
        _ = Num(1.0).doubled
    with pytest.raises(NotImplementedError, match="01.total"):
        counter.total([])
    learner.unuse()
    assert (Num(1.0) + Num(2.0)).value == 3.0 and Num(2.0).doubled == 4.0
    assert counter.total([Num(1.0)]).value == 1.0 and learner.active() is None


def test_solutions_run_in_tinyfw(fakefw: types.ModuleType, generated: Path) -> None:
    """The solutions work when patched in, super() included, and build tinyfw's classes."""
    from fakefw.counter import Num, Tally, mean
    learner.use(1, generated / "solutions", LAYOUT)
    result = Tally(1.0) + 2.0 + 3.0
    assert type(result) is Tally and (result.value, result.count) == (6.0, 2)
    assert type(Num.zero()) is Num and mean([Num(1.0), Num(3.0)]) == 2.0
    assert Num.__add__.__module__.startswith("_learner_01")


def test_learner_code_and_additions_are_patched_in(fakefw: types.ModuleType,
                                                   generated: Path, tmp_path: Path) -> None:
    """Units and learner-added helpers and methods run inside tinyfw; unuse removes them."""
    folder = learner_copy(generated, tmp_path, "exercises")
    path = folder / "01_demo" / "counter.py"
    edit(path, '        raise NotImplementedError("not done yet: 01.add")\n',
         "        return Num(plus(self.value, other.value), (self, other))\n")
    edit(path, '    raise NotImplementedError("not done yet: 01.total")\n',
         "    return Num(sum(num.value for num in nums)).triple()\n")
    edit(path, "    def scaled(self)", "    def triple(self) -> Num:\n"
         "        return Num(3 * self.value)\n\n    def scaled(self)")
    edit(path, "\ndef total(", "\ndef plus(a: float, b: float) -> float:\n    return a + b + 100\n"
         "\n\ndef total(")
    from fakefw import counter
    learner.use("01", folder, LAYOUT)
    result = counter.Num(1.0) + counter.Num(2.0)
    assert type(result) is counter.Num and result.value == 103.0
    assert counter.total([counter.Num(1.0), counter.Num(2.0)]).value == 9.0
    assert counter.Num(1.0).scaled().value == 3.0  # not a unit: tinyfw's own code
    assert counter.plus(1, 1) == 102
    learner.unuse()
    assert not hasattr(counter.Num, "triple") and not hasattr(counter, "plus")
    assert (counter.Num(1.0) + counter.Num(2.0)).value == 3.0


def test_functions_imported_by_name_elsewhere_are_swapped(fakefw: types.ModuleType,
                                                          generated: Path) -> None:
    """Modules that imported a unit by name (tinyfw's or tests') call the learner's unit."""
    from fakefw import shapes, sums
    holder = types.ModuleType("holder")
    holder.area = shapes.area
    sys.modules["_harness_holder"] = holder
    try:
        learner.use("02", generated / "exercises", LAYOUT)
        for call in (holder.area, shapes.area, lambda w, h: sums.total_area([(w, h)])):
            with pytest.raises(NotImplementedError, match="02.area"):
                call(1.0, 2.0)
        learner.unuse()
        assert holder.area(2.0, 3.0) == 6.0 and sums.total_area([(1.0, 2.0)]) == 2.0
    finally:
        del sys.modules["_harness_holder"]


def test_use_switches_chapters(fakefw: types.ModuleType, generated: Path) -> None:
    """use() of another chapter first restores the previous one."""
    from fakefw import shapes
    from fakefw.counter import Num
    learner.use("01", generated / "exercises", LAYOUT)
    learner.use("02", generated / "exercises", LAYOUT)
    assert (Num(1.0) + Num(1.0)).value == 2.0
    with pytest.raises(NotImplementedError):
        shapes.area(1.0, 1.0)


def test_syntax_error_names_file_and_line(fakefw: types.ModuleType, generated: Path,
                                          tmp_path: Path) -> None:
    """A learner file that does not parse gives a LearnerLoadError with file and line."""
    folder = learner_copy(generated, tmp_path)
    path = folder / "01_demo" / "counter.py"
    edit(path, "        return Num(self.value + other.value, (self, other))\n",
         "        return Num(self.value + other.value, (self, other)\n")
    line = path.read_text().splitlines().index(
        "        return Num(self.value + other.value, (self, other)") + 1
    from fakefw.counter import Num
    original = Num.__add__
    with pytest.raises(learner.LearnerLoadError) as caught:
        learner.use("01", folder, LAYOUT)
    assert f"01_demo/counter.py, line {line}: SyntaxError: '(' was never closed" in str(
        caught.value)
    assert Num.__add__ is original and learner.active() is None


def test_crash_at_import_names_file_and_line(fakefw: types.ModuleType, generated: Path,
                                             tmp_path: Path) -> None:
    """A learner file that raises while importing gives the error and its line."""
    folder = learner_copy(generated, tmp_path)
    path = folder / "02_more" / "shapes.py"
    edit(path, "\n\ndef area(", "\nRATIO = 1 / 0\n\n\ndef area(")
    line = path.read_text().splitlines().index("RATIO = 1 / 0") + 1
    with pytest.raises(learner.LearnerLoadError,
                       match=rf"02_more/shapes.py, line {line}: ZeroDivisionError"):
        learner.use("02", folder, LAYOUT)


def test_missing_unit_or_file_is_a_load_error(fakefw: types.ModuleType, generated: Path,
                                              tmp_path: Path) -> None:
    """Deleting a unit, or the whole file, is reported rather than graded as tinyfw's code."""
    folder = learner_copy(generated, tmp_path)
    edit(folder / "02_more" / "shapes.py", "def perimeter(", "def perimeter_renamed(")
    with pytest.raises(learner.LearnerLoadError, match=r"lacks perimeter\(\)"):
        learner.use("02", folder, LAYOUT)
    (folder / "01_demo" / "counter.py").unlink()
    with pytest.raises(learner.LearnerLoadError, match="no such file"):
        learner.use("01", folder, LAYOUT)


def test_impl_choice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """impl defaults to exercises, TINYFW_IMPL overrides, and a folder must exist."""
    monkeypatch.delenv(learner.IMPL_ENV, raising=False)
    assert learner.resolve_impl(None, LAYOUT) == FIXTURE / "exercises"
    monkeypatch.setenv(learner.IMPL_ENV, "solutions")
    assert learner.resolve_impl(None, LAYOUT) == FIXTURE / "solutions"
    assert learner.resolve_impl(tmp_path, LAYOUT) == tmp_path.resolve()
    with pytest.raises(learner.LearnerLoadError, match="no such folder"):
        learner.resolve_impl(tmp_path / "nope", LAYOUT)


# ---------------------------------------------------------------- chapters/grading.py


class FakeTensor:
    """Anything with .numpy(), like a tinyfw Tensor."""

    def __init__(self, values: Any) -> None:
        self.values = values

    def numpy(self) -> np.ndarray:
        """The values as a numpy array."""
        return np.asarray(self.values, dtype=np.float32)


def failure(check: Any, *args: Any, **kwargs: Any) -> str:
    """The AssertionError message a check raises."""
    with pytest.raises(AssertionError) as caught:
        check(*args, **kwargs)
    return str(caught.value)


def test_expect_close_accepts_close_values() -> None:
    """Scalars, lists, arrays and tensors within tolerance pass; NaN matches NaN."""
    expect_close(1.0 + 1e-7, 1.0)
    expect_close([1.0, float("nan")], np.array([1.0, np.nan]))
    expect_close(FakeTensor([[1.0, 2.0]]), [[1.0, 2.0000001]], what="t")
    expect_close(1.1, 1.0, rtol=0.2)
    expect_equal(FakeTensor([1, 2]), [1.0, 2.0], dtype="float32")
    expect_equal([True, False], np.array([True, False]))


def test_expect_close_message_shows_values_and_first_difference() -> None:
    """The message names what, both shapes, dtypes, values and the first differing index."""
    actual = FakeTensor([[1.0, 2.0, 3.0], [4.0, 5.0, 7.0]])
    message = failure(expect_close, actual, [[1, 2, 3], [4, 5, 6]], what="x.grad")
    assert message.splitlines() == [
        "x.grad: values differ (rtol=1e-05, atol=1e-06)",
        "  expected  shape (2, 3) int64:",
        "      [[1, 2, 3],",
        "       [4, 5, 6]]",
        "  actual    shape (2, 3) float32:",
        "      [[1., 2., 3.],",
        "       [4., 5., 7.]]",
        "  first difference at index (1, 2): expected 6, actual 7.0 (1 of 6 elements differ)"]


def test_expect_messages_for_shape_dtype_scalars_and_big_arrays() -> None:
    """Shape and dtype mismatches are named; scalars read plainly; big arrays are abbreviated."""
    assert failure(expect_equal, [1, 2, 3], [[1, 2, 3]]).startswith("shapes differ\n")
    assert "dtype is int64, expected int32" in failure(expect_equal, np.array([1]), [1],
                                                       dtype="int32")
    assert failure(expect_close, 3.0, 3.5, what="loss").splitlines() == [
        "loss: values differ (rtol=1e-05, atol=1e-06)",
        "  expected  float64 scalar: 3.5", "  actual    float64 scalar: 3.0"]
    big = failure(expect_equal, np.zeros(1000), np.ones(1000))
    assert "..." in big and len(big) < 600 and "(1000 of 1000 elements differ)" in big
    assert "compares numbers only" in failure(expect_close, None, 1.0)


# ---------------------------------------------------------------- the grader, end to end


def test_mini_repo_generated_files_are_clean(repo: Path) -> None:
    """python -m tools.generate --check passes after generating, fails after an edit."""
    assert run(repo, "-m", "tools.generate", "--check").returncode == 0


def test_stubs_fail_with_one_line_pointers(repo: Path) -> None:
    """Against stubs every test fails (no error) with 'not done yet: task: fill in ...'."""
    done, progress = grade(repo, "chapters")
    assert done.returncode == 1
    assert set(outcomes(progress).values()) == {"failed"} and len(progress["tests"]) == 7
    assert ("not done yet: 01.add: fill in Num.__add__() and Tally.__add__() in "
            "exercises/01_demo/counter.py; read chapters/01_demo/README.md#adding-numbers"
            ) in done.stdout.splitlines()
    by_name = {test["nodeid"].split("::")[-1]: test for test in progress["tests"]}
    assert by_name["test_total_and_mean"]["task"] == "01.total"
    assert by_name["test_perimeter"]["message"] == (
        "not done yet: 02.perimeter: fill in perimeter() in exercises/02_more/shapes.py; "
        "read chapters/02_more/README.md#the-perimeter")
    assert "Traceback" not in done.stdout and "raise NotImplementedError" not in done.stdout


def test_solutions_pass(repo: Path) -> None:
    """With --impl=solutions every test passes."""
    done, progress = grade(repo, "chapters", "--impl=solutions")
    assert done.returncode == 0, done.stdout
    assert set(outcomes(progress).values()) == {"passed"} and len(progress["tests"]) == 7


def test_chapter_link_grades_once(repo: Path) -> None:
    """A link chapters/02 -> 02_more grades chapter 02 when named, and is not collected twice."""
    done, progress = grade(repo, "chapters/02", "--impl=solutions")
    assert done.returncode == 0 and len(progress["tests"]) == 3
    done = run(repo, "-m", "pytest", "chapters", "--collect-only", "-q")
    assert "7 tests collected" in done.stdout


def test_wrong_answer_keeps_message_and_gets_pointer(repo: Path, tmp_path: Path) -> None:
    """A wrong answer fails with its own message plus the task's pointer line."""
    folder = learner_copy(repo, tmp_path)
    edit(folder / "02_more" / "shapes.py", "return width * height", "return width + height")
    done, progress = grade(repo, "chapters/02_more", f"--impl={folder}")
    assert outcomes(progress) == {"test_area": "failed", "test_area_everywhere": "failed",
                                  "test_perimeter": "passed"}
    assert "area(2, 3): values differ" in done.stdout
    assert "not done yet" not in done.stdout
    assert f"02.area: fill in area() in {folder}/02_more/shapes.py; read " \
           "chapters/02_more/README.md#rectangle-area" in done.stdout


def test_broken_learner_file_fails_only_its_chapter(repo: Path, tmp_path: Path) -> None:
    """A syntax error fails the chapter's first test (not an error) with the whole message and
    skips its other tests with one line each; other chapters grade."""
    folder = learner_copy(repo, tmp_path)
    edit(folder / "01_demo" / "counter.py", "    def __radd__(self", "    def __radd__(self,,")
    done, progress = grade(repo, "chapters", f"--impl={folder}")
    results = outcomes(progress)
    assert [results[name] for name in ("test_add", "test_add_counts", "test_doubled_and_zero",
                                       "test_total_and_mean")] == ["failed"] + ["skipped"] * 3
    assert done.stdout.count("def __radd__(self,,") == 1, done.stdout
    assert [results[name] for name in ("test_area", "test_area_everywhere", "test_perimeter")
            ] == ["passed"] * 3
    assert "01_demo/counter.py, line" in done.stdout and "SyntaxError" in done.stdout
    assert "error" not in done.stdout.splitlines()[-1]


def test_stub_called_from_a_fixture_fails_not_errors(tmp_path: Path) -> None:
    """A fixture that calls a stub makes the test fail with the pointer, not error."""
    repo = mini_repo(tmp_path / "repo")
    (repo / "chapters" / "01_demo" / "test_fixture.py").write_text(textwrap.dedent("""\
        import pytest
        from tinyfw.counter import Num

        @pytest.fixture(scope="module")
        def zero():
            return Num.zero()

        @pytest.mark.task("01.double")
        def test_uses_zero(zero):
            assert zero.value == 0.0
        """))
    done, progress = grade(repo, "chapters/01_demo/test_fixture.py")
    assert outcomes(progress) == {"test_uses_zero": "failed"}
    assert "not done yet: 01.double: fill in Num.doubled() and Num.zero()" in done.stdout
    assert "1 failed" in done.stdout and "error" not in done.stdout


def test_task_markers_are_checked_at_collection(tmp_path: Path) -> None:
    """Each chapter test must carry exactly one task marker naming a task of its chapter."""
    repo = mini_repo(tmp_path / "repo")
    (repo / "chapters" / "01_demo" / "test_extra.py").write_text(textwrap.dedent("""\
        import pytest

        def test_none():
            pass

        @pytest.mark.task("01.add")
        @pytest.mark.task("01.add")
        def test_two():
            pass

        @pytest.mark.task("02.area")
        def test_other_chapter():
            pass

        @pytest.mark.task("01.nothing")
        def test_unknown():
            pass
        """))
    done = run(repo, "-m", "pytest", "chapters/01_demo", "-q")
    assert done.returncode == 4
    problems = [line.strip() for line in done.stderr.splitlines() if "test_extra.py" in line]
    needs = 'needs exactly one @pytest.mark.task("NN.name"), has'
    names_no_task = "names no task of chapter 01 (tasks: 01.add, 01.double, 01.total)"
    where = "chapters/01_demo/test_extra.py::"
    assert problems == [
        f"{where}test_none: {needs} 0",
        f"{where}test_two: {needs} 2",
        f"{where}test_other_chapter: task marker ('02.area',) {names_no_task}",
        f"{where}test_unknown: task marker ('01.nothing',) {names_no_task}"]


def test_progress_table(repo: Path, tmp_path: Path) -> None:
    """python -m chapters shows not started, in progress, done and broken chapters."""
    assert [line.split()[-3:] for line in run(repo, "-m", "chapters").stdout.splitlines()[2:4]
            ] == [["0/3", "not", "started"], ["0/2", "not", "started"]]
    done = run(repo, "-m", "chapters", "--impl=solutions")
    assert "01 Demo: numbers" in done.stdout and done.returncode == 0
    assert [line.split()[-2:] for line in done.stdout.splitlines()[2:4]
            ] == [["3/3", "done"], ["2/2", "done"]]
    folder = learner_copy(repo, tmp_path)
    edit(folder / "01_demo" / "counter.py", "return twice(self.value)", "return self.value")
    edit(folder / "02_more" / "shapes.py", "def area(width", "def area(width,,")
    rows = run(repo, "-m", "chapters", f"--impl={folder}").stdout.splitlines()[2:4]
    assert rows[0].split()[-3:] == ["2/3", "in", "progress"]
    assert "0/2  broken  (cannot load" in rows[1] and "02_more/shapes.py, line" in rows[1]


def test_progress_table_marks_uncollectable_chapter_broken(tmp_path: Path) -> None:
    """A chapter whose tests cannot be collected is broken; the others still grade."""
    repo = mini_repo(tmp_path / "repo")
    (repo / "chapters" / "02_more" / "test_bad.py").write_text("import nonexistent_module\n")
    rows = run(repo, "-m", "chapters", "--impl=solutions").stdout.splitlines()[2:4]
    assert rows[0].split()[-2:] == ["3/3", "done"] and "broken" in rows[1]


def test_titles_drop_a_leading_chapter_number() -> None:
    """'01 · Scalar autograd' shows as 'Scalar autograd' next to the number."""
    assert short_title("01", "01 · Scalar autograd") == "Scalar autograd"
    assert short_title("02", "Chapter 2: Tensors") == "Tensors"
    assert short_title("03", "3D graphics") == "3D graphics"


def test_table_layout() -> None:
    """The table lines up chapter, tasks and status."""
    text = table([ChapterProgress("01", "Scalar autograd", 2, 5, "in progress"),
                  ChapterProgress("02", "Tensors", 0, 7, "broken", "cannot load x.py")])
    assert text.splitlines()[0].split() == ["chapter", "tasks", "status"]
    assert text.splitlines()[3].endswith("0/7  broken  (cannot load x.py)")
