# Exercises of chapter 11, generated from tinyfw/runtime/ops_cpu.py by `python -m tools.generate`.
# Fill in each part marked TODO, then grade your work with:
#   python -m pytest chapters/11_speed
# generated text id: 2775711b2098a46b (lets tools.generate tell your edits apart)
"""The CPU device: kernels rendered as C, compiled by the system's C compiler, run with ctypes."""
from __future__ import annotations

import _ctypes
import ctypes
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from tinyfw.device import Buffer, Runtime
from tinyfw.renderer.cstyle import CPU_C, X86_LEVELS, native_flags, target_march
from tinyfw.uop.ops import find_reduce
from tinyfw.runtime.ops_numpy import NumpyAllocator

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
# tests/test_movement_exhaustive.py runs every small movement chain, made contiguous and reduced
# over each axis, on every device: it finds 13 wrong values without this.
COMPILE_FLAGS = compile_flags(target_march())
REDUCE_FLAGS = [*COMPILE_FLAGS, "--param=max-completely-peel-times=1"]


def cache_dir() -> Path:
    """Where compiled kernels are kept: $TINYFW_CACHE, else ~/.cache/tinyfw/kernels."""
    base = os.getenv("TINYFW_CACHE") or os.path.join(
        os.getenv("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "tinyfw")
    path = Path(base) / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


# How many kernel libraries one process keeps loaded at once. Each loaded library holds a few
# memory maps, and Linux allows a process about 65,530 (vm.max_map_count): with every library
# kept, a process failed to load any kernel after about 13,000 ("failed to map segment"). The
# least recently called library is unloaded past this many; its program loads it again when
# it is next called.
MAX_LOADED_LIBRARIES = 1000


# --- the cache on disk ---
# An entry is two files named by a hash of the source and flags: <key>.so, the library, and
# <key>.json, its record: the exact source and flags it was compiled from and the SHA-256 of the
# library's bytes. The name alone proves nothing (a file may be truncated by a full disk or a
# killed process, or replaced by hand), so every load reads the library, checks its bytes
# against the record and the record against the source wanted, and compiles the entry again if
# anything is off. A library is loaded only from bytes just checked (see _open_library).
def _entry(source: str, flags: list[str]) -> tuple[Path, Path]:
    """The library and record paths of the cache entry for source compiled with flags."""
    key = hashlib.sha256((source + " ".join(flags)).encode()).hexdigest()[:24]
    directory = cache_dir()
    return directory / f"{key}.so", directory / f"{key}.json"


def _read_record(record: Path) -> dict[str, Any] | None:
    """The record of an entry, or None if it is missing or not a record."""
    try:
        meta = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, unreadable, not UTF-8, not JSON
        return None
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k), t) for k, t in (
            ("source", str), ("flags", list), ("sha256", str))):
        return None
    return meta


def _verified_bytes(lib: Path, record: Path, source: str, flags: list[str]) -> bytes | None:
    """The library's bytes if its entry is sound: a record of this very source and these flags,
    and a library whose SHA-256 is the recorded one. None if anything is off."""
    meta = _read_record(record)
    if meta is None or meta["source"] != source or meta["flags"] != flags:
        return None
    try:
        data = lib.read_bytes()
    except OSError:
        return None
    if not data or hashlib.sha256(data).hexdigest() != meta["sha256"]:
        return None
    try:  # used now: the last to go when the cache is trimmed (its access time; the
        # modification time stays the build's)
        os.utime(lib, ns=(time.time_ns(), lib.stat().st_mtime_ns))
    except OSError:
        pass
    return data


# --- the size of the cache on disk ---
# A process that makes new kernels all the time (a number that changes in every kernel's
# source, a search trying variants) would fill the disk. Past $TINYFW_CACHE_MB megabytes (1024
# by default; 0: no limit) the entries used longest ago (a library's access time, which each
# verified load sets) are deleted until the cache is at 90% of the limit. Deleting is
# safe at any time: an entry that is missing or half deleted fails its check and is built again.
DEFAULT_CACHE_MB = 1024
_cache_bytes: dict[Path, int] = {}  # per cache directory: its size, as last seen plus writes


def cache_limit() -> int:
    """The most bytes the kernel cache on disk may hold ($TINYFW_CACHE_MB; 0: no limit)."""
    try:
        return int(float(os.getenv("TINYFW_CACHE_MB", DEFAULT_CACHE_MB)) * 2**20)
    except ValueError:
        return DEFAULT_CACHE_MB * 2**20


