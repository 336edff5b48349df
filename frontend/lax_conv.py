"""cdnajit.lax convolution variants built on conv_general_dilated (conv_with_general_padding,
conv_transpose, conv_general_dilated_patches) and jax.lax's host-side shape helpers for
convolutions and windows.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import TracingValueError
from .lax_contract import ConvDimensionNumbers, conv_dimension_numbers, conv_general_dilated, dot_general
from .lax_elementwise import static_ints
from .lax_shape import broadcast_in_dim, padtype_to_pads, reshape, rev, transpose
from .tracing import as_tracer, constant, located

__all__ = ["conv_with_general_padding", "conv_transpose", "conv_general_dilated_patches", "conv_general_dilated_local",
           "conv_general_permutations",
           "conv_shape_tuple", "conv_general_shape_tuple", "conv_transpose_shape_tuple", "reduce_window_shape_tuple"]

# conv_transpose's layouts when none are given: channels last, as TensorFlow's.
CONV_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                          5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=None,
                              preferred_element_type=None):
    """jax.lax.conv_with_general_padding: conv_general_dilated in NC... / OI... layout."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                precision=precision, preferred_element_type=preferred_element_type)


def transpose_padding(kernel: int, stride: int, padding) -> tuple[int, int]:
    """The (low, high) padding of the dilated input that makes conv_transpose the gradient of a forward
    convolution padded with `padding` ('SAME', 'VALID' or its (low, high) pair), as jax.lax computes it."""
    if padding == "SAME":
        total = kernel + stride - 2
        low = kernel - 1 if stride > kernel - 1 else -(-total // 2)
    elif padding == "VALID":
        total = kernel + stride - 2 + max(kernel - stride, 0)
        low = kernel - 1
    else:
        low, high = (kernel - p - 1 for p in padding)
        total = low + high
    return low, total - low


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None, transpose_kernel=False,
                   precision=None, preferred_element_type=None, use_consistent_padding=False):
    """jax.lax.conv_transpose: the transposed (fractionally strided) convolution: lhs dilated by the
    strides. String padding (or any padding with use_consistent_padding) names the forward
    convolution's; otherwise explicit pairs pad the dilated input directly, as in jax.lax."""
    lhs, rhs = as_tracer(lhs), as_tracer(rhs)
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise TracingValueError(located(f"lax.conv_transpose: operands need one rank of at least 2, got {lhs.type} "
                                        f"and {rhs.type}"))
    if dimension_numbers is None:
        if lhs.ndim not in CONV_TRANSPOSE_LAYOUTS:
            raise TracingValueError(located(f"lax.conv_transpose: give dimension_numbers for rank-{lhs.ndim} operands"))
        dimension_numbers = CONV_TRANSPOSE_LAYOUTS[lhs.ndim]
    dnums = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    spatial = lhs.ndim - 2
    strides = static_ints(strides, "lax.conv_transpose strides")
    dilation = (1,) * spatial if rhs_dilation is None else static_ints(rhs_dilation, "lax.conv_transpose rhs_dilation")
    kernel = [(rhs.shape[d] - 1) * r + 1 for d, r in zip(dnums.rhs_spec[2:], dilation)]
    if use_consistent_padding or padding in ("SAME", "VALID"):
        per_dim = [padding] * spatial if isinstance(padding, str) else [static_ints(p, "padding pair") for p in padding]
        pads = [transpose_padding(k, s, p) for k, s, p in zip(kernel, strides, per_dim)]
    else:
        pads = padding
    if transpose_kernel:
        rhs = rev(rhs, dnums.rhs_spec[2:])
        swap = list(range(rhs.ndim))
        swap[dnums.rhs_spec[0]], swap[dnums.rhs_spec[1]] = swap[dnums.rhs_spec[1]], swap[dnums.rhs_spec[0]]
        rhs = transpose(rhs, swap)
    return conv_general_dilated(lhs, rhs, (1,) * spatial, pads, strides, dilation, dnums, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                                 dimension_numbers=None, precision=None, preferred_element_type=None):
    """jax.lax.conv_general_dilated_patches: every window's elements as features, C * prod(filter_shape)
    of them (channel-major), computed as a grouped convolution with a one-hot kernel, as jax.lax does."""
    lhs = as_tracer(lhs)
    filter_shape = static_ints(filter_shape, "lax.conv_general_dilated_patches filter_shape")
    dnums = conv_dimension_numbers(lhs.shape, (1, 1) + filter_shape, dimension_numbers)
    channels = lhs.shape[dnums.lhs_spec[1]]
    size = math.prod(filter_shape)
    one_hot = constant(np.eye(size).reshape((size, 1) + filter_shape), lhs.type.dtype)
    kernel = reshape(broadcast_in_dim(one_hot, (channels, size, 1) + filter_shape, tuple(range(1, 3 + len(filter_shape)))),
                     (channels * size, 1) + filter_shape)
    canonical = ConvDimensionNumbers(dnums.lhs_spec, tuple(range(kernel.ndim)), dnums.out_spec)
    return conv_general_dilated(lhs, kernel, window_strides, padding, lhs_dilation, rhs_dilation, canonical,
                                feature_group_count=channels, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape, lhs_dilation=None, rhs_dilation=None,
                               dimension_numbers=None, precision=None):
    """jax.lax.conv_general_dilated_local: a convolution with a separate kernel at every output position.
    rhs's spatial dimensions run over the output positions and its I dimension over the window's
    inputs, channel-major as conv_general_dilated_patches lays them out: the result is, per position,
    the patches contracted with that position's kernel."""
    lhs, rhs = as_tracer(lhs), as_tracer(rhs)
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation, rhs_dilation,
                                           dimension_numbers, precision)
    dnums = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    spatial = len(dnums.out_spec) - 2
    # patches: (N, I, positions...) in out_spec's layout; rhs: (O, I, positions...) in rhs_spec's.
    batch_lhs, batch_rhs = dnums.out_spec[2:], dnums.rhs_spec[2:]
    product = dot_general(patches, rhs, (((dnums.out_spec[1],), (dnums.rhs_spec[1],)), (batch_lhs, batch_rhs)),
                          precision)
    # The product is (positions..., N, O): place each dimension where out_spec puts it.
    canonical = (spatial, spatial + 1) + tuple(range(spatial))   # N, O, positions... of the product
    permutation = [0] * len(canonical)
    for role, d in enumerate(dnums.out_spec):
        permutation[d] = canonical[role]
    return transpose(product, permutation)


