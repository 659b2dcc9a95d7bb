"""Chapter 13, many devices on one machine: indexed device names, sharded tensors, all-reduce."""
import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.device import Device


# --- indexed devices ---
def test_index_zero_is_the_plain_name():
    assert Device.canonicalize("cpu:0") == "CPU"
    assert Device.canonicalize("cpu:1") == "CPU:1"
    assert Device.canonicalize("NUMPY:02") == "NUMPY:2"
    with pytest.raises(RuntimeError, match="bad device index"):
        Device.canonicalize("CPU:x")


def test_indexed_devices_are_distinct():
    a = Tensor([1.0, 2.0, 3.0], device="CPU:1")
    assert a.device == "CPU:1" and (a * 2 + 1).device == "CPU:1"
    np.testing.assert_equal((a * 2 + 1).numpy(), [3, 5, 7])
    with pytest.raises(RuntimeError, match="same device"):
        a + Tensor([1.0, 2.0, 3.0])
    b = a.to("CPU")
    assert b.device == "CPU"
    np.testing.assert_equal((b + Tensor([1.0, 1.0, 1.0])).numpy(), [2, 3, 4])


def test_copies_between_kinds_and_indices():
    c = Tensor([1.0, 2.0], device="NUMPY:2")
    np.testing.assert_equal((c.to("CPU:1") * 3).to("NUMPY").numpy(), [3, 6])


# --- sharded tensors ---
from tinyfw.multi import (MultiError, all_reduce, axis_of, lowered, parts_of,  # noqa: E402
                          split_sizes)
from tinyfw.uop.ops import Ops  # noqa: E402

D2 = ("CPU", "CPU:1")
D3 = ("CPU", "CPU:1", "CPU:2")
X = np.arange(30, dtype=np.float32).reshape(5, 6) / 7


def test_split_sizes():
    assert split_sizes(10, 3) == [4, 3, 3] and split_sizes(4, 2) == [2, 2]
    with pytest.raises(MultiError, match="each needs a row"):
        split_sizes(2, 3)


