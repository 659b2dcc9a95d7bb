"""From a scheduled kernel to a runnable program: the one pipeline every device goes through.

A device holds only its parts (tinyfw/device.py: an allocator, a renderer, a compiler, a program
class); this module calls them, in the order of PASSES. Each pass is a small function that fills
in one more field of a Build and says in its docstring what it establishes. DEBUG>=3 prints each
pass as it runs, with its time, from that same list (site/debug.md names every one, by test).

Programs are kept in one cache, under one key that one function makes (program_key): the
kernel's AST and name, the settings that decide its optimizations (NOOPT, BEAM's width) and
whether multiply-adds are fused (FMA), and the device's parts as plain values
(Runtime.identity: its name and cores, its renderer's class and fields, its compilers' classes
and flags, its program class). It is the first pass, so a kernel built before costs a key and
a dict lookup, no walk of its AST. Another renderer or other compiler
flags give another key, so a new program is built; the same kernel asked for twice is built
once. Code swapped into a part (a learner's exercise, a test's monkeypatch) changes none of
those values: whoever swaps it says so with tinyfw.engine.caches.forget_built(), which empties
this cache and every other the engine keeps (chapters/learner.py calls it at each swap).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from tinyfw.codegen.emulate import emulate_dtypes
from tinyfw.codegen.fuse import fuse_multiply_adds
from tinyfw.codegen.valid_indices import simplify_load_indices
from tinyfw.codegen.heuristic import hand_coded_optimizations
from tinyfw.codegen.kernel import Kernel
from tinyfw.codegen import lowering
from tinyfw.codegen.opt import apply_opts
from tinyfw.codegen.lower import Program
from tinyfw.device import Device, Runtime
from tinyfw.engine.debug import print_pass
from tinyfw.engine.schedule import ScheduleItem
from tinyfw.engine.settings import beam_width, debug_level, fusing, optimizing

@dataclass(eq=False)
class CompiledKernel:
    """A kernel's program on a device, with what the passes made on the way (DEBUG shows them)."""
    key: tuple[Any, ...]
    device: str
    kernel: Kernel
    program: Program        # the linear program lower() made
    source: str | None      # the renderer's source (None on a device without one: NUMPY)
    binary: Any             # the compiler's output (the source where nothing compiles it)
    runner: Any             # the binary loaded by the device's program class
    opts: tuple[Any, ...] = ()  # the optimizations applied (chapter 11)

    @property
    def name(self) -> str:
        return self.kernel.name


@dataclass
class Build:
    """What the passes know of one kernel so far: each pass fills in the next field."""
    item: ScheduleItem
    device: Runtime
    kernel: Kernel | None = None
    opts: tuple[Any, ...] = ()
    key: tuple[Any, ...] | None = None
    program: Program | None = None
    source: str | None = None
    binary: Any = None
    result: CompiledKernel | None = None  # set by the pass that finds or loads the program
    keep: bool = True  # whether the program is kept in the cache (not a BEAM candidate's)


# Programs built in this process, by key. A program stays callable for the process's life: one
# whose compiled code the device unloads meanwhile (CPU keeps only so many libraries loaded,
# tinyfw/runtime/c_library.py) loads it again itself when next called.
# At most MAX_PROGRAMS are kept (the oldest built goes first; a program a TinyJit or a kernel
# that ran holds stays usable): a process making new kernels all along must not grow forever.
cache: dict[tuple[Any, ...], CompiledKernel] = {}
built = 0  # programs built (loaded) in this process: a counter for tests and DEBUG
MAX_PROGRAMS = 4096


# --- the passes, in order ---
def find_built(build: Build) -> None:
    """build.key, program_key's; build.result if a program was built under it."""
    # When a program is found, the passes below do not run.
    build.key = program_key(build.item, build.device)
    build.result = cache.get(build.key)


def program_key(item: ScheduleItem, device: Runtime) -> tuple[Any, ...]:
    """The one key a program is kept under: what makes it, as plain values. The kernel's AST
    and name; what chooses its optimizations, which are the same for the same AST on the
    same device under the same settings: NOOPT and BEAM's width (a search's winner is kept on
    disk, engine/beam.py); whether multiply-adds are fused (FMA); and the device's parts
    (Runtime.identity: its name and cores, its renderer's fields, its compilers' flags...)."""
    if (parts := _identities.get(device.name)) is None:
        parts = _identities[device.name] = device.identity()
    return (parts, item.ast, item.name, optimizing(), beam_width(), fusing())


