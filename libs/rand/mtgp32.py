"""MTGP32 (M. Saito and M. Matsumoto, "Variants of Mersenne Twister Suitable for Graphic Processors",
ACM TOMS 39(2), 2013), Mersenne exponent 11213, with parameter set No. 0 of the authors' dynamically
created table mtgp32dc-param-11213.c (the table rocRAND ships as rocrand_mtgp32_11213.h; its first
state uses this set), written twice over: in numpy (the reference) and as a workgroup kernel.

The state is N = 351 words; word k + N of the sequence is
  para_rec(x1 = s[k], x2 = s[k + 1], y = s[k + POS]):  x = (x1 & MASK) ^ x2;  x ^= x << SH1;
                                                      y = x ^ (y >> SH2);  y ^ TBL[y & 15]
and output k is that word tempered by t = s[k + POS - 1]: t ^= t >> 16; t ^= t >> 8; word ^ TMP_TBL[t & 15].
Words k .. k + N - POS - 1 read only words before k + N - POS + POS = k + N: STEP = 256 of them are
independent, which is what a workgroup of 256 work-items computes at once (rocRAND's block of 256).

Seeding is rocRAND's rocrand_make_state_mtgp32 for its state 0 (which is the authors'
mtgp32_init_state of the 32-bit seed (seed ^ seed >> 32) + 1); the stream is that state's sequence of
outputs, i.e. what rocrand() returns to the threads of one block in thread order, call after call.
rocRAND's host API interleaves 512 such states (200 parameter sets here would be the table); this
generator gives state 0's stream only.

Parallelism: one workgroup for the stream, the state a ring of RING words in LDS and the two tables in
LDS (a lookup each, not a tree of selects); there is no skip-ahead (MTGP's jump is a polynomial in the
11213-step transition, as MT19937's), so the kernel runs the recursion from the seed through `offset`
(one step per 256 words skipped).
"""
from __future__ import annotations

import numpy as np

from ...ir import kernel as K

N, POS, SH1, SH2, MASK = 351, 19, 13, 4, 0xFFF80000
TBL = (0x00000000, 0x4F909277, 0xD506358C, 0x9A96A7FB, 0xECC00000, 0xA3509277, 0x39C6358C, 0x7656A7FB,
       0x00009FD9, 0x4F900DAE, 0xD506AA55, 0x9A963822, 0xECC09FD9, 0xA3500DAE, 0x39C6AA55, 0x76563822)
TMP_TBL = (0x00000000, 0x007C4132, 0x2B4020ED, 0x2B3C61DF, 0x000240A5, 0x007E0197, 0x2B426048, 0x2B3E217A,
           0x00414015, 0x003D0127, 0x2B0160F8, 0x2B7D21CA, 0x004300B0, 0x003F4182, 0x2B03205D, 0x2B7F616F)
STEP = 256                  # words a step (work-items), <= N - POS
RING = 1024                 # LDS ring of the state: a step writes N words ahead of what it reads
BLOCKS = STEP // 4          # distribution blocks a step
HIDDEN = TBL[4] ^ ((TBL[8] << 16) & 0xFFFFFFFF)                  # mtgp32_init_state's hidden seed, word 1
_BYTE = (HIDDEN + (HIDDEN >> 16)) & 0xFFFFFFFF
FILL = ((_BYTE + (_BYTE >> 8)) & 0xFF) * 0x01010101              # the memset of the other words


def seeded(seed: int) -> np.ndarray:
    """rocrand_make_state_mtgp32's state 0: mtgp32_init_state of (seed ^ seed >> 32) + 1 (32 bits)."""
    seed = (((seed ^ (seed >> 32)) & 0xFFFFFFFF) + 1) & 0xFFFFFFFF
    state = [FILL] * N
    state[0], state[1] = seed, HIDDEN
    for i in range(1, N):
        state[i] ^= (1812433253 * (state[i - 1] ^ (state[i - 1] >> 30)) + i) & 0xFFFFFFFF
    return np.array(state, np.uint32)


def words(seed: int, first: int, count: int) -> np.ndarray:
    """Output words first .. first + count - 1 of the seed's stream (uint32), N - POS words at a time."""
    s = seeded(seed)
    tbl, tmp_tbl = np.array(TBL, np.uint32), np.array(TMP_TBL, np.uint32)
    out, k = [], 0
    while k < first + count:
        i = np.arange(k, k + N - POS)
        x = (s[i] & np.uint32(MASK)) ^ s[i + 1]
        x ^= x << np.uint32(SH1)
        y = x ^ (s[i + POS] >> np.uint32(SH2))
        word = y ^ tbl[y & np.uint32(15)]
        t = s[i + POS - 1]
        t = t ^ (t >> np.uint32(16))
        t = t ^ (t >> np.uint32(8))
        out.append(word ^ tmp_tbl[t & np.uint32(15)])
        s = np.concatenate([s, word])
        k += N - POS
    stream = np.concatenate(out) if out else np.zeros(0, np.uint32)
    return stream[first:first + count]


# -- kernel statements --

def seed_kernel(state: K.LdsBuffer, seed: K.Expr, lid: K.Expr) -> list[K.Stmt]:
    """Work-item 0 writes the seeded state (`seeded`'s recurrence over words filled with the hidden
    seed's byte); then a barrier."""
    i, previous = K.Var("si", "i32"), K.Var("sp", "u32")
    mixed = seed ^ (seed >> K.Const(32, "u64"))
    step = [K.Assign(previous, K.Const(FILL, "u32") ^ (
                K.Const(1812433253, "u32") * (previous ^ (previous >> K.Const(30, "u32"))) + i.cast("u32"))),
            K.Store(state, i, previous)]
    first = K.Const(HIDDEN, "u32") ^ (K.Const(1812433253, "u32") * (previous ^ (previous >> K.Const(30, "u32")))
                                      + K.Const(1, "u32"))
    return [K.If(lid.eq(K.Const(0, "i32")), [
        K.Let(previous, mixed.cast("u32") + K.Const(1, "u32")), K.Store(state, 0, previous),
        K.Assign(previous, first), K.Store(state, 1, previous),
        K.For(i, 2, N, 1, step)]),
        K.Barrier()]


def tables_kernel(tables: K.LdsBuffer) -> list[K.Stmt]:
    """TBL then TMP_TBL stored into `tables` (LDS, 32 words), by the work-item that runs it: the
    recursion's lookups read LDS, as rocRAND's MTGP32 kernel keeps its parameter tables in shared
    memory."""
    return [K.Store(tables, i, K.Const(v, "u32")) for i, v in enumerate(TBL + TMP_TBL)]


def step_kernel(state: K.LdsBuffer, tables: K.LdsBuffer, k: K.Expr, let) -> tuple[K.Expr, K.Expr]:
    """The work-item's word k of the stream (k an i64 index): (the new state word k + N, the output)."""
    ring = lambda j: (k + j) & (RING - 1)
    x = let((state[ring(0)] & K.Const(MASK, "u32")) ^ state[ring(1)])
    x = let(x ^ (x << K.Const(SH1, "u32")))
    y = let(x ^ (state[ring(POS)] >> K.Const(SH2, "u32")))
    word = let(y ^ tables[y & K.Const(15, "u32")])
    t = let(state[ring(POS - 1)])
    t = let(t ^ (t >> K.Const(16, "u32")))
    t = let(t ^ (t >> K.Const(8, "u32")))
    return word, let(word ^ tables[(t & K.Const(15, "u32")) + K.Const(16, "u32")])
