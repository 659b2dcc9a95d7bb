"""torch.nn's layers as Modules: tinyfw.nn's layers where they exist (the Module registers their
tensors under torch's names), the rest from tinyfw.torch.nn.functional. Each parameter starts
from torch's distribution (kaiming_uniform with a = sqrt(5) for Linear and Conv: uniform in
+-1/sqrt(fan_in), as tinyfw's layers draw them)."""
from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from tinyfw import nn as tnn
from tinyfw.dtype import dtypes
from tinyfw.helpers import prod
from tinyfw.mixin.nn_ops import IntOrTuple, make_tuple
from tinyfw.tensor import Tensor
from tinyfw.torch.nn import functional as F
from tinyfw.torch.nn.module import Module, Parameter


def _uniform_parameter(*shape: int, bound: float) -> Parameter:
    return Parameter(Tensor.uniform(*shape, low=-bound, high=bound))


# --- containers ---


class Sequential(Module):
    """Modules called one after another; indexed, sliced and iterated as a list."""

    def __init__(self, *args: Any):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], (OrderedDict, dict)):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input: Any) -> Any:  # noqa: A002
        for m in self._modules.values():
            if m is not None:
                input = m(input)
        return input

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(m for m in self._modules.values() if m is not None)

    def __getitem__(self, idx: int | slice) -> Any:
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(items[idx]))
        return getattr(self, items[idx][0])

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """A list of modules, registered (so their parameters are the model's)."""

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        for m in modules or []:
            self.append(m)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Any]:
        return iter(getattr(self, name) for name in self._modules)

    def __getitem__(self, idx: int | slice) -> Any:
        names = list(self._modules)
        if isinstance(idx, slice):
            return ModuleList([getattr(self, n) for n in names[idx]])
        return getattr(self, names[idx])

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, list(self._modules)[idx], module)


class ModuleDict(Module):
    """A dict of modules, registered under their keys."""

    def __init__(self, modules: Mapping[str, Module] | None = None):
        super().__init__()
        for name, m in (modules or {}).items():
            self[name] = m

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key) if key in self._modules else self._missing(key)

    def _missing(self, key: str) -> Any:
        raise KeyError(key)

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def values(self) -> Iterable[Any]:
        return [getattr(self, k) for k in self._modules]

    def items(self) -> Iterable[tuple[str, Any]]:
        return [(k, getattr(self, k)) for k in self._modules]


# --- linear, convolution ---


class Identity(Module):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input


class Linear(Module):
    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        layer = tnn.Linear(in_features, out_features, bias)
        self.weight = Parameter(layer.weight)
        self.bias = Parameter(layer.bias) if layer.bias is not None else None
        if not bias:
            self.register_parameter("bias", None)
        _place(self, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class _ConvNd(Module):
    n: int = 2
    transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple = 1, padding: IntOrTuple | str = 0,
                 dilation: IntOrTuple = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None,
                 output_padding: IntOrTuple = 0):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise NotImplementedError(f"padding_mode={padding_mode!r}: tinyfw's Conv takes "
                                      "zeros only; pad with F.pad(x, ..., mode=...) first")
        n = self.n
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = make_tuple(kernel_size, n)
        self.stride, self.dilation = make_tuple(stride, n), make_tuple(dilation, n)
        self.padding = padding if isinstance(padding, str) else make_tuple(padding, n)
        self.output_padding = make_tuple(output_padding, n)
        self.padding_mode = padding_mode
        if self.transposed:  # torch: weight (in, out / groups, *k), fan_in from its axis 1
            shape = (in_channels, out_channels // groups, *self.kernel_size)
            fan_in = out_channels // groups * prod(self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
            fan_in = in_channels // groups * prod(self.kernel_size)
        bound = 1 / math.sqrt(fan_in)
        self.weight = _uniform_parameter(*shape, bound=bound)
        if bias:
            self.bias = _uniform_parameter(out_channels, bound=bound)
        else:
            self.register_parameter("bias", None)
        _place(self, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if self.transposed:
            return input.conv_transpose2d(self.weight, self.bias, self.groups, self.stride,
                                          self.dilation, self.padding,  # type: ignore[arg-type]
                                          self.output_padding)
        return F._conv(self.n, input, self.weight, self.bias, self.stride, self.padding,
                       self.dilation, self.groups)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self.n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self.n:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    n = 1


class Conv2d(_ConvNd):
    n = 2


class Conv3d(_ConvNd):
    n = 3


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple = 1, padding: IntOrTuple = 0,
                 output_padding: IntOrTuple = 0, groups: int = 1, bias: bool = True,
                 dilation: IntOrTuple = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)


class ConvTranspose1d(_ConvTransposeNd):
    n = 1


class ConvTranspose2d(_ConvTransposeNd):
    n = 2


# --- pooling ---


class _Pool(Module):
    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, **kwargs: Any):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.options = kwargs

    def extra_repr(self) -> str:
        stride = self.kernel_size if self.stride is None else self.stride
        return f"kernel_size={self.kernel_size}, stride={stride}, padding={self.padding}"


