"""Gradients of composite functions equal central finite differences (float64)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyfw import Tensor, dtypes

TensorFn = Callable[..., Tensor]


def numerical_grad(f: Callable[..., float], *xs: np.ndarray, eps: float = 1e-6) -> list[np.ndarray]:
    """d f / d x for each input by central differences: (f(x + eps) - f(x - eps)) / (2 eps)."""
    grads = []
    for i, x in enumerate(xs):
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            shifted = [a.copy() for a in xs]
            shifted[i][idx] = x[idx] + eps
            up = f(*shifted)
            shifted[i][idx] = x[idx] - eps
            g[idx] = (up - f(*shifted)) / (2 * eps)
        grads.append(g)
    return grads


def analytic_grad(fn: TensorFn, *xs: np.ndarray) -> list[np.ndarray]:
    """d fn / d x for each input by tinyfw's backward."""
    ts = [Tensor(x, dtype=dtypes.float64, requires_grad=True) for x in xs]
    out = fn(*ts)
    assert out.shape == () or out.numel() == 1, f"the function must give a scalar, not {out.shape}"
    out.backward()
    return [t.grad.numpy() if t.grad is not None else np.zeros_like(x) for t, x in zip(ts, xs)]


def gradcheck(fn: TensorFn, *xs: np.ndarray, atol: float = 1e-6, rtol: float = 1e-5,
              eps: float = 1e-6) -> None:
    """tinyfw's gradient of fn at xs equals the numerical one."""
    __tracebackhide__ = True

    def value(*arrays: np.ndarray) -> float:
        return float(fn(*[Tensor(a, dtype=dtypes.float64) for a in arrays]).numpy().reshape(()))
    for i, (a, n) in enumerate(zip(analytic_grad(fn, *xs), numerical_grad(value, *xs, eps=eps))):
        np.testing.assert_allclose(a, n, atol=atol, rtol=rtol, err_msg=f"gradient of input {i}")


def rand(*shape: int, low: float = -1.0, high: float = 1.0, seed: int = 0) -> np.ndarray:
    """Random float64 values (away from kinks when low > 0)."""
    return np.random.default_rng(seed + len(shape) * 7 + sum(shape)).uniform(low, high, shape)


def test_numerical_grad_helper() -> None:
    """The helper itself: d/dx sum(x^3) = 3 x^2, d/dy sum(x y) = x."""
    x, y = rand(3), rand(3, seed=1)
    gx, gy = numerical_grad(lambda a, b: float((a ** 3).sum() + (a * b).sum()), x, y)
    np.testing.assert_allclose(gx, 3 * x ** 2 + y, atol=1e-7)
    np.testing.assert_allclose(gy, x, atol=1e-7)


COMPOSITES: list[tuple[str, TensorFn, list[np.ndarray]]] = [
    ("sigmoid_times_tanh", lambda x: (x.sigmoid() * x.tanh()).sum(), [rand(2, 3)]),
    ("mlp", lambda x, w1, w2: ((x @ w1).relu() @ w2).tanh().mean(),
     [rand(4, 3), rand(3, 5), rand(5, 2)]),
    ("softmax_weighted", lambda x, w: (x.softmax(-1) * w).sum(), [rand(3, 4), rand(3, 4)]),
    ("log_softmax_axis0", lambda x: (x.log_softmax(0) * x).sum(), [rand(3, 4)]),
    ("cross_entropy", lambda x: x.cross_entropy(Tensor([0, 2, 1]), label_smoothing=0.1),
     [rand(3, 4)]),
    ("layernorm", lambda x, g: (((x - x.mean(-1, keepdim=True)) /
                                 (x.var(-1, keepdim=True, correction=0) + 1e-5).sqrt()) * g)
     .square().sum(), [rand(2, 5), rand(5)]),
    ("logsumexp", lambda x: x.logsumexp(1).sum(), [rand(3, 4)]),
    ("std", lambda x: x.std(0).sum(), [rand(4, 3)]),
    ("pow_tensor", lambda x, y: (x ** y).sum(), [rand(3, low=0.5, high=2), rand(3)]),
    ("div_exp_log", lambda x, y: ((x / y).exp() + y.log()).sum(),
     [rand(2, 2), rand(2, 2, low=0.5, high=2)]),
    ("index_cat_flip", lambda x: Tensor.cat(x[1:, ::2], x[:1, ::-2].flip(1), dim=0).square().sum(),
     [rand(3, 5)]),
    ("pad_reshape_permute", lambda x: (x.pad(((1, 0), (2, 1))).reshape(6, 3).permute(1, 0) *
                                       Tensor.arange(6).double()).sum(), [rand(2, 3)]),
    ("expand_broadcast", lambda x, y: ((x + y) * (x * y)).sum(), [rand(3, 1), rand(1, 4)]),
    ("max_min", lambda x: x.max(1).sum() - x.min(0).sum() * 2, [rand(3, 4)]),
    ("maximum_minimum", lambda x, y: (x.maximum(y) * x.minimum(y)).sum(),
     [rand(4), rand(4, seed=5)]),
    ("where_mask", lambda x: (x > 0).where(x.square(), -x.exp()).sum(), [rand(2, 3)]),
    ("abs_clip", lambda x: (x.abs() + x.clip(-0.3, 0.4)).sum(), [rand(3, 3)]),
    ("gelu_silu_softplus", lambda x: (x.gelu() + x.silu() + x.softplus() + x.elu()).sum(),
     [rand(2, 4)]),
    ("trig", lambda x: (x.sin() * x.cos() + x.tan()).sum(), [rand(3)]),
    ("sqrt_rsqrt_reciprocal", lambda x: (x.sqrt() + x.rsqrt() + x.reciprocal()).sum(),
     [rand(3, low=0.5, high=2)]),
    ("matmul_batched", lambda a, b: (a @ b).square().sum(), [rand(2, 3, 4), rand(4, 2)]),
    ("matvec_dot", lambda a, v: (a @ v).dot(v), [rand(3, 3), rand(3)]),
    ("bce_logits", lambda x: x.binary_crossentropy_logits(Tensor([[1.0, 0.0], [0.3, 1.0]])),
     [rand(2, 2)]),
    ("bce", lambda p: p.binary_crossentropy(Tensor([1.0, 0.0, 0.5])),
     [rand(3, low=0.1, high=0.9)]),
    ("sparse_ce", lambda x: x.sparse_categorical_crossentropy(Tensor([1, -1, 0])),
     [rand(3, 4)]),
    ("split_stack_repeat", lambda x: Tensor.stack(*x.split(2, 1)[:2], dim=0).repeat(2, 1, 1)
     .exp().sum(), [rand(2, 5)]),
    ("mod_floor", lambda x: ((x * 3) % 1.7 + x.floor() * x).sum(), [rand(4, low=0.1, high=0.5)]),
]


