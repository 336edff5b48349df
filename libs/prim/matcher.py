"""The PRIM library's pattern table: the graph's sorts and scans become `library_call prim.*`.

A routine works on (rows, length) rows (routines.py), so every rewrite moves the op's axis last
(a transpose, unless it is last already), flattens the other axes into rows (a reshape, a view),
calls the routines, and undoes both on the results.
"""
from __future__ import annotations

import math

from ...ir.core import Value
from ...ir.types import COMPLEXES
from ...passes.patterns import Pat
from .radix import RUN_LENGTH
from ...ir.targets import get_target
from .routines import (LOOKBACK_DTYPES, MAX_ROW_LENGTH, SORT_KEY_DTYPES, accumulator_type, digit_shifts,
                       lookback_workgroup)

# Rows shorter than this sort in LDS, a workgroup per row (lowering/emit_sort.py's merge sort):
# 256 digit counters per run cost more than the row's merge passes.
MIN_RADIX_LENGTH = 1024
# A scan of rows longer than this, and too few rows to fill the machine one row per work-item,
# is the single-pass scan over tiles (lookback.py), or reduce-then-scan of runs of this length.
SCAN_RUN_LENGTH = 4096
FEW_ROWS = 256


def call(m, routine: str, *operands: Value, **attrs) -> list[Value]:
    return m.ops("library_call", *operands, library="prim", routine=routine, solution="", **attrs)


def as_rows(m, values, axis: int) -> list[Value]:
    """Each value with `axis` moved last and the other axes flattened: (rows, length)."""
    shape = values[0].type.shape
    last = len(shape) - 1
    permutation = tuple(d for d in range(len(shape)) if d != axis) + (axis,)
    moved = [v if axis == last else m.op("transpose", v, permutation=permutation) for v in values]
    rows = math.prod(d for k, d in enumerate(shape) if k != axis)
    return [m.op("reshape", v, new_sizes=(rows, shape[axis])) for v in moved]


def from_rows(m, values, shape, axis: int) -> list[Value]:
    """as_rows undone: rows back to `shape` along `axis`."""
    last = len(shape) - 1
    moved_shape = tuple(d for k, d in enumerate(shape) if k != axis) + (shape[axis],)
    inverse = tuple(range(axis)) + (last,) + tuple(range(axis, last))
    shaped = [m.op("reshape", v, new_sizes=moved_shape) for v in values]
    return [v if axis == last else m.op("transpose", v, permutation=inverse) for v in shaped]


def single_pass_workgroup(rows: int, length: int) -> int:
    """The single-pass scan's tile work-items for the default target's CUs (routines.lookback_workgroup):
    matching runs before a target is chosen (and the frontend calls scan_along with none)."""
    return lookback_workgroup(rows, length, get_target().compute_units)


def scanned(m, x: Value, reducer: str, exclusive: bool) -> Value:
    """The scan of each row of x: one work-item per row; for few long rows the single-pass scan
    (its look-back state, then the scan), or reduce-then-scan of runs for bool."""
    rows, length = x.type.shape
    if length <= SCAN_RUN_LENGTH or rows >= FEW_ROWS:
        (result,) = call(m, "scan", x, reducer=reducer, exclusive=exclusive)
        return result
    if accumulator_type(x.type) in LOOKBACK_DTYPES:
        tiles = {"reducer": reducer, "exclusive": exclusive, "workgroup": single_pass_workgroup(rows, length)}
        (state,) = call(m, "lookback_init", x, **tiles)
        (result,) = call(m, "lookback_scan", x, state, **tiles)
        return result
    (totals,) = call(m, "run_totals", x, reducer=reducer, run_length=SCAN_RUN_LENGTH)
    (carries,) = call(m, "scan", totals, reducer=reducer, exclusive=True)
    (result,) = call(m, "scan_runs", x, carries, reducer=reducer, exclusive=exclusive, run_length=SCAN_RUN_LENGTH)
    return result


