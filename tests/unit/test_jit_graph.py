"""Graph execution: a TinyJit's captured kernels replayed as one device graph per run of kernels
(tinyfw/engine/graph.py, tinyfw/runtime/graph*.py), on every device that has one. Each replay
must equal the kernel-by-kernel replay (JIT_GRAPH=0) bit for bit."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from tinyfw import Tensor, nn
from tinyfw.probe import probe
from tinyfw.renderer.base import workgroup_of
from tinyfw.engine import program, realize
from tinyfw.jit.jit import JitError, TinyJit
from tinyfw.nn import optim
from tinyfw.runtime import c_library, ops_cpu
from tinyfw.runtime.graph import DeviceGraph
from tinyfw.runtime.graph_cpu import render_graph

DEVICES = ["CPU", "CL", "WEBGPU", "CUDAEMU", "CUDA"]  # (CUDA: scripts/test_cuda.sh, on a GPU)
RNG = np.random.default_rng(7)


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each device that has a graph class, made the default device for the test."""
    if not probe(request.param)[0]:
        pytest.skip(f"not graded here: no {request.param}")
    monkeypatch.setenv("DEVICE", request.param)
    return str(request.param)


def graphs(jit: TinyJit) -> list[DeviceGraph]:
    return [step for step in jit.steps if isinstance(step, DeviceGraph)]


def mlp_steps(device: str, steps: int) -> tuple[list[float], list[np.ndarray], TinyJit]:
    """An MNIST-shaped MLP trained with Adam for `steps` jitted steps: the losses, the final
    parameters and the TinyJit."""
    Tensor.manual_seed(0)
    l1, l2 = nn.Linear(64, 32), nn.Linear(32, 10)
    params = nn.state.get_parameters([l1, l2])
    opt = optim.Adam(params, lr=1e-2)

    def step(x: Tensor, y: Tensor) -> Tensor:
        Tensor.training = True
        opt.zero_grad()
        loss = l2(l1(x).relu().dropout(0.1)).sparse_categorical_crossentropy(y).backward()
        opt.step()
        Tensor.training = False
        return loss

    jit = TinyJit(step)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(steps):
        x = Tensor(rng.standard_normal((16, 64)).astype(np.float32), device=device)
        y = Tensor(rng.integers(0, 10, 16).astype(np.int32), device=device)
        losses.append(jit(x, y).item())
    return losses, [p.numpy() for p in params], jit


def test_a_training_step_replays_as_graphs_bit_for_bit(device: str) -> None:
    """Adam on an MLP with dropout: losses and parameters after 6 steps equal the replay of
    the kernels one by one; the capture made a graph of the step's kernels."""
    losses, params, jit = mlp_steps(device, 6)
    assert graphs(jit), f"no graph was made on {device}: {jit.steps}"
    kernels = sum(len(g) for g in graphs(jit))
    assert kernels >= len(jit.jit_cache) - 4, \
        f"only {kernels} of {len(jit.jit_cache)} launches are in graphs: {jit.steps}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JIT_GRAPH", "0")
        slow_losses, slow_params, slow_jit = mlp_steps(device, 6)
    assert slow_jit.steps == []
    assert losses == slow_losses
    for p, q in zip(params, slow_params):
        np.testing.assert_array_equal(p, q)


def test_inputs_and_outputs_are_new_buffers_each_replay(device: str) -> None:
    """Each replay reads the new inputs and writes new outputs; a result kept from an earlier
    call keeps its value."""
    w = Tensor(RNG.standard_normal((8, 5)).astype(np.float32), device=device).realize()
    jit = TinyJit(lambda x, y: ((x @ w).relu() + y).sum(1) * 2)
    xs = [RNG.standard_normal((3, 8)).astype(np.float32) for _ in range(6)]
    ys = [RNG.standard_normal((3, 5)).astype(np.float32) for _ in range(6)]
    outs = [jit(Tensor(x, device=device), Tensor(y, device=device)) for x, y in zip(xs, ys)]
    assert graphs(jit), f"no graph on {device}"
    for x, y, out in zip(xs, ys, outs):
        np.testing.assert_allclose(out.numpy(), ((np.maximum(x @ w.numpy(), 0) + y).sum(1)) * 2,
                                   rtol=1e-5, atol=1e-5)


def test_an_output_fed_back_as_the_input(device: str) -> None:
    """h = step(h): the graph reads the buffer the last replay wrote."""
    jit = TinyJit(lambda h: (h * 0.5 + 1).exp().log() + 1)
    h = Tensor(np.zeros(7, np.float32), device=device)
    want = np.zeros(7, np.float32)
    for _ in range(6):
        h = jit(h)
        want = np.log(np.exp(want * 0.5 + 1)) + 1
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-6)


def test_group_reduces_in_a_graph(device: str) -> None:
    """Chapter 11's work-group kernels (a reduce of few rows, long ones: GROUP on a GPU
    device) launch with their exact work-groups from a graph too."""
    jit = TinyJit(lambda x: (x.sum(1) * 2).exp().sum() + x.max())
    for _ in range(4):
        x = RNG.standard_normal((4, 4096)).astype(np.float32) / 64
        got = jit(Tensor(x, device=device)).numpy()
        np.testing.assert_allclose(got, np.exp(x.sum(1) * 2).sum() + x.max(), rtol=1e-5)
    grouped = [workgroup_of(k.program) for g in graphs(jit) for k in g.kernels]
    assert grouped and (device == "CPU" or any(grouped)), \
        f"no work-group kernel in the graphs on {device}"


