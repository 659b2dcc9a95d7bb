"""Graph execution: several kernels of one device launched by one call from the host.

A TinyJit replay launches the same kernels on the same buffers every step; only its inputs and
its outputs are other buffers each time. Launched one by one, every kernel costs a round trip
through Python and the driver (ctypes, pyopencl, wgpu): tens of microseconds, which for a small
model's step is most of the step. A device graph is built once, at the capture, from the
kernels and every buffer they use; a replay tells it which buffers are new this time and makes
one call (tinygrad's GraphRunner is the model):

  CPU      one generated C function that calls every kernel's function in order (graph_cpu.py)
  CUDAEMU  the same, calling each emulated kernel's grid launcher
  CL       one cl.Kernel per launch with its arguments set once, all enqueued, one wait
  WEBGPU   one command encoder holding every dispatch, one submit
  CUDA     a CUDA graph of kernel nodes, its pointers patched per replay, one cuGraphLaunch

DeviceGraph keeps the bookkeeping common to all: where each buffer that may change (an input,
an output) sits among the kernels' arguments, and which buffer is bound there now. A device's
graph class says how to bind one argument (`bind`) and how to launch everything (`launch`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tinyfw.device import Buffer, Runtime
from tinyfw.renderer.base import NotSupportedError

__all__ = ["DeviceGraph", "GraphKernel", "NotSupportedError"]


@dataclass
class GraphKernel:
    """One kernel of a graph: its loaded program, its scheduled item (the launch size), and the
    buffers it ran on at the capture, the output first. A copy from buffers[1] into buffers[0]
    (item.ast None) where the graph class copies (`copies`) has no program."""
    program: Any
    item: Any
    buffers: list[Buffer]

    @property
    def is_copy(self) -> bool:
        return self.program is None


class DeviceGraph:
    """Kernels of one device launched by one call; the buffers in `variable` may be others at
    each call (see the module docstring). Subclasses define bind and launch."""

    copies = False  # whether it also copies one buffer of its device into another

    @classmethod
    def accepts(cls, program: Any) -> bool:
        """Whether a kernel of this program can be one of the graph's (else it runs alone)."""
        return True

    def __init__(self, device: Runtime, kernels: list[GraphKernel], variable: set[Buffer]):
        self.device, self.kernels = device, kernels
        # where each variable buffer is an argument: (kernel index, argument index) pairs
        self.places: dict[Buffer, list[tuple[int, int]]] = {}
        for i, kernel in enumerate(kernels):
            for j, buf in enumerate(kernel.buffers):
                if buf in variable:
                    self.places.setdefault(buf, []).append((i, j))
        self.bound: dict[Buffer, Buffer] = {buf: buf for buf in self.places}

    def __len__(self) -> int:
        return len(self.kernels)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.device.name} of {len(self.kernels)} kernels>"

    def __call__(self, swap: dict[Buffer, Buffer]) -> None:
        """Run every kernel once, with swap[b] in place of each captured buffer b it names."""
        # >>> exercise 09.graph #graph-execution
        for captured, places in self.places.items():
            new = swap.get(captured, captured)
            if new is not self.bound[captured]:
                for kernel, argument in places:
                    self.bind(kernel, argument, new)
                self.bound[captured] = new
        self.launch()
        # <<< exercise

    def bound_buffers(self, kernel: int) -> list[Buffer]:
        """The buffers kernel `kernel` runs on now (the output first)."""
        return [self.bound.get(b, b) for b in self.kernels[kernel].buffers]

    def bind(self, kernel: int, argument: int, buf: Buffer) -> None:
        """Make argument `argument` of kernel `kernel` be buf from the next launch on."""
        raise NotImplementedError

    def launch(self) -> None:
        """Run every kernel in order, on the buffers bound now; return when they are done (or
        queued, where a later read waits for them)."""
        raise NotImplementedError
