"""cdnajit.numpy.linalg and cdnajit.scipy.linalg against numpy, on stacks of matrices in f32 and f64.

Error model (Higham, Accuracy and Stability of Numerical Algorithms): LU with partial pivoting,
Cholesky and triangular substitution are backward stable, with backward errors of order n eps ||A||
(growth factors of random matrices being small), so each test bounds a normwise backward error,
||A X - B|| / ((||A|| ||X|| + ||B||) n eps) for solves and ||A - factors|| / (||A|| n eps) for
factorizations, by BOUND; det and slogdet, computed from the same LU as numpy's, agree with numpy's
to n eps times the matrix's condition number (relative), the matrices being made well conditioned.
The blocked algorithms (frontend/cnp/linalg_solver.py) run at small sizes with their block sizes
made small (`small_blocks`), so every path runs in a few kernels.
"""
import math

import numpy as np
import pytest
import scipy.linalg as scipy_linalg

import cdnajit as cj
import cdnajit.numpy as cnp
import cdnajit.scipy.linalg as csl
from cdnajit.frontend.cnp import linalg_solver

DTYPES = [np.float32, np.float64]
BOUND = 8


def eps(dtype):
    return np.finfo(dtype).eps


def norms(x):
    return np.linalg.norm(x.astype(np.float64), axis=(-2, -1))


def solve_backward_error(a, x, b, dtype):
    """max over the stack of ||A X - B|| / ((||A|| ||X|| + ||B||) n eps)."""
    a, x, b = (np.asarray(v, np.float64) for v in (a, x, b))
    n = max(a.shape[-1], 1)
    return np.max(norms(a @ x - b) / ((norms(a) * norms(x) + norms(b)) * n * eps(dtype)))


def factor_backward_error(a, product, dtype):
    n = max(a.shape[-1], 1)
    return np.max(norms(np.asarray(a, np.float64) - product) / (norms(a) * n * eps(dtype)))


def matrices(shape, dtype, seed=0, shift=None):
    """Random matrices made well conditioned by a diagonal shift (of sqrt(n) by default)."""
    rng = np.random.default_rng(seed)
    n = shape[-1]
    return (rng.standard_normal(shape) + (math.sqrt(n) if shift is None else shift) * np.eye(n)).astype(dtype)


def positive_definite(shape, dtype, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape)
    return (x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


@pytest.fixture
def small_blocks(monkeypatch):
    """The recursive algorithms at small sizes: getrf/potrf leaves of 4 columns, trsm leaves of 8 rows,
    few columns below 3."""
    monkeypatch.setattr(linalg_solver, "BLOCK", 8)
    monkeypatch.setattr(linalg_solver, "SMALL", 4)
    monkeypatch.setattr(linalg_solver, "FEW_COLUMNS", 3)


# ---- solve, inv, det, slogdet, cholesky --------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape,b_shape", [((5, 5), (5,)), ((3, 6, 6), (3, 6, 2)), ((2, 1, 4, 4), (3, 4, 1)),
                                             ((1, 1), (1, 3))])
def test_solve_on_stacks(dtype, a_shape, b_shape):
    a = matrices(a_shape, dtype)
    b = np.random.default_rng(1).standard_normal(b_shape).astype(dtype)
    x = cnp.linalg.solve(a, b)
    want = np.linalg.solve(a, b) if len(b_shape) > 1 else np.linalg.solve(a, b[:, None])[:, 0]
    assert x.shape == want.shape and x.dtype == dtype
    bx = x if len(b_shape) > 1 else x[..., None]
    bb = b if len(b_shape) > 1 else b[:, None]
    assert solve_backward_error(a, bx, np.broadcast_to(bb, bx.shape), dtype) <= BOUND


