"""Dtype objects and dtype queries of cdnajit.numpy, as jax.numpy has them (64-bit types enabled).

`cnp.float32` & co are classes, as jnp's scalar types are: `np.dtype(cnp.float32)` works,
`isinstance(np.float32(1), cnp.float32)` is true, and calling one converts a value: a traced
array becomes a (strongly typed) traced array of that dtype, anything else a numpy value.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ...errors import TracingTypeError, TracingValueError
from ...ir.opdef import OPS
from ...ir.types import NUMPY_DTYPES, is_supported_dtype
from ..dtypes import promote
from ..pytree import tree_leaves
from ..tracing import Tracer, as_tracer, located
from .base import convert, dtype_and_weak, to_dtype_name

__all__ = [
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int_", "uint",
    "generic", "number", "inexact", "floating", "complexfloating", "integer", "signedinteger", "unsignedinteger",
    "dtype", "promote_types", "result_type", "finfo", "iinfo", "issubdtype", "can_cast",
    "pi", "e", "inf", "nan", "newaxis", "euler_gamma",
]


class ScalarType(type):
    """The metaclass of cnp's scalar types: each class carries its numpy `dtype`."""

    def __call__(cls, value):
        if any(isinstance(leaf, Tracer) for leaf in tree_leaves(value)):
            return convert(as_tracer(value), cls.ir_dtype)
        array = np.asarray(value)
        # The IR's convert, so a value converts as a traced one would (floats saturate to ints).
        converted = OPS["convert"].reference(array, dtype=cls.ir_dtype) if is_supported_dtype(array.dtype) \
            else array.astype(cls.dtype)
        return converted[()] if converted.ndim == 0 else converted

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls):
        return f"cdnajit.numpy.{cls.__name__}"


def scalar_type(name: str, ir_dtype: str) -> ScalarType:
    return ScalarType(name, (), {"dtype": NUMPY_DTYPES[ir_dtype], "ir_dtype": ir_dtype})


bool_ = scalar_type("bool_", "bool")
int8 = scalar_type("int8", "i8")
int16 = scalar_type("int16", "i16")
int32 = scalar_type("int32", "i32")
int64 = scalar_type("int64", "i64")
uint8 = scalar_type("uint8", "u8")
uint16 = scalar_type("uint16", "u16")
uint32 = scalar_type("uint32", "u32")
uint64 = scalar_type("uint64", "u64")
float16 = scalar_type("float16", "f16")
bfloat16 = scalar_type("bfloat16", "bf16")
float32 = scalar_type("float32", "f32")
float64 = scalar_type("float64", "f64")
complex64 = scalar_type("complex64", "c64")
complex128 = scalar_type("complex128", "c128")
int_ = int64   # the default integer with 64-bit types enabled
uint = uint64

# The abstract scalar classes are numpy's own, as in jax.numpy.
generic, number, inexact, floating = np.generic, np.number, np.inexact, np.floating
complexfloating, integer, signedinteger, unsignedinteger = (np.complexfloating, np.integer, np.signedinteger,
                                                           np.unsignedinteger)

dtype = np.dtype

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None
euler_gamma = 0.5772156649015329

# Python's scalar types are weakly typed in dtype queries (jnp.promote_types('f2', float) is f2).
WEAK_PYTHON_TYPES = {int: "i64", float: "f64", complex: "c128"}


def dtype_query_operand(x) -> tuple[str, bool]:
    """The (IR dtype, weak) of a dtype specifier (Python types weak) or of a value."""
    if isinstance(x, type) and x in WEAK_PYTHON_TYPES:
        return WEAK_PYTHON_TYPES[x], True
    if isinstance(x, (np.dtype, str, type)):
        return to_dtype_name(x), False
    return dtype_and_weak(x)


def promote_types(a, b) -> np.dtype:
    """jnp.promote_types: the dtype a binary operation casts its two operands to."""
    promoted, _ = promote(dtype_query_operand(a), dtype_query_operand(b))
    return NUMPY_DTYPES[promoted]


def result_type(*args) -> np.dtype:
    """jnp.result_type: JAX promotion over arrays, scalars and dtype specifiers."""
    if not args:
        raise TracingValueError(located("result_type needs at least one array or dtype"))
    promoted, _ = promote(*(dtype_query_operand(a) for a in args))
    return NUMPY_DTYPES[promoted]


def numpy_dtype_of(x) -> np.dtype:
    """The numpy dtype of a dtype specifier, or of an array, tracer or scalar."""
    if isinstance(x, (Tracer, np.ndarray, np.generic)):
        return x.dtype
    return NUMPY_DTYPES[to_dtype_name(x)]


def finfo(x):
    """Machine limits of a float dtype (bfloat16 included, through ml_dtypes)."""
    return ml_dtypes.finfo(numpy_dtype_of(x))


def iinfo(x):
    """Machine limits of an integer dtype."""
    return ml_dtypes.iinfo(numpy_dtype_of(x))


ABSTRACT_SCALAR_CLASSES = (np.generic, np.number, np.integer, np.signedinteger, np.unsignedinteger, np.inexact,
                           np.floating, np.complexfloating)


def abstract_or_dtype(x):
    """numpy's abstract scalar classes (np.floating...) stay classes; anything else becomes a dtype."""
    if isinstance(x, type) and x in ABSTRACT_SCALAR_CLASSES:
        return x
    return numpy_dtype_of(x)


BFLOAT16 = NUMPY_DTYPES["bf16"]


def issubdtype(arg1, arg2) -> bool:
    """jnp.issubdtype: numpy's, except that bfloat16 counts as a floating type."""
    sub, sup = abstract_or_dtype(arg1), abstract_or_dtype(arg2)
    if isinstance(sub, np.dtype) and sub == BFLOAT16:
        if isinstance(sup, np.dtype):
            return sup == BFLOAT16
        return sup in (np.floating, np.inexact, np.number, np.generic)
    return bool(np.issubdtype(sub, sup))


def can_cast(from_, to, casting="safe") -> bool:
    """numpy's casting rules between the dtypes of two dtype specifiers or arrays."""
    try:
        return bool(np.can_cast(numpy_dtype_of(from_), numpy_dtype_of(to), casting=casting))
    except (TypeError, ValueError) as error:
        raise TracingTypeError(located(f"can_cast({from_!r}, {to!r}, casting={casting!r}): {error}")) from None
