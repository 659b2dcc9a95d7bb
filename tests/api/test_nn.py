"""Chapter 10's functional ops (conv2d, pooling, dropout, normalization) and layers give
torch.nn's values and gradients."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.helpers import assert_close, check
from tinyfw import Tensor, dtypes, nn

# ---------------------------------------------------------------------------------------------
# windows


@pytest.mark.parametrize("size, kernel, stride, dilation", [
    ((5, 6), (2, 3), (1, 1), (1, 1)),    # overlapping windows
    ((7, 6), (2, 2), (2, 3), (1, 1)),    # no overlap: blocks of `stride`
    ((9, 8), (3, 2), (2, 1), (2, 3)),    # dilation
    ((15,), (2,), (6,), (2,)),           # a stride so long the rows must be two copies long
])
def test_pool_windows(size: tuple[int, ...], kernel: tuple[int, ...], stride: tuple[int, ...],
                      dilation: tuple[int, ...]) -> None:
    """_pool gives (..., *out, *kernel): out[o, k] = x[o * stride + k * dilation]."""
    x = np.arange(2 * math.prod(size), dtype=np.float32).reshape(2, *size)
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    ref = np.lib.stride_tricks.sliding_window_view(x, span, axis=tuple(range(1, len(size) + 1)))
    ref = ref[(slice(None), *[slice(None, None, s) for s in stride],
               *[slice(None, None, d) for d in dilation])]
    out = Tensor(x)._pool(kernel, stride, dilation)
    assert out.shape == ref.shape
    np.testing.assert_array_equal(out.numpy(), ref)


def test_pool_kernel_too_large() -> None:
    """A kernel that does not fit in the input raises."""
    with pytest.raises(RuntimeError):
        Tensor.ones(1, 1, 2, 2)._pool((3, 3))


# ---------------------------------------------------------------------------------------------
# convolution


CONV = [  # x shape, weight shape, keyword arguments
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((2, 3, 8, 7), (4, 3, 3, 3), {"stride": 2, "padding": 1}),
    ((2, 4, 9, 8), (6, 2, 3, 2), {"groups": 2, "dilation": 2, "padding": (1, 2)}),
    ((1, 2, 9, 10), (3, 2, 2, 3), {"stride": (2, 1), "dilation": (1, 2)}),
    ((2, 3, 5, 5), (2, 3, 1, 1), {"stride": 3}),
    ((2, 4, 6, 6), (4, 1, 3, 3), {"groups": 4, "padding": 1}),
]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV, ids=[str(c[2]) for c in CONV])
def test_conv2d(x_shape: tuple[int, ...], w_shape: tuple[int, ...], kwargs: dict[str, Any],
                bias: bool) -> None:
    """conv2d: values and the gradients of input, weight and bias."""
    kw = dict(kwargs)
    groups, stride, dilation, padding = (kw.pop(k, d) for k, d in (
        ("groups", 1), ("stride", 1), ("dilation", 1), ("padding", 0)))
    inputs = [x_shape, w_shape] + ([(w_shape[0],)] if bias else [])
    check(inputs,
          lambda x, w, b=None: F.conv2d(x, w, b, stride, padding, dilation, groups),
          lambda x, w, b=None: x.conv2d(w, b, groups, stride, dilation, padding),
          atol=1e-5, grad_atol=1e-4)


@pytest.mark.parametrize("kwargs", [{}, {"padding": 1, "groups": 2},
                                    {"dilation": 2, "padding": (2, 1)}, {"padding": "same"}],
                         ids=str)
def test_conv2d_input_gradient_is_one_convolution(kwargs: dict[str, Any]) -> None:
    """A stride-1 convolution's input gradient is the transposed convolution (chapter 10,
    tinyfw/mixin/conv_gradient.py): one reduce kernel, not the products per window and a
    col2im summing them back through _pool's repeat; equal to torch's, as are the weight's and
    the bias's, with and without the input's gradient asked for."""
    rng = np.random.default_rng(0)
    w_shape = (6, 4 // kwargs.get("groups", 1), 3, 3)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 4, 9, 8), w_shape, (6,)))
    for input_grad in (True, False):
        ours = [Tensor(a, requires_grad=input_grad or i > 0) for i, a in enumerate((x, w, b))]
        theirs = [torch.tensor(a, requires_grad=input_grad or i > 0) for i, a in
                  enumerate((x, w, b))]
        out = ours[0].conv2d(ours[1], ours[2], **kwargs)
        expected = F.conv2d(*theirs, **kwargs)
        dy = rng.standard_normal(expected.shape).astype(np.float32)
        (out * Tensor(dy)).sum().backward()
        (expected * torch.tensor(dy)).sum().backward()
        for a, e in zip(ours, theirs):
            if e.grad is not None:
                assert a.grad is not None
                np.testing.assert_allclose(a.grad.numpy(), e.grad.numpy(), atol=1e-4)
    x_ = Tensor(x, requires_grad=True)
    x_.conv2d(Tensor(w), **kwargs).sum().backward()
    assert x_.grad is not None
    kernels = [item.name for item in x_.grad.schedule()]
    assert len([name for name in kernels if name.startswith("r_")]) == 1, kernels


def test_conv2d_torch_style_padding() -> None:
    """A 4-tuple padding is torch's flat (left, right, top, bottom)."""
    check([(1, 2, 5, 6), (3, 2, 3, 3)],
          lambda x, w: F.conv2d(F.pad(x, (1, 0, 2, 1)), w),
          lambda x, w: x.conv2d(w, padding=(1, 0, 2, 1)), atol=1e-5, grad_atol=1e-4)


