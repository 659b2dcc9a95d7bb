"""The Tensor: a PyTorch-shaped front end that records a lazy graph of primitive ops.

This file holds the class itself: its node and flags, computing and reading it (realize,
_read), assign, autograd (backward, gradient), making tensors (creation and random numbers),
and the plumbing of the elementwise ops (_operands, _binary, where). The ops themselves are in
the mixins of tinyfw/mixin/, Tensor's bases: arithmetic.py, logic.py, math_ops.py, reduce.py,
movement.py, derived.py, nn_ops.py and the others."""
from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from tinyfw.mixin import threefry
from tinyfw.engine import realize
from tinyfw.mixin.activations import ActivationOps
from tinyfw.mixin.arithmetic import ArithmeticOps
from tinyfw.mixin.core import index_dtype
from tinyfw.mixin.derived import AxisArg, DerivedOps
from tinyfw.mixin.dtype_ops import DtypeOps
from tinyfw.device import Buffer, Device
from tinyfw.dtype import (DType, _infer_list_dtype, _ints_as, dtypes, promote_types,
                          scalar_result_type, to_dtype, torch_name)
from tinyfw.helpers import argfix, normalize_axis, prod, shape_str
from tinyfw.mixin.hashing import HashingOps
from tinyfw.mixin.indexing import IndexingOps
from tinyfw.mixin.inplace import InplaceOps
from tinyfw.mixin.linalg import LinalgOps
from tinyfw.mixin.logic import LogicOps
from tinyfw.mixin.math_ops import MathOps
from tinyfw.mixin.movement import MovementOps
from tinyfw.mixin.conv_gradient import ConvGradientOps
from tinyfw.mixin.protocol import ProtocolOps
from tinyfw.mixin.promotion import _past_int64, _promote_tensors, broadcast_shape
from tinyfw.mixin.reduce import ReduceOps
from tinyfw.mixin.sampling import SamplingOps
from tinyfw.mixin.scan import ScanOps
from tinyfw.mixin.torch_names import TorchNames
from tinyfw.uop.gradient import GradientOverride, compute_gradient, with_gradient
from tinyfw.uop.ops import Ops, UOp, const
from tinyfw import multi

Scalar = bool | int | float
Sizes = int | Sequence[int]  # a shape: its sizes one by one, or one tuple or list of them
TensorLike = "Tensor | Scalar"


_assign_numbers = itertools.count()


def _buffer_node(data: np.ndarray, device: str | tuple[str, ...], dtype: DType) -> UOp:
    """A fresh buffer on device holding data, viewed in data's shape; on a tuple of devices,
    one on each (a replicated value: tinyfw/multi.py)."""
    # No conversion here: Buffer.copyin casts and lays data out as it copies it in, and a
    # converted copy made here first would be a whole extra array in memory at once.
    data = np.asarray(data)
    if isinstance(device, tuple):
        return multi.multi([_buffer_node(data, d, dtype) for d in device], None)
    buf = Buffer(device, data.size, dtype, data)
    return UOp(Ops.BUFFER, dtype, (), buf).reshape(data.shape)


def _canonical(device: str | tuple[str, ...] | list[str] | None) -> str | tuple[str, ...]:
    """A device name, or a tuple of them (a tensor over many devices), in standard spelling."""
    if isinstance(device, (tuple, list)):
        return tuple(Device.canonicalize(d) for d in device)
    return Device.canonicalize(device)


# Random bits per sample of each float dtype: its significand's (a sample of that many bits is
# exact in it, and below 1); float64's from one 32-bit word.
RANDOM_BITS = {dtypes.float16: 11, dtypes.bfloat16: 8, dtypes.float32: 24, dtypes.float64: 32}


