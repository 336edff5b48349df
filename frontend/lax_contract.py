"""cdnajit.lax contractions: dot_general, dot, conv_general_dilated and conv.

Dimension conventions are jax.lax's: dot_general results list batch, lhs free, then rhs
free dimensions; convolution layouts are given as strings ('NCHW', 'OIHW', 'NCHW') or as
`ConvDimensionNumbers` of dimension indices.
"""
from __future__ import annotations

import enum
from typing import NamedTuple

from ..errors import TracingTypeError, TracingValueError
from ..ir.types import COMPLEX_PART, COMPLEXES, FLOATS, INTS, NUMPY_DTYPES
from .cnp.base import DEFAULT_INT, broadcast_to, canonical_axis, convert, dtype_and_weak, to_dtype_name
from .dtypes import promote
from .lax_elementwise import bitwise_and, ge, lt, select, static_int, static_ints, sub
from .lax_reduce import cumsum, reduce_sum
from .lax_shape import broadcast_in_dim, broadcasted_iota, full, padtype_to_pads
from .tracing import Tracer, as_tracer, bind1, constant, located

__all__ = ["Precision", "dot_general", "dot", "ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_dilated", "conv",
           "ragged_dot"]


class Precision(enum.Enum):
    """jax.lax.Precision: accepted by the contractions and ignored (cdnajit computes in the operand
    dtype's full precision, or in preferred_element_type)."""
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2


def contraction_operands(name: str, lhs, rhs):
    """lhs and rhs in their promoted dtype: unlike lax's elementwise functions, jax.lax's contractions
    accept operands of different dtypes (int8 with int16 contracts in int16)."""
    dtype, weak = promote(dtype_and_weak(lhs), dtype_and_weak(rhs))
    return convert(as_tracer(lhs), dtype, weak), convert(as_tracer(rhs), dtype, weak), weak


# The families the IR's preferred_element_type must stay within, from the lowest.
FAMILIES = (INTS, FLOATS, COMPLEXES)


def family(dtype: str) -> int:
    return next(i for i, f in enumerate(FAMILIES) if dtype in f)


def part_size(dtype: str) -> int:
    """The bytes of a dtype's (real) components."""
    return NUMPY_DTYPES[COMPLEX_PART.get(dtype, dtype)].itemsize


def check_preferred(opname: str, dtype: str, preferred: str | None):
    """jax.lax's rules for preferred_element_type (a TypeError otherwise): dot_general takes any type for
    float operands and one at least as wide for integer and complex ones; conv_general_dilated takes
    one at least as wide, of the operands' family or a higher one (complex only from complex, unsigned
    integers not from signed ones)."""
    if preferred is None or dtype == "bool" or preferred == dtype:
        return
    wide_enough = preferred != "bool" and part_size(preferred) >= part_size(dtype)
    if opname == "dot_general":
        accepted = dtype in FLOATS or wide_enough
    else:
        accepted = (wide_enough and family(preferred) >= family(dtype)
                    and (family(preferred) < 2 or family(dtype) == 2)
                    and not (preferred.startswith("u") and dtype.startswith("i")))
    if not accepted:
        raise TracingTypeError(located(f"lax.{opname} does not accept preferred_element_type {preferred} for "
                                       f"operands of dtype {dtype}"))


