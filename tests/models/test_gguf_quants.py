"""Every quantized GGUF type tinyfw reads (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and the K-quants Q2_K,
Q3_K, Q4_K, Q5_K, Q6_K), dequantized by tinyfw's tensor ops, against the gguf package's own
reference dequantization (llama.cpp's Python reader, a test-only oracle).

The types the gguf package can quantize are quantized from floats by it; for the K-quants, which
it only reads, the blocks are random bytes with finite float16 scales: every bit pattern is a
valid block, so random bytes cover every field's every value. Each is also written into a GGUF
file by the gguf package's writer and read back through tinyfw's reader and `linear`."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.models.gguf import BLOCKS, QUANTIZED, GGMLType, GGUFFile, dequantize, linear

gguf = pytest.importorskip("gguf")

DEVICE = os.environ.get("DEVICE", "CPU")
QUANTIZABLE = (GGMLType.Q4_0, GGMLType.Q4_1, GGMLType.Q5_0, GGMLType.Q5_1, GGMLType.Q8_0)
# where each type keeps its float16 scales: the byte offsets of d (and dmin or m)
SCALES = {GGMLType.Q4_0: (0,), GGMLType.Q4_1: (0, 2), GGMLType.Q5_0: (0,),
          GGMLType.Q5_1: (0, 2), GGMLType.Q8_0: (0,), GGMLType.Q2_K: (80, 82),
          GGMLType.Q3_K: (108,), GGMLType.Q4_K: (0, 2), GGMLType.Q5_K: (0, 2),
          GGMLType.Q6_K: (208,)}


def blocks_of(kind: GGMLType, rows: int, columns: int, seed: int = 0) -> np.ndarray:
    """Blocks (rows, columns / per block, bytes per block), uint8, of a (rows, columns) matrix."""
    rng = np.random.default_rng(seed)
    per_block, nbytes = BLOCKS[kind]
    if kind in QUANTIZABLE:
        floats = rng.standard_normal((rows, columns)).astype(np.float32)
        packed = gguf.quants.quantize(floats, gguf.GGMLQuantizationType(kind.value))
        return packed.reshape(rows, columns // per_block, nbytes)
    raw = rng.integers(0, 256, (rows, columns // per_block, nbytes), dtype=np.uint8)
    for at in SCALES[kind]:  # finite scales: float16 values in [-2, 2]
        scale = rng.uniform(-2, 2, raw.shape[:-1]).astype(np.float16)
        raw[..., at:at + 2] = scale[..., None].view(np.uint8).reshape(*raw.shape[:-1], 2)
    return raw


def reference(blocks: np.ndarray, kind: GGMLType) -> np.ndarray:
    """The gguf package's dequantization of blocks (rows, n, bytes) -> (rows, n * per block)."""
    flat = gguf.quants.dequantize(blocks.reshape(blocks.shape[0], -1),
                                  gguf.GGMLQuantizationType(kind.value))
    return flat.reshape(blocks.shape[0], -1)


@pytest.mark.parametrize("kind", QUANTIZED, ids=lambda k: k.name)
def test_dequantize_is_the_gguf_packages(kind: GGMLType) -> None:
    """Every number of 4 rows of 512 (2 or 16 blocks a row), bit for bit."""
    blocks = blocks_of(kind, 4, 512)
    ours = dequantize(Tensor(blocks, device=DEVICE), kind).numpy()
    np.testing.assert_array_equal(ours, reference(blocks, kind))


@pytest.mark.parametrize("kind", QUANTIZED, ids=lambda k: k.name)
def test_file_and_linear(kind: GGMLType, tmp_path: Path) -> None:
    """A tensor of each type written by the gguf package's writer reads back as it was, and
    linear (x @ W.T with W kept packed) is x @ the reference's W.T."""
    blocks = blocks_of(kind, 8, 256 * 2, seed=1)
    path = tmp_path / f"{kind.name}.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("w", blocks.reshape(8, -1),
                      raw_dtype=gguf.GGMLQuantizationType(kind.value))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    file = GGUFFile(path)
    assert file.tensors["w"].type is kind and file.tensors["w"].shape == (8, 512)
    want = reference(blocks, kind)
    np.testing.assert_array_equal(file.tensor("w", device=DEVICE).numpy(), want)
    x = np.random.default_rng(2).standard_normal((3, 512)).astype(np.float32)
    packed = file.tensor("w", device=DEVICE, quantized=True)
    got = linear(Tensor(x, device=DEVICE), packed, kind).numpy()
    np.testing.assert_allclose(got, x @ want.T, rtol=1e-4, atol=1e-3)


def test_an_unknown_type_is_refused_with_its_name(tmp_path: Path) -> None:
    """A file holding a type tinyfw does not read (IQ4_NL) is refused, naming the type."""
    path = tmp_path / "iq4.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("w", np.zeros((2, 18), dtype=np.uint8),
                      raw_dtype=gguf.GGMLQuantizationType.IQ4_NL)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(NotImplementedError, match="IQ4_NL"):
        GGUFFile(path)
