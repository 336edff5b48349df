"""Index functions, as jax.numpy: nonzero/argwhere/flatnonzero (with a static `size`), take and
take_along_axis, put/place/put_along_axis (functional), compress/extract, choose/select/piecewise,
the index builders (tril_indices, diag_indices, unravel_index, ravel_multi_index, ix_) and the
index expressions r_, c_, s_ and index_exp.

A result whose length depends on the values (nonzero, extract...) needs a static `size` under
`jit`, as in JAX: the first `size` results are kept, and missing ones are `fill_value`. Called
eagerly without `size`, the length is counted from the concrete input, as JAX does.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import ConcretizationError, TracingTypeError, TracingValueError
from ...ir.types import NUMPY_DTYPES
from ...libs.prim.matcher import scanned
from ...libs.prim.select import RUN_LENGTH as SELECT_RUN_LENGTH
from .. import lax_elementwise, lax_shape
from ..dtypes import is_bool, is_complex, is_inexact, is_integer
from ..indexing import getitem, scatter
from ..lax_elementwise import static_int
from ..lax_scans import Tracing
from ..tracing import Tracer, located
from . import elementwise as el
from . import reductions as red
from . import shaping as sh
from .base import DEFAULT_INT, promote_args, broadcast_shapes, canonical_axis, convert, shape_of
from .array_funcs import resize
from .creation import arange, asarray, full, ones, static_shape, tri, zeros

__all__ = ["nonzero", "argwhere", "flatnonzero", "take", "take_along_axis", "put", "put_along_axis", "place",
           "compress", "extract", "choose", "select", "piecewise", "tril_indices", "triu_indices",
           "tril_indices_from", "triu_indices_from", "diag_indices", "diag_indices_from", "mask_indices",
           "unravel_index", "ravel_multi_index", "ix_", "fill_diagonal", "r_", "c_", "s_", "index_exp"]


# ---- static result sizes ---------------------------------------------------------------------

def result_size(size, name: str, arrays, count) -> int:
    """The static length of a value-dependent result: `size` if given, else `count()` of the concrete
    inputs (an eager call); traced inputs without `size` are a ConcretizationError, as in JAX."""
    if size is not None:
        if isinstance(size, Tracer):
            raise ConcretizationError(located(f"{name}: size must be a static int, got a traced {size.type}"))
        size = static_int(size, f"{name} size")
        if size < 0:
            raise TracingValueError(located(f"{name}: size must be non-negative, got {size}"))
        return size
    if any(isinstance(a, Tracer) for a in arrays):
        raise ConcretizationError(located(
            f"{name}: the length of the result depends on the values of a traced array (a data-dependent shape), "
            f"which are not known while tracing. Pass a static size= (and optionally fill_value=) to get a "
            f"result of fixed length"))
    return int(count())


def flattened(a):
    """a flattened; a concrete input stays concrete, so that a size can still be counted from it."""
    return sh.ravel(a) if isinstance(a, Tracer) else np.ravel(a)


def packed(mask: Tracer, values: Tracer, size: int, fill) -> Tracer:
    """values[mask] (mask and values along axis 0), the first `size` of them, then `fill`: the prim
    library's stream compaction (libs/prim/select.py): each run's count of the mask, their exclusive
    scan (every run's first place) and their total, then one kernel writing the selected values."""
    n, inner = mask.shape[0], math.prod(values.shape[1:])
    if is_complex(values.type.dtype):   # each part on its own: the kernel moves real elements
        fill = convert(asarray(fill), values.type.dtype)
        return lax_elementwise.complex(packed(mask, el.real(values), size, el.real(fill)),
                                       packed(mask, el.imag(values), size, el.imag(fill)))
    rows = sh.reshape(values, (n, inner))
    # Counted as i32 where no count can pass 2^31 (half the traffic of i64); places and total are
    # one number per run, widened to i64.
    count_dtype = "i32" if n < 2 ** 31 else "i64"
    counted = sh.reshape(convert(mask, count_dtype), (1, n))
    (counts,) = Tracing.ops("library_call", counted, library="prim", routine="run_totals", solution="",
                            reducer="sum", run_length=SELECT_RUN_LENGTH)
    places = convert(sh.reshape(scanned(Tracing, counts, "sum", exclusive=True), (counts.shape[1],)), "i64")
    total = convert(red.sum(counts), "i64")
    fill = convert(asarray(fill), values.type.dtype)
    out = Tracing.op("library_call", mask, rows, places, total, fill, library="prim", routine="select_runs",
                     solution="", run_length=SELECT_RUN_LENGTH, size=size)
    return sh.reshape(out, (size,) + values.shape[1:])


def count_true(mask: Tracer) -> Tracer:
    return red.sum(mask, dtype=DEFAULT_INT)


def valid_prefix(size: int, count: Tracer) -> Tracer:
    """bool[size]: i < count."""
    return el.less(arange(size), count)


def fill_tail(values: Tracer, count: Tracer, fill) -> Tracer:
    """values (along axis 0) with the elements from `count` on replaced by `fill`."""
    valid = valid_prefix(values.shape[0], count)
    valid = lax_shape.broadcast_in_dim(valid, values.shape, (0,))
    return el.where(valid, values, convert(asarray(fill), values.type.dtype))


# ---- nonzero and friends ---------------------------------------------------------------------

def nonzero(a, *, size=None, fill_value=None):
    """jnp.nonzero: a tuple of i64 index arrays, one per dimension, of the nonzero elements."""
    x = asarray(a)
    if x.ndim == 0:
        raise TracingValueError(located("nonzero: calling nonzero on a 0-d array is not allowed (as in JAX); "
                                        "use atleast_1d(a).nonzero()"))
    size = result_size(size, "nonzero", [a], lambda: np.count_nonzero(np.asarray(a)))
    mask = sh.ravel(el.truth(x))
    flat = packed(mask, arange(x.size), size, 0)
    if x.size:
        strides = [math.prod(x.shape[i + 1:]) for i in range(x.ndim)]
        out = [el.remainder(el.floor_divide(flat, stride), dim) for stride, dim in zip(strides, x.shape)]
    else:
        out = [flat] * x.ndim
    if fill_value is not None:
        fills = fill_value if np.ndim(fill_value) else (fill_value,) * x.ndim
        if len(fills) != x.ndim:
            raise TracingValueError(located(f"nonzero: fill_value must be a scalar or have one value per "
                                            f"dimension ({x.ndim}), got {fill_value!r}"))
        filled_tail = el.greater_equal(arange(size), count_true(mask))
        out = [el.where(filled_tail, f, o) for f, o in zip(fills, out)]
    return tuple(out)


def argwhere(a, *, size=None, fill_value=None):
    """jnp.argwhere: i64[count, ndim], the indices of the nonzero elements (a 0-d array as 1-d)."""
    if not shape_of(a):
        size = result_size(size, "argwhere", [a], lambda: np.count_nonzero(np.asarray(a)))
        return zeros((size, 0), DEFAULT_INT)
    return sh.stack(nonzero(a, size=size, fill_value=fill_value), axis=1)  # a, not a tracer: its count is known


def flatnonzero(a, *, size=None, fill_value=None):
    """jnp.flatnonzero: i64 indices of the nonzero elements of the flattened array."""
    return nonzero(flattened(a), size=size, fill_value=fill_value)[0]


def extract(condition, arr, *, size=None, fill_value=0):
    """jnp.extract: the elements of arr where condition (both flattened) is nonzero."""
    return compress(flattened(condition), sh.ravel(arr), size=size, fill_value=fill_value)


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """jnp.compress: the slices of a along axis (flattened if None) where the 1-d condition is true.

    A condition shorter than the axis selects from its first elements; a longer one must be false
    beyond the axis (as numpy: only its true entries count)."""
    red.reject_out("compress", out)
    given = condition
    condition = el.truth(asarray(condition))
    if condition.ndim != 1:
        raise TracingValueError(located(f"compress: condition must be 1-d, got shape {condition.shape}"))
    x = asarray(a)
    if axis is None:
        x, axis = sh.ravel(x), 0
    axis = canonical_axis(axis, x.ndim)
    n = x.shape[axis]
    if condition.shape[0] > n:
        condition = getitem(condition, slice(0, n))  # JAX keeps the first n entries
    elif condition.shape[0] < n:
        condition = sh.pad(condition, (0, n - condition.shape[0]))
    size = result_size(size, "compress", [given], lambda: np.count_nonzero(np.asarray(given)[:n]))
    moved = sh.moveaxis(x, axis, 0)
    return sh.moveaxis(packed(condition, moved, size, fill_value), 0, axis)


# ---- take / put -------------------------------------------------------------------------------

TAKE_MODES = (None, "fill", "clip", "wrap", "promise_in_bounds")


def default_fill(dtype: str):
    """JAX's fill for out-of-bounds reads: NaN for inexact types, the minimum signed integer,
    the maximum unsigned one, True for bools."""
    if is_inexact(dtype):
        return np.nan
    if is_bool(dtype):
        return True
    info = np.iinfo(NUMPY_DTYPES[dtype])
    return info.min if info.min < 0 else info.max


def indices_in_bounds(name: str, indices: Tracer, n: int, mode) -> tuple[Tracer, Tracer | None]:
    """(indices made non-negative and in [0, n), the bool mask of those that were valid, for 'fill')."""
    if mode not in TAKE_MODES:
        raise TracingValueError(located(f"{name}: mode {mode!r} is not one of {', '.join(map(repr, TAKE_MODES))}"))
    if not is_integer(indices.type.dtype):
        raise TracingTypeError(located(f"{name}: indices must be integers, got {indices.type}"))
    indices = convert(indices, DEFAULT_INT)
    if mode == "wrap":
        return el.remainder(indices, max(n, 1)), None
    if mode == "clip":
        return el.clip(indices, 0, max(n - 1, 0)), None
    valid = el.logical_and(el.greater_equal(indices, -n), el.less(indices, n))
    wrapped = el.where(el.less(indices, 0), el.add(indices, n), indices)
    return el.clip(wrapped, 0, max(n - 1, 0)), (None if mode == "promise_in_bounds" else valid)


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False, indices_are_sorted=False,
         fill_value=None):
    """jnp.take: elements of a (flattened if axis is None) at indices along axis; out-of-bounds
    indices give fill_value (default: NaN, or the integer extreme) unless mode is 'clip' or 'wrap'."""
    red.reject_out("take", out)
    x = asarray(a)
    if axis is None:
        x, axis = sh.ravel(x), 0
    axis = canonical_axis(axis, x.ndim)
    idx = asarray(indices)
    n = x.shape[axis]
    idx, valid = indices_in_bounds("take", idx, n, mode)
    if n == 0:
        if valid is not None and idx.size:
            raise TracingValueError(located(f"take: cannot take from the empty axis {axis} of shape {x.shape}"))
        idx = convert(idx, DEFAULT_INT)
    result = getitem(x, (slice(None),) * axis + (idx,))
    if valid is None:
        return result
    valid = lax_shape.broadcast_in_dim(valid, result.shape, tuple(range(axis, axis + idx.ndim)))
    fill = default_fill(x.type.dtype) if fill_value is None else fill_value
    return el.where(valid, result, convert(asarray(fill), x.type.dtype, x.weak_type))


