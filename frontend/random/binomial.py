"""jax.random.binomial and jax.random.multinomial, computed as JAX computes them (which follows
TensorFlow's random_binomial_op): for count * q <= 10 (q = min(p, 1 - p)) the inversion method (the
number of geometric waiting times whose sum stays within count), otherwise Kachitvichyanukul and
Schmeiser's BTRS transformed rejection ("Binomial random variate generation", CACM 31(2), 1988;
Hormann's 1993 transformed-rejection form). Both run as one lax.while_loop over the whole array with
JAX's key sequence: every step splits the loop's key, draws a fresh array of uniform floats, and
updates only the elements still undecided.

Decisions compare logs and quotients that may round one ulp apart from XLA's, so an element rarely
takes another path than under JAX: known-answer tests require a fraction of exact agreement, and
moments are tested separately. Multinomial is JAX's chain of binomials over the categories (a
lax.scan; category j draws with the j-th of key split in as many keys)."""
from __future__ import annotations

import numpy as np

from ...errors import TracingValueError
from .. import cnp
from ..dtypes import NUMPY_DTYPES, dtype_name, promote, to_inexact
from .. import lax
from ..tracing import located
from . import threefry
from .continuous import canonical_shape, check_shape, compiled, const, float_dtype, \
    uniform_floats
from .keys import key_data_of

# log(k!) - Stirling's series' first terms for k = 0..9 (TensorFlow's table, as JAX has it).
STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                 0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                 0.00925546218271273, 0.00833056343336287)


def stirling_tail(k):
    """JAX's _stirling_approx_tail: the table below 10; above it JAX's series evaluated at k clamped
    to [0, 9] (as JAX does it, so the same value at every k > 9)."""
    dtype = str(k.dtype)
    c = lambda value: const(value, dtype)
    clamped = lax.clamp(c(0.0), k, c(9.0))
    kp1 = cnp.add(clamped, c(1.0))
    kp1sq = cnp.multiply(kp1, kp1)
    series = cnp.divide(cnp.subtract(c(1.0 / 12), cnp.divide(cnp.subtract(c(1.0 / 360), cnp.divide(c(1.0 / 1260), kp1sq)),
                                                              kp1sq)), kp1)
    table = cnp.take(c(np.array(STIRLING_TAIL)), cnp.floor(clamped).astype("int32"))
    return cnp.where(cnp.less_equal(k, c(9.0)), table, series)


def binomial_inversion(key, count, q, shape, dtype):
    """The number of geometric(q) waiting times (ceil(log u / log(1 - q))) summing to at most count."""
    float_type = str(q.dtype)
    log1minusq = cnp.log1p(cnp.negative(q))

    def step(state):
        key, num_geom, geom_sum = state
        keys = threefry.split_keys(key, (2,))
        num_geom = cnp.where(cnp.less_equal(geom_sum, count), cnp.add(num_geom, const(1.0, float_type)), num_geom)
        u = uniform_floats(keys[0], shape, float_type)
        geom_sum = cnp.add(geom_sum, cnp.ceil(cnp.divide(cnp.log(u), log1minusq)))
        return keys[1], num_geom, geom_sum

    def more(state):
        return cnp.any(cnp.less_equal(state[2], count))

    start = (key, cnp.zeros(shape, dtype=float_type), cnp.zeros(shape, dtype=float_type))
    k = lax.while_loop(more, step, start)[1]
    return cnp.subtract(k, const(1.0, float_type)).astype(dtype)


