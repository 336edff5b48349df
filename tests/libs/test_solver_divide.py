"""Divide and conquer for the symmetric tridiagonal eigenproblem: libs/solver's merge (library_call
solver.laed1, divide.py) called directly, and the frontend's whole stedc (linalg_solver.
tridiagonal_eigenvectors: steqr leaves, laed1 merges, GEMMs), on hard tridiagonals (repeated and
clustered eigenvalues, which deflate; zero and graded couplings) of sizes around the leaves' (64 rows)
and the merges' boundaries.

Error model: divide and conquer with Gu and Eisenstat's vectors is backward stable (Gu and Eisenstat,
SIAM J. Matrix Anal. Appl. 16(1), 1995; the deflation's perturbations are 8 eps max(|d|, |u|) each): the
computed pairs are exact for a matrix within p(n) eps ||T||, so the tests bound ||T Z - Z diag(w)|| /
(||T|| n eps) and ||Z^T Z - I|| / (n eps) by BOUND, and the eigenvalues (Weyl) by BOUND n eps ||T||_2.
"""
import numpy as np
import pytest

import cdnajit as cj
from cdnajit.frontend.cnp import linalg_solver
from cdnajit.libs.solver.divide import laed1_reference

from .test_solver import call, eps, relative
from .test_solver_tridiagonal import tridiagonal

BOUND = 8


def merges(m, dtype, seed):
    """(d, z, rho) of 6 merges of m rows: random; a value repeated across the halves and another within
    one (rotations deflate them); tiny z entries (deflated as they are); rho < 0; rho = 0 (all deflated);
    a cluster of nearly equal d (rotations chained)."""
    rng = np.random.default_rng(seed)
    half = m // 2
    d = np.sort(rng.standard_normal((6, 2, half)), axis=-1)
    z = rng.standard_normal((6, m))
    rho = np.abs(rng.standard_normal(6))
    if half > 2:
        d[1, 1, 1] = d[1, 0, 2]
        d[1, 0, 1] = d[1, 0, 0]
        z[2, ::3] = 1e-30
        d[5, :, :half // 2 + 1] = 0.5 + 1e-17 * np.arange(half // 2 + 1)
    rho[3], rho[4] = -rho[3], 0
    d = np.sort(d, axis=-1).reshape(6, m)
    return d.astype(dtype), z.astype(dtype), rho.astype(dtype)


def modified(d, z, rho):
    """D + r u u^T, laed1's problem (divide.py), in f64."""
    half = d.shape[1] // 2
    u = z.astype(np.float64) / np.sqrt(2)
    u[:, half:] *= np.where(rho < 0, -1, 1)[:, None]
    d64 = d.astype(np.float64)
    return d64[:, :, None] * np.eye(d.shape[1]) + 2 * np.abs(rho.astype(np.float64))[:, None, None] * (
        u[:, :, None] * u[:, None, :])


def check_pairs(t, w, z, dtype):
    """w ascending; T Z = Z diag(w) and Z orthogonal within BOUND n eps; w numpy's (Weyl)."""
    n = t.shape[-1]
    wide_z = z.astype(np.float64)
    assert np.all(np.diff(w, axis=-1) >= 0)
    assert relative(t @ wide_z - wide_z * w[:, None, :], t, n, dtype) <= BOUND
    assert relative(np.swapaxes(wide_z, 1, 2) @ wide_z - np.eye(n), np.eye(n)[None], n, dtype) <= BOUND
    scale = np.maximum(np.linalg.norm(t, 2, axis=(-2, -1)), 1e-300)[:, None] * n * eps(dtype)
    assert np.max(np.abs(w - np.linalg.eigvalsh(t)) / scale) <= BOUND


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)])
@pytest.mark.parametrize("m", [18, pytest.param(2, marks=pytest.mark.slow), pytest.param(4, marks=pytest.mark.slow),
                               pytest.param(130, marks=pytest.mark.slow)])
