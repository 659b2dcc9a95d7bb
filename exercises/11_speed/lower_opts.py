# Exercises of chapter 11, generated from tinyfw/codegen/lower_opts.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/11_speed
# generated text id: 25545b49cf11920d (lets tools.generate tell your edits apart)
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
from dataclasses import dataclass
from typing import Any

from tinyfw.codegen.kernel import AxisKind, Kernel
from tinyfw.codegen.lower import LOps, Program, accumulator_dtype, identity
from tinyfw.dtype import DType, VectorDType, dtypes
from tinyfw.shape.symbolic import Const, Expr, Sum, Var
from tinyfw.uop.ops import Ops, UOp, arg_key

REUSABLE = frozenset({LOps.CONST, LOps.LOAD, LOps.VALID, LOps.ALU})
LOOP_PREFIX = {AxisKind.GLOBAL: "gidx", AxisKind.THREAD: "core", AxisKind.REDUCE: "ridx",
               AxisKind.PANEL: "panel"}


class ProgramBuilder:
    """A Program being written, whose add() gives back an earlier step for the same value
    (same op, dtype, operands and argument) in a loop (or an IF) that is still open, instead of
    a copy."""

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
        elif op in (LOps.LOOP, LOps.IF):
            self.scopes.append({})
        elif op in (LOps.ENDLOOP, LOps.ENDIF):
            self.scopes.pop()
        return step


def lower_optimized(kernel: Kernel, vector: int | None = None) -> Program:
    """The kernel as loops, as lower() makes them, but with its UPCAST and UNROLL axes written
    out (one copy of the expression per iteration, steps shared where they are equal) and its
    THREAD axes as loops over the parts of the output each core computes; a PANEL axis is the
    outermost loop, and each panel adds its sums to those the panels before it stored. vector:
    an UPCAST or UNROLL axis computed as the lanes of vector values instead (vector_axis says
    which one can be): outputs side by side, or partial sums added lane by lane at the end;
    outputs a stride apart in memory (a sum stored permuted) are stored by stored_lanes."""
    # TODO 11.lower_upcast: write this part. The chapter explains it:
    #   chapters/11_speed/README.md#upcast-and-unroll
    raise NotImplementedError("not done yet: 11.lower_upcast")


def loop_variables(kernel: Kernel) -> dict[int, Expr]:
    """Axis -> the variable of its loop, for every axis that is a loop (GLOBAL, THREAD, REDUCE,
    PANEL; not UPCAST or UNROLL, which are written out), named like gidx0, core1, ridx2."""
    return {i: Var(LOOP_PREFIX[axis.kind] + str(i), 0, max(axis.size - 1, 0))
            for i, axis in enumerate(kernel.axes) if axis.kind in LOOP_PREFIX}


def copies(kernel: Kernel, axes: list[int]) -> list[dict[int, int]]:
    """Every combination of the indices of the given (UPCAST or UNROLL) axes, one dict axis ->
    index per copy of the expression; [{}] for no axes."""
    ranges = [range(kernel.axes[i].size) for i in axes]
    return [dict(zip(axes, values)) for values in itertools.product(*ranges)]


def indices(kernel: Kernel, loops: dict[int, Expr], fixed: dict[int, int], output: bool,
            vector: int | None = None) -> list[Expr]:
    """Each axis's index for one copy: the constant fixed[i] of an unrolled axis, else its
    loop's variable; 0 for a reduced axis in the output's view (output=True), and 0 for the
    vector axis (a vector's index is that of its lane 0)."""
    out: list[Expr] = []
    for i, axis in enumerate(kernel.axes):
        if output and axis.kind.reduces or i == vector:
            out.append(Const(0))
        else:
            out.append(Const(fixed[i]) if i in fixed else loops[i])
    return out


def stored_lanes(b: ProgramBuilder, kernel: Kernel, value: int, idxs: list[Expr], lanes: Lanes,
                 out: int, panels: list[Expr]) -> None:
    """A vector of outputs that are not side by side in memory (a sum stored permuted, as
    schedule.stored_as_read makes it) stored a lane at a time, each at its own index: once per
    output, after the reduce's loop. Under panels each lane adds the sum the panels before
    stored there."""
    dtype = kernel.ast.dtype
    for lane in range(lanes.count):
        at = [Const(lane) if i == lanes.axis else idx for i, idx in enumerate(idxs)]
        index, _ = kernel.ast.src[0].arg.to_indexed(at)
        part = b.add(LOps.ALU, dtype, (value,), Lane(lane))
        for panel in panels:
            earlier = b.add(LOps.LOAD, dtype, (out,), (index, panel.ge(1)))
            part = b.add(LOps.ALU, dtype, (part, earlier), Ops.ADD)
        b.add(LOps.STORE, dtype, (out, part), index)


