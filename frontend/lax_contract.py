"""cdnajit.lax contractions: dot_general, dot, conv_general_dilated and conv.

Dimension conventions are jax.lax's: dot_general results list batch, lhs free, then rhs
free dimensions; convolution layouts are given as strings ('NCHW', 'OIHW', 'NCHW') or as
`ConvDimensionNumbers` of dimension indices.
"""
from __future__ import annotations

from typing import NamedTuple

from ..errors import TracingTypeError, TracingValueError
from .cnp.base import DEFAULT_INT, canonical_axis, convert, to_dtype_name
from .cnp.reductions import nonzero
from .lax_elementwise import static_int, static_ints, strict_dtype
from .lax_shape import padtype_to_pads
from .tracing import as_tracer, bind1, located

__all__ = ["dot_general", "dot", "ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_dilated", "conv"]


def contraction_operands(name: str, lhs, rhs):
    dtype, weak = strict_dtype(name, [lhs, rhs])
    return convert(as_tracer(lhs), dtype, weak), convert(as_tracer(rhs), dtype, weak), weak


def preferred_dtype(preferred_element_type):
    return None if preferred_element_type is None else to_dtype_name(preferred_element_type)


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
             "rhs_batch": axes(rhs_batch, rhs.ndim, "rhs batch"),
             "preferred_element_type": preferred_dtype(preferred_element_type)}
    if lhs.type.dtype == "bool":
        # A bool contraction is an or of ands: count the true products as integers, then compare;
        # with another preferred type the operands contract as that type.
        preferred = attrs["preferred_element_type"]
        attrs["preferred_element_type"] = None
        operand_dtype = DEFAULT_INT if preferred in (None, "bool") else preferred
        result = bind1("dot_general", [convert(lhs, operand_dtype), convert(rhs, operand_dtype)], attrs)
        return nonzero(result) if preferred in (None, "bool") else result
    return bind1("dot_general", [lhs, rhs], attrs, weak_type=weak and preferred_element_type is None)


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
             "batch_group_count": static_int(batch_group_count, "lax.conv_general_dilated batch_group_count"),
             "preferred_element_type": preferred_dtype(preferred_element_type)}
    return bind1("conv_general_dilated", [lhs, rhs], attrs, weak_type=weak and preferred_element_type is None)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """jax.lax.conv: conv_general_dilated in NC... / OI... layout without dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)
