"""libs/dnn's FFT convolution rewrite (libs/dnn/fft_conv.py): where it applies, the heuristic's choice, and
the rewrite forced against the reference interpreter's convolution over random problems.

Error model (fft_conv.py's docstring): with eps_t the transforms' precision (f32 for f16 and bf16 operands),
L the product of the transform lengths, C the input features and, per (n, k),
S = sum_c ||x[n, c]||_2 ||w[k, c]||_1 (x as padded: no larger than x),

    |y - conv(x, w)| <= eps_t (3 a log2(L) + 1 + 2 C) S + eps_out (2 |y| + |bias|)

where a log2(L) eps_t bounds each transform's norm-wise error (a = 2: libs/fft's own tests hold its transforms
to 2 eps log2 N against pocketfft), the three transforms' errors carried through the product (|W| <= ||w||_1
pointwise, Parseval), the GEMM's sum over the 2C stacked features, and the result's roundings to y's dtype
against the reference's (the convolution's, then the bias add's). The reference is the interpreter in f64 on
the same inputs, whose own error, taps * C * eps_64 * conv(|x|, |w|), is added. relu is 1-Lipschitz.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.nn as nn
from cdnajit.ir.core import Value, walk
from cdnajit.ir.types import NUMPY_DTYPES, TensorType
from cdnajit.libs.dnn import fft_conv, winograd
from cdnajit.passes.match_libraries import match_libraries

EPS = {"f64": 2.0 ** -52, "f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}
LETTERS = "HWD"


def rewrites(f, *args) -> list[tuple[str, str]]:
    """(library, routine) of the library calls the matcher makes of f's graph."""
    module = match_libraries(cj.jit(f).lower(*args).module)
    return [(op.attrs["library"], op.attrs["routine"]) for op in walk(module.body) if op.name == "library_call"]


def nhwc_conv(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def test_heuristic_takes_fft_for_large_windows_only():
    """An 11x11 window over 64x64 images (modelled 254 us against im2col + GEMM's 293 on gfx942; measured
    1.8x faster on the host) becomes FFT plans around a GEMM; a 7x7 window over 64 features (modelled 516
    against 212 us: the spectra's transposes; measured 2.5x slower) stays im2col + GEMM, W6's 3x3 Winograd,
    and LeNet-5's 5x5 (its ~20 kernel launches dominate) the blocked direct kernel."""
    x, w = np.zeros((8, 64, 64, 32), np.float32), np.zeros((11, 11, 32, 32), np.float32)
    calls = rewrites(nhwc_conv, x, w)
    assert ("fft", "stockham") in calls and ("blas", "strided_batched_gemm") in calls, calls
    assert not any(library == "dnn" for library, _ in calls), calls
    assert ("dnn", "im2col") in rewrites(nhwc_conv, np.zeros((8, 56, 56, 64), np.float32),
                                         np.zeros((7, 7, 64, 64), np.float32))
    assert ("dnn", "winograd_input") in rewrites(nhwc_conv, np.zeros((8, 56, 56, 64), np.float32),
                                                 np.zeros((3, 3, 64, 64), np.float32))
    assert ("dnn", "conv_fwd") in rewrites(nhwc_conv, np.zeros((64, 14, 14, 6), np.float32),
                                           np.zeros((5, 5, 6, 16), np.float32))


def test_where_it_does_not_apply_it_says_why():
    x, w = Value(TensorType("f32", (2, 9, 9, 4))), Value(TensorType("f32", (3, 3, 2, 4)))
    attrs = dict(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2), window_strides=(1, 1),
                 padding=((1, 1), (1, 1)), lhs_dilation=(1, 1), rhs_dilation=(1, 1), feature_group_count=2,
                 batch_group_count=1, preferred_element_type=None)
    y = TensorType("f32", (2, 9, 9, 4))
    assert fft_conv.refuse(x, w, attrs, y) == "a grouped convolution"
    assert fft_conv.chosen(x, w, attrs, y) == (False, "FFT does not apply: a grouped convolution")
    ungrouped = {**attrs, "feature_group_count": 1}
    w4 = Value(TensorType("f32", (3, 3, 4, 4)))
    assert "input (lhs) dilation" in fft_conv.refuse(x, w4, {**ungrouped, "lhs_dilation": (2, 1)}, y)
    assert fft_conv.refuse(Value(TensorType("i32", (2, 9, 9, 4))), w4, ungrouped, y) == "i32 operands"
    assert "1x1 window" in fft_conv.refuse(x, Value(TensorType("f32", (1, 1, 4, 4))), ungrouped, y)
    assert fft_conv.refuse(x, w4, ungrouped, y) is None


