# Solutions of chapter 10, generated from tinyfw/nn/optim.py by `python -m tools.generate`.
# Edit tinyfw/nn/optim.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/10_nn_optim --impl=solutions
# generated text id: 3605892360d9a3c0 (lets tools.generate tell your edits apart)
"""Optimizers: how the parameters move once backward has filled their .grad (chapter 10).

A step is one lazy graph. Each parameter's new value (and the optimizer's new state: momentum
buffers, moment estimates, the step count) is computed lazily from the old values and assigned,
then everything is realized together, so the whole update runs as one schedule:

    opt = SGD(get_parameters(model), lr=0.01, momentum=0.9)
    opt.zero_grad()
    loss.backward()
    opt.step()

The names, arguments and formulas are torch.optim's (and tinygrad's)."""
from __future__ import annotations

from collections.abc import Iterable

from tinyfw.dtype import dtypes
from tinyfw.helpers import shape_str
from tinyfw.jit.jit import watch
from tinyfw.tensor import Tensor

LearningRate = float | Tensor


class Optimizer:
    """Holds the parameters and the learning rate. A subclass says, in _update, how one
    parameter moves; step applies that rule to every parameter at once.

    A float tensor whose requires_grad was never set (None) becomes a parameter, as in
    tinygrad; tensors with requires_grad=False (such as BatchNorm's running statistics) are
    kept as buffers: not updated, but realized with each step."""

    def __init__(self, params: Iterable[Tensor], lr: LearningRate):
        if isinstance(params, Tensor):
            raise TypeError("params should be an iterable of Tensors (a list, or "
                            "get_parameters(model)), not one Tensor")
        tensors = _unique(params)
        for t in tensors:  # not said either way: a parameter (tinygrad's rule)
            if t.requires_grad is None and t.dtype.is_float and t.is_leaf:
                t.requires_grad = True
        self.params = [t for t in tensors if t.requires_grad]
        self.buffers = [t for t in tensors if not t.requires_grad]
        if not self.params:
            raise ValueError(f"none of the {len(tensors)} tensors given to the optimizer requires "
                             "grad: make the parameters with requires_grad=True (or set "
                             "t.requires_grad = True) before building the optimizer")
        for t in self.params:
            if not t.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor: a parameter must be made "
                                 "directly (Tensor(...), Tensor.randn(...)), not computed from "
                                 "tensors that require grad")
        _check_hyperparameter("learning rate", lr)
        self.lr = lr  # a float, or a 0-d Tensor that a schedule may change between steps

    def zero_grad(self) -> None:
        """Forget the gradients: backward adds to .grad, so clear it before each one."""
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        """Move every parameter one step, as one schedule."""
        Tensor.realize_all(*self.schedule_step())

    def schedule_step(self) -> list[Tensor]:
        """Assign every new value lazily, computing nothing; returns the tensors to realize."""
        for name, value in vars(self).items():  # a float hyperparameter: a constant of a capture
            if isinstance(value, (bool, int, float)):
                watch(self, name)
        for i, p in enumerate(self.params):
            if p.grad is None:
                raise RuntimeError(f"parameter {i} (shape {shape_str(p.shape)}) has no gradient: "
                                   "call backward() on a loss computed from it before step()")
        for i, p in enumerate(self.params):  # detached: an update is not part of any graph
            assert p.grad is not None  # (checked above)
            p.assign(self._update(i, p.detach(), p.grad.detach()))
        return [*self.params, *self.buffers, *self._state()]

    def _update(self, i: int, param: Tensor, grad: Tensor) -> Tensor:
        """The new value of parameter i, given its value and gradient (both lazy)."""
        raise NotImplementedError(f"{type(self).__name__} does not define _update")

    def _state(self) -> list[Tensor]:
        """The optimizer's own tensors, which _update assigns along with the parameters."""
        return []


