"""The calls whose result dtypes are compared with JAX's: one list shared by the generator of the
known answers (generate_jax_dtypes.py, run with JAX) and the test (test_jax_dtypes.py, run without).

A case is an id, the namespace it calls ("numpy" or "lax": jax.numpy/cdnajit.numpy or
jax.lax/cdnajit.lax), a function `call(ns, *args)` and its argument specs. A spec is a dtype
name (a traced array of that dtype, shape SHAPE, or SHAPE_1D where the call wants one axis) or
a Python scalar, which is baked into the call as a constant and so is weakly typed.
"""
from __future__ import annotations

import itertools
from typing import Callable, NamedTuple

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
# Python scalars: weakly typed int, float, complex (bool is strongly typed).
SCALARS = {"True": True, "3": 3, "2.5": 2.5, "(1+2j)": 1 + 2j}
SHAPE = (2, 2)


class Case(NamedTuple):
    id: str
    namespace: str
    call: Callable
    specs: tuple

    def arrays(self) -> list[str]:
        """The dtypes of the traced (array) arguments, in order."""
        return [s for s in self.specs if isinstance(s, str)]

    def bind(self, ns, arrays):
        """call(ns, ...) with the traced arrays put in place of their specs."""
        arrays = iter(arrays)
        return self.call(ns, *(next(arrays) if isinstance(s, str) else s for s in self.specs))


def spec_name(spec) -> str:
    return spec if isinstance(spec, str) else repr(spec)


def cases_of(namespace: str, name: str, call, spec_lists, label: str = "") -> list[Case]:
    return [Case(f"{namespace}.{name}{label}({','.join(spec_name(s) for s in specs)})", namespace, call, tuple(specs))
            for specs in spec_lists]


UNARY_INPUTS = [(d,) for d in DTYPES] + [(v,) for v in SCALARS.values()]
SAME_PAIRS = [(d, d) for d in DTYPES]
ALL_PAIRS = list(itertools.product(DTYPES, DTYPES))
WEAK_PAIRS = [(d, v) for d in DTYPES for v in SCALARS.values()] + [(v, d) for d in DTYPES for v in (3, 2.5)]
BINARY_INPUTS = SAME_PAIRS + WEAK_PAIRS + [(3, 2.5), (2.5, 3), (3, 4), (True, 3), (1 + 2j, 3)]
DTYPE_ARGS = ["bool", "int8", "int32", "uint8", "int64", "float16", "float32", "float64", "complex64"]


def fn(name):
    return lambda ns, *args: getattr(ns, name)(*args)


def kw(name, **kwargs):
    return lambda ns, *args: getattr(ns, name)(*args, **kwargs)


# ---- cdnajit.numpy ---------------------------------------------------------------------------------

NUMPY_UNARY = [
    "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "cbrt", "tanh", "sinh", "cosh", "sin", "cos",
    "tan", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "asin", "acos", "atan", "asinh", "acosh",
    "atanh", "reciprocal", "deg2rad", "rad2deg", "degrees", "radians", "sinc", "fabs",
    "abs", "absolute", "negative", "positive", "sign", "signbit", "square", "floor", "ceil", "trunc", "fix", "rint",
    "round", "around", "modf", "logical_not", "bitwise_not", "bitwise_invert", "invert",
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "real", "imag", "conj", "conjugate", "angle", "nan_to_num",
    # reductions and statistics
    "sum", "prod", "max", "min", "amax", "amin", "any", "all", "mean", "var", "std", "average", "argmax", "argmin",
    "cumsum", "cumprod", "nancumsum", "nancumprod", "nansum", "nanprod", "nanmax", "nanmin", "nanmean",
    "count_nonzero", "ptp", "sort", "argsort", "median",
    # creation from an array, shaping: the dtype is kept
    "array", "asarray", "zeros_like", "ones_like", "empty_like", "copy", "ravel", "transpose",
    "atleast_1d", "atleast_2d", "atleast_3d", "flip", "fliplr", "flipud", "rot90", "triu", "tril", "diag", "diagonal",
    "trace", "squeeze",
]
# Functions that want an array (a Python scalar is a 0-d array, but these need an axis or two).
NEEDS_ARRAY = {"cumsum", "cumprod", "nancumsum", "nancumprod", "sort", "argsort", "fliplr", "flipud", "rot90",
               "triu", "tril", "diag", "diagonal", "trace", "transpose", "flip", "ravel"}

