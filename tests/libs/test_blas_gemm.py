"""The GEMM library's kernels (libs/blas/generator.py) run on the host against a float64 / int64
reference, over random problems: sizes 1, primes and multiples of the tiles, both layouts of A and
B, batches, every dtype the library takes (f64, f32, f16, bf16 accumulated in f32, i8 in i32),
alpha, beta with C, bias and every activation, on MFMA and VALU solutions drawn from the pool.
Then, through `cj.jit`: the library kernel runs and its report names the solution and why; the
accumulation type asked for with preferred_element_type; M, N or K of 0; bad input; the tuning
database (`cj.libs.blas.tune`); and the gfx942 kernel the heuristic picks for f16 4096^3.

Tolerance (`assert_gemm_close`): the kernel sums K products in the accumulation dtype and applies the
epilogue there, rounding once to the result dtype. The standard bound of a K-term sum is
K eps_acc sum|a||b|; alpha, C and bias add three roundings (K + 3); the activations used have a
slope of at most 1.13 (gelu), and the math library's own error is within 4 ulp of the accumulation
dtype; the final rounding adds eps_result |D| (half of it, doubled for the activation's ulps).
Integers are exact (i32 wraps as int32 does; the values here cannot overflow)."""
import math
import re

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.codegen import amdgpu
from cdnajit.codegen.host import StoragePlan, compile_object
from cdnajit.ir.targets import get_target
from cdnajit.ir.types import NUMPY_DTYPES
from cdnajit.libs.blas.generator import Edges, GemmProblem, gemm_call, gemm_kernel
from cdnajit.libs.blas.heuristic import pick, select, tile_count
from cdnajit.libs.blas.solutions import ELEMENT_BYTES, StagingSlot, solution_by_name, solution_pool, staging_slots
from cdnajit.libs.blas.tuning import DATABASE_NAME
from cdnajit.runtime.blas_tune import MARGIN, head_to_head_winner
from cdnajit.runtime import launch
from cdnajit.runtime.launch import CompiledKernel, compile_kernel
from cdnajit.runtime.occupancy import occupancy
from cdnajit.runtime.roofline import count

GFX942 = get_target("gfx942")
SIZES = (1, 2, 3, 5, 7, 13, 16, 31, 33, 64, 70)
DTYPES = {"f64": ("f64", "f64"), "f32": ("f32", "f32"), "f16": ("f16", "f32"), "bf16": ("bf16", "f32"),
          "i8": ("i32", "i32")}   # input -> (result, accumulation)
FLOAT_EPILOGUES = ("none", "bias", "relu", "bias_relu", "sigmoid", "bias_tanh", "silu", "bias_gelu_tanh",
                   "gelu_erf", "bias_sigmoid", "tanh", "bias_silu", "bias_relu6")
INT_EPILOGUES = ("none", "bias", "relu", "bias_relu")
ERF = np.vectorize(math.erf)
ACTIVATIONS = {
    None: lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.minimum(np.maximum(x, 0), 6),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "silu": lambda x: x / (1 + np.exp(-x)),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "gelu_erf": lambda x: 0.5 * x * (1 + ERF(x / math.sqrt(2))),
}


def random_values(rng, dtype, shape):
    if dtype in ("i8", "i32"):
        return rng.integers(-9, 10, shape).astype(NUMPY_DTYPES[dtype])
    return rng.standard_normal(shape).astype(NUMPY_DTYPES[dtype])


def expected_gemm(op, arrays):
    """D in float64 (int64 for integers) with |A||B| and the other terms' magnitudes, the error scale."""
    attrs = op.attrs
    integer = attrs["result_dtype"] == "i32"
    wide = np.int64 if integer else np.float64
    a, b = (x.astype(wide) for x in arrays[:2])
    op_a = np.swapaxes(a, -1, -2) if attrs["trans_a"] else a
    op_b = np.swapaxes(b, -1, -2) if attrs["trans_b"] else b
    product, scale = op_a @ op_b, np.abs(op_a) @ np.abs(op_b) * abs(attrs["alpha"])
    d = attrs["alpha"] * product
    rest = list(arrays[2:])
    if attrs["beta"] != 0:
        c = rest.pop(0).astype(wide)
        d, scale = d + attrs["beta"] * c, scale + np.abs(attrs["beta"] * c)
    has_bias = attrs["epilogue"] == "bias" or attrs["epilogue"].startswith("bias_")
    if has_bias:
        bias = rest.pop(0).astype(wide)
        d, scale = d + bias, scale + np.abs(bias)
    activation = attrs["epilogue"].removeprefix("bias_") if has_bias else attrs["epilogue"]
    d = ACTIVATIONS[None if activation in ("none", "bias") else activation](d)
    return d, scale


def assert_gemm_close(got, op, arrays, k):
    want, scale = expected_gemm(op, arrays)
    result, compute = op.attrs["result_dtype"], op.attrs["compute_dtype"]
    assert got.dtype == NUMPY_DTYPES[result] and got.shape == want.shape
    if result == "i32":
        np.testing.assert_array_equal(got.astype(np.int64), want)
        return
    eps_acc = float(ml_dtypes.finfo(NUMPY_DTYPES[compute]).eps)
    eps_result = float(ml_dtypes.finfo(NUMPY_DTYPES[result]).eps)
    bound = 1.13 * (k + 3) * eps_acc * scale + 4 * eps_acc * np.abs(want) + eps_result * np.abs(want) \
        + np.finfo(np.float32).tiny
    error = np.abs(got.astype(np.float64) - want)
    worst = np.unravel_index(np.argmax(error - bound), error.shape) if error.size else None
    assert np.all(error <= bound), f"at {worst}: got {got[worst]}, want {want[worst]}, bound {bound[worst]}"


def small_solutions(in_dtype):
    """The pool's solutions with tiles up to 64 x 64 x 32 (quick to compile), MFMA and VALU."""
    compute = DTYPES[in_dtype][1]
    return [s for s in solution_pool(in_dtype, compute, GFX942) if max(s.mt0, s.mt1) <= 64 and s.depth_u <= 32]


def size_of_the_same_variant(rng, first: int, tile: int) -> int:
    """A size from SIZES (or a multiple of `tile`) that is a multiple of `tile` exactly when `first`
    is: a problem of the same kernel variant (generator.Edges)."""
    if first % tile:
        return int(rng.choice([s for s in SIZES if s % tile]))
    return int(rng.choice([s for s in SIZES if s % tile == 0] + [tile, 2 * tile]))


