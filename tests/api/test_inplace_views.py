"""In-place writes and views as torch's (issue 38): every in-place operator updates the tensor
itself, eagerly and under TinyJit, with torch's dtype checks raised before the op; a view
aliases its base (a write to either is seen by the other), eagerly and under TinyJit."""
from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np
import pytest
import torch

from tinyfw import Tensor
from tinyfw.probe import probe
from tinyfw.jit.jit import TinyJit

DEVICES = ["CPU"] + (["CL"] if probe("CL")[0] else [])

OPS: dict[str, Callable] = {
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow,
    "&=": operator.iand, "|=": operator.ior, "^=": operator.ixor,
    "<<=": operator.ilshift, ">>=": operator.irshift,
}
FLOAT_OPS = ["+=", "-=", "*=", "/=", "//=", "%=", "**="]
INT_OPS = ["+=", "-=", "*=", "//=", "%=", "&=", "|=", "^=", "<<=", ">>="]


@pytest.mark.parametrize("name", FLOAT_OPS)
@pytest.mark.parametrize("other", [2, 1.5, "int", "float"])
def test_float_inplace_as_torch(name: str, other: object) -> None:
    values, ints = [1.5, -2.0, 3.0], [2, 3, 1]
    x, ref = Tensor(values), torch.tensor(values)
    y = Tensor(ints) if other == "int" else Tensor([0.5, 2.0, -1.5]) if other == "float" else other
    ref_y = torch.tensor(ints) if other == "int" else torch.tensor([0.5, 2.0, -1.5]) \
        if other == "float" else other
    assert OPS[name](x, y) is x
    OPS[name](ref, ref_y)
    assert x.dtype.name == "float32"
    np.testing.assert_allclose(x.numpy(), ref.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", INT_OPS)
def test_int_inplace_with_a_float_raises_torch_error_before_the_op(name: str) -> None:
    """int op= float: torch's RuntimeError (the result type cannot be cast), also for ops that
    are not defined for floats at all (&=, <<=): the cast is checked first, as torch does."""
    for other in (1.5, Tensor([0.5, 1.0, 2.0])):
        x = Tensor([1, 2, 3])
        ref = torch.tensor([1, 2, 3], dtype=torch.int32)
        ref_other = 1.5 if isinstance(other, float) else torch.tensor([0.5, 1.0, 2.0])
        with pytest.raises(RuntimeError, match="can't be cast") as got:
            OPS[name](x, other)
        with pytest.raises(RuntimeError) as want:
            OPS[name](ref, ref_other)
        assert "can't be cast" in str(want.value)
        assert got.type is want.type
        np.testing.assert_array_equal(x.numpy(), [1, 2, 3])  # untouched


def test_int_true_division_inplace_raises() -> None:
    with pytest.raises(RuntimeError, match="Float can't be cast to the desired output type Int"):
        x = Tensor([1, 2, 3])
        x /= 2


def test_bool_inplace_of_an_int_raises() -> None:
    with pytest.raises(RuntimeError, match="can't be cast"):
        x = Tensor([True, False])
        x += 1


def test_matmul_inplace() -> None:
    x, ref = Tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    w = [[0.5, -1.0], [2.0, 1.0]]
    assert operator.imatmul(x, Tensor(w)) is x
    ref @= torch.tensor(w)
    np.testing.assert_allclose(x.numpy(), ref.numpy())


def test_leaf_requiring_grad_inplace_raises_torch_error() -> None:
    x = Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x += 1
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[0] = 5.0


@pytest.mark.parametrize("name", ["+=", "-=", "*=", "//=", "%=", "**=", "<<=", "&=", "^="])
@pytest.mark.parametrize("device", DEVICES)
def test_inplace_under_jit_is_replayed(name: str, device: str) -> None:
    """Each call of the jitted function applies the in-place op once, replays too."""
    op = OPS[name]

    @TinyJit
    def step(x: Tensor) -> None:
        op(x, 2 if name != "**=" else 1)
        x.realize()

    x = Tensor([3, 5, 7], device=device).realize()
    ref = torch.tensor([3, 5, 7], dtype=torch.int32)
    for _ in range(5):
        step(x)
        op(ref, 2 if name != "**=" else 1)
    np.testing.assert_array_equal(x.numpy(), ref.numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_float_inplace_under_jit_is_replayed(device: str) -> None:
    @TinyJit
    def step(x: Tensor, y: Tensor) -> Tensor:
        x += y
        x *= 0.5
        return (x * 2).realize(x)

    x, ref = Tensor([1.0, 2.0], device=device).realize(), torch.tensor([1.0, 2.0])
    for i in range(5):
        out = step(x, Tensor([float(i), 1.0], device=device).realize())
        ref += torch.tensor([float(i), 1.0])
        ref *= 0.5
        np.testing.assert_allclose(out.numpy(), (ref * 2).numpy())
    np.testing.assert_allclose(x.numpy(), ref.numpy())


# --- views alias their base ---
Write = Callable[[object], None]


def _writes() -> dict[str, Callable[[object], None]]:
    """Writes to a base of [1, 2, 3, 4, 5, 6] (shape (2, 3)), the same for torch and tinyfw."""
    def assign(t: object) -> None:
        if isinstance(t, Tensor):
            t.assign(Tensor([[10, 20, 30], [40, 50, 60]]))
        else:
            t.copy_(torch.tensor([[10, 20, 30], [40, 50, 60]]))  # type: ignore[attr-defined]

    def setitem(t: object) -> None:
        t[0, 1] = 50  # type: ignore[index]

    def iadd(t: object) -> None:
        t += 7  # type: ignore[operator]

    def row(t: object) -> None:
        t[1] = 0  # type: ignore[index]
    return {"assign": assign, "setitem": setitem, "+=": iadd, "row": row}


VIEWS: dict[str, Callable[[object], object]] = {
    "slice": lambda t: t[:, 1:],  # type: ignore[index]
    "row": lambda t: t[1],  # type: ignore[index]
    "reshape": lambda t: t.reshape(3, 2),  # type: ignore[attr-defined]
    "permute": lambda t: t.permute(1, 0),  # type: ignore[attr-defined]
    "T then slice": lambda t: t.T[1:],  # type: ignore[attr-defined]
    "expand": lambda t: t[:1].expand(3, 3),  # type: ignore[index]
    "strided": lambda t: t[:, ::2],  # type: ignore[index]
    "unfold": lambda t: t.unfold(1, 2, 1),  # type: ignore[attr-defined]
    "detach": lambda t: t.detach(),  # type: ignore[attr-defined]
    "chain": lambda t: t.reshape(6)[1:].reshape(5, 1)[::2],  # type: ignore[attr-defined]
}


@pytest.mark.parametrize("write", list(_writes()))
@pytest.mark.parametrize("view", list(VIEWS))
def test_a_view_sees_a_write_to_its_base(view: str, write: str) -> None:
    base, ref = Tensor([[1, 2, 3], [4, 5, 6]]), torch.tensor([[1, 2, 3], [4, 5, 6]])
    v = VIEWS[view](base)
    v.numpy()  # read (and realized) before the write: still a view
    ref_v = VIEWS[view](ref)
    _writes()[write](base)
    _writes()[write](ref)
    np.testing.assert_array_equal(v.numpy(), ref_v.numpy())  # type: ignore[attr-defined]


WRITABLE = ["slice", "row", "reshape", "permute", "T then slice", "strided", "detach", "chain"]


@pytest.mark.parametrize("how", ["setitem", "+=", "assign"])
@pytest.mark.parametrize("view", WRITABLE)
def test_a_write_through_a_view_reaches_its_base_and_other_views(view: str, how: str) -> None:
    base, ref = Tensor([[1, 2, 3], [4, 5, 6]]), torch.tensor([[1, 2, 3], [4, 5, 6]])
    v, ref_v = VIEWS[view](base), VIEWS[view](ref)
    other, ref_other = base[1:], ref[1:]
    other.numpy()
    if how == "setitem":
        v[0] = 9  # type: ignore[index]
        ref_v[0] = 9  # type: ignore[index]
    elif how == "+=":
        v += 3  # type: ignore[operator]
        ref_v += 3  # type: ignore[operator]
    else:
        shape = ref_v.shape  # type: ignore[attr-defined]
        new = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) * 10
        v.assign(Tensor(new))  # type: ignore[attr-defined]
        ref_v.copy_(torch.tensor(new))  # type: ignore[attr-defined]
    np.testing.assert_array_equal(base.numpy(), ref.numpy())
    np.testing.assert_array_equal(v.numpy(), ref_v.numpy())  # type: ignore[attr-defined]
    np.testing.assert_array_equal(other.numpy(), ref_other.numpy())


def test_issue_example() -> None:
    t = Tensor([1, 2, 3])
    v = t[1:]
    t[1] = 50
    assert v.tolist() == [50, 3]
    t += 1
    assert v.tolist() == [51, 4]
    t.assign(Tensor([7, 8, 9]))
    assert v.tolist() == [8, 9]


def test_flip_is_a_copy_as_torch() -> None:
    t, ref = Tensor([1, 2, 3]), torch.tensor([1, 2, 3])
    f, ref_f = t.flip(0), ref.flip(0)
    t += 1
    ref += 1
    f[0] = 9
    ref_f[0] = 9
    assert f.tolist() == ref_f.tolist() and t.tolist() == ref.tolist()


def test_a_negative_step_is_a_view_as_numpy() -> None:
    """x[::-1] (numpy's; torch refuses negative steps) aliases x as numpy's does."""
    t, ref = Tensor([1, 2, 3, 4]), np.array([1, 2, 3, 4])
    v, ref_v = t[::-2], ref[::-2]
    t[3] = 40
    ref[3] = 40
    np.testing.assert_array_equal(v.numpy(), ref_v)
    v[1] = 20
    ref_v[1] = 20
    np.testing.assert_array_equal(t.numpy(), ref)


def test_an_expanded_view_cannot_be_written_through() -> None:
    t = Tensor([[1, 2, 3]])
    v = t.expand(2, 3)
    with pytest.raises(RuntimeError, match="single memory location"):
        v += 1
    w = t.unfold(1, 2, 1)  # windows that share elements: one window is written, as torch
    w[0, 0] = 5
    assert t.tolist() == [[5, 5, 3]]
    with pytest.raises(RuntimeError, match="overlapping"):
        w += 1


def test_a_view_of_a_parameter_follows_the_optimizer_and_takes_gradients() -> None:
    p = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = p[1:]
    p.assign(p.detach() - 1)  # an optimizer step
    assert v.tolist() == [1.0, 2.0]
    (v * Tensor([2.0, 3.0])).sum().backward()
    assert p.grad is not None and p.grad.tolist() == [0.0, 2.0, 3.0]


def test_a_non_leaf_updated_in_place_updates_its_views_and_keeps_the_gradient() -> None:
    x, rx = Tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True)
    y, ry = x * 2, rx * 2
    v, rv = y[1:], ry[1:]
    y *= 3
    ry *= 3
    assert v.tolist() == rv.tolist()
    (v.sum() + y.sum()).backward()
    (rv.sum() + ry.sum()).backward()
    assert x.grad is not None and rx.grad is not None
    assert x.grad.tolist() == rx.grad.tolist()


