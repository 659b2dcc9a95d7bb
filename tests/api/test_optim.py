"""tinyfw.nn.optim: each optimizer moves parameters exactly as torch.optim does, in one schedule."""
from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
import torch

from tinyfw import Tensor, dtypes
from tinyfw.engine import realize
from tinyfw.nn.datasets import make_moons
from tinyfw.nn import optim
from tinyfw.progress import format_time, tqdm, trange

SHAPES = [(3, 4), (5,), (), (2, 1, 3)]  # a matrix, a vector, a scalar, a 3-d tensor


def torch_optimizer(name: str, params: list[torch.Tensor], kw: dict[str, Any]) -> Any:
    """The torch.optim twin of optim.<name>(**kw) (tinygrad's b1, b2 are torch's betas)."""
    kw = dict(kw)
    if "b1" in kw or "b2" in kw:
        kw["betas"] = (kw.pop("b1", 0.9), kw.pop("b2", 0.999))
    return getattr(torch.optim, name)(params, **kw)


CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "weight_decay": 0.05}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.02, "b1": 0.8, "b2": 0.99, "eps": 1e-6}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.2}),
    ("AdamW", {"lr": 0.02, "b1": 0.5, "b2": 0.9, "eps": 1e-4, "weight_decay": 0.05}),
]


def assert_params_close(ours: list[Tensor], theirs: list[torch.Tensor], what: str) -> None:
    __tracebackhide__ = True
    for i, (p, t) in enumerate(zip(ours, theirs)):
        assert p.shape == tuple(t.shape) and p.dtype == dtypes.float32, f"{what}, param {i}"
        # Adam's bias correction is float32 here, float64 in torch: a few 1e-7 per step
        np.testing.assert_allclose(p.numpy(), t.detach().numpy(), atol=1e-6, rtol=1e-5,
                                   err_msg=f"{what}, param {i}")


@pytest.mark.parametrize("name, kw", CASES, ids=[f"{n}-{kw}" for n, kw in CASES])
def test_steps_match_torch(name: str, kw: dict[str, Any]) -> None:
    """Six steps on the same parameters and gradients give torch's values after every step."""
    rng = np.random.default_rng(0)
    start = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    ours = [Tensor(a, requires_grad=True) for a in start]
    theirs = [torch.tensor(a, requires_grad=True) for a in start]
    opt, ref = getattr(optim, name)(ours, **kw), torch_optimizer(name, theirs, kw)
    for step in range(6):
        for p, t in zip(ours, theirs):
            g = rng.standard_normal(p.shape).astype(np.float32) * 2
            p.grad, t.grad = Tensor(g), torch.tensor(g)
        opt.step()
        ref.step()
        assert_params_close(ours, theirs, f"{name}{kw} after step {step + 1}")


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_training_with_backward_matches_torch(name: str) -> None:
    """A real loop: forward, zero_grad, backward, step, on a small MLP, as in torch."""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((8, 3)).astype(np.float32), rng.integers(0, 2, 8)
    start = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in [(3, 5), (5,), (5, 2)]]
    ours = [Tensor(a, requires_grad=True) for a in start]
    theirs = [torch.tensor(a, requires_grad=True) for a in start]
    kw = {"lr": 0.05, "momentum": 0.9} if name == "SGD" else {"lr": 0.01}
    opt, ref = getattr(optim, name)(ours, **kw), torch_optimizer(name, theirs, kw)
    for step in range(4):
        w1, b1, w2 = ours
        loss = ((Tensor(x) @ w1 + b1).relu() @ w2).cross_entropy(Tensor(y.astype(np.int32)))
        opt.zero_grad()
        assert all(p.grad is None for p in ours)
        loss.backward()
        opt.step()
        tw1, tb1, tw2 = theirs
        t_loss = torch.nn.functional.cross_entropy((torch.tensor(x) @ tw1 + tb1).relu() @ tw2,
                                                   torch.tensor(y))
        ref.zero_grad()
        t_loss.backward()
        ref.step()
        assert loss.item() == pytest.approx(t_loss.item(), rel=1e-5, abs=1e-6)
        assert_params_close(ours, theirs, f"{name} after step {step + 1}")


