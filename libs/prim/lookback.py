"""The single-pass scan (rocPRIM's lookback scan): a plan of two launches, `lookback_init` (the
per-tile look-back states marked invalid) and `lookback_scan` (the scan itself), which reads each
element from memory once (reduce-then-scan, scan.py, reads it twice and launches three times).

A workgroup of `workgroup` work-items (the calls' attribute: 256, or fewer where 256 would give
fewer tiles than the target's CUs and fewer give enough, routines.lookback_workgroup) scans a tile of workgroup x ITEMS
elements of a row, ITEMS consecutive elements a work-item. The state (`lookback_init`'s result, u64 words; `lookback_scan` writes it,
see routines.py) holds the ordered tile counter, then per tile (rows x tiles, row-major) its flag
(INVALID, AGGREGATE, PREFIX), its aggregate and its inclusive prefix, values as their bits in a u64.

A workgroup takes its tile from the counter (an atomic add) before anything else, so tiles start
in the order of their ids: every tile a workgroup waits for has started already, on another
thread of the host's pool (a workgroup runs to completion on the thread that started it) or
earlier on the same thread. That is what keeps the spin-waits free of deadlock, on the host as
with rocPRIM's ordered block id on the GPU. Each work-item folds its ITEMS elements; each wave scans
its work-items' totals across lanes as rocPRIM's warp scan does on GFX9 (routines.WAVE_SCAN_MOVES:
row shifts within rows of 16 lanes, then row broadcasts, one WaveMove each: DPP moves on gfx942);
work-item 0 folds the waves' totals, gets the tile's exclusive prefix from its predecessors
and publishes the tile's inclusive prefix; each work-item then scans its elements again (from
cache) from its carry. Where every run is whole (rows of a multiple of ITEMS: the kernel's variant,
`whole_runs`), a work-item reads and writes its run 16 bytes at a time, as rocPRIM's
block_load_vectorize: a group's loads, its combinations in element order, then its stores, which
the GPU backends issue as one vector access each (global_load_dwordx4 on gfx942), with no LDS
staging that the host would pay for; else it walks its run element by element.

`segmented_lookback_scan` (rocPRIM's segmented scan by head flags) is the same kernel over (value,
has a head) pairs, whose operator (routines.joined: the right operand where it holds a head, else
the reducer; heads or-ed) is associative: each total, wave scan, fold and look-back joins pairs, a
tile's flag word carries the HEAD bit of its aggregate, and each work-item's walk restarts at its
heads. Every work-item of a tile so works on its own elements, whatever the segments.

Work-item 0 gets the tile's exclusive prefix by decoupled look-back with a fixed combination
order: it publishes the tile's aggregate (flag AGGREGATE), walks back over its predecessors until
one has published its inclusive prefix (flag PREFIX; a row's first tile publishes it at once),
then folds that prefix with the aggregates of the tiles after it, in tile order. Every inclusive
prefix is so the left fold of its row's aggregates, whichever tiles had published what when it
looked back: float sums (which round by association) and max/min (which pick between -0.0 and 0.0
by operand order) give the same bits run to run, those of the reference (`routines.lookback_scan`)
and of a chain of tiles each waiting for its predecessor's prefix, without that chain's wait; a
tile that finds its predecessor's prefix already there folds nothing.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...ir.types import NUMPY_DTYPES
from .routines import (LOOKBACK_ITEMS as ITEMS, LOOKBACK_WAVE, WAVE_SCAN_MOVES, accumulator_type, index_dtype_of,
                       lookback_tile)
from .scan import combine_scan, scan_identity

WAVE = LOOKBACK_WAVE
ZEROING_WORKGROUP = 256                # lookback_init's work-items, a word each
INVALID, AGGREGATE, PREFIX = 0, 1, 2   # a tile's flag word: its state in the low bits (STATE_BITS),
STATE_BITS, HEAD = 3, 4                # and for a segmented scan whether its aggregate holds a head
GROUP_BYTES = 16                       # a whole run's loads and stores, a group at a time
UINT_OF_WIDTH = {"f32": "u32", "f64": "u64"}


def to_word(value: K.Expr) -> K.Expr:
    """A value's bits in a u64 (integers converted, which a cast back undoes)."""
    if value.dtype in UINT_OF_WIDTH:
        return value.bitcast(UINT_OF_WIDTH[value.dtype]).cast("u64")
    return value.cast("u64")


