"""libs/dnn: every convolution solver, forced by name, against the routine's reference (the graph's
conv_general_dilated reference, then the bias and activation) over random configurations: layouts
(any permutation of the dimension numbers), 1-D to 3-D, odd sizes, strides, padding (negative too),
lhs and rhs dilation, feature and batch groups, epilogues, and dtypes f32/f64/f16/bf16 (and i32 for
the direct solvers). Then through `cj.jit`: the matcher makes the call, the report names the solver
and why, and bad input is named.

Error model: each output sums C*R*S products accumulated in the accumulator dtype (f32 for
f16/bf16) in another order than the reference's; the difference is at most (terms) ulps of the
accumulator times the sum of |products|, then one rounding to the result dtype and the
activation's few ulps (the clamp adds none: it is 1-Lipschitz and its bounds are exact in every dtype
drawn). Tolerance: 4 * terms * eps(acc) * sum|x*w| + 4 eps(result) * |y| + tiny.
"""
import math

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.nn as nn
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.codegen import amdgpu
from cdnajit.errors import TracingTypeError
from cdnajit.ir.core import Value, make_op, walk
from cdnajit.ir.opdef import infer_types
from cdnajit.ir.ops.linalg import conv_general_dilated
from cdnajit.ir.targets import get_target
from cdnajit.ir.types import NUMPY_DTYPES, TensorType
from cdnajit.libs.blas.heuristic import ranked
from cdnajit.libs.dnn import im2col, implicit_gemm, matcher, subpixel, winograd
from cdnajit.libs.dnn import kernels as dnn_kernels
from cdnajit.libs.dnn.problem import ConvProblem
from cdnajit.libs.dnn.routines import ROUTINES
from cdnajit.libs.dnn.solvers import SOLVERS, applicable, pick, solver_named
from cdnajit.passes.match_libraries import match_libraries
from cdnajit.runtime.launch import compile_kernel
from cdnajit.runtime.occupancy import occupancy

GFX942 = get_target("gfx942")
FLOAT_DTYPES = ("f32", "f64", "f16", "bf16")
EPILOGUES = ("none", "bias", "relu", "bias_relu", "bias_gelu_tanh", "bias_silu", "sigmoid", "bias_tanh", "gelu_erf",
             "clamp", "bias_clamp")
# The clamp epilogue's bounds drawn (exact in every float dtype; None: unbounded on that side).
CLAMP_BOUNDS = ((0.0, 6.0), (-0.5, 0.75), (None, 0.25), (-1.0, None), (0.5, 0.5))
PLAIN = {"epilogue": "none", "clamp_min": None, "clamp_max": None}  # conv_fwd's attributes of no epilogue


def conv_call(x_shape, w_shape, dtype, epilogue="none", routine="conv_fwd", clamp=(None, None), **conv):
    """A lone `library_call dnn.conv_fwd` (or a backward routine, without an epilogue), as the matcher builds one."""
    fwd_attrs = {"epilogue": epilogue, "clamp_min": clamp[0], "clamp_max": clamp[1]}
    attrs = dict(library="dnn", routine=routine, solution="", preferred_element_type=None, **conv,
                 **(fwd_attrs if routine == "conv_fwd" else {}))
    types = [TensorType(dtype, x_shape), TensorType(dtype, w_shape)]
    if routine == "conv_fwd" and epilogue.startswith("bias"):
        types.append(TensorType(dtype, (w_shape[conv["rhs_spec"][0]],)))
    result = infer_types("library_call", types, attrs)
    return make_op("library_call", [Value(t) for t in types], attrs, result)


