"""Reductions: sum, max, min, any, all over axes, and argmax, argmin (mixed into Tensor).

Each is one REDUCE (Ops.ADD or Ops.MAX) of the tensor's node, its reduced axes then dropped
unless keepdim; min is a max of the values turned upside down, any and all are maxes of bools.
A long float sum is split in levels of partial sums (_reduce_chunk): one accumulator would
round once per value."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from tinyfw.device import Device
from tinyfw.dtype import DType, dtypes, to_dtype
from tinyfw.helpers import normalize_axis, prod, shape_str
from tinyfw.mixin.core import TensorCore, index_dtype
from tinyfw.mixin.derived import AxisArg
from tinyfw.uop.ops import Ops, UOp

if TYPE_CHECKING:
    from tinyfw.tensor import Tensor

# Float sums longer than SUM_SPLIT values are computed in two levels (Tensor._reduce_chunk),
# unless that would keep more than SUM_PARTIALS_MAX partial sums (64 MiB of float32).
SUM_SPLIT = 4096
SUM_CHUNK = 256
SUM_PARTIALS_MAX = 2**24


def _all_if_none_given(axis: Any) -> Any:
    """A reduction's axis argument, with no axes (an empty tuple or list) meaning all of them,
    as torch's sum, mean, amax, amin, var and std take it."""
    return None if isinstance(axis, (tuple, list)) and len(axis) == 0 else axis


