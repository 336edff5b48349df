"""Elementwise ops, casts and where: how the generator calls them, their JAX result dtypes, and their
oracles with the error propagation of the package docstring's model."""
from __future__ import annotations

import math

import numpy as np

from .jaxtypes import kind, np_dtype, promote, real_of, to_inexact
from .values import UNKNOWN, ZERO_SIGN_FREE, Val, exact, finfo, rounded, ulp, unit_roundoff

# Unary functions of floats: (source template, float64 function, how an operand's error propagates,
# ulps the compiled function may be off (the math library's measured maximum, README, rounded up)).
# Propagation: ("lip", L) |f(x') - f(x)| <= L |x' - x|; "inc"/"dec" monotone; "step" piecewise
# constant (the result is UNKNOWN where the operand's interval holds a jump); "none" UNKNOWN.
FLOAT_UNARY = {
    "exp": ("cnp.exp({})", np.exp, "inc", 4), "exp2": ("cnp.exp2({})", np.exp2, "inc", 4),
    "expm1": ("cnp.expm1({})", np.expm1, "inc", 4), "log": ("cnp.log({})", np.log, "inc", 4),
    "log1p": ("cnp.log1p({})", np.log1p, "inc", 4), "log2": ("cnp.log2({})", np.log2, "inc", 4),
    "log10": ("cnp.log10({})", np.log10, "inc", 4), "tanh": ("cnp.tanh({})", np.tanh, "inc", 4),
    "logistic": ("lax.logistic({})", lambda x: 1 / (1 + np.exp(-x)), "inc", 4), "erf": ("lax.erf({})", np.vectorize(math.erf, otypes=[np.float64]), "inc", 4),
    "atan": ("cnp.arctan({})", np.arctan, "inc", 4), "asin": ("cnp.arcsin({})", np.arcsin, "inc", 4),
    "acos": ("cnp.arccos({})", np.arccos, "dec", 4), "sinh": ("cnp.sinh({})", np.sinh, "inc", 4),
    "asinh": ("cnp.arcsinh({})", np.arcsinh, "inc", 4), "cbrt": ("cnp.cbrt({})", np.cbrt, "inc", 4),
    "sin": ("cnp.sin({})", np.sin, ("lip", 1.0), 4), "cos": ("cnp.cos({})", np.cos, ("lip", 1.0), 4),
    "tan": ("cnp.tan({})", np.tan, "none", 4), "cosh": ("cnp.cosh({})", np.cosh, "none", 4),
    "sqrt": ("cnp.sqrt({})", np.sqrt, "inc", 0), "rsqrt": ("lax.rsqrt({})", lambda x: 1 / np.sqrt(x), "dec", 4),
    "reciprocal": ("cnp.reciprocal({})", lambda x: 1 / x, "none", 0),
    "floor": ("cnp.floor({})", np.floor, "step", 0), "ceil": ("cnp.ceil({})", np.ceil, "step", 0),
    "round": ("cnp.round({})", np.round, "step", 0), "trunc": ("cnp.trunc({})", np.trunc, "step", 0),
    "sign": ("cnp.sign({})", np.sign, "step", 0),
}
# Unary ops of any numeric dtype that keep it (ints wrap): template, function, propagation.
SAME_UNARY = {
    "neg": ("-{}", np.negative, ("lip", 1.0)), "abs": ("cnp.abs({})", np.abs, ("lip", 1.0)),
    "square": ("cnp.square({})", np.square, "square"),
}
PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit}
COMPARISONS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
               "==": np.equal, "!=": np.not_equal}
ARITHMETIC = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "%": np.remainder,
              "//": np.floor_divide, "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
              "arctan2": np.arctan2, "&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor,
              "<<": None, ">>": None}


def magnitude(v: Val) -> np.ndarray:
    return np.abs(v.wide()).astype(np.float64)


