"""Set operations and sorting extras, as jax.numpy: unique (and the array API's unique_all,
unique_counts, unique_inverse, unique_values), isin, union1d, intersect1d, setdiff1d, setxor1d,
lexsort, partition, argpartition and sort_complex.

Everything is built on the IR's stable multi-key sort. Results whose length depends on the
values take a static `size` under jit (see indexing_funcs.result_size); missing elements are
`fill_value`, by default JAX's: the smallest result for unique, union1d, intersect1d and
setxor1d, and 0 for setdiff1d.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...errors import TracingTypeError, TracingValueError
from .. import lax_shape
from ..dtypes import is_complex, is_inexact
from ..indexing import getitem, scatter
from ..lax_elementwise import static_int
from ..tracing import Tracer, located
from . import elementwise as el
from . import reductions as red
from . import shaping as sh
from .base import DEFAULT_INT, canonical_axis, convert, result_type
from .creation import arange, asarray, full, zeros
from .histograms import searchsorted
from .indexing_funcs import count_true, fill_tail, packed, result_size

__all__ = ["unique", "unique_all", "unique_counts", "unique_inverse", "unique_values", "isin", "union1d",
           "intersect1d", "setdiff1d", "setxor1d", "lexsort", "partition", "argpartition", "sort_complex"]


# ---- sorting extras -------------------------------------------------------------------------------

def lexsort(keys, axis=-1):
    """jnp.lexsort: i64 indices sorting by the last key, ties broken by the one before, and so on."""
    keys = [asarray(k) for k in keys] if not isinstance(keys, Tracer) else [keys[i] for i in range(keys.shape[0])]
    if not keys:
        raise TracingTypeError(located("lexsort: need at least one key"))
    shapes = {k.shape for k in keys}
    if len(shapes) != 1:
        raise TracingValueError(located(f"lexsort: all keys must have one shape, got {sorted(shapes)}"))
    shape = keys[0].shape
    if not shape:
        raise TracingValueError(located("lexsort: keys must be at least 1-d"))
    axis = canonical_axis(axis, len(shape))
    iota = el.broadcast_in_dims(arange(shape[axis]), shape, (axis,))
    return red.sorted_along(list(reversed(keys)) + [iota], axis, num_keys=len(keys))[-1]


def partition_sizes(name: str, x: Tracer, kth, axis) -> tuple[int, int]:
    axis = canonical_axis(axis, x.ndim)
    kth = static_int(kth, f"{name} kth")
    n = x.shape[axis]
    if not -n <= kth < n:
        raise TracingValueError(located(f"{name}: kth {kth} is out of bounds for an axis of size {n}"))
    return axis, kth % n


def partition(a, kth, axis=-1):
    """jnp.partition: along axis, the kth + 1 smallest elements in increasing order, then the others
    in decreasing order (JAX's order, from two top-k selections)."""
    x = asarray(a)
    axis, kth = partition_sizes("partition", x, kth, axis)
    ordered = red.sort(x, axis)
    bottom = lax_shape.slice_in_dim(ordered, 0, kth + 1, axis=axis)
    top = sh.flip(lax_shape.slice_in_dim(ordered, kth + 1, x.shape[axis], axis=axis), axis)
    return sh.concatenate([bottom, top], axis=axis)


def argpartition(a, kth, axis=-1):
    """jnp.argpartition: the int32 indices of partition's order (ties: lower indices first)."""
    x = asarray(a)
    axis, kth = partition_sizes("argpartition", x, kth, axis)
    bottom = lax_shape.slice_in_dim(red.argsort(x, axis), 0, kth + 1, axis=axis)
    top = lax_shape.slice_in_dim(red.argsort(x, axis, descending=True), 0, x.shape[axis] - kth - 1, axis=axis)
    return convert(sh.concatenate([bottom, top], axis=axis), "i32")


def sort_complex(a):
    """jnp.sort_complex: sorted along the last axis (real part first), as a complex array."""
    x = asarray(a)
    target = x.type.dtype if is_complex(x.type.dtype) else ("c128" if x.type.dtype in ("f64", "i64", "u64")
                                                             else "c64")
    return convert(red.sort(x, -1), target)


# ---- unique --------------------------------------------------------------------------------------

def sorted_with_mask(rows: Tracer, equal_nan: bool) -> tuple[Tracer, Tracer, Tracer]:
    """(rows sorted lexicographically, bool mask of the first row of each run of equal rows, the
    sorting permutation): rows is (n, ...), compared whole."""
    n = rows.shape[0]
    columns = sh.reshape(rows, (n, math.prod(rows.shape[1:])))
    if is_complex(rows.type.dtype):  # a NaN anywhere is the NaN, as numpy's unique treats it
        columns = el.where(el.isnan(columns), np.nan, columns)
    keys = [columns[:, j] for j in range(columns.shape[1])] if columns.shape[1] else []
    perm = (red.sorted_along(keys + [arange(n)], 0, num_keys=len(keys))[-1] if keys and n
            else arange(n))
    aux = getitem(rows, perm)
    if n == 0:
        return aux, zeros((0,), "bool"), perm
    different = el.not_equal(aux[1:], aux[:-1])
    if equal_nan and is_inexact(aux.type.dtype):
        different = el.logical_and(different, el.logical_not(el.logical_and(el.isnan(aux[1:]), el.isnan(aux[:-1]))))
    if different.ndim > 1:
        different = red.any(different, tuple(range(1, different.ndim)))
    mask = sh.concatenate([full((1,), True, "bool"), different])
    return aux, mask, perm


def numpy_unique_count(ar, axis, equal_nan: bool) -> int:
    values = np.asarray(ar)
    if axis is None:
        values = values.ravel()
        axis = 0
    return len(np.unique(values, axis=axis, equal_nan=equal_nan)) if values.size else 0


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
           size=None, fill_value=None, sorted=True):
    """jnp.unique: the sorted distinct elements (or slices along axis), optionally with the index of
    each one's first occurrence, the inverse indices and the counts (all i64)."""
    x = asarray(ar)
    size = result_size(size, "unique", [ar], lambda: numpy_unique_count(ar, axis, equal_nan))
    flat = axis is None
    if flat:
        rows, axis = sh.ravel(x), 0
    else:
        axis = canonical_axis(axis, x.ndim)
        rows = sh.moveaxis(x, axis, 0)
    n = rows.shape[0]
    if n == 0 and size and fill_value is None:
        raise TracingValueError(located("unique: for a zero-sized input with a nonzero size, fill_value must be "
                                        "given"))
    aux, mask, perm = sorted_with_mask(rows, equal_nan)
    first = packed(mask, arange(n), size, 0)  # where each distinct run starts, then 0
    if n:
        result = getitem(aux, first)
        if fill_value is not None:
            result = fill_tail(result, count_true(mask), fill_value)
    else:
        result = full((size,) + aux.shape[1:], 0 if fill_value is None else fill_value, aux.type.dtype)
    outputs = [sh.moveaxis(result, 0, axis) if x.ndim and axis else result]
    if return_index:
        outputs.append(getitem(perm, first) if n else perm)
    if return_inverse:
        inverse = scatter(zeros((n,), DEFAULT_INT), perm, el.subtract(red.cumsum(mask, dtype=DEFAULT_INT), 1), "set")
        outputs.append(sh.reshape(inverse, x.shape) if flat else inverse)
    if return_counts:
        starts = packed(mask, arange(n), size + 1, 0)  # padded starts are 0, read as n: their counts are 0
        bounds = sh.concatenate([starts[:1], el.where(el.greater(starts[1:], 0), starts[1:], n)])
        outputs.append(el.subtract(bounds[1:], bounds[:-1]))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


