"""What a learner meets: tests in task order, a broken file reported once, one chapter's row,
notebooks that run on past unwritten tasks, failures that show generated C or say "use a stack"."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chapters.tasks import chapter_dirs, default_layout, discover

LAYOUT = default_layout()
ROOT = LAYOUT.root
TASK_MARK = re.compile(r'^pytestmark = pytest\.mark\.task\("(?P<task>\d\d\.\w+)"\)', re.M)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Fresh exercises/ and solutions/ generated into a temporary folder."""
    out = tmp_path_factory.mktemp("generated")
    done = subprocess.run([sys.executable, "-m", "tools.generate", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def run_python(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """python args... in the repository root."""
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False, env=env)


def grade(*args: str, tmp: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """pytest args... with --progress-json: the process and its progress record."""
    record = tmp / "progress.json"
    done = run_python("-m", "pytest", *args, "-p", "no:cacheprovider", "--progress-json",
                      str(record))
    assert record.is_file(), done.stdout + done.stderr
    return done, json.loads(record.read_text(encoding="utf-8"))


def with_region(path: Path, task_id: str, body: str) -> None:
    """Replaces the code of task_id's region in a solution file by body (a learner's attempt)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if f"# >>> exercise {task_id} " in line)
    end = next(i for i in range(start, len(lines)) if "# <<< exercise" in lines[i])
    path.write_text("".join(lines[:start + 1]) + body + "".join(lines[end:]), encoding="utf-8")


def learner_copy(generated: Path, tmp: Path, folder: str, kind: str = "solutions") -> Path:
    """A learner's folder holding one chapter folder copied from the generated kind."""
    target = tmp / "learner"
    shutil.copytree(generated / kind / folder, target / folder)
    return target


# ---------------------------------------------------------------- task order


def file_task(nodeid: str) -> str:
    """The task of a chapter test, read from its file's pytestmark."""
    path = ROOT / nodeid.split("::")[0]
    match = TASK_MARK.search(path.read_text(encoding="utf-8"))
    assert match, f"{path} has no module-level task marker"
    return match["task"]


def test_chapter_tests_are_collected_in_task_order() -> None:
    """In every chapter the tests come in task order (the README's), first task first."""
    done = run_python("-m", "pytest", "chapters", "--collect-only", "-q", "-p",
                      "no:cacheprovider")
    assert done.returncode == 0, done.stdout + done.stderr
    nodeids = [line for line in done.stdout.splitlines() if "::" in line]
    for number, folder in chapter_dirs(LAYOUT).items():
        order = [task.id for task in discover(LAYOUT, number)]
        tasks = [file_task(nodeid) for nodeid in nodeids
                 if nodeid.startswith(f"chapters/{folder.name}/")]
        assert tasks and tasks[0] == order[0], f"chapter {number} starts with {tasks[:1]}"
        positions = [order.index(task) for task in tasks]
        assert positions == sorted(positions), f"chapter {number} out of task order: " \
                                               f"{list(dict.fromkeys(tasks))}, not {order}"


@pytest.mark.parametrize("number", ["02", "03"])
def test_x_on_fresh_stubs_stops_at_the_first_task(number: str, generated: Path,
                                                  tmp_path: Path) -> None:
    """pytest -x on a fresh chapter fails once, at its first task (not the first file's)."""
    first = discover(LAYOUT, number)[0]
    done, progress = grade(f"chapters/{number}", "-x", f"--impl={generated / 'exercises'}",
                           tmp=tmp_path)
    failed = [test for test in progress["tests"] if test["outcome"] == "failed"]
    assert len(failed) == 1 and failed[0]["task"] == first.id, done.stdout
    assert failed[0]["message"].startswith(f"not done yet: {first.id}: "), failed[0]["message"]


# ---------------------------------------------------------------- a file that does not load


def test_a_file_that_does_not_load_is_reported_once(generated: Path, tmp_path: Path) -> None:
    """A syntax error is shown in full by the chapter's first test; the others are skipped
    with one line each that points back to it."""
    folder = learner_copy(generated, tmp_path, "01_scalar_autograd", "exercises")
    broken = folder / "01_scalar_autograd" / "scalar.py"
    broken.write_text(broken.read_text(encoding="utf-8") + "\ndef broken(:\n", encoding="utf-8")
    done, progress = grade("chapters/01", "-rs", f"--impl={folder}", tmp=tmp_path)
    outcomes = [test["outcome"] for test in progress["tests"]]
    assert outcomes[0] == "failed" and set(outcomes[1:]) == {"skipped"}, outcomes
    assert done.stdout.count("def broken(:") == 1, done.stdout
    assert done.stdout.count("SyntaxError") == 2, done.stdout  # the failure and one skip line
    assert f"SKIPPED [{len(outcomes) - 1}] " in done.stdout, done.stdout
    assert "see the first failure of chapter 01" in progress["tests"][1]["message"]


# ---------------------------------------------------------------- python -m chapters NN


def test_progress_table_of_named_chapters_only() -> None:
    """python -m chapters 05 grades chapter 05 alone; an unknown chapter is an error."""
    done = run_python("-m", "chapters", "5", "-j", "1", "--impl=solutions")
    rows = [line for line in done.stdout.splitlines() if line[:2].isdigit()]
    assert done.returncode == 0 and len(rows) == 1, done.stdout + done.stderr
    assert rows[0].startswith("05 ") and rows[0].split()[-2:] == ["2/2", "done"], rows
    done = run_python("-m", "chapters", "99")
    assert done.returncode == 2 and "no chapter 99" in done.stdout, done.stdout
    assert "-j N" in run_python("-m", "chapters", "--help").stdout


# ---------------------------------------------------------------- failures that teach


def test_a_wrong_render_shows_its_c_source(generated: Path, tmp_path: Path) -> None:
    """A value mismatch of chapter 05 shows the C that computed the values."""
    folder = learner_copy(generated, tmp_path, "05_codegen")
    cstyle = folder / "05_codegen" / "cstyle.py"
    right = "read = self.load(walk.names[step.src[0]], index.render(), step.dtype)"
    wrong = 'read = self.load(walk.names[step.src[0]], f"({index.render()}) + 1", step.dtype)'
    assert right in cstyle.read_text(encoding="utf-8")
    cstyle.write_text(cstyle.read_text(encoding="utf-8").replace(right, wrong), encoding="utf-8")
    done, _progress = grade("chapters/05/test_render_c.py::test_elementwise_add",
                            f"--impl={folder}", tmp=tmp_path)
    assert "data1 + data2: values differ" in done.stdout, done.stdout
    assert "the C your render() made" in done.stdout and "data1[(i) + 1]" in done.stdout
    assert "05.render_c: fill in CStyleLanguage.render()" in done.stdout


RECURSIVE_TOPOSORT = """\
        order: list[Value] = []
        seen: set[int] = set()

        def visit(node: Value) -> None:
            if id(node) not in seen:
                seen.add(id(node))
                for source in node.src:
                    visit(source)
                order.append(node)

        visit(self)
        return order
"""


def test_a_recursive_toposort_is_told_to_use_a_stack(generated: Path, tmp_path: Path) -> None:
    """A toposort that recurses fails the deep-chain test saying to use an explicit stack, with
    the pointer to the function and the README section."""
    folder = learner_copy(generated, tmp_path, "01_scalar_autograd")
    with_region(folder / "01_scalar_autograd" / "scalar.py", "01.toposort", RECURSIVE_TOPOSORT)
    done, progress = grade("chapters/01/test_toposort.py", f"--impl={folder}", tmp=tmp_path)
    outcomes = {test["nodeid"].split("::")[-1]: test["outcome"] for test in progress["tests"]}
    assert outcomes.pop("test_a_chain_of_100000_nodes") == "failed", done.stdout
    assert set(outcomes.values()) == {"passed"}, outcomes
    assert "recursed deeper than Python allows (RecursionError): use an explicit stack" \
        in done.stdout, done.stdout
    assert "01.toposort: fill in Value.toposort()" in done.stdout
    assert "README.md#task-2-a-topological-order" in done.stdout


# ---------------------------------------------------------------- notebooks


def test_a_notebook_runs_on_past_unwritten_tasks(generated: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Chapter 05's notebook, run on fresh stubs, finishes: each cell that needs lower() says
    so in one line, no cell ends in an error, and the cells after them still run."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    spec = tmp_path / "kernels" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "--log-level=ERROR", "-f",
                 "{connection_file}"], "display_name": "tinyfw", "language": "python"}))
    path = ROOT / "chapters" / "05_codegen" / "notebook.ipynb"
    notebook = nbformat.read(path, as_version=4)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "kernels"))
    monkeypatch.setenv("TINYFW_IMPL", str(generated / "exercises"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))  # this checkout's code
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code"
               for output in cell.get("outputs", [])]
    assert not [output for output in outputs if output.get("output_type") == "error"]
    text = "".join(output.get("text", "") for output in outputs)
    assert ("this section needs task 05.lower (not written yet): fill in lower() in "
            f"{generated / 'exercises'}/05_codegen/lower.py; read "
            "chapters/05_codegen/README.md#from-a-kernel-to-loops") in text, text
    assert "this cell needs program, which a cell above did not make" in text, text
    assert "notebook ran in" in text, "the last cell did not run"
    assert "Traceback" not in text and "NotImplementedError" not in text, text


@pytest.mark.parametrize("number", sorted(chapter_dirs(LAYOUT)))
def test_each_notebook_is_valid_with_cell_ids(number: str) -> None:
    """Every chapter's notebook is valid nbformat 4.5 with an id on every cell: Jupyter and
    mkdocs-jupyter warn (MissingIDFieldWarning) on one without, and will refuse it."""
    nbformat = pytest.importorskip("nbformat")
    path = chapter_dirs(LAYOUT)[number] / "notebook.ipynb"
    notebook = json.loads(path.read_text())
    assert (notebook["nbformat"], notebook["nbformat_minor"]) >= (4, 5), path
    assert [cell.get("id") for cell in notebook["cells"] if not cell.get("id")] == [], path
    nbformat.validate(notebook)
