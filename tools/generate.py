"""Writes exercises/ and solutions/ from tinyfw's exercise markers: python -m tools.generate.

A learner's work is never overwritten. Each generated file states the id of its own text (a line
of its header): a file whose text no longer matches its id holds the learner's edits, and then
this command writes nothing and names the files. --overwrite-my-work keeps a copy of them in
.backup/YYYYmmdd-HHMMSS/ first and says where.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import re
import shutil
import sys
import time
from pathlib import Path

from chapters.tasks import (ExerciseModule, Layout, TaskError, anchor_problems, chapter_dirs,
                            default_layout, exercise_modules)

KINDS = ("exercises", "solutions")
GENERATED_MARK = "by `python -m tools.generate`"
HEADER_LINES = 3  # the comment lines opening a generated file, before its id line
ID_LINE = "# generated text id: {id} (lets tools.generate tell your edits apart)\n"
ID_RE = re.compile(r"# generated text id: (?P<id>[0-9a-f]{16})\b")
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


def render(kind: str, exercise: ExerciseModule, layout: Layout, folder: Path) -> str:
    """Text of the exercise or solution file of one exercise module."""
    source = exercise.path.read_text(encoding="utf-8")
    lines = absolute_imports(source, exercise)
    if kind == "exercises":
        readme = (folder / "README.md").relative_to(layout.root).as_posix()
        for region in sorted(exercise.regions, key=lambda r: r.open_line, reverse=True):
            stub = stub_lines(region.indent, region.task_id, f"{readme}#{region.anchor}")
            lines[region.open_line - 1:region.close_line] = stub
    text = header(kind, exercise, layout, folder) + "".join(lines)
    if not text.endswith("\n"):
        text += "\n"
    try:
        compile(text, f"{kind}/{folder.name}/{exercise.basename}", "exec", dont_inherit=True)
    except SyntaxError as error:
        raise TaskError(f"{exercise.path}: the generated {kind} file does not compile "
                        f"(line {error.lineno}: {error.msg}); does each region hold whole "
                        "statements?") from error
    return with_id(text)


def text_id(text: str) -> str:
    """The id of a generated file's text (without its id line): 16 hex digits of its sha256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def with_id(text: str) -> str:
    """text with its id line put in after the header's comment lines."""
    lines = text.splitlines(keepends=True)
    line = ID_LINE.format(id=text_id(text))
    return "".join(lines[:HEADER_LINES] + [line] + lines[HEADER_LINES:])


def stated_id(text: str) -> tuple[str | None, bool]:
    """(the id a generated file's header states or None, whether the rest of its text still has
    that id: the file is as generated, with no edit of a learner)."""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines[:HEADER_LINES + 2]):
        match = ID_RE.match(line)
        if match:
            rest = "".join(lines[:index] + lines[index + 1:])
            return match["id"], text_id(rest) == match["id"]
    return None, False


def untouched(relative: str, text: str) -> bool:
    """Whether the file at relative (like exercises/02_tensors/gradient.py) is as the generator
    wrote it there: no learner's edit, and no other file copied in (a solution copied into
    exercises/ is a learner's work too)."""
    opening = "# Exercises of" if relative.startswith("exercises/") else "# Solutions of"
    return text.startswith(opening) and stated_id(text)[1]


def stub_spans(exercise: ExerciseModule, layout: Layout,
               folder: Path) -> tuple[list[str], list[tuple[str, int, int]]]:
    """The exercise file's lines (with line ends, its header included) and, for each region,
    (task id, first line index, index past its last line) of the stub lines that replace it."""
    lines = render("exercises", exercise, layout, folder).splitlines(keepends=True)
    spans: list[tuple[str, int, int]] = []
    shift = HEADER_LINES + 1
    for region in sorted(exercise.regions, key=lambda r: r.open_line):
        start = region.open_line - 1 + shift
        spans.append((region.task_id, start, start + 3))
        shift += 3 - (region.close_line - region.open_line + 1)
    return lines, spans


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


def stale_files(layout: Layout, out: Path, strict: bool = False) -> tuple[list[str], list[str]]:
    """(problems, unchecked): lines naming each generated file under out that is missing, stale
    or extra, and the files that could not be checked. A file a learner edited is up to date
    when the id its header states is a generated text's (its stub's, or its solution's copied
    in): it was generated from tinyfw's markers as they are; one whose id is of an older stub
    (tinyfw changed since the learner started it) is not checked, never a failure of the
    learner's. strict (a fresh clone in CI, where no one's work is) wants every file exactly as
    generated and no extra file."""
    expected, present = generated_files(layout), existing_files(out)
    ids = {stated_id(text)[0] for text in expected.values()}
    problems, unchecked = [], []
    for relative, text in expected.items():
        here = present.get(relative)
        if here is None:
            problems.append(f"missing: {relative}")
            continue
        found = here.read_text(encoding="utf-8", errors="replace")
        if found == text:
            continue
        found_id = stated_id(found)[0]
        if strict or untouched(relative, found):
            problems.append(f"stale:   {relative}")
        elif found_id is None:
            unchecked.append(relative)
        elif found_id not in ids:  # a learner's work on a stub tinyfw has changed since:
            # never a failure of theirs (`python -m chapters reset` takes the new stub)
            unchecked.append(f"{relative} (your edits to an older stub)")
    for relative, path in present.items():
        if relative in expected:
            continue
        found = path.read_text(encoding="utf-8", errors="replace")
        if strict or (GENERATED_MARK in found[:400] and untouched(relative, found)):
            problems.append(f"extra:   {relative}")
    return problems, unchecked


def learners_files(layout: Layout, out: Path) -> list[str]:
    """The generated files under out that hold a learner's work: each would be overwritten or
    removed by write_files, and its text no longer has the id its header states."""
    expected, present = generated_files(layout), existing_files(out)
    found = []
    for relative, path in present.items():
        text = path.read_text(encoding="utf-8", errors="replace")
        if relative in expected:
            if text != expected[relative] and not untouched(relative, text):
                found.append(relative)
        elif GENERATED_MARK in text[:400] and not untouched(relative, text):
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
    for relative, text in expected.items():
        path = out / relative
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
            changes.append(f"wrote:   {relative}")
    for relative, path in present.items():
        if relative in expected:
            continue
        if GENERATED_MARK in path.read_text(encoding="utf-8", errors="replace")[:400]:
            path.unlink()
            changes.append(f"removed: {relative}")
            if not any(path.parent.iterdir()):
                path.parent.rmdir()
        else:
            changes.append(f"left:    {relative} (not generated; remove it by hand)")
    return changes


def main(argv: list[str] | None = None, layout: Layout | None = None) -> int:
    """Command line entry: write (or --check) the generated files."""
    parser = argparse.ArgumentParser(prog="python -m tools.generate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a generated file is missing, stale or extra")
    parser.add_argument("--out", type=Path, default=None,
                        help="write into OUT/exercises and OUT/solutions instead of the repo")
    parser.add_argument("--strict", action="store_true",
                        help="with --check: every file exactly as generated (a fresh clone)")
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
            problems, unchecked = stale_files(layout, out, args.strict)
            for problem in problems:
                print(problem)
            if unchecked:
                print(f"not checked (your edits, of no current stub): {', '.join(unchecked)}")
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
