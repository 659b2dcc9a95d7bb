"""The architecture page matches the tree: a box for each folder of tinyfw/, no stale path."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "site" / "architecture.md"
SVG = "{http://www.w3.org/2000/svg}"
# A path inside the tree, like tinyfw/engine/ or tinyfw/uop/ops.py (not ~/.cache/tinyfw/...).
TREE_PATH = re.compile(r"(?<![\w/.~-])tinyfw/(?:[\w.]+/)*(?:\w+\.\w+)?")
# A file named without its folder, like ops.py or cuda_emu.h.
BARE_NAME = re.compile(r"(?<![\w/.-])\w+\.(?:py|h)\b")


def drawing() -> Path:
    """The one SVG picture the page shows."""
    pictures = re.findall(r"\]\((assets/[\w.-]+\.svg)\)", PAGE.read_text(encoding="utf-8"))
    assert len(pictures) == 1, f"architecture.md should show one SVG drawing, shows {pictures}"
    return PAGE.parent / pictures[0]


def boxes() -> list[str]:
    """The text of each box of the drawing (each <g class="box">)."""
    root = ET.parse(drawing()).getroot()
    found = ["".join(g.itertext()) for g in root.iter(f"{SVG}g") if g.get("class") == "box"]
    assert found, f"{drawing().name} has no <g class=\"box\">"
    return found


def tree_paths(text: str) -> list[str]:
    """Every tinyfw/... path named in a text, in order."""
    return TREE_PATH.findall(text)


def exists(path: str) -> bool:
    """True when a path of the tree is there: a folder for a/b/, a file otherwise."""
    target = ROOT / path
    return target.is_dir() if path.endswith("/") else target.is_file()


def packages() -> set[str]:
    """Every package folder below tinyfw/ (a folder with an __init__.py), as tinyfw/x/."""
    base = ROOT / "tinyfw"
    return {f"{init.parent.relative_to(ROOT).as_posix()}/" for init in base.rglob("__init__.py")
            if init.parent != base}


def box_problems(text: str) -> list[str]:
    """What is wrong with one box: no path, a path that does not exist, a file not in its folder."""
    paths = tree_paths(text)
    if not paths:
        return [f"a box names no tinyfw/ path: {text.split()!r}"]
    problems = [f"{p} (named in a box) does not exist" for p in paths if not exists(p)]
    folder = paths[0] if paths[0].endswith("/") else paths[0].rsplit("/", 1)[0] + "/"
    problems += [f"{name} is not in {folder}, the folder of its box" for name in
                 BARE_NAME.findall(TREE_PATH.sub("", text)) if not exists(folder + name)]
    return problems


def test_box_problems_catches_a_stale_box() -> None:
    """The check itself fails on a box whose folder or files are gone."""
    assert box_problems("tinyfw/engine/ schedule.py realize.py") == []
    assert box_problems("Renderer, compiler, runtime") != []
    assert box_problems("tinyfw/renderer_c.py") != []
    assert box_problems("tinyfw/engine/ runtime_cl.py") != []


def test_every_box_names_paths_that_exist() -> None:
    """Each box of the drawing names a folder or file of tinyfw/ that is there, and its files."""
    problems = [problem for text in boxes() for problem in box_problems(text)]
    assert not problems, "\n".join(problems)


def test_every_package_has_a_box() -> None:
    """Each package folder of tinyfw/ is named as the folder of some box of the drawing."""
    named = {path for text in boxes() for path in tree_paths(text)}
    missing = sorted(packages() - named)
    assert not missing, f"folders of tinyfw/ with no box in {drawing().name}: {missing}"


def test_page_names_only_files_that_exist() -> None:
    """Every tinyfw/ path on the page exists, and every `file.py` it names is in tinyfw/."""
    text = PAGE.read_text(encoding="utf-8")
    gone = [p for p in tree_paths(text) if not exists(p)]
    known = {f.name for f in (ROOT / "tinyfw").rglob("*") if f.is_file()}
    gone += [name for name in re.findall(r"`(\w+\.(?:py|h))`", text) if name not in known]
    assert not gone, f"architecture.md names files that do not exist: {sorted(set(gone))}"


def test_only_the_runtimes_use_ctypes() -> None:
    """ctypes loads and calls compiled kernels, in tinyfw/runtime/ alone: no module elsewhere
    imports it (the engine reads no interpreter internals, issue 39)."""
    users = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "tinyfw").rglob("*.py")
                   if re.search(r"^\s*(import ctypes|from ctypes\b)", path.read_text(), re.M)
                   and "runtime" not in path.relative_to(ROOT / "tinyfw").parts[:1])
    assert users == [], f"ctypes imported outside tinyfw/runtime/: {users}"
