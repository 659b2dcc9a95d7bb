"""The CPU device: C for every dtype and op compiles and agrees with the NUMPY reference; compiled
kernels are cached on disk; a missing or failing compiler says clearly what is wrong."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tinyfw import Device, Tensor, dtypes
from tinyfw.codegen.lower import Kernel, LOps, Program, lower
from tinyfw.dtype import DType
from tinyfw.renderer.cstyle import render, render_const
from tinyfw.engine.program import get_program
from tinyfw.runtime.c_compiler import ClangStyleCompiler
from tinyfw.runtime.c_library import CPUProgram
from tinyfw.runtime.ops_cpu import CPURuntime
from tinyfw.shape.symbolic import Var
from tinyfw.uop.ops import BINARY, UNARY, Ops, UOp

RNG = np.random.default_rng(5)
FLOAT_ONLY = {Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.RECIPROCAL, Ops.TRUNC, Ops.FDIV}
INT_AND_BOOL_ONLY = {Ops.AND, Ops.OR, Ops.XOR}


def sample(dtype: DType, n: int = 24) -> np.ndarray:
    """Values of dtype with the awkward ones in front: nan, inf, 0, the extremes."""
    if dtype.is_bool:
        return RNG.random(n) < 0.5
    if dtype.is_float:
        values = (RNG.standard_normal(n) * 4).astype(dtype.np)
        values[:5] = [np.nan, np.inf, -np.inf, 0.0, -2.5]
        return values
    info = np.iinfo(dtype.np)
    values = RNG.integers(max(info.min, -50), min(info.max, 50), n).astype(dtype.np)
    values[:4] = [0, info.min, info.max, 7]
    return values


def ops_for(dtype: DType) -> list[Ops]:
    """The elementwise ops that make sense on dtype."""
    ops = [op for op in sorted(UNARY | BINARY, key=lambda o: o.value) if op is not Ops.CAST]
    if not dtype.is_float:
        ops = [op for op in ops if op not in FLOAT_ONLY]
    else:
        ops = [op for op in ops if op not in INT_AND_BOOL_ONLY and op is not Ops.IDIV]
    if dtype.is_bool:
        ops = [op for op in ops if op not in (Ops.MOD, Ops.IDIV)]
    return ops + [Ops.WHERE]


def on_both(build: Callable[[str], UOp]) -> tuple[np.ndarray, np.ndarray]:
    """A graph realized on CPU and on NUMPY (built by build(device))."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return Tensor(build("CPU")).numpy(), Tensor(build("NUMPY")).numpy()


