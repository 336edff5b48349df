"""cdnajit.numpy.linalg.eigvals and eig (libs/solver's geev: Hessenberg reduction and Francis double-shift
QR, single-shift QR for complex matrices; with vectors, the (real) Schur form's eigenvectors by trevc),
and roots and poly built on eigvals, against numpy and scipy on stacks in f32, f64, c64 and c128.

Error model: Householder reduction and the QR iteration are backward stable (Golub and Van Loan,
7.5.6): every computed eigenvalue w is an exact eigenvalue of A + E with ||E|| of order n eps ||A||,
so sigma_min(A - w I) <= ||E||: the tests bound sigma_min(A - w I) / (||A|| n eps) by BOUND. To first
order an eigenvalue moves by at most its condition number 1 / |y^H x| (unit left and right vectors)
times ||E||, so each of numpy's eigenvalues has one of ours within cond BOUND n eps ||A|| (a
defective matrix's condition numbers are huge: the backward error is what is checked there).
"""
import numpy as np
import pytest
import scipy.linalg

import cdnajit as cj
import cdnajit.numpy as cnp
import cdnajit.scipy.linalg as csl
from cdnajit.errors import ConcretizationError
from cdnajit.frontend.tracing import bind
from cdnajit.libs.solver.routines import gebal_reference, geev_reference, trevc_reference

BOUND = 8
DTYPES_FAST_F64 = [pytest.param(np.float32, marks=pytest.mark.slow), np.float64]


def eps(dtype):
    return np.finfo(dtype).eps


