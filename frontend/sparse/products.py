"""Products of batched sparse arrays beyond batched.py's one-call ones: sparse @ sparse with batch
dimensions (one SpGEMM of the two diagonal matrices), bcoo_dot_general of two sparse operands (a
`@` by transposes, or one SpGEMM of matrix views for any number of sparse dimensions), and the general bcoo_dot_general of a sparse and a dense operand (any batch and
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


def spgemm(a, b, nse_bound=None):
    """a @ b of two sparse arrays, one of them at least batched (n_dense = 0): their batch dimensions
    broadcast as numpy's matmul's, then ONE SpGEMM of the diagonal matrices (element e's rows of C
    only meet element e's of B). Outside jit the result's nse is the most entries an element has;
    under jit the static bound nse_bound, by default min(a.nse b.nse, m n) (formats.spgemm_bounds,
    per element)."""
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
    bound = min(a.nse * b.nse, m * n) if nse_bound is None else nse_bound
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
    """bcoo_dot_general of two sparse operands, as JAX's bcoo_spdot_general: batch dimensions paired
    among the batch ones (the others free), contracted dimensions among the sparse ones, no dense
    dimensions. All batch dimensions paired and one sparse dimension of each of two contracted is `@`
    after transposes; any other is views_product's SpGEMM of matrix views."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = (tuple(map(tuple, d)) for d in dimension_numbers)
    check_sparse_dimension_numbers(lhs, rhs, lhs_contract, rhs_contract, lhs_batch, rhs_batch)
    nl, nr = lhs.n_batch, rhs.n_batch
    if not (nl == nr == len(lhs_batch) and len(lhs_contract) == 1 and lhs.n_sparse == rhs.n_sparse == 2):
        return views_product(lhs, rhs, lhs_contract, rhs_contract, lhs_batch, rhs_batch)
    free_l = 2 * nl + 1 - lhs_contract[0]
    free_r = 2 * nr + 1 - rhs_contract[0]
    lhs_axes, rhs_axes = lhs_batch + (free_l, lhs_contract[0]), rhs_batch + (rhs_contract[0], free_r)
    lhs = lhs.transpose(lhs_axes) if lhs_axes != tuple(range(nl + 2)) else lhs
    rhs = rhs.transpose(rhs_axes) if rhs_axes != tuple(range(nr + 2)) else rhs
    if not (lhs.batched or rhs.batched):
        return lhs @ rhs
    return in_format(spgemm(lhs, rhs), lhs, rhs)


def sparse_matmul(a, b):
    """a @ b of two sparse arrays, one at least of n_sparse != 2, by numpy's matmul rules as a
    sparse_dot_general: a's last axis against b's only one (b 1-D) or second-to-last; the leading
    axes of two arrays of one rank (3 or more) paired as batch dimensions."""
    if a.ndim == 0 or b.ndim == 0:
        raise TracingValueError(located(f"sparse @ sparse: matmul takes arrays of one dimension at least, got shapes "
                                        f"{a.shape} and {b.shape}"))
    if 2 <= a.ndim < b.ndim:
        raise NotImplementedError(located(f"sparse @ sparse: {a!r} @ {b!r}: the rhs's leading dimensions would come "
                                          "after the lhs's rows in bcoo_dot_general's result (use bcoo_dot_general)"))
    batch = tuple(range(a.ndim - 2)) if a.ndim == b.ndim else ()
    return sparse_dot_general(a, b, (((a.ndim - 1,), (max(b.ndim - 2, 0),)), (batch, batch)))


def check_sparse_dimension_numbers(lhs, rhs, lhs_contract, rhs_contract, lhs_batch, rhs_batch):
    """JAX's bcoo_spdot_general rules, each broken one named with the shapes."""
    numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))
    shapes = f"(shapes {lhs.shape} with n_batch = {lhs.n_batch}, {rhs.shape} with n_batch = {rhs.n_batch})"
    if len(lhs_contract) != len(rhs_contract) or len(lhs_batch) != len(rhs_batch) or \
            any(not 0 <= d < x.ndim for x, dims in ((lhs, lhs_contract + lhs_batch), (rhs, rhs_contract + rhs_batch))
                for d in dims) or \
            any(len(set(dims)) != len(dims) for dims in (lhs_contract + lhs_batch, rhs_contract + rhs_batch)):
        raise TracingValueError(located(f"bcoo_dot_general: dimension numbers {numbers} do not fit {shapes}"))
    if lhs.n_dense or rhs.n_dense:
        raise NotImplementedError(located(f"bcoo_dot_general of two sparse operands with dense dimensions {shapes}: "
                                          "not supported (as JAX's bcoo_spdot_general; make one operand dense)"))
    if any(d >= lhs.n_batch for d in lhs_batch) or any(d >= rhs.n_batch for d in rhs_batch):
        raise NotImplementedError(located(f"bcoo_dot_general of two sparse operands, dimension numbers {numbers} "
                                          f"{shapes}: batch dimensions must be batch dimensions of both (as JAX's)"))
    if any(d < lhs.n_batch for d in lhs_contract) or any(d < rhs.n_batch for d in rhs_contract):
        raise NotImplementedError(located(f"bcoo_dot_general of two sparse operands, dimension numbers {numbers} "
                                          f"{shapes}: only sparse dimensions can be contracted (as JAX's)"))
    sizes = [(lhs.shape[a], rhs.shape[b]) for a, b in zip(lhs_batch + lhs_contract, rhs_batch + rhs_contract)]
    if any(a != b for a, b in sizes):
        raise TracingValueError(located(f"bcoo_dot_general: dimension numbers {numbers} pair sizes "
                                        f"{[a for a, _ in sizes]} with {[b for _, b in sizes]} {shapes}"))
    if rhs.n_batch > len(rhs_batch) and lhs.n_sparse > len(lhs_contract):
        raise TracingValueError(located(f"bcoo_dot_general: dimension numbers {numbers} {shapes} leave rhs batch "
                                        "dimensions and lhs sparse dimensions free: the result's batch dimensions "
                                        "would follow sparse ones (JAX's bcoo_spdot_general refuses it too)"))


