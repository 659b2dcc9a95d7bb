"""The shape methods of issue 11 give PyTorch's values, gradients and exception types: tril triu
diag diagonal roll unfold repeat_interleave clone pad(mode=) repeat split reshape einsum."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.helpers import check, check_error
from tinyfw import Tensor, dtypes

# On a backend device only the distinct cases of each parametrized test run (the device
# subset, tests/conftest.py); CPU and NUMPY run them all.
pytestmark = pytest.mark.device_subset

KINDS = [np.float32, np.int32]  # each case runs with float inputs (and gradients) and int ones
Shape = tuple[int, ...]


# ---------------------------------------------------------------------------------------------
# tril, triu

@pytest.mark.parametrize("dtype", KINDS, ids=["float32", "int32"])
@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 3, 3), (0, 3), (3, 0), (1, 1)], ids=str)
@pytest.mark.parametrize("k", [0, 1, -1, 2, -3, 4, -4, 100, -100])
def test_tril_triu(shape: Shape, k: int, dtype: Any) -> None:
    """tril and triu keep one side of the k-th diagonal, even for k beyond the matrix."""
    check([shape], lambda x: x.tril(k), dtype=dtype)
    check([shape], lambda x: x.triu(diagonal=k), dtype=dtype)


def test_tril_triu_bool_and_errors() -> None:
    """A bool matrix stays bool; fewer than 2 dimensions is torch's RuntimeError."""
    a = np.array([[True, True], [True, False]])
    check([a], lambda x: x.tril())
    check([a], lambda x: x.triu(1))
    check_error([(3,)], lambda x: x.tril())
    check_error([()], lambda x: x.triu())


# ---------------------------------------------------------------------------------------------
# diagonal, diag

@pytest.mark.parametrize("dtype", KINDS, ids=["float32", "int32"])
@pytest.mark.parametrize("shape, args", [
    ((3, 4), (0, 0, 1)), ((3, 4), (1, 0, 1)), ((3, 4), (-2, 0, 1)), ((3, 4), (5, 0, 1)),
    ((3, 4), (-5, 0, 1)), ((3, 4), (0, 1, 0)), ((2, 3, 4), (0, 0, 2)), ((2, 3, 4), (1, -1, -2)),
    ((2, 3, 4), (-1, 2, 1)), ((0, 3), (0, 0, 1)), ((3, 3), (3, 0, 1)), ((1, 1), (0, 0, 1))],
    ids=str)
def test_diagonal(shape: Shape, args: tuple[int, int, int], dtype: Any) -> None:
    """diagonal(offset, dim1, dim2): the diagonal as the last axis, negative dims too."""
    check([shape], lambda x: x.diagonal(*args), dtype=dtype)
    check([shape], lambda x: x.diagonal(offset=args[0], dim1=args[1], dim2=args[2]),
          dtype=dtype)


def test_diagonal_is_a_view() -> None:
    """A write to the diagonal writes into the tensor, as torch's view does."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t, ref = Tensor(a.copy()), torch.tensor(a.copy())
    t.diagonal(1).assign(Tensor([-1.0, -2.0, -3.0]))
    ref.diagonal(1).copy_(torch.tensor([-1.0, -2.0, -3.0]))
    np.testing.assert_array_equal(t.numpy(), ref.numpy())


def test_diagonal_errors() -> None:
    """The same dimension twice is RuntimeError; a dim out of range (1-D input) IndexError."""
    check_error([(3, 4)], lambda x: x.diagonal(0, 1, 1))
    check_error([(3, 4)], lambda x: x.diagonal(0, -1, 1))
    check_error([(3,)], lambda x: x.diagonal())
    check_error([(3, 4)], lambda x: x.diagonal(0, 0, 2))


@pytest.mark.parametrize("dtype", KINDS, ids=["float32", "int32"])
@pytest.mark.parametrize("shape", [(3,), (1,), (0,), (3, 4), (4, 3), (0, 2)], ids=str)
@pytest.mark.parametrize("k", [0, 1, -2, 5])
def test_diag(shape: Shape, k: int, dtype: Any) -> None:
    """diag: a vector as the k-th diagonal of a square matrix, or a matrix's k-th diagonal."""
    check([shape], lambda x: x.diag(k), dtype=dtype)
    check([shape], lambda x: torch.diag(x, k), lambda x: x.diag(diagonal=k), dtype=dtype)


