"""Padding a computed value: a PAD's zeros are a mask on a load, so a padded value that is
computed must be stored first."""

from __future__ import annotations

import numpy as np
import pytest

from chapters.grading import expect_close, expect_equal
from tinyfw import Tensor
from tinyfw.engine import realize
from tinyfw.engine.schedule import find_materialized, pad_source_to_materialize
from tinyfw.uop.ops import Ops

pytestmark = pytest.mark.task("04.pad")

RNG = np.random.default_rng(42)


def data(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def names(items: list) -> list[str]:
    return [item.name for item in items]


def test_pad_of_a_buffer_or_a_constant_needs_nothing() -> None:
    x = Tensor(data(3, 4))
    for padded in (x.pad(((1, 1), (0, 2))), x.T[1:].pad(((0, 1), (2, 0))),
                   Tensor.ones(3, 4).pad(((1, 1), (0, 0)))):
        assert padded.uop.op is Ops.PAD
        assert pad_source_to_materialize(padded.uop) is None, \
            "a buffer or a constant (seen through movement ops) is padded by its view's mask"


def test_pad_of_an_elementwise_value_returns_it() -> None:
    x = Tensor(data(3, 4))
    value = (x + 1).exp2()
    got = pad_source_to_materialize(value.pad(((1, 1), (0, 0))).uop)
    assert got is value.uop, f"expected the EXP2's node to be stored, got {got}"


def test_looks_through_movement_ops() -> None:
    """The computed value may sit below a chain of movement ops."""
    x = Tensor(data(3, 4))
    value = x * 2
    chain = value.T.flip(0)[1:].reshape(3, 3, 1).expand(3, 3, 2)
    assert pad_source_to_materialize(chain.pad(((0, 0), (1, 1), (0, 0))).uop) is value.uop


def test_pad_of_a_reduce_returns_the_reduce() -> None:
    x = Tensor(data(3, 4))
    summed = x.sum(1)  # a RESHAPE of a REDUCE
    reduce = summed.uop.src[0]
    assert reduce.op is Ops.REDUCE
    assert pad_source_to_materialize(summed.pad(((1, 1),)).uop) is reduce


def test_find_materialized_stores_the_padded_value() -> None:
    x = Tensor(data(3, 4))
    value = x + 1
    out = value.pad(((0, 0), (1, 1))) * 2
    assert find_materialized([out.uop], realize.is_loaded) == {out.uop, value.uop}


def test_padding_reads_zero_not_f_of_zero() -> None:
    """(x + 1).pad(...) is two kernels and pads with 0; x.pad(...) + 1 is one and pads with 1."""
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x = Tensor(a)
    stored = (x + 1).pad(((0, 0), (1, 1)))
    assert names(stored.schedule()) == ["E_3_4", "E_3_6"]
    expect_equal(stored, np.pad(a + 1, ((0, 0), (1, 1))))
    fused = x.pad(((0, 0), (1, 1))) + 1
    assert names(fused.schedule()) == ["E_3_6"]
    expect_equal(fused, np.pad(a, ((0, 0), (1, 1))) + 1)


def test_cat_of_computed_parts() -> None:
    """cat pads each part into place and adds them: each computed part is stored first."""
    a, b = data(3, 4), data(2, 4)
    out = Tensor.cat(Tensor(a) * 2, Tensor(b).exp())
    assert names(out.schedule()) == ["E_3_4", "E_2_4", "E_5_4"]
    expect_close(out, np.concatenate([a * 2, np.exp(b)]), rtol=1e-5)
    plain = Tensor.cat(Tensor(a), Tensor(b))
    assert names(plain.schedule()) == ["E_5_4"], "cat of two buffers is one kernel"
