"""torch.linalg over tinyfw's Tensor: inv, solve, det, cross, the norms (norm, vector_norm,
matrix_norm), qr, svd and svdvals, and LinAlgError, by torch's names and arguments. Each is
made of tinyfw's Tensor ops (tinyfw/mixin/linalg.py), lazy as every op: a singular matrix given
to inv or solve raises LinAlgError (a RuntimeError, as torch's) when the result is computed
(read or realized), not at the call."""
from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from tinyfw.dtype import DType, torch_name
from tinyfw.helpers import normalize_axis, shape_str
from tinyfw.mixin.linalg import LinAlgError, invert
from tinyfw.tensor import Tensor

__all__ = ["LinAlgError", "inv", "solve", "det", "cross", "norm", "vector_norm",
           "matrix_norm", "qr", "svd", "svdvals"]

QR = namedtuple("QR", ["Q", "R"])
SVD = namedtuple("SVD", ["U", "S", "Vh"])

Dim = int | Sequence[int] | None


def inv(A: Tensor, *, out: Any = None) -> Tensor:  # noqa: N803  (torch's argument names)
    """The inverse of each square matrix of the last two axes (Tensor.inverse)."""
    return A.inverse()


def det(A: Tensor, *, out: Any = None) -> Tensor:  # noqa: N803
    """The determinant of each square matrix of the last two axes (Tensor.det)."""
    return A.det()


def cross(input: Tensor, other: Tensor, *, dim: int = -1,  # noqa: A002
          out: Any = None) -> Tensor:
    """The cross product of the 3-vectors along dim (-1 unless given), the other axes
    broadcast (Tensor.cross)."""
    return input.cross(other, dim=dim)


def solve(A: Tensor, B: Tensor, *, left: bool = True, out: Any = None) -> Tensor:  # noqa: N803
    """X with A X = B (X A = B when not left), A square matrices (..., n, n), as
    torch.linalg.solve: B is a batch of vectors (..., n) where it is 1-D or has one axis less
    than A and A's shape but the last (only with left, as torch), else of matrices (..., n,
    k); the batch axes broadcast. X is A^-1 B (B A^-1), the inverse by Gauss-Jordan
    elimination (Tensor.inverse); a singular A raises LinAlgError when X is computed."""
    if A.ndim < 2:
        raise RuntimeError("linalg.solve: The input tensor A must have at least 2 dimensions.")
    if not A.dtype.is_float:
        raise RuntimeError(f"linalg.solve: Expected a floating point or complex tensor as "
                           f"input. Got {torch_name(A.dtype)}")
    m, n = A.shape[-2:]
    if m != n:
        raise RuntimeError(f"linalg.solve: A must be batches of square matrices, but they are "
                           f"{m} by {n} matrices")
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {torch_name(A.dtype)} and B of type "
                           f"{torch_name(B.dtype)} instead")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    matrix = B.unsqueeze(-1) if vector else B  # a vector is a column, n x 1
    if matrix.ndim < 2 or matrix.shape[-2 if left else -1] != n:
        shape_b = "x".join(str(s) for s in matrix.shape[-2:])
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {shape_b})")
    if vector and not left:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not "
                           "supported for left=False. In this case linalg.solve is equivalent "
                           "to B / A.squeeze(-1)")
    if A.dtype.itemsize < 4:
        raise RuntimeError(f"linalg.solve: Low precision dtypes not supported. Got "
                           f"{torch_name(A.dtype)}")
    inverse = invert(A, "torch.linalg.solve: The solver failed because the input matrix is "
                        "singular.")
    x = inverse @ matrix if left else matrix @ inverse
    return x.squeeze(-1) if vector else x


def _dims(dim: Dim) -> tuple[int, ...] | None:
    return None if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)


def _float_input(x: Tensor, name: str, dtype: DType | None) -> Tensor:
    """x (cast to dtype, when given), or torch's error for an int or bool x."""
    if not x.dtype.is_float:
        raise RuntimeError(f"linalg.{name}: Expected a floating point or complex tensor as "
                           f"input. Got {torch_name(x.dtype)}")
    return x if dtype is None else x.cast(dtype)


