# Solutions of chapter 05, generated from tinyfw/codegen/lower.py by `python -m tools.generate`.
# Edit tinyfw/codegen/lower.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/05_codegen --impl=solutions
# generated text id: 3083e6857d9f70ce (lets tools.generate tell your edits apart)
"""Lowering: a kernel's AST becomes loops, index arithmetic and a linear program of simple steps."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Any

from tinyfw.dtype import DType, dtypes
from tinyfw.codegen.kernel import Axis, AxisKind, Kernel  # noqa: F401  (re-exported)
from tinyfw.helpers import prod
from tinyfw.shape.symbolic import Const, Expr, Sum, Var
from tinyfw.uop.ops import Ops, UOp


class LOps(Enum):
    """The steps of a linear program: what a renderer turns into lines of source."""
    PARAM = auto()      # arg: (buffer number, is output); dtype: element type
    LOOP = auto()       # arg: (variable name, size)
    ENDLOOP = auto()
    CONST = auto()      # arg: the value
    LOAD = auto()       # src: (PARAM,); arg: (index Expr, valid Expr); 0 where not valid
    VALID = auto()      # arg: a validity Expr; a bool
    ALU = auto()        # arg: the Ops of the operation; src: its operands
    ACC = auto()        # an accumulator; arg: its initial value
    UPDATE = auto()     # src: (ACC, value); arg: Ops.ADD or Ops.MAX
    STORE = auto()      # src: (PARAM, value); arg: index Expr
    # chapter 11's work-groups (GPU languages only; lower_groups.py writes them)
    SPECIAL = auto()    # arg: (variable, "group" or "local", stride, size): a digit of an id
    LOCAL = auto()      # an array in a work-group's local memory; arg: (name, size)
    BARRIER = auto()    # every thread of the work-group waits here for the others
    IF = auto()         # arg: a variable; what follows up to ENDIF runs where it is 0
    ENDIF = auto()


@dataclass(frozen=True)
class Step:
    op: LOps
    dtype: DType
    src: tuple[int, ...] = ()
    arg: Any = None


@dataclass
class Program:
    """A kernel as a list of steps; a step refers to earlier steps by their position."""
    name: str
    steps: list[Step] = field(default_factory=list)
    params: list[int] = field(default_factory=list)   # the PARAM steps, buffer 0 first
    global_size: tuple[int, ...] = ()
    # (work-groups, threads in each): a launch of exactly these, where the program has
    # work-groups (chapter 11); None: one thread per output element, extra ones sent home
    workgroup: tuple[int, int] | None = None

    def add(self, op: LOps, dtype: DType, src: tuple[int, ...] = (), arg: Any = None) -> int:
        self.steps.append(Step(op, dtype, src, arg))
        return len(self.steps) - 1

    @property
    def threaded(self) -> bool:
        """Whether a THREAD loop (named core<i>) shares the work out to the CPU's cores."""
        return any(s.op is LOps.LOOP and s.arg[0].startswith("core") for s in self.steps)

    @property
    def index_dtype(self) -> DType:
        """int32 where every loop variable, thread index and index expression (every part of
        one, as C evaluates it) stays within int32; else int64, since a 32-bit index would
        overflow: a loop that never ends, a negative index."""
        return dtypes.int32 if self.index_extent() <= INT32_MAX else dtypes.int64

    def index_extent(self) -> int:
        """The largest magnitude a loop variable, a thread index or a part of an index
        expression can take (a loop variable counts up to its loop's size)."""
        extent = prod(self.global_size) + LAUNCH_SLACK if self.global_size else 0
        for step in self.steps:
            if step.op is LOps.LOOP:
                extent = max(extent, step.arg[1])
            elif step.op in (LOps.LOAD, LOps.VALID, LOps.STORE):
                exprs = step.arg if step.op is LOps.LOAD else (step.arg,)
                extent = max([extent] + [expr_extent(e) for e in exprs])
        return extent


INT32_MAX = 2**31 - 1
# Threads a GPU may run past the last output element, which compute their index before the
# guard sends them home: up to a block (CUDA, 128) or a row of workgroups (WGSL, 65535 * 64).
LAUNCH_SLACK = 2**22


def expr_extent(e: Expr) -> int:
    """The largest magnitude of e and of every value met while evaluating it as rendered: each
    part, and each running total of a sum (added left to right)."""
    extent = max(abs(e.vmin), abs(e.vmax))
    if isinstance(e, Sum):
        low = high = 0
        for term in e.terms:
            low, high = low + term.vmin, high + term.vmax
            extent = max(extent, abs(low), abs(high))
    return max([extent] + [expr_extent(c) for c in e.children()])


def accumulator_dtype(dtype: DType) -> DType:
    """float16 and bfloat16 sums accumulate in float32, as the reference does."""
    return dtypes.float32 if dtype.is_float and dtype.itemsize < 4 else dtype


def identity(op: Ops, dtype: DType) -> float | int | bool:
    """The value a reduce starts from: 0 for a sum, the smallest value for a max."""
    return (False if dtype.is_bool else 0) if op is Ops.ADD else dtypes.min(dtype)


