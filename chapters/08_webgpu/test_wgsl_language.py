"""The WGSL dialect: your bindings and entry point, thread index, declarations, loops and
literals, in shaders that tinyfw renders with the shared walk of chapter 05 and runs on
lavapipe."""

from __future__ import annotations

import pytest

from chapters.device_checks import CASES, Case, check_case, forget_programs
from chapters.learner import reference
from tinyfw import dtypes
from tinyfw.renderer.wgsl import WGSL

pytestmark = pytest.mark.task("08.wgsl_language")
WEBGPU_CASES = [case for case in CASES if case.name != "half"]


def test_the_kernel_header() -> None:
    header = WGSL.kernel_header("E_4", [(0, "f32", True), (1, "i32", False)])
    expected = ("@group(0) @binding(0) var<storage, read_write> data0: array<f32>;\n"
                "@group(0) @binding(1) var<storage, read> data1: array<i32>;\n"
                "@compute @workgroup_size(64)\n"
                "fn E_4(@builtin(global_invocation_id) tf_id: vec3<u32>) {")
    assert header == expected, f"expected\n{expected}\ngot\n{header}"


def test_declarations_are_typed() -> None:
    assert WGSL.decl("f32", "v3", "1.0f", False) == "let v3: f32 = 1.0f;"
    assert WGSL.decl("i32", "acc", "0i", True) == "var acc: i32 = 0i;"


def test_literals() -> None:
    assert WGSL.const(True, dtypes.bool) == "true"
    assert WGSL.const(1.5, dtypes.float32) == "1.5f"
    assert "bitcast<f32>" in WGSL.const(float("inf"), dtypes.float32), \
        "WGSL has no literal for infinity: write its bits"


@pytest.mark.parametrize("case", WEBGPU_CASES, ids=lambda c: c.name)
def test_kernels_compute_what_the_reference_does(case: Case) -> None:
    forget_programs("WEBGPU")
    with reference("08.pipeline", "08.readback"):
        check_case(case, "WEBGPU")


def test_loops_declare_their_variable() -> None:
    assert WGSL.loop("ridx0", 8) == "for (var ridx0: i32 = 0; ridx0 < 8; ridx0++) {"
