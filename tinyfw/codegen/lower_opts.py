"""Lowering an optimized kernel: chapter 05's loops, with UPCAST and UNROLL axes unrolled into
registers and THREAD axes shared out to the CPU's cores.

An UPCAST axis is no loop: each of its iterations is another output element computed in the same
pass, with an accumulator of its own, so a value that does not depend on it (a load of the other
matrix in a matmul) is loaded once and used by all. An UNROLL axis is a reduce loop written out:
each of its iterations adds into a partial accumulator of its own, and the partials are added
together after the loop, which shortens the chain of dependent adds (and so lets the compiler
vectorize without reordering a float sum, and makes float32 sums more exact). Both are written
by emitting the kernel's expression once per iteration with the axis's index a constant; the
program's steps are shared where they are the same (ProgramBuilder.add), so whatever does not
depend on the axis is computed once.
"""
from __future__ import annotations

import itertools
from typing import Any

from tinyfw.codegen.kernel import AxisKind, Kernel
from tinyfw.codegen.lower import LOps, Program, accumulator_dtype, identity
from tinyfw.dtype import DType, dtypes
from tinyfw.shape.symbolic import Const, Expr, Var
from tinyfw.uop.ops import Ops, UOp, arg_key

REUSABLE = frozenset({LOps.CONST, LOps.LOAD, LOps.VALID, LOps.ALU})
LOOP_PREFIX = {AxisKind.GLOBAL: "gidx", AxisKind.THREAD: "core", AxisKind.REDUCE: "ridx"}


class ProgramBuilder:
    """A Program being written, whose add() gives back an earlier step for the same value
    (same op, dtype, operands and argument) in a loop that is still open, instead of a copy."""

    def __init__(self, name: str):
        self.prog = Program(name)
        self.scopes: list[dict[tuple[Any, ...], int]] = [{}]  # per open loop: value -> step

    def add(self, op: LOps, dtype: DType, src: tuple[int, ...] = (), arg: Any = None) -> int:
        key = (op, dtype, src, arg_key(arg))  # (0.0 and -0.0 are other constants)
        if op in REUSABLE:
            for scope in self.scopes:
                if key in scope:
                    return scope[key]
        step = self.prog.add(op, dtype, src, arg)
        if op in REUSABLE:
            self.scopes[-1][key] = step
        elif op is LOps.LOOP:
            self.scopes.append({})
        elif op is LOps.ENDLOOP:
            self.scopes.pop()
        return step


