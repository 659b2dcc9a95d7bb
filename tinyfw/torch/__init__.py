"""tinyfw.torch: the front door for a PyTorch program. Import it in place of torch:

    import tinyfw.torch as torch
    from tinyfw.torch import nn, optim, linalg
    import tinyfw.torch.nn.functional as F
    from tinyfw.torch.utils.data import DataLoader, Dataset, TensorDataset

Everything here is tinyfw's own Tensor, layers and optimizers under torch's names and
arguments (torch itself is never imported). The tensors are lazy: values are computed when
read (item, numpy, print) or realized. What differs from torch and why: the site's page
"Coming from PyTorch"."""
from __future__ import annotations

import builtins
import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tinyfw.dtype import DType, dtypes
from tinyfw.tensor import Tensor
from tinyfw.mixin import torch_devices
from tinyfw.mixin.torch_devices import cuda_available, tinyfw_device

# --- dtypes, by torch's names ---
float32 = float = dtypes.float32  # noqa: A001
float64 = double = dtypes.float64
float16 = half = dtypes.float16
bfloat16 = dtypes.bfloat16
int8, int16, uint8 = dtypes.int8, dtypes.int16, dtypes.uint8
int32 = int = dtypes.int32  # noqa: A001
int64 = long = dtypes.int64
uint16, uint32, uint64 = dtypes.uint16, dtypes.uint32, dtypes.uint64
bool = dtypes.bool  # noqa: A001
dtype = DType
Size = tuple
_default_dtype = dtypes.float32


def get_default_dtype() -> DType:
    return _default_dtype


def is_tensor(obj: Any) -> builtins.bool:
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> builtins.bool:  # noqa: A002
    return input.dtype.is_float


# --- making tensors ---


def _infer_dtype(data: Any) -> DType | None:
    """torch's dtype for Python data: bool, int64 for ints, the default float for floats."""
    if isinstance(data, (np.ndarray, np.generic)):
        return None  # numpy's own dtype
    flat = np.asarray(data)
    if flat.dtype == np.bool_:
        return dtypes.bool
    if np.issubdtype(flat.dtype, np.integer):
        return dtypes.int64
    if np.issubdtype(flat.dtype, np.floating):
        return _default_dtype
    return None


def tensor(data: Any, dtype: DType | None = None, device: Any = None,
           requires_grad: builtins.bool = False, pin_memory: builtins.bool = False) -> Tensor:
    """A new tensor holding a copy of data (a number, nested lists, a numpy array, a Tensor)."""
    if isinstance(data, Tensor):
        data = data.numpy()
    dt = dtype if dtype is not None else _infer_dtype(data)
    out = Tensor(np.array(data), dtype=dt, device=_dev(device))
    if requires_grad:
        out.requires_grad = True
    return out


def as_tensor(data: Any, dtype: DType | None = None, device: Any = None) -> Tensor:
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device) if (dtype or device) else data  # type: ignore
    return tensor(data, dtype, device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor of the array's dtype and values (copied: tinyfw's tensors never alias numpy
    memory)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    return Tensor(ndarray)


def _dev(d: Any) -> str | None:
    return None if d is None else tinyfw_device(d)


def _sizes(size: tuple) -> tuple:
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size


def _made(t: Tensor, requires_grad: builtins.bool) -> Tensor:
    if requires_grad:
        t.requires_grad = True
    return t


def zeros(*size: Any, dtype: DType | None = None, device: Any = None,
          requires_grad: builtins.bool = False, out: Any = None) -> Tensor:
    return _made(Tensor.zeros(*_sizes(size), dtype=dtype or _default_dtype, device=_dev(device)),
                 requires_grad)


def ones(*size: Any, dtype: DType | None = None, device: Any = None,
         requires_grad: builtins.bool = False) -> Tensor:
    return _made(Tensor.ones(*_sizes(size), dtype=dtype or _default_dtype, device=_dev(device)),
                 requires_grad)


def empty(*size: Any, dtype: DType | None = None, device: Any = None,
          requires_grad: builtins.bool = False) -> Tensor:
    return _made(Tensor.empty(*_sizes(size), dtype=dtype or _default_dtype, device=_dev(device)),
                 requires_grad)


