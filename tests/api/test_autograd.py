"""Autograd semantics: what backward, .grad, requires_grad, detach and gradient() promise."""
from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from tinyfw import Tensor, dtypes


def param(values, dtype=dtypes.float32) -> Tensor:
    """A leaf that requires grad."""
    return Tensor(np.array(values), dtype=dtype, requires_grad=True)


def test_backward_fills_grad_of_leaves() -> None:
    """backward sets .grad of every leaf that requires grad, with the leaf's shape and dtype."""
    x, w = param([[1.0, 2.0], [3.0, 4.0]]), param([0.5, -1.0])
    (x * w).sum().backward()
    assert x.grad is not None and x.grad.shape == (2, 2) and x.grad.dtype == dtypes.float32
    np.testing.assert_allclose(x.grad.numpy(), [[0.5, -1.0], [0.5, -1.0]])
    np.testing.assert_allclose(w.grad.numpy(), [4.0, 6.0])


def test_grad_accumulates_across_backward_calls() -> None:
    """A second backward adds to .grad; setting .grad = None starts again."""
    x = param([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0, 12.0])
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [7.0, 11.0, 15.0])
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0, 3.0])


def test_backward_twice_on_the_same_graph() -> None:
    """The graph is not freed by backward: the same loss can be differentiated again."""
    x = param([2.0])
    loss = (x * x * x).sum()
    loss.backward()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [24.0])


def test_tensor_used_twice() -> None:
    """Uses of one tensor add their gradients."""
    x = param([1.0, -2.0])
    (x * x + x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, -3.0])
    y = param([3.0])
    (y + y + y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [3.0])


def test_diamond_graph() -> None:
    """A value reaching the loss along two paths gets both contributions."""
    x = param([1.5])
    h = x.exp()
    ((h * 2) + (h * h)).sum().backward()
    e = np.exp(1.5)
    np.testing.assert_allclose(x.grad.numpy(), [2 * e + 2 * e * e], rtol=1e-6)


def test_detach_stops_gradients() -> None:
    """A detached tensor is a constant: no gradient flows back through it."""
    x = param([2.0, 3.0])
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    np.testing.assert_array_equal(d.numpy(), x.numpy())
    (d * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 3.0])  # d/dx (c * x) = c


def test_requires_grad_propagation_and_is_leaf() -> None:
    """Results require grad exactly when an input does; only those are non-leaves."""
    x, c = param([1.0, 2.0]), Tensor([3.0, 4.0])
    assert x.requires_grad and x.is_leaf
    assert not c.requires_grad and c.is_leaf
    y = x * c
    assert y.requires_grad and not y.is_leaf
    z = c * 2
    assert not z.requires_grad and z.is_leaf
    for out in (x.sum(), x.reshape(2, 1), x[0], x.exp(), x.double(), Tensor.cat(c, x), x @ c):
        assert out.requires_grad and not out.is_leaf
    assert Tensor([1.0], requires_grad=True).requires_grad
    assert Tensor.zeros(2, requires_grad=True).requires_grad
    assert Tensor.randn(2, requires_grad=True).is_leaf


def test_requires_grad_can_be_set_on_leaves_only() -> None:
    """requires_grad may be turned on and off on a leaf; on a result it is an error."""
    x = Tensor([1.0, 2.0])
    x.requires_grad = True
    assert x.requires_grad
    x.requires_grad = False
    assert not x.requires_grad
    y = param([1.0]) * 2
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False


def test_results_of_non_float_ops_do_not_require_grad() -> None:
    """Casting to an int drops requires_grad, as in torch."""
    x = param([1.5, -2.5])
    assert not x.int().requires_grad and not x.cast(dtypes.bool).requires_grad
    assert not x.argmax().requires_grad


def test_comparisons_do_not_require_grad() -> None:
    """Only float results can require grad: a comparison's bool result does not."""
    x = param([1.5, -2.5])
    for out in (x < 0, x == 1.5, x.isnan(), x.any(), (x > 0).sum()):
        assert not out.requires_grad, out
    t = torch.tensor([1.5, -2.5], requires_grad=True)
    assert not (t < 0).requires_grad


def test_non_leaf_grad_stays_none() -> None:
    """Only leaves get .grad filled, as in torch (without retain_grad)."""
    x = param([1.0, 2.0])
    h = x * 2
    (h * h).sum().backward()
    assert h.grad is None
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 16.0])


def test_backward_on_non_scalar_needs_a_gradient() -> None:
    """A non-scalar output needs an explicit gradient, as in torch."""
    x = param([1.0, 2.0])
    y = x * 2
    with pytest.raises(RuntimeError, match="scalar"):
        y.backward()
    with pytest.raises(RuntimeError, match="scalar"):
        (torch.tensor([1.0, 2.0], requires_grad=True) * 2).backward()