def test_transform_lengths_cover_the_span():
    """Each length is 7-smooth, at least the span the outputs read, and even on the last (real) axis."""
    for span in [1, 2, 7, 17, 62, 97, 1000, 4099, 17407]:
        for last in (False, True):
            n = fft_conv.transform_length(span, "f32", last)
            assert n >= span and (n == 1 or not last or n % 2 == 0), (span, last, n)
            rest = n
            for p in (2, 3, 5, 7):
                while rest % p == 0:
                    rest //= p
            assert rest == 1, (span, n)


def random_problem(rng):
    """A random convolution the FFT rewrite takes: 1 to 3 spatial dimensions (3 rarely: slow to compile),
    random dimension numbers, odd sizes, windows, strides, rhs dilation, padding (asymmetric, negative
    too), a dtype and an epilogue. The per-dimension lists follow w's spatial order, as lax reads them."""
    spatial = int(rng.choice([1, 2, 3], p=[0.3, 0.6, 0.1]))
    dtype = str(rng.choice(["f32", "f64", "f16", "bf16"]))
    n, c, k = (int(v) for v in rng.integers(1, [3, 9, 9]))
    window = [int(v) for v in rng.integers(1, 8 if spatial < 3 else 4, spatial)]
    if math.prod(window) == 1:
        window[0] = 2
    dilation = [int(v) for v in rng.integers(1, 3, spatial)]
    stride = [int(v) for v in rng.integers(1, 4, spatial)]
    size = [int(v) for v in rng.integers(1, 24 if spatial < 3 else 8, spatial)]
    padding = []
    for r, d, h in zip(window, dilation, size):
        lo, hi = (int(v) for v in rng.integers(-1, r + 1, 2))
        padding.append((lo, max(hi, (r - 1) * d + 1 - h - lo)))    # a nonempty output
    letters = ["N", "C", *LETTERS[:spatial]]
    specs = ["".join(rng.permutation(letters)) for _ in range(3)]
    specs[1] = specs[1].replace("N", "O").replace("C", "I")
    return dict(dtype=dtype, n=n, c=c, k=k, window=window, dilation=dilation, stride=stride, size=size,
                padding=padding, specs=specs, epilogue=str(rng.choice(["none", "bias_relu"])))


