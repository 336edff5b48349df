"""cdnajit.numpy elementwise math against numpy, traced and run through the reference interpreter.

Each case draws inputs from its domain, runs the cnp function under jit over several shapes
(0-d, 0-size, 1-size, odd, broadcast) and dtypes, and compares with numpy evaluated in float64
(or in the integer dtype itself), cast to the dtype JAX's rules give.
"""
import math
from typing import Callable, NamedTuple

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32)]
BOOL = [np.dtype(np.bool_)]
NUMERIC = FLOATS + INTS
COMPLEX = [np.dtype(np.complex64), np.dtype(np.complex128)]

# Relative tolerances. The interpreter computes an f16/bf16 op in f32 and rounds once; the numpy
# reference is computed in f64 and rounded once: one op may differ by one unit in the last place,
# 2**-10 for f16 (11-bit significand) and 2**-7 for bf16 (8 bits). Composed functions (hypot,
# logaddexp, sinc...) round after each op, as JAX does, so allow four units. numpy's f32 math is
# accurate to a few ulp (2**-23 each) and f64 to a few 2**-52: 1e-5 and 1e-12 leave room for the
# compositions. Complex dtypes take the tolerance of their parts.
RTOL = {np.dtype(np.float16): 4e-3, BF16: 3.2e-2, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12,
        np.dtype(np.complex64): 1e-5, np.dtype(np.complex128): 1e-12}

UNARY_SHAPES = [(), (0,), (1,), (7,), (3, 1, 5)]
BINARY_SHAPES = [((), ()), ((0,), (1,)), ((7,), ()), ((3, 1, 5), (4, 1)), ((1,), (2, 6))]


def kind(dtype) -> str:
    """numpy's dtype kind, with bfloat16 (kind 'V' in ml_dtypes) counted as a float."""
    return "f" if np.dtype(dtype) == BF16 else np.dtype(dtype).kind


def run(fn, *args):
    return cj.jit(fn, backend="interpret")(*args)


def expected_dtype(result: str, dtype: np.dtype) -> np.dtype:
    """The result dtype by JAX's rules: 'same', 'inexact' (bools and integers up to 32 bits -> float32,
    64-bit integers -> float64), 'float64' (the same, but integers and bools -> float64) or 'bool'."""
    if result == "bool":
        return np.dtype(np.bool_)
    if result == "float64" and kind(dtype) in "biu":
        return np.dtype(np.float64)
    if result == "inexact" and kind(dtype) in "biu":
        return np.dtype(np.float64 if kind(dtype) in "iu" and np.dtype(dtype).itemsize == 8 else np.float32)
    return dtype


def sample(rng, shape, dtype, low, high, grid=None):
    """Values in [low, high] of `dtype` (multiples of `grid` when given, integers for int dtypes)."""
    if kind(dtype) == "b":
        return rng.integers(0, 2, shape).astype(bool)
    values = rng.uniform(low, high, shape)
    if kind(dtype) in "iu":
        low, high = (max(low, 0), max(high, 0)) if kind(dtype) == "u" else (low, high)
        return rng.integers(math.ceil(low), math.floor(high) + 1, shape).astype(dtype)
    if grid is not None:
        values = np.round(values / grid) * grid
    if kind(dtype) == "c":
        return (values + 1j * rng.uniform(low, high, shape)).astype(dtype)
    return values.astype(dtype)


def reference(np_fn, result, *arrays):
    """numpy's answer: floats in float64, integers in their own dtype unless the result is
    inexact (numpy's exp of int8 is float16, JAX's float32)."""
    def widen(a):
        if kind(a.dtype) == "c":
            return a.astype(np.complex128)
        return a.astype(np.float64) if kind(a.dtype) == "f" or result in ("inexact", "float64") else a
    with np.errstate(all="ignore"):
        return np_fn(*(widen(a) for a in arrays))


