"""Products of batched sparse arrays beyond batched.py's one-call ones: sparse @ sparse with batch
dimensions (one SpGEMM of the two diagonal matrices), bcoo_dot_general of two sparse operands (made
a `@` by transposes), and the general bcoo_dot_general of a sparse and a dense operand (any batch and
contracted dimensions among the sparse operand's batch and sparse ones: a product per entry, summed
into the result by one scatter-add, as jax.experimental.sparse computes it).
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import TracingValueError
from .. import cnp
from ..jit import jit
from ..tracing import located
from . import batched, formats, nsparse


def dot_general(lhs, rhs, dimension_numbers):
    """lax.dot_general with a sparse operand: with a dense one as batched.dot_general says, with two
    as sparse_dot_general (SpGEMM); the plain matrix products go through `@`."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = (tuple(map(tuple, d)) for d in dimension_numbers)
    sparse = [x for x in (lhs, rhs) if isinstance(x, formats.SparseMatrix)]
    if len(sparse) == 2:
        return sparse_dot_general(lhs, rhs, dimension_numbers)
    if not sparse:
        raise TracingValueError(located("bcoo_dot_general: one operand at least must be sparse (for two dense, "
                                        "use lax.dot_general)"))
    if sparse[0].n_sparse == 2 and not (sparse[0].batched or lhs_batch or rhs_batch):
        if lhs is sparse[0] and lhs_contract == (1,) and rhs_contract == (0,):
            return lhs @ rhs
        if rhs is sparse[0] and rhs_contract == (0,) and lhs_contract == (getattr(lhs, "ndim", 0) - 1,):
            return lhs @ rhs
    return batched.dot_general(lhs, rhs, dimension_numbers)


@jit
def diagonals(a, b):
    """The operands of a batched SpGEMM as two 2-D CSR matrices (data, columns, indptr) holding the E
    elements on their diagonals (as batched.diagonal), B with k + 1 rows per element: its last holds
    the element's padding, which no column of A names (A's columns step by k + 1), so no padding
    value reaches C. A's padding and out-of-range columns are column E (k + 1), dropped by the kernels."""
    big_b, _, m, k, nse_a = batched.sizes(a)
    n, nse_b = b.sparse_shape[1], b.nse
    index = batched.wide_enough(formats.index_dtype(a.indices, b.indices),
                                (big_b + 1) * max(nse_a, nse_b, m, k + 1, n))
    element = cnp.arange(big_b, dtype=index)[:, None]

    def parts(x, rows, nse, columns, step):
        indices = cnp.asarray(x.indices).reshape(big_b, nse).astype(index)
        indptr = cnp.clip(cnp.asarray(x.indptr).reshape(big_b, rows + 1).astype(index), 0, nse)
        positions = cnp.arange(nse, dtype=index)[None, :]
        used = (positions >= indptr[:, :1]) & (positions < indptr[:, -1:]) & (indices >= 0) & (indices < columns)
        return cnp.asarray(x.data).reshape(-1), cnp.where(used, indices + element * step, big_b * step).reshape(-1), \
            (indptr + element * nse)

    a_data, a_columns, a_starts = parts(a, m, nse_a, k, k + 1)
    b_data, b_columns, b_starts = parts(b, k, nse_b, n, n)
    a_indptr = cnp.concatenate([a_starts[:, :-1].reshape(-1), cnp.full((1,), big_b * nse_a, index)])
    b_indptr = cnp.concatenate([b_starts.reshape(-1), cnp.full((1,), big_b * nse_b, index)])
    return (a_data, a_columns, a_indptr), (b_data, b_columns, b_indptr)


def per_element(data, columns, indptr, big_b: int, m: int, column_step: int, nse: int):
    """The batched arrays (big_b, nse, ...), (big_b, nse), (big_b, m + 1) of a 2-D CSR whose rows
    b m .. b m + m - 1 are element b's, its columns offset by b column_step: element b's entries are
    positions [indptr[b m], indptr[b m + m]); past its count the padding is column 0, value 0 (an
    element with more than nse keeps its first nse)."""
    element = cnp.arange(big_b, dtype=indptr.dtype)
    start, end = indptr[element * m], indptr[element * m + m]
    positions = start[:, None] + cnp.arange(nse, dtype=indptr.dtype)[None, :]
    valid = positions < end[:, None]
    if columns.shape[0] == 0:
        values = cnp.zeros((big_b, nse) + tuple(data.shape[1:]), data.dtype)
        local_columns = cnp.zeros((big_b, nse), columns.dtype)
    else:
        safe = cnp.clip(positions, 0, columns.shape[0] - 1)
        local_columns = cnp.where(valid, columns[safe] - element[:, None] * column_step, 0)
        values = cnp.where(valid.reshape(valid.shape + (1,) * (data.ndim - 1)), data[safe], 0)
    local = cnp.concatenate([indptr[:-1].reshape(big_b, m) - start[:, None], (end - start)[:, None]], axis=1)
    return values, local_columns, cnp.minimum(local, nse)


elements_of = jit(per_element, static_argnames=("big_b", "m", "column_step", "nse"))