def random_conv(rng, dtype, spatial=None, depthwise=False, one_by_one=False, transposed=False, routine="conv_fwd",
                epilogue=None):
    """A random convolution call: shapes, layouts, strides, padding, dilations, groups, epilogue. A
    `transposed` one has window strides 1 and lhs dilation 2 or 3 (a transposed convolution's).
    A backward routine's: ungrouped, no epilogue; conv_bwd_data's window strides 1 (lhs dilation 1 to 3),
    conv_bwd_weights's lhs dilation 1 (a window up to 9 wide, as dy's positions are)."""
    spatial = spatial or int(rng.choice([1, 2, 2, 3]))
    ndim = spatial + 2
    lhs_spec, rhs_spec, out_spec = (tuple(int(d) for d in rng.permutation(ndim)) for _ in range(3))
    if one_by_one:  # NHWC-like x and y: the 1x1 GEMM's layouts
        lhs_spec = out_spec = (0, ndim - 1) + tuple(range(1, ndim - 1))
    groups = batch_groups = 1
    if depthwise:
        c_per_group, groups = 1, int(rng.integers(1, 6))
    elif not one_by_one and rng.random() < 0.3:
        groups = int(rng.integers(2, 4))
        c_per_group = int(rng.integers(1, 4))
    else:
        c_per_group = int(rng.integers(1, 7))
    if routine != "conv_fwd":
        groups, c_per_group = 1, int(rng.integers(1, 7))
    if not one_by_one and not depthwise and groups == 1 and rng.random() < 0.15 and routine == "conv_fwd":
        batch_groups = int(rng.integers(2, 4))
    k = (groups if groups > 1 else batch_groups) * int(rng.integers(1, 4 if groups > 1 else 20))
    n = batch_groups * int(rng.integers(1, 4))
    window = [1] * spatial if one_by_one else [int(rng.integers(1, 4)) for _ in range(spatial)]
    in_size = [int(rng.integers(1, 9 if spatial < 3 else 6)) for _ in range(spatial)]
    if one_by_one:
        strides, padding, lhs_dil, rhs_dil = [1] * spatial, [(0, 0)] * spatial, [1] * spatial, [1] * spatial
    else:
        strides = [int(rng.integers(1, 3)) for _ in range(spatial)]
        lhs_dil = [int(rng.choice([1, 1, 2])) for _ in range(spatial)]
        if transposed:
            strides, lhs_dil = [1] * spatial, [int(rng.choice([1, 2, 2, 3])) for _ in range(spatial)]
            lhs_dil[0] = max(lhs_dil[0], 2)
        rhs_dil = [int(rng.choice([1, 1, 2])) for _ in range(spatial)]
        if routine == "conv_bwd_data":
            strides, lhs_dil = [1] * spatial, [int(rng.choice([1, 2, 3])) for _ in range(spatial)]
        if routine == "conv_bwd_weights":
            lhs_dil = [1] * spatial
            window = [int(rng.integers(1, 10 if spatial < 3 else 5)) for _ in range(spatial)]
            in_size = [size + (w - 1) * r for size, w, r in zip(in_size, window, rhs_dil)]
        padding = [(int(rng.integers(-1, 3)), int(rng.integers(0, 3))) for _ in range(spatial)]
        # Keep every output size >= 1: the padded input must hold the dilated window.
        for j in range(spatial):
            dilated_in = (in_size[j] - 1) * lhs_dil[j] + 1
            span = (window[j] - 1) * rhs_dil[j] + 1
            lo, hi = padding[j]
            if dilated_in + lo + hi < span:
                padding[j] = (lo, hi + span - (dilated_in + lo + hi))
    x_shape = [0] * ndim
    for d, size in zip(lhs_spec, [n, c_per_group * groups] + in_size):
        x_shape[d] = size
    w_shape = [0] * ndim
    for d, size in zip(rhs_spec, [k, c_per_group] + window):
        w_shape[d] = size
    if epilogue is None:
        epilogue = str(rng.choice(EPILOGUES)) if dtype in FLOAT_DTYPES else str(rng.choice(["none", "bias", "relu"]))
    clamp = CLAMP_BOUNDS[rng.integers(len(CLAMP_BOUNDS))] if epilogue.endswith("clamp") else (None, None)
    return conv_call(tuple(x_shape), tuple(w_shape), dtype, epilogue, routine, clamp, window_strides=tuple(strides),
                     padding=tuple(padding), lhs_dilation=tuple(lhs_dil), rhs_dilation=tuple(rhs_dil),
                     lhs_spec=lhs_spec, rhs_spec=rhs_spec, out_spec=out_spec, feature_group_count=groups,
                     batch_group_count=batch_groups)


def random_values(rng, dtype, shape):
    if dtype.startswith("i"):
        return rng.integers(-4, 5, shape).astype(NUMPY_DTYPES[dtype])
    return rng.standard_normal(shape).astype(NUMPY_DTYPES[dtype])


def assert_conv_close(got, op, arrays):
    """Within the module docstring's error model of the reference."""
    attrs = {k: v for k, v in op.attrs.items() if k not in ("library", "routine", "solution")}
    want = ROUTINES[op.attrs["routine"]].reference(*arrays, **attrs)
    dtype = op.result.type.dtype
    if dtype.startswith("i"):
        np.testing.assert_array_equal(got, want)
        return
    problem = ConvProblem.from_op(op)
    terms = problem.c * math.prod(problem.window)
    conv_attrs = {k: v for k, v in attrs.items() if k not in ("epilogue", "clamp_min", "clamp_max")}
    w = np.flip(arrays[1], axis=tuple(attrs["rhs_spec"][2:])) if problem.flip else arrays[1]
    magnitude = magnitude_sums(arrays[0], w, conv_attrs)
    acc_eps = float(ml_dtypes.finfo(NUMPY_DTYPES[problem.acc_dtype]).eps)
    eps = float(ml_dtypes.finfo(NUMPY_DTYPES[dtype]).eps)
    want64, got64 = want.astype(np.float64), got.astype(np.float64)
    tolerance = 4 * terms * acc_eps * magnitude + 4 * eps * np.abs(want64) + 4 * eps
    bad = ~(np.abs(got64 - want64) <= tolerance)
    assert not bad.any(), (f"{problem.describe()}: {bad.sum()} of {bad.size} outside the error model, worst "
                           f"{np.abs(got64 - want64)[bad].max()} (got {got64[bad][:4]}, want {want64[bad][:4]})")


def magnitude_sums(x, w, conv_attrs):
    """sum |x * w| per output: the conv reference of the magnitudes, in f64."""
    return np.abs(conv_general_dilated(np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64)),
                                       **{**conv_attrs, "preferred_element_type": None}))


def run_solver(name, op, rng):
    solver = solver_named(name, ConvProblem.from_op(op))
    return run_kernel(solver.emit(op, ConvProblem.from_op(op), "conv", GFX942), op, rng)


def run_kernel(kernel, op, rng):
    """`kernel` (computing call `op`) on random operands, against the reference."""
    arrays = [random_values(rng, v.type.dtype, v.type.shape) for v in op.operands]
    y = np.full(op.result.type.shape, -7, NUMPY_DTYPES[op.result.type.dtype])
    compile_kernel(kernel)(*arrays, y)
    assert_conv_close(y, op, arrays)
    return kernel


