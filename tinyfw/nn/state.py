"""A model's state: its tensors found by name, loaded from a dict, saved to and read from
safetensors files (chapter 10).

A model is any object: its tensors are found by walking its attributes, lists, tuples and dicts,
as tinygrad does, so layers need no base class:

    sd = get_state_dict(model)          # {"l1.weight": ..., "l1.bias": ..., "layers.0.weight": ...}
    safe_save(sd, "model.safetensors")
    load_state_dict(model, safe_load("model.safetensors"))

PyTorch's .pt/.pth checkpoints are read without torch by torch_load (tinyfw/nn/torch_checkpoint.py).
"""
from __future__ import annotations

import json
import os
import struct
import types
from collections.abc import Iterator
from typing import Any

import numpy as np

from tinyfw.dtype import DType, dtypes
from tinyfw.helpers import all_int, prod, shape_str
from tinyfw.tensor import Tensor
from tinyfw.nn.torch_checkpoint import torch_load, torch_save  # noqa: F401  (PyTorch's files)

# ---------------------------------------------------------------------------------------------
# finding a model's tensors


def get_state_dict(obj: Any, prefix: str = "") -> dict[str, Tensor]:
    """Every Tensor reachable from obj, by dotted name: attributes by name, list and tuple items
    by position, dict values by key ("l1.weight", "layers.0.bias"). prefix is put before every
    name as it is, so give its dot too ("model."), as tinygrad and torch do."""
    return dict(_named_tensors(obj, prefix, set()))


def _named_tensors(obj: Any, prefix: str, path: set[int]) -> Iterator[tuple[str, Tensor]]:
    """(name, tensor) pairs in a stable order: attributes and dict keys in insertion order."""
    if isinstance(obj, Tensor):
        yield prefix.rstrip("."), obj
        return
    if id(obj) in path or isinstance(obj, (type, types.ModuleType)):
        return  # an object that contains itself, or a class or module (not part of a model)
    if hasattr(obj, "_asdict"):  # a namedtuple: by field name
        items: Any = obj._asdict().items()
    elif isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    elif hasattr(obj, "__dict__"):
        items = vars(obj).items()
    else:
        return  # a number, a string, a numpy array: no tensors inside
    for key, value in items:
        yield from _named_tensors(value, f"{prefix}{key}.", path | {id(obj)})


def get_parameters(obj: Any) -> list[Tensor]:
    """Every Tensor reachable from obj, each once (a tensor shared by two layers is listed at
    its first name), in get_state_dict's order."""
    unique: dict[int, Tensor] = {}
    for t in get_state_dict(obj).values():
        unique.setdefault(id(t), t)
    return list(unique.values())


def load_state_dict(model: Any, state_dict: dict[str, Tensor | np.ndarray],
                    strict: bool = True) -> None:
    """Copy the values of state_dict into the model's tensors of the same names. Each tensor
    keeps its identity (an optimizer holding it still works), device, dtype and requires_grad,
    and gets its own copy of the value. strict: the names must be exactly the model's; shapes
    must match always. On an error nothing is loaded."""
    own = get_state_dict(model)
    errors = []
    if strict:
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if missing:
            errors.append("Missing key(s) in state_dict: " + ", ".join(map(repr, missing)))
        if unexpected:
            errors.append("Unexpected key(s) in state_dict: " + ", ".join(map(repr, unexpected)))
    for name, t in own.items():
        if name in state_dict and tuple(np.shape(state_dict[name])) != t.shape:
            errors.append(f"size mismatch for {name}: copying a value of shape "
                          f"{shape_str(np.shape(state_dict[name]))} from the state dict, the "
                          f"shape in the model is {shape_str(t.shape)}")
    if errors:
        raise RuntimeError(f"Error(s) in loading state_dict for {type(model).__name__}:\n\t"
                           + "\n\t".join(errors))
    loaded = []
    for name, t in own.items():
        if name in state_dict:
            value = state_dict[name]
            # a fresh buffer per tensor: two models loaded from one dict must not share a node
            # (backward finds a parameter by its node)
            fresh = Tensor(value.numpy() if isinstance(value, Tensor) else np.asarray(value))
            loaded.append(t.assign(fresh))  # assign casts to t's dtype and copies to its device
    Tensor.realize_all(*loaded)


# ---------------------------------------------------------------------------------------------
# safetensors: an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
# shape and byte range, then the raw little-endian bytes of every tensor, back to back.

SAFETENSORS_DTYPES: dict[str, DType] = {
    "BOOL": dtypes.bool, "U8": dtypes.uint8, "I8": dtypes.int8, "I16": dtypes.int16,
    "I32": dtypes.int32, "I64": dtypes.int64, "U16": dtypes.uint16, "U32": dtypes.uint32,
    "U64": dtypes.uint64, "F16": dtypes.float16, "BF16": dtypes.bfloat16, "F32": dtypes.float32,
    "F64": dtypes.float64,
}
_DTYPE_NAMES: dict[DType, str] = {d: name for name, d in SAFETENSORS_DTYPES.items()}
_MAX_HEADER = 100_000_000  # the safetensors library refuses larger headers too