def test_backward_with_explicit_gradient() -> None:
    """backward(gradient) is a vector-Jacobian product; a wrong-shaped gradient is an error."""
    x = param([1.0, 2.0, 3.0])
    y = x * x
    y.backward(Tensor([1.0, 0.5, -1.0]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, -6.0])
    with pytest.raises(RuntimeError, match=r"\[2\]"):
        y.backward(Tensor([1.0, 2.0]))
    z = param([[1.0, 2.0]])
    (z * 3).backward(Tensor([[2.0, 2.0]]))
    np.testing.assert_allclose(z.grad.numpy(), [[6.0, 6.0]])


def test_backward_of_one_element_non_scalar() -> None:
    """A one-element output of any shape needs no explicit gradient."""
    x = param([[2.0]])
    (x * x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[4.0]])


def test_backward_without_requires_grad_raises() -> None:
    """backward of a tensor that does not require grad is torch's RuntimeError."""
    with pytest.raises(RuntimeError, match="does not require grad"):
        (Tensor([1.0, 2.0]) * 2).sum().backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        (torch.tensor([1.0, 2.0]) * 2).sum().backward()


def test_gradient_returns_tensors() -> None:
    """y.gradient(x1, x2) gives d y / d x as Tensors, in order, and leaves .grad alone."""
    x1, x2 = param([1.0, 2.0]), param([3.0, -1.0])
    y = (x1 * x2 + x1.exp()).sum()
    g1, g2 = y.gradient(x1, x2)
    assert isinstance(g1, Tensor) and isinstance(g2, Tensor)
    np.testing.assert_allclose(g1.numpy(), np.array([3.0, -1.0]) + np.exp([1.0, 2.0]), rtol=1e-6)
    np.testing.assert_allclose(g2.numpy(), [1.0, 2.0])
    assert x1.grad is None and x2.grad is None
    (g2,) = y.gradient(x2)
    np.testing.assert_allclose(g2.numpy(), [1.0, 2.0])


def test_gradient_of_intermediate_and_of_non_grad_tensors() -> None:
    """gradient() works for intermediate tensors and for tensors that do not require grad."""
    x = Tensor([1.0, 2.0])
    h = x * 3
    y = (h * h).sum()
    (gh, gx) = y.gradient(h, x)
    np.testing.assert_allclose(gh.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(gx.numpy(), [18.0, 36.0])


def test_gradient_can_be_differentiated_again() -> None:
    """A gradient is a lazy tensor too: differentiating it gives second derivatives."""
    x = Tensor([2.0, -1.0])
    (g,) = (x * x * x).sum().gradient(x)
    (gg,) = g.sum().gradient(x)
    np.testing.assert_allclose(g.numpy(), [12.0, 3.0])
    np.testing.assert_allclose(gg.numpy(), [12.0, -6.0])


def test_gradient_wrt_unused_tensor_raises() -> None:
    """Asking for the gradient with respect to a tensor the output does not use is an error."""
    x, unused = param([1.0]), param([2.0])
    y = (x * 2).sum()
    with pytest.raises(RuntimeError):
        y.gradient(x, unused)
    with pytest.raises(RuntimeError):  # torch agrees (allow_unused=False)
        tx, tu = torch.tensor([1.0], requires_grad=True), torch.tensor([2.0], requires_grad=True)
        torch.autograd.grad((tx * 2).sum(), [tx, tu])


def test_backward_skips_unused_leaves() -> None:
    """A leaf that requires grad but is not used keeps .grad None."""
    x, unused = param([1.0]), param([2.0])
    (x * 2).sum().backward()
    assert unused.grad is None and x.grad is not None


@pytest.mark.parametrize("dtype", [dtypes.int32, dtypes.int8, dtypes.uint8, dtypes.bool])
def test_int_tensors_cannot_require_grad(dtype) -> None:
    """Only float tensors can require gradients (torch's RuntimeError)."""
    with pytest.raises(RuntimeError):
        Tensor([1, 0], dtype=dtype, requires_grad=True)
    t = Tensor([1, 0], dtype=dtype)
    with pytest.raises(RuntimeError):
        t.requires_grad = True
    with pytest.raises(RuntimeError):
        torch.tensor([1, 0], requires_grad=True)


@pytest.mark.parametrize("scalar_steps", [False, True])
def test_deep_chain_does_not_recurse(scalar_steps: bool) -> None:
    """A chain of 5,000 ops builds, realizes and differentiates within the recursion limit."""
    limit = sys.getrecursionlimit()
    x = param([1.0, 2.0])
    y = x
    for _ in range(5000):
        y = y + 0.001 if scalar_steps else y + x * 0.001
    loss = y.sum()
    expected = 3.0 + 2 * 5.0 if scalar_steps else 3.0 * (1 + 5.0)
    np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-4)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0] if scalar_steps else [6.0, 6.0],
                               rtol=1e-4)
    assert sys.getrecursionlimit() == limit


