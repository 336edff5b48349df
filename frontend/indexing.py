"""Indexing of traced arrays: `x[idx]` (getitem) and the functional updates `x.at[idx].set(...)` etc.

numpy's indexing rules, with JAX's out-of-bounds behaviour:
  - basic indices (ints, slices of any step, None, Ellipsis) select a strided view: slice, rev,
    reshape ops; a traced integer scalar becomes a dynamic_slice, clamped in bounds as in JAX;
  - advanced indices (integer arrays, lists, traced integer arrays, concrete boolean masks) and
    every `.at` update compute, for each element of the result, its full position in x (an i64
    array of shape result_shape + (x.ndim,)), then gather (out-of-bounds positions are clamped,
    as JAX's retrieval) or scatter (out-of-bounds updates are dropped, as JAX's updates);
  - when any advanced index is present, integer scalars count as advanced (0-d) indices. The
    broadcast advanced dimensions replace the indexed ones in place when the advanced indices
    are adjacent in the index tuple, and go first otherwise. As in numpy, a None or an Ellipsis
    between two advanced indices separates them (even an Ellipsis that stands for no dimension);
  - negative indices count from the end, traced ones too (a select).
A static int out of bounds, too many indices, a mask of the wrong shape and a traced boolean mask
(its result shape would depend on its values) raise `TracingIndexError`, which is both a
cdnajit TracingError and an IndexError, as JAX raises IndexError for these.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConcretizationError, TracingTypeError, TracingValueError
from . import lax_elementwise as lax
from . import lax_shape
from .cnp import creation, elementwise
from .cnp.base import DEFAULT_INT, broadcast_to, convert
from .dtypes import is_bool, is_integer
from .tracing import Tracer, as_tracer, bind1, constant, located


class TracingIndexError(TracingValueError, IndexError):
    """An index that does not fit the array, or whose result shape would depend on traced values."""


@dataclass
class Entry:
    """One parsed index item, bound to the dimension of x it indexes.

    kind: "none" (a new axis), "slice", "int", "array" (an integer index array) or "bool" (a
    scalar True/False, an advanced index of one or zero elements that indexes no dimension).
    position: the item's place in the user's index tuple, which decides adjacency.
    value: for a slice (start, step, length); for an int a Python int or an i64 scalar tracer;
    for an array an int64 numpy array or an i64 tracer; for a bool the bool.
    """
    kind: str
    position: int
    axis: int | None = None
    value: object = None

    @property
    def is_array_like(self) -> bool:
        return self.kind in ("array", "bool")


# ---- parsing ------------------------------------------------------------------------------------

def classify(item):
    """(kind, value) of one user index item; kinds as Entry's, plus "ellipsis" and "mask"."""
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, slice):
        for bound in (item.start, item.stop, item.step):
            if isinstance(bound, Tracer):
                raise ConcretizationError(located(
                    f"slice bounds must be static, got a traced {bound.type} in {item}; use "
                    f"cdnajit.lax.dynamic_slice for a slice at a traced position"))
        if item.step == 0:
            raise TracingValueError(located("slice step cannot be zero"))
        return "slice", item
    if isinstance(item, (bool, np.bool_)):
        return "bool", bool(item)
    if isinstance(item, (int, np.integer)):
        return "int", int(item)
    if isinstance(item, Tracer):
        if is_bool(item.type.dtype):
            raise TracingIndexError(located(
                f"boolean mask indexing with a traced mask {item.type}: the result's shape would depend on the "
                f"mask's values. Use cnp.where(mask, x, fill) or make the mask a concrete numpy array"))
        if not is_integer(item.type.dtype):
            raise TracingTypeError(located(f"index arrays must have an integer or boolean dtype, got {item.type}"))
        return ("int" if item.ndim == 0 else "array"), convert(item, DEFAULT_INT)
    if isinstance(item, (list, tuple)) and any(isinstance(leaf, Tracer) for leaf in creation.nested_leaves(item)):
        return classify(creation.asarray(item))
    if isinstance(item, (list, tuple, np.ndarray)):
        array = np.asarray(item)
        if array.dtype == np.bool_:
            return ("bool", bool(array)) if array.ndim == 0 else ("mask", array)
        if array.dtype.kind in "iu" or (array.size == 0 and not isinstance(item, np.ndarray)):
            return ("int", int(array)) if array.ndim == 0 else ("array", array.astype(np.int64))
        raise TracingTypeError(located(f"index arrays must have an integer or boolean dtype, got {array.dtype}"))
    raise TracingTypeError(located(
        f"index of type {type(item).__name__} is not supported: use ints, slices, None, Ellipsis, or integer or "
        f"boolean arrays"))