def run_random(name, seed, count, **shape_options):
    """`count` random problems of one dtype on solver `name`; problems of one variant share one kernel text."""
    rng = np.random.default_rng(seed)
    dtypes = FLOAT_DTYPES + (("i32",) if name in ("direct", "depthwise") else ())
    dtype = dtypes[seed % len(dtypes)]
    texts = set()
    for _ in range(count):
        op = random_conv(rng, dtype, **shape_options)
        while SOLVERS[name].refuse(ConvProblem.from_op(op)) is not None:
            op = random_conv(rng, dtype, **shape_options)
        texts.add(run_solver(name, op, rng).code_text())
    return texts


SOLVER_OPTIONS = {"direct": {}, "implicit_gemm": {}, "direct_blocked": {}, "depthwise": {"depthwise": True},
                  "gemm_1x1": {"one_by_one": True}}


# gemm_1x1's and implicit_gemm's problems pick BLAS solutions whose kernels take seconds each to compile:
# two problems here (implicit_gemm's layouts and dtypes: test_implicit_gemm_crosses_tile_edges_*).
BLAS_SOLVERS = ("gemm_1x1", "implicit_gemm")


@pytest.mark.parametrize("name", SOLVER_OPTIONS)
@pytest.mark.parametrize("seed", range(1))
def test_random_convolutions_match_reference(name, seed):
    run_random(name, seed, 2 if name in BLAS_SOLVERS else 6, **SOLVER_OPTIONS[name])


@pytest.mark.parametrize("name,epilogue", [("direct", "clamp"), ("implicit_gemm", "bias_clamp")])
def test_clamp_epilogue_matches_reference(name, epilogue):
    """The clamp epilogue (bounds drawn from CLAMP_BOUNDS) on random problems; the bounds are kernel
    parameters, so two bounds give one kernel text."""
    run_random(name, 7, 2 if name in BLAS_SOLVERS else 3, epilogue=epilogue)  # seed 7: f16 direct, bf16 implicit_gemm
    conv = dict(window_strides=(1,), padding=((1, 1),), lhs_dilation=(1,), rhs_dilation=(1,), lhs_spec=(0, 1, 2),
                rhs_spec=(0, 1, 2), out_spec=(0, 1, 2), feature_group_count=1, batch_group_count=1)
    ops = [conv_call((2, 3, 5), (4, 3, 3), "f32", epilogue, clamp=bounds, **conv) for bounds in CLAMP_BOUNDS[:2]]
    texts = {solver_named(name, ConvProblem.from_op(op)).emit(op, ConvProblem.from_op(op), "conv", GFX942).code_text()
             for op in ops}
    assert len(texts) == 1


@pytest.mark.slow
@pytest.mark.parametrize("name", SOLVER_OPTIONS)
@pytest.mark.parametrize("seed", range(1, 12))
def test_random_convolutions_match_reference_long(name, seed):
    run_random(name, seed, 25, **SOLVER_OPTIONS[name])


# The backward routines' solvers (the forward kernels reading the routine's operands: dy and w reversed,
# or x and dy), each forced by name over random backward problems of its routine.
BACKWARD = [("conv_bwd_data", "direct"), ("conv_bwd_data", "implicit_gemm"), ("conv_bwd_data", "depthwise"),
            ("conv_bwd_weights", "direct"), ("conv_bwd_weights", "implicit_gemm"), ("conv_bwd_weights", "depthwise")]


@pytest.mark.parametrize("routine,name", BACKWARD[:2] + BACKWARD[3:5])
def test_random_backward_convolutions_match_reference(routine, name):
    run_random(name, 0, 2 if name in BLAS_SOLVERS else 3, routine=routine)


@pytest.mark.slow
@pytest.mark.parametrize("routine,name", BACKWARD + [("conv_bwd_data", "gemm_1x1")])
@pytest.mark.parametrize("seed", range(1, 12))
def test_random_backward_convolutions_match_reference_long(routine, name, seed):
    options = {"routine": routine, "one_by_one": name == "gemm_1x1"}
    run_random(name, seed, 3 if name == "gemm_1x1" else 20, **options)


# ---- implicit_gemm: libs/blas's GEMM kernel with A gathered from x --------------------------------

LAYOUTS = {"NHWC": ((0, 3, 1, 2), (3, 2, 0, 1)), "NCHW": ((0, 1, 2, 3), (0, 1, 2, 3)),
           "NWC": ((0, 2, 1), (2, 1, 0)), "NDHWC": ((0, 4, 1, 2, 3), (4, 3, 0, 1, 2))}


def layout_call(layout, dtype, n, c, size, k, window, epilogue="none", groups=1, stride=1, pad=(1, 1), lhs_dilation=1,
                rhs_dilation=1):
    """A conv_fwd call of `layout` (x and y alike; w HWIO with x NHWC-like, else OIHW), square sizes."""
    lhs_spec, rhs_spec = LAYOUTS[layout]
    spatial = len(lhs_spec) - 2
    x_shape, w_shape = [0] * len(lhs_spec), [0] * len(lhs_spec)
    for d, s in zip(lhs_spec, [n, c * groups] + [size] * spatial):
        x_shape[d] = s
    for d, s in zip(rhs_spec, [k, c] + [window] * spatial):
        w_shape[d] = s
    return conv_call(tuple(x_shape), tuple(w_shape), dtype, epilogue, window_strides=(stride,) * spatial,
                     padding=(pad,) * spatial, lhs_dilation=(lhs_dilation,) * spatial,
                     rhs_dilation=(rhs_dilation,) * spatial, lhs_spec=lhs_spec, rhs_spec=rhs_spec, out_spec=lhs_spec,
                     feature_group_count=groups, batch_group_count=1)