def test_diag_errors() -> None:
    """diag of a 0-D or 3-D tensor is torch's RuntimeError."""
    check_error([(2, 2, 2)], lambda x: x.diag())
    check_error([()], lambda x: x.diag())


# ---------------------------------------------------------------------------------------------
# roll

@pytest.mark.parametrize("dtype", KINDS, ids=["float32", "int32"])
@pytest.mark.parametrize("shape, shifts, dims", [
    ((5,), 2, 0), ((5,), -2, 0), ((5,), 0, 0), ((5,), 5, 0), ((5,), 13, -1), ((5,), -11, None),
    ((3, 4), 1, None), ((3, 4), 7, None), ((3, 4), (1, -1), (0, 1)), ((3, 4), (2, 3), (1, 1)),
    ((2, 3, 4), (1, 2), (-1, 0)), ((3, 4), [0, 0], [0, 1]), ((0, 3), 1, 1), ((0, 3), 2, 0),
    ((3, 0), 2, None), ((), 3, None), ((2, 3), (5,), (1,))], ids=str)
def test_roll(shape: Shape, shifts: Any, dims: Any, dtype: Any) -> None:
    """roll wraps elements around, per dim or over the flattened tensor; zero and whole shifts
    and empty tensors change nothing."""
    check([shape], lambda x: x.roll(shifts, dims), dtype=dtype)
    check([shape], lambda x: torch.roll(x, shifts=shifts, dims=dims),
          lambda x: x.roll(shifts=shifts, dims=dims), dtype=dtype)


@pytest.mark.parametrize("shape, shifts, dims", [
    ((3, 4), (1, 2), None), ((3, 4), 1, (0, 1)), ((3, 4), (1, 2), (0,)), ((3, 4), 1, 2),
    ((), 1, 0)], ids=str)
def test_roll_errors(shape: Shape, shifts: Any, dims: Any) -> None:
    """Shifts and dims of different lengths are RuntimeError; a dim out of range IndexError."""
    check_error([shape], lambda x: x.roll(shifts, dims))


# ---------------------------------------------------------------------------------------------
# unfold

@pytest.mark.parametrize("dtype", KINDS, ids=["float32", "int32"])
@pytest.mark.parametrize("shape, dim, size, step", [
    ((8,), 0, 2, 2), ((8,), 0, 3, 1), ((8,), 0, 3, 2), ((8,), 0, 8, 1), ((8,), 0, 1, 5),
    ((8,), 0, 3, 10), ((8,), 0, 0, 3), ((3, 5), 1, 2, 1), ((3, 5), -1, 4, 2), ((3, 5), 0, 2, 1),
    ((2, 3, 4), 1, 2, 1), ((2, 3, 4), -3, 1, 1), ((0, 4), 1, 2, 1), ((4, 0), 1, 0, 1),
    ((), 0, 1, 1)], ids=str)
def test_unfold(shape: Shape, dim: int, size: int, step: int, dtype: Any) -> None:
    """unfold's windows, overlapping or with gaps, their gradients summed where they overlap."""
    check([shape], lambda x: x.unfold(dim, size, step), dtype=dtype)


@pytest.mark.parametrize("shape, dim, size, step", [
    ((3, 5), 1, 6, 1), ((3, 5), 1, 2, 0), ((3, 5), 1, 2, -1), ((3, 5), 1, -1, 1),
    ((3, 5), 2, 2, 1), ((3, 5), -3, 2, 1)], ids=str)
def test_unfold_errors(shape: Shape, dim: int, size: int, step: int) -> None:
    """A window larger than the axis, a step or size out of range is RuntimeError; a dim out of
    range IndexError."""
    check_error([shape], lambda x: x.unfold(dim, size, step))


def test_unfold_writes() -> None:
    """A write to one window of overlapping windows is torch's; to all of them at once (torch
    writes the shared elements once per window, in its own order) a RuntimeError, not a
    silent write to a copy."""
    t, ref = Tensor(np.arange(6, dtype=np.float32)), torch.arange(6.0)
    t.unfold(0, 3, 1)[0] = 0.0
    ref.unfold(0, 3, 1)[0] = 0.0
    np.testing.assert_array_equal(t.numpy(), ref.numpy())
    with pytest.raises(RuntimeError, match="overlapping"):
        t.unfold(0, 3, 1).mul_(2)


# ---------------------------------------------------------------------------------------------
# repeat_interleave, repeat, clone

