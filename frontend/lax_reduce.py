"""cdnajit.lax reductions and ordering: reduce, reduce_window, the reduce_<op> shorthands, cumulative
scans, argmax/argmin and sort.

The graph IR names its reducers (sum, prod, max, min, and, or) instead of carrying a reducer
region, so lax.reduce and lax.reduce_window recognise the user's `computation`: one of the lax
functions below, or any function whose trace on two scalars is that single op.
"""
from __future__ import annotations

import numpy as np

from ..errors import TracingTypeError, TracingValueError
from ..ir.core import Value
from ..ir.ops.reduce import reducer_identity
from ..ir.types import TensorType
from .cnp.base import canonical_axis, complex_not_implemented, convert, to_dtype_name
from .lax_elementwise import add, bitwise_and, bitwise_or, max, min, mul, static_int, static_ints, strict_dtype
from .lax_shape import pad, padtype_to_pads
from .pytree import tree_flatten, tree_unflatten
from .tracing import Tracer, as_tracer, bind, bind1, located, new_trace

__all__ = ["reduce", "reduce_window", "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
           "reduce_or", "cumsum", "cumprod", "cummax", "cummin", "argmax", "argmin", "sort", "sort_key_val"]

REDUCER_OF_OP = {"add": "sum", "mul": "prod", "max": "max", "min": "min", "and": "and", "or": "or"}
LAX_FUNCTION_OF_REDUCER = {"sum": add, "prod": mul, "max": max, "min": min, "and": bitwise_and, "or": bitwise_or}


def recognise_reducer(name: str, computation, dtype: str) -> str:
    """The IR reducer that `computation` (a binary function of scalars) applies."""
    for reducer, function in LAX_FUNCTION_OF_REDUCER.items():
        if computation is function:
            return reducer
    with new_trace() as trace:
        a, b = (Tracer(Value(TensorType(dtype, ())), trace) for _ in range(2))
        trace.region.params = [a.value, b.value]
        out = computation(a, b)
    ops = trace.region.ops
    if (isinstance(out, Tracer) and len(ops) == 1 and ops[0].name in REDUCER_OF_OP and out.value is ops[0].result
            and {id(v) for v in ops[0].operands} == {id(a.value), id(b.value)}):
        return REDUCER_OF_OP[ops[0].name]
    raise NotImplementedError(located(
        f"lax.{name}: computation {getattr(computation, '__qualname__', computation)!r} is not supported; it must "
        f"be lax.add, mul, max, min, bitwise_and or bitwise_or, or a function applying one of them to its two "
        f"arguments"))


def is_identity(reducer: str, init_value, dtype: str) -> bool:
    """Whether a concrete init value is the reducer's identity (a traced one may be anything)."""
    if isinstance(init_value, Tracer):
        return False
    numpy_dtype = TensorType(dtype, ()).numpy_dtype
    with np.errstate(all="ignore"):
        return bool(np.asarray(init_value).astype(numpy_dtype) == reducer_identity(reducer, numpy_dtype))


def operand_and_init(name: str, operand, init_value):
    dtype, weak = strict_dtype(name, [operand, init_value])
    operand, init = (convert(as_tracer(x), dtype, weak) for x in (operand, init_value))
    if init.ndim:
        raise TracingTypeError(located(f"lax.{name}: init value must be a scalar, got {init.type}"))
    return operand, init, weak


def single_leaf(name: str, operands, init_values):
    """The one operand and init value of a reduction; several (a variadic reduction) are not supported."""
    leaves, tree = tree_flatten(operands)
    init_leaves, init_tree = tree_flatten(init_values)
    if len(leaves) != 1 or len(init_leaves) != 1:
        raise NotImplementedError(located(
            f"lax.{name} of {len(leaves)} operands (a variadic reduction) is not supported; reduce one array"))
    if tree != init_tree:
        raise TracingValueError(located(
            f"lax.{name}: operands {tree} and init_values {init_tree} must have one tree structure"))
    return leaves[0], init_leaves[0], tree


def reduce(operands, init_values, computation, dimensions):
    """jax.lax.reduce: reduce `dimensions` with `computation`, starting from init_values."""
    operand, init_value, tree = single_leaf("reduce", operands, init_values)
    operand, init, weak = operand_and_init("reduce", operand, init_value)
    reducer = recognise_reducer("reduce", computation, operand.type.dtype)
    axes = tuple(canonical_axis(d, operand.ndim, "lax.reduce dimension")
                 for d in static_ints(dimensions, "lax.reduce dimensions"))
    result = bind1("reduce", [operand], {"reducer": reducer, "axes": axes}, weak_type=weak)
    if not is_identity(reducer, init_value, operand.type.dtype):
        result = LAX_FUNCTION_OF_REDUCER[reducer](result, init)
    return tree_unflatten(tree, [result])