# Rows (N * output positions) and output features crossing the macro tiles, depths (C * taps) crossing
# DepthU, in each dtype and layout: vector reads of x where its features are innermost and C a multiple
# of the read width (gathered_k_runs: the case's True, run on the best-modelled solution of GRVW above 1,
# the heuristic picking GRVW 1 for some of these small problems), one element at a time elsewhere (odd C,
# NCHW: the heuristic's pick).
IMPLICIT_GEMM_CASES = {
    "nhwc-f16-vectors": (dict(layout="NHWC", dtype="f16", n=2, c=16, size=9, k=20, window=3, epilogue="bias_relu"),
                         True),
    "nchw-f32-odd-c-strided": (dict(layout="NCHW", dtype="f32", n=3, c=3, size=11, k=33, window=3, stride=2,
                                    pad=(2, 1), rhs_dilation=2), False),
    "nhwc-bf16-groups": (dict(layout="NHWC", dtype="bf16", n=2, c=8, size=7, k=6, window=3, groups=3, stride=2,
                              epilogue="bias_clamp"), True),
    "nwc-f64-lhs-dilated": (dict(layout="NWC", dtype="f64", n=2, c=5, size=13, k=17, window=3, lhs_dilation=2,
                                 epilogue="bias_tanh"), False),
    "ndhwc-f32-vectors": (dict(layout="NDHWC", dtype="f32", n=1, c=4, size=5, k=9, window=2, pad=(0, 1),
                               epilogue="relu"), True),
}


@pytest.mark.parametrize("case", [case if i < 2 else pytest.param(case, marks=pytest.mark.slow)
                                  for i, case in enumerate(IMPLICIT_GEMM_CASES)])
def test_implicit_gemm_crosses_tile_edges_in_each_layout_and_dtype(case):
    options, vectors = IMPLICIT_GEMM_CASES[case]
    op = layout_call(**options)
    problem = ConvProblem.from_op(op)
    assert solver_named("implicit_gemm", problem)
    solutions = [e.solution for e in ranked(implicit_gemm.gemm_problem(problem), GFX942)]
    solution = next(s for s in solutions if implicit_gemm.vector_runs(problem, s)) if vectors else \
        implicit_gemm.selection(problem, GFX942).solution
    assert implicit_gemm.vector_runs(problem, solution) == vectors, solution.name
    run_kernel(implicit_gemm.solution_kernel(op, problem, solution, "conv"), op, np.random.default_rng(len(case)))


def test_implicit_gemm_reports_its_blas_solution_and_model():
    """The report (the heuristic's pick) names libs/blas's solution and its modelled figures; the solver's
    efficiency is the BLAS model's (no constant): a larger batch of the same conv fills more of the GPU."""
    small, large = (ConvProblem.from_op(layout_call("NHWC", "f16", n, 64, 28, 64, 3)) for n in (1, 8))
    name, why = dnn_kernels.explain(layout_call("NHWC", "f16", 8, 64, 28, 64, 3), GFX942)
    assert name == "implicit_gemm" and implicit_gemm.selection(large, GFX942).solution.name in why
    assert "of peak" in why and "GEMM 6272x64x576 NN f16->f16" in why
    efficiency = SOLVERS["implicit_gemm"].efficiency
    assert 0 < efficiency(small, GFX942) <= efficiency(large, GFX942)


@pytest.mark.slow
def test_gfx942_implicit_gemm_uses_mfma_in_its_main_loop_without_spills():
    """W6's 3x3 conv in f16 NHWC (8x56x56x64 -> 64, bias and relu) on the implicit-GEMM solver: libs/blas's
    MFMA solution, x's features read 8 at a time, at least 2 waves per SIMD and no spills."""
    op = layout_call("NHWC", "f16", 8, 64, 56, 64, 3, epilogue="bias_relu")
    problem = ConvProblem.from_op(op)
    assert pick(problem, GFX942)[0].name == "implicit_gemm"
    chosen = implicit_gemm.selection(problem, GFX942)
    assert chosen.solution.kind == "mfma" and implicit_gemm.vector_runs(problem, chosen.solution)
    kernel = SOLVERS["implicit_gemm"].emit(op, problem, "igemm", GFX942)
    resources = amdgpu.resources(kernel, GFX942)
    assert resources.vgpr_spill_count == 0 and resources.sgpr_spill_count == 0
    waves = occupancy(GFX942, vgprs=resources.allocated_vgprs, sgprs=resources.sgpr_count,
                      lds_bytes=resources.lds_bytes, workgroup_items=kernel.workgroup_items).waves_per_simd
    assert waves >= 2
    assert any("v_mfma_f32_" in body for body in amdgpu.loop_bodies(amdgpu.assembly(kernel, GFX942)))


