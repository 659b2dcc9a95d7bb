"""Issue 40's last torch names, each against torch: atan2 (arctan2) and hypot (values at zeros of
both signs, infinities and nans, gradients, result dtypes), cross, inverse (LinAlgError for a
singular matrix), the tinyfw.torch.linalg module (inv, det, solve, cross, the norms) and
torch.nonzero_static."""
from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager

import numpy as np
import pytest
import torch

import tinyfw.torch as tt
from tests.helpers import check, check_error
from tinyfw import Tensor, TinyJit, dtypes
from tinyfw.torch import linalg

# On a backend device only the distinct cases of each parametrized test run (the device
# subset, tests/conftest.py); CPU and NUMPY run them all.
pytestmark = pytest.mark.device_subset

# The needs_dtypes fixture (tests/conftest.py): a block that needs dtypes the device may lack.
NeedsDtypesFixture = Callable[..., AbstractContextManager[None]]

EDGES = [0.0, -0.0, 1.0, -1.0, 2.5, -1e-3, math.inf, -math.inf, math.nan]


def _grid() -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values: a column against a row (broadcast to a square)."""
    values = np.array(EDGES, dtype=np.float32)
    return values.reshape(-1, 1), values.reshape(1, -1)


def _same_signs(ours: np.ndarray, theirs: np.ndarray) -> None:
    """The signs of the zeros (and of everything but nan) are torch's."""
    keep = ~np.isnan(theirs)
    np.testing.assert_array_equal(np.signbit(ours[keep]), np.signbit(theirs[keep]))


# ---------------------------------------------------------------------------------------------
# atan2 and hypot


@pytest.mark.parametrize("name", ["atan2", "hypot"])
def test_edge_values_as_torch(name: str) -> None:
    """Each pair of 0, -0.0, +-1, inf, -inf and nan: torch's value, sign of zero included
    (atan2(0, -0.0) is pi, atan2(-0.0, 0) is -0.0; hypot(inf, nan) is inf)."""
    y, x = _grid()
    ours = check([y, x], getattr(torch, name), lambda a, b: getattr(a, name)(b), grad=False,
                 atol=0, rtol=1e-6)[0].numpy()
    _same_signs(ours, getattr(torch, name)(torch.tensor(y), torch.tensor(x)).numpy())


@pytest.mark.parametrize("name", ["atan2", "hypot"])
def test_gradients_at_edge_values_as_torch(name: str) -> None:
    """torch's gradients, also at (0, 0) (atan2: 0, hypot: nan), at infinities and nans."""
    y, x = _grid()
    check([y, x], getattr(torch, name), lambda a, b: getattr(a, name)(b), atol=0, rtol=1e-6,
          grad_atol=1e-7, grad_rtol=1e-5)


@pytest.mark.parametrize("name", ["atan2", "hypot"])
@pytest.mark.parametrize("shapes", [[(4, 5), (4, 5)], [(3, 1), (1, 4)], [(2, 3, 4), (4,)],
                                    [(), (3,)], [(0, 3), (1, 3)]], ids=str)
def test_random_values_and_broadcasting_as_torch(name: str, shapes: list[tuple[int, ...]]
                                                 ) -> None:
    """Random values of every sign, broadcast shapes, 0-d and empty tensors, and the
    gradients (summed over the broadcast axes)."""
    check(shapes, getattr(torch, name), lambda a, b: getattr(a, name)(b), low=-3, high=3,
          rtol=1e-5, grad_rtol=1e-5)


def test_atan2_quadrants_and_large_ratios() -> None:
    """The four quadrants and the axes, ratios from 1e-30 to 1e30 (no overflow inside)."""
    angles = np.linspace(-math.pi, math.pi, 33)
    y = np.concatenate([np.sin(angles), [1e-30, 1e30, -1e30, 3e38]]).astype(np.float32)
    x = np.concatenate([np.cos(angles), [1e30, 1e-30, -1e-30, -3e38]]).astype(np.float32)
    check([y, x], torch.atan2, lambda a, b: a.atan2(b), atol=1e-6, rtol=1e-6, grad=False)


