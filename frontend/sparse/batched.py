"""Batched BCSR and BCOO (n_batch > 0 or n_dense > 0), laid out as jax.experimental.sparse's:
shape = (*batch, m, n, *dense); BCSR data (*batch, nse, *dense), indices (*batch, nse), indptr
(*batch, m + 1); BCOO data (*batch, nse, *dense), indices (*batch, nse, 2). Every batch element
has the same nse (a BCSR's entries outside [indptr[0], indptr[-1]) are padding; a BCOO entry of a
batch element is real, padding being index (0, 0) with value 0). As JAX allows, the arrays may store
a batch dimension with size 1 (one pattern shared by every element): the constructors broadcast it.

Every operation runs on one 2-D matrix holding the batch elements on its diagonal (`diagonal`):
element b's entries at rows b m + r and columns b n + c, so a batched product is one csrmv or
csrmm call and a batched transpose one sort, whatever the batch count. Dense dimensions are batch
elements too that share the structure (their values one column of data each), so a product with
n_dense > 0 is the same single call. Padding and out-of-range columns become column E n, outside
the diagonal matrix: the kernels drop it (libs/sparse/routines.py), so no element reads another's.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import TracingValueError
from .. import cnp
from ..jit import jit
from ..tracing import located
from . import calls, formats, nsparse, products


def layout(what: str, shape, n_batch: int, n_dense: int) -> tuple:
    """The shape, checked against the arrays' n_batch and n_dense (two sparse dimensions between)."""
    shape = tuple(int(d) for d in shape)
    if n_batch < 0 or n_dense < 0 or len(shape) != n_batch + 2 + n_dense or min(shape, default=0) < 0:
        raise NotImplementedError(located(
            f"{what}: the arrays give n_batch = {n_batch} and n_dense = {n_dense}, so the shape must have "
            f"{n_batch} + 2 + {n_dense} dimensions (two sparse ones), got {shape}"))
    return shape


def broadcast_stored(arrays, batch: tuple) -> list:
    """The arrays with their leading batch dimensions broadcast to `batch`: as jax.experimental.sparse
    allows, data and indices may store a batch dimension that every element shares with size 1.
    Arrays whose batch dimensions do not broadcast are left for the checks to name."""
    out = []
    for x in arrays:
        stored = tuple(x.shape[:len(batch)])
        if len(stored) == len(batch) and stored != batch and all(s in (1, b) for s, b in zip(stored, batch)):
            x = (cnp if formats.is_traced(x) else np).broadcast_to(x, batch + tuple(x.shape[len(batch):]))
        out.append(x)
    return out


def with_batch(a, batch: tuple):
    """a with its batch dimensions broadcast to `batch` as numpy's matmul broadcasts (leading ones added)."""
    if batch == a.batch_shape:
        return a
    extra = len(batch) - a.n_batch
    arrays = [cnp.broadcast_to(cnp.asarray(x).reshape((1,) * extra + tuple(x.shape)), batch + tuple(x.shape[a.n_batch:]))
              for x in ((a.data, a.indices, a.indptr) if isinstance(a, formats.BCSR) else (a.data, a.indices))]
    return type(a)(tuple(arrays), shape=batch + a.shape[a.n_batch:])


def check_bcsr(a):
    """Shapes of a batched BCSR's arrays, and (concrete ones) indptr and columns of every element."""
    batch, (m, n), dense = a.batch_shape, a.sparse_shape, a.dense_shape
    nse = a.data.shape[a.n_batch] if a.data.ndim > a.n_batch else -1
    want = (batch + (nse,) + dense, batch + (nse,), batch + (m + 1,))
    got = (tuple(a.data.shape), tuple(a.indices.shape), tuple(a.indptr.shape))
    if got != want:
        raise TracingValueError(located(f"BCSR of shape {a.shape} (n_batch = {a.n_batch}, n_dense = {a.n_dense}): "
                                        f"data, indices, indptr must have shapes {want} (a stored batch dimension "
                                        f"may be 1, broadcast), got {got}"))
    lib = cnp if formats.is_traced(a.indices, a.indptr) else np
    indptr, positions = a.indptr, lib.arange(nse)
    bad_ptr = (indptr[..., 0] != 0) | lib.any(indptr[..., 1:] < indptr[..., :-1], axis=-1) | (indptr[..., -1] > nse)
    used = positions < indptr[..., -1:]
    bad_column = used & ((a.indices < 0) | (a.indices >= n))
    ptr_message = f"BCSR: every batch element's indptr must start at 0, never decrease and end at most at nse = {nse}"
    column_message = f"BCSR: column indices must be in [0, {n})"
    if lib is cnp:
        formats.record(cnp.any(bad_ptr), located(ptr_message))
        formats.record(cnp.any(bad_column), located(column_message))
    elif bad_ptr.any():
        raise TracingValueError(located(f"{ptr_message}; batch element {np.argwhere(bad_ptr)[0].tolist()} does not"))
    elif bad_column.any():
        raise TracingValueError(located(f"{column_message}; batch element {np.argwhere(bad_column)[0][:-1].tolist()} "
                                        "has one outside"))


