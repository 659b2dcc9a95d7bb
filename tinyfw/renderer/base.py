"""What a device's kernels can do: the `Renderer` base class, whose typed fields codegen and the
engine read instead of testing a device's name.

Every device has a renderer (tinyfw/device.py's `Runtime.renderer`): the CPU's C, OpenCL C, CUDA C
and WGSL are `CStyleLanguage`s (cstyle.py), and the NUMPY device's is `Renderer` itself with its
defaults changed, since it renders nothing. A field says one thing the device can do; each is
read where that thing is decided:

- `has_threads`, `has_workgroups`, `core_threads`, `vector_lanes`, `vector_bytes`: which
  optimizations a kernel gets (tinyfw/codegen/heuristic.py, the BEAM search) and which steps
  of the one lowering path (tinyfw/codegen/lowering.py) it goes through: a thread per output,
  work-groups with local memory, THREAD loops over the cores, UPCAST axes as SIMD vectors;
- `fuses`: which multiply-adds become one fused instruction (tinyfw/codegen/fuse.py);
- `max_buffers`: how far the scheduler fuses (tinyfw/engine/schedule.py, split_point);
- `has_float64`, `has_fmod`, `max_reduce`: what the front end computes another way (tensor.py);
- `has_int64_index`, `in_place`, `targets_host`: 64-bit indices, a kernel that writes a buffer
  it reads (TinyJit), DEBUG=2's share of this processor's peak.

A program is kept under a key that holds its renderer's class and fields (`identity`, read by
program.py), so a renderer whose fields differ builds its own programs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tinyfw.codegen.lower import Program
    from tinyfw.dtype import DType


class Renderer:
    """A device's kernels: what they can do (the fields, read instead of the device's name) and
    how a linear program becomes their source (`render`). The defaults are a device that runs
    one loop nest per kernel and has nothing else: no threads, no vectors, no limits."""

    name: str = ""                 # the device's kind, for messages ("CPU", "WEBGPU")
    # whether kernels are lowered, rendered and compiled; False: the device runs the kernel's
    # AST itself (NUMPY's interpreter), so nothing is optimized or rendered
    compiles: bool = True
    # a thread per output element (a GPU's): the global loops become the thread's index
    has_threads: bool = False
    # work-groups of threads that share local memory and wait at a barrier (chapter 11's LOCAL
    # and GROUP axes; tinyfw/codegen/lower_groups.py)
    has_workgroups: bool = False
    # THREAD loops, which share a kernel's outer loop out to the device's cores (the CPU's C)
    core_threads: bool = False
    # float32s in a vector register, for an UPCAST axis lowered as vectors (0: no vectors)
    vector_lanes: int = 0
    vector_bytes: bool = False     # vectors of int8 and uint8 too (lower_opts.bytes_in_lanes)
    has_float64: bool = True       # whether it computes in float64 (WGSL does not)
    has_fmod: bool = True          # whether it computes C's exact fmod of floats (WGSL not)
    # loop variables and indices of 64 bits, for a kernel whose indices pass 2**31 - 1
    has_int64_index: bool = True
    # whether a kernel may bind one buffer as its output and as an input (WebGPU refuses one
    # bound both writable and read-only)
    in_place: bool = True
    # whether its kernels are this machine's processor's code, so DEBUG=2 reads their speed
    # against this processor's peak (tinyfw/runtime/peak.py)
    targets_host: bool = False
    max_buffers: int | None = None  # the most buffers (output and inputs) a kernel binds
    max_reduce: int | None = None   # the longest reduce one thread may run (None: no limit)

    def render(self, prog: Program) -> str:
        """The program as the device's source."""
        raise NotImplementedError(f"{self.name or type(self).__name__} renders no source")

    def fuses(self, dtype: DType) -> bool:
        """Whether a multiply and an add of dtype become one fused multiply-add (fuse.py)."""
        return False

    def identity(self) -> tuple[Any, ...]:
        """The renderer as plain values, part of a program's key (tinyfw/engine/program.py):
        its class's qualified name and the value of each field above."""
        cls = type(self)
        return (f"{cls.__module__}.{cls.__qualname__}",
                *(getattr(self, name) for name in FIELDS))


FIELDS = tuple(Renderer.__annotations__)  # (the typed fields: what a device can do)


def launch_size(item: Any) -> int:
    """How many threads a GPU runs for a kernel: one per output element (known without
    lowering, so a launch costs no lowering)."""
    return max(item.output.numel, 1)


def workgroup_of(program: Any) -> tuple[int, int] | None:
    """(work-groups, threads in each) of a loaded program lowered with work-groups (chapter
    11), launched exactly so; None for one thread per output element (launch_size)."""
    return getattr(program, "workgroup", None)


class NotSupportedError(RuntimeError):
    """A dtype or an op that a target language or device cannot express."""