def test_a_solver_compiles_per_solution_not_per_problem():
    """Problems that differ only in sizes (batch, spatial, features, strides, padding) share a kernel text:
    the direct solver's, and implicit_gemm's where they pick the same GEMM solution and variant (libs/blas's
    kernels are per solution and variant: here GRVW 1, the problems' C not a multiple of 4)."""
    def call(n, h, c, k, stride, pad):
        return conv_call((n, h, h + 1, c), (3, 3, c, k), "f32", "bias_relu", window_strides=(stride, stride),
                         padding=((pad, pad), (pad, 0)), lhs_dilation=(1, 1), rhs_dilation=(1, 1),
                         lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2),
                         feature_group_count=1, batch_group_count=1)
    for name, ops in (("direct", (call(1, 5, 3, 4, 1, 1), call(4, 9, 7, 17, 2, 0))),
                      ("implicit_gemm", (call(2, 11, 3, 7, 1, 1), call(4, 9, 7, 11, 2, 0)))):
        texts = {SOLVERS[name].emit(op, ConvProblem.from_op(op), "k", GFX942).code_text() for op in ops}
        assert len(texts) == 1, name
    solutions = {implicit_gemm.selection(ConvProblem.from_op(op), GFX942).solution for op in ops}
    assert len(solutions) == 1


def test_a_solver_forced_that_does_not_apply_says_why():
    op = conv_call((1, 5, 5, 3), (3, 3, 3, 4), "f32", window_strides=(1, 1), padding=((1, 1), (1, 1)),
                   lhs_dilation=(1, 1), rhs_dilation=(1, 1), lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1),
                   out_spec=(0, 3, 1, 2), feature_group_count=1, batch_group_count=1)
    problem = ConvProblem.from_op(op)
    with pytest.raises(NotImplementedError, match="solver 'gemm_1x1' does not apply .*the window is 3x3, not 1x1"):
        solver_named("gemm_1x1", problem)
    with pytest.raises(NotImplementedError, match="depthwise needs 1"):
        solver_named("depthwise", problem)
    with pytest.raises(NotImplementedError, match="no convolution solver 'winograd'"):
        solver_named("winograd", problem)
    assert [s.name for s in applicable(problem)] == ["implicit_gemm", "direct_blocked", "direct"]
    assert problem.key() == "1-3-5x5-4-3x3-1_1x1_1-1x1-1x1-l1x1-g1-bg1-NHWC-HWIO-NHWC-f32-F"


def test_jit_matches_conv_bias_activation_and_reports_the_solver():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 9, 8, 6)).astype(np.float32)
    w1 = rng.standard_normal((3, 3, 6, 6)).astype(np.float32)
    w2 = rng.standard_normal((1, 1, 6, 5)).astype(np.float32)
    b1, b2 = rng.standard_normal(6).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    dn = ("NHWC", "HWIO", "NHWC")

    def block(x, w1, b1, w2, b2):
        y = nn.relu(lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dn) + b1)
        return nn.gelu(lax.conv_general_dilated(y, w2, (1, 1), "VALID", dimension_numbers=dn) + b2)
    with winograd.forced("im2col"):     # (the heuristic's choice, Winograd, is test_dnn_winograd.py's)
        compiled = cj.jit(block).lower(x, w1, b1, w2, b2).compile()
    text = compiled.as_text("optimized")
    # The 3x3 conv: im2col + a BLAS GEMM whose epilogue took the bias and relu; the 1x1: dnn.conv_fwd.
    assert text.count('routine = "conv_fwd"') == 1 and text.count('routine = "im2col"') == 1
    assert 'library = "blas"' in text and 'epilogue = "bias_relu"' in text and 'epilogue = "bias_gelu_tanh"' in text
    report = compiled.report()
    assert "gemm_1x1 (heuristic" in report and "im2col (the patches of im2col + GEMM" in report
    want = cj.jit(block, backend="interpret")(x, w1, b1, w2, b2)
    np.testing.assert_allclose(compiled(x, w1, b1, w2, b2), want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("seed", range(3))
def test_im2col_gemm_matches_the_interpreter(seed, monkeypatch):
    """The im2col + GEMM rewrite (ungrouped float convolutions, windows above 1x1 and no larger than the
    output: not a weight gradient's form) over random layouts,
    strides, padding and dilations, compiled against the reference interpreter of the same program.
    Seed 1 forces im2col's wide variant with runs of all the features per work-item, the others its narrow
    one (few features)."""
    rng = np.random.default_rng(100 + seed)
    dtype = ("f32", "f64", "bf16")[seed]
    op = random_conv(rng, dtype)
    while op.attrs["feature_group_count"] != 1 or op.attrs["batch_group_count"] != 1 \
            or math.prod(ConvProblem.from_op(op).window) == 1 \
            or matcher.is_weight_gradient(op.operands[1], op.attrs, op.result.type):
        op = random_conv(rng, dtype)
    monkeypatch.setattr(im2col, "NARROW", 0 if seed == 1 else 10**9)
    monkeypatch.setattr(im2col, "VEC", ConvProblem.from_op(op).c)
    a = op.attrs
    arrays = [random_values(rng, dtype, v.type.shape) for v in op.operands[:2]]

    def f(x, w):
        return lax.conv_general_dilated(x, w, a["window_strides"], a["padding"], a["lhs_dilation"], a["rhs_dilation"],
                                        (a["lhs_spec"], a["rhs_spec"], a["out_spec"]))
    with winograd.forced("im2col"):
        compiled = cj.jit(f).lower(*arrays).compile()
        assert 'routine = "im2col"' in compiled.as_text("optimized")
    got = compiled(*arrays)
    y = np.asarray(got)
    plain = make_op("library_call", list(op.operands[:2]), {**op.attrs, **PLAIN},
                    infer_types("library_call", [v.type for v in op.operands[:2]], {**op.attrs, **PLAIN}))
    assert_conv_close(y, plain, arrays)


def jit_conv(op, arrays):
    """The program lax.conv_general_dilated(x, w) of call `op`'s attributes, compiled, and its optimized text."""
    a = op.attrs

    def f(x, w):
        return lax.conv_general_dilated(x, w, a["window_strides"], a["padding"], a["lhs_dilation"], a["rhs_dilation"],
                                        (a["lhs_spec"], a["rhs_spec"], a["out_spec"]),
                                        feature_group_count=a["feature_group_count"],
                                        batch_group_count=a["batch_group_count"])
    compiled = cj.jit(f).lower(*arrays).compile()
    return np.asarray(compiled(*arrays)), compiled.as_text("optimized")


def run_sub_pixel(seed, count):
    """`count` random transposed convolutions (any layout, groups, padding, rhs dilation) through cj.jit:
    each must run as its phases' stride-1 convolutions (no lhs dilation left), within the error model."""
    rng = np.random.default_rng(300 + seed)
    dtype = FLOAT_DTYPES[seed % len(FLOAT_DTYPES)]
    for _ in range(count):
        op = random_conv(rng, dtype, transposed=True)
        while subpixel.refuse(*op.operands[:2], op.attrs, op.result.type) is not None:
            op = random_conv(rng, dtype, transposed=True)
        plain = make_op("library_call", list(op.operands[:2]), {**op.attrs, **PLAIN},
                        infer_types("library_call", [v.type for v in op.operands[:2]], {**op.attrs, **PLAIN}))
        arrays = [random_values(rng, dtype, v.type.shape) for v in op.operands[:2]]
        y, text = jit_conv(op, arrays)
        assert "lhs_dilation = [1" in text and not any(f"lhs_dilation = [{d}" in text for d in (2, 3))
        assert_conv_close(y, plain, arrays)


def test_transposed_convolution_runs_by_phases():
    run_sub_pixel(0, 1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 9))
