"""Array creation, as jax.numpy: array/asarray, zeros/ones/full/empty and their `_like` forms,
arange, linspace/logspace/geomspace, eye/identity/tri, meshgrid, mgrid/ogrid and indices.

Every result is built in the graph IR (a constant, an iota or a broadcast), so these work inside
jit. Shapes, sizes and arange's bounds must be static, as in JAX. Default dtypes are those of
jax.numpy with 64-bit types enabled: zeros(...) is float64, arange(3) is int64.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import AllocationError, ConcretizationError, TracingTypeError, TracingValueError
from ...ir.types import NUMPY_DTYPES, format_bytes
from .. import lax_elementwise as lax
from .. import lax_shape
from ..dtypes import is_integer, to_inexact
from ..lax_elementwise import static_int
from ..lax_shape import broadcast_in_dim, broadcasted_iota
from ..tracing import Tracer, as_tracer, bind1, check_array_like, constant, located
from .base import (DEFAULT_FLOAT, DEFAULT_INT, broadcast_shapes, broadcast_to, canonical_axis, convert, dtype_and_weak,
                   result_type, shape_of, to_dtype_name)

__all__ = ["array", "asarray", "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like",
           "arange", "linspace", "logspace", "geomspace", "eye", "identity", "tri", "meshgrid", "mgrid", "ogrid",
           "indices"]


def static_shape(shape, what: str) -> tuple[int, ...]:
    """A shape argument (an int or a sequence of ints) as a tuple; tracers and negative sizes are errors."""
    dims = (shape,) if np.ndim(shape) == 0 and not isinstance(shape, (list, tuple)) else tuple(shape)
    dims = tuple(static_int(d, what) for d in dims)
    if any(d < 0 for d in dims):
        raise TracingValueError(located(f"{what}: negative dimensions are not allowed, got shape {dims}"))
    return dims



# ---- array, asarray ------------------------------------------------------------------------------

def nested_leaves(value) -> list:
    """The non-sequence items of a nested list/tuple, in order."""
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in nested_leaves(item)]
    return [value]


def stack_leading(items: list[Tracer]) -> Tracer:
    """Equal-shaped tracers stacked along a new leading axis."""
    shapes = {item.shape for item in items}
    if len(shapes) > 1:
        raise TracingValueError(located(
            f"asarray: the elements of a nested sequence have different shapes {sorted(shapes)}"))
    return lax_shape.concatenate([lax_shape.reshape(item, (1,) + item.shape) for item in items], 0)


def sequence_to_tracer(value, dtype: str) -> Tracer:
    """A nested list/tuple holding tracers (and scalars or arrays) as one tracer of `dtype`."""
    if not isinstance(value, (list, tuple)):
        return convert(as_tracer(value), dtype)
    if not value:
        return constant(np.zeros((0,)), dtype)
    return stack_leading([sequence_to_tracer(item, dtype) for item in value])


def asarray(a, dtype=None, order=None, *, copy=None):
    """jnp.asarray: tracers pass through (converted to `dtype` if given); Python scalars stay weakly typed."""
    if isinstance(a, (list, tuple)):
        leaves = nested_leaves(a)
        target = to_dtype_name(dtype) if dtype is not None else (result_type(*leaves)[0] if leaves else DEFAULT_FLOAT)
        if any(isinstance(leaf, Tracer) for leaf in leaves):
            return sequence_to_tracer(a, target)
        for leaf in leaves:
            check_array_like(leaf, "asarray element")
        try:
            array_value = np.array(a, dtype=NUMPY_DTYPES[target])
        except (ValueError, OverflowError) as error:
            raise TracingValueError(located(f"asarray: cannot convert the sequence to an array: {error}")) from None
        return constant(array_value, target)
    check_array_like(a, "asarray argument")
    if dtype is None:
        return as_tracer(a)
    if isinstance(a, Tracer):
        return convert(a, to_dtype_name(dtype))
    return constant(np.asarray(a), to_dtype_name(dtype))


def array(object, dtype=None, copy=True, order="K", ndmin=0):
    """jnp.array: asarray, with at least `ndmin` dimensions (size-1 dimensions added in front)."""
    x = asarray(object, dtype)
    missing = static_int(ndmin, "array ndmin") - x.ndim
    return lax_shape.reshape(x, (1,) * missing + x.shape) if missing > 0 else x


# ---- filled arrays --------------------------------------------------------------------------------

def filled(shape: tuple[int, ...], value, dtype: str, weak_type: bool = False) -> Tracer:
    """`value` (a scalar or an array broadcastable to shape) converted to dtype and broadcast to shape."""
    if isinstance(value, Tracer) or isinstance(value, (list, tuple)):
        fill = convert(asarray(value), dtype, weak_type)
    else:
        check_array_like(value, "fill value")
        fill = constant(np.asarray(value), dtype, weak_type=weak_type)
    return broadcast_to(fill, shape)


def full(shape, fill_value, dtype=None):
    """jnp.full: weakly typed when fill_value is a Python scalar and no dtype is given, as jax."""
    shape = static_shape(shape, "full")
    fill_dtype, weak = dtype_and_weak(fill_value)
    if dtype is not None:
        fill_dtype, weak = to_dtype_name(dtype), False
    return filled(shape, fill_value, fill_dtype, weak)


def zeros(shape, dtype=None):
    return filled(static_shape(shape, "zeros"), 0, to_dtype_name(dtype) if dtype is not None else DEFAULT_FLOAT)


def ones(shape, dtype=None):
    return filled(static_shape(shape, "ones"), 1, to_dtype_name(dtype) if dtype is not None else DEFAULT_FLOAT)


def empty(shape, dtype=None):
    """jnp.empty: XLA has no uninitialised memory, so this is zeros."""
    return zeros(shape, dtype)


def full_like(a, fill_value, dtype=None, shape=None):
    """jnp.full_like: a's dtype (and weak type) and shape unless overridden."""
    like_dtype, weak = dtype_and_weak(a)
    if dtype is not None:
        like_dtype, weak = to_dtype_name(dtype), False
    like_shape = shape_of(a) if shape is None else static_shape(shape, "full_like")
    return filled(like_shape, fill_value, like_dtype, weak)


