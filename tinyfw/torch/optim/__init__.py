"""torch.optim over tinyfw's optimizers: parameter groups (each a dict of hyperparameters that
a scheduler may change), zero_grad(set_to_none=), step(closure), state_dict and
load_state_dict with torch's layout. Each group is stepped by one of tinyfw.nn.optim's
optimizers (its learning rate a 0-d tensor, so a schedule changes no kernel), and every group's
update is realized as one schedule."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tinyfw.dtype import dtypes
from tinyfw.nn import optim as tinyopt
from tinyfw.tensor import Tensor
from tinyfw.torch.optim import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]


class ParamGroup(dict):
    """A parameter group: a dict of "params" and hyperparameters whose changes (a scheduler's,
    or a program's own `group["lr"] = x`) reach the group's tinyfw optimizer at once, not at
    its next step(): a TinyJit replay runs none of step()'s Python, so a learning rate set
    there would never be seen. The learning rate is a tensor assigned in place (a replay
    reads it); another hyperparameter is a number on the tinyfw optimizer, and TinyJit refuses
    a call after a number its capture read has changed (never a silent replay with the old)."""

    def __init__(self, data: dict[str, Any], changed: Callable[[ParamGroup], None]):
        super().__init__(data)
        self._changed = changed

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        if key != "params":
            self._changed(self)


class Optimizer:
    """The base of torch's optimizers: param_groups (dicts with "params" and the
    hyperparameters) and, per parameter, its state."""
    defaults: dict[str, Any]
    kind: type[tinyopt.Optimizer]

    def __init__(self, params: Any, defaults: dict[str, Any]):
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got Tensor")
        self.defaults = defaults
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)
        # per group: the tinyfw optimizer stepping it, and the parameters it was made for
        self._inner: list[tuple[tuple[int, ...], tinyopt.Optimizer] | None] = \
            [None] * len(self.param_groups)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        group = ParamGroup(dict(param_group), self._group_changed)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for name, value in self.defaults.items():
            group.setdefault(name, value)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)
        if hasattr(self, "_inner"):
            self._inner.append(None)

    def _group_changed(self, group: ParamGroup) -> None:
        """A hyperparameter of group was set: its tinyfw optimizer, if made, takes it now."""
        index = next((i for i, g in enumerate(self.param_groups) if g is group), None)
        held = self._inner[index] if index is not None and hasattr(self, "_inner") else None
        if held is not None:
            self._configure(held[1], group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p.grad = None if set_to_none else p.grad.zeros_like().realize()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient (the others are left, as torch
        leaves them), all groups in one schedule."""
        loss = None
        if closure is not None:
            with _grad_enabled():
                loss = closure()
        pending: list[Tensor] = []
        for i, g in enumerate(self.param_groups):
            trained = [p for p in g["params"] if p.grad is not None and p.requires_grad]
            if not trained:
                continue
            key = tuple(id(p) for p in trained)
            held = self._inner[i]
            if held is None or held[0] != key:
                held = (key, self._make(trained, g))
                self._inner[i] = held
            inner = held[1]
            self._configure(inner, g)
            pending += inner.schedule_step()
        Tensor.realize_all(*pending)
        return loss

    # --- what a subclass says ---
    def _make(self, params: list[Tensor], group: dict[str, Any]) -> tinyopt.Optimizer:
        raise NotImplementedError

    def _configure(self, inner: tinyopt.Optimizer, group: dict[str, Any]) -> None:
        """The group's hyperparameters, as they are now, given to its tinyfw optimizer."""
        lr = group["lr"]
        value = lr.item() if isinstance(lr, Tensor) else float(lr)
        assert isinstance(inner.lr, Tensor)
        # (kept here, not as a number on inner: TinyJit watches inner's numbers, and the
        # learning rate is a 0-d tensor a replay reads, assigned in place: no new kernel)
        given = self.__dict__.setdefault("_lr_given", {})
        if given.get(id(inner)) != value:
            inner.lr.assign(Tensor(value, dtype=dtypes.float32)).realize()
            given[id(inner)] = value

    def _state_names(self) -> dict[str, str]:
        """torch's state name -> the tinyfw optimizer's list attribute holding it."""
        return {}

    # --- state ---
    @property
    def state(self) -> dict[Tensor, dict[str, Any]]:
        out: dict[Tensor, dict[str, Any]] = {}
        for held in self._inner:
            if held is None:
                continue
            inner = held[1]
            for j, p in enumerate(inner.params):
                entry = {name: getattr(inner, attr)[j] for name, attr in
                         self._state_names().items() if getattr(inner, attr, None)}
                if hasattr(inner, "t"):
                    entry["step"] = inner.t.cast(dtypes.float32)
                out[p] = entry
        return out

    def state_dict(self) -> dict[str, Any]:
        """torch's layout: {"state": {index: {...}}, "param_groups": [{..., "params": [index,
        ...]}]}, parameters numbered in group order."""
        index: dict[int, int] = {}
        groups = []
        for g in self.param_groups:
            ids = []
            for p in g["params"]:
                index[id(p)] = len(index)
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": ids})
        state = {index[id(p)]: {k: v.detach() for k, v in s.items()}
                 for p, s in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
                len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        number = {id(p): i for i, p in enumerate(p for g in self.param_groups
                                                 for p in g["params"])}
        for saved, g in zip(groups, self.param_groups):
            g.update({k: v for k, v in saved.items() if k != "params"})
        for i, g in enumerate(self.param_groups):
            trained = [p for p in g["params"] if p.requires_grad]
            if not trained:
                continue
            inner = self._make(trained, g)
            self._inner[i] = (tuple(id(p) for p in trained), inner)
            for j, p in enumerate(inner.params):
                saved_state = state_dict["state"].get(number[id(p)], {})
                for name, attr in self._state_names().items():
                    if name in saved_state and getattr(inner, attr, None):
                        getattr(inner, attr)[j].assign(_tensor(saved_state[name])).realize()
                if "step" in saved_state and hasattr(inner, "t"):
                    inner.t.assign(_tensor(saved_state["step"]).cast(inner.t.dtype)).realize()

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join(lines) + "\n)"


def _tensor(value: Any) -> Tensor:
    return value if isinstance(value, Tensor) else Tensor(value)


class _grad_enabled:  # noqa: N801
    def __enter__(self) -> None:
        self.previous, Tensor.no_grad = Tensor.no_grad, False

    def __exit__(self, *exc: Any) -> None:
        Tensor.no_grad = self.previous


def _lr_tensor(group: dict[str, Any]) -> Tensor:
    lr = group["lr"]
    return Tensor(lr.item() if isinstance(lr, Tensor) else float(lr), dtype=dtypes.float32)


def _check(name: str, value: float) -> None:
    if value < 0:
        raise ValueError(f"Invalid {name}: {value}")


# --- SGD ---


class _SGD(tinyopt.SGD):
    """tinyfw's SGD with torch's dampening: the momentum buffer takes (1 - dampening) of each
    gradient after the first, which it takes whole."""

    def __init__(self, params: list[Tensor], lr: Tensor, momentum: float, dampening: float,
                 weight_decay: float, nesterov: bool, maximize: bool):
        super().__init__(params, lr, momentum, weight_decay, nesterov)
        self.dampening, self.maximize = dampening, maximize
        self.steps = 0

    def schedule_step(self) -> list[Tensor]:
        self.steps += 1
        return super().schedule_step()

    def _update(self, i: int, param: Tensor, grad: Tensor) -> Tensor:
        if self.maximize:
            grad = -grad
        if self.dampening and self.momentum and self.steps > 1:
            if self.weight_decay:
                grad = grad + self.weight_decay * param
            self.b[i].assign(self.momentum * self.b[i] + (1 - self.dampening) * grad)
            grad = (grad + self.momentum * self.b[i]) if self.nesterov else self.b[i]
            return param - self.lr * grad
        return super()._update(i, param, grad)


class SGD(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None):
        for name, value in (("learning rate", lr), ("momentum value", momentum),
                            ("weight_decay value", weight_decay)):
            _check(name, value)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov,
                                  "maximize": maximize})

    def _make(self, params: list[Tensor], g: dict[str, Any]) -> tinyopt.Optimizer:
        return _SGD(params, _lr_tensor(g), g["momentum"], g["dampening"], g["weight_decay"],
                    g["nesterov"], g["maximize"])

    def _configure(self, inner: tinyopt.Optimizer, group: dict[str, Any]) -> None:
        super()._configure(inner, group)
        assert isinstance(inner, _SGD)
        if bool(group["momentum"]) != bool(inner.momentum):
            raise ValueError("tinyfw: a group's momentum can change but not start or stop "
                             "between steps")
        inner.momentum, inner.dampening = group["momentum"], group["dampening"]
        inner.weight_decay = group["weight_decay"]

    def _state_names(self) -> dict[str, str]:
        return {"momentum_buffer": "b"}