def convert(v: Val, dtype: str) -> Val:
    """`v.astype(dtype)` as JAX does it: floats to integers truncate and saturate, NaN gives 0;
    complex to real keeps the real part."""
    if dtype == v.dtype:
        return v
    src, dst = v.kind, kind(dtype)
    wide = v.wide()
    with np.errstate(all="ignore"):
        if src == "c" and dst != "c":
            wide, src = wide.real, "f"
        if dst == "b":
            ref = wide != 0
            err = np.where((v.err > 0) & ~(np.abs(wide) > v.err), UNKNOWN, 0.0)
            return Val(ref, dtype, err)
        if dst in "iu" and src in "fc":
            info = np.iinfo(np_dtype(dtype))
            def to_int(x):
                t = np.clip(np.nan_to_num(np.trunc(x), nan=0.0, posinf=float(info.max), neginf=float(info.min)),
                            float(info.min), float(info.max))
                big = t >= 2.0 ** (info.bits - (info.min < 0))   # 2^63 or 2^64 rounds up from the max
                return t, big
            t, big = to_int(wide)
            ref = t.astype(np_dtype(dtype))
            ref = np.where(big, np.array(info.max, np_dtype(dtype)), ref).astype(np_dtype(dtype))
            lo, _ = to_int(wide - v.err)
            hi, _ = to_int(wide + v.err)
            err = np.where((v.err > 0) & (lo != hi), UNKNOWN, 0.0)
            err = np.where(np.isinf(v.err), UNKNOWN, err)
            return Val(ref, dtype, err)
        if dst in "iub":
            return Val(v.ref.astype(np_dtype(dtype)), dtype, np.where(v.err > 0, UNKNOWN, 0.0))
        if src in "iub":   # integers round once into the float type
            ref = v.ref.astype(np_dtype(dtype))
            return Val(ref, dtype, np.where(v.err > 0, UNKNOWN, 0.0))
        return rounded(wide, dtype, v.err)


def integer_pow(v: Val, n: int) -> Val:
    """jnp.power(x, n) of a Python int n is lax.integer_pow: repeated squaring in x's dtype, each
    step rounding, so the relative error grows to about |n| u. A negative n takes the reciprocal of
    x^|n| in x's dtype, which is 0 where x^|n| overflows it (1 / inf), though x^n itself would be a
    subnormal (fuzz seed 1207, program 1207003684); near that edge it may be either."""
    x = v.wide()
    slack = 2 * (abs(n) + 1) * unit_roundoff(v.dtype)
    with np.errstate(all="ignore"):
        ref = np.power(x, float(n))
        err = np.where(v.err > 0, UNKNOWN, slack * np.abs(ref))
        if n < 0 and v.kind == "f":
            magnitude, largest = np.abs(np.power(x, float(-n))), float(finfo(v.dtype).max)
            overflows, may_overflow = magnitude * (1 - slack) > largest, magnitude * (1 + slack) > largest
            ref = np.where(overflows, np.copysign(0.0, ref), ref)
            err = np.where(may_overflow & ~overflows & (v.err == 0), np.abs(ref), err)
    return rounded(ref, v.dtype, np.where(np.isfinite(ref) & (ref != 0), err, np.where(v.err > 0, UNKNOWN, 0.0)))


def unary_float(name: str, v: Val) -> Val:
    template, fn, rule, ulps = FLOAT_UNARY[name]
    dtype = to_inexact(v.dtype)
    v = convert(v, dtype)
    x = v.wide()
    with np.errstate(all="ignore"):
        y = fn(x)
        if name == "sign" and v.kind == "f":
            y = np.where(x == 0, x, y)   # sign(-0.0) is -0.0
        e = v.err
        if rule == "none":
            err = np.where(e > 0, UNKNOWN, 0.0)
        elif rule in ("inc", "dec", "step"):
            lo, hi = fn(x - e), fn(x + e)
            spread = np.maximum(np.abs(lo - y), np.abs(hi - y))
            # An undetermined operand (infinite bound) may be NaN (a product's inf * 0), which no
            # interval holds: its image is undetermined too, bounded function or not.
            jump = (np.isnan(lo) != np.isnan(y)) | (np.isnan(hi) != np.isnan(y)) | np.isinf(e)
            if rule == "step":
                spread = np.where(lo != hi, UNKNOWN, 0.0)
            # the interval's ends may be zeros of both signs (trunc of -0.1 and 0.1, or of a cummax's
            # sign-free zero): the result's sign is then open
            spread = np.where((spread == 0) & (np.signbit(lo) != np.signbit(hi)), ZERO_SIGN_FREE, spread)
            err = np.where(e > 0, np.where(jump, UNKNOWN, spread), 0.0)
        else:
            err = rule[1] * e
    if ulps and dtype == "float64":
        ulps += 2   # numpy's own float64 result is off by up to about 1 ulp too
    return rounded(y, dtype, err, ulps)


