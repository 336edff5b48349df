"""BCOO arrays of any number of sparse dimensions, as jax.experimental.sparse's: shape (*batch, *sparse,
*dense), data (*batch, nse, *dense), indices (*batch, nse, n_sparse); entry k lies at the coordinates
indices[..., k, :], duplicates add up, padding is coordinates 0 with value 0. Arrays of two sparse
dimensions are formats.py's and batched.py's matrices. This module holds what works on the index
columns for any n_sparse, as JAX computes it (sums over any axes, transposes, reshapes, * dense),
and runs the other operations of n_sparse != 2 (0, 1, 3, ...: sparse vectors, batched ones too,
and arrays of three or more sparse dimensions) on a matrix view (`matrix_view`): the sparse
coordinates grouped into one row and one column index (row-major), so fromdense, todense, the
products with dense arrays and sum_duplicates are the matrix paths' library calls.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import TracingValueError
from .. import cnp
from ..jit import jit
from ..tracing import located
from . import batched, formats, products
from .checked import record


def n_sparse_of(indices) -> int:
    """JAX's rule: the last dimension of indices counts the sparse dimensions (a malformed indices
    array is taken for a matrix's, whose checks name it)."""
    return int(indices.shape[-1]) if np.ndim(indices) >= 2 else 2


def init(a, shape):
    """formats.BCOO's constructor for n_sparse != 2: n_batch and n_dense read from the arrays' ranks,
    stored batch dimensions of size 1 broadcast, the arrays' shapes and (concrete ones, or recorded for
    cs.checked) the coordinates checked."""
    k = a.n_sparse
    a.n_batch, shape = a.indices.ndim - 2, tuple(int(d) for d in shape)
    a.n_dense = a.data.ndim - a.n_batch - 1
    if a.n_dense < 0 or len(shape) != a.n_batch + k + a.n_dense or min(shape, default=0) < 0:
        raise TracingValueError(located(
            f"BCOO: data {tuple(a.data.shape)} and indices {tuple(a.indices.shape)} give n_batch = {a.n_batch}, "
            f"n_sparse = {k} and n_dense = {a.n_dense}, so the shape must have {a.n_batch} + {k} + {a.n_dense} "
            f"dimensions, got {shape}"))
    a.shape = shape
    a.data, a.indices = batched.broadcast_stored((a.data, a.indices), a.batch_shape)
    batch, sparse, dense = a.batch_shape, a.sparse_shape, a.dense_shape
    nse = a.indices.shape[a.n_batch]
    if tuple(a.data.shape) != batch + (nse,) + dense or tuple(a.indices.shape) != batch + (nse, k):
        raise TracingValueError(located(
            f"BCOO of shape {shape} (n_batch = {a.n_batch}, n_sparse = {k}, n_dense = {a.n_dense}): data and "
            f"indices must have shapes {batch + (nse,) + dense} and {batch + (nse, k)}, got {tuple(a.data.shape)} "
            f"and {tuple(a.indices.shape)} (a stored batch dimension may be 1, broadcast)"))
    if math.prod(sparse) == 0:
        return   # no coordinate lies inside: every entry is padding
    message = f"BCOO: indices must lie in the sparse shape {sparse}"
    if formats.is_traced(a.indices):
        record(cnp.any(~inside(a)), located(message))
        return
    bad = ~inside(a)
    if bad.any():
        at = tuple(np.argwhere(bad)[0].tolist())
        raise TracingValueError(located(f"BCOO: index {tuple(a.indices[at].tolist())} of entry {at} is outside the "
                                        f"sparse shape {sparse}"))


def inside(a):
    """Whether each entry's coordinates lie in the sparse shape, (*batch, nse)."""
    lib = cnp if formats.is_traced(a.indices) else np
    indices = a.indices
    return lib.all((indices >= 0) & (indices < lib.asarray(a.sparse_shape, indices.dtype).reshape(-1)), axis=-1)


def linear(coords, extents, like):
    """The row-major linear index of coordinates (arrays shaped as `like`) in a box of those extents."""
    index = cnp.zeros(tuple(like.shape), str(like.dtype))
    for c, e in zip(coords, extents):
        index = index * e + c
    return index


