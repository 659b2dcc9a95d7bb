"""TinyJit's memory planner (tinyfw/engine/memory.py): intermediate buffers whose lifetimes do
not overlap share memory, and a replay computes exactly what it computed without the plan."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tinyfw import Tensor, dtypes, nn
from tinyfw.device import Buffer
from tinyfw.probe import probe
from tinyfw.engine.capture import Launch
from tinyfw.jit import plan as jit_plan
from tinyfw.jit.jit import TinyJit
from tinyfw.engine.memory import lifetimes, memory_bytes, plan_memory

DEVICES = ["CPU", "NUMPY"] + [d for d in ("CL", "WEBGPU") if probe(d)[0]]


# --- plan_memory on launches made by hand (no kernel runs: only out and inputs are read) ---
def buf(size: int, dtype: Any = dtypes.float32, device: str = "CPU") -> Buffer:
    return Buffer(device, size, dtype)  # (no memory is allocated until used)


def launch(out: Buffer, *inputs: Buffer) -> Launch:
    return Launch(None, out, list(inputs))  # type: ignore[arg-type]


def test_a_chain_reuses_the_buffer_freed_two_launches_before() -> None:
    """x -> a -> b -> c -> d: b is written while a is read (they overlap at launch 1), c is
    written after a's last read: c takes a's buffer."""
    x, a, b, c, d = (buf(8) for _ in range(5))
    launches = [launch(a, x), launch(b, a), launch(c, b), launch(d, c)]
    assert lifetimes(launches, {x, d}) == {a: (0, 1), b: (1, 2), c: (2, 3)}
    assert plan_memory(launches, {x, d}) == {a: a, b: b, c: a}


def test_read_and_written_by_one_launch_overlap() -> None:
    """A launch that reads a and writes b needs both: b never takes a's buffer."""
    x, a, b = buf(4), buf(4), buf(4)
    assert plan_memory([launch(a, x), launch(b, a), launch(x, b)], {x}) == {a: a, b: b}


def test_best_fit_takes_the_smallest_free_buffer_that_holds_it() -> None:
    x, k = buf(1), buf(1)
    p, q, r = buf(10), buf(4), buf(6)
    s, t, u = buf(5), buf(3), buf(20)
    launches = [launch(p, x), launch(q, x), launch(r, x), launch(k, p, q, r),
                launch(s, k), launch(t, k), launch(u, k), launch(x, s, t, u)]
    plan = plan_memory(launches, {x, k})
    assert plan[s] is r and plan[t] is q and plan[u] is u  # 6 for 5, 4 for 3, none for 20
    assert [plan[b] for b in (p, q, r)] == [p, q, r]


def test_equal_sizes_take_the_first_freed_and_the_plan_is_deterministic() -> None:
    x = buf(1)
    a, b, c = buf(4), buf(4), buf(4)
    launches = [launch(a, x), launch(b, a), launch(x, b), launch(c, x)]
    plans = [plan_memory(launches, {x}) for _ in range(3)]
    assert plans[0][c] is a and plans[0] == plans[1] == plans[2]


def test_dtypes_and_devices_do_not_share() -> None:
    x = buf(1)
    a = buf(8)
    others = [buf(8, dtypes.int32), buf(8, device="NUMPY"), buf(8, dtypes.float16)]
    same = buf(8)
    launches = [launch(a, x), launch(x, a)] + [launch(o, x) for o in others] + [launch(same, x)]
    plan = plan_memory(launches, {x})
    assert all(plan[o] is o for o in others) and plan[same] is a


def test_kept_buffers_neither_move_nor_hold_others() -> None:
    """A buffer in keep (an input, state, an output, a check's flag) is not in the plan, and no
    intermediate is put in its memory, however free it looks."""
    x, kept, a = buf(4), buf(4), buf(4)
    launches = [launch(kept, x), launch(x, kept), launch(a, x)]
    assert plan_memory(launches, {x, kept}) == {a: a}


