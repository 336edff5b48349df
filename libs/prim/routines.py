"""The PRIM library's routines (ir/ops/library.py's contract), rocPRIM's device-wide primitives as
kernels over rows: every operand is 2-D, (rows, length), row-major, and a routine works on each row
on its own (a batched sort or scan is one call; the matcher moves the axis last and flattens the
others). A row is cut into *runs* of `run_length` consecutive elements, the unit one work-item
(or, for the radix scatter, one wave) scans or sorts in order; `runs = ceil(length / run_length)`.

Radix sort (LSD, 8-bit digits, one pass per digit from the least significant):
  - `radix_histogram(keys) {shift, run_length}` -> counts (rows, 256 * runs), index dtype: row r's
    count of digit d in run u at [r, d * runs + u]. The digit of a key is
    `(ordered_bits(key) >> shift) & 255`, where ordered_bits maps the key to unsigned bits whose
    order is numpy's (NaNs last, -0.0 equal to 0.0; see `ordered_bits`).
  - `radix_scatter(operands..., offsets) {shift, run_length, key}` -> (operands...): with
    `offsets` the exclusive scan of operand `key`'s histogram along each row, every element of run
    u with digit d goes to `offsets[r, d * runs + u]` plus its rank among the run's elements of
    digit d: the rows of every operand stably sorted by the key's digit. Several keys sort as
    numpy's lexsort: every digit of the least significant key first.
  - `radix_sort_rows(operands...) {num_keys}` -> (operands..., scratch...): each row (at most
    MAX_ROW_LENGTH elements) sorted whole by one wave, every pass of every key in one kernel, the row staying in cache between
    passes (rocPRIM's segmented radix sort, a segment per row); passes alternate between the
    results and scratch copies of every operand (results only when there is one pass), so that
    the last pass writes the results. The scratch holds the rows after the next-to-last pass.
Scans (reduce-then-scan of runs: a scan of more runs than one is three calls):
  - `run_totals(x) {reducer, run_length}` -> (rows, runs), accumulator dtype: each run's reduction,
    sequential from its first element;
  - `scan(x) {reducer, exclusive}`: each row scanned sequentially from its first element
    (exclusive: from the reducer's identity, the last element left out); the carries of runs;
  - `scan_runs(x, carries) {reducer, exclusive, run_length}`: each run scanned, run u > 0 starting
    from `carries[r, u]` (the reduction of the runs before it); run 0 as `scan`.
Single-pass scan (rocPRIM's lookback scan; lookback.py: a plan of these two calls):
  - `lookback_init(x) {reducer, exclusive, workgroup}` -> u64 (1 + 3 rows tiles,), tiles =
    ceil(length / (LOOKBACK_ITEMS x workgroup)): zeros, the look-back state of a `lookback_scan` of x with these attributes (the
    same attributes and operand, so two scans share a state only where they are one scan);
  - `lookback_scan(x, state) {reducer, exclusive, workgroup}` -> x's type: `scan`'s result, the state
    `lookback_init` made written by the kernel as its scratch (the one library kernel that writes
    an operand: the state is made for it alone, and nothing else reads it). Its association, run to
    run (`lookback_reference`): each work-item's run of LOOKBACK_ITEMS elements folded from its first;
    within a tile of `workgroup` runs (one of LOOKBACK_WORKGROUPS), each wave of LOOKBACK_WAVE runs' totals scanned by
    rocPRIM's DPP moves (`wave_scans`), the waves' totals folded in order; the tiles' aggregates
    folded in order along the row; each run scanned from prefix (+) (waves before (+) its wave's runs
    before it). For integers that is `scan`'s result.
Floats of 16 bits accumulate in f32 and every result rounds once, as the `cumulative` op does.
Histogram:
  - `bin_counts(x, edges[, weights]) {run_length, even}` -> (runs, bins + 1), accumulator dtype
    (of the weights, else of the edges, each element then weighing 1): x and weights 1-D of one
    length, edges 1-D and sorted (`even`: equally spaced, which the kernel may use to find the
    bin; the result is the same). Element i falls in slot
    `searchsorted(edges, x[i], side="right")` (NaN after every edge), one less where x[i] equals the
    last edge (the last bin is closed); slot 0 is below the first edge and slot len(edges) (past
    the end, not kept) above the last. Row u sums the weights of run u per slot, in element order.
Stream compaction:
  - `select_runs(mask, values, places, total, fill) {run_length, size}` -> (size, inner), values'
    dtype: mask bool (n,), values (n, inner), places (runs,) the exclusive scan of each run's count
    of true mask elements, total their sum, fill a scalar: values[mask] in order, the first `size`
    of them, then `fill` (numpy's values[mask][:size], padded).
Segmented scans (reduce-then-scan as above, restarting at each head flag; `heads` bool of x's shape,
a row's first element always a head):
  - `segmented_run_totals(x, heads) {reducer, run_length}` -> (totals (rows, runs) accumulator
    dtype, reset (rows, runs) bool): each run's reduction from its last head (from its first element
    if it has none), and whether it has a head;
  - `segmented_scan_runs(x, heads, carries) {reducer, exclusive, run_length}`: each run scanned,
    acc = x at a head, else acc <reducer> x (exclusive: the acc before each element, the identity
    at a head), run u > 0 starting from carries[:, u] (the inclusive segmented scan of the runs'
    (totals, reset) at run u - 1). With one run per row it is the whole segmented scan.
Searching:
  - `merge_search(a, v, places) {side}` -> i32 (m,): for sorted a (n,), sorted queries v (m,) of
    one dtype and places (m,) i32, a permutation of 0..m-1: v[j]'s jnp.searchsorted(a, v[j], side)
    (NaN last) at places[j], so that the queries' sort is undone by the merge's own stores; queries
    out of order give unspecified indices, repeated places unspecified elements.
Top k:
  - `top_k_rows(x) {k}` -> (values (rows, k), indices (rows, k) i32): each row's k largest in the
    sort's order (`ordered_bits`: NaN largest, -0.0 equal to 0.0), descending, equal values in
    index order (lax.top_k).
Segmented reduction:
  - `segment_reduce(data, ids) {reducer, run_length, num_segments}` -> (runs, num_segments, inner),
    accumulator dtype: data (n, ...) (rows along the first axis, inner = the product of the others),
    ids (n,) of an integer dtype; block u combines, from the reducer's identity, the data rows of
    run u into row ids[i] of the block, in element order, rows whose id is outside [0, num_segments)
    left out. The reduction of the blocks is the segmented reduction (jax.ops.segment_*).
  - `segment_reduce_sorted(data, ids) {reducer, run_length, num_segments}`: the same for ids in
    ascending order (jax's indices_are_sorted=True): a run combines each segment's consecutive rows
    on their own, then into the block (for sorted ids the same sums as element order; for unsorted
    ids a valid segmented reduction whose rounding may differ, as JAX leaves them undefined).
"""
from __future__ import annotations

