"""tinyfw.distributed over MPI: mpiexec -n 2 and -n 3 on this machine run
tests/devices/mpi/worker.py.

All-reduce and broadcast give exact values on every rank (float32, int32, float64, a tensor on
two local devices), data-parallel steps give the one-process weights, and a dead or stuck rank
ends the run with an error within the timeout instead of a hang."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tinyfw.distributed import mpiexec

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "tests" / "devices" / "mpi" / "worker.py"

pytestmark = pytest.mark.skipif(
    mpiexec(1) is None or importlib.util.find_spec("mpi4py") is None,
    reason="needs mpi4py and MPICH's mpiexec: pip install -c constraints.txt '.[mpi]'")


def launch(n: int | None, mode: str, out: Path, timeout_env: str = "30",
           limit: float = 60) -> subprocess.CompletedProcess[str]:
    """worker.py MODE OUT under mpiexec -n n (n None: plain python, one process)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TINYFW_MPI_TIMEOUT": timeout_env}
    cmd = [sys.executable, str(WORKER), mode, str(out)]
    if n is not None:
        launcher = mpiexec(n)
        assert launcher is not None
        cmd = launcher + cmd
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=limit)


@pytest.mark.parametrize("n", [2, 3])
def test_all_reduce_values(n: int, tmp_path: Path) -> None:
    run = launch(n, "reduce", tmp_path / "r.npz")
    assert run.returncode == 0, run.stderr
    assert np.load(tmp_path / "r.npz")["arr_0"].tolist() == [n]


def test_data_parallel_matches_one_process(tmp_path: Path) -> None:
    single = launch(None, "single", tmp_path / "1.npz")
    assert single.returncode == 0, single.stderr
    want = np.load(tmp_path / "1.npz")
    for n in (2, 3):  # 12 rows: 6 or 4 per rank
        run = launch(n, "train", tmp_path / f"{n}.npz")
        assert run.returncode == 0, run.stderr
        got = np.load(tmp_path / f"{n}.npz")
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6)


def test_dead_rank_ends_the_run(tmp_path: Path) -> None:
    start = time.monotonic()
    run = launch(2, "dead", tmp_path / "d.npz", timeout_env="5", limit=60)
    assert run.returncode != 0
    assert time.monotonic() - start < 30


def test_stuck_rank_raises_distributed_error(tmp_path: Path) -> None:
    start = time.monotonic()
    run = launch(2, "stuck", tmp_path / "s.npz", timeout_env="2", limit=60)
    assert run.returncode != 0
    assert "DistributedError: all_reduce(sum) on rank 0 of 2 did not finish within 2 s" \
        in run.stderr, run.stderr
    assert time.monotonic() - start < 30


def test_rank_slice_refuses_uneven_batches() -> None:
    from tinyfw.distributed import ProcessGroup
    pg = ProcessGroup.__new__(ProcessGroup)  # not started: no MPI in the test process
    pg.world_size, pg.rank = 3, 1  # as rank 1 of 3 would see it
    assert pg.rank_slice(12) == slice(4, 8)
    with pytest.raises(ValueError, match="does not split evenly over 3 processes"):
        pg.rank_slice(10)


def test_import_does_not_start_mpi() -> None:
    code = "import sys, tinyfw, tinyfw.distributed; assert 'mpi4py' not in sys.modules"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)


def test_mnist_distributed_matches_one_process(tmp_path: Path) -> None:
    """examples/mnist.py --distributed on 2 processes (jitted halves, host all-reduce between)
    ends with the weights of the one-process run; only rank 0 prints and saves."""
    from tinyfw.nn.state import safe_load
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TINYFW_MPI_TIMEOUT": "30"}
    args = [str(ROOT / "examples" / "mnist.py"), "--epochs", "1", "--steps", "5"]
    one = subprocess.run([sys.executable, *args, "--save", str(tmp_path / "1.safetensors")],
                         env=env, capture_output=True, text=True, timeout=120)
    assert one.returncode == 0, one.stderr
    launcher = mpiexec(2)
    assert launcher is not None
    two = subprocess.run([*launcher, sys.executable, *args, "--distributed", "--save",
                          str(tmp_path / "2.safetensors")],
                         env=env, capture_output=True, text=True, timeout=120)
    assert two.returncode == 0, two.stderr
    assert two.stdout.count("test accuracy") == 1 and "2 processes (MPI)" in two.stdout
    want, got = safe_load(tmp_path / "1.safetensors"), safe_load(tmp_path / "2.safetensors")
    # atol 1e-5: Adam divides by sqrt of its second moment, so a gradient near 0, summed in
    # another order over the processes, moves a weight by a few 1e-6 (Adam's lr is 3e-3)
    for k in want:
        np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=1e-5, atol=1e-5)