def assert_matches(actual, expected, dtype):
    assert actual.dtype == dtype, (actual.dtype, dtype)
    assert actual.shape == np.shape(expected)
    if kind(dtype) in "fc":
        rtol = RTOL[dtype]
        np.testing.assert_allclose(actual.astype(np.complex128 if kind(dtype) == "c" else np.float64),
                                   np.asarray(expected).astype(dtype).astype(np.complex128), rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(actual, np.asarray(expected).astype(dtype))


class Unary(NamedTuple):
    name: str
    np_fn: Callable
    low: float
    high: float
    result: str          # 'same', 'inexact' or 'bool'
    dtypes: list


UNARY = [
    Unary("exp", np.exp, -3, 3, "inexact", FLOATS + INTS + BOOL),
    Unary("exp2", np.exp2, -3, 3, "inexact", FLOATS + INTS),
    Unary("expm1", np.expm1, -3, 3, "inexact", FLOATS),
    Unary("log", np.log, 0.1, 5, "inexact", FLOATS + INTS),
    Unary("log2", np.log2, 0.1, 5, "inexact", FLOATS + INTS),
    Unary("log10", np.log10, 0.1, 5, "inexact", FLOATS),
    Unary("log1p", np.log1p, -0.5, 5, "inexact", FLOATS),
    Unary("sqrt", np.sqrt, 0, 5, "inexact", FLOATS + INTS + BOOL),
    Unary("cbrt", np.cbrt, -5, 5, "inexact", FLOATS + INTS),
    Unary("tanh", np.tanh, -3, 3, "inexact", FLOATS),
    Unary("sinh", np.sinh, -3, 3, "inexact", FLOATS),
    Unary("cosh", np.cosh, -3, 3, "inexact", FLOATS),
    Unary("sin", np.sin, -4, 4, "inexact", FLOATS + INTS),
    Unary("cos", np.cos, -4, 4, "inexact", FLOATS),
    Unary("tan", np.tan, -1.3, 1.3, "inexact", FLOATS),
    Unary("arcsin", np.arcsin, -0.95, 0.95, "inexact", FLOATS),
    Unary("arccos", np.arccos, -0.95, 0.95, "inexact", FLOATS),
    Unary("arctan", np.arctan, -5, 5, "inexact", FLOATS + INTS),
    Unary("arcsinh", np.arcsinh, -5, 5, "inexact", FLOATS),
    Unary("arccosh", np.arccosh, 1.05, 5, "inexact", FLOATS),
    Unary("arctanh", np.arctanh, -0.9, 0.9, "inexact", FLOATS),
    Unary("reciprocal", np.reciprocal, 0.25, 5, "inexact", FLOATS + INTS),
    Unary("deg2rad", np.deg2rad, -360, 360, "inexact", FLOATS + INTS),
    Unary("rad2deg", np.rad2deg, -7, 7, "inexact", FLOATS),
    Unary("sinc", np.sinc, -3, 3, "inexact", FLOATS),
    Unary("fabs", np.fabs, -5, 5, "inexact", FLOATS + INTS),
    Unary("negative", np.negative, -5, 5, "same", NUMERIC),
    Unary("positive", lambda x: x, -5, 5, "same", NUMERIC + BOOL),
    Unary("absolute", np.absolute, -5, 5, "same", NUMERIC + BOOL),
    Unary("sign", np.sign, -5, 5, "same", NUMERIC),
    Unary("square", np.square, -5, 5, "same", NUMERIC),
    Unary("floor", np.floor, -5, 5, "same", NUMERIC + BOOL),
    Unary("ceil", np.ceil, -5, 5, "same", NUMERIC + BOOL),
    Unary("trunc", np.trunc, -5, 5, "same", NUMERIC),
    Unary("fix", np.fix, -5, 5, "same", NUMERIC),
    Unary("rint", np.rint, -5, 5, "float64", FLOATS + INTS),  # jnp.rint converts every integer to float64
    Unary("signbit", np.signbit, -5, 5, "bool", NUMERIC + BOOL),
    Unary("isnan", np.isnan, -5, 5, "bool", NUMERIC + BOOL),
    Unary("isfinite", np.isfinite, -5, 5, "bool", NUMERIC + BOOL),
    Unary("logical_not", np.logical_not, -2, 2, "bool", NUMERIC + BOOL),
    Unary("invert", np.invert, -5, 5, "same", INTS + BOOL),
]


@pytest.mark.parametrize("case", UNARY, ids=lambda c: c.name)
def test_unary_against_numpy(case):
    rng = np.random.default_rng(0)
    for dtype in case.dtypes:
        arrays = [sample(rng, shape, dtype, case.low, case.high) for shape in UNARY_SHAPES]
        fn = getattr(cnp, case.name)
        results = run(lambda xs: [fn(x) for x in xs], arrays)
        for array, result in zip(arrays, results):
            assert_matches(result, reference(case.np_fn, case.result, array), expected_dtype(case.result, dtype))


class Binary(NamedTuple):
    name: str
    np_fn: Callable
    lhs: tuple           # (low, high) of the first operand
    rhs: tuple
    result: str
    dtypes: list
    grid: float | None = None   # float inputs on a grid, where the function is discontinuous
    nonzero_rhs: bool = False   # integer divisors must not be 0 (undefined behaviour, as in XLA)


SMALL = (-4, 4)
BINARY = [
    Binary("add", np.add, SMALL, SMALL, "same", NUMERIC + BOOL),
    Binary("subtract", np.subtract, SMALL, SMALL, "same", NUMERIC),
    Binary("multiply", np.multiply, SMALL, SMALL, "same", NUMERIC + BOOL),
    Binary("divide", np.divide, SMALL, (0.5, 4), "inexact", NUMERIC, nonzero_rhs=True),
    Binary("true_divide", np.true_divide, SMALL, (-4, -0.5), "inexact", FLOATS),
    Binary("floor_divide", np.floor_divide, (-9, 9), SMALL, "same", NUMERIC, grid=0.25, nonzero_rhs=True),
    Binary("remainder", np.remainder, (-9, 9), SMALL, "same", NUMERIC, grid=0.25, nonzero_rhs=True),
    Binary("fmod", np.fmod, (-9, 9), SMALL, "same", NUMERIC, grid=0.25, nonzero_rhs=True),
    Binary("power", np.power, (0.1, 3), (-2, 2), "same", FLOATS),
    Binary("power", np.power, (-3, 3), (0, 4), "same", INTS),
    Binary("float_power", np.power, (0.1, 3), (-2, 2), "inexact", FLOATS),
    Binary("maximum", np.maximum, SMALL, SMALL, "same", NUMERIC + BOOL),
    Binary("minimum", np.minimum, SMALL, SMALL, "same", NUMERIC + BOOL),
    Binary("fmax", np.fmax, SMALL, SMALL, "same", NUMERIC),
    Binary("fmin", np.fmin, SMALL, SMALL, "same", NUMERIC),
    Binary("arctan2", np.arctan2, SMALL, SMALL, "inexact", FLOATS + INTS),
    Binary("hypot", np.hypot, SMALL, SMALL, "inexact", FLOATS + INTS),
    Binary("copysign", np.copysign, SMALL, SMALL, "inexact", FLOATS),
    Binary("logaddexp", np.logaddexp, SMALL, SMALL, "inexact", FLOATS),
    Binary("logaddexp2", np.logaddexp2, SMALL, SMALL, "inexact", FLOATS),
    Binary("heaviside", np.heaviside, (-2, 2), SMALL, "inexact", FLOATS, grid=1.0),
    Binary("equal", np.equal, (-2, 2), (-2, 2), "bool", NUMERIC + BOOL, grid=0.5),
    Binary("not_equal", np.not_equal, (-2, 2), (-2, 2), "bool", NUMERIC + BOOL, grid=0.5),
    Binary("less", np.less, (-2, 2), (-2, 2), "bool", NUMERIC + BOOL, grid=0.5),
    Binary("less_equal", np.less_equal, (-2, 2), (-2, 2), "bool", NUMERIC + BOOL, grid=0.5),
    Binary("greater", np.greater, (-2, 2), (-2, 2), "bool", NUMERIC + BOOL, grid=0.5),
    Binary("greater_equal", np.greater_equal, (-2, 2), (-2, 2), "bool", NUMERIC + BOOL, grid=0.5),
    Binary("logical_and", np.logical_and, (-1, 1), (-1, 1), "bool", NUMERIC + BOOL, grid=1.0),
    Binary("logical_or", np.logical_or, (-1, 1), (-1, 1), "bool", NUMERIC + BOOL, grid=1.0),
    Binary("logical_xor", np.logical_xor, (-1, 1), (-1, 1), "bool", NUMERIC + BOOL, grid=1.0),
    Binary("bitwise_and", np.bitwise_and, (-100, 100), (-100, 100), "same", INTS + BOOL),
    Binary("bitwise_or", np.bitwise_or, (-100, 100), (-100, 100), "same", INTS + BOOL),
    Binary("bitwise_xor", np.bitwise_xor, (-100, 100), (-100, 100), "same", INTS + BOOL),
    Binary("left_shift", np.left_shift, (-100, 100), (0, 7), "same", INTS),
    Binary("right_shift", np.right_shift, (-100, 100), (0, 7), "same", INTS),
]


@pytest.mark.parametrize("case", BINARY, ids=lambda c: f"{c.name}-{c.dtypes[0].kind}")
def test_binary_against_numpy_with_broadcasting(case):
    rng = np.random.default_rng(1)
    fn = getattr(cnp, case.name)
    for dtype in case.dtypes:
        pairs = []
        for lhs_shape, rhs_shape in BINARY_SHAPES:
            lhs = sample(rng, lhs_shape, dtype, *case.lhs, case.grid)
            rhs = sample(rng, rhs_shape, dtype, *case.rhs, case.grid)
            if case.nonzero_rhs:
                rhs = np.where(rhs == 0, np.ones((), dtype), rhs).astype(dtype)
            pairs.append((lhs, rhs))
        results = run(lambda ps: [fn(a, b) for a, b in ps], pairs)
        for (lhs, rhs), result in zip(pairs, results):
            assert_matches(result, reference(case.np_fn, case.result, lhs, rhs), expected_dtype(case.result, dtype))


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 3.0])


