"""Scans (cumsum, cumprod, cummax, cummin, logcumsumexp) and sorting (sort, argsort, topk).

Every op here works along the last axis of a transposed view and is made of elementwise ops,
pads, shrinks and reshapes only, so it runs on every device and its gradient comes for free.

- The scans are Hillis-Steele doubling: after the step with shift s each position holds the
  combination of the 2s values ending there. ceil(log2 n) steps, each one kernel over the
  whole tensor (memory O(n)); a float cumsum is then a tree sum: each output meets about
  log2(n) roundings, not n.
- sort finds the indices first and then picks the values at them (exact bits, and the
  gradient of a pick: each output's gradient goes to the place it came from, two kernels).
  The key compared is (value, original index), so it is always stable (ties keep their input
  order, in both directions) and NaN sorts as the largest value, as torch's stable sort.
  An axis of at most RANK_SORT_MAX values is ranked: each value's place is the number of
  values before it (all n * n comparisons, one kernel), and the index at each place is found
  from those ranks (one more); longer axes go through a bitonic network over the axis padded
  to the next power of two N: log2(N) * (log2(N) + 1) / 2 compare-exchange steps, each O(N)
  memory and two kernels.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tinyfw.dtype import DType, dtypes, to_dtype
from tinyfw.helpers import normalize_axis
from tinyfw.mixin.core import TensorCore, index_dtype
from tinyfw.mixin.indexing import _selected

if TYPE_CHECKING:
    from tinyfw.tensor import Tensor

def _not_implemented(name: str, dtype: DType) -> NotImplementedError:
    """torch's error for an op that has no kernel for a dtype."""
    return NotImplementedError(f'"{name}" not implemented for \'{dtype}\'')


def _shift(x: Tensor, s: int, value: float) -> Tensor:
    """x moved s places later along the last axis, value filling the first s places."""
    n = x.shape[-1]
    padded = x.pad([(0, 0)] * (x.ndim - 1) + [(s, 0)], value=value)
    return padded.shrink([None] * (x.ndim - 1) + [(0, n)])


def _scan(parts: list[Tensor], combine: Callable[[list[Tensor], list[Tensor]], list[Tensor]],
          identities: list[float]) -> list[Tensor]:
    """The inclusive scan along the last axis of tensors combined together (values, indices):
    combine(earlier, later) must be associative and identities its identity element."""
    shift = 1
    while shift < parts[0].shape[-1]:
        earlier = [_shift(p, shift, v) for p, v in zip(parts, identities)]
        parts = [p.contiguous() for p in combine(earlier, parts)]
        shift *= 2
    return parts


def _add(a: list[Tensor], b: list[Tensor]) -> list[Tensor]:
    """The sum of two partial sums."""
    return [a[0] + b[0]]


def _mul(a: list[Tensor], b: list[Tensor]) -> list[Tensor]:
    """The product of two partial products."""
    return [a[0] * b[0]]


def _log_add_exp(a: list[Tensor], b: list[Tensor]) -> list[Tensor]:
    """log(exp(a) + exp(b)) without overflow; equal infinities give themselves (no inf - inf),
    and their gradient is finite."""
    x, y = a[0], b[0]
    same = x == y
    gap = same.where(0.0, x - y).abs()
    return [x.maximum(y) + same.where(0.0, -gap).exp().log1p()]


def _later_max(a: list[Tensor], b: list[Tensor]) -> list[Tensor]:
    """(value, index) of the running max: the later one on a tie or a NaN (torch's rule: a NaN
    stays once seen, the index is that of the last NaN, or of the last equal maximum)."""
    (av, ai), (bv, bi) = a, b
    take = bv >= av
    if av.dtype.is_float:
        take = bv.isnan() | (take & av.isnan().logical_not())
    return [take.where(bv, av), take.where(bi, ai)]


def _before(a: tuple[Tensor, Tensor], b: tuple[Tensor, Tensor], n: int,
            descending: bool) -> Tensor:
    """Whether element a goes before element b: by value (NaN the largest), then by original
    index; an index >= n marks padding, which goes after everything."""
    (av, ai), (bv, bi) = a, b
    lt = av > bv if descending else av < bv
    eq = av == bv
    if av.dtype.is_float:
        a_nan, b_nan = av.isnan(), bv.isnan()
        lt = lt | (a_nan & b_nan.logical_not() if descending else b_nan & a_nan.logical_not())
        eq = eq | (a_nan & b_nan)
    return (ai < n) & ((bi >= n) | lt | (eq & (ai < bi)))