def bind_contraction(opname: str, lhs: Tracer, rhs: Tracer, attrs: dict, preferred_element_type, weak: bool):
    """The IR contraction of operands of one dtype, with the result dtype jax.lax gives for
    preferred_element_type. The IR accepts a preferred type of the operands' family and at least
    their width; otherwise the operands convert to it (a higher family: int8 operands give float32)
    or the result does (a lower or narrower one). Bools contract as integers, nonzero at the end
    when the result is bool (an or of ands)."""
    preferred = None if preferred_element_type is None else to_dtype_name(preferred_element_type)
    dtype = lhs.type.dtype
    numeric_preferred = preferred not in (None, "bool")
    check_preferred(opname, dtype, preferred)
    if dtype == "bool":
        compute = preferred if numeric_preferred else DEFAULT_INT
    elif numeric_preferred and family(preferred) > family(dtype):
        compute = preferred
    else:
        compute = dtype
    lhs, rhs = convert(lhs, compute), convert(rhs, compute)
    fits = (numeric_preferred and preferred != compute and family(preferred) == family(compute)
            and NUMPY_DTYPES[preferred].itemsize >= NUMPY_DTYPES[compute].itemsize)
    result = bind1(opname, [lhs, rhs], {**attrs, "preferred_element_type": preferred if fits else None},
                   weak_type=weak and preferred is None)
    if preferred == "bool" or (preferred is None and dtype == "bool"):
        return bind1("ne", [result, broadcast_to(constant(0, result.type.dtype), result.shape)])
    return result if preferred is None else convert(result, preferred)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """jax.lax.dot_general with dimension_numbers ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))."""
    lhs, rhs, weak = contraction_operands("dot_general", lhs, rhs)
    try:
        (lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch) = dimension_numbers
    except (TypeError, ValueError):
        raise TracingValueError(located(
            f"lax.dot_general: dimension_numbers must be ((lhs_contracting, rhs_contracting), "
            f"(lhs_batch, rhs_batch)), got {dimension_numbers!r}")) from None

    def axes(dims, ndim, what):
        return tuple(canonical_axis(d, ndim, f"lax.dot_general {what} dimension")
                     for d in static_ints(dims, f"lax.dot_general {what} dimensions"))
    attrs = {"lhs_contracting": axes(lhs_contracting, lhs.ndim, "lhs contracting"),
             "rhs_contracting": axes(rhs_contracting, rhs.ndim, "rhs contracting"),
             "lhs_batch": axes(lhs_batch, lhs.ndim, "lhs batch"),
             "rhs_batch": axes(rhs_batch, rhs.ndim, "rhs batch")}
    return bind_contraction("dot_general", lhs, rhs, attrs, preferred_element_type, weak)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """jax.lax.dot: vector/matrix products contracting lhs's last dimension with rhs's first."""
    lhs, rhs = as_tracer(lhs), as_tracer(rhs)
    if not (1 <= lhs.ndim <= 2 and 1 <= rhs.ndim <= 2):
        raise TracingTypeError(located(f"lax.dot takes 1-D or 2-D operands, got {lhs.type} and {rhs.type}; "
                                       f"use lax.dot_general for others"))
    return dot_general(lhs, rhs, (((lhs.ndim - 1,), (0,)), ((), ())), precision, preferred_element_type)


class ConvDimensionNumbers(NamedTuple):
    """Dimension indices of (batch, feature, spatial...) for lhs and out, (out feature, in feature, spatial...) for rhs."""
    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


