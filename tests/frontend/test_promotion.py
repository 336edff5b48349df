"""JAX's type promotion with 64-bit types enabled, and the dtype objects and queries of cdnajit.numpy.

Expected values are JAX's documented promotion table (docs: "Type promotion semantics"), written
out by hand here rather than recomputed from frontend/dtypes.py, so the two can disagree.
"""
import math

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp

BF16 = np.dtype(ml_dtypes.bfloat16)


def traced_dtype(fn, *args):
    """(dtype of jit(fn)'s numpy result, weak_type of the traced result)."""
    seen = {}

    def wrapper(*traced):
        out = fn(*traced)
        seen["weak"] = out.weak_type
        return out
    result = cj.jit(wrapper, backend="interpret")(*args)
    return result.dtype, seen["weak"]


def array(dtype, shape=(3,)):
    return np.ones(shape, dtype)


# (lhs dtype, rhs dtype, result dtype, weak): both operands strongly typed arrays.
ARRAY_PAIRS = [
    ("bool", "bool", "bool", False), ("bool", "uint8", "uint8", False), ("bool", "int32", "int32", False),
    ("bool", "float16", "float16", False), ("bool", "complex64", "complex64", False),
    ("uint8", "int8", "int16", False), ("uint8", "uint16", "uint16", False), ("uint16", "int16", "int32", False),
    ("uint32", "int32", "int64", False), ("uint32", "uint64", "uint64", False),
    ("uint64", "int64", "float64", True),   # JAX: u64 with i64 joins at the weak float node
    ("int8", "uint64", "float64", True),
    ("uint8", BF16, BF16, False), ("int64", "float16", "float16", False), ("int32", "float32", "float32", False),
    (BF16, "float16", "float32", False), ("float16", "float32", "float32", False),
    ("float32", "float64", "float64", False), ("float32", "complex64", "complex64", False),
    ("float64", "complex64", "complex128", False), (BF16, "complex64", "complex64", False),
    ("int8", "complex128", "complex128", False), ("int16", "int64", "int64", False),
]


@pytest.mark.parametrize("lhs, rhs, expected, weak", ARRAY_PAIRS, ids=lambda v: str(np.dtype(v)) if
                         not isinstance(v, bool) else str(v))
def test_array_array_promotion(lhs, rhs, expected, weak):
    assert traced_dtype(cnp.add, array(lhs), array(rhs)) == (np.dtype(expected), weak)
    assert traced_dtype(cnp.add, array(rhs), array(lhs)) == (np.dtype(expected), weak)


# (array dtype, Python scalar inside the function, result dtype, weak)
WEAK_SCALARS = [
    ("float16", 2.0, "float16", False), (BF16, 1, BF16, False), ("int32", 2.5, "float64", True),
    ("uint8", 1, "uint8", False), ("int8", 3, "int8", False), ("bool", 1, "int64", True),
    ("bool", 1.5, "float64", True), ("float32", 1j, "complex64", False), ("int32", 1j, "complex128", True),
    ("uint16", True, "uint16", False), ("float64", 2, "float64", False), ("complex64", 2.0, "complex64", False),
]


@pytest.mark.parametrize("dtype, scalar, expected, weak", WEAK_SCALARS)
def test_python_scalars_are_weak(dtype, scalar, expected, weak):
    assert traced_dtype(lambda x: x * scalar, array(dtype)) == (np.dtype(expected), weak)
    assert traced_dtype(lambda x: scalar + x, array(dtype)) == (np.dtype(expected), weak)


@pytest.mark.parametrize("dtype, scalar, expected", [
    ("float16", np.float32(2), "float32"), ("int8", np.int64(1), "int64"), ("float16", np.float64(1), "float64"),
    (BF16, np.float16(1), "float32"), ("uint8", np.int8(1), "int16"),
])
def test_numpy_scalars_are_strong(dtype, scalar, expected):
    assert traced_dtype(lambda x: x * scalar, array(dtype)) == (np.dtype(expected), False)


