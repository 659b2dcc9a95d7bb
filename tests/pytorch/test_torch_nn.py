"""tinyfw.torch.nn against torch.nn: the Module machinery (parameters, state_dict keys and
shapes, load_state_dict, train/eval), each layer's output and gradients from the same weights,
the losses with every reduction, the initial distributions, and BatchNorm trained in both
styles (torch's Module mode, tinygrad's Tensor.train)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import tinyfw.torch as ttorch
import tinyfw.torch.nn.functional as TF
from tinyfw import Tensor
from tinyfw import nn as tnn
from tinyfw.nn.optim import SGD as TinySGD
from tinyfw.torch import nn


def numpy_state(module: torch.nn.Module) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in module.state_dict().items()}


def same_weights(tiny: nn.Module, ref: torch.nn.Module) -> None:
    tiny.load_state_dict(numpy_state(ref))


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# --- BatchNorm in both styles ---------------------------------------------------------------

def _bn_reference(steps: int, x: list[np.ndarray]) -> tuple[list[float], torch.nn.Module]:
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3))
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    losses = []
    for i in range(steps):
        opt.zero_grad()
        loss = ref(torch.tensor(x[i])).square().mean() + ref(torch.tensor(x[i])).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, ref


BN_X = [rand(4, 2, 5, 5, seed=s) * 3 + 1 for s in range(3)]


def test_batchnorm_torch_style_trains_without_tensor_train() -> None:
    """A torch-style loop (no `with Tensor.train():`): a fresh Module is in training mode, so
    BatchNorm2d normalizes with the batch's statistics and moves its running ones, as torch."""
    losses, ref = _bn_reference(3, BN_X)
    tiny = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3))
    same_weights(tiny, _bn_reference(0, BN_X)[1])
    assert tiny.training and tiny[1].training
    opt = TinySGD(list(tiny.parameters()), lr=0.1)
    for i in range(3):
        opt.zero_grad()
        loss = tiny(Tensor(BN_X[i])).square().mean() + tiny(Tensor(BN_X[i])).mean()
        loss.backward()
        opt.step()
        np.testing.assert_allclose(loss.item(), losses[i], rtol=1e-4, atol=1e-5)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(tiny[1], name).numpy(),
                                   getattr(ref[1], name).numpy(), rtol=1e-4, atol=1e-5)
    assert tiny[1].num_batches_tracked.item() == ref[1].num_batches_tracked.item() == 6
    tiny.eval()
    ref.eval()
    np.testing.assert_allclose(tiny(Tensor(BN_X[0])).numpy(),
                               ref(torch.tensor(BN_X[0])).detach().numpy(), rtol=1e-4, atol=1e-4)


def test_batchnorm_tinygrad_style_trains_in_tensor_train() -> None:
    """tinygrad's style, tinyfw.nn's layers in plain objects and `with Tensor.train():`, still
    trains BatchNorm with batch statistics; outside it, evaluation (tinygrad's default)."""
    losses, ref = _bn_reference(3, BN_X)
    start = numpy_state(_bn_reference(0, BN_X)[1])
    conv, bn = tnn.Conv2d(2, 3, 3), tnn.BatchNorm2d(3)
    for t, key in ((conv.weight, "0.weight"), (conv.bias, "0.bias"), (bn.weight, "1.weight"),
                   (bn.bias, "1.bias")):
        t.assign(Tensor(start[key])).realize()
    opt = TinySGD([conv.weight, conv.bias, bn.weight, bn.bias], lr=0.1)
    with Tensor.train():
        for i in range(3):
            opt.zero_grad()
            loss = bn(conv(Tensor(BN_X[i]))).square().mean() + bn(conv(Tensor(BN_X[i]))).mean()
            loss.backward()
            opt.step()
            np.testing.assert_allclose(loss.item(), losses[i], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.running_mean.numpy(), ref[1].running_mean.numpy(), rtol=1e-4,
                               atol=1e-5)
    ref.eval()
    np.testing.assert_allclose(bn(conv(Tensor(BN_X[0]))).numpy(),
                               ref(torch.tensor(BN_X[0])).detach().numpy(), rtol=1e-4, atol=1e-4)


