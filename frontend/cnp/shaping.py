"""Shape operations, as jax.numpy: reshape, transposes, broadcasting, joining and splitting, flips and
rolls, tile/repeat, pad, triangles and diagonals, atleast_Nd, append/insert/delete.

All sizes, axes and split points are static (Python ints), as in JAX; roll's shift may be traced.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import ConcretizationError, TracingTypeError, TracingValueError
from .. import lax_elementwise as lax
from .. import lax_shape
from ..indexing import getitem
from ..lax_elementwise import static_int
from ..tracing import Tracer, bind1, constant, located
from . import base
from .base import DEFAULT_INT, canonical_axes, canonical_axis, convert, result_type, shape_of, to_dtype_name
from .creation import asarray, diagonal_band, filled, static_shape, zeros_like

__all__ = ["reshape", "ravel", "transpose", "permute_dims", "moveaxis", "swapaxes", "broadcast_to", "broadcast_arrays",
           "broadcast_shapes", "expand_dims", "squeeze", "concatenate", "concat", "stack", "hstack", "vstack",
           "row_stack", "dstack", "column_stack", "split", "array_split", "hsplit", "vsplit", "dsplit", "flip",
           "fliplr", "flipud", "roll", "rot90", "tile", "repeat", "pad", "triu", "tril", "diag", "diagonal",
           "atleast_1d", "atleast_2d", "atleast_3d", "ndim", "shape", "size", "copy", "append", "insert", "delete"]


# ---- static arguments ------------------------------------------------------------------------------

def static_value(value, what: str):
    """A concrete (numpy) value of an argument that fixes shapes; a tracer is a ConcretizationError."""
    if isinstance(value, Tracer):
        raise ConcretizationError(located(f"{what} must be static (a concrete value), got a traced {value.type}"))
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tracer) for v in value):
        raise ConcretizationError(located(f"{what} must be static, got traced values in {value!r}"))
    return value


def int_list(value, what: str) -> list[int]:
    """An int or a sequence of ints as a list."""
    value = static_value(value, what)
    if np.ndim(value) == 0:
        return [static_int(value, what)]
    return [static_int(v, what) for v in np.asarray(value).ravel()]


def requested_shape(shape, size: int, x_shape) -> tuple[int, ...]:
    """reshape's shape argument, with one -1 inferred from the size."""
    dims = int_list(shape, "reshape shape")
    unknown = [i for i, d in enumerate(dims) if d == -1]
    known = math.prod(d for d in dims if d != -1)
    if unknown:
        valid = len(unknown) == 1 and known > 0 and size % known == 0
    else:
        valid = known == size
    if not valid or any(d < -1 for d in dims):
        raise TracingValueError(located(
            f"reshape: cannot reshape an array of shape {tuple(x_shape)} (size {size}) into shape {tuple(dims)}"))
    if unknown:
        dims[unknown[0]] = size // known
    return tuple(dims)


# ---- reshaping and reordering dimensions -------------------------------------------------------------

def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """jnp.reshape (row-major only); one dimension may be -1."""
    if newshape is not None:
        shape = newshape
    if shape is None:
        raise TracingTypeError(located("reshape: a shape is required"))
    if order != "C":
        raise NotImplementedError(located(f"reshape with order={order!r}: only order='C' is supported"))
    x = asarray(a)
    return lax_shape.reshape(x, requested_shape(shape, x.size, x.shape))


def ravel(a, order="C"):
    return reshape(a, -1, order)


def transpose(a, axes=None):
    x = asarray(a)
    if axes is None:
        return lax_shape.transpose(x, tuple(reversed(range(x.ndim))))
    perm = tuple(canonical_axis(ax, x.ndim) for ax in int_list(axes, "transpose axes"))
    if sorted(perm) != list(range(x.ndim)):
        raise TracingValueError(located(f"transpose: axes {axes!r} are not a permutation of the {x.ndim} "
                                        f"dimensions of an array of shape {x.shape}"))
    return lax_shape.transpose(x, perm)