def along_axis_index(name: str, arr: Tracer, indices: Tracer, axis: int) -> tuple:
    """The index tuple arr[...] of take_along_axis: iotas on the other axes, broadcast with indices."""
    if indices.ndim != arr.ndim:
        raise TracingValueError(located(f"{name}: indices (shape {indices.shape}) and arr (shape {arr.shape}) "
                                        f"must have the same number of dimensions"))
    shape = broadcast_shapes(*(tuple(1 if i == axis else d for i, d in enumerate(s)) for s in (arr.shape,
                                                                                             indices.shape)),
                             what=f"{name}: arr and indices outside the axis")
    shape = tuple(indices.shape[axis] if i == axis else d for i, d in enumerate(shape))
    index = []
    for d in range(arr.ndim):
        if d == axis:
            index.append(el.broadcast_in_dims(indices, shape, tuple(range(arr.ndim))) if indices.shape != shape
                         else indices)
        else:
            index.append(lax_shape.broadcasted_iota(DEFAULT_INT, tuple(s if i == d else 1 for i, s in enumerate(shape)),
                                                    d))
    return tuple(index)


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
    """jnp.take_along_axis: arr's elements at indices along axis (axis=None: the flattened array);
    out-of-bounds indices give fill_value (NaN or the integer extreme) unless mode is 'clip'/'wrap'."""
    x = asarray(arr)
    idx = asarray(indices)
    if axis is None:
        x, axis = sh.ravel(x), 0
        idx = sh.ravel(idx)
    axis = canonical_axis(axis, x.ndim)
    idx, valid = indices_in_bounds("take_along_axis", idx, x.shape[axis], mode)
    result = getitem(x, along_axis_index("take_along_axis", x, idx, axis))
    if valid is None:
        return result
    fill = default_fill(x.type.dtype) if fill_value is None else fill_value
    return el.where(sh.broadcast_to(valid, result.shape), result, convert(asarray(fill), x.type.dtype, x.weak_type))


