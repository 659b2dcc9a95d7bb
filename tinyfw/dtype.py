"""Data types and PyTorch's type promotion rules."""
from __future__ import annotations

import builtins
import functools
import math
import struct
from dataclasses import dataclass, fields
from typing import Any, Final

import numpy as np


class _Interned(type):
    """Makes each distinct dtype once: DType("float32", 4, "f") is dtypes.float32. Equal dtypes
    being one object, a dtype is compared and hashed by identity, in C (every node made hashes
    its dtype, in the hash-consing key)."""
    _made: dict[tuple[Any, ...], Any] = {}

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        made = super().__call__(*args, **kwargs)
        key = (cls, *(getattr(made, f.name) for f in fields(made)))
        return _Interned._made.setdefault(key, made)


@dataclass(frozen=True, eq=False)
class DType(metaclass=_Interned):
    """A scalar type: its name, size in bytes and kind ('b' bool, 'i' int, 'u' uint, 'f' float).
    Each distinct one exists once (see _Interned), so == is identity."""
    name: str
    itemsize: int
    kind: str

    def __reduce__(self) -> tuple[type, tuple]:
        """Pickled as its fields (loading makes it through _Interned: the same object again)."""
        return type(self), tuple(getattr(self, field.name) for field in fields(self))

    @functools.cached_property
    def np(self) -> np.dtype:
        """The numpy dtype with the same bits (bfloat16's comes from ml_dtypes, made for it)."""
        if self.name == "bfloat16":
            return _bfloat16_np()
        return np.dtype(self.name if self.name != "bool" else np.bool_)

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "u"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    def __repr__(self) -> str:
        return f"dtypes.{self.name}"


@dataclass(frozen=True, eq=False)
class VectorDType(DType):
    """count values of a scalar dtype held and computed together (chapter 11's UPCAST, on a
    renderer with vector types): float32x8 is 8 float32s in one SIMD register."""
    scalar: DType = None  # type: ignore[assignment]
    count: int = 1

    @staticmethod
    def of(scalar: DType, count: int) -> VectorDType:
        """The vector of count values of scalar."""
        return VectorDType(f"{scalar.name}x{count}", scalar.itemsize * count, scalar.kind,
                           scalar, count)


class dtypes:
    """The dtypes tinyfw knows, and the defaults used when none is given."""
    bool: Final = DType("bool", 1, "b")
    int8: Final = DType("int8", 1, "i")
    uint8: Final = DType("uint8", 1, "u")
    int16: Final = DType("int16", 2, "i")
    int32: Final = DType("int32", 4, "i")
    int64: Final = DType("int64", 8, "i")
    uint16: Final = DType("uint16", 2, "u")
    uint32: Final = DType("uint32", 4, "u")
    uint64: Final = DType("uint64", 8, "u")
    float16: Final = DType("float16", 2, "f")
    bfloat16: Final = DType("bfloat16", 2, "f")
    float32: Final = DType("float32", 4, "f")
    float64: Final = DType("float64", 8, "f")
    half, float, double = float16, float32, float64
    int, long, short, char, uchar = int32, int64, int16, int8, uint8
    uint, ulong, ushort = uint32, uint64, uint16  # tinygrad's short names
    default_float: DType = float32
    default_int: DType = int32

    @staticmethod
    def all() -> tuple[DType, ...]:
        """Every dtype, from the lowest in promotion order to the highest."""
        d = dtypes
        return (d.bool, d.uint8, d.int8, d.int16, d.int32, d.int64, d.uint16, d.uint32,
                d.uint64, d.float16, d.bfloat16, d.float32, d.float64)

    @staticmethod
    def from_np(dt: np.dtype) -> DType:
        """The DType matching a numpy dtype (TypeError if tinyfw has none)."""
        name = "bool" if dt == np.bool_ else np.dtype(dt).name
        for d in dtypes.all():
            if d.name == name:
                return d
        raise TypeError(f"numpy dtype {dt} has no tinyfw equivalent")

    @staticmethod
    def from_py(x: object) -> DType:
        """The dtype PyTorch gives a Python scalar: bool, default int or default float."""
        if isinstance(x, bool):
            return dtypes.bool
        if isinstance(x, int):
            return dtypes.int_for(x)
        if isinstance(x, float):
            return dtypes.default_float
        raise TypeError(f"cannot make a tensor from a {type(x).__name__}")

    @staticmethod
    def int_for(*values: builtins.int) -> DType:
        """The default int if every value fits in it, else int64 (as tinygrad); a value beyond
        int64 raises torch's overflow error."""
        for v in values:
            if not -2 ** 63 <= v < 2 ** 63:
                raise ValueError(f"Overflow when unpacking long long: {v} does not fit in int64")
        lo, hi = _int_range(dtypes.default_int)
        return dtypes.default_int if all(lo <= v <= hi for v in values) else dtypes.int64

    @staticmethod
    def min(dt: DType) -> builtins.bool | builtins.int | builtins.float:
        """The smallest value of a dtype (-inf for floats)."""
        if dt.is_bool:
            return False
        return -float("inf") if dt.is_float else int(np.iinfo(dt.np).min)

    @staticmethod
    def finite_max(dt: DType) -> builtins.float:
        """The largest finite value of a float dtype."""
        return float(_bfloat16_max() if dt == dtypes.bfloat16 else np.finfo(dt.np).max)

    @staticmethod
    def max(dt: DType) -> builtins.bool | builtins.int | builtins.float:
        """The largest value of a dtype (inf for floats)."""
        if dt.is_bool:
            return True
        return float("inf") if dt.is_float else int(np.iinfo(dt.np).max)


