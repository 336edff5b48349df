"""cdnajit.lax data movement: broadcasts, iota, reshapes, static and dynamic slices, pad, concatenate.

Shape arguments are static Python ints, as in jax.lax; dynamic start indices may be traced
integer scalars (negative ones count from the end, then XLA clamps the slice in bounds).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import TracingTypeError, TracingValueError
from .cnp.base import canonical_axes, canonical_axis, convert, to_dtype_name
from .dtypes import is_integer
from .lax_elementwise import add, lt, select, static_int, static_ints, strict_dtype
from .tracing import Tracer, as_tracer, bind1, located

__all__ = ["broadcast_in_dim", "broadcast", "iota", "broadcasted_iota", "full", "full_like", "reshape", "transpose", "slice",
           "slice_in_dim", "index_in_dim", "dynamic_slice", "dynamic_slice_in_dim", "dynamic_index_in_dim",
           "dynamic_update_slice", "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim", "concatenate",
           "pad", "rev", "squeeze", "expand_dims", "collapse", "padtype_to_pads"]


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """jax.lax.broadcast_in_dim: operand dimension i becomes result dimension broadcast_dimensions[i]."""
    operand = as_tracer(operand)
    attrs = {"shape": static_ints(shape, "lax.broadcast_in_dim shape"),
             "broadcast_dimensions": static_ints(broadcast_dimensions, "lax.broadcast_in_dim broadcast_dimensions")}
    if attrs["shape"] == operand.shape and attrs["broadcast_dimensions"] == tuple(range(operand.ndim)):
        return operand
    return bind1("broadcast_in_dim", [operand], attrs, weak_type=operand.weak_type)


def broadcast(operand, sizes):
    """jax.lax.broadcast: new leading dimensions of the given sizes."""
    operand = as_tracer(operand)
    sizes = static_ints(sizes, "lax.broadcast sizes")
    return broadcast_in_dim(operand, sizes + operand.shape, range(len(sizes), len(sizes) + operand.ndim))


def broadcasted_iota(dtype, shape, dimension):
    shape = static_ints(shape, "lax.broadcasted_iota shape")
    dimension = canonical_axis(dimension, len(shape), "lax.broadcasted_iota dimension")
    return bind1("iota", [], {"dtype": to_dtype_name(dtype), "shape": shape, "dimension": dimension})


def iota(dtype, size):
    """jax.lax.iota: 0, 1, ..., size-1."""
    return broadcasted_iota(dtype, (static_int(size, "lax.iota size"),), 0)


def full(shape, fill_value, dtype=None):
    """jax.lax.full: fill_value broadcast to shape (weakly typed when a Python scalar and no dtype)."""
    value = as_tracer(fill_value)
    if value.ndim:
        raise TracingTypeError(located(f"lax.full: fill_value must be a scalar, got {value.type}"))
    if dtype is not None:
        value = convert(value, to_dtype_name(dtype))
    return broadcast_in_dim(value, shape, ())


def full_like(x, fill_value, dtype=None, shape=None):
    """jax.lax.full_like: fill_value in x's shape and dtype (or the given ones); weak when x is."""
    x = as_tracer(x)
    value = convert(as_tracer(fill_value), to_dtype_name(dtype) if dtype is not None else x.type.dtype,
                    x.weak_type and dtype is None)
    return full(x.shape if shape is None else shape, value)


def reshape(operand, new_sizes, dimensions=None):
    """jax.lax.reshape: row-major reshape, after transposing by `dimensions` if given."""
    operand = as_tracer(operand)
    if dimensions is not None:
        operand = transpose(operand, dimensions)
    new_sizes = static_ints(new_sizes, "lax.reshape new_sizes")
    if new_sizes == operand.shape:
        return operand
    return bind1("reshape", [operand], {"new_sizes": new_sizes}, weak_type=operand.weak_type)


def transpose(operand, permutation):
    operand = as_tracer(operand)
    permutation = static_ints(permutation, "lax.transpose permutation")
    if permutation == tuple(range(operand.ndim)):
        return operand
    return bind1("transpose", [operand], {"permutation": permutation}, weak_type=operand.weak_type)


def slice(operand, start_indices, limit_indices, strides=None):
    """jax.lax.slice: a static strided slice."""
    operand = as_tracer(operand)
    attrs = {"start_indices": static_ints(start_indices, "lax.slice start_indices"),
             "limit_indices": static_ints(limit_indices, "lax.slice limit_indices"),
             "strides": static_ints(strides, "lax.slice strides") if strides is not None else (1,) * operand.ndim}
    return bind1("slice", [operand], attrs, weak_type=operand.weak_type)


