"""MkDocs hooks: every chapter folder's README and notebooks become site pages and nav entries."""

from __future__ import annotations

import copy
import importlib
import json
import logging
import os
import posixpath
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mkdocs.plugins
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.plugins.tinyfw")

CHAPTER_DIR = re.compile(r"\d\d_[a-z0-9_]+")
CHAPTER_LIST_MARKER = "<!-- chapter-list -->"
# `<!-- ops-table: module.Enum -->` before a table whose rows start with `| \`NAME\` |`.
OPS_TABLE = re.compile(r"<!-- ops-table: ([\w.]+)\.(\w+) -->\n((?:\|.*\n?)+)")
NAV_ENTRY = "chapters.md"
# Markdown inline links/images `](target "title")`, reference definitions, and HTML src/href.
MD_LINK = re.compile(r"(\]\(\s*<?)([^)\s>]+)")
MD_REF = re.compile(r"(?m)^(\s{0,3}\[[^\]]+\]:\s*<?)(\S+?)(>?)(?=\s|$)")
HTML_LINK = re.compile(r"""((?:href|src)=")([^"]+)""")
FENCE = re.compile(r"(?ms)^(```|~~~).*?^\1")
CODE_SPAN = re.compile(r"`[^`\n]*`")
TEX_MATH = re.compile(r"\$\$|\$[^$\n]*\\[A-Za-z]+[^$\n]*\$|\\\(|\\\[")
# Scripts nbconvert's template adds to every notebook page; both would load code from a CDN.
MATHJAX_BLOCK = re.compile(r"(?s)<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->")
MERMAID_BLOCK = re.compile(
    r"(?s)<script type=\"module\">\s*document\.addEventListener\(\"DOMContentLoaded\", "
    r"async \(\) => \{\s*const diagrams = document\.querySelectorAll\(\"\.jp-Mermaid.*?"
    r"<!-- End of mermaid configuration -->"
)


@dataclass
class Chapter:
    """A chapter folder that has a README.md: its title, summary, and notebooks (src uris)."""

    folder: str
    title: str
    summary: str
    readme: str
    notebooks: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class State:
    """What one build found: the repo root, the nav as written in mkdocs.yml, the chapters."""

    root: Path = Path(".")
    docs_prefix: str = "site"
    nav: list[Any] | None = None
    chapters: list[Chapter] = field(default_factory=list)
    kernel_dir: tempfile.TemporaryDirectory[str] | None = None


STATE = State()


def is_external(target: str) -> bool:
    """True for links that leave the page's folder tree: schemes, absolute paths, pure anchors."""
    return target.startswith(("#", "/")) or re.match(r"[a-z][a-z0-9+.-]*:", target) is not None


def first_heading(text: str) -> str | None:
    """The text of the first level-1 ATX heading in a markdown text, outside code fences."""
    match = re.search(r"(?m)^#\s+(.+?)\s*#*\s*$", FENCE.sub("", text))
    return match.group(1).strip() if match else None


def first_sentence(text: str) -> str:
    """The first sentence of the first prose paragraph after the title of a markdown text."""
    for block in re.split(r"\n\s*\n", FENCE.sub("", text)):
        block = " ".join(line.strip() for line in block.strip().splitlines())
        if block and not block.startswith(("#", "|", "-", "*", ">", "<", "!", "1.")):
            block = re.sub(r"!?\[([^\]]*)\](\([^)]*\)|\[[^\]]*\])", r"\1", block)  # links -> text
            match = re.match(r"(.+?[.!?])(\s|$)", block)
            return match.group(1) if match else block
    return ""


def notebook_markdown(path: Path) -> list[str]:
    """The sources of the markdown cells of a notebook file."""
    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    return ["".join(c.get("source", "")) for c in cells if c.get("cell_type") == "markdown"]


def link_targets(text: str) -> list[str]:
    """Every relative link target (without its #anchor) in a markdown text."""
    text = CODE_SPAN.sub("", FENCE.sub("", text))
    found = [m.group(2) for pattern in (MD_LINK, MD_REF, HTML_LINK) for m in pattern.finditer(text)]
    return [t.split("#")[0] for t in found if not is_external(t) and t.split("#")[0]]


