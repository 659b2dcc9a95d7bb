"""Every Tensor op gives PyTorch's values and gradients (and numpy's, for creation)."""
from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractContextManager

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.helpers import check, same_dtype
from tinyfw import Tensor, dtypes

pytestmark = pytest.mark.device_subset

# The needs_dtypes fixture (tests/conftest.py): a block that needs dtypes the device may lack.
NeedsDtypesFixture = Callable[..., AbstractContextManager[None]]

# ---------------------------------------------------------------------------------------------
# creation


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (2, 0, 4)], ids=str)
def test_zeros_ones_full(shape: tuple[int, ...]) -> None:
    """zeros, ones and full make the shape, the default float (or the fill value's dtype)."""
    for t, ref in ((Tensor.zeros(*shape), np.zeros(shape)), (Tensor.ones(*shape), np.ones(shape)),
                   (Tensor.full(shape, 2.5), np.full(shape, 2.5))):
        assert t.shape == shape and t.dtype == dtypes.float32
        np.testing.assert_array_equal(t.numpy(), ref)
    assert Tensor.zeros(shape).shape == shape  # a tuple works as well as separate ints
    assert Tensor.full(shape, 7).dtype == dtypes.int32
    assert Tensor.full(shape, True).dtype == dtypes.bool
    assert Tensor.full(shape, 7, dtype=dtypes.float64).dtype == dtypes.float64
    assert Tensor.ones(*shape, dtype="int8").dtype == dtypes.int8


@pytest.mark.parametrize("args", [(5,), (2, 7), (7, 2, -1), (0, 10, 3), (-3, 3), (1.5,),
                                  (0, 1, 0.25), (5, 1, -1.5), (0,), (3, 3)])
def test_arange(args: tuple) -> None:
    """arange matches torch.arange: values, length, int or float dtype."""
    t, ref = Tensor.arange(*args), torch.arange(*args)
    assert same_dtype(t.dtype, ref.dtype), (t.dtype, ref.dtype)
    np.testing.assert_allclose(t.numpy(), ref.numpy(), rtol=1e-6)
    assert Tensor.arange(5, dtype=dtypes.float64).dtype == dtypes.float64


@pytest.mark.parametrize("n, m", [(1, None), (3, None), (2, 4), (4, 2), (0, 3)])
def test_eye(n: int, m: int | None) -> None:
    """eye is the identity, square or not."""
    t = Tensor.eye(n, m)
    ref = torch.eye(n, m) if m is not None else torch.eye(n)
    assert t.dtype == dtypes.float32
    np.testing.assert_array_equal(t.numpy(), ref.numpy())
    assert Tensor.eye(3, dtype=dtypes.int32).dtype == dtypes.int32


def test_random_ranges_and_dtypes() -> None:
    """rand is in [0, 1), uniform in [low, high), randn looks standard normal; float32 default."""
    Tensor.manual_seed(1)
    r = Tensor.rand(2000)
    assert r.shape == (2000,) and r.dtype == dtypes.float32
    assert 0 <= r.numpy().min() and r.numpy().max() < 1 and abs(r.numpy().mean() - 0.5) < 0.05
    u = Tensor.uniform(4, 500, low=-3.0, high=-1.0).numpy()
    assert u.shape == (4, 500) and -3 <= u.min() and u.max() < -1
    n = Tensor.randn(50, 100).numpy()
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05
    assert Tensor.randn(3, dtype=dtypes.float64).dtype == dtypes.float64
    assert Tensor.rand((2, 3)).shape == (2, 3)
    i = Tensor.randint(100, low=-2, high=3)
    assert i.dtype == dtypes.int32 and set(i.numpy().tolist()) <= {-2, -1, 0, 1, 2}


def test_kaiming_uniform_bound() -> None:
    """kaiming_uniform stays within the He bound sqrt(6 / ((1 + a^2) fan_in)), and fills it."""
    Tensor.manual_seed(2)
    w = Tensor.kaiming_uniform(64, 8, 3, a=0.0).numpy()
    bound = math.sqrt(6 / (8 * 3))
    assert w.shape == (64, 8, 3) and np.abs(w).max() <= bound
    assert np.abs(w).max() > 0.9 * bound


def test_manual_seed_reproducible() -> None:
    """The same seed gives the same numbers; the stream moves on otherwise."""
    Tensor.manual_seed(42)
    a = [Tensor.rand(3, 4).numpy(), Tensor.randn(5).numpy(), Tensor.uniform(2, low=1, high=2)]
    Tensor.manual_seed(42)
    b = [Tensor.rand(3, 4).numpy(), Tensor.randn(5).numpy(), Tensor.uniform(2, low=1, high=2)]
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[2].numpy(), b[2].numpy())
    assert not np.array_equal(Tensor.rand(3, 4).numpy(), a[0])
    Tensor.manual_seed(43)
    assert not np.array_equal(Tensor.rand(3, 4).numpy(), a[0])


def test_like_constructors(needs_dtypes: NeedsDtypesFixture) -> None:
    """*_like keep the shape, and the dtype where torch does."""
    i = Tensor([[1, 2], [3, 4]])
    assert i.zeros_like().dtype == dtypes.int32
    with pytest.raises(NotImplementedError):  # torch has no random ints from rand_like
        i.rand_like()
    assert i.rand_like(dtype=dtypes.float32).dtype == dtypes.float32
    x = Tensor(np.arange(6, dtype=np.float64).reshape(2, 3))
    assert x.rand_like().shape == (2, 3) and x.randn_like().dtype == dtypes.float64
    assert x.full_like(1, dtype=dtypes.int8).dtype == dtypes.int8
    with needs_dtypes(dtypes.float64):
        for t, value in ((x.zeros_like(), 0), (x.ones_like(), 1), (x.full_like(3.5), 3.5)):
            assert t.shape == (2, 3) and t.dtype == dtypes.float64
            np.testing.assert_array_equal(t.numpy(), np.full((2, 3), value))


@pytest.mark.parametrize("data", [
    [1, 2, 3], [1.0, 2.0], [True, False], [[1, 2], [3, 4]], [1, 2.5], [True, 2],
    3, 2.5,
    True, (1, 2), [[[1.5]]], [[True], [False]],
], ids=repr)
def test_from_python(data: object) -> None:
    """A list, tuple or scalar becomes a tensor of torch's shape and dtype (int -> int32)."""
    t, ref = Tensor(data), torch.tensor(data)
    assert t.shape == tuple(ref.shape)
    assert same_dtype(t.dtype, ref.dtype), (t.dtype, ref.dtype)
    np.testing.assert_array_equal(t.numpy(), ref.numpy())


def test_from_empty_list() -> None:
    """An empty list is an empty float tensor, as in torch."""
    t = Tensor([])
    assert t.shape == (0,) and t.dtype == dtypes.float32


@pytest.mark.parametrize("np_dtype", [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64,
                                      np.float16, np.float32, np.float64])