@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_det_slogdet_on_a_stack(dtype):
    a = matrices((4, 7, 7), dtype, seed=2, shift=0)
    a[1] *= -1   # a negative determinant
    inverse = cnp.linalg.inv(a)
    assert solve_backward_error(a, inverse, np.broadcast_to(np.eye(7), a.shape), dtype) <= BOUND
    condition = np.linalg.cond(a.astype(np.float64))
    tolerance = BOUND * 7 * eps(dtype) * condition
    np.testing.assert_allclose(cnp.linalg.det(a), np.linalg.det(a.astype(np.float64)), rtol=np.max(tolerance))
    sign, logdet = cnp.linalg.slogdet(a)
    want_sign, want_logdet = np.linalg.slogdet(a.astype(np.float64))
    np.testing.assert_array_equal(sign, want_sign)
    np.testing.assert_allclose(logdet, want_logdet, rtol=0, atol=np.max(tolerance))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_on_a_stack(dtype, upper):
    a = positive_definite((3, 9, 9), dtype)
    factor = cnp.linalg.cholesky(a, upper=upper)
    l = np.swapaxes(factor, -1, -2) if upper else factor
    assert np.all(np.triu(l, 1) == 0)
    assert factor_backward_error(a, l.astype(np.float64) @ np.swapaxes(l, -1, -2), dtype) <= BOUND


def test_integers_are_promoted_as_jnp_promotes_them():
    a = np.array([[2, 1], [1, 3]], np.int32)
    x = cnp.linalg.solve(a, np.array([1, 2], np.int32))
    assert x.dtype == np.float32
    np.testing.assert_allclose(x, [0.2, 0.6], rtol=4 * eps(np.float32))
    assert cnp.linalg.det(np.eye(3, dtype=np.int64)).dtype == np.float64


def test_singular_matrices_give_infs_and_nans_not_exceptions():
    singular = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]]])
    assert np.all(cnp.linalg.det(singular) == 0)
    sign, logdet = cnp.linalg.slogdet(singular)
    np.testing.assert_array_equal(sign, [0, 0])
    np.testing.assert_array_equal(logdet, [-np.inf, -np.inf])
    assert not np.isfinite(cnp.linalg.solve(singular, np.ones((2, 2)))).all()
    assert not np.isfinite(cnp.linalg.inv(singular)).all()
    # Not positive definite (indefinite, or semidefinite): a factor of NaNs, as JAX gives.
    bad = np.array([[[1.0, 2.0], [2.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]], [[4.0, 0.0], [0.0, 1.0]]])
    l = cnp.linalg.cholesky(bad)
    assert np.isnan(l[:2]).all() and np.array_equal(l[2], [[2.0, 0.0], [0.0, 1.0]])


def test_empty_matrices_and_empty_stacks():
    assert cnp.linalg.det(np.zeros((0, 0))) == 1.0
    assert cnp.linalg.inv(np.zeros((3, 0, 0))).shape == (3, 0, 0)
    assert cnp.linalg.det(np.zeros((0, 4, 4))).shape == (0,)
    assert cnp.linalg.solve(np.zeros((0, 3, 3)), np.zeros((0, 3, 2))).shape == (0, 3, 2)
    assert cnp.linalg.cholesky(np.zeros((2, 0, 0))).shape == (2, 0, 0)
    assert [x.shape for x in csl.lu(np.zeros((0, 3)))] == [(0, 0), (0, 0), (0, 3)]


def test_bad_input_names_the_shapes():
    with pytest.raises(cj.TracingValueError, match=r"solve: a must be square matrices \(\.\.\., n, n\), "
                                                   r"got shape \(3, 4\)"):
        cnp.linalg.solve(np.ones((3, 4)), np.ones(3))
    with pytest.raises(cj.TracingValueError, match=r"solve: b must be \(\.\.\., 3\) or \(\.\.\., 3, k\) for a of "
                                                   r"shape \(3, 3\), got shape \(4,\)"):
        cnp.linalg.solve(np.eye(3), np.ones(4))
    with pytest.raises(cj.TracingValueError, match=r"inv: a must be an array of matrices .* got shape \(3,\)"):
        cnp.linalg.inv(np.ones(3))
    with pytest.raises(cj.TracingValueError, match=r"the batch dimensions of a \(2, 3, 3\) and b \(4, 3, 1\)"):
        cnp.linalg.solve(np.ones((2, 3, 3)), np.ones((4, 3, 1)))
    with pytest.raises(cj.TracingValueError, match=r"qr: mode must be 'reduced', 'complete', 'r' or 'raw', got 'full'"):
        cnp.linalg.qr(np.eye(2), mode="full")


