"""The one pipeline from a scheduled kernel to a program (tinyfw/engine/program.py): its passes
run in order, DEBUG=3 shows them, and a program is kept under one key of plain values, so
another renderer or other compiler flags build a new program; a function swapped into a part
takes effect once the swapper calls tinyfw.engine.caches.forget_built()."""
from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from tinyfw import Device, Tensor
from tinyfw.engine import program
from tinyfw.engine.caches import forget_built
from tinyfw.renderer.cstyle import CStyleLanguage
from tinyfw.runtime.c_compiler import ClangStyleCompiler

DEBUG_PAGE = Path(__file__).resolve().parents[2] / "site" / "debug.md"
_constants = itertools.count(1)


def fresh_kernel() -> tuple[Tensor, np.ndarray]:
    """x * k + 1 with a length of x no other test uses (a kernel not built before: a k that
    differs alone would be the same kernel, k its argument, engine/const_args.py), and its
    value."""
    n = next(_constants)
    k = 1.0 + n / 1024
    x = np.arange(6 + n, dtype=np.float32)
    return Tensor(x, device="CPU") * k + 1, x * np.float32(k) + np.float32(1)


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The sources the CPU device's compilers are given from now on (an empty disk cache)."""
    monkeypatch.setenv("TINYFW_CACHE", str(tmp_path))
    seen: list[str] = []
    original = ClangStyleCompiler.compile_many  # (compile() goes through it too)

    def counting(self: ClangStyleCompiler, sources: list[str]) -> list[Path]:
        seen.extend(sources)
        return original(self, sources)

    monkeypatch.setattr(ClangStyleCompiler, "compile_many", counting)
    return seen


def commented_decl(self: CStyleLanguage, type_: str, name: str, value: str,
                   mutable: bool) -> str:
    """C's declaration with a comment after it: another source, the same values."""
    return f"{type_} {name} = {value}; /* swapped in */"


class CommentedC(CStyleLanguage):
    """C as tinyfw writes it, with a comment after every declaration."""

    decl = commented_decl


def test_the_same_kernel_twice_compiles_once(compiles: list[str]) -> None:
    """The second realize of the same kernel finds its program: nothing is compiled again."""
    for _ in range(2):
        tensor, want = fresh_kernel()
        np.testing.assert_array_equal(tensor.numpy(), want)
    tensor, _ = fresh_kernel()
    item = tensor.schedule()[-1]
    first = program.get_program(item)
    assert program.get_program(item) is first and program.cache[first.key] is first
    assert len(compiles) == 3, "one compile per distinct kernel, none for the second ask"


