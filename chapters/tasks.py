"""Exercise tasks of the course, discovered from the markers in tinyfw's source."""

from __future__ import annotations

import ast
import itertools
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

OPEN_RE = re.compile(r"^(?P<indent>[ \t]*)# >>> exercise (?P<chapter>\d\d)\."
                     r"(?P<name>[a-z_][a-z0-9_]*) #(?P<anchor>[A-Za-z0-9_-]+)[ \t]*$")
CLOSE_RE = re.compile(r"^(?P<indent>[ \t]*)# <<< exercise[ \t]*$")
LOOSE_RE = re.compile(r"#\s*(>>>|<<<)\s*exercise\b")
CHAPTER_RE = re.compile(r"^(?P<number>\d\d)_[A-Za-z0-9_]+$")
HEADING_RE = re.compile(r"^(?P<level>#{1,6})[ \t]+(?P<text>.+?)[ \t#]*$")


class TaskError(Exception):
    """Raised when exercise markers or chapter folders break the course contract."""


@dataclass(frozen=True)
class Layout:
    """Where the framework package, the chapters and the generated code live."""

    root: Path
    package: str = "tinyfw"

    @property
    def package_dir(self) -> Path:
        """Folder of the framework package."""
        return self.root / self.package

    @property
    def chapters_dir(self) -> Path:
        """Folder holding the NN_name chapter folders."""
        return self.root / "chapters"

    @property
    def exercises_dir(self) -> Path:
        """Folder of the generated exercise files."""
        return self.root / "exercises"

    @property
    def solutions_dir(self) -> Path:
        """Folder of the generated solution files."""
        return self.root / "solutions"


def default_layout() -> Layout:
    """The layout of the repository this file lives in."""
    return Layout(Path(__file__).resolve().parent.parent)


@dataclass(frozen=True)
class Region:
    """One marked region of solution code inside a function body."""

    chapter: str
    name: str
    anchor: str
    path: Path
    module: str
    open_line: int
    close_line: int
    indent: str
    qualname: str

    @property
    def task_id(self) -> str:
        """Task id like 02.toposort."""
        return f"{self.chapter}.{self.name}"


@dataclass(frozen=True)
class Unit:
    """A function or method the learner writes (partly): where it lives in the package."""

    module: str
    qualname: str
    path: Path

    @property
    def basename(self) -> str:
        """File name of the module, like gradient.py."""
        return self.path.name


@dataclass(frozen=True)
class Task:
    """One exercise task: all regions sharing an id like 02.toposort."""

    id: str
    chapter: str
    name: str
    anchor: str
    units: tuple[Unit, ...]

    @property
    def files(self) -> tuple[Path, ...]:
        """Source files holding the task's regions, in order of first appearance."""
        return tuple(dict.fromkeys(unit.path for unit in self.units))


@dataclass(frozen=True)
class ExerciseModule:
    """A framework module holding regions of one chapter."""

    path: Path
    module: str
    chapter: str
    regions: tuple[Region, ...] = field(default=())

    @property
    def basename(self) -> str:
        """File name of the module, like gradient.py."""
        return self.path.name


