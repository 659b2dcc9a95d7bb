"""From a scheduled kernel to a runnable program: the one pipeline every device goes through.

A device holds only its parts (tinyfw/device.py: an allocator, a renderer, a compiler, a program
class); this module calls them, in the order of PASSES. Each pass is a small function that fills
in one more field of a Build and says in its docstring what it establishes. DEBUG>=3 prints each
pass as it runs, with its time, from that same list (site/debug.md names every one, by test).

A program is kept under one key, made of what produced it: the AST and the kernel's name, the
optimizations applied, the lowering function, the renderer, the compiler and the program class
(each as its class, its functions and its settings). Swapping any of them in (another
renderer, other compiler flags) gives a new key, so a new program is built; nothing else
needs a hook, and the same kernel asked for twice is built once.
"""
from __future__ import annotations

import operator
import os
import sys
import time
import weakref
from dataclasses import dataclass, field
from types import FunctionType, MethodType
from typing import Any
from collections.abc import Callable

from tinyfw.codegen.emulate import emulate_dtypes
from tinyfw.codegen.fuse import fuse_multiply_adds
from tinyfw.codegen.heuristic import hand_coded_optimizations
from tinyfw.codegen.kernel import Kernel
from tinyfw.codegen import lowering
from tinyfw.codegen.lower_groups import lower_workgroups
from tinyfw.codegen.lower_opts import lower_optimized
from tinyfw.codegen.opt import apply_opts
from tinyfw.codegen.lower import Program, lower
from tinyfw.device import Device, Runtime
from tinyfw.dtype import DType
from tinyfw.engine.debug import debug_level, print_pass
from tinyfw.engine.guard import Guard, getenv, owners_of_code
from tinyfw.engine.schedule import ScheduleItem
from tinyfw.uop.ops import UOp

CODE = (FunctionType, staticmethod, classmethod, property)
FACTS = (str, int, float, bool, type(None))


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
    # the code identities of the device's parts, shared by the builds of one schedule (a
    # schedule's kernels are built with the same renderer, compilers and program class)
    identities: dict[Any, tuple[Any, ...]] = field(default_factory=dict)


# Programs built in this process, by key. A program stays callable for the process's life: one
# whose compiled code the device unloads meanwhile (CPU keeps only so many libraries loaded,
# tinyfw/runtime/c_library.py) loads it again itself when next called.
# At most MAX_PROGRAMS are kept (the oldest built goes first; a program a TinyJit or a kernel
# that ran holds stays usable): a process making new kernels all along must not grow forever.
cache: dict[tuple[Any, ...], CompiledKernel] = {}
built = 0  # programs built (loaded) in this process: a counter for tests and DEBUG
MAX_PROGRAMS = 4096


def beam_width() -> int:
    """$BEAM: the width of the search (0: no search, the hand-coded optimizations). The search
    (engine/beam.py) is imported only when it runs."""
    return int(getenv("BEAM", "0") or 0)


def code_identity(part: Any) -> tuple[Any, ...]:
    """What a part computes with: a function itself; else its class (or itself, a class), every
    function that class and its bases define, and the part's own simple settings (flags, an
    index type). A function swapped into the class changes it."""
    if part is None or isinstance(part, (FunctionType, MethodType)):
        return (part,)
    cls = part if isinstance(part, type) else type(part)
    functions = _functions_of(cls)(cls)
    settings: tuple[Any, ...] = ()
    if not isinstance(part, type):
        settings = tuple((name, setting) for name, value in vars(part).items()
                         if (setting := _setting(value)) is not None)
    return (cls, functions, settings)


_getters: dict[type, Callable[[type], tuple[Any, ...]]] = {}


def _functions_of(cls: type) -> Callable[[type], tuple[Any, ...]]:
    """A getter of the functions a class and its bases define, looked up by name each time (a
    key is made for every kernel run: the names are found once per class, the functions are
    read fresh)."""
    if cls not in _getters:
        names = list(dict.fromkeys(name for klass in cls.__mro__ if klass is not object
                                   for name, value in vars(klass).items()
                                   if isinstance(value, CODE)))
        getter = operator.attrgetter(*names) if names else (lambda _: ())
        _getters[cls] = getter if len(names) != 1 else (lambda c: (getattr(c, names[0]),))
    return _getters[cls]


def _setting(value: Any) -> Any:
    """value as part of a key if it is a simple setting (a flag list, a name, a function), else
    None: a part's caches and handles say nothing of what it makes."""
    if isinstance(value, FACTS) and value is not None:
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, FACTS) for v in value):
        return tuple(value)
    if isinstance(value, FunctionType):
        return value
    if isinstance(value, DType):  # a renderer's index type
        return value
    return None


# The kernel of each AST (and name), kept as long as the AST lives: a kernel run again (a
# TinyJit's replay, a training step) then costs no walk of its AST to find the key.
_kernels: weakref.WeakKeyDictionary[UOp, dict[str, Kernel]] = weakref.WeakKeyDictionary()