def reject_inplace(name: str, inplace: bool):
    if inplace:
        raise TracingValueError(located(f"{name}: JAX arrays are immutable; pass inplace=False to get the "
                                        f"updated array as the result"))


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    """jnp.put_along_axis (inplace=False): arr with values written at indices along axis."""
    reject_inplace("put_along_axis", inplace)
    x = asarray(arr)
    idx = asarray(indices)
    if axis is None:
        flat = put_along_axis(sh.ravel(x), sh.ravel(idx), sh.ravel(values), 0, False, mode=mode)
        return sh.reshape(flat, x.shape)
    axis = canonical_axis(axis, x.ndim)
    idx = el.where(el.less(idx, 0), el.add(convert(idx, DEFAULT_INT), x.shape[axis]), idx)
    index = along_axis_index("put_along_axis", x, idx, axis)
    return scatter(x, index, values, "set", mode=mode)


def put(a, ind, v, mode=None, *, inplace=True):
    """jnp.put (inplace=False): a with the flat positions ind set to v (v repeated as needed)."""
    reject_inplace("put", inplace)
    x = asarray(a)
    idx = sh.ravel(asarray(ind))
    values = sh.ravel(asarray(v))
    if mode not in (None, "fill", "clip", "wrap", "raise"):
        raise TracingValueError(located(f"put: mode {mode!r} is not one of None, 'fill', 'clip', 'wrap'"))
    if mode == "raise":
        raise NotImplementedError(located("put: mode='raise' is not supported (as in JAX)"))
    if idx.size == 0:
        return x
    if values.size == 0:
        raise TracingValueError(located("put: cannot put an empty array of values at nonempty indices"))
    values = resize(values, idx.shape)
    if mode == "wrap":
        idx = el.remainder(idx, max(x.size, 1))
    elif mode == "clip":
        idx = el.clip(idx, 0, max(x.size - 1, 0))
    else:
        idx = el.where(el.less(idx, 0), el.add(convert(idx, DEFAULT_INT), x.size), idx)
    return sh.reshape(scatter(sh.ravel(x), idx, values, "set", mode="drop"), x.shape)


