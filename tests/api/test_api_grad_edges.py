"""Gradients at the edges give torch's values (issue 11): a function that reaches an input only
through sign, rounding or a comparison gives that input zeros (not None, not an error), and the
differentiable functions keep torch's values at 0, at ties, at their bounds and at extremes."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from tinyfw import Tensor, dtypes

VALUES = [-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0]

# name, function (the same code runs on a tinyfw and a torch tensor), input values
CASES: list[tuple[str, Callable[[Any], Any], list[float]]] = [
    ("sign", lambda x: x.sign(), VALUES),
    ("round", lambda x: x.round(), VALUES + [0.5, 1.5, 2.5]),
    ("floor", lambda x: x.floor(), VALUES),
    ("ceil", lambda x: x.ceil(), VALUES),
    ("trunc", lambda x: x.trunc(), VALUES),
    ("sign_times_x", lambda x: x.sign() * x, VALUES),
    ("x_where_positive", lambda x: (x > 0).where(x, x * 0.5) if isinstance(x, Tensor) else
     torch.where(x > 0, x, x * 0.5), VALUES),
    ("pow_0", lambda x: x ** 0, VALUES),
    ("pow_2", lambda x: x ** 2, VALUES),
    ("pow_3", lambda x: x ** 3, VALUES),
    ("pow_minus_1", lambda x: x ** -1, [-2.0, -0.5, 0.5, 4.0]),
    ("pow_half", lambda x: x ** 0.5, [0.25, 1.0, 4.0]),
    ("sigmoid", lambda x: x.sigmoid(), [-1000.0, -100.0, -20.0, 0.0, 20.0, 100.0, 1000.0]),
    ("softplus", lambda x: x.softplus() if isinstance(x, Tensor) else
     torch.nn.functional.softplus(x), [-1000.0, -100.0, -20.0, 0.0, 20.0, 100.0]),
    ("logsigmoid", lambda x: x.logsigmoid() if isinstance(x, Tensor) else
     torch.nn.functional.logsigmoid(x), [-1000.0, -100.0, -20.0, 0.0, 20.0, 100.0]),
    ("log_softmax", lambda x: x.log_softmax(0) * (x.shape[0] - 0.5), [-1000.0, 0.0, 1000.0]),
    ("sqrt", lambda x: x.sqrt(), [0.0, 0.25, 4.0]),
    ("abs", lambda x: x.abs(), VALUES),
    ("relu", lambda x: x.relu(), VALUES),
    ("maximum_tie", lambda x: x.maximum(x.detach() * 0 + 1.0), [0.0, 1.0, 2.0]),
    ("minimum_tie", lambda x: x.minimum(x.detach() * 0 + 1.0), [0.0, 1.0, 2.0]),
    ("clamp_bounds", lambda x: x.clamp(-1.0, 1.0), [-2.0, -1.0, 0.0, 1.0, 2.0]),
]


def grads(fn: Callable[[Any], Any], values: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """The gradient of sum(fn(x)) in tinyfw and in torch, for x = values."""
    x = Tensor(values, requires_grad=True)
    fn(x).sum().backward()
    assert x.grad is not None, "no gradient (torch gives one)"
    ref = torch.tensor(values, requires_grad=True)
    fn(ref).sum().backward()
    assert ref.grad is not None
    return x.grad.numpy(), ref.grad.numpy()


@pytest.mark.parametrize("name, fn, values", CASES, ids=[c[0] for c in CASES])
def test_gradient_like_torch(name: str, fn: Callable[[Any], Any], values: list[float]) -> None:
    """backward gives torch's gradient, no NaN where torch has none."""
    got, want = grads(fn, values)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, equal_nan=False,
                               err_msg=f"{name} at {values}")


@pytest.mark.parametrize("name", ["sign", "round", "floor", "ceil", "trunc", "pow_0"])
def test_gradient_of_flat_function_is_zeros(name: str) -> None:
    """Tensor.gradient of a function flat in x gives zeros of x's shape, as torch.autograd.grad."""
    fn = next(c[1] for c in CASES if c[0] == name)
    x = Tensor([[-1.5, 0.0], [2.5, 3.0]], requires_grad=True)
    (g,) = fn(x).sum().gradient(x)
    assert g.shape == x.shape
    np.testing.assert_array_equal(g.numpy(), np.zeros((2, 2), np.float32))