def lower(kernel: Kernel) -> Program:
    """The kernel as loops: one loop per GLOBAL axis around, if there is a reduce, an
    accumulator and one loop per REDUCE axis; loads read through their views' index
    expressions; the result is stored in row-major order of the output shape."""
    # >>> exercise 05.lower #from-a-kernel-to-loops
    prog = Program(kernel.name)
    params: dict[int, int] = {}
    for node in kernel.ast.toposort():
        if node.op in (Ops.LOAD, Ops.STORE) and node.arg not in params:
            params[node.arg] = -1
    for number in sorted(params):
        dtype = kernel.ast.dtype if number == 0 else next(
            n.dtype for n in kernel.ast.toposort() if n.op is Ops.LOAD and n.arg == number)
        params[number] = prog.add(LOps.PARAM, dtype, (), (number, number == 0))
    prog.params = [params[n] for n in sorted(params)]

    loop_vars: list[Expr] = []
    for i, axis in enumerate(kernel.axes):
        name = ("ridx" if axis.kind is AxisKind.REDUCE else "gidx") + str(i)
        loop_vars.append(Var(name, 0, max(axis.size - 1, 0)))
    out_vars = [Const(0) if a.kind is AxisKind.REDUCE else v
                for a, v in zip(kernel.axes, loop_vars)]
    prog.global_size = tuple(a.size for a in kernel.axes if a.kind is AxisKind.GLOBAL)

    reduce = kernel.reduce
    inside = set(reduce.src[0].toposort()) if reduce is not None else set()
    done: dict[UOp, int] = {}

    def emit(node: UOp, idxs: list[Expr]) -> int:
        """Steps computing node (sources first); node's index variables are idxs."""
        for n in node.toposort(stop=lambda n: n in done or n.op is Ops.REDUCE):
            if n in done or n.op is Ops.VIEW:
                continue
            if n.op is Ops.LOAD:
                index, valid = n.src[0].arg.to_indexed(idxs)
                done[n] = prog.add(LOps.LOAD, n.dtype, (params[n.arg],), (index, valid))
            elif n.op is Ops.CONST:
                _, valid = n.src[0].arg.to_indexed(idxs)
                value = prog.add(LOps.CONST, n.dtype, (), n.arg)
                if not (valid.is_const and valid.vmin == 1):  # a padded constant
                    zero = prog.add(LOps.CONST, n.dtype, (), identity(Ops.ADD, n.dtype))
                    cond = prog.add(LOps.VALID, dtypes.bool, (), valid)
                    value = prog.add(LOps.ALU, n.dtype, (cond, value, zero), Ops.WHERE)
                done[n] = value
            elif n.op is Ops.REDUCE:
                continue  # handled by the caller
            else:
                done[n] = prog.add(LOps.ALU, n.dtype, tuple(done[s] for s in n.src), n.op)
        return done[node]

    for axis, var in zip(kernel.axes, loop_vars):
        if axis.kind is AxisKind.GLOBAL:
            prog.add(LOps.LOOP, dtypes.int32, (), (var.render(), axis.size))
    if reduce is not None:
        op = reduce.arg[0]
        acc = prog.add(LOps.ACC, accumulator_dtype(reduce.dtype), (), identity(op, reduce.dtype))
        for axis, var in zip(kernel.axes, loop_vars):
            if axis.kind is AxisKind.REDUCE:
                prog.add(LOps.LOOP, dtypes.int32, (), (var.render(), axis.size))
        value = emit(reduce.src[0], loop_vars)
        prog.add(LOps.UPDATE, accumulator_dtype(reduce.dtype), (acc, value), op)
        for axis in kernel.axes:
            if axis.kind is AxisKind.REDUCE:
                prog.add(LOps.ENDLOOP, dtypes.int32)
        for n in inside:  # the loop is closed: its values can't be used after it
            done.pop(n, None)
        done[reduce] = acc if reduce.dtype == accumulator_dtype(reduce.dtype) else \
            prog.add(LOps.ALU, reduce.dtype, (acc,), Ops.CAST)
    result = emit(kernel.ast.src[1], out_vars)
    index, _ = kernel.ast.src[0].arg.to_indexed(out_vars)
    prog.add(LOps.STORE, kernel.ast.dtype, (params[0], result), index)
    for axis in kernel.axes:
        if axis.kind is AxisKind.GLOBAL:
            prog.add(LOps.ENDLOOP, dtypes.int32)
    return prog
    # <<< exercise


def flops_and_bytes(kernel: Kernel, input_bytes: int) -> tuple[int, int]:
    """Rough work of a kernel: ALU operations times iterations, and bytes read and written."""
    alu = sum(1 for n in kernel.ast.toposort() if n.op not in
              (Ops.LOAD, Ops.CONST, Ops.VIEW, Ops.STORE, Ops.CAST))
    out_bytes = prod(kernel.output_shape) * kernel.ast.dtype.itemsize
    return alu * prod(kernel.full_shape), input_bytes + out_bytes
