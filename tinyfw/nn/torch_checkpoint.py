"""PyTorch checkpoints without torch: torch_load reads the files torch.save writes (its zip
format, and the legacy one of torch.save(..., _use_new_zipfile_serialization=False)), and
torch_save writes the zip format, which torch.load reads.

A checkpoint is a pickle whose tensors point, by persistent ids, at raw storages (the zip's
data/<key> records, or the bytes after the legacy pickles). Unpickling is restricted as
torch's weights_only=True: only tensors, parameters, storages, dtypes, OrderedDicts, numbers,
strings and containers; any other global raises pickle.UnpicklingError and no pickle code is
ever run. A tensor is rebuilt from its storage with its offset, size and stride (views sharing
a storage, non-contiguous tensors), then copied into a tinyfw Tensor."""
from __future__ import annotations

import collections
import io
import os
import pickle
import struct
import zipfile
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from tinyfw.dtype import DType, dtypes
from tinyfw.tensor import Tensor

# storage classes (torch.FloatStorage, ...) and dtypes (torch.float32, ...) by pickled name
STORAGE_DTYPES: dict[str, DType] = {
    "FloatStorage": dtypes.float32, "DoubleStorage": dtypes.float64,
    "HalfStorage": dtypes.float16, "BFloat16Storage": dtypes.bfloat16,
    "LongStorage": dtypes.int64, "IntStorage": dtypes.int32, "ShortStorage": dtypes.int16,
    "CharStorage": dtypes.int8, "ByteStorage": dtypes.uint8, "BoolStorage": dtypes.bool,
}
TORCH_DTYPES: dict[str, DType] = {
    "float32": dtypes.float32, "float": dtypes.float32, "float64": dtypes.float64,
    "double": dtypes.float64, "float16": dtypes.float16, "half": dtypes.float16,
    "bfloat16": dtypes.bfloat16, "int64": dtypes.int64, "long": dtypes.int64,
    "int32": dtypes.int32, "int": dtypes.int32, "int16": dtypes.int16, "short": dtypes.int16,
    "int8": dtypes.int8, "uint8": dtypes.uint8, "bool": dtypes.bool, "uint16": dtypes.uint16,
    "uint32": dtypes.uint32, "uint64": dtypes.uint64,
}
_UNSUPPORTED = ("complex", "float8", "qint", "quint", "bits", "ComplexFloat", "ComplexDouble")
_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c