def test_laed1_solves_the_rank_one_modification(dtype, m):
    """laed1's (w, U) are the eigenpairs of D + r u u^T, as its reference's; rho = 0 leaves D's own."""
    d, z, rho = merges(m, dtype, seed=m)
    w, u, work, iwork = (np.asarray(x) for x in cj.jit(lambda *x: tuple(call("laed1", *x)))(d, z, rho))
    assert (w.dtype, u.dtype, w.shape, u.shape) == (dtype, dtype, (6, m), (6, m, m))
    assert (work.shape, iwork.shape, iwork.dtype) == ((6, 9 * m), (6, 7 * m), np.int32)
    check_pairs(modified(d, z, rho), w, u, dtype)
    np.testing.assert_array_equal(w[4], np.sort(d[4]))
    assert np.all(np.count_nonzero(u[4], axis=0) == 1)
    want_w, want_u, _, _ = laed1_reference(d, z, rho)
    scale = np.maximum(np.max(np.abs(d), axis=1), 1)[:, None] * m * eps(dtype)
    assert np.max(np.abs(w - want_w) / scale) <= BOUND
    check_pairs(modified(d, z, rho), want_w, want_u, dtype)


def test_laed1_takes_halves_of_equal_size():
    d = np.zeros((2, 5))
    with pytest.raises(Exception, match=r"m even"):
        cj.jit(lambda *x: tuple(call("laed1", *x)))(d, d, np.zeros(2))


def hard_tridiagonals(n, dtype, seed):
    """(d, e) of 8 tridiagonals: random; Wilkinson's W+ (pairs of close eigenvalues); zero; identity;
    glued Wilkinson matrices (clusters); graded couplings; a repeated diagonal with tiny couplings;
    couplings of both signs in 1, 2, 3 steps."""
    rng = np.random.default_rng(seed)
    d, e = np.zeros((8, n)), np.zeros((8, n))
    d[0], e[0] = rng.standard_normal(n), rng.standard_normal(n)
    d[1], e[1] = np.abs(np.arange(n) - (n - 1) / 2), 1
    d[3] = 1
    block = 21
    d[4] = np.abs(np.arange(n) % block - (block - 1) / 2)
    e[4] = np.where(np.arange(n) % block == block - 1, 1e-8, 1)
    d[5], e[5] = rng.standard_normal(n), 10.0 ** -(np.arange(n) % 16)
    d[6], e[6] = 2, 1e-10 * rng.standard_normal(n)
    d[7], e[7] = rng.standard_normal(n), np.array([1, -2, 3])[np.arange(n) % 3]
    return d.astype(dtype), e.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)])
@pytest.mark.parametrize("n", [65] + [pytest.param(n, marks=pytest.mark.slow) for n in (1, 2, 64, 127, 128, 130, 300)])
def test_divide_and_conquer_of_hard_tridiagonals(dtype, n):
    """tridiagonal_eigenvectors (LAPACK's stedc): T Z = Z diag(w), Z orthogonal, w numpy's. 65 rows: two
    leaves of 33 with a padding row and one merge; 64: one leaf (steqr alone); 130: 4 leaves of 33 with 2
    padding rows, two levels of merges."""
    d, e = hard_tridiagonals(n, dtype, seed=n)
    w, z = (np.asarray(x) for x in cj.jit(linalg_solver.tridiagonal_eigenvectors)(d, e))
    assert (w.dtype, z.dtype, w.shape, z.shape) == (dtype, dtype, (8, n), (8, n, n))
    check_pairs(tridiagonal(d.astype(np.float64), e.astype(np.float64)), w, z, dtype)
    np.testing.assert_array_equal(w[3], 1)
    np.testing.assert_array_equal(z[3], np.eye(n))


def test_eigh_of_a_large_matrix_runs_divide_and_conquer():
    """eigh's graph of a 512x512 matrix has the blocked tridiagonal reduction (latrd's panels of 64
    columns until fewer than 384 rows are left, then sytrd), steqr on the leaves and laed1's merges."""
    n = 512
    text = cj.jit(linalg_solver.symmetric_eigenproblem).lower(np.zeros((1, n, n))).as_text()
    routines = [line.split('routine = "')[1].split('"')[0] for line in text.splitlines() if "library_call" in line
                and 'library = "solver"' in line]
    assert routines[:6] == ["latrd"] * 3 + ["sytrd", "steqr", "lasr"] and routines.count("laed1") == 3
    assert "f64[8,64]" in text   # the leaves: 8 of 64 rows
