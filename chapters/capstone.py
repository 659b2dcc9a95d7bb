"""The capstone: your framework, trained on MNIST. Each chapter's tests are run on your code
first, as `python -m chapters` does; every task whose tests all pass is loaded from your
exercises at once (lazy graph, gradients, views, fusion, codegen, backends, JIT, layers and
optimizers), tinyfw's own code stands in for every other task, and an MLP learns to read
digits with it. At the end it names, per chapter, the functions of yours the run called.

    .venv/bin/python -m chapters.capstone                 # your exercises/
    .venv/bin/python -m chapters.capstone --impl solutions --steps 300
    .venv/bin/python -m chapters.capstone --model conv    # the conv net of examples/mnist.py
    .venv/bin/python -m chapters.capstone --model llm     # SmolLM2 answers, on your code
    .venv/bin/python -m chapters.capstone --devices CPU:0,CPU:1 --steps 20  # data parallel

The second run, `--model llm`, has no training: SmolLM2-135M (chapter 12) answers a question
with your tokenizer, rotary embeddings, attention and KV cache, and with everything your other
chapters finished (the graph, the kernels, the JIT that replays each decode step). With
`--devices CPU:0,CPU:1` the MLP trains data parallel (chapter 13): the weights replicated on
both devices, each batch sharded, the gradients all-reduced.

The report counts how often your code of each task ran: the lines of the task itself, not the
function around them (tinyfw's code around a task may take another path, as the C workers do
for threaded kernels). A finished task whose code this run did not reach is named, with how to
reach it.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
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


def train(steps: int, batch: int, devices: tuple[str, ...] | None = None) -> float:
    """Trains a 784-128-10 MLP with Adam and a jitted step; returns the test accuracy. With
    devices, data parallel: the weights (and Adam's state) replicated on each device, each
    batch sharded along its first axis, the gradients all-reduced (chapter 13)."""
    from tinyfw import Tensor, TinyJit, nn
    from tinyfw.progress import trange

    X_train, Y_train, X_test, Y_test = nn.datasets.mnist()
    X_train = (X_train.float() / 255).realize()
    X_test = (X_test.float() / 255).realize()
    Tensor.manual_seed(0)
    model: list[Callable[[Tensor], Tensor]] = [nn.Linear(784, 128), Tensor.relu,
                                               nn.Linear(128, 10)]
    if devices:
        for parameter in nn.state.get_parameters(model):
            parameter.shard_(devices)  # replicated: a whole copy on each device
    optim = nn.optim.Adam(nn.state.get_parameters(model), lr=1e-3)

    def placed(t: Tensor) -> Tensor:
        """A batch as the model sees it: sharded along its first axis over devices."""
        return t.shard(devices, axis=0) if devices else t

    @TinyJit
    def step(x: Tensor, y: Tensor) -> Tensor:
        optim.zero_grad()
        loss = placed(x).flatten(1).sequential(model).sparse_categorical_crossentropy(
            placed(y)).backward()
        optim.step()
        return loss.to(devices[0]) if devices else loss

    rows = Tensor.randint(steps, batch, low=0, high=len(Y_train)).numpy()
    with Tensor.train():
        for i in (bar := trange(steps)):
            picked = Tensor(rows[i])
            loss = step(X_train[picked], Y_train[picked])
            if i % 20 == 0:
                bar.set_description(f"loss {loss.item():.3f}")
    predictions = placed(X_test).flatten(1).sequential(model).argmax(axis=1)
    if devices:
        predictions, Y_test = predictions.to(devices[0]), Y_test.to(devices[0])  # gathered
    return (predictions == Y_test).float().mean().item()


def train_conv(epochs: int, batch: int, devices: tuple[str, ...] | None = None) -> None:
    """The small conv net of examples/mnist.py (its own code, loaded from the file), trained and
    evaluated as that program does; it prints the test accuracy."""
    path = default_layout().root / "examples" / "mnist.py"
    spec = importlib.util.spec_from_file_location("_tinyfw_example_mnist", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.main(["--model", "conv", "--epochs", str(epochs), "--batch", str(batch)]
                 + (["--devices", ",".join(devices)] if devices else []))


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
        if lines[-1].strip() not in ("", title) and len(lines[-1]) + 1 + len(text) > 100:
            lines.append(" " * len(head))
        lines[-1] += ("" if lines[-1].endswith("  ") else " ") + text
    return lines


def how_to_reach(task_id: str, args: argparse.Namespace) -> str:
    """Why a run like this one does not reach a task's code, and how to reach it."""
    from tinyfw.engine.settings import beam_width
    from tinyfw.runtime.ops_cpu import workers_enabled

    chapter = task_id[:2]
    device = (args.device or os.environ.get("DEVICE") or "CPU").upper()
    if chapter == "01":
        return "no model here uses Value; chapter 01's notebook does"
    if task_id == "11.threads":
        if workers_enabled():
            return "the C workers ran the threaded kernels; CPU_WORKERS=0 runs yours"
        return "no threaded kernel ran on the CPU"
    if task_id == "09.replay":
        from tinyfw.engine.graph import graphs_enabled
        if graphs_enabled():
            return "the replays ran as device graphs (09.graph); JIT_GRAPH=0 runs yours"
    if task_id == "11.search":
        if beam_width() == 0:
            return "no BEAM search ran (BEAM is not set); BEAM=2 runs yours"
        return ("each kernel's BEAM winner came from the cache (beam.json); TINYFW_CACHE set "
                "to a new folder searches again")
    if chapter == "13" and getattr(args, "devices", None):
        if task_id == "13.ring" and os.environ.get("ALLREDUCE") == "naive":
            return "ALLREDUCE=naive copied every part instead; ALLREDUCE=ring runs yours"
        return "this run did not need it"
    by_chapter = {"05": ("--device CPU" if device != "CPU" else ""), "06": "--device CL",
                  "07": "--device CUDA (an NVIDIA GPU)", "08": "--device WEBGPU",
                  "12": "--model llm", "13": "--devices CPU:0,CPU:1 (data parallel)"}
    hint = by_chapter.get(chapter, "")
    return f"{hint} runs it" if hint else "this run did not need it"


def report(graded: dict[str, ChapterProgress], calls: dict[str, dict[str, int]],
           layout: Layout, runs: dict[str, int] | None = None,
           args: argparse.Namespace | None = None) -> list[str]:
    """The lines that say, per chapter, how often the learner's code of each function ran (its
    task's lines, see learner.calls), which finished tasks the run did not reach (with how to
    reach them: runs, task -> times its code ran), and which tasks tinyfw's code stood in for."""
    titles = {number: folder.name for number, folder in chapter_dirs(layout).items()}
    width = max(len(title) for title in titles.values())
    args = args or argparse.Namespace(device=None)
    runs = runs or {}
    lines = ["your code this run ran (times it ran), by function and chapter:"]
    for chapter, counts in calls.items():
        called = [f"{name} ({count})" for name, count in counts.items() if count]
        if called:
            lines += _row(titles[chapter], width, called)
    if len(lines) == 1:
        lines.append("  none")
    missed: dict[str, dict[str, list[str]]] = {}  # chapter -> why -> tasks
    for chapter, row in graded.items():
        units = {task.id: [unit.qualname for unit in task.units]
                 for task in discover(layout, chapter)}
        for task in row.finished:
            counted = [calls.get(chapter, {}).get(unit) for unit in units[task]]
            if task in runs:
                why = "" if runs[task] else how_to_reach(task, args)
            elif any(count is None for count in counted):
                why = "tinyfw's code ran: a function of it also holds a task not finished"
            else:
                why = "" if any(counted) else how_to_reach(task, args)
            if why:
                missed.setdefault(chapter, {}).setdefault(why, []).append(task)
    if missed:
        lines.append("finished, but this run did not reach your code of:")
        for chapter, reasons in missed.items():
            items = [task for why, tasks in reasons.items()
                     for task in tasks[:-1] + [f"{tasks[-1]} ({why})"]]
            lines += _row(titles[chapter], width, items)
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
    parser.add_argument("--devices", default=None, metavar="CPU:0,CPU:1",
                        help="train data parallel over these devices (chapter 13's sharding "
                             "and all-reduce): the MLP or the conv net")
    parser.add_argument("-j", "--jobs", type=int, default=min(os.cpu_count() or 1, 8),
                        help="chapters graded at once (default: one per core, at most 8)")
    args = parser.parse_args(argv)
    devices = tuple(d.strip() for d in args.devices.split(",")) if args.devices else None
    if devices and args.model == "llm":
        parser.error("--devices trains data parallel: use it with --model mlp or conv")
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
    if devices:
        # the ring all-reduce (13.ring) for the gradients, where tinyfw would copy every part
        # to every device (naive: its choice for two devices)
        os.environ.setdefault("ALLREDUCE", "ring")
    if finished:
        learner.use_many([c for c, row in graded.items() if row.finished], impl_dir, layout,
                         only=finished, count_calls=True)
    start = time.perf_counter()
    try:
        if args.model == "conv":
            train_conv(args.epochs, args.batch, devices)
        elif args.model == "llm":
            generate(args.prompt, args.max_tokens)
            print(f"({time.perf_counter() - start:.0f} s)")
        else:
            accuracy = train(args.steps, args.batch, devices)
            where = f" data parallel on {', '.join(devices)}" if devices else ""
            print(f"test accuracy {accuracy:.4f} after {args.steps} steps of {args.batch}"
                  f"{where} ({time.perf_counter() - start:.0f} s)")
        calls, runs = learner.calls(), learner.task_runs()
    finally:
        learner.unuse()
    print("\n".join(report(graded, calls, layout, runs, args)))
    if len(finished) == total:
        print("every task is finished: wherever this run needed code of the course, it ran yours")
    else:
        print(f"{total - len(finished)} task(s) still to finish; see python -m chapters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
