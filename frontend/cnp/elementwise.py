"""Elementwise math of cdnajit.numpy, with jax.numpy's names, dtype rules and special cases.

Every function promotes its operands (JAX's lattice, 64-bit types enabled) and broadcasts them,
then binds one elementwise IR op, or composes other functions of this module where jnp composes
(floor_divide and mod follow numpy's sign rules, fmax ignores NaN, ...). Three promotion flavours:
  - plain: the lattice join (add, maximum, comparisons, ...);
  - numeric: the join, with bool turned into int32 (jnp's to_numeric_dtype: remainder, power, ...);
  - inexact: the join, then jnp's to-inexact rule: bools and integers up to 32 bits become float32,
    64-bit integers float64 (exp, sin, divide, ...).
Binary functions are `ufunc` objects: callable, with `.outer`, and `.reduce`/`.accumulate` where
jax.numpy has them (they call the reductions of cdnajit.numpy).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ...errors import TracingTypeError, TracingValueError
from .. import lax_bitcast, lax_elementwise
from ..dtypes import is_complex, is_inexact, is_integer
from ..tracing import Tracer, as_tracer, bind1, constant, is_python_scalar, located
from .base import (broadcast_shapes, broadcast_to, complex_not_implemented, convert, dtype_and_weak, promote_args,
                   require_integer, to_dtype_name)
from .dtypes_api import finfo

__all__ = [
    "ufunc", "astype",
    # unary math, integers promoting to float
    "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "cbrt", "tanh", "sinh", "cosh", "sin", "cos",
    "tan", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "asin", "acos", "atan", "asinh", "acosh",
    "atanh", "reciprocal", "deg2rad", "rad2deg", "degrees", "radians", "sinc", "fabs",
    # sign, magnitude and rounding
    "abs", "absolute", "negative", "positive", "sign", "signbit", "square", "floor", "ceil", "trunc", "fix", "rint",
    "round", "around", "modf",
    # binary arithmetic
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder", "mod", "fmod", "divmod",
    "power", "pow", "float_power", "maximum", "minimum", "fmax", "fmin", "arctan2", "atan2", "hypot", "copysign",
    "logaddexp", "logaddexp2", "heaviside",
    # comparisons and logic
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_invert", "invert",
    "left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift",
    # predicates, complex parts, selection
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "real", "imag", "conj", "conjugate", "angle",
    "where", "clip", "nan_to_num", "isclose", "allclose",
]

LN2 = math.log(2.0)
LN10 = math.log(10.0)
UNSIGNED = ("u8", "u16", "u32", "u64")


# ---- binding and promotion ------------------------------------------------------------------

def apply(opname: str, *operands: Tracer, **attrs) -> Tracer:
    """Bind an elementwise IR op on operands of one type; the result is weakly typed when every
    operand is, as in JAX (comparisons of Python scalars give weakly typed bools too)."""
    return bind1(opname, operands, attrs, weak_type=all(o.weak_type for o in operands))


def strong(x: Tracer) -> Tracer:
    """x, strongly typed: where jnp composes a function from ops that drop the weak type."""
    return convert(x, x.type.dtype)


def weak_if_all(result: Tracer, *inputs) -> Tracer:
    """result, weakly typed only when it is and every input is a Python scalar (bools included) or a
    weak tracer: jnp's result for functions whose composition mixes a weak value with a strong one."""
    weak = result.weak_type and all(is_python_scalar(x) or (isinstance(x, Tracer) and x.weak_type) for x in inputs)
    return convert(result, result.type.dtype, weak)


def promote_numeric(name: str, *xs) -> list[Tracer]:
    """The lattice join, with bool turned into int32 (jnp's promote_args_numeric)."""
    args = promote_args(name, *xs)
    if args[0].type.dtype == "bool":
        return [convert(a, "i32") for a in args]
    return args


def promote_inexact(name: str, *xs) -> list[Tracer]:
    return promote_args(name, *xs, inexact=True)


def filled(x: Tracer, value, dtype: str | None = None) -> Tracer:
    """`value` (of x's dtype unless given) broadcast to x's shape."""
    return broadcast_to(constant(value, dtype or x.type.dtype), x.shape)