def stack_of_cases(n, dtype):
    """A stack: random, symmetric, a Jordan block perturbed by eps (defective-ish), a rotation-like
    matrix with complex pairs, and one with a zero row."""
    rng = np.random.default_rng(n)
    random = rng.standard_normal((n, n))
    jordan = np.eye(n) * 2 + np.eye(n, k=1) + eps(dtype) * rng.standard_normal((n, n))
    rotations = np.kron(np.eye((n + 1) // 2), [[0.0, 1.0], [-1.0, 0.0]])[:n, :n] + 0.1 * random
    zero_row = random.copy()
    zero_row[n // 2] = 0
    return np.stack([random, random + random.T, jordan, rotations, zero_row]).astype(dtype)


def complex_stack_of_cases(n, dtype):
    """A complex stack: random, Hermitian, a complex Jordan block perturbed by eps, an upper triangular
    matrix (its own Schur form) with a repeated diagonal entry, a real matrix with complex pairs (real
    input given a complex dtype), and one with a zero row."""
    rng = np.random.default_rng(n + 100)
    random = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    jordan = (np.eye(n) * (2 - 1j) + np.eye(n, k=1)
              + eps(dtype) * (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))))
    triangular = np.triu(random)
    np.fill_diagonal(triangular, np.where(np.arange(n) % 3 == 0, 1 + 1j, np.diagonal(random)))
    zero_row = random.copy()
    zero_row[n // 2] = 0
    return np.stack([random, random + np.conj(random.T), jordan, triangular, stack_of_cases(n, np.float64)[3],
                     zero_row]).astype(dtype)


def wide(a):
    return np.asarray(a, np.complex128 if np.iscomplexobj(a) else np.float64)


def backward_errors(a, w, dtype):
    """sigma_min(A - w I) / (||A||_2 n eps) for each computed eigenvalue, in f64 / c128."""
    a = wide(a)
    n = a.shape[-1]
    errors = [np.linalg.svd(a[b] - w[b, i] * np.eye(n), compute_uv=False)[-1]
              / ((np.linalg.norm(a[b], 2) or 1.0) * n * eps(dtype)) for b in range(a.shape[0]) for i in range(n)]
    return max(errors, default=0.0)


def assert_near_numpy(a, w, dtype):
    """Each of scipy's eigenvalues has one of ours within cond * BOUND n eps ||A||_2."""
    n = a.shape[-1]
    for b in range(a.shape[0]):
        matrix = wide(a[b])
        want, left, right = scipy.linalg.eig(matrix, left=True, right=True)
        cond = 1 / np.maximum(np.abs(np.sum(left.conj() * right, axis=0)), 1e-300)
        distance = np.min(np.abs(want[:, None] - w[b][None, :]), axis=1)
        assert np.all(distance <= cond * BOUND * n * eps(dtype) * np.linalg.norm(matrix, 2)), (b, distance, cond)


@pytest.mark.parametrize("dtype", DTYPES_FAST_F64)
@pytest.mark.parametrize("n", [1, 2, 3, 9, pytest.param(40, marks=pytest.mark.slow)])
def test_eigvals_backward_error_and_against_scipy(dtype, n):
    a = stack_of_cases(n, dtype)
    w = np.asarray(cj.jit(cnp.linalg.eigvals)(a))
    assert w.dtype == (np.complex64 if dtype == np.float32 else np.complex128) and w.shape == (5, n)
    assert backward_errors(a, w, dtype) <= BOUND
    assert_near_numpy(a, w, dtype)
    # Complex eigenvalues of a real matrix come in conjugate pairs, the positive imaginary part first.
    for b in range(a.shape[0]):
        pairs = np.flatnonzero(w[b].imag > 0)
        np.testing.assert_array_equal(w[b, pairs + 1], np.conj(w[b, pairs]))


@pytest.mark.slow
def test_eigvals_of_stacks_and_empty_matrices():
    a = stack_of_cases(4, np.float64).reshape(5, 1, 4, 4)[:4].reshape(2, 2, 4, 4)
    w = np.asarray(cnp.linalg.eigvals(a))
    assert w.shape == (2, 2, 4)
    np.testing.assert_array_equal(w.reshape(4, 4), np.asarray(cnp.linalg.eigvals(a.reshape(4, 4, 4))))
    assert np.asarray(cnp.linalg.eigvals(np.zeros((3, 0, 0)))).shape == (3, 0)
    # Integers promote as the other functions promote them (to_inexact), then to that float's complex.
    real = np.asarray(cnp.linalg.inv(np.eye(3, dtype=np.int32))).dtype
    assert np.asarray(cnp.linalg.eigvals(np.eye(3, dtype=np.int32))).dtype == np.result_type(real, np.complex64)


@pytest.mark.slow
def test_geev_kernel_follows_its_reference():
    """The kernel is the reference statement for statement: the same eigenvalues (where a rounding
    difference flips a deflation decision, in another order), to the sums' rounding times the
    eigenvalues' conditioning (these are well conditioned: cond < 100)."""
    a = stack_of_cases(9, np.float64)[[0, 1, 3]]
    w = np.asarray(cnp.linalg.eigvals(a))
    wr, wi, _ = geev_reference(a, vectors=False)
    np.testing.assert_allclose(np.sort_complex(w), np.sort_complex(wr + 1j * wi), rtol=0,
                               atol=100 * BOUND * 9 * eps(np.float64) * np.max(np.linalg.norm(a, 2, axis=(1, 2))))


def test_eigvals_that_do_not_converge_are_nan():
    """NaN entries never deflate (comparisons with NaN are false): NaNs, not an endless loop."""
    a = np.full((1, 3, 3), np.nan)
    assert np.all(np.isnan(np.asarray(cnp.linalg.eigvals(a))))


def eigenvector_residuals(a, w, v, dtype):
    """max over the stack and columns of ||B x - w x|| / (||B||_2 ||x|| n eps), B = D^-1 P^T A P D the
    balanced matrix (gebal_reference, which the kernel equals exactly) and x = D^-1 P^T v: trevc's
    vectors solve (T + F) x = w x with ||F|| of order n eps ||T|| (a divisor below eps |w| replaced by
    that, as LAPACK's), and Z is unitary, so they are exact vectors of B + E, ||E|| of order n eps ||B||.
    (In A's terms the bound is multiplied by cond(D), which balancing a nearly defective matrix makes
    large: 3e13 for the complex Jordan block's, whose A-residual is 19 n eps ||A||.)"""
    a, v = wide(a), np.asarray(v, np.complex128)
    n = a.shape[-1]
    balanced, scale, permutation, _ = gebal_reference(a.reshape(-1, n, n))
    balanced = balanced.reshape(a.shape)
    x = np.take_along_axis(v.reshape(-1, n, n), permutation[:, :, None].astype(np.int64), axis=1)
    x = (x / scale[:, :, None]).reshape(v.shape)
    residual = np.linalg.norm(balanced @ x - x * w[..., None, :], axis=-2)
    scale = np.linalg.norm(balanced, 2, axis=(-2, -1))[..., None] * np.linalg.norm(x, axis=-2) * n * eps(dtype)
    return np.max(residual / np.where(scale == 0, 1, scale), initial=0.0)


def assert_separated_vectors_match_numpy(a, w, v, matrices, dtype):
    """Where an eigenvalue of a[b] is well separated (gap over ||A|| above 1/100), its vector is numpy's up
    to a unit factor, to BOUND n eps ||A|| / gap."""
    n = a.shape[-1]
    for b in matrices:
        matrix = wide(a[b])
        want_w, want_v = np.linalg.eig(matrix)
        norm = np.linalg.norm(matrix, 2)
        for j in range(n):
            k = np.argmin(np.abs(want_w - w[b, j]))
            gap = np.min(np.abs(np.delete(want_w, k) - want_w[k]), initial=norm)
            if gap < norm / 100:
                continue
            unit = np.vdot(want_v[:, k], v[b, :, j])
            assert abs(abs(unit) - 1) <= BOUND * n * eps(dtype) * norm / gap
            np.testing.assert_allclose(v[b, :, j], unit * want_v[:, k], rtol=0,
                                       atol=BOUND * n * eps(dtype) * norm / gap)


@pytest.mark.parametrize("dtype", DTYPES_FAST_F64)
@pytest.mark.parametrize("n", [pytest.param(n, marks=pytest.mark.slow) for n in (1, 2, 3)] + [9])
def test_eig_vectors_against_numpy(dtype, n):
    """A V = V diag(w) within BOUND n eps ||A|| (random, symmetric, a Jordan block perturbed by eps,
    complex pairs, a zero row), the eigenvalues those of eigvals; vectors normalized as LAPACK's geev
    (unit 2-norm, a complex eigenvalue's largest component real, a real eigenvalue's vector real); where
    an eigenvalue is well separated (condition below 100, numpy's vector's condition its eigenvalue gap
    over ||A||), the same vector as numpy's up to a unit factor, to BOUND n eps ||A|| / gap."""
    a = stack_of_cases(n, dtype)
    w, v = cj.jit(cnp.linalg.eig)(a)
    assert v.dtype == w.dtype == (np.complex64 if dtype == np.float32 else np.complex128) and v.shape == (5, n, n)
    np.testing.assert_array_equal(w, cj.jit(cnp.linalg.eigvals)(a))
    assert eigenvector_residuals(a, w, v, dtype) <= BOUND
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, rtol=0, atol=BOUND * n * eps(dtype))
    real = w.imag == 0
    assert np.all(v.imag[np.broadcast_to(real[:, None, :], v.shape)] == 0)
    largest = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[:, None, :], axis=-2)[:, 0]
    assert np.all(largest.imag[~real] == 0)
    # not the Jordan block (ill-conditioned) nor the zero row (a repeated 0 when n is small)
    assert_separated_vectors_match_numpy(a, w, v, [0, 1, 3], dtype)