def repo_path(page_src: str, target: str) -> str:
    """The repo-relative path a relative link in a repo-relative source file points to."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(page_src), target))


def find_chapters(root: Path) -> list[Chapter]:
    """Every chapters/NN_name folder with a README.md, in order, with its notebooks."""
    base = root / "chapters"
    found = []
    for folder in sorted(base.iterdir()) if base.is_dir() else []:
        readme = folder / "README.md"
        if not (folder.is_dir() and CHAPTER_DIR.fullmatch(folder.name) and readme.is_file()):
            continue
        text = readme.read_text(encoding="utf-8")
        rel = f"chapters/{folder.name}"
        title = first_heading(text) or folder.name[3:].replace("_", " ").capitalize()
        chapter = Chapter(folder.name, title, first_sentence(text), f"{rel}/README.md")
        for nb in sorted(folder.glob("*.ipynb")):
            heading = next(filter(None, map(first_heading, notebook_markdown(nb))), None)
            label = heading or nb.stem.replace("_", " ")  # mkdocs-jupyter titles it the same
            chapter.notebooks.append((label, f"{rel}/{nb.name}"))
        found.append(chapter)
    return found


def chapters_nav(chapters: list[Chapter]) -> list[Any]:
    """The nav section for the chapters: the overview page, then one section per chapter."""
    items: list[Any] = [{"Overview": NAV_ENTRY}]
    for ch in chapters:
        items.append({ch.title: [ch.readme, *({label: uri} for label, uri in ch.notebooks)]})
    return items


def with_chapters(nav: list[Any], chapters: list[Chapter]) -> list[Any]:
    """The nav of mkdocs.yml with its `chapters.md` entry expanded into the chapter sections."""
    out, placed = [], False
    for item in nav:
        if isinstance(item, dict) and list(item.values()) == [NAV_ENTRY]:
            out.append({next(iter(item)): chapters_nav(chapters)})
            placed = True
        else:
            out.append(item)
    return out if placed else [*out, {"Chapters": chapters_nav(chapters)}]


def install_kernel() -> None:
    """Make the `python3` kernel the Python running mkdocs, whatever user kernelspecs exist."""
    if STATE.kernel_dir is None:
        STATE.kernel_dir = tempfile.TemporaryDirectory(prefix="tinyfw-kernel-")
        spec_dir = Path(STATE.kernel_dir.name, "kernels", "python3")
        spec_dir.mkdir(parents=True)
        spec = {
            # ERROR level: hides ipykernel's note that a local kernel talks TCP without encryption.
            "argv": [sys.executable, "-m", "ipykernel_launcher", "--log-level=ERROR",
                     "-f", "{connection_file}"],
            "display_name": "Python 3 (tinyfw)",
            "language": "python",
        }
        (spec_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
        others = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
        os.environ["JUPYTER_PATH"] = os.pathsep.join([STATE.kernel_dir.name, *others])


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Remember the repo root and the nav as written, and pin the notebook kernel."""
    STATE.root = Path(config.config_file_path).resolve().parent
    STATE.docs_prefix = Path(config.docs_dir).resolve().relative_to(STATE.root).as_posix()
    STATE.nav = copy.deepcopy(config.nav)
    install_kernel()
    return config


@mkdocs.plugins.event_priority(100)  # before mkdocs-jupyter wraps the .ipynb files
def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add each chapter's README and notebooks, and the repo files they link to; set the nav."""
    root = STATE.root
    STATE.chapters = find_chapters(root)

    def add(src: str) -> None:
        if files.get_file_from_path(src) is None:
            files.append(File(src, src_dir=str(root), dest_dir=config.site_dir,
                              use_directory_urls=config.use_directory_urls))

    def add_linked(src: str, text: str) -> None:
        for target in link_targets(text):  # e.g. a drawing or a source file the page points at
            path = repo_path(src, target)
            inside = not path.startswith("..") and not path.startswith(STATE.docs_prefix + "/")
            if inside and (root / path).is_file() and Path(path).suffix not in (".md", ".ipynb"):
                add(path)

    for ch in STATE.chapters:
        add(ch.readme)
        add_linked(ch.readme, (root / ch.readme).read_text(encoding="utf-8"))
        for _, nb in ch.notebooks:
            add(nb)
            add_linked(nb, "\n\n".join(notebook_markdown(root / nb)))
    config.nav = with_chapters(STATE.nav or [], STATE.chapters)
    return files


