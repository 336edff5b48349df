"""Numerical functions, as jax.numpy: differences and integrals (diff, ediff1d, gradient,
trapezoid, interp, unwrap), products (kron, cross, vander, convolve, correlate), polynomials,
window functions and i0, and integer and float bit functions (gcd, lcm, ldexp, frexp, nextafter,
spacing, bitwise_count, packbits, unpackbits).

roots and poly of a matrix use linalg.eigvals (the solver library's geev), polyfit linalg.lstsq.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import ConcretizationError, TracingTypeError, TracingValueError
from .. import lax_bitcast, lax_shape
from ..dtypes import is_bool, is_complex, is_integer, to_inexact
from ..lax_contract import conv_general_dilated
from ..lax_control import while_loop
from ..lax_elementwise import static_int
from ..tracing import Tracer, located
from . import elementwise as el
from . import reductions as red
from . import shaping as sh
from .base import DEFAULT_FLOAT, canonical_axis, convert, promote_args, result_type
from .array_funcs import trim_zeros
from .creation import arange, asarray, eye, ones, zeros
from .histograms import searchsorted

__all__ = ["diff", "ediff1d", "gradient", "trapezoid", "interp", "unwrap", "kron", "cross", "vander", "convolve",
           "correlate", "polyval", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint", "poly",
           "polyfit", "roots", "bartlett", "blackman", "hamming", "hanning", "kaiser", "i0", "gcd", "lcm", "ldexp",
           "frexp", "nextafter", "spacing", "bitwise_count", "packbits", "unpackbits"]


def inexact(*xs) -> list[Tracer]:
    """The operands promoted together, then to their inexact dtype (jnp's promote_dtypes_inexact),
    without broadcasting."""
    dtype = to_inexact(result_type(*xs)[0])
    return [convert(asarray(x), dtype) for x in xs]


# ---- differences and integrals ---------------------------------------------------------------------

def diff(a, n=1, axis=-1, prepend=None, append=None):
    """jnp.diff: the n-th discrete difference along axis (not_equal for bools)."""
    x = asarray(a)
    n = static_int(n, "diff n")
    if n < 0:
        raise TracingValueError(located(f"diff: order n must be non-negative, got {n}"))
    if n == 0:
        return x
    if x.ndim == 0:
        raise TracingValueError(located("diff requires an input of at least one dimension"))
    axis = canonical_axis(axis, x.ndim)
    parts = []
    for extra in (prepend, x, append):
        if extra is None:
            continue
        e = asarray(extra)
        if e.ndim == 0:
            e = sh.broadcast_to(e, tuple(1 if i == axis else d for i, d in enumerate(x.shape)))
        parts.append(e)
    if len(parts) > 1:
        x = sh.concatenate(parts, axis=axis)
    for _ in range(n):
        if x.shape[axis] == 0:
            break
        upper = lax_shape.slice_in_dim(x, 1, x.shape[axis], axis=axis)
        lower = lax_shape.slice_in_dim(x, 0, max(x.shape[axis] - 1, 0), axis=axis)
        x = el.not_equal(upper, lower) if is_bool(x.type.dtype) else el.subtract(upper, lower)
    return x


def ediff1d(ary, to_end=None, to_begin=None):
    """jnp.ediff1d: differences of the flattened array, with to_begin/to_end (in its dtype) around them."""
    x = sh.ravel(ary)
    result = el.subtract(x[1:], x[:-1]) if x.size else x
    parts = [result]
    if to_begin is not None:
        parts.insert(0, convert(sh.ravel(to_begin), x.type.dtype))
    if to_end is not None:
        parts.append(convert(sh.ravel(to_end), x.type.dtype))
    return sh.concatenate(parts) if len(parts) > 1 else result


def gradient_along(f: Tracer, h, axis: int) -> Tracer:
    """Central differences inside, one-sided ones at the two ends; h a scalar spacing or coordinates."""
    def part(start, stop, x=f):
        return lax_shape.slice_in_dim(x, start, stop % (x.shape[axis] + 1) if stop < 0 else stop, axis=axis)

    n = f.shape[axis]
    first = el.subtract(part(1, 2), part(0, 1))
    last = el.subtract(part(n - 1, n), part(n - 2, n - 1))
    if np.ndim(h) == 0 and not (isinstance(h, Tracer) and h.ndim):
        inner = el.divide(el.multiply(el.subtract(part(2, n), part(0, n - 2)), 0.5), h)
        first, last = el.divide(first, h), el.divide(last, h)
    else:
        x = convert(asarray(h), f.type.dtype)
        if x.shape != (n,):
            raise TracingValueError(located(f"gradient: coordinates of shape {x.shape} do not match axis {axis} "
                                            f"of size {n}"))
        x = sh.reshape(x, tuple(n if i == axis else 1 for i in range(f.ndim)))
        first = el.divide(first, el.subtract(part(1, 2, x), part(0, 1, x)))
        last = el.divide(last, el.subtract(part(n - 1, n, x), part(n - 2, n - 1, x)))
        dx1 = el.subtract(part(1, n - 1, x), part(0, n - 2, x))
        dx2 = el.subtract(part(2, n, x), part(1, n - 1, x))
        weight_low = el.negative(el.divide(dx2, el.multiply(dx1, el.add(dx1, dx2))))
        weight_mid = el.divide(el.subtract(dx2, dx1), el.multiply(dx1, dx2))
        weight_high = el.divide(dx1, el.multiply(dx2, el.add(dx1, dx2)))
        inner = el.add(el.add(el.multiply(weight_low, part(0, n - 2)), el.multiply(weight_mid, part(1, n - 1))),
                       el.multiply(weight_high, part(2, n)))
    return sh.concatenate([first, inner, last], axis=axis)


def gradient(f, *varargs, axis=None, edge_order=None):
    """jnp.gradient: second-order central differences inside, first-order at the edges, per axis."""
    if edge_order is not None:
        raise NotImplementedError(located("gradient: edge_order is not supported (as in JAX): the edges are "
                                          "first-order differences"))
    (x,) = inexact(f)
    axes = tuple(range(x.ndim)) if axis is None else tuple(
        canonical_axis(a, x.ndim) for a in ((axis,) if isinstance(axis, int) else axis))
    if not axes:
        return []
    if any(x.shape[a] < 2 for a in axes):
        raise TracingValueError(located(f"gradient: the shape {x.shape} is too small to calculate a numerical "
                                        f"gradient: each axis needs at least 2 elements"))
    if not varargs:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TracingValueError(located(f"gradient: give one spacing, or one per axis ({len(axes)}), got "
                                        f"{len(varargs)}"))
    results = [gradient_along(x, h, a) for h, a in zip(spacings, axes)]
    return results[0] if len(axes) == 1 else results


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """jnp.trapezoid: the trapezoidal rule along axis, with sample points x or spacing dx."""
    if x is None:
        (values,) = inexact(y)
        widths = asarray(dx)
    else:
        values, points = inexact(y, x)
        widths = diff(points) if points.ndim == 1 else sh.moveaxis(diff(points, axis=axis), axis, -1)
    values = sh.moveaxis(values, axis, -1)
    heights = el.add(values[..., 1:], values[..., :-1])
    return el.multiply(0.5, red.sum(el.multiply(widths, heights), axis=-1))


def interp(x, xp, fp, left=None, right=None, period=None):
    """jnp.interp: piecewise-linear interpolation of (xp, fp) at x (xp increasing); left/right are the
    values outside, or with period the points wrap around."""
    x_arr, xp_arr = inexact(x, xp)
    (fp_arr,) = inexact(fp)
    if xp_arr.ndim != 1 or fp_arr.ndim != 1 or xp_arr.shape != fp_arr.shape or not xp_arr.size:
        raise TracingValueError(located(f"interp: xp and fp must be nonempty 1-d arrays of one length, got "
                                        f"shapes {xp_arr.shape} and {fp_arr.shape}"))
    if period is not None:
        if np.ndim(period) != 0:
            raise TracingValueError(located(f"interp: period must be a scalar, got {period!r}"))
        period = el.abs(period)
        x_arr, xp_arr = el.remainder(x_arr, period), el.remainder(xp_arr, period)
        order = red.argsort(xp_arr)
        xp_arr, fp_arr = xp_arr[order], fp_arr[order]
        xp_arr = sh.concatenate([el.subtract(xp_arr[-1:], period), xp_arr, el.add(xp_arr[:1], period)])
        fp_arr = sh.concatenate([fp_arr[-1:], fp_arr, fp_arr[:1]])
    n = xp_arr.shape[0]
    i = el.clip(convert(searchsorted(xp_arr, x_arr, side="right"), "i64"), 1, max(n - 1, 1))
    below = el.subtract(i, 1)
    df = el.subtract(fp_arr[i], fp_arr[below])
    dx = el.subtract(xp_arr[i], xp_arr[below])
    delta = el.subtract(x_arr, xp_arr[below])
    epsilon = np.spacing(np.finfo(xp_arr.dtype).eps)
    flat = el.less_equal(el.abs(dx), epsilon)
    f = el.where(flat, fp_arr[below], el.add(fp_arr[below], el.multiply(el.divide(delta, el.where(flat, 1, dx)), df)))
    if period is None:
        f = el.where(el.less(x_arr, xp_arr[0]), fp_arr[0] if left is None else left, f)
        f = el.where(el.greater(x_arr, xp_arr[-1]), fp_arr[-1] if right is None else right, f)
    return f


def unwrap(p, discont=None, axis=-1, period=2 * math.pi):
    """jnp.unwrap: p with jumps larger than discont (default period/2) replaced by their period
    complement, along axis."""
    if is_complex(asarray(p).type.dtype):
        raise TracingValueError(located("unwrap does not support complex input"))
    values, period = promote_args("unwrap", p, period, inexact=True)[0], period
    if values.ndim == 0:
        return values
    axis = canonical_axis(axis, values.ndim)
    discont = period / 2 if discont is None else discont
    interval = period / 2
    dd = diff(values, axis=axis)
    ddmod = el.subtract(el.remainder(el.add(dd, interval), period), interval)
    ddmod = el.where(el.logical_and(el.equal(ddmod, -interval), el.greater(dd, 0)), interval, ddmod)
    correction = el.where(el.less(el.abs(dd), discont), 0, el.subtract(ddmod, dd))
    head = lax_shape.slice_in_dim(values, 0, 1, axis=axis)
    tail = el.add(lax_shape.slice_in_dim(values, 1, values.shape[axis], axis=axis), red.cumsum(correction, axis))
    return sh.concatenate([head, tail], axis=axis)


# ---- products ------------------------------------------------------------------------------------

def kron(a, b):
    """jnp.kron: the Kronecker product (the lower-rank operand gets leading unit dimensions)."""
    x, y = (asarray(v) for v in (a, b))
    dtype, weak = result_type(x, y)
    x, y = convert(x, dtype, weak), convert(y, dtype, weak)
    ndim = max(x.ndim, y.ndim)
    x = sh.reshape(x, (1,) * (ndim - x.ndim) + x.shape)
    y = sh.reshape(y, (1,) * (ndim - y.ndim) + y.shape)
    spread_x = sh.reshape(x, tuple(s for d in x.shape for s in (d, 1)))
    spread_y = sh.reshape(y, tuple(s for d in y.shape for s in (1, d)))
    return sh.reshape(el.multiply(spread_x, spread_y), tuple(p * q for p, q in zip(x.shape, y.shape)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """jnp.cross: the cross product of 2- or 3-vectors along axisa/axisb (2-vectors give a scalar)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = asarray(a), asarray(b)
    dtype, weak = result_type(x, y)
    x, y = sh.moveaxis(convert(x, dtype, weak), axisa, -1), sh.moveaxis(convert(y, dtype, weak), axisb, -1)
    if x.shape[-1] not in (2, 3) or y.shape[-1] not in (2, 3):
        raise TracingValueError(located(f"cross: incompatible dimensions for cross product (dimension must be 2 "
                                        f"or 3), got {x.shape[-1]} and {y.shape[-1]}"))
    a0, a1 = x[..., 0], x[..., 1]
    b0, b1 = y[..., 0], y[..., 1]
    a2 = x[..., 2] if x.shape[-1] == 3 else None
    b2 = y[..., 2] if y.shape[-1] == 3 else None
    if a2 is None and b2 is None:
        return el.subtract(el.multiply(a0, b1), el.multiply(a1, b0))
    a2 = 0 if a2 is None else a2
    b2 = 0 if b2 is None else b2
    c = sh.stack([el.subtract(el.multiply(a1, b2), el.multiply(a2, b1)),
                  el.subtract(el.multiply(a2, b0), el.multiply(a0, b2)),
                  el.subtract(el.multiply(a0, b1), el.multiply(a1, b0))], axis=-1)
    return sh.moveaxis(c, -1, axisc)


def vander(x, N=None, increasing=False):
    """jnp.vander: columns of powers of the 1-d x (decreasing unless increasing)."""
    v = asarray(x)
    if v.ndim != 1:
        raise TracingValueError(located(f"vander: x must be 1-d, got shape {v.shape}"))
    n = v.shape[0] if N is None else static_int(N, "vander N")
    if n < 0:
        raise TracingValueError(located(f"vander: N must be non-negative, got {n}"))
    powers = arange(n, dtype=v.dtype) if increasing else sh.flip(arange(n, dtype=v.dtype))
    return el.power(v[:, None], powers[None, :])


CONVOLUTION_MODES = ("full", "same", "valid")


def convolution(name: str, a, v, mode: str, precision, preferred_element_type) -> Tracer:
    """convolve or correlate of 1-d arrays, as one conv_general_dilated of the longer by the shorter."""
    if mode not in CONVOLUTION_MODES:
        raise TracingValueError(located(f"{name}: mode must be one of {', '.join(CONVOLUTION_MODES)}, got "
                                        f"{mode!r}"))
    x, y = (asarray(a), asarray(v)) if preferred_element_type is not None else inexact(a, v)
    if x.ndim != 1 or y.ndim != 1:
        raise TracingValueError(located(f"{name}: only 1-d inputs are supported, got shapes {x.shape} and {y.shape}"))
    if not x.size or not y.size:
        raise TracingValueError(located(f"{name}: inputs cannot be empty, got shapes {x.shape} and {y.shape}"))
    reverse_result = False
    if name == "correlate":
        y = el.conj(y) if is_complex(y.type.dtype) else y
        if x.shape[0] < y.shape[0]:
            x, y, reverse_result = y, x, True
    else:
        if x.shape[0] < y.shape[0]:
            x, y = y, x
        y = sh.flip(y)
    m = y.shape[0]
    padding = {"valid": [(0, 0)], "same": [(m // 2, m - m // 2 - 1)], "full": [(m - 1, m - 1)]}[mode]
    result = conv_general_dilated(x[None, None, :], y[None, None, :], (1,), padding, precision=precision,
                                  preferred_element_type=preferred_element_type)[0, 0]
    return sh.flip(result) if reverse_result else result


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """jnp.convolve: the discrete linear convolution of two 1-d arrays (inexact dtype)."""
    return convolution("convolve", a, v, mode, precision, preferred_element_type)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """jnp.correlate: the cross-correlation of two 1-d arrays, conjugating v."""
    return convolution("correlate", a, v, mode, precision, preferred_element_type)


# ---- polynomials ---------------------------------------------------------------------------------

def polyval(p, x, *, unroll=16):
    """jnp.polyval: p[0] * x**(n-1) + ... + p[n-1], by Horner's rule."""
    coefficients, points = (asarray(v) for v in (p, x))
    if coefficients.ndim != 1:
        raise TracingValueError(located(f"polyval: p must be 1-d, got shape {coefficients.shape}"))
    dtype, weak = result_type(coefficients, points)
    coefficients, points = convert(coefficients, dtype, weak), convert(points, dtype, weak)
    y = zeros(points.shape, dtype)
    for i in range(coefficients.shape[0]):
        y = el.add(el.multiply(y, points), coefficients[i])
    return y


def aligned(name: str, a1, a2) -> tuple[Tracer, Tracer]:
    """Two coefficient vectors of one dtype, the shorter padded with leading zeros."""
    x, y = (asarray(v) for v in (a1, a2))
    if x.ndim != 1 or y.ndim != 1:
        raise TracingValueError(located(f"{name}: coefficients must be 1-d, got shapes {x.shape} and {y.shape}"))
    dtype, weak = result_type(x, y)
    x, y = convert(x, dtype, weak), convert(y, dtype, weak)
    n = max(x.shape[0], y.shape[0])
    return sh.pad(x, (n - x.shape[0], 0)), sh.pad(y, (n - y.shape[0], 0))


def polyadd(a1, a2):
    """jnp.polyadd: the sum of two polynomials."""
    return el.add(*aligned("polyadd", a1, a2))


def polysub(a1, a2):
    """jnp.polysub: the difference of two polynomials."""
    return el.subtract(*aligned("polysub", a1, a2))


def polymul(a1, a2, *, trim_leading_zeros=False):
    """jnp.polymul: the product of two polynomials (inexact dtype)."""
    if trim_leading_zeros:  # a value-dependent length: needs concrete coefficients
        a1, a2 = trim_zeros(a1, "f"), trim_zeros(a2, "f")
    x, y = inexact(a1, a2)
    if not x.size:
        x = zeros((1,), x.type.dtype)
    if not y.size:
        y = zeros((1,), y.type.dtype)
    return convolve(x, y, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
    """jnp.polydiv: (quotient, remainder) of polynomial division (inexact dtype; the remainder keeps u's
    length, with leading zeros)."""
    if trim_leading_zeros:
        raise NotImplementedError(located("polydiv: trim_leading_zeros=True is not supported (its result length "
                                          "depends on the values)"))
    dividend, divisor = inexact(u, v)
    m, n = dividend.shape[0] - 1, divisor.shape[0] - 1
    scale = el.divide(1.0, divisor[0])
    quotient = zeros((max(m - n + 1, 1),), dividend.type.dtype)
    for k in range(0, m - n + 1):
        d = el.multiply(scale, dividend[k])
        quotient = quotient.at[k].set(d)
        dividend = dividend.at[k:k + n + 1].add(el.negative(el.multiply(d, divisor)))
    return quotient, dividend


def polyder(p, m=1):
    """jnp.polyder: the m-th derivative of a polynomial (inexact dtype)."""
    (coefficients,) = inexact(p)
    m = static_int(m, "polyder m")
    if m < 0:
        raise TracingValueError(located(f"polyder: order of the derivative must be non-negative, got {m}"))
    if m == 0:
        return coefficients
    n = coefficients.shape[0]
    factors = np.prod(np.arange(m, n)[None, :] - np.arange(m)[:, None], axis=0) if n > m else np.zeros(0)
    return el.multiply(coefficients[:max(n - m, 0)], asarray(factors[::-1].astype(np.float64),
                                                               coefficients.type.dtype))


def polyint(p, m=1, k=None):
    """jnp.polyint: the m-th antiderivative, with integration constants k (inexact dtype)."""
    m = static_int(m, "polyint m")
    if m < 0:
        raise TracingValueError(located(f"polyint: order of the integral must be non-negative, got {m}"))
    coefficients, constants = inexact(p, 0 if k is None else k)
    if m == 0:
        return coefficients
    constants = sh.atleast_1d(constants)
    if constants.shape[0] == 1:
        constants = sh.broadcast_to(constants, (m,))
    if constants.shape != (m,):
        raise TracingValueError(located(f"polyint: k must be a scalar or have {m} entries, got shape "
                                        f"{constants.shape}"))
    n = coefficients.shape[0]
    grid = np.arange(n + m)[None, :] - np.arange(m)[:, None]
    divisors = np.maximum(1, grid).prod(axis=0)[::-1].astype(np.float64)
    return el.divide(sh.concatenate([coefficients, constants]), asarray(divisors, coefficients.type.dtype))


def poly(seq_of_zeros):
    """jnp.poly: the coefficients of the monic polynomial with the given roots (a matrix's
    characteristic polynomial's, from its eigenvalues by linalg.eigvals, complex as in JAX)."""
    from . import linalg  # linalg imports this module (cross)
    (zeros_,) = inexact(seq_of_zeros)
    if zeros_.ndim == 2 and zeros_.shape[0] == zeros_.shape[1] and zeros_.shape[0]:
        zeros_ = linalg.eigvals(zeros_)
    if zeros_.ndim != 1:
        raise TracingValueError(located(f"poly: input must be 1-d or a square 2-d array, got shape {zeros_.shape}"))
    result = ones((1,), zeros_.type.dtype)
    for k in range(zeros_.shape[0]):
        factor = sh.stack([ones((), zeros_.type.dtype), el.negative(zeros_[k])])
        result = convolve(result, factor, mode="full")
    return result if zeros_.shape[0] else ones((), zeros_.type.dtype)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """jnp.polyfit: the least-squares polynomial of degree deg through (x, y) (y may hold columns), by
    lstsq on the Vandermonde matrix with its columns scaled to unit norm, as numpy and JAX fit it."""
    from . import linalg  # linalg imports this module (cross)
    order = static_int(deg, "polyfit deg") + 1
    x, y = asarray(x), asarray(y)
    dtype = to_inexact(result_type(x, y)[0])
    x, y = convert(x, dtype), convert(y, dtype)
    if order < 1:
        raise TracingValueError(located(f"polyfit: expected deg >= 0, got {order - 1}"))
    if x.ndim != 1 or x.shape[0] == 0:
        raise TracingTypeError(located(f"polyfit: expected a non-empty 1-d x, got shape {x.shape}"))
    if y.ndim not in (1, 2) or y.shape[0] != x.shape[0]:
        raise TracingTypeError(located(f"polyfit: expected y of shape ({x.shape[0]},) or ({x.shape[0]}, k) as x "
                                       f"{x.shape}, got {y.shape}"))
    if rcond is None:
        rcond = x.shape[0] * float(np.finfo(np.dtype(x.type.numpy_dtype)).eps)
    lhs, rhs = vander(x, order), y
    if w is not None:
        w = asarray(w)
        if w.ndim != 1 or w.shape[0] != x.shape[0]:
            raise TracingTypeError(located(f"polyfit: expected w of shape ({x.shape[0]},), got {w.shape}"))
        lhs = el.multiply(lhs, sh.expand_dims(w, 1))
        rhs = el.multiply(rhs, sh.expand_dims(w, 1) if rhs.ndim == 2 else w)
    scale = el.sqrt(red.sum(el.multiply(lhs, lhs), axis=0))
    lhs = el.divide(lhs, sh.expand_dims(scale, 0))
    c, residuals, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = el.divide(c, sh.expand_dims(scale, 1) if c.ndim == 2 else scale)
    if full:
        return c, residuals, rank, s, asarray(rcond)
    if not cov:
        return c
    base = el.divide(linalg.inv(linalg.matmul(sh.swapaxes(lhs, 0, 1), lhs)), linalg.outer(scale, scale))
    if cov == "unscaled":
        factor = asarray(1.0, x.type.dtype)
    elif x.shape[0] <= order:
        raise TracingValueError(located("polyfit: the number of data points must exceed order to scale the "
                                        "covariance matrix"))
    else:
        factor = el.divide(residuals, x.shape[0] - order)
        factor = factor[0] if factor.ndim else factor
    return c, (el.multiply(base, factor) if y.ndim == 1 else el.multiply(sh.expand_dims(base, 2), factor))


def roots(p, *, strip_zeros=True):
    """jnp.roots: the complex roots of the polynomial with coefficients p (highest power first), the
    eigenvalues of its companion matrix (linalg.eigvals). strip_zeros=True drops leading zeros and
    gives trailing zeros' roots as zeros, which needs a concrete p (as in JAX); strip_zeros=False
    (traceable) takes p as given: a leading zero makes every root NaN (JAX makes only the undefined
    ones NaN)."""
    from . import linalg  # linalg imports this module (cross)
    if strip_zeros:
        if isinstance(p, Tracer):
            raise ConcretizationError(located("roots: strip_zeros=True needs a concrete p (the number of roots "
                                              "depends on its zeros); pass strip_zeros=False under jit (as in JAX)"))
        values = np.asarray(p)
        if values.ndim != 1:
            raise TracingValueError(located(f"roots: p must be 1-d, got shape {values.shape}"))
        nonzero = np.flatnonzero(values)
        start, stop = (nonzero[0], nonzero[-1] + 1) if nonzero.size else (0, 0)
        found = roots(asarray(p)[start:stop], strip_zeros=False)
        return sh.concatenate([found, zeros((values.size - stop if nonzero.size else 0,), found.type.dtype)])
    (coefficients,) = inexact(p)
    if coefficients.ndim != 1:
        raise TracingValueError(located(f"roots: p must be 1-d, got shape {coefficients.shape}"))
    dtype = coefficients.type.dtype
    degree = coefficients.shape[0] - 1
    if degree < 1:
        return linalg.eigvals(zeros((0, 0), dtype))
    # The companion matrix: -p[1:] / p[0] in the first row, ones below the diagonal.
    first_row = sh.expand_dims(el.divide(el.negative(coefficients[1:]), coefficients[0]), 0)
    return linalg.eigvals(sh.concatenate([first_row, eye(degree - 1, degree, dtype=dtype)]))


# ---- windows and i0 ------------------------------------------------------------------------------

def window_points(name: str, M) -> tuple[int, Tracer | None]:
    m = static_int(M, f"{name} M")
    return m, (arange(m, dtype=DEFAULT_FLOAT) if m > 1 else None)


def bartlett(M):
    """jnp.bartlett: the triangular window of M points."""
    m, n = window_points("bartlett", M)
    if n is None:
        return ones((max(m, 0),), DEFAULT_FLOAT)
    return el.subtract(1.0, el.divide(el.abs(el.subtract(el.add(el.multiply(2.0, n), 1.0), m)), m - 1))


def cosine_window(name: str, M, terms) -> Tracer:
    """sum of c * cos(k * 2 pi n / (M - 1)) over the (k, c) terms."""
    m, n = window_points(name, M)
    if n is None:
        return ones((max(m, 0),), DEFAULT_FLOAT)
    angle = el.divide(el.multiply(2 * math.pi, n), m - 1)
    result = None
    for k, c in terms:
        term = el.multiply(c, el.cos(el.multiply(k, angle))) if k else el.add(el.multiply(angle, 0.0), c)
        result = term if result is None else el.add(result, term)
    return result


def blackman(M):
    """jnp.blackman: 0.42 - 0.5 cos(2 pi n / (M-1)) + 0.08 cos(4 pi n / (M-1))."""
    return cosine_window("blackman", M, [(0, 0.42), (1, -0.5), (2, 0.08)])


def hamming(M):
    """jnp.hamming: 0.54 - 0.46 cos(2 pi n / (M-1))."""
    return cosine_window("hamming", M, [(0, 0.54), (1, -0.46)])


def hanning(M):
    """jnp.hanning: 0.5 - 0.5 cos(2 pi n / (M-1))."""
    return cosine_window("hanning", M, [(0, 0.5), (1, -0.5)])


def kaiser(M, beta):
    """jnp.kaiser: i0(beta sqrt(1 - ((n - alpha) / alpha)^2)) / i0(beta), alpha = (M - 1) / 2."""
    m, n = window_points("kaiser", M)
    if n is None:
        return ones((max(m, 0),), DEFAULT_FLOAT)
    alpha = 0.5 * (m - 1)
    ratio = el.divide(el.subtract(n, alpha), alpha)
    beta = convert(asarray(beta), DEFAULT_FLOAT)
    return el.divide(i0(el.multiply(beta, el.sqrt(el.subtract(1.0, el.square(ratio))))), i0(beta))


# Below SERIES_LIMIT, I0(x) = sum_k (x/2)^(2k) / (k!)^2, whose terms fall below 1e-17 of the sum within
# SERIES_TERMS terms; above it, the asymptotic expansion e^x / sqrt(2 pi x) * sum_k a_k / x^k with
# a_k = a_(k-1) (2k - 1)^2 / (8k) (Abramowitz and Stegun 9.7.1), whose error there is below e^(-2x).
SERIES_LIMIT = 30.0
SERIES_TERMS = 80
ASYMPTOTIC_TERMS = 25


def i0(x):
    """jnp.i0: the modified Bessel function of the first kind, order 0 (real inputs)."""
    (v,) = inexact(x)
    if is_complex(v.type.dtype):
        raise NotImplementedError(located("i0 of complex input is not supported (as in JAX)"))
    a = el.abs(v)
    small = el.minimum(a, SERIES_LIMIT)
    quarter_square = el.square(el.multiply(small, 0.5))
    term = el.add(el.multiply(small, 0.0), 1.0)
    series = term
    for k in range(1, SERIES_TERMS):
        term = el.divide(el.multiply(term, quarter_square), float(k * k))
        series = el.add(series, term)
    large = el.maximum(a, SERIES_LIMIT)
    term = el.add(el.multiply(large, 0.0), 1.0)
    asymptotic = term
    for k in range(1, ASYMPTOTIC_TERMS):
        term = el.divide(el.multiply(term, float((2 * k - 1) ** 2)), el.multiply(large, 8.0 * k))
        asymptotic = el.add(asymptotic, term)
    # e^x / sqrt(2 pi x) computed as (e^(x/2) / sqrt(2 pi x)) * e^(x/2), so that it overflows only with I0.
    half = el.exp(el.multiply(large, 0.5))
    asymptotic = el.multiply(el.multiply(el.divide(half, el.sqrt(el.multiply(large, 2 * math.pi))), half),
                             asymptotic)
    return el.where(el.less_equal(a, SERIES_LIMIT), series, asymptotic)


# ---- integer and float bit functions ---------------------------------------------------------------

def integer_operands(name: str, x1, x2) -> tuple[Tracer, Tracer]:
    x, y = promote_args(name, x1, x2)
    if not is_integer(x.type.dtype):
        raise TracingTypeError(located(f"{name}: arguments must be integers, got {x.type.dtype}"))
    return x, y


def gcd(x1, x2):
    """jnp.gcd: the greatest common divisor of |x1| and |x2|, by Euclid's algorithm."""
    x, y = integer_operands("gcd", x1, x2)
    x, y = el.abs(x), el.abs(y)

    def body(carry):
        a, b = carry
        nonzero = el.not_equal(b, 0)
        return el.where(nonzero, b, a), el.where(nonzero, el.remainder(a, el.where(nonzero, b, 1)), 0)

    return while_loop(lambda carry: red.any(el.not_equal(carry[1], 0)), body, (x, y))[0]


def lcm(x1, x2):
    """jnp.lcm: the least common multiple of |x1| and |x2| (0 if either is 0)."""
    x, y = integer_operands("lcm", x1, x2)
    d = gcd(x, y)
    return el.where(el.equal(d, 0), 0, el.abs(el.multiply(x, el.floor_divide(y, el.where(el.equal(d, 0), 1, d)))))


def ldexp(x1, x2):
    """jnp.ldexp: x1 * 2**x2 (x2 integers), the power split in two so that it overflows only with the result."""
    x = inexact(x1)[0]
    exponent = asarray(x2)
    if not is_integer(exponent.type.dtype):
        raise TracingTypeError(located(f"ldexp: x2 must be integers, got {exponent.type}"))
    return times_power_of_two(x, convert(exponent, "i64"))


def times_power_of_two(x: Tracer, exponent: Tracer) -> Tracer:
    """x 2^exponent (integer exponents broadcasting against x; complex x too), exactly: the power is split
    in two factors of at most 2^537 (a single one overflows for exponents past the dtype's largest)."""
    real = el.real(x).type.dtype if is_complex(x.type.dtype) else x.type.dtype
    half = el.floor_divide(exponent, 2)
    return el.multiply(el.multiply(x, el.exp2(convert(half, real))), el.exp2(convert(el.subtract(exponent, half), real)))


def frexp(x):
    """jnp.frexp: (mantissa in [0.5, 1) with x's sign, int32 exponent) with x = mantissa * 2**exponent;
    0, infinities and NaN give (x, 0)."""
    (v,) = inexact(x)
    if is_complex(v.type.dtype):
        raise TracingTypeError(located("frexp does not support complex input"))
    a = el.abs(v)
    special = el.logical_or(el.equal(a, 0), el.logical_not(el.isfinite(a)))
    safe = el.where(special, 1.0, a)
    exponent = el.add(el.floor(el.log2(safe)), 1.0)
    mantissa = ldexp(safe, convert(el.negative(exponent), "i64"))
    # log2 may round across an integer: bring the mantissa back into [0.5, 1).
    too_big = el.greater_equal(mantissa, 1.0)
    mantissa = el.where(too_big, el.multiply(mantissa, 0.5), mantissa)
    exponent = el.where(too_big, el.add(exponent, 1), exponent)
    too_small = el.less(mantissa, 0.5)
    mantissa = el.where(too_small, el.multiply(mantissa, 2.0), mantissa)
    exponent = el.where(too_small, el.subtract(exponent, 1), exponent)
    mantissa = el.where(special, v, el.copysign(mantissa, v))
    return mantissa, el.where(special, 0, convert(exponent, "i32"))


def promoted_inexact(name: str, *xs) -> list[Tracer]:
    """The operands promoted together and broadcast, then to their inexact dtype, weak ones staying weak
    (jnp's promote_args_inexact); complex operands are rejected."""
    args = [convert(a, to_inexact(a.type.dtype), a.weak_type) for a in promote_args(name, *xs)]
    el.reject_complex(name, args[0])
    return args


def nextafter(x1, x2, /):
    """jnp.nextafter: the float after x1 in the direction of x2 (lax.nextafter of the promoted operands)."""
    return lax_bitcast.nextafter(*promoted_inexact("nextafter", x1, x2))


def spacing(x, /):
    """jnp.spacing: the distance from x to the next float away from zero (f16: towards +inf, as numpy),
    with x's sign; strongly typed."""
    (v,) = promoted_inexact("spacing", x)
    dtype = v.type.dtype
    inf = el.filled(v, math.inf)
    if dtype == "f16":
        return convert(el.subtract(lax_bitcast.nextafter(v, inf), v), dtype)
    result = convert(el.subtract(lax_bitcast.nextafter(v, el.copysign(inf, v)), v), dtype)
    smallest_subnormal = float(np.finfo(v.dtype).smallest_subnormal)
    return el.where(el.equal(result, 0), el.copysign(el.filled(result, smallest_subnormal), v), result)


def bitwise_count(x, /):
    """jnp.bitwise_count: the number of 1 bits of |x|, as uint8."""
    v = asarray(x)
    if not is_integer(v.type.dtype) and not is_bool(v.type.dtype):
        raise TracingTypeError(located(f"bitwise_count: x must be integers, got {v.type}"))
    if is_bool(v.type.dtype):
        return convert(v, "u8")
    bits = v.dtype.itemsize * 8
    magnitude = convert(el.abs(v), "u" + v.type.dtype[1:])
    count = zeros(v.shape, "u8")
    for b in range(bits):
        count = el.add(count, convert(el.bitwise_and(el.right_shift(magnitude, b), 1), "u8"))
    return count


def packbits(a, axis=None, bitorder="big"):
    """jnp.packbits: the truth values of a packed 8 to a uint8 along axis (flattened if None)."""
    if bitorder not in ("big", "little"):
        raise TracingValueError(located(f"packbits: bitorder must be 'big' or 'little', got {bitorder!r}"))
    v = asarray(a)
    if not is_integer(v.type.dtype) and not is_bool(v.type.dtype):
        raise TracingTypeError(located(f"packbits: a must be integers or bools, got {v.type}"))
    bits = convert(el.truth(v), "u8")
    if axis is None:
        bits, axis = sh.ravel(bits), 0
    axis = canonical_axis(axis, bits.ndim)
    bits = sh.moveaxis(bits, axis, -1)
    n = bits.shape[-1]
    bits = sh.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, -n % 8)])
    bits = sh.reshape(bits, bits.shape[:-1] + (bits.shape[-1] // 8, 8))
    weights = np.array([128, 64, 32, 16, 8, 4, 2, 1] if bitorder == "big" else [1, 2, 4, 8, 16, 32, 64, 128],
                       np.uint8)
    packed = red.sum(el.multiply(bits, weights), axis=-1, dtype="u8")
    return sh.moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """jnp.unpackbits: the bits of uint8 a along axis (flattened if None), count of them if given."""
    if bitorder not in ("big", "little"):
        raise TracingValueError(located(f"unpackbits: bitorder must be 'big' or 'little', got {bitorder!r}"))
    v = asarray(a)
    if v.type.dtype != "u8":
        raise TracingTypeError(located(f"unpackbits: a must be uint8, got {v.type}"))
    shifts = np.array([7, 6, 5, 4, 3, 2, 1, 0] if bitorder == "big" else [0, 1, 2, 3, 4, 5, 6, 7], np.uint8)
    bits = el.bitwise_and(el.right_shift(v[..., None], shifts), np.uint8(1))
    if axis is None:
        bits, axis = sh.ravel(bits), 0
    else:
        axis = canonical_axis(axis, v.ndim)
        bits = sh.moveaxis(bits, -1, axis + 1)
        bits = sh.reshape(bits, v.shape[:axis] + (v.shape[axis] * 8,) + v.shape[axis + 1:])
    if count is not None:
        count = static_int(count, "unpackbits count")
        n = bits.shape[axis]
        bits = (lax_shape.slice_in_dim(bits, 0, count, axis=axis) if count <= n else
                sh.pad(bits, [(0, count - n) if i == axis else (0, 0) for i in range(bits.ndim)]))
    return bits