@pytest.mark.slow
def test_schur_form_and_trevc_kernels_against_their_references():
    """geev with vectors: A = Z T Z^T, Z orthogonal, T quasi-triangular, within BOUND n eps (a 2x2 block
    and its Schur vectors are fixed only up to a rotation, which rounding decides, so the kernel's T
    and Z are checked by these identities, not against the reference's); trevc on the reference's T
    equal to trevc_reference to BOUND n eps ||T|| cond (these are well conditioned)."""
    n = 9
    a = stack_of_cases(n, np.float64)[[0, 1, 3]]
    call = lambda routine, *operands, **attrs: bind("library_call", list(operands), {
        "library": "solver", "routine": routine, "solution": "", **attrs})
    wr, wi, t, z = cj.jit(lambda x: tuple(call("geev", x, vectors=True)))(a)
    scale = BOUND * n * eps(np.float64)
    assert np.max(np.abs(z @ t @ np.swapaxes(z, 1, 2) - a)) <= scale * np.max(np.abs(a)) * n
    assert np.max(np.abs(np.swapaxes(z, 1, 2) @ z - np.eye(n))) <= scale
    # Below the subdiagonal: the bulges' rounding only (LAPACK zeroes it; trevc does not read it).
    assert np.max(np.abs(np.tril(t, -2))) <= scale * np.max(np.abs(a))
    want_wr, want_wi, want_t, _ = geev_reference(a, vectors=True)
    (x,) = cj.jit(lambda t, wr, wi: tuple(call("trevc", t, wr, wi)))(want_t, want_wr, want_wi)
    (want_x,) = trevc_reference(want_t, want_wr, want_wi)
    np.testing.assert_allclose(x, want_x, rtol=0, atol=100 * scale * np.max(np.abs(want_x)))


