"""Task 7: Neuron, Layer and MLP: outputs, parameters, zero_grad, and a step that learns."""

from __future__ import annotations

import pytest

from chapters.grading import expect_close
from tinyfw.scalar import MLP, Layer, Neuron, Value

pytestmark = pytest.mark.task("01.mlp")


def test_parameter_counts() -> None:
    """A layer nin -> nout has (nin + 1) * nout parameters; MLP(2, [16, 16, 1]) has 337."""
    counts = [len(Neuron(3).parameters()), len(Layer(3, 4).parameters()),
              len(MLP(2, [16, 16, 1]).parameters())]
    expect_close(counts, [4, 16, 337], what="[Neuron(3), Layer(3, 4), MLP(2, [16, 16, 1])] "
                                            "parameter counts")


def test_parameters_are_the_leaves_in_order() -> None:
    """parameters() lists each weight and bias Value once: neuron by neuron, layer by layer."""
    model = MLP(3, [4, 2])
    expected = [p for layer in model.layers for n in layer.neurons for p in [*n.w, n.b]]
    params = model.parameters()
    assert all(isinstance(p, Value) for p in params), "parameters() should hold Values"
    same = len(params) == len(expected) and all(p is e for p, e in zip(params, expected))
    assert same, \
        "MLP.parameters() should be, for each layer and each neuron in it, its weights w " \
        "then its bias b: the very Value objects, not copies"
    neuron = model.layers[0].neurons[1]
    assert [id(p) for p in neuron.parameters()] == [id(p) for p in [*neuron.w, neuron.b]], \
        "Neuron.parameters() should be [*w, b]"


def test_neuron_output() -> None:
    """A neuron computes relu(w . x + b), or w . x + b when nonlin is False."""
    for nonlin, expected in [(True, 0.0), (False, 0.5 * 1.0 - 2.0 * 3.0 + 1.5)]:
        n = Neuron(2, nonlin=nonlin)
        n.w[0].data, n.w[1].data, n.b.data = 0.5, -2.0, 1.5
        out = n([1.0, 3.0])
        assert isinstance(out, Value), f"a neuron should return a Value, got {type(out).__name__}"
        expect_close(out.data, expected, what=f"Neuron(2, nonlin={nonlin}) output, w = [0.5, -2],"
                                              " b = 1.5, x = [1, 3]")
    n = Neuron(2)
    n.w[0].data, n.w[1].data, n.b.data = 0.5, 2.0, -1.0
    expect_close(n([1.0, 3.0]).data, 5.5,
                 what="relu neuron output, w = [0.5, 2], b = -1, x = [1, 3]")


def test_layer_output() -> None:
    """A layer returns the list of its neurons' outputs on the same input."""
    layer = Layer(3, 4)
    x = [0.5, -1.0, 2.0]
    out = layer(x)
    assert isinstance(out, list) and len(out) == 4, \
        f"Layer(3, 4)(x) should be a list of 4 Values, got {out!r}"
    expect_close([o.data for o in out], [n(x).data for n in layer.neurons],
                 what="layer outputs vs. each neuron's output")


def weights_as_torch(model: MLP) -> list[tuple[object, object]]:
    """(W, b) float64 torch tensors requiring grad, one pair per layer, copied from the model."""
    import torch

    pairs = []
    for layer in model.layers:
        w = [[wi.data for wi in n.w] for n in layer.neurons]
        b = [n.b.data for n in layer.neurons]
        pairs.append((torch.tensor(w, dtype=torch.float64, requires_grad=True),
                      torch.tensor(b, dtype=torch.float64, requires_grad=True)))
    return pairs


def test_forward_and_backward_against_torch() -> None:
    """MLP(3, [5, 4, 2]) matches the same network in PyTorch: outputs and every gradient."""
    import torch

    model = MLP(3, [5, 4, 2], seed=3)
    model.layers[-1].neurons[1].b.data = -4.0  # the last layer is linear: this output is < 0
    x = [0.4, -1.1, 0.9]
    out = model(x)
    assert isinstance(out, list) and len(out) == 2, f"MLP(3, [5, 4, 2])(x) should be a list of " \
                                                    f"2 Values, got {out!r}"
    loss = out[0] * out[0] - out[1] * 3.0
    loss.backward()

    pairs = weights_as_torch(model)
    h = torch.tensor(x, dtype=torch.float64)
    for i, (w, b) in enumerate(pairs):
        h = w @ h + b
        if i < len(pairs) - 1:
            h = torch.relu(h)
    expect_close([o.data for o in out], h.detach().numpy(), rtol=1e-10, what="MLP outputs")
    (h[0] * h[0] - h[1] * 3.0).backward()
    expected = [g for w, b in pairs for row, bias in zip(w.grad, b.grad, strict=True)
                for g in [*row.tolist(), bias.item()]]
    expect_close([p.grad for p in model.parameters()], expected, rtol=1e-10, atol=1e-12,
                 what="gradients of every parameter, in parameters() order")


def test_zero_grad() -> None:
    """zero_grad() sets every parameter's grad to 0, so the next backward starts fresh."""
    model = MLP(2, [3, 1], seed=1)
    model.layers[0].neurons[0].b.data = 1.0  # keep the first unit active for this input
    model(x=[1.0, -2.0])[0].backward()
    first = [p.grad for p in model.parameters()]
    assert any(g != 0.0 for g in first), "backward() left every parameter's grad at 0"
    model.zero_grad()
    expect_close([p.grad for p in model.parameters()], [0.0] * len(first),
                 what="parameter grads after zero_grad()")
    model([1.0, -2.0])[0].backward()
    expect_close([p.grad for p in model.parameters()], first,
                 what="parameter grads after zero_grad() and a second backward()")


def test_a_training_step_lowers_the_loss() -> None:
    """zero_grad, backward, then p.data -= lr * p.grad lowers the squared error on a few points."""
    points = [([0.5, 1.0], 1.0), ([-1.0, 0.3], -1.0), ([0.2, -0.7], 1.0), ([1.5, 0.1], -1.0),
              ([-0.4, -1.2], 1.0), ([0.9, 0.8], -1.0)]
    model = MLP(2, [6, 1], seed=7)

    def loss_of() -> Value:
        errors = [(model(x)[0] - y) ** 2 for x, y in points]
        return sum(errors[1:], errors[0]) * (1.0 / len(points))

    before = loss_of()
    model.zero_grad()
    before.backward()
    for p in model.parameters():
        p.data -= 0.05 * p.grad
    after = loss_of()
    assert after.data < before.data, \
        f"the loss went from {before.data:.6f} to {after.data:.6f} after one step: it should drop"
