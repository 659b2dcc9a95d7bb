"""Adam and AdamW: parameters and moment estimates as torch.optim.Adam and torch.optim.AdamW
keep them, step after step, in one schedule; and a small MLP learns the two moons with them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from chapters.grading import expect_close, expect_equal
from chapters.learner import reference
from tinyfw import Tensor, nn
from tinyfw.engine import realize
from tinyfw.nn.datasets import make_moons
from tinyfw.nn import optim
from tinyfw.nn.state import get_parameters

pytestmark = pytest.mark.task("10.adam")

SHAPES = [(3, 4), (5,), (), (2, 1, 3)]  # a matrix, a vector, a scalar, a 3-d tensor

CASES = [
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.02, "b1": 0.8, "b2": 0.99, "eps": 1e-6}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.2}),
    ("AdamW", {"lr": 0.02, "b1": 0.5, "b2": 0.9, "eps": 1e-4, "weight_decay": 0.05}),
]


def named(name: str, kw: dict[str, Any]) -> str:
    """Adam(lr=0.01, weight_decay=0.1)."""
    return f"{name}(" + ", ".join(f"{k}={v}" for k, v in kw.items()) + ")"


def torch_optimizer(name: str, params: list[torch.Tensor], kw: dict[str, Any]) -> Any:
    """The torch.optim twin (tinygrad's and tinyfw's b1, b2 are torch's betas)."""
    kw = dict(kw)
    if "b1" in kw or "b2" in kw:
        kw["betas"] = (kw.pop("b1", 0.9), kw.pop("b2", 0.999))
    return getattr(torch.optim, name)(params, **kw)


def expect_like_torch(opt: optim.Adam, ref: Any, ours: list[Tensor], theirs: list[torch.Tensor],
                      what: str) -> None:
    """Every parameter and its two moments as torch's (Adam's bias correction is float32 here,
    float64 in torch: a few 1e-7 apart after some steps)."""
    __tracebackhide__ = True
    for i, (p, t) in enumerate(zip(ours, theirs)):
        state = ref.state[t]
        expect_close(opt.m[i], state["exp_avg"].numpy(), rtol=1e-5, atol=1e-6,
                     what=f"{what}: first moment self.m[{i}] (torch's exp_avg)")
        expect_close(opt.v[i], state["exp_avg_sq"].numpy(), rtol=1e-5, atol=1e-6,
                     what=f"{what}: second moment self.v[{i}] (torch's exp_avg_sq)")
        expect_close(p, t.detach().numpy(), rtol=1e-5, atol=1e-6, dtype=np.float32,
                     what=f"{what}: parameter {i} (shape {p.shape})")


@pytest.mark.parametrize("name, kw", CASES, ids=[named(n, kw) for n, kw in CASES])
def test_steps_match_torch(name: str, kw: dict[str, Any]) -> None:
    """Six steps with the same parameters and gradients as torch: the same values after each."""
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
        expect_like_torch(opt, ref, ours, theirs, f"{named(name, kw)} after step {step + 1}")
        expect_equal(opt.t, step + 1, what="the step count self.t", dtype=np.int32)


def test_first_step_moves_by_lr() -> None:
    """Bias correction makes the first step lr * g / (|g| + eps): about lr in the direction
    against the gradient, whatever the gradient's size."""
    p = Tensor([1.0, 1.0, 1.0, 1.0], requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    p.grad = Tensor([1e-3, -5.0, 200.0, -0.5])
    opt.step()
    expect_close(p, np.array([0.9, 1.1, 0.9, 1.1], np.float32), rtol=1e-5, atol=1e-5,
                 what="Adam(lr=0.1): parameters of 1 after one step with gradient "
                      "[1e-3, -5, 200, -0.5]")


def test_adamw_decays_apart_from_the_gradient() -> None:
    """With a zero gradient, Adam's L2 decay still moves the weights through m and v (a step
    of about lr), where AdamW's decoupled decay shrinks them by lr * weight_decay alone."""
    results = {}
    for name in ("Adam", "AdamW"):
        p = Tensor([2.0, -4.0], requires_grad=True)
        opt = getattr(optim, name)([p], lr=0.1, weight_decay=0.5)
        p.grad = Tensor([0.0, 0.0])
        opt.step()
        results[name] = p.numpy()
    expect_close(results["AdamW"], np.array([2.0, -4.0], np.float32) * (1 - 0.1 * 0.5),
                 what="AdamW(lr=0.1, weight_decay=0.5) after a step with gradient 0")
    expect_close(results["Adam"], np.array([1.9, -3.9], np.float32), rtol=1e-5,
                 what="Adam(lr=0.1, weight_decay=0.5) after a step with gradient 0")


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_learning_rate_can_be_a_tensor(name: str) -> None:
    """lr is a float or a 0-d Tensor that a schedule may assign between steps."""
    start = np.linspace(-1, 1, 6, dtype=np.float32)
    p, t = Tensor(start, requires_grad=True), torch.tensor(start, requires_grad=True)
    opt = getattr(optim, name)([p], lr=Tensor(0.01))
    ref = getattr(torch.optim, name)([t], lr=0.01)
    for step, lr in enumerate([0.01, 0.01, 0.003, 0.001]):
        opt.lr.assign(Tensor(lr))
        ref.param_groups[0]["lr"] = lr
        g = np.cos(start * (step + 1)).astype(np.float32)
        p.grad, t.grad = Tensor(g), torch.tensor(g)
        opt.step()
        ref.step()
        expect_like_torch(opt, ref, [p], [t], f"{name}(lr=Tensor) after step {step + 1} with "
                                              f"lr {lr}")


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_a_step_is_one_schedule(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """_update builds lazy tensors and assigns m and v lazily, computing nothing: the whole
    step (parameters, moments, step count) then runs as one schedule and leaves each of them
    holding a buffer. m and v stay the same tensors, assigned, not replaced."""
    params = [Tensor.randn(4, 3, requires_grad=True), Tensor.randn(3, requires_grad=True)]
    opt = getattr(optim, name)(params, lr=0.01, weight_decay=0.1)
    runs: list[int] = []
    original = realize.run_schedule

    def counting(items: list) -> None:
        if items:
            runs.append(len(items))
        original(items)

    state = [*opt.m, *opt.v]
    for step in range(2):
        runs.clear()
        loss = ((params[0] @ params[1]) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        monkeypatch.setattr(realize, "run_schedule", counting)
        opt.step()
        monkeypatch.setattr(realize, "run_schedule", original)
        assert len(runs) == 1, (
            f"{name}: step {step + 1} ran {len(runs)} schedules, expected 1: don't compute "
            "anything in _update (no .numpy(), .item() or .realize()); build lazy tensors")
        assert all(t is before for t, before in zip([*opt.m, *opt.v], state)), (
            f"{name}: self.m[i] or self.v[i] is a new tensor after the step: update them with "
            "assign, so that they stay the same tensors (the JIT of chapter 09 follows state by "
            "tensor)")
        for what, t in [("parameter 0", params[0]), ("parameter 1", params[1]),
                        ("self.m[0]", opt.m[0]), ("self.v[1]", opt.v[1]), ("self.t", opt.t)]:
            assert realize.is_buffer_view(t.uop), \
                f"{name}: after step {step + 1}, {what} is not realized: assign it"


class MLP:
    """2 -> 16 -> 2 with a relu between (tinyfw's nn.Linear, not yours: see reference)."""

    def __init__(self) -> None:
        self.layers = [nn.Linear(2, 16), nn.Linear(16, 2)]

    def __call__(self, x: Tensor) -> Tensor:
        return self.layers[1](self.layers[0](x).relu())


def test_adam_trains_an_mlp_on_the_moons() -> None:
    """The whole loop with your Adam: 60 full-batch steps of a small MLP on 200 points of
    make_moons reach more than 95% accuracy (100% from about step 40 on)."""
    x, y = make_moons(200, noise=0.1, seed=0)
    X, Y = Tensor(x.astype(np.float32)), Tensor(y.astype(np.int32))
    with reference("10.linear_conv"):
        Tensor.manual_seed(0)
        model = MLP()
        opt = optim.Adam(get_parameters(model), lr=0.05)
        losses = []
        for step in range(60):
            loss = model(X).sparse_categorical_crossentropy(Y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step in (0, 59):
                losses.append(loss.item())
        accuracy = (model(X).argmax(axis=1) == Y).float().mean().item()
    assert accuracy > 0.95, (f"after 60 steps of Adam(lr=0.05) the MLP classifies {accuracy:.1%} "
                             f"of the moons right, expected > 95%; the loss went "
                             f"{losses[0]:.3f} -> {losses[-1]:.3f}")