def check_bcoo(a):
    batch, (m, n), dense = a.batch_shape, a.sparse_shape, a.dense_shape
    nse = a.data.shape[a.n_batch] if a.data.ndim > a.n_batch else -1
    if tuple(a.data.shape) != batch + (nse,) + dense or tuple(a.indices.shape) != batch + (nse, 2):
        raise TracingValueError(located(
            f"BCOO of shape {a.shape} (n_batch = {a.n_batch}, n_dense = {a.n_dense}): data and indices must have "
            f"shapes {batch + (nse,) + dense} and {batch + (nse, 2)}, got {tuple(a.data.shape)} and "
            f"{tuple(a.indices.shape)} (a stored batch dimension may be 1, broadcast)"))
    if m * n == 0:
        return   # no index lies inside: every entry is padding (a BCSR's of an empty shape becomes (0, 0))
    lib = cnp if formats.is_traced(a.indices) else np
    bad = (a.indices < 0) | (a.indices >= lib.asarray([m, n], a.indices.dtype))
    message = f"BCOO: indices must lie in the sparse shape {(m, n)}"
    if lib is cnp:
        formats.record(cnp.any(bad), located(message))
    elif bad.any():
        raise TracingValueError(located(f"{message}; entry {np.argwhere(bad.any(-1))[0].tolist()} does not"))


def sizes(a):
    """(B, D, m, n, nse): the batch and dense elements' counts, the sparse shape and nse."""
    return (math.prod(a.batch_shape), math.prod(a.dense_shape), *a.sparse_shape, a.nse)


def wide_enough(dtype: str, *extents: int) -> str:
    return dtype if max(extents, default=0) < 2 ** 31 - 1 else "int64"


def diagonal(a, fold_dense: bool):
    """A batched BCSR as one 2-D CSR (data, indices, indptr) of E = B (x D if fold_dense) elements on
    its diagonal, E m x E n; element e's rows end where the next one's begin (at (e + 1) nse), its
    padding (and any out-of-range column) at column E n. Data is (E nse,) or, unfolded, (B nse, *dense)."""
    big_b, big_d, m, n, nse = sizes(a)
    copies = big_d if fold_dense else 1
    elements = big_b * copies
    index = wide_enough(str(a.indices.dtype), elements * max(nse, n, m) + max(nse, n, m))
    indptr = cnp.clip(cnp.asarray(a.indptr).reshape(big_b, 1, m + 1).astype(index), 0, nse)
    indices = cnp.asarray(a.indices).reshape(big_b, 1, nse).astype(index)
    indptr = cnp.broadcast_to(indptr, (big_b, copies, m + 1)).reshape(elements, m + 1)
    indices = cnp.broadcast_to(indices, (big_b, copies, nse)).reshape(elements, nse)
    element = cnp.arange(elements, dtype=index)[:, None]
    positions = cnp.arange(nse, dtype=index)[None, :]
    used = (positions >= indptr[:, :1]) & (positions < indptr[:, -1:]) & (indices >= 0) & (indices < n)
    columns = cnp.where(used, indices + element * n, elements * n).reshape(-1)
    starts = (indptr[:, :-1] + element * nse).reshape(-1)
    diag_indptr = cnp.concatenate([starts, cnp.full((1,), elements * nse, index)])
    data = cnp.asarray(a.data).reshape(big_b, nse, big_d)
    if fold_dense:
        data = cnp.transpose(data, (0, 2, 1)).reshape(-1)
    else:
        data = data.reshape((big_b * nse,) + a.dense_shape)
    return data, columns, diag_indptr, used.reshape(-1)


