"""Every small chain of movement ops, on every device, against numpy: exhaustively enumerated.

A chain is one movement op (flip, permute, shrink, pad, expand, reshape), a stack of two, or (a
few) of three, applied to integer-valued float32 data (a fixed permutation of 1..n, so sums are
exact and a miscounted or misplaced element shows). Each result is made contiguous and reduced
with sum and with max over each axis and over all axes; every one of those values must equal
numpy's exactly. The gcc 12.2 loop vectorizer once miscompiled flipped sums on CPU (80 for the
55 of `Tensor(np.arange(1, 11).reshape(5, 2)).flip(1).sum()`, 11 of 50 flip-then-reduce shapes
wrong); with -fno-tree-loop-vectorize removed from tinyfw/runtime/c_compiler.py, 13 values here are
wrong (in flip_2d, flip_3d and test_long_flips).

Distinct views give distinct kernels (the sizes are constants in the source), and each costs a
compile (~50 ms of CPU time with gcc, ~0.2-0.4 s on CL and CUDAEMU, ~40 ms on WEBGPU). So the
enumeration is tiered (TIERS), and each tier realizes all its results with one
`Tensor.realize_all`. On CPU, NUMPY and WEBGPU (1563 values, ~1370 kernels):

* flip_2d: every 2-D shape with sizes 1..5, flipped along every set of axes;
* flip_3d: every 3-D shape with sizes 1..3 (but those with two size-1 axes), flipped along all;
* singles_2d / singles_3d: the first variant of each other op (see `variants`) on every 2-D
  shape with sizes 1..3 and (5, 2), (2, 5), (4, 3), (3, 4), and on (2, 3, 2), (3, 2, 3);
* pairs_2d / pairs_3d: every stack of two ops of different kinds (first variants) on (5, 2),
  and those with a flip on (2, 3, 2); triples: six stacks of three on (3, 2);
* index_2d: two strided slices (x[::-1, ::2], x[::2, 1::-2]) of six 2-D shapes;
* test_long_flips: every flip of (6..10, 2) and (6..10, 3), summed and maxed over all axes.

CL, CUDA and CUDAEMU, slow to compile, run the small enumeration (173 values, ~160 kernels): the
same tiers on (5, 2) and (2, 3) (flips), (2, 3) (singles), half the flip pairs of (2, 3), three
triples, (2, 3, 2) flipped along all axes, one strided slice of (5, 2), a third of the long flips.
NUMPY, which compiles nothing, also runs test_wide_numpy: every variant of every op on every 2-D
and 3-D shape above, and every stack of two (two variants of each op) on every 2-D shape.
"""
from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.device import Device
from tinyfw.probe import probe

Shape = tuple[int, ...]


# ---------------------------------------------------------------------------------------------
# the ops: each applies to a numpy array and to a Tensor alike


@dataclass(frozen=True)
class Move:
    """One movement op with its argument."""
    kind: str
    arg: Any

    def shape(self, shape: Shape) -> Shape:
        """The shape of the result for an input of shape."""
        return self.numpy(np.zeros(shape)).shape

    def numpy(self, x: np.ndarray) -> np.ndarray:
        """The op in numpy."""
        if self.kind == "flip":
            return np.flip(x, self.arg)
        if self.kind == "permute":
            return np.transpose(x, self.arg)
        if self.kind == "shrink":
            return x[tuple(slice(b, e) for b, e in self.arg)]
        if self.kind == "pad":
            return np.pad(x, self.arg)
        if self.kind == "expand":
            return np.broadcast_to(x.reshape((1,) * (len(self.arg) - x.ndim) + x.shape),
                                   self.arg)
        if self.kind == "index":
            return x[tuple(slice(*t) for t in self.arg)]
        return x.reshape(self.arg)

    def tensor(self, x: Tensor) -> Tensor:
        """The op in tinyfw."""
        if self.kind == "flip":
            return x.flip(self.arg)
        if self.kind == "permute":
            return x.permute(self.arg)
        if self.kind == "shrink":
            return x.shrink(self.arg)
        if self.kind == "pad":
            return x.pad(self.arg)
        if self.kind == "expand":
            return x.expand(*self.arg)
        if self.kind == "index":
            return x[tuple(slice(*t) for t in self.arg)]
        return x.reshape(*self.arg)

    def __repr__(self) -> str:
        """As tinyfw code."""
        if self.kind in ("expand", "reshape"):
            return f".{self.kind}{self.arg!r}"
        if self.kind == "index":
            parts = (":".join("" if v is None else str(v) for v in t) for t in self.arg)
            return f"[{', '.join(parts)}]"
        return f".{self.kind}({self.arg!r})"