class Tensor(ArithmeticOps, LogicOps, InplaceOps, MathOps, ReduceOps, ActivationOps, DtypeOps,
             ProtocolOps, MovementOps, DerivedOps, ConvGradientOps, ScanOps, IndexingOps, LinalgOps,
             HashingOps, SamplingOps, TorchNames):
    """An n-dimensional array that records what is done to it, computes it when asked (realize,
    numpy, item) and can differentiate it (backward, gradient)."""
    __slots__ = ("uop", "_requires_grad", "grad", "_is_leaf", "_view", "_views",
                 "__weakref__")
    training: bool = False
    no_grad: bool = False  # True: results are cut from the graph (torch's no_grad)
    _rng: np.random.Generator | None = None  # randint, randperm, multinomial: _host_rng()
    _seed: int = 0                                          # of the device streams (threefry)
    _rng_states: dict[str, Tensor] = {}                     # per device: [key0, key1, drawn]
    _grad_leaves: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def __init__(self, data: Any, device: str | None = None, dtype: DType | str | None = None,
                 requires_grad: bool | None = None):
        dt = to_dtype(dtype) if dtype is not None else None
        self.grad: Tensor | None = None
        # None: not said. An optimizer given such a tensor makes it a parameter (as tinygrad).
        self._requires_grad: bool | None = None
        self._is_leaf = True
        # (base, view ops) for a view of another tensor (x[1:], x.reshape(...)): an assign to
        # the view writes through to the base, as in torch (MovementOps._view_result)
        self._view: tuple[Tensor, tuple] | None = None
        self._views: weakref.WeakSet | None = None  # its live views, told of its writes
        if isinstance(data, UOp):
            self.uop = data if dt is None else data.cast(dt)
        elif isinstance(data, Tensor):
            self.uop = data.uop.detach() if dt is None else data.uop.detach().cast(dt)
            if device is not None:
                self.uop = Tensor(self.uop).to(device).uop
        else:
            where = _canonical(device)  # a tuple: a whole copy on each (tinyfw/multi.py)
            if isinstance(data, (np.ndarray, np.generic)):
                arr = np.asarray(data)
                dt = dt or dtypes.from_np(arr.dtype)
            elif isinstance(data, (bool, int, float, list, tuple)):
                dt = dt or (dtypes.from_py(data) if isinstance(data, (bool, int, float))
                            else _infer_list_dtype(data))
                # in the dtype chosen: numpy alone would make 2**63 a uint64, 2**64 an object
                arr = _ints_as(data, dt) if dt.is_int else np.array(data)
            else:
                raise TypeError(f"can't make a Tensor from {type(data).__name__}")
            self.uop = _buffer_node(arr, where, dt)
        if requires_grad is not None:
            self.requires_grad = requires_grad

    # --- what a tensor is ---
    @property
    def shape(self) -> tuple[int, ...]:
        return self.uop.shape

    @property
    def dtype(self) -> DType:
        return self.uop.dtype

    @property
    def device(self) -> str:
        """The device's name; a tuple of names for a tensor over many (tinyfw/multi.py)."""
        return self.uop.device

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return prod(self.shape)

    @property
    def requires_grad(self) -> bool | None:
        """True: gradients flow to this tensor; False: never; None: not said (falsy), and an
        optimizer given the tensor turns it on, as in tinygrad."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool | None) -> None:
        if not self._is_leaf:
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        if value and not self.dtype.is_float:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if value and not self._requires_grad:  # a parameter gets a buffer of its own, so no
            realize.note_read(self)                 # node is shared (one per device it is on)
            self.uop = realize.own_buffers(self.uop)
            self._view = None  # a parameter is storage of its own, not a view of its source
            Tensor._grad_leaves[id(self)] = self
        elif not value:
            Tensor._grad_leaves.pop(id(self), None)
        self._requires_grad = None if value is None else bool(value)

    @property
    def is_leaf(self) -> bool:
        """False only for tensors computed from tensors that require grad."""
        return self._is_leaf

    @staticmethod
    def _of(uop: UOp) -> Tensor:
        """Tensor(uop), made without the checks of data its __init__ starts with (every op's
        result is made here)."""
        out = Tensor.__new__(Tensor)
        out.uop, out.grad, out._requires_grad, out._is_leaf, out._view = uop, None, None, True, None
        out._views = None
        return out

    def _result(self, uop: UOp, *sources: Tensor) -> Tensor:
        """A new tensor for uop, requiring grad when it is a float and self or a source does."""
        out = Tensor._of(uop)
        requires = self._requires_grad
        for source in sources:  # (a loop: most results have one or two sources, none requiring)
            requires = requires or source._requires_grad
        if requires and uop.dtype.is_float:
            if Tensor.no_grad:  # (tinygrad's flag, which torch's no_grad sets): no graph
                out.uop = uop.detach()
            else:
                out._requires_grad, out._is_leaf = True, False
        return out

    def __hash__(self) -> int:
        return id(self)

    # --- computing ---
    def realize(self, *others: Tensor) -> Tensor:
        """Compute this tensor's value now, with others' in the same schedule (`a.realize(b)` or
        `Tensor.realize(a, b)`: work they share is done once); returns self. Tensors that need a
        graph for backward keep it."""
        tensors = (self, *others)
        items = realize.schedule(*(t.uop for t in tensors)) if others else \
            realize.schedule(self.uop)
        if items:  # (all computed before: nothing to run)
            realize.run_schedule(items)
        for t in tensors:
            node = realize.realize(t.uop)  # computed above: a buffer view, nothing more to run
            # (a view keeps its node, computed now: it reads its base, whose buffer a
            # TinyJit's replay may write in place; realize.forget_readers then forgets it)
            if (not t._requires_grad or t._is_leaf) and t._view is None:
                t.uop = node
            elif t._view is not None and t._view[1] == (("contiguous", None),):
                t._share_buffer(node)
        return self

    def _share_buffer(self, node: UOp) -> None:
        """For x.contiguous() of a contiguous x (a view of x that is x, as torch's), computed
        to node: x takes node as its value too, so both are one buffer (a TinyJit can keep
        state in it), unless x takes part in a gradient (its node is what the gradient is
        taken of)."""
        assert self._view is not None
        root = self._view[0]
        if not root._requires_grad and not self._requires_grad and \
                isinstance(root.uop, UOp) and isinstance(node, UOp) and \
                not realize.is_realized(root.uop):  # (x has no buffer of its own yet)
            root.uop = self.uop = node

    def schedule(self, *others: Tensor) -> list:
        """The kernels realize() would run for this tensor (and others), without running them."""
        return realize.schedule(*(t.uop for t in (self, *others)))

    @staticmethod
    def realize_all(*tensors: Tensor) -> None:
        """Realize several tensors with one schedule (shared work is done once); none is fine."""
        if tensors:
            tensors[0].realize(*tensors[1:])

    def _read(self, copy: bool) -> np.ndarray:
        """The value on the host, in this tensor's shape: an array of the caller's own (copy), or
        one only to read, with no copy where the device's memory is a numpy array. Every read of
        data goes through here, so a TinyJit capturing is told of it (and refuses it)."""
        realize.note_read(self)  # tinyfw/jit/jit.py
        return realize.read(self.uop, copy)

    def assign(self, x: Tensor | Scalar) -> Tensor:
        """Give this tensor a new value of the same shape and dtype (e.g. an optimizer step)."""
        x = x if isinstance(x, Tensor) else self.full_like(x)
        if x.shape != self.shape:
            raise RuntimeError(f"assign of shape {shape_str(x.shape)} to a tensor of shape "
                               f"{shape_str(self.shape)}")
        value = x.uop.detach().cast(self.dtype).copy_to(self.device)
        if self._view is not None:
            self._assign_through(value)  # the base changes (a TinyJit follows it, not the view)
        else:
            realize.note_assign(self)  # a TinyJit follows state (tinyfw/jit/jit.py)
        # A node of its own (the DETACH's arg is a new number): graph nodes are shared between
        # equal expressions, and two tensors given one value must stay two tensors, with their
        # own gradients and buffers.
        self.uop = UOp(Ops.DETACH, value.dtype, (value,), next(_assign_numbers))
        self._refresh_views()  # its views show the new value, as torch's share its memory
        return self

    def replace(self, x: Tensor) -> Tensor:
        """This tensor now holds x's value, dtype and device (tinygrad's: moving a model's
        tensors); only the shapes must match. Unlike assign, no cast and no copy."""
        if not isinstance(x, Tensor):
            raise TypeError(f"replace takes a Tensor, not {type(x).__name__}")
        if x.shape != self.shape:
            raise RuntimeError(f"replace of shape {shape_str(x.shape)} in a tensor of shape "
                               f"{shape_str(self.shape)}: the shapes must match")
        realize.note_assign(self)  # a TinyJit follows state, as for assign
        self.uop, self._view = x.uop, None  # a value of its own, no longer a view
        self._refresh_views()
        return self

    def contiguous_backward(self) -> Tensor:
        """The same value; in the backward pass the gradient is made contiguous here."""
        return self._with_gradient(_contiguous_gradient, (self,))

    def detach(self) -> Tensor:
        """The same value, cut from the graph: no gradient flows back through it. A view of
        self, as torch's: a write to either is seen by the other."""
        return self._as_view_of_self(Tensor(self.uop.detach()), ("detach", None))

    def contiguous(self) -> Tensor:
        """The same values in a buffer of their own (a kernel boundary). As torch's, a tensor
        that is contiguous already (is_contiguous()) is itself: the result is a view of it (a
        write to either is seen by the other); any other is a copy."""
        if not self.is_contiguous():
            return self._result(self.uop.contiguous(), self)  # a copy, as torch's
        if self._view is None and isinstance(self.uop, UOp) and realize.is_realized(self.uop):
            # its buffer is the result's
            return self._as_view_of_self(self._result(self.uop, self), ("contiguous", None))
        out = self._result(self.uop.contiguous(), self)  # computed into a buffer they share
        return self._as_view_of_self(out, ("contiguous", None))

    def to(self, device: str | tuple[str, ...]) -> Tensor:
        """This tensor on another device; on a tuple of devices, a whole copy on each
        (replicated: shard with axis None); a sharded tensor sent to one device is gathered."""
        target = _canonical(device)
        if target == self.device:  # itself, as torch's (a write to either is seen by both)
            return self
        return self._result(self.uop.copy_to(target), self)

    def shard(self, devices: Sequence[str], axis: int | None = None) -> Tensor:
        """This tensor over several devices (chapter 13, tinyfw/multi.py): split along axis,
        each device holding its slice (as even as it goes), or a whole copy on each (None)."""
        names = _canonical(tuple(devices))
        assert isinstance(names, tuple)
        if len(set(names)) != len(names):
            raise RuntimeError(f"shard over {names}: a device twice")
        axis = None if axis is None else normalize_axis(axis, self.ndim)
        return self._result(multi.placed(self.uop, names, axis), self)

    def shard_like(self, y: Tensor) -> Tensor:
        """This tensor placed as y is: sharded on y's devices and axis, or on y's device."""
        return self._result(multi.placed_like(self.uop, y.uop), self)

    def shard_(self, devices: Sequence[str], axis: int | None = None) -> Tensor:
        """shard in place: this tensor now lives on devices (a parameter stays a parameter,
        with buffers of its own on each device)."""
        sharded = self.shard(devices, axis)
        if self.requires_grad and self.is_leaf:
            self.uop = realize.own_buffers(sharded.uop)
        else:
            self.uop = sharded.uop
        self._view = None
        return self

    def cast(self, dtype: DType | str) -> Tensor:
        """This tensor in dtype; itself where it is already (as torch's x.float() of a float32
        tensor: a write to either is seen by both)."""
        dt = to_dtype(dtype)
        if dt == self.dtype:
            return self
        out = self._result(self.uop.cast(dt), self)
        if not dt.is_float and out.requires_grad:
            out._requires_grad = False
        return out

    # --- autograd ---
    def gradient(self, *targets: Tensor, gradient: Tensor | None = None) -> list[Tensor]:
        """The gradients of this tensor with respect to targets, as new (lazy) tensors."""
        root_grad = self._root_grad(gradient)
        wanted = {t.uop for t in targets}
        grads = compute_gradient(self.uop, root_grad.uop, wanted)
        connected = self._connected()
        missing = [i for i, t in enumerate(targets)
                   if t.uop not in grads and t.uop not in connected]
        if missing:
            raise RuntimeError(f"target {missing[0]} was not used to compute this tensor, so it "
                               "has no gradient")
        return [Tensor(grads[t.uop]) if t.uop in grads else t.zeros_like() for t in targets]

    def _connected(self) -> set[UOp]:
        """The nodes this tensor is computed from, not through a detach: a target among them
        that no gradient reaches (it only passes sign, round or a comparison) gets zeros, as in
        torch, rather than None."""
        return set(self.uop.toposort(stop=lambda node: node.op is Ops.DETACH
                                     and not isinstance(node.arg, GradientOverride)))

    def backward(self, gradient: Tensor | None = None) -> Tensor:
        """Add d(self)/d(leaf) to .grad of every leaf that requires grad and that self depends on.
        Gradients accumulate: call zero_grad (or set .grad = None) between steps."""
        if not self.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn")
        root_grad = self._root_grad(gradient)
        leaves = list(Tensor._grad_leaves.values())
        # (every leaf is a target: compute_gradient's walk finds the ones in this graph; those
        # it does not reach get zeros if connected, a walk made only when one is left)
        grads = compute_gradient(self.uop, root_grad.uop, {t.uop for t in leaves})
        unreached = [t for t in leaves if t.uop not in grads and t.grad is None]
        connected = self._connected() if unreached else set()
        for t in leaves:
            if t.uop in grads:
                g = Tensor(grads[t.uop])
                t.grad = g if t.grad is None else t.grad + g
        for t in unreached:
            if t.uop in connected:
                t.grad = t.zeros_like()
        return self

    def _root_grad(self, grad: Tensor | None) -> Tensor:
        if grad is None:
            if self.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            return Tensor(const(1.0, self.dtype, self.device, self.shape))
        if grad.shape != self.shape:
            raise RuntimeError(f"gradient of shape {shape_str(grad.shape)} for a tensor of "
                               f"shape {shape_str(self.shape)}")
        return grad.cast(self.dtype)

    # --- creation ---
    @staticmethod
    def full(shape: int | Sequence[int], fill_value: Scalar, dtype: DType | str | None = None,
             device: str | None = None, requires_grad: bool | None = None) -> Tensor:
        """A tensor of shape filled with one value: a constant, expanded (no memory is filled)."""
        shape = Tensor._new_shape(shape)  # ints (else TypeError), none negative
        dt = to_dtype(dtype) if dtype is not None else dtypes.from_py(fill_value)
        out = Tensor(const(fill_value, dt, _canonical(device), shape))
        if requires_grad is not None:
            out.requires_grad = requires_grad
        return out

    @staticmethod
    def zeros(*shape: Sizes, dtype: DType | str | None = None, device: str | None = None,
              requires_grad: bool | None = None) -> Tensor:
        return Tensor.full(argfix(*shape), 0.0, dtype or dtypes.default_float, device,
                           requires_grad)

    @staticmethod
    def ones(*shape: Sizes, dtype: DType | str | None = None, device: str | None = None,
             requires_grad: bool | None = None) -> Tensor:
        return Tensor.full(argfix(*shape), 1.0, dtype or dtypes.default_float, device,
                           requires_grad)

    @staticmethod
    def empty(*shape: Sizes, dtype: DType | str | None = None, device: str | None = None,
              requires_grad: bool | None = None) -> Tensor:
        """A tensor of shape whose values are whatever its new buffer holds (nothing is filled)."""
        shape_ = Tensor._new_shape(*shape)
        dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
        buf = Buffer(Device.canonicalize(device), prod(shape_), dt)
        out = Tensor(UOp(Ops.BUFFER, dt, (), buf).reshape(shape_))
        if requires_grad is not None:
            out.requires_grad = requires_grad
        return out

    @staticmethod
    def arange(start: int | float, stop: int | float | None = None, step: int | float = 1,
               dtype: DType | str | None = None, device: str | None = None) -> Tensor:
        """Values from start up to (not including) stop, step apart."""
        if stop is None:
            start, stop = 0, start
        if step == 0:
            raise RuntimeError("step must be nonzero")
        if (stop - start) * step < 0:
            raise RuntimeError("upper bound and larger bound inconsistent with step sign")
        if not all(math.isfinite(v) for v in (start, stop)):
            raise RuntimeError(f"unsupported range: {start} -> {stop}")
        values = np.arange(start, stop, step)
        if dtype is not None:
            dt = to_dtype(dtype)
            if dt.is_int:  # torch: the length from the floats, then int(start) + i * int(step)
                values = int(start) + np.arange(len(values)) * int(step)
        elif all(isinstance(v, int) for v in (start, stop, step)):  # torch's int64: see int_for
            dt = dtypes.int_for(int(start), *values[-1:].tolist())
        else:
            dt = dtypes.default_float
        return Tensor(values, device=device, dtype=dt)

    @staticmethod
    def linspace(start: int | float, stop: int | float, steps: int,
                 dtype: DType | str | None = None, device: str | None = None) -> Tensor:
        """steps values evenly spaced from start to stop (both included), as torch computes them:
        start + i * step in the first half, stop - (steps - 1 - i) * step in the second."""
        if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool):
            raise TypeError(f"linspace(): argument 'steps' must be int, not "
                            f"{type(steps).__name__}")
        if steps < 0:
            raise RuntimeError("number of steps must be non-negative")
        dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
        if dt == dtypes.bool:
            raise NotImplementedError("\"linspace\" not implemented for 'Bool'")
        # floats compute in their own dtype; ints truncate start and stop, then step in float64
        ty = np.dtype(dt.np if dt.is_float else np.float64).type
        for end in (start, stop):
            if dt.is_int:
                _ints_as([int(end)], dt)
            elif math.isfinite(end) and abs(end) > dtypes.finite_max(dt):
                raise RuntimeError(f"value cannot be converted to type {dt.name} without "
                                   f"overflow: {end}")
        first = np.array(int(start) if dt.is_int else start).astype(ty)
        last = np.array(int(stop) if dt.is_int else stop).astype(ty)
        index = np.arange(steps)
        if steps == 1:
            values = np.array([first])
        else:
            step = (last - first) / ty(steps - 1)
            values = np.where(index < steps // 2, first + step * index.astype(ty),
                              last - step * (steps - 1 - index).astype(ty))
        values = np.asarray(values, dtype=ty)  # an int dtype truncates, as a C cast does
        return Tensor(np.trunc(values) if dt.is_int else values, device=device, dtype=dt)

    @staticmethod
    def eye(n: int, m: int | None = None, dtype: DType | str | None = None,
            device: str | None = None, requires_grad: bool | None = None) -> Tensor:
        """The n x m identity matrix."""
        for name, size in (("n", n), ("m", m)):
            if size is not None and size < 0:
                raise RuntimeError(f"{name} must be greater or equal to 0, got {size}")
        out = (Tensor.arange(n, device=device).unsqueeze(1) ==
               Tensor.arange(m if m is not None else n, device=device))
        out = out.cast(dtype or dtypes.default_float)
        if requires_grad is not None:
            out.requires_grad = requires_grad
        return out

    @staticmethod
    def _host_rng() -> np.random.Generator:
        """The host's generator of randint, randperm and multinomial, made on first use (seeded
        by manual_seed, else 0): numpy.random costs 10 ms to import."""
        if Tensor._rng is None:
            Tensor._rng = np.random.default_rng(Tensor._seed)
        return Tensor._rng

    @staticmethod
    def manual_seed(seed: int = 0) -> None:
        """Make rand, randn, uniform and friends repeat the same numbers (the same on every
        device: they are computed there, by threefry from the seed; randint, randperm and
        multinomial are drawn on the host, from a generator seeded alike)."""
        Tensor._rng = np.random.default_rng(seed)
        Tensor._seed = seed
        for device, state in Tensor._rng_states.items():  # (assigned: a TinyJit may keep it)
            state.assign(Tensor(threefry.initial_state(seed), device=device,
                                dtype=dtypes.uint32)).realize()

    @staticmethod
    def _random_words(n: int, device: str | None) -> Tensor:
        """n random uint32 words of the device's threefry stream, computed now (so that they
        keep their values, whatever is drawn next); the stream moves on by n."""
        device = Device.canonicalize(device)
        if n >= 1 << 32:
            raise ValueError(f"tinyfw draws fewer than 2**32 random numbers at once, not {n}")
        if device not in Tensor._rng_states:
            Tensor._rng_states[device] = Tensor(threefry.initial_state(Tensor._seed),
                                                device=device, dtype=dtypes.uint32).realize()
        state = Tensor._rng_states[device]
        counters = Tensor.arange(n, device=device, dtype=dtypes.uint32) + state[2]
        key0, key1 = (threefry.Words(state[i].reshape(1).expand(n).uop) for i in (0, 1))
        block = threefry.Words(counters.uop)
        zero = threefry.Words(counters.uop.const_like(0))
        words = Tensor(threefry.threefry2x32(key0, key1, block, zero)[0].node).realize()
        state.assign(state + Tensor([0, 0, n], device=device, dtype=dtypes.uint32)).realize()
        return words

    @staticmethod
    def _random_floats(shape: tuple[int, ...], dtype: DType | str | None, device: str | None,
                       requires_grad: bool | None = None) -> Tensor:
        """Uniform samples in [0, 1) of a float dtype: a word's top bits, as many as the dtype's
        significand holds, times 2**-bits, so that no sample rounds up to 1 (torch's
        NotImplementedError for another dtype)."""
        dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
        if not dt.is_float:
            raise NotImplementedError(f"random floats not implemented for '{dt.name}'")
        words = Tensor._random_words(prod(shape), device)
        bits = RANDOM_BITS[dt]
        compute = dtypes.float64 if dt.itemsize == 8 else dtypes.float32
        out = ((words >> (32 - bits)).cast(compute) * 2.0 ** -bits).cast(dt).reshape(shape)
        return Tensor._with_grad(out, requires_grad)

    @staticmethod
    def _with_grad(out: Tensor, requires_grad: bool | None) -> Tensor:
        """out, its requires_grad set where one is given (a sample is a leaf)."""
        if requires_grad is not None:
            out.requires_grad = requires_grad
        return out

    @staticmethod
    def _new_shape(*sizes: Sizes) -> tuple[int, ...]:
        """A new tensor's shape, checked as torch does (numpy's ValueError would leak)."""
        shape = argfix(*sizes)
        for i, s in enumerate(shape):
            if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
                raise TypeError(f"argument 'size' must be tuple of ints, but found element of "
                                f"type {type(s).__name__} at pos {i}: {shape}")
        if any(s < 0 for s in shape):
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: "
                               f"{shape_str(shape)}")
        return tuple(int(s) for s in shape)

    @staticmethod
    def rand(*shape: Sizes, dtype: DType | str | None = None, device: str | None = None,
             requires_grad: bool | None = None) -> Tensor:
        """Uniform samples in [0, 1), computed on the device (threefry)."""
        return Tensor._random_floats(Tensor._new_shape(*shape), dtype, device, requires_grad)

    @staticmethod
    def randn(*shape: Sizes, dtype: DType | str | None = None, device: str | None = None,
              requires_grad: bool | None = None) -> Tensor:
        """Samples of the standard normal distribution, computed on the device: Box-Muller of
        two uniform samples, sqrt(-2 log u) cos(2 pi v), u in (0, 1]."""
        shape = Tensor._new_shape(*shape)
        dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
        if not dt.is_float:
            raise NotImplementedError(f"normal random floats not implemented for '{dt.name}'")
        compute = dtypes.float64 if dt == dtypes.float64 else dtypes.float32
        u = 1 - Tensor._random_floats(shape, compute, device)
        v = Tensor._random_floats(shape, compute, device)
        out = ((-2 * u.log()).sqrt() * (v * (2 * math.pi)).cos()).cast(dt)
        return Tensor._with_grad(out, requires_grad)

    @staticmethod
    def randint(*shape: Sizes, low: int = 0, high: int = 10, dtype: DType | str | None = None,
                device: str | None = None) -> Tensor:
        """Integers drawn uniformly from [low, high)."""
        if low >= high:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={low} >= to={high}")
        sample = Tensor._host_rng().integers(low, high, Tensor._new_shape(*shape))
        return Tensor(sample, device=device, dtype=dtype or dtypes.default_int)

    @staticmethod
    def uniform(*shape: Sizes, low: float = 0.0, high: float = 1.0,
                dtype: DType | str | None = None, device: str | None = None,
                requires_grad: bool | None = None) -> Tensor:
        """Uniform samples in [low, high), computed in float32 (float64 for float64); a sample
        that rounds up to high is low instead, as torch's CUDA kernel does (1 + (1 - 2**-24)
        is 2.0 in float32). Bounds that are not finite raise torch's RuntimeError."""
        for name, bound in (("from", low), ("to", high)):
            if not math.isfinite(bound):
                raise RuntimeError(f"{name} is out of bounds for float")
        if low > high:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                               f"from={low:g} > to={high:g}")
        dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
        compute = dtypes.float64 if dt == dtypes.float64 else dtypes.float32
        if high - low > float(np.finfo(compute.np).max):  # (the samples would be inf or NaN)
            raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<"
                               f"{'Double' if compute == dtypes.float64 else 'Float'}>::max(), "
                               f"but found to={high:g} and from={low:g} which result in "
                               f"to-from to exceed the limit")
        sample = Tensor._random_floats(Tensor._new_shape(*shape), compute, device)
        out = (sample * (high - low) + low).cast(dt)
        return Tensor._with_grad((out >= high).where(low, out), requires_grad)

    @staticmethod
    def kaiming_uniform(*sizes: Sizes, a: float = 0.01, **kwargs: Any) -> Tensor:
        """He initialization: uniform with a bound that keeps activations' variance steady."""
        shape = argfix(*sizes)
        bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(prod(shape[1:]))
        return Tensor.uniform(*shape, low=-bound, high=bound, **kwargs)

    @staticmethod
    def normal(*shape: Sizes, mean: float = 0.0, std: float = 1.0,
               dtype: DType | str | None = None, device: str | None = None,
               requires_grad: bool | None = None) -> Tensor:
        """Samples of the normal distribution of mean and std."""
        if not std >= 0:  # (a NaN std too, as torch)
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        out = Tensor.randn(Tensor._new_shape(*shape), dtype=dtype, device=device) * std + mean
        return Tensor._with_grad(out, requires_grad)

    @staticmethod
    def kaiming_normal(*sizes: Sizes, a: float = 0.01, **kwargs: Any) -> Tensor:
        """He initialization, normal: std sqrt(2 / (1 + a**2) / fan_in), fan_in prod(shape[1:])."""
        shape = argfix(*sizes)
        std = math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(prod(shape[1:]))
        return Tensor.normal(*shape, mean=0.0, std=std, **kwargs)

    @staticmethod
    def glorot_uniform(*sizes: Sizes, **kwargs: Any) -> Tensor:
        """Glorot (Xavier) initialization."""
        shape = argfix(*sizes)
        bound = math.sqrt(6 / (shape[0] + prod(shape[1:])))
        return Tensor.uniform(*shape, low=-bound, high=bound, **kwargs)

    @staticmethod
    def scaled_uniform(*sizes: Sizes, **kwargs: Any) -> Tensor:
        """Uniform samples in [-n**-0.5, n**-0.5), n the number of elements (tinygrad's)."""
        shape = Tensor._new_shape(*sizes)
        bound = max(prod(shape), 1) ** -0.5
        return Tensor.uniform(*shape, low=-bound, high=bound, **kwargs)

    @staticmethod
    def randperm(n: int, device: str | None = None, dtype: DType | str | None = None,
                 **kwargs: Any) -> Tensor:
        """A random permutation of 0 .. n-1 (int64 as torch, int32 on WEBGPU, unless dtype
        says)."""
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
        if n < 0:
            raise RuntimeError(f"n must be non-negative, got {n}")
        dtype = dtype if dtype is not None else index_dtype(_canonical(device))
        return Tensor(Tensor._host_rng().permutation(int(n)), device=device, dtype=dtype, **kwargs)

    def multinomial(self, num_samples: int = 1, replacement: bool = False) -> Tensor:
        """num_samples indices drawn from each row of weights self (1-D or 2-D), as torch:
        with replacement, or each index at most once. Drawn on the host, like rand."""
        if self.ndim not in (1, 2):
            raise RuntimeError(f"prob_dist must be 1 or 2 dim, got {self.ndim}")
        if not self.dtype.is_float:
            raise RuntimeError(f"multinomial only supports floating-point dtypes for input, "
                               f"got: {torch_name(self.dtype)}")
        if num_samples <= 0:
            raise RuntimeError("cannot sample n_sample <= 0 samples")
        if self.shape[-1] == 0:
            raise RuntimeError("invalid multinomial distribution (an empty distribution: no "
                               "category to sample)")
        weights = self._read(copy=True).astype(np.float64).reshape(-1, self.shape[-1])
        if not np.isfinite(weights).all() or (weights < 0).any():
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if (weights.sum(axis=1) <= 0).any():
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not replacement and num_samples > self.shape[-1]:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                               "replacement")
        rows = [Tensor._draw(w, num_samples, replacement) for w in weights]
        out = np.stack(rows).reshape(self.shape[:-1] + (num_samples,))
        return Tensor(out, device=self.device, dtype=index_dtype(self.device))

    @staticmethod
    def _draw(weights: np.ndarray, count: int, replacement: bool) -> np.ndarray:
        """count indices drawn with chances in proportion to weights. Without replacement, the
        count smallest of exponential samples scaled by 1/weight: a weighted draw in order, and
        once the weighted indices are used up the zero-weight ones follow, as torch does."""
        if replacement:
            return Tensor._host_rng().choice(len(weights), size=count, p=weights / weights.sum())
        with np.errstate(divide="ignore"):
            keys = Tensor._host_rng().exponential(size=len(weights)) / weights
        return np.argsort(keys, kind="stable")[:count]

    @staticmethod
    def const(value: Scalar, dtype: DType | str | None = None) -> Tensor:
        """A 0-d tensor of one value (tinygrad's const; torch.tensor(value))."""
        return Tensor(value, dtype=dtype)

    def const_like(self, value: Scalar, dtype: DType | str | None = None) -> Tensor:
        """value in self's shape and device, of self's dtype unless dtype says (tinygrad's)."""
        return self.full_like(value, dtype=dtype if dtype is not None else self.dtype)

    def full_like(self, fill_value: Scalar, dtype: DType | str | None = None,
                  device: str | None = None, requires_grad: bool | None = None) -> Tensor:
        """A tensor of self's shape (and dtype and device, unless given) filled with one value."""
        return Tensor.full(self.shape, fill_value, dtype or self.dtype, device or self.device,
                           requires_grad)

    def zeros_like(self, **kwargs: Any) -> Tensor: return self.full_like(0, **kwargs)
    def ones_like(self, **kwargs: Any) -> Tensor: return self.full_like(1, **kwargs)

    def empty_like(self, dtype: DType | str | None = None, device: str | None = None,
                   requires_grad: bool | None = None) -> Tensor:
        """An unfilled tensor of self's shape (and dtype and device, unless given)."""
        return Tensor.empty(self.shape, dtype=dtype or self.dtype, device=device or self.device,
                            requires_grad=requires_grad)

    def rand_like(self, **kwargs: Any) -> Tensor:
        """rand in self's shape, dtype and device (a float dtype must be given for an int self)."""
        kwargs.setdefault("device", self.device)
        kwargs.setdefault("dtype", self.dtype)
        return Tensor.rand(*self.shape, **kwargs)

    def randn_like(self, **kwargs: Any) -> Tensor:
        """randn in self's shape, dtype and device (a float dtype must be given for an int self)."""
        kwargs.setdefault("device", self.device)
        kwargs.setdefault("dtype", self.dtype)
        return Tensor.randn(*self.shape, **kwargs)

    @staticmethod
    @contextmanager
    def train(mode: bool = True) -> Iterator[None]:
        """Within this block Tensor.training is mode (layers like Dropout read it)."""
        previous, Tensor.training = Tensor.training, mode
        try:
            yield
        finally:
            Tensor.training = previous

    # --- broadcasting, and the plumbing of the elementwise ops (the ops: tinyfw/mixin/) ---
    def _operands(self, other: Tensor | Scalar, reverse: bool = False,
                  dtype: DType | None = None) -> tuple[Tensor, Tensor]:
        """Both operands as tensors of one dtype (PyTorch promotion) and one shape (broadcast)."""
        if isinstance(other, Tensor):
            if other.device != self.device:
                raise RuntimeError("Expected all tensors to be on the same device, but found at "
                                   f"least two devices, {self.device} and {other.device}!")
            out_dt = dtype or _promote_tensors(self, other)
            y = other
        elif isinstance(other, (bool, int, float, np.generic)):
            other = other.item() if isinstance(other, np.generic) else other
            if type(other) is int and not -2 ** 63 <= other < 2 ** 63:
                other = _past_int64(self.dtype, other)
            out_dt = dtype or scalar_result_type(self.dtype, other)
            # made at self's shape at once (the graph is the same as broadcasting it after)
            y = Tensor._of(const(other, out_dt, self.uop.device, self.uop.shape))
            x = self if self.dtype is out_dt else self.cast(out_dt)
            return (y, x) if reverse else (x, y)
        else:
            raise TypeError(f"unsupported operand type: Tensor and {type(other).__name__}")
        # (an operand already of out_dt is used as it is: its cast would be a new tensor of the
        # same node, requiring grad as it does, and is no part of the result)
        x = self if self.dtype is out_dt else self.cast(out_dt)
        y = y if y.dtype is out_dt else y.cast(out_dt)
        if reverse:
            x, y = y, x
        shape = broadcast_shape(x.shape, y.shape)
        return x._broadcast_to(shape), y._broadcast_to(shape)

    def _broadcast_to(self, shape: tuple[int, ...]) -> Tensor:
        if self.shape == shape:
            return self
        padded = (1,) * (len(shape) - self.ndim) + self.shape
        return self.reshape(padded).expand(shape)

    def _binary(self, op: Ops, other: Tensor | Scalar, reverse: bool = False) -> Tensor:
        x, y = self._operands(other, reverse)
        return x._result(x.uop.alu(op, y.uop), y)

    def _unary(self, op: Ops) -> Tensor:
        return self._result(self.uop.alu(op), self)

    def _floating(self) -> Tensor:
        """Self, cast to the default float if it is an int or bool (as exp, log, sqrt do)."""
        return self if self.dtype.is_float else self.cast(dtypes.default_float)

    def _with_gradient(self, rule: Callable[..., tuple[UOp | None, ...]],
                       inputs: tuple[Tensor, ...], params: tuple[Any, ...] = ()) -> Tensor:
        """This tensor's value, with rule giving its inputs their gradients in place of
        differentiating the ops that made it (a GradientOverride); ints keep their graph."""
        if not self.dtype.is_float:
            return self
        node = with_gradient(self.uop, tuple(t.uop for t in inputs),
                             GradientOverride(rule, params))
        return self._result(node, *inputs)

    def where(self, x: Tensor | Scalar, y: Tensor | Scalar) -> Tensor:
        """x where this tensor (the condition) is true, else y, all broadcast together."""
        if not isinstance(self, Tensor):
            raise TypeError("where(): argument 'condition' (position 1) must be Tensor, not "
                            f"{type(self).__name__}")
        if isinstance(x, Tensor):
            xt, yt = x._operands(y)
        elif isinstance(y, Tensor):
            yt, xt = y._operands(x)
        else:
            dt = promote_types(dtypes.from_py(x), dtypes.from_py(y))
            xt, yt = Tensor(const(x, dt, self.device, ())), Tensor(const(y, dt, self.device, ()))
        cond = self if self.dtype.is_bool else self != 0
        shape = broadcast_shape(cond.shape, xt.shape)
        cond, xt, yt = (t._broadcast_to(shape) for t in (cond, xt, yt))
        return xt._result(cond.uop.alu(Ops.WHERE, xt.uop, yt.uop), yt)

    # --- in-place writes (the operators a += b...: tinyfw/mixin/inplace.py) ---
    def _write(self, value: Tensor) -> Tensor:
        """torch's in-place write: self takes value (of self's shape, cast to self's dtype and
        sent to its device); a write to a view writes its base. Where self (or its base) or
        value takes part in a gradient, the write keeps the graph: the gradient flows to
        value, and to what was not overwritten. Otherwise it is an assign (a TinyJit keeps the
        state). Returns self."""
        self._check_leaf_write()
        root = self._view[0] if self._view is not None else self
        grads = (root._requires_grad or value._requires_grad) and not Tensor.no_grad and \
            self.dtype.is_float
        if not grads:
            return self.assign(value)
        if value.shape != self.shape:
            raise RuntimeError(f"assign of shape {shape_str(value.shape)} to a tensor of shape "
                               f"{shape_str(self.shape)}")
        node = value.uop.cast(self.dtype).copy_to(self.device)
        if self._view is None:  # (a where, not node alone: the old value's gradient is 0,
            self.uop = UOp.true_like(node).where(node, self.uop)  # not None, as torch's)
        else:
            root.uop = self._placed_in_base(node, root.uop)
            root._requires_grad, root._is_leaf = True, False
            root._refresh_views()
        self._requires_grad, self._is_leaf = True, False
        self._refresh_views()
        return self

    def to_(self, device: str) -> Tensor:
        """Move this tensor to another device in place (tinygrad's to_)."""
        moved = self.to(device)
        if self.requires_grad and self.is_leaf:
            self.uop = _buffer_node(moved.numpy(), moved.device, self.dtype)
        else:
            self.uop = moved.uop
        self._view = None
        self._refresh_views()
        return self

    # --- axes (the reductions are in tinyfw/mixin/reduce.py) ---
    def _axes(self, axis: AxisArg | Sequence[int]) -> tuple[int, ...]:
        """An axis argument (an int, a tuple, or None for all) as sorted positive axes."""
        if axis is None:
            return tuple(range(self.ndim))
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        normalized = [normalize_axis(a, self.ndim) for a in axes]
        for a in normalized:
            if normalized.count(a) > 1 and self.ndim:
                raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
        return tuple(sorted(set(normalized))) if self.ndim else ()

    # --- dtype (the facts and the casts by name: tinyfw/mixin/dtype_ops.py) ---
    def bitcast(self, dtype: DType | str) -> Tensor:
        """The same bits read as another dtype (torch's view(dtype)), in the graph; no gradient
        flows through it. To a dtype of another itemsize the last axis grows or shrinks by the
        ratio, the bytes of an element in little-endian order, as torch's; it must divide
        evenly (torch's RuntimeError). A bool's byte is 0 or 1: to and from bool it casts.
        (CL and CUDA compute float16 as float, and their conversions do not keep a NaN's
        payload: a float16 NaN stays a NaN there, its other bits may change.)"""
        dt = to_dtype(dtype)
        if dt == self.dtype:
            return self
        source = Tensor(self.uop.detach())
        if self.dtype.is_bool:
            return source.cast(dtypes.uint8).bitcast(dt)
        if dt.itemsize == self.dtype.itemsize:
            return Tensor(source.uop.cast(dt) if dt.is_bool else source.uop.bitcast(dt))
        sizes = f"view {torch_name(self.dtype)} as {torch_name(dt)} (different element sizes)"
        if self.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 to {sizes}")
        ratio = max(dt.itemsize, self.dtype.itemsize) // min(dt.itemsize, self.dtype.itemsize)
        if dt.itemsize > self.dtype.itemsize and self.shape[-1] % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} to {sizes}, but got "
                               f"{self.shape[-1]}")
        bits = source.bitcast(_UINTS[self.dtype.itemsize])
        word = _UINTS[1 if dt.is_bool else dt.itemsize]
        place = [256 ** (min(dt.itemsize, self.dtype.itemsize) * k) for k in range(ratio)]
        if dt.itemsize < self.dtype.itemsize:  # each element's bytes, lowest first
            wide = bits.unsqueeze(-1).expand(*bits.shape, ratio)
            parts = (wide // Tensor(place, self.device, bits.dtype)).cast(word)
            return parts.reshape(*self.shape[:-1], self.shape[-1] * ratio).bitcast(dt)
        parts = bits.cast(word).reshape(*self.shape[:-1], self.shape[-1] // ratio, ratio)
        shifted = parts * Tensor(place, self.device, word)
        joined = shifted[..., 0]
        for k in range(1, ratio):
            joined = joined | shifted[..., k]
        return joined.bitcast(dt)

    # tinygrad's helper: x as a tensor (its usum and uprod: tinyfw/mixin/arithmetic.py)
    def ufix(self, x: Tensor | Scalar) -> Tensor:
        """x as a tensor: a tensor unchanged, a Python scalar as a 0-d tensor of self's dtype
        (of the default float when x is a float and self is not)."""
        if isinstance(x, Tensor):
            return x
        dt = dtypes.default_float if isinstance(x, float) and not self.dtype.is_float \
            else self.dtype
        return Tensor(x, device=self.device, dtype=dt)


_UINTS = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}


def _contiguous_gradient(grad: UOp, node: UOp, x: UOp) -> tuple[UOp]:
    """contiguous_backward's gradient: the gradient itself, made contiguous."""
    return (grad.contiguous(),)