def unary_same(name: str, v: Val) -> Val:
    fn, rule = SAME_UNARY[name][1:]
    dtype = real_of(v.dtype) if name == "abs" else v.dtype
    x = v.wide()
    with np.errstate(all="ignore"):
        if v.kind in "iu":
            return Val(fn(v.ref).astype(np_dtype(dtype)), dtype, v.err.copy())
        y = fn(x)
        err = 2 * np.abs(x) * v.err + v.err ** 2 if rule == "square" else v.err
        ulps = 2 if (name == "square" and v.kind == "c") or (name == "abs" and v.kind == "c") else 0
        return rounded(y, dtype, err, ulps)


def predicate(name: str, v: Val) -> Val:
    x = v.wide()
    ref = PREDICATES[name](x)
    err = np.where(v.err > 0, UNKNOWN, 0.0)
    if name == "signbit":
        # IEEE 754 leaves the sign of a NaN that an operation makes (0/0, a NaN min) to the
        # implementation, and x86, numpy and LLVM's folding choose differently: compared elsewhere
        # (tests/frontend/test_bitcast.py) on NaNs given as inputs.
        err = np.where(np.isnan(x), UNKNOWN, err)
    return Val(ref, "bool", err)


def invert(v: Val) -> Val:
    return Val(~v.ref, v.dtype, v.err.copy())


def binary_dtype(name: str, a: str, b: str) -> str | None:
    """JAX's result dtype of `a <name> b` (a dtype name or weak "i*"/"f*"/"c*"), None where JAX or
    this tester does not take those operands."""
    t, _ = promote(a, b)
    k = kind(t)
    if name in COMPARISONS:
        return "bool" if k != "c" or name in ("==", "!=") else None
    if name in ("&", "|", "^"):
        return t if k in "biu" else None
    if name in ("<<", ">>", "//"):
        return t if k in "iu" else None
    if name == "-" and k == "b":
        return None
    if name in ("/", "arctan2"):
        t = to_inexact(t)
        return t if name == "/" or kind(t) == "f" else None
    if name in ("%", "maximum", "minimum"):
        return t if k in "iuf" else None
    if name == "power":
        return t if k == "f" else None
    return t


def binary(name: str, a: Val, b: Val, dtype: str) -> Val:
    """`a <name> b` of JAX: both operands converted to the promoted type, then the op."""
    compute = dtype if name not in COMPARISONS else promote(a.type_name, b.type_name)[0]
    a, b = convert(a, compute), convert(b, compute)
    ea, eb = np.broadcast_arrays(a.err, b.err)
    k = kind(compute)
    with np.errstate(all="ignore"):
        if k in "iub":
            return integer_binary(name, a, b, dtype, np.where((ea > 0) | (eb > 0), UNKNOWN, 0.0))
        x, y = a.wide(), b.wide()
        mx, my = np.abs(x), np.abs(y)
        if name in COMPARISONS:
            ref = COMPARISONS[name](x, y)
            close = ~(np.abs(x - y) > ea + eb)
            err = np.where(((ea > 0) | (eb > 0)) & close, UNKNOWN, 0.0)
            return Val(np.asarray(ref), "bool", err)
        ulps = 0
        if name in ("+", "-"):
            err = ea + eb
        elif name == "*":
            err = mx * eb + my * ea + ea * eb
            if k == "c":
                err = err + 2 * ulp(mx * my, compute)
        elif name == "/":
            # (mx eb + my ea) / (my (my - eb)), divided through by my first: my^2 may overflow.
            err = np.where(my > eb, ((mx / my) * eb + ea) / (my - eb), UNKNOWN)
            err = np.where((ea > 0) | (eb > 0), err, 0.0)
            if k == "c":
                err = err + 8 * ulp(mx / my, compute)
                # XLA divides by |y|^2 in the operands' precision: where that underflows, its answer
                # is 0/0 or x/0, NaN or inf (fuzz seed 2828, program 2828011404: -0 / 9.2e-41)
                err = np.where(my * my < finfo(compute).tiny, UNKNOWN, err)
        elif name in ("maximum", "minimum"):
            err = np.maximum(ea, eb)
        else:   # %, power, arctan2: defined only for exact operands here
            err = np.where((ea > 0) | (eb > 0), UNKNOWN, 0.0)
            ulps = 0 if name == "%" else 4
        ref = ARITHMETIC[name](x, y)
        if name == "%":   # a zero remainder takes x's sign (C's fmod, as XLA's rem), not numpy's y's
            ref = np.where(ref == 0, np.copysign(0.0, x), ref)
        if name == "power":
            # -inf to a finite non-integer power is +inf above 0 and +0 below (IEEE 754's pow, as
            # XLA's), where numpy's wide power gives NaN (fuzz seed 3939, program 3939016082)
            fraction = np.isneginf(x) & np.isfinite(y) & (y != np.round(y))
            ref = np.where(fraction, np.where(y > 0, np.inf, 0.0), ref)
        if name in ("maximum", "minimum"):
            ref = np.where(np.isnan(x) | np.isnan(y), np.nan, ref)
            err = np.where((x == 0) & (y == 0) & (np.signbit(x) != np.signbit(y)) & (err == 0),
                           ZERO_SIGN_FREE, err)
        # An exact zero made from an operand whose value or zero sign is open has an open sign too
        # (0 times a zero of open sign; fuzz seed 1919, program 1919007186)
        err = np.where((ref == 0) & (err == 0) & ((ea > 0) | (eb > 0)), ZERO_SIGN_FREE, err)
        return rounded(ref, dtype, err, ulps)