def spgemm(a, b):
    """a @ b of two sparse arrays, one of them at least batched (n_dense = 0): their batch dimensions
    broadcast as numpy's matmul's, then ONE SpGEMM of the diagonal matrices (element e's rows of C
    only meet element e's of B). Outside jit the result's nse is the most entries an element has;
    under jit the static bound min(a.nse b.nse, m n) (formats.spgemm_bounds, per element)."""
    if a.n_dense or b.n_dense:
        raise NotImplementedError(located(f"sparse @ sparse: arrays with dense dimensions ({a!r} @ {b!r}): "
                                          "only sparse dimensions can be contracted with a sparse rhs (as JAX's "
                                          "bcoo_spdot_general)"))
    (m, k), (k2, n) = a.sparse_shape, b.sparse_shape
    if k != k2:
        raise TracingValueError(located(f"sparse @ sparse: shapes {a.shape} and {b.shape} do not chain"))
    try:
        batch = tuple(np.broadcast_shapes(a.batch_shape, b.batch_shape))
    except ValueError:
        raise TracingValueError(located(f"sparse @ sparse: batch shapes {a.batch_shape} and {b.batch_shape} "
                                        "do not broadcast")) from None
    a, b = (as_bcsr(batched.with_batch(x, batch)) for x in (a, b))
    elements = math.prod(batch)
    traced = formats.is_traced(a.data, a.indices, a.indptr, b.data, b.indices, b.indptr)
    bound = min(a.nse * b.nse, m * n)
    if elements == 0 or (traced and bound == 0):
        dtype = formats.value_dtype(a.data, b.data, complex_ok=True)
        return formats.BCSR((cnp.zeros(batch + (0,), dtype), cnp.zeros(batch + (0,), a.indices.dtype),
                             cnp.zeros(batch + (m + 1,), a.indices.dtype)), shape=batch + (m, n))
    left, right = diagonals(a, b)
    left = batched.matrix(*left, (elements * m, elements * (k + 1)))
    right = batched.matrix(*right, (elements * (k + 1), elements * n))
    c = formats.spgemm(left, right, bounds=(4 * elements * a.nse * b.nse, elements * bound) if traced else None)
    if traced:
        nse = bound
    else:
        ends = np.asarray(c.indptr)[::max(m, 1)]
        nse = int(np.max(np.diff(ends), initial=0)) if m else 0
    data, columns, indptr = elements_of(c.data, c.indices, c.indptr, big_b=elements, m=m, column_step=n, nse=nse)
    return formats.BCSR((data.reshape(batch + (nse,)), columns.reshape(batch + (nse,)),
                         indptr.reshape(batch + (m + 1,))), shape=batch + (m, n))


def in_format(c, a, b):
    """A sparse-sparse product C in its operands' format: BCSR when both are, else BCOO (JAX's
    bcoo_dot_general of two BCOO gives a BCOO)."""
    both_csr = isinstance(a, formats.BCSR) and isinstance(b, formats.BCSR)
    return c if both_csr or isinstance(c, formats.BCOO) else c.to_bcoo()


def as_bcsr(x):
    if isinstance(x, formats.BCSR):
        return x
    return batched.to_bcsr(x) if x.batched else x.to_bcsr()