def test_hypot_neither_overflows_nor_underflows() -> None:
    """hypot of values whose squares overflow (3e38) or underflow (1e-30) in float32."""
    a = np.array([3e38, 1e-30, 3e-30, 1e38, 0.0], dtype=np.float32)
    b = np.array([3e38, 1e-30, -4e-30, -1e-38, 1e-30], dtype=np.float32)
    check([a, b], torch.hypot, lambda p, q: p.hypot(q), atol=0, rtol=1e-6, grad_atol=0,
          grad_rtol=1e-5)


@pytest.mark.parametrize("name", ["atan2", "hypot"])
@pytest.mark.parametrize("pair", [("int64", "int64"), ("int32", "float64"), ("bool", "bool"),
                                  ("float16", "float32"), ("float16", "float16"),
                                  ("float32", "float64")], ids=str)
def test_result_dtypes_as_torch(name: str, pair: tuple[str, str],
                                needs_dtypes: NeedsDtypesFixture) -> None:
    """torch's result dtypes: ints and bools give the default float for atan2 and are
    refused by hypot (NotImplementedError, as torch's CPU kernel); halves stay halves."""
    a = np.array([1, 0, 3, 2]).astype(pair[0])
    b = np.array([2, 0, 1, 5]).astype(pair[1])
    fn: Callable[..., torch.Tensor] = getattr(torch, name)
    if name == "hypot" and not any(p.startswith("float") for p in pair):
        t_err, f_err = check_error([a, b], fn, lambda p, q: p.hypot(q))  # (refused at once)
        assert str(f_err) == str(t_err)
        return
    with needs_dtypes(*[getattr(dtypes, p) for p in pair]):
        check([a, b], fn, lambda p, q: getattr(p, name)(q), grad=False, atol=1e-3, rtol=1e-3)


def test_a_python_number_is_refused_as_torch() -> None:
    """torch takes tensors only: a number as other is a TypeError."""
    for name in ("atan2", "arctan2", "hypot"):
        with pytest.raises(TypeError, match="must be Tensor, not int"):
            getattr(Tensor([1.0]), name)(2)
        with pytest.raises(TypeError):
            getattr(torch.tensor([1.0]), name)(2)


