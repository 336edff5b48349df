"""PRNG keys as jax.random has them: a raw key is a uint32 array of shape (..., 2) (`PRNGKey`,
`split` of a raw key); a typed key (`key`, `wrap_key_data`) is a `PRNGKeyArray` holding that data,
whose own shape leaves out the trailing 2. Both are threefry2x32 keys, the only implementation.
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from ...errors import TracingTypeError, TracingValueError
from .. import cnp
from .. import lax
from ..jit import jit
from ..tracing import Tracer, located
from . import threefry

IMPL = "threefry2x32"


class PRNGKeyArray(NamedTuple):
    """A typed key array (jax.random.key's result): `data` is its uint32 key data of shape
    (*shape, 2). A named tuple, so that it passes through `jit` as a pytree of one leaf."""
    data: object

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape[:-1])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> str:
        return f"key<{IMPL}>"

    def __getitem__(self, index):
        if isinstance(index, int) and not self.shape:
            raise TypeError("a scalar key array cannot be indexed")
        index = index if isinstance(index, tuple) else (index,)
        return PRNGKeyArray(self.data[index + (Ellipsis,) if Ellipsis not in index else index])

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a scalar key array")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def key_data_of(what: str, key, allow_batched: bool = False):
    """(uint32 key data of shape (..., 2), whether the key was typed), after JAX's checks."""
    typed = isinstance(key, PRNGKeyArray)
    data = key.data if typed else key
    if not typed:
        if not isinstance(data, (Tracer, np.ndarray, np.generic)):
            if isinstance(data, (list, tuple)) or np.isscalar(data):
                data = np.asarray(data)
            else:
                raise TracingTypeError(located(f"{what}: unexpected PRNG key type {type(key).__name__}"))
        check_key_data(data)
    if not allow_batched and data.ndim != 1:
        raise TracingValueError(located(
            f"{what} accepts a single key, but was given a key array of shape {tuple(data.shape[:-1])} != (). "
            f"Use jax.vmap for batching."))
    return data, typed


def check_key_data(data) -> None:
    """JAX's checks of raw key data (random_wrap): a trailing axis of 2, dtype uint32."""
    shape, dtype = tuple(data.shape), np.dtype(str(data.dtype))
    if not shape or shape[-1] != 2:
        raise TracingTypeError(located(
            f"invalid PRNG key data: expected key_data.shape to end with (2,); got shape={shape} for "
            f"impl={IMPL}"))
    if dtype != np.uint32:
        raise TracingTypeError(located(
            f"invalid PRNG key data: expected key_data.dtype = uint32; got dtype={dtype} for impl={IMPL}"))


def returned(data, typed: bool):
    return PRNGKeyArray(data) if typed else data


def seed_words(seed):
    """threefry_seed: a 64-bit integer seed's high and low 32-bit words (x64: int64 seeds)."""
    if isinstance(seed, (PRNGKeyArray,)):
        raise TracingTypeError(located("key accepts a scalar seed, but was given a PRNG key."))
    if np.ndim(seed):
        raise TracingTypeError(located(
            f"key accepts a scalar seed, but was given an array of shape {np.shape(seed)} != (). "
            f"Use jax.vmap for batching"))
    if isinstance(seed, (bool, float, complex)) or not np.issubdtype(np.dtype(getattr(seed, "dtype", type(seed))),
                                                                      np.integer):
        raise TracingTypeError(located(f"PRNG key seed must be an integer; got {seed!r}"))
    if isinstance(seed, int) and not -2 ** 63 <= seed < 2 ** 64:
        raise OverflowError(located(f"PRNG key seed {seed} does not fit in 64 bits"))
    return seed_key(seed if isinstance(seed, Tracer) else np.asarray(seed if seed < 2 ** 63 else seed - 2 ** 64))


@jit
def seed_key(seed):
    high = lax.convert_element_type(lax.shift_right_logical(seed, lax.full((), 32, seed.dtype)), "uint32") \
        if np.dtype(str(seed.dtype)).itemsize == 8 else threefry.u32(0)
    low = lax.convert_element_type(seed, "uint32")
    return cnp.stack([high, low])


def PRNGKey(seed, *, impl=None):
    """jax.random.PRNGKey: a raw key, uint32 of shape (2,)."""
    check_impl(impl)
    return seed_words(seed)


def key(seed, *, impl=None, dtype=None):
    """jax.random.key: a typed scalar key."""
    check_impl(impl if dtype is None else dtype)
    return PRNGKeyArray(seed_words(seed))


def check_impl(impl) -> None:
    if impl is not None and str(impl) not in (IMPL, f"key<{IMPL}>"):
        raise NotImplementedError(located(f"PRNG implementation {impl!r}: only {IMPL} is supported"))


def key_data(keys):
    """jax.random.key_data: a key array's uint32 data."""
    data, _ = key_data_of("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    """jax.random.wrap_key_data: uint32 data of shape (..., 2) as a typed key array."""
    check_impl(impl if dtype is None else dtype)
    data = key_bits_array if isinstance(key_bits_array, Tracer) else np.asarray(key_bits_array)
    check_key_data(data)
    return PRNGKeyArray(data)


def key_impl(keys) -> str:
    key_data_of("key_impl", keys, allow_batched=True)
    return IMPL


def split_shape(num) -> tuple[int, ...]:
    return tuple(map(operator.index, num)) if isinstance(num, (tuple, list)) else (operator.index(num),)


split_raw = jit(threefry.split_keys, static_argnums=1)


def split(key, num=2):
    """jax.random.split: `num` new keys (or a tuple: an array of keys of that shape)."""
    data, typed = key_data_of("split", key)
    return returned(split_raw(data, split_shape(num)), typed)


@jit
def fold_in_raw(data, message):
    return threefry.fold_in_key(data, lax.convert_element_type(message, "uint32"))


def fold_in(key, data):
    """jax.random.fold_in: a new key from `key` and a 32-bit integer."""
    key_words, typed = key_data_of("fold_in", key)
    if np.ndim(data):
        raise TracingTypeError(located(
            f"fold_in accepts a scalar, but was given an array of shape {np.shape(data)} != (). "
            f"Use jax.vmap for batching."))
    if isinstance(data, int):
        data = np.uint32(data % 2 ** 32)
    return returned(fold_in_raw(key_words, data), typed)
