"""The optimizations a kernel gets by default: a few readable rules per kind of device (tinygrad's
hand_coded_optimizations is the model). Each rule is a function that looks at the kernel as the
rules before it left it and returns the optimization it adds, or None."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

from tinyfw.codegen.kernel import AxisKind, Kernel
from tinyfw.codegen.lower import accumulator_dtype
from tinyfw.codegen.lower_opts import lane_stride, vector_axis
from tinyfw.codegen.opt import KernelOptError, Opt, OptOps, apply_opt, apply_opts, applies
from tinyfw.dtype import dtypes
from tinyfw.helpers import prod
from tinyfw.shape.symbolic import Var
from tinyfw.uop.ops import ALU, Ops

MAX_REGISTERS = 64       # float32 accumulators of a tile on AVX2: 8 of its 16 registers
THREAD_WORK = 1 << 17    # loop iterations below which starting the other cores costs more
BODY_OPS = 8             # arithmetic ops of a cheap loop body (thread_the_outer_axis's work)
UPCAST_OUTPUTS = 1024    # outputs below which a kernel is too small to tile
# The big tile of a big matmul, per SIMD width in float32 lanes: the fewest outputs it pays
# from, then its rows, its columns by a vector's lanes and by `more` vectors (1: one), how
# many partial sums its reduce is unrolled into (1: not unrolled), and the length of its
# reduce's panels (0: none).
BIG_TILES = {8: (1 << 18, 4, 8, 2, 1, 64), 16: (1 << 20, 8, 16, 2, 1, 128)}
# Accumulators of register_tile's tile per SIMD width, where it applies (32 registers: AVX-512),
# and where the second matrix is unpacked from bytes in the kernel (each vector unpacked then
# serves more rows: 48 x 576 x 3072 with 4-bit weights 1.19-1.26 ms in 8 x 3 vectors against
# 1.24-1.45 in 8 x 2, `bench.matmul_kernel 48 576 3072 --q4_1`, bench/README.md)
REGISTER_TILE = {16: 20}
REGISTER_TILE_BYTES = {16: 24}
REGISTER_TILE_ROWS = (8, 6, 5, 4, 3, 2, 1)  # the rows it tries, the first that divides
CHANNELS_WORK = 1 << 16  # iterations below which a kernel keeps its channels as loops
DOT_TILE = (8, 1)        # rows by columns of vector partial sums when the reduce is contiguous
QUANT_ROWS = 4           # rows of quantized weights a pass (quantized_dot_tile)
ROW_PANEL = 8            # rows of the matrix a batch-1 product reads together (_lone_row_tile)
ROW_PANEL_FROM = 1 << 21 # the matrix's elements (8 MiB of float32) from which it does so
FEW_OUTPUTS = 1024       # outputs up to which a GPU reduce is shared by a work-group (a guess)
GROUP_LOOP = 256         # the shortest reduce loop that is shared so


def iterations(kernel: Kernel) -> int:
    """How many times the kernel's innermost statement runs: its work."""
    return prod(a.size for a in kernel.axes)


def few_outputs(kernel: Kernel) -> bool:
    """Whether a kernel is too small to tile: fewer than UPCAST_OUTPUTS outputs, unless each
    takes a long reduce (a matrix-vector product of few columns: its work is a tile's)."""
    return prod(kernel.output_shape) < UPCAST_OUTPUTS and iterations(kernel) < THREAD_WORK


def load_indices(kernel: Kernel) -> list[set[str]]:
    """For each load of the kernel, the loop variables its address depends on."""
    names = [f"x{i}" for i in range(len(kernel.axes))]
    idxs = [Var(n, 0, max(a.size - 1, 0)) for n, a in zip(names, kernel.axes)]
    return [node.src[0].arg.to_indexed(idxs)[0].vars() for node in kernel.ast.toposort()
            if node.op is Ops.LOAD]


