"""Embedding picks rows of its table (and sends gradients back to the rows picked, added up);
Dropout zeroes a fraction p while training and scales the rest by 1 / (1 - p)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chapters.grading import expect_close, expect_equal
from tinyfw import Tensor, dtypes, nn

pytestmark = pytest.mark.task("10.embedding_dropout")


@pytest.mark.parametrize("idx", [[2, 0, 4], [[1, 3, 3], [0, 6, 1]], [[[5]], [[5]]]],
                         ids=["1d", "2d", "3d"])
def test_embedding_matches_torch(idx: list) -> None:
    """Each index becomes its row of the table, (..., ) -> (..., embed_size); the gradient of the
    table is each picked row's gradient, added up where an index repeats."""
    Tensor.manual_seed(0)
    layer, module = nn.Embedding(7, 4), torch.nn.Embedding(7, 4)
    with torch.no_grad():
        module.weight.copy_(torch.tensor(layer.weight.numpy()))
    indices = np.array(idx)
    expected = module(torch.tensor(indices))
    out = layer(Tensor(indices, dtype=dtypes.int32))
    assert isinstance(out, Tensor), f"Embedding should return a Tensor, got {out!r}"
    expect_close(out, expected.detach().numpy(), rtol=0, atol=0, dtype=np.float32,
                 what=f"Embedding(7, 4) of indices {idx}")
    weights = np.random.default_rng(1).uniform(0.5, 1.5, size=expected.shape).astype(np.float32)
    (expected * torch.tensor(weights)).sum().backward()
    (out * Tensor(weights)).sum().backward()
    assert layer.weight.grad is not None, "the table got no gradient; does the output use it?"
    expect_close(layer.weight.grad, module.weight.grad.numpy(), rtol=1e-6, atol=1e-6,
                 what=f"gradient of the table for indices {idx} (rows not picked get 0)")


def test_embedding_of_a_batch_of_sequences() -> None:
    """(batch, time) token ids -> (batch, time, embed_size), row by row the table's."""
    table = np.arange(30, dtype=np.float32).reshape(10, 3)
    layer = nn.Embedding(10, 3)
    layer.weight.assign(Tensor(table))
    ids = np.array([[9, 0, 9, 1], [2, 2, 8, 3]])
    expect_equal(layer(Tensor(ids, dtype=dtypes.int32)), table[ids], dtype=np.float32,
                 what="Embedding with table[i] = [3i, 3i + 1, 3i + 2] of ids [[9,0,9,1],[2,2,8,3]]")


@pytest.mark.parametrize("p", [0.25, 0.5, 0.8])
def test_dropout_while_training(p: float) -> None:
    """Inside Tensor.train(): about a fraction p of the values become 0, the rest are scaled by
    1 / (1 - p), and the gradient is the same mask, scaled the same way."""
    Tensor.manual_seed(0)
    x = np.random.default_rng(0).uniform(1, 2, size=(50, 80)).astype(np.float32)
    fx = Tensor(x, requires_grad=True)
    with Tensor.train():
        out = nn.Dropout(p)(fx)
    assert isinstance(out, Tensor), f"Dropout should return a Tensor, got {out!r}"
    y = out.numpy()
    kept = y != 0
    assert abs((1 - kept.mean()) - p) < 0.03, \
        f"Dropout({p}) zeroed {1 - kept.mean():.3f} of 4000 values, expected about {p}"
    expect_close(y[kept], x[kept] / (1 - p), rtol=1e-6,
                 what=f"Dropout({p}): kept values should be x / (1 - p) = x * {1 / (1 - p):g}")
    out.sum().backward()
    assert fx.grad is not None, f"Dropout({p}): the input got no gradient"
    expect_close(fx.grad, kept / np.float32(1 - p), rtol=1e-6,
                 what=f"Dropout({p}): gradient of the input (the mask / (1 - p))")


def test_dropout_draws_a_new_mask_each_call() -> None:
    """Two calls on the same input zero different values."""
    Tensor.manual_seed(1)
    x, layer = Tensor.ones(40, 40), nn.Dropout(0.5)
    with Tensor.train():
        first, second = layer(x).numpy(), layer(x).numpy()
    assert not np.array_equal(first == 0, second == 0), \
        "Dropout(0.5) zeroed the same elements twice: draw a new mask on every call"


def test_dropout_in_evaluation_is_the_identity() -> None:
    """Outside training (Tensor.training is False, the default) Dropout changes nothing, and
    the gradient passes through unchanged."""
    x = np.random.default_rng(2).standard_normal((6, 7)).astype(np.float32)
    fx = Tensor(x, requires_grad=True)
    assert not Tensor.training
    out = nn.Dropout(0.9)(fx)
    expect_equal(out, x, what="Dropout(0.9) outside training", dtype=np.float32)
    (out * 3).sum().backward()
    expect_equal(fx.grad, np.full((6, 7), 3, np.float32),
                 what="gradient of Dropout(0.9)(x) * 3 outside training")
    with Tensor.train(), Tensor.train(False):
        expect_equal(nn.Dropout(0.5)(fx), x, what="Dropout(0.5) in Tensor.train(False)")


def test_dropout_edge_probabilities() -> None:
    """p = 0 keeps every value as it is and p = 1 zeroes every value, also while training."""
    x = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    with Tensor.train():
        expect_equal(nn.Dropout(0.0)(Tensor(x)), x, what="Dropout(0.0) while training")
        expect_equal(nn.Dropout(1.0)(Tensor(x)), np.zeros((4, 5), np.float32),
                     what="Dropout(1.0) while training")
