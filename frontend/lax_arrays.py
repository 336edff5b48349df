"""cdnajit.lax array helpers built from the data-movement functions: split, stack, unstack, tile,
index_take, the broadcast helpers, empty, batch_matmul, and the host-side dtype and shape queries.
"""
from __future__ import annotations

import numpy as np

from ..errors import TracingTypeError, TracingValueError
from ..ir.types import NUMPY_DTYPES
from .cnp.base import broadcast_shapes as numpy_broadcast_shapes
from .cnp.base import canonical_axis, dtype_and_weak, to_dtype_name
from .lax_contract import dot_general
from .lax_elementwise import static_int, static_ints
from .lax_gather import GatherDimensionNumbers, GatherScatterMode, gather
from .lax_shape import broadcast_in_dim, concatenate, full, reshape, slice_in_dim
from .tracing import as_tracer, located

__all__ = ["split", "stack", "unstack", "tile", "index_take", "broadcast_shapes", "broadcast_to_rank", "broadcast_like",
           "empty", "dtype", "batch_matmul"]


def split(operand, sizes, axis=0):
    """jax.lax.split: consecutive pieces of the given sizes along axis (the sizes sum to its length)."""
    operand = as_tracer(operand)
    axis = canonical_axis(axis, operand.ndim, "lax.split axis")
    sizes = static_ints(sizes, "lax.split sizes")
    if sum(sizes) != operand.shape[axis] or any(size < 0 for size in sizes):
        raise TracingValueError(located(
            f"lax.split: sizes {list(sizes)} must be non-negative and sum to dimension {axis} of {operand.type}"))
    starts = np.cumsum((0,) + sizes)
    return [slice_in_dim(operand, int(start), int(start) + size, 1, axis) for start, size in zip(starts, sizes)]


def stack(operands, axis=0):
    """jax.lax.stack: operands of one shape and dtype joined along a new axis."""
    tracers = [as_tracer(x) for x in operands]
    if not tracers:
        raise TracingValueError(located("lax.stack needs at least one operand"))
    shapes = {t.shape for t in tracers}
    if len(shapes) > 1:
        raise TracingTypeError(located(f"lax.stack: operands must have one shape, got {sorted(shapes)}"))
    axis = canonical_axis(axis, tracers[0].ndim + 1, "lax.stack axis")
    shape = tracers[0].shape
    expanded = [reshape(t, shape[:axis] + (1,) + shape[axis:]) for t in tracers]
    return concatenate(expanded, axis)


def unstack(x, axis=0):
    """jax.lax.unstack: the slices of x along axis, as a tuple."""
    x = as_tracer(x)
    axis = canonical_axis(axis, x.ndim, "lax.unstack axis")
    rest = x.shape[:axis] + x.shape[axis + 1:]
    return tuple(reshape(slice_in_dim(x, i, i + 1, 1, axis), rest) for i in range(x.shape[axis]))


def tile(operand, reps):
    """jax.lax.tile: operand repeated reps[d] times along each dimension d (len(reps) = ndim)."""
    operand = as_tracer(operand)
    reps = static_ints(reps, "lax.tile reps")
    if len(reps) != operand.ndim or any(r < 0 for r in reps):
        raise TracingTypeError(located(
            f"lax.tile: reps {list(reps)} must be non-negative, one for each dimension of {operand.type}"))
    # Broadcast a new axis of length reps[d] before each dimension d, then merge the pairs.
    pairs = tuple(size for r, d in zip(reps, operand.shape) for size in (r, d))
    spread = broadcast_in_dim(operand, pairs, tuple(range(1, 2 * operand.ndim, 2)))
    return reshape(spread, tuple(r * d for r, d in zip(reps, operand.shape)))


def index_take(src, idxs, axes):
    """jax.lax.index_take: src[idxs[0], idxs[1], ...] with idxs[i] indexing axes[i] (clamped in
    bounds); the indexed axes become one leading axis and the others follow in order."""
    src = as_tracer(src)
    axes = tuple(canonical_axis(a, src.ndim, "lax.index_take axis") for a in static_ints(axes, "lax.index_take axes"))
    idxs = [as_tracer(i) for i in idxs]
    if len(idxs) != len(axes) or len({i.shape for i in idxs}) > 1 or any(i.ndim != 1 for i in idxs):
        raise TracingValueError(located(
            f"lax.index_take: needs one 1-D index array of one length per axis, got {len(idxs)} for axes {list(axes)}"))
    indices = concatenate([reshape(i, i.shape + (1,)) for i in idxs], 1) if idxs else full((0, 0), 0, "i64")
    rest = tuple(d for d in range(src.ndim) if d not in axes)
    dnums = GatherDimensionNumbers(offset_dims=tuple(range(1, len(rest) + 1)), collapsed_slice_dims=axes,
                                   start_index_map=axes)
    slice_sizes = tuple(1 if d in axes else src.shape[d] for d in range(src.ndim))
    return gather(src, indices, dnums, slice_sizes, mode=GatherScatterMode.CLIP)


def broadcast_shapes(*shapes):
    """jax.lax.broadcast_shapes: the numpy broadcast of static shapes (a host function)."""
    return numpy_broadcast_shapes(*(static_ints(s, "lax.broadcast_shapes shape") for s in shapes), what="shapes")


def broadcast_to_rank(x, rank):
    """jax.lax.broadcast_to_rank: leading size-1 dimensions up to `rank`."""
    x = as_tracer(x)
    rank = static_int(rank, "lax.broadcast_to_rank rank")
    return reshape(x, (1,) * max(rank - x.ndim, 0) + x.shape)


def broadcast_like(arr, like_arr):
    """jax.lax.broadcast_like: arr broadcast (numpy rules) to the shape of like_arr."""
    arr, like = as_tracer(arr), as_tracer(like_arr)
    shape = numpy_broadcast_shapes(arr.shape, like.shape)
    return broadcast_in_dim(arr, shape, tuple(range(len(shape) - arr.ndim, len(shape))))


def empty(shape, dtype, *, out_sharding=None):
    """jax.lax.empty: an array of shape and dtype whose contents are unspecified (zeros here)."""
    return full(shape, 0, dtype)


def dtype(x):
    """jax.lax.dtype: the numpy dtype an argument has under jit (Python scalars 64-bit)."""
    if isinstance(x, (type, np.dtype, str)):
        return NUMPY_DTYPES[to_dtype_name(x)]
    return NUMPY_DTYPES[dtype_and_weak(x)[0]]


def batch_matmul(lhs, rhs, precision=None):
    """jax.lax.batch_matmul: matrix products over matching leading batch dimensions."""
    lhs, rhs = as_tracer(lhs), as_tracer(rhs)
    if lhs.ndim < 2 or lhs.ndim != rhs.ndim or lhs.shape[:-2] != rhs.shape[:-2]:
        raise TracingTypeError(located(
            f"lax.batch_matmul: operands need one rank of at least 2 and equal batch dimensions, got {lhs.type} "
            f"and {rhs.type}"))
    batch = tuple(range(lhs.ndim - 2))
    return dot_general(lhs, rhs, (((lhs.ndim - 1,), (rhs.ndim - 2,)), (batch, batch)), precision)
