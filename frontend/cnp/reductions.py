"""cdnajit.numpy reductions: sums and extrema, statistics, arg-reductions, cumulative
reductions, sorting and order statistics, with jax.numpy's semantics (64-bit types enabled).

Dtype rules follow jnp: sum/prod (and cumulative_sum/prod) of bools and narrow integers give
i64 (unsigned: u64); mean/var/std of bools and integers give f32 (of 64-bit integers f64), jnp's
to-inexact rule; f16/bf16 statistics accumulate in f32 and round once; var/std of complex give the
real dtype; indices are i64.
"""
from __future__ import annotations

import builtins
import math

from ...errors import TracingTypeError, TracingValueError
from ...ir.ops.reduce import reducer_identity
from ...ir.types import COMPLEX_PART, NUMPY_DTYPES
from ..dtypes import is_complex, is_inexact, is_integer, to_inexact
from ..tracing import Tracer, as_tracer, bind, bind1, constant, located
from .base import (DEFAULT_FLOAT, DEFAULT_INT, broadcast_to, canonical_axes, canonical_axis, complex_not_implemented,
                   convert, dtype_and_weak, result_type, shape_of, to_dtype_name)

__all__ = ["sum", "prod", "max", "min", "amax", "amin", "any", "all", "mean", "var", "std", "average",
           "argmax", "argmin", "cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "nancumsum", "nancumprod",
           "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "count_nonzero", "ptp",
           "sort", "argsort", "quantile", "percentile", "median"]

# The elementwise op that folds `initial` into a reduction's result, per IR reducer.
COMBINE_OP = {"sum": "add", "prod": "mul", "max": "max", "min": "min", "and": "and", "or": "or"}


# ---- small builders shared by the functions below (and by contractions.py) ------------------------

def full(value, dtype: str, shape) -> Tracer:
    """A constant `value` of `dtype`, broadcast to `shape`."""
    return broadcast_to(constant(value, dtype), tuple(shape))


def is_nan(x: Tracer) -> Tracer:
    return bind1("ne", [x, x])


def nonzero(x: Tracer) -> Tracer:
    """x != 0 as bool (for complex too, where a conversion would keep only the real part)."""
    return x if x.type.dtype == "bool" else bind1("ne", [x, full(0, x.type.dtype, x.shape)])


def replace_where(mask: Tracer, value, x: Tracer) -> Tracer:
    return bind1("select", [mask, full(value, x.type.dtype, x.shape), x])


def reshape(x: Tracer, shape) -> Tracer:
    shape = tuple(shape)
    return x if x.shape == shape else bind1("reshape", [x], {"new_sizes": shape}, weak_type=x.weak_type)


def reject_out(name: str, out):
    if out is not None:
        raise NotImplementedError(located(f"{name}: the 'out' argument is not supported (arrays are immutable)"))


def promote_integer_dtype(dtype: str) -> str:
    """jnp's promote_integers: bools and narrow integers sum to i64, narrow unsigned ones to u64."""
    if dtype == "bool":
        return DEFAULT_INT
    if is_integer(dtype):
        return "u64" if NUMPY_DTYPES[dtype].kind == "u" else DEFAULT_INT
    return dtype



def upcast_half(dtype: str) -> str:
    """The dtype a statistic of `dtype` is computed in: f16/bf16 in f32, as jnp does."""
    return "f32" if dtype in ("f16", "bf16") else dtype


def kept_dims_shape(shape, axes) -> tuple[int, ...]:
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def where_mask(name: str, where, shape) -> Tracer:
    mask = as_tracer(where, f"{name}: where")
    if mask.type.dtype != "bool":
        raise TracingTypeError(located(f"{name}: where must be a boolean array, got {mask.type}"))
    return broadcast_to(mask, shape)


# ---- the reduction core ----------------------------------------------------------------------