class UniqueAllResult(NamedTuple):
    values: Tracer
    indices: Tracer
    inverse_indices: Tracer
    counts: Tracer


class UniqueCountsResult(NamedTuple):
    values: Tracer
    counts: Tracer


class UniqueInverseResult(NamedTuple):
    values: Tracer
    inverse_indices: Tracer


def unique_all(x, /, *, size=None, fill_value=None):
    """jnp.unique_all: (values, indices, inverse_indices, counts); NaNs are all distinct."""
    return UniqueAllResult(*unique(x, True, True, True, equal_nan=False, size=size, fill_value=fill_value))


def unique_counts(x, /, *, size=None, fill_value=None):
    return UniqueCountsResult(*unique(x, return_counts=True, equal_nan=False, size=size, fill_value=fill_value))


def unique_inverse(x, /, *, size=None, fill_value=None):
    return UniqueInverseResult(*unique(x, return_inverse=True, equal_nan=False, size=size, fill_value=fill_value))


def unique_values(x, /, *, size=None, fill_value=None):
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


# ---- membership and set operations ------------------------------------------------------------

def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """jnp.isin: whether each element occurs in test_elements (NaN occurs nowhere)."""
    x, tests = asarray(element), sh.ravel(asarray(test_elements))
    dtype = result_type(x, tests)[0]
    x, tests = convert(x, dtype), convert(tests, dtype)
    if tests.size == 0:
        found = full(x.shape, False, "bool")
    elif is_complex(x.type.dtype):  # no order to search in: compare with every test element
        found = red.any(el.equal(x[..., None], tests), axis=-1)
    else:
        ordered = red.sort(tests)
        position = searchsorted(ordered, x)
        found = el.equal(getitem(ordered, el.clip(convert(position, DEFAULT_INT), 0, tests.size - 1)), x)
    return el.logical_not(found) if invert else found


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """jnp.union1d: the sorted distinct elements of both (flattened) arrays."""
    size = result_size(size, "union1d", [ar1, ar2], lambda: len(np.union1d(ar1, ar2)))
    a, b = flat_pair(ar1, ar2)
    return unique(sh.concatenate([a, b]), size=size, fill_value=fill_value)