def run_random_gemm(seed, problems=3):
    """One random kernel (dtype, solution, layouts, epilogue, whether C is read) run on `problems`
    random problems of its variant: M, batch, alpha and beta free, N and K of the first problem's
    divisibility by the tile. The kernel compiles once (launch.object_code: the code text is the
    same), as a library solution serves every problem it is selected for."""
    rng = np.random.default_rng(seed)
    in_dtype = list(DTYPES)[seed % len(DTYPES)]
    trans_a, trans_b = bool(rng.integers(2)), bool(rng.integers(2))
    integer = in_dtype == "i8"
    epilogue = str(rng.choice(INT_EPILOGUES if integer else FLOAT_EPILOGUES))
    reads_c = bool(rng.integers(2))
    pool = small_solutions(in_dtype)
    # Even seeds take an MFMA solution, odd ones a VALU solution (when the dtype has both).
    kinds = [s for s in pool if s.kind == ("mfma" if seed % 2 == 0 else "valu")] or pool
    solution = kinds[int(rng.integers(len(kinds)))]
    first_n, first_k = int(rng.choice(SIZES)), int(rng.choice(SIZES))
    for i in range(problems):
        m = int(rng.choice(SIZES))
        n = first_n if i == 0 else size_of_the_same_variant(rng, first_n, solution.mt1)
        k = first_k if i == 0 else size_of_the_same_variant(rng, first_k, solution.depth_u)
        batch = int(rng.choice([1, 1, 3]))
        alpha = int(rng.choice([1, -2, 3])) if integer else float(rng.choice([1.0, 0.5, -1.5]))
        beta = (int(rng.choice([1, -1])) if integer else float(rng.choice([1.0, 0.25]))) if reads_c else 0
        op = gemm_call(m, n, k, in_dtype, DTYPES[in_dtype][0], batch=batch, trans_a=trans_a, trans_b=trans_b,
                       alpha=alpha, beta=beta, epilogue=epilogue)
        arrays = [random_values(rng, v.type.dtype, v.type.shape) for v in op.operands]
        d = np.full(op.result.type.shape, -7, NUMPY_DTYPES[op.attrs["result_dtype"]])
        compile_kernel(gemm_kernel(op, solution, "gemm"))(*arrays, d)
        assert_gemm_close(d, op, arrays, k)


@pytest.mark.parametrize("seed", range(4))   # make test; the other seeds run with the long ones
def test_random_gemm_matches_reference(seed):
    run_random_gemm(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4, 200))
def test_random_gemm_matches_reference_long(seed):
    run_random_gemm(seed)


@pytest.mark.parametrize("in_dtype", list(DTYPES))
def test_each_dtype_has_mfma_solutions_on_gfx942_and_gfx90a(in_dtype):
    compute = DTYPES[in_dtype][1]
    for target in ("gfx942", "gfx90a"):
        instructions = {s.instruction for s in solution_pool(in_dtype, compute, get_target(target)) if s.kind == "mfma"}
        assert instructions, (in_dtype, target)
    # f32 on gfx942: the two f32 MFMA shapes the tiles use (32x32x2, 16x16x4); int8 32x32x16 is gfx942's own.
    assert {s.instruction for s in solution_pool("f32", "f32", GFX942)} >= {"v_mfma_f32_32x32x2f32",
                                                                           "v_mfma_f32_16x16x4f32"}
    assert "v_mfma_i32_32x32x16i8" in {s.instruction for s in solution_pool("i8", "i32", GFX942)}
    assert "v_mfma_i32_32x32x16i8" not in {s.instruction for s in solution_pool("i8", "i32", get_target("gfx90a"))}


# ---- through cj.jit ----------------------------------------------------------------------------

def test_jit_runs_the_library_kernel_and_reports_its_solution():
    rng = np.random.default_rng(1)
    x, w, bias = (rng.standard_normal(s).astype(np.float32) for s in ((70, 33), (33, 45), (45,)))
    compiled = cj.jit(lambda x, w, b: cnp.tanh(x @ w + b)).lower(x, w, bias).compile()
    (report,) = compiled.kernels
    assert report.kind == "library" and report.source_ops == ("blas.gemm",)
    assert report.solution.startswith("Cijk_MT") and report.selection.startswith("heuristic: ")
    assert report.solution in compiled.as_text("optimized") and report.solution in compiled.report()
    got = compiled(x, w, bias)
    want = np.tanh(x.astype(np.float64) @ w + bias)
    assert np.allclose(got, want, rtol=0, atol=36 * 1.13 * np.finfo(np.float32).eps * (np.abs(x) @ np.abs(w) + 1.5))


@pytest.mark.parametrize("in_dtype, preferred, result", [
    (np.float16, cnp.float32, np.float32), (ml_dtypes.bfloat16, cnp.float32, np.float32),
    pytest.param(np.int8, cnp.int32, np.int32, marks=pytest.mark.slow), (np.float16, None, np.float16)])
def test_preferred_element_type(in_dtype, preferred, result):
    rng = np.random.default_rng(2)
    a = rng.integers(-4, 5, (9, 17)).astype(in_dtype)
    b = rng.integers(-4, 5, (17, 6)).astype(in_dtype)
    by_matmul = cj.jit(lambda a, b: cnp.matmul(a, b, preferred_element_type=preferred))
    by_dot_general = cj.jit(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                                         preferred_element_type=preferred))
    exact = a.astype(np.int64) @ b.astype(np.int64)    # small integers: every dtype holds the sums exactly
    for function in (by_matmul, by_dot_general):
        got = function(a, b)
        assert got.dtype == np.dtype(result)
        np.testing.assert_array_equal(got.astype(np.int64), exact)
        assert [r.kind for r in function.lower(a, b).compile().kernels] == ["library"]


@pytest.mark.parametrize("shapes", [((0, 4), (4, 3)), ((2, 4), (4, 0)), ((3, 0), (0, 5)), ((2, 0, 3), (2, 3, 4))])
def test_zero_sizes(shapes):
    a, b = (np.ones(s, np.float32) for s in shapes)
    got = cj.jit(lambda a, b: a @ b)(a, b)
    np.testing.assert_array_equal(got, a @ b)   # empty, or zeros when K is 0


def test_k_of_zero_keeps_the_epilogue():
    a, b, bias = np.ones((3, 0), np.float32), np.ones((0, 5), np.float32), np.arange(5, dtype=np.float32) - 2
    got = cj.jit(lambda a, b, c: cnp.maximum(a @ b + c, 0))(a, b, bias)
    np.testing.assert_array_equal(got, np.broadcast_to(np.maximum(bias, 0), (3, 5)))


