"""The solver's divide-and-conquer merge of the bidiagonal singular value problem (LAPACK's bdsdc:
lasd1's merge, lasd2's deflation, lasd3's vectors by lasd4's secular equation), on stacks of merges:

  lasd1(d[G, n], z[G, n], alpha[G], beta[G]) -> s[G, n], U[G, n, n], V[G, n, n], work[G, 9 n],
      iwork[G, 8 n] i32; n even, h = n / 2.
      The SVD M = U diag(s) V^T of M = diag(d) + e_{h-1} w^T, w = [alpha z[:h], beta z[h:]], where
      d[h-1] = d[n-1] = 0 (read as zero whatever they hold): s[:n-1] descending and s[n-1] = 0, whose
      vectors are U's e_{n-1} (M's row n - 1 is zero) and a null vector of M.
      This is one merge of square upper bidiagonals whose last diagonal entry is zero (so their last
      row is zero): S1 and S2 of h rows each, with SVDs S1 = U1 diag(s1) V1^T (s1[h-1] = 0, U1's last
      row and column e_{h-1}) and S2's alike, merged by the row of S1 that is zero, which gets alpha in
      its own column and beta in S2's first: S = diag(S1, S2) + e_{h-1} (alpha e_{h-1} + beta e_h)^T is
      again such a bidiagonal, S = diag(U1, U2) M diag(V1, V2)^T for d = [s1, s2], z = [V1's last row,
      V2's first row], and S's SVD is diag(U1, U2) U, s, diag(V1, V2) V (the GEMMs the frontend runs),
      U's last row and column again e_{n-1}. (LAPACK's lasd1 merges an N x (N + 1) bidiagonal from
      halves with an extra column; these are its halves with the zero row below them, so that every
      problem is square and the halves are of equal size.)
      work and iwork are scratch (their contents unspecified).

The merge, one problem at a time as lasd1/lasd2/lasd3 run it, scaled by max(|alpha|, |beta|, |d|):
  1. M's columns h - 1 and n - 1 (where d is zero) rotated into one, so that w[n - 1] = 0: column n - 1
     is then zero and row n - 1 too, the pair (0, e_{n-1}, the rotated e_{n-1}) set apart; what is left is
     the arrow e_o w^T + diag(d) on the other n - 1 coordinates, o = h - 1, d[o] = 0;
  2. deflation with tol = 8 eps (lasd2's, of the scaled problem): in ascending order of d, an entry with
     |w_i| <= tol is a singular triple (d_i, e_i, e_i) already; one with d_i <= tol (next to d[o] = 0) is
     taken as d_i = 0 and its w rotated into w[o] by a rotation of columns o and i (its row is then zero:
     the triple (0, e_i, the rotated e_i)); of two neighbours (the deflated skipped) whose rotation zeroing
     one w entry would couple them by |t c s| <= tol (t their distance), the rotation is applied to rows and
     columns alike and the first deflated; o stays, w[o] raised to tol if smaller (so that d[o] stays a
     pole apart from the first root), unless all the others are deflated and |w[o]| <= tol, when it is the
     triple (0, e_o, e_o);
  3. the K kept d's (d[o] = 0 first, strictly ascending, > tol apart) and w's: the secular equation
     1 + sum_i w_i^2 / ((d_i - sigma)(d_i + sigma)) = 0 has one root in each (d_j, d_j+1) and one in
     (d_K-1, sqrt(d_K-1^2 + |w|^2)). Each is found from the nearer pole d_origin in the singular values
     themselves, as lasd4: sigma = d_origin + tau, every difference d_i^2 - sigma^2 taken as ((d_i -
     d_origin) - tau)((d_i + d_origin) + tau) (so that the small singular values keep their relative
     accuracy); the steps are the two-pole rational model (laed4's, divide.py) on mu = sigma^2 -
     d_origin^2, safeguarded by bisection on the bracket f's sign keeps, tau = mu / (d_origin +
     sqrt(d_origin^2 + mu));
  4. the vectors by Gu and Eisenstat's formula (lasd3): w^_i^2 = prod_j (sigma_j^2 - d_i^2) / prod_{k != i}
     (d_k^2 - d_i^2), right vector j = (w^_i / (d_i^2 - sigma_j^2))_i, left vector j = (-1 at o, d_i w^_i /
     (d_i^2 - sigma_j^2) elsewhere), each normalized, so that they are orthogonal however close the roots;
  5. the roots and the deflated values sorted together, descending; the rotations undone on V's rows
     (and on U's, for those of rows and columns alike), last first.
bdsdc itself (the split, the leaves by bdsqr, the merges' GEMMs) is the frontend's
(frontend/cnp/linalg_solver.py, bidiagonal_vectors). The kernel (divide_svd_kernels.py) runs the
reference's steps in the operands' dtype.
"""
from __future__ import annotations

