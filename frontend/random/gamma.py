"""jax.random's samplers built on gamma variates: gamma, loggamma, beta, dirichlet, t, poisson,
generalized_normal and ball.

JAX draws each gamma variate by Marsaglia and Tsang's rejection loop ("A simple method for generating
gamma variables", ACM TOMS 26(3), 2000) with a key of its own (the sampler's key split once per
element), one scalar draw per step. Here every element runs the same loop at once: one lax.while_loop
over arrays of per-element keys, each element's state advancing only while its own loop would, so
that each element sees the draws JAX's loop gives it. Accept/reject decisions compare transcendental
values (log, sqrt, erfinv) that may round one ulp apart from XLA's, so rarely an element's loop takes
another path: those samplers are tested by distribution (KS, moments), and against JAX's values for
the fraction that must agree.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import TracingValueError
from .. import cnp
from .. import lax
from ..tracing import located
from . import threefry
from .continuous import (const, compiled, float_dtype, floats_of_bits, normal_floats, normal_of_floats,
                         check_shape, result_shape, uniform_bit_width, uniform_floats, exponential_of, canonical_shape)
from .discrete import DEFAULT_INT, INTEGERS
from .keys import key_data_of


# -- per-element keys: (k0, k1) uint32 arrays of one shape, each element a key of its own --

def split_each(keys, count: int):
    """Every element's key split in `count` (jax.random.split of each): a list of key pairs."""
    k0, k1 = keys
    zero = lax.full(tuple(k0.shape), 0, "uint32")
    return [threefry.threefry2x32(k0, k1, zero, lax.full(tuple(k0.shape), j, "uint32")) for j in range(count)]


def floats_each(keys, dtype: str):
    """Every element's uniform float in [0, 1) of shape () from its own key."""
    k0, k1 = keys
    zero = lax.full(tuple(k0.shape), 0, "uint32")
    b0, b1 = threefry.threefry2x32(k0, k1, zero, zero)
    width = uniform_bit_width(dtype)
    if width == 64:
        bits = lax.bitwise_or(lax.shift_left(lax.convert_element_type(b0, "uint64"), cnp.asarray(32, dtype="uint64")),
                              lax.convert_element_type(b1, "uint64"))
    else:
        bits = lax.bitwise_xor(b0, b1)
        bits = bits if width == 32 else lax.convert_element_type(bits, f"uint{width}")
    return floats_of_bits(bits, dtype)


def select_keys(mask, new, old):
    return tuple(cnp.where(mask, n, o) for n, o in zip(new, old))