def test_shape_mismatch_names_shapes_and_contracting_dimensions():
    a, b = np.ones((3, 4), np.float32), np.ones((5, 6), np.float32)
    with pytest.raises(cj.TracingError, match=r"contracting dimension 1 of a \(shape \(3, 4\), size 4\) does not "
                                              r"match dimension 0 of b \(shape \(5, 6\), size 5\)"):
        cj.jit(lambda a, b: a @ b)(a, b)
    with pytest.raises(cj.TracingError, match=r"lhs f32\[3,4\] \(size 4\) does not match dimension 0 of rhs "
                                              r"f32\[5,6\]"):
        cj.jit(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))))(a, b)


def test_unsupported_dtype_combination_is_a_clear_error():
    a = np.ones((3, 4), np.float32)
    with pytest.raises(cj.TracingError, match="preferred_element_type i32 does not fit operands of dtype f32"):
        cj.jit(lambda a, b: cnp.matmul(a, b, preferred_element_type=cnp.int32))(a, a.T)
    with pytest.raises(cj.CdnajitError, match="blas.tune: unsupported dtype"):
        cj.libs.blas.tune(4, 4, 4, "U3")


# ---- tuning ------------------------------------------------------------------------------------

@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """Tuning writes the database into the cache folder: a folder of the test's own, so the shared
    test cache (and the program keys the database's digest enters) stays untouched."""
    monkeypatch.setenv("CDNAJIT_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.slow
def test_tune_records_the_winner_and_compiles_use_it(private_cache, capsys):
    result = cj.libs.blas.tune(40, 24, 19, "float32", top=3, repeats=2)
    assert "blas.tune [" in capsys.readouterr().err
    assert len(result.timings) == 3 and result.winner == result.timings[0].solution
    # Every candidate of three is a finalist (FINALISTS = 3); the heuristic's pick scores exactly 1.
    heuristic_pick = select(GemmProblem.from_op(gemm_call(40, 24, 19, "f32", "f32")), get_target(None)).solution.name
    scores = {t.solution.name: t.versus_incumbent for t in result.timings}
    assert scores[heuristic_pick] == 1.0 and all(s is not None for s in scores.values())
    assert result.timings[0].solution.name == heuristic_pick or scores[result.winner.name] < 1 - MARGIN
    assert (private_cache / DATABASE_NAME).exists()
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((40, 19)).astype(np.float32), rng.standard_normal((19, 24)).astype(np.float32)
    compiled = cj.jit(lambda a, b: a @ b).lower(a, b).compile()
    (report,) = compiled.kernels
    assert report.solution == result.winner.name and report.selection.startswith("tuned")
    assert np.allclose(compiled(a, b), a.astype(np.float64) @ b, atol=22 * np.finfo(np.float32).eps
                       * (np.abs(a) @ np.abs(b)))


@pytest.mark.slow
def test_tuning_another_size_loads_the_candidates_kernels_from_the_cache(private_cache, monkeypatch):
    """The find mode compiles each candidate's kernel once: tuning another size of the same
    candidates (and variant: N and K past the tiles, M > N) compiles nothing."""
    compiles = []
    compile_for_real = launch.compile_objects
    monkeypatch.setattr(launch, "compile_objects", lambda kernels: compiles.extend(kernels) or compile_for_real(kernels))
    first = cj.libs.blas.tune(40, 24, 19, "float32", top=2, repeats=1, show_progress=False)
    assert len(compiles) == 2
    second = cj.libs.blas.tune(45, 30, 23, "float32", top=2, repeats=1, show_progress=False)
    assert {t.solution for t in second.timings} == {t.solution for t in first.timings}
    assert len(compiles) == 2


def test_a_challenger_replaces_the_heuristic_pick_only_by_its_median_round_beyond_the_margin():
    incumbent = [1.0, 1.0, 3.0, 1.0, 1.0]              # one slow round, from other load
    lucky_once = [0.5, 1.2, 3.1, 1.2, 1.1]             # fastest single run, slower in most rounds
    slightly_faster = [0.99, 0.99, 2.97, 0.99, 0.98]  # within the margin
    faster = [0.9, 0.9, 2.0, 0.92, 0.9]
    rounds = {0: incumbent, 1: lucky_once, 2: slightly_faster}
    winner, scores = head_to_head_winner(rounds, incumbent=0, margin=0.03)
    assert winner == 0 and scores[0] == 1.0 and scores[1] == pytest.approx(1.1)
    assert head_to_head_winner({**rounds, 3: faster}, incumbent=0, margin=0.03)[0] == 3
    assert head_to_head_winner(rounds, incumbent=0, margin=0.0)[0] == 2


def test_a_corrupt_database_warns_and_is_ignored(private_cache):
    (private_cache / DATABASE_NAME).write_text("{not json")
    a = np.ones((8, 8), np.float32)
    with pytest.warns(UserWarning, match="unreadable GEMM tuning database"):
        got = cj.jit(lambda a, b: a @ b)(a, a)
    np.testing.assert_array_equal(got, a @ a)


@pytest.mark.slow
def test_tune_with_an_epilogue_records_it_apart_from_the_plain_product(private_cache):
    """hipBLASLt-style: the winner with bias+relu fused serves that epilogue; the plain product keeps
    the heuristic until it is tuned itself, and then serves epilogues tuned on their own no longer."""
    result = cj.libs.blas.tune(40, 24, 19, "float32", epilogue="bias_relu", top=3, repeats=2, show_progress=False)
    assert result.key.endswith(":bias_relu") and "bias_relu" in result.table()
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((40, 19)).astype(np.float32), rng.standard_normal((19, 24)).astype(np.float32)
    bias = rng.standard_normal(24).astype(np.float32)
    fused = cj.jit(lambda a, b, c: cnp.maximum(a @ b + c, 0.0)).lower(a, b, bias).compile()
    (report,) = fused.kernels
    assert report.solution == result.winner.name and report.selection.startswith("tuned")
    expected = np.maximum(a.astype(np.float64) @ b + bias, 0)
    assert np.allclose(fused(a, b, bias), expected, atol=22 * np.finfo(np.float32).eps * (np.abs(a) @ np.abs(b) + 1))
    (plain,) = cj.jit(lambda a, b: a @ b).lower(a, b).compile().kernels
    assert plain.selection.startswith("heuristic")
    # A plain tuning also serves the epilogues that have none of their own.
    plain_result = cj.libs.blas.tune(40, 24, 19, "float32", top=2, repeats=1, show_progress=False)
    (biased,) = cj.jit(lambda a, b, c: a @ b + c).lower(a, b, bias).compile().kernels
    assert biased.solution == plain_result.winner.name and biased.selection.startswith("tuned")


def test_tune_rejects_an_unknown_epilogue():
    with pytest.raises(cj.CdnajitError, match="epilogue 'bias_swish' is not one of none, bias, relu"):
        cj.libs.blas.tune(8, 8, 8, epilogue="bias_swish")


def test_tune_rejects_bad_sizes():
    with pytest.raises(cj.CdnajitError, match="M must be a positive integer, got 0"):
        cj.libs.blas.tune(0, 4, 4)


# ---- the gfx942 kernel for f16 4096^3 --------------------------------------------------------------

def test_gfx942_f16_4096_pick_uses_mfma_in_its_main_loop_without_spills():
    op = gemm_call(4096, 4096, 4096, "f16", "f32")   # f16 in, f32 accumulate and out, as the benchmark's
    chosen = select(GemmProblem.from_op(op), GFX942)
    assert chosen.solution.kind == "mfma" and chosen.estimate.efficiency > 0.5
    kernel = gemm_kernel(op, chosen.solution, "gemm_f16")
    resources = amdgpu.resources(kernel, GFX942)
    assert resources.vgpr_spill_count == 0 and resources.sgpr_spill_count == 0
    assert resources.lds_bytes <= 64 * 1024
    waves = occupancy(GFX942, vgprs=resources.allocated_vgprs, sgprs=resources.sgpr_count, lds_bytes=resources.lds_bytes,
                      workgroup_items=chosen.solution.workgroup_items).waves_per_simd
    assert waves >= 2
    assert any("v_mfma_f32_" in body for body in amdgpu.loop_bodies(amdgpu.assembly(kernel, GFX942)))


@pytest.mark.parametrize("in_dtype, size", [("f16", 4096), ("f32", 1024), ("f64", 256)])
def test_gfx942_main_loops_accumulate_in_place(in_dtype, size):
    """The MFMAs of the main loop write their accumulators where the next trip reads them: no
    v_mov in the loop (a loop body of two paths, with and without staging, left them in
    different registers at the join, and every trip copied each accumulator back)."""
    op = gemm_call(size, size, size, in_dtype, DTYPES[in_dtype][0])
    kernel = gemm_kernel(op, select(GemmProblem.from_op(op), GFX942).solution, "g")
    bodies = [body for body in amdgpu.loop_bodies(amdgpu.assembly(kernel, GFX942)) if "v_mfma_" in body]
    assert bodies and not any(re.search(r"^\s+v_mov_b(32|64)", body, re.M) for body in bodies)


def test_complex64_runs_as_real_gemms():
    rng = np.random.default_rng(4)
    a, b = ((rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(np.complex64) for s in ((5, 7), (7, 3)))
    compiled = cj.jit(lambda a, b: a @ b).lower(a, b).compile()
    assert [r.source_ops for r in compiled.kernels if r.kind == "library"] == [("blas.gemm",)] * 4
    got, want = compiled(a, b), a.astype(np.complex128) @ b
    # Each part is two real K-term products summed: (2K + 1) roundings of the f32 magnitudes.
    scale = np.abs(a.real) @ np.abs(b.real) + np.abs(a.imag) @ np.abs(b.imag) \
        + np.abs(a.real) @ np.abs(b.imag) + np.abs(a.imag) @ np.abs(b.real)
    assert got.dtype == np.complex64
    assert np.all(np.abs(got - want) <= 15 * np.finfo(np.float32).eps * scale)


def test_batched_int8_is_one_strided_batched_gemm():
    rng = np.random.default_rng(5)
    a, b = rng.integers(-8, 8, (3, 4, 5)).astype(np.int8), rng.integers(-8, 8, (3, 5, 6)).astype(np.int8)
    compiled = cj.jit(lambda a, b: cnp.matmul(a, b, preferred_element_type=cnp.int32)).lower(a, b).compile()
    assert [r.source_ops for r in compiled.kernels] == [("blas.strided_batched_gemm",)]
    np.testing.assert_array_equal(compiled(a, b), np.matmul(a.astype(np.int32), b.astype(np.int32)))


@pytest.mark.parametrize("in_dtype, trans_a, trans_b, from_lds", [
    ("f32", False, False, {"a", "b"}), ("f32", True, False, {"a", "b"}), ("f32", False, True, {"a"}),
    ("f32", True, True, {"a"}), ("f64", False, False, {"a", "b"}), ("f16", False, False, set())])
def test_the_host_reads_f32_and_f64_fragments_straight_from_lds(in_dtype, trans_a, trans_b, from_lds):
    """The host's micro-kernel reads an f32/f64 MFMA kernel's A fragments from LDS (no per-work-item
    copy), and its B fragments too where each run of lanes reads consecutive LDS elements (B's
    K-major tile, B not transposed); B's row-major tile (B transposed, rows DepthU + 1 apart) is
    copied per work-item, as are f16 values, which need converting and are converted once."""
    op = gemm_call(128, 128, 64, in_dtype, "f64" if in_dtype == "f64" else "f32", trans_a=trans_a, trans_b=trans_b)
    solution = select(GemmProblem.from_op(op), GFX942).solution
    assert solution.kind == "mfma"
    plan = StoragePlan(gemm_kernel(op, solution, "g"))
    assert {name[0] for (name, _), load in plan.reloaded.items() if load.buffer.space == "lds"} == from_lds


@pytest.mark.parametrize("trans_a, trans_b, prefetched", [(False, False, {"in1"}), (True, False, {"in0", "in1"}),
                                                          (False, True, set()), (True, True, {"in0"})])
def test_the_operands_read_along_new_rows_are_prefetched(trans_a, trans_b, prefetched):
    """An operand whose K step moves to new rows (B not transposed, A transposed) is prefetched
    PREFETCH_TILES blocks ahead; one read along K, which the hardware prefetcher follows, is not.
    The staging of the next block is marked alongside the math (it writes the other LDS buffer)."""
    op = gemm_call(128, 128, 256, "f32", "f32", trans_a=trans_a, trans_b=trans_b)
    kernel = gemm_kernel(op, select(GemmProblem.from_op(op), GFX942).solution, "g")
    text = str(kernel)
    assert set(re.findall(r"prefetch (\w+)\[", text)) == prefetched  # in0 is A, in1 is B
    # Every trip stages (the last one the last tile again, unread), so the loop body has one path.
    assert len(re.findall(r"if uniform alongside True:bool", text)) == 1


@pytest.mark.slow
def test_the_host_walks_the_tiles_along_m_first_when_a_is_the_smaller_operand():
    """Consecutive workgroups share the larger operand's panel and read the smaller one again
    (generator.py: N_FIRST, M_FIRST when M < N), chosen at launch: problems on either side of
    M = N share one kernel, and the results do not depend on the walk, edge tiles and batches
    included."""
    solution = select(GemmProblem.from_op(gemm_call(100, 300, 37, "f32", "f32", batch=2)), GFX942).solution
    kernels = [gemm_kernel(gemm_call(m, n, 37, "f32", "f32", batch=2, epilogue="bias_relu"), solution, "g")
               for m, n in [(100, 300), (300, 170), (150, 150)]]
    assert kernels[0].grid_order == (0, 1, 2) and "grid order: y then x then z when (m < n)" in str(kernels[0])
    assert len({kernel.code_text() for kernel in kernels}) == 1
    compiled = compile_kernel(kernels[0])
    for (m, n), kernel in zip([(100, 300), (300, 170), (150, 150)], kernels):
        rng = np.random.default_rng(m + n)
        op = gemm_call(m, n, 37, "f32", "f32", batch=2, epilogue="bias_relu")
        arrays = [random_values(rng, v.type.dtype, v.type.shape) for v in op.operands]
        d = np.full(op.result.type.shape, -7, np.float32)
        compiled(*arrays, d, *[value for _, value in kernel.arguments])
        assert_gemm_close(d, op, arrays, 37)


# ---- one kernel per solution: sizes and scalars are arguments ----------------------------------

RUNTIME_SIZES = [(1, 1, 1, 1), (63, 65, 129, 1), (65, 63, 1, 1), (129, 1, 65, 1), (2, 70, 33, 3), (7, 5, 0, 1),
                 (64, 64, 64, 2)]   # m, n, k, batch: 1, sizes either side of the tiles, K of 0, batches


def run_at(compiled, op, arrays):
    """D of the problem `op` from a solution's compiled kernel, its sizes and scalars passed as
    the kernel's arguments (generator.py: m, n, k, batch, alpha, then beta when C is read)."""
    p = GemmProblem.from_op(op)
    d = np.full(op.result.type.shape, -7, NUMPY_DTYPES[op.attrs["result_dtype"]])
    compiled(*arrays, d, p.m, p.n, p.k, p.batch, p.alpha, *([p.beta] if p.beta != 0 else []))
    return d


@pytest.mark.parametrize("kind", ["mfma", "valu"])
@pytest.mark.parametrize("in_dtype", [pytest.param(d, marks=pytest.mark.slow) if d in ("i8", "f64") else d
                                      for d in DTYPES])
def test_one_compiled_kernel_runs_every_problem_of_its_solution(in_dtype, kind):
    """A solution's kernel, compiled once, computes problems of any size, crossing its tiles or
    not, K of 0 and batches included, with alpha, beta, C and a bias, against the reference."""
    rng = np.random.default_rng(list(DTYPES).index(in_dtype) * 2 + (kind == "mfma"))
    pool = [s for s in small_solutions(in_dtype) if s.kind == kind]
    if not pool:
        pytest.skip(f"no {kind} solution for {in_dtype}")
    solution = pool[int(rng.integers(len(pool)))]
    trans_a, trans_b = bool(rng.integers(2)), bool(rng.integers(2))
    alpha, beta = (3, -1) if in_dtype == "i8" else (-1.5, 0.25)

    def problem(m, n, k, batch):
        return gemm_call(m, n, k, in_dtype, DTYPES[in_dtype][0], batch=batch, trans_a=trans_a, trans_b=trans_b,
                         alpha=alpha, beta=beta, epilogue="bias_relu")

    kernel = gemm_kernel(problem(63, 65, 129, 1), solution, "g")   # every dimension ends inside a tile
    compiled = CompiledKernel(kernel, compile_object(kernel))
    for m, n, k, batch in RUNTIME_SIZES:
        op = problem(m, n, k, batch)
        arrays = [random_values(rng, v.type.dtype, v.type.shape) for v in op.operands]
        assert_gemm_close(run_at(compiled, op, arrays), op, arrays, k)


def test_sizes_that_are_multiples_of_the_tiles_take_the_variant_without_bounds_checks():
    """N and K multiples of MT1 and DepthU select the variant without their bounds checks (Edges):
    its kernel checks only M, at runtime, and serves every such problem, M crossing its tiles or not."""
    rng = np.random.default_rng(11)
    solution = next(s for s in small_solutions("f32") if s.kind == "mfma")
    mt0, mt1, depth = solution.mt0, solution.mt1, solution.depth_u

    def problem(m, n, k, batch=1):
        return gemm_call(m, n, k, "f32", "f32", batch=batch, alpha=0.5)

    kernel = gemm_kernel(problem(2 * mt0, mt1, 2 * depth), solution, "g")
    assert Edges.of(GemmProblem.from_op(problem(2 * mt0, mt1, 2 * depth)), solution) == Edges(False, False)
    assert Edges(False, False).name == "M" and Edges(True, True).name == "MNK"
    assert not re.search(r"< [nk]\)", str(kernel).split("{", 1)[1])   # no `column < n`, `k < k` in the body
    for other in [problem(3 * mt0, 2 * mt1, 5 * depth, 2), problem(3 * mt0 + 1, 2 * mt1, 5 * depth),
                  problem(2 * mt0 + 7, mt1, depth)]:   # M past its tiles: checked at runtime
        assert gemm_kernel(other, solution, "g").code_text() == kernel.code_text()
    assert gemm_kernel(problem(3 * mt0, 2 * mt1 + 1, 5 * depth), solution, "g").code_text() != kernel.code_text()
    assert gemm_kernel(problem(3 * mt0, 2 * mt1, 5 * depth + 1), solution, "g").code_text() != kernel.code_text()
    compiled = CompiledKernel(kernel, compile_object(kernel))
    for m, n, k, batch in [(mt0, mt1, depth, 1), (3 * mt0, 2 * mt1, 5 * depth, 2), (mt0, 3 * mt1, 0, 1),
                           (mt0 + 1, mt1, 2 * depth, 1), (5, 2 * mt1, depth, 3), (2 * mt0 - 1, mt1, depth, 2)]:
        op = problem(m, n, k, batch)
        arrays = [random_values(rng, v.type.dtype, v.type.shape) for v in op.operands]
        assert_gemm_close(run_at(compiled, op, arrays), op, arrays, k)


@pytest.fixture
def gemm_compiles(tmp_path, monkeypatch):
    """An empty compile cache of the test's own, and the names of the library kernels (those with
    arguments) that LLVM compiles from then on."""
    monkeypatch.setenv("CDNAJIT_CACHE_DIR", str(tmp_path))
    names = []
    compile_for_real = launch.compile_objects
    monkeypatch.setattr(launch, "compile_objects", lambda kernels: names.extend(
        kernel.name for kernel in kernels if kernel.arguments) or compile_for_real(kernels))
    return names



def test_compile_kernel_loads_a_compiled_solution_for_a_new_problem(gemm_compiles):
    """runtime/launch.compile_kernel finds object code by the kernel's code text: the kernel of a
    solution built for another problem of its variant (other M, N, K, batch, alpha and beta) loads
    the compiled one and computes that problem."""
    rng = np.random.default_rng(12)
    solution = next(s for s in small_solutions("f32") if s.kind == "valu")
    for m, n, k, batch, alpha, beta in [(5, 7, 3, 1, 0.5, 1.0), (70, 13, 31, 3, -1.5, 0.25)]:
        op = gemm_call(m, n, k, "f32", "f32", batch=batch, alpha=alpha, beta=beta)
        arrays = [random_values(rng, v.type.dtype, v.type.shape) for v in op.operands]
        d = np.full(op.result.type.shape, -7, np.float32)
        compile_kernel(gemm_kernel(op, solution, "g"))(*arrays, d)
        assert_gemm_close(d, op, arrays, k)
    assert gemm_compiles == ["g"]


def two_layers(xp, x, w1, b1, w2, b2):
    return xp.maximum(x @ w1 + b1, 0.0) @ w2 + b2


# Programs a user writes, each with the shapes of its calls: every call after the first picks the
# first one's solutions and variants (Edges: N and K crossing the tiles in every call, or in none),
# and a magnitude bound: the program on |inputs| with its signs made positive (relu is 1-Lipschitz
# and keeps |x| <= |x|), which bounds every product's sum of |a||b|.
NEW_SIZE_PROGRAMS = {
    # K stays below 40: above it the heuristic takes DepthU 16 with 16-byte reads, another solution.
    "matmul": (lambda xp, a, b: a @ b, [[(70, 33), (33, 90)], [(75, 37), (37, 95)], [(101, 39), (39, 150)]],
               lambda a, b: a @ b),
    "batched": (lambda xp, a, b: a @ b, [[(2, 70, 33), (2, 33, 90)], [(3, 75, 37), (3, 37, 95)]],
                lambda a, b: a @ b),
    "transposed": (lambda xp, a, b: a.T @ b.T, [[(33, 70), (90, 33)], [(37, 75), (95, 37)]],
                   lambda a, b: a.T @ b.T),
    "alpha_beta": (lambda xp, a, b, c: 2.0 * (a @ b) - 0.5 * c,
                   [[(70, 33), (33, 90), (70, 90)], [(75, 37), (37, 95), (75, 95)]],
                   lambda a, b, c: 2.0 * (a @ b) + 0.5 * c),
    # An MLP's layers at a new batch: only M changes, N and K stay multiples of the tiles or not.
    "mlp_batch": (two_layers, [[(256, 64), (64, 64), (64,), (64, 10), (10,)],
                               [(100, 64), (64, 64), (64,), (64, 10), (10,)]],
                  lambda x, w1, b1, w2, b2: (x @ w1 + b1) @ w2 + b2),
}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in ("batched", "transposed", "mlp_batch", "alpha_beta")
                                  else name for name in NEW_SIZE_PROGRAMS])
