"""One training step of a small MLP or of examples/mnist.py's conv net, in tinyfw (without and
with TinyJit), torch and tinygrad, at the same thread count.

--model mlp (the default): an MLP 784-128-10 (two Linear layers with biases, ReLU between),
batch 128, sparse categorical cross-entropy, backward, one Adam step (lr 0.001), and the loss
read as a Python float, as a training loop that prints it does.

--model conv: the network of `examples/mnist.py --model conv` (its ConvNet: two 3x3
convolutions of 8 and 16 channels, each with ReLU and 2x2 max pooling, then 400-128-10), taken
from examples/mnist.py itself, and its training step as that file makes it (make_train_step:
the uint8 images normalized inside the step, cross-entropy, backward, Adam with the learning
rate a tensor, 0.005 as mnist.py's default for conv, the loss and update realized in one
schedule), on batches of 128 random 28x28 uint8 images; the loss read as a float. torch and
tinygrad run the same network, written here with the same names and shapes.

All columns start from the same weights and see the same batches, and their losses are
compared before anything is timed. The last line gives tinyfw TinyJit's time per step over
torch's, both at --threads threads (issue 42's target for the conv step: at most 1.0).

Run from the repo root:  .venv/bin/python -m bench.train_step [--model conv]  (or
.venv/bin/python bench/train_step.py). Columns: tinyfw, tinyfw TinyJit, torch, tinygrad and
tinygrad TinyJit (where tinygrad 0.14 and clang are installed). Options: --model {mlp,conv},
--rounds N (timed rounds, default 9), --quick (3 short rounds), --threads N (the threads of
torch, of tinygrad and of tinyfw's CPU device, TINYFW_CORES, unless that is set in the
environment; default 1: on a busy 2-core machine a second thread waits for a core and slows a
step many times).
"""
from __future__ import annotations

import argparse
import datetime
import functools
import importlib.util
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

if not __package__:  # run as a file: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# bench.run drops OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE before numpy loads (see bench/README.md)
from bench.run import DROPPED_ENV, blas_info, cpu_name, load_tinygrad  # noqa: E402, I001

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODELS = ["mlp", "conv"]
BATCH, SIZES, LR = 128, (784, 128, 10), 0.001
CONV_BATCH, CONV_LR = 128, 0.005  # examples/mnist.py's defaults for --model conv
N_BATCHES = 4  # distinct batches, used in turn (a jitted step must take new data each call)
Step = Callable[[int], float]  # step(i) trains on batch i % N_BATCHES and returns the loss
Weights = dict[str, np.ndarray]  # the conv net's starting weights by parameter name


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


def tinygrad_timed(run: Callable[[Any, Any], Any], x_t: list[Any], y_t: list[Any]) -> Step:
    """step(i): run on batch i % N_BATCHES on tinygrad's CPU device, waited for; the loss."""
    from tinygrad import Device

    def timed(i: int) -> float:
        loss = float(run(x_t[i % N_BATCHES], y_t[i % N_BATCHES]).item())
        Device["CPU"].synchronize()
        return loss
    return timed


def tinygrad_step(weights: list[np.ndarray], xs: list[np.ndarray], ys: list[np.ndarray],
                  jit: bool) -> Step:
    """As a tinygrad user writes it (its beautiful_mnist example): TinyJit around the step,
    training mode on, the loss realized with the optimizer's update."""
    from tinygrad import Context, Tensor, TinyJit, nn
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

    return tinygrad_timed(TinyJit(step) if jit else step, x_t, y_t)


# --- the conv net of examples/mnist.py --model conv ---