def test_python_scalar_jit_arguments_stay_weak():
    x = array("float16")
    assert traced_dtype(lambda x, s: x * s, x, 2.0) == (np.dtype("float16"), False)
    assert traced_dtype(lambda s: s * 2, 3.0) == (np.dtype("float64"), True)
    assert traced_dtype(lambda s: s + 1, 3) == (np.dtype("int64"), True)
    assert traced_dtype(lambda x, s: x * s, x, np.float64(2.0)) == (np.dtype("float64"), False)
    assert traced_dtype(lambda x, s: x + s, array("int8"), 300)[0] == np.dtype("int8")


def where_branches(c, x, y):
    return cnp.where(c, x, y)


# (function, argument builders, result dtype, weak): the dtype rules of particular functions.
FUNCTION_RULES = [
    ("exp i32", cnp.exp, [array("int32")], "float32", False),
    ("exp bool", cnp.exp, [array("bool")], "float32", False),
    ("exp weak int", lambda: cnp.exp(2), [], "float64", True),
    ("sqrt f16", cnp.sqrt, [array("float16")], "float16", False),
    ("sin bf16", cnp.sin, [array(BF16)], BF16, False),
    ("abs c64", cnp.abs, [array("complex64")], "float32", False),
    ("abs weak complex", lambda: cnp.abs(1j), [], "float64", True),
    ("divide i32 i32", cnp.divide, [array("int32"), array("int32")], "float32", False),
    ("divide i8 weak", lambda x: x / 2, [array("int8")], "float32", False),
    ("true_divide f16 weak", lambda x: x / 2, [array("float16")], "float16", False),
    ("floor_divide i32", cnp.floor_divide, [array("int32"), array("int32")], "int32", False),
    ("floor_divide bool", cnp.floor_divide, [array("bool"), array("bool")], "int32", False),
    ("remainder u8 i8", cnp.remainder, [array("uint8"), array("int8")], "int16", False),
    ("power bool bool", cnp.power, [array("bool"), array("bool")], "int32", False),
    ("power f16 int", lambda x: x ** 3, [array("float16")], "float16", False),
    ("square bool", cnp.square, [array("bool")], "int32", False),
    ("maximum u8 i8", cnp.maximum, [array("uint8"), array("int8")], "int16", False),
    ("where f16 weak", lambda c, x: cnp.where(c, x, 1.0), [array("bool"), array("float16")], "float16", False),
    ("where weak weak", lambda c: cnp.where(c, 1, 2.0), [array("bool")], "float64", True),
    ("where int cond", where_branches, [array("int32"), array("int8"), array("uint8")], "int16", False),
    ("less i8 weak", lambda x: x < 2.5, [array("int8")], "bool", True),  # the join of i8 and f* is weak,
    ("logical_and", cnp.logical_and, [array("float32"), array("int8")], "bool", False),
    ("arctan2 i32 f16", cnp.arctan2, [array("int32"), array("float16")], "float16", False),
    ("angle i32", cnp.angle, [array("int32")], "float64", False),
    ("real c128", cnp.real, [array("complex128")], "float64", False),
    ("imag f32", cnp.imag, [array("float32")], "float32", False),
    ("rint i8", cnp.rint, [array("int8")], "float64", False),
    ("floor i8", cnp.floor, [array("int8")], "int8", False),
    ("round u16", cnp.round, [array("uint16")], "uint16", False),
    ("hypot i8", cnp.hypot, [array("int8"), array("int8")], "float32", False),
    ("reciprocal i32", cnp.reciprocal, [array("int32")], "float32", False),
    ("exp i64", cnp.exp, [array("int64")], "float64", False),
    ("float_power f32", cnp.float_power, [array("float32"), array("float32")], "float32", False),
    ("clip i32 weak floats", lambda x: cnp.clip(x, -1.5, 2.5), [array("int32")], "float64", True),
    ("clip f16 weak", lambda x: cnp.clip(x, 0, 1), [array("float16")], "float16", False),
    ("left_shift u8 weak", lambda x: x << 2, [array("uint8")], "uint8", False),
    ("astype", lambda x: cnp.astype(x, cnp.bfloat16), [array("int32")], BF16, False),
    ("scalar type", lambda x: cnp.float16(x), [array("int64")], "float16", False),
]


