"""sum_duplicates of a batched BCOO, as jax.experimental.sparse's. (batched.py has the layout and the
products, nsparse.py the sums, transposes and reshapes of any BCOO.)"""
from __future__ import annotations

import math

import numpy as np

from ...errors import TracingValueError
from .. import cnp
from ..jit import jit
from ..tracing import located
from . import batched, calls, formats, products


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
