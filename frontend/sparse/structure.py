"""Batched BCOO operations that keep the array sparse, as jax.experimental.sparse's: a sum over batch
and dense axes only, reshape, sum_duplicates. (batched.py has the layout and the products.)"""
from __future__ import annotations

import math

import numpy as np

from ...errors import TracingValueError
from .. import cnp
from ..jit import jit
from ..tracing import located
from . import batched, calls, formats, products


def batch_dense_summed(a, axes: set):
    """A sum over batch and dense axes only, a BCOO as JAX's: the summed batch elements' entries side by
    side (nse times their count, not merged), the summed dense axes added up in the values."""
    nb = a.n_batch
    coo = batched.to_bcoo(a) if isinstance(a, formats.BCSR) else a
    kept = tuple(x for x in range(nb) if x not in axes)
    gone = tuple(x for x in range(nb) if x in axes)
    data_axes = tuple(x - 1 for x in sorted(axes) if x >= nb + 2)
    data = cnp.sum(cnp.asarray(coo.data), axis=data_axes) if data_axes else cnp.asarray(coo.data)
    order = kept + gone + (nb,)
    data = cnp.transpose(data, order + tuple(range(nb + 1, data.ndim)))
    indices = cnp.transpose(cnp.asarray(coo.indices), order + (nb + 1,))
    batch = tuple(a.shape[x] for x in kept)
    nse = coo.nse * math.prod(a.shape[x] for x in gone)
    data = data.reshape(batch + (nse,) + tuple(data.shape[len(order):]))
    return formats.BCOO((data, indices.reshape(batch + (nse, 2))),
                        shape=tuple(a.shape[x] for x in range(a.ndim) if x not in axes))


def reshaped(a, shape: tuple):
    """A BCOO's entries in a new shape whose leading dimensions reshape the batch ones, the next two the
    two sparse ones (row-major, as numpy's reshape of the dense array) and the rest the dense ones; a
    shape that would need another number of sparse dimensions raises (only two are held)."""
    shape = tuple(int(d) for d in shape)
    big_b, big_d, m, n, nse = batched.sizes(a)
    if shape.count(-1) == 1:
        known = math.prod(d for d in shape if d != -1)
        shape = tuple(math.prod(a.shape) // max(known, 1) if d == -1 else d for d in shape)
    if math.prod(shape) != math.prod(a.shape) or min(shape, default=0) < 0:
        raise TracingValueError(located(f"BCOO.reshape: {a.shape} cannot be reshaped to {shape}"))
    for i in range(len(shape) - 1):
        if (math.prod(shape[:i]), shape[i] * shape[i + 1], math.prod(shape[i + 2:])) == (big_b, m * n, big_d):
            break
    else:
        raise NotImplementedError(located(
            f"BCOO.reshape of {a.shape} (n_batch = {a.n_batch}, n_dense = {a.n_dense}) to {shape}: the new shape must "
            f"reshape the batch dimensions (size {big_b}), the two sparse ones (size {m * n}, into two) and the "
            f"dense ones (size {big_d}) each among themselves"))
    batch, (rows, columns), dense = shape[:i], shape[i:i + 2], shape[i + 2:]
    indices = cnp.asarray(a.indices).reshape(batch + (nse, 2))
    linear = indices[..., 0].astype("int64") * n + indices[..., 1].astype("int64")
    at = cnp.stack([linear // max(columns, 1), linear % max(columns, 1)], axis=-1).astype(indices.dtype)
    return formats.BCOO((cnp.asarray(a.data).reshape(batch + (nse,) + dense), at), shape=shape)


def sum_duplicates(a, nse=None):
    """A batched BCOO with each element's entries sorted by (row, column) and duplicates summed, as
    JAX's bcoo_sum_duplicates: one sort of every element's entries by (element, row, column). nse
    is the most distinct entries an element has (given under jit: an element with more keeps its first)."""
    entries = sorted_entries(a)
    if nse is None:
        formats.concrete("sum_duplicates without nse", entries[-1])
        nse = int(np.max(np.asarray(entries[-1]), initial=0))
    return merged(a, entries, nse=int(nse))


@jit
def sorted_entries(a):
    """(order, global rows, columns, slot among the distinct entries, each element's distinct count)."""
    big_b, _, m, _, nse_in = batched.sizes(a)
    indices = cnp.asarray(a.indices).reshape(big_b, nse_in, 2).astype("int64")
    element = cnp.arange(big_b, dtype="int64")[:, None]
    rows = (cnp.clip(indices[..., 0], 0, max(m - 1, 0)) + element * m).reshape(-1)
    order, rows, columns, slot = calls.sorted_entries(cnp.arange(big_b * nse_in, dtype="int64"), rows,
                                                      indices[..., 1].reshape(-1))
    first = cnp.concatenate([cnp.ones((min(1, big_b * nse_in),), "int64"), (slot[1:] != slot[:-1]).astype("int64")])
    counts = cnp.zeros((big_b,), "int64").at[rows // max(m, 1)].add(first, mode="drop")
    return order, rows, columns, slot, counts


@jit(static_argnames=("nse",))
def merged(a, entries, nse: int):
    big_b, big_d, m, _, nse_in = batched.sizes(a)
    order, rows, columns, slot, counts = entries
    total = big_b * nse_in
    values = cnp.asarray(a.data).reshape(total, big_d)[order]
    summed = cnp.zeros((total, big_d), values.dtype).at[slot].add(values, mode="drop")
    merged_rows = cnp.zeros((total,), "int64").at[slot].set(rows, mode="drop")
    merged_columns = cnp.zeros((total,), "int64").at[slot].set(columns, mode="drop")
    ptr = cnp.concatenate([cnp.zeros((1,), "int64"), cnp.cumsum(counts)])
    data, local_rows, _ = products.per_element(summed, merged_rows, ptr, big_b, 1, m, nse)
    _, local_columns, _ = products.per_element(summed, merged_columns, ptr, big_b, 1, 0, nse)
    at = cnp.stack([local_rows, local_columns], axis=-1).astype(str(a.indices.dtype))
    return formats.BCOO((data.reshape(a.batch_shape + (nse,) + a.dense_shape), at.reshape(a.batch_shape + (nse, 2))),
                        shape=a.shape)
