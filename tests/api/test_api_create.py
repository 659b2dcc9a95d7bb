"""Creation functions (empty, linspace, meshgrid, kaiming_normal, arange, eye, full, *_like)
and Tensor.realize(*tensors) against PyTorch: values, dtypes, shapes and exceptions."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
import torch

from tests.conftest import UNSUPPORTED_DTYPES
from tests.helpers import TORCH_DTYPES, same_dtype
from tinyfw import DType, Tensor, dtypes
from tinyfw.device import Buffer, Device
from tinyfw.engine import realize
from tinyfw.engine.schedule import ScheduleItem
from tinyfw.mixin.core import index_dtype
from tinyfw.renderer.base import NotSupportedError
from tinyfw.uop.ops import Ops

# On a backend device only the distinct cases of each parametrized test run (the device
# subset, tests/conftest.py); CPU and NUMPY run them all.
pytestmark = pytest.mark.device_subset


@contextmanager
def made_or_refused(*needed: DType) -> Iterator[None]:
    """Run a block that makes values of dtypes the device may lack. arange and linspace make
    theirs on the host (no kernel), so such a device may hold and return them; where it refuses
    instead, it must be with NotSupportedError, and the test is skipped saying so."""
    try:
        yield
    except NotSupportedError as error:
        lacking = UNSUPPORTED_DTYPES.get(Device.DEFAULT, frozenset())
        if not any(d in lacking and d.name in str(error) for d in needed):
            raise
        pytest.skip(f"not supported on {Device.DEFAULT}: {error}")


def same_error(torch_fn: Callable[[], Any], tinyfw_fn: Callable[[], Any]) -> BaseException:
    """Both raise, the same exception type; returns tinyfw's exception."""
    __tracebackhide__ = True
    with pytest.raises(Exception) as t_err:  # noqa: PT011 - any type, compared below
        torch_fn()
    with pytest.raises(Exception) as f_err:  # noqa: PT011
        out = tinyfw_fn()
        for o in out if isinstance(out, tuple) else (out,):
            o.numpy()
    assert type(f_err.value) is type(t_err.value), \
        f"tinyfw raised {f_err.value!r}, torch {t_err.value!r}"
    return f_err.value


# --- empty ---
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (2, 0, 4)], ids=str)
def test_empty_shape_dtype(shape: tuple[int, ...]) -> None:
    """empty makes the shape in the default float (or the dtype asked), like torch.empty."""
    t, ref = Tensor.empty(*shape), torch.empty(shape)
    assert t.shape == tuple(ref.shape) and same_dtype(t.dtype, ref.dtype)
    assert Tensor.empty(shape).shape == shape  # a tuple as well as separate ints
    assert Tensor.empty(*shape, dtype=dtypes.int32).dtype == dtypes.int32
    assert t.numpy().shape == shape  # it can be read (the values are whatever the memory held)
    filled = Tensor.empty(*shape).assign(Tensor.full(shape, 2.5))
    np.testing.assert_array_equal(filled.numpy(), np.full(shape, 2.5, np.float32))


def test_empty_like() -> None:
    """empty_like keeps shape, dtype and device unless told another dtype."""
    x = Tensor([[1, 2, 3]])
    assert x.empty_like().shape == (1, 3) and x.empty_like().dtype == x.dtype
    assert x.empty_like().device == x.device
    assert x.empty_like(dtype=dtypes.float32).dtype == dtypes.float32


# --- negative and non-int sizes ---
@pytest.mark.parametrize("make", [
    lambda m: m.empty(2, -1), lambda m: m.zeros(-3), lambda m: m.ones(1, -2),
    lambda m: m.full((-2,), 1.0), lambda m: m.eye(-1), lambda m: m.eye(2, -1),
    lambda m: m.rand(-1), lambda m: m.randn(3, -4), lambda m: m.empty(2.5),
], ids=["empty", "zeros", "ones", "full", "eye_n", "eye_m", "rand", "randn", "empty_float"])
def test_bad_sizes_raise_torchs_error(make: Callable[[Any], Any]) -> None:
    """Negative sizes raise RuntimeError naming the size, a float size TypeError, as in torch."""
    err = same_error(lambda: make(torch), lambda: make(Tensor))
    if isinstance(err, RuntimeError):
        assert "-" in str(err)