import numpy as np

from ...ir.opdef import require
from ...ir.ops.library import Routine
from ...ir.types import TensorType
from .divide import SECULAR_STEPS, model_step
from .routines import REAL

WORK = 9    # work's entries per entry of d: scaled d, w, the K d's and w's, tau, w^, values, c, s
IWORK = 8   # iwork's: ascending order, kept flags, the kept then deflated indices, origins, columns, rotation
# pairs (two), whether a rotation turns rows too


def lasd1_infer(types, attrs):
    require(len(types) == 4, f"library_call: solver.lasd1 takes d, z, alpha and beta, got {len(types)} operands")
    d, z, alpha, beta = types
    require(d.ndim == 2 and d.dtype in REAL and z == d and alpha == beta and alpha.dtype == d.dtype
            and alpha.shape == (d.shape[0],) and d.shape[1] % 2 == 0,
            f"library_call: solver.lasd1 takes real d[G, n], z[G, n] (n even), alpha[G] and beta[G] of one "
            f"dtype, got {', '.join(map(str, types))}")
    groups, n = d.shape
    return [d, TensorType(d.dtype, (groups, n, n)), TensorType(d.dtype, (groups, n, n)),
            TensorType(d.dtype, (groups, WORK * n)), TensorType("i32", (groups, IWORK * n))]


def rotation_to(keep, drop):
    """(c, s, r): c keep + s drop = r, -s keep + c drop = 0; (1, 0, 0) for (0, 0)."""
    r = np.sqrt(keep * keep + drop * drop)   # no overflow: the scaled entries are at most 1
    return (keep / r, drop / r, r) if r != 0 else (1, 0, 0)


def deflated(ds, w, o, tol):
    """lasd2's deflation of the arrow (ds, w) (step 2), in place: (kept indices, d ascending, o first;
    rotations (p, q, c, s, both): V[p], V[q] = c V[p] - s V[q], s V[p] + c V[q] undoes one, on U too if both)."""
    others = [i for i in np.argsort(ds, kind="stable") if i != o]
    kept, rotations, candidate = [], [], -1
    for i in others:
        if abs(w[i]) <= tol:
            continue
        if ds[i] <= tol:
            c, s, w[o] = rotation_to(w[o], w[i])
            w[i], ds[i] = 0, 0
            rotations.append((o, i, c, s, False))
            continue
        if candidate >= 0:
            c, s, r = rotation_to(w[i], w[candidate])
            if abs((ds[i] - ds[candidate]) * c * s) <= tol:
                w[i], w[candidate] = r, 0
                dp, di = ds[candidate], ds[i]
                ds[candidate], ds[i] = c * c * dp + s * s * di, s * s * dp + c * c * di
                rotations.append((candidate, i, c, -s, True))
            else:
                kept.append(candidate)
        candidate = i
    if candidate >= 0:
        kept.append(candidate)
    if kept and abs(w[o]) <= tol:
        w[o] = tol
    return ([o] if kept or abs(w[o]) > tol else []) + kept, rotations


def squared_distance(di, origin, tau):
    """di^2 - sigma^2 for sigma = origin + tau, as ((di - origin) - tau)((di + origin) + tau)."""
    return ((di - origin) - tau) * ((di + origin) + tau)


def singular_root(dl, zl, j, eps):
    """(origin, tau): root j of 1 + sum zl^2 / (dl^2 - sigma^2) is dl[origin] + tau (lasd4's problem),
    found on mu = sigma^2 - dl[origin]^2 as divide.py's secular_root finds laed4's."""
    k = len(dl)
    one, zero = dl.dtype.type(1), dl.dtype.type(0)
    gap = (dl[j + 1] - dl[j]) * (dl[j + 1] + dl[j]) if j < k - 1 else zero   # between the poles' squares
    if j == k - 1:
        origin, lo, hi = j, zero, np.sum(zl * zl)
    else:
        mid = gap / 2
        at_mid = one + np.sum(zl * zl / ((dl - dl[j]) * (dl + dl[j]) - mid))
        origin, lo, hi = (j, zero, mid) if at_mid >= 0 else (j + 1, -mid, zero)
    base = dl[origin]
    mu = (lo + hi) / 2
    for _ in range(SECULAR_STEPS):
        tau = mu / (base + np.sqrt(base * base + mu))
        delta = squared_distance(dl, base, tau)
        terms = zl * zl / delta
        slopes = terms / delta
        psi, phi = np.sum(terms[:j + 1]), np.sum(terms[j + 1:])
        dpsi, dphi = np.sum(slopes[:j + 1]), np.sum(slopes[j + 1:])
        f = one + psi + phi
        if f < 0:
            lo = mu
        else:
            hi = mu
        bound = eps * (k + 8) * (one + abs(psi) + abs(phi) + abs(mu) * (dpsi + dphi))
        if abs(f) <= bound or hi - lo <= 2 * eps * max(abs(lo), abs(hi)):
            break
        b1 = dpsi * delta[j] ** 2
        a_all = one + psi - b1 / delta[j]
        if j == k - 1:   # origin j: the pole at mu = 0
            with np.errstate(all="ignore"):
                y = b1 / a_all
            mu = y if lo < y < hi else (lo + hi) / 2
            continue
        b2 = dphi * delta[j + 1] ** 2
        a_all = a_all + phi - b2 / delta[j + 1]
        if origin == j:   # a y^2 - (a gap + b1 + b2) y + b1 gap = 0, y from the lower pole
            mu = model_step(a_all, -(a_all * gap + b1 + b2), b1 * gap, lo, hi)
        else:             # a y^2 + (a gap - b1 - b2) y - b2 gap = 0, y from the upper pole
            mu = model_step(a_all, a_all * gap - b1 - b2, -b2 * gap, lo, hi)
    return origin, mu / (base + np.sqrt(base * base + mu))


