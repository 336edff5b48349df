"""SpGEMM kernels (routines.py's spgemm_bound, spgemm_symbolic, spgemm_numeric), Gustavson's row
by row product with a hash table per row, as rocSPARSE's csrgemm: a work-item per row of A.

The frontend runs the passes in order: `spgemm_bound` counts each row's products (the most
nonzeros it can have) and sizes its global table, the least power of two of at least twice as
many slots (load at most 1/2; a power of two, so that a slot is a mask, not a division), at
offsets that an exclusive scan of the sizes gives; `spgemm_symbolic` inserts each row's product
columns into its table and counts the distinct ones; a scan of the counts is C's indptr;
`spgemm_numeric` inserts them again with their values, summing per column, and writes the row's
entries in the order of their slots (columns unsorted within a row, as scipy's product leaves them).

Tables in LDS, as rocSPARSE's: a row of at most LDS_SLOTS / 2 products gets no global table (0
slots) and hashes in its work-item's slice of the workgroup's LDS table (LDS_ITEMS x LDS_SLOTS
keys, and values in the numeric pass), routines.lds_slots(products) of its slots (the global
tables' sizing: load at most 1/2; a fuller table, load up to 1, made W16.spgemm's 64-product rows
1.5x slower on the host). The slices interleave (slot s of row i at s LDS_ITEMS + i), so that
work-items clearing or reading slot s together touch consecutive words. Longer rows hash in their
global tables. A work-item per row keeps the kernels free of atomics (no two work-items share a
slot); rocSPARSE hashes a row with a wave or a workgroup and LDS compare-and-swap. LDS_ITEMS x
LDS_SLOTS x (key + value bytes) is at most 64 KiB (i64 keys, f64 values), so a workgroup of
common.ITEMS work-items takes LDS_ITEMS rows (the rest of its lanes idle: the price of 128-slot tables per
work-item in 64 KiB; on gfx942 one such workgroup per CU, LDS-bound occupancy).

Probing is linear from the multiplicative hash of the column (routines.hash_slot). The kernel IR's loops have fixed
trip counts, so a probe sequence is PROBES tries written out, then (only for an insert still not
placed) a loop over the rest of the table.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from .common import INDEX, buffers, clamped, in_range, loop, per_item, sizes, variables, widened
from .routines import SPGEMM_LDS_SLOTS as LDS_SLOTS, SPGEMM_PROBES as PROBES
HASH = 2654435761   # Knuth's multiplicative hash constant, routines.hash_slot's
LDS_ITEMS = 32      # rows per workgroup (of common.ITEMS work-items) of the hashing passes: their LDS tables fit 64 KiB


def insert(keys, values, place, size, column, value, names: str, on_new):
    """Statements inserting `column` (and adding `value`, if values) into the table whose slot s
    is keys[place(s)], `size` slots."""
    slot, placed, t = variables(f"slot_{names}", f"placed_{names}", f"probe_{names}")
    at = place(slot)
    # A new column's value is 0 + value (the sum from 0, as the reference's: -0.0 becomes 0.0), so
    # that a table's values need no clearing.
    first = [K.Store(values, at, K.Const(0, values.dtype) + value)] if values is not None else []
    more = [K.Store(values, at, values[at] + value)] if values is not None else []
    attempt = [K.If(placed.eq(0), [K.If(widened(keys[at]).eq(-1) | widened(keys[at]).eq(column), [
        K.If(widened(keys[at]).eq(-1), [K.Store(keys, at, column.cast(keys.dtype)), *on_new, *first], more),
        K.Assign(placed, K.Const(1, INDEX))],
        [K.Assign(slot, (slot + 1) & (size - 1))])])]
    return [K.Let(slot, ((column * HASH) >> 16) & (size - 1)), K.Let(placed, K.Const(0, INDEX)),
            *attempt * PROBES,
            loop(t, 0, K.select(placed.eq(0), size, K.Const(0, INDEX)), attempt)]


def for_products(a_indptr, a_indices, b_indptr, b_indices, r, body, b_position: K.Var, column: K.Var, bounds,
                 names: str = ""):
    """body(p) for each product of row r, b_position and column set; bounds (a_total, b_total, n)
    bound every read (common.clamped, common.in_range) whatever the index arrays hold."""
    a_total, b_total, n = bounds
    p, k = variables("p" + names, "k" + names)
    return [loop(p, clamped(a_indptr[r], a_total), clamped(a_indptr[r + 1], a_total), [
        K.Let(k, widened(a_indices[p])),
        K.If(in_range(k, n), [loop(b_position, clamped(b_indptr[k], b_total), clamped(b_indptr[k + 1], b_total), [
            K.Let(column, widened(b_indices[b_position])), *body(p)])])])]


def product_count(a_indptr, a_indices, b_indptr, r, count: K.Var, bounds):
    """Statements setting `count` to row r's products: B's row lengths (indptr differences) summed
    over the row's columns in range (routines.product_counts)."""
    a_total, n = bounds
    p, k = variables("p_count", "k_count")
    return [K.Let(count, K.Const(0, INDEX)),
            loop(p, clamped(a_indptr[r], a_total), clamped(a_indptr[r + 1], a_total), [
                K.Let(k, widened(a_indices[p])),
                K.If(in_range(k, n), [K.Assign(count, count + widened(b_indptr[k + 1]) - widened(b_indptr[k]))])])]