def reject_complex(name: str, x: Tracer, error=TracingTypeError):
    """An error naming the function and the dtype for a complex operand; jnp raises a ValueError
    rather than a TypeError for some functions (hypot, signbit, isposinf...), and so does `error`."""
    if is_complex(x.type.dtype):
        raise error(located(f"{name} does not support complex operands, got {x.type}"))


def with_name(fn, name: str, doc: str):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


# ---- ufunc objects ----------------------------------------------------------------------------

def broadcast_in_dims(x: Tracer, shape, dims) -> Tracer:
    """x placed on dimensions `dims` of `shape` (jax.lax.broadcast_in_dim)."""
    return bind1("broadcast_in_dim", [x], {"shape": tuple(shape), "broadcast_dimensions": tuple(dims)},
                 weak_type=x.weak_type)


def namespace_function(name: str, what: str):
    """A cdnajit.numpy function, looked up when called (the reductions live in another module)."""
    from .. import cnp
    fn = getattr(cnp, name, None)
    if fn is None:
        raise NotImplementedError(f"{what} needs cdnajit.numpy.{name}, which is not implemented")
    return fn


class ufunc:
    """A binary universal function in the manner of jax.numpy.ufunc.

    Calling it applies the function elementwise with broadcasting; `outer` applies it to every pair
    of elements; `reduce`/`accumulate` call the named cdnajit.numpy reduction (cnp.sum for add...).
    """

    nin, nout, nargs = 2, 1, 2

    def __init__(self, fn, name, identity=None, reduction=None, accumulation=None, at_update=None):
        self.fn = fn
        self.__name__ = name
        self.__doc__ = f"jax.numpy.{name}, elementwise with broadcasting. {fn.__doc__ or ''}".strip()
        self.identity = identity
        self.reduction = reduction
        self.accumulation = accumulation
        self.at_update = at_update

    def __repr__(self):
        return f"<cdnajit.numpy.ufunc '{self.__name__}'>"

    def __call__(self, x1, x2, /):
        return self.fn(x1, x2)

    def outer(self, x1, x2, /):
        """fn(x1[i, j...], x2[k, l...]) for every pair: the result's shape is x1.shape + x2.shape."""
        a, b = as_tracer(x1), as_tracer(x2)
        shape = a.shape + b.shape
        return self(broadcast_in_dims(a, shape, range(a.ndim)), broadcast_in_dims(b, shape, range(a.ndim, len(shape))))

    def method_target(self, method: str, target):
        if target is None:
            raise NotImplementedError(f"cdnajit.numpy.{self.__name__}.{method} is not implemented")
        return namespace_function(target, f"cdnajit.numpy.{self.__name__}.{method}")

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False, **options):
        """Reduce along `axis` (0 by default, None for all axes), as numpy.ufunc.reduce."""
        reduction = self.method_target("reduce", self.reduction)
        if out is not None:
            raise NotImplementedError(f"{self.__name__}.reduce(out=...): traced arrays are immutable")
        if dtype is not None:
            options["dtype"] = dtype
        return reduction(array, axis=axis, keepdims=keepdims, **options)

    def accumulate(self, array, axis=0, dtype=None, out=None):
        """Running reduction along `axis`, as numpy.ufunc.accumulate."""
        accumulation = self.method_target("accumulate", self.accumulation)
        if out is not None:
            raise NotImplementedError(f"{self.__name__}.accumulate(out=...): traced arrays are immutable")
        return accumulation(array, axis=axis) if dtype is None else accumulation(array, axis=axis, dtype=dtype)

    def at(self, a, indices, b, /, *, inplace=True):
        """a with fn applied at `indices` (jnp: only inplace=False, returning the updated copy)."""
        if self.at_update is None:
            raise NotImplementedError(f"cdnajit.numpy.{self.__name__}.at is not implemented")
        if inplace:
            raise NotImplementedError(f"{self.__name__}.at: traced arrays are immutable; pass inplace=False "
                                      f"(or use x.at[idx].{self.at_update}(value))")
        return getattr(as_tracer(a).at[indices], self.at_update)(b)


