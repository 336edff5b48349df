"""Kernel code of the special-function ops (ir/ops/special.py): lgamma, digamma, erfc, erf_inv, zeta.

Each is computed in f64 and rounded once to the op's dtype, so f32 (and f16/bf16) results are
correctly rounded but for rare ties; the f64 error bounds are measured by
tests/lowering/test_elemental_special.py against scipy.special (stored answers).

Coefficients come from exact formulas (no fitted tables to trust):
  - lgamma: around 2, lgamma(2 + z) = (1 - gamma) z + sum_k (-1)^k (zeta(k) - 1) / k z^k (|z| <= 1/2),
    lgamma(1 + z) = lgamma(2 + z) - log1p(z); a downward recurrence up to 8, Stirling's series beyond,
    and the reflection formula for x <= 0.
  - digamma: around its positive root x0 (|h| < 1/2), psi(x0 + h) = sum_n (-1)^(n+1) zeta(n + 1, x0) h^n; elsewhere
    the recurrence up to 10 and the asymptotic series; reflection for x <= 0.
  - erfc: 1 - erf below 1/2; on [1/2, 5/2] a Chebyshev interpolant of erfcx(x) = exp(x^2) erfc(x)
    (entire, so 32 terms reach f64 precision) times an exp(-x^2) that keeps x^2's rounding error;
    beyond, Laplace's continued fraction (45 levels, converged past 1e-16 there).
  - erf_inv: M. Giles' single-precision approximation ("Approximating the erfinv function", GPU
    Computing Gems Jade Edition, 2011) or, in the far tail, the asymptotic erfc(y) ~ exp(-y^2)/(y sqrt(pi)),
    then two Halley steps on erf (or on erfc beyond 3/4, where 1 - |x| is exact).
  - zeta: Euler-Maclaurin summation after 12 terms (ir/ops/special.py's reference, the same sums).
  - bessel_i0e, bessel_i1e: the power series of I_nu (positive terms) times exp(-|x|) below 30, Hankel's
    asymptotic series beyond (as the reference).
The tables are derived by lowering/special_coefficients.py: zeta values and erfcx samples with
`decimal` at 50 digits (Euler-Maclaurin sums, the Taylor series of erf).
"""
from __future__ import annotations

import math

from ..ir import kernel as K
from ..ir.ops.special import (BESSEL_ASYMPTOTIC_TERMS, BESSEL_SERIES_END, BESSEL_SERIES_TERMS, ZETA_BERNOULLI,
                               ZETA_TERMS)
from .elemental import elemental, with_sign_of

HALF_LOG_2PI = 0.91893853320467274178032973640561764
ERFC_CHEBYSHEV_LOW, ERFC_CHEBYSHEV_HIGH = 0.5, 2.5
ERFC_FRACTION_DEPTH = 45

