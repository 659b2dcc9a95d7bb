"""Oracles shared by tinyfw's own tests: the same inputs through tinyfw and PyTorch, compared."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from tinyfw import DType, Tensor, dtypes

# tinyfw dtype -> the torch dtype with the same bits.
TORCH_DTYPES: dict[DType, torch.dtype] = {
    dtypes.bool: torch.bool, dtypes.uint8: torch.uint8, dtypes.int8: torch.int8,
    dtypes.int16: torch.int16, dtypes.int32: torch.int32, dtypes.int64: torch.int64,
    dtypes.uint16: torch.uint16, dtypes.uint32: torch.uint32, dtypes.uint64: torch.uint64,
    dtypes.float16: torch.float16, dtypes.bfloat16: torch.bfloat16,
    dtypes.float32: torch.float32, dtypes.float64: torch.float64,
}
FROM_TORCH: dict[torch.dtype, DType] = {t: d for d, t in TORCH_DTYPES.items()}

Fn = Callable[..., Any]
# An input is a shape (a tuple of ints: random floats of that shape), a numpy array (used as is,
# its dtype kept in both frameworks) or a Python list/scalar (each framework's own inference:
# tinyfw's default int is int32 where torch's is int64).
Input = tuple | np.ndarray | list | float | int | bool

def tinyfw_dtype_like_torch(torch_dtype: torch.dtype, default_int: bool = False) -> DType:
    """The tinyfw dtype matching a torch result; torch's int64 is tinyfw's int32 when it came
    from a default (torch's default int is int64, tinyfw's is int32)."""
    if default_int and torch_dtype == torch.int64:
        return dtypes.default_int
    return FROM_TORCH[torch_dtype]


def same_dtype(tiny: DType, ref: torch.dtype) -> bool:
    """Same kind and, except for torch's int64 (tinyfw's default int32 may stand in), same size."""
    if ref == torch.int64:
        return tiny in (dtypes.int32, dtypes.int64)
    return FROM_TORCH[ref] == tiny


def make_inputs(inputs: Sequence[Input], low: float, high: float, dtype: Any,
                seed: int) -> list[tuple[np.ndarray, bool]]:
    """Numpy arrays for each input, with whether it came from a Python list or scalar."""
    rng = np.random.default_rng(seed)
    out: list[tuple[np.ndarray, bool]] = []
    for x in inputs:
        if isinstance(x, tuple):
            out.append((np.asarray(rng.uniform(low, high, size=x)).astype(dtype), False))
        elif isinstance(x, np.ndarray):
            out.append((x, False))
        else:
            arr = np.array(x)
            out.append((arr.astype(dtype) if arr.dtype.kind == "f" else arr, True))
    return out


def torch_of(arr: np.ndarray) -> torch.Tensor:
    """A torch tensor holding a copy of arr; a bfloat16 array (ml_dtypes', which torch does
    not read) goes through float32, exactly."""
    if arr.dtype == dtypes.bfloat16.np:
        return torch.tensor(arr.astype(np.float32)).to(torch.bfloat16)
    return torch.tensor(arr)


def numpy_of(t: torch.Tensor) -> np.ndarray:
    """A torch tensor's values as numpy; bfloat16 (which torch's numpy() refuses) as ml_dtypes'
    bfloat16, through float32, exactly."""
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(dtypes.bfloat16.np)
    return t.numpy()


def to_torch(arr: np.ndarray, grad: bool) -> torch.Tensor:
    """A torch tensor holding arr (a copy), requiring grad when asked and possible."""
    t = torch_of(arr)
    return t.requires_grad_(grad and t.is_floating_point())


def to_tinyfw(arr: np.ndarray, from_py: bool, grad: bool) -> Tensor:
    """A tinyfw tensor holding arr; list-made ints take tinyfw's default int (int32)."""
    dt = dtypes.default_int if from_py and arr.dtype.kind in "iu" else None
    t = Tensor(arr, dtype=dt)
    if grad and t.dtype.is_float:
        t.requires_grad = True
    return t


def as_list(out: Any) -> list:
    """An op's result as a list of tensors (split and chunk return several)."""
    return list(out) if isinstance(out, (list, tuple)) else [out]


def assert_close(actual: np.ndarray, expected: np.ndarray, atol: float, rtol: float,
                 what: str) -> None:
    """Same shape and values equal within tolerance (nan equals nan, infinities must match)."""
    __tracebackhide__ = True
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, \
        f"{what}: shape {actual.shape}, expected {expected.shape}"
    if expected.dtype.kind == "b" or actual.dtype.kind == "b":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                   atol=atol, rtol=rtol, equal_nan=True, err_msg=what)