def from_word(word: K.Expr, dtype: str) -> K.Expr:
    if dtype in UINT_OF_WIDTH:
        return word.cast(UINT_OF_WIDTH[dtype]).bitcast(dtype)
    return word.cast(dtype)


def sizes(idx: str, tile: int):
    rows, length = (K.ScalarParam(n, idx) for n in ("rows", "length"))
    tiles = (length + (tile - 1)) / tile
    return rows, length, tiles, rows * tiles


def init_kernel(op: Op, name: str) -> K.Kernel:
    """Zeroes the state: the counter, every tile's flag (INVALID) and values."""
    x = op.operands[0].type
    idx = index_dtype_of(*x.shape)
    rows, length, _, count = sizes(idx, lookback_tile(op.attrs["workgroup"]))
    words = 1 + 3 * count
    source = K.GlobalBuffer("in0", x.dtype, rows * length, readonly=True)
    state = K.GlobalBuffer("out0", "u64", words)
    i = K.Var("i", idx)
    body = [K.Let(i, K.workgroup_id(0).cast(idx) * ZEROING_WORKGROUP + K.workitem_id(0).cast(idx)),
            K.If(i < words, [K.Store(state, i, K.Const(0, "u64"))])]
    return K.Kernel(name, params=[source, state, rows, length], grid=((words + (ZEROING_WORKGROUP - 1)) / ZEROING_WORKGROUP,),
                    workgroup_size=(ZEROING_WORKGROUP,), body=body,
                    arguments=(("rows", x.shape[0]), ("length", x.shape[1])))


def publish(var: str, state: K.GlobalBuffer, at: K.Expr, word: K.Expr) -> K.AtomicRMW:
    return K.AtomicRMW(K.Var(var, "u64"), "exchange", state, at, word)


def wait_for_flag(flag: K.Var, seen: str, state: K.GlobalBuffer, at: K.Expr, until) -> list[K.Stmt]:
    """Spins reading the flag at `at` (atomic adds of 0) until until(flag) holds."""
    read = K.Var(seen, "u64")
    return [K.Assign(flag, K.Const(INVALID, "u64")),
            K.While(~until(flag), [K.AtomicRMW(read, "add", state, at, K.Const(0, "u64")), K.Assign(flag, read)])]


def flag_word(flag: int, head: K.Expr | None) -> K.Expr:
    """A tile's flag word: `flag`, with the HEAD bit where a segmented scan's aggregate holds a head."""
    word = K.Const(flag, "u64")
    return word if head is None else K.select(head, K.Const(flag | HEAD, "u64"), word)


def joined(reducer: str, a: K.Expr, b: K.Expr, b_head: K.Expr | None) -> K.Expr:
    """The value of (a, ...) (+) (b, b_head): b where b holds a head, else a <reducer> b (routines.joined;
    b_head None: an unsegmented scan's a <reducer> b)."""
    combined = combine_scan(reducer, a, b)
    return combined if b_head is None else K.select(b_head, b, combined)


