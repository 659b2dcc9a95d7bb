"""Linear algebra and hashing (tinyfw/mixin/linalg.py, hashing.py): qr and svd give
torch.linalg's factors and gradients, newton_schulz tinygrad's iteration, and keccak and hash
hashlib's SHA-3 and SHAKE digests."""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from contextlib import AbstractContextManager

import numpy as np
import pytest
import torch

from tests.helpers import check, check_error
from tinyfw import Tensor, TinyJit, dtypes

# On a backend device only the distinct cases of each parametrized test run (the device
# subset, tests/conftest.py); CPU and NUMPY run them all.
pytestmark = pytest.mark.device_subset

# The needs_dtypes fixture (tests/conftest.py): a block that needs dtypes the device may lack.
NeedsDtypesFixture = Callable[..., AbstractContextManager[None]]

RATES = {"sha3_224": 144, "sha3_256": 136, "shake_128": 168}
MUON = (3.4445, -4.7750, 2.0315)  # the quintic of Muon's Newton-Schulz step


def _torch_qr(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.linalg.qr as a plain tuple."""
    q, r = torch.linalg.qr(x)
    return q, r


def _qr(x: Tensor) -> tuple[Tensor, Tensor]:
    """tinyfw's qr."""
    return x.qr()

# ---------------------------------------------------------------------------------------------
# qr




@pytest.mark.parametrize("shape, grad", [
    ((3, 3), False), ((5, 3), True), ((3, 5), True), ((2, 3, 4), True), ((4, 1), False),
    ((1, 4), True)],
    ids=str)
def test_qr_matches_torch(shape: tuple[int, ...], grad: bool) -> None:
    """Q and R are torch's (LAPACK's signs), square, tall, wide and batched, and so are the
    gradients of both (a 1 x n matrix's Q, a constant 1, requires grad as torch's)."""
    check([shape], _torch_qr, _qr, grad=grad, atol=1e-5)


def test_qr_keeps_lapack_signs() -> None:
    """A column already zero below the diagonal is not reflected (a negative diagonal stays,
    R = A for a triangular A); the others get -sign(diagonal) * norm, as LAPACK's dlarfg."""
    cases = [[[1.0, 2.0], [0.0, 3.0]], [[-1.0, 2.0], [0.0, -3.0]], [[0.0, 2.0], [0.0, -3.0]],
             [[0.0, 1.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], [[-2.0, 1.0], [2.0, 1.0]],
             [[1.0, 2.0, 3.0], [0.0, 0.0, 1.0], [0.0, 4.0, 5.0]]]
    for case in cases:
        check([np.array(case, dtype=np.float32)], _torch_qr, _qr, grad=False)


def test_qr_float64(needs_dtypes: NeedsDtypesFixture) -> None:
    """float64 keeps its dtype and precision."""
    with needs_dtypes(dtypes.float64):
        check([(4, 3)], _torch_qr, _qr, grad=False, dtype=np.float64, atol=1e-12,
              rtol=1e-10)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 3)], ids=str)
def test_qr_of_empty_matrices(shape: tuple[int, ...]) -> None:
    """No rows or no columns: torch's empty shapes."""
    check([shape], _torch_qr, _qr, grad=False)


@pytest.mark.parametrize("scale", [1e-25, 1e25], ids=str)
def test_tiny_and_huge_values(scale: float) -> None:
    """Entries whose squares underflow to 0 or overflow float32 still factor as torch's (the
    norms are taken of the matrix scaled by a power of two)."""
    a = (np.random.default_rng(6).normal(size=(3, 2)) * scale).astype(np.float32)
    q, r = Tensor(a).qr()
    q_torch, r_torch = torch.linalg.qr(torch.tensor(a))
    np.testing.assert_allclose(q.numpy(), q_torch.numpy(), atol=1e-5)
    np.testing.assert_allclose(r.numpy() / scale, r_torch.numpy() / scale, atol=1e-5)
    s = Tensor(a).svd(False)[1].numpy()
    np.testing.assert_allclose(s / scale, torch.linalg.svdvals(torch.tensor(a)) / scale,
                               rtol=1e-5)


def test_qr_errors() -> None:
    """torch's exceptions: a 1-D tensor or an int one (RuntimeError), float16
    (NotImplementedError: no half kernel)."""
    check_error([(3,)], _torch_qr, _qr)
    check_error([(3, 3)], lambda x: torch.linalg.qr(x.int()), lambda x: x.int().qr())
    check_error([(3, 3)], lambda x: torch.linalg.qr(x.half()), lambda x: x.half().qr())

# ---------------------------------------------------------------------------------------------
# svd


