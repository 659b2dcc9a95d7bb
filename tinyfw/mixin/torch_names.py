"""torch's names on tinyfw's Tensor, in one place: the methods a PyTorch program calls that
tinyfw names otherwise (dim(), requires_grad_, type_as, cuda, the in-place methods with a
trailing underscore), and torch's argument names accepted by every method: a method that takes
tinyfw's `axis` takes torch's `dim` (and `dims`) too, rewritten once, when the Tensor class is
made (TorchNames.__init_subclass__). A name that exists in neither raises an AttributeError
that names what to use.

Each in-place method assigns (Tensor.assign) its result to the tensor and returns the tensor:
views write through to their base and a TinyJit follows the change, as for any assign."""
from __future__ import annotations

import difflib
import functools
import inspect
import math
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

from tinyfw.dtype import DType, torch_name
from tinyfw.helpers import normalize_axis
from tinyfw.mixin.torch_devices import device_and_dtype, tinyfw_device

# torch's answer to x.max(dim=...), x.min(dim=...): values and where they are
ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])

# what a PyTorch user reaches for that tinyfw has under another name, or not at all
HINTS = {
    "grad_fn": "tinyfw keeps no grad_fn: x.requires_grad and x.is_leaf say whether x is in a "
               "graph",
    "data_ptr": "tinyfw's tensors are lazy; x.numpy() gives the values",
    "storage": "tinyfw's tensors are lazy; x.numpy() gives the values",
    "untyped_storage": "tinyfw's tensors are lazy; x.numpy() gives the values",
    "retain_grad": "every tensor that requires grad can be differentiated with "
                   "y.gradient(x) (tinyfw keeps .grad of leaves only)",
    "register_hook": "tinyfw has no gradient hooks: read or change .grad after backward()",
    "pin_memory": "not needed: tinyfw copies from numpy memory",
    "share_memory_": "tinyfw has no shared-memory tensors",
    "apply_": "compute with tensor ops, or x.numpy() and Tensor(...) back",
    "map_": "compute with tensor ops, or x.numpy() and Tensor(...) back",
    "index_put_": "x[indices] = values",
    "as_strided": "tinyfw's tensors are lazy views of no fixed memory: slicing, reshape, "
                  "permute, expand and unfold make the views torch's strides would",
    "squeeze_": "x = x.squeeze(...) (tinyfw changes no tensor's shape in place)",
    "unsqueeze_": "x = x.unsqueeze(...) (tinyfw changes no tensor's shape in place)",
    "t_": "x = x.t() (tinyfw changes no tensor's shape in place)",
    "transpose_": "x = x.transpose(...) (tinyfw changes no tensor's shape in place)",
    "resize_": "x.reshape(...) (tinyfw's tensors cannot change their number of elements)",
}


