"""cdnajit.numpy.linalg's QR, symmetric eigen- and singular value decompositions (and what is built on
them: pinv, lstsq, matrix_rank, cond, the 2-norms) against numpy, on stacks in f32 and f64.

Error model: Householder QR and the Jacobi methods are backward stable (Higham, 19.3; Demmel and
Veselic, "Jacobi's method is more accurate than QR", 1992), with backward errors of order n eps ||A||
after their O(1) sweeps, so each test bounds ||A - factors|| / (||A|| n eps) and the departure from
orthogonality ||Q^T Q - I|| / (n eps) by BOUND. Eigen- and singular vectors are defined up to sign,
so they are checked through these identities; eigen- and singular values, perturbed by at most
||E||_2 (Weyl), agree with numpy's to BOUND n eps ||A||.
"""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
import cdnajit.scipy.linalg as csl
from cdnajit.frontend.cnp import linalg_solver
from cdnajit.frontend.tracing import bind
from cdnajit.libs.solver.routines import geqrf_reference, gesvdj_reference, orgqr_reference, syev_reference, \
    syevj_reference

DTYPES = [np.float32, np.float64]
# f32 repeats the f64 cases' paths with other kernels: in `make test-all` only.
DTYPES_FAST_F64 = [pytest.param(np.float32, marks=pytest.mark.slow), np.float64]
BOUND = 8


def eps(dtype):
    return np.finfo(dtype).eps


def norms(x):
    return np.linalg.norm(np.asarray(x, np.float64), axis=(-2, -1))


def backward_error(a, product, dtype):
    n = max(a.shape[-2:] + (1,))
    return np.max(norms(np.asarray(a, np.float64) - product) / (np.maximum(norms(a), 1e-300) * n * eps(dtype)))


def orthogonality(q, dtype):
    """||Q^T Q - I|| / (n eps) of a stack of matrices with orthonormal columns."""
    q = np.asarray(q, np.float64)
    n = max(q.shape[-2], 1)
    return np.max(norms(np.swapaxes(q, -1, -2) @ q - np.eye(q.shape[-1])) / (n * eps(dtype)))


def random(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES_FAST_F64)
@pytest.mark.parametrize("shape", [(7, 4), (3, 5), (2, 6, 6)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(dtype, shape, mode):
    a = random(shape, dtype)
    q, r = cnp.linalg.qr(a, mode=mode)
    want_q, want_r = np.linalg.qr(a, mode=mode)
    assert q.shape == want_q.shape and r.shape == want_r.shape and q.dtype == dtype
    assert np.all(np.tril(r, -1) == 0)
    assert backward_error(a, q.astype(np.float64) @ r, dtype) <= BOUND
    assert orthogonality(q, dtype) <= BOUND
    assert cnp.linalg.qr(a, mode="r").shape == np.linalg.qr(a, mode="r").shape


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_on_a_stack(dtype):
    x = random((2, 3, 9, 9), dtype, seed=1)
    w, v = cnp.linalg.eigh(x)
    s = ((x + np.swapaxes(x, -1, -2)) / 2).astype(np.float64)
    assert np.all(np.diff(w, axis=-1) >= 0)
    assert backward_error(s, (v * w[..., None, :]).astype(np.float64) @ np.swapaxes(v, -1, -2), dtype) <= BOUND
    assert orthogonality(v, dtype) <= BOUND
    scale = np.linalg.norm(s, 2, axis=(-2, -1))[..., None]
    assert np.max(np.abs(w - np.linalg.eigvalsh(s)) / (scale * 9 * eps(dtype))) <= BOUND
    np.testing.assert_array_equal(cnp.linalg.eigvalsh(x), w)


def test_eigh_reads_one_triangle_without_symmetrizing():
    a = random((5, 5), np.float64, seed=2)
    for uplo in ("L", "U"):
        w = cnp.linalg.eigvalsh(a, UPLO=uplo, symmetrize_input=False)
        np.testing.assert_allclose(w, np.linalg.eigvalsh(a, UPLO=uplo), rtol=0, atol=BOUND * 5 * eps(np.float64) * 10)
    w, v = csl.eigh(a, lower=False)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a, UPLO="U"), rtol=0, atol=BOUND * 5 * eps(np.float64) * 10)


