"""PyTorch programs, kept in plain torch form in tests/pytorch/torch_programs/, run twice: under
torch, and with `torch` pointed at tinyfw.torch (sys.modules' torch, torch.nn, torch.optim,
torch.utils.data... for the run). Both start from torch's initial weights (the tinyfw run
loads them through load_state_dict) and must find the same losses step by step, within
float32 tolerance, on the CPU and on CL."""
from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tinyfw.torch
import tinyfw.torch.nn
import tinyfw.torch.nn.functional
import tinyfw.torch.optim
import tinyfw.torch.optim.lr_scheduler
import tinyfw.torch.utils
import tinyfw.torch.utils.data
from tinyfw.probe import probe

DEVICES = ["CPU"] + (["CL"] if probe("CL")[0] else [])
PROGRAMS = sorted((Path(__file__).parent / "torch_programs").glob("*.py"))
TINYFW_AS_TORCH = {
    "torch": tinyfw.torch, "torch.nn": tinyfw.torch.nn,
    "torch.nn.functional": tinyfw.torch.nn.functional, "torch.nn.init": tinyfw.torch.nn.init,
    "torch.optim": tinyfw.torch.optim, "torch.optim.lr_scheduler": tinyfw.torch.optim.lr_scheduler,
    "torch.utils": tinyfw.torch.utils, "torch.utils.data": tinyfw.torch.utils.data,
}


def run(path: Path, modules: dict[str, Any] | None, **kwargs: Any) -> Any:
    """The program's main(**kwargs), its `import torch` resolving to modules where given."""
    saved = {name: sys.modules.get(name) for name in TINYFW_AS_TORCH}
    try:
        if modules is not None:
            sys.modules.update(modules)
        return runpy.run_path(str(path), run_name="torch_program")["main"](**kwargs)
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def test_there_are_at_least_five_programs() -> None:
    assert len(PROGRAMS) >= 5


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_program_matches_torch(path: Path, device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the CPU, and on CL where it runs (the program's tensors on the default device)."""
    import torch  # the oracle
    assert sys.modules["torch"] is torch
    expected, start = run(path, None)
    initial = {k: v.numpy() for k, v in start.items()}
    monkeypatch.setenv("DEVICE", device)
    got, _ = run(path, TINYFW_AS_TORCH, initial_state=initial)
    monkeypatch.delenv("DEVICE")
    assert sys.modules["torch"] is torch
    np.testing.assert_allclose(got, expected, rtol=2e-4, atol=2e-5,
                               err_msg=f"{path.name} on {device}: losses step by step (then a "
                               "final figure)")
