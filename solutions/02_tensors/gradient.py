# Solutions of chapter 02, generated from tinyfw/uop/gradient.py by `python -m tools.generate`.
# Edit tinyfw/uop/gradient.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/02_tensors --impl=solutions
# generated text id: 5144dd9d4e7c57f7 (lets tools.generate tell your edits apart)
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
    # >>> exercise 02.gradient_rules #the-gradient-table
    ln2 = math.log(2)
    no_grad: GradRule = lambda grad, node: (None,) * len(node.src)  # noqa: E731
    return {
        Ops.ADD: lambda grad, node: (grad, grad),
        Ops.MUL: lambda grad, node: (grad * node.src[1], grad * node.src[0]),
        Ops.NEG: lambda grad, node: (-grad,),
        Ops.RECIPROCAL: lambda grad, node: (-grad * node * node,),
        # d(a/b)/db = -a/b**2, as -(g * (a/b)) / b: a/b**2 would overflow for a tiny b
        Ops.FDIV: lambda grad, node: (grad / node.src[1], -(grad * node) / node.src[1]),
        Ops.SQRT: lambda grad, node: (grad / (node * 2),),
        Ops.EXP2: lambda grad, node: (grad * node * ln2,),
        Ops.LOG2: lambda grad, node: (grad / (node.src[0] * ln2),),
        Ops.SIN: lambda grad, node: (grad * cos(node.src[0]),),  # cos made of SINs
        Ops.MAX: max_gradient,
        Ops.CAST: lambda grad, node: (grad.cast(node.src[0].dtype) if node.dtype.is_float
                                      else None,),
        Ops.WHERE: lambda grad, node: (None, node.src[0].where(grad, 0),
                                       node.src[0].where(0, grad)),
        Ops.REDUCE: reduce_gradient,
        Ops.RESHAPE: lambda grad, node: (grad.reshape(node.src[0].shape),),
        Ops.PERMUTE: lambda grad, node: (grad.permute(inverse_permutation(node.arg)),),
        Ops.EXPAND: lambda grad, node: (unbroadcast(grad, node.src[0].shape),),
        Ops.PAD: lambda grad, node: (grad.shrink(tuple((b, b + s) for (b, _), s
                                                       in zip(node.arg, node.src[0].shape))),),
        Ops.SHRINK: lambda grad, node: (grad.pad(tuple((b, s - e) for (b, e), s
                                                       in zip(node.arg, node.src[0].shape))),),
        Ops.FLIP: lambda grad, node: (grad.flip(node.arg),),
        Ops.CONTIGUOUS: lambda grad, node: (grad,),
        Ops.COPY: lambda grad, node: (grad.copy_to(node.src[0].device),),
        # no gradient flows through these: it is zero almost everywhere, or not defined
        Ops.TRUNC: no_grad, Ops.MOD: no_grad, Ops.IDIV: no_grad, Ops.CMPLT: no_grad,
        Ops.CMPNE: no_grad, Ops.AND: no_grad, Ops.OR: no_grad, Ops.XOR: no_grad,
        Ops.DETACH: detach_gradient,  # none, except a gradient override's, to its inputs
    }
    # <<< exercise


def unbroadcast(grad: UOp, shape: tuple[int, ...]) -> UOp:
    """The gradient of an expand to grad.shape from `shape`: sum over every axis that grew."""
    # >>> exercise 02.unbroadcast #undoing-broadcasting
    grown = tuple(i for i, (s, g) in enumerate(zip(shape, grad.shape)) if s == 1 and g != 1)
    return grad.sum(grown) if grown else grad
    # <<< exercise


def toposort(root: UOp, targets: set[UOp]) -> list[UOp]:
    """The nodes on a path from root down to a target, each listed after all of its sources."""
    # >>> exercise 02.toposort #ordering-the-graph
    order: list[UOp] = []
    leads_to_target: dict[UOp, bool] = {}
    stack: list[tuple[UOp, bool]] = [(root, False)]
    while stack:
        node, sources_done = stack.pop()
        if sources_done:
            leads_to_target[node] = node in targets or any(leads_to_target[s] for s in node.src)
            if leads_to_target[node]:
                order.append(node)
        elif node not in leads_to_target:
            leads_to_target[node] = False  # visited; the real answer comes after its sources
            stack.append((node, True))
            stack.extend((s, False) for s in node.src if s not in leads_to_target)
    return order
    # <<< exercise


def compute_gradient(root: UOp, root_grad: UOp, targets: set[UOp]) -> dict[UOp, UOp]:
    """The gradient of root with respect to each target reached from it, as graph nodes."""
    # >>> exercise 02.backward #the-backward-pass
    rules = gradient_rules()
    path = toposort(root, targets)
    on_path = set(path)
    grads: dict[UOp, UOp] = {root: root_grad}
    for node in reversed(path):
        if node not in grads or not any(s in on_path for s in node.src):
            continue
        if node.op not in rules:
            raise RuntimeError(f"no gradient rule for {node.op}")
        for src, src_grad in zip(node.src, rules[node.op](grads[node], node)):
            if src_grad is not None and src in on_path:
                grads[src] = grads[src] + src_grad if src in grads else src_grad
    return {t: grads[t] for t in targets if t in grads}
    # <<< exercise
