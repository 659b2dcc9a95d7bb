"""Train a small network on MNIST with tinyfw: a jitted training step, a progress bar, then the
accuracy on the 10000 test images.

    .venv/bin/python examples/mnist.py --model mlp --epochs 3   # 784-128-10: 97.7%, 30 s
    .venv/bin/python examples/mnist.py --model conv --epochs 3  # conv net: 99.0%, 4 min
    .venv/bin/python examples/mnist.py --device CL --epochs 1 --steps 50   # a short smoke run
    .venv/bin/python examples/mnist.py --devices CPU:0,CPU:1   # data parallel on 2 devices
    mpiexec -n 2 .venv/bin/python examples/mnist.py --distributed   # on 2 processes (MPI)

(Times measured on this project's 2-core CPU machine, device CPU; bench/README.md shows a
whole run. The conv net prints, after three progress bars, `test accuracy 98.99%
(9899/10000)` and `1404 steps in 3 epoch(s): training 210.6 s (150 ms/step), ...`.)

Everything a training loop needs is here, in the order it happens:

  1. the data: tinyfw.nn.datasets.mnist() gives uint8 images (N, 1, 28, 28) and labels; batches()
     goes through them once per epoch in a random order;
  2. the model: plain classes holding nn layers (no base class, as in tinygrad);
  3. the training step: forward, loss, backward, Adam; wrapped in TinyJit, which replays its
     kernels from the third step on instead of building and scheduling the graph again;
  4. the evaluation: the number of test images classified right, in batches (jitted too);
  5. optionally, the trained weights saved as a .safetensors file.

With --devices (chapter 13, tinyfw/multi.py) it is data parallel: the weights (and Adam's
state) are replicated on every device, each batch is sharded along its first axis, each device
computes the loss and the gradients of its share, and the all-reduce in the loss's mean and in
the replicated weights' gradients gives every device the same update. TinyJit captures the
step with its copies between devices; the batch comes in on one device and is sharded inside,
and the loss goes out gathered on the first device.

With --distributed (tinyfw/distributed.py, run under mpiexec) it is data parallel over
processes: every rank goes through the same shuffled batches (the same seed) and takes its
equal share of each (rank_slice: the batch size must divide by the process count), the weights
start as rank 0's (broadcast), and after each backward pass the gradients are averaged over the
processes (all_reduce_gradients, through numpy and MPI), so every rank makes the same update
and keeps identical weights. Only rank 0 prints and saves. An MPI call cannot be captured by
TinyJit (it is host code, not a kernel), so the step is two jitted halves with the host
all-reduce between them: forward + backward, returning the loss and the gradients, then the
optimizer's update, taking the averaged gradients as arguments. With --devices too, each
process is data parallel on its devices as well (the gradients are all-reduced locally first,
then across processes); that combination runs unjitted (a jitted function returns tensors of
one device, and the gradients are on several).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any
from pathlib import Path

from tinyfw import Tensor, nn
from tinyfw.nn.datasets import batches, mnist
from tinyfw.jit.jit import TinyJit
from tinyfw.nn.state import get_parameters, get_state_dict, safe_save
from tinyfw.progress import tqdm

DEVICES = ["CPU", "CL", "CUDA", "WEBGPU", "CUDAEMU", "NUMPY"]
EVAL_BATCH = 1000  # divides the 10000 test images: every eval batch has the same shape


# --- the models ---------------------------------------------------------------------------------
class MLP:
    """784 pixels -> 128 hidden units (ReLU) -> 10 logits."""

    def __init__(self) -> None:
        self.l1 = nn.Linear(784, 128)
        self.l2 = nn.Linear(128, 10)

    def __call__(self, x: Tensor) -> Tensor:
        return self.l2(self.l1(x.flatten(1)).relu())


class ConvNet:
    """Two 3x3 convolutions, each followed by ReLU and 2x2 max pooling, then an MLP:
    (1, 28, 28) -> (8, 26, 26) -> (8, 13, 13) -> (16, 11, 11) -> (16, 5, 5) = 400 -> 128 -> 10.
    About 54000 parameters, most of them in the first linear layer, which costs little time:
    the convolutions take most of a step. Their cost grows with their channels: --channels 16
    makes a step about 3.5 times slower on the CPU."""

    def __init__(self, channels: int = 8, hidden: int = 128) -> None:
        self.c1 = nn.Conv2d(1, channels, 3)
        self.c2 = nn.Conv2d(channels, 2 * channels, 3)
        self.l1 = nn.Linear(2 * channels * 5 * 5, hidden)
        self.l2 = nn.Linear(hidden, 10)

    def __call__(self, x: Tensor) -> Tensor:
        x = self.c1(x).relu().max_pool2d()
        x = self.c2(x).relu().max_pool2d()
        return self.l2(self.l1(x.flatten(1)).relu())


def normalize(images: Tensor) -> Tensor:
    """uint8 pixels 0..255 -> floats with about mean 0 and standard deviation 1 (MNIST's mean
    and deviation are 0.1307 and 0.3081 on the 0..1 scale).

    contiguous() makes this a kernel of its own, whose result the model's kernels read. Left
    lazy, it would be fused into every kernel that reads the images, the first layer's weight
    gradient too, and computed again there for each output (that made the MLP's step twice
    as slow)."""
    return ((images.float() / 255 - 0.1307) / 0.3081).contiguous()


# --- training and evaluation --------------------------------------------------------------------
def shard_batch(devices: tuple[str, ...] | None) -> Callable[[Tensor], Tensor]:
    """A batch as the step sees it: split along its first axis over devices (data parallel),
    or as it is."""
    return (lambda t: t) if devices is None else (lambda t: t.shard(devices, axis=0))


def gather_result(devices: tuple[str, ...] | None) -> Callable[[Tensor], Tensor]:
    """A result as the step returns it: on the first device (TinyJit returns tensors of one
    device), or as it is."""
    return (lambda t: t) if devices is None else (lambda t: t.to(devices[0]))


def make_train_step(model: Callable[[Tensor], Tensor], opt: nn.optim.Optimizer,
                    jit: bool, devices: tuple[str, ...] | None = None
                    ) -> Callable[[Tensor, Tensor], Tensor]:
    """One step on a batch: forward, loss, backward, Adam; returns the loss.

    TinyJit's rules (tinyfw/jit/jit.py) shape this function: the batch comes in as tensor
    arguments (a replay swaps in their buffers), nothing random is drawn inside, nothing is
    read (.item()) inside, and everything assigned (parameters, Adam's moments, BatchNorm's
    running statistics) is realized by the end: one realize_all of the loss and the
    optimizer's lazy update does it, in a single schedule."""

    place, gather = shard_batch(devices), gather_result(devices)

    def train_step(x: Tensor, y: Tensor) -> Tensor:
        x, y = place(x), place(y)
        with Tensor.train():
            opt.zero_grad()
            loss = model(normalize(x)).sparse_categorical_crossentropy(y).backward()
            Tensor.realize_all(loss, *opt.schedule_step())
        return gather(loss)

    return TinyJit(train_step) if jit else train_step