def parse_index(shape: tuple[int, ...], index) -> list[Entry]:
    """The index as entries: every dimension of x indexed exactly once (implicit trailing slices added)."""
    items = [classify(item) for item in (index if isinstance(index, tuple) else (index,))]
    kinds = [kind for kind, _ in items]
    if kinds.count("ellipsis") > 1:
        raise TracingIndexError(located("an index can only have a single ellipsis ('...')"))
    consumed = sum(value.ndim if kind == "mask" else kind in ("slice", "int", "array") for kind, value in items)
    if consumed > len(shape):
        raise TracingIndexError(located(f"too many indices for an array of shape {shape}: it is {len(shape)}-"
                                        f"dimensional, but {consumed} were indexed"))
    if "ellipsis" not in kinds:  # the dimensions not indexed are taken whole, after everything else
        items.append(("ellipsis", None))
    entries, axis = [], 0
    full = slice(None)
    for position, (kind, value) in enumerate(items):
        if kind == "ellipsis":
            for _ in range(len(shape) - consumed):
                entries.append(slice_entry(full, position, axis, shape[axis]))
                axis += 1
        elif kind in ("none", "bool"):
            entries.append(Entry(kind, position, None, value))
        elif kind == "slice":
            entries.append(slice_entry(value, position, axis, shape[axis]))
            axis += 1
        elif kind == "mask":
            entries += mask_entries(value, position, axis, shape)
            axis += value.ndim
        else:  # an int or an integer array
            if kind == "int" and not isinstance(value, Tracer):
                value = checked_int(value, axis, shape)
            entries.append(Entry(kind, position, axis, value))
            axis += 1
    return entries


def slice_entry(item: slice, position: int, axis: int, size: int) -> Entry:
    start, stop, step = item.indices(size)
    return Entry("slice", position, axis, (start, step, len(range(start, stop, step))))


def checked_int(value: int, axis: int, shape: tuple[int, ...]) -> int:
    """A static int index, negative ones counted from the end; out of bounds is an error (as in JAX)."""
    size = shape[axis]
    if not -size <= value < size:
        raise TracingIndexError(located(
            f"index {value} is out of bounds for axis {axis} with size {size} (an array of shape {shape})"))
    return value % size


def mask_entries(mask: np.ndarray, position: int, axis: int, shape) -> list[Entry]:
    """A concrete boolean mask is the integer arrays of its True positions, one per dimension it covers."""
    covered = shape[axis:axis + mask.ndim]
    if mask.shape != covered:
        raise TracingIndexError(located(f"boolean index of shape {mask.shape} does not match the indexed "
                                        f"dimensions {covered} of an array of shape {shape}"))
    return [Entry("array", position, axis + j, positions) for j, positions in enumerate(np.nonzero(mask))]


# ---- where result dimensions come from -------------------------------------------------------------------

def is_advanced(entry: Entry, advanced_mode: bool) -> bool:
    return entry.is_array_like or (advanced_mode and entry.kind == "int")


def entry_shape(entry: Entry) -> tuple[int, ...]:
    if entry.kind == "bool":
        return (int(entry.value),)
    return tuple(np.shape(entry.value)) if entry.kind == "array" else ()


@dataclass
class Layout:
    """The result shape, the result dimension of each slice/None entry (by its index in the entry
    list), and where the broadcast advanced-index dimensions sit (`advanced_start`, `advanced_shape`)."""
    shape: tuple[int, ...]
    basic_dims: dict[int, int]
    advanced_start: int
    advanced_shape: tuple[int, ...]
    advanced_mode: bool


def layout(entries: list[Entry]) -> Layout:
    advanced_mode = any(e.is_array_like for e in entries)
    advanced = [e for e in entries if is_advanced(e, advanced_mode)]
    try:
        advanced_shape = np.broadcast_shapes(*(entry_shape(e) for e in advanced))
    except ValueError:
        shapes = " ".join(str(entry_shape(e)) for e in advanced)
        raise TracingIndexError(located(f"index arrays of shapes {shapes} cannot be broadcast together")) from None
    positions = sorted({e.position for e in advanced})
    adjacent = bool(positions) and positions[-1] - positions[0] + 1 == len(positions)
    basic = [i for i, e in enumerate(entries) if e.kind in ("none", "slice")]
    advanced_start = sum(entries[i].position < positions[0] for i in basic) if adjacent else 0
    sizes = [1 if entries[i].kind == "none" else entries[i].value[2] for i in basic]
    shape = tuple(sizes[:advanced_start]) + advanced_shape + tuple(sizes[advanced_start:])
    basic_dims = {i: d + (len(advanced_shape) if d >= advanced_start else 0) for d, i in enumerate(basic)}
    return Layout(shape, basic_dims, advanced_start, advanced_shape, advanced_mode)