def merge(d, z, alpha, beta):
    """One merge of lasd1_reference: (s, U, V)."""
    n, dtype = len(d), d.dtype.type
    eps = np.finfo(d.dtype).eps / 2   # LAPACK's dlamch('E'): the unit roundoff
    half, last = n // 2, n - 1
    o = half - 1
    d[o] = d[last] = 0
    scale = max(abs(alpha), abs(beta), np.max(np.abs(d)))
    scale = scale if scale != 0 else dtype(1)
    ds = d / scale
    w = np.concatenate([z[:half] * (alpha / scale), z[half:] * (beta / scale)]).astype(d.dtype)
    tol = dtype(8 * eps) * max(abs(alpha) / scale, abs(beta) / scale, np.max(np.abs(ds)))
    # 1. the zero columns o and last combined into o
    c, s, w[o] = rotation_to(w[o], w[last])
    w[last] = 0
    arrow = ds[:last].copy(), w[:last].copy()
    kept, rotations = deflated(*arrow, o, tol)
    rotations = [(o, last, c, s, False)] + rotations
    ds[:last], w[:last] = arrow
    dl, zl = ds[kept], w[kept]
    roots = [singular_root(dl, zl, j, eps) for j in range(len(kept))]
    # distance[i, j] = dl_i^2 - sigma_j^2
    distance = np.array([squared_distance(dl, dl[origin], tau) for origin, tau in roots]).T.reshape(len(kept), len(kept))
    zhat = np.empty_like(dl)
    for i in range(len(kept)):
        product = distance[i, i]
        for j in range(len(kept)):
            if j != i:
                product = product * distance[i, j] / ((dl[i] - dl[j]) * (dl[i] + dl[j]))
        zhat[i] = np.copysign(np.sqrt(max(-product, dtype(0))), zl[i])
    deflations = [i for i in range(last) if i not in set(kept)]
    values = np.array([dl[origin] + tau for origin, tau in roots] + [ds[i] for i in deflations], d.dtype)
    columns = np.argsort(np.argsort(-values, kind="stable"), kind="stable")
    u, v = np.zeros((n, n), d.dtype), np.zeros((n, n), d.dtype)
    for j in range(len(kept)):
        right = zhat / distance[:, j]
        left = dl * zhat / distance[:, j]
        left[0] = -1   # o's row: M's row w^T
        v[kept, columns[j]] = right / np.sqrt(np.sum(right * right))
        u[kept, columns[j]] = left / np.sqrt(np.sum(left * left))
    for slot, i in enumerate(deflations, len(kept)):
        u[i, columns[slot]] = v[i, columns[slot]] = 1
    u[last, last] = v[last, last] = 1
    for p, q, c, s, both in reversed(rotations):
        for x in (v, u) if both else (v,):
            x[p], x[q] = c * x[p] - s * x[q], s * x[p] + c * x[q]
    s_out = np.zeros_like(d)
    s_out[columns] = values * scale
    return s_out, u, v


def lasd1_reference(d, z, alpha, beta):
    groups, n = d.shape
    s, u, v = np.zeros_like(d), np.zeros((groups, n, n), d.dtype), np.zeros((groups, n, n), d.dtype)
    with np.errstate(all="ignore"):
        for g in range(groups):
            s[g], u[g], v[g] = merge(np.array(d[g]), np.array(z[g]), alpha[g], beta[g])
    return s, u, v, np.zeros((groups, WORK * n), d.dtype), np.zeros((groups, IWORK * n), np.int32)


ROUTINES = {
    "lasd1": Routine({}, lasd1_infer, lasd1_reference, "divide and conquer's merge of two bidiagonal singular "
                                                       "value problems (libs/solver/divide_svd.py)"),
}
