"""Format conversion kernels (routines.py's csr2coo, coo2csr, csr2ell, dense2csr_count, dense2csr), a
work-item per row; what needs a sort (COO to CSR, CSR to CSC) sorts with the graph's `sort`,
which libs/prim runs as a radix sort, as rocSPARSE sorts with rocPRIM.

csr2coo: each row writes its id over its nonzeros (the last work-item zeroes the padding).
coo2csr: row r's start is the number of nonzeros of rows below r, a binary search of the sorted
row ids. csr2ell copies each row into its slots. dense2csr_count counts each row's nonzeros; dense2csr writes them at indptr's offsets
(rocSPARSE's nnz and dense2csr), the last work-item zeroing the slots past the last row.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from .common import INDEX, bits, buffers, clamped, loop, per_item, sizes, variables, widened


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


def coo2csr_kernel(op: Op, name: str) -> K.Kernel:
    m, nnz, steps = params = sizes("m", "nnz", "steps")
    rows, indptr = buffers(op, [nnz, m + 1])
    start, probe, b = variables("start", "probe", "bit")

    def body(r):
        # The least p with rows[p] >= r: grow p while rows[p - 1] < r, one halving step per bit.
        return [K.Let(start, K.Const(0, INDEX)),
                loop(b, 0, steps, [
                    K.Let(probe, start + (K.Const(1, INDEX) << (steps - 1 - b))),
                    K.If((probe <= nnz) & (widened(rows[K.maximum(K.minimum(probe, nnz) - 1, K.Const(0, INDEX))]) < r),
                         [K.Assign(start, probe)])]),
                K.Store(indptr, r, start.cast(indptr.dtype))]

    count = op.operands[0].type.shape[0]
    return per_item(name, [rows, indptr, *params], m + 1, body,
                    [("m", op.attrs["rows"]), ("nnz", count), ("steps", bits(count))])


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