def make_distributed_step(model: Callable[[Tensor], Tensor], opt: nn.optim.Optimizer,
                          jit: bool, pg: Any, devices: tuple[str, ...] | None = None
                          ) -> Callable[[Tensor, Tensor], Tensor]:
    """A step of data parallel training over processes (--distributed): this rank's share of
    the batch, forward and backward (jitted), the gradients averaged over the processes (host
    code: MPI, never captured), then Adam's update from them (jitted)."""
    place, gather = shard_batch(devices), gather_result(devices)

    def grads_step(x: Tensor, y: Tensor) -> tuple[Tensor, ...]:
        x, y = place(x), place(y)
        with Tensor.train():
            opt.zero_grad()
            loss = model(normalize(x)).sparse_categorical_crossentropy(y).backward()
            grads = [p.grad for p in opt.params]
            assert all(g is not None for g in grads)
            Tensor.realize_all(loss, *grads)  # type: ignore[arg-type]
        return (gather(loss), *grads)  # type: ignore[arg-type]

    def update_step(*grads: Tensor) -> None:
        with Tensor.train():
            for p, g in zip(opt.params, grads):
                p.grad = g
            Tensor.realize_all(*opt.schedule_step())
            opt.zero_grad()  # the gradients were arguments: none is left to a replay

    forward = TinyJit(grads_step) if jit else grads_step
    update = TinyJit(update_step) if jit else update_step

    def train_step(x: Tensor, y: Tensor) -> Tensor:
        rows = pg.rank_slice(len(y))
        loss, *grads = forward(x[rows].contiguous().realize(), y[rows].contiguous().realize())
        for p, g in zip(opt.params, grads):
            p.grad = g
        pg.all_reduce_gradients(opt.params)  # each .grad is now a new tensor: the mean
        means = [p.grad for p in opt.params]
        opt.zero_grad()  # the update takes them as arguments (TinyJit refuses leftover .grad)
        update(*means)
        return pg.all_reduce(loss.detach().contiguous().realize(), "mean")

    return train_step