def exclusive_prefix(reducer: str, acc_dtype: str, state: K.GlobalBuffer, tile_id: K.Expr, count: K.Expr,
                     aggregate: K.Expr, aggregate_head: K.Expr | None, prefix: K.Var) -> list[K.Stmt]:
    """Work-item 0's look-back for a tile that is not its row's first (the module's docstring):
    publishes the tile's aggregate, walks back to the nearest tile with an inclusive prefix, then
    sets `prefix` to that prefix folded with the aggregates after it, in tile order. A segmented
    scan's aggregate holding a head publishes its flag with the HEAD bit, and folding it restarts."""
    idx = tile_id.dtype
    flag, word, back, i = K.Var("flag", "u64"), K.Var("word", "u64"), K.Var("back", idx), K.Var("i", idx)
    flags, aggregates, inclusives = 1, 1 + count, 1 + 2 * count
    published = flag_word(AGGREGATE, aggregate_head)
    after, after_flag = K.Var("after", "u64"), K.Var("after_flag", "u64")
    fold = [K.AtomicRMW(after, "add", state, aggregates + i, K.Const(0, "u64"))]
    after_head = None
    if aggregate_head is not None:
        fold.append(K.AtomicRMW(after_flag, "add", state, flags + i, K.Const(0, "u64")))
        after_head = (after_flag & K.Const(HEAD, "u64")).ne(K.Const(0, "u64"))
    fold.append(K.Assign(prefix, joined(reducer, prefix, from_word(after, acc_dtype), after_head)))
    return [
        publish("published_aggregate", state, aggregates + tile_id, to_word(aggregate)),
        publish("published_flag", state, flags + tile_id, published),
        K.Let(back, tile_id), K.Let(flag, K.Const(INVALID, "u64")),
        K.While((flag & K.Const(STATE_BITS, "u64")).ne(K.Const(PREFIX, "u64")), [
            K.Assign(back, back - 1),
            *wait_for_flag(flag, "seen", state, flags + back, lambda f: f.ne(K.Const(INVALID, "u64")))]),
        K.AtomicRMW(word, "add", state, inclusives + back, K.Const(0, "u64")),
        K.Assign(prefix, from_word(word, acc_dtype)),
        K.For(i, back + 1, tile_id, 1, fold)]