# ---- getitem -------------------------------------------------------------------------------------------

def getitem(x, index):
    """x[index] with numpy's indexing rules (JAX's clamping of out-of-bounds arrays and traced ints)."""
    x = as_tracer(x)
    entries = parse_index(x.shape, index)
    plan = layout(entries)
    if plan.advanced_mode:
        flat_x, positions = positions_in(x, entries, plan)
        return bind1("gather", [flat_x, positions], weak_type=x.weak_type)
    return basic_getitem(x, entries, plan)


def basic_getitem(x: Tracer, entries: list[Entry], plan: Layout) -> Tracer:
    """A strided slice, reversed where steps are negative, then dynamic slices for traced ints, then a reshape."""
    starts, limits, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    reversed_axes, dynamic_starts = [], [0] * x.ndim
    for e in entries:
        if e.kind == "slice":
            start, step, length = e.value
            if length == 0:
                starts[e.axis] = limits[e.axis] = 0
            elif step > 0:
                starts[e.axis], limits[e.axis], strides[e.axis] = start, start + (length - 1) * step + 1, step
            else:
                last = start + (length - 1) * step
                starts[e.axis], limits[e.axis], strides[e.axis] = last, start + 1, -step
                reversed_axes.append(e.axis)
        elif e.kind == "int" and not isinstance(e.value, Tracer):
            starts[e.axis], limits[e.axis] = e.value, e.value + 1
        elif e.kind == "int":
            dynamic_starts[e.axis] = e.value
    y = x
    if (starts, limits, strides) != ([0] * x.ndim, list(x.shape), [1] * x.ndim):
        y = lax_shape.slice(y, starts, limits, strides)
    if reversed_axes:
        y = lax_shape.rev(y, reversed_axes)
    if any(isinstance(s, Tracer) for s in dynamic_starts):
        sizes = [1 if isinstance(s, Tracer) else d for s, d in zip(dynamic_starts, y.shape)]
        y = lax_shape.dynamic_slice(y, dynamic_starts, sizes)
    return lax_shape.reshape(y, plan.shape)


# ---- positions of the indexed elements -----------------------------------------------------------------------

def wrap_negative(index: Tracer, size: int) -> Tracer:
    """Traced indices: negative ones count from the end."""
    return lax.select(lax.lt(index, 0), lax.add(index, size), index)


def positions_in(x: Tracer, entries: list[Entry], plan: Layout) -> tuple[Tracer, Tracer]:
    """(x, positions): i64[*result_shape, x.ndim], the position in x of every element of the result.

    A 0-d x is treated as a 1-element vector, every element at position 0.
    """
    target = plan.shape + (1,)
    advanced_end = plan.advanced_start + len(plan.advanced_shape)
    columns = []
    for i, e in enumerate(entries):
        if e.axis is None:
            continue
        size = x.shape[e.axis]
        if e.kind == "slice":
            start, step, length = e.value
            ramp = constant(start + step * np.arange(length), DEFAULT_INT)
            columns.append(lax_shape.broadcast_in_dim(ramp, target, (plan.basic_dims[i],)))
            continue
        if isinstance(e.value, Tracer):
            value = wrap_negative(e.value, size)
        else:
            static = np.asarray(e.value)
            value = constant(np.where(static < 0, static + size, static), DEFAULT_INT)
        dims = tuple(range(advanced_end - value.ndim, advanced_end))  # numpy's right-aligned broadcasting
        columns.append(lax_shape.broadcast_in_dim(value, target, dims))
    if x.ndim == 0:
        return lax_shape.reshape(x, (1,)), broadcast_to(constant(0, DEFAULT_INT), target)
    return x, lax_shape.concatenate(columns, len(plan.shape))


# ---- x.at[index] ----------------------------------------------------------------------------------------

SCATTER_MODES = (None, "promise_in_bounds", "drop", "clip")
GATHER_MODES = (None, "promise_in_bounds", "clip")