def full(size: Sequence[builtins.int], fill_value: Any, dtype: DType | None = None,
         device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    dt = dtype if dtype is not None else _infer_dtype(fill_value)
    return _made(Tensor.full(tuple(size), fill_value, dtype=dt, device=_dev(device)),
                 requires_grad)


def arange(start: Any, end: Any = None, step: Any = 1, dtype: DType | None = None,
           device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    if dtype is None:  # torch: int64 for ints, the default float if any bound is a float
        dtype = dtypes.int64 if builtins.all(isinstance(v, (builtins.int, np.integer))
                                    for v in (start, end, step) if v is not None) \
            else _default_dtype
    return _made(Tensor.arange(start, end, step, dtype=dtype, device=_dev(device)),
                 requires_grad)


def linspace(start: Any, end: Any, steps: builtins.int, dtype: DType | None = None,
             device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    return _made(Tensor.linspace(start, end, steps, dtype=dtype or _default_dtype,
                                 device=_dev(device)), requires_grad)


def eye(n: builtins.int, m: builtins.int | None = None, dtype: DType | None = None,
        device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    return _made(Tensor.eye(n, m, dtype=dtype or _default_dtype, device=_dev(device)),
                 requires_grad)


def rand(*size: Any, dtype: DType | None = None, device: Any = None, generator: Any = None,
         requires_grad: builtins.bool = False) -> Tensor:
    return _made(Tensor.rand(*_sizes(size), dtype=dtype or _default_dtype, device=_dev(device)),
                 requires_grad)


def randn(*size: Any, dtype: DType | None = None, device: Any = None, generator: Any = None,
          requires_grad: builtins.bool = False) -> Tensor:
    return _made(Tensor.randn(*_sizes(size), dtype=dtype or _default_dtype, device=_dev(device)),
                 requires_grad)


def randint(*args: Any, size: Any = None, dtype: DType | None = None, device: Any = None,
            generator: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    """torch's forms: randint(high, size) and randint(low, high, size)."""
    nums = list(args)
    if size is None:
        if not nums or not isinstance(nums[-1], (tuple, list)):
            raise TypeError("randint() missing the size: randint(high, size) or "
                            "randint(low, high, size), size a tuple such as (16,)")
        size = nums.pop()
    if len(nums) == 1:
        low, high = 0, nums[0]
    elif len(nums) == 2:
        low, high = nums
    else:
        raise TypeError("randint() takes randint(high, size) or randint(low, high, size)")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    return Tensor.randint(*tuple(size), low=low, high=high, dtype=dtype or dtypes.int64,
                          device=_dev(device))


def randperm(n: builtins.int, dtype: DType | None = None, device: Any = None,
             generator: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    return Tensor.randperm(n, device=_dev(device), dtype=dtype or dtypes.int64)


def _like(maker: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def like(input: Tensor, *args: Any, dtype: DType | None = None, device: Any = None,  # noqa: A002
             requires_grad: builtins.bool = False, **kwargs: Any) -> Tensor:
        return maker(input.shape, *args, dtype=dtype or input.dtype,
                     device=device or input.device, requires_grad=requires_grad)
    like.__name__ = maker.__name__ + "_like"
    return like


zeros_like, ones_like, empty_like, rand_like, randn_like = (
    _like(zeros), _like(ones), _like(empty), _like(rand), _like(randn))


def full_like(input: Tensor, fill_value: Any, dtype: DType | None = None,  # noqa: A002
              device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    return full(input.shape, fill_value, dtype=dtype or input.dtype,
                device=device or input.device, requires_grad=requires_grad)


def randint_like(input: Tensor, low: builtins.int = 0, high: builtins.int | None = None,  # noqa: A002
                 dtype: DType | None = None, device: Any = None) -> Tensor:
    if high is None:
        low, high = 0, low
    return randint(low, high, input.shape, dtype=dtype or input.dtype,
                   device=device or input.device)


# --- random state ---


def manual_seed(seed: builtins.int) -> Any:
    """Seed tinyfw's random streams (its draws differ from torch's for the same seed)."""
    Tensor.manual_seed(seed)
    return _Generator(seed)


def seed() -> builtins.int:
    entropy: Any = np.random.SeedSequence().entropy
    s = builtins.int(entropy) % 2 ** 63
    Tensor.manual_seed(s)
    return s


class _Generator:
    """torch.Generator: a seed; DataLoader and random_split draw from it (with numpy)."""

    def __init__(self, device: Any = "cpu", seed: builtins.int | None = None):
        self._seed = seed if seed is not None else 67280421310721
        self._rng = np.random.default_rng(self._seed)

    def manual_seed(self, seed: builtins.int) -> _Generator:
        self._seed, self._rng = seed, np.random.default_rng(seed)
        return self

    def initial_seed(self) -> builtins.int:
        return self._seed

    def permutation(self, n: builtins.int) -> list[builtins.int]:
        return [builtins.int(i) for i in self._rng.permutation(n)]


Generator = _Generator

# --- gradient modes ---


class _GradMode(contextlib.ContextDecorator):
    """A context (and a decorator) within which Tensor.no_grad is `not enabled`: results of ops
    are cut from the graph (nothing computed there is differentiated), as torch's."""
    enabled = False

    def __init__(self, mode: builtins.bool | None = None):
        if mode is not None:
            self.enabled = mode
        self._previous: list[builtins.bool] = []

    def __enter__(self) -> None:
        self._previous.append(Tensor.no_grad)
        Tensor.no_grad = not self.enabled

    def __exit__(self, *exc: Any) -> None:
        Tensor.no_grad = self._previous.pop()

    def __call__(self, func: Callable) -> Callable:  # type: ignore[override]
        if isinstance(func, type):
            raise TypeError("use no_grad() on functions, not classes")
        return super().__call__(func)


class no_grad(_GradMode):  # noqa: N801
    enabled = False

    def __init__(self) -> None:
        super().__init__()


class enable_grad(_GradMode):  # noqa: N801
    enabled = True

    def __init__(self) -> None:
        super().__init__()


class inference_mode(_GradMode):  # noqa: N801
    def __init__(self, mode: builtins.bool = True):
        super().__init__(not mode)


class set_grad_enabled(_GradMode):  # noqa: N801
    """Sets the mode at once (a plain call, as torch's), and as a context restores the mode
    from before it."""

    def __init__(self, mode: builtins.bool):
        super().__init__(mode)
        self._before = Tensor.no_grad
        Tensor.no_grad = not mode

    def __enter__(self) -> None:
        self._previous.append(self._before)


def is_grad_enabled() -> builtins.bool:
    return not Tensor.no_grad


# --- functions on tensors, by torch's names ---


def _method(name: str) -> Callable[..., Any]:
    """torch.name(input, ...) as input.name(...); input= accepted by keyword."""
    def function(*args: Any, **kwargs: Any) -> Any:
        if "input" in kwargs:
            args = (kwargs.pop("input"), *args)
        if not args:
            raise TypeError(f"{name}() missing 1 required positional argument: 'input'")
        return getattr(args[0], name)(*args[1:], **kwargs)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch.{name}(input, ...): input.{name}(...)"
    return function


_METHODS = (
    "abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "exp", "exp2", "expm1", "floor", "log",
    "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sin",
    "sinh", "sqrt", "square", "tan", "tanh", "trunc", "relu", "erf", "isnan", "isinf",
    "isfinite", "logical_not", "sum", "mean", "prod", "std", "var", "std_mean", "var_mean",
    "logsumexp", "cumsum", "cumprod", "cummax", "cummin", "argsort", "sort", "topk",
    "softmax", "log_softmax", "flatten", "reshape", "permute", "transpose", "squeeze",
    "unsqueeze", "flip", "roll", "tril", "triu", "diag", "diagonal", "chunk", "split", "gather",
    "masked_fill", "matmul", "dot", "clamp", "clip", "maximum", "minimum", "pow", "fmod",
    "remainder", "lerp", "allclose", "isclose", "any", "all", "eq", "ne", "add", "sub", "mul",
    "div", "t", "mm", "bmm", "mv", "index_select", "numel", "repeat_interleave", "multinomial",
    "nonzero", "masked_select", "outer", "cross", "norm", "det", "inverse", "trace",
    "logaddexp", "atan2", "hypot", "scatter", "scatter_add", "scatter_reduce", "unflatten",
    "unbind", "narrow", "select", "movedim", "moveaxis", "arctan2", "nonzero_static",
)
for _name in _METHODS:
    globals()[_name] = _method(_name)


def _values_indices(name: str) -> Callable[..., Any]:
    """torch.max/min: the largest (smallest) element, the elementwise maximum of two tensors,
    or (values, indices) along dim."""
    def function(input: Tensor, dim: Any = None, keepdim: builtins.bool = False,  # noqa: A002
                 *, out: Any = None) -> Any:
        if isinstance(dim, Tensor):
            return getattr(input, "maximum" if name == "max" else "minimum")(dim)
        if dim is None:
            return getattr(input, name)()
        return getattr(input, name)(dim=dim, keepdim=keepdim)
    function.__name__ = name
    return function


max = _values_indices("max")  # noqa: A001
min = _values_indices("min")  # noqa: A001


def argmax(input: Tensor, dim: builtins.int | None = None,  # noqa: A002
           keepdim: builtins.bool = False) -> Tensor:
    return input.argmax(dim, keepdim)


def argmin(input: Tensor, dim: builtins.int | None = None,  # noqa: A002
           keepdim: builtins.bool = False) -> Tensor:
    return input.argmin(dim, keepdim)


def cat(tensors: Sequence[Tensor], dim: builtins.int = 0, *, out: Any = None) -> Tensor:
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    return Tensor.cat(*tensors, dim=dim)


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: builtins.int = 0, *, out: Any = None) -> Tensor:
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    return Tensor.stack(*tensors, dim=dim)


def where(condition: Tensor, input: Any = None, other: Any = None) -> Any:  # noqa: A002
    if input is None and other is None:  # torch.where(condition): torch.nonzero(as_tuple)
        found: Any = condition.nonzero()
        return tuple(found[:, i] for i in range(condition.ndim))
    return condition.where(input, other)


def einsum(equation: str, *operands: Any) -> Tensor:
    return Tensor.einsum(equation, *operands)


def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002
    return input.clamp(min, None)


def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002
    return input.clamp(None, max)


def meshgrid(*tensors: Tensor, indexing: str = "ij") -> tuple[Tensor, ...]:
    return Tensor.meshgrid(*tensors, indexing=indexing)


def numel(input: Tensor) -> builtins.int:  # noqa: A002
    return input.numel()


# --- devices ---


class cuda:  # noqa: N801  (torch.cuda, the module)
    """torch.cuda: whether tinyfw's CUDA device runs here."""

    @staticmethod
    def is_available() -> builtins.bool:
        return cuda_available()

    @staticmethod
    def device_count() -> builtins.int:
        return 1 if cuda_available() else 0

    @staticmethod
    def manual_seed(seed: builtins.int) -> None:
        Tensor.manual_seed(seed)

    manual_seed_all = manual_seed

    @staticmethod
    def synchronize(device: Any = None) -> None:
        pass


class backends:  # noqa: N801
    class mps:  # noqa: N801
        @staticmethod
        def is_available() -> builtins.bool:
            return False

    class cudnn:  # noqa: N801
        deterministic = True
        benchmark = False


# --- saving and loading ---


def save(obj: Any, f: Any, **kwargs: Any) -> None:
    """Write obj (tensors, dicts, lists, numbers, strings) in PyTorch's zip format, which
    torch.load and tinyfw.torch.load read."""
    from tinyfw.nn.torch_checkpoint import torch_save
    torch_save(obj, f)


def load(f: Any, map_location: Any = None, weights_only: builtins.bool = True,
         **kwargs: Any) -> Any:
    """Read a PyTorch checkpoint (zip or legacy format) without torch, unpickling only what
    weights_only=True allows (tensors, OrderedDicts, numbers, strings); anything else raises
    pickle.UnpicklingError, as torch's."""
    from tinyfw.nn.torch_checkpoint import torch_load
    if not weights_only:
        raise NotImplementedError("tinyfw.torch.load reads weights only (weights_only=True): "
                                  "it never runs a pickle's code")
    where = None if map_location is None or callable(map_location) or \
        isinstance(map_location, dict) else tinyfw_device(map_location)
    return torch_load(f, device=where)


device = torch_devices.device  # torch.device (after the functions, whose arguments say device=)


def _lazy(name: str) -> Any:
    import importlib
    return importlib.import_module(f"tinyfw.torch.{name}")


def __getattr__(name: str) -> Any:
    if name in ("nn", "optim", "utils", "linalg"):
        return _lazy(name)
    raise AttributeError(f"module 'tinyfw.torch' has no attribute {name!r}: tinyfw.torch has "
                         "torch's most used names; see the site's page 'Coming from PyTorch' "
                         "for the rest (or use tinyfw.Tensor's methods)")


def __dir__() -> list[str]:
    return sorted([*globals(), "nn", "optim", "utils", "linalg"])

