"""cdnajit.numpy.linalg.eigvals (libs/solver's geev: Hessenberg reduction and Francis double-shift QR),
and roots and poly built on it, against numpy and scipy on stacks in f32 and f64.

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
from cdnajit.errors import ConcretizationError
from cdnajit.libs.solver.routines import geev_reference

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


def backward_errors(a, w, dtype):
    """sigma_min(A - w I) / (||A||_2 n eps) for each computed eigenvalue, in f64 / c128."""
    a = np.asarray(a, np.float64)
    n = a.shape[-1]
    errors = [np.linalg.svd(a[b] - w[b, i] * np.eye(n), compute_uv=False)[-1]
              / ((np.linalg.norm(a[b], 2) or 1.0) * n * eps(dtype)) for b in range(a.shape[0]) for i in range(n)]
    return max(errors, default=0.0)


def assert_near_numpy(a, w, dtype):
    """Each of scipy's eigenvalues has one of ours within cond * BOUND n eps ||A||_2."""
    n = a.shape[-1]
    for b in range(a.shape[0]):
        matrix = np.asarray(a[b], np.float64)
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
    wr, wi, _ = geev_reference(a)
    np.testing.assert_allclose(np.sort_complex(w), np.sort_complex(wr + 1j * wi), rtol=0,
                               atol=100 * BOUND * 9 * eps(np.float64) * np.max(np.linalg.norm(a, 2, axis=(1, 2))))


def test_eigvals_that_do_not_converge_are_nan():
    """NaN entries never deflate (comparisons with NaN are false): NaNs, not an endless loop."""
    a = np.full((1, 3, 3), np.nan)
    assert np.all(np.isnan(np.asarray(cnp.linalg.eigvals(a))))


def test_eig_names_what_it_lacks():
    with pytest.raises(NotImplementedError, match="eigenvectors"):
        cnp.linalg.eig(np.eye(2))


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