# Each device's parts as program_key gives them: read the first time, kept until forget() (a
# part swapped or set anew since is said with forget_built).
_identities: dict[str, tuple[Any, ...]] = {}


def kernel_from_ast(build: Build) -> None:
    """build.kernel: the AST with its loops, one per axis of its full shape."""
    assert build.item.ast is not None, "a copy has no kernel"
    build.kernel = Kernel.from_ast(build.item.ast, build.item.name)


def optimize(build: Build) -> None:
    """build.kernel as it will run and build.opts, its optimizations (chapter 11)."""
    # The device's hand-coded ones; with BEAM=n the fastest a search found (kept on disk);
    # none with NOOPT=1.
    assert build.kernel is not None
    if not optimizing():
        return
    if beam_width() and build.device.renderer.compiles:  # (NUMPY compiles nothing)
        from tinyfw.engine.beam import searched_opts  # (imported only for a search)
        opts = searched_opts(build.kernel, build.item, build.device,
                             lambda kernel, opts: _built(build.item, kernel, opts).runner)
    else:
        opts = hand_coded_optimizations(build.kernel, build.device.renderer, build.device.cores)
    build.kernel, build.opts = apply_opts(build.kernel, opts), opts


def _built(item: ScheduleItem, kernel: Kernel, opts: tuple[Any, ...]) -> CompiledKernel:
    """The program of the kernel with these optimizations (a BEAM candidate): the passes after
    optimize, its program kept in no cache (its key would be the winner's)."""
    build = Build(item, Device[item.device], kernel, opts, keep=False)
    for step in PASSES[PASSES.index(optimize) + 1:]:
        step(build)
        if build.result is not None:
            return build.result
    raise RuntimeError(f"the passes made no program of {item.name}")


def lower_kernel(build: Build) -> None:
    """build.program: the kernel as a linear program of loops, loads, ALU steps, a store."""
    # codegen's one lowering path (tinyfw/codegen/lowering.py): chapter 05's loops, or the
    # steps the optimizations and the renderer's fields switch on (chapter 11)
    assert build.kernel is not None
    build.program = lowering.lower_kernel(build.kernel, build.device.renderer, build.opts)


def simplify_indices(build: Build) -> None:
    """build.program with each load's index simplified where it is valid (valid_indices.py)."""
    assert build.program is not None
    build.program = simplify_load_indices(build.program)


def fuse_multiply_add(build: Build) -> None:
    """build.program with each product added to a sum as one fused multiply-add (fuse.py)."""
    # only in an optimized kernel, where the device's language fuses the type (the CPU's C
    # with x86's FMA or AVX-512: Renderer.fuses), and not with FMA=0
    assert build.program is not None
    if build.opts and fusing():
        build.program = fuse_multiply_adds(build.program, build.device.renderer.fuses)


def emulate_types(build: Build) -> None:
    """build.program in types every language has: bfloat16 as float32, rounded (emulate.py)."""
    assert build.program is not None
    build.program = emulate_dtypes(build.program)


def render_source(build: Build) -> None:
    """build.source: the program in the device's language (None where nothing compiles)."""
    # (NUMPY's renderer compiles nothing: its interpreter runs the kernel's AST)
    assert build.program is not None
    renderer = build.device.renderer
    build.source = renderer.render(build.program) if renderer.compiles else None


def compile_source(build: Build) -> None:
    """build.binary: the compiler's output (the source itself where there is none)."""
    # (CL and WEBGPU have no compiler of tinyfw's: their program classes build the source)
    assert build.kernel is not None
    compiler = build.device.compiler_for(build.kernel)
    build.binary = build.source if compiler is None else compiler.compile(build.source)


def load_program(build: Build) -> None:
    """build.result: the binary loaded by the device's program class, kept under its key."""
    assert build.kernel is not None and build.program is not None
    _keep(build, build.device.load(build.kernel.name, build.binary, len(build.program.params)))


def _keep(build: Build, runner: Any) -> None:
    """build.result: the loaded runner with what made it, kept in the cache under its key."""
    assert build.kernel is not None and build.program is not None
    if build.program.workgroup is not None:  # its launch (device.workgroup_of)
        runner.workgroup = build.program.workgroup
    build.result = CompiledKernel(build.key or (), build.device.name, build.kernel,
                                  build.program, build.source, build.binary, runner, build.opts)
    if not build.keep:
        return
    assert build.key is not None
    cache[build.key] = build.result
    global built
    built += 1
    while len(cache) > MAX_PROGRAMS:
        _drop_oldest(cache)