def scatter(x, index, values, reduction: str, mode=None) -> Tracer:
    """x with the indexed elements combined with values (broadcast to the indexed shape) by `reduction`."""
    if mode not in SCATTER_MODES:
        raise NotImplementedError(located(f"x.at[...] updates with mode={mode!r}: supported modes are "
                                          f"{', '.join(map(repr, SCATTER_MODES))}"))
    x = as_tracer(x)
    entries = parse_index(x.shape, index)
    plan = layout(entries)
    flat_x, positions = positions_in(x, entries, plan)
    if mode == "clip":
        upper = constant(np.maximum(np.array(flat_x.shape) - 1, 0), DEFAULT_INT)
        upper = lax_shape.broadcast_in_dim(upper, positions.shape, (positions.ndim - 1,))
        positions = lax.max(lax.min(positions, upper), 0)
    updates = convert(creation.asarray(values), x.type.dtype, x.weak_type)
    extra = updates.ndim - len(plan.shape)
    if extra > 0 and all(d == 1 for d in updates.shape[:extra]):  # numpy's assignment drops leading 1s
        updates = lax_shape.reshape(updates, updates.shape[extra:])
    fits = updates.ndim <= len(plan.shape) and all(
        u in (1, d) for u, d in zip(reversed(updates.shape), reversed(plan.shape)))
    if not fits:
        raise TracingValueError(located(f"x.at[...]: values of shape {updates.shape} cannot be broadcast to the "
                                        f"indexed shape {plan.shape} of an array of shape {x.shape}"))
    updates = broadcast_to(updates, plan.shape)
    box = static_box(entries)
    if reduction == "set" and box is not None and x.ndim:
        # A box of static bounds (x.at[1:-1].set(v), x.at[2, :].set(v)): XLA's dynamic-update-slice,
        # which the in-place pass writes over x as one contiguous copy per row.
        starts, sizes = box
        return lax_shape.dynamic_update_slice(x, lax_shape.reshape(updates, sizes), starts)
    result = bind1("scatter", [flat_x, positions, updates], {"reduction": reduction}, weak_type=x.weak_type)
    return lax_shape.reshape(result, x.shape)


def static_box(entries: list[Entry]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(starts, sizes) per axis when the index is static ints and unit-step slices (new axes aside):
    the indexed elements are a box of x, in bounds. None otherwise."""
    starts, sizes = [], []
    for e in entries:
        if e.kind == "slice" and e.value[1] == 1:
            starts.append(e.value[0])
            sizes.append(e.value[2])
        elif e.kind == "int" and not isinstance(e.value, Tracer):
            starts.append(e.value)
            sizes.append(1)
        elif e.kind != "none":
            return None
    return tuple(starts), tuple(sizes)


class IndexUpdateRef:
    """`x.at[index]`: the functional updates of numpy's in-place `x[index] op= values`."""

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self):
        return f"IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None):
        if mode not in GATHER_MODES or fill_value is not None:
            raise NotImplementedError(located(f"x.at[...].get with mode={mode!r}, fill_value={fill_value!r}: "
                                              f"supported modes are {', '.join(map(repr, GATHER_MODES))}"))
        return getitem(self.array, self.index)

    def _ones_scaled(self, values, mode) -> Tracer:
        """ones_like(x).at[index].multiply(values): the factor divide and power apply (duplicates multiply)."""
        return scatter(creation.ones_like(self.array), self.index, values, "mul", mode)

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[index] /= values, as JAX: x / ones.at[index].multiply(values)."""
        return elementwise.divide(self.array, self._ones_scaled(values, mode))

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[index] **= values, as JAX: x ** ones.at[index].multiply(values)."""
        return elementwise.power(self.array, self._ones_scaled(values, mode))


def scatter_method(reduction: str, doc: str):
    def method(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return scatter(self.array, self.index, values, reduction, mode)
    method.__doc__ = doc
    return method


for _name, _reduction, _doc in [
        ("set", "set", "x[index] = values (with duplicate indices the last update wins)"),
        ("add", "add", "x[index] += values (duplicate indices accumulate)"),
        ("multiply", "mul", "x[index] *= values (duplicate indices accumulate)"),
        ("mul", "mul", "x[index] *= values (duplicate indices accumulate)"),
        ("min", "min", "x[index] = minimum(x[index], values)"),
        ("max", "max", "x[index] = maximum(x[index], values)")]:
    setattr(IndexUpdateRef, _name, scatter_method(_reduction, _doc))


class IndexUpdateHelper:
    """`x.at`: `x.at[index]` is an IndexUpdateRef."""

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"IndexUpdateHelper({self.array!r})"
