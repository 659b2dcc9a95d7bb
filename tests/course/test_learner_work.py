"""A learner's work in exercises/ is never lost: the test command, tools.generate and the
progress table leave it as it is; `python -m chapters reset` starts a task or a file again,
keeping a copy first."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chapters.reset import Stub, reset_task_lines, stubs
from chapters.tasks import ExerciseModule, Layout, chapter_dirs, default_layout, exercise_modules
from tests.course.test_harness import REPO, mini_repo, run
from tools import generate
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


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A fresh copy of a mini course (the fake framework as tinyfw, our harness, the test of
    the generated files), as a learner gets it."""
    repo = mini_repo(tmp_path / "repo")
    (repo / "tests").mkdir()
    shutil.copy(REPO / "tests" / "course" / "test_generated.py",
                repo / "tests" / "test_generated.py")
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

    done = run(clone, "-m", "pytest", "tests/test_generated.py", "-q", "-rs")
    assert done.returncode == 0 and "skipped" not in done.stdout, done.stdout + done.stderr
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
    assert backup.startswith(".backup/")
    assert (clone / backup / shapes).read_text() == work[shapes]
    assert (clone / backup / counter).read_text() == "".join(filled(stub, exercise,
                                                                    {"01.double"}))
    assert texts(clone)[counter] == stub.text
    assert run(clone, "-m", "tools.generate", "--check", "--strict").returncode == 0
    assert "/.backup/" in (REPO / ".gitignore").read_text().splitlines()


def test_reset_of_a_whole_file_and_its_errors(clone: Path) -> None:
    """reset FILE puts the whole file back, or writes it when it is missing; an unknown target
    or a task whose surroundings changed is refused with what to do."""
    counter = clone / "exercises" / "01_demo" / "counter.py"
    stub = counter.read_text()
    counter.write_text("my own rewrite\n")
    done = run(clone, "-m", "chapters", "reset", "exercises/01_demo/counter.py")
    assert done.returncode == 0 and counter.read_text() == stub, done.stdout + done.stderr
    assert "reset: exercises/01_demo/counter.py (back to the stub)" in done.stdout
    counter.unlink()
    assert run(clone, "-m", "chapters", "reset", "exercises/01_demo/counter.py").returncode == 0
    assert counter.read_text() == stub
    done = run(clone, "-m", "chapters", "reset", "01.nothing")
    assert done.returncode == 2 and "neither a task id" in done.stderr
    counter.write_text("my own rewrite\n")
    done = run(clone, "-m", "chapters", "reset", "01.add")
    assert done.returncode == 2 and "reset exercises/01_demo/counter.py" in done.stderr
    assert counter.read_text() == "my own rewrite\n"


def test_regenerating_after_a_change_to_tinyfw_needs_no_flag(clone: Path) -> None:
    """A developer changes tinyfw/: the test of the generated files names the stale file; the
    stubs, as generated, are regenerated twice over without a flag."""
    source = clone / "tinyfw" / "counter.py"
    source.write_text(source.read_text().replace("SCALE = 3", "SCALE = 4"))
    done = run(clone, "-m", "pytest", "tests/test_generated.py", "-q")
    assert done.returncode == 1 and "stale:   exercises/01_demo/counter.py" in done.stdout
    assert run(clone, "-m", "tools.generate").returncode == 0
    source.write_text(source.read_text().replace("SCALE = 4", "SCALE = 5"))
    done = run(clone, "-m", "tools.generate")
    assert done.returncode == 0 and "wrote:   exercises/01_demo/counter.py" in done.stdout
    assert "SCALE = 5" in (clone / "exercises" / "01_demo" / "counter.py").read_text()


def test_work_on_a_stub_tinyfw_changed_since_never_fails(clone: Path) -> None:
    """A learner's edited exercise whose stub tinyfw has changed since (a pull of the course):
    the test of the generated files names it as not checked, and passes."""
    mine = clone / "exercises" / "01_demo" / "counter.py"
    mine.write_text(mine.read_text() + "# my work\n")
    source = clone / "tinyfw" / "counter.py"
    source.write_text(source.read_text().replace("SCALE = 3", "SCALE = 4"))
    solution = clone / "solutions" / "01_demo" / "counter.py"  # (the course's update has it)
    fixed = run(clone, "-c", "import sys; from tools import generate; from chapters.tasks import "
                "default_layout; sys.stdout.write(generate.generated_files(default_layout())"
                "['solutions/01_demo/counter.py'])")
    solution.write_text(fixed.stdout)
    done = run(clone, "-m", "pytest", "tests/test_generated.py", "-q", "-rs")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "exercises/01_demo/counter.py (your edits to an older stub)" in done.stdout
    assert mine.read_text().endswith("# my work\n")


def test_in_ci_an_edited_generated_file_fails(clone: Path) -> None:
    """Where CI is set (a fresh clone: no learner's work), a hand edit of a generated file
    fails the test of the generated files."""
    solution = clone / "solutions" / "02_more" / "shapes.py"
    solution.write_text(solution.read_text() + "# a hand edit\n")
    done = run(clone, "-m", "pytest", "tests/test_generated.py", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    env = {**os.environ, "CI": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "tests/test_generated.py", "-q"],
                          cwd=clone, capture_output=True, text=True, timeout=300, env=env,
                          check=False)
    assert done.returncode == 1 and "stale:   solutions/02_more/shapes.py" in done.stdout


def test_the_course_solved_by_copying_the_solutions_is_kept(tmp_path: Path) -> None:
    """Every chapter finished by copying solutions/ into exercises/: the check of the generated
    files passes (strict, as in CI, fails) and tools.generate refuses, naming every file."""
    shutil.copytree(LAYOUT.solutions_dir, tmp_path / "exercises")
    shutil.copytree(LAYOUT.solutions_dir, tmp_path / "solutions")
    work = texts(tmp_path)
    assert generate.stale_files(LAYOUT, tmp_path) == ([], [])
    assert generate.stale_files(LAYOUT, tmp_path, strict=True)[0]
    with pytest.raises(generate.LearnersWorkError) as refused:
        generate.write_files(LAYOUT, tmp_path)
    assert refused.value.relatives == sorted(work)
    assert texts(tmp_path) == work and not (tmp_path / generate.BACKUP_DIR).exists()