NUMPY_BINARY = [
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder", "mod", "fmod", "divmod",
    "power", "pow", "float_power", "maximum", "minimum", "fmax", "fmin", "arctan2", "atan2", "hypot", "copysign",
    "logaddexp", "logaddexp2", "heaviside", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
    "right_shift", "bitwise_left_shift", "bitwise_right_shift", "isclose", "allclose",
]
# Binary functions compared over every pair of dtypes, not only equal dtypes and Python scalars.
NUMPY_ALL_PAIRS = ["add", "divide", "power", "arctan2", "maximum", "floor_divide", "bitwise_and", "right_shift"]
NUMPY_CONTRACTIONS = ["dot", "matmul", "vdot", "inner", "outer", "tensordot"]

# Reductions with a dtype= argument.
NUMPY_DTYPE_KW = ["sum", "prod", "mean", "var", "std", "cumsum", "cumprod", "nansum", "nanprod", "nanmean",
                  "nancumsum", "nancumprod"]

CREATION_WITH_DTYPE = {
    "zeros": lambda ns, dt: ns.zeros((2,), dt), "ones": lambda ns, dt: ns.ones((2,), dt),
    "empty": lambda ns, dt: ns.empty((2,), dt), "full": lambda ns, dt: ns.full((2,), 1, dt),
    "arange": lambda ns, dt: ns.arange(3, dtype=dt), "linspace": lambda ns, dt: ns.linspace(0, 1, 3, dtype=dt),
    "eye": lambda ns, dt: ns.eye(2, dtype=dt), "identity": lambda ns, dt: ns.identity(2, dtype=dt),
    "tri": lambda ns, dt: ns.tri(2, dtype=dt), "array": lambda ns, dt: ns.array([1, 0], dtype=dt),
    "asarray": lambda ns, dt: ns.asarray([1, 0], dtype=dt),
}
CREATION_DEFAULT = {
    "zeros": lambda ns: ns.zeros((2,)), "ones": lambda ns: ns.ones((2,)), "full_int": lambda ns: ns.full((2,), 1),
    "full_float": lambda ns: ns.full((2,), 1.5), "full_bool": lambda ns: ns.full((2,), True),
    "arange_int": lambda ns: ns.arange(3), "arange_float": lambda ns: ns.arange(0.0, 3.0),
    "linspace": lambda ns: ns.linspace(0, 1, 3), "logspace": lambda ns: ns.logspace(0, 1, 3),
    "geomspace": lambda ns: ns.geomspace(1, 8, 3), "eye": lambda ns: ns.eye(2), "identity": lambda ns: ns.identity(2),
    "tri": lambda ns: ns.tri(2), "array_int": lambda ns: ns.array([1, 2]), "array_float": lambda ns: ns.array([1.0]),
    "array_scalar_int": lambda ns: ns.array(3), "asarray_scalar_float": lambda ns: ns.asarray(2.5),
    "indices": lambda ns: ns.indices((2, 2)),
}