def wrap_int(value: int, dtype: DType) -> int:
    """value wrapped around to an integer dtype, as a cast in C (and torch) wraps it."""
    bits = 8 * dtype.itemsize
    value %= 2 ** bits
    return value - 2 ** bits if not dtype.is_unsigned and value >= 2 ** (bits - 1) else value


def _infer_list_dtype(data: Any) -> DType:
    """The dtype PyTorch gives a nested list: bool if all bools, float if any float, else int."""
    flat = np.asarray(data, dtype=object).reshape(-1)
    if len(flat) == 0:
        return dtypes.default_float
    if all(isinstance(x, (bool, np.bool_)) for x in flat):
        return dtypes.bool
    if any(isinstance(x, (float, np.floating)) for x in flat):
        return dtypes.default_float
    return dtypes.int_for(*(int(x) for x in flat))


def _ints_as(data: Any, dt: DType) -> np.ndarray:
    """A nested list of Python numbers as an array of the integer dtype dt, checked as torch
    checks it: a negative int goes into an unsigned dtype of 8 to 32 bits by wrapping around if
    its magnitude fits (-1 is 255 in uint8), otherwise an int outside the dtype is torch's
    RuntimeError (OverflowError for uint64, ValueError past int64, as torch)."""
    lo, hi = dtypes.min(dt), dtypes.max(dt)
    try:  # the usual case at numpy's speed: ints that all fit (a batch of token ids)
        as_ints = np.asarray(data)
    except (OverflowError, ValueError):
        as_ints = np.zeros(0, dtype=object)
    if as_ints.dtype.kind in "iu" and (as_ints.size == 0 or
                                      lo <= as_ints.min() and as_ints.max() <= hi):
        return as_ints.astype(dt.np)
    values = np.array(data, dtype=object)
    for x in values.reshape(-1):
        if not isinstance(x, int) or isinstance(x, bool) or lo <= x <= hi:
            continue
        if dt == dtypes.uint64:
            raise OverflowError("can't convert negative int to unsigned" if x < 0 else
                                f"int too big to convert: {x}")
        if dt == dtypes.int64:
            raise ValueError(f"Overflow when unpacking long long: {x} does not fit in int64")
        if not (dt.is_unsigned and x < 0 and -x <= hi):
            raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow: "
                               f"{x}")
    wrapped = [wrap_int(x, dt) if isinstance(x, int) and not isinstance(x, bool) else x
               for x in values.reshape(-1)]
    return np.array(wrapped, dtype=dt.np).reshape(values.shape)


