"""The CPU device's kernel cache and host copies: entries compiled in the cache directory itself
(whatever the temp dir), verified on every load and rebuilt when damaged, a bounded number of
libraries loaded at once, and host copies that do not multiply memory."""
from __future__ import annotations

import gc
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tinyfw import Tensor
from tinyfw.runtime import c_compiler, c_library
from tinyfw.runtime.c_compiler import ClangStyleCompiler
from tinyfw.runtime.c_library import CPUProgram

ROOT = Path(__file__).resolve().parents[2]

# One process computes x*k+1 on the CPU for x = 0..7 and prints the result as JSON.
AFFINE = """
import json, sys
import numpy as np
from tinyfw import Tensor
k = float(sys.argv[1])
print(json.dumps((Tensor(np.arange(8, dtype=np.float32), device="CPU") * k + 1).numpy().tolist()))
"""


def run_python(code: str, cache: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """Run code in a fresh interpreter (a damaged library may kill it) with its kernel cache in
    cache; env adds environment variables."""
    # (VARY_CONSTS=0: x * k for many k must be many kernels here, each constant inline)
    environ = {**os.environ, "TINYFW_CACHE": str(cache), "DEVICE": "CPU", "VARY_CONSTS": "0",
               **env}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT,
                          env=environ, capture_output=True, text=True, timeout=300, check=False)


def affine(cache: Path, k: float, **env: str) -> list[float]:
    """x*k+1 for x = 0..7, computed by a fresh process with its cache in cache."""
    done = run_python(AFFINE, cache, str(k), **env)
    assert done.returncode == 0, f"exit status {done.returncode}:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def expected(k: float) -> list[float]:
    """What affine(_, k) must give."""
    return (np.arange(8, dtype=np.float32) * np.float32(k) + 1).tolist()


def entries(cache: Path) -> dict[str, tuple[Path, Path]]:
    """The cache's entries: key -> (its library, its record)."""
    return {lib.stem: (lib, lib.with_suffix(".json"))
            for lib in sorted((cache / "kernels").glob("*.so"))}


def assert_sound(lib: Path, record: Path) -> None:
    """The entry's record is readable and names the library's exact bytes."""
    meta = json.loads(record.read_text())
    assert meta["sha256"] == hashlib.sha256(lib.read_bytes()).hexdigest()
    assert lib.stat().st_size > 0


# --- 1. the temp dir plays no part ---
def test_compiling_never_uses_the_temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel is compiled into a temporary file in the cache directory and renamed there, so a
    temp dir on another filesystem (or none at all) does not matter."""
    monkeypatch.setenv("TINYFW_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-temp-dir"))
    lib = ClangStyleCompiler().compile("void tf_cache_probe(float *out) { out[0] = 42.0f; }\n")
    out = np.zeros(1, np.float32)
    CPUProgram("tf_cache_probe", lib)(out)
    assert out[0] == 42.0
    assert not (tmp_path / "no-such-temp-dir").exists()
    leftovers = [p.name for p in lib.parent.iterdir() if p.suffix not in (".so", ".json")]
    assert leftovers == [], "temporary files left in the cache"


def test_a_temp_dir_on_another_filesystem(tmp_path: Path) -> None:
    """TMPDIR on tmpfs (/dev/shm) and the cache on disk: every CPU op used to fail with EXDEV
    (os.replace across devices)."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        pytest.skip("no writable /dev/shm")
    if shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("/dev/shm is on the same filesystem as the tests' tmp_path")
    with tempfile.TemporaryDirectory(dir=shm) as tmp:
        assert affine(tmp_path, 2.5, TMPDIR=tmp) == expected(2.5)
    assert len(entries(tmp_path)) == 1


# --- 2. damaged entries are rebuilt ---
Damage = Callable[[Path, Path, Path], None]  # (library, record, cache) -> None


