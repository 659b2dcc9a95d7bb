"""Kernel optimizations (chapter 11): every one is a split of a loop, whose inner (or outer)
part gets a role. A list of them is what the heuristics choose and the search explores."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, auto

from tinyfw.codegen.kernel import AxisKind, Kernel
from tinyfw.codegen.lower import accumulator_dtype
from tinyfw.uop.ops import Ops


class OptOps(Enum):
    """What an optimization makes of the part of a loop it splits off."""
    UPCAST = auto()  # inner part of an output loop: that many outputs per pass, in registers
    UNROLL = auto()  # inner part of a reduce loop: that many partial accumulators
    THREAD = auto()  # outer part of an output loop: that many parts, shared out to the cores
    SWAP = auto()    # no split: output loop `axis` exchanged with output loop `amount`
    LOCAL = auto()   # inner part of an output loop: that many threads of a GPU work-group
    GROUP = auto()   # inner part of a reduce loop: shared by that many threads of a work-group
    PANEL = auto()   # a reduce loop in panels of `amount` iterations, the panels outermost


@dataclass(frozen=True)
class Opt:
    """One optimization: split loop `axis` of the kernel (as it is when it is applied) by
    `amount`, and give the part its role (SWAP: exchange loops `axis` and `amount`)."""
    op: OptOps
    axis: int
    amount: int

    def __repr__(self) -> str:
        return f"{self.op.name}({self.axis}, {self.amount})"


class KernelOptError(ValueError):
    """An optimization that does not apply to the kernel (another kind of loop, a size that
    it does not divide)."""


ROLE = {OptOps.UPCAST: AxisKind.UPCAST, OptOps.UNROLL: AxisKind.UNROLL,
        OptOps.THREAD: AxisKind.THREAD, OptOps.LOCAL: AxisKind.LOCAL, OptOps.GROUP: AxisKind.GROUP}
SPLITS = {OptOps.UPCAST: AxisKind.GLOBAL, OptOps.UNROLL: AxisKind.REDUCE,
          OptOps.THREAD: AxisKind.GLOBAL, OptOps.LOCAL: AxisKind.GLOBAL,
          OptOps.GROUP: AxisKind.REDUCE, OptOps.PANEL: AxisKind.REDUCE}  # the loop each splits
# The most threads a work-group gets: every GPU API here allows 256 (WebGPU's default limit
# is 256, CUDA's 1024; PoCL's CPU device 4096), and the local memory of a GROUP is then 1 KiB.
MAX_WORKGROUP = 256
WORKGROUP_OPS = (OptOps.LOCAL, OptOps.GROUP)


def apply_opt(kernel: Kernel, opt: Opt) -> Kernel:
    """The kernel with opt applied, or KernelOptError saying why it does not apply."""
    if not 0 <= opt.axis < len(kernel.axes):
        raise KernelOptError(f"{opt}: the kernel has {len(kernel.axes)} loops")
    axis = kernel.axes[opt.axis]
    if opt.op is OptOps.SWAP:
        return _swap(kernel, opt)
    if axis.kind is not SPLITS[opt.op]:
        raise KernelOptError(f"{opt}: loop {opt.axis} is {axis.kind.name}, not "
                             f"{SPLITS[opt.op].name}")
    if opt.amount < 2 or axis.size % opt.amount:
        raise KernelOptError(f"{opt}: {opt.amount} does not divide a loop of {axis.size}")
    _check_workgroup(kernel, opt)
    if opt.op is OptOps.PANEL:  # the outer part: panels of `amount` iterations each
        _check_panel(kernel, opt)
        return kernel.split(opt.axis, opt.amount, outer_kind=AxisKind.PANEL)
    if opt.op is OptOps.THREAD:  # the outer part: `amount` parts, each a loop of the rest
        if opt.amount == axis.size:  # the whole loop (no loop of 1 inside)
            return kernel.with_kind(opt.axis, AxisKind.THREAD)
        return kernel.split(opt.axis, axis.size // opt.amount, outer_kind=AxisKind.THREAD)
    return kernel.split(opt.axis, opt.amount, ROLE[opt.op])


def _check_workgroup(kernel: Kernel, opt: Opt) -> None:
    """KernelOptError where opt would make a work-group of more than MAX_WORKGROUP threads, or
    mix work-group loops (LOCAL, GROUP) with the loops of registers, cores and panels (UPCAST,
    UNROLL, THREAD, PANEL): their lowering (lower_groups.py) does not write those."""
    kinds = {a.kind for a in kernel.axes}
    if opt.op in WORKGROUP_OPS:
        threads = opt.amount
        for a in kernel.axes:
            threads *= a.size if a.kind.in_workgroup else 1
        if threads > MAX_WORKGROUP:
            raise KernelOptError(f"{opt}: a work-group of {threads} threads, more than "
                                 f"{MAX_WORKGROUP}")
        if kinds & {AxisKind.UPCAST, AxisKind.UNROLL, AxisKind.THREAD, AxisKind.PANEL}:
            raise KernelOptError(f"{opt}: work-groups are not combined with UPCAST, UNROLL, "
                                 "THREAD or PANEL")
    elif any(kind.in_workgroup for kind in kinds):
        raise KernelOptError(f"{opt}: UPCAST, UNROLL, THREAD and PANEL are not combined with "
                             "work-groups (LOCAL, GROUP)")


def _check_panel(kernel: Kernel, opt: Opt) -> None:
    """KernelOptError where the reduce cannot be done in panels: between panels its partial
    sums are kept in the output, so the kernel must store a sum itself (no op after it, no
    rounding to a narrower type), and it has one PANEL at most."""
    reduce = kernel.reduce
    if reduce is None or reduce.arg[0] is not Ops.ADD or kernel.ast.src[1] is not reduce:
        raise KernelOptError(f"{opt}: only a kernel that stores a sum as it is has panels")
    if accumulator_dtype(reduce.dtype) != reduce.dtype:
        raise KernelOptError(f"{opt}: a sum of {reduce.dtype} is kept in "
                             f"{accumulator_dtype(reduce.dtype)}, not in its output")
    if any(a.kind is AxisKind.PANEL for a in kernel.axes):
        raise KernelOptError(f"{opt}: the kernel has panels already")


def applies(kernel: Kernel, opt: Opt) -> bool:
    """Whether opt can be applied to the kernel (apply_opt's checks: a size it divides, a loop
    of its kind, panels only where the output can hold partial sums)."""
    try:
        apply_opt(kernel, opt)
    except KernelOptError:
        return False
    return True


def apply_opts(kernel: Kernel, opts: tuple[Opt, ...]) -> Kernel:
    """The kernel with each of opts applied in turn."""
    for opt in opts:
        kernel = apply_opt(kernel, opt)
    return kernel


def _swap(kernel: Kernel, opt: Opt) -> Kernel:
    """The kernel with output loops opt.axis < opt.amount exchanged: the loop order a cache
    likes (a matmul walks the columns of its second matrix in the outer loop, so the strip of
    them it reads stays in the cache while the rows of the first go by)."""
    outputs = (AxisKind.GLOBAL, AxisKind.THREAD)
    if not opt.axis < opt.amount < len(kernel.axes):
        raise KernelOptError(f"{opt}: swaps loop {opt.axis} with a later one of the "
                             f"{len(kernel.axes)}")
    if kernel.axes[opt.axis].kind not in outputs or kernel.axes[opt.amount].kind not in outputs:
        raise KernelOptError(f"{opt}: only output loops (GLOBAL, THREAD) are swapped")
    return kernel.swap(opt.axis, opt.amount)
