"""`python -m tinyfw.runtime`: every device, whether it works here, and if not, why and the fix."""
from __future__ import annotations

from tinyfw.device import Device, probe

def main() -> None:
    print(f"default device: {Device.DEFAULT} (set DEVICE=... to change it)")
    for name in Device.names:
        ok, why = probe(name)
        print(f"  {name:<8} {'available' if ok else 'not available: ' + why}")


if __name__ == "__main__":
    main()
