"""BEAM=n: a kernel's optimizations found by timing candidates on its device (the search itself
is tinyfw/codegen/search.py), the winner kept on disk by kernel and device.

Each round's candidates are built at once (a thread per core: the C compiler runs in processes
of its own), then each is run on buffers of the kernel's sizes: the inputs already computed as
they are (a kernel only writes its output), the others zeros. A candidate is timed once, and
again while it is short (the best of up to 3 runs of at least SHORT_S in all).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from tinyfw.codegen.kernel import Kernel
from tinyfw.codegen.opt import Opt, OptOps, apply_opts
from tinyfw.codegen.search import beam_search
from tinyfw.device import Buffer, Runtime
from tinyfw.renderer.base import NotSupportedError
from tinyfw.engine.schedule import ScheduleItem
from tinyfw.engine.buffers import buffer_of, is_realized
from tinyfw.engine.settings import beam_width

SHORT_S = 0.05       # a candidate that ran for less is run again (up to 3 times, the best kept)
BUDGET_S = 30.0      # a search's time limit ($BEAM_BUDGET overrides)


def cache_file() -> Path:
    """Where the winners are kept: beam.json beside the compiled kernels."""
    base = os.getenv("TINYFW_CACHE") or os.path.join(
        os.getenv("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "tinyfw")
    return Path(base) / "beam.json"


def _cache_key(kernel: Kernel, device: Runtime, width: int) -> str:
    """The kernel (its AST as text, its loops) and the device, with its cores, as a digest."""
    text = f"{kernel.ast!r}|{kernel.full_shape}|{device.name}|{device.cores}|{width}"
    return hashlib.sha256(text.encode()).hexdigest()


def _load() -> dict[str, list[list[Any]]]:
    try:
        return dict(json.loads(cache_file().read_text()))
    except (OSError, ValueError):
        return {}


def searched_opts(kernel: Kernel, item: ScheduleItem, device: Runtime,
                  build: Callable[[Kernel, tuple[Opt, ...]], Any]) -> tuple[Opt, ...]:
    """The winner of a BEAM search for the kernel, from the disk cache when it was searched
    before. build(kernel, opts) makes a candidate's runnable program (the engine's passes)."""
    width = beam_width()
    key = _cache_key(kernel, device, width)
    known = _load()
    if key in known:
        return tuple(Opt(OptOps[op], axis, amount) for op, axis, amount in known[key])
    buffers = _buffers(item)
    budget = float(os.getenv("BEAM_BUDGET", BUDGET_S))
    deadline = time.perf_counter() + budget

    def built(opts: tuple[Opt, ...]) -> Any:
        """The candidate's program; None once the budget is spent, or where the device cannot
        run it (NotSupportedError: as WEBGPU, a grid of work-groups it cannot dispatch)."""
        if time.perf_counter() > deadline:
            return None
        try:
            return build(apply_opts(kernel, opts), opts)
        except NotSupportedError:
            return None

    def timings(candidates: Sequence[tuple[Opt, ...]]) -> list[float]:
        """Each candidate built (at once), then run on the buffers and timed; one left when
        the budget is spent is not built or timed (an infinite time: never the winner)."""
        with ThreadPoolExecutor(max_workers=max(device.cores, 1)) as pool:
            runners = list(pool.map(built, candidates))
        return [math.inf if runner is None or time.perf_counter() > deadline else
                _time(device, runner, item, buffers) for runner in runners]
    best = beam_search(kernel, timings, width, device.cores, budget,
                       workgroups=device.renderer.has_workgroups)
    known = _load()  # (another process may have added some meanwhile)
    known[key] = [[opt.op.name, opt.axis, opt.amount] for opt in best]
    path = cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(known, indent=0))
    partial.replace(path)  # (atomic: a reader sees the old file or the new one)
    return best


def _buffers(item: ScheduleItem) -> tuple[Buffer, list[Buffer]]:
    """An output buffer and the inputs: those computed already as they are, zeros for the
    others (computed later in the schedule)."""
    out = Buffer(item.device, item.output.numel, item.output.dtype)
    inputs = [buffer_of(node) if is_realized(node) else
              Buffer(item.device, node.numel, node.dtype, np.zeros(node.numel, node.dtype.np))
              for node in item.inputs]
    return out, inputs


def _time(device: Runtime, runner: Any, item: ScheduleItem,
          buffers: tuple[Buffer, list[Buffer]]) -> float:
    """The best time of up to 3 runs of the program, stopping once SHORT_S has passed."""
    out, inputs = buffers
    best, spent = float("inf"), 0.0
    for _ in range(3):
        start = time.perf_counter()
        device.run(runner, item, out, inputs)
        device.synchronize()
        took = time.perf_counter() - start
        best, spent = min(best, took), spent + took
        if spent >= SHORT_S:
            break
    return best
