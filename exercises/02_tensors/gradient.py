# Exercises of chapter 02, generated from tinyfw/uop/gradient.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/02_tensors
# generated text id: dbca4e9272612ca4 (lets tools.generate tell your edits apart)
"""Reverse-mode autodiff on the lazy graph: one table of local rules, and the backward pass."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tinyfw.uop.elementwise_math import cos
from tinyfw.uop.ops import Ops, UOp

# A rule takes the gradient flowing into a node's output and the node itself, and returns the
# gradient of each of the node's sources, in order (None where no gradient flows).
GradRule = Callable[[UOp, UOp], tuple]


def reduce_gradient(grad: UOp, node: UOp) -> tuple[UOp]:
    """The gradient of a REDUCE: a sum spreads back evenly; a max goes to the maxima, shared."""
    x = node.src[0]
    if node.arg[0] is Ops.ADD:
        return (grad.expand(x.shape),)
    is_max = x.eq(node.expand(x.shape)).cast(grad.dtype)
    share = grad / is_max.sum(node.arg[1])
    return (is_max * share.expand(x.shape),)


def inverse_permutation(order: tuple[int, ...]) -> tuple[int, ...]:
    """The permutation that undoes `order`."""
    return tuple(sorted(range(len(order)), key=lambda i: order[i]))


def max_gradient(grad: UOp, node: UOp) -> tuple[UOp, UOp]:
    """The gradient of an elementwise max: to the larger source, split evenly on ties; where
    either is NaN (the max is NaN) the whole of it goes to both, as in torch."""
    a, b = node.src
    to_a = (b < a).cast(grad.dtype) + a.eq(b).cast(grad.dtype) * 0.5
    to_b = 1.0 - to_a
    if a.dtype.is_float:
        nan = a.ne(a).alu(Ops.OR, b.ne(b))
        to_a, to_b = nan.where(1.0, to_a), nan.where(1.0, to_b)
    return grad * to_a, grad * to_b


@dataclass(frozen=True)
class GradientOverride:
    """The local gradient of a composite, given by hand where differentiating its ops would not
    give torch's (pow's value is a where over exp2 and log2: at 0 its gradient would be 0, not
    inf). rule(grad, node, *inputs, *params) returns each input's gradient (None where none
    flows) from grad, the gradient at node, the composite's value."""
    rule: Callable[..., tuple[UOp | None, ...]]
    params: tuple[Any, ...] = ()

    def __repr__(self) -> str:
        return f"gradient by {self.rule.__name__}{self.params if self.params else ''}"


def with_gradient(value: UOp, inputs: tuple[UOp, ...], override: GradientOverride) -> UOp:
    """value, as a DETACH whose arg is override and whose further sources are the inputs: no
    gradient flows into the ops that made value; the inputs get the override's instead."""
    return UOp(Ops.DETACH, value.dtype, (value, *inputs), override)


def detach_gradient(grad: UOp, node: UOp) -> tuple[UOp | None, ...]:
    """The gradient of a DETACH: none to the value it passes on, and, where it carries a
    GradientOverride (made by with_gradient), the override's gradients to the inputs."""
    if not isinstance(node.arg, GradientOverride):
        return (None,) * len(node.src)
    return (None, *node.arg.rule(grad, node, *node.src[1:], *node.arg.params))


def gradient_rules() -> dict[Ops, GradRule]:
    """The local gradient of every primitive op, one line each."""
    # TODO 02.gradient_rules: write this part. The chapter explains it:
    #   chapters/02_tensors/README.md#the-gradient-table
    raise NotImplementedError("not done yet: 02.gradient_rules")


def unbroadcast(grad: UOp, shape: tuple[int, ...]) -> UOp:
    """The gradient of an expand to grad.shape from `shape`: sum over every axis that grew."""
    # TODO 02.unbroadcast: write this part. The chapter explains it:
    #   chapters/02_tensors/README.md#undoing-broadcasting
    raise NotImplementedError("not done yet: 02.unbroadcast")


def toposort(root: UOp, targets: set[UOp]) -> list[UOp]:
    """The nodes on a path from root down to a target, each listed after all of its sources."""
    # TODO 02.toposort: write this part. The chapter explains it:
    #   chapters/02_tensors/README.md#ordering-the-graph
    raise NotImplementedError("not done yet: 02.toposort")


def compute_gradient(root: UOp, root_grad: UOp, targets: set[UOp]) -> dict[UOp, UOp]:
    """The gradient of root with respect to each target reached from it, as graph nodes."""
    # TODO 02.backward: write this part. The chapter explains it:
    #   chapters/02_tensors/README.md#the-backward-pass
    raise NotImplementedError("not done yet: 02.backward")