def test_tinyfw_layer_inside_a_module_follows_its_mode() -> None:
    """A tinyfw.nn.BatchNorm2d held by a Module is adopted: its tensors are the module's
    (parameters and buffers, by torch's keys), and it trains while the module does, whatever
    Tensor.training says; after eval() it uses its running statistics even in Tensor.train()."""
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bn = tnn.BatchNorm2d(3)

        def forward(self, x: Tensor) -> Tensor:
            return self.bn(x)
    net = Net()
    assert list(net.state_dict()) == ["bn.weight", "bn.bias", "bn.num_batches_tracked",
                                      "bn.running_mean", "bn.running_var"]
    assert [n for n, _ in net.named_parameters()] == ["bn.weight", "bn.bias"]
    x = rand(4, 3, 2, 2) * 5 + 2
    out = net(Tensor(x)).numpy()
    assert abs(out.mean()) < 1e-4 and abs(out.std() - 1) < 1e-2  # batch statistics
    assert np.abs(net.bn.running_mean.numpy()).sum() > 0
    net.eval()
    with Tensor.train():
        again = net(Tensor(x)).numpy()
    assert abs(again.mean()) > 1  # running statistics: not normalized to mean 0


def test_dropout_follows_the_module_mode() -> None:
    drop = nn.Dropout(0.5)
    x = Tensor.ones(1000)
    assert (drop(x).numpy() == 0).mean() > 0.3  # a fresh module trains
    drop.eval()
    with Tensor.train():
        assert (drop(x).numpy() == 1).all()
    plain = tnn.Dropout(0.5)
    assert (plain(x).numpy() == 1).all()  # tinygrad's default: evaluation
    assert (plain.train()(x).numpy() == 0).mean() > 0.3  # told to train


# --- the Module machinery ----------------------------------------------------------------------

class TinyNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4),
                                      nn.ReLU(), nn.MaxPool2d(2))
        self.heads = nn.ModuleList([nn.Linear(16, 5), nn.Linear(5, 3)])
        self.extra = nn.ModuleDict({"norm": nn.LayerNorm(5)})
        self.register_buffer("scale", ttorch.ones(3))
        self.register_buffer("scratch", ttorch.zeros(2), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        h = self.features(x).flatten(1)
        return self.heads[1](self.extra["norm"](self.heads[0](h))) * self.scale


class TorchNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1),
                                            torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                            torch.nn.MaxPool2d(2))
        self.heads = torch.nn.ModuleList([torch.nn.Linear(16, 5), torch.nn.Linear(5, 3)])
        self.extra = torch.nn.ModuleDict({"norm": torch.nn.LayerNorm(5)})
        self.register_buffer("scale", torch.ones(3))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.features(x).flatten(1)
        return self.heads[1](self.extra["norm"](self.heads[0](h))) * self.scale


