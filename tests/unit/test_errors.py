"""Bad inputs raise the exception PyTorch raises, with a message naming the shapes involved."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.helpers import check_error
from tinyfw import Tensor

A23 = np.zeros((2, 3), np.float32)


def either(torch_fn, tinyfw_fn):
    """One lambda for both frameworks, dispatching on the argument type."""
    return lambda *xs: (torch_fn if isinstance(xs[0], torch.Tensor) else tinyfw_fn)(*xs)


def cat(*xs, dim=0):
    """torch.cat or Tensor.cat, whichever fits the arguments."""
    return torch.cat(xs, dim) if isinstance(xs[0], torch.Tensor) else Tensor.cat(*xs, dim=dim)


def stack(*xs, dim=0):
    """torch.stack or Tensor.stack, whichever fits the arguments."""
    return torch.stack(xs, dim) if isinstance(xs[0], torch.Tensor) else Tensor.stack(*xs, dim=dim)


# (id, inputs, fn for both, the parts the message must name)
CASES = [
    ("broadcast_add", [(2, 3), (4,)], lambda a, b: a + b, ["3", "4"]),
    ("broadcast_mul_reversed", [(4,), (2, 3)], lambda a, b: a * b, ["3", "4"]),
    ("broadcast_scalar_side", [(2, 3), (2, 4)], lambda a, b: 1.0 - a + b, ["3", "4"]),
    ("broadcast_compare", [(2, 3), (4,)], lambda a, b: a == b, ["3", "4"]),
    ("broadcast_where", [(2, 3), (4,)], lambda c, x: either(
        lambda c, x: torch.where(c > 0, x, 1.0), lambda c, x: (c > 0).where(x, 1.0))(c, x),
     ["3", "4"]),
    ("matmul_2d", [(2, 3), (4, 5)], lambda a, b: a @ b, ["2x3", "4x5"]),
    ("matmul_1d", [(3,), (4,)], lambda a, b: a @ b, ["3", "4"]),
    ("matmul_batch", [(2, 2, 3), (3, 3, 4)], lambda a, b: a @ b, ["2", "3"]),
    ("matmul_0d", [(2, 3)], lambda a: a.sum() @ a, ["0D", "2D"]),
    ("reshape_size", [(2, 3)], lambda a: a.reshape(4, 2), ["[4, 2]", "6"]),
    ("reshape_infer", [(2, 3)], lambda a: a.reshape(4, -1), ["[4, -1]", "6"]),
    ("reshape_two_infer", [(2, 3)], lambda a: a.reshape(-1, -1), ["one dimension"]),
    ("view_size", [(2, 3)], lambda a: a.view(5), ["[5]", "6"]),
    ("sum_axis", [(2, 3)], lambda a: a.sum(2), ["[-2, 1]", "2"]),
    ("max_axis_negative", [(2, 3)], lambda a: either(lambda a: torch.amax(a, -3),
                                                     lambda a: a.max(-3))(a), ["[-2, 1]", "-3"]),
    ("mean_axis_tuple", [(2, 3)], lambda a: a.mean((0, 5)), ["[-2, 1]", "5"]),
    ("softmax_axis", [(2, 3)], lambda a: a.softmax(2), ["[-2, 1]", "2"]),
    ("logsumexp_axis", [(2, 3)], lambda a: a.logsumexp(3), ["[-2, 1]", "3"]),
    ("argmax_axis", [(2, 3)], lambda a: a.argmax(2), ["[-2, 1]", "2"]),
    ("flip_axis", [(2, 3)], lambda a: either(lambda a: torch.flip(a, (2,)),
                                             lambda a: a.flip(2))(a), ["[-2, 1]", "2"]),
    ("transpose_axis", [(2, 3)], lambda a: a.transpose(0, 5), ["[-2, 1]", "5"]),
    ("permute_axis", [(2, 3)], lambda a: a.permute(0, 2), ["[-2, 1]", "2"]),
    ("squeeze_axis", [(2, 3)], lambda a: a.squeeze(3), ["[-2, 1]", "3"]),
    ("unsqueeze_axis", [(2, 3)], lambda a: a.unsqueeze(4), ["[-3, 2]", "4"]),
    ("flatten_axis", [(2, 3)], lambda a: a.flatten(0, 3), ["[-2, 1]", "3"]),
    ("cat_axis", [(2, 3), (2, 3)], lambda a, b: cat(a, b, dim=2), ["[-2, 1]", "2"]),
    ("stack_axis", [(2, 3), (2, 3)], lambda a, b: stack(a, b, dim=4), ["[-3, 2]", "4"]),
    ("split_axis", [(2, 3)], lambda a: a.split(1, 2), ["[-2, 1]", "2"]),
    ("index_out_of_range", [(3, 4)], lambda a: a[3], ["3", "size 3"]),
    ("index_negative_out_of_range", [(2, 3)], lambda a: a[:, -5], ["-5", "size 3"]),
    ("index_second_axis", [(2, 3)], lambda a: a[1, 3], ["3", "dimension 1", "size 3"]),
    ("too_many_indices", [(2, 3)], lambda a: a[0, 0, 0], ["dimension 2"]),
    ("too_many_indices_with_none", [(2,)], lambda a: a[None, 0, 1], ["dimension 1"]),
    ("expand_incompatible", [(2, 3)], lambda a: a.expand(4, 3), ["4", "2", "[4, 3]", "[2, 3]"]),
    ("expand_fewer_dims", [(2, 3)], lambda a: a.expand(3), ["(1)", "(2)"]),
    ("permute_length", [(2, 3)], lambda a: a.permute(0, 1, 2), ["2", "3"]),
    ("permute_repeated", [(2, 3)], lambda a: a.permute(0, 0), []),
    ("cat_sizes", [(2, 3), (2, 4)], lambda a, b: cat(a, b), ["3", "4"]),
    ("cat_ndim", [(2, 3), (3,)], lambda a, b: cat(a, b), ["[2, 3]", "[3]"]),
    ("stack_sizes", [(2, 3), (2, 4)], lambda a, b: stack(a, b), ["3", "4"]),
    ("pad_odd_length", [(2, 3)], lambda a: either(lambda a: F.pad(a, (1,)),
                                                  lambda a: a.pad((1,)))(a), ["divisible by 2"]),
    ("neg_bool", [[True, False]], lambda a: -a, ["bool"]),
    ("sub_bools", [[True, False], [False, False]], lambda a, b: a - b, ["bool"]),
    ("sub_bool_scalar", [[True, False]], lambda a: a - True, ["bool"]),
    ("invert_float", [(2, 3)], lambda a: ~a, []),
    ("item_many", [(2, 3)], lambda a: a.item(), ["6"]),
    ("bool_many", [(2, 3)], lambda a: bool(a), ["ambiguous"]),
    ("len_0d", [(2, 3)], lambda a: len(a.sum()), ["0-d"]),
    ("clip_nothing", [(2, 3)], lambda a: a.clip(), ["min", "max"]),
    ("backward_no_grad", [(2, 3)], lambda a: (a * 2).sum().backward(), ["grad"]),
]


@pytest.mark.parametrize("inputs, fn, parts", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_matches_torch(inputs, fn, parts: list[str]) -> None:
    """tinyfw raises torch's exception type, and its message names the sizes involved."""
    _, err = check_error(inputs, fn)
    for part in parts:
        assert part in str(err), f"{part!r} is not in the message: {err}"


