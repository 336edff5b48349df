"""libs/solver's gesvd routines called directly (library_call solver.gebrd, bdsqr, lasr): each kernel
against its numpy reference (bidiagonal.py) and against the definitions, on hard bidiagonals.

Error model: Householder bidiagonalization and the implicit QR iteration on a bidiagonal are
backward stable: the computed factors are exact for a matrix within p(n) eps ||A|| (LAPACK Users'
Guide, 3rd ed., 4.9; Golub and Van Loan, 8.6), so each test bounds ||A - factors|| / (||A|| n eps)
and the departure from orthogonality by BOUND; the kernel and its reference make the same
reflections and rotations in the same order (their sums' order differs: the same bound).
"""
import numpy as np
import pytest

import cdnajit as cj
from cdnajit.libs.solver.bidiagonal import bdsqr_reference, gebrd_reference, lasr_reference
from cdnajit.libs.solver.routines import orgqr_reference

from .test_solver import call, eps, relative

BOUND = 8


def bidiagonal(d, e):
    n = d.shape[-1]
    b = np.zeros(d.shape + (n,), d.dtype)
    b[..., np.arange(n), np.arange(n)] = d
    b[..., np.arange(n - 1), np.arange(1, n)] = e[..., :n - 1]
    return b


def turned_identity(pairs, cs, count, n, dtype):
    """The identity's columns turned by a rotation log, by lasr on its rows (X = I^T)."""
    identity = np.tile(np.eye(n, dtype=dtype), (count.shape[0], 1, 1))
    return np.swapaxes(cj.jit(lambda x, p, c, k: call("lasr", x, p, c, k)[0])(identity, pairs, cs, count), 1, 2)


def bidiagonal_factors(br, tauq, taup):
    """gebrd's (d, e, Q, P), Q and P in f64 by orgqr's reference (P = diag(1, P'), P' from the row
    reflectors read as columns)."""
    batch, m, n = br.shape
    d = np.diagonal(br, axis1=1, axis2=2).copy()
    e = np.concatenate([np.diagonal(br, 1, axis1=1, axis2=2), np.zeros((batch, 1), br.dtype)], axis=1)
    q = orgqr_reference(br.astype(np.float64), tauq.astype(np.float64), m)
    p = np.tile(np.eye(n), (batch, 1, 1))
    p[:, 1:, 1:] = orgqr_reference(np.swapaxes(br, 1, 2)[:, 1:, :n - 1].astype(np.float64),
                                   taup[:, :n - 1].astype(np.float64), n - 1)
    return d, e, q, p


@pytest.mark.parametrize("dtype", [pytest.param(np.float32, marks=pytest.mark.slow), np.float64])
@pytest.mark.parametrize("batch,m,n", [(3, 9, 7), pytest.param(2, 6, 6, marks=pytest.mark.slow),
                                       pytest.param(1, 1, 1, marks=pytest.mark.slow),
                                       pytest.param(2, 40, 2, marks=pytest.mark.slow)])
