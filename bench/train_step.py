"""One training step of a small MLP, in tinyfw (without and with TinyJit), torch and tinygrad.

The step: an MLP 784-128-10 (two Linear layers with biases, ReLU between), batch 128,
sparse categorical cross-entropy, backward, one Adam step (lr 0.001), and the loss read as a
Python float, as a training loop that prints it does. All four start from the same weights and
see the same batches, and their losses are compared before anything is timed.

Run from the repo root:  .venv/bin/python -m bench.train_step  (or .venv/bin/python
bench/train_step.py). Options: --rounds N (timed rounds, default 9), --quick (3 short rounds),
--threads N (torch's and tinygrad's threads, default 1: tinyfw's CPU device runs one thread,
and on a busy 2-core machine a second thread waits for a core and slows a step many times).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# bench.run drops OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE before numpy loads (see bench/README.md)
from bench.run import DROPPED_ENV, blas_info, cpu_name, load_tinygrad  # noqa: E402, I001

import numpy as np  # noqa: E402

BATCH, SIZES, LR = 128, (784, 128, 10), 0.001
N_BATCHES = 4  # distinct batches, used in turn (a jitted step must take new data each call)
Step = Callable[[int], float]  # step(i) trains on batch i % N_BATCHES and returns the loss


def make_data() -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """The shared starting weights (w1, b1, w2, b2, torch's shapes) and the batches."""
    rng = np.random.default_rng(0)
    weights = []
    for fan_in, fan_out in zip(SIZES, SIZES[1:]):
        bound = 1 / np.sqrt(fan_in)
        weights += [rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32),
                    rng.uniform(-bound, bound, fan_out).astype(np.float32)]
    xs = [rng.random((BATCH, SIZES[0]), dtype=np.float32) for _ in range(N_BATCHES)]
    ys = [rng.integers(0, SIZES[-1], BATCH).astype(np.int32) for _ in range(N_BATCHES)]
    return weights, xs, ys


def tinyfw_step(weights: list[np.ndarray], xs: list[np.ndarray], ys: list[np.ndarray],
                jit: bool) -> Step:
    from tinyfw import Tensor, nn
    from tinyfw.jit.jit import TinyJit
    l1, l2 = nn.Linear(*SIZES[:2]), nn.Linear(*SIZES[1:])
    params = [l1.weight, l1.bias, l2.weight, l2.bias]
    for p, w in zip(params, weights):
        p.assign(Tensor(w)).realize()
    opt = nn.optim.Adam(params, lr=LR)
    x_t = [Tensor(x).realize() for x in xs]
    y_t = [Tensor(y).realize() for y in ys]

    def step(x: Tensor, y: Tensor) -> Tensor:
        opt.zero_grad()
        loss = l2(l1(x).relu()).sparse_categorical_crossentropy(y).backward()
        Tensor.realize_all(loss, *opt.schedule_step())  # loss and update: one schedule
        return loss

    run = TinyJit(step) if jit else step
    return lambda i: float(run(x_t[i % N_BATCHES], y_t[i % N_BATCHES]).item())


def torch_step(weights: list[np.ndarray], xs: list[np.ndarray], ys: list[np.ndarray]) -> Step:
    import torch
    model = torch.nn.Sequential(torch.nn.Linear(*SIZES[:2]), torch.nn.ReLU(),
                                torch.nn.Linear(*SIZES[1:]))
    with torch.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(torch.from_numpy(w))
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    x_t = [torch.from_numpy(x) for x in xs]
    y_t = [torch.from_numpy(y).long() for y in ys]

    def step(i: int) -> float:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x_t[i % N_BATCHES]), y_t[i % N_BATCHES])
        loss.backward()
        opt.step()
        return loss.item()
    return step