def test_detached_input_still_gets_no_gradient() -> None:
    """A leaf reached only through detach() keeps .grad None, as in torch."""
    x, y = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 4.0], requires_grad=True)
    (x.detach() * y).sum().backward()
    assert x.grad is None
    np.testing.assert_array_equal(y.grad.numpy() if y.grad is not None else None, [1.0, 2.0])


def test_unused_target_is_an_error() -> None:
    """Tensor.gradient of a target the result does not depend on raises, as torch does."""
    x, y = Tensor([1.0], requires_grad=True), Tensor([2.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        (x * 2).sum().gradient(y)
    with pytest.raises(RuntimeError):
        torch.autograd.grad((torch.ones(1, requires_grad=True) * 2).sum(),
                            torch.ones(1, requires_grad=True))


def test_zero_gradients_accumulate_as_zeros() -> None:
    """A second backward through sign adds zeros to the gradient already there."""
    x = Tensor([1.0, -2.0], requires_grad=True)
    (x * 3).sum().backward()
    x.sign().sum().backward()
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_sigmoid_gradient_never_nan() -> None:
    """sigmoid's gradient at huge inputs is 0, not NaN (exp overflow), as in torch."""
    x = Tensor([-math.inf, -1e30, 1e30, math.inf], requires_grad=True)
    x.sigmoid().sum().backward()
    assert x.grad is not None
    got = x.grad.numpy()
    ref = torch.tensor([-math.inf, -1e30, 1e30, math.inf], requires_grad=True)
    ref.sigmoid().sum().backward()
    assert ref.grad is not None
    np.testing.assert_array_equal(got, ref.grad.numpy())


def test_clamp_takes_torch_keywords() -> None:
    """x.clamp(min=..., max=...) as torch; one bound alone too."""
    values = [-2.0, 0.5, 3.0]
    x, ref = Tensor(values), torch.tensor(values)
    np.testing.assert_array_equal(x.clamp(min=0.0).numpy(), ref.clamp(min=0.0).numpy())
    np.testing.assert_array_equal(x.clamp(max=1.0).numpy(), ref.clamp(max=1.0).numpy())
    np.testing.assert_array_equal(x.clamp(min=-1.0, max=1.0).numpy(),
                                  ref.clamp(min=-1.0, max=1.0).numpy())


# --- pow at the edges: torch's values and gradients ---------------------------------------------
# pow's value is a where over exp2 and log2 with the edges (0, 1, inf, negative bases) chosen
# apart, whose own derivative would be 0 at x = 0 where torch's is inf; a gradient override gives
# torch's rule (tinyfw/uop/gradient.py, GradientOverride), and the value must not change for it.
POW_BASES = [0.0, -0.0, 1e-45, -1e-45, 1e-40, 1e-20, 0.25, 0.5, 1.0, -1.0, 2.0, -2.0, -2.5, 3.0,
             1e20, -1e20, 3e38, -3e38, math.inf, -math.inf, math.nan]
# Exponents c with c - 1 as close to c - 1 in float32 as in float64: torch keeps a Python exponent
# in float64 in some lanes of its pow kernel and rounds it to float32 in others, so where rounding
# makes it an integer, or an even one, its value depends on the element's position (the gradient
# of x ** 1e-8 at -3e38 is nan or -0.0: 1e-8 - 1 rounds to -1).
POW_EXPONENTS = [0.0, -0.0, 0.5, -0.5, 0.25, 1.5, -1.5, 2.5, 0.3, 1.3, 1.0, 2.0, 3.0, 7.0, -1.0,
                 -2.0, -3.0, 2.0 ** 24, 1 - 2.0 ** 24, math.inf, -math.inf, math.nan]
POW_EXPONENT_TENSOR = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -2.5, 2.0, -2.0, 3.0, -3.0, 0.3,
                       1e-45, 1e20, math.inf, -math.inf, math.nan]


def assert_same_floats(got: np.ndarray, want: np.ndarray, what: str, rtol: float = 1e-5,
                       subnormals: float = 2) -> None:
    """got is want: nan where it is nan, the same infinities, the same sign of zero, and finite
    values within rtol (the exp2 route to a power is within that of torch's pow), or within a few
    of the smallest subnormals of want's dtype (a subnormal result has fewer digits)."""
    atol = subnormals * float(np.finfo(want.dtype).smallest_subnormal)
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]),
                                  err_msg=f"{what}: the sign of a zero")