def test_a_buffer_read_before_it_is_written_carries_state() -> None:
    """Read by launch 0 and written by launch 1 (a value from the step before): no intermediate."""
    x, s, y = buf(4), buf(4), buf(4)
    launches = [launch(y, s, x), launch(s, y), launch(x, y)]
    assert lifetimes(launches, set()) == {y: (0, 2)}


def test_memory_bytes_counts_shared_memory_once() -> None:
    a = buf(10)
    view = Buffer("CPU", 4, dtypes.float32, base=a)
    assert memory_bytes([a, view, buf(2, dtypes.int8)]) == 40 + 2


# --- TinyJit with the planner ---
SIZES, BATCH = (784, 128, 10), 32


def mlp_step(jit: bool) -> tuple[Callable[[int], Tensor], list[Tensor], Any]:
    """An MNIST-like MLP training step (as bench/train_step.py's), on the default device:
    Linear 784-128-10 with ReLU, sparse cross-entropy, backward, Adam; batch i % 3 of fixed
    data."""
    rng = np.random.default_rng(0)
    l1, l2 = nn.Linear(*SIZES[:2]), nn.Linear(*SIZES[1:])
    params = [l1.weight, l1.bias, l2.weight, l2.bias]
    for p in params:
        p.assign(Tensor(rng.uniform(-0.1, 0.1, p.shape).astype(np.float32))).realize()
    opt = nn.optim.Adam(params, lr=0.01)
    xs = [Tensor(rng.random((BATCH, SIZES[0]), dtype=np.float32)).realize() for _ in range(3)]
    ys = [Tensor(rng.integers(0, SIZES[-1], BATCH).astype(np.int32)).realize()
          for _ in range(3)]

    def step(x: Tensor, y: Tensor) -> Tensor:
        opt.zero_grad()
        loss = l2(l1(x).relu()).sparse_categorical_crossentropy(y).backward()
        Tensor.realize_all(loss, *opt.schedule_step())
        return loss
    run = TinyJit(step) if jit else step
    return (lambda i: run(xs[i % 3], ys[i % 3])), params, run


