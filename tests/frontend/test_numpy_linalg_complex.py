"""cdnajit.numpy.linalg and cdnajit.scipy.linalg on stacks of complex matrices (c64, c128) against
numpy and scipy (LAPACK's c and z routines).

Error model: test_numpy_linalg.py's (normwise backward errors within BOUND n eps; det, slogdet and
factors compared with numpy's to n eps times the condition number, the matrices made well
conditioned), with complex arithmetic's constants (Higham 3.6: a complex product or division is within
a small multiple of a real one's error), so BOUND is twice test_numpy_linalg's; QR's R equals
LAPACK's (zgeqrf: the same reflections, a real beta) to BOUND n eps ||A||. c128's core cases run
in make test; c64 and the scipy functions and blocked paths under test-all.
"""
import numpy as np
import pytest
import scipy.linalg

import cdnajit as cj
import cdnajit.numpy as cnp
import cdnajit.scipy.linalg as csl

from .test_numpy_linalg import eps, small_blocks  # noqa: F401 (a fixture)

DTYPES = [np.complex128, pytest.param(np.complex64, marks=pytest.mark.slow)]
BOUND = 16


def norms(x):
    return np.linalg.norm(np.asarray(x, np.complex128), axis=(-2, -1))


def solve_backward_error(a, x, b, dtype):
    """max over the stack of ||A X - B|| / ((||A|| ||X|| + ||B||) n eps)."""
    a, x, b = (np.asarray(v, np.complex128) for v in (a, x, b))
    return np.max(norms(a @ x - b) / ((norms(a) * norms(x) + norms(b)) * a.shape[-1] * eps(dtype)))


def factor_backward_error(a, product, dtype):
    return np.max(norms(np.asarray(a, np.complex128) - product) / (norms(a) * a.shape[-1] * eps(dtype)))


