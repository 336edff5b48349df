"""cdnajit.lax elementwise functions: one lax name per graph-IR op, with lax's strict typing.

jax.lax does not promote: the arrays given to one function must share a dtype; the result is
weakly typed when every operand is. Weakly typed values (Python scalars) take the dtype of the
others. That is looser than jax.lax, which has required a Python scalar to have the array's dtype
under its default dtype (lax.add(float32_array, 2.0) is a TypeError there): every program jax.lax
accepts gives the same dtypes here. Shapes must agree but for 0-d operands and size-1 dimensions,
which broadcast (there is no rank broadcasting).
"""
from __future__ import annotations

import builtins
import enum
import operator

from ..errors import CdnajitError, TracingTypeError, TracingValueError
from ..ir.types import COMPLEX_OF
from .cnp.base import (broadcast_to, complex_not_implemented, convert, dtype_and_weak, require_integer, shape_of,
                       to_dtype_name)
from .dtypes import is_inexact, is_integer, promote
from .pytree import tree_map
from .tracing import Tracer, as_tracer, bind1, constant, located

__all__ = ["RoundingMethod", "convert_element_type", "stop_gradient", "select", "select_n", "clamp", "integer_pow", "square", "reciprocal",
           "round", "pow",
           "neg", "abs", "sign", "floor", "ceil", "exp", "exp2", "log", "log1p", "expm1", "sqrt", "rsqrt", "cbrt",
           "tanh", "sinh", "cosh", "sin", "cos", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh", "logistic",
           "erf", "erfc", "erf_inv", "lgamma", "digamma", "zeta", "polygamma", "bessel_i0e", "bessel_i1e", "is_finite", "real", "imag", "conj", "bitwise_not",
           "add", "sub", "mul", "div", "rem", "max", "min", "atan2", "complex", "bitwise_and", "bitwise_or",
           "bitwise_xor", "shift_left", "shift_right_logical", "shift_right_arithmetic",
           "eq", "ne", "lt", "le", "gt", "ge"]


# ---- static arguments and lax's strict typing ---------------------------------------------

def static_int(value, what: str) -> int:
    """A Python int from a static argument; a traced value raises ConcretizationError."""
    try:
        return operator.index(value)
    except CdnajitError:
        raise
    except TypeError:
        raise TracingTypeError(located(f"{what} must be an integer, got {value!r}")) from None


def static_ints(values, what: str) -> tuple[int, ...]:
    try:
        items = list(values)
    except TypeError:
        raise TracingTypeError(located(f"{what} must be a sequence of integers, got {values!r}")) from None
    return tuple(static_int(v, what) for v in items)


def describe(dtype: str, weak: bool) -> str:
    return f"weakly typed {dtype}" if weak else dtype


def scalar_like(x: Tracer, value) -> Tracer:
    """A constant `value` of x's dtype and weak type, to combine with x in a lax function."""
    return constant(value, x.type.dtype, weak_type=x.weak_type)


def strict_dtype(name: str, xs) -> tuple[str, bool]:
    """The one dtype (and weak flag) of lax.`name`'s operands: weak values take the strong dtype."""
    typed = [dtype_and_weak(x) for x in xs]
    strong = sorted({dtype for dtype, weak in typed if not weak})
    weak_dtypes = {dtype for dtype, weak in typed if weak}
    target = strong[0] if strong else typed[0][0]
    fits = all(promote((target, not strong), (dtype, True))[0] == target for dtype in weak_dtypes)
    if len(strong) > 1 or (not strong and len(weak_dtypes) > 1) or not fits:
        got = ", ".join(describe(*t) for t in typed)
        raise TracingTypeError(located(
            f"lax.{name} requires arguments of one dtype, got {got}; jax.lax does not promote types: convert "
            f"with lax.convert_element_type"))
    return target, not strong