@pytest.mark.parametrize("device", DEVICES)
def test_views_under_jit(device: str) -> None:
    """A view made outside the function sees each replay's write to its base; a view made
    inside sees the write made inside; a write through a view inside reaches the base."""
    @TinyJit
    def step(x: Tensor, y: Tensor) -> Tensor:
        inner = x[1:]
        x += 1
        y[:, 0] += x[:2]
        out = (inner * 10).realize(x, y)
        return out

    x, y = Tensor([0, 0, 0], device=device).realize(), Tensor.zeros(2, 2, dtype="int32",
                                                                 device=device).realize()
    rx, ry = torch.zeros(3, dtype=torch.int32), torch.zeros(2, 2, dtype=torch.int32)
    outside, ref_outside = x[:2], rx[:2]
    column = y[:, 0]
    for _ in range(5):
        out = step(x, y)
        inner = rx[1:]
        rx += 1
        ry[:, 0] += rx[:2]
        np.testing.assert_array_equal(out.numpy(), (inner * 10).numpy())
        np.testing.assert_array_equal(outside.numpy(), ref_outside.numpy())
        np.testing.assert_array_equal(column.numpy(), ry[:, 0].numpy())
    np.testing.assert_array_equal(x.numpy(), rx.numpy())
    np.testing.assert_array_equal(y.numpy(), ry.numpy())


