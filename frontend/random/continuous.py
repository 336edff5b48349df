"""jax.random's samplers of continuous distributions by transforming uniform floats, each as JAX
computes it (the same uniform bits, the same arithmetic), so that results match JAX's bit for bit
wherever the elementary functions round as XLA's do.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ...errors import TracingTypeError, TracingValueError
from .. import cnp
from .. import lax
from ...lowering.elemental_special import GILES_CENTRAL, GILES_TAIL
from ..jit import jit
from ..tracing import as_tracer, bind1, located
from . import threefry
from .keys import key_data_of

DEFAULT_FLOAT = "float64"   # jax.random's dtype=None under x64, which cdnajit always has


def compiled(*static: str):
    """The decorated sampler compiled by `jit` with the named arguments static (always passed by
    keyword): eager calls run one compiled program, traced calls inline it, as jax.random's jit does."""
    return lambda fn: jit(fn, static_argnames=static)


def canonical_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, int):
        return (shape,)
    try:
        return tuple(int(d) for d in shape)
    except TypeError:
        raise TracingTypeError(located(f"shape must be a tuple of ints, got {shape!r}")) from None


FLOATS = ("bfloat16", "float16", "float32", "float64")
COMPLEX = ("complex64", "complex128")


def float_dtype(what: str, dtype, allowed=FLOATS) -> str:
    """The sampler's dtype: float64 for None (x64), else a float dtype (ValueError otherwise, as JAX)."""
    name = DEFAULT_FLOAT if dtype is None else np.dtype(dtype).name
    if name not in allowed:
        raise TracingValueError(located(f"dtype argument to `{what}` must be a float dtype, got {name}"))
    return name


def check_shape(what: str, shape: tuple[int, ...], *param_shapes) -> None:
    """JAX's _check_shape: parameter shapes broadcast to `shape` exactly."""
    if param_shapes:
        try:
            result = np.broadcast_shapes(shape, *param_shapes)
        except ValueError:
            result = None
        if result != shape:
            raise TracingValueError(located(
                f"{what} parameter shapes must be broadcast-compatible with shape argument, and the result of "
                f"broadcasting the shapes must equal the shape argument, but got result {result} for shape "
                f"argument {shape}."))


def finfo(dtype: str):
    return ml_dtypes.finfo(np.dtype(dtype))


def const(value, dtype: str):
    return cnp.asarray(np.asarray(value, dtype=np.dtype(dtype)))


def uniform_bit_width(dtype: str) -> int:
    """The random bits a uniform float of dtype takes: its width, at least 8."""
    info = finfo(dtype)
    return 8 if info.nmant < 8 else info.bits


def uniform_floats(key, shape, dtype):
    """Floats in [0, 1) from the key's bits for `shape`."""
    return floats_of_bits(threefry.random_bits(key, uniform_bit_width(dtype), shape), dtype)


def floats_of_bits(bits, dtype):
    """Floats in [0, 1): the top mantissa bits of random bits under the exponent of 1.0, minus 1."""
    info = finfo(dtype)
    nbits, nmant = info.bits, info.nmant
    rng_bits = uniform_bit_width(dtype)
    uint = f"uint{nbits}"
    if rng_bits != nbits:
        bits = lax.convert_element_type(bits, uint)
    one_bits = np.array(1.0, dtype=np.dtype(dtype)).view(np.dtype(uint))
    mantissa = lax.shift_right_logical(bits, const(rng_bits - nmant, uint))
    float_bits = lax.bitwise_or(mantissa, const(one_bits, uint))
    return lax.sub(lax.bitcast_convert_type(float_bits, dtype), const(1.0, dtype))


def uniform_between(key, shape, dtype, minval, maxval):
    """jax.random._uniform: uniform floats scaled to [minval, maxval), never below minval."""
    minval = lax.convert_element_type(cnp.asarray(minval), dtype)
    maxval = lax.convert_element_type(cnp.asarray(maxval), dtype)
    return scaled(uniform_floats(key, shape, dtype), minval, maxval)


def scaled(floats, minval, maxval):
    """Floats in [0, 1) moved to [minval, maxval), never below minval (of the floats' dtype)."""
    return cnp.maximum(minval, multiply_add(floats, cnp.subtract(maxval, minval), minval))