def complex_normal(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def complex_matrices(shape, dtype, seed=0):
    """Random complex matrices made well conditioned by a diagonal shift of sqrt(2 n)."""
    n = shape[-1]
    return (complex_normal(shape, np.complex128, seed) + np.sqrt(2 * n) * np.eye(n)).astype(dtype)


def hermitian_transpose(x):
    return np.conj(np.swapaxes(x, -1, -2))


def hermitian_positive_definite(shape, dtype, seed=0):
    x = complex_matrices(shape, np.complex128, seed)
    return (x @ hermitian_transpose(x) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def relative_to(got, want, n, dtype, condition=1.0):
    return np.max(np.abs(np.asarray(got) - want) / (np.abs(want).max() * n * eps(dtype) * condition))


@pytest.mark.parametrize("dtype", DTYPES)
def test_complex_solve_inv_det_slogdet_cholesky(dtype):
    a = complex_matrices((2, 3, 6, 6), dtype)
    b = complex_normal((2, 3, 6, 2), dtype, 1)
    n = 6
    condition = np.max(np.linalg.cond(a.astype(np.complex128)))
    x = cj.jit(cnp.linalg.solve)(a, b)
    assert x.dtype == dtype and x.shape == (2, 3, 6, 2)
    assert solve_backward_error(a.astype(np.complex128), x, b, dtype) <= BOUND
    inverse = cj.jit(cnp.linalg.inv)(a)
    assert np.max(np.abs(inverse.astype(np.complex128) @ a - np.eye(n))) / (condition * n * eps(dtype)) <= BOUND
    det = cj.jit(cnp.linalg.det)(a)
    assert det.dtype == dtype and relative_to(det, np.linalg.det(a.astype(np.complex128)), n, dtype, condition) <= BOUND
    sign, logabsdet = cj.jit(cnp.linalg.slogdet)(a)
    want_sign, want_logabsdet = np.linalg.slogdet(a.astype(np.complex128))
    assert sign.dtype == dtype and logabsdet.dtype == np.finfo(dtype).dtype
    assert relative_to(sign, want_sign, n, dtype, condition) <= BOUND
    assert np.max(np.abs(logabsdet - want_logabsdet)) <= BOUND * n * eps(dtype) * condition
    h = hermitian_positive_definite((3, n, n), dtype)
    l = cj.jit(cnp.linalg.cholesky)(h)
    assert np.all(np.triu(l, 1) == 0) and np.all(np.diagonal(l, axis1=-2, axis2=-1).imag == 0)
    assert factor_backward_error(h.astype(np.complex128), l.astype(np.complex128) @ hermitian_transpose(l),
                                 dtype) <= BOUND
    u = cj.jit(lambda h: cnp.linalg.cholesky(h, upper=True))(h)
    np.testing.assert_array_equal(u, hermitian_transpose(l))


@pytest.mark.slow
def test_complex_singular_matrix_gives_infs_not_an_exception():
    a = np.array([[1 + 1j, 2 + 2j], [2 + 2j, 4 + 4j]])
    assert cj.jit(cnp.linalg.det)(a) == 0
    assert not np.isfinite(cj.jit(cnp.linalg.inv)(a)).all()


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_scipy_lu_cholesky_and_triangular_solves(dtype):
    """lu, lu_factor (scipy's pivots), lu_solve and solve_triangular for trans N, T and C, cho_factor and
    cho_solve in either triangle: backward errors within BOUND n eps, factors to n eps cond of scipy's."""
    n = 7
    a = complex_matrices((n, n), dtype, seed=2)
    b = complex_normal((n, 3), dtype, 3)
    lu, pivots = cj.jit(csl.lu_factor)(a)
    want_lu, want_pivots = scipy.linalg.lu_factor(a.astype(np.complex128))
    np.testing.assert_array_equal(pivots, want_pivots)
    condition = np.linalg.cond(a.astype(np.complex128))
    assert relative_to(lu, want_lu, n, dtype, condition) <= BOUND
    p, l, u = cj.jit(csl.lu)(a)
    assert factor_backward_error(a, p @ l.astype(np.complex128) @ u, dtype) <= BOUND
    for trans, op in [(0, lambda m: m), (1, lambda m: m.T), (2, lambda m: np.conj(m.T))]:
        x = cj.jit(lambda lu, piv, b: csl.lu_solve((lu, piv), b, trans=trans))(lu, pivots, b)
        assert solve_backward_error(op(a).astype(np.complex128), x, b, dtype) <= BOUND, trans
        for lower in (True, False):
            triangle = np.tril(a) if lower else np.triu(a)
            x = cj.jit(lambda a, b: csl.solve_triangular(a, b, trans=trans, lower=lower))(a, b)
            assert solve_backward_error(op(triangle).astype(np.complex128), x, b, dtype) <= BOUND, (trans, lower)
    h = hermitian_positive_definite((n, n), dtype, seed=4)
    for lower in (True, False):
        factor = cj.jit(lambda h: csl.cho_factor(h, lower=lower)[0])(h)
        x = cj.jit(lambda c, b: csl.cho_solve((c, lower), b))(factor, b)
        assert solve_backward_error(h.astype(np.complex128), x, b, dtype) <= BOUND, lower
        np.testing.assert_allclose(factor, scipy.linalg.cholesky(h, lower=lower), rtol=0,
                                   atol=BOUND * n * eps(dtype) * np.abs(factor).max())


@pytest.mark.slow
def test_complex_blocked_solve_inv_and_cholesky(small_blocks):
    """n = 19 split on multiples of 4 (trsm: of 8): the recursive getrf, getri, potrf (adjoint Schur
    complements), trsm (conjugate transposes) on complex matrices."""
    n, dtype = 19, np.complex128
    a = complex_matrices((2, n, n), dtype, seed=5)
    b = complex_normal((2, n, 5), dtype, 6)
    assert solve_backward_error(a, cj.jit(cnp.linalg.solve)(a, b), b, dtype) <= BOUND
    condition = np.max(np.linalg.cond(a))
    assert np.max(np.abs(cj.jit(cnp.linalg.inv)(a) @ a - np.eye(n))) / (condition * n * eps(dtype)) <= BOUND
    h = hermitian_positive_definite((2, n, n), dtype, seed=7)
    l = cj.jit(cnp.linalg.cholesky)(h)
    assert np.all(np.triu(l, 1) == 0)
    assert factor_backward_error(h, l @ hermitian_transpose(l), dtype) <= BOUND
    factor = cj.jit(lambda h: csl.cho_factor(h, lower=False)[0])(h[0])
    x = cj.jit(lambda c, b: csl.cho_solve((c, False), b))(factor, b[0])
    assert solve_backward_error(h[0], x, b[0], dtype) <= BOUND
    lu, pivots = cj.jit(csl.lu_factor)(a[0])
    x = cj.jit(lambda lu, piv, b: csl.lu_solve((lu, piv), b, trans=1))(lu, pivots, b[0])
    assert solve_backward_error(a[0].T, x, b[0], dtype) <= BOUND


def unitarity(q, dtype):
    """||Q^H Q - I|| / (n eps)."""
    q = np.asarray(q, np.complex128)
    return np.max(norms(hermitian_transpose(q) @ q - np.eye(q.shape[-1])) / (q.shape[-2] * eps(dtype)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 7, 5), pytest.param((4, 6), marks=pytest.mark.slow)])
def test_complex_qr_against_lapack(dtype, shape):
    """Q R = A, Q unitary, R equal to numpy's (zgeqrf's) R; modes reduced, complete and r."""
    a = complex_normal(shape, dtype, 8)
    n = max(shape[-2:])
    for mode in ("reduced", "complete"):
        q, r = cj.jit(lambda x: cnp.linalg.qr(x, mode))(a)
        assert q.dtype == dtype and r.dtype == dtype
        assert factor_backward_error(a, q.astype(np.complex128) @ r, dtype) <= BOUND and unitarity(q, dtype) <= BOUND
        want = np.linalg.qr(a.astype(np.complex128), mode)[1]
        np.testing.assert_allclose(r, want, rtol=0, atol=BOUND * n * eps(dtype) * np.abs(a).max())
    r = cj.jit(lambda x: cnp.linalg.qr(x, "r"))(a)
    np.testing.assert_allclose(r, np.linalg.qr(a.astype(np.complex128), "r"), rtol=0,
                               atol=BOUND * n * eps(dtype) * np.abs(a).max())


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(2, 19, 11), (9, 17)])
def test_complex_recursive_qr_at_small_sizes(monkeypatch, shape):
    """The recursive geqrf (compact WY with V^H, T from the halves) and the blocked orgqr on complex
    matrices, leaves of 4 columns, blocks of 8 (orgqr's on their corners): Q R = A, Q unitary, and the packed factors and tau equal to the unblocked
    kernel's (the same reflections); a zero column gives tau = 0."""
    from cdnajit.frontend.cnp import linalg_solver
    dtype = np.complex128
    a = complex_normal(shape, dtype, 9)
    a[..., 2] = 0
    unblocked_raw, unblocked_tau = cnp.linalg.qr(a, "raw")
    monkeypatch.setattr(linalg_solver, "SMALL", 4)
    monkeypatch.setattr(linalg_solver, "QR_WY_COLUMNS", 8)
    monkeypatch.setattr(linalg_solver, "BLOCK", 8)
    for mode in ("reduced", "complete"):
        q, r = cj.jit(lambda x: cnp.linalg.qr(x, mode))(a)
        assert factor_backward_error(a, q @ r, dtype) <= BOUND and unitarity(q, dtype) <= BOUND
    raw, tau = cj.jit(lambda x: cnp.linalg.qr(x, "raw"))(a)
    n = max(shape[-2:])
    np.testing.assert_allclose(raw, unblocked_raw, rtol=0, atol=BOUND * n * eps(dtype) * np.abs(a).max())
    np.testing.assert_allclose(tau, unblocked_tau, rtol=0, atol=BOUND * n * eps(dtype))
    assert (tau[..., 2] == 0).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_complex_eigh_of_hermitian_stacks(dtype):
    """w real and ascending, A V = V diag(w) and V^H V = I within BOUND n eps, w equal to numpy's
    eigvalsh to BOUND n eps ||A||_2 (Weyl); one triangle read (conjugated) without symmetrizing."""
    n = 7
    x = complex_normal((2, 3, n, n), dtype, 10)
    h = (x + hermitian_transpose(x)) / 2
    w, v = cj.jit(cnp.linalg.eigh)(x)
    assert w.dtype == np.finfo(dtype).dtype and v.dtype == dtype and np.all(np.diff(w, axis=-1) >= 0)
    hv = h.astype(np.complex128)
    assert factor_backward_error(hv, (v * w[..., None, :]).astype(np.complex128) @ hermitian_transpose(v),
                                 dtype) <= BOUND
    assert unitarity(v, dtype) <= BOUND
    scale = np.linalg.norm(hv, 2, axis=(-2, -1))[..., None]
    assert np.max(np.abs(w - np.linalg.eigvalsh(hv)) / (scale * n * eps(dtype))) <= BOUND
    for uplo in ("L", "U"):
        got = cj.jit(lambda x: cnp.linalg.eigvalsh(x, UPLO=uplo, symmetrize_input=False))(x[0, 0])
        want = np.linalg.eigvalsh(x[0, 0].astype(np.complex128), UPLO=uplo)
        assert np.max(np.abs(got - want)) / (np.abs(want).max() * n * eps(dtype)) <= BOUND, uplo


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 6, 4), pytest.param((3, 5), marks=pytest.mark.slow)])
def test_complex_svd(dtype, shape):
    """s real, descending and equal to numpy's to BOUND n eps ||A||_2 (Weyl); U diag(s) V^H = A, U and V
    unitary within BOUND n eps; full and reduced."""
    a = complex_normal(shape, dtype, 11)
    k, n = min(shape[-2:]), max(shape[-2:])
    want = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    for full_matrices in (True, False):
        u, s, vh = cj.jit(lambda x: cnp.linalg.svd(x, full_matrices=full_matrices))(a)
        assert s.dtype == np.finfo(dtype).dtype and u.dtype == dtype and np.all(np.diff(s, axis=-1) <= 0)
        assert np.max(np.abs(s - want)) / (want.max() * n * eps(dtype)) <= BOUND
        product = (u[..., :, :k] * s[..., None, :]).astype(np.complex128) @ vh[..., :k, :]
        assert factor_backward_error(a, product, dtype) <= BOUND
        assert unitarity(u, dtype) <= BOUND and unitarity(hermitian_transpose(vh), dtype) <= BOUND