def wrap_index(index: int, size: int) -> int:
    """A negative static index counts from the end, as in jax.lax's *_in_dim functions."""
    return index + size if index < 0 else index


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    operand = as_tracer(operand)
    axis = canonical_axis(axis, operand.ndim)
    size = operand.shape[axis]
    start = 0 if start_index is None else wrap_index(static_int(start_index, "lax.slice_in_dim start_index"), size)
    limit = size if limit_index is None else wrap_index(static_int(limit_index, "lax.slice_in_dim limit_index"), size)
    starts, limits, strides = [0] * operand.ndim, list(operand.shape), [1] * operand.ndim
    starts[axis], limits[axis], strides[axis] = start, limit, static_int(stride, "lax.slice_in_dim stride")
    return slice(operand, starts, limits, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
    operand = as_tracer(operand)
    axis = canonical_axis(axis, operand.ndim)
    size = operand.shape[axis]
    index = wrap_index(static_int(index, "lax.index_in_dim index"), size)
    if not 0 <= index < size:
        raise TracingValueError(located(f"lax.index_in_dim: index {index} is out of bounds for axis {axis} "
                                        f"of size {size} ({operand.type})"))
    sliced = slice_in_dim(operand, index, index + 1, 1, axis)
    return sliced if keepdims else reshape(sliced, operand.shape[:axis] + operand.shape[axis + 1:])


# ---- dynamic slices ------------------------------------------------------------------------

def dynamic_start(name: str, index, size: int) -> Tracer:
    """One start index as an integer scalar tracer; negative values count from the end."""
    if isinstance(index, (int, np.integer)) and not isinstance(index, (bool, np.bool_)):
        return as_tracer(type(index)(wrap_index(index, size)))
    index = as_tracer(index)
    if index.ndim or not is_integer(index.type.dtype):
        raise TracingTypeError(located(f"lax.{name}: start indices must be integer scalars, got {index.type}"))
    return select(lt(index, 0), add(index, size), index)


def dynamic_starts(name: str, operand: Tracer, start_indices) -> list[Tracer]:
    """The start indices (a sequence of scalars, or a 1-D integer array) as one tracer per dimension."""
    if isinstance(start_indices, (Tracer, np.ndarray)):
        indices = as_tracer(start_indices)
        if indices.ndim != 1:
            raise TracingTypeError(located(f"lax.{name}: start_indices must be 1-D, got {indices.type}"))
        start_indices = [index_in_dim(indices, i, keepdims=False) for i in range(indices.shape[0])]
    start_indices = list(start_indices)
    if len(start_indices) != operand.ndim:
        raise TracingValueError(located(
            f"lax.{name}: operand {operand.type} needs {operand.ndim} start indices, got {len(start_indices)}"))
    return [dynamic_start(name, index, size) for index, size in zip(start_indices, operand.shape)]


def dynamic_slice(operand, start_indices, slice_sizes):
    """jax.lax.dynamic_slice: a slice of static size at traced start indices (clamped in bounds)."""
    operand = as_tracer(operand)
    starts = dynamic_starts("dynamic_slice", operand, start_indices)
    sizes = static_ints(slice_sizes, "lax.dynamic_slice slice_sizes")
    return bind1("dynamic_slice", [operand, *starts], {"slice_sizes": sizes}, weak_type=operand.weak_type)


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    operand = as_tracer(operand)
    axis = canonical_axis(axis, operand.ndim)
    starts = [0] * operand.ndim
    starts[axis] = start_index
    sizes = list(operand.shape)
    sizes[axis] = static_int(slice_size, "lax.dynamic_slice_in_dim slice_size")
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    operand = as_tracer(operand)
    axis = canonical_axis(axis, operand.ndim)
    sliced = dynamic_slice_in_dim(operand, index, 1, axis)
    return sliced if keepdims else reshape(sliced, operand.shape[:axis] + operand.shape[axis + 1:])


def dynamic_update_slice(operand, update, start_indices):
    """jax.lax.dynamic_update_slice: operand with `update` written at the (clamped) start indices."""
    dtype, weak = strict_dtype("dynamic_update_slice", [operand, update])
    operand, update = (convert(as_tracer(x), dtype, weak) for x in (operand, update))
    starts = dynamic_starts("dynamic_update_slice", operand, start_indices)
    return bind1("dynamic_update_slice", [operand, update, *starts], weak_type=weak)


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    operand = as_tracer(operand)
    axis = canonical_axis(axis, operand.ndim)
    starts = [0] * operand.ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis):
    operand, update = as_tracer(operand), as_tracer(update)
    axis = canonical_axis(axis, operand.ndim)
    if update.ndim == operand.ndim - 1:
        update = reshape(update, update.shape[:axis] + (1,) + update.shape[axis:])
    return dynamic_update_slice_in_dim(operand, update, index, axis)


