"""Lowering a kernel with work-groups (chapter 11): its LOCAL and GROUP axes as the threads of
a GPU work-group.

A GPU runs its threads in work-groups (OpenCL's name; CUDA's blocks, WebGPU's workgroups), whose
threads share a small local memory and can wait for each other at a barrier. A LOCAL axis is
output elements computed by the threads of one group; the GLOBAL axes number the groups. A
GROUP axis is a reduce shared out to the threads of a group: each thread accumulates its part
of the loop, writes that partial into local memory and waits at the barrier for the others;
then the first thread of the GROUP adds the partials and stores the output. Without it, an
output is one thread's whole loop, so a reduce with few outputs keeps few of a GPU's threads
busy, however long it is.

The launch is exact: as many groups as the GLOBAL axes have iterations, as many threads in
each as the LOCAL and GROUP axes; no thread is sent home early, so every one reaches the
barrier. A thread's index in its group counts the LOCAL axes, then the GROUP axes, fastest:
the partials of one output lie side by side.
"""
from __future__ import annotations

from tinyfw.codegen.kernel import AxisKind, Kernel
from tinyfw.codegen.lower import LOps, Program, accumulator_dtype, identity
from tinyfw.codegen.lower_opts import ProgramBuilder, add_params, emit_value
from tinyfw.codegen.opt import KernelOptError
from tinyfw.dtype import dtypes
from tinyfw.helpers import prod
from tinyfw.shape.symbolic import Const, Expr, Var
from tinyfw.uop.ops import Ops, UOp

KINDS = frozenset({AxisKind.GLOBAL, AxisKind.LOCAL, AxisKind.REDUCE, AxisKind.GROUP})


def has_workgroups(kernel: Kernel) -> bool:
    """Whether the kernel has LOCAL or GROUP axes (lower_workgroups lowers it)."""
    return any(a.kind.in_workgroup for a in kernel.axes)


def lower_workgroups(kernel: Kernel) -> Program:
    """The kernel as one thread per (GLOBAL, LOCAL, GROUP) index, its work-group's index and its
    own index in the group read from the launch; a GROUP's partials added by its first thread
    after a barrier. The program's workgroup is the launch: (groups, threads in each)."""
    if other := {a.kind for a in kernel.axes} - KINDS:
        raise KernelOptError(f"{kernel.name}: work-groups with {sorted(k.name for k in other)}")
    b = ProgramBuilder(kernel.name)
    params = add_params(kernel, b)
    axes = kernel.axes
    outer = [i for i, a in enumerate(axes) if a.kind is AxisKind.GLOBAL]
    inner = [i for i, a in enumerate(axes) if a.kind is AxisKind.LOCAL] + \
        [i for i, a in enumerate(axes) if a.kind is AxisKind.GROUP]
    groups, threads = prod(axes[i].size for i in outer), prod(axes[i].size for i in inner)
    b.prog.global_size, b.prog.workgroup = (groups, threads), (groups, threads)
    variables: dict[int, Expr] = {}
    for which, order, total in (("group", outer, groups), ("local", inner, threads)):
        stride = total
        for i in order:  # each axis a digit of the index, the last one fastest
            stride //= axes[i].size
            name = ("gidx" if which == "group" else "lidx") + str(i)
            b.add(LOps.SPECIAL, dtypes.int32, (), (name, which, stride, axes[i].size))
            variables[i] = Var(name, 0, axes[i].size - 1)
    for i, axis in enumerate(axes):
        if axis.kind is AxisKind.REDUCE:
            variables[i] = Var(f"ridx{i}", 0, max(axis.size - 1, 0))

    def indices(output: bool) -> list[Expr]:
        """Each axis's index; a reduced axis is 0 in the output's view."""
        return [Const(0) if output and a.kind.reduces else variables[i]
                for i, a in enumerate(axes)]

    done: dict[UOp, int] = {}
    reduce = kernel.reduce
    shared = prod(a.size for a in axes if a.kind is AxisKind.GROUP)  # threads per output
    if reduce is not None:
        op, acc_dtype = reduce.arg[0], accumulator_dtype(reduce.dtype)
        start = identity(op, reduce.dtype)
        partials = -1
        if shared > 1:  # the thread in the group, and in its GROUP; where partials are added
            b.add(LOps.SPECIAL, dtypes.int32, (), ("lid", "local", 1, threads))
            b.add(LOps.SPECIAL, dtypes.int32, (), ("lane", "local", 1, shared))
            partials = b.add(LOps.LOCAL, acc_dtype, (), ("partials", threads))
        acc = b.add(LOps.ACC, acc_dtype, (), start)
        loops = [i for i, a in enumerate(axes) if a.kind is AxisKind.REDUCE]
        for i in loops:
            b.add(LOps.LOOP, dtypes.int32, (), (variables[i].render(), axes[i].size))
        b.add(LOps.UPDATE, acc_dtype, (acc, emit_value(b, reduce.src[0], indices(False), params,
                                                       {})), op)
        for _ in loops:
            b.add(LOps.ENDLOOP, dtypes.int32)
        if shared > 1:  # the partials through local memory, added by the GROUP's first thread
            acc = _combined(b, partials, acc, threads, shared, (op, start))
        done[reduce] = acc if reduce.dtype == acc_dtype else \
            b.add(LOps.ALU, reduce.dtype, (acc,), Ops.CAST)
    value = emit_value(b, kernel.ast.src[1], indices(True), params, done)
    index, _ = kernel.ast.src[0].arg.to_indexed(indices(True))
    b.add(LOps.STORE, kernel.ast.dtype, (params[0], value), index)
    if reduce is not None and shared > 1:
        b.add(LOps.ENDIF, dtypes.int32)
    return b.prog


def _combined(b: ProgramBuilder, partials: int, acc: int, threads: int, shared: int,
              reduce: tuple[object, object]) -> int:
    """Steps that write each thread's partial to local memory, wait for the group, and, in the
    first thread of each GROUP (an IF left open: the output is stored inside it), add the
    `shared` partials of its output: the total."""
    op, start = reduce
    dtype = b.prog.steps[acc].dtype
    lid = Var("lid", 0, threads - 1)
    b.add(LOps.STORE, dtype, (partials, acc), lid)
    b.add(LOps.BARRIER, dtypes.int32)
    b.add(LOps.IF, dtypes.int32, (), "lane")
    total = b.add(LOps.ACC, dtype, (), start)
    b.add(LOps.LOOP, dtypes.int32, (), ("part", shared))
    value = b.add(LOps.LOAD, dtype, (partials,), (lid + Var("part", 0, shared - 1), Const(1)))
    b.add(LOps.UPDATE, dtype, (total, value), op)
    b.add(LOps.ENDLOOP, dtypes.int32)
    return total
