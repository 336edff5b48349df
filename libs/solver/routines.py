"""The solver library's routines (ir/ops/library.py's contract), LAPACK's and rocSOLVER's, on stacks
of row-major matrices: every operand has one batch dimension first ([B, rows, columns]; B may be 1).
getrf, getrs, getri, potrf, potrs, trsm, trtri, geqrf, orgqr, syevj and gesvdj take f32, f64, c64 and
c128 (LAPACK's s, d, c and z routines: the transposes below are conjugate transposes for complex
matrices), and so do geev and trevc, whose operands and results differ for complex matrices (below).

  getrf(A[B, m, n]) -> LU[B, m, n], pivots[B, min(m, n)] i32, permutation[B, m] i32
      LU with partial pivoting, P A = L U: L unit lower (below LU's diagonal), U upper (on and
      above it). pivots[k] is the row swapped with row k at step k (LAPACK's ipiv, from 0);
      permutation is P as row indices (row i of P A is row permutation[i] of A). The pivot of a
      column is its first entry of largest magnitude (LAPACK's i_amax: |re| + |im| for a complex
      entry). A zero pivot is left in U and its column is not scaled (LAPACK's getf2): solving with
      it gives infs/NaNs.
  potrf(A[B, n, n]) -> L[B, n, n]
      Cholesky, A = L L^T (L L^H: A Hermitian), of A's lower triangle (its upper one is not read,
      nor the imaginary part of its diagonal); L's upper triangle is zero. A matrix that is not
      positive definite takes the square root of a negative number: NaN from that column on.
  trsm(A[B, n, n], X[B, n, k]) -> Y[B, n, k], attributes lower, trans, unit_diagonal
      Y = op(A)^-1 X for a triangular A (left side; op(A) = A^T, A^H when complex, when trans),
      reading only the triangle `lower` names (and not the diagonal when unit_diagonal).

  laswp(pivots[B, k] i32) -> permutation[B, m] i32, inverse[B, m] i32, attribute rows (m)
      the permutation LAPACK's row swaps make (pivots[k] swapped with k, in order, from the
      identity), and its inverse (inverse[permutation[i]] = i).

  lapmr(X[B, m, n], permutation[B, p] i32) -> Y[B, p, columns], attributes first, columns
      rows gathered: Y[b, i, j] = X[b, permutation[b, i], first + j] (LAPACK's lapmr, forward, on
      a window of columns), the row swaps of a blocked LU applied to the rows they move, read
      straight from the matrix they are in.

  geqrf(A[B, m, n]) -> QR[B, m, n], tau[B, min(m, n)]
      Householder QR, LAPACK's geqr2: A = H_0 ... H_{k-1} R with H_j = I - tau_j v_j v_j^H, v_j
      zero above j, 1 at j, QR's column j below the diagonal; R on and above QR's diagonal.
      tau_j = 0 (H_j = I) where the column below the diagonal is zero already.
  orgqr(QR[B, m, n], tau[B, k]) -> Q[B, m, q], attribute columns (q)
      the first q columns of H_0 ... H_{k-1} (LAPACK's org2r; q = k reduced, q = m complete).

  geev(A[B, n, n]) -> wr[B, n], wi[B, n], H[B, n, n] (, Z[B, n, n]), attribute vectors (A real)
  geev(A[B, n, n]) -> w[B, n], H[B, n, n] (, Z[B, n, n]), attribute vectors (A complex)
      eigenvalues (real and imaginary parts) of general matrices, as LAPACK's geev: Hessenberg
      reduction, then Francis double-shift QR steps until the matrix deflates (H is the work copy);
      with vectors, H is the real Schur form T = Z^T A Z (2x2 blocks not standardized) and Z the
      Schur vectors (a 2x2 block and its two Schur vectors are fixed only up to a rotation, which
      rounding decides: kernel and reference agree on the identities, not entry for entry).
      A complex A (LAPACK's zgeev): Hessenberg reduction, then single-shift QR steps; w complex in the
      order they deflate (w[k] = T[k, k]); with vectors T = Z^H A Z is upper triangular.
  gebal(A[B, n, n]) -> B[B, n, n], scale[B, n] (real), permutation[B, n] i32, rows[B, n] i32
      balancing as LAPACK's gebal (job 'B', geev's default): B = D^-1 P^T A P D, P moving rows and
      columns that isolate an eigenvalue out of the active window (B[i, j] = (D^-1 A D)[p[i], p[j]]),
      D = diag(scale) powers of 2 that even out the window's row and column norms; rows is p's
      inverse: an eigenvector x of B is v[r] = (D x)[rows[r]] of A.
  trevc(T[B, n, n], wr[B, n], wi[B, n]) -> X[B, n, n] complex (c64 for f32, c128 for f64)
  trevc(T[B, n, n], w[B, n]) -> X[B, n, n], T complex (upper triangular)
      column j: an eigenvector of the quasi-triangular T for eigenvalue wr[j] + i wi[j] (w[j]), whose
      1x1 or 2x2 block is at row j (LAPACK's trevc, right vectors, back substitution in complex
      arithmetic; a near-zero divisor is replaced by smin = eps (|wr| + |wi|), as trevc does; rescaled
      against overflow, its largest entry of magnitude |re| + |im| = 1).
  syevj(A[B, n, n]) -> w[B, n], V[B, n, n], D[B, n, n]
      symmetric eigenproblem by cyclic Jacobi (rocSOLVER's syevj; the frontend takes syev, faster at
      every size measured: linalg_solver.symmetric_eigenproblem): rotations J^T A J zero each
      off-diagonal entry in turn (Golub and Van Loan's sym.schur2), sweep after sweep until the
      off-diagonal part's Frobenius norm is at most eps ||A||_F (or MAX_SWEEPS); A = V diag(w) V^T
      with w ascending, D the rotated matrix (diagonal to that tolerance). A must be symmetric
      (Hermitian: each rotation D J D^H, D = diag(1, e), e the phase of conj(a_pq); A = V diag(w)
      V^H, w real).

  syev(A[B, n, n]) -> w[B, n], V[B, n, n], H[B, n, n]
      symmetric (Hermitian) eigenproblem as LAPACK's syev (heev): Householder reduction of A's lower
      triangle to tridiagonal form, its subdiagonal made real by a diagonal unitary, then implicit QR
      steps with Wilkinson's shift; A = V diag(w) V^H, w real and ascending; H is the work copy (the
      tridiagonal form on its diagonal and subdiagonal; the QR steps' d and e in their real parts).
      About 9 n^3 flops against syevj's 30-60 n^3 for n in the hundreds; eigh's routine below 512
      rows (above, its steps as separate routines: tridiagonal.py's sytrd and steqr).

  gesvdj(A[B, m, n], m >= n) -> s[B, n], U[B, m, n], V[B, n, n]
      one-sided Jacobi (Hestenes; rocSOLVER's gesvdj): rotations of A's column pairs (the Jacobi
      rotation of their 2x2 Gram matrix) until every pair is orthogonal to eps (or MAX_SWEEPS);
      then s = the columns' norms, descending, U = the columns / s (a zero column stays zero),
      A = U diag(s) V^T (V^H; s real).

  getrs(LU[B, n, n], permutation[B, n] i32, X[B, n, k]) -> Y[B, n, k]
      A^-1 X from getrf's P A = L U: X's rows permuted, then L's and U's substitutions, in one
      kernel (LAPACK's getrs, no transpose).
  getri(LU[B, n, n], permutation[B, n] i32) -> X[B, n, n]
      A^-1 from getrf's P A = L U: getrs of the identity, each column's right-hand side made in
      the kernel (P's column), not read.
  potrs(C[B, n, n], X[B, n, k]) -> Y[B, n, k], attribute lower
      A^-1 X from potrf's A = L L^H, L = C (lower) or C^H (C holding U = L^H): L's and L^H's
      substitutions in one kernel (LAPACK's potrs).
  trtri(A[B, n, n]) -> X[B, n, n], attributes lower, unit_diagonal
      the inverse of a triangular A (LAPACK's trti2), triangular as A; only A's `lower` or upper
      triangle is read (not its diagonal when unit_diagonal).

The references compute step by step as the kernels do (kernels.py), in the operands' dtype.
"""
from __future__ import annotations

