"""The example programs run: tinygrad's README program (as its README prints it, but for the
import), examples/readme_mnist.py and examples/mnist.py, each for a few steps, and the sentence
embedding examples (examples/search.py, examples/embed.py) on short inputs."""
from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

from tinyfw import Tensor
from tinyfw.nn.state import safe_load

ROOT = Path(__file__).resolve().parents[2]

# tinygrad's README example, verbatim but for the first line (tinygrad -> tinyfw).
README_PROGRAM = """\
from tinyfw import Tensor, nn

class LinearNet:
  def __init__(self):
    self.l1 = Tensor.kaiming_uniform(784, 128)
    self.l2 = Tensor.kaiming_uniform(128, 10)
  def __call__(self, x:Tensor) -> Tensor:
    return x.flatten(1).dot(self.l1).relu().dot(self.l2)

model = LinearNet()
optim = nn.optim.Adam([model.l1, model.l2], lr=0.001)

x, y = Tensor.rand(4, 1, 28, 28), Tensor([2,4,3,7])  # replace with real mnist dataloader

with Tensor.train():
  for i in range(10):
    optim.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y).backward()
    optim.step()
    print(i, loss.item())
"""


def run_example(*args: str, env: dict[str, str] | None = None,
                timeout: float = 120) -> str:
    """Run an example program with the test's Python; its stdout (it must exit 0)."""
    result = subprocess.run([sys.executable, *args], check=False, cwd=ROOT, capture_output=True,
                            text=True, env={**os.environ, **(env or {})}, timeout=timeout)
    assert result.returncode == 0, f"{args} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_tinygrads_readme_program_trains() -> None:
    Tensor.manual_seed(0)  # the program draws its weights and x: the same numbers every run
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(README_PROGRAM, "tinygrad_readme.py", "exec"), {"__name__": "readme"})
    lines = out.getvalue().splitlines()
    assert [int(line.split()[0]) for line in lines] == list(range(10))
    losses = [float(line.split()[1]) for line in lines]
    assert losses[-1] < losses[0] * 0.9, losses  # 10 Adam steps on one batch of 4


def test_readme_mnist_learns() -> None:
    out = run_example("examples/readme_mnist.py", env={"STEPS": "100"})
    match = re.search(r"test accuracy ([0-9.]+) after 100 steps", out)
    assert match, out
    assert float(match.group(1)) > 0.8, out


def test_mnist_mlp_runs_and_saves(tmp_path: Path) -> None:
    path = tmp_path / "mlp.safetensors"
    out = run_example("examples/mnist.py", "--model", "mlp", "--epochs", "1", "--steps", "50",
                      "--save", str(path))
    match = re.search(r"test accuracy ([0-9.]+)% \(\d+/10000\)\n50 steps in 1 epoch", out)
    assert match, out
    assert float(match.group(1)) > 70, out  # 50 steps reach about 90%
    saved = safe_load(path)
    assert {k: v.shape for k, v in saved.items()} == {
        "l1.weight": (128, 784), "l1.bias": (128,), "l2.weight": (10, 128), "l2.bias": (10,)}


def test_mnist_conv_runs() -> None:
    # two epochs: the jitted step goes on replaying after the learning rate changes
    out = run_example("examples/mnist.py", "--model", "conv", "--epochs", "2", "--steps", "3",
                      "--batch", "32")
    assert re.search(r"test accuracy [0-9.]+% \(\d+/10000\)\n6 steps in 2 epoch", out), out


def test_sentence_examples_rank_by_meaning() -> None:
    """examples/search.py and examples/embed.py (all-MiniLM-L6-v2), on short inputs: each
    compiles the model's kernels for its batch (about 26, a few seconds on the CPU)."""
    out = run_example("examples/search.py", "how do plants make food", "--top", "2")
    lines = out.splitlines()
    assert lines[0] == "query: how do plants make food", out
    assert lines[1].startswith(" 1. ") and "Photosynthesis" in lines[1], out
    out = run_example("examples/embed.py", "I like tea.", "Tea is what I like.", "It rained.")
    rows = [line.split() for line in out.splitlines()[2:5]]
    similarity = [[float(x) for x in row[1:4]] for row in rows]
    assert all(abs(similarity[i][i] - 1) < 1e-3 for i in range(3)), out
    assert similarity[0][1] > similarity[0][2] + 0.3, out