def tinygrad_step(weights: list[np.ndarray], xs: list[np.ndarray], ys: list[np.ndarray],
                  jit: bool) -> Step:
    """As a tinygrad user writes it (its beautiful_mnist example): TinyJit around the step,
    training mode on, the loss realized with the optimizer's update."""
    from tinygrad import Context, Device, Tensor, TinyJit, nn
    with Context(DEV="CPU"):  # tinygrad's default here would be OpenCL (PoCL)
        l1, l2 = nn.Linear(*SIZES[:2]), nn.Linear(*SIZES[1:])
        params = [l1.weight, l1.bias, l2.weight, l2.bias]
        for p, w in zip(params, weights):
            p.assign(Tensor(w)).realize()
        opt = nn.optim.Adam(params, lr=LR)
        x_t = [Tensor(x).realize() for x in xs]
        y_t = [Tensor(y).realize() for y in ys]

    def step(x: Tensor, y: Tensor) -> Tensor:
        with Context(TRAINING=1, DEV="CPU"):
            opt.zero_grad()
            loss = l2(l1(x).relu()).sparse_categorical_crossentropy(y).backward()
            return loss.realize(*opt.schedule_step())

    run = TinyJit(step) if jit else step

    def timed(i: int) -> float:
        loss = float(run(x_t[i % N_BATCHES], y_t[i % N_BATCHES]).item())
        Device["CPU"].synchronize()
        return loss
    return timed


def medians(steps: dict[str, Step], rounds: int, min_round_s: float,
            warmup: int = 5) -> dict[str, float]:
    """Median seconds per step of each. The rounds take turns (round 1 of each, then round 2,
    ...), so a change in the machine's load affects every column alike."""
    calls = dict.fromkeys(steps, 0)

    def run(name: str, n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            steps[name](calls[name])
            calls[name] += 1
        return time.perf_counter() - start

    number = {}
    for name in steps:
        run(name, warmup)  # compiles; a JIT runs, captures, then replays
        once = max(run(name, 1), 1e-6)
        number[name] = max(1, int(min_round_s / once))
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name in steps:
            times[name].append(run(name, number[name]) / number[name])
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds per column")
    parser.add_argument("--quick", action="store_true", help="3 short rounds: a smoke test")
    parser.add_argument("--threads", type=int, default=1, help="torch's and tinygrad's threads")
    args = parser.parse_args(argv)
    rounds, min_round_s = (3, 0.1) if args.quick else (args.rounds, 0.5)

    import torch
    torch.set_num_threads(args.threads)
    os.environ["NUM_CPU_THREADS"] = str(args.threads)  # read when tinygrad is imported
    tg, tg_line = load_tinygrad()
    print(f"date: {datetime.date.today()}  cpu: {cpu_name()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, load average "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    print(f"numpy {np.__version__}: {blas_info()}")
    print("OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE: " +
          (f"unset here ({', '.join(DROPPED_ENV)} were set)" if DROPPED_ENV else "not set"))
    print(f"torch {torch.__version__}: {torch.get_num_threads()} threads")
    print(tg_line)
    from tinyfw.runtime.ops_cpu import cores
    print(f"tinyfw: device CPU (C compiled by the system cc), {cores()} cores for kernels big "
          "enough to share (THREAD; TINYFW_CORES=1 for one)")
    print(f"step: MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, cross-entropy, backward, "
          f"Adam lr {LR}, loss read; medians of {rounds} rounds after warm-up\n")

    weights, xs, ys = make_data()

    def build() -> dict[str, Step]:
        made = {"torch": torch_step(weights, xs, ys),
                "tinyfw": tinyfw_step(weights, xs, ys, jit=False),
                "tinyfw TinyJit": tinyfw_step(weights, xs, ys, jit=True)}
        if tg is not None:
            made["tinygrad"] = tinygrad_step(weights, xs, ys, jit=False)
            made["tinygrad TinyJit"] = tinygrad_step(weights, xs, ys, jit=True)
        return made

    # the same weights and batches: the same losses, step after step (float32 rounding apart)
    steps = build()
    losses = {name: [step(i) for i in range(6)] for name, step in steps.items()}
    worst = {name: max(abs(a - b) for a, b in zip(got, losses["torch"]))
             for name, got in losses.items() if name != "torch"}
    for name, err in worst.items():
        assert err < 1e-4, f"{name}'s losses {losses[name]} differ from torch's {losses['torch']}"

    times = medians(steps, rounds, min_round_s)
    t_torch = times["torch"]
    width = max(map(len, times))
    print(f"{'framework'.ljust(width)}  {'ms/step':>8}  {'steps/s':>8}  {'vs torch':>8}")
    for name, t in times.items():
        print(f"{name.ljust(width)}  {t * 1e3:8.2f}  {1 / t:8.1f}  {t / t_torch:7.1f}x")
    print("\nvs torch: time per step over torch's (2.0x = takes twice as long)")
    print("largest loss difference from torch over 6 steps: "
          + ", ".join(f"{name} {err:.1e}" for name, err in worst.items()))
    print("load average at the end: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