def pow_pair(base: list[float], exponent: Any, dtype: str = "float32"
             ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """base ** exponent and the gradients of its sum, in tinyfw and in torch: [value, d base]
    (and d exponent when the exponent is a list, made a tensor)."""
    tensor_exponent = isinstance(exponent, list)
    x, y = Tensor(base, dtype=dtype, requires_grad=True), exponent
    rx, ry = torch.tensor(base, dtype=getattr(torch, dtype), requires_grad=True), exponent
    if tensor_exponent:
        y = Tensor(exponent, dtype=dtype, requires_grad=True)
        ry = torch.tensor(exponent, dtype=getattr(torch, dtype), requires_grad=True)
    out, ref = x ** y, rx ** ry
    leaves = [x, y] if tensor_exponent else [x]
    ref_leaves = [rx, ry] if tensor_exponent else [rx]
    grads = out.sum().gradient(*leaves)
    ref_grads = torch.autograd.grad(ref.sum(), ref_leaves)
    return ([out.numpy(), *(g.numpy() for g in grads)],
            [ref.detach().numpy(), *(g.numpy() for g in ref_grads)])


@pytest.mark.parametrize("exponent", POW_EXPONENTS, ids=str)
def test_pow_scalar_exponent_like_torch(exponent: float) -> None:
    """x ** c: torch's value and gradient c * x ** (c - 1) at 0 (inf for 0 < c < 1, -inf for
    c < 0), at +-inf, for negative bases (nan for a non-integer c), denormals and huge values."""
    got, want = pow_pair(POW_BASES, exponent)
    for name, g, w in zip(["value", "gradient"], got, want):
        assert_same_floats(g, w, f"x ** {exponent}: {name} at {POW_BASES}")


@pytest.mark.parametrize("exponent", POW_EXPONENT_TENSOR, ids=str)
def test_pow_tensor_exponent_like_torch(exponent: float) -> None:
    """x ** y for tensors: torch's value and both gradients, y * x ** (y - 1) (0 where y is 0)
    and x ** y * ln x (0 where x is 0 and y >= 0; nan for negative x)."""
    got, want = pow_pair(POW_BASES, [exponent] * len(POW_BASES))
    for name, g, w in zip(["value", "d base"], got, want):
        assert_same_floats(g, w, f"x ** {exponent} (a tensor): {name} at {POW_BASES}")
    # x ** y * ln x: a subnormal x ** y's error (WEBGPU's float32 exp2 is a subnormal off at
    # 1e-20 ** 2) grows with |ln x|, at most 104 for a float32
    assert_same_floats(got[2], want[2], f"x ** {exponent} (a tensor): d exponent at {POW_BASES}",
                       subnormals=2 * 104)


@pytest.mark.parametrize("base", [0.0, -0.0, 0.5, 1.0, -1.0, 2.0, -2.0, 10.0, math.inf,
                                  -math.inf, math.nan], ids=str)
def test_pow_scalar_base_like_torch(base: float) -> None:
    """c ** y: torch's value and gradient c ** y * ln c (0 where c is 0 and y >= 0)."""
    y = Tensor(POW_EXPONENT_TENSOR, requires_grad=True)
    ry = torch.tensor(POW_EXPONENT_TENSOR, requires_grad=True)
    out, ref = base ** y, base ** ry
    (grad,), (ref_grad,) = out.sum().gradient(y), torch.autograd.grad(ref.sum(), ry)
    assert_same_floats(out.numpy(), ref.detach().numpy(), f"{base} ** y: value")
    assert_same_floats(grad.numpy(), ref_grad.numpy(), f"{base} ** y: gradient")


@pytest.mark.parametrize("base", [5e-324, 1e-46, 1e39, 1.00000001, 0.9], ids=str)
def test_pow_scalar_base_that_rounds_to_an_edge_like_torch(base: float) -> None:
    """A Python base that float32 rounds to 0, inf or 1 (or keeps): torch's values, as for
    those edges (1e39 ** 0 is 1, 1.00000001 ** nan is 1), not exp2 of a log of them. (The
    constants are float32's own, 0 and inf, in every device's source: NVRTC refuses a float
    literal of 1e39.)"""
    y = Tensor(POW_EXPONENT_TENSOR)
    got, want = (base ** y).numpy(), (base ** torch.tensor(POW_EXPONENT_TENSOR)).numpy()
    assert_same_floats(got, want, f"{base} ** y: value")


@pytest.mark.parametrize("dtype", ["float64", "float16"])
@pytest.mark.parametrize("exponent", [0.5, -0.5, 1.5, -1.5, -1.0, -2.0, 3.0], ids=str)
def test_pow_other_float_dtypes_like_torch(dtype: str, exponent: float,
                                           needs_dtypes: Any) -> None:
    """float64 and float16 keep their dtype and torch's values (torch's x ** 0.5 is sqrt for
    float64, so (-0.0) ** 0.5 is -0.0, but C's pow for float16, where it is 0.0)."""
    bases = [0.0, -0.0, 6e-8, 0.25, 1.0, -1.0, -2.5, 3.0, 6e4, -6e4, math.inf, -math.inf,
             math.nan]
    with needs_dtypes(getattr(dtypes, dtype)):
        got, want = pow_pair(bases, exponent, dtype)
        rtol = 1e-3 if dtype == "float16" else 1e-12
        for name, g, w in zip(["value", "gradient"], got, want):
            assert g.dtype == w.dtype, f"{dtype} ** {exponent}: {name} is {g.dtype}"
            assert_same_floats(g, w, f"{dtype} x ** {exponent}: {name} at {bases}", rtol)


def test_pow_value_is_the_same_with_and_without_grad() -> None:
    """Asking for a gradient does not change pow's value, at inf and nan too (a value of the form
    v + (x - x.detach()) * slope would be nan at x = inf)."""
    for exponent in [0.5, -0.5, 1.5, -2.0, 2.0]:
        plain = (Tensor(POW_BASES) ** exponent).numpy()
        tracked = (Tensor(POW_BASES, requires_grad=True) ** exponent).numpy()
        np.testing.assert_array_equal(plain.view(np.uint32), tracked.view(np.uint32),
                                      err_msg=f"x ** {exponent}")


def test_pow_broadcast_and_second_derivative_like_torch() -> None:
    """x ** y with x (3, 1) and y (4,) sums the gradients over the broadcast axes; the gradient
    of the gradient is torch's too (the override's rule is made of differentiable ops)."""
    xs, ys = [[0.0], [2.0], [0.5]], [0.5, 2.0, -1.0, 0.0]
    x, y = Tensor(xs, requires_grad=True), Tensor(ys, requires_grad=True)
    rx, ry = torch.tensor(xs, requires_grad=True), torch.tensor(ys, requires_grad=True)
    gx, gy = (x ** y).sum().gradient(x, y)
    rgx, rgy = torch.autograd.grad((rx ** ry).sum(), (rx, ry), create_graph=True)
    assert_same_floats(gx.numpy(), rgx.detach().numpy(), "d x")
    assert_same_floats(gy.numpy(), rgy.detach().numpy(), "d y")
    x2 = Tensor([0.0, 0.5, 2.0, 3.0], requires_grad=True)
    rx2 = torch.tensor([0.0, 0.5, 2.0, 3.0], requires_grad=True)
    (g,) = (x2 ** 2.5).sum().gradient(x2)
    (gg,) = g.sum().gradient(x2)
    (rg,) = torch.autograd.grad((rx2 ** 2.5).sum(), rx2, create_graph=True)
    (rgg,) = torch.autograd.grad(rg.sum(), rx2)
    assert_same_floats(gg.numpy(), rgg.numpy(), "second derivative of x ** 2.5")


def test_pow_of_an_int_tensor_to_a_float_is_float() -> None:
    """An int tensor to the power 2.0 is float32, as in torch (2 keeps it int)."""
    assert (Tensor([1, 2, 3]) ** 2.0).dtype == dtypes.float32
    assert (Tensor([1, 2, 3]) ** 2).dtype == dtypes.int32
    np.testing.assert_array_equal((Tensor([1, 2, 3]) ** 2.0).numpy(), [1.0, 4.0, 9.0])


def test_pow_then_a_flat_function_gives_zeros() -> None:
    """sign(x ** 0.5) is flat in x: backward gives x zeros (not None), as torch does."""
    x = Tensor([0.0, 4.0], requires_grad=True)
    (x ** 0.5).sign().sum().backward()
    assert x.grad is not None, "no gradient (torch gives zeros)"
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
    y = Tensor([1.0, 2.0], requires_grad=True)
    (g,) = (2.0 ** y).round().sum().gradient(y)
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0])


