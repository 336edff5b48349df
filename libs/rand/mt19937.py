"""MT19937 (M. Matsumoto and T. Nishimura, "Mersenne Twister", ACM TOMACS 8(1), 1998), seeded by
mt19937ar's init_genrand (as std::mt19937 and numpy's RandomState(seed) seed it), written twice over:
in numpy (the reference) and as a workgroup kernel.

The state is N = 624 words; a regeneration (the "twist") replaces word i by
mt[i + M] ^ twist(upper bit of mt[i], lower 31 bits of mt[i + 1]) with M = 397, indices mod N, in
increasing i, so words i >= N - M read words regenerated earlier in the same twist. Word i reads the
new word i - (N - M), so the twist falls into three stretches of independent words: [0, 227) reads
only old words, [227, 454) reads the new [0, 227), [454, 624) the new [227, 397) (word 623 reads the
new word 0 as its lower bits). Output word k of a regeneration is word k tempered; the stream's first
624 words come from the first twist of the seeded state.

Parallelism: the kernel runs the stream in one workgroup, its work-items regenerating a stretch at a
time in LDS (read, barrier, write, barrier), then tempering and converting the 624 words, one
distribution block of four words per work-item. There is no per-work-item skip-ahead: MT19937's jump to
a runtime position is a polynomial in the 19937-step transition (millions of word operations per
jump), so the kernel twists from the seed through `offset` (one twist per 624 words skipped).
"""
from __future__ import annotations

import numpy as np

from ...ir import kernel as K

N, M = 624, 397
MATRIX_A, UPPER, LOWER = 0x9908B0DF, 0x80000000, 0x7FFFFFFF
STRETCHES = ((0, N - M), (N - M, 2 * (N - M)), (2 * (N - M), N))   # independent words of a twist
BLOCKS = N // 4                                                    # distribution blocks a twist


def seeded(seed: int) -> np.ndarray:
    """mt19937ar's init_genrand(seed & 0xffffffff)."""
    mt = [seed & 0xFFFFFFFF]
    for i in range(1, N):
        mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + i) & 0xFFFFFFFF)
    return np.array(mt, np.uint32)


def twist(mt: np.ndarray) -> np.ndarray:
    """The next state, stretch by stretch (each stretch's words are independent)."""
    mt = mt.copy()
    for lo, hi in STRETCHES:
        i = np.arange(lo, hi)
        y = (mt[i] & np.uint32(UPPER)) | (mt[(i + 1) % N] & np.uint32(LOWER))
        mt[i] = mt[(i + M) % N] ^ (y >> np.uint32(1)) ^ np.where(y & np.uint32(1), np.uint32(MATRIX_A), np.uint32(0))
    return mt


def temper(y: np.ndarray) -> np.ndarray:
    y = y ^ (y >> np.uint32(11))
    y = y ^ ((y << np.uint32(7)) & np.uint32(0x9D2C5680))
    y = y ^ ((y << np.uint32(15)) & np.uint32(0xEFC60000))
    return y ^ (y >> np.uint32(18))


def words(seed: int, first: int, count: int) -> np.ndarray:
    """Output words first .. first + count - 1 of the seed's stream (uint32)."""
    mt, out = seeded(seed), []
    for r in range((first + count + N - 1) // N):
        mt = twist(mt)
        if (r + 1) * N > first:
            out.append(temper(mt))
    stream = np.concatenate(out) if out else np.zeros(0, np.uint32)
    start = first - (first // N) * N
    return stream[start:start + count]


# -- kernel statements --

def temper_kernel(y: K.Expr, let) -> K.Expr:
    y = let(y ^ (y >> K.Const(11, "u32")))
    y = let(y ^ ((y << K.Const(7, "u32")) & K.Const(0x9D2C5680, "u32")))
    y = let(y ^ ((y << K.Const(15, "u32")) & K.Const(0xEFC60000, "u32")))
    return let(y ^ (y >> K.Const(18, "u32")))


def seed_kernel(state: K.LdsBuffer, seed: K.Expr, lid: K.Expr) -> list[K.Stmt]:
    """Work-item 0 writes init_genrand's state (a sequential recurrence); then a barrier."""
    i, previous = K.Var("si", "i32"), K.Var("sp", "u32")
    step = [K.Assign(previous, previous ^ (previous >> K.Const(30, "u32"))),
            K.Assign(previous, previous * K.Const(1812433253, "u32") + i.cast("u32")),
            K.Store(state, i, previous)]
    return [K.If(lid.eq(K.Const(0, "i32")), [K.Let(previous, seed.cast("u32")), K.Store(state, 0, previous),
                                             K.For(i, 1, N, 1, step)]),
            K.Barrier()]


def twist_kernel(state: K.LdsBuffer, lid: K.Expr) -> list[K.Stmt]:
    """The twist in LDS by a workgroup of at least N - M work-items, stretch by stretch: each work-item
    reads its word's operands, a barrier, writes the word, a barrier."""
    stmts = []
    for s, (lo, hi) in enumerate(STRETCHES):
        active = lid < K.Const(hi - lo, "i32")
        i = lid + lo
        value, y = K.Var(f"tw{s}", "u32"), K.Var(f"ty{s}", "u32")
        stmts += [K.Let(value, K.Const(0, "u32")), K.If(active, [
            K.Let(y, (state[i] & K.Const(UPPER, "u32")) | (state[(i + 1) % N] & K.Const(LOWER, "u32"))),
            K.Assign(value, state[(i + M) % N] ^ (y >> K.Const(1, "u32"))
                     ^ (K.Const(0, "u32") - (y & K.Const(1, "u32")) & K.Const(MATRIX_A, "u32")))]),
            K.Barrier(), K.If(active, [K.Store(state, i, value)]), K.Barrier()]
    return stmts
