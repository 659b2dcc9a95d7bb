"""Matrix factorizations of the last two axes, batched over the others, made of Tensor ops.

- qr: Householder reflections with LAPACK's choices (geqrf, then orgqr), so Q and R are
  torch.linalg.qr's: each reflection sends the column to -sign(its diagonal) times its norm,
  and a column already zero below the diagonal is left as it is (no reflection).
- svd: one-sided Jacobi (Hestenes). Rotations of pairs of columns make them orthogonal: A V =
  W, with V orthogonal, and then W's column norms are the singular values and its normalized
  columns the left singular vectors. Each round rotates n/2 disjoint pairs at once; n - 1
  rounds (a round-robin tournament) meet every pair once: a sweep. A fixed number of sweeps
  (no convergence test read back on the host) keeps it lazy. A round is three kernels, the
  same in every round; when no gradient is wanted a TinyJit replays them from the third
  round on (engine/capture.py, replayed), as scheduling them anew would take most of the time.
- newton_schulz: the odd polynomial iteration that drives a matrix's singular values to 1.
- inverse: Gauss-Jordan elimination with partial pivoting (torch's pivots: LAPACK's getrf),
  a static loop over the n columns; a zero pivot (a singular matrix) raises LinAlgError when
  the result is computed (a deferred check: the pivots are data), as torch.linalg.inv raises.
- cross: the cross product of 3-vectors along one axis, torch.cross's and linalg.cross's.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tinyfw.dtype import DType, dtypes, torch_name
from tinyfw.helpers import normalize_axis, shape_str
from tinyfw.engine import realize
from tinyfw.engine.capture import replayed
from tinyfw.mixin.core import TensorCore

if TYPE_CHECKING:
    from tinyfw.tensor import Tensor
    from tinyfw.uop.ops import UOp


class LinAlgError(RuntimeError):
    """A linear algebra function's input it cannot take (a singular matrix to invert), as
    torch.linalg.LinAlgError: a RuntimeError."""


def _check_matrix(x: Tensor, name: str, kernel: str) -> None:
    """torch's errors for a linalg function given fewer than 2 axes or a non-float dtype."""
    if x.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions. "
                           f"(got shape {shape_str(x.shape)})")
    if not x.dtype.is_float:
        raise RuntimeError(f"linalg.{name}: Expected a floating point or complex tensor as "
                           f"input. Got {torch_name(x.dtype)}")
    if x.dtype.itemsize < 4:  # torch's CPU LAPACK has no half kernels
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_name(x.dtype)}'")


def _identity(x: Tensor, n: int) -> Tensor:
    """The n x n identity in x's dtype and device, expanded over x's batch axes."""
    eye = type(x).eye(n, dtype=x.dtype, device=x.device)
    return eye.expand(*x.shape[:-2], n, n)


def _mT(x: Tensor) -> Tensor:
    """The last two axes swapped: the transpose of each matrix."""
    return x.transpose(-2, -1)


def scale_of(a: Tensor) -> Tensor | float:
    """A power of two near the largest |entry| of each matrix, (..., 1, 1), 1 for a zero, empty
    or non-finite one, and no part of the graph: dividing by it is exact and brings the entries
    near 1, so that their squares (the norms) neither overflow nor underflow to 0."""
    if a.numel() == 0:
        return 1.0
    big = a.detach().abs().max((-2, -1), keepdim=True)
    usable = (big > 0) & big.isfinite()
    return usable.where(big, 1).log2().floor().exp2()


# --- QR ---

def householder(a: Tensor) -> tuple[Tensor, Tensor]:
    """(Q, R): Q (m x m) the product of the reflections, R (m x n) upper triangular, A = Q R,
    the reflections found on A scaled by a power of two (scale_of)."""
    m, n = a.shape[-2:]
    scale = scale_of(a)
    q, r = _identity(a, m), a / scale
    # (with m <= n, the step of the last row reflects nothing, as it has nothing below its
    # diagonal, but keeps Q in the graph: a 1 x n A's Q requires grad, as torch's)
    for k in range(min(m, n)):
        q, r = _reflect(q, r, k)
    return q, r.triu() * scale


