"""The lazy graph: primitive ops and the immutable, hash-consed node (UOp) that records them."""
from __future__ import annotations

import math
import struct
import weakref
from _weakref import _remove_dead_weakref  # type: ignore[attr-defined]
from collections.abc import Callable, Iterator
from enum import Enum, auto
from typing import TYPE_CHECKING, Any

from tinyfw.dtype import DType, dtypes, round_float, wrap_int
from tinyfw.helpers import prod


class Ops(Enum):
    """Every primitive op. The Tensor front end emits only these; everything else is composed."""
    # leaves of the graph
    DEVICE = auto()      # arg: device name
    BUFFER = auto()      # arg: a Buffer (flat memory on a device)
    CONST = auto()       # arg: a Python number; src: (DEVICE,)
    # unary
    NEG = auto()
    EXP2 = auto()
    LOG2 = auto()
    SIN = auto()
    SQRT = auto()
    RECIPROCAL = auto()
    TRUNC = auto()
    CAST = auto()        # dtype of the node is the target dtype
    BITCAST = auto()     # the same bits read as the node's dtype (of the same itemsize)
    # binary
    ADD = auto()
    MUL = auto()
    MAX = auto()
    MOD = auto()         # remainder with the sign of the dividend, as in C
    IDIV = auto()        # integer division rounding toward zero, as in C
    FDIV = auto()        # float division, correctly rounded (x * (1/d) rounds twice)
    CMPLT = auto()
    CMPNE = auto()
    AND = auto()
    OR = auto()
    XOR = auto()
    # ternary
    WHERE = auto()
    # reduce
    REDUCE = auto()      # arg: (Ops.ADD | Ops.MAX, axes); keeps reduced axes as size 1
    # movement: views of their source, no data moves
    RESHAPE = auto()     # arg: new shape
    PERMUTE = auto()     # arg: order of the axes
    EXPAND = auto()      # arg: new shape (size-1 axes grow)
    PAD = auto()         # arg: ((before, after), ...) per axis, filled with zeros
    SHRINK = auto()      # arg: ((start, end), ...) per axis
    FLIP = auto()        # arg: (bool, ...) per axis
    # other
    CONTIGUOUS = auto()  # materialize its source
    DETACH = auto()      # same value, no gradient flows through it (arg: maybe a
                         # GradientOverride, for the further sources: gradient.py)
    COPY = auto()        # arg: target device name, or a tuple of names (a whole copy on each)
    MULTI = auto()       # a value over many devices (tinyfw/multi.py): src its parts, one graph
                         # of one device each, in device order; arg the axis they split, or
                         # None when each is the whole value (replicated)
    # kernel ops: only the scheduler makes these, inside a kernel's AST
    VIEW = auto()        # arg: a ShapeTracker; the view a LOAD, CONST or STORE goes through
    LOAD = auto()        # arg: which input buffer; src: (VIEW,)
    STORE = auto()       # arg: which output buffer; src: (VIEW, value)

    # Hashed by identity, in C: every node made hashes its op (the hash-consing key), and Enum's
    # own __hash__ is a Python call. A member is its only instance (pickling returns it), so
    # identity is its equality, as for Enum; no hash is kept beyond the process.
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"Ops.{self.name}"


# Python 3.11 looks a member up on an Enum class through EnumType.__getattr__, three times
# slower than a plain name: the functions run for every node made compare with these.
_VIEW, _DEVICE, _BUFFER, _COPY, _DETACH = Ops.VIEW, Ops.DEVICE, Ops.BUFFER, Ops.COPY, Ops.DETACH
_WHERE, _MULTI = Ops.WHERE, Ops.MULTI
_SEEN_THROUGH_A_VIEW = frozenset({Ops.CONST, Ops.LOAD, Ops.STORE})

UNARY = frozenset({Ops.NEG, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.RECIPROCAL, Ops.TRUNC,
                   Ops.CAST, Ops.BITCAST})
