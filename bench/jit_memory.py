"""What TinyJit's memory planner saves on an MLP training step: jit.bytes_before and
jit.bytes_after, the memory the jit cache writes per step as captured and as planned
(tinyfw/engine/memory.py), and the losses of six steps with and without the plan (equal).

The step is bench/train_step.py's: an MLP 784-128-10 (Linear layers with biases, ReLU), batch
128, sparse categorical cross-entropy, backward, Adam (lr 0.001); both runs start from the same
weights and see the same batches. Run from the repo root:  .venv/bin/python -m bench.jit_memory
Options: --device NAME (default CPU), --sizes 784,128,10 (the layers' widths), --batch 128.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402


def planned_step(sizes: list[int], batch: int, plan: bool) -> tuple[list[float], object]:
    """Six steps of a jitted MLP step (a run, a capture, four replays): the losses, the jit."""
    from tinyfw import Tensor, nn
    from tinyfw.jit.jit import TinyJit
    rng = np.random.default_rng(0)
    Tensor.manual_seed(0)  # the same starting weights each time
    layers = [nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])]
    params = [p for layer in layers for p in (layer.weight, layer.bias)]
    Tensor.realize_all(*params)
    opt = nn.optim.Adam(params, lr=0.001)
    xs = [Tensor(rng.random((batch, sizes[0]), dtype=np.float32)).realize() for _ in range(4)]
    ys = [Tensor(rng.integers(0, sizes[-1], batch).astype(np.int32)).realize()
          for _ in range(4)]

    def step(x: Tensor, y: Tensor) -> Tensor:
        opt.zero_grad()
        h = x
        for i, layer in enumerate(layers):
            h = layer(h) if i == len(layers) - 1 else layer(h).relu()
        loss = h.sparse_categorical_crossentropy(y).backward()
        Tensor.realize_all(loss, *opt.schedule_step())
        return loss

    jit = TinyJit(step)
    os.environ["JIT_PLAN"] = "1" if plan else "0"
    losses = [float(jit(xs[i % 4], ys[i % 4]).item()) for i in range(6)]
    return losses, jit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="CPU")
    parser.add_argument("--sizes", default="784,128,10")
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args(argv)
    os.environ["DEVICE"] = args.device
    sizes = [int(s) for s in args.sizes.split(",")]
    planned_losses, planned = planned_step(sizes, args.batch, plan=True)
    plain_losses, plain = planned_step(sizes, args.batch, plan=False)
    assert planned_losses == plain_losses, (planned_losses, plain_losses)
    before, after = planned.bytes_before, planned.bytes_after  # type: ignore[attr-defined]
    print(f"MLP {'-'.join(map(str, sizes))}, batch {args.batch}, Adam, on {args.device}: "
          f"{len(planned.jit_cache)} launches")  # type: ignore[attr-defined]
    print(f"the cache writes {before} bytes as captured, {after} planned "
          f"({before - after} fewer, {100 * (before - after) / before:.1f}%); "
          f"JIT_PLAN=0: {plain.bytes_after}")  # type: ignore[attr-defined]
    print("losses of 6 steps, the same bits with and without the plan: "
          + ", ".join(f"{loss:.6f}" for loss in planned_losses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
