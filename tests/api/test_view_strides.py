"""A view's layout as torch's (issue 38): stride(), is_contiguous(), whether reshape is a view
or a copy, view()'s refusal, contiguous() of a contiguous tensor being the tensor itself, and
torch's view methods (narrow, select, unbind, movedim). Random chains of views are built on
torch and on tinyfw alike; then a write to the base and a write through the view must show
the same values in both."""
from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import tinyfw.torch as tt
from tinyfw import Tensor

Step = Callable[[Any], Any]


def _draw_step(rng: random.Random, shape: tuple[int, ...]) -> tuple[str, Step] | None:
    """One view op that applies to a tensor of shape (as torch and tinyfw both name it)."""
    n = len(shape)
    choices: list[tuple[str, Step]] = []
    if n:
        d = rng.randrange(n)
        size = shape[d]
        start = rng.randrange(size + 1)
        stop = rng.randrange(start, size + 1)
        step = rng.randint(1, 3)
        index = (slice(None),) * d + (slice(start, stop, step),)
        choices.append((f"[{index}]", lambda x: x[index]))
        choices.append((f"narrow({d}, {start}, {stop - start})",
                        lambda x: x.narrow(d, start, stop - start)))
        if size:
            i = rng.randrange(-size, size)
            choices.append((f"select({d}, {i})", lambda x: x.select(d, i)))
        order = list(range(n))
        rng.shuffle(order)
        choices.append((f"permute({order})", lambda x: x.permute(order)))
        choices.append((f"movedim({d}, {n - 1 - d})", lambda x: x.movedim(d, n - 1 - d)))
        choices.append(("flatten()", lambda x: x.flatten()))
        if size >= 2:
            width = rng.randint(1, size)
            hop = rng.randint(1, 2)
            choices.append((f"unfold({d}, {width}, {hop})", lambda x: x.unfold(d, width, hop)))
        if shape.count(1):
            one = shape.index(1)
            wide = shape[:one] + (3,) + shape[one + 1:]
            choices.append((f"expand({wide})", lambda x: x.expand(wide)))
    if n >= 2:
        a, b = rng.sample(range(n), 2)
        offset = rng.randint(-1, 1)
        choices.append((f"diagonal({offset}, {a}, {b})", lambda x: x.diagonal(offset, a, b)))
        choices.append((f"transpose({a}, {b})", lambda x: x.transpose(a, b)))
    choices.append((f"unsqueeze({n})", lambda x: x.unsqueeze(n)))
    numel = int(np.prod(shape))
    splits = [s for s in (2, 3, 4, 6) if numel % s == 0]
    if splits:
        s = rng.choice(splits)
        choices.append((f"reshape({s}, -1)", lambda x: x.reshape(s, -1)))
        choices.append((f"view(-1, {s})", lambda x: x.view(-1, s)))
    choices.append(("contiguous()", lambda x: x.contiguous()))
    return rng.choice(choices)


def _chain(seed: int) -> tuple[list[str], list[Step], tuple[int, ...]]:
    """A chain of 1-4 view ops valid on a base of the returned shape (checked on torch)."""
    rng = random.Random(seed)
    base_shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 3)))
    names: list[str] = []
    steps: list[Step] = []
    x = torch.zeros(base_shape)
    for _ in range(rng.randint(1, 4)):
        drawn = _draw_step(rng, tuple(x.shape))
        if drawn is None:
            break
        try:
            y = drawn[1](x)
        except RuntimeError:
            continue  # view() that torch refuses is tested on its own below
        names.append(drawn[0])
        steps.append(drawn[1])
        x = y
    return names, steps, base_shape


def _build(lib: Any, steps: list[Step], base_shape: tuple[int, ...]) -> tuple[Any, Any]:
    base = lib.arange(float(np.prod(base_shape))).reshape(base_shape).contiguous()
    view = base
    for step in steps:
        view = step(view)
    return base, view


@pytest.mark.parametrize("seed", range(300))
def test_a_chain_of_views_is_laid_out_as_torch(seed: int) -> None:
    names, steps, base_shape = _chain(seed)
    ref_base, ref = _build(torch, steps, base_shape)
    base, view = _build(tt, steps, base_shape)
    where = f"torch.arange(...).reshape{base_shape}." + ".".join(names)
    assert tuple(view.shape) == tuple(ref.shape), where
    # (the stride of a size-1 axis, or of an empty tensor, decides nothing: torch's own
    # differ between ops that make the same view)
    if ref.numel():
        assert [st for st, n in zip(view.stride(), ref.shape) if n != 1] == \
            [st for st, n in zip(ref.stride(), ref.shape) if n != 1], where
    assert view.is_contiguous() == ref.is_contiguous(), where
    # a write to the base is seen through the view exactly where torch's view shares memory
    ref_base.add_(100)
    base.add_(100)
    np.testing.assert_array_equal(view.numpy(), ref.numpy(), err_msg=where)
    if ref.numel() == 0 or any(s == 0 for s in ref.stride()):
        return  # (torch refuses a write through an expanded view, as tinyfw: tested below)
    ref.mul_(-1)
    try:
        view.mul_(-1)
    except RuntimeError as refused:  # torch writes overlapping windows in an order of its own
        assert "overlap" in str(refused), where
        return
    np.testing.assert_array_equal(base.numpy(), ref_base.numpy(), err_msg=where)