class MaxPool1d(_Pool):
    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, dilation: IntOrTuple = 1, return_indices: bool = False,
                 ceil_mode: bool = False):
        super().__init__(kernel_size, stride, padding, dilation=dilation,
                         return_indices=return_indices, ceil_mode=ceil_mode)

    def extra_repr(self) -> str:
        return (f"{super().extra_repr()}, dilation={self.options['dilation']}, "
                f"ceil_mode={self.options['ceil_mode']}")

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, **self.options)


class MaxPool2d(MaxPool1d):
    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, **self.options)


class AvgPool1d(_Pool):
    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 padding: IntOrTuple = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__(kernel_size, stride, padding, ceil_mode=ceil_mode,
                         count_include_pad=count_include_pad)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, **self.options)


class AvgPool2d(AvgPool1d):
    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, **self.options)


class AdaptiveAvgPool1d(Module):
    def __init__(self, output_size: Any):
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(AdaptiveAvgPool1d):
    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.adaptive_avg_pool2d(input, self.output_size)


# --- normalization ---


class _BatchNorm(Module, tnn.BatchNorm):  # type: ignore[misc]
    """tinyfw.nn.BatchNorm as a Module: weight and bias parameters, running_mean, running_var
    and num_batches_tracked (an int64 scalar, as torch's) buffers; training mode until eval()."""
    dims: tuple[int, ...] = (2, 3)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True):
        Module.__init__(self)
        if momentum is None:
            raise NotImplementedError("BatchNorm with momentum=None (a cumulative average): "
                                      "tinyfw keeps an exponential one; give a momentum")
        tnn.BatchNorm.__init__(self, num_features, eps, affine, track_running_stats, momentum)
        self.num_features = num_features
        self.affine, self.has_bias = affine, bias
        if affine:
            self.weight = Parameter(self.weight)
            if bias:
                self.bias = Parameter(self.bias)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", self.__dict__.pop("running_mean"))
            self.register_buffer("running_var", self.__dict__.pop("running_var"))
            self.__dict__.pop("num_batches_tracked", None)
            self.register_buffer("num_batches_tracked", Tensor.zeros((), dtype=dtypes.int64))
        else:
            self.__dict__.pop("num_batches_tracked", None)
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        _place(self, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if input.ndim not in self.dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self.dims)} input (got "
                             f"{input.ndim}D input)")
        return tnn.BatchNorm.__call__(self, input)

    __call__ = Module.__call__

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.has_bias}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    dims = (4,)


class BatchNorm3d(_BatchNorm):
    dims = (5,)