def test_transposed_convolution_runs_by_phases_long(seed):
    run_sub_pixel(seed, 12)


def gradient_program(window, stride):
    """cj.grad of an NHWC convolution's sum of squares, for x and w; the optimized module's dnn calls."""
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(x, w):
        return cj.numpy.sum(lax.conv_general_dilated(x, w, (stride, stride), "SAME", dimension_numbers=dn) ** 2)
    rng = np.random.default_rng(window)
    x = rng.standard_normal((2, 7, 6, 5)).astype(np.float32)
    w = rng.standard_normal((window, window, 5, 3)).astype(np.float32)
    compiled = cj.jit(cj.grad(loss, argnums=(0, 1))).lower(x, w).compile()
    calls = [op for op in walk(compiled.executable.optimized.body) if op.name == "library_call"]
    same = [max((-(-size // stride) - 1) * stride + window - size, 0) for size in x.shape[1:3]]
    forward = ConvProblem.from_op(conv_call(x.shape, w.shape, "f32", window_strides=(stride, stride),
                                            padding=tuple((t // 2, t - t // 2) for t in same), lhs_dilation=(1, 1),
                                            rhs_dilation=(1, 1), lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1),
                                            out_spec=(0, 3, 1, 2), feature_group_count=1, batch_group_count=1))
    want = cj.jit(cj.grad(loss, argnums=(0, 1)), backend="interpret")(x, w)
    for got, expected in zip(compiled(x, w), want):  # sums of 2*45 products of f32 values of size ~10
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-3)
    return calls, forward


def test_gradient_of_a_convolution_runs_the_backward_routines(monkeypatch):
    """A 1x1 convolution's data gradient is dnn.conv_bwd_data (the rev of w absorbed; the 1x1 GEMM of
    libs/blas); its weight gradient im2col + GEMM, or dnn.conv_bwd_weights (which implicit GEMM and direct
    serve) where the patches would exceed im2col's memory limit; both routines name the forward problem in
    MIOpen's key, with their direction."""
    calls, _ = gradient_program(1, 1)
    assert {op.attrs["routine"] for op in calls if op.attrs["library"] == "dnn"} == {"conv_fwd", "conv_bwd_data",
                                                                                       "im2col"}
    monkeypatch.setattr(im2col, "MAX_PATCH_BYTES", 0)
    calls, forward = gradient_program(1, 1)
    by_routine = {op.attrs["routine"]: op for op in calls if op.attrs["library"] == "dnn"}
    assert set(by_routine) == {"conv_fwd", "conv_bwd_data", "conv_bwd_weights"}
    data, weights = (ConvProblem.from_op(by_routine[r]) for r in ("conv_bwd_data", "conv_bwd_weights"))
    assert data.key() == forward.key()[:-1] + "B" and weights.key() == forward.key()[:-1] + "W"
    assert data.describe().startswith("backward data of N2 C5 7x6 -> K3 window 1x1")
    assert pick(data, GFX942)[0].name == "gemm_1x1"
    # Its GEMM, 5x3x84, is one 16x16 workgroup, which libs/blas's model gives one CU's rate: the direct
    # kernel (modelled at the GPU's) is picked.
    assert [s.name for s in applicable(weights)] == ["implicit_gemm", "direct"]
    assert pick(weights, GFX942)[0].name == "direct"


@pytest.mark.slow
@pytest.mark.parametrize("stride", [1, 2])
def test_gradient_of_a_3x3_convolution_runs_the_backward_routines(stride, monkeypatch):
    """Where im2col takes no patches (and Winograd is not chosen), the 3x3 weight gradient is
    dnn.conv_bwd_weights (its key the forward problem's, JAX's SAME padding recovered) and at stride 1 the
    data gradient dnn.conv_bwd_data (at stride 2, the sub-pixel phases)."""
    monkeypatch.setattr(im2col, "MAX_PATCH_BYTES", 0)
    with winograd.forced("im2col"):
        calls, forward = gradient_program(3, stride)
    weights = [op for op in calls if op.attrs["routine"] == "conv_bwd_weights"]
    assert len(weights) == 1 and ConvProblem.from_op(weights[0]).key() == forward.key()[:-1] + "W"
    assert (stride == 1) == any(op.attrs["routine"] == "conv_bwd_data" for op in calls)


def test_small_convolutions_run_the_blocked_direct_solver():
    """LeNet-5's convolutions (5x5, 1 -> 6 and 6 -> 16 features; few features times taps) are dnn.conv_fwd calls
    on the blocked direct solver, the bias and relu absorbed, matching the interpreter (the file's error model,
    C*R*S = 150 terms of |x*w| ~ 1: 2e-5 relative to the O(10) sums). A wider layer stays im2col + GEMM, as
    does any under winograd.forced("im2col"). Two problems of a block of 8 features share one kernel text."""
    rng = np.random.default_rng(5)
    dn = ("NHWC", "HWIO", "NHWC")
    x = rng.standard_normal((3, 14, 13, 6)).astype(np.float32)
    w, b = rng.standard_normal((5, 5, 6, 16)).astype(np.float32), rng.standard_normal(16).astype(np.float32)

    def layer(x, w, b):
        return nn.relu(lax.conv_general_dilated(x, w, (1, 1), ((1, 0), (2, 1)), dimension_numbers=dn) + b)
    compiled = cj.jit(layer).lower(x, w, b).compile()
    text = compiled.as_text("optimized")
    assert 'routine = "conv_fwd", solution = "direct_blocked"' in text and 'epilogue = "bias_relu"' in text
    assert "direct_blocked (heuristic" in compiled.report()
    want = cj.jit(layer, backend="interpret")(x, w, b)
    np.testing.assert_allclose(compiled(x, w, b), want, rtol=2e-5, atol=2e-5 * 150)
    def routines(*args):
        module = match_libraries(cj.jit(layer).lower(*args).module)
        return [op.attrs["routine"] for op in walk(module.body) if op.name == "library_call"]
    assert "im2col" in routines(x, np.zeros((5, 5, 6, 40), np.float32), np.zeros(40, np.float32))
    with winograd.forced("im2col"):
        assert "im2col" in routines(x, w, b)
    conv = dict(lhs_dilation=(1, 1), rhs_dilation=(1, 1), lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1),
                out_spec=(0, 3, 1, 2), feature_group_count=1, batch_group_count=1)
    ops = [conv_call((2, 9, 8, 3), (5, 5, 3, 16), "f32", "bias_relu", window_strides=(1, 1), padding=((0, 0), (0, 0)),
                     **conv),
           conv_call((1, 7, 11, 2), (3, 2, 2, 9), "f32", "bias_relu", window_strides=(2, 1), padding=((1, 1), (0, 2)),
                     **conv)]
    texts = {SOLVERS["direct_blocked"].emit(op, ConvProblem.from_op(op), "k", GFX942).code_text() for op in ops}
    assert len(texts) == 1


def test_nchw_bias_written_with_new_axes_is_absorbed():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 7, 7)).astype(np.float32)
    w = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)

    def f(x, w, b):  # depthwise, NCHW: a dnn.conv_fwd call (the depthwise solver)
        return nn.sigmoid(lax.conv_general_dilated(x, w, (2, 2), ((1, 0), (0, 1)), feature_group_count=4)
                          + b[:, None, None])
    compiled = cj.jit(f).lower(x, w, b).compile()
    assert 'epilogue = "bias_sigmoid"' in compiled.as_text("optimized")
    np.testing.assert_allclose(compiled(x, w, b), cj.jit(f, backend="interpret")(x, w, b), rtol=1e-5, atol=1e-6)