def matrix(data, indices, indptr, shape):
    """A 2-D BCSR of arrays this module built (no checks: padding columns lie outside on purpose)."""
    out = object.__new__(formats.BCSR)
    out.data, out.indices, out.indptr, out.shape, out.n_batch, out.n_dense = data, indices, indptr, tuple(shape), 0, 0
    return out


@jit
def product(a, x):
    """a (*batch, m, n, *dense) times x (B, n, K) -> (*batch, m, *dense, K), one csrmv or csrmm call."""
    big_b, big_d, m, n, nse = sizes(a)
    data, columns, indptr, _ = diagonal(a, fold_dense=True)
    elements, k = big_b * big_d, x.shape[-1]
    xe = cnp.broadcast_to(x[:, None], (big_b, big_d, n, k)).reshape(elements * n, k)
    flat = matrix(data, columns, indptr, (elements * m, elements * n))
    y = formats.csr_dot_dense(flat, xe[:, 0]) if k == 1 else formats.csr_dot_dense(flat, xe)
    y = cnp.transpose(y.reshape(big_b, big_d, m, k), (0, 2, 1, 3))
    return y.reshape(a.batch_shape + (m,) + a.dense_shape + (k,))


def matmul(a, x):
    """a @ x with numpy's matmul rules: x (n,), (n, k) or a stack (*batch, n, k), the batch dimensions
    of both broadcast (a sparse batch of size 1 too). With n_dense > 0 the contracted dimension is a's
    last, dense one (x (d,) or (d, k) only): the values are contracted, the result made dense."""
    x = cnp.asarray(x)
    if a.n_dense:
        if x.ndim > 2:
            raise NotImplementedError(located(
                f"sparse @ dense: a sparse array with dense dimensions (shape {a.shape}, n_dense = {a.n_dense}) "
                f"times a stack {tuple(x.shape)}: the stack's batch would run along the sparse dimensions (use "
                "bcoo_dot_general)"))
        if x.ndim == 0 or x.shape[0] != a.shape[-1]:
            raise TracingValueError(located(f"sparse @ dense: shapes {a.shape} and {tuple(x.shape)} do not chain "
                                            f"(the dense array's first dimension must be {a.shape[-1]})"))
        rest = tuple(x.shape[1:])
        return dense_contracted(a, x.reshape(1, a.shape[-1], math.prod(rest)), axis=a.ndim - 1, rest=rest)
    n = a.sparse_shape[1]
    if x.ndim == 0 or x.shape[-2 if x.ndim >= 2 else 0] != n:
        raise TracingValueError(located(f"sparse @ dense: shapes {a.shape} and {tuple(x.shape)} do not chain "
                                        f"(the dense array's {'first' if x.ndim == 1 else 'second-to-last'} "
                                        f"dimension must be {n})"))
    if x.ndim == 1:
        return product(a, cnp.broadcast_to(x[:, None], (math.prod(a.batch_shape), n, 1)))[..., 0]
    try:
        batch = tuple(np.broadcast_shapes(a.batch_shape, tuple(x.shape[:-2])))
    except ValueError:
        raise TracingValueError(located(f"sparse @ dense: batch shapes {a.batch_shape} and {tuple(x.shape[:-2])} "
                                        "do not broadcast")) from None
    a = with_batch(a, batch)
    x = cnp.broadcast_to(x, batch + tuple(x.shape[-2:])).reshape(math.prod(batch), n, x.shape[-1])
    return product(a, x)