def unravel(index, extents) -> list:
    """linear's inverse: the coordinates of a row-major index in a box of those extents."""
    coords = []
    for e in reversed(extents):
        coords.append(index % max(e, 1))
        index = index // max(e, 1)
    return coords[::-1]


def stacked(coords, like, k: int):
    """Coordinate arrays as an indices array (..., nse, k); k = 0 gives (..., nse, 0)."""
    if k == 0:
        return cnp.zeros(tuple(like.shape) + (0,), str(like.dtype))
    return cnp.stack(coords, axis=-1)


def valid_entries(a):
    """(data, coordinates): entries outside the sparse shape (unchecked traced indices) made padding
    (coordinates 0, value 0), so no view or sum sees them."""
    ok = inside(a)
    indices = cnp.asarray(a.indices)
    data = cnp.where(ok.reshape(tuple(ok.shape) + (1,) * a.n_dense), cnp.asarray(a.data), 0)
    coords = [cnp.where(ok, indices[..., i], 0) for i in range(a.n_sparse)]
    return data, coords


@jit(static_argnames=("rows", "columns"))
def matrix_view(a, rows: tuple, columns: tuple):
    """a as a BCOO of two sparse dimensions, shape (*batch, R, C, *dense): the sparse axes `rows` (in that
    order) make the row index, `columns` the column index (row-major; either may be empty, an extent of
    1). An empty sparse shape holds no entries (nse 0)."""
    nb, sparse = a.n_batch, a.sparse_shape
    r, c = math.prod(sparse[i] for i in rows), math.prod(sparse[i] for i in columns)
    data, coords = valid_entries(a)
    index = batched.wide_enough(str(a.indices.dtype), r, c)
    like = cnp.zeros(a.batch_shape + (a.nse,), index)
    row = linear([coords[i].astype(index) for i in rows], [sparse[i] for i in rows], like)
    column = linear([coords[i].astype(index) for i in columns], [sparse[i] for i in columns], like)
    indices = cnp.stack([row, column], axis=-1)
    if r * c == 0:
        data, indices = data[(slice(None),) * nb + (slice(0, 0),)], indices[(slice(None),) * nb + (slice(0, 0),)]
    return formats.BCOO((data, indices), shape=a.batch_shape + (r, c) + a.dense_shape)


@jit(static_argnames=("sparse", "rows", "columns"))
def from_matrix(view, sparse: tuple, rows: tuple, columns: tuple):
    """matrix_view's inverse: a two-sparse-dimension BCOO's row and column indices unravelled into the
    sparse axes `rows` and `columns` of `sparse`."""
    indices = cnp.asarray(view.indices)
    coords = [None] * len(sparse)
    for axes, index in ((rows, indices[..., 0]), (columns, indices[..., 1])):
        for axis, coord in zip(axes, unravel(index, [sparse[i] for i in axes])):
            coords[axis] = coord
    nb = view.n_batch
    shape = view.shape[:nb] + sparse + view.shape[nb + 2:]
    return formats.BCOO((view.data, stacked(coords, indices[..., 0], len(sparse))), shape=shape)


def last_axis_view(k: int) -> tuple[tuple, tuple]:
    """(rows, columns) of the view that keeps the last sparse axis as the columns."""
    return tuple(range(k - 1)), tuple(range(max(k - 1, 0), k))


def fromdense(mat, nse, n_batch: int, n_dense: int, index_dtype: str):
    """The BCOO of a dense array with n_sparse = ndim - n_batch - n_dense != 2: the matrix of its
    sparse axes but the last (rows) by the last (columns) through the matrix path, unravelled."""
    k = np.ndim(mat) - n_batch - n_dense
    if min(n_batch, n_dense, k) < 0:
        raise TracingValueError(located(f"fromdense: n_batch = {n_batch} and n_dense = {n_dense} do not fit an array "
                                        f"of shape {tuple(np.shape(mat))}"))
    shape = tuple(np.shape(mat))
    sparse = shape[n_batch:n_batch + k]
    rows, columns = last_axis_view(k)
    view = cnp.reshape(mat, shape[:n_batch] + (math.prod(sparse[:-1]) if k else 1, sparse[-1] if k else 1) +
                       shape[n_batch + k:])
    matrix = formats.BCOO.fromdense(view, nse=nse, index_dtype=index_dtype, n_batch=n_batch, n_dense=n_dense)
    return from_matrix(matrix, sparse=sparse, rows=rows, columns=columns)


