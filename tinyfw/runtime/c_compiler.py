"""The C compiler of the CPU device (and of the CUDA emulator): finding it, its flags for this
processor and toolchain, and ClangStyleCompiler, which compiles sources into the disk cache
(disk_cache.py), several new kernels in one compiler run."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path


from tinyfw.renderer.cstyle import X86_LEVELS, native_flags, target_march
from tinyfw.runtime.disk_cache import (entry, entry_size, link_or_copy, note_written, read_record,
                                       remove_file, verified_bytes, write_atomically)

# -ffp-contract=off: gcc would fuse a*b+c into one fma (rounded once) where it sees fit, so the same
# expression could give different bits in two kernels (and differ from the NUMPY reference).
# -fno-trapping-math: without it gcc 12 vectorizes no loop that calls truncf (roundps could
# raise an inexact flag), and exp, log and pow reduce their argument with one: exp of a
# (324, 1536) float32 tensor ran 5.6 ms scalar, 1.5 ms vectorized. No value changes (no
# reassociation, no other rounding, NaN and -0.0 kept); tinyfw never reads the flags.
# -march: this processor (native), or the x86-64 level CPU_MARCH names (renderer/cstyle.py).
BASE_FLAGS = ["-fPIC", "-shared", "-fno-math-errno", "-ffp-contract=off", "-fno-trapping-math"]

# gcc 12 (with binutils 2.40) on a processor with AVX512-FP16 stores a _Float16 chosen by a
# select (float16 relu, where, clamp) with a zero-masked vmovsh, which the assembler refuses
# ("unsupported masking for `vmovsh'"): the kernel failed to compile. Where the target has
# AVX512-FP16, a tiny kernel of that form is compiled once per process; if the toolchain
# cannot build it, kernels are compiled without AVX512-FP16 (float16 math then goes through
# float32, as on processors without it), so no op depends on an instruction it cannot assemble.
FLOAT16_PROBE = """void tf_probe(_Float16* restrict out, const _Float16* restrict in) {
  for (int i = 0; i < 7; i++) {
    _Float16 v = in[i];
    out[i] = v < (_Float16)0.0f ? (_Float16)0.0f : v;
  }
}
"""


def find_compiler() -> str:
    """The C compiler: $CC, else cc, gcc or clang, whichever is installed."""
    for name in (os.getenv("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    raise RuntimeError("the CPU device needs a C compiler: install gcc (apt-get install gcc) "
                       "or set CC")


def builds(compiler: str, flags: list[str], source: str) -> bool:
    """Whether compiler builds source into a shared library with flags."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [compiler, *flags, "-x", "c", "-", "-o", os.path.join(tmp, "probe.so")]
        try:
            done = subprocess.run(cmd, input=source.encode(), capture_output=True, check=False)
        except OSError:
            return False
        return done.returncode == 0


@functools.cache
def toolchain_flags(march: str) -> tuple[str, ...]:
    """Flags that keep kernels for -march=march within what the toolchain can build: () or
    ("-mno-avx512fp16",) (see FLOAT16_PROBE). Only probed where the target may have
    AVX512-FP16: this processor, if it has it, or a named processor (not an x86-64 level)."""
    if march in X86_LEVELS or (march == "native" and "avx512fp16" not in native_flags()):
        return ()
    try:
        compiler = find_compiler()
    except RuntimeError:
        return ()
    flags = ["-O2", f"-march={march}", *BASE_FLAGS]
    if builds(compiler, flags, FLOAT16_PROBE):
        return ()
    if builds(compiler, [*flags, "-mno-avx512fp16"], FLOAT16_PROBE):
        return ("-mno-avx512fp16",)
    return ()


def compile_flags(march: str) -> list[str]:
    """The flags kernels are compiled with for -march=march, language last."""
    return ["-O2", f"-march={march}", *BASE_FLAGS, *toolchain_flags(march), "-x", "c"]