@pytest.mark.slow
def test_complex_pinv_lstsq_rank_norm_and_cond():
    """Over the complex svd: pinv and lstsq against numpy's to BOUND n eps cond (a rank-deficient matrix
    among them: rank and the cut singular value), the 2-norm, the nuclear norm and cond to BOUND n eps."""
    dtype, n = np.complex128, 6
    a = complex_normal((2, n, 4), dtype, 12)
    a[1, :, 3] = a[1, :, 0] * (2 - 1j)   # rank 3
    condition = np.linalg.cond(a[0])
    for got, want in [(cj.jit(cnp.linalg.pinv)(a[0]), np.linalg.pinv(a[0])),
                      (cj.jit(cnp.linalg.pinv)(a[1]), np.linalg.pinv(a[1]))]:
        assert relative_to(got, want, n, dtype, condition) <= BOUND
    np.testing.assert_array_equal(cj.jit(cnp.linalg.matrix_rank)(a), [4, 3])
    b = complex_normal((n, 2), dtype, 13)
    x, residuals, rank, s = cj.jit(cnp.linalg.lstsq)(a[0], b)
    want_x, want_residuals, _, _ = np.linalg.lstsq(a[0], b)
    assert rank == 4 and residuals.dtype == np.float64
    assert relative_to(x, want_x, n, dtype, condition) <= BOUND
    assert relative_to(residuals, want_residuals, n, dtype, condition) <= BOUND
    for ord in (2, -2, "nuc"):
        got = cj.jit(lambda x: cnp.linalg.norm(x, ord, axis=(-2, -1)))(a)
        assert relative_to(got, np.linalg.norm(a, ord, axis=(-2, -1)), n, dtype) <= BOUND, ord
    assert relative_to(cj.jit(cnp.linalg.cond)(a[0]), np.linalg.cond(a[0]), n, dtype, condition) <= BOUND