def _note_written(directory: Path, added: int) -> None:
    """added bytes were written into the cache at directory: trim it if it is over the limit
    (the directory is measured once per process, then its size followed)."""
    limit = cache_limit()
    if limit <= 0:
        return
    if directory not in _cache_bytes:
        _cache_bytes[directory] = _cache_size(directory)
    else:
        _cache_bytes[directory] += added
    if _cache_bytes[directory] > limit:
        _cache_bytes[directory] = _trim_cache(directory, int(limit * 0.9))


def _cache_files(directory: Path) -> list[tuple[float, int, Path]]:
    """(access time, size, path) of each library of the cache (not temporary files)."""
    found = []
    for path in directory.glob("*.so"):
        try:
            stat = path.stat()
        except OSError:  # (deleted meanwhile by another process)
            continue
        found.append((stat.st_atime, stat.st_size + _size(path.with_suffix(".json")), path))
    return found


def _cache_size(directory: Path) -> int:
    return sum(size for _, size, _ in _cache_files(directory))


def _trim_cache(directory: Path, target: int) -> int:
    """Delete the entries used longest ago until the cache holds at most target bytes; returns
    the bytes left."""
    files = sorted(_cache_files(directory))
    total = sum(size for _, size, _ in files)
    for _, size, lib in files:
        if total <= target:
            break
        _remove(lib.with_suffix(".json"))  # (the record first: a library alone fails its check)
        _remove(lib)
        total -= size
    return total


def _write_atomically(path: Path, data: bytes) -> None:
    """Write path whole or not at all: into a temporary file beside it, then renamed over it (a
    rename within one directory is atomic; readers see the old file or the new one)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def _entry_size(lib: Path, record: Path) -> int:
    """The bytes of a cache entry (0 for a file missing)."""
    return _size(lib) + _size(record)


def _size(path: Path) -> int:
    """The bytes of a file, 0 if it is missing (another process may delete it meanwhile)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _remove(path: str | Path) -> None:
    """Delete a file if it is there."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


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
        _remove(tmp)
        raise
    meta = {"source": source, "flags": flags, "compiler": cmd[0],
            "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    _write_atomically(record, json.dumps(meta, indent=1).encode())
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


def _link_or_copy(source: Path, dest: Path, data: bytes) -> None:
    """dest as the same file as source (a hard link), else a copy of its bytes (data), put in
    place atomically either way."""
    tmp = dest.with_name(f".{dest.stem}.{os.getpid()}.{threading.get_ident()}.link")
    try:
        _remove(tmp)
        os.link(source, tmp)
        os.replace(tmp, dest)
    except OSError:
        _remove(tmp)
        _write_atomically(dest, data)


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
            _link_or_copy(Path(tmp), lib, data)
            meta = {"source": source, "flags": flags, "compiler": cmd[0], "sha256": digest,
                    "size": len(data), "kernels in the library": len(sources)}
            _write_atomically(record, json.dumps(meta, indent=1).encode())
        return True
    finally:
        _remove(tmp)


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
        entries = [_entry(source, self.flags) for source in sources]
        missing: dict[Path, int] = {}  # (a source twice is compiled once)
        for i, (source, (lib, record)) in enumerate(zip(sources, entries)):
            if lib not in missing and _verified_bytes(lib, record, source, self.flags) is None:
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
            _note_written(entries[0][0].parent, sum(_entry_size(*entries[i]) for i in todo))
        for lib, _ in entries:
            _made_by[lib] = self
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
            meta = _read_record(record)
            if meta is None:
                raise RuntimeError(f"{lib} has no readable record ({record.name}), so it cannot "
                                   "be checked: compile the source again (ClangStyleCompiler"
                                   "().compile) or pass it to CPUProgram")
            source = meta["source"]
        data = _verified_bytes(lib, record, source, self.flags)
        if data is None:
            data = _build(source, self.find_compiler(), self.flags, lib, record)
        return data


# The compiler that made each entry in this process (a library's name is a hash of its source and
# flags, so a path has one compiler's flags): a CPUProgram given only a library checks it with
# them when it loads it.
_made_by: dict[Path, ClangStyleCompiler] = {}


# --- libraries loaded in this process ---
def _open_library(data: bytes, directory: Path) -> ctypes.CDLL:
    """Load a library from bytes just verified. They are written to a private file (a fresh
    name in the cache directory, deleted once loaded): dlopen maps a file, and the cache's own
    file could be truncated or replaced by another process between the check and the map."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".loaded-", suffix=".so")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return ctypes.CDLL(tmp)  # a unique name: dlopen never hands back another's handle
    finally:
        _remove(tmp)  # the mapping outlives the name