@pytest.mark.parametrize("devices", [D2, D3])
def test_shard_shapes(devices):
    t = Tensor(X).shard(devices, axis=1)
    assert lowered(t.uop).op is Ops.MULTI and t.shape == (5, 6) and t.device == devices
    assert [p.shape for p in parts_of(t.uop)] == [(5, 6 // len(devices))] * len(devices)
    r = Tensor(X).to(devices)
    assert axis_of(r.uop) is None and [p.shape for p in parts_of(r.uop)] == [(5, 6)] * len(devices)
    np.testing.assert_equal(t.numpy(), X)
    np.testing.assert_equal(r.numpy(), X)
    np.testing.assert_equal(t.to("CPU").numpy(), X)
    uneven = Tensor(X).shard(devices, axis=0)
    assert sum(p.shape[0] for p in parts_of(uneven.uop)) == 5
    np.testing.assert_equal(uneven.numpy(), X)


@pytest.mark.parametrize("axis", [0, 1, None])
def test_per_shard_ops_match_numpy(axis):
    t, r = Tensor(X).shard(D2, axis=axis), Tensor(X).to(D2)
    close = np.testing.assert_allclose
    close((t * 2 + 1).exp().numpy(), np.exp(X * 2 + 1), rtol=1e-6)
    close((t + r).numpy(), X + X)
    close((t < 2).numpy(), X < 2)
    close(t.T.numpy(), X.T)
    close(t.sum(axis=0).numpy(), X.sum(axis=0), rtol=1e-6)
    close(t.sum(axis=1).numpy(), X.sum(axis=1), rtol=1e-6)
    close(t.max().numpy(), X.max())
    close(t.mean().numpy(), X.mean(), rtol=1e-6)
    close(t.abs().numpy(), X)
    close((-t).relu().numpy(), np.zeros_like(X))
    close(t.softmax(axis=1).numpy(), np.exp(X) / np.exp(X).sum(1, keepdims=True), rtol=1e-5)
    close((t @ Tensor(X.T).to(D2)).numpy(), X @ X.T, rtol=1e-5)
    close(t.reshape(5, 2, 3).numpy(), X.reshape(5, 2, 3))
    close(t.reshape(5, 1, 6).expand(5, 4, 6).numpy(), np.broadcast_to(X[:, None], (5, 4, 6)))


def test_reshape_follows_the_sharded_axis():
    t = Tensor(np.arange(24, dtype=np.float32).reshape(4, 6)).shard(D2, axis=0)
    assert axis_of(t.reshape(2, 2, 6).uop) == 0 and axis_of(t.reshape(24).uop) == 0
    np.testing.assert_equal(t.reshape(2, 12).numpy(), np.arange(24).reshape(2, 12))


def test_refusals_are_clear():
    """What the rewrite cannot run per device is refused (when the graph is realized: the
    Tensor builds its ops without asking where a value lives), never computed wrongly."""
    t = Tensor(X).shard(D2, axis=0)
    with pytest.raises(MultiError, match="different axes"):
        (t @ Tensor(W).shard(D2, axis=1)).realize()
    with pytest.raises(MultiError, match="touches the sharded axis"):
        t.pad(((1, 0), (0, 0))).realize()
    with pytest.raises(MultiError, match="touches the sharded axis"):
        t[1:3].numpy()
    with pytest.raises(MultiError, match="different axes"):
        (t + Tensor(X).shard(D2, axis=1)).realize()
    with pytest.raises(MultiError, match="would not fall on whole rows"):
        t.reshape(3, 10).realize()
    with pytest.raises(MultiError, match="gather it to one device"):
        t.to(("CPU:2", "CPU:3")).realize()
    with pytest.raises(RuntimeError, match="same device"):
        t + Tensor(X)
    with pytest.raises(RuntimeError, match="a device twice"):
        Tensor(X).shard(("CPU", "CPU:0"))


def test_assign_to_a_view_writes_through():
    """A view of a tensor over many devices is a graph like any: assign writes its base."""
    t = Tensor(X).shard(D2, axis=0)
    t[:, 1:].assign(Tensor(-X[:, 1:]).to(D2))
    want = X.copy()
    want[:, 1:] *= -1
    np.testing.assert_equal(t.numpy(), want)
    assert axis_of(t.uop) == 0


def test_mixed_kinds():
    t = Tensor(X).shard(("CPU", "NUMPY"), axis=0)
    assert parts_of(t.uop)[1].device == "NUMPY"
    np.testing.assert_allclose((t * 3).sum(axis=0).numpy(), (X * 3).sum(axis=0), rtol=1e-6)
    np.testing.assert_allclose((t.exp() + 1).to("NUMPY:1").numpy(), np.exp(X) + 1, rtol=1e-6)


@pytest.mark.parametrize("kind", ["naive", "ring"])
@pytest.mark.parametrize("devices", [D2, D3])
def test_all_reduce(kind, devices):
    values = [np.arange(7, dtype=np.float32) * (i + 1) for i in range(len(devices))]
    parts = [Tensor(v, device=d).uop for v, d in zip(values, devices)]
    out = all_reduce(Ops.ADD, parts, kind)
    for node, d in zip(out, devices):
        assert node.device == d
        np.testing.assert_equal(Tensor(node).numpy(), sum(values))
    top = all_reduce(Ops.MAX, parts, kind)
    np.testing.assert_equal(Tensor(top[-1]).numpy(), values[-1])


def test_sum_over_the_sharded_axis_is_an_all_reduce(monkeypatch):
    monkeypatch.setenv("ALLREDUCE", "ring")
    t = Tensor(X).shard(D3, axis=1)
    s = t.sum(axis=1)
    assert axis_of(s.uop) is None and s.device == D3
    copies = [n for n in lowered(s.uop).toposort() if n.op is Ops.COPY and n.shape != (5, 2)]
    assert len(copies) == 2 * 3 * 2, "ring: 2 (n - 1) chunk copies by each of n devices"
    np.testing.assert_allclose(s.numpy(), X.sum(axis=1), rtol=1e-6)


# --- gradients and optimizers ---
from tinyfw.jit.jit import TinyJit  # noqa: E402
from tinyfw.nn.optim import SGD, Adam  # noqa: E402

W = np.linspace(-1, 1, 12, dtype=np.float32).reshape(6, 2)


def _loss_and_grads(devices, w_axis=None):
    x, w = Tensor(X), Tensor(W, requires_grad=True)
    if devices:  # data parallel (batch sharded), or tensor parallel (w's columns sharded)
        x = x.shard(devices, axis=0) if w_axis is None else x.to(devices)
        w.shard_(devices, axis=w_axis)
    loss = (x @ w).relu().sum() * 0.5 + (x @ w).square().mean()
    loss.backward()
    return loss.numpy(), w.grad.numpy()


@pytest.mark.parametrize("devices,w_axis", [(D2, None), (D3, None), (D2, 1)])
def test_gradients_match_one_device(devices, w_axis):
    one, many = _loss_and_grads(None), _loss_and_grads(devices, w_axis)
    np.testing.assert_allclose(many[0], one[0], rtol=1e-5)
    np.testing.assert_allclose(many[1], one[1], rtol=1e-5)


def test_gradient_of_a_sharded_tensor():
    t = Tensor(X).shard(D2, axis=1)
    w = Tensor(X[::-1].copy()).shard(D2, axis=1)
    (g,) = (t * w).sum().gradient(w)
    assert g.device == D2
    np.testing.assert_allclose(g.numpy(), X)


@pytest.mark.parametrize("opt", [SGD, Adam])
def test_optimizers_update_replicated_parameters(opt):
    out = []
    for devices in (None, D2):
        x, w = Tensor(X), Tensor(W, requires_grad=True)
        if devices:
            x, _ = x.shard(devices, axis=0), w.shard_(devices)
        optim = opt([w], lr=0.05)
        for _ in range(3):
            optim.zero_grad()
            (x @ w).square().mean().backward()
            optim.step()
        out.append(w.numpy())
    np.testing.assert_allclose(out[1], out[0], rtol=1e-5, atol=1e-7)
    assert w.device == D2 and axis_of(w.uop) is None


def test_state_dict_gathers(tmp_path):
    from tinyfw.nn.state import get_state_dict, safe_load, safe_save

    class Model:
        def __init__(self):
            self.w = Tensor(W).shard(D2, axis=1)
            self.b = Tensor(np.ones(2, np.float32)).to(D2)
    state = get_state_dict(Model())
    safe_save(state, tmp_path / "m.safetensors")
    back = safe_load(tmp_path / "m.safetensors")
    np.testing.assert_equal(back["w"].numpy(), W)
    np.testing.assert_equal(back["b"].numpy(), np.ones(2))


# --- data parallel training ---
def _train(devices, steps=4, jit=False):
    from tinyfw import nn
    from tinyfw.nn.state import get_parameters
    Tensor.manual_seed(3)
    l1, l2 = nn.Linear(6, 8), nn.Linear(8, 3)
    params = get_parameters([l1, l2])
    if devices:
        for p in params:
            p.shard_(devices)
    opt = Adam(params, lr=0.01)

    def step(x, y):
        if devices:  # the batch comes in on one device and is sharded inside
            x, y = x.shard(devices, axis=0), y.shard(devices, axis=0)
        opt.zero_grad()
        loss = l2(l1(x).relu()).sparse_categorical_crossentropy(y).backward()
        Tensor.realize_all(loss, *opt.schedule_step())
        return loss.to("CPU")
    run = TinyJit(step) if jit else step
    rng = np.random.default_rng(0)
    for _ in range(steps):
        x = Tensor(rng.standard_normal((12, 6)).astype(np.float32))
        y = Tensor(rng.integers(0, 3, 12).astype(np.int32))
        run(x, y)
    return [p.numpy() for p in params], run


@pytest.mark.parametrize("devices", [D2, D3])
def test_data_parallel_steps_match_one_device(devices):
    for one, many in zip(_train(None)[0], _train(devices)[0]):
        np.testing.assert_allclose(many, one, rtol=1e-4, atol=1e-6)


def test_jit_captures_a_sharded_step():
    one, (many, jitted) = _train(None, steps=5)[0], _train(D2, steps=5, jit=True)
    assert jitted.cnt == 5 and any(launch.item.ast is None for launch in jitted.jit_cache)
    for a, b in zip(one, many):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


def test_jit_refuses_multi_arguments_and_results():
    from tinyfw.jit.jit import JitError
    with pytest.raises(JitError, match="over many devices"):
        TinyJit(lambda x: x * 2)(Tensor(X).to(D2))
    f = TinyJit(lambda x: (x.to(D2) * 2).realize())
    with pytest.raises(JitError, match="over many devices"):
        f(Tensor(X))


def test_mnist_example_data_parallel(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tinyfw.nn.state import safe_load
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    outs = []
    for name, extra in (("one", []), ("two", ["--devices", "CPU:0,CPU:1"])):
        path = tmp_path / f"{name}.safetensors"
        run = subprocess.run([sys.executable, "examples/mnist.py", "--epochs", "2", "--steps",
                              "5", "--save", str(path), *extra], cwd=root, env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        outs.append((safe_load(path), run.stdout))
    (one, out1), (two, out2) = outs
    assert "device CPU:0,CPU:1" in out2
    for name in one:
        np.testing.assert_allclose(two[name].numpy(), one[name].numpy(), rtol=1e-4, atol=1e-5)


def test_gradient_through_a_max_over_the_sharded_axis():
    data = np.random.default_rng(1).permutation(30).reshape(5, 6).astype(np.float32)
    x = Tensor(data, requires_grad=True)
    x.max(axis=0).sum().backward()
    y = Tensor(data, requires_grad=True)
    y.shard_(D3, axis=0)
    y.max(axis=0).sum().backward()
    assert y.grad.device == D3
    np.testing.assert_equal(y.grad.numpy(), x.grad.numpy())


def test_shard_like():
    like = Tensor(X).shard(D3, axis=1)
    t = Tensor(X * 2).shard_like(like)
    assert t.device == D3 and axis_of(t.uop) == 1
    np.testing.assert_equal((t + like).numpy(), X * 3)
    assert Tensor(X).shard_like(Tensor(X, device="CPU:1")).device == "CPU:1"


def test_a_leaf_reached_without_a_gradient_gets_zeros():
    w = Tensor(W, requires_grad=True)
    w.shard_(D2, axis=1)
    x = Tensor(X, requires_grad=True)
    x.shard_(D2)
    ((w > 0).float().sum() + x.sum()).backward()
    assert w.grad is not None and w.grad.device == D2
    np.testing.assert_equal(w.grad.numpy(), np.zeros_like(W))
    np.testing.assert_equal(x.grad.numpy(), np.ones_like(X))


@pytest.mark.parametrize("devices", [("CPU", "CL"), ("CL", "CL:1")])
def test_kinds_with_cl(devices):
    from tinyfw.probe import probe
    if not probe("CL")[0]:
        pytest.skip("no CL device here")
    t = Tensor(X).shard(devices, axis=0)
    w = Tensor(W, requires_grad=True)
    w.shard_(devices)
    (t @ w).relu().mean().backward()
    one = Tensor(W, requires_grad=True)
    (Tensor(X) @ one).relu().mean().backward()
    np.testing.assert_allclose(w.grad.numpy(), one.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_a_loss_of_sharded_logits_has_the_gradient_of_one_device() -> None:
    """Cross entropy picks each row's target log-probability with a gradient override: its
    logits (N, C) are cut like its values (N,), so each shard takes its own rows' gradient
    (the override raised MultiError for inputs of another shape; chapter 13's notebook)."""
    xs = np.random.default_rng(0).standard_normal((8, 10)).astype(np.float32)
    labels = [1, 2, 3, 4, 5, 6, 7, 8]
    x0 = Tensor(xs, requires_grad=True)
    loss = x0.shard(("CPU:0", "CPU:1"), axis=0).sparse_categorical_crossentropy(
        Tensor(labels).shard(("CPU:0", "CPU:1"), axis=0))
    loss.backward()
    x1 = Tensor(xs, requires_grad=True)
    want = x1.sparse_categorical_crossentropy(Tensor(labels))
    want.backward()
    np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-6)
    np.testing.assert_allclose(x0.grad.numpy(), x1.grad.numpy(), rtol=1e-6, atol=1e-7)