def zeros_like(a, dtype=None, shape=None):
    return full_like(a, 0, dtype, shape)


def ones_like(a, dtype=None, shape=None):
    return full_like(a, 1, dtype, shape)


def empty_like(a, dtype=None, shape=None):
    return full_like(a, 0, dtype, shape)


# ---- ranges ---------------------------------------------------------------------------------------

def static_scalar(value, what: str):
    """A concrete scalar argument (arange's bounds, mgrid's slices); a traced value is a ConcretizationError."""
    if isinstance(value, Tracer):
        raise ConcretizationError(located(f"{what} must be static (a concrete value), got a traced {value.type}"))
    check_array_like(value, what)
    if np.ndim(value) != 0:
        raise TracingValueError(located(f"{what} must be a scalar, got an array of shape {np.shape(value)}"))
    return value


def arange(start, stop=None, step=None, dtype=None):
    """jnp.arange: static bounds; the dtype is inferred as jnp does (Python ints -> int64, floats -> float64)."""
    given = [static_scalar(v, f"arange {name}") for name, v in (("start", start), ("stop", stop), ("step", step))
             if v is not None]
    target = to_dtype_name(dtype) if dtype is not None else result_type(*given)[0]
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if step == 0:
        raise TracingValueError(located("arange: step must not be zero"))
    if start == 0 and step == 1 and target != "bool" and np.isrealobj(stop) and np.isfinite(stop):
        # 0, 1, ...: an iota, its values made by a kernel when the program runs
        return broadcasted_iota(target, (max(0, math.ceil(stop)),), 0)
    try:
        values = np.arange(start, stop, step, dtype=NUMPY_DTYPES[target])
    except MemoryError:  # the values are computed here, as a constant of the program
        count = max(0, math.ceil((stop - start) / step))
        raise AllocationError(located(f"arange({start}, {stop}, {step}): cannot allocate its {count} values of "
                                      f"dtype {target}, {format_bytes(count * NUMPY_DTYPES[target].itemsize)}: "
                                      f"more memory than this machine gives")) from None
    return constant(values, target)