def place(arr, mask, vals, *, inplace=True):
    """jnp.place (inplace=False): arr with its masked elements set to vals, in order, repeated as needed."""
    reject_inplace("place", inplace)
    x = asarray(arr)
    mask = sh.ravel(el.truth(asarray(mask)))
    if mask.size != x.size:
        raise TracingValueError(located(f"place: mask (size {mask.size}) and arr (shape {x.shape}) must have "
                                        f"the same size"))
    values = sh.ravel(asarray(vals))
    if values.size == 0:
        raise TracingValueError(located("place: vals must be nonempty"))
    positions = packed(mask, arange(x.size), x.size, x.size)  # masked positions, then x.size (dropped)
    values = resize(values, (x.size,))
    return sh.reshape(scatter(sh.ravel(x), positions, values, "set", mode="drop"), x.shape)


# ---- choosing between arrays ------------------------------------------------------------------

def choose(a, choices, out=None, mode="raise"):
    """jnp.choose: choices[a[i]][i], everything broadcast; mode 'raise' needs concrete a (as JAX)."""
    red.reject_out("choose", out)
    if mode not in ("raise", "wrap", "clip"):
        raise TracingValueError(located(f"choose: mode {mode!r} is not one of 'raise', 'wrap', 'clip'"))
    n = len(choices)
    if mode == "raise":
        if isinstance(a, Tracer):
            raise ConcretizationError(located(
                "choose: mode='raise' checks the indices, which are traced; use mode='wrap' or 'clip' under jit"))
        if np.any((np.asarray(a) < 0) | (np.asarray(a) >= n)):
            raise TracingValueError(located(f"choose: invalid entry in choice array (outside [0, {n}))"))
    idx = asarray(a)
    if not is_integer(idx.type.dtype):
        raise TracingTypeError(located(f"choose: a must be integers, got {idx.type}"))
    idx = el.remainder(idx, n) if mode == "wrap" else el.clip(idx, 0, n - 1)
    promoted = promote_args("choose", *choices)
    shape = broadcast_shapes(idx.shape, promoted[0].shape, what="choose: a and choices")
    result = sh.broadcast_to(promoted[0], shape)
    idx = sh.broadcast_to(idx, shape)
    for i in range(1, n):
        result = el.where(el.equal(idx, i), promoted[i], result)
    return result