def binomial_btrs(key, count, q, shape, dtype):
    """BTRS: k = floor((2a/us + b) u + c) from two uniforms, accepted at once inside the squeeze
    (us >= 0.07, v <= v_r), else by comparing log v against the log-density ratio (Stirling tails)."""
    float_type = str(q.dtype)
    c_ = lambda value: const(value, float_type)
    one = c_(1.0)
    stddev = cnp.sqrt(cnp.multiply(cnp.multiply(count, q), cnp.subtract(one, q)))
    b = cnp.add(c_(1.15), cnp.multiply(c_(2.53), stddev))
    a = cnp.add(cnp.add(c_(-0.0873), cnp.multiply(c_(0.0248), b)), cnp.multiply(c_(0.01), q))
    c = cnp.add(cnp.multiply(count, q), c_(0.5))
    v_r = cnp.subtract(c_(0.92), cnp.divide(c_(4.2), b))
    r = cnp.divide(q, cnp.subtract(one, q))
    alpha = cnp.multiply(cnp.add(c_(2.83), cnp.divide(c_(5.1), b)), stddev)
    m = cnp.floor(cnp.multiply(cnp.add(count, one), q))
    half = c_(0.5)

    def step(state):
        key, k_out, accepted = state
        keys = threefry.split_keys(key, (3,))
        u = cnp.subtract(uniform_floats(keys[1], shape, float_type), half)
        v = uniform_floats(keys[2], shape, float_type)
        us = cnp.subtract(half, cnp.abs(u))
        accept1 = cnp.logical_and(cnp.greater_equal(us, c_(0.07)), cnp.less_equal(v, v_r))
        k = cnp.floor(cnp.add(cnp.multiply(cnp.add(cnp.divide(cnp.multiply(c_(2.0), a), us), b), u), c))
        reject = cnp.logical_or(cnp.less(k, c_(0.0)), cnp.greater(k, count))
        log_v = cnp.log(cnp.divide(cnp.multiply(v, alpha), cnp.add(cnp.divide(a, cnp.multiply(us, us)), b)))
        count_minus_k_1 = cnp.add(cnp.subtract(count, k), one)
        # JAX's sum, in its order: the m terms, then the k terms, then the four Stirling tails.
        ub = cnp.add(cnp.add(cnp.multiply(cnp.add(m, half),
                                          cnp.log(cnp.divide(cnp.add(m, one),
                                                             cnp.multiply(r, cnp.add(cnp.subtract(count, m), one))))),
                             cnp.multiply(cnp.add(count, one),
                                          cnp.log(cnp.divide(cnp.add(cnp.subtract(count, m), one), count_minus_k_1)))),
                     cnp.multiply(cnp.add(k, half),
                                  cnp.log(cnp.divide(cnp.multiply(r, count_minus_k_1), cnp.add(k, one)))))
        ub = cnp.subtract(cnp.subtract(cnp.add(cnp.add(ub, stirling_tail(m)), stirling_tail(cnp.subtract(count, m))),
                                       stirling_tail(k)), stirling_tail(cnp.subtract(count, k)))
        accept = cnp.logical_or(accept1, cnp.logical_and(cnp.logical_not(reject), cnp.less_equal(log_v, ub)))
        return keys[0], cnp.where(accept, k, k_out), cnp.logical_or(accepted, accept)

    def more(state):
        return cnp.any(cnp.logical_not(state[2]))

    start = (key, cnp.full(shape, -1.0, dtype=float_type), cnp.zeros(shape, dtype=bool))
    return lax.while_loop(more, step, start)[1].astype(dtype)


@compiled("shape", "dtype")
def binomial_core(key, count, prob, shape, dtype):
    """JAX's _binomial: sample with q = min(p, 1 - p) (count - sample where p >= 1/2); NaN for NaN or
    negative count or p < 0 (or p > 1, whose q is negative), inf for an infinite count."""
    float_type = str(prob.dtype)
    c = lambda value: const(value, float_type)
    count = cnp.broadcast_to(lax.convert_element_type(count, float_type), shape)
    prob = cnp.broadcast_to(prob, shape)
    p_lt_half = cnp.less(prob, c(0.5))
    q = cnp.where(p_lt_half, prob, cnp.subtract(c(1.0), prob))
    count_nan_or_neg = cnp.logical_or(cnp.isnan(count), cnp.less(count, c(0.0)))
    count_inf = cnp.isinf(count)
    q_is_nan = cnp.isnan(q)
    q_below_0 = cnp.less(q, c(0.0))
    q = cnp.where(cnp.logical_or(q_is_nan, q_below_0), c(0.01), q)
    use_inversion = cnp.logical_or(count_nan_or_neg, cnp.less_equal(cnp.multiply(count, q), c(10.0)))
    count = cnp.floor(count)   # as numpy's binomial treats a float count
    count_inversion = cnp.where(use_inversion, count, c(0.0))
    count_btrs = cnp.where(use_inversion, c(1e4), count)
    q_btrs = cnp.where(use_inversion, c(0.5), q)
    samples = cnp.where(use_inversion, binomial_inversion(key, count_inversion, q, shape, dtype),
                        binomial_btrs(key, count_btrs, q_btrs, shape, dtype))
    invalid = cnp.logical_or(cnp.logical_or(q_below_0, q_is_nan), count_nan_or_neg)
    samples = cnp.where(invalid, const(np.nan, dtype), samples)
    samples = cnp.where(cnp.logical_and(count_inf, cnp.logical_not(invalid)), const(np.inf, dtype), samples)
    keep = cnp.logical_or(cnp.logical_or(p_lt_half, count_nan_or_neg), cnp.logical_or(q_is_nan, count_inf))
    return cnp.where(keep, samples, cnp.subtract(count.astype(dtype), samples))


