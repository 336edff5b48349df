"""The histogram's kernel (routines.py: bin_counts): a work-item per run of RUN_LENGTH elements,
ITEMS runs per workgroup, each summing its run's weights into its own row of the result (in
global memory, where a row of a few hundred slots stays in the work-item's cache), so no two
work-items share a slot and no atomics are needed; the graph sums the rows.

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
    weight = (lambda at: buffers[2][at].cast(acc)) if weighted else (lambda at: K.Const(1, acc))
    run, start, stop, j, k, b, slot, probe = (K.Var(n, idx) for n in ("run", "start", "stop", "j", "k", "b", "slot",
                                                                      "probe"))
    value, scale = K.Var("value", x_type.dtype), K.Var("scale", x_type.dtype)
    row = lambda at: run * slots + at
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
        search = [K.Let(slot, K.Const(0, idx)),
                  K.For(b, 0, steps, 1, [
                      K.Let(probe, slot + (K.Const(1, idx) << (steps - 1 - b))),
                      K.If((probe <= slots) & (edges[K.minimum(probe, slots) - 1] <= value), [K.Assign(slot, probe)])])]
    search += [K.If(value.ne(value), [K.Assign(slot, slots)]),
               K.If(value.eq(edges[slots - 1]), [K.Assign(slot, slot - 1)])]
    walk = K.For(j, start, stop, 1, [
        K.Let(value, x[j]), *search,
        K.If(slot < slots, [K.Store(result, row(slot), result[row(slot)] + weight(j))])])
    body = [K.Let(run, K.workgroup_id(0).cast(idx) * ITEMS + K.workitem_id(0).cast(idx)),
            K.If(run < runs, [
                K.Let(scale, (slots - 1).cast(x_type.dtype) / (edges[slots - 1] - edges[0])),
                K.Let(start, run * run_length), K.Let(stop, K.minimum(start + run_length, length)),
                K.For(k, 0, slots, 1, [K.Store(result, row(k), K.Const(0, acc))]), walk])]
    return K.Kernel(name, params=[*buffers, length, slots, steps],
                    grid=((runs + (ITEMS - 1)) / ITEMS,), workgroup_size=(ITEMS,), body=body,
                    arguments=(("length", x_type.size), ("slots", edges_type.size),
                               ("steps", edges_type.size.bit_length())))


def describe(op: Op) -> str:
    how = "offset estimate, corrected against" if op.attrs["even"] else "binary search of"
    return (f"histogram by {how} {op.operands[1].type.size} edges; runs of {op.attrs['run_length']} "
            f"elements per work-item, {ITEMS} work-items per workgroup, each summing into its own row")