# --- arange ---
@pytest.mark.parametrize("args", [(5,), (2, 7), (7, 2, -1), (0, 10, 3), (-3, 3), (1.5,),
                                  (0, 1, 0.25), (5, 1, -1.5), (0,), (3, 3), (0.1, 1.0, 0.1),
                                  (-1.0, 1.0, 0.3), (10, 0, -3)], ids=str)
def test_arange_values_and_default_dtype(args: tuple) -> None:
    """Int arguments give tinyfw's default int (torch's int64), any float the default float."""
    t, ref = Tensor.arange(*args), torch.arange(*args)
    assert same_dtype(t.dtype, ref.dtype), (t.dtype, ref.dtype)
    expect = dtypes.default_float if ref.is_floating_point() else dtypes.default_int
    assert t.dtype == expect and t.shape == tuple(ref.shape)
    np.testing.assert_array_equal(t.numpy(), ref.numpy())


def test_arange_dtype_given_and_int64_when_int32_cannot_hold_it() -> None:
    """dtype= is kept; a range past int32 takes int64 rather than wrapping."""
    assert Tensor.arange(5, dtype=dtypes.float32).dtype == dtypes.float32
    for args in ((0, 2.5, 0.5), (0.5, 5.5, 1.5), (-2.7, 5.5, 1.5), (1.2, 2, 0.1)):
        np.testing.assert_array_equal(Tensor.arange(*args, dtype=dtypes.int32).numpy(),
                                      torch.arange(*args, dtype=torch.int32).numpy())
    with made_or_refused(dtypes.int64):
        t = Tensor.arange(2**31 - 2, 2**31 + 2)
        assert t.dtype == dtypes.int64
        np.testing.assert_array_equal(t.numpy(), torch.arange(2**31 - 2, 2**31 + 2).numpy())


@pytest.mark.parametrize("args", [(0, 10, 0), (0, 5, -1), (5, 0, 1), (math.inf,),
                                  (math.nan,), (0, math.inf, 1.0)], ids=str)
def test_arange_bad_ranges(args: tuple) -> None:
    """A zero step, a step of the wrong sign or an infinite range: torch's RuntimeError."""
    same_error(lambda: torch.arange(*args), lambda: Tensor.arange(*args))


# --- linspace ---
LINSPACES = [(0, 1, 5), (0, 10, 1), (0, 10, 0), (-3.7, 10, 7), (0, 1, 100), (-1.3, 7.9, 1001),
             (1e-3, 3.14159, 37), (5, -5, 11), (-100, 100, 999), (2, 2, 4), (1e6, 1e6 + 1, 77)]


@pytest.mark.parametrize("args", LINSPACES, ids=str)
@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float16, dtypes.float64], ids=str)
def test_linspace_floats_within_one_ulp_of_torch(args: tuple, dtype: DType) -> None:
    """torch's formula (start + i * step in the first half, stop - (steps - 1 - i) * step in
    the second); torch's vectorized loop may round a value once more: at most 1 ulp apart,
    measured at the scale of the endpoints."""
    if dtype == dtypes.float16 and max(abs(args[0]), abs(args[1])) > 65504:
        same_error(lambda: torch.linspace(*args, dtype=torch.float16),
                   lambda: Tensor.linspace(*args, dtype=dtype))  # start or stop overflows
        return
    ref = torch.linspace(*args, dtype=TORCH_DTYPES[dtype]).numpy()
    with made_or_refused(dtype):
        t = Tensor.linspace(*args, dtype=dtype)
        got = t.numpy()
    assert t.dtype == dtype and got.shape == ref.shape
    scale = np.maximum(np.abs(ref), np.array(max(abs(args[0]), abs(args[1])), ref.dtype))
    ulps = np.abs(got.astype(np.float64) - ref) / np.spacing(scale).astype(np.float64)
    assert ulps.size == 0 or ulps.max() <= 1.0, f"{ulps.max()} ulp"
    if args[2] >= 1:
        assert got[0] == ref[0] and got[-1] == ref[-1]  # the ends are exact