# The optimized kernel and its optimizations, per AST, kernel name and device.
Chosen = dict[tuple[Any, ...], tuple[Kernel, tuple[Any, ...]]]
_optimized: weakref.WeakKeyDictionary[UOp, Chosen] = weakref.WeakKeyDictionary()


# --- the passes, in order ---
def kernel_from_ast(build: Build) -> None:
    """build.kernel: the AST with its loops, one per axis of its full shape."""
    ast, name = build.item.ast, build.item.name
    assert ast is not None, "a copy has no kernel"
    kernels = _kernels.setdefault(ast, {})
    if name not in kernels:  # (a kernel is the same for the same AST: made once, kept with it)
        kernels[name] = Kernel.from_ast(ast, name)
    build.kernel = kernels[name]


def optimize(build: Build) -> None:
    """build.kernel as it will run and build.opts, its optimizations (chapter 11)."""
    # The device's hand-coded ones; with BEAM=n the fastest a search found (kept on disk);
    # none with NOOPT=1.
    assert build.kernel is not None
    if not optimizing():
        return
    width = beam_width()
    chosen = _optimized.setdefault(build.kernel.ast, {})
    key = (build.kernel.name, build.device.name, build.device.cores, width)
    if key not in chosen:  # (chosen once per AST and device, like the kernel itself)
        if width and build.device.renderer.compiles:  # (NUMPY compiles nothing)
            from tinyfw.engine.beam import searched_opts  # (imported only for a search)
            opts = searched_opts(build.kernel, build.item, build.device,
                                 lambda kernel, opts: _built(build.item, kernel, opts).runner)
        else:
            opts = hand_coded_optimizations(build.kernel, build.device.renderer,
                                            build.device.cores)
        chosen[key] = (apply_opts(build.kernel, opts), opts)
    build.kernel, build.opts = chosen[key]


def fusing() -> bool:
    """Whether optimized kernels get fused multiply-adds: not with FMA=0."""
    return getenv("FMA", "1") not in ("", "0")


def optimizing() -> bool:
    """Whether kernels get optimizations: not with NOOPT=1 (chapters 01 to 10 grade without)."""
    return getenv("NOOPT", "0") in ("", "0")


def _built(item: ScheduleItem, kernel: Kernel, opts: tuple[Any, ...]) -> CompiledKernel:
    """The program of the kernel with these optimizations (a BEAM candidate): the passes after
    optimize."""
    build = Build(item, Device[item.device], kernel, opts)
    for step in PASSES[PASSES.index(optimize) + 1:]:
        step(build)
        if build.result is not None:
            return build.result
    raise RuntimeError(f"the passes made no program of {item.name}")


def find_built(build: Build) -> None:
    """build.key from what makes the program; build.result if one was built under it."""
    # The key: the AST and name, the optimizations, the lowering, and the device's renderer,
    # compiler and program class (each as its class, functions and settings). When a program
    # is found, the passes below do not run.
    device, kernel = build.device, build.kernel
    assert kernel is not None
    parts = _parts(device, device.compiler_for(kernel), build.identities)
    build.key = (device.name, kernel.ast, kernel.name, build.opts, lower, lower_optimized,
                 lower_workgroups, fuse_multiply_adds, fusing(), emulate_dtypes, *parts)
    build.result = cache.get(build.key)


def lower_kernel(build: Build) -> None:
    """build.program: the kernel as a linear program of loops, loads, ALU steps, a store."""
    # codegen's one lowering path (tinyfw/codegen/lowering.py): chapter 05's loops, or the
    # steps the optimizations and the renderer's fields switch on (chapter 11)
    assert build.kernel is not None
    build.program = lowering.lower_kernel(build.kernel, build.device.renderer, build.opts)


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
    assert build.kernel is not None and build.program is not None and build.key is not None
    if build.program.workgroup is not None:  # its launch (device.workgroup_of)
        runner.workgroup = build.program.workgroup
    build.result = CompiledKernel(build.key, build.device.name, build.kernel, build.program,
                                  build.source, build.binary, runner, build.opts)
    cache[build.key] = build.result
    global built
    built += 1
    while len(cache) > MAX_PROGRAMS:
        _drop_oldest(cache)


