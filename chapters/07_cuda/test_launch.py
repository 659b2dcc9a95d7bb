"""Launching a grid: your launch_dims covers every element with blocks of threads, and your
kernel_args lays out the argument array cuLaunchKernel reads. The CUDAEMU device runs the grid
you ask for on the CPU; on a machine with an NVIDIA GPU, CUDA runs it for real."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from chapters.device_checks import CASES, Case, check_case, forget_programs
from chapters.learner import reference
from tinyfw.runtime.ops_cuda import kernel_args, launch_dims

pytestmark = pytest.mark.task("07.launch")


@pytest.mark.parametrize("n", [1, 127, 128, 129, 1000, 10**6])
def test_the_grid_covers_every_element(n: int) -> None:
    blocks, threads = launch_dims(n)
    assert 1 <= threads <= 1024, f"a block holds 1 to 1024 threads, not {threads}"
    assert blocks * threads >= n, f"{blocks} blocks of {threads} cover {blocks * threads} < {n}"
    assert (blocks - 1) * threads < n, f"{blocks} blocks of {threads} for {n}: one is idle"


def test_an_empty_launch_still_has_one_block() -> None:
    """A grid of 0 blocks is an error for the driver; the kernel's guard idles the thread."""
    blocks, threads = launch_dims(0)
    assert blocks == 1 and threads >= 1, (blocks, threads)


def test_kernel_args_point_at_the_pointers() -> None:
    pointers = [0x7F0000001000, 0xDEADBEEF00, 42]
    args, keep = kernel_args(pointers)
    assert isinstance(args, np.ndarray) and args.dtype == np.uint64 and args.shape == (3,), \
        "kernel_args should return a uint64 array with one address per argument"
    seen = [ctypes.c_uint64.from_address(int(address)).value for address in args]
    assert seen == pointers, f"the addresses point at {seen}, expected {pointers}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kernels_run_on_the_emulated_grid(case: Case) -> None:
    forget_programs("CUDAEMU")
    with reference("07.cuda_language", "07.nvrtc"):
        check_case(case, "CUDAEMU")


@pytest.mark.needs_device("CUDA")
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kernels_run_on_a_real_gpu(case: Case) -> None:
    """Your whole chapter on the GPU: your dialect, your NVRTC call, your grid and arguments."""
    forget_programs("CUDA")
    check_case(case, "CUDA")
