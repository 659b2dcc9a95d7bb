"""SGD: each option (momentum, Nesterov, weight decay) moves the parameters, and keeps the
momentum buffers, exactly as torch.optim.SGD does, step after step, in one schedule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from chapters.grading import expect_close
from tinyfw import Tensor
from tinyfw.engine import realize
from tinyfw.nn import optim

pytestmark = pytest.mark.task("10.sgd")

SHAPES = [(3, 4), (5,), (), (2, 1, 3)]  # a matrix, a vector, a scalar, a 3-d tensor

CASES = [
    {"lr": 0.1},
    {"lr": 0.1, "weight_decay": 0.05},
    {"lr": 0.05, "momentum": 0.9},
    {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01},
    {"lr": 0.05, "momentum": 0.8, "nesterov": True},
    {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1},
]


def named(kw: dict[str, Any]) -> str:
    """SGD(lr=0.1, momentum=0.9)."""
    return "SGD(" + ", ".join(f"{k}={v}" for k, v in kw.items()) + ")"


def expect_like_torch(opt: optim.SGD, ref: torch.optim.SGD, ours: list[Tensor],
                      theirs: list[torch.Tensor], what: str) -> None:
    """Every parameter, and its momentum buffer if there is one, as torch's."""
    __tracebackhide__ = True
    for i, (p, t) in enumerate(zip(ours, theirs)):
        expect_close(p, t.detach().numpy(), rtol=1e-5, atol=1e-6, dtype=np.float32,
                     what=f"{what}: parameter {i} (shape {p.shape})")
        if opt.momentum:
            expect_close(opt.b[i], ref.state[t]["momentum_buffer"].numpy(), rtol=1e-5, atol=1e-6,
                         what=f"{what}: momentum buffer self.b[{i}] of parameter {i}")


@pytest.mark.parametrize("kw", CASES, ids=[named(kw) for kw in CASES])
def test_steps_match_torch(kw: dict[str, Any]) -> None:
    """Six steps with the same parameters and gradients as torch: the same values after each."""
    rng = np.random.default_rng(0)
    start = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    ours = [Tensor(a, requires_grad=True) for a in start]
    theirs = [torch.tensor(a, requires_grad=True) for a in start]
    opt, ref = optim.SGD(ours, **kw), torch.optim.SGD(theirs, **kw)
    for step in range(6):
        for p, t in zip(ours, theirs):
            g = rng.standard_normal(p.shape).astype(np.float32) * 2
            p.grad, t.grad = Tensor(g), torch.tensor(g)
        opt.step()
        ref.step()
        expect_like_torch(opt, ref, ours, theirs, f"{named(kw)} after step {step + 1}")


def test_one_step_by_hand() -> None:
    """The numbers of one step, small enough to check by hand: momentum 0.5, weight decay 0.1,
    lr 0.1, parameter 2, gradient 1. The gradient becomes 1 + 0.1 * 2 = 1.2; the first
    velocity is 1.2; Nesterov moves by 1.2 + 0.5 * 1.2 = 1.8."""
    for nesterov, expected in [(False, 2 - 0.1 * 1.2), (True, 2 - 0.1 * 1.8)]:
        p = Tensor([2.0], requires_grad=True)
        opt = optim.SGD([p], lr=0.1, momentum=0.5, weight_decay=0.1, nesterov=nesterov)
        p.grad = Tensor([1.0])
        opt.step()
        expect_close(p, np.array([expected], np.float32),
                     what=f"parameter after one step (nesterov={nesterov})")
        expect_close(opt.b[0], np.array([1.2], np.float32),
                     what=f"velocity self.b[0] after one step (nesterov={nesterov})")