def least_power_of_two(slots: K.Var, count, most: int):
    """Statements setting `slots` to the least power of two of at least 2 x count, at most `most`
    (a power of two); 0 for count <= 0 (routines.table_slots, lds_slots)."""
    doubling = K.Var(slots.name + "_doubling", INDEX)
    return [K.Let(slots, K.select(count > 0, K.Const(1, INDEX), K.Const(0, INDEX))),
            loop(doubling, 0, most.bit_length() - 1, [
                K.If((slots > 0) & (slots < 2 * count), [K.Assign(slots, slots * 2)])])]


def bound_kernel(op: Op, name: str) -> K.Kernel:
    m, n, total = params = sizes("m", "n", "total")
    a_indptr, a_indices, b_indptr, counts = buffers(op, [m + 1, total, n + 1, m])
    count, slots = variables("count", "slots")

    def body(r):
        # 62 doubling steps bound any i64 count; a row that fits an LDS table gets no global one.
        return [*product_count(a_indptr, a_indices, b_indptr, r, count, (total, n)),
                *least_power_of_two(slots, count, 1 << 62),
                K.Store(counts, r, K.select(2 * count > LDS_SLOTS, slots, K.Const(0, INDEX)).cast(counts.dtype))]

    a, indices, b = (v.type.shape[0] for v in op.operands)
    return per_item(name, [a_indptr, a_indices, b_indptr, counts, *params], m, body,
                    [("m", a - 1), ("n", b - 1), ("total", indices)])


def fits(start, size, table):
    """Whether a row has a table and it lies in the keys buffer: always for the tables spgemm_bound
    sized, if the buffer is at least their total; under jit the buffer is a static bound (the
    frontend's), which index arrays that were not checked could exceed, and their bound could give
    no table to a row with products: such a row is left empty, never written outside."""
    return (start >= 0) & (size > 0) & (start + size <= table)


def row_tables(a_indptr, a_indices, b_indptr, r, table_ptr, table, bounds, global_table, lds_table):
    """Row r's statements on its table (routines.row_table): global_table(start, size) on its slice
    of the global table if it fits; else, if spgemm_bound gave it none and it has 1 to LDS_SLOTS / 2
    products, lds_table(lane, size) on its work-item's LDS slice; else none (the row is left empty)."""
    start, size, count, lds_size, lane = variables("start", "size", "count", "lds_size", "lane")
    return [K.Let(start, widened(table_ptr[r])), K.Let(size, widened(table_ptr[r + 1]) - start),
            K.If(fits(start, size, table), global_table(start, size), [
                *product_count(a_indptr, a_indices, b_indptr, r, count, bounds),
                K.If(size.eq(0) & (count > 0) & (2 * count <= LDS_SLOTS), [
                    *least_power_of_two(lds_size, count, LDS_SLOTS),
                    K.Let(lane, K.workitem_id(0).cast(INDEX)),
                    *lds_table(lane, lds_size)])])]


def clear(keys, place, size, s):
    """A table's keys emptied (-1); its values need not be (insert sets a new column's)."""
    return [loop(s, 0, size, [K.Store(keys, place(s), -1)])]


def lds_tables(keys, values=None):
    """The workgroup's LDS tables, dtypes of the global ones; slot s of row i at s LDS_ITEMS + i."""
    return [K.LdsBuffer(b.name + "_lds", b.dtype, LDS_ITEMS * LDS_SLOTS) for b in (keys, values) if b is not None]