Pass = Callable[[Build], None]
PASSES: tuple[Pass, ...] = (find_built, kernel_from_ast, optimize, lower_kernel,
                            simplify_indices, fuse_multiply_add, emulate_types, render_source,
                            compile_source, load_program)


def get_program(item: ScheduleItem) -> CompiledKernel:
    """The runnable program of a scheduled kernel on its device: PASSES in order, until one
    finds or loads it (DEBUG>=3 prints each pass and its time)."""
    assert item.ast is not None, "a copy has no program"
    build = Build(item, Device[item.device])
    verbose = debug_level() >= 3
    for step in PASSES:
        start = time.perf_counter()
        step(build)
        if verbose:
            found = step is find_built and build.result is not None
            print_pass(step.__name__, time.perf_counter() - start,
                       "built before: the passes below are skipped" if found else "")
        if build.result is not None:
            return build.result
    raise RuntimeError(f"the passes made no program of {item.name}")


def build_programs(items: list[ScheduleItem]) -> list[CompiledKernel | None]:
    """The program of each of a schedule's kernels (None for a copy or an empty output): found,
    or built with the others of its device together (compile_together: one C compiler run for
    the CPU device's new kernels; Runtime.load_many: CL builds them all as one OpenCL program,
    paying the platform's cost per program once). PASSES as get_program runs them, with
    compile_source and load_program done for all the kernels of a device at once."""
    # (a program found costs its key and a lookup: no Build is made for it)
    results: list[CompiledKernel | None] = []
    builds: list[tuple[int, Build]] = []
    waiting: dict[str, list[Build]] = {}
    pending: dict[tuple[Any, ...], Build] = {}  # (by key: a kernel of every layer, built once)
    for item in items:
        if item.ast is None or 0 in item.output.shape:  # (a copy, or an empty output)
            results.append(None)
            continue
        device = Device[item.device]
        key = program_key(item, device)  # (find_built's, made here: nothing more for a hit)
        if (found := cache.get(key)) is not None:
            results.append(found)
            continue
        results.append(None)
        if (build := pending.get(key)) is None:
            build = pending[key] = Build(item, device, key=key)
            for step in PASSES[PASSES.index(find_built) + 1:PASSES.index(compile_source)]:
                step(build)
            waiting.setdefault(item.device, []).append(build)
        builds.append((len(results) - 1, build))
    for loading in waiting.values():
        compile_together(loading)
    loaded: dict[Any, CompiledKernel] = {}  # (the cache may have dropped one since: it is full)
    for device_name, loading in waiting.items():
        kernels = [(b.kernel.name, b.binary, len(b.program.params)) for b in loading
                   if b.kernel is not None and b.program is not None]
        for build, runner in zip(loading, Device[device_name].load_many(kernels)):
            _keep(build, runner)
            assert build.result is not None
            loaded[build.key] = build.result
    for index, build in builds:
        # (a kernel twice in the schedule was built once: both take its program)
        assert build.key is not None
        results[index] = build.result or loaded.get(build.key) or cache[build.key]
    return results


def _drop_oldest(table: dict) -> None:
    """Forget the entry put in table first (dicts keep their order of insertion)."""
    try:
        del table[next(iter(table))]
    except (KeyError, RuntimeError, StopIteration):  # (another thread changed it meanwhile)
        pass


def compile_together(builds: list[Build]) -> None:
    """compile_source of each build, those whose compiler compiles many sources in one go
    (compile_many: the CPU device's C compiler, CUDAEMU's) given to it together."""
    together: dict[int, tuple[Any, list[Build]]] = {}
    for build in builds:
        compiler = build.device.compiler_for(build.kernel)
        if compiler is None or not hasattr(compiler, "compile_many"):
            compile_source(build)
        else:
            together.setdefault(id(compiler), (compiler, []))[1].append(build)
    for compiler, group in together.values():
        for build, binary in zip(group, compiler.compile_many([b.source for b in group])):
            build.binary = binary


def linear_program(item: ScheduleItem) -> Program:
    """The linear program of a scheduled kernel, as the passes up to emulate_types make it
    (to read or render in another language; nothing is built or cached)."""
    build = Build(item, Device[item.device])
    for step in (kernel_from_ast, optimize, lower_kernel, emulate_types):
        step(build)
    assert build.program is not None
    return build.program


def forget(device: str | None = None) -> None:
    """Drop the programs built for a device (every device: None), so the next are built again,
    and the devices' parts as read for the key (read again at the next key)."""
    for key in [k for k, p in cache.items() if device is None or p.device == device]:
        del cache[key]
    _identities.clear()
