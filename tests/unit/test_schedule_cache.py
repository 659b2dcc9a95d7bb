"""The schedule cache (tinyfw/engine/schedule_cache.py): a graph of a structure scheduled before
is not scheduled again, and what comes back computes the new graph's values."""
from __future__ import annotations

import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.engine import schedule as engine_schedule
from tinyfw.engine import realize, schedule_cache
from tinyfw.engine.caches import forget_built

RNG = np.random.default_rng(0)


def chain(x: Tensor, w: Tensor) -> Tensor:
    return ((x * 2 + 1).relu() @ w).sum(1)


def counts() -> tuple[int, int]:
    return schedule_cache.hits, schedule_cache.misses


def test_the_same_structure_over_new_buffers_is_scheduled_once() -> None:
    """Three graphs of one structure over new buffers: one miss, then hits, each with its own
    values."""
    schedule_cache.clear()
    before = counts()
    for _ in range(3):
        x, w = RNG.standard_normal((6, 5), np.float32), RNG.standard_normal((5, 4), np.float32)
        got = chain(Tensor(x), Tensor(w)).numpy()
        np.testing.assert_allclose(got, (np.maximum(x * 2 + 1, 0) @ w).sum(1), rtol=1e-5,
                                   atol=1e-5)
    hits, misses = counts()
    assert misses - before[1] >= 1 and hits - before[0] >= 2


def test_another_shape_dtype_or_view_is_another_structure() -> None:
    """A change of shape, dtype or view is scheduled anew, and right."""
    x = RNG.standard_normal((6, 5), np.float32)
    w = RNG.standard_normal((5, 4), np.float32)
    chain(Tensor(x), Tensor(w)).numpy()
    _, misses = counts()
    variants = [(Tensor(x[:4]), Tensor(w), x[:4]),
                (Tensor(x.astype(np.float64)), Tensor(w.astype(np.float64)), x),
                (Tensor(x), Tensor(np.ascontiguousarray(w.T)).T, x)]  # w read through a permute
    for a, b, x_np in variants:
        np.testing.assert_allclose(chain(a, b).numpy(), (np.maximum(x_np * 2 + 1, 0) @ w).sum(1),
                                   rtol=1e-5, atol=1e-5)
    assert counts()[1] - misses >= len(variants)


def test_a_value_computed_before_is_loaded_not_recomputed() -> None:
    """The same graph where one node was computed already (so it is loaded, not computed) is
    another structure: its kernel reads that node's buffer instead of computing the exp, and
    both give the same values."""
    from tinyfw.uop.ops import Ops
    x = Tensor(RNG.standard_normal((8, 8), np.float32))
    h = (x * 3).exp()

    def exps(t: Tensor) -> int:  # (exp rounds its argument with a TRUNC)
        return sum(n.op is Ops.TRUNC for item in t.schedule() for n in item.ast.toposort())
    assert exps(h.sum(0)) > 0
    expected = np.exp(x.numpy().astype(np.float64) * 3).sum(0)
    np.testing.assert_allclose(h.sum(0).numpy(), expected, rtol=1e-5)
    h.realize()
    assert exps(h.sum(0)) == 0
    np.testing.assert_allclose(h.sum(0).numpy(), expected, rtol=1e-5)


def test_a_swapped_scheduler_function_schedules_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A function of the scheduler replaced (a learner's exercise, a test's patch) is no part
    of the key: the swapper says so with forget_built, and the graph is scheduled again with
    it (and with the reference again once it is put back and forgotten)."""
    x, w = Tensor(np.ones((6, 5), np.float32)), Tensor(np.ones((5, 4), np.float32))
    names = [item.name for item in chain(x, w).schedule()]
    monkeypatch.setattr(engine_schedule, "kernel_name", lambda ast: "renamed")
    assert [item.name for item in chain(x, w).schedule()] == names, "kept until forgotten"
    forget_built()
    assert {item.name for item in chain(x, w).schedule()} == {"renamed"}
    monkeypatch.undo()
    forget_built()
    assert [item.name for item in chain(x, w).schedule()] == names


def test_a_training_step_with_assigns_is_scheduled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unjitted Adam step assigns its state each step: every assign's DETACH carries a new
    number, which tells nodes apart and is not part of the structure, so from the third step
    on (the first starts from lazy zeros, the second from the first's buffers) the step's graph
    comes from the cache; the parameters are those of steps scheduled anew."""
    from tinyfw import nn
    from tinyfw.nn import optim

    def train(steps: int) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
        Tensor.manual_seed(3)
        layer = nn.Linear(6, 3)
        opt = optim.Adam(nn.state.get_parameters(layer), lr=0.1)
        data = np.random.default_rng(1)
        seen = []
        for _ in range(steps):
            opt.zero_grad()
            x = Tensor(data.standard_normal((4, 6)).astype(np.float32))
            layer(x).relu().sum().backward()
            Tensor.realize_all(*opt.schedule_step())
            seen.append(counts())
        return [p.numpy() for p in nn.state.get_parameters(layer)], seen

    params, seen = train(5)
    assert seen[-1][1] == seen[2][1], f"steps 4 and 5 were scheduled again: {seen}"
    assert seen[-1][0] - seen[2][0] >= 2
    # the same steps with the scheduler run every time: the same values, bit for bit
    monkeypatch.setattr(realize, "cached_schedule",
                        lambda walk: engine_schedule.create_schedule(walk.targets, walk.is_loaded))
    again, _ = train(5)
    for p, q in zip(params, again):
        np.testing.assert_array_equal(p, q)


