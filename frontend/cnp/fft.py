"""cdnajit.numpy.fft: jax.numpy.fft's functions, traced into lax.fft (the graph's `fft` op, which the
fft library plans: libs/fft).

numpy's semantics: `n` / `s` crop or zero-pad the input along the transformed axes (for the inverse
real transforms, `n` is the length of the real output, and the input is cropped or padded to
n // 2 + 1), `axis` / `axes` choose the axes (by default the last one, or the last len(s)), `norm`
is "backward" (1/n on the inverse, the default), "ortho" (1/sqrt(n) both ways) or "forward" (1/n on
the forward transform). JAX's dtypes: real and integer inputs become c64 for f16/bf16/f32 and c128
otherwise (x64 is on), rfft's output is complex of its input's float precision. Any number of axes
(XLA's fft takes at most 3; more are transformed 3 at a time). hfft and ihfft are numpy's:
hfft(a) = irfft(conj(a)) with the norm's direction swapped, ihfft(a) = conj(rfft(a)) likewise.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ...errors import TracingTypeError, TracingValueError
from .. import eager as _eager
from ..lax_fft import fft as lax_fft
from ..tracing import located
from . import base
from .creation import arange, asarray
from .elementwise import conj
from .shaping import concatenate, moveaxis, pad, roll

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

NORMS = ("backward", "ortho", "forward")
XLA_MAX_AXES = 3   # the fft op transforms at most 3 trailing dimensions


def norm_scale(norm, size: int, inverse: bool):
    """The factor a transform of `size` points is multiplied by, beyond lax.fft's (1/size on the inverse)."""
    if norm is None or norm == "backward":
        return 1.0
    if norm not in NORMS:
        raise TracingValueError(located(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".'))
    if norm == "ortho":
        return math.sqrt(size) if inverse else 1 / math.sqrt(size)
    return size if inverse else 1 / size


def swapped_norm(norm):
    """hfft and ihfft: the norm of the other direction."""
    return {None: "forward", "backward": "forward", "forward": "backward"}.get(norm, norm)


def points(value, name: str) -> int:
    try:
        count = operator.index(value)
    except TypeError:
        raise TracingTypeError(located(f"{name}: the number of FFT points must be an int, got {value!r}")) from None
    if count < 1:
        raise TracingValueError(located(f"Invalid number of FFT data points ({count}) specified."))
    return count


def resized(x, axis: int, size: int):
    """x cropped or zero-padded to `size` along `axis`."""
    have = x.shape[axis]
    if have > size:
        return x[(slice(None),) * axis + (slice(0, size),)]
    if have < size:
        widths = [(0, 0)] * x.ndim
        widths[axis] = (0, size - have)
        return pad(x, widths)
    return x


def as_input(a, kind: str):
    """The array a transform of `kind` reads, in JAX's dtypes: complex for FFT/IFFT/IRFFT, real for RFFT."""
    x = asarray(a)
    name = x.type.dtype
    small = name in ("f16", "bf16", "f32")
    if kind == "RFFT":
        if name in ("c64", "c128"):
            raise TracingTypeError(located(f"rfft: the input must be real, got {name} (take its real part, or use fft)"))
        return base.convert(x, "f32" if small else "f64") if name not in ("f32", "f64") else x
    if name in ("c64", "c128"):
        return x
    return base.convert(x, "c64" if small else "c128")


def transform(name: str, kind: str, a, s, axes, norm):
    """numpy's fftn-style core: `kind` is FFT, IFFT, RFFT or IRFFT over `axes` (the last one real for
    RFFT/IRFFT), `s` the transform's lengths (the real output's for IRFFT)."""
    x = as_input(a, kind)
    if s is not None:
        s = [points(n, name) for n in s]
    if axes is None:
        axes = list(range(x.ndim - (len(s) if s is not None else x.ndim), x.ndim))
    else:
        axes = [base.canonical_axis(axis, x.ndim) for axis in (axes if not np.isscalar(axes) else [axes])]
    if len(set(axes)) != len(axes):
        raise TracingValueError(located(f"{name}: repeated axes {list(axes)}"))
    if s is not None and len(s) != len(axes):
        raise TracingValueError(located(f"{name}: Shape and axes have different lengths ({len(s)} and {len(axes)})"))
    if not axes:
        return x
    if s is None:
        s = [x.shape[axis] for axis in axes]
        if kind == "IRFFT":
            s[-1] = 2 * (x.shape[axes[-1]] - 1)
        for n in s:
            points(n, name)
    for axis, n in zip(axes, s):   # crop or pad: the real transforms' last axis holds n // 2 + 1
        x = resized(x, axis, n // 2 + 1 if kind == "IRFFT" and axis == axes[-1] else n)
    moved = list(range(x.ndim - len(axes), x.ndim))
    x = moveaxis(x, axes, moved)
    real_axes = min(len(s), XLA_MAX_AXES) if kind in ("RFFT", "IRFFT") else 0
    groups = [(max(0, stop - XLA_MAX_AXES), stop) for stop in range(len(s) - real_axes, 0, -XLA_MAX_AXES)]
    complex_kind = "IFFT" if kind in ("IFFT", "IRFFT") else "FFT"
    if kind == "RFFT":
        x = lax_fft(x, kind, tuple(s[len(s) - real_axes:]))
    for start, stop in groups if kind != "IRFFT" else reversed(groups):
        x = along(x, complex_kind, s[start:stop], list(range(x.ndim - len(s) + start, x.ndim - len(s) + stop)))
    if kind == "IRFFT":
        x = lax_fft(x, kind, tuple(s[len(s) - real_axes:]))
    scale = norm_scale(norm, math.prod(s), kind in ("IFFT", "IRFFT"))
    if scale != 1.0:
        x = x * scale
    return moveaxis(x, moved, axes)


def along(x, kind: str, lengths, dims):
    """lax.fft of x along `dims` (at most 3), moved last and back."""
    trailing = list(range(x.ndim - len(dims), x.ndim))
    if dims == trailing:
        return lax_fft(x, kind, tuple(lengths))
    return moveaxis(lax_fft(moveaxis(x, dims, trailing), kind, tuple(lengths)), trailing, dims)


def one_axis(n, axis):
    return (None if n is None else [n]), [axis]


def fft(a, n=None, axis=-1, norm=None):
    return transform("fft", "FFT", a, *one_axis(n, axis), norm)


def ifft(a, n=None, axis=-1, norm=None):
    return transform("ifft", "IFFT", a, *one_axis(n, axis), norm)


def rfft(a, n=None, axis=-1, norm=None):
    return transform("rfft", "RFFT", a, *one_axis(n, axis), norm)


def irfft(a, n=None, axis=-1, norm=None):
    return transform("irfft", "IRFFT", a, *one_axis(n, axis), norm)


def hfft(a, n=None, axis=-1, norm=None):
    """The real spectrum of a signal with Hermitian symmetry, given its first half: irfft(conj(a))."""
    return transform("hfft", "IRFFT", conj(as_input(a, "FFT")), *one_axis(n, axis), swapped_norm(norm))


def ihfft(a, n=None, axis=-1, norm=None):
    """hfft's inverse: conj(rfft(a)) of real a."""
    return conj(transform("ihfft", "RFFT", a, *one_axis(n, axis), swapped_norm(norm)))


def fftn(a, s=None, axes=None, norm=None):
    return transform("fftn", "FFT", a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    return transform("ifftn", "IFFT", a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    return transform("rfftn", "RFFT", a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    return transform("irfftn", "IRFFT", a, s, axes, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    return transform("fft2", "FFT", a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    return transform("ifft2", "IFFT", a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    return transform("rfft2", "RFFT", a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    return transform("irfft2", "IRFFT", a, s, axes, norm)


def frequencies(n, d, dtype, name: str, count: int, lowest: int):
    """arange-based sample frequencies: [0, count) then [lowest, 0), over n d."""
    n = points(n, name)
    dtype = "f64" if dtype is None else base.to_dtype_name(dtype)
    k = arange(0, count, dtype=dtype)
    if lowest < 0:
        k = concatenate([k, arange(lowest, 0, dtype=dtype)])
    return k / (asarray(d, dtype=dtype) * n)


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d n), f64 by default (x64 on)."""
    return frequencies(n, d, dtype, "fftfreq", (points(n, "fftfreq") - 1) // 2 + 1, -(points(n, "fftfreq") // 2))


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """[0, 1, ..., n // 2] / (d n)."""
    return frequencies(n, d, dtype, "rfftfreq", points(n, "rfftfreq") // 2 + 1, 0)


def shifted(x, axes, sign: int):
    x = asarray(x)
    axes = base.canonical_axes(axes, x.ndim)
    return roll(x, [sign * (x.shape[axis] // 2) for axis in axes], axes) if axes else x


def fftshift(x, axes=None):
    """The zero frequency moved to the middle: a roll by n // 2 along each axis."""
    return shifted(x, axes, 1)


def ifftshift(x, axes=None):
    """fftshift's inverse: a roll by -(n // 2)."""
    return shifted(x, axes, -1)


_eager.make_namespace_eager(globals(), __all__, host_only=set())