# The clamp forms a user writes after a conv + bias, each absorbed as the epilogue's clamp with its bounds.
CLAMP_FORMS = {
    "relu6": (nn.relu6, (0.0, 6.0)),
    "clip": (lambda y: cnp.clip(y, -0.5, 0.75), (-0.5, 0.75)),
    "lax.clamp": (lambda y: lax.clamp(-1.0, y, 0.25), (-1.0, 0.25)),
    "hard_tanh": (nn.hard_tanh, (-1.0, 1.0)),
    "min then max": (lambda y: cnp.maximum(cnp.minimum(y, 0.5), -0.25), (-0.25, 0.5)),
}


def clamped_depthwise(form, dtype="f32", shape=(2, 4, 7, 6), seed=5):
    """A depthwise NCHW conv + bias + the clamp `form` (a dnn.conv_fwd: im2col + GEMM takes ungrouped convs),
    compiled, with arguments and the interpreter's answer."""
    rng = np.random.default_rng(seed)
    np_dtype = NUMPY_DTYPES[dtype]
    x = (2 * rng.standard_normal(shape)).astype(np_dtype)
    w = rng.standard_normal((shape[1], 1, 3, 3)).astype(np_dtype)
    b = rng.standard_normal(shape[1]).astype(np_dtype)

    def f(x, w, b):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=shape[1]) + b[:, None, None]
        return CLAMP_FORMS[form][0](y)
    return cj.jit(f).lower(x, w, b).compile(), (x, w, b), cj.jit(f, backend="interpret")(x, w, b)


