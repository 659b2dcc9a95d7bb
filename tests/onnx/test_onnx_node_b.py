"""The other half of ONNX's backend node tests through tinyfw.onnx (tests/onnx/onnx_node_suite.py;
the first half and the excluded cases: tests/onnx/test_onnx_node.py)."""
from __future__ import annotations

import pytest

pytest.importorskip("onnx")
from tests.onnx.onnx_node_suite import names_to_run, run_case_here  # noqa: E402


@pytest.mark.parametrize("name", names_to_run(1))
def test_node(name: str) -> None:
    run_case_here(name)
