"""Keccak (SHA-3 and SHAKE) over the last axis of a tensor's bytes, and tinygrad's 16-byte hash.

The Keccak-f[1600] permutation works on 25 uint64 lanes, lane x + 5y holding the bytes
8(x + 5y) to 8(x + 5y) + 7 of the 200-byte state, little-endian. The state is a (batch, 5, 5)
tensor indexed [y, x], and every message of the batch is hashed at once. A round is three
kernels (KeccakF.one_round), the same in every round, so from the third round on a TinyJit
replays them (capture.replayed): building and scheduling them anew would take most of the
time, and a hash() runs 1200 rounds. The constants (rotation amounts, π's moves, round constants)
are made from the specification's rules (FIPS 202, 3.2) rather than copied as tables.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from tinyfw.dtype import DType, dtypes
from tinyfw.helpers import ceildiv, prod
from tinyfw.engine.capture import replayed
from tinyfw.mixin.core import TensorCore

if TYPE_CHECKING:
    from tinyfw.tensor import Tensor

ROUNDS = 24
STATE_BYTES = 200  # 25 lanes of 8 bytes
# name -> (rate in bytes, domain-separation byte: the suffix bits and the padding's first 1)
KECCAK_CONFIGS: dict[str, tuple[int, int]] = {
    "sha3_224": (144, 0x06), "sha3_256": (136, 0x06), "shake_128": (168, 0x1F),
}
# The digest is (200 - rate) // 2 bytes, read from the state once: it must fit in the rate
# bytes, as it does for every FIPS 202 function (SHA3-512's rate is 72).
MIN_RATE = 72
CHUNK = 4096  # hash(): bytes per first-level message
BLOCK = 2 ** 20  # hash(): bytes per 1 MiB group of 256 chunks


@cache
def rotation_amounts() -> tuple[int, ...]:
    """ρ's left-rotation of each lane (index x + 5y): (t+1)(t+2)/2 mod 64 for the t-th lane of
    the walk from (1, 0) by (x, y) -> (y, 2x + 3y), and 0 for lane (0, 0)."""
    amounts = [0] * 25
    x, y = 1, 0
    for t in range(24):
        amounts[x + 5 * y] = (t + 1) * (t + 2) // 2 % 64
        x, y = y, (2 * x + 3 * y) % 5
    return tuple(amounts)


@cache
def pi_destinations() -> tuple[int, ...]:
    """π's new index of each lane: lane (x, y) moves to (y, 2x + 3y mod 5)."""
    return tuple(y + 5 * ((2 * x + 3 * y) % 5) for y in range(5) for x in range(5))


@cache
def round_constants() -> tuple[int, ...]:
    """ι's constant of each round: bit 2^j - 1 is the bit j + 7 * round of the LFSR
    x^8 + x^6 + x^5 + x^4 + 1 started at 1."""
    register, constants = 1, []
    for _ in range(ROUNDS):
        constant = 0
        for j in range(7):
            if register & 1:
                constant |= 1 << (2 ** j - 1)
            register = ((register << 1) ^ 0x71) & 0xFF if register & 0x80 else register << 1
        constants.append(constant)
    return tuple(constants)


def keccak_config(cfg: str | tuple[int, int]) -> tuple[int, int]:
    """(rate, domain byte) of a named configuration or of a (rate, dsbyte) pair, checked."""
    if isinstance(cfg, str):
        if cfg not in KECCAK_CONFIGS:
            raise ValueError(f"keccak: unknown cfg {cfg!r}, expected one of "
                             f"{sorted(KECCAK_CONFIGS)} or a (rate, dsbyte) tuple")
        return KECCAK_CONFIGS[cfg]
    rate, dsbyte = cfg
    if not MIN_RATE <= rate < STATE_BYTES or rate % 8:
        raise ValueError(f"keccak: rate must be a multiple of 8 from {MIN_RATE} to 192, got "
                         f"{rate}")
    if not 0 < dsbyte < 0x80:
        raise ValueError(f"keccak: dsbyte must be between 1 and 127, got {dsbyte}")
    return rate, dsbyte


def padding_bytes(length: int, rate: int, dsbyte: int) -> np.ndarray:
    """pad10*1 after a message of length bytes: dsbyte, zeros, and 0x80 in the last byte of the
    last block (one byte dsbyte | 0x80 when only one is left); always at least one byte."""
    pad = np.zeros(rate - length % rate, dtype=np.uint8)
    pad[0] = dsbyte
    pad[-1] |= 0x80
    return pad