def binary_ufunc(name, **methods):
    """Decorator: make a function of two operands into the `ufunc` named `name`."""
    return lambda fn: ufunc(fn, name, **methods)


def simple_binary(name, opname, promotion=promote_args, **methods) -> ufunc:
    """A ufunc that promotes its two operands and binds one IR op."""
    def fn(x1, x2):
        return apply(opname, *promotion(name, x1, x2))
    return ufunc(fn, name, **methods)


# ---- unary math: integers and bools promote to float ----------------------------------------

def inexact_unary(name, opname, on_complex=None, weak=True):
    """jnp's unary float functions; `on_complex` composes the function where the IR op is real-only.
    With weak=False the result is strongly typed even for a Python scalar."""
    def fn(x):
        (x,) = promote_inexact(name, x)
        if on_complex is not None and is_complex(x.type.dtype):
            result = on_complex(x)
        else:
            result = apply(opname, x)
        return result if weak else strong(result)
    return with_name(fn, name, f"jax.numpy.{name}, elementwise; integers and bools promote to float32 "
                               f"(64-bit ones to float64).")


exp = inexact_unary("exp", "exp")
log = inexact_unary("log", "log")
exp2 = inexact_unary("exp2", "exp2", on_complex=lambda z: exp(multiply(z, LN2)))
# jnp computes log2 and log10 as log(x) / log(base), a strongly typed constant: never weak.
log2 = inexact_unary("log2", "log2", on_complex=lambda z: divide(log(z), LN2), weak=False)
log10 = inexact_unary("log10", "log10", on_complex=lambda z: divide(log(z), LN10), weak=False)
log1p = inexact_unary("log1p", "log1p")
expm1 = inexact_unary("expm1", "expm1")
sqrt = inexact_unary("sqrt", "sqrt")
cbrt = inexact_unary("cbrt", "cbrt")
tanh = inexact_unary("tanh", "tanh")
sinh = inexact_unary("sinh", "sinh")
cosh = inexact_unary("cosh", "cosh")
sin = inexact_unary("sin", "sin")
cos = inexact_unary("cos", "cos")
tan = inexact_unary("tan", "tan")
arcsin = asin = inexact_unary("arcsin", "asin")
arccos = acos = inexact_unary("arccos", "acos")
arctan = atan = inexact_unary("arctan", "atan")
arcsinh = asinh = inexact_unary("arcsinh", "asinh")
arccosh = acosh = inexact_unary("arccosh", "acosh")
arctanh = atanh = inexact_unary("arctanh", "atanh")


def reciprocal(x):
    """1/x; integers promote to float by jnp's to-inexact rule (unlike numpy)."""
    (x,) = promote_inexact("reciprocal", x)
    return divide(1, x)


def scaled(name, factor):
    def fn(x):
        (x,) = promote_inexact(name, x)
        return multiply(x, factor)
    return with_name(fn, name, f"jax.numpy.{name}: x * {factor!r}.")


deg2rad = radians = scaled("deg2rad", math.pi / 180)
rad2deg = degrees = scaled("rad2deg", 180 / math.pi)


def sinc(x):
    """sin(pi x) / (pi x), and 1 at 0."""
    (x,) = promote_inexact("sinc", x)
    at_zero = equal(x, 0)
    pi_x = multiply(where(at_zero, 1, x), math.pi)
    return where(at_zero, 1, divide(sin(pi_x), pi_x))


def fabs(x):
    """|x| for real inputs; integers promote to float by jnp's to-inexact rule."""
    (x,) = promote_inexact("fabs", x)
    reject_complex("fabs", x)
    return apply("abs", x)


# ---- sign, magnitude, rounding ----------------------------------------------------------------

def absolute(x):
    """|x|; bools and unsigned integers are returned unchanged, complex gives its real magnitude."""
    x = as_tracer(x)
    if x.type.dtype == "bool" or x.type.dtype in UNSIGNED:
        return x
    return apply("abs", x)


def negative(x):
    return apply("neg", as_tracer(x))


def positive(x):
    return as_tracer(x)


def sign(x):
    return apply("sign", as_tracer(x))