def test_conv2d_bad_shapes() -> None:
    """Channels that don't match the weight (or groups) raise."""
    with pytest.raises(RuntimeError):
        Tensor.ones(1, 3, 5, 5).conv2d(Tensor.ones(2, 2, 3, 3))
    with pytest.raises(RuntimeError):
        Tensor.ones(1, 4, 5, 5).conv2d(Tensor.ones(3, 2, 3, 3), groups=2)


# ---------------------------------------------------------------------------------------------
# pooling


POOL = [  # x shape, keyword arguments (the kernel is 2x2 by default, in tinyfw only)
    ((2, 3, 6, 6), {}),
    ((2, 2, 7, 5), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((1, 2, 9, 8), {"kernel_size": (2, 3), "stride": 1, "dilation": 2}),
    ((1, 2, 7, 7), {"kernel_size": 2, "stride": (1, 3)}),
]


@pytest.mark.parametrize("shape, kwargs", POOL, ids=[str(p[1]) for p in POOL])
def test_max_pool2d(shape: tuple[int, ...], kwargs: dict[str, Any]) -> None:
    """max_pool2d: values, and the gradient to each window's maximum."""
    check([shape], lambda x: F.max_pool2d(x, **{"kernel_size": 2, **kwargs}),
          lambda x: x.max_pool2d(**kwargs))


AVG_POOL = [(shape, kwargs, include) for shape, kwargs in POOL if "dilation" not in kwargs
            for include in ([True, False] if "padding" in kwargs else [True])]


@pytest.mark.parametrize("shape, kwargs, count_include_pad", AVG_POOL,
                         ids=[f"{p[1]}-{p[2]}" for p in AVG_POOL])
def test_avg_pool2d(shape: tuple[int, ...], kwargs: dict[str, Any],
                    count_include_pad: bool) -> None:
    """avg_pool2d, counting the padding in the window's size or not."""
    check([shape], lambda x: F.avg_pool2d(x, **{"kernel_size": 2, **kwargs},
                                          count_include_pad=count_include_pad),
          lambda x: x.avg_pool2d(**kwargs, count_include_pad=count_include_pad))


# ---------------------------------------------------------------------------------------------
# dropout


@pytest.fixture
def training() -> Iterator[None]:
    """Tensor.training is True during the test."""
    with Tensor.train():
        yield


@pytest.mark.parametrize("apply", [lambda x, p: x.dropout(p), lambda x, p: nn.Dropout(p)(x)],
                         ids=["functional", "layer"])
def test_dropout_training(training: None, apply: Callable[[Tensor, float], Tensor]) -> None:
    """While training, about p of the values are zeroed, the rest scaled by 1 / (1 - p), and the
    gradient is the same mask, scaled."""
    Tensor.manual_seed(0)
    p = 0.25
    x_np = np.random.default_rng(0).uniform(1, 2, size=(40, 50)).astype(np.float32)
    x = Tensor(x_np, requires_grad=True)
    out = apply(x, p)
    out.sum().backward()
    y, grad = out.numpy(), x.grad.numpy()
    kept = y != 0
    assert abs(1 - kept.mean() - p) < 0.03
    np.testing.assert_allclose(y[kept], x_np[kept] / (1 - p), rtol=1e-6)
    np.testing.assert_allclose(grad, kept / (1 - p), rtol=1e-6)
    assert not np.array_equal(apply(x, p).numpy() != 0, kept)  # a new mask each call


def test_dropout_eval_is_identity() -> None:
    """Outside training (the default), dropout returns its input untouched."""
    x = Tensor.randn(4, 5)
    assert not Tensor.training
    assert x.dropout(0.5) is x and nn.Dropout(0.9)(x) is x
    with Tensor.train():
        with Tensor.train(False):
            assert x.dropout(0.5) is x


def test_dropout_edge_probabilities(training: None) -> None:
    """p = 0 keeps everything, p = 1 zeroes everything; p outside [0, 1] is an error."""
    x = Tensor.randn(3, 4)
    assert x.dropout(0.0) is x
    np.testing.assert_array_equal(x.dropout(1.0).numpy(), np.zeros((3, 4)))
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError):
            x.dropout(p)


