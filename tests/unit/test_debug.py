"""DEBUG=1..5 print what site/debug.md says they print: its examples are checked line by line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "site" / "debug.md"
BLOCK = r"<!-- {} -->\n```(?:\w+)?\n(.*?)```"
TIMING = re.compile(r"tm\s+[\d.]+us(\s+[\d.]+ GFLOP/s\s+[\d.]+ GB/s)?"
                    r"(\s+of peak:\s+\d+% FLOP/s\s+\d+% GB/s (?:L3|DRAM))?")


def page() -> str:
    """The text of the DEBUG page."""
    return PAGE.read_text(encoding="utf-8")


def program() -> str:
    """The example program the page's outputs come from."""
    found = re.search(BLOCK.format("debug-program"), page(), re.DOTALL)
    assert found, "site/debug.md has no <!-- debug-program --> block"
    return found.group(1)


def example(level: int) -> list[str]:
    """The lines the page says DEBUG=level adds, normalized."""
    found = re.search(BLOCK.format(f"debug-output: {level}"), page(), re.DOTALL)
    assert found, f"site/debug.md has no <!-- debug-output: {level} --> block"
    return normalize(found.group(1))


def normalize(text: str) -> list[str]:
    """Non-blank lines without trailing spaces, timings and rates replaced by placeholders."""
    lines = [TIMING.sub(lambda m: "tm T" + (" R GFLOP/s R GB/s" if m.group(1) else "")
                        + (" of peak: P FLOP/s P GB/s M" if m.group(2) else ""), line)
             for line in text.splitlines()]
    return [line.rstrip() for line in lines if line.strip()]


def contains_run(lines: list[str], run: list[str]) -> bool:
    """Whether run appears in lines as consecutive lines."""
    return any(lines[i:i + len(run)] == run for i in range(len(lines) - len(run) + 1))


def run_program(level: int, monkeypatch: pytest.MonkeyPatch,
                capsys: pytest.CaptureFixture[str]) -> list[str]:
    """What the page's program prints with DEBUG=level, normalized."""
    monkeypatch.setenv("DEBUG", str(level))
    monkeypatch.delenv("DEVICE", raising=False)
    capsys.readouterr()
    exec(compile(program(), str(PAGE), "exec"), {"__name__": "debug_example"})
    return normalize(capsys.readouterr().out)


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_level_prints_what_the_page_says(level: int, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """At DEBUG=level the output holds the example of every level up to it, and of none above."""
    out = run_program(level, monkeypatch, capsys)
    for shown in range(1, 6):
        lines = example(shown)
        if shown <= level:
            assert contains_run(out, lines), (f"DEBUG={level} should print the DEBUG={shown} "
                                              "example of site/debug.md:\n" + "\n".join(lines)
                                              + "\n--- it printed:\n" + "\n".join(out))
        else:
            assert not any(line in out for line in lines if len(line) > 20), \
                f"DEBUG={level} printed lines of the DEBUG={shown} example:\n" + "\n".join(out)


def test_levels_come_in_the_order_the_page_gives(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Schedule, then per kernel its program, source and AST, then its timing line, then the
    program's own output."""
    out = run_program(5, monkeypatch, capsys)
    starts = [out.index(example(level)[0]) for level in (1, 3, 4, 5, 2)]
    assert starts == sorted(starts), "\n".join(out)
    assert out[-1] == "[ 8. 26.]"


def test_debug_zero_prints_only_the_program_output(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Without DEBUG (or DEBUG=0) realizing prints nothing."""
    assert run_program(0, monkeypatch, capsys) == ["[ 8. 26.]"]


def test_debug_on_the_numpy_device(monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """DEBUG=4 on the NUMPY device prints the program and says there is no source."""
    monkeypatch.setenv("DEVICE", "NUMPY")
    monkeypatch.setenv("DEBUG", "4")
    capsys.readouterr()
    exec(compile(program(), str(PAGE), "exec"), {"__name__": "debug_example"})
    out = capsys.readouterr().out
    assert "*** NUMPY" in out and "kernel r_2_3: loops global:2 reduce:3" in out
    assert "no source" in out and "#include" not in out


def test_peak_bandwidth_by_memory_level() -> None:
    """DEBUG=2 reads a kernel's GB/s against the L3's bandwidth if its bytes fit in the L3, else
    against DRAM's; without a known L3, always DRAM's."""
    from tinyfw.runtime.peak import Peak, _size_bytes
    peak = Peak(gflops=100.0, gbs=20.0, l3_bytes=32 << 20, l3_gbs=80.0)
    assert peak.bandwidth(44) == (80.0, "L3")
    assert peak.bandwidth(32 << 20) == (80.0, "L3")
    assert peak.bandwidth((32 << 20) + 1) == (20.0, "DRAM")
    assert Peak(gflops=100.0, gbs=20.0).bandwidth(44) == (20.0, "DRAM")
    assert [_size_bytes(s) for s in ("32768K", "32M", "1G", "512")] == [32 << 20, 32 << 20,
                                                                        1 << 30, 512]


def test_peak_file_of_an_older_tinyfw_gains_the_l3(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A peak.json with the FLOP/s and DRAM entry only (as an older tinyfw wrote it) keeps that
    entry as it is (an older tinyfw still reads it) and gains the L3's under a key of its own."""
    import json

    from tinyfw.runtime import peak as peak_module
    from tinyfw.runtime.ops_cpu import cores
    monkeypatch.setenv("TINYFW_CACHE", str(tmp_path))
    monkeypatch.setattr(peak_module, "_peak", None)
    monkeypatch.setattr(peak_module, "target_march", lambda: "native")
    monkeypatch.setattr(peak_module, "l3_bytes", lambda: 1 << 20)
    key = f"{peak_module._cpu_model()}|{cores()}"
    (tmp_path / "peak.json").write_text(json.dumps({key: [123.0, 12.0]}))
    peak = peak_module.cpu_peak()
    assert (peak.gflops, peak.gbs, peak.l3_bytes) == (123.0, 12.0, 1 << 20) and peak.l3_gbs > 0
    known = json.loads((tmp_path / "peak.json").read_text())
    assert known[key] == [123.0, 12.0] and known[key + "|L3"] == [1 << 20, peak.l3_gbs]
