"""Graph execution: your DeviceGraph.__call__ binds the buffers that are new this replay and
launches every kernel with one call; your render_graph writes the CPU graph's C function that
calls every kernel in order. Calls 1 and 2 (run, capture) use tinyfw's own capture."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from chapters.grading import expect_close, expect_equal
from chapters.learner import reference
from tinyfw import Tensor
from tinyfw.engine import realize
from tinyfw.jit.jit import TinyJit
from tinyfw.runtime import graph_cpu
from tinyfw.runtime.graph import DeviceGraph
from tinyfw.runtime.graph_cpu import CPUGraph, render_graph

pytestmark = pytest.mark.task("09.graph")


@pytest.fixture(autouse=True, scope="module")
def tinyfw_capture() -> Iterator[None]:
    """Every test runs with tinyfw's own capture and kernel-by-kernel replay, graphs on."""
    with reference("09.capture", "09.replay"), pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("JIT_GRAPH", "1")
        yield


def data(*shape: int, seed: int) -> Tensor:
    """A tensor of random values on the CPU (a new buffer each time)."""
    return Tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32),
                  device="CPU")


def graphs(jit: TinyJit) -> list[DeviceGraph]:
    return [step for step in jit.steps if isinstance(step, DeviceGraph)]


# --- render_graph: the CPU graph's C function ---
def test_render_graph_calls_each_kernel_in_order_with_its_own_arguments() -> None:
    """Kernel i is fn[i], called with its buffers: the arguments of all kernels follow one
    another in arg (two buffers for kernel 0: arg[0], arg[1]; three for kernel 1: arg[2] to
    arg[4]), each cast to a function of that many void pointers."""
    source = render_graph([2, 3, 1])
    calls = re.findall(r"fn\[(\d+)\]\)\(([^)]*)\);", source)
    expect_equal(np.array([int(i) for i, _ in calls]), np.array([0, 1, 2]),
                 what="the kernels render_graph calls, in order (fn[i])")
    args = [[a.strip() for a in call.split(",")] for _, call in calls]
    assert args == [["arg[0]", "arg[1]"], ["arg[2]", "arg[3]", "arg[4]"], ["arg[5]"]], \
        f"each kernel gets its own arguments from arg, in turn; got {args}"
    assert "void tf_graph(void **fn, void **arg)" in source, \
        "the graph's function is `void tf_graph(void **fn, void **arg)`"
    assert "(void (*)(void *, void *, void *))fn[1]" in source, \
        "fn[1] is cast to a function of three void pointers before the call"


def test_the_rendered_graph_computes_a_jitted_function() -> None:
    """Your render_graph's source, compiled, runs a jitted function's kernels: every replay
    returns the function's result for its input."""
    w = data(6, 4, seed=1).realize()
    jit = TinyJit(lambda x: ((x @ w).relu().sum(1) + x.max(1)).exp())
    for i in range(5):
        x = data(3, 6, seed=10 + i)
        got = jit(x)
        want = np.exp(np.maximum(x.numpy() @ w.numpy(), 0).sum(1) + x.numpy().max(1))
        expect_close(got, want, rtol=1e-5, what=f"the result of call {i + 1}")
    assert [type(g) for g in graphs(jit)] == [CPUGraph], \
        f"the replay runs one CPU graph; its steps are {jit.steps}"


# --- DeviceGraph.__call__: bind what changed, launch once ---
class Spy(DeviceGraph):
    """A graph that records its binds and launches."""

    def __init__(self, kernels: int, variable: set[Any], buffers: list[list[Any]]):
        from tinyfw.device import Device
        from tinyfw.runtime.graph import GraphKernel
        super().__init__(Device["CPU"], [GraphKernel(None, None, b) for b in buffers][:kernels],
                         variable)
        self.binds: list[tuple[int, int, Any]] = []
        self.launches = 0

    def bind(self, kernel: int, argument: int, buf: Any) -> None:
        self.binds.append((kernel, argument, buf))

    def launch(self) -> None:
        self.launches += 1


def test_a_call_binds_each_new_buffer_everywhere_it_is_used_then_launches_once() -> None:
    """swap maps a captured buffer to this call's: every place the captured one is an
    argument gets the new one (kernel, argument, buffer), then one launch."""
    x, mid, out, w = "x", "mid", "out", "w"
    graph = Spy(2, {x, out}, [[mid, x, w], [out, mid, x]])
    graph({x: "x2", out: "out2"})
    assert sorted(graph.binds) == [(0, 1, "x2"), (1, 0, "out2"), (1, 2, "x2")], \
        f"binds made: {graph.binds}"
    assert graph.launches == 1, f"a call launches once, not {graph.launches} times"


def test_a_buffer_bound_already_is_not_bound_again() -> None:
    """Binding costs (a kernel argument set, a bind group made): a variable buffer whose
    swap is the one bound now is left alone, and one not in swap is the captured one."""
    x, out = "x", "out"
    graph = Spy(1, {x, out}, [[out, x]])
    graph({x: "x2", out: "out2"})
    graph.binds.clear()
    graph({x: "x2", out: "out3"})
    assert graph.binds == [(0, 0, "out3")], f"binds made by the second call: {graph.binds}"
    graph.binds.clear()
    graph({out: "out3"})
    assert graph.binds == [(0, 1, "x")], \
        f"x not in swap: the captured x is bound again; binds made: {graph.binds}"
    assert graph.launches == 3


def test_a_replay_is_one_call_into_c(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay of a CPU graph makes one ctypes call (the graph's), however many kernels."""
    jit = TinyJit(lambda x: ((x * 2).sum(0) + 1).exp() * (x - 1).max(0))
    for i in range(3):
        jit(data(5, 4, seed=i))
    calls = []
    original = graph_cpu.CPUProgram.call

    def counted(self: Any, *args: Any) -> None:
        calls.append(self.name)
        original(self, *args)

    monkeypatch.setattr(graph_cpu.CPUProgram, "call", counted)
    x = data(5, 4, seed=9)
    got = jit(x)
    assert calls == ["tf_graph"], f"the replay called {calls}"
    xs = x.numpy()
    expect_close(got, np.exp(xs.sum(0) * 2 + 1) * (xs - 1).max(0), rtol=1e-5,
                 what="the result of the replay")
    assert realize is not None