Pass = Callable[[Build], None]
PASSES: tuple[Pass, ...] = (kernel_from_ast, optimize, find_built, lower_kernel,
                            fuse_multiply_add, emulate_types, render_source, compile_source,
                            load_program)


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
    compile_source and load_program done for all the kernels of a device at once. A kernel
    that got its program before, under the same setting (program_setting), gets it again
    without the passes."""
    results: list[CompiledKernel | None] = []
    builds: list[tuple[int, Build]] = []
    waiting: dict[str, list[Build]] = {}
    identities: dict[str, dict[Any, tuple[Any, ...]]] = {}  # per device
    stamps: dict[tuple[str, int], tuple[Any, ...]] = {}  # per device and compiler
    for item in items:
        if item.ast is None or 0 in item.output.shape:  # (a copy, or an empty output)
            results.append(None)
            continue
        if (found := _found_before(item, stamps)) is not None:
            results.append(found)
            continue
        device = Device[item.device]
        build = Build(item, device, identities=identities.setdefault(item.device, {}))
        builds.append((len(results), build))
        results.append(None)
        for step in PASSES[:PASSES.index(compile_source)]:
            step(build)
            if build.result is not None:
                break
        if build.result is None and all(b.key != build.key for b in waiting.get(item.device, [])):
            waiting.setdefault(item.device, []).append(build)
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
        # (a kernel twice in the schedule was built once: the second takes the first's program)
        assert build.key is not None
        program = results[index] = build.result or loaded.get(build.key) or cache[build.key]
        _remember(build, program, stamps)
    return results


def program_setting(device: Runtime) -> tuple[Any, ...]:
    """What a kernel's program depends on besides the kernel and the device's renderer,
    compiler and program class: NOOPT, BEAM and FMA, the device and its cores, PASSES and the
    passes' functions (all of find_built's key but the AST, the optimizations and the parts'
    code, and what chooses the optimizations)."""
    return (optimizing(), beam_width(), fusing(), device, device.name, device.cores, PASSES, lower,
            lower_optimized, lower_workgroups, fuse_multiply_adds, emulate_dtypes,
            hand_coded_optimizations, apply_opts)


def setting_stamp(device: Runtime, compiler: Any) -> tuple[Any, ...]:
    """What a kernel's program on device, made by compiler, depends on besides the kernel:
    program_setting, the compiler, the device's own code and parts, the code identities of its
    renderer, this compiler and its program class. While a guard of everything these are read
    from holds (os.environ, this module's namespace, each part's and those of its class and
    bases: guard.py), the tuple of the last time is returned; read anew, it is that same tuple
    again if equal. So a program remembered with its stamp is still right when the stamp `is`
    the one now."""
    key = (id(device), id(compiler))  # (both held in the stamp: their ids stay theirs)
    last = _stamps.get(key)
    if last is not None and last[0].holds():
        return last[1]
    guard = Guard([os.environ, sys.modules[__name__],
                   *owners_of_code(device, device.renderer, compiler, device.program)])
    stamp = (program_setting(device), compiler, code_identity(device),
             tuple(vars(device).values()), _parts(device, compiler, {}))
    if last is not None and _equal(last[1], stamp):
        stamp = last[1]
    _stamps[key] = (guard, stamp)
    return stamp


_stamps: dict[tuple[int, int], tuple[Guard, tuple[Any, ...]]] = {}


def _equal(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """a == b, where a comparison that fails (an array's) counts as unequal."""
    try:
        return bool(a == b)
    except Exception:
        return False


# The program each kernel (AST, name and device) got last, with its compiler and the
# setting_stamp it was found under. (An eager op or a training step runs the same kernels again
# and again: an identity check of the stamp is cheaper than the passes and find_built's key.
# The ASTs are held as the cache's keys hold them, until forget.)
Found = tuple[Any, tuple[Any, ...], CompiledKernel]
_found: dict[UOp, dict[tuple[str, str], Found]] = {}


def _parts(device: Runtime, compiler: Any,
           identities: dict[Any, tuple[Any, ...]]) -> tuple[Any, ...]:
    """The code identities of the device's renderer, this compiler and the program class (kept
    in identities for the schedule's other kernels)."""
    if (parts := identities.get(compiler)) is None:
        parts = (code_identity(device.renderer), code_identity(compiler),
                 code_identity(device.program))
        identities[compiler] = parts
    return parts


def _stamp_of(device: str, compiler: Any,
              stamps: dict[tuple[str, int], tuple[Any, ...]]) -> tuple[Any, ...]:
    """setting_stamp(Device[device], compiler), asked once per schedule (kept in stamps)."""
    if (stamp := stamps.get((device, id(compiler)))) is None:
        stamp = stamps[(device, id(compiler))] = setting_stamp(Device[device], compiler)
    return stamp


def _found_before(item: ScheduleItem,
                  stamps: dict[tuple[str, int], tuple[Any, ...]]) -> CompiledKernel | None:
    """The program item's kernel got last, if nothing it depends on changed since (its stamp is
    the one now; forget drops what is remembered with the programs)."""
    assert item.ast is not None
    if (programs := _found.get(item.ast)) is None:
        return None
    if (last := programs.get((item.name, item.device))) is None:
        return None
    compiler, stamp, program = last
    return program if _stamp_of(item.device, compiler, stamps) is stamp else None


def _remember(build: Build, program: CompiledKernel,
              stamps: dict[tuple[str, int], tuple[Any, ...]]) -> None:
    """Keep the program the build's kernel got, for _found_before."""
    item = build.item
    assert item.ast is not None
    compiler = build.device.compiler_for(program.kernel)
    _found.setdefault(item.ast, {})[(item.name, item.device)] = (
        compiler, _stamp_of(item.device, compiler, stamps), program)
    while len(_found) > MAX_PROGRAMS:
        _drop_oldest(_found)


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
    """Drop the programs built for a device (every device: None), so the next are built again."""
    for key in [k for k, p in cache.items() if device is None or p.device == device]:
        del cache[key]
    _found.clear()
