"""The Threefry-2x32 counter-based hash (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
SC'11; 20 rounds) built from graph-IR uint32 ops, so that it fuses into the kernels that use its bits,
and the three ways jax.random uses it with `jax_threefry_partitionable` on (JAX's default since 0.5):
each element's flat index is the counter, so a key's bits for a shape do not depend on how they are
computed.
"""
from __future__ import annotations

import math

from .. import lax
from .. import cnp

# Threefry-2x32's rotation constants, the two sets of four alternating between groups of rounds, and
# the key-schedule parity constant (Random123's threefry.h, SKEIN_KS_PARITY32).
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
KEY_PARITY = 0x1BD11BDA


def u32(value) -> object:
    """A uint32 constant."""
    return cnp.asarray(value, dtype="uint32")


def rotate_left(x, bits: int):
    return lax.bitwise_or(lax.shift_left(x, u32(bits)), lax.shift_right_logical(x, u32(32 - bits)))


def threefry2x32(k0, k1, x0, x1):
    """The hash of counters (x0, x1) under key (k0, k1), uint32 arrays broadcast to one shape: 5 groups
    of 4 rounds, a key injection after each group."""
    ks = (k0, k1, lax.bitwise_xor(lax.bitwise_xor(k0, k1), u32(KEY_PARITY)))
    x0, x1 = lax.add(x0, ks[0]), lax.add(x1, ks[1])
    for group in range(5):
        for bits in ROTATIONS[group % 2]:
            x0 = lax.add(x0, x1)
            x1 = lax.bitwise_xor(x0, rotate_left(x1, bits))
        x0 = lax.add(x0, ks[(group + 1) % 3])
        x1 = lax.add(lax.add(x1, ks[(group + 2) % 3]), u32(group + 1))
    return x0, x1


def flat_index_2x32(shape: tuple[int, ...]):
    """(high, low) uint32 halves of each element's row-major flat index, arrays of `shape`."""
    size = math.prod(shape)
    if size > 2 ** 32:
        raise NotImplementedError(f"random bits for {size} elements: more than 2**32 needs 64-bit counters")
    low = lax.reshape(lax.iota("uint32", size), shape) if shape else u32(0)
    return lax.full(shape, 0, "uint32"), low


def key_halves(key):
    """A (..., 2) uint32 key array's two words, each of shape key.shape[:-1]."""
    return key[..., 0], key[..., 1]


def hash_counters(key, shape: tuple[int, ...]):
    """The hash of every element's flat index under one (2,) key: two uint32 arrays of `shape`."""
    k0, k1 = key_halves(key)
    high, low = flat_index_2x32(shape)
    return threefry2x32(lax.broadcast(k0, shape), lax.broadcast(k1, shape), high, low)


def split_keys(key, shape: tuple[int, ...]):
    """jax.random.split: a new key per index of `shape` (a (*shape, 2) array)."""
    b0, b1 = hash_counters(key, shape)
    return cnp.stack([b0, b1], axis=len(shape))


def fold_in_key(key, data):
    """jax.random.fold_in: the hash of the counter (0, data)."""
    k0, k1 = key_halves(key)
    b0, b1 = threefry2x32(k0, k1, u32(0), data)
    return cnp.stack([b0, b1])


def random_bits(key, bit_width: int, shape: tuple[int, ...]):
    """Unsigned integers of bit_width bits, one per element of `shape`: 32 bits are the xor of the
    hash's two words, 64 bits their concatenation, 8 and 16 bits the low bits of the 32."""
    b0, b1 = hash_counters(key, shape)
    if bit_width == 64:
        high = lax.convert_element_type(b0, "uint64")
        return lax.bitwise_or(lax.shift_left(high, cnp.asarray(32, dtype="uint64")),
                              lax.convert_element_type(b1, "uint64"))
    bits = lax.bitwise_xor(b0, b1)
    return bits if bit_width == 32 else lax.convert_element_type(bits, f"uint{bit_width}")
