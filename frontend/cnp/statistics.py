"""Statistics, as jax.numpy: cov, corrcoef, the NaN-ignoring nanvar/nanstd, nanquantile,
nanpercentile, nanmedian, nanargmax and nanargmin.

The NaN-ignoring order statistics sort each slice (NaNs go last) and interpolate among its
first `count` elements, `count` being the slice's number of non-NaN values.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import TracingTypeError, TracingValueError
from ...ir.types import COMPLEX_PART
from ..dtypes import is_complex, is_inexact, to_inexact
from ..tracing import is_python_scalar, located
from . import contractions as con
from . import elementwise as el
from . import reductions as red
from . import shaping as sh
from .base import DEFAULT_INT, canonical_axes, convert, result_type, to_dtype_name
from .creation import asarray
from .indexing_funcs import take_along_axis

__all__ = ["cov", "corrcoef", "nanvar", "nanstd", "nanquantile", "nanpercentile", "nanmedian", "nanargmax",
           "nanargmin"]


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """jnp.cov: the covariance matrix of the variables (rows, or columns if not rowvar), with
    frequency and analytic weights; a single variable gives a 0-d result."""
    x = asarray(m)
    if x.ndim > 2:
        raise TracingValueError(located(f"cov: m has more than 2 dimensions (shape {x.shape})"))
    dtype = to_inexact(result_type(x, *(() if y is None else (y,)))[0])
    variables = sh.atleast_2d(convert(x, dtype))
    if not rowvar and x.ndim != 1:
        variables = sh.transpose(variables)
    if variables.shape[0] == 0:
        return sh.reshape(asarray(np.zeros(0), dtype), (0, 0))
    if y is not None:
        other = sh.atleast_2d(convert(asarray(y), dtype))
        if not rowvar and other.shape[0] != 1:
            other = sh.transpose(other)
        variables = sh.concatenate([variables, other], axis=0)
    ddof = (1 if not bias else 0) if ddof is None else ddof
    n = variables.shape[1]
    weights = None
    if fweights is not None:
        fweights = asarray(fweights)
        if fweights.ndim != 1 or fweights.shape[0] != n:
            raise TracingValueError(located(f"cov: fweights must be 1-d with one entry per observation ({n})"))
        weights = fweights
    if aweights is not None:
        aweights = asarray(aweights)
        if aweights.ndim != 1 or aweights.shape[0] != n:
            raise TracingValueError(located(f"cov: aweights must be 1-d with one entry per observation ({n})"))
        weights = aweights if weights is None else el.multiply(weights, aweights)
    average, weight_sum = red.average(variables, axis=1, weights=weights, returned=True)
    weight_sum = weight_sum[0]
    if weights is None:
        factor = n - ddof
    elif ddof == 0:
        factor = weight_sum
    elif aweights is None:
        factor = el.subtract(weight_sum, ddof)
    else:
        factor = el.subtract(weight_sum, el.divide(el.multiply(ddof, red.sum(el.multiply(weights, aweights))),
                                                   weight_sum))
    centered = el.subtract(variables, average[:, None])
    weighted = centered if weights is None else el.multiply(centered, weights)
    product = con.matmul(centered, el.conj(sh.transpose(weighted)) if is_complex(dtype) else sh.transpose(weighted))
    return sh.squeeze(el.true_divide(product, factor))


def corrcoef(x, y=None, rowvar=True):
    """jnp.corrcoef: the correlation coefficients, cov / (std_i std_j), clipped to [-1, 1]."""
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return el.divide(c, c)
    stddev = convert(el.sqrt(el.real(sh.diagonal(c))), c.type.dtype)
    c = el.divide(el.divide(c, stddev[:, None]), stddev[None, :])
    if is_complex(c.type.dtype):
        return el.add(el.clip(el.real(c), -1, 1), el.multiply(1j, el.clip(el.imag(c), -1, 1)))
    return el.clip(c, -1, 1)


# ---- NaN-ignoring moments --------------------------------------------------------------------------

def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    """jnp.nanvar: the variance of the non-NaN elements, NaN where fewer than ddof + 1 remain."""
    red.reject_out("nanvar", out)
    x = asarray(a)
    if dtype is not None:
        target = to_dtype_name(dtype)
    else:
        target = COMPLEX_PART.get(x.type.dtype) or to_inexact(x.type.dtype)
    x = convert(x, x.type.dtype if is_complex(x.type.dtype) else red.upcast_half(target))
    axes = canonical_axes(axis, x.ndim)
    mean = red.nanmean(x, axes, keepdims=True, where=where)
    nan = el.isnan(x)
    centered = el.where(nan, 0, el.subtract(x, mean))
    squared = el.square(el.abs(centered)) if is_complex(centered.type.dtype) else el.square(centered)
    count = el.subtract(red.sum(el.logical_not(nan), axes, keepdims=keepdims, where=where, dtype=DEFAULT_INT), ddof)
    too_few = el.less_equal(count, 0)
    total = red.sum(squared, axes, keepdims=keepdims, where=where)
    result = el.divide(el.where(too_few, np.nan, total), convert(el.where(too_few, 1, count), total.type.dtype))
    return convert(result, target)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    """jnp.nanstd: the square root of nanvar."""
    return el.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where))


# ---- NaN-ignoring order statistics ----------------------------------------------------------------------

def quantile_dtype(a, q) -> str:
    """a's inexact dtype; a Python scalar q does not widen it (jnp promotes a and q apart)."""
    return to_inexact(result_type(a)[0] if is_python_scalar(q) else result_type(a, q)[0])


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """jnp.nanquantile: quantile of the non-NaN elements of each slice (NaN for an all-NaN slice)."""
    red.reject_out("nanquantile", out)
    if method not in red.QUANTILE_METHODS:
        raise TracingValueError(located(f"nanquantile: method {method!r} is not one of "
                                        f"{', '.join(red.QUANTILE_METHODS)}"))
    dtype = quantile_dtype(a, q)
    if is_complex(dtype):
        raise TracingTypeError(located(f"nanquantile: complex input {dtype} has no order"))
    x, q = convert(asarray(a), dtype), convert(asarray(q), dtype)
    axes = canonical_axes(axis, x.ndim)
    if any(x.shape[i] == 0 for i in axes):
        raise TracingValueError(located(f"nanquantile: reduction over the empty axis {axis} of shape {x.shape}"))
    kept = [i for i in range(x.ndim) if i not in axes]
    n = math.prod(x.shape[i] for i in axes)
    moved = sh.reshape(sh.transpose(x, tuple(axes) + tuple(kept)), (n,) + tuple(x.shape[i] for i in kept))
    ordered = red.sort(moved, axis=0)  # NaNs last
    count = red.sum(el.logical_not(el.isnan(moved)), axis=0, dtype=dtype)  # kept shape
    rest = ordered.shape[1:]
    q_column = sh.reshape(q, q.shape + (1,) * len(rest))
    position = el.multiply(q_column, el.subtract(count, 1))  # q.shape + kept shape
    low, high = el.floor(position), el.ceil(position)
    high_weight = el.subtract(position, low)

    index_shape = (q.size,) + rest
    low_i = sh.reshape(sh.broadcast_to(low, position.shape), index_shape)
    high_i = sh.reshape(sh.broadcast_to(high, position.shape), index_shape)

    def gather(index):  # ordered[index[j, k...], k...] for every q j
        picked = take_along_axis(ordered, el.clip(convert(index, DEFAULT_INT), 0, n - 1), axis=0, mode="clip")
        return sh.reshape(picked, position.shape)

    if method == "lower":
        result = gather(low_i)
    elif method == "higher":
        result = gather(high_i)
    elif method == "nearest":  # the lower element on a tie, as jnp
        result = el.where(el.less_equal(high_weight, 0.5), gather(low_i), gather(high_i))
    else:
        weight = 0.5 if method == "midpoint" else high_weight
        result = el.add(el.multiply(gather(low_i), el.subtract(1, weight)), el.multiply(gather(high_i), weight))
    result = el.where(sh.broadcast_to(el.equal(count, 0), result.shape), np.nan, result)
    if keepdims:
        result = sh.reshape(result, q.shape + red.kept_dims_shape(x.shape, axes))
    return result


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """jnp.nanpercentile: nanquantile of q / 100."""
    dtype = quantile_dtype(a, q)
    return nanquantile(a, el.divide(convert(asarray(q), dtype), 100), axis, out, overwrite_input, method, keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """jnp.nanmedian: the midpoint nanquantile 0.5."""
    return nanquantile(a, 0.5, axis, out, overwrite_input, method="midpoint", keepdims=keepdims)


def make_nan_arg_reduction(name: str, reduction, fill: float):
    """nanargmax / nanargmin: the arg-reduction with NaNs ignored; -1 for an all-NaN slice."""
    def nan_arg_reduction(a, axis=None, out=None, keepdims=None):
        red.reject_out(name, out)
        x = asarray(a)
        if not is_inexact(x.type.dtype):
            return reduction(x, axis, keepdims=keepdims)
        nan = el.isnan(x)
        result = reduction(el.where(nan, fill, x), axis, keepdims=keepdims)
        return el.where(red.all(nan, axis=axis, keepdims=bool(keepdims)), -1, result)
    nan_arg_reduction.__name__ = nan_arg_reduction.__qualname__ = name
    nan_arg_reduction.__doc__ = f"jnp.{name}: i64 indices of the {name[6:]}ima along axis, ignoring NaNs."
    return nan_arg_reduction


nanargmax = make_nan_arg_reduction("nanargmax", red.argmax, -np.inf)
nanargmin = make_nan_arg_reduction("nanargmin", red.argmin, np.inf)
