"""XORWOW (G. Marsaglia, "Xorshift RNGs", J. Stat. Softw. 8(14), 2003, p. 5), seeded as rocRAND's
xorwow_engine (and cuRAND's) seeds it, written twice over: in Python integers (the reference) and on
kernel-IR expressions. The state is a 160-bit xorshift register x[0..4] and a Weyl counter d; a step
shifts the register down, x[4] = (x[4] ^ x[4] << 4) ^ (t ^ t << 1) with t = x[0] ^ x[0] >> 2, adds
362437 to d and gives d + x[4].

Skip-ahead: the register's step is a linear map A over GF(2)^160, so n steps are A^n, the product of
A^(2^k) over the set bits k of n; JUMPS holds A^(2^k) for k < 64 and, for rocRAND's subsequences of
2^67 words (rocrand_xorwow.h), A^(2^(67 + k)) at 64 + k, computed at import by squaring (131 products
of 160 x 160 bit matrices). d after n steps is d + 362437 n mod 2^32 (a subsequence leaves it: 2^67 is
a multiple of 2^32).
"""
from __future__ import annotations

import numpy as np

from ...ir import kernel as K

WORDS = 5
BITS = WORDS * 32
WEYL = 362437
INITIAL = (123456789, 362436069, 521288629, 88675123, 5783321)   # Marsaglia's x, y, z, w, v
INITIAL_D = 6615241                                              # Marsaglia's d
MASK = 0xFFFFFFFF
SUBSEQUENCE_LOG2 = 67                                            # rocRAND's subsequence: 2^67 words


def seeded(seed: int) -> tuple[list[int], int]:
    """rocRAND's xorwow_engine(seed, 0, 0): the initial state perturbed by the seed's two halves."""
    t0 = (1228688033 * ((seed & MASK) ^ 0x2C7F967F)) & MASK
    t1 = (2073658381 * ((seed >> 32) ^ 0xA03697CB)) & MASK
    x = list(INITIAL)
    x = [(x[0] + t0) & MASK, x[1] ^ t0, (x[2] + t1) & MASK, x[3] ^ t1, (x[4] + t0) & MASK]
    return x, (INITIAL_D + t0 + t1) & MASK


def step(x: list[int], d: int) -> tuple[int, list[int], int]:
    """One step: (output word, register, counter)."""
    t = x[0] ^ (x[0] >> 2)
    last = (x[4] ^ (x[4] << 4) ^ t ^ (t << 1)) & MASK
    d = (d + WEYL) & MASK
    return (d + last) & MASK, [x[1], x[2], x[3], x[4], last], d