@pytest.mark.parametrize("dtype", DTYPES_FAST_F64)
@pytest.mark.parametrize("shape", [(6, 4), (3, 7), (2, 5, 5)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd(dtype, shape, full_matrices):
    a = random(shape, dtype, seed=3)
    u, s, vh = cnp.linalg.svd(a, full_matrices=full_matrices)
    want_u, want_s, want_vh = np.linalg.svd(a, full_matrices=full_matrices)
    assert (u.shape, s.shape, vh.shape) == (want_u.shape, want_s.shape, want_vh.shape)
    k = min(shape[-2:])
    assert np.all(np.diff(s, axis=-1) <= 0)
    assert backward_error(a, (u[..., :k] * s[..., None, :]).astype(np.float64) @ vh[..., :k, :], dtype) <= BOUND
    assert orthogonality(u, dtype) <= BOUND and orthogonality(np.swapaxes(vh, -1, -2), dtype) <= BOUND
    scale = want_s[..., :1]
    assert np.max(np.abs(s - want_s) / (scale * max(shape) * eps(dtype))) <= BOUND
    np.testing.assert_array_equal(cnp.linalg.svdvals(a), s)


def test_rank_deficient_matrices():
    """Rank 2 in 6 x 5: two singular values above the rest by 1/eps; U stays orthonormal (its
    columns of zero singular values come from the QR completion), and pinv, lstsq and matrix_rank
    agree with numpy's."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 5))
    u, s, vh = cnp.linalg.svd(a)
    assert orthogonality(u, np.float64) <= BOUND and np.all(s[2:] <= 1e-14 * s[0])
    assert cnp.linalg.matrix_rank(a) == 2
    np.testing.assert_array_equal(cnp.linalg.matrix_rank(np.stack([a, np.eye(6, 5), np.zeros((6, 5))])), [2, 5, 0])
    np.testing.assert_allclose(cnp.linalg.pinv(a), np.linalg.pinv(a), rtol=0, atol=1e-13 * np.abs(np.linalg.pinv(a)).max())
    b = rng.standard_normal((6, 3))
    x, resid, rank, sv = cnp.linalg.lstsq(a, b)
    want_x, _, want_rank, want_sv = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(x, want_x, rtol=0, atol=1e-13 * np.abs(want_x).max())
    assert rank == want_rank
    np.testing.assert_allclose(resid, np.sum((b - a @ want_x) ** 2, axis=0), rtol=1e-12)


def test_singular_value_norms_and_cond():
    a = random((3, 4, 4), np.float64, seed=5)
    for ord in (2, -2, "nuc"):
        np.testing.assert_allclose(cnp.linalg.norm(a, ord, axis=(1, 2)), np.linalg.norm(a, ord, axis=(1, 2)),
                                   rtol=1e-13)
    for p in (None, 2, -2):
        np.testing.assert_allclose(cnp.linalg.cond(a, p), np.linalg.cond(a, p), rtol=1e-12)
    assert cnp.linalg.norm(a, 2, axis=(1, 2), keepdims=True).shape == (3, 1, 1)


def test_scipy_qr_and_svd():
    a = random((5, 3), np.float64, seed=6)
    q, r = csl.qr(a)
    assert q.shape == (5, 5) and r.shape == (5, 3) and backward_error(a, q @ r, np.float64) <= BOUND
    q, r = csl.qr(a, mode="economic")
    assert q.shape == (5, 3) and r.shape == (3, 3)
    (r,) = csl.qr(a, mode="r")
    assert r.shape == (5, 3)
    np.testing.assert_allclose(csl.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False), rtol=1e-13)


def test_empty_decompositions():
    assert [x.shape for x in cnp.linalg.qr(np.zeros((0, 3)))] == [(0, 0), (0, 3)]
    assert [x.shape for x in cnp.linalg.svd(np.zeros((2, 3, 0)))] == [(2, 3, 3), (2, 0), (2, 0, 0)]
    assert [x.shape for x in cnp.linalg.eigh(np.zeros((0, 2, 2)))] == [(0, 2), (0, 2, 2)]


# ---- the routines against their references -------------------------------------------------------------

def call(routine, *operands, **attrs):
    return bind("library_call", list(operands), {"library": "solver", "routine": routine, "solution": "", **attrs})


def test_the_decomposition_routines_match_their_references():
    """geqrf, orgqr, syevj and gesvdj compiled against routines.py's numpy references, which make the
    same rotations and reflections in the same order (the sums' order differs: BOUND n eps)."""
    a = random((3, 6, 4), np.float64, seed=7)
    qr, tau = cj.jit(lambda x: tuple(call("geqrf", x)))(a)
    want_qr, want_tau = geqrf_reference(a)
    tolerance = BOUND * 6 * eps(np.float64) * np.abs(a).max()
    np.testing.assert_allclose(qr, want_qr, rtol=0, atol=tolerance)
    np.testing.assert_allclose(tau, want_tau, rtol=0, atol=tolerance)
    (q,) = cj.jit(lambda x, t: tuple(call("orgqr", x, t, columns=6)))(qr, tau)
    np.testing.assert_allclose(q, orgqr_reference(qr, tau, 6), rtol=0, atol=tolerance)
    s, u, v = cj.jit(lambda x: tuple(call("gesvdj", x)))(a)
    want = gesvdj_reference(a)
    np.testing.assert_allclose(s, want[0], rtol=0, atol=tolerance)
    np.testing.assert_allclose(np.abs(u), np.abs(want[1]), rtol=0, atol=100 * tolerance)
    sym = a[:, :4] + np.swapaxes(a[:, :4], 1, 2)
    w, vectors, _ = cj.jit(lambda x: tuple(call("syevj", x)))(sym)
    np.testing.assert_allclose(w, syevj_reference(sym)[0], rtol=0, atol=tolerance)


def symmetric_cases(n, dtype):
    """A stack of symmetric matrices that stress a tridiagonal QR: random, the identity (every
    eigenvalue repeated, nothing to reduce), zero, a diagonal with repeated entries out of order,
    Wilkinson's W+ (pairs of eigenvalues equal to many digits: Wilkinson, The Algebraic Eigenvalue
    Problem, 5.45) and a graded matrix (entries from 1 to 1e-12 down the diagonal)."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, n))
    wilkinson = np.diag(np.abs(np.arange(n) - (n - 1) / 2)) + np.eye(n, k=1) + np.eye(n, k=-1)
    grades = np.logspace(0, -12, n)
    graded = (x + x.T) * np.sqrt(grades[:, None] * grades[None, :])
    cases = [x + x.T, np.eye(n), np.zeros((n, n)), np.diag(np.arange(n) % 3 - 1.0), wilkinson, graded]
    if np.iscomplexobj(np.zeros(1, dtype)):   # Hermitian: a complex random part, the last three turned by phases
        y = rng.standard_normal((n, n))
        phases = np.diag(np.exp(1j * rng.uniform(0, 2 * np.pi, n)))
        cases = [cases[0] + 1j * (y - y.T)] + cases[1:3] + [phases @ c @ np.conj(phases.T) for c in cases[3:]]
    return np.stack(cases).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES_FAST_F64 + [pytest.param(np.complex64, marks=pytest.mark.slow),
                                                     pytest.param(np.complex128, marks=pytest.mark.slow)])
@pytest.mark.parametrize("n", [pytest.param(n, marks=pytest.mark.slow) for n in (1, 2, 3, 40, 130)] + [17])
@pytest.mark.parametrize("steps", [False, True, pytest.param("blocked", marks=pytest.mark.slow)])
def test_syev_of_hard_symmetric_matrices(dtype, n, steps, monkeypatch):
    """syev (tridiagonal reduction + implicit QR, eigh's routine; heev for Hermitian matrices) reading
    A's lower triangle (junk above it and in the diagonal's imaginary part): A V = V diag(w) and
    V^H V = I within BOUND n eps ||A|| (both steps are backward stable: Golub and Van Loan 8.3.5), w real,
    ascending and within BOUND n eps ||A||_2 of numpy's eigvalsh (Weyl); the kernel's w equal to
    syev_reference's to the same bound (the same rotations, sums in another order). steps: sytrd, then
    divide and conquer on the tridiagonal and Q's reflectors applied to its vectors
    (linalg_solver.large_symmetric_eigenproblem, eigh's path for large matrices; also backward stable);
    blocked: the same with the reduction's thresholds lowered so that these sizes take latrd panels of 5
    columns from 12 rows (the reflections of each panel applied by a GEMM), as large matrices do."""
    if steps == "blocked":
        monkeypatch.setattr(linalg_solver, "BLOCKED_SYTRD_FROM", 12)
        monkeypatch.setattr(linalg_solver, "TRIDIAGONAL_PANEL", 5)
    a = symmetric_cases(n, dtype)
    junk = a + np.triu(np.full((n, n), 7.0), 1).astype(dtype)
    if np.iscomplexobj(a):
        junk = junk + 3j * np.eye(n, dtype=dtype)
    if steps:
        w, v = (np.asarray(x) for x in cj.jit(lambda x: linalg_solver.large_symmetric_eigenproblem(x))(junk))
    else:
        w, v, _ = (np.asarray(x) for x in cj.jit(lambda x: tuple(call("syev", x)))(junk))
    assert w.dtype == np.finfo(dtype).dtype and v.dtype == dtype and w.shape == (6, n) and v.shape == (6, n, n)
    assert np.all(np.diff(w, axis=-1) >= 0)
    wide = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    v_wide = v.astype(wide.dtype)
    adjoint = np.conj(np.swapaxes(v_wide, -1, -2))
    frobenius = lambda x: np.linalg.norm(x, axis=(-2, -1))
    residual = frobenius(wide - (v_wide * w[..., None, :]) @ adjoint)
    assert np.max(residual / (np.maximum(frobenius(wide), 1e-300) * n * eps(dtype))) <= BOUND
    assert np.max(frobenius(adjoint @ v_wide - np.eye(n)) / (n * eps(dtype))) <= BOUND
    scale = np.maximum(np.linalg.norm(wide, 2, axis=(-2, -1)), 1e-300)[:, None] * n * eps(dtype)
    assert np.max(np.abs(w - np.linalg.eigvalsh(wide)) / scale) <= BOUND
    assert np.max(np.abs(w - syev_reference(junk)[0]) / scale) <= BOUND
    np.testing.assert_array_equal(w[1], 1)
    np.testing.assert_array_equal(v[1], np.eye(n))


@pytest.mark.slow
@pytest.mark.parametrize("n", [300, 449])
def test_eigh_of_a_large_matrix_against_numpy(n):
    """eigh at n = 300 (sytrd and divide and conquer) and 449 (two latrd panels of 64 columns, then
    sytrd on 321 rows): the same bounds as the small cases'. Q's reflections (n - 1 of them, in blocks
    of 128) write their rows back into the vectors in place, one update a block."""
    x = random((n, n), np.float64, seed=11)
    a = x + x.T
    compiled = cj.jit(cnp.linalg.eigh).lower(a).compile()
    optimized = compiled.as_text("optimized")
    blocks = -(-(n - 1) // linalg_solver.BLOCK)
    assert optimized.count("dynamic_update_slice_in_place") == optimized.count("dynamic_update_slice") == blocks
    w, v = compiled(a)
    assert backward_error(a, (v * w[None, :]) @ v.T, np.float64) <= BOUND
    assert orthogonality(v, np.float64) <= BOUND
    assert np.max(np.abs(w - np.linalg.eigvalsh(a))) <= BOUND * n * eps(np.float64) * np.linalg.norm(a, 2)


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.complex128, marks=pytest.mark.slow)])
def test_eigh_of_a_stack_by_divide_and_conquer_with_lowered_thresholds(dtype, monkeypatch):
    """large_symmetric_eigenproblem on a stack of two 67x67 matrices, its thresholds lowered so that each
    step has several parts: latrd panels of 8 columns from 40 rows, 16 leaves of 5 rows (padded to 80)
    merged in 4 levels, Q's 66 reflections in 5 blocks of 16 written back in place: A V = V diag(w), V
    unitary, w numpy's, within BOUND n eps."""
    monkeypatch.setattr(linalg_solver, "TRIDIAGONAL_FROM", 20)
    monkeypatch.setattr(linalg_solver, "BLOCKED_SYTRD_FROM", 40)
    monkeypatch.setattr(linalg_solver, "TRIDIAGONAL_PANEL", 8)
    monkeypatch.setattr(linalg_solver, "DIVIDE_LEAF", 8)
    monkeypatch.setattr(linalg_solver, "BLOCK", 16)
    n = 67
    x = random((2, n, n), np.float64, seed=5)
    if np.iscomplexobj(np.zeros(1, dtype)):
        x = x + 1j * random((2, n, n), np.float64, seed=6)
    a = ((x + np.conj(np.swapaxes(x, -1, -2))) / 2).astype(dtype)
    compiled = cj.jit(cnp.linalg.eigh).lower(a).compile()
    planes = 2 if np.iscomplexobj(a) else 1   # complex expansion updates the real and imaginary planes apart
    optimized = compiled.as_text("optimized")
    assert optimized.count("dynamic_update_slice_in_place") == optimized.count("dynamic_update_slice") == 5 * planes
    w, v = (np.asarray(r) for r in compiled(a))
    frobenius = lambda m: np.linalg.norm(m, axis=(-2, -1))
    unit = n * eps(dtype)
    assert np.max(frobenius(a - (v * w[:, None, :]) @ np.conj(np.swapaxes(v, -1, -2))) / (frobenius(a) * unit)) <= BOUND
    assert np.max(frobenius(np.conj(np.swapaxes(v, -1, -2)) @ v - np.eye(n)) / unit) <= BOUND
    assert np.max(np.abs(w - np.linalg.eigvalsh(a)) / (np.linalg.norm(a, 2, axis=(-2, -1))[:, None] * unit)) <= BOUND


def test_eigvalsh_of_a_large_matrix_skips_the_vectors():
    """From TRIDIAGONAL_FROM rows eigvalsh is the tridiagonal reduction (at 512 rows three latrd panels,
    then sytrd) and steqr alone (no divide and conquer, no Q)."""
    text = cj.jit(cnp.linalg.eigvalsh).lower(np.zeros((512, 512))).as_text()
    called = [line.split('routine = "')[1].split('"')[0] for line in text.splitlines() if 'library = "solver"' in line]
    assert called == ["latrd"] * 3 + ["sytrd", "steqr"]


@pytest.mark.slow
def test_eigvalsh_of_a_large_matrix_and_its_derivatives():
    """eigvalsh at n = 200 (sytrd + steqr): w within Weyl's bound of numpy's; its JVP against central
    differences of numpy's eigvalsh (step 1e-6: truncation about step^2 / gap^2 relative) and its gradient
    V diag(c) V^T for sum(c w) against numpy's vectors (to BOUND n eps ||A||)."""
    n = 200
    x, y = random((n, n), np.float64, seed=12), random((n, n), np.float64, seed=13)
    a, direction = x + x.T, y + y.T
    w, dw = (np.asarray(t) for t in cj.jvp(cnp.linalg.eigvalsh, (a,), (direction,)))
    assert np.max(np.abs(w - np.linalg.eigvalsh(a))) <= BOUND * n * eps(np.float64) * np.linalg.norm(a, 2)
    step = 1e-6
    differences = (np.linalg.eigvalsh(a + step * direction) - np.linalg.eigvalsh(a - step * direction)) / (2 * step)
    assert np.max(np.abs(dw - differences)) <= 1e-6 * np.max(np.abs(differences))
    weights = np.arange(n, dtype=np.float64)
    gradient = np.asarray(cj.grad(lambda m: cnp.sum(cnp.linalg.eigvalsh(m) * weights))(a))
    _, v = np.linalg.eigh(a)
    assert np.max(np.abs(gradient - (v * weights) @ v.T)) <= BOUND * n * eps(np.float64) * np.linalg.norm(a, 2)


@pytest.mark.parametrize("dtype", DTYPES_FAST_F64)
def test_expm_against_scipy(dtype):
    """Scaling and squaring with the [13/13] Pade approximant (Higham 2005): the approximant is exp to
    unit roundoff after scaling, and each of the s squarings can amplify the relative error by about
    ||A||_1 / 2^s, so the forward error is bounded by BOUND n eps (1 + ||A||_1) on these well-behaved
    random matrices (1-norms 0.01 to 30: no, one or several squarings)."""
    import scipy.linalg
    a = np.concatenate([random((1, 6, 6), np.float64, seed) * scale / 6
                        for seed, scale in enumerate((0.01, 1.0, 30.0))]).astype(dtype)
    got = cj.jit(csl.expm)(a)
    assert got.shape == a.shape and got.dtype == dtype
    for x, matrix in zip(got, a.astype(np.float64)):
        want = scipy.linalg.expm(matrix)
        error = np.linalg.norm(x - want) / np.linalg.norm(want)
        assert error <= BOUND * 6 * eps(dtype) * (1 + np.abs(matrix).sum(axis=0).max())


@pytest.mark.slow
def test_expm_edge_cases():
    """exp of a diagonal matrix is the exponentials of its entries; a norm needing more squarings than
    max_squarings gives NaNs (as JAX); 0x0 stays 0x0."""
    diagonal = np.diag([0.0, 1.0, -2.0, 7.0])
    np.testing.assert_allclose(csl.expm(diagonal), np.diag(np.exp([0.0, 1.0, -2.0, 7.0])),
                               rtol=BOUND * 4 * eps(np.float64) * 8)
    assert np.isnan(csl.expm(np.full((2, 2), 1e8))).all()
    assert csl.expm(np.zeros((0, 0))).shape == (0, 0)


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(2, 19, 11), (9, 17), (23, 6), (40, 37)])
def test_recursive_qr_at_small_sizes(monkeypatch, shape):
    """The recursive geqrf (leaves of 4 columns, compact-WY blocks of 8 applied in turn: at 37 columns
    three to the top level's right half) and the blocked orgqr (blocks of 8 on their corners: five at 37
    columns, the 23 x 23 Q of 6 reflectors one) against the identities, and their
    packed factors and tau against the unblocked kernel's (the same reflections, so equal up to
    rounding: BOUND n eps on these well-conditioned random matrices); a zero column gives tau = 0."""
    from cdnajit.frontend.cnp import linalg_solver
    a = random(shape, np.float64)
    a[..., 2] = 0
    unblocked_raw, unblocked_tau = cnp.linalg.qr(a, "raw")
    monkeypatch.setattr(linalg_solver, "SMALL", 4)
    monkeypatch.setattr(linalg_solver, "QR_WY_COLUMNS", 8)
    monkeypatch.setattr(linalg_solver, "BLOCK", 8)
    for mode in ("reduced", "complete"):
        q, r = cj.jit(lambda x: cnp.linalg.qr(x, mode))(a)
        assert backward_error(a, q @ r, np.float64) <= BOUND and orthogonality(q, np.float64) <= BOUND
    raw, tau = cj.jit(lambda x: cnp.linalg.qr(x, "raw"))(a)
    n = max(shape[-2:])
    np.testing.assert_allclose(raw, unblocked_raw, rtol=0, atol=BOUND * n * eps(np.float64) * np.abs(a).max())
    np.testing.assert_allclose(tau, unblocked_tau, rtol=0, atol=BOUND * n * eps(np.float64))
    assert (tau[..., 2] == 0).all()


# ---- gesvd (bidiagonalization and implicit QR) -----------------------------------------------------------

def with_singular_values(values, m, n, seed):
    """An m x n matrix U diag(values) V^T with random orthogonal U and V (values padded with zeros)."""
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((m, m)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    k = min(m, n)
    return (u[:, :k] * np.pad(np.asarray(values, float), (0, k - len(values)))) @ v[:, :k].T


def gesvd_cases(dtype):
    """Hard and plain stacks: random tall, wide and square, rank-deficient (rank 5), repeated singular values,
    graded ones (1 to 1e-10), zero and identity matrices."""
    square = with_singular_values([1] * 3 + [2] * 4 + list(10.0 ** -np.arange(10)), 17, 17, 1)
    return [random((3, 21, 16), dtype, 11), random((2, 16, 19), dtype, 12),
            (random((20, 5), np.float64, 13) @ random((5, 18), np.float64, 14)).astype(dtype),
            np.stack([square, np.zeros((17, 17)), np.eye(17)]).astype(dtype),
            with_singular_values(10.0 ** -np.linspace(0, 10, 16), 16, 24, 2).astype(dtype)]


def check_svd(a, u, s, vh, dtype, full_matrices):
    """LAPACK's error bounds for the SVD (LAPACK Users' Guide, 3rd ed., 4.9): the computed factors are an
    exact SVD of A + E, ||E||_2 <= p(m, n) eps ||A||_2, with U and V orthonormal to working precision; each
    singular value within p(m, n) eps ||A||_2 of the exact one (numpy's, to its own such error). p(m, n) is
    taken as BOUND max(m, n)."""
    m, n = a.shape[-2:]
    k = min(m, n)
    want_u, want_s, want_vh = np.linalg.svd(a.astype(np.float64), full_matrices=full_matrices)
    assert (u.shape, s.shape, vh.shape) == (want_u.shape, want_s.shape, want_vh.shape) and u.dtype == dtype
    assert np.all(np.diff(s, axis=-1) <= 0) and np.all(s >= 0)
    assert backward_error(a, (u[..., :k] * s[..., None, :]).astype(np.float64) @ vh[..., :k, :], dtype) <= BOUND
    assert orthogonality(u, dtype) <= BOUND and orthogonality(np.swapaxes(vh, -1, -2), dtype) <= BOUND
    scale = np.maximum(want_s[..., :1], np.finfo(dtype).tiny)
    assert np.max(np.abs(s - want_s) / (scale * max(m, n) * eps(dtype))) <= BOUND


@pytest.mark.parametrize("dtype", DTYPES_FAST_F64)
def test_gesvd_against_numpy(dtype):
    """svd of 16+ columns is gesvd (linalg_solver.takes_gesvd): a [2, 17, 16] stack, full and reduced,
    and its singular values alone (bdsqr without vectors)."""
    a = random((2, 17, 16), dtype, 10)
    for full_matrices in (True, False):
        check_svd(a, *cj.jit(lambda x: cnp.linalg.svd(x, full_matrices=full_matrices))(a), dtype, full_matrices)
    s = cj.jit(lambda x: cnp.linalg.svd(x, compute_uv=False))(a)
    np.testing.assert_allclose(s, np.linalg.svd(a.astype(np.float64), compute_uv=False), rtol=0,
                               atol=BOUND * 17 * eps(dtype) * np.abs(s).max())


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_gesvd_of_hard_matrices(dtype):
    for a in gesvd_cases(dtype):
        for full_matrices in (True, False):
            check_svd(a, *cj.jit(lambda x: cnp.linalg.svd(x, full_matrices=full_matrices))(a), dtype, full_matrices)
        s = cj.jit(lambda x: cnp.linalg.svd(x, compute_uv=False))(a)
        want = np.linalg.svd(a.astype(np.float64), compute_uv=False)
        assert np.max(np.abs(s - want) / (want[..., :1] * max(a.shape[-2:]) * eps(dtype) + 1e-300)) <= BOUND


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(1, 1), (2, 1), (1, 3), (5, 3), (3, 5), (4, 2, 2), (9, 8)])
def test_gesvd_at_small_sizes(monkeypatch, shape):
    """gesvd taken at every size (GESVD_FROM 1): n = 1 (no row reflector, an empty log), 2, odd shapes."""
    monkeypatch.setattr(linalg_solver, "GESVD_FROM", {True: 1, False: 1})
    a = random(shape, np.float64, 15)
    for full_matrices in (True, False):
        check_svd(a, *cj.jit(lambda x: cnp.linalg.svd(x, full_matrices=full_matrices))(a), np.float64, full_matrices)
    np.testing.assert_allclose(cnp.linalg.svdvals(a), np.linalg.svd(a, compute_uv=False), rtol=1e-13, atol=1e-15)


@pytest.mark.slow
def test_svd_of_a_large_matrix_against_numpy():
    a = random((300, 260), np.float64, 16)
    check_svd(a, *cj.jit(lambda x: cnp.linalg.svd(x, full_matrices=False))(a), np.float64, False)


# About 40 s of compiling (gebrd, bdsqr, lasr, lasd1, the GEMMs and reflections): make test-all only;
# the fast tier runs lasd1's kernel (tests/libs/test_solver_divide_svd.py).
@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES_FAST_F64)
@pytest.mark.parametrize("cases", ["plain", "all"])
def test_svd_by_divide_and_conquer_with_lowered_thresholds(dtype, cases, monkeypatch):
    """gesvd's divide-and-conquer path (from 16 columns, leaves of at most 8 rows: 17 columns are 4 leaves
    of 5 with 2 padding rows, two levels of lasd1 merges; U and V by the reflectors): a hard square matrix
    (repeated and graded singular values), a zero and an identity one; slow: also random, rank-deficient and
    graded ones, tall and wide, full and reduced."""
    monkeypatch.setattr(linalg_solver, "DIVIDE_SVD_FROM", 16)
    monkeypatch.setattr(linalg_solver, "DIVIDE_LEAF", 8)
    stacks = gesvd_cases(dtype) if cases == "all" else [gesvd_cases(dtype)[3]]
    for a in stacks:
        for full_matrices in (True, False) if cases == "all" else (True,):
            check_svd(a, *cj.jit(lambda x: cnp.linalg.svd(x, full_matrices=full_matrices))(a), dtype, full_matrices)
    text = cj.jit(lambda x: cnp.linalg.svd(x)).lower(stacks[0]).as_text()
    assert text.count('routine = "lasd1"') == 2 and 'routine = "orgqr"' not in text