def test_error_creation() -> None:
    """arange with step 0 and unsupported data raise like torch."""
    check_error([], lambda: torch.arange(0, 5, 0), lambda: Tensor.arange(0, 5, 0))
    check_error([], lambda: torch.tensor("abc"), lambda: Tensor("abc"))
    with pytest.raises(RuntimeError, match=r"\[2, 3\]"):
        Tensor(A23, requires_grad=True).backward(Tensor.ones(3))


@pytest.mark.parametrize("fn", [lambda a, b: a & b, lambda a, b: a | b, lambda a, b: a ^ b,
                                lambda a, b: a & 1],
                         ids=["and", "or", "xor", "and_scalar"])
def test_bitwise_on_floats(fn) -> None:
    """Bitwise ops on floats raise what torch raises."""
    check_error([(2, 3), [1, 2, 3]], fn)


@pytest.mark.parametrize("fn", [
    lambda a: a[1.5], lambda a: a.split(0), lambda a: a.chunk(0),
    lambda a: either(lambda a: torch.zeros(-1), lambda a: Tensor.zeros(-1))(a),
    lambda a: either(lambda a: torch.cat([]), lambda a: Tensor.cat())(a),
], ids=["float_index", "split_0", "chunk_0", "zeros_negative", "cat_nothing"])
def test_bad_arguments(fn) -> None:
    """Nonsense arguments raise torch's exception types."""
    check_error([(2, 3)], fn)