def permute_dims(a, axes):
    return transpose(a, axes)


def moveaxis(a, source, destination):
    x = asarray(a)
    sources = [canonical_axis(s, x.ndim, "source") for s in int_list(source, "moveaxis source")]
    destinations = [canonical_axis(d, x.ndim, "destination") for d in int_list(destination, "moveaxis destination")]
    if len(sources) != len(destinations) or len(set(sources)) != len(sources) or len(set(destinations)) != len(
            destinations):
        raise TracingValueError(located(f"moveaxis: source {source!r} and destination {destination!r} must be "
                                        f"equally many distinct axes"))
    rest = iter([d for d in range(x.ndim) if d not in sources])
    placed = dict(zip(destinations, sources))
    return lax_shape.transpose(x, tuple(placed[d] if d in placed else next(rest) for d in range(x.ndim)))


def swapaxes(a, axis1, axis2):
    x = asarray(a)
    perm = list(range(x.ndim))
    i, j = canonical_axis(axis1, x.ndim, "axis1"), canonical_axis(axis2, x.ndim, "axis2")
    perm[i], perm[j] = j, i
    return lax_shape.transpose(x, tuple(perm))


def broadcast_shapes(*shapes):
    return base.broadcast_shapes(*(static_shape(s, "broadcast_shapes") for s in shapes))


def broadcast_to(array, shape):
    return base.broadcast_to(asarray(array), static_shape(shape, "broadcast_to"))


def broadcast_arrays(*args):
    arrays = [asarray(a) for a in args]
    target = base.broadcast_shapes(*(x.shape for x in arrays), what="broadcast_arrays: arguments")
    return [base.broadcast_to(x, target) for x in arrays]


def expand_dims(a, axis):
    x = asarray(a)
    axes = int_list(axis, "expand_dims axis")
    return lax_shape.expand_dims(x, canonical_axes(axes, x.ndim + len(axes)))