def _halves(t: Tensor, blocks: int, half: int) -> tuple[Tensor, Tensor]:
    """The first and second half of each of the blocks along the last axis."""
    lead = t.shape[:-1]
    t = t.reshape(lead + (blocks, 2, half))
    top = t.shrink([None] * (len(lead) + 1) + [(0, 1), None])
    bottom = t.shrink([None] * (len(lead) + 1) + [(1, 2), None])
    return top.reshape(lead + (blocks, half)), bottom.reshape(lead + (blocks, half))


def _exchange(v: Tensor, i: Tensor, half: int, mirror: bool, n: int,
              descending: bool) -> tuple[Tensor, Tensor]:
    """One bitonic step: in each block of 2 * half, element k of the first half and element k
    of the second (element half - 1 - k when mirror) are put in order."""
    shape, blocks = v.shape, v.shape[-1] // (2 * half)
    (tv, bv), (ti, bi) = _halves(v, blocks, half), _halves(i, blocks, half)
    if mirror:
        bv, bi = bv.flip(-1), bi.flip(-1)
    swap = _before((bv, bi), (tv, ti), n, descending)
    first = (swap.where(bv, tv), swap.where(bi, ti))
    second = (swap.where(tv, bv), swap.where(ti, bi))
    if mirror:
        second = (second[0].flip(-1), second[1].flip(-1))
    out = [type(f).cat(f.unsqueeze(-2), s.unsqueeze(-2), dim=-2).reshape(shape).contiguous()
           for f, s in zip(first, second)]
    return out[0], out[1]


# The longest axis sort ranks with n * n comparisons (few kernels) rather than a bitonic
# network (two kernels per step: 72 steps for 256 values, 136 for 4096).
RANK_SORT_MAX = 256


def _sorting_indices(x: Tensor, descending: bool) -> Tensor:
    """The indices that sort x along its last axis (at least 2 long), stably."""
    n = x.shape[-1]
    if n > RANK_SORT_MAX:
        return _bitonic(x, descending)[1]
    places = type(x).arange(n, device=x.device)
    # rank[k]: how many elements j go before element k (a permutation of 0..n-1)
    before_k = _before((x.unsqueeze(-2), places.unsqueeze(-2)),
                       (x.unsqueeze(-1), places.unsqueeze(-1)), n, descending)
    rank = before_k.sum(-1, dtype=places.dtype)
    # at place r, the k whose rank is r
    at_place = rank.unsqueeze(-2) == places.unsqueeze(-1)
    return at_place.where(places, 0).sum(-1, dtype=places.dtype)


def _bitonic(x: Tensor, descending: bool) -> tuple[Tensor, Tensor]:
    """x sorted along its last axis (at least 2 long), with the original indices."""
    n = x.shape[-1]
    stages = (n - 1).bit_length()
    size = 1 << stages
    v = x.pad([(0, 0)] * (x.ndim - 1) + [(0, size - n)])
    i = type(x).arange(size, device=x.device).expand(v.shape)
    for stage in range(1, stages + 1):
        v, i = _exchange(v, i, 1 << (stage - 1), True, n, descending)
        for step in range(stage - 1, 0, -1):
            v, i = _exchange(v, i, 1 << (step - 1), False, n, descending)
    keep = [None] * (x.ndim - 1) + [(0, n)]
    return v.shrink(keep), i.shrink(keep)


