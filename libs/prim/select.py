"""Stream compaction's kernel (routines.py: select_runs), rocPRIM's select: the graph counts each
run's selected elements (`run_totals` of the mask as integers) and scans the counts (each run's
first place); a workgroup of one wave per run of RUN_LENGTH elements then reads the run in
stripes of 64 consecutive elements (a lane each: coalesced on the GPU), and per stripe takes a
ballot of the lanes' flags (`WaveBallot`), each selected lane's rank among the flagged lanes
below it (`WaveCountBelow`: v_mbcnt on gfx942) and the stripe's count (the last lane's rank plus
its flag, by a shuffle), writes each selected element at the run's place plus the ranks so far,
and fills its share of the tail past the total count. Selected elements keep their order (stripes
in order, lanes in order). No atomics, no look-back (scan.py says why), and unlike a scatter of
every element to its scanned position, no index array of every element goes through memory.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...lowering.emitters import operand_buffers

WAVE = 64          # a workgroup: one wave, a lane per element of a stripe (the ballot's mask is 64 bits)
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
    run, lane, start, stop, s, j, c, place, at, total, tail, first, last, p = (
        K.Var(n, idx) for n in ("run", "lane", "start", "stop", "s", "j", "c", "place", "at", "total", "tail",
                                "first", "last", "p"))
    flag, flagged = K.Var("flag", "bool"), K.Var("flagged", "u64")
    rank, counted, count = K.Var("rank", "i32"), K.Var("counted", "i32"), K.Var("count", "i32")
    stripes = (stop - start + (WAVE - 1)) / WAVE
    stripe = K.For(s, 0, stripes, 1, [
        K.Let(j, start + s * WAVE + lane),
        K.Let(flag, (j < stop) & mask[K.minimum(j, stop - 1)]),    # the last stripe's lanes past the run: none
        K.WaveBallot(flagged, flag),
        K.WaveCountBelow(rank, flagged),
        K.Let(counted, rank + flag.cast("i32")),
        K.WaveShuffle(count, counted, K.Const(WAVE - 1, "i32")),
        K.Let(at, place + rank.cast(idx)),
        K.If(flag & (at < size), [K.For(c, 0, inner, 1, [K.Store(result, at * inner + c, values[j * inner + c])])]),
        K.Assign(place, place + count.cast(idx))], uniform=True)
    # The tail [total, size) in equal shares, one per run (a run of its own when there are no runs),
    # the wave's lanes taking every 64th place of it.
    share = (tail + (K.maximum(runs, K.Const(1, idx)) - 1)) / K.maximum(runs, K.Const(1, idx))
    fill_tail = [K.Let(total, K.minimum(total_in[0].cast(idx), size)), K.Let(tail, size - total),
                 K.Let(first, total + run * share), K.Let(last, K.minimum(first + share, size)),
                 K.For(p, first + lane, last, WAVE, [K.For(c, 0, inner, 1, [K.Store(result, p * inner + c, fill[0])])])]
    body = [K.Let(run, K.workgroup_id(0).cast(idx)), K.Let(lane, K.workitem_id(0).cast(idx)),
            K.Let(start, run * run_length), K.Let(stop, K.minimum(start + run_length, length)),
            K.Let(place, K.Const(0, idx)), K.If(run < runs, [K.Assign(place, places[run].cast(idx))], uniform=True),
            stripe, *fill_tail]
    return K.Kernel(name, params=[mask, values, places, total_in, fill, result, length, inner, size],
                    grid=(K.maximum(runs, K.Const(1, idx)),), workgroup_size=(WAVE,),
                    body=body, arguments=(("length", mask_type.shape[0]), ("inner", max(1, values_type.shape[1])),
                                          ("size", op.attrs["size"])))


def describe(op: Op) -> str:
    return (f"stream compaction into {op.attrs['size']} places: a wave per run of {op.attrs['run_length']} "
            f"elements from its scanned place, stripes of {WAVE} ranked by ballot and lane counts")
