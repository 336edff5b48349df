"""BSR kernels (routines.py's csr2bsr_count, csr2bsr, bsrmm), as rocSPARSE's csr2bsr_nnz, csr2bsr and
bsrmm. A BSR matrix's block row i holds rows [i R, i R + R) of the CSR matrix; its blocks are the
distinct block columns (column / C) of those rows' entries, in increasing order.

csr2bsr_count, csr2bsr: a work-item per block row. The block columns are found in order by
repeated minimum searches over the block row's entries (the next block column above the last
one), so no sort or table is needed: k blocks of e entries cost k x e reads, small for the
block rows of BSR matrices (a few rows of a few entries). csr2bsr zeroes each block, then adds
the entries of its block column in entry order (duplicates summed); the extra work-item
(block row mb) zeroes the slots past the last block row.
bsrmm, "row_columns": a workgroup per row of Y and ITEMS columns of B, as csrmm (the blocks in uniform
loops: common.column_block), each block's row dotted with C rows of B.
The block shape, the sizes and the counts are scalar parameters: one kernel per dtype pair.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from .common import INDEX, ITEMS, buffers, clamped, column_block, in_range, loop, per_item, sizes, variables, widened


def next_block(indptr, indices, total, first, stop, n, width, blocks, above, best, r, p, column):
    """Statements setting `best` to the least block column (column / width) above `above` among rows
    [first, stop)'s in-range entries, or to `blocks` (the block count) if there is none."""
    return [K.Assign(best, blocks),
            loop(r, first, stop, [loop(p, clamped(indptr[r], total), clamped(indptr[r + 1], total), [
                K.Let(column, widened(indices[p])),
                K.If(in_range(column, n) & (column / width > above) & (column / width < best),
                     [K.Assign(best, column / width)])])])]