import numpy as np

from ...ir.opdef import require
from ...ir.ops.library import Routine
from ...ir.types import COMPLEX_PART, COMPLEXES, TensorType

REAL = ("f32", "f64")
REAL_OR_COMPLEX = ("f32", "f64", "c64", "c128")
COMPLEX_ROUTINES = ("getrf", "getrs", "getri", "potrf", "potrs", "trsm", "trtri", "geqrf", "orgqr", "syevj",
                    "gesvdj", "geev", "trevc", "gebal", "syev")   # the others: real only


def check_matrices(routine: str, types, count: int):
    require(len(types) == count, f"library_call: solver.{routine} takes {count} operand(s), got {len(types)}")
    dtypes = REAL_OR_COMPLEX if routine in COMPLEX_ROUTINES else REAL
    for t in types:
        require(t.ndim == 3, f"library_call: solver.{routine} takes stacks of matrices [B, rows, columns], got {t}")
        require(t.dtype in dtypes, f"library_call: solver.{routine} takes {' or '.join(dtypes)}, got {t}")
    require(len({t.dtype for t in types}) == 1, f"library_call: solver.{routine}'s operands differ in dtype: "
                                                f"{', '.join(map(str, types))}")


def getrf_infer(types, attrs):
    check_matrices("getrf", types, 1)
    (a,) = types
    batch, m, n = a.shape
    return [a, TensorType("i32", (batch, min(m, n))), TensorType("i32", (batch, m))]


def pivot_magnitude(x):
    """|x|, or LAPACK's cabs1 |re| + |im| for complex x (i_amax's measure)."""
    return np.abs(x.real) + np.abs(x.imag) if np.iscomplexobj(x) else np.abs(x)


def getrf_reference(a):
    lu = np.array(a, copy=True)
    batch, m, n = lu.shape
    pivots = np.zeros((batch, min(m, n)), np.int32)
    permutation = np.tile(np.arange(m, dtype=np.int32), (batch, 1))
    rows = np.arange(batch)
    with np.errstate(all="ignore"):
        for k in range(min(m, n)):
            p = k + np.argmax(pivot_magnitude(lu[:, k:, k]), axis=1)
            pivots[:, k] = p
            lu[rows, k], lu[rows, p] = lu[rows, p].copy(), lu[rows, k].copy()
            permutation[rows, k], permutation[rows, p] = permutation[rows, p], permutation[rows, k].copy()
            pivot = lu[:, k, k]
            scaled = pivot != 0
            lu[scaled, k + 1:, k] /= pivot[scaled, None]
            lu[:, k + 1:, k + 1:] -= lu[:, k + 1:, k:k + 1] * lu[:, k:k + 1, k + 1:]
    return lu, pivots, permutation


def potrf_infer(types, attrs):
    check_matrices("potrf", types, 1)
    (a,) = types
    require(a.shape[1] == a.shape[2], f"library_call: solver.potrf takes square matrices, got {a}")
    return [a]


def potrf_reference(a):
    l = np.tril(a)
    n = a.shape[-1]
    with np.errstate(all="ignore"):
        for j in range(n):
            diagonal = np.sqrt(np.real(l[:, j, j] - np.sum(l[:, j, :j] * np.conj(l[:, j, :j]), axis=1)))
            l[:, j, j] = diagonal
            below = l[:, j + 1:, j] - np.sum(l[:, j + 1:, :j] * np.conj(l[:, j:j + 1, :j]), axis=2)
            l[:, j + 1:, j] = below / diagonal[:, None]
    return l


def trsm_infer(types, attrs):
    check_matrices("trsm", types, 2)
    a, x = types
    require(a.shape[1] == a.shape[2] and a.shape[0] == x.shape[0] and a.shape[2] == x.shape[1],
            f"library_call: solver.trsm takes A[B, n, n] and X[B, n, k], got {a} and {x}")
    return [x]


def trsm_reference(a, x, lower, trans, unit_diagonal):
    op_a = np.conj(np.swapaxes(a, 1, 2)) if trans else a
    forward = lower != trans   # op(A) lower: rows in order
    y = np.array(x, copy=True)
    n = a.shape[1]
    with np.errstate(all="ignore"):
        for i in (range(n) if forward else reversed(range(n))):
            done = slice(0, i) if forward else slice(i + 1, n)
            row = y[:, i, :] - np.sum(op_a[:, i, done, None] * y[:, done, :], axis=1)
            y[:, i, :] = row if unit_diagonal else row / op_a[:, i, i, None]
    return y


def laswp_infer(types, attrs):
    require(len(types) == 1 and types[0].ndim == 2 and types[0].dtype == "i32",
            f"library_call: solver.laswp takes one i32 stack of pivots [B, k], got {', '.join(map(str, types))}")
    rows = attrs["rows"]
    require(rows >= types[0].shape[1], f"library_call: solver.laswp: {types[0]} has more pivots than rows={rows}")
    result = TensorType("i32", (types[0].shape[0], rows))
    return [result, result]


def laswp_reference(pivots, rows):
    batch = pivots.shape[0]
    permutation = np.tile(np.arange(rows, dtype=np.int32), (batch, 1))
    every = np.arange(batch)
    for k in range(pivots.shape[1]):
        p = pivots[:, k]
        permutation[every, k], permutation[every, p] = permutation[every, p], permutation[every, k].copy()
    inverse = np.empty_like(permutation)
    inverse[every[:, None], permutation] = np.arange(rows, dtype=np.int32)
    return permutation, inverse


def lapmr_infer(types, attrs):
    require(len(types) == 2 and types[0].ndim == 3 and types[1].ndim == 2 and types[1].dtype == "i32"
            and types[0].shape[0] == types[1].shape[0],
            f"library_call: solver.lapmr takes X[B, m, n] and an i32 permutation [B, p], got "
            f"{', '.join(map(str, types))}")
    x, permutation = types
    first, columns = attrs["first"], attrs["columns"]
    require(0 <= first and 0 <= columns and first + columns <= x.shape[2],
            f"library_call: solver.lapmr: columns {first}..{first + columns} are not within {x}")
    return [TensorType(x.dtype, (x.shape[0], permutation.shape[1], columns))]