def reduce_array(name: str, x: Tracer, axes, reducer: str, *, keepdims=False, where=None, initial=None) -> Tracer:
    """Reduce `x` (already of the result dtype) over sorted `axes` with an IR reducer, jnp style; as
    jnp's reductions, the result is strongly typed, even for a Python scalar."""
    dtype = x.type.dtype
    if where is not None:
        identity = reducer_identity(reducer, NUMPY_DTYPES[dtype])
        x = bind1("select", [where_mask(name, where, x.shape), x, full(identity, dtype, x.shape)])
    result = bind1("reduce", [x], {"reducer": reducer, "axes": tuple(axes)})
    if initial is not None:
        init = convert(as_tracer(initial, f"{name}: initial"), dtype)
        if init.shape != ():
            raise TracingValueError(located(f"{name}: initial must be a scalar, got {init.type}"))
        result = bind1(COMBINE_OP[reducer], [result, broadcast_to(init, result.shape)])
    if keepdims:
        result = reshape(result, kept_dims_shape(x.shape, axes))
    return convert(result, dtype)


def make_accumulation(name: str, reducer: str, bool_reducer: str):
    """sum or prod: integers promoted as jnp's promote_integers, bools reduced logically with dtype=bool."""
    def reduction(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
                  promote_integers=True):
        reject_out(name, out)
        x = as_tracer(a)
        axes = canonical_axes(axis, x.ndim)
        if dtype is not None:
            result_dtype = to_dtype_name(dtype)
        else:
            # Without promote_integers jnp still counts bools, in int32.
            result_dtype = promote_integer_dtype(x.type.dtype) if promote_integers else \
                "i32" if x.type.dtype == "bool" else x.type.dtype
        return reduce_array(name, convert(x, result_dtype), axes, bool_reducer if result_dtype == "bool" else reducer,
                            keepdims=keepdims, where=where, initial=initial)
    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = f"jnp.{name}: the {name} of the elements over `axis`."
    return reduction


