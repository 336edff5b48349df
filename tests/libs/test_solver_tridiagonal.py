"""libs/solver's tridiagonal routines called directly (library_call solver.sytrd, latrd, steqr): each
kernel against the definitions and its numpy reference (tridiagonal.py), on stacks of odd sizes (67
crosses the 64 work-items of sytrd's and latrd's workgroups) in every dtype sytrd takes; and the blocked
reduction the frontend builds from latrd panels, GEMM updates and sytrd (linalg_solver.tridiagonal_form)
around its thresholds.

Error model: Householder tridiagonalization and the implicit QR iteration on a tridiagonal are
backward stable: the computed factors are exact for a matrix within p(n) eps ||A|| (Golub and Van Loan
8.3.5), so each test bounds ||A - factors|| / (||A|| n eps) and the departure from orthogonality by
BOUND, and the eigenvalues (Weyl) by BOUND n eps ||A||_2. The tridiagonal form itself is not compared
entry for entry with the reference's: its later entries are as sensitive as a Lanczos recurrence's
(the sums' order differs between kernel and reference).
"""
import numpy as np
import pytest

import cdnajit as cj
from cdnajit.libs.solver.routines import orgqr_reference
from cdnajit.frontend.cnp import linalg_solver
from cdnajit.libs.solver.tridiagonal import latrd_reference, steqr_reference, sytrd_reference

from .test_solver import call, eps, relative
from .test_solver_svd import turned_identity

BOUND = 8


def tridiagonal(d, e):
    n = d.shape[-1]
    t = np.zeros(d.shape + (n,), d.dtype)
    t[..., np.arange(n), np.arange(n)] = d
    t[..., np.arange(1, n), np.arange(n - 1)] = e[..., :n - 1]
    t[..., np.arange(n - 1), np.arange(1, n)] = e[..., :n - 1]
    return t


def hermitian_with_junk(batch, n, dtype, seed):
    """(the Hermitian matrices of the lower triangles, the stack sytrd reads: junk above the diagonal and
    in the diagonal's imaginary part)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, n, n))
    if np.iscomplexobj(np.zeros(1, dtype)):
        x = x + 1j * rng.standard_normal((batch, n, n))
    lower = np.tril(x, -1)
    h = (lower + np.conj(np.swapaxes(lower, 1, 2)) + np.real(np.diagonal(x, axis1=1, axis2=2))[:, :, None]
         * np.eye(n)).astype(dtype)
    junk = h + np.triu(np.full((n, n), 7.0), 1)
    if np.iscomplexobj(h):
        junk = junk + 3j * np.eye(n)
    return h, junk.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow),
                                   pytest.param(np.complex64, marks=pytest.mark.slow),
                                   pytest.param(np.complex128, marks=pytest.mark.slow)])
@pytest.mark.parametrize("batch,n", [(3, 67), pytest.param(2, 1, marks=pytest.mark.slow),
                                     pytest.param(2, 2, marks=pytest.mark.slow),
                                     pytest.param(2, 3, marks=pytest.mark.slow),
                                     pytest.param(1, 130, marks=pytest.mark.slow)])
def test_sytrd_reduces_to_tridiagonal_form(dtype, batch, n):
    """A = Q S T S^H Q^H with Q = H_0 ... H_{n-3} from packed's reflectors (orgqr's reference), S the
    unit phases on packed's subdiagonal, T real tridiagonal (d, e); Q unitary; zeros elsewhere in
    packed (as the reference's); T's eigenvalues A's."""
    h, junk = hermitian_with_junk(batch, n, dtype, seed=n)
    packed, d, e, work = (np.asarray(x) for x in cj.jit(lambda x: tuple(call("sytrd", x)))(junk))
    want = sytrd_reference(junk)
    assert [x.dtype for x in (packed, d, e, work)] == [x.dtype for x in want]
    assert [x.shape for x in (packed, d, e, work)] == [x.shape for x in want]
    wide = np.complex128 if np.iscomplexobj(h) else np.float64
    q = np.tile(np.eye(n, dtype=wide), (batch, 1, 1))
    if n > 1:
        q[:, 1:, 1:] = orgqr_reference(packed[:, 1:, :n - 1].astype(wide), packed[:, 0, :n - 1].astype(wide), n - 1)
    phases = np.concatenate([np.ones((batch, 1)), np.diagonal(packed, -1, axis1=1, axis2=2)], axis=1).astype(wide)
    qs = q * phases[:, None, :]
    assert np.allclose(np.abs(phases), 1, rtol=0, atol=BOUND * n * eps(dtype))   # a product of n phases
    assert relative(h - qs @ tridiagonal(d, e) @ np.conj(np.swapaxes(qs, 1, 2)), h, n, dtype) <= BOUND
    assert relative(np.conj(np.swapaxes(q, 1, 2)) @ q - np.eye(n), np.eye(n)[None], n, dtype) <= BOUND
    assert np.all(e >= 0) and np.all(e[:, -1] == 0) and np.all(work == 0)
    structure = np.tril(np.ones((n, n), bool), -1)
    structure[0, :max(n - 2, 0)] = True   # tau_k
    assert np.all(packed[:, ~structure] == 0)
    scale = np.linalg.norm(h.astype(wide), 2, axis=(-2, -1))[:, None] * n * eps(dtype)
    w = np.linalg.eigvalsh(h.astype(wide))
    assert np.max(np.abs(np.linalg.eigvalsh(tridiagonal(d, e).astype(np.float64)) - w) / scale) <= BOUND
    assert np.max(np.abs(np.linalg.eigvalsh(tridiagonal(*want[1:3]).astype(np.float64)) - w) / scale) <= BOUND


def reflections(vt, tau):
    """H_0 ... H_b-1 (H_i = I - tau_i v_i v_i^H, v_i row i of vt) for each matrix of a stack."""
    batch, b, m = vt.shape
    q = np.tile(np.eye(m, dtype=vt.dtype), (batch, 1, 1))
    for i in range(b):
        v = vt[:, i, :, None]
        q = q - (q @ v) * tau[:, i, None, None] @ np.conj(np.swapaxes(v, 1, 2))
    return q


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow),
                                   pytest.param(np.complex64, marks=pytest.mark.slow),
                                   pytest.param(np.complex128, marks=pytest.mark.slow)])
