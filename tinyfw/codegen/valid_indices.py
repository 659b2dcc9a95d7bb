"""Load indices simplified where they are read (chapter 11): a program's every LOAD reads memory
only where its validity holds (the renderer's `valid ? data[index] : 0`), so its index need only
be right there, and the bounds valid gives its variables simplify it
(symbolic.index_where_valid). A padded or repeated view's index, split into rows and columns,
divides by sizes that its loops' whole ranges cross and their valid ranges do not: a
convolution's input gradient read each element through a dozen divisions and remainders, and
took 4.4 ms of a 20 ms conv training step (bench.kernels --model conv); 2.7 ms with them gone.
"""
from __future__ import annotations

from dataclasses import replace

from tinyfw.codegen.lower import LOps, Program
from tinyfw.shape.symbolic import index_where_valid


def simplify_load_indices(prog: Program) -> Program:
    """The program with each LOAD's index simplified by what its validity says."""
    steps = [replace(step, arg=(index_where_valid(*step.arg), step.arg[1]))
             if step.op is LOps.LOAD and not step.arg[1].is_const else step
             for step in prog.steps]
    return replace(prog, steps=steps)
