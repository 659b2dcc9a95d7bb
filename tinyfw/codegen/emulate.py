"""Types no language computes with, rewritten into ones they all have, on the linear program.

bfloat16 is float32 with the low 16 bits of its mantissa cut off, rounded to nearest even. No
renderer of tinyfw's has it as a type: in a kernel its values are float32 (every bfloat16 is
one), its memory holds the 16 bits as uint16, and each op that makes a bfloat16 rounds its
float32 result to the nearest bfloat16, as torch computes bfloat16 on the CPU. The rounding is
integer arithmetic on the float32's bits, so every language with 32-bit ints and BITCAST can run
it (WGSL included).

A float cast to uint32 or uint64 is written out too: C leaves a value out of the type's range
undefined, and compilers differ (x86's scalar code for uint32 goes through int64, its vector
code and numpy through int32). tinyfw gives what torch and numpy give on x86: below 2**31 (or
2**63) the value as the signed int of that width converts it, NaN included, and from there on
the signed conversion of x - 2**31 with the top bit set. That leaves only float-to-signed casts,
which every device already makes agree.

A BITCAST of a constant is folded here, so that a renderer's BITCAST only ever reads a variable
of its source's own type.
"""
from __future__ import annotations

import numpy as np

from tinyfw.codegen.lower import LOps, Program, Step
from tinyfw.dtype import DType, dtypes
from tinyfw.uop.ops import Ops

BF16, F32, U32, U16 = dtypes.bfloat16, dtypes.float32, dtypes.uint32, dtypes.uint16
HALF = 65536  # 2**16: a shift by 16 bits, written as a multiplication or an unsigned division
EXACT = frozenset({Ops.NEG, Ops.MAX, Ops.WHERE})  # of bfloat16 operands, a bfloat16 already
SIGNED = {dtypes.uint32: dtypes.int32, dtypes.uint64: dtypes.int64}  # the same width, signed


def emulate_dtypes(prog: Program) -> Program:
    """prog with BITCASTs of constants folded, bfloat16 computed in float32, and float casts to
    uint32 and uint64 written out (see above)."""
    prog = fold_bitcasts(prog)
    if not any(s.dtype == BF16 or _is_float_to_wide_unsigned(prog, s) for s in prog.steps):
        return prog
    return _Rewrite(prog).run()


def _is_float_to_wide_unsigned(prog: Program, step: Step) -> bool:
    return step.op is LOps.ALU and step.arg is Ops.CAST and step.dtype in SIGNED and \
        prog.steps[step.src[0]].dtype.is_float


def fold_bitcasts(prog: Program) -> Program:
    """prog with each BITCAST whose operand is a constant replaced by the constant it gives."""
    steps = list(prog.steps)
    for i, step in enumerate(steps):
        if step.op is LOps.ALU and step.arg is Ops.BITCAST and steps[step.src[0]].op is LOps.CONST:
            source = steps[step.src[0]]
            value = np.array([source.arg], source.dtype.np).view(step.dtype.np)[0]
            steps[i] = Step(LOps.CONST, step.dtype, (), value.item())
    if steps == prog.steps:
        return prog
    return Program(prog.name, steps, list(prog.params), prog.global_size, prog.workgroup)