# ---------------------------------------------------------------------------------------------
# normalization and composition


@pytest.mark.parametrize("shape, axis", [((3, 8), -1), ((2, 3, 4, 5), (-2, -1))])
def test_layernorm_functional(shape: tuple[int, ...], axis: int | tuple[int, ...]) -> None:
    """layernorm is F.layer_norm without weight and bias."""
    normalized = shape[-len(axis):] if isinstance(axis, tuple) else shape[-1:]
    check([shape], lambda x: F.layer_norm(x, normalized, eps=1e-5),
          lambda x: x.layernorm(axis, eps=1e-5), atol=1e-5, grad_atol=1e-4)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4, 5)])
def test_batchnorm_functional(shape: tuple[int, ...]) -> None:
    """batchnorm with given statistics is F.batch_norm in evaluation, and its gradients reach
    every argument, the statistics too."""
    eps, channels = 1e-5, (shape[1],)
    rng = np.random.default_rng(3)
    mean = rng.uniform(-1, 1, channels).astype(np.float32)
    var = rng.uniform(0.5, 2, channels).astype(np.float32)
    check([shape, channels, channels],
          lambda x, w, b: F.batch_norm(x, torch.tensor(mean), torch.tensor(var), w, b, eps=eps),
          lambda x, w, b: x.batchnorm(w, b, Tensor(mean), (Tensor(var) + eps).rsqrt()),
          atol=1e-5)
    per_channel = (1, -1) + (1,) * (len(shape) - 2)

    def written_out(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, m: torch.Tensor,
                    v: torch.Tensor) -> torch.Tensor:
        invstd = (v.abs() + 0.5).rsqrt()
        return (x - m.reshape(per_channel)) * invstd.reshape(per_channel) * \
            w.reshape(per_channel) + b.reshape(per_channel)

    check([shape, channels, channels, channels, channels], written_out,
          lambda x, w, b, m, v: x.batchnorm(w, b, m, (v.abs() + 0.5).rsqrt()), atol=1e-5)
    check([shape, channels, channels], lambda x, m, v: written_out(x, torch.ones(channels),
                                                                   torch.zeros(channels), m, v),
          lambda x, m, v: x.batchnorm(None, None, m, (v.abs() + 0.5).rsqrt()), atol=1e-5)


def test_sequential() -> None:
    """sequential applies each callable in order."""
    x = Tensor([[-1.0, 2.0]])
    out = x.sequential([lambda t: t * 3, Tensor.relu, lambda t: t + 1])
    np.testing.assert_array_equal(out.numpy(), [[1.0, 7.0]])
    assert x.sequential([]) is x


# ---------------------------------------------------------------------------------------------
# layers: the same weights in tinyfw and torch, then forward and backward through both


def _copy_params(tiny: Any, ref: torch.nn.Module, names: list[str]) -> None:
    """Give the torch module tinyfw's parameter values."""
    with torch.no_grad():
        for name in names:
            getattr(ref, name).copy_(torch.tensor(getattr(tiny, name).numpy()))


