"""The histogram's kernels (routines.py: bin_counts): each run of RUN_LENGTH elements sums its
weights into its own row of the result; the graph sums the rows. Two solutions:
  - counts (no weights) of at most BLOCK_SLOTS slots: rocPRIM's block histogram, a workgroup of
    BLOCK_ITEMS work-items per run, reading the run in stripes of BLOCK_ITEMS consecutive elements,
    one a work-item (coalesced on the GPU; on the host the stripe loop is uniform, outside the
    work-item loop, so the run streams in order), and counting each into the workgroup's LDS bins by
    an atomic add (ds_add_u32 on gfx942), then writing the bins as the run's row. Counts are
    integers, so the order of the adds changes nothing: the row is the one element order gives.
  - weighted sums (whose float order matters) or more slots: a work-item per run, ITEMS runs per
    workgroup, each summing its run in element order into its own row of the result (in global
    memory, where a row of a few hundred slots stays in the work-item's cache), so no two
    work-items share a slot and no atomics are needed.

An element's slot is the number of edges at or below it, with NaN past every edge and the last
edge closing the last bin. Any sorted edges: a binary search, ceil(log2(edges + 1)) halving steps
(a scalar argument: one kernel serves every count of edges and every length). Equal bins (the
`even` variant): the slot from the value's offset times bins / width, corrected against the
edges, with branches a random input predicts (a binary search mispredicts half its steps).
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...lowering.emitters import operand_buffers
from .routines import accumulator_type

ITEMS = 64
RUN_LENGTH = 4096   # elements per run (the calls' run_length)
BLOCK_ITEMS = 256   # work-items of the block histogram's workgroup
BLOCK_SLOTS = 4096  # the block histogram's LDS bins (i32: 16 KiB)


def counts_in_lds(op: Op) -> bool:
    return len(op.operands) == 2 and op.operands[1].type.size <= BLOCK_SLOTS


def solution(op: Op) -> str:
    return f"bin_counts_lds_w{BLOCK_ITEMS}" if counts_in_lds(op) else f"bin_counts_w{ITEMS}"


def slot_search(op: Op, value: K.Var, slot: K.Var, edges: K.GlobalBuffer, slots, steps):
    """(statements before the walk, statements setting `slot` to value's slot: the module's docstring)."""
    idx = slot.dtype
    scale = K.Var("scale", value.dtype)
    setup = [K.Let(scale, (slots - 1).cast(value.dtype) / (edges[slots - 1] - edges[0]))]
    if op.attrs["even"]:
        # Equal bins: the slot from the value's offset, then corrected against the edges (the
        # estimate's rounding is at most one off; two rounds each way), as numpy's histogram.
        estimate = ((value - edges[0]) * scale).cast(idx)
        search = [K.Let(slot, K.minimum(K.maximum(estimate, K.Const(0, idx)), slots - 2) + 1)]
        for _ in range(2):
            down = (slot > 0) & (value < edges[K.maximum(slot - 1, K.Const(0, idx))])
            up = (slot < slots) & (edges[K.minimum(slot, slots - 1)] <= value)
            search += [K.Assign(slot, K.select(down, slot - 1, K.select(up, slot + 1, slot)))]
    else:
        b, probe = K.Var("b", idx), K.Var("probe", idx)
        search = [K.Let(slot, K.Const(0, idx)),
                  K.For(b, 0, steps, 1, [
                      K.Let(probe, slot + (K.Const(1, idx) << (steps - 1 - b))),
                      K.If((probe <= slots) & (edges[K.minimum(probe, slots) - 1] <= value), [K.Assign(slot, probe)])])]
    return setup, search + [K.If(value.ne(value), [K.Assign(slot, slots)]),
                            K.If(value.eq(edges[slots - 1]), [K.Assign(slot, slot - 1)])]


def bin_counts_kernel(op: Op, name: str) -> K.Kernel:
    x_type, edges_type = op.operands[0].type, op.operands[1].type
    weighted = len(op.operands) == 3
    idx = "i32" if x_type.size < 2 ** 31 else "i64"
    acc = accumulator_type(op.operands[-1].type if weighted else edges_type)
    length, slots, steps = (K.ScalarParam(n, idx) for n in ("length", "slots", "steps"))
    run_length = op.attrs["run_length"]
    runs = (length + (run_length - 1)) / run_length
    sized = {"in0": length, "in1": slots, "in2": length, "out0": runs * slots}
    buffers = [K.GlobalBuffer(b.name, b.dtype, sized[b.name], b.readonly) for b in operand_buffers(op)]
    x, edges, result = buffers[0], buffers[1], buffers[-1]
    run, start, stop, j, k, slot = (K.Var(n, idx) for n in ("run", "start", "stop", "j", "k", "slot"))
    value = K.Var("value", x_type.dtype)
    setup, search = slot_search(op, value, slot, edges, slots, steps)
    bounds = [*setup, K.Let(start, run * run_length), K.Let(stop, K.minimum(start + run_length, length))]
    if counts_in_lds(op):
        lid, stripe, bins = K.Var("lid", idx), K.Var("stripe", idx), K.LdsBuffer("bins", "i32", BLOCK_SLOTS)
        count = [K.AtomicRMW(K.Var("before", "i32"), "add", bins, slot, K.Const(1, "i32"))]
        body = [K.Let(run, K.workgroup_id(0).cast(idx)), K.Let(lid, K.workitem_id(0).cast(idx)), *bounds,
                K.For(k, lid, slots, BLOCK_ITEMS, [K.Store(bins, k, K.Const(0, "i32"))]),
                K.Barrier(),
                K.For(stripe, start, stop, BLOCK_ITEMS, [
                    K.Let(j, stripe + lid),
                    K.If(j < stop, [K.Let(value, x[j]), *search, K.If(slot < slots, count)])], uniform=True),
                K.Barrier(),
                K.For(k, lid, slots, BLOCK_ITEMS, [K.Store(result, run * slots + k, bins[k].cast(acc))])]
        grid, workgroup, lds = (runs,), BLOCK_ITEMS, [bins]
    else:
        weight = (lambda at: buffers[2][at].cast(acc)) if weighted else (lambda at: K.Const(1, acc))
        row = lambda at: run * slots + at
        walk = K.For(j, start, stop, 1, [
            K.Let(value, x[j]), *search,
            K.If(slot < slots, [K.Store(result, row(slot), result[row(slot)] + weight(j))])])
        body = [K.Let(run, K.workgroup_id(0).cast(idx) * ITEMS + K.workitem_id(0).cast(idx)),
                K.If(run < runs, [*bounds, K.For(k, 0, slots, 1, [K.Store(result, row(k), K.Const(0, acc))]), walk])]
        grid, workgroup, lds = ((runs + (ITEMS - 1)) / ITEMS,), ITEMS, []
    return K.Kernel(name, params=[*buffers, length, slots, steps], grid=grid, workgroup_size=(workgroup,), body=body,
                    lds=lds, arguments=(("length", x_type.size), ("slots", edges_type.size),
                                        ("steps", edges_type.size.bit_length())))


def describe(op: Op) -> str:
    how = "offset estimate, corrected against" if op.attrs["even"] else "binary search of"
    if counts_in_lds(op):
        return (f"block histogram by {how} {op.operands[1].type.size} edges; a workgroup of {BLOCK_ITEMS} "
                f"work-items per run of {op.attrs['run_length']} elements (read striped), counting into LDS bins by "
                "atomic adds, then the run's row")
    return (f"histogram by {how} {op.operands[1].type.size} edges; runs of {op.attrs['run_length']} "
            f"elements per work-item, {ITEMS} work-items per workgroup, each summing into its own row")