def test_a_deferred_check_still_raises(device: str) -> None:
    """A label out of range (a check computed by the captured kernels, read after each
    replay) raises after a graph replay as after a launch-by-launch one."""
    jit = TinyJit(lambda x, y: x.sparse_categorical_crossentropy(y))
    x = Tensor(RNG.standard_normal((4, 3)).astype(np.float32), device=device)
    for _ in range(3):
        jit(x, Tensor(np.array([0, 1, 2, 1], np.int32), device=device))
    assert graphs(jit)
    with pytest.raises(IndexError):
        jit(x, Tensor(np.array([0, 1, 3, 1], np.int32), device=device))


def test_jit_graph_0_turns_graphs_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JIT_GRAPH", "0")
    jit = TinyJit(lambda x: (x + 1).sum() * 2)
    for i in range(3):
        assert jit(Tensor(np.full(4, float(i), np.float32))).item() == (i + 1) * 8
    assert jit.steps == [] and len(jit.jit_cache) >= 1


def test_numpy_has_no_graph() -> None:
    """NUMPY interprets each kernel: its launches stay one by one."""
    jit = TinyJit(lambda x: ((x + 1) * 2).sum(0).exp())
    for i in range(3):
        out = jit(Tensor(np.full((3, 2), float(i), np.float32), device="NUMPY"))
    np.testing.assert_allclose(out.numpy(), np.exp(np.full(2, 18.0, np.float32)), rtol=1e-6)
    assert jit.steps == []


def test_a_graph_keeps_its_kernels_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU keeps only so many kernel libraries loaded; a graph calls its kernels by
    address, so it holds them loaded however many others are loaded meanwhile."""
    monkeypatch.setattr(c_library, "MAX_LOADED_LIBRARIES", 1)
    jit = TinyJit(lambda x: (x * 3).sum(0) + (x - 1).max(0))
    x = Tensor(RNG.standard_normal((5, 3)).astype(np.float32))
    for _ in range(3):
        jit(x)
    for i in range(3):  # other kernels, loaded one after another
        (Tensor(np.full(9, float(i), np.float32)) * (i + 7)).realize()
    graph = graphs(jit)[0]
    assert all(k.program.loaded for k in graph.kernels)
    np.testing.assert_allclose(jit(x).numpy(), x.numpy().__mul__(3).sum(0) +
                               (x.numpy() - 1).max(0), rtol=1e-6)


def test_a_threaded_kernel_runs_in_the_graph() -> None:
    """A kernel split across the cores (chapter 11's THREAD) is one of the graph's, called
    through the CPU workers (tf_parts_<n>); the values are right at every replay."""
    if ops_cpu.cores() < 2:
        pytest.skip("not graded here: one core (THREAD needs two)")
    x = RNG.standard_normal((1024, 1536)).astype(np.float32)
    jit = TinyJit(lambda a: (((a * 2 + 1).relu() * a).sum(1) / 1000).softmax() + a.max())
    outs = [jit(Tensor(x + i)).numpy() for i in range(4)]
    assert all(isinstance(step, DeviceGraph) for step in jit.steps), jit.steps
    assert any(k.program.threaded for g in graphs(jit) for k in g.kernels), \
        f"no THREADed kernel in the graphs: {jit.steps}"
    for i, out in enumerate(outs):
        sums = (np.maximum((x + i) * 2 + 1, 0) * (x + i)).astype(np.float64).sum(1) / 1000
        want = np.exp(sums - sums.max()) / np.exp(sums - sums.max()).sum() + (x + i).max()
        np.testing.assert_allclose(out, want, rtol=1e-4)


def test_render_graph_calls_each_kernel_with_its_arguments() -> None:
    source = render_graph([2, 3, 1])
    assert "((void (*)(void *, void *))fn[0])(arg[0], arg[1]);" in source
    assert "((void (*)(void *, void *, void *))fn[1])(arg[2], arg[3], arg[4]);" in source
    assert "((void (*)(void *))fn[2])(arg[5]);" in source


def test_replays_still_check_their_inputs() -> None:
    """The checks of a call come before the graph: a new shape is refused."""
    jit = TinyJit(lambda x: (x * 2).sum())
    for _ in range(3):
        jit(Tensor(np.ones(4, np.float32)))
    with pytest.raises(JitError):
        jit(Tensor(np.ones(5, np.float32)))
    assert realize is not None


def test_a_graph_released_while_a_library_loads_does_not_hang() -> None:
    """A device graph's finalizer can run while its thread holds the loaded-library lock (the
    garbage collector runs in the middle of a load): its unhold takes the lock again, which
    must not wait for itself."""
    out = Tensor(np.arange(6, dtype=np.float32), device="CPU") * 3 + 1
    runner = program.get_program(out.schedule()[-1]).runner

    def finalizer_inside_a_load() -> None:
        with c_library._lock:  # (as _acquire holds it while it loads a library)
            runner.hold()
            runner.unhold()  # (what graph_cpu's finalizer does)

    worker = threading.Thread(target=finalizer_inside_a_load, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "the lock waited for itself"
