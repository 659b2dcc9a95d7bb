"""ONNX's own backend node tests through tinyfw.onnx (the cases, their comparison and the list of
excluded cases with why: tests/onnx/onnx_node_suite.py). This module runs half of the cases and
checks the excluded ones; tests/onnx/test_onnx_node_b.py runs the other half."""
from __future__ import annotations

import pytest

pytest.importorskip("onnx")
from tests.onnx.onnx_node_suite import (CASES, EVERY_CASE_DEVICES, EXCLUDED,  # noqa: E402
                                   names_to_run, run_case, run_case_here)
from tinyfw.device import Device  # noqa: E402


@pytest.mark.parametrize("name", names_to_run(0))
def test_node(name: str) -> None:
    run_case_here(name)


REFUSED = sorted(n for n, why in EXCLUDED.items() if why.startswith("refused:") and n in CASES)


@pytest.mark.parametrize("name", REFUSED if Device.DEFAULT in EVERY_CASE_DEVICES else [])
def test_refused(name: str) -> None:
    """What tinyfw cannot run is refused, naming the node or value and why, never computed
    wrong: when the model is loaded, or, where only an input's value says (Dropout's
    training_mode), when it runs."""
    with pytest.raises(NotImplementedError) as info:
        run_case(name)
    reason = EXCLUDED[name].removeprefix("refused:").strip()
    assert reason in str(info.value), f"expected {reason!r} in {str(info.value)!r}"


@pytest.mark.parametrize("name", sorted(n for n, why in EXCLUDED.items()
                                        if not why.startswith("refused:")))
def test_differs(name: str) -> None:
    pytest.skip(EXCLUDED[name])


def test_excluded_names_exist() -> None:
    unknown = sorted(set(EXCLUDED) - set(CASES))
    assert not unknown, f"tests/onnx/onnx_node_excluded.txt names cases onnx has not: {unknown}"
