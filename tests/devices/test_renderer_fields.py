"""Devices declare what they can do: every device's renderer is a Renderer (tinyfw/renderer/base.py)
whose fields codegen and the engine read, never the device's name."""
from __future__ import annotations

import ast
import copy
from pathlib import Path

import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.codegen.heuristic import hand_coded_optimizations
from tinyfw.codegen.kernel import Kernel
from tinyfw.codegen.opt import OptOps
from tinyfw.device import Device
from tinyfw.probe import probe
from tinyfw.renderer.base import Renderer
from tinyfw.renderer.cstyle import CPU_C
from tinyfw.renderer.cuda_c import CUDA
from tinyfw.renderer.wgsl import WGSL

ROOT = Path(__file__).resolve().parents[2] / "tinyfw"
NOT_YET: set[str] = set()  # files of codegen/ and engine/ that still name a device (none)


def kernel_of(t: Tensor) -> Kernel:
    item = t.schedule()[-1]
    assert item.ast is not None
    return Kernel.from_ast(item.ast, item.name)


@pytest.mark.parametrize("name", ["CPU", "NUMPY", "CL", "WEBGPU", "CUDAEMU"])
def test_every_device_has_a_renderer(name: str) -> None:
    """Each device's renderer is a Renderer, NUMPY's too (which compiles nothing)."""
    if not probe(name)[0]:
        pytest.skip(f"no {name} here")
    renderer = Device[name].renderer
    assert isinstance(renderer, Renderer)
    assert renderer.compiles == (name != "NUMPY")
    assert Device[name].has_float64 == renderer.has_float64  # (what pow reads: arithmetic.py)


def test_webgpu_declares_its_limits() -> None:
    """WGSL has no float64, exact fmod, 64-bit index or in-place kernel; the WEBGPU device's
    renderer holds its adapter's limit of storage buffers."""
    assert not (WGSL.has_float64 or WGSL.has_fmod or WGSL.has_int64_index or WGSL.in_place)
    assert WGSL.max_reduce == 65535 and WGSL.max_buffers is None
    if probe("WEBGPU")[0]:
        assert isinstance(Device["WEBGPU"].renderer.max_buffers, int)


def test_the_fields_not_the_name_choose_the_optimizations() -> None:
    """The heuristics read the renderer's fields: a renderer named like another device gets
    its own fields' optimizations, and one without work-groups gets no GROUP."""
    # (made on NUMPY: on a CPU of two cores this sum is two kernels, split_reduce.py)
    few = kernel_of(Tensor(np.ones((64, 4096), np.float32), device="NUMPY").sum(1))
    assert [o.op for o in hand_coded_optimizations(few, CUDA)] == [OptOps.GROUP]
    no_groups = copy.copy(CUDA)
    no_groups.has_workgroups = False
    assert all(o.op is not OptOps.GROUP for o in hand_coded_optimizations(few, no_groups))
    renamed = copy.copy(CPU_C)
    renamed.name = "WEBGPU"
    matmul = kernel_of(Tensor(np.ones((64, 64), np.float32)) @ Tensor(np.ones((64, 64),
                                                                               np.float32)))
    assert hand_coded_optimizations(matmul, renamed, 2, 8) == \
        hand_coded_optimizations(matmul, CPU_C, 2, 8) != ()


def device_names_in(path: Path) -> list[str]:
    """The device names written as string constants in a module's code (not its docstrings)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    return [f"{path.name}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings and node.value.partition(":")[0] in Device.names]


def test_codegen_and_engine_name_no_device() -> None:
    """No device name is compared in tinyfw/codegen/ or tinyfw/engine/: what a device can do
    is its renderer's fields."""
    paths = [p for folder in ("codegen", "engine") for p in sorted((ROOT / folder).glob("*.py"))
             if f"{folder}/{p.name}" not in NOT_YET]
    found = [hit for path in paths for hit in device_names_in(path)]
    assert found == []