def make_extremum(name: str, reducer: str):
    """max or min: no identity, so an empty reduction or a where mask needs `initial`."""
    def reduction(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        reject_out(name, out)
        x = as_tracer(a)
        complex_not_implemented(name, x)
        axes = canonical_axes(axis, x.ndim)
        if initial is None:
            if where is not None:
                raise TracingValueError(located(f"reduction operation {name} does not have an identity, so to use a "
                                                f"where mask one has to specify 'initial'"))
            if builtins.any(x.shape[i] == 0 for i in axes):
                raise TracingValueError(located(f"zero-size array to reduction operation {name} which has no "
                                                f"identity (array of shape {x.shape}, axis {axis})"))
        return reduce_array(name, x, axes, reducer, keepdims=keepdims, where=where, initial=initial)
    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = f"jnp.{name}: the {name}imum over `axis` (NaN if any element is NaN)."
    return reduction


def make_logical(name: str, reducer: str):
    """any or all: the truth of the elements, reduced with or / and."""
    def reduction(a, axis=None, out=None, keepdims=False, *, where=None):
        reject_out(name, out)
        x = as_tracer(a)
        return reduce_array(name, nonzero(x), canonical_axes(axis, x.ndim), reducer, keepdims=keepdims, where=where)
    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = f"jnp.{name}: whether {name} elements over `axis` are nonzero."
    return reduction


sum = make_accumulation("sum", "sum", "or")
prod = make_accumulation("prod", "prod", "and")
max = amax = make_extremum("max", "max")
min = amin = make_extremum("min", "min")
any = make_logical("any", "or")
all = make_logical("all", "and")


# ---- statistics ------------------------------------------------------------------------------

def element_count(name: str, x: Tracer, axes, keepdims, where, dtype: str, result_shape) -> Tracer:
    """How many elements each result element reduces over (those selected by `where`), as `dtype`."""
    if where is None:
        return full(math.prod(x.shape[i] for i in axes), dtype, result_shape)
    return sum(where_mask(name, where, x.shape), axes, dtype=dtype, keepdims=keepdims)


def statistic_dtype(name: str, dtype) -> str:
    """A statistic's dtype= argument; as jnp, bool is refused."""
    result = to_dtype_name(dtype)
    if result == "bool":
        raise TracingTypeError(located(f"{name}: dtype bool is not supported; use a numeric dtype"))
    return result


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """jnp.mean: integers give f64; f16/bf16 accumulate in f32."""
    reject_out("mean", out)
    x = as_tracer(a)
    axes = canonical_axes(axis, x.ndim)
    result_dtype = statistic_dtype("mean", dtype) if dtype is not None else to_inexact(x.type.dtype)
    compute = upcast_half(to_inexact(result_dtype))
    total = sum(x, axes, dtype=compute, keepdims=keepdims, where=where)
    if where is None and math.prod(x.shape[i] for i in axes) == 1:
        # XLA simplifies JAX's division by a count of 1 away; for complex values that matters: a
        # complex division by 1 + 0i spreads a NaN real part to the imaginary part.
        return convert(total, result_dtype)
    count = element_count("mean", x, axes, keepdims, where, compute, total.shape)
    return convert(bind1("div", [total, count]), result_dtype)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    """jnp.var: mean squared deviation, divided by (count - ddof); complex input gives its real dtype."""
    reject_out("var", out)
    if correction is not None:
        if ddof != 0:
            raise TracingValueError(located("var: ddof and correction can't both be specified"))
        ddof = correction
    x = as_tracer(a)
    axes = canonical_axes(axis, x.ndim)
    if dtype is None:
        result_dtype = COMPLEX_PART.get(to_inexact(x.type.dtype), to_inexact(x.type.dtype))
        compute = upcast_half(to_inexact(x.type.dtype))
    else:
        result_dtype = to_dtype_name(dtype)
        if is_complex(x.type.dtype) and not is_complex(result_dtype):
            raise TracingValueError(located(f"var: a real dtype {result_dtype} for the variance of a complex array "
                                            f"{x.type} is not supported; use a complex dtype"))
        statistic_dtype("var", dtype)
        compute = upcast_half(result_dtype)
    x = convert(x, compute)
    centered = bind1("sub", [x, broadcast_to(mean(x, axes, dtype=compute, keepdims=True, where=where), x.shape)])
    if is_complex(compute):
        squared = bind1("real", [bind1("mul", [centered, bind1("conj", [centered])])])
    else:
        squared = bind1("mul", [centered, centered])
    total = sum(squared, axes, keepdims=keepdims, where=where)
    if is_integer(compute):
        # jnp computes an integer dtype's variance in that dtype and divides by a Python float: the
        # result is a weakly typed f64.
        total, squared = convert(total, DEFAULT_FLOAT), convert(squared, DEFAULT_FLOAT)
        result_dtype = DEFAULT_FLOAT
    count = element_count("var", x, axes, keepdims, where, squared.type.dtype, total.shape)
    count = bind1("sub", [count, full(ddof, squared.type.dtype, count.shape)])
    variance = bind1("div", [total, count])
    if dtype is None:
        return convert(variance, COMPLEX_PART.get(result_dtype, result_dtype))
    return convert(variance, result_dtype, weak_type=is_integer(compute))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    """jnp.std: the square root of var."""
    if dtype is not None and not is_inexact(to_dtype_name(dtype)):
        raise TracingValueError(located(f"std: dtype {to_dtype_name(dtype)} is not supported; use an inexact dtype"))
    return bind1("sqrt", [var(a, axis, dtype, out, ddof, keepdims, where=where, correction=correction)])


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """jnp.average: the weighted mean; 1-d weights apply along a single `axis`."""
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        x = as_tracer(a)
        scale = full(math.prod(x.shape[i] for i in canonical_axes(axis, x.ndim)), avg.type.dtype, avg.shape)
        return (avg, scale) if returned else avg
    dtype = to_inexact(result_type(a, weights)[0])
    x, w = convert(as_tracer(a), dtype), convert(as_tracer(weights), dtype)
    axes = canonical_axes(axis, x.ndim)
    if w.shape != x.shape:
        if w.ndim != 1:
            raise TracingValueError(located(f"average: 1D weights expected when shapes of a {x.shape} and weights "
                                            f"{w.shape} differ"))
        if axis is None or not isinstance(axis, int):
            raise TracingValueError(located(f"average: a single axis must be specified when shapes of a {x.shape} "
                                            f"and weights {w.shape} differ"))
        (ax,) = axes
        if w.shape[0] != x.shape[ax]:
            raise TracingValueError(located(f"average: length of weights {w.shape} is not compatible with axis {axis} "
                                            f"of a {x.shape}"))
        w = broadcast_to(reshape(w, tuple(d if i == ax else 1 for i, d in enumerate(x.shape))), x.shape)
    scale = sum(w, axes, keepdims=keepdims)
    avg = bind1("div", [sum(bind1("mul", [x, w]), axes, keepdims=keepdims), scale])
    return (avg, scale) if returned else avg


def count_nonzero(a, axis=None, keepdims=False):
    """jnp.count_nonzero: an i64 count."""
    x = as_tracer(a)
    return sum(nonzero(x), canonical_axes(axis, x.ndim), dtype=DEFAULT_INT, keepdims=keepdims)


def ptp(a, axis=None, out=None, keepdims=False):
    """jnp.ptp: max - min over `axis`."""
    return bind1("sub", [max(a, axis, out, keepdims), min(a, axis, out, keepdims)])


# ---- NaN-ignoring reductions -------------------------------------------------------------------

def nan_replaced(a, value) -> Tracer:
    x = as_tracer(a)
    return replace_where(is_nan(x), value, x) if is_inexact(x.type.dtype) else x


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """jnp.nansum: the sum with NaNs counted as zero."""
    return sum(nan_replaced(a, 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """jnp.nanprod: the product with NaNs counted as one."""
    return prod(nan_replaced(a, 1), axis, dtype, out, keepdims, initial, where)


def make_nan_extremum(name: str, reduction, fill: float):
    """nanmax / nanmin: NaNs are ignored; a slice of only NaNs gives NaN."""
    def nan_reduction(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        x = as_tracer(a)
        if not is_inexact(x.type.dtype):
            return reduction(x, axis, out, keepdims, initial, where)
        result = reduction(replace_where(is_nan(x), fill, x), axis, out, keepdims, initial, where)
        all_nan = all(is_nan(x), axis, keepdims=keepdims, where=where)
        return replace_where(all_nan, math.nan, result)
    nan_reduction.__name__ = nan_reduction.__qualname__ = name
    nan_reduction.__doc__ = f"jnp.{name}: the {name[3:]}imum over `axis`, ignoring NaNs."
    return nan_reduction


nanmax = make_nan_extremum("nanmax", max, -math.inf)
nanmin = make_nan_extremum("nanmin", min, math.inf)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """jnp.nanmean: the mean of the non-NaN elements (NaN where there are none)."""
    reject_out("nanmean", out)
    x = as_tracer(a)
    if not is_inexact(x.type.dtype):
        return mean(x, axis, dtype, keepdims=keepdims, where=where)
    axes = canonical_axes(axis, x.ndim)
    result_dtype = statistic_dtype("nanmean", dtype) if dtype is not None else x.type.dtype
    compute = upcast_half(to_inexact(result_dtype))
    total = sum(nan_replaced(x, 0), axes, dtype=compute, keepdims=keepdims, where=where)
    count = sum(bind1("not", [is_nan(x)]), axes, dtype=compute, keepdims=keepdims, where=where)
    return convert(bind1("div", [total, count]), result_dtype)


# ---- arg-reductions ----------------------------------------------------------------------------

def make_arg_reduction(name: str):
    """argmax / argmin: the i64 index of the first extreme element (the first NaN, if any)."""
    def arg_reduction(a, axis=None, out=None, keepdims=None):
        reject_out(name, out)
        x = as_tracer(a)
        complex_not_implemented(name, x)
        if axis is None:
            flat = reshape(x, (x.size,))
            kept_shape = (1,) * x.ndim
            axis_index = 0
        else:
            flat = x
            axis_index = canonical_axis(axis, x.ndim)
            kept_shape = kept_dims_shape(x.shape, (axis_index,))
        if flat.shape[axis_index] == 0:
            raise TracingValueError(located(f"attempt to get {name} of an empty sequence (array of shape {x.shape}, "
                                            f"axis {axis})"))
        result = bind1(name, [flat], {"axis": axis_index, "index_dtype": DEFAULT_INT})
        return reshape(result, kept_shape) if keepdims else result
    arg_reduction.__name__ = arg_reduction.__qualname__ = name
    arg_reduction.__doc__ = f"jnp.{name}: i64 indices of the {name[3:]}ima along `axis` (flattened if None)."
    return arg_reduction


argmax = make_arg_reduction("argmax")
argmin = make_arg_reduction("argmin")


# ---- cumulative reductions ---------------------------------------------------------------------

def cumulative(name: str, reducer: str, a, axis, dtype, *, nan_fill=None, promote_integers=False) -> Tracer:
    """An inclusive scan along `axis` (the flattened array if None), in `dtype` if given.

    As jnp's cumsum/cumprod, integers keep their dtype and bools scan as i64; the array API's
    cumulative_sum/prod widen integers as sum does (promote_integers). A bool `dtype` scans the
    truth values in i64 and converts back, as jnp does.
    """
    x = as_tracer(a)
    if axis is None:
        x, axis = reshape(x, (x.size,)), 0
    axis = canonical_axis(axis, x.ndim)
    if nan_fill is not None:
        x = nan_replaced(x, nan_fill)
    requested = to_dtype_name(dtype) if dtype is not None else None
    if requested == "bool":
        x = nonzero(x)
    if requested not in (None, "bool"):
        scan_dtype = requested
    elif promote_integers:
        scan_dtype = promote_integer_dtype(x.type.dtype)
    else:
        scan_dtype = DEFAULT_INT if x.type.dtype == "bool" else x.type.dtype
    result = bind1("cumulative", [convert(x, scan_dtype)], {"reducer": reducer, "axis": axis, "reverse": False})
    return nonzero(result) if requested == "bool" else result


def cumsum(a, axis=None, dtype=None, out=None):
    """jnp.cumsum."""
    reject_out("cumsum", out)
    return cumulative("cumsum", "sum", a, axis, dtype)


def cumprod(a, axis=None, dtype=None, out=None):
    """jnp.cumprod."""
    reject_out("cumprod", out)
    return cumulative("cumprod", "prod", a, axis, dtype)


def nancumsum(a, axis=None, dtype=None, out=None):
    """jnp.nancumsum: cumsum with NaNs counted as zero."""
    reject_out("nancumsum", out)
    return cumulative("nancumsum", "sum", a, axis, dtype, nan_fill=0)


def nancumprod(a, axis=None, dtype=None, out=None):
    """jnp.nancumprod: cumprod with NaNs counted as one."""
    reject_out("nancumprod", out)
    return cumulative("nancumprod", "prod", a, axis, dtype, nan_fill=1)


def make_array_api_cumulative(name: str, reducer: str, initial_value: int, promote_integers: bool):
    """cumulative_sum / cumulative_prod (array API): axis required beyond 1-d, optional initial element.
    jnp's cumulative_sum widens integers as sum does; its cumulative_prod keeps them."""
    def array_api_cumulative(x, /, *, axis=None, dtype=None, include_initial=False):
        x = as_tracer(x)
        if x.ndim == 0:
            raise TracingValueError(located(f"{name}: the input must be non-scalar, got {x.type}"))
        if axis is None:
            if x.ndim > 1:
                raise TracingValueError(located(f"{name}: the input {x.type} has rank {x.ndim}; the axis argument "
                                                f"is only optional for one-dimensional arrays"))
            axis = 0
        axis = canonical_axis(axis, x.ndim)
        result = cumulative(name, reducer, x, axis, dtype, promote_integers=promote_integers)
        if not include_initial:
            return result
        shape = tuple(1 if i == axis else d for i, d in enumerate(result.shape))
        return bind1("concatenate", [full(initial_value, result.type.dtype, shape), result], {"dimension": axis})
    array_api_cumulative.__name__ = array_api_cumulative.__qualname__ = name
    array_api_cumulative.__doc__ = f"jnp.{name}: the inclusive scan along `axis`, optionally with its initial element."
    return array_api_cumulative


cumulative_sum = make_array_api_cumulative("cumulative_sum", "sum", 0, promote_integers=True)
cumulative_prod = make_array_api_cumulative("cumulative_prod", "prod", 1, promote_integers=False)


# ---- sorting and order statistics ----------------------------------------------------------------

def sorted_along(operands, axis: int, num_keys: int = 1, stable: bool = True) -> list[Tracer]:
    """The IR sort: operands of one shape sorted together by the first `num_keys` (NaNs last); each
    result keeps its operand's weak type, as lax.sort's."""
    results = bind("sort", list(operands), {"dimension": axis, "is_stable": stable, "num_keys": num_keys})
    return [Tracer(r.value, r.owner, x.weak_type) for r, x in zip(results, operands)]


def flat_and_axis(a, axis) -> tuple[Tracer, int]:
    x = as_tracer(a)
    if axis is None:
        return reshape(x, (x.size,)), 0
    return x, canonical_axis(axis, x.ndim)


def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """jnp.sort: ascending with NaNs last, or descending (NaNs first); the flattened array if axis is None."""
    if order is not None:
        raise NotImplementedError(located("sort: the 'order' argument (structured arrays) is not supported"))
    x, axis = flat_and_axis(a, axis)
    (result,) = sorted_along([x], axis, stable=stable)
    return bind1("rev", [result], {"dimensions": (axis,)}, weak_type=x.weak_type) if descending else result


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """jnp.argsort: i64 indices that sort `a` along axis; ties keep their order (also descending)."""
    if order is not None:
        raise NotImplementedError(located("argsort: the 'order' argument (structured arrays) is not supported"))
    x, axis = flat_and_axis(a, axis)
    if descending:
        # Sort the reversed array ascending and reverse the result: descending, ties in order.
        x = bind1("rev", [x], {"dimensions": (axis,)})
    iota = bind1("iota", [], {"dtype": DEFAULT_INT, "shape": x.shape, "dimension": axis})
    _, indices = sorted_along([x, iota], axis, stable=stable)
    if not descending:
        return indices
    indices = bind1("rev", [indices], {"dimensions": (axis,)})
    return bind1("sub", [full(x.shape[axis] - 1, DEFAULT_INT, x.shape), indices])


QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """jnp.quantile: q in [0, 1] (scalar or array: its shape leads the result); NaN if a slice has a NaN."""
    reject_out("quantile", out)
    if method not in QUANTILE_METHODS:
        raise TracingValueError(located(f"quantile: method {method!r} is not one of {', '.join(QUANTILE_METHODS)}"))
    dtype = to_inexact(dtype_and_weak(a)[0])  # jnp promotes a alone; q takes its dtype
    if is_complex(dtype):
        raise TracingValueError(located(f"quantile: complex input {dtype} has no order"))
    x, q = convert(as_tracer(a), dtype), convert(as_tracer(q), dtype)
    axes = canonical_axes(axis, x.ndim)
    if builtins.any(x.shape[i] == 0 for i in axes):
        raise TracingValueError(located(f"quantile: reduction over the empty axis {axis} of shape {x.shape}"))
    # Gather wants the reduced elements first: move them there, flattened into one dimension.
    kept = [i for i in range(x.ndim) if i not in axes]
    n = math.prod(x.shape[i] for i in axes)
    moved = reshape(bind1("transpose", [x], {"permutation": tuple(axes) + tuple(kept)}),
                    (n,) + tuple(x.shape[i] for i in kept))
    (ordered,) = sorted_along([moved], 0)
    position = bind1("mul", [q, full(n - 1, dtype, q.shape)])
    low = bind1("floor", [position])
    high = bind1("ceil", [position])
    high_weight = bind1("sub", [position, low])

    def at(index):  # ordered[index] for every q: shape q.shape + kept shape
        indices = reshape(convert(index, DEFAULT_INT), q.shape + (1,))
        return bind1("gather", [ordered, indices])

    def spread(w):  # a q-shaped value broadcast against the kept dimensions
        return broadcast_to(reshape(w, q.shape + (1,) * len(kept)), q.shape + ordered.shape[1:])

    if method == "lower":
        result = at(low)
    elif method == "higher":
        result = at(high)
    elif method == "nearest":  # jnp picks the lower element on a tie
        pred = bind1("le", [high_weight, full(0.5, dtype, q.shape)])
        result = bind1("select", [spread(pred), at(low), at(high)])
    else:
        weight = full(0.5, dtype, q.shape) if method == "midpoint" else high_weight
        low_part = bind1("mul", [at(low), spread(bind1("sub", [full(1, dtype, q.shape), weight]))])
        result = bind1("add", [low_part, bind1("mul", [at(high), spread(weight)])])
    has_nan = any(is_nan(moved), axis=0)
    result = replace_where(broadcast_to(has_nan, result.shape), math.nan, result)
    if keepdims:
        result = reshape(result, q.shape + kept_dims_shape(x.shape, axes))
    return result


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """jnp.percentile: quantile of q / 100."""
    dtype = to_inexact(dtype_and_weak(a)[0])
    fraction = bind1("div", [convert(as_tracer(q), dtype), full(100, dtype, shape_of(q))])
    return quantile(a, fraction, axis, out, overwrite_input, method, keepdims)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """jnp.median: the midpoint quantile 0.5."""
    return quantile(a, 0.5, axis, out, overwrite_input, method="midpoint", keepdims=keepdims)