def numpy_cases() -> list[Case]:
    cases = []
    for name in NUMPY_UNARY:
        inputs = [(d,) for d in DTYPES] if name in NEEDS_ARRAY else UNARY_INPUTS
        cases += cases_of("numpy", name, fn(name), inputs)
    for name in ["quantile", "percentile"]:
        cases += cases_of("numpy", name, lambda ns, x, name=name: getattr(ns, name)(x, 0.5), [(d,) for d in DTYPES])
    for name in ["cumulative_sum", "cumulative_prod"]:
        cases += cases_of("numpy", name, lambda ns, x, name=name: getattr(ns, name)(x, axis=0), [(d,) for d in DTYPES])
    for name in NUMPY_DTYPE_KW:
        for dt in DTYPE_ARGS:
            cases += cases_of("numpy", name, kw(name, dtype=dt), [(d,) for d in DTYPES], f"[dtype={dt}]")
    for name in ["sum", "prod"]:
        cases += cases_of("numpy", name, kw(name, promote_integers=False), [(d,) for d in DTYPES],
                          "[promote_integers=False]")
    for name in ["sum", "mean", "max", "argmax", "cumsum", "sort"]:
        cases += cases_of("numpy", name, kw(name, axis=0), [(d,) for d in DTYPES], "[axis=0]")
    for dt in DTYPE_ARGS:
        cases += cases_of("numpy", "astype", lambda ns, x, dt=dt: ns.astype(x, dt), UNARY_INPUTS, f"[{dt}]")
        cases += cases_of("numpy", "full_like", lambda ns, x, dt=dt: ns.full_like(x, 1, dtype=dt), UNARY_INPUTS,
                          f"[{dt}]")
    cases += cases_of("numpy", "full_like", lambda ns, x: ns.full_like(x, 2), UNARY_INPUTS)
    cases += cases_of("numpy", "full_like_float", lambda ns, x: ns.full_like(x, 2.5), UNARY_INPUTS)
    for name in ["round", "around"]:
        cases += cases_of("numpy", name, lambda ns, x, name=name: getattr(ns, name)(x, 1), UNARY_INPUTS, "[decimals=1]")
    cases += cases_of("numpy", "clip", lambda ns, x: ns.clip(x, 0, 1), UNARY_INPUTS, "[0,1]")
    cases += cases_of("numpy", "clip", lambda ns, x: ns.clip(x, 0.5, 1.5), UNARY_INPUTS, "[0.5,1.5]")
    for name in ["reshape", "broadcast_to"]:
        cases += cases_of("numpy", name, lambda ns, x, name=name: getattr(ns, name)(x, (4,) if name == "reshape"
                                                                                   else (2, 2, 2)), UNARY_INPUTS[:15])
    for name, call in {"expand_dims": lambda ns, x: ns.expand_dims(x, 0),
                       "moveaxis": lambda ns, x: ns.moveaxis(x, 0, 1),
                       "swapaxes": lambda ns, x: ns.swapaxes(x, 0, 1), "roll": lambda ns, x: ns.roll(x, 1),
                       "permute_dims": lambda ns, x: ns.permute_dims(x, (1, 0)),
                       "tile": lambda ns, x: ns.tile(x, 2), "repeat": lambda ns, x: ns.repeat(x, 2),
                       "pad": lambda ns, x: ns.pad(x, 1), "pad_constant": lambda ns, x: ns.pad(x, 1, constant_values=2),
                       "split": lambda ns, x: ns.split(x, 2)[0], "delete": lambda ns, x: ns.delete(x, 0),
                       "insert": lambda ns, x: ns.insert(x, 0, 5), "angle_deg": lambda ns, x: ns.angle(x, deg=True),
                       "nan_to_num_args": lambda ns, x: ns.nan_to_num(x, nan=1.0, posinf=2, neginf=-2),
                       "isclose_scalar": lambda ns, x: ns.isclose(x, 1),
                       "var_ddof": lambda ns, x: ns.var(x, ddof=1),
                       "power_2": lambda ns, x: ns.power(x, 2), "power_-1": lambda ns, x: ns.power(x, -1),
                       "power_0.5": lambda ns, x: ns.power(x, 0.5),
                       "count_nonzero_axis": lambda ns, x: ns.count_nonzero(x, axis=0),
                       "argmax_keepdims": lambda ns, x: ns.argmax(x, axis=0, keepdims=True),
                       "average_weights": lambda ns, x: ns.average(x, axis=0, weights=ns.ones(2, "float32")),
                       "sum_initial": lambda ns, x: ns.sum(x, initial=1),
                       "max_initial": lambda ns, x: ns.max(x, initial=1),
                       "sum_where": lambda ns, x: ns.sum(x, where=ns.array([[True, False], [True, True]])),
                       "where_scalars": lambda ns, x: ns.where(x, 1, 2.5),
                       "where_x_0": lambda ns, x: ns.where(x != 0, x, 0),
                       "where_x_0.5": lambda ns, x: ns.where(x != 0, x, 0.5),
                       "meshgrid": lambda ns, x: ns.meshgrid(x[0], x[1])[0],
                       "array_split": lambda ns, x: ns.array_split(x, 2)[1],
                       "hsplit": lambda ns, x: ns.hsplit(x, 2)[0], "vsplit": lambda ns, x: ns.vsplit(x, 2)[0],
                       "dsplit": lambda ns, x: ns.dsplit(ns.atleast_3d(x), 1)[0],
                       "broadcast_arrays": lambda ns, x: ns.broadcast_arrays(x, x[0])[1],
                       }.items():
        cases += cases_of("numpy", name, call, [(d,) for d in DTYPES])
    for name in NUMPY_BINARY:
        inputs = ALL_PAIRS + WEAK_PAIRS if name in NUMPY_ALL_PAIRS else BINARY_INPUTS
        cases += cases_of("numpy", name, fn(name), inputs)
    for name in NUMPY_CONTRACTIONS:
        inputs = ALL_PAIRS if name in ("dot", "matmul") else SAME_PAIRS
        cases += cases_of("numpy", name, fn(name), inputs)
    cases += cases_of("numpy", "einsum", lambda ns, a, b: ns.einsum("ij,jk->ik", a, b), SAME_PAIRS)
    cases += cases_of("numpy", "dot", lambda ns, a, b: ns.dot(a, b),
                      [(d, 2) for d in DTYPES] + [(d, 2.5) for d in DTYPES],
                      "[scalar]")
    for name in ["concatenate", "concat", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack"]:
        cases += cases_of("numpy", name, lambda ns, a, b, name=name: getattr(ns, name)([a, b]), ALL_PAIRS)
    cases += cases_of("numpy", "append", fn("append"), SAME_PAIRS + [("int8", "float16"), ("uint8", "int8")])
    cases += cases_of("numpy", "where", lambda ns, a, b: ns.where(a > 0, a, b), ALL_PAIRS)
    cases += cases_of("numpy", "where", lambda ns, a, b: ns.where(True, a, b), WEAK_PAIRS, "[cond=True]")
    cases += cases_of("numpy", "clip", lambda ns, x, lo: ns.clip(x, lo, None), SAME_PAIRS + WEAK_PAIRS, "[array min]")
    for name, call in CREATION_WITH_DTYPE.items():
        cases += cases_of("numpy", name, lambda ns, call=call, dt=None: call(ns, dt), [()], "[dtype=None]")
        for dt in DTYPES:
            cases += cases_of("numpy", name, lambda ns, call=call, dt=dt: call(ns, dt), [()], f"[dtype={dt}]")
    for name, call in CREATION_DEFAULT.items():
        cases += cases_of("numpy", name, call, [()])
    return cases


# ---- operators and methods --------------------------------------------------------------------

OPERATORS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
    "//": lambda a, b: a // b, "%": lambda a, b: a % b, "**": lambda a, b: a ** b, "&": lambda a, b: a & b,
    "|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
    "<": lambda a, b: a < b, "==": lambda a, b: a == b, "@": lambda a, b: a @ b,
}
UNARY_OPERATORS = {"-": lambda a: -a, "+": lambda a: +a, "~": lambda a: ~a, "abs": lambda a: abs(a)}
METHODS = ["sum", "prod", "mean", "var", "std", "max", "min", "any", "all", "argmax", "argmin", "cumsum", "cumprod",
           "ravel", "flatten", "conj", "conjugate", "round", "copy", "squeeze", "transpose", "ptp", "sort", "argsort",
           "nonzero_count", "real", "imag", "trace", "diagonal", "clip"]


