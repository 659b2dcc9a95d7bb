"""CPU_MARCH: the CPU device compiles for an x86-64 level instead of this processor (chapter 11's
way to build and time kernels as a processor not at hand would run them), and refuses a level
it does not know or this processor cannot run."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tinyfw.renderer import cstyle

ROOT = Path(__file__).resolve().parents[2]


def test_an_unknown_level_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CPU_MARCH", "x86-64-v9")
    with pytest.raises(ValueError, match=r"CPU_MARCH='x86-64-v9': expected native or one of "
                                         r"x86-64-v2, x86-64-v3, x86-64-v4"):
        cstyle.target_march()


def test_a_level_this_processor_cannot_run_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CPU_MARCH", "x86-64-v4")
    monkeypatch.setattr(cstyle, "native_flags", lambda: cstyle.X86_LEVELS["x86-64-v3"])
    with pytest.raises(ValueError, match="this processor lacks avx512bw, avx512cd, avx512dq, "
                                         "avx512f, avx512vl"):
        cstyle.target_march()


def test_native_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in (None, "", "native"):
        if value is None:
            monkeypatch.delenv("CPU_MARCH", raising=False)
        else:
            monkeypatch.setenv("CPU_MARCH", value)
        assert cstyle.target_march() == "native"
        assert cstyle.cpu_flags() == cstyle.native_flags()


@pytest.mark.skipif(not cstyle.X86_LEVELS["x86-64-v3"] <= cstyle.native_flags(),
                    reason="not graded here: needs an x86-64 processor with AVX2 and FMA")
def test_an_avx2_build_on_this_machine() -> None:
    """With CPU_MARCH=x86-64-v3 a fresh process compiles with -march=x86-64-v3, takes vectors of
    8 float32s and the 8-lane big matmul tile, and gives numpy's values."""
    script = """
import numpy as np
from tinyfw import Tensor
from tinyfw.renderer.cstyle import ThreadedC
from tinyfw.runtime.c_compiler import COMPILE_FLAGS
rng = np.random.default_rng(0)
a, b = rng.standard_normal((512, 256), np.float32), rng.standard_normal((256, 512), np.float32)
got = (Tensor(a) @ Tensor(b)).numpy()
np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
print(ThreadedC.vector_lanes, sorted(ThreadedC.fma_lanes), COMPILE_FLAGS[1])
"""
    env = dict(os.environ, CPU_MARCH="x86-64-v3", DEBUG="3", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "8 [1, 4, 8] -march=x86-64-v3", done.stdout
    assert "optimizations UPCAST(2, 8), UPCAST(0, 4), UPCAST(3, 2), PANEL(2, 64), THREAD(0, 128)" \
        in done.stdout, done.stdout
