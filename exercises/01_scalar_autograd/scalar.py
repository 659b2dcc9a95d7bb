# Exercises of chapter 01, generated from tinyfw/scalar.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/01_scalar_autograd
# generated text id: 048742e29b5246ad (lets tools.generate tell your edits apart)
"""Chapter 01: `Value`, a scalar that remembers how it was computed, and an MLP built from it.

How `.grad` behaves (for leaves it is exactly PyTorch's rule):

- A *leaf* is a Value you made yourself (`Value(2.0)`, a weight); an *interior* node was made by an
  op and has sources (`src`).
- `y.backward()` adds dy/dv to `v.grad` for every leaf `v` that `y` depends on. Call it twice and
  the leaves hold twice the gradient: gradients accumulate, they are never overwritten.
- Each backward call first resets the grad of every interior node of `y`'s graph to 0, then seeds
  the root with 1 (`y.grad += 1`), so interior nodes hold this call's gradient only.
- Nothing resets leaves for you: call `Module.zero_grad()` (or set `v.grad = 0.0`) between steps.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence


def _no_sources(g: float) -> None:
    """A leaf's local backward: there is nothing upstream to pass gradient to."""


class Value:
    """One scalar of a computation: its data, its grad, and the op and sources that made it."""

    def __init__(
        self, data: float, src: tuple[Value, ...] = (), op: str = "", label: str = ""
    ) -> None:
        """A node holding data; a leaf has no src, an interior node names the op that made it."""
        self.data = float(data)
        self.grad = 0.0
        self.src = src
        self.op = op
        self.label = label
        # Given g = d(root)/d(self), adds g * d(self)/d(s) to s.grad for each source s.
        self.local_backward: Callable[[float], None] = _no_sources

    def __repr__(self) -> str:
        """Data and grad, short enough to read in a list."""
        name = f"{self.label}=" if self.label else ""
        return f"Value({name}{self.data:.6g}, grad={self.grad:.6g})"

    # Task 1: the two ops everything else can be built on.

    def __add__(self, other: Value | float) -> Value:
        """self + other as a new node whose local backward feeds both sources."""
        # TODO 01.add_mul: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-1-add-and-multiply
        raise NotImplementedError("not done yet: 01.add_mul")

    def __mul__(self, other: Value | float) -> Value:
        """self * other as a new node whose local backward feeds both sources."""
        # TODO 01.add_mul: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-1-add-and-multiply
        raise NotImplementedError("not done yet: 01.add_mul")

    # Task 2: an order in which every node comes after the nodes it was computed from.

    def toposort(self) -> list[Value]:
        """Each node self depends on (self included) once, after all its sources; no recursion."""
        # TODO 01.toposort: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-2-a-topological-order
        raise NotImplementedError("not done yet: 01.toposort")

    # Task 3: run every local backward, in the right order.

    def backward(self) -> None:
        """Add d(self)/d(leaf) to each leaf's grad; interior grads restart at 0, the root at 1."""
        # TODO 01.backward: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-3-backward
        raise NotImplementedError("not done yet: 01.backward")

    # Task 4: a power rule, then negation, subtraction and division for free.

    def __pow__(self, exponent: float) -> Value:
        """self ** exponent, for a plain-number exponent."""
        if not isinstance(exponent, (int, float)):
            raise TypeError("Value ** takes a plain number exponent (int or float)")
        # TODO 01.pow_div_neg: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-4-powers-and-what-they-give-for-free
        raise NotImplementedError("not done yet: 01.pow_div_neg")

    def __neg__(self) -> Value:
        """-self, built from ops you already have."""
        # TODO 01.pow_div_neg: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-4-powers-and-what-they-give-for-free
        raise NotImplementedError("not done yet: 01.pow_div_neg")

    def __sub__(self, other: Value | float) -> Value:
        """self - other, built from ops you already have."""
        # TODO 01.pow_div_neg: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-4-powers-and-what-they-give-for-free
        raise NotImplementedError("not done yet: 01.pow_div_neg")

    def __truediv__(self, other: Value | float) -> Value:
        """self / other, built from ops you already have."""
        # TODO 01.pow_div_neg: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-4-powers-and-what-they-give-for-free
        raise NotImplementedError("not done yet: 01.pow_div_neg")

    # With a plain number on the left (2 * x), Python asks the right operand: reuse the ops above.

    def __radd__(self, other: float) -> Value:
        """other + self for a number other."""
        return self + other

    def __rmul__(self, other: float) -> Value:
        """other * self for a number other."""
        return self * other

    def __rsub__(self, other: float) -> Value:
        """other - self for a number other."""
        return -self + other

    def __rtruediv__(self, other: float) -> Value:
        """other / self for a number other."""
        return self**-1 * other

    def __rpow__(self, base: float) -> Value:
        """base ** self for a positive number base, as exp(self * ln(base))."""
        return (self * math.log(base)).exp()

    # Task 5: exp and its inverse.

    def exp(self) -> Value:
        """e ** self."""
        # TODO 01.exp_log: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-5-exp-and-log
        raise NotImplementedError("not done yet: 01.exp_log")

    def log(self) -> Value:
        """The natural logarithm of self (self > 0)."""
        # TODO 01.exp_log: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-5-exp-and-log
        raise NotImplementedError("not done yet: 01.exp_log")

    # Task 6: the nonlinearities a neuron needs.

    def tanh(self) -> Value:
        """The hyperbolic tangent of self, in (-1, 1)."""
        # TODO 01.activations: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-6-activations
        raise NotImplementedError("not done yet: 01.activations")

    def relu(self) -> Value:
        """max(self, 0); its gradient at exactly 0 is taken to be 0."""
        # TODO 01.activations: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-6-activations
        raise NotImplementedError("not done yet: 01.activations")

    def sigmoid(self) -> Value:
        """1 / (1 + e ** -self), without overflow for any finite self."""
        # TODO 01.activations: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-6-activations
        raise NotImplementedError("not done yet: 01.activations")