def method_call(name):
    if name == "nonzero_count":
        return lambda ns, x: (x != 0).sum()
    if name == "clip":
        return lambda ns, x: x.clip(0, 1)
    if name in ("real", "imag"):  # properties
        return lambda ns, x: getattr(x, name)
    return lambda ns, x: getattr(x, name)()


def operator_cases() -> list[Case]:
    cases = []
    for symbol, op in OPERATORS.items():
        inputs = SAME_PAIRS if symbol == "@" else BINARY_INPUTS[:len(SAME_PAIRS) + len(WEAK_PAIRS)]
        cases += cases_of("numpy", f"operator{symbol}", lambda ns, a, b, op=op: op(a, b), inputs)
    for symbol, op in UNARY_OPERATORS.items():
        cases += cases_of("numpy", f"operator{symbol}", lambda ns, a, op=op: op(a), [(d,) for d in DTYPES])
    for name in METHODS:
        cases += cases_of("numpy", f"method.{name}", method_call(name), [(d,) for d in DTYPES])
    for dt in DTYPE_ARGS:
        cases += cases_of("numpy", "method.astype", lambda ns, x, dt=dt: x.astype(dt), [(d,) for d in DTYPES],
                          f"[{dt}]")
        cases += cases_of("numpy", "method.sum", lambda ns, x, dt=dt: x.sum(dtype=dt), [(d,) for d in DTYPES],
                          f"[dtype={dt}]")
    cases += cases_of("numpy", "method.at.set", lambda ns, x: x.at[0].set(2.5), [(d,) for d in DTYPES], "[2.5]")
    cases += cases_of("numpy", "method.at.add", lambda ns, x: x.at[0].add(1), [(d,) for d in DTYPES], "[1]")
    cases += cases_of("numpy", "getitem", lambda ns, x: x[0], [(d,) for d in DTYPES])
    return cases


