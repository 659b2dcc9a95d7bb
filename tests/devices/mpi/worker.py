"""Run by tests/devices/test_mpi.py under mpiexec: `worker.py MODE OUT_PATH`; rank 0 writes
OUT_PATH.

reduce: all-reduces of known tensors, checked on every rank (an assert fails the rank).
train:  a few data-parallel steps of a small MLP on fixed data; rank 0 saves the weights.
dead:   the last rank exits before the collective; stuck: it sleeps instead.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

from tinyfw import Tensor, nn
from tinyfw import distributed as dist
from tinyfw.nn.state import get_parameters


def check_reduce(pg: dist.ProcessGroup) -> None:
    r, n = pg.rank, pg.world_size
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    total = sum(base + k for k in range(n))
    t = pg.all_reduce(Tensor(base + r), "sum")
    assert np.array_equal(t.numpy(), total), t.numpy()
    z = pg.all_reduce(Tensor(float(r)), "sum")  # 0-d
    assert z.shape == () and z.item() == n * (n - 1) / 2
    t = pg.all_reduce(Tensor(base + r), "mean")
    assert np.allclose(t.numpy(), total / n, rtol=0, atol=1e-6), t.numpy()
    t = pg.all_reduce(Tensor(base * (r + 1)), "max")
    assert np.array_equal(t.numpy(), base * n)
    # a NaN on one rank is NaN on every rank (MPI's MAX kept it or not by the order it met it)
    v = np.array([np.nan if r == 0 else 1.0, np.nan if r == n - 1 else 2.0, r], np.float32)
    m = pg.all_reduce(Tensor(v), "max").numpy()
    assert np.isnan(m[:2]).all() and m[2] == n - 1, m
    i = pg.all_reduce(Tensor(np.array([1, -2, 2**30], dtype=np.int32) * (r + 1)), "sum")
    tri = n * (n + 1) // 2
    assert i.dtype.name == "int32" and i.numpy().tolist() == [tri, -2 * tri, (2**30 * tri)
                                                              % 2**32 - (2**32 if tri % 4 >= 2
                                                                         else 0)]
    # a tensor on two local devices: sharded along axis 0, and replicated
    s = Tensor(base + r).shard(("CPU:0", "CPU:1"), axis=0)
    where = s.device
    s = pg.all_reduce(s, "sum")
    assert s.device == where and np.array_equal(s.numpy(), total)
    rep = Tensor(base + r).shard(("CPU:0", "CPU:1"))
    pg.all_reduce(rep, "max")
    for part in ("CPU:0", "CPU:1"):
        assert np.array_equal(rep.to(part).numpy(), base + n - 1)
    b = pg.broadcast(Tensor(np.full(4, r, dtype=np.float64)), root=0)
    assert np.array_equal(b.numpy(), np.zeros(4))
    for bad in ("float16", "bool"):
        try:
            pg.all_reduce(Tensor(np.zeros(2, dtype=bad)))
        except TypeError as e:
            assert bad in str(e)
        else:
            raise AssertionError(f"{bad} was not refused")
    pg.barrier()


def train(pg: dist.ProcessGroup | None, steps: int = 3) -> list[np.ndarray]:
    """steps of SGD on an MLP over 12 fixed rows; pg None: one process, the whole batch."""
    Tensor.manual_seed(1)
    l1, l2 = nn.Linear(5, 8), nn.Linear(8, 3)
    params = get_parameters([l1, l2])
    if pg is not None and pg.rank != 0:  # different weights: the broadcast must fix them
        for p in params:
            p.assign(p * 0 + 7).realize()
    if pg is not None:
        pg.broadcast_parameters(params)
    opt = nn.optim.SGD(params, lr=0.1)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 5)).astype(np.float32)
    Y = rng.integers(0, 3, 12).astype(np.int32)
    rows = slice(None) if pg is None else pg.rank_slice(len(X))
    for _ in range(steps):
        with Tensor.train():
            opt.zero_grad()
            loss = l2(l1(Tensor(X[rows])).relu()).sparse_categorical_crossentropy(Tensor(Y[rows]))
            loss.backward()
            if pg is not None:
                pg.all_reduce_gradients(params)
            opt.step()
    return [p.numpy() for p in params]


def main() -> None:
    mode, out = sys.argv[1], sys.argv[2]
    pg = dist.init()
    if mode == "reduce":
        check_reduce(pg)
        result = [np.array([pg.world_size])]
    elif mode == "train":
        result = train(pg)
    elif mode in ("dead", "stuck"):
        if pg.rank == pg.world_size - 1:
            if mode == "dead":
                os._exit(3)
            time.sleep(3600)
        pg.all_reduce(Tensor(np.ones(3, dtype=np.float32)))
        result = []
    elif mode == "single":
        result = train(None)
    if pg.rank == 0:
        np.savez(out, *result)


if __name__ == "__main__":
    main()
