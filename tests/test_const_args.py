"""A Python number that changes every step (a learning rate, a loop counter) does not compile a
kernel per value (tinyfw/engine/const_args.py): from its second value it is a kernel argument."""
from __future__ import annotations

import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.device import probe
from tinyfw.engine import const_args, program

DEVICES = ["CPU", "NUMPY"] + [d for d in ("CL", "WEBGPU") if probe(d)[0]]


@pytest.mark.parametrize("device", DEVICES)
def test_a_changing_number_compiles_a_bounded_number_of_kernels(device: str) -> None:
    x = Tensor(np.linspace(-2, 2, 37, dtype=np.float32), device=device).realize()
    host = x.numpy()
    before = program.built
    for step in range(200):
        lr = 0.1 / (1 + step)  # a schedule written as a float
        np.testing.assert_allclose((x * lr).numpy(), host * np.float32(lr), rtol=1e-6)
        np.testing.assert_allclose((x - step).numpy(), host - np.float32(step), rtol=1e-6)
    assert program.built - before <= 4  # x * lr and x - step: inline, then with an argument


def test_a_number_that_does_not_change_stays_in_the_kernel() -> None:
    x = Tensor(np.arange(23, dtype=np.float32)).realize()  # (a shape no other test uses)
    for _ in range(3):
        (x * 0.3125 + 17.5).realize()
    ast = (x * 0.3125 + 17.5).schedule()[0].ast
    assert ast is not None
    assert {n.arg for n in ast.toposort() if n.op.name == "CONST"} >= {0.3125, 17.5}


def test_varying_int_and_bool_constants_keep_their_values() -> None:
    x = Tensor([3, -7, 11], dtype="int64").realize()
    before = const_args.varied
    for k in (2, 5, -3, 2**40):
        assert (x * k + k).tolist() == [v * k + k for v in (3, -7, 11)]
        assert (x > k).tolist() == [v > k for v in (3, -7, 11)]
    assert const_args.varied > before
