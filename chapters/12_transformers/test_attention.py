"""Attention: your attention(q, k, v, mask) scores every query against every key, hides what
the mask hides, takes a softmax over the keys and averages the values; with fewer key and value
heads than query heads, each key/value head serves a group of query heads in a row."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_close
from tinyfw import Tensor
from tinyfw.models.llama import attention

pytestmark = pytest.mark.task("12.attention")
RNG = np.random.default_rng(12)


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """softmax(q k^T / sqrt(d), masked) v in float64, heads grouped in a row."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scores = q.astype(np.float64) @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)) @ v


def data(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def run(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return attention(Tensor(q), Tensor(k), Tensor(v), Tensor(mask)).numpy()


def test_every_query_sees_every_key() -> None:
    """One head, a mask of all True: softmax(q k^T / sqrt(d)) v."""
    q, k, v = data(1, 1, 3, 4), data(1, 1, 5, 4), data(1, 1, 5, 2)
    mask = np.ones((3, 5), bool)
    expect_close(run(q, k, v, mask), reference(q, k, v, mask), rtol=1e-5, atol=1e-6,
                 what="attention(q, k, v, mask) with nothing masked")


def test_a_causal_mask_hides_the_future() -> None:
    """Query t sees keys 0..t: the first query's output is the first value, and changing the
    later values changes nothing before them."""
    q, k, v = data(1, 2, 4, 8), data(1, 2, 4, 8), data(1, 2, 4, 8)
    mask = np.tril(np.ones((4, 4), bool))
    got = run(q, k, v, mask)
    expect_close(got, reference(q, k, v, mask), rtol=1e-5, atol=1e-6,
                 what="causal attention (mask = lower triangle)")
    expect_close(got[:, :, 0], v[:, :, 0], rtol=1e-5, atol=1e-6,
                 what="the first position's output (it sees only itself: its own value)")
    later = v.copy()
    later[:, :, 2:] += 100
    expect_close(run(q, k, later, mask)[:, :, :2], got[:, :, :2], rtol=1e-5, atol=1e-5,
                 what="positions 0 and 1 after values 2 and 3 changed (they must not see them)")


def test_grouped_query_heads_share_key_and_value_heads_in_a_row() -> None:
    """6 query heads, 2 key/value heads: query heads 0-2 use key/value head 0, 3-5 head 1."""
    q, k, v = data(2, 6, 3, 4), data(2, 2, 5, 4), data(2, 2, 5, 4)
    mask = RNG.random((3, 5)) < 0.7
    mask[:, 0] = True  # (every query sees at least one key)
    expect_close(run(q, k, v, mask), reference(q, k, v, mask), rtol=1e-5, atol=1e-6,
                 what="attention with 6 query heads over 2 key/value heads (batch 2)")


def test_one_new_token_against_a_cache() -> None:
    """A decode step: one query against a cache of 8 positions of which 3 are written; the
    unwritten ones (huge values here) weigh nothing."""
    q, k, v = data(1, 3, 1, 4), data(1, 1, 8, 4), data(1, 1, 8, 4)
    k[:, :, 3:], v[:, :, 3:] = 1e4, 1e4
    mask = np.arange(8)[None, :] <= 2
    got = run(q, k, v, mask)
    expect_close(got, reference(q, k, v, mask), rtol=1e-5, atol=1e-6,
                 what="one query against positions 0..2 of a cache of 8")
    assert np.abs(got).max() < 10, "the masked positions of the cache leaked into the output"
