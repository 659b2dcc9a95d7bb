"""In-place operators (mixed into Tensor): a += b, a -= b, ... write the result into a, as torch
does, with torch's checks first (a result type that cannot be cast to a's dtype, a shape that
is not a's, a leaf that requires grad). Tensor._write (tinyfw/tensor.py) does the write."""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from tinyfw.dtype import DType, category, dtypes, scalar_result_type, torch_name
from tinyfw.helpers import shape_str
from tinyfw.mixin.core import TensorCore
from tinyfw.mixin.promotion import _past_int64, _promote_tensors

if TYPE_CHECKING:
    from tinyfw.tensor import Scalar, Tensor


class InplaceOps(TensorCore):
    """The in-place operators, and the checks of an in-place write."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---
    # Besides what is below: the operators the in-place ones apply (+, -, *, /, ..., @), cast.
    no_grad: bool  # a class attribute: True inside torch's no_grad (no graph is recorded)
    _view: tuple[Any, tuple] | None

    def _write(self, value: Tensor) -> Tensor:
        """torch's in-place write: self takes value (of self's shape and dtype); returns self."""
        raise NotImplementedError

    # --- in-place operators: a += b writes the result into a, as torch does ---

    def _inplace(self: Tensor, op: Callable[[Tensor, Any], Tensor], x: Any,
                 true_division: bool = False) -> Tensor:
        """self = op(self, x), keeping self's shape and dtype, with torch's checks: a result
        type that cannot be cast to self's dtype (int += float) raises before the op is tried.
        A tensor that requires grad keeps its graph (gradients flow through the op); any other
        tensor is assigned, so views and a TinyJit follow the write."""
        self._check_leaf_write()
        result = self._result_type(x)
        if result is not None and true_division and not result.is_float:
            result = dtypes.default_float
        if result is not None and category(result) > category(self.dtype):
            raise RuntimeError(f"result type {torch_name(result)} can't be cast to the "
                               f"desired output type {torch_name(self.dtype)}")
        out = op(self, x)
        if out.shape != self.shape:
            raise RuntimeError(f"output with shape {shape_str(self.shape)} doesn't match the "
                               f"broadcast shape {shape_str(out.shape)}")
        if category(out.dtype) > category(self.dtype):
            raise RuntimeError(f"result type {torch_name(out.dtype)} can't be cast to the "
                               f"desired output type {torch_name(self.dtype)}")
        return self._write(out.cast(self.dtype))

    def _check_leaf_write(self: Tensor, view: bool = False) -> None:
        """torch's error for an in-place write to a leaf that requires grad, or to a view of
        one (outside no_grad, where an optimizer's writes are)."""
        root = self._view[0] if self._view is not None else self
        if root._requires_grad and root._is_leaf and not type(self).no_grad:
            what = "a view of a leaf Variable" if view or root is not self else "a leaf Variable"
            raise RuntimeError(f"{what} that requires grad is being used in an in-place "
                               "operation.")

    def _result_type(self: Tensor, x: Any) -> DType | None:
        """The dtype torch's promotion gives self op x (None for an operand of another type:
        the op itself raises)."""
        if isinstance(x, TensorCore):  # (a Tensor)
            return _promote_tensors(self, x)
        if isinstance(x, np.generic):
            x = x.item()
        if isinstance(x, (bool, int, float)):
            return scalar_result_type(self.dtype, x if type(x) is not int or
                                      -2 ** 63 <= x < 2 ** 63 else _past_int64(self.dtype, x))
        return None

    def __iadd__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self._inplace(operator.add, x)
    def __isub__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self._inplace(operator.sub, x)
    def __imul__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self._inplace(operator.mul, x)
    def __itruediv__(self: Tensor, x: Tensor | Scalar) -> Tensor:
        return self._inplace(operator.truediv, x, true_division=True)
    def __ifloordiv__(self: Tensor, x: Tensor | Scalar) -> Tensor:
        return self._inplace(operator.floordiv, x)
    def __imod__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self._inplace(operator.mod, x)
    def __ipow__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self._inplace(operator.pow, x)
    def __iand__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self._inplace(operator.and_, x)
    def __ior__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self._inplace(operator.or_, x)
    def __ixor__(self: Tensor, x: Tensor | Scalar) -> Tensor: return self._inplace(operator.xor, x)
    def __ilshift__(self: Tensor, x: int) -> Tensor: return self._inplace(operator.lshift, x)
    def __irshift__(self: Tensor, x: int) -> Tensor: return self._inplace(operator.rshift, x)
    def __imatmul__(self: Tensor, x: Tensor) -> Tensor: return self._inplace(operator.matmul, x)