class TorchNames:
    """torch's names for what tinyfw's Tensor does (mixed into Tensor)."""
    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("_torch_names_done"):  # (a class made from Tensor: see below)
            return
        for name in dir(cls):
            if name.startswith("_"):
                continue
            static = inspect.getattr_static(cls, name)
            if inspect.isfunction(static) and not getattr(static, "_torch_names", False):
                wrapped = _accept_dim(static, _mixin_owner(cls, name))
                if wrapped is not static:
                    setattr(cls, name, wrapped)
        for name in ("max", "min"):
            setattr(cls, name, _values_and_indices(getattr(cls, name), name,
                                                   _mixin_owner(cls, name)))
        cls.to = _torch_to(cls.to)  # type: ignore[attr-defined]
        randint = inspect.getattr_static(cls, "randint", None)
        if isinstance(randint, staticmethod) and not getattr(randint.__func__, "_torch_names",
                                                              False):
            cls.randint = staticmethod(_torch_randint(randint.__func__))  # type: ignore

    @classmethod
    def from_numpy(cls, ndarray: Any) -> Any:
        """torch.from_numpy: a tensor of the array's dtype and values (a copy)."""
        return cls(ndarray)  # type: ignore[call-arg]

    def __getattr__(self, name: str) -> Any:
        # only reached when the name exists nowhere: torch's AttributeError, with a hint
        if name.startswith("_"):
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        hint = HINTS.get(name)
        if hint is None:
            close = difflib.get_close_matches(name, [n for n in dir(type(self))
                                                     if not n.startswith("_")], n=3)
            hint = ("did you mean " + ", ".join(close) + "?") if close else \
                "see the site's page 'Coming from PyTorch' for what tinyfw calls it"
        raise AttributeError(f"'Tensor' object has no attribute '{name}': {hint}")

    # --- facts ---
    def dim(self: Any) -> int:
        return self.ndim

    ndimension = dim

    def nelement(self: Any) -> int:
        return self.numel()

    @property
    def is_cuda(self: Any) -> bool:
        return str(self.device).upper().startswith("CUDA")

    def requires_grad_(self: Any, requires_grad: bool = True) -> Any:
        setattr(self, "requires_grad", requires_grad)  # noqa: B010  (Tensor's property)
        return self

    # --- like another tensor ---
    def type_as(self: Any, other: Any) -> Any:
        return self.cast(other.dtype)

    def view_as(self: Any, other: Any) -> Any:
        return self.view(other.shape)

    def reshape_as(self: Any, other: Any) -> Any:
        return self.reshape(other.shape)

    def expand_as(self: Any, other: Any) -> Any:
        return self.expand(other.shape)

    def new_zeros(self: Any, *size: Any, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Any:
        return self._new("zeros", size, dtype, device, requires_grad)

    def new_ones(self: Any, *size: Any, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> Any:
        return self._new("ones", size, dtype, device, requires_grad)

    def new_empty(self: Any, *size: Any, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Any:
        return self._new("empty", size, dtype, device, requires_grad)

    def new_full(self: Any, size: Any, fill_value: Any, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> Any:
        t = type(self).full(tuple(size), fill_value, dtype=dtype or self.dtype,
                            device=device or self.device)
        return t.requires_grad_(True) if requires_grad else t

    def new_tensor(self: Any, data: Any, dtype: Any = None, device: Any = None,
                   requires_grad: bool = False) -> Any:
        t = type(self)(data, dtype=dtype or self.dtype, device=device or self.device)
        return t.requires_grad_(True) if requires_grad else t

    def _new(self: Any, kind: str, size: tuple, dtype: Any, device: Any,
             requires_grad: bool) -> Any:
        t = getattr(type(self), kind)(*size, dtype=dtype or self.dtype,
                                      device=device or self.device)
        return t.requires_grad_(True) if requires_grad else t

    # --- devices ---
    def cpu(self: Any) -> Any:
        return self.to("CPU")

    def cuda(self: Any, device: Any = None, non_blocking: bool = False) -> Any:
        name = "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int)
                                              else device)
        return self.to(tinyfw_device(name))

    # --- linear algebra by torch's names ---
    def t(self: Any) -> Any:
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self.ndim}D")
        return self.T if self.ndim == 2 else self

    def mm(self: Any, mat2: Any) -> Any:
        return self.matmul(mat2)

    bmm = mm
    mv = mm

    def index_select(self: Any, dim: int, index: Any) -> Any:
        return self[(slice(None),) * (dim % self.ndim) + (index,)]

    def remainder(self: Any, other: Any) -> Any:
        """torch.remainder: x - floor(x / y) * y, the sign of y (x % y)."""
        return self % other

    def outer(self: Any, vec2: Any) -> Any:
        """The outer product of two 1-D tensors, as torch.outer."""
        if self.ndim != 1 or vec2.ndim != 1:
            raise RuntimeError(f"outer: expected 1-D tensors, but got {self.ndim}-D and "
                               f"{vec2.ndim}-D")
        return self.reshape(-1, 1) * vec2.reshape(1, -1)

    def trace(self: Any) -> Any:
        """The sum of the main diagonal of a 2-D tensor, as torch.trace."""
        if self.ndim != 2:
            raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
        return self.diagonal().sum()

    def norm(self: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Any:
        """torch.norm's vector norms over dim (all elements when None): p = 2 or "fro" the
        square root of the sum of squares, inf / -inf the largest / smallest magnitude, 0 the
        count of nonzeros, any other p (sum |x|^p)^(1/p). The gradient of a norm that is 0 is
        0, as torch's (not the root's inf times 0)."""
        if not self.dtype.is_float:
            raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor "
                               f"as input. Got {torch_name(self.dtype)}")
        if p in ("fro", 2, 2.0):
            return _root((self * self).sum(dim, keepdim=keepdim), 2)
        if p == "nuc":
            raise NotImplementedError("torch.norm(p='nuc') (the nuclear norm) is not supported:"
                                      " sum the singular values of x.svd()")
        magnitude = self.abs()
        if p == float("inf"):
            return magnitude.max(dim, keepdim=keepdim)
        if p == float("-inf"):
            return magnitude.min(dim, keepdim=keepdim)
        if p == 0:
            # 1 for each nonzero; |x| (0) for a zero: the count, with torch's gradient 0
            return (self != 0).where(1.0, magnitude).sum(dim, keepdim=keepdim)
        if p == 1:
            return magnitude.sum(dim, keepdim=keepdim)
        # a zero element's power is a constant (0, or inf for p < 0), its gradient 0 as torch's
        # (not |x|^(p - 1)'s inf at 0 times 0)
        zero = magnitude == 0
        powered = zero.where(math.inf if p < 0 else 0.0, zero.where(1.0, magnitude) ** p)
        return _root(powered.sum(dim, keepdim=keepdim), p)

    # --- views by torch's names (each a view of self, as torch's) ---
    def narrow(self: Any, dim: int, start: Any, length: int) -> Any:
        """Elements start..start+length of axis dim (start may be negative, or a 0-d
        tensor)."""
        d = normalize_axis(dim, self.ndim)
        size = self.shape[d]
        first = int(start.item() if hasattr(start, "item") else start)
        first = first + size if first < 0 else first
        if not 0 <= first <= size:
            raise IndexError(f"start out of range (expected to be in range of [{-size}, "
                             f"{size}], but got {int(first)})")
        if length < 0 or first + length > size:
            raise RuntimeError(f"start ({first}) + length ({length}) exceeds dimension size "
                               f"({size}).")
        return self.shrink(tuple((first, first + length) if i == d else None
                                 for i in range(self.ndim)))

    def select(self: Any, dim: int, index: int) -> Any:
        """Element index of axis dim, that axis removed."""
        d = normalize_axis(dim, self.ndim)
        size = self.shape[d]
        if not -size <= index < size:
            raise IndexError(f"select(): index {index} out of range for tensor of size "
                             f"{tuple(self.shape)} at dimension {dim}")
        return self[(slice(None),) * d + (index,)]

    def unbind(self: Any, dim: int = 0) -> tuple[Any, ...]:
        """Each element of axis dim (that axis removed), as a tuple of views."""
        d = normalize_axis(dim, self.ndim)
        return tuple(self.select(d, i) for i in range(self.shape[d]))

    def movedim(self: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
        """Axes source moved to positions destination, the others in their order."""
        src = [source] if isinstance(source, int) else list(source)
        dst = [destination] if isinstance(destination, int) else list(destination)
        if len(src) != len(dst):
            raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} "
                               f"dims) should contain the same number of dims as destination "
                               f"({dst} dims)")
        src = [normalize_axis(a, self.ndim) for a in src]
        dst = [normalize_axis(a, self.ndim) for a in dst]
        for name, axes in (("source", src), ("destination", dst)):
            if len(set(axes)) != len(axes):
                raise RuntimeError(f"movedim: repeated dim in `{name}` ({axes})")
        rest = iter(a for a in range(self.ndim) if a not in src)
        placed = dict(zip(dst, src))
        return self.permute([placed[i] if i in placed else next(rest)
                             for i in range(self.ndim)])

    moveaxis = movedim

    # --- in place: each assigns its result and returns the tensor ---
    def _set(self: Any, value: Any) -> Any:
        return self._write(value)

    def add_(self: Any, other: Any, alpha: float = 1) -> Any:
        return self._set(self + (other * alpha if alpha != 1 else other))

    def sub_(self: Any, other: Any, alpha: float = 1) -> Any:
        return self._set(self - (other * alpha if alpha != 1 else other))

    def mul_(self: Any, other: Any) -> Any:
        return self._set(self * other)

    def div_(self: Any, other: Any, rounding_mode: str | None = None) -> Any:
        return self._set(self.div(other, rounding_mode=rounding_mode)
                         if rounding_mode else self / other)

    def pow_(self: Any, exponent: Any) -> Any:
        return self._set(self ** exponent)

    def addcmul_(self: Any, tensor1: Any, tensor2: Any, value: float = 1) -> Any:
        return self._set(self + value * tensor1 * tensor2)

    def addcdiv_(self: Any, tensor1: Any, tensor2: Any, value: float = 1) -> Any:
        return self._set(self + value * tensor1 / tensor2)

    def lerp_(self: Any, end: Any, weight: Any) -> Any:
        return self._set(self.lerp(end, weight))

    def clamp_(self: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002
        return self._set(self.clamp(min, max))

    clip_ = clamp_

    def clamp_min_(self: Any, min: Any) -> Any:  # noqa: A002
        return self.clamp_(min, None)

    def clamp_max_(self: Any, max: Any) -> Any:  # noqa: A002
        return self.clamp_(None, max)

    def masked_fill_(self: Any, mask: Any, value: Any) -> Any:
        return self._set(self.masked_fill(mask, value))

    def zero_(self: Any) -> Any:
        return self._set(self.zeros_like())

    def fill_(self: Any, value: Any) -> Any:
        value = value.item() if hasattr(value, "item") and hasattr(value, "shape") else value
        return self._set(self.full_like(value))

    def copy_(self: Any, src: Any, non_blocking: bool = False) -> Any:
        """src's values (broadcast to this shape, cast to this dtype, copied to this device)."""
        if not isinstance(src, type(self).__mro__[0]) and not hasattr(src, "uop"):
            src = type(self)(src)
        if src.shape != self.shape:
            src = src.expand(self.shape)
        return self._set(src.to(self.device) if src.device != self.device else src)

    def uniform_(self: Any, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Any:
        return self._set(type(self).uniform(*self.shape, low=a, high=b,
                                            dtype=self.dtype, device=self.device))

    def normal_(self: Any, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Any:
        return self._set(type(self).normal(*self.shape, mean=mean, std=std,
                                           dtype=self.dtype, device=self.device))

    def bernoulli_(self: Any, p: float = 0.5, generator: Any = None) -> Any:
        draw = type(self).rand(*self.shape, device=self.device)
        return self._set((draw < p).cast(self.dtype))


def _root(total: Any, p: float) -> Any:
    """total ** (1 / p), its gradient 0 where total is 0 (a zero vector's norm, as torch's)."""
    nonzero = total != 0
    rooted = nonzero.where(total, 1)
    return nonzero.where(rooted.sqrt() if p == 2 else rooted ** (1.0 / p), 0.0)


def _unary_inplace(name: str) -> Callable[[Any], Any]:
    def method(self: Any) -> Any:
        return self._set(getattr(self, name)())
    method.__name__ = name + "_"
    method.__doc__ = f"self = self.{name}(), in place"
    return method


for _name in ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "relu", "sigmoid", "tanh", "floor",
              "ceil", "round", "trunc", "sign", "reciprocal", "square", "sin", "cos"):
    setattr(TorchNames, _name + "_", _unary_inplace(_name))


def _mixin_owner(cls: type, name: str) -> type | None:
    """The mixin class (not cls itself) whose own method name is, where it is one: a wrapper on
    cls then calls what that class holds at the time of the call, so that a method put into
    the mixin later (a learner's code, chapters/learner.py) is the one that runs."""
    owner = next((c for c in cls.__mro__ if name in c.__dict__), None)
    return None if owner is cls else owner


def _current(fn: Callable[..., Any], owner: type | None) -> Callable[..., Any]:
    """owner's method of fn's name now (fn itself where there is no owner, or it holds none)."""
    if owner is None:
        return fn
    now = owner.__dict__.get(fn.__name__, fn)
    return now if callable(now) else fn


def _accept_dim(fn: Callable[..., Any], owner: type | None = None) -> Callable[..., Any]:
    """fn, taking torch's dim= (and dims=) for its axis= where it has axis and no dim (fn as
    owner holds it at each call, see _mixin_owner)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn
    if "axis" not in params or "dim" in params:
        return fn
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for alias in ("dim", "dims"):
            if alias in kwargs:
                if "axis" in kwargs:
                    raise TypeError(f"{name}() got both 'axis' and its torch name '{alias}'")
                kwargs["axis"] = kwargs.pop(alias)
        return _current(fn, owner)(*args, **kwargs)
    wrapper._torch_names = True  # type: ignore[attr-defined]
    return wrapper


def _values_and_indices(fn: Callable[..., Any], name: str,
                        owner: type | None = None) -> Callable[..., Any]:
    """max and min: tinygrad's (the values) for axis, torch's (values, indices) for dim=."""
    if getattr(fn, "_torch_values_indices", False):
        return fn
    original = getattr(fn, "__wrapped__", fn)

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        arg = _current(original, owner)
        if "dim" in kwargs and not args:
            dim, keepdim = kwargs.pop("dim"), kwargs.pop("keepdim", False)
            if kwargs:
                raise TypeError(f"{name}() got an unexpected keyword argument "
                                f"'{next(iter(kwargs))}'")
            indices = getattr(self, "arg" + name)(dim, keepdim)
            if self.ndim == 0:
                return ValuesIndices(arg(self, dim, keepdim), indices)
            # the values read at the indices: the gradient goes to the one place torch's does
            # (the first of tied extremes), not shared among them as amax/amin share it
            at = indices if keepdim else indices.unsqueeze(dim)
            values = self.gather(dim, at)
            return ValuesIndices(values if keepdim else values.squeeze(dim), indices)
        out = arg(self, *args, **kwargs)
        if args and type(args[0]) is int and getattr(out, "ndim", 0) >= 1:
            out.__class__ = _unpack_refused(type(out), name, args[0])  # type: ignore[arg-type]
        return out
    wrapper._torch_values_indices = True  # type: ignore[attr-defined]
    wrapper._torch_names = True  # type: ignore[attr-defined]
    return wrapper


def _torch_randint(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Tensor.randint(*shape, low=, high=) as tinygrad's, and torch's forms too:
    randint(high, size) and randint(low, high, size), size a tuple."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[-1], (tuple, list)) and 1 <= len(args) - 1 <= 2 and \
                all(isinstance(a, int) for a in args[:-1]) and "low" not in kwargs and \
                "high" not in kwargs:
            bounds = args[:-1]
            low, high = (0, bounds[0]) if len(bounds) == 1 else bounds
            return fn(*args[-1], low=low, high=high, **kwargs)
        return fn(*args, **kwargs)
    wrapper._torch_names = True  # type: ignore[attr-defined]
    return wrapper


@functools.cache
def _unpack_refused(cls: type, name: str, axis: int) -> type:
    """cls, but unpacking it raises: tinygrad's x.max(1) is the values alone (torch.amax),
    where torch's x.max(1) is (values, indices), so torch's `_, i = x.max(1)` would silently
    take a row of values for the indices."""
    def __iter__(self: Any) -> Any:
        raise TypeError(f"x.{name}({axis}) is tinygrad's {name} over axis {axis}: the values "
                        f"alone (torch.a{name}), so it does not unpack into (values, indices). "
                        f"Write x.{name}(dim={axis}) for torch's named tuple, or "
                        f"x.arg{name}({axis}) for the indices")
    return type(cls.__name__, (cls,), {"__slots__": (), "__iter__": __iter__,
                                       "__module__": cls.__module__, "_torch_names_done": True})


def _torch_to(fn: Callable[..., Any]) -> Callable[..., Any]:
    """to(device) as tinyfw's, plus torch's forms: to(dtype), to(device, dtype), to(tensor),
    to(device=..., dtype=...), a torch.device or torch's names ('cuda', 'cpu')."""
    if getattr(fn, "_torch_to", False):
        return fn

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], (str, tuple)) and \
                not isinstance(args[0], DType):
            try:
                return fn(self, args[0])
            except RuntimeError:
                pass  # maybe torch's spelling ("cuda"): converted below

        device, dtype = device_and_dtype(*args, **kwargs)
        out = self
        if dtype is not None and dtype != self.dtype:
            out = out.cast(dtype)
        if device is not None and device != self.device:
            out = fn(out, device)
        return out
    wrapper._torch_to = True  # type: ignore[attr-defined]
    wrapper._torch_names = True  # type: ignore[attr-defined]
    return wrapper
