"""Python operators, array methods and numpy dispatch (__array_ufunc__, __array_function__) on Tracer.

Each operator and method calls the cdnajit.numpy function of the same meaning, looked up by name
when it is called, so this module depends on no namespace module's import order. Importing it
installs everything on `Tracer`.
"""
from __future__ import annotations

import numpy as np

from ..errors import TracingTypeError
from .cnp.elementwise import namespace_function
from .tracing import Tracer, located


# ---- operators --------------------------------------------------------------------------------

# Operands an operator accepts; anything else gets NotImplemented, so Python tries the other
# operand's reflected method and then raises its TypeError (as jax.Array does).
OPERAND_TYPES = (Tracer, np.ndarray, np.generic, bool, int, float, complex)

BINARY_OPERATORS = {  # Python operator -> cdnajit.numpy function; each has a reflected form
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
    "floordiv": "floor_divide", "mod": "remainder", "divmod": "divmod", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift", "rshift": "right_shift",
}
COMPARISONS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
               "ge": "greater_equal"}
UNARY_OPERATORS = {"neg": "negative", "pos": "positive", "abs": "absolute", "invert": "invert"}


def binary_operator(symbol: str, cnp_name: str, reflected: bool):
    def operator(self, other):
        if not isinstance(other, OPERAND_TYPES):
            return NotImplemented
        fn = namespace_function(cnp_name, f"the {symbol} operator")
        return fn(other, self) if reflected else fn(self, other)
    operator.__name__ = f"__{'r' if reflected else ''}{symbol}__"
    return operator


def unary_operator(symbol: str, cnp_name: str):
    def operator(self):
        return namespace_function(cnp_name, f"the {symbol} operator")(self)
    operator.__name__ = f"__{symbol}__"
    return operator


for _symbol, _name in BINARY_OPERATORS.items():
    setattr(Tracer, f"__{_symbol}__", binary_operator(_symbol, _name, reflected=False))
    setattr(Tracer, f"__r{_symbol}__", binary_operator(_symbol, _name, reflected=True))
for _symbol, _name in COMPARISONS.items():  # Python reflects comparisons itself (3 < x is x > 3)
    setattr(Tracer, f"__{_symbol}__", binary_operator(_symbol, _name, reflected=False))
for _symbol, _name in UNARY_OPERATORS.items():
    setattr(Tracer, f"__{_symbol}__", unary_operator(_symbol, _name))
# In-place operators (x += 1) are left undefined: Python then rebinds x to the new tracer x + 1.


def __round__(self, ndigits=None):
    return namespace_function("round", "round()")(self, 0 if ndigits is None else ndigits)


def __getitem__(self, index):
    from .indexing import getitem
    return getitem(self, index)


def __setitem__(self, index, value):
    raise TracingTypeError(located(
        f"traced arrays are immutable: x[...] = value is not supported on {self.type}; "
        f"use x = x.at[index].set(value)"))


# ---- methods ----------------------------------------------------------------------------------

FORWARDED_METHODS = {  # method -> cdnajit.numpy function called with the array first
    "astype": "astype", "clip": "clip", "round": "round", "conj": "conj", "conjugate": "conj",
    "sum": "sum", "prod": "prod", "mean": "mean", "var": "var", "std": "std", "max": "max", "min": "min",
    "argmax": "argmax", "argmin": "argmin", "any": "any", "all": "all", "cumsum": "cumsum", "cumprod": "cumprod",
    "ravel": "ravel", "flatten": "ravel", "squeeze": "squeeze", "swapaxes": "swapaxes", "repeat": "repeat",
    "diagonal": "diagonal", "trace": "trace", "dot": "dot", "sort": "sort", "argsort": "argsort", "ptp": "ptp",
    "copy": "copy",
}


def forwarded_method(method: str, cnp_name: str):
    def forwarded(self, *args, **kwargs):
        return namespace_function(cnp_name, f"x.{method}()")(self, *args, **kwargs)
    forwarded.__name__ = method
    forwarded.__doc__ = f"cdnajit.numpy.{cnp_name}(x, ...)."
    return forwarded


for _method, _name in FORWARDED_METHODS.items():
    assert _method not in Tracer.__slots__, _method
    setattr(Tracer, _method, forwarded_method(_method, _name))