def test_gebrd_bdsqr_and_lasr_match_their_references(dtype, batch, m, n):
    """gebrd: A = Q B P^T with Q, P orthogonal (formed from its reflectors by orgqr's reference) and B
    upper bidiagonal, and the kernel's packed factors equal the reference's (tau alone is not compared:
    it is as ill-conditioned as the angle of its column); bdsqr's logs turn the identity into U_B, V_B
    with B = U_B diag(s) V_B^T; the kernels equal the references."""
    a = np.random.default_rng(m * n).standard_normal((batch, m, n)).astype(dtype)
    br, tauq, taup = cj.jit(lambda x: tuple(call("gebrd", x)))(a)
    assert relative(br - gebrd_reference(a)[0], a, m, dtype) <= BOUND and np.all(taup[:, n - 1] == 0)
    d, e, q, p = bidiagonal_factors(br, tauq, taup)
    assert relative(a - q[:, :, :n] @ bidiagonal(d, e) @ np.swapaxes(p, 1, 2), a, m, dtype) <= BOUND
    assert relative(np.swapaxes(q, 1, 2) @ q - np.eye(m), np.eye(m)[None], m, dtype) <= BOUND
    sv = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    s, f, left_pairs, left_cs, right_pairs, right_cs, counts = cj.jit(
        lambda d, e: tuple(call("bdsqr", d, e, vectors=True)))(d, e)
    assert np.max(np.abs(s - sv)) <= BOUND * m * eps(dtype) * np.max(sv)
    np.testing.assert_allclose(s, bdsqr_reference(d, e, True)[0], rtol=0, atol=BOUND * n * eps(dtype) * np.max(sv))
    u_b = turned_identity(left_pairs, left_cs, counts[:, 0], n, dtype)
    v_b = turned_identity(right_pairs, right_cs, counts[:, 1], n, dtype)
    b = bidiagonal(d, e)
    assert relative(b - (u_b * s[:, None, :]) @ np.swapaxes(v_b, 1, 2), b, n, dtype) <= BOUND
    assert relative(np.swapaxes(u_b, 1, 2) @ u_b - np.eye(n), np.eye(n)[None], n, dtype) <= BOUND
    identity = np.tile(np.eye(n, dtype=dtype), (batch, 1, 1))
    np.testing.assert_allclose(np.swapaxes(u_b, 1, 2), lasr_reference(identity, left_pairs, left_cs, counts[:, 0]),
                               rtol=0, atol=BOUND * n * eps(dtype))
    s_alone, _ = cj.jit(lambda d, e: tuple(call("bdsqr", d, e, vectors=False)))(d, e)
    np.testing.assert_allclose(s_alone, s, rtol=0, atol=BOUND * n * eps(dtype) * np.max(sv))


def mixed_rotation_log(rows, length, rng):
    """A rotation log of `length` entries on `rows` rows: sweeps (p, p + 1), (p + 1, p + 2), ... as
    bdsqr's QR steps log them, between rotations of random pairs, sign changes and swaps."""
    pairs, cs = [], []
    while len(pairs) < length:
        kind = rng.integers(4)
        if kind == 0:
            first = int(rng.integers(0, rows - 1))
            pairs += [(k, k + 1) for k in range(first, int(rng.integers(first + 1, rows)))]
        elif kind == 1:
            p, q = rng.choice(rows, 2, replace=False)
            pairs.append((int(p), int(q)))
        elif kind == 2:
            k = int(rng.integers(rows))
            pairs.append((k, k))
        else:
            pairs.append((0, rows - 1))
        while len(cs) < len(pairs):
            p, q = pairs[len(cs)]
            angle = rng.uniform(0, 2 * np.pi)
            cs.append((-1.0, 0.0) if p == q else (0.0, 1.0) if kind == 3 else (np.cos(angle), np.sin(angle)))
    return np.array(pairs[:length], np.int32), np.array(cs[:length])


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)])
@pytest.mark.parametrize("rows,columns", [(40, 70), pytest.param(9, 128, marks=pytest.mark.slow)])
def test_lasr_of_a_mixed_log(dtype, rows, columns):
    """lasr on logs of sweeps and other rotations, each matrix of the stack its own count, equals
    lasr_reference: the same rotations in the same order, each entry's arithmetic the same up to
    contraction into fused multiply-adds (a few eps per rotation through the log)."""
    rng = np.random.default_rng(rows)
    length = 100
    logs = [mixed_rotation_log(rows, length, rng) for _ in range(3)]
    pairs = np.stack([p for p, _ in logs])
    cs = np.stack([c for _, c in logs]).astype(dtype)
    count = np.array([length, length - 3, 5], np.int32)
    x = rng.standard_normal((3, rows, columns)).astype(dtype)
    got = cj.jit(lambda x, p, c, k: call("lasr", x, p, c, k)[0])(x, pairs, cs, count)
    want = lasr_reference(x, pairs, cs, count)
    np.testing.assert_allclose(got, want, rtol=0, atol=BOUND * length * eps(dtype) * np.max(np.abs(x)))


@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)])
@pytest.mark.parametrize("batch,m,n", [(2, 70, 67), pytest.param(1, 130, 129, marks=pytest.mark.slow),
                                       pytest.param(2, 200, 64, marks=pytest.mark.slow)])
