"""Fused multiply-adds (chapter 11): a product added to a sum's accumulator, `acc = acc + a * b`,
computed as one fma(a, b, acc), rounded once instead of twice, in one instruction instead of two.

A C compiler fuses such pairs itself with -ffp-contract=fast, but wherever it sees fit, so one
expression could round one way in a kernel and another way in the next; tinyfw compiles with
-ffp-contract=off (tinyfw/runtime/c_compiler.py) and fuses here, in the program, only the updates of
accumulators: what is fused is decided by tinyfw, the same in every compile. A matmul's inner loop
is nothing but such updates, so on a processor that has the instruction (x86's FMA, AVX-512)
it does half the instructions. PyTorch's and numpy's matmuls round so too.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace

from tinyfw.codegen.lower import LOps, Program, Step
from tinyfw.dtype import DType, VectorDType
from tinyfw.uop.ops import Ops

BLOCKS = frozenset({LOps.LOOP, LOps.ENDLOOP, LOps.IF, LOps.ENDIF})


@dataclass(frozen=True)
class MulAdd:
    """The ALU op fma(a, b, c) = a * b + c, rounded once; scalars[i]: operand i (a or b) is a
    scalar, used in every lane of a vector result."""
    scalars: tuple[bool, bool] = (False, False)


@dataclass(frozen=True)
class Replace:
    """The UPDATE op that sets the accumulator to the value (which was computed from it)."""


def fuse_multiply_adds(prog: Program, fusable: Callable[[DType], bool]) -> Program:
    """The program with each `acc = acc + a * b` (a sum's UPDATE of a product used by nothing
    else, computed in the same loop body) of a dtype fusable says the target fuses written as
    `v = fma(a, b, acc); acc = v`."""
    uses = Counter(s for step in prog.steps for s in step.src)
    steps = list(prog.steps)
    for i, step in enumerate(prog.steps):
        if step.op is not LOps.UPDATE or step.arg is not Ops.ADD or not fusable(step.dtype):
            continue
        acc, value = step.src
        product = steps[value]
        if product.op is not LOps.ALU or product.arg is not Ops.MUL or uses[value] != 1 or \
                product.dtype != step.dtype or \
                any(s.op in BLOCKS or s.op is LOps.UPDATE and s.src[0] == acc
                    for s in steps[value + 1:i]):  # (acc is read where it was to be set)
            continue
        vector = isinstance(step.dtype, VectorDType)
        a, b = product.src
        scalars = (vector and not isinstance(steps[a].dtype, VectorDType),
                   vector and not isinstance(steps[b].dtype, VectorDType))
        steps[value] = Step(LOps.ALU, step.dtype, (a, b, acc), MulAdd(scalars))
        steps[i] = Step(LOps.UPDATE, step.dtype, (acc, value), Replace())
    return replace(prog, steps=steps)
