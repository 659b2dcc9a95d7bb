"""Writes exercises/ and solutions/ from tinyfw's exercise markers: python -m tools.generate.

A learner's work is never overwritten: a file that differs from both the committed copy (git's
HEAD) and the copy this command last wrote holds the learner's own code, and the command then
writes nothing and names the files. --overwrite-my-work keeps a copy of them in
.backup/YYYYmmdd-HHMMSS/ first and says where.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from chapters.tasks import (ExerciseModule, Layout, TaskError, anchor_problems, chapter_dirs,
                            default_layout, exercise_modules)

KINDS = ("exercises", "solutions")
GENERATED_MARK = "by `python -m tools.generate`"
RECORD = ".generated.json"  # (git-ignored) the blob id of each file this command last wrote
BACKUP_DIR = ".backup"  # (git-ignored) copies of a learner's files kept before any overwrite
OVERWRITE_FLAG = "--overwrite-my-work"
IMPORT_RE = re.compile(r"from(?P<space>\s+)(?P<dots>\.+)\s*(?P<module>[\w.]*)(?P<tail>\s+import\b)")


def _package_of(exercise: ExerciseModule) -> list[str]:
    """Dotted parts of the package a module's relative imports start from."""
    parts = exercise.module.split(".")
    return parts if exercise.path.name == "__init__.py" else parts[:-1]


def absolute_imports(source: str, exercise: ExerciseModule) -> list[str]:
    """Source lines (with line ends) with every relative import made absolute."""
    lines = source.splitlines(keepends=True)
    package = _package_of(exercise)
    for node in ast.walk(ast.parse(source, filename=str(exercise.path))):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        line = lines[node.lineno - 1]
        column = len(line.encode("utf-8")[:node.col_offset].decode("utf-8"))
        match = IMPORT_RE.match(line, column)
        if match is None or len(match["dots"]) != node.level:
            raise TaskError(f"{exercise.path}:{node.lineno}: cannot rewrite this relative import; "
                            "write it as 'from .module import name' on one line")
        base = package[:len(package) - (node.level - 1)]
        target = ".".join(base + ([match["module"]] if match["module"] else []))
        new = f"from{match['space']}{target}{match['tail']}"
        lines[node.lineno - 1] = line[:match.start()] + new + line[match.end():]
    return lines


def header(kind: str, exercise: ExerciseModule, layout: Layout, folder: Path) -> str:
    """Comment lines opening a generated file: what it is, where from, how to grade it."""
    source = exercise.path.relative_to(layout.root).as_posix()
    chapter = folder.relative_to(layout.root).as_posix()
    if kind == "exercises":
        return (f"# Exercises of chapter {exercise.chapter}, generated from {source} "
                f"{GENERATED_MARK}.\n"
                f"# Fill in each part marked TODO, then grade your work with:\n"
                f"#   python -m pytest {chapter}\n")
    return (f"# Solutions of chapter {exercise.chapter}, generated from {source} "
            f"{GENERATED_MARK}.\n"
            f"# Edit {source} rather than this copy. Grade these solutions with:\n"
            f"#   python -m pytest {chapter} --impl=solutions\n")


def stub_lines(indent: str, task_id: str, pointer: str) -> list[str]:
    """The lines that replace a region in the exercise file (the chapter's section named on a
    line of its own, so lines stay short)."""
    return [f"{indent}# TODO {task_id}: write this part. The chapter explains it:\n",
            f"{indent}#   {pointer}\n",
            f'{indent}raise NotImplementedError("not done yet: {task_id}")\n']


def stub_spans(exercise: ExerciseModule, layout: Layout,
               folder: Path) -> tuple[list[str], list[tuple[str, int, int]]]:
    """The exercise file's lines (with line ends, its header included) and, for each region,
    (task id, first line index, index past its last line) of the stub lines that replace it."""
    source = exercise.path.read_text(encoding="utf-8")
    lines = absolute_imports(source, exercise)
    readme = (folder / "README.md").relative_to(layout.root).as_posix()
    head = header("exercises", exercise, layout, folder).splitlines(keepends=True)
    spans: list[tuple[str, int, int]] = []
    shift = len(head)
    for region in sorted(exercise.regions, key=lambda r: r.open_line):
        start = region.open_line - 1 + shift
        spans.append((region.task_id, start, start + 3))
        shift += 3 - (region.close_line - region.open_line + 1)
    for region in sorted(exercise.regions, key=lambda r: r.open_line, reverse=True):
        stub = stub_lines(region.indent, region.task_id, f"{readme}#{region.anchor}")
        lines[region.open_line - 1:region.close_line] = stub
    return head + lines, spans