def test_state_dict_keys_shapes_and_dtypes_are_torchs() -> None:
    tiny, ref = TinyNet(), TorchNet()
    ours, theirs = tiny.state_dict(), ref.state_dict()
    assert list(ours) == list(theirs)
    for k in theirs:
        assert ours[k].shape == tuple(theirs[k].shape), k
    assert ours["features.1.num_batches_tracked"].dtype == ttorch.long
    assert [n for n, _ in tiny.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert [n for n, _ in tiny.named_buffers()] == [n for n, _ in ref.named_buffers()]
    assert [n for n, _ in tiny.named_modules()] == [n for n, _ in ref.named_modules()]
    assert len(list(tiny.children())) == len(list(ref.children())) == 3
    assert repr(tiny).splitlines()[1:] == repr(ref).splitlines()[1:]


def test_load_state_dict_then_same_outputs_and_gradients() -> None:
    torch.manual_seed(1)
    tiny, ref = TinyNet(), TorchNet()
    result = tiny.load_state_dict(ref.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    x = rand(2, 1, 4, 4)
    tx = torch.tensor(x)
    for mode in ("train", "eval"):
        getattr(tiny, mode)()
        getattr(ref, mode)()
        out, expected = tiny(Tensor(x)), ref(tx)
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
    tiny.zero_grad()
    ref.zero_grad()
    tiny(Tensor(x)).sum().backward()
    ref(tx).sum().backward()
    for (name, p), (_, q) in zip(tiny.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3, atol=1e-5,
                                   err_msg=name)


def test_load_state_dict_errors_are_torchs() -> None:
    tiny = nn.Linear(3, 2)
    good = numpy_state(torch.nn.Linear(3, 2))
    with pytest.raises(RuntimeError, match="Missing key"):
        tiny.load_state_dict({"weight": good["weight"]})
    with pytest.raises(RuntimeError, match="Unexpected key"):
        tiny.load_state_dict({**good, "other": good["bias"]})
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        tiny.load_state_dict({**good, "weight": np.zeros((2, 4), np.float32)})
    result = tiny.load_state_dict({"weight": good["weight"]}, strict=False)
    assert result.missing_keys == ["bias"]
    np.testing.assert_array_equal(tiny.weight.numpy(), good["weight"])


def test_module_misc() -> None:
    net = TinyNet()
    seen: list[str] = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "TinyNet" and seen[0] == "Conv2d"
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    with pytest.raises(TypeError, match="parameter 'weight'"):
        net.heads[0].weight = Tensor.zeros(5, 16)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = net.nothing
    net.eval()
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    w = net.heads[0].weight
    net.to(ttorch.float64)
    assert net.heads[0].weight is w and w.dtype == ttorch.float64


def test_parameter() -> None:
    p = nn.Parameter(ttorch.ones(2, 3))
    assert p.requires_grad and isinstance(p, Tensor) and repr(p).startswith("Parameter")
    frozen = nn.Parameter(ttorch.ones(2), requires_grad=False)
    assert not frozen.requires_grad


# --- layers against torch, from the same weights -----------------------------------------------

LAYERS: list[tuple[str, Any, tuple[int, ...]]] = [
    ("Linear(6, 4)", lambda m: m.Linear(6, 4), (3, 6)),
    ("Linear(6, 4, bias=False)", lambda m: m.Linear(6, 4, bias=False), (2, 5, 6)),
    ("Conv1d(3, 4, 3, stride=2)", lambda m: m.Conv1d(3, 4, 3, stride=2), (2, 3, 9)),
    ("Conv2d(4, 6, 3, padding=1, groups=2)", lambda m: m.Conv2d(4, 6, 3, padding=1, groups=2),
     (2, 4, 5, 5)),
    ("Conv2d(2, 3, 3, padding='same', dilation=2)",
     lambda m: m.Conv2d(2, 3, 3, padding="same", dilation=2), (1, 2, 7, 6)),
    ("Conv3d(2, 2, 2)", lambda m: m.Conv3d(2, 2, 2), (1, 2, 3, 4, 3)),
    ("ConvTranspose1d(3, 2, 3, stride=2)", lambda m: m.ConvTranspose1d(3, 2, 3, stride=2),
     (2, 3, 5)),
    ("ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1)",
     lambda m: m.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), (1, 3, 4, 4)),
    ("MaxPool1d(2)", lambda m: m.MaxPool1d(2), (2, 3, 8)),
    ("MaxPool2d(3, 2, 1)", lambda m: m.MaxPool2d(3, 2, 1), (2, 3, 7, 7)),
    ("AvgPool1d(3, 2)", lambda m: m.AvgPool1d(3, 2), (2, 3, 9)),
    ("AvgPool2d(2, ceil_mode=True)", lambda m: m.AvgPool2d(2, ceil_mode=True), (1, 2, 5, 5)),
    ("AdaptiveAvgPool1d(3)", lambda m: m.AdaptiveAvgPool1d(3), (2, 3, 8)),
    ("AdaptiveAvgPool2d((1, 1))", lambda m: m.AdaptiveAvgPool2d((1, 1)), (2, 3, 5, 5)),
    ("AdaptiveAvgPool2d((3, 2))", lambda m: m.AdaptiveAvgPool2d((3, 2)), (2, 3, 7, 5)),
    ("BatchNorm1d(4)", lambda m: m.BatchNorm1d(4), (6, 4)),
    ("BatchNorm1d(3) on (N, C, L)", lambda m: m.BatchNorm1d(3), (4, 3, 5)),
    ("BatchNorm2d(3)", lambda m: m.BatchNorm2d(3), (4, 3, 2, 3)),
    ("LayerNorm((3, 4))", lambda m: m.LayerNorm((3, 4)), (2, 3, 4)),
    ("GroupNorm(2, 4)", lambda m: m.GroupNorm(2, 4), (2, 4, 3, 3)),
    ("InstanceNorm2d(3, affine=True)", lambda m: m.InstanceNorm2d(3, affine=True), (2, 3, 4, 4)),
    ("RMSNorm(5)", lambda m: m.RMSNorm(5), (2, 3, 5)),
    ("Flatten()", lambda m: m.Flatten(), (2, 3, 4)),
    ("Identity()", lambda m: m.Identity(), (2, 3)),
]
ACTIVATIONS = ["ReLU()", "ReLU6()", "GELU()", "GELU(approximate='tanh')", "SiLU()", "Mish()",
               "Tanh()", "Sigmoid()", "Hardswish()", "Hardsigmoid()", "Hardtanh(-2, 2)",
               "LeakyReLU(0.2)", "ELU(0.5)", "CELU()", "SELU()", "Softplus(2.0)", "Softsign()",
               "LogSigmoid()", "Softmax(dim=1)", "LogSoftmax(dim=-1)", "Softmin(dim=0)"]
LAYERS += [(a, (lambda src: lambda m: eval(f"m.{src}"))(a), (3, 5)) for a in ACTIVATIONS]


@pytest.mark.parametrize("what, make, shape", LAYERS, ids=[w for w, _, _ in LAYERS])
def test_layer_as_torch(what: str, make: Any, shape: tuple[int, ...]) -> None:
    torch.manual_seed(0)
    ref, tiny = make(torch.nn), make(nn)
    assert list(tiny.state_dict()) == list(ref.state_dict()), what
    for k, v in ref.state_dict().items():
        if v.dtype.is_floating_point:  # weights other than torch's round 1s and 0s
            v.copy_(torch.randn(v.shape) if "running_var" not in k else torch.rand(v.shape) + .5)
    same_weights(tiny, ref)
    x = rand(*shape, seed=3)
    tx = torch.tensor(x, requires_grad=True)
    fx = Tensor(x, requires_grad=True)
    expected, out = ref(tx), tiny(fx)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-4, atol=1e-5,
                               err_msg=what)
    w = rand(*expected.shape, seed=4)
    (expected * torch.tensor(w)).sum().backward()
    (out * Tensor(w)).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-4,
                               err_msg=f"{what}: input gradient")
    for (name, p), (_, q) in zip(tiny.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3, atol=1e-4,
                                   err_msg=f"{what}: gradient of {name}")
    if any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in ref.modules()):
        for k, v in ref.state_dict().items():
            np.testing.assert_allclose(tiny.state_dict()[k].numpy(), v.numpy(), rtol=1e-5,
                                       atol=1e-6, err_msg=f"{what}: {k} after a step")