def views_product(lhs, rhs, lhs_contract, rhs_contract, lhs_batch, rhs_batch):
    """The general sparse-sparse bcoo_dot_general as one SpGEMM: lhs seen as a matrix of its free sparse
    dimensions (rows) by its contracted ones (columns, in lhs_contract's order), rhs of its contracted
    (rhs_contract's order) by its free ones (nsparse.matrix_view, row-major). Batch dimensions: the
    paired ones first, then lhs's free, then rhs's free, each operand holding size-1 ones for the
    other's free ones, which spgemm broadcasts. C's rows and columns unravel into the free sparse
    dimensions. Result: paired batch, lhs's free, rhs's free dimensions (lax.dot_general's order), a
    BCOO, or a BCSR when both operands are and C is 2-D per element."""
    nl, nr = lhs.n_batch, rhs.n_batch
    lhs_free_batch = tuple(d for d in range(nl) if d not in lhs_batch)
    rhs_free_batch = tuple(d for d in range(nr) if d not in rhs_batch)
    lhs_free = tuple(d - nl for d in range(nl, lhs.ndim) if d not in lhs_contract)
    rhs_free = tuple(d - nr for d in range(nr, rhs.ndim) if d not in rhs_contract)
    lhs_view = batch_first(lhs, lhs_batch + lhs_free_batch, rows=lhs_free,
                           columns=tuple(d - nl for d in lhs_contract), ones_after=len(rhs_free_batch))
    rhs_view = batch_first(rhs, rhs_batch + rhs_free_batch, rows=tuple(d - nr for d in rhs_contract),
                           columns=rhs_free, ones_before=len(lhs_free_batch))
    lhs_sparse, rhs_sparse = lhs.sparse_shape, rhs.sparse_shape
    free_sparse = tuple(lhs_sparse[d] for d in lhs_free) + tuple(rhs_sparse[d] for d in rhs_free)
    # JAX's nse: entries with distinct free coordinates, at most one per lhs entry when rhs has no free
    # sparse dimension (and the other way round), and at most the free sparse shape's size.
    bound = min((lhs.nse if lhs_free else 1) * (rhs.nse if rhs_free else 1), math.prod(free_sparse))
    if lhs_view.batched or rhs_view.batched:
        c = spgemm(lhs_view, rhs_view, nse_bound=bound)
    else:
        left, right = as_bcsr(lhs_view), as_bcsr(rhs_view)
        traced = formats.is_traced(left.data, left.indices, left.indptr, right.data, right.indices, right.indptr)
        c = formats.spgemm(left, right, bounds=(4 * left.nse * right.nse, bound) if traced else None)
    if len(lhs_free) == 1 and len(rhs_free) == 1:
        return in_format(c, lhs, rhs)
    c = c.to_bcoo() if isinstance(c, formats.BCSR) else c
    return nsparse.from_matrix(c, sparse=free_sparse, rows=tuple(range(len(lhs_free))),
                               columns=tuple(range(len(lhs_free), len(free_sparse))))


def batch_first(x, batch_order, rows, columns, ones_before=0, ones_after=0):
    """x's matrix view (nsparse.matrix_view) with its batch dimensions in batch_order, then size-1 ones
    inserted before (ones_before) or after (ones_after) them."""
    if batch_order != tuple(range(x.n_batch)):
        x = x.transpose(batch_order + tuple(range(x.n_batch, x.ndim)))
    x = x.to_bcoo() if isinstance(x, formats.BCSR) else x
    view = nsparse.matrix_view(x, rows=rows, columns=columns)
    if not (ones_before or ones_after):
        return view
    batch = (1,) * ones_before + view.batch_shape + (1,) * ones_after
    data, indices = cnp.asarray(view.data), cnp.asarray(view.indices)
    return formats.BCOO((data.reshape(batch + tuple(data.shape[view.n_batch:])),
                         indices.reshape(batch + tuple(indices.shape[view.n_batch:]))),
                        shape=batch + view.sparse_shape)


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
