"""The lazy graph: hash-consed immutable nodes of primitive ops, computed only when asked."""
from __future__ import annotations

import numpy as np
import pytest

from tinyfw import Tensor, dtypes
from tinyfw.engine import realize
from tinyfw.device import Buffer
from tinyfw.uop.ops import MOVEMENT, Ops, UOp, const, device_node


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list:
    """The schedules run during a test (each a list of kernels)."""
    seen: list[list] = []
    original = realize.run_schedule

    def counting_run(items):
        seen.append(items)
        return original(items)
    monkeypatch.setattr(realize, "run_schedule", counting_run)
    return seen


@pytest.fixture
def new_buffers(monkeypatch: pytest.MonkeyPatch) -> list:
    """Every Buffer made during a test."""
    made: list[Buffer] = []
    original = Buffer.__init__

    def counting_init(self, *args, **kwargs):
        made.append(self)
        original(self, *args, **kwargs)
    monkeypatch.setattr(Buffer, "__init__", counting_init)
    return made


def test_hash_consing_uops() -> None:
    """Building the same node twice gives the same object; a different arg a different one."""
    dev = device_node("NUMPY")
    a = UOp(Ops.CONST, dtypes.float32, (dev,), 1.0)
    assert UOp(Ops.CONST, dtypes.float32, (dev,), 1.0) is a
    assert UOp(Ops.CONST, dtypes.float32, (dev,), 2.0) is not a
    assert UOp(Ops.CONST, dtypes.float64, (dev,), 1.0) is not a
    s1 = UOp(Ops.ADD, dtypes.float32, (a, a))
    assert UOp(Ops.ADD, dtypes.float32, (a, a)) is s1
    assert (a + a) is s1 and a.sqrt() is a.sqrt()


def test_hash_consing_keeps_distinct_constants_apart() -> None:
    """0.0 and -0.0, 1 and True and 1.0, nan and nan: each constant its own node (or the same)."""
    dev = device_node("NUMPY")
    pos = UOp(Ops.CONST, dtypes.float32, (dev,), 0.0)
    assert UOp(Ops.CONST, dtypes.float32, (dev,), -0.0) is not pos
    one = UOp(Ops.CONST, dtypes.int32, (dev,), 1)
    assert UOp(Ops.CONST, dtypes.int32, (dev,), True) is not one
    nan = float("nan")
    assert UOp(Ops.CONST, dtypes.float32, (dev,), nan) is UOp(Ops.CONST, dtypes.float32, (dev,),
                                                              float("nan"))


def test_hash_consing_through_tensors() -> None:
    """The same Tensor program twice records the same nodes."""
    x, y = Tensor([1.0, 2.0]), Tensor([[3.0], [4.0]])

    def program(a: Tensor, b: Tensor) -> Tensor:
        return ((a + b) * 2).exp().sum(1).reshape(1, 2).permute(1, 0)
    assert program(x, y).uop is program(x, y).uop
    assert (x + y).uop is not (y + x).uop
    assert Tensor.zeros(3).uop is Tensor.zeros(3).uop


def test_uops_are_immutable() -> None:
    """No attribute of a node can be set or replaced."""
    node = Tensor([1.0]).exp().uop
    for name, value in (("op", Ops.SIN), ("arg", 3), ("src", ()), ("shape", (2,)),
                        ("dtype", dtypes.int32), ("other", 1)):
        with pytest.raises(AttributeError):
            setattr(node, name, value)
    assert isinstance(node.src, tuple)


def test_shape_checks_at_build_time() -> None:
    """Malformed nodes are refused when built, not when run."""
    a = const(1.0, dtypes.float32, "NUMPY", (2, 3))
    with pytest.raises(AssertionError):
        a.reshape((4, 2))
    with pytest.raises(AssertionError):
        a.alu(Ops.ADD, const(1.0, dtypes.float32, "NUMPY", (3, 2)))
    with pytest.raises(AssertionError):
        a.expand((4, 3))
    with pytest.raises(AssertionError):
        a.shrink(((0, 3), (0, 3)))
    assert a.pad(((1, 0), (0, 2))).shape == (3, 5)
    assert a.reduce(Ops.ADD, (1,)).shape == (2, 1)