def select(condlist, choicelist, default=0):
    """jnp.select: where the first true condition of condlist holds, its choice; else default."""
    if len(condlist) != len(choicelist):
        raise TracingValueError(located(f"select: condlist and choicelist must be equally long, got "
                                        f"{len(condlist)} and {len(choicelist)}"))
    if not condlist:
        raise TracingValueError(located("select: condlist must be nonempty"))
    conditions = [asarray(c) for c in condlist]
    for c in conditions:
        if not is_bool(c.type.dtype):
            raise TracingTypeError(located(f"select: condlist entries must be bool arrays, got {c.type}"))
    default, *choices = promote_args("select", default, *choicelist)
    result = default
    for condition, choice in zip(reversed(conditions), reversed(choices)):
        result = el.where(condition, choice, result)
    return result


def piecewise(x, condlist, funclist, *args, **kw):
    """jnp.piecewise: funclist[i] (a function of x, or a constant) where condlist[i] holds (the last
    true condition wins); an extra function is the default where none holds, else 0.

    Each function is applied to the whole of x and its result selected; as in numpy and JAX the
    functions are meant elementwise. The result has x's dtype."""
    x = asarray(x)
    if isinstance(condlist, (Tracer, np.ndarray)) and np.ndim(condlist) == x.ndim and x.ndim:
        condlist = [condlist]
    conditions = [el.truth(asarray(c)) for c in condlist]
    nc, nf = len(conditions), len(funclist)
    if nf == nc + 1:
        default, funclist = funclist[-1], funclist[:-1]
    elif nf == nc:
        default = 0
    else:
        raise TracingValueError(located(f"piecewise: with {nc} condition(s), either {nc} or {nc + 1} functions "
                                        f"are expected; got {nf}"))

    def value(f):
        out = f(x, *args, **kw) if callable(f) else f
        return sh.broadcast_to(convert(asarray(out), x.type.dtype, x.weak_type), x.shape)

    result = value(default)
    for condition, f in zip(conditions, funclist):
        result = el.where(condition, value(f), result)
    return result


# ---- index builders ------------------------------------------------------------------------------

def band_indices(name: str, n, k, m, comparison) -> tuple[Tracer, Tracer]:
    """The (row, column) indices of the elements kept by tril/triu, row by row."""
    n = static_int(n, f"{name} n")
    m = n if m is None else static_int(m, f"{name} m")
    k = static_int(k, f"{name} k")
    rows = np.arange(n)[:, None]
    cols = np.arange(m)[None, :]
    count = int(np.count_nonzero(comparison(cols - rows, k)))  # a static size: counted from n, m and k
    mask = tri(n, m, k, dtype=bool) if comparison is np.less_equal else el.logical_not(tri(n, m, k - 1, dtype=bool))
    return nonzero(mask, size=count)


def tril_indices(n, k=0, m=None):
    """jnp.tril_indices: row and column indices of the lower triangle (diagonal k and below)."""
    return band_indices("tril_indices", n, k, m, np.less_equal)


def triu_indices(n, k=0, m=None):
    """jnp.triu_indices: row and column indices of the upper triangle (diagonal k and above)."""
    return band_indices("triu_indices", n, k, m, np.greater_equal)


def matrix_of(name: str, arr) -> tuple[int, int]:
    shape = shape_of(arr)
    if len(shape) != 2:
        raise TracingValueError(located(f"{name}: only 2-d inputs are supported, got shape {shape}"))
    return shape


def tril_indices_from(arr, k=0):
    n, m = matrix_of("tril_indices_from", arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr, k=0):
    n, m = matrix_of("triu_indices_from", arr)
    return triu_indices(n, k, m)


