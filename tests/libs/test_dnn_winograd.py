"""libs/dnn's Winograd F(2x2, 3x3) and F(4x4, 3x3) rewrite (libs/dnn/winograd.py): the transforms exact in
rational arithmetic, the heuristic's choice, and forced solvers against the reference interpreter's
convolution over random problems.

Error model (winograd.py's docstring; Barabasz et al. 2020): with E the products' magnitudes carried through
the absolute transforms, E = |A^T| (sum_c (|G| |w| |G^T|) * (|B^T| |x tile| |B|)) |A|, and a = m + 2,

    |y - conv(x, w)| <= (2 eps_in + (C + 6a) eps_acc) E + eps_out (2 |y| + |bias|)

(V and U rounded to x's dtype, the GEMM's sum over C and the transforms' own arithmetic in the accumulator,
and the result's one rounding against the reference's two: the convolution's, then the bias add's). The
epilogues drawn (relu, clamp) are 1-Lipschitz, so the bound holds through them. E is computed by the
routines' references run with the absolute matrices on |x| and |w|, in f64.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.nn as nn
from cdnajit.ir.types import NUMPY_DTYPES
from cdnajit.libs.dnn import routines, winograd
from cdnajit.passes.match_libraries import match_libraries
from cdnajit.ir.core import Value, make_op, walk
from cdnajit.ir.opdef import infer_types
from cdnajit.ir.types import TensorType
from cdnajit.ir.targets import get_target

EPS = {"f64": 2.0 ** -52, "f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}
LETTERS = {"lhs": "NCHW", "rhs": "OIHW"}


def correlate_1d(d, g):
    return [sum(d[i + t] * g[t] for t in range(3)) for i in range(len(d) - 2)]


@pytest.mark.parametrize("m", [2, 4])
def test_transforms_are_exact(m):
    """A^T ((G g) * (B^T d)) = the valid correlation of d with g, exactly in rationals, for random integers
    (the 2-D transform is this one along each dimension)."""
    bt, g_matrix, at = winograd.TRANSFORMS[m]
    rng = np.random.default_rng(m)
    for _ in range(20):
        d = [Fraction(int(v)) for v in rng.integers(-9, 10, m + 2)]
        g = [Fraction(int(v)) for v in rng.integers(-9, 10, 3)]
        u = [sum(Fraction(c) * v for c, v in zip(row, g)) for row in g_matrix]
        v = [sum(Fraction(c) * e for c, e in zip(row, d)) for row in bt]
        y = [sum(Fraction(c) * p * q for c, p, q in zip(row, u, v)) for row in at]
        assert y == correlate_1d(d, g)


def test_error_growth_factors():
    """The model's factor (winograd.py): 8^2 for F(2x2), 48^2 for F(4x4)."""
    assert winograd.growth(2) == 64 and winograd.growth(4) == 2304


def rewrites(f, *args) -> list[tuple[str, str]]:
    """(library, routine) of the library calls the matcher makes of f's graph."""
    module = match_libraries(cj.jit(f).lower(*args).module)
    return [(op.attrs["library"], op.attrs["routine"]) for op in walk(module.body) if op.name == "library_call"]


def conv(spec=("NHWC", "HWIO", "NHWC"), padding="SAME"):
    return lambda x, w: lax.conv_general_dilated(x, w, (1, 1), padding, dimension_numbers=spec)


def test_heuristic_picks_winograd_where_its_model_wins():
    """W6's convolution in f32 takes F(4x4) (modelled ~3x faster than im2col + GEMM on gfx942); bf16, which
    the error model leaves out, and a strided convolution stay im2col + GEMM."""
    x, w = np.zeros((8, 56, 56, 64), np.float32), np.zeros((3, 3, 64, 64), np.float32)
    calls = rewrites(conv(), x, w)
    assert ("dnn", "winograd_input") in calls and ("blas", "strided_batched_gemm") in calls
    times = {name: winograd.modelled_time(name, 8, 64, 64, (56, 56), (56, 56), "f32", get_target())
             for name in ("im2col", "winograd_f2", "winograd_f4")}
    assert min(times, key=times.get) == "winograd_f4"
    assert ("dnn", "im2col") in rewrites(conv(), x.astype(NUMPY_DTYPES["bf16"]), w.astype(NUMPY_DTYPES["bf16"]))
    strided = lambda x, w: lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    assert ("dnn", "winograd_input") not in rewrites(strided, x, w)


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_w6_in_f16_runs_mfma_at_two_waves_per_simd_on_gfx942(layout):
    """The issue's gfx942 criteria for W6's convolution in f16 (Winograd F(2x2, 3x3)): the batched GEMM of its
    main loop uses MFMA, no kernel spills, each runs at least 2 waves per SIMD, and the report prints the
    GEMM's modelled efficiency. Slow: the AMDGPU backend compiles the four kernels."""
    dims = ("NHWC", "HWIO", "NHWC") if layout == "NHWC" else ("NCHW", "OIHW", "NCHW")
    x = np.zeros((8, 56, 56, 64) if layout == "NHWC" else (8, 64, 56, 56), np.float16)
    w = np.zeros((3, 3, 64, 64) if layout == "NHWC" else (64, 64, 3, 3), np.float16)
    compiled = cj.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dims)) \
        .lower(x, w).compile()
    kernels = {kernel.source_ops[0]: kernel for kernel in compiled.kernels}
    assert set(kernels) == {"dnn.winograd_input", "dnn.winograd_filter", "blas.strided_batched_gemm",
                            "dnn.winograd_output"}
    for kernel in kernels.values():
        assert kernel.target == "gfx942" and kernel.vgpr_spills == 0 and kernel.sgpr_spills == 0, kernel
        assert kernel.occupancy >= 2, (kernel.name, kernel.occupancy, kernel.occupancy_limiter, kernel.vgpr_count)
    gemm = kernels["blas.strided_batched_gemm"]
    assert "_MI32x32x8_" in gemm.solution or "_MI16x16x16_" in gemm.solution, gemm.solution
    assert "v_mfma" in compiled.as_text("asm")      # the transforms are vector code: the GEMM's
    assert "% of peak" in compiled.report()


