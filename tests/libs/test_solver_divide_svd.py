"""Divide and conquer for the bidiagonal singular value problem: libs/solver's merge (library_call
solver.lasd1, divide_svd.py) called directly, against numpy's SVD of the merged matrix, on merges that
deflate in every way lasd2 does (tiny and zero z entries, equal and clustered d's, zero d's, a zero
alpha or beta, rank deficiency, graded d's: tiny singular values next to large ones).

Error model: divide and conquer with Gu and Eisenstat's vectors is backward stable (Gu and Eisenstat,
SIAM J. Matrix Anal. Appl. 16(4), 1995; each deflation perturbs M by at most 8 eps max(|alpha|, |beta|, |d|)):
the computed triple is exact for a matrix within p(n) eps ||M||, so the tests bound ||M - U S V^T|| /
(||M|| n eps), ||U^T U - I|| / (n eps) and ||V^T V - I|| / (n eps) by BOUND, and the singular values
(Weyl) by BOUND n eps ||M||_2.
"""
import numpy as np
import pytest

import cdnajit as cj
from cdnajit.frontend.cnp import linalg_solver
from cdnajit.libs.solver.divide_svd import IWORK, WORK, lasd1_reference

from .test_solver import call, eps, relative

BOUND = 8


def merges(n, dtype, seed):
    """(d, z, alpha, beta) of 10 merges of n rows (d[n/2 - 1] = d[n - 1] = 0 as the halves' zero rows
    give them): random; equal d's across the halves and within one (rotated together); tiny z entries
    (deflated as they are); zero and subnormal d's (rotated into the zero column); alpha = 0; a cluster of
    nearly equal d's (rotations chained); graded d's 1 .. 1e-11; d's of 1e-9 in every other place (tiny
    singular values); beta = 0; all zero."""
    rng = np.random.default_rng(seed)
    half = n // 2
    d = np.abs(rng.standard_normal((10, n)))
    z = rng.standard_normal((10, n))
    alpha, beta = rng.standard_normal(10), rng.standard_normal(10)
    if half > 3:
        d[1, half + 1], d[1, 1] = d[1, 2], d[1, 0]
        z[2, ::3] = 1e-30
        d[3, :3], d[3, half:half + 2] = 0, np.finfo(dtype).tiny / 4
        d[5, :half - 1] = 0.5 + 1e-17 * np.arange(half - 1)
        d[6] = 10.0 ** -(np.arange(n) % 12)
        d[7, ::2] = 1e-9
    alpha[4], beta[8] = 0, 0
    d[9], z[9], alpha[9], beta[9] = 0, 0, 0, 0
    d[:, half - 1] = d[:, n - 1] = 0
    return d.astype(dtype), z.astype(dtype), alpha.astype(dtype), beta.astype(dtype)


def merged(d, z, alpha, beta):
    """M = diag(d) + e_{h-1} [alpha z[:h], beta z[h:]]^T, lasd1's problem (divide_svd.py), in f64."""
    half = d.shape[1] // 2
    m = d.astype(np.float64)[:, :, None] * np.eye(d.shape[1])
    m[:, half - 1, :half] = alpha.astype(np.float64)[:, None] * z[:, :half]
    m[:, half - 1, half:] = beta.astype(np.float64)[:, None] * z[:, half:]
    return m