def inexact_dtype(*values) -> str:
    """JAX's promote_dtypes_inexact: the parameters' promoted dtype (Python numbers weak), made
    inexact (integers to float32 or float64 as jnp does)."""
    typed = [(dtype_name(v.dtype), False) if hasattr(v, "dtype") else (dtype_name(np.asarray(v).dtype), True)
             for v in values]
    return str(NUMPY_DTYPES[to_inexact(promote(*typed)[0])])


def binomial(key, n, p, shape=None, dtype=None):
    """jax.random.binomial: the number of successes in n trials of probability p, as floats of dtype."""
    data, _ = key_data_of("binomial", key)
    dtype = float_dtype("binomial", dtype)
    if shape is None:
        shape = np.broadcast_shapes(np.shape(n), np.shape(p))
    else:
        shape = canonical_shape(shape)
        check_shape("binomial", shape, np.shape(n), np.shape(p))
    prob = lax.convert_element_type(cnp.asarray(p), inexact_dtype(p))
    return binomial_core(data, n, prob, shape=tuple(shape), dtype=dtype)


@compiled("dtype")
def multinomial_core(key, n, p, dtype):
    """JAX's multinomial: category j's count is binomial(remaining trials, p_j / (p_j + ... + p_last))
    with the j-th key of the split, in a scan over the categories (last axis)."""
    float_type = str(p.dtype)
    p = cnp.moveaxis(p, -1, 0)
    # p_j + p_j+1 + ... + p_last summed left to right, as XLA's reverse cumsum (a reduce_window) rounds.
    remaining = p
    for d in range(1, int(p.shape[0])):
        tail = cnp.concatenate([p[d:], cnp.zeros((d, *p.shape[1:]), dtype=float_type)], axis=0)
        remaining = cnp.add(remaining, tail)
    ratios = cnp.divide(p, cnp.where(cnp.equal(remaining, const(0.0, float_type)), const(1.0, float_type),
                                     remaining))
    keys = threefry.split_keys(key, (int(p.shape[0]),))

    def category(remainder, ratio_key):
        ratio, key = ratio_key
        ratio = cnp.clip(ratio, const(0.0, float_type), const(1.0, float_type))
        count = binomial_core(key, remainder, ratio, shape=tuple(remainder.shape), dtype=float_type)
        return cnp.subtract(remainder, count), count

    _, counts = lax.scan(category, n, (ratios, keys))
    return cnp.moveaxis(counts, 0, -1).astype(dtype)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """jax.random.multinomial: counts of n trials over the categories of p's last axis. As JAX's code
    has it, `shape` (default p.shape) is the whole result shape, categories last: n broadcasts to
    shape[:-1] and p to shape."""
    data, _ = key_data_of("multinomial", key)
    dtype = float_dtype("multinomial", dtype)
    float_type = inexact_dtype(n, p)
    shape = tuple(np.shape(p)) if shape is None else canonical_shape(shape)
    if not shape:
        raise TracingValueError(located("multinomial: p must have at least one dimension (the categories)"))
    for what, value, target in (("n", n, shape[:-1]), ("p", p, shape)):
        try:
            fits = np.broadcast_shapes(np.shape(value), target) == target
        except ValueError:
            fits = False
        if not fits:
            raise TracingValueError(located(
                f"multinomial: {what} of shape {np.shape(value)} does not broadcast to {target} (shape {shape})"))
    n = cnp.broadcast_to(lax.convert_element_type(cnp.asarray(n), float_type), shape[:-1])
    p = cnp.broadcast_to(lax.convert_element_type(cnp.asarray(p), float_type), shape)
    return multinomial_core(data, n, p, dtype=dtype)