def scan_kernel(op: Op, name: str) -> K.Kernel:
    """lookback_scan, and segmented_lookback_scan: the same with (value, has a head) pairs."""
    x = op.operands[0].type
    reducer, exclusive = op.attrs["reducer"], op.attrs["exclusive"]
    segmented = op.attrs["routine"] == "segmented_lookback_scan"
    idx, acc_dtype = index_dtype_of(*x.shape), accumulator_type(x)
    workgroup = op.attrs["workgroup"]
    tile_length, waves = lookback_tile(workgroup), workgroup // WAVE
    rows, length, tiles, count = sizes(idx, tile_length)
    source = K.GlobalBuffer("in0", x.dtype, rows * length, readonly=True)
    heads = K.GlobalBuffer("in1", "bool", rows * length, readonly=True) if segmented else None
    state = K.GlobalBuffer(f"in{1 + segmented}", "u64", 1 + 3 * count)   # written: the look-back's state
    result = K.GlobalBuffer("out0", x.dtype, rows * length)
    taken, totals, prefix_lds = (K.LdsBuffer("taken", "u64", 1), K.LdsBuffer("wave_scans", acc_dtype, workgroup),
                                 K.LdsBuffer("tile_prefix", acc_dtype, 1))
    wave_prefixes = K.LdsBuffer("wave_prefixes", acc_dtype, waves)
    lds = [taken, totals, wave_prefixes, prefix_lds]
    lid, tile_id, row, tile, start, stop, j = (K.Var(n, idx) for n in ("lid", "tile_id", "row", "tile", "start",
                                                                       "stop", "j"))
    total, run, aggregate, prefix, before, carry, acc = (
        K.Var(n, acc_dtype) for n in ("total", "run", "aggregate", "prefix", "before", "carry", "acc"))
    ticket, has_carry = K.Var("ticket", "u64"), K.Var("has_carry", "bool")
    lane, wave = K.Var("lane", idx), K.Var("wave", idx)
    first = lid.eq(K.Const(0, idx))
    identity = scan_identity(reducer, acc_dtype)
    element = lambda at: source[row * length + at].cast(acc_dtype)
    put = lambda at, value: K.Store(result, row * length + at, value.cast(x.dtype))
    inclusive_at = 1 + 2 * count + tile_id
    # The pairs' heads (segmented): this work-item's elements', the waves' scans', the waves' before each wave.
    if segmented:
        head_at = lambda at: heads[row * length + at]
        total_head, run_head, before_head = (K.Var(n, "bool") for n in ("total_head", "run_head", "before_head"))
        total_heads, prefix_heads = K.LdsBuffer("wave_scan_heads", "bool", workgroup), \
            K.LdsBuffer("wave_prefix_heads", "bool", waves)
        lds += [total_heads, prefix_heads]
    else:
        head_at = lambda at: None
        total_head = run_head = before_head = total_heads = prefix_heads = None
    no_head = K.Const(False, "bool")
    # This work-item's total: its elements folded from its first (from its last head, if segmented).
    fold_total = [K.Assign(total, element(start)),
                  *([K.Assign(total_head, head_at(start))] if segmented else []),
                  K.For(j, start + 1, stop, 1, [
                      K.Assign(total, joined(reducer, total, element(j), head_at(j))),
                      *([K.Assign(total_head, total_head | head_at(j))] if segmented else [])])]
    # The same over a whole run, a group of 16 bytes of elements at a time: the group's loads first
    # (one vector load on the GPU), then its combinations in element order (the same bits).
    group, offset, at = GROUP_BYTES // NUMPY_DTYPES[x.dtype].itemsize, K.Var("offset", idx), K.Var("at", idx)
    values = [K.Var(f"value{k}", acc_dtype) for k in range(group)]
    value_heads = [K.Var(f"value_head{k}", "bool") for k in range(group)] if segmented else [None] * group
    load_group = [K.Let(at, start + offset), *(K.Let(v, element(at + k)) for k, v in enumerate(values)),
                  *(K.Let(h, head_at(at + k)) for k, h in enumerate(value_heads) if segmented)]
    fold_whole = [K.For(offset, 0, ITEMS, group, [
        *load_group,
        *(stmt for k in range(group) for stmt in [
            K.Assign(total, K.select(offset.eq(0), values[0], joined(reducer, total, values[0], value_heads[0]))
                     if k == 0 else joined(reducer, total, values[k], value_heads[k])),
            *([K.Assign(total_head, total_head | value_heads[k])] if segmented else [])])])]
    # Each wave's inclusive scan of its work-items' totals: rocPRIM's DPP moves, a combination each.
    wave_scan = []
    for number, pattern in enumerate(WAVE_SCAN_MOVES):
        moved, reads = K.Var(f"moved{number}", acc_dtype), K.WAVE_MOVES[pattern][0]
        wave_scan.append(K.WaveMove(moved, total, pattern))
        if segmented:
            moved_head = K.Var(f"moved_head{number}", "bool")
            wave_scan += [K.WaveMove(moved_head, total_head, pattern),
                          K.Assign(total, K.select(reads(lane), joined(reducer, moved, total, total_head), total)),
                          K.Assign(total_head, total_head | (reads(lane) & moved_head))]
        else:
            wave_scan.append(K.Assign(total, K.select(reads(lane), combine_scan(reducer, moved, total), total)))
    # The waves' totals folded in order: wave_prefixes[w] holds waves 0 .. w-1's, `run` the tile's.
    last_lane = lambda w: (w + 1) * WAVE - 1
    lookback = [K.Store(wave_prefixes, 0, identity), K.Let(run, totals[WAVE - 1])]
    if segmented:
        lookback += [K.Store(prefix_heads, 0, no_head), K.Let(run_head, total_heads[WAVE - 1])]
    for w in range(1, waves):
        lookback.append(K.Store(wave_prefixes, w, run))
        if segmented:
            lookback += [K.Store(prefix_heads, w, run_head),
                         K.Assign(run, joined(reducer, run, totals[last_lane(w)], total_heads[last_lane(w)])),
                         K.Assign(run_head, run_head | total_heads[last_lane(w)])]
        else:
            lookback.append(K.Assign(run, combine_scan(reducer, run, totals[last_lane(w)])))
    lookback += [
        K.Let(aggregate, run), K.Let(prefix, identity),
        K.If(tile > 0, [*exclusive_prefix(reducer, acc_dtype, state, tile_id, count, aggregate, run_head, prefix),
                        K.Assign(aggregate, joined(reducer, prefix, aggregate, run_head))]),
        publish("published_inclusive", state, inclusive_at, to_word(aggregate)),
        publish("published_prefix", state, 1 + tile_id, flag_word(PREFIX, run_head)),
        K.Store(prefix_lds, 0, prefix)]
    # The tile's work-items before this one: its wave's prefix (+) its wave's scan before it.
    below = K.maximum(lid - 1, K.Const(0, idx))
    in_wave = totals[below]
    in_wave_head = total_heads[below] if segmented else None
    before_value = K.select(lane > 0, K.select(wave > 0, joined(reducer, wave_prefixes[wave], in_wave, in_wave_head),
                                               in_wave), wave_prefixes[wave])
    carrying = [K.Let(before, before_value)]
    if segmented:
        carrying.append(K.Let(before_head, K.select(lane > 0, in_wave_head | prefix_heads[wave], prefix_heads[wave])))
    carrying += [K.Let(carry, K.select(tile > 0, K.select(lid > 0, joined(reducer, prefix_lds[0], before, before_head),
                                                          prefix_lds[0]), before))]
    # The work-item's elements scanned from its carry (a row's first element has none).
    if segmented:
        # Restarting at each head; the first element without a carry is one.
        head, first_head = K.Var("head", "bool"), K.Var("first_head", "bool")
        restart = lambda at, is_head, before: K.select(is_head, element(at), combine_scan(reducer, before, element(at)))
        if exclusive:
            walk = [K.Let(first_head, head_at(start) | ~has_carry),
                    put(start, K.select(first_head, identity, carry)), K.Let(acc, restart(start, first_head, carry)),
                    K.For(j, start + 1, stop, 1, [K.Let(head, head_at(j)), put(j, K.select(head, identity, acc)),
                                                   K.Assign(acc, restart(j, head, acc))])]
        else:
            walk = [K.Let(first_head, head_at(start) | ~has_carry),
                    K.Let(acc, restart(start, first_head, carry)), put(start, acc),
                    K.For(j, start + 1, stop, 1, [K.Let(head, head_at(j)), K.Assign(acc, restart(j, head, acc)),
                                                   put(j, acc)])]
    elif exclusive:
        fold = lambda var, at: K.Assign(var, combine_scan(reducer, var, element(at)))
        walk = [K.Let(acc, K.select(has_carry, carry, identity)), K.For(j, start, stop, 1, [put(j, acc), fold(acc, j)])]
    else:
        fold = lambda var, at: K.Assign(var, combine_scan(reducer, var, element(at)))
        walk = [K.Let(acc, K.select(has_carry, carry, element(start))), K.If(~has_carry, [put(start, acc)]),
                K.For(j, K.select(has_carry, start, start + 1), stop, 1, [fold(acc, j), put(j, acc)])]
    # The same over a whole run by groups: each group's results computed in element order, then
    # stored together (one vector store on the GPU).
    scanned = [K.Var(f"scanned{k}", acc_dtype) for k in range(group)]
    step = []
    for k, (value, value_head, out) in enumerate(zip(values, value_heads, scanned)):
        starts = offset.eq(0) & ~has_carry if k == 0 else None   # the row's first element: no carry
        if segmented:
            restarts = value_head if starts is None else value_head | starts
            step += [K.Let(out, K.select(restarts, identity, acc))] if exclusive else []
            step.append(K.Assign(acc, K.select(restarts, value, combine_scan(reducer, acc, value))))
            step += [] if exclusive else [K.Let(out, acc)]
        elif exclusive:
            step += [K.Let(out, acc), K.Assign(acc, combine_scan(reducer, acc, value))]
        else:
            folded = combine_scan(reducer, acc, value)
            step += [K.Assign(acc, folded if starts is None else K.select(starts, value, folded)), K.Let(out, acc)]
    walk_whole = [K.Let(acc, carry if segmented else K.select(has_carry, carry, identity)),
                  K.For(offset, 0, ITEMS, group, [
                      *load_group, *step,
                      *(K.Store(result, row * length + at + k, out.cast(x.dtype)) for k, out in enumerate(scanned))])]
    # Every run is whole where the row length is a multiple of ITEMS (this kernel's variant, with
    # no element-by-element loads: narrower than 16 bytes on the GPU); else the row's last run may
    # be partial.
    if whole_runs(op):
        by_run = lambda whole, partial: K.If(start < length, whole)
    else:
        by_run = lambda whole, partial: K.If(start + ITEMS <= length, whole, [K.If(start < stop, partial)])
    body = [
        K.Let(lid, K.workitem_id(0).cast(idx)), K.Let(lane, lid % WAVE), K.Let(wave, lid / WAVE),
        K.If(first, [K.AtomicRMW(ticket, "add", state, 0, K.Const(1, "u64")), K.Store(taken, 0, ticket)]),
        K.Barrier(),
        K.Let(tile_id, taken[0].cast(idx)), K.Let(row, tile_id / tiles), K.Let(tile, tile_id % tiles),
        K.Let(start, tile * tile_length + lid * ITEMS), K.Let(stop, K.minimum(start + ITEMS, length)),
        K.Let(total, identity),
        *([K.Let(total_head, no_head)] if segmented else []),
        by_run(fold_whole, fold_total),
        *wave_scan,
        K.Store(totals, lid, total),
        *([K.Store(total_heads, lid, total_head)] if segmented else []),
        K.Barrier(),
        K.If(first, lookback),
        K.Barrier(),
        K.Let(has_carry, (tile > 0) | (lid > 0)),
        *carrying,
        by_run(walk_whole, walk)]
    params = [source, *([heads] if segmented else []), state, result, rows, length]
    kernel = K.Kernel(name, params=params, grid=(count,), workgroup_size=(workgroup,), lds=lds, body=body,
                      arguments=(("rows", x.shape[0]), ("length", x.shape[1])))
    if kernel.wave_size != WAVE:   # the reference's association is that of waves of WAVE lanes
        raise NotImplementedError(f"prim.{op.attrs['routine']}: waves of {kernel.wave_size} lanes (written for {WAVE})")
    return kernel


def whole_runs(op: Op) -> bool:
    """Whether every work-item's run is whole: the kernel variant without element-by-element loads."""
    return op.operands[0].type.shape[1] % ITEMS == 0


def solution(op: Op) -> str:
    segmented = "segmented_" if op.attrs["routine"] == "segmented_lookback_scan" else ""
    return (f"{segmented}lookback_scan_w{op.attrs['workgroup']}x{ITEMS}"
            f"{'_whole_runs' if whole_runs(op) else ''}")


def describe(op: Op) -> str:
    if op.attrs["routine"] == "lookback_init":
        return "the single-pass scan's look-back states marked invalid (its first launch)"
    kind = "exclusive" if op.attrs["exclusive"] else "inclusive"
    if op.attrs["routine"] == "segmented_lookback_scan":
        kind += " segmented (head flags, joined as pairs)"
    return (f"single-pass {kind} {op.attrs['reducer']} scan, decoupled look-back folding predecessors' aggregates "
            f"in tile order (the same bits run to run); tiles of {op.attrs['workgroup']} work-items x {ITEMS} "
            f"elements, wave scans of the work-items' totals by {len(WAVE_SCAN_MOVES)} DPP moves, ordered tile ids from "
            "an atomic counter")