def assert_svd(a: np.ndarray, full: bool, atol: float = 1e-5, vectors: bool = True) -> None:
    """tinyfw's svd of a against torch's: the shapes and dtypes; S; each pair of singular
    vectors up to its sign (when vectors: they are unique only for distinct nonzero singular
    values); U diag(S) Vh = A; U and Vh orthogonal, including the columns that complete them."""
    __tracebackhide__ = True
    got = [t.numpy() for t in Tensor(a).svd(full)]
    want = [t.numpy() for t in torch.linalg.svd(torch.tensor(a), full_matrices=full)]
    for g, w, name in zip(got, want, ("U", "S", "Vh")):
        assert g.shape == w.shape and g.dtype == w.dtype, \
            f"{name}: {g.dtype}{g.shape}, torch gives {w.dtype}{w.shape}"
    (u, s, vh), (tu, ts, tvh) = got, want
    k = min(a.shape[-2:])
    np.testing.assert_allclose(s, ts, atol=atol, rtol=1e-5, err_msg="S")
    if vectors:
        signs = np.sign(np.sum(u[..., :k] * tu[..., :k], axis=-2, keepdims=True))
        np.testing.assert_allclose(u[..., :k] * signs, tu[..., :k], atol=atol * 10, err_msg="U")
        np.testing.assert_allclose(vh[..., :k, :] * np.swapaxes(signs, -1, -2), tvh[..., :k, :],
                                   atol=atol * 10, err_msg="Vh")
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=atol * 10,
                               err_msg="U diag(S) Vh")
    for m, name in ((u, "U"), (np.swapaxes(vh, -1, -2), "Vh")):
        gram = np.swapaxes(m, -1, -2) @ m
        np.testing.assert_allclose(gram, np.broadcast_to(np.eye(m.shape[-1]), gram.shape),
                                   atol=atol * 10, err_msg=f"{name} orthonormal")


@pytest.mark.parametrize("full", [True, False], ids=["full", "reduced"])
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (5, 3), (2, 3, 4)], ids=str)
def test_svd_matches_torch(shape: tuple[int, ...], full: bool) -> None:
    """Square, tall (m > n), wide (m < n) and batched, full_matrices both ways."""
    a = np.random.default_rng(len(shape) * 10 + shape[-1]).uniform(-2, 2, shape)
    assert_svd(a.astype(np.float32), full)


def test_svd_float64(needs_dtypes: NeedsDtypesFixture) -> None:
    """float64 keeps its dtype and converges to its precision (an odd number of columns)."""
    with needs_dtypes(dtypes.float64):
        assert_svd(np.random.default_rng(7).normal(size=(6, 5)), True, atol=1e-12)


def test_svd_of_singular_matrices() -> None:
    """Zero singular values (rank 2 of 4, a zero matrix, all ones) still give orthogonal U
    and Vh and the product A; their singular vectors are not unique, so only S is compared."""
    rng = np.random.default_rng(3)
    low_rank = rng.normal(size=(5, 2)) @ rng.normal(size=(2, 4))
    for a in (low_rank, np.zeros((3, 2)), np.ones((3, 3)), np.eye(3)):
        assert_svd(a.astype(np.float32), True, vectors=False)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 3)], ids=str)
def test_svd_of_empty_matrices(shape: tuple[int, ...]) -> None:
    """No rows or no columns: torch's shapes (full U or Vh is then the identity)."""
    for full in (True, False):
        assert_svd(np.zeros(shape, dtype=np.float32), full)


@pytest.mark.parametrize("shape, full", [((3, 2), False), ((2, 4), True)], ids=str)
def test_svd_gradient(shape: tuple[int, ...], full: bool) -> None:
    """The gradient through S and the singular vectors is torch's; the columns completing a
    full U (rows of Vh) take none, as torch ignores them."""
    rng = np.random.default_rng(5)
    a = rng.uniform(-2, 2, shape).astype(np.float32)
    x_torch, x_tiny = torch.tensor(a, requires_grad=True), Tensor(a, requires_grad=True)
    outs_torch = torch.linalg.svd(x_torch, full_matrices=full)
    outs_tiny = x_tiny.svd(full)
    k = min(shape)
    u_torch, u_tiny = outs_torch[0].detach().numpy(), outs_tiny[0].numpy()
    signs = np.sign(np.sum(u_tiny[..., :k] * u_torch[..., :k], axis=0))  # tinyfw's over torch's
    flips = [np.concatenate([signs, np.ones(outs_torch[0].shape[1] - k)])[None, :], np.ones(k),
             np.concatenate([signs, np.ones(outs_torch[2].shape[0] - k)])[:, None]]
    weights = [rng.uniform(0.5, 1.5, t.shape) for t in outs_torch]
    sum(((t * torch.tensor(w)).sum() for t, w in zip(outs_torch, weights)),
        torch.tensor(0.0)).backward()
    sum(((t * Tensor(f * w, dtype=t.dtype)).sum() for t, f, w in zip(outs_tiny, flips, weights)),
        Tensor(0.0)).backward()
    assert x_tiny.grad is not None and x_torch.grad is not None
    np.testing.assert_allclose(x_tiny.grad.numpy(), x_torch.grad.numpy(), atol=1e-4, rtol=1e-4)