def square(x):
    (x,) = promote_numeric("square", x)
    return apply("mul", x, x)


def signbit(x):
    """Whether the sign bit is set: true for negative numbers, -0.0, -inf and NaNs with the sign bit (a
    float's bits read as a signed integer are negative exactly then)."""
    x = as_tracer(x)
    reject_complex("signbit", x, TracingValueError)
    if not (is_inexact(x.type.dtype) or is_integer(x.type.dtype)) or x.type.dtype in UNSIGNED:
        return filled(x, False, "bool")
    if is_integer(x.type.dtype):
        return strong(less(x, 0))
    return strong(less(lax_bitcast.bitcast_convert_type(x, f"i{x.dtype.itemsize * 8}"), 0))


def integral_rounding(name, opname):
    """floor, ceil, trunc, fix: integers and bools are already whole and come back unchanged."""
    def fn(x):
        x = as_tracer(x)
        if not is_inexact(x.type.dtype):
            return x
        reject_complex(name, x)
        return apply(opname, x)
    return with_name(fn, name, f"jax.numpy.{name}; integer inputs are returned unchanged.")


floor = integral_rounding("floor", "floor")
ceil = integral_rounding("ceil", "ceil")
trunc = integral_rounding("trunc", "trunc")
fix = integral_rounding("fix", "trunc")


def rint(x):
    """Round half to even; integers and bools convert to float64, as jnp.rint."""
    x = as_tracer(x)
    if not is_inexact(x.type.dtype):
        return convert(x, "f64")
    if is_complex(x.type.dtype):
        return apply("complex", rint(real(x)), rint(imag(x)))
    return apply("round", x)


def around(x, decimals=0):
    """Round half to even at `decimals` decimal places (negative: tens, hundreds...), as jnp.round."""
    x = as_tracer(x)
    if isinstance(decimals, Tracer):  # the scale 10**decimals is a constant of the program
        decimals._concrete("round: decimals needs the value")
    if not isinstance(decimals, (int, np.integer)) or isinstance(decimals, bool):
        raise TracingTypeError(located(f"round: decimals must be an int, got {decimals!r}"))
    dtype = x.type.dtype
    if dtype == "bool":
        raise TracingValueError(located("round: bool input is not supported (as in jnp); convert it to a number"))
    if not is_inexact(dtype):
        if decimals < 0:
            raise NotImplementedError("round of an integer array with decimals < 0 is not implemented (as in jnp)")
        return x
    if is_complex(dtype):
        return apply("complex", around(real(x), decimals), around(imag(x), decimals))
    if decimals == 0:
        return apply("round", x)
    # f16 would overflow when scaled by 10**decimals: scale in f32, as jnp does.
    work = convert(x, "f32", x.weak_type) if dtype == "f16" else x
    factor = 10.0 ** decimals
    return convert(divide(apply("round", multiply(work, factor)), factor), dtype, x.weak_type)


def modf(x):
    """(fractional part, integral part), both with the sign of x."""
    (x,) = promote_inexact("modf", x)
    whole = fix(x)
    return subtract(x, whole), whole


# ---- binary arithmetic ------------------------------------------------------------------------

@binary_ufunc("add", identity=0, reduction="sum", accumulation="cumsum", at_update="add")
def add(x1, x2):
    """x1 + x2 (logical or for bools, as jnp)."""
    x1, x2 = promote_args("add", x1, x2)
    return apply("or" if x1.type.dtype == "bool" else "add", x1, x2)


@binary_ufunc("multiply", identity=1, reduction="prod", accumulation="cumprod", at_update="multiply")
def multiply(x1, x2):
    """x1 * x2 (logical and for bools, as jnp)."""
    x1, x2 = promote_args("multiply", x1, x2)
    return apply("and" if x1.type.dtype == "bool" else "mul", x1, x2)


subtract = simple_binary("subtract", "sub")
divide = true_divide = simple_binary("divide", "div", promote_inexact)
float_power = simple_binary("float_power", "pow", promote_inexact)


