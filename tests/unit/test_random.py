"""Random numbers on the device (tinyfw/mixin/threefry.py): threefry's known answers, the same
stream on every device, the samples' ranges and moments, seeds, and TinyJit replays drawing new
numbers."""
from __future__ import annotations

import numpy as np
import pytest

from tinyfw import Tensor, dtypes
from tinyfw.probe import probe
from tinyfw.jit.jit import TinyJit
from tinyfw.mixin.threefry import initial_state, threefry2x32

DEVICES = ["CPU", "NUMPY", "CL", "WEBGPU", "CUDAEMU"]


def words(*values: int) -> np.ndarray:
    return np.array(values, np.uint32)


def test_threefry_gives_random123s_known_answers() -> None:
    """Random123's known-answer vectors for threefry2x32 with 20 rounds."""
    cases = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
             ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
             ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]
    for key, block, expected in cases:
        out = threefry2x32(words(key[0]), words(key[1]), words(block[0]), words(block[1]))
        assert (int(out[0][0]), int(out[1][0])) == expected


@pytest.mark.parametrize("device", DEVICES)
def test_each_device_computes_the_stream_numpy_does(device: str) -> None:
    """The words a device draws after manual_seed(s) are threefry of (key, counter) for the
    counters 0, 1, ..., then on from where the last draw ended."""
    if not probe(device)[0]:
        pytest.skip(f"not graded here: no {device}")
    seed = 2**40 + 7
    key0, key1, _ = initial_state(seed)
    Tensor.manual_seed(seed)
    first, second = Tensor._random_words(5, device), Tensor._random_words(3, device)
    counters = np.arange(8, dtype=np.uint32)
    expected = threefry2x32(words(key0), words(key1), counters, np.zeros(8, np.uint32))[0]
    np.testing.assert_array_equal(np.concatenate([first.numpy(), second.numpy()]), expected)


def test_the_same_numbers_on_every_device() -> None:
    """One seed, one stream: rand is equal to the bit on every device, randn to rounding."""
    uniform, normal = [], []
    for device in [d for d in DEVICES if probe(d)[0]]:
        Tensor.manual_seed(3)
        uniform.append(Tensor.rand(4, 5, device=device).numpy())
        normal.append(Tensor.randn(7, device=device).numpy())
    for u, n in zip(uniform[1:], normal[1:]):
        np.testing.assert_array_equal(u, uniform[0])
        np.testing.assert_allclose(n, normal[0], rtol=1e-5, atol=1e-6)


def test_samples_have_the_right_range_and_moments() -> None:
    """rand in [0, 1) (float16 included: its samples have 11 bits, so none rounds up to 1),
    mean 1/2 and variance 1/12; randn mean 0 and variance 1; uniform and normal scaled (on
    the CPU, which has every float dtype)."""
    Tensor.manual_seed(0)
    u = Tensor.rand(1 << 20, device="CPU").numpy()
    assert 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 3e-3 and abs(u.var() - 1 / 12) < 3e-3
    half = Tensor.rand(1 << 16, dtype=dtypes.float16, device="CPU").numpy()
    assert half.dtype == np.float16 and half.max() < 1 and half.min() >= 0
    z = Tensor.randn(1 << 20, device="CPU").numpy()
    assert abs(z.mean()) < 5e-3 and abs(z.std() - 1) < 5e-3 and np.isfinite(z).all()
    assert abs(float((np.abs(z) < 1).mean()) - 0.6827) < 3e-3  # the normal's mass in 1 sigma
    w = Tensor.uniform(1000, low=-2.0, high=3.0, device="CPU").numpy()
    assert -2 <= w.min() and w.max() < 3
    v = Tensor.normal(1 << 16, mean=5.0, std=0.5, device="CPU").numpy()
    assert abs(v.mean() - 5) < 0.01 and abs(v.std() - 0.5) < 0.01
    assert Tensor.rand(3, dtype=dtypes.float64, device="CPU").dtype == dtypes.float64
    with pytest.raises(NotImplementedError, match="not implemented for 'int32'"):
        Tensor.randn(3, dtype=dtypes.int32)


def test_bad_bounds_raise_and_no_sample_reaches_high() -> None:
    """uniform: NaN or infinite bounds, or a range past the float's largest, raise torch's
    RuntimeError (the samples would be NaN or inf); a sample that rounds up to high (1 plus
    nearly 1 is 2.0 in float32 and float16) is low instead, so every dtype stays in [low,
    high). normal: a NaN std raises, as a negative one does."""
    nan, inf = float("nan"), float("inf")
    for low, high, word in [(nan, 1.0, "from"), (0.0, nan, "to"), (-inf, 0.0, "from"),
                            (0.0, inf, "to")]:
        with pytest.raises(RuntimeError, match=f"{word} is out of bounds for float"):
            Tensor.uniform(3, low=low, high=high)
    with pytest.raises(RuntimeError, match="to-from to exceed the limit"):
        Tensor.uniform(3, low=-3e38, high=3e38)
    with pytest.raises(RuntimeError, match="std >= 0.0, but found std nan"):
        Tensor.normal(3, std=nan)
    for dt in (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64):
        sample = Tensor.uniform(1 << 20, low=1.0, high=2.0, dtype=dt, device="CPU")
        assert sample.dtype == dt and sample.max().item() < 2 and sample.min().item() >= 1
    np.testing.assert_array_equal(Tensor.uniform(2, low=1.5, high=1.5).numpy(), [1.5, 1.5])


def test_seeds_repeat_and_differ() -> None:
    Tensor.manual_seed(11)
    a = Tensor.rand(16).numpy()
    b = Tensor.rand(16).numpy()
    Tensor.manual_seed(11)
    np.testing.assert_array_equal(Tensor.rand(16).numpy(), a)
    assert not np.array_equal(a, b)
    Tensor.manual_seed(12)
    assert not np.array_equal(Tensor.rand(16).numpy(), a)


def test_drawn_numbers_keep_their_values() -> None:
    """A sample is computed when it is drawn: what is drawn after it (here inside a jitted
    function, whose state is copied back before each call) does not change it."""
    Tensor.manual_seed(1)
    step = TinyJit(lambda x: (x + Tensor.rand(4)).realize())
    for _ in range(3):
        step(Tensor.zeros(4).realize())
    kept = Tensor.rand(4) * 1
    before = kept.numpy()
    step(Tensor.zeros(4).realize())
    np.testing.assert_array_equal(kept.numpy(), before)


def test_dropout_inside_a_jitted_training_step_and_a_seed_after_the_capture() -> None:
    """Dropout in a jitted step: each replay draws a new mask, the one an unjitted step would
    have drawn; manual_seed after the capture restarts the replays' stream too."""
    w = Tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))

    def forward(x: Tensor) -> Tensor:
        with Tensor.train():
            return (x @ w).dropout(0.5).sum(axis=1).realize()
    jitted = TinyJit(forward)
    x = Tensor(np.ones((5, 3), np.float32))
    Tensor.manual_seed(4)
    plain = [forward(x).numpy() for _ in range(4)]
    Tensor.manual_seed(4)
    got = [jitted(x).numpy() for _ in range(4)]
    np.testing.assert_array_equal(np.stack(got), np.stack(plain))
    Tensor.manual_seed(4)
    np.testing.assert_array_equal(jitted(x).numpy(), plain[0])