@pytest.mark.parametrize("dtype", KINDS, ids=["float32", "int32"])
@pytest.mark.parametrize("shape, repeats, dim", [
    ((3,), 2, None), ((2, 3), 3, None), ((2, 3), 2, 0), ((2, 3), 2, 1), ((2, 3), 1, -1),
    ((2, 3), 0, 1), ((2, 3, 4), 2, -2), ((0, 3), 2, 0), ((), 3, None)], ids=str)
def test_repeat_interleave(shape: Shape, repeats: int, dim: int | None, dtype: Any) -> None:
    """Each element repeated in a row along dim (the flattened tensor when dim is None)."""
    check([shape], lambda x: x.repeat_interleave(repeats, dim), dtype=dtype)


def test_repeat_interleave_errors() -> None:
    """Negative repeats are RuntimeError, a dim out of range IndexError."""
    check_error([(2, 3)], lambda x: x.repeat_interleave(-1))
    check_error([(2, 3)], lambda x: x.repeat_interleave(2, 2))


@pytest.mark.parametrize("dtype", KINDS, ids=["float32", "int32"])
@pytest.mark.parametrize("shape, repeats", [
    ((3,), (2, 2)), ((3,), (1, 2, 3)), ((2, 3), (2, 1, 1, 2)), ((), (2, 3)), ((2, 0), (3, 1, 2)),
    ((2, 3), (0, 1, 1))], ids=str)
def test_repeat_more_dims(shape: Shape, repeats: tuple[int, ...], dtype: Any) -> None:
    """repeat with more repeats than dims: new leading axes, as torch's."""
    check([shape], lambda x: x.repeat(*repeats), dtype=dtype)
    check([shape], lambda x: x.repeat(repeats), dtype=dtype)


@pytest.mark.parametrize("dtype", KINDS, ids=["float32", "int32"])
def test_clone(dtype: Any) -> None:
    """clone: the same values, gradients flow back, and it is a tensor of its own."""
    check([(2, 3)], lambda x: x.clone() * 2, dtype=dtype)
    t = Tensor(np.arange(6, dtype=dtype).reshape(2, 3))
    c = t.clone()
    c.assign(Tensor(np.zeros((2, 3), dtype=dtype)))
    t[0, 0] = 9
    assert c.numpy().sum() == 0 and t.numpy()[0, 0] == 9 and c.dtype == t.dtype
    assert t[1].clone().numpy().tolist() == [3, 4, 5]
    t[1].clone().assign(Tensor(np.zeros(3, dtype=dtype)))  # a copy: t keeps its row
    assert t.numpy()[1].tolist() == [3, 4, 5]


# ---------------------------------------------------------------------------------------------
# pad

@pytest.mark.parametrize("dtype", KINDS, ids=["float32", "int32"])
@pytest.mark.parametrize("shape, padding, value", [
    ((2, 3), (1, 2), 0.0), ((2, 3), (1, 2, 0, 1), 1.5), ((2, 3), (-1, 2), 0.0), ((2, 3), (0, 0), 0),
    ((2, 3), (-1, -1, 1, 0), 2.0), ((2, 0), (1, 1), -1.0), ((3,), (2, 1), 7.0)], ids=str)
def test_pad_constant(shape: Shape, padding: tuple[int, ...], value: float, dtype: Any) -> None:
    """The constant pad as before (torch's flat order: last dim first), mode= given or not."""
    fill = int(value) if dtype is np.int32 else value
    check([shape], lambda x: F.pad(x, padding, value=fill),
          lambda x: x.pad(padding, value=fill), dtype=dtype)
    check([shape], lambda x: F.pad(x, padding, mode="constant", value=fill),
          lambda x: x.pad(padding, mode="constant", value=fill), dtype=dtype)


def test_pad_grouped_form_still_works() -> None:
    """tinygrad's ((before, after), ...) form, with None for an axis left alone."""
    check([(2, 3)], lambda x: F.pad(x, (1, 2, 0, 1)), lambda x: x.pad(((0, 1), (1, 2))))
    check([(2, 3)], lambda x: F.pad(x, (1, 2), mode="reflect"),
          lambda x: x.pad((None, (1, 2)), mode="reflect"))


