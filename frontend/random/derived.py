"""The rest of jax.random's samplers, each derived by JAX's formula from the samplers above: clone, rademacher,
lognormal, pareto, chisquare, f, rayleigh, weibull_min, geometric, triangular, maxwell, wald,
double_sided_maxwell."""
from __future__ import annotations

import numpy as np

from .. import cnp
from .. import lax
from . import threefry
from .continuous import (canonical_shape, compiled, const, exponential_of, float_dtype, normal_floats, result_shape,
                         uniform_floats)
from .discrete import DEFAULT_INT
from .gamma import gamma_of
from .keys import key_data_of


def clone(key):
    """jax.random.clone: the same key (cdnajit's arrays are values, never consumed)."""
    return key


def as_dtype(x, dtype):
    return lax.convert_element_type(cnp.asarray(x), dtype)


@compiled("shape", "dtype")
def rademacher_core(key, shape, dtype):
    heads = cnp.less(uniform_floats(key, shape, "float64"), const(0.5, "float64")).astype(dtype)   # bernoulli(0.5)
    return cnp.subtract(cnp.multiply(cnp.asarray(2, dtype=dtype), heads), cnp.asarray(1, dtype=dtype)).astype(dtype)


def rademacher(key, shape=(), dtype=None):
    """jax.random.rademacher: -1 or 1 with equal probability."""
    data, _ = key_data_of("rademacher", key)
    return rademacher_core(data, shape=canonical_shape(shape), dtype=DEFAULT_INT if dtype is None else np.dtype(dtype).name)


@compiled("name", "shape", "dtype")
def one_parameter_core(key, parameter, name, shape, dtype):
    parameter = as_dtype(parameter, dtype)
    if name == "lognormal":
        return cnp.exp(cnp.multiply(normal_floats(key, shape, dtype), parameter))
    if name == "pareto":
        return cnp.exp(cnp.divide(exponential_of(uniform_floats(key, shape, dtype)), parameter))
    if name == "chisquare":
        two = const(2.0, dtype)
        return cnp.multiply(cnp.exp(gamma_of(key, cnp.divide(parameter, two), shape, dtype, True)), two)
    if name == "rayleigh":
        u = uniform_floats(key, shape, dtype)
        return cnp.multiply(cnp.broadcast_to(parameter, shape), cnp.sqrt(cnp.multiply(cnp.log(u), const(-2.0, dtype))))
    raise AssertionError(name)


def one_parameter_sampler(name: str, default):
    def sample(key, parameter=default, shape=None, dtype=None):
        data, _ = key_data_of(name, key)
        return one_parameter_core(data, parameter, name=name, shape=result_shape(name, shape, parameter),
                                  dtype=float_dtype(name, dtype))
    sample.__name__ = sample.__qualname__ = name
    sample.__doc__ = f"jax.random.{name}, by JAX's formula."
    return sample


lognormal = one_parameter_sampler("lognormal", 1.0)
pareto = one_parameter_sampler("pareto", None)
chisquare = one_parameter_sampler("chisquare", None)
rayleigh = one_parameter_sampler("rayleigh", None)


@compiled("shape", "dtype")
def f_core(key, dfnum, dfden, shape, dtype):
    keys = threefry.split_keys(key, (2,))
    dfnum, dfden = as_dtype(dfnum, dtype), as_dtype(dfden, dtype)
    two = const(2.0, dtype)
    chi_num = cnp.multiply(cnp.exp(gamma_of(keys[1], cnp.divide(dfnum, two), shape, dtype, True)), two)
    chi_den = cnp.multiply(cnp.exp(gamma_of(keys[0], cnp.divide(dfden, two), shape, dtype, True)), two)
    return cnp.divide(cnp.divide(chi_num, dfnum), cnp.divide(chi_den, dfden))


def f(key, dfnum, dfden, shape=None, dtype=None):
    """jax.random.f: the ratio of two scaled chi-square variates."""
    data, _ = key_data_of("f", key)
    return f_core(data, dfnum, dfden, shape=result_shape("f", shape, dfnum, dfden), dtype=float_dtype("f", dtype))


@compiled("shape", "dtype")
def weibull_min_core(key, scale, concentration, shape, dtype):
    u = uniform_floats(key, shape, dtype)
    return cnp.multiply(cnp.power(cnp.negative(cnp.log1p(cnp.negative(u))), cnp.divide(1.0, concentration)), scale)


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """jax.random.weibull_min: the inverse Weibull CDF of a uniform draw."""
    data, _ = key_data_of("weibull_min", key)
    return weibull_min_core(data, scale, concentration, shape=canonical_shape(shape),
                            dtype=float_dtype("weibull_min", dtype))