def rmatmul(x, a):
    """x @ a (n_dense = 0) as (a^T @ x^T)^T: a's sparse dimensions swapped (one sort), numpy's matmul
    rules for the rest. With n_dense > 0 x (n,) or (k, n) contracts a's second-to-last dimension (as
    JAX's: a dot_general, x's dimension moved where matmul puts it); a stack x would batch over
    a's sparse dimensions, which JAX refuses too."""
    x = cnp.asarray(x)
    if a.n_dense:
        if x.ndim > 2:
            raise NotImplementedError(located(
                f"dense @ sparse: a stack {tuple(x.shape)} times a sparse array with dense dimensions (shape "
                f"{a.shape}, n_dense = {a.n_dense}): its batch would run along the sparse dimensions (use "
                "bcoo_dot_general)"))
        if x.ndim == 0 or x.shape[-1] != a.shape[-2]:
            raise TracingValueError(located(f"dense @ sparse: shapes {tuple(x.shape)} and {a.shape} do not chain (the "
                                            f"dense array's last dimension must be {a.shape[-2]})"))
        y = dot_general(x, a, (((x.ndim - 1,), (a.ndim - 2,)), ((), ())))
        return cnp.moveaxis(y, 0, a.ndim - 2) if x.ndim == 2 else y
    nb = a.n_batch
    transposed = a.transpose(tuple(range(nb)) + (nb + 1, nb))
    if x.ndim == 1:
        return matmul(transposed, x)
    if x.ndim == 0 or x.shape[-1] != a.sparse_shape[0]:
        raise TracingValueError(located(f"dense @ sparse: shapes {tuple(x.shape)} and {a.shape} do not chain (the "
                                        f"dense array's last dimension must be {a.sparse_shape[0]})"))
    return cnp.swapaxes(matmul(transposed, cnp.swapaxes(x, -1, -2)), -1, -2)


@jit(static_argnames=("axis", "rest"))
def dense_contracted(a, rhs, axis: int, rest: tuple):
    """a contracted over its dense dimension `axis` with rhs (1 or B, d, R): the values (B, nse, ..., d)
    times rhs, a sparse array of the same entries with dense dimensions (others, *rest), made dense.
    Its order is lax.dot_general's: batch, sparse, a's other dense, rest."""
    big_b, _, _, _, nse = sizes(a)
    nb = a.n_batch
    value_axis = axis - 1                    # data has one nse axis for the two sparse ones
    data = cnp.moveaxis(cnp.asarray(a.data), value_axis, -1)
    others = tuple(data.shape[nb + 1:-1])
    d = data.shape[-1]
    dtype = formats.value_dtype(a.data, rhs, complex_ok=True)
    values = cnp.matmul(formats.as_dtype(data, dtype).reshape(big_b, nse * math.prod(others), d),
                        formats.as_dtype(rhs, dtype))
    values = values.reshape(a.batch_shape + (nse,) + others + rest)
    shape = a.shape[:nb + 2] + others + rest
    if isinstance(a, formats.BCSR):
        return formats.BCSR((values, a.indices, a.indptr), shape=shape).todense()
    return formats.BCOO((values, a.indices), shape=shape).todense()