# The tables below are derived by lowering/special_coefficients.py (which the tests rerun):
# lgamma(2 + z) / z = sum_k LGAMMA_AT_2[k] z^k, |z| <= 1/2 (terms fall as 4^-k / k);
# Stirling: lgamma(y) = (y - 1/2) log y - y + log(2 pi)/2 + sum_k STIRLING[k-1] / y^(2k-1), y >= 8;
# psi(x0 + h) = sum_n DIGAMMA_AT_ROOT[n - 1] h^n, |h| <= 1/2, x0 = DIGAMMA_ROOT_HI + DIGAMMA_ROOT_LO;
# psi(y) = log y - 1/(2y) - sum_k DIGAMMA_ASYMPTOTIC[k-1] / y^2k, y >= 10;
# erfcx(1.5 + t) = sum_j ERFCX_CHEBYSHEV[j] T_j(t), |t| <= 1; SHIFT_1024_LN2 = 1024 ln 2 as hi + lo.
LGAMMA_AT_2 = (
    0.42278433509846713, 0.3224670334241132, -0.0673523010531981, 0.020580808427784546, -0.007385551028673986,
    0.0028905103307415234, -0.001192753911703261, 0.0005096695247430425, -0.00022315475845357939,
    9.945751278180853e-05, -4.492623673813314e-05, 2.050721277567069e-05, -9.439488275268397e-06,
    4.374866789907488e-06, -2.039215753801366e-06, 9.55141213040742e-07, -4.492469198764566e-07,
    2.1207184805554665e-07, -1.0043224823968099e-07, 4.7698101693639804e-08, -2.2711094608943164e-08,
    1.0838659214896955e-08, -5.183475041970047e-09, 2.4836745438024785e-09, -1.1921401405860912e-09,
    5.731367241678862e-10, -2.7595228851242334e-10, 1.330476437424449e-10, -6.4229645638381e-11,
    3.1044247747322276e-11,
)
STIRLING = (
    0.08333333333333333, -0.002777777777777778, 0.0007936507936507937, -0.0005952380952380953,
    0.0008417508417508417, -0.0019175269175269176, 0.00641025641025641, -0.029550653594771242,
)
DIGAMMA_AT_ROOT = (
    0.9676722454476212, -0.4427631689835921, 0.258499760955651, -0.16394270544240652, 0.10782405069126237,
    -0.07219956125645471, 0.04880428816414311, -0.03316112647484736, 0.022597648232218104,
    -0.01542476590494896, 0.010538791616612175, -0.007204534386356869, 0.004926781395729853,
    -0.003369801655439328, 0.002305126326734928, -0.0015769367714301972, 0.0010788252019162967,
    -0.0007380709389960052, 0.000504953265834602, -0.0003454680251063077, 0.00023635601564027053,
    -0.00016170622091974803, 0.0001106337276874741, -7.569179582195066e-05, 5.178575795222081e-05,
    -3.5430070947659604e-05, 2.424006611860132e-05, -1.6584242271854135e-05, 1.134638458466385e-05,
    -7.762817668462094e-06, 5.3110609208898636e-06, -3.6336507898010456e-06, 2.486022733129538e-06,
    -1.7008538854332607e-06, 1.1636675363548843e-06, -7.96142543124197e-07, 5.446941930669446e-07,
)
DIGAMMA_ROOT_HI = 1.4616321449683622
DIGAMMA_ROOT_LO = 9.549995429965697e-17
DIGAMMA_ASYMPTOTIC = (
    0.08333333333333333, -0.008333333333333333, 0.003968253968253968, -0.004166666666666667,
    0.007575757575757576, -0.021092796092796094, 0.08333333333333333, -0.4432598039215686,
)
ERFCX_CHEBYSHEV = (
    0.3653340484264038, -0.19193849097078522, 0.04575625752295691, -0.010084325230687821,
    0.0020805695406878066, -0.0004054756398509782, 7.515242494392495e-05, -1.3317484946394297e-05,
    2.2659766469553907e-06, -3.7150571054939534e-07, 5.886088510400192e-08, -9.034870951013967e-09,
    1.3464260802079644e-09, -1.9517255570619438e-10, 2.756399308745827e-11, -3.798241291395199e-12,
    5.113305147353803e-13, -6.732924616973536e-14, 8.680480249710879e-15, -1.0968181671880642e-15,
    1.3594173814673684e-16, -1.6540281896497216e-17, 1.977067966703681e-18,
)
INV_SQRT_PI = 0.5641895835477563
SHIFT_1024_LN2 = (
    709.782712893384, 2.3747039373786107e-14,
)
# Giles' single-precision erfinv: w = -log((1 - x)(1 + x)); p(w - 2.5) for w < 5, else p(sqrt(w) - 3).
GILES_CENTRAL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
                 -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)
GILES_TAIL = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844,
              0.00134934322, 0.000100950558, -0.000200214257)
GILES_TAIL_END = 16.0   # w of |x| = 1 - 1e-7: beyond, the asymptotic start is closer


def nan(dtype: str = "f64") -> K.Const:
    return K.Const(math.nan, dtype)


