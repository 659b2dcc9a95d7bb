"""Edge and bad inputs: tinyfw gives torch's result, or raises torch's exception type with a
message naming the shapes, dtypes or values involved. Each case runs on both frameworks."""
from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.conftest import UNSUPPORTED_DTYPES
from tinyfw import Device, Tensor, TinyJit, dtypes
from tinyfw.nn.state import safe_load
from tinyfw.renderer.base import NotSupportedError

NAN, INF = math.nan, math.inf


@dataclass
class Case:
    """One edge input: what tinyfw does, what torch does, and what an error message must name
    (or the dtype tinyfw must give, where it differs from torch's on purpose: int32 default)."""
    name: str
    tinyfw: Callable[[], Any]
    torch: Callable[[], Any]
    names: tuple[str, ...] = ()
    dtype: str | None = None


def t(x: Any, **kw: Any) -> Tensor:
    """A tinyfw tensor."""
    return Tensor(x, **kw)


def th(x: Any, **kw: Any) -> torch.Tensor:
    """A torch tensor (ints as int64, torch's default)."""
    return torch.tensor(x, **kw)


def _view_assign_tinyfw(index: Any, value: Any) -> Tensor:
    """x[index].assign(value) on a zeros (3, 4) tensor; the result is x."""
    x = Tensor.zeros(3, 4).contiguous().realize()
    x[index].assign(Tensor(value) if isinstance(value, list) else value)
    return x


def _view_assign_torch(index: Any, value: Any) -> torch.Tensor:
    """x[index].copy_(value) on a zeros (3, 4) tensor; the result is x."""
    x = torch.zeros(3, 4)
    x[index].copy_(torch.tensor(value, dtype=torch.float32) if isinstance(value, list)
                   else torch.tensor(value, dtype=torch.float32))
    return x


def _lazy_view_assign() -> Tensor:
    """An assign to a view of a lazy tensor changes that tensor."""
    x = Tensor.arange(6).reshape(2, 3).float() * 2
    x[1, 1:].assign(Tensor([-1.0, -2.0]))
    x.reshape(3, 2)[0].assign(Tensor([7.0, 8.0]))
    return x


def _lazy_view_assign_torch() -> torch.Tensor:
    x = torch.arange(6).reshape(2, 3).float() * 2
    x[1, 1:].copy_(torch.tensor([-1.0, -2.0]))
    x.reshape(3, 2)[0].copy_(torch.tensor([7.0, 8.0]))
    return x


def _view_of_view_assign() -> list[Tensor]:
    """A view of a view (x.T[1][::2]) writes through to x; the view shows the value too."""
    x = Tensor.zeros(3, 4).contiguous().realize()
    v = x.T[1][::2]
    v.assign(Tensor([5.0, 6.0]))
    return [x, v]


def _view_of_view_assign_torch() -> list[torch.Tensor]:
    x = torch.zeros(3, 4)
    v = x.T[1][::2]
    v.copy_(torch.tensor([5.0, 6.0]))
    return [x, v]


def _setitem() -> Tensor:
    """x[...] = value, with a number, a broadcast tensor and a list."""
    x = Tensor.zeros(3, 4).contiguous().realize()
    x[0] = 1.0
    x[1:, 2:] = Tensor([7.0, 8.0])
    x[2, :2] = [3.0, 4.0]
    return x


def _setitem_torch() -> torch.Tensor:
    x = torch.zeros(3, 4)
    x[0] = 1.0
    x[1:, 2:] = torch.tensor([7.0, 8.0])
    x[2, :2] = torch.tensor([3.0, 4.0])
    return x


def _grad(fn_name: str, lib: str) -> list[Any]:
    """The gradients of sum(fn(a, b)) at inputs with NaN, in tinyfw or torch."""
    a, b = [NAN, 1.0, NAN, 2.0, 3.0], [1.0, NAN, NAN, 2.0, 1.0]
    if lib == "torch":
        ta, tb = th(a, requires_grad=True), th(b, requires_grad=True)
        getattr(torch, fn_name)(ta, tb).sum().backward()
        return [ta.grad, tb.grad]
    fa, fb = t(a, requires_grad=True), t(b, requires_grad=True)
    getattr(fa, fn_name)(fb).sum().backward()
    return [fa.grad, fb.grad]


def _safetensors(tmp: Any, header: Any, data: bytes, length: int | None = None) -> str:
    """A file in safetensors' layout with the given header (a JSON value) and data bytes."""
    text = json.dumps(header).encode()
    path = str(tmp)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text) if length is None else length) + text + data)
    return path


