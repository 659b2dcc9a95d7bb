"""tinyfw.torch's optimizers under TinyJit: a learning rate a scheduler (or the program) sets
between calls reaches a replayed step, which runs none of step()'s Python; another
hyperparameter changed after the capture is refused with JitError, never replayed silently."""
from __future__ import annotations

import numpy as np
import pytest

import tinyfw.torch as torch
from tinyfw import TinyJit
from tinyfw.jit.jit import JitError
from tinyfw.torch import nn, optim


def jitted_step() -> tuple[object, object, object]:
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(8, 4), torch.randn(8, 2)

    @TinyJit
    def step() -> object:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss.realize()
    return model, opt, step


def test_a_schedule_reaches_the_replays() -> None:
    model, opt, step = jitted_step()
    sched = optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.0)
    moved = []
    for _ in range(6):
        before = model.weight.numpy().copy()
        step()
        sched.step()
        moved.append(float(np.abs(model.weight.numpy() - before).max()))
    assert all(m > 0 for m in moved[:3]) and moved[3:] == [0.0, 0.0, 0.0], moved


def test_a_learning_rate_set_by_hand_reaches_the_replays() -> None:
    model, opt, step = jitted_step()
    for _ in range(3):
        step()
    opt.param_groups[0]["lr"] = 0.0
    before = model.weight.numpy().copy()
    step()
    assert np.array_equal(model.weight.numpy(), before)


def test_another_hyperparameter_changed_after_the_capture_is_refused() -> None:
    _, opt, step = jitted_step()
    for _ in range(3):
        step()
    opt.param_groups[0]["momentum"] = 0.5
    with pytest.raises(JitError, match="momentum"):
        step()