@pytest.mark.parametrize("momentum", [0.0, 0.9], ids=["plain", "momentum"])
def test_learning_rate_can_be_a_tensor(momentum: float) -> None:
    """lr is a float or a 0-d Tensor that a schedule may assign between steps."""
    start = np.linspace(-1, 1, 6, dtype=np.float32)
    p, t = Tensor(start, requires_grad=True), torch.tensor(start, requires_grad=True)
    opt = optim.SGD([p], lr=Tensor(0.1), momentum=momentum)
    ref = torch.optim.SGD([t], lr=0.1, momentum=momentum)
    for step, lr in enumerate([0.1, 0.1, 0.03, 0.01]):
        opt.lr.assign(Tensor(lr))
        ref.param_groups[0]["lr"] = lr
        g = np.cos(start * (step + 1)).astype(np.float32)
        p.grad, t.grad = Tensor(g), torch.tensor(g)
        opt.step()
        ref.step()
        expect_like_torch(opt, ref, [p], [t], f"SGD(lr=Tensor, momentum={momentum}) after "
                                              f"step {step + 1} with lr {lr}")


def test_a_step_is_one_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    """_update builds lazy tensors and assigns the velocity lazily, computing nothing: the
    whole step (every parameter and every velocity) then runs as one schedule, and leaves
    each of them holding a buffer (no graph that grows from step to step). The velocities stay
    the same tensors, assigned, not replaced."""
    params = [Tensor.randn(4, 3, requires_grad=True), Tensor.randn(3, requires_grad=True)]
    opt = optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)
    runs: list[int] = []
    original = realize.run_schedule

    def counting(items: list) -> None:
        if items:
            runs.append(len(items))
        original(items)

    velocities = list(opt.b)
    for step in range(2):
        runs.clear()
        loss = ((params[0] @ params[1]) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        Tensor.realize_all(*[p.grad for p in params])
        monkeypatch.setattr(realize, "run_schedule", counting)
        opt.step()
        monkeypatch.setattr(realize, "run_schedule", original)
        assert len(runs) == 1, (
            f"step {step + 1} ran {len(runs)} schedules, expected 1: don't compute anything "
            "in _update (no .numpy(), .item() or .realize()); build lazy tensors")
        assert all(b is before for b, before in zip(opt.b, velocities)), \
            "self.b[i] is a new tensor after the step: update it with self.b[i].assign(...), " \
            "so that it stays the same tensor (the JIT of chapter 09 follows state by tensor)"
        for name, t in [("parameter 0", params[0]), ("parameter 1", params[1]),
                        ("self.b[0]", opt.b[0]), ("self.b[1]", opt.b[1])]:
            assert realize.is_buffer_view(t.uop), \
                f"after step {step + 1}, {name} is not realized: assign it (b.assign(...))"


def test_training_with_backward_matches_torch() -> None:
    """A real loop on a small MLP (forward, zero_grad, backward, step): the loss and the
    parameters follow torch's, with momentum and weight decay."""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((8, 3)).astype(np.float32), rng.integers(0, 2, 8)
    start = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in [(3, 5), (5,), (5, 2)]]
    ours = [Tensor(a, requires_grad=True) for a in start]
    theirs = [torch.tensor(a, requires_grad=True) for a in start]
    kw = {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}
    opt, ref = optim.SGD(ours, **kw), torch.optim.SGD(theirs, **kw)
    for step in range(4):
        w1, b1, w2 = ours
        loss = ((Tensor(x) @ w1 + b1).relu() @ w2).cross_entropy(Tensor(y.astype(np.int32)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        tw1, tb1, tw2 = theirs
        t_loss = torch.nn.functional.cross_entropy((torch.tensor(x) @ tw1 + tb1).relu() @ tw2,
                                                   torch.tensor(y))
        ref.zero_grad()
        t_loss.backward()
        ref.step()
        expect_close(loss, t_loss.detach().numpy(), rtol=1e-5, atol=1e-6,
                     what=f"loss at step {step + 1}")
        expect_like_torch(opt, ref, ours, theirs, f"{named(kw)} after step {step + 1}")
