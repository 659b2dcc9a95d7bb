"""Helpers of chapter 11's tests: kernels of small tensors, run with chosen optimizations."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from tinyfw import Tensor
from tinyfw.codegen.kernel import Kernel
from tinyfw.codegen.opt import Opt, apply_opts
from tinyfw.engine import program as engine_program
from tinyfw.engine.caches import forget_built


def kernel_of(t: Tensor) -> Kernel:
    """The kernel of t's last scheduled step."""
    item = t.schedule()[-1]
    return Kernel.from_ast(item.ast, item.name)


@contextmanager
def optimized_with(opts: tuple[Opt, ...] | None) -> Iterator[None]:
    """Inside the block, every kernel gets exactly opts (None: no optimization at all), no
    fused multiply-adds (FMA=0): their rounding depends on the processor, and a product and a
    sum are then rounded as your lowering wrote them, as the plain kernel rounds them; and a
    threaded kernel's parts go through CPURuntime.run's pool (CPU_WORKERS=0), the route your
    11.threads writes, not tinyfw's C workers."""
    def optimize(build: engine_program.Build) -> None:
        assert build.kernel is not None
        if opts:
            build.kernel, build.opts = apply_opts(build.kernel, opts), opts
    passes = engine_program.PASSES
    saved = {name: os.environ.get(name) for name in ("FMA", "CPU_WORKERS")}
    engine_program.PASSES = tuple(optimize if p is engine_program.optimize else p
                                  for p in passes)
    os.environ.update(FMA="0", CPU_WORKERS="0")
    forget_built()  # (a program's key holds no optimizations: those built before are not these)
    try:
        yield
    finally:
        engine_program.PASSES = passes
        forget_built()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value


def value_with(opts: tuple[Opt, ...] | None, build: Callable[[], Tensor]) -> np.ndarray:
    """build()'s value with its kernels optimized by opts (None: not at all)."""
    with optimized_with(opts):
        return build().numpy()