def _little_endian(dt: DType) -> np.dtype:
    """How the file holds an element: little-endian, a bfloat16 as its 16 bits."""
    bits = np.dtype(np.uint16) if dt == dtypes.bfloat16 else np.dtype(dt.np)
    return bits.newbyteorder("<")


def safe_save(tensors: dict[str, Tensor], path: str | os.PathLike,
              metadata: dict[str, str] | None = None) -> None:
    """Write tensors to a .safetensors file that any safetensors reader (torch, numpy, jax,
    tinygrad) can open. metadata: optional text stored under "__metadata__"."""
    if "__metadata__" in tensors:
        raise ValueError("'__metadata__' is reserved by the format: it can't name a tensor")
    if metadata is not None and not all(isinstance(k, str) and isinstance(v, str)
                                        for k, v in metadata.items()):
        raise TypeError("safetensors metadata must map strings to strings")
    Tensor.realize_all(*tensors.values())  # compute whatever is still lazy, in one schedule
    header: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
    chunks, offset = [], 0
    for name, t in tensors.items():
        if t.dtype not in _DTYPE_NAMES:
            raise TypeError(f"safetensors has no dtype for {t.dtype.name} (tensor {name!r})")
        values = t.numpy()
        if t.dtype == dtypes.bfloat16:
            values = values.view(np.uint16)
        data = values.astype(_little_endian(t.dtype)).tobytes()
        header[name] = {"dtype": _DTYPE_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # spaces, so the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.writelines(chunks)


def _read_header(raw: bytes, path: str | os.PathLike) -> tuple[dict[str, Any], int]:
    """The parsed JSON header of a safetensors file, and where its data starts."""
    if len(raw) < 8:
        raise ValueError(f"{path} is not a safetensors file: it is only {len(raw)} bytes")
    (n,) = struct.unpack_from("<Q", raw)
    if n > min(_MAX_HEADER, len(raw) - 8):
        raise ValueError(f"{path} is not a safetensors file: its header length ({n}) is "
                         "larger than the file")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path} is not a safetensors file: its header is not JSON ({e})") \
            from e
    if not isinstance(header, dict):
        raise ValueError(f"{path} is not a safetensors file: its header is a JSON "
                         f"{type(header).__name__}, not an object of tensors by name")
    return header, 8 + n


def _entry(name: str, info: Any, path: str | os.PathLike, data_size: int
           ) -> tuple[DType, tuple[int, ...], int, int]:
    """The dtype, shape and byte range [begin, end) in the data of one header entry, checked:
    a malformed entry raises ValueError naming the tensor (rather than reading other bytes)."""
    where = f"tensor {name!r} in {path}"
    if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= info.keys():
        raise ValueError(f"{where}: its header entry {info!r} needs 'dtype', 'shape' and "
                         "'data_offsets'")
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(dtype, str):
        raise ValueError(f"{where}: dtype {dtype!r} is not a string")
    if dtype not in SAFETENSORS_DTYPES:
        raise TypeError(f"tinyfw has no dtype for safetensors {dtype} (tensor {name!r})")
    if not isinstance(shape, list) or not all_int(shape) or any(s < 0 for s in shape):
        raise ValueError(f"{where}: shape {shape!r} is not a list of non-negative ints")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all_int(offsets):
        raise ValueError(f"{where}: data_offsets {offsets!r} is not a list of two ints")
    dt, (begin, end) = SAFETENSORS_DTYPES[dtype], offsets
    if not 0 <= begin <= end <= data_size:
        raise ValueError(f"{where}: data_offsets {offsets} are not a range 0 <= begin <= end <= "
                         f"{data_size} (the size of the data)")
    if end - begin != prod(shape) * dt.itemsize:
        raise ValueError(f"{where}: byte range {offsets} does not hold {dtype} of shape "
                         f"{shape} ({prod(shape) * dt.itemsize} bytes)")
    return dt, tuple(shape), begin, end


def safe_load(path: str | os.PathLike, device: str | None = None) -> dict[str, Tensor]:
    """The tensors of a .safetensors file, by name, on device (the default device if None)."""
    with open(path, "rb") as f:
        raw = f.read()
    header, start = _read_header(raw, path)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt, shape, begin, _ = _entry(name, info, path, len(raw) - start)
        data = np.frombuffer(raw, _little_endian(dt), prod(shape), start + begin).reshape(shape)
        native = data.astype(data.dtype.newbyteorder("="))
        out[name] = Tensor(native.view(dt.np) if dt == dtypes.bfloat16 else native.astype(dt.np),
                           device=device)
    return out


def safe_metadata(path: str | os.PathLike) -> dict[str, str]:
    """The "__metadata__" strings of a .safetensors file ({} when it has none)."""
    with open(path, "rb") as f:
        head = f.read(8)
        (n,) = struct.unpack("<Q", head) if len(head) == 8 else (0,)
        raw = head + f.read(min(n, _MAX_HEADER))
    return _read_header(raw, path)[0].get("__metadata__", {})
