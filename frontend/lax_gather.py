"""cdnajit.lax gather and the scatter family, with XLA's dimension numbers, as jax.lax spells them.

The graph IR's `gather` and `scatter` index x's leading k dimensions with rows of k indices. A
general gather or scatter becomes one of them with k = rank(x): each result (or update) element
gets its full operand position, start (from the index array, clamped or bounds-checked as the mode
says) plus its offset in the window, built from broadcasts and iotas that fusion computes in place.
"""
from __future__ import annotations

import enum
from typing import NamedTuple

import numpy as np

from ..errors import TracingTypeError, TracingValueError
from ..ir.types import NUMPY_DTYPES, UNSIGNED_INTS
from .cnp.base import convert
from .dtypes import is_inexact, is_integer
from .lax_control import fori_loop
from .lax_elementwise import add, bitwise_and, ge, le, lt, max, min, neg, select, static_ints, strict_dtype
from .lax_reduce import reduce_max
from .lax_shape import broadcast_in_dim, broadcasted_iota, concatenate, full, reshape, slice_in_dim
from .tracing import Tracer, as_tracer, bind1, constant, located

__all__ = ["GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode", "gather", "scatter",
           "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max", "scatter_apply"]


class GatherDimensionNumbers(NamedTuple):
    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode(enum.Enum):
    """What an out-of-bounds window does: CLIP clamps its start in bounds, FILL_OR_DROP fills a gathered
    window with fill_value or drops a scattered one, PROMISE_IN_BOUNDS is XLA's own (clamped gathers,
    dropped scatters)."""
    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()
    ONE_HOT = enum.auto()

    @staticmethod
    def from_any(mode, default: "GatherScatterMode") -> "GatherScatterMode":
        if isinstance(mode, GatherScatterMode):
            return mode
        named = {None: default, "clip": GatherScatterMode.CLIP, "fill": GatherScatterMode.FILL_OR_DROP,
                 "drop": GatherScatterMode.FILL_OR_DROP, "promise_in_bounds": GatherScatterMode.PROMISE_IN_BOUNDS,
                 "one_hot": GatherScatterMode.ONE_HOT}
        if not isinstance(mode, (str, type(None))) or mode not in named:
            raise TracingValueError(located(f"unknown gather/scatter mode {mode!r}; expected 'clip', 'fill', "
                                            f"'drop', 'promise_in_bounds' or a GatherScatterMode"))
        if named[mode] is GatherScatterMode.ONE_HOT:
            raise NotImplementedError(located("gather/scatter mode ONE_HOT is not supported"))
        return named[mode]


def index_columns(name: str, indices: Tracer, count: int) -> list[Tracer]:
    """The `count` index columns (last dimension) of `indices`, each of its batch shape."""
    if not is_integer(indices.type.dtype):
        raise TracingTypeError(located(f"lax.{name}: indices must be integers, got {indices.type}"))
    if indices.ndim < 1 or indices.shape[-1] != count:
        raise TracingTypeError(located(
            f"lax.{name}: indices {indices.type} must end in a dimension of length {count} (the number of "
            f"indexed operand dimensions)"))
    batch = indices.shape[:-1]
    return [reshape(slice_in_dim(indices, k, k + 1, 1, indices.ndim - 1), batch) for k in range(count)]


def window_start(column: Tracer, limit: int, clip: bool) -> tuple[Tracer, Tracer | None]:
    """An index column as i64 starts, clamped to [0, limit] when `clip`, and whether each is in bounds."""
    dtype_max = np.iinfo(NUMPY_DTYPES[column.type.dtype]).max
    if column.type.dtype in UNSIGNED_INTS and limit + 1 <= dtype_max:
        # Clamp in the column's own dtype first, so a huge unsigned value cannot wrap negative in i64.
        column = min(column, constant(limit + 1, column.type.dtype))
    wide = convert(column, "i64")
    zero, top = constant(0, "i64"), constant(limit, "i64")
    valid = bitwise_and(ge(wide, zero), le(wide, top))
    return (max(min(wide, top), zero) if clip else wide), valid