def test_eig_of_stacks_and_empty_matrices():
    a = stack_of_cases(4, np.float64)[:4].reshape(2, 2, 4, 4)
    w, v = cnp.linalg.eig(a)
    assert w.shape == (2, 2, 4) and v.shape == (2, 2, 4, 4)
    assert eigenvector_residuals(a.reshape(4, 4, 4), w.reshape(4, 4), v.reshape(4, 4, 4), np.float64) <= BOUND
    w, v = cnp.linalg.eig(np.zeros((3, 0, 0)))
    assert w.shape == (3, 0) and v.shape == (3, 0, 0) and v.dtype == np.complex128


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.complex128, marks=pytest.mark.slow)])
def test_balancing_recovers_the_eigenvalues_of_a_badly_scaled_matrix(dtype):
    """A = S^-1 R S, S = diag(10^-5 .. 10^5): A's eigenvalues are R's, but ||A|| is 1e9 ||R||, so
    without balancing the QR iteration's errors are of order eps ||A|| (the unbalanced reference misses
    the bound below by 80x for the real matrix). gebal's powers of 2 undo S to within factors of 2, so
    eig's eigenvalues are within cond BOUND n eps ||R||_2 of R's (scipy's, cond from its left and
    right vectors), and gebal's kernel gives its reference's B, scale and permutation exactly (the
    same operations; scaling by powers of 2 is exact)."""
    n = 8
    rng = np.random.default_rng(5)
    r = rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n)) if np.iscomplexobj(np.zeros(1, dtype)) else 0)
    s = 10.0 ** np.linspace(-5, 5, n)
    a = (r * s[None, :] / s[:, None]).astype(dtype)
    want, left, right = scipy.linalg.eig(r, left=True, right=True)
    bound = BOUND * n * eps(np.float64) * np.linalg.norm(r, 2) / np.abs(np.sum(left.conj() * right, axis=0))
    w, v = cj.jit(cnp.linalg.eig)(a)
    assert np.all(np.min(np.abs(want[:, None] - np.asarray(w)[None, :]), axis=1) <= bound)
    call = lambda x: tuple(bind("library_call", [x], {"library": "solver", "routine": "gebal", "solution": ""}))
    for got, expected in zip(cj.jit(call)(a[None]), gebal_reference(a[None])):
        np.testing.assert_array_equal(got, expected)