def shared_axes(kernel: Kernel) -> list[int]:
    """The output loops that some load does not depend on (a matmul's rows and columns): an
    upcast of one of them reads that load once for several outputs."""
    loads = load_indices(kernel)
    return [i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.GLOBAL
            and any(f"x{i}" not in used for used in loads)]


def big_matmul_tile(kernel: Kernel, lanes: int) -> tuple[Opt, ...]:
    """A big matmul (BIG_TILES says from how many outputs) computes a big tile of outputs per
    pass: each element of the first matrix read serves a row of the tile, each of the second
    a column, and its reduce runs in panels (PANEL, the panels' loop outermost): the second
    matrix's rows of one panel stay in the core's L2 while every row block of the first goes
    by, where without panels each block streamed all of the second from L3. With 16 lanes
    (AVX-512) the tile is 8 rows by two vectors of 16, 16 of the 32 registers, in panels of
    128 (512 KiB at 1024 columns): on a 2-core AMD EPYC (Zen 4) at 1024 x 1024, 128 to 153
    GFLOP/s against 76 to 83 for the 16 rows by one vector it had before (`python -m
    bench.tiles --n 1024`): 16 rows 4 KiB apart fall into the same sets of its 8-way L1,
    8 do not. (That 16 x 16 tile gave 220 GFLOP/s on a 2-core Xeon, whose L1 is 12-way; the
    8 x 32 tile is not timed there yet.) With 8 lanes (AVX2) it is 4 rows by two vectors of 8,
    8 of the 16 registers, in panels of 64 (256 KiB at 1024 columns: half an EPYC core's L2):
    built for AVX2 on that Xeon (CPU_MARCH=x86-64-v3), 155 GFLOP/s at 1024 x 1024 against 69
    for the 8 x 32 tile BEAM had found before fused multiply-adds (bench/tiles.py). () when
    the kernel is not such a matmul."""
    if lanes not in BIG_TILES:
        return ()
    least, rows, cols, more, unroll, panel = BIG_TILES[lanes]
    shared = shared_axes(kernel)
    if kernel.reduce is None or prod(kernel.output_shape) < least or \
            len(shared) != 2 or kernel.axes[shared[0]].size % rows or \
            kernel.axes[shared[1]].size % (cols * more) or not outputs_vectorize(kernel, lanes):
        return ()
    opts: tuple[Opt, ...] = (Opt(OptOps.UPCAST, shared[1], cols),
                             Opt(OptOps.UPCAST, shared[0], rows))
    if more > 1:
        opts += (Opt(OptOps.UPCAST, shared[1] + 1, more),)
    try:
        tiled = apply_opts(kernel, opts)
    except KernelOptError:
        return ()
    reduce = next(i for i, a in enumerate(tiled.axes) if a.kind is AxisKind.REDUCE)
    panels = Opt(OptOps.PANEL, reduce, panel)
    if panel and tiled.axes[reduce].size % panel == 0 and tiled.axes[reduce].size > panel and \
            applies(tiled, panels):  # (not where an op follows the sum: a fused GELU)
        opts += (panels,)
        reduce += 1  # (the panels' loop comes first)
    if unroll > 1 and tiled.axes[reduce].size % unroll == 0:
        opts += (Opt(OptOps.UNROLL, reduce, unroll),)
    return opts