def reduce_window(operand, init_value, computation, window_dimensions, window_strides, padding,
                  base_dilation=None, window_dilation=None):
    """jax.lax.reduce_window: `computation` over sliding windows (pooling).

    String padding is computed from the operand's shape and the undilated window, as jax.lax
    does. As in jax.lax, padding and base-dilation holes hold init_value, and each window
    starts from init_value.
    """
    operand, init_value, tree = single_leaf("reduce_window", operand, init_value)
    operand, init, weak = operand_and_init("reduce_window", operand, init_value)
    reducer = recognise_reducer("reduce_window", computation, operand.type.dtype)
    ones = (1,) * operand.ndim
    window = static_ints(window_dimensions, "lax.reduce_window window_dimensions")
    strides = static_ints(window_strides, "lax.reduce_window window_strides")
    base = ones if base_dilation is None else static_ints(base_dilation, "lax.reduce_window base_dilation")
    dilation = ones if window_dilation is None else static_ints(window_dilation, "lax.reduce_window window_dilation")
    if not (len(window) == len(strides) == len(base) == len(dilation) == operand.ndim):
        raise TracingValueError(located(
            f"lax.reduce_window: operand {operand.type} needs {operand.ndim} window dimensions, strides and "
            f"dilations, got {window}, {strides}, {base}, {dilation}"))
    pads = padtype_to_pads(operand.shape, window, strides, padding)
    identity = is_identity(reducer, init_value, operand.type.dtype)
    if not identity:
        # The IR op pads with the reducer's identity: place init_value explicitly instead.
        operand = pad(operand, init, [(lo, hi, b - 1) for (lo, hi), b in zip(pads, base)])
        pads, base = ((0, 0),) * operand.ndim, ones
    attrs = {"reducer": reducer, "window_dimensions": window, "window_strides": strides, "padding": pads,
             "base_dilation": base, "window_dilation": dilation}
    result = bind1("reduce_window", [operand], attrs, weak_type=weak)
    if not identity:
        result = LAX_FUNCTION_OF_REDUCER[reducer](result, init)
    return tree_unflatten(tree, [result])


def named_reduction(reducer: str):
    def fn(operand, axes):
        operand = as_tracer(operand)
        if reducer in ("max", "min"):
            complex_not_implemented(f"lax.reduce_{reducer}", operand)
        axes = tuple(canonical_axis(a, operand.ndim, f"lax.reduce_{reducer} axis")
                     for a in static_ints(axes, f"lax.reduce_{reducer} axes"))
        return bind1("reduce", [operand], {"reducer": reducer, "axes": axes}, weak_type=operand.weak_type)
    fn.__name__ = fn.__qualname__ = f"reduce_{reducer}"
    fn.__doc__ = f"jax.lax.reduce_{reducer}: the {reducer} of operand over axes."
    return fn


reduce_sum = named_reduction("sum")
reduce_prod = named_reduction("prod")
reduce_max = named_reduction("max")
reduce_min = named_reduction("min")
reduce_and = named_reduction("and")
reduce_or = named_reduction("or")


def cumulative(reducer: str, lax_name: str):
    def fn(operand, axis=0, reverse=False):
        operand = as_tracer(operand)
        if reducer in ("max", "min"):
            complex_not_implemented(f"lax.{lax_name}", operand)
            if operand.type.dtype == "bool":
                raise TracingTypeError(located(f"lax.{lax_name} does not accept bool operands (as jax.lax)"))
        axis = canonical_axis(axis, operand.ndim, f"lax.{lax_name} axis")
        return bind1("cumulative", [operand], {"reducer": reducer, "axis": axis, "reverse": bool(reverse)},
                     weak_type=operand.weak_type)
    fn.__name__ = fn.__qualname__ = lax_name
    fn.__doc__ = f"jax.lax.{lax_name}: the inclusive running {reducer} along axis (from the end if reverse)."
    return fn


cumsum = cumulative("sum", "cumsum")
cumprod = cumulative("prod", "cumprod")
cummax = cumulative("max", "cummax")
cummin = cumulative("min", "cummin")


def arg_reduction(op: str):
    def fn(operand, axis, index_dtype):
        operand = as_tracer(operand)
        complex_not_implemented(f"lax.{op}", operand)
        attrs = {"axis": canonical_axis(axis, operand.ndim, f"lax.{op} axis"), "index_dtype": to_dtype_name(index_dtype)}
        return bind1(op, [operand], attrs)
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"jax.lax.{op}: the index of the first {op[3:]}imum along axis, as index_dtype."
    return fn


argmax = arg_reduction("argmax")
argmin = arg_reduction("argmin")


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """jax.lax.sort: one array, or a sequence of arrays of one shape ordered by the first num_keys of them."""
    several = isinstance(operand, (tuple, list))
    operands = [as_tracer(x) for x in (operand if several else [operand])]
    if not operands:
        raise TracingValueError(located("lax.sort needs at least one operand"))
    attrs = {"dimension": canonical_axis(dimension, operands[0].ndim, "lax.sort dimension"),
             "is_stable": bool(is_stable), "num_keys": static_int(num_keys, "lax.sort num_keys")}
    results = bind("sort", operands, attrs)
    results = [Tracer(r.value, r.owner, x.weak_type) for r, x in zip(results, operands)]
    return tuple(results) if several else results[0]


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    """jax.lax.sort_key_val: keys sorted along dimension, and values in the same order."""
    return sort((keys, values), dimension, is_stable, 1)