MODE_CASES = [
    ((2, 5), (1, 2)), ((2, 5), (4, 4)), ((2, 5), (0, 3)), ((2, 5), (-1, 2)), ((2, 5), (2, -2)),
    ((2, 5), (0, 0)), ((1, 2, 3, 4), (1, 2, 2, 1)), ((2, 3, 4), (3, 0, 2, 2)), ((1, 3), (2, 2)),
    ((1, 2, 3, 4, 2), (1, 1, 2, 0, 1, 2))]


@pytest.mark.parametrize("dtype", KINDS, ids=["float32", "int32"])
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape, padding", MODE_CASES, ids=str)
def test_pad_modes(shape: Shape, padding: tuple[int, ...], mode: str, dtype: Any) -> None:
    """reflect, replicate and circular pads (as wide as torch allows: reflect up to size - 1,
    circular up to size), with negative amounts that crop."""
    if mode == "circular" and padding == (2, -2):
        pytest.skip("torch's circular pad fails to wrap from a cropped edge (an in-place error)")
    check([shape], lambda x: F.pad(x, padding, mode=mode),
          lambda x: x.pad(padding, mode=mode), dtype=dtype)


@pytest.mark.parametrize("shape, padding, mode", [
    ((2, 5), (5, 0), "reflect"), ((2, 5), (1, 5), "reflect"), ((2, 5), (6, 0), "circular"),
    ((2, 5), (0, 7), "circular"), ((2, 5), (-3, -3), "reflect"), ((2, 5), (-3, -3), "replicate"),
    ((2, 5), (-3, -3), "circular"), ((2, 0), (1, 1), "replicate"), ((2, 0), (1, 1), "reflect"),
    ((2, 5), (-5, 0), "reflect")], ids=str)
def test_pad_mode_errors(shape: Shape, padding: tuple[int, ...], mode: str) -> None:
    """Beyond what torch allows, torch's RuntimeError: a reflection as wide as the axis, a wrap
    around more than once, a result of size 0 or less, nothing to replicate."""
    check_error([shape], lambda x: F.pad(x, padding, mode=mode),
                lambda x: x.pad(padding, mode=mode))


def test_pad_mode_bad_arguments() -> None:
    """An unknown mode is NotImplementedError; a value with a mode other than constant is
    RuntimeError; odd flat padding is RuntimeError."""
    check_error([(2, 3)], lambda x: F.pad(x, (1, 1), mode="wrap"),
                lambda x: x.pad((1, 1), mode="wrap"))
    check_error([(2, 3)], lambda x: F.pad(x, (1, 1), mode="reflect", value=2.0),
                lambda x: x.pad((1, 1), mode="reflect", value=2.0))
    check_error([(2, 3)], lambda x: F.pad(x, (1, 1, 1), mode="reflect"),
                lambda x: x.pad((1, 1, 1), mode="reflect"))


# ---------------------------------------------------------------------------------------------
# split, reshape

@pytest.mark.parametrize("dtype", KINDS, ids=["float32", "int32"])
@pytest.mark.parametrize("shape, sizes, dim", [
    ((5, 2), [1, 4], 0), ((5, 2), [2, 0, 3], 0), ((5, 2), [2], 1), ((2, 5), (1, 1, 3), -1),
    ((5, 2), [5], 0), ((0, 2), [0, 0], 0), ((0, 2), 2, 0), ((5, 2), 2, 0), ((5, 2), 7, 0)],
    ids=str)
def test_split_sizes(shape: Shape, sizes: Any, dim: int, dtype: Any) -> None:
    """split with a list of sizes (or one size; an empty axis gives one empty piece)."""
    check([shape], lambda x: x.split(sizes, dim), dtype=dtype)


def test_split_errors() -> None:
    """Sizes that do not add up, or a negative one, are RuntimeError."""
    check_error([(5, 2)], lambda x: x.split([1, 2]))
    check_error([(5, 2)], lambda x: x.split([6, -1]))
    check_error([(5, 2)], lambda x: x.split([1, 4], 2))


@pytest.mark.parametrize("shape, new, like", [
    ((2, 3, 4), (None, 12), (2, 12)), ((2, 3, 4), (None, None, 4), (2, 3, 4)),
    ((2, 3, 4), (None, -1), (2, 12)), ((2, 3, 4), (None, 3, 2, 2), (2, 3, 2, 2)),
    ((2, 3, 4), (-1, None, 1), (8, 3, 1)), ((0, 3), (None, None, 1), (0, 3, 1))], ids=str)
