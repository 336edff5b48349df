"""The solver's divide-and-conquer merge of the symmetric tridiagonal eigenproblem (LAPACK's stedc:
laed1's merge, laed2's deflation, laed3's vectors by laed4's secular equation), on stacks of merges:

  laed1(d[G, m], z[G, m], rho[G]) -> w[G, m], U[G, m, m], work[G, 9 m], iwork[G, 7 m] i32
      the eigenvalues w (ascending) and eigenvectors U (columns, in w's order) of the rank-one
      modification D + r u u^T of a diagonal D = diag(d), m even, where d[:m/2] and d[m/2:] are each
      ascending (the two halves' eigenvalues), u = [z[:m/2], sign(rho) z[m/2:]] / sqrt(2) and r = 2 |rho|:
      for T = [[T1, rho e_last e_0^T], [rho e_0 e_last^T, T2]] with T1 - |rho| e_last e_last^T = Z1 D1 Z1^T and
      T2 - |rho| e_0 e_0^T = Z2 D2 Z2^T, z = [Z1's last row, Z2's first row] and T = Zb (D + r u u^T) Zb^T,
      Zb = diag(Z1, Z2): T's eigenvectors are Zb U (a GEMM per half, the frontend's).
      work and iwork are scratch (their contents unspecified).

The merge, one problem at a time as laed2/laed3 run it:
  1. d's halves merged into ascending order (the permutation kept);
  2. deflation with tol = 8 eps max(max |d|, max |u|): an entry with r |u_i| <= tol is an eigenpair
     (d_i, e_i) already; of two neighbours (in the sorted order, the deflated skipped) whose rotation
     zeroing one entry of u would couple them by |t c s| <= tol (t their distance), the rotation is
     applied and the first deflated;
  3. the K remaining d's (strictly ascending) and u's: the secular equation
     1 + r sum_i u_i^2 / (d_i - lambda) = 0 has one root in each (d_j, d_j+1) and one in (d_K-1,
     d_K-1 + r |u|^2). Each is found as tau from the nearer pole ("origin", so that d_i - lambda =
     (d_i - d_origin) - tau is accurate): the two-pole rational model of Bunch, Nielsen and Sorensen
     (laed4's), safeguarded by bisection on the bracket f's sign keeps;
  4. the vectors by Gu and Eisenstat's formula (laed3): u^_i^2 = prod_j (lambda_j - d_i) / prod_{j != i}
     (d_j - d_i), vector j = (u^_i / (d_i - lambda_j))_i normalized, so that they are orthogonal however
     close the roots;
  5. the deflated pairs and the roots sorted together, the deflation's rotations undone on U's rows.
stedc itself (the split, the leaves by steqr, the merges' GEMMs) is the frontend's
(frontend/cnp/linalg_solver.py, tridiagonal_eigenvectors). The kernel (divide_kernels.py) runs the
reference's steps in the operands' dtype.
"""
from __future__ import annotations

import numpy as np

from ...ir.opdef import require
from ...ir.ops.library import Routine
from ...ir.types import TensorType
from .routines import REAL

SECULAR_STEPS = 100   # iterations of a root's safeguarded rational steps at most (bisection halves the
# bracket each step it takes: 100 cover a bracket of ~1 to eps times a subnormal distance)
WORK = 9    # work's entries per entry of d: sorted d, sorted u, the K d's and u's, tau, u^, values, c, s
IWORK = 7   # iwork's: permutation, deflated flags, the K indices, origins, columns, rotation pairs


def laed1_infer(types, attrs):
    require(len(types) == 3, f"library_call: solver.laed1 takes d, z and rho, got {len(types)} operands")
    d, z, rho = types
    require(d.ndim == 2 and d.dtype in REAL and z == d and rho.dtype == d.dtype and rho.shape == (d.shape[0],)
            and d.shape[1] % 2 == 0,
            f"library_call: solver.laed1 takes real d[G, m], z[G, m] (m even) and rho[G] of one dtype, got "
            f"{', '.join(map(str, types))}")
    groups, m = d.shape
    return [d, TensorType(d.dtype, (groups, m, m)), TensorType(d.dtype, (groups, WORK * m)),
            TensorType("i32", (groups, IWORK * m))]


def merged_order(d, half):
    """The permutation merging the ascending halves d[:half], d[half:] (the first half first on ties)."""
    m, first, second, order = len(d), 0, half, []
    while len(order) < m:
        take_first = second >= m or (first < half and d[first] <= d[second])
        order.append(first if take_first else second)
        first, second = (first + 1, second) if take_first else (first, second + 1)
    return np.array(order)


def deflated(ds, zs, r, eps):
    """laed2's deflation on the sorted (ds, zs), in place: (kept indices ascending, rotations (p, i, c, s))."""
    tol = 8 * eps * max(np.max(np.abs(ds)), np.max(np.abs(zs)))
    kept, rotations, candidate = [], [], -1
    if r * np.max(np.abs(zs)) <= tol:
        return kept, rotations
    for i in range(len(ds)):
        if r * abs(zs[i]) <= tol:
            continue
        if candidate >= 0:
            tau = np.sqrt(zs[candidate] ** 2 + zs[i] ** 2)
            c, s = zs[i] / tau, zs[candidate] / tau
            if abs((ds[i] - ds[candidate]) * c * s) <= tol:
                zs[i], zs[candidate] = tau, 0
                dp, di = ds[candidate], ds[i]
                ds[candidate], ds[i] = c * c * dp + s * s * di, s * s * dp + c * c * di
                rotations.append((candidate, i, c, s))
            else:
                kept.append(candidate)
        candidate = i
    if candidate >= 0:
        kept.append(candidate)
    return kept, rotations


