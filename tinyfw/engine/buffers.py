"""Where a node's value lives: whether it is in a buffer already, and which. What realize.py,
the BEAM search (beam.py) and TinyJit ask of a node, below all of them.
"""
from __future__ import annotations

from tinyfw.device import Buffer
from tinyfw.uop.ops import Ops, UOp

# (Enum members looked up on the class are slow in Python 3.11: see tinyfw/uop/ops.py)
_BUFFER, _RESHAPE = Ops.BUFFER, Ops.RESHAPE


def below_reshapes(node: UOp) -> UOp:
    """node under any reshapes stacked on it."""
    while node.op is _RESHAPE:
        node = node.src[0]
    return node


def is_buffer_view(node: UOp) -> bool:
    """True for a buffer, or a buffer reshaped (any number of times): nothing to compute."""
    return below_reshapes(node).op is _BUFFER


def is_realized(node: UOp) -> bool:
    """True when node's value is in a buffer already: a buffer view, or a node computed before
    (else it is still lazy, and buffer_of has nothing to give)."""
    return is_buffer_view(node) or node.realized is not None


def buffer_of(node: UOp) -> Buffer:
    """The buffer holding node's value; node must be realized (see is_realized)."""
    if (below := below_reshapes(node)).op is _BUFFER:  # (a buffer view)
        return below.arg
    if (buffer := node.realized) is None:
        raise RuntimeError(f"a {node.op.name} node of shape {node.shape} has no buffer yet: "
                           "realize it first")
    return buffer