class ReduceOps(TensorCore):
    """Reductions over axes, and the indices of extremes (argmax, argmin)."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---
    # Besides what is below: the elementwise ops (==, ~, neg, logical_not, isnan, cast, bool,
    # float), zeros and arange, and MovementOps (reshape, permute, pad, flatten).
    uop: UOp

    def _axes(self, axis: AxisArg) -> tuple[int, ...]:
        """An axis argument as sorted positive axes."""
        raise NotImplementedError

    def _result(self, uop: UOp, *sources: Tensor) -> Tensor:
        """A new tensor for uop, requiring grad when a source does."""
        raise NotImplementedError

    # --- the reductions ---

    def _reduce(self: Tensor, op: Ops, axis: AxisArg, keepdim: bool) -> Tensor:
        axes = self._axes(axis)
        chunk = self._reduce_chunk(op, prod(self.shape[i] for i in axes))
        if chunk is not None:
            return self._reduce_in_chunks(op, axes, keepdim, chunk)
        out = self._result(self.uop.reduce(op, axes), self)
        if keepdim:
            return out
        return out.reshape(tuple(s for i, s in enumerate(self.shape) if i not in axes))

    def _reduce_chunk(self: Tensor, op: Ops, n: int) -> int | None:
        """How many values each partial reduce takes when a reduce of n values is split in
        two levels (None: it is not). A float sum in one accumulator is off by about one
        rounding per value (the sum of 2e7 ones stops at 2**24), so a long float sum is
        made of partial sums of SUM_CHUNK values, recursively: each value then meets about
        log(n)/log(SUM_CHUNK) roundings. A device may also limit how long one thread loops."""
        if (op is Ops.ADD and self.dtype.is_float and n > SUM_SPLIT
                and self.numel() // n * -(-n // SUM_CHUNK) <= SUM_PARTIALS_MAX):
            return SUM_CHUNK
        limit = Device[self.device].max_reduce
        if limit is not None and n > limit:  # WEBGPU on lavapipe stops a shader at 65535
            return min(limit, math.isqrt(n - 1) + 1)
        return None

    def _reduce_in_chunks(self: Tensor, op: Ops, axes: tuple[int, ...], keepdim: bool,
                          chunk: int) -> Tensor:
        """A reduce over axes in levels: over groups of chunk values (the last group padded
        with the reduce's identity), then over the groups' results in groups of chunk again,
        until at most chunk are left, then over those."""
        kept = tuple(self.shape[i] for i in range(self.ndim) if i not in axes)
        n = prod(self.shape[i] for i in axes)
        order = tuple(i for i in range(self.ndim) if i not in axes) + axes
        values = self.permute(order).reshape(kept + (n,))
        identity = 0 if op is Ops.ADD else dtypes.min(self.dtype)
        while n > chunk:
            groups = -(-n // chunk)
            padded = values.pad([(0, 0)] * len(kept) + [(0, groups * chunk - n)], value=identity)
            values = padded.reshape(kept + (groups, chunk))._reduce_whole(op)
            n = groups
        out = values._reduce_whole(op)
        if keepdim:
            out = out.reshape(tuple(1 if i in axes else s for i, s in enumerate(self.shape)))
        return out

    def _reduce_whole(self: Tensor, op: Ops) -> Tensor:
        """The reduce over the last axis in one kernel loop, never split (a level of
        _reduce_in_chunks)."""
        out = self._result(self.uop.reduce(op, (self.ndim - 1,)), self)
        return out.reshape(self.shape[:-1])

    def sum(self: Tensor, axis: AxisArg = None, keepdim: bool = False,
            dtype: DType | str | None = None) -> Tensor:
        """The sum over axis (all axes when None), as torch: ints and bools sum into int64,
        float16 accumulates in float32; dtype casts the input first (as torch's dtype=). No axes
        (an empty tuple) means all of them, as torch's."""
        axis = _all_if_none_given(axis)
        if dtype is not None:
            x = self.cast(to_dtype(dtype))
        elif not self.dtype.is_float:
            x = self.cast(dtypes.int64)
        elif self.dtype.itemsize < 4:  # partial sums stay float32 between the two levels
            return self.float().sum(axis, keepdim).cast(self.dtype)
        else:
            x = self
        return x._reduce(Ops.ADD, axis, keepdim)

    def max(self: Tensor, axis: AxisArg = None, keepdim: bool = False) -> Tensor:
        """The largest value over axis (ties share the gradient, as torch.amax; NaN wins); no
        axes (an empty tuple) means all of them, as torch.amax's."""
        axis = _all_if_none_given(axis)
        self._check_reducible("max", axis)
        return self._reduce(Ops.MAX, axis, keepdim)

    def _check_reducible(self: Tensor, name: str, axis: AxisArg,
                         error: type = RuntimeError) -> None:
        """torch's errors for a max, min, argmax or argmin over nothing (an empty axis has no
        largest value; an empty kept axis is fine: the result is empty too)."""
        if self.numel() == 0 and axis is None:
            raise error(f"{name}(): Expected reduction dim to be specified for input.numel() "
                        "== 0. Specify the reduction dim with the 'dim' argument.")
        for i in self._axes(axis):
            if self.shape[i] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {i} to have non-zero size. "
                                 f"(input of shape {shape_str(self.shape)})")

    def min(self: Tensor, axis: AxisArg = None, keepdim: bool = False) -> Tensor:
        """The smallest value over axis: a max of the values turned upside down."""
        axis = _all_if_none_given(axis)
        self._check_reducible("min", axis)
        if self.dtype.is_bool:
            return self.logical_not().max(axis, keepdim).logical_not()
        if not self.dtype.is_float:  # ~x = -x - 1 reverses the order without overflowing
            return ~((~self).max(axis, keepdim))
        return -((-self).max(axis, keepdim))

    def any(self: Tensor, axis: AxisArg = None, keepdim: bool = False) -> Tensor:
        """Whether any value is nonzero over axis: False over nothing (an empty axis), as
        torch's; no axes (an empty tuple) reduces none, as torch's."""
        return self.bool()._reduce(Ops.MAX, axis, keepdim)

    def all(self: Tensor, axis: AxisArg = None, keepdim: bool = False) -> Tensor:
        """Whether every value is nonzero over axis: True over nothing, as torch's."""
        return self.logical_not().any(axis, keepdim).logical_not()

    def argmax(self: Tensor, axis: int | None = None, keepdim: bool = False) -> Tensor:
        """The index of the first largest value along axis (of the flattened tensor if None);
        a NaN counts as the largest, as in torch."""
        return self._arg_extreme("argmax", axis, keepdim)

    def _arg_extreme(self: Tensor, name: str, axis: int | None, keepdim: bool) -> Tensor:
        """argmax (or, for argmin, the argmax of the values turned upside down)."""
        self._check_reducible(name, axis, IndexError)
        if axis is None:
            return self.flatten()._arg_extreme(name, 0, False)
        if self.ndim == 0:  # a scalar is its own extreme, at index 0 (axis 0 or -1, as torch)
            return type(self).zeros((), dtype=index_dtype(self.device), device=self.device)
        if name == "argmin":
            flipped = self.logical_not() if self.dtype.is_bool else \
                -self if self.dtype.is_float else ~self  # ~x = -x - 1: no overflow
            return flipped._arg_extreme("argmax", axis, keepdim)
        axis = normalize_axis(axis, self.ndim)
        n = self.shape[axis]
        countdown = type(self).arange(n, 0, -1, device=self.device).reshape(
            (n,) + (1,) * (self.ndim - axis - 1))
        is_max = self == self.max(axis, keepdim=True)
        if self.dtype.is_float:  # the max is NaN where there is one: then the NaNs are its place
            is_max = is_max | self.isnan()
        first = n - (is_max.cast(dtypes.default_int) * countdown).max(axis, keepdim)
        return first.cast(index_dtype(self.device))  # int64, as torch (int32 on WEBGPU)

    def argmin(self: Tensor, axis: int | None = None, keepdim: bool = False) -> Tensor:
        """The index of the first smallest value along axis (NaN counts as the smallest)."""
        return self._arg_extreme("argmin", axis, keepdim)
