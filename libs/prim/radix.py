"""The radix sort's kernels: one digit's per-run histogram and its stable scatter (rows longer
than a cache holds: one pass through memory per digit), and the whole sort of rows that fit, a
wave per row (`rows_kernel`).

Both passes cut a row into runs of RUN_LENGTH consecutive elements; counts[row, d * runs + u] is
the number of digits d in run u (digit-major, run-minor, so that the exclusive scan of a row's
counts gives every run's first place for each digit).
  - histogram (`histogram_kernel`): rocPRIM's block histogram, a workgroup per run counting the
    digits into LDS by atomic adds;
  - scatter (`scatter_kernel`): rocPRIM's block radix rank by matching, a workgroup of one wave
    per run: the run's 256 LDS counters start at the offsets (the place of the run's first
    element of digit d); each stripe of 64 keys ranks every key among the earlier keys of its
    digit by wave ballots of the digit's bits (WaveBallot, WaveCountBelow), scatters, and
    advances the counters: equal digits keep their order, so every pass is stable and the LSD
    sort of all passes is.
The digit is read from the key on the fly (`ordered_bits`), so the keys travel unchanged: the
sorted keys keep their -0.0 and NaN bits. The shift is a scalar parameter: one kernel serves every
pass of a key dtype, and the row count and length are scalar parameters: one kernel serves every
problem of a dtype.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...lowering.emitters import operand_buffers
from .routines import RADIX, RADIX_BITS, index_dtype_of, key_bits, row_passes

WAVE = 64           # the scatter's and the rows' workgroup: one wave, a lane per key of a stripe (a 64-bit ballot)
BLOCK_ITEMS = RADIX  # the histogram's workgroup: a work-item per digit counter
RUN_LENGTH = 4096   # elements per run (the calls' run_length): a workgroup's share of its row


def ordered_bits(key: K.Expr, dtype: str) -> K.Expr:
    """The kernel form of routines.ordered_bits: unsigned bits (u32, u64 for 64-bit keys) in numpy's order."""
    width = key_bits(dtype)
    wide = "u64" if width == 64 else "u32"
    if dtype == "bool":
        return key.cast("u8").cast(wide)
    if dtype[0] == "u":
        return key.cast(wide)
    sign = K.Const(1 << (width - 1), wide)
    if dtype[0] == "i":
        unsigned = key.bitcast(f"u{width}").cast(wide) if width in (32, 64) else \
            (key.cast("i32") + (1 << (width - 1))).bitcast("u32")
        return unsigned ^ sign if width in (32, 64) else unsigned
    bits = key.bitcast(f"u{width}").cast(wide)
    mask = K.Const((1 << width) - 1, wide)
    negative = (bits & sign).ne(K.Const(0, wide))
    mapped = K.select(negative, ~bits & mask, bits | sign)
    return K.select(key.ne(key), mask, K.select(key.eq(K.Const(0.0, dtype)), sign, mapped))


def digit(key: K.Expr, dtype: str, shift: K.Expr, index: str) -> K.Expr:
    bits = ordered_bits(key, dtype)
    return ((bits >> shift.cast(bits.dtype)) & K.Const(RADIX - 1, bits.dtype)).cast(index)


class RunLayout:
    """The scalar parameters, ids and bounds the histogram and the scatter share."""

    def __init__(self, op: Op, key: int = 0):
        keys = op.operands[key].type
        self.key_dtype = keys.dtype
        self.index = index_dtype_of(*keys.shape)
        self.rows, self.length = (K.ScalarParam(n, self.index) for n in ("rows", "length"))
        self.shift = K.ScalarParam("shift", "u32")
        self.run_length = op.attrs["run_length"]
        self.runs = (self.length + (self.run_length - 1)) / self.run_length
        self.arguments = (("rows", keys.shape[0]), ("length", keys.shape[1]), ("shift", op.attrs["shift"]))
        idx = self.index
        self.t, self.run, self.row, self.start, self.stop, self.j, self.d, self.place = (
            K.Var(n, idx) for n in ("t", "run", "row", "start", "stop", "j", "d", "place"))
        self.key = K.Var("key", keys.dtype)

    def buffers(self, op: Op, counts_operand: int | None) -> list:
        """The op's buffers, sized by the scalar parameters: rows x length elements, or the counts."""
        counts = self.rows * self.runs * RADIX
        sized = []
        for k, buffer in enumerate(operand_buffers(op)):
            count = counts if k == counts_operand else self.rows * self.length
            sized.append(K.GlobalBuffer(buffer.name, buffer.dtype, count, buffer.readonly))
        return sized

    def count_place(self, d: K.Expr) -> K.Expr:
        """Where digit d of this run counts in the row's counts (digit-major, run-minor)."""
        return (self.row * RADIX + d) * self.runs + self.run


