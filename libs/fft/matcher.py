"""The pattern table turning the graph's `fft` ops into the FFT library's calls: each transformed axis
planned (plan.py) and its plan's nodes emitted as `library_call fft.stockham`, each with its twiddle
table (`library_call fft.twiddles`).

An axis is transformed on the view [B, 1, N, C] of the value (B the product of the axes before it,
C of those after: reshapes, which cost nothing). A rule declines (returns None, and the fft op keeps
lowering/emit_fft.py's direct DFT) for what the library does not plan yet: RFFT and IRFFT, lengths
with a prime factor above 13, and a two-pass length on an axis other than the last.
"""
from __future__ import annotations

import math

from ...ir.types import COMPLEX_PART
from ...passes.patterns import Pat
from .plan import plan_for


def reshaped(m, value, shape):
    shape = tuple(shape)
    return value if value.type.shape == shape else m.op("reshape", value, new_sizes=shape)


def twiddles(m, part: str, length: int, twiddle_length: int = 0):
    return m.op("library_call", library="fft", routine="twiddles", solution="", length=length,
                twiddle_length=twiddle_length, dtype=part)


def stockham(m, value, node, part: str, sign: int, scale=1.0, transpose=False, twiddle_length=0):
    return m.op("library_call", value, twiddles(m, part, node.length, twiddle_length), library="fft",
                routine="stockham", solution="", radices=node.radices, sign=sign, scale=float(scale),
                transpose=transpose, twiddle_length=twiddle_length, input_kind="complex")


def along_axis(m, value, plan, outer: int, inner: int, sign: int, scale: float):
    """The plan's kernels on value viewed [outer, 1, N, inner]; the result as [outer, N, inner] elements."""
    part = COMPLEX_PART[value.type.dtype]
    if plan.kind == "identity":
        return value
    if plan.kind == "stockham":
        (node,) = plan.nodes
        return stockham(m, reshaped(m, value, (outer, 1, plan.length, inner)), node, part, sign, scale)
    first, second = plan.nodes   # two_pass: columns of length L1 with the twiddles, then rows, transposed
    columns = stockham(m, reshaped(m, value, (outer, 1, first.length, second.length)), first, part, sign,
                       twiddle_length=plan.length)
    return stockham(m, reshaped(m, columns, (outer, first.length, second.length, 1)), second, part, sign, scale,
                    transpose=True)


def planned_fft(m, x, root):
    """fft (FFT or IFFT) -> each transformed axis's plan, the last axis first."""
    fft_type, lengths = root.attrs["fft_type"], tuple(root.attrs["fft_length"])
    if fft_type not in ("FFT", "IFFT"):
        return None
    shape, part = x.type.shape, COMPLEX_PART[x.type.dtype]
    axes = range(len(shape) - len(lengths), len(shape))
    plans = {axis: plan_for(shape[axis], part) for axis in axes}
    if any(plan is None or (plan.kind == "two_pass" and axis != len(shape) - 1) for axis, plan in plans.items()):
        return None
    sign = -1 if fft_type == "FFT" else 1
    value = x
    for axis in reversed(axes):
        scale = 1.0 / shape[axis] if sign > 0 else 1.0
        value = along_axis(m, value, plans[axis], math.prod(shape[:axis]), math.prod(shape[axis + 1:]), sign, scale)
    return reshaped(m, value, shape)


RULES = [
    # fft(x) of complex x -> a plan of fft.stockham calls per transformed axis
    (Pat.op("fft", Pat.var("x"), name="root"), planned_fft),
]