def lapmr_reference(x, permutation, first, columns):
    return np.take_along_axis(x[:, :, first:first + columns], permutation[:, :, None].astype(np.int64), axis=1)


def geqrf_infer(types, attrs):
    check_matrices("geqrf", types, 1)
    (a,) = types
    batch, m, n = a.shape
    return [a, TensorType(a.dtype, (batch, min(m, n)))]


def householder(column):
    """(beta, tau, v without its leading 1) of LAPACK's larfg for a stack of columns [B, r] (complex:
    zlarfg, beta real, H = I - tau v v^H with H^H column = beta e_1)."""
    alpha, rest = column[:, 0], column[:, 1:]
    rest_norm2 = np.sum(np.abs(rest) ** 2, axis=1)
    norm = np.sqrt(np.abs(alpha) ** 2 + rest_norm2)
    beta = np.where(np.real(alpha) >= 0, -norm, norm)
    reflect = (rest_norm2 != 0) | (np.imag(alpha) != 0)
    tau = np.where(reflect, (beta - alpha) / beta, 0).astype(column.dtype)
    v = np.where(reflect[:, None], rest / (alpha - beta)[:, None], 0).astype(column.dtype)
    return np.where(reflect, beta, alpha).astype(column.dtype), tau, v


def reflect(x, v, tau):
    """(I - tau v v^H) x for stacks: v [B, r] (its leading 1 included), x [B, r, c]."""
    w = np.einsum("br,brc->bc", np.conj(v), x)
    return x - tau[:, None, None] * v[:, :, None] * w[:, None, :]


def geqrf_reference(a):
    qr = np.array(a, copy=True)
    batch, m, n = qr.shape
    taus = np.zeros((batch, min(m, n)), qr.dtype)
    with np.errstate(all="ignore"):
        for j in range(min(m, n)):
            beta, tau, v = householder(qr[:, j:, j])
            qr[:, j, j], qr[:, j + 1:, j], taus[:, j] = beta, v, tau
            full = np.concatenate([np.ones((batch, 1), qr.dtype), v], axis=1)
            qr[:, j:, j + 1:] = reflect(qr[:, j:, j + 1:], full, np.conj(tau))
    return qr, taus


def orgqr_infer(types, attrs):
    require(len(types) == 2, f"library_call: solver.orgqr takes QR and tau, got {', '.join(map(str, types))}")
    qr, tau = types
    check_matrices("orgqr", [qr], 1)
    batch, m, n = qr.shape
    columns = attrs["columns"]
    require(tau.shape == (batch, min(m, n)) and tau.dtype == qr.dtype and min(m, n) <= columns <= m,
            f"library_call: solver.orgqr takes QR[B, m, n], tau[B, min(m, n)] and columns in [min(m, n), m], got "
            f"{qr}, {tau} and columns={columns}")
    return [TensorType(qr.dtype, (batch, m, columns))]


def orgqr_reference(qr, tau, columns):
    batch, m, n = qr.shape
    q = np.tile(np.eye(m, columns, dtype=qr.dtype), (batch, 1, 1))
    for j in reversed(range(min(m, n))):
        v = np.concatenate([np.ones((batch, 1), qr.dtype), qr[:, j + 1:, j]], axis=1)
        q[:, j:, :] = reflect(q[:, j:, :], v, tau[:, j])
    return q


MAX_SWEEPS = 30   # cyclic Jacobi converges quadratically: about 10 sweeps in f64 for n up to a few hundred


def symmetric_eigen_infer(routine: str):
    """The shape rule of syev and syevj: a stack of square matrices -> w (real), V, the work matrix."""
    def infer(types, attrs):
        check_matrices(routine, types, 1)
        (a,) = types
        batch, n, columns = a.shape
        require(n == columns, f"library_call: solver.{routine} takes square matrices, got {a}")
        part = COMPLEX_PART.get(a.dtype, a.dtype)
        return [TensorType(part, (batch, n)), a, a]
    return infer


def rotation_capacity(n: int):
    """Entries of a rotation log (steqr's, bdsqr's): the QR steps stop while a step (n - 1 rotations) and
    a chase (n) could overflow 3 n^2 entries, then up to n signs and n swaps. A QR step's window
    shrinks as values converge, about two steps each: n^2 rotations a log is typical (an int or a
    kernel expression)."""
    return 3 * n * n + 3 * n


class RotationLog:
    """One matrix's log of plane rotations (pairs, cs and count), or none when not wanted."""
    def __init__(self, pairs, cs):
        self.pairs, self.cs, self.count = pairs, cs, 0

    def add(self, p, q, c, s):
        if self.pairs is not None:
            self.pairs[self.count], self.cs[self.count] = (p, q), (c, s)
            self.count += 1


def syevj_reference(a):
    d = np.array(a, copy=True)
    batch, n, _ = d.shape
    v = np.tile(np.eye(n, dtype=d.dtype), (batch, 1, 1))
    epsilon = np.finfo(d.dtype).eps
    with np.errstate(all="ignore"):
        for b in range(batch):
            total = np.sum(np.abs(d[b]) ** 2)
            for _ in range(MAX_SWEEPS):
                if np.sum(np.abs(d[b]) ** 2) - np.sum(np.abs(np.diagonal(d[b])) ** 2) <= epsilon * epsilon * total:
                    break
                for p in range(n):
                    for q in range(p + 1, n):
                        if d[b, p, q] == 0:
                            continue
                        # A complex a_pq: D J D^H, D = diag(1, e), e = conj(a_pq) / |a_pq|, J of |a_pq|.
                        magnitude = np.abs(d[b, p, q]) if np.iscomplexobj(d) else d[b, p, q]
                        phase = np.conj(d[b, p, q]) / magnitude if np.iscomplexobj(d) else 1
                        c, s = jacobi_rotation(np.real(d[b, p, p]), np.real(d[b, q, q]), magnitude)
                        rotation = np.array([[c, s * np.conj(phase)], [-s * phase, c]], d.dtype)
                        d[b][:, [p, q]] = d[b][:, [p, q]] @ rotation
                        d[b][[p, q], :] = np.conj(rotation.T) @ d[b][[p, q], :]
                        v[b][:, [p, q]] = v[b][:, [p, q]] @ rotation
    w = np.real(np.diagonal(d, axis1=1, axis2=2)).copy()
    order = np.argsort(w, axis=1, kind="stable")
    return (np.take_along_axis(w, order, axis=1), np.take_along_axis(v, order[:, None, :], axis=2), d)