# ---- cdnajit.lax -------------------------------------------------------------------------------

LAX_UNARY = ["neg", "abs", "sign", "floor", "ceil", "exp", "exp2", "log", "log1p", "expm1", "sqrt", "rsqrt", "cbrt",
             "tanh", "sinh", "cosh", "sin", "cos", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh",
             "logistic", "erf", "is_finite", "real", "imag", "conj", "bitwise_not", "square", "reciprocal", "round",
             "stop_gradient"]
LAX_BINARY = ["add", "sub", "mul", "div", "rem", "max", "min", "atan2", "complex", "bitwise_and", "bitwise_or",
              "bitwise_xor", "shift_left", "shift_right_logical", "shift_right_arithmetic", "eq", "ne", "lt", "le",
              "gt", "ge", "pow"]
LAX_REDUCTIONS = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or"]
LAX_SCANS = ["cumsum", "cumprod", "cummax", "cummin"]
LAX_BINARY_INPUTS = SAME_PAIRS + [(d, v) for d in DTYPES for v in (3, 2.5)] + [(3, 2.5), (2.5, 2.5), (3, 3)]


def lax_cases() -> list[Case]:
    cases = []
    for name in LAX_UNARY:
        cases += cases_of("lax", name, fn(name), UNARY_INPUTS)
    cases += cases_of("lax", "round", lambda ns, x: ns.round(x, 1), [(d,) for d in DTYPES], "[to_nearest_even]")
    cases += cases_of("lax", "integer_pow", lambda ns, x: ns.integer_pow(x, 3), UNARY_INPUTS)
    for name in LAX_BINARY:
        cases += cases_of("lax", name, fn(name), LAX_BINARY_INPUTS)
    cases += cases_of("lax", "add", fn("add"), [("int8", "int16"), ("float32", "float64"), ("int32", "float32")],
                      "[mixed]")
    cases += cases_of("lax", "pow", fn("pow"), [(f, i) for f in ("float32", "float64", "complex64")
                                                for i in ("int8", "int32", "uint8", "int64")], "[int exponent]")
    for name in LAX_REDUCTIONS:
        cases += cases_of("lax", name, lambda ns, x, name=name: getattr(ns, name)(x, (0,)), [(d,) for d in DTYPES])
    for name in LAX_SCANS:
        cases += cases_of("lax", name, lambda ns, x, name=name: getattr(ns, name)(x, 0), [(d,) for d in DTYPES])
    for index_dtype in ("int32", "int64", "uint8"):
        for name in ("argmax", "argmin"):
            cases += cases_of("lax", name, lambda ns, x, n=name, t=index_dtype: getattr(ns, n)(x, 0, t),
                              [(d,) for d in DTYPES], f"[{index_dtype}]")
    for dt in DTYPE_ARGS:
        cases += cases_of("lax", "convert_element_type", lambda ns, x, dt=dt: ns.convert_element_type(x, dt),
                          UNARY_INPUTS, f"[{dt}]")
        cases += cases_of("lax", "full", lambda ns, dt=dt: ns.full((2,), 1, dt), [()], f"[{dt}]")
        cases += cases_of("lax", "iota", lambda ns, dt=dt: ns.iota(dt, 3), [()], f"[{dt}]")
        cases += cases_of("lax", "broadcasted_iota", lambda ns, dt=dt: ns.broadcasted_iota(dt, (2, 3), 1), [()],
                          f"[{dt}]")
        cases += cases_of("lax", "conv_general_dilated", lambda ns, a, b, dt=dt: ns.conv_general_dilated(
            a[None, None], b[None, None], (1, 1), "VALID", preferred_element_type=dt), [(d, d) for d in DTYPES],
            f"[preferred={dt}]")
        cases += cases_of("lax", "full_like", lambda ns, x, dt=dt: ns.full_like(x, 1, dt), [(d,) for d in DTYPES],
                          f"[{dt}]")
        cases += cases_of("lax", "dot_general", lambda ns, a, b, dt=dt: ns.dot_general(
            a, b, (((1,), (0,)), ((), ())), preferred_element_type=dt), [(d, d) for d in DTYPES], f"[preferred={dt}]")
    cases += cases_of("lax", "full", lambda ns: ns.full((2,), 1), [()], "[int]")
    cases += cases_of("lax", "full", lambda ns: ns.full((2,), 1.5), [()], "[float]")
    cases += cases_of("lax", "full_like", lambda ns, x: ns.full_like(x, 1), UNARY_INPUTS)
    cases += cases_of("lax", "dot_general", lambda ns, a, b: ns.dot_general(a, b, (((1,), (0,)), ((), ()))),
                      SAME_PAIRS + [("int8", "int16"), ("float32", "float64")])
    cases += cases_of("lax", "dot", fn("dot"), SAME_PAIRS)
    cases += cases_of("lax", "select", lambda ns, a, b: ns.select(ns.ne(a, a), a, b),
                      SAME_PAIRS + [(d, 3) for d in DTYPES] + [(d, 2.5) for d in DTYPES])
    cases += cases_of("lax", "clamp", fn("clamp"), [(0, d, 1) for d in DTYPES] + [(d, d, d) for d in DTYPES]
                      + [(0, 3, 1), (0.5, 2.5, 1.5)])
    cases += cases_of("lax", "reduce", lambda ns, x: ns.reduce(x, 0, ns.add, (0,)), [(d,) for d in DTYPES], "[add,0]")
    cases += cases_of("lax", "reduce_window", lambda ns, x: ns.reduce_window(x, 0, ns.add, (1, 2), (1, 1), "VALID"),
                      [(d,) for d in DTYPES], "[add,0]")
    for name, call in {
            "broadcast_in_dim": lambda ns, x: ns.broadcast_in_dim(x, (2, 2, 2), (0, 1)),
            "broadcast": lambda ns, x: ns.broadcast(x, (3,)), "reshape": lambda ns, x: ns.reshape(x, (4,)),
            "transpose": lambda ns, x: ns.transpose(x, (1, 0)), "slice": lambda ns, x: ns.slice(x, (0, 0), (1, 2)),
            "dynamic_slice": lambda ns, x: ns.dynamic_slice(x, (0, 0), (1, 2)), "rev": lambda ns, x: ns.rev(x, (0,)),
            "concatenate": lambda ns, x: ns.concatenate([x, x], 0),
            "pad": lambda ns, x: ns.pad(x, ns.convert_element_type(0, x.dtype), [(1, 0, 0), (0, 1, 0)]),
            "squeeze": lambda ns, x: ns.squeeze(ns.expand_dims(x, (0,)), (0,)),
            "collapse": lambda ns, x: ns.collapse(x, 0, 2), "sort": lambda ns, x: ns.sort(x, 0),
            "dynamic_update_slice": lambda ns, x: ns.dynamic_update_slice(x, x, (0, 0)),
            "cond": lambda ns, x: ns.cond(True, lambda v: v, lambda v: v, x),
            "fori_loop": lambda ns, x: ns.fori_loop(0, 2, lambda i, v: v, x),
            "while_loop": lambda ns, x: ns.while_loop(lambda v: False, lambda v: v, x),
            "slice_in_dim": lambda ns, x: ns.slice_in_dim(x, 0, 1), "index_in_dim": lambda ns, x: ns.index_in_dim(x, 1),
            "dynamic_slice_in_dim": lambda ns, x: ns.dynamic_slice_in_dim(x, 0, 1),
            "dynamic_index_in_dim": lambda ns, x: ns.dynamic_index_in_dim(x, 1),
            "dynamic_update_slice_in_dim": lambda ns, x: ns.dynamic_update_slice_in_dim(x, x[:1], 0, 0),
            "dynamic_update_index_in_dim": lambda ns, x: ns.dynamic_update_index_in_dim(x, x[0], 1, 0),
            "sort_key_val": lambda ns, x: ns.sort_key_val(x, x)[1],
            "switch": lambda ns, x: ns.switch(1, [lambda v: v, lambda v: v], x),
            "scan": lambda ns, x: ns.scan(lambda c, r: (c, r), x[0], x)[1],
            "map": lambda ns, x: ns.map(lambda r: r, x),
            "conv_general_dilated": lambda ns, x: ns.conv_general_dilated(x[None, None], x[None, None], (1, 1),
                                                                          "VALID"),
    }.items():
        cases += cases_of("lax", name, call, [(d,) for d in DTYPES])
    cases += cases_of("lax", "fori_loop", lambda ns: ns.fori_loop(0, 2, lambda i, v: v + i, 0), [()],
                      "[weak int carry]")
    cases += cases_of("lax", "fori_loop", lambda ns: ns.fori_loop(0, 2, lambda i, v: v + 1.0, 0.0), [()],
                      "[weak float carry]")
    return cases


def all_cases() -> list[Case]:
    return numpy_cases() + operator_cases() + lax_cases()
