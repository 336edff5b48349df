"""The sparse library's routines (ir/ops/library.py's contract), rocSPARSE's, on CSR matrices held as
three arrays: `indptr` (m + 1 row starts, sorted, indptr[0] = 0), `indices` (a column per nonzero)
and `data` (a value per nonzero); the first indptr[m] entries of indices and data are the matrix,
any after them are padding no routine reads. Index arrays are i32 or i64 (one dtype per call),
values f32 or f64. Sizes come from the operands' shapes: m = len(indptr) - 1, n from the dense
operand (or the attribute `columns`).

  csrmv(indptr, indices, data, x[n]) {chunk, column_map} -> y[m], carries[2 C], carry_rows[2 C]
      y = A x, load-balanced by nonzeros (see kernels_spmv.py): C = ceil(nnz / chunk) chunks of
      `chunk` consecutive nonzeros, each summing its rows' products (even and odd positions in
      order, then the two: paired_sum). A row lying whole in
      one chunk is written to y; a row crossing a chunk boundary gets y = 0 from the chunk holding
      its first nonzero and each chunk's partial sum of it in `carries` (slot 2c for the chunk's
      first row, 2c + 1 for its last; an unused slot holds 0 for the chunk's first row), which
      the caller adds into y (a scatter-add: `spmv` below in the frontend); columns mapped by
      column_map as csrmv_ell's
  ellmv(columns[m, K], values[m, K], x[n]) -> y[m]
      ELL: row r's K slots, a negative column marking padding.
  bsrmv(indptr, indices, data[nb, R, C], x[n]) -> y[mb R]    y = A x, A in BSR: block row i's blocks
      data[indptr[i]:indptr[i + 1]], block p at block column indices[p] (columns C indices[p] ...)
  bsrmm(indptr, indices, data[nb, R, C], B[n, k]) -> Y[mb R, k]   Y = A B, A in BSR
  csrmm(indptr, indices, data, B[n, k]) -> C[m, k]           C = A B
  sddmm(indptr, indices, A[m, K], Bt[n, K]) -> values[nnz]     (A Bt^T) at A's pattern (sampled product)
  csr2coo(indptr) {nnz} -> rows[nnz]                          the row of each nonzero
  coo2csr(rows[nnz]) {rows, row_map} -> indptr[rows + 1]      row starts of row-sorted row ids, each id
      read as row_map says ("clamp": into [-1, rows]; "unsigned_min": the least of the id as an
      unsigned number and rows); the ids so read must be in order
  csrmv_ell(indptr, indices, data, x[n]) {width, column_map} -> y[m]
      csr2ell{width} then ellmv without the ELL arrays: row r sums its first `width` entries as
      csrmv does; columns mapped by column_map ("drop": out of range contributes nothing; "clamp";
      "wrap_clamp": a negative column + n, then clamped: a numpy gather's x[column]); indices may
      be of another index dtype than indptr
  csr2ell(indptr, indices, data) {width} -> columns[m, width], values[m, width]
      each row's first `width` entries in its slots, the rest of its slots column -1, value 0
  csr2bsr_count(indptr, indices) {block_rows R, block_columns C, columns n} -> counts[mb]
      each block row's (rows [i R, i R + R)) distinct block columns (column / C), mb = ceil(m / R)
  csr2bsr(indptr, indices, data, bsr_indptr) {R, C, columns, nnzb} -> bsr_indices[nnzb],
      bsr_data[nnzb, R, C]: each block row's blocks in block-column order at bsr_indptr's offsets,
      duplicates summed; slots past bsr_indptr[mb] hold block column 0, zeros
  dense2csr_count(A[m, n]) -> counts[m]                       nonzeros per row
  dense2csr(A[m, n], indptr) {nse} -> indices[nse], data[nse] the nonzeros of each row in column
      order, at indptr's offsets; slots past indptr[m] hold column 0, value 0
  spgemm_bound(a_indptr, a_indices, b_indptr) -> slots[m]    each row's global hash table size: the
      least power of two at least 2 x the row's products of A B (a bound of its nonzeros); 0 for a
      row of at most SPGEMM_LDS_SLOTS / 2 products, which hashes in an LDS table of its work-item
  spgemm_symbolic(a_indptr, a_indices, b_indptr, b_indices, table_ptr) -> row_nnz[m], keys[T]
      each row's distinct columns counted in its hash table (global at table_ptr's offsets, or LDS)
  spgemm_numeric(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, table_ptr, c_indptr)
      {nse} -> c_indices[nse], c_data[nse], keys[T], values[T]: each row's products summed by
      column in its hash table (global or LDS), then written in the table's slot order at c_indptr's offsets
      (columns unsorted within a row, as scipy's product leaves them)
  csrsv_levels(indptr, indices) {lower} -> order[m], level_ptr[m + 1], levels[1], row_level[m]
      the rows of a triangular matrix by level (a row's level is one more than the highest of the
      rows it reads), in level order, ascending within a level; the rows of level l are
      order[level_ptr[l]:level_ptr[l + 1]]
  csrsv(indptr, indices, data, order, level_ptr, levels, x) {lower, unit_diagonal} -> y
      y = T^-1 x for the triangle of A (`lower`: entries left of the diagonal, else right; the
      diagonal entry from A unless unit_diagonal), level by level

Index arrays under jit are data no one has checked, so every kernel reads them safely: an indptr
entry is clamped to [0, len(indices)] and a column outside [0, n) contributes nothing (in sddmm its
value is 0), as JAX's BCOO treats out-of-range indices as padding; no read or write leaves a
buffer whatever the arrays hold (an indptr that decreases gives an unspecified but in-bounds
result). cdnajit.sparse's `checked` mode validates them and raises instead.

The references compute as the kernels do (sums in nonzero order from 0).
"""
from __future__ import annotations

