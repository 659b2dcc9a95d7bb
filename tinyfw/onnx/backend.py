"""tinyfw as an `onnx.backend.base.Backend`: what ONNX's own backend tests run
(`onnx.backend.test.BackendTest(TinyfwBackend, __name__)`)."""
from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from tinyfw.onnx.lowbit import narrow_array
from tinyfw.onnx.runner import OnnxRunner


class TinyfwRep(BackendRep):
    def __init__(self, runner: OnnxRunner):
        self.runner = runner

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        if isinstance(inputs, dict):
            given = inputs
        else:
            items = inputs if isinstance(inputs, (list, tuple)) else [inputs]
            given = dict(zip(self.runner.inputs, items))
        out = self.runner(given)
        narrow = self.runner.carried_outputs  # float8, int4...: from their carriers
        return tuple(narrow_array(out[name].numpy(), narrow[name]) if name in narrow
                     else out[name].numpy() for name in self.runner.outputs)


class TinyfwBackend(Backend):
    """device: "CPU" (ONNX's name) is tinyfw's default device; any tinyfw device name works."""

    @classmethod
    def _device(cls, device: str) -> str | None:
        return None if device.upper() == "CPU" else device

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> TinyfwRep:
        return TinyfwRep(OnnxRunner(model, device=cls._device(device)))

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU",
                  **kwargs: Any) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.upper() == "CPU"  # ONNX's device names: CPU and CUDA
