"""The kernels of one jitted step, each timed alone: where a step's time goes.

Builds the MNIST MLP step of bench/train_step.py (`--model mlp`), the conv net's step of
examples/mnist.py (`--model conv`), all-MiniLM-L6-v2 embedding bench/minilm.py's 32 sentences
(`--model minilm`) or a SmolLM2-135M decode step after bench/llm.py's prompt (`--model llm`)
with TinyJit, runs it until it replays, then launches each kernel the replay launches again on
its own, with the same buffers, and prints the slowest with their optimizations (the best of a
few rounds; the JIT's own time per step beside).

The step is captured without device graphs (JIT_GRAPH=0), so that each kernel's launch is seen;
--steps N trains that many steps first (Adam's state after a thousand steps is not the first
step's: see bench/README.md, denormals).

Run from the repo root:  .venv/bin/python -m bench.kernels --model conv  (--top N rows,
--steps N; NOOPT=1 or BEAM=2 in the environment as for any tinyfw run).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

Step = Callable[[int], Any]


def mlp_step() -> Step:
    """bench/train_step.py's tinyfw step (784-128-10, batch 128, Adam), jitted."""
    from bench.train_step import make_data, tinyfw_step
    weights, xs, ys = make_data()
    return tinyfw_step(weights, xs, ys, jit=True)


def conv_step() -> Step:
    """examples/mnist.py's conv net and training step on random batches of 128, jitted."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import mnist  # type: ignore[import-not-found]

    from tinyfw import Tensor, nn
    model = mnist.ConvNet()
    opt = nn.optim.Adam(nn.state.get_parameters(model), lr=0.005)
    train = mnist.make_train_step(model, opt, jit=True)
    rng = np.random.default_rng(0)
    xs = [Tensor(rng.integers(0, 256, (128, 1, 28, 28)).astype(np.uint8)).realize()
          for _ in range(3)]
    ys = [Tensor(rng.integers(0, 10, 128).astype(np.int32)).realize() for _ in range(3)]
    return lambda i: train(xs[i % 3], ys[i % 3]).item()


def minilm_step() -> Step:
    """bench/minilm.py's TinyJit column: 32 sentences embedded by all-MiniLM-L6-v2."""
    from bench.minilm import tinyfw_jitted
    from tinyfw.models.bert import SentenceEncoder
    run = tinyfw_jitted(SentenceEncoder(device="CPU"))
    return lambda i: run()


def llm_step() -> Step:
    """One SmolLM2-135M decode step (Llama._step, the decode TinyJit) at the position after
    bench/llm.py's prompt, greedy; each call the same token at the same position."""
    from bench.llm import prompt_ids
    from tinyfw import Tensor, dtypes
    from tinyfw.models.llama import Llama, Sampler
    model = Llama.smollm2(max_context=256)  # (as bench/llm.py's)
    ids = prompt_ids()
    model.prefill(ids)
    position = Tensor([len(ids)], dtype=dtypes.int32)
    greedy = Sampler()
    return lambda i: model._step(model.rows([ids[-1]]), position, greedy).item()


def subnormals(buffer: Any) -> int:
    """How many float32 values of buffer are subnormal (nonzero, below 2**-126): arithmetic on
    them takes a slow path on x86 processors, a hundred cycles or more an instruction."""
    from tinyfw import dtypes
    if buffer.dtype != dtypes.float32:
        return 0
    values = np.abs(buffer.numpy())
    return int(((values > 0) & (values < np.finfo(np.float32).tiny)).sum())


def kernel_times(step: Step, rounds: int = 3) -> list[tuple[float, str, tuple[Any, ...]]]:
    """(seconds, name, optimizations) of each kernel one replay of step launches."""
    from tinyfw.device import Device
    from tinyfw.engine import realize
    launched: list[tuple[Any, Any, list[Any]]] = []
    original = realize.launch

    def recording(item: Any, out: Any, inputs: list[Any], compiled: Any = None) -> None:
        original(item, out, inputs, compiled)
        launched.append((item, out, list(inputs)))
    realize.launch = recording
    try:
        step(0)
    finally:
        realize.launch = original
    subnormal = sum(subnormals(buffer) for buffer in {id(b): b for _, _, ins in launched
                                                         for b in ins}.values())
    print(f"subnormal float32 values in the buffers the kernels read: {subnormal}")
    times = []
    for item, out, inputs in launched:
        if item.ast is None:
            continue
        compiled = realize._launched[item]
        device = Device[item.device]
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(3):
                device.run(compiled.runner, item, out, inputs)
            device.synchronize()
            best = min(best, (time.perf_counter() - start) / 3)
        times.append((best, item.name, compiled.opts))
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("mlp", "conv", "minilm", "llm"), default="mlp")
    parser.add_argument("--top", type=int, default=12, help="rows printed, slowest first")
    parser.add_argument("--steps", type=int, default=4, help="steps trained before timing")
    args = parser.parse_args(argv)
    os.environ["JIT_GRAPH"] = "0"  # replays launch kernel by kernel: launch() sees each
    steps = {"mlp": mlp_step, "conv": conv_step, "minilm": minilm_step, "llm": llm_step}
    step = steps[args.model]()
    for i in range(max(args.steps, 4)):  # runs, captures, replays
        step(i)
    start = time.perf_counter()
    for i in range(10):
        step(i)
    per_step = (time.perf_counter() - start) / 10
    times = kernel_times(step)
    print(f"{args.model}: {per_step * 1e3:.2f} ms a jitted step (JIT_GRAPH=0) after "
          f"{max(args.steps, 4)} steps; {len(times)} kernels, "
          f"{sum(t for t, _, _ in times) * 1e3:.2f} ms timed alone")
    for seconds, name, opts in sorted(times, key=lambda t: -t[0])[:args.top]:
        print(f"{seconds * 1e3:8.3f} ms  {name:24s} {', '.join(map(str, opts)) or '-'}")
    by_name: dict[str, list[float]] = {}
    for seconds, name, _ in times:
        by_name.setdefault(name, []).append(seconds)
    print("by name: count x best time alone = total")
    for name, runs in sorted(by_name.items(), key=lambda kv: -sum(kv[1]))[:args.top]:
        print(f"  {name:24s} {len(runs):4d} x {np.median(runs) * 1e6:8.1f} us = "
              f"{sum(runs) * 1e3:7.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
