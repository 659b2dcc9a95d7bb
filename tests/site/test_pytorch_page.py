"""The site's page "Coming from PyTorch" (site/pytorch.md) shows code that runs: each tinyfw
example prints what its comments say, and the worked example is the PyTorch script with only its
imports changed, which trains on tinyfw as the text says."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "site" / "pytorch.md"
TORCH_IMPORTS = {
    "import torch": "import tinyfw.torch as torch",
    "from torch import nn, optim": "from tinyfw.torch import nn, optim",
    "import torch.nn.functional as F": "import tinyfw.torch.nn.functional as F",
    "from torch.utils.data import DataLoader, TensorDataset":
        "from tinyfw.torch.utils.data import DataLoader, TensorDataset",
}
# runs each example in a namespace of its own, printing a marker line between them
RUNNER = """
import sys
for i, path in enumerate(sys.argv[1:]):
    print(f"=== example {i}", flush=True)
    exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__"})
"""


def examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)


def promised(code: str) -> list[str]:
    """What each `print(...)  # value: words` line says it prints (the part before ': ')."""
    return [line.split("#", 1)[1].strip().split(": ")[0] for line in code.splitlines()
            if line.startswith("print(") and "#" in line]


def run(codes: list[str], folder: Path) -> list[str]:
    paths = []
    for i, code in enumerate(codes):
        paths.append(folder / f"example_{i}.py")
        paths[-1].write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", RUNNER, *map(str, paths)], cwd=folder,
                          capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done.stdout.split("=== example ")[1:]


def test_the_worked_example_is_the_torch_script_with_its_imports_changed() -> None:
    blocks = examples()
    where = next(i for i, b in enumerate(blocks) if b.startswith("import torch\n"))
    script, imports = blocks[where], blocks[where + 1]  # the script, then its new imports
    head = script.split("\n\n", 1)[0].splitlines()
    assert [TORCH_IMPORTS[line] for line in head] == imports.strip().splitlines()


def test_the_examples_run_and_print_what_they_say(tmp_path: Path) -> None:
    blocks = examples()
    script = next(b for b in blocks if b.startswith("import torch\n"))
    moved = "\n".join(TORCH_IMPORTS.get(line, line) for line in script.splitlines())
    ours = [b for b in blocks if not b.startswith("import torch\n")] + [moved]
    outputs = run(ours, tmp_path)
    assert len(outputs) == len(ours)
    for code, out in zip(ours[:-1], outputs[:-1]):
        printed = out.split("\n", 1)[1]
        for value in promised(code):
            assert value in printed, f"the example prints {printed!r}, its comment says {value!r}"
    accuracies = [float(a) for a in re.findall(r"accuracy (\S+)", outputs[-1])]
    assert len(accuracies) == 4 and max(accuracies) > 0.95, outputs[-1]
    assert (tmp_path / "net.pt").exists()