# --- Adam, AdamW ---


class _Adam(tinyopt.Adam):
    def __init__(self, params: list[Tensor], lr: Tensor, betas: tuple[float, float], eps: float,
                 weight_decay: float, decoupled: bool, maximize: bool):
        super().__init__(params, lr, betas[0], betas[1], eps, weight_decay)
        self.decoupled_weight_decay, self.maximize = decoupled, maximize

    def _update(self, i: int, param: Tensor, grad: Tensor) -> Tensor:
        return super()._update(i, param, -grad if self.maximize else grad)


class Adam(Optimizer):
    decoupled = False

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False):
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("weight_decay value", weight_decay)
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        if amsgrad:
            raise NotImplementedError("Adam(amsgrad=True): tinyfw's Adam keeps no maximum of "
                                      "the second moment")
        self.decoupled = self.decoupled or decoupled_weight_decay
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "weight_decay": weight_decay, "amsgrad": False,
                                  "maximize": maximize})

    def _make(self, params: list[Tensor], g: dict[str, Any]) -> tinyopt.Optimizer:
        return _Adam(params, _lr_tensor(g), g["betas"], g["eps"], g["weight_decay"],
                     self.decoupled, g["maximize"])

    def _configure(self, inner: tinyopt.Optimizer, group: dict[str, Any]) -> None:
        super()._configure(inner, group)
        assert isinstance(inner, _Adam)
        inner.b1, inner.b2 = group["betas"]
        inner.eps, inner.weight_decay = group["eps"], group["weight_decay"]

    def _state_names(self) -> dict[str, str]:
        return {"exp_avg": "m", "exp_avg_sq": "v"}