def strict_shape(name: str, shapes) -> tuple[int, ...]:
    """lax's broadcasting: 0-d operands and size-1 dimensions broadcast, ranks must agree."""
    ranked = [tuple(s) for s in shapes if len(s)]
    if not ranked:
        return ()
    if len({len(s) for s in ranked}) > 1:
        raise TracingTypeError(located(
            f"lax.{name} requires arrays of one rank (or 0-d), got shapes {', '.join(map(str, ranked))}"))
    result = []
    for sizes in zip(*ranked):
        large = set(sizes) - {1}
        if len(large) > 1:
            raise TracingTypeError(located(
                f"lax.{name} got incompatible shapes {', '.join(map(str, ranked))}"))
        result.append(large.pop() if large else 1)
    return tuple(result)


def strict_operands(name: str, *xs) -> tuple[list[Tracer], bool]:
    """Tracers of one dtype and shape for lax.`name`, and whether the result is weakly typed."""
    dtype, weak = strict_dtype(name, xs)
    shape = strict_shape(name, [shape_of(x) for x in xs])
    return [broadcast_to(convert(as_tracer(x), dtype, weak), shape) for x in xs], weak


# ---- one function per IR op ------------------------------------------------------------------

def unary_op(op: str, lax_name: str | None = None, real_only: bool = False, integer: bool = False):
    """lax.`lax_name`; real_only: complex operands are not implemented (JAX defines them); integer: the
    operand must be an integer or bool (a TypeError naming the function otherwise)."""
    lax_name = lax_name or op

    def fn(x):
        x = as_tracer(x)
        if integer:
            require_integer(f"lax.{lax_name}", x)
        if real_only:
            complex_not_implemented(f"lax.{lax_name}", x)
        return bind1(op, [x], weak_type=x.weak_type)
    fn.__name__ = fn.__qualname__ = lax_name
    fn.__doc__ = f"jax.lax.{lax_name}: the elementwise `{op}` op."
    return fn


def binary_op(op: str, lax_name: str | None = None, real_only: bool = False, integer: bool = False):
    """lax.`lax_name`; real_only: complex operands are not implemented (JAX defines them); integer: the
    operands must be integers or bools (a TypeError naming the function otherwise)."""
    lax_name = lax_name or op

    def fn(x, y):
        (x, y), weak = strict_operands(lax_name, x, y)
        if integer:
            require_integer(f"lax.{lax_name}", x)
        if real_only:
            complex_not_implemented(f"lax.{lax_name}", x)
        return bind1(op, [x, y], weak_type=weak)
    fn.__name__ = fn.__qualname__ = lax_name
    fn.__doc__ = f"jax.lax.{lax_name}: the elementwise `{op}` op (operands of one dtype)."
    return fn


neg = unary_op("neg")
sign = unary_op("sign")
floor = unary_op("floor")
ceil = unary_op("ceil")
exp = unary_op("exp")
exp2 = unary_op("exp2", real_only=True)
log = unary_op("log")
log1p = unary_op("log1p")
expm1 = unary_op("expm1")
sqrt = unary_op("sqrt")
rsqrt = unary_op("rsqrt")
cbrt = unary_op("cbrt")
tanh = unary_op("tanh")
sinh = unary_op("sinh")
cosh = unary_op("cosh")
sin = unary_op("sin")
cos = unary_op("cos")
tan = unary_op("tan")
asin = unary_op("asin")
acos = unary_op("acos")
atan = unary_op("atan")
asinh = unary_op("asinh")
acosh = unary_op("acosh")
atanh = unary_op("atanh")
logistic = unary_op("logistic")
erf = unary_op("erf")
erfc = unary_op("erfc")
erf_inv = unary_op("erf_inv")
lgamma = unary_op("lgamma")
digamma = unary_op("digamma")
zeta = binary_op("zeta")
bessel_i0e = unary_op("bessel_i0e")
bessel_i1e = unary_op("bessel_i1e")
is_finite = unary_op("is_finite")
real = unary_op("real")
imag = unary_op("imag")
bitwise_not = unary_op("not", "bitwise_not", integer=True)