def round_float(value: builtins.float, dtype: DType) -> builtins.float:
    """value rounded to the nearest number of the float dtype (inf past its largest, 0 below
    half its smallest subnormal), as a cast to it rounds: a float32 constant of 1e39 is inf."""
    if dtype.itemsize >= 8:
        return builtins.float(value)
    packing = _IEEE_PACKING.get(dtype.name)
    if packing is None:  # bfloat16: numpy's cast (ml_dtypes)
        with np.errstate(over="ignore", under="ignore"):
            return builtins.float(np.asarray(value, np.float64).astype(dtype.np))
    try:  # struct rounds as a cast does (10x faster than numpy), and refuses what overflows
        return builtins.float(packing.unpack(packing.pack(value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


_IEEE_PACKING = {"float32": struct.Struct("<f"), "float16": struct.Struct("<e")}


def to_dtype(x: DType | str) -> DType:
    """A DType from a DType or its name ('float32')."""
    if isinstance(x, DType):
        return x
    found = getattr(dtypes, str(x), None)
    if not isinstance(found, DType):
        raise TypeError(f"unknown dtype {x!r}")
    return found


@functools.cache
def _bfloat16_np() -> np.dtype:
    """numpy's bfloat16, from ml_dtypes (imported on first use: most programs never need it)."""
    import ml_dtypes
    return np.dtype(ml_dtypes.bfloat16)


def _bfloat16_max() -> builtins.float:
    import ml_dtypes
    return builtins.float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)


_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}
_TORCH_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                "int64": "Long", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
                "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                "float64": "Double"}
# torch's "barebones" unsigned types: they promote only to a float, or to themselves
_BAREBONES = frozenset({"uint16", "uint32", "uint64"})


def torch_name(dt: DType) -> str:
    """The name torch's error messages give a dtype ("Float" for float32)."""
    return _TORCH_NAMES.get(dt.name, dt.name)


@functools.cache
def _int_range(dt: DType) -> tuple[int, int]:
    """The smallest and largest value of an int dtype (np.iinfo made once per dtype: a scalar
    operand asks for every op)."""
    info = np.iinfo(dt.np)
    return int(info.min), int(info.max)


def category(dt: DType) -> int:
    """0 for bool, 1 for integers, 2 for floats: a higher category always wins in promotion."""
    return _CATEGORY[dt.kind]


def promote_types(a: DType, b: DType) -> DType:
    """The smallest dtype both a and b convert to, as torch.promote_types defines it."""
    if a == b:
        return a
    if a.name in _BAREBONES or b.name in _BAREBONES:
        if a.is_float or b.is_float:
            return a if a.is_float else b
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {torch_name(a)} and {torch_name(b)}")
    if category(a) != category(b):
        return a if category(a) > category(b) else b
    if a.is_float:
        if a.itemsize == b.itemsize:  # float16 with bfloat16: neither holds the other
            return dtypes.float32
        return a if a.itemsize > b.itemsize else b
    if a.is_unsigned != b.is_unsigned:  # uint8 with a signed int: a signed int that holds both
        signed = b if a.is_unsigned else a
        return signed if signed.itemsize > 1 else dtypes.int16
    return a if a.itemsize > b.itemsize else b


def scalar_result_type(tensor_dtype: DType, scalar: object) -> DType:
    """The result dtype of a tensor combined with a Python scalar: the scalar only wins when it is
    of a higher category (an int tensor times 2.5 is float32, times 2 stays int)."""
    if tensor_dtype.kind == "f" and (type(scalar) is float or type(scalar) is int
                                     and -2 ** 63 <= scalar < 2 ** 63):  # (most ops: first)
        return tensor_dtype
    sd = dtypes.from_py(scalar)
    return sd if category(sd) > category(tensor_dtype) else tensor_dtype
