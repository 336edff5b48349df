"""The math library, written once as LLVM IR (llvmlite.ir) and shared by the host and AMDGPU codegens.

`call(builder, name, args)` emits a call to `cdna.math.<name>.<f32|f64>`, an internal
`alwaysinline` function built on first use in the builder's module: after inlining, the work-item
loops hold no calls and vectorize. Every function is branch-free (selects, not branches), uses only
LLVM instructions and intrinsics that lower to instructions (fabs, floor, roundeven, sqrt, copysign,
and fma, which every AMDGPU and x86 CPU since 2013 has), and is written as range reduction +
polynomial:

- exp, exp2: n = round(x log2 e), Cody-Waite r = x - n ln2 (|r| <= ln2/2), Taylor polynomial of
  e^r, scaling by 2^n in two steps (so subnormal and overflowing results round once).
- expm1: the same reduction; e^r - 1 = r + r^2 P(r), then 2^n (e^r - 1) + (2^n - 1).
- log, log2, log10: x = 2^e m, m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f),
  log(1 + f) = 2 atanh(s) = f - s (f - T) with T = s^2 (2/3 + 2 s^2/5 + ...) (the atanh series).
- log1p: log(u) + (x - (u - 1)) / u with u = 1 + x (the correction of the rounding of u).
- tanh = t / (t + 2) with t = expm1(2|x|);
  sigmoid (`logistic`) = 1 / (1 + e) or e / (1 + e) with e = exp(-|x|).
- sinh = (E + E/(E + 1)) / 2 with E = expm1(|x|) below 1, h - 1/(4h) with h = e^|x| / 2 above;
  cosh = h + 1/(4h).
- sin, cos, tan: n = round(x 2/pi), r = x - n pi/2 in three fma steps (f64) or in f64 (f32),
  Taylor polynomials of sin and cos on |r| <= pi/4, the quadrant chosen by n mod 4; from
  |x| = 2^20 on, Payne-Hanek's reduction (`payne_hanek`), out of line (`with_huge_arguments`).
- atan: |x| > tan(3pi/8) -> pi/2 - atan(1/|x|), |x| > tan(pi/8) -> pi/4 + atan((|x|-1)/(|x|+1)),
  then t + t^3 P(t^2) with P fitted (below). atan2, asin = atan2(x, sqrt((1-x)(1+x))), acos.
- erf: x P(x^2) on |x| < 1; on [1, 6) (f64) or [1, 4) (f32) a polynomial per interval of
  width 1/2 (f64) or 1 (f32) in x - centre, its coefficients gathered from a table; 1 above.
- pow: exp(y log|x|) with log|x| as a double-double and the product's error term fed into the
  exp's reduced argument (f64); in f64 arithmetic for f32. C99/numpy special cases by selects.
- cbrt: an initial guess from the exponent bits divided by 3, then Newton steps.
- sqrt is llvm.sqrt; floor, ceil, trunc, round (half to even) are intrinsics.

Taylor coefficients are exact rationals rounded once. The atan and erf polynomials were derived
for this library with mpmath's Chebyshev fit (`mpmath.chebyfit`, 50 digits) of
(atan(t) - t)/t^3 in u = t^2 on [0, tan(pi/8)^2], erf(x)/x in u = x^2 on [0, 1], and erf on each
interval in x - centre, of degrees whose fit errors are below 2^-56 (f64) and 2^-27 (f32) of the
result. NaN, +-inf, +-0, overflow and underflow follow numpy.

Measured maximum error in ulp against numpy (float64/longdouble references; f32 results are
compared with the f64 value of the function), by tests/codegen/test_mathlib.py:

    function   f32   f64   domain tested (dense, 2^20 points each, plus special values)
    exp        0.94  0.85  [-104, 89] / [-746, 710] (overflow and subnormal results)
    exp2       0.92  0.92  [-151, 129] / [-1076, 1025]
    expm1      1.39  1.77  [-20, 89] / [-40, 709], and +-[1e-30, 1] / +-[1e-300, 1]
    log        0.87  1.28  (0, max] log-uniform incl. subnormals, and [0.7, 1.4]
    log2       1.77  1.75  as log
    log10      2.02  1.92  as log
    log1p      1.23  1.49  [-0.999, 10] and [1e-30, 1e30] / [1e-300, 1e300]
    tanh       2.27  2.34  [-12, 12] / [-25, 25] and +-[1e-30, 1] / +-[1e-300, 1]
    logistic   2.40  2.23  [-100, 100] / [-700, 700]
    sinh       1.92  2.06  [-89, 89] / [-710, 710] and tiny
    cosh       1.32  1.19  [-89, 89] / [-710, 710]
    sin        1.44  1.43  [-1e5, 1e5], [-10, 10], tiny, and +-[1e5, max] log-uniform
    cos        1.47  1.43  as sin
    tan        2.83  2.85  as sin
    atan       2.01  2.15  [-10, 10] and +-[1e-30, 1e30]
    atan2      2.39  2.53  both operands in [-10, 10] and +-[1e-20, 1e20]
    asin       3.04  3.02  [-1, 1] and 1 - [1e-7, 0.1]
    acos       2.87  3.12  as asin
    erf        2.41  2.00  [-7, 7] and tiny
    cbrt       0.75  0.76  +-(0, max] log-uniform incl. subnormals
    pow        0.50  1.00  x in [1e-3, 1e3], y in [-30, 30]; negative x with integer y
    sqrt       0.50  0.50  llvm.sqrt (correctly rounded)
"""
from __future__ import annotations

from decimal import Decimal, getcontext
from fractions import Fraction
from math import factorial

import llvmlite.ir as ir
import numpy as np

from ..ir.kernel import MATH_FUNCTIONS

F32, F64 = ir.FloatType(), ir.DoubleType()

# ---- constants: exact decimal facts, split into parts of the target precision ------------

getcontext().prec = 80
PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899863")
LN2 = Decimal("0.693147180559945309417232121458176568075500134360255254120680009493393621969694715605")
LOG10_2 = Decimal("0.301029995663981195213738894724493026768189881462108541310430")
LOG2_E = 1 / LN2
LOG10_E = LOG10_2 / LN2


def split(value: Decimal, parts: int, float_type=float) -> list[float]:
    """value as a sum of `parts` floats of the given precision, each the rounding of what is left."""
    out = []
    for _ in range(parts):
        head = float(float_type(float(value)))
        out.append(head)
        value -= Decimal(head)
    return out


def taylor(first: int, count: int, step: int = 1, sign: int = 1, alternate: bool = False) -> list[float]:
    """sign/k! for k = first, first+step, ... (signs alternating when asked), each rounded once."""
    return [float(Fraction(sign * (-1) ** (i if alternate else 0), factorial(first + i * step)))
            for i in range(count)]


ATANH_SERIES = [float(Fraction(2, 2 * k + 1)) for k in range(1, 12)]  # 2/3, 2/5, ...: log via 2 atanh(s)


