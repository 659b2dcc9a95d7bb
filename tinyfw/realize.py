"""Turning lazy nodes into buffers, and remembering what was already computed."""
from __future__ import annotations

import weakref

import numpy as np

from tinyfw import interpreter
from tinyfw.device import Buffer
from tinyfw.uop import Ops, UOp

# Lazy nodes already computed, with the buffer holding their value. Nodes are immutable and
# buffers are never written twice, so a node's value never changes.
_computed: weakref.WeakKeyDictionary[UOp, Buffer] = weakref.WeakKeyDictionary()


def is_buffer_view(node: UOp) -> bool:
    """True for a buffer, or a buffer reshaped: a value that needs no computing."""
    return node.op is Ops.BUFFER or (node.op is Ops.RESHAPE and node.src[0].op is Ops.BUFFER)


def buffer_of(node: UOp) -> Buffer:
    """The buffer behind a buffer view."""
    return node.arg if node.op is Ops.BUFFER else node.src[0].arg


def _known_value(node: UOp) -> np.ndarray | None:
    """The value of a node computed before, if it was."""
    buf = _computed.get(node)
    return None if buf is None else buf.numpy().reshape(node.shape)


def realize(node: UOp) -> UOp:
    """A buffer view holding node's value, computing it (and remembering it) if needed."""
    if is_buffer_view(node):
        return node
    if (buf := _computed.get(node)) is None:
        value = interpreter.run(node, known=_known_value)
        buf = Buffer(node.device, value.size, node.dtype, value.reshape(-1))
        _computed[node] = buf
    return UOp(Ops.BUFFER, node.dtype, (), buf).reshape(node.shape)
