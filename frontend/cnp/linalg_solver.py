"""The solver library's routines on stacks of matrices [B, rows, columns], as rocSOLVER's host code
runs them: a small matrix is one library call (libs/solver: one work-item per matrix, the whole
stack in one launch); a large one is a sequence of calls the graph holds, panels factored by the
solver's kernels and trailing updates as matrix products, which the BLAS library's matcher turns
into GEMMs (`library_call blas.*`). The loops below run while tracing, so every call has static
sizes; the kernels take sizes as scalar parameters, so the panels of one factorization, which
differ in height, share one compiled kernel per routine.

Blocking: recursive, splitting the matrix in halves on multiples of SMALL (BLOCK for trsm) down to
leaves the kernels take whole, so each level moves the matrix once (log2(n / SMALL) times in all,
where LAPACK's panel loop would move it n / BLOCK times through the graph's copies) and the matrix
products are large GEMMs:
  - getrf: Toledo's recursive LU (the left half's LU, its row swaps on the right half's rows as
    lapmr gathers them from the matrix; U12 by trsm; the Schur complement by one GEMM; its LU; its
    swaps on L21), the same pivots as LAPACK's right-looking getrf, leaves lu_leaf columns wide
    (narrow for few matrices, so that a leaf's panel stays in cache), each level's LU in two parts,
    its first rows and the others, as the level above reads them (lu_parts); det and slogdet take
    U's diagonal without assembling LU (lu_diagonal);
  - potrf: recursive Cholesky, L21 by a trsm from the right (solve_adjoint_right), the Schur
    complement's lower triangle only (recursive syrk);
  - trsm: recursive on the rows, leaves multiplying by the inverse of their diagonal block (trtri;
    rocBLAS's way, so that the work is GEMM).
  - geqrf: recursive QR (geqrt), the reflections of the left half applied to the right half in
    compact WY form (larfb as GEMMs), T built from the halves' (Elmroth and Gustavson) within blocks
    of QR_WY_COLUMNS, which are applied one after another above (blocked_qr), leaves qr_leaf columns
    wide (the block-size heuristic: narrow for few matrices); orgqr's T likewise;
  - getri: A^-1 = U^-1 L^-1 P, L^-1 by a recursive trtri (GEMMs), U^-1 by trsm; potrs: two trsm.
svd of a real matrix is gesvd: gebrd's bidiagonalization (unblocked), bdsqr's QR iteration logging
its rotations, Q and P formed by orgqr (compact-WY blocks above SMALL: GEMMs) and turned by the logs in
lasr, one work-item per row (from GESVD_FROM columns, takes_gesvd; gesvdj's one-sided Jacobi below, and for
complex matrices); from DIVIDE_SVD_FROM columns gesdd's steps instead: the bidiagonal's vectors by divide and
conquer (bidiagonal_vectors: bdsqr and lasr on the leaves, lasd1 merges and GEMMs), then Q's and P's
reflectors applied to them by GEMMs (reflected). eigh of a large matrix runs syevd's steps (tridiagonal_form: sytrd, blocked from
BLOCKED_SYTRD_FROM rows as latrd panels and GEMM updates; divide and conquer: steqr and lasr on the leaves,
laed1 merges and GEMMs; then Q's reflectors applied by GEMMs: large_symmetric_eigenproblem);
smaller ones syev, and gesvdj, gebal and geev run unblocked at every size (one work-item per matrix; trevc one per
eigenvalue). Every routine but gesvd's takes complex matrices: the recursions' transposes are conjugate
transposes (adjoint).
"""
from __future__ import annotations

import numpy as np

from .. import lax_shape
from ..dtypes import is_complex
from ..tracing import Tracer, bind
from . import contractions as con
from . import creation as cr
from . import elementwise as el
from . import reductions as red
from . import shaping as sh

BLOCK = 128        # columns per panel of a blocked factorization
SMALL = 128        # matrices up to this size go to the unblocked kernel whole
FEW_COLUMNS = 64   # a trsm of fewer right-hand sides substitutes directly: n^2 work per column, where
                   # inverting the diagonal blocks costs n BLOCK^2 however few the columns


def solver_call(routine: str, operands, **attrs) -> list[Tracer]:
    return bind("library_call", list(operands), {"library": "solver", "routine": routine, "solution": "", **attrs})


def is_empty(*xs: Tracer) -> bool:
    return any(x.size == 0 for x in xs)


def rows_of(x: Tracer, permutation: Tracer, first: int = 0, columns: int | None = None) -> Tracer:
    """x[b, permutation[b, i], first:first + columns] for every b and i, columns to x's last by default
    (routines.py's lapmr: the window is read where it lies in x, with no copy of it first)."""
    columns = x.shape[2] - first if columns is None else columns
    if is_empty(permutation) or x.shape[0] == 0 or columns == 0:
        return cr.zeros((x.shape[0], permutation.shape[1], columns), x.type.dtype)
    return solver_call("lapmr", [x, permutation.astype("int32")], first=first, columns=columns)[0]


def adjoint(x: Tracer) -> Tracer:
    """The conjugate transpose of each matrix (the transpose of a real one): what LAPACK's ^T is for
    complex matrices in the routines' definitions (trsm's trans, potrf's L L^H)."""
    transposed = sh.swapaxes(x, -1, -2)
    return el.conj(transposed) if is_complex(x.type.dtype) else transposed


def arange_rows(batch: int, rows: int) -> Tracer:
    return sh.broadcast_to(cr.arange(rows, dtype="int32"), (batch, rows))


# ---- getrf -------------------------------------------------------------------------------------

LU_PANEL_BYTES = 1 << 20   # the largest panel (rows x columns) a getrf leaf takes whole, for few matrices


def lu_leaf(batch: int, rows: int, entry_bytes: int) -> int:
    """Block size of the recursive LU: the widest panel the getrf kernel factors whole. A stack of many
    matrices keeps SMALL (the batch fills the grid, a work-item per matrix); for few, the widest of
    SMALL, SMALL / 2, ... (at least LU_PANEL_MIN) whose panel of `rows` rows fits in LU_PANEL_BYTES:
    each of the leaf's steps sweeps its whole panel, which then stays in cache (the host's 2 MiB L2).
    Measured on the host (f64, one 2000-row leaf): 9.2 ms 128 wide (2 MB), 1.2 ms 64 wide, 0.43 ms
    32 wide; c128: 52, 7.9 and 0.85 ms."""
    if batch >= MANY_MATRICES:
        return SMALL
    width = SMALL
    while width > LU_PANEL_MIN and rows * width * entry_bytes > LU_PANEL_BYTES:
        width //= 2
    return width


LU_PANEL_MIN = 16