@pytest.mark.parametrize("name, np_fn", [
    ("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite), ("isposinf", np.isposinf),
    ("isneginf", np.isneginf), ("signbit", np.signbit), ("sign", np.sign), ("nan_to_num", np.nan_to_num),
    ("floor", np.floor), ("absolute", np.absolute), ("sinc", np.sinc), ("exp", np.exp), ("log", np.log),
])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_unary_special_values(name, np_fn, dtype):
    x = SPECIAL.astype(dtype)
    with np.errstate(all="ignore"):
        expected = np.asarray(np_fn(x.astype(np.float64)))
    if name == "nan_to_num":   # the default replacements of infinities are the dtype's own limits
        info = cnp.finfo(dtype)
        expected = np.nan_to_num(x.astype(np.float64), posinf=float(info.max), neginf=float(info.min))
    result = run(getattr(cnp, name), x)
    # NaN and infinities must match exactly; finite values to the dtype's tolerance (sinc(3) is
    # sin of a rounded 3*pi: about 1e-3 in f16 instead of 0, hence the absolute tolerance).
    np.testing.assert_allclose(result.astype(np.float64), expected.astype(result.dtype).astype(np.float64),
                               rtol=RTOL[dtype], atol=RTOL[dtype])
    if name == "signbit":
        np.testing.assert_array_equal(result, [False, False, True, False, True, False, True, False])


@pytest.mark.parametrize("name, np_fn", [
    ("maximum", np.maximum), ("minimum", np.minimum), ("fmax", np.fmax), ("fmin", np.fmin),
    ("logaddexp", np.logaddexp), ("hypot", np.hypot), ("copysign", np.copysign), ("heaviside", np.heaviside),
    ("add", np.add), ("divide", np.divide), ("remainder", np.remainder), ("floor_divide", np.floor_divide),
    ("fmod", np.fmod), ("arctan2", np.arctan2), ("power", np.power),
])
def test_binary_special_values(name, np_fn):
    # every pair of special values; zeros and infinities exercise the IEEE corner cases.
    x, y = np.meshgrid(SPECIAL[:6], SPECIAL)
    with np.errstate(all="ignore"):
        expected = np_fn(x, y)
    result = run(getattr(cnp, name), x, y)
    if name == "floor_divide":   # numpy rounds x // 0 and x // inf through its own divmod path
        finite = np.isfinite(y) & (y != 0)
        result, expected = result[finite], expected[finite]
    np.testing.assert_allclose(result, expected, rtol=RTOL[np.dtype(np.float64)])


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "tanh", "exp2", "log2", "log10", "negative",
                                  "sign", "square", "reciprocal", "real", "imag", "conj", "angle", "absolute",
                                  "isfinite", "isnan", "rint"])
