"""Linear and Conv2d: the forward pass, and the gradients of the input, the weight and the bias,
as torch.nn.Linear and torch.nn.Conv2d give them with the same weights."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from chapters.grading import expect_close
from tinyfw import Tensor, nn

pytestmark = pytest.mark.task("10.linear_conv")


def data(*shape: int, seed: int = 0) -> np.ndarray:
    """Standard normal float32 values of a shape."""
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def copy_into_torch(layer: Any, module: torch.nn.Module, names: list[str]) -> None:
    """Gives the torch module the tinyfw layer's parameter values."""
    with torch.no_grad():
        for name in names:
            getattr(module, name).copy_(torch.tensor(getattr(layer, name).numpy()))


def compare(layer: Any, module: torch.nn.Module, x: np.ndarray, names: list[str],
            what: str) -> None:
    """The same input through both: the output, then (after backward of a weighted sum of it)
    the gradients of the input and of each named parameter."""
    __tracebackhide__ = True
    tx, fx = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
    expected, out = module(tx), layer(fx)
    assert isinstance(out, Tensor), f"{what}: the layer should return a Tensor, got {out!r}"
    expect_close(out, expected.detach().numpy(), rtol=1e-4, atol=1e-5, dtype=np.float32,
                 what=f"{what}: output for an input of shape {x.shape}")
    weights = np.random.default_rng(1).uniform(0.5, 1.5, size=expected.shape).astype(np.float32)
    (expected * torch.tensor(weights)).sum().backward()
    (out * Tensor(weights)).sum().backward()
    expect_close(fx.grad, tx.grad.numpy(), rtol=1e-3, atol=1e-4,
                 what=f"{what}: gradient of the input")
    for name in names:
        grad = getattr(layer, name).grad
        assert grad is not None, f"{what}: {name} got no gradient; does the output use it?"
        expect_close(grad, getattr(module, name).grad.numpy(), rtol=1e-3, atol=1e-4,
                     what=f"{what}: gradient of {name}")


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_linear_matches_torch(bias: bool) -> None:
    """x @ weight.T + bias, weight (out_features, in_features) = (4, 6), bias optional."""
    Tensor.manual_seed(0)
    layer, module = nn.Linear(6, 4, bias=bias), torch.nn.Linear(6, 4, bias=bias)
    names = ["weight", "bias"] if bias else ["weight"]
    copy_into_torch(layer, module, names)
    compare(layer, module, data(3, 6), names, f"Linear(6, 4, bias={bias})")


def test_linear_any_leading_axes() -> None:
    """The last axis is the features; every axis before it is a batch axis, and a 1-D input
    is a single sample."""
    Tensor.manual_seed(1)
    layer, module = nn.Linear(5, 3), torch.nn.Linear(5, 3)
    copy_into_torch(layer, module, ["weight", "bias"])
    for shape in [(2, 4, 5), (5,), (1, 2, 3, 5)]:
        for p in (layer.weight, layer.bias):
            p.grad = None
        module.zero_grad()
        compare(layer, module, data(*shape, seed=len(shape)), ["weight", "bias"],
                "Linear(5, 3)")


def test_linear_square_weight_not_transposed() -> None:
    """With in_features == out_features a missing transpose gives the right shape but wrong
    values: weight[j] is the row of output j."""
    layer = nn.Linear(3, 3, bias=False)
    layer.weight.assign(Tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]))
    out = layer(Tensor([[1.0, 2.0, 4.0]]))
    expect_close(out, np.array([[1.0, 3.0, 7.0]], np.float32),
                 what="Linear(3, 3) with weight [[1,0,0],[1,1,0],[1,1,1]] on x = [1, 2, 4]: "
                      "output j is weight[j] . x")


CONVS = [  # in, out, kernel, keyword arguments: every option at a value of its own
    (3, 4, 3, {}),
    (2, 3, (2, 3), {"bias": False}),
    (3, 2, 3, {"stride": 2}),
    (3, 2, 3, {"padding": 1}),
    (2, 2, 3, {"padding": (2, 1)}),
    (2, 3, 2, {"dilation": 2}),
    (4, 6, 3, {"groups": 2}),
    (4, 6, (3, 2), {"stride": (2, 1), "padding": 1, "dilation": (1, 2), "groups": 2}),
    (4, 4, 3, {"stride": 3, "padding": 2, "dilation": 2, "groups": 4}),
]


@pytest.mark.parametrize("cin, cout, kernel, kwargs", CONVS, ids=[str(c[3]) for c in CONVS])
def test_conv2d_matches_torch(cin: int, cout: int, kernel: int | tuple[int, int],
                              kwargs: dict[str, Any]) -> None:
    """Conv2d with each of stride, padding, dilation and groups, and all of them at once."""
    Tensor.manual_seed(0)
    layer, module = nn.Conv2d(cin, cout, kernel, **kwargs), torch.nn.Conv2d(cin, cout, kernel,
                                                                            **kwargs)
    names = ["weight", "bias"] if kwargs.get("bias", True) else ["weight"]
    copy_into_torch(layer, module, names)
    args = ", ".join([str(cin), str(cout), str(kernel)] + [f"{k}={v}" for k, v in kwargs.items()])
    compare(layer, module, data(2, cin, 9, 8), names, f"Conv2d({args})")


def test_conv2d_is_a_cross_correlation() -> None:
    """The kernel is not flipped: output (i, j) is sum over (a, b) of x[i + a, j + b] * w[a, b],
    as in torch."""
    layer = nn.Conv2d(1, 1, (1, 2), bias=False)
    layer.weight.assign(Tensor([[[[1.0, 10.0]]]]))
    out = layer(Tensor([[[[1.0, 2.0, 3.0]]]]))
    expect_close(out, np.array([[[[21.0, 32.0]]]], np.float32),
                 what="Conv2d with weight [1, 10] over [1, 2, 3]")