def test_linspace_default_dtype_and_exact_small_cases() -> None:
    """The default float; steps 0 and 1; the classic examples exactly."""
    assert Tensor.linspace(0, 1, 3).dtype == dtypes.float32
    assert Tensor.linspace(0, 1, 0).shape == (0,)
    np.testing.assert_array_equal(Tensor.linspace(3, 10, 1).numpy(), [3.0])
    np.testing.assert_array_equal(Tensor.linspace(0, 10, 5).numpy(),
                                  torch.linspace(0, 10, 5).numpy())
    np.testing.assert_array_equal(Tensor.linspace(-1, 1, 5).numpy(),
                                  torch.linspace(-1, 1, 5).numpy())


@pytest.mark.parametrize("args", [(-3.7, 10, 7), (0, 10, 4), (5, -5, 11), (0, 1, 5),
                                  (-7, 7, 9), (0, 100, 1)], ids=str)
@pytest.mark.parametrize("dtype", [dtypes.int32, dtypes.int64], ids=str)
def test_linspace_ints_truncate_as_torch(args: tuple, dtype: DType) -> None:
    """Int dtypes truncate start and stop, step in float64, each value truncated toward 0."""
    ref = torch.linspace(*args, dtype=TORCH_DTYPES[dtype]).numpy()
    with made_or_refused(dtype):
        t = Tensor.linspace(*args, dtype=dtype)
        np.testing.assert_array_equal(t.numpy(), ref)
    assert t.dtype == dtype


def test_linspace_errors() -> None:
    """Negative steps or an end the dtype cannot hold: RuntimeError; a bool dtype:
    NotImplementedError, as in torch."""
    same_error(lambda: torch.linspace(0, 300, 3, dtype=torch.int8),
               lambda: Tensor.linspace(0, 300, 3, dtype=dtypes.int8))
    same_error(lambda: torch.linspace(0, 1, -1), lambda: Tensor.linspace(0, 1, -1))
    same_error(lambda: torch.linspace(0, 1, 2.5), lambda: Tensor.linspace(0, 1, 2.5))
    same_error(lambda: torch.linspace(0, 1, 3, dtype=torch.bool),
               lambda: Tensor.linspace(0, 1, 3, dtype=dtypes.bool))


# --- meshgrid ---
MESH_INPUTS = [[3.0, 1.0, 2.0], [4.0, 5.0], 7.0, [], [9.0, 8.0, 7.0, 6.0]]


@pytest.mark.parametrize("which", [(0,), (2,), (0, 1), (0, 1, 4), (1, 2, 0), (3, 0), (0, 2)],
                         ids=str)
@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(which: tuple[int, ...], indexing: str) -> None:
    """x.meshgrid(y, ...) and Tensor.meshgrid(x, y, ...) give torch's grids (0-D inputs count as
    size 1), in either indexing."""
    refs = torch.meshgrid(*(torch.tensor(MESH_INPUTS[i]) for i in which), indexing=indexing)
    ours = [Tensor(MESH_INPUTS[i]) for i in which]
    for grids in (ours[0].meshgrid(*ours[1:], indexing=indexing),
                  Tensor.meshgrid(*ours, indexing=indexing)):
        assert len(grids) == len(refs)
        for g, r in zip(grids, refs):
            assert g.shape == tuple(r.shape) and same_dtype(g.dtype, r.dtype)
            np.testing.assert_array_equal(g.numpy(), r.numpy())