def test_from_numpy_keeps_dtype(np_dtype: type) -> None:
    """A numpy array keeps its dtype and values, and numpy() gives an independent copy."""
    arr = (np.arange(12).reshape(3, 4) % 5).astype(np_dtype)
    t = Tensor(arr)
    assert t.dtype.np == np.dtype(np_dtype) and t.shape == (3, 4)
    out = t.numpy()
    np.testing.assert_array_equal(out, arr)
    out[0, 0] = 1
    arr[0, 1] = 1
    np.testing.assert_array_equal(t.numpy(), (np.arange(12).reshape(3, 4) % 5).astype(np_dtype))


def test_constructor_dtype_and_tolist() -> None:
    """An explicit dtype wins; tolist and item give Python values."""
    t = Tensor([1, 2, 3], dtype=dtypes.float16)
    assert t.dtype == dtypes.float16 and t.tolist() == [1.0, 2.0, 3.0]
    assert Tensor([1.7, -1.7], dtype="int32").tolist() == [1, -1]
    assert Tensor(2.5).item() == 2.5 and isinstance(Tensor(3).item(), int)
    assert Tensor([[7]]).item() == 7


def test_from_numpy_0d() -> None:
    """A 0-d numpy array or numpy scalar stays 0-d."""
    assert Tensor(np.array(2.5, np.float32)).shape == ()
    assert Tensor(np.float32(1.5)).shape == ()
    assert Tensor(np.array(True)).shape == ()


# ---------------------------------------------------------------------------------------------
# elementwise math

UNARY = [
    ("neg", lambda x: -x, None, -2, 2),
    ("neg_method", lambda x: x.neg(), None, -2, 2),
    ("abs", lambda x: x.abs(), None, -2, 2),
    ("sign", lambda x: x.sign(), None, -2, 2),
    ("exp", lambda x: x.exp(), None, -3, 3),
    ("exp2", lambda x: x.exp2(), None, -3, 3),
    ("log", lambda x: x.log(), None, 0.05, 4),
    ("log2", lambda x: x.log2(), None, 0.05, 4),
    ("sqrt", lambda x: x.sqrt(), None, 0.05, 4),
    ("rsqrt", lambda x: x.rsqrt(), None, 0.1, 4),
    ("reciprocal", lambda x: x.reciprocal(), None, 0.2, 3),
    ("sin", lambda x: x.sin(), None, -4, 4),
    ("cos", lambda x: x.cos(), None, -4, 4),
    ("tan", lambda x: x.tan(), None, -1.2, 1.2),
    ("relu", lambda x: x.relu(), None, -2, 2),
    ("sigmoid", lambda x: x.sigmoid(), None, -6, 6),
    ("tanh", lambda x: x.tanh(), None, -4, 4),
    ("gelu", F.gelu, lambda x: x.gelu(), -4, 4),
    ("silu", F.silu, lambda x: x.silu(), -4, 4),
    ("leaky_relu", F.leaky_relu, lambda x: x.leaky_relu(), -2, 2),
    ("leaky_relu_0.2", lambda x: F.leaky_relu(x, 0.2), lambda x: x.leaky_relu(0.2), -2, 2),
    ("elu", F.elu, lambda x: x.elu(), -3, 3),
    ("elu_alpha", lambda x: F.elu(x, 0.5), lambda x: x.elu(0.5), -3, 3),
    ("softplus", F.softplus, lambda x: x.softplus(), -5, 5),
    ("softplus_beta", lambda x: F.softplus(x, beta=2.0, threshold=3.0),
     lambda x: x.softplus(2.0, 3.0), -5, 5),
    ("square", lambda x: x.square(), None, -2, 2),
    ("log1p", lambda x: x.log1p(), None, -0.5, 3),
    ("clip", lambda x: x.clip(-0.5, 0.7), None, -2, 2),
    ("clip_min", lambda x: x.clip(-0.5), None, -2, 2),
    ("clip_max", lambda x: x.clip(None, 0.5), None, -2, 2),
    ("clamp", lambda x: x.clamp(-1.0, 1.0), None, -2, 2),
    ("relu6", F.relu6, lambda x: x.relu6(), -3, 9),
    ("hardtanh", F.hardtanh, lambda x: x.hardtanh(), -3, 3),
    ("mish", F.mish, lambda x: x.mish(), -3, 3),
    ("floor", lambda x: x.floor(), None, -3, 3),
    ("ceil", lambda x: x.ceil(), None, -3, 3),
    ("round", lambda x: x.round(), None, -3, 3),
    ("trunc", lambda x: x.trunc(), None, -3, 3),
    ("pow2", lambda x: x ** 2, None, -2, 2),
    ("pow3", lambda x: x ** 3, None, -2, 2),
    ("pow_neg1", lambda x: x ** -1, None, 0.3, 2),
    ("pow_neg3", lambda x: x ** -3, None, 0.5, 2),
    ("pow_half", lambda x: x ** 0.5, None, 0.1, 3),
    ("pow_2.5", lambda x: x ** 2.5, None, 0.1, 3),
    ("pow_11", lambda x: x ** 11, None, -1.5, 1.5),
    ("pow_float_int_valued", lambda x: x ** 3.0, None, -2, 2),
    ("rpow", lambda x: 2 ** x, None, -2, 2),
    ("rpow_float", lambda x: 0.5 ** x, None, -2, 2),
    ("isnan", lambda x: (x.log()).isnan(), None, -1, 1),
]


