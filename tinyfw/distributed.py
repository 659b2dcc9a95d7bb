"""Many machines (chapter 13's second half): a process group over MPI, for data parallel training.

Every process (a *rank*, 0 .. world size - 1) runs the same program under `mpiexec`:

    mpiexec -n 2 .venv/bin/python examples/mnist.py --distributed

and the processes meet in collectives: `all_reduce` (every rank ends with the sum, mean or max
of everybody's tensor), `broadcast` (rank 0's value to everybody: the initial weights) and
`barrier`. The values travel through the host: device -> numpy -> MPI -> back to the tensor's
device(s), written in place with `assign`. A tensor over several local devices (tinyfw/multi.py)
is read whole (a replicated one: its value, already all-reduced locally), reduced across the
processes, and put back on every local device as it was placed.

mpi4py is imported on first use only: `import tinyfw` never starts MPI. Run without mpiexec,
MPI starts a group of one process (rank 0 of 1) and every collective returns its input.

No hang: each collective is non-blocking (Iallreduce, Ibcast, Ibarrier) and polled against a
deadline (TINYFW_MPI_TIMEOUT seconds, default 60). A rank that died or is stuck makes the others
raise DistributedError naming the operation, the rank and the timeout; `init()` installs an
excepthook that prints such an uncaught error and calls MPI's Abort, so mpiexec ends every rank.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from tinyfw.tensor import Tensor

DEFAULT_TIMEOUT = 60.0
OPS = ("sum", "mean", "max")


class DistributedError(RuntimeError):
    """A collective did not finish in time (a rank died or is stuck), or MPI refused it."""


def _mpi_type(MPI: Any, dt: np.dtype) -> Any:
    """The MPI datatype of a numpy dtype; TypeError for one MPI cannot reduce exactly."""
    table = {"float32": MPI.FLOAT, "float64": MPI.DOUBLE, "int8": MPI.INT8_T,
             "int16": MPI.INT16_T, "int32": MPI.INT32_T, "int64": MPI.INT64_T,
             "uint8": MPI.UINT8_T, "uint16": MPI.UINT16_T, "uint32": MPI.UINT32_T,
             "uint64": MPI.UINT64_T}
    if dt.name not in table:
        raise TypeError(f"distributed: dtype {dt.name} is not supported across processes "
                        f"(supported: {', '.join(table)})")
    return table[dt.name]


class ProcessGroup:
    """All the processes mpiexec started (MPI.COMM_WORLD), with timeouts on every collective."""

    def __init__(self, timeout: float | None = None) -> None:
        from mpi4py import MPI  # here, not at the top: `import tinyfw` never starts MPI
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank: int = self.comm.Get_rank()
        self.world_size: int = self.comm.Get_size()
        env = os.environ.get("TINYFW_MPI_TIMEOUT")
        self.timeout = timeout if timeout is not None else float(env or DEFAULT_TIMEOUT)

    def __repr__(self) -> str:
        return f"ProcessGroup(rank={self.rank}, world_size={self.world_size})"

    def _wait(self, request: Any, what: str) -> None:
        """Poll request until it completes, or raise DistributedError at the deadline."""
        start = time.monotonic()
        while not request.Test():
            waited = time.monotonic() - start
            if waited > self.timeout:
                raise DistributedError(f"{what} on rank {self.rank} of {self.world_size} did not "
                                       f"finish within {self.timeout:g} s (TINYFW_MPI_TIMEOUT): "
                                       "another rank died or is stuck")
            # spin for the first 20 ms (a sleep there made a 64 KB all-reduce 1.4 ms instead of
            # 0.05: bench/mpi.py), then poll each ms and leave the core to the others
            if waited > 0.02:
                time.sleep(1e-3)

    # --- numpy arrays -----------------------------------------------------------------------
    def all_reduce_array(self, x: np.ndarray, op: str = "sum") -> np.ndarray:
        """The sum, mean or max of x over every rank (a new array, x's dtype)."""
        if op not in OPS:
            raise ValueError(f"all_reduce: op must be one of {OPS}, not {op!r}")
        x = np.array(x, order="C")  # a copy (ascontiguousarray makes a 0-d array 1-d)
        mtype = _mpi_type(self.MPI, x.dtype)
        if op == "mean" and x.dtype.kind != "f":
            raise TypeError(f"all_reduce: mean of dtype {x.dtype.name} would be rounded; "
                            "use a float dtype, or sum and divide yourself")
        out = np.empty_like(x)
        mop = self.MPI.MAX if op == "max" else self.MPI.SUM
        self._wait(self.comm.Iallreduce([x, mtype], [out, mtype], op=mop), f"all_reduce({op})")
        if op == "mean":
            out /= self.world_size
        if op == "max" and x.dtype.kind == "f":
            # MPI's MAX of floats drops a NaN or keeps it by the order it meets them, so ranks
            # could end with different values: a NaN anywhere is NaN everywhere, as torch's max
            nan = np.empty(x.shape, np.uint8)
            seen = np.isnan(x).astype(np.uint8)
            self._wait(self.comm.Iallreduce([seen, self.MPI.UINT8_T], [nan, self.MPI.UINT8_T],
                                            op=self.MPI.MAX), "all_reduce(max) of NaNs")
            out[nan.astype(bool)] = np.nan
        return out

    def broadcast_array(self, x: np.ndarray, root: int = 0) -> np.ndarray:
        """root's x on every rank (x's shape and dtype must be the same everywhere)."""
        buf = np.array(x, order="C")
        self._wait(self.comm.Ibcast([buf, _mpi_type(self.MPI, buf.dtype)], root=root),
                   f"broadcast(root={root})")
        return buf

    def barrier(self) -> None:
        """Wait until every rank gets here."""
        self._wait(self.comm.Ibarrier(), "barrier")

    def abort(self, code: int = 1) -> None:
        """End every rank (mpiexec sees the failure)."""
        self.comm.Abort(code)

    # --- tensors ----------------------------------------------------------------------------
    def all_reduce(self, t: Tensor, op: str = "sum") -> Tensor:
        """t's value replaced by its sum, mean or max over every rank (in place, by assign;
        returns t)."""
        return _put(t, self.all_reduce_array(t.numpy(), op))

    def broadcast(self, t: Tensor, root: int = 0) -> Tensor:
        """t's value replaced by root's (in place; returns t)."""
        return _put(t, self.broadcast_array(t.numpy(), root))

    def all_reduce_gradients(self, params: Iterable[Tensor]) -> None:
        """Every parameter's .grad replaced by its mean over the ranks, in one all-reduce per
        dtype (each rank's loss is a mean over an equal share of the batch: see rank_slice, so
        the mean of the gradients is the gradient of the whole batch's mean loss). Each .grad
        becomes a new tensor, placed as the old one."""
        owners = [p for p in params if p.grad is not None]
        by_dtype: dict[str, list[Tensor]] = {}
        for p in owners:
            assert p.grad is not None
            by_dtype.setdefault(p.grad.dtype.name, []).append(p)
        for group in by_dtype.values():
            arrays = [p.grad.numpy() for p in group if p.grad is not None]
            flat = self.all_reduce_array(np.concatenate([a.ravel() for a in arrays]), "mean")
            start = 0
            for p, a in zip(group, arrays):
                assert p.grad is not None
                p.grad = _placed_like(p.grad, flat[start:start + a.size].reshape(a.shape))
                start += a.size

    def broadcast_parameters(self, params: Iterable[Tensor], root: int = 0) -> None:
        """Every parameter set to root's value (equal initial weights on every rank)."""
        for p in params:
            self.broadcast(p, root)

    def rank_slice(self, n: int) -> slice:
        """The rows of a batch of n that this rank takes: an equal share each. A batch that
        does not split evenly is refused (a mean over unequal shares would weight them wrong)."""
        if n % self.world_size:
            raise ValueError(f"a batch of {n} does not split evenly over {self.world_size} "
                             "processes: choose a batch size divisible by the process count")
        share = n // self.world_size
        return slice(self.rank * share, (self.rank + 1) * share)


def _placed_like(t: Tensor, value: np.ndarray) -> Tensor:
    """A new realized tensor holding value, on t's device(s), placed (sharded) as t is."""
    dev = t.device
    fresh = Tensor(value, device=dev[0] if isinstance(dev, tuple) else dev, dtype=t.dtype)
    return (fresh.shard_like(t) if isinstance(dev, tuple) else fresh).realize()


def _put(t: Tensor, value: np.ndarray) -> Tensor:
    """value written into t (assign), on t's device(s), placed as t is."""
    if not t.is_leaf and t.requires_grad:
        raise RuntimeError("distributed: a collective writes in place; give it a leaf tensor "
                           "or a gradient, not a result inside an autograd graph")
    dev = t.device
    src = Tensor(value, device=dev[0] if isinstance(dev, tuple) else dev, dtype=t.dtype)
    return t.assign(src).realize()


_group: ProcessGroup | None = None


def init(timeout: float | None = None) -> ProcessGroup:
    """The process group (made once), with an excepthook that aborts every rank when one ends
    with an uncaught error (else the others would wait for it until their timeout)."""
    global _group
    if _group is None:
        _group = ProcessGroup(timeout)
        previous = sys.excepthook

        def abort_all(kind: type[BaseException], error: BaseException,
                      tb: TracebackType | None) -> None:
            # the error's line first: an abort can cut off what mpiexec has not forwarded yet
            rank = "" if _group is None else f"rank {_group.rank}: "
            print(f"{rank}{kind.__name__}: {error}", file=sys.stderr, flush=True)
            previous(kind, error, tb)
            sys.stderr.flush()
            if _group is not None and _group.world_size > 1:
                time.sleep(0.5)  # time for mpiexec to forward the output before the abort
                _group.abort(1)

        sys.excepthook = abort_all
    return _group


def mpiexec(n: int) -> list[str] | None:
    """The command line that starts n local processes: MPICH's mpiexec from the venv (the
    `mpich` wheel puts it beside python), else one on PATH; None if there is none. It needs no
    flags as root (unlike Open MPI's mpirun) and runs more processes than cores (-n 3 on 2)."""
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    return None if found is None else [found, "-n", str(n)]


def rank() -> int:
    return init().rank


def world_size() -> int:
    return init().world_size


def all_reduce(t: Tensor, op: str = "sum") -> Tensor:
    return init().all_reduce(t, op)


def broadcast(t: Tensor, root: int = 0) -> Tensor:
    return init().broadcast(t, root)


def barrier() -> None:
    init().barrier()


def all_reduce_gradients(params: Iterable[Tensor]) -> None:
    init().all_reduce_gradients(params)


def rank_slice(n: int) -> slice:
    return init().rank_slice(n)
