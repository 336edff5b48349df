"""Special functions as elementwise ops: lgamma, digamma, erfc, erf_inv, zeta and the exponentially
scaled Bessel functions bessel_i0e and bessel_i1e (jax.lax's names).

Their references run Python's `math` functions (the C library's lgamma and erfc) per element, and
for digamma, erf_inv, zeta and the Bessel functions short formulas of their own; kernels compute them in f64 and round once
(lowering/elemental_special.py).
"""
import math

import numpy as np

from ..types import FLOATS
from .elementwise import binary, unary
from .rules import batch_elementwise_ops, elementwise_derivatives

EULER_GAMMA = 0.57721566490153286060651209008240243


def per_element(fn):
    """A numpy function from a Python one of floats, computed in f64."""
    def run(x):
        out = np.asarray(np.frompyfunc(fn, 1, 1)(x.astype(np.float64)), np.float64)
        return out.astype(x.dtype)
    return run


def lgamma(x: float) -> float:
    if math.isnan(x):
        return x
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):  # poles at 0, -1, -2, ... and overflow
        return math.inf


def digamma(x: float) -> float:
    """psi(x): reflection below 1/2, recurrence up to 10, then the asymptotic series; NaN at the poles."""
    if math.isnan(x) or x == -math.inf or (x <= 0 and x == math.floor(x)):
        return math.nan
    if x == math.inf:
        return x
    if x < 0.5:
        return digamma(1 - x) - math.pi / math.tan(math.pi * x)
    total = 0.0
    while x < 10:
        total -= 1 / x
        x += 1
    inverse_square = 1 / (x * x)
    # B_2k / (2k) for k = 1..7: 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760, 1/12
    series = inverse_square * (1 / 12 - inverse_square * (1 / 120 - inverse_square * (1 / 252 - inverse_square * (
        1 / 240 - inverse_square * (1 / 132 - inverse_square * (691 / 32760 - inverse_square / 12))))))
    return total + math.log(x) - 0.5 / x - series


def erf_inv(x: float) -> float:
    """The y with erf(y) = x, by Newton's method on erf (or erfc beyond 1/2, where 1 - |x| is exact)."""
    if math.isnan(x) or abs(x) > 1:
        return math.nan
    if abs(x) == 1:
        return math.copysign(math.inf, x)
    a = abs(x)
    # erfc(y) ~ exp(-y^2): sqrt(-log(1 - a)) starts right of the root, where Newton's first step
    # lands left of it, and from there it converges monotonically.
    y = 0.0 if a <= 0.5 else math.sqrt(-math.log(1 - a))
    for _ in range(100):
        residual = (math.erf(y) - a) if a <= 0.5 else ((1 - a) - math.erfc(y))
        step = residual / (2 / math.sqrt(math.pi) * math.exp(-y * y))
        y -= step
        if abs(step) <= 1e-17 * y:
            break
    return math.copysign(y, x)


unary("lgamma", per_element(lgamma), FLOATS, doc="log |Gamma(x)|; +inf at the poles 0, -1, -2, ...")
unary("digamma", per_element(digamma), FLOATS, doc="Gamma'(x) / Gamma(x); NaN at the poles 0, -1, -2, ...")
unary("erfc", per_element(math.erfc), FLOATS, doc="1 - erf(x), accurate where erf(x) is near 1")
unary("erf_inv", per_element(erf_inv), FLOATS, doc="the inverse of erf on [-1, 1]; +-inf at +-1, NaN outside")

# lgamma' = digamma; digamma' = polygamma(1, x) = zeta(2, x); erfc' = -2/sqrt(pi) exp(-x^2);
# erf_inv' = sqrt(pi)/2 exp(erf_inv(x)^2).
elementwise_derivatives("lgamma", lambda b, p, out: b.op("digamma", p[0]))
elementwise_derivatives("digamma", lambda b, p, out: b.op("zeta", b.full_like(p[0], 2), p[0]))
elementwise_derivatives("erfc", lambda b, p, out: b.scale(b.op("exp", b.neg(b.mul(p[0], p[0]))), -2 / math.sqrt(math.pi)))
elementwise_derivatives("erf_inv", lambda b, p, out: b.scale(b.op("exp", b.mul(out, out)), math.sqrt(math.pi) / 2))
batch_elementwise_ops("lgamma", "digamma", "erfc", "erf_inv")


# Euler-Maclaurin for the Hurwitz zeta function: ZETA_TERMS terms summed, then the integral, half
# the next term and ZETA_BERNOULLI[j] (s)_(2j+1) a^(-s-2j-1), with B_2j / (2j)!.
ZETA_TERMS = 12
ZETA_BERNOULLI = (1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160, -691 / 1307674368000,
                  1 / 74724249600, -3617 / 10670622842880000, 43867 / 5109094217170944000)