def diag_indices(n, ndim=2):
    """jnp.diag_indices: ndim copies of arange(n)."""
    n, ndim = static_int(n, "diag_indices n"), static_int(ndim, "diag_indices ndim")
    if n < 0 or ndim < 0:
        raise TracingValueError(located(f"diag_indices: n ({n}) and ndim ({ndim}) must be non-negative"))
    return (arange(n),) * ndim


def diag_indices_from(arr):
    shape = shape_of(arr)
    if len(shape) < 2 or len(set(shape)) != 1:
        raise TracingValueError(located(f"diag_indices_from: the input must be at least 2-d with all dimensions "
                                        f"equal, got shape {shape}"))
    return diag_indices(shape[0], len(shape))


def mask_indices(n, mask_func, k=0, *, size=None):
    """jnp.mask_indices: the indices where mask_func(ones((n, n)), k) is nonzero."""
    n = static_int(n, "mask_indices n")
    mask = mask_func(ones((n, n), dtype=bool), k)
    return nonzero(mask, size=size)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """jnp.fill_diagonal (inplace=False): a with its main diagonal set to val (repeated as needed)."""
    reject_inplace("fill_diagonal", inplace)
    x = asarray(a)
    if x.ndim < 2:
        raise TracingValueError(located(f"fill_diagonal: the array must be at least 2-d, got shape {x.shape}"))
    if x.ndim > 2 and len(set(x.shape)) != 1:
        raise TracingValueError(located(f"fill_diagonal: all dimensions of a >2-d array must be equal, got "
                                        f"{x.shape}"))
    n = min(x.shape)
    if x.ndim == 2 and wrap:  # the diagonal continues below after every n + 1 rows
        step = x.shape[1] + 1
        count = (x.size + step - 1) // step if x.shape[0] > x.shape[1] else n
        flat = arange(0, count * step, step)
    else:
        flat = el.multiply(arange(n), sum(math.prod(x.shape[i + 1:]) for i in range(x.ndim)))
    values = resize(sh.ravel(asarray(val)), flat.shape) if flat.size else sh.ravel(asarray(val))[:0]
    return sh.reshape(scatter(sh.ravel(x), flat, values, "set", mode="drop"), x.shape)