def linear_ramp(start: Tracer, stop: Tracer, num: int, endpoint: bool, axis: int) -> Tracer:
    """num points from start to stop (same dtype and shape) along a new axis, as jnp.linspace computes them:
    start * (1 - t) + stop * t with t = i / div, the last point exactly `stop` when endpoint."""
    divisions = num - 1 if endpoint else num
    shape = start.shape[:axis] + (divisions,) + start.shape[axis:]
    others = tuple(d for d in range(len(shape)) if d != axis)
    dtype = start.type.dtype
    t = lax.div(broadcasted_iota(dtype, shape, axis), constant(divisions, dtype))
    ramp = lax.add(lax.mul(broadcast_in_dim(start, shape, others), lax.sub(constant(1, dtype), t)),
                   lax.mul(broadcast_in_dim(stop, shape, others), t))
    if not endpoint:
        return ramp
    return lax_shape.concatenate([ramp, lax_shape.reshape(stop, start.shape[:axis] + (1,) + start.shape[axis:])], axis)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """jnp.linspace: start and stop may be (traced) arrays, broadcast together; num is static."""
    num = static_int(num, "linspace num")
    if num < 0:
        raise TracingValueError(located(f"linspace: number of samples {num} must be non-negative"))
    target = to_dtype_name(dtype) if dtype is not None else to_inexact(result_type(start, stop)[0])
    computation = to_inexact(target)
    bounds_shape = broadcast_shapes(shape_of(start), shape_of(stop), what="linspace: start and stop")
    start, stop = (broadcast_to(convert(asarray(v), computation), bounds_shape) for v in (start, stop))
    axis = canonical_axis(axis, len(bounds_shape) + 1)
    out_shape = bounds_shape[:axis] + (num,) + bounds_shape[axis:]
    if num > 1:
        out = linear_ramp(start, stop, num, endpoint, axis)
    elif num == 1:
        out = lax_shape.reshape(start, out_shape)
    else:
        out = filled(out_shape, 0, computation)
    if is_integer(target):
        out = lax.floor(out)
    out = convert(out, target)
    if not retstep:
        return out
    divisions = num - 1 if endpoint else num
    if divisions <= 0:
        return out, filled(bounds_shape, np.nan, computation)
    return out, lax.div(lax.sub(stop, start), constant(divisions, computation))


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """jnp.logspace: base ** linspace(start, stop), computed in the inexact dtype, then converted."""
    target = to_dtype_name(dtype) if dtype is not None else to_inexact(result_type(start, stop)[0])
    computation = to_inexact(target)
    exponents = linspace(start, stop, num, endpoint, dtype=computation, axis=axis)
    axis = canonical_axis(axis, exponents.ndim)
    bounds_shape = exponents.shape[:axis] + exponents.shape[axis + 1:]
    base = broadcast_to(convert(asarray(base), computation), bounds_shape)
    base = broadcast_in_dim(base, exponents.shape, tuple(d for d in range(exponents.ndim) if d != axis))
    return convert(lax.pow(base, exponents), target)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """jnp.geomspace: sign(start) * logspace(log10|start|, log10|stop|) (start and stop of one sign)."""
    target = to_dtype_name(dtype) if dtype is not None else to_inexact(result_type(start, stop)[0])
    computation = to_inexact(target)
    start, stop = (convert(asarray(v), computation) for v in (start, stop))
    sign = lax.sign(start)
    log_start, log_stop = (bind1("log10", [lax.div(v, sign)]) for v in (start, stop))
    magnitudes = logspace(log_start, log_stop, num, endpoint, 10.0, computation, axis)
    axis = canonical_axis(axis, magnitudes.ndim)
    sign = broadcast_to(sign, magnitudes.shape[:axis] + magnitudes.shape[axis + 1:])
    sign = broadcast_in_dim(sign, magnitudes.shape, tuple(d for d in range(magnitudes.ndim) if d != axis))
    return convert(lax.mul(sign, magnitudes), target)


# ---- matrices with a diagonal structure --------------------------------------------------------------