def dot_general(lhs, rhs, dimension_numbers):
    """bcoo_dot_general with one sparse operand (lhs or rhs; a dense lhs swaps the two and moves the
    result's dimensions back). The sparse one's batch dimensions (all of them, any order: a transpose
    of the batch) against the dense one's and one dimension contracted, sparse or dense, is one
    library product; other batch and contracted dimensions among the batch and sparse ones are
    products.entry_products. Result: batch, lhs's free, rhs's free dimensions, as lax.dot_general
    orders them."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = (tuple(map(tuple, d)) for d in dimension_numbers)
    if not isinstance(lhs, formats.SparseMatrix):
        dense = cnp.asarray(lhs)
        y = dot_general(rhs, dense, ((rhs_contract, lhs_contract), (rhs_batch, lhs_batch)))
        nb, sparse_free = len(rhs_batch), rhs.ndim - len(rhs_batch) - len(rhs_contract)
        dense_free = dense.ndim - len(lhs_batch) - len(lhs_contract)
        return cnp.transpose(y, tuple(range(nb)) + tuple(range(nb + sparse_free, nb + sparse_free + dense_free)) +
                             tuple(range(nb, nb + sparse_free)))
    if lhs.n_sparse != 2:
        return nsparse.dot_general(lhs, rhs, dimension_numbers)
    nb = lhs.n_batch
    rhs = cnp.asarray(rhs)
    one_call = (sorted(lhs_batch) == list(range(nb)) and len(rhs_batch) == nb and len(lhs_contract) == 1
                and nb <= lhs_contract[0] < lhs.ndim and len(rhs_contract) == 1)
    if not one_call:
        return products.entry_products(lhs, rhs, dimension_numbers)
    if lhs_batch != tuple(range(nb)):
        lhs = lhs.transpose(lhs_batch + tuple(range(nb, lhs.ndim)))
    free = [d for d in range(rhs.ndim) if d not in rhs_batch + rhs_contract]
    moved = cnp.transpose(rhs, rhs_batch + rhs_contract + tuple(free))
    axis = lhs_contract[0]
    if tuple(moved.shape[:nb + 1]) != lhs.batch_shape + (lhs.shape[axis],):
        raise TracingValueError(located(f"bcoo_dot_general: lhs {lhs.shape} and rhs {tuple(rhs.shape)}: batch and "
                                        f"contracted sizes {lhs.batch_shape + (lhs.shape[axis],)} and "
                                        f"{tuple(moved.shape[:nb + 1])} differ"))
    rest = tuple(moved.shape[nb + 1:])
    flat = moved.reshape(math.prod(lhs.batch_shape), lhs.shape[axis], math.prod(rest))
    if axis >= nb + 2:
        return dense_contracted(lhs, flat, axis=axis, rest=rest)
    if isinstance(lhs, formats.BCOO):
        lhs = to_bcsr(lhs) if lhs.batched else lhs.to_bcsr()
    if axis == nb:
        lhs = lhs.transpose(tuple(range(nb)) + (nb + 1, nb) + tuple(range(nb + 2, lhs.ndim)))
    y = product(lhs, flat)
    return y.reshape(tuple(y.shape[:-1]) + rest)


@jit
def to_bcoo(a):
    """A batched BCSR's entries as a batched BCOO of the same nse (padding: index (0, 0), value 0)."""
    big_b, _, m, _, nse = sizes(a)
    data, columns, indptr, used = diagonal(a, fold_dense=False)
    rows = calls.row_ids(indptr, nnz=big_b * nse).reshape(big_b, nse)
    used = used.reshape(big_b, nse)
    local_rows = cnp.where(used, rows - cnp.arange(big_b, dtype=rows.dtype)[:, None] * m, 0)
    local_columns = cnp.where(used, cnp.asarray(a.indices).reshape(big_b, nse), 0).astype(rows.dtype)
    values = cnp.where(used.reshape((big_b, nse) + (1,) * a.n_dense), data.reshape((big_b, nse) + a.dense_shape), 0)
    indices = cnp.stack([local_rows, local_columns], axis=-1)
    return formats.BCOO((values.reshape(a.data.shape), indices.reshape(a.batch_shape + (nse, 2))), shape=a.shape)


@jit
def to_bcsr(a):
    """A batched BCOO as a batched BCSR of the same nse: one sort of all elements' entries by (element,
    row, column); element b's entries are then exactly positions [b nse, (b + 1) nse)."""
    big_b, _, m, n, nse = sizes(a)
    indices = cnp.asarray(a.indices).reshape(big_b, nse, 2)
    index = wide_enough(str(indices.dtype), big_b * max(m, n, nse) + max(m, n, nse))
    element = cnp.arange(big_b, dtype=index)[:, None]
    # A traced index outside the shape (unchecked) stays in its element: rows clamped, columns as given.
    rows = (cnp.clip(indices[..., 0].astype(index), 0, max(m - 1, 0)) + element * m).reshape(-1)
    order, columns, indptr = calls.coo_to_csr(cnp.arange(big_b * nse, dtype=index), rows,
                                              indices[..., 1].astype(index).reshape(-1), m=big_b * m)
    data = cnp.asarray(a.data).reshape((big_b * nse,) + a.dense_shape)[order]
    starts = indptr[:-1].reshape(big_b, m) - element * nse
    local_indptr = cnp.concatenate([starts, cnp.full((big_b, 1), nse, index)], axis=1)
    return formats.BCSR((data.reshape(a.data.shape), columns.reshape(a.batch_shape + (nse,)),
                         local_indptr.reshape(a.batch_shape + (m + 1,))), shape=a.shape)


@jit
def todense(a):
    """A batched BCOO's dense array: one scatter-add of every element's entries (out-of-range ones dropped)."""
    big_b, _, m, n, nse = sizes(a)
    indices = cnp.asarray(a.indices).reshape(big_b, nse, 2).astype("int64")
    rows, columns = indices[..., 0], indices[..., 1]
    inside = (rows >= 0) & (rows < m) & (columns >= 0) & (columns < n)
    flat = cnp.where(inside, (cnp.arange(big_b, dtype="int64")[:, None] * m + rows) * n + columns, big_b * m * n)
    out = cnp.zeros((big_b * m * n,) + a.dense_shape, a.data.dtype)
    out = out.at[flat.reshape(-1)].add(cnp.asarray(a.data).reshape((big_b * nse,) + a.dense_shape), mode="drop")
    return out.reshape(a.shape)