def gamma_each(keys, alpha, log_space: bool):
    """jax.random._gamma_one for every element at once (Marsaglia-Tsang; alpha < 1 boosted to alpha + 1
    and the sample scaled by u^(1/alpha))."""
    dtype = str(alpha.dtype)
    zero, one = const(0.0, dtype), const(1.0, dtype)
    boost = cnp.greater_equal(alpha, one)
    alpha_boosted = cnp.where(boost, alpha, cnp.add(alpha, one))
    d = cnp.subtract(alpha_boosted, const(1.0 / 3.0, dtype))
    c = cnp.divide(const(1.0 / 3.0, dtype), cnp.sqrt(d))
    keys, subkeys = split_each(keys, 2)

    def rejected(X, V, U):
        squeeze = cnp.greater_equal(U, cnp.subtract(one, cnp.multiply(const(0.0331, dtype), cnp.multiply(X, X))))
        bound = cnp.add(cnp.multiply(X, const(0.5, dtype)),
                        cnp.multiply(d, cnp.add(cnp.subtract(one, V), cnp.log(V))))
        return cnp.logical_and(squeeze, cnp.greater_equal(cnp.log(U), bound))

    def draw_positive_v(keys, active):
        """The inner loop: normals x until v = 1 + c x > 0, for the active elements."""
        def step(state):
            k0, k1, x, v = state
            again = cnp.logical_and(active, cnp.less_equal(v, zero))
            next_keys, draw_keys = split_each((k0, k1), 2)
            x_new = normal_of_floats(floats_each(draw_keys, dtype))
            v_new = cnp.add(one, cnp.multiply(x_new, c))
            k0, k1 = select_keys(again, next_keys, (k0, k1))
            return k0, k1, cnp.where(again, x_new, x), cnp.where(again, v_new, v)

        def more(state):
            return cnp.any(cnp.logical_and(active, cnp.less_equal(state[3], zero)))

        start_v = cnp.where(active, const(-1.0, dtype), one)
        _, _, x, v = lax.while_loop(more, step, (*keys, cnp.zeros_like(alpha), start_v))
        return x, v

    def step(state):
        k0, k1, X, V, U = state
        active = rejected(X, V, U)
        next_keys, x_keys, u_keys = split_each((k0, k1), 3)
        x, v = draw_positive_v(x_keys, active)
        X_new, V_new = cnp.multiply(x, x), cnp.multiply(cnp.multiply(v, v), v)
        U_new = floats_each(u_keys, dtype)
        k0, k1 = select_keys(active, next_keys, (k0, k1))
        return (k0, k1, cnp.where(active, X_new, X), cnp.where(active, V_new, V), cnp.where(active, U_new, U))

    def more(state):
        return cnp.any(rejected(*state[2:]))

    start = (*keys, cnp.zeros_like(alpha), cnp.ones_like(alpha), cnp.full_like(alpha, 2.0))
    V = lax.while_loop(more, step, start)[3]
    u = floats_each(subkeys, dtype)
    if log_space:
        log_samples = cnp.negative(exponential_of(u))
        log_boost = cnp.where(cnp.logical_or(boost, cnp.equal(log_samples, zero)), zero,
                              cnp.multiply(log_samples, cnp.divide(one, alpha)))
        return cnp.add(cnp.add(cnp.log(d), cnp.log(V)), log_boost)
    samples = cnp.subtract(one, u)
    scale = cnp.where(boost, one, lax.pow(samples, cnp.divide(one, alpha)))
    return cnp.multiply(cnp.multiply(d, V), scale)


def gamma_of(key, alpha, shape, dtype, log_space: bool):
    """Gamma variates of `shape` (alpha broadcast to it), an element per key of split(key, size)."""
    alpha = cnp.broadcast_to(lax.convert_element_type(cnp.asarray(alpha), dtype), shape)
    keys = threefry.split_keys(key, (math.prod(shape),))
    keys = (cnp.reshape(keys[:, 0], shape), cnp.reshape(keys[:, 1], shape))
    return gamma_each(keys, alpha, log_space)


@compiled("shape", "dtype", "log_space")
def gamma_core(key, a, shape, dtype, log_space):
    return gamma_of(key, a, shape, dtype, log_space)


def gamma(key, a, shape=None, dtype=None):
    """jax.random.gamma: Gamma(a, 1) variates."""
    data, _ = key_data_of("gamma", key)
    return gamma_core(data, a, shape=result_shape("gamma", shape, a), dtype=float_dtype("gamma", dtype),
                      log_space=False)


def loggamma(key, a, shape=None, dtype=None):
    """jax.random.loggamma: the logs of Gamma(a, 1) variates, accurate for small a."""
    data, _ = key_data_of("loggamma", key)
    return gamma_core(data, a, shape=result_shape("loggamma", shape, a), dtype=float_dtype("loggamma", dtype),
                      log_space=True)


@compiled("shape", "dtype")
def beta_core(key, a, b, shape, dtype):
    keys = threefry.split_keys(key, (2,))
    log_a = gamma_of(keys[0], a, shape, dtype, True)
    log_b = gamma_of(keys[1], b, shape, dtype, True)
    log_max = cnp.maximum(log_a, log_b)
    scaled_a, scaled_b = cnp.exp(cnp.subtract(log_a, log_max)), cnp.exp(cnp.subtract(log_b, log_max))
    return cnp.divide(scaled_a, cnp.add(scaled_a, scaled_b))


def beta(key, a, b, shape=None, dtype=None):
    """jax.random.beta: Beta(a, b) variates, as Ga / (Ga + Gb) from log-space gamma variates."""
    data, _ = key_data_of("beta", key)
    return beta_core(data, a, b, shape=result_shape("beta", shape, a, b), dtype=float_dtype("beta", dtype))