@pytest.mark.parametrize("device", DEVICES)
def test_a_planned_mlp_step_holds_less_and_trains_bit_identically(
        device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Six steps (a run, a capture, four replays): the losses and parameters are the same bits
    as the plain step's and as those of a TinyJit without a plan (JIT_PLAN=0), and the planned
    cache writes fewer bytes."""
    monkeypatch.setenv("DEVICE", device)
    plain, plain_params, _ = mlp_step(jit=False)
    planned, planned_params, planned_jit = mlp_step(jit=True)
    unplanned, unplanned_params, unplanned_jit = mlp_step(jit=True)
    runs = [(plain, plain_params), (planned, planned_params), (unplanned, unplanned_params)]
    for i in range(6):
        monkeypatch.setenv("JIT_PLAN", "1")
        want = plain(i).numpy()
        got = planned(i).numpy()
        monkeypatch.setenv("JIT_PLAN", "0")
        assert unplanned(i).numpy().tobytes() == want.tobytes() == got.tobytes(), f"step {i}"
    for p, q, r in zip(*(params for _, params in runs)):
        assert p.numpy().tobytes() == q.numpy().tobytes() == r.numpy().tobytes()
    assert unplanned_jit.bytes_after == unplanned_jit.bytes_before == planned_jit.bytes_before
    assert 0 < planned_jit.bytes_after < planned_jit.bytes_before
    shared = [launch.out for launch in planned_jit.jit_cache if launch.out.base is not None]
    outs = [launch.out for launch in planned_jit.jit_cache]
    assert shared or len(set(outs)) < len(outs), "some launches write memory another wrote"


class Keeper:
    """Where a function keeps a tensor it computed (`self.hidden = h`)."""
    hidden: Tensor


def chain(keeper: Keeper | None) -> Callable[[Tensor], Tensor]:
    """x -> a -> b -> c, each realized: without a plan three buffers; with one, c can take a's
    (a is read last by b's kernel). Keeps a in keeper, if given."""
    w = Tensor(np.arange(16, dtype=np.float32).reshape(4, 4) / 10)

    def f(x: Tensor) -> Tensor:
        a = (x @ w).relu().realize()
        b = (a * 3 + 1).realize()
        c = (b - 5).realize()
        if keeper is not None:
            keeper.hidden = a
        return c.sum() * 2
    return f


def test_a_kept_intermediate_is_never_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tensor the function realized and kept still holds its own buffer after the capture:
    the planner leaves it out, so after each replay it holds that replay's value, never another
    tensor's. Without the check of what is held outside the JIT, c would be written into a's
    memory and keeper.hidden would show c."""
    w = np.arange(16, dtype=np.float32).reshape(4, 4) / 10
    for check in (True, False):
        if not check:
            monkeypatch.setattr(jit_plan, "held_elsewhere", lambda cache, keep: set())
        keeper = Keeper()
        jit = TinyJit(chain(keeper))
        hidden = []
        for i in range(5):
            x = np.full((4, 4), i + 1, np.float32)
            jit(Tensor(x))
            hidden.append((keeper.hidden.numpy(), np.maximum(x @ w, 0)))
        if check:
            for got, want in hidden:
                np.testing.assert_array_equal(got, want)
        else:
            assert not all(np.array_equal(got, want) for got, want in hidden[2:])


def test_a_dropped_intermediate_is_shared() -> None:
    """The same function, a not kept: c takes a's memory."""
    jit = TinyJit(chain(None))
    for i in range(4):
        x = np.full((4, 4), i + 1, np.float32)
        want = float(((np.maximum(x @ (np.arange(16).reshape(4, 4) / 10), 0) * 3 + 1 - 5)
                      .astype(np.float32).sum()) * 2)
        assert jit(Tensor(x)).item() == pytest.approx(want, rel=1e-6)
    a, b, c = [launch.out for launch in jit.jit_cache[:3]]
    assert c is a and b is not a
    assert jit.bytes_after == jit.bytes_before - 16 * 4


@pytest.mark.parametrize("device", DEVICES)
def test_deferred_checks_read_their_own_flags(device: str) -> None:
    """Labels checked in range and a divisor checked for 0 (realize.Check, read after each
    replay): their flag and value buffers are written by one launch each and never shared, so
    a replay raises with the right value, and a good replay after it does not."""
    w = Tensor(np.ones((3, 4), np.float32) / 4, device=device)

    def f(x: Tensor, labels: Tensor, d: Tensor) -> Tensor:
        loss = (x @ w).sparse_categorical_crossentropy(labels)
        return (loss * 2).realize(), ((labels + 10) // d).realize()
    jit = TinyJit(f)
    x = Tensor(np.ones((5, 3), np.float32), device=device)

    def call(labels: list[int], d: list[int]) -> list[np.ndarray]:
        ints = [Tensor(np.array(v, np.int32), device=device) for v in (labels, d)]
        return [t.numpy() for t in jit(x, *ints)]
    for _ in range(3):
        call([0, 1, 2, 3, 0], [1, 2, 3, 4, 5])
    assert len(jit.checks) == 2
    flags = {b for _, flag, value in jit.checks for b in (flag, value) if b is not None}
    memory = [launch.out.base or launch.out for launch in jit.jit_cache]
    assert all(memory.count(b) == 1 for b in flags), "a check's buffer shared"
    with pytest.raises(IndexError, match="7"):
        call([0, 1, 7, 3, 0], [1, 2, 3, 4, 5])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        call([0, 1, 2, 3, 0], [1, 0, 3, 4, 5])
    loss, q = call([3, 1, 2, 0, 0], [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(q, np.array([13, 5, 4, 2, 2], np.int32))
    np.testing.assert_allclose(loss, 2 * np.log(4), rtol=1e-6)