@pytest.mark.parametrize("name, fn, args, expected, weak", FUNCTION_RULES, ids=[r[0] for r in FUNCTION_RULES])
def test_function_result_dtypes(name, fn, args, expected, weak):
    assert traced_dtype(fn, *args) == (np.dtype(expected), weak)


# ---- dtype queries ---------------------------------------------------------------------------------

@pytest.mark.parametrize("a, b, expected", [
    ("int32", "float32", "float32"), (cnp.int32, cnp.float32, "float32"), (np.uint16, np.dtype("int32"), "int32"),
    ("uint8", int, "uint8"), ("float16", float, "float16"), (int, float, "float64"), (bool, "int8", "int8"),
    (cnp.bfloat16, cnp.float16, "float32"), ("uint64", "int64", "float64"), (complex, "float32", "complex64"),
])
def test_promote_types(a, b, expected):
    assert cnp.promote_types(a, b) == np.dtype(expected)
    assert cnp.promote_types(b, a) == np.dtype(expected)


def test_result_type():
    assert cnp.result_type("int32", "float32") == np.float32
    assert cnp.result_type(np.uint16, np.dtype("int32")) == np.int32
    assert cnp.result_type(1.0, cnp.bfloat16(2)) == BF16
    assert cnp.result_type(np.arange(4), np.zeros(4, np.float32)) == np.float32
    assert cnp.result_type(1, 2.0) == np.float64
    assert cnp.result_type(np.int8(1), 1) == np.int8
    with pytest.raises(cj.TracingValueError, match="at least one"):
        cnp.result_type()


def test_scalar_types_are_dtype_specifiers_and_converters():
    assert np.dtype(cnp.float32) == np.float32 and np.dtype(cnp.bfloat16) == BF16
    assert cnp.dtype(cnp.int8) == np.int8 and cnp.dtype("bfloat16") == BF16
    assert cnp.int_ is cnp.int64 and cnp.uint is cnp.uint64
    value = cnp.float32(2.5)
    assert isinstance(value, np.float32) and value == 2.5
    assert isinstance(np.float32(1), cnp.float32) and not isinstance(np.float64(1), cnp.float32)
    converted = cnp.bfloat16([1, 2.5])
    assert converted.dtype == BF16 and converted.tolist() == [1, 2.5]
    assert cnp.bool_(3) == np.True_
    assert repr(cnp.complex64) == "cdnajit.numpy.complex64"
    # a traced value converts to a traced value of the type, strongly typed (as jnp's types do)
    result = cj.jit(lambda x, s: (cnp.float16(x), cnp.int8(s), cnp.uint8([x[0], x[1]])))(np.array([1.5, 300.0]), 2.0)
    assert result[0].dtype == np.float16 and result[1].dtype == np.int8 and result[1] == 2
    np.testing.assert_array_equal(result[2], [1, 255])   # float to int conversion saturates, as XLA


def test_finfo_iinfo():
    assert cnp.finfo(cnp.bfloat16).eps == 2.0 ** -7
    assert cnp.finfo(np.float16).eps == 2.0 ** -10
    assert cnp.finfo("float32").max == np.finfo(np.float32).max
    assert cnp.finfo(cnp.complex64).eps == np.finfo(np.float32).eps
    assert cnp.iinfo(cnp.uint8).max == 255 and cnp.iinfo("int32").min == -2 ** 31
    assert cnp.iinfo(np.zeros(2, np.int16)).max == 2 ** 15 - 1
    seen = {}
    cj.jit(lambda x: seen.setdefault("eps", cnp.finfo(x).eps) and x)(np.ones(2, np.float16))
    assert seen["eps"] == 2.0 ** -10
    with pytest.raises(ValueError):
        cnp.finfo(cnp.int32)