def getrf(a: Tracer) -> tuple[Tracer, Tracer, Tracer]:
    """(LU, pivots, permutation) of a stack [B, m, n] (libs/solver/routines.py's getrf)."""
    batch, m, n = a.shape
    if is_empty(a):
        return a, cr.zeros((batch, min(m, n)), "int32"), arange_rows(batch, m)
    if min(m, n) <= lu_leaf(batch, m, a.type.numpy_dtype.itemsize):
        lu, pivots, permutation = solver_call("getrf", [a])
        return lu, pivots, permutation
    if n > m:
        # A wide matrix: the square part's LU, then U's columns to the right of it (L^-1 P A2).
        lu, pivots, permutation = getrf(a[:, :, :m])
        u2 = trsm(lu, rows_of(a, permutation, first=m), lower=True, trans=False, unit_diagonal=True)
        return sh.concatenate([lu, u2], axis=2), pivots, permutation
    return getrf_recursive(a)


def split(n: int, unit: int) -> int:
    """Where a recursive algorithm splits n rows or columns: about half, on a multiple of `unit` (so the
    leaves are `unit` wide and the matrix products large)."""
    return max(unit, (n // 2 + unit - 1) // unit * unit) if n > unit else n // 2


def getrf_recursive(a: Tracer) -> tuple[Tracer, Tracer, Tracer]:
    """Recursive LU (Toledo's) of a tall stack [B, m, n], m >= n: lu_parts, assembled."""
    top, bottom, pivots, permutation = lu_parts(a)
    return sh.concatenate([top, bottom], axis=1), pivots, permutation


def lu_parts(a: Tracer, n: int | None = None) -> tuple[Tracer, Tracer, Tracer, Tracer]:
    """(LU's first n rows, its other rows, pivots, permutation) of the first n columns of a stack [B, m,
    *] (all of them by default), m >= n, not empty, read where they lie in a (only a leaf's columns are
    copied, into its getrf call): above lu_leaf columns the left half's LU, its row swaps on the right half, U12 = L11^-1 A12,
    the Schur complement A22 - L21 U12 (a GEMM), its LU, and its row swaps on L21. The same pivots
    as LAPACK's right-looking getrf, but each level moves the matrix once (log(n / leaf) copies in
    all, where a panel loop moves it n / BLOCK times) and its products are large GEMMs. The two parts
    are what a level above reads apart (L11 U11 in a trsm, L21 in a GEMM), so they are not assembled
    into one matrix only to be sliced again."""
    batch, m, columns = a.shape
    n = columns if n is None else n
    if n <= lu_leaf(batch, m, a.type.numpy_dtype.itemsize):
        lu, pivots, permutation = solver_call("getrf", [a if n == columns else a[:, :, :n]])
        return lu[:, :n], lu[:, n:], pivots, permutation
    n1, top1, bottom1, pivots1, u12, schur = left_half_and_schur(a, n)
    top2, bottom2, pivots2, permutation2 = lu_parts(schur)
    n2 = n - n1
    l21 = rows_of(bottom1, permutation2)
    top = sh.concatenate([sh.concatenate([top1, u12], axis=2), sh.concatenate([l21[:, :n2], top2], axis=2)], axis=1)
    pivots = sh.concatenate([pivots1, pivots2 + n1], axis=1)
    return top, sh.concatenate([l21[:, n2:], bottom2], axis=2), pivots, laswp(pivots, m)[0]


def left_half_and_schur(a: Tracer, n: int):
    """lu_parts's steps before the Schur complement's LU, for a's first n columns: (n1, the left half's
    LU in its two parts, its pivots, U12, the Schur complement A22 - L21 U12). The left half is read
    from a itself (no copy of its columns); its row swaps are applied to the right half's rows as they
    are gathered, its top n1 rows and the others apart (no copy of the right half before or after)."""
    batch, m, _ = a.shape
    n1 = split(n, lu_leaf(batch, m, a.type.numpy_dtype.itemsize))
    top1, bottom1, pivots1, permutation1 = lu_parts(a, n1)
    right = lambda rows: rows_of(a, rows, first=n1, columns=n - n1)
    u12 = trsm(top1, right(permutation1[:, :n1]), lower=True, trans=False, unit_diagonal=True)
    schur = -con.matmul(bottom1, u12) + right(permutation1[:, n1:])
    return n1, top1, bottom1, pivots1, u12, schur


def lu_diagonal(a: Tracer) -> tuple[Tracer, Tracer]:
    """(U's diagonal [B, n], pivots) of getrf's P A = L U for a square stack, without forming LU: the
    levels along the Schur complements skip L21's row swaps and the assembly, which det and slogdet
    do not read."""
    batch, m, n = a.shape
    if is_empty(a) or n <= lu_leaf(batch, m, a.type.numpy_dtype.itemsize):
        lu, pivots, _ = getrf(a)
        return sh.diagonal(lu, axis1=1, axis2=2), pivots
    n1, top1, _, pivots1, _, schur = left_half_and_schur(a, n)
    diagonal2, pivots2 = lu_diagonal(schur)
    return (sh.concatenate([sh.diagonal(top1, axis1=1, axis2=2), diagonal2], axis=1),
            sh.concatenate([pivots1, pivots2 + n1], axis=1))


# ---- potrf -------------------------------------------------------------------------------------

def potrf(a: Tracer) -> Tracer:
    """L of a stack [B, n, n], A = L L^H from A's lower triangle (routines.py's potrf; ^H is ^T for real
    matrices); see potrf_and_diagonal."""
    return potrf_and_diagonal(a)[0]


def potrf_and_diagonal(a: Tracer) -> tuple[Tracer, Tracer]:
    """(L, L's diagonal [B, n]) of a stack [B, n, n] (routines.py's potrf). Recursive above SMALL: L11
    of the leading half, L21 = A21 L11^-H (trsm from the right: GEMMs with L11's blocks in the
    layout flags, no transposed copies), then L22 of the Schur complement A22 - L21 L21^H, whose
    lower triangle alone is updated (syrk's flops, half a GEMM's). The diagonal comes from the halves'
    own, so that a use of it (cholesky's check) does not wait for L's assembly, which can then
    fuse with what reads L."""
    batch, n, _ = a.shape
    if is_empty(a):
        return a, cr.zeros((batch, n), a.type.dtype)
    if n <= SMALL:
        l = solver_call("potrf", [a])[0]
        return l, sh.diagonal(l, axis1=1, axis2=2)
    n1 = split(n, SMALL)
    l11, diagonal1 = potrf_and_diagonal(a[:, :n1, :n1])
    l21 = solve_adjoint_right(a[:, n1:, :n1], l11)
    l22, diagonal2 = potrf_and_diagonal(syrk_lower(a[:, n1:, n1:], l21))
    upper = sh.concatenate([l11, cr.zeros((batch, n1, n - n1), a.type.dtype)], axis=2)
    return (sh.concatenate([upper, sh.concatenate([l21, l22], axis=2)], axis=1),
            sh.concatenate([diagonal1, diagonal2], axis=1))


def solve_adjoint_right(x: Tracer, l: Tracer) -> Tracer:
    """X L^-H for a lower triangular stack L [B, n, n] (its upper triangle not read) and X [B, m, n]
    (LAPACK's trsm, side R, lower, trans C). Recursive on L's columns above BLOCK: X1 = X_1 L11^-H,
    then X2 = (X_2 - X1 L21^H) L22^-H; a leaf multiplies by its block's inverse (trtri), transposed in
    the GEMM's layout."""
    n = l.shape[1]
    if n <= BLOCK:
        return con.matmul(x, adjoint(trtri(l, lower=True, unit_diagonal=False)))
    n1 = split(n, BLOCK)
    x1 = solve_adjoint_right(x[:, :, :n1], l[:, :n1, :n1])
    x2 = solve_adjoint_right(x[:, :, n1:] - con.matmul(x1, adjoint(l[:, n1:, :n1])), l[:, n1:, n1:])
    return sh.concatenate([x1, x2], axis=2)


def syrk_lower(c: Tracer, x: Tracer) -> Tracer:
    """C - X X^H in C's lower triangle (what potrf reads; the upper triangle is left unspecified):
    recursively, the lower-left block by one GEMM and the two diagonal blocks by syrk_lower, down to
    blocks of SMALL rows that take a whole GEMM."""
    n = c.shape[1]
    if n <= SMALL:
        return c - con.matmul(x, adjoint(x))
    n1 = split(n, SMALL)
    c11 = syrk_lower(c[:, :n1, :n1], x[:, :n1])
    c21 = c[:, n1:, :n1] - con.matmul(x[:, n1:], adjoint(x[:, :n1]))
    c22 = syrk_lower(c[:, n1:, n1:], x[:, n1:])
    return sh.concatenate([sh.concatenate([c11, c[:, :n1, n1:]], axis=2), sh.concatenate([c21, c22], axis=2)],
                          axis=1)


# ---- trsm --------------------------------------------------------------------------------------

def identity_stack(batch: int, n: int, dtype: str) -> Tracer:
    return sh.broadcast_to(cr.eye(n, dtype=dtype), (batch, n, n))


def trsm(a: Tracer, x: Tracer, *, lower: bool, trans: bool, unit_diagonal: bool) -> Tracer:
    """op(A)^-1 X for triangular stacks A [B, n, n] and X [B, n, k] (routines.py's trsm). Recursive
    above BLOCK rows: one half solved, its product with the off-diagonal block taken from the other
    half's right-hand sides (a GEMM), the other half solved; a leaf of many right-hand sides
    multiplies by its diagonal block's inverse (rocBLAS's way, so that the work is GEMM)."""
    batch, n, _ = a.shape
    if is_empty(a, x):
        return x
    if direct_solve(a, x):
        return solver_call("trsm", [a, x], lower=lower, trans=trans, unit_diagonal=unit_diagonal)[0]
    op_a = adjoint(a) if trans else a
    return trsm_recursive(op_a, x, forward=lower != trans, unit_diagonal=unit_diagonal)


def trsm_recursive(op_a: Tracer, x: Tracer, *, forward: bool, unit_diagonal: bool) -> Tracer:
    """op(A)^-1 X for op(A) lower (forward) or upper triangular, X of many columns."""
    batch, n, _ = op_a.shape
    if n <= BLOCK:
        return con.matmul(trtri(op_a, lower=forward, unit_diagonal=unit_diagonal), x)
    n1 = split(n, BLOCK)
    solve = lambda lo, hi, rhs: trsm_recursive(op_a[:, lo:hi, lo:hi], rhs, forward=forward,
                                               unit_diagonal=unit_diagonal)
    if forward:
        x1 = solve(0, n1, x[:, :n1])
        x2 = solve(n1, n, x[:, n1:] - con.matmul(op_a[:, n1:, :n1], x1))
    else:
        x2 = solve(n1, n, x[:, n1:])
        x1 = solve(0, n1, x[:, :n1] - con.matmul(op_a[:, :n1, n1:], x2))
    return sh.concatenate([x1, x2], axis=1)


# ---- getrs -------------------------------------------------------------------------------------

def direct_solve(a: Tracer, x: Tracer) -> bool:
    """Whether trsm (and getrs) substitute directly rather than by blocks: small matrices, or few
    right-hand sides (n^2 work per column, where inverting the diagonal blocks costs n BLOCK^2)."""
    return a.shape[1] <= BLOCK or x.shape[2] < FEW_COLUMNS


def getrs(lu: Tracer, permutation: Tracer, x: Tracer) -> Tracer:
    """A^-1 X from getrf's factors in one kernel (routines.py's getrs), for a direct_solve problem."""
    if is_empty(lu, x):
        return x
    return solver_call("getrs", [lu, permutation, x])[0]


def getri(lu: Tracer, pivots: Tracer, permutation: Tracer) -> Tracer:
    """A^-1 from getrf's P A = L U (LAPACK's getri): up to BLOCK rows one kernel (getrs of the
    identity, its right-hand sides made in the kernel); above, A^-1 = U^-1 L^-1 P: L^-1 by trtri,
    U^-1 L^-1 by trsm (GEMMs), then its columns permuted (column j is column inverse[j])."""
    batch, n, _ = lu.shape
    if is_empty(lu):
        return lu
    if n <= BLOCK:
        return solver_call("getri", [lu, permutation])[0]
    z = trsm(lu, trtri(lu, lower=True, unit_diagonal=True), lower=False, trans=False, unit_diagonal=False)
    _, inverse = laswp(pivots, n)
    return sh.swapaxes(rows_of(sh.swapaxes(z, 1, 2), inverse), 1, 2)


def trtri(a: Tracer, *, lower: bool, unit_diagonal: bool) -> Tracer:
    """The inverse of the `lower` (or upper) triangle of a stack [B, n, n] (routines.py's trtri), the
    other triangle zero. Recursive above BLOCK rows: the diagonal blocks' inverses, then the
    off-diagonal block -X22 A21 X11 (lower) or -X11 A12 X22 (upper), two GEMMs."""
    batch, n, _ = a.shape
    if is_empty(a):
        return a
    if n <= BLOCK:
        return solver_call("trtri", [a], lower=lower, unit_diagonal=unit_diagonal)[0]
    n1 = split(n, BLOCK)
    x11 = trtri(a[:, :n1, :n1], lower=lower, unit_diagonal=unit_diagonal)
    x22 = trtri(a[:, n1:, n1:], lower=lower, unit_diagonal=unit_diagonal)
    dtype = a.type.dtype
    if lower:
        x21 = -con.matmul(x22, con.matmul(a[:, n1:, :n1], x11))
        return sh.concatenate([sh.concatenate([x11, cr.zeros((batch, n1, n - n1), dtype)], axis=2),
                               sh.concatenate([x21, x22], axis=2)], axis=1)
    x12 = -con.matmul(x11, con.matmul(a[:, :n1, n1:], x22))
    return sh.concatenate([sh.concatenate([x11, x12], axis=2),
                           sh.concatenate([cr.zeros((batch, n - n1, n1), dtype), x22], axis=2)], axis=1)


# ---- potrs -------------------------------------------------------------------------------------

def potrs(c: Tracer, x: Tracer, *, lower: bool) -> Tracer:
    """A^-1 X from potrf's A = L L^H, L = C (lower) or C^H (routines.py's potrs): one kernel for a
    direct_solve problem, else L's and L^H's triangular solves (recursive trsm)."""
    if is_empty(c, x):
        return x
    if direct_solve(c, x):
        return solver_call("potrs", [c, x], lower=lower)[0]
    y = trsm(c, x, lower=lower, trans=not lower, unit_diagonal=False)
    return trsm(c, y, lower=lower, trans=lower, unit_diagonal=False)


# ---- laswp -------------------------------------------------------------------------------------

def laswp(pivots: Tracer, rows: int) -> tuple[Tracer, Tracer]:
    """(permutation, inverse) of a stack of LAPACK pivots [B, k] on `rows` rows (routines.py's laswp)."""
    batch = pivots.shape[0]
    if is_empty(pivots):
        identity = arange_rows(batch, rows)
        return identity, identity
    permutation, inverse = solver_call("laswp", [pivots.astype("int32")], rows=rows)
    return permutation, inverse


# ---- geqrf, orgqr, ormqr -----------------------------------------------------------------------

QR_PANEL = 32        # the widest leaf of a recursive QR of few matrices (qr_leaf)
MANY_MATRICES = 64   # a stack of at least this many fills the kernels' grid by itself (a workgroup)


def qr_leaf(batch: int) -> int:
    """Block size of the recursive QR: the widest panel the geqrf kernel factors whole. A stack of
    many matrices keeps SMALL (the batch fills the grid, a work-item per matrix); a few large ones
    take narrow panels: one work-item factors a panel of b columns serially in 2 m b^2 flops, 2 m n b
    for the whole matrix, so the serial work falls with b while the products stay GEMMs (the
    compact-WY updates and T's blocks)."""
    return SMALL if batch >= MANY_MATRICES else min(SMALL, QR_PANEL)


QR_WY_COLUMNS = 128   # the widest compact-WY block of a QR whose reflections are applied as one (blocked_qr)


def geqrf(a: Tracer) -> tuple[Tracer, Tracer]:
    """(QR, tau) of a stack [B, m, n] (routines.py's geqrf); see blocked_qr."""
    qr, tau, _ = blocked_qr(a, with_t=False)
    return qr, tau


def blocked_qr(a: Tracer, with_t: bool) -> tuple[Tracer, Tracer, list | None]:
    """(QR, tau, blocks) of a stack [B, m, n]: up to QR_WY_COLUMNS columns geqrt's recursive QR;
    above, the left half's QR, its reflections applied to the right half one compact-WY block at a
    time, then the QR of the right half's rows below the left half. blocks (when with_t): (first
    column, T) of each block, H_first ... H_last = I - V T V^H with V the reflectors' columns first..
    (zero above row `first`, so that each block's GEMMs take the right half's full height and no
    slice of it). T is formed only within blocks: Elmroth and Gustavson's T of the whole left half
    costs a GEMM of its halves' reflections (V1^H V2) as large as the update's at each level; at
    2000x1000 with 32-column leaves their fully recursive QR takes 4.6 GFLOP of GEMMs, blocks of
    128 columns 3.9, LAPACK's count 3.3."""
    batch, m, n = a.shape
    k = min(m, n)
    if k <= QR_WY_COLUMNS:
        qr, tau, t = geqrt(a, with_t)
        return qr, tau, [(0, t)] if with_t else None
    n1 = split(k, QR_WY_COLUMNS)
    left, tau1, blocks1 = blocked_qr(a[:, :, :n1], with_t=True)
    v1 = reflectors(left, tau1)
    right = a[:, :, n1:]
    for first, t in blocks1:
        right = apply_transposed(v1[:, :, first:first + t.shape[1]], t, right)
    lower, tau2, blocks2 = blocked_qr(right[:, n1:], with_t)
    qr = sh.concatenate([left, sh.concatenate([right[:, :n1], lower], axis=1)], axis=2)
    tau = sh.concatenate([tau1, tau2], axis=1)
    return qr, tau, blocks1 + [(first + n1, t) for first, t in blocks2] if with_t else None


def geqrt(a: Tracer, with_t: bool) -> tuple[Tracer, Tracer, Tracer | None]:
    """(QR, tau, T) of a stack [B, m, n], H_1 ... H_k = I - V T V^H (T only when with_t; ^H is ^T for
    real matrices). Recursive
    above qr_leaf columns (Elmroth and Gustavson's recursive QR, "Applying recursion to serial and
    parallel QR factorization", IBM J. Res. Dev. 44(4), 2000): the left half's QR and T, its
    reflections applied to the right half in compact WY form (Q1^H A2 = A2 - V1 T1^H V1^H A2,
    GEMMs), the QR of the right half's rows below the left half, and T = [[T1, -T1 V1^H V2 T2],
    [0, T2]], whose corner costs a GEMM of the halves' reflections only (the whole T of each level
    from V^T V would cost 2 m k^2). The same Householder vectors and tau as LAPACK's geqr2."""
    batch, m, n = a.shape
    k = min(m, n)
    if is_empty(a):
        return a, cr.zeros((batch, k), a.type.dtype), (identity_stack(batch, k, a.type.dtype) if with_t else None)
    if k <= qr_leaf(batch):
        qr, tau = solver_call("geqrf", [a])
        return qr, tau, (larft(reflectors(qr, tau), tau) if with_t else None)
    n1 = split(k, qr_leaf(batch))
    left, tau1, t1 = geqrt(a[:, :, :n1], with_t=True)
    v1 = reflectors(left, tau1)
    right = apply_transposed(v1, t1, a[:, :, n1:])
    lower, tau2, t2 = geqrt(right[:, n1:], with_t)
    qr = sh.concatenate([left, sh.concatenate([right[:, :n1], lower], axis=1)], axis=2)
    tau = sh.concatenate([tau1, tau2], axis=1)
    if not with_t:
        return qr, tau, None
    return qr, tau, combined_t(t1, v1[:, n1:], reflectors(lower, tau2), t2)


def combined_t(t1: Tracer, v1_below: Tracer, v2: Tracer, t2: Tracer) -> Tracer:
    """T of (I - V1 T1 V1^H)(I - V2 T2 V2^H) = I - V T V^H, V = [V1, V2] with V2 zero above the rows
    of v1_below (V1's rows where V2 is not zero): [[T1, -T1 (V1^H V2) T2], [0, T2]]."""
    corner = -con.matmul(t1, con.matmul(con.matmul(adjoint(v1_below), v2), t2))
    zeros = cr.zeros((t1.shape[0], t2.shape[1], t1.shape[2]), t1.type.dtype)
    return sh.concatenate([sh.concatenate([t1, corner], axis=2), sh.concatenate([zeros, t2], axis=2)], axis=1)


def reflectors(qr: Tracer, tau: Tracer) -> Tracer:
    """V [B, m, k]: the Householder vectors below QR's diagonal, 1 on it, 0 above; a vector whose
    tau is 0 (H = I) is zero, so that larft's T needs no 1 / tau for it."""
    batch, m, _ = qr.shape
    k = tau.shape[1]
    below = sh.tril(qr[:, :, :k], -1) + cr.eye(m, k, dtype=qr.type.dtype)
    return el.where(el.equal(tau, 0)[:, None, :], 0, below)


def larft(v: Tracer, tau: Tracer) -> Tracer:
    """T [B, k, k] upper triangular with H_1 ... H_k = I - V T V^H. Up to qr_leaf columns: the inverse
    of the strictly upper triangle of V^H V plus diag(1 / tau) (Joffrain, Low, Quintana-Orti, van de
    Geijn and van Zee, "Accumulating Householder transformations, revisited", TOMS 32(2), 2006), a
    GEMM and a trsm (a zero tau gives a 1 on the diagonal; its zero vector then contributes
    nothing); above, the halves' T combined (combined_t)."""
    batch, m, k = v.shape
    if k > qr_leaf(batch):
        k1 = split(k, qr_leaf(batch))
        t1, t2 = larft(v[:, :, :k1], tau[:, :k1]), larft(v[:, k1:, k1:], tau[:, k1:])
        return combined_t(t1, v[:, k1:, :k1], v[:, k1:, k1:], t2)
    gram = sh.triu(con.matmul(adjoint(v), v), 1)
    inverse_tau = el.where(el.equal(tau, 0), 1, 1 / el.where(el.equal(tau, 0), 1, tau))
    s = gram + inverse_tau[:, :, None] * cr.eye(k, dtype=v.type.dtype)
    return trsm(s, identity_stack(batch, k, v.type.dtype), lower=False, trans=False, unit_diagonal=False)


def apply_transposed(v: Tracer, t: Tracer, c: Tracer) -> Tracer:
    """Q^H C for Q = I - V T V^H (LAPACK's larfb, side L, trans C): C - V T^H (V^H C), three GEMMs."""
    return c - con.matmul(v, con.matmul(adjoint(t), con.matmul(adjoint(v), c)))


def orgqr(qr: Tracer, tau: Tracer, columns: int) -> Tracer:
    """The first `columns` columns of Q (routines.py's orgqr); above SMALL blocked as LAPACK's orgqr:
    Q = H_0 ... H_{k-1} applied to I[:, :columns] by reflected, a block of BLOCK reflectors at a time,
    the last first, each on the corner it changes: 4 / 3 n^3 flops of GEMMs for a square Q, where the
    whole Q's compact WY form (I - V T V^H with an n x n T) takes 4 n^3 and T's own GEMMs."""
    batch, m, n = qr.shape
    if batch == 0 or m == 0 or columns == 0:
        return cr.zeros((batch, m, columns), qr.type.dtype)
    if min(m, n) == 0:
        return identity_stack(batch, m, qr.type.dtype)[:, :, :columns]
    if min(m, n) <= SMALL:
        return solver_call("orgqr", [qr, tau], columns=columns)[0]
    return reflected(qr, tau, sh.broadcast_to(cr.eye(m, columns, dtype=qr.type.dtype), (batch, m, columns)),
                     corners=True)


# ---- syev, syevj ---------------------------------------------------------------------------------

def symmetric_eigenproblem(a: Tracer) -> tuple[Tracer, Tracer]:
    """(w ascending, V) of a stack of symmetric (Hermitian) matrices [B, n, n]; w is real. The heuristic:
    syev (tridiagonal reduction + implicit QR, about 9 n^3 flops, one work-item per matrix) below
    TRIDIAGONAL_FROM rows; the library's syevj (cyclic Jacobi) is slower everywhere measured. On the
    host, syev was 2x (f64) and 11x (c128) faster than syevj on 2000 4x4 matrices, 4x and 5x on 300
    16x16, 36x and 8x on 100 32x32, 110x on one 256x256 f64. From TRIDIAGONAL_FROM rows,
    large_symmetric_eigenproblem: its steps as separate calls, the reduction spread over a workgroup,
    the tridiagonal's vectors by divide and conquer, Q applied by GEMMs. Measured on the host (2 cores,
    heavily loaded; CPU time, f64 unless named), syev vs those steps: one 128x128 3 vs 2 ms (c128 6.7 vs
    6.0), 160x160 3.9 vs 4.6, 256x256 18 vs 10, 384x384 59 vs 27; 20 128x128 50 vs 42; 100 64x64 34 vs
    53: about even from 128 to 160 rows."""
    batch, n, _ = a.shape
    if is_empty(a):
        return cr.zeros((batch, n), el.real(a).type.dtype), a
    if n < TRIDIAGONAL_FROM:
        w, v, _ = solver_call("syev", [a])
        return w, v
    return large_symmetric_eigenproblem(a)


TRIDIAGONAL_FROM = 192


def symmetric_eigenvalues(a: Tracer) -> Tracer:
    """symmetric_eigenproblem's w alone: from TRIDIAGONAL_FROM rows the tridiagonal form (tridiagonal_form)
    and steqr (its rotation log unused), without divide and conquer's vectors; below, syev's (one kernel,
    which forms V regardless)."""
    batch, n, _ = a.shape
    if is_empty(a) or n < TRIDIAGONAL_FROM:
        return symmetric_eigenproblem(a)[0]
    _, _, d, e, _ = tridiagonal_form(a)
    return solver_call("steqr", [d, e])[0]


def large_symmetric_eigenproblem(a: Tracer) -> tuple[Tracer, Tracer]:
    """(w, V) of a stack [B, n, n], not empty, as LAPACK's syevd in its steps: A reduced to tridiagonal
    form, keeping its reflectors (tridiagonal_form), tridiagonal_eigenvectors solves the tridiagonal by
    divide and conquer, and V = Q S Z: S's phases on Z's rows, then Q's reflectors applied to them
    (reflected, LAPACK's ormtr)."""
    qr, tau, d, e, phases = tridiagonal_form(a)
    w, z = tridiagonal_eigenvectors(d, e)
    return w, reflected(qr, tau, z.astype(a.type.dtype) * phases[:, :, None], first=1)


TRIDIAGONAL_PANEL = 64   # columns of a latrd panel
BLOCKED_SYTRD_FROM = 384   # rows from which the reduction takes panels; sytrd reduces fewer whole
# Measured on the host (f64, one matrix, loaded machine, CPU time), sytrd whole vs blocked: 256 rows 2.8 vs
# 3.3 ms, 384 9.1 vs 10.4, 600 34.5 vs 36.6, 1000 159 vs 152 (panels of 32: 166). sytrd's single pass
# a step (A22 read and written once for both its product and its update) costs about as much CPU as
# latrd's read plus the GEMM; blocked, the GEMM's half of it runs on every core while sytrd runs on one,
# which pays once the trailing matrix outgrows the cache.


def tridiagonal_form(a: Tracer) -> tuple[Tracer, Tracer, Tracer, Tracer, Tracer]:
    """Q^H A Q = S T S^H for the Hermitian matrices of a stack's lower triangles (A [B, n, n], n >= 1; the
    diagonal's imaginary part not read), as LAPACK's sytrd: (qr [B, n - 1, n - 1] holding Q = H_0 ...
    H_{n-2}'s reflectors below its diagonal as geqrf's do (acting on rows 1..n - 1), tau [B, n - 1],
    T's diagonal d [B, n] and subdiagonal e [B, n] (real, e[n - 1] = 0), S's phases [B, n]). Below
    BLOCKED_SYTRD_FROM rows one sytrd call (a workgroup per matrix, A's rank-2 updates inside the
    kernel); from there, panels of TRIDIAGONAL_PANEL columns: latrd reduces a panel, reading the
    trailing matrix's lower triangle without writing it, and the trailing matrix takes the panel's
    reflections at once, A22 - V W^H - W V^H, as one GEMM (of inner size twice the panel's; LAPACK's
    syr2k computes the lower triangle alone, with half the flops, but not as one GEMM), until
    fewer than BLOCKED_SYTRD_FROM rows are left for sytrd. The phases chain across the panels and into
    sytrd's (whose first phase is 1: its rows' phases are multiplied by the phase the panels end with)."""
    batch, n, _ = a.shape
    dtype = a.type.dtype
    one = cr.ones((batch, 1), dtype)
    if n < BLOCKED_SYTRD_FROM:
        packed, d, e, _ = solver_call("sytrd", [a])
        return (packed[:, 1:, :n - 1], packed[:, 0, :n - 1], d, e,
                sh.concatenate([one, sh.diagonal(packed, offset=-1, axis1=1, axis2=2)], axis=1))
    width = TRIDIAGONAL_PANEL
    phase = cr.ones((batch,), dtype)
    columns, taus, ds, es, phases = [], [], [], [], [one]
    start = 0
    while n - start >= BLOCKED_SYTRD_FROM:
        vt, wt, tau, d, e, phase_panel = solver_call("latrd", [a, phase], columns=width)
        left = sh.swapaxes(sh.concatenate([vt, wt], axis=1)[:, :, width:], 1, 2)
        right = el.conj(sh.concatenate([wt, vt], axis=1)[:, :, width:])
        a = a[:, width:, width:] - con.matmul(left, right)
        columns.append(below_zeros(sh.swapaxes(vt[:, :, 1:], 1, 2), start))
        taus.append(tau), ds.append(d), es.append(e), phases.append(phase_panel)
        phase = phase_panel[:, width - 1]
        start += width
    packed, d, e, _ = solver_call("sytrd", [a])
    rest = n - start
    columns.append(below_zeros(packed[:, 1:, :rest - 1], start))
    taus.append(packed[:, 0, :rest - 1]), ds.append(d), es.append(e)
    phases.append(phase[:, None] * sh.diagonal(packed, offset=-1, axis1=1, axis2=2))
    return tuple(sh.concatenate(parts, axis=axis) for parts, axis in (
        (columns, 2), (taus, 1), (ds, 1), (es, 1), (phases, 1)))


def below_zeros(x: Tracer, rows: int) -> Tracer:
    """x [B, m, k] below `rows` rows of zeros."""
    return sh.concatenate([cr.zeros((x.shape[0], rows, x.shape[2]), x.type.dtype), x], axis=1)


def reflected(qr: Tracer, tau: Tracer, c: Tracer, first: int = 0, corners: bool = False) -> Tracer:
    """C with its rows from `first` on replaced by Q times them, for Q = H_0 ... H_{k-1}, geqrf's
    reflectors (qr [B, m, k], tau [B, k]), C [B, first + m, p] (LAPACK's ormqr, side L, no transpose):
    blocks of BLOCK reflectors, the last first, each in compact WY form on the rows it changes (those
    from its first reflector's), 2 m k p flops of GEMMs in all (the whole Q's compact WY form, n x n
    blocks, would take three times as many). Each block's rows are written back into C by a
    dynamic_update_slice, which the in_place pass makes an update of C's buffer (C's other rows are
    not copied). corners: C's rows from a block's first on are zero left of its first column, as I's
    rows are under the blocks after it (orgqr), so the block changes only that corner."""
    k = tau.shape[1]
    for start in reversed(range(0, k, BLOCK)):
        stop = min(start + BLOCK, k)
        v = reflectors(qr[:, start:, start:stop], tau[:, start:stop])
        t = larft(v, tau[:, start:stop])
        left = start if corners else 0
        rows = c[:, first + start:, left:]
        c = lax_shape.dynamic_update_slice(
            c, rows - con.matmul(v, con.matmul(t, con.matmul(adjoint(v), rows))), (0, first + start, left))
    return c


DIVIDE_LEAF = 64   # rows of divide and conquer's leaves at most


def tridiagonal_eigenvectors(d: Tracer, e: Tracer) -> tuple[Tracer, Tracer]:
    """(w ascending, Z) with T = Z diag(w) Z^T for real symmetric tridiagonals T (d[B, n], e[B, n]: e[k]
    couples k and k + 1, e[n - 1] not read), by LAPACK's divide and conquer (stedc, laed0): T is torn
    into 2^L leaves of equal size (at most DIVIDE_LEAF rows, each tear subtracting |e| from the two
    diagonal entries it separates), the leaves solved by steqr and lasr (one call each for all of them),
    then each level's pairs merged by laed1 (one call a level: the rank-one modification's eigenpairs)
    and the halves' vectors multiplied by the merge's (one batched GEMM a level, over views of both). n is padded to
    2^L leaves by rows decoupled from T (e = 0) whose diagonal exceeds Gershgorin's bound on T's
    eigenvalues: their eigenpairs stay exact unit vectors, deflated at every merge, and sort last."""
    batch, n = d.shape
    levels = 0
    while -(-n // 2 ** levels) > DIVIDE_LEAF:
        levels += 1
    leaves = 2 ** levels
    leaf = -(-n // leaves)
    padded = leaf * leaves
    coupling = el.abs(e[:, :n - 1])
    edge = cr.zeros((batch, 1), d.type.dtype)
    radius = sh.concatenate([edge, coupling], axis=1) + sh.concatenate([coupling, edge], axis=1)
    upper, lower = red.max(d + radius, axis=1), red.min(d - radius, axis=1)
    pad = upper + (upper - lower) + el.abs(upper) * 2.0 ** -10
    diagonal = sh.concatenate([d, sh.broadcast_to(pad[:, None], (batch, padded - n))], axis=1)
    off = sh.concatenate([e[:, :n - 1], cr.zeros((batch, padded - n + 1), d.type.dtype)], axis=1)
    torn = np.zeros(padded, bool)
    torn[leaf - 1:padded - 1:leaf] = True   # e[k] coupling the leaves
    tear = el.abs(off) * cr.asarray(torn.astype(np.float64), dtype=d.type.dtype)
    diagonal = diagonal - tear - sh.concatenate([edge, tear[:, :padded - 1]], axis=1)
    w, _, pairs, cs, count = solver_call("steqr", [sh.reshape(diagonal, (batch * leaves, leaf)),
                                                   sh.reshape(off, (batch * leaves, leaf))])
    identity = sh.broadcast_to(cr.eye(leaf, dtype=d.type.dtype), (batch * leaves, leaf, leaf))
    z = sh.swapaxes(solver_call("lasr", [identity, pairs, cs, count])[0], 1, 2)
    rows = leaf
    while rows < padded:
        groups = batch * padded // (2 * rows)
        pairs_of_halves = sh.reshape(z, (groups, 2, rows, rows))
        rho = sh.reshape(sh.reshape(off, (groups, 2 * rows))[:, rows - 1], (groups,))
        w, u, _, _ = solver_call("laed1", [sh.reshape(w, (groups, 2 * rows)), sh.concatenate(
            [pairs_of_halves[:, 0, rows - 1, :], pairs_of_halves[:, 1, 0, :]], axis=1), rho])
        # Each half's vectors times its rows of u, as one batched GEMM over views: halves [2 groups,
        # rows, rows] times u's row halves [2 groups, rows, 2 rows] stack as the merged [groups, 2 rows,
        # 2 rows] (no copies of the halves, of u's rows or of the products).
        z = sh.reshape(con.matmul(sh.reshape(z, (2 * groups, rows, rows)), sh.reshape(u, (2 * groups, rows, 2 * rows))),
                       (groups, 2 * rows, 2 * rows))
        rows *= 2
    return sh.reshape(w, (batch, padded))[:, :n], sh.reshape(z, (batch, padded, padded))[:, :n, :n]


def bidiagonal_vectors(d: Tracer, e: Tracer) -> tuple[Tracer, Tracer, Tracer]:
    """(s descending, U_B, V_B) with B = U_B diag(s) V_B^T for real upper bidiagonals B (d[B, n], e[B, n]:
    e[k] in row k and column k + 1, e[n - 1] not read), by LAPACK's divide and conquer (bdsdc, lasd0).
    Its problems are square upper bidiagonals whose last diagonal entry is zero (divide_svd.py's lasd1):
    B padded to such a T of 2^L leaves of equal size (at most DIVIDE_LEAF rows), T = diag(B, p, ..., p, 0)
    with p = 2 (max |d| + max |e|) > ||B||, whose rows decoupled from B keep exact unit vectors (their z
    entries are exactly zero at every merge) and whose values p sort first; each leaf's last diagonal entry
    read as zero and its last e dropped (they are the alpha and beta of the merge above it), the leaves
    solved by bdsqr and lasr (one call each for all of them, their zero row's left vector then put last:
    leaf_with_zero_row_last), each level's pairs merged by lasd1 (one call a level) and the halves'
    vectors multiplied by the merge's (one batched GEMM a level for U and one for V, over views of both)."""
    batch, n = d.shape
    dtype = d.type.dtype
    levels = 0
    while -(-(n + 1) // 2 ** levels) > DIVIDE_LEAF:
        levels += 1
    leaves = 2 ** levels
    leaf = -(-(n + 1) // leaves)
    padded = leaf * leaves
    bound = red.max(el.abs(d), axis=1) + red.max(el.abs(e[:, :n - 1]), axis=1) if n > 1 else red.max(el.abs(d), axis=1)
    pad = el.where(bound > 0, bound * 2.0, cr.ones((batch,), dtype))
    diagonal = sh.concatenate([d, sh.broadcast_to(pad[:, None], (batch, padded - n - 1)), cr.zeros((batch, 1), dtype)],
                              axis=1)
    off = sh.concatenate([e[:, :n - 1], cr.zeros((batch, padded - n + 1), dtype)], axis=1)
    inner = np.ones(padded)
    inner[leaf - 1::leaf] = 0   # each leaf's last row: the merge's alpha and beta
    inner = cr.asarray(inner, dtype=dtype)
    s, _, left_pairs, left_cs, right_pairs, right_cs, counts = solver_call(
        "bdsqr", [sh.reshape(diagonal * inner, (batch * leaves, leaf)), sh.reshape(off * inner, (batch * leaves, leaf))],
        vectors=True)
    identity = identity_stack(batch * leaves, leaf, dtype)
    u = leaf_with_zero_row_last(sh.swapaxes(solver_call("lasr", [identity, left_pairs, left_cs, counts[:, 0]])[0], 1, 2))
    v = sh.swapaxes(solver_call("lasr", [identity, right_pairs, right_cs, counts[:, 1]])[0], 1, 2)
    rows = leaf
    while rows < padded:
        groups = batch * padded // (2 * rows)
        middle = lambda x: sh.reshape(sh.reshape(x, (groups, 2 * rows))[:, rows - 1], (groups,))
        halves = sh.reshape(v, (groups, 2, rows, rows))
        s, u_merge, v_merge, _, _ = solver_call("lasd1", [
            sh.reshape(s, (groups, 2 * rows)), sh.concatenate([halves[:, 0, rows - 1, :], halves[:, 1, 0, :]], axis=1),
            middle(diagonal), middle(off)])
        # Each half's vectors times its rows of the merge's, one batched GEMM over views (as
        # tridiagonal_eigenvectors).
        u, v = (sh.reshape(con.matmul(sh.reshape(x, (2 * groups, rows, rows)), sh.reshape(y, (2 * groups, rows, 2 * rows))),
                           (groups, 2 * rows, 2 * rows)) for x, y in ((u, u_merge), (v, v_merge)))
        rows *= 2
    first = padded - n - 1   # the values p before B's
    return (sh.reshape(s, (batch, padded))[:, first:first + n], sh.reshape(u, (batch, padded, padded))[:, :n, first:first + n],
            sh.reshape(v, (batch, padded, padded))[:, :n, first:first + n])


def leaf_with_zero_row_last(u: Tracer) -> Tracer:
    """U of a leaf S = U diag(s) V^T whose last row is zero, as bdsqr's log gives it, with e_last as its
    last column: bdsqr chases the zero row's entry out by rotations of columns alone, so U's last row is
    exactly +-e_c^T for a column c of singular value 0, and column c is +-e_last; s[last] = 0 too (the
    smallest), so columns c and last are swapped (V's left as they are) and c's sign made +1, exactly:
    U + (b - sign e_last) r + (e_last - b) e_last^T, r = |U's last row|, b = U's last column."""
    m = u.shape[1]
    r = el.abs(u[:, m - 1:, :])
    b = u[:, :, m - 1:]
    sign = red.sum(u[:, m - 1:, :], axis=2, keepdims=True)
    unit = cr.asarray(np.eye(m)[:, m - 1:], dtype=u.type.dtype)
    return u + (b - sign * unit) * r + (unit - b) * sh.swapaxes(unit, 0, 1)


def bordered(x: Tracer) -> Tracer:
    """[[1, 0], [0, x]] for each matrix of a stack [B, k, k]."""
    batch, k, _ = x.shape
    top = sh.concatenate([cr.ones((batch, 1, 1), x.type.dtype), cr.zeros((batch, 1, k), x.type.dtype)], axis=2)
    return sh.concatenate([top, sh.concatenate([cr.zeros((batch, k, 1), x.type.dtype), x], axis=2)], axis=1)



def turned_rows(x: Tracer, pairs: Tracer, cs: Tracer, count: Tracer) -> Tracer:
    """lasr of x's rows; a complex x's rows as real rows of twice the length (re, im interleaved: a real
    rotation turns both parts alike)."""
    if not is_complex(x.type.dtype):
        return solver_call("lasr", [x, pairs, cs, count])[0]
    batch, rows, columns = x.shape
    parts = sh.reshape(sh.stack([el.real(x), el.imag(x)], axis=-1), (batch, rows, 2 * columns))
    turned = sh.reshape(solver_call("lasr", [parts, pairs, cs, count])[0], (batch, rows, columns, 2))
    return el.apply("complex", turned[..., 0], turned[..., 1])


# ---- geev ---------------------------------------------------------------------------------------

COMPLEX_OF = {"f32": "c64", "f64": "c128"}   # the eigenvalues' dtype of real matrices


def geev(a: Tracer) -> Tracer:
    """The complex eigenvalues of a stack [B, n, n] (routines.py's geev of gebal's balanced matrix, as
    LAPACK's geev; NaNs for a matrix whose QR iteration did not converge)."""
    batch, n, _ = a.shape
    if is_empty(a):
        return cr.zeros((batch, n), a.type.dtype if is_complex(a.type.dtype) else COMPLEX_OF[a.type.dtype])
    balanced, _, _, _ = solver_call("gebal", [a])
    *values, _ = solver_call("geev", [balanced], vectors=False)
    return eigenvalues(values)


def eigenvalues(values) -> Tracer:
    """geev's eigenvalues as one complex array: w, or wr + i wi."""
    return values[0] if len(values) == 1 else el.apply("complex", *values)


def geev_vectors(a: Tracer) -> tuple[Tracer, Tracer]:
    """(w, V) of a stack [B, n, n] (not empty): the eigenvalues as geev gives them and the right
    eigenvectors, complex, unnormalized: for gebal's B = D^-1 P^T A P D, V = P D Z X from B's Schur form
    B = Z T Z^H (geev with vectors; real: the real Schur form) and T's eigenvectors X (trevc)."""
    balanced, scale, _, rows = solver_call("gebal", [a])
    *values, t, z = solver_call("geev", [balanced], vectors=True)
    (x,) = solver_call("trevc", [t, *values])
    v = con.matmul(z.astype(x.type.dtype), x) * scale[:, :, None].astype(x.type.dtype)
    return eigenvalues(values), rows_of(v, rows)


# ---- gesvdj ------------------------------------------------------------------------------------

def gesvdj(a: Tracer) -> tuple[Tracer, Tracer, Tracer]:
    """(s descending and real, U [B, m, n], V [B, n, n]) of a stack [B, m, n] with m >= n (routines.py's
    gesvdj)."""
    batch, m, n = a.shape
    if is_empty(a):
        return cr.zeros((batch, n), el.real(a).type.dtype), a, identity_stack(batch, n, a.type.dtype)
    s, u, v = solver_call("gesvdj", [a])
    return s, u, v


# ---- gesvd -------------------------------------------------------------------------------------

GESVD_FROM = {True: 16, False: 8}   # columns from which a real svd takes gesvd, with and without U and V


def takes_gesvd(a: Tracer, vectors: bool) -> bool:
    """The svd heuristic for a stack [B, m, n], m >= n: gesvd for real matrices of at least
    GESVD_FROM[vectors] columns; gesvdj (one-sided Jacobi, one work-item per matrix) for smaller and
    complex ones. Measured on the host (f64, loaded machine), gesvdj vs gesvd with vectors / without:
    2000 4x4 2.8 vs 9.1 ms / 1.3 vs 2.3 ms, 1000 8x8 13 vs 32 / 20 vs 3.0, 300 16x16 44 vs 44 / 32 vs
    8.5, 100 32x32 100 vs 74 / 111 vs 9.6, 10 64x64 123 vs 16 / 119 vs 7.5, one 128x128 190 vs 11 / 170
    vs 1.9 ms (one 1000x1000 with vectors: 3.9 s; Jacobi took minutes)."""
    return not is_complex(a.type.dtype) and a.shape[2] >= GESVD_FROM[vectors]


DIVIDE_SVD_FROM = 256   # columns from which gesvd's vectors come by divide and conquer (gesdd's way). Measured
# on the host (f64, CPU time, median of 7, loaded machine), divide and conquer vs bdsqr's logs and lasr: one
# 128x128 5.4 vs 6.4 ms, 192x192 12.2 vs 11.1, 256x256 22.0 vs 22.8, 384x384 56 vs 68, 512x512 132 vs 162,
# 10 64x64 16 vs 8, 10 128x128 63 vs 59; one 1000x1000 (per-kernel sums of a profile) about 0.7 vs 1.5 s
# for all but gebrd.


def gesvd(a: Tracer, columns: int | None) -> tuple[Tracer, Tracer | None, Tracer | None]:
    """(s descending, U [B, m, columns], V^T [B, n, n]) of a real stack [B, m, n], m >= n, not empty:
    A = Q B P^T (gebrd), B = U_B diag(s) V_B^T. columns = None: s alone (bdsqr without logs). From
    DIVIDE_SVD_FROM columns as LAPACK's gesdd: U_B and V_B by divide and conquer (bidiagonal_vectors),
    then U = Q U_B and V = P V_B by Q's and P's reflectors applied to them (reflected: GEMMs, ormbr's way,
    without forming Q or P); below, as gesvd: bdsqr's rotation logs turning the rows of orgqr's Q^T and
    P^T (lasr), whose n^2 rotations a side cost O(n^3) flops that are not GEMMs."""
    batch, m, n = a.shape
    dtype = a.type.dtype
    packed, tauq, taup = solver_call("gebrd", [a])
    d = sh.diagonal(packed, axis1=1, axis2=2)
    e = sh.concatenate([sh.diagonal(packed, offset=1, axis1=1, axis2=2), cr.zeros((batch, 1), dtype)], axis=1)
    if columns is None:
        return solver_call("bdsqr", [d, e], vectors=False)[0], None, None
    # P = diag(1, P'), P' the Q of the row reflectors read as columns (their vectors right of the
    # superdiagonal, the 1 on it).
    row_reflectors, row_tau = sh.swapaxes(packed, 1, 2)[:, 1:, :n - 1], taup[:, :n - 1]
    if n >= DIVIDE_SVD_FROM:
        s, u_b, v_b = bidiagonal_vectors(d, e)
        # U = Q [[U_B, 0], [0, I]] (its first `columns` columns), V = diag(1, P') V_B.
        below = sh.concatenate([cr.zeros((batch, m - n, n), dtype), identity_stack(batch, m - n, dtype)], axis=2)
        c = sh.concatenate([sh.concatenate([u_b, cr.zeros((batch, n, m - n), dtype)], axis=2), below], axis=1)
        u = reflected(packed, tauq, c[:, :, :columns])
        return s, u, sh.swapaxes(reflected(row_reflectors, row_tau, v_b, first=1), 1, 2)
    s, _, left_pairs, left_cs, right_pairs, right_cs, counts = solver_call("bdsqr", [d, e], vectors=True)
    q = orgqr(packed, tauq, columns)
    p = bordered(orgqr(row_reflectors, row_tau, n - 1))
    ut = turned_rows(sh.swapaxes(q, 1, 2), left_pairs, left_cs, counts[:, 0])
    vt = turned_rows(sh.swapaxes(p, 1, 2), right_pairs, right_cs, counts[:, 1])
    return s, sh.swapaxes(ut, 1, 2), vt
