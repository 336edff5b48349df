"""The histogram's kernel (routines.py: bin_counts): a work-item per run of RUN_LENGTH elements,
ITEMS runs per workgroup, each summing its run's weights into its own row of the result (in
global memory, where a row of a few hundred slots stays in the work-item's cache), so no two
work-items share a slot and no atomics are needed; the graph sums the rows.

An element's slot is a binary search of the edges (any sorted edges, even or not): the number of
edges at or below it, in ceil(log2(edges + 1)) halving steps (a scalar argument: one kernel serves
every count of edges and every length), with NaN past every edge and the last edge closing the
last bin.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...lowering.emitters import operand_buffers
from .routines import accumulator_type

ITEMS = 64
RUN_LENGTH = 4096   # elements per run (the calls' run_length)


def bin_counts_kernel(op: Op, name: str) -> K.Kernel:
    x_type, edges_type, weights_type = (v.type for v in op.operands)
    idx = "i32" if x_type.size < 2 ** 31 else "i64"
    acc = accumulator_type(weights_type)
    length, slots, steps = (K.ScalarParam(n, idx) for n in ("length", "slots", "steps"))
    run_length = op.attrs["run_length"]
    runs = (length + (run_length - 1)) / run_length
    sized = {"in0": length, "in1": slots, "in2": length, "out0": runs * slots}
    x, edges, weights, result = (K.GlobalBuffer(b.name, b.dtype, sized[b.name], b.readonly)
                                 for b in operand_buffers(op))
    run, start, stop, j, k, b, slot, probe = (K.Var(n, idx) for n in ("run", "start", "stop", "j", "k", "b", "slot",
                                                                      "probe"))
    value = K.Var("value", x_type.dtype)
    row = lambda at: run * slots + at
    search = [K.Let(slot, K.Const(0, idx)),
              K.For(b, 0, steps, 1, [
                  K.Let(probe, slot + (K.Const(1, idx) << (steps - 1 - b))),
                  K.If((probe <= slots) & (edges[K.minimum(probe, slots) - 1] <= value), [K.Assign(slot, probe)])]),
              K.If(value.ne(value), [K.Assign(slot, slots)]),
              K.If(value.eq(edges[slots - 1]), [K.Assign(slot, slot - 1)])]
    walk = K.For(j, start, stop, 1, [
        K.Let(value, x[j]), *search,
        K.If(slot < slots, [K.Store(result, row(slot), result[row(slot)] + weights[j].cast(acc))])])
    body = [K.Let(run, K.workgroup_id(0).cast(idx) * ITEMS + K.workitem_id(0).cast(idx)),
            K.If(run < runs, [
                K.Let(start, run * run_length), K.Let(stop, K.minimum(start + run_length, length)),
                K.For(k, 0, slots, 1, [K.Store(result, row(k), K.Const(0, acc))]), walk])]
    return K.Kernel(name, params=[x, edges, weights, result, length, slots, steps],
                    grid=((runs + (ITEMS - 1)) / ITEMS,), workgroup_size=(ITEMS,), body=body,
                    arguments=(("length", x_type.size), ("slots", edges_type.size),
                               ("steps", edges_type.size.bit_length())))


def describe(op: Op) -> str:
    return (f"histogram by binary search of {op.operands[1].type.size} edges; runs of {op.attrs['run_length']} "
            f"elements per work-item, {ITEMS} work-items per workgroup, each summing into its own row")