def check_problem(rng):
    p = random_problem(rng)
    dtype, specs, spatial = p["dtype"], p["specs"], len(p["size"])
    order = [d for d in specs[1] if d in LETTERS]           # w's spatial order: the lists' order
    sizes = dict(N=p["n"], C=p["c"], **dict(zip(order, p["size"])))
    window = dict(O=p["k"], I=p["c"], **dict(zip(order, p["window"])))
    x = rng.standard_normal([sizes[d] for d in specs[0]]).astype(NUMPY_DTYPES[dtype])
    w = rng.standard_normal([window[d] for d in specs[1]]).astype(NUMPY_DTYPES[dtype])
    bias = rng.standard_normal(p["k"]).astype(NUMPY_DTYPES[dtype])
    features = specs[2].index("C")

    def f(x, w, b):
        y = lax.conv_general_dilated(x, w, tuple(p["stride"]), p["padding"], rhs_dilation=tuple(p["dilation"]),
                                     dimension_numbers=tuple(specs))
        if p["epilogue"] == "bias_relu":
            y = nn.relu(y + lax.broadcast_in_dim(b, y.shape, (features,)))
        return y

    with winograd.forced("fft"):
        compiled = cj.jit(f).lower(x, w, bias).compile()
        got = np.asarray(compiled(x, w, bias)).astype(np.float64)
        optimized = compiled.as_text("optimized")
    assert "conv_general_dilated" not in optimized and '"dnn"' not in optimized, p
    assert '"stockham"' in optimized and '"strided_batched_gemm"' in optimized, p
    wide = [a.astype(np.float64) for a in (x, w, bias)]
    interpret = cj.jit(f, backend="interpret")
    want = np.asarray(interpret(*wide)).astype(np.float64)
    magnitude = np.asarray(interpret(np.abs(wide[0]), np.abs(wide[1]), np.zeros_like(wide[2])))

    # S[n, k] of the error model, in the output's logical (N, K) order, broadcast over y
    logical_x = np.transpose(wide[0], [specs[0].index(d) for d in ["N", "C", *order]])
    logical_w = np.transpose(wide[1], [specs[1].index(d) for d in ["O", "I", *order]])
    x_norms = np.sqrt((logical_x ** 2).reshape(*logical_x.shape[:2], -1).sum(-1))       # (N, C)
    w_norms = np.abs(logical_w).reshape(*logical_w.shape[:2], -1).sum(-1)               # (K, C)
    s = x_norms @ w_norms.T                                                             # (N, K)
    out_order = [specs[2].index(d) for d in ["N", "C", *order]]
    s = np.transpose(s.reshape(s.shape + (1,) * spatial), np.argsort(out_order))

    eps_t = EPS[fft_conv.TRANSFORM_DTYPE[dtype]]
    out_size = [want.shape[specs[2].index(d)] for d in order]
    span = [(o - 1) * st + (r - 1) * d + 1 for o, st, r, d in zip(out_size, p["stride"], p["window"], p["dilation"])]
    total = math.prod(fft_conv.transform_length(n, fft_conv.TRANSFORM_DTYPE[dtype], j == spatial - 1)
                      for j, n in enumerate(span))
    bias_term = np.abs(wide[2]).reshape([-1 if d == features else 1 for d in range(want.ndim)])
    tolerance = eps_t * (6 * math.log2(total) + 1 + 2 * p["c"]) * s \
        + math.prod(p["window"]) * p["c"] * EPS["f64"] * magnitude \
        + (EPS[dtype] * (2 * np.abs(want) + bias_term) if dtype != "f64" else 0)
    error = np.abs(got - want)
    assert np.all(error <= tolerance), (p, float((error - tolerance).max()))


def test_fft_conv_matches_the_interpreter():
    """One random problem (make test: 2-D f32, negative padding, a stride, a dilation, bias and relu; the
    long test draws 100)."""
    check_problem(np.random.default_rng(5))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20, 30))
def test_fft_conv_matches_the_interpreter_long(seed):
    rng = np.random.default_rng(seed)
    for _ in range(10):
        check_problem(rng)


@pytest.mark.slow
def test_fft_conv_on_gfx942_runs_its_gemm_on_mfma_without_spills():
    """W6.conv_11x11 on gfx942: every kernel of the rewrite (libs/fft's passes, the transposes, the GEMM)
    without spills, the per-frequency GEMM on MFMA at 2 waves per SIMD or more. Slow: the AMDGPU backend
    compiles ~20 kernels."""
    x, w = np.zeros((8, 64, 64, 32), np.float32), np.zeros((11, 11, 32, 32), np.float32)
    compiled = cj.jit(nhwc_conv).lower(x, w).compile()
    for kernel in compiled.kernels:
        assert kernel.target == "gfx942" and kernel.vgpr_spills == 0 and kernel.sgpr_spills == 0, kernel
    [gemm] = [kernel for kernel in compiled.kernels if kernel.source_ops[0] == "blas.strided_batched_gemm"]
    assert "_MI" in gemm.solution and gemm.occupancy >= 2, (gemm.solution, gemm.occupancy)
    assert "v_mfma" in compiled.as_text("asm")