import numpy as np

from ...ir.opdef import fmt_types, require
from ...ir.ops.library import Routine
from ...ir.types import COMPLEXES, TensorType

VALUE_DTYPES = ("f32", "f64")
CHUNK = 1024   # nonzeros per work-item of csrmv, as its callers (the matcher, cdnajit.sparse) ask
INDEX_DTYPES = ("i32", "i64")


def check(routine: str, types, count: int, indices=(), values=(), complex_ok=False):
    """`count` operands; those at positions `indices` 1-D index arrays of one dtype, at `values` float
    arrays (or complex ones, where the routine's kernel computes on complex parts: `complex_ok`)."""
    require(len(types) == count, f"library_call: sparse.{routine} takes {count} operands, got {fmt_types(types)}")
    index_dtypes = {types[i].dtype for i in indices}
    require(all(types[i].dtype in INDEX_DTYPES and types[i].ndim == 1 for i in indices) and len(index_dtypes) <= 1,
            f"library_call: sparse.{routine}'s index arrays must be 1-D, all i32 or all i64, got {fmt_types(types)}")
    value_dtypes = {types[i].dtype for i in values}
    allowed = VALUE_DTYPES + (COMPLEXES if complex_ok else ())
    require(all(types[i].dtype in allowed for i in values) and len(value_dtypes) <= 1,
            f"library_call: sparse.{routine}'s values must be all of one dtype of {', '.join(allowed)}, "
            f"got {fmt_types(types)}")


def check_csr(routine: str, indptr: TensorType, indices: TensorType, data: TensorType | None = None):
    require(indptr.shape[0] >= 1, f"library_call: sparse.{routine}: indptr needs m + 1 >= 1 entries, got {indptr}")
    require(data is None or (data.ndim == 1 and data.shape == indices.shape),
            f"library_call: sparse.{routine}: indices {indices} and data {data} differ in length")