@compiled("shape", "dtype")
def geometric_core(key, p, shape, dtype):
    p = cnp.asarray(p)
    p = p if str(p.dtype).startswith("float") else p.astype("float64")
    u = uniform_floats(key, shape, str(p.dtype))
    u = cnp.where(cnp.equal(u, 0), cnp.ones_like(u), u)
    log_one_minus_p = cnp.broadcast_to(cnp.log1p(cnp.negative(p)), shape)
    return cnp.add(cnp.floor(cnp.divide(cnp.log(u), log_one_minus_p)), 1).astype(dtype)


def geometric(key, p, shape=None, dtype=None):
    """jax.random.geometric: trials to the first success, by inverting the CDF."""
    data, _ = key_data_of("geometric", key)
    return geometric_core(data, p, shape=result_shape("geometric", shape, p),
                          dtype=DEFAULT_INT if dtype is None else np.dtype(dtype).name)


@compiled("shape", "dtype")
def triangular_core(key, left, mode, right, shape, dtype):
    left, mode, right = (cnp.broadcast_to(as_dtype(x, dtype), shape) for x in (left, mode, right))
    width = cnp.subtract(right, left)
    fc = cnp.divide(cnp.subtract(mode, left), width)
    u = uniform_floats(key, shape, dtype)
    low = cnp.add(left, cnp.sqrt(cnp.multiply(cnp.multiply(u, width), cnp.subtract(mode, left))))
    high = cnp.subtract(right, cnp.sqrt(cnp.multiply(cnp.multiply(cnp.subtract(const(1.0, dtype), u), width),
                                                     cnp.subtract(right, mode))))
    return cnp.where(cnp.less(u, fc), low, high)


def triangular(key, left, mode, right, shape=None, dtype=None):
    """jax.random.triangular: the inverse CDF of the triangle (left, mode, right)."""
    data, _ = key_data_of("triangular", key)
    return triangular_core(data, left, mode, right, shape=result_shape("triangular", shape, left, mode, right),
                           dtype=float_dtype("triangular", dtype))


@compiled("shape", "dtype")
def maxwell_core(key, shape, dtype):
    return cnp.sqrt(cnp.sum(cnp.square(normal_floats(key, (*shape, 3), dtype)), axis=-1))


def maxwell(key, shape=(), dtype=None):
    """jax.random.maxwell: the norm of a 3-vector of standard normals."""
    data, _ = key_data_of("maxwell", key)
    return maxwell_core(data, shape=canonical_shape(shape), dtype=float_dtype("maxwell", dtype))


@compiled("shape", "dtype")
def wald_core(key, mean, shape, dtype):
    keys = threefry.split_keys(key, (2,))
    mean = cnp.broadcast_to(as_dtype(mean, dtype), shape)
    y = cnp.square(normal_floats(keys[0], shape, dtype))
    z = uniform_floats(keys[1], shape, dtype)
    mean_sq = cnp.square(mean)
    root = cnp.sqrt(cnp.add(cnp.multiply(cnp.multiply(const(4.0, dtype), mean), y),
                            cnp.multiply(mean_sq, cnp.square(y))))
    x = cnp.subtract(cnp.add(mean, cnp.divide(cnp.multiply(mean_sq, y), const(2.0, dtype))),
                     cnp.multiply(cnp.divide(mean, const(2.0, dtype)), root))
    return cnp.where(cnp.less_equal(z, cnp.divide(mean, cnp.add(mean, x))), x, cnp.divide(mean_sq, x))


def wald(key, mean, shape=None, dtype=None):
    """jax.random.wald: inverse Gaussian variates (Michael, Schucany and Haas' transformation)."""
    data, _ = key_data_of("wald", key)
    return wald_core(data, mean, shape=result_shape("wald", shape, mean), dtype=float_dtype("wald", dtype))


@compiled("shape", "dtype")
def double_sided_maxwell_core(key, loc, scale, shape, dtype):
    keys = threefry.split_keys(key, (2,))
    magnitude = maxwell_core(keys[0], shape=shape, dtype=dtype)
    sign = rademacher_core(keys[1], shape=shape, dtype=dtype)
    return cnp.add(cnp.multiply(cnp.multiply(sign, magnitude), scale), loc)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """jax.random.double_sided_maxwell: a Maxwell variate with a random sign, scaled and moved; the
    parameters' shape is appended to `shape` (or is the shape, for shape ())."""
    data, _ = key_data_of("double_sided_maxwell", key)
    params = tuple(np.broadcast_shapes(np.shape(loc), np.shape(scale)))
    shape = canonical_shape(shape)
    return double_sided_maxwell_core(data, loc, scale, shape=(shape or params) + params,
                                     dtype=float_dtype("double_sided_maxwell", dtype))
