"""SpMV, SpMM and SDDMM kernels (routines.py's csrmv, ellmv, csrmm, sddmm).

csrmv, "nnz_split": the nonzeros are cut into chunks of `chunk` consecutive entries (routines.CHUNK), a work-item
each, so every work-item does the same work however uneven the rows are (a power-law matrix's
row of 10 000 entries is 40 chunks of 40 work-items), as rocSPARSE's adaptive csrmv balances
rows of very different lengths, and as merge-path SpMV splits the work evenly. A chunk finds its
first and last rows by binary search of indptr and sums each of its rows' products in order; a
row lying whole in the chunk is written to y, a row crossing a chunk boundary leaves one partial
sum per chunk in `carries`, which the caller adds into y with a scatter-add (rocSPARSE adds them
with atomics; the kernel IR has none, so the second step is a graph op). Every row of y is
written exactly once: empty rows by the chunk after them (the last chunk: the rows after it).
The sizes and nnz are scalar parameters: one kernel per dtype pair serves every matrix.

bsrmv: a work-item per row of a BSR matrix (R x C blocks), its blocks' rows dotted with x.
ellmv: a work-item per row of an ELL matrix (every row K slots, negative columns padding).
csrmv_ell: a work-item per row of a CSR matrix, its first `width` entries (csr2ell then ellmv
without the ELL arrays: the dense fori_loop idiom's rewrite, row_loop.py).
csrmm, "row_columns": a workgroup per row of A and ITEMS columns of B, each work-item summing
its column, the row's entries in uniform loops (common.column_block: B's rows are read
contiguously across the workgroup, as vectors on the host).
sddmm: a work-item per nonzero, its row by binary search of indptr, a dot product of K.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from .common import (INDEX, ITEMS, bits, buffers, clamped, column_block, in_range, last_at_most, loop, per_item, sizes,
                     variables, widened)



def mapped(column: K.Expr, n: K.Expr, column_map: str) -> K.Expr:
    """A column as routines.mapped_columns reads it: "drop" as it is, "clamp" into [0, n),
    "wrap_clamp" a negative one + n first (numpy's x[column])."""
    if column_map == "wrap_clamp":
        column = K.select(column < 0, column + n, column)
    return column if column_map == "drop" else K.minimum(K.maximum(column, K.Const(0, INDEX)), n - 1)


def remapped(column: K.Var, n: K.Expr, column_map: str) -> list[K.Stmt]:
    """Statements that map `column` as `mapped` does, behind a branch taken only for a column
    outside [0, n) (one unsigned compare per entry where columns are in range, as they are in
    any valid matrix, instead of mapped's select and clamps)."""
    if column_map == "drop":
        return []
    return [K.If(~unsigned_below(column, n), [K.Assign(column, mapped(column, n, column_map))])]


def unsigned_below(index: K.Expr, count: K.Expr) -> K.Expr:
    """0 <= index < count (count >= 0) as one unsigned compare."""
    return index.cast("u64") < count.cast("u64")


def guarded(product: K.Stmt, column: K.Expr, n: K.Expr, column_map: str) -> K.Stmt:
    """The product of a mapped column: a clamped column is always in range, only "drop" tests it."""
    return K.If(unsigned_below(column, n), [product]) if column_map == "drop" else product


class RowDot:
    """The sum of data[j] x[column j] over a row's entries j in [lo, hi), in two partial sums (even
    and odd positions from lo, added at the end): two dependence chains of additions in flight
    rather than one, whose latency would otherwise be the row's time. Columns are mapped as the
    routine's column_map says (remapped, guarded)."""

    def __init__(self, prefix: str, indices, data, x, n, column_map: str):
        self.indices, self.data, self.x, self.n, self.column_map = indices, data, x, n, column_map
        self.lo, self.hi, self.j, self.column, self.column1 = variables(
            *(f"{prefix}_{name}" for name in ("lo", "hi", "j", "column", "column1")))
        self.sums = (K.Var(f"{prefix}_sum", data.dtype), K.Var(f"{prefix}_sum1", data.dtype))
        self.total = self.sums[0] + self.sums[1]

    def add(self, total: K.Var, column: K.Var, at: K.Expr) -> list[K.Stmt]:
        product = K.Assign(total, total + self.data[at] * self.x[column])
        return [K.Let(column, widened(self.indices[at])), *remapped(column, self.n, self.column_map),
                guarded(product, column, self.n, self.column_map)]

    def statements(self, lo: K.Expr, hi: K.Expr, expected) -> list[K.Stmt]:
        """Statements setting `total` to the row's sum (hi below lo: an empty row); `expected`, an
        extent, is how many entries a work-item is expected to sum (the pool's cost hint)."""
        (even, odd), j = self.sums, self.j
        pairs = self.add(even, self.column, j) + self.add(odd, self.column1, j + 1)
        return [K.Let(self.lo, lo), K.Let(self.hi, K.maximum(hi, self.lo)),
                K.Let(even, K.Const(0, self.data.dtype)), K.Let(odd, K.Const(0, self.data.dtype)),
                K.For(j, self.lo, self.hi - 1, 2, pairs, expected_trips=K.ceil_div(expected, 2)),
                K.If(((self.hi - self.lo) & 1).eq(K.Const(1, INDEX)), self.add(even, self.column, self.hi - 1))]


def csrmv_kernel(op: Op, name: str) -> K.Kernel:
    chunk = op.attrs["chunk"]
    m, n, total, steps = params = sizes("m", "n", "total", "steps")
    chunks = K.ceil_div(total, chunk)
    indptr, indices, data, x, y, carries, carry_rows = buffers(op, [m + 1, total, total, n, m, 2 * chunks, 2 * chunks])
    nnz, s, e, first, last, previous, empty_from, r, start, stop, slot = variables(
        "nnz", "s", "e", "first", "last", "previous", "empty_from", "r", "start", "stop", "slot")
    probes = variables("probe_first", "probe_last", "probe_previous")
    zero_rows = lambda begin, end: loop(r, begin, end, [K.Store(y, r, 0)])
    row = RowDot("row", indices, data, x, n, op.attrs["column_map"])
    acc = row.total

    def body(c):
        row_sum = [
            K.Let(start, widened(indptr[r])), K.Let(stop, widened(indptr[r + 1])),
            # A chunk's rows hold `chunk` entries in all: expected as one row's (rows per chunk are data).
            *row.statements(K.maximum(start, s), K.minimum(stop, e), chunk),
            K.If((start >= s) & (stop <= e), [K.Store(y, r, acc)], [
                K.If(start >= s, [K.Store(y, r, 0)]),
                K.Let(slot, 2 * c + K.select(r.eq(first), K.Const(0, INDEX), K.Const(1, INDEX))),
                K.Store(carries, slot, acc), K.Store(carry_rows, slot, r.cast(carry_rows.dtype))])]
        return [
            K.Let(nnz, clamped(indptr[m], total)), K.Let(s, c * chunk), K.Let(e, K.minimum(s + chunk, nnz)),
            *[K.Store(carries, 2 * c + k, 0) for k in (0, 1)], *[K.Store(carry_rows, 2 * c + k, 0) for k in (0, 1)],
            K.If(c.eq(0) & nnz.eq(0), [zero_rows(0, m)]),
            K.If(s < nnz, [
                *last_at_most(indptr, m, s, steps, first, probes[0]),
                *last_at_most(indptr, m, e - 1, steps, last, probes[1]),
                # Empty rows just before `first` (indptr[first - 1] = s) are this chunk's to zero,
                # from the row after the one holding nonzero s - 1: searched only then.
                K.Let(empty_from, first),
                K.If((first > 0) & (widened(indptr[K.maximum(first - 1, K.Const(0, INDEX))]).eq(s)), [
                    *last_at_most(indptr, m, s - 1, steps, previous, probes[2]),
                    K.Assign(empty_from, K.select(c > 0, previous + 1, K.Const(0, INDEX)))]),
                zero_rows(empty_from, first),
                *[K.Store(carry_rows, 2 * c + k, first.cast(carry_rows.dtype)) for k in (0, 1)],
                loop(r, first, last + 1, row_sum),
                K.If(e.eq(nnz), [zero_rows(last + 1, m)])])]

    indptr_type, indices_type, _, x_type = (v.type for v in op.operands)
    rows = indptr_type.shape[0] - 1
    return per_item(name, [indptr, indices, data, x, y, carries, carry_rows, *params], chunks, body,
                    [("m", rows), ("n", x_type.shape[0]), ("total", indices_type.shape[0]), ("steps", bits(rows))])


def ellmv_kernel(op: Op, name: str) -> K.Kernel:
    m, width, n = params = sizes("m", "width", "n")
    columns, values, x, y = buffers(op, [m * width, m * width, n, m])
    k, column = variables("k", "column")
    acc = K.Var("acc", values.dtype)

    def body(r):
        return [K.Let(acc, K.Const(0, values.dtype)),
                loop(k, 0, width, [
                    K.Let(column, widened(columns[r * width + k])),
                    K.If(in_range(column, n), [K.Assign(acc, acc + values[r * width + k] * x[column])])]),
                K.Store(y, r, acc)]

    (rows, slots), count = op.operands[0].type.shape, op.operands[2].type.shape[0]
    return per_item(name, [columns, values, x, y, *params], m, body, [("m", rows), ("width", slots), ("n", count)])


def csrmv_ell_kernel(op: Op, name: str) -> K.Kernel:
    """csr2ell then ellmv in one pass: a work-item per row, its first `width` entries read in place."""
    m, n, total, width = params = sizes("m", "n", "total", "width")
    indptr, indices, data, x, y = buffers(op, [m + 1, total, total, n, m])
    start = K.Var("start", INDEX)
    row = RowDot("row", indices, data, x, n, op.attrs["column_map"])

    def body(r):
        first, end = K.maximum(start, K.Const(0, INDEX)), K.minimum(start + width, clamped(indptr[r + 1], total))
        return [K.Let(start, widened(indptr[r])), *row.statements(first, end, width), K.Store(y, r, row.total)]

    return per_item(name, [indptr, indices, data, x, y, *params], m, body,
                    [("m", op.operands[0].type.shape[0] - 1), ("n", op.operands[3].type.shape[0]),
                     ("total", op.operands[1].type.shape[0]), ("width", op.attrs["width"])])


def bsrmv_kernel(op: Op, name: str) -> K.Kernel:
    """A work-item per row of y (block row g / R, row g % R of its blocks)."""
    params = sizes("block_rows", "block_columns", "rows", "width", "total")
    block_rows, block_columns, rows, width, total = params
    indptr, indices, data, x, y = buffers(op, [block_rows + 1, total, total * rows * width, block_columns * width,
                                               block_rows * rows])
    i, r, p, block, j = variables("i", "r", "p", "block", "j")
    acc = K.Var("acc", data.dtype)

    def body(g):
        return [K.Let(i, g / rows), K.Let(r, g % rows), K.Let(acc, K.Const(0, data.dtype)),
                loop(p, clamped(indptr[i], total), clamped(indptr[i + 1], total), [
                    K.Let(block, widened(indices[p])),
                    K.If(in_range(block, block_columns), [loop(j, 0, width, [
                        K.Assign(acc, acc + data[(p * rows + r) * width + j] * x[block * width + j])])])]),
                K.Store(y, g, acc)]

    indptr_type, indices_type, data_type, x_type = (v.type for v in op.operands)
    _, r_size, c_size = data_type.shape
    return per_item(name, [indptr, indices, data, x, y, *params], block_rows * rows, body,
                    [("block_rows", indptr_type.shape[0] - 1), ("block_columns", x_type.shape[0] // c_size),
                     ("rows", r_size), ("width", c_size), ("total", indices_type.shape[0])])


def csrmm_kernel(op: Op, name: str) -> K.Kernel:
    """The row's entries in uniform loops (every work-item of the workgroup takes the same ones, and
    tests the same column of A), rather than each work-item walking the row itself (column_block)."""
    m, n, k, total = params = sizes("m", "n", "k", "total")
    indptr, indices, data, b, c = buffers(op, [m + 1, total, total, n * k, m * k])
    row, first, column, p = variables("row", "first", "column", "p")
    acc = K.Var("acc", data.dtype)

    def entries(add):
        b_row = widened(indices[p])
        product = K.Assign(acc, acc + data[p] * b[b_row * k + column])
        return K.For(p, clamped(indptr[row], total), clamped(indptr[row + 1], total), 1, [
            K.If(in_range(b_row, n), [add(product)], uniform=True)], uniform=True)

    body = [K.Let(row, K.workgroup_id(1).cast(INDEX)),
            *column_block(first, column, acc, k, entries, K.Store(c, row * k + column, acc))]
    rows = op.operands[0].type.shape[0] - 1
    n_rows, columns = op.operands[3].type.shape
    return K.Kernel(name, params=[indptr, indices, data, b, c, *params], grid=(K.ceil_div(k, ITEMS), m),
                    workgroup_size=(ITEMS,), body=body,
                    arguments=[("m", rows), ("n", n_rows), ("k", columns), ("total", op.operands[1].type.shape[0])])


def sddmm_kernel(op: Op, name: str) -> K.Kernel:
    m, n, depth, total, steps = params = sizes("m", "n", "depth", "total", "steps")
    indptr, indices, a, bt, values = buffers(op, [m + 1, total, m * depth, n * depth, total])
    row, column, probe, t = variables("row", "column", "probe", "t")
    acc = K.Var("acc", a.dtype)

    def body(p):
        return [K.Let(acc, K.Const(0, a.dtype)),
                K.Let(column, widened(indices[p])),
                K.If((p < clamped(indptr[m], total)) & in_range(column, n), [
                    *last_at_most(indptr, m, p, steps, row, probe),
                    loop(t, 0, depth, [K.Assign(acc, acc + a[row * depth + t] * bt[column * depth + t])])]),
                K.Store(values, p, acc)]

    rows = op.operands[0].type.shape[0] - 1
    n_rows, width = op.operands[3].type.shape
    return per_item(name, [indptr, indices, a, bt, values, *params], total, body,
                    [("m", rows), ("n", n_rows), ("depth", width), ("total", op.operands[1].type.shape[0]),
                     ("steps", bits(rows))])
