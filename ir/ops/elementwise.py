"""Elementwise ops: unary and binary math, comparisons, select, convert, constant, iota.

Elementwise ops take operands of one shape and (but for select and complex) one dtype: the
frontend broadcasts and promotes before it binds them, as lax does. f16 and bf16 are computed
in f32 by the references and rounded once at the end, as XLA's CPU backend does.
"""
import numpy as np

from ..opdef import define, require, require_dtype, require_same_types
from ..types import COMPLEX_OF, COMPLEX_PART, COMPLEXES, FLOATS, INEXACT, INTS, NUMERIC, NUMPY_DTYPES, TensorType

BOOL_AND_INTS = ("bool",) + INTS
ALL_DTYPES = tuple(NUMPY_DTYPES)


def widen_half(fn):
    """Run a numpy function on f16/bf16 arrays in f32 and round the result back once."""
    def run(*arrays):
        dtype = arrays[0].dtype
        if dtype.itemsize == 2 and dtype.kind not in "iub":
            result = fn(*(a.astype(np.float32) for a in arrays))
            return result.astype(dtype) if result.dtype.kind == "f" else result
        return fn(*arrays)
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
    # 1/(1+exp(-x)) without overflow warnings for large negative x.
    return 1 / (1 + np.exp(-x))


def erf(x):
    # numpy has no erf; a float64 series/continued-fraction free formulation via math.erf per
    # element would be slow, so use the vectorised Abramowitz-Stegun-free route through
    # np.frompyfunc only for the reference: exactness matters more than speed here.
    import math
    out = np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)).astype(np.float64)
    return out.astype(x.dtype)


def sign(x):
    if x.dtype.kind == "c":
        magnitude = np.abs(x)
        return np.where(magnitude == 0, 0, x / np.where(magnitude == 0, 1, magnitude)).astype(x.dtype)
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
unary("erf", erf, FLOATS)
unary("is_finite", np.isfinite, FLOATS, result_dtype=lambda d: "bool")
unary("not", np.invert, BOOL_AND_INTS, doc="logical not of bool, bitwise not of integers")
unary("real", np.real, COMPLEXES, result_dtype=COMPLEX_PART.get)
unary("imag", np.imag, COMPLEXES, result_dtype=COMPLEX_PART.get)
unary("conj", np.conj, COMPLEXES)


# ---- binary -----------------------------------------------------------------------------

def binary(name, reference, dtypes, result_dtype=None, doc=""):
    """An elementwise op of two operands of one type."""
    def infer(types, attrs, regions):
        lhs, rhs = types
        require_same_types(name, types)
        require_dtype(name, lhs, dtypes)
        return [lhs.with_dtype(result_dtype(lhs.dtype) if result_dtype else lhs.dtype)]
    define(name, infer=infer, reference=quiet(widen_half(reference)), num_operands=2, doc=doc)


def divide(a, b):
    """Float division, or integer division rounding toward zero (x/0 = -1, as XLA defines it)."""
    if a.dtype.kind not in "iu":
        return a / b
    safe_b = np.where(b == 0, 1, b)
    quotient = np.abs(a) // np.abs(safe_b) if a.dtype.kind == "i" else a // safe_b
    if a.dtype.kind == "i":
        quotient = np.where((a < 0) != (safe_b < 0), -quotient, quotient)
    return np.where(b == 0, np.array(-1).astype(a.dtype), quotient).astype(a.dtype)


def remainder(a, b):
    """Remainder with the sign of the dividend (C fmod); x % 0 = x for integers, as XLA."""
    if a.dtype.kind not in "iu":
        return np.fmod(a, b)
    safe_b = np.where(b == 0, 1, b)
    return np.where(b == 0, a, np.fmod(a, safe_b)).astype(a.dtype)


def power(a, b):
    """numpy.power, with integer semantics for negative exponents: 1**-n = 1, (-1)**-n = ±1, else 0."""
    if a.dtype.kind not in "iu":
        return np.power(a, b)
    if a.dtype.kind == "u":
        return np.power(a, b)
    nonneg = np.power(a, np.where(b < 0, 0, b))
    negative_exponent = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(b < 0, negative_exponent, nonneg).astype(a.dtype)


def shift_amount_ok(a, b):
    bits = a.dtype.itemsize * 8
    return (b >= 0) & (b < bits)


