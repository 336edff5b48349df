"""cdnajit.scipy.linalg: jax.scipy.linalg's LU, QR, Cholesky, eigh, triangular functions and expm on stacks of
matrices, and scipy's eig and eigvals (which jax.scipy.linalg lacks), over the solver library (frontend/cnp/linalg_solver.py), with scipy's conventions:
a right-hand side b is one vector per matrix when b.ndim == a.ndim - 1, else matrices (..., n, k).
"""
from __future__ import annotations

import math

from ..errors import TracingValueError
from .cnp import creation as cr
from .cnp import elementwise as el
from .cnp import reductions as red
from .cnp import contractions as con
from .cnp import shaping as sh
from .cnp.base import result_type
from .cnp.indexing_funcs import take
from .cnp.linalg import (as_stack, broadcast_batches, check_matrices, cholesky as numpy_cholesky, det, from_stack,
                         inv, matrices, promoted)
from .cnp.linalg import eig as numpy_eig
from .cnp.linalg import eigh as numpy_eigh
from .cnp.linalg import eigvals as numpy_eigvals
from .cnp.linalg import qr as numpy_qr
from .cnp.linalg import solve as numpy_solve
from .cnp.linalg import svd as numpy_svd
from .cnp.linalg_solver import getrf, identity_stack, laswp, potrs, rows_of, trsm
from .dtypes import is_complex
from .lax_control import fori_loop
from .tracing import located

__all__ = ["lu", "lu_factor", "lu_solve", "cho_factor", "cho_solve", "solve_triangular", "cholesky", "solve", "inv",
           "det", "qr", "eigh", "eig", "eigvals", "svd", "expm", "block_diag", "toeplitz"]

TRANS = {0: "N", "N": "N", 1: "T", "T": "T", 2: "C", "C": "C"}   # op(a): a, a^T, a^H (LAPACK's trans)


def right_hand_side(name: str, a, b) -> tuple:
    """(a, b as matrices [..., n, k] with a's batch, whether b was vectors, the batch shape)."""
    a, b = promoted(a, b)
    check_matrices(name, a)
    vector = b.ndim == a.ndim - 1
    if b.ndim < 1 or b.shape[-1 if vector else -2] != a.shape[-1]:
        raise TracingValueError(located(f"{name}: b must be (..., {a.shape[-1]}) or (..., {a.shape[-1]}, k) for a "
                                        f"of shape {a.shape}, got shape {b.shape}"))
    if vector:
        b = b[..., None]
    a, b, batch = broadcast_batches(name, a, b, 2)
    return as_stack(a), as_stack(b), vector, batch


def as_given(x, vector: bool, batch: tuple):
    x = from_stack(x, batch)
    return x[..., 0] if vector else x


def trans_flag(name: str, trans) -> str:
    if trans not in TRANS:
        raise TracingValueError(located(f"{name}: trans must be 0, 1, 2 or 'N', 'T', 'C', got {trans!r}"))
    return TRANS[trans]


def for_trans(a, trans: str):
    """(the matrix and trsm's trans flag) for op(a) = a, a^T or a^H: trsm's trans is the conjugate
    transpose, so a^T of a complex a is conj(a)^H."""
    if trans == "T" and is_complex(a.type.dtype):
        return el.conj(a), True
    return a, trans != "N"


