"""libs/solver's routines, called directly (library_call solver.*): each kernel against its numpy
reference (routines.py) and against LAPACK's definitions, a whole stack in one launch, and one
compiled kernel for every problem size.

Error model: an unblocked factorization or substitution of order n in precision eps has a backward
error of at most about n eps ||A|| (Higham, Accuracy and Stability of Numerical Algorithms, 9.3 for
LU, 10.1 for Cholesky, 8.1 for triangular systems), so each test bounds
||A - factors|| / (||A|| n eps) (or the residual's) by 4; the kernel and the reference differ only in
the order of their sums, so they agree to the same bound.
"""
import numpy as np
import pytest

import cdnajit as cj
from cdnajit.frontend.tracing import bind
from cdnajit.libs.solver.routines import geqrf_reference, getrf_reference, getri_reference, getrs_reference, laswp_reference, \
    lapmr_reference, potrf_reference, potrs_reference, trsm_reference, trtri_reference
from cdnajit.runtime import launch

DTYPES = [np.float32, np.float64]
BOUND = 4


def call(routine, *operands, **attrs):
    return bind("library_call", list(operands), {"library": "solver", "routine": routine, "solution": "", **attrs})


def eps(dtype):
    return np.finfo(dtype).eps


def relative(residual, scale, n, dtype):
    """max over the stack of ||residual|| / (||scale|| n eps), Frobenius norms (a zero scale counts as
    tiny, so a zero matrix's nonzero residual fails rather than giving NaN)."""
    return np.max(np.linalg.norm(residual, axis=(-2, -1)) / (np.maximum(np.linalg.norm(scale, axis=(-2, -1)), 1e-300)
                                                              * max(n, 1) * eps(dtype)))


def unpacked_lu(lu):
    k = min(lu.shape[-2:])
    l = np.tril(lu[..., :k], -1) + np.eye(lu.shape[-2], k)
    return l, np.triu(lu[..., :k, :])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch,m,n", [(1, 1, 1), (3, 5, 5), (70, 7, 4), (2, 4, 9), (2, 33, 33)])
def test_getrf_factors_p_a_as_l_u(dtype, batch, m, n):
    a = np.random.default_rng(m * n).standard_normal((batch, m, n)).astype(dtype)
    lu, pivots, permutation = cj.jit(lambda x: tuple(call("getrf", x)))(a)
    assert relative(a[np.arange(batch)[:, None], permutation] - np.matmul(*unpacked_lu(lu)), a, n, dtype) <= BOUND
    want_lu, want_pivots, want_permutation = getrf_reference(a)
    np.testing.assert_array_equal(pivots, want_pivots)   # the same pivots: first largest magnitude
    np.testing.assert_array_equal(permutation, want_permutation)
    assert relative(lu - want_lu, a, n, dtype) <= BOUND


def test_getrf_of_a_singular_matrix_keeps_its_zero_pivot():
    """getf2: a zero pivot stays in U and its column of L is not scaled (no division by zero)."""
    a = np.array([[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]])
    lu, pivots, _ = cj.jit(lambda x: tuple(call("getrf", x)))(a)
    want_lu, want_pivots, _ = getrf_reference(a)
    np.testing.assert_array_equal(pivots, want_pivots)
    np.testing.assert_allclose(lu, want_lu, rtol=0, atol=4 * eps(np.float64))
    assert np.isfinite(lu).all() and np.prod(np.diagonal(lu, axis1=1, axis2=2)) == 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch,n", [(1, 1), (5, 6), (130, 4), (2, 40)])
def test_potrf_factors_a_as_l_l_transposed(dtype, batch, n):
    x = np.random.default_rng(n).standard_normal((batch, n, n))
    a = (x @ np.swapaxes(x, 1, 2) + n * np.eye(n)).astype(dtype)
    upper_junk = a + np.triu(np.full((n, n), 7.0, dtype), 1)   # potrf reads the lower triangle only
    (l,) = cj.jit(lambda x: tuple(call("potrf", x)))(upper_junk)
    assert np.all(np.triu(l, 1) == 0)
    assert relative(a - l @ np.swapaxes(l, 1, 2), a, n, dtype) <= BOUND
    assert relative(l - potrf_reference(a), a, n, dtype) <= BOUND


