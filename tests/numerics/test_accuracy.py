"""Accuracy of the composed math functions (tinyfw/uop/elementwise_math.py) over the whole float
range, in ulps of the dtype, on the device under test (DEVICE): dense grids with the hard points
(0, -0.0, denormals, 1 +- eps, multiples of pi/2, the overflow and underflow thresholds, huge
values, +-inf, nan), each function and dtype computed in one kernel. The references are float64
(numpy) for float32 and float16, and mpmath at 100 bits for float64. Special values must be
exact (nan, +-inf, the sign of a zero)."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable

import mpmath
import numpy as np
import pytest
import torch

from tinyfw import Tensor, dtypes
from tinyfw.device import Device
from tinyfw.dtype import DType

RNG_SEED = 1234


def _sigmoid_np(x: np.ndarray) -> np.ndarray:
    """sigmoid in float64 without overflow."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


# name: (tinyfw, numpy float64 reference, mpmath reference)
FUNCTIONS: dict[str, tuple[Callable[[Tensor], Tensor], Callable, Callable]] = {
    "exp": (Tensor.exp, np.exp, mpmath.exp),
    "expm1": (Tensor.expm1, np.expm1, mpmath.expm1),
    "log": (Tensor.log, np.log, mpmath.log),
    "log1p": (Tensor.log1p, np.log1p, mpmath.log1p),
    "cos": (Tensor.cos, np.cos, mpmath.cos),
    "tan": (Tensor.tan, np.tan, mpmath.tan),
    "tanh": (Tensor.tanh, np.tanh, mpmath.tanh),
    "sigmoid": (Tensor.sigmoid, _sigmoid_np, lambda x: 1 / (1 + mpmath.exp(-x))),
}

# The largest error allowed, in ulps. float16 computes in float32 and rounds once.
BOUNDS = {"exp": 2.0, "expm1": 2.5, "log": 2.0, "log1p": 2.5, "cos": 3.0, "tan": 4.0,
          "tanh": 3.0, "sigmoid": 2.5}
FLOAT16_BOUND = 1.0
# lavapipe's sin and cos of |r| <= pi/4 (what WEBGPU's SIN ends with) are good to 3 ulp, not 0.5
WEBGPU_SLACK = {"cos": 1.0, "tan": 1.5}


def hard_points(dt: np.dtype) -> np.ndarray:
    """The inputs where naive compositions go wrong, and the special values."""
    info = np.finfo(dt)
    eps, tiny, big = float(info.eps), float(info.tiny), float(info.max)
    pi2 = [float(dt.type(k * math.pi / 2)) for k in range(-8, 9)]
    points = [0.0, -0.0, tiny, -tiny, tiny / 2**5, float(info.smallest_subnormal),
              -float(info.smallest_subnormal), 1e-30, 1e-10, -1e-10, 1e-8, 1e-5, 0.5, 1.0,
              1 + eps, 1 - eps / 2, 1 - eps, 2.0, -1.0, -1 + eps / 2, -0.5, 3e7, -3e7, 1e10,
              big, -big, big / 2, big / 4, math.inf, -math.inf, math.nan,
              # exp's overflow and underflow thresholds (float32, float64, float16)
              88.72283, 88.72284, 89.0, -87.33655, -103.2789, -103.9721, -104.0, 709.78,
              709.79, -708.39, -745.13, -745.2, 11.09, -17.33, -9.7, 20.0, -20.0, 9.0, 44.0]
    points += pi2 + [np.nextafter(dt.type(p), dt.type(math.inf)) for p in pi2]
    points += [np.nextafter(dt.type(p), dt.type(-math.inf)) for p in pi2]
    with np.errstate(over="ignore"):
        return np.array(points, dtype=np.float64).astype(dt)


def random_floats(dt: np.dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    """n finite floats of random bits: every binade, denormals and huge values equally often."""
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize]
    raw = rng.integers(0, np.iinfo(bits).max, size=4 * n, dtype=bits,
                       endpoint=True).view(dt)
    return raw[np.isfinite(raw)][:n]


