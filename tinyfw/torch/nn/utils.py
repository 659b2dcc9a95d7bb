"""torch.nn.utils: gradient clipping, and the parameters as one vector."""
from __future__ import annotations

import math
from collections.abc import Iterable

from tinyfw.tensor import Tensor


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p.grad for p in params if p.grad is not None]


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Scale every gradient by max_norm / (total norm + 1e-6) where the total norm of all of
    them together is larger than max_norm; returns the total norm (before clipping)."""
    grads = _grads(parameters)
    if not grads:
        return Tensor(0.0)
    Tensor.realize_all(*grads)  # the backward pass, once (the norm and the scaling read it)
    if norm_type == math.inf:
        total = Tensor.stack(*[g.abs().max() for g in grads]).max()
    elif norm_type == 2:
        total = Tensor.stack(*[g.square().sum() for g in grads]).sum().sqrt()
    else:
        total = Tensor.stack(*[g.abs().pow(norm_type).sum() for g in grads]).sum() \
            .pow(1.0 / norm_type)
    total = total.realize()
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {float(norm_type)} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable this "
                           "error and scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")
    coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
    Tensor.realize_all(*[g.assign(g * coef.cast(g.dtype)) for g in grads])
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: bool | None = None) -> None:
    grads = _grads(parameters)
    Tensor.realize_all(*[g.assign(g.clamp(-clip_value, clip_value)) for g in grads])

def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    return Tensor.cat(*[p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    start = 0
    for p in parameters:
        n = p.numel()
        p.assign(vec[start:start + n].reshape(p.shape).detach()).realize()
        start += n
