"""A kernel ready to lower: its AST and the loops it runs over, which can be split."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, auto
from typing import Any

from tinyfw.uop.ops import Ops, UOp, find_reduce


class AxisKind(Enum):
    """What a loop of the kernel does. Chapter 05 lowers the first two; the others are what an
    optimization (chapter 11) makes of the inner part of a split loop."""
    GLOBAL = auto()   # one iteration per output element: a C loop, a GPU thread index
    REDUCE = auto()   # accumulated into one output element
    UPCAST = auto()   # output elements unrolled: computed together, each its own register
    UNROLL = auto()   # reduce iterations unrolled: one partial accumulator each
    THREAD = auto()   # output elements shared out to the CPU's cores, one part each
    LOCAL = auto()    # output elements computed by the threads of one GPU work-group
    GROUP = auto()    # reduce iterations shared by a work-group's threads, combined in local memory
    PANEL = auto()    # reduce iterations in panels, outside the output loops: partial sums in
                      # the output between panels

    @property
    def reduces(self) -> bool:
        """Whether iterations of this loop accumulate into one output element."""
        return self in (AxisKind.REDUCE, AxisKind.UNROLL, AxisKind.GROUP, AxisKind.PANEL)

    @property
    def in_workgroup(self) -> bool:
        """Whether this loop is the index of a thread within its GPU work-group."""
        return self in (AxisKind.LOCAL, AxisKind.GROUP)


@dataclass(frozen=True)
class Axis:
    """One loop of a kernel: how many iterations it runs, and what they do."""
    size: int
    kind: AxisKind


@dataclass(frozen=True)
class Kernel:
    """A kernel ready to lower: its AST and the loops it runs over, one Axis per dimension of
    the full shape (the shape before the reduce). Splitting an axis reshapes every view."""
    ast: UOp
    axes: tuple[Axis, ...]
    name: str

    @staticmethod
    def from_ast(ast: UOp, name: str) -> Kernel:
        reduce = find_reduce(ast)
        full = reduce.src[0].shape if reduce is not None else ast.shape
        reduced = set(reduce.arg[1]) if reduce is not None else set()
        axes = tuple(Axis(s, AxisKind.REDUCE if i in reduced else AxisKind.GLOBAL)
                     for i, s in enumerate(full))
        return Kernel(ast, axes, name)

    @property
    def full_shape(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.axes)

    def split(self, axis: int, amount: int, kind: AxisKind | None = None,
              outer_kind: AxisKind | None = None) -> Kernel:
        """The same kernel with loop `axis` of size n split into n // amount outer iterations
        and `amount` inner ones; the inner loop gets `kind`, the outer `outer_kind` (by default,
        the axis's own). Every view is reshaped to the new loops, so lower() needs no change to
        handle it."""
        size = self.axes[axis].size
        if amount <= 0 or size % amount:
            raise ValueError(f"cannot split a loop of {size} into parts of {amount}")
        outer = Axis(size // amount, outer_kind or self.axes[axis].kind)
        inner = Axis(amount, kind or self.axes[axis].kind)
        axes = self.axes[:axis] + (outer, inner) + self.axes[axis + 1:]
        return self._with_views(axes, lambda view, shape: view.reshape(shape))

    def swap(self, axis: int, other: int) -> Kernel:
        """The same kernel with loops `axis` and `other` exchanged (which one runs outside the
        other): every view is permuted, so each iteration still reads and writes what it did."""
        order = list(range(len(self.axes)))
        order[axis], order[other] = other, axis
        axes = tuple(self.axes[i] for i in order)
        return self._with_views(axes, lambda view, _: view.permute(tuple(order)))

    def _with_views(self, axes: tuple[Axis, ...],
                    change: Callable[[Any, tuple[int, ...]], Any]) -> Kernel:
        """The kernel over these loops, each view changed by change(view, its new shape): the
        full loops inside the reduce, the output's (reduced loops 1) outside it."""
        full = tuple(a.size for a in axes)
        out = tuple(1 if a.kind.reduces else a.size for a in axes)
        reduce_axes = tuple(i for i, a in enumerate(axes) if a.kind.reduces)
        reduce = self.reduce
        inside = set(reduce.src[0].toposort()) if reduce is not None else set()
        done: dict[UOp, UOp] = {}
        for node in self.ast.toposort():
            if node.op is Ops.VIEW:
                continue
            srcs = []
            for s in node.src:
                if s.op is Ops.VIEW:  # views inside the reduce see the full loops
                    s = UOp(Ops.VIEW, s.dtype, (), change(s.arg, full if node in inside else out))
                else:
                    s = done[s]
                srcs.append(s)
            arg = (node.arg[0], reduce_axes) if node.op is Ops.REDUCE else node.arg
            done[node] = UOp(node.op, node.dtype, tuple(srcs), arg)
        return Kernel(done[self.ast], axes, self.name)

    def with_kind(self, axis: int, kind: AxisKind) -> Kernel:
        """The same kernel with loop `axis` given another kind that keeps it an output loop or
        a reduce loop as it was (GLOBAL to THREAD): no view changes."""
        assert kind.reduces == self.axes[axis].kind.reduces
        axes = list(self.axes)
        axes[axis] = Axis(axes[axis].size, kind)
        return Kernel(self.ast, tuple(axes), self.name)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return tuple(1 if a.kind.reduces else a.size for a in self.axes)

    @property
    def reduce(self) -> UOp | None:
        return find_reduce(self.ast)