def _safe(header: Any, data: bytes = b"\0" * 16, length: int | None = None) -> Any:
    """safe_load of such a file (kept in a fixed temporary path)."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        return safe_load(_safetensors(f"{d}/x.safetensors", header, data, length))


def _safetensors_torch(header: Any, data: bytes = b"\0" * 16, length: int | None = None) -> Any:
    """What the safetensors format rules give: a ValueError for a malformed file (the safetensors
    library raises its SafetensorError, a ValueError-like error; tinyfw raises ValueError)."""
    raise ValueError("invalid safetensors file")


def _jit_view_assign() -> Tensor:
    """An assign to a view inside a TinyJit: every replay writes into the base."""
    x = Tensor.zeros(3, 2).contiguous().realize()

    def step(v: Tensor) -> None:
        x[1:2].assign(x[1:2] + v)
        x.realize()
    jitted = TinyJit(step)
    for _ in range(5):
        jitted(Tensor([[1.0, 2.0]]))
    return x


def _jit_view_assign_torch() -> torch.Tensor:
    x = torch.zeros(3, 2)
    for _ in range(5):
        x[1:2] += torch.tensor([[1.0, 2.0]])
    return x


def _jit_floordiv(b: list[int]) -> Tensor:
    """x // y under TinyJit: the replays must check the divisor too (calls 3 and 4 replay)."""
    step = TinyJit(lambda x, y: (x // y).realize())
    out = None
    for divisor in ([1, 2], [2, 1], [3, 1], b):
        out = step(Tensor([6, 7]), Tensor(divisor))
    return out


def _jit_floordiv_torch(b: list[int]) -> torch.Tensor:
    return th([6, 7]) // th(b)


CASES = [
    # cat and stack called on an instance keep it (tinygrad's signature: cat(self, *args, dim))
    Case("cat_method", lambda: t([1, 2]).cat(t([3])), lambda: torch.cat([th([1, 2]), th([3])])),
    Case("cat_method_dim", lambda: t([[1], [2]]).cat(t([[3], [4]]), dim=1),
         lambda: torch.cat([th([[1], [2]]), th([[3], [4]])], 1)),
    Case("stack_method", lambda: t([1, 2]).stack(t([3, 4])),
         lambda: torch.stack([th([1, 2]), th([3, 4])])),
    Case("stack_method_dim", lambda: t([1, 2]).stack(t([3, 4]), t([5, 6]), dim=1),
         lambda: torch.stack([th([1, 2]), th([3, 4]), th([5, 6])], 1)),
    Case("cat_list", lambda: Tensor.cat([t([1]), t([2, 3])]),
         lambda: torch.cat([th([1]), th([2, 3])])),
    Case("cat_0d", lambda: Tensor.cat(t(1), t(2)), lambda: torch.cat([th(1), th(2)]),
         ("zero-dimensional", "position 0")),
    Case("stack_shapes", lambda: Tensor.stack(t([1, 2]), t([3])),
         lambda: torch.stack([th([1, 2]), th([3])]), ("[2]", "[1]")),
    # Python ints that don't fit int32 make int64 tensors; beyond int64, torch's overflow
    Case("int_2_40", lambda: t(2 ** 40), lambda: th(2 ** 40), dtype="int64"),
    Case("int_list_2_31", lambda: t([2 ** 31]), lambda: th([2 ** 31]), dtype="int64"),
    Case("int_list_neg", lambda: t([1, -2 ** 31 - 1]), lambda: th([1, -2 ** 31 - 1]),
         dtype="int64"),
    Case("int_fits", lambda: t([2 ** 31 - 1]), lambda: th([2 ** 31 - 1]), dtype="int32"),
    Case("int_overflow", lambda: t([2 ** 63]), lambda: th([2 ** 63]), ("Overflow",)),
    Case("int_overflow_0d", lambda: t(-2 ** 63 - 1), lambda: th(-2 ** 63 - 1), ("Overflow",)),
    Case("int_too_big_for_dtype", lambda: t([2 ** 40], dtype="int32"),
         lambda: th([2 ** 40], dtype=torch.int32), ("int32", "overflow")),
    Case("int_300_uint8", lambda: t(300, dtype="uint8"), lambda: th(300, dtype=torch.uint8),
         ("uint8", "300")),
    Case("float_list_int_dtype", lambda: t([1.5, -2.0], dtype="int32"),
         lambda: th([1.5, -2.0], dtype=torch.int32)),
    Case("full_2_40", lambda: Tensor.full((2,), 2 ** 40), lambda: torch.full((2,), 2 ** 40),
         dtype="int64"),
    # integer division by zero raises (at once for a number, when computed for a tensor)
    Case("floordiv_zero_number", lambda: t([5, 6]) // 0, lambda: th([5, 6]) // 0,
         ("ZeroDivisionError",)),
    Case("mod_zero_number", lambda: t([5, 6]) % 0, lambda: th([5, 6]) % 0,
         ("ZeroDivisionError",)),
    Case("floordiv_zero_tensor", lambda: t([5, 6]) // t([1, 0]),
         lambda: th([5, 6]) // th([1, 0]), ("ZeroDivisionError",)),
    Case("mod_zero_tensor", lambda: t([5, 6]) % t([0, 2]), lambda: th([5, 6]) % th([0, 2]),
         ("ZeroDivisionError",)),
    Case("rfloordiv_zero_tensor", lambda: 7 // t([1, 0]), lambda: 7 // th([1, 0]),
         ("ZeroDivisionError",)),
    Case("floordiv_zero_used_later", lambda: (t([5, 6]) // t([1, 0]) + 1).sum(),
         lambda: (th([5, 6]) // th([1, 0]) + 1).sum(), ("ZeroDivisionError",)),
    Case("floordiv_nonzero_tensor", lambda: t([5, -6]) // t([2, 4]),
         lambda: th([5, -6]) // th([2, 4])),
    Case("float_floordiv_zero", lambda: t([5.0, -1.0, 0.0]) // 0,
         lambda: th([5.0, -1.0, 0.0]) // 0),
    Case("jit_floordiv_ok", lambda: _jit_floordiv([1, 7]), lambda: _jit_floordiv_torch([1, 7])),
    Case("jit_floordiv_zero_replay", lambda: _jit_floordiv([1, 0]),
         lambda: _jit_floordiv_torch([1, 0]), ("ZeroDivisionError",)),
    # integer powers with a negative integer exponent tensor
    Case("int_pow_negative", lambda: t([3, 1, -1, -1, 2, 0, 5]) ** t([-2, -3, -3, -2, 0, 2, 1]),
         lambda: th([3, 1, -1, -1, 2, 0, 5]) ** th([-2, -3, -3, -2, 0, 2, 1])),
    Case("int_pow_number_negative", lambda: t([3]) ** -2, lambda: th([3]) ** -2,
         ("negative integer powers",)),
    # class indices out of range
    Case("cross_entropy_target_big", lambda: t([[1.0] * 5] * 2).cross_entropy(t([1, 10])),
         lambda: F.cross_entropy(th([[1.0] * 5] * 2), th([1, 10])), ("10", "out of bounds")),
    Case("cross_entropy_target_neg", lambda: t([[1.0] * 5] * 2).cross_entropy(t([-1, 0])),
         lambda: F.cross_entropy(th([[1.0] * 5] * 2), th([-1, 0])), ("-1", "out of bounds")),
    Case("cross_entropy_target_ok", lambda: t([[1.0, 2.0, 0.5]]).cross_entropy(t([2])),
         lambda: F.cross_entropy(th([[1.0, 2.0, 0.5]]), th([2]))),
    Case("sparse_ce_target_big",
         lambda: t([[1.0] * 5] * 2).sparse_categorical_crossentropy(t([1, 10])),
         lambda: F.cross_entropy(th([[1.0] * 5] * 2), th([1, 10]), ignore_index=-1),
         ("10", "out of bounds")),
    Case("sparse_ce_target_neg",
         lambda: t([[1.0] * 5] * 2).sparse_categorical_crossentropy(t([-3, 1])),
         lambda: F.cross_entropy(th([[1.0] * 5] * 2), th([-3, 1]), ignore_index=-1),
         ("-3", "out of bounds")),
    Case("sparse_ce_ignored", lambda: t([[1.0, 2.0, 3.0]] * 2).sparse_categorical_crossentropy(
        t([-1, 1])), lambda: F.cross_entropy(th([[1.0, 2.0, 3.0]] * 2), th([-1, 1]),
                                             ignore_index=-1)),
    Case("one_hot_big", lambda: t([0, 3]).one_hot(3), lambda: F.one_hot(th([0, 3]), 3),
         ("smaller than num_classes",)),
    Case("one_hot_negative", lambda: t([0, -1]).one_hot(3), lambda: F.one_hot(th([0, -1]), 3),
         ("non-negative",)),
    # reductions over an empty axis
    Case("max_empty_axis", lambda: Tensor.zeros(0, 3).max(0), lambda: torch.zeros(0, 3).amax(0),
         ("max()", "dim 0", "non-zero size")),
    Case("min_empty_axis", lambda: Tensor.zeros(2, 0).min(1), lambda: torch.zeros(2, 0).amin(1),
         ("dim 1", "non-zero size")),
    Case("argmax_empty_axis", lambda: Tensor.zeros(0, 3).argmax(0),
         lambda: torch.zeros(0, 3).argmax(0), ("argmax()", "non-zero size")),
    Case("argmin_empty_axis", lambda: Tensor.zeros(0, 3).argmin(0),
         lambda: torch.zeros(0, 3).argmin(0), ("argmin()", "non-zero size")),
    Case("argmax_empty_flat", lambda: Tensor.zeros(0, 3).argmax(),
         lambda: torch.zeros(0, 3).argmax(), ("argmax()",)),
    Case("max_empty_kept_axis", lambda: Tensor.zeros(0, 3).max(1),
         lambda: torch.zeros(0, 3).amax(1)),
    Case("argmax_empty_kept_axis", lambda: Tensor.zeros(0, 3).argmax(1),
         lambda: torch.zeros(0, 3).argmax(1)),
    # NaN: the maximum (and minimum), first NaN wins
    Case("argmax_nan", lambda: t([1.0, NAN, 3.0]).argmax(), lambda: th([1.0, NAN, 3.0]).argmax()),
    Case("argmax_two_nans", lambda: t([1.0, 5.0, NAN, NAN]).argmax(),
         lambda: th([1.0, 5.0, NAN, NAN]).argmax()),
    Case("argmin_nan", lambda: t([1.0, NAN, 0.0]).argmin(), lambda: th([1.0, NAN, 0.0]).argmin()),
    Case("argmax_nan_axis", lambda: t([[1.0, NAN], [3.0, 2.0]]).argmax(1),
         lambda: th([[1.0, NAN], [3.0, 2.0]]).argmax(1)),
    Case("max_nan", lambda: t([1.0, NAN, 3.0]).max(), lambda: th([1.0, NAN, 3.0]).max()),
    Case("min_nan", lambda: t([1.0, NAN, 3.0]).min(), lambda: th([1.0, NAN, 3.0]).min()),
    Case("max_nan_axis", lambda: t([[NAN, 1.0], [2.0, 3.0]]).max(0),
         lambda: th([[NAN, 1.0], [2.0, 3.0]]).amax(0)),
    # logsumexp with infinities
    Case("logsumexp_all_neg_inf", lambda: t([-INF, -INF]).logsumexp(0),
         lambda: th([-INF, -INF]).logsumexp(0)),
    Case("logsumexp_pos_inf", lambda: t([1.0, INF]).logsumexp(0),
         lambda: th([1.0, INF]).logsumexp(0)),
    Case("logsumexp_rows", lambda: t([[-INF, -INF], [1.0, 2.0]]).logsumexp(1),
         lambda: th([[-INF, -INF], [1.0, 2.0]]).logsumexp(1)),
    Case("softmax_empty", lambda: Tensor.zeros(0, 2).softmax(0),
         lambda: torch.zeros(0, 2).softmax(0)),
    Case("log_softmax_empty", lambda: Tensor.zeros(2, 0).log_softmax(1),
         lambda: torch.zeros(2, 0).log_softmax(1)),
    Case("logsumexp_empty", lambda: Tensor.zeros(0, 2).logsumexp(0),
         lambda: torch.zeros(0, 2).logsumexp(0)),
    # activations keep NaN
    *[Case(f"{name}_nan", (lambda f=f: f(t([NAN, -2.0, 0.5, 8.0]))),
           (lambda g=g: g(th([NAN, -2.0, 0.5, 8.0]))))
      for name, f, g in [
          ("relu", Tensor.relu, torch.relu),
          ("leaky_relu", Tensor.leaky_relu, F.leaky_relu),
          ("relu6", Tensor.relu6, F.relu6),
          ("hardtanh", Tensor.hardtanh, F.hardtanh),
          ("clip", lambda x: x.clip(-1, 1), lambda x: x.clamp(-1, 1)),
          ("clip_min", lambda x: x.clip(0), lambda x: x.clamp(0)),
          ("elu", Tensor.elu, F.elu),
          ("gelu", Tensor.gelu, F.gelu),
          ("silu", Tensor.silu, F.silu),
          ("sigmoid", Tensor.sigmoid, torch.sigmoid),
          ("softplus", Tensor.softplus, F.softplus),
          ("tanh", Tensor.tanh, torch.tanh),
          ("abs", Tensor.abs, torch.abs),
          ("sign", Tensor.sign, torch.sign),
      ]],
    # assign to a view writes through to its base
    Case("assign_slice_row", lambda: _view_assign_tinyfw(slice(0, 1), [[1.0] * 4]),
         lambda: _view_assign_torch(slice(0, 1), [[1.0] * 4])),
    Case("assign_int_index", lambda: _view_assign_tinyfw(1, [1.0, 2.0, 3.0, 4.0]),
         lambda: _view_assign_torch(1, [1.0, 2.0, 3.0, 4.0])),
    Case("assign_column_step", lambda: _view_assign_tinyfw((slice(None), slice(1, None, 2)),
                                                           [[1.0, 2.0]] * 3),
         lambda: _view_assign_torch((slice(None), slice(1, None, 2)), [[1.0, 2.0]] * 3)),
    Case("assign_reversed", lambda: _view_assign_tinyfw((0, slice(None, None, -1)),
                                                        [1.0, 2.0, 3.0, 4.0]),
         lambda: _view_assign_torch(0, [4.0, 3.0, 2.0, 1.0])),  # torch has no negative steps
    Case("assign_number", lambda: _view_assign_tinyfw((slice(1, 3), 2), 5.0),
         lambda: _view_assign_torch((slice(1, 3), 2), [5.0])),
    Case("assign_view_of_lazy", _lazy_view_assign, _lazy_view_assign_torch),
    Case("assign_view_of_view", _view_of_view_assign, _view_of_view_assign_torch),
    Case("assign_expanded_view", lambda: Tensor.zeros(1, 3).contiguous().expand(2, 3).assign(
        Tensor.ones(2, 3)), lambda: torch.zeros(1, 3).expand(2, 3).copy_(torch.ones(2, 3)),
         ("more than one element",)),
    Case("setitem", _setitem, _setitem_torch),
    Case("jit_view_assign", _jit_view_assign, _jit_view_assign_torch),
    # rounding keeps the sign of zero
    Case("ceil_neg_half", lambda: t([-0.5, 0.5, -1.5, -0.0]).ceil(),
         lambda: th([-0.5, 0.5, -1.5, -0.0]).ceil()),
    Case("round_neg", lambda: t([-0.4, -0.5, 0.5, -2.5, -0.0, 2.5]).round(),
         lambda: th([-0.4, -0.5, 0.5, -2.5, -0.0, 2.5]).round()),
    Case("floor_neg_zero", lambda: t([-0.0, 0.5, -0.5]).floor(),
         lambda: th([-0.0, 0.5, -0.5]).floor()),
    Case("trunc_neg", lambda: t([-0.5, -0.0, 1.5]).trunc(), lambda: th([-0.5, -0.0, 1.5]).trunc()),
    Case("round_nan_inf", lambda: t([NAN, INF, -INF]).round(),
         lambda: th([NAN, INF, -INF]).round()),
    Case("ceil_nan_inf", lambda: t([NAN, INF, -INF]).ceil(), lambda: th([NAN, INF, -INF]).ceil()),
    # gradients of maximum and minimum at NaN
    Case("maximum_grad_nan", lambda: _grad("maximum", "tinyfw"), lambda: _grad("maximum", "torch")),
    Case("minimum_grad_nan", lambda: _grad("minimum", "tinyfw"), lambda: _grad("minimum", "torch")),
    Case("maximum_nan", lambda: t([NAN, 1.0]).maximum(t([1.0, NAN])),
         lambda: torch.maximum(th([NAN, 1.0]), th([1.0, NAN]))),
    Case("minimum_nan", lambda: t([NAN, 1.0]).minimum(t([1.0, NAN])),
         lambda: torch.minimum(th([NAN, 1.0]), th([1.0, NAN]))),
    # malformed safetensors files
    Case("safe_negative_offsets",
         lambda: _safe({"w": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}}),
         lambda: _safetensors_torch({}), ("'w'", "-8")),
    Case("safe_offsets_past_end",
         lambda: _safe({"w": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}}),
         lambda: _safetensors_torch({}), ("'w'", "32")),
    Case("safe_offsets_reversed",
         lambda: _safe({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}}),
         lambda: _safetensors_torch({}), ("'w'",)),
    Case("safe_list_header", lambda: _safe([1, 2]), lambda: _safetensors_torch({}),
         ("list",)),
    Case("safe_no_dtype", lambda: _safe({"w": {"shape": [2], "data_offsets": [0, 8]}}),
         lambda: _safetensors_torch({}), ("'w'", "dtype")),
    Case("safe_bad_shape", lambda: _safe({"w": {"dtype": "F32", "shape": [-2],
                                                "data_offsets": [0, 8]}}),
         lambda: _safetensors_torch({}), ("'w'", "-2")),
    Case("safe_entry_not_dict", lambda: _safe({"w": 3}), lambda: _safetensors_torch({}),
         ("'w'",)),
    Case("safe_header_too_long", lambda: _safe({}, length=10 ** 6),
         lambda: _safetensors_torch({}), ("1000000",)),
    # movement ops with bad arguments
    Case("expand_negative", lambda: Tensor.zeros(1, 3).expand(-2, 3),
         lambda: torch.zeros(1, 3).expand(-2, 3), ("-2", "expanded size")),
    Case("expand_new_minus_one", lambda: Tensor.zeros(3).expand(-1, 3),
         lambda: torch.zeros(3).expand(-1, 3), ("-1",)),
    Case("expand_neg_existing", lambda: Tensor.zeros(1, 3).expand(2, -3),
         lambda: torch.zeros(1, 3).expand(2, -3), ("-3",)),
    Case("expand_keep", lambda: Tensor.zeros(1, 3).expand(2, -1),
         lambda: torch.zeros(1, 3).expand(2, -1)),
    Case("expand_float_size", lambda: Tensor.zeros(1, 3).expand(2.5, 3),
         lambda: torch.zeros(1, 3).expand(2.5, 3), ("float",)),
    Case("reshape_negative", lambda: Tensor.zeros(6).reshape(-2, -3),
         lambda: torch.zeros(6).reshape(-2, -3), ("-2",)),
    Case("reshape_float", lambda: Tensor.zeros(6).reshape(2.0, 3),
         lambda: torch.zeros(6).reshape(2.0, 3), ("float",)),
    Case("permute_duplicate", lambda: Tensor.zeros(2, 3).permute(0, 0),
         lambda: torch.zeros(2, 3).permute(0, 0), ("repeated dim",)),
    Case("permute_out_of_range", lambda: Tensor.zeros(2, 3).permute(0, 2),
         lambda: torch.zeros(2, 3).permute(0, 2), ("2",)),
    Case("permute_wrong_length", lambda: Tensor.zeros(2, 3).permute(0,),
         lambda: torch.zeros(2, 3).permute(0,), ("2", "1")),
    Case("pad_crop_too_much", lambda: Tensor.zeros(2, 3).pad((-2, -2)),
         lambda: F.pad(torch.zeros(2, 3), (-2, -2)), ("-2",)),
    Case("pad_odd", lambda: Tensor.zeros(2, 3).pad((1,)),
         lambda: F.pad(torch.zeros(2, 3), (1,)), ("divisible by 2",)),
    Case("pad_float", lambda: Tensor.zeros(2, 3).pad((1.5, 1)),
         lambda: F.pad(torch.zeros(2, 3), (1.5, 1)), ("float",)),
    Case("pad_crop", lambda: Tensor.ones(2, 3).pad((-1, 1)),
         lambda: F.pad(torch.ones(2, 3), (-1, 1))),
    Case("shrink_out_of_range", lambda: Tensor.zeros(2, 3).shrink(((0, 1), (2, 5))),
         lambda: torch.zeros(2, 3).narrow(1, 2, 3), ("5", "3")),
    Case("flip_out_of_range", lambda: Tensor.zeros(2, 3).flip(2),
         lambda: torch.zeros(2, 3).flip(2), ("2",)),
    Case("flip_duplicate", lambda: Tensor.zeros(2, 3).flip((0, 0)),
         lambda: torch.zeros(2, 3).flip((0, 0)), ("0",)),
    Case("repeat_negative", lambda: Tensor.zeros(2).repeat(-1),
         lambda: torch.zeros(2).repeat(-1), ("-1",)),
    Case("repeat_too_few", lambda: Tensor.zeros(2, 3).repeat(2),
         lambda: torch.zeros(2, 3).repeat(2), ("2",)),
    Case("repeat_zero", lambda: Tensor.ones(2).repeat(0, 2), lambda: torch.ones(2).repeat(0, 2)),
    Case("transpose_out_of_range", lambda: Tensor.zeros(2, 3).transpose(0, 2),
         lambda: torch.zeros(2, 3).transpose(0, 2), ("2",)),
    Case("squeeze_out_of_range", lambda: Tensor.zeros(2, 1).squeeze(3),
         lambda: torch.zeros(2, 1).squeeze(3), ("3",)),
    Case("cat_dim_out_of_range", lambda: Tensor.cat(Tensor.zeros(2), Tensor.zeros(2), dim=1),
         lambda: torch.cat([torch.zeros(2), torch.zeros(2)], 1), ("1",)),
    Case("split_float", lambda: Tensor.zeros(4).split(1.5),
         lambda: torch.zeros(4).split(1.5), ("float",)),
    # convolution and pooling with bad windows
    Case("conv2d_stride_0", lambda: Tensor.ones(1, 1, 4, 4).conv2d(Tensor.ones(1, 1, 2, 2),
                                                                  stride=0),
         lambda: F.conv2d(torch.ones(1, 1, 4, 4), torch.ones(1, 1, 2, 2), stride=0),
         ("stride",)),
    Case("conv2d_padding_neg", lambda: Tensor.ones(1, 1, 4, 4).conv2d(Tensor.ones(1, 1, 2, 2),
                                                                     padding=-1),
         lambda: F.conv2d(torch.ones(1, 1, 4, 4), torch.ones(1, 1, 2, 2), padding=-1),
         ("padding",)),
    Case("conv2d_dilation_0", lambda: Tensor.ones(1, 1, 4, 4).conv2d(Tensor.ones(1, 1, 2, 2),
                                                                    dilation=0),
         lambda: F.conv2d(torch.ones(1, 1, 4, 4), torch.ones(1, 1, 2, 2), dilation=0),
         ("dilation",)),
    Case("conv2d_kernel_too_big", lambda: Tensor.ones(1, 1, 2, 2).conv2d(Tensor.ones(1, 1, 3, 3)),
         lambda: F.conv2d(torch.ones(1, 1, 2, 2), torch.ones(1, 1, 3, 3)), ("3", "2")),
    Case("max_pool_stride_0", lambda: Tensor.ones(1, 1, 4, 4).max_pool2d(2, stride=0),
         lambda: F.max_pool2d(torch.ones(1, 1, 4, 4), 2, stride=0), ("stride",)),
    Case("avg_pool_stride_0", lambda: Tensor.ones(1, 1, 4, 4).avg_pool2d(2, stride=0),
         lambda: F.avg_pool2d(torch.ones(1, 1, 4, 4), 2, stride=0), ("stride",)),
    Case("max_pool_kernel_0", lambda: Tensor.ones(1, 1, 4, 4).max_pool2d(0),
         lambda: F.max_pool2d(torch.ones(1, 1, 4, 4), 0), ("kernel",)),
    Case("max_pool_dilation_0", lambda: Tensor.ones(1, 1, 4, 4).max_pool2d(2, dilation=0),
         lambda: F.max_pool2d(torch.ones(1, 1, 4, 4), 2, dilation=0), ("dilation",)),
    Case("avg_pool_padding_neg", lambda: Tensor.ones(1, 1, 4, 4).avg_pool2d(2, padding=-1),
         lambda: F.avg_pool2d(torch.ones(1, 1, 4, 4), 2, padding=-1), ("pad",)),
    # random tensors with bad arguments
    Case("rand_negative", lambda: Tensor.rand(-1), lambda: torch.rand(-1), ("-1",)),
    Case("randn_negative", lambda: Tensor.randn(2, -3), lambda: torch.randn(2, -3), ("-3",)),
    Case("randint_empty_range", lambda: Tensor.randint(2, low=5, high=5),
         lambda: torch.randint(5, 5, (2,)), ("from=5", "to=5")),
    Case("uniform_reversed", lambda: Tensor.uniform(2, low=2.0, high=1.0),
         lambda: torch.empty(2).uniform_(2.0, 1.0), ("from=2", "to=1")),
    Case("zeros_float", lambda: Tensor.zeros(2.5), lambda: torch.zeros(2.5), ("float",)),
    Case("full_float_shape", lambda: Tensor.full((2.0,), 1), lambda: torch.full((2.0,), 1),
         ("float",)),
    Case("eye_negative", lambda: Tensor.eye(-1), lambda: torch.eye(-1), ("-1",)),
    Case("sum_repeated_dim", lambda: Tensor.ones(2, 3).sum((0, 0)),
         lambda: torch.ones(2, 3).sum((0, 0)), ("dim 0", "multiple times")),
    Case("cross_entropy_batch_mismatch", lambda: Tensor.ones(2, 5).cross_entropy(t([1, 2, 3])),
         lambda: F.cross_entropy(torch.ones(2, 5), th([1, 2, 3])), ("2", "3")),
    Case("zeros_negative", lambda: Tensor.zeros(-1, 2), lambda: torch.zeros(-1, 2), ("-1",)),
    # more bad arguments: out-of-range dims, wrong dtypes
    Case("sum_dim_out_of_range", lambda: Tensor.zeros(2, 3).sum(2),
         lambda: torch.zeros(2, 3).sum(2), ("2",)),
    Case("softmax_dim_out_of_range", lambda: Tensor.zeros(2, 3).softmax(-3),
         lambda: torch.zeros(2, 3).softmax(-3), ("-3",)),
    Case("argmax_dim_out_of_range", lambda: Tensor.zeros(2, 3).argmax(2),
         lambda: torch.zeros(2, 3).argmax(2), ("2",)),
    Case("one_hot_float", lambda: t([0.0, 1.0]).one_hot(2), lambda: F.one_hot(th([0.0, 1.0]), 2),
         ("Float",)),
    Case("bitwise_float", lambda: t([1.0]) & t([1.0]), lambda: th([1.0]) & th([1.0]),
         ("float",)),
]


# Each elementwise function of a constant special value (Tensor.full: the value is in the
# kernel's source, where a compiler can fold it: PoCL folded exp2 and trunc of a NaN constant to
# garbage).
CONSTANT_FUNCTIONS = ["exp", "exp2", "log", "log2", "sin", "cos", "sqrt", "rsqrt", "trunc",
                      "floor", "ceil", "round", "tanh", "sigmoid", "abs", "neg", "reciprocal",
                      "relu", "sign", "square"]
for _name in CONSTANT_FUNCTIONS:
    for _value in (NAN, INF, -INF, -0.0):
        CASES.append(Case(f"{_name}_of_constant_{_value}",
                          lambda n=_name, v=_value: getattr(Tensor.full((3,), v), n)(),
                          lambda n=_name, v=_value: getattr(torch.full((3,), v), n)()))


def _run(fn: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """fn's result made concrete (numpy arrays), or the exception it raised."""
    try:
        out = fn()
        outs = out if isinstance(out, (list, tuple)) else [out]
        values = [o.detach().numpy() if isinstance(o, torch.Tensor)
                  else o.numpy() if isinstance(o, Tensor) else o for o in outs]
        return (values, [getattr(o, "dtype", None) for o in outs]), None
    except Exception as e:  # noqa: BLE001 - the point is to see what each framework raises
        return None, e


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal shapes and values (NaN equals NaN; the sign of a zero counts)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        af, bf = a.astype(np.float64), b.astype(np.float64)
        close = np.isclose(af, bf, rtol=1e-5, atol=1e-6, equal_nan=True)
        numbers = ~np.isnan(af)  # a NaN's sign bit is not a sign (torch's and C's differ)
        return bool(close.all() and (np.signbit(af) == np.signbit(bf))[numbers].all())
    return bool((a == b).all())


def _kind(dtype: Any) -> str:
    """float, int or bool, for a tinyfw or a torch dtype."""
    if isinstance(dtype, torch.dtype):
        return "bool" if dtype == torch.bool else "float" if dtype.is_floating_point else "int"
    return "bool" if dtype.is_bool else "float" if dtype.is_float else "int"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_edge_input(case: Case) -> None:
    """tinyfw does what torch does: the same values, shapes and kinds of dtype, or the same
    exception type with a message that names what was wrong."""
    t_out, t_err = _run(case.torch)
    f_out, f_err = _run(case.tinyfw)
    lacking = UNSUPPORTED_DTYPES.get(Device.DEFAULT, frozenset())
    if isinstance(f_err, NotSupportedError) and any(d.name in str(f_err) for d in lacking):
        pytest.skip(f"not supported on {Device.DEFAULT}: {f_err}")  # (int64 on WEBGPU)
    if t_err is not None:
        assert f_err is not None, f"torch raised {type(t_err).__name__}({t_err}), tinyfw " \
                                  f"gave {f_out}"
        assert type(f_err) is type(t_err) or (
            isinstance(t_err, RuntimeError) and type(f_err).__name__ == "JitError"), \
            f"tinyfw raised {type(f_err).__name__}({f_err}), torch {type(t_err).__name__}({t_err})"
        for part in case.names:
            assert part in str(f_err), f"tinyfw's message {str(f_err)!r} does not name {part!r}"
        return
    assert f_err is None, f"tinyfw raised {type(f_err).__name__}({f_err}), torch gave {t_out}"
    (t_values, t_dtypes), (f_values, f_dtypes) = t_out, f_out
    assert len(t_values) == len(f_values)
    for tv, fv, td, fd in zip(t_values, f_values, t_dtypes, f_dtypes):
        assert _same_values(fv, tv), f"tinyfw gave {fv!r}, torch {tv!r}"
        assert _kind(fd) == _kind(td), f"tinyfw's dtype {fd}, torch's {td}"
    if case.dtype is not None:
        assert f_dtypes[0] == getattr(dtypes, case.dtype), f"dtype {f_dtypes[0]}, not {case.dtype}"
