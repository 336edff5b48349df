"""Shared helpers of the cdnajit.numpy and cdnajit.lax namespaces: converting inputs to
tracers, JAX's dtype promotion, numpy broadcasting, axis normalisation.

Every public function of those namespaces is built from these and from `tracing.bind`.
"""
from __future__ import annotations

import numpy as np

from ...errors import TracingTypeError, TracingValueError
from ...ir.types import NUMPY_DTYPES, dtype_name
from ..dtypes import is_complex, is_integer, promote, to_inexact
from ..tracing import (Tracer, as_tracer, bind1, check_array_like, constant, is_python_scalar, located,
                       python_scalar_dtype)

DEFAULT_FLOAT = "f64"   # 64-bit types are enabled, as jax_enable_x64
DEFAULT_INT = "i64"
DEFAULT_COMPLEX = "c128"


def to_dtype_name(dtype) -> str:
    """An IR dtype name from anything numpy/jax.numpy accept as a dtype (np.float32, 'float32', cnp.int8, float)."""
    if isinstance(dtype, str) and dtype in NUMPY_DTYPES:
        return dtype
    if dtype is float:
        return DEFAULT_FLOAT
    if dtype is int:
        return DEFAULT_INT
    if dtype is complex:
        return DEFAULT_COMPLEX
    if dtype is bool:
        return "bool"
    try:
        return dtype_name(np.dtype(dtype))
    except (TypeError, KeyError):
        raise TracingTypeError(located(f"unsupported dtype {dtype!r}")) from None


def dtype_and_weak(x) -> tuple[str, bool]:
    """The (IR dtype, weak_type) of a tracer, Python scalar or numpy array/scalar, without binding anything."""
    if isinstance(x, Tracer):
        return x.type.dtype, x.weak_type
    if is_python_scalar(x):
        dtype = python_scalar_dtype(x)
        return dtype, dtype != "bool"
    if isinstance(x, (list, tuple)):
        return dtype_and_weak(np.asarray(x))  # nested Python sequences become (strong) arrays
    check_array_like(x)
    return dtype_name(np.asarray(x).dtype), False


def require_integer(name: str, x: Tracer, allow_bool: bool = True):
    """A TypeError naming the function and the dtype when x is not an integer (or bool) array, as
    JAX raises for bitwise functions of floats."""
    dtype = x.type.dtype
    if not (is_integer(dtype) or (allow_bool and dtype == "bool")):
        accepted = "integers and bools" if allow_bool else "integers"
        raise TracingTypeError(located(f"{name} does not accept dtype {NUMPY_DTYPES[dtype].name}; it accepts "
                                       f"{accepted}"))


def complex_not_implemented(name: str, *xs):
    """A NotImplementedError for complex operands of a function JAX defines on them and cdnajit does not
    yet (the IR has no complex order, atan2 or exp2)."""
    for x in xs:
        dtype = dtype_and_weak(x)[0]
        if is_complex(dtype):
            raise NotImplementedError(located(f"{name} of complex operands ({dtype}) is not implemented"))


def result_type(*xs) -> tuple[str, bool]:
    """JAX's result dtype (and weak flag) for mixing these operands."""
    return promote(*(dtype_and_weak(x) for x in xs))


def shape_of(x) -> tuple[int, ...]:
    if isinstance(x, Tracer):
        return x.shape
    return tuple(np.shape(x))


def convert(x: Tracer, dtype: str, weak_type: bool = False) -> Tracer:
    """x converted to dtype (no op when it already is); the result's weak flag is `weak_type`."""
    if x.type.dtype == dtype:
        if x.weak_type == weak_type:
            return x
        return Tracer(x.value, x.owner, weak_type)
    return bind1("convert", [x], {"dtype": dtype}, weak_type=weak_type)


def broadcast_shapes(*shapes, what="operands") -> tuple[int, ...]:
    """numpy's broadcasting rule; a ValueError naming every shape when they do not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(ndim):
        sizes = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise TracingValueError(located(
                f"{what} with shapes {', '.join(str(tuple(s)) for s in shapes)} cannot be broadcast together"))
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def broadcast_to(x: Tracer, shape) -> Tracer:
    """numpy-style (right-aligned) broadcast of x to shape."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    lead = len(shape) - x.ndim
    if lead < 0 or any(d not in (1, shape[lead + i]) for i, d in enumerate(x.shape)):
        raise TracingValueError(located(f"cannot broadcast shape {x.shape} to {shape}"))
    return bind1("broadcast_in_dim", [x], {"shape": shape, "broadcast_dimensions": tuple(range(lead, len(shape)))},
                 weak_type=x.weak_type)


def promote_args(name: str, *xs, inexact=False) -> list[Tracer]:
    """Convert operands to tracers of one dtype (JAX promotion) and one broadcast shape.

    With inexact=True integers and bools are promoted further to a float (jnp's to-inexact rule:
    float32 for bools and integers up to 32 bits, float64 for 64-bit ones), as jnp does for
    functions such as exp or true_divide.
    """
    dtype, weak = result_type(*xs)
    if inexact:
        dtype = to_inexact(dtype)
    shape = broadcast_shapes(*(shape_of(x) for x in xs), what=f"{name}: operands")
    return [broadcast_to(scalar_constant(x, dtype, weak) if is_python_scalar(x) else convert(as_tracer(x), dtype, weak),
                         shape) for x in xs]


def scalar_constant(value, dtype: str, weak_type: bool) -> Tracer:
    """A Python scalar as a constant of the dtype it promotes to (no f64 constant + convert).

    As in JAX, a Python int that does not fit the integer dtype it meets wraps to it (uint8 + 300 adds
    44, uint64 == -1 compares with 2**64 - 1); one that fits no 64-bit integer is an error.
    """
    if isinstance(value, int) and not isinstance(value, bool) and NUMPY_DTYPES[dtype].kind in "iu":
        if not -2 ** 63 <= value < 2 ** 64:
            raise TracingValueError(located(f"Python int {value} is out of range for 64-bit integers ({dtype})"))
        info = np.iinfo(NUMPY_DTYPES[dtype])
        if not info.min <= value <= info.max:
            value = np.array(value % 2 ** info.bits, np.uint64).astype(NUMPY_DTYPES[dtype]).item()
    return constant(value, dtype, weak_type=weak_type)


def canonical_axis(axis: int, ndim: int, name: str = "axis") -> int:
    if isinstance(axis, Tracer):  # an axis fixes shapes: it must be known while tracing
        axis._concrete(f"{name} needs the value")
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TracingTypeError(located(f"{name} must be an int, got {axis!r}"))
    if not -ndim <= axis < ndim:
        raise TracingValueError(located(f"{name} {axis} is out of bounds for an array of dimension {ndim}"))
    return int(axis) % ndim


def canonical_axes(axis, ndim: int) -> tuple[int, ...]:
    """An axis argument (None, an int or a sequence) as sorted distinct non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer, Tracer)) else tuple(axis)
    result = tuple(canonical_axis(a, ndim) for a in axes)
    if len(set(result)) != len(result):
        raise TracingValueError(located(f"repeated axis in {axis!r}"))
    return tuple(sorted(result))