def histogram_kernel(op: Op, name: str) -> K.Kernel:
    """rocPRIM's block histogram of one digit: a workgroup of BLOCK_ITEMS work-items per run, reading
    it in stripes of BLOCK_ITEMS consecutive elements, one a work-item (coalesced on the GPU; on the
    host the stripe loop is uniform, outside the work-item loop, so the run streams in order), and
    counting each digit into the workgroup's 256 LDS counters by an atomic add (ds_add_u32 on
    gfx942); work-item d then writes counter d to the run's place of digit d. Counts are integers,
    so the adds' order changes nothing."""
    layout = RunLayout(op)
    keys, counts = layout.buffers(op, counts_operand=1)
    idx, j, run, row, lid = layout.index, layout.j, layout.run, layout.row, layout.t
    bins = K.LdsBuffer("bins", "i32", RADIX)
    key, stripe = K.Var("key", layout.key_dtype), K.Var("stripe", idx)
    body = [K.Let(lid, K.workitem_id(0).cast(idx)), K.Let(run, K.workgroup_id(0).cast(idx)),
            K.Let(row, K.workgroup_id(1).cast(idx)), K.Let(layout.start, run * layout.run_length),
            K.Let(layout.stop, K.minimum(layout.start + layout.run_length, layout.length)),
            K.Store(bins, lid, K.Const(0, "i32")),
            K.Barrier(),
            K.For(stripe, layout.start, layout.stop, BLOCK_ITEMS, [
                K.Let(j, stripe + lid),
                K.If(j < layout.stop, [
                    K.Let(key, keys[row * layout.length + j]),
                    K.AtomicRMW(K.Var("before", "i32"), "add", bins, digit(key, layout.key_dtype, layout.shift, idx),
                                K.Const(1, "i32"))])], uniform=True),
            K.Barrier(),
            K.Store(counts, layout.count_place(lid), bins[lid].cast(idx))]
    return K.Kernel(name, params=[keys, counts, layout.rows, layout.length, layout.shift],
                    grid=(layout.runs, layout.rows), workgroup_size=(BLOCK_ITEMS,), body=body, lds=[bins],
                    arguments=layout.arguments)


