"""Format conversion kernels (routines.py's csr2coo, coo2csr, csr2ell, dense2csr_count, dense2csr), a
work-item per row; what needs a sort (COO to CSR, CSR to CSC) sorts with the graph's `sort`,
which libs/prim runs as a radix sort, as rocSPARSE sorts with rocPRIM.

csr2coo: each row writes its id over its nonzeros (the last work-item zeroes the padding).
coo2csr: row r's start is the number of nonzeros of rows below r, a galloping search of the sorted
row ids from row r - 1's start (a work-item per block of ROW_BLOCK rows). csr2ell copies each row into its slots. dense2csr_count counts each row's nonzeros; dense2csr writes them at indptr's offsets
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


ROW_BLOCK = 64   # coo2csr's row starts per work-item


def coo2csr_kernel(op: Op, name: str) -> K.Kernel:
    m, nnz = params = sizes("m", "nnz")
    rows, indptr = buffers(op, [nnz, m + 1])
    q, start, step, going = variables("q", "start", "step", "going")

    def below(count, r):
        """Whether rows[count - 1] < r (count in [1, nnz]: the load is inside the caller's guard)."""
        return widened(rows[count - 1]) < r

    def body(block):
        # Row q's start is the least p with rows[p] >= q, found from row q - 1's (`start`: every entry
        # before it is below q - 1, so below q) by a galloping search: steps of 1, 2, 4, ... while the
        # entry before start + step is below q, then halving steps back. A row of g entries costs
        # about 2 log2(g) reads near each other, where a binary search of all of them costs log2(nnz)
        # reads far apart.
        return [K.Let(start, K.Const(0, INDEX)), K.Let(step, K.Const(0, INDEX)), K.Let(going, K.Const(0, INDEX)),
                loop(q, block * ROW_BLOCK, K.minimum(block * ROW_BLOCK + ROW_BLOCK, m + 1), [
                    K.Assign(step, K.Const(1, INDEX)), K.Assign(going, K.Const(1, INDEX)),
                    K.While(going.eq(1) & (start + step <= nnz), [
                        K.If(below(start + step, q), [K.Assign(start, start + step), K.Assign(step, step * 2)],
                             [K.Assign(going, K.Const(0, INDEX))])]),
                    K.While(step > 1, [
                        K.Assign(step, step >> 1),
                        K.If(start + step <= nnz, [K.If(below(start + step, q), [K.Assign(start, start + step)])])]),
                    K.Store(indptr, q, start.cast(indptr.dtype))])]

    return per_item(name, [rows, indptr, *params], K.ceil_div(m + 1, ROW_BLOCK), body,
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