class Spec:
    """Per-precision facts: int type, bit layout, polynomial lengths, range limits."""

    def __init__(self, float_type):
        self.f64 = float_type == F64
        bits = 64 if self.f64 else 32
        self.mantissa = 52 if self.f64 else 23
        self.bias = 1023 if self.f64 else 127
        self.int = ir.IntType(bits)
        self.np_float = np.float64 if self.f64 else np.float32
        self.ln2 = split(LN2, 2, self.np_float)
        self.exp_terms = taylor(0, 14 if self.f64 else 8)
        self.expm1_terms = taylor(2, 13 if self.f64 else 7)
        self.log_terms = ATANH_SERIES[:11 if self.f64 else 5]
        self.sin_terms = taylor(3, 8 if self.f64 else 4, 2, sign=-1, alternate=True)
        self.cos_terms = taylor(4, 7 if self.f64 else 4, 2, alternate=True)
        self.atan_terms = ATAN_F64 if self.f64 else ATAN_F32
        self.erf_small = ERF_SMALL_F64 if self.f64 else ERF_SMALL_F32
        self.erf_pieces = ERF_PIECES_F64 if self.f64 else ERF_PIECES_F32
        self.erf_width = 0.5 if self.f64 else 1.0
        # exp's argument is clamped here: beyond, the result is already inf or 0.
        self.exp_limits = (-746.0, 711.0) if self.f64 else (-104.0, 90.0)
        self.sinh_large = 22.0 if self.f64 else 9.0     # tanh(x) rounds to 1 beyond
        self.newton_steps = 4 if self.f64 else 3        # cbrt: ~6% initial error, quadratic convergence
        self.min_normal = float(np.finfo(self.np_float).tiny)


# ---- a small builder over llvmlite for one float type ------------------------------------

def element_type(type_):
    """The type of one lane of `type_` (a vector type) or `type_` itself."""
    return type_.element if isinstance(type_, ir.VectorType) else type_


def with_element(type_, element):
    """`element`, or a vector of it with as many lanes as the vector type `type_`."""
    return ir.VectorType(element, type_.count) if isinstance(type_, ir.VectorType) else element


def type_suffix(type_) -> str:
    """LLVM's overloaded-intrinsic suffix of a type: f32, f64, i32, v8f32..."""
    if isinstance(type_, ir.VectorType):
        return f"v{type_.count}{type_suffix(type_.element)}"
    return "f32" if type_ == F32 else "f64" if type_ == F64 else f"i{type_.width}"


def call_intrinsic(builder: ir.IRBuilder, name: str, args, types):
    """A call of `llvm.<name>.<suffixes of types>` (declared on first use), returning types[0]."""
    full = f"llvm.{name}.{'.'.join(map(type_suffix, types))}"
    module = builder.module
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(types[0], [a.type for a in args]), name=full)
    return builder.call(fn, list(args))


class MathBuilder:
    """Arithmetic on values of one float type (f32 or f64, or a vector of either: the same
    operations lane by lane), with constants and intrinsics."""

    def __init__(self, builder: ir.IRBuilder, float_type):
        self.b = builder
        self.type = float_type
        self.spec = Spec(element_type(float_type))
        self.int = with_element(float_type, self.spec.int)

    def widened(self) -> "MathBuilder":
        """The builder of f64 values with the same lanes (f32 functions reduce arguments in f64)."""
        return MathBuilder(self.b, with_element(self.type, F64))

    def c(self, value):
        return ir.Constant(self.type, float(self.spec.np_float(value)))

    def ci(self, value):
        return ir.Constant(self.int, value)

    def intrinsic(self, name, *args, types=None):
        return call_intrinsic(self.b, name, args, types or [self.type])

    # arithmetic
    def add(self, a, b): return self.b.fadd(a, b)
    def sub(self, a, b): return self.b.fsub(a, b)
    def mul(self, a, b): return self.b.fmul(a, b)
    def div(self, a, b): return self.b.fdiv(a, b)
    def neg(self, a): return self.b.fneg(a)
    def fma(self, a, b, c): return self.intrinsic("fma", a, b, c)
    def abs(self, a): return self.intrinsic("fabs", a)
    def sqrt(self, a): return self.intrinsic("sqrt", a)
    def floor(self, a): return self.intrinsic("floor", a)
    def round(self, a): return self.intrinsic("roundeven", a)
    def copysign(self, magnitude, sign): return self.intrinsic("copysign", magnitude, sign)

    def poly(self, x, coefficients):
        """c0 + c1 x + c2 x^2 + ... by Horner's rule with fused multiply-adds."""
        result = self.c(coefficients[-1])
        for coefficient in reversed(coefficients[:-1]):
            result = self.fma(result, x, self.c(coefficient))
        return result

    # comparisons (ordered: false when either side is NaN) and selection
    def lt(self, a, b): return self.b.fcmp_ordered("<", a, b)
    def le(self, a, b): return self.b.fcmp_ordered("<=", a, b)
    def gt(self, a, b): return self.b.fcmp_ordered(">", a, b)
    def eq(self, a, b): return self.b.fcmp_ordered("==", a, b)
    def isnan(self, a): return self.b.fcmp_unordered("uno", a, a)
    def isinf(self, a): return self.eq(self.abs(a), self.c(np.inf))
    def select(self, cond, a, b): return self.b.select(cond, a, b)
    def any(self, *conds):
        result = conds[0]
        for cond in conds[1:]:
            result = self.b.or_(result, cond)
        return result

    def all(self, *conds):
        result = conds[0]
        for cond in conds[1:]:
            result = self.b.and_(result, cond)
        return result

    def clamp(self, x, low, high):
        """x limited to [low, high]; NaN stays NaN."""
        x = self.select(self.gt(x, self.c(high)), self.c(high), x)
        return self.select(self.lt(x, self.c(low)), self.c(low), x)

    # bits and integers
    def bits(self, x): return self.b.bitcast(x, self.int)
    def from_bits(self, i): return self.b.bitcast(i, self.type)
    def to_int(self, x): return float_to_int(self.b, x, self.int, signed=True)

    def nearest(self, x, scale=None):
        """(n, k): x (times `scale`, unrounded, when given) rounded to the nearest integer, as a
        float and as an int, for |x| < 2^(mantissa - 1): adding 1.5 * 2^mantissa leaves the
        integer in the sum's low bits (round half to even, the default mode). Three operations
        where rounding and a saturating conversion take nine; a NaN gives an arbitrary k (never
        poison), which callers multiply into a NaN."""
        shift = self.c(1.5 * 2.0 ** self.spec.mantissa)
        shifted = self.add(x, shift) if scale is None else self.fma(x, self.c(scale), shift)
        return self.sub(shifted, shift), self.b.sub(self.bits(shifted), self.bits(shift))
    def to_float(self, i): return self.b.sitofp(i, self.type)

    def pow2(self, n):
        """2^n for an integer n in the normal exponent range."""
        return self.from_bits(self.b.shl(self.b.add(n, self.ci(self.spec.bias)), self.ci(self.spec.mantissa)))

    def ldexp(self, x, n):
        """x * 2^n in two factors, so an n beyond the normal range still rounds once at the end."""
        half = self.b.ashr(n, self.ci(1))
        return self.mul(self.mul(x, self.pow2(half)), self.pow2(self.b.sub(n, half)))


def float_to_int(builder: ir.IRBuilder, x, int_type: ir.IntType, signed: bool):
    """Saturating float -> int with NaN -> 0 (the graph IR's `convert`, llvm.fpto*i.sat's meaning),
    from compares and a plain conversion: x86 has no vector form of the .sat intrinsics."""
    width = element_type(int_type).width
    low, high = (-2.0 ** (width - 1), 2.0 ** (width - 1)) if signed else (0.0, 2.0 ** width)
    low_c, high_c = ir.Constant(x.type, low), ir.Constant(x.type, high)
    below = builder.fcmp_ordered("<", x, low_c)
    in_range = builder.fcmp_ordered("<", x, high_c)   # false for NaN and for x >= high
    safe = builder.select(in_range, builder.select(below, low_c, x), ir.Constant(x.type, 0.0))
    value = (builder.fptosi if signed else builder.fptoui)(safe, int_type)
    top = (1 << (width - 1)) - 1 if signed else (1 << width) - 1
    return builder.select(builder.fcmp_ordered(">=", x, high_c), ir.Constant(int_type, top), value)


# ---- exponentials --------------------------------------------------------------------------

