"""tinyfw.torch against torch: the module's functions and dtypes, Tensor methods by torch's
names and arguments (dim=, the in-place methods), gradient modes, the optimizers' and
schedulers' trajectories, and torch.utils.data."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import tinyfw.torch as tt
from tinyfw import Tensor
from tinyfw.torch import nn, optim
from tinyfw.torch.utils.data import DataLoader, Dataset, TensorDataset, random_split


def same(ours: Any, theirs: Any, **kw: Any) -> None:
    a = ours.numpy() if isinstance(ours, Tensor) else np.asarray(ours)
    b = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else np.asarray(theirs)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, **({"rtol": 1e-5, "atol": 1e-6} | kw))


# --- the module ------------------------------------------------------------------------------

def test_tensor_dtypes_as_torch() -> None:
    for data in ([1, 2, 3], [1.5, 2.0], [True, False], 3, 2.5, [[1, 2], [3, 4]]):
        ours, theirs = tt.tensor(data), torch.tensor(data)
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), data
        same(ours, theirs)
    arr = np.arange(6, dtype=np.int16).reshape(2, 3)
    assert tt.from_numpy(arr).dtype == tt.int16
    assert tt.as_tensor([1.0]).dtype == tt.float32
    assert tt.tensor([1, 2], dtype=tt.float64).dtype == tt.float64
    assert tt.long is tt.int64 and tt.float is tt.float32 and tt.double is tt.float64


def test_creation_functions() -> None:
    assert tt.zeros(2, 3).shape == tt.zeros((2, 3)).shape == (2, 3)
    assert tt.ones(4).dtype == tt.float32 and tt.full((2,), 7).dtype == tt.int64
    same(tt.arange(5), torch.arange(5))
    assert tt.arange(5).dtype == tt.int64 and tt.arange(0, 1, 0.25).dtype == tt.float32
    same(tt.arange(1, 2, 0.25), torch.arange(1, 2, 0.25))
    same(tt.linspace(0, 1, 5), torch.linspace(0, 1, 5))
    same(tt.eye(3, 2), torch.eye(3, 2))
    x = tt.randint(0, 10, (16,))
    assert x.shape == (16,) and x.dtype == tt.int64 and 0 <= x.numpy().min() <= 9
    assert tt.randint(5, (3, 2)).shape == (3, 2)
    with pytest.raises(TypeError, match="randint"):
        tt.randint(0, 10)
    assert sorted(tt.randperm(6).tolist()) == list(range(6))
    y = tt.randn(3, 4)
    assert tt.zeros_like(y).shape == (3, 4) and tt.ones_like(y).dtype == tt.float32
    assert tt.full_like(y, 2.0).numpy().sum() == 24
    assert tt.rand(2, 2, requires_grad=True).requires_grad
    tt.manual_seed(3)
    a = tt.rand(4).numpy()
    tt.manual_seed(3)
    np.testing.assert_array_equal(tt.rand(4).numpy(), a)


def test_module_functions_as_torch() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal((4, 2)).astype(np.float32)
    tx, ty, fx, fy = torch.tensor(x), torch.tensor(y), tt.tensor(x), tt.tensor(y)
    same(tt.cat([fx, fx], dim=1), torch.cat([tx, tx], dim=1))
    same(tt.stack([fx, fx]), torch.stack([tx, tx]))
    same(tt.where(fx > 0, fx, 0.0), torch.where(tx > 0, tx, 0.0))
    same(tt.matmul(fx, fy), torch.matmul(tx, ty))
    same(tt.einsum("ij,jk->ik", fx, fy), torch.einsum("ij,jk->ik", tx, ty))
    same(tt.softmax(fx, dim=1), torch.softmax(tx, dim=1))
    same(tt.log_softmax(fx, -1), torch.log_softmax(tx, -1))
    same(tt.exp(fx), torch.exp(tx))
    same(tt.clamp(fx, -0.5, 0.5), torch.clamp(tx, -0.5, 0.5))
    same(tt.sum(fx, dim=0, keepdim=True), torch.sum(tx, dim=0, keepdim=True))
    same(tt.mean(input=fx), torch.mean(input=tx))
    same(tt.max(fx), torch.max(tx))
    values, indices = tt.max(fx, dim=1)
    ref = torch.max(tx, dim=1)
    same(values, ref.values)
    same(indices, ref.indices)
    same(tt.max(fx, 0).indices, torch.max(tx, 0).indices)
    same(tt.min(fx, fx * 2), torch.min(tx, tx * 2))
    same(tt.argmax(fx, dim=1), torch.argmax(tx, dim=1))
    same(tt.argmax(fx), torch.argmax(tx))
    same(tt.flatten(fx), torch.flatten(tx))
    assert tt.is_tensor(fx) and not tt.is_tensor(x)


def test_tensor_methods_take_torchs_names() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    fx, tx = tt.tensor(x), torch.tensor(x)
    same(fx.sum(dim=1), tx.sum(dim=1))
    same(fx.mean(dim=(0, 2), keepdim=True), tx.mean(dim=(0, 2), keepdim=True))
    same(fx.argmax(dim=1), tx.argmax(dim=1))
    same(fx.softmax(dim=-1), tx.softmax(dim=-1))
    same(fx.cumsum(dim=2), tx.cumsum(dim=2))
    same(fx.std(dim=0), tx.std(dim=0))
    same(fx.logsumexp(dim=1), tx.logsumexp(dim=1))
    same(fx.flip(dims=(0,)), tx.flip(dims=(0,)))
    same(fx.max(dim=2).values, tx.max(dim=2).values)
    same(fx.min(dim=2, keepdim=True).indices, tx.min(dim=2, keepdim=True).indices)
    same(fx.sum(axis=1), tx.sum(dim=1))  # tinyfw's own name still works
    assert fx.dim() == 3 and fx.size() == (2, 3, 4) and fx.size(1) == 3 and fx.numel() == 24
    same(fx.view(6, 4), tx.view(6, 4))
    same(fx.contiguous(), tx.contiguous())
    assert fx.long().dtype == tt.int64 and fx.float().dtype == tt.float32
    assert fx.type_as(tt.tensor([1])).dtype == tt.int64
    assert fx.to(tt.float64).dtype == tt.float64
    assert fx.to("cpu").device == "CPU" and fx.cpu().device == "CPU"
    assert fx.to(tt.device("cpu"), tt.float16).dtype == tt.float16
    assert fx.detach().requires_grad is not True
    assert isinstance(fx[0, 0, 0].item(), float) and fx.tolist() == tx.tolist()
    np.testing.assert_array_equal(fx.numpy(), x)
    same(fx.t() if fx.ndim == 2 else fx[0].t(), tx[0].t())
    w = tt.zeros(3)
    assert w.requires_grad_() is w and w.requires_grad


def test_cuda_is_torchs_error_without_a_gpu() -> None:
    if tt.cuda.is_available():
        assert tt.ones(2).cuda().is_cuda
    else:
        with pytest.raises(RuntimeError, match="NVIDIA"):
            tt.ones(2).cuda()
        with pytest.raises(RuntimeError, match="NVIDIA"):
            nn.Linear(2, 2).to("cuda")


def test_inplace_methods() -> None:
    x = tt.tensor([1.0, -2.0, 3.0])
    assert x.add_(1) is x
    same(x, [2.0, -1.0, 4.0])
    x.mul_(2).sub_(tt.ones(3), alpha=2)
    same(x, [2.0, -4.0, 6.0])
    x.clamp_(-1, 3)
    same(x, [2.0, -1.0, 3.0])
    x.div_(2)
    x.neg_()
    same(x, [-1.0, 0.5, -1.5])
    x.fill_(4)
    same(x, [4.0, 4.0, 4.0])
    x.copy_(tt.tensor([1, 2, 3]))
    same(x, [1.0, 2.0, 3.0])
    assert x.dtype == tt.float32
    x.zero_()
    same(x, [0.0, 0.0, 0.0])
    u = tt.empty(1000).uniform_(2, 3)
    assert 2 <= u.numpy().min() and u.numpy().max() <= 3
    n = tt.empty(2000).normal_(5, 0.1)
    assert abs(n.numpy().mean() - 5) < 0.02
    m = tt.ones(2, 2)
    m.masked_fill_(tt.tensor([[True, False], [False, True]]), 0)
    same(m, [[0.0, 1.0], [1.0, 0.0]])


def test_a_missing_name_says_what_to_use() -> None:
    with pytest.raises(AttributeError, match="argmax"):
        _ = tt.ones(2).argmx  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="grad_fn"):
        _ = tt.ones(2).grad_fn  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="Coming from PyTorch"):
        _ = tt.no_such_function  # type: ignore[attr-defined]


def test_grad_modes() -> None:
    w = tt.ones(3, requires_grad=True)
    with tt.no_grad():
        y = w * 2
        assert not tt.is_grad_enabled()
    assert tt.is_grad_enabled() and not y.requires_grad
    loss = (w * y).sum()  # y is a constant: the gradient is y, not y + 2w
    loss.backward()
    same(w.grad, [2.0, 2.0, 2.0])

    @tt.no_grad()
    def f(t: Tensor) -> Tensor:
        return t * 3
    assert not f(w).requires_grad
    with tt.no_grad():
        with tt.enable_grad():
            assert (w * 2).requires_grad
    with tt.inference_mode():
        assert not (w + 1).requires_grad
    with tt.set_grad_enabled(False):
        assert not (w + 1).requires_grad
    assert (w + 1).requires_grad


# --- optimizers and schedulers -----------------------------------------------------------------

def _trajectory(lib: Any, make_opt: Any, make_sched: Any = None, steps: int = 6) -> list[float]:
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = rng.standard_normal((16, 1)).astype(np.float32)
    if lib is torch:
        model: Any = ref
    else:
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        model.load_state_dict(ref.state_dict())
    opt = make_opt(lib.optim, model)
    sched = make_sched(lib.optim.lr_scheduler, opt) if make_sched else None
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        out.append(loss.item())
    out.append(float(np.abs(next(model.parameters()).detach().numpy()).sum()))
    return out


OPTIMIZERS = {
    "SGD": lambda o, m: o.SGD(m.parameters(), lr=0.1),
    "SGD-momentum-dampening-wd": lambda o, m: o.SGD(m.parameters(), lr=0.05, momentum=0.9,
                                                    dampening=0.3, weight_decay=0.01),
    "SGD-nesterov": lambda o, m: o.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True),
    "SGD-groups": lambda o, m: o.SGD([{"params": m[0].parameters()},
                                      {"params": m[2].parameters(), "lr": 0.01}],
                                     lr=0.1, momentum=0.5),
    "Adam": lambda o, m: o.Adam(m.parameters(), lr=0.01, weight_decay=0.1),
    "AdamW": lambda o, m: o.AdamW(m.parameters(), lr=0.01, betas=(0.8, 0.99)),
    "RMSprop": lambda o, m: o.RMSprop(m.parameters(), lr=0.01),
    "RMSprop-centered-momentum": lambda o, m: o.RMSprop(m.parameters(), lr=0.01, momentum=0.5,
                                                        centered=True, weight_decay=0.1),
    "Adagrad": lambda o, m: o.Adagrad(m.parameters(), lr=0.1, lr_decay=0.01,
                                      initial_accumulator_value=0.1),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_trajectory_as_torch(name: str) -> None:
    make = OPTIMIZERS[name]
    np.testing.assert_allclose(_trajectory(tt, make), _trajectory(torch, make), rtol=2e-4,
                               atol=1e-5)


SCHEDULERS = {
    "StepLR": lambda s, o: s.StepLR(o, step_size=2, gamma=0.5),
    "MultiStepLR": lambda s, o: s.MultiStepLR(o, milestones=[1, 4], gamma=0.3),
    "ExponentialLR": lambda s, o: s.ExponentialLR(o, gamma=0.8),
    "CosineAnnealingLR": lambda s, o: s.CosineAnnealingLR(o, T_max=5, eta_min=0.01),
    "OneCycleLR": lambda s, o: s.OneCycleLR(o, max_lr=0.2, total_steps=7),
    "LambdaLR": lambda s, o: s.LambdaLR(o, lambda e: 1 / (e + 1)),
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_trajectory_as_torch(name: str) -> None:
    def sgd(o: Any, m: Any) -> Any:
        return o.SGD(m.parameters(), lr=0.1, momentum=0.9)
    np.testing.assert_allclose(_trajectory(tt, sgd, SCHEDULERS[name]),
                               _trajectory(torch, sgd, SCHEDULERS[name]), rtol=2e-4, atol=1e-5)


def test_one_cycle_with_adam_cycles_beta1() -> None:
    def adam(o: Any, m: Any) -> Any:
        return o.Adam(m.parameters(), lr=0.01)
    np.testing.assert_allclose(
        _trajectory(tt, adam, lambda s, o: s.OneCycleLR(o, 0.05, total_steps=6)),
        _trajectory(torch, adam, lambda s, o: s.OneCycleLR(o, 0.05, total_steps=6)),
        rtol=2e-4, atol=1e-5)


def test_optimizer_zero_grad_and_state_dict() -> None:
    torch.manual_seed(0)
    ref = torch.nn.Linear(3, 2)
    model = nn.Linear(3, 2)
    model.load_state_dict(ref.state_dict())
    ours, theirs = optim.Adam(model.parameters(), lr=0.1), torch.optim.Adam(ref.parameters(),
                                                                             lr=0.1)
    for opt, m, lib in ((ours, model, tt), (theirs, ref, torch)):
        m(lib.ones(1, 3)).sum().backward()
        opt.step()
    a, b = ours.state_dict(), theirs.state_dict()
    assert a["param_groups"][0]["params"] == b["param_groups"][0]["params"] == [0, 1]
    assert set(a["state"][0]) == set(b["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    same(a["state"][0]["exp_avg"], b["state"][0]["exp_avg"])
    ours.zero_grad(set_to_none=False)
    assert model.weight.grad is not None and (model.weight.grad.numpy() == 0).all()
    ours.zero_grad()
    assert model.weight.grad is None
    again = optim.Adam(model.parameters(), lr=0.1)
    again.load_state_dict(a)
    same(again.state_dict()["state"][1]["exp_avg_sq"], b["state"][1]["exp_avg_sq"])
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.SGD(model.parameters(), lr=-1)


# --- data ----------------------------------------------------------------------------------

class Squares(Dataset):
    def __len__(self) -> int:
        return 10

    def __getitem__(self, i: int) -> Any:
        return {"x": np.full(2, i, np.float32), "y": i * i, "pair": (float(i), tt.tensor([i]))}


def test_dataloader_collates_as_torch() -> None:
    batches = list(DataLoader(Squares(), batch_size=4))
    assert len(batches) == 3 and len(DataLoader(Squares(), batch_size=4, drop_last=True)) == 2
    first = batches[0]
    same(first["x"], np.repeat(np.arange(4, dtype=np.float32)[:, None], 2, 1))
    assert first["y"].dtype == tt.int64 and first["y"].tolist() == [0, 1, 4, 9]
    assert first["pair"][0].dtype == tt.float64 and first["pair"][1].shape == (4, 1)
    assert batches[2]["x"].shape == (2, 2)


def test_dataloader_shuffles_with_a_seeded_generator() -> None:
    data = TensorDataset(tt.arange(20).float(), tt.arange(20) * 10)
    order = [x.tolist() for x, _ in DataLoader(data, 8, shuffle=True,
                                               generator=tt.Generator().manual_seed(5))]
    again = [x.tolist() for x, _ in DataLoader(data, 8, shuffle=True,
                                               generator=tt.Generator().manual_seed(5))]
    assert order == again and sorted(sum(order, [])) == list(range(20))
    assert sum(order, []) != list(range(20))
    for x, y in DataLoader(data, 8, shuffle=True):
        assert (y.numpy() == x.numpy() * 10).all()
    a, b = random_split(data, [0.75, 0.25], generator=tt.Generator().manual_seed(1))
    assert len(a) == 15 and len(b) == 5
    assert not {int(a[i][0].item()) for i in range(15)} & {int(b[i][0].item()) for i in range(5)}


def test_tensor_takes_torchs_randint_and_from_numpy() -> None:
    """Tensor.randint(0, 10, (16,)) and Tensor.from_numpy, torch's forms, on tinyfw's Tensor
    (tinygrad's Tensor.randint(*shape, low=, high=) still works)."""
    x = Tensor.randint(0, 10, (16,))
    assert x.shape == (16,) and 0 <= x.numpy().min() and x.numpy().max() <= 9
    assert Tensor.randint(5, (2, 3)).shape == (2, 3)
    assert Tensor.randint(2, 3, low=1, high=4).shape == (2, 3)
    assert Tensor.from_numpy(np.arange(3, dtype=np.int16)).dtype == tt.int16


def test_unpacking_tinygrads_max_over_an_axis_is_refused() -> None:
    """torch's `_, predicted = out.max(1)` on tinygrad's max(1) (the values alone) would take
    a row of values for the indices: unpacking it raises, naming torch's form; dim= and
    torch.max(x, 1) give torch's (values, indices)."""
    out = tt.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 1.0]])
    with pytest.raises(TypeError, match=r"x\.max\(dim=1\)"):
        _, predicted = out.max(1)
    with pytest.raises(TypeError, match=r"x\.argmin\(0\)"):
        _, _, _ = out.min(0)
    for values, indices in (out.max(dim=1), tt.max(out, 1)):
        assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0]
    assert (out.max(1) * 2).tolist() == [10.0, 14.0]  # tinygrad's max(1), a tensor as ever