def test_complex_unary(name, dtype):
    rng = np.random.default_rng(2)
    z = sample(rng, (3, 4), dtype, 0.2, 2)
    np_fn = {"conj": np.conj}.get(name, getattr(np, name))
    expected = reference(np_fn, "same", z)
    result = run(getattr(cnp, name), z)
    part = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
    expected_type = part if name in ("real", "imag", "angle", "absolute") else np.dtype(bool) if name.startswith(
        "is") else dtype
    assert_matches(result, expected, expected_type)


@pytest.mark.parametrize("name", ["less", "less_equal", "greater", "greater_equal", "maximum", "minimum",
                                  "equal", "add", "multiply", "divide"])
def test_complex_binary_orders_lexicographically(name):
    a = np.array([1 + 2j, 1 + 2j, 3 - 1j, -1 + 0j, 2 + 5j], np.complex64)
    b = np.array([1 + 3j, 1 + 2j, 2 + 9j, -1 - 1j, 2 + 5j], np.complex64)
    expected = getattr(np, name)(a, b)
    np.testing.assert_allclose(run(getattr(cnp, name), a, b), expected, rtol=RTOL[a.dtype])


def test_round_half_to_even_and_decimals():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997])
    np.testing.assert_array_equal(run(cnp.round, x), np.round(x))
    rng = np.random.default_rng(3)
    y = rng.uniform(-300, 300, 50)
    for decimals in (1, 2, -1):
        # 10**decimals scaling rounds differently from numpy's only at exact ties: compare loosely.
        np.testing.assert_allclose(run(lambda v: cnp.round(v, decimals), y), np.round(y, decimals),
                                   atol=10.0 ** -decimals)
    half = y.astype(np.float16)
    result = run(lambda v: cnp.around(v, 1), half)
    assert result.dtype == np.float16
    np.testing.assert_allclose(result, np.round(half.astype(np.float64), 1).astype(np.float16), rtol=1e-3)
    ints = np.array([-7, 0, 12], np.int32)
    np.testing.assert_array_equal(run(lambda v: cnp.round(v, 2), ints), ints)
    with pytest.raises(NotImplementedError, match="decimals < 0"):
        run(lambda v: cnp.round(v, -1), ints)
    with pytest.raises(cj.TracingTypeError, match="decimals must be an int"):
        run(lambda v: cnp.round(v, 1.5), y)