def syev_reference(a):
    """LAPACK's syev (heev for complex Hermitian matrices; A's lower triangle read, its diagonal's
    imaginary part not): Householder reduction to tridiagonal form Q^H A Q = T (sytd2/hetd2), T's
    subdiagonal made real and non-negative by a diagonal unitary S (T = S T_r S^H, s_0 = 1, s_k+1 =
    s_k e_k / |e_k|), then implicit symmetric QR steps with Wilkinson's shift on T_r (Golub and Van
    Loan, Algorithm 8.3.2; steqr's role), each Givens rotation applied to (Q S)'s columns, deflating
    where |e_k| <= eps (|d_k| + |d_k+1|); NaNs for eigenvalues not found in MAX_QR_STEPS n steps.
    (Q S)^H is held (its columns as rows, contiguous for the rotations). w ascending and real, V's
    columns with it. (tridiagonal.py's sytrd and steqr are its steps as separate routines.)"""
    h = hermitian_of_lower(a)
    batch, n, _ = h.shape
    qt = np.tile(np.eye(n, dtype=h.dtype), (batch, 1, 1))
    part = np.finfo(h.dtype).dtype
    d, e = np.zeros((batch, n), part), np.zeros((batch, n), part)
    with np.errstate(all="ignore"):
        for b in range(batch):
            m = h[b]
            for k, u, beta in householder_tridiagonal(m):
                qt[b, k + 1:, :] -= beta * np.outer(u, np.conj(u) @ qt[b, k + 1:, :])
            d[b] = np.real(np.diagonal(m))
            for k, phase in real_subdiagonal(m, e[b]):
                qt[b, k + 1] *= np.conj(phase)
            tridiagonal_qr(d[b], e[b], qt[b], None, None)
    order = np.argsort(d, axis=1, kind="stable")
    vectors = np.conj(np.swapaxes(np.take_along_axis(qt, order[:, :, None], axis=1), 1, 2))
    return np.take_along_axis(d, order, axis=1), vectors, h


def hermitian_of_lower(a):
    """The Hermitian matrices of a stack's lower triangles (the diagonal's real part)."""
    lower = np.tril(a, -1)
    return lower + np.conj(np.swapaxes(lower, 1, 2)) + np.real(np.diagonal(a, axis1=1, axis2=2))[:, :, None] * np.eye(
        a.shape[-1], dtype=a.dtype)


def householder_tridiagonal(m):
    """sytd2's steps on one Hermitian matrix m, in place: for k < n - 2, the reflector I - beta u u^H of
    m's column k below the diagonal (complex_reflector), applied from both sides to m[k + 1:, k + 1:]
    (p = beta A22 u, q = p - (beta / 2) (u^H p) u, A22 -= u q^H + q u^H) and to the column; yields
    (k, u, beta) after each step."""
    n = m.shape[0]
    for k in range(n - 2):
        u, beta = complex_reflector(m[k + 1:, k].copy())
        p = beta * (m[k + 1:, k + 1:] @ u)
        q = p - (beta / 2 * np.real(np.vdot(u, p))) * u
        m[k + 1:, k + 1:] -= np.outer(u, np.conj(q)) + np.outer(q, np.conj(u))
        m[k + 1:, k] -= beta * np.vdot(u, m[k + 1:, k]) * u
        yield k, u, beta


def real_subdiagonal(m, e):
    """T = S T_r S^H for the tridiagonal m: e[k] = |m[k + 1, k]| (e[n - 1] not written), S = diag(s_0 ..),
    s_0 = 1, s_k+1 = s_k m[k + 1, k] / |m[k + 1, k]| (s_k where that is 0); yields (k, s_k+1)."""
    phase = 1
    for k in range(m.shape[0] - 1):
        coupling = m[k + 1, k]
        phase = phase * (coupling / abs(coupling) if coupling != 0 else 1)
        e[k] = abs(coupling)
        yield k, phase


def tridiagonal_qr(d, e, qt, log, capacity):
    """Implicit symmetric QR steps with Wilkinson's shift on the real tridiagonal (d, e) in place, until
    every e[k] is deflated (|e_k| <= eps (|d_k| + |d_k+1|)), MAX_QR_STEPS n steps (d NaN where not
    converged) or, with a log (RotationLog; c and -s, lasr's convention), while a step and a chase still
    fit its capacity; the rotations turn qt's rows (log None) or are logged, then d sorted ascending by
    selection sort, its swaps logged."""
    n = d.shape[0]
    epsilon = np.finfo(d.dtype).eps
    last = n - 1
    for _ in range(MAX_QR_STEPS * n):
        if last <= 0 or (log is not None and log.count + 2 * n > capacity):
            break
        low = deflated(d, e, last, epsilon)
        if low == last:
            last -= 1
        else:
            tridiagonal_qr_step(d, e, qt, low, last, log)
    if last > 0:
        d[:last + 1] = np.nan
    if log is not None:
        for i in range(n):
            best = i
            for j in range(i + 1, n):
                if d[j] < d[best]:
                    best = j
            if best != i:
                d[i], d[best] = d[best], d[i]
                log.add(i, best, 0, 1)


def deflated(d, e, last, epsilon):
    """The start of the unreduced window ending at last: every e[k - 1], k <= last, with |e_k-1| <= eps
    (|d_k-1| + |d_k|) set to 0, the last such k (0 where none)."""
    low = 0
    for k in range(1, last + 1):
        if abs(e[k - 1]) <= epsilon * (abs(d[k - 1]) + abs(d[k])):
            e[k - 1] = 0
            low = k
    return low


def tridiagonal_qr_step(d, e, qt, low, last, log=None):
    """One implicit symmetric QR step with Wilkinson's shift on the window low..last of the
    tridiagonal (d, e) (e[k] couples k and k + 1), in place, its rotations applied to qt's rows (or
    logged for lasr: (k, k + 1, c, -s))."""
    t = (d[last - 1] - d[last]) / 2
    coupling = e[last - 1]
    denominator = t + (1 if t >= 0 else -1) * np.sqrt(t * t + coupling * coupling)
    shift = d[last] - (coupling * coupling / denominator if denominator != 0 else 0)
    x, z = d[low] - shift, e[low]
    for k in range(low, last):
        c, s = givens(x, z)
        if k > low:
            e[k - 1] = c * e[k - 1] - s * z
        # The 2x2 window [[d_k, e_k], [e_k, d_k+1]] turned by G^T . G, G = [[c, s], [-s, c]].
        dk, dl, ek = d[k], d[k + 1], e[k]
        d[k] = c * c * dk - 2 * c * s * ek + s * s * dl
        d[k + 1] = s * s * dk + 2 * c * s * ek + c * c * dl
        e[k] = c * s * (dk - dl) + (c * c - s * s) * ek
        if k < last - 1:
            x, z = e[k], -s * e[k + 1]
            e[k + 1] = c * e[k + 1]
        if log is not None:
            log.add(k, k + 1, c, -s)
            continue
        rows = qt[[k, k + 1], :].copy()
        qt[k], qt[k + 1] = c * rows[0] - s * rows[1], s * rows[0] + c * rows[1]


def givens(x, z):
    """(c, s) with [[c, -s], [s, c]]^T (x, z) = (r, 0): c x - s z = r, s x + c z = 0 (Golub and Van
    Loan's givens, 5.1.3)."""
    if z == 0:
        return 1.0, 0.0
    if abs(z) > abs(x):
        tau = -x / z
        s = 1 / np.sqrt(1 + tau * tau)
        return s * tau, s
    tau = -z / x
    c = 1 / np.sqrt(1 + tau * tau)
    return c, c * tau