def reduce_ln2(m: MathBuilder, x):
    """n = round(x / ln2), r = x - n ln2 with |r| <= ln2/2 (Cody-Waite with fma), for |x| within
    the exp limits: (r, n as an int)."""
    n, k = m.nearest(x, scale=float(LOG2_E))
    hi, lo = m.spec.ln2
    r = m.fma(m.neg(n), m.c(hi), x)
    return m.fma(m.neg(n), m.c(lo), r), k


def exp_with_tail(m: MathBuilder, x, tail=None, scale=0):
    """e^(x + tail) * 2^scale; `tail` (tiny against x) refines the reduced argument."""
    x = m.clamp(x, *m.spec.exp_limits)
    r, k = reduce_ln2(m, x)
    if tail is not None:
        r = m.add(r, tail)
    p = m.poly(r, m.spec.exp_terms)
    if scale:
        k = m.b.add(k, m.ci(scale))
    return m.ldexp(p, k)


def exp(m, x):
    return exp_with_tail(m, x)


def exp2(m, x):
    low, high = m.spec.exp_limits
    x = m.clamp(x, low * 1.4427, high * 1.4427)
    n, k = m.nearest(x)
    r = m.mul(m.sub(x, n), m.c(float(LN2)))
    return m.ldexp(m.poly(r, m.spec.exp_terms), k)


def expm1(m, x, moderate_only=False, nonnegative=False):
    """e^x - 1; `moderate_only` when the caller guarantees -60 <= x <= 60 (skips the overflow path),
    `nonnegative` when also x >= 0 (skips the clamp of 2^n below)."""
    if not moderate_only:
        x = m.clamp(x, -800.0, 800.0) if m.spec.f64 else m.clamp(x, -120.0, 120.0)
    r, k = reduce_ln2(m, x)
    em = m.fma(m.mul(r, r), m.poly(r, m.spec.expm1_terms), r)   # e^r - 1
    big = 1000 if m.spec.f64 else 120
    # 2^n is a normal number in [2^-100, 2^big]; below, 2^n - 1 rounds to -1 anyway.
    t = m.pow2(k if nonnegative else m.b.select(m.b.icmp_signed("<", k, m.ci(-100)), m.ci(-100), k))
    moderate = m.fma(t, em, m.sub(t, m.c(1.0)))
    if moderate_only:
        return moderate
    huge = m.sub(m.ldexp(m.add(em, m.c(1.0)), k), m.c(1.0))
    return keep_zero(m, x, m.select(m.b.icmp_signed(">", k, m.ci(big)), huge, moderate))


def tanh(m, x):
    a = m.abs(x)
    large = m.gt(a, m.c(m.spec.sinh_large))
    t = expm1(m, m.mul(m.select(large, m.c(m.spec.sinh_large), a), m.c(2.0)), moderate_only=True, nonnegative=True)
    r = m.select(large, m.c(1.0), m.div(t, m.add(t, m.c(2.0))))
    return m.copysign(r, x)


def logistic(m, x):
    # 1/(1 + e^-x), as e^x/(1 + e^x) for x < 0 so that e^-|x| never overflows.
    e = exp(m, m.neg(m.abs(x)))
    r = m.div(m.c(1.0), m.add(m.c(1.0), e))
    return m.select(m.lt(x, m.c(0.0)), m.mul(e, r), r)


def sinh(m, x):
    a = m.abs(x)
    e = expm1(m, a)
    small = m.mul(m.c(0.5), m.add(e, m.div(e, m.add(e, m.c(1.0)))))
    h = exp_with_tail(m, a, scale=-1)
    large = m.sub(h, m.div(m.c(0.25), h))
    return m.copysign(m.select(m.lt(a, m.c(1.0)), small, large), x)


def cosh(m, x):
    h = exp_with_tail(m, m.abs(x), scale=-1)
    return m.add(h, m.div(m.c(0.25), h))


# ---- logarithms ----------------------------------------------------------------------------

def log_parts(m: MathBuilder, x):
    """x = 2^e (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)): returns (e as float, f, s = f/(2+f), T)
    where log(1 + f) = f - s (f - T)."""
    spec, b = m.spec, m.b
    subnormal = m.lt(x, m.c(spec.min_normal))
    x = m.select(subnormal, m.mul(x, m.c(2.0 ** 60)), x)
    bits = m.bits(x)
    e = b.sub(b.lshr(bits, m.ci(spec.mantissa)), m.ci(spec.bias))
    e = b.sub(e, b.select(subnormal, m.ci(60), m.ci(0)))
    mantissa_mask = (1 << spec.mantissa) - 1
    mant = m.from_bits(b.or_(b.and_(bits, m.ci(mantissa_mask)), m.ci(spec.bias << spec.mantissa)))
    above = m.gt(mant, m.c(2 ** 0.5))
    mant = m.select(above, m.mul(mant, m.c(0.5)), mant)
    e = b.add(e, b.zext(above, m.int))
    f = m.sub(mant, m.c(1.0))
    s = m.div(f, m.add(f, m.c(2.0)))
    z = m.mul(s, s)
    t = m.mul(z, m.poly(z, spec.log_terms))
    return m.to_float(e), f, s, t


def log_specials(m, x, result):
    """log-family results for x <= 0, +inf and NaN."""
    result = m.select(m.eq(x, m.c(np.inf)), x, result)
    result = m.select(m.eq(x, m.c(0.0)), m.c(-np.inf), result)
    return m.select(m.b.fcmp_unordered("<", x, m.c(0.0)), m.c(np.nan), result)


def log1p_of_parts(m, f, s, t):
    return m.sub(f, m.mul(s, m.sub(f, t)))


def log(m, x):
    e, f, s, t = log_parts(m, x)
    hi, lo = m.spec.ln2
    tail = m.fma(e, m.c(lo), log1p_of_parts(m, f, s, t))
    return log_specials(m, x, m.fma(e, m.c(hi), tail))


def log2(m, x):
    e, f, s, t = log_parts(m, x)
    return log_specials(m, x, m.fma(log1p_of_parts(m, f, s, t), m.c(float(LOG2_E)), e))


def log10(m, x):
    e, f, s, t = log_parts(m, x)
    hi, lo = split(LOG10_2, 2, m.spec.np_float)
    tail = m.fma(e, m.c(lo), m.mul(log1p_of_parts(m, f, s, t), m.c(float(LOG10_E))))
    return log_specials(m, x, m.fma(e, m.c(hi), tail))


def log1p(m, x):
    u = m.add(x, m.c(1.0))
    correction = m.div(m.sub(x, m.sub(u, m.c(1.0))), u)
    usable = m.all(m.lt(m.abs(u), m.c(np.inf)), m.b.fcmp_ordered("!=", u, m.c(0.0)))
    return keep_zero(m, x, m.add(log(m, u), m.select(usable, correction, m.c(0.0))))


