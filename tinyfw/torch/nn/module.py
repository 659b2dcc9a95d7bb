"""torch.nn.Module over tinyfw's Tensor: a layer is an object that registers what it holds.

Assigning a Parameter to a module's attribute registers it as a parameter, a Module as a child,
and register_buffer a tensor that is saved but not trained (BatchNorm's running statistics).
From these registries come parameters(), state_dict() with torch's dotted keys, train() and
eval(), which reach every layer. A layer of tinyfw.nn (tinygrad's style: a plain object holding
tensors) assigned to a module is adopted as a child: its tensors that require grad become its
parameters, the others its buffers, and its mode follows the module's."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from tinyfw.nn.layers import TrainMode
from tinyfw.tensor import Tensor


class Parameter(Tensor):
    """A tensor that a Module trains: assigned to a module's attribute it is registered as one
    of its parameters. It requires grad unless told not to, and holds a buffer of its own."""
    __slots__ = ()

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = Tensor.empty(0)
        super().__init__(data if isinstance(data, Tensor) else Tensor(data))
        if requires_grad and not self.dtype.is_float:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        self.requires_grad = bool(requires_grad)
        if not requires_grad:  # a buffer of its own all the same
            self.uop = Tensor(self.numpy(), device=self.device, dtype=self.dtype).uop

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class Module:
    """The base of every layer and model: subclass it, make the layers in __init__ (after
    super().__init__()) and compute in forward; call the module, not forward."""
    training: bool
    _parameters: dict[str, Tensor | None]
    _buffers: dict[str, Tensor | None]
    _non_persistent: set[str]
    _modules: dict[str, Module | None]

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())

    # --- registering what the module holds ---
    def _registries(self) -> dict[str, dict]:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign to a Module before Module.__init__() call: call "
                                 "super().__init__() first in your __init__")
        return {"_parameters": self._parameters, "_buffers": self._buffers,
                "_modules": self._modules}

    def _forget(self, name: str) -> None:
        for registry in self._registries().values():
            registry.pop(name, None)
        self.__dict__.pop(name, None)

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Parameter):
            self._forget(name)
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._forget(name)
            self._modules[name] = value
        elif isinstance(value, TrainMode) or _is_tinyfw_layer(value):
            self._forget(name)
            self._modules[name] = Adopted(value, self.training)
        elif "_parameters" in self.__dict__ and name in self._parameters:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self._parameters[name] = None
        elif "_buffers" in self.__dict__ and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            self._buffers[name] = value
        elif "_modules" in self.__dict__ and name in self._modules and value is None:
            self._modules[name] = None
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # only called when normal lookup fails: the registries
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                value = d[registry][name]
                return value.layer if isinstance(value, Adopted) else value
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        if any(name in r for r in self._registries().values()):
            self._forget(name)
        else:
            object.__delattr__(self, name)

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor the module keeps (in state_dict, unless persistent=False) but does not
        train."""
        if "." in name or name == "":
            raise KeyError(f"buffer name can't contain \".\" or be empty, got {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._forget(name)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (torch.nn.Parameter or None required)")
        self._forget(name)
        self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        self._forget(name)
        self._modules[name] = module

    register_module = add_module

    # --- calling ---
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # --- walking the tree ---
    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo: set[int] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        memo = set() if memo is None else memo
        if remove_duplicate and id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                           remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def _named(self, kind: str, prefix: str, recurse: bool,
               remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        modules = self.named_modules(prefix=prefix) if recurse else iter([(prefix, self)])
        for mod_prefix, m in modules:
            for name, t in getattr(m, kind).items():
                if t is None or (remove_duplicate and id(t) in seen):
                    continue
                seen.add(id(t))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), t

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> Module:
        m: Module = self
        for part in target.split(".") if target else []:
            child = m._modules.get(part)
            if child is None:
                raise AttributeError(f"{type(m).__name__} has no attribute `{part}`")
            m = child
        return m

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """fn(module) on every child (depth first), then on this module, as torch's."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # --- modes ---
    def train(self, mode: bool = True) -> Module:
        """Training mode (the default) or, with mode=False, evaluation: every layer below
        honours it (BatchNorm's batch statistics, Dropout), whatever Tensor.training says."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is not None:
                p.grad = None if set_to_none else p.grad.zeros_like().realize()

    # --- state ---
    def state_dict(self, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Tensor]:
        """Parameters and persistent buffers by dotted name, as torch's keys: each module's
        own parameters, then its buffers, then its children's. The values are detached
        (keep_vars=True: the tensors themselves)."""
        out: dict[str, Tensor] = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(out, prefix + name + ".", keep_vars)
        return out

    def _own_tensors(self) -> dict[str, Tensor]:
        return self.state_dict(keep_vars=True)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy the values into the module's parameters and buffers of the same names (each
        keeps its identity, dtype and device). strict: the keys must be exactly the module's.
        Shapes must always match. On an error nothing is loaded (torch's RuntimeError)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        own = self._own_tensors()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        if strict:
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.append("Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        for name, t in own.items():
            if name in state_dict:
                shape = tuple(np.shape(_as_array(state_dict[name])))
                if shape != t.shape:
                    errors.append(f"size mismatch for {name}: copying a param with shape "
                                  f"{_torch_size(shape)} from checkpoint, the shape in current "
                                  f"model is {_torch_size(t.shape)}.")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        loaded = []
        for name, t in own.items():
            if name in state_dict:
                value = Tensor(_as_array(state_dict[name]), dtype=t.dtype, device=t.device)
                loaded.append(t.assign(value))
        Tensor.realize_all(*loaded)
        return _IncompatibleKeys(missing, unexpected)

    # --- devices and dtypes ---
    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Every parameter and buffer moved to a device and/or cast to a float dtype, in place
        (each keeps its identity, as torch's parameters do)."""
        from tinyfw.mixin.torch_devices import device_and_dtype
        device, dtype = device_and_dtype(*args, **kwargs)
        for t in list(self.parameters()) + list(self.buffers()):
            new = t
            if dtype is not None and t.dtype.is_float:
                new = new.cast(dtype)
            if device is not None and new.device != device:
                new = new.to(device)
            if new is not t:
                _replace_storage(t, new)
        return self

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Module:
        return self.to("cuda" if device is None else device)

    def float(self) -> Module:
        from tinyfw.dtype import dtypes
        return self.to(dtypes.float32)

    def double(self) -> Module:
        from tinyfw.dtype import dtypes
        return self.to(dtypes.float64)

    def half(self) -> Module:
        from tinyfw.dtype import dtypes
        return self.to(dtypes.float16)

    # --- printing ---
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        for name, m in self._modules.items():
            text = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {text}")
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        extra = self.extra_repr()
        body = ([extra] if extra else []) + lines
        return f"{type(self).__name__}(\n  " + "\n  ".join(body) + "\n)"

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))


class _IncompatibleKeys(tuple):
    """load_state_dict's answer: (missing_keys, unexpected_keys), as torch's named tuple."""

    def __new__(cls, missing_keys: list[str], unexpected_keys: list[str]) -> _IncompatibleKeys:
        return super().__new__(cls, (missing_keys, unexpected_keys))

    @property
    def missing_keys(self) -> list[str]:
        return self[0]

    @property
    def unexpected_keys(self) -> list[str]:
        return self[1]

    def __repr__(self) -> str:
        if not self[0] and not self[1]:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self[0]}, unexpected_keys={self[1]})"


