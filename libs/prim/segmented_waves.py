"""The segmented scan of runs by waves (routines.py: segmented_scan_runs), rocPRIM's segmented
block scan for integer accumulators: a workgroup of one wave per run of a row, reading the run in
stripes of WAVE consecutive elements (a lane each). Per stripe, Hillis and Steele's scan of the
lanes' (value, head) pairs in 6 shuffle steps (WaveShuffle: ds_bpermute on gfx942): a lane takes
its left neighbour's partial unless a head lies between; the lanes before the stripe's first head
then combine with the carry (the run's carry, then the previous stripe's last lane), and the
exclusive form reads the lane below's inclusive value. Integer sums and products wrap and max/min
pick, so any association gives the sequential scan's results exactly; float accumulators keep a
work-item per run (scan.py), whose order the routine's reference follows.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...ir.types import INTS
from ...lowering.emitters import operand_buffers
from .routines import accumulator_type, index_dtype_of
from . import scan
from .scan import ITEMS, combine_scan, scan_identity

WAVE = 64
MIN_STRIPES = 4     # rows shorter than 4 stripes keep a work-item per run (the wave's lanes would idle)


def takes_waves(op: Op) -> bool:
    """An integer accumulator and runs of at least MIN_STRIPES stripes."""
    x = op.operands[0].type
    return accumulator_type(x) in INTS and min(op.attrs["run_length"], x.shape[1]) >= MIN_STRIPES * WAVE


def solution(op: Op) -> str:
    return f"segmented_scan_runs_waves_w{WAVE}" if takes_waves(op) else f"segmented_scan_runs_w{ITEMS}"


def emit(op: Op, name: str) -> K.Kernel:
    return wave_scan_kernel(op, name) if takes_waves(op) else scan.segmented_scan_kernel(op, name)


def wave_scan_kernel(op: Op, name: str) -> K.Kernel:
    attrs, x = op.attrs, op.operands[0].type
    idx, acc_dtype = index_dtype_of(*x.shape), accumulator_type(x)
    reducer, run_length = attrs["reducer"], attrs["run_length"]
    rows, length = (K.ScalarParam(n, idx) for n in ("rows", "length"))
    runs = (length + (run_length - 1)) / run_length
    sizes = {"in0": rows * length, "in1": rows * length, "in2": rows * runs, "out0": rows * length}
    source, heads, carries, result = [K.GlobalBuffer(b.name, b.dtype, sizes[b.name], b.readonly)
                                      for b in operand_buffers(op)]
    lane, row, run, start, stop, stripe, j, at = (K.Var(n, idx) for n in ("lane", "row", "run", "start", "stop",
                                                                          "stripe", "j", "at"))
    value, carry, inclusive, below, last = (K.Var(n, acc_dtype) for n in ("value", "carry", "inclusive", "below",
                                                                             "last"))
    head, own_head = K.Var("head", "bool"), K.Var("own_head", "bool")
    steps = []
    for step in (1, 2, 4, 8, 16, 32):
        reaches = lane >= step
        moved, moved_head = K.Var(f"moved{step}", acc_dtype), K.Var(f"moved_head{step}", "bool")
        steps += [K.WaveShuffle(moved, value, (lane - step).cast("i32")),
                  K.WaveShuffle(moved_head, head, (lane - step).cast("i32")),
                  K.Assign(value, K.select(reaches & ~head, combine_scan(reducer, moved, value), value)),
                  K.Assign(head, head | (reaches & moved_head))]
    identity = scan_identity(reducer, acc_dtype)
    if attrs["exclusive"]:
        written = K.select(own_head, identity, K.select(lane.eq(K.Const(0, idx)), carry, below))
    else:
        written = inclusive
    stripes = K.For(stripe, start, stop, WAVE, [
        K.Let(j, stripe + lane),
        K.Let(at, row * length + K.minimum(j, stop - 1)),   # the last stripe's lanes past the run: its last element
        K.Let(value, source[at].cast(acc_dtype)),
        K.Let(own_head, heads[at] | K.minimum(j, stop - 1).eq(K.Const(0, idx))),   # a row's first element is a head
        K.Let(head, own_head),
        *steps,
        K.Let(inclusive, K.select(head, value, combine_scan(reducer, carry, value))),
        K.WaveShuffle(below, inclusive, (lane - 1).cast("i32")),
        K.If(j < stop, [K.Store(result, row * length + j, written.cast(x.dtype))]),
        K.WaveShuffle(last, inclusive, K.Const(WAVE - 1, "i32")),
        K.Assign(carry, last)], uniform=True)
    body = [K.Let(lane, K.workitem_id(0).cast(idx)), K.Let(run, K.workgroup_id(0).cast(idx)),
            K.Let(row, K.workgroup_id(1).cast(idx)), K.Let(start, run * run_length),
            K.Let(stop, K.minimum(start + run_length, length)),
            K.Let(carry, carries[row * runs + run]), stripes]
    return K.Kernel(name, params=[source, heads, carries, result, rows, length], grid=(runs, rows),
                    workgroup_size=(WAVE,), body=body, arguments=(("rows", x.shape[0]), ("length", x.shape[1])))


def describe(op: Op) -> str:
    if not takes_waves(op):
        return scan.describe_segmented(op)
    attrs = op.attrs
    kind = "exclusive" if attrs["exclusive"] else "inclusive"
    return (f"{kind} segmented {attrs['reducer']} scan of runs of {attrs['run_length']} from their carries, a wave "
            f"per run: stripes of {WAVE} scanned across lanes by shuffles of (value, head) pairs")
