"""The segmented reductions' kernel (routines.py: segment_reduce, segment_reduce_sorted), built as
the histogram's: a work-item per run of `run_length` rows of the data, ITEMS runs per workgroup,
each combining its rows into its own block of num_segments x inner partial results (in global
memory: no two work-items share a slot, so no atomics), in element order; the graph then reduces
the blocks. The blocks cost runs x num_segments x inner slots; the run length (a scalar parameter:
one kernel for any) grows with the segments (`run_length_for`) so that the blocks' initialisation
and reduction stay a sixteenth of the data (at most n / 16 + num_segments slots for any number of
segments: many segments give few runs, down to one work-item walking every row, as a sequential
scatter does).

Every run but the last walks a loop of run_length trips (a scalar the launch can count, so it
runs the workgroups on the worker pool's threads), the last one up to the data's end. Rows of one
element (inner == 1, a uniform branch) walk without the inner loop. With sorted ids
(segment_reduce_sorted) such a walk folds each segment's consecutive rows in a register and
stores once per segment, instead of a load, combine and store of the block's slot per row: for
sorted ids that slot is the same one row after row, a chain through memory.
"""
from __future__ import annotations

import math

from ...ir import kernel as K
from ...ir.core import Op
from ...lowering.emit_ops import combine
from ...lowering.emitters import operand_buffers
from .scan import scan_identity

ITEMS = 64
RUN_LENGTH = 4096     # data rows per run at least (the calls' run_length)
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
    reducer, is_sorted = op.attrs["reducer"], op.attrs["routine"] == "segment_reduce_sorted"
    idx = "i32" if max(data_type.size, result_type.size) < 2 ** 31 else "i64"
    acc = result_type.dtype
    length, inner, segments, run_length, runs = (K.ScalarParam(n, idx) for n in ("length", "inner", "segments",
                                                                                 "run_length", "runs"))
    sized = {"in0": length * inner, "in1": length, "out0": runs * segments * inner}
    data, ids, result = [K.GlobalBuffer(b.name, b.dtype, sized[b.name], b.readonly) for b in operand_buffers(op)]
    run, base, start, i, j, k, c, at = (K.Var(n, idx) for n in ("run", "base", "start", "i", "j", "k", "c", "at"))
    sid, current = K.Var("sid", ids_type.dtype), K.Var("current", ids_type.dtype)
    total = K.Var("total", acc)

    def kept(s: K.Expr) -> K.Expr:
        inside = s < segments.cast(ids_type.dtype)
        return (s >= K.Const(0, ids_type.dtype)) & inside if ids_type.dtype.startswith("i") else inside

    def fold_into_block(s: K.Expr, c: K.Expr, value: K.Expr) -> list[K.Stmt]:
        return [K.If(kept(s), [K.Let(at, base + s.cast(idx) * inner + c),
                               K.Store(result, at, combine(reducer, result[at], value))])]

    def walk(count: K.Expr) -> K.If:
        """The rows start + i for i < count, into the block."""
        rows = K.For(i, 0, count, 1, [K.Let(j, start + i), K.Let(sid, ids[j]),
                                      K.For(c, 0, inner, 1, fold_into_block(sid, c, data[j * inner + c].cast(acc)))])
        scalars = [K.For(i, 0, count, 1, [K.Let(j, start + i), K.Let(sid, ids[j]),
                                          *fold_into_block(sid, K.Const(0, idx), data[j].cast(acc))])]
        if is_sorted:
            # `current`'s rows so far fold into `total`; a new id stores them and starts again.
            identity = scan_identity(reducer, acc)
            scalars = [K.Let(current, ids[start]), K.Let(total, identity),
                       K.For(i, 0, count, 1, [
                           K.Let(j, start + i), K.Let(sid, ids[j]),
                           K.If(sid.ne(current), [*fold_into_block(current, K.Const(0, idx), total),
                                                  K.Assign(current, sid), K.Assign(total, identity)]),
                           K.Assign(total, combine(reducer, total, data[j].cast(acc)))]),
                       *fold_into_block(current, K.Const(0, idx), total)]
        return K.If(inner.eq(K.Const(1, idx)), scalars, [rows])

    body = [K.Let(run, K.workgroup_id(0).cast(idx) * ITEMS + K.workitem_id(0).cast(idx)),
            K.If(run < runs, [
                K.Let(base, run * segments * inner), K.Let(start, run * run_length),
                K.For(k, 0, segments * inner, 1, [K.Store(result, base + k, scan_identity(reducer, acc))]),
                K.If(run < runs - 1, [walk(run_length)], [K.If(start < length, [walk(length - start)])])])]
    return K.Kernel(name, params=[data, ids, result, length, inner, segments, run_length, runs],
                    grid=((runs + (ITEMS - 1)) / ITEMS,), workgroup_size=(ITEMS,), body=body,
                    arguments=(("length", data_type.shape[0]), ("inner", max(1, math.prod(data_type.shape[1:]))),
                               ("segments", max(1, result_type.shape[1])), ("run_length", op.attrs["run_length"]),
                               ("runs", max(1, result_type.shape[0]))))


def describe(op: Op) -> str:
    sorted_ids = ", a register per segment of sorted ids" if op.attrs["routine"] == "segment_reduce_sorted" else ""
    return (f"segmented {op.attrs['reducer']} of {op.attrs['num_segments']} segments: runs of "
            f"{op.attrs['run_length']} rows (a scalar) per work-item, {ITEMS} work-items per workgroup, each combining into "
            f"its own block of partial results{sorted_ids}")
