"""The cases of ONNX's own backend node tests (about 1,880 over about 200 operators, built in
memory by the onnx wheel: `onnx.backend.test.loader.load_model_tests(kind="node")`) through
tinyfw.onnx's Backend, compared as onnx's BackendTest compares them (the same dtype, rtol and atol).

The cases tinyfw does not pass are listed in tests/onnx/onnx_node_excluded.txt, each with why. One
"refused: ..." is a case tinyfw must refuse (NotImplementedError: a dtype it lacks, such as
float8 or int4, strings, sequences, or an operator it does not have, refused when the model is
loaded; an input value it cannot run with, such as Dropout's training_mode, when it runs):
that is tested too, so no excluded case can give a silent wrong answer. One "differs: ..."
is skipped with its reason. `python -m tests.onnx.onnx_node_suite` runs every case and writes the
list again (keeping the reasons given for "differs" cases).

On a backend device (CL, WEBGPU, CUDAEMU) only the first case of each operator runs (the rule
of the device subset, tests/conftest.py: the same kernels again at other sizes are left out),
in the README's test command; a case the device cannot express (WEBGPU: no int64, float16 or
float64) is skipped with the device's NotSupportedError."""
from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import numpy as np
from onnx.backend.test.loader import load_model_tests
from onnx.backend.test.runner import _normalize_tensor

from tinyfw.device import Device
from tinyfw.onnx.backend import TinyfwBackend

EXCLUDED_FILE = Path(__file__).with_name("onnx_node_excluded.txt")
EVERY_CASE_DEVICES = ("CPU", "NUMPY")


def _cases() -> dict:  # type: ignore[type-arg]
    with warnings.catch_warnings():  # building some cases warns of overflows, by design
        warnings.simplefilter("ignore")
        return {c.name: c for c in load_model_tests(kind="node")}


def read_excluded() -> dict[str, str]:
    """{case name: reason} from tests/onnx/onnx_node_excluded.txt ("name  reason" lines)."""
    out = {}
    for line in EXCLUDED_FILE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, reason = re.split(r"\s+", line.strip(), maxsplit=1)
            out[name] = reason
    return out


CASES = _cases()
EXCLUDED = read_excluded()


def _op_of(case) -> str:  # type: ignore[no-untyped-def]
    return case.model.graph.node[0].op_type if case.model.graph.node else ""


def names_to_run(shard: int, shards: int = 2) -> list[str]:
    """The cases to run, every shards-th from the shard-th: tests/onnx/test_onnx_node.py and
    tests/onnx/test_onnx_node_b.py run half each (a module runs on one pytest worker)."""
    names = sorted(n for n in CASES if n not in EXCLUDED)[shard::shards]
    if Device.DEFAULT in EVERY_CASE_DEVICES:
        return names
    first: dict[str, str] = {}
    for name in names:  # the first case of each operator (not its _expanded function)
        if not name.endswith("_expanded"):
            first.setdefault(_op_of(CASES[name]), name)
    return sorted(first.values())


def run_case_here(name: str) -> None:
    """run_case on this run's device; on a backend device, a case it cannot express (WEBGPU
    has no int64, float16 or float64: NotSupportedError, a clear refusal) is skipped with why."""
    import pytest

    from tinyfw.renderer.base import NotSupportedError
    try:
        run_case(name)
    except NotSupportedError as e:
        if Device.DEFAULT in EVERY_CASE_DEVICES:
            raise
        pytest.skip(f"not on {Device.DEFAULT}: {e}")


def run_case(name: str) -> None:
    """Runs one case as onnx's BackendTest does: each data set, the outputs' dtypes and values."""
    case = CASES[name]
    rep = TinyfwBackend.prepare(case.model)
    for inputs, expected in case.data_sets:
        outputs = rep.run([_normalize_tensor(i) for i in inputs])
        expected = [np.asarray(_normalize_tensor(e)) for e in expected]
        assert len(outputs) == len(expected), f"{len(outputs)} outputs, {len(expected)} expected"
        for out, ref in zip(outputs, expected):
            assert out.dtype == ref.dtype, f"dtype {out.dtype}, expected {ref.dtype}"
            np.testing.assert_allclose(out, ref, rtol=case.rtol, atol=case.atol)


def _reason(error: BaseException) -> str:
    """The part of a refusal that names what is missing, without node names."""
    message = str(error)
    message = re.sub(r"^(node '[^']*' \(\w+\)|value '[^']*'|initializer '[^']*'): ", "",
                     message)
    return f"refused: {message}"


def rewrite() -> None:
    """Runs every case; writes tests/onnx/onnx_node_excluded.txt with those that do not pass."""
    kept = {n: why for n, why in EXCLUDED.items() if not why.startswith("refused:")}
    found: dict[str, str] = {}
    passed = 0
    for name in sorted(CASES):
        try:
            run_case(name)
            passed += 1
        except NotImplementedError as e:
            found[name] = _reason(e)
        except Exception as e:  # a case that runs and differs needs a reason written by hand
            found[name] = kept.get(name, f"differs: TODO explain ({type(e).__name__})")
    header = [line for line in EXCLUDED_FILE.read_text().splitlines()
              if line.startswith("#")] if EXCLUDED_FILE.exists() else []
    width = max(len(n) for n in found) + 2
    EXCLUDED_FILE.write_text("\n".join(header + [f"{n.ljust(width)}{why}" for n, why in
                                                 sorted(found.items())]) + "\n")
    print(f"{passed} of {len(CASES)} cases pass ({100 * passed / len(CASES):.1f}%); "
          f"{len(found)} excluded, written to {EXCLUDED_FILE}")


if __name__ == "__main__":
    rewrite()
    sys.exit(0)