def test_meshgrid_default_is_ij_and_ints() -> None:
    """The default indexing is "ij"; int inputs keep their dtype."""
    x, y = Tensor([1, 2, 3]), Tensor([4, 5])
    gx, gy = x.meshgrid(y)
    rx, ry = torch.meshgrid(torch.tensor([1, 2, 3]), torch.tensor([4, 5]), indexing="ij")
    np.testing.assert_array_equal(gx.numpy(), rx.numpy())
    np.testing.assert_array_equal(gy.numpy(), ry.numpy())
    assert gx.dtype == dtypes.default_int


@pytest.mark.parametrize("case", ["2d", "dtypes", "indexing"])
def test_meshgrid_errors(case: str) -> None:
    """A 2-D input, mixed dtypes or an unknown indexing: torch's RuntimeError."""
    a, b = np.ones((2, 2), np.float32), np.ones(3, np.float32)
    if case == "2d":
        t_args, f_args, kw = (torch.tensor(a),), (Tensor(a),), {"indexing": "ij"}
    elif case == "dtypes":
        t_args = (torch.tensor(b), torch.tensor([1, 2]))
        f_args, kw = (Tensor(b), Tensor([1, 2])), {"indexing": "ij"}
    else:
        t_args, f_args, kw = (torch.tensor(b),), (Tensor(b),), {"indexing": "ji"}
    err = same_error(lambda: torch.meshgrid(*t_args, **kw),
                     lambda: Tensor.meshgrid(*f_args, **kw))
    assert isinstance(err, RuntimeError)


# --- random initializers ---
@pytest.mark.parametrize("shape, a", [((256, 512), 0.01), ((64, 32, 3, 3), 0.0),
                                      ((128, 300), math.sqrt(5))], ids=str)
def test_kaiming_normal_statistics(shape: tuple[int, ...], a: float) -> None:
    """Mean 0, std sqrt(2 / (1 + a**2) / fan_in) as torch.nn.init.kaiming_normal_, float32."""
    Tensor.manual_seed(3)
    t = Tensor.kaiming_normal(*shape, a=a)
    assert t.shape == shape and t.dtype == dtypes.float32
    ref = torch.nn.init.kaiming_normal_(torch.empty(*shape), a=a)
    values, n = t.numpy(), math.prod(shape)
    expected_std = math.sqrt(2 / (1 + a * a) / math.prod(shape[1:]))
    assert abs(values.mean()) < 5 * expected_std / math.sqrt(n)
    assert abs(values.std() / expected_std - 1) < 5 / math.sqrt(2 * n)
    assert abs(ref.std().item() / expected_std - 1) < 5 / math.sqrt(2 * n)  # the same law
    assert Tensor.kaiming_normal(4, 4, dtype=dtypes.float16).dtype == dtypes.float16


def test_normal_statistics_and_errors() -> None:
    """normal(mean, std) has that mean and std; a negative std is torch's RuntimeError."""
    Tensor.manual_seed(5)
    values = Tensor.normal(20000, mean=3.0, std=0.5).numpy()
    assert abs(values.mean() - 3.0) < 0.02 and abs(values.std() - 0.5) < 0.01
    same_error(lambda: torch.normal(0.0, -1.0, size=(3,)),
               lambda: Tensor.normal(3, mean=0.0, std=-1.0))


def test_random_of_an_int_dtype_is_refused() -> None:
    """rand/randn of an int dtype (also rand_like of an int tensor): NotImplementedError."""
    same_error(lambda: torch.rand(2, dtype=torch.int32), lambda: Tensor.rand(2, dtype="int32"))
    same_error(lambda: torch.randn(2, dtype=torch.int32), lambda: Tensor.randn(2, dtype="int32"))
    same_error(lambda: torch.rand_like(torch.tensor([1])), lambda: Tensor([1]).rand_like())
    same_error(lambda: torch.randn_like(torch.tensor([1])), lambda: Tensor([1]).randn_like())
    assert Tensor([1]).rand_like(dtype=dtypes.float32).dtype == dtypes.float32


# --- *_like ---
@pytest.mark.parametrize("data", [[[1.5, 2.0, 3.0]], [[1, 2], [3, 4]], [True, False], 2.0],
                         ids=["float", "int", "bool", "scalar"])