@pytest.mark.parametrize("value", [1e39, -1e39, 1e-46, 5e-324, 3.4028235e38, 1e-40],
                         ids=str)
def test_float32_constants_are_what_float32_holds(value: float) -> None:
    """A Python number in a float32 expression is rounded to float32 first, as torch rounds
    it: past float32's range it is inf, below half its smallest subnormal 0 (and each device's
    compiler gets that value, not a literal it refuses)."""
    x = Tensor([1.0, -2.0, 0.0])
    want = (torch.tensor([1.0, -2.0, 0.0]) * value).numpy()
    assert_same_floats((x * value).numpy(), want, f"x * {value}")


SCATTER_PROD_SELF = [[1.0, 0.0, 2.0, -3.0], [math.inf, 5.0, math.nan, 0.0], [2.0, 2.0, 0.0, 1.0]]
SCATTER_PROD_SRC = [[0.0, 4.0, 0.0, 2.0], [math.nan, 1.0, 3.0, 0.0], [0.0, -math.inf, 0.5, 0.0]]


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
def test_scatter_reduce_prod_gradient_like_torch(include_self: bool, index_dtype: str,
                                                 needs_dtypes: Any) -> None:
    """scatter_reduce(prod)'s gradient is torch's formula at zeros (one or two sent to a
    place, self's own), at inf and nan (in self and in src), and without self."""
    index = np.array([[0, 0, 1, 3], [2, 1, 1, 2], [3, 3, 0, 0]], np.dtype(index_dtype))
    weights = np.linspace(-1.5, 2.0, 12, dtype=np.float32).reshape(3, 4)
    with needs_dtypes(*([dtypes.int64] if index_dtype == "int64" else [])):
        _check_scatter_prod(index, weights, include_self)


def _check_scatter_prod(index: np.ndarray, weights: np.ndarray, include_self: bool) -> None:
    grads = []
    for module in (Tensor, torch):
        make = Tensor if module is Tensor else torch.tensor
        x = make(np.array(SCATTER_PROD_SELF, np.float32), requires_grad=True)
        src = make(np.array(SCATTER_PROD_SRC, np.float32), requires_grad=True)
        idx = Tensor(index) if module is Tensor else torch.tensor(index.astype(np.int64))
        out = x.scatter_reduce(1, idx, src, "prod", include_self=include_self)
        (out * make(weights)).sum().backward()
        grads.append((out, x.grad, src.grad))
    for got, expected in zip(grads[0], grads[1]):
        np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-6,
                                   equal_nan=True)


def test_scatter_add_is_torchs() -> None:
    index = np.array([[0, 1, 0], [1, 1, 0]])
    src = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = Tensor.ones(2, 3).scatter_add(1, Tensor(index.astype(np.int32)), Tensor(src)).numpy()
    expected = torch.ones(2, 3).scatter_add(1, torch.tensor(index), torch.tensor(src)).numpy()
    np.testing.assert_array_equal(got, expected)