def gesvdj_infer(types, attrs):
    check_matrices("gesvdj", types, 1)
    (a,) = types
    batch, m, n = a.shape
    require(m >= n, f"library_call: solver.gesvdj takes matrices with at least as many rows as columns, got {a}")
    return [TensorType(COMPLEX_PART.get(a.dtype, a.dtype), (batch, n)), a, TensorType(a.dtype, (batch, n, n))]


def jacobi_rotation(app, aqq, apq):
    """(c, s) of the rotation [[c, s], [-s, c]] that zeroes apq of a symmetric 2x2 (sym.schur2)."""
    theta = (aqq - app) / (2 * apq)
    t = (1 if theta >= 0 else -1) / (abs(theta) + np.sqrt(theta * theta + 1))
    c = 1 / np.sqrt(t * t + 1)
    return c, t * c


def gesvdj_reference(a):
    u = np.array(a, copy=True)
    batch, m, n = u.shape
    v = np.tile(np.eye(n, dtype=u.dtype), (batch, 1, 1))
    epsilon = np.finfo(u.dtype).eps
    with np.errstate(all="ignore"):
        for b in range(batch):
            for _ in range(MAX_SWEEPS):
                rotations = 0
                for p in range(n):
                    for q in range(p + 1, n):
                        alpha, beta = np.real(np.vdot(u[b, :, p], u[b, :, p])), np.real(np.vdot(u[b, :, q], u[b, :, q]))
                        gamma = np.vdot(u[b, :, p], u[b, :, q])
                        if gamma == 0 or abs(gamma) <= epsilon * np.sqrt(alpha * beta):
                            continue
                        rotations += 1
                        # Complex columns: the Hermitian Gram pair turned as syevj_reference turns a_pq.
                        magnitude = np.abs(gamma) if np.iscomplexobj(u) else gamma
                        phase = np.conj(gamma) / magnitude if np.iscomplexobj(u) else 1
                        c, s = jacobi_rotation(alpha, beta, magnitude)
                        rotation = np.array([[c, s * np.conj(phase)], [-s * phase, c]], u.dtype)
                        u[b][:, [p, q]] = u[b][:, [p, q]] @ rotation
                        v[b][:, [p, q]] = v[b][:, [p, q]] @ rotation
                if rotations == 0:
                    break
        s = np.sqrt(np.sum(np.abs(u) ** 2, axis=1))
        u = np.where(s[:, None, :] != 0, u / s[:, None, :], u)
    order = np.argsort(-s, axis=1, kind="stable")
    return (np.take_along_axis(s, order, axis=1), np.take_along_axis(u, order[:, None, :], axis=2),
            np.take_along_axis(v, order[:, None, :], axis=2))


MAX_QR_STEPS = 30   # Francis double-shift steps per eigenvalue before giving up (LAPACK's dlahqr's ITMAX / n)


def geev_infer(types, attrs):
    check_matrices("geev", types, 1)
    (a,) = types
    batch, n, columns = a.shape
    require(n == columns, f"library_call: solver.geev takes square matrices, got {a}")
    values = [TensorType(a.dtype, (batch, n))] * (1 if a.dtype in COMPLEXES else 2)
    return values + [a] + ([a] if attrs["vectors"] else [])


def geev_reference(a, vectors):
    return (complex_geev_reference if np.iscomplexobj(a) else real_geev_reference)(a, vectors)


def hessenberg_reflector(x):
    """(u, beta) with (I - beta u u^T) x = -sign(x0) ||x|| e1 (beta = 0 for x = 0)."""
    norm = np.sqrt(np.sum(x * x))
    if norm == 0:
        return x, 0.0
    u = x.copy()
    u[0] += norm if x[0] >= 0 else -norm
    return u, 2 / np.sum(u * u)


def two_by_two_eigenvalues(a, b, c, d):
    """((re1, im1), (re2, im2)) of [[a, b], [c, d]]; a complex pair with the positive imaginary part
    first, as LAPACK orders them; real ones by d + z and d - bc/z, z = p + sign(p) sqrt(p^2 + bc),
    p = (a - d)/2, to avoid cancellation."""
    p = (a - d) / 2
    disc = p * p + b * c
    if disc < 0:
        return (d + p, np.sqrt(-disc)), (d + p, -np.sqrt(-disc))
    z = p + (np.sqrt(disc) if p >= 0 else -np.sqrt(disc))
    return (d + z, 0.0), ((d - b * c / z) if z != 0 else d + z, 0.0)


def reduce_to_hessenberg(m, z, reflector, clear_below: bool):
    """Householder reduction of the square `m` to Hessenberg form in place (gehd2), the reflections
    accumulated in `z` when given. `clear_below` sets the column below the subdiagonal to zero (the
    complex kernel does; the real one leaves the reflection's rounding there, as its kernel does)."""
    for k in range(m.shape[0] - 2):
        u, beta = reflector(m[k + 1:, k].copy())
        m[k + 1:, :] -= beta * np.outer(u, np.conj(u) @ m[k + 1:, :])
        m[:, k + 1:] -= beta * np.outer(m[:, k + 1:] @ u, np.conj(u))
        if clear_below:
            m[k + 2:, k] = 0
        if z is not None:
            z[:, k + 1:] -= beta * np.outer(z[:, k + 1:] @ u, np.conj(u))


def real_geev_reference(a, vectors):
    """Eigenvalues (geev without balancing): Householder reduction to Hessenberg form (gehd2), then
    Francis double-shift QR steps on the active window (Golub and Van Loan, Algorithm 7.5.1)
    deflating where a subdiagonal entry is below eps times its neighbours, with LAPACK dlahqr's
    exceptional shift at steps 10 and 20. NaNs if it does not converge. With `vectors`, the
    reflections act on whole rows and columns (H becomes the real Schur form T: 1x1 blocks and 2x2
    blocks, not standardized, whose subdiagonal entry is not zero) and accumulate in Z, A = Z T Z^T."""
    h = np.array(a, copy=True)
    batch, n, _ = h.shape
    wr, wi = np.zeros((batch, n), h.dtype), np.zeros((batch, n), h.dtype)
    zs = np.tile(np.eye(n, dtype=h.dtype), (batch, 1, 1))
    epsilon = np.finfo(h.dtype).eps
    with np.errstate(all="ignore"):
        for b in range(batch):
            m, z = h[b], zs[b]
            reduce_to_hessenberg(m, z if vectors else None, hessenberg_reflector, clear_below=False)
            last, steps = n - 1, 0
            for _ in range(MAX_QR_STEPS * n):
                if last < 0:
                    break
                low = 0
                for k in range(1, last + 1):
                    if abs(m[k, k - 1]) <= epsilon * (abs(m[k - 1, k - 1]) + abs(m[k, k])):
                        m[k, k - 1] = 0
                        low = k
                if low == last:
                    wr[b, last], wi[b, last], last, steps = m[last, last], 0, last - 1, 0
                elif low == last - 1:
                    first, second = two_by_two_eigenvalues(m[low, low], m[low, last], m[last, low], m[last, last])
                    (wr[b, low], wi[b, low]), (wr[b, last], wi[b, last]) = first, second
                    last, steps = last - 2, 0
                else:
                    steps += 1
                    francis_step(m, low, last, steps, z if vectors else None)
            if last >= 0:
                wr[b, :last + 1] = wi[b, :last + 1] = np.nan
    return (wr, wi, h, zs) if vectors else (wr, wi, h)