def assert_depthwise_close(got, want, x, w, dtype):
    """Within the module docstring's error model (9 terms per output)."""
    eps = float(ml_dtypes.finfo(NUMPY_DTYPES[dtype]).eps)
    acc_eps = float(ml_dtypes.finfo(np.float64 if dtype == "f64" else np.float32).eps)
    spatial = dict(window_strides=(1, 1), padding=((1, 1), (1, 1)), lhs_dilation=(1, 1), rhs_dilation=(1, 1),
                   lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3),
                   feature_group_count=x.shape[1], batch_group_count=1, preferred_element_type=None)
    want64, got64 = want.astype(np.float64), got.astype(np.float64)
    tolerance = 4 * 9 * acc_eps * magnitude_sums(x, w, spatial) + 4 * eps * np.abs(want64) + 4 * eps
    assert (np.abs(got64 - want64) <= tolerance).all(), np.abs(got64 - want64).max()


@pytest.mark.parametrize("form", CLAMP_FORMS)
def test_conv_bias_clamp_is_the_epilogue(form):
    """relu6, clip, lax.clamp, hard_tanh and min/max after conv + bias: one dnn.conv_fwd whose epilogue is
    bias_clamp with the bounds (in the IR and the report), no elementwise op after it, and the values
    of the interpreter within the error model."""
    compiled, args, want = clamped_depthwise(form)
    text = compiled.as_text("optimized")
    low, high = CLAMP_FORMS[form][1]
    assert text.count("library_call") == 1 and 'epilogue = "bias_clamp"' in text, text
    assert f"clamp_min = {low}" in text and f"clamp_max = {high}" in text, text
    assert " max(" not in text and " min(" not in text and "select" not in text, text
    assert f"bias_clamp [{low}, {high}]" in compiled.report()
    got = compiled(*args)
    assert got.min() >= low and got.max() <= high
    assert_depthwise_close(got, want, *args[:2], "f32")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["f64", "f16", "bf16"])
@pytest.mark.parametrize("form", CLAMP_FORMS)
def test_conv_bias_clamp_is_the_epilogue_long(form, dtype):
    """The forms in the other float dtypes, odd sizes, against the interpreter within the error model."""
    compiled, args, want = clamped_depthwise(form, dtype, shape=(3, 5, 9, 11), seed=6)
    assert 'epilogue = "bias_clamp"' in compiled.as_text("optimized")
    assert_depthwise_close(compiled(*args), want, *args[:2], dtype)


@pytest.mark.parametrize("window,features", [(1, 4), pytest.param(3, 40, marks=pytest.mark.slow)])
def test_clamps_after_a_gemm_conv_are_the_gemm_epilogue(window, features):
    """A 1x1 NHWC conv runs libs/blas's GEMM (gemm_1x1), a 3x3 one with 40 features im2col + GEMM; relu6, a
    clamp (0, 5) after relu and a clip after either are the GEMM's epilogue with their bounds (no fusion
    left; the 1x1 conv's relu6 is the clamp epilogue of dnn.conv_fwd, im2col's GEMM's the relu6 epilogue of
    libs/blas), with the interpreter's values (a clamp adds no rounding: the GEMM's own tolerance)."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((2, 5, 5, features)) * 4).astype(np.float32)
    w = rng.standard_normal((window, window, features, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)

    def conv(x, w, b):
        return lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")) + b
    relu6 = ('"bias_clamp"', "clamp_min = 0.0, clamp_max = 6.0") if window == 1 else ('"bias_relu6"', "")
    for f, (epilogue, bounds) in [(lambda *a: nn.relu6(conv(*a)), relu6),
                                  (lambda *a: cnp.minimum(nn.relu(conv(*a)), 5.0),
                                   ('"bias_clamp"', "clamp_min = 0.0, clamp_max = 5.0")),
                                  (lambda *a: cnp.clip(conv(*a), -1.0, 0.5),
                                   ('"bias_clamp"', "clamp_min = -1.0, clamp_max = 0.5"))]:
        compiled = cj.jit(f).lower(x, w, b).compile()
        text = compiled.as_text("optimized")
        assert f"epilogue = {epilogue}" in text and bounds in text and " min(" not in text and " max(" not in text, text
        assert ("gemm_1x1" in compiled.report()) == (window == 1)
        want = cj.jit(f, backend="interpret")(x, w, b)
        np.testing.assert_allclose(compiled(x, w, b), want, rtol=1e-5, atol=1e-5 * window * window * features)


def test_mismatched_channels_name_the_shapes_and_dimension_numbers():
    x = np.zeros((1, 5, 5, 3), np.float32)
    w = np.zeros((3, 3, 4, 8), np.float32)
    with pytest.raises(TracingTypeError, match=r"lhs f32\[1,5,5,3\] has 3 input features \(dimension 3 of lhs_spec "
                                               r"\[0, 3, 1, 2\]\) but rhs f32\[3,3,4,8\] expects 4 \(dimension 2 of "
                                               r"rhs_spec \[3, 2, 0, 1\]\) x feature_group_count 1"):
        cj.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                     dimension_numbers=("NHWC", "HWIO", "NHWC")))(x, w)