def rotate_left(lanes: Tensor, multipliers: Tensor, shifts: Tensor, wide: Tensor) -> Tensor:
    """Each lane rotated left by its amount r: lane * 2^r wraps the high bits off, and the bits
    it dropped, lane >> (64 - r), come back in at the bottom. That right shift is done without
    dividing by a tensor (a division checks its divisor for zeros each time it runs) and
    without 2^64, which a uint64 lacks: with the high and low 32-bit halves,
    lane >> (64 - r) = (high * 2^r) >> 32 for r <= 32, and high * 2^(r-32) + (low * 2^(r-32))
    >> 32 for r > 32 (wide); shifts holds 2^r or 2^(r-32). A rotation by 0 adds nothing."""
    high, low = lanes // 2 ** 32, lanes & 0xFFFFFFFF
    dropped = wide.where(high * shifts + (low * shifts) // 2 ** 32, (high * shifts) // 2 ** 32)
    return (lanes * multipliers) | dropped


class KeccakF:
    """The permutation Keccak-f[1600] on a device, called on a (batch, 5, 5) uint64 state [y, x].

    It holds the constants as tensors: ρ's multipliers, π's one-hot move matrix and each
    round's ι lane mask, one buffer each, so that every round runs the same kernels (a slice
    of one table would compile a kernel per offset)."""

    def __init__(self, tensor: type[Tensor], device: str):
        u64 = dtypes.uint64
        amounts = rotation_amounts()
        shifts = [1 << (r - 32) if r > 32 else 1 << r for r in amounts]
        self.multipliers = tensor([1 << r for r in amounts], device=device, dtype=u64)
        self.shifts = tensor(shifts, device=device, dtype=u64)
        self.wide = tensor([r > 32 for r in amounts], device=device)
        moves = np.zeros((25, 25), dtype=bool)
        moves[np.arange(25), pi_destinations()] = True
        self.moves = tensor(moves, device=device)
        self.iota = [tensor([c] + [0] * 24, device=device, dtype=u64).reshape(5, 5)
                     for c in round_constants()]
        self.top_bit = tensor.full((), 1 << 63, dtype=u64, device=device)  # a constant
        self.round = replayed(self.one_round)

    def __call__(self, state: Tensor) -> Tensor:
        """The state after the 24 rounds."""
        for constant in self.iota:
            state = self.round(state, constant)
        return state

    def one_round(self, state: Tensor, constant: Tensor) -> Tensor:
        """One round (θ, ρ, π, χ, ι) in three kernels: the rotated lanes are stored before π
        selects from them (else each of the 625 selections would compute θ and ρ again), and
        the moved ones before χ reads them at three places."""
        column = state[:, 0] ^ state[:, 1] ^ state[:, 2] ^ state[:, 3] ^ state[:, 4]
        # θ: every lane takes the parity of the column to its left and of the one to its
        # right, rotated by 1
        right = column.roll(-1, 1)
        right = (right * 2) | (right // self.top_bit)  # rotated by 1 (a constant divisor)
        state = state ^ (column.roll(1, 1) ^ right).unsqueeze(1)
        lanes = state.reshape(-1, 25)
        rotated = rotate_left(lanes, self.multipliers, self.shifts, self.wide)  # ρ
        rotated = rotated.reshape(-1, 25, 1)
        moved = self.moves.where(rotated.contiguous(), 0).sum(1, dtype=dtypes.uint64)  # π
        moved = moved.reshape(-1, 5, 5).contiguous()
        # χ: each lane's bit flips where the next lane along x has a 0 and the one after a 1
        mixed = moved ^ (moved.roll(-1, 2).bitwise_not() & moved.roll(-2, 2))
        return (mixed ^ constant).contiguous()  # ι


class HashingOps(TensorCore):
    """keccak (SHA-3, SHAKE) of each row of a tensor's bytes and hash, tinygrad's 16-byte
    digest of a whole tensor, made of Keccak over 4 KiB chunks."""
    __slots__ = ()

    # --- what the class must provide beyond TensorCore (Tensor does, in tinyfw/tensor.py) ---
    # Besides what is below: the bitwise ops, sum, where, cat and MovementOps' views (not
    # restated: a stub here would hide the methods of the mixins before this one);
    # type(self)(data, device=, dtype=) makes a tensor of host data.

    @staticmethod
    def full(shape: int | Sequence[int], fill_value: int | float | bool,
             dtype: DType | str | None = None, device: str | None = None,
             requires_grad: bool | None = None) -> Tensor:
        """A tensor of shape filled with one value (a constant)."""
        raise NotImplementedError

    @staticmethod
    def zeros(*shape: int | Sequence[int], dtype: DType | str | None = None,
              device: str | None = None, requires_grad: bool | None = None) -> Tensor:
        """A tensor of shape filled with 0."""
        raise NotImplementedError

    def bitcast(self, dtype: DType | str) -> Tensor:
        """The same bits read as another dtype."""
        raise NotImplementedError

    def contiguous(self) -> Tensor:
        """The same values in a buffer of their own: a kernel boundary."""
        raise NotImplementedError

    # --- hashing ---

    def keccak(self: Tensor, cfg: str | tuple[int, int] = "sha3_256") -> Tensor:
        """The Keccak digest of the bytes of each row (the last axis, its elements' bytes in
        little-endian order) as uint8: "sha3_224" (28 bytes), "sha3_256" (32, as hashlib's),
        "shake_128" (16 bytes of its output) or a (rate, dsbyte) pair ((200 - rate) // 2
        bytes). The result has shape self.shape[:-1] + (digest bytes,)."""
        rate, dsbyte = keccak_config(cfg)
        out_bytes = (STATE_BYTES - rate) // 2
        rows = self.reshape(1) if self.ndim == 0 else self
        data = rows.bitcast(dtypes.uint8)
        batch, length = prod(data.shape[:-1]), data.shape[-1]
        out_shape = (*rows.shape[:-1], out_bytes)
        if batch == 0:
            return type(self).zeros(*out_shape, dtype=dtypes.uint8, device=self.device)
        blocks = _blocks(data.reshape(batch, length), rate, dsbyte)
        state = _absorb(blocks, KeccakF(type(self), self.device))
        digest = state.reshape(batch, 25).bitcast(dtypes.uint8)[:, :out_bytes]
        return digest.reshape(out_shape)

    def hash(self: Tensor) -> Tensor:
        """A 16-byte (uint8) digest of the tensor's bytes, tinygrad's scheme: the bytes, zero
        padded to a whole number of MiB, as 4 KiB chunks each hashed with shake_128; the 16-byte
        digests of each MiB (4 KiB) hashed again, until one MiB is left, whose digest it is."""
        data = self.flatten().bitcast(dtypes.uint8)
        groups = ceildiv(data.shape[0], BLOCK)
        while groups > 1:
            data = _hash_mib(data.pad_to(groups * BLOCK).reshape(groups, BLOCK)).flatten()
            groups = ceildiv(groups, BLOCK // 16)
        return _hash_mib(data.pad_to(BLOCK).reshape(1, BLOCK)).flatten()


def _hash_mib(groups: Tensor) -> Tensor:
    """The 16-byte digest of each row of 1 MiB: shake_128 of the digests of its 4 KiB chunks."""
    chunks = groups.reshape(-1, CHUNK).keccak("shake_128")
    return chunks.reshape(groups.shape[0], -1).keccak("shake_128")


def _blocks(data: Tensor, rate: int, dsbyte: int) -> Tensor:
    """(batch, length) bytes padded (pad10*1) into (batch, blocks, 25) uint64 lanes, each block's
    rate bytes followed by zeros to the 200 bytes of the state."""
    batch, length = data.shape
    pad = type(data)(padding_bytes(length, rate, dsbyte), device=data.device)
    message = type(data).cat(data, pad.unsqueeze(0).expand(batch, pad.shape[0]), dim=1)
    blocks = message.reshape(batch, -1, rate).pad_to(None, None, STATE_BYTES)
    return blocks.bitcast(dtypes.uint64).reshape(batch, -1, 5, 5).contiguous()


def _absorb(blocks: Tensor, keccak_f: KeccakF) -> Tensor:
    """The state after each block in turn was XORed into it and went through Keccak-f. A block
    is picked by a one-hot selector of its own (a slice's offset would compile a kernel per
    block)."""
    batch, count = blocks.shape[:2]
    state = type(blocks).zeros(batch, 5, 5, dtype=dtypes.uint64, device=blocks.device)
    for i in range(count):
        picked = type(blocks)((np.arange(count) == i).reshape(1, count, 1, 1),
                              device=blocks.device)
        state = keccak_f(state ^ picked.where(blocks, 0).sum(1, dtype=dtypes.uint64))
    return state
