"""The scans' kernels (routines.py: run_totals, scan, scan_runs): a work-item walks one run of a row
in order, in the accumulator dtype, so the results are the routines' references exactly.

Reduce-then-scan, three launches: `run_totals` (each run's reduction, ITEMS runs per workgroup, a
grid of (ceil(runs / ITEMS), rows)), `scan` of the totals (exclusive: each run's carry) and
`scan_runs` (each run scanned again from its carry). It reads the input twice; the matcher uses it
for bool scans of few long rows, the other dtypes taking the single-pass scan (lookback.py).
`scan` alone, one work-item per row (ITEMS rows per workgroup), scans rows with few runs.
Segmented scans (`segmented_scan_kernel`) are the same two passes over runs, the accumulator
restarting at each head flag, and the carries the segmented scan of the runs' (total, has a head).
"""
from __future__ import annotations

import math

from ...ir import kernel as K
from ...ir.core import Op
from ...lowering.elemental import identity_const
from ...lowering.emit_ops import combine
from ...lowering.emitters import operand_buffers
from .routines import accumulator_type, index_dtype_of

ITEMS = 64   # work-items (runs, or rows for `scan`) per workgroup


def combine_scan(reducer: str, a: K.Expr, b: K.Expr) -> K.Expr:
    """a <reducer> b; logaddexp as routines.logaddexp: max + log1p(exp(-|a - b|)), 0 for equal operands."""
    if reducer != "logaddexp":
        return combine(reducer, a, b)
    gap = K.select(a.eq(b), K.Const(0.0, a.dtype), -K.abs(a - b))
    return K.maximum(a, b) + K.log1p(K.exp(gap))


def scan_identity(reducer: str, dtype: str) -> K.Const:
    return K.Const(-math.inf, dtype) if reducer == "logaddexp" else identity_const(reducer, dtype)


def scan_kernel(op: Op, name: str) -> K.Kernel:
    routine, attrs = op.attrs["routine"], op.attrs
    x = op.operands[0].type
    idx, acc_dtype = index_dtype_of(*x.shape), accumulator_type(x)
    rows, length = (K.ScalarParam(n, idx) for n in ("rows", "length"))
    t, row, run, start, stop, j = (K.Var(n, idx) for n in ("t", "row", "run", "start", "stop", "j"))
    acc = K.Var("acc", acc_dtype)
    reducer, exclusive = attrs["reducer"], attrs.get("exclusive", False)
    if routine == "scan":
        runs, run_length = K.Const(1, idx), length
        grid = ((rows + (ITEMS - 1)) / ITEMS,)
        ids = [K.Let(row, K.workgroup_id(0).cast(idx) * ITEMS + t), K.Let(run, K.Const(0, idx))]
        active = row < rows
    else:
        run_length = K.Const(attrs["run_length"], idx)
        runs = (length + (attrs["run_length"] - 1)) / attrs["run_length"]
        grid = ((runs + (ITEMS - 1)) / ITEMS, rows)
        ids = [K.Let(row, K.workgroup_id(1).cast(idx)), K.Let(run, K.workgroup_id(0).cast(idx) * ITEMS + t)]
        active = run < runs
    buffers = operand_buffers(op)
    sizes = {"in0": rows * length, "in1": rows * runs, "out0": rows * (runs if routine == "run_totals" else length)}
    params = [K.GlobalBuffer(b.name, b.dtype, sizes[b.name], b.readonly) for b in buffers]
    source, result = params[0], params[-1]
    element = lambda at: source[row * length + at].cast(acc_dtype)
    put = lambda at, value: K.Store(result, row * length + at, value.cast(x.dtype))
    fold = lambda: K.Assign(acc, combine_scan(reducer, acc, element(j)))
    if routine == "run_totals":
        walk = [K.Let(acc, element(start)), K.For(j, start + 1, stop, 1, [fold()]),
                K.Store(result, row * runs + run, acc)]
    else:
        carried = run > 0
        carry = params[1][row * runs + run] if routine == "scan_runs" else None
        if exclusive:
            first = scan_identity(reducer, acc_dtype)
            walk = [K.Let(acc, first if carry is None else K.select(carried, carry, first)),
                    K.For(j, start, stop, 1, [put(j, acc), fold()])]
        elif carry is None:
            walk = [K.Let(acc, element(start)), put(start, acc), K.For(j, start + 1, stop, 1, [fold(), put(j, acc)])]
        else:
            # Run 0 starts from its first element (0 + -0.0 would be +0.0), the others from their carry.
            walk = [K.Let(acc, K.select(carried, carry, element(start))),
                    K.If(~carried, [put(start, acc)]),
                    K.For(j, K.select(carried, start, start + 1), stop, 1, [fold(), put(j, acc)])]
    body = [K.Let(t, K.workitem_id(0).cast(idx)), *ids,
            K.If(active, [K.Let(start, run * run_length), K.Let(stop, K.minimum(start + run_length, length)),
                          K.If(start < stop, walk)])]
    return K.Kernel(name, params=[*params, rows, length], grid=grid, workgroup_size=(ITEMS,), body=body,
                    arguments=(("rows", x.shape[0]), ("length", x.shape[1])))