def francis_step(m, low, last, steps, schur_vectors):
    """One double-shift QR step on the window m[low:last+1, low:last+1] (at least 3x3), in place; with
    schur_vectors, on m's whole rows and columns and on schur_vectors' columns."""
    n = m.shape[0]
    if steps in (10, 20):
        s = abs(m[last, last - 1]) + abs(m[last - 1, last - 2])
        h11 = 0.75 * s + m[last, last]
        total, product = 2 * h11, h11 * h11 + 0.4375 * s * s
    else:
        total = m[last - 1, last - 1] + m[last, last]
        product = m[last - 1, last - 1] * m[last, last] - m[last - 1, last] * m[last, last - 1]
    x = m[low, low] * m[low, low] + m[low, low + 1] * m[low + 1, low] - total * m[low, low] + product
    y = m[low + 1, low] * (m[low, low] + m[low + 1, low + 1] - total)
    z = m[low + 1, low] * m[low + 2, low + 1]
    for k in range(low, last):
        rows = min(3, last - k + 1)
        u, beta = hessenberg_reflector(np.array([x, y, z][:rows]))
        schur = schur_vectors is not None
        left, right, top = max(low, k - 1), (n - 1 if schur else last), (0 if schur else low)
        m[k:k + rows, left:right + 1] -= beta * np.outer(u, u @ m[k:k + rows, left:right + 1])
        bottom = min(k + 3, last)
        m[top:bottom + 1, k:k + rows] -= beta * np.outer(m[top:bottom + 1, k:k + rows] @ u, u)
        if schur:
            schur_vectors[:, k:k + rows] -= beta * np.outer(schur_vectors[:, k:k + rows] @ u, u)
        x = m[k + 1, k]
        y = m[k + 2, k] if k + 2 <= last else 0
        z = m[k + 3, k] if k + 3 <= last else 0


def complex_reflector(x):
    """(u, beta) with (I - beta u u^H) x = -e ||x|| e1, e the phase of x0 (1 where x0 = 0); beta = 0
    for x = 0."""
    norm = np.sqrt(np.sum(np.abs(x) ** 2))
    if norm == 0:
        return x, 0.0
    u = x.copy()
    u[0] += (x[0] / abs(x[0]) if x[0] != 0 else 1) * norm
    return u, 1 / (norm * (norm + abs(x[0])))


def complex_rotation(f, g):
    """(c real, s, r) with [[c, s], [-s*, c]] (f, g) = (r, 0)."""
    norm = np.sqrt(abs(f) ** 2 + abs(g) ** 2)
    if norm == 0:
        return 1.0, 0.0, f
    if f == 0:
        return 0.0, np.conj(g) / abs(g), abs(g)
    phase = f / abs(f)
    return abs(f) / norm, phase * np.conj(g) / norm, phase * norm


def complex_sqrt(z):
    """The principal square root, by real square roots (as the kernel computes it)."""
    magnitude = np.sqrt(z.real * z.real + z.imag * z.imag)
    root = np.sqrt((magnitude + abs(z.real)) / 2)
    if root == 0:
        return 0j
    if z.real >= 0:
        return complex(root, z.imag / (2 * root))
    return complex(abs(z.imag) / (2 * root), root if z.imag >= 0 else -root)


def complex_geev_reference(a, vectors):
    """Eigenvalues of complex matrices (zgeev without balancing): Householder reduction to Hessenberg
    form, then single-shift QR steps (Givens rotations chasing the bulge; Golub and Van Loan 7.5 for
    one complex shift) with Wilkinson's shift, the eigenvalue of the trailing 2x2 nearer its last
    diagonal entry, and an exceptional shift at steps 10 and 20; deflation where |h_k,k-1| (|re| +
    |im|) is below eps times its diagonal neighbours'. Each eigenvalue deflates alone: w[k] = T[k, k].
    With `vectors`, the rotations act on whole rows and columns (H becomes the upper triangular Schur
    form T) and accumulate in Z, A = Z T Z^H. NaNs for eigenvalues not found in MAX_QR_STEPS n steps."""
    h = np.array(a, copy=True)
    batch, n, _ = h.shape
    w = np.zeros((batch, n), h.dtype)
    zs = np.tile(np.eye(n, dtype=h.dtype), (batch, 1, 1))
    epsilon = np.finfo(h.dtype).eps
    with np.errstate(all="ignore"):
        for b in range(batch):
            m, z = h[b], zs[b]
            reduce_to_hessenberg(m, z if vectors else None, complex_reflector, clear_below=True)
            last, steps = n - 1, 0
            for _ in range(MAX_QR_STEPS * n):
                if last < 0:
                    break
                low = 0
                for k in range(1, last + 1):
                    if pivot_magnitude(m[k, k - 1]) <= epsilon * (pivot_magnitude(m[k - 1, k - 1])
                                                                  + pivot_magnitude(m[k, k])):
                        m[k, k - 1] = 0
                        low = k
                if low == last:
                    w[b, last], last, steps = m[last, last], last - 1, 0
                else:
                    steps += 1
                    shifted_qr_step(m, low, last, wilkinson_shift(m, low, last, steps), z if vectors else None)
            if last >= 0:
                w[b, :last + 1] = np.nan
    return (w, h, zs) if vectors else (w, h)


def wilkinson_shift(m, low, last, steps):
    """The eigenvalue of the trailing 2x2 [[a, b], [c, d]] nearer d, d - bc / (p + r) with p = (a - d) / 2,
    r = sqrt(p^2 + bc) of the sign making |p + r| largest; at steps 10 and 20 an exceptional shift
    (the last or first diagonal entry plus 3/4 of its subdiagonal neighbour's |re| + |im|)."""
    if steps in (10, 20):
        k = last if steps == 20 else low + 1
        return m[k, k] + 0.75 * pivot_magnitude(m[k, k - 1])
    a, b, c, d = m[last - 1, last - 1], m[last - 1, last], m[last, last - 1], m[last, last]
    p = (a - d) / 2
    r = complex_sqrt(p * p + b * c)
    r = -r if (np.conj(p) * r).real < 0 else r
    return d - b * c / (p + r) if p + r != 0 else d


