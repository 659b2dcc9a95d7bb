"""`python -m tinyfw.probe`: every device, whether it works here, and if not, why (the first
line of its error says what to fix). probe(name) starts a device and runs one small kernel on
it; it computes with Tensor, so it lives above the layers it tests."""
from __future__ import annotations

from tinyfw.device import Device
from tinyfw.tensor import Tensor


def probe(name: str) -> tuple[bool, str]:
    """(available, a reason when it is not): the device is started and runs one small kernel."""
    try:
        Device[name]
        value = (Tensor([1.0, 2.0], device=name) * 2).sum().item()
    except Exception as error:  # each backend fails in its own way; the message says why
        return False, str(error).splitlines()[0]
    return (value == 6.0, "" if value == 6.0 else f"computed {value} instead of 6.0")


def main() -> None:
    print(f"default device: {Device.DEFAULT} (set DEVICE=... to change it)")
    for name in Device.names:
        ok, why = probe(name)
        print(f"  {name:<8} {'available' if ok else 'not available: ' + why}")


if __name__ == "__main__":
    main()