def log_double_double(m: MathBuilder, x):
    """log(x) for finite x > 0 as hi + lo, good to about 2^-61 relative (for pow).

    log(1 + f) = 2 atanh(s) = 2 (s + s_lo) + s T, T = z P(z), z = s^2, P = 2/3 + 2z/5 + ...: s T is
    up to 1 % of the result, so its leading part s z 2/3 is a double-double too (from z and s z
    as double-doubles and 2/3 as two floats) and only s z (P - 2/3) is rounded plainly."""
    e, f, s, _ = log_parts(m, x)
    u = m.add(f, m.c(2.0))
    u_lo = m.add(m.sub(m.c(2.0), u), f)
    s_lo = m.div(m.sub(m.fma(m.neg(s), u, f), m.mul(s, u_lo)), u)
    z = m.mul(s, s)
    z_lo = m.fma(m.mul(s, m.c(2.0)), s_lo, m.fma(s, s, m.neg(z)))          # (s + s_lo)^2 = z + z_lo
    a = m.mul(s, z)
    a_lo = m.add(m.fma(s, z, m.neg(a)), m.fma(s, z_lo, m.mul(s_lo, z)))     # (s + s_lo)^3 = a + a_lo
    c0_hi, c0_lo = split(Decimal(2) / 3, 2)
    rest = m.mul(z, m.poly(z, m.spec.log_terms[1:]))                       # P - 2/3
    st_hi = m.mul(a, m.c(c0_hi))
    st_lo = m.fma(a, m.c(c0_hi), m.neg(st_hi))
    st_lo = m.add(st_lo, m.fma(a, rest, m.fma(a_lo, m.c(c0_hi), m.mul(a, m.c(c0_lo)))))
    # e ln2 as a product with its exact error.
    ln2 = float(LN2)
    e_hi = m.mul(e, m.c(ln2))
    e_lo = m.fma(e, m.c(ln2), m.neg(e_hi))
    e_lo = m.fma(e, m.c(float(LN2 - Decimal(ln2))), e_lo)
    two_s = m.mul(s, m.c(2.0))
    total, error = two_sum(m, e_hi, two_s)
    total, error2 = two_sum(m, total, st_hi)
    lo = m.add(m.add(m.add(error, error2), e_lo), m.fma(s_lo, m.c(2.0), st_lo))
    hi = m.add(total, lo)
    return hi, m.sub(lo, m.sub(hi, total))


def two_sum(m, a, b):
    total = m.add(a, b)
    b_virtual = m.sub(total, a)
    error = m.add(m.sub(a, m.sub(total, b_virtual)), m.sub(b, b_virtual))
    return total, error


# ---- trigonometry --------------------------------------------------------------------------