def add_params(kernel: Kernel, b: ProgramBuilder) -> dict[int, int]:
    """A PARAM step per buffer the kernel reads or writes, the output (0) first."""
    dtypes_of: dict[int, DType] = {0: kernel.ast.dtype}
    for node in kernel.ast.toposort():
        if node.op is Ops.LOAD:
            dtypes_of.setdefault(node.arg, node.dtype)
    params = {n: b.add(LOps.PARAM, dtypes_of[n], (), (n, n == 0)) for n in sorted(dtypes_of)}
    b.prog.params = [params[n] for n in sorted(params)]
    return params


def emit_value(b: ProgramBuilder, node: UOp, idxs: list[Expr], params: dict[int, int],
          done: dict[UOp, int], lanes: Lanes | None = None) -> int:
    """Steps computing node (its sources first) at the loop indices idxs; done holds what is
    computed already (the reduce's result, after its loop). With lanes, a load that walks the
    vector axis reads a vector, and an op of a vector is one (vector_axis made sure they can)."""
    def is_vector(step: int) -> bool:
        return isinstance(b.prog.steps[step].dtype, VectorDType)
    for n in node.toposort(stop=lambda n: n in done or n.op is Ops.REDUCE):
        if n in done or n.op in (Ops.VIEW, Ops.REDUCE):
            continue
        if n.op is Ops.LOAD:
            walks = lanes is not None and lane_stride(n.src[0].arg, lanes.axis) == 1
            done[n] = b.add(LOps.LOAD, widened(n.dtype, lanes if walks else None),
                            (params[n.arg],), n.src[0].arg.to_indexed(idxs))
        elif n.op is Ops.CONST:
            _, valid = n.src[0].arg.to_indexed(idxs)
            value = b.add(LOps.CONST, n.dtype, (), n.arg)
            if not (valid.is_const and valid.vmin == 1):  # a padded constant
                zero = b.add(LOps.CONST, n.dtype, (), identity(Ops.ADD, n.dtype))
                cond = b.add(LOps.VALID, dtypes.bool, (), valid)
                value = b.add(LOps.ALU, n.dtype, (cond, value, zero), Ops.WHERE)
            done[n] = value
        else:
            srcs = tuple(done[s] for s in n.src)
            vector = lanes is not None and any(is_vector(s) for s in srcs)
            op: Any = n.op
            if vector and n.op is Ops.WHERE and not is_vector(srcs[0]):  # one for all lanes
                op, srcs = Pick(), srcs[:1] + broadcast(b, srcs[1:], lanes)
            elif vector and (n.op in COMPARES | {Ops.WHERE, Ops.MAX} or
                             n.dtype == dtypes.bool):
                srcs = broadcast(b, srcs, lanes)  # (their templates want vectors; a bool's
                # lanes all ones for true, as a compare's, not C's 1)
            done[n] = b.add(LOps.ALU, widened(n.dtype, lanes if vector else None), srcs, op)
    return done[node]


# --- vectors: an UPCAST axis as the lanes of SIMD values, on a renderer with vector types ---
VECTOR_OPS = frozenset({Ops.ADD, Ops.MUL, Ops.NEG, Ops.FDIV, Ops.RECIPROCAL, Ops.CMPLT,
                        Ops.CMPNE, Ops.WHERE, Ops.MAX, Ops.TRUNC})
VECTOR_REDUCES = frozenset({Ops.ADD, Ops.MAX})  # float32 sums and maximums, a lane at a time
COMPARES = frozenset({Ops.CMPLT, Ops.CMPNE})  # float32 vectors to a mask (bool lanes)
VECTOR_SIZES = (2, 4, 8, 16)


@dataclass(frozen=True)
class Lanes:
    """The axis computed as a vector's lanes, and how many there are."""
    axis: int
    count: int


def widened(dtype: DType, lanes: Lanes | None) -> DType:
    """dtype, or the vector of lanes.count of it."""
    return dtype if lanes is None else VectorDType.of(dtype, lanes.count)


def lane_stride(st: Any, axis: int) -> int | None:
    """How a view's element moves along loop `axis`: 0 when its index and validity do not
    depend on it, 1 when consecutive iterations read consecutive elements (one view, stride 1,
    no mask on it; or views whose index, simplified, is the loop's variable plus terms that
    do not depend on it, valid whatever the loop: a repeated head's keys), else None."""
    names = [Var(f"x{i}", 0, max(size - 1, 0)) for i, size in enumerate(st.shape)]
    index, valid = st.to_indexed(names)
    if f"x{axis}" not in index.vars() | valid.vars():
        return 0
    view = st.views[-1] if len(st.views) == 1 else None
    if view is not None and view.strides[axis] == 1 and \
            (view.mask is None or view.mask[axis] == (0, view.shape[axis])):
        return 1
    terms = index.terms if isinstance(index, Sum) else (index,)
    if f"x{axis}" not in valid.vars() and \
            [t for t in terms if f"x{axis}" in t.vars()] == [names[axis]]:
        return 1
    return None