COMPLEX_DTYPES_FAST_C128 = [pytest.param(np.complex64, marks=pytest.mark.slow), np.complex128]


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES_FAST_C128)
@pytest.mark.parametrize("n", [pytest.param(n, marks=pytest.mark.slow) for n in (1, 2, 3, 17, 40)] + [9])
def test_complex_eig_and_eigvals_against_numpy(dtype, n):
    """Complex matrices (zgeev's way: Hessenberg reduction, single-shift QR, trevc on the triangular
    Schur form): eigenvalues of backward error within BOUND n eps ||A|| and each of scipy's within cond
    times that; eig's eigenvalues exactly eigvals'; A V = V diag(w) within BOUND n eps ||A||; vectors of
    unit 2-norm, their largest component real and positive (zgeev's normalization, which fixes a
    simple eigenvalue's vector: where it is well separated, numpy's vector to BOUND n eps ||A|| / gap).
    (eigvals gives eig's eigenvalues: test_complex_eig_of_stacks_empty_and_one_by_one_matrices.)"""
    a = complex_stack_of_cases(n, dtype)
    w, v = (np.asarray(x) for x in cj.jit(cnp.linalg.eig)(a))
    assert w.dtype == v.dtype == dtype and w.shape == (6, n) and v.shape == (6, n, n)
    assert backward_errors(a, w, dtype) <= BOUND
    assert_near_numpy(a[[0, 1, 4, 5]], w[[0, 1, 4, 5]], dtype)   # not the defective ones (cond ~ 1 / eps)
    assert eigenvector_residuals(a, w, v, dtype) <= BOUND
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, rtol=0, atol=BOUND * n * eps(dtype))
    largest = np.take_along_axis(v, np.argmax(np.abs(v) ** 2, axis=-2)[:, None, :], axis=-2)[:, 0]
    assert np.all(largest.imag == 0) and np.all(largest.real > 0)
    assert_separated_vectors_match_numpy(a, w, v, [0, 1, 4], dtype)


@pytest.mark.slow
def test_complex_eig_of_stacks_empty_and_one_by_one_matrices():
    a = complex_stack_of_cases(4, np.complex64)[:4].reshape(2, 2, 4, 4)
    w, v = cnp.linalg.eig(a)
    assert w.shape == (2, 2, 4) and v.shape == (2, 2, 4, 4) and w.dtype == v.dtype == np.complex64
    np.testing.assert_array_equal(w, cnp.linalg.eigvals(a))
    w, v = cnp.linalg.eig(np.zeros((3, 0, 0), np.complex64))
    assert w.shape == (3, 0) and v.shape == (3, 0, 0) and w.dtype == v.dtype == np.complex64
    assert np.asarray(cnp.linalg.eigvals(np.zeros((0, 2, 2), np.complex128))).shape == (0, 2)
    w, v = cnp.linalg.eig(np.array([[[2 - 3j]]]))
    np.testing.assert_array_equal(w, [[2 - 3j]])
    np.testing.assert_array_equal(v, [[[1]]])
    np.testing.assert_array_equal(cnp.linalg.eigvals(np.full((1, 3, 3), np.nan + 0j)), np.full((1, 3), np.nan))
    got = np.asarray(cnp.roots(np.array([1, 2j, 3])))   # roots i and -3i
    assert got.shape == (2,) and np.max(np.min(np.abs(got[:, None] - np.array([1j, -3j])), axis=0)) \
        <= BOUND * 2 * eps(np.float64) * 10