def lower_optimized(kernel: Kernel) -> Program:
    """The kernel as loops, as lower() makes them, but with its UPCAST and UNROLL axes written
    out (one copy of the expression per iteration, steps shared where they are equal) and its
    THREAD axes as loops over the parts of the output each core computes."""
    # >>> exercise 11.lower_upcast #upcast-and-unroll
    b = ProgramBuilder(kernel.name)
    params = _params(kernel, b)
    loops: dict[int, Expr] = {}
    for i, axis in enumerate(kernel.axes):
        if axis.kind in LOOP_PREFIX:
            loops[i] = Var(LOOP_PREFIX[axis.kind] + str(i), 0, max(axis.size - 1, 0))
    upcast = [i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.UPCAST]
    unroll = [i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.UNROLL]
    b.prog.global_size = tuple(a.size for a in kernel.axes
                               if a.kind in (AxisKind.GLOBAL, AxisKind.THREAD))

    def indices(fixed: dict[int, int], output: bool) -> list[Expr]:
        """Each axis's index: its loop's variable, or the constant of an unrolled copy; a
        reduced axis is 0 in the output's view."""
        out: list[Expr] = []
        for i, axis in enumerate(kernel.axes):
            if output and axis.kind.reduces:
                out.append(Const(0))
            else:
                out.append(Const(fixed[i]) if i in fixed else loops[i])
        return out

    def copies(axes: list[int]) -> list[dict[int, int]]:
        ranges = [range(kernel.axes[i].size) for i in axes]
        return [dict(zip(axes, values)) for values in itertools.product(*ranges)]

    outer = [i for i, a in enumerate(kernel.axes) if a.kind in (AxisKind.THREAD, AxisKind.GLOBAL)]
    for i in outer:
        b.add(LOps.LOOP, dtypes.int32, (), (loops[i].render(), kernel.axes[i].size))
    reduce = kernel.reduce
    results: dict[int, dict[UOp, int]] = {}  # per output copy: what is computed before the store
    outputs = copies(upcast)
    if reduce is not None:
        op, acc_dtype = reduce.arg[0], accumulator_dtype(reduce.dtype)
        partials = copies(unroll)
        accs = [[b.add(LOps.ACC, acc_dtype, (), identity(op, reduce.dtype)) for _ in partials]
                for _ in outputs]
        inner = [i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.REDUCE]
        for i in inner:
            b.add(LOps.LOOP, dtypes.int32, (), (loops[i].render(), kernel.axes[i].size))
        for out, acc_row in zip(outputs, accs):
            for part, acc in zip(partials, acc_row):
                done: dict[UOp, int] = {}
                value = _emit(b, reduce.src[0], indices({**out, **part}, False), params, done)
                b.add(LOps.UPDATE, acc_dtype, (acc, value), op)
        for _ in inner:
            b.add(LOps.ENDLOOP, dtypes.int32)
        for k, acc_row in enumerate(accs):
            total = acc_row[0]
            for acc in acc_row[1:]:
                total = b.add(LOps.ALU, acc_dtype, (total, acc), op)
            if reduce.dtype != acc_dtype:
                total = b.add(LOps.ALU, reduce.dtype, (total,), Ops.CAST)
            results[k] = {reduce: total}
    for k, out in enumerate(outputs):
        done = results.get(k, {})
        idxs = indices(out, True)
        value = _emit(b, kernel.ast.src[1], idxs, params, done)
        index, _ = kernel.ast.src[0].arg.to_indexed(idxs)
        b.add(LOps.STORE, kernel.ast.dtype, (params[0], value), index)
    for _ in outer:
        b.add(LOps.ENDLOOP, dtypes.int32)
    return b.prog
    # <<< exercise


def _params(kernel: Kernel, b: ProgramBuilder) -> dict[int, int]:
    """A PARAM step per buffer the kernel reads or writes, the output (0) first."""
    dtypes_of: dict[int, DType] = {0: kernel.ast.dtype}
    for node in kernel.ast.toposort():
        if node.op is Ops.LOAD:
            dtypes_of.setdefault(node.arg, node.dtype)
    params = {n: b.add(LOps.PARAM, dtypes_of[n], (), (n, n == 0)) for n in sorted(dtypes_of)}
    b.prog.params = [params[n] for n in sorted(params)]
    return params


def _emit(b: ProgramBuilder, node: UOp, idxs: list[Expr], params: dict[int, int],
          done: dict[UOp, int]) -> int:
    """Steps computing node (its sources first) at the loop indices idxs; done holds what is
    computed already (the reduce's result, after its loop)."""
    for n in node.toposort(stop=lambda n: n in done or n.op is Ops.REDUCE):
        if n in done or n.op in (Ops.VIEW, Ops.REDUCE):
            continue
        if n.op is Ops.LOAD:
            done[n] = b.add(LOps.LOAD, n.dtype, (params[n.arg],), n.src[0].arg.to_indexed(idxs))
        elif n.op is Ops.CONST:
            _, valid = n.src[0].arg.to_indexed(idxs)
            value = b.add(LOps.CONST, n.dtype, (), n.arg)
            if not (valid.is_const and valid.vmin == 1):  # a padded constant
                zero = b.add(LOps.CONST, n.dtype, (), identity(Ops.ADD, n.dtype))
                cond = b.add(LOps.VALID, dtypes.bool, (), valid)
                value = b.add(LOps.ALU, n.dtype, (cond, value, zero), Ops.WHERE)
            done[n] = value
        else:
            done[n] = b.add(LOps.ALU, n.dtype, tuple(done[s] for s in n.src), n.op)
    return done[node]