def check_triples(m, s, u, v, dtype):
    """s[:-1] descending, s[-1] = 0 with U's last row and column e_last; M = U S V^T, U and V orthogonal
    within BOUND n eps; s numpy's (Weyl)."""
    n = m.shape[-1]
    wide_u, wide_v = u.astype(np.float64), v.astype(np.float64)
    assert np.all(np.diff(s[:, :n - 1], axis=-1) <= 0) and np.all(s[:, :n - 1] >= 0) and np.all(s[:, n - 1] == 0)
    np.testing.assert_array_equal(u[:, n - 1], np.eye(n)[n - 1][None].repeat(len(u), 0))
    np.testing.assert_array_equal(u[:, :, n - 1], np.eye(n)[n - 1][None].repeat(len(u), 0))
    assert relative(m - (wide_u * s[:, None, :]) @ np.swapaxes(wide_v, 1, 2), m, n, dtype) <= BOUND
    for x in (wide_u, wide_v):
        assert relative(np.swapaxes(x, 1, 2) @ x - np.eye(n), np.eye(n)[None], n, dtype) <= BOUND
    scale = np.maximum(np.linalg.norm(m, 2, axis=(-2, -1)), 1e-300)[:, None] * n * eps(dtype)
    assert np.max(np.abs(s - np.linalg.svd(m, compute_uv=False)) / scale) <= BOUND


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)])
@pytest.mark.parametrize("n", [18, pytest.param(2, marks=pytest.mark.slow), pytest.param(4, marks=pytest.mark.slow),
                               pytest.param(10, marks=pytest.mark.slow), pytest.param(130, marks=pytest.mark.slow)])
def test_lasd1_solves_the_merged_bidiagonal(dtype, n):
    """lasd1's (s, U, V) are an SVD of the merged matrix, as its reference's; a zero merge gives s = 0, U = V = I."""
    d, z, alpha, beta = merges(n, dtype, seed=n)
    s, u, v, work, iwork = (np.asarray(x) for x in cj.jit(lambda *x: tuple(call("lasd1", *x)))(d, z, alpha, beta))
    assert (s.dtype, u.dtype, v.dtype, s.shape, u.shape, v.shape) == (dtype,) * 3 + ((10, n), (10, n, n), (10, n, n))
    assert (work.shape, iwork.shape, iwork.dtype) == ((10, WORK * n), (10, IWORK * n), np.int32)
    m = merged(d, z, alpha, beta)
    check_triples(m, s, u, v, dtype)
    np.testing.assert_array_equal(s[9], 0)
    np.testing.assert_array_equal(u[9], np.eye(n))
    np.testing.assert_array_equal(v[9], np.eye(n))
    want_s, want_u, want_v, _, _ = lasd1_reference(d, z, alpha, beta)
    check_triples(m, want_s, want_u, want_v, dtype)
    scale = np.maximum(np.max(np.abs(m), axis=(1, 2)), 1)[:, None] * n * eps(dtype)
    assert np.max(np.abs(s - want_s) / scale) <= BOUND


def test_lasd1_keeps_small_singular_values_relatively_accurate():
    """A merge whose singular values span 1 .. 1e-12 (no deflation): the secular equation solved in the
    singular values themselves (differences (d_i - sigma)(d_i + sigma)) gives each to a few eps of its own
    size, where the squared problem would lose those below sqrt(eps) ||M||."""
    n = 8
    d = np.array([[1e-13, 1e-8, 1.0, 0, 1e-11, 1e-2, 2.0, 0]])
    z = np.array([[1e-6, 1e-10, 1e-2, 1e-7, 1.0, 1e-3, 1.0, 1.0]])
    alpha, beta = np.array([1.0]), np.array([1e-5])
    s, _, _, _, _ = (np.asarray(x) for x in cj.jit(lambda *x: tuple(call("lasd1", *x)))(d, z, alpha, beta))
    # M^T M = diag(d^2) + w w^T (d[3] = d[7] = 0): each singular value is a sign change of the secular
    # equation 1 + sum w^2 / ((d - x)(d + x)), evaluated in f64 beside it (numpy's SVD of M is accurate
    # only to eps ||M|| for each).
    half = n // 2
    w = np.concatenate([alpha * z[0, :half], beta * z[0, half:]])
    secular = lambda x: 1 + np.sum(w * w / ((d[0] - x) * (d[0] + x)))
    assert np.min(s[0, :n - 1]) < 1e-11
    for sigma in s[0, :n - 1]:
        assert secular(sigma * (1 - 32 * eps(np.float64))) < 0 < secular(sigma * (1 + 32 * eps(np.float64)))