def shifted_qr_step(m, low, last, shift, schur_vectors):
    """One single-shift QR step on the window m[low:last+1, low:last+1] (at least 2x2), in place: the
    rotation of (h_low,low - shift, h_low+1,low) then the bulge chased down; with schur_vectors, on
    m's whole rows and columns and on schur_vectors' columns."""
    n = m.shape[0]
    schur = schur_vectors is not None
    right, top = (n - 1 if schur else last), (0 if schur else low)
    x, y = m[low, low] - shift, m[low + 1, low]
    for k in range(low, last):
        if k > low:
            x, y = m[k, k - 1], m[k + 1, k - 1]
        c, s, _ = complex_rotation(x, y)
        left = max(low, k - 1)
        rows = m[k:k + 2, left:right + 1].copy()
        m[k, left:right + 1] = c * rows[0] + s * rows[1]
        m[k + 1, left:right + 1] = -np.conj(s) * rows[0] + c * rows[1]
        if k > low:
            m[k + 1, k - 1] = 0
        bottom = min(k + 2, last)
        columns = m[top:bottom + 1, k:k + 2].copy()
        m[top:bottom + 1, k] = columns[:, 0] * c + columns[:, 1] * np.conj(s)
        m[top:bottom + 1, k + 1] = -columns[:, 0] * s + columns[:, 1] * c
        if schur:
            columns = schur_vectors[:, k:k + 2].copy()
            schur_vectors[:, k] = columns[:, 0] * c + columns[:, 1] * np.conj(s)
            schur_vectors[:, k + 1] = -columns[:, 0] * s + columns[:, 1] * c


def getrs_infer(types, attrs):
    require(len(types) == 3, f"library_call: solver.getrs takes LU, permutation and X, got "
                             f"{', '.join(map(str, types))}")
    lu, permutation, x = types
    check_matrices("getrs", [lu, x], 2)
    batch, n, _ = lu.shape
    require(lu.shape[2] == n and permutation.shape == (batch, n) and permutation.dtype == "i32"
            and x.shape[:2] == (batch, n),
            f"library_call: solver.getrs takes LU[B, n, n], an i32 permutation [B, n] and X[B, n, k], got "
            f"{', '.join(map(str, types))}")
    return [x]


def getrs_reference(lu, permutation, x):
    y = lapmr_reference(x, permutation, 0, x.shape[2])
    y = trsm_reference(lu, y, lower=True, trans=False, unit_diagonal=True)
    return trsm_reference(lu, y, lower=False, trans=False, unit_diagonal=False)



def getri_infer(types, attrs):
    require(len(types) == 2, f"library_call: solver.getri takes LU and permutation, got {', '.join(map(str, types))}")
    lu, permutation = types
    check_matrices("getri", [lu], 1)
    batch, n, _ = lu.shape
    require(lu.shape[2] == n and permutation.shape == (batch, n) and permutation.dtype == "i32",
            f"library_call: solver.getri takes LU[B, n, n] and an i32 permutation [B, n], got {lu} and {permutation}")
    return [lu]


def getri_reference(lu, permutation):
    batch, n, _ = lu.shape
    return getrs_reference(lu, permutation, np.tile(np.eye(n, dtype=lu.dtype), (batch, 1, 1)))


def potrs_infer(types, attrs):
    check_matrices("potrs", types, 2)
    c, x = types
    require(c.shape[1] == c.shape[2] and x.shape[:2] == c.shape[:2],
            f"library_call: solver.potrs takes C[B, n, n] and X[B, n, k], got {c} and {x}")
    return [x]


def potrs_reference(c, x, lower):
    y = trsm_reference(c, x, lower=lower, trans=not lower, unit_diagonal=False)
    return trsm_reference(c, y, lower=lower, trans=lower, unit_diagonal=False)


def trtri_infer(types, attrs):
    check_matrices("trtri", types, 1)
    (a,) = types
    require(a.shape[1] == a.shape[2], f"library_call: solver.trtri takes square matrices, got {a}")
    return [a]


def trtri_reference(a, lower, unit_diagonal):
    batch, n, _ = a.shape
    return trsm_reference(a, np.tile(np.eye(n, dtype=a.dtype), (batch, 1, 1)), lower, False, unit_diagonal)


MAX_BALANCING_SWEEPS = 30   # gebal's scaling sweeps (each halves the imbalance at least: a few suffice)


def gebal_infer(types, attrs):
    check_matrices("gebal", types, 1)
    (a,) = types
    batch, n, columns = a.shape
    require(n == columns, f"library_call: solver.gebal takes square matrices, got {a}")
    indices = TensorType("i32", (batch, n))
    return [a, TensorType(COMPLEX_PART.get(a.dtype, a.dtype), (batch, n)), indices, indices]


def gebal_reference(a):
    """LAPACK's gebal (job 'B', geev's default), as the kernel does it: first rows, then columns that
    isolate an eigenvalue (zero off the diagonal within the active window low..high) are swapped to the
    window's bottom (rows) or top (columns), shrinking it; then sweeps over the window scale each row i
    by 1/f and column i by f, f the power of 2 nearest sqrt(r / c) (c, r: the 2-norms of column and row
    i within the window, off the diagonal), where that reduces c + r by more than 5 %, until a sweep
    changes nothing. B = D^-1 P^T A P D; returns B, D's diagonal (1 outside the window), the permutation
    (B[i, j] = (D^-1 A D)[p[i], p[j]]) and its inverse `rows`: an eigenvector x of B gives A's as
    v[r] = (D x)[rows[r]]."""
    h = np.array(a, copy=True)
    batch, n, _ = h.shape
    part = np.finfo(h.dtype).dtype
    scale = np.ones((batch, n), part)
    rows, permutations = np.zeros((batch, n), np.int32), np.zeros((batch, n), np.int32)
    limit = np.finfo(part).maxexp // 2
    for b in range(batch):
        m = h[b]
        permutation = np.arange(n)
        low, high = 0, n - 1

        def swap(i, j):
            m[[i, j], :] = m[[j, i], :]
            m[:, [i, j]] = m[:, [j, i]]
            permutation[[i, j]] = permutation[[j, i]]

        isolated = lambda j, along_row: not np.any(np.delete((m[j, low:high + 1] if along_row
                                                               else m[low:high + 1, j]), j - low))
        while high > low:
            found = next((j for j in range(high, low - 1, -1) if isolated(j, True)), None)
            if found is None:
                break
            swap(found, high)
            high -= 1
        while high > low:
            found = next((j for j in range(low, high + 1) if isolated(j, False)), None)
            if found is None:
                break
            swap(found, low)
            low += 1
        for _ in range(MAX_BALANCING_SWEEPS):
            changed = False
            for i in range(low, high + 1):
                c = np.sqrt(np.sum(np.abs(np.delete(m[low:high + 1, i], i - low)) ** 2))
                r = np.sqrt(np.sum(np.abs(np.delete(m[i, low:high + 1], i - low)) ** 2))
                if c == 0 or r == 0 or not np.isfinite(c + r):
                    continue
                f = np.exp2(np.clip(np.floor(np.log2(r / c) / 2 + 0.5), -limit, limit)).astype(part)
                if c * f + r / f < 0.95 * (c + r):
                    scale[b, i] *= f
                    m[i, :] /= f
                    m[:, i] *= f
                    changed = True
            if not changed:
                break
        rows[b, permutation] = np.arange(n)
        permutations[b] = permutation
    return h, scale, permutations, rows


