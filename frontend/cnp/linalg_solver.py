"""The solver library's routines on stacks of matrices [B, rows, columns], as rocSOLVER's host code
runs them: a small matrix is one library call (libs/solver: one work-item per matrix, the whole
stack in one launch); a large one is a sequence of calls the graph holds, panels factored by the
solver's kernels and trailing updates as matrix products, which the BLAS library's matcher turns
into GEMMs (`library_call blas.*`). The loops below run while tracing, so every call has static
sizes; the kernels take sizes as scalar parameters, so the panels of one factorization, which
differ in height, share one compiled kernel per routine.

Blocking (LAPACK's right-looking algorithms, with rocBLAS's trsm, which multiplies by the inverses
of diagonal blocks so that the bulk of the work is GEMM):
  - getrf: panels of BLOCK columns, each factored recursively (the panel of a panel is SMALL
    columns wide) and its row swaps applied to the rows below the panel by one row gather (lapmr);
    the factored blocks are written into the matrix in place (dynamic_update_slice);
  - potrf: diagonal blocks factored by the kernel, the column below them and the trailing
    update by products with the block's inverse;
  - trsm: blocks of rows solved with the inverses of the diagonal blocks, each a GEMM.
geqrf/orgqr, syevj and gesvdj run unblocked at every size (one work-item per matrix).
"""
from __future__ import annotations

from .. import lax_shape
from ..tracing import Tracer, bind
from . import contractions as con
from . import creation as cr
from . import shaping as sh

BLOCK = 128        # columns per panel of a blocked factorization
SMALL = 128        # matrices up to this size go to the unblocked kernel whole
FEW_COLUMNS = 64   # a trsm of fewer right-hand sides substitutes directly: n^2 work per column, where
                   # inverting the diagonal blocks costs n BLOCK^2 however few the columns


def solver_call(routine: str, operands, **attrs) -> list[Tracer]:
    return bind("library_call", list(operands), {"library": "solver", "routine": routine, "solution": "", **attrs})


def is_empty(*xs: Tracer) -> bool:
    return any(x.size == 0 for x in xs)


def rows_of(x: Tracer, permutation: Tracer) -> Tracer:
    """x[b, permutation[b, i], :] for every b and i (routines.py's lapmr)."""
    if is_empty(x, permutation):
        return cr.zeros((x.shape[0], permutation.shape[1], x.shape[2]), x.type.dtype)
    return solver_call("lapmr", [x, permutation.astype("int32")])[0]


def placed(x: Tracer, update: Tracer, *starts: int) -> Tracer:
    """x with `update` written at `starts` (an update in place when x is not read after it)."""
    return lax_shape.dynamic_update_slice(x, update, starts)


def arange_rows(batch: int, rows: int) -> Tracer:
    return sh.broadcast_to(cr.arange(rows, dtype="int32"), (batch, rows))


# ---- getrf -------------------------------------------------------------------------------------

def getrf(a: Tracer) -> tuple[Tracer, Tracer, Tracer]:
    """(LU, pivots, permutation) of a stack [B, m, n] (libs/solver/routines.py's getrf)."""
    batch, m, n = a.shape
    if is_empty(a):
        return a, cr.zeros((batch, min(m, n)), "int32"), arange_rows(batch, m)
    if min(m, n) <= SMALL:
        lu, pivots, permutation = solver_call("getrf", [a])
        return lu, pivots, permutation
    return getrf_blocked(a, BLOCK if n > BLOCK else SMALL)


def getrf_blocked(a: Tracer, width: int):
    batch, m, n = a.shape
    steps = min(m, n)
    lu, pivot_blocks = a, []
    for k0 in range(0, steps, width):
        kb = min(width, steps - k0)
        panel, pivots, panel_permutation = getrf(lu[:, k0:, k0:k0 + kb])
        pivot_blocks.append(pivots + k0)
        # The panel's row swaps on the rows below k0 (all columns), then its columns in place.
        rows = placed(rows_of(lu, panel_permutation + k0), panel, 0, 0, k0)
        if k0 + kb < n:
            # U12 = L11^-1 A12, then A22 -= L21 U12 (a GEMM whose C is A22).
            u12 = trsm(panel[:, :kb], rows[:, :kb, k0 + kb:], lower=True, trans=False, unit_diagonal=True)
            rows = placed(rows, u12, 0, 0, k0 + kb)
            if kb < m - k0:
                trailing = -con.matmul(panel[:, kb:], u12) + rows[:, kb:, k0 + kb:]
                rows = placed(rows, trailing, 0, kb, k0 + kb)
        lu = placed(lu, rows, 0, k0, 0)
    pivots = sh.concatenate(pivot_blocks, axis=1)
    return lu, pivots, laswp(pivots, m)[0]


# ---- potrf -------------------------------------------------------------------------------------

def potrf(a: Tracer) -> Tracer:
    """L of a stack [B, n, n], A = L L^T from A's lower triangle (routines.py's potrf)."""
    batch, n, _ = a.shape
    if is_empty(a):
        return a
    if n <= BLOCK:
        return solver_call("potrf", [a])[0]
    columns, trailing = [], a
    for k0 in range(0, n, BLOCK):
        kb = min(BLOCK, n - k0)
        l11 = solver_call("potrf", [trailing[:, :kb, :kb]])[0]
        if k0 + kb == n:
            columns.append(l11)
            break
        # L21 = A21 L11^-T, then A22 -= L21 L21^T (GEMMs).
        l11_inverse = solver_call("trsm", [l11, identity_stack(batch, kb, a.type.dtype)], lower=True, trans=False,
                                  unit_diagonal=False)[0]
        l21 = con.matmul(trailing[:, kb:, :kb], sh.swapaxes(l11_inverse, 1, 2))
        columns.append(sh.concatenate([l11, l21], axis=1))
        trailing = trailing[:, kb:, kb:] - con.matmul(l21, sh.swapaxes(l21, 1, 2))
    # Column panels, each below its zero rows, side by side.
    padded = [sh.concatenate([cr.zeros((batch, n - c.shape[1], c.shape[2]), a.type.dtype), c], axis=1)
              if c.shape[1] < n else c for c in columns]
    return sh.concatenate(padded, axis=2)