def _step_columns() -> np.ndarray:
    """A as u32[160, 5]: row b is the register after one step from the unit vector e_b."""
    columns = np.zeros((BITS, WORDS), np.uint32)
    for b in range(BITS):
        unit = [0] * WORDS
        unit[b // 32] = 1 << (b % 32)
        columns[b] = step(unit, 0)[1]
    return columns


def _square(columns: np.ndarray) -> np.ndarray:
    """M^2 in the same form: M^2 e_b = M (M e_b), the xor of M's columns i over the set bits i of M e_b."""
    bits = ((columns[:, :, None] >> np.arange(32, dtype=np.uint32)) & 1).reshape(BITS, BITS).astype(bool)
    return np.bitwise_xor.reduce(np.where(bits[:, :, None], columns[None], np.uint32(0)), axis=1)


def _jump_table() -> np.ndarray:
    """u32[128, 160, 5]: [k, b] is the register A^(2^k) e_b as five words, [64 + k, b] A^(2^(67 + k)) e_b."""
    powers = [_step_columns()]
    for _ in range(SUBSEQUENCE_LOG2 + 63):
        powers.append(_square(powers[-1]))
    return np.stack(powers[:64] + powers[SUBSEQUENCE_LOG2:])


JUMPS = _jump_table()


def jump(x: list[int], d: int, n: int, subsequence: int = 0) -> tuple[list[int], int]:
    """The state `subsequence` subsequences and n steps on."""
    for k in range(128):
        if ((n if k < 64 else subsequence) >> (k % 64)) & 1:
            image = np.zeros(WORDS, np.uint32)
            for b in range(BITS):
                if (x[b // 32] >> (b % 32)) & 1:
                    image ^= JUMPS[k, b]
            x = [int(w) for w in image]
    return x, (d + WEYL * n) & MASK


def words(seed: int, first: int, count: int, subsequence: int = 0) -> np.ndarray:
    """Output words first .. first + count - 1 of the seed's subsequence's stream (uint32)."""
    x, d = jump(*seeded(seed), first, subsequence)
    out = np.empty(count, np.uint32)
    for i in range(count):
        out[i], x, d = step(x, d)
    return out


# -- kernel expressions --

def seeded_kernel(seed: K.Expr, let) -> tuple[list[K.Expr], K.Expr]:
    t0 = let((seed.cast("u32") ^ K.Const(0x2C7F967F, "u32")) * K.Const(1228688033, "u32"))
    t1 = let((seed >> K.Const(32, "u64")).cast("u32") ^ K.Const(0xA03697CB, "u32"))
    t1 = let(t1 * K.Const(2073658381, "u32"))
    c = [K.Const(v, "u32") for v in INITIAL]
    return [c[0] + t0, c[1] ^ t0, c[2] + t1, c[3] ^ t1, c[4] + t0], K.Const(INITIAL_D, "u32") + t0 + t1


def step_kernel(x: list[K.Expr], d: K.Expr, let) -> tuple[K.Expr, list[K.Expr], K.Expr]:
    t = let(x[0] ^ (x[0] >> K.Const(2, "u32")))
    last = let(x[4] ^ (x[4] << K.Const(4, "u32")) ^ t ^ (t << K.Const(1, "u32")))
    d = let(d + K.Const(WEYL, "u32"))
    return let(d + last), [x[1], x[2], x[3], x[4], last], d


def jump_kernel(x: list[K.Var], d: K.Var, n: K.Expr, subsequence: K.Expr, table: K.Buffer, prefix: str
                ) -> list[K.Stmt]:
    """Statements moving the state vars (x, d) `subsequence` subsequences and n (both u64) steps on: for
    each set bit k of n (and 64 + k of subsequence), the register becomes the xor of JUMPS[k]'s columns
    over its own set bits."""
    k, j = K.Var(f"{prefix}k", "i64"), K.Var(f"{prefix}j", "i64")
    image = [K.Var(f"{prefix}r{w}", "u32") for w in range(WORDS)]
    columns = []
    for i in range(WORDS):
        mask = K.Var(f"{prefix}m{i}", "u32")
        base = (k * BITS + i * 32 + j) * WORDS
        columns.append(K.For(j, 0, 32, 1, [
            K.Let(mask, K.Const(0, "u32") - ((x[i] >> j.cast("u32")) & K.Const(1, "u32"))),
            *[K.Assign(image[w], image[w] ^ (mask & table[base + w])) for w in range(WORDS)]]))
    apply = [*[K.Assign(r, K.Const(0, "u32")) for r in image], *columns,
             *[K.Assign(x[w], image[w]) for w in range(WORDS)]]
    return [*[K.Let(r, K.Const(0, "u32")) for r in image],
            K.For(k, 0, 128, 1, [K.If(jump_bit_set(n, subsequence, k), apply)]),
            K.Assign(d, d + n.cast("u32") * K.Const(WEYL, "u32"))]


def jump_bit_set(n: K.Expr, subsequence: K.Expr, k: K.Var) -> K.Expr:
    """Whether table entry k (i64) applies: bit k of n for k < 64, bit k - 64 of subsequence above."""
    word = K.select(k < 64, n, subsequence)
    return ((word >> (k % 64).cast("u64")) & K.Const(1, "u64")).ne(K.Const(0, "u64"))