# ---- the blocked algorithms ------------------------------------------------------------------------------

@pytest.mark.slow
def test_blocked_solve_and_cholesky(small_blocks):
    """n = 19 split on multiples of 4 (trsm: of 8): uneven halves and ragged leaves in getrf, potrf and trsm."""
    dtype = np.float64
    a = matrices((2, 19, 19), dtype, seed=3)
    b = np.random.default_rng(4).standard_normal((2, 19, 5)).astype(dtype)
    x = cj.jit(lambda a, b: cnp.linalg.solve(a, b))(a, b)
    assert solve_backward_error(a, x, b, dtype) <= BOUND
    s = positive_definite((2, 19, 19), dtype)
    l = cj.jit(lambda s: cnp.linalg.cholesky(s))(s)
    assert factor_backward_error(s, l.astype(np.float64) @ np.swapaxes(l, 1, 2), dtype) <= BOUND


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_blocked_lu_and_triangular_solves_compiled_and_interpreted(small_blocks, dtype):
    a = matrices((2, 19, 19), dtype, seed=3)
    b = np.random.default_rng(4).standard_normal((2, 19, 5)).astype(dtype)
    x = cj.jit(lambda a, b: cnp.linalg.solve(a, b))(a, b)
    interpreted = cj.jit(lambda a, b: cnp.linalg.solve(a, b), backend="interpret")(a, b)
    assert solve_backward_error(a, interpreted, b, dtype) <= BOUND
    np.testing.assert_allclose(x, interpreted, rtol=0, atol=BOUND * 19 * eps(dtype) * np.abs(x).max() * 19)
    p, l, u = cj.jit(csl.lu)(a)
    assert factor_backward_error(a, p @ l.astype(np.float64) @ u, dtype) <= BOUND
    for lower in (True, False):
        for trans in (0, 1):
            t = np.tril(a) if lower else np.triu(a)
            y = cj.jit(lambda t, b: csl.solve_triangular(t, b, lower=lower, trans=trans))(t, b)
            op_t = np.swapaxes(t, 1, 2) if trans else t
            assert solve_backward_error(op_t, y, b, dtype) <= BOUND
    # inv by getri above BLOCK: U^-1 (trsm) of L^-1 (recursive trtri), columns permuted.
    inverse = cj.jit(cnp.linalg.inv)(a)
    assert solve_backward_error(a, inverse, np.broadcast_to(np.eye(19), a.shape), dtype) <= BOUND
    for lower in (True, False):
        for unit in (True, False):
            t = cj.jit(lambda a: linalg_solver.trtri(cnp.asarray(a), lower=lower, unit_diagonal=unit))(a)
            triangle = np.tril(a) if lower else np.triu(a)
            if unit:
                triangle = triangle * (1 - np.eye(19)) + np.eye(19)
            assert np.all((np.triu(t, 1) if lower else np.tril(t, -1)) == 0)
            assert solve_backward_error(triangle, t, np.broadcast_to(np.eye(19), a.shape), dtype) <= BOUND


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_lu_leaves_narrowed_to_the_panel_budget(monkeypatch, dtype):
    """LU's leaves narrowed by rows (lu_leaf): at 37 rows 8 columns fit the budget, at the Schur
    complements' 18 rows and fewer 16 do, so one factorization has leaves of both widths; LAPACK's
    pivots, P A = L U, and det, slogdet (lu_diagonal: no assembly) and solve from the same pivots."""
    monkeypatch.setattr(linalg_solver, "SMALL", 16)
    monkeypatch.setattr(linalg_solver, "LU_PANEL_MIN", 4)
    monkeypatch.setattr(linalg_solver, "LU_PANEL_BYTES", 37 * 8 * np.dtype(dtype).itemsize)
    n = 37
    a = matrices((n, n), np.float64, seed=5)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * matrices((n, n), np.float64, seed=6, shift=0)
    a = a.astype(dtype)
    reference = a.astype(np.complex128 if np.issubdtype(dtype, np.complexfloating) else np.float64)
    lu, pivots = cj.jit(csl.lu_factor)(a)
    np.testing.assert_array_equal(pivots, scipy_linalg.lu_factor(reference)[1])
    # The helpers above are real; these norms take complex matrices.
    relative = lambda residual, scale: np.linalg.norm(residual) / (np.linalg.norm(scale) * n * eps(dtype))
    p, l, u = cj.jit(csl.lu)(a)
    assert relative(reference - p @ l.astype(reference.dtype) @ u, reference) <= BOUND
    np.testing.assert_allclose(cj.jit(cnp.linalg.det)(a), np.linalg.det(reference), rtol=BOUND * n * eps(dtype))
    sign, logdet = cj.jit(cnp.linalg.slogdet)(a)
    want_sign, want_logdet = np.linalg.slogdet(reference)
    np.testing.assert_allclose(sign, want_sign, rtol=BOUND * n * eps(dtype))
    np.testing.assert_allclose(logdet, want_logdet, rtol=0, atol=BOUND * n * eps(dtype))
    b = np.random.default_rng(7).standard_normal((n, 3)).astype(dtype)
    x = cj.jit(cnp.linalg.solve)(a, b).astype(reference.dtype)
    assert relative(reference @ x - b, np.linalg.norm(reference) * np.linalg.norm(x) + np.linalg.norm(b)) <= BOUND