# ---- joining, padding and reordering ---------------------------------------------------------------

def concatenate(operands, dimension):
    """jax.lax.concatenate: operands of one dtype joined along `dimension`."""
    operands = list(operands)
    if not operands:
        raise TracingValueError(located("lax.concatenate needs at least one operand"))
    dtype, weak = strict_dtype("concatenate", operands)
    tracers = [convert(as_tracer(x), dtype, weak) for x in operands]
    if len(tracers) == 1:
        return tracers[0]
    dimension = static_int(dimension, "lax.concatenate dimension")
    return bind1("concatenate", tracers, {"dimension": dimension}, weak_type=weak)


def pad(operand, padding_value, padding_config):
    """jax.lax.pad: (low, high, interior) per dimension; negative low/high crop."""
    dtype, weak = strict_dtype("pad", [operand, padding_value])
    operand, padding_value = (convert(as_tracer(x), dtype, weak) for x in (operand, padding_value))
    if padding_value.ndim:
        raise TracingTypeError(located(f"lax.pad: padding_value must be a scalar, got {padding_value.type}"))
    config = [static_ints(triple, "lax.pad padding_config entry") for triple in padding_config]
    if any(len(triple) != 3 for triple in config):
        raise TracingValueError(located(f"lax.pad: padding_config entries must be (low, high, interior), got {config}"))
    low, high, interior = (tuple(column) for column in zip(*config)) if config else ((), (), ())
    return bind1("pad", [operand, padding_value], {"low": low, "high": high, "interior": interior}, weak_type=weak)


def rev(operand, dimensions):
    operand = as_tracer(operand)
    dimensions = static_ints(dimensions, "lax.rev dimensions")
    return bind1("rev", [operand], {"dimensions": dimensions}, weak_type=operand.weak_type)


def squeeze(array, dimensions):
    """jax.lax.squeeze: remove the given dimensions, each of size 1."""
    array = as_tracer(array)
    axes = canonical_axes(static_ints(dimensions, "lax.squeeze dimensions"), array.ndim)
    wide = [a for a in axes if array.shape[a] != 1]
    if wide:
        raise TracingValueError(located(f"lax.squeeze: dimensions {wide} of {array.type} do not have size 1"))
    return reshape(array, tuple(d for i, d in enumerate(array.shape) if i not in axes))


def expand_dims(array, dimensions):
    """jax.lax.expand_dims: insert size-1 dimensions at the given positions of the result."""
    array = as_tracer(array)
    dimensions = static_ints(dimensions, "lax.expand_dims dimensions")
    axes = canonical_axes(dimensions, array.ndim + len(dimensions))
    sizes = iter(array.shape)
    return reshape(array, tuple(1 if i in axes else next(sizes) for i in range(array.ndim + len(axes))))


def collapse(operand, start_dimension, stop_dimension=None):
    """jax.lax.collapse: merge dimensions [start_dimension, stop_dimension) into one."""
    operand = as_tracer(operand)
    start = canonical_axis(start_dimension, operand.ndim + 1, "lax.collapse start_dimension")
    stop = operand.ndim if stop_dimension is None else canonical_axis(
        stop_dimension, operand.ndim + 1, "lax.collapse stop_dimension")
    if stop < start:
        raise TracingValueError(located(f"lax.collapse: stop_dimension {stop} is before start_dimension {start}"))
    shape = operand.shape
    return reshape(operand, shape[:start] + (math.prod(shape[start:stop]),) + shape[stop:])


def padtype_to_pads(in_shape, window_shape, window_strides, padding) -> tuple[tuple[int, int], ...]:
    """(low, high) padding pairs from 'SAME', 'SAME_LOWER', 'VALID' or explicit pairs, as jax.lax computes them.

    SAME pads so that out = ceil(in / stride), splitting the padding evenly (the extra element
    goes high, or low for SAME_LOWER).
    """
    if not isinstance(padding, str):
        pairs = tuple(static_ints(pair, "padding pair") for pair in padding)
        if len(pairs) != len(in_shape) or any(len(pair) != 2 for pair in pairs):
            raise TracingValueError(located(
                f"padding needs one (low, high) pair for each of {len(in_shape)} dimensions, got {padding!r}"))
        return pairs
    kind = padding.upper()
    if kind == "VALID":
        return ((0, 0),) * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise TracingValueError(located(f"unknown padding {padding!r}; expected 'SAME', 'SAME_LOWER', 'VALID' "
                                        f"or (low, high) pairs"))
    pads = []
    for size, window, stride in zip(in_shape, window_shape, window_strides):
        total = max((-(-size // stride) - 1) * stride + window - size, 0)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if kind == "SAME" else (large, small))
    return tuple(pads)
