"""Format conversion kernels (routines.py's csr2coo, coo2csr, csr2ell, dense2csr_count, dense2csr), a
work-item per row; what needs a sort (COO to CSR, CSR to CSC) sorts with the graph's `sort`,
which libs/prim runs as a radix sort, as rocSPARSE sorts with rocPRIM.

csr2coo: each row writes its id over its nonzeros (the last work-item zeroes the padding).
coo2csr: one pass over the sorted row ids, a work-item per entry writing the starts of the rows it
begins. csr2ell copies each row into its slots. dense2csr_count counts each row's nonzeros; dense2csr writes them at indptr's offsets
(rocSPARSE's nnz and dense2csr), the last work-item zeroing the slots past the last row.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from .common import INDEX, buffers, clamped, loop, per_item, sizes, variables, widened


def csr2coo_kernel(op: Op, name: str) -> K.Kernel:
    m, total = params = sizes("m", "total")
    indptr, rows = buffers(op, [m + 1, total])
    p = K.Var("p", INDEX)

    def body(r):
        return [K.If(r < m, [loop(p, clamped(indptr[r], total), clamped(indptr[r + 1], total),
                                  [K.Store(rows, p, r.cast(rows.dtype))])],
                     [loop(p, clamped(indptr[m], total), total, [K.Store(rows, p, 0)])])]

    return per_item(name, [indptr, rows, *params], m + 1, body,
                    [("m", op.operands[0].type.shape[0] - 1), ("total", op.attrs["nnz"])])


def mapped_row(rows: K.Buffer, at: K.Expr, m: K.Expr, row_map: str) -> K.Expr:
    """rows[at] as coo2csr reads it (routines.ROW_MAPS): "clamp" into [-1, m], "unsigned_min" the
    least of the id as an unsigned number and m (a negative id is m)."""
    row = widened(rows[at])
    if row_map == "unsigned_min":
        return K.minimum(row.cast("u64"), m.cast("u64")).cast(INDEX)
    return K.minimum(K.maximum(row, K.Const(-1, INDEX)), m)


def coo2csr_kernel(op: Op, name: str) -> K.Kernel:
    """Row starts in one pass over the sorted ids, a work-item per p in [0, nnz]: p starts the rows q
    with id[p - 1] < q <= id[p] (id[-1] read as -1 and id[nnz] as m: the rows after the last id start
    at nnz), so every row start is written once, by the entry that begins it."""
    m, nnz = params = sizes("m", "nnz")
    rows, indptr = buffers(op, [nnz, m + 1])
    q, previous, current = variables("q", "previous", "current")
    row_map = op.attrs["row_map"]

    def body(p):
        return [K.Let(previous, K.Const(-1, INDEX)), K.Let(current, m),
                K.If(p > 0, [K.Assign(previous, mapped_row(rows, p - 1, m, row_map))]),
                K.If(p < nnz, [K.Assign(current, mapped_row(rows, p, m, row_map))]),
                loop(q, previous + 1, current + 1, [K.Store(indptr, q, p.cast(indptr.dtype))])]

    return per_item(name, [rows, indptr, *params], nnz + 1, body,
                    [("m", op.attrs["rows"]), ("nnz", op.operands[0].type.shape[0])])


def dense2csr_count_kernel(op: Op, name: str) -> K.Kernel:
    m, n = params = sizes("m", "n")
    a, counts = buffers(op, [m * n, m])
    j, count = variables("j", "count")

    def body(r):
        return [K.Let(count, K.Const(0, INDEX)),
                loop(j, 0, n, [K.If(a[r * n + j].ne(0), [K.Assign(count, count + 1)])]),
                K.Store(counts, r, count.cast(counts.dtype))]

    rows, columns = op.operands[0].type.shape
    return per_item(name, [a, counts, *params], m, body, [("m", rows), ("n", columns)])


def dense2csr_kernel(op: Op, name: str) -> K.Kernel:
    m, n, nse = params = sizes("m", "n", "nse")
    a, indptr, indices, data = buffers(op, [m * n, m + 1, nse, nse])
    j, at, p = variables("j", "at", "p")

    def body(r):
        return [K.If(r < m, [
            K.Let(at, widened(indptr[r])),
            loop(j, 0, n, [K.If(a[r * n + j].ne(0), [
                K.If(at < nse, [K.Store(indices, at, j.cast(indices.dtype)), K.Store(data, at, a[r * n + j])]),
                K.Assign(at, at + 1)])])],
            [loop(p, K.minimum(widened(indptr[m]), nse), nse, [K.Store(indices, p, 0), K.Store(data, p, 0)])])]

    rows, columns = op.operands[0].type.shape
    return per_item(name, [a, indptr, indices, data, *params], m + 1, body,
                    [("m", rows), ("n", columns), ("nse", op.attrs["nse"])])


def csr2ell_kernel(op: Op, name: str) -> K.Kernel:
    m, total, width = params = sizes("m", "total", "width")
    indptr, indices, data, columns, values = buffers(op, [m + 1, total, total, m * width, m * width])
    k, p = variables("k", "p")

    def body(r):
        return [loop(k, 0, width, [
            K.Let(p, widened(indptr[r]) + k),
            K.If((p >= 0) & (p < clamped(indptr[r + 1], total)),
                 [K.Store(columns, r * width + k, indices[p]), K.Store(values, r * width + k, data[p])],
                 [K.Store(columns, r * width + k, -1), K.Store(values, r * width + k, 0)])])]

    rows = op.operands[0].type.shape[0] - 1
    return per_item(name, [indptr, indices, data, columns, values, *params], m, body,
                    [("m", rows), ("total", op.operands[1].type.shape[0]), ("width", op.attrs["width"])])