def integer_binary(name, a: Val, b: Val, dtype: str, err) -> Val:
    x, y = np.broadcast_arrays(a.ref, b.ref)
    if name in ("//", "%"):
        zero = y == 0
        safe = np.where(zero, np.ones_like(y), y)
        if kind(dtype) == "i":
            lowest = np.iinfo(x.dtype).min
            overflow = (x == lowest) & (safe == -1)   # the one quotient that wraps: JAX gives x, rem 0
            safe = np.where(overflow, np.ones_like(y), safe)
        ref = np.floor_divide(x, safe) if name == "//" else np.remainder(x, safe)
        if kind(dtype) == "i" and name == "%":
            ref = np.where(overflow, 0, ref)
        # division by zero is XLA's own (-1 quotient, remainder x) behind jnp's floor adjustment;
        # this tester leaves it to the op tests
        err = np.where(zero, UNKNOWN, err)
    elif name in ("<<", ">>"):
        bits = np.iinfo(x.dtype).bits
        wide_shift = (y < 0) | (y >= bits)
        s = np.where(wide_shift, 0, y).astype(x.dtype)
        ref = np.left_shift(x, s) if name == "<<" else np.right_shift(x, s)
        fill = np.where(x < 0, -1, 0).astype(x.dtype) if name == ">>" else np.zeros_like(x)
        ref = np.where(wide_shift, fill, ref)
    elif name in COMPARISONS:
        ref = COMPARISONS[name](x, y)
    elif kind(dtype) == "b" and name in ("+", "*", "maximum", "minimum"):
        ref = {"+": np.logical_or, "*": np.logical_and, "maximum": np.logical_or, "minimum": np.logical_and}[name](x, y)
    else:
        ref = ARITHMETIC[name](x, y)
    return Val(np.asarray(ref).astype(np_dtype(dtype)), dtype, np.asarray(err, np.float64))


def where(c: Val, a: Val, b: Val, dtype: str) -> Val:
    a, b = convert(a, dtype), convert(b, dtype)
    shape = np.broadcast_shapes(c.shape, a.shape, b.shape)
    cr, ar, br = (np.broadcast_to(x, shape) for x in (c.ref, a.ref, b.ref))
    ce, ae, be = (np.broadcast_to(x, shape) for x in (c.err, a.err, b.err))
    ref = np.where(cr, ar, br)
    err = np.where(ce > 0, UNKNOWN, np.where(cr, ae, be))
    return Val(np.array(ref), dtype, np.array(err, np.float64))


def scalar_val(value, dtype: str) -> Val:
    """A Python scalar operand, as JAX converts it: to the other operand's promoted dtype."""
    return exact(np.array(value).astype(np_dtype(dtype)) if kind(dtype) != "b" else np.array(bool(value)), dtype)


def weak(value) -> str:
    return "c*" if isinstance(value, complex) else "f*" if isinstance(value, float) else "i*"


def fits(value, dtype: str) -> bool:
    """Whether Python scalar `value` converts to `dtype` without JAX's overflow error."""
    k = kind(dtype)
    if k in "iu":
        info = np.iinfo(np_dtype(dtype))
        return isinstance(value, int) and info.min <= value <= info.max
    if k == "f":
        return not isinstance(value, complex) and (not np.isfinite(value) or abs(value) <= float(finfo(dtype).max))
    return k == "c"


def float_domain(v: Val) -> bool:
    return v.kind in "iubf"

