"""The sparse library's calls (libs/sparse) on CSR arrays, as traced functions: each binds
`library_call sparse.*` ops and the graph ops around them (a scan for indptr, a sort for a
transpose, a scatter-add for the carries of csrmv). jit-compiled, so that eager calls run one
compiled program and traced calls inline it."""
from __future__ import annotations

from .. import cnp, lax
from ..jit import jit
from ...ir.types import dtype_name
from ...libs.sparse.routines import CHUNK
from ..tracing import as_tracer, bind



def sparse_call(routine: str, *operands, **attrs):
    return bind("library_call", [as_tracer(o) for o in operands],
                {"library": "sparse", "routine": routine, "solution": "", **attrs})


def with_start(counts):
    """indptr from per-row counts: 0 then their running sum."""
    return cnp.concatenate([cnp.zeros((1,), counts.dtype), cnp.cumsum(counts).astype(counts.dtype)])


@jit
def csr_matvec(data, indices, indptr, x):
    m = indptr.shape[0] - 1
    if indices.shape[0] == 0:
        return cnp.zeros((m,), data.dtype)
    y, carries, carry_rows = sparse_call("csrmv", indptr, indices, data, x, chunk=CHUNK, column_map="drop")
    return y.at[carry_rows].add(carries)


@jit
def csr_matmat(data, indices, indptr, b):
    return sparse_call("csrmm", indptr, indices, data, b)[0]


@jit
def ell_matvec(columns, values, x):
    """y = A x for an ELL matrix: row r's entries values[r, k] at columns[r, k], negative columns padding."""
    return sparse_call("ellmv", columns, values, x)[0]


@jit
def bsr_matvec(data, indices, indptr, x):
    """y = A x for a BSR matrix (scipy's bsr_matrix arrays): block row i's R x C blocks data[p] at
    block columns indices[p], p in [indptr[i], indptr[i + 1]); x has a multiple of C entries."""
    return sparse_call("bsrmv", indptr, indices, data, x)[0]


@jit
def bsr_matmat(data, indices, indptr, b):
    return sparse_call("bsrmm", indptr, indices, data, b)[0]


@jit(static_argnames=("block_rows", "block_columns", "columns"))
def bsr_indptr(indices, indptr, block_rows: int, block_columns: int, columns: int):
    """The BSR indptr of a CSR matrix cut into block_rows x block_columns blocks (csr2bsr_count)."""
    return with_start(sparse_call("csr2bsr_count", indptr, indices, block_rows=block_rows,
                                  block_columns=block_columns, columns=columns)[0])


@jit(static_argnames=("block_rows", "block_columns", "columns", "nnzb"))
def csr_to_bsr(data, indices, indptr, bsr_indptr, block_rows: int, block_columns: int, columns: int, nnzb: int):
    return sparse_call("csr2bsr", indptr, indices, data, bsr_indptr, block_rows=block_rows,
                       block_columns=block_columns, columns=columns, nnzb=nnzb)


@jit(static_argnames=("columns",))
def bsr_todense(data, indices, indptr, columns: int):
    blocks, rows, width = data.shape
    block_rows, block_columns = indptr.shape[0] - 1, columns // width
    used = (cnp.arange(blocks) < cnp.clip(indptr[-1], 0, blocks)) & (indices >= 0) & (indices < block_columns)
    at = cnp.where(used, csr_rows(indptr, blocks).astype("int64") * block_columns + indices.astype("int64"),
                   block_rows * block_columns)
    out = cnp.zeros((block_rows * block_columns, rows, width), data.dtype).at[at].add(data, mode="drop")
    return cnp.transpose(out.reshape(block_rows, block_columns, rows, width), (0, 2, 1, 3)).reshape(
        block_rows * rows, columns)


@jit(static_argnames=("width",))
def csr_to_ell(data, indices, indptr, width: int):
    return sparse_call("csr2ell", indptr, indices, data, width=width)


@jit
def row_lengths_max(indptr):
    return cnp.max(cnp.diff(indptr), initial=0)


@jit
def csr_sampled(indices, indptr, a, bt):
    """(a @ bt.T) at the CSR pattern's nonzeros (SDDMM)."""
    return sparse_call("sddmm", indptr, indices, a, bt)[0]


def csr_rows(indptr, nnz: int):
    """The row of each of nnz entries (padding: row 0)."""
    return sparse_call("csr2coo", indptr, nnz=nnz)[0]


