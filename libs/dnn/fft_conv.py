"""The FFT convolution solver (MIOpen's ConvFFT), as a graph rewrite of an ungrouped convolution without
input dilation: by the correlation theorem, with x padded as the convolution pads it and each spatial
dimension j transformed at a length L_j no shorter than the span the outputs read,

    X[n, c, f] = RFFT(x padded, zero up to L)                  fft ops: libs/fft's plans
    W[k, c, f] = RFFT(w, rhs-dilated, zero up to L)
    Z[f, n, k] = sum_c X[n, c, f] conj(W[k, c, f])              one real GEMM per frequency f of the
                                                                stacked parts: libs/blas's batched GEMM
    y[n, k, o] = IRFFT(Z)[n, k, o * stride]                     an fft op, then a strided slice

over the L_1 ... (L_d / 2 + 1) frequencies f. The circular correlation IRFFT(X conj(W)) equals the
convolution's at every position o <= P - E (P the span read, E the dilated window's): o + t never
wraps past L >= P. Each L_j is a 7-smooth length at least the span (even on the last axis), up to
the next power of two, that libs/fft transforms by a plan of stockham passes (not through Bluestein's
longer one) in the least work: points times butterfly passes.
f16 and bf16 operands are transformed in f32 (libs/fft has no half-precision transforms) and the
result rounded once.

Where it wins: the convolution's R*S*C*K multiply-adds per output become C*K complex ones per
frequency, 8 real flops each at about L^2 / 2 frequencies for O^2 outputs: for W6's 3x3 about 1/4 of
the direct flops (as Winograd F(4x4), whose GEMM runs real at the matrix unit's rate), for 11x11 over
64x64 about 1/40; but the spectra cross between the
FFTs' frequency-last order and the GEMM's frequency-first order twice (X's stacking, Z's assembly),
transposing kernels that read one side strided. The model (`modelled_time`) counts each kernel's flops
and bytes as winograd.py's does, those strided reads at STRIDED_READ times their bytes, plus ~20
launches; it agrees with the report's per-kernel model within 10% on 5x5 to 11x11 windows and long 1-D
ones. The choice is made at match time against im2col + GEMM and Winograd's (matcher.py), or forced
by name (winograd.forced("fft")). Measured on the host (f32, NHWC, SAME, 2-core host under load):
8x64x64x32 by 11x11 -> 32 runs in 0.50 s against im2col + GEMM's 0.90 s, and 8x16384x16 by 63 taps
-> 16 in 0.58 s against 0.91 s (both chosen); 8x56x56x64 by 7x7 -> 64 takes 0.70 s against 0.28 s
(the model keeps im2col + GEMM: 516 us against 212 us on gfx942).

Error model (the FFT's norm-wise error, Higham "Accuracy and Stability of Numerical Algorithms" 24.1):
a transform of L_tot = prod L_j points errs by at most a eps log2(L_tot) times its result's 2-norm; X's,
W's and the inverse's errors, the products' rounding and the GEMM's sum over 2C stacked features
combine, per (n, k), to at most eps (3 a log2(L_tot) + 1 + 2C) sum_c ||x[n, c]||_2 ||w[k, c]||_1 in
every output (|W| <= ||w||_1 pointwise, Parseval for the rest): a bound relative to the operands'
norms, not to each output's own magnitude, as an FFT convolution's error is. The test takes a = 2
(libs/fft's transforms are held to 2 eps log2 N).
"""
from __future__ import annotations

import math

import numpy as np

from ...ir.core import Value
from ...ir.targets import Target, get_target
from ...ir.types import NUMPY_DTYPES
from ..blas.matcher import SUPPORTED
from ..fft.plan import plan_for, smooth_lengths
from . import winograd
from .winograd import kernel_time

# Operand dtypes -> the real dtype the transforms compute in.
TRANSFORM_DTYPE = {"f64": "f64", "f32": "f32", "f16": "f32", "bf16": "f32"}
# Shares of the target's vector peak the model credits: libs/blas's complex GEMM (c64 has no MFMA) and
# the FFT kernels' butterflies.
GEMM_EFFICIENCY, TRANSFORM_EFFICIENCY = 0.7, 0.25
# A transposing kernel's strided side moves a 64-byte segment per 4-byte element it uses (as the
# report's per-kernel model counts such reads: 12-16x their bytes).
STRIDED_READ = 16
# A kernel dispatch (runtime/perf_model.py's figure), and the kernels each rewrite launches: here, per
# transform of d axes, d stockham passes, their d twiddle tables and the real spectrum's edge kernel,
# three transforms, plus the two pads, the two stacked GEMM operands, the GEMM, Z's assembly and the crop.
LAUNCH_SECONDS = 2e-6
LAUNCHES = {"fft": lambda spatial: 3 * (2 * spatial + 1) + 7, "im2col": lambda spatial: 2,
            "winograd_f2": lambda spatial: 4, "winograd_f4": lambda spatial: 4}


