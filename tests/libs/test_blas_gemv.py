"""The matrix-vector kernel (libs/blas/gemv.py) on the host against a float64 reference (i8: exact): odd output
lengths, K below, at and across the wave (64) and the workgroup (4 rows), batches, f64, f32, f16 and
bf16 (accumulated in f32), i8 (in i32), alpha, beta with C, bias and activations; through `cj.jit`, the routing
(matrix contiguous along K -> the gemv kernel, the other layout -> a GEMM solution); one kernel
text for every size; no spills on gfx942.

Tolerance (`assert_gemv_close`), from the kernel's summation order: lane x sums its ceil(K / 64)
products in order in the accumulation dtype, then the wave adds the 64 partial sums in a pairwise
tree of depth 6, so the sum's error is at most (ceil(K / 64) + 6) eps_acc sum|a||x|; alpha, C and
bias add three roundings; the activations have a slope of at most 1.13 and the math library's
error is within 4 ulp of the accumulation dtype; the final rounding adds eps_result |y|."""
import math

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.codegen import amdgpu
from cdnajit.ir.targets import get_target
from cdnajit.ir.types import NUMPY_DTYPES
from cdnajit.libs.blas.gemv import GEMV, gemv_kernel, takes_gemv
from cdnajit.libs.blas.generator import GemmProblem, gemm_call
from cdnajit.runtime.launch import compile_kernel

RESULT = {"f64": ("f64", "f64"), "f32": ("f32", "f32"), "f16": ("f16", "f32"), "bf16": ("bf16", "f32")}
ACTIVATIONS = {"none": lambda v: v, "bias": lambda v: v, "bias_relu": lambda v: np.maximum(v, 0),
               "tanh": np.tanh, "bias_sigmoid": lambda v: 1 / (1 + np.exp(-v))}
# (M, N, K, trans_a, trans_b, batch): y = A x (N = 1, A row-major) and x^T B (M = 1, B transposed);
# K of 1, below 64, 64, across it, and several waves' worth; outputs across the 4 rows of a workgroup.
PROBLEMS = [(1, 1, 1, False, False, 1), (7, 1, 63, False, False, 1), (5, 1, 64, False, True, 3),
            (1, 13, 65, False, True, 1), (1, 4, 130, True, True, 2), (33, 1, 257, False, False, 1)]


def assert_gemv_close(got, op, arrays):
    attrs = op.attrs
    a, b = (x.astype(np.float64) for x in arrays[:2])
    op_a = np.swapaxes(a, -1, -2) if attrs["trans_a"] else a
    op_b = np.swapaxes(b, -1, -2) if attrs["trans_b"] else b
    k = op_a.shape[-1]
    want, scale = attrs["alpha"] * (op_a @ op_b), abs(attrs["alpha"]) * (np.abs(op_a) @ np.abs(op_b))
    rest = [x.astype(np.float64) for x in arrays[2:]]
    if attrs["beta"] != 0:
        c = rest.pop(0)
        want, scale = want + attrs["beta"] * c, scale + np.abs(attrs["beta"] * c)
    if attrs["epilogue"].startswith("bias"):
        want, scale = want + rest[0], scale + np.abs(rest[0])
    want = ACTIVATIONS[attrs["epilogue"]](want)
    eps_acc = float(ml_dtypes.finfo(NUMPY_DTYPES[attrs["compute_dtype"]]).eps)
    eps_result = float(ml_dtypes.finfo(NUMPY_DTYPES[attrs["result_dtype"]]).eps)
    bound = 1.13 * (math.ceil(k / 64) + 6 + 3) * eps_acc * scale + 4 * eps_acc * np.abs(want) \
        + eps_result * np.abs(want) + np.finfo(np.float32).tiny
    assert got.shape == want.shape and got.dtype == NUMPY_DTYPES[attrs["result_dtype"]]
    error = np.abs(got.astype(np.float64) - want)
    assert np.all(error <= bound), f"worst error {np.max(error - bound)} over the bound"