def check(inputs: Sequence[Input], torch_fn: Fn, tinyfw_fn: Fn | None = None, grad: bool = True,
          atol: float = 1e-6, rtol: float = 1e-4, grad_atol: float | None = None,
          grad_rtol: float | None = None, low: float = -2.0, high: float = 2.0,
          dtype: Any = np.float32, seed: int = 0, weighted: bool = True) -> list[Tensor]:
    """Run one op in torch and tinyfw on the same inputs; compare results (shape, dtype, values)
    and, with grad, the gradients of every float input: backward of (out * weights).sum()
    with the same random weights in both (or of out.sum() when not weighted)."""
    __tracebackhide__ = True
    arrays = make_inputs(inputs, low, high, dtype, seed)
    t_in = [to_torch(a, grad) for a, _ in arrays]
    f_in = [to_tinyfw(a, py, grad) for a, py in arrays]
    t_out = as_list(torch_fn(*t_in))
    f_out = as_list((tinyfw_fn or torch_fn)(*f_in))
    assert len(t_out) == len(f_out), f"{len(f_out)} results, torch gives {len(t_out)}"
    for i, (t, f) in enumerate(zip(t_out, f_out)):
        assert isinstance(f, Tensor), f"result {i} is a {type(f).__name__}, not a Tensor"
        assert same_dtype(f.dtype, t.dtype), f"result {i}: dtype {f.dtype}, torch gives {t.dtype}"
    backward = grad and any(t.requires_grad for t in t_in) and _backward(t_out, f_out, seed,
                                                                         weighted)
    f_grads = [f.grad for f in f_in if f.grad is not None] if backward else []
    # the results and the gradients in one schedule: one build of their kernels where a device
    # builds a schedule's kernels together (CL), as a training step realizes them
    Tensor.realize_all(*f_out, *f_grads)
    for i, (t, f) in enumerate(zip(t_out, f_out)):
        assert_close(f.numpy(), t.detach().numpy(), atol, rtol, f"forward value of result {i}")
    if not backward:
        return f_out
    g_atol = grad_atol if grad_atol is not None else max(atol * 10, 1e-5)
    g_rtol = grad_rtol if grad_rtol is not None else rtol * 10
    for i, (t, f) in enumerate(zip(t_in, f_in)):
        if not t.requires_grad:
            continue
        expected = t.grad.numpy() if t.grad is not None else np.zeros(t.shape)
        actual = f.grad.numpy() if f.grad is not None else np.zeros(f.shape)
        assert_close(actual, expected, g_atol, g_rtol, f"gradient of input {i}")
    return f_out


def _backward(t_out: list[torch.Tensor], f_out: list[Tensor], seed: int, weighted: bool) -> bool:
    """Backward of (out * weights).sum() over the float results in torch and tinyfw, with the
    same random weights (ones when not weighted); False if no result takes part."""
    __tracebackhide__ = True
    rng = np.random.default_rng(seed + 1)
    t_loss, f_loss = [], []
    for i, (t, f) in enumerate(zip(t_out, f_out)):
        if not t.is_floating_point():  # only float results take part in autograd
            continue
        assert f.requires_grad == t.requires_grad, \
            f"result {i}: requires_grad is {f.requires_grad}, torch says {t.requires_grad}"
        if not t.requires_grad:
            continue
        w = rng.uniform(0.5, 1.5, size=t.shape) if weighted else np.ones(t.shape)
        t_loss.append((t * torch.tensor(w, dtype=t.dtype)).sum())
        f_loss.append((f * Tensor(w, dtype=f.dtype)).sum())
    if not t_loss:
        return False
    sum(t_loss[1:], t_loss[0]).backward()
    sum(f_loss[1:], f_loss[0]).backward()
    return True


def check_error(inputs: Sequence[Input], torch_fn: Fn, tinyfw_fn: Fn | None = None,
                low: float = -2.0, high: float = 2.0,
                seed: int = 0) -> tuple[BaseException, BaseException]:
    """Both frameworks raise, and the same exception type; returns (torch's, tinyfw's)."""
    __tracebackhide__ = True
    arrays = make_inputs(inputs, low, high, np.float32, seed)
    t_in = [to_torch(a, False) for a, _ in arrays]
    f_in = [to_tinyfw(a, py, False) for a, py in arrays]
    errors: list[BaseException] = []
    for fn, args, who in ((torch_fn, t_in, "torch"), (tinyfw_fn or torch_fn, f_in, "tinyfw")):
        try:
            out = fn(*args)
            for o in as_list(out):  # an error may only show when the value is computed
                o.numpy() if isinstance(o, Tensor) else None
        except Exception as e:  # noqa: BLE001 - the point is to catch whatever it raises
            errors.append(e)
        else:
            raise AssertionError(f"{who} raised nothing")
    t_err, f_err = errors
    assert type(f_err) is type(t_err), \
        f"tinyfw raised {type(f_err).__name__}({f_err}), torch {type(t_err).__name__}({t_err})"
    return t_err, f_err
