"""torch.nn.init: fill a tensor in place from a distribution (each through Tensor.assign, so
the tensor keeps its identity and requires_grad), with torch's gains and fans."""
from __future__ import annotations

import math

from tinyfw.tensor import Tensor

_GAINS = {"linear": 1.0, "conv1d": 1.0, "conv2d": 1.0, "conv3d": 1.0, "conv_transpose1d": 1.0,
          "conv_transpose2d": 1.0, "conv_transpose3d": 1.0, "sigmoid": 1.0, "tanh": 5 / 3,
          "relu": math.sqrt(2.0), "selu": 3 / 4}


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity not in _GAINS:
        raise ValueError(f"Unsupported nonlinearity {nonlinearity}")
    return _GAINS[nonlinearity]


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fill(tensor: Tensor, value: Tensor) -> Tensor:
    tensor.assign(value.cast(tensor.dtype).detach()).realize()
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: object = None) -> Tensor:
    return _fill(tensor, Tensor.uniform(*tensor.shape, low=a, high=b, device=tensor.device))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: object = None) -> Tensor:
    return _fill(tensor, Tensor.normal(*tensor.shape, mean=mean, std=std, device=tensor.device))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: object = None) -> Tensor:
    """N(mean, std) cut to [a, b]: drawn by inverting the normal's CDF between its values at a
    and b, as torch does."""
    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0
    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    u = Tensor.uniform(*tensor.shape, low=2 * lo - 1, high=2 * hi - 1, device=tensor.device)
    value = _erfinv(u) * (std * math.sqrt(2.0)) + mean
    return _fill(tensor, value.clamp(a, b))


def _erfinv(y: Tensor) -> Tensor:
    """erf's inverse: Newton's method on erf from a rough first guess, kept within +-6."""
    w = -((1 - y) * (1 + y)).log()
    x = (w < 5).where(y * (1.50140941 + 0.246640727 * (w - 2.5)),
                      y * (2.83297682 + (w.sqrt() - 3) * 1.00167406))
    for _ in range(6):
        x = (x - (x.erf() - y) / (2 / math.sqrt(math.pi) * (-x * x).exp())).clamp(-6.0, 6.0)
    return x


def constant_(tensor: Tensor, val: float) -> Tensor:
    return _fill(tensor, tensor.full_like(val))


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, Tensor.eye(tensor.shape[0], tensor.shape[1], device=tensor.device))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: object = None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: object = None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan_in if mode == "fan_in" else fan_out)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator: object = None) -> Tensor:
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator: object = None) -> Tensor:
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity))


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: object = None) -> Tensor:
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows, cols = tensor.shape[0], tensor.numel() // tensor.shape[0]
    flat = Tensor.randn(max(rows, cols), min(rows, cols), device=tensor.device)
    q, r = flat.qr()
    q = q * r.diagonal().sign().reshape(1, -1)
    if rows < cols:
        q = q.T
    return _fill(tensor, (q[:rows, :cols] * gain).reshape(tensor.shape))