def ranked_stripes(start, stop, lane, read_key, key_dtype: str, shift, counter: K.LdsBuffer, place_of, moves,
                   idx: str, key: K.Var, j: K.Var, d: K.Var, place: K.Var) -> K.For:
    """rocPRIM's block radix rank by matching over elements [start, stop), a stripe of WAVE
    consecutive keys at a time (a lane each), under one wave: per stripe, `key` = read_key(j) and its
    digit `d`, a ballot of each of the digit's 8 bits, and-ed (or their complements) into the mask
    of the lanes whose digit equals this lane's (its peers); `place` = place_of(d) (from the LDS
    counter of d) plus the peers below the lane (WaveCountBelow: v_mbcnt on gfx942); `moves` (which
    read place, key, j) for the stripe's lanes inside the range; after a barrier the last of each
    digit's peers advances the counter past them. Equal digits keep their order (stripes in order,
    lanes in order): the pass is stable."""
    stripe, valid = K.Var("stripe", idx), K.Var("valid", "bool")
    peers, rank = K.Var("peers", "u64"), K.Var("rank", "i32")
    match = [K.WaveBallot(peers, valid)]
    for b in range(RADIX_BITS):
        bit, lanes = K.Var(f"bit{b}", "bool"), K.Var(f"lanes{b}", "u64")
        match += [K.Let(bit, ((d >> b) & 1).eq(1)), K.WaveBallot(lanes, bit),
                  K.Assign(peers, peers & K.select(bit, lanes, ~lanes))]
    return K.For(stripe, start, stop, WAVE, [
        K.Let(j, stripe + lane),
        K.Let(valid, j < stop),
        K.Let(key, read_key(K.minimum(j, stop - 1))),    # the last stripe's lanes past the range: its last key
        K.Let(d, digit(key, key_dtype, shift, idx)),
        *match,
        K.WaveCountBelow(rank, peers),
        K.Let(place, place_of(d) + rank.cast(idx)),
        K.If(valid, moves),
        K.Barrier(),
        # The last of the peers (no peer in a higher lane) moves the counter past them all.
        K.If(valid & (peers >> lane.cast("u64")).eq(K.Const(1, "u64")), [K.Store(counter, d, counter[d] + rank + 1)]),
        K.Barrier()], uniform=True)


def scatter_kernel(op: Op, name: str) -> K.Kernel:
    """One digit's stable scatter, a workgroup of one wave per run: the run's 256 LDS counters start
    at the offsets (the place of the run's first element of digit d), then `ranked_stripes`."""
    layout = RunLayout(op, op.attrs["key"])
    operands = len(op.operands)
    buffers = layout.buffers(op, counts_operand=operands - 1)
    sources, offsets, results = buffers[:operands - 1], buffers[operands - 1], buffers[operands:]
    idx, row, run, j, key = layout.index, layout.row, layout.run, layout.j, layout.key
    length, lane, d0 = layout.length, K.Var("lane", idx), K.Var("d0", idx)
    counter = K.LdsBuffer("counter", "i32", RADIX)
    if idx == "i32":
        # The counters hold the places themselves.
        start, place_of = offsets[layout.count_place(d0 + lane)].cast("i32"), lambda d: counter[d].cast(idx)
    else:
        # Places past 2^31 do not fit the i32 counters: they count within the run, from its offset.
        start, place_of = K.Const(0, "i32"), lambda d: offsets[layout.count_place(d)] + counter[d].cast(idx)
    moves = [K.Store(result, row * length + layout.place, key if k == op.attrs["key"] else source[row * length + j])
             for k, (source, result) in enumerate(zip(sources, results))]
    body = [
        K.Let(lane, K.workitem_id(0).cast(idx)), K.Let(run, K.workgroup_id(0).cast(idx)),
        K.Let(row, K.workgroup_id(1).cast(idx)), K.Let(layout.start, run * layout.run_length),
        K.Let(layout.stop, K.minimum(layout.start + layout.run_length, length)),
        K.For(d0, 0, RADIX, WAVE, [K.Store(counter, d0 + lane, start)], uniform=True),
        K.Barrier(),
        ranked_stripes(layout.start, layout.stop, lane, lambda at: sources[op.attrs["key"]][row * length + at],
                       layout.key_dtype, layout.shift, counter, place_of, moves, idx, key, j, layout.d, layout.place)]
    return K.Kernel(name, params=[*buffers, layout.rows, layout.length, layout.shift], grid=(layout.runs, layout.rows),
                    workgroup_size=(WAVE,), body=body, lds=[counter], arguments=layout.arguments)