@binary_ufunc("arctan2")
def arctan2(x1, x2):
    """The angle of the point (x2, x1), in (-pi, pi]."""
    x1, x2 = promote_inexact("arctan2", x1, x2)
    complex_not_implemented("arctan2", x1)
    return apply("atan2", x1, x2)


atan2 = arctan2


def float_divmod(x1: Tracer, x2: Tracer) -> tuple[Tracer, Tracer]:
    """numpy's floor division and modulo of floats: the modulo takes the sign of the divisor; by
    +-0 the quotient is x1 / x2 (+-inf, or NaN for 0 / 0), as numpy and JAX, and the modulo NaN."""
    mod = apply("rem", x1, x2)
    quotient = divide(subtract(x1, mod), x2)
    adjust = logical_and(not_equal(mod, 0), not_equal(sign(x2), sign(mod)))
    mod = where(adjust, add(mod, x2), mod)
    quotient = where(adjust, subtract(quotient, 1), quotient)
    return where(equal(x2, 0), divide(x1, x2), apply("round", quotient)), mod


@binary_ufunc("floor_divide")
def floor_divide(x1, x2):
    """x1 // x2, rounding toward minus infinity as numpy (integer division by zero is undefined)."""
    x1, x2 = promote_numeric("floor_divide", x1, x2)
    reject_complex("floor_divide", x1)
    dtype = x1.type.dtype
    if dtype in UNSIGNED:
        return apply("div", x1, x2)
    if is_integer(dtype):
        quotient = apply("div", x1, x2)
        inexact_negative = logical_and(not_equal(sign(x1), sign(x2)), not_equal(apply("rem", x1, x2), 0))
        return where(inexact_negative, subtract(quotient, 1), quotient)
    return float_divmod(x1, x2)[0]


@binary_ufunc("remainder")
def remainder(x1, x2):
    """x1 % x2 with the sign of the divisor, as numpy; integer x % 0 is 0."""
    x1, x2 = promote_numeric("remainder", x1, x2)
    reject_complex("remainder", x1)
    if is_integer(x2.type.dtype):
        x2 = where(equal(x2, 0), 1, x2)
    truncated = apply("rem", x1, x2)
    adjust = logical_and(not_equal(less(truncated, 0), less(x2, 0)), not_equal(truncated, 0))
    return where(adjust, add(truncated, x2), truncated)


mod = remainder


@binary_ufunc("fmod")
def fmod(x1, x2):
    """C's fmod: the remainder with the sign of the dividend; integer x % 0 is 0."""
    x1, x2 = promote_numeric("fmod", x1, x2)
    if is_integer(x2.type.dtype):
        x2 = where(equal(x2, 0), 1, x2)
    return apply("rem", x1, x2)


def divmod_(x1, x2):
    """(floor_divide(x1, x2), remainder(x1, x2))."""
    return floor_divide(x1, x2), remainder(x1, x2)


def concrete_int(x):
    """x as a Python int when it is a concrete integer (a Python or numpy int), else None."""
    if isinstance(x, Tracer):
        return None
    try:
        return operator.index(x)
    except TypeError:
        return None


@binary_ufunc("power")
def power(x1, x2):
    """x1 ** x2. A concrete integer exponent keeps x1's dtype, as jnp's integer_pow does."""
    exponent = concrete_int(x2)
    if exponent is None:
        (base_dtype, _), (exponent_dtype, exponent_weak) = dtype_and_weak(x1), dtype_and_weak(x2)
        result = apply("pow", *promote_numeric("power", x1, x2))
        # jnp raises integers by repeated squaring, and an inexact base to an integer array's power
        # with the mixed-dtype lax.pow: both give strongly typed results.
        mixed = is_inexact(base_dtype) and is_integer(exponent_dtype) and not exponent_weak
        return strong(result) if is_integer(result.type.dtype) or mixed else result
    (base,) = promote_numeric("power", x1)
    if is_integer(base.type.dtype) and exponent < 0:
        raise TracingTypeError(located(f"power: integers cannot be raised to a negative power ({exponent}); "
                                       f"convert the base to a float dtype"))
    return lax_elementwise.integer_pow(base, exponent)


pow = power