def test_ops_are_lazy(runs: list, new_buffers: list) -> None:
    """Building a program computes nothing and allocates nothing; numpy() computes it once."""
    x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    new_buffers.clear()
    y = ((x * 2 + 1).exp().sum(0) / 3).softmax(0)
    z = x.permute(1, 0)[1:, ::-1].reshape(-1)
    assert runs == [] and new_buffers == []
    assert y.uop.op is not Ops.BUFFER and y.shape == (3,)
    y.numpy()
    assert len(runs) == 1
    z.numpy()
    assert len(runs) == 2


def test_constants_need_no_memory(new_buffers: list) -> None:
    """full, zeros and ones are a constant expanded: no memory is filled until computed."""
    t = Tensor.full((300, 300), 2.0)
    assert new_buffers == []
    kinds = {n.op for n in t.uop.toposort()}
    assert Ops.BUFFER not in kinds and Ops.CONST in kinds


def test_realize_caches(runs: list) -> None:
    """A computed node is not computed again: not by numpy, realize, nor a rebuilt program."""
    x = Tensor([1.0, 2.0, 3.0])
    y = (x * 3).exp()
    first = y.numpy()
    np.testing.assert_array_equal(y.numpy(), first)
    y.realize()
    np.testing.assert_array_equal((x * 3).exp().numpy(), first)
    assert len(runs) == 1
    assert y.uop.op in (Ops.BUFFER, Ops.RESHAPE) and realize.is_buffer_view(y.uop)
    (y + 1).numpy()
    assert len(runs) == 2
    read = [realize.buffer_of(n) for item in runs[1] for n in item.inputs]
    assert realize.buffer_of(y.uop) in read  # reused, not recomputed


