"""SpGEMM kernels (routines.py's spgemm_bound, spgemm_symbolic, spgemm_numeric), Gustavson's row
by row product with a hash table per row, as rocSPARSE's csrgemm: a work-item per row of A.

The frontend runs the passes in order: `spgemm_bound` counts each row's products (the most
nonzeros it can have) and sizes its table, the least power of two of at least twice as many
slots (load at most 1/2; a power of two, so that a slot is a mask, not a division), at offsets
that an exclusive scan of the sizes gives; `spgemm_symbolic` inserts each row's product columns into its
table and counts the distinct ones; a scan of the counts is C's indptr; `spgemm_numeric` inserts
them again with their values, summing per column, and writes the row's entries in the order of
their slots (columns unsorted within a row, as scipy's product leaves them). rocSPARSE keeps the tables in LDS; here they are global buffers,
results of the calls, since a row's table has no bound known when the kernel is compiled.

Probing is linear from the multiplicative hash of the column (routines.hash_slot). The kernel IR's loops have fixed
trip counts, so a probe sequence is PROBES tries written out, then (only for an insert still not
placed) a loop over the rest of the table.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from .common import INDEX, buffers, clamped, in_range, loop, per_item, sizes, variables, widened
from .routines import SPGEMM_PROBES as PROBES
HASH = 2654435761   # Knuth's multiplicative hash constant, routines.hash_slot's


def insert(keys, values, start, size, column, value, names: str, on_new):
    """Statements inserting `column` (and adding `value`, if values) into the table keys[start:start + size]."""
    slot, placed, t = variables(f"slot_{names}", f"placed_{names}", f"probe_{names}")
    at = start + slot
    attempt = [K.If(placed.eq(0), [K.If(widened(keys[at]).eq(-1) | widened(keys[at]).eq(column), [
        K.If(widened(keys[at]).eq(-1), [K.Store(keys, at, column.cast(keys.dtype)), *on_new]),
        *([K.Store(values, at, values[at] + value)] if values is not None else []),
        K.Assign(placed, K.Const(1, INDEX))],
        [K.Assign(slot, (slot + 1) & (size - 1))])])]
    return [K.Let(slot, ((column * HASH) >> 16) & (size - 1)), K.Let(placed, K.Const(0, INDEX)),
            *attempt * PROBES,
            loop(t, 0, K.select(placed.eq(0), size, K.Const(0, INDEX)), attempt)]


def for_products(a_indptr, a_indices, b_indptr, b_indices, r, body, b_position: K.Var, column: K.Var, bounds):
    """body(p) for each product of row r, b_position and column set; bounds (a_total, b_total, n)
    bound every read (common.clamped, common.in_range) whatever the index arrays hold."""
    a_total, b_total, n = bounds
    p, k = variables("p", "k")
    return [loop(p, clamped(a_indptr[r], a_total), clamped(a_indptr[r + 1], a_total), [
        K.Let(k, widened(a_indices[p])),
        K.If(in_range(k, n), [loop(b_position, clamped(b_indptr[k], b_total), clamped(b_indptr[k + 1], b_total), [
            K.Let(column, widened(b_indices[b_position])), *body(p)])])])]


def bound_kernel(op: Op, name: str) -> K.Kernel:
    m, n, total = params = sizes("m", "n", "total")
    a_indptr, a_indices, b_indptr, counts = buffers(op, [m + 1, total, n + 1, m])
    p, k, count, slots, doubling = variables("p", "k", "count", "slots", "doubling")

    def body(r):
        # slots: 0 for no products, else doubled from 1 until it reaches 2 x count (62 steps bound any i64 count).
        return [K.Let(count, K.Const(0, INDEX)),
                loop(p, clamped(a_indptr[r], total), clamped(a_indptr[r + 1], total), [
                    K.Let(k, widened(a_indices[p])),
                    K.If(in_range(k, n), [K.Assign(count, count + widened(b_indptr[k + 1]) - widened(b_indptr[k]))])]),
                K.Let(slots, K.select(count > 0, K.Const(1, INDEX), K.Const(0, INDEX))),
                loop(doubling, 0, 62, [K.If((slots > 0) & (slots < 2 * count), [K.Assign(slots, slots * 2)])]),
                K.Store(counts, r, slots.cast(counts.dtype))]

    a, indices, b = (v.type.shape[0] for v in op.operands)
    return per_item(name, [a_indptr, a_indices, b_indptr, counts, *params], m, body,
                    [("m", a - 1), ("n", b - 1), ("total", indices)])


def fits(start, size, table):
    """Whether a row has a table and it lies in the keys buffer: always for the tables spgemm_bound
    sized, if the buffer is at least their total; under jit the buffer is a static bound (the
    frontend's), which index arrays that were not checked could exceed, and their bound could give
    no table to a row with products: such a row is left empty, never written outside."""
    return (start >= 0) & (size > 0) & (start + size <= table)


def clear(keys, values, start, size, s):
    return [loop(s, 0, size, [K.Store(keys, start + s, -1),
                              *([K.Store(values, start + s, 0)] if values is not None else [])])]


def symbolic_kernel(op: Op, name: str) -> K.Kernel:
    m, n, a_total, b_total, table = params = sizes("m", "n", "a_total", "b_total", "table")
    a_indptr, a_indices, b_indptr, b_indices, table_ptr, row_nnz, keys = buffers(
        op, [m + 1, a_total, n + 1, b_total, m + 1, m, table])
    start, size, count, s, q, column = variables("start", "size", "count", "s", "q", "column")

    def body(r):
        return [K.Let(start, widened(table_ptr[r])), K.Let(size, widened(table_ptr[r + 1]) - start),
                K.Let(count, K.Const(0, INDEX)),
                K.If(fits(start, size, table), [
                    *clear(keys, None, start, size, s),
                    *for_products(a_indptr, a_indices, b_indptr, b_indices, r, lambda p: insert(
                        keys, None, start, size, column, None, "s", [K.Assign(count, count + 1)]), q, column,
                        (a_total, b_total, n))]),
                K.Store(row_nnz, r, count.cast(row_nnz.dtype))]

    a, ai, b, bi, _ = (v.type.shape[0] for v in op.operands)
    return per_item(name, [a_indptr, a_indices, b_indptr, b_indices, table_ptr, row_nnz, keys, *params], m, body,
                    [("m", a - 1), ("n", b - 1), ("a_total", ai), ("b_total", bi), ("table", op.attrs["table"])])


def numeric_kernel(op: Op, name: str) -> K.Kernel:
    m, n, a_total, b_total, table, nse = params = sizes("m", "n", "a_total", "b_total", "table", "nse")
    (a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, table_ptr, c_indptr,
     c_indices, c_data, keys, values) = buffers(
        op, [m + 1, a_total, a_total, n + 1, b_total, b_total, m + 1, m + 1, nse, nse, table, table])
    start, size, s, q, column, at, from_ = variables("start", "size", "s", "q", "column", "at", "from")

    def written_out(r):
        # The used slots in order, at C's row start.
        return [K.Let(at, widened(c_indptr[r])),
                loop(s, 0, size, [K.If(widened(keys[start + s]) >= 0, [
                    K.If((at >= 0) & (at < nse), [K.Store(c_indices, at, keys[start + s]),
                                                  K.Store(c_data, at, values[start + s])]),
                    K.Assign(at, at + 1)])])]

    def body(r):
        products = for_products(a_indptr, a_indices, b_indptr, b_indices, r, lambda p: insert(
            keys, values, start, size, column, a_data[p] * b_data[q], "n", []), q, column,
            (a_total, b_total, n))
        return [K.If(r < m, [
            K.Let(start, widened(table_ptr[r])), K.Let(size, widened(table_ptr[r + 1]) - start),
            K.If(fits(start, size, table), [*clear(keys, values, start, size, s), *products, *written_out(r)])],
            [loop(from_, K.minimum(widened(c_indptr[m]), nse), nse, [K.Store(c_indices, from_, 0),
                                                                     K.Store(c_data, from_, 0)])])]

    a, ai, _, b, bi, *_ = (v.type.shape[0] for v in op.operands)
    return per_item(name, [a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, table_ptr, c_indptr, c_indices,
                           c_data, keys, values, *params], m + 1, body,
                    [("m", a - 1), ("n", b - 1), ("a_total", ai), ("b_total", bi), ("table", op.attrs["table"]),
                     ("nse", op.attrs["nse"])])