def sparse_dot_general(lhs, rhs, dimension_numbers):
    """bcoo_dot_general of two sparse operands (n_dense = 0), as JAX's bcoo_spdot_general: each one's
    batch dimensions (all of them, any order) against the other's, one sparse dimension of each
    contracted. Transposes make it `lhs @ rhs`: result batch, lhs's free, rhs's free dimension."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = (tuple(map(tuple, d)) for d in dimension_numbers)
    nl, nr = lhs.n_batch, rhs.n_batch
    if not (sorted(lhs_batch) == list(range(nl)) and sorted(rhs_batch) == list(range(nr)) and nl == nr
            and len(lhs_contract) == 1 and len(rhs_contract) == 1 and lhs_contract[0] in (nl, nl + 1)
            and rhs_contract[0] in (nr, nr + 1) and not (lhs.n_dense or rhs.n_dense)
            and lhs.n_sparse == rhs.n_sparse == 2):
        raise NotImplementedError(located(
            f"bcoo_dot_general of two sparse operands with dimension numbers {dimension_numbers} (shapes {lhs.shape}, "
            f"{rhs.shape}): supported are all batch dimensions of each against the other's and one sparse "
            "dimension of each contracted, two sparse dimensions and no dense ones"))
    free_l = 2 * nl + 1 - lhs_contract[0]
    free_r = 2 * nr + 1 - rhs_contract[0]
    lhs_axes, rhs_axes = lhs_batch + (free_l, lhs_contract[0]), rhs_batch + (rhs_contract[0], free_r)
    lhs = lhs.transpose(lhs_axes) if lhs_axes != tuple(range(nl + 2)) else lhs
    rhs = rhs.transpose(rhs_axes) if rhs_axes != tuple(range(nr + 2)) else rhs
    if lhs.batch_shape != rhs.batch_shape:
        raise TracingValueError(located(f"bcoo_dot_general: batch sizes {lhs.batch_shape} and {rhs.batch_shape} "
                                        "differ"))
    if not (lhs.batched or rhs.batched):
        return lhs @ rhs
    return in_format(spgemm(lhs, rhs), lhs, rhs)


def entry_products(sparse, dense, dimension_numbers):
    """bcoo_dot_general(sparse, dense) for batch and contracted dimensions among the sparse operand's
    batch and sparse ones (its dense ones free), any number and order: every stored entry's value
    times the dense operand's slice at the entry's batch and contracted coordinates, scatter-added at
    its batch and free coordinates. Result: batch, sparse's free (then its dense), dense's free."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = (tuple(map(tuple, d)) for d in dimension_numbers)
    indexed = sparse.n_batch + sparse.n_sparse
    dense = cnp.asarray(dense)
    if any(not 0 <= d < sparse.ndim for d in lhs_contract + lhs_batch) or \
            any(not 0 <= d < dense.ndim for d in rhs_contract + rhs_batch) or \
            len(lhs_contract) != len(rhs_contract) or len(lhs_batch) != len(rhs_batch):
        raise TracingValueError(located(f"bcoo_dot_general: dimension numbers {dimension_numbers} do not fit operands "
                                        f"of shapes {sparse.shape} and {tuple(dense.shape)}"))
    if any(d >= indexed or d < 0 for d in lhs_contract + lhs_batch) or len(set(lhs_contract + lhs_batch)) != \
            len(lhs_contract + lhs_batch):
        raise NotImplementedError(located(
            f"bcoo_dot_general: dimension numbers {dimension_numbers} for a sparse operand of shape {sparse.shape} "
            f"(n_batch = {sparse.n_batch}, n_dense = {sparse.n_dense}): a dense dimension can be contracted only "
            "alone, and never be a batch dimension (JAX's bcoo_dot_general contracts none)"))
    taken = rhs_batch + rhs_contract
    rhs_free = tuple(d for d in range(dense.ndim) if d not in taken)
    want = tuple(sparse.shape[d] for d in lhs_batch + lhs_contract)
    if tuple(dense.shape[d] for d in taken) != want:
        raise TracingValueError(located(
            f"bcoo_dot_general: lhs {sparse.shape} and rhs {tuple(dense.shape)}: batch and contracted sizes {want} "
            f"and {tuple(dense.shape[d] for d in taken)} differ"))
    return products_of(sparse, cnp.transpose(dense, taken + rhs_free), lhs_batch=lhs_batch, lhs_contract=lhs_contract)


@jit(static_argnames=("lhs_batch", "lhs_contract"))
def products_of(sparse, rhs, lhs_batch: tuple, lhs_contract: tuple):
    """entry_products with rhs's dimensions ordered (batch, contracted, free)."""
    nb, k = sparse.n_batch, sparse.n_sparse
    indexed = nb + k
    free = tuple(d for d in range(indexed) if d not in lhs_batch + lhs_contract)
    coo = sparse.to_bcoo() if isinstance(sparse, formats.BCSR) else sparse
    big_b, big_d, nse = math.prod(coo.batch_shape), math.prod(coo.dense_shape), coo.nse
    dtype = formats.value_dtype(coo.data, rhs, complex_ok=True)
    # Every entry's coordinates over the indexed (batch and sparse) dimensions, (B nse, nb + k).
    element = cnp.arange(big_b, dtype="int64")
    batch_coords = [cnp.broadcast_to(((element // math.prod(coo.batch_shape[i + 1:])) % coo.batch_shape[i])[:, None],
                                     (big_b, nse)) for i in range(nb)]
    at = cnp.asarray(coo.indices).reshape(big_b, nse, k).astype("int64")
    coords = [c.reshape(-1) for c in batch_coords + [at[..., i] for i in range(k)]]
    extent = coo.shape[:indexed]
    inside = nsparse.inside(coo).reshape(-1)
    points = cnp.zeros((big_b * nse,), "int64")
    at_rhs = nsparse.linear([coords[d] for d in lhs_batch + lhs_contract], [extent[d] for d in lhs_batch + lhs_contract],
                            points)
    rhs_rows = math.prod(extent[d] for d in lhs_batch + lhs_contract)
    rest = tuple(rhs.shape[len(lhs_batch + lhs_contract):])
    rhs_flat = formats.as_dtype(rhs, dtype).reshape(rhs_rows, math.prod(rest))
    gathered = rhs_flat[cnp.clip(at_rhs, 0, max(rhs_rows - 1, 0))]
    values = formats.as_dtype(coo.data, dtype).reshape(big_b * nse, big_d)
    terms = values[:, :, None] * gathered[:, None, :]
    out_rows = math.prod(extent[d] for d in lhs_batch + free)
    at_out = cnp.where(inside, nsparse.linear([coords[d] for d in lhs_batch + free],
                                              [extent[d] for d in lhs_batch + free], points), out_rows)
    out = cnp.zeros((out_rows, big_d, math.prod(rest)), dtype).at[at_out].add(terms, mode="drop")
    return out.reshape(tuple(extent[d] for d in lhs_batch + free) + coo.dense_shape + rest)
