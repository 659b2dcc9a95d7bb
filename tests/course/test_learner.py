"""chapters/learner.py on tinyfw itself: use_many patches in all of a chapter's tasks or only
chosen ones, counts the calls of what it patched in, reference() lends tinyfw's code back for a
block, and unuse() restores tinyfw exactly."""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tinyfw.tensor
from chapters import learner
from chapters.tasks import default_layout
from tinyfw import Tensor
from tinyfw.nn import layers, optim
from tinyfw.uop import gradient

LAYOUT = default_layout()


@pytest.fixture(autouse=True)
def restored() -> Iterator[None]:
    """Each test leaves tinyfw with its own code."""
    yield
    learner.unuse()


def from_file(function: object, path: Path) -> bool:
    """Whether a function (or the one a call counter wraps) was compiled from path."""
    inner: Any = getattr(function, "__wrapped__", function)
    return Path(inner.__code__.co_filename) == path


def test_use_and_unuse_swap_a_chapter_everywhere() -> None:
    """A chapter's top-level functions are swapped where tinyfw imported them by name too."""
    originals = gradient.compute_gradient, gradient.gradient_rules, optim.Adam._update
    learner.use("02", "solutions", LAYOUT)
    path = LAYOUT.solutions_dir / "02_tensors" / "gradient.py"
    assert from_file(gradient.compute_gradient, path)
    assert tinyfw.tensor.compute_gradient is gradient.compute_gradient
    assert learner.active() == ("02", LAYOUT.solutions_dir)
    learner.unuse()
    assert (gradient.compute_gradient, gradient.gradient_rules, optim.Adam._update) == originals
    assert tinyfw.tensor.compute_gradient is originals[0] and learner.active() is None


def test_only_chosen_tasks_are_patched_in(tmp_path: Path) -> None:
    """With only=, a chapter's other tasks keep tinyfw's code, even where they are stubs."""
    mine = tmp_path / "mine"
    shutil.copytree(LAYOUT.exercises_dir, mine)
    original_sgd, original_linear = optim.SGD._update, layers.Linear.__call__
    learner.use_many(["10"], mine, LAYOUT, only=["10.adam"])
    assert from_file(optim.Adam._update, mine / "10_nn_optim" / "optim.py")
    assert optim.SGD._update is original_sgd and layers.Linear.__call__ is original_linear
    assert learner.patched_tasks() == {"10.adam"}
    out = layers.Linear(3, 2)(Tensor.ones(1, 3))  # tinyfw's Linear, not the stub
    assert out.shape == (1, 2)
    learner.unuse()
    assert learner.patched_tasks() == set()


def test_calls_are_counted_per_chapter() -> None:
    """count_calls wraps what is patched in; calls() says how often each function ran."""
    learner.use_many(["02", "10"], "solutions", LAYOUT, only=["02.backward", "10.adam"],
                     count_calls=True)
    x = Tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    assert learner.calls() == {"02": {"compute_gradient": 1}, "10": {"Adam._update": 0}}
    opt = optim.Adam([x], lr=0.1)
    opt.step()
    assert learner.calls()["10"] == {"Adam._update": 1}
    learner.unuse()
    assert learner.calls() == {}


def test_reference_lends_tinyfw_code_for_a_block() -> None:
    """Inside reference(task), tinyfw's code runs for that task; the learner's comes back after
    it, even when the block raises."""
    original = gradient.compute_gradient
    learner.use("02", "solutions", LAYOUT)
    mine = gradient.compute_gradient
    with pytest.raises(ValueError), learner.reference("02.backward"):
        assert gradient.compute_gradient is original
        assert tinyfw.tensor.compute_gradient is original
        raise ValueError("the block failed")
    assert gradient.compute_gradient is mine and tinyfw.tensor.compute_gradient is mine


def test_work_in_a_file_of_the_old_name_is_pointed_at(tmp_path: Path) -> None:
    """A learner's copy from before the files moved into folders (renderer_c.py, now
    cstyle.py) is named, with the rename to make, rather than "no such file"."""
    layout = default_layout()
    folder = tmp_path / "05_codegen"
    folder.mkdir()
    (folder / "renderer_c.py").write_text("# my work\n")
    with pytest.raises(learner.LearnerLoadError, match="your work is in renderer_c.py.*cstyle.py"):
        learner.load_file(folder / "cstyle.py", "_old_name_test", layout)
    missing = [new for new in learner.RENAMED if not list(layout.exercises_dir.glob(f"*/{new}"))]
    assert not missing, f"RENAMED names exercise files that do not exist: {missing}"
