"""Elementwise ops: unary and binary math, comparisons, select, clamp, convert, constant, iota.

Elementwise ops take operands of one shape and (but for select and complex) one dtype: the
frontend broadcasts and promotes before it binds them, as lax does. f16 and bf16 are computed
in f32 by the references and rounded once at the end, as XLA's CPU backend does.
"""
import math

import numpy as np

from ..opdef import compute_dtype, define, require, require_dtype, require_same_types, set_rules
from .rules import (batch_elementwise, batch_elementwise_ops, elementwise_derivatives, is_differentiable, linear,
                    zero_derivative)
from ..types import (COMPLEX_OF, COMPLEX_PART, COMPLEXES, FLOATS, INEXACT, INTS, NUMERIC, NUMPY_DTYPES, TensorType,
                     dtype_name)

BOOL_AND_INTS = ("bool",) + INTS
ALL_DTYPES = tuple(NUMPY_DTYPES)


def widen_half(fn):
    """Run a numpy function on f16/bf16 arrays in f32 and round a float result back once."""
    def run(*arrays):
        dtype = arrays[0].dtype
        wide = compute_dtype(dtype)
        if wide == dtype:
            return fn(*arrays)
        result = fn(*(a.astype(wide) for a in arrays))
        return result.astype(dtype) if result.dtype == wide else result
    return run


def quiet(fn):
    """numpy warns on inf/nan results (log(0), 0/0); IR semantics are IEEE, so silence it."""
    def run(*arrays, **attrs):
        with np.errstate(all="ignore"):
            return fn(*arrays, **attrs)
    return run


# ---- unary ------------------------------------------------------------------------------

def unary(name, reference, dtypes, result_dtype=None, doc=""):
    """An elementwise op of one operand; `result_dtype` maps the operand dtype (default: same)."""
    def infer(types, attrs, regions):
        (x,) = types
        require_dtype(name, x, dtypes)
        return [x.with_dtype(result_dtype(x.dtype) if result_dtype else x.dtype)]
    define(name, infer=infer, reference=quiet(widen_half(reference)), num_operands=1, doc=doc)


def round_half_even(x):
    return np.round(x)