def lu_factor(a, overwrite_a=False, check_finite=True):
    """(lu, piv): L and U in one matrix (P A = L U), piv LAPACK's row swaps from 0 (int32)."""
    a = matrices("lu_factor", a, square=False)
    lu, pivots, _ = getrf(as_stack(a))
    return from_stack(lu, a.shape[:-2]), sh.reshape(pivots, (*a.shape[:-2], pivots.shape[1]))


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """x with a x = b (trans 0), a^T x = b (trans 1) or a^H x = b (trans 2) from lu_factor's (lu, piv)."""
    lu, piv = lu_and_piv
    lu, b, vector, batch = right_hand_side("lu_solve", lu, b)
    lu, transposed = for_trans(lu, trans_flag("lu_solve", trans))
    pivots = sh.reshape(sh.broadcast_to(cr.asarray(piv), batch + cr.asarray(piv).shape[-1:]),
                        (lu.shape[0], -1))
    permutation, inverse = laswp(pivots, lu.shape[1])
    if transposed:   # a^H = U^H L^H P: x = P^T L^-H U^-H b (lu conjugated for a complex a^T)
        y = trsm(lu, b, lower=False, trans=True, unit_diagonal=False)
        x = rows_of(trsm(lu, y, lower=True, trans=True, unit_diagonal=True), inverse)
    else:
        y = trsm(lu, rows_of(b, permutation), lower=True, trans=False, unit_diagonal=True)
        x = trsm(lu, y, lower=False, trans=False, unit_diagonal=False)
    return as_given(x, vector, batch)


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """(p, l, u) with a = p l u ((p l, u) with permute_l); l is m x k and u k x n, k = min(m, n)."""
    a = matrices("lu", a, square=False)
    *batch, m, n = a.shape
    k = min(m, n)
    packed, _, permutation = getrf(as_stack(a))
    l = el.add(sh.tril(packed[:, :, :k], -1), cr.eye(m, k, dtype=a.type.dtype))
    u = sh.triu(packed[:, :k, :])
    # p[permutation[i], i] = 1: a = P^T L U
    p = el.equal(permutation[:, None, :], cr.arange(m, dtype="int32")[None, :, None]).astype(a.type.dtype)
    if permute_l:
        return from_stack(con.matmul(p, l), tuple(batch)), from_stack(u, tuple(batch))
    return from_stack(p, tuple(batch)), from_stack(l, tuple(batch)), from_stack(u, tuple(batch))


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor: L (lower) or U = L^H, NaNs where a is not positive definite."""
    return numpy_cholesky(a, upper=not lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """(c, lower): the factor in c's `lower` triangle (the other triangle zero, as JAX gives)."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """x with a x = b from cho_factor's (c, lower)."""
    c, lower = c_and_lower
    lower = bool(lower)   # a Python bool, or the 0-d array an eager cho_factor returns
    c, b, vector, batch = right_hand_side("cho_solve", c, b)
    # a = L L^H: L y = b, L^H x = y (L = c, or c^H when c holds U).
    return as_given(potrs(c, b, lower=lower), vector, batch)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True):
    """x with op(a) x = b for a triangular a (only its `lower` or upper triangle is read)."""
    a, b, vector, batch = right_hand_side("solve_triangular", a, b)
    a, transposed = for_trans(a, trans_flag("solve_triangular", trans))
    return as_given(trsm(a, b, lower=lower, trans=transposed, unit_diagonal=unit_diagonal), vector, batch)


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a="gen"):
    """scipy's solve: by LU ('gen'), Cholesky ('pos'), or a triangle ('lower triangular' and 'upper ...')."""
    if assume_a in ("gen", "general", "sym", "symmetric", "her", "hermitian"):
        a, b, vector, batch = right_hand_side("solve", a, b)
        return as_given(numpy_solve(a, b), vector, batch)
    if assume_a in ("pos", "positive definite"):
        return cho_solve(cho_factor(a, lower=lower), b)
    if assume_a in ("lower triangular", "upper triangular"):
        return solve_triangular(a, b, lower=assume_a.startswith("lower"))
    raise NotImplementedError(located(f"solve: assume_a={assume_a!r} is not implemented"))


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """scipy's qr: (Q, R) for mode "full" (Q m x m) or "economic" (Q m x k), (R,) for mode "r"."""
    if pivoting:
        raise NotImplementedError(located("qr: pivoting=True (geqp3) is not implemented"))
    modes = {"full": "complete", "economic": "reduced", "r": "r"}
    if mode not in modes:
        raise TracingValueError(located(f"qr: mode must be 'full', 'economic' or 'r', got {mode!r}"))
    if mode == "r":
        return (numpy_qr(a, "complete")[1],)
    return numpy_qr(a, modes[mode])


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False, turbo=True, eigvals=None,
         type=1, check_finite=True):
    """scipy's eigh of one symmetric matrix's `lower` (or upper) triangle; w, or (w, v)."""
    if b is not None or eigvals is not None:
        raise NotImplementedError(located("eigh: the generalized problem (b) and eigvals subsets are not implemented"))
    w, v = numpy_eigh(a, UPLO="L" if lower else "U", symmetrize_input=False)
    return w if eigvals_only else (w, v)


def eig(a, b=None, left=False, right=True, overwrite_a=False, overwrite_b=False, check_finite=True,
        homogeneous_eigvals=False):
    """scipy's eig of general matrices (stacks too): w, or (w, vr) with right=True, as
    cdnajit.numpy.linalg.eig computes them. vr is complex always (scipy's is real where every eigenvalue
    is: a dtype that depends on the values cannot be traced); homogeneous_eigvals gives w as [w; 1]
    (2 x n, scipy's (alpha, beta))."""
    if b is not None or left:
        raise NotImplementedError(located("eig: the generalized problem (b) and left eigenvectors (left=True) are "
                                          "not implemented"))
    w, vr = numpy_eig(a)
    if homogeneous_eigvals:
        w = sh.stack([w, cr.ones_like(w)], axis=-2)
    return (w, vr) if right else w