def fromdense(mat, nse, n_batch: int, n_dense: int, index_dtype: str):
    """A batched BCSR of mat (*batch, m, n, *dense): each element's entries whose dense block is not all
    zero, row by row; nse is the most any element has (given under jit; an element with more keeps
    its first nse). One dense-to-CSR conversion of all elements stacked, then each element's slice."""
    shape = layout("fromdense", mat.shape, n_batch, n_dense)
    big_b, big_d, m, n = math.prod(shape[:n_batch]), math.prod(shape[n_batch + 2:]), *shape[n_batch:n_batch + 2]
    nonzero = cnp.any(cnp.asarray(mat).reshape(big_b, m * n, big_d) != 0, axis=-1)
    if nse is None:
        formats.concrete("fromdense without nse", mat)
        nse = int(np.asarray(cnp.max(cnp.sum(nonzero, axis=1), initial=0)))
    return split_dense(cnp.asarray(mat), nonzero, shape=shape, n_batch=n_batch, nse=int(nse),
                       index_dtype=index_dtype)


def split(mat, nonzero, shape, n_batch: int, nse: int, index_dtype: str):
    big_b, m, n = nonzero.shape[0], shape[n_batch], shape[n_batch + 1]
    dense = shape[n_batch + 2:]
    batch = shape[:n_batch]
    if big_b * nse * m * n == 0:   # no entries, or only padding (an empty matrix)
        return formats.BCSR((cnp.zeros(batch + (nse,) + dense, mat.dtype), cnp.zeros(batch + (nse,), index_dtype),
                             cnp.zeros(batch + (m + 1,), index_dtype)), shape=shape)
    kept = nonzero & (cnp.cumsum(nonzero.astype("int64"), axis=1) <= nse)
    pattern = formats.fromdense_csr(kept.reshape(big_b * m, n).astype("float32"), nse=big_b * nse,
                                    index_dtype=wide_enough(index_dtype, big_b * max(m, nse) + nse))
    rows = cnp.clip(calls.row_ids(pattern.indptr, nnz=big_b * nse), 0, big_b * m - 1)
    blocks = mat.reshape(big_b * m, n, -1)[rows, pattern.indices]
    data, columns, indptr = products.per_element(blocks, pattern.indices, pattern.indptr, big_b, m, 0, nse)
    return formats.BCSR((data.reshape(batch + (nse,) + dense), columns.astype(index_dtype).reshape(batch + (nse,)),
                         indptr.astype(index_dtype).reshape(batch + (m + 1,))), shape=shape)


split_dense = jit(split, static_argnames=("shape", "n_batch", "nse", "index_dtype"))


@jit(static_argnames=("axes",))
def transpose(a, axes):
    """A batched BCSR's axes permuted (nsparse.check_permutation): its arrays' batch and dense axes, the
    sparse ones swapped through the BCOO form (one sort)."""
    nb = a.n_batch
    axes = nsparse.check_permutation(a, axes)
    if axes[nb] == nb + 1:
        return to_bcsr(nsparse.transpose(to_bcoo(a), axes=axes))
    data_axes = axes[:nb] + (nb,) + tuple(x - 1 for x in axes[nb + 2:])
    return formats.BCSR((cnp.transpose(a.data, data_axes), cnp.transpose(a.indices, axes[:nb] + (nb,)),
                         cnp.transpose(a.indptr, axes[:nb] + (nb,))), shape=tuple(a.shape[x] for x in axes))


@jit
def multiplied(a, other):
    """A batched BCSR times a scalar, or times a dense array of its shape at its entries (its BCOO form's
    values, nsparse.scaled_values: padding stays 0)."""
    other = cnp.asarray(other)
    values = cnp.asarray(a.data) * other if other.ndim == 0 else nsparse.scaled_values(to_bcoo(a), other)
    return formats.BCSR((values, a.indices, a.indptr), shape=a.shape)