def test_svd_errors() -> None:
    """torch's exceptions: 1-D or int (RuntimeError), float16 (NotImplementedError)."""
    check_error([(3,)], torch.linalg.svd, lambda x: x.svd())
    check_error([(3, 3)], lambda x: torch.linalg.svd(x.int()), lambda x: x.int().svd())
    check_error([(3, 3)], lambda x: torch.linalg.svd(x.half()), lambda x: x.half().svd())

# ---------------------------------------------------------------------------------------------
# newton_schulz


def newton_schulz_reference(a: np.ndarray, steps: int, params: tuple[float, ...],
                            eps: float = 1e-7) -> np.ndarray:
    """tinygrad's newton_schulz in float64 numpy: G = A / (||A||_F + eps), then steps times
    G <- sum_i params[i] (G G^T)^i G, a tall matrix transposed."""
    if a.shape[-2] > a.shape[-1]:
        return np.swapaxes(newton_schulz_reference(np.swapaxes(a, -1, -2), steps, params, eps),
                           -1, -2)
    g = a / (np.sqrt(np.sum(a * a, axis=(-2, -1), keepdims=True)) + eps)
    for _ in range(steps):
        gram, term, total = g @ np.swapaxes(g, -1, -2), g, params[0] * g
        for p in params[1:]:
            term = gram @ term
            total = total + p * term
        g = total
    return g


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (2, 3, 4)], ids=str)
def test_newton_schulz_matches_reference(shape: tuple[int, ...]) -> None:
    """Wide, tall (iterated transposed) and batched, Muon's quintic, three steps."""
    a = np.random.default_rng(2).normal(size=shape).astype(np.float32)
    out = Tensor(a).newton_schulz(3, MUON)
    assert out.shape == shape and out.dtype == dtypes.float32
    want = newton_schulz_reference(a.astype(np.float64), 3, MUON)
    np.testing.assert_allclose(out.numpy(), want, atol=1e-5, rtol=1e-4)


def test_newton_schulz_orthogonalizes() -> None:
    """The cubic 1.5 G - 0.5 G G^T G drives every singular value to 1: the result is the
    polar factor U V^T of torch's SVD."""
    a = np.random.default_rng(4).normal(size=(3, 3)).astype(np.float32) + 3 * np.eye(3,
                                                                                  dtype=np.float32)
    out = Tensor(a).newton_schulz(25, (1.5, -0.5)).numpy()
    u, _, vh = torch.linalg.svd(torch.tensor(a, dtype=torch.float64))
    np.testing.assert_allclose(out, (u @ vh).numpy(), atol=1e-5)


def test_newton_schulz_needs_a_matrix() -> None:
    """A 1-D tensor has no singular values to drive: RuntimeError naming its shape."""
    with pytest.raises(RuntimeError, match=r"\[3\]"):
        Tensor([1.0, 2.0, 3.0]).newton_schulz(1, MUON)

# ---------------------------------------------------------------------------------------------
# keccak and hash


def hashlib_digest(cfg: str, message: bytes) -> bytes:
    """hashlib's digest of the configuration keccak names (16 bytes of shake_128, as
    tinygrad's keccak gives)."""
    h = hashlib.new(cfg, message)
    return h.digest(16) if cfg.startswith("shake") else h.digest()


def hash_reference(data: bytes) -> bytes:
    """tinygrad's Tensor.hash with hashlib: data zero padded to whole MiB, shake_128 (16 bytes)
    of each 4 KiB chunk, the digests of each MiB hashed again, until one MiB is left."""
    mib = 1 << 20
    while True:
        data = data + bytes(-len(data) % mib if data else mib)
        digests = b"".join(hashlib.shake_128(data[at:at + 4096]).digest(16)
                           for at in range(0, len(data), 4096))
        groups = [digests[at:at + 4096] for at in range(0, len(digests), 4096)]
        data = b"".join(hashlib.shake_128(g).digest(16) for g in groups)
        if len(groups) == 1:
            return data


@pytest.mark.parametrize("cfg", sorted(RATES))
def test_keccak_matches_hashlib(cfg: str, needs_dtypes: NeedsDtypesFixture) -> None:
    """Empty, one byte, one short of a block (the padding's two bits in one byte), exactly a
    block (a whole block of padding more), one more, and past two blocks."""
    rate = RATES[cfg]
    rng = np.random.default_rng(rate)
    with needs_dtypes(dtypes.uint64):
        for length in (0, 1, rate - 1, rate, rate + 1, 2 * rate + 5):
            message = rng.integers(0, 256, length, dtype=np.uint8)
            digest = Tensor(message).keccak(cfg)
            assert digest.dtype == dtypes.uint8
            assert digest.numpy().tobytes() == hashlib_digest(cfg, message.tobytes()), length