@compiled("shape", "dtype")
def dirichlet_core(key, alpha, shape, dtype):
    logs = gamma_of(key, alpha, (*shape, alpha.shape[-1]), dtype, True)
    unnormalized = cnp.exp(cnp.subtract(logs, cnp.max(logs, axis=-1, keepdims=True)))
    return cnp.divide(unnormalized, cnp.sum(unnormalized, axis=-1, keepdims=True))


def dirichlet(key, alpha, shape=None, dtype=None):
    """jax.random.dirichlet: Dirichlet(alpha) vectors along the last axis (a softmax of log-gammas)."""
    data, _ = key_data_of("dirichlet", key)
    if np.ndim(alpha) < 1:
        raise TracingValueError(located(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {np.ndim(alpha)}"))
    batch = tuple(np.shape(alpha)[:-1])
    shape = batch if shape is None else canonical_shape(shape)
    check_shape("dirichlet", shape, batch)
    return dirichlet_core(data, alpha, shape=shape, dtype=float_dtype("dirichlet", dtype))


@compiled("shape", "dtype")
def t_core(key, df, shape, dtype):
    keys = threefry.split_keys(key, (2,))
    n = normal_floats(keys[0], shape, dtype)
    half_df = cnp.divide(lax.convert_element_type(cnp.asarray(df), dtype), const(2.0, dtype))
    g = gamma_of(keys[1], half_df, shape, dtype, False)
    return cnp.multiply(n, cnp.sqrt(cnp.divide(half_df, g)))


def t(key, df, shape=None, dtype=None):
    """jax.random.t: Student's t variates, n sqrt((df/2) / Gamma(df/2))."""
    data, _ = key_data_of("t", key)
    return t_core(data, df, shape=result_shape("t", shape, df), dtype=float_dtype("t", dtype))


def generalized_normal_of(key, p, shape, dtype):
    """jax.random.generalized_normal: a random sign times Gamma(1/p)^(1/p)."""
    keys = threefry.split_keys(key, (2,))
    inverse_p = cnp.divide(const(1.0, dtype), lax.convert_element_type(cnp.asarray(p), dtype))
    g = gamma_of(keys[0], inverse_p, shape, dtype, False)
    heads = cnp.less(uniform_floats(keys[1], shape, "float64"), const(0.5, "float64"))  # bernoulli(0.5): x64's p
    sign = cnp.subtract(cnp.multiply(const(2.0, dtype), heads.astype(dtype)), const(1.0, dtype))
    return cnp.multiply(sign, cnp.power(g, inverse_p))


@compiled("shape", "dtype")
def generalized_normal_core(key, p, shape, dtype):
    return generalized_normal_of(key, p, shape, dtype)


def generalized_normal(key, p, shape=(), dtype=None):
    """jax.random.generalized_normal: density proportional to exp(-|x|^p)."""
    data, _ = key_data_of("generalized_normal", key)
    return generalized_normal_core(data, p, shape=canonical_shape(shape),
                                   dtype=float_dtype("generalized_normal", dtype))


@compiled("d", "shape", "dtype")
def ball_core(key, p, d, shape, dtype):
    keys = threefry.split_keys(key, (2,))
    g = generalized_normal_of(keys[0], p, (*shape, d), dtype)
    e = exponential_of(uniform_floats(keys[1], shape, dtype))
    p = lax.convert_element_type(cnp.asarray(p), dtype)
    norm = cnp.power(cnp.add(cnp.sum(cnp.power(cnp.abs(g), p), axis=-1), e), cnp.divide(const(1.0, dtype), p))
    return cnp.divide(g, cnp.expand_dims(norm, -1))


def ball(key, d, p=2, shape=(), dtype=None):
    """jax.random.ball: uniform points of the unit p-norm ball in d dimensions."""
    data, _ = key_data_of("ball", key)
    return ball_core(data, p, d=int(d), shape=canonical_shape(shape), dtype=float_dtype("ball", dtype))


# -- poisson: Knuth's product of uniforms below 10, Hormann's transformed rejection above --

def poisson_knuth(key, lam, shape, dtype):
    """The count of uniforms whose running product stays above exp(-lam), minus one."""
    def step(state):
        key, k, log_product = state
        keys = threefry.split_keys(key, (2,))
        k = cnp.where(cnp.greater(log_product, cnp.negative(lam)), cnp.add(k, cnp.asarray(1, dtype=dtype)), k)
        u = uniform_floats(keys[1], shape, "float32")
        return keys[0], k, cnp.add(log_product, cnp.log(u))

    def more(state):
        return cnp.any(cnp.greater(state[2], cnp.negative(lam)))

    start = (key, cnp.zeros(shape, dtype=dtype), cnp.zeros(shape, dtype="float32"))
    k = lax.while_loop(more, step, start)[1]
    return cnp.subtract(k, cnp.asarray(1, dtype=dtype))


def poisson_rejection(key, lam, shape, dtype):
    """W. Hormann, "The transformed rejection method for generating Poisson random variables" (1993)."""
    f32 = lambda value: const(value, "float32")
    log_lam = cnp.log(lam)
    b = cnp.add(f32(0.931), cnp.multiply(f32(2.53), cnp.sqrt(lam)))
    a = cnp.add(f32(-0.059), cnp.multiply(f32(0.02483), b))
    inv_alpha = cnp.add(f32(1.1239), cnp.divide(f32(1.1328), cnp.subtract(b, f32(3.4))))
    v_r = cnp.subtract(f32(0.9277), cnp.divide(f32(3.6224), cnp.subtract(b, f32(2.0))))

    def step(state):
        k_out, accepted, key = state
        keys = threefry.split_keys(key, (3,))
        u = cnp.subtract(uniform_floats(keys[1], shape, "float32"), f32(0.5))
        v = uniform_floats(keys[2], shape, "float32")
        u_shifted = cnp.subtract(f32(0.5), cnp.abs(u))
        k = cnp.floor(cnp.add(cnp.add(cnp.multiply(cnp.add(cnp.divide(cnp.multiply(f32(2.0), a), u_shifted), b), u),
                                      lam), f32(0.43)))
        s = cnp.log(cnp.divide(cnp.multiply(v, inv_alpha), cnp.add(cnp.divide(a, cnp.multiply(u_shifted, u_shifted)),
                                                                     b)))
        t = cnp.subtract(cnp.add(cnp.negative(lam), cnp.multiply(k, log_lam)), lax.lgamma(cnp.add(k, f32(1.0))))
        accept1 = cnp.logical_and(cnp.greater_equal(u_shifted, f32(0.07)), cnp.less_equal(v, v_r))
        reject = cnp.logical_or(cnp.less(k, f32(0.0)),
                                cnp.logical_and(cnp.less(u_shifted, f32(0.013)), cnp.greater(v, u_shifted)))
        accept = cnp.logical_or(accept1, cnp.logical_and(cnp.logical_not(reject), cnp.less_equal(s, t)))
        return cnp.where(accept, k, k_out), cnp.logical_or(accepted, accept), keys[0]

    def more(state):
        return cnp.any(cnp.logical_not(state[1]))

    start = (cnp.full(shape, -1.0, dtype="float32"), cnp.zeros(shape, dtype=bool), key)
    return lax.while_loop(more, step, start)[0].astype(dtype)


@compiled("shape", "dtype")
def poisson_core(key, lam, shape, dtype):
    lam = lax.convert_element_type(cnp.broadcast_to(cnp.asarray(lam), shape), "float32")
    use_knuth = cnp.logical_or(cnp.isnan(lam), cnp.less(lam, const(10.0, "float32")))
    lam_knuth = cnp.where(use_knuth, lam, const(0.0, "float32"))
    lam_rejection = cnp.where(use_knuth, const(1e5, "float32"), lam)
    result = cnp.where(use_knuth, poisson_knuth(key, lam_knuth, shape, dtype),
                       poisson_rejection(key, lam_rejection, shape, dtype))
    return cnp.where(cnp.equal(lam, const(0.0, "float32")), cnp.zeros_like(result), result)


def poisson(key, lam, shape=None, dtype=None):
    """jax.random.poisson: Poisson(lam) counts (lam computed in float32, as JAX)."""
    data, _ = key_data_of("poisson", key)
    dtype = DEFAULT_INT if dtype is None else np.dtype(dtype).name
    if dtype not in INTEGERS:
        raise TracingValueError(located(f"dtype argument to `poisson` must be an integer dtype, got {dtype}"))
    shape = tuple(np.shape(lam)) if shape is None else canonical_shape(shape)
    return poisson_core(data, lam, shape=shape, dtype=dtype)