# ---- scipy.linalg ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_scipy_lu_factor_and_solve(dtype):
    a = matrices((3, 6, 6), dtype, seed=5, shift=0)
    b = np.random.default_rng(6).standard_normal((3, 6)).astype(dtype)
    lu, piv = csl.lu_factor(a)
    assert piv.dtype == np.int32 and piv.shape == (3, 6)
    l, u = np.tril(lu, -1) + np.eye(6), np.triu(lu)
    for i in range(3):   # LAPACK's ipiv: the swaps, in order, make P A
        pa = a[i].astype(np.float64)
        for k, p in enumerate(piv[i]):
            pa[[k, p]] = pa[[p, k]]
        assert factor_backward_error(pa, l[i] @ u[i], dtype) <= BOUND
    for trans in (0, 1, 2):
        x = csl.lu_solve((lu, piv), b, trans=trans)
        op_a = np.swapaxes(a, 1, 2) if trans else a
        assert solve_backward_error(op_a, x[..., None], b[..., None], dtype) <= BOUND


def test_scipy_lu_of_rectangular_matrices():
    for shape in [(5, 3), (3, 5), (2, 4, 4)]:
        a = np.random.default_rng(7).standard_normal(shape)
        p, l, u = csl.lu(a)
        k = min(shape[-2:])
        assert l.shape == shape[:-1] + (k,) and u.shape == shape[:-2] + (k, shape[-1])
        assert factor_backward_error(a, p @ l @ u, np.float64) <= BOUND
        pl, u2 = csl.lu(a, permute_l=True)
        np.testing.assert_array_equal(u, u2)
        assert factor_backward_error(a, pl @ u2, np.float64) <= BOUND


@pytest.mark.parametrize("lower", [False, True])
def test_scipy_cho_factor_and_solve(lower):
    a = positive_definite((2, 5, 5), np.float64, seed=8)
    b = np.random.default_rng(9).standard_normal((2, 5, 3))
    c, flag = csl.cho_factor(a, lower=lower)
    assert bool(flag) == lower and np.all((np.triu(c, 1) if lower else np.tril(c, -1)) == 0)
    x = csl.cho_solve((c, flag), b)
    assert solve_backward_error(a, x, b, np.float64) <= BOUND
    assert solve_backward_error(a, csl.solve(a, b, assume_a="pos"), b, np.float64) <= BOUND


def test_scipy_solve_triangular_reads_one_triangle():
    a = matrices((4, 4), np.float64, seed=10)
    b = np.arange(4.0)
    x = csl.solve_triangular(a, b, lower=True, unit_diagonal=True)
    t = np.tril(a, -1) + np.eye(4)
    np.testing.assert_allclose(t @ x, b, atol=BOUND * 4 * eps(np.float64) * np.abs(t).sum() * np.abs(x).max())