def shift_left(a, b):
    return np.where(shift_amount_ok(a, b), np.left_shift(a, np.where(shift_amount_ok(a, b), b, 0)), 0).astype(a.dtype)


def shift_right_logical(a, b):
    unsigned = a.view(np.dtype(f"u{a.dtype.itemsize}"))
    amount = np.where(shift_amount_ok(a, b), b, 0).astype(unsigned.dtype)
    return np.where(shift_amount_ok(a, b), np.right_shift(unsigned, amount), 0).astype(unsigned.dtype).view(a.dtype)


def shift_right_arithmetic(a, b):
    bits = a.dtype.itemsize * 8
    return np.right_shift(a, np.clip(b, 0, bits - 1).astype(a.dtype))


binary("add", np.add, NUMERIC)
binary("sub", np.subtract, NUMERIC)
binary("mul", np.multiply, NUMERIC)
binary("div", divide, NUMERIC, doc="float division; integer division rounds toward zero")
binary("rem", remainder, INTS + FLOATS, doc="remainder with the sign of the dividend")
binary("pow", power, NUMERIC)
binary("max", np.maximum, ("bool",) + INTS + FLOATS, doc="NaN-propagating maximum")
binary("min", np.minimum, ("bool",) + INTS + FLOATS, doc="NaN-propagating minimum")
binary("atan2", np.arctan2, FLOATS)
binary("and", np.bitwise_and, BOOL_AND_INTS)
binary("or", np.bitwise_or, BOOL_AND_INTS)
binary("xor", np.bitwise_xor, BOOL_AND_INTS)
binary("shift_left", shift_left, INTS)
binary("shift_right_logical", shift_right_logical, INTS)
binary("shift_right_arithmetic", shift_right_arithmetic, INTS)


def make_complex(re, im):
    dtype = np.complex64 if re.dtype == np.float32 else np.complex128
    out = np.empty(re.shape, dtype)
    out.real, out.imag = re, im
    return out


binary("complex", make_complex, ("f32", "f64"), result_dtype=COMPLEX_OF.get, doc="re + i*im")

for _name, _reference in [("eq", np.equal), ("ne", np.not_equal)]:
    binary(_name, _reference, tuple(NUMPY_DTYPES), result_dtype=lambda d: "bool")
for _name, _reference in [("lt", np.less), ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]:
    binary(_name, _reference, ("bool",) + INTS + FLOATS, result_dtype=lambda d: "bool")


# ---- select, convert, constant, iota --------------------------------------------------------

def select_infer(types, attrs, regions):
    pred, on_true, on_false = types
    require(pred.dtype == "bool", f"select: predicate must be bool, got {pred}")
    require(on_true == on_false, f"select: branches must have the same type, got {on_true} and {on_false}")
    require(pred.shape == on_true.shape, f"select: predicate shape {pred} does not match {on_true}")
    return [on_true]


define("select", infer=select_infer, reference=lambda p, a, b: np.where(p, a, b), num_operands=3,
       doc="pred ? on_true : on_false, elementwise")


def convert(x, *, dtype):
    """Convert dtypes: float -> int saturates and maps NaN to 0; complex -> real keeps the real part."""
    target = NUMPY_DTYPES[dtype]
    if x.dtype.kind == "c" and target.kind != "c":
        x = x.real
    if x.dtype.kind == "f" and target.kind in "iu":
        info = np.iinfo(target)
        with np.errstate(invalid="ignore"):
            wide = np.nan_to_num(x.astype(np.float64), nan=0.0)
            # float64 cannot hold iinfo.max of 64-bit types exactly: saturate by comparison.
            result = np.clip(wide, info.min, info.max)
            out = result.astype(target)
            out = np.where(wide >= float(info.max), info.max, out)
            out = np.where(wide <= float(info.min), info.min, out)
        return out.astype(target)
    if target.kind == "b":
        return x != 0
    return x.astype(target)


define("convert", infer=lambda types, attrs, regions: [types[0].with_dtype(attrs["dtype"])],
       reference=quiet(convert), attrs={"dtype": "dtype"}, num_operands=1,
       doc="element type conversion (float->int saturates, NaN -> 0)")


def constant_infer(types, attrs, regions):
    from ..types import dtype_name
    value = attrs["value"]
    require(value.dtype in (NUMPY_DTYPES[n] for n in NUMPY_DTYPES),
            f"constant: unsupported dtype {value.dtype}")
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