@functools.cache
def mnist_example() -> ModuleType:
    """examples/mnist.py as a module (its ConvNet, normalize and make_train_step); loaded from
    its file, as bench/onnx.py loads examples/ocr.py: examples/ is not a package."""
    spec = importlib.util.spec_from_file_location("examples_mnist", ROOT / "examples" / "mnist.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_conv_data() -> tuple[Weights, list[np.ndarray], list[np.ndarray]]:
    """The conv net's starting weights (uniform in +-1/sqrt(fan_in), as torch and tinyfw
    start them; names and shapes read off mnist.py's ConvNet) and the batches: uint8 images
    (CONV_BATCH, 1, 28, 28) in 0..255 and uint8 labels, as tinyfw.nn.datasets.mnist gives them."""
    from tinyfw.nn.state import get_state_dict
    shapes = {name: t.shape for name, t in get_state_dict(mnist_example().ConvNet()).items()}
    rng = np.random.default_rng(0)
    weights = {}
    for name, shape in shapes.items():
        layer_weight = shapes[name.rsplit(".", 1)[0] + ".weight"]
        bound = 1 / np.sqrt(np.prod(layer_weight[1:]))
        weights[name] = rng.uniform(-bound, bound, shape).astype(np.float32)
    xs = [rng.integers(0, 256, (CONV_BATCH, 1, 28, 28)).astype(np.uint8)
          for _ in range(N_BATCHES)]
    ys = [rng.integers(0, 10, CONV_BATCH).astype(np.uint8) for _ in range(N_BATCHES)]
    return weights, xs, ys


def tinyfw_conv_step(weights: Weights, xs: list[np.ndarray], ys: list[np.ndarray],
                     jit: bool) -> Step:
    """mnist.py's ConvNet and its make_train_step, as `mnist.py --model conv` trains."""
    from tinyfw import Tensor, nn
    from tinyfw.nn.state import get_parameters, get_state_dict
    mnist = mnist_example()
    model = mnist.ConvNet()
    for name, t in get_state_dict(model).items():
        t.assign(Tensor(weights[name])).realize()
    lr = Tensor(CONV_LR).realize()  # a tensor, as mnist.py's train() gives Adam
    opt = nn.optim.Adam(get_parameters(model), lr=lr)
    run = mnist.make_train_step(model, opt, jit=jit)
    x_t = [Tensor(x).realize() for x in xs]
    y_t = [Tensor(y).realize() for y in ys]
    return lambda i: float(run(x_t[i % N_BATCHES], y_t[i % N_BATCHES]).item())


def conv_sizes(weights: Weights) -> tuple[int, int]:
    """The conv net's first layer's channels and its hidden units (mnist.py's ConvNet
    arguments), read off its weights."""
    return weights["c1.weight"].shape[0], weights["l1.weight"].shape[0]


def torch_conv_net(weights: Weights) -> Any:
    """mnist.py's ConvNet in torch: the same layers, names and shapes, these weights."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    class ConvNet(nn.Module):
        def __init__(self, channels: int, hidden: int) -> None:
            super().__init__()
            self.c1 = nn.Conv2d(1, channels, 3)
            self.c2 = nn.Conv2d(channels, 2 * channels, 3)
            self.l1 = nn.Linear(2 * channels * 5 * 5, hidden)
            self.l2 = nn.Linear(hidden, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = F.max_pool2d(F.relu(self.c1(x)), 2)
            x = F.max_pool2d(F.relu(self.c2(x)), 2)
            return self.l2(F.relu(self.l1(x.flatten(1))))

    model = ConvNet(*conv_sizes(weights))
    # strict: every name and shape must match mnist.py's ConvNet
    model.load_state_dict({name: torch.from_numpy(w) for name, w in weights.items()})
    return model


def torch_conv_step(weights: Weights, xs: list[np.ndarray], ys: list[np.ndarray]) -> Step:
    import torch
    model = torch_conv_net(weights)
    opt = torch.optim.Adam(model.parameters(), lr=CONV_LR)
    x_t = [torch.from_numpy(x) for x in xs]
    y_t = [torch.from_numpy(y).long() for y in ys]

    def step(i: int) -> float:
        x = (x_t[i % N_BATCHES].float() / 255 - 0.1307) / 0.3081  # as mnist.py's normalize
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y_t[i % N_BATCHES])
        loss.backward()
        opt.step()
        return loss.item()
    return step


def tinygrad_conv_net(weights: Weights) -> Any:
    """mnist.py's ConvNet in tinygrad (on its CPU device), these weights."""
    from tinygrad import Context, Tensor, nn

    class ConvNet:
        def __init__(self, channels: int, hidden: int) -> None:
            self.c1 = nn.Conv2d(1, channels, 3)
            self.c2 = nn.Conv2d(channels, 2 * channels, 3)
            self.l1 = nn.Linear(2 * channels * 5 * 5, hidden)
            self.l2 = nn.Linear(hidden, 10)

        def __call__(self, x: Tensor) -> Tensor:
            x = self.c1(x).relu().max_pool2d()
            x = self.c2(x).relu().max_pool2d()
            return self.l2(self.l1(x.flatten(1)).relu())

    with Context(DEV="CPU"):
        model = ConvNet(*conv_sizes(weights))
        state = nn.state.get_state_dict(model)
        assert state.keys() == weights.keys(), f"{list(state)} against {list(weights)}"
        for name, p in state.items():
            p.assign(Tensor(weights[name])).realize()
    return model


def tinygrad_conv_step(weights: Weights, xs: list[np.ndarray], ys: list[np.ndarray],
                       jit: bool) -> Step:
    """The conv net in tinygrad, its step written as tinygrad_step's (beautiful_mnist's)."""
    from tinygrad import Context, Tensor, TinyJit, nn
    model = tinygrad_conv_net(weights)
    with Context(DEV="CPU"):
        opt = nn.optim.Adam(nn.state.get_parameters(model), lr=CONV_LR)
        x_t = [Tensor(x).realize() for x in xs]
        y_t = [Tensor(y).realize() for y in ys]

    def step(x: Tensor, y: Tensor) -> Tensor:
        with Context(TRAINING=1, DEV="CPU"):
            opt.zero_grad()
            images = ((x.float() / 255 - 0.1307) / 0.3081).contiguous()  # mnist.py's normalize
            loss = model(images).sparse_categorical_crossentropy(y).backward()
            return loss.realize(*opt.schedule_step())

    return tinygrad_timed(TinyJit(step) if jit else step, x_t, y_t)

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


def columns(data: tuple[Any, Any, Any], torch_maker: Callable[..., Step],
            tinyfw_maker: Callable[..., Step],
            tinygrad_maker: Callable[..., Step] | None) -> dict[str, Step]:
    """Each column's step over data (weights, images, labels): torch's, tinyfw's without and
    with TinyJit, and tinygrad's likewise where it is given."""
    made = {"torch": torch_maker(*data), "tinyfw": tinyfw_maker(*data, jit=False),
            "tinyfw TinyJit": tinyfw_maker(*data, jit=True)}
    if tinygrad_maker is not None:
        made["tinygrad"] = tinygrad_maker(*data, jit=False)
        made["tinygrad TinyJit"] = tinygrad_maker(*data, jit=True)
    return made


def build_steps(model: str, tinygrad: bool) -> tuple[dict[str, Step], str]:
    """Each column's step, from the same starting weights and batches, and what a step is."""
    if model == "mlp":
        made = columns(make_data(), torch_step, tinyfw_step, tinygrad_step if tinygrad else None)
        return made, (f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, cross-entropy, "
                      f"backward, Adam lr {LR}, loss read")
    data = make_conv_data()
    made = columns(data, torch_conv_step, tinyfw_conv_step,
                   tinygrad_conv_step if tinygrad else None)
    channels, hidden = conv_sizes(data[0])
    what = (f"examples/mnist.py's ConvNet (conv 3x3 {channels}, conv 3x3 {2 * channels}, each "
            f"ReLU and 2x2 max pool, then {2 * channels * 25}-{hidden}-10), batch {CONV_BATCH} "
            f"uint8 images normalized in the step, cross-entropy, backward, Adam lr {CONV_LR}, "
            "loss read")
    return made, what


def loss_differences(steps: dict[str, Step], n: int = 6) -> dict[str, float]:
    """Each column's largest loss difference from torch's over n steps; they must agree (the
    same weights and batches: the same losses, float32 rounding apart)."""
    losses = {name: [step(i) for i in range(n)] for name, step in steps.items()}
    worst = {name: max(abs(a - b) for a, b in zip(got, losses["torch"]))
             for name, got in losses.items() if name != "torch"}
    for name, err in worst.items():
        assert err < 1e-4, f"{name}'s losses {losses[name]} differ from torch's {losses['torch']}"
    return worst


def print_header(tg_line: str) -> None:
    import torch

    from tinyfw.runtime.ops_cpu import cores
    print(f"date: {datetime.date.today()}  cpu: {cpu_name()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, load average "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    print(f"numpy {np.__version__}: {blas_info()}")
    print("OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE: " +
          (f"unset here ({', '.join(DROPPED_ENV)} were set)" if DROPPED_ENV else "not set"))
    print(f"torch {torch.__version__}: {torch.get_num_threads()} threads")
    print(tg_line)
    print(f"tinyfw: device CPU (C compiled by the system cc), {cores()} cores for kernels big "
          f"enough to share (THREAD; TINYFW_CORES={os.environ['TINYFW_CORES']})")


def print_table(times: dict[str, float], worst: dict[str, float], threads: int) -> None:
    t_torch = times["torch"]
    width = max(map(len, times))
    print(f"{'framework'.ljust(width)}  {'ms/step':>8}  {'steps/s':>8}  {'vs torch':>8}")
    for name, t in times.items():
        print(f"{name.ljust(width)}  {t * 1e3:8.2f}  {1 / t:8.1f}  {t / t_torch:7.1f}x")
    print("\nvs torch: time per step over torch's (2.0x = takes twice as long)")
    print("largest loss difference from torch over 6 steps: "
          + ", ".join(f"{name} {err:.1e}" for name, err in worst.items()))
    from tinyfw.runtime.ops_cpu import cores
    print(f"tinyfw TinyJit's step over torch's, tinyfw on {cores()} core(s), torch on {threads} "
          f"thread(s): {times['tinyfw TinyJit'] / t_torch:.2f}x (issue 42's target for the conv "
          "step: at most 1.00x at the same thread count)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=MODELS, default="mlp", help="the network stepped")
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds per column")
    parser.add_argument("--quick", action="store_true", help="3 short rounds: a smoke test")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch's, tinygrad's and tinyfw's threads (TINYFW_CORES)")
    args = parser.parse_args(argv)
    rounds, min_round_s = (3, 0.1) if args.quick else (args.rounds, 0.5)

    import torch
    torch.set_num_threads(args.threads)
    os.environ["NUM_CPU_THREADS"] = str(args.threads)  # read when tinygrad is imported
    os.environ.setdefault("TINYFW_CORES", str(args.threads))  # read when the CPU device starts
    tg, tg_line = load_tinygrad()
    print_header(tg_line)

    steps, what = build_steps(args.model, tinygrad=tg is not None)
    print(f"step: {what}; medians of {rounds} rounds after warm-up\n")
    worst = loss_differences(steps)
    times = medians(steps, rounds, min_round_s)
    print_table(times, worst, args.threads)
    print("load average at the end: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