@pytest.mark.parametrize("name, torch_fn, tinyfw_fn, low, high", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("shape", [(), (7,), (2, 3, 4)], ids=str)
def test_unary(name: str, torch_fn, tinyfw_fn, low: float, high: float,
               shape: tuple[int, ...]) -> None:
    """Each unary op matches torch in value and gradient."""
    check([shape], torch_fn, tinyfw_fn, low=low, high=high, atol=1e-5, rtol=1e-4)


def test_unary_float64(needs_dtypes: NeedsDtypesFixture) -> None:
    """Unary ops keep float64 and its precision."""
    with needs_dtypes(dtypes.float64):
        for fn in (lambda x: x.exp(), lambda x: x.log(), lambda x: x.sigmoid(),
                   lambda x: x.tanh(), lambda x: x.sqrt(), lambda x: x.sin()):
            check([(3, 4)], fn, dtype=np.float64, low=0.1, high=3, atol=1e-12, rtol=1e-10)


def test_round_halves_to_even() -> None:
    """round sends halves to the even neighbour, as torch.round does."""
    check([[-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49, -0.51, 1.2, -1.7]],
          lambda x: x.round())


def test_floor_ceil_trunc_exact() -> None:
    """floor, ceil and trunc at integers, halves and negatives."""
    vals = [[-2.0, -1.5, -1.0, -0.2, 0.0, 0.2, 1.0, 1.5, 2.0]]
    for fn in (lambda x: x.floor(), lambda x: x.ceil(), lambda x: x.trunc(), lambda x: x.sign()):
        check(vals, fn)


def test_unary_on_ints() -> None:
    """Int tensors: neg, abs, sign, relu stay int; exp, log, sqrt, sigmoid turn float32."""
    vals = [[-3, -1, 0, 2, 5]]
    for fn in (lambda x: -x, lambda x: x.abs(), lambda x: x.sign(), lambda x: x.relu(),
               lambda x: x.exp(), lambda x: x.sigmoid(), lambda x: x.sin(), lambda x: x.square(),
               lambda x: x.floor(), lambda x: x.ceil(), lambda x: x.round(), lambda x: x.trunc()):
        check(vals, fn)
    for fn in (lambda x: x.sqrt(), lambda x: x.log()):
        check([[1, 2, 3, 10]], fn)


@pytest.mark.parametrize("name", ["sigmoid", "tanh", "silu", "gelu", "softplus", "elu"])
def test_activation_gradients_at_large_inputs(name: str) -> None:
    """Activations keep finite, torch-equal gradients for inputs far from zero."""
    torch_fn = {"gelu": F.gelu, "silu": F.silu,
                "softplus": F.softplus, "elu": F.elu, "sigmoid": torch.sigmoid,
                "tanh": torch.tanh}[name]
    check([[-200.0, -100.0, -30.0, -12.0, 12.0, 30.0, 100.0, 200.0]], torch_fn,
          lambda x: getattr(x, name)())


BINARY = [
    ("add", lambda x, y: x + y, None),
    ("sub", lambda x, y: x - y, None),
    ("mul", lambda x, y: x * y, None),
    ("div", lambda x, y: x / y, None),
    ("maximum", torch.maximum, lambda x, y: x.maximum(y)),
    ("minimum", torch.minimum, lambda x, y: x.minimum(y)),
    ("add_method", lambda x, y: x.add(y), None),
    ("sub_method", lambda x, y: x.sub(y), None),
    ("mul_method", lambda x, y: x.mul(y), None),
    ("div_method", lambda x, y: x.div(y), None),
    ("lerp", lambda x, y: torch.lerp(x, y, 0.3), lambda x, y: x.lerp(y, 0.3)),
]
SHAPE_PAIRS = [((), ()), ((3,), (3,)), ((2, 3), (2, 3)),
               ((3,), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)),
               ((), (2, 3)), ((2, 3), ()),
               ((4, 1, 3), (2, 1)), ((5, 1, 1), (1, 4, 1)), ((1,), (0,)), ((2, 0, 3), (1, 3)),
               ((1, 1), (3, 2))]