def test_embedding_and_padding_idx() -> None:
    torch.manual_seed(0)
    ref, tiny = torch.nn.Embedding(7, 3, padding_idx=2), nn.Embedding(7, 3, padding_idx=2)
    assert (tiny.weight.numpy()[2] == 0).all()
    same_weights(tiny, ref)
    idx = np.array([[0, 2, 6], [2, 3, 3]])
    out, expected = tiny(ttorch.tensor(idx)), ref(torch.tensor(idx))
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy())
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(tiny.weight.grad.numpy(), ref.weight.grad.numpy())


LOSSES = [
    ("CrossEntropyLoss", {}, "class"), ("CrossEntropyLoss", {"ignore_index": 1}, "class"),
    ("CrossEntropyLoss", {"label_smoothing": 0.1, "reduction": "sum"}, "class"),
    ("CrossEntropyLoss", {"reduction": "none"}, "class"),
    ("NLLLoss", {}, "logprob"), ("NLLLoss", {"reduction": "none", "ignore_index": 0}, "logprob"),
    ("MSELoss", {}, "same"), ("MSELoss", {"reduction": "sum"}, "same"),
    ("L1Loss", {"reduction": "none"}, "same"), ("L1Loss", {}, "same"),
    ("SmoothL1Loss", {}, "same"), ("SmoothL1Loss", {"beta": 0.5, "reduction": "sum"}, "same"),
    ("HuberLoss", {"delta": 0.5}, "same"),
    ("BCELoss", {}, "prob"), ("BCELoss", {"reduction": "none"}, "prob"),
    ("BCEWithLogitsLoss", {}, "binary"), ("BCEWithLogitsLoss", {"reduction": "sum"}, "binary"),
    ("KLDivLoss", {"reduction": "batchmean"}, "kl"), ("KLDivLoss", {"reduction": "sum"}, "kl"),
    ("KLDivLoss", {"reduction": "none", "log_target": True}, "kllog"),
]


