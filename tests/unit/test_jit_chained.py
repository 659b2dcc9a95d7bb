"""Two TinyJits chained as examples/mnist.py --distributed chains them: the first returns the
gradients, the host changes them, the second takes them as arguments and updates the weights:
by passing new tensors (what tinyfw.distributed.all_reduce_gradients does) or by assigning the
new values into the first jit's returned tensors. The second once gave wrong weights, silently:
the first jit kept the tensors it returned as its own return value, so every replay returned
the assigned ones (the capture now keeps tensors of its own; tests/unit/test_jit.py has the plain
case)."""
from __future__ import annotations

import numpy as np

from tinyfw import Tensor, nn
from tinyfw.jit.jit import TinyJit
from tinyfw.nn.state import get_parameters


def run(jit: bool, host: str) -> list[np.ndarray]:
    Tensor.manual_seed(1)
    layer = nn.Linear(5, 3)
    params = get_parameters(layer)
    opt = nn.optim.Adam(params, lr=0.01)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 5)).astype(np.float32)
    Y = rng.integers(0, 3, 8).astype(np.int32)

    def grads(x: Tensor, y: Tensor) -> tuple[Tensor, ...]:
        with Tensor.train():
            opt.zero_grad()
            loss = layer(x).sparse_categorical_crossentropy(y).backward()
            gs = [p.grad for p in params]
            Tensor.realize_all(loss, *gs)  # type: ignore[arg-type]
        return (loss, *gs)  # type: ignore[arg-type]

    def update(*gs: Tensor) -> None:
        with Tensor.train():
            for p, g in zip(params, gs):
                p.grad = g
            Tensor.realize_all(*opt.schedule_step())
            opt.zero_grad()

    first = TinyJit(grads) if jit else grads
    second = TinyJit(update) if jit else update
    for _ in range(5):
        _, *gs = first(Tensor(X), Tensor(Y))
        opt.zero_grad()
        if host == "new":
            gs = [Tensor(g.numpy()).realize() for g in gs]
        else:
            for g in gs:
                g.assign(Tensor(g.numpy())).realize()
        second(*gs)
    return [p.numpy() for p in params]


def test_chained_jits_with_new_tensors() -> None:
    for want, got in zip(run(False, "new"), run(True, "new")):
        np.testing.assert_array_equal(got, want)


def test_chained_jits_with_assign() -> None:
    for want, got in zip(run(False, "assign"), run(True, "assign")):
        np.testing.assert_array_equal(got, want)
