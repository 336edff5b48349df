"""Radix butterflies: the DFT of R values held in registers, generated as kernel IR statements.

    X[q] = sum over r of v[r] * exp(sign * 2 pi i r q / R)        (q, r in [0, R))

for every radix of RADICES. Prime radices (2, 3, 5, 7, 11, 13) are computed directly, pairing
v[r] with v[R - r] so that each (R - 1) / 2 sums and differences are multiplied once by the real
constants cos(2 pi r q / R) and sin(2 pi r q / R):
    X[q], X[R - q] = v[0] + sum_r s_r cos_rq  +/-  sign i sum_r d_r sin_rq,   s_r = v_r + v_{R-r}, d_r = v_r - v_{R-r}.
Composite radices (4, 6, 8, 10, 16) are Cooley-Tukey splits R = a x b of smaller butterflies: with
n = n1 + a n2 and k = k2 + b k1, X[k] = sum_n1 w_a^(n1 k1) w_R^(n1 k2) sum_n2 w_b^(n2 k2) v[n1 + a n2];
the inner twiddles w_R^(n1 k2) are constants, multiplications by 1, -1 and +/-i done exactly.
A complex value is a pair (re, im) of kernel expressions; every intermediate is a `Let` of a fresh
variable, so expressions stay small.
"""
from __future__ import annotations

import math

from ...ir import kernel as K

RADICES = (16, 13, 11, 10, 8, 7, 6, 5, 4, 3, 2)   # the generated radices, largest first (plans prefer large)
SPLITS = {4: (2, 2), 6: (2, 3), 8: (2, 4), 10: (2, 5), 16: (4, 4)}  # composite radix -> (a, b)


class Registers:
    """A block of `Let` statements defining fresh variables; `dtype` is the floats' (for constants)."""

    def __init__(self, dtype: str, prefix: str):
        self.dtype, self.prefix, self.stmts, self.count = dtype, prefix, [], 0

    def let(self, value: K.Expr) -> K.Var:
        var = K.Var(f"{self.prefix}{self.count}", value.dtype)
        self.count += 1
        self.stmts.append(K.Let(var, value))
        return var

    def complex(self, re: K.Expr, im: K.Expr) -> tuple[K.Var, K.Var]:
        return self.let(re), self.let(im)


def add(a, b):
    return a[0] + b[0], a[1] + b[1]


def sub(a, b):
    return a[0] - b[0], a[1] - b[1]


def times_i(a, sign: int):
    """a * (sign i)."""
    return (-a[1], a[0]) if sign > 0 else (a[1], -a[0])


def rotate(regs: Registers, a, exponent: int, length: int, sign: int):
    """a * exp(sign 2 pi i exponent / length), exact where the factor is 1, -1 or +/-i."""
    quarter = (4 * exponent) % (4 * length)
    if quarter % length == 0:
        turns = quarter // length          # the factor is i^(sign turns)
        value = a if turns % 2 == 0 else times_i(a, sign)
        return value if turns < 2 else (-value[0], -value[1])
    angle = 2 * math.pi * exponent / length
    c, s = K.Const(math.cos(angle), regs.dtype), K.Const(sign * math.sin(angle), regs.dtype)
    return regs.complex(a[0] * c - a[1] * s, a[0] * s + a[1] * c)


def prime_dft(regs: Registers, v: list, sign: int) -> list:
    radix = len(v)
    if radix == 2:
        return [regs.complex(*add(v[0], v[1])), regs.complex(*sub(v[0], v[1]))]
    half = (radix - 1) // 2
    sums = [regs.complex(*add(v[r], v[radix - r])) for r in range(1, half + 1)]
    diffs = [regs.complex(*sub(v[r], v[radix - r])) for r in range(1, half + 1)]
    total = v[0]
    for s in sums:
        total = add(total, s)
    out = [regs.complex(*total)] + [None] * (radix - 1)
    for q in range(1, half + 1):
        angles = [2 * math.pi * r * q / radix for r in range(1, half + 1)]
        re, im = v[0]
        for s, angle in zip(sums, angles):
            c = K.Const(math.cos(angle), regs.dtype)
            re, im = re + s[0] * c, im + s[1] * c
        even = regs.complex(re, im)
        odd_re, odd_im = K.Const(0.0, regs.dtype), K.Const(0.0, regs.dtype)
        for d, angle in zip(diffs, angles):
            s = K.Const(math.sin(angle), regs.dtype)
            odd_re, odd_im = odd_re + d[0] * s, odd_im + d[1] * s
        odd = times_i(regs.complex(odd_re, odd_im), sign)
        out[q] = regs.complex(*add(even, odd))
        out[radix - q] = regs.complex(*sub(even, odd))
    return out


def dft(regs: Registers, v: list, sign: int) -> list:
    """The DFT of the complex values v (len(v) one of RADICES, or 1), as pairs of variables."""
    radix = len(v)
    if radix == 1:
        return list(v)
    if radix not in SPLITS:
        return prime_dft(regs, v, sign)
    a, b = SPLITS[radix]
    inner = [dft(regs, [v[n1 + a * n2] for n2 in range(b)], sign) for n1 in range(a)]
    out = [None] * radix
    for k2 in range(b):
        column = [rotate(regs, inner[n1][k2], n1 * k2, radix, sign) for n1 in range(a)]
        for k1, value in enumerate(dft(regs, column, sign)):
            out[k2 + b * k1] = value
    return out