def test_a_new_size_with_the_same_solution_compiles_no_gemm_kernel(name, gemm_compiles):
    """Through cj.jit with an empty cache: the first call compiles its GEMM kernels, a call at new
    sizes that picks the same solutions loads the same object code: no LLVM compile of a library
    kernel (kernels with arguments; the fusions around them have static sizes and may compile).
    Error bound: (K + 3) eps per product (module docstring), twice for two layers in a row."""
    program, calls, magnitude = NEW_SIZE_PROGRAMS[name]
    rng = np.random.default_rng(12)
    jitted = cj.jit(lambda *arrays: program(cnp, *arrays))
    solutions = []
    for number, shapes in enumerate(calls):
        arrays = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
        compiled = jitted.lower(*arrays).compile()
        solutions.append([report.solution for report in compiled.kernels if report.solution])
        want = program(np, *(a.astype(np.float64) for a in arrays))
        k = max(shape[-1] for shape in shapes)
        bound = 2 * (k + 3) * np.finfo(np.float32).eps * magnitude(*(np.abs(a.astype(np.float64)) for a in arrays))
        assert np.all(np.abs(compiled(*arrays) - want) <= bound + np.finfo(np.float32).eps * np.abs(want))
        assert solutions[-1] and (gemm_compiles if number == 0 else not gemm_compiles), (number, gemm_compiles)
        gemm_compiles.clear()
    assert all(s == solutions[0] for s in solutions), solutions


