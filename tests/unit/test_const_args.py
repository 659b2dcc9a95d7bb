"""A Python number that changes every step (a learning rate, a loop counter) does not compile a
kernel per value (tinyfw/engine/const_args.py): from its second value it is a kernel argument."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.probe import probe
from tinyfw.engine import const_args, program

DEVICES = ["CPU", "NUMPY"] + [d for d in ("CL", "WEBGPU") if probe(d)[0]]


@pytest.mark.parametrize("device", DEVICES)
def test_a_changing_number_compiles_a_bounded_number_of_kernels(device: str) -> None:
    x = Tensor(np.linspace(-2, 2, 37, dtype=np.float32), device=device).realize()
    host = x.numpy()
    before = program.built
    for step in range(200):
        lr = 0.1 / (1 + step)  # a schedule written as a float
        np.testing.assert_allclose((x * lr).numpy(), host * np.float32(lr), rtol=1e-6)
        np.testing.assert_allclose((x - step).numpy(), host - np.float32(step), rtol=1e-6)
    assert program.built - before <= 4  # x * lr and x - step: inline, then with an argument


def test_a_number_that_does_not_change_stays_in_the_kernel() -> None:
    x = Tensor(np.arange(23, dtype=np.float32)).realize()  # (a shape no other test uses)
    for _ in range(3):
        (x * 0.3125 + 17.5).realize()
    ast = (x * 0.3125 + 17.5).schedule()[0].ast
    assert ast is not None
    assert {n.arg for n in ast.toposort() if n.op.name == "CONST"} >= {0.3125, 17.5}


def test_varying_int_and_bool_constants_keep_their_values() -> None:
    x = Tensor([3, -7, 11], dtype="int64").realize()
    before = const_args.varied
    for k in (2, 5, -3, 2**40):
        assert (x * k + k).tolist() == [v * k + k for v in (3, -7, 11)]
        assert (x > k).tolist() == [v > k for v in (3, -7, 11)]
    assert const_args.varied > before


PILE = """
import json, os
from pathlib import Path
import numpy as np
from tinyfw import Tensor
from tinyfw.runtime.disk_cache import cache_dir
x = Tensor(np.arange(8, dtype=np.float32)).realize()
wrong, largest = 0, 0
for k in range(40):  # 40 kernels (VARY_CONSTS=0: each constant in its source)
    wrong += not np.allclose((x * (k + 0.5)).numpy(), np.arange(8) * (k + 0.5))
    largest = max(largest, sum(p.stat().st_size for p in cache_dir().iterdir()))
print(json.dumps([wrong, largest]))
"""


def test_the_disk_cache_stays_under_its_limit(tmp_path: Path) -> None:
    """TINYFW_CACHE_MB bounds the kernel cache on disk: the entries used longest ago go."""
    limit = 0.1  # MB: a few kernels' libraries
    env = {**os.environ, "TINYFW_CACHE": str(tmp_path), "TINYFW_CACHE_MB": str(limit),
           "VARY_CONSTS": "0", "DEVICE": "CPU"}
    done = subprocess.run([sys.executable, "-c", PILE], env=env, capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2],
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    wrong, largest = json.loads(done.stdout.strip().splitlines()[-1])
    assert wrong == 0
    one_entry = max(p.stat().st_size for p in (tmp_path / "kernels").glob("*.so"))
    assert largest <= limit * 2**20 + 2 * one_entry  # (an entry is written, then the trim)
    assert len(list((tmp_path / "kernels").glob("*.so"))) < 40


def test_programs_kept_in_memory_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_PROGRAMS, the oldest program is forgotten (rebuilt if it is needed again)."""
    monkeypatch.setattr(program, "MAX_PROGRAMS", 3)
    monkeypatch.setenv("VARY_CONSTS", "0")
    x = Tensor(np.arange(29, dtype=np.float32)).realize()
    for k in range(8):
        np.testing.assert_allclose((x * (k + 0.75)).numpy(), np.arange(29) * (k + 0.75))
    assert len(program.cache) <= 3 + 1
