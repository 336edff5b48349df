"""Tracing: abstract arrays (`Tracer`) that record graph-IR ops as Python code runs on them.

A `Trace` owns the region being built. `jit` opens one for the function body; control flow
(`lax.while_loop`, `lax.cond`, ...) opens a child trace per region, whose ops may use tracers
of enclosing traces (implicit capture). `bind` is the one place ops are created: it runs the
op table's shape/dtype rule and turns a rule violation into a `TracingError` naming the
user's source line.
"""
from __future__ import annotations

import functools
import os
import sys
import threading

import numpy as np

from ..errors import ArraySizeError, ConcretizationError, TracingError, TracingTypeError, TypeCheckError
from ..ir.core import Region, Value, make_op
from ..ir.opdef import infer_types
from ..ir.types import TensorType, dtype_name, is_supported_dtype

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Frames from these folders are cdnajit's own; the first frame outside them is the user's line.
LIBRARY_DIRS = tuple(os.path.join(PACKAGE_ROOT, d) + os.sep
                     for d in ("frontend", "ir", "passes", "codegen", "runtime", "libs"))
LIBRARY_FILES = (os.path.join(PACKAGE_ROOT, "__init__.py"),)
NUMPY_DIR = os.path.dirname(np.__file__) + os.sep


@functools.lru_cache(maxsize=256)
def display_path(filename: str, cwd: str) -> str:
    """`filename` relative to `cwd` (cached: every traced op asks, and relpath is slow)."""
    return filename if filename.startswith("<") else os.path.relpath(filename, cwd)