BINARY = frozenset({Ops.ADD, Ops.MUL, Ops.MAX, Ops.MOD, Ops.IDIV, Ops.FDIV, Ops.CMPLT, Ops.CMPNE,
                    Ops.AND, Ops.OR, Ops.XOR})
TERNARY = frozenset({Ops.WHERE})
ALU = UNARY | BINARY | TERNARY
COMPARISON = frozenset({Ops.CMPLT, Ops.CMPNE})
MOVEMENT = frozenset({Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.PAD, Ops.SHRINK, Ops.FLIP})
LEAVES = frozenset({Ops.DEVICE, Ops.BUFFER, Ops.CONST})
KERNEL = frozenset({Ops.VIEW, Ops.LOAD, Ops.STORE})


def arg_key(arg: Any) -> Any:
    """A hashable key for an arg that tells apart 0.0 from -0.0 and True from 1."""
    if isinstance(arg, float):
        return ("f", struct.pack("<d", arg)) if not math.isnan(arg) else ("f", "nan")
    if isinstance(arg, bool):
        return ("b", arg)
    return arg


class _HashConsed(type):
    """Builds each distinct (op, dtype, src, arg) once: the same node twice is the same object.

    The nodes are held weakly: key -> a weak reference to the node, whose entry goes when the
    node does (a WeakValueDictionary, written out: its get and set are Python calls, and every
    node made goes through both)."""
    cache: dict[tuple[Any, ...], _NodeRef] = {}

    def __call__(cls, op: Ops, dtype: DType, src: tuple[UOp, ...] = (), arg: Any = None) -> UOp:
        keyed_arg = arg if type(arg) in _KEYED_AS_IS else arg_key(arg)
        key = (op, dtype, src, keyed_arg)
        if (ref := _HashConsed.cache.get(key)) is not None and (found := ref()) is not None:
            return found
        node = _made(op, dtype, src, arg, keyed_arg)
        ref = _NodeRef(node, _forget_node)
        ref.key = key
        _HashConsed.cache[key] = ref
        return node


_KEYED_AS_IS = frozenset({type(None), int, str, tuple})  # (arg_key gives these back as they are)


class _NodeRef(weakref.ref["UOp"]):
    """A weak reference to a node, with the node's key in the cache (weakref.KeyedRef, with its
    Python __new__ and __init__, cost a third of making a node)."""
    __slots__ = ("key",)
    key: tuple[Any, ...]


def _forget_node(ref: _NodeRef, cache: dict[tuple[Any, ...], _NodeRef]
                 = _HashConsed.cache, remove: Callable[..., None] = _remove_dead_weakref) -> None:
    """A node has gone: drop its entry, unless a new node of the same key has taken it."""
    # (remove, in C, deletes the entry only if it still holds a dead reference. The cache and
    # remove are bound here, as WeakValueDictionary binds them: nodes that die while the
    # interpreter exits find this module's globals already cleared.)
    remove(cache, ref.key)