# ---- host-side shape helpers ----------------------------------------------------------------

def conv_general_permutations(dimension_numbers) -> tuple[tuple[int, ...], ...]:
    """jax.lax.conv_general_permutations: the (lhs, rhs, out) dimension indices of layout strings."""
    lhs, rhs, out = dimension_numbers
    if not all(isinstance(layout, str) for layout in (lhs, rhs, out)):
        raise TracingValueError(located(f"lax.conv_general_permutations takes layout strings, got {dimension_numbers!r}"))
    return tuple(conv_dimension_numbers((0,) * len(lhs), (0,) * len(lhs), dimension_numbers))


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1) -> tuple[int, ...]:
    """jax.lax.conv_shape_tuple: the NC... result shape of a convolution of NC... and OI... shapes."""
    lhs_shape, rhs_shape = static_ints(lhs_shape, "lhs_shape"), static_ints(rhs_shape, "rhs_shape")
    strides = static_ints(strides, "strides")
    pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    spatial = [max((size + low + high - k) // s + 1, 0)
               for size, (low, high), k, s in zip(lhs_shape[2:], pads, rhs_shape[2:], strides)]
    return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + tuple(spatial)


def in_layout(shape_nc, out_spec) -> tuple[int, ...]:
    """A shape given in N, C, spatial order, placed in the layout of `out_spec`."""
    result = [0] * len(shape_nc)
    for size, d in zip(shape_nc, out_spec):
        result[d] = size
    return tuple(result)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers) -> tuple[int, ...]:
    """jax.lax.conv_general_shape_tuple: conv_shape_tuple in the layouts of dimension_numbers."""
    dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs_nc = tuple(lhs_shape[d] for d in dnums.lhs_spec)
    rhs_nc = tuple(rhs_shape[d] for d in dnums.rhs_spec)
    return in_layout(conv_shape_tuple(lhs_nc, rhs_nc, window_strides, padding), dnums.out_spec)


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers) -> tuple[int, ...]:
    """jax.lax.conv_transpose_shape_tuple: the result shape of conv_transpose (undilated kernel)."""
    dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs_nc = tuple(lhs_shape[d] for d in dnums.lhs_spec)
    rhs_nc = tuple(rhs_shape[d] for d in dnums.rhs_spec)
    strides = static_ints(window_strides, "window_strides")
    if isinstance(padding, str):
        padding = [transpose_padding(k, s, padding) for k, s in zip(rhs_nc[2:], strides)]
    spatial = tuple((size - 1) * s - k + 2 + sum(pad)
                    for size, k, s, pad in zip(lhs_nc[2:], rhs_nc[2:], strides, padding))
    return in_layout((lhs_nc[0], rhs_nc[0]) + spatial, dnums.out_spec)


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding, base_dilation=None,
                              window_dilation=None) -> tuple[int, ...]:
    """jax.lax.reduce_window_shape_tuple: the result shape of reduce_window with explicit padding pairs."""
    shape = static_ints(operand_shape, "operand_shape")
    ones = (1,) * len(shape)
    base = ones if base_dilation is None else static_ints(base_dilation, "base_dilation")
    dilation = ones if window_dilation is None else static_ints(window_dilation, "window_dilation")
    result = []
    for size, window, stride, (low, high), b, w in zip(shape, static_ints(window_dimensions, "window_dimensions"),
                                                       static_ints(window_strides, "window_strides"), padding,
                                                       base, dilation):
        dilated = (size - 1) * b + 1 if size else 0
        span = (window - 1) * w + 1
        result.append(max((dilated + low + high - span) // stride + 1, 0))
    return tuple(result)