@pytest.mark.parametrize("fn, xs", [(fn, xs) for _, fn, xs in COMPOSITES],
                         ids=[name for name, _, _ in COMPOSITES])
def test_composite_gradients(fn: TensorFn, xs: list[np.ndarray]) -> None:
    """Backward through a composite function equals finite differences."""
    gradcheck(fn, *xs, atol=1e-6, rtol=1e-5)


def test_gradient_through_a_float32_step() -> None:
    """A float32 step inside a float64 function costs precision, not correctness."""
    gradcheck(lambda x: (x.float().exp().double() * x).sum(), rand(3), atol=1e-4, rtol=1e-4,
              eps=1e-3)


def test_second_derivative() -> None:
    """The gradient of a gradient equals finite differences of the first gradient."""
    x0 = rand(3)

    def first(x: Tensor) -> Tensor:
        (g,) = (x.sin() * x * x).sum().gradient(x)
        return g
    ts = Tensor(x0, dtype=dtypes.float64)
    (gg,) = first(ts).sum().gradient(ts)
    num = numerical_grad(lambda a: float(first(Tensor(a)).sum().numpy()), x0)[0]
    np.testing.assert_allclose(gg.numpy(), num, atol=1e-6)


# --- random shapes -----------------------------------------------------------------------------

shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)
SETTINGS = settings(max_examples=12, deadline=None, derandomize=True, database=None)


def _values(shape: tuple[int, ...], seed: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    return np.asarray(np.random.default_rng(seed).uniform(low, high, shape)).reshape(shape)


@SETTINGS
@given(shape=shapes, seed=st.integers(0, 2 ** 16))
def test_random_shape_elementwise(shape: tuple[int, ...], seed: int) -> None:
    """A chain of elementwise ops on any small shape."""
    x = _values(shape, seed, 0.2, 1.5)
    gradcheck(lambda t: (t.exp() * t.log() + t.sigmoid() / t).sum(), x)


@SETTINGS
@given(a=shapes, b=shapes, seed=st.integers(0, 2 ** 16))
def test_random_shape_broadcast(a: tuple[int, ...], b: tuple[int, ...], seed: int) -> None:
    """Broadcasting between any two compatible small shapes sums gradients back correctly."""
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    b = tuple(1 if x != y and y != 1 and x != 1 else y for x, y in zip(pa, pb))[n - len(b):]
    x, y = _values(a, seed).reshape(a), _values(b, seed + 1).reshape(b)
    gradcheck(lambda s, t: (s * t + s.square() - t).sum(), x, y)


@SETTINGS
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple),
       data=st.data(), seed=st.integers(0, 2 ** 16))
def test_random_shape_reductions(shape: tuple[int, ...], data: st.DataObject, seed: int) -> None:
    """sum, max, mean and logsumexp over a random axis, keepdim or not."""
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    keepdim = data.draw(st.booleans())
    x = _values(shape, seed)
    gradcheck(lambda t: (t.sum(axis, keepdim) * t.max(axis, keepdim) + t.mean(axis, keepdim) +
                         t.logsumexp(axis, keepdim)).sum(), x)


@SETTINGS
@given(n=st.integers(1, 3), k=st.integers(1, 3), m=st.integers(1, 3),
       batch=st.lists(st.integers(1, 2), max_size=2).map(tuple), seed=st.integers(0, 2 ** 16))
def test_random_shape_matmul(n: int, k: int, m: int, batch: tuple[int, ...], seed: int) -> None:
    """Batched matmul of random sizes."""
    a, b = _values(batch + (n, k), seed), _values((k, m), seed + 1)
    gradcheck(lambda s, t: (s @ t).square().sum(), a, b)
