"""Median times of single tinyfw ops on the default device, for comparing two commits:
`PYTHONPATH=<tree> python -m bench.ops` in each tree (bench/README.md)."""
from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from tinyfw import Tensor


def median_ms(fn: Callable[[], object], rounds: int = 9) -> float:
    """The median time of fn in milliseconds, after two warm-up calls."""
    fn()
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[rounds // 2] * 1e3


def main() -> None:
    """Print one line per op."""
    rng = np.random.default_rng(0)
    x = Tensor(rng.random(4 * 2**20, dtype=np.float32)).realize()
    m = Tensor(rng.random((2048, 2048), dtype=np.float32)).realize()
    rows: dict[str, Callable[[], object]] = {
        "elementwise ((x*2+1).relu()*x), 4M f32": lambda: ((x * 2 + 1).relu() * x).realize(),
        "x.exp(), 4M f32": lambda: x.exp().realize(),
        "x / 3.0, 4M f32": lambda: (x / 3.0).realize(),
        "x.sum(), 4M f32": lambda: x.sum().realize(),
        "softmax(-1), 2048x2048 f32": lambda: m.softmax(-1).realize(),
    }
    for name, fn in rows.items():
        print(f"{name:42s} {median_ms(fn):9.3f} ms")


if __name__ == "__main__":
    main()
