# Solutions of chapter 04, generated from tinyfw/engine/schedule.py by `python -m tools.generate`.
# Edit tinyfw/engine/schedule.py rather than this copy. Grade these solutions with:
#   python -m pytest chapters/04_fusion --impl=solutions
# generated text id: 9559db1751a6453c (lets tools.generate tell your edits apart)
"""Fusion: cutting the lazy graph into kernels, each a loop nest that writes one buffer."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from tinyfw.device import Device
from tinyfw.dtype import dtypes
from tinyfw.engine.split_reduce import Split, splits_below
from tinyfw.renderer.base import NotSupportedError
from tinyfw.uop.gradient import inverse_permutation
from tinyfw.uop.ops import ALU, MOVEMENT, Ops, UOp, find_reduce
from tinyfw.shape.view import ShapeTracker


@dataclass(frozen=True)
class ScheduleItem:
    """One step of a schedule: a kernel that computes `output` from `inputs` (or, when ast is
    None, a copy of inputs[0] to another device)."""
    ast: UOp | None          # the kernel: a STORE of an expression of LOADs and CONSTs
    output: UOp              # the graph node whose value this step produces
    inputs: tuple[UOp, ...]  # graph nodes read, in the order of the LOADs' buffer numbers
    name: str = field(default="")

    @property
    def device(self) -> str:
        return self.output.device


# --- the rules: when a node gets a buffer (and a kernel) of its own ---
def is_realized_explicitly(node: UOp, targets: set[UOp]) -> bool:
    """Asked for by realize(), a CONTIGUOUS, or a COPY (copies are transfers, not kernels)."""
    # >>> exercise 04.realized #realized-on-request
    return node in targets or node.op in (Ops.CONTIGUOUS, Ops.COPY)
    # <<< exercise


def pad_source_to_materialize(pad: UOp) -> UOp | None:
    """A PAD's zeros can only be a validity mask on a load: if the padded value is computed (an
    ALU or REDUCE below any movement ops), that value must be stored first. Returns it, or None.
    """
    # >>> exercise 04.pad #padding-a-computed-value
    below = pad.src[0]
    while below.op in MOVEMENT:
        below = below.src[0]
    return below if below.op in ALU or below.op is Ops.REDUCE else None
    # <<< exercise


def reduce_would_be_recomputed(node: UOp, users: dict[UOp, list[UOp]]) -> bool:
    """A REDUCE is stored when fusing it would compute it more than once: when its value,
    followed up through reshapes and elementwise ops (what fuses with it), is viewed through a
    movement op other than a reshape (an expand repeats it, a permute reorders it). A PAD ends
    the search: what it pads is stored anyway."""
    # >>> exercise 04.reduce #a-reduce-computed-once
    if node.op is not Ops.REDUCE:
        return False
    frontier, seen = list(users.get(node, [])), set()
    while frontier:
        user = frontier.pop()
        if user in seen or user.op is Ops.PAD:
            continue
        seen.add(user)
        if user.op in MOVEMENT and user.op is not Ops.RESHAPE:
            return True
        if user.op in ALU or user.op in (Ops.RESHAPE, Ops.DETACH):
            frontier.extend(users.get(user, []))
    return False
    # <<< exercise


LONG_REDUCE = 64  # values added per output from which a sum is stored as it is read


def stored_as_read(reduce: UOp, users: dict[UOp, list[UOp]], wanted: set[UOp]) -> UOp:
    """The node whose buffer a stored REDUCE becomes: the REDUCE itself, or, where its value
    goes (through reshapes alone, each its one user) to a permute, that permute. Its kernel
    then stores each sum where the permuted value has it, so what reads it reads memory in
    order: a Linear layer's weight gradient is summed as (in, out) and read by the optimizer
    as the weight's (out, in); stored as summed, every elementwise kernel of the update read it
    across (a fifth of a jitted MLP step, three quarters once Adam's moments go subnormal).
    For a long sum (LONG_REDUCE values per output or more), whose outputs are stored once
    each after a long loop, or a permute asked for itself (stored anyway); not a short one,
    whose kernel is mostly its stores: spread across memory they cost it more than its
    readers gain (a convolution's input gradient, 16 values a sum: 0.5 ms became 2.2 ms)."""
    node = reduce
    while len(after := set(users.get(node, []))) == 1:
        (node,) = after
        if node.op is Ops.PERMUTE:
            long = reduce.src[0].numel >= LONG_REDUCE * reduce.numel
            return node if long or node in wanted else reduce
        if node.op is not Ops.RESHAPE:
            break
    return reduce


# Ops that cost many instructions each, or mark a computation that does: a value computed with
# them is not recomputed for every repeat of a reduce (expensive_value_repeated). TRUNC is one
# instruction, but exp and expm1 (tinyfw/uop/elementwise_math.py) round with it to reduce
# their argument, and a polynomial of a dozen terms follows.
EXPENSIVE = frozenset({Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.RECIPROCAL, Ops.FDIV,
                       Ops.TRUNC})
REPEATS = 16  # the repeats from which such a value is stored first,
# when it would be computed that many times in all: a kernel of its own costs a launch (2 to
# 20 us) and a store, as much as some thousands of evaluations with exp2 or a division (a
# 32-64-10 MLP's cross-entropy backward, 640 values read 64 times over in a weight gradient,
# was 1.7 ms of a 1.9 ms Adam step below 1 << 16; 0.22 ms a step at 1 << 12: chapter 13's
# notebook's model)
RECOMPUTED = 1 << 12


def expensive_value_repeated(node: UOp, users: dict[UOp, list[UOp]]) -> bool:
    """An elementwise value computed with EXPENSIVE ops, that a reduce reads through an expand
    repeating it REPEATS times or more, is stored first: fused, the reduce's kernel would
    compute it again for every repeat. (The MNIST MLP's cross-entropy backward, fused into the
    second layer's weight gradient, was computed 128 times over: 40% of a training step.) Not
    where that is fewer than RECOMPUTED evaluations in all (a scalar, say): a kernel of its own
    would cost more than they do."""
    frontier = [(user, 1) for user in users.get(node, []) if user.op in MOVEMENT]
    seen: set[tuple[UOp, int]] = set()
    while frontier:
        user, repeats = frontier.pop()
        if (user, repeats) in seen:
            continue
        seen.add((user, repeats))
        if user.op is Ops.REDUCE:
            if repeats >= REPEATS and node.numel * repeats >= RECOMPUTED:
                return True
            continue
        if user.op is Ops.EXPAND:
            repeats *= user.numel // max(user.src[0].numel, 1)
        elif user.op not in MOVEMENT and user.op not in ALU:
            continue
        frontier.extend((after, repeats) for after in users.get(user, []))
    return False


def expensive_value_broadcast(node: UOp, users: dict[UOp, list[UOp]]) -> bool:
    """An elementwise value computed with EXPENSIVE ops and broadcast, through views alone, to
    REPEATS copies or more (RECOMPUTED evaluations in all) is stored first: fused, every
    element of the kernel that reads the broadcast would compute it again. (Adam's step size,
    a scalar of powers of the step count, was computed for each of a weight's 100352
    elements.) The last value before the views is the one stored, so a chain of expensive
    scalar ops becomes one small kernel."""
    frontier = [(user, 1) for user in users.get(node, []) if user.op in MOVEMENT]
    while frontier:
        user, repeats = frontier.pop()
        if user.op is Ops.EXPAND:
            repeats *= user.numel // max(user.src[0].numel, 1)
            if repeats >= REPEATS and node.numel * repeats >= RECOMPUTED:
                return True
        frontier.extend((after, repeats) for after in users.get(user, [])
                        if after.op in MOVEMENT)
    return False


def find_materialized(targets: list[UOp], is_loaded: Callable[[UOp], bool]) -> set[UOp]:
    """Every node below targets that will be a kernel's output (buffers already held excluded).
    Nothing below a loaded node is looked at: it is not computed again (a PAD down there would
    otherwise have its loaded source computed again: a prompt's logits, realized, recomputed
    every layer's keys when an argmax read them)."""
    order: list[UOp] = []
    seen: set[UOp] = set()
    for t in targets:
        order += t.toposort(stop=is_loaded, seen=seen)
    users: dict[UOp, list[UOp]] = {}
    for node in order:
        if is_loaded(node):
            continue
        for s in dict.fromkeys(node.src):
            users.setdefault(s, []).append(node)
    wanted = set(targets)
    out: set[UOp] = set()
    costly: set[UOp] = set()  # values computed (not stored) with an EXPENSIVE op, and views
    for node in order:
        if is_loaded(node) or node.op in (Ops.DEVICE, Ops.BUFFER):
            continue
        if node.op in EXPENSIVE or (node.op in ALU or node.op in MOVEMENT) and \
                any(s in costly for s in node.src) or node.op is Ops.DETACH and \
                node.src[0] in costly:
            costly.add(node)
        if is_realized_explicitly(node, wanted) or reduce_would_be_recomputed(node, users) or \
                is_elementwise(node) and node in costly and \
                (expensive_value_repeated(node, users) or expensive_value_broadcast(node, users)):
            out.add(node)
            costly.discard(node)  # (stored: what reads it loads it)
        if node.op is Ops.PAD and (src := pad_source_to_materialize(node)) is not None and \
                not is_loaded(src):
            out.add(src)
        if node.op is Ops.COPY and not is_loaded(node.src[0]) and \
                node.src[0].op is not Ops.BUFFER:
            out.add(node.src[0])  # a copy moves a buffer: what it copies is computed first
    for node in [n for n in order if n in out and n.op is Ops.REDUCE and n not in wanted]:
        out.discard(node)
        if fused_into_one_store(node, users, out, is_loaded) is None:
            out.add(stored_as_read(node, users, wanted))
    return out


def fused_into_one_store(reduce: UOp, users: dict[UOp, list[UOp]], stored: set[UOp],
                         is_loaded: Callable[[UOp], bool]) -> UOp | None:
    """The one stored node that every use of reduce's value reaches, through elementwise ops
    and reshapes alone, before any other view or op: then the reduce need not be stored, it is
    computed once, in that node's kernel. (A feed-forward layer's GELU, stored because the next
    matmul reads it through an expand, took its matmul with it: stored too, the matmul was a
    kernel and the GELU another that read it back, 6% of an all-MiniLM-L6-v2 batch.) None
    when some use reaches anything else, or two stored nodes (two kernels would each compute
    the reduce), or when that node's kernel would hold another reduce as well (a gated
    feed-forward layer's two matmuls)."""
    reached: set[UOp] = set()
    frontier, seen = list(users.get(reduce, [])), set()
    while frontier:
        user = frontier.pop()
        if user in seen:
            continue
        seen.add(user)
        if user in stored and is_elementwise(user):
            reached.add(user)
        elif user.op in ALU or user.op in (Ops.RESHAPE, Ops.DETACH):
            frontier.extend(users.get(user, []))
        else:
            return None
    if len(reached) != 1:
        return None
    (store,) = reached

    def kernel_input(node: UOp) -> bool:
        return node is not store and (node in stored or is_loaded(node))
    computed = [n for n in store.toposort(stop=kernel_input) if not kernel_input(n)]
    return store if [n for n in computed if n.op is Ops.REDUCE] == [reduce] else None


def is_elementwise(node: UOp) -> bool:
    """An elementwise op, or a DETACH that passes one on with a gradient override (exp's,
    log's): the value a kernel would store is the DETACH's."""
    return node.op in ALU or node.op is Ops.DETACH and len(node.src) > 1


def computed_sources(node: UOp) -> tuple[UOp, ...]:
    """The sources node's value is computed from: a DETACH passes on its first only (the others
    are a gradient override's inputs, there for the backward pass)."""
    return node.src[:1] if node.op is Ops.DETACH else node.src


# --- building one kernel: the graph above the materialized nodes, with views pushed to leaves ---
@dataclass
class _KernelBuilder:
    root: UOp
    is_input: Callable[[UOp], bool]
    splits: dict[UOp, Split] = field(default_factory=dict)  # reduces made of partials
    inputs: list[UOp] = field(default_factory=list)
    memo: dict[UOp, UOp] = field(default_factory=dict)
    reduces: dict[UOp, UOp | None] = field(default_factory=dict)  # expr -> the reduce inside
    origin: dict[UOp, UOp] = field(default_factory=dict)  # a kernel REDUCE -> its graph node
    computed: list[UOp] = field(default_factory=list)  # the graph's REDUCEs built in

    def reduce_of(self, expr: UOp) -> UOp | None:
        """The REDUCE inside a kernel expression, if any (kernels hold at most one)."""
        if expr not in self.reduces:
            if expr.op is Ops.REDUCE:
                found: UOp | None = expr
            elif all(s in self.reduces for s in expr.src):  # built bottom-up: usually known
                found = next((r for s in expr.src if (r := self.reduces[s]) is not None), None)
            else:
                found = find_reduce(expr)
            self.reduces[expr] = found
        return self.reduces[expr]

    def has_reduce(self, expr: UOp) -> bool:
        return self.reduce_of(expr) is not None

    def graph_reduce(self, expr: UOp) -> UOp:
        """The graph's REDUCE node that the reduce inside a kernel expression was built from."""
        found = self.reduce_of(expr)
        assert found is not None
        return self.origin[found]

    def load(self, node: UOp) -> UOp:
        if node not in self.inputs:
            self.inputs.append(node)
        view = UOp(Ops.VIEW, dtypes.bool, (), ShapeTracker.from_shape(node.shape))
        return UOp(Ops.LOAD, node.dtype, (view,), self.inputs.index(node) + 1)

    def build(self, node: UOp) -> UOp:
        """The kernel expression for node, in node.shape (or, above the reduce, in the reduce's
        shape, which has the same row-major order). Sources first, without recursion."""
        stack: list[tuple[UOp, bool]] = [(node, False)]
        while stack:
            current, sources_done = stack.pop()
            if current in self.memo:
                continue
            stops = (current is not self.root and self.is_input(current)) or \
                current.op is Ops.CONST
            if sources_done or stops or not current.src:
                self.memo[current] = self._build(current)
                self.reduce_of(self.memo[current])
            else:
                stack.append((current, True))
                stack.extend((s, False) for s in self.sources(current) if s not in self.memo)
        return self.memo[node]

    def sources(self, node: UOp) -> tuple[UOp, ...]:
        """What node's expression is built from: a split reduce's stored partials, not its
        graph source (split_reduce.py); otherwise computed_sources."""
        return (self.splits[node].partials,) if node in self.splits else computed_sources(node)

    def _build(self, node: UOp) -> UOp:
        if node is not self.root and self.is_input(node):
            return self.load(node)
        if node.op is Ops.CONST:
            view = UOp(Ops.VIEW, dtypes.bool, (), ShapeTracker.from_shape(()))
            return UOp(Ops.CONST, node.dtype, (view,), node.arg)
        if node.op in (Ops.DETACH, Ops.CONTIGUOUS):
            return self.build(node.src[0])
        if node.op in MOVEMENT:
            return self.move(self.build(node.src[0]), node)
        if node.op is Ops.REDUCE:
            split = self.splits.get(node)  # (a split one: a reduce of its stored partials)
            inner = self.build(self.sources(node)[0])
            if self.has_reduce(inner):  # one reduce per kernel: the inner one is stored first
                raise NeedsBuffer(self.graph_reduce(inner))
            arg = node.arg if split is None else (node.arg[0], (split.axis,))
            reduce = UOp(Ops.REDUCE, node.dtype, (inner,), arg)
            self.origin.setdefault(reduce, node)
            self.computed.append(node)
            return reduce
        if node.op in ALU:
            srcs = [self.build(s) for s in node.src]
            with_reduce = [i for i, s in enumerate(srcs) if self.has_reduce(s)]
            for i in with_reduce[1:]:  # one reduce per kernel: a second one is stored first
                if self.reduce_of(srcs[i]) is not self.reduce_of(srcs[with_reduce[0]]):
                    raise NeedsBuffer(self.graph_reduce(srcs[i]))
            shape = next((s.shape for s in srcs if self.has_reduce(s)), srcs[0].shape)
            srcs = [s if s.shape == shape else reshape_leaves(s, shape) for s in srcs]
            return UOp(node.op, node.dtype, tuple(srcs), node.arg)
        raise NotImplementedError(f"cannot put {node.op} in a kernel")

    def move(self, expr: UOp, node: UOp) -> UOp:
        """Apply a movement op to an expression by applying it to the view of every leaf."""
        if self.has_reduce(expr):
            if node.op is Ops.PERMUTE and node is self.root:
                return expr  # stored permuted: the store's view reorders it (store_view)
            if node.op is not Ops.RESHAPE:  # an expand or a slice would recompute the reduce
                raise NeedsBuffer(self.graph_reduce(expr))
            return expr  # keep the reduce's shape: a reshape keeps the row-major order
        if node.op is Ops.PAD and expr.op not in (Ops.LOAD, Ops.CONST):
            raise NeedsBuffer(node.src[0])  # the padding must read 0, not f(0)
        return map_views(expr, lambda st: apply_movement(st, node))


    def store_view(self, expr: UOp) -> ShapeTracker:
        """Where the kernel stores each element of expr in the root's buffer: in row-major
        order, or, for a root permute above the reduce (stored_as_read), through the inverse
        of the permutes and reshapes between the root and the expression's shape."""
        if self.root.op is not Ops.PERMUTE or not self.has_reduce(expr):
            return ShapeTracker.from_shape(expr.shape)
        st, node = ShapeTracker.from_shape(self.root.shape), self.root
        while node.op in (Ops.PERMUTE, Ops.RESHAPE):
            src = node.src[0]
            st = st.reshape(src.shape) if node.op is Ops.RESHAPE else \
                st.permute(inverse_permutation(node.arg))
            node = src
        return st if st.shape == expr.shape else st.reshape(expr.shape)


class NeedsBuffer(Exception):
    """Raised while building a kernel when a node turns out to need a buffer of its own."""

    def __init__(self, node: UOp):
        super().__init__(f"{node.op} needs a buffer")
        self.node = node




def apply_movement(st: ShapeTracker, node: UOp) -> ShapeTracker:
    """The view st followed by one movement op: how a movement op reaches a leaf's view."""
    # >>> exercise 04.push_views #pushing-views-to-the-leaves
    op, arg = node.op, node.arg
    if op is Ops.RESHAPE:
        return st.reshape(arg)
    if op is Ops.PERMUTE:
        return st.permute(arg)
    if op is Ops.EXPAND:
        return st.expand(arg)
    if op is Ops.PAD:
        return st.pad(arg)
    if op is Ops.SHRINK:
        return st.shrink(arg)
    return st.flip(arg)
    # <<< exercise


def map_views(expr: UOp, fn: Callable[[ShapeTracker], ShapeTracker]) -> UOp:
    """The expression with every VIEW's ShapeTracker replaced by fn of it."""
    done: dict[UOp, UOp] = {}
    for node in expr.toposort():
        if node.op is Ops.VIEW:
            done[node] = UOp(Ops.VIEW, node.dtype, (), fn(node.arg))
        else:
            done[node] = UOp(node.op, node.dtype, tuple(done[s] for s in node.src), node.arg)
    return done[expr]


def reshape_leaves(expr: UOp, shape: tuple[int, ...]) -> UOp:
    return map_views(expr, lambda st: st.reshape(shape))


def kernel_name(ast: UOp) -> str:
    """E_ for elementwise kernels, r_ for reducing ones, then the sizes of the loops."""
    reduce = find_reduce(ast)
    shape = reduce.src[0].shape if reduce is not None else ast.shape
    return ("r_" if reduce is not None else "E_") + "_".join(str(s) for s in shape or (1,))


def create_schedule(targets: list[UOp], is_loaded: Callable[[UOp], bool]) -> list[ScheduleItem]:
    """The kernels (and copies) that compute targets, each after the ones it reads from. A
    long reduce of few outputs is computed from partial results stored first (split_reduce.py).
    """
    materialized = find_materialized(targets, is_loaded)
    seen: set[UOp] = set()
    splits = splits_below([node for t in targets for node in t.toposort(stop=is_loaded,
                                                                        seen=seen)
                           if not is_loaded(node)])
    materialized |= {split.partials for split in splits.values()}
    while True:
        items, extra, computed = _build_items(targets, materialized, is_loaded, splits)
        if not extra:  # every kernel was built: is some reduce computed by more than one?
            extra = {r for r in computed if computed[r] > 1}
        if not extra:
            return items
        materialized |= extra


def _build_items(targets: list[UOp], materialized: set[UOp], is_loaded: Callable[[UOp], bool],
                 splits: dict[UOp, Split]
                 ) -> tuple[list[ScheduleItem], set[UOp], dict[UOp, int]]:
    """One try at the kernels: the items, the nodes found to need a buffer of their own, and
    how many kernels compute each REDUCE of the graph (a split one's partials just before it).
    """
    def is_input(n: UOp) -> bool:
        return n in materialized or is_loaded(n) or n.op is Ops.BUFFER
    items: list[ScheduleItem] = []
    done: set[UOp] = set()
    extra: set[UOp] = set()
    computed: dict[UOp, int] = {}
    def in_order(target: UOp) -> Iterator[UOp]:
        for node in target.toposort(stop=is_loaded):
            if node in splits:
                yield splits[node].partials
            yield node
    for target in targets:
        for node in in_order(target):
            if node in done or node not in materialized:
                continue
            done.add(node)
            if node.op is Ops.COPY:
                items.append(ScheduleItem(None, node, (node.src[0],), f"copy {node.numel}"))
                continue
            builder = _KernelBuilder(node, is_input, splits)
            try:
                expr = builder.build(node)
            except NeedsBuffer as found:
                extra.add(found.node)
                continue
            if len(builder.inputs) + 1 > max_buffers(node.device):
                extra.add(split_point(node, is_input))  # too many buffers for the device
                continue
            for reduce in dict.fromkeys(builder.computed):
                computed[reduce] = computed.get(reduce, 0) + 1
            view = UOp(Ops.VIEW, dtypes.bool, (), builder.store_view(expr))
            ast = UOp(Ops.STORE, node.dtype, (view, expr), 0)
            items.append(ScheduleItem(ast, node, tuple(builder.inputs), kernel_name(ast)))
    return items, extra, computed


def max_buffers(device: str) -> int:
    """The most buffers (output and inputs) one kernel may bind on the device, as its renderer
    says (Renderer.max_buffers: WEBGPU's max_storage_buffers_per_shader_stage); no limit
    where it says None."""
    limit = Device[device].renderer.max_buffers
    return limit if limit is not None else 1 << 30


def split_point(root: UOp, is_input: Callable[[UOp], bool]) -> UOp:
    """The node of root's kernel to compute into a buffer of its own, so that the kernel reads
    fewer buffers: the one with the most of the kernel's inputs below it (they become its own
    kernel's, and this kernel reads its one buffer instead). NotSupportedError if there is none
    (a single node reading that many buffers)."""
    below: dict[UOp, frozenset[UOp]] = {}
    order = root.toposort(stop=lambda n: n is not root and is_input(n))
    for node in order:
        if node is not root and is_input(node):
            below[node] = frozenset({node})
        else:
            below[node] = frozenset().union(*(below[s] for s in computed_sources(node)
                                              if s in below))
    inside = [n for n in order if n is not root and not is_input(n) and len(below[n]) > 1
              and n.op not in MOVEMENT]
    if not inside:
        raise NotSupportedError(f"a kernel reads {len(below[root])} buffers, more than "
                                f"{root.device} can bind, and cannot be split")
    return max(inside, key=lambda n: len(below[n]))