class SGD(Optimizer):
    """Stochastic gradient descent, with optional momentum (heavy ball or Nesterov) and
    L2 weight decay: torch.optim.SGD with dampening 0."""

    def __init__(self, params: Iterable[Tensor], lr: LearningRate = 0.001, momentum: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False):
        super().__init__(params, lr)
        _check_hyperparameter("momentum value", momentum)
        _check_hyperparameter("weight_decay value", weight_decay)
        if nesterov and momentum == 0:
            raise ValueError("Nesterov momentum requires a momentum")
        self.momentum, self.weight_decay, self.nesterov = momentum, weight_decay, nesterov
        # one velocity per parameter, starting at zero (then the first step is a plain one)
        self.b = [p.zeros_like() for p in self.params] if momentum else []

    def _update(self, i: int, param: Tensor, grad: Tensor) -> Tensor:
        # >>> exercise 10.sgd #sgd
        if self.weight_decay:  # L2 regularization: the gradient of weight_decay / 2 * |param|^2
            grad = grad + self.weight_decay * param
        if self.momentum:
            self.b[i].assign(self.momentum * self.b[i] + grad)
            grad = (grad + self.momentum * self.b[i]) if self.nesterov else self.b[i]
        return param - self.lr * grad
        # <<< exercise

    def _state(self) -> list[Tensor]:
        return self.b


class Adam(Optimizer):
    """Adam: each parameter moves by its gradient's running mean (m) over the square root of
    its running mean square (v), both corrected for starting at zero. weight_decay adds L2 to
    the gradient (torch.optim.Adam); AdamW decays the weights directly instead."""
    decoupled_weight_decay = False

    def __init__(self, params: Iterable[Tensor], lr: LearningRate = 0.001, b1: float = 0.9,
                 b2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.0):
        super().__init__(params, lr)
        for name, beta in (("b1", b1), ("b2", b2)):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter {name}: {beta}")
        _check_hyperparameter("epsilon value", eps)
        _check_hyperparameter("weight_decay value", weight_decay)
        self.b1, self.b2, self.eps, self.weight_decay = b1, b2, eps, weight_decay
        self.m = [p.zeros_like() for p in self.params]  # running mean of the gradient
        self.v = [p.zeros_like() for p in self.params]  # running mean of its square
        # steps taken; on the parameters' devices when they are over many (tinyfw/multi.py)
        devices = {p.device for p in self.params}
        shared = devices.pop() if len(devices) == 1 else None
        self.t = Tensor.zeros((), dtype=dtypes.int32,
                              device=shared if isinstance(shared, tuple) else None)

    def schedule_step(self) -> list[Tensor]:
        self.t.assign(self.t + 1)  # this step's number, which every _update reads
        return super().schedule_step()

    def _update(self, i: int, param: Tensor, grad: Tensor) -> Tensor:
        # >>> exercise 10.adam #adam-and-adamw
        if self.decoupled_weight_decay:  # AdamW: shrink the weights, apart from the gradient
            param = param * (1 - self.lr * self.weight_decay)
        elif self.weight_decay:  # Adam: L2 regularization, through the gradient
            grad = grad + self.weight_decay * param
        self.m[i].assign(self.b1 * self.m[i] + (1 - self.b1) * grad)
        self.v[i].assign(self.b2 * self.v[i] + (1 - self.b2) * grad * grad)
        m_hat = self.m[i] / (1 - self.b1 ** self.t)  # m and v start at 0: undo that bias
        v_hat = self.v[i] / (1 - self.b2 ** self.t)
        return param - self.lr * m_hat / (v_hat.sqrt() + self.eps)
        # <<< exercise

    def _state(self) -> list[Tensor]:
        return [*self.m, *self.v, self.t]


class AdamW(Adam):
    """Adam with decoupled weight decay: the weights shrink by lr * weight_decay each step,
    whatever their gradient (torch.optim.AdamW)."""
    decoupled_weight_decay = True

    def __init__(self, params: Iterable[Tensor], lr: LearningRate = 0.001, b1: float = 0.9,
                 b2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.01):
        super().__init__(params, lr, b1, b2, eps, weight_decay)


def _unique(params: Iterable[Tensor]) -> list[Tensor]:
    """The tensors in order, each once (a tensor listed twice would be stepped twice)."""
    out: list[Tensor] = []
    seen: set[int] = set()
    for i, t in enumerate(params):
        if not isinstance(t, Tensor):
            raise TypeError(f"optimizers take Tensors, but item {i} is a {type(t).__name__}")
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def _check_hyperparameter(name: str, value: LearningRate) -> None:
    """torch's ValueError for a negative hyperparameter (a Tensor is taken as it is)."""
    if not isinstance(value, Tensor) and value < 0:
        raise ValueError(f"Invalid {name}: {value}")