def test_integer_power_by_concrete_exponent():
    x = np.array([-3, -1, 0, 2, 5], np.int8)
    result = run(lambda v: (v ** 3, cnp.power(v, np.int32(2)), v ** 0), x)
    np.testing.assert_array_equal(result[0], x ** 3)
    assert result[1].dtype == np.int8      # a concrete integer exponent keeps the base's dtype
    np.testing.assert_array_equal(result[2], np.ones(5, np.int8))
    with pytest.raises(cj.TracingTypeError, match="negative power"):  # a TypeError in JAX too
        run(lambda v: v ** -1, x)


def test_where_broadcasts_and_converts_the_condition():
    rng = np.random.default_rng(4)
    c = rng.integers(-1, 2, (3, 1)).astype(np.int32)
    x = rng.standard_normal((1, 5)).astype(np.float32)
    y = rng.standard_normal((5,))
    result = run(lambda c, x, y: cnp.where(c, x, y), c, x, y)
    np.testing.assert_allclose(result, np.where(c, x, y), rtol=1e-7)
    assert result.dtype == np.float64 and result.shape == (3, 5)
    result = run(lambda x: cnp.where(x > 0, x, 0.0), x)
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result, np.where(x > 0, x, 0))


def test_where_with_one_or_two_arguments_is_an_error():
    x = np.ones(3)
    with pytest.raises(cj.ConcretizationError, match="data-dependent shape") as info:
        run(lambda v: cnp.where(v > 0), x)
    assert "test_elementwise.py" in str(info.value)
    with pytest.raises(cj.TracingTypeError, match="either one argument or three"):
        run(lambda v: cnp.where(v > 0, v), x)