def _compare(tiny: Any, ref: torch.nn.Module, x_np: np.ndarray, names: list[str],
             atol: float = 1e-5, grad_atol: float = 1e-4, x_grad: bool = True) -> None:
    """The same input through both: outputs, input gradient and parameter gradients agree."""
    __tracebackhide__ = True
    tx = torch.tensor(x_np, requires_grad=x_grad)
    fx = Tensor(x_np, requires_grad=x_grad)
    t_out, f_out = ref(tx), tiny(fx)
    assert_close(f_out.numpy(), t_out.detach().numpy(), atol, 1e-4, "forward")
    weights = np.random.default_rng(1).uniform(0.5, 1.5, size=t_out.shape).astype(np.float32)
    (t_out * torch.tensor(weights)).sum().backward()
    (f_out * Tensor(weights)).sum().backward()
    if x_grad:
        assert_close(fx.grad.numpy(), tx.grad.numpy(), grad_atol, 1e-3, "input gradient")
    for name in names:
        assert_close(getattr(tiny, name).grad.numpy(), getattr(ref, name).grad.numpy(),
                     grad_atol, 1e-3, f"gradient of {name}")


def _input(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _params_require_grad(layer: Any, names: list[str]) -> None:
    for name in names:
        assert getattr(layer, name).requires_grad, name


@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias: bool) -> None:
    """Linear: weight (out, in) in +-1/sqrt(in), and torch.nn.Linear's values and gradients."""
    Tensor.manual_seed(0)
    layer = nn.Linear(6, 4, bias=bias)
    assert layer.weight.shape == (4, 6) and (layer.bias is None) != bias
    assert np.abs(layer.weight.numpy()).max() <= 1 / math.sqrt(6)
    names = ["weight", "bias"] if bias else ["weight"]
    _params_require_grad(layer, names)
    ref = torch.nn.Linear(6, 4, bias=bias)
    _copy_params(layer, ref, names)
    _compare(layer, ref, _input(3, 6), names)
    _compare(layer, ref, _input(2, 5, 6), names)  # more batch axes


CONV_LAYERS = [  # in, out, kernel, keyword arguments
    (3, 4, 3, {}),
    (4, 6, (3, 2), {"stride": 2, "padding": 1, "groups": 2}),
    (2, 3, 3, {"dilation": 2, "padding": (2, 1), "bias": False}),
]


@pytest.mark.parametrize("cin, cout, kernel, kwargs", CONV_LAYERS,
                         ids=[str(c[3]) for c in CONV_LAYERS])
def test_conv2d_layer(cin: int, cout: int, kernel: int | tuple[int, int],
                      kwargs: dict[str, Any]) -> None:
    """Conv2d: weight (out, in / groups, kh, kw), torch's init bound, values and gradients."""
    Tensor.manual_seed(0)
    layer = nn.Conv2d(cin, cout, kernel, **kwargs)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    groups = kwargs.get("groups", 1)
    assert layer.weight.shape == (cout, cin // groups, kh, kw)
    assert np.abs(layer.weight.numpy()).max() <= 1 / math.sqrt(cin // groups * kh * kw)
    names = ["weight", "bias"] if kwargs.get("bias", True) else ["weight"]
    _params_require_grad(layer, names)
    ref = torch.nn.Conv2d(cin, cout, kernel, **kwargs)
    _copy_params(layer, ref, names)
    _compare(layer, ref, _input(2, cin, 7, 8), names)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (6, 3)], ids=["2d", "1d"])
def test_batchnorm_train_then_eval(shape: tuple[int, ...]) -> None:
    """BatchNorm in training: batch statistics (values and gradients as torch's), running
    statistics moved by momentum (variance unbiased), num_batches_tracked counted. In
    evaluation: the running statistics."""
    layer = nn.BatchNorm2d(3, momentum=0.2)
    ref = torch.nn.BatchNorm2d(3, momentum=0.2) if len(shape) == 4 else \
        torch.nn.BatchNorm1d(3, momentum=0.2)
    with torch.no_grad():  # weights other than 1 and 0, in both
        ref.weight.uniform_(0.5, 1.5), ref.bias.uniform_(-0.5, 0.5)
    layer.weight.assign(Tensor(ref.weight.detach().numpy()))
    layer.bias.assign(Tensor(ref.bias.detach().numpy()))
    ref.train()
    with Tensor.train():
        for step in range(2):
            _compare(layer, ref, _input(*shape, seed=step) * 2 + 1, ["weight", "bias"])
            layer.weight.grad = layer.bias.grad = None
            ref.zero_grad()
    Tensor.realize_all(layer.running_mean, layer.running_var, layer.num_batches_tracked)
    for name in ("running_mean", "running_var"):
        assert_close(getattr(layer, name).numpy(), getattr(ref, name).numpy(), 1e-5, 1e-5, name)
    assert layer.num_batches_tracked.item() == 2
    ref.eval()
    _compare(layer, ref, _input(*shape, seed=5), ["weight", "bias"])