@pytest.mark.parametrize("a, b, expected", [
    (cnp.bfloat16, cnp.floating, True), (BF16, cnp.inexact, True), ("bfloat16", np.number, True),
    (cnp.bfloat16, cnp.float16, False), (cnp.bfloat16, cnp.bfloat16, True), (cnp.bfloat16, np.integer, False),
    (cnp.float32, cnp.floating, True), (cnp.float32, cnp.integer, False), (cnp.int8, cnp.signedinteger, True),
    (cnp.uint8, cnp.signedinteger, False), (np.floating, np.inexact, True), ("complex64", cnp.complexfloating, True),
    (cnp.float64, cnp.float64, True), (cnp.float64, cnp.float32, False), (cnp.bool_, np.generic, True),
])
def test_issubdtype(a, b, expected):
    assert cnp.issubdtype(a, b) is expected


@pytest.mark.parametrize("a, b, casting, expected", [
    (cnp.int8, cnp.int16, "safe", True), (cnp.float32, cnp.int32, "safe", False), (cnp.bfloat16, cnp.float32,
                                                                                   "safe", True),
    (cnp.float64, cnp.float32, "same_kind", True), (cnp.float64, cnp.int8, "same_kind", False),
    ("uint8", "int8", "unsafe", True),
])
def test_can_cast(a, b, casting, expected):
    assert cnp.can_cast(a, b, casting=casting) is expected


def test_constants():
    assert cnp.pi == math.pi and cnp.e == math.e and cnp.inf == math.inf and math.isnan(cnp.nan)
    assert cnp.newaxis is None
    assert cnp.euler_gamma == pytest.approx(0.5772156649015329, rel=1e-16)


@pytest.mark.parametrize("fn, x, expected", [
    # JAX 0.10.2's answers (x64): a Python int meets an integer array by wrapping to its dtype.
    (lambda a: a == -1, np.array([2**64 - 1, 5], np.uint64), [True, False]),
    (lambda a: a < -1, np.array([2**64 - 1, 5], np.uint64), [False, True]),
    (lambda a: a + (-1), np.array([2**64 - 1, 5], np.uint64), np.array([2**64 - 2, 4], np.uint64)),
    (lambda a: a + 300, np.array([255], np.uint8), np.array([43], np.uint8)),
    (lambda a: a == 200, np.array([-56], np.int8), [True]),
    (lambda a: a + 2**40, np.array([5], np.int32), np.array([5], np.int32)),
])
def test_python_ints_wrap_to_the_array_dtype(fn, x, expected):
    for backend in ("compiled", "interpret"):
        got = cj.jit(fn, backend=backend)(x)
        np.testing.assert_array_equal(got, expected)
        assert got.dtype == np.asarray(expected).dtype or np.asarray(expected).dtype == bool


def test_a_python_int_beyond_64_bits_is_an_error():
    with pytest.raises(cj.CdnajitError, match="1180591620717411303424"):
        cj.jit(lambda a: a * 2**70)(np.array([1], np.uint8))


def test_contractions_of_int64_and_uint64_are_weak_f64():
    # JAX 0.10.2 (x64): int64 and uint64 promote to a weak f64, which a contraction's result keeps,
    # so where(c, int64 @ uint64, f32) is f32.
    a, b, c = np.ones((2, 2), np.int64), np.ones((2, 2), np.uint64), np.ones((2, 2), np.float32)
    for fn in (lambda a, b: a @ b, lambda a, b: cnp.einsum("ij,jk->ik", a, b), lambda a, b: cnp.dot(a, b)):
        got = cj.jit(lambda a, b, c: cnp.where(True, fn(a, b), c))(a, b, c)
        assert got.dtype == np.float32