@pytest.mark.parametrize("low, high", [(-1, 1), (None, 0.5), (-0.5, None), (np.array([-1, 0, 1.0]), 2)])
def test_clip(low, high):
    x = np.linspace(-2, 2, 12).reshape(4, 3).astype(np.float32)
    result = run(lambda v: cnp.clip(v, low, high), x)
    np.testing.assert_array_equal(result, np.clip(x, low, high))
    assert result.dtype == np.result_type(x.dtype, *(np.asarray(b).dtype for b in (low, high)
                                                    if isinstance(b, np.ndarray)))
    np.testing.assert_array_equal(run(lambda v: cnp.clip(v, a_min=-1, a_max=1), x), np.clip(x, -1, 1))


def test_clip_promotes_as_maximum_does():
    x = np.arange(-3, 4, dtype=np.int32)
    result = run(lambda v: cnp.clip(v, -1.5, 2.5), x)
    assert result.dtype == np.float64      # jnp: maximum(-1.5, int32 array) is float64
    np.testing.assert_array_equal(result, np.clip(x, -1.5, 2.5))


def test_nan_to_num_with_replacements_and_complex():
    x = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    np.testing.assert_array_equal(run(lambda v: cnp.nan_to_num(v, nan=-1.0, posinf=9.0, neginf=-9.0), x),
                                  [-1, 9, -9, 1])
    z = np.array([complex(np.nan, np.inf), 1 + 2j])
    np.testing.assert_array_equal(run(cnp.nan_to_num, z), np.nan_to_num(z))
    ints = np.arange(3)
    np.testing.assert_array_equal(run(cnp.nan_to_num, ints), ints)


def test_divmod_and_modf():
    x = np.array([-7.5, -1.0, 0.25, 5.5])
    q, r = run(lambda v: cnp.divmod(v, 2.0), x)
    np.testing.assert_array_equal(q, x // 2.0)
    np.testing.assert_array_equal(r, x % 2.0)
    frac, whole = run(cnp.modf, x)
    np.testing.assert_array_equal(frac, np.modf(x)[0])
    np.testing.assert_array_equal(whole, np.modf(x)[1])


@pytest.mark.parametrize("kwargs", [{}, dict(rtol=0.1), dict(atol=0.5), dict(equal_nan=True)])
def test_isclose_and_allclose(kwargs):
    a = np.array([1.0, 1.05, np.inf, -np.inf, np.nan, np.inf, 0.0, 2.0])
    b = np.array([1.0, 1.0, np.inf, np.inf, np.nan, 1e308, 1e-9, 2.4])
    np.testing.assert_array_equal(run(lambda x, y: cnp.isclose(x, y, **kwargs), a, b), np.isclose(a, b, **kwargs))
    assert run(lambda x, y: cnp.allclose(x, y, **kwargs), a[:2], b[:2]) == np.allclose(a[:2], b[:2], **kwargs)
    f32 = a.astype(np.float32)
    np.testing.assert_array_equal(run(lambda x: cnp.isclose(x, 1), f32), np.isclose(f32, 1))


def test_astype_conversions():
    x = np.array([-1.7, 0.0, 2.5, 300.0])
    result = run(lambda v: (cnp.astype(v, cnp.int32), cnp.astype(v, bool), cnp.astype(v, "float16")), x)
    np.testing.assert_array_equal(result[0], x.astype(np.int32))
    np.testing.assert_array_equal(result[1], x != 0)
    assert result[2].dtype == np.float16


# ---- ufunc methods --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["add", "multiply", "subtract", "maximum", "power", "equal", "logical_and",
                                  "arctan2", "floor_divide"])
