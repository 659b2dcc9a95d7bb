"""`python -m tinyfw.probe`: every device is listed as available or with why not and the fix."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.device import Device
from tinyfw.probe import probe


def test_cpu_and_numpy_always_work() -> None:
    assert probe("CPU") == (True, "") and probe("NUMPY") == (True, "")


def test_every_device_is_available_or_names_the_fix() -> None:
    """A device that does not work here says why, and the command that fixes it."""
    for name in Device.names:
        ok, why = probe(name)
        assert ok or "install" in why, (name, why)


def test_the_listing_names_every_device() -> None:
    out = subprocess.run([sys.executable, "-m", "tinyfw.probe"], capture_output=True,
                         text=True, check=True).stdout
    assert out.startswith(f"default device: {Device.DEFAULT}")
    for name in Device.names:
        assert f"  {name} " in out


def without_runtime_dir() -> dict[str, str]:
    """This environment without XDG_RUNTIME_DIR, as in a plain ssh or container shell, and
    without the WGPU_BACKEND_TYPE scripts/env.sh sets (with it, wgpu warns that it forces the
    backend: asked for, not noise)."""
    return {k: v for k, v in os.environ.items()
            if k not in ("XDG_RUNTIME_DIR", "WGPU_BACKEND_TYPE")}


def test_the_listing_prints_no_noise_without_a_runtime_dir() -> None:
    """The README's command prints only its listing: no "error: XDG_RUNTIME_DIR is invalid ..."
    from libwayland while WEBGPU starts Vulkan (ops_webgpu gives it a private folder then)."""
    done = subprocess.run([sys.executable, "-m", "tinyfw.probe"], capture_output=True,
                          text=True, check=True, env=without_runtime_dir(), timeout=300)
    assert done.stderr == "", done.stderr
    assert "WEBGPU" in done.stdout


def test_webgpu_leaves_the_environment_as_it_was() -> None:
    """The private runtime folder is there only while wgpu starts: unset again, and removed."""
    code = ("import os; from tinyfw.probe import probe; ok, why = probe('WEBGPU'); "
            "print(ok, os.environ.get('XDG_RUNTIME_DIR'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env=without_runtime_dir(), timeout=300)
    if not done.stdout.startswith("True"):
        pytest.skip(f"WEBGPU is not available here: {done.stdout}")
    assert done.stdout.split() == ["True", "None"], done.stdout
    assert done.stderr == "", done.stderr


@pytest.mark.parametrize("device", ["CPU", "CL", "CUDAEMU", "WEBGPU"])
def test_long_reductions(device: str) -> None:
    """A reduce longer than a device lets one thread loop (WEBGPU on lavapipe: 65535 loop
    iterations per shader, past which it stops silently) runs as two reduces, and gradients
    flow through both."""
    rng = np.random.default_rng(3)
    x = rng.random((2, 100_003)).astype(np.float32)
    t = Tensor(x, device=device, requires_grad=True)
    total = (t * t).sum(1)
    total.sum().backward()
    np.testing.assert_allclose(total.numpy(), (x.astype(np.float64) ** 2).sum(1), rtol=1e-4)
    np.testing.assert_allclose(t.grad.numpy(), 2 * x, rtol=1e-6)
    assert t.max().item() == x.max() and (-t).min().item() == -x.max()
    assert Tensor(np.ones(1 << 20, np.float32), device=device).sum().item() == 1 << 20


BACKENDS = ["CPU", "NUMPY", "CL", "CUDAEMU", "WEBGPU"]


def test_a_value_travels_through_every_device() -> None:
    """.to() copies between any two devices; each device computes on what it received, and
    gradients flow back through the copies to the first device."""
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    t = Tensor(x, requires_grad=True)
    y, expected = t, x.copy()
    for device in BACKENDS[1:] + ["CPU"]:
        y = (y.to(device) * 2 + 1).relu()
        expected = np.maximum(expected * 2 + 1, 0)
        assert y.device == device
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)
    y.sum().backward()
    assert t.grad is not None and t.grad.device == "CPU"
    np.testing.assert_allclose(t.grad.numpy(), np.where(x * 2 + 1 > 0, 2.0 ** 5, 0), rtol=1e-6)


def test_mixing_devices_in_one_op_is_an_error() -> None:
    a, b = Tensor([1.0], device="CL"), Tensor([2.0], device="WEBGPU")
    with pytest.raises(RuntimeError, match="device"):
        (a + b).numpy()