def rows_kernel(op: Op, name: str) -> K.Kernel:
    """radix_sort_rows: a workgroup of one wave per row sorts it whole, pass after pass
    (routines.row_passes, unrolled: each pass's source and destination buffers are fixed), with
    the row's 256 counters in LDS: count the digits (the block histogram's atomic adds, stripes of
    WAVE), scan the counters into places (the first lane), then `ranked_stripes` scatters."""
    types = [v.type for v in op.operands]
    count = len(types)
    rows_count, length_count = types[0].shape
    idx = index_dtype_of(rows_count, length_count)
    rows, length = K.ScalarParam("rows", idx), K.ScalarParam("length", idx)
    buffers = [K.GlobalBuffer(b.name, b.dtype, rows * length, b.readonly) for b in operand_buffers(op)]
    inputs, results, scratch = buffers[:count], buffers[count:2 * count], buffers[2 * count:]
    lane, row, base, stripe, j, d, d0, place, total, seen = (
        K.Var(n, idx) for n in ("lane", "row", "base", "stripe", "j", "d", "d0", "place", "total", "seen"))
    counter = K.LdsBuffer("counter", "i32", RADIX)
    passes = row_passes(types, op.attrs["num_keys"])
    body, source = [], inputs
    for number, (key, shift) in enumerate(passes):
        target = results if (len(passes) - 1 - number) % 2 == 0 else scratch
        value = K.Var(f"key{number}", types[key].dtype)
        shift_const = K.Const(shift, "u32")
        moves = [K.Store(out, base + place, value if k == key else src[base + j])
                 for k, (src, out) in enumerate(zip(source, target))]
        body += [
            K.For(d0, 0, RADIX, WAVE, [K.Store(counter, d0 + lane, K.Const(0, "i32"))], uniform=True),
            K.Barrier(),
            K.For(stripe, 0, length, WAVE, [
                K.Let(j, stripe + lane),
                K.If(j < length, [K.AtomicRMW(K.Var("before", "i32"), "add", counter,
                                              digit(source[key][base + j], types[key].dtype, shift_const, idx),
                                              K.Const(1, "i32"))])], uniform=True),
            K.Barrier(),
            K.If(lane.eq(K.Const(0, idx)), [
                K.Assign(total, K.Const(0, idx)),
                K.For(d, 0, RADIX, 1, [K.Let(seen, counter[d].cast(idx)), K.Store(counter, d, total.cast("i32")),
                                       K.Assign(total, total + seen)])]),
            K.Barrier(),
            ranked_stripes(K.Const(0, idx), length, lane, lambda at: source[key][base + at], types[key].dtype,
                           shift_const, counter, lambda digit_: counter[digit_].cast(idx), moves, idx, value, j, d,
                           place)]
        source = target
    prologue = [K.Let(lane, K.workitem_id(0).cast(idx)), K.Let(row, K.workgroup_id(0).cast(idx)),
                K.Let(base, row * length), K.Let(total, K.Const(0, idx))]
    return K.Kernel(name, params=[*buffers, rows, length], grid=(rows,), workgroup_size=(WAVE,), lds=[counter],
                    body=[*prologue, *body], arguments=(("rows", rows_count), ("length", length_count)))


def describe_rows(op: Op) -> str:
    passes = row_passes([v.type for v in op.operands], op.attrs["num_keys"])
    return (f"segmented LSD radix sort, a wave per row, {len(passes)} passes of {RADIX_BITS}-bit digits in one "
            f"kernel (block histogram, scan, stable scatter ranked by matching), digit counters in LDS ({RADIX})")


def describe(op: Op) -> str:
    keys = op.operands[op.attrs.get("key", 0)].type
    passes = key_bits(keys.dtype) // RADIX_BITS
    sort = (f"LSD radix sort pass of {keys.dtype} keys (shift {op.attrs['shift']}), {RADIX_BITS}-bit digits ({passes} "
            f"passes of histogram, exclusive scan, stable scatter); ")
    if op.attrs["routine"] == "radix_histogram":
        return sort + (f"block histogram: a workgroup of {BLOCK_ITEMS} work-items per run of {op.attrs['run_length']} "
                       f"elements (read striped), digit counters in LDS ({RADIX}) counted by atomic adds")
    return sort + (f"block radix rank by matching: a wave per run of {op.attrs['run_length']} elements, stripes of "
                   f"{WAVE} keys ranked by {RADIX_BITS} ballots of the digit's bits and lane counts, digit counters "
                   f"in LDS ({RADIX})")