class _Storage:
    """A storage: its raw bytes and dtype (an untyped one has none until a tensor says)."""

    def __init__(self, raw: bytes, dtype: DType | None):
        self.raw, self.dtype = raw, dtype

    def array(self, dtype: DType) -> np.ndarray:
        np_dtype = np.dtype(np.uint16 if dtype == dtypes.bfloat16 else dtype.np).newbyteorder("<")
        usable = len(self.raw) - len(self.raw) % np_dtype.itemsize
        return np.frombuffer(self.raw, np_dtype, usable // np_dtype.itemsize)


class _StorageType:
    def __init__(self, name: str, dtype: DType | None):
        self.name, self.dtype = name, dtype


class _Dtype:
    def __init__(self, name: str):
        self.name = name


class _Rebuilt:
    """A tensor of the checkpoint, made into a numpy array when the storages are all read
    (the legacy format stores them after the pickle): where it is in which storage, and
    whether it was a Parameter that required grad."""

    def __init__(self, storage: _Storage, dtype: DType, offset: int, size: tuple,
                 stride: tuple):
        self.storage, self.dtype, self.offset = storage, dtype, offset
        self.size, self.stride = size, stride
        self.requires_grad = False

    def values(self) -> np.ndarray:
        return _strided(self.storage, self.dtype, self.offset, self.size, self.stride)


def _strided(storage: _Storage, dtype: DType, offset: Any, size: Any, stride: Any
             ) -> np.ndarray:
    flat = storage.array(dtype)
    if not isinstance(offset, int) or not isinstance(size, tuple) or \
            not isinstance(stride, tuple) or len(size) != len(stride) or \
            not all(isinstance(v, int) and v >= 0 for v in (*size, *stride)):
        raise RuntimeError(f"a tensor of size {size!r}, stride {stride!r} and offset "
                           f"{offset!r} is malformed")
    if any(s == 0 for s in size):
        return np.zeros(size, flat.dtype.newbyteorder("="))
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if offset < 0 or last >= len(flat):
        raise RuntimeError(f"a tensor of size {size}, stride {stride} and offset {offset} "
                           f"reaches past its storage of {len(flat)} elements: the checkpoint "
                           "is truncated or corrupt")
    view = np.lib.stride_tricks.as_strided(flat[offset:], size,
                                           tuple(s * flat.itemsize for s in stride),
                                           writeable=False)
    return np.array(view, dtype=flat.dtype.newbyteorder("="))  # (a copy, 0-d kept 0-d)


def _rebuild_tensor_v2(storage: _Storage, offset: int, size: tuple, stride: tuple,
                       requires_grad: bool = False, hooks: Any = None,
                       metadata: Any = None) -> _Rebuilt:
    if storage.dtype is None:
        raise pickle.UnpicklingError("an untyped storage in _rebuild_tensor_v2: the checkpoint "
                                     "is malformed")
    return _Rebuilt(storage, storage.dtype, offset, tuple(size), tuple(stride))


def _rebuild_tensor_v3(storage: _Storage, offset: int, size: tuple, stride: tuple,
                       requires_grad: bool, hooks: Any, dtype: Any,
                       metadata: Any = None) -> _Rebuilt:
    if not isinstance(dtype, _Dtype):
        raise pickle.UnpicklingError(f"_rebuild_tensor_v3 with dtype {dtype!r}")
    return _Rebuilt(storage, _tinyfw_dtype(dtype.name), offset, tuple(size), tuple(stride))


def _rebuild_parameter(data: _Rebuilt, requires_grad: bool, hooks: Any = None,
                       state: Any = None) -> _Rebuilt:
    if not isinstance(data, _Rebuilt):
        raise pickle.UnpicklingError("a Parameter of something other than a tensor")
    data.requires_grad = bool(requires_grad)
    return data


def _tinyfw_dtype(name: str) -> DType:
    if name in TORCH_DTYPES:
        return TORCH_DTYPES[name]
    raise TypeError(f"tinyfw has no dtype for torch.{name} (a tensor of the checkpoint): it "
                    "reads float16/32/64, bfloat16, bool and the int and uint dtypes")


def _reconstruct(cls: Any, *args: Any) -> Any:
    raise pickle.UnpicklingError("numpy objects in a checkpoint are not allowed with "
                                 "weights_only=True")


def _codecs_encode(text: str, encoding: str = "latin1") -> bytes:
    return text.encode(encoding)


# the globals a weights_only pickle may name, and what each becomes
_ALLOWED: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch.nn.parameter", "Parameter"): _rebuild_parameter,
    ("torch.storage", "UntypedStorage"): _StorageType("UntypedStorage", None),
    ("torch", "Size"): tuple,
    ("_codecs", "encode"): _codecs_encode,
    ("builtins", "set"): set, ("builtins", "frozenset"): frozenset,
    ("builtins", "bytearray"): bytearray, ("builtins", "complex"): complex,
    ("builtins", "slice"): slice,
}
for _name, _dt in STORAGE_DTYPES.items():
    _ALLOWED[("torch", _name)] = _StorageType(_name, _dt)
for _name in TORCH_DTYPES:
    _ALLOWED[("torch", _name)] = _Dtype(_name)