@pytest.mark.parametrize("shape, strides", [((2, 1, 3), (3, 3, 1)), ((), ()), ((0, 2), (2, 1))])
def test_a_fresh_tensor_has_torch_row_major_strides(shape: tuple, strides: tuple) -> None:
    t = Tensor.zeros(*shape)
    assert t.stride() == torch.zeros(shape).stride() == strides
    assert t.is_contiguous()


def test_reshape_of_a_view_torch_cannot_view_is_a_copy() -> None:
    """x.T.reshape(-1) copies (a write to x is not seen), x[1:].reshape(-1) is a view."""
    x = Tensor([[1.0, 2.0], [3.0, 4.0]])
    copied, viewed = x.T.reshape(-1), x[1:].reshape(-1)
    x[1, 0] = 9.0
    assert copied.tolist() == [1.0, 3.0, 2.0, 4.0]
    assert viewed.tolist() == [9.0, 4.0]


def test_view_refuses_what_torch_refuses() -> None:
    x = Tensor.zeros(4, 6)
    with pytest.raises(RuntimeError, match="Use .reshape"):
        x.T.view(-1)
    with pytest.raises(RuntimeError):
        torch.zeros(4, 6).T.view(-1)
    assert x.T.reshape(-1).shape == (24,)
    assert Tensor([1.0]).view(tt.int32).tolist() == [1065353216]


def test_contiguous_of_a_contiguous_tensor_is_the_tensor() -> None:
    """As torch's: a write to x.contiguous() is seen in x when x is contiguous; otherwise
    contiguous() copies."""
    x = Tensor.zeros(3)
    x.contiguous()[0] = 5.0
    x[1:].contiguous()[0] = 6.0
    x[::2].contiguous()[0] = 7.0
    assert x.tolist() == [5.0, 6.0, 0.0]


def test_torch_view_methods() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    x, ref = Tensor(a), torch.tensor(a)
    np.testing.assert_array_equal(x.narrow(2, -3, 2).numpy(), ref.narrow(2, -3, 2).numpy())
    np.testing.assert_array_equal(x.select(1, -1).numpy(), ref.select(1, -1).numpy())
    assert [u.tolist() for u in x.unbind(1)] == [u.tolist() for u in ref.unbind(1)]
    assert x.movedim((0, 1), (2, 0)).shape == tuple(ref.movedim((0, 1), (2, 0)).shape)
    assert x.moveaxis(0, -1).shape == tuple(ref.moveaxis(0, -1).shape)
    for bad in (lambda t: t.narrow(0, 1, 2), lambda t: t.select(0, 2),
                lambda t: t.movedim((0, 0), (1, 2))):
        with pytest.raises(Exception) as theirs:
            bad(ref)
        with pytest.raises(type(theirs.value)):
            bad(x)


def test_writes_through_expanded_and_overlapping_views_are_refused() -> None:
    """torch's error for a view whose elements share memory (a stride of 0); tinyfw's for
    overlapping unfold windows, which torch writes in an order of its own. A view of one
    element per base element (the diagonal of an expanded tensor, windows that do not
    overlap) is written through, as torch's."""
    x = Tensor.zeros(2, 1)
    with pytest.raises(RuntimeError, match="more than one element"):
        x.expand(2, 3).fill_(1.0)
    with pytest.raises(RuntimeError, match="overlap"):
        Tensor.zeros(5).unfold(0, 2, 1).fill_(1.0)
    x.expand(2, 2).diagonal().copy_(Tensor([-0.0, 7.0]))
    ref = torch.zeros(2, 1)
    ref.expand(2, 2).diagonal().copy_(torch.tensor([-0.0, 7.0]))
    assert x.tolist() == ref.tolist() and str(x.numpy()[0, 0]) == "-0.0"
    y = Tensor.arange(7.0)
    y.unfold(0, 2, 3).mul_(-1)
    assert y.tolist() == [-0.0, -1.0, 2.0, -3.0, -4.0, 5.0, 6.0]