def mlp_softmax(xp, x, w1, b1, w2, b2, w3, b3):
    """The W5 benchmark's MLP (benchmarks/workloads.py): relu, relu, softmax."""
    h = xp.maximum(xp.maximum(x @ w1 + b1, 0.0) @ w2 + b2, 0.0) @ w3 + b3
    e = xp.exp(h - xp.max(h, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


@pytest.mark.slow
def test_the_w5_mlp_at_batch_100_after_batch_256_compiles_no_gemm_kernel(gemm_compiles):
    """The benchmark's 256x1024x1024x10 f32 MLP, then at batch 100: its GEMM kernels are loaded, only
    kernels of static sizes (the softmax's) compile. Error bound: each logit is off by at most
    delta = 3 (K + 3) eps times the layers' magnitudes (the program on |inputs|, relu dropped);
    a softmax probability then by at most p (exp(2 delta_max) - 1) of its row, plus its own f32
    rounding: h - max h (eps |h - max h| in exp's argument), exp (1 ulp), a 10-term sum (9), the
    division (1)."""
    rng = np.random.default_rng(14)
    widths = (1024, 1024, 1024, 10)
    params = []
    for fan_in, fan_out in zip(widths, widths[1:]):
        params += [(rng.standard_normal((fan_in, fan_out)) * fan_in**-0.5).astype(np.float32),
                   (rng.standard_normal(fan_out) * 0.1).astype(np.float32)]
    jitted = cj.jit(lambda *arrays: mlp_softmax(cnp, *arrays))
    eps = np.finfo(np.float32).eps
    for batch, compiles in [(256, 2), (100, 0)]:   # bias_relu twice (one kernel), then bias
        x = rng.standard_normal((batch, 1024)).astype(np.float32)
        got = jitted(x, *params)
        assert len(gemm_compiles) == compiles, (batch, gemm_compiles)
        gemm_compiles.clear()
        wide = [a.astype(np.float64) for a in (x, *params)]
        want = mlp_softmax(np, *wide)
        magnitude, logits = np.abs(wide[0]), wide[0]
        for layer, (w, b) in enumerate(zip(wide[1::2], wide[2::2])):
            magnitude = magnitude @ np.abs(w) + np.abs(b)
            logits = logits @ w + b if layer == 2 else np.maximum(logits @ w + b, 0)
        delta = 3 * (1024 + 3) * eps * magnitude.max(axis=-1, keepdims=True)
        spread = (logits.max(axis=-1, keepdims=True) - logits.min(axis=-1, keepdims=True))
        rounding = (11 + 2 * spread) * eps * want
        assert np.all(np.abs(got - want) <= want * np.expm1(2 * delta) + rounding + np.finfo(np.float32).tiny)


@pytest.mark.parametrize("shapes", [((1, 1), (1, 1)), ((63, 65), (65, 129)), ((2, 65, 63), (2, 63, 17))])
def test_complex_gemms_at_sizes_across_the_tiles(shapes):
    """c64 products reach the library as real GEMMs (passes/expand_complex.py). Error model: each
    part of an element sums 2K real products in f32, |a_r b_r| + |a_i b_i| <= 2 |a||b| per term."""
    rng = np.random.default_rng(13)
    a, b = ((rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(np.complex64) for s in shapes)
    got = cj.jit(lambda a, b: a @ b)(a, b)
    want = a.astype(np.complex128) @ b
    k = shapes[0][-1]
    bound = 2 * 1.13 * (2 * k + 3) * np.finfo(np.float32).eps * (np.abs(a) @ np.abs(b)) + np.finfo(np.float32).tiny
    assert got.dtype == np.complex64 and np.all(np.abs(got - want) <= bound)


FLAT_STAGED = "Cijk_MT64x64x8_MI16x16x4_W2x2_GRVW1_PAD4"   # DepthU 8: narrower than the workgroup's 16 x


@pytest.mark.parametrize("trans_a, trans_b", [pytest.param(False, False), pytest.param(True, True),
                                              pytest.param(False, True, marks=pytest.mark.slow),
                                              pytest.param(True, False, marks=pytest.mark.slow)])
def test_a_depth_u_narrower_than_the_workgroup_stages_its_blocks_flat(trans_a, trans_b):
    """DepthU 8 with 16 lanes along x: staging numbers the work-items flat over the 8-wide (or
    8-deep) blocks (solutions.staging_slots); the kernel computes every RUNTIME_SIZES problem of
    f64 against the reference (assert_gemm_close: the f64 dot-product error bound)."""
    assert staging_slots(8, 64, (16, 4, 4), 1) == [StagingSlot(0, 0, 0), StagingSlot(0, 0, 256)]
    assert_runs_every_runtime_size(FLAT_STAGED, "f64", trans_a, trans_b)


def assert_runs_every_runtime_size(name, in_dtype, trans_a, trans_b, target=GFX942):
    """The named solution of `target`, compiled once for the host, against the reference on every
    RUNTIME_SIZES problem."""
    compute = DTYPES[in_dtype][1]
    solution = solution_by_name(name, in_dtype, compute, target)
    rng = np.random.default_rng(16)

    def problem(m, n, k, batch):
        return gemm_call(m, n, k, in_dtype, compute, batch=batch, trans_a=trans_a, trans_b=trans_b, alpha=-1.5,
                         beta=0.25)

    kernel = gemm_kernel(problem(63, 65, 129, 1), solution, "g")
    compiled = CompiledKernel(kernel, compile_object(kernel))
    for m, n, k, batch in RUNTIME_SIZES:
        op = problem(m, n, k, batch)
        arrays = [random_values(rng, v.type.dtype, v.type.shape) for v in op.operands]
        assert_gemm_close(run_at(compiled, op, arrays), op, arrays, k)


@pytest.mark.parametrize("size", [256, 4096])
def test_f64_picks_run_at_least_two_waves_per_simd(size):
    """The f64 GEMM's DepthU 16 tiles need 34.8 KB of LDS (one workgroup, one wave per SIMD);
    DepthU 8 leaves room for two or three: the heuristic picks them (the survey's "occupancy 1")."""
    op = gemm_call(size, size, size, "f64", "f64")
    chosen = pick(GemmProblem.from_op(op), GFX942)
    assert chosen.solution.depth_u == 8 and chosen.estimate.waves_per_simd >= 2, chosen.estimate.describe()


@pytest.mark.parametrize("name, in_dtype", [("Cijk_MT128x64x16_MI32x32x8_W2x1_GRVW8_PAD4", "f16"),
                                            pytest.param("Cijk_MT64x64x16_MI32x32x2_W2x2_GRVW4_PAD4", "f32",
                                                         marks=pytest.mark.slow),
                                            pytest.param("Cijk_MT64x64x8_MI16x16x4_W2x2_GRVW2_PAD4", "f64",
                                                         marks=pytest.mark.slow)])
@pytest.mark.parametrize("trans_a, trans_b", [(False, False), pytest.param(True, True, marks=pytest.mark.slow)])
def test_sixteen_byte_global_reads_stage_flat_vectors(name, in_dtype, trans_a, trans_b):
    """GRVW of 16 bytes over a DepthU of 16 (or 8) K values: a lane's vector of consecutive elements
    lies in one row of the block (staging_slots' flat numbering); every RUNTIME_SIZES problem
    against the reference (assert_gemm_close: the dot-product error bound of the dtype)."""
    assert_runs_every_runtime_size(name, in_dtype, trans_a, trans_b)


K_RUN_STAGED = "Cijk_MT128x128x32_MI32x32x8_W2x1_GRVW8_PAD4"   # each work-item: 4 K of 8 rows (or 8 K of a row)
LAYOUTS = [(False, False), (True, True), (False, True), (True, False)]


@pytest.mark.parametrize("trans_a, trans_b", [(False, False), (True, True),
                                              *(pytest.param(*layout, marks=pytest.mark.slow) for layout in LAYOUTS[2:])])
def test_f16_lds_traffic_is_eight_bytes_wide_and_free_of_bank_conflicts(trans_a, trans_b):
    """An f16 operand whose rows (M or N) are contiguous in memory is staged in runs of k_pack (4)
    K values (solutions.staging_k_run), so every LDS write of the main loop, as every fragment read,
    moves a lane's 4 K values of a row at once (ds_write_b64 or ds_write2_b64, no ds_write_b16); the
    model finds no bank conflict in them (the padding of lds_row_block)."""
    op = gemm_call(4096, 4096, 4096, "f16", "f32", trans_a=trans_a, trans_b=trans_b)
    solution = solution_by_name(K_RUN_STAGED, "f16", "f32", GFX942)
    assert solution.staging_k_run(solution.mt0, False) == solution.staging_k_run(solution.mt1, False) == 4
    kernel = gemm_kernel(op, solution, "g")
    body = next(body for body in amdgpu.loop_bodies(amdgpu.assembly(kernel, GFX942)) if "v_mfma_" in body)
    assert set(re.findall(r"\bds_write\w*", body)) <= {"ds_write_b64", "ds_write2_b64"}
    assert set(re.findall(r"\bds_read\w*", body)) <= {"ds_read_b64", "ds_read2_b64"}
    assert {a.conflict for a in count(kernel).lds_accesses.values()} == {1}


@pytest.mark.slow
@pytest.mark.parametrize("trans_a, trans_b", LAYOUTS)
def test_k_run_staging_runs_every_runtime_size(trans_a, trans_b):
    """The K-run staged f16 solution against the reference on every RUNTIME_SIZES problem."""
    assert_runs_every_runtime_size(K_RUN_STAGED, "f16", trans_a, trans_b)


@pytest.mark.parametrize("in_dtype, trans_b", [("f32", True), ("f64", True), pytest.param("f32", False, marks=pytest.mark.slow)])
def test_f32_and_f64_fragments_are_read_sixteen_bytes_at_a_time(in_dtype, trans_b):
    """A row-major LDS tile (K contiguous in memory: A, and B transposed) rows DepthU + 16 bytes
    apart, read 16 bytes per lane (local_read_vector_width: 4 f32, 2 f64): every read of both
    operands in A B^T is a ds_read_b128, every staging write a ds_write_b128, none conflicting by
    the model. With B not transposed, A's reads are."""
    op = gemm_call(4096, 4096, 4096, in_dtype, in_dtype, trans_b=trans_b)
    solution = select(GemmProblem.from_op(op), GFX942).solution
    assert solution.local_read_vector_width == 16 // ELEMENT_BYTES[in_dtype]
    kernel = gemm_kernel(op, solution, "g")
    body = next(body for body in amdgpu.loop_bodies(amdgpu.assembly(kernel, GFX942)) if "v_mfma_" in body)
    reads = set(re.findall(r"\bds_read\w*", body))
    assert reads == {"ds_read_b128"} if trans_b else "ds_read_b128" in reads
    assert set(re.findall(r"\bds_write\w*", body)) == {"ds_write_b128"}
    assert {a.conflict for a in count(kernel).lds_accesses.values()} == {1}


@pytest.mark.parametrize("in_dtype, size", [("f16", 4096), ("f16", 256), ("f32", 4096), ("f64", 4096)])
def test_the_picks_lds_accesses_are_free_of_bank_conflicts(in_dtype, size):
    """The heuristic's picks, by the model (an f16 tile too small for a K run per work-item writes
    2-byte values, each lane's GRVW rows apart: lds_row_block's padding spreads them)."""
    op = gemm_call(size, size, size, in_dtype, DTYPES[in_dtype][0])
    kernel = gemm_kernel(op, select(GemmProblem.from_op(op), GFX942).solution, "g")
    assert {a.conflict for a in count(kernel).lds_accesses.values()} == {1}


@pytest.mark.slow
def test_the_small_grid_pick_of_attentions_value_product_runs_correctly():
    """1024x64x1024 f16 over 8 heads, whose 64x64 tiles leave CUs idle (libs/blas/heuristic.py
    `small_grid`): the pick's grid fills the CUs, and its kernel matches the reference on the
    problem itself and on every RUNTIME_SIZES problem (edges, K of 0, batches)."""
    op = gemm_call(1024, 64, 1024, "f16", "f16", batch=8)
    problem = GemmProblem.from_op(op)
    solution = pick(problem, GFX942).solution
    assert min(solution.mt0, solution.mt1) < 64 and tile_count(problem, solution) >= GFX942.compute_units
    rng = np.random.default_rng(30)
    arrays = [random_values(rng, v.type.dtype, v.type.shape) for v in op.operands]
    d = np.full(op.result.type.shape, -7, np.float16)
    compile_kernel(gemm_kernel(op, solution, "attention_values"))(*arrays, d)
    assert_gemm_close(d, op, arrays, 1024)
    assert_runs_every_runtime_size(solution.name, "f16", False, False)


@pytest.mark.parametrize("in_dtype", ["f64", "f32", "f16", "bf16"])
def test_large_picks_read_sixteen_bytes_per_lane(in_dtype):
    """The survey's "narrow loads" of the GEMMs: the 4096^3 picks read 16 bytes per lane from
    global memory (buffer_load_dwordx4 on gfx942)."""
    op = gemm_call(4096, 4096, 4096, in_dtype, DTYPES[in_dtype][0])
    solution = pick(GemmProblem.from_op(op), GFX942).solution
    assert solution.global_read_vector_width * ELEMENT_BYTES[in_dtype] == 16, solution.name


GFX950 = get_target("gfx950")


@pytest.mark.parametrize("in_dtype", ["f16", pytest.param("bf16", marks=pytest.mark.slow)])
def test_gfx950_picks_its_double_k_instructions(in_dtype):
    """gfx950's f16/bf16 matrix peak is its double-K MFMAs' rate (the gfx942 ones reach half of it,
    ir/kernel_mfma.py `peak_share`): its picks use them, the gfx942 picks cannot; the 256^3 pick
    runs every RUNTIME_SIZES problem on the host within the dot-product error bound
    (assert_gemm_close) and its gfx950 assembly issues the instruction."""
    compute = DTYPES[in_dtype][1]
    picks = {size: pick(GemmProblem.from_op(gemm_call(size, size, size, in_dtype, compute)), GFX950).solution
             for size in (256, 4096)}
    assert all(s.spec.k == 16 and s.spec.targets == ("gfx950",) for s in picks.values()), picks
    assert pick(GemmProblem.from_op(gemm_call(4096, 4096, 4096, in_dtype, compute)), GFX942).solution.spec.k == 8
    assert_runs_every_runtime_size(picks[256].name, in_dtype, False, False, GFX950)
    kernel = gemm_kernel(gemm_call(256, 256, 256, in_dtype, compute), picks[256], "g")
    assert re.search(rf"^\s+{picks[256].spec.gfx942_mnemonic}\s", amdgpu.assembly(kernel, "gfx950"), re.M)