def flat_pair(ar1, ar2) -> tuple[Tracer, Tracer]:
    a, b = sh.ravel(ar1), sh.ravel(ar2)
    dtype = result_type(a, b)[0]
    return convert(a, dtype), convert(b, dtype)


def first_of_runs(x: Tracer) -> tuple[Tracer, Tracer, Tracer]:
    """(x sorted, the mask of the first element of each run of equal elements, the permutation)."""
    return sorted_with_mask(x, equal_nan=False)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """jnp.setdiff1d: the sorted distinct elements of ar1 not in ar2."""
    size = result_size(size, "setdiff1d", [ar1, ar2], lambda: len(np.setdiff1d(ar1, ar2)))
    a = sh.ravel(ar1)  # the result keeps ar1's dtype, as in JAX
    aux, mask, _ = first_of_runs(a)
    keep = el.logical_and(mask, isin(aux, sh.ravel(ar2), invert=True))
    return packed(keep, aux, size, 0 if fill_value is None else fill_value)


def smallest_fill(values: Tracer, count: Tracer, fill_value) -> Tracer:
    """values with the elements from count on set to fill_value, or by default to the smallest result."""
    if fill_value is None:  # JAX's default: the smallest result, or 0 when there is none
        fill_value = el.where(el.greater(count, 0), values[0], 0) if values.shape[0] else 0
    return fill_tail(values, count, fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    """jnp.intersect1d: the sorted distinct elements in both arrays; return_indices adds the index of
    each one's first occurrence in ar1 and in ar2 (missing ones: the arrays' sizes)."""
    size = result_size(size, "intersect1d", [ar1, ar2], lambda: len(np.intersect1d(ar1, ar2)))
    a, b = flat_pair(ar1, ar2)
    aux, mask, perm = first_of_runs(a)
    keep = el.logical_and(mask, isin(aux, b))
    count = count_true(keep)
    values = smallest_fill(packed(keep, aux, size, 0), count, fill_value)
    if not return_indices:
        return values
    index1 = packed(keep, perm, size, a.size)
    b_order = red.argsort(b)
    position = convert(searchsorted(getitem(b, b_order), values), DEFAULT_INT)
    index2 = getitem(b_order, el.clip(position, 0, max(b.size - 1, 0))) if b.size else zeros((size,), DEFAULT_INT)
    index2 = el.where(el.less(arange(size), count), index2, b.size)
    return values, index1, index2


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """jnp.setxor1d: the sorted distinct elements in exactly one of the arrays."""
    size = result_size(size, "setxor1d", [ar1, ar2], lambda: len(np.setxor1d(ar1, ar2)))
    a, b = flat_pair(ar1, ar2)
    a_sorted, a_first, _ = first_of_runs(a)
    b_sorted, b_first, _ = first_of_runs(b)
    keep = sh.concatenate([el.logical_and(a_first, isin(a_sorted, b, invert=True)),
                           el.logical_and(b_first, isin(b_sorted, a, invert=True))])
    candidates = sh.concatenate([a_sorted, b_sorted])
    # Kept elements first, in increasing order: sort by (not kept, value).
    dropped = convert(el.logical_not(keep), "i8")
    ordered = red.sorted_along([dropped, candidates], 0, num_keys=2)[1] if candidates.size else candidates
    count = count_true(keep)
    values = ordered[:size] if ordered.shape[0] >= size else sh.pad(ordered, (0, size - ordered.shape[0]))
    return smallest_fill(values, count, fill_value)

