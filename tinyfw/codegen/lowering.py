"""The one lowering path: a kernel, its optimizations and the renderer it is for become a linear
program (lower.py's Program), by LOWERING, a short list of named steps.

Each step says when it runs, from the kernel (its optimizations, its kinds of axes) and the
renderer's fields (tinyfw/renderer/base.py), never a device's name, and fills in one field of
a Lowering:

- `vectors`, on a renderer with SIMD registers (`vector_lanes` > 1) for a kernel with UPCAST or
  UNROLL axes: which of them is computed as the lanes of vectors (lower_opts.vector_axis;
  `vector_bytes`: vectors of bytes too);
- `workgroups`, for a kernel with LOCAL or GROUP axes (which the heuristics and the search give
  only a renderer with `has_workgroups`; another refuses the program when it renders it): the
  program, each thread's indices read from the launch (lower_groups.lower_workgroups, chapter
  11);
- `written_out`, for a kernel with other optimizations (UPCAST, UNROLL, THREAD, PANEL, SWAP):
  the program, chapter 11's loops with the UPCAST and UNROLL axes written out, the `vectors`
  axis as lanes (lower_opts.lower_optimized);
- `loops`, for a kernel without optimizations: the program, chapter 05's loops (lower.lower).

Exactly one of the last three makes the program. The steps call the lowering functions by
their names in this module, so a function swapped in for one (a learner's lower(), chapters/
learner.py) is the one that runs. A new kind of step is one more entry in LOWERING: a name,
when it runs, and what it fills in.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from tinyfw.codegen.kernel import AxisKind, Kernel
from tinyfw.codegen.lower import Program, lower
from tinyfw.codegen.lower_groups import has_workgroups, lower_workgroups
from tinyfw.codegen.lower_opts import lower_optimized, vector_axis


class Target(Protocol):
    """What the lowering asks of a device: its renderer's fields (tinyfw/renderer/base.py)."""
    vector_lanes: int   # float32s in a SIMD register (0: no vectors)
    vector_bytes: bool  # vectors of int8 and uint8 too


@dataclass
class Lowering:
    """What the steps know of one kernel's lowering so far: each step fills in a field."""
    kernel: Kernel
    renderer: Target
    opts: tuple[Any, ...] = ()  # the optimizations applied to the kernel (chapter 11)
    vector: int | None = None   # the axis computed as the lanes of vectors (`vectors`)
    program: Program | None = None
    ran: list[str] = field(default_factory=list)  # the names of the steps that ran, in order


@dataclass(frozen=True)
class LowerStep:
    """One step of the lowering: its name, when it runs, and what it does to the Lowering."""
    name: str
    wanted: Callable[[Lowering], bool]
    run: Callable[[Lowering], None]


def has_unrolled_axes(lowering: Lowering) -> bool:
    """Whether the kernel has UPCAST or UNROLL axes, which vectors' lanes can compute."""
    return any(a.kind in (AxisKind.UPCAST, AxisKind.UNROLL) for a in lowering.kernel.axes)


def wants_vectors(lowering: Lowering) -> bool:
    """`vectors` runs on a renderer with SIMD registers, for a kernel with axes written out."""
    return lowering.renderer.vector_lanes > 1 and has_unrolled_axes(lowering)


def choose_vector(lowering: Lowering) -> None:
    """lowering.vector: the UPCAST or UNROLL axis the renderer's vectors compute, or None."""
    renderer = lowering.renderer
    lowering.vector = vector_axis(lowering.kernel, renderer.vector_lanes, renderer.vector_bytes)


def wants_workgroups(lowering: Lowering) -> bool:
    """`workgroups` runs for a kernel with LOCAL or GROUP axes."""
    return has_workgroups(lowering.kernel)


def in_workgroups(lowering: Lowering) -> None:
    """lowering.program: the kernel's threads in work-groups (chapter 11, lower_groups.py)."""
    lowering.program = lower_workgroups(lowering.kernel)


def wants_written_out(lowering: Lowering) -> bool:
    """`written_out` runs for an optimized kernel without work-groups."""
    return bool(lowering.opts) and not has_workgroups(lowering.kernel)


def written_out(lowering: Lowering) -> None:
    """lowering.program: the kernel's UPCAST and UNROLL axes written out (chapter 11)."""
    lowering.program = lower_optimized(lowering.kernel, lowering.vector)


def wants_loops(lowering: Lowering) -> bool:
    """`loops` runs for a kernel without optimizations."""
    return not lowering.opts


def loops(lowering: Lowering) -> None:
    """lowering.program: the kernel as chapter 05's loops (lower.py's lower)."""
    lowering.program = lower(lowering.kernel)


LOWERING: tuple[LowerStep, ...] = (
    LowerStep("vectors", wants_vectors, choose_vector),
    LowerStep("workgroups", wants_workgroups, in_workgroups),
    LowerStep("written_out", wants_written_out, written_out),
    LowerStep("loops", wants_loops, loops),
)


def lowered(kernel: Kernel, renderer: Target, opts: tuple[Any, ...] = ()) -> Lowering:
    """The kernel (with opts applied to it) lowered for the renderer: each step of LOWERING
    that its condition switches on, in order."""
    lowering = Lowering(kernel, renderer, opts)
    for step in LOWERING:
        if step.wanted(lowering):
            step.run(lowering)
            lowering.ran.append(step.name)
    return lowering


def lower_kernel(kernel: Kernel, renderer: Target, opts: tuple[Any, ...] = ()) -> Program:
    """The linear program of the kernel (with opts applied to it) on the renderer."""
    program = lowered(kernel, renderer, opts).program
    assert program is not None, f"{kernel.name}: no step of LOWERING made a program"
    return program