def test_scipy_block_diag_and_toeplitz():
    np.testing.assert_array_equal(csl.block_diag(np.ones((2, 2)), 3, [4, 5]),
                                  [[1, 1, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 3, 0, 0], [0, 0, 0, 4, 5]])
    np.testing.assert_array_equal(csl.toeplitz([1, 2, 3], [9, 4, 5, 6]), [[1, 4, 5, 6], [2, 1, 4, 5], [3, 2, 1, 4]])
    np.testing.assert_array_equal(csl.toeplitz([1, 2]), [[1, 2], [2, 1]])


# ---- norms, powers, tensors and the array API names ------------------------------------------------------

def test_norms_of_every_ord():
    x = np.random.default_rng(11).standard_normal((3, 4, 5))
    for ord in [None, 1, 2, 3, 0.5, 0, np.inf, -np.inf]:
        np.testing.assert_allclose(cnp.linalg.norm(x, ord=ord, axis=-1), np.linalg.norm(x, ord=ord, axis=-1),
                                   rtol=1e-13)
    for ord in [None, "fro", 1, -1, np.inf, -np.inf]:
        np.testing.assert_allclose(cnp.linalg.norm(x, ord=ord, axis=(1, 2)), np.linalg.norm(x, ord=ord, axis=(1, 2)),
                                   rtol=1e-13)
        np.testing.assert_allclose(cnp.linalg.norm(x[0], ord=ord), np.linalg.norm(x[0], ord=ord), rtol=1e-13)
    np.testing.assert_allclose(cnp.linalg.norm(x), np.linalg.norm(x), rtol=1e-13)
    assert cnp.linalg.norm(x, 1, axis=(1, 2), keepdims=True).shape == (3, 1, 1)
    with pytest.raises(cj.TracingValueError, match="norm: invalid ord 3 for a matrix norm"):
        cnp.linalg.norm(x[0], 3)


@pytest.mark.slow
def test_cond_matrix_power_tensorinv_tensorsolve():
    a = matrices((2, 4, 4), np.float64, seed=12)
    for p in ["fro", 1, -1, np.inf, -np.inf]:
        np.testing.assert_allclose(cnp.linalg.cond(a, p), np.linalg.cond(a, p), rtol=1e-12)
    for n in [-3, 0, 1, 5]:
        np.testing.assert_allclose(cnp.linalg.matrix_power(a, n), np.linalg.matrix_power(a, n), rtol=1e-11, atol=1e-13)
    t = matrices((6, 6), np.float64, seed=13).reshape(6, 2, 3)
    np.testing.assert_allclose(cnp.linalg.tensorinv(t, ind=1), np.linalg.tensorinv(t, ind=1), rtol=1e-12, atol=1e-14)
    b = np.arange(6.0)
    np.testing.assert_allclose(cnp.linalg.tensorsolve(t, b), np.linalg.tensorsolve(t, b), rtol=1e-12, atol=1e-14)


def test_products_and_array_api_names():
    rng = np.random.default_rng(14)
    a, b, c = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal(5)
    np.testing.assert_allclose(cnp.linalg.multi_dot([a, b, c]), a @ b @ c, rtol=1e-13)
    np.testing.assert_allclose(cnp.linalg.matmul(a, b), a @ b, rtol=1e-13)
    np.testing.assert_allclose(cnp.linalg.outer(c, c), np.outer(c, c), rtol=1e-15)
    x = rng.standard_normal((2, 3, 3))
    np.testing.assert_allclose(cnp.linalg.trace(x), np.trace(x, axis1=-2, axis2=-1), rtol=1e-14)
    np.testing.assert_array_equal(cnp.linalg.diagonal(x, offset=1), np.diagonal(x, 1, -2, -1))
    np.testing.assert_array_equal(cnp.linalg.matrix_transpose(x), np.swapaxes(x, -1, -2))
    np.testing.assert_allclose(cnp.linalg.cross(x[0], x[1]), np.cross(x[0], x[1]), rtol=1e-14)
    np.testing.assert_allclose(cnp.linalg.vecdot(x, x), np.sum(x * x, axis=-1), rtol=1e-14)
    np.testing.assert_allclose(cnp.linalg.tensordot(a, b, axes=1), a @ b, rtol=1e-13)
    with pytest.raises(cj.TracingValueError, match=r"outer: x1 and x2 must be 1-d, got shapes \(3, 4\) and \(5,\)"):
        cnp.linalg.outer(a, c)
