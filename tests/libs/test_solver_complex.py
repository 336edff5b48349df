"""libs/solver's complex routines (c64, c128: LAPACK's c and z routines), called directly: getrf,
getrs, getri, potrf (Hermitian), potrs, trsm (conjugate transpose), trtri, geqrf, orgqr and syevj
(Hermitian) against their numpy references, scipy's LAPACK (the same pivots) and the routines' defining identities.

Error model: as tests/libs/test_solver.py's, n eps ||A|| backward errors (Higham 9.3, 10.1, 8.1),
with complex arithmetic's constants (Higham 3.6: a complex product or division is within a small
multiple, at most 2 sqrt(2) + 1 for Smith's division, of a real one's error), so BOUND is 4 times
test_solver's. getrf/getrs/getri's c128 case runs in make test (the frontend's complex tests cover
the other kernels there), everything else under test-all.
"""
import numpy as np
import pytest
import scipy.linalg

import cdnajit as cj
from cdnajit.libs.solver.routines import geqrf_reference, getrf_reference, getri_reference, getrs_reference, \
    orgqr_reference, potrf_reference, potrs_reference, syevj_reference, trsm_reference, trtri_reference

from .test_solver import call, eps, relative, unpacked_lu

DTYPES = [np.complex128, pytest.param(np.complex64, marks=pytest.mark.slow)]
BOUND = 16


