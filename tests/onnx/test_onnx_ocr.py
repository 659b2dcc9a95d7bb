"""PP-OCRv4's text detector and recognizer (the .onnx files inside rapidocr-onnxruntime, never
imported) through tinyfw.onnx: examples/ocr.py reads back exactly a line of text that Pillow
draws, and the detector's and the recognizer's outputs match onnxruntime's."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
if importlib.util.find_spec("rapidocr_onnxruntime") is None:
    pytest.skip("rapidocr-onnxruntime is not installed (data-packages.txt)",
                allow_module_level=True)

TEXT = "tinyfw reads ONNX 2026"


def load_example() -> ModuleType:
    path = Path(__file__).parents[2] / "examples" / "ocr.py"
    spec = importlib.util.spec_from_file_location("examples_ocr", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["examples_ocr"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ocr() -> ModuleType:
    return load_example()


@pytest.fixture(scope="module")
def reader(ocr: ModuleType):  # type: ignore[no-untyped-def]
    return ocr.Reader()


def _session(path: Path):  # type: ignore[no-untyped-def]
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def test_reads_back_the_text_pillow_drew(ocr: ModuleType, reader) -> None:  # type: ignore
    found = reader.read(ocr.draw_text(TEXT))
    assert [text for _, text, _ in found] == [TEXT], found


def test_detector_and_recognizer_match_onnxruntime(ocr: ModuleType, reader) -> None:  # type: ignore
    image = ocr.draw_text(TEXT)  # the inputs read() gives them: its kernels again
    x = reader.detector_input(image)
    ours = next(iter(reader.detector({"x": x}).values())).numpy()
    theirs = _session(ocr.model_dir() / "ch_PP-OCRv4_det_infer.onnx").run(None, {"x": x})[0]
    np.testing.assert_allclose(ours, theirs, atol=2e-3)
    x0, y0, x1, y1 = reader.boxes(reader.detect(image))[0]
    line = reader.recognizer_input(image[y0:y1, x0:x1])
    ours = next(iter(reader.recognizer({"x": line}).values())).numpy()
    theirs = _session(ocr.model_dir() / "ch_PP-OCRv4_rec_infer.onnx").run(None, {"x": line})[0]
    np.testing.assert_allclose(ours, theirs, atol=2e-3)