def inputs(name: str, dt: np.dtype, n: int) -> np.ndarray:
    """The grid for one function: random bits, the function's interesting range densely, and
    the hard points."""
    rng = np.random.default_rng(RNG_SEED)
    info = np.finfo(dt)
    top = math.log(float(info.max))  # exp's overflow threshold
    bottom = math.log(float(info.smallest_subnormal))
    dense = {
        "exp": [rng.uniform(bottom - 2, top + 2, n), rng.uniform(-1, 1, n)],
        "expm1": [rng.uniform(-3, 3, n), rng.uniform(bottom, top + 2, n),
                  np.sign(rng.uniform(-1, 1, n)) * 10.0 ** rng.uniform(-40, 0, n)],
        "log": [np.exp(rng.uniform(-5, 5, n)), 1 + rng.uniform(-0.3, 0.3, n),
                1 + rng.integers(-1000, 1000, n) * float(info.eps)],
        "log1p": [rng.uniform(-1, 3, n), np.sign(rng.uniform(-1, 1, n)) * 10.0 ** rng.uniform(
            -40, 0, n)],
        "cos": [rng.uniform(-7, 7, n), rng.uniform(-1e6, 1e6, n),
                (rng.integers(-10000, 10000, n) * (math.pi / 2)).astype(dt)],
        "tan": [rng.uniform(-7, 7, n), rng.uniform(-1e6, 1e6, n),
                (rng.integers(-10000, 10000, n) * (math.pi / 2)).astype(dt)],
        "tanh": [rng.uniform(-12, 12, n), np.sign(rng.uniform(-1, 1, n)) * 10.0 ** rng.uniform(
            -40, 0, n)],
        "sigmoid": [rng.uniform(-110, 40, n), rng.uniform(-3, 3, n)],
    }[name]
    with np.errstate(over="ignore"):
        parts = [random_floats(dt, n, rng)] + [np.asarray(d).astype(dt) for d in dense]
    return np.concatenate(parts + [hard_points(dt)])