LAYOUT_LETTERS = (("N", "C"), ("O", "I"), ("N", "C"))   # the non-spatial letters of lhs, rhs and out


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """jax.lax.conv_dimension_numbers: ConvDimensionNumbers from None, layout strings or index tuples."""
    ndim = len(lhs_shape)
    if len(rhs_shape) != ndim or ndim < 2:
        raise TracingTypeError(located(
            f"convolution operands must have one rank of at least 2, got shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}"))
    if dimension_numbers is None:
        default = tuple(range(ndim))
        return ConvDimensionNumbers(default, default, default)
    if len(dimension_numbers) != 3:
        raise TracingValueError(located(f"conv dimension_numbers must have three entries, got {dimension_numbers!r}"))
    if not all(isinstance(spec, str) for spec in dimension_numbers):
        return ConvDimensionNumbers(*(static_ints(spec, "conv dimension_numbers") for spec in dimension_numbers))
    rhs_layout = dimension_numbers[1]
    spatial_letters = set(rhs_layout) - set(LAYOUT_LETTERS[1])
    for layout, letters in zip(dimension_numbers, LAYOUT_LETTERS):
        if (len(layout) != ndim or len(set(layout)) != ndim or not set(letters) <= set(layout)
                or set(layout) - set(letters) != spatial_letters):
            raise TracingValueError(located(
                f"conv dimension_numbers {dimension_numbers!r}: layout {layout!r} must name {''.join(letters)} and the "
                f"kernel's spatial dimensions once each, {ndim} letters in all"))

    def spec(layout, letters):
        # Spatial dimensions are listed in the order the kernel layout gives them.
        spatial = sorted((i for i, c in enumerate(layout) if c not in letters), key=lambda i: rhs_layout.index(layout[i]))
        return (layout.index(letters[0]), layout.index(letters[1])) + tuple(spatial)
    return ConvDimensionNumbers(*(spec(layout, letters) for layout, letters in zip(dimension_numbers, LAYOUT_LETTERS)))


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1, precision=None,
                         preferred_element_type=None):
    """jax.lax.conv_general_dilated: a grouped, strided, dilated cross-correlation."""
    lhs, rhs, weak = contraction_operands("conv_general_dilated", lhs, rhs)
    dnums = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    spatial = lhs.ndim - 2
    ones = (1,) * spatial
    strides = static_ints(window_strides, "lax.conv_general_dilated window_strides")
    lhs_dilation = ones if lhs_dilation is None else static_ints(lhs_dilation, "lax.conv_general_dilated lhs_dilation")
    rhs_dilation = ones if rhs_dilation is None else static_ints(rhs_dilation, "lax.conv_general_dilated rhs_dilation")
    if len(strides) != spatial or len(lhs_dilation) != spatial or len(rhs_dilation) != spatial:
        raise TracingValueError(located(
            f"lax.conv_general_dilated: window_strides {strides}, lhs_dilation {lhs_dilation} and rhs_dilation "
            f"{rhs_dilation} need {spatial} entries each for operands {lhs.type} and {rhs.type}"))
    if isinstance(padding, str) and lhs_dilation != ones:
        raise TracingValueError(located(
            f"lax.conv_general_dilated: padding {padding!r} is not defined with lhs_dilation {lhs_dilation} "
            f"(a transposed convolution); give explicit (low, high) pairs"))
    in_sizes = [lhs.shape[d] for d in dnums.lhs_spec[2:]]
    windows = [(rhs.shape[d] - 1) * r + 1 for d, r in zip(dnums.rhs_spec[2:], rhs_dilation)]
    attrs = {"window_strides": strides, "padding": padtype_to_pads(in_sizes, windows, strides, padding),
             "lhs_dilation": lhs_dilation, "rhs_dilation": rhs_dilation,
             "lhs_spec": dnums.lhs_spec, "rhs_spec": dnums.rhs_spec, "out_spec": dnums.out_spec,
             "feature_group_count": static_int(feature_group_count, "lax.conv_general_dilated feature_group_count"),
             "batch_group_count": static_int(batch_group_count, "lax.conv_general_dilated batch_group_count")}
    return bind_contraction("conv_general_dilated", lhs, rhs, attrs, preferred_element_type, weak)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """jax.lax.conv: conv_general_dilated in NC... / OI... layout without dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None, group_offset=None,
               out_sharding=None):
    """jax.lax.ragged_dot: lhs [m, k] rows in consecutive groups of group_sizes [g], group i times
    rhs[i] ([g, k, n]); rows past the groups are 0. Every group's product is formed, then each row
    keeps its own group's."""
    lhs, rhs, weak = contraction_operands("ragged_dot", lhs, rhs)
    group_sizes = as_tracer(group_sizes)
    if group_offset is not None:
        raise NotImplementedError(located("lax.ragged_dot: group_offset is not supported"))
    if lhs.ndim != 2 or rhs.ndim != 3 or group_sizes.shape != rhs.shape[:1] or lhs.shape[1] != rhs.shape[1]:
        raise TracingTypeError(located(
            f"lax.ragged_dot takes lhs [m, k], rhs [g, k, n] and group_sizes [g], got {lhs.type}, {rhs.type} and "
            f"{group_sizes.type}"))
    (m, _), (g, _, n) = lhs.shape, rhs.shape
    products = dot_general(lhs, rhs, (((1,), (1,)), ((), ())), precision, preferred_element_type)   # [m, g, n]
    ends = broadcast_in_dim(convert(cumsum(group_sizes), "i64"), (m, g), (1,))
    sizes = broadcast_in_dim(convert(group_sizes, "i64"), (m, g), (1,))
    row = broadcasted_iota("i64", (m, g), 0)
    in_group = bitwise_and(ge(row, sub(ends, sizes)), lt(row, ends))
    kept = select(broadcast_in_dim(in_group, (m, g, n), (0, 1)), products, full(products.shape, 0, products.type.dtype))
    return reduce_sum(kept, (1,))
