"""The FFT library's routines (ir/ops/library.py's contract). Complex values are interleaved (re, im)
in their buffers, as everywhere in the kernel IR (lowering/emitters.py's value_buffer).

  twiddles    () -> table, a real [2, T] array of the part dtype: row 0 the cosines, row 1 the sines of
              the angles 2 pi t / length (t < length), then, when twiddle_length L > 0, 2 pi i / L
              (i < S) and 2 pi S j / L (j < ceil(L / S)), S = large_step(L): the two levels whose
              product is w_L^t for any t < L, as rocFFT's large-twiddle tables.
  stockham    (x, table) -> y: a batched 1-D FFT of length N = prod(radices) along axis 2 of
              x[B, M, N, C] (complex, or real when input_kind is "real"):
                  y[b, m, k, c] = scale * w_L^(k c) * sum_n x[b, m, n, c] exp(sign 2 pi i n k / N)
              with w_L^(k c) = exp(sign 2 pi i k c / L) only when twiddle_length L > 0 (the twiddle
              between the passes of a two-pass plan), and y laid out [B, N, M, C] when `transpose`.
              `table` is the twiddles routine's result for (N, L).
The references compute in float64 (numpy's pocketfft) and round once.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir.opdef import require
from ...ir.ops.library import Routine
from ...ir.types import COMPLEX_OF, COMPLEX_PART, NUMPY_DTYPES, TensorType


def large_step(twiddle_length: int) -> int:
    """S, the power of two near sqrt(L) splitting t < L as t = S hi + lo."""
    return 1 << ((twiddle_length.bit_length() + 1) // 2) if twiddle_length else 0


def table_size(length: int, twiddle_length: int) -> int:
    step = large_step(twiddle_length)
    return length + (step + -(-twiddle_length // step) if twiddle_length else 0)


def angles(length: int, twiddle_length: int) -> np.ndarray:
    parts = [np.arange(length) * (2 * np.pi / length)]
    if twiddle_length:
        step = large_step(twiddle_length)
        parts += [np.arange(step) * (2 * np.pi / twiddle_length),
                  np.arange(-(-twiddle_length // step)) * (2 * np.pi * step / twiddle_length)]
    return np.concatenate(parts)


def twiddles_infer(types, attrs):
    require(not types, f"library_call: fft.twiddles takes no operands, got {len(types)}")
    require(attrs["dtype"] in COMPLEX_OF, f"library_call: fft.twiddles dtype {attrs['dtype']} is not f32 or f64")
    return [TensorType(attrs["dtype"], (2, table_size(attrs["length"], attrs["twiddle_length"])))]


def twiddles_reference(*, length, twiddle_length, dtype):
    theta = angles(length, twiddle_length)
    return np.stack([np.cos(theta), np.sin(theta)]).astype(NUMPY_DTYPES[dtype])


def stockham_infer(types, attrs):
    name = "library_call: fft.stockham"
    require(len(types) == 2, f"{name} takes (x, table), got {len(types)} operands")
    x, table = types
    radices, real_input = tuple(attrs["radices"]), attrs["input_kind"] == "real"
    require(attrs["input_kind"] in ("complex", "real"), f"{name}: input_kind {attrs['input_kind']!r} is not "
                                                         f"'complex' or 'real'")
    part = x.dtype if real_input else COMPLEX_PART.get(x.dtype)
    require(part in COMPLEX_OF, f"{name}: x {x} must be {'f32/f64' if real_input else 'c64/c128'}")
    length = math.prod(radices)
    require(x.ndim == 4 and x.shape[2] == length, f"{name}: x {x} must be [B, M, {length}, C] for radices "
                                                  f"{list(radices)}")
    expected = TensorType(part, (2, table_size(length, attrs["twiddle_length"])))
    require(table == expected, f"{name}: table {table} must be {expected}")
    b, m, n, c = x.shape
    return [TensorType(COMPLEX_OF[part], (b, n, m, c) if attrs["transpose"] else (b, m, n, c))]


def stockham_reference(x, table, *, radices, sign, scale, transpose, twiddle_length, input_kind):
    wide = x.astype(np.complex128)
    y = np.fft.fft(wide, axis=2) if sign < 0 else np.fft.ifft(wide, axis=2) * x.shape[2]
    if twiddle_length:
        k, c = np.arange(x.shape[2])[:, None], np.arange(x.shape[3])[None, :]
        y = y * np.exp(sign * 2j * np.pi * (k * c) / twiddle_length)
    y = y * scale
    if transpose:
        y = y.transpose(0, 2, 1, 3)
    return np.ascontiguousarray(y).astype(np.complex64 if table.dtype == np.float32 else np.complex128)


ROUTINES = {
    "twiddles": Routine({"length": "int", "twiddle_length": "int", "dtype": "dtype"}, twiddles_infer,
                        twiddles_reference, "cos and sin tables of a stockham kernel (libs/fft/routines.py)"),
    "stockham": Routine({"radices": "ints", "sign": "int", "scale": "float", "transpose": "bool",
                         "twiddle_length": "int", "input_kind": "str"}, stockham_infer, stockham_reference,
                        "a batched 1-D Stockham FFT along axis 2 of [B, M, N, C] (libs/fft/routines.py)"),
}
