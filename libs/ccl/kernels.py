"""The CCL library's solutions and kernels: what it tells the compiler about a `library_call ccl.*`.

Logical devices of one process share the host's memory, as the GPUs of an MI300X node share one
address space over Infinity Fabric (RCCL's P2P transport reads and writes peers' buffers). A
collective is therefore one kernel over the group's buffers, each device's operand and result its own
buffer parameter: the message's elements are the work-items, and every work-item carries its element
through all of the algorithm's steps in the algorithm's order, so the result is the algorithm's, bit
for bit, with each byte read and written once (the bandwidth a shared-memory transport allows).

  - ring all-reduce (RCCL's ring, chunked and pipelined): the message is cut into n chunks, chunk c
    reduced along the ring starting at device c + 1 and ending at device c (reduce-scatter's n - 1
    steps), then written to every device (all-gather's n - 1 steps); each chunk is further cut into
    slices of ITEMS elements, one workgroup each, which flow through the ring independently (the
    pipeline; a grid of (slices, chunks)).
  - tree all-reduce (RCCL's tree, for small messages): the operands combined pairwise, devices
    (0, 1), (2, 3), ... then the pairs' partials, log2 n levels, the root's total sent to all.
  - all_gather, reduce_scatter (the ring's halves: block d reduced from device d + 1 to d),
    broadcast, reduce (the chain from the root's successor back to the root), all_to_all, ppermute:
    one work-item per element of a block, a grid of (slices, blocks).
The device count is part of the solution's code (it is the kernel's number of buffers); the sizes are
scalar parameters, so a new message size compiles nothing.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...ir.targets import Target
from ...lowering.emit_ops import combine
from ...lowering.emitters import operand_buffers
from . import cost

ITEMS = 256   # work-items (elements of a slice) per workgroup
INDEX = "i64"


def group_size(op: Op) -> int:
    return op.attrs.get("group_size", 1)


def message_bytes(op: Op) -> int:
    t = op.operands[0].type if op.operands else op.results[0].type
    return t.size * t.numpy_dtype.itemsize


def algorithm(op: Op) -> str:
    if op.attrs["routine"] != "all_reduce":
        return "ring" if op.attrs["routine"] in ("all_gather", "reduce_scatter") else "direct"
    return cost.all_reduce_algorithm(group_size(op), message_bytes(op))


def select(op: Op, target: Target) -> str:
    routine, n = op.attrs["routine"], group_size(op)
    if routine == "all_reduce":
        name = "ring_chunked" if algorithm(op) == "ring" else "tree"
        return f"all_reduce_{name}_g{n}"
    return f"{routine}_g{n}"


def explain(op: Op, target: Target) -> tuple[str, str]:
    n, nbytes = group_size(op), message_bytes(op)
    seconds = cost.modelled_seconds(op.attrs["routine"], algorithm(op), n, nbytes)
    reason = (f"{n} devices, {nbytes} B per device; modelled on an 8 x MI300X node (Infinity Fabric "
              f"{cost.LINK_BW / 1e9:.0f} GB/s per link each way): {seconds * 1e6:.1f} us")
    if op.attrs["routine"] == "all_reduce":
        other = "tree" if algorithm(op) == "ring" else "ring"
        reason += f" (the {other}: {cost.modelled_seconds('all_reduce', other, n, nbytes) * 1e6:.1f} us)"
    return op.attrs["solution"] or select(op, target), reason


def ring_order(first: int, n: int) -> list[int]:
    """The devices a ring visits from `first`, wrapping: first, first + 1, ..., first - 1."""
    return [(first + k) % n for k in range(n)]


def fold(reducer: str, values: list[K.Expr]) -> K.Expr:
    acc = values[0]
    for value in values[1:]:
        acc = combine(reducer, acc, value)
    return acc


def tree_fold(reducer: str, values: list[K.Expr]) -> K.Expr:
    while len(values) > 1:
        pairs = [combine(reducer, values[k], values[k + 1]) for k in range(0, len(values) - 1, 2)]
        values = pairs + ([values[-1]] if len(values) % 2 else [])
    return values[0]


def grid_kernel(op: Op, name: str, count, blocks: int, body, counts, limit=None) -> K.Kernel:
    """A kernel of (ceil(count / ITEMS), blocks) workgroups: `body(params, i, b, size)` for the
    element i < count of block b, b a Python int (one uniform branch per block: a workgroup takes
    one). `counts(size)` gives each buffer's element count, inputs then outputs; `limit(size, b)`
    the elements of block b (default: count), one bound the host's vectorized loop tests."""
    size = K.ScalarParam("size", INDEX)
    buffers = operand_buffers(op)
    params = [K.GlobalBuffer(b.name, b.dtype, c, b.readonly) for b, c in zip(buffers, counts(size))]
    i = K.Var("i", INDEX)
    count = count(size)
    block = K.workgroup_id(1).cast(INDEX)

    def element(b):
        # A workgroup wholly inside the bound takes a uniform branch without the per-element test,
        # which the host vectorizes with plain loads and stores (masked ones cost several times
        # more on x86); the last, partial workgroup tests each element.
        # Each branch binds i itself: a value bound before a uniform branch crosses into the
        # branch's work-item loops through memory (codegen/host.py: split_regions), and loads
        # addressed by a loaded index are gathers the host does not vectorize.
        bound = count if limit is None else limit(size, b)
        first = K.workgroup_id(0).cast(INDEX) * ITEMS
        index = K.Let(i, first + K.workitem_id(0).cast(INDEX))
        return [K.If(first + ITEMS <= bound, [index, *body(params, i, b, size)],
                     [index, K.If(i < bound, body(params, i, b, size))], uniform=True)]
    # The block is the workgroup's: a uniform branch, which the host takes once per workgroup.
    stmts = [K.If(block.eq(b), element(b), uniform=True) for b in range(blocks)] if blocks > 1 else element(0)
    return K.Kernel(name, params=[*params, size], grid=((count + (ITEMS - 1)) / ITEMS, blocks),
                    workgroup_size=(ITEMS,), body=stmts, arguments=(("size", size_argument(op)),))