def logistic(x):
    """1/(1+exp(-x)); for real x below 0 as exp(x)/(1+exp(x)), since exp(-x) overflows long before
    the result underflows (logistic(-96) is 2.0e-42 in f32), and f32 in f64, rounded once."""
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    wide = x.astype(np.float64)
    e = np.exp(-np.abs(wide))
    return np.where(wide >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


# erf sums in long double (80-bit on x86-64: 11 more bits than f64) and rounds once, which keeps
# it within ~1 ulp of the true f64 value; where long double is only f64 the error is a few ulp.
SQRT_PI = np.longdouble("1.7724538509055160272981674833411451827975494561223871")
ERF_SERIES_END = 2.5
# erf(x) = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (2n+1)!!: positive terms, so no cancellation.
# 45 terms reach long double precision up to |x| = 2.5.
ERF_SERIES = [np.longdouble(2 ** n) / np.longdouble(math.prod(range(1, 2 * n + 2, 2))) for n in range(45)]
# erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), evaluated backward from
# depth 45: converged past 1e-16 relative for |x| >= 2.5, where erfc < 5e-4 (so < 0.1 ulp of erf).
ERFC_FRACTION_DEPTH = 45


def erf(x):
    magnitude = np.abs(x).astype(np.longdouble)
    out = np.empty(magnitude.shape, np.longdouble)
    near = magnitude < ERF_SERIES_END
    a = magnitude[near]
    total = np.full_like(a, ERF_SERIES[-1])
    for coefficient in reversed(ERF_SERIES[:-1]):
        total = total * (a * a) + coefficient
    out[near] = 2 / SQRT_PI * a * total * np.exp(-a * a)
    # Beyond |x| = 10, erfc is below 1e-44: clipping keeps inf (and NaN passes through).
    a = np.minimum(magnitude[~near], 10)
    fraction = a.copy()
    for k in range(ERFC_FRACTION_DEPTH, 0, -1):
        fraction = a + (k / 2) / fraction
    out[~near] = 1 - np.exp(-a * a) / (SQRT_PI * fraction)
    return np.copysign(out.astype(x.dtype), x)


def sign(x):
    """-1, 0 or 1; x/|x| for complex; signed zeros and NaN map to themselves, as XLA."""
    if x.dtype.kind == "c":
        magnitude = np.abs(x)
        return np.where(magnitude == 0, 0, x / np.where(magnitude == 0, 1, magnitude)).astype(x.dtype)
    if x.dtype.kind == "f":
        return np.where(x == 0, x, np.sign(x))
    return np.sign(x)


unary("neg", np.negative, NUMERIC)
unary("abs", np.abs, NUMERIC, result_dtype=lambda d: COMPLEX_PART.get(d, d))
unary("sign", sign, NUMERIC)
unary("floor", np.floor, FLOATS)
unary("ceil", np.ceil, FLOATS)
unary("round", round_half_even, FLOATS, doc="round half to even, as numpy.round")
unary("trunc", np.trunc, FLOATS)
unary("exp", np.exp, INEXACT)
unary("exp2", np.exp2, FLOATS)
unary("log", np.log, INEXACT)
unary("log2", np.log2, FLOATS)
unary("log10", np.log10, FLOATS)
unary("log1p", np.log1p, INEXACT)
unary("expm1", np.expm1, INEXACT)
unary("sqrt", np.sqrt, INEXACT)
unary("rsqrt", lambda x: 1 / np.sqrt(x), INEXACT)
unary("cbrt", np.cbrt, FLOATS)
unary("tanh", np.tanh, INEXACT)
unary("sinh", np.sinh, INEXACT)
unary("cosh", np.cosh, INEXACT)
unary("sin", np.sin, INEXACT)
unary("cos", np.cos, INEXACT)
unary("tan", np.tan, INEXACT)
unary("asin", np.arcsin, INEXACT)
unary("acos", np.arccos, INEXACT)
unary("atan", np.arctan, INEXACT)
unary("asinh", np.arcsinh, INEXACT)
unary("acosh", np.arccosh, INEXACT)
unary("atanh", np.arctanh, INEXACT)
unary("logistic", logistic, INEXACT, doc="1 / (1 + exp(-x))")
unary("erf", erf, FLOATS, doc="the error function, 2/sqrt(pi) * integral of exp(-t^2) from 0 to x")
unary("is_finite", np.isfinite, FLOATS, result_dtype=lambda d: "bool")
unary("not", np.invert, BOOL_AND_INTS, doc="logical not of bool, bitwise not of integers")
unary("real", np.real, COMPLEXES, result_dtype=COMPLEX_PART.get)
unary("imag", np.imag, COMPLEXES, result_dtype=COMPLEX_PART.get)
unary("conj", np.conj, COMPLEXES)


# Their derivatives d out / d x (x the operand, out the result), as JAX's JVP rules; complex operands
# follow the same formulas (holomorphic functions, JAX's convention).
def derivative(fn):
    return lambda b, primals, out: fn(b, primals[0], out)


def sqrt_of(b, x):
    return b.op("sqrt", x)


LN2 = math.log(2)
UNARY_DERIVATIVES = {
    "exp": lambda b, x, out: out,
    "exp2": lambda b, x, out: b.scale(out, LN2),
    "log": lambda b, x, out: b.div(b.full_like(x, 1), x),
    "log2": lambda b, x, out: b.div(b.full_like(x, 1 / LN2), x),
    "log10": lambda b, x, out: b.div(b.full_like(x, 1 / math.log(10)), x),
    "log1p": lambda b, x, out: b.div(b.full_like(x, 1), b.add(x, b.full_like(x, 1))),
    "expm1": lambda b, x, out: b.add(out, b.full_like(out, 1)),
    "sqrt": lambda b, x, out: b.div(b.full_like(out, 0.5), out),
    "rsqrt": lambda b, x, out: b.div(b.scale(out, -0.5), x),
    "cbrt": lambda b, x, out: b.div(out, b.scale(x, 3)),
    "tanh": lambda b, x, out: b.op("sub", b.full_like(out, 1), b.mul(out, out)),
    "sinh": lambda b, x, out: b.op("cosh", x),
    "cosh": lambda b, x, out: b.op("sinh", x),
    "sin": lambda b, x, out: b.op("cos", x),
    "cos": lambda b, x, out: b.neg(b.op("sin", x)),
    "tan": lambda b, x, out: b.add(b.full_like(out, 1), b.mul(out, out)),
    "asin": lambda b, x, out: b.op("rsqrt", b.op("sub", b.full_like(x, 1), b.mul(x, x))),
    "acos": lambda b, x, out: b.neg(b.op("rsqrt", b.op("sub", b.full_like(x, 1), b.mul(x, x)))),
    "atan": lambda b, x, out: b.div(b.full_like(x, 1), b.add(b.full_like(x, 1), b.mul(x, x))),
    "asinh": lambda b, x, out: b.op("rsqrt", b.add(b.mul(x, x), b.full_like(x, 1))),
    "acosh": lambda b, x, out: b.op("rsqrt", b.mul(b.op("sub", x, b.full_like(x, 1)), b.add(x, b.full_like(x, 1)))),
    "atanh": lambda b, x, out: b.div(b.full_like(x, 1), b.op("sub", b.full_like(x, 1), b.mul(x, x))),
    "logistic": lambda b, x, out: b.mul(out, b.op("sub", b.full_like(out, 1), out)),
    "erf": lambda b, x, out: b.scale(b.op("exp", b.neg(b.mul(x, x))), 2 / math.sqrt(math.pi)),
}
for _name, _fn in UNARY_DERIVATIVES.items():
    elementwise_derivatives(_name, derivative(_fn))


def abs_direction(b, x, out):
    """JAX's derivative of abs: of a real x, 1 where x >= 0 (at 0 too) and -1 elsewhere; of a complex
    x, the real-linear map t -> re(t conj(x) / |x|), given here by its factor conj(x) / |x| (0 at 0)."""
    if x.type.dtype not in COMPLEXES:
        return b.select(b.op("ge", x, b.zeros_like(x)), b.full_like(x, 1), b.full_like(x, -1))
    nonzero = b.select(b.op("eq", out, b.zeros_like(out)), b.full_like(out, 1), out)
    return b.div(b.op("conj", x), b.op("complex", nonzero, b.zeros_like(nonzero)))


def abs_jvp(b, op, primals, tangents, outs):
    factor = abs_direction(b, primals[0], outs[0])
    product = b.mul(tangents[0], factor)
    return [b.op("real", product) if factor.type.dtype in COMPLEXES else product]


def abs_vjp(b, op, primals, outs, cts):
    """The transpose, in JAX's convention for complex inputs (no conjugation): ct * conj(x) / |x|."""
    factor = abs_direction(b, primals[0], outs[0])
    ct = b.op("complex", cts[0], b.zeros_like(cts[0])) if factor.type.dtype in COMPLEXES else cts[0]
    return [b.mul(ct, factor)]


set_rules("abs", jvp=abs_jvp, vjp=abs_vjp)
linear("neg", lambda b, op, primals, ct: [b.neg(ct)])
# The complex parts, with JAX's transposes: real's is complex(ct, 0), imag's complex(0, -ct).
linear("real", lambda b, op, primals, ct: [b.op("complex", ct, b.zeros_like(ct))])
linear("imag", lambda b, op, primals, ct: [b.op("complex", b.zeros_like(ct), b.neg(ct))])
linear("conj", lambda b, op, primals, ct: [b.op("conj", ct)])
zero_derivative("sign", "floor", "ceil", "round", "trunc", "is_finite", "not")
batch_elementwise_ops("neg", "sign", "floor", "ceil", "round", "trunc", "is_finite", "not", "real", "imag", "conj",
                      "abs", *UNARY_DERIVATIVES)


# ---- binary -----------------------------------------------------------------------------

def binary(name, reference, dtypes, result_dtype=None, doc=""):
    """An elementwise op of two operands of one type."""
    def infer(types, attrs, regions):
        lhs, rhs = types
        require_same_types(name, types)
        require_dtype(name, lhs, dtypes)
        return [lhs.with_dtype(result_dtype(lhs.dtype) if result_dtype else lhs.dtype)]
    define(name, infer=infer, reference=quiet(widen_half(reference)), num_operands=2, doc=doc)


def order_signed_zeros(result, a, b, take_negative):
    """`result` of numpy's maximum/minimum with ties of zeros settled as JAX (and IEEE 754-2019's
    maximum/minimum) settle them, whatever the operands' order: max(+0, -0) = +0, min = -0.
    numpy returns its first operand there."""
    if result.dtype.kind != "f":
        return result
    negative = np.logical_or if take_negative else np.logical_and
    tie = (a == 0) & (b == 0)
    zero = np.where(negative(np.signbit(a), np.signbit(b)), -0.0, 0.0).astype(result.dtype)
    return np.where(tie, zero, result)


def maximum(a, b):
    return order_signed_zeros(np.maximum(a, b), a, b, take_negative=False)


def minimum(a, b):
    return order_signed_zeros(np.minimum(a, b), a, b, take_negative=True)


def divide(a, b):
    """Float division; integer division rounds toward zero, with XLA's values where C leaves it
    undefined: x / 0 is -1 (all bits set) and INT_MIN / -1 wraps to INT_MIN."""
    if a.dtype.kind not in "iu":
        return a / b
    signed = a.dtype.kind == "i"
    undefined = (b == 0) | (b == -1) if signed else b == 0
    safe_b = np.where(undefined, 1, b)
    # a - fmod(a, b) is a multiple of b closer to zero than a, so the floor division is exact.
    quotient = (a - np.fmod(a, safe_b)) // safe_b
    if signed:
        quotient = np.where(b == -1, np.negative(a), quotient)
    return np.where(b == 0, -1 if signed else np.iinfo(a.dtype).max, quotient).astype(a.dtype)


def remainder(a, b):
    """Remainder with the sign of the dividend (C fmod); for integers x % 0 = x, as XLA."""
    if a.dtype.kind not in "iu":
        return np.fmod(a, b)
    undefined = (b == 0) | (b == -1) if a.dtype.kind == "i" else b == 0
    rest = np.fmod(a, np.where(undefined, 1, b))
    return np.where(b == 0, a, rest).astype(a.dtype)


def power(a, b):
    """numpy.power; for signed integers a negative exponent gives XLA's values: 1 for a = 1,
    (-1)**b for a = -1, and 0 otherwise (1/a**n truncated)."""
    if a.dtype.kind not in "i":
        return np.power(a, b)
    nonneg = np.power(a, np.where(b < 0, 0, b))
    negative_exponent = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(b < 0, negative_exponent, nonneg).astype(a.dtype)


# Shifts act on the bit pattern; the amount is read as unsigned, so a negative amount or one of at
# least the bit width shifts every bit out (XLA): 0 for logical shifts, the sign for arithmetic.

def shift_amount_ok(a, b):
    return (b >= 0) & (b < a.dtype.itemsize * 8)


def shift_left(a, b):
    ok = shift_amount_ok(a, b)
    return np.where(ok, np.left_shift(a, np.where(ok, b, 0).astype(a.dtype)), 0).astype(a.dtype)


def shift_right_logical(a, b):
    unsigned = a.view(np.dtype(f"u{a.dtype.itemsize}"))
    ok = shift_amount_ok(a, b)
    shifted = np.right_shift(unsigned, np.where(ok, b, 0).astype(unsigned.dtype))
    return np.where(ok, shifted, 0).astype(unsigned.dtype).view(a.dtype)


def shift_right_arithmetic(a, b):
    signed = a.view(np.dtype(f"i{a.dtype.itemsize}"))
    amount = np.where(shift_amount_ok(a, b), b, a.dtype.itemsize * 8 - 1).astype(signed.dtype)
    return np.asarray(np.right_shift(signed, amount)).view(a.dtype)


# ---- fma ------------------------------------------------------------------------------------
# a*b + c rounded once, the multiply-add every AMDGPU and x86-64 CPU has. The complex product uses
# it (passes/expand_complex.py), as XLA's does: a part rounded once is finite wherever the exact
# part is, even when one of its two products alone overflows. f32 and f64 only: the parts of the
# complex dtypes.

def two_sum(x, y):
    """s + e == x + y exactly, s = fl(x + y) (Knuth's TwoSum; exact unless s overflows)."""
    s = x + y
    y_part = s - x
    return s, (x - (s - y_part)) + (y - y_part)


def sum_to_odd(x, y):
    """x + y rounded to odd: truncated, and the last bit set when inexact. Rounding that once more
    to nearest at 2 or more fewer bits gives the correctly rounded x + y (Boldo and Melquiond,
    "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd", IEEE
    Trans. Computers 57(4), 2008)."""
    s, e = two_sum(x, y)
    bits = s.view(np.uint64 if s.dtype == np.float64 else np.uint32)
    even = (bits & 1) == 0
    toward = np.where(e > 0, np.inf, -np.inf).astype(s.dtype)
    return np.where((e != 0) & even & np.isfinite(s), np.nextafter(s, toward), s)


def veltkamp_split(x):
    """Veltkamp's split of f64 x into 26 + 27 significant bits: hi + lo == x (|x| < 2^996)."""
    t = x * 134217729.0   # 2^27 + 1
    hi = t - (t - x)
    return hi, x - hi


def exact_fma(a, b, c):
    """a*b + c in Python's exact rationals, rounded once by int / int (correctly rounded), for
    finite operands with a nonzero product; an exact zero sum is +0, as IEEE rounds it."""
    from fractions import Fraction
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def fma(a, b, c):
    if a.dtype == np.float32:
        # The f64 product of two f32 is exact, and its sum with c rounded to odd then to f32 is a*b + c
        # rounded once (53 >= 24 + 2 bits; no f64 overflow or underflow from f32 operands).
        wide = [np.asarray(x, np.float64) for x in (a, b, c)]
        return sum_to_odd(wide[0] * wide[1], wide[2]).astype(np.float32)
    a, b, c = np.broadcast_arrays(*(np.asarray(x, np.float64) for x in (a, b, c)))
    # Boldo and Melquiond's emulated fma (reference above): the exact product as hi + lo (Dekker),
    # c + hi as s + e, then s + (e + lo rounded to odd) rounded to nearest.
    a_hi, a_lo = veltkamp_split(a)
    b_hi, b_lo = veltkamp_split(b)
    p_hi = a * b
    p_lo = ((a_hi * b_hi - p_hi) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    s, e = two_sum(c, p_hi)
    result = s + sum_to_odd(e, p_lo)
    # A finite product plus a non-finite c is c; a non-finite operand of the product, or a zero
    # product (exact, and its sum signed as IEEE signs a sum of zeros), gives the plain IEEE a*b + c.
    finite_product = np.isfinite(a) & np.isfinite(b)
    plain = ~finite_product | (a == 0) | (b == 0)
    result = np.select([finite_product & ~np.isfinite(c), plain], [c, a * b + c], result)
    # Outside these bounds a split or the product's low part can overflow or underflow.
    safe = ((np.abs(p_hi) >= 2.0 ** -900) & (np.abs(p_hi) <= 2.0 ** 1000) & (np.abs(a) <= 2.0 ** 990)
            & (np.abs(b) <= 2.0 ** 990) & (np.abs(c) <= 2.0 ** 1000))
    exact = ~plain & np.isfinite(c) & ~safe
    flat = result.reshape(-1)
    for i in np.flatnonzero(exact):
        flat[i] = exact_fma(a.flat[i], b.flat[i], c.flat[i])
    return result


def fma_infer(types, attrs, regions):
    require(types[0] == types[1] == types[2], f"fma: operands must have one type, got {', '.join(map(str, types))}")
    require_dtype("fma", types[0], ("f32", "f64"))
    return [types[0]]


define("fma", infer=fma_infer, reference=quiet(fma), num_operands=3, doc="a*b + c rounded once (f32, f64)")

def multiply(a, b):
    """numpy's product; a complex one as XLA's CPU code computes it, one product of each part fused
    into an fma (passes/expand_complex.py's cmul)."""
    if a.dtype.kind != "c":
        return np.multiply(a, b)
    out = np.empty(a.shape, a.dtype)
    out.real = fma(a.real, b.real, -(a.imag * b.imag))
    out.imag = fma(a.imag, b.real, a.real * b.imag)
    return out


binary("add", np.add, NUMERIC)
binary("sub", np.subtract, NUMERIC)
binary("mul", multiply, NUMERIC)
binary("div", divide, NUMERIC, doc="float division; integer division rounds toward zero, x/0 = -1")
binary("rem", remainder, INTS + FLOATS, doc="remainder with the sign of the dividend, x%0 = x for integers")
binary("pow", power, NUMERIC)
binary("max", maximum, ("bool",) + INTS + FLOATS, doc="NaN-propagating maximum; +0 is above -0")
binary("min", minimum, ("bool",) + INTS + FLOATS, doc="NaN-propagating minimum; -0 is below +0")
binary("atan2", np.arctan2, FLOATS)
binary("and", np.bitwise_and, BOOL_AND_INTS)
binary("or", np.bitwise_or, BOOL_AND_INTS)
binary("xor", np.bitwise_xor, BOOL_AND_INTS)
binary("shift_left", shift_left, INTS)
binary("shift_right_logical", shift_right_logical, INTS, doc="zero-filling right shift")
binary("shift_right_arithmetic", shift_right_arithmetic, INTS,
       doc="sign-filling right shift of the bit pattern (of unsigned operands too)")


def quotient_partial(b, primals, out):
    return b.div(b.full_like(out, 1), primals[1])


def pow_exponent_partial(b, primals, out):
    """d x**y / d y = log(x) x**y, 0 where x is 0 (JAX's choice: the limit for y > 0)."""
    x = primals[0]
    safe = b.select(b.op("eq", x, b.zeros_like(x)), b.full_like(x, 1), x)
    return b.mul(b.op("log", safe), out)


def pow_base_partial(b, primals, out):
    """d x**y / d x = y x**(y-1) (0 where y is 0)."""
    x, y = primals
    power = b.mul(y, b.op("pow", x, b.op("sub", y, b.full_like(y, 1))))
    return b.select(b.op("eq", y, b.zeros_like(y)), b.zeros_like(y), power)


def pick_partial(chosen, tie):
    """max/min: the operand that is chosen gets the derivative, each half of it on a tie (as JAX)."""
    def partial(b, primals, out):
        x, y = primals
        ones = b.full_like(x, 1)
        on_tie = b.select(b.op("eq", x, y), b.full_like(x, 0.5), b.zeros_like(x))
        return b.select(b.op(chosen, x, y) if tie == 0 else b.op(chosen, y, x), ones, on_tie)
    return partial


def atan2_partial(which):
    """atan2(x, y): d/dx = y / (x^2 + y^2), d/dy = -x / (x^2 + y^2)."""
    def partial(b, primals, out):
        x, y = primals
        denominator = b.add(b.mul(x, x), b.mul(y, y))
        return b.div(y, denominator) if which == 0 else b.div(b.neg(x), denominator)
    return partial


linear("add", lambda b, op, primals, ct: [ct, ct])
linear("sub", lambda b, op, primals, ct: [ct, b.neg(ct)])
elementwise_derivatives("mul", lambda b, p, out: p[1], lambda b, p, out: p[0])
elementwise_derivatives("div", quotient_partial, lambda b, p, out: b.neg(b.div(out, p[1])))
elementwise_derivatives("pow", pow_base_partial, pow_exponent_partial)
elementwise_derivatives("max", pick_partial("gt", 0), pick_partial("gt", 1))
elementwise_derivatives("min", pick_partial("lt", 0), pick_partial("lt", 1))
elementwise_derivatives("atan2", atan2_partial(0), atan2_partial(1))
# rem(x, y) = x - y trunc(x / y): 1 and -trunc(x / y) almost everywhere.
elementwise_derivatives("rem", lambda b, p, out: b.full_like(out, 1),
                        lambda b, p, out: b.neg(b.op("trunc", b.div(p[0], p[1]))))
elementwise_derivatives("fma", lambda b, p, out: p[1], lambda b, p, out: p[0], lambda b, p, out: b.full_like(out, 1))
zero_derivative("and", "or", "xor", "shift_left", "shift_right_logical", "shift_right_arithmetic")
batch_elementwise_ops("add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "fma", "and", "or", "xor",
                      "shift_left", "shift_right_logical", "shift_right_arithmetic")


def make_complex(re, im):
    dtype = np.complex64 if re.dtype == np.float32 else np.complex128
    out = np.empty(re.shape, dtype)
    out.real, out.imag = re, im
    return out


binary("complex", make_complex, ("f32", "f64"), result_dtype=COMPLEX_OF.get, doc="re + i*im")
batch_elementwise_ops("complex")
linear("complex", lambda b, op, primals, ct: [b.op("real", ct), b.neg(b.op("imag", ct))])

for _name, _reference in [("eq", np.equal), ("ne", np.not_equal)]:
    binary(_name, _reference, ALL_DTYPES, result_dtype=lambda d: "bool")
for _name, _reference in [("lt", np.less), ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]:
    binary(_name, _reference, ("bool",) + INTS + FLOATS, result_dtype=lambda d: "bool")
zero_derivative("eq", "ne", "lt", "le", "gt", "ge")
batch_elementwise_ops("eq", "ne", "lt", "le", "gt", "ge")


# ---- select, clamp, convert, constant, iota -------------------------------------------------

def select_infer(types, attrs, regions):
    pred, on_true, on_false = types
    require(pred.dtype == "bool", f"select: predicate must be bool, got {pred}")
    require(on_true == on_false, f"select: branches must have the same type, got {on_true} and {on_false}")
    require(pred.shape == on_true.shape, f"select: predicate shape {pred} does not match {on_true}")
    return [on_true]


define("select", infer=select_infer, reference=lambda p, a, b: np.where(p, a, b), num_operands=3,
       doc="pred ? on_true : on_false, elementwise")


def select_transpose(b, op, primals, ct):
    pred = primals[0]
    zeros = b.zeros_like(ct)
    return [None, b.select(pred, ct, zeros), b.select(pred, zeros, ct)]


def select_jvp(b, op, primals, tangents, outs):
    if tangents[1] is None and tangents[2] is None:
        return [None]
    on_true, on_false = b.zeros_if_none(tangents[1:], primals[1:])
    return [b.select(primals[0], on_true, on_false)]


set_rules("select", jvp=select_jvp, vjp=lambda b, op, primals, outs, cts: select_transpose(b, op, primals, cts[0]),
          batch=batch_elementwise)

CLAMP_DTYPES = ("bool",) + INTS + FLOATS


def clamp_infer(types, attrs, regions):
    low, x, high = types
    require_dtype("clamp", x, CLAMP_DTYPES)
    for bound in (low, high):
        require(bound.dtype == x.dtype and bound.shape in ((), x.shape),
                f"clamp: bounds {low} and {high} must be scalars or have the type of the operand {x}")
    return [x]


def clamp(low, x, high):
    return minimum(maximum(x, low), high)


define("clamp", infer=clamp_infer, reference=quiet(widen_half(clamp)), num_operands=3,
       doc="operands: min, x, max (scalars or x's shape); min(max(x, min), max), NaN-propagating")


def clamp_partial(which):
    """clamp(low, x, high): the derivative goes to x inside [low, high], else to the bound that holds."""
    def partial(b, primals, out):
        low, x, high = (b.broadcast(v, x_shape, ()) if v.type.shape != x_shape else v
                        for v, x_shape in zip(primals, [primals[1].type.shape] * 3))
        below, above = b.op("lt", x, low), b.op("gt", x, high)
        chosen = {0: below, 2: above, 1: b.op("not", b.op("or", below, above))}[which]
        return b.select(chosen, b.full_like(x, 1), b.zeros_like(x))
    return partial


def clamp_vjp(b, op, primals, outs, cts):
    cts_full = [b.mul(cts[0], clamp_partial(i)(b, primals, outs[0])) for i in range(3)]
    return [ct if x.type.shape == ct.type.shape else b.sum(ct, range(ct.type.ndim))
            for ct, x in zip(cts_full, primals)]


def clamp_jvp(b, op, primals, tangents, outs):
    total = None
    for i, t in enumerate(tangents):
        if t is not None:
            t = t if t.type.shape == outs[0].type.shape else b.broadcast(t, outs[0].type.shape, ())
            total = b.add(total, b.mul(t, clamp_partial(i)(b, primals, outs[0])))
    return [total]


def clamp_batch(b, op, operands, batched):
    shape = (b.axis_size,) + operands[1].type.shape[1 if batched[1] else 0:]
    full = []
    for x, f in zip(operands, batched):
        rank = x.type.ndim - (1 if f else 0)
        if rank == 0 and len(shape) > 1:  # a scalar bound: to the operand's shape
            x = b.broadcast(x, shape, (0,) if f else ())
        else:
            x = b.move_batch_to_front(x, f)
        full.append(x)
    return b.ops("clamp", full, {}), [True]


set_rules("clamp", jvp=clamp_jvp, vjp=clamp_vjp, batch=clamp_batch)


def convert(x, *, dtype):
    """XLA's convert: complex -> real keeps the real part, -> bool is x != 0, float -> int saturates
    (NaN -> 0), int -> int wraps; everything else rounds to nearest once (f64 -> f16/bf16 too, as
    the GPUs' conversions do; XLA on the CPU rounds those twice, through f32)."""
    source, target = dtype_name(x.dtype), NUMPY_DTYPES[dtype]
    if source in COMPLEXES and dtype not in COMPLEXES:
        x, source = x.real, COMPLEX_PART[source]
    if dtype == "bool":
        return np.asarray(x != 0)
    if source in FLOATS and dtype in INTS:
        return saturate_to_int(x.astype(np.float64), target)
    return x.astype(target)


def saturate_to_int(wide, target):
    info = np.iinfo(target)
    # float(info.max) rounds up to a power of two for 64-bit types: compare, never cast, out of range.
    low, high = float(info.min), float(info.max)
    in_range = np.where((wide > low) & (wide < high), wide, 0.0)  # NaN fails both tests: 0
    out = np.where(wide >= high, info.max, in_range.astype(target))
    return np.where(wide <= low, info.min, out).astype(target)


define("convert", infer=lambda types, attrs, regions: [types[0].with_dtype(attrs["dtype"])],
       reference=quiet(convert), attrs={"dtype": "dtype"}, num_operands=1,
       doc="element type conversion (complex -> real keeps the real part, float -> int saturates, NaN -> 0)")


def convert_jvp(b, op, primals, tangents, outs):
    (t,) = tangents
    if t is None or not is_differentiable(outs[0].type):
        return [None]
    return [b.convert(t, op.attrs["dtype"])]


def convert_vjp(b, op, primals, outs, cts):
    (x,) = primals
    return [b.convert(cts[0], x.type.dtype) if is_differentiable(x.type) else None]


set_rules("convert", jvp=convert_jvp, vjp=convert_vjp, batch=batch_elementwise)


def constant_infer(types, attrs, regions):
    value = attrs["value"]
    require(value.dtype in NUMPY_DTYPES.values(), f"constant: unsupported dtype {value.dtype}")
    return [TensorType(dtype_name(value.dtype), tuple(value.shape))]


define("constant", infer=constant_infer, reference=lambda *, value: value.copy(), attrs={"value": "array"},
       num_operands=0, doc="a literal array")


def iota_infer(types, attrs, regions):
    shape, dimension = attrs["shape"], attrs["dimension"]
    require(all(d >= 0 for d in shape), f"iota: negative dimension in shape {list(shape)}")
    require(0 <= dimension < len(shape), f"iota: dimension {dimension} out of range for shape {list(shape)}")
    require_dtype("iota", TensorType(attrs["dtype"], tuple(shape)), NUMERIC, "result")
    return [TensorType(attrs["dtype"], tuple(shape))]


def iota(*, dtype, shape, dimension):
    counts = np.arange(shape[dimension]).astype(NUMPY_DTYPES[dtype])
    view = counts.reshape([-1 if i == dimension else 1 for i in range(len(shape))])
    return np.broadcast_to(view, shape).copy()


define("iota", infer=iota_infer, reference=iota, attrs={"dtype": "dtype", "shape": "ints", "dimension": "int"},
       num_operands=0, doc="0, 1, 2, ... along `dimension`, broadcast to `shape`")