def test_potrf_of_an_indefinite_matrix_is_nan_from_the_failing_column():
    a = np.array([[[4.0, 2.0, 0.0], [2.0, -3.0, 1.0], [0.0, 1.0, 2.0]]])
    (l,) = cj.jit(lambda x: tuple(call("potrf", x)))(a)
    assert l[0, 0, 0] == 2.0 and l[0, 1, 0] == 1.0 and np.isnan(l[0, 1, 1]) and np.isnan(l[0, 2, 2])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_trsm_solves_each_triangle_and_transpose(dtype, lower, trans, unit):
    batch, n, k = 3, 9, 70
    rng = np.random.default_rng(int(lower) + 2 * int(trans) + 4 * int(unit))
    # A well-conditioned triangle (a dominant diagonal), junk in the other triangle, which must not be read.
    a = (rng.standard_normal((batch, n, n)) + 3 * n * np.eye(n) * (not unit)).astype(dtype)
    x = rng.standard_normal((batch, n, k)).astype(dtype)
    (y,) = cj.jit(lambda a, x: tuple(call("trsm", a, x, lower=lower, trans=trans, unit_diagonal=unit)))(a, x)
    triangle = np.tril(a) if lower else np.triu(a)
    if unit:
        triangle = triangle * (1 - np.eye(n, dtype=dtype)) + np.eye(n, dtype=dtype)
    op_a = np.swapaxes(triangle, 1, 2) if trans else triangle
    residual = op_a.astype(np.float64) @ y - x
    scale = np.linalg.norm(op_a, axis=(1, 2))[:, None, None] * np.abs(y).max() + np.abs(x).max()
    assert np.max(np.abs(residual) / (scale * n * eps(dtype))) <= BOUND
    np.testing.assert_allclose(y, trsm_reference(a, x, lower, trans, unit), rtol=BOUND * n * eps(dtype),
                               atol=BOUND * n * eps(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_getrs_solves_with_getrf_factors(dtype):
    a = (np.random.default_rng(5).standard_normal((70, 6, 6)) + 3 * np.eye(6)).astype(dtype)
    x = np.random.default_rng(6).standard_normal((70, 6, 2)).astype(dtype)
    lu, _, permutation = getrf_reference(a)
    (y,) = cj.jit(lambda lu, p, x: tuple(call("getrs", lu, p, x)))(lu, permutation, x)
    residual = a.astype(np.float64) @ y - x
    assert relative(residual, a, 6, dtype) / max(np.abs(y).max(), 1) <= BOUND
    np.testing.assert_allclose(y, getrs_reference(lu, permutation, x), rtol=0, atol=BOUND * 6 * eps(dtype) * np.abs(y).max())


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
@pytest.mark.parametrize("batch,n,k", [(1, 257, 1), (2, 300, 3)])
def test_getrs_of_few_columns_takes_a_workgroup_per_column(dtype, batch, n, k):
    """Long rows and few columns: each row's dot product spread over a workgroup, the same answer
    as the reference's substitutions to BOUND n eps (a different order of the sums)."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal((batch, n, n)) + 2 * np.sqrt(n) * np.eye(n)
    x = rng.standard_normal((batch, n, k))
    if np.issubdtype(dtype, np.complexfloating):
        a, x = a + 1j * rng.standard_normal(a.shape), x + 1j * rng.standard_normal(x.shape)
    a, x = a.astype(dtype), x.astype(dtype)
    lu, _, permutation = getrf_reference(a)
    compiled = cj.jit(lambda lu, p, x: tuple(call("getrs", lu, p, x))).lower(lu, permutation, x).compile()
    assert [r.solution for r in compiled.kernels] == ["workgroup_per_column"]
    (y,) = compiled(lu, permutation, x)
    residual = a.astype(np.complex128) @ y - x
    assert relative(residual, a, n, dtype) / np.abs(y).max() <= BOUND
    np.testing.assert_allclose(y, getrs_reference(lu, permutation, x), rtol=0, atol=BOUND * n * eps(dtype) * np.abs(y).max())


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
@pytest.mark.parametrize("batch,m,n", [(1, 300, 32), (2, 64, 100), (3, 70, 33)])
def test_geqrf_of_tall_panels_takes_a_workgroup_per_matrix(dtype, batch, m, n):
    """Few tall panels: each step's reflection spread over a workgroup a column per work-item (100
    columns: two blocks of work-items; 33: one work-item past the first step's columns), the same
    packed factors and tau as the reference's geqr2 to BOUND n eps, and R as LAPACK's (numpy); a zero
    column gives tau = 0."""
    rng = np.random.default_rng(m + n)
    a = rng.standard_normal((batch, m, n))
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(a.shape)
    a = a.astype(dtype)
    a[0, :, 3] = 0
    compiled = cj.jit(lambda x: tuple(call("geqrf", x))).lower(a).compile()
    assert [r.solution for r in compiled.kernels] == ["workgroup_per_matrix"]
    qr, tau = compiled(a)
    want_qr, want_tau = geqrf_reference(a)
    size = max(m, n)
    np.testing.assert_allclose(qr, want_qr, rtol=0, atol=BOUND * size * eps(dtype) * np.abs(a).max())
    np.testing.assert_allclose(tau, want_tau, rtol=0, atol=BOUND * size * eps(dtype))
    assert tau[0, 3] == 0
    r = np.triu(qr)[:, :min(m, n)]
    want_r = np.linalg.qr(a.astype(np.complex128), "r")
    np.testing.assert_allclose(r, want_r, rtol=0, atol=BOUND * size * eps(dtype) * np.abs(a).max())


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)])
def test_getri_inverts_from_getrf_factors(dtype):
    """A^-1 A = I to BOUND n eps cond(A) (the inverse's error is a solve's, Higham 14.3), equal to getrs
    of the identity (the same substitutions) to BOUND n eps ||A^-1||."""
    n = 7
    a = (np.random.default_rng(7).standard_normal((70, n, n)) + 3 * np.eye(n)).astype(dtype)
    lu, _, permutation = getrf_reference(a)
    (x,) = cj.jit(lambda lu, p: tuple(call("getri", lu, p)))(lu, permutation)
    condition = np.linalg.cond(a.astype(np.float64))[:, None, None]
    assert np.max(np.abs(x.astype(np.float64) @ a - np.eye(n)) / (condition * n * eps(dtype))) <= BOUND
    np.testing.assert_allclose(x, getri_reference(lu, permutation), rtol=0,
                               atol=BOUND * n * eps(dtype) * np.abs(x).max())


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)])
@pytest.mark.parametrize("lower", [True, False])
def test_potrs_solves_with_a_cholesky_factor_in_either_triangle(dtype, lower):
    """A x = b with A = L L^T given as L (lower) or U = L^T (upper; junk in the other triangle, which
    must not be read): the residual within BOUND n eps ||A|| ||x||, the reference's answer to BOUND n eps."""
    n = 9
    x0 = np.random.default_rng(8).standard_normal((3, n, n))
    a = x0 @ np.swapaxes(x0, 1, 2) + n * np.eye(n)
    l = np.linalg.cholesky(a)
    c = (l + np.triu(np.full((n, n), 5.0), 1)) if lower else (np.swapaxes(l, 1, 2) + np.tril(np.full((n, n), 5.0), -1))
    c = c.astype(dtype)
    b = np.random.default_rng(9).standard_normal((3, n, 4)).astype(dtype)
    (y,) = cj.jit(lambda c, b: tuple(call("potrs", c, b, lower=lower)))(c, b)
    residual = a @ y.astype(np.float64) - b
    assert relative(residual, a, n, dtype) / np.abs(y).max() <= BOUND
    np.testing.assert_allclose(y, potrs_reference(c, b, lower), rtol=0, atol=BOUND * n * eps(dtype) * np.abs(y).max())


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_trtri_inverts_a_triangle(dtype, lower, unit):
    """X op A = I for the triangle (junk in the other one and, when unit, on the diagonal) to BOUND n eps
    cond; X is triangular as A, with exact zeros in the other triangle; the reference to BOUND n eps."""
    n = 11
    rng = np.random.default_rng(10 + 2 * int(lower) + int(unit))
    a = (rng.standard_normal((4, n, n)) + 3 * n * np.eye(n) * (not unit)).astype(dtype)
    (x,) = cj.jit(lambda a: tuple(call("trtri", a, lower=lower, unit_diagonal=unit)))(a)
    triangle = np.tril(a) if lower else np.triu(a)
    if unit:
        triangle = triangle * (1 - np.eye(n, dtype=dtype)) + np.eye(n, dtype=dtype)
    assert np.all((np.triu(x, 1) if lower else np.tril(x, -1)) == 0)
    condition = np.linalg.cond(triangle.astype(np.float64))[:, None, None]
    assert np.max(np.abs(x.astype(np.float64) @ triangle - np.eye(n)) / (condition * n * eps(dtype))) <= BOUND
    np.testing.assert_allclose(x, trtri_reference(a, lower, unit), rtol=0,
                               atol=BOUND * n * eps(dtype) * np.abs(x).max())


def test_laswp_and_lapmr_follow_lapack_row_swaps():
    pivots = np.array([[2, 2, 3, 3], [0, 3, 3, 3]], np.int32)
    permutation, inverse = cj.jit(lambda p: tuple(call("laswp", p, rows=5)))(pivots)
    want_permutation, want_inverse = laswp_reference(pivots, 5)
    np.testing.assert_array_equal(permutation, want_permutation)
    np.testing.assert_array_equal(permutation[0], [2, 0, 3, 1, 4])
    np.testing.assert_array_equal(inverse, want_inverse)
    x = np.arange(2 * 5 * 70, dtype=np.float64).reshape(2, 5, 70)
    (rows,) = cj.jit(lambda x, p: tuple(call("lapmr", x, p, first=0, columns=70)))(x, permutation[:, 1:4])
    np.testing.assert_array_equal(rows, lapmr_reference(x, permutation[:, 1:4], 0, 70))
    np.testing.assert_array_equal(rows, np.take_along_axis(x, permutation[:, 1:4, None].astype(np.int64), axis=1))
    # A window of columns, read where it lies in x's rows.
    (window,) = cj.jit(lambda x, p: tuple(call("lapmr", x, p, first=3, columns=66)))(x, permutation[:, 1:4])
    np.testing.assert_array_equal(window, rows[:, :, 3:69])


def test_a_stack_of_10000_matrices_is_one_launch_per_routine():
    """rocSOLVER's _batched form: 10 000 4x4 factorizations are one launch of one kernel."""
    a = np.random.default_rng(1).standard_normal((10000, 4, 4)).astype(np.float32)
    compiled = cj.jit(lambda x: tuple(call("getrf", x))).lower(a).compile()
    schedule = compiled.as_text("schedule")
    assert schedule.count("= launch ") == 1 and "grid 157 x 64" in schedule, schedule
    lu, _, permutation = compiled(a)
    assert relative(a[np.arange(10000)[:, None], permutation] - np.matmul(*unpacked_lu(lu)), a, 4, np.float32) <= BOUND


@pytest.fixture
def library_compiles(tmp_path, monkeypatch):
    """An empty compile cache, and the names of the library kernels (with arguments) LLVM compiles."""
    monkeypatch.setenv("CDNAJIT_CACHE_DIR", str(tmp_path))
    names = []
    compile_for_real = launch.compile_objects
    monkeypatch.setattr(launch, "compile_objects", lambda kernels: names.extend(
        kernel.name for kernel in kernels if kernel.arguments) or compile_for_real(kernels))
    return names


def test_a_new_size_compiles_no_solver_kernel(library_compiles):
    """Sizes and batch are scalar parameters: getrf at a second shape loads the first one's object code."""
    factor = cj.jit(lambda x: tuple(call("getrf", x)))
    for shape in [(2, 6, 6), (5, 11, 3)]:
        a = np.random.default_rng(0).standard_normal(shape)
        lu, _, permutation = factor(a)
        assert relative(a[np.arange(shape[0])[:, None], permutation] - np.matmul(*unpacked_lu(lu)), a, 11,
                        np.float64) <= BOUND
    assert len(library_compiles) == 1, library_compiles


def test_the_routines_check_their_operands():
    bad = """
func @f(%0: f32[2,3,3], %1: f64[2,3,4]) -> (f32[2,3,4]) {
  %2 = library_call(%0, %1) {library = "solver", routine = "trsm", solution = "", lower = true, trans = false, unit_diagonal = false} : f32[2,3,4]
  return %2
}"""
    with pytest.raises(cj.ParseError, match="operands differ in dtype"):
        cj.ir.parser.parse(bad)
    with pytest.raises(cj.TracingTypeError, match="potrf takes square matrices"):
        cj.jit(lambda x: call("potrf", x)[0])(np.ones((1, 2, 3)))


@pytest.mark.slow
def test_a_new_size_compiles_no_gesvd_kernel(library_compiles):
    """svd's library kernels (gebrd, bdsqr, lasr, orgqr) at a second shape load the first one's object code."""
    svd = cj.jit(lambda x: cj.numpy.linalg.svd(x, full_matrices=False))
    for shape in [(2, 20, 17), (1, 33, 31)]:
        a = np.random.default_rng(0).standard_normal(shape)
        u, s, vh = svd(a)
        assert relative(a - (u * s[:, None, :]) @ vh, a, shape[1], np.float64) <= BOUND
        assert len(library_compiles) == 4, library_compiles