class UOp(metaclass=_HashConsed):
    """One node of the lazy graph: an op applied to source nodes, with a dtype and an argument.
    Nodes are immutable and compared by identity, which hash-consing makes structural."""
    __slots__ = ("op", "dtype", "src", "arg", "device", "shape", "part", "realized",
                 "__weakref__")
    op: Ops
    dtype: DType
    src: tuple[UOp, ...]
    arg: Any
    # where its value lives (worked out once: graphs can be very deep): a device's name, or a
    # tuple of names for a value over many devices (tinyfw/multi.py), which the engine rewrites
    # into graphs of one device each before it schedules them (typed as a name, as everything
    # from the scheduler down sees; the Tensor's `device` is typed so too)
    device: str
    shape: tuple[int, ...]
    # what tells this node apart in a graph's structure, besides its sources (the schedule
    # cache's key, tinyfw/engine/schedule_cache.py): its op, dtype and argument, a buffer as its
    # device, dtype and size (not which buffer), a DETACH without its argument (a number that
    # only keeps an assigned value a node of its own)
    part: tuple[Any, ...]
    # the buffer holding its value once computed (set by tinyfw/engine/realize.py, the one
    # field that changes: it goes with the node)
    realized: Any

    if TYPE_CHECKING:  # (the signature of UOp(...): _HashConsed.__call__ makes the node)
        def __init__(self, op: Ops, dtype: DType, src: tuple[UOp, ...] = (),
                     arg: Any = None) -> None: ...

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("UOp is immutable")

    def __reduce__(self):
        return UOp, (self.op, self.dtype, self.src, self.arg)

    def __repr__(self) -> str:
        arg = f", arg={self.arg!r}" if self.op not in (Ops.BUFFER,) else f", {self.arg!r}"
        return f"UOp({self.op!r}, {self.dtype!r}, shape={self.shape}{arg}, srcs={len(self.src)})"

    # --- properties ---
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return prod(self.shape)

    def toposort(self, stop: Callable[[UOp], bool] | None = None,
                 seen: set[UOp] | None = None) -> list[UOp]:
        """Every node this one depends on, sources before users, without recursion; nodes for
        which stop is true are listed, but what is below them is not. Nodes in `seen` are left
        out, and the ones listed are added to it: walks of several roots that share most of
        their graph (a loss and the parameters it updates) list each node once in all."""
        order: list[UOp] = []
        seen = set() if seen is None else seen
        if self in seen:
            return order
        seen.add(self)
        # a depth-first walk, as a recursion would make it: each node on the stack with the
        # iterator of its sources still to visit (none when stop is true of it); a node is
        # listed once all its sources are
        stack = [(self, iter(self.src if stop is None or not stop(self) else ()))]
        while stack:
            node, sources = stack[-1]
            for src in sources:
                if src not in seen:
                    seen.add(src)
                    stack.append((src, iter(src.src if stop is None or not stop(src) else ())))
                    break
            else:  # every source is listed
                stack.pop()
                order.append(node)
        return order

    def walk(self) -> Iterator[UOp]:
        """The nodes of the graph below this one, each once."""
        return iter(self.toposort())

    # --- building nodes: the small vocabulary gradient rules and the Tensor are written in ---
    def const_like(self, value: float | int | bool) -> UOp:
        """A node of this node's shape, dtype and device filled with value."""
        return const(value, self.dtype, self.device, self.shape)

    def alu(self, op: Ops, *others: UOp) -> UOp:
        """This node combined elementwise with others of the same shape."""
        dtype = dtypes.bool if op in COMPARISON else (others[-1].dtype if op is _WHERE
                                                       else self.dtype)
        return UOp(op, dtype, (self, *others))

    def _lift(self, x: UOp | float | int | bool) -> UOp:
        return x if isinstance(x, UOp) else self.const_like(x)

    def __add__(self, x: UOp | float) -> UOp: return self.alu(Ops.ADD, self._lift(x))
    def __radd__(self, x: float) -> UOp: return self._lift(x).alu(Ops.ADD, self)
    def __mul__(self, x: UOp | float) -> UOp: return self.alu(Ops.MUL, self._lift(x))
    def __rmul__(self, x: float) -> UOp: return self._lift(x).alu(Ops.MUL, self)
    def __neg__(self) -> UOp: return self.alu(Ops.NEG)
    def __sub__(self, x: UOp | float) -> UOp: return self + (-self._lift(x))
    def __rsub__(self, x: float) -> UOp: return self._lift(x) + (-self)
    def __truediv__(self, x: UOp | float) -> UOp: return self.alu(Ops.FDIV, self._lift(x))
    def __rtruediv__(self, x: float) -> UOp: return self._lift(x).alu(Ops.FDIV, self)
    def __lt__(self, x: UOp | float) -> UOp: return self.alu(Ops.CMPLT, self._lift(x))
    def __gt__(self, x: UOp | float) -> UOp: return self._lift(x).alu(Ops.CMPLT, self)
    def ne(self, x: UOp | float) -> UOp: return self.alu(Ops.CMPNE, self._lift(x))
    def eq(self, x: UOp | float) -> UOp: return self.ne(x).alu(Ops.XOR, UOp.true_like(self))
    def maximum(self, x: UOp | float) -> UOp: return self.alu(Ops.MAX, self._lift(x))
    def reciprocal(self) -> UOp: return self.alu(Ops.RECIPROCAL)
    def sqrt(self) -> UOp: return self.alu(Ops.SQRT)
    def sin(self) -> UOp: return self.alu(Ops.SIN)
    def exp2(self) -> UOp: return self.alu(Ops.EXP2)
    def log2(self) -> UOp: return self.alu(Ops.LOG2)

    @staticmethod
    def true_like(x: UOp) -> UOp:
        return const(True, dtypes.bool, x.device, x.shape)

    def where(self, x: UOp | float, y: UOp | float) -> UOp:
        """x where this (bool) node is true, else y."""
        ref = x if isinstance(x, UOp) else y
        assert isinstance(ref, UOp), "where needs at least one node among its branches"
        x = x if isinstance(x, UOp) else ref.const_like(x)
        y = y if isinstance(y, UOp) else ref.const_like(y)
        return self.alu(Ops.WHERE, x, y)

    def cast(self, dtype: DType) -> UOp:
        return self if dtype == self.dtype else UOp(Ops.CAST, dtype, (self,))

    def bitcast(self, dtype: DType) -> UOp:
        """The same bits as dtype, of the same itemsize (bool neither side)."""
        assert dtype.itemsize == self.dtype.itemsize and not (dtype.is_bool or self.dtype.is_bool)
        return self if dtype == self.dtype else UOp(Ops.BITCAST, dtype, (self,))

    def reduce(self, op: Ops, axes: tuple[int, ...]) -> UOp:
        """Reduce over axes with ADD or MAX, keeping them as size-1 axes."""
        return UOp(Ops.REDUCE, self.dtype, (self,), (op, tuple(sorted(axes))))

    def sum(self, axes: tuple[int, ...]) -> UOp:
        return self.reduce(Ops.ADD, axes)

    def reshape(self, shape: tuple[int, ...]) -> UOp:
        return self if tuple(shape) == self.shape else UOp(Ops.RESHAPE, self.dtype, (self,),
                                                           tuple(shape))

    def permute(self, order: tuple[int, ...]) -> UOp:
        order = tuple(order)
        return self if order == tuple(range(self.ndim)) else UOp(Ops.PERMUTE, self.dtype, (self,),
                                                                  order)

    def expand(self, shape: tuple[int, ...]) -> UOp:
        return self if tuple(shape) == self.shape else UOp(Ops.EXPAND, self.dtype, (self,),
                                                           tuple(shape))

    def pad(self, padding: tuple[tuple[int, int], ...]) -> UOp:
        padding = tuple((int(b), int(a)) for b, a in padding)
        return self if all(p == (0, 0) for p in padding) else UOp(Ops.PAD, self.dtype, (self,),
                                                                  padding)

    def shrink(self, bounds: tuple[tuple[int, int], ...]) -> UOp:
        bounds = tuple((int(s), int(e)) for s, e in bounds)
        if bounds == tuple((0, s) for s in self.shape):
            return self
        return UOp(Ops.SHRINK, self.dtype, (self,), bounds)

    def flip(self, axes_mask: tuple[bool, ...]) -> UOp:
        mask = tuple(bool(m) for m in axes_mask)
        return UOp(Ops.FLIP, self.dtype, (self,), mask) if any(mask) else self

    def detach(self) -> UOp:
        return UOp(Ops.DETACH, self.dtype, (self,))

    def contiguous(self) -> UOp:
        return UOp(Ops.CONTIGUOUS, self.dtype, (self,))

    def copy_to(self, device: str | tuple[str, ...]) -> UOp:
        """This value on device; on a tuple of devices, a whole copy on each; a value over many
        devices copied to one is gathered there (the rewrite of tinyfw/multi.py does both)."""
        if device == self.device:
            return self
        if isinstance(self.device, tuple) and isinstance(device, str):
            _note_gather()
        return UOp(Ops.COPY, self.dtype, (self,), device)