def make_eval_step(model: Callable[[Tensor], Tensor], jit: bool,
                   devices: tuple[str, ...] | None = None) -> Callable[[Tensor, Tensor], Tensor]:
    """How many images of a batch the model classifies right (a 0-d tensor)."""
    place, gather = shard_batch(devices), gather_result(devices)

    def eval_step(x: Tensor, y: Tensor) -> Tensor:
        x, y = place(x), place(y)
        # a count in int32: a sum of bools is int64 (as in torch), which WEBGPU cannot hold
        return gather((model(normalize(x)).argmax(axis=1) == y).sum(dtype="int32"))

    return TinyJit(eval_step) if jit else eval_step


def train(model: Callable[[Tensor], Tensor], X: Tensor, Y: Tensor,
          args: argparse.Namespace) -> int:
    """args.epochs passes over (X, Y), in batches of args.batch; returns the steps taken."""
    # The learning rate is a tensor, not a float: a float would be baked into the captured
    # kernels, while a tensor's new value (assigned between epochs) reaches the replays too.
    lr = Tensor(args.lr)
    lr = (lr if args.devices is None else lr.to(args.devices)).realize()
    opt = nn.optim.Adam(get_parameters(model), lr=lr)
    if args.distributed:
        step = make_distributed_step(model, opt, not args.no_jit, args.pg, args.devices)
    else:
        step = make_train_step(model, opt, jit=not args.no_jit, devices=args.devices)
    per_epoch = len(Y) // args.batch  # whole batches only: a jitted step keeps its shapes
    if args.steps:
        per_epoch = min(per_epoch, args.steps)
    taken = 0
    for epoch in range(1, args.epochs + 1):
        bar = tqdm(total=per_epoch, desc=f"epoch {epoch}", unit="step", disable=not args.main)
        for x, y in batches(X, Y, args.batch):
            if bar.n == per_epoch:
                break
            loss = step(x, y)
            taken += 1
            bar.set_description(f"epoch {epoch} loss {loss.item():.3f}")
            bar.update()
        bar.close()
        lr.assign(lr * args.lr_decay).realize()  # smaller steps as the loss gets lower
    return taken


def evaluate(model: Callable[[Tensor], Tensor], X: Tensor, Y: Tensor, jit: bool,
             devices: tuple[str, ...] | None = None) -> int:
    """The number of images of (X, Y) that the model classifies right."""
    step = make_eval_step(model, jit, devices)
    return sum(int(step(x, y).item()) for x, y in batches(X, Y, EVAL_BATCH, shuffle=False))


