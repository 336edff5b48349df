"""Sobol32 quasi-random points (Sobol 1967; Antonov and Saleev's Gray-code order, as rocRAND's
sobol32): point n of dimension d is the xor of the direction numbers V[d][k] over the set bits k of
n's Gray code n ^ (n >> 1), as a 32-bit fraction.

Direction numbers: dimension 1 is van der Corput's (V[k] = 2^(31-k)); dimensions 2 to MAX_DIMENSIONS
follow S. Joe and F. Y. Kuo, "Constructing Sobol sequences with better two-dimensional projections",
SIAM J. Sci. Comput. 30 (2008), file new-joe-kuo-6.21201: each line (dimension, degree s, polynomial
coefficients a, initial m_1..m_s), the rest by the recurrence
m_k = 2^s m_{k-s} xor m_{k-s} xor (xor over i < s of 2^i a_i m_{k-i}) (Bratley and Fox, 1988).
"""
from __future__ import annotations

import numpy as np

# new-joe-kuo-6.21201, dimensions 2 to 8: (s, a, m_1..m_s).
JOE_KUO = ((1, 0, (1,)), (2, 1, (1, 3)), (3, 1, (1, 3, 1)), (3, 2, (1, 1, 1)), (4, 1, (1, 1, 3, 3)),
           (4, 4, (1, 3, 5, 13)), (5, 2, (1, 1, 5, 5, 17)))
MAX_DIMENSIONS = 1 + len(JOE_KUO)
BITS = 32


def direction_numbers(dimensions: int) -> np.ndarray:
    """V (uint32, dimensions x 32): V[d][k] = m_k 2^(32-k-1) for the dimension's m."""
    table = np.zeros((dimensions, BITS), np.uint32)
    table[0] = [1 << (BITS - 1 - k) for k in range(BITS)]
    for d, (s, a, initial) in enumerate(JOE_KUO[:dimensions - 1], start=1):
        m = list(initial)
        for k in range(s, BITS):
            value = m[k - s] ^ (m[k - s] << s)
            for i in range(1, s):
                if (a >> (s - 1 - i)) & 1:
                    value ^= m[k - i] << i
            m.append(value)
        table[d] = [m[k] << (BITS - 1 - k) for k in range(BITS)]
    return table


def points_numpy(table: np.ndarray, first: int, count: int) -> np.ndarray:
    """Points first .. first + count - 1 of every dimension: uint32 (dimensions, count)."""
    n = np.arange(first, first + count, dtype=np.uint64)
    gray = n ^ (n >> np.uint64(1))
    out = np.zeros((table.shape[0], count), np.uint32)
    for k in range(BITS):
        bit = ((gray >> np.uint64(k)) & np.uint64(1)).astype(bool)
        out ^= np.where(bit[None, :], table[:, k:k + 1], np.uint32(0))
    return out