def test_lasd1_takes_halves_of_equal_size():
    d = np.zeros((2, 5))
    with pytest.raises(Exception, match=r"n even"):
        cj.jit(lambda *x: tuple(call("lasd1", *x)))(d, d, np.zeros(2), np.zeros(2))


def hard_bidiagonals(n, dtype, seed):
    """(d, e) of 8 upper bidiagonals: random; zero; identity; zero diagonal entries every third row
    (rank-deficient); graded 1 .. 1e-15; a repeated diagonal with tiny couplings (clusters); decoupled
    blocks (zero e every fifth); tiny d's among ordinary ones."""
    rng = np.random.default_rng(seed)
    d, e = np.zeros((8, n)), np.zeros((8, n))
    d[0], e[0] = rng.standard_normal(n), rng.standard_normal(n)
    d[2] = 1
    d[3], e[3] = rng.standard_normal(n), rng.standard_normal(n)
    d[3, ::3] = 0
    d[4], e[4] = 10.0 ** -(np.arange(n) % 16), 10.0 ** -(np.arange(n) % 16) / 2
    d[5], e[5] = 2, 1e-10 * rng.standard_normal(n)
    d[6], e[6] = rng.standard_normal(n), np.where(np.arange(n) % 5 == 4, 0, 1)
    d[7], e[7] = np.where(np.arange(n) % 4 == 1, 1e-30, rng.standard_normal(n)), rng.standard_normal(n)
    return d.astype(dtype), e.astype(dtype)


def bidiagonal(d, e):
    n = d.shape[1]
    b = d[:, :, None] * np.eye(n)
    b[:, np.arange(n - 1), np.arange(1, n)] = e[:, :n - 1]
    return b


@pytest.mark.slow   # compiling bdsqr, lasr, lasd1 and the GEMMs: the fast tier runs lasd1 alone (above)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,leaf", [(20, 8)] + [(n, 64) for n in (1, 2, 62, 63, 64, 130, 300)])
def test_divide_and_conquer_of_hard_bidiagonals(dtype, n, leaf, monkeypatch):
    """bidiagonal_vectors (LAPACK's bdsdc): B = U_B diag(s) V_B^T, U_B and V_B orthogonal, s numpy's.
    20 rows in leaves of at most 8: 3 leaves of 21 / 4 = 6 rows with 3 padding rows, two levels of merges;
    63: one leaf of 64 (bdsqr alone); 64: two leaves of 33 with one padding row; 300: 8 leaves of 38."""
    monkeypatch.setattr(linalg_solver, "DIVIDE_LEAF", leaf)
    d, e = hard_bidiagonals(n, dtype, seed=n)
    s, u, v = (np.asarray(x) for x in cj.jit(linalg_solver.bidiagonal_vectors)(d, e))
    assert (s.dtype, u.dtype, v.dtype, s.shape, u.shape, v.shape) == (dtype,) * 3 + ((8, n), (8, n, n), (8, n, n))
    b = bidiagonal(d.astype(np.float64), e.astype(np.float64))
    assert np.all(np.diff(s, axis=-1) <= 0) and np.all(s >= 0)
    wide_u, wide_v = u.astype(np.float64), v.astype(np.float64)
    assert relative(b - (wide_u * s[:, None, :]) @ np.swapaxes(wide_v, 1, 2), b, n, dtype) <= BOUND
    for x in (wide_u, wide_v):
        assert relative(np.swapaxes(x, 1, 2) @ x - np.eye(n), np.eye(n)[None], n, dtype) <= BOUND
    scale = np.maximum(np.linalg.norm(b, 2, axis=(-2, -1)), 1e-300)[:, None] * n * eps(dtype)
    assert np.max(np.abs(s - np.linalg.svd(b, compute_uv=False)) / scale) <= BOUND
    np.testing.assert_array_equal(s[1], 0)   # the zero matrix's vectors: exact signed unit vectors
    for x in (u[1], v[1]):
        assert np.all(np.isin(np.abs(x), (0, 1))) and np.all(np.abs(x).sum(axis=0) == 1)
        assert np.all(np.abs(x).sum(axis=1) == 1)