def radix_sorted(m, sort):
    """sort along a long axis -> an LSD radix sort: per digit of each key (the last key first, its
    least significant digit first), a histogram, its exclusive scan and a stable scatter of every operand."""
    operands, num_keys, dimension = sort.operands, sort.attrs["num_keys"], sort.attrs["dimension"]
    if any(v.type.dtype not in SORT_KEY_DTYPES for v in operands) or \
            operands[0].type.shape[dimension] < MIN_RADIX_LENGTH:
        return None
    rows = as_rows(m, operands, dimension)
    # rows up to MAX_ROW_LENGTH sort whole in one kernel, a wave per row, staying in its cache
    # between passes (256 KiB of f32 keys); longer rows go through memory once per pass
    if rows[0].type.shape[1] <= MAX_ROW_LENGTH:
        sorted_rows = call(m, "radix_sort_rows", *rows, num_keys=num_keys)[:len(rows)]
        return from_rows(m, sorted_rows, operands[0].type.shape, dimension)
    for key in reversed(range(num_keys)):
        for shift in digit_shifts(operands[key].type.dtype):
            (counts,) = call(m, "radix_histogram", rows[key], shift=shift, run_length=RUN_LENGTH)
            offsets = scanned(m, counts, "sum", exclusive=True)
            rows = call(m, "radix_scatter", *rows, offsets, shift=shift, run_length=RUN_LENGTH, key=key)
    return from_rows(m, rows, operands[0].type.shape, dimension)


def scan_along(m, x: Value, reducer: str, axis: int, reverse: bool) -> Value:
    """The inclusive scan of x along axis (reversed before and after if reverse). `m` builds ops
    (`op`, `ops`): a match here, the frontend's tracer for lax.cumlogsumexp."""
    if reverse:
        x = m.op("rev", x, dimensions=(axis,))
    (rows,) = as_rows(m, [x], axis)
    (result,) = from_rows(m, [scanned(m, rows, reducer, exclusive=False)], x.type.shape, axis)
    return m.op("rev", result, dimensions=(axis,)) if reverse else result


def segmented_scan_along(m, x: Value, heads: Value, reducer: str, axis: int, exclusive: bool,
                         identity: Value) -> Value:
    """The segmented scan of x along axis, restarting at each true head (the first element along the
    axis always one): one pass of a work-item per row for rows up to SCAN_RUN_LENGTH; for few
    longer rows the single-pass scan of (value, has a head) pairs (its look-back state, then the
    scan); else (bool, or many rows) reduce-then-scan of runs whose carries are the segmented scan
    of the runs' (total, has a head), shifted one run on (`identity`, a scalar of the accumulator
    dtype, before run 0). `m` builds ops."""
    rows, flags = as_rows(m, [x, heads], axis)
    count, length = rows.type.shape
    if length > SCAN_RUN_LENGTH and count < FEW_ROWS and accumulator_type(rows.type) in LOOKBACK_DTYPES:
        tiles = {"reducer": reducer, "exclusive": exclusive, "workgroup": single_pass_workgroup(count, length)}
        (state,) = call(m, "lookback_init", rows, **tiles)
        (result,) = call(m, "segmented_lookback_scan", rows, flags, state, **tiles)
        (result,) = from_rows(m, [result], x.type.shape, axis)
        return result
    run_length = min(max(length, 1), SCAN_RUN_LENGTH)
    runs = -(-length // run_length)
    attrs = {"reducer": reducer, "run_length": run_length}
    if runs > 1:
        totals, reset = call(m, "segmented_run_totals", rows, flags, **attrs)
        (through,) = call(m, "segmented_scan_runs", totals, reset,
                          m.op("broadcast_in_dim", identity, shape=(count, 1), broadcast_dimensions=()),
                          reducer=reducer, exclusive=False, run_length=runs)
        before = m.op("broadcast_in_dim", identity, shape=(count, 1), broadcast_dimensions=())
        carries = m.op("concatenate", before, m.op("slice", through, start_indices=(0, 0), limit_indices=(count, runs - 1),
                                                   strides=(1, 1)), dimension=1)
    else:
        carries = m.op("broadcast_in_dim", identity, shape=(count, runs), broadcast_dimensions=())
    (result,) = call(m, "segmented_scan_runs", rows, flags, carries, exclusive=exclusive, **attrs)
    (result,) = from_rows(m, [result], x.type.shape, axis)
    return result


def scan_of(m, op):
    """cumulative along an axis -> an inclusive scan of rows."""
    (x,) = op.operands
    if x.type.dtype in COMPLEXES:
        return None
    return scan_along(m, x, op.attrs["reducer"], op.attrs["axis"], op.attrs["reverse"])


RULES = [
    # sort(keys..., payloads...) along an axis of up to 2^16 -> radix_sort_rows; a longer axis ->
    # radix_histogram, scan, radix_scatter per digit of each key
    (Pat.any_op("sort", name="sort"), radix_sorted),
    # cumulative(x) {reducer, axis, reverse} -> scan; for few long rows lookback_init, lookback_scan (one
    # pass), or for bool run_totals, scan, scan_runs (reduce-then-scan)
    (Pat.any_op("cumulative", name="op"), scan_of),
]
