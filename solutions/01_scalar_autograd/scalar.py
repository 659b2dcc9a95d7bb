# Solutions of chapter 01, generated from tinyfw/scalar.py by `python -m tools.generate`.
# Edit tinyfw/scalar.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/01_scalar_autograd --impl=solutions
# generated text id: 15db72c93b6236f3 (lets tools.generate tell your edits apart)
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
        # >>> exercise 01.add_mul #task-1-add-and-multiply
        other = as_value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def local_backward(g: float) -> None:
            self.grad += g
            other.grad += g

        out.local_backward = local_backward
        return out
        # <<< exercise

    def __mul__(self, other: Value | float) -> Value:
        """self * other as a new node whose local backward feeds both sources."""
        # >>> exercise 01.add_mul #task-1-add-and-multiply
        other = as_value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def local_backward(g: float) -> None:
            self.grad += other.data * g
            other.grad += self.data * g

        out.local_backward = local_backward
        return out
        # <<< exercise

    # Task 2: an order in which every node comes after the nodes it was computed from.

    def toposort(self) -> list[Value]:
        """Each node self depends on (self included) once, after all its sources; no recursion."""
        # >>> exercise 01.toposort #task-2-a-topological-order
        order: list[Value] = []
        seen: set[Value] = set()
        stack: list[tuple[Value, bool]] = [(self, False)]
        while stack:
            node, sources_done = stack.pop()
            if sources_done:
                order.append(node)
            elif node not in seen:
                seen.add(node)
                stack.append((node, True))
                stack.extend((s, False) for s in node.src if s not in seen)
        return order
        # <<< exercise

    # Task 3: run every local backward, in the right order.

    def backward(self) -> None:
        """Add d(self)/d(leaf) to each leaf's grad; interior grads restart at 0, the root at 1."""
        # >>> exercise 01.backward #task-3-backward
        order = self.toposort()
        for node in order:
            if node.src:
                node.grad = 0.0
        self.grad += 1.0
        for node in reversed(order):
            node.local_backward(node.grad)
        # <<< exercise

    # Task 4: a power rule, then negation, subtraction and division for free.

    def __pow__(self, exponent: float) -> Value:
        """self ** exponent, for a plain-number exponent."""
        if not isinstance(exponent, (int, float)):
            raise TypeError("Value ** takes a plain number exponent (int or float)")
        # >>> exercise 01.pow_div_neg #task-4-powers-and-what-they-give-for-free
        out = Value(self.data**exponent, (self,), f"**{exponent:g}")

        def local_backward(g: float) -> None:
            self.grad += exponent * self.data ** (exponent - 1) * g

        out.local_backward = local_backward
        return out
        # <<< exercise

    def __neg__(self) -> Value:
        """-self, built from ops you already have."""
        # >>> exercise 01.pow_div_neg #task-4-powers-and-what-they-give-for-free
        return self * -1.0
        # <<< exercise

    def __sub__(self, other: Value | float) -> Value:
        """self - other, built from ops you already have."""
        # >>> exercise 01.pow_div_neg #task-4-powers-and-what-they-give-for-free
        return self + (-other)
        # <<< exercise

    def __truediv__(self, other: Value | float) -> Value:
        """self / other, built from ops you already have."""
        # >>> exercise 01.pow_div_neg #task-4-powers-and-what-they-give-for-free
        return self * other**-1
        # <<< exercise

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
        # >>> exercise 01.exp_log #task-5-exp-and-log
        e = math.exp(self.data)
        out = Value(e, (self,), "exp")

        def local_backward(g: float) -> None:
            self.grad += e * g

        out.local_backward = local_backward
        return out
        # <<< exercise

    def log(self) -> Value:
        """The natural logarithm of self (self > 0)."""
        # >>> exercise 01.exp_log #task-5-exp-and-log
        out = Value(math.log(self.data), (self,), "log")

        def local_backward(g: float) -> None:
            self.grad += g / self.data

        out.local_backward = local_backward
        return out
        # <<< exercise

    # Task 6: the nonlinearities a neuron needs.

    def tanh(self) -> Value:
        """The hyperbolic tangent of self, in (-1, 1)."""
        # >>> exercise 01.activations #task-6-activations
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")

        def local_backward(g: float) -> None:
            self.grad += (1.0 - t * t) * g

        out.local_backward = local_backward
        return out
        # <<< exercise

    def relu(self) -> Value:
        """max(self, 0); its gradient at exactly 0 is taken to be 0."""
        # >>> exercise 01.activations #task-6-activations
        out = Value(self.data if self.data > 0 else 0.0, (self,), "relu")

        def local_backward(g: float) -> None:
            self.grad += (1.0 if self.data > 0 else 0.0) * g

        out.local_backward = local_backward
        return out
        # <<< exercise

    def sigmoid(self) -> Value:
        """1 / (1 + e ** -self), without overflow for any finite self."""
        # >>> exercise 01.activations #task-6-activations
        if self.data >= 0:
            s = 1.0 / (1.0 + math.exp(-self.data))
        else:
            e = math.exp(self.data)
            s = e / (1.0 + e)
        out = Value(s, (self,), "sigmoid")

        def local_backward(g: float) -> None:
            self.grad += s * (1.0 - s) * g

        out.local_backward = local_backward
        return out
        # <<< exercise


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
        # >>> exercise 01.mlp #task-7-a-neuron-a-layer-an-mlp
        act = sum((wi * xi for wi, xi in zip(self.w, x, strict=True)), self.b)
        return act.relu() if self.nonlin else act
        # <<< exercise

    def parameters(self) -> list[Value]:
        """The weights, then the bias."""
        # >>> exercise 01.mlp #task-7-a-neuron-a-layer-an-mlp
        return [*self.w, self.b]
        # <<< exercise


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
        # >>> exercise 01.mlp #task-7-a-neuron-a-layer-an-mlp
        return [n(x) for n in self.neurons]
        # <<< exercise

    def parameters(self) -> list[Value]:
        """Each neuron's parameters, neuron by neuron."""
        # >>> exercise 01.mlp #task-7-a-neuron-a-layer-an-mlp
        return [p for n in self.neurons for p in n.parameters()]
        # <<< exercise


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
        # >>> exercise 01.mlp #task-7-a-neuron-a-layer-an-mlp
        out: Sequence[Value | float] = x
        for layer in self.layers:
            out = layer(out)
        return list(out)
        # <<< exercise

    def parameters(self) -> list[Value]:
        """Each layer's parameters, first layer first."""
        # >>> exercise 01.mlp #task-7-a-neuron-a-layer-an-mlp
        return [p for layer in self.layers for p in layer.parameters()]
        # <<< exercise