# Kernels that reduce are compiled with no complete unrolling of loops, to avoid a bug of gcc
# 12.2's loop vectorizer. Given a float sum whose inner loop walks memory backwards (a flip:
# `acc += data1[ridx0*2 - ridx1 + 1]`), gcc unrolls the 2-iteration inner loop completely, sees
# the two adds as an in-order ("fold-left") reduction chain with the load permutation {1 0},
# adds both lanes of the vector load and keeps one of the scalar adds it replaced: every element
# but one per row is counted twice (80 instead of 55 for a flipped 5x2 sum, at -O2 and -O3, with
# or without -march=native; -fdump-tree-vect-details says "using an in-order (fold-left)
# reduction"). tinyfw's lowering emits one update of an accumulator per innermost iteration, so
# without gcc's unrolling no chain forms. -fno-tree-loop-vectorize avoids the bug too, but makes
# a 512x512 matmul about 5x slower (gcc vectorizes its output loop around the reduce).
# tests/numerics/test_movement_exhaustive.py runs every small movement chain, made contiguous
# and reduced over each axis, on every device: it finds 13 wrong values without this.
COMPILE_FLAGS = compile_flags(target_march())
REDUCE_FLAGS = [*COMPILE_FLAGS, "--param=max-completely-peel-times=1"]

def _build(source: str, compiler: str, flags: list[str], lib: Path, record: Path) -> bytes:
    """Compile source into the entry (lib, record), replacing whatever was there; the library's
    bytes. The compiler writes a temporary file in the cache directory itself, never in the
    temp dir: a rename from another filesystem fails (EXDEV), and only a rename within one
    directory is atomic. The record is written after the library, so a process that dies in
    between leaves an entry that fails its check and is built again."""
    lib.parent.mkdir(parents=True, exist_ok=True)  # (the cache may have been cleared meanwhile)
    fd, tmp = tempfile.mkstemp(dir=lib.parent, prefix=f".{lib.stem}.", suffix=".so")
    os.close(fd)
    try:
        cmd = [compiler, *flags, "-", "-o", tmp, "-lm"]
        done = subprocess.run(cmd, input=source.encode(), capture_output=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"the compiler failed ({compiler}):\n" + done.stderr.decode() +
                               "\n--- source ---\n" + source)
        data = Path(tmp).read_bytes()
        os.replace(tmp, lib)  # atomic: another process may build the same entry meanwhile
    except BaseException:
        remove_file(tmp)
        raise
    meta = {"source": source, "flags": flags, "compiler": cmd[0],
            "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    write_atomically(record, json.dumps(meta, indent=1).encode())
    return data


# --- several kernels, one compiler run ---
# Starting the C compiler costs most of a small kernel's compile (the driver, cc1, the
# assembler, the linker: bench/compile_cost.py measures it). So the kernels of a schedule that
# are not in the cache are compiled together, into one library that each one's entry holds (a
# hard link, or a copy where the cache's filesystem has none). They must not define the same
# name twice: the names a source defines at the start of a line (its kernel, a helper, a mark)
# are found by DEFINED, and two sources that share one go to different runs.
DEFINED = re.compile(r'^(?:const |static |extern "C" |__global__ |__device__ |template <[^>]*> )*'
                     r"[\w*]+[\s*]+(\w+)\s*[(=]", re.MULTILINE)
MAX_TOGETHER = 16  # kernels in one library at most (each program loads a copy of all of it)


# What only NVRTC compiles (CUDA source emulated on the CPU, ops_cuda.py): not the C++ compiler's
NVRTC_ONLY = re.compile(r"^#ifdef __CUDACC_RTC__$.*?^#endif$", re.MULTILINE | re.DOTALL)


def defined_names(source: str) -> set[str]:
    """The names source defines at the top level (see DEFINED)."""
    return set(DEFINED.findall(NVRTC_ONLY.sub("", source)))


def runs_together(sources: list[str], alone: Callable[[str], bool]) -> list[list[int]]:
    """The indices of sources, split into compiler runs: sources that define a name in common
    are in different runs, a source for which alone() holds is in a run of its own, and no run
    holds more than MAX_TOGETHER."""
    runs: list[tuple[list[int], set[str]]] = []
    for i, source in enumerate(sources):
        names = defined_names(source)
        free = None if alone(source) else next(
            (run for run in runs if len(run[0]) < MAX_TOGETHER and not run[1] & names
             and not alone(sources[run[0][0]])), None)
        if free is None:
            runs.append(([i], names))
        else:
            free[0].append(i)
            free[1].update(names)
    return [indices for indices, _ in runs]



def _build_together(sources: list[str], compiler: str, flags: list[str],
                    entries: list[tuple[Path, Path]]) -> bool:
    """Compile sources as one library, the library of each one's entry (lib, record); False
    (nothing written) if the compiler fails on them together, so that each is compiled alone
    and a failure names its own source."""
    directory = entries[0][0].parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".together.", suffix=".so")
    os.close(fd)
    try:
        cmd = [compiler, *flags, "-", "-o", tmp, "-lm"]
        done = subprocess.run(cmd, input="\n".join(sources).encode(), capture_output=True,
                              check=False)
        if done.returncode != 0:
            return False
        data = Path(tmp).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        for source, (lib, record) in zip(sources, entries):
            link_or_copy(Path(tmp), lib, data)
            meta = {"source": source, "flags": flags, "compiler": cmd[0], "sha256": digest,
                    "size": len(data), "kernels in the library": len(sources)}
            write_atomically(record, json.dumps(meta, indent=1).encode())
        return True
    finally:
        remove_file(tmp)


