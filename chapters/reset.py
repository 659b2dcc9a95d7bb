"""Starts one task, or one file, of your exercises again, keeping a copy of your work first.

    python -m chapters reset 11.search                     # only the task's parts go back
    python -m chapters reset exercises/11_speed/search.py  # the whole file goes back

A task's parts are the places where the stub says `# TODO NN.task`: each goes back to those
lines, and the rest of the file (your other tasks) stays as it is. The copy goes to
.backup/YYYYmmdd-HHMMSS/ (git ignores it); the command prints where.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from dataclasses import dataclass
from pathlib import Path

from chapters.tasks import (ExerciseModule, Layout, TaskError, chapter_dirs, default_layout,
                            discover, display_path, exercise_modules)
from tools.generate import back_up, stub_spans


@dataclass(frozen=True)
class Stub:
    """The generated stub of one exercise file and where each task's stub lines lie in it."""

    relative: str  # like exercises/11_speed/search.py
    lines: list[str]
    spans: list[tuple[str, int, int]]  # (task id, first line index, index past the last)

    @property
    def text(self) -> str:
        """The stub file's text."""
        text = "".join(self.lines)
        return text if text.endswith("\n") else text + "\n"


def stub_of(exercise: ExerciseModule, layout: Layout) -> Stub | None:
    """The stub of one exercise module (None when its chapter has no folder)."""
    folder = chapter_dirs(layout).get(exercise.chapter)
    if folder is None:
        return None
    lines, spans = stub_spans(exercise, layout, folder)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return Stub(f"exercises/{folder.name}/{exercise.basename}", lines, spans)


def stubs(layout: Layout) -> dict[str, Stub]:
    """Relative path -> stub, for every exercise file."""
    found = [stub_of(exercise, layout) for exercise in exercise_modules(layout)]
    return {stub.relative: stub for stub in found if stub is not None}


def region_lines(current: list[str], stub: Stub) -> list[tuple[str, int, int] | None]:
    """For each of the stub's regions, in order: (task id, first index, index past the last) of
    the lines that stand for it in current (a learner's copy of the file), found by the stub's
    lines around it matched in current (difflib); None where those lines changed too."""
    matcher = difflib.SequenceMatcher(None, stub.lines, current, autojunk=False)
    where: dict[int, int] = {}  # stub line index -> the same line's index in current
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            where[block.a + k] = block.b + k
    where[len(stub.lines)] = len(current)
    found: list[tuple[str, int, int] | None] = []
    for task_id, start, stop in stub.spans:
        before, after = where.get(start - 1), where.get(stop)
        if before is None or after is None or before >= after:
            found.append(None)
        else:
            found.append((task_id, before + 1, after))
    return found


def reset_task_lines(current: list[str], stub: Stub, task_id: str) -> list[str]:
    """current's lines with each part of task_id back to its stub lines; TaskError if the lines
    around a part changed too."""
    result = list(current)
    found = region_lines(current, stub)
    for span, lines in sorted(zip(stub.spans, found), key=lambda pair: pair[0][1], reverse=True):
        if span[0] != task_id:
            continue
        if lines is None:
            raise TaskError(f"cannot find where {task_id} lies in {stub.relative}: the lines "
                            "around it changed too; reset the whole file instead with: "
                            f"python -m chapters reset {stub.relative}")
        result[lines[1]:lines[2]] = stub.lines[span[1]:span[2]]
    return result


def resolve(target: str, layout: Layout) -> tuple[str | None, list[Stub]]:
    """(task id or None for a whole file, the stubs of the files to reset) of a command-line
    target: a task id like 11.search, or an exercise file's path."""
    all_stubs = stubs(layout)
    tasks = {task.id: task for task in discover(layout)}
    if target in tasks:
        return target, [stub for stub in all_stubs.values()
                        if any(span[0] == target for span in stub.spans)]
    path = Path(target)
    path = (path if path.is_absolute() else Path.cwd() / path).resolve()
    relative = display_path(path, layout)
    if relative in all_stubs:
        return None, [all_stubs[relative]]
    raise TaskError(f"{target!r} is neither a task id (like {next(iter(tasks), '11.search')}) "
                    "nor an exercise file (like exercises/11_speed/search.py)")


def reset(target: str, layout: Layout) -> list[str]:
    """Resets a task's parts or a whole file in exercises/ to the stub, keeping a copy of each
    file it changes first; returns the lines to print."""
    task_id, targets = resolve(target, layout)
    new_texts: dict[str, str] = {}
    said = []
    for stub in targets:
        path = layout.root / stub.relative
        if not path.is_file():
            new_texts[stub.relative] = stub.text
            continue
        current = path.read_text(encoding="utf-8")
        if task_id is None:
            new = stub.text
        else:
            new = "".join(reset_task_lines(current.splitlines(keepends=True), stub, task_id))
        if new == current:
            said.append(f"unchanged: {stub.relative} (already the stub)")
        else:
            new_texts[stub.relative] = new
    kept = [relative for relative in new_texts if (layout.root / relative).is_file()]
    if kept:
        folder = back_up(layout.root, kept)
        said.append(f"kept a copy of your work in {display_path(folder, layout)}/: "
                    + ", ".join(kept))
    for relative, text in new_texts.items():
        (layout.root / relative).parent.mkdir(parents=True, exist_ok=True)
        (layout.root / relative).write_text(text, encoding="utf-8", newline="\n")
        what = f"{task_id}'s parts back to the stub" if task_id else "back to the stub"
        said.append(f"reset: {relative} ({what})")
    return said


def main(argv: list[str] | None = None, layout: Layout | None = None) -> int:
    """Command line entry: python -m chapters reset TARGET."""
    parser = argparse.ArgumentParser(prog="python -m chapters reset", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", help="a task id like 11.search, or an exercise file's path")
    args = parser.parse_args(argv)
    try:
        for line in reset(args.target, layout or default_layout()):
            print(line)
    except TaskError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