def agree(cpu: np.ndarray, ref: np.ndarray, what: str, rtol: float = 1e-6) -> None:
    """CPU and NUMPY give the same dtype, shape and values (nan where nan)."""
    assert cpu.dtype == ref.dtype and cpu.shape == ref.shape, \
        f"{what}: {cpu.dtype}{cpu.shape} on CPU, {ref.dtype}{ref.shape} on NUMPY"
    if cpu.dtype.kind == "f" or cpu.dtype == dtypes.bfloat16.np:
        np.testing.assert_allclose(cpu.astype(np.float64), ref.astype(np.float64), rtol=rtol,
                                   atol=1e-6, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(cpu, ref, err_msg=what)


@pytest.mark.parametrize("dtype", dtypes.all(), ids=lambda d: d.name)
def test_every_op_compiles_and_agrees(dtype: DType) -> None:
    """Each elementwise op on dtype becomes C that compiles and computes what numpy does."""
    for op in ops_for(dtype):
        arrays = [sample(dtypes.bool)] * (op is Ops.WHERE) + \
            [sample(dtype) for _ in range(1 if op in UNARY else 2)]
        out = dtypes.bool if op in (Ops.CMPLT, Ops.CMPNE) else dtype

        def build(device: str, op: Ops = op, arrays: list[np.ndarray] = arrays,
                  out: DType = out) -> UOp:
            return UOp(op, out, tuple(Tensor(a, device=device).uop for a in arrays))
        agree(*on_both(build), f"{op.name} on {dtype.name}", rtol=1e-3 if dtype.itemsize == 2
              else 1e-6)


@pytest.mark.parametrize("dtype", dtypes.all(), ids=lambda d: d.name)
def test_every_cast_and_reduce_compiles_and_agrees(dtype: DType) -> None:
    """Casts from dtype to every dtype, and sum and max over each axis, agree with numpy."""
    values = sample(dtype)
    if dtype.is_float:  # float -> int of nan, inf or out of range is undefined in C
        values = np.where(np.isfinite(values), values, 1.5).astype(dtype.np)
    for target in dtypes.all():
        fits = np.abs(values) if dtype.is_float and target.is_unsigned else values  # else UB
        agree(*on_both(lambda d, fits=fits, target=target: Tensor(fits, device=d).uop.cast(target)),
              f"cast {dtype.name} -> {target.name}")
    grid = sample(dtype).reshape(4, 6)
    for op in (Ops.ADD, Ops.MAX):
        for axes in [(0,), (1,), (0, 1)]:
            agree(*on_both(lambda d, op=op, axes=axes: Tensor(grid, device=d).uop.reduce(op, axes)),
                  f"{op.name} reduce over {axes} of {dtype.name}", rtol=1e-3)


PROGRAMS: dict[str, Callable[[Callable[..., Tensor]], Tensor]] = {
    "elementwise": lambda t: (t(3, 4) * 2 + 1).exp() / t(3, 4).abs().sqrt(),
    "broadcast": lambda t: t(3, 1) + t(4) * t(1, 4),
    "sum over rows": lambda t: t(5, 7).sum(0),
    "max over a middle axis": lambda t: t(2, 5, 3).max(1),
    "full sum": lambda t: t(4, 4).sum(),
    "matmul": lambda t: t(6, 5) @ t(5, 7),
    "batched matmul": lambda t: t(2, 3, 4) @ t(4, 2),
    "softmax": lambda t: t(4, 9).softmax(-1),
    "log_softmax": lambda t: t(3, 5).log_softmax(0),
    "pad": lambda t: t(3, 4).pad(((1, 2), (0, 3))) + 1,
    "shrink flip permute": lambda t: t(4, 5, 6)[1:3, ::-1].permute(2, 0, 1) * 3,
    "transpose reshape": lambda t: t(4, 6).T.reshape(3, 8) - 0.5,
    "cat": lambda t: Tensor.cat(t(2, 3), t(4, 3), dim=0).relu(),
    "where and compare": lambda t: (t(5, 5) > 0).where(t(5, 5), -t(5, 5) * 0.1),
    "int arithmetic": lambda t: ((t(4, 4) * 10).cast(dtypes.int32) // 3 % 5) + 2,
    "float16 sum": lambda t: t(8, 300).cast(dtypes.float16).sum(1),
    "mean and var": lambda t: t(6, 8).var(1) + t(6, 8).mean(0).sum(),
    "empty": lambda t: t(0, 3).sum(0) + 1,
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_cpu_and_numpy_agree(name: str) -> None:
    """A set of programs gives the same values on the compiled CPU device and the reference."""
    results = []
    for device in ("CPU", "NUMPY"):
        rng = np.random.default_rng(11)

        def make(*shape: int, device: str = device, rng: np.random.Generator = rng) -> Tensor:
            return Tensor(rng.standard_normal(shape).astype(np.float32), device=device)
        results.append(PROGRAMS[name](make).numpy())
    agree(results[0], results[1], name, rtol=1e-3 if name == "float16 sum" else 1e-5)


def test_gradients_agree() -> None:
    """A training step's gradients (a cross entropy through a small MLP) agree."""
    grads = []
    for device in ("CPU", "NUMPY"):
        rng = np.random.default_rng(3)
        x = Tensor(rng.standard_normal((8, 5)).astype(np.float32), device=device)
        w1 = Tensor(rng.standard_normal((5, 6)).astype(np.float32), device=device,
                    requires_grad=True)
        w2 = Tensor(rng.standard_normal((6, 3)).astype(np.float32), device=device,
                    requires_grad=True)
        labels = Tensor(rng.integers(0, 3, 8), device=device)
        (x @ w1).relu().matmul(w2).cross_entropy(labels).backward()
        grads.append([w1.grad.numpy(), w2.grad.numpy()])
    for got, want, name in zip(grads[0], grads[1], ("w1", "w2")):
        agree(got, want, f"gradient of {name}", rtol=1e-4)


def test_float16_sums_accumulate_in_float32() -> None:
    """4096 ones in float16 sum to 4096 (a float16 accumulator would stop at 2048)."""
    total = Tensor(np.ones(4096, np.float16)).sum().numpy()
    assert total.dtype == np.float16 and total == 4096


def test_int64_extremes_as_constants() -> None:
    """The smallest int64 is a C constant that compiles (a max starts from it)."""
    low = np.iinfo(np.int64).min
    values = np.array([low, low], np.int64)
    assert Tensor(values).max().numpy() == low
    assert render_const(low, dtypes.int64) == "(-9223372036854775807LL-1)"


def scale_program(factor: float) -> Program:
    """data0[i] = data1[i] * factor for i < 4, made by hand."""
    prog = Program("scale")
    out = prog.add(LOps.PARAM, dtypes.float32, (), (0, True))
    src = prog.add(LOps.PARAM, dtypes.float32, (), (1, False))
    prog.params = [out, src]
    i = Var("i", 0, 3)
    prog.add(LOps.LOOP, dtypes.int32, (), ("i", 4))
    load = prog.add(LOps.LOAD, dtypes.float32, (src,), (i, i.lt(4)))
    const = prog.add(LOps.CONST, dtypes.float32, (), factor)
    value = prog.add(LOps.ALU, dtypes.float32, (load, const), Ops.MUL)
    prog.add(LOps.STORE, dtypes.float32, (out, value), i)
    prog.add(LOps.ENDLOOP, dtypes.int32)
    return prog


def test_compiled_kernels_are_cached_on_disk(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The library is named by a hash of the source: compiling the same source again finds it
    (even with no compiler left), a different source gets a different file."""
    monkeypatch.setenv("TINYFW_CACHE", str(tmp_path))
    source = render(scale_program(3.0))
    first = ClangStyleCompiler().compile(source)
    assert first.parent == tmp_path / "kernels" and first.is_file()
    stamp = first.stat().st_mtime_ns
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    monkeypatch.delenv("CC", raising=False)
    again = ClangStyleCompiler().compile(source)
    assert again == first and again.stat().st_mtime_ns == stamp
    out = np.zeros(4, np.float32)
    CPUProgram("scale", again)(out, np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(out, [0, 3, 6, 9])


def test_a_missing_compiler_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without cc, gcc or clang on PATH (and no CC), compiling a new kernel explains the fix."""
    monkeypatch.setenv("TINYFW_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(RuntimeError, match="needs a C compiler.*install gcc"):
        ClangStyleCompiler().compile(render(scale_program(5.0)))


def test_a_compile_error_shows_the_message_and_the_source(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken C fails with the compiler's complaint and the source it was given."""
    monkeypatch.setenv("TINYFW_CACHE", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"(?s)compiler failed.*--- source ---.*oops"):
        ClangStyleCompiler().compile("void f(void) { oops }\n")


def test_a_kernel_is_lowered_and_compiled_once() -> None:
    """Running the same kernel again reuses its compiled program (no lowering, no rendering)."""
    assert isinstance(Device["CPU"], CPURuntime)
    x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    item = (x * 2 + 1).schedule()[0]
    first = get_program(item)
    assert get_program(item) is first
    assert first.source == render(lower(Kernel.from_ast(item.ast, item.name)))
    assert isinstance(first.runner, CPUProgram)


def test_a_multiply_add_rounds_twice_as_numpy_does() -> None:
    """x*y - z is rounded after the multiply, as numpy does: the compiler must not fuse it into
    an fma (rounded once), or the same value differs between kernels and devices."""
    a = np.float32(1 + 2.0 ** -12)
    x = np.full(64, a, np.float32)
    z = np.full(64, a * a, np.float32)  # a * a rounded to float32: exactly 1 + 2**-11
    got = (Tensor(x) * Tensor(x) - Tensor(z)).numpy()
    np.testing.assert_array_equal(got, x * x - z)   # all 0; an fma would give 2**-24


def test_flipped_reduce_is_not_miscompiled() -> None:
    """gcc 12.2's loop vectorizer summed a flipped 5x2 array to 80 (runtime/c_compiler.py)."""
    data = np.arange(1, 11, dtype=np.float32).reshape(5, 2)
    for axis in (None, 0, 1):
        got = Tensor(data).flip(1).sum(axis).numpy()
        np.testing.assert_array_equal(got, np.flip(data, 1).sum(axis))