@pytest.mark.slow
def test_complex_expm_against_scipy():
    """Pade 13 with scaling and squaring on complex stacks of norms 0.01, 1 and 30: forward error within
    8 n eps (1 + ||A||_1) of scipy's, relative (test_expm_against_scipy's model)."""
    n, dtype = 5, np.complex128
    a = complex_normal((3, n, n), dtype, 14) * np.array([0.01, 1, 30])[:, None, None]
    got = cj.jit(csl.expm)(a)
    for g, x in zip(got, a):
        want = scipy.linalg.expm(x)
        scale = 8 * n * eps(dtype) * (1 + np.linalg.norm(x, 1))
        assert np.max(np.abs(g - want)) / np.abs(want).max() <= scale


@pytest.mark.slow
def test_complex_derivatives_of_solve_inv_and_det():
    """Holomorphic rules: jvp against central differences (step h = 1e-7: error h^2 + eps / h, so 1e-7
    relative), vjp the (unconjugated, JAX's) transpose of jvp: <ct, J t> = <J^T ct, t> to 1e-12."""
    rng = np.random.default_rng(15)
    a = complex_matrices((4, 4), np.complex128, 15)
    t = complex_normal((4, 4), np.complex128, 16)
    b = complex_normal((4,), np.complex128, 17)
    h = 1e-7
    for function, reference in [(cnp.linalg.inv, np.linalg.inv), (cnp.linalg.det, np.linalg.det),
                                (lambda x: cnp.linalg.solve(x, b), lambda x: np.linalg.solve(x, b))]:
        _, tangent = cj.jvp(function, (a,), (t,))
        differences = (reference(a + h * t) - reference(a - h * t)) / (2 * h)
        assert np.max(np.abs(np.asarray(tangent) - differences)) <= 1e-7 * np.max(np.abs(differences))
        out, pull = cj.vjp(function, a)
        ct = rng.standard_normal(np.shape(out)) + 1j * rng.standard_normal(np.shape(out))
        (cotangent,) = pull(ct)
        assert abs(np.sum(ct * np.asarray(tangent)) - np.sum(np.asarray(cotangent) * t)) <= 1e-12 * np.max(
            np.abs(cotangent)) * np.max(np.abs(t)) * 16