class _Unpickler(pickle.Unpickler):
    """weights_only: only the allowed globals; storages from load_storage(key, type, numel)."""

    def __init__(self, file: IO[bytes], load_storage: Callable[..., _Storage]):
        super().__init__(file, encoding="utf-8")
        self.load_storage = load_storage

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module == "torch" and any(u in name for u in _UNSUPPORTED):
            raise TypeError(f"tinyfw has no dtype for torch.{name} (a storage of the "
                            "checkpoint)")
        raise pickle.UnpicklingError(
            f"Weights only load failed. Unsupported global: GLOBAL {module}.{name} was not an "
            "allowed global by default. tinyfw reads tensors, parameters, OrderedDicts, "
            "numbers and strings only (torch's weights_only=True), and never runs a "
            "checkpoint's code.")

    def persistent_load(self, pid: Any) -> Any:
        if not isinstance(pid, tuple) or not pid or pid[0] != "storage":
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r} in the checkpoint")
        kind = pid[1]
        if not isinstance(kind, _StorageType):
            raise pickle.UnpicklingError(f"persistent id {pid!r}: {kind!r} is not a storage "
                                         "type")
        return self.load_storage(pid, kind)


def _convert(obj: Any, device: str | None) -> Any:
    """The unpickled object with every rebuilt tensor a tinyfw Tensor."""
    if isinstance(obj, _Rebuilt):
        values = obj.values()
        values = values.view(obj.dtype.np) if obj.dtype == dtypes.bfloat16 else values
        t = Tensor(values, dtype=obj.dtype, device=device)
        if obj.requires_grad:
            t.requires_grad = True
        return t
    if isinstance(obj, collections.OrderedDict):
        return collections.OrderedDict((k, _convert(v, device)) for k, v in obj.items())
    if isinstance(obj, dict):
        return {k: _convert(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_convert(v, device) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_convert(v, device) for v in obj)
    if isinstance(obj, (_Storage, _StorageType, _Dtype)):
        raise pickle.UnpicklingError("a bare storage or dtype in a checkpoint: tinyfw reads "
                                     "tensors")
    return obj


def _read(f: Any) -> bytes:
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return fh.read()
    if isinstance(f, (bytes, bytearray)):
        return bytes(f)
    return f.read()


def torch_load(f: str | os.PathLike | IO[bytes] | bytes, device: str | None = None) -> Any:
    """The object torch.save wrote to f (a path, a file object, or the bytes), its tensors as
    tinyfw Tensors on device, read without torch."""
    raw = _read(f)
    where = f if isinstance(f, (str, os.PathLike)) else "the checkpoint"
    if raw[:4] == b"PK\x03\x04" or (raw[:2] == b"PK" and zipfile.is_zipfile(io.BytesIO(raw))):
        return _convert(_load_zip(raw, where), device)
    if raw[:1] == b"\x80":
        return _convert(_load_legacy(raw, where), device)
    raise pickle.UnpicklingError(f"{where} is not a PyTorch checkpoint: it is neither a zip "
                                 "archive nor a legacy pickle (its first bytes are "
                                 f"{raw[:8]!r})")


def _load_zip(raw: bytes, where: Any) -> Any:
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        names = archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {where} is not a "
                           f"valid zip file ({e})") from e
    pickles = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
    if len(pickles) != 1:
        raise RuntimeError(f"PytorchStreamReader failed locating file data.pkl: {where} is a "
                           "zip file but not a PyTorch checkpoint")
    prefix = pickles[0][:-len("data.pkl")]
    order = "little"
    if prefix + "byteorder" in names:
        order = archive.read(prefix + "byteorder").decode().strip()
    if order != "little":
        raise RuntimeError(f"{where} was saved big-endian: tinyfw reads little-endian "
                           "checkpoints")
    storages: dict[str, _Storage] = {}

    def load_storage(pid: tuple, kind: _StorageType) -> _Storage:
        if len(pid) < 5:
            raise pickle.UnpicklingError(f"a malformed storage id {pid!r}")
        key = str(pid[2])
        if key not in storages:
            try:
                data = archive.read(f"{prefix}data/{key}")
            except (KeyError, zipfile.BadZipFile, OSError) as e:
                raise RuntimeError(f"{where}: storage data/{key} is missing or corrupt ({e})") \
                    from e
            storages[key] = _Storage(data, kind.dtype)
        return storages[key]

    try:
        body = archive.read(pickles[0])
    except (zipfile.BadZipFile, OSError) as e:
        raise RuntimeError(f"{where}: data.pkl is corrupt ({e})") from e
    return _unpickle(body, load_storage, where)