def block_rows_of(op: Op, block_rows: int):
    m = op.operands[0].type.shape[0] - 1
    return m, -(-m // block_rows)


def csr2bsr_count_kernel(op: Op, name: str) -> K.Kernel:
    m, mb, n, rows, width, total = params = sizes("m", "mb", "n", "rows", "width", "total")
    indptr, indices, counts = buffers(op, [m + 1, total, mb])
    count, above, best, more, t, r, p, column, first, stop = variables(
        "count", "above", "best", "more", "t", "r", "p", "column", "first", "stop")
    blocks = (n + width - 1) / width

    def body(i):
        return [K.Let(first, i * rows), K.Let(stop, K.minimum(first + rows, m)),
                K.Let(count, K.Const(0, INDEX)), K.Let(above, K.Const(-1, INDEX)), K.Let(more, K.Const(1, INDEX)),
                K.Let(best, K.Const(0, INDEX)),
                # At most one block per entry: as many rounds as entries, idle once none is left.
                loop(t, clamped(indptr[first], total), clamped(indptr[stop], total), [K.If(more.eq(1), [
                    *next_block(indptr, indices, total, first, stop, n, width, blocks, above, best, r, p, column),
                    K.If(best < blocks, [K.Assign(count, count + 1), K.Assign(above, best)],
                         [K.Assign(more, K.Const(0, INDEX))])])]),
                K.Store(counts, i, count.cast(counts.dtype))]

    m_value, mb_value = block_rows_of(op, op.attrs["block_rows"])
    return per_item(name, [indptr, indices, counts, *params], mb, body,
                    [("m", m_value), ("mb", mb_value), ("n", op.attrs["columns"]), ("rows", op.attrs["block_rows"]),
                     ("width", op.attrs["block_columns"]), ("total", op.operands[1].type.shape[0])])


def csr2bsr_kernel(op: Op, name: str) -> K.Kernel:
    m, mb, n, rows, width, total, nnzb = params = sizes("m", "mb", "n", "rows", "width", "total", "nnzb")
    block = rows * width
    indptr, indices, data, bsr_indptr, bsr_indices, bsr_data = buffers(
        op, [m + 1, total, total, mb + 1, nnzb, nnzb * block])
    q, t, above, best, r, p, column, first, stop, at = variables(
        "q", "t", "above", "best", "r", "p", "column", "first", "stop", "at")
    blocks = (n + width - 1) / width

    def block_row(i):
        return [K.Let(first, i * rows), K.Let(stop, K.minimum(first + rows, m)),
                K.Let(above, K.Const(-1, INDEX)), K.Let(best, K.Const(0, INDEX)),
                loop(q, clamped(bsr_indptr[i], nnzb), clamped(bsr_indptr[i + 1], nnzb), [
                    *next_block(indptr, indices, total, first, stop, n, width, blocks, above, best, r, p, column),
                    K.Store(bsr_indices, q, best.cast(bsr_indices.dtype)),
                    loop(t, 0, block, [K.Store(bsr_data, q * block + t, 0)]),
                    loop(r, first, stop, [loop(p, clamped(indptr[r], total), clamped(indptr[r + 1], total), [
                        K.Let(column, widened(indices[p])),
                        K.If(in_range(column, n) & (column / width).eq(best), [
                            K.Let(at, q * block + (r - first) * width + column % width),
                            K.Store(bsr_data, at, bsr_data[at] + data[p])])])]),
                    K.Assign(above, best)])]

    def padding():
        return [loop(q, clamped(bsr_indptr[mb], nnzb), nnzb, [
            K.Store(bsr_indices, q, 0), loop(t, 0, block, [K.Store(bsr_data, q * block + t, 0)])])]

    m_value, mb_value = block_rows_of(op, op.attrs["block_rows"])
    return per_item(name, [indptr, indices, data, bsr_indptr, bsr_indices, bsr_data, *params], mb + 1,
                    lambda i: [K.If(i < mb, block_row(i), padding())],
                    [("m", m_value), ("mb", mb_value), ("n", op.attrs["columns"]), ("rows", op.attrs["block_rows"]),
                     ("width", op.attrs["block_columns"]), ("total", op.operands[1].type.shape[0]),
                     ("nnzb", op.attrs["nnzb"])])


def bsrmm_kernel(op: Op, name: str) -> K.Kernel:
    params = sizes("block_rows", "block_columns", "rows", "width", "k", "total")
    block_rows, block_columns, rows, width, k, total = params
    indptr, indices, data, b, y = buffers(op, [block_rows + 1, total, total * rows * width,
                                               block_columns * width * k, block_rows * rows * k])
    g, i, r, first, column, p, j = variables("g", "i", "r", "first", "column", "p", "j")
    acc = K.Var("acc", data.dtype)

    def blocks(add):
        block = widened(indices[p])
        product = K.Assign(acc, acc + data[(p * rows + r) * width + j] * b[(block * width + j) * k + column])
        return K.For(p, clamped(indptr[i], total), clamped(indptr[i + 1], total), 1, [
            K.If(in_range(block, block_columns), [K.For(j, 0, width, 1, [add(product)], uniform=True)], uniform=True)],
            uniform=True)

    body = [K.Let(g, K.workgroup_id(1).cast(INDEX)), K.Let(i, g / rows), K.Let(r, g % rows),
            *column_block(first, column, acc, k, blocks, K.Store(y, g * k + column, acc))]
    indptr_type, indices_type, data_type, b_type = (v.type for v in op.operands)
    _, r_size, c_size = data_type.shape
    return K.Kernel(name, params=[indptr, indices, data, b, y, *params],
                    grid=(K.ceil_div(k, ITEMS), block_rows * rows), workgroup_size=(ITEMS,), body=body,
                    arguments=[("block_rows", indptr_type.shape[0] - 1), ("block_columns", b_type.shape[0] // c_size),
                               ("rows", r_size), ("width", c_size), ("k", b_type.shape[1]),
                               ("total", indices_type.shape[0])])