def _is_tinyfw_layer(value: Any) -> bool:
    """A layer object of tinyfw.nn (tinygrad's style: no base class)."""
    return type(value).__module__ == "tinyfw.nn.layers"


class Adopted(Module):
    """A tinyfw.nn layer held by a Module: its tensors that require grad are parameters, the
    others buffers (by their attribute names), and train()/eval() set its own mode."""

    def __init__(self, layer: Any, training: bool):
        super().__init__()
        object.__setattr__(self, "layer", layer)
        for name, value in vars(layer).items():
            if isinstance(value, Tensor):
                (self._parameters if value.requires_grad else self._buffers)[name] = value
        self.train(training)

    def train(self, mode: bool = True) -> Module:
        super().train(mode)
        if isinstance(self.layer, TrainMode):
            self.layer.train(mode)
        return self

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.layer(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{type(self.layer).__name__}(tinyfw.nn layer)"


def _as_array(value: Any) -> np.ndarray:
    return value.numpy() if isinstance(value, Tensor) else np.asarray(value)


def _torch_size(shape: tuple[int, ...]) -> str:
    return f"torch.Size([{', '.join(map(str, shape))}])"


def _replace_storage(t: Tensor, new: Tensor) -> None:
    """t takes new's value, dtype and device in a buffer of its own, keeping its identity (and
    so its place in an optimizer): Module.to."""
    t.uop = Tensor(new.numpy(), device=new.device, dtype=new.dtype).uop
    t._view = None


__all__ = ["Module", "Parameter"]
