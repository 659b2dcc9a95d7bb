"""python -m chapters.capstone grades the learner's chapters, trains the MNIST MLP with exactly
their finished tasks loaded (tinyfw's code for the rest), and names per chapter the learner's
functions whose task code ran, and the finished tasks the run did not reach."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chapters import learner
from chapters.tasks import chapter_dirs, default_layout

LAYOUT = default_layout()
TITLES = {number: folder.name for number, folder in chapter_dirs(LAYOUT).items()}
CALLED = "your code this run ran"
NOT_REACHED = "finished, but this run did not reach your code of:"
NOT_FINISHED = "tinyfw's code ran for the tasks not finished:"


def capstone(*args: str) -> str:
    """The output of python -m chapters.capstone with args."""
    done = subprocess.run([sys.executable, "-m", "chapters.capstone", *args], cwd=LAYOUT.root,
                          capture_output=True, text=True, timeout=1200, check=True)
    return done.stdout


def section(out: str, heading: str) -> dict[str, str]:
    """Chapter folder name -> its text in the section under heading (continuation lines joined
    to their chapter's)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading)) + 1
    rows: dict[str, str] = {}
    last = ""
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        first = line.split()[0]
        if first in TITLES.values():
            last = first
            rows[last] = line.strip()[len(first):].strip()
        else:
            rows[last] += " " + line.strip()
    return rows


def fill_in(learner_dir: Path, chapter: str, basename: str, task_id: str) -> None:
    """Writes the solution of one task into the learner's copy of an exercise file."""
    folder = TITLES[chapter]
    solution = (LAYOUT.solutions_dir / folder / basename).read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(solution) if f"# >>> exercise {task_id} " in line)
    end = next(i for i in range(start, len(solution)) if "# <<< exercise" in solution[i])
    path = learner_dir / folder / basename
    lines = path.read_text().splitlines(keepends=True)
    stub = next(i for i, line in enumerate(lines) if f"# TODO {task_id}:" in line)
    stub_end = next(i for i in range(stub, len(lines))
                    if f'raise NotImplementedError("not done yet: {task_id}")' in lines[i])
    lines[stub:stub_end + 1] = solution[start + 1:end]
    path.write_text("".join(lines))


def test_with_the_solutions_it_names_the_functions_called() -> None:
    """Every graded task is the learner's; the report lists, per chapter, the functions the run
    called, and chapter 01 (Value) is not among them: the MLP never touches it."""
    out = capstone("--impl", "solutions", "--steps", "60")
    accuracy = float(out.split("test accuracy ")[1].split()[0])
    assert accuracy > 0.8, out
    called = section(out, CALLED)
    assert TITLES["01"] not in called, out
    not_reached = section(out, NOT_REACHED)
    assert "01.mlp (no model here uses Value" in not_reached[TITLES["01"]], out
    # CPURuntime.run ran, but the C workers ran its threaded kernels: 11.threads' code did not
    assert "CPURuntime.run" not in called[TITLES["11"]], out
    assert "11.threads (the C workers ran the threaded kernels; CPU_WORKERS=0 runs yours)" in \
        not_reached[TITLES["11"]], out
    assert "11.search (no BEAM search ran (BEAM is not set); BEAM=2 runs yours)" in \
        not_reached[TITLES["11"]], out
    for chapter, function in [("02", "compute_gradient"), ("03", "View.reshape"),
                              ("04", "apply_movement"), ("09", "TinyJit.capture"),
                              ("10", "Adam._update"), ("10", "Linear.__call__")]:
        assert f"{function} (" in called.get(TITLES[chapter], ""), out
    assert "DerivedOps.softmax" not in out, "the MLP's loss does not call softmax"


def test_a_chapter_partly_done_lends_only_its_finished_task(tmp_path: Path) -> None:
    """With one task of chapter 10 written (Adam's update), only its code is the learner's:
    tinyfw's code runs for the chapter's other tasks and for every other chapter."""
    learner_dir = tmp_path / "mine"
    shutil.copytree(LAYOUT.exercises_dir, learner_dir)
    fill_in(learner_dir, "10", "optim.py", "10.adam")
    out = capstone("--impl", str(learner_dir), "--steps", "20")
    assert "test accuracy" in out and "1 of " in out, out
    called = section(out, CALLED)
    assert list(called) == [TITLES["10"]], out
    assert called[TITLES["10"]].split(" (")[0] == "Adam._update", out
    assert NOT_REACHED not in out, out
    not_finished = section(out, NOT_FINISHED)
    assert set(not_finished) == set(TITLES.values()), out
    assert "10.adam" not in not_finished[TITLES["10"]], out
    assert "10.sgd" in not_finished[TITLES["10"]] and "still to finish" in out, out


def test_smollm2_answers_with_the_learners_chapters() -> None:
    """--model llm: SmolLM2 answers on the learner's code (here the solutions), and the report
    names chapter 12's functions among those the run called."""
    out = capstone("--impl", "solutions", "--model", "llm", "--max-tokens", "8",
                   "--prompt", "What is the capital of France?")
    assert "> What is the capital of France?" in out and "Paris" in out, out
    called = section(out, CALLED)
    for function in ("attention", "rotate", "write_cache", "BPETokenizer.merge"):
        assert f"{function} (" in called.get(TITLES["12"], ""), out
    assert "TinyJit.capture (" in called.get(TITLES["09"], ""), out


def test_data_parallel_runs_chapter_13() -> None:
    """--devices CPU:0,CPU:1: the MLP trains data parallel, and chapter 13's sharding, ops on
    shards, ring all-reduce and rewrite pass are among the code that ran (a few steps)."""
    out = capstone("--impl", "solutions", "--devices", "CPU:0,CPU:1", "--steps", "6")
    assert "data parallel on CPU:0, CPU:1" in out, out
    called = section(out, CALLED)
    for function in ("shard", "alu_multi", "ring_all_reduce", "lowered"):
        assert f"{function} (" in called.get(TITLES["13"], ""), out
    assert TITLES["13"] not in section(out, NOT_REACHED), out


@pytest.mark.parametrize("workers, ran", [("1", False), ("0", True)])
def test_a_task_counts_only_when_its_own_lines_run(monkeypatch: pytest.MonkeyPatch,
                                                   workers: str, ran: bool) -> None:
    """CPURuntime.run is called for every kernel, but 11.threads' lines in it run only for a
    threaded kernel without the C workers: only those count."""
    from tinyfw import Tensor
    from tinyfw.runtime.ops_cpu import cores

    if cores() < 2:
        pytest.skip("one core: no kernel is threaded")
    monkeypatch.setenv("CPU_WORKERS", workers)
    learner.use_many(["11"], "solutions", LAYOUT, only=["11.threads"], count_calls=True)
    try:
        x = Tensor.rand(64, 64)
        (x @ x).sum().realize()
        runs, calls = learner.task_runs(), learner.calls()
    finally:
        learner.unuse()
    assert (runs["11.threads"] > 0) == ran and (calls["11"]["CPURuntime.run"] > 0) == ran