def run_gemv(in_dtype, epilogue, beta, problems, seed=0):
    """Every problem through the gemv kernel of its variant (dtype, epilogue, C, which operand is the
    matrix): one kernel text per orientation (y = A x, x^T B), whatever the sizes, so one compile each."""
    rng = np.random.default_rng(seed)
    texts = set()
    for m, n, k, trans_a, trans_b, batch in problems:
        op = gemm_call(m, n, k, in_dtype, RESULT[in_dtype][0], batch=batch, trans_a=trans_a, trans_b=trans_b,
                       alpha=float(rng.choice([1.0, -1.5])), beta=beta, epilogue=epilogue)
        assert takes_gemv(GemmProblem.from_op(op))
        arrays = [rng.standard_normal(v.type.shape).astype(NUMPY_DTYPES[v.type.dtype]) for v in op.operands]
        d = np.full(op.result.type.shape, -7, NUMPY_DTYPES[op.attrs["result_dtype"]])
        kernel = gemv_kernel(op, GEMV, "gemv")
        texts.add(kernel.code_text())
        compile_kernel(kernel)(*arrays, d)
        assert_gemv_close(d, op, arrays)
    assert len(texts) == len({n == 1 for _, n, *_ in problems})


def test_gemv_f32_over_odd_sizes_and_batches():
    run_gemv("f32", "none", 0, PROBLEMS)


@pytest.mark.slow
@pytest.mark.parametrize("in_dtype, epilogue, beta", [
    ("f64", "none", 0), ("f64", "bias", 0.5), ("f32", "bias_relu", 1.0), ("f32", "tanh", 0),
    ("f16", "none", 0), ("f16", "bias_sigmoid", 0.25), ("bf16", "none", 0), ("bf16", "bias", 1.0)])
def test_gemv_dtypes_and_epilogues(in_dtype, epilogue, beta):
    run_gemv(in_dtype, epilogue, beta, PROBLEMS, seed=len(epilogue))


def jit_inputs():
    rng = np.random.default_rng(1)
    return (rng.standard_normal((70, 129)).astype(np.float32), rng.standard_normal(129).astype(np.float32),
            rng.standard_normal(70).astype(np.float32))


def test_jit_runs_x_dot_w_on_the_gemv_kernel():
    """x @ w, x contiguous along K: the gemv kernel, named in the report with why."""
    x, w, _ = jit_inputs()
    compiled = cj.jit(lambda w, x: cnp.dot(x, w)).lower(w, x).compile()
    assert f"{GEMV.name} (matrix-vector kernel" in compiled.report()
    np.testing.assert_allclose(compiled(w, x), x.astype(np.float64) @ w, rtol=0, atol=1e-4)


@pytest.mark.slow
def test_jit_keeps_v_dot_x_on_a_gemm_solution():
    """v @ x, x contiguous along the output: a GEMM solution."""
    x, _, v = jit_inputs()
    compiled = cj.jit(lambda v, x: cnp.dot(v, x)).lower(v, x).compile()
    assert GEMV.name not in compiled.report() and "Cijk_" in compiled.report()
    np.testing.assert_allclose(compiled(v, x), v.astype(np.float64) @ x, rtol=0, atol=1e-4)


def test_gfx942_gemv_kernel_has_no_spills():
    op = gemm_call(4096, 1, 512, "f32", "f32")
    resources = amdgpu.resources(gemv_kernel(op, GEMV, "gemv"), get_target("gfx942"))
    assert resources.vgpr_spill_count == 0 and resources.sgpr_spill_count == 0


@pytest.mark.slow
def test_gemv_int8_is_exact():
    """i8 inputs accumulate in i32: exact (the values here cannot overflow)."""
    rng = np.random.default_rng(3)
    for m, n, k, trans_a, trans_b, batch in PROBLEMS:
        op = gemm_call(m, n, k, "i8", "i32", batch=batch, trans_a=trans_a, trans_b=trans_b, alpha=3, beta=-1,
                       epilogue="bias_relu")
        arrays = [rng.integers(-9, 10, v.type.shape).astype(NUMPY_DTYPES[v.type.dtype]) for v in op.operands]
        d = np.zeros(op.result.type.shape, np.int32)
        compile_kernel(gemv_kernel(op, GEMV, "gemv"))(*arrays, d)
        a, b, c, bias = (x.astype(np.int64) for x in arrays)
        op_a = np.swapaxes(a, -1, -2) if trans_a else a
        op_b = np.swapaxes(b, -1, -2) if trans_b else b
        np.testing.assert_array_equal(d, np.maximum(3 * (op_a @ op_b) - c + bias, 0))
