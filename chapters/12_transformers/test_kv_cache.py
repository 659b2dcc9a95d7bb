"""The KV cache: your write_cache(cache, new, start) returns the cache with new's positions in
place from start on, the rest unchanged: at a Python int start (a prompt), and at a position
given as a tensor (one token), so that one captured decode step serves every position."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_equal
from tinyfw import Tensor, dtypes
from tinyfw.jit.jit import TinyJit
from tinyfw.models.llama import write_cache

pytestmark = pytest.mark.task("12.kv_cache")
RNG = np.random.default_rng(3)


def cache_and_new(length: int) -> tuple[np.ndarray, np.ndarray]:
    cache = RNG.standard_normal((1, 2, 8, 4)).astype(np.float32)
    return cache, RNG.standard_normal((1, 2, length, 4)).astype(np.float32)


def test_a_prompt_is_written_from_its_start() -> None:
    """3 positions written at start 2 of 8: positions 2, 3, 4 are new, the others as before."""
    cache, new = cache_and_new(3)
    got = write_cache(Tensor(cache), Tensor(new), 2).numpy()
    want = cache.copy()
    want[:, :, 2:5] = new
    expect_equal(got, want, what="write_cache(cache, new of 3 positions, start=2)")


def test_one_token_at_a_position_tensor() -> None:
    """start as a tensor (int32, shape (1, 1)): position 5 is new, the others unchanged."""
    cache, new = cache_and_new(1)
    position = Tensor(np.array([[5]], np.int32))
    got = write_cache(Tensor(cache), Tensor(new), position).numpy()
    want = cache.copy()
    want[:, :, 5] = new[:, :, 0]
    expect_equal(got, want, what="write_cache(cache, one new position, start=Tensor([[5]]))")


def test_a_prompt_longer_than_the_cache_is_refused() -> None:
    cache, new = cache_and_new(3)
    with pytest.raises(RuntimeError, match="holds 8 positions"):  # (the cache's size named)
        write_cache(Tensor(cache), Tensor(new), 6)
    with pytest.raises(RuntimeError, match="position 0, not -1"):  # (not a crop of new)
        write_cache(Tensor(cache), Tensor(new), -1)


def test_one_jitted_step_writes_every_position() -> None:
    """A jitted step that writes one token at a position tensor: captured once, replayed
    for positions 0..5, the cache fills up in order."""
    cache = Tensor.zeros(1, 1, 6, 2).contiguous().realize()

    def step(new: Tensor, position: Tensor) -> None:
        cache.assign(write_cache(cache, new, position)).realize()

    jitted = TinyJit(step)
    for p in range(6):
        jitted(Tensor(np.full((1, 1, 1, 2), p + 1.0, np.float32)),
               Tensor(np.array([[p]], np.int32)).cast(dtypes.int32).realize())
    expect_equal(cache.numpy()[0, 0, :, 0], np.arange(1.0, 7.0, dtype=np.float32),
                 what="the cache after six jitted steps at positions 0..5")