def multiply_add(a, b, c):
    """a * b + c as XLA's CPU backend computes it (the multiply and add contracted into one fma where
    the dtype has one), broadcast."""
    a, b, c = cnp.broadcast_arrays(a, b, c)
    if str(a.dtype) in ("float32", "float64"):
        return bind1("fma", [as_tracer(a), as_tracer(b), as_tracer(c)])
    return cnp.add(cnp.multiply(a, b), c)


@compiled("shape", "dtype")
def uniform_jit(key, minval, maxval, shape, dtype):
    return uniform_between(key, shape, dtype, minval, maxval)


def uniform(key, shape=(), dtype=None, minval=0., maxval=1.):
    """jax.random.uniform: floats in [minval, maxval)."""
    data, _ = key_data_of("uniform", key)
    shape = canonical_shape(shape)
    try:
        fits = np.broadcast_shapes(shape, np.shape(minval), np.shape(maxval)) == shape
    except ValueError:
        fits = False
    if not fits:   # JAX's lax.max then fails: a TypeError
        raise TracingTypeError(located(
            f"uniform: minval of shape {np.shape(minval)} and maxval of shape {np.shape(maxval)} do not broadcast "
            f"to shape {shape}"))
    return uniform_jit(data, minval, maxval, shape=shape, dtype=float_dtype("uniform", dtype))


def normal_floats(key, shape, dtype):
    return normal_of_floats(uniform_floats(key, shape, dtype))


def normal_of_floats(floats):
    """sqrt(2) erfinv(u) for u uniform in (-1, 1), from floats in [0, 1)."""
    dtype = str(floats.dtype)
    lo = np.nextafter(np.array(-1.0, np.dtype(dtype)), np.array(0.0, np.dtype(dtype)))
    u = scaled(floats, const(lo, dtype), const(1.0, dtype))
    return lax.mul(const(np.sqrt(2), dtype), erf_inv(u))


def erf_inv(u):
    """jax.random's erf_inv: XLA's formula for float32 (JAX's bits, and fast), else lax.erf_inv."""
    return erf_inv_f32(u) if str(u.dtype) == "float32" else lax.erf_inv(u)


def erf_inv_f32(x):
    """erf_inv of float32 as XLA computes it: M. Giles' single-precision polynomials ("Approximating
    the erfinv function", GPU Computing Gems, 2011) in w = -log1p(-x^2), below and above w = 5, each
    step a fused multiply-add; +-inf at +-1. A few ulps from the correctly rounded lax.erf_inv (up to
    ~40 eps in the far tails) and several times cheaper; it is the normal sampler's, as JAX's."""
    w = lax.neg(lax.log1p(lax.neg(lax.mul(x, x))))
    central = cnp.less(w, const(5.0, "float32"))
    w = cnp.where(central, lax.sub(w, const(2.5, "float32")), lax.sub(lax.sqrt(w), const(3.0, "float32")))
    coefficients = [cnp.where(central, const(c, "float32"), const(t, "float32"))
                    for c, t in zip(GILES_CENTRAL, GILES_TAIL)]
    p = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        p = multiply_add(p, w, c)
    return cnp.where(cnp.equal(lax.abs(x), const(1.0, "float32")), lax.mul(x, const(np.inf, "float32")),
                     lax.mul(p, x))


def normal_any(key, shape, dtype):
    if not np.issubdtype(np.dtype(dtype), np.complexfloating):
        return normal_floats(key, shape, dtype)
    real = np.dtype(dtype).type(0).real.dtype.name
    keys = threefry.split_keys(key, (2,))
    re, im = normal_floats(keys[0], shape, real), normal_floats(keys[1], shape, real)
    return cnp.divide(lax.complex(re, im), const(np.sqrt(2), dtype))


normal_jit = compiled("shape", "dtype")(normal_any)


def normal(key, shape=(), dtype=None):
    """jax.random.normal: standard normal floats (complex: real and imaginary parts of variance 1/2)."""
    data, _ = key_data_of("normal", key)
    return normal_jit(data, shape=canonical_shape(shape), dtype=float_dtype("normal", dtype, FLOATS + COMPLEX))


def result_shape(what: str, shape, *params):
    """The sample shape: the parameters' broadcast shape where shape is None, else shape (checked)."""
    if shape is None:
        return np.broadcast_shapes(*(np.shape(p) for p in params))
    shape = canonical_shape(shape)
    check_shape(what, shape, *(np.shape(p) for p in params))
    return shape