def unravel_index(indices, shape):
    """jnp.unravel_index: the coordinates of flat indices in an array of `shape`; as JAX, negative
    indices count from the end and out-of-bounds ones are clipped."""
    dims = static_shape(shape, "unravel_index shape")
    idx = asarray(indices)
    if not is_integer(idx.type.dtype):
        raise TracingTypeError(located(f"unravel_index: indices must be integers, got {idx.type}"))
    total = math.prod(dims)
    if total == 0:
        raise TracingValueError(located(f"unravel_index: cannot unravel into the empty shape {dims}"))
    idx = convert(idx, DEFAULT_INT) if idx.type.dtype != DEFAULT_INT and NUMPY_DTYPES[idx.type.dtype].itemsize < 8 \
        else idx
    idx = el.clip(el.where(el.less(idx, 0), el.add(idx, total), idx), 0, total - 1)
    out = []
    for i, d in enumerate(dims):
        stride = math.prod(dims[i + 1:])
        out.append(el.remainder(el.floor_divide(idx, stride), d))
    return tuple(out)


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """jnp.ravel_multi_index: flat indices of coordinates in an array of shape dims; mode 'raise'
    needs concrete coordinates (as JAX); 'wrap' and 'clip' work traced."""
    dims = static_shape(dims, "ravel_multi_index dims")
    if len(multi_index) != len(dims):
        raise TracingValueError(located(f"ravel_multi_index: {len(multi_index)} coordinate arrays for "
                                        f"{len(dims)} dimensions"))
    if order not in ("C", "F"):
        raise TracingValueError(located(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}"))
    if mode not in ("raise", "wrap", "clip"):
        raise TracingValueError(located(f"ravel_multi_index: mode {mode!r} is not one of 'raise', 'wrap', 'clip'"))
    coords = [asarray(c) for c in multi_index]
    for c in coords:
        if not is_integer(c.type.dtype):
            raise TracingTypeError(located(f"ravel_multi_index: coordinates must be integers, got {c.type}"))
    if mode == "raise":
        if any(isinstance(c, Tracer) for c in multi_index):
            raise ConcretizationError(located("ravel_multi_index: mode='raise' checks the coordinates, which are "
                                              "traced; use mode='wrap' or 'clip' under jit"))
        for c, d in zip(multi_index, dims):
            if np.any((np.asarray(c) < 0) | (np.asarray(c) >= d)):
                raise TracingValueError(located(f"ravel_multi_index: invalid entry in coordinates (outside [0, {d}))"))
    coords = [convert(c, DEFAULT_INT) for c in coords]
    if mode == "wrap":
        coords = [el.remainder(c, d) for c, d in zip(coords, dims)]
    else:
        coords = [el.clip(c, 0, d - 1) for c, d in zip(coords, dims)]
    order_dims = list(range(len(dims))) if order == "C" else list(reversed(range(len(dims))))
    result = zeros((), DEFAULT_INT)
    stride = 1
    for i in reversed(order_dims):
        result = el.add(result, el.multiply(coords[i], stride))
        stride *= dims[i]
    return result


def ix_(*args):
    """jnp.ix_: 1-d index arrays reshaped to broadcast as an open mesh."""
    out = []
    for i, a in enumerate(args):
        x = asarray(a)
        if x.ndim != 1:
            raise TracingValueError(located(f"ix_: arguments must be 1-d, got shape {x.shape}"))
        if is_bool(x.type.dtype):
            raise TracingTypeError(located("ix_: boolean arguments are not supported (their size depends on "
                                           "their values)"))
        out.append(sh.reshape(x, tuple(-1 if j == i else 1 for j in range(len(args)))))
    return tuple(out)


# ---- index expressions -----------------------------------------------------------------------------

class IndexExpression:
    """s_ and index_exp: `s_[1:3, ::2]` is the index tuple itself (s_ keeps a lone item bare)."""

    def __init__(self, maketuple: bool):
        self.maketuple = maketuple

    def __getitem__(self, item):
        if self.maketuple and not isinstance(item, tuple):
            return (item,)
        return item


s_ = IndexExpression(maketuple=False)
index_exp = IndexExpression(maketuple=True)


class AxisConcatenator:
    """r_ / c_: concatenation along an axis, with slices as ranges (a complex step: a point count).

    A leading string sets "axis", "axis,ndmin" or "axis,ndmin,trans1d" (numpy's directive), or
    'r'/'c' for a row / column matrix."""

    def __init__(self, axis: int, ndmin: int, trans1d: int, name: str):
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key):
        items = list(key) if isinstance(key, tuple) else [key]
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        matrix = None
        if items and isinstance(items[0], str):
            directive = items.pop(0)
            if directive in ("r", "c"):
                matrix = directive
            else:
                try:
                    parts = [int(p) for p in directive.split(",")]
                except ValueError:
                    raise TracingValueError(located(f"{self.name}: bad directive {directive!r}")) from None
                axis, ndmin, trans1d = (parts + [ndmin, trans1d][len(parts) - 1:])[:3]
        arrays = []
        for item in items:
            if isinstance(item, slice):
                x = self.slice_values(item)
            elif isinstance(item, str):
                raise TracingValueError(located(f"{self.name}: a string is only allowed first, got {item!r}"))
            else:
                x = asarray(item)
            if x.ndim < ndmin:
                x = self.promote_rank(x, ndmin, trans1d)
            arrays.append(x)
        result = sh.concatenate(arrays, axis=axis) if arrays else zeros((0,))
        if matrix is not None:
            result = sh.reshape(result, (1, -1) if matrix == "r" else (-1, 1))
        return result

    def slice_values(self, item: slice) -> Tracer:
        from .creation import linspace
        start = 0 if item.start is None else item.start
        step = 1 if item.step is None else item.step
        if isinstance(step, complex):
            return linspace(start, item.stop, int(abs(step)))
        return arange(start, item.stop, step)

    @staticmethod
    def promote_rank(x: Tracer, ndmin: int, trans1d: int) -> Tracer:
        """numpy's rule: leading 1s up to ndmin dims, then the array's own dims moved to start at
        trans1d (counted from the end when negative)."""
        item_ndim = x.ndim
        x = sh.reshape(x, (1,) * (ndmin - x.ndim) + x.shape)
        if trans1d == -1:
            return x
        k2 = ndmin - item_ndim
        k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
        axes = list(range(ndmin))
        return sh.transpose(x, axes[:k1] + axes[k2:] + axes[k1:k2])


r_ = AxisConcatenator(0, 1, -1, "r_")
c_ = AxisConcatenator(-1, 2, 0, "c_")