def user_location() -> str:
    """file:line of the innermost caller outside cdnajit and numpy."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith(LIBRARY_DIRS) or filename in LIBRARY_FILES or filename.startswith(NUMPY_DIR)
                or filename.startswith("<frozen")):
            return f"{display_path(filename, os.getcwd())}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


def located(message: str) -> str:
    return f"{message} (at {user_location()})"


class Trace:
    """The region being recorded, and the trace it is nested in (None for a function body)."""

    def __init__(self, parent: "Trace | None" = None):
        self.parent = parent
        self.region = Region()
        self.active = True

    def encloses(self, other: "Trace") -> bool:
        trace = self
        while trace is not None:
            if trace is other:
                return True
            trace = trace.parent
        return False


_state = threading.local()


def trace_stack() -> list[Trace]:
    if not hasattr(_state, "stack"):
        _state.stack = []
    return _state.stack


def current_trace() -> Trace | None:
    stack = trace_stack()
    return stack[-1] if stack else None


class new_trace:
    """Context manager: record ops into a fresh trace, nested in the current one."""

    def __init__(self):
        self.trace = Trace(current_trace())

    def __enter__(self) -> Trace:
        trace_stack().append(self.trace)
        return self.trace

    def __exit__(self, *exc):
        trace_stack().pop()
        self.trace.active = False
        return False


class Tracer:
    """An abstract array standing for an IR value during tracing.

    Python operators and array methods are installed by frontend/methods.py.
    """

    __slots__ = ("value", "owner", "weak_type")
    __array_priority__ = 1000  # numpy defers binary operators to us

    def __init__(self, value: Value, owner: Trace, weak_type: bool = False):
        self.value = value
        self.owner = owner  # the trace recording the op that made it (`trace` is the jnp method)
        self.weak_type = weak_type

    @property
    def type(self) -> TensorType:
        return self.value.type

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.type.shape

    @property
    def dtype(self) -> np.dtype:
        return self.value.type.numpy_dtype

    @property
    def ndim(self) -> int:
        return len(self.value.type.shape)

    @property
    def size(self) -> int:
        return self.value.type.size

    def __len__(self):
        if not self.shape:
            raise TracingTypeError(located("len() of an unsized (0-d) array"))
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TracingTypeError(located("iteration over a 0-d array"))
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"Tracer<{self.value.type}{weak}>"

    def _concrete(self, what):
        raise ConcretizationError(located(
            f"{what} of a traced array {self.value.type}: its value is not known while tracing. Use "
            f"cdnajit.numpy.where or cdnajit.lax.cond/while_loop for value-dependent control flow, "
            f"or mark the argument static with static_argnums"))

    def __bool__(self):
        self._concrete("Python control flow needs the truth value")

    def __int__(self):
        self._concrete("int() needs the value")

    def __float__(self):
        self._concrete("float() needs the value")

    def __complex__(self):
        self._concrete("complex() needs the value")

    def __index__(self):
        self._concrete("use as a Python index needs the value")

    def __array__(self, dtype=None, copy=None):
        self._concrete("conversion to a numpy array needs the value")

    def tolist(self):
        self._concrete("tolist() needs the value")

    def item(self):
        self._concrete("item() needs the value")

    __hash__ = None


def bind(name: str, operands, attrs=None, regions=(), weak_type: bool = False) -> list[Tracer]:
    """Record op `name` in the current trace and return tracers for its results."""
    trace = current_trace()
    if trace is None:
        raise TracingError(located(f"{name}: no trace is active (called outside cdnajit.jit)"))
    for operand in operands:
        if not (operand.owner.active and trace.encloses(operand.owner)):
            raise TracingError(located(
                f"{name}: a traced value {operand.value.type} escaped the function that created it "
                f"(a leaked tracer: it was stored outside jit or a control-flow body)"))
    attrs = dict(attrs or {})
    location = user_location()
    try:
        types = infer_types(name, [o.value.type for o in operands], attrs, regions)
    except TypeCheckError as error:
        raise TracingTypeError(f"{error} (at {location})") from None
    for i, result_type in enumerate(types):
        problem = result_type.size_problem()
        if problem:
            raise ArraySizeError(f"{name}: result {i} {problem} (at {location})")
    op = make_op(name, [o.value for o in operands], attrs, types, regions, location)
    trace.region.ops.append(op)
    return [Tracer(v, trace, weak_type) for v in op.results]


def bind1(name: str, operands, attrs=None, weak_type: bool = False) -> Tracer:
    (result,) = bind(name, operands, attrs, (), weak_type)
    return result


def constant(value, dtype: str | None = None, weak_type: bool = False) -> Tracer:
    """A constant op holding `value` (converted to `dtype` if given)."""
    array = np.asarray(value) if dtype is None else np.asarray(value).astype(TensorType(dtype, ()).numpy_dtype)
    return bind1("constant", [], {"value": np.array(array, copy=True)}, weak_type=weak_type)


def python_scalar_dtype(value) -> str:
    """The dtype of a weakly typed Python scalar (64-bit types enabled)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        if not -(2 ** 63) <= value < 2 ** 63:
            raise TracingTypeError(located(f"Python int {value} does not fit in int64"))
        return "i64"
    if isinstance(value, float):
        return "f64"
    if isinstance(value, complex):
        return "c128"
    raise TypeError(value)


def is_python_scalar(value) -> bool:
    return isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic)


def check_array_like(value, what="argument"):
    """Reject what is neither a tracer, a numpy array/scalar nor a Python scalar, and unsupported dtypes."""
    if isinstance(value, Tracer) or is_python_scalar(value):
        return
    if isinstance(value, (np.ndarray, np.generic)):
        if not is_supported_dtype(value.dtype):
            raise TracingTypeError(located(f"{what} has unsupported dtype {value.dtype}"))
        return
    raise TracingTypeError(located(f"{what} of type {type(value).__name__} is not an array or a scalar"))


def as_tracer(value, what="operand") -> Tracer:
    """A tracer for `value`: tracers pass through; arrays, numpy and Python scalars become constants."""
    if isinstance(value, Tracer):
        return value
    if isinstance(value, (list, tuple)):
        from . import cnp  # a nested sequence of scalars/arrays, as jnp.asarray takes
        return cnp.asarray(value)
    check_array_like(value, what)
    if is_python_scalar(value):
        dtype = python_scalar_dtype(value)
        return constant(value, dtype, weak_type=dtype != "bool")
    array = np.asarray(value)
    return constant(array, dtype_name(array.dtype))
