"""The capstone: your framework, trained on MNIST. Every chapter you have finished is loaded
at once from your exercises (lazy graph, gradients, views, fusion, codegen, backends, JIT,
layers and optimizers), and an MLP learns to read digits with it. Chapters with parts still
to write are named, and tinyfw's own code stands in for them, so the run still works.

    .venv/bin/python -m chapters.capstone                 # your exercises/
    .venv/bin/python -m chapters.capstone --impl solutions --steps 300
    .venv/bin/python -m chapters.capstone --model conv    # the conv net of examples/mnist.py
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from chapters import learner
from chapters.tasks import Layout, chapter_dirs, default_layout, discover, exercise_modules

STUB = re.compile(r'raise NotImplementedError\("not done yet: (\d\d\.[a-z0-9_]+)"\)')


def missing_tasks(impl_dir: Path, layout: Layout) -> dict[str, list[str]]:
    """Chapter -> the tasks whose stubs are still in the learner's files (a missing file counts
    as every task of it missing)."""
    folders = chapter_dirs(layout)
    missing: dict[str, list[str]] = {}
    for exercise in exercise_modules(layout):
        path = impl_dir / folders[exercise.chapter].name / exercise.basename
        if path.is_file():
            found = set(STUB.findall(path.read_text(encoding="utf-8")))
        else:
            found = {region.task_id for region in exercise.regions}
        if found:
            missing.setdefault(exercise.chapter, []).extend(sorted(found))
    return {chapter: sorted(set(tasks)) for chapter, tasks in sorted(missing.items())}


def train(steps: int, batch: int) -> float:
    """Trains a 784-128-10 MLP with Adam and a jitted step; returns the test accuracy."""
    from tinyfw import Tensor, TinyJit, nn
    from tinyfw.progress import trange

    X_train, Y_train, X_test, Y_test = nn.datasets.mnist()
    X_train = (X_train.float() / 255).realize()
    X_test = (X_test.float() / 255).realize()
    Tensor.manual_seed(0)
    model: list[Callable[[Tensor], Tensor]] = [nn.Linear(784, 128), Tensor.relu,
                                               nn.Linear(128, 10)]
    optim = nn.optim.Adam(nn.state.get_parameters(model), lr=1e-3)

    @TinyJit
    def step(x: Tensor, y: Tensor) -> Tensor:
        optim.zero_grad()
        loss = x.flatten(1).sequential(model).sparse_categorical_crossentropy(y).backward()
        optim.step()
        return loss

    rows = Tensor.randint(steps, batch, low=0, high=len(Y_train)).numpy()
    with Tensor.train():
        for i in (bar := trange(steps)):
            picked = Tensor(rows[i])
            loss = step(X_train[picked], Y_train[picked])
            if i % 20 == 0:
                bar.set_description(f"loss {loss.item():.3f}")
    predictions = X_test.flatten(1).sequential(model).argmax(axis=1)
    return (predictions == Y_test).float().mean().item()


def train_conv(epochs: int, batch: int) -> None:
    """The small conv net of examples/mnist.py (its own code, loaded from the file), trained and
    evaluated as that program does; it prints the test accuracy."""
    path = default_layout().root / "examples" / "mnist.py"
    spec = importlib.util.spec_from_file_location("_tinyfw_example_mnist", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.main(["--model", "conv", "--epochs", str(epochs), "--batch", str(batch)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chapters.capstone", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", default=None,
                        help="exercises (default, or env TINYFW_IMPL), solutions, or a folder")
    parser.add_argument("--steps", type=int, default=600, help="training steps (default 600)")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--model", choices=["mlp", "conv"], default="mlp",
                        help="the MLP (default) or examples/mnist.py's conv net (98%% in 3 "
                             "epochs, a few minutes on 2 cores)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs of the conv net")
    parser.add_argument("--device", default=None,
                        help="train on this device (CPU, CL, WEBGPU, CUDA, ...): your backend")
    args = parser.parse_args(argv)
    if args.device:
        os.environ["DEVICE"] = args.device  # tensors made without a device go there
    layout = default_layout()
    impl_dir = learner.resolve_impl(args.impl, layout)
    missing = missing_tasks(impl_dir, layout)
    chapters = sorted({task.chapter for task in discover(layout)})
    yours = [c for c in chapters if c not in missing]
    titles = {n: folder.name for n, folder in chapter_dirs(layout).items()}
    print(f"your code: {impl_dir}")
    for chapter in chapters:
        if chapter in missing:
            print(f"  {titles[chapter]:<22} tinyfw's code stands in; still to write: "
                  f"{', '.join(missing[chapter])}")
        else:
            print(f"  {titles[chapter]:<22} yours")
    if yours:
        learner.use_many(yours, impl_dir, layout)
    start = time.perf_counter()
    try:
        if args.model == "conv":
            train_conv(args.epochs, args.batch)
        else:
            accuracy = train(args.steps, args.batch)
            print(f"test accuracy {accuracy:.4f} after {args.steps} steps of {args.batch} "
                  f"({time.perf_counter() - start:.0f} s)")
    finally:
        learner.unuse()
    if missing:
        print(f"{len(missing)} chapter(s) still to finish: "
              f"{', '.join(titles[c] for c in missing)}; see python -m chapters")
    else:
        print("every chapter is yours: this was your own framework, end to end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