@pytest.mark.parametrize("name, kwargs, kind", LOSSES,
                         ids=[f"{n}-{k}" for n, k, _ in LOSSES])
def test_loss_as_torch(name: str, kwargs: dict, kind: str) -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    if kind == "class":
        target = rng.integers(0, 4, 6)
    elif kind == "logprob":
        x = torch.log_softmax(torch.tensor(x), 1).numpy()
        target = rng.integers(0, 4, 6)
    elif kind == "prob":
        x = 1 / (1 + np.exp(-x))
        target = rng.uniform(0, 1, (6, 4)).astype(np.float32)
    elif kind in ("binary", "same"):
        target = rng.uniform(0, 1, (6, 4)).astype(np.float32)
    else:
        x = torch.log_softmax(torch.tensor(x), 1).numpy()
        target = torch.softmax(torch.tensor(rng.standard_normal((6, 4))), 1).float().numpy()
        target[0, 0] = 0
        if kind == "kllog":
            target = np.log(target + 1e-3).astype(np.float32)
    tx, fx = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
    expected = getattr(torch.nn, name)(**kwargs)(tx, torch.tensor(target))
    out = getattr(nn, name)(**kwargs)(fx, ttorch.tensor(target))
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    expected.sum().backward()
    out.sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_initial_distributions_are_torchs() -> None:
    """Each layer's parameters come from torch's distribution: Linear and Conv uniform in
    +-1/sqrt(fan_in), Embedding N(0, 1), norms 1 and 0."""
    lin = nn.Linear(400, 300)
    bound = 1 / 20
    w = lin.weight.numpy()
    assert w.min() >= -bound and w.max() <= bound and abs(w.std() - bound / np.sqrt(3)) < 1e-3
    conv = nn.Conv2d(8, 16, 5)
    assert np.abs(conv.weight.numpy()).max() <= 1 / np.sqrt(200)
    emb = nn.Embedding(300, 200).weight.numpy()
    assert abs(emb.std() - 1) < 0.02 and abs(emb.mean()) < 0.02
    assert (nn.LayerNorm(4).weight.numpy() == 1).all()