def coo_indptr(sorted_rows, rows: int):
    return sparse_call("coo2csr", sorted_rows, rows=rows, row_map="clamp")[0]


@jit(static_argnames=("columns",))
def csr_transposed(data, indices, indptr, columns: int):
    """The CSR arrays of the transpose (A's CSC arrays): entries sorted stably by column."""
    rows = csr_rows(indptr, indices.shape[0])
    new_rows, new_columns, new_data = lax.sort((indices, rows, data), num_keys=1)
    return new_data, new_columns, coo_indptr(new_rows, columns)


@jit(static_argnames=("m",))
def coo_to_csr(data, rows, columns, m: int):
    """COO entries sorted by (row, column) and their CSR arrays (duplicates kept)."""
    rows, columns, data = lax.sort((rows, columns, data), num_keys=2)
    return data, columns, coo_indptr(rows, m)


@jit(static_argnames=("columns",))
def csr_todense(data, indices, indptr, columns: int):
    m = indptr.shape[0] - 1
    rows = csr_rows(indptr, indices.shape[0]).astype("int64")
    flat = cnp.zeros((m * columns,), data.dtype).at[rows * columns + indices.astype("int64")].add(data)
    return flat.reshape(m, columns)


@jit(static_argnames=("index_dtype",))
def dense_row_counts(a, index_dtype: str):
    return with_start(sparse_call("dense2csr_count", a, index_dtype=dtype_name(index_dtype))[0])


@jit(static_argnames=("nse",))
def dense_to_csr(a, indptr, nse: int):
    return sparse_call("dense2csr", a, indptr, nse=nse)


@jit
def spgemm_tables(a_indices, a_indptr, b_indptr):
    """The offsets of each row's hash table (libs/sparse/spgemm.py sizes them)."""
    return with_start(sparse_call("spgemm_bound", a_indptr, a_indices, b_indptr)[0])


@jit(static_argnames=("table",))
def spgemm_symbolic(a_indices, a_indptr, b_indices, b_indptr, table_ptr, table: int):
    row_nnz, _ = sparse_call("spgemm_symbolic", a_indptr, a_indices, b_indptr, b_indices, table_ptr, table=table)
    return with_start(row_nnz)


@jit(static_argnames=("nse", "table",))
def spgemm_numeric(a_data, a_indices, a_indptr, b_data, b_indices, b_indptr, table_ptr, c_indptr, nse: int,
                   table: int):
    c_indices, c_data, _, _ = sparse_call("spgemm_numeric", a_indptr, a_indices, a_data, b_indptr, b_indices, b_data,
                                          table_ptr, c_indptr, nse=nse, table=table)
    return c_data, c_indices


@jit(static_argnames=("lower", "unit_diagonal",))
def csr_triangular_solve(data, indices, indptr, b, lower: bool, unit_diagonal: bool):
    order, level_ptr, levels, _ = sparse_call("csrsv_levels", indptr, indices, lower=lower)
    return sparse_call("csrsv", indptr, indices, data, order, level_ptr, levels, b, lower=lower,
                       unit_diagonal=unit_diagonal)[0]


@jit(static_argnames=("nnz",))
def row_ids(indptr, nnz: int):
    return csr_rows(indptr, nnz)


@jit
def sorted_entries(data, rows, columns):
    """COO entries sorted by (row, column), and each one's slot among the distinct (row, column) pairs."""
    rows, columns, data = lax.sort((rows, columns, data), num_keys=2)
    new = cnp.concatenate([cnp.ones((min(1, rows.shape[0]),), "bool"),
                           (rows[1:] != rows[:-1]) | (columns[1:] != columns[:-1])])
    return data, rows, columns, cnp.cumsum(new.astype("int64")) - 1


@jit(static_argnames=("nse",))
def merged_entries(data, rows, columns, slot, nse: int):
    """Sorted entries with equal (row, column) summed into their slot (sorted_entries's)."""
    out = cnp.zeros((nse,), data.dtype).at[slot].add(data, mode="drop")
    out_rows = cnp.zeros((nse,), rows.dtype).at[slot].set(rows, mode="drop")
    out_columns = cnp.zeros((nse,), columns.dtype).at[slot].set(columns, mode="drop")
    return out, cnp.stack([out_rows, out_columns], axis=1)