class ClangStyleCompiler:
    """Source in, shared library out; libraries are cached on disk, verified on every load.
    flags name the language too (`-x c`); compiler finds the compiler when one must run."""

    def __init__(self, flags: list[str] | None = None,
                 compiler: Callable[[], str] | None = None):
        self.flags = COMPILE_FLAGS if flags is None else flags
        self.find_compiler = compiler or find_compiler

    def compile(self, source: str) -> Path:
        """The path of a sound cache entry's library for source, compiled if need be."""
        return self.compile_many([source])[0]

    def compile_many(self, sources: list[str]) -> list[Path]:
        """compile() of each source, with the sources not in the cache compiled together where
        they can be (see runs_together): one compiler run for a schedule's new kernels."""
        entries = [entry(source, self.flags) for source in sources]
        missing: dict[Path, int] = {}  # (a source twice is compiled once)
        for i, (source, (lib, record)) in enumerate(zip(sources, entries)):
            if lib not in missing and verified_bytes(lib, record, source, self.flags) is None:
                missing[lib] = i
        todo = list(missing.values())
        for run in runs_together([sources[i] for i in todo], self.alone):
            chosen = [todo[j] for j in run]
            if len(chosen) < 2 or not _build_together(
                    [sources[i] for i in chosen], self.find_compiler(), self.flags,
                    [entries[i] for i in chosen]):
                for i in chosen:
                    _build(sources[i], self.find_compiler(), self.flags, *entries[i])
        if todo:
            note_written(entries[0][0].parent, sum(entry_size(*entries[i]) for i in todo))
        for lib, _ in entries:
            made_by[lib] = self
        return [lib for lib, _ in entries]

    @staticmethod
    def alone(source: str) -> bool:
        """Whether source must have a library of its own: a threaded kernel's library is marked
        so as a whole (tf_threaded, which CPUProgram looks for)."""
        return "tf_threaded" in source

    def library_bytes(self, lib: Path, source: str | None = None) -> bytes:
        """The checked bytes of the library at lib, an entry's (compiled from source: the
        record's if not given); a damaged entry is compiled again first."""
        record = lib.with_suffix(".json")
        if source is None:
            meta = read_record(record)
            if meta is None:
                raise RuntimeError(f"{lib} has no readable record ({record.name}), so it cannot "
                                   "be checked: compile the source again (ClangStyleCompiler"
                                   "().compile) or pass it to CPUProgram")
            source = meta["source"]
        data = verified_bytes(lib, record, source, self.flags)
        if data is None:
            data = _build(source, self.find_compiler(), self.flags, lib, record)
        return data


# The compiler that made each entry in this process (a library's name is a hash of its source and
# flags, so a path has one compiler's flags): a CPUProgram given only a library checks it with
# them when it loads it.
made_by: dict[Path, ClangStyleCompiler] = {}
