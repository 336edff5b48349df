"""The segmented reduction's kernel (routines.py: segment_reduce), built as the histogram's: a
work-item per run of RUN_LENGTH rows of the data, ITEMS runs per workgroup, each combining its
rows into its own block of num_segments x inner partial results (in global memory: no two
work-items share a slot, so no atomics), in element order; the graph then reduces the blocks.
The blocks cost runs x num_segments x inner slots, so cdnajit.ops uses this for up to MAX_SEGMENTS
segments and the graph's scatter beyond; the run length (`run_length`, a scalar parameter: one kernel
for any) grows with the segments (`run_length_for`) so that the blocks' initialisation and reduction
stay a sixteenth of the data. Rows of one element (inner == 1, a uniform branch) walk without the
inner loop.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...lowering.emit_ops import combine
from ...lowering.emitters import operand_buffers
from .scan import scan_identity

ITEMS = 64
RUN_LENGTH = 4096     # data rows per run (the calls' run_length)
MAX_SEGMENTS = RUN_LENGTH
BLOCK_SHARE = 16      # data rows per partial result, at least


def run_length_for(num_segments: int) -> int:
    """The shortest power of two >= RUN_LENGTH whose run has BLOCK_SHARE rows per slot of its block."""
    length = RUN_LENGTH
    while length < BLOCK_SHARE * num_segments:
        length *= 2
    return length


def segment_reduce_kernel(op: Op, name: str) -> K.Kernel:
    data_type, ids_type = op.operands[0].type, op.operands[1].type
    result_type = op.result.type
    reducer = op.attrs["reducer"]
    idx = "i32" if max(data_type.size, result_type.size) < 2 ** 31 else "i64"
    acc = result_type.dtype
    length, inner, segments, run_length, runs = (K.ScalarParam(n, idx) for n in ("length", "inner", "segments",
                                                                                 "run_length", "runs"))
    sized = {"in0": length * inner, "in1": length, "out0": runs * segments * inner}
    data, ids, result = [K.GlobalBuffer(b.name, b.dtype, sized[b.name], b.readonly) for b in operand_buffers(op)]
    run, base, start, stop, j, k, c, at = (K.Var(n, idx) for n in ("run", "base", "start", "stop", "j", "k", "c", "at"))
    sid = K.Var("sid", ids_type.dtype)
    kept = sid < segments.cast(ids_type.dtype)
    if ids_type.dtype.startswith("i"):
        kept = (sid >= K.Const(0, ids_type.dtype)) & kept
    walk = K.For(j, start, stop, 1, [
        K.Let(sid, ids[j]),
        K.If(kept, [K.For(c, 0, inner, 1, [
            K.Let(at, base + sid.cast(idx) * inner + c),
            K.Store(result, at, combine(reducer, result[at], data[j * inner + c].cast(acc)))])])])
    walk_scalars = K.For(j, start, stop, 1, [
        K.Let(sid, ids[j]),
        K.If(kept, [K.Let(at, base + sid.cast(idx)),
                    K.Store(result, at, combine(reducer, result[at], data[j].cast(acc)))])])
    body = [K.Let(run, K.workgroup_id(0).cast(idx) * ITEMS + K.workitem_id(0).cast(idx)),
            K.If(run < runs, [
                K.Let(base, run * segments * inner),
                K.Let(start, run * run_length), K.Let(stop, K.minimum(start + run_length, length)),
                K.For(k, 0, segments * inner, 1, [K.Store(result, base + k, scan_identity(reducer, acc))]),
                K.If(inner.eq(K.Const(1, idx)), [walk_scalars], [walk])])]
    return K.Kernel(name, params=[data, ids, result, length, inner, segments, run_length, runs],
                    grid=((runs + (ITEMS - 1)) / ITEMS,), workgroup_size=(ITEMS,), body=body,
                    arguments=(("length", data_type.shape[0]), ("inner", max(1, data_type.shape[1])),
                               ("segments", max(1, result_type.shape[1])), ("run_length", op.attrs["run_length"]),
                               ("runs", max(1, result_type.shape[0]))))


def describe(op: Op) -> str:
    return (f"segmented {op.attrs['reducer']} of {op.attrs['num_segments']} segments: runs of "
            f"{op.attrs['run_length']} rows (a scalar) per work-item, {ITEMS} work-items per workgroup, each combining into "
            f"its own block of partial results")
