"""The radix sort's kernels: one digit's per-run histogram and its stable scatter (rows longer
than a cache holds: one pass through memory per digit), and the whole sort of rows that fit, a
wave per row (`rows_kernel`).

Both passes cut a row into runs of RUN_LENGTH consecutive elements; counts[row, d * runs + u] is
the number of digits d in run u (digit-major, run-minor, so that the exclusive scan of a row's
counts gives every run's first place for each digit).
  - histogram (`histogram_kernel`): rocPRIM's block histogram, a workgroup per run counting the
    digits into LDS by atomic adds;
  - scatter (`scatter_kernel`): rocPRIM's onesweep scatter, a wave per run reading it in
    coalesced stripes, ranking each stripe's digits across the lanes (`WaveMatchRank`) and
    sending each element to its digit's place in LDS plus its rank.
The digit is read from the key on the fly (`ordered_bits`), so the keys travel unchanged: the
sorted keys keep their -0.0 and NaN bits. The shift is a scalar parameter: one kernel serves every
pass of a key dtype, and the row count and length are scalar parameters: one kernel serves every
problem of a dtype.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...lowering.emitters import operand_buffers
from .routines import RADIX, RADIX_BITS, WAVE_SCAN_MOVES, digit_shifts, index_dtype_of, key_bits, row_passes

BLOCK_ITEMS = RADIX  # the histogram's workgroup: a work-item per digit counter
WAVE = 64           # the scatter's and the row sort's workgroup: one wave, a lane per element of a stripe
RUN_LENGTH = 4096   # elements per run (the calls' run_length)


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
    """The scalar parameters, ids and bounds the two kernels share."""

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
        self.lane, self.run, self.row, self.start, self.stop, self.j = (
            K.Var(n, idx) for n in ("lane", "run", "row", "start", "stop", "j"))

    def buffers(self, op: Op, counts_operand: int | None) -> list:
        """The op's buffers, sized by the scalar parameters: rows x length elements, or the counts."""
        counts = self.rows * self.runs * RADIX
        sized = []
        for k, buffer in enumerate(operand_buffers(op)):
            count = counts if k == counts_operand else self.rows * self.length
            sized.append(K.GlobalBuffer(buffer.name, buffer.dtype, count, buffer.readonly))
        return sized

    def prologue(self) -> list[K.Stmt]:
        """A workgroup per run: its lane, run, row and the run's elements [start, stop)."""
        idx = self.index
        return [K.Let(self.lane, K.workitem_id(0).cast(idx)), K.Let(self.run, K.workgroup_id(0).cast(idx)),
                K.Let(self.row, K.workgroup_id(1).cast(idx)), K.Let(self.start, self.run * self.run_length),
                K.Let(self.stop, K.minimum(self.start + self.run_length, self.length))]

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
    idx, j, row, lid = layout.index, layout.j, layout.row, layout.lane
    bins = K.LdsBuffer("bins", "i32", RADIX)
    key, stripe = K.Var("key", layout.key_dtype), K.Var("stripe", idx)
    body = [*layout.prologue(),
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


def scatter_kernel(op: Op, name: str) -> K.Kernel:
    """rocPRIM's onesweep scatter within a run: a workgroup of one wave per run, reading it in
    stripes of WAVE consecutive elements (a lane each: coalesced on the GPU). The wave keeps one LDS
    counter per digit, from the offsets: the place of the run's next element of that digit. Per
    stripe, each lane's rank among the lanes below it with the same digit (`WaveMatchRank`: a
    ballot per digit bit on gfx942) puts its element at its digit's counter plus its rank, and the
    digit's last lane moves the counter past the stripe's elements of the digit. Stripes in order,
    lanes in order: equal digits keep their order, so every pass is stable and the LSD sort of all
    passes is."""
    key_operand = op.attrs["key"]
    layout = RunLayout(op, key_operand)
    operands = len(op.operands)
    buffers = layout.buffers(op, counts_operand=operands - 1)
    sources, offsets, results = buffers[:operands - 1], buffers[operands - 1], buffers[operands:]
    idx, lane, row, start, stop, j = layout.index, layout.lane, layout.row, layout.start, layout.stop, layout.j
    length = layout.length
    counter = K.LdsBuffer("counter", "i32", RADIX)   # places, or counts below 2^31 within the run
    d, c, s, place = K.Var("d", idx), K.Var("c", idx), K.Var("s", idx), K.Var("place", idx)
    key, inside = K.Var("key", layout.key_dtype), K.Var("inside", "bool")
    rank, last = K.Var("rank", "i32"), K.Var("last", "bool")
    held, next_place = K.Var("held", "i32"), K.Var("next_place", "i32")
    if idx == "i32":
        # The counters hold the places themselves.
        first_place = offsets[layout.count_place(c)].cast("i32")
        place_of = next_place.cast(idx)
    else:
        # Places past 2^31 do not fit the i32 counters: they count within the run, from its offset.
        first_place = K.Const(0, "i32")
        place_of = offsets[layout.count_place(d)] + next_place.cast(idx)
    moves = [K.Store(result, row * length + place, key if k == key_operand else source[row * length + j])
             for k, (source, result) in enumerate(zip(sources, results))]
    # Lanes past the run's end (in its last stripe) read its last element and rank above every lane
    # inside it; they move nothing, and the counters they move are not read again.
    stripe = K.For(s, 0, (stop - start + (WAVE - 1)) / WAVE, 1, [
        K.Let(j, start + s * WAVE + lane),
        K.Let(inside, j < stop),
        K.Let(key, sources[key_operand][row * length + K.minimum(j, stop - 1)]),
        K.Let(d, digit(key, layout.key_dtype, layout.shift, idx)),
        # Every lane reads its counter before the wave op, which every lane of the wave reaches
        # before any goes on to move a counter (on NVPTX a wave is two warps, not in lockstep).
        K.Let(held, counter[d]),
        K.WaveMatchRank(rank, last, d, RADIX_BITS),
        K.Let(next_place, held + rank),
        K.Let(place, place_of),
        K.If(inside, moves),
        K.If(last, [K.Store(counter, d, next_place + 1)]),
        K.Barrier()], uniform=True)   # the counters the last lanes moved, for the next stripe's lanes
    body = [*layout.prologue(),
            K.For(c, lane, RADIX, WAVE, [K.Store(counter, c, first_place)]),
            K.Barrier(),
            stripe]
    return K.Kernel(name, params=[*buffers, layout.rows, layout.length, layout.shift],
                    grid=(layout.runs, layout.rows), workgroup_size=(WAVE,), body=body, lds=[counter],
                    arguments=layout.arguments)


def count_columns(op: Op) -> int:
    """radix_sort_rows' LDS columns of digit counters: one per pass of its widest key."""
    return max(key_bits(v.type.dtype) for v in op.operands[:op.attrs["num_keys"]]) // RADIX_BITS


def rows_kernel(op: Op, name: str) -> K.Kernel:
    """radix_sort_rows: rocPRIM's segmented radix sort, a workgroup of one wave per row sorting it
    whole, pass after pass (routines.row_passes, unrolled: each pass's source and destination
    buffers are fixed), the row staying in cache between passes. Every sweep of the row reads it in
    stripes of WAVE consecutive elements (a lane each: coalesced on the GPU). The wave's LDS holds a
    column of RADIX i32 counters per pass of a key:
      - a first sweep per key counts the digits of all its passes at once (rocPRIM's onesweep
        histogram: a digit's count does not depend on the order of the elements), each lane adding
        its element's digits to their columns by LDS atomic adds;
      - before a pass, the wave scans its column into places (`scanned_column`);
      - the pass's stable scatter ranks each stripe's digits across the lanes (`WaveMatchRank`, as
        `scatter_kernel` does), puts each element at its digit's place plus its rank, and the
        digit's last lane moves the place past the stripe's elements of the digit.
    Stripes in order, lanes in order: equal digits keep their order, every pass is stable. The row
    is read once per pass plus once per key."""
    types = [v.type for v in op.operands]
    count = len(types)
    rows_count, length_count = types[0].shape
    idx = index_dtype_of(rows_count, length_count)
    rows, length = K.ScalarParam("rows", idx), K.ScalarParam("length", idx)
    buffers = [K.GlobalBuffer(b.name, b.dtype, rows * length, b.readonly) for b in operand_buffers(op)]
    inputs, results, scratch = buffers[:count], buffers[count:2 * count], buffers[2 * count:]
    lane, base, s, j, c = (K.Var(n, idx) for n in ("lane", "base", "s", "j", "c"))
    inside = K.Var("inside", "bool")
    passes = row_passes(types, op.attrs["num_keys"])
    columns = count_columns(op)
    counter = K.LdsBuffer("counter", "i32", columns * RADIX)
    stripes = (length + (WAVE - 1)) / WAVE
    # Lanes past the row's end (in its last stripe) read nothing and hold 0: they count nothing,
    # and in a scatter they rank above every lane inside it, so they move nothing, and the places
    # they move are not read again (each pass has its column). On the host the stripe's loads are
    # then one masked vector load.
    stripe_start = [K.Let(j, s * WAVE + lane), K.Let(inside, j < length)]

    def loaded(value: K.Var, buffer: K.GlobalBuffer) -> list[K.Stmt]:
        """value = the lane's element of the row in `buffer`, 0 past the row's end."""
        return [K.Let(value, K.Const(0, value.dtype)), K.If(inside, [K.Assign(value, buffer[base + j])])]

    def counted(key: int, source: K.GlobalBuffer) -> list[K.Stmt]:
        """The count of every pass's digits of operand `key`, a column per pass (the shift's)."""
        value = K.Var(f"key{key}", types[key].dtype)
        shifts = digit_shifts(types[key].dtype)
        digits = [K.Var(f"digit{key}_{shift}", idx) for shift in shifts]
        adds = [K.AtomicRMW(K.Var(f"before{key}_{shift}", "i32"), "add", counter, number * RADIX + d, K.Const(1, "i32"))
                for number, (shift, d) in enumerate(zip(shifts, digits))]
        return [K.For(c, lane, columns * RADIX, WAVE, [K.Store(counter, c, K.Const(0, "i32"))]),
                K.Barrier(),
                K.For(s, 0, stripes, 1, [
                    *stripe_start, *loaded(value, source),
                    *(K.Let(d, digit(value, types[key].dtype, K.Const(shift, "u32"), idx))
                      for shift, d in zip(shifts, digits)),
                    K.Barrier(),   # the digits vectorize on the host, apart from the adds' ordered walk
                    K.If(inside, adds)], uniform=True)]

    body = []
    source = inputs
    for number, (key, shift) in enumerate(passes):
        if number == 0 or passes[number - 1][0] != key:
            body += counted(key, source[key])
        target = results if (len(passes) - 1 - number) % 2 == 0 else scratch
        values = [K.Var(f"v{number}_{k}", src.dtype) for k, src in enumerate(source)]
        d, rank, last = K.Var(f"d{number}", idx), K.Var(f"rank{number}", "i32"), K.Var(f"last{number}", "bool")
        place, next_place = K.Var(f"place{number}", idx), K.Var(f"next_place{number}", "i32")
        held = K.Var(f"held{number}", "i32")
        at = shift // RADIX_BITS * RADIX + d
        body += [
            *scanned_column(counter, K.Const(shift // RADIX_BITS * RADIX, idx), lane, idx, str(number)),
            K.For(s, 0, stripes, 1, [
                *stripe_start,
                *(stmt for value, src in zip(values, source) for stmt in loaded(value, src)),
                K.Let(d, digit(values[key], types[key].dtype, K.Const(shift, "u32"), idx)),
                K.Let(held, counter[at]),   # read before the wave op, as in scatter_kernel: no lane has moved it
                K.WaveMatchRank(rank, last, d, RADIX_BITS),
                K.Let(next_place, held + rank),
                K.Let(place, next_place.cast(idx)),
                K.If(inside, [K.Store(out, base + place, value) for value, out in zip(values, target)]),
                K.If(last, [K.Store(counter, at, next_place + 1)]),
                K.Barrier()], uniform=True)]   # the places the last lanes moved, for the next stripe's lanes
        source = target
    prologue = [K.Let(lane, K.workitem_id(0).cast(idx)), K.Let(base, K.workgroup_id(0).cast(idx) * length)]
    return K.Kernel(name, params=[*buffers, rows, length], grid=(rows,), workgroup_size=(WAVE,), lds=[counter],
                    body=[*prologue, *body], arguments=(("rows", rows_count), ("length", length_count)))


def scanned_column(counter: K.LdsBuffer, first: K.Expr, lane: K.Var, idx: str, tag: str) -> list[K.Stmt]:
    """The exclusive scan of counter[first : first + RADIX] by one wave, in place: lane l takes the
    RADIX / WAVE consecutive counts from first + l x RADIX / WAVE, the wave scans the lanes' sums
    (WAVE_SCAN_MOVES: DPP row shifts and broadcasts on gfx942), and each lane writes its counts'
    places from the sum of the lanes below it. Barriers before (the counts) and after (the places).
    Its variables' names end in `tag`."""
    per_lane = RADIX // WAVE
    at = K.Var(f"scan_at{tag}", idx)
    counts = [K.Var(f"count{k}_{tag}", "i32") for k in range(per_lane)]
    total = K.Var(f"scan_total{tag}", "i32")
    stmts = [K.Barrier(), K.Let(at, first + lane * per_lane),
             *(K.Let(c, counter[at + k]) for k, c in enumerate(counts)),
             K.Let(total, sum(counts[1:], counts[0]))]
    for number, pattern in enumerate(WAVE_SCAN_MOVES):
        moved, reads = K.Var(f"scan_moved{number}_{tag}", "i32"), K.WAVE_MOVES[pattern][0]
        stmts += [K.WaveMove(moved, total, pattern), K.Assign(total, K.select(reads(lane), moved + total, total))]
    place = K.Var(f"scan_place{tag}", "i32")
    stmts.append(K.Let(place, total - sum(counts[1:], counts[0])))
    for k, c in enumerate(counts):
        stmts += [K.Store(counter, at + k, place), *([K.Assign(place, place + c)] if k < per_lane - 1 else [])]
    return [*stmts, K.Barrier()]


def describe_rows(op: Op) -> str:
    passes = row_passes([v.type for v in op.operands], op.attrs["num_keys"])
    return (f"segmented LSD radix sort, a wave per row ({WAVE} lanes, a row per workgroup), {len(passes)} passes of "
            f"{RADIX_BITS}-bit digits in one kernel (per key a count of all its passes' digits by LDS atomic adds, "
            f"then per pass a wave scan of its counts and a stable scatter), the row read in stripes of {WAVE} ranked "
            f"by lane match (a ballot per digit bit), i32 digit counters in LDS ({count_columns(op)} x {RADIX})")


def describe(op: Op) -> str:
    keys = op.operands[op.attrs.get("key", 0)].type
    passes = key_bits(keys.dtype) // RADIX_BITS
    sort = (f"LSD radix sort pass of {keys.dtype} keys (shift {op.attrs['shift']}), {RADIX_BITS}-bit digits ({passes} "
            f"passes of histogram, exclusive scan, stable scatter); ")
    if op.attrs["routine"] == "radix_histogram":
        return sort + (f"block histogram: a workgroup of {BLOCK_ITEMS} work-items per run of {op.attrs['run_length']} "
                       f"elements (read striped), digit counters in LDS ({RADIX}) counted by atomic adds")
    return sort + (f"a wave per run of {op.attrs['run_length']} elements, read in stripes of {WAVE} ranked by "
                   f"lane match (a ballot per digit bit), digit counters in LDS ({RADIX})")