def test_like_functions(data: Any) -> None:
    """full_like, zeros_like, ones_like keep shape and dtype (torch's), or take the dtype given."""
    x, r = Tensor(data), torch.tensor(data)
    for ours, ref in ((x.full_like(7), torch.full_like(r, 7)), (x.zeros_like(),
                      torch.zeros_like(r)), (x.ones_like(), torch.ones_like(r)),
                      (Tensor.full_like(x, 3, dtype=dtypes.float32),
                       torch.full_like(r, 3, dtype=torch.float32))):
        assert ours.shape == tuple(ref.shape) and same_dtype(ours.dtype, ref.dtype)
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    if x.dtype.is_float:
        for ours, ref in ((x.rand_like(), torch.rand_like(r)), (x.randn_like(),
                                                                torch.randn_like(r))):
            assert ours.shape == tuple(ref.shape) and same_dtype(ours.dtype, ref.dtype)


# --- eye and full ---
@pytest.mark.parametrize("n, m", [(0, None), (1, None), (3, None), (2, 4), (4, 2), (0, 3)])
def test_eye_and_full(n: int, m: int | None) -> None:
    """eye and full give torch's values and dtypes."""
    ref = torch.eye(n, m) if m is not None else torch.eye(n)
    np.testing.assert_array_equal(Tensor.eye(n, m).numpy(), ref.numpy())
    full, ref_full = Tensor.full((n, m or 1), -2), torch.full((n, m or 1), -2)
    assert same_dtype(full.dtype, ref_full.dtype)
    np.testing.assert_array_equal(full.numpy(), ref_full.numpy())


# --- Tensor.realize(*tensors) ---
class _Launches(realize.Listener):
    """Records every kernel launched in this thread."""

    def __init__(self) -> None:
        self.items: list[ScheduleItem] = []

    def launched(self, item: ScheduleItem, out: Buffer, inputs: list[Buffer]) -> None:
        self.items.append(item)

    def reduces(self) -> int:
        """How many launched kernels hold a reduce."""
        return sum(item.ast is not None and any(n.op is Ops.REDUCE for n in item.ast.toposort())
                   for item in self.items)


@contextmanager
def launches() -> Iterator[_Launches]:
    """Listen to the kernels launched in the block."""
    listener = _Launches()
    realize.thread_listeners().append(listener)
    try:
        yield listener
    finally:
        realize.thread_listeners().remove(listener)


def _shared(seed: int) -> tuple[np.ndarray, Tensor, Tensor]:
    a = np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32)
    s = Tensor(a).sum(1)
    return a, s + 1, s * 2


@pytest.mark.parametrize("form", ["static", "method", "realize_all"])
def test_realize_several_runs_a_shared_subgraph_once(form: str) -> None:
    """Tensor.realize(a, b), a.realize(b) and Tensor.realize_all(a, b) run one schedule: the
    sum both need is computed by one kernel; apart, each realize computes it again."""
    a, first, second = _shared(0)
    with launches() as together:
        if form == "static":
            assert Tensor.realize(first, second) is first
        elif form == "method":
            assert first.realize(second) is first
        else:
            Tensor.realize_all(first, second)
    assert together.reduces() == 1
    assert realize.is_buffer_view(first.uop) and realize.is_buffer_view(second.uop)
    with launches() as again:
        np.testing.assert_allclose(first.numpy(), a.sum(1) + 1, rtol=1e-5)
        np.testing.assert_allclose(second.numpy(), a.sum(1) * 2, rtol=1e-5)
    assert again.items == []  # both were computed: nothing runs to read them
    _, first, second = _shared(1)
    with launches() as apart:
        first.realize()
        second.realize()
    assert apart.reduces() == 2


def test_realize_keeps_the_graph_for_backward_and_accepts_realized() -> None:
    """A non-leaf that requires grad keeps its graph (backward still works); tensors already
    realized (or repeated) are fine."""
    w = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (w * w).sum()
    z = w * 3
    assert Tensor.realize(y, z, w, z) is y
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_allclose(z.numpy(), [3.0, 6.0, 9.0])
    Tensor.realize_all()  # nothing to do