def positions(name: str, operand: Tracer, indices: Tracer, shape, index_map, batch_positions, window_positions,
              batching, window_sizes, clip: bool) -> tuple[Tracer, Tracer | None]:
    """The full operand positions (i64, `shape` + (rank,)) of the elements of a gather's result or a
    scatter's updates, and whether each element's window is in bounds (bool, `shape`; None if clipped).

    batch_positions[j]: the dimension of `shape` that runs over the index array's batch dimension j;
    window_positions: operand dimension -> the dimension of `shape` over its window; batching: (operand
    dimension, index batch dimension) pairs; window_sizes: operand dimension -> its window's size."""
    columns = index_columns(name, indices, len(index_map))
    coordinates: list[Tracer | None] = [None] * operand.ndim
    valid = None
    for column, d in zip(columns, index_map):
        start, in_bounds = window_start(column, operand.shape[d] - window_sizes[d], clip)
        coordinates[d] = broadcast_in_dim(start, shape, batch_positions)
        if not clip:
            valid = in_bounds if valid is None else bitwise_and(valid, in_bounds)
    for d, j in batching:
        coordinates[d] = broadcasted_iota("i64", shape, batch_positions[j])
    for d, position in window_positions.items():
        offset = broadcasted_iota("i64", shape, position)
        coordinates[d] = offset if coordinates[d] is None else add(coordinates[d], offset)
    shape = tuple(shape)
    columns = [full(shape, 0, "i64") if c is None else c for c in coordinates]
    stacked = (concatenate([reshape(c, shape + (1,)) for c in columns], len(shape)) if columns
               else full(shape + (0,), 0, "i64"))
    if valid is not None:
        valid = broadcast_in_dim(valid, shape, batch_positions)
    return stacked, valid


def check_dims(name: str, what: str, dims, bound: int) -> tuple[int, ...]:
    dims = static_ints(dims, f"lax.{name} {what}")
    if len(set(dims)) != len(dims) or any(not 0 <= d < bound for d in dims):
        raise TracingValueError(located(f"lax.{name}: {what} {list(dims)} must be distinct dimensions below {bound}"))
    return dims


def default_fill(dtype: str):
    """jax.lax.gather's fill for out-of-bounds windows: NaN, the least signed or largest unsigned integer, True."""
    if is_inexact(dtype):
        return np.nan
    if dtype == "bool":
        return True
    info = np.iinfo(NUMPY_DTYPES[dtype])
    return info.max if dtype in UNSIGNED_INTS else info.min


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, unique_indices=False,
           indices_are_sorted=False, mode=None, fill_value=None):
    """jax.lax.gather: windows of `slice_sizes` at the starts given by start_indices' last dimension.

    The result has the index array's batch dimensions, with the windows' (non-collapsed, non-batching)
    dimensions at `offset_dims`. mode None or 'clip' clamps each window into bounds (jax.lax's default
    for gather); 'fill' gives fill_value for a window that is not wholly in bounds."""
    operand, indices = as_tracer(operand), as_tracer(start_indices)
    dnums = GatherDimensionNumbers(*dimension_numbers)
    mode = GatherScatterMode.from_any(mode, GatherScatterMode.CLIP)
    sizes = static_ints(slice_sizes, "lax.gather slice_sizes")
    collapsed = check_dims("gather", "collapsed_slice_dims", dnums.collapsed_slice_dims, operand.ndim)
    index_map = check_dims("gather", "start_index_map", dnums.start_index_map, operand.ndim)
    operand_batching = check_dims("gather", "operand_batching_dims", dnums.operand_batching_dims, operand.ndim)
    indices_batching = check_dims("gather", "start_indices_batching_dims", dnums.start_indices_batching_dims,
                                  len(indices.shape[:-1]))
    windowed = [d for d in range(operand.ndim) if d not in collapsed and d not in operand_batching]
    out_rank = indices.ndim - 1 + len(windowed)
    offset_dims = check_dims("gather", "offset_dims", dnums.offset_dims, out_rank)
    if (len(sizes) != operand.ndim or len(offset_dims) != len(windowed) or set(collapsed) & set(operand_batching)
            or any(not 0 <= s <= d for s, d in zip(sizes, operand.shape))
            or any(sizes[d] != 1 for d in collapsed + operand_batching)
            or len(operand_batching) != len(indices_batching)):
        raise TracingValueError(located(
            f"lax.gather: dimension numbers {dnums} and slice_sizes {list(sizes)} do not fit operand {operand.type} "
            f"and indices {indices.type}"))
    batch_positions = [p for p in range(out_rank) if p not in offset_dims]
    shape = [0] * out_rank
    for p, size in zip(batch_positions, indices.shape[:-1]):
        shape[p] = size
    for p, d in zip(sorted(offset_dims), windowed):
        shape[p] = sizes[d]
    coords, valid = positions("gather", operand, indices, shape, index_map, batch_positions,
                              dict(zip(windowed, sorted(offset_dims))), list(zip(operand_batching, indices_batching)),
                              {d: sizes[d] for d in range(operand.ndim)},
                              clip=mode is not GatherScatterMode.FILL_OR_DROP)
    result = bind1("gather", [operand, coords], weak_type=operand.weak_type)
    if valid is None:
        return result
    fill = default_fill(operand.type.dtype) if fill_value is None else fill_value
    return select(valid, result, full(result.shape, convert(as_tracer(fill), operand.type.dtype, operand.weak_type)))


