"""`python -m tinyfw.devices`: every device is listed as available or with why not and the fix."""
from __future__ import annotations

import subprocess
import sys

from tinyfw.device import Device
from tinyfw.devices import probe


def test_cpu_and_numpy_always_work() -> None:
    assert probe("CPU") == (True, "") and probe("NUMPY") == (True, "")


def test_every_device_is_available_or_names_the_fix() -> None:
    """A device that does not work here says why, and the command that fixes it."""
    for name in Device.names:
        ok, why = probe(name)
        assert ok or "install" in why, (name, why)


def test_the_listing_names_every_device() -> None:
    out = subprocess.run([sys.executable, "-m", "tinyfw.devices"], capture_output=True,
                         text=True, check=True).stdout
    assert out.startswith(f"default device: {Device.DEFAULT}")
    for name in Device.names:
        assert f"  {name} " in out