import math

import numpy as np

from ...ir.kernel import WAVE_MOVES, wave_move_sources
from ...ir.opdef import compute_dtype, fmt_types, require, round_to
from ...ir.ops.library import Routine
from ...ir.ops.reduce import CUMULATIVE_UFUNCS, check_reducer, cumulative, reducer_identity
from ...ir.types import COMPLEXES, INTS, NUMPY_DTYPES, TensorType

RADIX_BITS = 8
RADIX = 1 << RADIX_BITS
SORT_KEY_DTYPES = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64")


def key_bits(dtype: str) -> int:
    """The width of a key's ordered bits: 8 for bool, else the dtype's."""
    return NUMPY_DTYPES[dtype].itemsize * 8


def digit_shifts(dtype: str) -> list[int]:
    """The shift of every radix pass of a key dtype, least significant digit first."""
    return list(range(0, key_bits(dtype), RADIX_BITS))


def runs_of(length: int, run_length: int) -> int:
    return -(-length // run_length)


def index_dtype_of(rows: int, length: int) -> str:
    return "i32" if rows * length < 2 ** 31 else "i64"


def ordered_bits(keys: np.ndarray) -> np.ndarray:
    """Unsigned integers (u32, or u64 for 64-bit keys) in the order numpy sorts `keys`: signed
    integers with the sign bit flipped; floats with every bit flipped if negative, else the sign
    bit set, zeros of either sign as +0.0, NaNs as all ones (after +inf, all equal)."""
    width = keys.dtype.itemsize * 8
    wide = np.uint64 if width == 64 else np.uint32
    kind = keys.dtype.kind
    if kind in "bu":
        return keys.astype(wide)
    unsigned = keys.view(np.dtype(f"u{width // 8}")).astype(wide)
    sign = wide(1) << wide(width - 1)
    if kind == "i":
        return unsigned ^ sign
    mask = wide((1 << width) - 1)
    mapped = np.where(unsigned & sign, ~unsigned & mask, unsigned | sign)
    mapped = np.where(keys == 0, sign, mapped)
    return np.where(np.isnan(keys), mask, mapped).astype(wide)


def digits(keys: np.ndarray, shift: int) -> np.ndarray:
    bits = ordered_bits(keys)
    return ((bits >> bits.dtype.type(shift)) & (RADIX - 1)).astype(np.int64)


def check_rows(name: str, types, count: int | None = None):
    require(count is None or len(types) == count, f"prim.{name} takes {count} operands, got {fmt_types(types)}")
    require(all(t.ndim == 2 for t in types), f"prim.{name}: operands are (rows, length), got {fmt_types(types)}")


def check_keys(name: str, keys: TensorType, attrs):
    require(keys.dtype in SORT_KEY_DTYPES, f"prim.{name}: keys of dtype {keys.dtype} cannot be radix sorted")
    require(attrs["shift"] in digit_shifts(keys.dtype), f"prim.{name}: shift {attrs['shift']} is not a digit of "
                                                        f"{keys.dtype} keys")
    require(attrs["run_length"] > 0, f"prim.{name}: run_length must be positive")


def counts_type(keys: TensorType, run_length: int) -> TensorType:
    rows, length = keys.shape
    return TensorType(index_dtype_of(rows, length), (rows, RADIX * runs_of(length, run_length)))


def radix_histogram_infer(types, attrs):
    check_rows("radix_histogram", types, 1)
    check_keys("radix_histogram", types[0], attrs)
    return [counts_type(types[0], attrs["run_length"])]


def radix_histogram(keys, *, shift, run_length):
    rows, length = keys.shape
    runs = runs_of(length, run_length)
    counts = np.zeros((rows, RADIX * runs), NUMPY_DTYPES[index_dtype_of(rows, length)])
    run = np.arange(length) // run_length
    for r in range(rows):
        np.add.at(counts[r], digits(keys[r], shift) * runs + run, 1)
    return counts


def radix_scatter_infer(types, attrs):
    check_rows("radix_scatter", types)
    require(len(types) >= 2, f"prim.radix_scatter takes keys, payloads and offsets, got {fmt_types(types)}")
    *operands, offsets = types
    require(0 <= attrs["key"] < len(operands), f"prim.radix_scatter: key {attrs['key']} is not one of "
                                               f"the {len(operands)} operands")
    keys = operands[attrs["key"]]
    check_keys("radix_scatter", keys, attrs)
    require(all(p.shape == keys.shape and p.dtype not in COMPLEXES for p in operands),
            f"prim.radix_scatter: operands must be real arrays of one shape, got {fmt_types(types)}")
    require(offsets == counts_type(keys, attrs["run_length"]),
            f"prim.radix_scatter: offsets must be {counts_type(keys, attrs['run_length'])}, got {offsets}")
    return operands


def radix_scatter(*arrays, shift, run_length, key):
    *operands, offsets = arrays
    rows, length = operands[key].shape
    runs = runs_of(length, run_length)
    results = [np.empty_like(a) for a in operands]
    group_of = digits(operands[key], shift) * runs + np.arange(length) // run_length
    for r in range(rows):
        group = group_of[r]
        order = np.argsort(group, kind="stable")
        first = np.searchsorted(group[order], group[order], side="left")  # the group's first place in order
        position = np.empty(length, np.int64)
        position[order] = offsets[r, group[order]] + np.arange(length) - first
        for source, result in zip(operands, results):
            result[r, position] = source[r]
    return tuple(results)


def accumulator_type(x: TensorType) -> str:
    return "f32" if x.dtype in ("f16", "bf16") else x.dtype


# The scans' reducers: the `cumulative` op's, and logaddexp (lax.cumlogsumexp; the frontend calls it).
SCAN_REDUCERS = (*CUMULATIVE_UFUNCS, "logaddexp")


def check_scan(name: str, x: TensorType, attrs):
    reducer = attrs["reducer"]
    require(reducer in SCAN_REDUCERS, f"prim.{name}: unknown reducer {reducer!r}; expected one of "
                                      f"{', '.join(SCAN_REDUCERS)}")
    if reducer == "logaddexp":
        require(x.dtype in ("f16", "bf16", "f32", "f64"), f"prim.{name}: logaddexp scans floats, got {x}")
    else:
        check_reducer(f"prim.{name}", x, reducer)
    require(attrs.get("run_length", 1) > 0, f"prim.{name}: run_length must be positive")


def logaddexp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log(exp(a) + exp(b)) as the scan kernel computes it: max + log1p(exp(-|a - b|)), equal operands
    (infinities too) giving max + log 2."""
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.where(a == b, a.dtype.type(0), -np.abs(a - b))
        return np.maximum(a, b) + np.log1p(np.exp(gap))


def scan_identity(reducer: str, dtype: np.dtype):
    return dtype.type(-np.inf) if reducer == "logaddexp" else reducer_identity(reducer, dtype)


def accumulate(x: np.ndarray, reducer: str) -> np.ndarray:
    """The inclusive scan of each row, element after element."""
    if reducer != "logaddexp":
        return cumulative(x, reducer=reducer, axis=1, reverse=False)
    out = x.copy()
    for j in range(1, x.shape[1]):
        out[:, j] = logaddexp(out[:, j - 1], x[:, j])
    return out


# A work-item's run of 64 elements: on the host, the tile's wave and barrier regions cost little against
# its elements' (16 took 1.8x as long, 128 5% less).
LOOKBACK_ITEMS, LOOKBACK_WAVE = 64, 64
# A tile's work-items (the `workgroup` attribute), the largest first: 256 where the tiles cover the
# target's CUs (its wave scans' and look-back's cost spread over the most elements), fewer where
# only fewer do (lookback_workgroup).
LOOKBACK_WORKGROUPS = (256, 128, 64)
LOOKBACK_DTYPES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64")


def lookback_tile(workgroup: int) -> int:
    return LOOKBACK_ITEMS * workgroup


def lookback_workgroup(rows: int, length: int, compute_units: int) -> int:
    """The work-items of the single-pass scan's tiles for rows x length: the largest of
    LOOKBACK_WORKGROUPS whose tiles are at least `compute_units` workgroups; the largest where none
    is (fewer than 4096 elements a CU: smaller tiles would leave CUs idle still, and on the host
    each tile's own work, its wave and barrier regions and its look-back, costs more per element)."""
    covering = [w for w in LOOKBACK_WORKGROUPS if rows * runs_of(length, lookback_tile(w)) >= compute_units]
    return covering[0] if covering else LOOKBACK_WORKGROUPS[0]


def lookback_state_words(rows: int, length: int, workgroup: int) -> int:
    return 1 + 3 * rows * runs_of(length, lookback_tile(workgroup))


def lookback_init_infer(types, attrs):
    check_rows("lookback_init", types, 1)
    (x,) = types
    check_scan("lookback_init", x, attrs)
    require(accumulator_type(x) in LOOKBACK_DTYPES, f"prim.lookback_init: no single-pass scan of {x}")
    require(attrs["workgroup"] in LOOKBACK_WORKGROUPS, f"prim.lookback_init: tiles of {attrs['workgroup']} "
                                                       f"work-items; expected one of {LOOKBACK_WORKGROUPS}")
    return [TensorType("u64", (lookback_state_words(*x.shape, attrs["workgroup"]),))]


def lookback_init(x, *, reducer, exclusive, workgroup):
    return np.zeros(lookback_state_words(*x.shape, workgroup), np.uint64)


def lookback_scan_infer(types, attrs):
    check_rows("lookback_scan", types[:1], 1)
    x, state = types
    (expected,) = lookback_init_infer([x], attrs)
    require(state == expected, f"prim.lookback_scan: the state must be {expected}, got {state}")
    return [x]


# rocPRIM's wave scan on GFX9 (warp_scan_dpp): each row of 16 lanes scanned by Hillis and Steele's
# steps of 1, 2, 4 and 8 lanes, then rows 1 and 3 take row 0's and row 2's totals (row_bcast:15),
# then rows 2 and 3 take lane 31's (row_bcast:31); each step a WaveMove (ir/kernel.py: WAVE_MOVES).
WAVE_SCAN_MOVES = ("row_shr:1", "row_shr:2", "row_shr:4", "row_shr:8", "row_bcast:15", "row_bcast:31")


def joined(reducer: str, a, a_heads, b, b_heads):
    """(a, a has a head) (+) (b, b has a head): b where b has a head, else a <reducer> b (the
    segmented scan's operator on pairs, associative; without heads the reducer)."""
    with np.errstate(all="ignore"):
        return np.where(b_heads, b, combined(reducer, a, b)), a_heads | b_heads


def folded(values: np.ndarray, heads: np.ndarray, reducer: str):
    """The pairs' inclusive scan along the last axis, element after element."""
    values, heads = values.copy(), heads.copy()
    for k in range(1, values.shape[-1]):
        values[..., k], heads[..., k] = joined(reducer, values[..., k - 1], heads[..., k - 1], values[..., k],
                                               heads[..., k])
    return values, heads


def wave_scans(totals: np.ndarray, heads: np.ndarray, reducer: str):
    """Each LOOKBACK_WAVE lanes' inclusive scan of pairs by WAVE_SCAN_MOVES: at each move, a lane
    that reads another joins that lane's pair before its own, as the kernel does."""
    lanes = totals.reshape(*totals.shape[:-1], -1, LOOKBACK_WAVE)
    flags = heads.reshape(lanes.shape)
    lane = np.arange(LOOKBACK_WAVE)
    for pattern in WAVE_SCAN_MOVES:
        reads, sources = WAVE_MOVES[pattern][0](lane), wave_move_sources(pattern, LOOKBACK_WAVE)
        moved, moved_flags = joined(reducer, lanes[..., sources], flags[..., sources], lanes, flags)
        lanes, flags = np.where(reads, moved, lanes), np.where(reads, moved_flags, flags)
    return lanes.reshape(totals.shape), flags.reshape(totals.shape)


def lookback_reference(x, reducer, exclusive, workgroup, heads=None):
    """The single-pass scan, association for association (module docstring); segmented where
    `heads` is given."""
    rows, length = x.shape
    tile = lookback_tile(workgroup)
    tiles = runs_of(length, tile)
    part = wide(x)
    identity = scan_identity(reducer, part.dtype)
    padded = np.full((rows, tiles * tile), identity, part.dtype)
    padded[:, :length] = part
    padded_heads = np.zeros(padded.shape, bool)
    if heads is not None:
        padded_heads[:, :length] = heads
    runs, run_heads = padded.reshape(-1, LOOKBACK_ITEMS), padded_heads.reshape(-1, LOOKBACK_ITEMS)
    totals, total_heads = folded(runs, run_heads, reducer)
    scans, scan_heads = wave_scans(totals[:, -1].reshape(-1, workgroup),
                                   total_heads[:, -1].reshape(-1, workgroup), reducer)
    last_lanes = slice(LOOKBACK_WAVE - 1, None, LOOKBACK_WAVE)
    waves, wave_heads = folded(scans[:, last_lanes], scan_heads[:, last_lanes], reducer)  # [:, w]: waves 0..w
    prefixes, _ = folded(waves[:, -1].reshape(rows, tiles), wave_heads[:, -1].reshape(rows, tiles), reducer)
    previous = np.roll(prefixes.reshape(-1), 1)                 # [t]: the row's tiles before t (t > 0)
    lane = np.arange(workgroup) % LOOKBACK_WAVE
    # The waves before this one (w > 0) and this wave's lanes before this one (lane > 0).
    wave_before = [np.repeat(np.roll(a, 1, axis=1), LOOKBACK_WAVE, axis=1) for a in (waves, wave_heads)]
    in_wave = [np.roll(a, 1, axis=1) for a in (scans, scan_heads)]
    both = joined(reducer, *wave_before, *in_wave)
    before, before_heads = (np.where(lane == 0, w, np.where(np.arange(workgroup) < LOOKBACK_WAVE, i, j))
                            for w, i, j in zip(wave_before, in_wave, both))
    carries = np.where(np.arange(workgroup) == 0, previous[:, None],
                       joined(reducer, previous[:, None], False, before, before_heads)[0])
    carries = np.where((np.arange(rows * tiles) % tiles == 0)[:, None], before, carries)
    carries = carries.reshape(-1)
    first = np.zeros(rows * tiles * workgroup, bool)
    first[::tiles * workgroup] = True                 # a row's first run has no carry
    if heads is None:
        result = scanned(runs, carries, reducer, exclusive)
        result[first] = scanned(runs[first], None, reducer, exclusive)
    else:
        result = segmented(runs, run_heads, carries, reducer, exclusive)
        result[first] = segmented(runs[first], run_heads[first], None, reducer, exclusive)
    return round_to(result.reshape(rows, -1)[:, :length], x.dtype)


def lookback_scan(x, state, *, reducer, exclusive, workgroup):
    return lookback_reference(x, reducer, exclusive, workgroup) if x.shape[1] else x.copy()


def segmented_lookback_scan_infer(types, attrs):
    x, heads, state = types
    require(heads == TensorType("bool", x.shape),
            f"prim.segmented_lookback_scan: heads must be bool of x's shape, got {fmt_types(types)}")
    return lookback_scan_infer([x, state], attrs)


def segmented_lookback_scan(x, heads, state, *, reducer, exclusive, workgroup):
    return lookback_reference(x, reducer, exclusive, workgroup, heads) if x.shape[1] else x.copy()


def run_totals_infer(types, attrs):
    check_rows("run_totals", types, 1)
    (x,) = types
    check_scan("run_totals", x, attrs)
    rows, length = x.shape
    return [TensorType(accumulator_type(x), (rows, runs_of(length, attrs["run_length"])))]


def wide(x: np.ndarray) -> np.ndarray:
    return x.astype(compute_dtype(x.dtype))


def run_totals(x, *, reducer, run_length):
    rows, length = x.shape
    runs = runs_of(length, run_length)
    totals = np.empty((rows, runs), compute_dtype(x.dtype))
    for u in range(runs):
        part = wide(x[:, u * run_length:(u + 1) * run_length])
        totals[:, u] = accumulate(part, reducer)[:, -1]
    return totals


def scan_infer(types, attrs):
    check_rows("scan", types, 1)
    check_scan("scan", types[0], attrs)
    return [types[0]]


def scanned(x, carry, reducer, exclusive):
    """One run scanned sequentially from `carry` (None: from its first element, or the identity if
    exclusive), in the accumulator dtype, each result rounded once to x's dtype."""
    rows = x.shape[0]
    part = wide(x)
    if exclusive:
        start = carry if carry is not None else np.full(rows, scan_identity(reducer, part.dtype), part.dtype)
        sequence = np.concatenate([start[:, None], part[:, :-1]], axis=1)
        result = accumulate(sequence, reducer)
    elif carry is not None:
        sequence = np.concatenate([carry[:, None], part], axis=1)
        result = accumulate(sequence, reducer)[:, 1:]
    else:
        result = accumulate(part, reducer)
    return round_to(result, x.dtype)


def scan(x, *, reducer, exclusive):
    return scanned(x, None, reducer, exclusive) if x.shape[1] else x.copy()


def scan_runs_infer(types, attrs):
    check_rows("scan_runs", types, 2)
    x, carries = types
    check_scan("scan_runs", x, attrs)
    expected = TensorType(accumulator_type(x), (x.shape[0], runs_of(x.shape[1], attrs["run_length"])))
    require(carries == expected, f"prim.scan_runs: carries must be {expected}, got {carries}")
    return [x]


def scan_runs(x, carries, *, reducer, exclusive, run_length):
    result = np.empty_like(x)
    for u in range(carries.shape[1]):
        part = slice(u * run_length, (u + 1) * run_length)
        result[:, part] = scanned(x[:, part], carries[:, u] if u else None, reducer, exclusive)
    return result


def segmented_run_totals_infer(types, attrs):
    check_rows("segmented_run_totals", types, 2)
    x, heads = types
    check_scan("segmented_run_totals", x, attrs)
    require(heads == TensorType("bool", x.shape), f"prim.segmented_run_totals: heads must be bool of x's shape, "
                                                  f"got {fmt_types(types)}")
    runs = (x.shape[0], runs_of(x.shape[1], attrs["run_length"]))
    return [TensorType(accumulator_type(x), runs), TensorType("bool", runs)]


def segmented_run_totals(x, heads, *, reducer, run_length):
    rows, length = x.shape
    runs = runs_of(length, run_length)
    totals = np.empty((rows, runs), compute_dtype(x.dtype))
    reset = np.empty((rows, runs), bool)
    for u in range(runs):
        part = slice(u * run_length, (u + 1) * run_length)
        totals[:, u] = segmented(wide(x[:, part]), heads[:, part], None, reducer, exclusive=False)[:, -1]
        reset[:, u] = heads[:, part].any(axis=1)
    return totals, reset


def segmented(part, heads, carry, reducer, exclusive):
    """Rows of one run scanned element by element in part's dtype, starting again at each head:
    inclusive acc = x at a head, else acc <reducer> x; exclusive results are the acc before each
    element, the identity at a head. The run's first element combines with `carry` unless it is a
    head; without a carry (a row's first run) it is one."""
    result = np.empty_like(part)
    identity = scan_identity(reducer, part.dtype)
    acc = np.full(part.shape[0], identity, part.dtype) if carry is None else carry.astype(part.dtype)
    for j in range(part.shape[1]):
        head = heads[:, j] | (carry is None and j == 0)
        before = np.where(head, identity, acc)
        with np.errstate(all="ignore"):
            acc = np.where(head, part[:, j], combined(reducer, acc, part[:, j]))
        result[:, j] = before if exclusive else acc
    return result


def combined(reducer: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return logaddexp(a, b) if reducer == "logaddexp" else CUMULATIVE_UFUNCS[reducer](a, b)


def segmented_scan_runs_infer(types, attrs):
    check_rows("segmented_scan_runs", types, 3)
    x, heads, carries = types
    check_scan("segmented_scan_runs", x, attrs)
    expected = TensorType(accumulator_type(x), (x.shape[0], runs_of(x.shape[1], attrs["run_length"])))
    require(heads == TensorType("bool", x.shape) and carries == expected,
            f"prim.segmented_scan_runs: heads bool of x's shape and carries {expected}, got {fmt_types(types)}")
    return [x]


def segmented_scan_runs(x, heads, carries, *, reducer, exclusive, run_length):
    result = np.empty_like(x)
    for u in range(carries.shape[1]):
        part = slice(u * run_length, (u + 1) * run_length)
        result[:, part] = round_to(segmented(wide(x[:, part]), heads[:, part], carries[:, u] if u else None,
                                             reducer, exclusive), x.dtype)
    return result


def merge_search_infer(types, attrs):
    require(len(types) == 3 and all(t.ndim == 1 for t in types) and types[0].dtype == types[1].dtype
            and types[0].dtype in SORT_KEY_DTYPES and types[2] == TensorType("i32", types[1].shape)
            and attrs["side"] in ("left", "right"),
            f"prim.merge_search takes a sorted 1-d array, sorted 1-d queries of one real dtype and the queries' i32 "
            f"places, side left or right, got {fmt_types(types)}, side {attrs['side']!r}")
    return [TensorType("i32", types[1].shape)]


def merge_search(a, v, places, *, side):
    result = np.empty(v.shape, np.int32)
    result[places] = np.searchsorted(a, v, side=side)   # numpy's order: NaN last, as jnp.sort
    return result


def bin_slots(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    slots = np.searchsorted(edges, x, side="right")
    slots[np.isnan(x)] = edges.size
    slots[x == edges[-1]] -= 1
    return slots


def bin_counts_infer(types, attrs):
    weighs_right = len(types) == 2 or (len(types) == 3 and types[2].shape == types[0].shape)
    require(weighs_right and all(t.ndim == 1 for t in types),
            f"prim.bin_counts takes x, edges and optional weights, 1-d, x and weights of one length, "
            f"got {fmt_types(types)}")
    x, edges, *weights = types
    require(edges.dtype == x.dtype and edges.size >= 1, f"prim.bin_counts: edges must be a non-empty {x.dtype} "
                                                         f"vector, got {edges}")
    counted = weights[0] if weights else edges
    require(counted.dtype not in COMPLEXES + ("bool",), f"prim.bin_counts: weights of dtype {counted.dtype}")
    return [TensorType(accumulator_type(counted), (runs_of(x.size, attrs["run_length"]), edges.size))]


def bin_counts(x, edges, *weights, run_length, even):
    weights = weights[0] if weights else np.ones(x.shape, edges.dtype)
    runs = runs_of(x.size, run_length)
    counts = np.zeros((runs, edges.size), compute_dtype(weights.dtype))
    slots, wide_weights = bin_slots(x, edges), wide(weights)
    run = np.arange(x.size) // run_length
    kept = slots < edges.size
    np.add.at(counts, (run[kept], slots[kept]), wide_weights[kept])  # in element order, as the kernel
    return counts


def segment_reduce_infer(types, attrs):
    require(len(types) == 2 and types[0].ndim >= 1 and types[1].ndim == 1 and types[1].shape[0] == types[0].shape[0],
            f"prim.segment_reduce takes data (n, ...) and ids (n,), got {fmt_types(types)}")
    data, ids = types
    require(ids.dtype in INTS, f"prim.segment_reduce: ids must be integers, got {ids}")
    require(data.dtype not in COMPLEXES and attrs["reducer"] in ("sum", "prod", "max", "min"),
            f"prim.segment_reduce: a sum, prod, max or min of real data, got {attrs['reducer']} of {data}")
    check_reducer("prim.segment_reduce", data, attrs["reducer"])
    require(attrs["num_segments"] >= 0 and attrs["run_length"] > 0,
            f"prim.segment_reduce: num_segments {attrs['num_segments']}, run_length {attrs['run_length']}")
    return [TensorType(accumulator_type(data), (runs_of(data.shape[0], attrs["run_length"]), attrs["num_segments"],
                                                math.prod(data.shape[1:])))]


def segment_reduce(data, ids, *, reducer, run_length, num_segments):
    part = wide(data).reshape(data.shape[0], math.prod(data.shape[1:]))
    blocks = np.full((runs_of(data.shape[0], run_length), num_segments, part.shape[1]),
                     reducer_identity(reducer, part.dtype), part.dtype)
    kept = (ids >= 0) & (ids < num_segments)
    run = np.arange(data.shape[0]) // run_length
    CUMULATIVE_UFUNCS[reducer].at(blocks, (run[kept], ids[kept]), part[kept])   # in element order, as the kernel
    return blocks


def select_runs_infer(types, attrs):
    require(len(types) == 5, f"prim.select_runs takes mask, values, places, total and fill, got {fmt_types(types)}")
    mask, values, places, total, fill = types
    n = mask.shape[0] if mask.ndim == 1 else -1
    require(mask.dtype == "bool" and values.ndim == 2 and values.shape[0] == n
            and places == TensorType("i64", (runs_of(n, attrs["run_length"]),)) and total == TensorType("i64", ())
            and fill == TensorType(values.dtype, ()),
            f"prim.select_runs: mask bool[n], values (n, inner), places i64[runs], total i64[] and a fill of the "
            f"values' dtype, got {fmt_types(types)}")
    require(attrs["size"] >= 0 and attrs["run_length"] > 0, f"prim.select_runs: size {attrs['size']}")
    return [TensorType(values.dtype, (attrs["size"], values.shape[1]))]


def select_runs(mask, values, places, total, fill, *, run_length, size):
    out = np.full((size, values.shape[1]), fill, values.dtype)
    selected = values[mask][:size]
    out[:len(selected)] = selected
    return out


def top_k_rows_infer(types, attrs):
    check_rows("top_k_rows", types, 1)
    (x,) = types
    require(x.dtype in SORT_KEY_DTYPES and 0 <= attrs["k"] <= x.shape[1],
            f"prim.top_k_rows: k = {attrs['k']} of rows of {x} (k at most the row's length, a sortable dtype)")
    return [TensorType(x.dtype, (x.shape[0], attrs["k"])), TensorType("i32", (x.shape[0], attrs["k"]))]


def top_k_rows(x, *, k):
    order = np.argsort(~ordered_bits(x), axis=1, kind="stable")[:, :k]   # descending, ties in index order
    return np.take_along_axis(x, order, axis=1), order.astype(np.int32)


def row_passes(types, num_keys: int) -> list[tuple[int, int]]:
    """(key operand, shift) of every pass of an LSD sort by the first num_keys operands: the last
    key's digits first, least significant first."""
    return [(key, shift) for key in reversed(range(num_keys)) for shift in digit_shifts(types[key].dtype)]


MAX_ROW_LENGTH = 1 << 16     # radix_sort_rows' rows: 256 KiB of f32 keys, which stay in cache between passes


def radix_sort_rows_infer(types, attrs):
    check_rows("radix_sort_rows", types)
    require(types[0].shape[1] <= MAX_ROW_LENGTH, f"prim.radix_sort_rows: rows of at most {MAX_ROW_LENGTH} elements, "
                                                 f"got {fmt_types(types)}")
    require(1 <= attrs["num_keys"] <= len(types), f"prim.radix_sort_rows: num_keys {attrs['num_keys']} of "
                                                  f"{len(types)} operands")
    require(all(t.shape == types[0].shape and t.dtype in SORT_KEY_DTYPES for t in types),
            f"prim.radix_sort_rows: operands must be real arrays of one shape, got {fmt_types(types)}")
    scratch = types if len(row_passes(types, attrs["num_keys"])) > 1 else []
    return [*types, *scratch]


def radix_sort_rows(*operands, num_keys):
    states = [operands]
    for key, shift in row_passes(operands, num_keys):
        order = np.argsort(digits(states[-1][key], shift), axis=1, kind="stable")
        states.append(tuple(np.take_along_axis(a, order, axis=1) for a in states[-1]))
    return (*states[-1], *(states[-2] if len(states) > 2 else ()))


RADIX_ATTRS = {"shift": "int", "run_length": "int"}
SEGMENT_ATTRS = {"reducer": "str", "run_length": "int", "num_segments": "int"}

LOOKBACK_ATTRS = {"reducer": "str", "exclusive": "bool", "workgroup": "int"}
ROUTINES = {
    "radix_histogram": Routine(RADIX_ATTRS, radix_histogram_infer, radix_histogram,
                               "per-run counts of one 8-bit digit of the keys' ordered bits"),
    "radix_scatter": Routine({**RADIX_ATTRS, "key": "int"}, radix_scatter_infer, radix_scatter,
                             "every operand stably scattered by one digit of one of them"),
    "radix_sort_rows": Routine({"num_keys": "int"}, radix_sort_rows_infer, radix_sort_rows,
                               "each row radix sorted whole by one wave, in cache"),
    "run_totals": Routine({"reducer": "str", "run_length": "int"}, run_totals_infer, run_totals,
                          "each run's reduction"),
    "scan": Routine({"reducer": "str", "exclusive": "bool"}, scan_infer, scan, "a sequential scan of each row"),
    "lookback_init": Routine(LOOKBACK_ATTRS, lookback_init_infer, lookback_init,
                             "the single-pass scan's look-back state, zeroed"),
    "lookback_scan": Routine(LOOKBACK_ATTRS, lookback_scan_infer, lookback_scan,
                             "a single-pass scan of each row (look-back over tiles)"),
    "segmented_lookback_scan": Routine(LOOKBACK_ATTRS, segmented_lookback_scan_infer,
                                       segmented_lookback_scan,
                                       "a single-pass segmented scan of each row (look-back over tiles of pairs)"),
    "scan_runs": Routine({"reducer": "str", "exclusive": "bool", "run_length": "int"}, scan_runs_infer, scan_runs,
                         "each run scanned from the carry of the runs before it"),
    "segment_reduce": Routine(SEGMENT_ATTRS, segment_reduce_infer, segment_reduce,
                              "per-run blocks of a segmented reduction"),
    # For sorted ids the reference's element order gives the kernel's sums exactly.
    "segment_reduce_sorted": Routine(SEGMENT_ATTRS, segment_reduce_infer, segment_reduce,
                                     "per-run blocks of a segmented reduction of sorted ids"),
    "segmented_run_totals": Routine({"reducer": "str", "run_length": "int"}, segmented_run_totals_infer,
                                    segmented_run_totals, "each run's reduction since its last head, and whether it has one"),
    "segmented_scan_runs": Routine({"reducer": "str", "exclusive": "bool", "run_length": "int"},
                                   segmented_scan_runs_infer, segmented_scan_runs,
                                   "each run scanned again from each head, from its carry before the first"),
    "merge_search": Routine({"side": "str"}, merge_search_infer, merge_search,
                            "searchsorted of sorted queries by a merge path"),
    "top_k_rows": Routine({"k": "int"}, top_k_rows_infer, top_k_rows, "each row's k largest, descending"),
    "select_runs": Routine({"run_length": "int", "size": "int"}, select_runs_infer, select_runs,
                           "stream compaction of runs from their scanned places"),
    "bin_counts": Routine({"run_length": "int", "even": "bool"}, bin_counts_infer, bin_counts, "per-run weight sums of each bin"),
}