add = binary_op("add")
sub = binary_op("sub")
mul = binary_op("mul")
div = binary_op("div")
rem = binary_op("rem")
max = binary_op("max", real_only=True)
min = binary_op("min", real_only=True)
atan2 = binary_op("atan2", real_only=True)
complex = binary_op("complex")
bitwise_and = binary_op("and", "bitwise_and", integer=True)
bitwise_or = binary_op("or", "bitwise_or", integer=True)
bitwise_xor = binary_op("xor", "bitwise_xor", integer=True)
shift_left = binary_op("shift_left")
shift_right_logical = binary_op("shift_right_logical")
shift_right_arithmetic = binary_op("shift_right_arithmetic")
eq = binary_op("eq")
ne = binary_op("ne")
lt = binary_op("lt")
le = binary_op("le")
gt = binary_op("gt")
ge = binary_op("ge")


# ---- functions built from several ops -----------------------------------------------------------

def abs(x):
    """jax.lax.abs: |x| for signed and inexact x (jax.lax refuses unsigned integers and bools)."""
    x = as_tracer(x)
    if x.type.dtype == "bool" or x.type.dtype.startswith("u"):
        raise TracingTypeError(located(f"lax.abs does not accept {x.type.dtype} operands; it takes signed "
                                       f"integers, floats and complexes"))
    return bind1("abs", [x], weak_type=x.weak_type)


def conj(x):
    """jax.lax.conj: the complex conjugate; a float32/float64 operand gives complex64/complex128."""
    x = as_tracer(x)
    if x.type.dtype in COMPLEX_OF:
        x = convert(x, COMPLEX_OF[x.type.dtype], x.weak_type)
    return bind1("conj", [x], weak_type=x.weak_type)


def pow(x, y):
    """jax.lax.pow: x ** y; an integer exponent (an array or a Python int) may raise an inexact base.
    Integer bases are accepted too (jax.lax.pow refuses them): the IR's pow computes them exactly."""
    x_dtype, _ = dtype_and_weak(x)
    y_dtype, y_weak = dtype_and_weak(y)
    if is_inexact(x_dtype) and is_integer(y_dtype):
        y = convert(as_tracer(y), x_dtype, y_weak)
    (x, y), weak = strict_operands("pow", x, y)
    return bind1("pow", [x, y], weak_type=weak)


class RoundingMethod(enum.IntEnum):
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
    """jax.lax.round: halves round away from zero by default, or to even."""
    x = as_tracer(x)
    if RoundingMethod(rounding_method) == RoundingMethod.TO_NEAREST_EVEN:
        return bind1("round", [x], weak_type=x.weak_type)
    # trunc(x) is exact and so is x - trunc(x): add sign(x) where that fraction is at least a half.
    truncated = bind1("trunc", [x], weak_type=x.weak_type)
    half_or_more = ge(abs(sub(x, truncated)), scalar_like(x, 0.5))
    return select(half_or_more, add(truncated, sign(x)), truncated)


def polygamma(m, x):
    """jax.lax.polygamma: the m-th derivative of digamma, (-1)^(m+1) m! zeta(m + 1, x) for integer m >= 1,
    digamma for m = 0, NaN for other m."""
    (m, x), weak = strict_operands("polygamma", m, x)
    if not is_inexact(x.type.dtype):
        raise TracingTypeError(located(f"lax.polygamma takes floating operands, got {x.type}"))
    one = constant(1, x.type.dtype)
    # m! is exact as round(exp(lgamma(m + 1))) while it is an integer of the float type (m <= 22 in f64).
    factorial = bind1("round", [exp(lgamma(add(m, one)))])
    odd = ne(rem(m, constant(2, x.type.dtype)), constant(0, x.type.dtype))
    signed = select(odd, factorial, neg(factorial))
    higher = mul(signed, zeta(add(m, one), x))
    valid = bitwise_and(eq(m, floor(m)), ge(m, constant(0, x.type.dtype)))
    value = select(eq(m, constant(0, x.type.dtype)), digamma(x), higher)
    return select(valid, value, full_like_nan(value))


