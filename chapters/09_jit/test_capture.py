"""Capturing: your TinyJit.capture runs the function once more while recording every launch,
keeps the state of the tensors it assigns in their old buffers, and checks what it cannot
replay. The results of a capture are checked directly (the jit cache, the returned tensors, the
state); where replays are needed to see a capture's effect, tinyfw's own replay runs them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from chapters.grading import expect_close, expect_equal
from chapters.learner import reference
from tinyfw import Tensor, dtypes
from tinyfw.engine import realize
from tinyfw.engine.capture import Launch, capture_in_this_thread
from tinyfw.jit.capture import Recorder
from tinyfw.jit.jit import JitError, TinyJit

pytestmark = pytest.mark.task("09.capture")


def data(*shape: int, seed: int) -> Tensor:
    """A tensor of random values (a new buffer each time)."""
    return Tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def buffer(t: Tensor) -> Any:
    """The buffer holding t's value (t realized)."""
    assert realize.is_realized(t.uop), "the tensor should hold a buffer"
    return realize.buffer_of(t.uop)


class Counted:
    """A function that counts its calls."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn, self.calls = fn, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fn(*args, **kwargs)


@pytest.fixture(autouse=True, scope="module")
def tinyfw_replay() -> Iterator[None]:
    """Every test runs with your TinyJit.capture (calls 2) and tinyfw's own replay (calls 3+),
    with its device graphs, for the tests that look at a capture's effect on later calls."""
    with reference("09.replay", "09.graph"):
        yield


# --- the captured call ---
def test_the_captured_call_returns_what_the_function_computes() -> None:
    """Call 2 runs the function (once) and returns its results, tuples and dicts as they are;
    the tensors returned hold just their buffers."""
    def f(x: Tensor, y: Tensor, scale: float) -> tuple[Tensor, dict[str, Tensor]]:
        z = (x @ y).relu() * scale
        return z, {"total": z.sum(axis=0) + x.max()}

    counted = Counted(f)
    jit = TinyJit(counted)
    jit(data(4, 3, seed=0), data(3, 5, seed=1), scale=2.0)
    x, y = data(4, 3, seed=2), data(3, 5, seed=3)
    got = jit(x, y, scale=2.0)
    assert counted.calls == 2 and jit.cnt == 2, \
        f"the capture calls the function once: {counted.calls} calls after 2 jit calls"
    assert isinstance(got, tuple) and isinstance(got[1], dict), \
        f"the capture returns what the function returned, got a {type(got).__name__}"
    kept = jit.ret
    assert isinstance(kept, tuple) and isinstance(kept[1], dict) and kept is not got and \
        kept[0] is not got[0] and kept[1]["total"] is not got[1]["total"], \
        "jit.ret: the returned structure with tensors of the JIT's own, rebuilt(ret, {})"
    assert realize.buffer_of(kept[0].uop) is realize.buffer_of(got[0].uop), \
        "jit.ret's tensors are on the returned tensors' buffers (replays rebuild from them)"
    z, total = got[0], got[1]["total"]
    for name, t in (("z", z), ("total", total)):
        assert realize.is_buffer_view(t.uop), \
            f"the returned tensor {name} should hold just its buffer: t.uop = view(...)"
    xs, ys = x.numpy(), y.numpy()
    want = np.maximum(xs @ ys, 0) * 2
    expect_close(z, want, rtol=1e-5, what="z returned by the captured call")
    expect_close(total, want.sum(0) + xs.max(), rtol=1e-5, what="total returned by the capture")


def test_the_jit_cache_holds_each_launch_in_order() -> None:
    """Each kernel the captured call launched is a Launch(item, out, inputs) in the jit cache,
    in launch order, with the very Buffer objects it wrote and read."""
    w = data(3, 4, seed=5).realize()

    def f(x: Tensor) -> Tensor:
        return (x @ w).relu().sum(1) + 1

    jit = TinyJit(f)
    jit(data(2, 3, seed=1))
    x = data(2, 3, seed=2)
    expected = [item.name for item in f(x).schedule()]  # the kernels, not run
    out = jit(x)
    cache = jit.jit_cache
    assert all(isinstance(launch, Launch) for launch in cache), \
        f"the jit cache holds Launch objects, got {[type(c).__name__ for c in cache]}"
    names = [launch.item.name for launch in cache]
    assert names == expected, f"launches {names}, expected the function's kernels {expected}"
    first, last = cache[0], cache[-1]
    assert buffer(x) in first.inputs and buffer(w) in first.inputs, \
        "the first kernel reads the input x and the weight w: their buffers are its inputs"
    assert first.out in last.inputs, "the second kernel reads the buffer the first one wrote"
    assert last.out is buffer(out), "the last kernel wrote the buffer of the tensor returned"