@pytest.mark.parametrize("name, torch_fn, tinyfw_fn", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
def test_binary_broadcast(name: str, torch_fn, tinyfw_fn, shapes) -> None:
    """Each binary op broadcasts like torch, with torch's gradients (summed over broadcast)."""
    low = 0.5 if name.startswith("div") else -2.0
    check(list(shapes), torch_fn, tinyfw_fn, low=low)


def test_pow_tensor_exponent() -> None:
    """x ** y with tensors, positive bases; negative bases with integer exponents."""
    check([(2, 3), (2, 3)], lambda x, y: x ** y, low=0.2, high=2.0)
    check([(3,), (2, 3)], lambda x, y: x.pow(y), low=0.2, high=2.0)
    check([[-2.0, -1.5, -0.5, 2.0, 3.0], [2.0, 3.0, -1.0, 0.5, 0.0]], lambda x, y: x ** y,
          grad=False)
    check([[-2.0, -1.5, 2.0], [2.0, 3.0, 0.5]], lambda x, y: x ** y, grad=False)
    check([[-2.0, 4.0], [0.5, 0.5]], lambda x, y: x ** y, grad=False)  # nan for a negative base


def test_pow_zero_is_differentiable() -> None:
    """x ** 0 is ones that still depend on x, as in torch."""
    check([(2, 3)], lambda x: x ** 0)


def test_pow_gradient_at_zero() -> None:
    """The gradient of x ** p (p > 1) at 0 is 0."""
    check([[0.0, 1.0, 2.0]], lambda x: x ** 2.5)


@pytest.mark.parametrize("fn", [
    lambda x: x + 2, lambda x: 2 + x, lambda x: x - 1.5, lambda x: 1.5 - x, lambda x: x * 3,
    lambda x: 3 * x, lambda x: x / 2, lambda x: 2 / x, lambda x: x + True, lambda x: -1 - x,
    lambda x: x * -0.5,
], ids=lambda f: "")
def test_binary_with_python_scalar(fn) -> None:
    """A Python scalar on either side works like torch."""
    check([(2, 3)], fn, low=0.5, high=2)


def test_maximum_minimum_with_python_scalar() -> None:
    """maximum and minimum take a Python scalar (torch spells it clamp)."""
    check([(2, 3)], lambda x: torch.clamp(x, min=0.5), lambda x: x.maximum(0.5))
    check([(2, 3)], lambda x: torch.clamp(x, max=0.5), lambda x: x.minimum(0.5))
    check([[-3, 0, 2, 7]], lambda x: torch.clamp(x, min=1), lambda x: x.maximum(1))


INT_A = [-7, -7, -6, -5, -1, 0, 1, 5, 6, 7, 7, 3]
INT_B = [2, -2, 3, -3, 5, 4, -4, 3, -7, 3, -3, 7]


@pytest.mark.parametrize("op", ["floordiv", "mod", "div", "add", "sub", "mul", "maximum",
                                "minimum"])
def test_int_arithmetic(op: str) -> None:
    """Int ops incl. floor division and remainder with negative operands (Python's rules)."""
    fns = {"floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b, "div": lambda a, b: a / b,
           "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "maximum": lambda a, b: a.maximum(b) if isinstance(a, Tensor) else torch.maximum(a, b),
           "minimum": lambda a, b: a.minimum(b) if isinstance(a, Tensor) else torch.minimum(a, b)}
    check([INT_A, INT_B], fns[op])


@pytest.mark.parametrize("fn", [lambda a: a // 3, lambda a: a % 3, lambda a: a // -3,
                                lambda a: a % -3, lambda a: 13 // a, lambda a: 13 % a,
                                lambda a: -13 // a, lambda a: -13 % a, lambda a: a // 2.5,
                                lambda a: a % 2.5], ids=lambda f: "")
def test_floordiv_mod_scalar(fn) -> None:
    """// and % with a Python scalar on either side, int and float, negative operands."""
    check([[-7, -6, -1, 1, 5, 6, 9]], fn)
    check([[-7.5, -6.0, -1.25, 1.5, 5.0, 6.5, 9.0]], fn, grad=False)


def test_float_floordiv_mod() -> None:
    """Float // and % round down and take the divisor's sign; % has torch's gradient."""
    a = [-7.5, -3.25, -0.5, 0.5, 3.0, 7.25, 2.0, -9.0]
    b = [2.0, -2.0, 0.75, -1.5, 3.5, 2.5, -3.0, 4.0]
    check([a, b], lambda x, y: x // y, grad=False)
    check([a, b], lambda x, y: x % y)
    check([(3, 4), (4,)], lambda x, y: x % y, low=0.5, high=3)


def division_grid(dt: np.dtype, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (a, b) to divide: n of random bit patterns (every exponent, denormals, nan and inf
    among them), n of everyday magnitudes, and every pair of the hard values (+-0, +-inf, nan,
    the smallest denormal, the smallest normal, a denormal like 1e-40, the largest float)."""
    rng = np.random.default_rng(7)
    ints = np.dtype(f"u{dt.itemsize}")
    bits = rng.integers(0, np.iinfo(ints).max, (2, n), dtype=ints, endpoint=True)
    random_a, random_b = bits.view(dt)
    everyday_a = (rng.standard_normal(n) * 100).astype(dt)
    everyday_b = rng.standard_normal(n).astype(dt)
    info = np.finfo(dt)
    hard = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -3.0, 7.0, 49.0, 10.0,
                     float(info.smallest_subnormal), -float(info.smallest_subnormal),
                     float(info.tiny), float(info.max), -float(info.max), 1e-40], dtype=dt)
    a = np.concatenate([random_a, everyday_a, np.repeat(hard, len(hard))])
    b = np.concatenate([random_b, everyday_b, np.tile(hard, len(hard))])
    return a, b


@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float64, dtypes.float16],
                         ids=lambda d: d.name)
def test_division_is_correctly_rounded(dtype, needs_dtypes: NeedsDtypesFixture) -> None:
    """a / b is IEEE division, rounded once, bit for bit numpy's (and torch's): not a * (1/b),
    which rounds twice (49 / 7 came out 7.0000005) and overflows for a denormal b (1e-40 / 1e-40
    was inf). Denormals, +-0, +-inf and nan included: x / 0 is +-inf, 0 / 0 and inf / inf nan."""
    a, b = division_grid(dtype.np, 100_000)
    with np.errstate(all="ignore"):
        want = a / b
    with needs_dtypes(dtype):
        got = (Tensor(a, dtype=dtype) / Tensor(b, dtype=dtype)).numpy()
    bits = np.dtype(f"u{dtype.itemsize}")
    same = (got.view(bits) == want.view(bits)) | (np.isnan(got) & np.isnan(want))
    wrong = np.flatnonzero(~same)
    assert wrong.size == 0, (f"{wrong.size} of {a.size} quotients are not numpy's, e.g. "
                             + ", ".join(f"{a[i]!r} / {b[i]!r} = {got[i]!r} (not {want[i]!r})"
                                         for i in wrong[:5]))


def test_division_by_a_scalar_is_correctly_rounded() -> None:
    """A Python number as divisor or dividend is divided by, not multiplied by its reciprocal
    (a compiler may fold 1/c of a constant c and multiply)."""
    a = np.random.default_rng(8).standard_normal(10_000).astype(np.float32) * 100
    for c in (3.0, 7.0, 10.0, 0.1, 1e-40):
        with np.errstate(all="ignore"):
            want_div, want_rdiv = a / np.float32(c), np.float32(c) / a
        np.testing.assert_array_equal((Tensor(a) / c).numpy(), want_div, err_msg=f"a / {c}")
        np.testing.assert_array_equal((c / Tensor(a)).numpy(), want_rdiv, err_msg=f"{c} / a")
    assert (Tensor([49.0, 10.0]) / Tensor([7.0, 3.0])).tolist() == [7.0, np.float32(10 / 3)]


@pytest.mark.parametrize("fn", [
    lambda x, y: x < y, lambda x, y: x > y, lambda x, y: x <= y, lambda x, y: x >= y,
    lambda x, y: x == y, lambda x, y: x != y,
], ids=["lt", "gt", "le", "ge", "eq", "ne"])
def test_comparisons(fn) -> None:
    """Comparisons give bools, broadcast, and handle ties, scalars and mixed dtypes."""
    a, b = [1.0, 2.0, 3.0, -1.0, 0.0, 2.5], [1.0, 3.0, 2.0, -1.0, -0.0, 2.5]
    check([a, b], fn)
    check([(2, 3), (3,)], fn)
    check([[1, 2, 3, 4]], lambda x: fn(x, 2))
    check([[1, 2, 3, 4]], lambda x: fn(x, 2.5))
    check([[1.0, 2.0, 3.0]], lambda x: fn(2, x))
    check([[1, 2, 3], [1.0, 2.5, 3.0]], fn)
    check([[True, False, True], [True, True, False]], fn)


def test_comparison_with_nan() -> None:
    """nan compares unequal to everything, itself included."""
    vals = [[float("nan"), 1.0, float("nan")], [float("nan"), 1.0, 2.0]]
    for fn in (lambda x, y: x == y, lambda x, y: x != y, lambda x, y: x < y,
               lambda x, y: x <= y, lambda x, y: x >= y):
        check(vals, fn)
    check([[float("nan"), 1.0, float("inf"), -float("inf")]], lambda x: x.isinf(),
          lambda x: x.isinf())


@pytest.mark.parametrize("fn", [lambda x, y: x & y, lambda x, y: x | y, lambda x, y: x ^ y,
                                lambda x, y: ~x, lambda x, y: x.logical_not(),
                                lambda x, y: x & True, lambda x, y: x | 0, lambda x, y: 1 ^ x],
                         ids=["and", "or", "xor", "invert", "logical_not", "and_scalar",
                              "or_scalar", "rxor_scalar"])
def test_logical_and_bitwise(fn) -> None:
    """&, |, ^, ~ on bools are logical; on ints bitwise (negative ints too)."""
    check([[True, True, False, False], [True, False, True, False]], fn)
    check([[-3, -1, 0, 1, 6, 12], [5, -2, 7, 3, 3, 10]], fn)
    check([np.array([1, 20, 0, 127], np.int8), np.array([3, 8, 0, 15], np.int8)], fn)


def test_python_int_wraps_into_small_int_dtypes() -> None:
    """uint8/int8 with out-of-range Python ints wrap around as in torch (and C)."""
    u8 = np.array([1, 200, 0, 255], np.uint8)
    check([u8], lambda x: ~x)
    check([u8], lambda x: x + (-1))
    check([u8], lambda x: x * 300)
    check([np.array([5, -7], np.int8)], lambda x: x + 200)


@pytest.mark.parametrize("cond, x, y", [((2, 3), (2, 3), (2, 3)),
                                        ((3,), (2, 3), ()),
                                        ((2, 1), (3,), (2, 3)),
                                        ((), (2, 2), (2, 2))], ids=str)
def test_where(cond, x, y) -> None:
    """where picks per element and broadcasts all three; gradients go to the chosen side."""
    check([cond, x, y], lambda c, a, b: torch.where(c > 0, a, b),
          lambda c, a, b: (c > 0).where(a, b))


def test_where_scalars_and_nonbool_condition() -> None:
    """where takes Python scalars for either branch, and a non-bool condition (!= 0)."""
    check([(2, 3), (2, 3)], lambda c, a: torch.where(c > 0, a, 0.5),
          lambda c, a: (c > 0).where(a, 0.5))
    check([(2, 3), (2, 3)], lambda c, a: torch.where(c > 0, -1.0, a),
          lambda c, a: (c > 0).where(-1.0, a))
    check([[1, 0, 3, 0], [1.0, 2.0, 3.0, 4.0]], lambda c, a: torch.where(c != 0, a, -a),
          lambda c, a: c.where(a, -a))
    check([[True, False]], lambda c: torch.where(c, 3, 4), lambda c: c.where(3, 4))


def test_where_mixed_python_scalars() -> None:
    """An int and a float branch promote to float, as torch.where does."""
    check([[True, False]], lambda c: torch.where(c, 1, 2.5), lambda c: c.where(1, 2.5))


# ---------------------------------------------------------------------------------------------
# reductions

AXES = [None, 0, 1, -1, (0, 2), (-1, -3), (2, 0, 1), (1,)]


def _dims(axis):
    """torch's spelling of 'all axes' for amax and friends."""
    return () if axis is None else axis


@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions(axis, keepdim: bool) -> None:
    """sum, max, min, mean, var, std and logsumexp over every kind of axis, with keepdim."""
    shape = (2, 3, 4)
    check([shape], lambda x: x.sum(axis, keepdim))
    check([shape], lambda x: torch.amax(x, _dims(axis), keepdim), lambda x: x.max(axis, keepdim))
    check([shape], lambda x: torch.amin(x, _dims(axis), keepdim), lambda x: x.min(axis, keepdim))
    check([shape], lambda x: x.mean(axis, keepdim))
    check([shape], lambda x: torch.var(x, axis, keepdim=keepdim),
          lambda x: x.var(axis, keepdim), rtol=1e-3)
    check([shape], lambda x: torch.std(x, axis, keepdim=keepdim),
          lambda x: x.std(axis, keepdim), rtol=1e-3)
    check([shape], lambda x: torch.var(x, axis, keepdim=keepdim, correction=0),
          lambda x: x.var(axis, keepdim, correction=0), rtol=1e-3)
    check([shape], lambda x: torch.logsumexp(x, (0, 1, 2) if axis is None else axis, keepdim),
          lambda x: x.logsumexp(axis, keepdim), rtol=1e-3)


@pytest.mark.parametrize("shape", [(), (5,), (1, 1), (3, 1, 2)],
                         ids=str)
def test_reductions_small_shapes(shape) -> None:
    """Reductions of 0-d tensors and size-1 axes."""
    check([shape], lambda x: x.sum())
    check([shape], lambda x: x.mean())
    check([shape], lambda x: torch.amax(x), lambda x: x.max())
    check([shape], lambda x: x.sum(-1, True) if x.ndim else x.sum())
    check([shape], lambda x: torch.logsumexp(x, tuple(range(x.ndim))), lambda x: x.logsumexp())


def test_reduce_0d_along_its_axis() -> None:
    """Axis 0 (or -1) of a 0-d tensor names the tensor itself, as in torch."""
    check([np.array(1.5, np.float32)], lambda x: x.sum(0))
    check([np.array(1.5, np.float32)], lambda x: torch.amax(x, -1, True),
          lambda x: x.max(-1, True))
    check([np.array(1.5, np.float32)], lambda x: x.mean(0))


def test_reductions_over_size_zero() -> None:
    """A sum over an empty axis is 0, a mean nan."""
    check([(2, 0, 3)], lambda x: x.sum(1))
    check([(2, 0, 3)], lambda x: x.sum())
    check([(0,)], lambda x: x.mean(), grad=False)
    check([(2, 0)], lambda x: torch.amax(x, 0), lambda x: x.max(0))


# torch ignores keepdim without an axis, so (None, True) has no oracle and is not listed
@pytest.mark.parametrize("axis, keepdim", [(None, False), (0, False), (1, False), (-1, False),
                                           (0, True), (1, True), (-1, True)], ids=str)
def test_argmax_argmin(axis, keepdim: bool) -> None:
    """argmax/argmin give torch's indices; ties pick the first."""
    check([(3, 5)], lambda x: x.argmax(axis, keepdim))
    check([(3, 5)], lambda x: x.argmin(axis, keepdim))
    ties = [[[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 5.0], [-1.0, -2.0, -2.0, -1.0]]]
    check(ties, lambda x: x.argmax(axis, keepdim))
    check(ties, lambda x: x.argmin(axis, keepdim))
    check([[[4, 1, 4], [0, 0, -3]]], lambda x: x.argmax(axis, keepdim))


@pytest.mark.parametrize("axis", [0, -1, None])
def test_argmax_argmin_of_a_scalar(axis: int | None) -> None:
    """A 0-d tensor is its own extreme: index 0, for axis 0, -1 or None, as torch's."""
    check([np.array(3.5, np.float32)], lambda x: x.argmax(axis))
    check([np.array(3.5, np.float32)], lambda x: x.argmin(axis, True))


def test_max_min_ties_share_gradient() -> None:
    """The gradient of max/min is split evenly among tied extremes (torch.amax/amin)."""
    vals = [[[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]]
    check(vals, lambda x: torch.amax(x), lambda x: x.max())
    check(vals, lambda x: torch.amax(x, 1), lambda x: x.max(1))
    check(vals, lambda x: torch.amin(x, 0), lambda x: x.min(0))
    check([[1.0, 2.0, 2.0], [2.0, 2.0, 1.0]], torch.maximum, lambda x, y: x.maximum(y))
    check([[1.0, 2.0, 2.0], [2.0, 2.0, 1.0]], torch.minimum, lambda x, y: x.minimum(y))


def test_max_min_with_dim_give_the_gradient_to_the_first_tie() -> None:
    """torch's form, max(dim=)/min(dim=) (values and indices): the whole gradient goes to the
    place its index names, the first of tied extremes, as torch's."""
    vals = [[[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]]
    check(vals, lambda x: x.max(dim=1).values, lambda x: x.max(dim=1).values)
    check(vals, lambda x: x.min(dim=0, keepdim=True).values,
          lambda x: x.min(dim=0, keepdim=True).values)


# torch.any without dim has no keepdim, so (None, True) has no oracle and is not listed
@pytest.mark.parametrize("axis, keepdim", [(None, False), (0, False), (1, False), ((0, 1), False),
                                           (0, True), (1, True), ((0, 1), True)], ids=str)
def test_any_all(axis, keepdim: bool) -> None:
    """any and all on bools, ints and floats."""
    def t_any(x):
        return torch.any(x, dim=axis, keepdim=keepdim) if axis is not None else torch.any(x)

    def t_all(x):
        return torch.all(x, dim=axis, keepdim=keepdim) if axis is not None else torch.all(x)
    for vals in ([[True, False, True], [False, False, False]],
                 [[True, True, True], [True, False, True]], [[1, 0, 2], [0, 0, 0]],
                 [[0.5, 0.0, 1.0], [1.0, 2.0, 3.0]]):
        check([vals], t_any, lambda x: x.any(axis, keepdim), grad=False)
        check([vals], t_all, lambda x: x.all(axis, keepdim), grad=False)


def test_int_and_bool_reductions() -> None:
    """Reductions of ints keep them int; means are float."""
    ints = [[[3, -1, 4], [1, -5, 9]]]
    check(ints, lambda x: torch.amax(x, 1), lambda x: x.max(1))
    check(ints, lambda x: torch.amin(x, 1), lambda x: x.min(1))
    check(ints, lambda x: x.sum(0, dtype=torch.int32), lambda x: x.sum(0, dtype=dtypes.int32))
    check([np.array([[3, 7], [255, 0]], np.uint8)], lambda x: torch.amin(x, 1),
          lambda x: x.min(1))
    check([np.array([[3, 7], [255, 0]], np.uint8)], lambda x: torch.amax(x, 0),
          lambda x: x.max(0))


def test_int_and_bool_sums_are_int64(needs_dtypes: NeedsDtypesFixture) -> None:
    """Sums of ints and bools are int64, as torch's: 3 * 2**30 does not overflow."""
    with needs_dtypes(dtypes.int64):
        ints = [[[3, -1, 4], [1, -5, 9]]]
        check(ints, lambda x: x.sum())
        check(ints, lambda x: x.sum(0))
        check([[[True, False, True], [True, True, True]]], lambda x: x.sum(1))
        check([[[True, False, True], [True, True, True]]], lambda x: x.sum())
        check([np.array([2**30] * 3, np.int32)], lambda x: x.sum())


def test_int_min_at_dtype_minimum() -> None:
    """min and minimum are right at the smallest value of the dtype."""
    check([np.array([-128, 5, 0], np.int8)], lambda x: torch.amin(x), lambda x: x.min())
    check([np.array([-128, 5, 0], np.int8)], lambda x: torch.clamp(x, max=0),
          lambda x: x.minimum(0))


# ---------------------------------------------------------------------------------------------
# movement


@pytest.mark.parametrize("shape, new", [((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)),
                                        ((2, 3, 4), (4, -1, 2)), ((6,), (1, 6, 1)),
                                        ((), (1,)), ((1,), ()),
                                        ((2, 0), (0, 5)), ((2, 3), (3, 2))], ids=str)
def test_reshape(shape, new) -> None:
    """reshape (and view), with -1 inferred, keeps the elements in order."""
    check([shape], lambda x: x.reshape(new))
    check([shape], lambda x: x.reshape(*new) if new else x.reshape(()))
    check([shape], lambda x: x.view(new))


@pytest.mark.parametrize("shape, order", [((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (0, 1, 2)),
                                          ((2, 3), (1, 0)), ((2, 3, 4), (-1, 0, -2)),
                                          ((1, 2, 1, 3), (3, 1, 0, 2))], ids=str)
def test_permute(shape, order) -> None:
    """permute with positive and negative axes."""
    check([shape], lambda x: x.permute(order))
    check([shape], lambda x: x.permute(*order))


@pytest.mark.parametrize("shape, new", [((3, 1), (3, 4)), ((1,), (5,)),
                                        ((), (2, 3)),
                                        ((2, 1, 3), (4, 2, 5, 3)), ((3, 1), (-1, 4)),
                                        ((1, 3), (2, -1)), ((2, 3), (2, 3)), ((1,), (0,))],
                         ids=str)
def test_expand(shape, new) -> None:
    """expand grows size-1 axes and adds leading ones; -1 keeps an axis."""
    check([shape], lambda x: x.expand(new))
    check([shape], lambda x: x.expand(*new))


@pytest.mark.parametrize("flat", [(1, 2), (0, 0), (1, 1, 2, 0), (2, 0, 1, 3, 1, 1),
                                  (-1, 0), (-1, 2, 1, -2), (0, -3), (-2, -2)], ids=str)
@pytest.mark.parametrize("value", [0.0, 1.5])
def test_pad_torch_style(flat, value: float) -> None:
    """Flat pads start from the last axis; negative amounts crop; value fills."""
    check([(3, 4, 5)], lambda x: F.pad(x, flat, value=value), lambda x: x.pad(flat, value))


def test_pad_pairs() -> None:
    """Pads given as (before, after) per axis, None for untouched axes."""
    check([(2, 3)], lambda x: F.pad(x, (0, 3, 1, 2)), lambda x: x.pad(((1, 2), (0, 3))))
    check([(2, 3)], lambda x: F.pad(x, (0, 0, 1, 0), value=-1.0),
          lambda x: x.pad(((1, 0), None), -1.0))
    check([(2, 3)], lambda x: F.pad(x, (-1, 2, 0, -1)), lambda x: x.pad(((0, -1), (-1, 2))))
    check([[[1, 2], [3, 4]]], lambda x: F.pad(x, (1, 1), value=7), lambda x: x.pad((1, 1), 7))


def test_shrink() -> None:
    """shrink keeps [start, end) per axis; None keeps the axis."""
    check([(4, 5, 6)], lambda x: x[1:3, :, 2:6], lambda x: x.shrink(((1, 3), None, (2, 6))))
    check([(4, 5)], lambda x: x[0:0, 1:2], lambda x: x.shrink(((0, 0), (1, 2))))
    check([(4, 5)], lambda x: x, lambda x: x.shrink(((0, 4), (0, 5))))


@pytest.mark.parametrize("axis", [0, -1, (0, 2), (1,), (0, 1, 2)], ids=str)
def test_flip(axis) -> None:
    """flip reverses the given axes."""
    dims = axis if isinstance(axis, tuple) else (axis,)
    check([(2, 3, 4)], lambda x: torch.flip(x, dims), lambda x: x.flip(axis))


def test_transpose_and_T() -> None:
    """transpose swaps two axes (negative ones too); T reverses all axes."""
    check([(2, 3)], lambda x: x.transpose(0, 1))
    check([(2, 3, 4)], lambda x: x.transpose(-1, 0))
    check([(2, 3, 4)], lambda x: x.transpose(1, 1))
    check([(2, 3)], lambda x: x.T)
    check([(2, 3, 4)], lambda x: x.permute(2, 1, 0), lambda x: x.T)


@pytest.mark.parametrize("start, end", [(0, -1), (1, -1), (0, 1), (1, 2), (2, 2), (-2, -1)],
                         ids=str)
def test_flatten(start: int, end: int) -> None:
    """flatten merges the axes start..end."""
    check([(2, 3, 4)], lambda x: x.flatten(start, end))


def test_flatten_unflatten_squeeze_unsqueeze() -> None:
    """flatten, unflatten, squeeze (all, one, several axes), unsqueeze."""
    check([(2, 12)], lambda x: x.unflatten(1, (3, 4)))
    check([(2, 12)], lambda x: x.unflatten(-1, (3, -1)) if isinstance(x, torch.Tensor)
          else x.unflatten(-1, (3, 4)))
    check([(6, 5)], lambda x: x.unflatten(0, (2, 1, 3)))
    for dim in (None, 0, 1, -1, (0, 3), 2):
        check([(1, 3, 2, 1)], lambda x, d=dim: x.squeeze() if d is None else x.squeeze(d))
    for dim in (0, 1, 2, -1, -3):
        check([(2, 3)], lambda x, d=dim: x.unsqueeze(d))
    check([(1,)], lambda x: x.squeeze())


def test_movement_of_0d() -> None:
    """flatten, squeeze, unsqueeze and stack of 0-d tensors."""
    check([()], lambda x: x.flatten())
    check([()], lambda x: x.permute(()))
    check([()], lambda x: x.reshape(1, 1))
    check([()], lambda x: x.expand(2, 3))
    check([()], lambda x: x.squeeze())
    check([()], lambda x: x.squeeze(0))
    check([()], lambda x: x.unsqueeze(0))
    check([()], lambda x: x.unsqueeze(-1))
    check([(), ()], lambda *xs: torch.stack(xs, 0), lambda *xs: Tensor.stack(list(xs)))


@pytest.mark.parametrize("shape, reps", [((2, 3), (2, 1)), ((2, 3), (1, 3)), ((3,), (2, 2)),
                                         ((2, 1, 3), (2, 3, 1)), ((2,), (1, 1, 4)),
                                         ((2, 3), (0, 2))], ids=str)
def test_repeat(shape, reps) -> None:
    """repeat tiles the tensor, adding leading axes when given more repeats than axes."""
    check([shape], lambda x: x.repeat(reps))
    check([shape], lambda x: x.repeat(*reps))


@pytest.mark.parametrize("shapes, dim", [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 4)], 1),
                                         ([(2, 3), (2, 3)], -1), ([(3,), (0,), (2,)], 0),
                                         ([(1, 2, 3)], 2), ([(2, 2, 1), (2, 2, 3)], -1)],
                         ids=str)
def test_cat(shapes, dim: int) -> None:
    """cat joins along an existing axis, as a list or as separate arguments."""
    check(shapes, lambda *xs: torch.cat(xs, dim), lambda *xs: Tensor.cat(*xs, dim=dim))
    check(shapes, lambda *xs: torch.cat(xs, dim), lambda *xs: Tensor.cat(list(xs), dim=dim))
    if len(shapes) > 1:
        check(shapes, lambda *xs: torch.cat(xs, dim), lambda *xs: xs[0].cat_(*xs[1:], dim=dim))


def test_cat_ints_and_bools() -> None:
    """cat keeps ints and bools exact."""
    check([[[1, -2]], [[3, 4]]], lambda a, b: torch.cat([a, b], 0), lambda a, b: Tensor.cat(a, b))
    check([[True, False], [False, False, True]], lambda a, b: torch.cat([a, b]),
          lambda a, b: Tensor.cat(a, b))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack(dim: int) -> None:
    """stack joins along a new axis."""
    check([(2, 3), (2, 3), (2, 3)], lambda *xs: torch.stack(xs, dim),
          lambda *xs: Tensor.stack(*xs, dim=dim))
    check([(1,), (1,)], lambda *xs: torch.stack(xs, 0), lambda *xs: Tensor.stack(list(xs)))


@pytest.mark.parametrize("size, dim", [(2, 0), (3, 0), (5, 0), (1, 1), (2, -1), (4, 1), (7, 0)],
                         ids=str)
def test_split(size: int, dim: int) -> None:
    """split cuts into pieces of size (the last may be smaller); every piece has a gradient."""
    check([(5, 4)], lambda x: x.split(size, dim))


@pytest.mark.parametrize("chunks, dim", [(2, 0), (3, 0), (5, 0), (1, 1), (3, -1), (4, 1)],
                         ids=str)
def test_chunk(chunks: int, dim: int) -> None:
    """chunk cuts into at most `chunks` pieces as torch does."""
    check([(5, 4)], lambda x: x.chunk(chunks, dim))


# ---------------------------------------------------------------------------------------------
# indexing


def torch_index(x: torch.Tensor, index) -> torch.Tensor:
    """x[index] in torch, which has no negative slice steps: those axes use index_select."""
    index = index if isinstance(index, tuple) else (index,)
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    if Ellipsis in index:
        at = index.index(Ellipsis)
        index = index[:at] + (slice(None),) * (x.ndim - used) + index[at + 1:]
    plain, selects, dim, out_dim = [], [], 0, 0
    for i in index:
        if i is None:
            plain.append(None)
            out_dim += 1
            continue
        if isinstance(i, slice) and i.step is not None and i.step < 0:
            picked = list(range(*i.indices(x.shape[dim])))
            plain.append(slice(None))
            selects.append((out_dim, picked))
        else:
            plain.append(i)
        out_dim += 0 if isinstance(i, int) else 1
        dim += 1
    out = x[tuple(plain)]
    for d, picked in selects:
        out = out.index_select(d, torch.tensor(picked, dtype=torch.int64))
    return out


INDICES = [
    0, -1, 2, slice(1, 3), slice(None, None, 2), slice(None, None, -1), slice(3, 0, -2),
    slice(-3, None), slice(None, -1), (1, 2), (1, slice(None), -2), (Ellipsis, 1), (None, 0),
    (slice(None), None, 1), (Ellipsis, None), (1, Ellipsis, slice(None, None, -3)),
    slice(1, 1), slice(10, 20), (0, 0, 0), (None,), Ellipsis, (-4, -5, -6),
    (slice(None, None, 3), slice(None, None, -2), slice(1, None, 4)),
    (None, slice(2, None), None, Ellipsis, None), (slice(-1, -4, -1), 3), slice(-100, 100),
    (slice(None, None, -4), slice(4, None, -5)), (slice(5, 0, 1),), (np.int64(1), 2),
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_getitem(index) -> None:
    """Indexing by ints, slices with any step, None and ... gives torch's values and
    gradients."""
    check([(4, 5, 6)], lambda x: torch_index(x, index), lambda x: x[index])


def test_getitem_1d() -> None:
    """Indexing a 1-D tensor down to a scalar."""
    check([(5,)], lambda x: x[3])
    check([(5,)], lambda x: x[-5])
    check([(5,)], lambda x: x[None, 2])
    check([[[1, 2], [3, 4]]], lambda x: x[1, 0])


def test_getitem_0d() -> None:
    """A 0-d tensor takes ... and None."""
    check([()], lambda x: x[...])
    check([()], lambda x: x[None])
    check([()], lambda x: x[None, ..., None])


# ---------------------------------------------------------------------------------------------
# matmul


@pytest.mark.parametrize("a, b", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                                  ((5, 2, 3), (5, 3, 4)), ((5, 2, 3), (3, 4)),
                                  ((3,), (5, 3, 4)), ((5, 2, 3), (3,)), ((2, 1, 2, 3), (5, 3, 4)),
                                  ((1, 1), (1, 1)), ((2, 0), (0, 3)), ((4, 1, 3), (1, 3, 2))],
                         ids=str)
def test_matmul(a, b) -> None:
    """matmul, dot and @ for 1-D, 2-D, batched and broadcast-batched operands."""
    check([a, b], lambda x, y: x @ y, atol=1e-5)
    check([a, b], torch.matmul, lambda x, y: x.matmul(y), atol=1e-5)
    if len(a) <= 2 and len(b) <= 2:
        check([a, b], lambda x, y: x @ y, lambda x, y: x.dot(y), atol=1e-5)


def test_matmul_ints_and_float64(needs_dtypes: NeedsDtypesFixture) -> None:
    """Int matmul is exact; float64 keeps its precision."""
    check([[[1, 2], [3, 4]], [[5, -6], [7, 8]]], lambda x, y: x @ y)
    with needs_dtypes(dtypes.float64):
        check([(4, 5), (5, 3)], lambda x, y: x @ y, dtype=np.float64, atol=1e-12, rtol=1e-12)


def test_linear() -> None:
    """linear is x @ weight (+ bias), weight of shape (in, out)."""
    check([(2, 3), (3, 4), (4,)], lambda x, w, b: x @ w + b, lambda x, w, b: x.linear(w, b))
    check([(2, 3), (3, 4)], lambda x, w: x @ w, lambda x, w: x.linear(w))


# ---------------------------------------------------------------------------------------------
# softmax and losses


@pytest.mark.parametrize("shape, axis", [((5,), 0), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1),
                                         ((2, 3, 4), -1)], ids=str)
def test_softmax_log_softmax(shape, axis: int) -> None:
    """softmax and log_softmax along any axis, stable for large logits."""
    check([shape], lambda x: torch.softmax(x, axis), lambda x: x.softmax(axis), low=-4, high=4)
    check([shape], lambda x: torch.log_softmax(x, axis), lambda x: x.log_softmax(axis),
          low=-4, high=4)
    big = (np.random.default_rng(3).uniform(-2, 2, shape) * 500).astype(np.float32)
    check([big], lambda x: torch.softmax(x, axis), lambda x: x.softmax(axis))
    check([big], lambda x: torch.log_softmax(x, axis), lambda x: x.log_softmax(axis), rtol=1e-3)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy(reduction: str, smoothing: float) -> None:
    """cross_entropy with class indices and with class probabilities, 1-D to N-D logits."""
    def torch_ce(x, t):
        return F.cross_entropy(x, t, reduction=reduction, label_smoothing=smoothing)

    def tiny_ce(x, t):
        return x.cross_entropy(t, reduction=reduction, label_smoothing=smoothing)
    check([(4, 5), [0, 4, 2, 2]], torch_ce, tiny_ce, rtol=1e-3)
    check([(2, 3, 4), [[0, 1, 2, 2], [1, 1, 0, 2]]], torch_ce, tiny_ce, rtol=1e-3)
    probs = np.random.default_rng(1).dirichlet(np.ones(5), size=4).astype(np.float32)
    check([(4, 5), probs], torch_ce, tiny_ce, rtol=1e-3)
    if reduction != "none":
        check([(5,), [3]], lambda x, t: torch_ce(x, t[0]), lambda x, t: tiny_ce(x, t[0]),
              rtol=1e-3)
    check([(4, 5), (4, 5)], lambda x, t: torch_ce(x, t.softmax(-1)),
          lambda x, t: tiny_ce(x, t.softmax(-1)), rtol=1e-3)


def test_cross_entropy_bad_reduction() -> None:
    """An unknown reduction is a ValueError, as in torch."""
    x, t = Tensor.randn(2, 3), Tensor([0, 1])
    with pytest.raises(ValueError):
        x.cross_entropy(t, reduction="average")
    with pytest.raises(ValueError):
        F.cross_entropy(torch.randn(2, 3), torch.tensor([0, 1]), reduction="average")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_sparse_categorical_crossentropy(reduction: str, smoothing: float) -> None:
    """tinygrad's sparse cross entropy (classes last, labels of ignore_index count for nothing)
    equals torch's cross_entropy with ignore_index."""
    def torch_ce(x, t):
        x = x if x.ndim == 2 else x.permute(0, 2, 1)
        return F.cross_entropy(x, t, ignore_index=-1, reduction=reduction,
                               label_smoothing=smoothing)

    def tiny_ce(x, t):
        return x.sparse_categorical_crossentropy(t, reduction=reduction,
                                                 label_smoothing=smoothing)
    check([(5, 4), [0, 3, -1, 2, 2]], torch_ce, tiny_ce, rtol=1e-3)
    check([(5, 4), [1, 1, 0, 3, 2]], torch_ce, tiny_ce, rtol=1e-3)
    check([(2, 3, 4), [[0, -1, 3], [1, 2, -1]]], torch_ce, tiny_ce, rtol=1e-3)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_crossentropy(reduction: str) -> None:
    """binary_crossentropy on probabilities and _logits on logits, hard and soft targets."""
    hard = np.array([[0, 1, 1], [1, 0, 0]], np.float32)
    soft = np.array([[0.2, 0.9, 0.5], [1.0, 0.0, 0.3]], np.float32)
    for target in (hard, soft):
        check([(2, 3), target], lambda p, t: F.binary_cross_entropy(p, t, reduction=reduction),
              lambda p, t: p.binary_crossentropy(t, reduction=reduction), low=0.05, high=0.95,
              rtol=1e-3)
        check([(2, 3), target],
              lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction=reduction),
              lambda x, t: x.binary_crossentropy_logits(t, reduction=reduction), low=-30,
              high=30, rtol=1e-3)


