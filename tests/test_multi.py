"""Chapter 13, many devices on one machine: indexed device names, sharded tensors, all-reduce."""
import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.device import Device


# --- indexed devices ---
def test_index_zero_is_the_plain_name():
    assert Device.canonicalize("cpu:0") == "CPU"
    assert Device.canonicalize("cpu:1") == "CPU:1"
    assert Device.canonicalize("NUMPY:02") == "NUMPY:2"
    with pytest.raises(RuntimeError, match="bad device index"):
        Device.canonicalize("CPU:x")


def test_indexed_devices_are_distinct():
    a = Tensor([1.0, 2.0, 3.0], device="CPU:1")
    assert a.device == "CPU:1" and (a * 2 + 1).device == "CPU:1"
    np.testing.assert_equal((a * 2 + 1).numpy(), [3, 5, 7])
    with pytest.raises(RuntimeError, match="same device"):
        a + Tensor([1.0, 2.0, 3.0])
    b = a.to("CPU")
    assert b.device == "CPU"
    np.testing.assert_equal((b + Tensor([1.0, 1.0, 1.0])).numpy(), [2, 3, 4])


def test_copies_between_kinds_and_indices():
    c = Tensor([1.0, 2.0], device="NUMPY:2")
    np.testing.assert_equal((c.to("CPU:1") * 3).to("NUMPY").numpy(), [3, 6])