def full_like_nan(x: Tracer) -> Tracer:
    return broadcast_to(constant(float("nan"), x.type.dtype), x.shape)


def convert_element_type(operand, new_dtype):
    """jax.lax.convert_element_type: the result is strongly typed. As jax.lax, a Python complex
    does not convert to a real dtype (a complex array does, keeping its real part)."""
    dtype = to_dtype_name(new_dtype)
    if isinstance(operand, builtins.complex) and dtype not in (*COMPLEX_OF.values(), "bool"):
        raise TracingTypeError(located(f"lax.convert_element_type: the Python complex {operand!r} cannot be "
                                       f"converted to {dtype}"))
    return convert(as_tracer(operand), dtype)


def stop_gradient(x):
    """jax.lax.stop_gradient: the identity on a pytree of arrays, with zero derivative."""
    from .transforms.custom import stop_gradient as stopped  # transforms import the frontend's namespaces
    return stopped(tree_map(as_tracer, x))


def select_n(which, *cases):
    """jax.lax.select_n: cases[which] elementwise. `which` is bool (at most two cases) or an integer
    array, 0-d or of the cases' shape; the cases share one dtype and one shape (no broadcasting).
    An out-of-range integer picks the nearest case, as XLA's tree of selects does."""
    which = as_tracer(which)
    if not cases:
        raise TracingValueError(located("lax.select_n needs at least one case"))
    dtype = which.type.dtype
    if dtype != "bool" and not is_integer(dtype):
        raise TracingTypeError(located(f"lax.select_n: `which` must be bool or an integer array, got {which.type}"))
    if dtype == "bool" and len(cases) > 2:
        raise TracingTypeError(located(f"lax.select_n: a bool `which` selects between at most 2 cases, got {len(cases)}"))
    case_dtype, weak = strict_dtype("select_n", cases)
    tracers = [convert(as_tracer(case), case_dtype, weak) for case in cases]
    shapes = [t.shape for t in tracers]
    if len(set(shapes)) > 1:
        raise TracingTypeError(located(f"lax.select_n: the cases must have one shape, got {', '.join(map(str, shapes))}"))
    if which.shape not in ((), shapes[0]):
        raise TracingTypeError(located(
            f"lax.select_n: `which` {which.type} must be 0-d or have the cases' shape {shapes[0]}"))
    which = broadcast_to(which, shapes[0])

    def pick(first: int, options: list[Tracer]) -> Tracer:
        if len(options) == 1:
            return options[0]
        middle = len(options) // 2
        below = lt(which, constant(first + middle, dtype)) if dtype != "bool" else bitwise_not(which)
        return bind1("select", [below, pick(first, options[:middle]), pick(first + middle, options[middle:])],
                     weak_type=weak)
    return pick(0, tracers)


def select(pred, on_true, on_false):
    """jax.lax.select: elementwise pred ? on_true : on_false, select_n(pred, on_false, on_true)."""
    return select_n(pred, on_false, on_true)


def clamp(min_value, x, max_value):
    """jax.lax.clamp: min(max(x, min_value), max_value) elementwise."""
    complex_not_implemented("lax.clamp", x)
    return min(max(x, min_value), max_value)


def integer_pow(x, y: int):
    """jax.lax.integer_pow: x ** y for a static int y, by repeated squaring (as XLA expands it)."""
    y = static_int(y, "lax.integer_pow exponent")
    x = as_tracer(x)
    if y < 0 and not is_inexact(x.type.dtype):
        raise TracingTypeError(located(
            f"lax.integer_pow: a negative exponent {y} needs an inexact operand, got {x.type}"))
    result, power, n = None, x, -y if y < 0 else y
    while n:
        if n & 1:
            result = power if result is None else mul(result, power)
        n >>= 1
        if n:
            power = mul(power, power)
    if result is None:
        result = broadcast_to(scalar_like(x, 1), x.shape)
    return div(broadcast_to(scalar_like(x, 1), x.shape), result) if y < 0 else result


def square(x):
    return integer_pow(x, 2)


def reciprocal(x):
    return integer_pow(x, -1)