def test_mse() -> None:
    """mse is torch's mse_loss."""
    for reduction in ("mean", "sum", "none"):
        check([(3, 4), (3, 4)], lambda x, y, r=reduction: F.mse_loss(x, y, reduction=r),
              lambda x, y, r=reduction: x.mse(y, reduction=r))


def test_one_hot() -> None:
    """one_hot puts a 1 at each label, along a new last axis."""
    check([[0, 2, 1, 3]], lambda t: F.one_hot(t, 4), lambda t: t.one_hot(4))
    check([[[0, 2], [1, 1]]], lambda t: F.one_hot(t, 3), lambda t: t.one_hot(3))


def test_one_hot_0d() -> None:
    """one_hot of one label is a row."""
    check([2], lambda t: F.one_hot(t, 5), lambda t: t.one_hot(5))


def test_indexing_rows_with_a_tensor_or_a_list() -> None:
    """x[idx] with an integer tensor or list picks rows of the first dimension, as in torch;
    with a gradient to carry, the picked rows' gradients add up."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([[3, 0], [-1, 1]])
    np.testing.assert_array_equal(Tensor(x)[Tensor(idx)].numpy(), x[idx])
    np.testing.assert_array_equal(Tensor(x)[[1, 1]].numpy(), x[[1, 1]])
    w = Tensor(x, requires_grad=True)
    w[Tensor([1, 1, 3])].sum().backward()
    ref = torch.tensor(x, requires_grad=True)
    ref[torch.tensor([1, 1, 3])].sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), ref.grad.numpy())
    with pytest.raises(IndexError):
        Tensor(x)[Tensor([4])]