def test_realize_reuses_computed_subgraphs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A program using a computed node evaluates only what is new, nothing below that node."""
    x = Tensor([1.0, 2.0])
    h = x.exp() * 2
    h.numpy()
    # (a constant no other test realizes: a realized node equal to the broadcast constant
    # would be read from its buffer, an input more; and kept inline: after another test's
    # h + c of another c, it would be a kernel argument, engine/const_args.py, an input more)
    monkeypatch.setenv("VARY_CONSTS", "0")
    items = realize.schedule((h + 1.2345).uop)
    assert len(items) == 1 and items[0].inputs == (h.uop,)  # h is read from its buffer
    assert Ops.EXP2 not in {n.op for n in items[0].ast.toposort()}


def test_realize_returns_self_and_keeps_value() -> None:
    """realize() returns the tensor itself, now backed by a buffer with the same value."""
    x = Tensor([1.0, 4.0]).sqrt()
    assert x.realize() is x
    assert realize.is_buffer_view(x.uop)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])


@pytest.mark.parametrize("fn, op", [
    (lambda t: t.reshape(3, 2), Ops.RESHAPE), (lambda t: t.permute(1, 0), Ops.PERMUTE),
    (lambda t: t[:, :1].expand(2, 5), Ops.EXPAND), (lambda t: t.pad(((1, 0), (0, 1))), Ops.PAD),
    (lambda t: t.shrink(((0, 1), (1, 3))), Ops.SHRINK), (lambda t: t.flip(0), Ops.FLIP),
    (lambda t: t.T, Ops.PERMUTE), (lambda t: t.unsqueeze(0), Ops.RESHAPE),
], ids=["reshape", "permute", "expand", "pad", "shrink", "flip", "T", "unsqueeze"])
def test_movement_ops_are_views(fn, op, new_buffers: list) -> None:
    """Movement ops record a node over their source; no buffer is made, no data copied."""
    x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    new_buffers.clear()
    y = fn(x)
    assert y.uop.op is op and new_buffers == []
    assert {n.op for n in y.uop.toposort()} <= MOVEMENT | {Ops.BUFFER}
    buffers = [n for n in y.uop.toposort() if n.op is Ops.BUFFER]
    assert len(buffers) == 1 and buffers[0].arg is realize.buffer_of(x.uop)


def test_indexing_is_movement_only(new_buffers: list) -> None:
    """Slicing with steps, flips, None and ints records movement ops only."""
    x = Tensor(np.arange(60, dtype=np.float32).reshape(3, 4, 5))
    new_buffers.clear()
    y = x[1:, ::-2, None, 3]
    assert new_buffers == []
    assert {n.op for n in y.uop.toposort()} <= MOVEMENT | {Ops.BUFFER, Ops.CONST, Ops.DEVICE}
    np.testing.assert_array_equal(y.numpy(), np.arange(60).reshape(3, 4, 5)[1:, ::-2, None, 3])


def test_primitive_ops_only() -> None:
    """A broad program (forward and backward) emits only the primitive Ops."""
    Tensor.manual_seed(0)
    x = Tensor.randn(4, 3, requires_grad=True)
    w = Tensor.randn(3, 5, requires_grad=True)
    out = (x @ w).gelu().softmax(1).log().mean() + x.abs().max() + x[::2, 1:].sum()
    out = out + x.pad(((1, 1), None)).flip(0).std() + (x > 0).where(x, x.sin()).sum()
    out = out + x.cross_entropy(Tensor([0, 1, 2, 1])) + (x // 0.5 % 2).sum() + x.cast("int8").sum()
    out = out + (x.int() & 3).sum() + x.argmax().float() + ((x.round().abs() + 1) ** 0.5).sum()
    out.backward()
    nodes = out.uop.toposort() + x.grad.uop.toposort() + w.grad.uop.toposort()
    ops = {n.op for n in nodes}
    assert ops <= set(Ops)
    assert all(isinstance(n, UOp) and isinstance(n.op, Ops) for n in nodes)
    assert {Ops.REDUCE, Ops.EXPAND, Ops.MUL, Ops.ADD} <= ops
    assert np.isfinite(x.grad.numpy()).all() and np.isfinite(out.numpy())


def test_toposort_orders_sources_first() -> None:
    """toposort lists every node once, each after all of its sources."""
    x = Tensor([1.0, 2.0])
    y = (x + x * 2).exp() * x
    order = y.uop.toposort()
    assert len(order) == len(set(order)) and order[-1] is y.uop
    position = {n: i for i, n in enumerate(order)}
    assert all(position[s] < position[n] for n in order for s in n.src)


def test_detach_and_contiguous_are_nodes() -> None:
    """detach and contiguous record their own ops (contiguous of a tensor whose buffer is
    computed already is that tensor, as torch's); cast to the same dtype records nothing."""
    x = Tensor([1.0, 2.0])
    assert x.detach().uop.op is Ops.DETACH and (x + 1).contiguous().uop.op is Ops.CONTIGUOUS
    assert x.contiguous().uop is x.uop and x.T.contiguous().uop.op is Ops.CONTIGUOUS
    assert x.cast(dtypes.float32).uop is x.uop
    assert x.cast(dtypes.int32).uop.op is Ops.CAST
    assert x.reshape(2).uop is x.uop


def test_device() -> None:
    """Tensors live on the default device (CPU) unless told; names are normalized; results stay
    on their inputs' device; unknown devices are refused."""
    assert Tensor([1.0]).device == "CPU" and Tensor([1.0], device="numpy").device == "NUMPY"
    assert (Tensor([1.0], device="NUMPY").exp() + 1).device == "NUMPY"
    assert Tensor([1.0]).to("NUMPY:0").device == "NUMPY"
    assert Tensor([2.0]).to("NUMPY").to("cpu").exp().device == "CPU"
    with pytest.raises(RuntimeError):
        Tensor([1.0], device="nowhere")
