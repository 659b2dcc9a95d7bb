"""Replaying: your TinyJit.replay launches the captured kernels again, the new inputs' buffers
standing in for the captured call's and new buffers for the outputs, without calling the
function. Calls 1 and 2 (run, capture) use tinyfw's own capture, so only replay is graded."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from chapters.grading import expect_close, expect_equal
from chapters.learner import reference
from tinyfw import Tensor
from tinyfw.engine import realize
from tinyfw.jit.jit import TinyJit

pytestmark = pytest.mark.task("09.replay")


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
def tinyfw_capture() -> Iterator[None]:
    """Every test runs with tinyfw's own TinyJit.capture (calls 2), and your replay (calls 3+):
    kernel by kernel, with device graphs off (JIT_GRAPH=0; they are task 09.graph's)."""
    with reference("09.capture"), pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("JIT_GRAPH", "0")
        yield


# --- the replays compute what the function computes ---
def test_replays_give_the_results_of_the_function_without_calling_it() -> None:
    """Calls 1 to 5 of a jitted function return what the function returns for their inputs;
    the function itself runs only twice (calls 1 and 2)."""
    def f(x: Tensor, y: Tensor, scale: float) -> tuple[Tensor, Tensor]:
        z = (x @ y).relu() * scale
        return z, z.sum(axis=0) + x.max()

    counted = Counted(f)
    jit = TinyJit(counted)
    for i in range(5):
        x, y = data(4, 3, seed=i), data(3, 5, seed=10 + i)
        z, total = jit(x, y, scale=2.0)
        xs, ys = x.numpy(), y.numpy()
        want = np.maximum(xs @ ys, 0) * 2
        expect_close(z, want, rtol=1e-5, what=f"z returned by call {i + 1}")
        expect_close(total, want.sum(0) + xs.max(), rtol=1e-5,
                     what=f"total returned by call {i + 1}")
        assert counted.calls == min(i + 1, 2), \
            f"after call {i + 1} the function ran {counted.calls} times: a replay does not run it"


def test_a_replay_launches_the_cache_on_the_new_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay launches each captured item in order with realize.launch; the captured call's
    input buffer is replaced by the new input's, the output's by a new buffer, and the
    buffers in between (and the weight) are the captured ones."""
    w = data(3, 4, seed=5).realize()
    jit = TinyJit(lambda x: (x @ w).relu().sum(1) + 1)
    jit(data(2, 3, seed=1))
    jit(data(2, 3, seed=2))
    captured_input = jit.inputs["x"].buffer
    captured_output = buffer(jit.ret)
    launched: list[tuple[Any, Any, list[Any]]] = []
    original = realize.launch

    def spy(item: Any, out: Any, inputs: list[Any]) -> None:
        launched.append((item, out, list(inputs)))
        original(item, out, inputs)

    monkeypatch.setattr(realize, "launch", spy)
    outs = []
    for i in range(2):
        launched.clear()
        x = data(2, 3, seed=3 + i)
        outs.append(jit(x))
        assert [item for item, _, _ in launched] == [launch.item for launch in jit.jit_cache], \
            "a replay launches each item of the jit cache once, in order, with realize.launch"
        (_, first_out, first_in), (_, last_out, last_in) = launched
        assert buffer(x) in first_in and captured_input not in first_in, \
            "the first kernel reads the new input's buffer, not the captured call's"
        assert buffer(w) in first_in, "the weight's buffer (pinned) is read as captured"
        assert first_out is jit.jit_cache[0].out and first_out in last_in, \
            "the buffer between the two kernels is the captured one, reused"
        assert last_out is not captured_output and last_out is buffer(outs[-1]), \
            "the output is written to a new buffer, the one the returned tensor holds"
        expect_close(outs[-1], np.maximum(x.numpy() @ w.numpy(), 0).sum(1) + 1, rtol=1e-5,
                     what=f"returned by replay {i + 1}")
    assert buffer(outs[0]) is not buffer(outs[1]), "each replay writes its own output buffer"


def test_each_replay_returns_new_tensors() -> None:
    """What the function returned comes back in the same shape, with new tensors each call: a
    value returned by an earlier call keeps its value (tinygrad's replays overwrite the same
    output tensors, a classic pitfall when losses are kept in a list)."""
    jit = TinyJit(lambda x: {"sum": (x * 2).sum(), "parts": [x + 1, (x - 1,)]})
    kept = [jit(Tensor(np.full(4, float(i), np.float32))) for i in range(6)]
    assert all(isinstance(r, dict) and isinstance(r["parts"], list) and
               isinstance(r["parts"][1], tuple) for r in kept), \
        "a replay returns a dict of a tensor and a list of a tensor and a tuple, as captured"
    assert len({id(r["sum"]) for r in kept}) == 6, "each call returns a new tensor"
    for i, r in enumerate(kept):
        expect_equal(r["sum"], np.float32(8.0 * i), what=f"sum returned by call {i + 1}")
        expect_equal(r["parts"][0], np.full(4, i + 1.0, np.float32), what=f"x + 1, call {i + 1}")
        expect_equal(r["parts"][1][0], np.full(4, i - 1.0, np.float32),
                     what=f"x - 1, call {i + 1}")


def test_none_comes_back_as_none() -> None:
    """A function that returns None (it only updates state) replays to None."""
    p = data(4, seed=0).realize()

    def update(x: Tensor) -> None:
        p.assign(p * 0.5 + x).realize()

    jit, value = TinyJit(update), p.numpy()
    for i in range(5):
        x = data(4, seed=1 + i)
        assert jit(x) is None, f"call {i + 1} of a function returning None returned more"
        value = value * np.float32(0.5) + x.numpy()
        expect_close(p, value, what=f"p after call {i + 1}")


# --- state ---
def mlp(seed: int) -> list[Tensor]:
    rng = np.random.default_rng(seed)
    return [Tensor(rng.uniform(-0.5, 0.5, shape).astype(np.float32), requires_grad=True)
            for shape in ((6, 8), (8,), (8, 4))]


def training_step(params: list[Tensor], velocity: list[Tensor]) -> Callable[..., Tensor]:
    """A small MLP with plain tensor ops: forward, cross-entropy, backward, SGD with momentum
    (state in params and velocity), realize_all."""
    w1, b1, w2 = params

    def step(x: Tensor, labels: Tensor) -> Tensor:
        logits = (x @ w1 + b1).relu() @ w2
        loss = -(logits.log_softmax(1) * labels).sum(1).mean()
        loss.backward()
        for p, v in zip(params, velocity):
            v.assign(0.9 * v + p.grad)
            p.assign(p - 0.1 * v)
            p.grad = None
        Tensor.realize_all(loss, *params, *velocity)
        return loss
    return step


def batch(i: int) -> tuple[Tensor, Tensor]:
    rng = np.random.default_rng(200 + i)
    return (Tensor(rng.standard_normal((8, 6)).astype(np.float32)),
            Tensor(np.eye(4, dtype=np.float32)[rng.integers(0, 4, 8)]))


def test_a_jitted_training_step_trains_like_the_plain_one() -> None:
    """Six steps of SGD with momentum: the losses, parameters and velocities of the jitted step
    are the plain step's, bit for bit. Each replay reads the state the previous one left."""
    params, plain_params = mlp(0), mlp(0)
    velocity = [Tensor.zeros(*p.shape).realize() for p in params]
    plain_velocity = [Tensor.zeros(*p.shape).realize() for p in params]
    jit = TinyJit(training_step(params, velocity))
    plain = training_step(plain_params, plain_velocity)
    names = ["w1", "b1", "w2", "v1", "vb1", "v2"]
    for i in range(6):
        got = jit(*batch(i))
        want = plain(*batch(i))
        expect_equal(got, want, what=f"loss of step {i + 1}")
        for name, a, b in zip(names, params + velocity, plain_params + plain_velocity):
            expect_equal(a, b, what=f"{name} after step {i + 1}")


def test_state_keeps_its_buffer_across_replays() -> None:
    """A running sum kept in a tensor: each replay adds to what the last one left, in the same
    buffer."""
    total = Tensor(np.zeros(3, np.float32)).realize()

    def add(x: Tensor) -> Tensor:
        total.assign(total + x)
        total.realize()
        return (total * 2).contiguous()

    jit = TinyJit(add)
    want = np.zeros(3, np.float32)
    for i in range(6):
        x = data(3, seed=i)
        got = jit(x)
        want = want + x.numpy()
        expect_close(got, want * 2, what=f"2 * total returned by call {i + 1}")
        expect_close(total, want, what=f"total after call {i + 1}")
        if i == 2:
            kept = buffer(total)
        elif i > 2:
            assert buffer(total) is kept, "the state stays in its buffer across replays"


# --- inputs ---
def test_outputs_fed_back_as_inputs() -> None:
    """h = step(h): each call's input is the previous call's output (for the first replay,
    the tensor the capture returned, on a buffer the cache writes)."""
    w = data(4, 4, seed=5)
    jit = TinyJit(lambda h: (h @ w).tanh())
    h = data(2, 4, seed=6)
    want = h.numpy()
    for i in range(6):
        h = jit(h)
        want = np.tanh(want @ w.numpy())
        expect_close(h, want, rtol=1e-5, atol=1e-6, what=f"h after step {i + 1}")


def test_an_input_the_cache_writes_is_copied_first() -> None:
    """An input whose buffer the cache itself writes (here a tensor the function realized and
    the caller kept): a kernel would read it while writing it, so the replay reads a copy (the
    given input_buffer makes one)."""
    w = data(4, 4, seed=7)
    kept: dict[str, Tensor] = {}

    def f(x: Tensor) -> Tensor:
        kept["h"] = (x @ w).tanh().realize()  # an intermediate the caller can reach
        return (kept["h"] * 2).contiguous()

    jit = TinyJit(f)
    jit(data(2, 4, seed=1))
    jit(data(2, 4, seed=2))
    h = kept["h"]  # its buffer is the one the first kernel of the cache writes
    value = h.numpy()
    expect_close(jit(h), np.tanh(value @ w.numpy()) * 2, rtol=1e-5, atol=1e-6,
                 what="f(h) for an h on a buffer the cache writes")


def test_inputs_assigned_in_the_function() -> None:
    """The function assigns its input: each replay updates the new input's own buffer."""
    def double_in_place(x: Tensor) -> None:
        x.assign(x * 2 + 1).realize()

    jit = TinyJit(double_in_place)
    for i in range(5):
        x = data(3, seed=i)
        value = x.numpy()
        jit(x)
        expect_equal(x, value * 2 + 1, what=f"x after call {i + 1}")


def test_random_numbers_passed_in_are_new_each_replay() -> None:
    """Dropout done right: the mask is drawn outside and passed in, so each replay uses the
    mask of its call."""
    w = data(6, 6, seed=3)
    jit = TinyJit(lambda x, mask: ((x @ w) * mask / 0.5).sum(1))
    Tensor.manual_seed(0)
    for i in range(5):
        x, mask = data(2, 6, seed=i), Tensor.rand(2, 6) < 0.5
        want = ((x.numpy() @ w.numpy()) * mask.numpy() / 0.5).sum(1)
        expect_close(jit(x, mask), want, rtol=1e-5, atol=1e-5,
                     what=f"dropout with the mask of call {i + 1}")


def test_debug_2_reports_each_replay(capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """DEBUG=2: one line per replay; nothing is scheduled."""
    def triple_sum(x: Tensor) -> Tensor:
        return (x * 3).sum()

    jit = TinyJit(triple_sum)
    jit(data(5, seed=0))
    jit(data(5, seed=1))
    capsys.readouterr()
    monkeypatch.setenv("DEBUG", "2")
    jit(data(5, seed=2))
    monkeypatch.setenv("DEBUG", "0")
    printed = capsys.readouterr().out
    assert printed == "TinyJit(test_debug_2_reports_each_replay.<locals>.triple_sum): " \
                      "replayed 1 launches\n", \
        f"DEBUG=2 printed {printed!r} for one replay"