class AdamW(Adam):
    decoupled = True

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False,
                 **kwargs: Any):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, **kwargs)


# --- RMSprop, Adagrad (optimizers tinyfw.nn.optim does not have, by the same contract) ---


class _RMSprop(tinyopt.Optimizer):
    def __init__(self, params: list[Tensor], lr: Tensor, alpha: float, eps: float,
                 weight_decay: float, momentum: float, centered: bool):
        super().__init__(params, lr)
        self.alpha, self.eps, self.weight_decay = alpha, eps, weight_decay
        self.momentum, self.centered = momentum, centered
        self.square_avg = [p.zeros_like() for p in self.params]
        self.grad_avg = [p.zeros_like() for p in self.params] if centered else []
        self.momentum_buffer = [p.zeros_like() for p in self.params] if momentum else []

    def _update(self, i: int, param: Tensor, grad: Tensor) -> Tensor:
        if self.weight_decay:
            grad = grad + self.weight_decay * param
        v = self.square_avg[i].assign(self.alpha * self.square_avg[i] +
                                      (1 - self.alpha) * grad * grad)
        if self.centered:
            g = self.grad_avg[i].assign(self.alpha * self.grad_avg[i] + (1 - self.alpha) * grad)
            avg = (v - g * g).sqrt() + self.eps
        else:
            avg = v.sqrt() + self.eps
        if self.momentum:
            buf = self.momentum_buffer[i].assign(self.momentum * self.momentum_buffer[i] +
                                                 grad / avg)
            return param - self.lr * buf
        return param - self.lr * grad / avg

    def _state(self) -> list[Tensor]:
        return [*self.square_avg, *self.grad_avg, *self.momentum_buffer]


class RMSprop(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 **kwargs: Any):
        for name, value in (("learning rate", lr), ("epsilon value", eps),
                            ("momentum value", momentum), ("weight_decay value", weight_decay),
                            ("alpha value", alpha)):
            _check(name, value)
        super().__init__(params, {"lr": lr, "alpha": alpha, "eps": eps,
                                  "weight_decay": weight_decay, "momentum": momentum,
                                  "centered": centered})

    def _make(self, params: list[Tensor], g: dict[str, Any]) -> tinyopt.Optimizer:
        return _RMSprop(params, _lr_tensor(g), g["alpha"], g["eps"], g["weight_decay"],
                        g["momentum"], g["centered"])

    def _state_names(self) -> dict[str, str]:
        return {"square_avg": "square_avg", "momentum_buffer": "momentum_buffer",
                "grad_avg": "grad_avg"}


class _Adagrad(tinyopt.Optimizer):
    def __init__(self, params: list[Tensor], lr: Tensor, lr_decay: float, weight_decay: float,
                 initial_accumulator_value: float, eps: float):
        super().__init__(params, lr)
        self.lr_decay, self.weight_decay, self.eps = lr_decay, weight_decay, eps
        self.sum = [p.full_like(initial_accumulator_value) for p in self.params]
        self.t = Tensor.zeros((), dtype=dtypes.int32)

    def schedule_step(self) -> list[Tensor]:
        self.t.assign(self.t + 1)
        return super().schedule_step()

    def _update(self, i: int, param: Tensor, grad: Tensor) -> Tensor:
        if self.weight_decay:
            grad = grad + self.weight_decay * param
        clr = self.lr / (1 + (self.t - 1).cast(dtypes.float32) * self.lr_decay)
        s = self.sum[i].assign(self.sum[i] + grad * grad)
        return param - clr * grad / (s.sqrt() + self.eps)

    def _state(self) -> list[Tensor]:
        return [*self.sum, self.t]


class Adagrad(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, **kwargs: Any):
        for name, value in (("learning rate", lr), ("lr_decay value", lr_decay),
                            ("weight_decay value", weight_decay), ("epsilon value", eps),
                            ("initial_accumulator_value value", initial_accumulator_value)):
            _check(name, value)
        super().__init__(params, {"lr": lr, "lr_decay": lr_decay, "weight_decay": weight_decay,
                                  "initial_accumulator_value": initial_accumulator_value,
                                  "eps": eps})

    def _make(self, params: list[Tensor], g: dict[str, Any]) -> tinyopt.Optimizer:
        return _Adagrad(params, _lr_tensor(g), g["lr_decay"], g["weight_decay"],
                        g["initial_accumulator_value"], g["eps"])

    def _state_names(self) -> dict[str, str]:
        return {"sum": "sum"}