def module_name(layout: Layout, path: Path) -> str:
    """Dotted module name of a file inside the package."""
    parts = list(path.relative_to(layout.root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _where(path: Path, line: int) -> str:
    """A file:line location for messages."""
    return f"{path}:{line}"


Span = tuple[int, int, int, str]


def _function_spans(tree: ast.Module) -> list[Span]:
    """(def line, first body line, last line, patchable qualname) of every def.

    A def nested in a function cannot be patched on its own, so it reports the qualname of
    the outermost function reachable through classes only.
    """
    spans: list[Span] = []

    def visit(node: ast.AST, path: list[str], unit: str | None) -> None:
        """Records the defs under node; path is the dotted prefix, unit the enclosing def."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, path + [child.name], unit)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = unit or ".".join(path + [child.name])
                assert child.end_lineno is not None
                spans.append((child.lineno, child.body[0].lineno, child.end_lineno, qualname))
                visit(child, path + [child.name], qualname)
            else:
                visit(child, path, unit)

    visit(tree, [], None)
    return spans


def _code_lines(lines: list[str], start: int, stop: int) -> list[int]:
    """1-based numbers of lines in [start, stop) that hold code, not blanks or comments."""
    return [number for number in range(start, stop)
            if lines[number - 1].strip() and not lines[number - 1].strip().startswith("#")]


def _enclosing(spans: list[Span], open_line: int, first: int, last: int) -> str | None:
    """Qualname of the innermost def whose body holds code lines first..last after open_line."""
    best: Span | None = None
    for span in spans:
        def_line, body_first, end, _qualname = span
        inside = def_line < open_line and body_first <= first and last <= end
        if inside and (best is None or body_first >= best[1]):
            best = span
    return None if best is None else best[3]


def _start(node: ast.stmt) -> int:
    """First line of a statement, decorators included."""
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [decorator.lineno for decorator in decorators])


def _whole_statements(tree: ast.Module, code: list[int], indent: int) -> bool:
    """Whether the code lines are exactly whole statements of one block, at the indent."""
    first, last = code[0], code[-1]
    inside: list[tuple[int, int, int]] = []
    for parent in ast.walk(tree):
        for _name, value in ast.iter_fields(parent):
            if not isinstance(value, list):
                continue
            for child in value:
                if not isinstance(child, ast.stmt):
                    continue
                start, end = _start(child), child.end_lineno or child.lineno
                if first <= start and end <= last:
                    inside.append((start, end, id(value) if child.col_offset == indent else -1))
                elif not (end < first or start > last or (start < first and end >= last)):
                    return False
    outermost = [span for span in inside
                 if not any(o[0] <= span[0] and span[1] <= o[1] and o != span for o in inside)]
    covered = {line for start, end, _block in outermost for line in range(start, end + 1)}
    blocks = {block for _start, _end, block in outermost}
    return len(blocks) == 1 and -1 not in blocks and set(code) <= covered


def scan_source(layout: Layout, path: Path, source: str) -> list[Region]:
    """Exercise regions of one source file; raises TaskError on a malformed or misplaced one."""
    lines = source.splitlines()
    regions: list[Region] = []
    opened: tuple[int, re.Match[str]] | None = None
    raw: list[tuple[int, int, re.Match[str]]] = []
    for number, line in enumerate(lines, start=1):
        if not LOOSE_RE.search(line):
            continue
        open_match, close_match = OPEN_RE.match(line), CLOSE_RE.match(line)
        if open_match:
            if opened is not None:
                raise TaskError(f"{_where(path, number)}: exercise region opened inside the one "
                                f"opened on line {opened[0]}; close it first with '# <<< exercise'")
            opened = (number, open_match)
        elif close_match:
            if opened is None:
                raise TaskError(f"{_where(path, number)}: '# <<< exercise' without an opening "
                                "'# >>> exercise NN.task #anchor'")
            if close_match["indent"] != opened[1]["indent"]:
                raise TaskError(f"{_where(path, number)}: closing marker is not indented like "
                                f"its opening marker on line {opened[0]}")
            raw.append((opened[0], number, opened[1]))
            opened = None
        else:
            raise TaskError(f"{_where(path, number)}: malformed exercise marker {line.strip()!r}; "
                            "write '# >>> exercise NN.task #anchor' or '# <<< exercise'")
    if opened is not None:
        raise TaskError(f"{_where(path, opened[0])}: exercise region never closed "
                        "(add '# <<< exercise')")
    if not raw:
        return regions
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as error:
        raise TaskError(f"{_where(path, error.lineno or 0)}: cannot parse: {error.msg}") from error
    spans = _function_spans(tree)
    module = module_name(layout, path)
    for open_line, close_line, match in raw:
        code = _code_lines(lines, open_line + 1, close_line)
        if not code:
            raise TaskError(f"{_where(path, open_line)}: exercise region holds no code")
        qualname = _enclosing(spans, open_line, code[0], code[-1])
        if qualname is None:
            raise TaskError(f"{_where(path, open_line)}: exercise region must lie inside the body "
                            "of one function or method")
        if not _whole_statements(tree, code, len(match["indent"])):
            raise TaskError(f"{_where(path, open_line)}: exercise region must hold whole "
                            "statements of one block (all at the marker's indentation)")
        regions.append(Region(chapter=match["chapter"], name=match["name"],
                              anchor=match["anchor"], path=path, module=module,
                              open_line=open_line, close_line=close_line,
                              indent=match["indent"], qualname=qualname))
    chapters = sorted({region.chapter for region in regions})
    if len(chapters) > 1:
        raise TaskError(f"{path}: regions of chapters {', '.join(chapters)} in one module; "
                        "a module holds exercises of one chapter only")
    return regions


def exercise_modules(layout: Layout | None = None) -> list[ExerciseModule]:
    """All exercise modules of the package, sorted by path."""
    layout = layout or default_layout()
    modules: list[ExerciseModule] = []
    for path in sorted(layout.package_dir.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        regions = scan_source(layout, path, path.read_text(encoding="utf-8"))
        if regions:
            modules.append(ExerciseModule(path=path, module=module_name(layout, path),
                                          chapter=regions[0].chapter, regions=tuple(regions)))
    seen: dict[tuple[str, str], Path] = {}
    for exercise in modules:
        key = (exercise.chapter, exercise.basename)
        if key in seen:
            raise TaskError(f"{exercise.path} and {seen[key]} are both exercise modules of "
                            f"chapter {exercise.chapter} named {exercise.basename}")
        seen[key] = exercise.path
    return modules


def discover(layout: Layout | None = None, chapter: str | None = None) -> list[Task]:
    """All tasks (of one chapter, if given) in the order a learner meets them (task order)."""
    layout = layout or default_layout()
    found = sorted(_discover_unordered(layout), key=lambda task: task.chapter)
    result = [task for _chapter, tasks in itertools.groupby(found, lambda task: task.chapter)
              for task in reading_order(list(tasks), layout)]
    if chapter is not None:
        result = [task for task in result if task.chapter == normalize_chapter(chapter)]
    return result


def reading_order(tasks: list[Task], layout: Layout) -> list[Task]:
    """Tasks of one chapter ordered by the README heading that teaches each (README order);
    tasks whose anchor is no heading keep their place after the others."""
    folder = chapter_dirs(layout).get(tasks[0].chapter) if tasks else None
    readme = folder / "README.md" if folder is not None else None
    if readme is None or not readme.is_file():
        return tasks
    ids = heading_ids(readme.read_text(encoding="utf-8"))
    position = {anchor: index for index, anchor in enumerate(ids)}
    return sorted(tasks, key=lambda task: position.get(task.anchor, len(ids)))


def _discover_unordered(layout: Layout) -> list[Task]:
    """All tasks, ordered by chapter, then first appearance in the package's files."""
    tasks: dict[str, list[Region]] = {}
    for exercise in exercise_modules(layout):
        for region in exercise.regions:
            tasks.setdefault(region.task_id, []).append(region)
    result: list[Task] = []
    for task_id, regions in sorted(tasks.items(), key=lambda item: item[0][:2]):
        anchors = sorted({region.anchor for region in regions})
        if len(anchors) > 1:
            raise TaskError(f"task {task_id} has anchors {', '.join('#' + a for a in anchors)}; "
                            "give all its regions one anchor")
        units = tuple(dict.fromkeys(Unit(region.module, region.qualname, region.path)
                                    for region in regions))
        first = regions[0]
        result.append(Task(id=task_id, chapter=first.chapter, name=first.name,
                           anchor=first.anchor, units=units))
    return result


def normalize_chapter(chapter: str | int) -> str:
    """Two-digit chapter number from 2, "2", "02" or "02_tensors"."""
    text = str(chapter).strip()
    digits = re.match(r"\d+", text)
    if digits is None:
        raise TaskError(f"not a chapter number: {chapter!r}")
    return f"{int(digits.group()):02d}"


def chapter_dirs(layout: Layout | None = None) -> dict[str, Path]:
    """Chapter number -> chapters/NN_name folder."""
    layout = layout or default_layout()
    found: dict[str, Path] = {}
    if not layout.chapters_dir.is_dir():
        return found
    for path in sorted(layout.chapters_dir.iterdir()):
        match = CHAPTER_RE.match(path.name)
        if match and path.is_dir():
            if match["number"] in found:
                raise TaskError(f"two folders for chapter {match['number']}: "
                                f"{found[match['number']].name} and {path.name}")
            found[match["number"]] = path
    return found


def chapter_dir(chapter: str | int, layout: Layout | None = None) -> Path:
    """The chapters/NN_name folder of a chapter; TaskError if there is none."""
    number = normalize_chapter(chapter)
    folders = chapter_dirs(layout)
    if number not in folders:
        root = (layout or default_layout()).chapters_dir
        raise TaskError(f"no chapter folder {root}/{number}_*/ for chapter {number}")
    return folders[number]


def chapter_title(folder: Path) -> str:
    """Text of the first heading of a chapter's README.md, or the folder name."""
    readme = folder / "README.md"
    if readme.is_file():
        for text, _level in headings(readme.read_text(encoding="utf-8")):
            return text
    return folder.name


def slugify(text: str, separator: str = "-") -> str:
    """Heading id the way mkdocs' default toc extension makes it."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(rf"[{separator}\s]+", separator, text)


def _heading_text(raw: str) -> tuple[str, str | None]:
    """Plain heading text without inline markup, and an explicit {#id} if present."""
    explicit = None
    attrs = re.search(r"\s*\{([^}]*)\}\s*$", raw)
    if attrs:
        ids = re.findall(r"#([\w-]+)", attrs.group(1))
        explicit = ids[0] if ids else None
        raw = raw[:attrs.start()]
    pieces = re.split(r"(`[^`]*`)", raw)
    plain = []
    for index, piece in enumerate(pieces):
        if index % 2:
            plain.append(piece.strip("`"))
            continue
        piece = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", piece)
        piece = re.sub(r"<[^>]+>", "", piece)
        plain.append(re.sub(r"(\*\*|\*)(.+?)\1", r"\2", piece))
    return "".join(plain).strip(), explicit


def headings(markdown: str) -> list[tuple[str, int]]:
    """(plain text, level) of each ATX heading outside fenced code blocks."""
    found: list[tuple[str, int]] = []
    fence: str | None = None
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            fence = None if fence == marker else (fence or marker)
            continue
        match = HEADING_RE.match(line)
        if fence is None and match:
            found.append((_heading_text(match["text"])[0], len(match["level"])))
    return found


def heading_ids(markdown: str) -> list[str]:
    """Ids mkdocs gives the headings of a page, duplicates numbered _1, _2, ..."""
    ids: list[str] = []
    fence: str | None = None
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            fence = None if fence == marker else (fence or marker)
            continue
        match = HEADING_RE.match(line)
        if fence is not None or not match:
            continue
        text, explicit = _heading_text(match["text"])
        slug = explicit or slugify(text)
        base, count = slug, 0
        while slug in ids:
            count += 1
            slug = f"{base}_{count}"
        ids.append(slug)
    return ids


def anchor_problems(layout: Layout | None = None) -> list[str]:
    """Problems with task anchors and chapter folders: each anchor must be a README heading."""
    layout = layout or default_layout()
    problems: list[str] = []
    folders = chapter_dirs(layout)
    for task in discover(layout):
        folder = folders.get(task.chapter)
        if folder is None:
            problems.append(f"task {task.id}: no chapter folder chapters/{task.chapter}_*/")
            continue
        readme = folder / "README.md"
        if not readme.is_file():
            problems.append(f"task {task.id}: {readme.relative_to(layout.root)} is missing")
            continue
        if task.anchor not in heading_ids(readme.read_text(encoding="utf-8")):
            problems.append(f"task {task.id}: #{task.anchor} is not a heading of "
                            f"{readme.relative_to(layout.root)}")
    return problems


def display_path(path: Path, layout: Layout | None = None) -> str:
    """A path relative to the repository root when inside it, else absolute."""
    root = (layout or default_layout()).root
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def task_pointer(task: Task, impl_dir: Path, layout: Layout | None = None) -> str:
    """'fill in f() in exercises/NN_x/m.py; read chapters/NN_x/README.md#anchor'."""
    folder = chapter_dir(task.chapter, layout)
    by_file: dict[str, list[str]] = {}
    for unit in task.units:
        by_file.setdefault(unit.basename, []).append(f"{unit.qualname}()")
    places = [f"{join_words(names)} in {display_path(impl_dir / folder.name / basename, layout)}"
              for basename, names in by_file.items()]
    readme = display_path(folder / "README.md", layout)
    return f"fill in {join_words(places)}; read {readme}#{task.anchor}"


def join_words(words: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