class Formula:
    """Builds f64 expressions, binding every intermediate to a variable so shared ones are computed once."""

    def __init__(self, emitter):
        self.emitter = emitter

    def let(self, expr: K.Expr) -> K.Expr:
        return expr if isinstance(expr, (K.Const, K.Var)) else self.emitter.bind(expr, "sf")

    def poly(self, x: K.Expr, coefficients) -> K.Expr:
        """c0 + c1 x + ... by Horner's rule."""
        result = K.Const(coefficients[-1], "f64")
        for c in reversed(coefficients[:-1]):
            result = self.let(result * x + c)
        return result

    def select(self, cond, a, b) -> K.Expr:
        return self.let(K.select(cond, a, b))

    def abs_sinpi(self, x: K.Expr) -> K.Expr:
        """|sin(pi x)|, from the reduced r = x - round(x) (exact), so zeros at the integers are exact."""
        r = self.let(x - K.math("round", x))
        return self.let(K.math("abs", K.sin(r * math.pi)))

    def exp_minus_square(self, a: K.Expr) -> K.Expr:
        """exp(-a^2) for 0 <= a <= 30: a = hi + lo with hi on a 2^-21 grid, so hi^2 is exact. Past a = 25
        the result nears the subnormals, where exp flushes: exp(1024 ln 2 - hi^2) (the difference exact,
        both terms being within a factor 2) is scaled by 2^-1024 last, in two exact-then-rounded steps."""
        hi = self.let(K.math("floor", a * 2.0 ** 21) * 2.0 ** -21)
        lo = self.let(a - hi)
        tiny = self.let(a > 25.0)
        shift_hi = self.select(tiny, K.Const(SHIFT_1024_LN2[0], "f64"), K.Const(0.0, "f64"))
        shift_lo = self.select(tiny, K.Const(SHIFT_1024_LN2[1], "f64"), K.Const(0.0, "f64"))
        # shift_hi - hi^2 is exact; shift_lo joins the small term, whose rounding is absolute and tiny.
        shifted = self.let(K.exp(shift_hi - hi * hi) * K.exp(shift_lo - lo * (a + hi)))
        return shifted, tiny

    def times_exp_minus_square(self, factor: K.Expr, a: K.Expr) -> K.Expr:
        """factor * exp(-a^2), rounded once where it is subnormal."""
        shifted, tiny = self.exp_minus_square(a)
        product = self.let(factor * shifted)
        return self.select(tiny, self.let(product * 2.0 ** -512 * 2.0 ** -512), product)

    # -- lgamma --

    def lgamma_near_2(self, z: K.Expr) -> K.Expr:
        return self.let(z * self.poly(z, LGAMMA_AT_2))

    def lgamma_positive(self, y: K.Expr) -> K.Expr:
        """lgamma(y) for y > 0 (y = +inf gives +inf)."""
        small = self.let(self.lgamma_near_2(y) - K.log1p(y) - K.log(y))                 # y < 1/2
        near_1 = self.let(self.lgamma_near_2(y - 1.0) - K.log1p(y - 1.0))               # [1/2, 3/2)
        z, product = y, K.Const(1.0, "f64")
        for _ in range(6):                                                              # [3/2, 8): down to [3/2, 5/2)
            take = self.let(z >= 2.5)
            product = self.select(take, product * (z - 1.0), product)
            z = self.select(take, z - 1.0, z)
        middle = self.let(self.lgamma_near_2(z - 2.0) + K.log(product))
        inverse = self.let(1.0 / y)
        series = self.let(inverse * self.poly(inverse * inverse, STIRLING))
        large = self.let((y - 0.5) * K.log(y) - y + HALF_LOG_2PI + series)
        large = self.select(y.eq(math.inf), y, large)
        return self.select(y < 0.5, small, self.select(y < 1.5, near_1, self.select(y < 8.0, middle, large)))

    def lgamma(self, x: K.Expr) -> K.Expr:
        reflect = self.let(x <= 0.0)
        value = self.lgamma_positive(self.select(reflect, 1.0 - x, x))
        sinpi = self.abs_sinpi(x)
        reflected = self.let(K.log(math.pi / sinpi) - value)
        # At the poles (non-positive integers) lgamma is +inf; the formula would give inf - inf where
        # lgamma(1 - x) overflows too (x = -max).
        reflected = self.select(sinpi.eq(0.0), K.Const(math.inf, "f64"), reflected)
        result = self.select(reflect, reflected, value)
        return self.select(x.eq(-math.inf), K.Const(math.inf, "f64"), result)

    # -- digamma --

    def digamma_positive(self, y: K.Expr) -> K.Expr:
        h = self.let((y - DIGAMMA_ROOT_HI) - DIGAMMA_ROOT_LO)
        near_root = self.let(h * self.poly(h, DIGAMMA_AT_ROOT))
        z, total = y, K.Const(0.0, "f64")
        for _ in range(11):                                                             # y > 0: up to 10
            take = self.let(z < 10.0)
            total = self.select(take, total + 1.0 / z, total)
            z = self.select(take, z + 1.0, z)
        inverse_square = self.let(1.0 / (z * z))
        series = self.let(inverse_square * self.poly(inverse_square, DIGAMMA_ASYMPTOTIC))
        elsewhere = self.let(K.log(z) - 0.5 / z - series - total)
        return self.select(K.math("abs", h) < 0.5, near_root, elsewhere)

    def digamma(self, x: K.Expr) -> K.Expr:
        reflect = self.let(x <= 0.0)
        value = self.digamma_positive(self.select(reflect, 1.0 - x, x))
        r = self.let(x - K.math("round", x))
        cot = self.let(K.cos(r * math.pi) / K.sin(r * math.pi))
        result = self.select(reflect, value - cot * math.pi, value)
        pole = self.let(reflect & x.eq(K.math("floor", x)))                            # 0, -1, ..., -inf
        return self.select(pole, nan(), result)

    # -- erfc --

    def erfc_positive(self, a: K.Expr) -> K.Expr:
        """erfc(a) for a >= 1/2."""
        t = self.let(a - 1.5)
        b1, b2 = K.Const(0.0, "f64"), K.Const(0.0, "f64")                              # Clenshaw
        for c in reversed(ERFCX_CHEBYSHEV[1:]):
            b1, b2 = self.let(t * 2.0 * b1 - b2 + c), b1
        erfcx = self.let(t * b1 - b2 + ERFCX_CHEBYSHEV[0])
        fraction = a
        for n in range(ERFC_FRACTION_DEPTH, 0, -1):
            fraction = self.let(a + (n / 2) / fraction)
        scaled = self.select(a < ERFC_CHEBYSHEV_HIGH, erfcx, self.let(INV_SQRT_PI / fraction))
        return self.times_exp_minus_square(scaled, K.minimum(a, 30.0))   # erfc(30) underflows

    def erfc(self, x: K.Expr) -> K.Expr:
        a = self.let(K.math("abs", x))
        tail = self.erfc_positive(self.select(a < 0.5, K.Const(0.5, "f64"), a))
        outer = self.select(x < 0.0, self.let(2.0 - tail), tail)
        return self.select(a < 0.5, self.let(1.0 - K.erf(x)), outer)

    # -- erf_inv --

    def erf_inv(self, x: K.Expr) -> K.Expr:
        a = self.let(K.math("abs", x))
        complement = self.let(1.0 - a)                                                  # exact for a >= 1/2
        w = self.let(-K.log(complement * (1.0 + a)))
        central = self.poly(self.let(w - 2.5), GILES_CENTRAL)
        tail = self.poly(self.let(K.sqrt(w) - 3.0), GILES_TAIL)
        log_t = self.let(-K.log(complement))
        asymptotic = self.let(K.sqrt(log_t - K.log(K.sqrt(log_t * math.pi))))
        y = self.select(w < 5.0, self.let(central * a), self.select(w < GILES_TAIL_END, self.let(tail * a), asymptotic))
        for _ in range(2):                                                              # Halley on erf(y) = a
            residual = self.select(a <= 0.75, self.let(K.erf(y) - a), self.let(complement - self.erfc(y)))
            u = self.let(residual / self.times_exp_minus_square(K.Const(2.0 * INV_SQRT_PI, "f64"), y))
            y = self.let(y - u / (1.0 + y * u))
        result = self.select(a.eq(1.0), K.Const(math.inf, "f64"), self.select(a > 1.0, nan(), y))
        signed = self.select(x < 0.0, self.let(-result), result)
        return self.select(x.eq(0.0), x, signed)                                       # +-0 and NaN pass through


    # -- zeta --

    def zeta(self, s: K.Expr, q: K.Expr) -> K.Expr:
        """Hurwitz zeta by Euler-Maclaurin, as ir/ops/special.py's reference (its special cases too)."""
        total = K.Const(0.0, "f64")
        for n in range(ZETA_TERMS):
            total = self.let(total + K.math("pow", q + float(n), -s))
        a = self.let(q + float(ZETA_TERMS))
        power = self.let(K.math("pow", a, -s))                                          # a^-s
        total = self.let(total + power * a / (s - 1.0) + power * 0.5)
        inverse = self.let(1.0 / a)
        inverse_square = self.let(inverse * inverse)
        running, rising = self.let(power * inverse), s                                  # a^(-s-2j-1), (s)_(2j+1)
        for j, coefficient in enumerate(ZETA_BERNOULLI):
            total = self.let(total + running * rising * coefficient)
            running = self.let(running * inverse_square)
            rising = self.let(rising * ((s + float(2 * j + 1)) * (s + float(2 * j + 2))))
        not_finite = self.let(~(K.math("is_finite", s) & K.math("is_finite", q)))      # NaN too
        undefined = self.let(not_finite | (s < 1.0) | ((q < 0.0) & s.ne(K.math("floor", s))))
        pole = self.let(s.eq(1.0) | ((q <= 0.0) & q.eq(K.math("floor", q))))
        return self.select(undefined, nan(), self.select(pole, K.Const(math.inf, "f64"), total))

    # -- bessel_i0e, bessel_i1e --

    def bessel_ie(self, order: int, x: K.Expr) -> K.Expr:
        """exp(-|x|) I_order(x) as ir/ops/special.py's reference: the power series, or Hankel's series."""
        a = self.let(K.math("abs", x))
        small = self.select(a < BESSEL_SERIES_END, a, K.Const(0.0, "f64"))
        quarter_square = self.let(small * small * 0.25)
        term = K.Const(1.0, "f64") if order == 0 else self.let(small * 0.5)
        total = K.Const(0.0, "f64")
        for k in range(BESSEL_SERIES_TERMS):
            total = self.let(total + term)
            term = self.let(term * quarter_square / float((k + 1) * (k + 1 + order)))
        series = self.let(total * K.exp(-small))
        large = self.select(a < BESSEL_SERIES_END, K.Const(BESSEL_SERIES_END, "f64"), a)
        mu, term, total = 4 * order * order, K.Const(1.0, "f64"), K.Const(0.0, "f64")
        inverse = self.let(1.0 / large)
        for k in range(1, BESSEL_ASYMPTOTIC_TERMS + 1):
            total = self.let(total + term)
            term = self.let(term * inverse * (-(mu - (2 * k - 1) ** 2) / (8 * k)))
        asymptotic = self.let(total / K.sqrt(large * (2 * math.pi)))
        value = self.select(a < BESSEL_SERIES_END, series, asymptotic)
        value = self.select(a.eq(math.inf), K.Const(0.0, "f64"), value)
        return with_sign_of(x, value) if order else value

    def bessel_i0e(self, x: K.Expr) -> K.Expr:
        return self.bessel_ie(0, x)

    def bessel_i1e(self, x: K.Expr) -> K.Expr:
        return self.let(self.bessel_ie(1, x))


def in_f64(method: str):
    """An elemental entry computing the op in f64 and rounding once to its dtype."""
    def entry(emitter, op, index, operand):
        xs = [operand(k, index) for k in range(len(op.operands))]
        wide = [x if x.dtype == "f64" else emitter.bind(x.cast("f64")) for x in xs]
        result = getattr(Formula(emitter), method)(*wide)
        return result if xs[0].dtype == "f64" else result.cast(xs[0].dtype)
    return entry


for _name in ("lgamma", "digamma", "erfc", "erf_inv", "zeta", "bessel_i0e", "bessel_i1e"):
    elemental(_name)(in_f64(_name))
