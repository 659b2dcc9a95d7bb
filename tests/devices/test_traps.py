"""No input traps a kernel: integer division of the smallest int by -1 (which x86's idiv reports
as SIGFPE, killing the process) gives torch's wrapped answer on every device."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers import TORCH_DTYPES
from tinyfw import DType, dtypes
from tinyfw.probe import probe

ROOT = Path(__file__).resolve().parents[2]
SIGNED = [dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64]

# Every pair of (smallest, -1, 1, 7, -7, largest) with -1 and 1 as divisors, among others.
PROBE = """
import json, sys
from tinyfw import Tensor, dtypes
from tinyfw.renderer.base import NotSupportedError
out = {}
DEVICE = sys.argv[1]
for name in sys.argv[2:]:
    dt = getattr(dtypes, name)
    lo, hi = dtypes.min(dt), dtypes.max(dt)
    a = [lo, lo, lo, lo, 7, -7, hi, hi, lo + 1]
    b = [-1, 1, 7, -7, -1, -1, -1, 1, -1]
    x, y = Tensor(a, dtype=dt, device=DEVICE), Tensor(b, dtype=dt, device=DEVICE)
    try:
        out[name] = {"a": a, "b": b, "floordiv": (x // y).tolist(), "mod": (x % y).tolist(),
                     "idiv": x.idiv(y).tolist()}
    except NotSupportedError as error:
        out[name] = str(error)
print(json.dumps(out))
"""


def trunc_div(a: int, b: int) -> int:
    """a / b rounded toward zero, exactly (torch.div(rounding_mode="trunc") of int32 and int64
    traps on MIN / -1 itself, so the expected answer is worked out in Python)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def wrap(x: int, dt: DType) -> int:
    """x wrapped to the range of the signed integer dtype dt, as two's complement wraps."""
    bits = 8 * dt.itemsize
    return (x + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)


def run_probe(device: str) -> dict[str, object]:
    """The probe's answers on device, run in a child process, so that a trap fails the test
    rather than killing pytest."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    args = [device, *[d.name for d in SIGNED]]
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (f"the probe died on {device} (rc {done.returncode}; -8 is "
                                  f"SIGFPE):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("device", ["CPU", "NUMPY", "CL", "CUDAEMU", "WEBGPU"])
def test_smallest_int_divided_by_minus_one_does_not_trap(device: str) -> None:
    ok, why = probe(device)
    if not ok:
        pytest.skip(f"{device} is not available here: {why}")
    results = run_probe(device)
    for dt in SIGNED:
        got = results[dt.name]
        if isinstance(got, str):  # WGSL has no int64: the error must say so
            assert device == "WEBGPU" and dt == dtypes.int64, got
            assert "not supported on WEBGPU" in got, got
            continue
        assert isinstance(got, dict)
        a = torch.tensor(got["a"], dtype=TORCH_DTYPES[dt])
        b = torch.tensor(got["b"], dtype=TORCH_DTYPES[dt])
        expected = {"floordiv": (a // b).tolist(), "mod": (a % b).tolist(),
                    "idiv": [wrap(trunc_div(x, y), dt) for x, y in zip(got["a"], got["b"])]}
        for op, want in expected.items():
            assert got[op] == want, f"{op} of {dt.name} on {device}: {got['a']} " \
                f"by {got['b']} gave {got[op]}, expected {want}"