def eigvals(a, b=None, overwrite_a=False, check_finite=True, homogeneous_eigvals=False):
    """scipy's eigvals of general matrices (stacks too), as cdnajit.numpy.linalg.eigvals computes them."""
    if b is not None:
        raise NotImplementedError(located("eigvals: the generalized problem (b) is not implemented"))
    w = numpy_eigvals(a)
    return sh.stack([w, cr.ones_like(w)], axis=-2) if homogeneous_eigvals else w


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True, lapack_driver="gesdd"):
    """scipy's svd: (U, s, Vh), or s (one-sided Jacobi; lapack_driver names LAPACK's and is ignored)."""
    return numpy_svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


# The [13/13] Pade approximant of exp (Higham, "The scaling and squaring method for the matrix exponential
# revisited", SIAM J. Matrix Anal. Appl. 26(4), 2005, table 2.3's b_0..b_13), and theta_13, the 1-norm up to
# which it is exp to double precision's unit roundoff (table 2.3).
PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
          10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
THETA13 = 5.371920351148152


def expm(a, *, upper_triangular=False, max_squarings=16):
    """The matrix exponential of each matrix of a stack, by scaling and squaring with the [13/13] Pade
    approximant (Higham 2005, as scipy and JAX): A / 2^s with s = max(0, ceil(log2(||A||_1 / theta_13))),
    r13 = (V - U)^-1 (V + U) by one LU solve, then s squarings (a loop of max(s) steps over the stack).
    Degree 13 at every norm (scipy picks 3..9 below theta_9 to save products; 13 is as accurate).
    NaNs where s exceeds max_squarings, as JAX."""
    a = matrices("expm", a)
    stack = as_stack(a)
    batch, n, _ = stack.shape
    if stack.size == 0:
        return a
    dtype = a.type.dtype
    norm = red.max(red.sum(el.abs(stack), axis=1), axis=1)
    needed = el.where(el.greater(norm, THETA13), el.ceil(el.log2(norm / THETA13)), 0.0)
    needed = el.where(el.isfinite(needed), needed, max_squarings + 1)
    squarings = el.minimum(needed, max_squarings + 1).astype("int32")
    x = stack * el.exp2(-squarings.astype(dtype))[:, None, None]
    b = PADE13
    identity = identity_stack(batch, n, dtype)
    x2 = con.matmul(x, x)
    x4 = con.matmul(x2, x2)
    x6 = con.matmul(x4, x2)
    u = con.matmul(x, con.matmul(x6, b[13] * x6 + b[11] * x4 + b[9] * x2)
                   + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * identity)
    v = con.matmul(x6, b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * identity
    r = numpy_solve(v - u, v + u)

    def square(i, r):
        return el.where((i < squarings)[:, None, None], con.matmul(r, r), r)

    r = fori_loop(0, red.max(el.minimum(squarings, max_squarings)), square, r)
    r = el.where(el.greater(squarings, max_squarings)[:, None, None], math.nan, r)
    return from_stack(r, a.shape[:-2])


def block_diag(*arrays):
    """The matrices (scalars and vectors as 1 x n) along a block diagonal, zeros elsewhere."""
    blocks = [sh.atleast_2d(cr.asarray(x)) for x in arrays]
    if not blocks:
        return cr.zeros((1, 0))
    dtype, _ = result_type(*blocks)
    columns = sum(x.shape[1] for x in blocks)
    rows, start = [], 0
    for x in blocks:
        x = x.astype(dtype)
        width = x.shape[1]
        rows.append(sh.concatenate([cr.zeros((x.shape[0], start), dtype), x,
                                    cr.zeros((x.shape[0], columns - start - width), dtype)], axis=1))
        start += width
    return sh.concatenate(rows, axis=0)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column c and first row r (r = conj(c) if omitted; r[0] ignored)."""
    c = sh.ravel(cr.asarray(c))
    r = el.conj(c) if r is None else sh.ravel(cr.asarray(r))
    values = sh.concatenate([c[::-1], r[1:]])    # element (i, j) is values[len(c) - 1 - i + j]
    i = cr.arange(c.shape[0])[:, None]
    j = cr.arange(r.shape[0])[None, :]
    return take(values, c.shape[0] - 1 - i + j)
