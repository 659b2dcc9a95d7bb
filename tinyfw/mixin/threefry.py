"""Random numbers computed on the device: threefry 2x32, a counter-based generator (Salmon et
al., "Parallel random numbers: as easy as 1, 2, 3", 2011; JAX and tinygrad use it).

threefry2x32(key, block) scrambles a 64-bit block (two 32-bit words) under a 64-bit key with
20 rounds of add, rotate and xor. Consecutive blocks come out looking independent, so the i-th
random word of a stream is simply word 0 of threefry(key, (i, 0)): a kernel computes any
number of them at once, from nothing but the key and how many were drawn before. Tensor keeps,
per device, a uint32 tensor [key0, key1, drawn] (`Tensor.manual_seed` sets the key from the seed
and drawn to 0); a draw of n words computes counters drawn .. drawn + n - 1 and assigns
drawn + n back. That state is a tensor like any other, so TinyJit keeps it between replays and
each replay draws new numbers, and one seed gives the same numbers on every device.

The function is written once, for anything with +, ^, |, << and >> on 32-bit unsigned words
that wrap around: numpy arrays of uint32 (a test checks a device's words against them) and
Words, uint32 graph nodes of one shape. The price is Python's: `python -m bench.rng` timed an
eager `Tensor.rand(1000).realize()` at 1771 us (building about 120 steps of graph, scheduling,
two kernels) against numpy's 2.3 us, and 58 us inside TinyJit, whose replays build nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tinyfw.uop.ops import Ops, UOp

ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)  # Random123's rotation constants for 2x32
PARITY = 0x1BD11BDA                          # the key schedule's third word: k0 ^ k1 ^ PARITY
ROUNDS = 20


def rotl(x: Any, n: int) -> Any:
    """x's 32 bits rotated left by n."""
    return (x << n) | (x >> (32 - n))


def threefry2x32(key0: Any, key1: Any, x0: Any, x1: Any) -> tuple[Any, Any]:
    """The two words of threefry 2x32-20 of block (x0, x1) under key (key0, key1): every
    round adds, rotates and xors the two words, and every fourth round adds in the key."""
    keys = (key0, key1, key0 ^ key1 ^ PARITY)
    x0, x1 = x0 + keys[0], x1 + keys[1]
    for r in range(ROUNDS):
        x0 = x0 + x1
        x1 = rotl(x1, ROTATIONS[r % 8]) ^ x0
        if r % 4 == 3:  # the key injected again, with the injection's number
            s = r // 4 + 1
            x0 = x0 + keys[s % 3]
            x1 = x1 + keys[(s + 1) % 3] + s
    return x0, x1


def initial_state(seed: int) -> list[int]:
    """[key0, key1, drawn] for a seed (any int: taken modulo 2**64, as torch does)."""
    seed %= 1 << 64
    return [seed & 0xFFFFFFFF, seed >> 32, 0]


@dataclass(frozen=True)
class Words:
    """uint32 graph nodes of one shape, with the operators threefry2x32 uses."""
    node: UOp

    def _with(self, op: Ops, other: Words | int) -> Words:
        right = other.node if isinstance(other, Words) else self.node.const_like(other)
        return Words(self.node.alu(op, right))

    def __add__(self, other: Words | int) -> Words: return self._with(Ops.ADD, other)
    def __xor__(self, other: Words | int) -> Words: return self._with(Ops.XOR, other)
    def __or__(self, other: Words | int) -> Words: return self._with(Ops.OR, other)
    def __lshift__(self, n: int) -> Words: return self._with(Ops.MUL, 1 << n)
    def __rshift__(self, n: int) -> Words: return self._with(Ops.IDIV, 1 << n)