def hurwitz_zeta(s: float, q: float) -> float:
    """zeta(s, q) = sum_{n >= 0} (q + n)^-s for s > 1 (inf at s = 1 and at the poles q = 0, -1, ...;
    NaN for s < 1 and for infinite arguments, as jax.lax.zeta)."""
    if math.isnan(s) or math.isnan(q) or math.isinf(s) or math.isinf(q) or s < 1:
        return math.nan
    if s == 1 or (q <= 0 and q == math.floor(q)):
        return math.inf
    if q < 0 and s != math.floor(s):
        return math.nan
    # numpy's power overflows to inf (q near 0 with a large s), where Python's float raises.
    with np.errstate(over="ignore"):
        total = float(sum(np.float64(q + n) ** -s for n in range(ZETA_TERMS)))
    a = q + ZETA_TERMS
    total += a ** (1 - s) / (s - 1) + a ** -s / 2
    rising = s   # s (s + 1) ... (s + 2j - 2)
    for j, coefficient in enumerate(ZETA_BERNOULLI):
        total += coefficient * rising * a ** (-s - 2 * j - 1)
        rising *= (s + 2 * j + 1) * (s + 2 * j + 2)
    return total


def per_element_pair(fn):
    def run(s, q):
        out = np.asarray(np.frompyfunc(fn, 2, 1)(s.astype(np.float64), q.astype(np.float64)), np.float64)
        return out.astype(s.dtype)
    return run


binary("zeta", per_element_pair(hurwitz_zeta), FLOATS, doc="the Hurwitz zeta function sum_n (q + n)^-x of (x, q)")
# d zeta(x, q) / dq = -x zeta(x + 1, q); the derivative in x is not defined (as in JAX).
elementwise_derivatives("zeta", None, lambda b, p, out: b.mul(b.neg(p[0]), b.op("zeta", b.add(p[0], b.full_like(p[0], 1)), p[1])))
batch_elementwise_ops("zeta")


# I_nu(x) e^-x for nu = 0, 1: the power series (positive terms) up to BESSEL_SERIES_END, where 90 terms
# converge; beyond, Hankel's asymptotic series, whose 20th term is below 1e-18 there.
BESSEL_SERIES_END = 30.0
BESSEL_SERIES_TERMS = 90
BESSEL_ASYMPTOTIC_TERMS = 20


def bessel_ie(order: int, x: float) -> float:
    """exp(-|x|) I_order(x), odd in x for order 1."""
    if math.isnan(x):
        return x
    a = abs(x)
    if math.isinf(a):
        return math.copysign(0.0, x) if order else 0.0
    if a < BESSEL_SERIES_END:
        quarter_square, term, total = a * a / 4, (a / 2) ** order, 0.0
        for k in range(BESSEL_SERIES_TERMS):
            total += term
            term *= quarter_square / ((k + 1) * (k + 1 + order))
        value = total * math.exp(-a)
    else:
        mu, term, total = 4 * order * order, 1.0, 0.0
        for k in range(1, BESSEL_ASYMPTOTIC_TERMS + 1):
            total += term
            term *= -(mu - (2 * k - 1) ** 2) / (8 * k * a)
        value = total / math.sqrt(2 * math.pi * a)
    return math.copysign(value, x) if order else value


unary("bessel_i0e", per_element(lambda x: bessel_ie(0, x)), FLOATS, doc="exp(-|x|) I0(x)")
unary("bessel_i1e", per_element(lambda x: bessel_ie(1, x)), FLOATS, doc="exp(-|x|) I1(x)")


def bessel_i1e_derivative(b, primals, out):
    """i1e' = i0e - i1e (sign(x) + 1/x), which is 1/2 at 0."""
    x = primals[0]
    at_zero = b.op("eq", x, b.zeros_like(x))
    safe = b.select(at_zero, b.full_like(x, 1), x)
    slope = b.op("sub", b.op("bessel_i0e", x), b.mul(out, b.add(b.op("sign", x), b.div(b.full_like(x, 1), safe))))
    return b.select(at_zero, b.full_like(x, 0.5), slope)


# i0e' = i1e - sign(x) i0e.
elementwise_derivatives("bessel_i0e", lambda b, p, out: b.op("sub", b.op("bessel_i1e", p[0]), b.mul(b.op("sign", p[0]), out)))
elementwise_derivatives("bessel_i1e", bessel_i1e_derivative)
batch_elementwise_ops("bessel_i0e", "bessel_i1e")
