"""The CUDA device: NVRTC compiles the rendered CUDA C, the driver API loads and launches it.
Without a GPU, CUDAEMU compiles the same source with NVRTC (to prove it compiles) and runs it
on the CPU, as C++ against a small header that provides CUDA's built-ins and runs the grid."""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tinyfw.device import Buffer, Runtime
from tinyfw.renderer.base import launch_size, workgroup_of
from tinyfw.dtype import DType
from tinyfw.renderer.cuda_c import BITCAST_HELPER, BLOCK, CUDA, CUDA_PRELUDE
from tinyfw.runtime.joined import joined_source
from tinyfw.runtime.c_compiler import ClangStyleCompiler, find_compiler
from tinyfw.runtime.c_library import CPUProgram
from tinyfw.runtime.ops_numpy import NumpyAllocator

FIX_CUDA = ("install the NVIDIA driver (`nvidia-smi` must work) and `pip install -e '.[cuda]'`; "
            "without a GPU, the CUDAEMU device runs the same CUDA source on the CPU")
FIX_NVRTC = "install NVRTC: `pip install -e '.[cuda]'` (it brings nvidia-cuda-nvrtc)"
EMU_HEADER = Path(__file__).with_name("cuda_emu.h")


def _check(result: Any, what: str) -> Any:
    """Unpack a cuda-python (error, value...) tuple, raising on an error code."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise RuntimeError(f"{what} failed: {err}")
    return rest[0] if len(rest) == 1 else rest


def nvrtc_compile(source: str, arch: str = "compute_80") -> bytes:
    """CUDA C source to PTX with NVRTC (no GPU needed), or, for an arch like "sm_90", to a
    CUBIN (machine code for that GPU, which the driver loads without compiling). Fused
    multiply-adds stay off, as on the CPU. A failed compile raises a RuntimeError holding
    NVRTC's log and the source."""
    # >>> exercise 07.nvrtc #compiling-with-nvrtc
    try:
        from cuda.bindings import nvrtc
    except ImportError as error:
        raise RuntimeError(f"CUDA needs NVRTC ({error}): {FIX_NVRTC}") from None
    prog = _check(nvrtc.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], []),
                  "nvrtcCreateProgram")
    try:
        # NVRTC's defaults, -prec-div=true and -prec-sqrt=true, keep a float a / b (FDIV) and
        # sqrt correctly rounded: no --use_fast_math, which turns them into approximations
        opts = [f"--gpu-architecture={arch}".encode(), b"-default-device", b"--fmad=false"]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if int(err) != 0:
            size = _check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            text = log.rstrip(b"\0").decode(errors="replace")
            raise RuntimeError(f"NVRTC failed:\n{text}\n--- source ---\n{source}")
        if arch.startswith("sm_"):
            size = _check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
            code = b" " * size
            _check(nvrtc.nvrtcGetCUBIN(prog, code), "nvrtcGetCUBIN")
        else:
            size = _check(nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
            code = b" " * size
            _check(nvrtc.nvrtcGetPTX(prog, code), "nvrtcGetPTX")
        return code
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    # <<< exercise


def launch_dims(n: int) -> tuple[int, int]:
    """(blocks, threads per block) for n threads: BLOCK threads a block, enough blocks to
    cover n (the last one partly idle: the kernel's `if (gid >= n) return;`), at least one."""
    # >>> exercise 07.launch #launching-a-grid
    return max(-(-n // BLOCK), 1), BLOCK
    # <<< exercise


def kernel_args(pointers: list[int]) -> tuple[np.ndarray, list[np.ndarray]]:
    """cuLaunchKernel's kernelParams: an array holding, for each argument, the address of the
    argument's value; here each value is a device pointer (a 64-bit integer). Returns the
    array and the arrays it points into, which must stay alive until the launch."""
    # >>> exercise 07.launch #launching-a-grid
    values = [np.array([p], dtype=np.uint64) for p in pointers]
    return np.array([v.ctypes.data for v in values], dtype=np.uint64), values
    # <<< exercise


@functools.cache
def cuda_context() -> Any:
    """The CUDA driver's context on GPU 0, or a RuntimeError that says what is missing."""
    try:
        import cuda.bindings.driver as drv
    except ImportError as error:
        raise RuntimeError(f"CUDA needs cuda-bindings ({error}): {FIX_CUDA}") from None
    try:
        _check(drv.cuInit(0), "cuInit")
    except Exception as error:  # cuda.pathfinder's DynamicLibNotFoundError when no driver
        if isinstance(error, RuntimeError) and "failed" in str(error):
            raise RuntimeError(f"CUDA found no usable GPU ({error}): {FIX_CUDA}") from None
        raise RuntimeError(f"CUDA cannot load the NVIDIA driver ({type(error).__name__}): "
                           f"{FIX_CUDA}") from None
    device = _check(drv.cuDeviceGet(0), "cuDeviceGet")
    context = _check(drv.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
    _check(drv.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    return context


@functools.cache
def gpu_arch() -> str:
    """The GPU's own architecture, like "sm_90": kernels are compiled to its machine code, so
    the driver needs no PTX compiler of NVRTC's version (an older driver rejects newer PTX)."""
    import cuda.bindings.driver as drv
    cuda_context()
    device = _check(drv.cuDeviceGet(0), "cuDeviceGet")
    attribute = drv.CUdevice_attribute
    major = _check(drv.cuDeviceGetAttribute(
        attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), "cuDeviceGetAttribute")
    minor = _check(drv.cuDeviceGetAttribute(
        attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), "cuDeviceGetAttribute")
    return f"sm_{major}{minor}"


class CUDAAllocator:
    """GPU memory through the driver: cuMemAlloc, and copies to and from the host."""

    def alloc(self, size: int, dtype: DType) -> Any:
        import cuda.bindings.driver as drv
        _check(drv.cuCtxSetCurrent(cuda_context()), "cuCtxSetCurrent")
        return _check(drv.cuMemAlloc(max(size * dtype.itemsize, 1)), "cuMemAlloc")

    def copyin(self, dest: Any, src: np.ndarray) -> None:
        import cuda.bindings.driver as drv
        data = np.ascontiguousarray(src.reshape(-1))
        if data.size:
            _check(drv.cuMemcpyHtoD(dest, data.ctypes.data, data.nbytes), "cuMemcpyHtoD")

    def copyout(self, src: Any, size: int, dtype: DType) -> np.ndarray:
        import cuda.bindings.driver as drv
        out = np.empty(size, dtype=dtype.np)
        if size:
            _check(drv.cuMemcpyDtoH(out.ctypes.data, src, out.nbytes), "cuMemcpyDtoH")
        return out


class CUDAProgram:
    """A module (a CUBIN, or PTX the driver compiles) loaded by the driver; launched on a 1-D
    grid of 1-D blocks."""

    def __init__(self, name: str, binary: bytes):
        import cuda.bindings.driver as drv
        _check(drv.cuCtxSetCurrent(cuda_context()), "cuCtxSetCurrent")
        self.module = _check(drv.cuModuleLoadData(binary), "cuModuleLoadData")
        self.fn = _check(drv.cuModuleGetFunction(self.module, name.encode()), "cuModuleGetFunction")

    def __call__(self, buffers: list[Any], grid: int, block: int) -> None:
        import cuda.bindings.driver as drv
        args, _alive = kernel_args([int(b) for b in buffers])
        _check(drv.cuLaunchKernel(self.fn, grid, 1, 1, block, 1, 1, 0, 0, args.ctypes.data, 0),
               "cuLaunchKernel")
        _check(drv.cuCtxSynchronize(), "cuCtxSynchronize")


class NVRTCCompiler:
    """CUDA C source to a binary for one architecture, with NVRTC (nvrtc_compile)."""

    def __init__(self, arch: str = "compute_80"):
        self.arch = arch

    def compile(self, source: str) -> bytes:
        """A CUBIN for an arch like "sm_90", else PTX."""
        return nvrtc_compile(source, self.arch)


class CUDARuntime(Runtime):
    """The CUDA device on a machine with an NVIDIA GPU: kernels rendered as CUDA C, compiled by
    NVRTC for the GPU's own architecture, loaded and launched by the driver."""

    def __init__(self) -> None:
        cuda_context()
        super().__init__("CUDA", CUDAAllocator(), renderer=CUDA,
                         compiler=NVRTCCompiler(gpu_arch()), program=CUDAProgram)
        from tinyfw.runtime.graph_cuda import CUDAGraph  # (it imports this module)
        self.graph = CUDAGraph

    def run(self, program: CUDAProgram, item: Any, out: Buffer, inputs: list[Buffer]) -> None:
        program([out.ensure_allocated()] + [b.ensure_allocated() for b in inputs],
                *(workgroup_of(program) or launch_dims(launch_size(item))))


# --- running CUDA source on the CPU ---
KERNEL_NAME = re.compile(r'extern "C" __global__ void (\w+)\(')


def emulation_source(source: str) -> str:
    """The CUDA source, unchanged, after the emulation header, and a launcher per kernel it
    defines (TF_LAUNCHER in cuda_emu.h), which runs the grid: each block's threads run as real
    threads when the kernel synchronizes them."""
    launchers = "".join(f"TF_LAUNCHER({name})\n" for name in KERNEL_NAME.findall(source))
    return f'#include "{EMU_HEADER}"\n{source}\n{launchers}'


def nvrtc_many(sources: list[str]) -> list[bytes]:
    """nvrtc_compile of each source (one kernel each), all in one NVRTC run as one program
    (joined_source), whose PTX each gets: NVRTC's cost is mostly per run (bench/compile_cost.py).
    Each on its own where they cannot be joined, or where
    the joined program fails (each failure then names its own source)."""
    kernels = [(names[0], source) for source in sources
               if len(names := KERNEL_NAME.findall(source)) == 1]
    if len(sources) > 1 and len(kernels) == len(sources):
        joined = joined_source(kernels, CUDA_PRELUDE, BITCAST_HELPER,
                               'extern "C" __global__ void {}(')
        if joined is not None:
            try:
                return [nvrtc_compile(joined[0])] * len(sources)
            except RuntimeError:  # (one of them does not compile: below, it says which)
                pass
    return [nvrtc_compile(source) for source in sources]


# CUDA source run on the CPU is compiled as C++ (threads for __syncthreads), then cached and
# verified like the CPU device's kernels (tinyfw/runtime/c_compiler.py, disk_cache.py)
EMULATION_FLAGS = ["-O1", "-fPIC", "-shared", "-pthread", "-x", "c++"]


def find_cxx() -> str:
    """The C++ compiler for emulated CUDA: $CXX, else g++ beside gcc, else c++."""
    return os.getenv("CXX") or ("g++" if find_compiler() in ("cc", "gcc") else "c++")


@dataclass(frozen=True)
class EmulatedBinary:
    """What CUDAEMU makes of a CUDA source: NVRTC's PTX (the proof that it compiles for a GPU)
    and the library of the same source compiled for the CPU."""
    ptx: bytes
    library: Path
    threads: bool  # whether the kernel synchronizes threads (then they run as real threads)


class EmulatorCompiler:
    """CUDA C source compiled twice: by NVRTC, exactly as for a GPU, and as C++ for the CPU
    with the emulation header (cached on disk like the CPU device's kernels)."""

    def __init__(self) -> None:
        self.cxx = ClangStyleCompiler(EMULATION_FLAGS, find_cxx)
        self.flags = EMULATION_FLAGS

    def compile(self, source: str) -> EmulatedBinary:
        """PTX and a CPU library of the source."""
        return self.compile_many([source])[0]

    def compile_many(self, sources: list[str]) -> list[EmulatedBinary]:
        """compile() of each source, the CPU libraries of those not in the cache built together
        (ClangStyleCompiler.compile_many), and NVRTC's PTX of them made in one run (nvrtc_many)."""
        ptx = nvrtc_many(sources)
        # the header's hash in the source: an entry made with another header is not used
        header = hashlib.sha256(EMU_HEADER.read_bytes()).hexdigest()
        libraries = self.cxx.compile_many([f"// {EMU_HEADER.name} sha256 {header}\n"
                                           f"{emulation_source(source)}" for source in sources])
        return [EmulatedBinary(code, library, "__syncthreads" in source)
                for code, library, source in zip(ptx, libraries, sources)]


class EmulatedCUDAProgram:
    """A CUDA kernel compiled for the CPU (EmulatorCompiler), launched on a grid like a GPU's."""

    def __init__(self, name: str, binary: EmulatedBinary):
        self.threads = int(binary.threads)  # real threads only when they meet
        self.program = CPUProgram(f"tf_launch_{name}", binary.library)

    def __call__(self, buffers: list[np.ndarray], grid: int, block: int) -> None:
        args = (ctypes.c_void_p * len(buffers))(*[b.ctypes.data for b in buffers])
        self.program.call(args, ctypes.c_int(grid), ctypes.c_int(block),
                          ctypes.c_int(self.threads))


class CUDAEmulatorRuntime(Runtime):
    """CUDAEMU: every kernel is rendered as CUDA C and compiled by NVRTC, exactly as for a GPU;
    then the same source runs on the CPU through the emulation header."""

    def __init__(self) -> None:
        super().__init__("CUDAEMU", NumpyAllocator(), renderer=CUDA,
                         compiler=EmulatorCompiler(), program=EmulatedCUDAProgram)
        from tinyfw.runtime.graph_cuda_emu import CUDAEmulatorGraph  # (it imports this module)
        self.graph = CUDAEmulatorGraph

    def run(self, program: EmulatedCUDAProgram, item: Any, out: Buffer,
            inputs: list[Buffer]) -> None:
        arrays = [out.ensure_allocated()] + [b.ensure_allocated() if b.device == self.name
                                             else b.numpy() for b in inputs]
        program(arrays, *(workgroup_of(program) or launch_dims(launch_size(item))))