# --- the program --------------------------------------------------------------------------------
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Train an MLP or a small conv net on MNIST "
                                     "with tinyfw, then print its test accuracy.")
    parser.add_argument("--model", choices=["mlp", "conv"], default="mlp")
    parser.add_argument("--device", choices=DEVICES, default=None,
                        help="tinyfw's device (default: $DEVICE, else CPU)")
    parser.add_argument("--devices", default=None, metavar="CPU:0,CPU:1",
                        help="data parallel over these devices (weights replicated, batches "
                        "sharded)")
    parser.add_argument("--distributed", action="store_true",
                        help="data parallel over the processes of mpiexec (MPI): each takes its "
                        "share of every batch, gradients averaged across them")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=None,
                        help="Adam's learning rate (default: 0.003 mlp, 0.005 conv)")
    parser.add_argument("--lr-decay", type=float, default=0.5,
                        help="the learning rate is multiplied by this after each epoch")
    parser.add_argument("--steps", type=int, default=0,
                        help="at most this many steps per epoch (a smoke run); 0: all")
    parser.add_argument("--channels", type=int, default=8,
                        help="the conv net's first layer's channels (the second has twice)")
    parser.add_argument("--no-jit", action="store_true", help="run every step unjitted")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", type=Path, default=None, metavar="PATH.safetensors",
                        help="save the trained weights here")
    args = parser.parse_args(argv)
    if args.devices is not None:
        args.devices = tuple(d.strip() for d in args.devices.split(","))
    if args.lr is None:
        args.lr = 0.005 if args.model == "conv" else 0.003
    if args.distributed and args.devices is not None and not args.no_jit:
        parser.error("--distributed with --devices runs unjitted: add --no-jit (a jitted "
                     "function returns tensors of one device, and the gradients are on several)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.device:  # tensors made without a device go to $DEVICE (tinyfw.device.Device.DEFAULT)
        os.environ["DEVICE"] = args.device
    Tensor.manual_seed(args.seed)  # the same weights and batch order for the same seed
    args.pg, args.main = None, True
    if args.distributed:
        from tinyfw import distributed
        args.pg = distributed.init()
        args.main = args.pg.rank == 0  # only rank 0 prints and saves
        args.pg.rank_slice(args.batch)  # refuses a batch that does not split evenly

    X_train, Y_train, X_test, Y_test = mnist()
    model = MLP() if args.model == "mlp" else ConvNet(args.channels)
    if args.devices is not None:
        for p in get_parameters(model):
            p.shard_(args.devices)  # replicated: a whole copy on each device
    if args.pg is not None:
        args.pg.broadcast_parameters(get_parameters(model))  # everybody starts from rank 0's
    say = print if args.main else (lambda *a, **k: None)
    n_params = sum(p.numel() for p in get_parameters(model))
    jit = "no JIT" if args.no_jit else "TinyJit"
    where = ",".join(args.devices) if args.devices else X_train.device
    if args.pg is not None:
        where += f", {args.pg.world_size} processes (MPI)"
    say(f"{args.model}: {n_params} parameters, device {where}, batch {args.batch}, "
          f"Adam lr {args.lr} (x{args.lr_decay} per epoch), {jit}")

    start = time.perf_counter()
    steps = train(model, X_train, Y_train, args)
    train_s = time.perf_counter() - start

    start = time.perf_counter()
    correct = evaluate(model, X_test, Y_test, jit=not args.no_jit, devices=args.devices)
    eval_s = time.perf_counter() - start
    say(f"test accuracy {correct / len(Y_test):.2%} ({correct}/{len(Y_test)})")
    say(f"{steps} steps in {args.epochs} epoch(s): training {train_s:.1f} s "
          f"({train_s / max(steps, 1) * 1000:.0f} ms/step), evaluation {eval_s:.1f} s")

    if args.save and args.main:
        safe_save(get_state_dict(model), args.save)
        say(f"saved {args.save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
