"""The FFT library's routines (ir/ops/library.py's contract). Complex values are interleaved (re, im)
in their buffers, as everywhere in the kernel IR (lowering/emitters.py's value_buffer).

Values a routine reads or writes have a kind (KINDS): "complex"; "real" (imaginary parts zero on input,
dropped on output); "real_pairs", a real array whose last dimension holds the (re, im) pairs of a
complex one of half its length (a real signal of even length read as complex: no copy, the same bytes).

  twiddles    () -> table, a real [2, T] array of the part dtype: row 0 the cosines, row 1 the sines of
              the angles 2 pi t / length (t < length), then, when twiddle_length L > 0, 2 pi i / L
              (i < S) and 2 pi S j / L (j < ceil(L / S)), S = large_step(L): the two levels whose
              product is w_L^t for any t < L, as rocFFT's large-twiddle tables.
  stockham    (x, table[, f][, g]) -> y: a batched 1-D FFT of length N = prod(radices) along axis 2 of
              x[B, M, N, C]:
                  y[b, m, k, c] = scale * w_L^((k M + m) n2) * sum_n x[b, m, n, c] exp(sign 2 pi i n k / N)
              with w_L^j = exp(sign 2 pi i j / L), n2 = c / (C N M / L), only when twiddle_length
              L > 0 (the twiddle between the passes of a multi-pass plan), and y laid out [B, N, M, C]
              when `transpose`. `table` is the twiddles routine's result for (N, L).
              The edges of a plan, fused into its first and last kernels (Bluestein's products):
              with load_factor "conjugate", x is [B, N_in, S], a sequence of P = (L or N) positions
              padded with zeros past N_in and multiplied by conj f[p], read as [B, 1, N, S P / N]
              (position p of the sequence is n (P / N) + c / S); with store_factor "plain" or
              "conjugate" (M = 1 or `transpose`), y, whose positions are p = k M + m, is multiplied
              by g[p] (or its conjugate) and cropped to y[B, output_length, C]; with store_positions
              P > N M as well (M = 1), y is the sequence of P positions the load factor reads, cropped:
              entry k of column c is y[b, p, c mod S] of [B, output_length, S], p = k (P / N) + c / S,
              S = C N / P (the inverse of a padded first kernel's view, read by a last kernel).
              With spectrum "plain" (no edges, no transpose), the call is a convolution's middle,
              in place: the transform, times h[m N + k] (the operand after the table), the inverse
              transform (unscaled, sign -sign), and with L > 0 times w_L^(-m n) at entry n of row m:
                  y[b, m, n, c] = w_L^(-m n) sum_k h[m N + k] exp(-sign 2 pi i k n / N) X[b, m, k, c],
              X the transform above (scale 1), so that Bluestein's two-pass M takes three kernels, the
              middle one keeping the spectrum in the order the row pass leaves it (routines' plan,
              matcher.py).
  chirp       () -> b[M], Bluestein's filter for length N: b[m] = exp(-sign pi i m^2 / N) for m < N,
              b[M - m] = b[m] for 0 < m < N, 0 elsewhere.
  pointwise   (x[, f]) -> y: y[b, i, c] = scale * x[b, i, c] * (f[i], its conjugate or 1) for i < length,
              x[b, i, c] being 0 past x's length, or conj(x[b, length - i, c]) for a "hermitian" x (the
              half spectrum of a real signal, imaginary parts of entries 0 and length / 2 ignored as numpy does).
  rfft_post   (Z[B, K], table) -> X[B, K + 1]: the spectrum of a real signal of length N = 2K from the
              FFT Z of its (even, odd) sample pairs: X[k] = E[k] + exp(-2 pi i k / N) O[k], with
              E[k] = (Z[k] + conj Z[K - k]) / 2 and O[k] = -i (Z[k] - conj Z[K - k]) / 2 (Z[K] = Z[0]).
  irfft_pre   (X[B, K + 1], table) -> Z[B, K]: the inverse step, Z[k] = (X[k] + conj X[K - k])
              + i exp(2 pi i k / N) (X[k] - conj X[K - k]) = 2 FFT(pairs of irfft(X)), the imaginary parts of
              X[0] and X[K] ignored; an inverse FFT of length K scaled by 1 / N then gives the pairs.
The references compute in float64 (numpy's pocketfft) and round once.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir.opdef import require
from ...ir.ops.library import Routine
from ...ir.types import COMPLEX_OF, COMPLEX_PART, NUMPY_DTYPES, TensorType

KINDS = ("complex", "real", "real_pairs")


def large_step(twiddle_length: int) -> int:
    """S, the power of two near sqrt(L) splitting t < L as t = S hi + lo."""
    return 1 << ((twiddle_length.bit_length() + 1) // 2) if twiddle_length else 0


def table_size(length: int, twiddle_length: int) -> int:
    step = large_step(twiddle_length)
    return length + (step + -(-twiddle_length // step) if twiddle_length else 0)


def complex_view(name: str, value: TensorType, kind: str) -> TensorType:
    """The complex array a value of `kind` holds."""
    require(kind in KINDS + ("hermitian",), f"{name}: kind {kind!r} is not one of {', '.join(KINDS)}")
    if kind in ("complex", "hermitian"):
        require(value.dtype in COMPLEX_PART, f"{name}: {value} must be complex (c64 or c128)")
        return value
    require(value.dtype in COMPLEX_OF, f"{name}: {value} of kind {kind} must be f32 or f64")
    if kind == "real":
        return value.with_dtype(COMPLEX_OF[value.dtype])
    require(value.ndim >= 1 and value.shape[-1] % 2 == 0, f"{name}: {value} of real pairs needs an even last dimension")
    return TensorType(COMPLEX_OF[value.dtype], value.shape[:-1] + (value.shape[-1] // 2,))


def of_kind(value: TensorType, kind: str) -> TensorType:
    """The value of `kind` holding the complex array `value`."""
    if kind == "complex":
        return value
    part = COMPLEX_PART[value.dtype]
    return TensorType(part, value.shape if kind == "real" else value.shape[:-1] + (2 * value.shape[-1],))


def as_complex(array: np.ndarray, kind: str) -> np.ndarray:
    """The complex128 array an array of `kind` holds (the references' view)."""
    if kind == "real_pairs":
        return np.ascontiguousarray(array).view(np.complex128 if array.dtype == np.float64 else np.complex64) \
            .astype(np.complex128)
    return array.astype(np.complex128)


def to_kind(array: np.ndarray, kind: str, part) -> np.ndarray:
    """A complex128 result rounded to its kind's dtype (part: the real dtype)."""
    result = np.ascontiguousarray(array).astype(np.complex64 if part == np.float32 else np.complex128)
    if kind == "real":
        return result.real.copy()
    return result.view(part) if kind == "real_pairs" else result


def twiddles_infer(types, attrs):
    require(not types, f"library_call: fft.twiddles takes no operands, got {len(types)}")
    require(attrs["dtype"] in COMPLEX_OF, f"library_call: fft.twiddles dtype {attrs['dtype']} is not f32 or f64")
    return [TensorType(attrs["dtype"], (2, table_size(attrs["length"], attrs["twiddle_length"])))]


def twiddles_reference(*, length, twiddle_length, dtype):
    parts = [np.arange(length) * (2 * np.pi / length)]
    if twiddle_length:
        step = large_step(twiddle_length)
        parts += [np.arange(step) * (2 * np.pi / twiddle_length),
                  np.arange(-(-twiddle_length // step)) * (2 * np.pi * step / twiddle_length)]
    theta = np.concatenate(parts)
    return np.stack([np.cos(theta), np.sin(theta)]).astype(NUMPY_DTYPES[dtype])


LOAD_FACTORS, STORE_FACTORS, SPECTRA = ("none", "conjugate"), ("none", "plain", "conjugate"), ("none", "plain")


def stockham_view(x: TensorType, attrs) -> TensorType:
    """The complex [B, M, N, C] a stockham call transforms, of its x (a padded [B, N_in, S] with a
    load factor: [B, 1, N, S P / N], P its sequence's length)."""
    length = math.prod(attrs["radices"])
    if attrs["load_factor"] == "none":
        return x
    positions = attrs["twiddle_length"] or length
    b, _, s = x.shape
    return x.with_shape((b, 1, length, s * (positions // length)))


def stockham_infer(types, attrs):
    name = "library_call: fft.stockham"
    load_factor, store_factor = attrs["load_factor"], attrs["store_factor"]
    require(load_factor in LOAD_FACTORS and store_factor in STORE_FACTORS,
            f"{name}: load_factor {load_factor!r} / store_factor {store_factor!r} not in {LOAD_FACTORS} / {STORE_FACTORS}")
    spectrum, store_positions = attrs["spectrum"], attrs["store_positions"]
    require(spectrum in SPECTRA, f"{name}: spectrum {spectrum!r} is not one of {', '.join(SPECTRA)}")
    factors = (load_factor != "none") + (store_factor != "none") + (spectrum != "none")
    require(len(types) == 2 + factors, f"{name} takes (x, table) and {factors} factors, got {len(types)} operands")
    require(spectrum == "none" or (factors == 1 and not attrs["transpose"] and attrs["scale"] == 1.0
                                   and attrs["input_kind"] == attrs["output_kind"] == "complex"),
            f"{name}: a spectrum takes no edges, transpose, scale or real kinds")
    x, table = complex_view(name, types[0], attrs["input_kind"]), types[1]
    radices = tuple(attrs["radices"])
    length = math.prod(radices)
    twiddle_length = attrs["twiddle_length"]
    if load_factor != "none":
        positions = twiddle_length or length
        require(x.ndim == 3 and x.shape[1] <= positions and types[2] == TensorType(x.dtype, types[2].shape)
                and types[2].ndim == 1 and types[2].shape[0] >= positions,
                f"{name}: a padded x {x} must be [B, <= {positions}, S] and its factor {types[2]} {x.dtype}[>= {positions}]")
        x = stockham_view(x, attrs)
    require(x.ndim == 4 and x.shape[2] == length, f"{name}: x {x} must be [B, M, {length}, C] for radices "
                                                  f"{list(radices)}")
    positions = length * x.shape[1]
    require(not twiddle_length or attrs["spectrum"] != "none"
            or (twiddle_length % positions == 0 and x.shape[3] % (twiddle_length // positions) == 0),
            f"{name}: twiddle_length {twiddle_length} must be {length} x M x a divisor of C in {x}")
    expected = TensorType(COMPLEX_PART[x.dtype], (2, table_size(length, twiddle_length)))
    require(table == expected, f"{name}: table {table} must be {expected}")
    b, m, n, c = x.shape
    if spectrum != "none":
        h = types[2]
        require(h.ndim == 1 and h.dtype == x.dtype and h.shape[0] >= m * n and (
            not twiddle_length or twiddle_length >= m * n), f"{name}: a spectrum {h} must be {x.dtype}[>= {m * n}] "
                                                           f"and twiddle_length {twiddle_length} 0 or >= {m * n}")
        return [x]
    result = TensorType(x.dtype, (b, n, m, c) if attrs["transpose"] else (b, m, n, c))
    if store_factor != "none":
        out, positions = attrs["output_length"], store_positions or n * m
        g = types[-1]
        require((attrs["transpose"] or m == 1) and 0 < out <= positions and g.ndim == 1 and g.dtype == x.dtype
                and g.shape[0] >= positions, f"{name}: a store factor needs M = 1 or a transposed result, "
                                             f"output_length {out} <= {positions} and a factor {g} {x.dtype}"
                                             f"[>= {positions}]")
        require(not store_positions or (m == 1 and store_positions % n == 0 and (c * n) % store_positions == 0),
                f"{name}: store_positions {store_positions} needs M = 1 and a multiple of {n} dividing C N = {c * n}")
        result = TensorType(x.dtype, (b, out, c * n // positions if store_positions else c))
    return [of_kind(result, attrs["output_kind"])]


def stockham_reference(x, table, *factors, radices, sign, scale, transpose, twiddle_length, input_kind, output_kind,
                       load_factor, store_factor, output_length, spectrum, store_positions):
    wide = as_complex(x, input_kind)
    if spectrum != "none":
        _, m, n, _ = wide.shape
        y = np.fft.fft(wide, axis=2) if sign < 0 else np.fft.ifft(wide, axis=2) * n
        y = y * factors[0][:m * n].astype(np.complex128).reshape(1, m, n, 1)
        y = np.fft.ifft(y, axis=2) * n if sign < 0 else np.fft.fft(y, axis=2)
        if twiddle_length:
            y = y * np.exp(-sign * 2j * np.pi * (np.arange(m)[:, None] * np.arange(n)[None, :]) / twiddle_length
                           ).reshape(1, m, n, 1)
        return to_kind(y, output_kind, table.dtype)
    if load_factor != "none":
        length = math.prod(radices)
        positions = twiddle_length or length
        padded = np.zeros((wide.shape[0], positions, wide.shape[2]), np.complex128)
        padded[:, :wide.shape[1]] = wide * np.conj(factors[0][:wide.shape[1]].astype(np.complex128))[None, :, None]
        wide = padded.reshape(wide.shape[0], 1, length, wide.shape[2] * (positions // length))
    y = np.fft.fft(wide, axis=2) if sign < 0 else np.fft.ifft(wide, axis=2) * wide.shape[2]
    if twiddle_length:
        _, m, n, c = wide.shape
        block = c // (twiddle_length // (n * m))
        position = np.arange(n)[None, :, None] * m + np.arange(m)[:, None, None]
        y = y * np.exp(sign * 2j * np.pi * (position * (np.arange(c)[None, None, :] // block)) / twiddle_length)
    y = y * scale
    y = y.transpose(0, 2, 1, 3) if transpose else y
    if store_factor != "none":
        g = factors[-1][:output_length].astype(np.complex128)
        if store_positions:   # [B, 1, N, C] -> the sequence [B, P, S]
            inner = y.shape[3] * y.shape[2] // store_positions
            y = y.reshape(y.shape[0], store_positions, inner)
        y = y.reshape(y.shape[0], -1, y.shape[-1])[:, :output_length] * \
            (np.conj(g) if store_factor == "conjugate" else g)[None, :, None]
    return to_kind(y, output_kind, table.dtype)


def chirp_values(length: int, size: int, sign: int) -> np.ndarray:
    m = np.arange(length)
    b = np.zeros(size, np.complex128)
    b[:length] = np.exp(-sign * 1j * np.pi * ((m * m) % (2 * length)) / length)
    b[size - length + 1:] = b[1:length][::-1]
    return b


def chirp_infer(types, attrs):
    require(not types and attrs["dtype"] in COMPLEX_OF and attrs["size"] >= 2 * attrs["length"] - 1,
            f"library_call: fft.chirp takes no operands, a dtype f32 or f64 and a size >= 2 length - 1, got "
            f"{len(types)} operands, {attrs['dtype']}, size {attrs['size']}, length {attrs['length']}")
    return [TensorType(COMPLEX_OF[attrs["dtype"]], (attrs["size"],))]


def chirp_reference(*, length, size, sign, dtype):
    return chirp_values(length, size, sign).astype(NUMPY_DTYPES[COMPLEX_OF[dtype]])


FACTORS = ("none", "plain", "conjugate")


def pointwise_infer(types, attrs):
    name = "library_call: fft.pointwise"
    factor, length = attrs["factor"], attrs["length"]
    require(factor in FACTORS, f"{name}: factor {factor!r} is not one of {', '.join(FACTORS)}")
    require(len(types) == 1 + (factor != "none"), f"{name} with factor {factor!r} takes "
                                                  f"{1 + (factor != 'none')} operands, got {len(types)}")
    x = complex_view(name, types[0], attrs["input_kind"])
    require(x.ndim == 3, f"{name}: x {x} must be [B, L, C]")
    if attrs["input_kind"] == "hermitian":
        require(x.shape[1] == length // 2 + 1, f"{name}: a hermitian x {x} of length {length} needs "
                                               f"{length // 2 + 1} entries")
    if factor != "none":
        f = types[1]
        require(f.ndim == 1 and f.dtype == x.dtype and f.shape[0] >= length, f"{name}: factor {f} must be "
                                                                             f"{x.dtype}[>= {length}]")
    return [of_kind(TensorType(x.dtype, (x.shape[0], length, x.shape[2])), attrs["output_kind"])]


def pointwise_reference(x, *f, factor, length, scale, input_kind, output_kind):
    wide = as_complex(x, "complex" if input_kind == "hermitian" else input_kind)
    y = np.zeros((wide.shape[0], length, wide.shape[2]), np.complex128)
    kept = min(length, wide.shape[1])
    y[:, :kept] = wide[:, :kept]
    if input_kind == "hermitian":
        y[:, 0] = y[:, 0].real
        if length % 2 == 0:
            y[:, length // 2] = y[:, length // 2].real
        y[:, kept:] = np.conj(wide[:, 1:length - kept + 1][:, ::-1])
    if factor != "none":
        weights = f[0][:length].astype(np.complex128)
        y = y * (np.conj(weights) if factor == "conjugate" else weights)[None, :, None]
    part = x.dtype if x.dtype in (np.float32, np.float64) else x.real.dtype
    return to_kind(y * scale, output_kind, part)


def real_edge_infer(routine):
    def infer(types, attrs):
        name = f"library_call: fft.{routine}"
        require(len(types) == 2, f"{name} takes (x, table), got {len(types)} operands")
        x, table = types
        require(x.ndim == 2 and x.dtype in COMPLEX_PART, f"{name}: x {x} must be complex [B, L]")
        half = x.shape[1] if routine == "rfft_post" else x.shape[1] - 1
        require(table == TensorType(COMPLEX_PART[x.dtype], (2, 2 * half)),
                f"{name}: table {table} must be the twiddles of length {2 * half}")
        return [x.with_shape((x.shape[0], half + 1 if routine == "rfft_post" else half))]
    return infer


def rfft_post_reference(z, table):
    pairs = np.fft.ifft(z.astype(np.complex128), axis=1)        # the real samples' (even, odd) pairs
    return np.fft.rfft(np.ascontiguousarray(pairs).view(np.float64), axis=1).astype(z.dtype)


def irfft_pre_reference(x, table):
    # Z = 2 FFT(pairs of irfft(X)): the inverse FFT of length K scaled by 1/N then gives the pairs.
    signal = np.fft.irfft(x.astype(np.complex128), 2 * (x.shape[1] - 1), axis=1)
    return (2 * np.fft.fft(np.ascontiguousarray(signal).view(np.complex128), axis=1)).astype(x.dtype)


ROUTINES = {
    "twiddles": Routine({"length": "int", "twiddle_length": "int", "dtype": "dtype"}, twiddles_infer,
                        twiddles_reference, "cos and sin tables of a stockham kernel (libs/fft/routines.py)"),
    "stockham": Routine({"radices": "ints", "sign": "int", "scale": "float", "transpose": "bool",
                         "twiddle_length": "int", "input_kind": "str", "output_kind": "str", "load_factor": "str",
                         "store_factor": "str", "output_length": "int", "spectrum": "str", "store_positions": "int"},
                        stockham_infer, stockham_reference,
                        "a batched 1-D Stockham FFT along axis 2 of [B, M, N, C] (libs/fft/routines.py)"),
    "chirp": Routine({"length": "int", "size": "int", "sign": "int", "dtype": "dtype"}, chirp_infer, chirp_reference,
                     "Bluestein's chirp filter (libs/fft/routines.py)"),
    "pointwise": Routine({"factor": "str", "length": "int", "scale": "float", "input_kind": "str",
                          "output_kind": "str"}, pointwise_infer, pointwise_reference,
                         "y = scale x f, padded or cropped along axis 1 (libs/fft/routines.py)"),
    "rfft_post": Routine({}, real_edge_infer("rfft_post"), rfft_post_reference,
                         "a real signal's spectrum from the FFT of its sample pairs (libs/fft/routines.py)"),
    "irfft_pre": Routine({}, real_edge_infer("irfft_pre"), irfft_pre_reference,
                         "the FFT of a real signal's sample pairs from its spectrum (libs/fft/routines.py)"),
}