def todense(a):
    rows, columns = last_axis_view(a.n_sparse)
    return cnp.reshape(matrix_view(a, rows=rows, columns=columns).todense(), a.shape)


def sum_duplicates(a, nse=None):
    """Entries sorted by their coordinates (lexicographic), duplicates summed: the matrix view's."""
    rows, columns = last_axis_view(a.n_sparse)
    merged = formats.sum_duplicates(matrix_view(a, rows=rows, columns=columns), nse=nse)
    return from_matrix(merged, sparse=a.sparse_shape, rows=rows, columns=columns)


def check_permutation(a, axes) -> tuple:
    """axes normalized (all reversed by default); they must permute the batch, sparse and dense axes
    each among themselves, as jax.experimental.sparse requires."""
    nb, k = a.n_batch, a.n_sparse
    axes = tuple(range(a.ndim))[::-1] if axes is None else tuple(int(x) % max(a.ndim, 1) for x in axes)
    if (sorted(axes) != list(range(a.ndim)) or sorted(axes[:nb]) != list(range(nb))
            or sorted(axes[nb:nb + k]) != list(range(nb, nb + k))):
        raise TracingValueError(located(f"{type(a).__name__}.transpose: axes {axes} must permute the batch axes "
                                        f"{tuple(range(nb))}, the sparse axes {tuple(range(nb, nb + k))} and the "
                                        "dense axes each among themselves"))
    return axes


@jit(static_argnames=("axes",))
def transpose(a, axes):
    """A BCOO's axes permuted (check_permutation): data's batch and dense axes, indices' batch axes and
    columns."""
    nb, k = a.n_batch, a.n_sparse
    axes = check_permutation(a, axes)
    indices = cnp.transpose(cnp.asarray(a.indices), axes[:nb] + (nb, nb + 1))
    columns = [indices[..., x - nb] for x in axes[nb:nb + k]]
    data = cnp.transpose(cnp.asarray(a.data), axes[:nb] + (nb,) + tuple(x - k + 1 for x in axes[nb + k:]))
    return formats.BCOO((data, stacked(columns, indices[..., 0], k) if k else indices),
                        shape=tuple(a.shape[x] for x in axes))


def split_shape(shape: tuple, batch: int, sparse: int, dense: int):
    """(i, j): shape[:i] of `batch` elements, shape[i:j] of `sparse`, shape[j:] of `dense`, size-1
    dimensions at a boundary joining the earlier part (JAX's rule); None when no split fits."""
    ends = [j for j in range(len(shape) + 1) if math.prod(shape[:j]) == batch * sparse and
            math.prod(shape[j:]) == dense]
    for j in ends[::-1]:
        starts = [i for i in range(j + 1) if math.prod(shape[:i]) == batch and math.prod(shape[i:j]) == sparse]
        if starts:
            return starts[-1], j
    return None


