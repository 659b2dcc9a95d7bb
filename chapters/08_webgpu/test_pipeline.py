"""Running a shader: your WebGPUProgram builds a compute pipeline once and dispatches it over
the buffers; your wgsl_groups covers every element. The shaders here are written by hand."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from chapters.device_checks import CASES, Case, check_case, forget_programs
from chapters.grading import expect_close
from chapters.learner import reference
from tinyfw import dtypes
from tinyfw.renderer.wgsl import MAX_GROUPS, WORKGROUP, wgsl_groups
from tinyfw.runtime.ops_webgpu import WebGPUAllocator, WebGPUProgram, wgpu_device

pytestmark = pytest.mark.task("08.pipeline")
WEBGPU_CASES = [case for case in CASES if case.name != "half"]

AXPY = """@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> y: array<f32>;
@compute @workgroup_size(64)
fn axpy(@builtin(global_invocation_id) id: vec3<u32>) {
  let i = id.x;
  if (i >= arrayLength(&out)) { return; }
  out[i] = 2.0f * x[i] + y[i];
}
"""


def storage_with(data: np.ndarray) -> object:
    import wgpu
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    return wgpu_device().create_buffer_with_data(data=data.tobytes(), usage=usage)


def read(buffer: object, n: int) -> np.ndarray:
    with reference("08.readback"):
        return WebGPUAllocator().copyout(buffer, n, dtypes.float32)


@pytest.mark.parametrize("n", [1, 64, 65, 1000, MAX_GROUPS * WORKGROUP,
                               MAX_GROUPS * WORKGROUP + 1, 10**8])
def test_the_workgroups_cover_every_element(n: int) -> None:
    x, y = wgsl_groups(SimpleNamespace(output=SimpleNamespace(numel=n)))
    assert 1 <= x <= MAX_GROUPS and y >= 1, f"groups ({x}, {y}): each between 1 and {MAX_GROUPS}"
    assert x * y * WORKGROUP >= n, f"({x}, {y}) workgroups of {WORKGROUP} do not cover {n}"
    assert (x * y - x) * WORKGROUP < n, f"({x}, {y}) workgroups for {n}: a row too many"


def test_a_shader_runs_over_its_buffers() -> None:
    x = np.arange(300, dtype=np.float32)
    y = np.full(300, 0.25, np.float32)
    out = storage_with(np.zeros(300, np.float32))
    WebGPUProgram("axpy", AXPY, 3)([out, storage_with(x), storage_with(y)], (5, 1))
    expect_close(read(out, 300), 2 * x + y, what="axpy over 300 invocations")


def test_one_pipeline_runs_many_times() -> None:
    """Built once, launched again with other buffers: the bind group is made per launch."""
    program = WebGPUProgram("axpy", AXPY, 3)
    for scale in (1.0, 2.0, 3.0):
        x = np.full(70, scale, np.float32)
        out = storage_with(np.zeros(70, np.float32))
        program([out, storage_with(x), storage_with(x)], (2, 1))
        expect_close(read(out, 70), 3 * x, what=f"launch with x = {scale}")


@pytest.mark.parametrize("case", WEBGPU_CASES, ids=lambda c: c.name)
def test_tensor_kernels_run_on_webgpu(case: Case) -> None:
    """tinyfw's kernels, rendered by the reference WGSL renderer, run by your pipeline."""
    forget_programs("WEBGPU")
    with reference("08.wgsl_language", "08.readback"):
        check_case(case, "WEBGPU")