def extremum(name, opname, lexicographic_pick):
    """maximum/minimum: NaN-propagating; complex operands compare lexicographically, as jnp."""
    def fn(x1, x2):
        x1, x2 = promote_args(name, x1, x2)
        if is_complex(x1.type.dtype):
            return where(lexicographic_pick(x1, x2), x1, x2)
        return apply(opname, x1, x2)
    return fn


maximum = ufunc(extremum("maximum", "max", lambda a, b: greater(a, b)), "maximum", reduction="max", at_update="max")
minimum = ufunc(extremum("minimum", "min", lambda a, b: less(a, b)), "minimum", reduction="min", at_update="min")


def nan_ignoring_extremum(name, pick_first):
    """fmax/fmin: like maximum/minimum, but a NaN loses against a number."""
    def fn(x1, x2):
        x1, x2 = promote_args(name, x1, x2)
        return where(logical_or(pick_first(x1, x2), isnan(x2)), x1, x2)
    return ufunc(fn, name)


fmax = nan_ignoring_extremum("fmax", lambda a, b: greater(a, b))
fmin = nan_ignoring_extremum("fmin", lambda a, b: less(a, b))


@binary_ufunc("hypot")
def hypot(x1, x2):
    """sqrt(x1**2 + x2**2) without intermediate overflow: big * sqrt(1 + (small/big)**2)."""
    inputs = x1, x2
    x1, x2 = promote_inexact("hypot", x1, x2)
    reject_complex("hypot", x1, TracingValueError)
    x1, x2 = absolute(x1), absolute(x2)
    has_inf = logical_or(isinf(x1), isinf(x2))
    big, small = maximum(x1, x2), minimum(x1, x2)
    big_is_zero = equal(big, 0)
    ratio = divide(small, where(big_is_zero, 1, big))
    result = where(big_is_zero, big, multiply(big, sqrt(add(1, square(ratio)))))
    return weak_if_all(where(has_inf, math.inf, result), *inputs)


@binary_ufunc("copysign")
def copysign(x1, x2):
    """|x1| with the sign of x2."""
    x1, x2 = promote_inexact("copysign", x1, x2)
    reject_complex("copysign", x1)
    magnitude = absolute(x1)
    return where(signbit(x2), negative(magnitude), magnitude)


def log_add_exp(name, exp_fn, log1p_scale):
    """log(exp(x1) + exp(x2)) in base e or 2, as max + log1p(exp(-|x1 - x2|)) (no overflow).
    jnp's logaddexp2 is strongly typed unless both inputs are weak; logaddexp keeps the promotion's."""
    def fn(x1, x2):
        inputs = x1, x2
        x1, x2 = promote_inexact(name, x1, x2)
        complex_not_implemented(name, x1)
        delta = subtract(x1, x2)
        stable = add(maximum(x1, x2), multiply(log1p(exp_fn(negative(absolute(delta)))), log1p_scale))
        # delta is NaN when both are the same infinity (or a NaN): x1 + x2 is then the answer.
        result = where(isnan(delta), add(x1, x2), stable)
        return weak_if_all(result, *inputs) if log1p_scale != 1.0 else result
    return ufunc(fn, name)


logaddexp = log_add_exp("logaddexp", exp, 1.0)
logaddexp2 = log_add_exp("logaddexp2", exp2, 1 / LN2)


@binary_ufunc("heaviside")
def heaviside(x1, x2):
    """0 where x1 < 0, 1 where x1 > 0, x2 where x1 == 0, NaN where x1 is NaN (as numpy)."""
    inputs = x1, x2
    x1, x2 = promote_inexact("heaviside", x1, x2)
    reject_complex("heaviside", x1)
    # jnp's result is weakly typed when x1 is.
    return weak_if_all(where(less(x1, 0), 0, where(greater(x1, 0), 1, where(isnan(x1), x1, x2))), inputs[0])


# ---- comparisons and logic --------------------------------------------------------------------

