"""The solver's singular value routines of the bidiagonal path (LAPACK's and rocSOLVER's gesvd), on
stacks of real row-major matrices [B, rows, columns]:

  gebrd(A[B, m, n], m >= n) -> BR[B, m, n], tauq[B, n], taup[B, n]
      Householder bidiagonalization, LAPACK's gebd2: Q^T A P = B upper bidiagonal, Q = H_0 ... H_{n-1},
      P = G_0 ... G_{n-2}; H_k = I - tauq_k u_k u_k^T (u_k zero above k, 1 at k, BR's column k below
      the diagonal), G_k = I - taup_k v_k v_k^T (v_k zero up to k, 1 at k + 1, BR's row k right of
      the superdiagonal); B's diagonal d on BR's diagonal, its superdiagonal e on BR's (taup_{n-1} = 0).
  bdsqr(d[B, n], e[B, n]) -> s[B, n], f[B, n] (, pairs[B, R, 2] i32, cs[B, R, 2], pairs, cs,
      counts[B, 2] i32), attribute vectors; e[k] couples d[k] and d[k + 1] (e[n-1] is not read);
      R = rotation_capacity(n); f is the work copy of e (zero where converged, scaled). s: the singular values of the bidiagonal B, descending (LAPACK's bdsqr: implicit zero-free QR
      steps with Wilkinson's shift, Golub and Van Loan's Algorithm 8.6.2, a zero diagonal entry
      chased out by rotations). With vectors, B = U_B diag(s) V_B^T is given as two logs of plane
      rotations, the left ones (U_B) then the right ones (V_B): entry t is (p, q) and (c, s), the
      rotation turning columns p and q of a matrix M as M[:, p], M[:, q] = c M[:, p] + s M[:, q],
      -s M[:, p] + c M[:, q] (p = q with c = -1: a column's sign; the order of the assignments does
      not matter, both sides are computed first), counts[b] the logs' lengths;
      U_B is the identity so turned, V_B likewise. NaNs for a bidiagonal whose iteration did not
      converge within MAX_QR_STEPS n steps (or the logs' capacity).
  lasr(X[B, c, r], pairs[B, R, 2] i32, cs[B, R, 2], count[B] i32) -> X'[B, c, r]
      the first count rotations of a log applied in order to the columns of M = X^T, that is to X's
      rows (LAPACK's lasr, side L): X[p], X[q] = c X[p] + s X[q], -s X[p] + c X[q]. U^T = lasr(Q^T,
      left log), V^T = lasr(P^T, right log), A = U diag(s) V^T.

The references compute step by step as the kernels (bidiagonal_kernels.py) do, in the operands' dtype.
"""
from __future__ import annotations

import numpy as np

from ...ir.opdef import require
from ...ir.ops.library import Routine
from ...ir.types import TensorType
from .routines import MAX_QR_STEPS, REAL, RotationLog, deflated, householder, reflect, rotation_capacity


def gebrd_infer(types, attrs):
    require(len(types) == 1, f"library_call: solver.gebrd takes 1 operand, got {len(types)}")
    (a,) = types
    require(a.ndim == 3 and a.dtype in REAL and a.shape[1] >= a.shape[2],
            f"library_call: solver.gebrd takes a real stack [B, m, n] with m >= n, got {a}")
    batch, m, n = a.shape
    return [a, TensorType(a.dtype, (batch, n)), TensorType(a.dtype, (batch, n))]


def gebrd_reference(a):
    br = np.array(a, copy=True)
    batch, m, n = br.shape
    tauq, taup = np.zeros((batch, n), br.dtype), np.zeros((batch, n), br.dtype)
    one = np.ones((batch, 1), br.dtype)
    with np.errstate(all="ignore"):
        for k in range(n):
            beta, tau, u = householder(br[:, k:, k])
            br[:, k, k], br[:, k + 1:, k], tauq[:, k] = beta, u, tau
            br[:, k:, k + 1:] = reflect(br[:, k:, k + 1:], np.concatenate([one, u], axis=1), tau)
            if k < n - 1:
                beta, tau, v = householder(br[:, k, k + 1:])
                br[:, k, k + 1], br[:, k, k + 2:], taup[:, k] = beta, v, tau
                rows = np.swapaxes(br[:, k + 1:, k + 1:], 1, 2)
                br[:, k + 1:, k + 1:] = np.swapaxes(reflect(rows, np.concatenate([one, v], axis=1), tau), 1, 2)
    return br, tauq, taup