def reshaped(a, shape: tuple):
    """A BCOO in a new shape whose leading dimensions reshape the batch ones, the next the sparse ones
    (row-major, as numpy's reshape of the dense array; any number of them) and the rest the dense ones,
    as JAX's bcoo_reshape; a shape that mixes them raises."""
    shape = tuple(int(d) for d in shape)
    if shape.count(-1) == 1:
        known = math.prod(d for d in shape if d != -1)
        shape = tuple(math.prod(a.shape) // max(known, 1) if d == -1 else d for d in shape)
    if math.prod(shape) != math.prod(a.shape) or min(shape, default=0) < 0:
        raise TracingValueError(located(f"BCOO.reshape: {a.shape} cannot be reshaped to {shape}"))
    sizes = math.prod(a.batch_shape), math.prod(a.sparse_shape), math.prod(a.dense_shape)
    split = split_shape(shape, *sizes)
    if split is None:
        raise NotImplementedError(located(
            f"BCOO.reshape of {a.shape} (n_batch = {a.n_batch}, n_sparse = {a.n_sparse}, n_dense = {a.n_dense}) to "
            f"{shape}: the new shape must reshape the batch dimensions (size {sizes[0]}), the sparse ones (size "
            f"{sizes[1]}) and the dense ones (size {sizes[2]}) each among themselves"))
    return reshape(a, shape=shape, split=split)


@jit(static_argnames=("shape", "split"))
def reshape(a, shape: tuple, split: tuple):
    (i, j), nse = split, a.nse
    data, coords = valid_entries(a)
    index = batched.wide_enough(str(a.indices.dtype), math.prod(a.sparse_shape))
    like = cnp.zeros(a.batch_shape + (nse,), index)
    flat = linear([c.astype(index) for c in coords], a.sparse_shape, like).reshape(shape[:i] + (nse,))
    new_coords = unravel(flat, shape[i:j])
    indices = stacked(new_coords, flat, j - i).astype(str(a.indices.dtype))
    return formats.BCOO((data.reshape(shape[:i] + (nse,) + shape[j:]), indices), shape=shape)


def summed(a, axis):
    """a.sum(axis) as JAX's: over every axis a dense scalar, else a BCOO with the summed axes gone:
    dense axes added up in the values, sparse ones dropped from the indices (their entries then add
    up where they meet), batch ones' elements' entries set side by side (nse times their count)."""
    axes = tuple(range(a.ndim)) if axis is None else tuple(np.atleast_1d(axis).tolist())
    if any(not -a.ndim <= int(x) < a.ndim for x in axes):
        raise TracingValueError(located(f"sum: axis {axis} is out of range for an array of {a.ndim} dimensions"))
    axes = tuple(sorted({int(x) % a.ndim for x in axes}))
    coo = a if isinstance(a, formats.BCOO) else a.to_bcoo()
    if len(axes) == a.ndim:
        return cnp.sum(summed_over(coo, axes=axes).data)
    return summed_over(coo, axes=axes)


@jit(static_argnames=("axes",))
def summed_over(a, axes: tuple):
    nb, k = a.n_batch, a.n_sparse
    data, coords = valid_entries(a)
    dense_axes = tuple(x - k + 1 for x in axes if x >= nb + k)
    data = cnp.sum(data, axis=dense_axes) if dense_axes else data
    kept_sparse = [coords[i] for i in range(k) if nb + i not in axes]
    indices = stacked(kept_sparse, cnp.asarray(a.indices)[..., 0], len(kept_sparse))
    kept = tuple(x for x in range(nb) if x not in axes)
    gone = tuple(x for x in range(nb) if x in axes)
    order = kept + gone + (nb,)
    data = cnp.transpose(data, order + tuple(range(nb + 1, data.ndim)))
    indices = cnp.transpose(indices, order + (nb + 1,))
    batch = tuple(a.shape[x] for x in kept)
    nse = a.nse * math.prod(a.shape[x] for x in gone)
    return formats.BCOO((data.reshape(batch + (nse,) + tuple(data.shape[len(order):])),
                         indices.reshape(batch + (nse, len(kept_sparse)))),
                        shape=tuple(a.shape[x] for x in range(a.ndim) if x not in axes))


@jit
def scaled_values(a, other):
    """A BCOO's values times a scalar, or times a dense array of its shape at its entries."""
    other = cnp.asarray(other)
    if other.ndim == 0:
        return cnp.asarray(a.data) * other
    formats.check_same_shape(f"{type(a).__name__} * dense", a.shape, other.shape)
    big_b, big_d = math.prod(a.batch_shape), math.prod(a.dense_shape)
    indices = cnp.asarray(a.indices).astype("int64")
    like = cnp.zeros(a.batch_shape + (a.nse,), "int64")
    coords = [cnp.clip(indices[..., i], 0, max(e - 1, 0)) for i, e in enumerate(a.sparse_shape)]
    at = linear(coords, a.sparse_shape, like).reshape(big_b, a.nse)
    element = cnp.arange(big_b, dtype="int64")[:, None]
    gathered = other.reshape(big_b, math.prod(a.sparse_shape), big_d)[element, at]
    return cnp.asarray(a.data) * gathered.reshape(a.data.shape)


def dot_general(lhs, rhs, dimension_numbers):
    """bcoo_dot_general of a BCOO with n_sparse != 2 and a dense rhs. All batch dimensions against rhs's
    and one other contracted: the matrix view (a sparse one contracted: the other sparse axes by it;
    a dense one: as todense's), one library product, its rows unravelled. Others: products.entry_products."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = (tuple(map(tuple, d)) for d in dimension_numbers)
    nb, k = lhs.n_batch, lhs.n_sparse
    if not (sorted(lhs_batch) == list(range(nb)) and len(rhs_batch) == nb and len(lhs_contract) == 1
            and nb <= lhs_contract[0] < lhs.ndim and len(rhs_contract) == 1):
        return products.entry_products(lhs, rhs, dimension_numbers)
    rhs = cnp.asarray(rhs)
    want = tuple(lhs.shape[d] for d in lhs_batch + lhs_contract)
    if not all(0 <= d < rhs.ndim for d in rhs_batch + rhs_contract) or \
            tuple(rhs.shape[d] for d in rhs_batch + rhs_contract) != want:
        raise TracingValueError(located(f"bcoo_dot_general: lhs {lhs.shape} and rhs {tuple(rhs.shape)}: dimension "
                                        f"numbers {dimension_numbers} pair sizes {want} with other ones"))
    axis = lhs_contract[0]
    if axis < nb + k:
        rows, columns = tuple(i for i in range(k) if i != axis - nb), (axis - nb,)
        view_axis = nb + 1
    else:
        (rows, columns), view_axis = last_axis_view(k), axis - k + 2
    view = matrix_view(lhs, rows=rows, columns=columns)
    y = products.dot_general(view, rhs, (((view_axis,), rhs_contract), (lhs_batch, rhs_batch)))
    kept = tuple(lhs.sparse_shape[i] for i in rows + (columns if axis >= nb + k else ()))
    view_kept = 1 if axis < nb + k else 2
    return cnp.reshape(y, tuple(y.shape[:nb]) + kept + tuple(y.shape[nb + view_kept:]))


def matmul(a, x):
    """a @ x by numpy's matmul rules, as bcoo_dot_general: a's last axis against x's first (x 1-D or 2-D)
    or second-to-last (a 1-D, or a 2-D one times a stack); a sparse x: products.sparse_matmul."""
    if isinstance(x, formats.SparseMatrix):
        return products.sparse_matmul(a, x)
    x = dense_operand("sparse @ dense", a, x)
    if x.ndim == 1 or a.ndim == 1 or x.ndim == 2:
        contract = x.ndim - 2 if a.ndim == 1 and x.ndim > 1 else 0
        return dot_general(a, x, (((a.ndim - 1,), (contract,)), ((), ())))
    if a.ndim == 2:   # (m, B..., k) -> (B..., m, k)
        return cnp.moveaxis(dot_general(a, x, (((1,), (x.ndim - 2,)), ((), ()))), 0, -2)
    raise NotImplementedError(located(f"sparse @ dense: a sparse array of shape {a.shape} (n_sparse = {a.n_sparse}) "
                                      f"times a stack {tuple(x.shape)}: the stack's batch would run along sparse "
                                      "dimensions (use bcoo_dot_general)"))


def rmatmul(x, a):
    """x @ a by numpy's matmul rules: x's last axis against a's only one (a 1-D) or second-to-last."""
    x = dense_operand("dense @ sparse", a, x)
    if a.ndim == 1 or x.ndim == 1:
        return batched.dot_general(x, a, (((x.ndim - 1,), (max(a.ndim - 2, 0),)), ((), ())))
    if x.ndim == 2:   # (p, A..., n) -> (A..., p, n)
        return cnp.moveaxis(batched.dot_general(x, a, (((1,), (a.ndim - 2,)), ((), ()))), 0, -2)
    if a.ndim == 2:
        return batched.dot_general(x, a, (((x.ndim - 1,), (0,)), ((), ())))
    raise NotImplementedError(located(f"dense @ sparse: a stack {tuple(x.shape)} times a sparse array of shape "
                                      f"{a.shape} (n_sparse = {a.n_sparse}): the stack's batch would run along "
                                      "sparse dimensions (use bcoo_dot_general)"))


def dense_operand(what: str, a, x):
    x = cnp.asarray(x)
    if x.ndim == 0:
        raise TracingValueError(located(f"{what}: matmul takes arrays of one dimension at least, got a scalar"))
    return x
