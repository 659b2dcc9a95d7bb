"""CL builds the new kernels of a schedule as one OpenCL program (Runtime.load_many), with the
same results as one program per kernel; a learner's CLProgram still builds each kernel."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.device import Device
from tinyfw.probe import probe
from tinyfw.engine import program
from tinyfw.renderer.opencl_c import BITCAST_HELPERS, OPENCL
from tinyfw.runtime import ops_cl

pytestmark = pytest.mark.skipif(not probe("CL")[0], reason="not graded here: no OpenCL")


def _graph() -> tuple[Tensor, Tensor]:
    """A few kernels of a new shape (none built before in this process): sums, a sort."""
    x = Tensor(np.arange(30, dtype=np.float32).reshape(3, 10) % 7, device="CL")
    return (x.exp() * 3).sum(1), x.sort(1)[0].cumsum(1)


def test_one_program_for_a_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kernel built for a schedule comes out of one cl.Program; the values are those
    of NUMPY (and so of kernels built one at a time)."""
    program.forget("CL")
    batches: list[tuple[int, int]] = []  # (kernels, programs) of each load_many
    load_many = ops_cl.CLRuntime.load_many

    def counted(self: Any, kernels: list[tuple[str, Any, int]]) -> list[Any]:
        runners = load_many(self, kernels)
        batches.append((len(kernels), len({id(r.program) for r in runners})))
        return runners
    monkeypatch.setattr(ops_cl.CLRuntime, "load_many", counted)
    a, b = _graph()
    Tensor.realize(a, b)
    assert max(k for k, _ in batches) >= 3 and all(n == 1 for _, n in batches), batches
    built = [p for p in program.cache.values() if p.device == "CL"]
    assert len(built) >= 3 and all(isinstance(p.runner, ops_cl.BuiltCLProgram) for p in built)
    x = np.arange(30, dtype=np.float32).reshape(3, 10) % 7
    np.testing.assert_allclose(a.numpy(), (np.exp(x) * 3).sum(1), rtol=1e-6)
    np.testing.assert_array_equal(b.numpy(), np.sort(x, 1).cumsum(1))


def test_joined_source_renames_and_keeps_helpers_once() -> None:
    """Two kernels of one name become k0_name and k1_name; the prelude and the bitcast helpers
    appear once; a source of another shape is not joined."""
    body = "__kernel void E_3(__global float* restrict data0) {\n  data0[0] = 1.0f;\n}\n"
    with_helpers = OPENCL.prelude + BITCAST_HELPERS + body
    joined = ops_cl.joined_source([("E_3", OPENCL.prelude + body), ("E_3", with_helpers)])
    assert joined is not None
    source, names = joined
    assert names == ["k0_E_3", "k1_E_3"]
    assert source.count(OPENCL.prelude) == 1 and source.count(BITCAST_HELPERS) == 1
    assert "__kernel void k0_E_3(" in source and "__kernel void k1_E_3(" in source
    assert ops_cl.joined_source([("E_3", body)]) is None  # no prelude: built alone


def test_a_failed_joined_build_builds_each_alone() -> None:
    """When the joined program does not build, each kernel is built alone, so the error is
    the broken kernel's own."""
    good = OPENCL.prelude + "__kernel void ok(__global float* restrict data0) { data0[0] = 1; }\n"
    bad = OPENCL.prelude + "__kernel void broken(__global float* restrict data0) { nope; }\n"
    with pytest.raises(RuntimeError, match="OpenCL build failed") as error:
        Device["CL"].load_many([("ok", good, 1), ("broken", bad, 1)])
    assert "broken" in str(error.value)


def test_a_learners_program_class_builds_each_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """With CLProgram.__init__ replaced (chapter 06's grading puts the learner's in), every
    kernel goes through it."""
    program.forget("CL")
    seen: list[str] = []
    own = ops_cl.CLProgram.__init__

    def learners(self: Any, name: str, source: str) -> None:
        seen.append(name)
        own(self, name, source)
    monkeypatch.setattr(ops_cl.CLProgram, "__init__", learners)
    a, b = _graph()
    Tensor.realize(a, b)
    assert len(seen) >= 3
    assert not any(isinstance(p.runner, ops_cl.BuiltCLProgram) for p in program.cache.values())