def find_reduce(ast: UOp) -> UOp | None:
    """The first REDUCE in ast's graph (a kernel holds at most one), or None."""
    if ast not in _reduce_of:  # (asked for each kernel launched: looked for once per AST)
        _reduce_of[ast] = next((node for node in ast.toposort() if node.op is Ops.REDUCE), None)
    return _reduce_of[ast]


_reduce_of: weakref.WeakKeyDictionary[UOp, UOp | None] = weakref.WeakKeyDictionary()


# Whether a COPY from many devices to one (a gather: tinyfw/multi.py) was ever made. Until then
# no graph of one device has a value over many devices below it, and the rewrite that lowers
# those (tinyfw/multi.py's lowered) need not look under one.
gathers_made = False


def _note_gather() -> None:
    """A gather was made (see gathers_made)."""
    global gathers_made
    gathers_made = True


def device_node(device: str | tuple[str, ...]) -> UOp:
    """The leaf naming a device (kept: every constant made on the device points at it)."""
    if (node := _device_nodes.get(device)) is None:
        node = _device_nodes[device] = UOp(Ops.DEVICE, dtypes.bool, (), device)
    return node


_device_nodes: dict[str | tuple[str, ...], UOp] = {}


def const(value: float | int | bool, dtype: DType, device: str | tuple[str, ...],
          shape: tuple[int, ...] = ()) -> UOp:
    """A constant, broadcast to shape by a reshape and an expand (no memory is filled); on a
    tuple of devices, the same on each (tinyfw/multi.py lowers it to one per device). The
    last CONST_MEMO constants made are remembered: a step of training makes the same hundred
    again each time (an optimizer's betas, a loss's scale), three nodes each."""
    if type(value) not in (float, int, bool):  # (numpy's scalars: -0.0 == 0.0 would match)
        return _make_const(value, dtype, device, shape)
    shape = tuple(shape)  # (a list is taken too, as expand takes it)
    key = (type(value), arg_key(value), dtype, device, shape)
    if (known := _consts.get(key)) is not None:
        return known
    if len(_consts) >= CONST_MEMO:
        _consts.clear()
    node = _consts[key] = _make_const(value, dtype, device, shape)
    return node