# --- index results are int64, as torch's (int32 on WEBGPU) ---
INDEX_OPS: dict[str, Callable] = {
    "argmax": lambda t: t.argmax(1), "argmin": lambda t: t.argmin(),
    "sort": lambda t: t.sort(1)[1], "argsort": lambda t: t.argsort(0, descending=True),
    "topk": lambda t: t.topk(2, 1)[1], "cummax": lambda t: t.cummax(1)[1],
    "cummin": lambda t: t.cummin(0)[1], "nonzero": lambda t: t.nonzero(),
    "max_pool2d": lambda t: _max_pool_indices(t),
}


def _max_pool_indices(t: object) -> object:
    if isinstance(t, Tensor):
        return t.reshape(1, 1, 2, 3).max_pool2d((1, 2), return_indices=True)[1]
    return torch.nn.functional.max_pool2d(t.reshape(1, 1, 2, 3), (1, 2),  # type: ignore[union-attr]
                                          return_indices=True)[1]


INDEX_DEVICES = DEVICES + (["WEBGPU"] if probe("WEBGPU")[0] else [])


@pytest.mark.parametrize("device", INDEX_DEVICES)
@pytest.mark.parametrize("name", list(INDEX_OPS))
def test_index_results_are_int64_as_torch(name: str, device: str) -> None:
    values = [[3.0, 1.0, 3.0], [0.0, 5.0, -2.0]]
    got = INDEX_OPS[name](Tensor(values, device=device))
    want = INDEX_OPS[name](torch.tensor(values))
    assert want.dtype == torch.int64
    assert got.dtype.name == ("int32" if device == "WEBGPU" else "int64")
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_sampled_indices_are_int64_as_torch() -> None:
    assert Tensor.randperm(4).dtype.name == str(torch.randperm(4).dtype).split(".")[1]
    probs = Tensor([[0.2, 0.8]])
    assert probs.multinomial(1).dtype.name == "int64"
    assert torch.tensor([[0.2, 0.8]]).multinomial(1).dtype == torch.int64


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_under_jit_returning_the_input(device: str) -> None:
    """`x += 1; return x`: every call, replays too, adds 1 to the tensor passed in (the one
    returned holds the same value), and another tensor passed later is the one written."""
    @TinyJit
    def step(x: Tensor) -> Tensor:
        x += 1
        return x

    x = Tensor([1.0, 2.0], device=device).realize()
    for _ in range(5):
        out = step(x)
    np.testing.assert_array_equal(x.numpy(), [6.0, 7.0])
    np.testing.assert_array_equal(out.numpy(), [6.0, 7.0])
    other = Tensor([10.0, 20.0], device=device).realize()
    np.testing.assert_array_equal(step(other).numpy(), [11.0, 21.0])
    np.testing.assert_array_equal(other.numpy(), [11.0, 21.0])
    np.testing.assert_array_equal(x.numpy(), [6.0, 7.0])