def squeeze(a, axis=None):
    x = asarray(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = canonical_axes(int_list(axis, "squeeze axis"), x.ndim)
    wide = [ax for ax in axes if x.shape[ax] != 1]
    if wide:
        raise TracingValueError(located(
            f"squeeze: axis {wide[0]} of an array of shape {x.shape} has size {x.shape[wide[0]]}, not 1"))
    return lax_shape.reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def atleast(ndim: int, arys):
    """atleast_Nd: 0-d -> (1,)*n, 1-d (n,) -> (1, n) or (1, n, 1), 2-d (m, n) -> (m, n, 1) for n = 3."""
    results = []
    for a in arys:
        x = asarray(a)
        if x.ndim < ndim:
            padded = {0: (1,) * ndim, 1: (1,) + x.shape + (1,) * (ndim - 2), 2: x.shape + (1,)}[x.ndim]
            x = lax_shape.reshape(x, padded)
        results.append(x)
    return results[0] if len(results) == 1 else results


def atleast_1d(*arys):
    return atleast(1, arys)


def atleast_2d(*arys):
    return atleast(2, arys)


def atleast_3d(*arys):
    return atleast(3, arys)


# ---- joining -----------------------------------------------------------------------------------------

def sequence_items(name: str, arrays) -> list:
    if isinstance(arrays, Tracer):
        return list(arrays)
    items = list(arrays)
    if not items:
        raise TracingValueError(located(f"{name}: need at least one array"))
    return items


def promoted(items, dtype=None) -> list[Tracer]:
    """The items as tracers of their common (JAX-promoted) dtype, or of `dtype`."""
    target, weak = result_type(*items) if dtype is None else (to_dtype_name(dtype), False)
    return [convert(asarray(a), target, weak) for a in items]


def concatenate(arrays, axis=0, dtype=None):
    tracers = promoted(sequence_items("concatenate", arrays), dtype)
    if axis is None:
        tracers, axis = [ravel(t) for t in tracers], 0
    first = tracers[0]
    if first.ndim == 0:
        raise TracingValueError(located("concatenate: zero-dimensional arrays cannot be concatenated"))
    axis = canonical_axis(axis, first.ndim)
    for t in tracers:
        if t.ndim != first.ndim or t.shape[:axis] + t.shape[axis + 1:] != first.shape[:axis] + first.shape[axis + 1:]:
            raise TracingValueError(located(
                f"concatenate: shapes {', '.join(str(u.shape) for u in tracers)} differ outside axis {axis}"))
    return lax_shape.concatenate(tracers, axis)


def concat(arrays, /, *, axis=0):
    return concatenate(arrays, axis)


def stack(arrays, axis=0, out=None, dtype=None):
    tracers = promoted(sequence_items("stack", arrays), dtype)
    if len({t.shape for t in tracers}) > 1:
        raise TracingValueError(located(
            f"stack: all arrays must have the same shape, got {', '.join(str(t.shape) for t in tracers)}"))
    axis = canonical_axis(axis, tracers[0].ndim + 1)
    return lax_shape.concatenate([lax_shape.expand_dims(t, (axis,)) for t in tracers], axis)


def hstack(tup, dtype=None):
    tracers = [atleast_1d(a) for a in sequence_items("hstack", tup)]
    return concatenate(tracers, 0 if tracers[0].ndim == 1 else 1, dtype)


def vstack(tup, dtype=None):
    return concatenate([atleast_2d(a) for a in sequence_items("vstack", tup)], 0, dtype)


row_stack = vstack


def dstack(tup, dtype=None):
    return concatenate([atleast_3d(a) for a in sequence_items("dstack", tup)], 2, dtype)


def column_stack(tup):
    """1-d arrays become columns; others are joined along axis 1."""
    columns = []
    for a in sequence_items("column_stack", tup):
        x = asarray(a)
        columns.append(lax_shape.reshape(x, (x.size, 1)) if x.ndim < 2 else x)
    return concatenate(columns, 1)


def append(arr, values, axis=None):
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


# ---- splitting ----------------------------------------------------------------------------------------

def split_bounds(name: str, size: int, indices_or_sections, equal: bool) -> list[tuple[int, int]]:
    """(start, stop) of each piece, as numpy.split / array_split cut an axis of `size`."""
    value = static_value(indices_or_sections, f"{name} indices_or_sections")
    if np.ndim(value) == 0:
        sections = static_int(value, f"{name} sections")
        if sections <= 0:
            raise TracingValueError(located(f"{name}: number of sections must be larger than 0, got {sections}"))
        if equal and size % sections:
            raise TracingValueError(located(
                f"{name}: an axis of size {size} does not split into {sections} equal sections"))
        small, extra = divmod(size, sections)
        stops = np.cumsum([small + 1] * extra + [small] * (sections - extra))
        return list(zip([0, *stops[:-1].tolist()], stops.tolist()))
    cuts = int_list(value, f"{name} indices")
    bounds = [slice(lo, hi).indices(size)[:2] for lo, hi in zip([0, *cuts], [*cuts, size])]
    return [(lo, max(lo, hi)) for lo, hi in bounds]


def split_along(name: str, ary, indices_or_sections, axis, equal: bool) -> list[Tracer]:
    x = asarray(ary)
    axis = canonical_axis(axis, x.ndim)
    return [lax_shape.slice_in_dim(x, lo, hi, 1, axis)
            for lo, hi in split_bounds(name, x.shape[axis], indices_or_sections, equal)]


def split(ary, indices_or_sections, axis=0):
    return split_along("split", ary, indices_or_sections, axis, equal=True)


def array_split(ary, indices_or_sections, axis=0):
    return split_along("array_split", ary, indices_or_sections, axis, equal=False)


def directional_split(name: str, min_ndim: int, axis_for_ndim):
    def fn(ary, indices_or_sections):
        x = asarray(ary)
        if x.ndim < min_ndim:
            raise TracingValueError(located(f"{name} needs an array of at least {min_ndim} dimensions, got {x.shape}"))
        return split_along(name, x, indices_or_sections, axis_for_ndim(x.ndim), equal=True)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"jnp.{name}: split along axis {axis_for_ndim(3)} (numpy's rule for 1-d arrays)."
    return fn


hsplit = directional_split("hsplit", 1, lambda ndim: 0 if ndim == 1 else 1)
vsplit = directional_split("vsplit", 2, lambda ndim: 0)
dsplit = directional_split("dsplit", 3, lambda ndim: 2)


# ---- flips, rolls, rotations --------------------------------------------------------------------------

def flip(m, axis=None):
    x = asarray(m)
    axes = canonical_axes(None if axis is None else int_list(axis, "flip axis"), x.ndim)
    return lax_shape.rev(x, axes) if axes else x


def fliplr(m):
    x = asarray(m)
    if x.ndim < 2:
        raise TracingValueError(located(f"fliplr needs an array of at least 2 dimensions, got shape {x.shape}"))
    return flip(x, 1)


def flipud(m):
    x = asarray(m)
    if x.ndim < 1:
        raise TracingValueError(located("flipud needs an array of at least 1 dimension, got a 0-d array"))
    return flip(x, 0)


def roll_axis(x: Tracer, shift, axis: int) -> Tracer:
    size = x.shape[axis]
    if size == 0:
        return x
    if not isinstance(shift, Tracer):
        kept = size - static_int(shift, "roll shift") % size
        if kept == size:
            return x
        return lax_shape.concatenate([lax_shape.slice_in_dim(x, kept, size, 1, axis),
                                      lax_shape.slice_in_dim(x, 0, kept, 1, axis)], axis)
    if shift.ndim or shift.type.dtype not in ("i8", "i16", "i32", "i64", "u8", "u16", "u32"):
        raise TracingTypeError(located(f"roll: a traced shift must be an integer scalar, got {shift.type}"))
    # A window of the array repeated twice, starting at size - (shift mod size).
    remainder = lax.rem(convert(shift, DEFAULT_INT), size)
    remainder = lax.select(lax.lt(remainder, 0), lax.add(remainder, size), remainder)
    doubled = lax_shape.concatenate([x, x], axis)
    return lax_shape.dynamic_slice_in_dim(doubled, lax.sub(size, remainder), size, axis)


def roll(a, shift, axis=None):
    """jnp.roll: shifts and axes may be tuples (broadcast against each other); a scalar shift may be traced."""
    x = asarray(a)
    if axis is None:
        return lax_shape.reshape(roll(ravel(x), shift, 0), x.shape)
    shifts = list(shift) if isinstance(shift, (list, tuple)) else [shift]
    axes = int_list(axis, "roll axis")
    if len(shifts) != len(axes) and 1 not in (len(shifts), len(axes)):
        raise TracingValueError(located(f"roll: shift {shift!r} and axis {axis!r} must have matching lengths"))
    count = max(len(shifts), len(axes))
    for s, ax in zip(shifts * (count // len(shifts)), axes * (count // len(axes))):
        x = roll_axis(x, s, canonical_axis(ax, x.ndim))
    return x


def rot90(m, k=1, axes=(0, 1)):
    x = asarray(m)
    pair = int_list(axes, "rot90 axes")
    if x.ndim < 2 or len(pair) != 2:
        raise TracingValueError(located(f"rot90 needs two axes of an array of at least 2 dimensions, got {axes!r} "
                                        f"and shape {x.shape}"))
    first, second = (canonical_axis(ax, x.ndim) for ax in pair)
    if first == second:
        raise TracingValueError(located(f"rot90: axes {axes!r} must be different"))
    turns = static_int(k, "rot90 k") % 4
    if turns == 0:
        return x
    if turns == 2:
        return flip(x, (first, second))
    return flip(swapaxes(x, first, second), second) if turns == 3 else swapaxes(flip(x, second), first, second)


# ---- tile, repeat -----------------------------------------------------------------------------------

def tile(A, reps):
    """jnp.tile: one broadcast to (r0, d0, r1, d1, ...) and a reshape."""
    x = asarray(A)
    counts = int_list(reps, "tile reps")
    if any(r < 0 for r in counts):
        raise TracingValueError(located(f"tile: negative repetitions {tuple(counts)}"))
    ndim = max(x.ndim, len(counts))
    dims = (1,) * (ndim - x.ndim) + x.shape
    counts = [1] * (ndim - len(counts)) + counts
    interleaved = tuple(size for pair in zip(counts, dims) for size in pair)
    spread = lax_shape.broadcast_in_dim(lax_shape.reshape(x, dims), interleaved, tuple(range(1, 2 * ndim, 2)))
    return lax_shape.reshape(spread, tuple(r * d for r, d in zip(counts, dims)))


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """jnp.repeat with static repeats: an int (a broadcast and a reshape) or one count per element (a gather)."""
    x = asarray(a)
    if axis is None:
        x, axis = ravel(x), 0
    axis = canonical_axis(axis, x.ndim)
    counts = np.asarray(static_value(repeats, "repeat repeats"))
    if counts.dtype.kind not in "iub" or counts.ndim > 1 or np.any(counts < 0):
        raise TracingValueError(located(f"repeat: repeats must be non-negative integers, got {repeats!r}"))
    size = x.shape[axis]
    if counts.size not in (1, size):
        raise TracingValueError(located(f"repeat: {counts.size} repeats do not match axis {axis} of size {size}"))
    total = int(counts.sum()) if counts.size == size else int(counts.ravel()[0]) * size
    if total_repeat_length is not None and static_int(total_repeat_length, "total_repeat_length") != total:
        raise NotImplementedError(located(
            f"repeat: total_repeat_length={total_repeat_length} differs from the repeats' total {total}"))
    if counts.size == 1:
        times = int(counts.ravel()[0])
        spread_shape = x.shape[:axis + 1] + (times,) + x.shape[axis + 1:]
        dims = tuple(d if d <= axis else d + 1 for d in range(x.ndim))
        spread = lax_shape.broadcast_in_dim(x, spread_shape, dims)
        return lax_shape.reshape(spread, x.shape[:axis] + (size * times,) + x.shape[axis + 1:])
    return getitem(x, (slice(None),) * axis + (np.repeat(np.arange(size), counts),))


# ---- pad ----------------------------------------------------------------------------------------------

def reflect_source(p: np.ndarray, n: int) -> np.ndarray:
    """Mirror about the edge elements (period 2n - 2): ... 2 1 | 0 1 2 | 1 0 ..."""
    if n == 1:
        return np.zeros_like(p)
    phase = p % (2 * n - 2)
    return np.where(phase < n, phase, 2 * n - 2 - phase)


def symmetric_source(p: np.ndarray, n: int) -> np.ndarray:
    """Mirror including the edge elements (period 2n): ... 1 0 | 0 1 2 | 2 1 ..."""
    phase = p % (2 * n)
    return np.where(phase < n, phase, 2 * n - 1 - phase)


# For each index-based mode: the source index of padded position p (p = output index - low padding).
PAD_SOURCES = {
    "edge": lambda p, n: np.clip(p, 0, n - 1),
    "wrap": lambda p, n: p % n,
    "reflect": reflect_source,
    "symmetric": symmetric_source,
}
# The keyword options each mode takes (reflect_type only as its default, "even").
PAD_OPTIONS = {"constant": {"constant_values"}, "reflect": {"reflect_type"}, "symmetric": {"reflect_type"}}


def pad_pairs(value, ndim: int, what: str) -> np.ndarray:
    """numpy's forms (an int, a pair, one pair per axis, ...) broadcast to an (ndim, 2) array."""
    array = np.asarray(static_value(value, what))
    try:
        return np.broadcast_to(array, (ndim, 2))
    except ValueError:
        raise TracingValueError(located(f"pad: {what} {value!r} does not fit an array of {ndim} dimensions")) from None


def pad_constant(x: Tracer, widths: np.ndarray, constant_values) -> Tracer:
    """The fill takes x's dtype and weak type: jnp.pad of a weak array is weak, as lax.pad's operand decides."""
    if isinstance(constant_values, Tracer):
        if constant_values.ndim:
            raise NotImplementedError(located("pad: traced constant_values must be a scalar"))
        value = convert(constant_values, x.type.dtype, x.weak_type)
        return lax_shape.pad(x, value, [(int(lo), int(hi), 0) for lo, hi in widths])
    values = pad_pairs(constant_values, x.ndim, "constant_values")
    for axis, ((lo, hi), (lo_value, hi_value)) in enumerate(zip(widths, values)):
        for side, amount, fill in (("low", lo, lo_value), ("high", hi, hi_value)):
            if amount:
                config = [(0, 0, 0)] * x.ndim
                config[axis] = (int(amount), 0, 0) if side == "low" else (0, int(amount), 0)
                x = lax_shape.pad(x, filled((), fill, x.type.dtype, x.weak_type), config)
    return x


def pad(array, pad_width, mode="constant", **kwargs):
    """jnp.pad with modes constant, edge, wrap, reflect, symmetric and empty."""
    x = asarray(array)
    widths = pad_pairs(pad_width, x.ndim, "pad_width")
    if widths.dtype.kind not in "iu" or np.any(widths < 0):
        raise TracingValueError(located(f"pad: pad_width must be non-negative integers, got {pad_width!r}"))
    if not isinstance(mode, str) or mode not in (*PAD_SOURCES, "constant", "empty"):
        raise NotImplementedError(located(f"pad with mode={mode!r}: supported modes are constant, edge, wrap, "
                                          f"reflect, symmetric and empty"))
    unsupported = set(kwargs) - PAD_OPTIONS.get(mode, set())
    if unsupported or kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError(located(f"pad with mode={mode!r}: options {sorted(kwargs)} are not supported"))
    if mode in ("constant", "empty"):
        return pad_constant(x, widths, kwargs.get("constant_values", 0))
    for axis, (lo, hi) in enumerate(widths):
        if lo or hi:
            size = x.shape[axis]
            if size == 0:
                raise TracingValueError(located(f"pad: cannot extend the empty axis {axis} of an array of shape "
                                                f"{x.shape} with mode {mode!r}"))
            sources = PAD_SOURCES[mode](np.arange(-lo, size + hi), size)
            x = getitem(x, (slice(None),) * axis + (sources,))
    return x


# ---- triangles and diagonals --------------------------------------------------------------------------

def triangle(name: str, m, k, keep_lower: bool) -> Tracer:
    x = asarray(m)
    if x.ndim < 2:
        raise TracingValueError(located(f"{name} needs an array of at least 2 dimensions, got shape {x.shape}"))
    rows, cols = x.shape[-2:]
    k = static_int(k, f"{name} k")
    lower = diagonal_band(rows, cols, k if keep_lower else k - 1, lax.le)
    lower = lax_shape.broadcast_in_dim(lower, x.shape, (x.ndim - 2, x.ndim - 1))
    zeros = zeros_like(x)
    return lax.select(lower, x, zeros) if keep_lower else lax.select(lower, zeros, x)


def triu(m, k=0):
    return triangle("triu", m, k, keep_lower=False)


def tril(m, k=0):
    return triangle("tril", m, k, keep_lower=True)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """jnp.diagonal: the diagonal as a strided slice of the flattened (axis1, axis2) plane, moved last."""
    x = asarray(a)
    if x.ndim < 2:
        raise TracingValueError(located(f"diagonal needs an array of at least 2 dimensions, got shape {x.shape}"))
    first, second = canonical_axis(axis1, x.ndim, "axis1"), canonical_axis(axis2, x.ndim, "axis2")
    if first == second:
        raise TracingValueError(located(f"diagonal: axis1 and axis2 must differ, got {axis1} and {axis2}"))
    offset = static_int(offset, "diagonal offset")
    x = moveaxis(x, (first, second), (-2, -1))
    *batch, rows, cols = x.shape
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    start = offset if offset >= 0 else -offset * cols
    flat = lax_shape.reshape(x, (*batch, rows * cols))
    if length == 0:
        return lax_shape.slice_in_dim(flat, 0, 0, 1, -1)
    return lax_shape.slice_in_dim(flat, start, start + (length - 1) * (cols + 1) + 1, cols + 1, -1)


def diag(v, k=0):
    """jnp.diag: a 1-d array becomes a matrix with it on the k-th diagonal; a matrix gives its k-th diagonal."""
    x = asarray(v)
    k = static_int(k, "diag k")
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise TracingValueError(located(f"diag: input must be 1-d or 2-d, got shape {x.shape}"))
    size = x.shape[0] + abs(k)
    # out[r, c] = v[r] on the diagonal c - r = k >= 0, v[c] below the main diagonal.
    padded = pad_constant(x, np.array([[0, abs(k)]]), 0)
    spread = lax_shape.broadcast_in_dim(padded, (size, size), (0,) if k >= 0 else (1,))
    return lax.select(diagonal_band(size, size, k, lax.eq), spread, zeros_like(spread))


# ---- static properties, copy -------------------------------------------------------------------------

def ndim(a) -> int:
    return len(shape_of(a))


def shape(a) -> tuple[int, ...]:
    return shape_of(a)


def size(a, axis=None) -> int:
    dims = shape_of(a)
    return math.prod(dims) if axis is None else dims[canonical_axis(axis, len(dims))]


def copy(a, order=None):
    """jnp.copy: arrays are immutable values, so this is asarray."""
    return asarray(a)


# ---- insert, delete (static positions) ------------------------------------------------------------------

def take_flat(x: Tracer, positions: np.ndarray) -> Tracer:
    """x.ravel()[positions] for static in-bounds positions, as one gather."""
    flat = lax_shape.reshape(x, (x.size,))
    return bind1("gather", [flat, constant(positions[..., None], DEFAULT_INT)], weak_type=x.weak_type)


def static_positions(obj, what: str):
    obj = static_value(obj, what)
    return obj if isinstance(obj, slice) else np.asarray(obj)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """jnp.delete with static obj: numpy deletes from an array of labels, and the kept labels are gathered."""
    x = asarray(arr)
    labels = np.arange(x.size).reshape(x.shape)
    positions = static_positions(obj, "delete obj")
    try:
        kept = np.delete(labels, positions, axis)
    except (IndexError, ValueError, TypeError) as error:
        raise TracingValueError(located(f"delete from an array of shape {x.shape}: {error}")) from None
    return take_flat(x, kept)


def insert(arr, obj, values, axis=None):
    """jnp.insert with static obj: numpy inserts value labels (negative) among array labels, then both gather."""
    x = asarray(arr)
    inserted = convert(asarray(values), x.type.dtype, x.weak_type)
    array_labels = np.arange(x.size).reshape(x.shape)
    value_labels = -1 - np.arange(inserted.size).reshape(inserted.shape)
    positions = static_positions(obj, "insert obj")
    try:
        placed = np.insert(array_labels, positions, value_labels, axis)
    except (IndexError, ValueError, TypeError) as error:
        raise TracingValueError(located(f"insert into an array of shape {x.shape}: {error}")) from None
    from_array = take_flat(x, np.maximum(placed, 0))
    from_values = take_flat(inserted, np.maximum(-1 - placed, 0))
    return lax.select(constant(placed >= 0), from_array, from_values)