CONST_MEMO = 4096
_consts: dict[tuple[Any, ...], UOp] = {}


def _make_const(value: float | int | bool, dtype: DType, device: str | tuple[str, ...],
                shape: tuple[int, ...]) -> UOp:
    """const's node, made."""
    if dtype.is_bool:
        value = bool(value)
    elif dtype.is_int:  # out-of-range ints wrap around, as a cast in C (and torch) does
        value = wrap_int(int(value), dtype)
    else:  # as the dtype holds it: a float32 1e39 is inf, as a cast in C (and torch) gives
        value = round_float(float(value), dtype)
    node = UOp(Ops.CONST, dtype, (device_node(device),), value)
    return node.reshape((1,) * len(shape)).expand(tuple(shape))


class _NewUOp(UOp):
    """A node being made: UOp's very layout, with fields that can be set. _made fills one in and
    makes it a UOp, frozen from then on. (Plain stores, where UOp's own __setattr__ would need
    object.__setattr__ for each field: making nodes is most of building a graph.)"""
    __slots__ = ()
    __setattr__ = object.__setattr__  # type: ignore[assignment]


def _made(op: Ops, dtype: DType, src: tuple[UOp, ...], arg: Any, keyed_arg: Any) -> UOp:
    """A new node (_HashConsed makes each distinct one once, through here)."""
    node = object.__new__(_NewUOp)
    node.op, node.dtype, node.src, node.arg = op, dtype, src, arg
    node.device = (arg if op is _DEVICE or op is _COPY else arg.device if op is _BUFFER else
                   _devices(src) if op is _MULTI else src[0].device if src else "")
    node.part = (op, dtype, (arg.device, arg.dtype, arg.size) if op is _BUFFER
                 else None if op is _DETACH else keyed_arg)
    node.shape = infer_shape(op, src, arg)
    node.realized = None
    node.__class__ = UOp  # type: ignore[assignment]
    return node