def symbolic_kernel(op: Op, name: str) -> K.Kernel:
    m, n, a_total, b_total, table = params = sizes("m", "n", "a_total", "b_total", "table")
    a_indptr, a_indices, b_indptr, b_indices, table_ptr, row_nnz, keys = buffers(
        op, [m + 1, a_total, n + 1, b_total, m + 1, m, table])
    (keys_lds,) = lds = lds_tables(keys)
    distinct, q, column = variables("distinct", "q", "column")

    def hashed(r, table_keys, place, size, names):
        s = K.Var("s" + names, INDEX)
        return [*clear(table_keys, place, size, s),
                *for_products(a_indptr, a_indices, b_indptr, b_indices, r, lambda p: insert(
                    table_keys, None, place, size, column, None, "s" + names, [K.Assign(distinct, distinct + 1)]),
                    q, column, (a_total, b_total, n), names)]

    def body(r):
        return [K.Let(distinct, K.Const(0, INDEX)),
                *row_tables(a_indptr, a_indices, b_indptr, r, table_ptr, table, (a_total, n),
                            lambda start, size: hashed(r, keys, lambda s: start + s, size, "_global"),
                            lambda lane, size: hashed(r, keys_lds, lambda s: s * LDS_ITEMS + lane, size, "_lds")),
                K.Store(row_nnz, r, distinct.cast(row_nnz.dtype))]

    a, ai, b, bi, _ = (v.type.shape[0] for v in op.operands)
    return per_item(name, [a_indptr, a_indices, b_indptr, b_indices, table_ptr, row_nnz, keys, *params], m, body,
                    [("m", a - 1), ("n", b - 1), ("a_total", ai), ("b_total", bi), ("table", op.attrs["table"])],
                    lds, LDS_ITEMS)


def numeric_kernel(op: Op, name: str) -> K.Kernel:
    m, n, a_total, b_total, table, nse = params = sizes("m", "n", "a_total", "b_total", "table", "nse")
    (a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, table_ptr, c_indptr,
     c_indices, c_data, keys, values) = buffers(
        op, [m + 1, a_total, a_total, n + 1, b_total, b_total, m + 1, m + 1, nse, nse, table, table])
    keys_lds, values_lds = lds = lds_tables(keys, values)
    q, column, from_ = variables("q", "column", "from")

    def hashed(r, table_keys, table_values, place, size, names):
        s, w, at, end = variables("s" + names, "w" + names, "at" + names, "end" + names)
        products = for_products(a_indptr, a_indices, b_indptr, b_indices, r, lambda p: insert(
            table_keys, table_values, place, size, column, a_data[p] * b_data[q], "n" + names, []), q, column,
            (a_total, b_total, n), names)
        # The used slots in order, from C's row start: every slot is written at `at`, which moves past
        # a used one, so a position keeps its used slot's entry (the last written there). Branch-free:
        # which slots are used is random, and a branch on it mispredicts half the time.
        key = widened(table_keys[place(w)])
        written_out = [K.Let(at, widened(c_indptr[r])), K.Let(end, K.minimum(widened(c_indptr[r + 1]), nse)),
                       loop(w, 0, size, [
                           K.If((at >= 0) & (at < end), [K.Store(c_indices, at, table_keys[place(w)]),
                                                         K.Store(c_data, at, table_values[place(w)])]),
                           K.Assign(at, at + (key >= 0).cast(INDEX))])]
        return [*clear(table_keys, place, size, s), *products, *written_out]

    def body(r):
        return [K.If(r < m, row_tables(
            a_indptr, a_indices, b_indptr, r, table_ptr, table, (a_total, n),
            lambda start, size: hashed(r, keys, values, lambda s: start + s, size, "_global"),
            lambda lane, size: hashed(r, keys_lds, values_lds, lambda s: s * LDS_ITEMS + lane, size, "_lds")),
            [loop(from_, K.minimum(widened(c_indptr[m]), nse), nse, [K.Store(c_indices, from_, 0),
                                                                     K.Store(c_data, from_, 0)])])]

    a, ai, _, b, bi, *_ = (v.type.shape[0] for v in op.operands)
    return per_item(name, [a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, table_ptr, c_indptr, c_indices,
                           c_data, keys, values, *params], m + 1, body,
                    [("m", a - 1), ("n", b - 1), ("a_total", ai), ("b_total", bi), ("table", op.attrs["table"]),
                     ("nse", op.attrs["nse"])], lds, LDS_ITEMS)