def register_tile(kernel: Kernel, lanes: int) -> tuple[Opt, ...]:
    """A matmul that big_matmul_tile leaves (rows no multiple of its 16, or too few outputs:
    a prompt's tokens times a weight, a batch-1 product) computes a tile of up to
    REGISTER_TILE accumulator vectors per pass: the most rows of REGISTER_TILE_ROWS that
    divide its rows, by as many vectors of columns as fit (1 row: 8 vectors, each row of the
    second matrix read as 512 bytes in a row, not one cache line of it per row). Its loop over
    the column tiles runs outside the one over the row tiles where the second matrix is the
    bigger (a prompt times a weight: each strip of columns is read once and stays in the
    cache while all the rows go by), and the outer loop is shared out to the cores. On
    AVX-512 (32 registers) only: 100 x 576 x 49152 went from 36 to 144 GFLOP/s and 32 x 576 x
    1536 from 78 to 136 on a 2-core AMD EPYC (bench.matmul), against the 4 x 2-vector tile
    of the rules below. The same for a product whose second matrix is unpacked from bytes in
    the kernel (gguf.split_linear: 4-bit weights), with REGISTER_TILE_BYTES accumulators, and
    for one of few outputs but a long reduce (few_outputs). () when the kernel is not such a
    matmul."""
    if lanes not in REGISTER_TILE or kernel.reduce is None or \
            few_outputs(kernel) or not outputs_vectorize(kernel, lanes, integers=True):
        return ()
    shared = [i for i in shared_axes(kernel) if kernel.axes[i].size > 1]  # (a batch of 1: no)
    if len(shared) == 1:  # one row: a batch-1 product
        return _lone_row_tile(kernel, shared[0], lanes)
    if len(shared) != 2:
        return ()
    row_axis, column_axis = shared
    rows, vectors = kernel.axes[row_axis].size, kernel.axes[column_axis].size // lanes
    if kernel.axes[column_axis].size % lanes:
        return ()
    tile_rows = next(r for r in REGISTER_TILE_ROWS if rows % r == 0)
    unpacks = any(n.op is Ops.LOAD and n.dtype in (dtypes.uint8, dtypes.int8)
                  for n in kernel.ast.toposort())
    budget = (REGISTER_TILE_BYTES if unpacks else REGISTER_TILE)[lanes]
    tile_vectors = next(v for v in range(max(budget // tile_rows, 1), 0, -1)
                        if vectors % v == 0)
    opts = [Opt(OptOps.UPCAST, column_axis, lanes)]  # (axes after column_axis move on by one)
    if tile_vectors > 1:
        opts.append(Opt(OptOps.UPCAST, column_axis, tile_vectors))
    if tile_rows > 1:
        opts.append(Opt(OptOps.UPCAST, row_axis, tile_rows))
    try:
        tiled = apply_opts(kernel, tuple(opts))
    except KernelOptError:
        return ()
    # (the rows' upcast, after the columns', put its axis after row_axis: one more before
    # the columns' outer loop)
    outer_rows, outer_columns = row_axis, column_axis + (1 if tile_rows > 1 else 0)
    if read_again(tiled, outer_rows) > read_again(tiled, outer_columns) and \
            tiled.axes[outer_rows].size > 1 and tiled.axes[outer_columns].size > 1:
        opts.append(Opt(OptOps.SWAP, outer_rows, outer_columns))
    return tuple(opts)


def _lone_row_tile(kernel: Kernel, column_axis: int, lanes: int) -> tuple[Opt, ...]:
    """register_tile of a product with one row: 8 vectors of its columns a pass (or 4, 2, 1:
    the most that divide them). A float matrix is read ROW_PANEL rows at a time (PANEL, the
    partial sums kept in the output between panels): each pass over the columns streams 8
    rows of the matrix, where one over all its rows would read 512 bytes of each, a page
    apart, more streams than the prefetchers follow: 1 x 576 x 49152 took 3.1 ms, not 7.2
    (bench/README.md). Only for a matrix of ROW_PANEL_FROM elements or more: one that the
    caches hold (1 x 576 x 1536) gained nothing."""
    size = kernel.axes[column_axis].size
    if size % lanes:
        return ()
    tile_vectors = next(v for v in (8, 4, 2, 1) if (size // lanes) % v == 0)
    opts: tuple[Opt, ...] = (Opt(OptOps.UPCAST, column_axis, lanes),)
    if tile_vectors > 1:
        opts += (Opt(OptOps.UPCAST, column_axis, tile_vectors),)
    reduces = [i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.REDUCE]
    unpacks = any(n.op is Ops.LOAD and n.dtype in (dtypes.uint8, dtypes.int8)
                  for n in kernel.ast.toposort())
    if len(reduces) == 1 and not unpacks and kernel.axes[reduces[0]].size > ROW_PANEL and \
            iterations(kernel) >= ROW_PANEL_FROM:
        panel = Opt(OptOps.PANEL, reduces[0], ROW_PANEL)
        if applies(apply_opts(kernel, opts), panel):
            opts += (panel,)
    return opts


def read_again(kernel: Kernel, axis: int) -> int:
    """The elements of the loads that do not depend on loop `axis`: what each of its
    iterations reads again, if it runs outside the others."""
    sizes = [a.size for a in kernel.axes]
    return sum(prod(sizes[int(v[1:])] for v in used) for used in load_indices(kernel)
               if f"x{axis}" not in used)


def dot_product_tile(kernel: Kernel, lanes: int) -> tuple[Opt, ...]:
    """A matmul whose loads all walk memory along the reduce, as `x @ w.T` does (a Linear
    layer's forward pass), has no output loop along which a load reads consecutive elements,
    so its tile cannot be vectors of outputs. Its vectors hold partial sums instead: the reduce
    unrolled by a SIMD register's lanes, and a tile of DOT_TILE rows by columns of such
    accumulators, each load of a row used for every column and the other way round; the lanes
    are added together after the loop. () when the kernel is not such a matmul, or when the
    rules below would vectorize it anyway."""
    shared = shared_axes(kernel)
    reduces = [i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.REDUCE]
    if kernel.reduce is None or len(shared) != 2 or not reduces or \
            prod(kernel.output_shape) < UPCAST_OUTPUTS:
        return ()
    if outputs_vectorize(kernel, lanes):
        return ()
    (rows, cols), inner = DOT_TILE, reduces[-1]
    splits = {shared[0]: (OptOps.UPCAST, rows), shared[1]: (OptOps.UPCAST, cols),
              inner: (OptOps.UNROLL, lanes)}
    splits = {i: split for i, split in splits.items() if split[1] > 1}
    if any(kernel.axes[i].size % amount or kernel.axes[i].size <= amount
           for i, (_, amount) in splits.items()):
        return ()
    # the last axis first: a split inserts an axis after the one it splits
    opts = tuple(Opt(op, i, amount) for i, (op, amount) in sorted(splits.items(), reverse=True))
    try:
        tiled = apply_opts(kernel, opts)
    except KernelOptError:
        return ()
    unrolled = next(i for i, a in enumerate(tiled.axes) if a.kind is AxisKind.UNROLL)
    return opts if vector_axis(tiled, lanes) == unrolled else ()


def quantized_dot_tile(kernel: Kernel, lanes: int) -> tuple[Opt, ...]:
    """A matmul of quantized weights (tinyfw/models/gguf.py: x times 4- or 8-bit integers of
    blocks of 32, each block's float16 scale decoded in the kernel) reads bytes, so the float32
    tiles above do not apply. Its vectors hold partial sums along a block: the innermost reduce
    loop unrolled by the lanes (16 bytes of a Q4_1 block, or 16 of a Q8_0 block's 32, loaded
    as one vector and made float32 there: lower_opts.bytes_in_lanes), the other short reduce
    loops inside a block (Q4_1's two halves of a byte, Q8_0's two halves of a block) unrolled
    whole, and QUANT_ROWS rows of weights a pass, each vector of x loaded once for them all. A
    block's scales are the same for its lanes: decoded once per block and row, as scalars.
    () when the kernel is not such a matmul."""
    shared = [i for i in shared_axes(kernel) if kernel.axes[i].size > 1]
    reduces = [i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.REDUCE]
    if kernel.reduce is None or len(shared) != 1 or len(reduces) < 2 or \
            all(n.dtype == dtypes.float32 for n in kernel.ast.toposort() if n.op is Ops.LOAD):
        return ()
    inner, rows = reduces[-1], shared[0]
    width = min(lanes, kernel.axes[inner].size)
    if kernel.axes[inner].size % width or kernel.axes[rows].size % QUANT_ROWS or \
            kernel.axes[rows].size <= QUANT_ROWS:
        return ()
    opts: tuple[Opt, ...] = (Opt(OptOps.UNROLL, inner, width),)
    # then, the last first (a split shifts the loops after it): what is left of the innermost
    # loop (a short loop before the lanes), and the loops between it and the blocks' loop
    short = [inner] if kernel.axes[inner].size > width else []
    for i in short + list(reversed(reduces[1:-1])):
        size = kernel.axes[i].size // (width if i == inner else 1)
        if 1 < size <= 4:
            opts += (Opt(OptOps.UNROLL, i, size),)
    opts += (Opt(OptOps.UPCAST, rows, QUANT_ROWS),)
    try:
        tiled = apply_opts(kernel, opts)
    except KernelOptError:
        return ()
    unrolled = [i for i, a in enumerate(tiled.axes) if a.kind is AxisKind.UNROLL]
    return opts if vector_axis(tiled, lanes, integers=True) == unrolled[-1] else ()


def outputs_vectorize(kernel: Kernel, lanes: int, integers: bool = False) -> bool:
    """Whether the kernel's outputs can be computed a vector at a time (upcast_a_vector): a
    shared output loop along which every load reads consecutive elements or one for all;
    integers: some of them bytes, made float32 in the lanes (lower_opts.bytes_in_lanes)."""
    usual = upcast_a_vector(kernel, lanes)
    return usual is not None and \
        vector_axis(apply_opt(kernel, usual), lanes, integers) is not None


def upcast_a_vector(kernel: Kernel, lanes: int) -> Opt | None:
    """A kernel that reduces (a matmul) computes a tile of outputs per pass. First, the
    innermost shared output loop is upcast by a SIMD register's lanes: its outputs are stored
    side by side, so they become one vector (lower_opts.vector_axis), and a load it shares is
    read once for all of them. Not where those outputs are no vector but the reduce's loads
    are consecutive (attention's scores, q times each key): unroll_the_reduce then makes the
    vectors, of partial sums."""
    if kernel.reduce is None or few_outputs(kernel) or \
            any(a.kind is AxisKind.UPCAST for a in kernel.axes):
        return None
    shared = shared_axes(kernel)
    if not shared or kernel.axes[shared[-1]].size % lanes or \
            kernel.axes[shared[-1]].size <= lanes:
        return None
    upcast = Opt(OptOps.UPCAST, shared[-1], lanes)
    if vector_axis(apply_opt(kernel, upcast), lanes) is None and \
            (unroll := unroll_the_reduce(kernel, lanes)) is not None and \
            vector_axis(apply_opt(kernel, unroll), lanes) is not None:
        return None
    return upcast


def upcast_the_other_axis(kernel: Kernel, lanes: int) -> Opt | None:
    """Then another shared output loop (a matmul's rows) by 4: 4 vectors of outputs per pass,
    each load of the other matrix used 4 times; and, if the tile still holds few accumulators,
    the vector's loop by 2 more (a 4 x 2-vector tile: 8 of the 16 registers of AVX2)."""
    upcast = [a.size for a in kernel.axes if a.kind is AxisKind.UPCAST]
    if kernel.reduce is None or len(upcast) != 1 or upcast[0] != lanes:
        return None
    vector = next(i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.UPCAST)
    others = [i for i in shared_axes(kernel) if i != vector - 1]
    for i in reversed(others):
        if kernel.axes[i].size % 4 == 0 and kernel.axes[i].size > 4:
            return Opt(OptOps.UPCAST, i, 4)
    return None


def widen_the_tile(kernel: Kernel, lanes: int) -> Opt | None:
    """A tile of 4 rows gets its vector's loop upcast by 2 more (4 x 2 vector accumulators),
    where the loop divides: more outputs per load of the rows."""
    upcast = [i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.UPCAST]
    if kernel.reduce is None or len(upcast) != 2 or \
            any(a.kind is AxisKind.UNROLL for a in kernel.axes):
        return None
    vector = upcast[-1]  # (its outer part, the loop before it, is split again)
    outer = vector - 1
    if kernel.axes[outer].kind is not AxisKind.GLOBAL or kernel.axes[outer].size % 2 or \
            kernel.axes[outer].size <= 2 or \
            prod(kernel.axes[i].size for i in upcast) * 2 > MAX_REGISTERS * lanes // 8:
        return None
    return Opt(OptOps.UPCAST, outer, 2)


def upcast_the_channels(kernel: Kernel, lanes: int) -> Opt | None:
    """A reduce with no vector tile (a convolution: its loops are 3 x 3 windows and images of
    11 or 26 pixels, no multiple of the lanes) upcasts a short output loop (16 or less) that
    loads do not depend on, whole: its channels, or its window. Of those, the one that the
    most loads do not depend on (each such load is then read once for all of its outputs),
    the longest of them first; applied again while the tile fits (`tile_fits`). BEAM=2 found
    such tiles for the convolutions of examples/mnist.py. Not for a kernel of fewer than
    CHANNELS_WORK iterations: too small to gain from it."""
    if kernel.reduce is None or any(a.kind is AxisKind.UNROLL for a in kernel.axes) or \
            iterations(kernel) < CHANNELS_WORK:
        return None
    upcast = prod(a.size for a in kernel.axes if a.kind is AxisKind.UPCAST)
    if upcast > 1 and vector_axis(kernel, lanes) is not None:
        return None  # (a vector tile already)
    short = [i for i in shared_axes(kernel) if 2 <= kernel.axes[i].size <= 16
             and tile_fits(apply_opt(kernel, Opt(OptOps.UPCAST, i, kernel.axes[i].size)),
                           lanes)]
    if not short:
        return None
    loads = load_indices(kernel)

    def shared_loads(i: int) -> int:
        return sum(f"x{i}" not in used for used in loads)
    best = max(reversed(short), key=lambda i: (shared_loads(i), kernel.axes[i].size))
    return Opt(OptOps.UPCAST, best, kernel.axes[best].size)


def tile_fits(kernel: Kernel, lanes: int) -> bool:
    """Whether a tile's accumulators fit: MAX_REGISTERS * 2 floats as vectors (a
    convolution's input gradient, 13 columns times 8 channels read as one vector: 13
    registers), MAX_REGISTERS as scalars (its weight gradient: 16 x 8 scalars, twice as slow
    as 16 x 3 by `bench.kernels --model conv`; bench/README.md)."""
    upcast = prod(a.size for a in kernel.axes if a.kind is AxisKind.UPCAST)
    vector = vector_axis(kernel, lanes) is not None
    return upcast <= (MAX_REGISTERS * 2 if vector else MAX_REGISTERS)


def unroll_the_reduce(kernel: Kernel, lanes: int) -> Opt | None:
    """The innermost reduce loop, unless a tile of outputs already holds enough accumulators,
    is unrolled into partial sums: by a SIMD register's lanes where its loads walk memory
    one element at a time (a vector of partial sums, lower_opts.vector_axis), else by 4.
    Independent adds the processor runs at once, and a float sum rounded in shorter chains."""
    reduces = [i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.REDUCE]
    if not reduces or any(a.kind is AxisKind.UNROLL for a in kernel.axes):
        return None
    upcast = prod(a.size for a in kernel.axes if a.kind is AxisKind.UPCAST)
    inner = reduces[-1]
    size = kernel.axes[inner].size
    if upcast >= 16:
        return None
    as_vector = Opt(OptOps.UNROLL, inner, lanes)
    if size % lanes == 0 and size >= 2 * lanes and \
            vector_axis(apply_opt(kernel, as_vector), lanes) == inner + 1:
        return as_vector
    amount = 4
    if size % amount or size < 2 * amount:
        return None
    return Opt(OptOps.UNROLL, inner, amount)


def unroll_the_vector_more(kernel: Kernel, lanes: int) -> Opt | None:
    """A reduce unrolled into a vector of partial sums is unrolled by 4 more: 4 vectors of
    them, independent adds in flight while each waits for the one before."""
    unrolled = [i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.UNROLL]
    if len(unrolled) != 1 or unrolled[0] == 0 or vector_axis(kernel, lanes) != unrolled[0]:
        return None
    outer = unrolled[0] - 1
    if kernel.axes[outer].kind is not AxisKind.REDUCE or kernel.axes[outer].size % 4 or \
            kernel.axes[outer].size < 8:
        return None
    return Opt(OptOps.UNROLL, outer, 4)


def tile_a_transposed_read(kernel: Kernel, lanes: int) -> Opt | None:
    """An elementwise kernel that reads a transposed matrix (a gradient stored the other way
    round) walks it a column at a time, a cache line per element. Its output loop along which
    that load reads consecutive elements is upcast by a SIMD register's lanes: each pass reads
    `lanes` neighbours of the transposed matrix and writes them into as many rows. Not for a
    load that the last loop does not move (a value per row: softmax's maximum and sum, a
    causal mask's query positions): the last loop, vectorized by the compiler, reads it once."""
    outputs = [i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.GLOBAL]
    if kernel.reduce is not None or len(outputs) < 2 or \
            prod(kernel.output_shape) < UPCAST_OUTPUTS or \
            any(a.kind is AxisKind.UPCAST for a in kernel.axes):
        return None
    views = [node.src[0].arg for node in kernel.ast.toposort() if node.op is Ops.LOAD]
    for i in outputs[:-1]:
        if kernel.axes[i].size % lanes == 0 and kernel.axes[i].size > lanes and \
                any(lane_stride(view, i) == 1 and lane_stride(view, outputs[-1]) != 0
                    for view in views):
            return Opt(OptOps.UPCAST, i, lanes)
    return None


def ops_in(kernel: Kernel) -> int:
    """The arithmetic ops of the kernel's AST, each counted once."""
    return sum(1 for node in kernel.ast.toposort() if node.op in ALU)


def work(kernel: Kernel) -> int:
    """A kernel's work in iterations of a cheap body: its iterations, times how many times
    BODY_OPS its arithmetic ops (the AST's) are. An exp is some 40 ops: softmax's sum of
    exponentials over 32 x 12 x 12 x 12 scores is 55296 iterations but 0.38 ms on one core,
    the time 2**18 iterations of an add take."""
    return iterations(kernel) * max(1, ops_in(kernel) // BODY_OPS)


def thread_the_outer_axis(kernel: Kernel, cores: int) -> Opt | None:
    """A big kernel shares its outermost output loop out to the cores, whole (each core takes
    a block of its iterations): only past THREAD_WORK of work (iterations of a cheap body),
    where handing the other cores their parts (cpu_workers.py: a microsecond or so while they
    spin, tens when they sleep) costs less than the time they save."""
    if cores < 2 or work(kernel) < THREAD_WORK or \
            any(a.kind is AxisKind.THREAD for a in kernel.axes):
        return None
    for i, axis in enumerate(kernel.axes):
        if axis.kind is AxisKind.GLOBAL and axis.size >= cores:
            return Opt(OptOps.THREAD, i, axis.size)
    return None


def group_the_reduce(kernel: Kernel) -> Opt | None:
    """A reduce with few outputs (FEW_OUTPUTS at most) and a long last loop, on a GPU: that
    loop shared by the threads of a work-group (GROUP), about the square root of its length
    of them, 16 to 256, so that each thread's loop and the adding of the partials after the
    barrier are about as long. One thread per output would leave a GPU's thousands of threads
    idle while a few run the whole loop. The threads of a group read neighbouring elements
    at once (thread k reads k, k + threads, ...), which a GPU's memory serves in one go."""
    reduce = kernel.reduce
    loops = [i for i, a in enumerate(kernel.axes) if a.kind is AxisKind.REDUCE]
    if reduce is None or not loops or prod(kernel.output_shape) > FEW_OUTPUTS or \
            accumulator_dtype(reduce.dtype) not in (dtypes.float32, dtypes.int32):
        return None
    size = kernel.axes[loops[-1]].size
    threads = 1 << max(4, min(8, round(math.log2(max(size, 1)) / 2)))
    while threads >= 16 and size % threads:
        threads //= 2
    if size < GROUP_LOOP or threads < 16:
        return None
    return Opt(OptOps.GROUP, loops[-1], threads)


Rule = Callable[[Kernel], Opt | None]

GPU_TILE = 4  # a GPU thread's tile: 4 x 4 outputs, 16 accumulators in its registers


class Capabilities(Protocol):
    """What the rules ask of a device: its renderer's fields (tinyfw/renderer/base.py)."""
    has_threads: bool     # a thread per output element (a GPU's)
    has_workgroups: bool  # work-groups sharing local memory (GROUP)
    core_threads: bool    # THREAD loops over the cores (the CPU's C)
    vector_lanes: int     # float32s in a SIMD register (0: none)


def hand_coded_optimizations(kernel: Kernel, device: Capabilities, cores: int = 1,
                             lanes: int | None = None) -> tuple[Opt, ...]:
    """The optimizations of the kernel on a device, by what its renderer says it can do. With
    a thread per output (a GPU's: CL, CUDA, WEBGPU; PoCL's CL is a CPU, and benefits the
    same): each thread a 4 x 4 tile of a matmul's outputs (8 loads for 16 multiply-adds, where
    16 threads of one output each make 32), and a reduce unrolled into 4 partial sums; the
    thread count stays the device's to spread; with work-groups, a reduce of few outputs
    shared by a group's threads instead. With SIMD registers of `lanes` float32s (the device's
    vector_lanes unless given: the CPU): a tile of outputs per pass, unrolled reduces, and
    THREAD over `cores` where its loops can share the work out. With neither (NUMPY, which
    runs the AST as it is): none."""
    lanes = device.vector_lanes if lanes is None else lanes
    opts: list[Opt] = []
    rules: list[Rule]
    if device.has_threads:
        if device.has_workgroups and (group := group_the_reduce(kernel)) is not None:
            return (group,)  # (not combined with a tile)
        rules = [lambda k: upcast_a_vector(k, GPU_TILE),
                 lambda k: upcast_the_other_axis(k, GPU_TILE),
                 lambda k: unroll_the_reduce(k, GPU_TILE)]
    elif lanes > 0:
        # a matmul's special tile, if it is one, instead of the tile rules
        opts += big_matmul_tile(kernel, lanes) or register_tile(kernel, lanes) or \
            dot_product_tile(kernel, lanes) or quantized_dot_tile(kernel, lanes)
        kernel = apply_opts(kernel, tuple(opts))
        rules = [] if opts else [lambda k: upcast_a_vector(k, lanes),
                                 lambda k: upcast_the_other_axis(k, lanes),
                                 lambda k: widen_the_tile(k, lanes),
                                 lambda k: upcast_the_channels(k, lanes),
                                 lambda k: upcast_the_channels(k, lanes),
                                 lambda k: upcast_the_channels(k, lanes),
                                 lambda k: unroll_the_reduce(k, lanes),
                                 lambda k: unroll_the_vector_more(k, lanes),
                                 lambda k: tile_a_transposed_read(k, lanes)]
        if device.core_threads:
            rules.append(lambda k: thread_the_outer_axis(k, cores))
    else:
        return ()
    for rule in rules:
        opt = rule(kernel)
        if opt is not None:
            kernel = apply_opt(kernel, opt)
            opts.append(opt)
    return tuple(opts)
