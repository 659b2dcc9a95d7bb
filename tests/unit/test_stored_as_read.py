"""A sum read through a permute is stored permuted (schedule.stored_as_read), and a vector of
outputs that are not side by side in memory is stored a lane at a time (lower_opts.stored_lanes).

A Linear layer's weight gradient is summed as (in, out) and read as the weight's (out, in):
stored in the order it is read, the optimizer's elementwise kernels read it in order."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tinyfw import Tensor, nn
from tinyfw.probe import probe
from tinyfw.codegen.heuristic import hand_coded_optimizations
from tinyfw.codegen.kernel import Kernel
from tinyfw.codegen.lower import LOps
from tinyfw.codegen.lower_opts import lower_optimized, vector_axis
from tinyfw.codegen.opt import Opt, OptOps, apply_opts
from tinyfw.renderer.cstyle import CPU_C
from tinyfw.shape.view import ShapeTracker
from tinyfw.uop.ops import Ops

from tests.unit.test_opt import run_with

RNG = np.random.default_rng(7)
U, P, T = OptOps.UPCAST, OptOps.PANEL, OptOps.THREAD


def test_a_short_sum_is_stored_as_summed() -> None:
    """A weight gradient over a batch of 6 (fewer than LONG_REDUCE values a sum) keeps the
    order it is summed in: its kernel is mostly stores, and stores in order are cheaper."""
    layer = nn.Linear(20, 12)
    layer(Tensor(RNG.standard_normal((6, 20), np.float32))).sum().backward()
    assert layer.weight.grad is not None
    items = (layer.weight.grad * 2).schedule()  # (the gradient itself is no target)
    assert [item.output.op for item in items] == [Ops.REDUCE, Ops.MUL]


def test_a_weight_gradient_is_stored_as_the_weight() -> None:
    """The weight gradient's kernel (over a batch of 64) writes the (out, in) buffer the
    weight has, through a permuted view, and what reads the gradient reads that buffer in
    order; the values are torch's."""
    x = RNG.standard_normal((64, 20), np.float32)
    layer = nn.Linear(20, 12)
    layer(Tensor(x)).relu().sum().backward()
    assert layer.weight.grad is not None
    items = (layer.weight.grad * 2).schedule()  # (the gradient itself is no target)
    assert items[-2].output.op is Ops.PERMUTE and items[-2].output.shape == (12, 20)
    assert items[-2].ast is not None
    store = items[-2].ast.src[0].arg
    assert store.views[-1].strides == (0, 1, 20), store  # the sum's (1, 20, 12), stored across
    w = torch.tensor(layer.weight.numpy(), requires_grad=True)
    b = torch.tensor(layer.bias.numpy(), requires_grad=True)  # type: ignore[union-attr]
    torch.relu(torch.tensor(x) @ w.T + b).sum().backward()
    np.testing.assert_allclose(layer.weight.grad.numpy(), w.grad.numpy(), rtol=1e-5,
                               atol=1e-6)
    read = items[-1]
    assert read.ast is not None
    views = [n.src[0].arg for n in read.ast.toposort() if n.op is Ops.LOAD]
    assert views == [ShapeTracker.from_shape((12, 20))], views


def test_permuted_sums_keep_their_values_and_kernels() -> None:
    """A sum asked for through a transpose is one kernel; a sum transposed and then added to
    is two, as before; both give numpy's values, for sizes that divide nothing."""
    a = RNG.standard_normal((5, 6, 7), np.float32)
    t = Tensor(a).sum(0).T
    assert len(t.schedule()) == 1
    np.testing.assert_allclose(t.numpy(), a.sum(0).T, rtol=1e-5, atol=1e-6)
    u = Tensor(a).sum(1).permute(1, 0) + 1
    assert len(u.schedule()) == 2
    np.testing.assert_allclose(u.numpy(), a.sum(1).T + 1, rtol=1e-5, atol=1e-6)
    v = Tensor(a).max(2, keepdim=True).reshape(5, 6).T * 3
    np.testing.assert_allclose(v.numpy(), a.max(2).T * 3, rtol=1e-6)


def test_a_vector_of_outputs_stored_across_goes_a_lane_at_a_time() -> None:
    """A matmul stored transposed, its columns a vector: the vector is computed as one (a
    load of the second matrix per step) and stored as 8 scalars, each at its own index;
    with panels each lane first adds what the panels before stored. The values are numpy's."""
    a = RNG.standard_normal((12, 32), np.float32)
    b = RNG.standard_normal((32, 16), np.float32)
    tiles = [(Opt(U, 2, 8), Opt(U, 0, 4)),
             (Opt(U, 2, 8), Opt(U, 0, 4), Opt(P, 2, 8), Opt(T, 0, 3))]
    for opts in tiles:
        out = (Tensor(a) @ Tensor(b)).T
        kernel = apply_opts(Kernel.from_ast(out.schedule()[-1].ast, "k"), opts)
        vector = vector_axis(kernel, 16)
        assert vector is not None and kernel.axes[vector].size == 8
        prog = lower_optimized(kernel, vector)
        stores = [s for s in prog.steps if s.op is LOps.STORE]
        assert len(stores) == 4 * 8 and all(s.dtype == out.dtype for s in stores)
        got = run_with(opts, lambda: (Tensor(a) @ Tensor(b)).T)
        np.testing.assert_allclose(got, (a.astype(np.float64) @ b).T, rtol=1e-4, atol=1e-4)


def test_the_rules_tile_a_weight_gradient_with_vectors() -> None:
    """The rules give the weight gradient of a Linear(784, 128) on a batch of 128 vectors
    along its outputs (the relu's mask computed a vector at a time), stored across."""
    x = RNG.standard_normal((128, 784), np.float32)
    layer = nn.Linear(784, 128)
    layer(Tensor(x)).relu().sum().backward()
    assert layer.weight.grad is not None
    item = layer.weight.grad.schedule()[-1]
    kernel = Kernel.from_ast(item.ast, "k")
    opts = hand_coded_optimizations(kernel, CPU_C, cores=2, lanes=16)
    tiled = apply_opts(kernel, opts)
    vector = vector_axis(tiled, 16)
    assert vector is not None and tiled.axes[vector].size == 16, (opts, vector)
    w = torch.tensor(layer.weight.numpy(), requires_grad=True)
    b = torch.tensor(layer.bias.numpy(), requires_grad=True)  # type: ignore[union-attr]
    torch.relu(torch.tensor(x) @ w.T + b).sum().backward()
    np.testing.assert_allclose(layer.weight.grad.numpy(), w.grad.numpy(), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("device", ["CL", "WEBGPU", "CUDAEMU"])
def test_lanes_stored_across_on_the_gpu_devices(device: str) -> None:
    """The same on the GPU devices: a 4 x 4 tile of a matmul stored transposed (on CL its
    columns a float4 stored as 4 scalars), with panels too, gives numpy's values."""
    if not probe(device)[0]:
        pytest.skip(f"not graded here: no {device}")
    a = RNG.standard_normal((12, 32), np.float32)
    b = RNG.standard_normal((32, 16), np.float32)
    for opts in [(Opt(U, 2, 4), Opt(U, 0, 4)), (Opt(U, 2, 4), Opt(U, 0, 3), Opt(P, 2, 8))]:
        got = run_with(opts, lambda: (Tensor(a, device=device) @ Tensor(b, device=device)).T)
        np.testing.assert_allclose(got, (a.astype(np.float64) @ b).T, rtol=1e-5, atol=1e-5,
                                   err_msg=str(opts))