def bdsqr_infer(types, attrs):
    require(len(types) == 2 and all(t.ndim == 2 and t.dtype in REAL for t in types) and types[0] == types[1],
            f"library_call: solver.bdsqr takes real d[B, n] and e[B, n] of one dtype, got "
            f"{', '.join(map(str, types))}")
    d = types[0]
    if not attrs["vectors"]:
        return [d, d]
    batch, n = d.shape
    pairs, cs = TensorType("i32", (batch, rotation_capacity(n), 2)), TensorType(d.dtype, (batch, rotation_capacity(n), 2))
    return [d, d, pairs, cs, pairs, cs, TensorType("i32", (batch, 2))]


def rotation(y, z):
    """(c, s, r) with c y + s z = r, -s y + c z = 0, scaled against under- and overflow; (1, 0) for (0, 0)."""
    scale = abs(y) + abs(z)
    if scale == 0:
        return 1, 0, 0
    r = scale * np.sqrt((y / scale) ** 2 + (z / scale) ** 2)
    return y / r, z / r, r


def bdsqr_reference(d, e, vectors):
    batch, n = d.shape
    dtype = d.dtype
    s_all, f_all = np.zeros((batch, n), dtype), np.array(e, copy=True)
    f_all[:, n - 1:] = 0
    capacity = rotation_capacity(n)
    logs = [np.zeros((batch, capacity, 2), log_dtype) for log_dtype in (np.int32, dtype, np.int32, dtype)]
    counts = np.zeros((batch, 2), np.int32)
    for b in range(batch):
        left, right = (RotationLog(logs[0][b], logs[1][b]), RotationLog(logs[2][b], logs[3][b])) if vectors \
            else (RotationLog(None, None), RotationLog(None, None))
        s_all[b] = bidiagonal_svd(d[b].copy(), f_all[b], left, right, capacity)
        counts[b] = left.count, right.count
    return (s_all, f_all, *logs, counts) if vectors else (s_all, f_all)


def bidiagonal_svd(d, e, left: RotationLog, right: RotationLog, capacity):
    """The singular values of one bidiagonal (d, e), descending, its rotations logged (e turned in place)."""
    n = d.shape[0]
    dtype = d.dtype
    epsilon = np.finfo(dtype).eps
    with np.errstate(all="ignore"):
        # Scaled to largest entry 1: the squares in the shift neither overflow nor underflow.
        scale = max(np.max(np.abs(d), initial=0), np.max(np.abs(e[:n - 1]), initial=0))
        if scale != 0:
            d /= scale
            e /= scale
        last = n - 1
        for _ in range(MAX_QR_STEPS * n):
            if last <= 0 or max(left.count, right.count) + 4 * n > capacity:
                break
            low = deflated(d, e, last, epsilon)
            if low == last:
                last -= 1
                continue
            zero = -1
            for k in range(low, last + 1):
                if abs(d[k]) <= epsilon:
                    d[k] = 0
                    zero = k
            if zero == last:
                chase_column(d, e, low, last, right)
            elif zero >= 0:
                chase_row(d, e, zero, last, left)
            else:
                golub_kahan_step(d, e, low, last, left, right)
        if last > 0:
            d[:] = np.nan
        for k in range(n):
            if d[k] < 0:
                d[k] = -d[k]
                right.add(k, k, -1, 0)
        for i in range(n):
            best = i
            for j in range(i + 1, n):
                if d[j] > d[best]:
                    best = j
            if best != i:
                d[i], d[best] = d[best], d[i]
                left.add(i, best, 0, 1)
                right.add(i, best, 0, 1)
        return (d * scale).astype(dtype)