def test_reshape_none(shape: Shape, new: tuple, like: Shape) -> None:
    """None keeps the size of the axis at its position (tinygrad's reshape), -1 is inferred."""
    check([shape], lambda x: x.reshape(like), lambda x: x.reshape(new))
    check([shape], lambda x: x.reshape(*like), lambda x: x.reshape(*new))


def test_reshape_none_errors() -> None:
    """None past the last axis is IndexError; a size that does not fit stays RuntimeError."""
    with pytest.raises(IndexError):
        Tensor.ones(2, 3).reshape(None, 3, None)
    with pytest.raises(RuntimeError):
        Tensor.ones(2, 3).reshape(None, 4)


# ---------------------------------------------------------------------------------------------
# einsum

EINSUMS: list[tuple[str, list[Shape]]] = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ij->ji", [(2, 3)]),
    ("ji", [(2, 3)]), ("ij->", [(2, 3)]), ("ii", [(3, 3)]), ("ii->i", [(3, 3)]),
    ("i,i->", [(4,), (4,)]), ("i,j->ij", [(3,), (2,)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bii->b", [(2, 3, 3)]), ("iij->j", [(3, 3, 2)]), ("iji->j", [(3, 2, 3)]),
    ("iii->i", [(2, 2, 2)]), ("...ij->...ji", [(2, 3, 4)]), ("...ij->ij", [(5, 2, 3)]),
    ("...j,j->...", [(2, 3, 4), (4,)]), ("b...,...", [(3, 4), (4,)]), ("i...i", [(3, 2, 3)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]), ("a b , b c -> a c", [(2, 3), (3, 2)]),
    ("Ab,bA", [(2, 3), (3, 2)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ij,ij->", [(0, 3), (0, 3)]), ("ij,jk->ik", [(2, 0), (0, 3)]), ("->", [()]),
    ("i,->i", [(3,), ()]), ("...,...->...", [(2, 1), (3,)])]


@pytest.mark.parametrize("dtype", KINDS, ids=["float32", "int32"])
@pytest.mark.parametrize("formula, shapes", EINSUMS, ids=[f for f, _ in EINSUMS])
def test_einsum(formula: str, shapes: list[Shape], dtype: Any) -> None:
    """torch.einsum's subscripts: explicit and implicit output, traces and diagonals,
    ellipsis, size-1 broadcasting and empty operands."""
    check(shapes, lambda *xs: torch.einsum(formula, *xs),
          lambda *xs: Tensor.einsum(formula, *xs), dtype=dtype)


def test_einsum_operand_list_and_method_form() -> None:
    """The operands as one list (torch's form), and a.einsum(...) as Tensor.einsum(...)."""
    check([(2, 3), (3, 4)], lambda a, b: torch.einsum("ij,jk", [a, b]),
          lambda a, b: Tensor.einsum("ij,jk", [a, b]))
    check([(2, 3)], lambda a: torch.einsum("ij->j", a), lambda a: a.einsum("ij->j", a))


@pytest.mark.parametrize("formula, shapes", [
    ("ii", [(3, 2)]), ("ij->k", [(2, 3)]), ("ij->ii", [(2, 3)]), ("ij", [(2, 3), (2, 3)]),
    ("ij,ij", [(2, 3)]), ("ijk", [(2, 3)]), ("i1", [(2, 3)]), ("ij,ij->ij", [(2, 3), (3, 3)]),
    ("ijk...", [(2, 3)]), ("i.j", [(2, 3)]), ("i...j...", [(2, 3)]), ("ij->i..", [(2, 3)])],
    ids=str)
def test_einsum_errors(formula: str, shapes: list[Shape]) -> None:
    """Bad subscripts, operand counts, dims and sizes are torch's RuntimeError."""
    check_error(shapes, lambda *xs: torch.einsum(formula, *xs),
                lambda *xs: Tensor.einsum(formula, *xs))


def test_einsum_mixed_dtypes() -> None:
    """Operands of different dtypes are torch's RuntimeError, not a silent promotion."""
    a, b = np.ones((2, 3), np.float32), np.ones((3, 2), np.int32)
    check_error([a, b], lambda x, y: torch.einsum("ij,jk", x, y),
                lambda x, y: Tensor.einsum("ij,jk", x, y))
    assert Tensor.einsum("ij,jk", Tensor(b.T.copy()), Tensor(b)).dtype == dtypes.int32


# the same methods reached through Tensor.f(x, ...) as through x.f(...)
CALLS: list[tuple[str, Callable[[Any], Any]]] = [
    ("tril", lambda f: f(1)), ("triu", lambda f: f(-1)), ("diagonal", lambda f: f(1)),
    ("diag", lambda f: f()), ("roll", lambda f: f(1, 0)), ("unfold", lambda f: f(1, 2, 1)),
    ("repeat_interleave", lambda f: f(2, 1)), ("clone", lambda f: f())]


@pytest.mark.parametrize("name, call", CALLS, ids=[n for n, _ in CALLS])
def test_function_and_method_forms(name: str, call: Callable[[Any], Any]) -> None:
    """Tensor.f(x, ...) is x.f(...), and both are torch's."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = Tensor(a)
    via_class = call(lambda *args: getattr(Tensor, name)(x, *args)).numpy()
    via_method = call(getattr(x, name)).numpy()
    expected = call(getattr(torch.tensor(a), name)).numpy()
    np.testing.assert_array_equal(via_class, expected)
    np.testing.assert_array_equal(via_method, expected)


# --- rearrange, pad_to, shrink_to -----------------------------------------------------------

REARRANGE = [  # pattern, sizes, the same as numpy code
    ("b c h -> b h c", {}, lambda a: a.transpose(0, 2, 1)),
    ("b c h -> (b c) h", {}, lambda a: a.reshape(6, 4)),
    ("b c (h w) -> b h w c", {"h": 2}, lambda a: a.reshape(2, 3, 2, 2).transpose(0, 2, 3, 1)),
    ("b c (h w) -> (b h) (w c)", {"w": 2},
     lambda a: a.reshape(2, 3, 2, 2).transpose(0, 2, 3, 1).reshape(4, 6)),
    ("... h -> h ...", {}, lambda a: a.transpose(2, 0, 1)),
    ("b ... -> b (...)", {}, lambda a: a.reshape(2, 12)),
    ("b c h -> b 1 c h", {}, lambda a: a[:, None]),
    ("b c h -> h c b", {}, lambda a: a.transpose(2, 1, 0)),
]


@pytest.mark.parametrize("pattern, sizes, ref", REARRANGE, ids=[r[0] for r in REARRANGE])
def test_rearrange(pattern: str, sizes: dict, ref: Any) -> None:
    """rearrange gives what the same einops pattern gives (written out in numpy)."""
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = Tensor(a, requires_grad=True)
    out = x.rearrange(pattern, **sizes)
    np.testing.assert_array_equal(out.numpy(), ref(a))
    (out * Tensor(np.arange(out.numel(), dtype=np.float32).reshape(out.shape))).sum().backward()
    assert x.grad is not None
    np.testing.assert_array_equal(ref(x.grad.numpy()).reshape(-1), np.arange(24))


@pytest.mark.parametrize("pattern, sizes", [
    ("b c h -> b c", {}),            # a name lost
    ("b c -> b c", {}),              # too few dimensions on the left
    ("b c (h w) -> b c h w", {}),    # two unknown sizes in one group
    ("b c (h w) -> b c h w", {"h": 3}),  # 4 does not split by 3
    ("b c h b -> b c h", {}),        # a repeated name
    ("b c h", {}),                   # no arrow
])
def test_rearrange_errors(pattern: str, sizes: dict) -> None:
    """A pattern that does not fit the input is a ValueError naming the pattern."""
    with pytest.raises(ValueError, match="rearrange"):
        Tensor.ones(2, 3, 4).rearrange(pattern, **sizes)


def test_pad_to_and_shrink_to() -> None:
    """pad_to pads at the end up to a shape (None keeps an axis); shrink_to keeps the start."""
    x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(x.pad_to(3, None).numpy(),
                                  np.pad(np.arange(6).reshape(2, 3), ((0, 1), (0, 0))))
    np.testing.assert_array_equal(x.pad_to((2, 5), value=-1.0).numpy()[:, 3:], -np.ones((2, 2)))
    np.testing.assert_array_equal(x.shrink_to(1, 2).numpy(), [[0, 1]])
    np.testing.assert_array_equal(x.shrink_to(None, 1).numpy(), [[0], [3]])
    with pytest.raises(RuntimeError):
        x.pad_to(1, 3)
    with pytest.raises(RuntimeError):
        x.shrink_to(3, 3)
    with pytest.raises(RuntimeError):
        x.pad_to(3)
