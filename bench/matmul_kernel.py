"""One float32 matmul's kernel alone on tinyfw's CPU device: DEBUG=2's time of the kernel (no
Python around it), median of the calls after two warm-ups, each call with a fresh second operand
(a realized product of the same operands would be read, not computed again). Optionally with
optimizations given by hand instead of the heuristic's, to compare tiles.

Run from the repo root:  .venv/bin/python -m bench.matmul_kernel M K N
    [--transposed] (x @ w.T with w stored (N, K), as nn.Linear holds it)
    [--q4_1] (x @ w.T with w as Q4_1 blocks held as llama.Linear holds them on the CPU,
              gguf.split_blocks, multiplied by gguf.split_linear: the weights unpacked in it)
    [--opts UPCAST:2:16,UPCAST:0:4,SWAP:0:3,THREAD:0:25] (OptOps name:axis:amount, in order)
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import statistics
import sys
from pathlib import Path

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from tinyfw import Tensor  # noqa: E402
from tinyfw.codegen.opt import Opt, OptOps  # noqa: E402
from tinyfw.engine import program  # noqa: E402
from tinyfw.engine.caches import forget_built  # noqa: E402
from tinyfw.models.gguf import GGMLType, split_blocks, split_linear  # noqa: E402

KERNEL_LINE = re.compile(r"\*\*\* \S+\s+\d+ (\S+)\s+tm\s+([\d.]+)us")


def parse_opts(text: str) -> tuple[Opt, ...]:
    """'UPCAST:2:16,THREAD:0:8' -> (Opt(UPCAST, 2, 16), Opt(THREAD, 0, 8))."""
    opts = []
    for part in text.split(","):
        name, axis, amount = part.split(":")
        opts.append(Opt(OptOps[name], int(axis), int(amount)))
    return tuple(opts)


def kernel_us(product: Tensor) -> tuple[str, float]:
    """The name and DEBUG=2 time (us) of the last kernel that realizing product runs."""
    before = os.environ.get("DEBUG")
    os.environ["DEBUG"] = "2"
    lines = io.StringIO()
    try:
        with contextlib.redirect_stdout(lines):
            product.realize()
    finally:
        if before is None:
            del os.environ["DEBUG"]
        else:
            os.environ["DEBUG"] = before
    name, us = KERNEL_LINE.findall(lines.getvalue())[-1]
    return name, float(us)


def q4_1_weights(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Random Q4_1 blocks (n, k / 32, 20) (float16 d and m, then 16 bytes of nibbles) and the
    float64 matrix (n, k) they hold: d * q + m, byte j's low nibble value j of its block, its
    high one value j + 16."""
    blocks = rng.integers(0, 256, (n, k // 32, 20), dtype=np.uint8)
    scales = rng.uniform(-0.02, 0.02, (n, k // 32, 2)).astype(np.float16)
    blocks[..., :4] = scales.view(np.uint8)
    q = np.concatenate([blocks[..., 4:] & 15, blocks[..., 4:] >> 4], axis=-1).astype(np.float64)
    d, m = (scales[..., i:i + 1].astype(np.float64) for i in (0, 1))
    return blocks, (d * q + m).reshape(n, k)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("m", type=int)
    parser.add_argument("k", type=int)
    parser.add_argument("n", type=int)
    parser.add_argument("--transposed", action="store_true", help="x @ w.T, w stored (N, K)")
    parser.add_argument("--q4_1", action="store_true",
                        help="w.T as 4-bit Q4_1 weights (gguf.split_blocks, gguf.split_linear)")
    parser.add_argument("--opts", default="", help="optimizations instead of the heuristic's")
    parser.add_argument("--calls", type=int, default=8)
    args = parser.parse_args(argv)
    if args.opts:
        opts = parse_opts(args.opts)
        program.hand_coded_optimizations = lambda *_, **__: opts
        forget_built()  # (a program built before under the heuristic's optimizations)
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((args.m, args.k), dtype=np.float32)
    w_np = rng.standard_normal((args.n, args.k) if args.transposed else (args.k, args.n),
                               dtype=np.float32)
    blocks, dense = q4_1_weights(rng, args.n, args.k)
    x = Tensor(x_np).realize()
    times, name = [], ""
    for call in range(args.calls + 2):
        if args.q4_1:
            numbers, scales = (Tensor(a).realize() for a in split_blocks(blocks, GGMLType.Q4_1))
            product = split_linear(x, numbers, scales, GGMLType.Q4_1)
        else:
            w = Tensor(w_np).realize()
            product = x @ w.T if args.transposed else x @ w
        name, us = kernel_us(product)
        if call == 0:
            want = x_np.astype(np.float64) @ (
                dense.T if args.q4_1 else w_np.T if args.transposed else w_np)
            error = float(np.abs(product.numpy() - want).max() / np.abs(want).max())
        if call >= 2:
            times.append(us)
    median = statistics.median(times)
    flops = 2 * args.m * args.k * args.n
    kind = " (x @ w.T, Q4_1)" if args.q4_1 else " (x @ w.T)" if args.transposed else ""
    print(f"{args.m}x{args.k}x{args.n}{kind} {name} "
          f"{args.opts or 'heuristic'}: {median / 1e3:.3f} ms, {flops / median / 1e3:.1f} GFLOP/s, "
          f"relative error {error:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