@dataclass(frozen=True)
class Broadcast:
    """The ALU op that puts a scalar in every lane of a vector."""


@dataclass(frozen=True)
class Pick:
    """The ALU op `c ? a : b` of a scalar condition c and two vectors: a WHERE whose
    condition is the same for all lanes."""


def broadcast(b: ProgramBuilder, srcs: tuple[int, ...], lanes: Lanes | None) -> tuple[int, ...]:
    """srcs, each scalar among them put in every lane of a vector (Broadcast)."""
    return tuple(s if isinstance(b.prog.steps[s].dtype, VectorDType) else b.add(
        LOps.ALU, widened(b.prog.steps[s].dtype, lanes), (s,), Broadcast()) for s in srcs)


@dataclass(frozen=True)
class Lane:
    """The ALU op that reads lane `index` of a vector."""
    index: int


def lanes_summed(b: ProgramBuilder, vector: int, dtype: DType, op: Ops) -> int:
    """The lanes of a vector of partial results combined by op (ADD), pairwise: each value
    meets log2(lanes) roundings more."""
    count = b.prog.steps[vector].dtype.count  # type: ignore[attr-defined]
    parts = [b.add(LOps.ALU, dtype, (vector,), Lane(i)) for i in range(count)]
    while len(parts) > 1:
        parts = [b.add(LOps.ALU, dtype, (parts[i], parts[i + 1]), op)
                 for i in range(0, len(parts), 2)]
    return parts[0]


MASK_LOGIC = frozenset({Ops.AND, Ops.OR, Ops.XOR, Ops.CMPNE})  # of masks (not: != True)


def is_mask(node: UOp) -> bool:
    """Whether node is a bool computed a vector at a time: a comparison of float32s or int32s
    (its lanes 32 bits too, all ones for true: a causal mask compares positions), a bool
    constant, or and/or/!= of such masks (relu's gradient is where((y < 0) | ((y != 0) !=
    True), 0, 1): 0 where y <= 0, nan passing)."""
    if node.dtype != dtypes.bool:
        return False
    if node.op is Ops.CONST:
        return True
    if node.op in COMPARES and node.src[0].dtype in (dtypes.float32, dtypes.int32):
        return True
    return node.op in MASK_LOGIC and all(is_mask(s) for s in node.src)


def is_float_bits(node: UOp) -> bool:
    """Whether node is a float32's int32 bits on their way back to a float32 (exp's 2**k: k
    made the exponent field, cast to int32 and reinterpreted), which vectors compute as int32
    lanes: a float32 cast to int32, or int32 bits read as a float32."""
    return node.op is Ops.CAST and node.dtype == dtypes.int32 and \
        node.src[0].dtype == dtypes.float32 or node.op is Ops.BITCAST and \
        node.dtype == dtypes.float32 and node.src[0].dtype == dtypes.int32