def two_over_pi_bits(count: int) -> int:
    """The first `count` bits of 2/pi after the binary point, as an integer: pi from Machin's
    formula pi/4 = 4 atan(1/5) - atan(1/239) in exact integer arithmetic, with 64 guard bits.
    Its first words, A2F9836E4E441529 FC2757D1F534DDC0, are those of fdlibm's `ipio2` table
    (k_rem_pio2.c: 0xA2F983, 0x6E4E44, 0x1529FC, ...); tests/codegen/test_mathlib.py checks them."""
    precision = count + 64
    one = 1 << precision

    def atan_inverse(n):  # atan(1/n) * one, by its alternating series
        total, power, k = 0, one // n, 0
        while power:
            total += power // (2 * k + 1) if k % 2 == 0 else -(power // (2 * k + 1))
            power //= n * n
            k += 1
        return total
    pi = 4 * (4 * atan_inverse(5) - atan_inverse(239))
    return (2 * one * one // pi) >> (precision - count)


# Payne-Hanek reduction (Payne and Hanek, "Radian reduction for trigonometric functions", SIGNUM
# Newsletter 18, 1983): 2/pi as 64-bit words after 64 zero bits, so that the 192-bit window of it
# that a double's exponent selects starts at bit E + 62 >= 0 for every |x| >= PAYNE_HANEK_FROM.
TWO_OVER_PI_WORDS = 21
TWO_OVER_PI = [(two_over_pi_bits(64 * (TWO_OVER_PI_WORDS - 1)) >> (64 * (TWO_OVER_PI_WORDS - 2 - i))) & (2 ** 64 - 1)
               for i in range(TWO_OVER_PI_WORDS - 1)]
TWO_OVER_PI = [0] + TWO_OVER_PI
# Below, Cody-Waite with a 3-part pi/2 (f64) or 2-part in f64 (f32) is accurate: n < 2^20.
PAYNE_HANEK_FROM = 2.0 ** 20


def two_over_pi_table(m: MathBuilder):
    """TWO_OVER_PI as a constant global array of i64 in the module."""
    name = "cdna.math.two_over_pi"
    module = m.b.module
    if name not in module.globals:
        array_type = ir.ArrayType(ir.IntType(64), len(TWO_OVER_PI))
        addrspace = 4 if module.triple.startswith("amdgcn") else 0
        table = ir.GlobalVariable(module, array_type, name=name, addrspace=addrspace)
        table.global_constant = True
        table.linkage = "internal"
        table.initializer = ir.Constant(array_type, [ir.Constant(ir.IntType(64), w - (1 << 64) if w >> 63 else w)
                                                     for w in TWO_OVER_PI])
    return module.globals[name]


def table_words(m: MathBuilder, index):
    """TWO_OVER_PI[index] for an i64 index (or a vector of them, loaded lane by lane)."""
    b, table = m.b, two_over_pi_table(m)
    i64 = ir.IntType(64)

    def load(i):
        return b.load(b.gep(table, [ir.Constant(i64, 0), i], source_etype=table.value_type), typ=i64)
    if not isinstance(index.type, ir.VectorType):
        return load(index)
    words = ir.Constant(ir.VectorType(i64, index.type.count), ir.Undefined)
    for lane in range(index.type.count):
        at = ir.Constant(ir.IntType(32), lane)
        words = b.insert_element(words, load(b.extract_element(index, at)), at)
    return words


def payne_hanek(m: MathBuilder, x):
    """(quadrant mod 4 as an int, r) with x = n pi/2 + r, |r| <= pi/4, for an f64 x (or vector)
    with |x| >= PAYNE_HANEK_FROM, finite: x = M 2^E (M < 2^53) times the 192 bits of 2/pi from
    bit E - 1 on (earlier bits give multiples of 4), the product's bits 190-191 the quadrant and
    the 128 below them the fraction, which is then rounded to the nearest quadrant and times
    pi/2 in double-double. The bits after the window add below 2^-137 to the fraction; a double
    is never closer than about 2^-61 to a multiple of pi/2."""
    b = m.b
    lanes = (lambda t: with_element(x.type, t))
    i64, i128, i256 = (lanes(ir.IntType(n)) for n in (64, 128, 256))
    c = lambda t, v: ir.Constant(t, v)
    bits = m.bits(m.abs(x))
    exponent = b.sub(b.lshr(bits, m.ci(52)), m.ci(1075))                 # E
    mantissa = b.or_(b.and_(bits, m.ci(2 ** 52 - 1)), m.ci(2 ** 52))    # M
    start = b.add(exponent, m.ci(62))                                     # bit E + 62 of the table
    word = b.lshr(start, m.ci(6))
    shift = b.zext(b.and_(start, m.ci(63)), i256)
    window = c(i256, 0)
    for k in range(4):
        w = b.zext(table_words(m, b.add(word, m.ci(k))), i256)
        window = b.or_(window, b.shl(w, c(i256, 64 * (3 - k))))
    window = b.lshr(b.shl(window, shift), c(i256, 64))                   # 192 bits from the start bit
    product = b.mul(b.zext(mantissa, i256), window)                      # x 2/pi times 2^190
    quadrant = b.trunc(b.lshr(product, c(i256, 190)), i64)
    fraction = b.trunc(b.lshr(product, c(i256, 62)), i128)               # in [0, 1) times 2^128
    quadrant = b.add(quadrant, b.zext(b.icmp_signed("<", fraction, c(i128, 0)), i64))  # round to nearest
    high = b.trunc(b.ashr(fraction, c(i128, 64)), i64)                   # signed: the fraction in [-1/2, 1/2)
    low = b.trunc(fraction, i64)
    high_f = b.sitofp(high, m.type)
    rest = b.sub(high, b.fptosi(high_f, i64))                            # what rounding high lost, exactly
    scale = 2.0 ** -64
    f_hi = m.mul(high_f, m.c(scale))
    f_lo = m.fma(b.uitofp(low, m.type), m.c(scale * scale), m.mul(b.sitofp(rest, m.type), m.c(scale)))
    pi_hi, pi_lo = split(PI / 2, 2)
    r_hi = m.mul(f_hi, m.c(pi_hi))
    r_lo = m.add(m.fma(f_hi, m.c(pi_hi), m.neg(r_hi)), m.fma(f_hi, m.c(pi_lo), m.mul(f_lo, m.c(pi_hi))))
    r = m.add(r_hi, r_lo)
    negative = m.lt(x, m.c(0.0))
    quadrant = b.and_(b.select(negative, b.neg(quadrant), quadrant), m.ci(3))
    return quadrant, m.select(negative, m.neg(r), r)


def reduce_half_pi(m: MathBuilder, x, huge: bool = False):
    """(quadrant n mod 4 as an int, r) with x = n pi/2 + r, |r| <= pi/4. For |x| below
    PAYNE_HANEK_FROM, f64: three fma steps of a 3-part pi/2; f32: in f64 with a 2-part pi/2.
    `huge`: for |x| from PAYNE_HANEK_FROM on, inf and NaN (which give NaN), by Payne-Hanek in f64."""
    wide = m if m.spec.f64 else m.widened()
    xd = x if m.spec.f64 else m.b.fpext(x, wide.type)
    if huge:
        q, r = payne_hanek(wide, xd)
        r = wide.select(wide.lt(wide.abs(xd), wide.c(np.inf)), r, wide.sub(xd, xd))  # inf, NaN -> NaN
    else:
        n = wide.round(wide.mul(xd, wide.c(float(2 / PI))))
        r = xd
        for part in split(PI / 2, 3 if m.spec.f64 else 2):
            r = wide.fma(wide.neg(n), wide.c(part), r)
        q = m.b.and_(wide.to_int(n), wide.ci(3))
    return (q, r) if m.spec.f64 else (m.b.trunc(q, m.int), m.b.fptrunc(r, m.type))


def with_huge_arguments(name: str, fast):
    """A trigonometric function from its quadrant form `fast(m, x, q, r)`: Cody-Waite's (q, r)
    where |x| < PAYNE_HANEK_FROM, and only where some argument is not, Payne-Hanek's, computed by
    `cdna.math.<name>_huge`, so ordinary arguments pay one compare and a never-taken branch.
    In a work-item loop the loop vectorizer calls that function's masked vector variant (which
    returns at once when no lane needs it); in a vector function the branch tests all lanes."""
    def function_of(m: MathBuilder, x):
        b = m.b
        if isinstance(x.type, ir.VectorType):
            huge, taken = huge_lanes(b, x)
        else:
            huge = taken = b.fcmp_unordered(">=", m.abs(x), m.c(PAYNE_HANEK_FROM))
        # Huge lanes' ordinary results are garbage, never poison (the reduction's float -> int
        # saturates), and the huge path replaces them.
        ordinary = fast(m, x, *reduce_half_pi(m, x))
        before = b.block
        big = b.append_basic_block(f"{name}.huge")
        join = b.append_basic_block(f"{name}.join")
        b.cbranch(taken, big, join)
        b.position_at_end(big)
        if isinstance(x.type, ir.VectorType):
            value = b.select(huge, b.call(huge_variant(b.module, name, x.type), [x]), ordinary)
        else:
            value = b.call(huge_function(b.module, name, x.type, fast), [x])
        after_big = b.block
        b.branch(join)
        b.position_at_end(join)
        result = b.phi(x.type)
        result.add_incoming(ordinary, before)
        result.add_incoming(value, after_big)
        return result
    function_of.quadrant_form = fast
    return function_of


# Vector widths for which the huge functions get vector variants (the loop vectorizer picks the
# one of its vectorization factor).
HUGE_VARIANT_LANES = (2, 4, 8, 16)


def huge_function(module: ir.Module, name: str, float_type, fast=None) -> ir.Function:
    """`cdna.math.<name>_huge.<f32|f64>(x)`: the function by Payne-Hanek's reduction (of
    PAYNE_HANEK_FROM where |x| is below), inlined on AMDGPU. On the host never inlined, and
    speculatable, so that the loop vectorizer calls it unconditionally through its vector variants,
    which compute only the lanes that need it, and return at once when none does."""
    symbol = f"cdna.math.{name}_huge.{type_suffix(float_type)}"
    if symbol in module.globals:
        return module.globals[symbol]
    fast = fast or FUNCTIONS[name].quadrant_form
    fn = ir.Function(module, ir.FunctionType(float_type, [float_type]), name=symbol)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    m = MathBuilder(b, float_type)
    x = fn.args[0]
    x = m.select(b.fcmp_unordered(">=", m.abs(x), m.c(PAYNE_HANEK_FROM)), x, m.c(PAYNE_HANEK_FROM))
    b.ret(fast(m, x, *reduce_half_pi(m, x, huge=True)))
    if module.triple.startswith("amdgcn"):
        fn.attributes.add("alwaysinline")
        return fn
    fn.attributes.add("noinline")
    add_pure_attributes(fn)
    variants = [huge_variant(module, name, ir.VectorType(float_type, lanes)) for lanes in HUGE_VARIANT_LANES]
    mangled = [f"_ZGV_LLVM_N{v.args[0].type.count}v_{symbol}({v.name})"
               for v in variants]
    set.add(fn.attributes, f'"vector-function-abi-variant"="{",".join(mangled)}"')
    keep_alive(module, variants)
    return fn


def keep_alive(module: ir.Module, functions) -> None:
    """List functions in @llvm.compiler.used, so that the optimizer keeps them until the loop
    vectorizer has had the chance to call them (nothing calls a vector variant before)."""
    name = "llvm.compiler.used"
    kept = list(module.globals[name].initializer.constant) if name in module.globals else []
    if name in module.globals:
        del module.globals[name]
        module.scope._useset.discard(name)
    kept += list(functions)
    array_type = ir.ArrayType(ir.PointerType(), len(kept))
    used = ir.GlobalVariable(module, array_type, name=name)
    used.linkage = "appending"
    used.section = "llvm.metadata"
    used.initializer = ir.Constant(array_type, kept)


def huge_lanes(b: ir.IRBuilder, x):
    """The lanes (an <N x i1>) of a float vector x whose |x| >= PAYNE_HANEK_FROM, inf or NaN,
    and whether there is any."""
    m = MathBuilder(b, x.type)
    huge = b.fcmp_unordered(">=", m.abs(x), m.c(PAYNE_HANEK_FROM))
    as_int = ir.IntType(x.type.count)
    return huge, b.icmp_unsigned("!=", b.bitcast(huge, as_int), ir.Constant(as_int, 0))


def huge_variant(module: ir.Module, name: str, vector_type) -> ir.Function:
    """`cdna.math.<name>_huge.<vNfT>(x)`: the huge function on the lanes that need it (the others
    undefined). Always inlined, but only into the calls the loop vectorizer makes (nothing calls
    it before), by the pass that runs after it (codegen/host.py's optimize): the loop then tests
    its lanes and branches around the out-of-line work, instead of calling a function for it."""
    symbol = f"cdna.math.{name}_huge.{type_suffix(vector_type)}"
    if symbol in module.globals:
        return module.globals[symbol]
    fn = ir.Function(module, ir.FunctionType(vector_type, [vector_type]), name=symbol)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    add_pure_attributes(fn)
    x = fn.args[0]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    mask, any_lane = huge_lanes(b, x)
    with b.if_then(b.not_(any_lane)):
        b.ret(ir.Constant(vector_type, ir.Undefined))
    b.ret(b.call(huge_lanes_function(module, name, vector_type), [x, mask]))
    return fn


def huge_lanes_function(module: ir.Module, name: str, vector_type) -> ir.Function:
    """`cdna.math.<name>_huge.<vNfT>.lanes(x, mask)`: the scalar huge function on each lane in
    mask, one by one (the others undefined); never inlined, and not speculatable, so that its
    call stays behind the lane test rather than becoming a select of its result."""
    symbol = f"cdna.math.{name}_huge.{type_suffix(vector_type)}.lanes"
    if symbol in module.globals:
        return module.globals[symbol]
    fn = ir.Function(module, ir.FunctionType(vector_type, [vector_type, with_element(vector_type, ir.IntType(1))]),
                     name=symbol)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("readnone")
    fn.attributes.add("nounwind")
    x, mask = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    scalar = huge_function(module, name, vector_type.element)
    result = ir.Constant(vector_type, ir.Undefined)
    for lane in range(vector_type.count):
        at = ir.Constant(ir.IntType(32), lane)
        before = b.block
        with b.if_then(b.extract_element(mask, at)):
            inserted = b.insert_element(result, b.call(scalar, [b.extract_element(x, at)]), at)
            then_block = b.block
        merged = b.phi(vector_type)
        merged.add_incoming(inserted, then_block)
        merged.add_incoming(result, before)
        result = merged
    b.ret(result)
    return fn


def sin_cos_of_reduced(m, r):
    z = m.mul(r, r)
    sin = m.fma(m.mul(z, r), m.poly(z, m.spec.sin_terms), r)
    half_z = m.mul(z, m.c(0.5))
    w = m.sub(m.c(1.0), half_z)
    # cos = 1 - z/2 + z^2 C(z), keeping the rounding error of 1 - z/2.
    cos = m.add(w, m.fma(m.mul(z, z), m.poly(z, m.spec.cos_terms), m.sub(m.sub(m.c(1.0), w), half_z)))
    return sin, cos


def quadrant_bit(m, q, bit):
    return m.b.icmp_unsigned("!=", m.b.and_(q, m.ci(bit)), m.ci(0))


def keep_zero(m, x, result):
    """`result`, or x itself where x is +-0: for the odd functions that are x near 0 (sin, tan,
    expm1, log1p), whose reduction or correction terms turn -0 into +0."""
    return m.select(m.eq(x, m.c(0.0)), x, result)


def sin_of_quadrant(m, x, q, r):
    s, c = sin_cos_of_reduced(m, r)
    value = m.select(quadrant_bit(m, q, 1), c, s)
    return keep_zero(m, x, m.select(quadrant_bit(m, q, 2), m.neg(value), value))


def cos_of_quadrant(m, x, q, r):
    s, c = sin_cos_of_reduced(m, r)
    value = m.select(quadrant_bit(m, q, 1), s, c)
    q_plus_1 = m.b.add(q, m.ci(1))
    return m.select(quadrant_bit(m, q_plus_1, 2), m.neg(value), value)


def tan_of_quadrant(m, x, q, r):
    s, c = sin_cos_of_reduced(m, r)
    return keep_zero(m, x, m.select(quadrant_bit(m, q, 1), m.neg(m.div(c, s)), m.div(s, c)))


sin = with_huge_arguments("sin", sin_of_quadrant)
cos = with_huge_arguments("cos", cos_of_quadrant)
tan = with_huge_arguments("tan", tan_of_quadrant)
HUGE_ARGUMENT_FUNCTIONS = ("sin", "cos", "tan")   # those with a Payne-Hanek path


def atan(m, x):
    a = m.abs(x)
    big = m.gt(a, m.c(2.414213562373095))      # tan(3 pi/8)
    mid = m.gt(a, m.c(0.41421356237309503))    # tan(pi/8)
    t = m.select(mid, m.div(m.sub(a, m.c(1.0)), m.add(a, m.c(1.0))), a)
    t = m.select(big, m.div(m.c(-1.0), a), t)
    z = m.mul(t, t)
    atan_t = m.fma(m.mul(t, z), m.poly(z, m.spec.atan_terms), t)
    quarter_hi, quarter_lo = split(PI / 4, 2, m.spec.np_float)
    half_hi, half_lo = split(PI / 2, 2, m.spec.np_float)
    base_hi = m.select(big, m.c(half_hi), m.select(mid, m.c(quarter_hi), m.c(0.0)))
    base_lo = m.select(big, m.c(half_lo), m.select(mid, m.c(quarter_lo), m.c(0.0)))
    return m.copysign(m.add(base_hi, m.add(base_lo, atan_t)), x)


def atan2(m, y, x):
    ay, ax = m.abs(y), m.abs(x)
    a = atan(m, m.div(ay, ax))
    a = m.select(m.eq(ay, m.c(0.0)), m.c(0.0), a)                                  # 0/0 and 0/x
    a = m.select(m.all(m.isinf(ay), m.isinf(ax)), m.c(float(PI / 4)), a)           # inf/inf
    pi_hi, pi_lo = split(PI, 2, m.spec.np_float)
    x_negative = m.b.icmp_signed("<", m.bits(x), m.ci(0))                          # includes -0
    a = m.select(x_negative, m.add(m.c(pi_hi), m.sub(m.c(pi_lo), a)), a)
    a = m.select(m.any(m.isnan(x), m.isnan(y)), m.c(np.nan), a)
    return m.copysign(a, y)


def asin(m, x):
    one = m.c(1.0)
    return atan2(m, x, m.sqrt(m.mul(m.sub(one, x), m.add(one, x))))


def acos(m, x):
    one = m.c(1.0)
    return atan2(m, m.sqrt(m.mul(m.sub(one, x), m.add(one, x))), x)


# ---- erf, cbrt, pow ----------------------------------------------------------------------

def erf(m, x):
    spec, b = m.spec, m.b
    a = m.abs(x)
    small = m.mul(a, m.poly(m.mul(a, a), spec.erf_small))
    pieces = len(spec.erf_pieces)
    degree = len(spec.erf_pieces[0])
    index = m.floor(m.div(m.sub(a, m.c(1.0)), m.c(spec.erf_width)))
    index = m.to_int(m.clamp(index, 0.0, pieces - 1.0))
    u = m.sub(a, m.add(m.c(1.0 + spec.erf_width / 2), m.mul(m.to_float(index), m.c(spec.erf_width))))
    table = erf_table(m)
    first = b.mul(index, m.ci(degree))
    coefficient = lambda k: b.load(b.gep(table, [ir.Constant(ir.IntType(64), 0), b.add(first, m.ci(k))],
                                         source_etype=table.value_type), typ=m.type)
    large = coefficient(degree - 1)
    for k in range(degree - 2, -1, -1):
        large = m.fma(large, u, coefficient(k))
    end = 1.0 + pieces * spec.erf_width
    value = m.select(m.lt(a, m.c(1.0)), small, m.select(m.lt(a, m.c(end)), large, m.c(1.0)))
    value = m.select(m.isnan(a), a, value)
    return m.copysign(value, x)


def erf_table(m: MathBuilder):
    """The per-interval erf coefficients as a constant global array of the module."""
    name = f"cdna.math.erf_table.{'f64' if m.spec.f64 else 'f32'}"
    module = m.b.module
    if name not in module.globals:
        flat = [m.c(c) for row in m.spec.erf_pieces for c in row]
        array_type = ir.ArrayType(m.type, len(flat))
        # On AMDGPU in the constant address space (4): address space 0 is flat there (slower loads).
        addrspace = 4 if module.triple.startswith("amdgcn") else 0
        table = ir.GlobalVariable(module, array_type, name=name, addrspace=addrspace)
        table.global_constant = True
        table.linkage = "internal"
        table.initializer = ir.Constant(array_type, flat)
    return module.globals[name]


def cbrt(m, x):
    spec, b = m.spec, m.b
    a = m.abs(x)
    subnormal = m.lt(a, m.c(spec.min_normal))
    a = m.select(subnormal, m.mul(a, m.c(2.0 ** 54)), a)   # 2^54 = (2^18)^3
    # Dividing the bits by 3 divides the exponent by 3 (a ~6% guess): bits/3 + (2/3) bits(1.0).
    one_bits = spec.bias << spec.mantissa
    guess = m.from_bits(b.add(b.udiv(m.bits(a), m.ci(3)), m.ci(one_bits * 2 // 3)))
    y = guess
    for _ in range(spec.newton_steps):
        y2 = m.mul(y, y)
        y = m.sub(y, m.div(m.fma(y2, y, m.neg(a)), m.mul(m.c(3.0), y2)))
    y = m.select(subnormal, m.mul(y, m.c(2.0 ** -18)), y)
    keep = m.any(m.eq(a, m.c(0.0)), m.isinf(a), m.isnan(a))
    return m.select(keep, x, m.copysign(y, x))


def pow(m, x, y):
    b = m.b
    ax = m.abs(x)
    if m.spec.f64:
        hi, lo = log_double_double(m, ax)
        product = m.mul(y, hi)
        tail = m.fma(y, lo, m.fma(y, hi, m.neg(product)))
        # The tail counts down to the exp's limits (subnormal results too); beyond them the result
        # is 0 or inf whatever it is (and a huge product's tail would not be tiny, an infinite one's NaN).
        low, high = m.spec.exp_limits
        tail = m.select(m.all(m.gt(product, m.c(low)), m.lt(product, m.c(high))), tail, m.c(0.0))
        magnitude = exp_with_tail(m, product, tail)
    else:  # f32: log and exp in f64 are exact enough for a correctly rounded-ish f32 result
        wide = m.widened()
        product = wide.mul(b.fpext(y, wide.type), log(wide, b.fpext(ax, wide.type)))
        magnitude = b.fptrunc(exp(wide, product), m.type)
    zero, inf = m.c(0.0), m.c(np.inf)
    y_positive = m.gt(y, zero)
    magnitude = m.select(m.eq(ax, inf), m.select(y_positive, inf, zero), magnitude)
    magnitude = m.select(m.eq(ax, zero), m.select(y_positive, zero, inf), magnitude)
    y_integer = m.eq(m.floor(y), y)
    half_y = m.mul(y, m.c(0.5))
    y_odd = m.all(y_integer, b.fcmp_ordered("!=", m.floor(half_y), half_y))
    x_negative = b.icmp_signed("<", m.bits(x), m.ci(0))
    result = m.select(m.all(x_negative, y_odd), m.neg(magnitude), magnitude)
    negative_finite_x = m.all(m.lt(x, zero), m.gt(x, m.c(-np.inf)))
    result = m.select(m.all(negative_finite_x, m.b.not_(y_integer), m.lt(m.abs(y), inf)),
                      m.c(np.nan), result)
    one = m.c(1.0)
    exact_one = m.any(m.eq(y, m.c(0.0)), m.eq(x, one), m.all(m.eq(ax, one), m.isinf(y)))
    result = m.select(m.any(m.isnan(x), m.isnan(y)), m.c(np.nan), result)
    return m.select(exact_one, one, result)


# ---- simple functions ----------------------------------------------------------------------

def sign(m, x):
    zero = m.c(0.0)
    value = m.select(m.gt(x, zero), m.c(1.0), m.select(m.lt(x, zero), m.c(-1.0), x))
    return value


def is_finite(m, x):
    return m.lt(m.abs(x), m.c(np.inf))


FUNCTIONS = {
    "exp": exp, "exp2": exp2, "expm1": expm1, "log": log, "log2": log2, "log10": log10, "log1p": log1p,
    "tanh": tanh, "logistic": logistic, "sinh": sinh, "cosh": cosh, "sin": sin, "cos": cos, "tan": tan,
    "atan": atan, "atan2": atan2, "asin": asin, "acos": acos, "erf": erf, "cbrt": cbrt, "pow": pow,
    "sign": sign, "is_finite": is_finite,
    "sqrt": MathBuilder.sqrt, "abs": MathBuilder.abs, "floor": MathBuilder.floor, "round": MathBuilder.round,
    "ceil": lambda m, x: m.intrinsic("ceil", x), "trunc": lambda m, x: m.intrinsic("trunc", x),
    "rsqrt": lambda m, x: m.div(m.c(1.0), m.sqrt(x)),
    "fma": MathBuilder.fma,
}


def function(module: ir.Module, name: str, float_type) -> ir.Function:
    """The internal LLVM function `cdna.math.<name>.<f32|f64|v8f32|...>`, built on first use.
    A scalar function is always inlined; a vector one is the never-inlined variant that the
    loop vectorizer calls in place of an `outlined` function."""
    symbol = f"cdna.math.{name}.{type_suffix(float_type)}"
    if symbol in module.globals:
        return module.globals[symbol]
    implementation = FUNCTIONS[name]
    arity = MATH_FUNCTIONS[name][0]
    result_type = with_element(float_type, ir.IntType(1)) if name == "is_finite" else float_type
    fn = ir.Function(module, ir.FunctionType(result_type, [float_type] * arity), name=symbol)
    fn.linkage = "internal"
    if isinstance(float_type, ir.VectorType):
        fn.attributes.add("noinline")
        add_pure_attributes(fn)
    else:
        fn.attributes.add("alwaysinline")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    builder.ret(implementation(MathBuilder(builder, float_type), *fn.args))
    return fn


def add_pure_attributes(fn: ir.Function) -> None:
    """No memory access, no side effect, no undefined behaviour for any argument: LLVM may call the
    function speculatively (so calls in conditional code still vectorize). llvmlite's attribute
    list lacks `speculatable` and `willreturn`, hence the set's own `add`."""
    fn.attributes.add("readnone")
    fn.attributes.add("nounwind")
    for attribute in ("speculatable", "willreturn"):
        set.add(fn.attributes, attribute)


# The functions worth a vector variant called rather than inlined: the polynomial ones. The others
# are an instruction or a few; erf reads its coefficient table at a per-lane index (scalar only).
OUTLINABLE = frozenset(FUNCTIONS) - {"erf", "sqrt", "rsqrt", "abs", "sign", "is_finite", "floor", "ceil", "trunc",
                                     "round", "fma"}


def outlined(module: ir.Module, name: str, float_type, lanes: int) -> ir.Function:
    """`cdna.math.<name>.<f32|f64>.outlined`: the scalar function as a call of its vector variant on
    `lanes` lanes, and never inlined. Its "vector-function-abi-variant" attribute (LLVM's vector
    function ABI) tells the loop vectorizer to call the variant on `lanes` work-items at once, so
    one copy of the function's code serves all its call sites: LLVM optimises and compiles it once,
    where inlining pays for it at every call site (the bulk of compiling a long chain)."""
    symbol = f"cdna.math.{name}.{type_suffix(float_type)}.outlined"
    if symbol in module.globals:
        return module.globals[symbol]
    vector_type = ir.VectorType(float_type, lanes)
    variant = function(module, name, vector_type)
    arity = len(variant.args)
    fn = ir.Function(module, ir.FunctionType(variant.return_value.type.element, [float_type] * arity), name=symbol)
    fn.linkage = "internal"
    fn.attributes.add("noinline")  # inlined, the loop would hold a vector call the vectorizer cannot widen
    add_pure_attributes(fn)
    mangled = f"_ZGV_LLVM_N{lanes}{'v' * arity}_{symbol}({variant.name})"
    set.add(fn.attributes, f'"vector-function-abi-variant"="{mangled}"')
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    zeros = ir.Constant(ir.VectorType(ir.IntType(32), lanes), 0)
    splats = [b.shuffle_vector(b.insert_element(ir.Constant(vector_type, ir.Undefined), arg, ir.Constant(ir.IntType(32), 0)),
                               ir.Constant(vector_type, ir.Undefined), zeros) for arg in fn.args]
    b.ret(b.extract_element(b.call(variant, splats), ir.Constant(ir.IntType(32), 0)))
    return fn


def call(builder: ir.IRBuilder, name: str, args, lanes: int | None = None):
    """Emit `name(*args)` (args of one float type, f32 or f64) at the builder's position: inlined,
    or with `lanes` (and a function in OUTLINABLE) as a call of the `outlined` function."""
    if name not in FUNCTIONS:
        raise NotImplementedError(f"math function {name!r} is not in the IR math library")
    if lanes is not None and name in OUTLINABLE:
        return builder.call(outlined(builder.module, name, args[0].type, lanes), list(args))
    return builder.call(function(builder.module, name, args[0].type), list(args))


# ---- fitted coefficients (see the module docstring for how they were derived) ----------------

ATAN_F64 = (
    -0.3333333333333333, 0.1999999999999552, -0.14285714284666542, 0.11111111015256361, -0.09090904578123903,
    0.07692183190826087, -0.06664511447381948, 0.0585814891280221, -0.0508544973794026, 0.03923165829558719,
    -0.01917688711906226,
)
ATAN_F32 = (
    -0.333333332792548, 0.19999977258688387, -0.14284151193628614, 0.11071365021884794, -0.08624676145249494,
    0.050481385120797445,
)
ERF_SMALL_F64 = (
    1.1283791670955126, -0.3761263890318375, 0.11283791670954879, -0.026866170645076792,
    0.0052239776248180145, -0.000854832698083379, 0.0001205533111164271, -1.4925595266831182e-05,
    1.6461000484121368e-06, -1.6350312701054695e-07, 1.4659775274047436e-08, -1.1372848856791674e-09,
    5.957176147748911e-11,
)
ERF_SMALL_F32 = (
    1.1283791658483509, -0.37612626666720334, 0.11283594715160218, -0.026854212010626412,
    0.005189087423433974, -0.000801686428716587, 7.875875062685488e-05,
)
ERF_PIECES_F64 = (
    (0.9229001282564583, 0.23652112244729076, -0.29565140305911347, 0.1675357950668438,
     -0.006159404230400856, -0.047181036407066, 0.021301272963920013, 0.0036259827783650276,
     -0.005697678092677174, 0.0008776295619757434, 0.0007935128735496147, -0.0003238179509712575,
     -5.276690871477814e-05, 5.43425462395389e-05, -2.7045874929475777e-06,),
    (0.9866716712191824, 0.052774995930150385, -0.09235624287776316, 0.09015728471400038,
     -0.04810220983216799, 0.006624361469442127, 0.008963045098671714, -0.006058751556273612,
     0.0007300512513957693, 0.0008941851085001589, -0.00044275066672596166, -5.516089566017887e-06,
     6.867522351169459e-05, -1.6964045955836456e-05, -4.66415238866851e-06,),
    (0.9985372834133188, 0.007142319022017981, -0.016070217799540463, 0.021724553691973056,
     -0.01908338363695397, 0.010657679165375203, -0.0029043570711193736, -0.0006704559476582611,
     0.0009994937169198635, -0.0003693812913881268, -1.1466751452328194e-05, 6.515330860811812e-05,
     -2.268472605247056e-05, -1.5294266526203695e-06, 3.3826971795803203e-06,),
    (0.9998993780778803, 0.0005862772470937923, -0.0016122624295079285, 0.0027603887050666165,
     -0.0032581136596308217, 0.0027558084140718625, -0.0016573274036288535, 0.0006460409568046872,
     -8.901157404658745e-05, -7.122311945456365e-05, 5.499710328037999e-05, -1.584372209085474e-05,
     -1.0734560824474133e-06, 2.687039326214039e-06, -8.897985735061829e-07,),
    (0.9999956972205363, 2.918902538358193e-05, -9.486433249664062e-05, 0.0001958097119480572,
     -0.0002865693377502133, 0.0003137972255145079, -0.00026352850422455557, 0.00016999141271255478,
     -8.164762980630891e-05, 2.591391732163207e-05, -2.3288945697730793e-06, -2.8657708146180363e-06,
     1.9049483542255113e-06, -5.325752235216912e-07, -2.942806624262433e-09,),
    (0.9999998862727434, 8.814321912317562e-07, -3.3053707171192594e-06, 7.969616062416097e-06,
     -1.3841239877940113e-05, 1.837097499325667e-05, -1.927272144640095e-05, 1.6275303117186718e-05,
     -1.1128227480577814e-05, 6.1088659498853046e-06, -2.603307298189665e-06, 7.756570006374989e-07,
     -9.018692191981017e-08, -6.063448968170977e-08, 4.2980774672076625e-08,),
    (0.9999999981494259, 1.6143993719505837e-08, -6.861197330790452e-08, 1.8901925980017288e-07,
     -3.7879526930525063e-07, 5.872461797150137e-07, -7.309200161404409e-07, 7.477252274203561e-07,
     -6.378323388363815e-07, 4.5700570198874093e-07, -2.7506223201552445e-07, 1.377756273885688e-07,
     -5.5920580973449035e-08, 1.702364326760354e-08, -2.8908400090982083e-09,),
    (0.9999999999815149, 1.7934357034430752e-10, -8.518819591314201e-10, 2.637845013266944e-09,
     -5.980921254610302e-09, 1.0572396972138082e-08, -1.514471607983946e-08, 1.803629883971495e-08,
     -1.8172815296151945e-08, 1.5675633280614812e-08, -1.166093110693751e-08, 7.49993524889447e-09,
     -4.173872006434599e-09, 2.053951834516828e-09, -8.158347581127073e-10,),
    (0.9999999999998869, 1.2084074716656982e-12, -6.344139225929688e-12, 2.1801684761297578e-11,
     -5.511470950942417e-11, 1.0920039126878021e-10, -1.764034198079496e-10, 2.3860452366923574e-10,
     -2.753681696931495e-10, 2.7488761031993477e-10, -2.3966470832551054e-10, 1.8336869996192313e-10,
     -1.243324765150336e-10, 7.905017317299123e-11, -4.13423698738662e-11,),
    (0.9999999999999996, 4.938485142607247e-15, -2.839628956138058e-14, 1.0720628062071209e-13,
     -2.987526292521545e-13, 6.549693333114934e-13, -1.1756902825306868e-12, 1.7755331159287115e-12,
     -2.3004071973405007e-12, 2.594674886063921e-12, -2.5745919644462204e-12, 2.256382463642534e-12,
     -1.777007377167403e-12, 1.3674665182864673e-12, -8.539748147870108e-13,),
)
ERF_PIECES_F32 = (
    (0.9661051463841244, 0.11893028875994793, -0.17839541546606563, 0.13875209686532508,
     -0.044599468498182596, -0.01486926067382483, 0.019333558749802502, -0.004709593935184524,
     -0.0024021882670341764, 0.0015553907845944762,),
    (0.9995930481161879, 0.0021782842454354076, -0.005445737328999964, 0.008350086541338056,
     -0.00862151451669042, 0.006117443103189499, -0.00280823902650405, 0.000541381603941271,
     0.00030636597472052853, -0.00024593799388214076,),
    (0.999999256893348, 5.399427263846154e-06, -1.8896336830129245e-05, 4.229541188361464e-05,
     -6.777099116813883e-05, 8.211951164433406e-05, -7.714469612021704e-05, 5.815416844702919e-05,
     -3.70394655480234e-05, 1.5531726095905007e-05,),
)
