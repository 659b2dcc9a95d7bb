"""The capstone: your framework, trained on MNIST. Each chapter's tests are run on your code
first, as `python -m chapters` does; every task whose tests all pass is loaded from your
exercises at once (lazy graph, gradients, views, fusion, codegen, backends, JIT, layers and
optimizers), tinyfw's own code stands in for every other task, and an MLP learns to read
digits with it. At the end it names, per chapter, the functions of yours the run called.

    .venv/bin/python -m chapters.capstone                 # your exercises/
    .venv/bin/python -m chapters.capstone --impl solutions --steps 300
    .venv/bin/python -m chapters.capstone --model conv    # the conv net of examples/mnist.py
    .venv/bin/python -m chapters.capstone --model llm     # SmolLM2 answers, on your code

The second run, `--model llm`, has no training: SmolLM2-135M (chapter 12) answers a question
with your tokenizer, rotary embeddings, attention and KV cache, and with everything your other
chapters finished (the graph, the kernels, the JIT that replays each decode step).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import textwrap
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from chapters import learner
from chapters.__main__ import ChapterProgress, grade_chapter
from chapters.tasks import Layout, chapter_dirs, default_layout, discover


def grade(impl_dir: Path, layout: Layout, workers: int) -> dict[str, ChapterProgress]:
    """Chapter -> its progress, each graded by its own tests on impl_dir, as python -m chapters
    grades it (a task is finished when all its tests pass)."""
    folders = sorted(chapter_dirs(layout).items())
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(folders)))) as pool:
        rows = pool.map(lambda item: grade_chapter(item[0], item[1], str(impl_dir), layout),
                        folders)
        return {row.number: row for row in rows}


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


def generate(prompt: str, max_tokens: int) -> None:
    """SmolLM2-135M-Instruct's reply to prompt, printed token by token as it comes."""
    from tinyfw.models.gguf import GGUFFile, packaged_gguf
    from tinyfw.models.llama import SMOLLM2_PACKAGE, Llama
    from tinyfw.tokenizers.bpe import BPETokenizer

    file = GGUFFile(packaged_gguf(SMOLLM2_PACKAGE))
    tokenizer = BPETokenizer.from_gguf(file.metadata)
    model = Llama(file, max_context=128)
    ids = tokenizer.encode(tokenizer.apply_chat_template([{"role": "user", "content": prompt}]))
    print(f"> {prompt}")
    stream = tokenizer.streamer()
    stop = () if tokenizer.eos_id is None else (tokenizer.eos_id,)
    for token in model.generate(ids, max_tokens, stop=stop):
        print(stream(token), end="", flush=True)
    print(stream.flush())


def _row(title: str, width: int, items: list[str]) -> list[str]:
    """'  title   a, b, c' as lines of at most 100 characters, items kept whole, continued
    under the first item."""
    head = f"  {title:<{width}}  "
    lines = [head]
    for n, item in enumerate(items):
        text = item + ("," if n < len(items) - 1 else "")
        if lines[-1].strip() and len(lines[-1]) + 1 + len(text) > 100:
            lines.append(" " * len(head))
        lines[-1] += ("" if lines[-1].endswith("  ") else " ") + text
    return lines


def report(graded: dict[str, ChapterProgress], calls: dict[str, dict[str, int]],
           layout: Layout) -> list[str]:
    """The lines that say, per chapter, which of the learner's functions the run called and
    which tasks tinyfw's code stood in for."""
    titles = {number: folder.name for number, folder in chapter_dirs(layout).items()}
    width = max(len(title) for title in titles.values())
    lines = ["your functions this run called (number of calls), by chapter:"]
    unused = []
    for chapter, counts in calls.items():
        called = [f"{name} ({count})" for name, count in counts.items() if count]
        if called:
            lines += _row(titles[chapter], width, called)
        else:
            unused.append(titles[chapter])
    if len(lines) == 1:
        lines.append("  none")
    if unused:
        lines += textwrap.wrap("finished, but not called by this run: " + ", ".join(unused),
                               width=100, subsequent_indent="  ")
    standing_in = {chapter: row for chapter, row in graded.items() if len(row.finished) < row.total}
    if standing_in:
        lines.append("tinyfw's code ran for the tasks not finished:")
    for chapter, row in standing_in.items():
        todo = [task.id for task in discover(layout, chapter) if task.id not in row.finished]
        items = [task for task in todo if task not in row.ungraded]
        ungraded = [task for task in todo if task in row.ungraded]
        if ungraded:
            items += ungraded[:-1] + [f"{ungraded[-1]} (not graded here: no such hardware)"]
        lines += _row(titles[chapter], width, items)
    return lines


def main(argv: list[str] | None = None) -> int:
    """Grades the learner's code, trains on it, and says whose code ran."""
    parser = argparse.ArgumentParser(prog="python -m chapters.capstone", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", default=None,
                        help="exercises (default, or env TINYFW_IMPL), solutions, or a folder")
    parser.add_argument("--steps", type=int, default=600, help="training steps (default 600)")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--model", choices=["mlp", "conv", "llm"], default="mlp",
                        help="the MLP (default), examples/mnist.py's conv net (98%% in 3 "
                             "epochs, a few minutes on 2 cores), or SmolLM2 answering --prompt")
    parser.add_argument("--prompt", default="What is the capital of France?",
                        help="the question SmolLM2 answers (--model llm)")
    parser.add_argument("--max-tokens", type=int, default=24,
                        help="the longest answer, in tokens (--model llm)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs of the conv net")
    parser.add_argument("--device", default=None,
                        help="train on this device (CPU, CL, WEBGPU, CUDA, ...): your backend")
    parser.add_argument("-j", "--jobs", type=int, default=min(os.cpu_count() or 1, 8),
                        help="chapters graded at once (default: one per core, at most 8)")
    args = parser.parse_args(argv)
    layout = default_layout()
    impl_dir = learner.resolve_impl(args.impl, layout)
    print(f"your code: {impl_dir}")
    print(f"grading it: the tests of {len(chapter_dirs(layout))} chapters, as python -m "
          "chapters runs them")
    graded = grade(impl_dir, layout, args.jobs)
    finished = [task for row in graded.values() for task in row.finished]
    total = sum(row.total for row in graded.values())
    print(f"{len(finished)} of {total} tasks finished (all their tests pass): your code runs "
          "for those, tinyfw's for the rest")
    if args.device:
        os.environ["DEVICE"] = args.device  # tensors made without a device go there
    if finished:
        learner.use_many([c for c, row in graded.items() if row.finished], impl_dir, layout,
                         only=finished, count_calls=True)
    start = time.perf_counter()
    try:
        if args.model == "conv":
            train_conv(args.epochs, args.batch)
        elif args.model == "llm":
            generate(args.prompt, args.max_tokens)
            print(f"({time.perf_counter() - start:.0f} s)")
        else:
            accuracy = train(args.steps, args.batch)
            print(f"test accuracy {accuracy:.4f} after {args.steps} steps of {args.batch} "
                  f"({time.perf_counter() - start:.0f} s)")
        calls = learner.calls()
    finally:
        learner.unuse()
    print("\n".join(report(graded, calls, layout)))
    if len(finished) == total:
        print("every task is finished: wherever this run needed code of the course, it ran yours")
    else:
        print(f"{total - len(finished)} task(s) still to finish; see python -m chapters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