def test_forcing_names_the_rewrites():
    with pytest.raises(ValueError, match="no convolution rewrite 'winograd_f6'"):
        with winograd.forced("winograd_f6"):
            pass
    x, w = np.zeros((1, 6, 6, 3), np.float32), np.zeros((3, 3, 3, 4), np.float32)
    with winograd.forced("im2col"):
        assert ("dnn", "im2col") in rewrites(conv(), x, w)
    with winograd.forced("winograd_f2"):
        assert ("dnn", "winograd_output") in rewrites(conv(), x, w)


def absolute(matrices):
    return tuple([[abs(v) for v in row] for row in matrix] for matrix in matrices)


def magnitude(x, w, attrs, m, monkeypatch):
    """E of the error model (the docstring), in f64, in the output's logical (N, K, H, W) order."""
    lhs_spec, rhs_spec = attrs["lhs_spec"], attrs["rhs_spec"]
    with monkeypatch.context() as patch:
        patch.setitem(winograd.TRANSFORMS, m, absolute(winograd.TRANSFORMS[m]))
        v = routines.winograd_input_reference(np.abs(x).astype(np.float64), tile=m, padding=attrs["padding"],
                                              lhs_spec=lhs_spec, row_window=0)
        u = routines.winograd_filter_reference(np.abs(w).astype(np.float64), tile=m, rhs_spec=rhs_spec)
        out = [x.shape[lhs_spec[2 + j]] + sum(attrs["padding"][j]) - 2 for j in range(2)]
        return routines.winograd_output_reference(v @ u, tile=m, out_spec=(0, 1, 2, 3), out_size=out, result_dtype="f64",
                                                  epilogue="none", clamp_min=None, clamp_max=None)


def random_problem(rng):
    """A random 3x3 stride-1 convolution: random dimension numbers, odd sizes, padding (asymmetric,
    negative too), a dtype, an epilogue, a tile size."""
    dtype = str(rng.choice(["f32", "f64", "f16", "bf16"]))
    n, c, k = (int(v) for v in rng.integers(1, [3, 20, 20]))
    h, w = (int(v) for v in rng.integers(1, 14, 2))
    specs = ["".join(rng.permutation(list(LETTERS[role]))) for role in ("lhs", "rhs", "lhs")]
    spatial = [dict(H=h, W=w)[letter] for letter in specs[1] if letter in "HW"]   # lax's order: w's
    padding = [tuple(int(p) for p in rng.integers(-1, 3, 2)) for _ in range(2)]
    padding = [(lo, max(hi, 3 - size - lo)) for (lo, hi), size in zip(padding, spatial)]   # a nonempty output
    return dtype, (n, c, h, w, k), padding, specs, str(rng.choice(["none", "bias", "bias_relu", "clamp"])), \
        int(rng.choice([2, 4]))


def arrays(rng, dtype, sizes, specs):
    n, c, h, w, k = sizes
    x = rng.standard_normal([dict(N=n, C=c, H=h, W=w)[d] for d in specs[0]])
    kernel = rng.standard_normal([dict(O=k, I=c, H=3, W=3)[d] for d in specs[1]])
    bias = rng.standard_normal(k)
    return [a.astype(NUMPY_DTYPES[dtype]) for a in (x, kernel, bias)]


def check_problem(rng, monkeypatch):
    check(rng, monkeypatch, *random_problem(rng))


