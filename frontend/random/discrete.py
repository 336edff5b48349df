"""jax.random's integer and index samplers: bits, randint, permutation, choice, categorical, each
computed as JAX computes it, so that the same key gives the same integers. Shuffles sort by random
32-bit keys with the existing lax.sort_key_val (JAX's algorithm: rounds of sorts by fresh keys).
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from ...errors import TracingTypeError, TracingValueError
from .. import cnp
from .. import lax
from ..tracing import located
from . import threefry
from .continuous import DEFAULT_FLOAT, FLOATS, canonical_shape, check_shape, compiled, gumbel, uniform
from .keys import key_data_of

DEFAULT_INT = "int64"    # x64: jax.random's int and uint defaults are 64-bit
DEFAULT_UINT = "uint64"
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
INTEGERS = ("int8", "int16", "int32", "int64") + UNSIGNED


@compiled("shape", "dtype")
def bits_core(key, shape, dtype):
    return threefry.random_bits(key, np.dtype(dtype).itemsize * 8, shape)


def bits(key, shape=(), dtype=None):
    """jax.random.bits: uniform unsigned integers of dtype's width."""
    data, _ = key_data_of("bits", key)
    dtype = DEFAULT_UINT if dtype is None else np.dtype(dtype).name
    if dtype not in UNSIGNED:
        raise TracingValueError(located(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}"))
    return bits_core(data, shape=canonical_shape(shape), dtype=dtype)


def clipped_to(value, dtype: str):
    """JAX's _convert_and_clip_integer: value clipped to dtype's range (in value's dtype), converted."""
    own, target = np.iinfo(str(value.dtype)), np.iinfo(dtype)
    low, high = max(own.min, target.min), min(own.max, target.max)
    clipped = cnp.clip(value, cnp.asarray(low, dtype=str(value.dtype)), cnp.asarray(high, dtype=str(value.dtype)))
    return cnp.asarray(clipped).astype(dtype)


def as_integer(value):
    value = cnp.asarray(value)
    return value if str(value.dtype) in INTEGERS else value.astype(DEFAULT_INT)


def randint_in(key, minval, maxval, shape, dtype):
    """jax.random._randint: minval + (two words of random bits, as one 2n-bit number) mod the span; the
    span is 1 where maxval <= minval, one more where maxval is past dtype's maximum (0: every value)."""
    minval, maxval = as_integer(minval), as_integer(maxval)
    nbits = np.iinfo(dtype).bits
    unsigned = f"uint{nbits}"
    top = clipped_to(cnp.asarray(np.iinfo(dtype).max, dtype=dtype), str(maxval.dtype))
    maxval_out_of_range = cnp.greater(maxval, top)
    minval, maxval = clipped_to(minval, dtype), clipped_to(maxval, dtype)
    keys = threefry.split_keys(key, (2,))
    higher = threefry.random_bits(keys[0], nbits, shape)
    lower = threefry.random_bits(keys[1], nbits, shape)
    one = cnp.asarray(1, dtype=unsigned)
    span = lax.convert_element_type(cnp.subtract(maxval, minval), unsigned)
    span = cnp.where(cnp.less_equal(maxval, minval), one, span)
    span = cnp.where(cnp.logical_and(maxval_out_of_range, cnp.greater(maxval, minval)), cnp.add(span, one), span)
    span = cnp.broadcast_to(span, shape)
    multiplier = cnp.remainder(cnp.asarray(2 ** (nbits // 2), dtype=unsigned), span)
    multiplier = lax.rem(cnp.multiply(multiplier, multiplier), span)
    offset = cnp.add(cnp.multiply(lax.rem(higher, span), multiplier), lax.rem(lower, span))
    return cnp.add(minval, lax.convert_element_type(lax.rem(offset, span), dtype))


@compiled("shape", "dtype")
def randint_core(key, minval, maxval, shape, dtype):
    info = np.iinfo(dtype)
    if info.bits >= 32:
        return randint_in(key, minval, maxval, shape, dtype)
    # Narrow dtypes sample in int32, so that the modulo's bias stays small.
    minval = cnp.clip(cnp.asarray(minval).astype("int32"), int(info.min), int(info.max))
    maxval = cnp.clip(cnp.asarray(maxval).astype("int32"), int(info.min), int(info.max) + 1)
    return randint_in(key, minval, maxval, shape, "int32").astype(dtype)


def randint(key, shape, minval, maxval, dtype=None):
    """jax.random.randint: integers in [minval, maxval)."""
    data, _ = key_data_of("randint", key)
    dtype = DEFAULT_INT if dtype is None else np.dtype(dtype).name
    if dtype not in INTEGERS:
        raise TracingTypeError(located(f"randint only accepts integer dtypes, got {dtype}"))
    shape = canonical_shape(shape)
    check_shape("randint", shape, np.shape(minval), np.shape(maxval))
    return randint_core(data, minval, maxval, shape=shape, dtype=dtype)


def shuffled(key, x, axis: int):
    """jax.random._shuffle: x sorted along axis by random 32-bit keys, in as many rounds of fresh keys
    as make a collision of all of them unlikely (3 log(n) / log(2**32 - 1), rounded up)."""
    rounds = math.ceil(3 * np.log(max(1, math.prod(x.shape))) / np.log(np.iinfo(np.uint32).max))
    for _ in range(rounds):
        keys = threefry.split_keys(key, (2,))
        key = keys[0]
        sort_keys = threefry.random_bits(keys[1], 32, tuple(x.shape))
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


@compiled("axis", "independent")
def permutation_core(key, x, axis, independent):
    if independent or x.ndim == 1:
        return shuffled(key, x, axis)
    order = shuffled(key, cnp.arange(x.shape[axis]), 0)
    return cnp.take(x, order, axis)


@compiled("n")
def permutation_of_range(key, n):
    return shuffled(key, cnp.arange(n), 0)


def permutation(key, x, axis=0, independent=False):
    """jax.random.permutation: a shuffled range(x) for an int, else x shuffled along axis (rows moved
    together, or each 1-d slice shuffled on its own with independent=True)."""
    data, _ = key_data_of("permutation", key)
    if not np.ndim(x):
        if not np.issubdtype(np.asarray(x).dtype, np.integer):
            raise TracingTypeError(located("x must be an integer or at least 1-dimensional"))
        return permutation_of_range(data, n=operator.index(x))
    axis = operator.index(axis)
    if not -np.ndim(x) <= axis < np.ndim(x):
        raise TracingValueError(located(f"axis {axis} is out of bounds for an array of dimension {np.ndim(x)}"))
    return permutation_core(data, x, axis=axis % np.ndim(x), independent=bool(independent))


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """jax.random.choice: draws from a (or range(a)) along axis, with or without replacement, uniformly
    or with probabilities p (inverse CDF with replacement; the Gumbel top-k trick without)."""
    data, _ = key_data_of("choice", key)
    if not isinstance(shape, Sequence):
        raise TracingTypeError(located(f"shape argument of jax.random.choice must be a sequence, got {shape}"))
    shape = canonical_shape(shape)
    arr = a if hasattr(a, "shape") else np.asarray(a)
    if arr.ndim == 0:
        n_inputs = operator.index(a) if not hasattr(a, "dtype") else int(a)
    else:
        axis = operator.index(axis) % arr.ndim
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return cnp.zeros(shape, dtype=str(arr.dtype))
    if n_inputs <= 0:
        raise TracingValueError(located("a must be greater than 0 unless no samples are taken"))
    if not replace and n_draws > n_inputs:
        raise TracingValueError(located(
            f"Cannot take a larger sample (size {n_draws}) than population (size {n_inputs}) when 'replace=False'"))
    if p is not None:
        p = cnp.asarray(p)
        if str(p.dtype) not in FLOATS:
            p = p.astype(DEFAULT_FLOAT)
        if tuple(p.shape) != (n_inputs,):
            raise TracingValueError(located(
                f"p must be None or a 1D vector with the same size as a.shape[axis]. p has shape {tuple(p.shape)} "
                f"and a.shape[axis] is {n_inputs}."))
    if mode not in (None, "low"):
        raise NotImplementedError(located(f"jax.random.choice mode={mode!r}: only mode='low' is supported"))
    population = None if arr.ndim == 0 else arr
    return choice_core(data, population, p, n_inputs=n_inputs, shape=shape, replace=bool(replace), axis=axis)


@compiled("n_inputs", "shape", "replace", "axis")
def choice_core(key, population, p, n_inputs, shape, replace, axis):
    n_draws = math.prod(shape)
    if p is None and replace:
        index = randint(key, shape, 0, n_inputs)
    elif p is None:
        whole = shuffled(key, cnp.arange(n_inputs), 0) if population is None else \
            permutation_core(key, population, axis=axis, independent=False)
        taken = lax.slice_in_dim(whole, 0, n_draws, axis=0 if population is None else axis)
        out_shape = shape if population is None else (*population.shape[:axis], *shape,
                                                      *population.shape[axis + 1:])
        return cnp.reshape(taken, out_shape)
    elif replace:
        cumulative = cnp.cumsum(p)
        r = cnp.multiply(cumulative[-1], cnp.subtract(cnp.asarray(1, dtype=str(p.dtype)),
                                                       uniform(key, shape, dtype=str(p.dtype))))
        index = cnp.searchsorted(cumulative, r).astype(DEFAULT_INT)
    else:
        g = cnp.add(gumbel(key, (n_inputs,), dtype=str(p.dtype)), cnp.log(p))
        index = lax.top_k(g, n_draws)[1].astype(DEFAULT_INT)
    if population is None:
        return cnp.reshape(index, shape)
    taken = cnp.take(population, index, axis)
    return cnp.reshape(taken, (*population.shape[:axis], *shape, *population.shape[axis + 1:]))


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """jax.random.categorical: indices along axis drawn with probabilities softmax(logits), by the
    argmax (or, without replacement, the top-k) of logits plus Gumbel noise."""
    data, _ = key_data_of("categorical", key)
    if mode not in (None, "low"):
        raise NotImplementedError(located(f"jax.random.categorical mode={mode!r}: only mode='low' is supported"))
    logits = logits if hasattr(logits, "shape") else np.asarray(logits)
    axis = operator.index(axis)
    batch_shape = tuple(np.delete(np.array(logits.shape, dtype=int), axis))
    if shape is None:
        shape = batch_shape
    else:
        shape = canonical_shape(shape)
        check_shape("categorical", shape, batch_shape)
    prefix = shape[:len(shape) - len(batch_shape)]
    if not replace and math.prod(prefix) > logits.shape[axis]:
        raise TracingValueError(located(
            f"Number of samples without replacement ({math.prod(prefix)}) cannot exceed number of categories "
            f"({logits.shape[axis]})."))
    return categorical_core(data, logits, axis=axis, shape=shape, batch_shape=batch_shape, replace=bool(replace))


@compiled("axis", "shape", "batch_shape", "replace")
def categorical_core(key, logits, axis, shape, batch_shape, replace):
    dtype = str(logits.dtype)
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        axis = axis - logits.ndim if axis >= 0 else axis
        noise_shape = list(shape[len(shape) - len(batch_shape):])
        noise_shape.insert(axis % logits.ndim, logits.shape[axis])
        noise = gumbel(key, (*prefix, *noise_shape), dtype)
        return cnp.argmax(cnp.add(noise, cnp.expand_dims(logits, tuple(range(len(prefix))))), axis=axis)
    noisy = cnp.add(logits, gumbel(key, tuple(logits.shape), dtype))
    _, indices = lax.top_k(cnp.moveaxis(noisy, axis, -1), math.prod(prefix))
    last = indices.ndim - 1
    return cnp.reshape(cnp.transpose(indices, (last, *range(last))), shape)