def test_keccak_batched_rows(needs_dtypes: NeedsDtypesFixture) -> None:
    """Every row of the last axis is its own message; the leading axes stay."""
    rows = np.random.default_rng(0).integers(0, 256, (2, 3, 150), dtype=np.uint8)
    with needs_dtypes(dtypes.uint64):
        digest = Tensor(rows).keccak().numpy()
    assert digest.shape == (2, 3, 32)
    for index in np.ndindex(2, 3):
        assert digest[index].tobytes() == hashlib.sha3_256(rows[index].tobytes()).digest()


def test_keccak_hashes_the_bytes_of_any_dtype(needs_dtypes: NeedsDtypesFixture) -> None:
    """An int32, float32 or bool row is hashed as its elements' bytes (little-endian)."""
    rng = np.random.default_rng(1)
    rows = [rng.integers(-2**31, 2**31, (2, 40), dtype=np.int32),
            rng.normal(size=(2, 40)).astype(np.float32), rng.integers(0, 2, (2, 40)) == 1]
    with needs_dtypes(dtypes.uint64):
        for row in rows:
            digest = Tensor(row).keccak("shake_128").numpy()
            for i in range(2):
                assert digest[i].tobytes() == hashlib.shake_128(row[i].tobytes()).digest(16)


def test_keccak_rate_and_suffix_pairs(needs_dtypes: NeedsDtypesFixture) -> None:
    """A (rate, dsbyte) pair: SHA3-256, SHA3-384 and SHA3-512 (suffix 0x06), SHAKE256's first
    32 bytes (suffix 0x1F); the digest is (200 - rate) // 2 bytes."""
    message = np.frombuffer(b"tinyfw hashes its tensors" * 9, dtype=np.uint8)
    pairs = [((136, 0x06), hashlib.sha3_256(message).digest()),
             ((104, 0x06), hashlib.sha3_384(message).digest()),
             ((72, 0x06), hashlib.sha3_512(message).digest()),
             ((136, 0x1F), hashlib.shake_256(message).digest(32))]
    with needs_dtypes(dtypes.uint64):
        for cfg, want in pairs:
            assert Tensor(message).keccak(cfg).numpy().tobytes() == want, cfg


def test_keccak_of_no_rows_and_of_a_scalar(needs_dtypes: NeedsDtypesFixture) -> None:
    """No rows give no digests (shape (0, 32)); a 0-d tensor is one message of its bytes."""
    assert Tensor(np.zeros((0, 5), dtype=np.uint8)).keccak().shape == (0, 32)
    with needs_dtypes(dtypes.uint64):
        digest = Tensor(np.uint8(7)).keccak().numpy()
    assert digest.tobytes() == hashlib.sha3_256(b"\x07").digest()


def test_keccak_rejects_bad_configurations() -> None:
    """An unknown name, a rate too small for one squeeze or not a whole number of lanes, and a
    suffix byte that is not one: ValueError naming the value."""
    x = Tensor(np.zeros(3, dtype=np.uint8))
    for cfg, word in (("md5", "md5"), ((64, 6), "64"), ((137, 6), "137"), ((136, 0), "0"),
                      ((136, 0x80), "128")):
        with pytest.raises(ValueError, match=word):
            x.keccak(cfg)


def test_keccak_inside_tinyjit(needs_dtypes: NeedsDtypesFixture) -> None:
    """Inside a TinyJit's capture the rounds are not replayed by a TinyJit of their own (JITs
    do not nest): the outer one captures them, and its replays hash new messages."""
    step = TinyJit(lambda x: x.keccak())
    rng = np.random.default_rng(9)
    with needs_dtypes(dtypes.uint64):
        for _ in range(3):
            message = rng.integers(0, 256, 100, dtype=np.uint8)
            got = step(Tensor(message)).numpy().tobytes()
            assert got == hashlib.sha3_256(message.tobytes()).digest()


def test_hash_is_tinygrads_scheme(needs_dtypes: NeedsDtypesFixture) -> None:
    """16 bytes: shake_128 over the 4 KiB chunks of the zero-padded MiB, hashed again."""
    values = np.arange(10, dtype=np.float32) - 4.5
    with needs_dtypes(dtypes.uint64):
        digest = Tensor(values).hash()
    assert digest.shape == (16,) and digest.dtype == dtypes.uint8
    assert digest.numpy().tobytes() == hash_reference(values.tobytes())