class LayerNorm(Module):
    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(Tensor.ones(*self.normalized_shape))
            if bias:
                self.bias = Parameter(Tensor.zeros(*self.normalized_shape))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        _place(self, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, bias: bool = True, device: Any = None, dtype: Any = None):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = \
            num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(Tensor.ones(num_channels))
            if bias:
                self.bias = Parameter(Tensor.zeros(num_channels))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        _place(self, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class InstanceNorm2d(Module):
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        if track_running_stats:
            raise NotImplementedError("InstanceNorm2d(track_running_stats=True): tinyfw keeps "
                                      "no running statistics for instance norm")
        self.num_features, self.eps, self.affine = num_features, eps, affine
        if affine:
            self.weight = Parameter(Tensor.ones(num_features))
            self.bias = Parameter(Tensor.zeros(num_features))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        _place(self, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if input.ndim != 4:
            raise ValueError(f"expected 4D input (got {input.ndim}D input)")
        return F.instance_norm(input, weight=self.weight, bias=self.bias, eps=self.eps)


class RMSNorm(Module):
    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = Parameter(Tensor.ones(*self.normalized_shape))
        else:
            self.register_parameter("weight", None)
        _place(self, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)


# --- embedding, dropout, flatten ---


class Embedding(Module):
    """A table of num_embeddings rows of embedding_dim, drawn from N(0, 1) as torch's (the
    padding_idx row zero and never trained)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Tensor | None = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm = padding_idx, max_norm
        table = Tensor.randn(num_embeddings, embedding_dim) if _weight is None else _weight
        if padding_idx is not None and _weight is None:
            rows = Tensor.arange(num_embeddings).reshape(-1, 1)
            table = (rows == padding_idx).where(0.0, table)
        self.weight = Parameter(table, requires_grad=not _freeze)
        _place(self, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm)

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, **kwargs: Any) -> Embedding:
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, _weight=embeddings, _freeze=freeze, **kwargs)


class Dropout(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    def __init__(self, dim: int, unflattened_size: Sequence[int]):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.unflatten(self.dim, self.unflattened_size)


# --- activations ---


class _Activation(Module):
    """A Module for an elementwise function of F, with its keyword arguments."""
    fn: Any = None

    def __init__(self, **kwargs: Any):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return type(self).fn(input, **self.kwargs)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.kwargs.items() if k != "inplace" or v)


def _activation(name: str, fn: Any, **defaults: Any) -> type[_Activation]:
    def __init__(self: _Activation, *args: Any, **kwargs: Any) -> None:
        values = dict(defaults)
        for key, value in zip(defaults, args):
            values[key] = value
        for key, value in kwargs.items():
            if key not in defaults:
                raise TypeError(f"{name}.__init__() got an unexpected keyword argument '{key}'")
            values[key] = value
        _Activation.__init__(self, **values)
    return type(name, (_Activation,), {"fn": staticmethod(fn), "__init__": __init__,
                                       "__module__": __name__})


ReLU = _activation("ReLU", F.relu, inplace=False)
ReLU6 = _activation("ReLU6", F.relu6, inplace=False)
GELU = _activation("GELU", F.gelu, approximate="none")
SiLU = _activation("SiLU", F.silu, inplace=False)
Mish = _activation("Mish", F.mish, inplace=False)
Tanh = _activation("Tanh", F.tanh)
Sigmoid = _activation("Sigmoid", F.sigmoid)
Hardswish = _activation("Hardswish", F.hardswish, inplace=False)
Hardsigmoid = _activation("Hardsigmoid", F.hardsigmoid, inplace=False)
Hardtanh = _activation("Hardtanh", F.hardtanh, min_val=-1.0, max_val=1.0, inplace=False)
LeakyReLU = _activation("LeakyReLU", F.leaky_relu, negative_slope=0.01, inplace=False)
ELU = _activation("ELU", F.elu, alpha=1.0, inplace=False)
CELU = _activation("CELU", F.celu, alpha=1.0, inplace=False)
SELU = _activation("SELU", F.selu, inplace=False)
Softplus = _activation("Softplus", F.softplus, beta=1.0, threshold=20.0)
Softsign = _activation("Softsign", F.softsign)
LogSigmoid = _activation("LogSigmoid", F.logsigmoid)
Softmax = _activation("Softmax", F.softmax, dim=None)
LogSoftmax = _activation("LogSoftmax", F.log_softmax, dim=None)
Softmin = _activation("Softmin", F.softmin, dim=None)


# --- losses ---


class _Loss(Module):
    fn: Any = None

    def __init__(self, reduction: str = "mean", **kwargs: Any):
        super().__init__()
        if reduction not in ("mean", "sum", "none", "batchmean"):
            raise ValueError(f"{reduction} is not a valid value for reduction")
        self.reduction, self.kwargs = reduction, kwargs

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return type(self).fn(input, target, reduction=self.reduction, **self.kwargs)


class CrossEntropyLoss(_Loss):
    fn = staticmethod(F.cross_entropy)

    def __init__(self, weight: Tensor | None = None, size_average: Any = None,
                 ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        F._legacy(size_average, reduce)
        super().__init__(reduction, ignore_index=ignore_index, label_smoothing=label_smoothing)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.cross_entropy(input, target, self.weight, reduction=self.reduction,
                               **self.kwargs)


class NLLLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average: Any = None,
                 ignore_index: int = -100, reduce: Any = None, reduction: str = "mean"):
        F._legacy(size_average, reduce)
        super().__init__(reduction, ignore_index=ignore_index)
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.nll_loss(input, target, self.weight, reduction=self.reduction, **self.kwargs)


class MSELoss(_Loss):
    fn = staticmethod(F.mse_loss)


class L1Loss(_Loss):
    fn = staticmethod(F.l1_loss)


class SmoothL1Loss(_Loss):
    fn = staticmethod(F.smooth_l1_loss)

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 beta: float = 1.0):
        F._legacy(size_average, reduce)
        super().__init__(reduction, beta=beta)


class HuberLoss(_Loss):
    fn = staticmethod(F.huber_loss)

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction, delta=delta)


class BCELoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average: Any = None,
                 reduce: Any = None, reduction: str = "mean"):
        F._legacy(size_average, reduce)
        super().__init__(reduction)
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average: Any = None,
                 reduce: Any = None, reduction: str = "mean", pos_weight: Tensor | None = None):
        F._legacy(size_average, reduce)
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(_Loss):
    fn = staticmethod(F.kl_div)

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 log_target: bool = False):
        F._legacy(size_average, reduce)
        super().__init__(reduction, log_target=log_target)


def _place(module: Module, device: Any, dtype: Any) -> None:
    """A layer's device= and dtype= arguments."""
    if device is not None or dtype is not None:
        module.to(**{k: v for k, v in (("device", device), ("dtype", dtype)) if v is not None})


__all__ = ["Sequential", "ModuleList", "ModuleDict", "Identity", "Linear", "Conv1d", "Conv2d",
           "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "MaxPool1d", "MaxPool2d", "AvgPool1d",
           "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "BatchNorm1d", "BatchNorm2d",
           "BatchNorm3d", "LayerNorm", "GroupNorm", "InstanceNorm2d", "RMSNorm", "Embedding",
           "Dropout", "Flatten", "Unflatten", "ReLU", "ReLU6", "GELU", "SiLU", "Mish", "Tanh",
           "Sigmoid", "Hardswish", "Hardsigmoid", "Hardtanh", "LeakyReLU", "ELU", "CELU", "SELU",
           "Softplus", "Softsign", "LogSigmoid", "Softmax", "LogSoftmax", "Softmin",
           "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss",
           "BCELoss", "BCEWithLogitsLoss", "KLDivLoss"]