class _Rewrite:
    """One pass over a program's steps, writing each into a new program, bfloat16 replaced."""

    def __init__(self, prog: Program):
        self.old, self.new = prog, Program(prog.name, global_size=prog.global_size,
                                           workgroup=prog.workgroup)
        self.moved: dict[int, int] = {}  # step of the old program -> its value in the new

    def run(self) -> Program:
        for i, step in enumerate(self.old.steps):
            self.moved[i] = self.step(step, tuple(self.moved[s] for s in step.src))
        self.new.params = [self.moved[p] for p in self.old.params]
        return self.new

    def add(self, op: LOps, dtype: DType, src: tuple[int, ...] = (), arg: object = None) -> int:
        return self.new.add(op, dtype, src, arg)

    def const(self, value: int, dtype: DType = U32) -> int:
        return self.add(LOps.CONST, dtype, (), value)

    def alu(self, op: Ops, dtype: DType, *src: int) -> int:
        return self.add(LOps.ALU, dtype, src, op)

    def step(self, step: Step, src: tuple[int, ...]) -> int:
        """The new program's steps for one old step; returns the one holding its value."""
        old_src = [self.old.steps[s].dtype for s in step.src]
        if step.op is LOps.PARAM and step.dtype == BF16:
            return self.add(LOps.PARAM, U16, (), step.arg)
        if step.op is LOps.LOAD and step.dtype == BF16:
            return self.from_bits(self.add(LOps.LOAD, U16, src, step.arg))
        if step.op is LOps.CONST and step.dtype == BF16:
            return self.add(LOps.CONST, F32, (), float(np.array(step.arg, BF16.np)))
        if step.op is LOps.STORE and step.dtype == BF16:
            return self.add(LOps.STORE, U16, (src[0], self.to_bits(src[1])), step.arg)
        if step.op is LOps.ALU and step.arg is Ops.BITCAST and BF16 in (step.dtype, *old_src):
            return self.bitcast(src[0], old_src[0], step.dtype)
        if _is_float_to_wide_unsigned(self.old, step):
            return self.float_to_unsigned(src[0], F32 if old_src[0] == BF16 else old_src[0],
                                          step.dtype)
        if step.op is LOps.ALU and step.dtype == BF16:
            value = self.alu(step.arg, F32, *src)
            return value if step.arg in EXACT else self.rounded(value)
        return self.add(step.op, step.dtype, src, step.arg)

    def bitcast(self, x: int, source: DType, target: DType) -> int:
        """The bits of x (of dtype source, bfloat16 a float32 here) read as target."""
        bits = self.to_bits(x) if source == BF16 else \
            x if source == U16 else self.alu(Ops.BITCAST, U16, x)
        if target == BF16:
            return self.from_bits(bits)
        return bits if target == U16 else self.alu(Ops.BITCAST, target, bits)

    def float_to_unsigned(self, x: int, source: DType, target: DType) -> int:
        """The float x cast to uint32 or uint64 as on x86 (see above), through signed casts."""
        if source.itemsize == 2:  # a float16: as torch, through float32 (exact)
            x, source = self.alu(Ops.CAST, F32, x), F32
        signed = SIGNED[target]
        top = 2 ** (8 * target.itemsize - 1)
        small = self.alu(Ops.CAST, target, self.alu(Ops.CAST, signed, x))
        less = self.alu(Ops.CMPLT, dtypes.bool, x, self.add(LOps.CONST, source, (), float(top)))
        is_nan = self.alu(Ops.CMPNE, dtypes.bool, x, x)
        shifted = self.alu(Ops.ADD, source, x, self.add(LOps.CONST, source, (), -float(top)))
        big = self.alu(Ops.XOR, target, self.alu(Ops.CAST, target,
                                                 self.alu(Ops.CAST, signed, shifted)),
                       self.const(top, target))
        return self.alu(Ops.WHERE, target, self.alu(Ops.OR, dtypes.bool, less, is_nan), small,
                        big)

    def from_bits(self, bits: int) -> int:
        """The float32 of a bfloat16's 16 bits: they are its high half."""
        wide = self.alu(Ops.MUL, U32, self.alu(Ops.CAST, U32, bits), self.const(HALF))
        return self.alu(Ops.BITCAST, F32, wide)

    def high_half(self, x: int) -> int:
        """The 16 bits of the bfloat16 nearest the float32 x, in a uint32 (NaN stays NaN)."""
        bits = self.alu(Ops.BITCAST, U32, x)
        top = self.alu(Ops.IDIV, U32, bits, self.const(HALF))
        odd = self.alu(Ops.AND, U32, top, self.const(1))  # ties go to the even one
        carry = self.alu(Ops.ADD, U32, self.alu(Ops.ADD, U32, bits, self.const(0x7FFF)), odd)
        nearest = self.alu(Ops.IDIV, U32, carry, self.const(HALF))
        magnitude = self.alu(Ops.AND, U32, bits, self.const(0x7FFFFFFF))
        is_nan = self.alu(Ops.CMPLT, dtypes.bool, self.const(0x7F800000), magnitude)
        # a NaN keeps its high half, made quiet where that alone would read as an infinity
        payload = self.alu(Ops.AND, U32, top, self.const(0x7F))
        keeps = self.alu(Ops.CMPNE, dtypes.bool, payload, self.const(0))
        nan = self.alu(Ops.WHERE, U32, keeps, top, self.alu(Ops.OR, U32, top, self.const(0x40)))
        return self.alu(Ops.WHERE, U32, is_nan, nan, nearest)

    def to_bits(self, x: int) -> int:
        """The bfloat16 nearest the float32 x, as its 16 bits (a uint16)."""
        return self.alu(Ops.CAST, U16, self.high_half(x))

    def rounded(self, x: int) -> int:
        """The float32 x rounded to the nearest bfloat16 (a float32 again)."""
        wide = self.alu(Ops.MUL, U32, self.high_half(x), self.const(HALF))
        return self.alu(Ops.BITCAST, F32, wide)