def test_init_functions() -> None:
    t = nn.Parameter(ttorch.empty(300, 200))
    nn.init.xavier_uniform_(t)
    bound = np.sqrt(6 / 500)
    assert np.abs(t.numpy()).max() <= bound and abs(t.numpy().std() - bound / np.sqrt(3)) < 2e-3
    nn.init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu")
    assert abs(t.numpy().std() - np.sqrt(2 / 300)) < 2e-3 and t.requires_grad
    nn.init.trunc_normal_(t, std=0.5, a=-0.4, b=0.4)
    assert np.abs(t.numpy()).max() <= 0.4
    nn.init.zeros_(t)
    assert (t.numpy() == 0).all()
    nn.init.constant_(t, 0.5)
    assert (t.numpy() == 0.5).all()
    small = nn.Parameter(ttorch.empty(12, 8))
    nn.init.orthogonal_(small)
    q = small.numpy()
    np.testing.assert_allclose(q.T @ q, np.eye(8), atol=1e-4)
    assert nn.init.calculate_gain("leaky_relu", 0.2) == torch.nn.init.calculate_gain(
        "leaky_relu", 0.2)


def test_clip_grad_norm() -> None:
    torch.manual_seed(0)
    ref, tiny = torch.nn.Linear(5, 3), nn.Linear(5, 3)
    same_weights(tiny, ref)
    x = rand(4, 5)
    (ref(torch.tensor(x)) * 10).sum().backward()
    (tiny(Tensor(x)) * 10).sum().backward()
    n1 = torch.nn.utils.clip_grad_norm_(ref.parameters(), 1.0)
    n2 = nn.utils.clip_grad_norm_(tiny.parameters(), 1.0)
    np.testing.assert_allclose(n2.item(), n1.item(), rtol=1e-5)
    np.testing.assert_allclose(tiny.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-5)


def test_functional_names() -> None:
    x = rand(2, 3, 6, 6)
    tx = torch.tensor(x)
    for name, args in (("relu", ()), ("softmax", (1,)), ("max_pool2d", (2,)),
                       ("avg_pool2d", (3, 1, 1)), ("adaptive_avg_pool2d", (2,)),
                       ("dropout", (0.5, False)), ("pad", ((1, 2),)), ("normalize", ()),
                       ("gelu", ()), ("log_softmax", (-1,))):
        np.testing.assert_allclose(getattr(TF, name)(Tensor(x), *args).numpy(),
                                   getattr(torch.nn.functional, name)(tx, *args).numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=name)
    t = rng_int = np.array([1, 0, 3])
    np.testing.assert_array_equal(TF.one_hot(ttorch.tensor(rng_int)).numpy(),
                                  torch.nn.functional.one_hot(torch.tensor(t)).numpy())


# --- recurrent layers and attention ------------------------------------------------------------

RECURRENT = [
    ("LSTM(4, 5)", lambda m: m.LSTM(4, 5), (3, 2, 4), False),
    ("LSTM(4, 5, num_layers=2, batch_first=True) with initial states",
     lambda m: m.LSTM(4, 5, num_layers=2, batch_first=True), (2, 3, 4), True),
    ("LSTM(3, 4, bidirectional=True)", lambda m: m.LSTM(3, 4, bidirectional=True), (2, 2, 3),
     False),
    ("GRU(4, 6, num_layers=2)", lambda m: m.GRU(4, 6, num_layers=2), (3, 2, 4), True),
    ("GRU(4, 3, batch_first=True, bias=False)", lambda m: m.GRU(4, 3, batch_first=True,
                                                                bias=False), (2, 5, 4), False),
    ("RNN(3, 4, nonlinearity='relu')", lambda m: m.RNN(3, 4, nonlinearity="relu"), (3, 2, 3),
     False),
    ("GRU(4, 5) unbatched", lambda m: m.GRU(4, 5), (3, 4), True),
]


@pytest.mark.parametrize("what, make, shape, with_state", RECURRENT,
                         ids=[w for w, *_ in RECURRENT])
