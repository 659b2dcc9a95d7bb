"""A learner's work in exercises/ is never lost: the test command, tools.generate and the
progress table leave it as it is; `python -m chapters reset` starts a task or a file again,
keeping a copy first."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from chapters.reset import Stub, reset_task_lines, stubs
from chapters.tasks import ExerciseModule, Layout, chapter_dirs, default_layout, exercise_modules
from tests.test_harness import REPO, mini_repo, run
from tools.generate import absolute_imports

LAYOUT = default_layout()


def filled(stub: Stub, exercise: ExerciseModule, tasks: set[str]) -> list[str]:
    """The stub's lines with the given tasks' parts written as tinyfw writes them (a learner
    who solved them), without the exercise markers."""
    source = absolute_imports(exercise.path.read_text(encoding="utf-8"), exercise)
    regions = sorted(exercise.regions, key=lambda region: region.open_line)
    lines = list(stub.lines)
    for (task_id, start, stop), region in reversed(list(zip(stub.spans, regions))):
        assert task_id == region.task_id
        if task_id in tasks:
            lines[start:stop] = source[region.open_line:region.close_line - 1]
    return lines


def test_reset_of_a_task_keeps_every_other_task_of_the_file() -> None:
    """In every exercise file of the course, with every task solved, resetting one task puts
    back exactly its stub lines: the file is what it is with every other task solved."""
    folders = chapter_dirs(LAYOUT)
    all_stubs = stubs(LAYOUT)
    for exercise in exercise_modules(LAYOUT):
        stub = all_stubs[f"exercises/{folders[exercise.chapter].name}/{exercise.basename}"]
        tasks = {span[0] for span in stub.spans}
        done = filled(stub, exercise, tasks)
        for task_id in sorted(tasks):
            assert reset_task_lines(done, stub, task_id) == filled(stub, exercise,
                                                                   tasks - {task_id}), task_id


def git(repo: Path, *args: str) -> None:
    """Runs git in repo (as a learner with a fresh clone would have it)."""
    subprocess.run(["git", "-c", "user.name=learner", "-c", "user.email=learner@example.com",
                    *args], cwd=repo, check=True, capture_output=True, timeout=60)


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A fresh clone of a mini course (the fake framework as tinyfw, our harness, the test of
    the generated files) in a git repository, as a learner gets it."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: a learner's clone cannot be made")
    repo = mini_repo(tmp_path / "repo")
    (repo / "tests").mkdir()
    shutil.copy(REPO / "tests" / "test_generated.py", repo / "tests" / "test_generated.py")
    shutil.copy(REPO / ".gitignore", repo / ".gitignore")
    (repo / ".generated.json").unlink()  # (a clone has none: git ignores it)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the course")
    return repo


def texts(repo: Path) -> dict[str, str]:
    """Relative path -> text of every file under exercises/."""
    return {path.relative_to(repo).as_posix(): path.read_text()
            for path in sorted((repo / "exercises").rglob("*.py"))}


def test_a_learners_work_survives_every_command(clone: Path) -> None:
    """The learner fills in tasks; the test of the generated files passes, tools.generate
    refuses and names the files, the progress table grades them: every line stays. reset
    puts one task back (a copy kept), --overwrite-my-work the rest (a copy kept)."""
    layout = Layout(clone)
    counter = "exercises/01_demo/counter.py"
    shapes = "exercises/02_more/shapes.py"
    shutil.copy(clone / "solutions" / "02_more" / "shapes.py", clone / shapes)  # all of it
    stub = stubs(layout)[counter]
    exercise = next(e for e in exercise_modules(layout) if e.basename == "counter.py")
    (clone / counter).write_text("".join(filled(stub, exercise, {"01.add", "01.double"})))
    work = texts(clone)
    assert work[counter] != stub.text

    done = run(clone, "-m", "pytest", "tests/test_generated.py", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    assert texts(clone) == work

    done = run(clone, "-m", "tools.generate")
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"  {counter}\n  {shapes}\n" in done.stderr and "Nothing was written" in done.stderr
    assert texts(clone) == work

    done = run(clone, "-m", "chapters", "01", "02")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2/3" in done.stdout and "2/2" in done.stdout, done.stdout
    assert texts(clone) == work

    done = run(clone, "-m", "chapters", "reset", "01.add")
    assert done.returncode == 0, done.stdout + done.stderr
    backup = done.stdout.split("kept a copy of your work in ")[1].split("/:")[0]
    assert (clone / backup / counter).read_text() == work[counter]
    assert texts(clone)[counter] == "".join(filled(stub, exercise, {"01.double"}))
    assert texts(clone)[shapes] == work[shapes]

    done = run(clone, "-m", "tools.generate", "--overwrite-my-work")
    assert done.returncode == 0, done.stdout + done.stderr
    backup = done.stdout.split("kept a copy of your work in ")[1].split("/:")[0]
    assert (clone / backup / shapes).read_text() == work[shapes]
    assert (clone / backup / counter).read_text() == "".join(filled(stub, exercise,
                                                                    {"01.double"}))
    assert texts(clone)[counter] == stub.text
    assert run(clone, "-m", "tools.generate", "--check").returncode == 0
    assert "?? .backup" not in subprocess.run(["git", "status", "--short"], cwd=clone,
                                               capture_output=True, text=True).stdout


def test_regenerating_after_a_change_to_tinyfw_needs_no_flag(clone: Path) -> None:
    """A developer changes tinyfw/: stubs still as committed (or as last written) are
    regenerated twice over without a flag; the committed stale copy fails the check."""
    source = clone / "tinyfw" / "counter.py"
    source.write_text(source.read_text().replace("SCALE = 3", "SCALE = 4"))
    done = run(clone, "-m", "pytest", "tests/test_generated.py", "-q")
    assert done.returncode == 1 and "stale:   exercises/01_demo/counter.py" in done.stdout
    assert run(clone, "-m", "tools.generate").returncode == 0
    source.write_text(source.read_text().replace("SCALE = 4", "SCALE = 5"))
    done = run(clone, "-m", "tools.generate")
    assert done.returncode == 0 and "wrote:   exercises/01_demo/counter.py" in done.stdout
    assert "SCALE = 5" in (clone / "exercises" / "01_demo" / "counter.py").read_text()


def test_without_git_a_changed_file_is_not_checked_and_is_kept(tmp_path: Path) -> None:
    """A tarball (no git): the test of the generated files checks the files that match and
    skips, naming the others; tools.generate keeps them."""
    repo = mini_repo(tmp_path / "repo")
    (repo / ".generated.json").unlink()
    (repo / "tests").mkdir()
    shutil.copy(REPO / "tests" / "test_generated.py", repo / "tests" / "test_generated.py")
    counter = repo / "exercises" / "01_demo" / "counter.py"
    counter.write_text(counter.read_text() + "# my notes\n")
    done = run(repo, "-m", "pytest", "tests/test_generated.py", "-q", "-rs")
    assert done.returncode == 0 and "exercises/01_demo/counter.py" in done.stdout, done.stdout
    assert "no git repository" in done.stdout
    assert run(repo, "-m", "tools.generate").returncode == 3
    assert counter.read_text().endswith("# my notes\n")