def _unpickle(body: bytes, load_storage: Callable[..., _Storage], where: Any) -> Any:
    try:
        return _Unpickler(io.BytesIO(body), load_storage).load()
    except (pickle.UnpicklingError, TypeError, RuntimeError):
        raise
    except (EOFError, ValueError, KeyError, IndexError, AttributeError, struct.error,
            UnicodeDecodeError) as e:
        raise pickle.UnpicklingError(f"{where}: a malformed pickle ({type(e).__name__}: {e})") \
            from e


def _load_legacy(raw: bytes, where: Any) -> Any:
    """torch's format before 1.6: pickled magic number, protocol version and system info, the
    object, the list of storage keys, then each storage as an int64 count and its bytes."""
    stream = io.BytesIO(raw)

    def plain() -> Any:
        return _unpickle_plain(stream, where)
    if plain() != _LEGACY_MAGIC:
        raise pickle.UnpicklingError(f"{where}: invalid magic number; corrupt file?")
    if plain() != 1001:
        raise RuntimeError(f"{where}: an unknown legacy protocol version")
    plain()  # system info (little-endian, type sizes)
    wanted: dict[str, tuple[_StorageType, int]] = {}

    def load_storage(pid: tuple, kind: _StorageType) -> _Storage:
        if len(pid) < 5:
            raise pickle.UnpicklingError(f"a malformed storage id {pid!r}")
        if len(pid) > 5 and pid[5] is not None:
            raise NotImplementedError("a legacy checkpoint with storage views: tinyfw reads "
                                      "legacy storages whole (save it again with torch >= 1.6)")
        key = str(pid[2])
        wanted[key] = (kind, int(pid[4]))
        return placeholders.setdefault(key, _Storage(b"", kind.dtype))
    placeholders: dict[str, _Storage] = {}
    start = stream.tell()
    obj = _unpickle(raw[start:], load_storage, where)
    # the unpickler read exactly one pickle: find where it ended
    stream.seek(start)
    _skip_pickle(stream, where)
    keys = plain()
    if not isinstance(keys, list):
        raise pickle.UnpicklingError(f"{where}: the legacy storage list is malformed")
    for key in keys:
        head = stream.read(8)
        if len(head) != 8:
            raise RuntimeError(f"{where} is truncated: storage {key} is missing")
        (count,) = struct.unpack("<q", head)
        kind = wanted.get(str(key), (None, 0))[0]
        dtype = kind.dtype if kind is not None and kind.dtype is not None else dtypes.uint8
        size = count * dtype.itemsize
        data = stream.read(size)
        if len(data) != size or count < 0:
            raise RuntimeError(f"{where} is truncated: storage {key} has {len(data)} of its "
                               f"{size} bytes")
        placeholders.setdefault(str(key), _Storage(b"", dtype)).raw = data
    return obj


def _unpickle_plain(stream: IO[bytes], where: Any) -> Any:
    try:
        return _Unpickler(stream, _no_storage).load()
    except (pickle.UnpicklingError, TypeError, RuntimeError):
        raise
    except Exception as e:  # a legacy header that is not a pickle
        raise pickle.UnpicklingError(f"{where}: a malformed legacy checkpoint ({e})") from e


def _no_storage(pid: tuple, kind: _StorageType) -> _Storage:
    raise pickle.UnpicklingError("a storage outside the object's pickle")


def _skip_pickle(stream: IO[bytes], where: Any) -> None:
    import pickletools
    try:
        for opcode, _, _ in pickletools.genops(stream):
            if opcode.name == "STOP":
                return
    except Exception as e:
        raise pickle.UnpicklingError(f"{where}: a malformed pickle ({e})") from e