def shape_or_axes(args):
    """x.reshape(2, 3) and x.reshape((2, 3)) mean the same; likewise x.transpose(1, 0)."""
    if len(args) == 1 and (args[0] is None or isinstance(args[0], (tuple, list))):
        return args[0]
    return args


def reshape(self, *shape, order="C"):
    """x reshaped; the shape as one tuple or as several ints."""
    fn = namespace_function("reshape", "x.reshape()")
    return fn(self, shape_or_axes(shape)) if order == "C" else fn(self, shape_or_axes(shape), order=order)


def transpose(self, *axes):
    """x with its axes permuted (reversed when none are given)."""
    return namespace_function("transpose", "x.transpose()")(self, shape_or_axes(axes) if axes else None)


def at(self):
    """Functional updates: x.at[index].set(v), .add(v), .multiply(v), .min(v), .max(v), .get()."""
    from .indexing import IndexUpdateHelper
    return IndexUpdateHelper(self)


PROPERTIES = {
    "T": lambda self: namespace_function("transpose", "x.T")(self),
    "mT": lambda self: namespace_function("swapaxes", "x.mT")(self, -1, -2),
    "real": lambda self: namespace_function("real", "x.real")(self),
    "imag": lambda self: namespace_function("imag", "x.imag")(self),
    "itemsize": lambda self: self.dtype.itemsize,
    "nbytes": lambda self: self.size * self.dtype.itemsize,
    "at": at,
}
for _name, _getter in PROPERTIES.items():
    setattr(Tracer, _name, property(_getter))
for _function in (__round__, __getitem__, __setitem__, reshape, transpose):
    setattr(Tracer, _function.__name__, _function)


# ---- numpy dispatch ---------------------------------------------------------------------------

# numpy names whose cdnajit.numpy function has another name.
NUMPY_ALIASES = {"amax": "max", "amin": "min", "round_": "round", "product": "prod", "cumproduct": "cumprod",
                 "alltrue": "all", "sometrue": "any", "row_stack": "vstack"}


def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
    """np.exp(x), np.add(x, 1), np.add.outer(x, y), ndarray + x ...: the cdnajit.numpy ufunc of that name."""
    name = NUMPY_ALIASES.get(ufunc.__name__, ufunc.__name__)
    if kwargs.get("out") is not None:
        raise NotImplementedError(f"np.{name}(..., out=...) with a traced array: traced arrays are immutable, "
                                  f"and a numpy array cannot hold a traced value")
    kwargs.pop("out", None)
    from . import cnp
    fn = getattr(cnp, name, None)
    if fn is None:
        raise NotImplementedError(f"np.{name} on traced arrays: cdnajit.numpy has no {name}")
    if method == "__call__":
        if kwargs:  # where=, dtype=, casting=...: jax.numpy's functions take none of them either
            raise NotImplementedError(f"np.{name} with keyword arguments {sorted(kwargs)} on traced arrays")
        return fn(*inputs)
    bound = getattr(fn, method, None)
    if bound is None:
        raise NotImplementedError(f"np.{name}.{method} on traced arrays: cdnajit.numpy.{name} has no {method}")
    return bound(*inputs, **kwargs)


def __array_function__(self, func, types, args, kwargs):
    """np.sum(x, axis=0), np.where(...), np.concatenate([...]) ...: the cdnajit.numpy function of that name."""
    if not all(issubclass(t, (Tracer, np.ndarray, np.generic)) for t in types):
        return NotImplemented
    name = func.__name__
    # np.linalg.norm (module numpy.linalg) is looked up in cdnajit.numpy.linalg.
    submodule = func.__module__.removeprefix("numpy").lstrip(".")
    from . import cnp
    namespace = getattr(cnp, submodule, None) if submodule else cnp
    fn = getattr(namespace, NUMPY_ALIASES.get(name, name), None)
    if fn is None:
        qualified = ".".join(filter(None, ("np", submodule, name)))
        raise NotImplementedError(f"{qualified} on traced arrays: cdnajit.numpy has no equivalent")
    return fn(*args, **kwargs)


Tracer.__array_ufunc__ = __array_ufunc__
Tracer.__array_function__ = __array_function__
