"""ONNX's "real" model tests through tinyfw.onnx: ResNet-50, DenseNet-121, Inception v1 and v2,
ShuffleNet, SqueezeNet, VGG-19, AlexNet and ZFNet-512, as the onnx wheel ships them (their
weights made by ConstantOfShape, their expected outputs beside them), run by onnx's own
BackendTest on tinyfw's Backend, offline."""
from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")
from onnx.backend.test import BackendTest  # noqa: E402

from tinyfw.onnx.backend import TinyfwBackend  # noqa: E402

import os  # noqa: E402

ALL_MODELS = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
              "shufflenet", "squeezenet", "vgg19", "zfnet512")
# All nine take about 25 minutes on 2 loaded cores (VGG-19 alone 7, compiling included), too
# long for every run: SqueezeNet (about 30 s) runs always, the nine with TINYFW_ONNX_MODELS=all.
MODELS = ALL_MODELS if os.getenv("TINYFW_ONNX_MODELS") == "all" else ("squeezenet",)

_backend_test = BackendTest(TinyfwBackend, __name__)
_backend_test.include(rf"^test_({'|'.join(MODELS)})_cpu$")
# only the real models' class (the others would be all skips)
OnnxBackendRealModelTest = _backend_test.test_cases["OnnxBackendRealModelTest"]


@pytest.fixture(autouse=True)
def _onnx_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
               ) -> None:
    """BackendTest writes each model's generated input under $ONNX_HOME: a temporary one."""
    monkeypatch.setenv("ONNX_HOME", str(tmp_path_factory.getbasetemp() / "onnx_home"))