# --- writing -----------------------------------------------------------------------------------


class _Global:
    """A name to write as a pickle GLOBAL (module, name), without importing it."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name


class _Reduce:
    def __init__(self, func: _Global, args: tuple):
        self.func, self.args = func, args


_TORCH_STORAGE_NAMES = {dt: name for name, dt in STORAGE_DTYPES.items()}


class _Pickler(pickle._Pickler):
    """The pure-Python pickler, writing _Global as GLOBAL and _Reduce as REDUCE, and tensors as
    torch's rebuild calls over persistent storage ids."""

    def __init__(self, file: IO[bytes], storages: list[np.ndarray]):
        super().__init__(file, protocol=2)
        self.storages = storages
        table: dict[type, Any] = dict(self.dispatch)
        table[_Global] = _Pickler.save_torch_global
        table[_Reduce] = _Pickler.save_torch_reduce
        self.dispatch = table  # type: ignore[misc]

    def save_torch_global(self: Any, obj: _Global) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())

    def save_torch_reduce(self: Any, obj: _Reduce) -> None:
        self.save(obj.func)
        self.save(obj.args)
        self.write(pickle.REDUCE)

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _StoragePid):
            module = "torch.storage" if obj.storage_name == "UntypedStorage" else "torch"
            return ("storage", _Global(module, obj.storage_name), obj.key, "cpu", obj.numel)
        return None


class _StoragePid:
    def __init__(self, key: str, storage_name: str, numel: int):
        self.key, self.storage_name, self.numel = key, storage_name, numel


def _as_saved(obj: Any, storages: list[np.ndarray]) -> Any:
    if isinstance(obj, Tensor):
        values = obj.numpy().copy(order="C")  # (0-d stays 0-d)
        key = str(len(storages))
        storages.append(values)
        size = tuple(values.shape)
        stride = tuple(int(np.prod(size[i + 1:])) for i in range(len(size)))
        empty_hooks = _Reduce(_Global("collections", "OrderedDict"), ())
        if obj.dtype in _TORCH_STORAGE_NAMES:
            pid = _StoragePid(key, _TORCH_STORAGE_NAMES[obj.dtype], values.size)
            return _Reduce(_Global("torch._utils", "_rebuild_tensor_v2"),
                           (pid, 0, size, stride, False, empty_hooks))
        pid = _StoragePid(key, "UntypedStorage", values.nbytes)
        return _Reduce(_Global("torch._utils", "_rebuild_tensor_v3"),
                       (pid, 0, size, stride, False, empty_hooks,
                        _Global("torch", obj.dtype.name)))
    if isinstance(obj, collections.OrderedDict):
        return _Reduce(_Global("collections", "OrderedDict"),
                       ([[k, _as_saved(v, storages)] for k, v in obj.items()],))
    if isinstance(obj, dict):
        return {k: _as_saved(v, storages) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_as_saved(v, storages) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_as_saved(v, storages) for v in obj)
    if obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        return obj
    raise TypeError(f"tinyfw.torch.save writes tensors, dicts, lists, tuples, numbers and "
                    f"strings, not {type(obj).__name__}")


def torch_save(obj: Any, f: str | os.PathLike | IO[bytes]) -> None:
    """Write obj in PyTorch's zip format (torch.load reads it, weights_only=True)."""
    storages: list[np.ndarray] = []
    saved = _as_saved(obj, storages)
    body = io.BytesIO()
    _Pickler(body, storages).dump(saved)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("archive/data.pkl", body.getvalue())
        archive.writestr("archive/byteorder", "little")
        for i, values in enumerate(storages):
            data = values.astype(values.dtype.newbyteorder("<")).tobytes()
            archive.writestr(f"archive/data/{i}", data)
        archive.writestr("archive/version", "3\n")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(out.getvalue())
    else:
        f.write(out.getvalue())