@pytest.mark.parametrize("m,b", [(67, 8), pytest.param(5, 3, marks=pytest.mark.slow),
                                 pytest.param(130, 32, marks=pytest.mark.slow)])
def test_latrd_reduces_a_panel(dtype, m, b):
    """For Q = H_0 ... H_b-1 from Vt and tau: Q^H A Q's first b columns are tridiagonal (d, the coupling
    c_i = e_i phases_i / phases_i-1 below, phases_-1 = s, and conj(c_i-1) above), its trailing rows and
    columns are A - V W^H - W V^H's, Q is unitary (each to BOUND n eps ||A||: b steps of sytrd, backward stable); Vt and Wt zero
    where the definition says; d and e as the reference's. The stack: a random matrix, one whose first
    column is zero below the diagonal (no reflector: tau 0, v e_1), and the identity (none at all:
    exactly d = 1, e = 0, Wt = 0), each read from its lower triangle (junk above it)."""
    h, junk = hermitian_with_junk(3, m, dtype, seed=m)
    h[1, 1:, 0] = h[1, 0, 1:] = junk[1, 1:, 0] = 0
    h[2], junk[2] = np.eye(m), np.eye(m) + np.triu(np.full((m, m), 7.0), 1)
    rng = np.random.default_rng(m)
    s = (np.exp(1j * rng.uniform(0, 2 * np.pi, 3)) if np.iscomplexobj(h) else np.array([1.0, -1.0, -1.0])).astype(dtype)
    vt, wt, tau, d, e, phases = (np.asarray(x) for x in cj.jit(
        lambda x, y: tuple(call("latrd", x, y, columns=b)))(junk, s))
    want = latrd_reference(junk, s, b)
    assert [(x.dtype, x.shape) for x in (vt, wt, tau, d, e, phases)] == [(x.dtype, x.shape) for x in want]
    wide = np.complex128 if np.iscomplexobj(h) else np.float64
    hw, vw, ww = h.astype(wide), vt.astype(wide), wt.astype(wide)
    q = reflections(vw, tau.astype(wide))
    reduced = np.conj(np.swapaxes(q, 1, 2)) @ hw @ q
    adj = lambda x: np.conj(np.swapaxes(x, 1, 2))
    updated = hw - np.swapaxes(vw, 1, 2) @ np.conj(ww) - np.swapaxes(ww, 1, 2) @ np.conj(vw)
    assert relative(reduced[:, b:, b:] - updated[:, b:, b:], hw, m, dtype) <= BOUND
    previous = np.concatenate([s[:, None], phases[:, :-1]], axis=1).astype(wide)
    columns = np.zeros((3, m, b), wide)
    columns[:, np.arange(b), np.arange(b)] = d
    coupling = e * phases / previous
    columns[:, np.arange(1, b + 1), np.arange(b)] = coupling
    columns[:, np.arange(b - 1), np.arange(1, b)] = np.conj(coupling[:, :b - 1])
    assert relative(reduced[:, :, :b] - columns, hw, m, dtype) <= BOUND
    assert relative(adj(q) @ q - np.eye(m), np.eye(m)[None], m, dtype) <= BOUND
    assert np.allclose(np.abs(phases), 1, rtol=0, atol=BOUND * m * eps(dtype)) and np.all(e >= 0)
    for i in range(b):
        assert np.all(vt[:, i, :i + 1] == 0) and np.all(vt[:, i, i + 1] == 1) and np.all(wt[:, i, :i + 1] == 0)
    scale = np.linalg.norm(hw, axis=(1, 2))[:, None] * m * eps(dtype)
    assert np.max(np.abs(d - want[3]) / scale) <= BOUND and np.max(np.abs(e - want[4]) / scale) <= BOUND
    assert tau[1, 0] == 0 and np.all(vt[1, 0, 2:] == 0) and e[1, 0] == 0
    np.testing.assert_array_equal(d[2], 1)
    np.testing.assert_array_equal(e[2], 0)
    np.testing.assert_array_equal(wt[2], 0)


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow),
                                   pytest.param(np.complex64, marks=pytest.mark.slow),
                                   pytest.param(np.complex128, marks=pytest.mark.slow)])