def size_argument(op: Op) -> int:
    """The `size` scalar: elements per device message, or per block for the blocked routines."""
    elements = op.operands[0].type.size
    if op.attrs["routine"] in ("reduce_scatter", "all_to_all"):
        return elements // group_size(op)
    return elements


def all_reduce_kernel(op: Op, name: str) -> K.Kernel:
    n, reducer = group_size(op), op.attrs["reducer"]
    counts = lambda size: [size] * (2 * n)
    if algorithm(op) == "tree":
        def tree(params, i, b, size):
            total = K.Var("total", params[0].dtype)
            return [K.Let(total, tree_fold(reducer, [x[i] for x in params[:n]])),
                    *(K.Store(y, i, total) for y in params[n:])]
        return grid_kernel(op, name, lambda size: size, 1, tree, counts)

    def chunk_length(size):
        return (size + (n - 1)) / n

    def ring(params, i, chunk, size):
        element = chunk_length(size) * chunk + i
        visits = [params[d][element] for d in ring_order((chunk + 1) % n, n)]
        total = K.Var("total", params[0].dtype)
        return [K.Let(total, fold(reducer, visits)), *(K.Store(y, element, total) for y in params[n:])]
    # Chunk c's elements: those of [c * length, (c + 1) * length) below size.
    limit = lambda size, c: K.minimum(chunk_length(size), size - chunk_length(size) * c)
    return grid_kernel(op, name, chunk_length, n, ring, counts, limit)


def all_gather_kernel(op: Op, name: str) -> K.Kernel:
    n = group_size(op)

    def gather(params, i, source, size):
        return [K.Store(y, size * source + i, params[source][i]) for y in params[n:]]
    return grid_kernel(op, name, lambda size: size, n, gather, lambda size: [size] * n + [size * n] * n)


def reduce_scatter_kernel(op: Op, name: str) -> K.Kernel:
    n, reducer = group_size(op), op.attrs["reducer"]

    def scatter(params, i, block, size):
        visits = [params[d][size * block + i] for d in ring_order((block + 1) % n, n)]
        return [K.Store(params[n + block], i, fold(reducer, visits))]
    return grid_kernel(op, name, lambda size: size, n, scatter, lambda size: [size * n] * n + [size] * n)


def broadcast_kernel(op: Op, name: str) -> K.Kernel:
    n, root = group_size(op), op.attrs["root"]

    def copy(params, i, b, size):
        return [K.Store(y, i, params[root][i]) for y in params[n:]]
    return grid_kernel(op, name, lambda size: size, 1, copy, lambda size: [size] * (2 * n))


def reduce_kernel(op: Op, name: str) -> K.Kernel:
    n, root, reducer = group_size(op), op.attrs["root"], op.attrs["reducer"]

    def chain(params, i, b, size):
        return [K.Store(params[n], i, fold(reducer, [params[d][i] for d in ring_order((root + 1) % n, n)]))]
    return grid_kernel(op, name, lambda size: size, 1, chain, lambda size: [size] * (n + 1))


def all_to_all_kernel(op: Op, name: str) -> K.Kernel:
    n = group_size(op)

    def exchange(params, i, source, size):
        return [K.Store(params[n + d], size * source + i, params[source][size * d + i]) for d in range(n)]
    return grid_kernel(op, name, lambda size: size, n, exchange, lambda size: [size * n] * (2 * n))


def ppermute_kernel(op: Op, name: str) -> K.Kernel:
    n, sources = group_size(op), {d: s for s, d in op.attrs["pairs"]}

    def permute(params, i, b, size):
        zero = K.Const(0, params[0].dtype)
        return [K.Store(params[n + d], i, params[sources[d]][i] if d in sources else zero) for d in range(n)]
    return grid_kernel(op, name, lambda size: size, 1, permute, lambda size: [size] * (2 * n))


KERNELS = {"all_reduce": all_reduce_kernel, "all_gather": all_gather_kernel, "reduce_scatter": reduce_scatter_kernel,
           "broadcast": broadcast_kernel, "reduce": reduce_kernel, "all_to_all": all_to_all_kernel,
           "ppermute": ppermute_kernel}


def emit(op: Op, name: str, target: Target) -> K.Kernel:
    routine = op.attrs["routine"]
    if routine == "sharding_constraint":
        raise NotImplementedError("ccl.sharding_constraint has no kernel: the partitioner (passes/partition.py) "
                                  "replaces it, in a program whose values are sharded")
    if routine == "axis_index" or (group_size(op) > 1 and len(op.operands) == 1):
        raise NotImplementedError(f"ccl.{routine} in its per-device form has no kernel: the devices are unrolled "
                                  f"first (passes/spmd.py)")
    return KERNELS[routine](op, name)