# Scales far outside in_safe_range's range (sums of squares of the entries overflow or underflow) and one
# inside it: powers of 2, so that the test divides them out exactly and checks the scaled results by the
# bounds above.
BAD_SCALES = {np.float32: (2.0 ** 100, 1.0, 2.0 ** -100), np.float64: (2.0 ** 900, 1.0, 2.0 ** -1000)}


def badly_scaled(shape, dtype, seed):
    """A stack of len(BAD_SCALES[dtype]) random matrices, matrix i scaled by BAD_SCALES[dtype][i], and the scales
    ([B, 1, 1] in float64)."""
    scales = np.array(BAD_SCALES[np.dtype(dtype).type], np.float64)[:, None, None]
    base = random((len(scales), *shape), dtype, seed)
    return (base * scales).astype(dtype), scales


@pytest.mark.parametrize("dtype", DTYPES_FAST_F64)
def test_decompositions_of_matrices_near_overflow_and_underflow(dtype):
    """LAPACK's drivers scale A into a safe range first (gesdd, syevd, geev: dlascl) and its Householder
    vectors' norms cannot overflow (dnrm2): svd (Jacobi at 5x4, gesvd at 17x16), eigh, eigvalsh, eig, eigvals
    and qr of matrices whose entries' squares overflow or underflow agree with numpy on the matrices scaled
    back by the same power of 2 (the error model above; before scaling they gave inf and NaN)."""
    for shape, seed in (((5, 4), 20), ((17, 16), 21)):
        a, scales = badly_scaled(shape, dtype, seed)
        u, s, vh = cj.jit(lambda x: cnp.linalg.svd(x, full_matrices=False))(a)
        check_svd((a / scales).astype(dtype), u, (s / scales[:, 0]).astype(dtype), vh, dtype, False)
        np.testing.assert_array_equal(cnp.linalg.norm(a, 2, axis=(-2, -1)), s[:, 0])
    a, scales = badly_scaled((6, 6), dtype, 22)
    w, v = cj.jit(cnp.linalg.eigh)(a)
    symmetric = (a / scales + np.swapaxes(a / scales, -1, -2)).astype(np.float64) / 2
    unscaled = w / scales[:, 0]
    assert backward_error(symmetric, (v * unscaled[..., None, :]).astype(np.float64) @ np.swapaxes(v, -1, -2),
                          dtype) <= BOUND and orthogonality(v, dtype) <= BOUND
    norm = np.linalg.norm(symmetric, 2, axis=(-2, -1))[:, None]
    assert np.max(np.abs(unscaled - np.linalg.eigvalsh(symmetric)) / (norm * 6 * eps(dtype))) <= BOUND
    np.testing.assert_array_equal(cj.jit(cnp.linalg.eigvalsh)(a), w)
    w, v = cj.jit(cnp.linalg.eig)(a)
    unscaled = w / scales[:, 0]
    general = (a / scales).astype(np.float64)
    residuals = np.linalg.norm(general @ v - v * unscaled[:, None, :], axis=(-2, -1))
    assert np.max(residuals / (norms(general) * 6 * eps(dtype))) <= BOUND
    np.testing.assert_array_equal(cj.jit(cnp.linalg.eigvals)(a), w)
    a, scales = badly_scaled((7, 5), dtype, 23)
    q, r = cj.jit(cnp.linalg.qr)(a)
    assert backward_error(a / scales, q.astype(np.float64) @ (r / scales), dtype) <= BOUND
    assert orthogonality(q, dtype) <= BOUND
    packed, tau = cj.jit(lambda x: cnp.linalg.qr(x, mode="raw"))(a)
    np.testing.assert_array_equal(np.triu(np.swapaxes(packed, -1, -2))[:, :5], r)


@pytest.mark.parametrize("shape", [(5, 4), (4, 17)])
def test_svd_of_a_matrix_with_inf_or_nan_is_nan(shape):
    """As JAX's svd (LAPACK's gesdd fails on such a matrix): each of u, s and vh is NaN for a matrix of the
    stack holding an inf or a NaN, and the finite matrix beside them is unaffected."""
    a = random((3, *shape), np.float64, 24)
    a[1, 0, 1], a[2, 2, 0] = np.inf, np.nan
    u, s, vh = cj.jit(lambda x: cnp.linalg.svd(x, full_matrices=False))(a)
    for x in (u, s, vh):
        assert np.all(np.isnan(x[1:]))
    check_svd(a[:1], u[:1], s[:1], vh[:1], np.float64, False)
