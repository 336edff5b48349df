"""The pattern table turning the graph's `fft` ops into the FFT library's calls: each transformed axis
planned (plan.py) and the plan's kernels emitted as `library_call fft.*` (routines.py).

An axis of length N is transformed on the view [B, N, C] of the value (B the product of the axes
before it, C of those after), through reshapes, which cost nothing. Values flow between the calls
with a kind (routines.KINDS): a real input is read as "real" or, for an even length along the last
axis, as "real_pairs" (its samples paired as N / 2 complex values), and an inverse real transform
writes its samples the same ways.
  - FFT, IFFT: each axis's plan, the last axis first; IFFT scales each axis by 1 / N. Trailing axes
    whose plans are single stockham kernels are rotated instead (rotated_axes): each pass reads rows.
  - RFFT: the last axis (even N: an N / 2 complex plan on the pairs, then rfft_post; odd N: the N
    plan on the real input, cropped to N / 2 + 1), then the complex plans of the leading axes.
  - IRFFT: the inverse complex plans of the leading axes, then the last axis (even N: irfft_pre,
    then the inverse N / 2 plan writing real pairs; odd N: the Hermitian extension to N entries, the
    inverse N plan, the real parts).
"""
from __future__ import annotations

import math

from ...ir.types import COMPLEX_PART
from ...passes.patterns import Pat
from .plan import plan_for, side_by_side


def reshaped(m, value, shape):
    """value as `shape`: one reshape of what it views (a reshape of a reshape would be a copy kernel)."""
    shape = tuple(shape)
    if value.type.shape != shape and value.producer is not None and value.producer.name == "reshape":
        value = value.producer.operands[0]
    return value if value.type.shape == shape else m.op("reshape", value, new_sizes=shape)


def view(m, value, shape, kind: str):
    """The value of `kind` holding complex elements of `shape`, reshaped to it (real pairs: the last doubled)."""
    shape = tuple(shape)
    return reshaped(m, value, shape[:-1] + (2 * shape[-1],) if kind == "real_pairs" else shape)


def call(m, routine: str, *operands, **attrs):
    return m.op("library_call", *operands, library="fft", routine=routine, solution="", **attrs)


def twiddles(m, part: str, length: int, twiddle_length: int = 0):
    return call(m, "twiddles", length=length, twiddle_length=twiddle_length, dtype=part)