def scatter_positions(name: str, operand: Tracer, indices: Tracer, updates: Tracer, dimension_numbers, mode):
    """The full operand position of every update element, with a window not wholly in bounds moved out
    of bounds (where the IR scatter drops it) unless mode is 'clip', which clamps it in."""
    dnums = ScatterDimensionNumbers(*dimension_numbers)
    mode = GatherScatterMode.from_any(mode, GatherScatterMode.FILL_OR_DROP)
    window_dims = check_dims(name, "update_window_dims", dnums.update_window_dims, updates.ndim)
    inserted = check_dims(name, "inserted_window_dims", dnums.inserted_window_dims, operand.ndim)
    index_map = check_dims(name, "scatter_dims_to_operand_dims", dnums.scatter_dims_to_operand_dims, operand.ndim)
    operand_batching = check_dims(name, "operand_batching_dims", dnums.operand_batching_dims, operand.ndim)
    indices_batching = check_dims(name, "scatter_indices_batching_dims", dnums.scatter_indices_batching_dims,
                                  len(indices.shape[:-1]))
    windowed = [d for d in range(operand.ndim) if d not in inserted and d not in operand_batching]
    scatter_positions_ = [p for p in range(updates.ndim) if p not in window_dims]
    if (len(windowed) != len(window_dims) or len(scatter_positions_) != indices.ndim - 1
            or len(operand_batching) != len(indices_batching)
            or tuple(updates.shape[p] for p in scatter_positions_) != indices.shape[:-1]
            or any(updates.shape[p] > operand.shape[d] for p, d in zip(sorted(window_dims), windowed))):
        raise TracingValueError(located(
            f"lax.{name}: dimension numbers {dnums} do not fit operand {operand.type}, indices {indices.type} and "
            f"updates {updates.type}"))
    window_sizes = {d: 1 for d in range(operand.ndim)}
    window_sizes.update({d: updates.shape[p] for p, d in zip(sorted(window_dims), windowed)})
    coords, valid = positions(name, operand, indices, updates.shape, index_map, scatter_positions_,
                              dict(zip(windowed, sorted(window_dims))), list(zip(operand_batching, indices_batching)),
                              window_sizes, clip=mode is GatherScatterMode.CLIP)
    if valid is not None:
        spread = broadcast_in_dim(valid, coords.shape, tuple(range(updates.ndim)))
        coords = select(spread, coords, full(coords.shape, -1, "i64"))
    return coords


def scatter_with(name: str, reduction: str, negate: bool = False):
    def fn(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False, unique_indices=False,
           mode=None):
        dtype, weak = strict_dtype(name, [operand, updates])
        operand, updates = (convert(as_tracer(x), dtype, weak) for x in (operand, updates))
        if negate:
            updates = neg(updates)
        coords = scatter_positions(name, operand, as_tracer(scatter_indices), updates, dimension_numbers, mode)
        return bind1("scatter", [operand, coords, updates], {"reduction": reduction}, weak_type=weak)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"jax.lax.{name}: operand with the update windows {'written' if reduction == 'set' else 'combined'} "
                  f"at the scattered positions ({reduction}); out-of-bounds windows are dropped unless mode='clip'.")
    return fn


scatter = scatter_with("scatter", "set")
scatter_add = scatter_with("scatter_add", "add")
scatter_sub = scatter_with("scatter_sub", "add", negate=True)
scatter_mul = scatter_with("scatter_mul", "mul")
scatter_min = scatter_with("scatter_min", "min")
scatter_max = scatter_with("scatter_max", "max")


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(), indices_are_sorted=False,
                  unique_indices=False, mode=None):
    """jax.lax.scatter_apply: func applied to operand at the scattered positions, once per time each
    position is hit (as XLA applies the update computation for every update element)."""
    operand = as_tracer(operand)
    update_shape = static_ints(update_shape, "lax.scatter_apply update_shape")
    hits = scatter_add(full(operand.shape, 0, "i32"), scatter_indices, full(update_shape, 1, "i32"),
                       dimension_numbers, mode=mode)
    rounds = reduce_max(hits, tuple(range(operand.ndim))) if operand.ndim else hits

    def body(i, x):
        applied = as_tracer(func(x))
        if applied.type != x.type:
            raise TracingTypeError(located(f"lax.scatter_apply: func must keep the operand type {x.type}, "
                                           f"got {applied.type}"))
        return select(lt(convert(i, "i32"), hits), applied, x)
    return fori_loop(0, convert(rounds, "i64"), body, operand)