def test_inputs_and_constants_are_recorded() -> None:
    """jit.inputs keeps each tensor argument's buffer, shape, dtype and device; jit.constants
    the other arguments. A later call unlike them is refused."""
    jit = TinyJit(lambda x, scale: (x * scale).sum(axis=1))
    jit(data(4, 3, seed=0), 2.0)
    x = data(4, 3, seed=1)
    jit(x, scale=2.0)
    assert set(jit.inputs) == {"x"} and jit.constants == {"scale": 2.0}, \
        f"inputs {sorted(jit.inputs)}, constants {jit.constants}"
    spec = jit.inputs["x"]
    assert spec.buffer is buffer(x), "the input's buffer is the captured call's x's buffer"
    assert (spec.shape, spec.dtype, spec.device) == ((4, 3), dtypes.float32, x.device), spec
    for call, message in [
        (lambda: jit(data(5, 3, seed=2), 2.0), r"input x has shape \[5, 3\].*\[4, 3\]"),
        (lambda: jit(data(4, 3, seed=2).cast(dtypes.float16), 2.0), "input x has dtype float16"),
        (lambda: jit(data(4, 3, seed=2), 3.0), "argument scale is 3.0.*2.0"),
        (lambda: jit(data(4, 3, seed=2), scale=data(1, seed=3)), "called with tensor arguments"),
    ]:
        with pytest.raises(JitError, match=message):
            call()


def test_written_and_pinned_buffers() -> None:
    """jit.written: the buffers the cache writes. jit.pinned: those it reads and does not make
    (a weight), never the inputs (replays swap them)."""
    w = data(3, 4, seed=5).realize()
    jit = TinyJit(lambda x: (x @ w).relu().sum(1) + 1)
    jit(data(2, 3, seed=1))
    x = data(2, 3, seed=2)
    out = jit(x)
    assert jit.written == {launch.out for launch in jit.jit_cache}, \
        "written holds the out buffer of every launch"
    assert buffer(out) in jit.written
    assert jit.pinned == {buffer(w)}, \
        f"pinned should be just w's buffer (read, not written, not an input), got {jit.pinned}"


def test_values_computed_in_the_capture_are_recomputed_after_replays() -> None:
    """Replays overwrite the buffers the capture computed into, so realize must forget them: a
    lazy tensor that uses a value the capture computed computes it again, rather than read a
    buffer a replay has reused."""
    def f(x: Tensor, y: Tensor) -> Tensor:
        return (x * y + 1).contiguous().sum()  # x * y + 1 gets a buffer of its own

    x0, y0 = data(4, seed=0), data(4, seed=1)
    later = (x0 * y0 + 1).contiguous() * 3  # lazy: uses that node, and keeps it alive
    jit = TinyJit(f)
    jit(data(4, seed=2), y0)
    jit(x0, y0)  # the capture computes x0 * y0 + 1 into a buffer of the cache
    for i in range(2):
        jit(data(4, seed=10 + i), y0)  # replays write that buffer with other values
    expect_close(later, (x0.numpy() * y0.numpy() + 1) * 3,
                 what="(x0 * y0 + 1) * 3 realized after replays (x0 * y0 + 1 was computed in "
                      "the capture)")


def test_the_capture_listens_only_while_the_function_runs() -> None:
    """During the call the recorder hears launches and assigns; after it, even when the
    function raised, nothing is listening and no capture is under way."""
    jit = TinyJit(lambda x: (x + 1).contiguous())
    jit(data(3, seed=0))
    jit(data(3, seed=1))
    assert len(jit.jit_cache) == 1, f"one kernel captured, got {len(jit.jit_cache)}"

    calls = []

    def fails_when_captured(x: Tensor) -> Tensor:
        calls.append(x)
        y = (x * 2).realize()
        if len(calls) == 2:
            raise ValueError("the function failed")
        return y

    failing = TinyJit(fails_when_captured)
    failing(data(3, seed=0))  # call 1: not a capture
    before = list(realize.listeners)
    with pytest.raises(ValueError, match="the function failed"):
        failing(data(3, seed=1))
    assert realize.listeners == before, "the recorder must stop listening, even on an error"
    assert capture_in_this_thread() is None, \
        "no capture is under way once capture() returns"
    expect_equal((data(3, seed=2) * 3).numpy(), data(3, seed=2).numpy() * 3,
                 what="reading data after a failed capture")


# --- state ---
def sgd_step(params: list[Tensor], lr: float = 0.1) -> Callable[[Tensor, Tensor], Tensor]:
    """A training step of a small MLP with plain tensor ops: forward, mean squared error,
    backward, SGD with assign, realize_all."""
    w1, b1, w2 = params

    def step(x: Tensor, target: Tensor) -> Tensor:
        out = (x @ w1 + b1).relu() @ w2
        loss = ((out - target) ** 2).mean()
        loss.backward()
        for p in params:
            p.assign(p - lr * p.grad)
            p.grad = None
        Tensor.realize_all(loss, *params)
        return loss
    return step