# Loaded programs, least recently called first. Guarded by _lock: threads call kernels at once.
# Reentrant: while a thread holds it (loading a library allocates), the garbage collector may
# run a device graph's finalizer on that thread, whose unhold takes it again (a plain Lock
# waited for itself there: a test run hung in test_jit_graph).
_loaded: OrderedDict[CPUProgram, None] = OrderedDict()
_lock = threading.RLock()


def address_of(buffer: Buffer) -> int:
    """The address of a buffer's memory (a numpy array on this device), kept on the buffer."""
    if buffer.address is None:
        memory = buffer.ensure_allocated()
        try:  # (cheaper than numpy's memory.ctypes.data, which makes an object each time)
            buffer.address = ctypes.addressof(ctypes.c_char.from_buffer(memory))
        except (TypeError, ValueError):  # (no byte to point at, or read-only memory)
            buffer.address = int(memory.ctypes.data)
    return buffer.address


def loaded_libraries() -> int:
    """How many kernel libraries this process has loaded now."""
    with _lock:
        return len(_loaded)


def _evict_beyond_limit(keep: CPUProgram) -> None:
    """Unload the least recently called libraries (not keep, none mid-call) past the limit."""
    excess = len(_loaded) - max(MAX_LOADED_LIBRARIES, 1)
    for program in list(_loaded):
        if excess <= 0:
            break
        if program is not keep and program.running == 0:
            program._close()
            excess -= 1


class CPUProgram:
    """A compiled kernel: a function in a shared library, called with the buffers' addresses.
    The library is loaded while the program is among the MAX_LOADED_LIBRARIES most recently
    called; unloaded, it is loaded again (its entry verified again) by the next call."""

    def __init__(self, name: str, lib_path: Path | str, source: str | None = None,
                 compiler: ClangStyleCompiler | None = None):
        self.name, self.path, self.source = name, Path(lib_path), source
        # the flags it was compiled with: the compiler's that made it, if it was made here
        self.compiler = compiler or _made_by.get(self.path) or ClangStyleCompiler()
        self.lib: ctypes.CDLL | None = None
        self.fn: Any = None    # the kernel's function; None while the library is unloaded
        self.running = 0       # calls under way (in any thread): never unloaded meanwhile
        self.threaded = False  # takes (core, cores) after the buffers: run on every core
        self._acquire()  # load now: a missing function fails here, not at the first call
        self._release()

    def __repr__(self) -> str:
        """The kernel's name, its library and whether it is loaded."""
        return f"<CPUProgram {self.name} {self.path.name} loaded={self.loaded}>"

    @property
    def loaded(self) -> bool:
        """Whether the library is loaded now."""
        return self.fn is not None

    def __call__(self, *buffers: np.ndarray) -> None:
        """Run the kernel on the buffers (the output first), loading its library if need be."""
        self.call(*[ctypes.c_void_p(b.ctypes.data) for b in buffers])

    def call(self, *args: Any) -> None:
        """Call the kernel's function with these ctypes arguments, loading it if need be."""
        self._call(args, typed=False)

    def call_pointers(self, *addresses: int) -> None:
        """Call the kernel's function with the buffers' addresses (Python ints), loading it if
        need be. (Its parameters are typed as pointers at the first such call: ctypes converts
        them in C, faster than a c_void_p made for each.)"""
        self._call(addresses, typed=True)

    def _call(self, args: tuple[Any, ...], typed: bool) -> None:
        with _lock:  # (_acquire's first step, written out: most calls find it loaded)
            if (fn := self.fn) is not None:
                _loaded.move_to_end(self)
                self.running += 1
        if fn is None:
            fn = self._acquire()
        try:
            if typed and fn.argtypes is None:
                fn.argtypes = [ctypes.c_void_p] * len(args)
            fn(*args)
        finally:
            self._release()

    def hold(self) -> None:
        """Keep the library loaded until unhold: a device graph calls the function by its
        address (tinyfw/runtime/graph_cpu.py)."""
        self._acquire()

    def unhold(self) -> None:
        """The hold is over."""
        self._release()

    def address(self) -> int:
        """The address of the kernel's function (held: see hold)."""
        assert self.running > 0 and self.fn is not None, "hold() the program first"
        return int(ctypes.cast(self.fn, ctypes.c_void_p).value or 0)

    def unload(self) -> None:
        """Unload the library now (the next call loads it again)."""
        with _lock:
            if self.running == 0:
                self._close()

    def _acquire(self) -> Any:
        """The kernel's function, loaded if need be, marked in use until _release: another
        thread's load cannot unload it mid-call (calling into an unloaded library crashes)."""
        with _lock:
            if self.fn is not None:
                _loaded.move_to_end(self)
                self.running += 1
                return self.fn
        data = self.compiler.library_bytes(self.path, self.source)  # may compile: unlocked
        with _lock:
            if self.fn is None:  # (unless another thread loaded it meanwhile)
                lib = _open_library(data, self.path.parent)
                try:
                    fn = getattr(lib, self.name)
                except AttributeError:
                    _dlclose(lib)
                    raise
                fn.restype = None
                self.lib, self.fn = lib, fn
                self.threaded = hasattr(lib, "tf_threaded")  # (ThreadedC's mark)
                _loaded[self] = None
            _loaded.move_to_end(self)
            self.running += 1
            _evict_beyond_limit(keep=self)
            return self.fn

    def _release(self) -> None:
        """The call that _acquire allowed is done."""
        with _lock:
            self.running -= 1

    def _close(self) -> None:
        """Unload the library (with _lock held, no call under way)."""
        if self.lib is not None:
            lib, self.lib, self.fn = self.lib, None, None
            _loaded.pop(self, None)
            _dlclose(lib)