def _flags(x: Tensor, flags: np.ndarray) -> Tensor:
    """A bool tensor of host flags on x's device (data, not constants of the kernels)."""
    return type(x)(flags, device=x.device)


def _reflect(q: Tensor, r: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The reflection H = I - tau v v^T that zeroes column k of r below the diagonal, applied:
    (q H, H r). As LAPACK's dlarfg: v[k] = 1, beta = -sign(alpha) * norm becomes r[k, k], and
    a column with zeros below the diagonal already is left alone (tau = 0)."""
    m, n = r.shape[-2:]
    # k comes in as data (one buffer), not as a slice or a constant: the kernels of every step
    # are then the same, compiled once
    step = type(r)(k, device=r.device, dtype=dtypes.int32)
    rows, columns = type(r).arange(m, device=r.device), type(r).arange(n, device=r.device)
    at_row, under = rows == step, rows > step
    column = (columns == step).where(r, 0).sum(-1)
    alpha = at_row.where(column, 0).sum(-1, keepdim=True)
    below = under.where(column, 0)
    tail = below.square().sum(-1, keepdim=True)
    norm = (alpha.square() + tail).sqrt()
    beta = (alpha < 0).where(norm, -norm)
    active = tail != 0
    tau = active.where((beta - alpha) / active.where(beta, 1), 0).unsqueeze(-1)
    v = at_row.where(1.0, below / active.where(alpha - beta, 1)).cast(r.dtype)
    r = r - tau * v.unsqueeze(-1) * (v.unsqueeze(-2) @ r)
    q = q - tau * (q @ v.unsqueeze(-1)) * v.unsqueeze(-2)
    return q.contiguous(), r.contiguous()


# --- SVD ---

def sweeps(n: int) -> int:
    """Jacobi sweeps for n columns: ceil(log2 n) + 5. Random, graded (singular values from 1 to
    1e-6) and clustered (1 +- 1e-3) matrices of 4 to 64 columns needed ceil(log2 n) + 3 to
    reach float64's rounding level; two more are the margin."""
    return max(n - 1, 1).bit_length() + 5


def circle_shuffle(n: int) -> np.ndarray:
    """The pairing of the round-robin tournament (circle method) for n (even) columns, in slots:
    each round pairs the columns of slots 2i and 2i + 1. Seat i of the circle is slot 2i for
    the first half, slot 2(n - 1 - i) + 1 for the second (seat i faces seat n - 1 - i); between
    rounds seat 0 stays and every other column moves one seat on. Returned as where each slot's
    column goes: new slot j takes old slot moved[j]. n - 1 rounds meet every pair once."""
    half = n // 2

    def slot(seat: int) -> int:
        """The slot of a seat of the circle."""
        return 2 * seat if seat < half else 2 * (n - 1 - seat) + 1
    moved = np.zeros(n, dtype=np.int64)
    for seat in range(n):
        next_seat = seat if seat == 0 else 1 if seat == n - 1 else seat + 1
        moved[slot(next_seat)] = slot(seat)
    return moved


def _pick(x: Tensor, hot: Tensor) -> Tensor:
    """Columns of x chosen by a one-hot (n, n) matrix: column j of the result is column i of x
    where hot[i, j] (hot may have x's batch axes). A selection, not a product: an inf stays
    an inf."""
    return hot.unsqueeze(-3).where(x.unsqueeze(-1), 0).sum(-2)


def _rotation_tangent(gap: Tensor, gamma: Tensor) -> Tensor:
    """t = tan(theta) of the rotation making a pair orthogonal: the root of t^2 + 2 zeta t - 1
    of smaller size, zeta = gap / (2 gamma). Written with whichever of zeta and 1 / zeta is at
    most 1 in size, so that nothing overflows (and no gradient is inf or nan); t = 0 when the
    pair is orthogonal already, t = 1 (45 degrees) for equal norms."""
    flat = gap.abs() >= 2 * gamma.abs()
    rho = 2 * gamma / (gap == 0).where(1, gap)  # 1 / zeta
    t_flat = rho / (1 + (1 + rho.square()).sqrt())
    zeta = gap / (2 * flat.where(1, gamma))
    t_steep = (zeta >= 0).where(1, -1) / (zeta.abs() + (1 + zeta.square()).sqrt())
    return flat.where(t_flat, t_steep)


def _jacobi_round(w: Tensor, v: Tensor, shuffle: Tensor) -> tuple[Tensor, Tensor]:
    """Every pair of columns (2i, 2i + 1) of w rotated to be orthogonal, the same rotations on
    v's, then the columns moved to their slots of the next round. For a pair (x, y) of norms
    a, b and product g: x' = c x - s y, y' = s x + c y, t = s / c from zeta = (b - a) / 2g.
    Three kernels: the pairs' norms and products (one reduce), then w and v."""
    half = w.shape[-1] // 2
    pairs = w.reshape(*w.shape[:-1], half, 2)
    # [x, y, x] * [x, y, y] summed over the rows: a, b and g of each pair
    cat = type(w).cat
    stats = (cat(pairs, pairs[..., :1], dim=-1) * cat(pairs, pairs[..., 1:], dim=-1)).sum(-3)
    a, b, g = stats[..., 0], stats[..., 1], stats[..., 2]
    t = _rotation_tangent(b - a, g).contiguous()
    c = 1 / (1 + t.square()).sqrt()
    signs = type(w)([-1.0, 1.0], device=w.device, dtype=w.dtype)
    cos, sin = c.unsqueeze(-1).unsqueeze(-3), (c * t).unsqueeze(-1).unsqueeze(-3) * signs

    def rotate(x: Tensor) -> Tensor:
        """The pairs of x's columns rotated, each column then moved to its next slot."""
        pairs = x.reshape(*x.shape[:-1], half, 2)
        return _pick((cos * pairs + sin * pairs.flip(-1)).reshape(x.shape), shuffle)
    return rotate(w).contiguous(), rotate(v).contiguous()


def jacobi(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(W, V, pad): A' V = W for A' = A with a zero column more when A has an odd number of
    them, V orthogonal and W's columns orthogonal to each other, in slot order; pad flags the
    slot of that zero column (orthogonal to all, it is never rotated)."""
    n = a.shape[-1]
    even = n + n % 2
    w = a.pad([(0, 0)] * (a.ndim - 1) + [(0, even - n)]).contiguous()
    v = _identity(a, even).contiguous()
    moved = circle_shuffle(even)
    hot = np.zeros((even, even), dtype=bool)
    hot[moved, np.arange(even)] = True
    shuffle = _flags(a, hot)
    slots = np.arange(even)  # the column of A' in each slot
    step = _jacobi_round if a.requires_grad else replayed(_jacobi_round)
    for _ in range(sweeps(even) * (even - 1)):
        w, v = step(w, v, shuffle)
        slots = slots[moved]
    return w, v, _flags(a, slots >= n)


def descending(values: Tensor) -> Tensor:
    """The one-hot (..., n, n) matrix that puts values (..., n) in descending order, ties in
    their order: value j goes to place #(values before it in that order)."""
    n = values.shape[-1]
    mine, other = values.unsqueeze(-2), values.unsqueeze(-1)  # [i, j]: other i, mine j
    index = type(values).arange(n, device=values.device)
    earlier = (index.unsqueeze(-1) < index).where(other >= mine, other > mine)
    place = earlier.cast(dtypes.int32).sum(-2, dtype=dtypes.int32)  # (int64 is not everywhere)
    return place.unsqueeze(-1) == index


def _complete(u: Tensor, keep: bool) -> Tensor:
    """Orthonormal columns (and zero ones, after them) as the first columns of an orthogonal
    matrix: Householder QR of u, each column's sign put back from R's diagonal. The columns
    that complete the basis (all when keep, else none) take no gradient, as in torch."""
    q, r = householder(u)
    k = u.shape[-1]
    signs = (r.diagonal(0, -2, -1) < 0).where(-1.0, 1.0).cast(u.dtype).unsqueeze(-2)
    own = q[..., :k] * signs
    if not keep or q.shape[-1] == k:
        return own
    return type(u).cat(own, q[..., k:].detach(), dim=-1)


def svd_tall(a: Tensor, full_matrices: bool) -> tuple[Tensor, Tensor, Tensor]:
    """(U, S, V) of a matrix with at least as many rows as columns (V, not V^T). The padding
    column, if any, sorts last (key -1) and is dropped, with its row of V."""
    n = a.shape[-1]
    scale = scale_of(a)  # rotated scaled by a power of two, so that no norm overflows
    w, v, pad = jacobi(a / scale)
    norms = w.square().sum(-2)
    order = descending(pad.where(-1, norms))
    s = _pick(norms.unsqueeze(-2), order).squeeze(-2)[..., :n].sqrt()
    w, v = _pick(w, order)[..., :n], _pick(v, order)[..., :n, :n].contiguous()
    u = (w / (s == 0).where(1, s).unsqueeze(-2)).contiguous()
    scale_s = scale if isinstance(scale, float) else scale.squeeze(-1)
    return _complete(u, full_matrices), s * scale_s, v


# --- Newton-Schulz ---

def _odd_polynomial(g: Tensor, params: Sequence[float]) -> Tensor:
    """sum_i params[i] * (G G^T)^i G."""
    gram = g @ _mT(g)
    term, total = g, params[0] * g
    for p in params[1:]:
        term = gram @ term
        total = total + p * term
    return total


# --- inverse ---

def gauss_jordan(a: Tensor) -> tuple[Tensor, Tensor]:
    """(inverse, pivots) of a batch of square matrices (..., n, n): [A | I] reduced to
    [I | A^-1] a column at a time, the row of the first largest |entry| on or below the
    diagonal swapped up to be the pivot (torch's LU pivots); pivots (..., n) are U's diagonal.
    A zero pivot leaves inf and nan (the caller checks the pivots)."""
    n = a.shape[-1]
    rows = type(a).arange(n, device=a.device)
    m = type(a).cat(a, _identity(a, n), dim=-1)  # (..., n, 2n)
    pivots = []
    for k in range(n):
        below = (rows >= k).where(m[..., k].abs(), -1)  # rows above k are pivots already
        picked = (rows == below.argmax(-1).unsqueeze(-1)).unsqueeze(-1)  # (..., n, 1)
        at_k = (rows == k).unsqueeze(-1)  # (n, 1)
        pivot_row = picked.where(m, 0).sum(-2).unsqueeze(-2)  # (..., 1, 2n)
        m = at_k.where(pivot_row, picked.where(m[..., k:k + 1, :], m))  # the two rows swapped
        pivot = pivot_row[..., k:k + 1]
        pivots.append(pivot.reshape(pivot.shape[:-2]))
        unit = pivot_row / pivot  # the pivot row, scaled to a 1 on the diagonal
        m = at_k.where(unit, m - m[..., k:k + 1] * unit).contiguous()
    return m[..., n:], type(a).stack(*pivots, dim=-1)


def invert(a: Tensor, message: str) -> Tensor:
    """The inverse of each square matrix of a (float, at least 2-D, checked by the caller),
    raising LinAlgError(message) when it is computed if a pivot was 0 (message may name
    {value[0]}, the first such matrix of the batch, and {value[1]}, its first zero pivot,
    from 1). Its gradient torch's: -A^-T g A^-T."""
    n = a.shape[-1]
    if a.numel() == 0:
        return a * 1
    inverse, pivots = gauss_jordan(a.detach())
    zero = (pivots == 0).reshape(-1, n)  # (batch, n)
    singular = zero.any(-1)
    batch = singular.numel()
    first = singular.cast(dtypes.int32).argmax()  # the first singular matrix (or 0)
    row = (type(a).arange(batch, device=a.device) == first).unsqueeze(-1).where(zero, False)
    element = row.any(0).cast(dtypes.int32).argmax() + 1
    value = type(a).stack(first.cast(dtypes.int32), element.cast(dtypes.int32))
    out = inverse._with_gradient(_inverse_gradient, (a,), (type(a),))
    realize.attach_check(out.uop, realize.Check(singular.any().uop, LinAlgError, message,
                                                value.uop))
    return out


def _inverse_gradient(grad: UOp, node: UOp, a: UOp, cls: Any) -> tuple[UOp]:
    """The inverse's gradient, torch's: -A^-T grad A^-T (differentiable in turn)."""
    inverse_t = _mT(cls(node))
    return ((-(inverse_t @ cls(grad) @ inverse_t)).uop,)


class LinalgOps(TensorCore):
    """qr, svd, det, inverse and newton_schulz of the last two axes (batched over the others),
    tinygrad's names with torch.linalg's results, and cross."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---
    # Besides what is below: the elementwise ops, sum, where, matmul, cat and MovementOps'
    # views (not restated: a stub here would hide the methods of the mixins before this one);
    # type(self)(array, device=) makes a tensor of host flags.

    @staticmethod
    def eye(n: int, m: int | None = None, dtype: DType | str | None = None,
            device: str | None = None, requires_grad: bool | None = None) -> Tensor:
        """The n x m identity matrix."""
        raise NotImplementedError

    @property
    def requires_grad(self) -> bool | None: raise NotImplementedError

    def contiguous(self) -> Tensor:
        """The same values in a buffer of their own: a kernel boundary."""
        raise NotImplementedError

    def detach(self) -> Tensor:
        """The same value, cut from the graph."""
        raise NotImplementedError

    # --- the factorizations ---

    def qr(self: Tensor) -> tuple[Tensor, Tensor]:
        """(Q, R) with self = Q R, as torch.linalg.qr (mode "reduced"): Q (m, k) with
        orthonormal columns, R (k, n) upper triangular, k = min(m, n). The signs are LAPACK's
        (R's diagonal may be negative), so both are torch's."""
        _check_matrix(self, "qr", "geqrf_cpu")
        m, n = self.shape[-2:]
        q, r = householder(self)
        k = min(m, n)
        return q[..., :k], r[..., :k, :]

    def det(self: Tensor) -> Tensor:
        """The determinant of each square matrix of the last two axes, as torch.linalg.det: by
        Gaussian elimination with partial pivoting (torch's LU), the product of the pivots and
        -1 for each row swap; a zero pivot makes it 0."""
        _check_matrix(self, "det", "lu_factor_cpu")
        m, n = self.shape[-2:]
        if m != n:
            raise RuntimeError(f"linalg.det: A must be batches of square matrices, but they are "
                               f"{m} by {n} matrices")
        batch = self.shape[:-2]
        out = type(self).ones(*batch, dtype=self.dtype, device=self.device)
        rows = self  # the rows not yet eliminated, all n columns
        for k in range(n):
            left = n - k
            pick = rows[..., k].abs().argmax(-1).unsqueeze(-1)  # the first largest, (..., 1)
            first = (type(self).arange(left, device=self.device) == pick).unsqueeze(-1)
            pivot_row = first.where(rows, 0).sum(-2)  # (..., n)
            # the pivot row's place takes the first row; the first row (now the pivot) leaves
            rest = first.where(rows[..., :1, :], rows)[..., 1:, :]
            pivot = pivot_row[..., k]
            out = out * (pick.squeeze(-1) != 0).where(-pivot, pivot)
            factor = (pivot == 0).unsqueeze(-1).where(0, rest[..., k] / pivot.unsqueeze(-1))
            rows = rest - factor.unsqueeze(-1) * pivot_row.unsqueeze(-2)
        return out

    def inverse(self: Tensor) -> Tensor:
        """The inverse of each square matrix of the last two axes, as torch.linalg.inv (and
        torch.inverse): Gauss-Jordan elimination with partial pivoting. A singular matrix (a
        zero pivot) raises LinAlgError, torch's message, when the result is computed (it is
        lazy: at realize, numpy(), item() or print), not when inverse() is called."""
        if self.ndim < 2:
            raise RuntimeError("linalg.inv: The input tensor A must have at least 2 "
                               "dimensions.")
        if not self.dtype.is_float:
            raise RuntimeError(f"linalg.inv: Expected a floating point or complex tensor as "
                               f"input. Got {torch_name(self.dtype)}")
        if self.dtype.itemsize < 4:
            raise RuntimeError(f"linalg.inv: Low precision dtypes not supported. Got "
                               f"{torch_name(self.dtype)}")
        m, n = self.shape[-2:]
        if m != n:
            raise RuntimeError(f"linalg.inv: A must be batches of square matrices, but they are "
                               f"{m} by {n} matrices")
        batch = "(Batch element {value[0]}): " if self.ndim > 2 else ""
        return invert(self, f"linalg.inv: {batch}The diagonal element {{value[1]}} is zero, "
                            "the inversion could not be completed because the input matrix "
                            "is singular.")

    def cross(self: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
        """The cross product of the 3-vectors along dim (the other axes broadcast), as
        torch.cross: dim None is the first axis of self of size 3 (torch's deprecated default,
        with its warning; torch.linalg.cross's default is -1)."""
        if not hasattr(other, "uop"):
            raise TypeError(f"cross(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(other).__name__}")
        if self.ndim != other.ndim:
            raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
        if dim is None:
            dim = next((d for d, size in enumerate(self.shape) if size == 3), None)
            if dim is None:
                raise RuntimeError("no dimension of size 3 in input")
            warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                          "Please either pass the dim explicitly or simply use "
                          "torch.linalg.cross.\nThe default value of dim will change to agree "
                          "with that of linalg.cross in a future release.", UserWarning,
                          stacklevel=2)
        d = normalize_axis(dim, self.ndim)
        if self.shape[d] != 3 or other.shape[d] != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                               f"{self.shape[d]} and {other.shape[d]}")
        if self.dtype != other.dtype:
            raise RuntimeError(f"expected scalar type {torch_name(self.dtype)} but found "
                               f"{torch_name(other.dtype)}")
        if self.dtype.is_bool:
            raise NotImplementedError("\"cross\" not implemented for 'Bool'")
        a, b = self._operands(other)
        # (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0): each vector rolled by one and by two
        return a.roll(-1, d) * b.roll(-2, d) - a.roll(-2, d) * b.roll(-1, d)

    def svd(self: Tensor, full_matrices: bool = True) -> tuple[Tensor, Tensor, Tensor]:
        """(U, S, Vh) with self = U diag(S) Vh, as torch.linalg.svd: S (k,) descending, U (m, m)
        and Vh (n, n) orthogonal (full_matrices), else U (m, k) and Vh (k, n), k = min(m, n).
        Each pair of singular vectors is unique up to its sign, and only for distinct nonzero
        singular values; the columns that complete U (rows of Vh) to a square are some
        orthonormal basis and take no gradient, as in torch."""
        _check_matrix(self, "svd", "linalg_svd_cpu")
        m, n = self.shape[-2:]
        if m >= n:
            u, s, v = svd_tall(self, full_matrices)
            return u, s, _mT(v)
        v, s, u = svd_tall(_mT(self), full_matrices)
        return u, s, _mT(v)

    def newton_schulz(self: Tensor, steps: int, params: Sequence[float],
                      eps: float = 1.0e-7) -> Tensor:
        """steps iterations of G <- sum_i params[i] (G G^T)^i G, from G = self / (its Frobenius
        norm + eps) (tinygrad's newton_schulz): with Muon's params the singular values of G go
        to about 1, its singular vectors stay. A tall matrix is iterated transposed."""
        if self.ndim < 2:
            raise RuntimeError(f"newton_schulz: expected a matrix or a batch of them, got shape "
                               f"{shape_str(self.shape)}")
        if self.shape[-2] > self.shape[-1]:
            return _mT(_mT(self).newton_schulz(steps, params, eps))
        x = self if self.dtype.is_float else self.float()
        g = x / (x.square().sum((-2, -1), keepdim=True).sqrt() + eps)
        for _ in range(steps):  # a kernel boundary per step: else each step's G would be
            g = _odd_polynomial(g, params).contiguous()  # computed again from all before it
        return g
