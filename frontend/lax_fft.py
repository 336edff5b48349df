"""cdnajit.lax.fft: the graph IR's fft op (FFT, IFFT, RFFT, IRFFT over trailing dimensions)."""
from __future__ import annotations

import enum

from ..errors import TracingValueError
from ..ir.types import COMPLEXES
from .cnp.base import convert
from .lax_elementwise import static_ints
from .tracing import as_tracer, bind1, located

__all__ = ["FftType", "fft"]


class FftType(enum.IntEnum):
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


def fft(x, fft_type, fft_lengths):
    """jax.lax.fft: fft_type an FftType or its name (any case); FFT and IFFT convert real input to complex."""
    x = as_tracer(x)
    try:
        kind = FftType[fft_type.upper()] if isinstance(fft_type, str) else FftType(fft_type)
    except (KeyError, ValueError):
        raise TracingValueError(located(f"lax.fft: unknown fft_type {fft_type!r}; expected one of "
                                        f"{', '.join(FftType.__members__)}")) from None
    if kind in (FftType.FFT, FftType.IFFT) and x.type.dtype not in COMPLEXES:
        x = convert(x, "c64" if x.type.dtype in ("f16", "bf16", "f32") else "c128")
    elif kind is FftType.RFFT and x.type.dtype in ("f16", "bf16"):
        x = convert(x, "f32")
    lengths = static_ints(fft_lengths, "lax.fft fft_lengths")
    return bind1("fft", [x], {"fft_type": kind.name, "fft_length": lengths})