@pytest.mark.slow
def test_complex_schur_form_and_trevc_kernels_against_their_references():
    """Complex geev with vectors: A = Z T Z^H, Z unitary, T upper triangular (exact zeros below the
    diagonal: every entry there is zeroed as it deflates or as the bulge passes) within BOUND n eps
    ||A||; eigenvalues T's diagonal; with no 2x2 blocks the kernel follows its reference entry for
    entry, to the rounding of sums times the eigenvalues' conditioning (random matrices: cond < 100);
    trevc on the reference's T equal to trevc_reference to BOUND n eps ||T|| cond."""
    n = 9
    a = complex_stack_of_cases(n, np.complex128)[[0, 1, 4]]
    call = lambda routine, *operands, **attrs: bind("library_call", list(operands), {
        "library": "solver", "routine": routine, "solution": "", **attrs})
    w, t, z = cj.jit(lambda x: tuple(call("geev", x, vectors=True)))(a)
    scale = BOUND * n * eps(np.float64)
    assert np.max(np.abs(z @ t @ np.conj(np.swapaxes(z, 1, 2)) - a)) <= scale * np.max(np.abs(a)) * n
    assert np.max(np.abs(np.conj(np.swapaxes(z, 1, 2)) @ z - np.eye(n))) <= scale
    np.testing.assert_array_equal(np.tril(t, -1), 0)
    np.testing.assert_array_equal(w, np.diagonal(t, axis1=1, axis2=2))
    want_w, want_t, want_z = geev_reference(a, vectors=True)
    for got, want in [(w, want_w), (t, want_t), (z, want_z)]:
        np.testing.assert_allclose(got, want, rtol=0, atol=100 * scale * np.max(np.abs(want)))
    (x,) = cj.jit(lambda t, w: tuple(call("trevc", t, w)))(want_t, want_w)
    (want_x,) = trevc_reference(want_t, want_w)
    np.testing.assert_allclose(x, want_x, rtol=0, atol=100 * scale * np.max(np.abs(want_x)))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.complex64])
def test_trevc_rescales_where_back_substitution_would_overflow(dtype):
    """An upper triangular T with nearly equal diagonal entries (gaps of 1e3 eps, so divisors of
    1e3 eps |w|) and superdiagonal entries of 1e3: unscaled back substitution multiplies the vector by
    about 1e3 / (1e3 eps) each row, past the largest float within 40 rows. trevc's vectors stay finite,
    the largest entry of magnitude |re| + |im| one, and solve (T - w I) x = 0 within BOUND n eps ||T||
    ||x|| (back substitution is backward stable whatever the scaling, Higham 8.1)."""
    n = 40
    part = np.finfo(dtype).dtype
    growth = np.log10(1e3 / (1e3 * eps(part) * 2))
    assert growth * (n - 1) > np.log10(np.finfo(part).max)   # the unscaled vector would overflow
    diagonal = 2 + 1e3 * eps(part) * 2 * np.arange(n)
    t = (np.diag(diagonal) + 1e3 * np.triu(np.ones((n, n)), 1)).astype(dtype)[None]
    w = diagonal.astype(dtype)[None]
    call = lambda *operands: bind("library_call", list(operands), {
        "library": "solver", "routine": "trevc", "solution": "", })
    operands = (t, w) if np.iscomplexobj(t) else (t, w, np.zeros_like(w))
    (x,) = cj.jit(lambda *ops: tuple(call(*ops)))(*operands)
    x = np.asarray(x, np.complex128)
    assert np.all(np.isfinite(x))
    np.testing.assert_allclose(np.max(np.abs(x.real) + np.abs(x.imag), axis=1), 1, rtol=4 * eps(part))
    residual = np.linalg.norm(t[0] @ x[0] - x[0] * w[0], axis=0)
    scale = np.linalg.norm(t[0], 2) * np.linalg.norm(x[0], axis=0) * n * eps(part)
    assert np.max(residual / scale) <= BOUND
    (want,) = trevc_reference(*operands)
    assert np.all(np.isfinite(want))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_scipy_eig_and_eigvals(dtype):
    """cdnajit.scipy.linalg.eig/eigvals against scipy's: eigenvalues within cond BOUND n eps ||A|| of
    scipy's, A vr = vr diag(w); homogeneous_eigvals stacks (w, 1) as scipy's (alpha, beta); vr complex
    (scipy's is real where every eigenvalue is, a value-dependent dtype); b and left refused."""
    n = 6
    a = (complex_stack_of_cases if np.iscomplexobj(np.zeros(1, dtype)) else stack_of_cases)(n, dtype)[0]
    w, vr = (np.asarray(x) for x in cj.jit(csl.eig)(a))
    assert w.dtype == vr.dtype == np.complex128
    assert_near_numpy(a[None], w[None], dtype)
    assert eigenvector_residuals(a, w, vr, dtype) <= BOUND
    np.testing.assert_array_equal(cj.jit(csl.eigvals)(a), w)
    np.testing.assert_array_equal(csl.eig(a, right=False), w)
    homogeneous = np.asarray(csl.eigvals(a, homogeneous_eigvals=True))
    assert homogeneous.shape == scipy.linalg.eigvals(a, homogeneous_eigvals=True).shape == (2, n)
    np.testing.assert_array_equal(homogeneous, [w, np.ones(n)])
    with pytest.raises(NotImplementedError, match=r"eig: the generalized problem \(b\) and left eigenvectors"):
        csl.eig(a, left=True)
    with pytest.raises(NotImplementedError, match=r"eigvals: the generalized problem \(b\)"):
        csl.eigvals(a, np.eye(n))