def test_a_swapped_renderer_compiles_a_new_program(compiles: list[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel built with the reference renderer is built again, from the new renderer's
    source, once another renderer is the device's (said with forget_built: the device's parts
    are read once); and it computes the same values."""
    tensor, want = fresh_kernel()
    item = tensor.schedule()[-1]
    before = program.get_program(item)
    monkeypatch.setattr(Device["CPU"], "renderer", CommentedC())
    forget_built()
    after = program.get_program(item)
    assert after is not before and after.key != before.key
    assert after.source is not None and "/* swapped in */" in after.source
    assert len(compiles) == 2 and "/* swapped in */" in compiles[-1]
    np.testing.assert_array_equal(tensor.numpy(), want)  # realized with the new program
    assert len(compiles) == 2


def test_a_function_swapped_into_the_renderer_class_builds_after_forget_built(
        compiles: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A learner's function patched into the renderer's class (as chapters/learner.py does)
    leaves the key as it was; after forget_built (which learner.py calls at each swap) the
    kernel is rendered again by it: a new source, a new compile. Swapped back and forgotten
    again, the reference's source is built again (from the disk cache: no compile)."""
    tensor, want = fresh_kernel()
    item = tensor.schedule()[-1]
    before = program.get_program(item)
    reference_decl = CStyleLanguage.decl
    monkeypatch.setattr(CStyleLanguage, "decl", commented_decl)
    forget_built()
    after = program.get_program(item)
    assert after.key == before.key and "/* swapped in */" in (after.source or "")
    assert len(compiles) == 2
    monkeypatch.setattr(CStyleLanguage, "decl", reference_decl)
    forget_built()
    again = program.get_program(item)
    assert again is not after and again.source == before.source


def test_other_compiler_flags_build_a_new_program(compiles: list[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiler's flags are part of the key: the same source compiled with others (once
    forget_built says the flags were set anew)."""
    tensor, _ = fresh_kernel()
    item = tensor.schedule()[-1]
    before = program.get_program(item)
    compiler = Device["CPU"].compiler_for(before.kernel)
    monkeypatch.setattr(compiler, "flags", [*compiler.flags, "-O1"])
    forget_built()
    after = program.get_program(item)
    assert after.key != before.key and after.source == before.source
    assert len(compiles) == 2


def test_debug_3_prints_every_pass_in_order(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """DEBUG>=3 prints one line per pass of PASSES as it runs, in the list's order."""
    monkeypatch.setenv("DEBUG", "3")
    tensor, want = fresh_kernel()
    capsys.readouterr()
    np.testing.assert_array_equal(tensor.numpy(), want)
    lines = [line.split()[1] for line in capsys.readouterr().out.splitlines()
             if line.startswith("pass ")]
    assert lines == [step.__name__ for step in program.PASSES]


def test_a_program_built_before_skips_the_later_passes(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The second time, find_built finds the program and the passes after it do not run."""
    tensor, _ = fresh_kernel()
    item = tensor.schedule()[-1]
    program.get_program(item)
    monkeypatch.setenv("DEBUG", "3")
    capsys.readouterr()
    program.get_program(item)
    out = capsys.readouterr().out
    ran = [line.split()[1] for line in out.splitlines() if line.startswith("pass ")]
    assert ran == ["find_built"] and "built before" in out


def test_the_debug_page_names_every_pass_in_order() -> None:
    """site/debug.md's table of passes is PASSES, name by name, so the page cannot drift."""
    page = DEBUG_PAGE.read_text(encoding="utf-8")
    table = re.search(r"<!-- debug-passes -->\n((?:\|.*\n)+)", page)
    assert table, "site/debug.md has no <!-- debug-passes --> table"
    named = re.findall(r"^\| `(\w+)` \|", table.group(1), re.MULTILINE)
    assert named == [step.__name__ for step in program.PASSES]


def test_every_pass_says_what_it_establishes() -> None:
    """Each pass has a one-line docstring naming the field of the Build it fills in."""
    for step in program.PASSES:
        doc = (step.__doc__ or "").strip()
        assert doc and "\n" not in doc, f"{step.__name__} needs a one-line docstring"
        assert doc.startswith("build."), f"{step.__name__}: say which field it establishes"


def test_no_runtime_lowers_or_renders_a_kernel() -> None:
    """A device holds its parts; only the engine calls lower() and the renderer."""
    root = Path(__file__).resolve().parents[2] / "tinyfw" / "runtime"
    for path in sorted(root.glob("ops_*.py")):
        text = path.read_text(encoding="utf-8")
        for call in ("lower(", ".render(", "program_of", "Kernel.from_ast"):
            assert call not in text, f"{path.name} calls {call}"


def test_the_numpy_device_renders_nothing_and_still_runs() -> None:
    """NUMPY's program is its interpreter: its renderer compiles nothing (no source, no
    binary)."""
    assert not Device["NUMPY"].renderer.compiles
    x = np.arange(6, dtype=np.float32)
    tensor = Tensor(x, device="NUMPY") * 3.0 + 1
    compiled = program.get_program(tensor.schedule()[-1])
    assert compiled.source is None and compiled.binary is None
    np.testing.assert_array_equal(tensor.numpy(), x * np.float32(3) + 1)


def test_a_kernel_twice_in_a_schedule_is_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two kernels of one key in one schedule (a model's layers: the same kernel over each
    layer's buffers) run the passes once, and both get that program: a prompt's 784 kernels
    were 663 builds, now 23."""
    rendered: list[str] = []
    original = program.render_source

    def counting(build: program.Build) -> None:
        rendered.append(build.item.name)
        original(build)
    monkeypatch.setattr(program, "PASSES", tuple(
        counting if p is original else p for p in program.PASSES))
    forget_built()
    rng = np.random.default_rng(0)
    a, b = (Tensor(rng.standard_normal(64).astype(np.float32)).realize() for _ in range(2))
    x, y = a * 3 + 1, b * 3 + 1
    Tensor.realize_all(x, y)
    assert len(rendered) == 1, rendered
    np.testing.assert_allclose(y.numpy(), b.numpy() * 3 + 1, rtol=1e-6)
    np.testing.assert_allclose(x.numpy(), a.numpy() * 3 + 1, rtol=1e-6)