KINDS = ("flip", "permute", "shrink", "pad", "expand", "reshape")  # and "index" (strided slices)


def variants(kind: str, shape: Shape) -> list[Move]:
    """The variants of an op kind tried on a tensor of shape, the first the most used: every
    flip and permute that changes it, a chosen few shrinks, pads, expands, reshapes, slices."""
    nd = len(shape)
    if kind == "flip":
        return [Move(kind, axes) for k in range(1, nd + 1)
                for axes in itertools.combinations(range(nd), k)
                if any(shape[a] > 1 for a in axes)]
    if kind == "permute":
        return [Move(kind, p) for p in itertools.permutations(range(nd))
                if p != tuple(range(nd)) and
                [shape[a] for a in p if shape[a] > 1] != [s for s in shape if s > 1]]
    if kind == "shrink":
        out = [tuple((1, s) if s > 1 else (0, s) for s in shape),        # drop the first
               tuple((0, s - 1) if s > 1 else (0, s) for s in shape)]    # drop the last
        out += [tuple((1, s - 1) if a == k else (0, s) for a, s in enumerate(shape))
                for k in range(nd) if shape[k] > 2]                      # the middle of one
        full = tuple((0, s) for s in shape)
        return [Move(kind, b) for b in dict.fromkeys(out) if b != full]
    if kind == "pad":
        out = [((1, 0),) * nd, ((0, 2),) * nd]
        out += [tuple((2, 1) if a == k else (0, 0) for a in range(nd)) for k in range(nd)]
        return [Move(kind, p) for p in out]
    if kind == "index":  # strided slices, built on flip, shrink, pad and reshape
        steps = [(None, None, -1), (None, None, 2), (1, None, -2), (None, None, -3)]
        out = [tuple(steps[(k + a) % len(steps)] for a in range(nd)) for k in range(len(steps))]
        return [Move(kind, t) for t in out]
    if kind == "expand":
        out = [tuple(3 if s == 1 else s for s in shape)] if 1 in shape else []
        out += [(2, *shape)]                                             # a new axis
        return [Move(kind, s) for s in out]
    n = math.prod(shape)
    out = [(n,), tuple(reversed(shape)), (1, n)]
    out += [(d, n // d) for d in range(2, n) if n % d == 0]
    return [Move(kind, s) for s in dict.fromkeys(out) if s != shape]


# ---------------------------------------------------------------------------------------------
# the chains


@dataclass(frozen=True)
class Chain:
    """Movement ops applied in turn to data of an input shape."""
    shape: Shape
    moves: tuple[Move, ...]

    def data(self) -> np.ndarray:
        """A fixed permutation of 1..n as float32, in shape."""
        n = math.prod(self.shape)
        perm = np.random.default_rng(n).permutation(n) + 1
        return perm.astype(np.float32).reshape(self.shape)

    def __repr__(self) -> str:
        """As tinyfw code (a repro)."""
        return f"x{self.shape}" + "".join(map(repr, self.moves))


def chains_of(shape: Shape, depth: int, firsts: int | None) -> Iterator[Chain]:
    """Chains of depth ops of distinct consecutive kinds from shape; with firsts, only the first
    firsts variants of each kind at each step."""
    def grow(shape_now: Shape, moves: tuple[Move, ...]) -> Iterator[tuple[Move, ...]]:
        if len(moves) == depth:
            yield moves
            return
        for kind in KINDS:
            if moves and moves[-1].kind == kind:
                continue  # two of a kind merge into one
            for m in variants(kind, shape_now)[:firsts]:
                yield from grow(m.shape(shape_now), moves + (m,))
    for moves in grow(shape, ()):
        yield Chain(shape, moves)


SHAPES_2D = [(a, b) for a in range(1, 6) for b in range(1, 6)]    # every one, sizes 1..5
SHAPES_3D = list(itertools.product(range(1, 4), repeat=3))           # every one, sizes 1..3
SMALL_2D = [(5, 2), (2, 3)]  # for the slow devices: the gcc bug's shape, an odd by even one
SMALL_3D = [(2, 3, 2)]


def flips(shapes: Sequence[Shape], every: bool) -> list[Chain]:
    """Each shape flipped along every set of axes (every), else along all its axes."""
    return [Chain(s, (m,)) for s in shapes for m in variants("flip", s)
            if every or len(m.arg) == len(s)]


def singles(shapes: Sequence[Shape]) -> list[Chain]:
    """Each shape through the first variant of each op kind but flip."""
    return [Chain(s, (m,)) for s in shapes for k in KINDS if k != "flip"
            for m in variants(k, s)[:1]]


def stacks(shapes: Sequence[Shape], depth: int, only: str | None = None) -> list[Chain]:
    """Each shape through every stack of depth ops (the first variant of each kind); with only,
    just the stacks that use that kind."""
    return [c for s in shapes for c in chains_of(s, depth, 1)
            if only is None or any(m.kind == only for m in c.moves)]


TRIPLE_KINDS = [("flip", "permute", "reshape"), ("pad", "flip", "shrink"),
                ("expand", "permute", "flip"), ("shrink", "reshape", "flip"),
                ("permute", "pad", "reshape"), ("reshape", "flip", "pad")]


def triples(shapes: Sequence[Shape]) -> list[Chain]:
    """Each shape through the stacks of three in TRIPLE_KINDS (first variants)."""
    out = []
    for s, kinds in itertools.product(shapes, TRIPLE_KINDS):
        moves: list[Move] = []
        now = s
        for k in kinds:
            options = variants(k, now)
            if not options:
                break
            moves.append(options[0])
            now = options[0].shape(now)
        else:
            out.append(Chain(s, tuple(moves)))
    return out


SINGLES_2D = [s for s in SHAPES_2D if max(s) <= 3] + [(5, 2), (2, 5), (4, 3), (3, 4)]
FLIP_3D = [s for s in SHAPES_3D if s.count(1) <= 1]  # two size-1 axes: a 1-D flip
SOME_3D = [(2, 3, 2), (3, 2, 3)]

INDEX_2D = [(5, 2), (2, 5), (3, 4), (4, 3), (5, 5), (3, 3)]


def indexed(shapes: Sequence[Shape], count: int) -> list[Chain]:
    """Each shape sliced with the first count variants of strided slices (x[::-1, ::2], ...)."""
    return [Chain(s, (m,)) for s in shapes for m in variants("index", s)[:count]]


# tier -> (the full enumeration: CPU, NUMPY, WEBGPU; the small one: CL, CUDA, CUDAEMU)
TIERS: dict[str, tuple[Callable[[], list[Chain]], Callable[[], list[Chain]]]] = {
    "flip_2d": (lambda: flips(SHAPES_2D, True), lambda: flips(SMALL_2D, True)),
    "flip_3d": (lambda: flips(FLIP_3D, False), lambda: flips(SMALL_3D, False)),
    "singles_2d": (lambda: singles(SINGLES_2D), lambda: singles(SMALL_2D[1:])),
    "singles_3d": (lambda: singles(SOME_3D), list),
    "pairs_2d": (lambda: stacks([(5, 2)], 2), lambda: stacks([(2, 3)], 2, "flip")[::2]),
    "pairs_3d": (lambda: stacks(SMALL_3D, 2, "flip"), list),
    "triples": (lambda: triples([(3, 2)]), lambda: triples([(3, 2)])[:3]),
    "index_2d": (lambda: indexed(INDEX_2D, 2), lambda: indexed(SMALL_2D[:1], 1)),
}
SLOW_DEVICES = ("CL", "CUDA", "CUDAEMU")


def outputs(x: Any, numpy: bool, every: bool = True) -> list[tuple[str, Any]]:
    """(name, value): x made contiguous, and its sum and max over each axis and over all (or,
    unless every, just its sum and max over all axes)."""
    out: list[tuple[str, Any]] = [("contiguous", x if numpy else x.contiguous())] if every else []
    for name in ("sum", "max"):
        for axis in [*range(x.ndim), None] if every else [None]:
            if numpy:
                out.append((f"{name}({axis})", getattr(np, name)(x, axis=axis)))
            else:
                out.append((f"{name}({axis})", getattr(x, name)(axis)))
    return out


def check(chains: Sequence[Chain], device: str, every: bool = True) -> None:
    """Every output of every chain on device equals numpy's (all realized at once)."""
    __tracebackhide__ = True
    pending: list[tuple[Chain, str, np.ndarray, Tensor]] = []
    for chain in chains:
        ref, got = chain.data(), Tensor(chain.data(), device=device)
        for m in chain.moves:
            ref, got = m.numpy(ref), m.tensor(got)
        for (name, r), (_, g) in zip(outputs(ref, True, every), outputs(got, False, every)):
            pending.append((chain, name, np.asarray(r), g))
    Tensor.realize_all(*(g for *_, g in pending))
    bad = []
    for chain, name, ref, got in pending:
        value = got.numpy()
        if value.shape != ref.shape or not np.array_equal(value, ref):
            bad.append(f"{chain!r}.{name}: got {value.tolist()}, numpy {ref.tolist()}")
    assert not bad, f"{device}: {len(bad)} of {len(pending)} wrong:\n" + "\n".join(bad[:40])


@functools.cache
def available(device: str) -> tuple[bool, str]:
    """Whether device works here (as `python -m tinyfw.probe` checks), and if not, why."""
    return probe(device)


@pytest.mark.parametrize("tier", sorted(TIERS))
@pytest.mark.parametrize("device", list(Device.names))
def test_movement_chains(device: str, tier: str) -> None:
    """Every chain of the tier, made contiguous and reduced, equals numpy on device."""
    ok, why = available(device)
    if not ok:
        pytest.skip(f"{device} is not available here: {why}")
    full, small = TIERS[tier]
    chains = small() if device in SLOW_DEVICES else full()
    if not chains:
        pytest.skip(f"tier {tier} is not run on {device} (slow to compile: see the docstring)")
    check(chains, device)


def test_wide_numpy() -> None:
    """On NUMPY (the interpreter: no compiles), every variant of every op (and of strided
    slices) on every 2-D and 3-D shape, and every stack of two ops (two variants of each) on
    every 2-D shape."""
    chains = [Chain(s, (m,)) for s in SHAPES_2D + SHAPES_3D for k in (*KINDS, "index")
              for m in variants(k, s)]
    chains += [c for s in SHAPES_2D for c in chains_of(s, 2, 2)]
    check(chains, "NUMPY")


LONG_2D = [(a, b) for a in range(6, 11) for b in (2, 3)]


@pytest.mark.parametrize("device", list(Device.names))
def test_long_flips(device: str) -> None:
    """Longer outer loops over short flipped inner ones, where gcc's vectorizer unrolls and
    miscounted (x(5, 2).flip(1).sum() was 75, not 55): every flip of each shape in LONG_2D,
    summed and maxed over all axes (one kernel each, to keep the compiles few)."""
    ok, why = available(device)
    if not ok:
        pytest.skip(f"{device} is not available here: {why}")
    shapes = LONG_2D[::3] if device in SLOW_DEVICES else LONG_2D
    check(flips(shapes, True), device, every=False)