def comparison(name, opname):
    """A comparison giving bools; complex operands order lexicographically (real, then imag), as jnp."""
    def fn(x1, x2):
        x1, x2 = promote_args(name, x1, x2)
        if is_complex(x1.type.dtype) and opname not in ("eq", "ne"):
            real1, real2 = apply("real", x1), apply("real", x2)
            by_imag = apply(opname, apply("imag", x1), apply("imag", x2))
            by_real = apply(opname, real1, real2)
            return bind1("select", [apply("eq", real1, real2), by_imag, by_real], weak_type=by_real.weak_type)
        return apply(opname, x1, x2)
    return ufunc(fn, name)


equal = comparison("equal", "eq")
not_equal = comparison("not_equal", "ne")
less = comparison("less", "lt")
less_equal = comparison("less_equal", "le")
greater = comparison("greater", "gt")
greater_equal = comparison("greater_equal", "ge")


def truth(x) -> Tracer:
    """x as bools: nonzero is true."""
    x = as_tracer(x)
    return x if x.type.dtype == "bool" else not_equal(x, 0)


def logical(name, opname, **methods):
    def fn(x1, x2):
        return weak_if_all(apply(opname, *(truth(x) for x in promote_args(name, x1, x2))), x1, x2)
    return ufunc(fn, name, **methods)


logical_and = logical("logical_and", "and", identity=True, reduction="all")
logical_or = logical("logical_or", "or", identity=False, reduction="any")
logical_xor = logical("logical_xor", "xor", identity=False)


def logical_not(x):
    return apply("not", truth(x))


def bitwise_binary(name, opname, promotion=promote_args, **methods) -> ufunc:
    """A ufunc of integer (or bool) operands binding one IR op; other dtypes are a TypeError naming it."""
    def fn(x1, x2):
        x1, x2 = promotion(name, x1, x2)
        require_integer(name, x1)
        return apply(opname, x1, x2)
    return ufunc(fn, name, **methods)


bitwise_and = bitwise_binary("bitwise_and", "and", identity=-1)
bitwise_or = bitwise_binary("bitwise_or", "or", identity=0)
bitwise_xor = bitwise_binary("bitwise_xor", "xor", identity=0)
left_shift = bitwise_left_shift = bitwise_binary("left_shift", "shift_left", promote_numeric)


@binary_ufunc("right_shift")
def right_shift(x1, x2):
    """x1 >> x2: arithmetic for signed integers, logical for unsigned ones."""
    x1, x2 = promote_numeric("right_shift", x1, x2)
    require_integer("right_shift", x1)
    return apply("shift_right_logical" if x1.type.dtype in UNSIGNED else "shift_right_arithmetic", x1, x2)


bitwise_right_shift = right_shift


def invert(x):
    """Bitwise not of integers, logical not of bools."""
    x = as_tracer(x)
    require_integer("invert", x)
    return apply("not", x)


bitwise_not = bitwise_invert = invert


# ---- predicates -------------------------------------------------------------------------------

def isnan(x):
    x = as_tracer(x)
    if not is_inexact(x.type.dtype):
        return convert(filled(x, False, "bool"), "bool", x.weak_type)
    return not_equal(x, x)


def isinf(x):
    x = as_tracer(x)
    if is_complex(x.type.dtype):
        return logical_or(isinf(real(x)), isinf(imag(x)))
    if not is_inexact(x.type.dtype):
        return filled(x, False, "bool")
    return strong(equal(absolute(x), math.inf))


def isfinite(x):
    x = as_tracer(x)
    if is_complex(x.type.dtype):
        return apply("and", isfinite(real(x)), isfinite(imag(x)))
    if not is_inexact(x.type.dtype):
        return filled(x, True, "bool")
    return apply("is_finite", x)


def signed_infinity_test(name, infinity):
    def fn(x):
        x = as_tracer(x)
        reject_complex(name, x, TracingValueError)
        if not is_inexact(x.type.dtype):
            return filled(x, False, "bool")
        return strong(equal(x, infinity))
    return with_name(fn, name, f"jax.numpy.{name}: x == {infinity}.")


isposinf = signed_infinity_test("isposinf", math.inf)
isneginf = signed_infinity_test("isneginf", -math.inf)


# ---- complex parts ----------------------------------------------------------------------------