def test_module_functions() -> None:
    """torch.atan2, torch.arctan2 and torch.hypot in tinyfw.torch."""
    y, x = tt.tensor([1.0, -1.0]), tt.tensor([-1.0, 0.0])
    ty, tx = torch.tensor([1.0, -1.0]), torch.tensor([-1.0, 0.0])
    for name in ("atan2", "arctan2", "hypot"):
        np.testing.assert_allclose(getattr(tt, name)(y, x).numpy(),
                                   getattr(torch, name)(ty, tx).numpy(), rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# cross


def _cross_dim(dim: int | None) -> tuple[Callable[..., torch.Tensor], Callable[..., Tensor]]:
    def theirs(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.cross(a, b, dim=dim)

    def ours(a: Tensor, b: Tensor) -> Tensor:
        return a.cross(b, dim=dim)
    return theirs, ours


@pytest.mark.parametrize("shapes, dim", [
    ([(3,), (3,)], 0), ([(4, 3), (4, 3)], -1), ([(3, 5), (3, 5)], 0), ([(2, 3, 4), (1, 3, 4)], 1),
    ([(4, 3), (1, 3)], 1), ([(0, 3), (0, 3)], -1), ([(2, 3, 3), (2, 3, 3)], -2)], ids=str)
def test_cross_as_torch(shapes: list[tuple[int, ...]], dim: int) -> None:
    """Values and gradients, along any axis, the other axes broadcast, empty batches."""
    check(shapes, *_cross_dim(dim), rtol=1e-5)


def test_cross_without_dim_takes_the_first_axis_of_size_3() -> None:
    """torch.cross(a, b): the first axis of a of size 3, with torch's deprecation warning;
    torch.linalg.cross: the last axis."""
    a = np.random.default_rng(0).normal(size=(3, 3)).astype(np.float32)
    b = np.random.default_rng(1).normal(size=(3, 3)).astype(np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = tt.cross(tt.tensor(a), tt.tensor(b)).numpy()
        theirs = torch.cross(torch.tensor(a), torch.tensor(b)).numpy()
    assert any("torch.cross without specifying the dim arg is deprecated" in str(w.message)
               and w.category is UserWarning for w in caught)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    np.testing.assert_allclose(linalg.cross(tt.tensor(a), tt.tensor(b)).numpy(),
                               torch.linalg.cross(torch.tensor(a), torch.tensor(b)).numpy(),
                               rtol=1e-6)
    assert not np.allclose(ours, linalg.cross(tt.tensor(a), tt.tensor(b)).numpy())


def test_cross_of_ints_keeps_the_dtype(needs_dtypes: NeedsDtypesFixture) -> None:
    """Ints cross as ints (int64 stays int64), as torch's."""
    a, b = np.array([1, 2, 3]), np.array([4, -5, 6])
    with needs_dtypes(dtypes.int64):
        check([a, b], *_cross_dim(0), grad=False, atol=0)


@pytest.mark.parametrize("shapes, dim, dtypes_", [
    ([(3, 1), (1, 3)], None, None), ([(2, 2), (2, 2)], None, None),
    ([(3, 2), (3, 2)], -1, None), ([(3, 2), (3, 3)], 1, None), ([(2, 3), (3,)], -1, None),
    ([(3,), (3,)], 1, None), ([(2, 3), (4, 3)], -1, None), ([(3,), (3,)], 0, "int64/float32"),
    ([(3,), (3,)], 0, "bool/bool")], ids=str)
def test_cross_errors_as_torch(shapes: list[tuple[int, ...]], dim: int | None,
                               dtypes_: str | None) -> None:
    """torch's exception types and words: no axis of size 3, an axis of another size, other
    numbers of axes, an axis out of range, unbroadcastable shapes, mixed dtypes, bools."""
    inputs: list = list(shapes)
    if dtypes_ is not None:
        kinds = dtypes_.split("/")
        inputs = [np.ones(s).astype(k) for s, k in zip(shapes, kinds)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_err, f_err = check_error(inputs, *_cross_dim(dim))
    if not isinstance(t_err, IndexError) and "size of tensor" not in str(t_err):
        assert str(f_err) == str(t_err)


# ---------------------------------------------------------------------------------------------
# inverse and torch.linalg.inv


def _well_conditioned(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Random matrices plus a multiple of the identity: far from singular."""
    rng = np.random.default_rng(seed)
    n = shape[-1]
    return (rng.normal(size=shape) + 2 * np.eye(n)).astype(np.float32)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (5, 5), (2, 4, 4), (2, 1, 3, 3)], ids=str)
def test_inverse_as_torch(shape: tuple[int, ...]) -> None:
    """Values and gradients (torch's -A^-T g A^-T), single and batched."""
    check([_well_conditioned(shape)], torch.linalg.inv, lambda a: a.inverse(), atol=1e-5,
          rtol=1e-4, grad_atol=1e-4, grad_rtol=1e-3)


def test_inverse_pivots_rows() -> None:
    """A zero (or tiny) leading entry needs a row swap; a permutation inverts to its
    transpose."""
    cases = [[[0.0, 1.0], [1.0, 0.0]], [[1e-8, 1.0], [1.0, 1.0]],
             [[0.0, 2.0, 0.0], [0.0, 0.0, 3.0], [4.0, 0.0, 0.0]],
             [[2.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 2.0]]]
    for case in cases:
        a = np.array(case, dtype=np.float32)
        check([a], torch.linalg.inv, lambda m: m.inverse(), atol=1e-6, rtol=1e-5)


def test_inverse_float64(needs_dtypes: NeedsDtypesFixture) -> None:
    """float64 keeps its dtype and precision."""
    with needs_dtypes(dtypes.float64):
        a = _well_conditioned((4, 4)).astype(np.float64)
        check([a], torch.linalg.inv, lambda m: m.inverse(), dtype=np.float64, atol=1e-12,
              rtol=1e-10, grad_atol=1e-10, grad_rtol=1e-9)


@pytest.mark.parametrize("matrix", [
    [[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]],
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]],
    [[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]], [[[0.0, 0.0], [0.0, 0.0]]] * 2],
    ids=str)
def test_a_singular_matrix_raises_linalg_error(matrix: list) -> None:
    """torch's LinAlgError (a RuntimeError) and its words: the first singular matrix of the
    batch and its first zero pivot; raised when the result is computed (tinyfw is lazy), also
    when the inverse is only a step of what is read."""
    a = np.array(matrix, dtype=np.float32)
    with pytest.raises(torch.linalg.LinAlgError) as theirs:
        torch.linalg.inv(torch.tensor(a))
    with pytest.raises(linalg.LinAlgError) as ours:
        Tensor(a).inverse().numpy()
    assert isinstance(ours.value, RuntimeError) and type(ours.value).__name__ == "LinAlgError"
    assert str(ours.value) == str(theirs.value)
    lazy = Tensor(a).inverse()  # nothing is computed yet: no error
    with pytest.raises(linalg.LinAlgError):
        (lazy @ Tensor.ones(a.shape[-1])).numpy()


@pytest.mark.parametrize("inputs", [[(3,)], [(2, 3)], [np.array([[1, 2], [3, 4]])],
                                    [np.ones((2, 2), dtype=np.float16)]], ids=str)
def test_inverse_errors_as_torch(inputs: list) -> None:
    """Fewer than 2 axes, a non-square matrix, ints, halves: torch's RuntimeError and words."""
    t_err, f_err = check_error(inputs, torch.linalg.inv, lambda m: m.inverse())
    assert str(f_err) == str(t_err)


@pytest.mark.parametrize("shape", [(0, 0), (0, 3, 3), (2, 0, 0)], ids=str)
def test_inverse_of_empty_matrices(shape: tuple[int, ...]) -> None:
    """No matrices, or 0 x 0 ones: an empty result of the same shape, as torch's."""
    check([np.zeros(shape, dtype=np.float32)], torch.linalg.inv, lambda m: m.inverse(),
          grad=False)


def test_inverse_of_non_finite_matrices_as_torch() -> None:
    """A nan spreads everywhere; an inf pivot gives zeros where torch's does (no error)."""
    for case in ([[math.nan, 1.0], [1.0, 1.0]], [[math.inf, 1.0], [1.0, 1.0]]):
        a = np.array(case, dtype=np.float32)
        check([a], torch.linalg.inv, lambda m: m.inverse(), grad=False)


# ---------------------------------------------------------------------------------------------
# tinyfw.torch.linalg


def test_linalg_is_importable_both_ways() -> None:
    """`torch.linalg.inv(x)` after `import tinyfw.torch as torch`, and `from tinyfw.torch
    import linalg`: one module, with torch's names."""
    import tinyfw.torch.linalg as imported
    assert tt.linalg is linalg is imported
    assert "linalg" in dir(tt)
    for name in ("inv", "det", "solve", "cross", "norm", "vector_norm", "matrix_norm",
                 "LinAlgError", "qr", "svd", "svdvals"):
        assert hasattr(tt.linalg, name), name
    assert issubclass(linalg.LinAlgError, RuntimeError)


def test_linalg_inv_det_cross_as_torch() -> None:
    a = _well_conditioned((2, 3, 3))
    check([a], torch.linalg.inv, linalg.inv, atol=1e-5, grad_atol=1e-4, grad_rtol=1e-3)
    check([a], torch.linalg.det, linalg.det, atol=1e-4)
    check([(4, 3), (1, 3)], torch.linalg.cross, linalg.cross, rtol=1e-5)
    check([(3, 4), (3, 4)], lambda p, q: torch.linalg.cross(p, q, dim=0),
          lambda p, q: linalg.cross(p, q, dim=0), rtol=1e-5)


@pytest.mark.parametrize("a_shape, b_shape, left", [
    ((3, 3), (3,), True), ((3, 3), (3, 2), True), ((2, 3, 3), (2, 3), True),
    ((2, 3, 3), (3,), True), ((2, 3, 3), (2, 3, 1), True), ((3, 3), (2, 3), False)],
    ids=str)
def test_linalg_solve_as_torch(a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                               left: bool) -> None:
    """A X = B (X A = B): vectors and matrices, batched and broadcast, and the gradients."""
    a, b = _well_conditioned(a_shape), np.random.default_rng(2).normal(size=b_shape)
    check([a, b.astype(np.float32)], lambda p, q: torch.linalg.solve(p, q, left=left),
          lambda p, q: linalg.solve(p, q, left=left), atol=1e-5, grad_atol=1e-4,
          grad_rtol=1e-3)


def test_linalg_solve_errors_as_torch() -> None:
    """Incompatible shapes: torch's words; a singular A: LinAlgError with torch's words."""
    for a, b, left in (((2, 2), (3,), True), ((2, 2), (2,), False), ((2, 3), (2,), True),
                       ((1, 1), (1,), False), ((2, 2), (2, 3), False)):
        t_err, f_err = check_error([a, b], functools.partial(torch.linalg.solve, left=left),
                                   functools.partial(linalg.solve, left=left))
        assert str(f_err) == str(t_err)
    singular = np.ones((2, 2), dtype=np.float32)
    with pytest.raises(torch.linalg.LinAlgError) as theirs:
        torch.linalg.solve(torch.tensor(singular), torch.ones(2))
    with pytest.raises(linalg.LinAlgError) as ours:
        linalg.solve(tt.tensor(singular), tt.ones(2)).numpy()
    assert str(ours.value) == str(theirs.value)


VECTOR_ORDS = [2, 1, 0, 3, 0.5, -1, math.inf, -math.inf]


@pytest.mark.parametrize("ord_", VECTOR_ORDS, ids=str)
@pytest.mark.parametrize("dim, keepdim", [(None, False), (1, False), ((0, 2), True)], ids=str)
def test_vector_norm_as_torch(ord_: float, dim: int | tuple[int, ...] | None,
                              keepdim: bool) -> None:
    """Every kind of ord over all, one or two axes, with gradients."""
    a = np.random.default_rng(3).normal(size=(2, 3, 4)).astype(np.float32)
    a[0, 0, 0] = 0.0

    def theirs(x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.vector_norm(x, ord=ord_, dim=dim, keepdim=keepdim)

    def ours(x: Tensor) -> Tensor:
        return linalg.vector_norm(x, ord=ord_, dim=dim, keepdim=keepdim)
    check([a], theirs, ours, rtol=1e-5, grad_rtol=1e-4)


@pytest.mark.parametrize("ord_", VECTOR_ORDS, ids=str)
def test_the_norm_of_zeros_has_a_zero_gradient(ord_: float) -> None:
    """A zero vector's norm has gradient 0 for every ord, as torch's (not nan)."""
    check([np.zeros(3, dtype=np.float32)], lambda x: torch.linalg.vector_norm(x, ord=ord_),
          lambda x: linalg.vector_norm(x, ord=ord_))


@pytest.mark.parametrize("ord_", ["fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2], ids=str)
@pytest.mark.parametrize("dim, keepdim", [((-2, -1), False), ((0, 2), True)], ids=str)
def test_matrix_norm_as_torch(ord_: str | float, dim: tuple[int, int], keepdim: bool) -> None:
    """Every ord (nuc and the 2-norms from the singular values), over any two axes."""
    a = np.random.default_rng(4).normal(size=(3, 2, 3)).astype(np.float32)

    def theirs(x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.matrix_norm(x, ord=ord_, dim=dim, keepdim=keepdim)

    def ours(x: Tensor) -> Tensor:
        return linalg.matrix_norm(x, ord=ord_, dim=dim, keepdim=keepdim)
    check([a], theirs, ours, atol=1e-5, rtol=1e-4, grad=ord_ not in ("nuc", 2, -2))


@pytest.mark.parametrize("shape, ord_, dim", [
    ((2, 3, 4), None, None), ((5,), 1, None), ((3, 4), None, None), ((3, 4), "fro", None),
    ((3, 4), math.inf, None), ((2, 3, 4), None, (0, 2)), ((2, 3, 4), 3, 1),
    ((2, 3, 4), None, -1)], ids=str)
def test_linalg_norm_chooses_vector_or_matrix_as_torch(shape: tuple[int, ...],
                                                       ord_: str | float | None,
                                                       dim: int | tuple[int, int] | None
                                                       ) -> None:
    def theirs(x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.norm(x, ord=ord_, dim=dim)

    def ours(x: Tensor) -> Tensor:
        return linalg.norm(x, ord=ord_, dim=dim)
    check([shape], theirs, ours, rtol=1e-5)


@pytest.mark.parametrize("call", [
    lambda m, x: m.linalg.matrix_norm(x, ord=3), lambda m, x: m.linalg.matrix_norm(x[0, 0]),
    lambda m, x: m.linalg.norm(x, ord=2), lambda m, x: m.linalg.matrix_norm(x, dim=(0, 0)),
    lambda m, x: m.linalg.norm(x, dim=(0, 1, 2)), lambda m, x: m.linalg.vector_norm(x.long()),
    lambda m, x: m.linalg.vector_norm(x[:0], ord=math.inf),
    lambda m, x: m.linalg.vector_norm(x, ord="fro")])
def test_norm_errors_as_torch(call: Callable[..., object]) -> None:
    """Unsupported orders and dims, too few axes, ints, an empty inf norm: torch's exception
    type and words."""
    a = np.random.default_rng(5).normal(size=(2, 3, 3)).astype(np.float32)
    with pytest.raises(Exception) as theirs:  # noqa: PT011 - whatever torch raises
        call(torch, torch.tensor(a))
    with pytest.raises(type(theirs.value)) as ours:
        call(tt, tt.tensor(a))
    if not isinstance(theirs.value, TypeError):
        assert str(ours.value) == str(theirs.value)


# ---------------------------------------------------------------------------------------------
# nonzero_static


def test_nonzero_static_is_torchs_and_stays_lazy(needs_dtypes: NeedsDtypesFixture) -> None:
    """torch.nonzero_static(input, *, size, fill_value): torch's rows, computed on the device
    (a TinyJit replays it for new data; nonzero's size depends on the data and is read).
    torch 2.13's nonzero and masked_select take no size=, and neither do tinyfw's."""
    with needs_dtypes(dtypes.int64):
        x = np.array([[1, 0, 2], [0, 0, 3]], dtype=np.float32)
        want = torch.nonzero_static(torch.tensor(x), size=4, fill_value=-7)
        got = tt.nonzero_static(tt.tensor(x), size=4, fill_value=-7)
        assert got.tolist() == want.tolist() and got.dtype == tt.int64

        @TinyJit
        def found(t: Tensor) -> Tensor:
            return t.nonzero_static(size=3).realize()
        for i in range(4):
            data = np.roll(x, i)
            assert found(Tensor(data)).tolist() == \
                torch.nonzero_static(torch.tensor(data), size=3).tolist()
    for fn in (torch.nonzero, tt.nonzero):
        with pytest.raises(TypeError):
            fn(torch.tensor(x) if fn is torch.nonzero else tt.tensor(x), size=2)