def test_complex_factorization_vjps_transpose_their_jvps():
    """The reverse mode of the factorizations of complex matrices (their JVPs transposed) is the
    transpose of forward mode under JAX's pairing <u, v> = re sum(u v): re<ct, J t> = re<J^T ct, t>
    for random t and ct, to rounding (1e-12 relative to the products' sizes). JAX's values are
    checked in tests/transforms (complex_factorization_grads); eigh is checked here only."""
    rng = np.random.default_rng(20)
    h = hermitian_positive_definite((3, 3), np.complex128, 21)
    tall = complex_normal((4, 3), np.complex128, 22) + 2 * np.eye(4, 3)
    direction = complex_normal((3, 3), np.complex128, 23)
    cases = [(cnp.linalg.cholesky, h, direction + hermitian_transpose(direction)),
             (cnp.linalg.eigh, h, direction + hermitian_transpose(direction)),
             (cnp.linalg.slogdet, complex_matrices((3, 3), np.complex128, 24), direction),
             (cnp.linalg.qr, tall, complex_normal((4, 3), np.complex128, 25)),
             (lambda a: cnp.linalg.svd(a, full_matrices=False), tall, complex_normal((4, 3), np.complex128, 26)),
             (cnp.linalg.pinv, tall, complex_normal((4, 3), np.complex128, 27))]
    for function, a, t in cases:
        tangents = cj.jit(lambda a, t: cj.jvp(function, (a,), (t,))[1], backend="interpret")(a, t)
        leaves = cj.tree_util.tree_leaves(tangents)
        cts = [rng.standard_normal(np.shape(x)) + (1j * rng.standard_normal(np.shape(x)) if np.iscomplexobj(x) else 0)
               for x in leaves]
        (cotangent,) = cj.jit(lambda a, cts: cj.vjp(function, a)[1](
            cj.tree_util.tree_unflatten(cj.tree_util.tree_structure(tangents), cts)), backend="interpret")(a, cts)
        forward = sum(np.real(np.sum(c * np.asarray(x))) for c, x in zip(cts, leaves))
        backward = np.real(np.sum(np.asarray(cotangent) * t))
        scale = sum(np.sum(np.abs(c * np.asarray(x))) for c, x in zip(cts, leaves))
        assert abs(forward - backward) <= 1e-12 * scale, function


@pytest.mark.slow
def test_complex_cholesky_jvp_against_differences():
    """dL = L phi(L^-1 dA L^-H) for a Hermitian direction dA, against central differences of numpy's
    cholesky (step 1e-6: error h^2 + eps / h, so 1e-8 relative; bounded by 1e-7)."""
    h = hermitian_positive_definite((2, 4, 4), np.complex128, 18)
    x = complex_normal((2, 4, 4), np.complex128, 19)
    direction = (x + hermitian_transpose(x)) / 2
    step = 1e-6
    _, tangent = cj.jvp(cnp.linalg.cholesky, (h,), (direction,))
    differences = (np.linalg.cholesky(h + step * direction) - np.linalg.cholesky(h - step * direction)) / (2 * step)
    assert np.max(np.abs(np.asarray(tangent) - differences)) <= 1e-7 * np.max(np.abs(differences))


@pytest.mark.slow
def test_complex_eigh_jvp():
    """dw against central differences of numpy's eigvalsh (step 1e-6: 1e-7 relative), and the
    differentiated identity dA V + A dV = dV diag(w) + V diag(dw) to 1e-12 (the vectors' phases make
    differences of V itself meaningless)."""
    x = complex_normal((2, 5, 5), np.complex128, 20)
    a = (x + hermitian_transpose(x)) / 2
    y = complex_normal((2, 5, 5), np.complex128, 21)
    direction = (y + hermitian_transpose(y)) / 2
    step = 1e-6
    (w, v), (dw, dv) = cj.jvp(cnp.linalg.eigh, (a,), (direction,))
    differences = (np.linalg.eigvalsh(a + step * direction) - np.linalg.eigvalsh(a - step * direction)) / (2 * step)
    assert np.max(np.abs(np.asarray(dw) - differences)) <= 1e-7 * np.max(np.abs(differences))
    w, v, dw, dv = (np.asarray(t) for t in (w, v, dw, dv))
    identity = direction @ v + a @ dv - dv * w[:, None, :] - v * dw[:, None, :]
    assert np.max(np.abs(identity)) <= 1e-12 * np.max(np.abs(a)) * np.max(np.abs(dv))
