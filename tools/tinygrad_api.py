"""Lists the public names of tinygrad's Tensor by parsing tinygrad's source (tinygrad is not run).

Refresh the checked-in list (tinygrad installed, e.g. `pip install -e .[bench]`):

    python -m tools.tinygrad_api > tests/data/tinygrad_tensor_api.txt

A name counts when a class body of Tensor or of a class it inherits from (found by following the
`from tinygrad... import` lines of each module) defines it: a def, an assignment, an annotation or
an entry of __slots__. Names starting with "_" are left out, except the dunders that are operators
or protocols a user calls (`a + b`, `a[i]`, `len(a)`); the dunders in NOT_API are left out.
"""
from __future__ import annotations

import argparse
import ast
import importlib.metadata
import importlib.util
import sys
from pathlib import Path

# Dunders every Python object has or that only manage the object's life: not part of the API.
NOT_API = {"__init__", "__del__", "__repr__", "__slots__", "__class__", "__new__"}


def package_dir() -> Path:
    """The folder of the installed tinygrad package (found without importing it)."""
    spec = importlib.util.find_spec("tinygrad")
    if spec is None or spec.origin is None:
        raise SystemExit("tinygrad is not installed")
    return Path(spec.origin).parent


def module_file(root: Path, module: str) -> Path:
    """The source file of a tinygrad module, e.g. tinygrad.mixin.op -> <root>/mixin/op.py."""
    parts = module.split(".")[1:]
    path = root.joinpath(*parts)
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def find_class(root: Path, module: str, name: str) -> tuple[ast.ClassDef, dict[str, str]]:
    """The class `name` in `module` and the module each imported name comes from."""
    tree = ast.parse(module_file(root, module).read_text())
    imports = {a.asname or a.name: node.module for node in tree.body
               if isinstance(node, ast.ImportFrom) and node.module for a in node.names}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node, imports
    if name in imports and imports[name].startswith("tinygrad"):
        return find_class(root, imports[name], name)
    raise LookupError(f"class {name} not found in {module}")


def body_names(cls: ast.ClassDef) -> set[str]:
    """Every name a class body defines: defs, assignments, annotations and __slots__ entries."""
    names: set[str] = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names.add(target.id)
                if isinstance(target, ast.Name) and target.id == "__slots__":
                    slots = ast.literal_eval(node.value)
                    names.update([slots] if isinstance(slots, str) else slots)
    return names


def tensor_names(root: Path) -> tuple[set[str], list[str]]:
    """The names of Tensor and of its tinygrad base classes, and the classes read."""
    names: set[str] = set()
    seen: list[str] = []
    todo = [("tinygrad.tensor", "Tensor")]
    while todo:
        module, name = todo.pop(0)
        cls, imports = find_class(root, module, name)
        if f"{module}.{name}" in seen:
            continue
        seen.append(f"{module}.{name}")
        names |= body_names(cls)
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in imports:
                todo.append((imports[base.id], base.id))
            elif isinstance(base, ast.Name):
                todo.append((module, base.id))
    return names, seen


def is_api(name: str) -> bool:
    """Whether a name is part of the public API: not private, not an object's plumbing."""
    is_dunder = name.startswith("__") and name.endswith("__")
    return (is_dunder or not name.startswith("_")) and name not in NOT_API


def main() -> None:
    """Prints the list, one name a line, under a header saying where it came from."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=None, help="tinygrad's package folder")
    args = parser.parse_args()
    root = args.root or package_dir()
    names, classes = tensor_names(root)
    version = importlib.metadata.version("tinygrad") if args.root is None else "unknown"
    out = [f"# The public names of tinygrad {version}'s Tensor, read from its source with `ast`",
           "# by tools/tinygrad_api.py (python -m tools.tinygrad_api > this file): facts, no code.",
           "# Classes read:", *(f"#   {c}" for c in classes),
           "# Names starting with _ are left out, except operator and protocol dunders; also left",
           "# out: " + " ".join(sorted(NOT_API)) + ".",
           *sorted(n for n in names if is_api(n))]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