@pytest.mark.parametrize("lhs_shape, rhs_shape", [((3,), (4,)), ((2, 3), (5,)), ((), (3,)), ((0,), (2,)),
                                                  ((2,), ())])
def test_ufunc_outer(name, lhs_shape, rhs_shape):
    rng = np.random.default_rng(5)
    a = rng.uniform(0.5, 3, lhs_shape)
    b = rng.uniform(0.5, 3, rhs_shape)
    result = run(getattr(cnp, name).outer, a, b)
    assert result.shape == lhs_shape + rhs_shape
    np.testing.assert_allclose(result, getattr(np, name).outer(a, b), rtol=1e-12)


@pytest.mark.parametrize("name, axis", [("add", 0), ("add", 1), ("multiply", None), ("maximum", 1),
                                        ("minimum", 0), ("logical_and", 0), ("logical_or", 1)])
def test_ufunc_reduce(name, axis):
    x = np.random.default_rng(6).uniform(-2, 2, (3, 4))
    np.testing.assert_allclose(run(lambda v: getattr(cnp, name).reduce(v, axis=axis), x),
                               getattr(np, name).reduce(x, axis=axis), rtol=1e-12)
    np.testing.assert_allclose(run(lambda v: getattr(cnp, name).reduce(v, axis=axis, keepdims=True), x),
                               getattr(np, name).reduce(x, axis=axis, keepdims=True), rtol=1e-12)


@pytest.mark.parametrize("name", ["add", "multiply"])
def test_ufunc_accumulate(name):
    x = np.random.default_rng(7).uniform(-2, 2, (3, 4))
    for axis in (0, 1):
        np.testing.assert_allclose(run(lambda v: getattr(cnp, name).accumulate(v, axis=axis), x),
                                   getattr(np, name).accumulate(x, axis=axis), rtol=1e-12)


def test_ufunc_without_a_reduction_says_so():
    with pytest.raises(NotImplementedError, match="subtract.reduce"):
        run(lambda v: cnp.subtract.reduce(v), np.ones(3))
    with pytest.raises(NotImplementedError, match="inplace=False"):
        run(lambda v: cnp.add.at(v, 0, 1.0), np.ones(3))
    assert cnp.add.identity == 0 and cnp.multiply.identity == 1 and cnp.add.nin == 2
    assert repr(cnp.add) == "<cdnajit.numpy.ufunc 'add'>"


def test_ufunc_at_updates_a_copy():
    x = np.arange(5.0)
    result = run(lambda v: cnp.add.at(v, np.array([0, 2, 2]), 10.0, inplace=False), x)
    expected = x.copy()
    np.add.at(expected, [0, 2, 2], 10.0)
    np.testing.assert_array_equal(result, expected)


def test_unsupported_dtype_names_the_function_and_line():
    with pytest.raises(cj.TracingTypeError, match=r"floor_divide does not support complex.*test_elementwise\.py"):
        run(lambda v: cnp.floor_divide(v, v), np.ones(2, np.complex64))
    with pytest.raises(cj.TracingTypeError, match="sub.*bool"):
        run(lambda v: cnp.subtract(v, v), np.ones(2, bool))
