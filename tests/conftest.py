"""Fixtures shared by tinyfw's tests: what the device under test (DEVICE) cannot do."""
from __future__ import annotations

from types import TracebackType

import pytest

from tinyfw import DType, dtypes
from tinyfw.device import Device
from tinyfw.renderer.cstyle import NotSupportedError

# The dtypes a device cannot compute with. WGSL has 32-bit scalars only (f16 is an optional
# feature that tinyfw does not ask for), so WEBGPU has no float64, int64, uint64 or float16.
UNSUPPORTED_DTYPES: dict[str, frozenset[DType]] = {
    "WEBGPU": frozenset({dtypes.float64, dtypes.int64, dtypes.uint64, dtypes.float16}),
}


class NeedsDtypes:
    """`with NeedsDtypes(dtypes.float64): ...` runs the block. Where the device (DEVICE) cannot
    compute with one of the dtypes, the block must raise NotSupportedError naming that dtype and
    the device, and the test is then skipped with a reason that says so (`pytest -ra` lists
    it), rather than passing or skipping silently."""

    def __init__(self, *needed: DType) -> None:
        self.device = Device.DEFAULT
        lacking = UNSUPPORTED_DTYPES.get(self.device, frozenset())
        self.missing = [d for d in needed if d in lacking]

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> bool:
        __tracebackhide__ = True  # failures and skips point at the test's `with` line
        if not self.missing or (error is not None and not isinstance(error, NotSupportedError)):
            return False  # nothing to check, or another error: let it through
        names = ", ".join(d.name for d in self.missing)
        if error is None:
            pytest.fail(f"{self.device} has no {names}, yet this ran without NotSupportedError")
        message = str(error)
        assert f"not supported on {self.device}" in message and \
            any(d.name in message for d in self.missing), \
            f"NotSupportedError should name the dtype ({names}) and {self.device}: {message!r}"
        pytest.skip(f"not supported on {self.device}: {names} (NotSupportedError checked)")


@pytest.fixture
def needs_dtypes() -> type[NeedsDtypes]:
    """`with needs_dtypes(dtypes.float64): ...`: see NeedsDtypes."""
    return NeedsDtypes