def render(kind: str, exercise: ExerciseModule, layout: Layout, folder: Path) -> str:
    """Text of the exercise or solution file of one exercise module."""
    if kind == "exercises":
        text = "".join(stub_spans(exercise, layout, folder)[0])
    else:
        source = exercise.path.read_text(encoding="utf-8")
        text = header(kind, exercise, layout, folder) + "".join(absolute_imports(source, exercise))
    if not text.endswith("\n"):
        text += "\n"
    try:
        compile(text, f"{kind}/{folder.name}/{exercise.basename}", "exec", dont_inherit=True)
    except SyntaxError as error:
        raise TaskError(f"{exercise.path}: the generated {kind} file does not compile "
                        f"(line {error.lineno}: {error.msg}); does each region hold whole "
                        "statements?") from error
    return text


def generated_files(layout: Layout) -> dict[str, str]:
    """Relative path (like exercises/02_tensors/gradient.py) -> content, for every file."""
    folders = chapter_dirs(layout)
    files: dict[str, str] = {}
    for exercise in exercise_modules(layout):
        folder = folders.get(exercise.chapter)
        if folder is None:
            raise TaskError(f"{exercise.path} holds chapter {exercise.chapter} exercises but "
                            f"there is no folder chapters/{exercise.chapter}_*/")
        for kind in KINDS:
            relative = f"{kind}/{folder.name}/{exercise.basename}"
            files[relative] = render(kind, exercise, layout, folder)
    return dict(sorted(files.items()))


def existing_files(out: Path) -> dict[str, Path]:
    """Relative path -> file for the files now under out/exercises and out/solutions."""
    found: dict[str, Path] = {}
    for kind in KINDS:
        for path in sorted((out / kind).rglob("*")):
            relative = path.relative_to(out)
            hidden = any(part.startswith(".") or part == "__pycache__" for part in relative.parts)
            if path.is_file() and not hidden and path.suffix != ".pyc":
                found[relative.as_posix()] = path
    return found


def blob_id(text: str) -> str:
    """git's object id of a file holding text (what `git hash-object` prints)."""
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def committed_ids(out: Path) -> dict[str, str] | None:
    """Relative path -> blob id of each file under exercises/ and solutions/ in git's HEAD of the
    repository whose top folder is out; None when out is no such repository (a tarball, a
    folder given with --out, no git installed)."""
    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(out), *args], capture_output=True, text=True,
                              timeout=60, check=False)
    try:
        top = git("rev-parse", "--show-toplevel")
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != out.resolve():
            return None
        listed = git("ls-tree", "-r", "-z", "HEAD", "--", *KINDS)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if listed.returncode != 0:
        return {}  # a repository without a commit yet
    ids: dict[str, str] = {}
    for entry in listed.stdout.split("\0"):
        if "\t" in entry:
            info, relative = entry.split("\t", 1)
            ids[relative] = info.split()[2]
    return ids