def as_value(x: Value | float) -> Value:
    """x itself if it is a Value, else a new leaf holding the number x."""
    return x if isinstance(x, Value) else Value(x)


# Task 7: neurons, layers and a multi-layer perceptron, all made of Values.


class Module:
    """Something with trainable parameters: a neuron, a layer, a network."""

    def parameters(self) -> list[Value]:
        """The trainable Values, in a fixed order."""
        return []

    def zero_grad(self) -> None:
        """Set every parameter's grad to 0, ready for the next backward()."""
        for p in self.parameters():
            p.grad = 0.0


class Neuron(Module):
    """relu(w · x + b) over nin inputs, or just w · x + b when nonlin is False."""

    def __init__(self, nin: int, nonlin: bool = True, rng: random.Random | None = None) -> None:
        """nin weights drawn uniformly from ±sqrt(3 / nin) (unit variance out), bias 0."""
        rng = rng if rng is not None else random.Random(0)
        bound = math.sqrt(3.0 / nin)
        self.w = [Value(rng.uniform(-bound, bound), label="w") for _ in range(nin)]
        self.b = Value(0.0, label="b")
        self.nonlin = nonlin

    def __repr__(self) -> str:
        """Kind and input count."""
        return f"{'ReLU' if self.nonlin else 'Linear'}Neuron({len(self.w)})"

    def __call__(self, x: Sequence[Value | float]) -> Value:
        """The neuron's output for one input vector x of length nin."""
        # TODO 01.mlp: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-7-a-neuron-a-layer-an-mlp
        raise NotImplementedError("not done yet: 01.mlp")

    def parameters(self) -> list[Value]:
        """The weights, then the bias."""
        # TODO 01.mlp: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-7-a-neuron-a-layer-an-mlp
        raise NotImplementedError("not done yet: 01.mlp")


class Layer(Module):
    """nout neurons that all read the same nin inputs."""

    def __init__(
        self, nin: int, nout: int, nonlin: bool = True, rng: random.Random | None = None
    ) -> None:
        """nout fresh neurons, drawn one after another from rng."""
        rng = rng if rng is not None else random.Random(0)
        self.neurons = [Neuron(nin, nonlin, rng) for _ in range(nout)]

    def __repr__(self) -> str:
        """The neurons it holds."""
        return f"Layer({self.neurons[0]!r} x {len(self.neurons)})"

    def __call__(self, x: Sequence[Value | float]) -> list[Value]:
        """Every neuron's output for the input vector x."""
        # TODO 01.mlp: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-7-a-neuron-a-layer-an-mlp
        raise NotImplementedError("not done yet: 01.mlp")

    def parameters(self) -> list[Value]:
        """Each neuron's parameters, neuron by neuron."""
        # TODO 01.mlp: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-7-a-neuron-a-layer-an-mlp
        raise NotImplementedError("not done yet: 01.mlp")


class MLP(Module):
    """Layers of sizes nouts on nin inputs: relu between layers, the last layer linear."""

    def __init__(self, nin: int, nouts: Sequence[int], seed: int = 0) -> None:
        """Layers nin -> nouts[0] -> ... -> nouts[-1], initialised from random.Random(seed)."""
        rng = random.Random(seed)
        sizes = [nin, *nouts]
        last = len(nouts) - 1
        self.layers = [Layer(sizes[i], sizes[i + 1], i < last, rng) for i in range(len(nouts))]

    def __repr__(self) -> str:
        """The layer sizes."""
        sizes = [len(self.layers[0].neurons[0].w), *(len(la.neurons) for la in self.layers)]
        return f"MLP({' -> '.join(map(str, sizes))})"

    def __call__(self, x: Sequence[Value | float]) -> list[Value | float]:
        """The last layer's outputs for the input vector x (x itself when there are no layers)."""
        # TODO 01.mlp: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-7-a-neuron-a-layer-an-mlp
        raise NotImplementedError("not done yet: 01.mlp")

    def parameters(self) -> list[Value]:
        """Each layer's parameters, first layer first."""
        # TODO 01.mlp: write this part. The chapter explains it:
        #   chapters/01_scalar_autograd/README.md#task-7-a-neuron-a-layer-an-mlp
        raise NotImplementedError("not done yet: 01.mlp")