def test_an_eager_op_again_over_the_same_tensors_is_found_without_a_walk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`x + 1` realized again (a new node over the same sources) takes the first one's kernel
    without walking the graph, and gives the values of the tensors as they are now."""
    x = Tensor(np.arange(6, dtype=np.float32)).realize()
    np.testing.assert_array_equal((x + 1).numpy(), np.arange(6) + 1)
    walks: list[int] = []
    monkeypatch.setattr(schedule_cache.Walk, "add",
                        lambda self, targets: walks.append(1) or None)  # (a walk is an error)
    hits = counts()[0]
    for _ in range(3):
        np.testing.assert_array_equal((x + 1).numpy(), np.arange(6) + 1)
    assert walks == [] and counts()[0] - hits == 3
    monkeypatch.undo()
    x.assign(Tensor(np.full(6, 5, np.float32))).realize()  # (x is another buffer now)
    np.testing.assert_array_equal((x + 1).numpy(), np.full(6, 6))


def test_an_eager_op_over_a_value_that_may_be_computed_later_walks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Below `h + 1`, h is computed from x and not yet realized: once it is, the kernel must
    load it rather than compute it, so such a node's schedule is never found without a walk."""
    from tinyfw.uop.ops import Ops
    x = Tensor(RNG.standard_normal(8).astype(np.float32), requires_grad=True)
    h = (x * 3).exp()  # (requires grad: realize keeps its node, the node gets a buffer)

    def exps(t: Tensor) -> int:
        return sum(n.op is Ops.TRUNC for item in t.schedule() for n in item.ast.toposort())
    expected = np.exp(x.numpy().astype(np.float64) * 3) + 1
    np.testing.assert_allclose((h + 1).numpy(), expected, rtol=1e-5)
    assert exps(h + 1) > 0
    h.realize()
    assert exps(h + 1) == 0
    np.testing.assert_allclose((h + 1).numpy(), expected, rtol=1e-5)


def test_an_eager_op_with_a_deferred_check_checks_every_time() -> None:
    """While a deferred check exists (an integer division by a tensor holding a zero), no
    schedule is found without a walk: the check is computed, and raises, at every realize."""
    a = Tensor(np.array([4, 5, 6], np.int32)).realize()
    b = Tensor(np.array([2, 0, 3], np.int32)).realize()
    for _ in range(2):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            (a // b).realize()


def test_an_eager_op_after_a_swapped_scheduler_function_schedules_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An eager op's remembered schedule is forgotten by forget_built too."""
    x = Tensor(np.ones(4, np.float32)).realize()
    (x * 2).realize()
    monkeypatch.setattr(engine_schedule, "kernel_name", lambda ast: "renamed")
    forget_built()
    assert [item.name for item in (x * 2).schedule()] == ["renamed"]


def test_a_loaded_value_is_keyed_by_its_shape_not_by_what_made_it() -> None:
    """Nothing below a realized value is walked: two values of different shapes made by the
    same kind of node (a sum over axis 0) keep their graphs apart, and two of one shape made by
    different graphs share the schedule of what reads them."""
    schedule_cache.clear()
    a = Tensor(np.ones((8, 4), np.float32)).sum(0).realize()
    b = Tensor(np.full((8, 5), 2, np.float32)).sum(0).realize()
    c = (Tensor(np.ones((2, 4), np.float32)) * 3).max(0).realize()
    np.testing.assert_array_equal((a + 1).numpy(), np.full(4, 9, np.float32))
    np.testing.assert_array_equal((b + 1).numpy(), np.full(5, 17, np.float32))
    before = schedule_cache.hits
    np.testing.assert_array_equal((c + 1).numpy(), np.full(4, 4, np.float32))
    assert schedule_cache.hits == before + 1  # (a + 1's schedule, bound to c)