# --- randperm, multinomial, scaled_uniform, const, const_like -------------------------------


def test_randperm_is_a_permutation() -> None:
    """randperm(n): every value of 0..n-1 once, int64 as torch's (int32 on WEBGPU, which has no
    64-bit ints: index_dtype); torch's errors."""
    Tensor.manual_seed(1)
    for n in (0, 1, 7, 100):
        p = Tensor.randperm(n)
        assert p.shape == (n,) and p.dtype == index_dtype(Device.DEFAULT)
        np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(n))
    assert Tensor.randperm(4, dtype=dtypes.int32).dtype == dtypes.int32
    with pytest.raises(RuntimeError):
        Tensor.randperm(-1)
    with pytest.raises(RuntimeError):
        torch.randperm(-1)
    with pytest.raises(TypeError):
        Tensor.randperm(2.5)  # type: ignore[arg-type]


def test_multinomial_draws_only_weighted_indices() -> None:
    """multinomial: indices of non-zero weights; without replacement each at most once; 2-D
    weights give one row of samples per row; frequencies follow the weights."""
    Tensor.manual_seed(2)
    w = Tensor([0.0, 1.0, 3.0, 0.0])
    s = w.multinomial(2000, replacement=True).numpy()
    assert s.shape == (2000,) and set(np.unique(s)) <= {1, 2}
    assert 0.70 < (s == 2).mean() < 0.80  # 3 / 4, with room for chance
    no_rep = Tensor([[1.0, 1.0, 1.0], [0.0, 2.0, 5.0]]).multinomial(2).numpy()
    assert no_rep.shape == (2, 2)
    assert all(len(set(row)) == 2 for row in no_rep) and 0 not in no_rep[1]
    # more samples than weighted categories: the zero-weight ones come last, as torch's do
    np.testing.assert_array_equal(Tensor([1.0, 0.0]).multinomial(2).numpy(),
                                  torch.multinomial(torch.tensor([1.0, 0.0]), 2).numpy())


@pytest.mark.parametrize("weights, n, replacement", [
    ([[[1.0]]], 1, True),           # 3-D
    ([1.0, -1.0], 1, True),         # a negative weight
    ([0.0, 0.0], 1, True),          # all zero
    ([1.0, float("nan")], 1, True),  # NaN
    ([1.0, 2.0], 3, False),         # more samples than categories
    ([1.0, 2.0], 0, True),          # no samples
    ([], 1, True),                  # an empty distribution
    ([[], []], 1, False),           # rows of no categories
])
def test_multinomial_errors_as_torch(weights: list, n: int, replacement: bool) -> None:
    """Bad weights or counts: RuntimeError, as torch.multinomial raises."""
    with pytest.raises(RuntimeError):
        torch.multinomial(torch.tensor(weights), n, replacement)
    with pytest.raises(RuntimeError):
        Tensor(weights).multinomial(n, replacement)


def test_scaled_uniform_bounds() -> None:
    """scaled_uniform(*shape): uniform in [-n**-0.5, n**-0.5), as tinygrad's."""
    x = Tensor.scaled_uniform(20, 5).numpy()
    assert x.shape == (20, 5) and np.abs(x).max() <= 100 ** -0.5 and x.std() > 0.01


def test_const_and_const_like() -> None:
    """Tensor.const(v) is a 0-d tensor; t.const_like(v) has t's shape, dtype and device."""
    c = Tensor.const(2.5)
    assert c.shape == () and c.item() == 2.5
    t = Tensor([[1, 2, 3]])
    like = t.const_like(7)
    assert like.shape == (1, 3) and like.dtype == t.dtype and like.device == t.device
    np.testing.assert_array_equal(like.numpy(), [[7, 7, 7]])
    assert t.const_like(1.5, dtype=dtypes.float32).dtype == dtypes.float32
