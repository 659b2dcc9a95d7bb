"""Writes exercises/ and solutions/ from tinyfw's exercise markers: python -m tools.generate."""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

from chapters.tasks import (ExerciseModule, Layout, TaskError, anchor_problems, chapter_dirs,
                            default_layout, exercise_modules)

KINDS = ("exercises", "solutions")
GENERATED_MARK = "by `python -m tools.generate`"
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


def stale_files(layout: Layout, out: Path) -> list[str]:
    """Lines naming each missing, stale or extra generated file under out."""
    expected, present = generated_files(layout), existing_files(out)
    problems = []
    for relative, text in expected.items():
        if relative not in present:
            problems.append(f"missing: {relative}")
        elif present[relative].read_text(encoding="utf-8") != text:
            problems.append(f"stale:   {relative}")
    problems += [f"extra:   {relative}" for relative in present if relative not in expected]
    return problems


def write_files(layout: Layout, out: Path) -> list[str]:
    """Writes every generated file under out, deletes generated files no longer wanted."""
    expected, present = generated_files(layout), existing_files(out)
    changes = []
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
    parser = argparse.ArgumentParser(prog="python -m tools.generate", description=__doc__)
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a generated file is missing, stale or extra")
    parser.add_argument("--out", type=Path, default=None,
                        help="write into OUT/exercises and OUT/solutions instead of the repo")
    args = parser.parse_args(argv)
    layout = layout or default_layout()
    out = args.out if args.out is not None else layout.root
    try:
        for problem in anchor_problems(layout):
            print(f"warning: {problem}", file=sys.stderr)
        if args.check:
            problems = stale_files(layout, out)
            for problem in problems:
                print(problem)
            if problems:
                print("generated files are out of date: run python -m tools.generate")
                return 1
            print("exercises/ and solutions/ are up to date")
            return 0
        for change in write_files(layout, out):
            print(change)
    except TaskError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