def real(x):
    x = as_tracer(x)
    return apply("real", x) if is_complex(x.type.dtype) else x


def imag(x):
    """The imaginary part; zeros of x's dtype for real x."""
    x = as_tracer(x)
    if is_complex(x.type.dtype):
        return apply("imag", x)
    return convert(filled(x, 0), x.type.dtype, x.weak_type)


def conj(x):
    x = as_tracer(x)
    return apply("conj", x) if is_complex(x.type.dtype) else x


conjugate = conj


def angle(z, deg=False):
    """The argument of complex z (0 or pi for real z), in radians or degrees."""
    z = as_tracer(z)
    if not is_inexact(z.type.dtype):  # jnp.angle converts integers and bools to float64 itself
        z = convert(z, "f64")
    result = arctan2(imag(z), real(z))
    if not is_complex(z.type.dtype):  # jnp's arctan2(0, x) meets a strongly typed zero
        result = strong(result)
    return multiply(result, 180 / math.pi) if deg else result


# ---- selection and clipping -------------------------------------------------------------------

def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """x where condition is true (nonzero), else y; all three broadcast together. With the condition
    alone, nonzero(condition, size=size, fill_value=fill_value)."""
    if x is None and y is None:
        return namespace_function("nonzero", "where(condition)")(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise TracingTypeError(located("where takes either one argument or three (condition, x, y), not two"))
    if size is not None or fill_value is not None:
        raise NotImplementedError("where(..., size=, fill_value=) is only meaningful with one argument")
    condition = truth(condition)
    x, y = promote_args("where", x, y)
    shape = broadcast_shapes(condition.shape, x.shape, what="where: condition and branches")
    operands = [broadcast_to(condition, shape), broadcast_to(x, shape), broadcast_to(y, shape)]
    return bind1("select", operands, weak_type=x.weak_type)


def clip(arr, /, min=None, max=None, *, a_min=None, a_max=None):
    """arr limited to [min, max] (either may be None); jnp's maximum/minimum promotion applies."""
    low = min if a_min is None else a_min
    high = max if a_max is None else a_max
    for bound in (arr, low, high):
        if bound is not None and is_complex(dtype_and_weak(bound)[0]):
            raise TracingValueError(located(f"clip: complex values have no order and cannot be clipped, got "
                                            f"{lax_elementwise.describe(*dtype_and_weak(bound))}"))
    if low is None and high is None:
        return as_tracer(arr)
    if low is not None:
        arr = maximum(low, arr)
    if high is not None:
        arr = minimum(high, arr)
    return arr


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN -> nan, +inf -> posinf (default: the dtype's max), -inf -> neginf (default: its min)."""
    x = as_tracer(x)
    dtype = x.type.dtype
    if not is_inexact(dtype):
        return x
    if is_complex(dtype):
        parts = [nan_to_num(part, nan=nan, posinf=posinf, neginf=neginf) for part in (real(x), imag(x))]
        return strong(apply("complex", *parts))
    info = finfo(x.dtype)
    x = where(isnan(x), nan, strong(x))
    x = where(isposinf(x), float(info.max) if posinf is None else posinf, x)
    return where(isneginf(x), float(info.min) if neginf is None else neginf, x)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b|; an infinity is close only to itself, NaN to nothing (unless equal_nan)."""
    a, b = promote_inexact("isclose", a, b)
    near = less_equal(absolute(subtract(a, b)), add(atol, multiply(rtol, absolute(b))))
    close = where(logical_and(isfinite(a), isfinite(b)), near, equal(a, b))
    return logical_or(close, logical_and(isnan(a), isnan(b))) if equal_nan else close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of a is close to b's (see isclose)."""
    return namespace_function("all", "allclose")(isclose(a, b, rtol, atol, equal_nan))


def astype(x, dtype, /, *, copy=False, device=None):
    """x converted to `dtype` (complex to real keeps the real part; to bool is x != 0)."""
    return convert(as_tracer(x), to_dtype_name(dtype))


# Python's builtins keep their names inside this module: the jnp names are bound last.
abs = absolute
round = around
divmod = with_name(divmod_, "divmod", divmod_.__doc__)