@compiled("shape", "dtype")
def truncated_normal_core(key, lower, upper, shape, dtype):
    sqrt2 = const(np.sqrt(2), dtype)
    lower = lax.convert_element_type(cnp.asarray(lower), dtype)
    upper = lax.convert_element_type(cnp.asarray(upper), dtype)
    a = lax.erf(cnp.divide(lower, sqrt2))
    b = lax.erf(cnp.divide(upper, sqrt2))
    out = cnp.multiply(sqrt2, erf_inv(uniform_between(key, shape, dtype, a, b)))
    return cnp.clip(out, lax.nextafter(lower, const(np.inf, dtype)), lax.nextafter(upper, const(-np.inf, dtype)))



def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """jax.random.truncated_normal: normal floats in (lower, upper), by the inverse CDF."""
    data, _ = key_data_of("truncated_normal", key)
    dtype = float_dtype("truncated_normal", dtype)
    return truncated_normal_core(data, lower, upper, shape=result_shape("truncated_normal", shape, lower, upper),
                                 dtype=dtype)


# The samplers that transform one uniform draw: name -> (minval, maxval as functions of finfo, the
# transform of u). Each is JAX's own formula.
def exponential_of(u):
    return lax.neg(lax.log1p(lax.neg(u)))       # -log(1 - u): log's argument in (0, 1]


def laplace_of(u):
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic_of(u):
    return lax.sub(lax.log(u), lax.log1p(lax.neg(u)))


def cauchy_of(u):
    return lax.tan(lax.mul(const(np.pi, u.dtype), lax.sub(u, const(0.5, u.dtype))))


def gumbel_of(u):
    return lax.neg(lax.log(lax.neg(lax.log(u))))


TRANSFORMS = {
    "exponential": (lambda info: 0.0, exponential_of),
    "laplace": (lambda info: -1.0 + info.epsneg, laplace_of),
    "logistic": (lambda info: info.tiny, logistic_of),
    "cauchy": (lambda info: info.eps, cauchy_of),
    "gumbel": (lambda info: info.tiny, gumbel_of),      # mode="low", JAX's default
}


@compiled("name", "shape", "dtype")
def transformed_uniform(key, name, shape, dtype):
    minval, transform = TRANSFORMS[name]
    u = uniform_between(key, shape, dtype, const(minval(finfo(dtype)), dtype), const(1.0, dtype))
    return transform(u)


def transformed_sampler(name: str):
    def sample(key, shape=(), dtype=None):
        data, _ = key_data_of(name, key)
        return transformed_uniform(data, name=name, shape=canonical_shape(shape), dtype=float_dtype(name, dtype))
    sample.__name__ = sample.__qualname__ = name
    sample.__doc__ = f"jax.random.{name}: {TRANSFORMS[name][1].__name__[:-3]} of a uniform draw."
    return sample


exponential = transformed_sampler("exponential")
laplace = transformed_sampler("laplace")
logistic = transformed_sampler("logistic")
cauchy = transformed_sampler("cauchy")
gumbel_low = transformed_sampler("gumbel")


def gumbel(key, shape=(), dtype=None, mode=None):
    """jax.random.gumbel: -log(-log(u)); mode "low" (JAX's default) only."""
    if mode not in (None, "low", "high", "highest"):
        raise TracingValueError(located(f"Must provide valid mode for gumbel got: {mode}"))
    if mode not in (None, "low"):
        raise NotImplementedError(located(f"jax.random.gumbel mode={mode!r}: only mode='low' is supported"))
    return gumbel_low(key, shape, dtype)


@compiled("shape", "mode")
def bernoulli_core(key, p, shape, mode):
    dtype = str(p.dtype)
    if mode == "high":
        u = uniform_floats(key, (2, *shape), dtype)
        u2 = cnp.multiply(u[1], const(2.0 ** -finfo(dtype).nmant, dtype))
        return cnp.less(u2, cnp.subtract(p, u[0]))
    return cnp.less(uniform_floats(key, shape, dtype), p)


def bernoulli(key, p=0.5, shape=None, mode="low"):
    """jax.random.bernoulli: booleans, True with probability p (p's float dtype)."""
    if mode not in ("high", "low"):
        raise TracingValueError(located(f"got mode={mode!r}, expected 'high' or 'low'"))
    data, _ = key_data_of("bernoulli", key)
    p = cnp.asarray(p) if not hasattr(p, "dtype") else p
    if str(p.dtype) not in FLOATS:
        raise TracingTypeError(located(f"bernoulli probability `p` must have a floating dtype, got {p.dtype}."))
    return bernoulli_core(data, p, shape=result_shape("bernoulli", shape, p), mode=mode)