def _devices(parts: tuple[UOp, ...]) -> Any:
    """The devices of a MULTI node: its parts', in order (each of one device, none twice)."""
    devices = tuple([p.device for p in parts])
    assert len(set(devices)) == len(devices) and all(type(d) is str for d in devices), \
        f"a MULTI's parts need one device each: {devices}"
    return devices


def multi_shape(parts: tuple[UOp, ...], axis: int | None) -> tuple[int, ...]:
    """The shape of the whole value of a MULTI node: its parts' (replicated, axis None), or
    theirs with the sizes along axis added up (checked: one dtype, alike off the axis)."""
    shape, dtype = parts[0].shape, parts[0].dtype
    assert all(p.dtype == dtype for p in parts), "a MULTI's parts need one dtype"
    if axis is None:
        assert all(p.shape == shape for p in parts), \
            f"replicated parts of several shapes: {[p.shape for p in parts]}"
        return shape
    rest = shape[:axis] + shape[axis + 1:]
    assert all(p.shape[:axis] + p.shape[axis + 1:] == rest for p in parts), \
        f"parts that differ off their axis {axis}: {[p.shape for p in parts]}"
    return shape[:axis] + (sum([p.shape[axis] for p in parts]),) + shape[axis + 1:]


def infer_shape(op: Ops, src: tuple[UOp, ...], arg: Any) -> tuple[int, ...]:
    """The shape of a node, from its op, its sources and its argument (checked as it goes)."""
    if op in ALU:  # (first: most nodes made are these)
        shape = src[0].shape
        for other in src[1:]:
            assert other.shape == shape, \
                f"{op} needs sources of one shape, got {[s.shape for s in src]}"
        return shape
    if op is _BUFFER:
        return (arg.size,)
    if op is _VIEW:
        return arg.shape
    if op in _SEEN_THROUGH_A_VIEW:  # a number or memory, seen through a view
        return src[0].shape if src and src[0].op is _VIEW else ()
    if op is _DEVICE:
        return ()
    if op is _MULTI:
        return multi_shape(src, arg)
    x = src[0].shape
    if op is Ops.REDUCE:
        return tuple(1 if i in arg[1] else s for i, s in enumerate(x))
    if op is Ops.RESHAPE:
        assert prod(arg) == prod(x), f"reshape {x} -> {arg} changes the size"
        return tuple(arg)
    if op is Ops.PERMUTE:
        assert sorted(arg) == list(range(len(x))), f"bad permutation {arg} for {x}"
        return tuple(x[i] for i in arg)
    if op is Ops.EXPAND:
        assert len(arg) == len(x) and all(s == a or s == 1 for s, a in zip(x, arg)), \
            f"cannot expand {x} to {arg}"
        return tuple(arg)
    if op is Ops.PAD:
        assert len(arg) == len(x) and all(b >= 0 and a >= 0 for b, a in arg)
        return tuple(s + b + a for s, (b, a) in zip(x, arg))
    if op is Ops.SHRINK:
        assert len(arg) == len(x) and all(0 <= b <= e <= s for s, (b, e) in zip(x, arg)), \
            f"bad shrink {arg} of {x}"
        return tuple(e - b for b, e in arg)
    if op is Ops.FLIP:
        assert len(arg) == len(x)
        return x
    if op in (Ops.CONTIGUOUS, Ops.DETACH, Ops.COPY):
        return x
    raise NotImplementedError(f"no shape rule for {op}")