def site_target(page_src: str, target: str) -> str | None:
    """For a link in a chapter README: the same link made to work on the site, if it must change."""
    path, _, anchor = target.partition("#")
    if not path or is_external(path):
        return None
    full = repo_path(page_src, path)
    if full.startswith(STATE.docs_prefix + "/"):
        new = full[len(STATE.docs_prefix) + 1:]
    elif (STATE.root / full / "README.md").is_file() and full.startswith("chapters/"):
        new = f"{full}/README.md"
    else:
        return None
    rel = posixpath.relpath(new, posixpath.dirname(page_src))
    return rel + (f"#{anchor}" if anchor else "")


def chapter_list(page: Page, files: Files) -> str:
    """A markdown list of the chapters present, with links relative to the overview page."""
    if not STATE.chapters:
        return "*No chapter folder is present yet.*"
    lines = []
    for ch in STATE.chapters:
        link = posixpath.relpath(ch.readme, posixpath.dirname(page.file.src_uri))
        extra = "".join(
            f" · [{label}]({posixpath.relpath(uri, posixpath.dirname(page.file.src_uri))})"
            for label, uri in ch.notebooks
        )
        summary = f" — {ch.summary}" if ch.summary else ""
        lines.append(f"- [**{ch.title}**]({link}){summary}{extra}")
    return "\n".join(lines)


def check_ops_table(markdown: str, page: Page) -> None:
    """Warn when a marked table of ops and the enum it documents name different members."""
    for match in OPS_TABLE.finditer(markdown):
        module, enum = match.group(1), match.group(2)
        try:
            members = {m.name for m in getattr(importlib.import_module(module), enum)}
        except (ImportError, AttributeError) as error:
            log.warning(f"'{page.file.src_uri}': cannot import {module}.{enum}: {error}")
            continue
        rows = set(re.findall(r"(?m)^\|\s*`(\w+)`\s*\|", match.group(3)))
        if rows != members:
            log.warning(f"'{page.file.src_uri}': the table of {module}.{enum} lacks "
                        f"{sorted(members - rows)} and has extra {sorted(rows - members)}")


def check_no_tex(markdown: str, page: Page) -> None:
    """Warn about TeX math: the site loads no MathJax, so it would show as raw TeX."""
    if TEX_MATH.search(CODE_SPAN.sub("", FENCE.sub("", markdown))):
        log.warning(f"'{page.file.src_uri}' has TeX math, which the site cannot typeset (it loads "
                    "no MathJax): write the formula in plain text or Unicode instead.")


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Fill in the chapter list; make a chapter README's repo-relative links point at site pages."""
    check_ops_table(markdown, page)
    check_no_tex(markdown, page)
    if CHAPTER_LIST_MARKER in markdown:
        markdown = markdown.replace(CHAPTER_LIST_MARKER, chapter_list(page, files))
    src = page.file.src_uri
    if any(src == ch.readme for ch in STATE.chapters):
        def fix(match: re.Match[str]) -> str:
            new = site_target(src, match.group(2))
            return match.group(1) + (new if new is not None else match.group(2)) + (
                match.group(3) if match.re is MD_REF else "")
        markdown = MD_LINK.sub(fix, markdown)
        markdown = MD_REF.sub(fix, markdown)
    return markdown


def notebook_links(html: str, page: Page, files: Files) -> str:
    """Point a notebook's relative links at the site's pages; warn about those that lead nowhere."""
    src = page.file.src_uri

    def fix(match: re.Match[str]) -> str:
        target = match.group(2)
        path, _, anchor = target.partition("#")
        if not path or is_external(path):
            return match.group(0)
        new = site_target(src, target)
        uri = repo_path(src, new.partition("#")[0]) if new else repo_path(src, path)
        found = files.get_file_from_path(uri)
        if found is None:
            log.warning(f"Notebook '{src}' links to '{target}', which is not in the site.")
            return match.group(0)
        return match.group(1) + found.url_relative_to(page.file) + (f"#{anchor}" if anchor else "")

    return HTML_LINK.sub(fix, html)


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """On notebook pages: drop the CDN MathJax/mermaid loaders nbconvert adds; fix links."""
    if not page.file.src_uri.endswith(".ipynb"):
        return html
    nb_path = STATE.root / page.file.src_uri
    check_no_tex("\n\n".join(notebook_markdown(nb_path)), page)
    html = MATHJAX_BLOCK.sub("", html)
    html = MERMAID_BLOCK.sub("", html)
    return notebook_links(html, page, files)


def on_serve(server: Any, config: MkDocsConfig, builder: Any) -> Any:
    """Rebuild when a chapter's README or notebook changes under `mkdocs serve`."""
    server.watch(str(STATE.root / "chapters"))
    return server