class Axis:
    """One transformed axis: the value's elements as [outer, N, inner], the precision and the direction."""

    def __init__(self, m, part: str, outer: int, inner: int, sign: int):
        self.m, self.part, self.outer, self.inner, self.sign = m, part, outer, inner, sign

    def stockham(self, value, node, shape, scale=1.0, transpose=False, twiddle_length=0, input_kind="complex",
                 output_kind="complex", load_factor=None, store_factor=None, output_length=0, conjugate=False,
                 spectrum=None, store_positions=0):
        """A stockham call on `value` viewed as `shape` ([B, M, N, C]; a padded [B, N_in, S] with a
        load_factor, multiplied by its conjugate); store_factor (or, with `conjugate`, its conjugate)
        multiplies the result, cropped to output_length positions (of store_positions, where given);
        with a spectrum, the convolution's middle (routines.py)."""
        factors = [f for f in (load_factor, spectrum, store_factor) if f is not None]
        return call(self.m, "stockham", view(self.m, value, shape, input_kind),
                    twiddles(self.m, self.part, node.length, twiddle_length), *factors, radices=node.radices,
                    sign=self.sign, scale=float(scale), transpose=transpose, twiddle_length=twiddle_length,
                    input_kind=input_kind, output_kind=output_kind,
                    load_factor="none" if load_factor is None else "conjugate",
                    store_factor="none" if store_factor is None else "conjugate" if conjugate else "plain",
                    output_length=output_length, spectrum="none" if spectrum is None else "plain",
                    store_positions=store_positions)

    def pointwise(self, value, length: int, in_length: int, factor=None, conjugate=False, scale=1.0,
                  input_kind="complex", output_kind="complex"):
        operands = [view(self.m, value, (self.outer, in_length, self.inner), "complex" if input_kind == "hermitian"
                         else input_kind)] + ([factor] if factor is not None else [])
        return call(self.m, "pointwise", *operands, length=length, scale=float(scale), input_kind=input_kind,
                    output_kind=output_kind, factor="none" if factor is None else "conjugate" if conjugate else "plain")

    def run(self, value, plan, scale=1.0, input_kind="complex", output_kind="complex"):
        """The plan's kernels on `value` (of input_kind, holding [outer, N, inner]); the result, of
        output_kind, holds [outer, N, inner] (in some shape)."""
        n, outer, inner = plan.length, self.outer, self.inner
        if plan.kind == "identity":
            if input_kind == output_kind and scale == 1.0:
                return value
            return self.pointwise(value, 1, 1, scale=scale, input_kind=input_kind, output_kind=output_kind)
        if plan.kind == "stockham":
            return self.stockham(value, plan.nodes[0], (outer, 1, n, inner), scale, input_kind=input_kind,
                                 output_kind=output_kind)
        if plan.kind == "two_pass":   # columns of length L1 times w_N^(k1 n2), then rows of L2 written transposed
            first, second = plan.nodes
            columns = self.stockham(value, first, (outer, 1, first.length, second.length * inner),
                                    twiddle_length=n, input_kind=input_kind)
            return self.stockham(columns, second, (outer, first.length, second.length, inner), scale, transpose=True,
                                 output_kind=output_kind)
        if plan.kind == "three_pass":   # R = L1 L2 as two passes over columns of stride L3, then L3 transposed
            first, second, third = plan.nodes
            size = first.length * second.length
            columns = self.stockham(value, first, (outer, 1, first.length, n // first.length * inner),
                                    twiddle_length=size, input_kind=input_kind)
            rows = self.stockham(columns, second, (outer, first.length, second.length, third.length * inner),
                                 transpose=True, twiddle_length=n)
            return self.stockham(rows, third, (outer, size, third.length, inner), scale, transpose=True,
                                 output_kind=output_kind)
        # bluestein: y = conj(b) * IFFT_M(FFT_M(x conj(b)) FFT_M(b)), b the chirp filter of length M; the
        # products, the padding and the crop fused into the first and last kernels of one- and two-pass M plans
        size = plan.inner.length
        chirp = call(self.m, "chirp", length=n, size=size, sign=self.sign, dtype=self.part)
        if plan.inner.kind == "two_pass" and self.convolves_side_by_side(plan.inner):
            return self.bluestein_two_pass(value, plan, chirp, scale, input_kind, output_kind)
        forward, inverse = Axis(self.m, self.part, outer, inner, -1), Axis(self.m, self.part, outer, inner, 1)
        spectrum = reshaped(self.m, Axis(self.m, self.part, 1, 1, -1).run(chirp, plan.inner), (size,))
        if plan.inner.kind == "three_pass":   # the products and the padding and crop as kernels of their own
            padded = forward.pointwise(value, size, n, factor=chirp, conjugate=True, input_kind=input_kind)
            product = forward.pointwise(forward.run(padded, plan.inner), size, size, factor=spectrum)
            return inverse.pointwise(inverse.run(product, plan.inner, scale / size), n, size, factor=chirp,
                                     conjugate=True, output_kind=output_kind)
        if plan.inner.kind == "stockham":
            node = plan.inner.nodes[0]
            product = forward.stockham(value, node, (outer, n, inner), store_factor=spectrum, output_length=size,
                                       load_factor=chirp, input_kind=input_kind)
            return inverse.stockham(product, node, (outer, 1, size, inner), scale / size, store_factor=chirp,
                                    output_length=n, conjugate=True, output_kind=output_kind)
        # a two-pass M whose convolution's calls cannot run side by side: two two-pass FFTs
        first, second = plan.inner.nodes
        columns = forward.stockham(value, first, (outer, n, inner), twiddle_length=size, load_factor=chirp,
                                   input_kind=input_kind)
        product = forward.stockham(columns, second, (outer, first.length, second.length, inner), transpose=True,
                                   store_factor=spectrum, output_length=size)
        columns = inverse.stockham(product, first, (outer, 1, first.length, second.length * inner), twiddle_length=size)
        return inverse.stockham(columns, second, (outer, first.length, second.length, inner), scale / size,
                                transpose=True, store_factor=chirp, output_length=n, conjugate=True,
                                output_kind=output_kind)

    def convolves_side_by_side(self, inner_plan) -> bool:
        """Whether Bluestein's three kernels through the two-pass `inner_plan` take the lanes kernel,
        which their convolution and cropped columns need: the rows of L2 (lanes dividing C, or M = L1
        for rows) and the columns of L1 (lanes dividing L2 C)."""
        first, second = inner_plan.nodes
        rows = side_by_side(self.inner if self.inner > 1 else first.length, second.length, self.part)
        return bool(rows and side_by_side(second.length * self.inner, first.length, self.part))

    def bluestein_two_pass(self, value, plan, chirp, scale, input_kind, output_kind):
        """Bluestein through a two-pass M = L1 L2 in three kernels. The convolution needs the spectrum
        in no particular order, so the forward FFT stops after its row pass in place (entry k2 of row
        k1 holding X[k1 + L1 k2]) and the inverse FFT runs its passes the other way round: the
        padded columns of L1 with the twiddles w_M^(k1 n2); the rows of L2 forward, times the chirp's
        spectrum in that order (scaled by 1 / M), inverse, times w_M^(-k1 n2); the inverse columns,
        cropped to N times the conjugated chirp. One pass over the batch fewer than two two-pass FFTs."""
        m, part, n, outer, inner = self.m, self.part, plan.length, self.outer, self.inner
        first, second = plan.inner.nodes
        size = plan.inner.length
        rows = (outer, first.length, second.length, inner)
        spectrum_axis = Axis(m, part, 1, 1, -1)
        filter_columns = spectrum_axis.stockham(chirp, first, (1, 1, first.length, second.length), twiddle_length=size)
        spectrum = reshaped(m, spectrum_axis.stockham(filter_columns, second, (1, first.length, second.length, 1),
                                                      1.0 / size), (size,))
        forward, inverse = Axis(m, part, outer, inner, -1), Axis(m, part, outer, inner, 1)
        columns = forward.stockham(value, first, (outer, n, inner), twiddle_length=size, load_factor=chirp,
                                   input_kind=input_kind)
        product = forward.stockham(columns, second, rows, twiddle_length=size, spectrum=spectrum)
        return inverse.stockham(product, first, (outer, 1, first.length, second.length * inner), scale,
                                store_factor=chirp, output_length=n, conjugate=True, output_kind=output_kind,
                                store_positions=size)


def axis_plan(shape, axis: int, part: str):
    plan = plan_for(shape[axis], part)
    if plan is None:
        raise NotImplementedError(f"fft: no plan for length {shape[axis]} in {part} (axis {axis} of {list(shape)}): "
                                  f"it would need a kernel pass beyond the three of three_pass plans, or twiddle "
                                  f"exponents beyond i32")
    return plan


def rotated_axes(m, value, count: int, sign: int):
    """FFT or IFFT along the trailing `count` axes, each by a single stockham kernel that reads its
    transforms as contiguous rows and writes them transposed: the block [d1, ..., dk] of each leading
    index becomes [dk, d1, ..., dk-1], so the next axis is last in turn, and after k passes the block
    is back in its order."""
    shape, part = value.type.shape, COMPLEX_PART[value.type.dtype]
    batch, block = math.prod(shape[:-count]), list(shape[-count:])
    axis_ = Axis(m, part, 1, 1, sign)
    for _ in range(count):
        n = block[-1]
        plan = plan_for(n, part)
        value = axis_.stockham(value, plan.nodes[0], (batch, math.prod(block[:-1]), n, 1),
                               1.0 / n if sign > 0 else 1.0, transpose=True)
        block = [n] + block[:-1]
    return reshaped(m, value, shape)


def complex_axes(m, value, axes, sign: int):
    """FFT (sign -1) or IFFT (sign 1) of a complex value along `axes`, the last first: by rotated_axes
    when they are the trailing axes (2 or more) and each is one stockham kernel, otherwise each on
    its [B, N, C] view."""
    shape, part = value.type.shape, COMPLEX_PART[value.type.dtype]
    axes = sorted(axes)
    trailing = len(axes) >= 2 and axes == list(range(len(shape) - len(axes), len(shape)))
    if trailing and all(getattr(plan_for(shape[a], part), "kind", None) == "stockham" for a in axes):
        return rotated_axes(m, value, len(axes), sign)
    for axis in sorted(axes, reverse=True):
        plan = axis_plan(shape, axis, part)
        axis_ = Axis(m, part, math.prod(shape[:axis]), math.prod(shape[axis + 1:]), sign)
        value = reshaped(m, axis_.run(value, plan, 1.0 / shape[axis] if sign > 0 else 1.0), shape)
    return value


def real_forward(m, x, length: int):
    """RFFT along the last axis of real x: [..., N] -> complex [..., N / 2 + 1]."""
    part, lead = x.type.dtype, x.type.shape[:-1]
    axis = Axis(m, part, math.prod(lead), 1, -1)
    if length % 2:
        full = axis.run(x, axis_plan(x.type.shape, x.type.ndim - 1, part), input_kind="real")
        return reshaped(m, axis.pointwise(full, length // 2 + 1, length), lead + (length // 2 + 1,))
    half = length // 2
    pairs = axis.run(x, axis_plan(lead + (half,), len(lead), part), input_kind="real_pairs")
    spectrum = call(m, "rfft_post", reshaped(m, pairs, (axis.outer, half)), twiddles(m, part, length))
    return reshaped(m, spectrum, lead + (half + 1,))


def real_inverse(m, x, length: int):
    """IRFFT along the last axis of complex x: [..., N / 2 + 1] -> real [..., N]."""
    part, lead = COMPLEX_PART[x.type.dtype], x.type.shape[:-1]
    axis = Axis(m, part, math.prod(lead), 1, 1)
    if length % 2:
        full = axis.pointwise(x, length, length // 2 + 1, input_kind="hermitian")
        signal = axis.run(full, axis_plan(lead + (length,), len(lead), part), 1.0 / length, output_kind="real")
        return reshaped(m, signal, lead + (length,))
    half = length // 2
    pairs = call(m, "irfft_pre", reshaped(m, x, (axis.outer, half + 1)), twiddles(m, part, length))
    signal = axis.run(pairs, axis_plan(lead + (half,), len(lead), part), 1.0 / length, output_kind="real_pairs")
    return reshaped(m, signal, lead + (length,))


def planned_fft(m, x, root):
    """fft -> the plans of its axes (the module docstring)."""
    fft_type, lengths = root.attrs["fft_type"], tuple(root.attrs["fft_length"])
    rank = x.type.ndim
    leading = range(rank - len(lengths), rank - 1)
    if fft_type in ("FFT", "IFFT"):
        return complex_axes(m, x, range(rank - len(lengths), rank), -1 if fft_type == "FFT" else 1)
    if fft_type == "RFFT":
        return complex_axes(m, real_forward(m, x, lengths[-1]), leading, -1)
    return real_inverse(m, complex_axes(m, x, leading, 1), lengths[-1])


RULES = [
    # fft(x) -> the plans of its axes: fft.stockham calls (with their fft.twiddles tables), Bluestein's
    # fft.chirp (its products fused into the stockham calls), fft.pointwise crops and
    # extensions, the real transforms' fft.rfft_post / fft.irfft_pre
    (Pat.op("fft", Pat.var("x"), name="root"), planned_fft),
]