def vector_norm(x: Tensor, ord: float = 2, dim: Dim = None,  # noqa: A002
                keepdim: bool = False, *, dtype: DType | None = None, out: Any = None) -> Tensor:
    """The vector ord-norm over dim (every element when None), as torch.linalg.vector_norm
    (Tensor.norm): 2 the square root of the sum of squares, inf / -inf the largest / smallest
    magnitude, 0 the count of nonzeros, any other ord (sum |x|^ord)^(1/ord)."""
    if isinstance(ord, str) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not "
                        f"{type(ord).__name__}")
    x = _float_input(x, "vector_norm", dtype)
    dims = _dims(dim)
    if (ord == math.inf or ord == -math.inf or ord < 0) and x.numel() == 0:
        if dims is None or any(x.shape[d] == 0 for d in dims):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_ord_name(ord)} norm on "
                               f"an empty tensor because the operation does not have an "
                               f"identity")
    return x.norm(ord, dims, keepdim)


def _ord_name(ord: float) -> str:  # noqa: A002
    return str(int(ord)) if float(ord).is_integer() else str(ord)


_MATRIX_ORDS = ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


def matrix_norm(A: Tensor, ord: str | float = "fro",  # noqa: A002, N803
                dim: tuple[int, int] = (-2, -1), keepdim: bool = False, *,
                dtype: DType | None = None, out: Any = None) -> Tensor:
    """The matrix ord-norm of the matrices of the two axes dim, as torch.linalg.matrix_norm:
    "fro" the square root of the sum of squares, "nuc" the sum of the singular values, inf /
    -inf the largest / smallest sum of |entries| of a row, 1 / -1 of a column, 2 / -2 the
    largest / smallest singular value (those three by Tensor.svd)."""
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    A = _float_input(A, "matrix_norm", dtype)
    if ord not in _MATRIX_ORDS:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    dims = _dims(dim)
    if dims is None or len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(str(d) for d in dims or ())}")
    d0, d1 = (normalize_axis(d, A.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, "
                           f"{dims[1]})")
    if ord == "fro":
        return A.norm(2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        values = A.movedim((d0, d1), (-2, -1)).svd(full_matrices=False)[1]
        result = values.sum(-1) if ord == "nuc" else values.max(-1) if ord == 2 else \
            values.min(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                result = result.unsqueeze(d)
        return result
    # inf: rows' sums (over d1), 1: columns' sums (over d0); the largest, or for -inf and -1
    # the smallest
    within, across = (d1, d0) if ord in (math.inf, -math.inf) else (d0, d1)
    sums = A.abs().sum(within, keepdim=True)
    result = sums.max(across, keepdim=True) if ord in (math.inf, 1) else \
        sums.min(across, keepdim=True)
    return result if keepdim else result.squeeze((d0, d1))


def norm(A: Tensor, ord: str | float | None = None, dim: Dim = None,  # noqa: A002, N803
         keepdim: bool = False, *, out: Any = None, dtype: DType | None = None) -> Tensor:
    """A vector or matrix norm, as torch.linalg.norm: a matrix norm (matrix_norm) over two
    axes (dim a 2-tuple, or no dim and a 2-D A with an ord), else a vector norm (vector_norm)
    over dim or, with no dim and no ord, over every element."""
    dims = _dims(dim)
    if dims is not None and len(dims) not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                           f"Got {list(dims)}")
    if dims is None and ord is not None:
        if A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input "
                               f"must be 1D or 2D. Got {A.ndim}D.")
        dims = tuple(range(A.ndim))
    if dims is not None and len(dims) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, (dims[0], dims[1]), keepdim,
                           dtype=dtype)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: Order {ord} not supported.")
    return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)


def qr(A: Tensor, mode: str = "reduced", *, out: Any = None) -> QR:  # noqa: N803
    """(Q, R), torch.linalg.qr's (mode "reduced" only: Tensor.qr)."""
    if mode != "reduced":
        raise NotImplementedError(f"linalg.qr: mode '{mode}' is not supported, only "
                                  "'reduced' (Tensor.qr)")
    return QR(*A.qr())


def svd(A: Tensor, full_matrices: bool = True, *, driver: Any = None,  # noqa: N803
        out: Any = None) -> SVD:
    """(U, S, Vh), torch.linalg.svd's (Tensor.svd)."""
    return SVD(*A.svd(full_matrices))


def svdvals(A: Tensor, *, driver: Any = None, out: Any = None) -> Tensor:  # noqa: N803
    """The singular values of each matrix, descending (Tensor.svd's S)."""
    if A.ndim < 2:
        raise RuntimeError(f"linalg.svd: The input tensor A must have at least 2 dimensions. "
                           f"(got shape {shape_str(A.shape)})")
    return A.svd(full_matrices=False)[1]