def check(rng, monkeypatch, dtype, sizes, padding, specs, epilogue, m):
    x, w, bias = arrays(rng, dtype, sizes, specs)
    features = specs[2].index("C")

    def f(x, w, b):
        y = lax.conv_general_dilated(x, w, (1, 1), padding, dimension_numbers=tuple(specs))
        if epilogue.startswith("bias"):
            y = y + lax.broadcast_in_dim(b, y.shape, (features,))
        if epilogue.endswith("relu"):
            y = nn.relu(y)
        return lax.clamp(np.array(-0.5, x.dtype), y, np.array(1.5, x.dtype)) if epilogue == "clamp" else y

    with winograd.forced(f"winograd_f{m}"):
        compiled = cj.jit(f).lower(x, w, bias).compile()
        got = np.asarray(compiled(x, w, bias)).astype(np.float64)
        optimized = compiled.as_text("optimized")    # a cached program's passes run under the forcing too
    output = next(line for line in optimized.splitlines() if 'routine = "winograd_output"' in line)
    assert f"tile = {m}" in output and f'epilogue = "{epilogue}"' in output     # the bias and activation absorbed
    assert "conv_general_dilated" not in optimized and "im2col" not in optimized
    want = np.asarray(cj.jit(f, backend="interpret")(x, w, bias)).astype(np.float64)
    spatial = [letter for letter in specs[1] if letter in "HW"]     # lax orders the spatial dimensions as w does
    lhs_spec = tuple(specs[0].index(letter) for letter in ["N", "C", *spatial])
    rhs_spec = tuple(specs[1].index(letter) for letter in ["O", "I", *spatial])
    out_spec = tuple(specs[2].index(letter) for letter in ["N", "C", *spatial])
    bound = magnitude(x, w, dict(lhs_spec=lhs_spec, rhs_spec=rhs_spec, padding=padding), m, monkeypatch)
    bound = np.transpose(bound, np.argsort(out_spec))
    acc = "f64" if dtype == "f64" else "f32"
    c, a = sizes[1], m + 2
    bias_term = np.abs(bias.astype(np.float64)).reshape([-1 if d == features else 1 for d in range(4)])
    tolerance = (2 * EPS[dtype] + (c + 6 * a) * EPS[acc]) * bound + EPS[dtype] * (2 * np.abs(want) + bias_term)
    error = np.abs(got - want)
    assert np.all(error <= tolerance), (dtype, sizes, padding, specs, epilogue, m, float((error - tolerance).max()))


def test_winograd_matches_the_interpreter(monkeypatch):
    """One random problem (make test: bf16, F(2x2), bias and relu, negative padding)."""
    check_problem(np.random.default_rng(2), monkeypatch)


# NCHW repeats NHWC's edges through the other transforms' layout (about 9 s): in `make test-all` only.
@pytest.mark.parametrize("layout", ["NHWC", pytest.param("NCHW", marks=pytest.mark.slow)])
def test_winograd_feature_and_tile_edges(layout, monkeypatch):
    """The transforms' work-items take 4 consecutive features of a tile, their workgroups 64 features of 4
    tiles, the last ones moved back: C and K below 4 (one feature each), not multiples of 4, over 64 and not a
    multiple of it (the last workgroup's features clamped), tile counts not a multiple of 4, N = 1; in NCHW,
    rows read as windows (row_window) at both of x's edges, and rows narrower than a window."""
    specs = [layout, "HWIO" if layout == "NHWC" else "OIHW", layout]
    rng = np.random.default_rng(30)
    for dtype, (n, c, h, w, k), m in [("f32", (1, 3, 5, 7, 2), 4), ("f32", (2, 5, 9, 6, 6), 2),
                                      ("f64", (1, 70, 6, 5, 67), 4), ("f16", (1, 7, 4, 11, 9), 2),
                                      ("f32", (1, 3, 9, 13, 5), 4)]:
        check(rng, monkeypatch, dtype, (n, c, h, w, k), [(1, 1), (1, 1)], specs, "bias_relu", m)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 11))
def test_winograd_matches_the_interpreter_long(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    for _ in range(12):
        check_problem(rng, monkeypatch)


def winograd_call(routine, types, **attrs):
    attrs = dict(library="dnn", routine=routine, solution="", **attrs)
    return make_op("library_call", [Value(t) for t in types], attrs, infer_types("library_call", types, attrs))


def test_one_kernel_text_per_solution():
    """Sizes and padding are scalar parameters: two problems of one tile size, layout, dtype and epilogue
    compile one kernel of each transform."""
    texts = []
    for (n, h, w, c, k), padding in [((8, 56, 56, 64, 64), ((1, 1), (1, 1))), ((3, 9, 7, 5, 11), ((2, 0), (-1, 1)))]:
        x, kernel = TensorType("f32", (n, h, w, c)), TensorType("f32", (3, 3, c, k))
        v = winograd_call("winograd_input", [x], tile=4, padding=padding, lhs_spec=(0, 3, 1, 2), row_window=0)
        u = winograd_call("winograd_filter", [kernel], tile=4, rhs_spec=(3, 2, 0, 1))
        out = [h + sum(padding[0]) - 2, w + sum(padding[1]) - 2]
        product = TensorType("f32", (36, v.result.type.shape[1], k))
        y = winograd_call("winograd_output", [product, TensorType("f32", (k,))], tile=4, out_spec=(0, 3, 1, 2),
                          out_size=tuple(out), result_dtype="f32", epilogue="bias_clamp", clamp_min=0.0, clamp_max=float(n))
        texts.append([kernel_of(op, "k").code_text() for kernel_of, op in
                      [(winograd.input_kernel, v), (winograd.filter_kernel, u), (winograd.output_kernel, y)]])
    assert texts[0] == texts[1]