def diagonal_band(n: int, m: int, k, comparison) -> Tracer:
    """bool[n, m]: comparison(column - row, k), e.g. lax.eq for the k-th diagonal (k may be traced)."""
    offsets = lax.sub(broadcasted_iota(DEFAULT_INT, (n, m), 1), broadcasted_iota(DEFAULT_INT, (n, m), 0))
    return comparison(offsets, convert(asarray(k), DEFAULT_INT) if isinstance(k, Tracer) else static_int(k, "k"))


def matrix_sizes(name: str, N, M) -> tuple[int, int]:
    n = static_int(N, f"{name} N")
    m = n if M is None else static_int(M, f"{name} M")
    if n < 0 or m < 0:
        raise TracingValueError(located(f"{name}: negative dimensions are not allowed, got N={n}, M={m}"))
    return n, m


def eye(N, M=None, k=0, dtype=None):
    """jnp.eye: ones on the k-th diagonal (k may be traced), float64 by default."""
    n, m = matrix_sizes("eye", N, M)
    return convert(diagonal_band(n, m, k, lax.eq), to_dtype_name(dtype) if dtype is not None else DEFAULT_FLOAT)


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """jnp.tri: ones at and below the k-th diagonal, float32 by default (as jnp.tri, unlike eye)."""
    n, m = matrix_sizes("tri", N, M)
    return convert(diagonal_band(n, m, k, lax.le), to_dtype_name(dtype) if dtype is not None else "f32")


# ---- grids ------------------------------------------------------------------------------------------

def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """jnp.meshgrid: 1-D inputs; indexing 'xy' swaps the first two output dimensions, as numpy."""
    if indexing not in ("xy", "ij"):
        raise TracingValueError(located(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}"))
    arrays = [asarray(x) for x in xi]
    for x in arrays:
        if x.ndim != 1:
            raise TracingValueError(located(f"meshgrid: arguments must be 1-D, got shape {x.shape}"))
    dims = list(range(len(arrays)))
    if indexing == "xy" and len(arrays) >= 2:
        dims[0], dims[1] = 1, 0
    shape = [1] * len(arrays)
    for x, dim in zip(arrays, dims):
        shape[dim] = x.shape[0]
    grids = []
    for x, dim in zip(arrays, dims):
        target = tuple(shape) if not sparse else tuple(size if d == dim else 1 for d, size in enumerate(shape))
        grids.append(broadcast_in_dim(x, target, (dim,)))
    return grids


def indices(dimensions, dtype=int, sparse=False):
    """jnp.indices: a grid of index arrays, stacked (dense) or one per dimension (sparse)."""
    dims = static_shape(dimensions, "indices")
    target = to_dtype_name(dtype)
    if sparse:
        return tuple(broadcasted_iota(target, tuple(d if j == i else 1 for j, d in enumerate(dims)), i)
                     for i in range(len(dims)))
    if not dims:
        return constant(np.zeros((0,)), target)
    return lax_shape.concatenate([broadcasted_iota(target, (1,) + dims, i + 1) for i in range(len(dims))], 0)


class IndexGrid:
    """mgrid / ogrid: `mgrid[0:4, 0:1:5j]` builds a grid from slices; a complex step is a number of points."""

    def __init__(self, sparse: bool, name: str):
        self.sparse = sparse
        self.name = name

    def axis_values(self, key: slice) -> Tracer:
        if not isinstance(key, slice):
            raise TracingTypeError(located(f"{self.name}[...] takes slices, got {key!r}"))
        start = 0 if key.start is None else static_scalar(key.start, f"{self.name} start")
        stop = static_scalar(key.stop, f"{self.name} stop")
        step = 1 if key.step is None else static_scalar(key.step, f"{self.name} step")
        if isinstance(step, complex) or np.iscomplexobj(step):
            return linspace(start, stop, int(abs(step)), endpoint=True)
        return arange(start, stop, step)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return self.axis_values(key)
        axes = [self.axis_values(k) for k in key]
        dtype = result_type(*axes)[0]
        grids = meshgrid(*(convert(a, dtype) for a in axes), indexing="ij", sparse=self.sparse)
        if self.sparse:
            return grids
        return stack_leading(grids) if grids else constant(np.zeros((0,)), dtype)


mgrid = IndexGrid(sparse=False, name="mgrid")
ogrid = IndexGrid(sparse=True, name="ogrid")