@pytest.mark.parametrize("n", [67] + [pytest.param(n, marks=pytest.mark.slow) for n in (39, 40, 41, 48, 49)])
def test_blocked_tridiagonal_form(dtype, n, monkeypatch):
    """tridiagonal_form with its thresholds lowered (panels of 8 columns from 40 rows, so that n = 39 is
    sytrd alone; 40, 41 one panel; 48, 49 two; 67 four, the last of 43 rows): A = Q S T S^H Q^H, Q
    unitary (the reduction is backward stable: BOUND n eps ||A||), the phases of unit modulus (chained
    across the panels and into sytrd's), e >= 0 with e[n - 1] = 0, T's eigenvalues A's (Weyl); junk
    above the diagonal and in its imaginary part not read."""
    monkeypatch.setattr(linalg_solver, "BLOCKED_SYTRD_FROM", 40)
    monkeypatch.setattr(linalg_solver, "TRIDIAGONAL_PANEL", 8)
    h, junk = hermitian_with_junk(2, n, dtype, seed=n)
    qr, tau, d, e, phases = (np.asarray(x) for x in cj.jit(linalg_solver.tridiagonal_form)(junk))
    assert (qr.shape, tau.shape, d.shape, e.shape, phases.shape) == ((2, n - 1, n - 1), (2, n - 1), (2, n), (2, n),
                                                                     (2, n))
    wide = np.complex128 if np.iscomplexobj(h) else np.float64
    q = np.tile(np.eye(n, dtype=wide), (2, 1, 1))
    q[:, 1:, 1:] = orgqr_reference(np.tril(qr, -1).astype(wide), tau.astype(wide), n - 1)
    qs = q * phases.astype(wide)[:, None, :]
    assert np.allclose(np.abs(phases), 1, rtol=0, atol=BOUND * n * eps(dtype))
    assert relative(h - qs @ tridiagonal(d, e) @ np.conj(np.swapaxes(qs, 1, 2)), h, n, dtype) <= BOUND
    assert relative(np.conj(np.swapaxes(q, 1, 2)) @ q - np.eye(n), np.eye(n)[None], n, dtype) <= BOUND
    assert np.all(e >= 0) and np.all(e[:, -1] == 0)
    scale = np.linalg.norm(h.astype(wide), 2, axis=(-2, -1))[:, None] * n * eps(dtype)
    w = np.linalg.eigvalsh(h.astype(wide))
    assert np.max(np.abs(np.linalg.eigvalsh(tridiagonal(d, e).astype(np.float64)) - w) / scale) <= BOUND


def hard_tridiagonals(n, dtype):
    """Random, the identity (nothing to do), zero, split (zeros in e), Wilkinson's W+ (close pairs),
    graded over 12 decades."""
    rng = np.random.default_rng(n)
    cases = [(rng.standard_normal(n), rng.standard_normal(n)), (np.ones(n), np.zeros(n)), (np.zeros(n), np.zeros(n)),
             (rng.standard_normal(n), rng.standard_normal(n) * (np.arange(n) % 3 != 0)),
             (np.abs(np.arange(n) - (n - 1) / 2), np.ones(n)), (np.logspace(0, -12, n), np.logspace(0, -12, n))]
    d, e = (np.stack(parts).astype(dtype) for parts in zip(*cases))
    e[:, -1] = 0
    return d, e


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)])
@pytest.mark.parametrize("n", [67, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow),
                               pytest.param(130, marks=pytest.mark.slow)])
def test_steqr_logs_the_rotations_of_the_tridiagonal_qr(dtype, n):
    """w ascending, T's eigenvalues (numpy's) and the reference's; the log (its rotations applied to the
    identity by lasr) gives Z with T Z = Z diag(w), Z orthogonal."""
    d, e = hard_tridiagonals(n, dtype)
    w, f, pairs, cs, count = (np.asarray(x) for x in cj.jit(lambda d, e: tuple(call("steqr", d, e)))(d, e))
    t = tridiagonal(d, e).astype(np.float64)
    scale = np.maximum(np.linalg.norm(t, 2, axis=(-2, -1)), 1e-300)[:, None] * n * eps(dtype)
    assert np.all(np.diff(w, axis=-1) >= 0)
    assert np.max(np.abs(w - np.linalg.eigvalsh(t)) / scale) <= BOUND
    assert np.max(np.abs(w - steqr_reference(d, e)[0]) / scale) <= BOUND
    z = turned_identity(pairs, cs, count, n, dtype).astype(np.float64)
    assert relative(t @ z - z * w[:, None, :], t, n, dtype) <= BOUND
    assert relative(np.swapaxes(z, 1, 2) @ z - np.eye(n), np.eye(n)[None], n, dtype) <= BOUND
    np.testing.assert_array_equal(w[1], 1)
    np.testing.assert_array_equal(z[1], np.eye(n))
