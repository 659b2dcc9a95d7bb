"""The optimizations a kernel gets by default: a few readable rules per kind of device (tinygrad's
hand_coded_optimizations is the model). Each rule is a function that looks at the kernel as the
rules before it left it and returns the optimization it adds, or None."""
from __future__ import annotations

from collections.abc import Callable

from tinyfw.codegen.kernel import AxisKind, Kernel
from tinyfw.codegen.opt import Opt, OptOps, apply_opt
from tinyfw.helpers import prod
from tinyfw.shape.symbolic import Var
from tinyfw.uop.ops import Ops

MAX_REGISTERS = 64       # accumulators of an upcast tile: 4 x 16 floats fill 8 AVX registers
THREAD_WORK = 1 << 17    # loop iterations below which starting the other cores costs more
UPCAST_OUTPUTS = 1024    # outputs below which a kernel is too small to tile


def iterations(kernel: Kernel) -> int:
    """How many times the kernel's innermost statement runs: its work."""
    return prod(a.size for a in kernel.axes)


def load_indices(kernel: Kernel) -> list[set[str]]:
    """For each load of the kernel, the loop variables its address depends on."""
    names = [f"x{i}" for i in range(len(kernel.axes))]
    idxs = [Var(n, 0, max(a.size - 1, 0)) for n, a in zip(names, kernel.axes)]
    return [node.src[0].arg.to_indexed(idxs)[0].vars() for node in kernel.ast.toposort()
            if node.op is Ops.LOAD]


def upcast_a_shared_axis(kernel: Kernel) -> Opt | None:
    """A kernel that reduces (a matmul) computes a tile of outputs per pass: an output axis
    that some load does not depend on is upcast (by 4, or 16 for the innermost such axis,
    whose loads are contiguous), so that load is read once for the whole tile. At most two
    axes, and MAX_REGISTERS accumulators."""
    if kernel.reduce is None or prod(kernel.output_shape) < UPCAST_OUTPUTS:
        return None
    upcast = prod(a.size for a in kernel.axes if a.kind is AxisKind.UPCAST)
    if sum(a.kind is AxisKind.UPCAST for a in kernel.axes) >= 2:
        return None
    loads = load_indices(kernel)
    upcast_already = [i + 1 < len(kernel.axes) and kernel.axes[i + 1].kind is AxisKind.UPCAST
                      for i in range(len(kernel.axes))]  # the outer part of an upcast axis
    candidates = [i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.GLOBAL
                  and not upcast_already[i] and any(f"x{i}" not in used for used in loads)]
    for i in reversed(candidates):  # the innermost first: its loads are the contiguous ones
        for amount in (16, 8, 4) if i == candidates[-1] else (4, 2):
            if kernel.axes[i].size % amount == 0 and kernel.axes[i].size > amount \
                    and upcast * amount <= MAX_REGISTERS:
                return Opt(OptOps.UPCAST, i, amount)
    return None


def unroll_the_reduce(kernel: Kernel) -> Opt | None:
    """The innermost reduce loop is unrolled by 4 into partial accumulators, unless the tile
    already holds enough: independent adds the processor runs at once, and a float sum
    rounded in four shorter chains."""
    reduces = [i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.REDUCE]
    if not reduces or any(a.kind is AxisKind.UNROLL for a in kernel.axes):
        return None
    upcast = prod(a.size for a in kernel.axes if a.kind is AxisKind.UPCAST)
    inner = reduces[-1]
    if upcast >= 16 or kernel.axes[inner].size % 4 or kernel.axes[inner].size < 8:
        return None
    return Opt(OptOps.UNROLL, inner, 4)


def thread_the_outer_axis(kernel: Kernel, cores: int) -> Opt | None:
    """A big kernel shares its outermost output loop out to the cores, whole (each core takes
    every cores-th iteration): only past THREAD_WORK iterations, where starting the other
    threads costs less than the time they save."""
    if cores < 2 or iterations(kernel) < THREAD_WORK or \
            any(a.kind is AxisKind.THREAD for a in kernel.axes):
        return None
    for i, axis in enumerate(kernel.axes):
        if axis.kind is AxisKind.GLOBAL and axis.size >= cores:
            return Opt(OptOps.THREAD, i, axis.size)
    return None


Rule = Callable[[Kernel], Opt | None]


def hand_coded_optimizations(kernel: Kernel, device: str, cores: int = 1) -> tuple[Opt, ...]:
    """The optimizations of the kernel on a device: on the CPU, a tile of outputs per pass,
    unrolled reduces and threads. (The GPUs' own, LOCAL and GROUP, are still to come; NUMPY
    runs the AST as it is.)"""
    if device != "CPU":
        return ()
    rules: list[Rule] = [upcast_a_shared_axis, upcast_a_shared_axis, unroll_the_reduce,
                         lambda k: thread_the_outer_axis(k, cores)]
    opts: list[Opt] = []
    for rule in rules:
        opt = rule(kernel)
        if opt is not None:
            kernel = apply_opt(kernel, opt)
            opts.append(opt)
    return tuple(opts)