def test_realizing_intermediates_before_backward() -> None:
    """numpy(), item() and realize() of a non-leaf keep its graph: backward still works."""
    x = param([1.0, 2.0, 3.0])
    h = x * x
    h.numpy()
    h.realize()
    assert h.requires_grad and not h.is_leaf
    loss = (h * 2).sum()
    assert loss.item() == pytest.approx(28.0)
    loss.realize()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0, 12.0])


def test_realizing_leaf_keeps_it_a_leaf() -> None:
    """A realized parameter is still the leaf whose .grad backward fills."""
    x = param([1.0, 2.0]).realize()
    (x * 5).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


def test_gradient_through_cast_contiguous_and_device_copy() -> None:
    """Gradients flow through casts between floats, contiguous and to(device)."""
    x = param([1.0, 2.0])
    y = (x.double() * 3).contiguous().to("NUMPY").float().to(x.device) * x
    y.sum().backward()
    assert x.grad.dtype == dtypes.float32
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])


def test_gradient_dtype_follows_leaf() -> None:
    """A float64 leaf gets a float64 gradient, even through float32 compute."""
    x = param([1.0, 2.0], dtype=dtypes.float64)
    (x.float() * 2).sum().backward()
    assert x.grad.dtype == dtypes.float64
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_assign_replaces_value_for_the_next_step() -> None:
    """assign gives a parameter a new value (an optimizer step); the next backward uses it."""
    w = param([1.0, -2.0])
    (w * w).sum().backward()
    w.assign(w - 0.25 * w.grad)
    np.testing.assert_allclose(w.numpy(), [0.5, -1.0])
    assert w.requires_grad and w.is_leaf and w.shape == (2,) and w.dtype == dtypes.float32
    w.grad = None
    (w * w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [1.0, -2.0])


def test_assign_casts_and_checks_shape() -> None:
    """assign keeps the tensor's dtype, takes a scalar, and rejects another shape."""
    w = Tensor([1.0, 2.0])
    w.assign(Tensor([3, 4]))
    assert w.dtype == dtypes.float32 and w.tolist() == [3.0, 4.0]
    w.assign(7.0)
    assert w.tolist() == [7.0, 7.0]
    with pytest.raises(RuntimeError, match=r"\[3\]"):
        w.assign(Tensor([1.0, 2.0, 3.0]))


def test_assign_does_not_change_earlier_results() -> None:
    """Results computed from the old value keep the old value."""
    w = Tensor([1.0, 2.0])
    y = w * 10
    w.assign(Tensor([5.0, 5.0]))
    np.testing.assert_allclose(y.numpy(), [10.0, 20.0])
    np.testing.assert_allclose((w * 10).numpy(), [50.0, 50.0])


def test_gradient_of_max_through_relu_and_where() -> None:
    """Gradients through relu, where and max match torch on a small network."""
    xs = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]], np.float32)
    ws = np.array([[0.2, -0.4], [1.0, 0.5], [-0.3, 0.8]], np.float32)
    x, w = Tensor(xs), Tensor(ws, requires_grad=True)
    tw = torch.tensor(ws, requires_grad=True)
    (x @ w).relu().max(1).sum().backward()
    (torch.tensor(xs) @ tw).relu().amax(1).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6)


def test_parameters_made_alike_are_distinct() -> None:
    """Two parameters created with the same constructor get their own gradients."""
    a, b = Tensor.zeros(3, requires_grad=True), Tensor.zeros(3, requires_grad=True)
    (a * 2 + b * 3).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(b.grad.numpy(), [3.0, 3.0, 3.0])
    x = Tensor([1.0, 2.0])
    c, d = x.detach(), x.detach()
    c.requires_grad, d.requires_grad = True, True
    (c * 4 + d).sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), [4.0, 4.0])
    np.testing.assert_allclose(d.grad.numpy(), [1.0, 1.0])


def test_two_tensors_assigned_one_value_stay_two() -> None:
    """Equal expressions share a graph node; assign gives each tensor a node of its own, so
    each keeps its own gradient and, once realized, its own buffer."""
    from tinyfw.engine import realize
    src = Tensor([1.0, 2.0])
    a, b = Tensor([0.0, 0.0], requires_grad=True), Tensor([0.0, 0.0], requires_grad=True)
    a.assign(src), b.assign(src)
    (a * 2 + b * 3).sum().backward()
    assert a.grad is not None and b.grad is not None
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(b.grad.numpy(), [3.0, 3.0])
    Tensor.realize_all(a, b)
    assert realize.buffer_of(a.uop) is not realize.buffer_of(b.uop)
