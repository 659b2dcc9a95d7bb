"""A reduce computed once: a reduce whose value is expanded (or permuted, sliced, flipped) is
stored; one that is only reshaped and combined elementwise fuses with what uses it."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from chapters.grading import expect_close
from tinyfw import Tensor
from tinyfw.engine import realize
from tinyfw.engine.schedule import find_materialized, reduce_would_be_recomputed
from tinyfw.uop.ops import Ops, UOp

pytestmark = pytest.mark.task("04.reduce")

RNG = np.random.default_rng(43)


def data(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def names(items: list) -> list[str]:
    return [item.name for item in items]


def users_of(*roots: Tensor) -> dict[UOp, list[UOp]]:
    """Each node below roots -> the nodes that use it, as find_materialized builds it."""
    users: dict[UOp, list[UOp]] = {}
    seen: set[UOp] = set()
    for root in roots:
        for node in root.uop.toposort():
            if node in seen or realize.is_loaded(node):
                continue
            seen.add(node)
            for source in dict.fromkeys(node.src):
                users.setdefault(source, []).append(node)
    return users


def the_reduce(t: Tensor) -> UOp:
    """The one REDUCE below t."""
    (found,) = [n for n in t.uop.toposort() if n.op is Ops.REDUCE]
    return found


def test_only_a_reduce_is_stored_by_this_rule() -> None:
    """Elementwise, movement and constant nodes are never stored by it, even when expanded."""
    x = Tensor(data(3, 1))
    out = (x * 2).expand(3, 4) + 1
    users = users_of(out)
    for node in out.uop.toposort():
        if node.op is not Ops.REDUCE and node.op is not Ops.BUFFER:
            assert reduce_would_be_recomputed(node, users) is False, f"{node.op} is no reduce"


def test_a_reduce_used_plainly_fuses() -> None:
    """Reshaped and multiplied, or asked for directly: computed once where it is, no buffer."""
    x = Tensor(data(3, 4))
    scaled = x.sum(1) * 2 + 1
    assert reduce_would_be_recomputed(the_reduce(scaled), users_of(scaled)) is False
    alone = x.max(0, keepdim=True)
    assert reduce_would_be_recomputed(alone.uop, users_of(alone)) is False


def test_an_expanded_reduce_is_stored() -> None:
    x = Tensor(data(3, 4))
    out = x - x.max(1, keepdim=True)  # REDUCE (3, 1) -> EXPAND (3, 4)
    assert reduce_would_be_recomputed(the_reduce(out), users_of(out)) is True


def test_an_expand_after_a_reshape() -> None:
    x = Tensor(data(3, 4))
    out = x * x.sum(1).reshape(3, 1)  # REDUCE -> RESHAPE (3,) -> RESHAPE (3, 1) -> EXPAND
    assert reduce_would_be_recomputed(the_reduce(out), users_of(out)) is True


def test_an_expand_after_elementwise_ops() -> None:
    """The expand that repeats the reduce is two elementwise ops and a reshape above it."""
    x = Tensor(data(3, 4))
    out = x * (x.sum(1) * 2 + 1).reshape(3, 1)
    assert reduce_would_be_recomputed(the_reduce(out), users_of(out)) is True
    assert find_materialized([out.uop], realize.is_loaded) == {out.uop, the_reduce(out)}


def test_other_movement_ops_store_the_reduce() -> None:
    x = Tensor(data(3, 4))
    moves = {"permute": lambda s: s.reshape(1, 3).T, "shrink": lambda s: s[1:],
             "flip": lambda s: s.flip(0),
             "flip after elementwise ops": lambda s: (s.exp() + 1).reshape(3, 1)[::-1]}
    for name, move in moves.items():
        out = move(x.sum(1)) * 3
        assert reduce_would_be_recomputed(the_reduce(out), users_of(out)) is True, \
            f"a reduce seen through a {name} would be recomputed"


def test_a_pad_ends_the_search() -> None:
    """What a PAD pads is stored by the PAD rule, so the reduce below it need not be."""
    x = Tensor(data(3, 4))
    out = (x.sum(1) * 2).pad(((1, 1),)).reshape(5, 1).expand(5, 4)
    assert reduce_would_be_recomputed(the_reduce(out), users_of(out)) is False


def test_shared_nodes_are_visited_once() -> None:
    """Each level uses the one before twice: 2**40 paths up from the reduce, 80 nodes."""
    x = Tensor(data(3, 4))
    y = x.sum(1)
    for _ in range(40):
        y = y * y + y
    out = y.reshape(3, 1).expand(3, 4)
    users = users_of(out)
    start = time.perf_counter()
    assert reduce_would_be_recomputed(the_reduce(out), users) is True
    assert time.perf_counter() - start < 1.0, "visit each node once (keep a set of seen nodes)"


def test_softmax_is_three_kernels() -> None:
    """The max, the sum of exp(x - max), and the division: each reduce is expanded."""
    a = data(4, 5) * 10
    out = Tensor(a).softmax(-1)
    items = out.schedule()
    assert names(items) == ["r_4_5", "r_4_5", "E_4_5"]
    assert [item.output.op for item in items[:2]] == [Ops.REDUCE, Ops.REDUCE]
    expect_close(out, torch.softmax(torch.tensor(a), -1).numpy(), rtol=1e-5, atol=1e-7)


def test_a_matmul_and_its_relu_are_one_kernel() -> None:
    a, b = data(4, 5), data(5, 6)
    x, w = Tensor(a), Tensor(b)
    mm = (x.reshape(4, 5, 1).expand(4, 5, 6) * w.reshape(1, 5, 6).expand(4, 5, 6)).sum(1)
    assert names(mm.schedule()) == ["r_4_5_6"]
    assert names(mm.relu().schedule()) == ["r_4_5_6"]
    assert names((x @ w + 1).relu().schedule()) == ["r_4_5_6"]
    expect_close(mm.relu(), np.maximum(a @ b, 0), rtol=1e-5, atol=1e-6)


def test_one_reduce_per_kernel() -> None:
    """Two reduces side by side, or one over the other, are two kernels."""
    a = data(3, 4)
    x = Tensor(a)
    both = x.sum() + x.max()
    assert names(both.schedule()) == ["r_3_4", "r_3_4"]
    expect_close(both, a.sum() + a.max(), rtol=1e-5)
    nested = x.sum(1).exp().sum()
    assert names(nested.schedule()) == ["r_3_4", "r_3"]
    expect_close(nested, np.exp(a.sum(1)).sum(), rtol=1e-5)


def test_a_reduce_used_by_two_outputs_is_computed_once() -> None:
    a = data(3, 4)
    s = Tensor(a).sum(1)
    together = (s + 1) * (s * 2)
    assert names(together.schedule()) == ["r_3_4"], "one kernel can use the reduce twice"
    first, second = s + 1, s * 2
    items = first.schedule(second)
    assert names(items) == ["r_3_4", "E_3", "E_3"] and items[0].output.op is Ops.REDUCE
    Tensor.realize_all(first, second)
    expect_close(second, a.sum(1) * 2, rtol=1e-5)


def test_mlp_training_step_is_twelve_kernels() -> None:
    """Forward, backward and SGD update of a 3-8-2 MLP: 3 + 5 + 4 kernels."""
    arrays = {"x": data(16, 3), "y": data(16, 2), "w1": data(3, 8), "b1": data(8),
              "w2": data(8, 2), "b2": data(2)}
    x, y = Tensor(arrays["x"]), Tensor(arrays["y"])
    params = [Tensor(arrays[k], requires_grad=True) for k in ("w1", "b1", "w2", "b2")]
    w1, b1, w2, b2 = params
    loss = ((x @ w1 + b1).relu() @ w2 + b2 - y).square().mean()
    loss.backward()
    grads = [p.grad for p in params]
    for p in params:
        p.assign(p.detach() - 0.1 * p.grad)
    targets = [loss, *grads, *params]
    stored = find_materialized([t.uop for t in targets], realize.is_loaded)
    inner = sorted(n.shape for n in stored - {t.uop for t in targets})
    assert inner == [(16, 1, 2), (16, 1, 8), (16, 8, 1)], \
        "expected the two forward matmuls and the gradient at the hidden layer to be stored"
    items = loss.schedule(*grads, *params)
    assert names(items) == ["r_16_3_8", "r_16_8_2", "r_16_2", "r_16_8_2", "r_16_3_8", "r_16_8",
                            "r_16_8_2", "r_16_2", "E_3_8", "E_8", "E_8_2", "E_2"]
    t = {k: torch.tensor(v, requires_grad=k not in ("x", "y")) for k, v in arrays.items()}
    t_loss = ((t["x"] @ t["w1"] + t["b1"]).relu() @ t["w2"] + t["b2"] - t["y"]).square().mean()
    t_loss.backward()
    Tensor.realize_all(*targets)
    expect_close(loss, t_loss.item(), rtol=1e-5, what="loss")
    for name, p in zip(("w1", "b1", "w2", "b2"), params):
        want = (t[name] - 0.1 * t[name].grad).detach().numpy()
        expect_close(p, want, rtol=1e-4, atol=1e-6, what=f"{name} after the step")
