"""The sub-pixel decomposition of an lhs-dilated (transposed, fractionally strided) convolution, as a
graph rewrite: instead of convolving the input with s-1 zeros inserted between its elements (which an
im2col would copy and a GEMM would multiply), each output phase p (the outputs o = s*q + p along
every dilated dimension) is a stride-1 convolution of the undilated input with the taps that land on
input elements for that phase:

    y[n, k, s*q + p] = conv(x, w[t0(p) :: s/g])[n, k, q]        g = gcd(rhs dilation d, s)

where t0(p) is the first tap t with (p - pad_low + t*d) divisible by s, the phase's input index is
q + (p - pad_low + t0*d)/s + i*(d/g) for its i-th tap (so its padding is low -(p - pad_low + t0*d)/s,
its rhs dilation d/g), and its high padding gives it the ceil((O - p)/s) outputs of the phase. The s^D
phase convolutions are matched again (im2col + GEMM, or the 1x1 GEMM), then interleaved: each phase
padded to the longest phase's length, the phases stacked on a new axis after the dimension, merged
into it, and the surplus sliced off. The taps multiplied are those of the dilated form that touch an
input element: 1/s^D of its products (the MIOpen "transposed convolution as strided backward data").
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ...ir.core import Value
from ...ir.types import TensorType

SUB_CONV_ATTRS = ("lhs_spec", "rhs_spec", "out_spec", "feature_group_count", "batch_group_count",
                  "preferred_element_type")


def phase_geometry(in_size, out_size, window, dilation, stride, pad_low, phase):
    """(first tap, tap step, taps, rhs dilation, padding (low, high), outputs) of one phase along a dimension,
    or None when the phase has no taps or no outputs."""
    g = math.gcd(dilation, stride)
    step = stride // g
    first = next((t for t in range(min(window, step)) if (phase - pad_low + t * dilation) % stride == 0), None)
    outputs = len(range(phase, out_size, stride))
    if first is None or first >= window or outputs == 0:
        return None
    taps = len(range(first, window, step))
    sub_dilation = dilation // g
    low = -((phase - pad_low + first * dilation) // stride)
    span = (taps - 1) * sub_dilation + 1
    return first, step, taps, sub_dilation, (low, outputs - 1 + span - in_size - low), outputs


def refuse(lhs: Value, rhs: Value, attrs: dict, result_type: TensorType) -> str | None:
    """None when the decomposition applies, else why not."""
    if all(d == 1 for d in attrs["lhs_dilation"]):
        return "no lhs dilation"
    if any(s != 1 for s in attrs["window_strides"]):
        return "window strides with lhs dilation"
    if lhs.type.size == 0 or rhs.type.size == 0 or result_type.size == 0:
        return "empty operands"
    for j, stride in enumerate(attrs["lhs_dilation"]):
        geometry = dimension(lhs, rhs, attrs, result_type, j)
        if any(phase_geometry(*geometry, p) is None for p in range(stride)):
            return f"a phase of dimension {j} reads no taps or writes no outputs"
    return None


def dimension(lhs, rhs, attrs, result_type, j):
    """(in size, out size, window, rhs dilation, lhs dilation, low padding) of spatial dimension j."""
    return (lhs.type.shape[attrs["lhs_spec"][2 + j]], result_type.shape[attrs["out_spec"][2 + j]],
            rhs.type.shape[attrs["rhs_spec"][2 + j]], attrs["rhs_dilation"][j], attrs["lhs_dilation"][j],
            attrs["padding"][j][0])


def sub_pixel(m, lhs: Value, rhs: Value, attrs: dict, result_type: TensorType) -> Value:
    spatial = lhs.type.ndim - 2
    strides = attrs["lhs_dilation"]
    geometries = [[phase_geometry(*dimension(lhs, rhs, attrs, result_type, j), p) for p in range(strides[j])]
                  for j in range(spatial)]
    phases = {}
    for phase in itertools.product(*(range(s) for s in strides)):
        dims = [geometries[j][p] for j, p in enumerate(phase)]
        start, limit, step = [0] * rhs.type.ndim, list(rhs.type.shape), [1] * rhs.type.ndim
        for j, (first, tap_step, *_) in enumerate(dims):
            start[attrs["rhs_spec"][2 + j]], step[attrs["rhs_spec"][2 + j]] = first, tap_step
        w = m.op("slice", rhs, start_indices=tuple(start), limit_indices=tuple(limit), strides=tuple(step))
        phases[phase] = m.op("conv_general_dilated", lhs, w, window_strides=(1,) * spatial,
                             padding=tuple(d[4] for d in dims), lhs_dilation=(1,) * spatial,
                             rhs_dilation=tuple(d[3] for d in dims), **{k: attrs[k] for k in SUB_CONV_ATTRS})
    for j in reversed(range(spatial)):  # interleave the phases of the last dimension, then the one before...
        axis = attrs["out_spec"][2 + j]
        merged = {}
        for prefix in itertools.product(*(range(s) for s in strides[:j])):
            merged[prefix] = interleave(m, [phases[(*prefix, p)] for p in range(strides[j])], axis,
                                        result_type.shape[axis])
        phases = merged
    return phases[()]


def interleave(m, parts: list[Value], axis: int, size: int) -> Value:
    """y with y[..., s*q + p, ...] = parts[p][..., q, ...] along `axis`, `size` long."""
    if len(parts) == 1:
        return parts[0]
    longest = parts[0].type.shape[axis]
    stacked = []
    for part in parts:
        shape = part.type.shape
        if shape[axis] < longest:
            zero = m.op("constant", value=np.zeros((), part.type.numpy_dtype))
            high = [0] * len(shape)
            high[axis] = longest - shape[axis]
            part = m.op("pad", part, zero, low=(0,) * len(shape), high=tuple(high), interior=(0,) * len(shape))
            shape = part.type.shape
        stacked.append(m.op("reshape", part, new_sizes=(*shape[:axis + 1], 1, *shape[axis + 1:])))
    joined = m.op("concatenate", *stacked, dimension=axis + 1)
    shape = joined.type.shape
    y = m.op("reshape", joined, new_sizes=(*shape[:axis], longest * len(parts), *shape[axis + 2:]))
    if y.type.shape[axis] == size:
        return y
    limit = list(y.type.shape)
    limit[axis] = size
    return m.op("slice", y, start_indices=(0,) * len(limit), limit_indices=tuple(limit), strides=(1,) * len(limit))