def _dlclose(lib: ctypes.CDLL) -> None:
    """Unload a library ctypes loaded (ctypes itself never does). Its functions must not be
    called again: their code is no longer mapped."""
    _ctypes.dlclose(lib._handle)


class CPURuntime(Runtime):
    """The compiled CPU device: memory is numpy arrays; kernels are rendered as C, compiled by
    the system's C compiler (cached on disk) and called through ctypes."""

    def __init__(self) -> None:
        super().__init__("CPU", NumpyAllocator(), renderer=CPU_C, compiler=ClangStyleCompiler(),
                         program=CPUProgram)
        self.reduce_compiler = ClangStyleCompiler(REDUCE_FLAGS)  # see REDUCE_FLAGS: gcc's bug
        self.cores = cores()
        from tinyfw.runtime.graph_cpu import CPUGraph  # (it imports this module)
        self.graph = CPUGraph

    def compiler_for(self, kernel: Any) -> ClangStyleCompiler:
        """Kernels with a reduce loop are compiled with REDUCE_FLAGS (gcc 12's vectorizer)."""
        reduces = find_reduce(kernel.ast) is not None
        return self.reduce_compiler if reduces else self.compiler

    def run(self, program: CPUProgram, item: Any, out: Buffer, inputs: list[Buffer]) -> None:
        # an input on another device is read through a host view: no copy where its memory is
        # a numpy array already (NUMPY), a host copy otherwise
        if not program.threaded and _all_on(out.device, inputs):
            program.call_pointers(address_of(out), *[address_of(b) for b in inputs])
            return
        arrays = [out.ensure_allocated()] + [b.ensure_allocated() if b.device == out.device
                                             else b.host_view() for b in inputs]
        if not program.threaded:
            program(*arrays)
            return
        from tinyfw.runtime import cpu_workers  # (it imports this module)
        if workers_enabled() and len(arrays) <= cpu_workers.MAX_BUFFERS:
            cpu_workers.run_parts(program, arrays, cores())  # (C threads: cpu_workers.py)
            return
        # TODO 11.threads: write this part. The chapter explains it:
        #   chapters/11_speed/README.md#threads
        raise NotImplementedError("not done yet: 11.threads")


def _all_on(device: str, buffers: list[Buffer]) -> bool:
    """Whether every buffer is on device."""
    for buffer in buffers:
        if buffer.device != device:
            return False
    return True


def cores() -> int:
    """How many cores this process may run on ($TINYFW_CORES caps it)."""
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)
    return max(1, min(available, int(os.getenv("TINYFW_CORES", available))))


def workers_enabled() -> bool:
    """Whether threaded kernels run their parts on the C workers (cpu_workers.py; CPU_WORKERS,
    default 1), else on pool()'s Python threads (chapter 11's 11.threads)."""
    return os.getenv("CPU_WORKERS", "1") not in ("", "0")


@functools.cache
def pool() -> ThreadPoolExecutor:
    """The threads that run the other cores' parts of a threaded kernel (ctypes lets go of
    Python's lock during the call, so they run at once)."""
    return ThreadPoolExecutor(max_workers=max(cores() - 1, 1), thread_name_prefix="tinyfw-core")
