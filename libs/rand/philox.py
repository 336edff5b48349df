"""Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3",
SC'11; Random123's philox.h), written twice over: on numpy arrays (the routine's reference) and on
kernel-IR expressions (the kernels). A counter of four 32-bit words and a key of two give four words;
ten rounds of two 32x32 -> 64-bit products, the key bumped by the Weyl constants between rounds.
"""
from __future__ import annotations

import numpy as np

from ...ir import kernel as K

MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)   # PHILOX_M4x32_0, PHILOX_M4x32_1
WEYL = (0x9E3779B9, 0xBB67AE85)          # PHILOX_W32_0, PHILOX_W32_1: the golden ratio, sqrt(3) - 1
ROUNDS = 10


def rounds_numpy(counter, key):
    """The four output words (uint32 arrays) of counters (4 uint32 arrays) under key (2 uint32 scalars)."""
    c = [np.asarray(w, np.uint64) for w in counter]
    k = [np.uint64(key[0]), np.uint64(key[1])]
    mask = np.uint64(0xFFFFFFFF)
    for r in range(ROUNDS):
        if r:
            k = [(k[0] + np.uint64(WEYL[0])) & mask, (k[1] + np.uint64(WEYL[1])) & mask]
        p0, p1 = np.uint64(MULTIPLIERS[0]) * c[0], np.uint64(MULTIPLIERS[1]) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k[0], p1 & mask, (p0 >> np.uint64(32)) ^ c[3] ^ k[1], p0 & mask]
    return [w.astype(np.uint32) for w in c]


def rounds_kernel(counter: list[K.Expr], key: list[K.Expr], let) -> list[K.Expr]:
    """The same on u32 kernel expressions; `let(expr)` names an intermediate (a K.Let)."""
    c, k = list(counter), list(key)
    for r in range(ROUNDS):
        if r:
            k = [let(k[0] + K.Const(WEYL[0], "u32")), let(k[1] + K.Const(WEYL[1], "u32"))]
        p0 = let(c[0].cast("u64") * K.Const(MULTIPLIERS[0], "u64"))
        p1 = let(c[2].cast("u64") * K.Const(MULTIPLIERS[1], "u64"))
        c = [let((p1 >> K.Const(32, "u64")).cast("u32") ^ c[1] ^ k[0]), let(p1.cast("u32")),
             let((p0 >> K.Const(32, "u64")).cast("u32") ^ c[3] ^ k[1]), let(p0.cast("u32"))]
    return c