def mlp(seed: int) -> list[Tensor]:
    rng = np.random.default_rng(seed)
    return [Tensor(rng.uniform(-0.5, 0.5, shape).astype(np.float32), requires_grad=True)
            for shape in ((6, 8), (8,), (8, 3))]


def batch(i: int) -> tuple[Tensor, Tensor]:
    rng = np.random.default_rng(100 + i)
    return (Tensor(rng.standard_normal((5, 6)).astype(np.float32)),
            Tensor(rng.standard_normal((5, 3)).astype(np.float32)))


def test_state_stays_in_the_buffers_it_had() -> None:
    """After the capture each parameter holds its updated value in the buffer it had before
    the call, and the cache writes that buffer (by the kernel of its update, or by a copy)."""
    params, plain_params = mlp(0), mlp(0)
    jit, plain = TinyJit(sgd_step(params)), sgd_step(plain_params)
    for i in range(2):
        olds = [buffer(p) for p in params]
        loss = jit(*batch(i))
        want = plain(*batch(i))
    assert [buffer(p) for p in params] == olds, \
        "each assigned tensor points at the buffer it held before the captured call"
    for name, p, q in zip(("w1", "b1", "w2"), params, plain_params):
        expect_equal(p, q, what=f"{name} after the captured step")
    expect_equal(loss, want, what="the captured step's loss")
    assert realize.is_buffer_view(loss.uop), "the loss returned holds just its buffer"
    written = {launch.out for launch in jit.jit_cache}
    assert all(old in written for old in olds), "the cache writes each parameter's buffer"
    assert jit.written == written, \
        "jit.written holds the out buffer of every launch, as they are once the state is kept"
    assert set(olds) <= jit.pinned, "the parameters' buffers are pinned (state kept)"


def test_an_update_read_where_it_is_written_is_done_in_place() -> None:
    """p.assign(p * 0.5 + x): the kernel reads each element of p where it writes it, so it
    writes p's buffer itself. The cache is that one kernel, no copy."""
    p = data(6, seed=4).realize()

    def update(x: Tensor) -> None:
        p.assign(p * 0.5 + x).realize()

    jit = TinyJit(update)
    x1, x2 = data(6, seed=5), data(6, seed=6)
    value = p.numpy() * 0.5 + x1.numpy()
    jit(x1)
    old = buffer(p)
    assert jit(x2) is None, "the function returns None, so does the capture"
    value = value * 0.5 + x2.numpy()
    expect_close(p, value, what="p after the captured call")
    assert buffer(p) is old, "p points at the buffer it held before the call"
    assert [(launch.item.ast is None, launch.out is old) for launch in jit.jit_cache] == \
        [(False, True)], "the cache is one kernel writing p's buffer in place"


def test_state_read_again_after_its_update_is_kept_by_a_copy() -> None:
    """A kernel after the update reads the old value: the update writes a new buffer and a
    copy new -> old ends the jit cache."""
    p = data(5, seed=1).realize()

    def f(x: Tensor) -> Tensor:
        before = p * 3  # lazy: reads p's old buffer when realized below, after the update
        p.assign(p + x)
        p.realize()
        return before.realize()

    jit, value = TinyJit(f), p.numpy()
    x1, x2 = data(5, seed=2), data(5, seed=3)
    jit(x1)  # call 1: p gets a new buffer, as without a JIT
    value, old = value + x1.numpy(), buffer(p)
    got = jit(x2)
    expect_close(got, value * 3, what="returned by the capture (the value before its update)")
    value = value + x2.numpy()
    assert buffer(p) is old, "p points at its old buffer again"
    expect_close(p, value, what="p after the captured call")
    last = jit.jit_cache[-1]
    assert last.item.ast is None and last.out is old, \
        "the last launch is the copy new -> old (item.ast None, out the old buffer)"


def test_a_captured_training_step_replays_like_the_plain_one() -> None:
    """Over several steps (replayed by tinyfw's replay) the parameters and losses of the
    jitted step are those of the plain step, bit for bit."""
    params, plain_params = mlp(1), mlp(1)
    jit, plain = TinyJit(sgd_step(params)), sgd_step(plain_params)
    for i in range(6):
        got = jit(*batch(i))
        want = plain(*batch(i))
        expect_equal(got, want, what=f"loss of step {i + 1}")
        for name, p, q in zip(("w1", "b1", "w2"), params, plain_params):
            expect_equal(p, q, what=f"{name} after step {i + 1}")