def test_a_conversion_to_what_a_tensor_is_already_is_the_tensor() -> None:
    """x.float() of a float32 tensor, x.to() its own device or dtype, x.type_as(x): x itself,
    as torch's, so an in-place write through the result is seen by x."""
    for convert, ref_convert in ((lambda t: t.float(), None), (lambda t: t.to("cpu"), None),
                                 (lambda t: t.to(tt.float32), lambda t: t.to(torch.float32)),
                                 (lambda t: t.type_as(t), None)):
        x, ref = tt.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
        y, ref_y = convert(x), (ref_convert or convert)(ref)
        y += 1
        ref_y += 1
        assert x.tolist() == ref.tolist() == [2.0, 3.0]
    assert tt.tensor([1, 2]).float().tolist() == [1.0, 2.0]  # another dtype: a new tensor


@pytest.mark.parametrize("p", ["fro", 2, 1, 0, 3, 0.5, float("inf"), float("-inf")])
@pytest.mark.parametrize("dim", [None, 1, (0, 1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_norm_outer_trace_remainder_as_torch(p: object, dim: object, keepdim: bool) -> None:
    """torch.norm's vector norms (and torch.outer, trace, remainder, listed beside them)."""
    a = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    a[0, 0] = 0.0
    if p == "fro" and dim == 1:
        return  # (torch's "fro" over one axis is its 2-norm, tested as p=2)
    ref = torch.norm(torch.tensor(a), p=p, dim=dim, keepdim=keepdim).numpy()  # type: ignore
    got = tt.norm(tt.tensor(a), p=p, dim=dim, keepdim=keepdim).numpy()
    assert ref.shape == got.shape
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    v, w = np.arange(3.0, dtype=np.float32), np.arange(4.0, dtype=np.float32)
    np.testing.assert_array_equal(tt.outer(tt.tensor(v), tt.tensor(w)).numpy(), np.outer(v, w))
    assert tt.trace(tt.tensor(a)).item() == pytest.approx(np.trace(a), 1e-6)
    x, y = [-3.0, 3.0, -1.5], [2.0, -2.0, -2.0]
    assert tt.remainder(tt.tensor(x), tt.tensor(y)).tolist() == \
        torch.remainder(torch.tensor(x), torch.tensor(y)).tolist()