def vector_axis(kernel: Kernel, max_lanes: int = 16, integers: bool = False) -> int | None:
    """The UPCAST or UNROLL axis the kernel can compute as vectors' lanes, or None, in a float32
    kernel of VECTOR_OPS (and a sum or maximum; a WHERE of a mask, is_mask, int32s loaded for
    its comparisons; float32s cast to int32 bits and back, is_float_bits: exp's polynomial,
    softmax's) whose loads read either one value for all lanes or consecutive ones along it,
    some load (or the reduce) giving each lane its own:
    the last UPCAST of 2 to max_lanes (the widest the processor computes at once) outputs
    stored side by side, else the last such UNROLL (partial sums, one per lane). With integers
    (a renderer with vectors of bytes), an UNROLL also where the sum reads bytes along it and
    turns them into float32s (bytes_in_lanes: a quantized matmul's 4- and 8-bit weights)."""
    nodes = [n for n in kernel.ast.toposort() if n.op is not Ops.VIEW]
    floats = not (
        any(n.dtype != dtypes.float32 and not is_mask(n) and not is_float_bits(n) and
            not (n.op in (Ops.LOAD, Ops.CONST) and n.dtype == dtypes.int32) for n in nodes) or
        any(n.op is Ops.WHERE and not is_mask(n.src[0]) for n in nodes) or
        any(n.op is Ops.REDUCE and n.arg[0] not in VECTOR_REDUCES or n.op not in
            (Ops.LOAD, Ops.CONST, Ops.STORE, Ops.REDUCE) and n.op not in VECTOR_OPS
            and not is_mask(n) and not is_float_bits(n) for n in nodes))
    if not floats and not integers:
        return None
    store = kernel.ast.src[0].arg
    views = [n.src[0].arg for n in nodes if n.op in (Ops.LOAD, Ops.CONST)]
    consts = [n.src[0].arg for n in nodes if n.op is Ops.CONST]

    def fits(i: int) -> bool:
        """Whether every load reads one value or consecutive ones along axis i (some the
        latter, unless a sum's accumulator gives the lanes their own), no constant depends on
        it (padding), and it is as long as a vector can be."""
        if kernel.axes[i].size not in VECTOR_SIZES or kernel.axes[i].size > max_lanes:
            return False
        strides = [lane_stride(v, i) for v in views]
        return None not in strides and all(lane_stride(c, i) == 0 for c in consts) and \
            (kernel.reduce is not None or 1 in strides)
    upcasts = [i for i in reversed(range(len(kernel.axes)))
               if kernel.axes[i].kind is AxisKind.UPCAST and fits(i) and
               (floats or integers and bytes_in_lanes(kernel, i))]
    side_by_side = next((i for i in upcasts if lane_stride(store, i) == 1), None)
    across = next((i for i in upcasts if lane_stride(store, i) != 1), None)
    if across is not None and kernel.reduce is not None and (
            side_by_side is None or kernel.axes[across].size > kernel.axes[side_by_side].size):
        return across  # stored lane by lane, once per output after the reduce (stored_lanes)
    if side_by_side is not None:
        return side_by_side
    for i in reversed(range(len(kernel.axes))):
        if kernel.axes[i].kind is AxisKind.UNROLL and fits(i) and \
                (floats or bytes_in_lanes(kernel, i)):
            return i
    return None


BYTES = frozenset({dtypes.uint8, dtypes.int8})  # integers computed in vector lanes
BITWISE = frozenset({Ops.AND, Ops.OR, Ops.XOR})


def bytes_in_lanes(kernel: Kernel, axis: int) -> bool:
    """Whether the kernel's float32 values can be computed in vector lanes along `axis` where
    it reads bytes: every value that varies along the axis is a float32 of VECTOR_OPS (no
    compares), a float32 sum (along an UPCAST axis: one output per lane), or bytes (uint8,
    int8) loaded, masked (&, |, ^), divided by a positive constant (uint8: a shift), chosen by
    a condition the same for all lanes, reinterpreted (int8 as uint8) or made float32. Values
    the same for all lanes are computed once, as scalars. Along an UNROLL axis (partial sums in
    the lanes) the kernel's sum is what is checked; along an UPCAST axis, its stored value: a
    quantized matmul's weights stored with their outputs side by side, or their
    dequantization."""
    reduce = kernel.reduce
    if kernel.axes[axis].kind is AxisKind.UNROLL:
        if reduce is None or reduce.arg[0] is not Ops.ADD or reduce.dtype != dtypes.float32:
            return False
        root = reduce.src[0]
    else:
        root = kernel.ast.src[1]
        if root.dtype != dtypes.float32:
            return False
    varying: dict[UOp, bool] = {}
    for n in root.toposort():
        if n.op is Ops.VIEW:
            continue
        if n.op in (Ops.LOAD, Ops.CONST):
            varying[n] = lane_stride(n.src[0].arg, axis) == 1
            if varying[n] and n.dtype not in BYTES | {dtypes.float32}:
                return False
            continue
        varying[n] = any(varying.get(s, False) for s in n.src)
        if not varying[n]:
            continue
        src = n.src[0].dtype
        if not (n.dtype == dtypes.float32 and n.op in VECTOR_OPS - COMPARES - {Ops.WHERE} or
                n.op is Ops.REDUCE and n.arg[0] is Ops.ADD and n.dtype == dtypes.float32 or
                n.op is Ops.WHERE and not varying[n.src[0]] and
                n.dtype in BYTES | {dtypes.float32} or
                n.op in BITWISE and n.dtype in BYTES or
                n.op is Ops.IDIV and n.dtype == dtypes.uint8 and n.src[1].op is Ops.CONST and
                not varying[n.src[1]] and n.src[1].arg > 0 or
                n.op is Ops.CAST and n.dtype == dtypes.float32 and src in BYTES or
                n.op is Ops.BITCAST and n.dtype in BYTES and src in BYTES):
            return False
    return True