def test_batchnorm_options() -> None:
    """affine=False has no parameters; without running statistics the batch's are used even in
    evaluation."""
    layer = nn.BatchNorm(3, affine=False, track_running_stats=False)
    assert layer.weight is None and layer.bias is None
    ref = torch.nn.BatchNorm2d(3, affine=False, track_running_stats=False).eval()
    _compare(layer, ref, _input(2, 3, 4, 4), [])


@pytest.mark.parametrize("normalized_shape, affine", [(5, True), ((4, 5), True), (5, False)])
def test_layernorm_layer(normalized_shape: int | tuple[int, ...], affine: bool) -> None:
    """LayerNorm over the last axes, with or without the elementwise weight and bias."""
    layer = nn.LayerNorm(normalized_shape, elementwise_affine=affine)
    ref = torch.nn.LayerNorm(normalized_shape, elementwise_affine=affine)
    names = ["weight", "bias"] if affine else []
    if affine:
        with torch.no_grad():
            ref.weight.uniform_(0.5, 1.5), ref.bias.uniform_(-0.5, 0.5)
        layer.weight.assign(Tensor(ref.weight.detach().numpy()))
        layer.bias.assign(Tensor(ref.bias.detach().numpy()))
        _params_require_grad(layer, names)
    _compare(layer, ref, _input(2, 3, 4, 5), names)
    with pytest.raises(RuntimeError):
        layer(Tensor.ones(2, 3))


def test_embedding() -> None:
    """Embedding picks rows; a row picked twice gets both gradients."""
    Tensor.manual_seed(0)
    layer = nn.Embedding(7, 4)
    assert layer.weight.shape == (7, 4) and layer.weight.requires_grad
    ref = torch.nn.Embedding(7, 4)
    _copy_params(layer, ref, ["weight"])
    idx = np.array([[1, 3, 3], [0, 6, 1]])
    t_out, f_out = ref(torch.tensor(idx)), layer(Tensor(idx, dtype=dtypes.int32))
    assert_close(f_out.numpy(), t_out.detach().numpy(), 0, 0, "forward")
    weights = np.random.default_rng(1).uniform(0.5, 1.5, size=t_out.shape).astype(np.float32)
    (t_out * torch.tensor(weights)).sum().backward()
    (f_out * Tensor(weights)).sum().backward()
    assert_close(layer.weight.grad.numpy(), ref.weight.grad.numpy(), 1e-6, 1e-6, "gradient")


def test_small_conv_net(training: None) -> None:
    """Conv2d, BatchNorm (training), relu, max_pool2d, flatten and Linear together: the loss
    and every parameter's gradient, as torch's."""
    Tensor.manual_seed(0)
    tiny = [nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.Conv2d(4, 6, 3, padding=1),
            nn.Linear(6 * 3 * 3, 5)]
    ref = [torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Conv2d(4, 6, 3, padding=1),
           torch.nn.Linear(6 * 3 * 3, 5)]
    for t, r in zip(tiny, ref):
        _copy_params(t, r, ["weight", "bias"])
    x_np, labels = _input(4, 1, 8, 8), np.array([0, 3, 4, 1])
    t_logits = torch.nn.Sequential(ref[0], ref[1], torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                   ref[2], torch.nn.ReLU(), torch.nn.Flatten(),
                                   ref[3])(torch.tensor(x_np))
    f_logits = Tensor(x_np).sequential([tiny[0], tiny[1], Tensor.relu, Tensor.max_pool2d, tiny[2],
                                        Tensor.relu, lambda t: t.flatten(1), tiny[3]])
    t_loss = F.cross_entropy(t_logits, torch.tensor(labels))
    f_loss = f_logits.sparse_categorical_crossentropy(Tensor(labels, dtype=dtypes.int32))
    assert_close(f_loss.numpy(), t_loss.detach().numpy(), 1e-5, 1e-5, "loss")
    t_loss.backward()
    f_loss.backward()
    for i, (t, r) in enumerate(zip(tiny, ref)):
        for name in ("weight", "bias"):
            assert_close(getattr(t, name).grad.numpy(), getattr(r, name).grad.numpy(), 1e-5,
                         1e-3, f"layer {i}: gradient of {name}")