class ScanOps(TensorCore):
    """Cumulative ops and sorting along one axis, as torch computes them."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---
    # Besides what is below: the elementwise ops (+, *, <, ==, where, maximum, isnan, exp,
    # log1p, cast, ...) and MovementOps (pad, shrink, reshape, flip, transpose, cat).

    @staticmethod
    def arange(start: int | float, stop: int | float | None = None, step: int | float = 1,
               dtype: DType | str | None = None, device: str | None = None) -> Tensor:
        """Values from start up to (not including) stop, step apart."""
        raise NotImplementedError

    def contiguous(self) -> Tensor:
        """The same values in a buffer of their own: a kernel boundary."""
        raise NotImplementedError

    # --- helpers ---

    def _along(self: Tensor, axis: int, fn: Callable[[Tensor], list[Tensor]]) -> list[Tensor]:
        """fn applied along axis (a 0-d tensor counts as one of length 1), results put back."""
        if self.ndim == 0:
            normalize_axis(axis, 0)
            return [out.reshape(()) for out in fn(self.reshape(1))]
        axis = normalize_axis(axis, self.ndim)
        return [out.transpose(axis, -1) for out in fn(self.transpose(axis, -1))]

    def _accumulating(self: Tensor, dtype: DType | str | None) -> tuple[Tensor, DType]:
        """The values a cumsum or cumprod accumulates (float32 for a half type) and the dtype of
        its result: dtype when given, int64 for ints and bools as torch, else the input's."""
        out = to_dtype(dtype) if dtype is not None else \
            self.dtype if self.dtype.is_float else dtypes.int64
        work = dtypes.float32 if out.is_float and out.itemsize < 4 else out
        return self.cast(work), out

    # --- scans ---

    def cumsum(self: Tensor, axis: int = 0, dtype: DType | str | None = None) -> Tensor:
        """The running sum along axis (ints and bools sum into int64, as torch)."""
        x, out = self._accumulating(dtype)
        return x._along(axis, lambda t: _scan([t], _add, [0]))[0].cast(out)

    def cumprod(self: Tensor, axis: int = 0, dtype: DType | str | None = None) -> Tensor:
        """The running product along axis; its gradient is exact at zeros (no division)."""
        x, out = self._accumulating(dtype)
        return x._along(axis, lambda t: _scan([t], _mul, [1]))[0].cast(out)

    def cummax(self: Tensor, axis: int = 0) -> tuple[Tensor, Tensor]:
        """The running max along axis and the index where it was found: the last index on a
        tie, and once a NaN is seen the values stay NaN (torch's rule)."""
        if self.dtype.is_bool:
            values, indices = self.cast(dtypes.int32).cummax(axis)
            return values.cast(dtypes.bool), indices

        def run(t: Tensor) -> list[Tensor]:
            """The (value, index) scan along the last axis."""
            index = type(t).arange(t.shape[-1], device=t.device).expand(t.shape)
            return _scan([t, index], _later_max, [dtypes.min(t.dtype), 0])
        values, indices = self._along(axis, run)
        return values, indices.cast(index_dtype(self.device))  # int64, as torch

    def cummin(self: Tensor, axis: int = 0) -> tuple[Tensor, Tensor]:
        """The running min along axis and its index (the last one on a tie; NaN stays)."""
        if self.dtype.is_bool:
            values, indices = self.logical_not().cummax(axis)
            return values.logical_not(), indices
        if self.dtype.is_float:
            values, indices = (-self).cummax(axis)
            return -values, indices
        values, indices = (~self).cummax(axis)  # ~x = -x - 1 reverses the order, no overflow
        return ~values, indices

    def logcumsumexp(self: Tensor, axis: int = 0) -> Tensor:
        """log(cumsum(exp(x))) along axis, computed without overflow (floats only, as torch)."""
        if not self.dtype.is_float:
            raise _not_implemented("logcumsumexp", self.dtype)
        x = self.float() if self.dtype.itemsize < 4 else self
        neg_inf = dtypes.min(x.dtype)
        return x._along(axis, lambda t: _scan([t], _log_add_exp, [neg_inf]))[0].cast(self.dtype)

    # --- sorting ---

    def sort(self: Tensor, dim: int = -1, descending: bool = False,
             stable: bool = False) -> tuple[Tensor, Tensor]:
        """(values, indices) sorted along dim; always stable (equal values keep their order,
        stable= is accepted for torch's signature) and NaN sorts as the largest value."""
        def run(t: Tensor) -> list[Tensor]:
            """The sort along the last axis."""
            if t.shape[-1] <= 1:
                return [t, type(t).arange(t.shape[-1], device=t.device).expand(t.shape)]
            key = (t.cast(dtypes.int32) if t.dtype.is_bool else t).detach()
            indices = _sorting_indices(key, descending)
            hot = indices.unsqueeze(-1) == type(t).arange(t.shape[-1], device=t.device)
            return [_selected(hot, t.unsqueeze(-2), -1), indices]
        values, indices = self._along(dim, run)
        return values, indices.cast(index_dtype(self.device))  # int64, as torch

    def argsort(self: Tensor, dim: int = -1, descending: bool = False,
                stable: bool = False) -> Tensor:
        """The indices that sort the tensor along dim (stable, NaN the largest)."""
        return self.sort(dim, descending, stable)[1]

    def topk(self: Tensor, k: int, dim: int = -1, largest: bool = True,
             sorted_: bool = True) -> tuple[Tensor, Tensor]:
        """The k largest (or smallest) values along dim and their indices, in sorted order
        (also when sorted_ is False, which torch allows); among equal values the first ones."""
        length = self.shape[normalize_axis(dim, self.ndim)] if self.ndim else 1
        if not isinstance(k, int) or isinstance(k, bool):
            raise TypeError(f"topk(): argument 'k' must be int, not {type(k).__name__}")
        if not 0 <= k <= length:
            raise RuntimeError("selected index k out of range")
        values, indices = self.sort(dim, descending=largest)
        if self.ndim == 0:
            return values, indices
        axis = normalize_axis(dim, self.ndim)
        keep = [(0, k) if i == axis else None for i in range(self.ndim)]
        return values.shrink(keep), indices.shrink(keep)