# ---- trsm --------------------------------------------------------------------------------------

def identity_stack(batch: int, n: int, dtype: str) -> Tracer:
    return sh.broadcast_to(cr.eye(n, dtype=dtype), (batch, n, n))


def trsm(a: Tracer, x: Tracer, *, lower: bool, trans: bool, unit_diagonal: bool) -> Tracer:
    """op(A)^-1 X for triangular stacks A [B, n, n] and X [B, n, k] (routines.py's trsm)."""
    batch, n, _ = a.shape
    if is_empty(a, x):
        return x
    attrs = {"lower": lower, "trans": trans, "unit_diagonal": unit_diagonal}
    if direct_solve(a, x):
        return solver_call("trsm", [a, x], **attrs)[0]
    op_a = sh.swapaxes(a, 1, 2) if trans else a
    forward = lower != trans
    starts = list(range(0, n, BLOCK))
    # The inverses of the diagonal blocks of op(A), all in one launch.
    blocks = [(k0, min(BLOCK, n - k0)) for k0 in starts]
    full = [k0 for k0, kb in blocks if kb == BLOCK]
    inverses = {}
    if full:
        diagonal = sh.concatenate([op_a[:, k0:k0 + BLOCK, k0:k0 + BLOCK] for k0 in full], axis=0)
        inverted = solver_call("trsm", [diagonal, identity_stack(diagonal.shape[0], BLOCK, a.type.dtype)],
                               lower=forward, trans=False, unit_diagonal=unit_diagonal)[0]
        inverses = {k0: inverted[i * batch:(i + 1) * batch] for i, k0 in enumerate(full)}
    solved = {}
    for k0, kb in (blocks if forward else blocks[::-1]):
        done = [k for k, _ in blocks if k in solved]
        rhs = x[:, k0:k0 + kb]
        if done:
            rows = sh.concatenate([solved[k] for k in sorted(done)], axis=1)
            first = min(done)
            columns = op_a[:, k0:k0 + kb, first:first + rows.shape[1]]
            rhs = rhs - con.matmul(columns, rows)
        if k0 in inverses:
            solved[k0] = con.matmul(inverses[k0], rhs)
        else:
            solved[k0] = solver_call("trsm", [op_a[:, k0:k0 + kb, k0:k0 + kb], rhs], lower=forward, trans=False,
                                     unit_diagonal=unit_diagonal)[0]
    return sh.concatenate([solved[k0] for k0 in starts], axis=1)


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


# ---- laswp -------------------------------------------------------------------------------------

def laswp(pivots: Tracer, rows: int) -> tuple[Tracer, Tracer]:
    """(permutation, inverse) of a stack of LAPACK pivots [B, k] on `rows` rows (routines.py's laswp)."""
    batch = pivots.shape[0]
    if is_empty(pivots):
        identity = arange_rows(batch, rows)
        return identity, identity
    permutation, inverse = solver_call("laswp", [pivots.astype("int32")], rows=rows)
    return permutation, inverse


# ---- geqrf, orgqr ------------------------------------------------------------------------------

def geqrf(a: Tracer) -> tuple[Tracer, Tracer]:
    """(QR, tau) of a stack [B, m, n] (routines.py's geqrf: unblocked, one work-item per matrix)."""
    batch, m, n = a.shape
    if is_empty(a):
        return a, cr.zeros((batch, min(m, n)), a.type.dtype)
    qr, tau = solver_call("geqrf", [a])
    return qr, tau


def orgqr(qr: Tracer, tau: Tracer, columns: int) -> Tracer:
    """The first `columns` columns of Q (routines.py's orgqr)."""
    batch, m, n = qr.shape
    if batch == 0 or m == 0 or columns == 0:
        return cr.zeros((batch, m, columns), qr.type.dtype)
    if min(m, n) == 0:
        return identity_stack(batch, m, qr.type.dtype)[:, :, :columns]
    return solver_call("orgqr", [qr, tau], columns=columns)[0]


# ---- syevj -------------------------------------------------------------------------------------

def syevj(a: Tracer) -> tuple[Tracer, Tracer]:
    """(w ascending, V) of a stack of symmetric matrices [B, n, n] (routines.py's syevj)."""
    batch, n, _ = a.shape
    if is_empty(a):
        return cr.zeros((batch, n), a.type.dtype), a
    w, v, _ = solver_call("syevj", [a])
    return w, v


# ---- gesvdj ------------------------------------------------------------------------------------

def gesvdj(a: Tracer) -> tuple[Tracer, Tracer, Tracer]:
    """(s descending, U [B, m, n], V [B, n, n]) of a stack [B, m, n] with m >= n (routines.py's gesvdj)."""
    batch, m, n = a.shape
    if is_empty(a):
        return cr.zeros((batch, n), a.type.dtype), a, identity_stack(batch, n, a.type.dtype)
    s, u, v = solver_call("gesvdj", [a])
    return s, u, v