@pytest.mark.parametrize("as_tensor", [False, True], ids=["float", "tensor"])
def test_learning_rate_can_change(as_tensor: bool) -> None:
    """lr is a float or a 0-d Tensor, and may change between steps (a schedule)."""
    start = np.linspace(-1, 1, 6, dtype=np.float32)
    p, t = Tensor(start, requires_grad=True), torch.tensor(start, requires_grad=True)
    opt = optim.Adam([p], lr=Tensor(0.01) if as_tensor else 0.01)
    ref = torch.optim.Adam([t], lr=0.01)
    for step, lr in enumerate([0.01, 0.01, 0.003, 0.001]):
        if as_tensor:
            opt.lr.assign(Tensor(lr))
        else:
            opt.lr = lr
        ref.param_groups[0]["lr"] = lr
        g = np.cos(start * (step + 1)).astype(np.float32)
        p.grad, t.grad = Tensor(g), torch.tensor(g)
        opt.step()
        ref.step()
        assert_params_close([p], [t], f"step {step + 1}, lr {lr}")


def test_a_step_is_one_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    """step assigns everything lazily and realizes it with one schedule: parameters, momentum
    buffers and step count all hold buffers afterwards."""
    params = [Tensor.randn(4, 3, requires_grad=True), Tensor.randn(3, requires_grad=True)]
    runs: list[int] = []
    original = realize.run_schedule

    def counting(items: list) -> None:
        if items:
            runs.append(len(items))
        original(items)

    for opt in (optim.SGD(params, lr=0.1, momentum=0.9), optim.AdamW(params, lr=0.1)):
        loss = ((params[0] @ params[1]) ** 2).sum()
        loss.backward()
        monkeypatch.setattr(realize, "run_schedule", counting)
        opt.step()
        monkeypatch.setattr(realize, "run_schedule", original)
        assert len(runs) == 1, f"{type(opt).__name__}.step ran {len(runs)} schedules"
        for t in opt._state() + params:  # all realized by that one schedule
            assert realize.is_buffer_view(t.uop)
        runs.clear()
        opt.zero_grad()


def test_state_is_tensors() -> None:
    """Momentum buffers, moments and the step count are tinyfw Tensors, and hold torch's
    values (Adam's step count counts steps)."""
    p = Tensor([1.0, -2.0], requires_grad=True)
    sgd, adam = optim.SGD([p], lr=0.1, momentum=0.5), optim.Adam([p])
    assert optim.SGD([p]).b == [] and sgd._state() == sgd.b
    for _ in range(3):
        p.grad = Tensor([0.5, 1.0])
        sgd.step()
        p.grad = Tensor([0.5, 1.0])
        adam.step()
    assert all(isinstance(t, Tensor) for t in sgd.b + adam.m + adam.v + [adam.t])
    np.testing.assert_allclose(sgd.b[0].numpy(), np.array([0.5, 1.0]) * (1 + 0.5 + 0.25))
    assert adam.t.item() == 3 and adam.t.dtype == dtypes.int32