@functools.cache
def mp_reference(name: str, values: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The exact value of fn at each (finite) input as float64 hi + lo, from mpmath."""
    fn = FUNCTIONS[name][2]
    hi, lo = np.empty(len(values)), np.empty(len(values))
    with mpmath.workprec(100):
        for i, v in enumerate(values):
            if not math.isfinite(v) or (name in ("log",) and v <= 0) or (name == "log1p" and
                                                                      v <= -1):
                hi[i] = lo[i] = math.nan  # the special values come from numpy
                continue
            exact = fn(mpmath.mpf(v))
            h = float(exact)
            hi[i], lo[i] = h, float(exact - h) if math.isfinite(h) else 0.0
    return hi, lo


def reference(name: str, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """fn(x) as hi + lo float64 pairs: numpy's float64 for narrow dtypes and the special
    values, mpmath's for float64."""
    with np.errstate(all="ignore"):
        ref = FUNCTIONS[name][1](x.astype(np.float64))
    lo = np.zeros_like(ref)
    if x.dtype == np.float64:
        hi_mp, lo_mp = mp_reference(name, tuple(x.tolist()))
        use = np.isfinite(hi_mp) & (x != 0)  # mpmath has no -0.0: numpy's zeros keep signs
        ref, lo = np.where(use, hi_mp, ref), np.where(use, lo_mp, 0.0)
    return ref, lo


def ulp_errors(got: np.ndarray, hi: np.ndarray, lo: np.ndarray, dt: np.dtype) -> np.ndarray:
    """|got - exact| in ulps of dt at the exact value (the smallest denormal's spacing below);
    nan where the exact value is not finite or got is not finite."""
    with np.errstate(all="ignore"):
        rounded = hi.astype(dt)
        spacing = np.spacing(np.abs(rounded)).astype(np.float64)
        spacing = np.where(np.isfinite(spacing), spacing, np.spacing(dt.type(np.finfo(dt).max)))
        err = np.abs((got.astype(np.float64) - hi) - lo) / spacing
    return np.where(np.isfinite(rounded) & np.isfinite(got), err, np.nan)


def special_mismatches(got: np.ndarray, hi: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Where the exact result rounds to nan, +-inf or a zero (of a sign) in dt, but got differs."""
    with np.errstate(all="ignore"):
        want = hi.astype(dt)
    special = ~np.isfinite(want) | (want == 0)
    same = (np.isnan(want) & np.isnan(got)) | ((want == got) & (np.signbit(want) ==
                                                                  np.signbit(got)))
    # a result on the edge of underflow may round to 0 or the smallest denormal
    edge = (want == 0) & (np.abs(got) <= np.finfo(dt).smallest_subnormal) & \
        (np.signbit(want) == np.signbit(got))
    return special & ~same & ~edge


def device_domain(name: str, x: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The inputs the device under test can be held to. WEBGPU (lavapipe) flushes denormals to
    zero, and its SIN (tf_sin in tinyfw/renderer/wgsl.py, which cos and tan are made of) is
    accurate for |x| < 1e5 only: cos and tan (of sin(2x)) are checked there on |x| <= 5e4."""
    keep = np.ones(x.shape, bool)
    if name in ("cos", "tan"):  # past half the largest float, cos is accurate in absolute terms
        keep &= ~(np.abs(x) > float(np.finfo(x.dtype).max) / 2)  # (test_cos_huge)
    if Device.DEFAULT == "WEBGPU":
        tiny = np.finfo(x.dtype).tiny
        with np.errstate(all="ignore"):
            keep &= ~((np.abs(x) < tiny) & (x != 0)) & ~((np.abs(hi) < tiny) & (hi != 0))
        if name in ("cos", "tan"):
            keep &= ~(np.abs(x) > 5e4) | ~np.isfinite(x)
    return keep


DTYPES = [dtypes.float32, dtypes.float64, dtypes.float16]


def measure(name: str, dtype: DType, n: int = 4000) -> tuple[float, np.ndarray, np.ndarray,
                                                            np.ndarray]:
    """(max ulp error, inputs, results, mismatched specials) of one function in one dtype."""
    dt = dtype.np
    x = inputs(name, dt, n if dtype != dtypes.float64 else n // 4)
    got = FUNCTIONS[name][0](Tensor(x, dtype=dtype)).numpy()
    hi, lo = reference(name, x)
    keep = device_domain(name, x, hi)
    x, got, hi, lo = x[keep], got[keep], hi[keep], lo[keep]
    err = ulp_errors(got, hi, lo, dt)
    return float(np.nanmax(err)), x, got, special_mismatches(got, hi, dt)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_accuracy(name: str, dtype: DType, needs_dtypes) -> None:
    """fn is within its bound in ulps on the whole grid, and its special values are exact."""
    with needs_dtypes(dtype):
        worst, x, got, bad = measure(name, dtype)
    bound = FLOAT16_BOUND if dtype == dtypes.float16 else BOUNDS[name]
    if Device.DEFAULT == "WEBGPU":
        bound += WEBGPU_SLACK.get(name, 0.0)
    assert not bad.any(), (f"{name} special values wrong at {x[bad][:8]}: got {got[bad][:8]}")
    assert worst <= bound, f"{name} {dtype.name}: {worst:.2f} ulp (bound {bound})"


@pytest.mark.parametrize("dtype", DTYPES[:2], ids=lambda d: d.name)
def test_cos_huge(dtype: DType, needs_dtypes) -> None:
    """Past half the largest float (where 2x overflows) cos is within 2 ulp of 1 absolutely."""
    rng = np.random.default_rng(RNG_SEED)
    big = float(np.finfo(dtype.np).max)
    x = (rng.uniform(big / 2, big, 2000) * np.where(rng.random(2000) < 0.5, -1, 1)).astype(
        dtype.np)
    if Device.DEFAULT == "WEBGPU" and dtype == dtypes.float32:
        pytest.skip("WEBGPU's SIN (tf_sin) is accurate for |x| < 1e5 only")
    with needs_dtypes(dtype):
        got = Tensor(x).cos().numpy().astype(np.float64)
    want = mp_reference("cos", tuple(x.astype(np.float64).tolist()))[0]
    assert np.max(np.abs(got - want)) <= 2 * float(np.finfo(dtype.np).eps)


GRADIENTS = {
    "exp": [-100.0, -5.0, -0.0, 0.0, 1e-6, 3.0, 80.0],
    "expm1": [-50.0, -1.0, -1e-7, 0.0, 1e-7, 1.0, 30.0],
    "log": [1e-30, 1e-3, 0.5, 1.0, 1.0 + 1e-6, 7.0, 1e30],
    "log1p": [-0.9, -1e-7, 0.0, 1e-10, 1e-3, 2.0, 1e20],
    "cos": [0.0, 1e-8, 1.0, math.pi / 2, 3.0, math.pi, 1e4],
    "tan": [0.0, 1e-8, 1.0, 1.5, 3.0, -2.0, 100.0],
    "tanh": [-30.0, -3.0, -1e-8, 0.0, 1e-8, 0.5, 8.0],
    "sigmoid": [-100.0, -10.0, -1e-8, 0.0, 1e-8, 3.0, 50.0],
}


# the exact derivatives (torch's lose accuracy where tanh and sigmoid round to 1)
DERIVATIVES: dict[str, Callable] = {
    "exp": mpmath.exp, "expm1": mpmath.exp, "log": lambda x: 1 / x, "log1p": lambda x: 1 / (1 + x),
    "cos": lambda x: -mpmath.sin(x), "tan": lambda x: 1 / mpmath.cos(x) ** 2,
    "tanh": lambda x: 1 / mpmath.cosh(x) ** 2,
    "sigmoid": lambda x: mpmath.exp(-x) / (1 + mpmath.exp(-x)) ** 2,
}


@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(GRADIENTS))
def test_gradient(name: str, dtype: DType, needs_dtypes) -> None:
    """The gradient of the composition (from the primitives' rules) is the exact derivative,
    without nan from the branches WHERE does not select."""
    values = np.array(GRADIENTS[name], dtype=dtype.np)
    with needs_dtypes(dtype):
        x = Tensor(values, dtype=dtype, requires_grad=True)
        FUNCTIONS[name][0](x).sum().backward()
        assert x.grad is not None
        got = x.grad.numpy()
    with mpmath.workprec(100):
        want = np.array([float(DERIVATIVES[name](mpmath.mpf(float(v)))) for v in values])
    rtol = 1e-5 if dtype == dtypes.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-30, err_msg=f"d {name}")


def test_one_kernel_per_function() -> None:
    """Each function is one elementwise kernel, whatever it is made of."""
    x = Tensor(np.linspace(-3, 3, 16, dtype=np.float32))
    for name, (fn, _, _) in FUNCTIONS.items():
        assert len(fn(x).schedule()) == 1, name


# log and log1p are left out below 0 (and at nan): there their gradient is 0 (the special value
# is a constant), where torch's is 1/x (nan's is nan)
SPECIAL_GRADIENT_INPUTS = [-math.inf, -1e30, -0.0, 0.0, 1e-40, 1e30, math.inf]


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_gradient_special_values(name: str) -> None:
    """At infinities, zeros and huge values the gradient is torch's: inf, 0 or nan alike."""
    values = np.array(SPECIAL_GRADIENT_INPUTS, dtype=np.float32)
    if name in ("log", "log1p"):
        values = values[values > 0]
    if name in ("cos", "tan") and Device.DEFAULT == "WEBGPU":  # its SIN is good to |x| < 1e5
        values = values[~(np.abs(values) > 1e5)]
    x = Tensor(values, requires_grad=True)
    FUNCTIONS[name][0](x).sum().backward()
    assert x.grad is not None
    t = torch.tensor(values, requires_grad=True)
    getattr(torch, name)(t).sum().backward()
    assert t.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=0,
                               err_msg=f"d {name} at {values}")


def test_pow_float32() -> None:
    """a ** b for float32 a > 0 and non-integer b is within 1 ulp of the float64 power, over
    results from tiny to huge (b * log2 a up to +-120), where exp2 of a rounded b * log2 a was
    up to ~60 ulp off; it is computed in float64 on devices that have it."""
    if not Device[Device.DEFAULT].has_float64:
        pytest.skip(f"{Device.DEFAULT} has no float64: its a ** b of float32 is exp2(b * log2 a) "
                    "in float32, whose error grows with |b log2 a| (site/correctness.md)")
    rng = np.random.default_rng(RNG_SEED)
    a = np.exp2(rng.uniform(-12, 12, 20000)).astype(np.float32)
    b = (rng.uniform(-10, 10, 20000) + 0.37).astype(np.float32)
    got = (Tensor(a) ** Tensor(b)).numpy()
    hi = np.power(a.astype(np.float64), b.astype(np.float64))
    err = ulp_errors(got, hi, np.zeros_like(hi), np.dtype(np.float32))
    assert float(np.nanmax(err)) <= 1.0, f"a ** b: {np.nanmax(err):.2f} ulp"
