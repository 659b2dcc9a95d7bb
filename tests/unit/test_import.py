"""`import tinyfw` loads what computing with tensors needs, and leaves the rest until it is used:
its time is measured in bench/eager.py; this checks the modules, which do not depend on load."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LATER = ["tinyfw.nn", "tinyfw.engine.beam", "tinyfw.codegen.search", "concurrent.futures",
         "numpy.random", "tinyfw.runtime.ops_cl", "tinyfw.runtime.ops_webgpu", "mpi4py"]


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running code."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_import_leaves_layers_search_and_host_random_numbers_for_later() -> None:
    loaded = loaded_after("import tinyfw")
    assert not loaded & set(LATER), sorted(loaded & set(LATER))


def test_what_was_left_loads_when_used() -> None:
    loaded = loaded_after("from tinyfw import Tensor, nn\nTensor.randint(3, high=5).numpy()")
    assert {"tinyfw.nn", "numpy.random"} <= loaded