def test_gebrd_of_a_workgroup_per_matrix(dtype, batch, m, n):
    """gebrd from WORKGROUP_GEBRD_FROM columns (a workgroup per matrix): A = Q B P^T with Q, P orthogonal
    and B upper bidiagonal, B's singular values A's. Its factors are not compared entry for entry with
    the reference's: the later columns' reflections are as sensitive as a Lanczos recurrence (the sums'
    order differs)."""
    a = np.random.default_rng(m * n).standard_normal((batch, m, n)).astype(dtype)
    br, tauq, taup = (np.asarray(x) for x in cj.jit(lambda x: tuple(call("gebrd", x)))(a))
    assert np.all(taup[:, n - 1] == 0)
    d, e, q, p = bidiagonal_factors(br, tauq, taup)
    assert relative(a - q[:, :, :n] @ bidiagonal(d, e) @ np.swapaxes(p, 1, 2), a, m, dtype) <= BOUND
    assert relative(np.swapaxes(q, 1, 2) @ q - np.eye(m), np.eye(m)[None], m, dtype) <= BOUND
    assert relative(np.swapaxes(p, 1, 2) @ p - np.eye(n), np.eye(n)[None], n, dtype) <= BOUND
    sv = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    got = np.linalg.svd(bidiagonal(d, e).astype(np.float64), compute_uv=False)
    assert np.max(np.abs(got - sv)) <= BOUND * m * eps(dtype) * np.max(sv)


def hard_bidiagonals(n):
    """(d, e) stacks: zero diagonal entries inside and at the end (chased out by rotations), a zero
    superdiagonal entry (a split), all zero, repeated values, graded from 1 to 1e-12, huge and tiny."""
    rng = np.random.default_rng(n)
    d, e = rng.standard_normal((8, n)), rng.standard_normal((8, n))
    d[0, n // 2] = 0
    d[1, n - 1] = 0
    e[2, n // 3] = 0
    d[3], e[3] = 0, 0
    d[4], e[4] = 1, 1
    d[5], e[5] = 10.0 ** -np.linspace(0, 12, n), 10.0 ** -np.linspace(0, 12, n)
    d[6], e[6] = d[6] * 1e150, e[6] * 1e150
    d[7], e[7] = d[7] * 1e-150, e[7] * 1e-150
    e[:, n - 1] = 0
    return d, e


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 3, 17, 60])
def test_bdsqr_of_hard_bidiagonals(n):
    d, e = hard_bidiagonals(n)
    s, _, left_pairs, left_cs, right_pairs, right_cs, counts = cj.jit(
        lambda d, e: tuple(call("bdsqr", d, e, vectors=True)))(d, e)
    b = bidiagonal(d, e)
    want = np.linalg.svd(b, compute_uv=False)
    scale = np.maximum(want[:, :1], 1e-300)
    assert np.max(np.abs(s - want) / (scale * n * eps(np.float64))) <= BOUND
    u_b = turned_identity(left_pairs, left_cs, counts[:, 0], n, np.float64)
    v_b = turned_identity(right_pairs, right_cs, counts[:, 1], n, np.float64)
    assert relative(b - (u_b * s[:, None, :]) @ np.swapaxes(v_b, 1, 2), b, n, np.float64) <= BOUND
    for x in (u_b, v_b):
        assert relative(np.swapaxes(x, 1, 2) @ x - np.eye(n), np.eye(n)[None], n, np.float64) <= BOUND


@pytest.mark.slow
def test_bdsqr_gives_nans_for_nan_input():
    d, e = np.array([[1.0, np.nan, 2.0]]), np.array([[0.5, 0.5, 0.0]])
    s, _ = cj.jit(lambda d, e: tuple(call("bdsqr", d, e, vectors=False)))(d, e)
    assert np.all(np.isnan(s))


def test_the_gesvd_routines_check_their_operands():
    with pytest.raises(cj.TracingTypeError, match="gebrd takes a real stack"):
        cj.jit(lambda x: call("gebrd", x)[0])(np.ones((1, 2, 3)))
    with pytest.raises(cj.TracingTypeError, match="bdsqr takes real d"):
        cj.jit(lambda d, e: call("bdsqr", d, e, vectors=False)[0])(np.ones((1, 3)), np.ones((1, 4)))