def trevc_infer(types, attrs):
    t = types[0] if types else None
    values = 1 if t is not None and t.dtype in COMPLEXES else 2
    require(len(types) == 1 + values, f"library_call: solver.trevc takes T and its eigenvalues (wr and wi of a "
                                      f"real T, w of a complex one), got {', '.join(map(str, types))}")
    check_matrices("trevc", [t], 1)
    batch, n, columns = t.shape
    require(n == columns and all(v == TensorType(t.dtype, (batch, n)) for v in types[1:]),
            f"library_call: solver.trevc takes T[B, n, n] and its eigenvalues [B, n] of T's dtype, got "
            f"{', '.join(map(str, types))}")
    return [TensorType({"f32": "c64", "f64": "c128"}.get(t.dtype, t.dtype), t.shape)]


def trevc_reference(t, *values):
    value = values[0] if len(values) == 1 else values[0] + 1j * values[1]
    batch, n, _ = t.shape
    x = np.zeros(t.shape, {4: np.complex64, 8: np.complex128}[np.finfo(t.dtype).dtype.itemsize])
    with np.errstate(all="ignore"):
        for b in range(batch):
            for j in range(n):
                x[b, :, j] = quasi_triangular_vector(t[b], complex(value[b, j]), j, x.real.dtype)
    return (x,)


def quasi_triangular_vector(t, value, j, part):
    """A solution of (T - value I) x = 0, x zero below the 1x1 or 2x2 block holding row j (a complex T
    is triangular: 1x1 blocks only), by back substitution (2x2 systems by Cramer's rule; a divisor of
    magnitude |re| + |im| below smin = max(eps (|re| + |im|) of value, tiny) replaced by smin). Overflow
    is kept away as LAPACK's trevc keeps it, more simply: where a quotient would exceed
    RESCALE = sqrt(the largest float), the entries so far are scaled down to make it RESCALE; at the end
    x is divided by its largest |re| + |im|."""
    n = t.shape[0]
    epsilon, tiny = np.finfo(part).eps, np.finfo(part).tiny
    rescale = np.sqrt(np.finfo(part).max)
    smin = max(epsilon * pivot_magnitude(value), tiny)
    guarded = lambda d: d if pivot_magnitude(d) >= smin else smin
    below = lambda r: r > 0 and t[r, r - 1] != 0
    top = j - 1 if below(j) else j
    bottom = j + 1 if j < n - 1 and below(j + 1) else j
    x = np.zeros(n, complex)
    if top == bottom:
        x[j] = 1
    else:
        a, c = top, bottom
        first = pivot_magnitude(t[a, a] - value) + abs(t[a, c])   # |re| + |im| magnitudes
        second = abs(t[c, a]) + pivot_magnitude(t[c, c] - value)
        x[a], x[c] = (t[a, c], value - t[a, a]) if first >= second else (value - t[c, c], t[c, a])
    row = top - 1
    while row >= 0:
        if below(row):
            solved = x[row + 1:bottom + 1]
            r1, r2 = -(t[row - 1, row + 1:bottom + 1] @ solved), -(t[row, row + 1:bottom + 1] @ solved)
            d11, d22 = t[row - 1, row - 1] - value, t[row, row] - value
            det = guarded(d11 * d22 - t[row - 1, row] * t[row, row - 1])
            first, second = r1 * d22 - t[row - 1, row] * r2, d11 * r2 - t[row, row - 1] * r1
            scale = rescaled(max(pivot_magnitude(first), pivot_magnitude(second)), pivot_magnitude(det), rescale)
            x[row + 1:bottom + 1] *= scale
            x[row - 1], x[row] = first * scale / det, second * scale / det
            row -= 2
        else:
            total, d = -(t[row, row + 1:bottom + 1] @ x[row + 1:bottom + 1]), guarded(t[row, row] - value)
            scale = rescaled(pivot_magnitude(total), pivot_magnitude(d), rescale)
            x[row + 1:bottom + 1] *= scale
            x[row] = total * scale / d
            row -= 1
    return x / np.max(pivot_magnitude(x))


def rescaled(numerator, divisor, rescale):
    """The factor (at most 1) that keeps numerator / divisor within rescale (magnitudes)."""
    return rescale * divisor / numerator if numerator > rescale * divisor else 1.0


ROUTINES = {
    "getrf": Routine({}, getrf_infer, getrf_reference, "LU with partial pivoting (libs/solver/routines.py)"),
    "potrf": Routine({}, potrf_infer, potrf_reference, "Cholesky of the lower triangle (libs/solver/routines.py)"),
    "trsm": Routine({"lower": "bool", "trans": "bool", "unit_diagonal": "bool"}, trsm_infer, trsm_reference,
                    "triangular solve, left side (libs/solver/routines.py)"),
    "laswp": Routine({"rows": "int"}, laswp_infer, laswp_reference,
                     "the permutation of LU's row swaps (libs/solver/routines.py)"),
    "geqrf": Routine({}, geqrf_infer, geqrf_reference, "Householder QR (libs/solver/routines.py)"),
    "orgqr": Routine({"columns": "int"}, orgqr_infer, orgqr_reference,
                     "Q of a Householder QR (libs/solver/routines.py)"),
    "syevj": Routine({}, symmetric_eigen_infer("syevj"), syevj_reference, "symmetric eigensolver, Jacobi (libs/solver/routines.py)"),
    "syev": Routine({}, symmetric_eigen_infer("syev"), syev_reference, "symmetric eigensolver, tridiagonal reduction + implicit QR "
                                                    "(libs/solver/routines.py)"),
    "gesvdj": Routine({}, gesvdj_infer, gesvdj_reference, "singular values, one-sided Jacobi "
                                                          "(libs/solver/routines.py)"),
    "getrs": Routine({}, getrs_infer, getrs_reference, "solve with getrf's factors (libs/solver/routines.py)"),
    "geev": Routine({"vectors": "bool"}, geev_infer, geev_reference,
                    "eigenvalues of general matrices, Hessenberg + double-shift QR (libs/solver/routines.py)"),
    "gebal": Routine({}, gebal_infer, gebal_reference, "balancing for geev, permutation and scaling "
                                                     "(libs/solver/routines.py)"),
    "trevc": Routine({}, trevc_infer, trevc_reference, "eigenvectors of a real Schur form (libs/solver/routines.py)"),
    "lapmr": Routine({"first": "int", "columns": "int"}, lapmr_infer, lapmr_reference,
                     "rows gathered by a permutation, a window of columns (libs/solver/routines.py)"),
    "getri": Routine({}, getri_infer, getri_reference, "inverse from getrf's factors (libs/solver/routines.py)"),
    "potrs": Routine({"lower": "bool"}, potrs_infer, potrs_reference,
                     "solve with potrf's factor (libs/solver/routines.py)"),
    "trtri": Routine({"lower": "bool", "unit_diagonal": "bool"}, trtri_infer, trtri_reference,
                     "inverse of a triangular matrix (libs/solver/routines.py)"),
}