def damage_truncate(lib: Path, record: Path, cache: Path) -> None:
    """Half the library (it used to die of SIGBUS when loaded)."""
    data = lib.read_bytes()
    lib.write_bytes(data[:len(data) // 2])


def damage_empty(lib: Path, record: Path, cache: Path) -> None:
    """An empty library (it used to fail on every run, forever)."""
    lib.write_bytes(b"")


def damage_swap(lib: Path, record: Path, cache: Path) -> None:
    """Another kernel's library and record under this kernel's name (x*5+1 used to run
    silently for x*3+1)."""
    other = cache.parent / "other-cache"
    assert affine(other, 5.0) == expected(5.0)
    ((other_lib, other_record),) = entries(other).values()
    lib.write_bytes(other_lib.read_bytes())
    record.write_bytes(other_record.read_bytes())


def damage_record(lib: Path, record: Path, cache: Path) -> None:
    """A record that is not JSON."""
    record.write_bytes(b"\x00garbage{")


def damage_library_only(lib: Path, record: Path, cache: Path) -> None:
    """Another kernel's library under this kernel's name, the record left as it was."""
    other = cache.parent / "other-cache"
    assert affine(other, 5.0) == expected(5.0)
    ((other_lib, _),) = entries(other).values()
    lib.write_bytes(other_lib.read_bytes())


def damage_no_record(lib: Path, record: Path, cache: Path) -> None:
    """A library with no record (an entry of the old cache layout)."""
    record.unlink()


@pytest.mark.parametrize("damage", [damage_truncate, damage_empty, damage_swap, damage_record,
                                    damage_library_only, damage_no_record],
                         ids=lambda f: f.__name__.removeprefix("damage_"))
def test_a_damaged_entry_is_rebuilt(tmp_path: Path, damage: Damage) -> None:
    """Each load checks the library's bytes against the record (SHA-256) and the record's source
    against the kernel's: a damaged entry is compiled again and replaced."""
    cache = tmp_path / "cache"
    assert affine(cache, 3.0) == expected(3.0)
    ((lib, record),) = entries(cache).values()
    damage(lib, record, cache)
    assert affine(cache, 3.0) == expected(3.0)
    assert list(entries(cache).values()) == [(lib, record)]
    assert_sound(lib, record)
    assert affine(cache, 3.0) == expected(3.0)  # and the rebuilt entry is used as it is


def test_a_sound_entry_is_used_without_compiling(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Verified, the entry is loaded as it is: no compiler needed, the files untouched."""
    monkeypatch.setenv("TINYFW_CACHE", str(tmp_path))
    source = "void tf_cache_seven(float *out) { out[0] = 7.0f; }\n"
    lib = ClangStyleCompiler().compile(source)
    stamps = (lib.stat().st_mtime_ns, lib.with_suffix(".json").stat().st_mtime_ns)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    monkeypatch.delenv("CC", raising=False)
    assert ClangStyleCompiler().compile(source) == lib
    out = np.zeros(1, np.float32)
    CPUProgram("tf_cache_seven", lib, source)(out)
    assert out[0] == 7.0
    assert (lib.stat().st_mtime_ns, lib.with_suffix(".json").stat().st_mtime_ns) == stamps


def test_a_program_damaged_after_loading_is_rebuilt_on_reload(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An evicted program reloads its library from the cache, verified again: damaged in the
    meantime, it is compiled again rather than loaded."""
    monkeypatch.setenv("TINYFW_CACHE", str(tmp_path))
    source = "void tf_cache_nine(float *out) { out[0] = 9.0f; }\n"
    program = CPUProgram("tf_cache_nine", ClangStyleCompiler().compile(source), source)
    program.unload()
    lib = program.path
    lib.write_bytes(lib.read_bytes()[:100])
    out = np.zeros(1, np.float32)
    program(out)
    assert out[0] == 9.0
    assert_sound(lib, lib.with_suffix(".json"))


# --- 3. a bounded number of libraries loaded ---
# Twelve kernels, t * k + i for distinct constants, run twice (the second time in reverse) with
# at most 4 libraries loaded. Run in a fresh process: a kernel loads a constant that is realized
# and alive elsewhere in the process (say a Tensor.zeros(16) an earlier test computed, kept by a
# reference cycle) instead of inlining it: t * 1.0 + 0.0 is then another kernel, with a third
# input. When the garbage collector freed such a tensor between this test's two rounds, that
# kernel was built both ways, and this test counted 13 programs in its cache (it depended on
# pytest's order and on when the collector ran). Another test may also have built one of these
# very kernels already, in its own cache. A fresh process has neither.
LRU = """
import json
import numpy as np
from tinyfw import Tensor
from tinyfw.engine import program as engine_program
from tinyfw.engine import realize
from tinyfw.runtime import c_library, disk_cache

c_library.MAX_LOADED_LIBRARIES = 4
cache = disk_cache.cache_dir()


def mapped_libraries():
    # the files of the cache this process has mapped (/proc/self/maps)
    with open("/proc/self/maps") as maps:
        return {line.split(maxsplit=5)[5].strip().removesuffix(" (deleted)") for line in maps
                if len(line.split(maxsplit=5)) == 6
                and line.split(maxsplit=5)[5].startswith(str(cache))}


x = np.arange(16, dtype=np.float32)
t = Tensor(x, device="CPU")
pairs = [(1.0 + i / 8, float(i)) for i in range(12)]  # distinct constants: distinct kernels
ran = [{}, {}]  # round -> pair -> the program that ran it
facts = {"wrong": [], "most_mapped": 0, "most_loaded": 0, "unloaded_before_round_2_call": 0}
for round_ in range(2):
    for k, i in (pairs if round_ == 0 else pairs[::-1]):
        y = t * k + i
        (item,) = realize.schedule(y.uop)
        program = engine_program.get_program(item)  # built in round 1, found in round 2
        if round_ == 1 and not program.runner.loaded:
            facts["unloaded_before_round_2_call"] += 1
        if not np.array_equal(y.numpy(), x * np.float32(k) + np.float32(i)):
            facts["wrong"].append([k, i])
        ran[round_][(k, i)] = program
        facts["most_mapped"] = max(facts["most_mapped"], len(mapped_libraries()))
        facts["most_loaded"] = max(facts["most_loaded"], c_library.loaded_libraries())
        del y, item  # (kept, y's value would be found computed in round 2: no kernel to run)
facts["programs"] = len({id(p) for p in ran[0].values()})
facts["built_in_the_cache"] = sum(p.runner.path.parent == cache for p in ran[0].values())
facts["same_in_round_2"] = sum(ran[1][pair] is ran[0][pair] for pair in pairs)
facts["programs_in_process"] = len([p for p in engine_program.cache.values()
                                    if p.device == "CPU"])
print(json.dumps(facts))
"""


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps")
def test_at_most_max_loaded_libraries_are_loaded(tmp_path: Path) -> None:
    """Every library stays mapped while loaded; a process used to run out of memory maps after
    ~13,000 kernels. At most MAX_LOADED_LIBRARIES are loaded; the least recently used is
    unloaded, and its program loads it again on its next call: the second round runs the very
    programs the first built, eight of them unloaded meanwhile, and none is built again."""
    done = run_python(LRU, tmp_path)
    assert done.returncode == 0, f"exit status {done.returncode}:\n{done.stderr[-3000:]}"
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts["wrong"] == [], "wrong values"
    assert facts["most_mapped"] <= 4 and facts["most_loaded"] <= 4, facts
    assert facts["programs"] == 12 and facts["built_in_the_cache"] == 12, \
        f"the 12 kernels should be 12 programs, built in the test's cache: {facts}"
    assert facts["same_in_round_2"] == 12, f"a program was built again: {facts}"
    assert facts["programs_in_process"] == 12, f"another program was built: {facts}"
    # round 2 runs round 1 backwards: its first 4 are the 4 still loaded; the other 8 load again
    assert facts["unloaded_before_round_2_call"] == 8, facts


def test_an_unloaded_program_loads_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Programs take turns in the loaded set; each call finds its function loaded."""
    gc.collect()  # (an earlier test's TinyJit graph, in a cycle, holds its kernels loaded)
    monkeypatch.setenv("TINYFW_CACHE", str(tmp_path))
    monkeypatch.setattr(c_library, "MAX_LOADED_LIBRARIES", 2)
    programs = []
    for k in range(5):
        source = f"void tf_lru_{k}(float *out) {{ out[0] = {k}.0f; }}\n"
        programs.append(CPUProgram(f"tf_lru_{k}", ClangStyleCompiler().compile(source), source))
    assert sum(p.loaded for p in programs) <= 2
    for _ in range(3):
        for k, program in enumerate(programs):
            out = np.zeros(1, np.float32)
            program(out)
            assert out[0] == k and program.loaded
            assert c_library.loaded_libraries() <= 2


# --- 5. host copies ---
MEMORY = """
import resource, sys
import numpy as np
from tinyfw import Tensor
def peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
n = int(sys.argv[1])
Tensor(np.ones(4, np.float32), device="CPU").numpy()  # everything imported
a = np.ones(n, np.float32)
before = peak()
t = Tensor(a, device="CPU")
made = peak()
r = t.numpy()
print((made - before) / a.nbytes, (peak() - before) / a.nbytes)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux")
def test_host_copies_do_not_multiply_memory(tmp_path: Path) -> None:
    """Tensor(array) then .numpy() needs the device buffer and the returned copy: peak memory
    grew by 3 arrays (Buffer.copyin's astype copied an array of the right dtype, numpy()
    copied twice)."""
    done = run_python(MEMORY, tmp_path, str(64 * 2**20 // 4))
    assert done.returncode == 0, done.stderr[-3000:]
    made, read = map(float, done.stdout.split())
    assert made < 1.2, f"Tensor(array) grew the peak by {made:.2f} arrays (the buffer: 1)"
    assert read < 2.2, f"Tensor(array).numpy() grew the peak by {read:.2f} arrays (2 needed)"


@pytest.mark.parametrize("device", ["CPU", "NUMPY"])
def test_numpy_returns_a_copy_of_its_own(device: str) -> None:
    """The array numpy() returns is the caller's: changing it leaves the tensor as it was, and
    the tensor does not alias the array it was made from."""
    source = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = Tensor(source, device=device)
    source[0, 0] = 100
    got = t.numpy()
    assert got.flags.writeable and got.shape == (2, 3)
    got[:] = -1
    np.testing.assert_array_equal(t.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal((t + 1).numpy(), np.arange(1, 7).reshape(2, 3))


def test_tensors_from_odd_arrays() -> None:
    """Arrays that are not contiguous, or of another dtype, are laid out and cast on the way in."""
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    for arr in (base[:, ::2], base.T, base[::-1], np.float64(3.5), base[:0]):
        t = Tensor(arr, device="CPU", dtype="float32")
        np.testing.assert_array_equal(t.numpy(), np.asarray(arr, np.float32))
        assert t.numpy().shape == np.shape(arr)
    np.testing.assert_array_equal(Tensor(base.T.astype(np.int32), device="CPU").numpy(), base.T)


def test_numpy_runs_no_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a realized tensor is a copy of its buffer: nothing is scheduled."""
    from tinyfw.engine import realize
    t = Tensor(np.ones(1000, np.float32), device="CPU")
    ran: list[object] = []
    monkeypatch.setattr(realize, "run_schedule", lambda items: ran.append(items))
    assert t.numpy().sum() == 1000 and ran == []


THREADS = """
import threading
import numpy as np
from tinyfw.runtime import c_library
from tinyfw.runtime.c_compiler import ClangStyleCompiler
from tinyfw.runtime.c_library import CPUProgram
c_library.MAX_LOADED_LIBRARIES = 2
programs = []
for k in range(6):  # a loop long enough to be under way while other threads load and unload
    source = (f"void tf_busy_{k}(float *out) {{ float a = 0; for (int i = 0; i < 20000; i++) "
              f"a += 1.0f; out[0] = a * 0 + {k}.0f; }}\\n")
    programs.append(CPUProgram(f"tf_busy_{k}", ClangStyleCompiler().compile(source), source))
bad = []
def work(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(300):
        k = int(rng.integers(6))
        out = np.zeros(1, np.float32)
        programs[k](out)
        if out[0] != k:
            bad.append((k, float(out[0])))
threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print(len(bad), c_library.loaded_libraries())
"""


def test_threads_calling_kernels_while_others_are_unloaded(tmp_path: Path) -> None:
    """A library is never unloaded while a call into it is under way (that would crash): four
    threads call six kernels at random with two loaded at a time."""
    done = run_python(THREADS, tmp_path)
    assert done.returncode == 0, f"exit status {done.returncode}:\n{done.stderr[-3000:]}"
    wrong, loaded = map(int, done.stdout.split())
    assert wrong == 0 and loaded <= 4  # past the limit only by calls under way at the end


# A process computes x*k+1 for k = 1..12 (twelve kernels) and prints the results as JSON.
AFFINES = """
import json
import numpy as np
from tinyfw import Tensor
x = Tensor(np.arange(8, dtype=np.float32), device="CPU")
print(json.dumps([(x * float(k) + 1).numpy().tolist() for k in range(1, 13)]))
"""


def test_two_processes_fill_one_cache_at_once(tmp_path: Path) -> None:
    """Two processes compiling the same kernels into one empty cache at the same time both get
    the right answers, and every entry they leave is sound."""
    environ = {**os.environ, "TINYFW_CACHE": str(tmp_path), "DEVICE": "CPU", "VARY_CONSTS": "0"}
    procs = [subprocess.Popen([sys.executable, "-c", AFFINES], cwd=ROOT, env=environ,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        assert json.loads(out.strip().splitlines()[-1]) == [expected(k) for k in range(1, 13)]
    found = entries(tmp_path)
    assert len(found) == 12
    for lib, record in found.values():
        assert_sound(lib, record)


# --- a schedule's new kernels, one compiler run ---
def kernel(name: str, body: str) -> str:
    """A C kernel as the CPU device's sources look: the prelude, then one function."""
    return f"#include <math.h>\nvoid {name}(float* restrict data0) {{ data0[0] = {body}; }}\n"


def test_new_kernels_are_compiled_in_one_run_each_entry_verified(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """Three new kernels, one compiler run; each has an entry of its own, found alone later, and
    one whose shared library is damaged is compiled again alone, with the right value."""
    monkeypatch.setenv("TINYFW_CACHE", str(tmp_path))
    runs: list[list[str]] = []
    original = subprocess.run

    def counting(cmd: list[str], *args: object, **kwargs: object) -> object:
        runs.append(cmd)
        return original(cmd, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(c_compiler.subprocess, "run", counting)
    compiler = ClangStyleCompiler()
    sources = [kernel("k_a", "1.0f"), kernel("k_b", "2.0f"), kernel("k_c", "sqrtf(9.0f)")]
    libs = compiler.compile_many(sources)
    assert len(runs) == 1 and len(set(libs)) == 3
    assert compiler.compile_many(sources) == libs and len(runs) == 1, "all found in the cache"
    libs[1].write_bytes(b"damaged")  # (the three entries share one file: all are damaged now)
    for name, lib, source, want in zip(["k_a", "k_b", "k_c"], libs, sources, [1, 2, 3]):
        out = np.zeros(1, np.float32)
        CPUProgram(name, lib, source, compiler)(out)
        assert out[0] == want
    assert len(runs) == 4, "each damaged entry compiled again on its own"


def test_kernels_that_define_the_same_name_go_to_different_runs() -> None:
    """Two kernels of one name (a schedule may hold two) and a threaded kernel, whose whole
    library is marked threaded, are never compiled into one library with another."""
    same = [kernel("E_4", "1.0f"), kernel("E_4", "2.0f"), kernel("r_4", "3.0f")]
    assert c_compiler.runs_together(same, ClangStyleCompiler.alone) == [[0, 2], [1]]
    threaded = "const int tf_threaded = 1;\nvoid t_4(float* data0, int tf_core, int tf_cores) {}"
    assert c_compiler.runs_together([threaded, same[0], same[2]], ClangStyleCompiler.alone) == \
        [[0], [1, 2]]
    cuda = ('#ifdef __CUDACC_RTC__\n__device__ float tf_h2f(unsigned short h) {}\n#endif\n'
            'extern "C" __global__ void E_8(float* data0) {}\n')
    assert c_compiler.defined_names(cuda) == {"E_8"}, "NVRTC's own helpers are not the CPU's"
    assert c_compiler.defined_names(threaded) == {"tf_threaded", "t_4"}