def spans(lhs: Value, rhs: Value, attrs: dict, out_size) -> list[int]:
    """Per spatial dimension, the stretch of padded x the outputs read: (O - 1) * stride + dilated window."""
    window = [rhs.type.shape[d] for d in attrs["rhs_spec"][2:]]
    return [(o - 1) * s + (r - 1) * d + 1
            for o, s, r, d in zip(out_size, attrs["window_strides"], window, attrs["rhs_dilation"])]


def transform_length(span: int, part: str, last: bool) -> int | None:
    """The 7-smooth length >= span, up to the next power of two (even on the last axis, whose real
    transform runs as half-length complex on sample pairs), that libs/fft transforms without Bluestein's
    detour in the fewest butterfly passes times points (64 = 16 x 4 before 63 = 7 x 3 x 3); None if none."""
    if span == 1:
        return 1
    plans = {n: plan_for(n // 2 if last else n, part) for n in smooth_lengths(span, 1 << (span - 1).bit_length())
             if n % 2 == 0 or not last}
    work = {n: n * sum(len(node.radices) for node in plan.nodes) for n, plan in plans.items()
            if plan is not None and plan.kind != "bluestein"}
    return min(work, key=lambda n: (work[n], n)) if work else None


def lengths(lhs: Value, rhs: Value, attrs: dict, out_size) -> list[int] | None:
    part = TRANSFORM_DTYPE[lhs.type.dtype]
    found = [transform_length(s, part, j == len(out_size) - 1) for j, s in enumerate(spans(lhs, rhs, attrs, out_size))]
    return None if None in found else found


def refuse(lhs: Value, rhs: Value, attrs: dict, result_type) -> str | None:
    """None when the FFT rewrite applies, else why not."""
    dtype = lhs.type.dtype
    spatial = lhs.type.ndim - 2
    if attrs["feature_group_count"] != 1 or attrs["batch_group_count"] != 1:
        return "a grouped convolution"
    if any(d != 1 for d in attrs["lhs_dilation"]):
        return "input (lhs) dilation: a transposed convolution (its phases run as stride-1 convolutions)"
    if not 1 <= spatial <= 3:
        return f"{spatial} spatial dimensions (the FFT ops transform 1 to 3)"
    if dtype not in TRANSFORM_DTYPE or (attrs["preferred_element_type"] or dtype) not in SUPPORTED[dtype]:
        return f"{dtype} operands"
    if lhs.type.size == 0 or rhs.type.size == 0 or result_type.size == 0:
        return "empty operands or output"
    window = [rhs.type.shape[d] for d in attrs["rhs_spec"][2:]]
    if math.prod(window) == 1:
        return "a 1x1 window (a GEMM of x as it lies)"
    if lengths(lhs, rhs, attrs, out_sizes(result_type, attrs)) is None:
        return "no one-kernel FFT length covers the span the outputs read"
    return None


def out_sizes(result_type, attrs) -> list[int]:
    return [result_type.shape[d] for d in attrs["out_spec"][2:]]


def modelled_time(n: int, c: int, k: int, in_size, out_size, window, stride, fft_lengths, dtype: str,
                  target: Target) -> float:
    """Seconds the rewrite's kernels take on `target` in the model: each kernel max(flops at its share of
    the peak, its reads and writes at HBM bandwidth), complex elements twice the transform dtype's. The
    kernels that move the spectra between frequency-last (the FFTs') and frequency-first (the GEMM's)
    orders read one side strided: STRIDED_READ times its bytes."""
    part = TRANSFORM_DTYPE[dtype]
    item = NUMPY_DTYPES[part].itemsize
    total, spatial = math.prod(fft_lengths), len(fft_lengths)
    frequencies = total // fft_lengths[-1] * (fft_lengths[-1] // 2 + 1)
    vector = target.peak(part) * TRANSFORM_EFFICIENCY
    x, w, y = n * c * math.prod(in_size), k * c * math.prod(window), n * k * math.prod(out_size)
    spectra = lambda count: count * frequencies * 2          # reals in `count` spectra
    padded = lambda count: count * total

    def transform(count):
        """A real transform of `count` signals: a pass per axis and the real spectrum's edge kernel, each
        reading and writing about a spectrum per signal, the butterflies half of 5 N log2 N."""
        flops = count * 2.5 * total * max(math.log2(total), 1)
        return kernel_time(flops, (spatial + 1) * (padded(count) + spectra(count)), item, vector, target)

    def reordered(count, copies=1):
        return kernel_time(0, spectra(count) * (STRIDED_READ + copies), item, vector, target)

    return (kernel_time(0, STRIDED_READ * x + padded(n * c), item, vector, target)     # x padded (and transposed)
            + kernel_time(0, w + padded(k * c), item, vector, target)
            + transform(n * c) + transform(k * c)
            + reordered(n * c) + reordered(k * c, copies=4)              # [Xr Xi], [[Wr, -Wi], [Wi, Wr]]
            + kernel_time(8 * frequencies * n * c * k, spectra(n * c + 2 * c * k + n * k), item,
                          target.peak(part) * GEMM_EFFICIENCY, target)
            + reordered(n * k) + transform(n * k)                           # Z frequency-last, its inverse
            + kernel_time(0, padded(n * k) / math.prod(stride) + y, item, vector, target))   # the crop


def problem_time(lhs: Value, rhs: Value, attrs: dict, result_type, target: Target) -> float:
    spec, rhs_spec = attrs["lhs_spec"], attrs["rhs_spec"]
    out = out_sizes(result_type, attrs)
    return modelled_time(lhs.type.shape[spec[0]], lhs.type.shape[spec[1]], rhs.type.shape[rhs_spec[0]],
                         [lhs.type.shape[d] for d in spec[2:]], out, [rhs.type.shape[d] for d in rhs_spec[2:]],
                         attrs["window_strides"], lengths(lhs, rhs, attrs, out), lhs.type.dtype, target)


def chosen(lhs: Value, rhs: Value, attrs: dict, result_type) -> tuple[bool, str]:
    """(whether the convolution takes the FFT rewrite, why): where it applies, when forced, else (no other
    rewrite forced) when its modelled time on the default target beats im2col + GEMM's and Winograd's,
    each with its kernels' launches (which keep small convolutions, LeNet-5's, off its ~20 kernels)."""
    reason = refuse(lhs, rhs, attrs, result_type)
    if reason is not None:
        return False, f"FFT does not apply: {reason}"
    if winograd.FORCED["rewrite"] is not None:
        return winograd.FORCED["rewrite"] == "fft", f"forced {winograd.FORCED['rewrite']}"
    target, spec, rhs_spec = get_target(), attrs["lhs_spec"], attrs["rhs_spec"]
    sizes = (lhs.type.shape[spec[0]], lhs.type.shape[spec[1]], rhs.type.shape[rhs_spec[0]],
             [lhs.type.shape[d] for d in spec[2:]], out_sizes(result_type, attrs))
    taps = math.prod(rhs.type.shape[d] for d in rhs_spec[2:])
    times = {"fft": problem_time(lhs, rhs, attrs, result_type, target),
             "im2col": winograd.im2col_time(*sizes, taps, lhs.type.dtype, target),
             **winograd.candidate_times(lhs, rhs, attrs)}
    times = {name: t + LAUNCHES[name](len(sizes[3])) * LAUNCH_SECONDS for name, t in times.items()}
    return min(times, key=times.get) == "fft", ", ".join(f"{name} {t * 1e6:.3g} us" for name, t in times.items())


# ---- the rewrite ---

def spectrum_product(m, x_spectrum: Value, w_spectrum: Value, spatial: int) -> Value:
    """Z[n, k, f...] = sum_c X[n, c, f] conj(W[k, c, f]) as one real batched GEMM per frequency (the
    library call runs after complex values became real pairs, and libs/blas's kernels are real):

        [Xr Xi] (f, N, 2C)  @  [[Wr, -Wi], [Wi, Wr]] (f, 2C, 2K)  =  [Zr Zi] (f, N, 2K)

    Zr = Xr Wr + Xi Wi, Zi = Xi Wr - Xr Wi; the operands' stacking and Z's assembly are fusions."""
    frequencies = tuple(range(2, 2 + spatial))
    frequency_major = lambda v: m.op("transpose", v, permutation=(*frequencies, 0, 1))    # (f..., rows, C)
    parts = lambda v: [frequency_major(m.op(name, v)) for name in ("real", "imag")]
    xr, xi = parts(x_spectrum)
    wr, wi = (m.op("transpose", v, permutation=(*range(spatial), spatial + 1, spatial)) for v in parts(w_spectrum))
    last, contracted = spatial + 1, spatial      # the stacked operands' last and contracted dimensions
    x_stacked = m.op("concatenate", xr, xi, dimension=last)                                      # (f..., N, 2C)
    w_stacked = m.op("concatenate", m.op("concatenate", wr, m.op("neg", wi), dimension=last),
                     m.op("concatenate", wi, wr, dimension=last), dimension=contracted)          # (f..., 2C, 2K)
    batch = tuple(range(spatial))
    product = m.op("dot_general", x_stacked, w_stacked, lhs_contracting=(last,), rhs_contracting=(contracted,),
                   lhs_batch=batch, rhs_batch=batch, preferred_element_type=None)                # (f..., N, 2K)
    k = w_spectrum.type.shape[0]
    half = lambda start: m.op("slice", product, start_indices=(0,) * spatial + (0, start),
                              limit_indices=product.type.shape[:-1] + (start + k,), strides=(1,) * (spatial + 2))
    z = m.op("complex", half(0), half(k))
    return m.op("transpose", z, permutation=(spatial, spatial + 1, *range(spatial)))        # (N, K, f...)


def fft_conv(m, lhs: Value, rhs: Value, attrs: dict, result_type) -> Value:
    lhs_spec, rhs_spec, out_spec = attrs["lhs_spec"], attrs["rhs_spec"], attrs["out_spec"]
    spatial = lhs.type.ndim - 2
    out = out_sizes(result_type, attrs)
    fft_lengths = lengths(lhs, rhs, attrs, out)
    part = TRANSFORM_DTYPE[lhs.type.dtype]
    zero = m.op("constant", value=np.zeros((), NUMPY_DTYPES[part]))
    batch_first = lambda v, spec: v if tuple(spec) == tuple(range(v.type.ndim)) else \
        m.op("transpose", v, permutation=tuple(spec))
    in_part = lambda v: v if v.type.dtype == part else m.op("convert", v, dtype=part)

    # x as (N, C, spatial...), padded as the convolution pads it, its high side to the transform length
    x = in_part(batch_first(lhs, lhs_spec))
    low = [lo for lo, _ in attrs["padding"]]
    high = [n - x.type.shape[2 + j] - lo for j, (n, lo) in enumerate(zip(fft_lengths, low))]
    x = m.op("pad", x, zero, low=(0, 0, *low), high=(0, 0, *high), interior=(0,) * (spatial + 2))
    # w as (K, C, spatial...), its taps rhs-dilated, zero up to the transform length
    w = in_part(batch_first(rhs, rhs_spec))
    dilation = attrs["rhs_dilation"]
    span = [(r - 1) * d + 1 for r, d in zip(w.type.shape[2:], dilation)]
    w = m.op("pad", w, zero, low=(0,) * (spatial + 2), high=(0, 0, *(n - s for n, s in zip(fft_lengths, span))),
             interior=(0, 0, *(d - 1 for d in dilation)))

    x_spectrum = m.op("fft", x, fft_type="RFFT", fft_length=tuple(fft_lengths))      # (N, C, f...)
    w_spectrum = m.op("fft", w, fft_type="RFFT", fft_length=tuple(fft_lengths))      # (K, C, f...)
    z = m.op("fft", spectrum_product(m, x_spectrum, w_spectrum, spatial), fft_type="IRFFT",
             fft_length=tuple(fft_lengths))                                             # (N, K, L...)
    y = m.op("slice", z, start_indices=(0,) * (spatial + 2),
             limit_indices=(*z.type.shape[:2], *((o - 1) * s + 1 for o, s in zip(out, attrs["window_strides"]))),
             strides=(1, 1, *attrs["window_strides"]))
    if y.type.dtype != result_type.dtype:
        y = m.op("convert", y, dtype=result_type.dtype)
    permutation = tuple(int(d) for d in np.argsort(out_spec))
    return y if permutation == tuple(range(spatial + 2)) else m.op("transpose", y, permutation=permutation)