def describe(op: Op) -> str:
    routine, attrs = op.attrs["routine"], op.attrs
    kind = "exclusive" if attrs.get("exclusive") else "inclusive"
    if routine == "scan":
        return f"{kind} {attrs['reducer']} scan, one row per work-item, {ITEMS} rows per workgroup"
    what = "run totals (the reduce of reduce-then-scan)" if routine == "run_totals" else \
        f"{kind} {attrs['reducer']} scan of runs from their carries (the scan of reduce-then-scan)"
    return f"{what}; runs of {attrs['run_length']} elements per work-item, {ITEMS} work-items per workgroup"


def segmented_scan_kernel(op: Op, name: str) -> K.Kernel:
    """segmented_run_totals and segmented_scan_runs: a work-item per run as scan_kernel's, the
    accumulator restarting at each head flag (routines.py: `segmented`)."""
    routine, attrs = op.attrs["routine"], op.attrs
    x = op.operands[0].type
    idx, acc_dtype = index_dtype_of(*x.shape), accumulator_type(x)
    reducer, run_length = attrs["reducer"], attrs["run_length"]
    rows, length = (K.ScalarParam(n, idx) for n in ("rows", "length"))
    runs = (length + (run_length - 1)) / run_length
    t, row, run, start, stop, j = (K.Var(n, idx) for n in ("t", "row", "run", "start", "stop", "j"))
    acc, head, reset = K.Var("acc", acc_dtype), K.Var("head", "bool"), K.Var("reset", "bool")
    sizes = {"in0": rows * length, "in1": rows * length, "in2": rows * runs,
             "out0": rows * (runs if routine == "segmented_run_totals" else length), "out1": rows * runs}
    buffers = [K.GlobalBuffer(b.name, b.dtype, sizes[b.name], b.readonly) for b in operand_buffers(op)]
    source, heads = buffers[0], buffers[1]
    element = lambda at: source[row * length + at].cast(acc_dtype)
    restarted = lambda at: K.select(heads[row * length + at], element(at), combine_scan(reducer, acc, element(at)))
    if routine == "segmented_run_totals":
        totals, resets = buffers[2], buffers[3]
        walk = [K.Let(acc, element(start)), K.Let(reset, heads[row * length + start]),
                K.For(j, start + 1, stop, 1, [K.Assign(acc, restarted(j)),
                                               K.Assign(reset, reset | heads[row * length + j])]),
                K.Store(totals, row * runs + run, acc), K.Store(resets, row * runs + run, reset)]
    else:
        carries, result = buffers[2], buffers[3]
        put = lambda at, value: K.Store(result, row * length + at, value.cast(x.dtype))
        identity = scan_identity(reducer, acc_dtype)
        # A row's first element is a head; a later run starts from its carry.
        first = [K.Let(head, heads[row * length + start] | run.eq(K.Const(0, idx))),
                 K.Let(acc, K.select(head, element(start), combine_scan(reducer, carries[row * runs + run], element(start))))]
        if attrs["exclusive"]:
            before = K.select(head, identity, carries[row * runs + run])
            walk = [*first, put(start, before),
                    K.For(j, start + 1, stop, 1, [put(j, K.select(heads[row * length + j], identity, acc)),
                                                   K.Assign(acc, restarted(j))])]
        else:
            walk = [*first, put(start, acc), K.For(j, start + 1, stop, 1, [K.Assign(acc, restarted(j)), put(j, acc)])]
    body = [K.Let(t, K.workitem_id(0).cast(idx)), K.Let(row, K.workgroup_id(1).cast(idx)),
            K.Let(run, K.workgroup_id(0).cast(idx) * ITEMS + t),
            K.If(run < runs, [K.Let(start, run * run_length), K.Let(stop, K.minimum(start + run_length, length)),
                              K.If(start < stop, walk)])]
    return K.Kernel(name, params=[*buffers, rows, length], grid=((runs + (ITEMS - 1)) / ITEMS, rows),
                    workgroup_size=(ITEMS,), body=body, arguments=(("rows", x.shape[0]), ("length", x.shape[1])))


def describe_segmented(op: Op) -> str:
    attrs = op.attrs
    if attrs["routine"] == "segmented_run_totals":
        what = f"each run's {attrs['reducer']} since its last head (the reduce of a segmented reduce-then-scan)"
    else:
        kind = "exclusive" if attrs["exclusive"] else "inclusive"
        what = f"{kind} segmented {attrs['reducer']} scan of runs from their carries, restarting at each head"
    return f"{what}; runs of {attrs['run_length']} elements per work-item, {ITEMS} work-items per workgroup"