def test_recurrent_as_torch(what: str, make: Any, shape: tuple[int, ...],
                            with_state: bool) -> None:
    torch.manual_seed(0)
    ref, tiny = make(torch.nn), make(nn)
    assert list(tiny.state_dict()) == list(ref.state_dict())
    same_weights(tiny, ref)
    x = rand(*shape, seed=7)
    tx, fx = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
    args_t: list[Any] = [tx]
    args_f: list[Any] = [fx]
    if with_state:
        layers = ref.num_layers * (2 if ref.bidirectional else 1)
        batch = () if len(shape) == 2 else (shape[0] if ref.batch_first else shape[1],)
        h = rand(layers, *batch, ref.hidden_size, seed=8)
        if isinstance(ref, torch.nn.LSTM):
            args_t.append((torch.tensor(h), torch.tensor(h * 2)))
            args_f.append((Tensor(h), Tensor(h * 2)))
        else:
            args_t.append(torch.tensor(h))
            args_f.append(Tensor(h))
    (out_t, state_t), (out_f, state_f) = ref(*args_t), tiny(*args_f)
    np.testing.assert_allclose(out_f.numpy(), out_t.detach().numpy(), rtol=1e-4, atol=1e-5)
    states_t = state_t if isinstance(state_t, tuple) else (state_t,)
    states_f = state_f if isinstance(state_f, tuple) else (state_f,)
    for a, b in zip(states_f, states_t):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-4, atol=1e-5)
    (out_t.sum() + states_t[0].square().sum()).backward()
    (out_f.sum() + states_f[0].square().sum()).backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-4)
    for (name, p), (_, q) in zip(tiny.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3, atol=1e-4,
                                   err_msg=name)


def test_lstm_cell_as_torch() -> None:
    torch.manual_seed(0)
    ref, tiny = torch.nn.LSTMCell(3, 4), nn.LSTMCell(3, 4)
    same_weights(tiny, ref)
    x = rand(2, 3)
    h_t, c_t = ref(torch.tensor(x))
    h_f, c_f = tiny(Tensor(x))
    np.testing.assert_allclose(h_f.numpy(), h_t.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c_f.numpy(), c_t.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_as_torch(batch_first: bool) -> None:
    torch.manual_seed(0)
    ref = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    tiny = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    assert list(tiny.state_dict()) == list(ref.state_dict())
    same_weights(tiny, ref)
    q, k = rand(3, 2, 8, seed=1), rand(4, 2, 8, seed=2)
    if batch_first:
        q, k = q.transpose(1, 0, 2).copy(), k.transpose(1, 0, 2).copy()
    mask = np.triu(np.ones((3, 4), bool), 2)
    pad = np.array([[False, False, False, True], [False, False, False, False]])
    out_t, w_t = ref(torch.tensor(q), torch.tensor(k), torch.tensor(k),
                     attn_mask=torch.tensor(mask), key_padding_mask=torch.tensor(pad))
    out_f, w_f = tiny(Tensor(q), Tensor(k), Tensor(k), attn_mask=Tensor(mask),
                      key_padding_mask=Tensor(pad))
    np.testing.assert_allclose(out_f.numpy(), out_t.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w_f.numpy(), w_t.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_as_torch(norm_first: bool) -> None:
    torch.manual_seed(0)
    ref = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, batch_first=True, norm_first=norm_first), 2,
        enable_nested_tensor=False)
    tiny = nn.TransformerEncoder(nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, batch_first=True, norm_first=norm_first), 2)
    assert list(tiny.state_dict()) == list(ref.state_dict())
    w0, w1 = tiny.layers[0].linear1.weight, tiny.layers[1].linear1.weight
    assert w0 is not w1 and (w0.numpy() == w1.numpy()).all()  # copies, as torch's
    same_weights(tiny, ref)
    x = rand(2, 5, 8)
    pad = np.array([[False] * 5, [False] * 3 + [True] * 2])
    tx, fx = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
    out_t = ref(tx, src_key_padding_mask=torch.tensor(pad))
    out_f = tiny(fx, src_key_padding_mask=Tensor(pad))
    np.testing.assert_allclose(out_f.numpy(), out_t.detach().numpy(), rtol=1e-4, atol=1e-5)
    out_t.square().sum().backward()
    out_f.square().sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-4)