@pytest.mark.slow
def test_eig_and_eigh_of_a_stack_are_one_launch_per_solver_routine():
    """rocSOLVER's _batched form: eig of 1000 5x5 matrices is one gebal, one geev and one trevc launch (one
    work-item per matrix, per eigenvalue for trevc) and one lapmr; eigh's is one syev launch."""
    a = np.random.default_rng(3).standard_normal((1000, 5, 5))
    for function, routines in [(cnp.linalg.eig, ("gebal", "geev", "trevc", "lapmr")), (cnp.linalg.eigh, ("syev",))]:
        optimized = cj.jit(function).lower(a).compile().as_text("optimized")
        called = [line.split('routine = "')[1].split('"')[0] for line in optimized.splitlines()
                  if 'library = "solver"' in line]
        assert sorted(called) == sorted(routines), optimized


@pytest.mark.parametrize("p", [[1.0, -6.0, 11.0, -6.0], [2.0, 0.0, 1.0], [0.0, 0.0, 1.0, 2.0, 3.0, 0.0, 0.0], [3.0],
                               [0.0, 0.0], [1.0, 0.0]])
def test_roots_against_numpy(p):
    """Roots are the companion matrix's eigenvalues: within the eigenvalue bound of numpy's
    (the companion matrices here have simple, well-conditioned roots but [1, 0]'s)."""
    got = np.asarray(cnp.roots(np.array(p)))
    want = np.roots(p)
    assert got.dtype == np.complex128 and got.shape == want.shape
    np.testing.assert_allclose(np.sort_complex(got), np.sort_complex(want.astype(complex)), rtol=0,
                               atol=BOUND * 8 * eps(np.float64) * 100)


@pytest.mark.slow
def test_roots_under_jit_and_poly_of_a_matrix():
    got = np.asarray(cj.jit(lambda p: cnp.roots(p, strip_zeros=False))(np.array([1.0, -6.0, 11.0, -6.0])))
    np.testing.assert_allclose(np.sort_complex(got), [1, 2, 3], rtol=0, atol=BOUND * 3 * eps(np.float64) * 20)
    with pytest.raises(ConcretizationError, match="strip_zeros"):
        cj.jit(cnp.roots)(np.ones(3))
    a = np.random.default_rng(0).standard_normal((4, 4))
    coefficients = np.asarray(cj.jit(cnp.poly)(a))
    # The characteristic polynomial's coefficients are sums of products of eigenvalues: bounded by
    # binomial(4, k) max|w|^k times the eigenvalues' error.
    np.testing.assert_allclose(coefficients, np.poly(a), rtol=0, atol=BOUND * 4 * eps(np.float64) * 6 * 16 * 10)