def test_buffers_are_realized_with_the_step() -> None:
    """A tensor with requires_grad=False (a running statistic) is kept, not moved, and
    realized by the step, as tinygrad does."""
    w = Tensor([1.0, 2.0], requires_grad=True)
    running = Tensor([0.0, 0.0], requires_grad=False)
    opt = optim.SGD([w, running], lr=0.5)
    assert opt.params == [w] and opt.buffers == [running]
    running.assign(running * 0.9 + 1.0)  # what BatchNorm does in training, lazily
    w.grad = Tensor([1.0, 1.0])
    opt.step()
    assert realize.is_buffer_view(running.uop)
    np.testing.assert_allclose(running.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(w.numpy(), [0.5, 1.5])


def test_tensors_never_marked_become_parameters() -> None:
    """As in tinygrad: a float tensor whose requires_grad was never set (None) given to an
    optimizer becomes a parameter; one set to False stays a buffer."""
    w, frozen = Tensor.kaiming_uniform(3, 2), Tensor([1.0], requires_grad=False)
    assert w.requires_grad is None
    opt = optim.Adam([w, frozen])
    assert w.requires_grad is True and opt.params == [w] and opt.buffers == [frozen]


def test_duplicates_are_stepped_once() -> None:
    w = Tensor([1.0], requires_grad=True)
    opt = optim.SGD([w, w], lr=1.0)
    w.grad = Tensor([1.0])
    opt.step()
    assert len(opt.params) == 1 and w.item() == 0.0


def test_float64_parameters() -> None:
    """A float64 parameter stays float64 and moves as in torch."""
    start = np.array([0.5, -1.5, 2.0])
    p, t = Tensor(start, requires_grad=True), torch.tensor(start, requires_grad=True)
    opt, ref = optim.SGD([p], lr=0.1, momentum=0.9), torch.optim.SGD([t], lr=0.1, momentum=0.9)
    for _ in range(3):
        p.grad, t.grad = Tensor(start * 3), torch.tensor(start * 3)
        opt.step()
        ref.step()
    assert p.dtype == dtypes.float64
    np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=1e-12)


def test_errors() -> None:
    """Clear errors for what can't be optimized or stepped."""
    w = Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.SGD(w)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="item 1 is a ndarray"):
        optim.SGD([w, np.ones(2)])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="requires grad"):
        optim.Adam([Tensor([1.0], requires_grad=False), Tensor([2.0], requires_grad=False)])
    with pytest.raises(ValueError, match="requires grad"):
        optim.Adam([])
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([w * 2])
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.SGD([w], lr=-0.1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum"):
        optim.SGD([w], nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter b2"):
        optim.AdamW([w], b2=1.0)
    v = Tensor([3.0], requires_grad=True)
    opt = optim.SGD([w, v], lr=0.1)
    w.grad = Tensor([1.0, 1.0])
    with pytest.raises(RuntimeError, match=r"parameter 1 \(shape \[1\]\) has no gradient"):
        opt.step()
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])  # nothing moved


def test_training_loop_with_a_progress_bar() -> None:
    """The whole loop: Adam fits the moons with a small MLP (loss falls by half), while trange
    draws its bar with the description on the stream it is given."""
    x, y = make_moons(64, noise=0.1, seed=0)
    X, Y = Tensor(x.astype(np.float32)), Tensor(y.astype(np.int32))
    Tensor.manual_seed(0)
    w1, b1 = Tensor.randn(2, 16, requires_grad=True), Tensor.zeros(16, requires_grad=True)
    w2, b2 = Tensor.randn(16, 2, requires_grad=True), Tensor.zeros(2, requires_grad=True)
    opt = optim.Adam([w1, b1, w2, b2], lr=0.05)
    out = io.StringIO()
    losses = []
    for _ in (t := trange(40, file=out, min_interval=0)):
        loss = ((X @ w1 + b1).relu() @ w2 + b2).cross_entropy(Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        t.set_description(f"loss {losses[-1]:.3f}")
    assert losses[-1] < losses[0] / 2, losses
    text = out.getvalue()
    assert text.endswith("\n") and "40/40" in text and "100%" in text
    assert f"loss {losses[-1]:.3f}" in text.split("\r")[-1]


def test_progress_bar_text() -> None:
    """The bar's line: percentage, count, times; and a plain count when there is no total."""
    bar = tqdm(total=8, desc="train", file=io.StringIO(), width=8)
    bar.update(2)
    line = bar.render(bar.start + 1.0)
    assert line.startswith("train   25%|██      | 2/8 [00:01<00:03, 2.00 it/s]"), line
    counter = tqdm(file=io.StringIO(), unit="batch")
    counter.update(3)
    assert counter.render(counter.start + 2.0) == "3 batch [00:02, 1.50 batch/s]"
    assert format_time(3725) == "1:02:05" and format_time(65) == "01:05"
    quiet = io.StringIO()
    assert list(tqdm([1, 2, 3], file=quiet, disable=True)) == [1, 2, 3]
    assert quiet.getvalue() == ""