def model_step(a, b, c, lo, hi):
    """The root of a y^2 + b y + c = 0 strictly inside (lo, hi), else the bracket's midpoint."""
    with np.errstate(all="ignore"):
        disc = b * b - 4 * a * c
        t = -(b + np.copysign(np.sqrt(disc), b)) / 2
        for y in (t / a, c / t):
            if lo < y < hi:
                return y
    return (lo + hi) / 2


def secular_root(dl, zl, r, j, eps):
    """(origin, tau): root j of 1 + r sum zl^2 / (dl - lambda) is dl[origin] + tau (laed4's problem)."""
    k = len(dl)
    one = dl.dtype.type(1)
    if j == k - 1:
        origin, lo, hi = j, dl.dtype.type(0), r * np.sum(zl * zl)
    else:
        gap = dl[j + 1] - dl[j]
        mid = gap / 2
        at_mid = one + r * np.sum(zl * zl / ((dl - dl[j]) - mid))
        origin, lo, hi = (j, dl.dtype.type(0), mid) if at_mid >= 0 else (j + 1, -mid, dl.dtype.type(0))
    poles = dl - dl[origin]
    tau = (lo + hi) / 2
    for _ in range(SECULAR_STEPS):
        delta = poles - tau
        terms = zl * zl / delta
        slopes = terms / delta
        psi, phi = np.sum(terms[:j + 1]), np.sum(terms[j + 1:])
        dpsi, dphi = np.sum(slopes[:j + 1]), np.sum(slopes[j + 1:])
        f = one + r * (psi + phi)
        if f < 0:
            lo = tau
        else:
            hi = tau
        bound = eps * (k + 8) * (one + r * (abs(psi) + abs(phi)) + r * abs(tau) * (dpsi + dphi))
        if abs(f) <= bound or hi - lo <= 2 * eps * max(abs(lo), abs(hi)):
            break
        b1 = r * dpsi * delta[j] ** 2
        a_all = one + r * psi - b1 / delta[j]
        if j == k - 1:
            with np.errstate(all="ignore"):
                y = poles[j] + b1 / a_all
            tau = y if lo < y < hi else (lo + hi) / 2
            continue
        b2 = r * dphi * delta[j + 1] ** 2
        a_all = a_all + r * phi - b2 / delta[j + 1]
        gap = dl[j + 1] - dl[j]
        if origin == j:   # a y^2 - (a gap + b1 + b2) y + b1 gap = 0, y from the lower pole
            tau = model_step(a_all, -(a_all * gap + b1 + b2), b1 * gap, lo, hi)
        else:             # a y^2 + (a gap - b1 - b2) y - b2 gap = 0, y from the upper pole
            tau = model_step(a_all, a_all * gap - b1 - b2, -b2 * gap, lo, hi)
    return origin, tau


def merge(d, z, rho):
    """One merge of laed1_reference: (w, U)."""
    m, dtype = len(d), d.dtype.type
    eps = np.finfo(d.dtype).eps / 2   # LAPACK's dlamch('E'): the unit roundoff
    half = m // 2
    u = z * dtype(1 / np.sqrt(2))
    if rho < 0:
        u[half:] = -u[half:]
    r = dtype(2) * abs(rho)
    order = merged_order(d, half)
    ds, zs = d[order].copy(), u[order].copy()
    kept, rotations = deflated(ds, zs, r, eps)
    dl, zl = ds[kept], zs[kept]
    roots = [secular_root(dl, zl, r, j, eps) for j in range(len(kept))]
    # distance[i, j] = dl_i - lambda_j
    distance = np.array([(dl - dl[o]) - tau for o, tau in roots]).T.reshape(len(kept), len(kept))
    zhat = np.empty_like(dl)
    for i in range(len(kept)):
        product = distance[i, i]
        for j in range(len(kept)):
            if j != i:
                product = product * distance[i, j] / (dl[i] - dl[j])
        zhat[i] = np.copysign(np.sqrt(max(-product, dtype(0))), zl[i])
    values = np.concatenate([[dl[o] + tau for o, tau in roots],
                             [ds[i] for i in range(m) if i not in set(kept)]]).astype(d.dtype)
    sources = kept + [i for i in range(m) if i not in set(kept)]
    columns = np.argsort(np.argsort(values, kind="stable"), kind="stable")
    v = np.zeros((m, m), d.dtype)   # rows: the sorted coordinates
    for j in range(len(kept)):
        vector = zhat / distance[:, j]
        v[kept, columns[j]] = vector / np.sqrt(np.sum(vector * vector))
    for slot in range(len(kept), m):
        v[sources[slot], columns[slot]] = 1
    for p, i, c, s in reversed(rotations):
        v[p], v[i] = c * v[p] + s * v[i], -s * v[p] + c * v[i]
    w = np.empty_like(d)
    w[columns] = values
    out = np.empty_like(v)
    out[order] = v
    return w, out


def laed1_reference(d, z, rho):
    groups, m = d.shape
    w, u = np.zeros_like(d), np.zeros((groups, m, m), d.dtype)
    with np.errstate(all="ignore"):
        for g in range(groups):
            w[g], u[g] = merge(np.array(d[g]), np.array(z[g]), rho[g])
    return w, u, np.zeros((groups, WORK * m), d.dtype), np.zeros((groups, IWORK * m), np.int32)


ROUTINES = {
    "laed1": Routine({}, laed1_infer, laed1_reference, "divide and conquer's merge of two tridiagonal "
                                                       "eigenproblems (libs/solver/divide.py)"),
}