def test_a_tensor_assigned_outside_is_seen_by_replays() -> None:
    """A pinned tensor (the learning rate) assigned between steps: its new value is copied into
    the buffer the cache reads, which needs this TinyJit registered (live_jits) with its pins."""
    lr = Tensor([0.5]).realize()
    w = data(3, seed=2).realize()

    def f(x: Tensor) -> Tensor:
        w.assign(w - lr * x).realize()
        return (w * 2).realize()

    jit = TinyJit(f)
    expected = w.numpy()
    for i in range(5):
        if i == 3:
            lr.assign(Tensor([0.25]))  # a learning rate schedule
        x = data(3, seed=10 + i)
        out = jit(x)
        expected = expected - np.float32(0.5 if i < 3 else 0.25) * x.numpy()
        expect_close(out, 2 * expected, what=f"2 * w after call {i + 1}")


# --- what a capture refuses ---
def _reads_data() -> TinyJit:
    def f(x: Tensor) -> Tensor:
        y = x * 2
        print(y.sum().item())
        return y
    return TinyJit(f)


def _nested() -> TinyJit:
    inner = TinyJit(lambda x: (x + 1).contiguous())
    return TinyJit(lambda x: inner(x) * 2)


def _nothing_launched() -> TinyJit:
    done = (data(3, seed=9) + 1).realize()
    return TinyJit(lambda x: done)


def _gradient_accumulated() -> TinyJit:
    w = Tensor(np.ones(3, np.float32), requires_grad=True)

    def f(x: Tensor) -> Tensor:
        (w * x).sum().backward()  # w.grad is never reset: it accumulates
        return w.grad * 1
    return TinyJit(f)


def _assigns_a_lazy_tensor() -> TinyJit:
    lazy = Tensor.zeros(3)  # never realized: no buffer
    return TinyJit(lambda x: lazy.assign(lazy + x) * 2)


class _AssignLeftUnrealized(TinyJit):
    """Assigns state it does not realize; the state is realized between call 1 and 2."""

    def __init__(self) -> None:
        self.state = data(3, seed=8).realize()

        def f(x: Tensor) -> Tensor:
            self.state.assign(self.state + x)  # not realized by the end of the call
            return (x * 2).contiguous()
        super().__init__(f)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.state.realize()  # realized before each call
        return super().__call__(*args, **kwargs)


def _one(x: Tensor) -> tuple[Tensor, ...]:
    """The arguments of most calls below: one tensor."""
    return (x,)


PITFALLS: dict[str, tuple[Callable[[], TinyJit], Callable[[Tensor], tuple[Tensor, ...]], str]] = {
    "reading data": (_reads_data, _one, r"reads a tensor's data.*Return the tensor"),
    "nested jits": (_nested, _one, "nested JITs are not supported"),
    "random numbers": (lambda: TinyJit(lambda x: x * Tensor.randint(3, high=2)), _one,
                       "drew random numbers.*pass them in"),
    "nothing launched": (_nothing_launched, _one, "launched no kernel"),
    "returning an input": (lambda: TinyJit(lambda x: (x, x + 1)), _one, "returned its input x"),
    "two inputs, one buffer": (lambda: TinyJit(lambda x, y: x + y), lambda x: (x, x),
                               "share one buffer"),
    "a gradient accumulated": (_gradient_accumulated, _one, "zero_grad"),
    "assigning a lazy tensor": (_assigns_a_lazy_tensor, _one, "still lazy"),
    "an assign left unrealized": (_AssignLeftUnrealized, _one, "left it unrealized"),
}


@pytest.mark.parametrize("case", PITFALLS)
def test_a_capture_refuses_what_it_cannot_replay(case: str) -> None:
    """Each pitfall raises JitError during the capture (call 2), with its own message, and
    leaves nothing listening."""
    make, arguments, message = PITFALLS[case]
    jit = make()
    jit(*arguments(data(3, seed=0)))  # call 1 runs as usual
    with pytest.raises(JitError, match=message):
        jit(*arguments(data(3, seed=1)))
    assert capture_in_this_thread() is None and not any(
        isinstance(listener, Recorder)
        for listener in realize.listeners + realize.thread_listeners()), \
        "after a refused capture nothing is listening"


def test_debug_1_reports_the_capture(capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """DEBUG=1: one line per capture, with the launches, copies, inputs and state."""
    params = mlp(2)
    jit = TinyJit(sgd_step(params))
    jit(*batch(0))
    monkeypatch.setenv("DEBUG", "1")
    jit(*batch(1))
    monkeypatch.setenv("DEBUG", "0")
    printed = capsys.readouterr().out
    copies = sum(launch.item.ast is None for launch in jit.jit_cache)
    line = (f"TinyJit(sgd_step.<locals>.step): captured {len(jit.jit_cache)} launches "
            f"({copies} copies), 2 inputs, 3 tensors of state")
    assert line in printed, f"expected the line\n{line}\nin what DEBUG=1 printed:\n{printed}"