def chase_row(d, e, k, last, left: RotationLog):
    """d[k] = 0: e[k] moved along row k to the right and out, by rotations of rows j and k from the left."""
    f = e[k]
    e[k] = 0
    for j in range(k + 1, last + 1):
        c, s, r = rotation(d[j], f)
        d[j] = r
        left.add(j, k, c, s)
        if j < last:
            f = -s * e[j]
            e[j] = c * e[j]


def chase_column(d, e, low, last, right: RotationLog):
    """d[last] = 0: e[last - 1] moved up column last and out, by rotations of columns j and last."""
    f = e[last - 1]
    e[last - 1] = 0
    for j in range(last - 1, low - 1, -1):
        c, s, r = rotation(d[j], f)
        d[j] = r
        right.add(j, last, c, s)
        if j > low:
            f = -s * e[j - 1]
            e[j - 1] = c * e[j - 1]


def golub_kahan_step(d, e, low, last, left: RotationLog, right: RotationLog):
    """One implicit QR step on the window low..last (Golub and Van Loan's Algorithm 8.6.1): Wilkinson's
    shift from the trailing 2x2 of B^T B, the bulge chased down by right and left rotations."""
    t11 = d[last - 1] ** 2 + (e[last - 2] ** 2 if last - 1 > low else 0)
    t12, t22 = d[last - 1] * e[last - 1], d[last] ** 2 + e[last - 1] ** 2
    delta = (t11 - t22) / 2
    denominator = delta + (1 if delta >= 0 else -1) * np.sqrt(delta * delta + t12 * t12)
    shift = t22 - (t12 * t12 / denominator if denominator != 0 else 0)
    y, z = d[low] * d[low] - shift, d[low] * e[low]
    for k in range(low, last):
        c, s, r = rotation(y, z)
        if k > low:
            e[k - 1] = r
        dk, ek, dl = d[k], e[k], d[k + 1]
        d[k], e[k], bulge, d[k + 1] = c * dk + s * ek, -s * dk + c * ek, s * dl, c * dl
        right.add(k, k + 1, c, s)
        c, s, r = rotation(d[k], bulge)
        d[k] = r
        ek, dl = e[k], d[k + 1]
        e[k], d[k + 1] = c * ek + s * dl, -s * ek + c * dl
        left.add(k, k + 1, c, s)
        if k < last - 1:
            bulge, e[k + 1] = s * e[k + 1], c * e[k + 1]
            y, z = e[k], bulge


def lasr_infer(types, attrs):
    require(len(types) == 4, f"library_call: solver.lasr takes X, pairs, cs and count, got {len(types)} operands")
    m, pairs, cs, count = types
    require(m.ndim == 3 and m.dtype in REAL and pairs.dtype == "i32" and cs.dtype == m.dtype and count.dtype == "i32"
            and pairs.ndim == 3 and pairs.shape == cs.shape and pairs.shape[2] == 2 and pairs.shape[0] == m.shape[0]
            and count.shape == (m.shape[0],),
            f"library_call: solver.lasr takes X[B, c, r], pairs[B, R, 2] i32, cs[B, R, 2] of M's dtype and "
            f"count[B] i32, got {', '.join(map(str, types))}")
    return [m]


def lasr_reference(m, pairs, cs, count):
    out = np.array(m, copy=True)
    for b in range(m.shape[0]):
        for t in range(count[b]):
            (p, q), (c, s) = pairs[b, t], cs[b, t]
            x, y = out[b, p].copy(), out[b, q].copy()
            out[b, p], out[b, q] = c * x + s * y, -s * x + c * y
    return out


ROUTINES = {
    "gebrd": Routine({}, gebrd_infer, gebrd_reference, "Householder bidiagonalization (libs/solver/bidiagonal.py)"),
    "bdsqr": Routine({"vectors": "bool"}, bdsqr_infer, bdsqr_reference,
                     "singular values of a bidiagonal, implicit QR (libs/solver/bidiagonal.py)"),
    "lasr": Routine({}, lasr_infer, lasr_reference, "a log of plane rotations applied to rows "
                                                    "(libs/solver/bidiagonal.py)"),
}
