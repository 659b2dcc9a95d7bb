"""Python numbers that change between calls become kernel arguments, so kernels do not pile up.

A constant is written into its kernel's source (`x * 0.001f`): a learning rate that a schedule
changes every step, or a loop counter, would compile a new kernel for every value, forever.
tinygrad binds such numbers to variables (DEFINE_VAR); tinyfw does the simplest thing that
bounds the count: the first time a kernel is scheduled, its constants stay in its source (the
compiler folds them). When a kernel of the same shape (the same AST with its constants'
values left out) comes with another value of some constant, that constant is read from a
one-element buffer from then on: the kernel is compiled once more, with a load where the
constant was, and every later value is the same kernel with another small buffer. So a number
that varies costs at most two kernels per kernel shape.

The buffers of the values are shared (a value on a device and of a dtype has one, never
written), the last VALUE_BUFFERS of them kept. VARY_CONSTS=0 keeps every constant inline.
"""
from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from tinyfw.device import Buffer
from tinyfw.dtype import DType, dtypes
from tinyfw.engine.schedule import ScheduleItem, max_buffers
from tinyfw.uop.ops import Ops, UOp, arg_key

MAX_SHAPES = 4096      # kernel shapes remembered (their first constants, which ones varied)
VALUE_BUFFERS = 1024   # one-element buffers of values kept for reuse
# what a kernel's AST becomes: None (unchanged), or the AST with loads and the constants read
_plans: OrderedDict[UOp, Plan | None] = OrderedDict()
_shapes: OrderedDict[UOp, tuple[tuple, frozenset[int]]] = OrderedDict()  # values, varying
_values: OrderedDict[tuple, UOp] = OrderedDict()
varied = 0  # kernels scheduled with constants read from buffers (for tests and DEBUG)


@dataclass(frozen=True)
class Plan:
    ast: UOp                             # the kernel with a LOAD for each varying constant
    values: tuple[tuple[DType, object], ...]  # what each of those loads reads, in order


def enabled() -> bool:
    return os.getenv("VARY_CONSTS", "1") not in ("", "0")


def with_const_args(items: list[ScheduleItem]) -> list[ScheduleItem]:
    """The items, each kernel whose constants varied since its shape was first seen reading
    them from one-element buffers (see the module's docstring)."""
    global varied
    if not enabled():
        return items
    out = items
    for i, item in enumerate(items):
        if item.ast is None:
            continue
        if item.ast in _plans:
            _plans.move_to_end(item.ast)
            plan = _plans[item.ast]
        else:
            plan = _plans[item.ast] = _plan(item)
            if len(_plans) > MAX_SHAPES:
                _plans.popitem(last=False)
        if plan is None:
            continue
        varied += 1
        if out is items:
            out = list(items)
        loads = tuple(_value_node(item.device, dtype, value) for dtype, value in plan.values)
        out[i] = ScheduleItem(plan.ast, item.output, item.inputs + loads, item.name)
    return out


def _plan(item: ScheduleItem) -> Plan | None:
    """What item's kernel becomes: None while its constants are the first seen for its shape."""
    assert item.ast is not None
    consts = [n for n in item.ast.toposort() if n.op is Ops.CONST]
    if not consts:
        return None
    numbered = {n: UOp(Ops.CONST, n.dtype, n.src, ("const", i)) for i, n in enumerate(consts)}
    shape = _substituted(item.ast, numbered)
    values = tuple(arg_key(n.arg) for n in consts)
    if (seen := _shapes.get(shape)) is None:
        _shapes[shape] = (values, frozenset())
        if len(_shapes) > MAX_SHAPES:
            _shapes.popitem(last=False)
        return None
    first, varying = seen
    varying = varying | {i for i, (a, b) in enumerate(zip(first, values)) if a != b}
    _shapes[shape] = (first, varying)
    _shapes.move_to_end(shape)
    if not varying:
        return None
    if len(item.inputs) + 1 + len(varying) > max_buffers(item.device):
        return None  # (WEBGPU binds only so many buffers: the constant stays inline)
    loads: dict[UOp, UOp] = {}
    read: list[tuple[DType, object]] = []
    for i, n in enumerate(consts):
        if i in varying:
            read.append((n.dtype, n.arg))
            loads[n] = UOp(Ops.LOAD, n.dtype, n.src, len(item.inputs) + len(read))
    return Plan(_substituted(item.ast, loads), tuple(read))


def _substituted(ast: UOp, swap: dict[UOp, UOp]) -> UOp:
    """ast with each node in swap replaced by its value."""
    done: dict[UOp, UOp] = {}
    for node in ast.toposort():
        done[node] = swap[node] if node in swap else \
            UOp(node.op, node.dtype, tuple(done[s] for s in node.src), node.arg)
    return done[ast]


def _value_node(device: str, dtype: DType, value: object) -> UOp:
    """A one-element buffer on device holding value (shared, never written)."""
    key = (device, dtype, arg_key(value))
    if (node := _values.get(key)) is not None:
        _values.move_to_end(key)
        return node
    data = np.array([value], dtype=np.float32 if dtype == dtypes.bfloat16 else dtype.np)
    buffer = Buffer(device, 1, dtype, data)
    buffer.constant = True  # (never written: TinyJit counts it among a function's constants)
    node = _values[key] = UOp(Ops.BUFFER, dtype, (), buffer)
    if len(_values) > VALUE_BUFFERS:
        _values.popitem(last=False)
    return node
