"""Stream compaction's kernel (routines.py: select_runs), reduce-then-scan as the scans: the graph
counts each run's selected elements (`run_totals` of the mask as integers) and scans the counts
(each run's first place); a work-item per run of RUN_LENGTH elements then walks its run in order,
writing each selected element's values at its run's place plus its rank, and fills its share of
the tail past the total count. No atomics, no look-back (scan.py says why), and unlike a scatter of
every element to its scanned position, no index array of every element goes through memory.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...lowering.emitters import operand_buffers

ITEMS = 64
RUN_LENGTH = 4096


def select_runs_kernel(op: Op, name: str) -> K.Kernel:
    mask_type, values_type = op.operands[0].type, op.operands[1].type
    run_length = op.attrs["run_length"]
    idx = "i64"
    length, inner, size = (K.ScalarParam(n, idx) for n in ("length", "inner", "size"))
    runs = (length + (run_length - 1)) / run_length
    sized = {"in0": length, "in1": length * inner, "in2": runs, "in3": 1, "in4": 1, "out0": size * inner}
    mask, values, places, total_in, fill, result = [K.GlobalBuffer(b.name, b.dtype, sized[b.name], b.readonly)
                                                    for b in operand_buffers(op)]
    run, start, stop, j, c, place, total, tail, first, last, p = (
        K.Var(n, idx) for n in ("run", "start", "stop", "j", "c", "place", "total", "tail", "first", "last", "p"))
    walk = K.For(j, start, stop, 1, [
        K.If(mask[j] & (place < size), [
            K.For(c, 0, inner, 1, [K.Store(result, place * inner + c, values[j * inner + c])])]),
        K.Assign(place, place + K.select(mask[j], K.Const(1, idx), K.Const(0, idx)))])
    # The tail [total, size) in equal shares, one per run (a run of its own when there are no runs).
    share = (tail + (K.maximum(runs, K.Const(1, idx)) - 1)) / K.maximum(runs, K.Const(1, idx))
    fill_tail = [K.Let(total, K.minimum(total_in[0].cast(idx), size)), K.Let(tail, size - total),
                 K.Let(first, total + run * share), K.Let(last, K.minimum(first + share, size)),
                 K.For(p, first, last, 1, [K.For(c, 0, inner, 1, [K.Store(result, p * inner + c, fill[0])])])]
    body = [K.Let(run, K.workgroup_id(0).cast(idx) * ITEMS + K.workitem_id(0).cast(idx)),
            K.If(run < K.maximum(runs, K.Const(1, idx)), [
                K.Let(start, run * run_length), K.Let(stop, K.minimum(start + run_length, length)),
                K.Let(place, K.Const(0, idx)), K.If(run < runs, [K.Assign(place, places[run].cast(idx))]),
                walk, *fill_tail])]
    return K.Kernel(name, params=[mask, values, places, total_in, fill, result, length, inner, size],
                    grid=((K.maximum(runs, K.Const(1, idx)) + (ITEMS - 1)) / ITEMS,), workgroup_size=(ITEMS,),
                    body=body, arguments=(("length", mask_type.shape[0]), ("inner", max(1, values_type.shape[1])),
                                          ("size", op.attrs["size"])))


def describe(op: Op) -> str:
    return (f"stream compaction into {op.attrs['size']} places: runs of {op.attrs['run_length']} elements per "
            f"work-item in order from their scanned places, {ITEMS} work-items per workgroup")
