"""The derivations of lowering/elemental_special.py's coefficient tables, at 50 digits with `decimal`.

Not imported by the compiler: tests/lowering/test_elemental_special.py runs these and checks the
stored tables against them (a few seconds of decimal arithmetic, too slow for every import).
"""
from __future__ import annotations

from decimal import Decimal, getcontext
from fractions import Fraction

PRECISION = 50
PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
EULER_GAMMA = Decimal("0.57721566490153286060651209008240243104215933593992359880576723")
DIGAMMA_ROOT = Decimal("1.46163214496836234126265954232572132846819620400644635129598840")
BERNOULLI = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
             Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510), Fraction(43867, 798),
             Fraction(-174611, 330)]   # B_2, B_4, ..., B_20


def hurwitz_zeta(s: int, q: Decimal) -> Decimal:
    """zeta(s, q) = sum_{n >= 0} (n + q)^-s for s >= 2, by Euler-Maclaurin summation from n = 40."""
    getcontext().prec = PRECISION
    terms = 40
    total = sum((Decimal(n) + q) ** -s for n in range(terms))
    tail = Decimal(terms) + q
    total += tail ** (1 - s) / (s - 1) + tail ** -s / 2
    rising = Decimal(s)  # s (s + 1) ... (s + 2j - 2)
    factorial = Decimal(2)
    for j, b in enumerate(BERNOULLI, start=1):
        total += Decimal(b.numerator) / Decimal(b.denominator) / factorial * rising * tail ** (-s - 2 * j + 1)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
        factorial *= (2 * j + 1) * (2 * j + 2)
    return total


# lgamma(2 + z) / z = sum_k LGAMMA_AT_2[k] z^k, |z| <= 1/2: the terms fall as 4^-k / k, 30 reach 1e-18.
LGAMMA_AT_2 = [float(1 - EULER_GAMMA)] + [float((-1) ** k * hurwitz_zeta(k, Decimal(2)) / k) for k in range(2, 31)]
# Stirling: lgamma(y) = (y - 1/2) log y - y + log(2 pi)/2 + sum_k B_2k / (2k (2k - 1) y^(2k-1)), y >= 8.
STIRLING = [float(b / (2 * k * (2 * k - 1))) for k, b in enumerate(BERNOULLI[:8], start=1)]
# psi(x0 + h) = sum_n DIGAMMA_AT_ROOT[n - 1] h^n, |h| <= 1/2: the terms fall as (1/2 / x0)^n.
DIGAMMA_AT_ROOT = [float((-1) ** (n + 1) * hurwitz_zeta(n + 1, DIGAMMA_ROOT)) for n in range(1, 38)]
DIGAMMA_ROOT_HI = float(DIGAMMA_ROOT)
DIGAMMA_ROOT_LO = float(DIGAMMA_ROOT - Decimal(DIGAMMA_ROOT_HI))
# psi(y) = log y - 1/(2y) - sum_k B_2k / (2k y^2k), y >= 10.
DIGAMMA_ASYMPTOTIC = [float(b / (2 * k)) for k, b in enumerate(BERNOULLI[:8], start=1)]


def erfcx_decimal(x: Decimal) -> Decimal:
    """exp(x^2) (1 - erf(x)), erf from its Taylor series (alternating, so summed at 50 digits)."""
    getcontext().prec = PRECISION
    term, total, n = x, x, 0
    while abs(term) > Decimal(10) ** -45:
        n += 1
        term *= -x * x / n
        total += term / (2 * n + 1)
    return (x * x).exp() * (1 - 2 / PI.sqrt() * total)


ERFC_CHEBYSHEV_LOW, ERFC_CHEBYSHEV_HIGH = 0.5, 2.5
ERFC_CHEBYSHEV_TERMS = 32


def cos_decimal(angle: Decimal) -> Decimal:
    """cos by its Taylor series after reducing the angle to [-pi, pi]."""
    getcontext().prec = PRECISION
    angle -= 2 * PI * (angle / (2 * PI)).to_integral_value()
    term, total, n = Decimal(1), Decimal(1), 0
    while abs(term) > Decimal(10) ** -48:
        n += 2
        term *= -angle * angle / (n * (n - 1))
        total += term
    return total


def erfcx_chebyshev() -> list[float]:
    """Coefficients c_j of erfcx(1.5 + t) ~ sum_j c_j T_j(t), t in [-1, 1] (interpolation at Chebyshev points,
    all at 50 digits: the coefficients fall to 1e-17 by j = 21, below the rounding of f64 sums)."""
    n = ERFC_CHEBYSHEV_TERMS
    nodes = [cos_decimal(PI * (k + Decimal("0.5")) / n) for k in range(n)]
    values = [erfcx_decimal(Decimal("1.5") + t) for t in nodes]
    coefficients = []
    for j in range(n):
        total = sum(v * cos_decimal(PI * j * (k + Decimal("0.5")) / n) for k, v in enumerate(values))
        coefficients.append(float(total / n if j == 0 else 2 * total / n))
    while abs(coefficients[-1]) < 1e-18:
        coefficients.pop()
    return coefficients


ERFCX_CHEBYSHEV = erfcx_chebyshev()
INV_SQRT_PI = float(1 / PI.sqrt())
SHIFT_1024_LN2 = (float(1024 * Decimal(2).ln()),
                  float(1024 * Decimal(2).ln() - Decimal(float(1024 * Decimal(2).ln()))))


def tables() -> dict[str, list[float]]:
    """Every table of elemental_special.py, by name."""
    return {"LGAMMA_AT_2": LGAMMA_AT_2, "STIRLING": STIRLING, "DIGAMMA_AT_ROOT": DIGAMMA_AT_ROOT,
            "DIGAMMA_ROOT_HI": DIGAMMA_ROOT_HI, "DIGAMMA_ROOT_LO": DIGAMMA_ROOT_LO,
            "DIGAMMA_ASYMPTOTIC": DIGAMMA_ASYMPTOTIC, "ERFCX_CHEBYSHEV": ERFCX_CHEBYSHEV,
            "INV_SQRT_PI": INV_SQRT_PI, "SHIFT_1024_LN2": SHIFT_1024_LN2}
