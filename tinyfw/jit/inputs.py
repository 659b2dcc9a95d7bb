"""A call of a jitted function, seen as buffers: what it passes and what it gets back.

The tensor arguments are the *inputs*, whose buffers a replay swaps for the new call's; the other
arguments are constants, baked into the captured kernels, that later calls must repeat. What the
function returns is None, a Tensor, or tuples, lists and dicts of them; a replay gives back the
same structure with new tensors on this call's buffers (rebuilt). Buffers are the identities
here: they are compared with `is` and used as dict keys.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tinyfw.device import Buffer
from tinyfw.dtype import DType
from tinyfw.engine import realize
from tinyfw.helpers import shape_str
from tinyfw.jit.errors import JitError
from tinyfw.tensor import Tensor
from tinyfw.uop.ops import Ops, UOp


@dataclass(frozen=True)
class InputSpec:
    """What the captured call got for one tensor argument."""
    buffer: Buffer
    shape: tuple[int, ...]
    dtype: DType
    device: str


def view(buf: Buffer, shape: tuple[int, ...]) -> UOp:
    """A lazy node for buf's whole memory, in shape."""
    return UOp(Ops.BUFFER, buf.dtype, (), buf).reshape(shape)


def tensor_buffer(t: Tensor) -> Buffer:
    """The buffer of a realized tensor."""
    assert realize.is_realized(t.uop), "the tensor should have been realized"
    return realize.buffer_of(t.uop)


def positional_names(fn: Callable[..., Any]) -> list[str]:
    """The names of fn's positional parameters (none known for a builtin)."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    try:
        return [p.name for p in inspect.signature(fn).parameters.values() if p.kind in kinds]
    except (TypeError, ValueError):
        return []


def arguments(name: str, positional: list[str], args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """A call's arguments by name (the parameter's, else args[i]), split into the tensors (the
    inputs) and the others."""
    named = {(positional[i] if i < len(positional) else f"args[{i}]"): a
             for i, a in enumerate(args)}
    named.update(kwargs)
    tensors, others = {}, {}
    for arg, value in named.items():
        if isinstance(value, Tensor):
            tensors[arg] = value
        elif isinstance(value, (list, tuple, dict)) and any(
                isinstance(v, Tensor) for v in (value.values() if isinstance(value, dict)
                                                else value)):
            raise JitError(f"TinyJit({name}): argument {arg} is a {type(value).__name__} "
                           "holding tensors; only tensors passed directly are inputs a replay "
                           "can swap. Pass each tensor as an argument of its own.")
        else:
            others[arg] = value
    return tensors, others


def realize_inputs(name: str, tensors: dict[str, Tensor]) -> None:
    """Each input realized, so that it is a buffer before the call; JitError for a tensor over
    many devices, whose parts a replay could not swap."""
    if any(isinstance(t.device, tuple) for t in tensors.values()):
        raise JitError(f"TinyJit({name}): an argument is a tensor over many devices "
                       "(tinyfw/multi.py); pass it on one device and shard it inside")
    for t in tensors.values():
        t.realize()


def check_call(name: str, inputs: dict[str, InputSpec], constants: dict[str, Any],
               tensors: dict[str, Tensor], others: dict[str, Any]) -> None:
    """The call must look like the captured one (its inputs and constants): the same
    arguments, tensors of the same shapes, dtypes and devices, and equal other arguments."""
    fix = "pass arguments like the captured call's, or call .reset() (or use another " \
          "TinyJit) to capture anew"
    if tensors.keys() != inputs.keys() or others.keys() != constants.keys():
        raise JitError(f"TinyJit({name}): called with tensor arguments "
                       f"{sorted(tensors)} and others {sorted(others)}, but captured with "
                       f"{sorted(inputs)} and {sorted(constants)}: {fix}.")
    for arg, t in tensors.items():
        spec = inputs[arg]
        for what, now, then in (("shape", shape_str(t.shape), shape_str(spec.shape)),
                                ("dtype", t.dtype.name, spec.dtype.name),
                                ("device", t.device, spec.device)):
            if now != then:
                raise JitError(f"TinyJit({name}): input {arg} has {what} {now}, but "
                               f"the captured call's {arg} had {what} {then}. The "
                               f"captured kernels fit only that {what}: {fix}.")
    for arg, value in others.items():
        if not same(value, constants[arg]):
            raise JitError(f"TinyJit({name}): argument {arg} is {value!r}, but the "
                           f"captured call had {constants[arg]!r}. Non-tensor "
                           "arguments are baked into the captured kernels: pass a Tensor "
                           f"for a value that changes, or {fix}.")


def same(a: Any, b: Any) -> bool:
    """a and b are the same argument (equal, for values that compare)."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # e.g. numpy arrays: an ambiguous truth value
        return False


def output_tensors(ret: Any, name: str) -> list[Tensor]:
    """The tensors in a return value: None, a Tensor, or tuples, lists and dicts of them (as
    in tinygrad). Anything else would be returned unchanged by every replay: JitError."""
    if ret is None:
        return []
    if isinstance(ret, Tensor):
        if isinstance(ret.device, tuple):
            raise JitError(f"TinyJit({name}): the function returned a tensor over many devices "
                           "(tinyfw/multi.py): return it gathered on one, .to(device)")
        return [ret]
    if isinstance(ret, (tuple, list, dict)):
        items = ret.values() if isinstance(ret, dict) else ret
        return [t for item in items for t in output_tensors(item, name)]
    raise JitError(f"TinyJit({name}): the function returned a {type(ret).__name__}; a replay "
                   "does not run the function, so only tensors (whose buffers replays refresh) "
                   "can be returned. Return a Tensor, or a tuple, list or dict of tensors, or "
                   "None.")


def returned_buffers(ret: Any) -> list[Buffer]:
    """The buffers of the tensors in the return value a capture kept (output_tensors checked
    it then, so nothing is raised here)."""
    return [tensor_buffer(t) for t in output_tensors(ret, "")]


def rebuilt(ret: Any, swap: dict[Buffer, Buffer]) -> Any:
    """The captured return value with each tensor replaced by a new one on its buffer, swapped
    if swap has it: never a tensor the caller already holds, which it may have assigned to (an
    assign to a returned tensor made the next replays return that tensor's new value)."""
    if isinstance(ret, Tensor):
        buf = tensor_buffer(ret)
        return Tensor(view(swap.get(buf, buf), ret.shape))
    if isinstance(ret, dict):
        return {key: rebuilt(value, swap) for key, value in ret.items()}
    if isinstance(ret, (tuple, list)):
        values = [rebuilt(value, swap) for value in ret]
        return type(ret)(*values) if hasattr(ret, "_fields") else type(ret)(values)  # namedtuple
    return ret