def complex_normal(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def hermitian_transpose(x):
    return np.conj(np.swapaxes(x, -1, -2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_complex_getrf_getrs_getri(dtype):
    """P A = L U with scipy's pivots (i_amax by |re| + |im|), A Y = X and A^-1 A = I within BOUND n eps
    (times cond for the inverse, Higham 14.3), each equal to its reference to the same bound."""
    batch, n = 70, 7
    rng = np.random.default_rng(1)
    a = complex_normal(rng, (batch, n, n), dtype)
    lu, pivots, permutation = cj.jit(lambda x: tuple(call("getrf", x)))(a)
    assert lu.dtype == dtype
    assert relative(a[np.arange(batch)[:, None], permutation] - np.matmul(*unpacked_lu(lu)), a, n, dtype) <= BOUND
    np.testing.assert_array_equal(pivots, getrf_reference(a)[1])
    np.testing.assert_array_equal(pivots, np.stack([scipy.linalg.lu_factor(m)[1] for m in a]))
    x = complex_normal(rng, (batch, n, 3), dtype)
    (y,) = cj.jit(lambda lu, p, x: tuple(call("getrs", lu, p, x)))(lu, permutation, x)
    condition = np.linalg.cond(a.astype(np.complex128))[:, None, None]
    assert np.max(np.abs(a.astype(np.complex128) @ y - x) / (np.abs(x).max() * condition * n * eps(dtype))) <= BOUND
    np.testing.assert_allclose(y, getrs_reference(lu, permutation, x), rtol=0,
                               atol=BOUND * n * eps(dtype) * np.abs(y).max())
    (inverse,) = cj.jit(lambda lu, p: tuple(call("getri", lu, p)))(lu, permutation)
    assert np.max(np.abs(inverse.astype(np.complex128) @ a - np.eye(n)) / (condition * n * eps(dtype))) <= BOUND
    np.testing.assert_allclose(inverse, getri_reference(lu, permutation), rtol=0,
                               atol=BOUND * n * eps(dtype) * np.abs(inverse).max())


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("lower", [True, False])
def test_complex_potrf_and_potrs_of_hermitian_matrices(dtype, lower):
    """A = L L^H from A's lower triangle (junk above it and in the diagonal's imaginary part, which are
    not read), a real positive diagonal, equal to numpy's cholesky; potrs with L or U = L^H solves
    A y = x; all within BOUND n eps."""
    batch, n = 5, 9
    rng = np.random.default_rng(2)
    x0 = complex_normal(rng, (batch, n, n), np.complex128)
    a = x0 @ hermitian_transpose(x0) + n * np.eye(n)
    junk = a + np.triu(np.full((n, n), 7 - 3j), 1) + 5j * np.eye(n)
    (l,) = cj.jit(lambda x: tuple(call("potrf", x)))(junk.astype(dtype))
    assert np.all(np.triu(l, 1) == 0) and np.all(np.diagonal(l, axis1=1, axis2=2).imag == 0)
    assert relative(a - l @ hermitian_transpose(l), a, n, dtype) <= BOUND
    assert relative(l - np.linalg.cholesky(a), a, n, dtype) <= BOUND
    assert relative(l - potrf_reference(junk.astype(dtype)), a, n, dtype) <= BOUND
    c = (l if lower else hermitian_transpose(l)).astype(dtype)
    b = complex_normal(rng, (batch, n, 4), dtype)
    (y,) = cj.jit(lambda c, b: tuple(call("potrs", c, b, lower=lower)))(c, b)
    assert relative(a @ y - b, a, n, dtype) / np.abs(y).max() <= BOUND
    np.testing.assert_allclose(y, potrs_reference(c, b, lower), rtol=0, atol=BOUND * n * eps(dtype) * np.abs(y).max())


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("trans", [False, True])
def test_complex_trsm_and_trtri(dtype, trans):
    """op(A) Y = X with op(A) = A^H when trans (LAPACK's 'C'), residual within BOUND n eps ||A|| ||Y||;
    trtri's X A = I within BOUND n eps cond; both equal to their references."""
    batch, n, k = 3, 9, 5
    rng = np.random.default_rng(3 + int(trans))
    a = complex_normal(rng, (batch, n, n), dtype) + (3 * n * np.eye(n)).astype(dtype)
    x = complex_normal(rng, (batch, n, k), dtype)
    (y,) = cj.jit(lambda a, x: tuple(call("trsm", a, x, lower=True, trans=trans, unit_diagonal=False)))(a, x)
    op_a = hermitian_transpose(np.tril(a)) if trans else np.tril(a)
    residual = op_a.astype(np.complex128) @ y - x
    scale = np.linalg.norm(op_a, axis=(1, 2))[:, None, None] * np.abs(y).max() + np.abs(x).max()
    assert np.max(np.abs(residual) / (scale * n * eps(dtype))) <= BOUND
    np.testing.assert_allclose(y, trsm_reference(a, x, True, trans, False), rtol=0,
                               atol=BOUND * n * eps(dtype) * np.abs(y).max())
    (inverse,) = cj.jit(lambda a: tuple(call("trtri", a, lower=not trans, unit_diagonal=False)))(a)
    triangle = np.triu(a) if trans else np.tril(a)
    condition = np.linalg.cond(triangle.astype(np.complex128))[:, None, None]
    assert np.max(np.abs(inverse.astype(np.complex128) @ triangle - np.eye(n)) / (condition * n * eps(dtype))) <= BOUND
    np.testing.assert_allclose(inverse, trtri_reference(a, not trans, False), rtol=0,
                               atol=BOUND * n * eps(dtype) * np.abs(inverse).max())


def test_complex_lapmr_moves_whole_entries():
    x = (np.arange(2 * 5 * 3) + 1j * np.arange(2 * 5 * 3)[::-1]).reshape(2, 5, 3).astype(np.complex64)
    permutation = np.array([[4, 0, 2], [1, 1, 3]], np.int32)
    (rows,) = cj.jit(lambda x, p: tuple(call("lapmr", x, p, first=1, columns=2)))(x, permutation)
    np.testing.assert_array_equal(rows, np.take_along_axis(x[:, :, 1:], permutation[:, :, None].astype(np.int64), axis=1))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_geqrf_orgqr_and_syevj_against_their_references(dtype):
    """zgeqr2/zung2r and Hermitian Jacobi, step for step as the references: the packed factors, tau, Q
    and the eigenvalues to BOUND n eps, the eigenvectors (the same rotations, but sensitive to the
    eigenvalue gaps, Davis-Kahan) to 10 times that; Q R = A and A V = V diag(w)."""
    rng = np.random.default_rng(5)
    n = 6
    a = complex_normal(rng, (3, 8, n), dtype)
    a[0, 1:, 0] = 0   # nothing below the diagonal: alpha complex still reflects (zlarfg)
    qr, tau = cj.jit(lambda x: tuple(call("geqrf", x)))(a)
    want_qr, want_tau = geqrf_reference(a)
    np.testing.assert_allclose(qr, want_qr, rtol=0, atol=BOUND * n * eps(dtype) * np.abs(a).max())
    np.testing.assert_allclose(tau, want_tau, rtol=0, atol=BOUND * n * eps(dtype))
    (q,) = cj.jit(lambda x, t: tuple(call("orgqr", x, t, columns=8)))(qr, tau)
    np.testing.assert_allclose(q, orgqr_reference(qr, tau, 8), rtol=0, atol=BOUND * 8 * eps(dtype))
    assert relative(q[:, :, :n] @ np.triu(qr[:, :n]) - a, a, 8, dtype) <= BOUND
    x = complex_normal(rng, (4, n, n), dtype)
    h = (x + hermitian_transpose(x)) / 2
    w, v, _ = cj.jit(lambda x: tuple(call("syevj", x)))(h)
    want_w, want_v, _ = syevj_reference(h)
    assert w.dtype == np.finfo(dtype).dtype
    assert relative(h @ v - v * w[:, None, :], h, n, dtype) <= BOUND
    np.testing.assert_allclose(w, want_w, rtol=0, atol=BOUND * n * eps(dtype) * np.abs(h).max())
    np.testing.assert_allclose(v, want_v, rtol=0, atol=BOUND * n * eps(dtype) * 10 * np.abs(h).max())