def chunks_of(nnz: int, chunk: int) -> int:
    return -(-nnz // chunk)


def row_of(indptr, position):
    """The row holding nonzero `position` (the last row starting at or before it)."""
    return int(np.searchsorted(indptr, position, side="right")) - 1


def clamped(position, total: int) -> int:
    """An indptr entry as the kernels read it: clamped to [0, total] (common.clamped)."""
    return min(max(int(position), 0), total)


def gathered(values, indices, count: int):
    """values[indices] with an index outside [0, count) giving 0 (common.in_range: never loaded)."""
    kept = (indices >= 0) & (indices < count)
    return np.where(kept.reshape(kept.shape + (1,) * (values.ndim - 1)), values[np.where(kept, indices, 0)], 0)


def ordered_sum(values, dtype):
    """values summed one by one from 0, in order (np.cumsum's order)."""
    return np.cumsum(values, dtype=dtype)[-1] if len(values) else dtype.type(0)


def paired_sum(values, dtype):
    """A row's products summed as the SpMV kernels sum them (spmv.RowDot): those at even positions
    in order, those at odd positions in order, then the two added."""
    return ordered_sum(values[0::2], dtype) + ordered_sum(values[1::2], dtype)


# ---- SpMV, SpMM, SDDMM -------------------------------------------------------------------------

def csrmv_infer(types, attrs):
    check("csrmv", types, 4, indices=(0, 1), values=(2, 3))
    indptr, indices, data, x = types
    check_csr("csrmv", indptr, indices, data)
    require(x.ndim == 1, f"library_call: sparse.csrmv takes a vector x, got {x}")
    require(attrs["chunk"] > 0 and attrs["column_map"] in COLUMN_MAPS and (x.shape[0] > 0 or attrs["column_map"] == "drop"),
            f"library_call: sparse.csrmv: chunk > 0 and column_map one of {COLUMN_MAPS} (\"drop\" for an empty x), "
            f"got {attrs}")
    carries = 2 * chunks_of(indices.shape[0], attrs["chunk"])
    return [TensorType(data.dtype, (indptr.shape[0] - 1,)), TensorType(data.dtype, (carries,)),
            TensorType(indptr.dtype, (carries,))]


def csrmv(indptr, indices, data, x, *, chunk, column_map):
    m, nnz = len(indptr) - 1, clamped(indptr[-1], len(indices))
    products = data[:nnz] * gathered(x, mapped_columns(indices[:nnz], len(x), column_map), len(x))
    count = chunks_of(len(indices), chunk)
    y = np.zeros(m, data.dtype)
    carries, carry_rows = np.zeros(2 * count, data.dtype), np.zeros(2 * count, indptr.dtype)
    for c in range(count):
        s, e = c * chunk, min(c * chunk + chunk, nnz)
        if s >= e:
            continue
        first, last = row_of(indptr, s), row_of(indptr, e - 1)
        carry_rows[2 * c:2 * c + 2] = first
        for r in range(first, last + 1):
            start, stop = int(indptr[r]), int(indptr[r + 1])
            total = paired_sum(products[max(start, s):min(stop, e)], data.dtype)
            if start >= s and stop <= e:
                y[r] = total
            else:
                slot = 2 * c + (r != first)
                carries[slot], carry_rows[slot] = total, r
    return y, carries, carry_rows


def ellmv_infer(types, attrs):
    check("ellmv", types, 3, values=(1, 2))
    columns, values, x = types
    require(columns.dtype in INDEX_DTYPES and columns.ndim == 2 and columns.shape == values.shape and x.ndim == 1,
            f"library_call: sparse.ellmv takes columns[m, K] (integers), values[m, K] and x[n], got {fmt_types(types)}")
    return [TensorType(values.dtype, columns.shape[:1])]


def ellmv(columns, values, x):
    products = (values * gathered(x, columns, len(x))).astype(values.dtype)
    return np.cumsum(products, axis=1, dtype=values.dtype)[:, -1] if columns.shape[1] else \
        np.zeros(len(columns), values.dtype)


def bsr_infer(routine: str, types, dense_ndim: int):
    """bsrmv's and bsrmm's shape rule: y or Y of mb R rows (and B's columns)."""
    check(routine, types, 4, indices=(0, 1), values=(2, 3))
    indptr, indices, data, x = types
    require(indptr.shape[0] >= 1 and data.ndim == 3 and data.shape[0] == indices.shape[0] and
            x.ndim == dense_ndim and data.shape[2] > 0 and x.shape[0] % data.shape[2] == 0,
            f"library_call: sparse.{routine} takes indptr[mb + 1], indices[nb], data[nb, R, C] and "
            f"{'x[n]' if dense_ndim == 1 else 'B[n, k]'} (n a multiple of C), got {fmt_types(types)}")
    return [TensorType(data.dtype, ((indptr.shape[0] - 1) * data.shape[1],) + x.shape[1:])]


def bsrmv(indptr, indices, data, x):
    rows, width = data.shape[1], data.shape[2]
    blocks = x.reshape(-1, width)
    y = np.zeros(((len(indptr) - 1) * rows), data.dtype)
    for i in range(len(indptr) - 1):
        for r in range(rows):
            products = [data[p, r] * gathered(blocks, indices[p:p + 1], len(blocks))[0]
                        for p in range(clamped(indptr[i], len(indices)), clamped(indptr[i + 1], len(indices)))]
            y[i * rows + r] = ordered_sum(np.concatenate(products), data.dtype) if products else 0
    return y


def bsrmm(indptr, indices, data, b):
    return np.stack([bsrmv(indptr, indices, data, column) for column in b.T], axis=1) if b.shape[1] else \
        np.zeros(((len(indptr) - 1) * data.shape[1], 0), data.dtype)


def csrmm_infer(types, attrs):
    check("csrmm", types, 4, indices=(0, 1), values=(2, 3))
    indptr, indices, data, b = types
    check_csr("csrmm", indptr, indices, data)
    require(b.ndim == 2, f"library_call: sparse.csrmm takes a matrix B[n, k], got {b}")
    return [TensorType(data.dtype, (indptr.shape[0] - 1, b.shape[1]))]


def csrmm(indptr, indices, data, b):
    m = len(indptr) - 1
    c = np.zeros((m, b.shape[1]), data.dtype)
    for r in range(m):
        span = slice(clamped(indptr[r], len(indices)), clamped(indptr[r + 1], len(indices)))
        products = data[span, None] * gathered(b, indices[span], len(b))
        c[r] = np.cumsum(products, axis=0, dtype=data.dtype)[-1] if span.stop > span.start \
            else 0
    return c


def sddmm_infer(types, attrs):
    check("sddmm", types, 4, indices=(0, 1), values=(2, 3))
    indptr, indices, a, bt = types
    check_csr("sddmm", indptr, indices)
    require(a.ndim == 2 and bt.ndim == 2 and a.shape[1] == bt.shape[1] and a.shape[0] == indptr.shape[0] - 1,
            f"library_call: sparse.sddmm takes A[m, K] and Bt[n, K] for m + 1 = len(indptr), got {fmt_types(types)}")
    return [TensorType(a.dtype, indices.shape)]


def sddmm(indptr, indices, a, bt):
    values = np.zeros(len(indices), a.dtype)
    for r in range(len(indptr) - 1):
        for p in range(clamped(indptr[r], len(indices)), clamped(indptr[r + 1], len(indices))):
            if 0 <= indices[p] < len(bt):
                values[p] = ordered_sum(a[r] * bt[indices[p]], a.dtype)
    return values


# ---- conversions -------------------------------------------------------------------------------

def csr2coo_infer(types, attrs):
    check("csr2coo", types, 1, indices=(0,))
    return [TensorType(types[0].dtype, (attrs["nnz"],))]


def csr2coo(indptr, *, nnz):
    rows = np.zeros(nnz, indptr.dtype)
    counts = np.diff(indptr)
    rows[:int(indptr[-1])] = np.repeat(np.arange(len(indptr) - 1), counts)
    return rows


ROW_MAPS = ("clamp", "unsigned_min")


def coo2csr_infer(types, attrs):
    check("coo2csr", types, 1, indices=(0,))
    require(attrs["rows"] >= 0 and attrs["row_map"] in ROW_MAPS,
            f"library_call: sparse.coo2csr: rows >= 0 and row_map one of {ROW_MAPS}, got {attrs}")
    return [TensorType(types[0].dtype, (attrs["rows"] + 1,))]


def coo2csr(rows_of_nonzeros, *, rows, row_map):
    ids = rows_of_nonzeros.astype(np.int64)
    if row_map == "unsigned_min":
        ids = np.where(ids < 0, rows, np.minimum(ids, rows))
    return np.searchsorted(ids, np.arange(rows + 1), side="left").astype(rows_of_nonzeros.dtype)


COLUMN_MAPS = ("drop", "clamp", "wrap_clamp")


def csrmv_ell_infer(types, attrs):
    indptr, indices, data, x = types
    require(indptr.dtype in INDEX_DTYPES and indices.dtype in INDEX_DTYPES and indptr.ndim == 1 and
            indices.ndim == 1 and indptr.shape[0] >= 1, f"library_call: sparse.csrmv_ell takes 1-D i32/i64 indptr "
                                                        f"and indices, got {fmt_types(types)}")
    check("csrmv_ell", types, 4, values=(2, 3))
    check_csr("csrmv_ell", indptr, indices, data)
    require(x.ndim == 1 and x.shape[0] > 0, f"library_call: sparse.csrmv_ell takes a non-empty vector x, got {x}")
    require(attrs["width"] >= 0 and attrs["column_map"] in COLUMN_MAPS,
            f"library_call: sparse.csrmv_ell: width >= 0 and column_map one of {COLUMN_MAPS}, got {attrs}")
    return [TensorType(data.dtype, (indptr.shape[0] - 1,))]


def mapped_columns(indices, n: int, column_map: str):
    """Columns as csrmv_ell reads them: "drop" leaves them (out of range: no product), "clamp" clamps
    into [0, n), "wrap_clamp" first adds n to a negative one (numpy's indexing)."""
    columns = indices.astype(np.int64)
    if column_map == "wrap_clamp":
        columns = np.where(columns < 0, columns + n, columns)
    return columns if column_map == "drop" else np.clip(columns, 0, n - 1)


def csrmv_ell(indptr, indices, data, x, *, width, column_map):
    """csr2ell{width} then ellmv in one pass: row r's positions [indptr[r], indptr[r] + width) that lie
    in [0, clamped indptr[r + 1]), summed as csrmv's rows (paired_sum; a dropped column's product 0)."""
    total, n = len(indices), len(x)
    columns = mapped_columns(indices, n, column_map)
    y = np.zeros(len(indptr) - 1, data.dtype)
    for r in range(len(y)):
        start, stop = int(indptr[r]), clamped(indptr[r + 1], total)
        positions = np.arange(max(start, 0), max(min(start + width, stop), max(start, 0)))
        y[r] = paired_sum(data[positions] * gathered(x, columns[positions], n), data.dtype)
    return y


def csr2ell_infer(types, attrs):
    check("csr2ell", types, 3, indices=(0, 1), values=(2,))
    indptr, indices, data = types
    check_csr("csr2ell", indptr, indices, data)
    require(attrs["width"] >= 0, "library_call: sparse.csr2ell: width must be >= 0")
    shape = (indptr.shape[0] - 1, attrs["width"])
    return [TensorType(indptr.dtype, shape), TensorType(data.dtype, shape)]


def csr2ell(indptr, indices, data, *, width):
    m = len(indptr) - 1
    columns, values = np.full((m, width), -1, indptr.dtype), np.zeros((m, width), data.dtype)
    for r in range(m):
        kept = min(int(indptr[r + 1] - indptr[r]), width)
        columns[r, :kept] = indices[indptr[r]:indptr[r] + kept]
        values[r, :kept] = data[indptr[r]:indptr[r] + kept]
    return columns, values


def csr2bsr_check(routine, types, attrs):
    require(min(attrs["block_rows"], attrs["block_columns"]) > 0 and attrs["columns"] >= 0,
            f"library_call: sparse.{routine}: block_rows and block_columns must be positive, columns >= 0, got {attrs}")
    indptr, indices = types[:2]
    check_csr(routine, indptr, indices, types[2] if len(types) > 3 else None)
    return -(-(indptr.shape[0] - 1) // attrs["block_rows"])


def csr2bsr_count_infer(types, attrs):
    check("csr2bsr_count", types, 2, indices=(0, 1))
    return [TensorType(types[0].dtype, (csr2bsr_check("csr2bsr_count", types, attrs),))]


def block_columns_of_rows(indptr, indices, first, stop, block_columns, columns):
    """The sorted distinct block columns of rows [first, stop)'s in-range entries, and those entries."""
    spans = [range(clamped(indptr[r], len(indices)), clamped(indptr[r + 1], len(indices))) for r in range(first, stop)]
    entries = [(r, p) for r, span in zip(range(first, stop), spans) for p in span if 0 <= indices[p] < columns]
    return sorted({int(indices[p]) // block_columns for _, p in entries}), entries


def csr2bsr_count(indptr, indices, *, block_rows, block_columns, columns):
    m = len(indptr) - 1
    return np.array([len(block_columns_of_rows(indptr, indices, i * block_rows, min(i * block_rows + block_rows, m),
                                               block_columns, columns)[0])
                     for i in range(-(-m // block_rows))], indptr.dtype)


def csr2bsr_infer(types, attrs):
    check("csr2bsr", types, 4, indices=(0, 1, 3), values=(2,))
    mb = csr2bsr_check("csr2bsr", types, attrs)
    require(types[3].shape == (mb + 1,), f"library_call: sparse.csr2bsr: bsr_indptr must have {mb + 1} entries, "
                                         f"got {types[3]}")
    require(attrs["nnzb"] >= 0, "library_call: sparse.csr2bsr: nnzb must be >= 0")
    return [TensorType(types[0].dtype, (attrs["nnzb"],)),
            TensorType(types[2].dtype, (attrs["nnzb"], attrs["block_rows"], attrs["block_columns"]))]


def csr2bsr(indptr, indices, data, bsr_indptr, *, block_rows, block_columns, columns, nnzb):
    m = len(indptr) - 1
    out_indices = np.zeros(nnzb, indptr.dtype)
    out = np.zeros((nnzb, block_rows, block_columns), data.dtype)
    for i in range(len(bsr_indptr) - 1):
        first = i * block_rows
        blocks, entries = block_columns_of_rows(indptr, indices, first, min(first + block_rows, m), block_columns,
                                                columns)
        slots = range(clamped(bsr_indptr[i], nnzb), clamped(bsr_indptr[i + 1], nnzb))
        for q, block in zip(slots, blocks + [-(-columns // block_columns)] * len(slots)):
            out_indices[q] = block
            for r, p in entries:
                if indices[p] // block_columns == block:
                    out[q, r - first, indices[p] % block_columns] += data[p]
    return out_indices, out


def dense2csr_count_infer(types, attrs):
    check("dense2csr_count", types, 1, values=(0,))
    require(types[0].ndim == 2, f"library_call: sparse.dense2csr_count takes a matrix, got {types[0]}")
    return [TensorType(attrs["index_dtype"], types[0].shape[:1])]


def dense2csr_count(a, *, index_dtype):
    return np.count_nonzero(a, axis=1).astype(TensorType(index_dtype, ()).numpy_dtype)


def dense2csr_infer(types, attrs):
    check("dense2csr", types, 2, indices=(1,), values=(0,))
    a, indptr = types
    require(a.ndim == 2 and indptr.shape[0] == a.shape[0] + 1,
            f"library_call: sparse.dense2csr takes A[m, n] and indptr[m + 1], got {fmt_types(types)}")
    return [TensorType(indptr.dtype, (attrs["nse"],)), TensorType(a.dtype, (attrs["nse"],))]


def dense2csr(a, indptr, *, nse):
    rows, columns = np.nonzero(a)
    indices, data = np.zeros(nse, indptr.dtype), np.zeros(nse, a.dtype)
    kept = min(len(rows), nse)
    indices[:kept], data[:kept] = columns[:kept], a[rows[:kept], columns[:kept]]
    return indices, data


# ---- SpGEMM --------------------------------------------------------------------------------------

def spgemm_bound_infer(types, attrs):
    check("spgemm_bound", types, 3, indices=(0, 1, 2))
    return [TensorType(types[0].dtype, (types[0].shape[0] - 1,))]


def product_counts(a_indptr, a_indices, b_indptr) -> list[int]:
    """Each row's products: B's row lengths (indptr differences, unclamped) summed over its columns
    in range, as spgemm.product_count."""
    lengths, n = np.diff(b_indptr.astype(np.int64)), len(b_indptr) - 1
    return [sum(int(lengths[k]) for k in a_indices[span(a_indptr, r, len(a_indices))] if 0 <= k < n)
            for r in range(len(a_indptr) - 1)]


def spgemm_bound(a_indptr, a_indices, b_indptr):
    """A global table for each row with more products than an LDS table holds; none for the others."""
    counts = product_counts(a_indptr, a_indices, b_indptr)
    return np.array([0 if 2 * c <= SPGEMM_LDS_SLOTS else table_slots(c) for c in counts], a_indptr.dtype).reshape(-1)


def span(indptr, r, total) -> slice:
    """Row r's entries, its indptr entries clamped to [0, total] as the kernels' common.clamped."""
    return slice(*(min(max(int(indptr[i]), 0), total) for i in (r, r + 1)))


def table_slots(products: int) -> int:
    return 0 if products <= 0 else 1 << (2 * products - 1).bit_length()


def hash_slot(column, size):
    """The first slot tried for a column in a table of `size` slots, a power of two (Knuth's
    multiplicative hash, its bits from 16 up)."""
    return ((column * 2654435761) >> 16) & (size - 1)


def row_products(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, r):
    """Row r's products in order; rows' spans clamped and columns of A outside B's rows skipped, as
    spgemm.for_products reads whatever the index arrays hold."""
    for p in range(*span(a_indptr, r, len(a_indices)).indices(len(a_indices))):
        k = int(a_indices[p])
        if 0 <= k < len(b_indptr) - 1:
            for q in range(*span(b_indptr, k, len(b_indices)).indices(len(b_indices))):
                yield int(b_indices[q]), (None if a_data is None else a_data[p] * b_data[q])


# Tries written out before spgemm.insert's loop over the table: on the host 8 took W16.spgemm's
# numeric pass from ~171 to ~149 ms and its symbolic pass from ~73 to ~69 ms of CPU against 4 (16: no
# better); the loop's setup and exit cost more than the unrolled tries a placed column skips. The
# three SpGEMM programs' cold compile took ~0.5 s longer (once: the kernels are cached).
SPGEMM_PROBES = 8
SPGEMM_LDS_SLOTS = 128   # slots of a work-item's LDS table: rows of at most half as many products hash there


def lds_slots(products: int) -> int:
    """A row's LDS table: the least power of two of at least twice its products (at most SPGEMM_LDS_SLOTS)."""
    return table_slots(products)


def hashed_row(products, keys, values, start, size):
    """Insert (column, value) products into the table keys/values[start:start + size] (linear
    probing, -1 empty); values summed per column in product order. As spgemm.insert, a product
    still not placed after SPGEMM_PROBES + size tries (a full table: only for unchecked index
    arrays, whose bound undercounts) is dropped."""
    for column, value in products:
        slot = hash_slot(column, size)
        for _ in range(SPGEMM_PROBES + size):
            if keys[start + slot] in (-1, column):
                break
            slot = (slot + 1) & (size - 1)
        else:
            continue
        if keys[start + slot] == -1:
            keys[start + slot] = column
            if values is not None:
                values[start + slot] = 0
        if values is not None:
            values[start + slot] += value


def spgemm_symbolic_infer(types, attrs):
    check("spgemm_symbolic", types, 5, indices=(0, 1, 2, 3, 4))
    a_indptr, table_ptr = types[0], types[4]
    return [TensorType(a_indptr.dtype, (a_indptr.shape[0] - 1,)), TensorType(a_indptr.dtype, (attrs["table"],))]


def table_fits(start, size, table):
    """spgemm.fits: a row whose table would lie outside the keys buffer (or has none) is left empty."""
    return start >= 0 and size > 0 and start + size <= table


def row_table(r, products, table_ptr, table, keys, values):
    """Row r's table as (keys, values, start, size), as spgemm.row_tables chooses it: its slice of
    the global table if it fits; else, if spgemm_bound gave it none and it has 1 to
    SPGEMM_LDS_SLOTS / 2 products, a table of its own (the kernel's LDS slice) of lds_slots(products)
    slots; else None (the row is left empty)."""
    start, size = int(table_ptr[r]), int(table_ptr[r + 1] - table_ptr[r])
    if table_fits(start, size, table):
        return keys, values, start, size
    if size == 0 and 0 < 2 * products[r] <= SPGEMM_LDS_SLOTS:
        size = lds_slots(products[r])
        return np.full(size, -1, keys.dtype), None if values is None else np.zeros(size, values.dtype), 0, size
    return None


def spgemm_symbolic(a_indptr, a_indices, b_indptr, b_indices, table_ptr, *, table):
    keys = np.full(table, -1, a_indptr.dtype)
    row_nnz = np.zeros(len(a_indptr) - 1, a_indptr.dtype)
    products = product_counts(a_indptr, a_indices, b_indptr)
    for r in range(len(row_nnz)):
        chosen = row_table(r, products, table_ptr, table, keys, None)
        if chosen is not None:
            row_keys, _, start, size = chosen
            products_of_row = row_products(a_indptr, a_indices, None, b_indptr, b_indices, None, r)
            hashed_row(products_of_row, row_keys, None, start, size)
            row_nnz[r] = np.count_nonzero(row_keys[start:start + size] >= 0)
    return row_nnz, keys


def spgemm_numeric_infer(types, attrs):
    check("spgemm_numeric", types, 8, indices=(0, 1, 3, 4, 6, 7), values=(2, 5))
    index, value = types[0].dtype, types[2].dtype
    return [TensorType(index, (attrs["nse"],)), TensorType(value, (attrs["nse"],)),
            TensorType(index, (attrs["table"],)), TensorType(value, (attrs["table"],))]


def spgemm_numeric(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, table_ptr, c_indptr, *, nse, table):
    keys, values = np.full(table, -1, a_indptr.dtype), np.zeros(table, a_data.dtype)
    c_indices, c_data = np.zeros(nse, a_indptr.dtype), np.zeros(nse, a_data.dtype)
    products = product_counts(a_indptr, a_indices, b_indptr)
    for r in range(len(a_indptr) - 1):
        chosen = row_table(r, products, table_ptr, table, keys, values)
        if chosen is None:
            continue
        row_keys, row_values, start, size = chosen
        hashed_row(row_products(a_indptr, a_indices, a_data, b_indptr, b_indices, b_data, r), row_keys, row_values,
                   start, size)
        at = int(c_indptr[r])
        for s in (s for s in range(start, start + size) if row_keys[s] >= 0):   # only inside C (nse bounds it)
            if 0 <= at < nse:
                c_indices[at], c_data[at] = row_keys[s], row_values[s]
            at += 1
    return c_indices, c_data, keys, values


# ---- triangular solve ----------------------------------------------------------------------------

def in_triangle(r, column, lower, m):
    """Whether A[r, column] lies strictly in the triangle solved (a column outside [0, m) never does)."""
    return (column < r if lower else column > r) and 0 <= column < m


def csrsv_levels_infer(types, attrs):
    check("csrsv_levels", types, 2, indices=(0, 1))
    m = types[0].shape[0] - 1
    index = types[0].dtype
    return [TensorType(index, (m,)), TensorType(index, (m + 1,)), TensorType(index, (1,)), TensorType(index, (m,))]


def csrsv_levels(indptr, indices, *, lower):
    m = len(indptr) - 1
    level = np.zeros(m, np.int64)
    rows = range(m) if lower else range(m - 1, -1, -1)
    for r in rows:
        for p in range(clamped(indptr[r], len(indices)), clamped(indptr[r + 1], len(indices))):
            if in_triangle(r, int(indices[p]), lower, m):
                level[r] = max(level[r], level[indices[p]] + 1)
    levels = int(level.max()) + 1 if m else 0
    order = np.argsort(level, kind="stable").astype(indptr.dtype)
    level_ptr = np.zeros(m + 1, indptr.dtype)
    level_ptr[1:levels + 1] = np.cumsum(np.bincount(level, minlength=levels))
    level_ptr[levels + 1:] = m
    return order, level_ptr, np.array([levels], indptr.dtype), level.astype(indptr.dtype)


def csrsv_infer(types, attrs):
    check("csrsv", types, 7, indices=(0, 1, 3, 4, 5), values=(2, 6), complex_ok=True)
    indptr, x = types[0], types[6]
    require(x.shape == (indptr.shape[0] - 1,), f"library_call: sparse.csrsv: x must have m entries, got {x}")
    return [x]


def csrsv(indptr, indices, data, order, level_ptr, levels, x, *, lower, unit_diagonal):
    if np.iscomplexobj(x):
        return csrsv_complex(indptr, indices, data, order, x, lower=lower, unit_diagonal=unit_diagonal)
    y = np.zeros_like(x)
    for r in order:
        total, diagonal = x[r], x.dtype.type(1)
        for p in range(clamped(indptr[r], len(indices)), clamped(indptr[r + 1], len(indices))):
            column = int(indices[p])
            if in_triangle(r, column, lower, len(x)):
                total = total - data[p] * y[column]
            elif column == r and not unit_diagonal:
                diagonal = data[p]
        with np.errstate(all="ignore"):
            y[r] = total / diagonal
    return y


def csrsv_complex(indptr, indices, data, order, x, *, lower, unit_diagonal):
    """csrsv on complex parts, the operations of csrsv.complex_parts in its order (Smith's division)."""
    xp, dp = (np.ascontiguousarray(v).view(v.real.dtype).reshape(-1, 2) for v in (x, data))
    yp = np.zeros_like(xp)
    one, zero = xp.dtype.type(1), xp.dtype.type(0)
    with np.errstate(all="ignore"):
        for r in order:
            (ar, ai), (dr, di) = xp[r], (one, zero)
            for p in range(clamped(indptr[r], len(indices)), clamped(indptr[r + 1], len(indices))):
                column = int(indices[p])
                (tr, ti), (yr, yi) = dp[p], yp[column] if 0 <= column < len(yp) else (zero, zero)
                if in_triangle(r, column, lower, len(x)):
                    ar, ai = ar - (tr * yr - ti * yi), ai - (tr * yi + ti * yr)
                elif column == r and not unit_diagonal:
                    dr, di = tr, ti
            if abs(dr) >= abs(di):
                ratio = di / dr
                den = dr + di * ratio
                yp[r] = (ar + ai * ratio) / den, (ai - ar * ratio) / den
            else:
                ratio = dr / di
                den = di + dr * ratio
                yp[r] = (ar * ratio + ai) / den, (ai * ratio - ar) / den
    return yp.reshape(-1).view(x.dtype)


ROUTINES = {
    "csrmv": Routine({"chunk": "int", "column_map": "str"}, csrmv_infer, csrmv,
                     "y = A x by chunks of nonzeros, with carries"),
    "ellmv": Routine({}, ellmv_infer, ellmv, "y = A x for an ELL matrix"),
    "bsrmv": Routine({}, lambda types, attrs: bsr_infer("bsrmv", types, 1), bsrmv, "y = A x for a BSR matrix"),
    "bsrmm": Routine({}, lambda types, attrs: bsr_infer("bsrmm", types, 2), bsrmm, "Y = A B for a BSR matrix"),
    "csrmm": Routine({}, csrmm_infer, csrmm, "C = A B, A CSR, B dense"),
    "sddmm": Routine({}, sddmm_infer, sddmm, "(A Bt^T) sampled at a CSR pattern"),
    "csr2coo": Routine({"nnz": "int"}, csr2coo_infer, csr2coo, "row id of each nonzero"),
    "coo2csr": Routine({"rows": "int", "row_map": "str"}, coo2csr_infer, coo2csr, "row starts of sorted row ids"),
    "csrmv_ell": Routine({"width": "int", "column_map": "str"}, csrmv_ell_infer, csrmv_ell,
                         "y = A x over each row's first width entries (csr2ell, ellmv in one pass)"),
    "csr2ell": Routine({"width": "int"}, csr2ell_infer, csr2ell, "a CSR matrix's rows in ELL slots"),
    "csr2bsr_count": Routine({"block_rows": "int", "block_columns": "int", "columns": "int"}, csr2bsr_count_infer,
                             csr2bsr_count, "distinct blocks per block row of a CSR matrix"),
    "csr2bsr": Routine({"block_rows": "int", "block_columns": "int", "columns": "int", "nnzb": "int"}, csr2bsr_infer,
                       csr2bsr, "a CSR matrix's blocks, in block-column order"),
    "dense2csr_count": Routine({"index_dtype": "dtype"}, dense2csr_count_infer, dense2csr_count,
                               "nonzeros per row of a dense matrix"),
    "dense2csr": Routine({"nse": "int"}, dense2csr_infer, dense2csr, "a dense matrix's nonzeros, row by row"),
    "spgemm_bound": Routine({}, spgemm_bound_infer, spgemm_bound, "hash table slots per row of A B"),
    "spgemm_symbolic": Routine({"table": "int"}, spgemm_symbolic_infer, spgemm_symbolic, "nonzeros per row of A B"),
    "spgemm_numeric": Routine({"nse": "int", "table": "int"}, spgemm_numeric_infer, spgemm_numeric,
                              "A B's columns and values, row by row"),
    "csrsv_levels": Routine({"lower": "bool"}, csrsv_levels_infer, csrsv_levels, "a triangle's rows by level"),
    "csrsv": Routine({"lower": "bool", "unit_diagonal": "bool"}, csrsv_infer, csrsv, "triangular solve by levels"),
}