def recorded_ids(out: Path) -> dict[str, str]:
    """Relative path -> blob id of each file this command last wrote under out (RECORD)."""
    try:
        record = json.loads((out / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


@dataclass(frozen=True)
class Pristine:
    """What a generated file may hold when it holds no learner's work: the committed copy or
    the copy this command last wrote."""

    committed: dict[str, str] | None
    recorded: dict[str, str]

    @classmethod
    def of(cls, out: Path) -> Pristine:
        """The committed and recorded copies of the generated files under out."""
        return cls(committed_ids(out), recorded_ids(out))

    def holds(self, relative: str, text: str) -> bool:
        """Whether text is the committed or the last written copy of the file."""
        ids = (self.committed or {}).get(relative), self.recorded.get(relative)
        return blob_id(text) in ids


def stale_files(layout: Layout, out: Path) -> tuple[list[str], list[str]]:
    """(problems, unchecked): lines naming each generated file whose committed copy is missing,
    stale or extra, and the files that could not be checked. A file is up to date when its
    working copy, its committed copy (git's HEAD) or, without git, the copy this command last
    wrote is what tinyfw's markers generate: a learner's work in exercises/ is no problem."""
    expected, present = generated_files(layout), existing_files(out)
    pristine = Pristine.of(out)
    committed = pristine.committed
    problems, unchecked = [], []
    for relative, text in expected.items():
        here = present.get(relative)
        if here is not None and here.read_text(encoding="utf-8") == text:
            continue
        wanted = blob_id(text)
        if committed is not None and relative in committed:
            if committed[relative] != wanted:
                problems.append(f"stale:   {relative}")
        elif here is None:
            problems.append(f"missing: {relative}")
        elif committed is not None:
            problems.append(f"stale:   {relative} (not committed)")
        elif relative in pristine.recorded:
            if pristine.recorded[relative] != wanted:
                problems.append(f"stale:   {relative}")
        else:
            unchecked.append(relative)
    extras = set(committed) if committed is not None else set(present)
    for relative in sorted(extras - set(expected)):
        if committed is not None or relative in pristine.recorded:
            problems.append(f"extra:   {relative}")
        else:
            unchecked.append(relative)
    return problems, unchecked


def learners_files(layout: Layout, out: Path) -> list[str]:
    """The generated files under out that hold a learner's own work: each would be overwritten
    or removed by write_files, and differs from its committed and its last written copy."""
    expected, present = generated_files(layout), existing_files(out)
    pristine = Pristine.of(out)
    found = []
    for relative, path in present.items():
        text = path.read_text(encoding="utf-8", errors="replace")
        if relative in expected:
            if text != expected[relative] and not pristine.holds(relative, text):
                found.append(relative)
        elif GENERATED_MARK in text[:400] and not pristine.holds(relative, text):
            found.append(relative)
    return found


def back_up(root: Path, relatives: list[str]) -> Path:
    """Copies root/relative of each file into a new root/.backup/YYYYmmdd-HHMMSS/ folder (same
    relative paths); returns the folder."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = root / BACKUP_DIR / stamp
    count = 1
    while folder.exists():
        count += 1
        folder = root / BACKUP_DIR / f"{stamp}-{count}"
    for relative in relatives:
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / relative, target)
    return folder


class LearnersWorkError(TaskError):
    """Raised instead of overwriting files that hold a learner's work."""

    def __init__(self, relatives: list[str]) -> None:
        self.relatives = relatives
        names = "\n".join(f"  {relative}" for relative in relatives)
        super().__init__(
            f"these files hold your own work (they differ from the generated stubs):\n{names}\n"
            "Nothing was written. Your work stays as it is: generating again is only needed "
            "after changing tinyfw/.\n"
            "To start one task again: python -m chapters reset NN.task (or reset FILE for a "
            "whole file); a copy is kept.\n"
            f"To overwrite them all with the stubs, keeping a copy first: "
            f"python -m tools.generate {OVERWRITE_FLAG}")


def write_files(layout: Layout, out: Path, overwrite: bool = False) -> list[str]:
    """Writes every generated file under out, deletes generated files no longer wanted. Files
    holding a learner's work raise LearnersWorkError, unless overwrite, which copies them
    into .backup/ first."""
    expected, present = generated_files(layout), existing_files(out)
    changes = []
    work = learners_files(layout, out)
    if work and not overwrite:
        raise LearnersWorkError(work)
    if work:
        folder = back_up(out, work)
        changes.append(f"kept a copy of your work in {folder.relative_to(out).as_posix()}/: "
                       + ", ".join(work))
    recorded = recorded_ids(out)
    for relative, text in expected.items():
        path = out / relative
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
            changes.append(f"wrote:   {relative}")
        recorded[relative] = blob_id(text)
    for relative, path in present.items():
        if relative in expected:
            continue
        if GENERATED_MARK in path.read_text(encoding="utf-8", errors="replace")[:400]:
            path.unlink()
            recorded.pop(relative, None)
            changes.append(f"removed: {relative}")
            if not any(path.parent.iterdir()):
                path.parent.rmdir()
        else:
            changes.append(f"left:    {relative} (not generated; remove it by hand)")
    (out / RECORD).write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n",
                              encoding="utf-8")
    return changes


def main(argv: list[str] | None = None, layout: Layout | None = None) -> int:
    """Command line entry: write (or --check) the generated files."""
    parser = argparse.ArgumentParser(prog="python -m tools.generate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a generated file is missing, stale or extra")
    parser.add_argument("--out", type=Path, default=None,
                        help="write into OUT/exercises and OUT/solutions instead of the repo")
    parser.add_argument(OVERWRITE_FLAG, dest="overwrite", action="store_true",
                        help="overwrite files that hold your own work too, after copying them "
                             f"into {BACKUP_DIR}/YYYYmmdd-HHMMSS/")
    args = parser.parse_args(argv)
    layout = layout or default_layout()
    out = args.out if args.out is not None else layout.root
    try:
        for problem in anchor_problems(layout):
            print(f"warning: {problem}", file=sys.stderr)
        if args.check:
            problems, unchecked = stale_files(layout, out)
            for problem in problems:
                print(problem)
            if unchecked:
                print(f"not checked (no git repository to read their committed copies; they "
                      f"may hold your work): {', '.join(unchecked)}")
            if problems:
                print("generated files are out of date: run python -m tools.generate")
                return 1
            print("exercises/ and solutions/ are up to date")
            return 0
        for change in write_files(layout, out, args.overwrite):
            print(change)
    except LearnersWorkError as error:
        print(f"error: {error}", file=sys.stderr)
        return 3
    except TaskError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
