"""cdnajit.numpy.linalg: jax.numpy.linalg's functions on stacks of matrices (leading batch dimensions).

Factorizations and solves go to the solver library through linalg_solver.py (getrf, potrf, trsm,
geqrf, orgqr, syev, gesvdj, gebal, geev, trevc);
the products and reductions around them are ordinary graph ops. As in JAX, integer inputs are
promoted to floats, a singular matrix gives infs and NaNs (never an exception inside jit), and a
matrix that is not positive definite gives a Cholesky factor of NaNs. Every function takes f32, f64,
c64 and c128 matrices (the solver's kernels are written once for real and complex entries).
eig's eigenvectors are those of geev's Schur form (trevc) mapped back.
solve, inv, det, slogdet, cholesky, eigh, qr, svd and pinv are differentiable and vmappable: each is
one call op with rules of its own (linalg_rules.py's with_rules; JAX's rules, beside each function
below); lstsq differentiates through svd's.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import TracingValueError
from ..dtypes import is_complex
from ..lax_elementwise import static_int
from ..tracing import Tracer, located
from . import contractions as con
from . import creation as cr
from . import elementwise as el
from . import reductions as red
from . import shaping as sh
from .array_funcs import matrix_transpose, vecdot
from .base import broadcast_shapes, convert, result_type
from ..dtypes import to_inexact
from .numerical import cross as numpy_cross, frexp, times_power_of_two
from .linalg_rules import complex_transposed, transposed, with_rules
from .indexing_funcs import take_along_axis
from .linalg_solver import adjoint, direct_solve, geev, geev_vectors, geqrf, gesvd, gesvdj, getrf, getri, getrs, orgqr, \
    is_empty, lu_diagonal, potrf_and_diagonal, rows_of, symmetric_eigenproblem, symmetric_eigenvalues, takes_gesvd, \
    trsm

__all__ = ["solve", "inv", "det", "slogdet", "cholesky", "matmul", "outer", "trace", "diagonal",
           "matrix_transpose", "vecdot", "cross", "tensordot", "multi_dot", "matrix_power", "norm", "vector_norm",
           "matrix_norm", "cond", "tensorsolve", "tensorinv", "qr", "eigh", "eigvalsh", "svd", "svdvals", "eig",
           "eigvals", "lstsq", "pinv", "matrix_rank"]


# ---- stacks of matrices ---------------------------------------------------------------------------

def promoted(*xs) -> list[Tracer]:
    """The operands as tracers of the one float dtype jnp computes them in (integers promoted)."""
    dtype, _ = result_type(*xs)
    dtype = to_inexact(dtype)
    return [convert(cr.asarray(x), dtype) for x in xs]


def check_matrices(name: str, x: Tracer, square: bool = True, what: str = "a"):
    if x.ndim < 2:
        raise TracingValueError(located(f"{name}: {what} must be an array of matrices (at least 2 dimensions), "
                                        f"got shape {x.shape}"))
    if square and x.shape[-1] != x.shape[-2]:
        raise TracingValueError(located(f"{name}: {what} must be square matrices (..., n, n), got shape {x.shape}"))


def matrices(name: str, a, square: bool = True) -> Tracer:
    (x,) = promoted(a)
    check_matrices(name, x, square)
    return x


def as_stack(x: Tracer) -> Tracer:
    """[..., m, n] -> [B, m, n]."""
    return sh.reshape(x, (math.prod(x.shape[:-2]), *x.shape[-2:]))


def from_stack(x: Tracer, batch: tuple) -> Tracer:
    return sh.reshape(x, (*batch, *x.shape[1:]))


def lu_solve_stack(lu: Tracer, permutation: Tracer, b: Tracer) -> Tracer:
    """A^-1 B from P A = L U, every operand a stack (B [S, n, k])."""
    if direct_solve(lu, b):
        return getrs(lu, permutation, b)
    y = trsm(lu, rows_of(b, permutation), lower=True, trans=False, unit_diagonal=True)
    return trsm(lu, y, lower=False, trans=False, unit_diagonal=False)


def broadcast_batches(name: str, a: Tracer, b: Tracer, b_core: int) -> tuple[Tracer, Tracer, tuple]:
    """a [..., n, n] and b [..., <b_core dims>] with their batch dimensions broadcast together."""
    batch = broadcast_shapes(a.shape[:-2], b.shape[:b.ndim - b_core], what=f"{name}: the batch dimensions of "
                                                                           f"a {a.shape} and b {b.shape}")
    return (sh.broadcast_to(a, batch + a.shape[-2:]), sh.broadcast_to(b, batch + b.shape[b.ndim - b_core:]),
            batch)


# ---- solves -----------------------------------------------------------------------------------------

def in_safe_range(a: Tracer) -> tuple[Tracer, Tracer]:
    """(a 2^-e, e [B, 1, 1]) for a stack [B, m, n]: e is the exponent of a matrix's largest entry where that lies
    outside [sqrt(safmin) / eps, eps / sqrt(safmin)], else 0 (also for zero and non-finite matrices). Inside the
    range the factorizations' sums of squares can neither overflow nor lose everything to underflow, as
    LAPACK's drivers (gesdd, syevd, geev) ensure by scaling A first (dlascl). A power of 2 scales exactly: only
    the magnitudes of singular values, eigenvalues and R change, by 2^e."""
    info = np.finfo(np.dtype(el.real(a).type.numpy_dtype if is_complex(a.type.dtype) else a.type.numpy_dtype))
    small = math.sqrt(float(info.tiny)) / float(info.eps)
    if is_empty(a):
        return a, cr.zeros((a.shape[0], 1, 1), "int32")
    magnitude = el.maximum(el.abs(el.real(a)), el.abs(el.imag(a))) if is_complex(a.type.dtype) else el.abs(a)
    largest = red.max(magnitude, axis=(1, 2), keepdims=True)
    outside = el.logical_and(el.logical_or(el.less(largest, small), el.greater(largest, 1 / small)),
                             el.logical_and(el.greater(largest, 0), el.isfinite(largest)))
    exponent = el.where(outside, frexp(el.where(outside, largest, 1))[1], 0)
    return el.where(outside, times_power_of_two(a, -exponent), a), exponent


def solve(a, b):
    """jnp.linalg.solve: x with a @ x = b. b is one vector per matrix (..., n) when 1-d, else matrices
    (..., n, k); batch dimensions broadcast."""
    a, b = promoted(a, b)
    check_matrices("solve", a)
    vector = b.ndim == 1
    if b.ndim < 1 or b.shape[-2 if not vector else -1] != a.shape[-1]:
        raise TracingValueError(located(f"solve: b must be (..., {a.shape[-1]}) or (..., {a.shape[-1]}, k) for a of "
                                        f"shape {a.shape}, got shape {b.shape}"))
    if vector:
        b = b[:, None]
    a, b, batch = broadcast_batches("solve", a, b, 2)
    x = from_stack(solve_stack(as_stack(a), as_stack(b)), batch)
    return x[..., 0] if vector else x


def solve_stack(a: Tracer, b: Tracer) -> Tracer:
    """x = A^-1 B of stacks, differentiable: dx = A^-1 (dB - dA x); ct_B = A^-T ct_x, ct_A = -ct_B x^T."""
    def lu_solve(a, b):
        lu, _, permutation = getrf(a)
        return lu_solve_stack(lu, permutation, b)

    def vjp(primals, x, ct):
        ct_b = solve_stack(matrix_transpose(primals[0]), ct)
        return -(ct_b @ matrix_transpose(x)), ct_b
    return with_rules("linalg.solve", lu_solve, lambda p, t, x: solve_stack(p[0], t[1] - t[0] @ x), vjp, a, b)


def inv(a):
    """jnp.linalg.inv: A^-1 from the LU factors (getri), differentiable: d(A^-1) = -A^-1 dA A^-1,
    ct_A = -A^-T ct A^-T."""
    a = matrices("inv", a)

    def lu_inverse(a):
        lu, pivots, permutation = getrf(a)
        return getri(lu, pivots, permutation)

    def vjp(primals, x, ct):
        return (-(matrix_transpose(x) @ ct @ matrix_transpose(x)),)
    inverse = with_rules("linalg.inv", lu_inverse, lambda p, t, x: -(x @ t[0] @ x), vjp, as_stack(a))
    return from_stack(inverse, a.shape[:-2])


def lu_diagonal_and_parity(name: str, a) -> tuple[Tracer, Tracer]:
    """(the diagonal of U, the sign of P) of P A = L U, stacked as a's batch dimensions."""
    a = matrices(name, a)
    diagonal, pivots = lu_diagonal(as_stack(a))
    swaps = red.sum(el.not_equal(pivots, cr.arange(pivots.shape[1], dtype="int32")), axis=1)
    parity = el.where(el.equal(swaps % 2, 0), 1, -1).astype(a.type.dtype)
    return sh.reshape(diagonal, (*a.shape[:-2], a.shape[-1])), sh.reshape(parity, a.shape[:-2])


def det(a):
    """jnp.linalg.det: the product of U's diagonal, signed by the permutation (0 for a singular matrix);
    d det = det tr(A^-1 dA), ct_A = ct det A^-T."""
    def lu_det(a):
        diagonal, parity = lu_diagonal_and_parity("det", a)
        return parity * red.prod(diagonal, axis=-1)
    a = matrices("det", a)
    stack = as_stack(a)
    d = with_rules("linalg.det", lu_det, lambda p, t, d: d * trace_of_solve(p[0], t[0]),
                   lambda p, d, ct: ((ct * d)[:, None, None] * matrix_transpose(inv(p[0])),), stack)
    return sh.reshape(d, a.shape[:-2])


def trace_of_solve(a: Tracer, da: Tracer) -> Tracer:
    """tr(A^-1 dA) of each matrix of the stacks."""
    return red.sum(sh.diagonal(solve_stack(a, da), axis1=1, axis2=2), axis=-1)


def slogdet(a, *, method=None):
    """jnp.linalg.slogdet: (sign, log|det|), (0, -inf) for a singular matrix."""
    if method not in (None, "lu"):
        raise NotImplementedError(located(f"slogdet: method {method!r} is not implemented (only 'lu')"))
    a = matrices("slogdet", a)
    stack = as_stack(a)

    def lu_sign(a):
        diagonal, parity = lu_diagonal_and_parity("slogdet", a)
        return parity * red.prod(el.sign(diagonal), axis=-1)

    def lu_logabsdet(a):
        return red.sum(el.log(el.abs(lu_diagonal_and_parity("slogdet", a)[0])), axis=-1)
    # JAX's rule: with g = tr(A^-1 dA), d log|det| = re g and d sign = i im(g) sign (zero for a real
    # matrix); for real matrices ct_A = ct A^-T.
    def sign_jvp(p, t, s):
        if not is_complex(s.type.dtype):
            return cr.zeros_like(s)
        g = trace_of_solve(p[0], t[0])
        return (g - el.real(g).astype(g.dtype)) * s

    def logabsdet_jvp(p, t, l):
        return el.real(trace_of_solve(p[0], t[0]))

    def logabsdet_vjp(p, l, ct):
        return (ct[:, None, None] * matrix_transpose(inv(p[0])),)

    def sign_vjp(p, s, ct):
        return (cr.zeros_like(p[0]),)
    sign = with_rules("linalg.slogdet", lu_sign, sign_jvp, complex_transposed(sign_jvp, sign_vjp), stack)
    logabsdet = with_rules("linalg.slogdet", lu_logabsdet, logabsdet_jvp,
                           complex_transposed(logabsdet_jvp, logabsdet_vjp), stack)
    return sh.reshape(sign, a.shape[:-2]), sh.reshape(logabsdet, a.shape[:-2])


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """jnp.linalg.cholesky: L with a = L L^H of (a + a^H) / 2 (U = L^H when upper; ^H is ^T for real
    matrices); NaNs where a is not positive definite."""
    a = matrices("cholesky", a)
    if symmetrize_input:
        a = (a + adjoint(a)) / 2
    l = from_stack(cholesky_stack(as_stack(a)), a.shape[:-2])
    return adjoint(l) if upper else l


def cholesky_stack(a: Tracer) -> Tracer:
    """The Cholesky factors of a stack, differentiable (a symmetric, or Hermitian, dA, as JAX's rule):
    dL = L phi(L^-1 dA L^-H), phi the lower triangle with its diagonal halved (self-adjoint), so
    ct_A = L^-T phi(L^T ct_L) L^-1 for real matrices (complex ones: the JVP transposed)."""
    def factor(a):
        l, diagonal = potrf_and_diagonal(a)
        failed = red.any(el.logical_not(el.greater(el.real(diagonal), 0)), axis=1)
        return el.where(failed[:, None, None], math.nan, l)

    def phi(x):
        return sh.tril(x) - sh.diagonal(x, axis1=1, axis2=2)[..., None] * cr.eye(x.shape[-1], dtype=x.dtype) / 2

    def jvp(primals, tangents, l):
        return l @ phi(adjoint(solve_stack(l, adjoint(solve_stack(l, tangents[0])))))

    def vjp(primals, l, ct):
        l_inv = inv(l)
        return (matrix_transpose(l_inv) @ phi(matrix_transpose(l) @ ct) @ l_inv,)
    return with_rules("linalg.cholesky", factor, jvp, complex_transposed(jvp, vjp), a)


def qr(a, mode: str = "reduced"):
    """jnp.linalg.qr: (Q, R) with a = Q R, Q orthonormal (unitary) columns; mode "reduced" (Q m x k, R k x n,
    k = min(m, n)), "complete" (Q m x m, R m x n), "r" (R only, k x n) or "raw" (LAPACK's
    Householder vectors transposed, and tau). Differentiable in every mode but raw, as JAX's:
    qr_stack's rules."""
    if mode not in ("reduced", "complete", "r", "raw"):
        raise TracingValueError(located(f"qr: mode must be 'reduced', 'complete', 'r' or 'raw', got {mode!r}"))
    a = matrices("qr", a, square=False)
    *batch, m, n = a.shape
    if mode == "raw":
        scaled, exponent = in_safe_range(as_stack(a))
        packed, tau = geqrf(scaled)
        packed = sh.triu(times_power_of_two(packed, exponent)) + sh.tril(packed, -1)
        return from_stack(sh.swapaxes(packed, 1, 2), tuple(batch)), sh.reshape(tau, (*batch, tau.shape[1]))
    q, r = qr_stack(as_stack(a), m if mode == "complete" else min(m, n))
    r = from_stack(r, tuple(batch))
    return r if mode == "r" else (from_stack(q, tuple(batch)), r)


def right_solve(x: Tracer, r: Tracer, transposed: bool) -> Tracer:
    """x R^-1 (x R^-T when transposed) for stacks: (R^-T x^T)^T."""
    return matrix_transpose(solve_stack(r if transposed else matrix_transpose(r), matrix_transpose(x)))


def qr_stack(a: Tracer, rows: int) -> tuple[Tracer, Tracer]:
    """(Q [B, m, rows], R [B, rows, n]) of a stack, differentiable with reduced factors (JAX's rule).
    For m >= n: with X = dA R^-1, C = Q^H X and W = tril(C, -1) - tril(C, -1)^H (plus i im(diag C)
    for complex matrices), dQ = Q (W - C) + X and dR = (C - W) R; its transpose for real matrices:
    with D = Q^T ct_Q - ct_R R^T, ct_A = (ct_Q + Q (tril(D - D^T, -1) - D)) R^-T. For m < n, A =
    [A1 A2] with A1 square: dQ and dR1 as above for A1 = Q R1, dR2 = dQ^H A2 + Q^H dA2. The complete
    Q of a tall matrix, [Q1 Q2] with Q1 = Q[:, :n]: Q2 is the Householder reflectors' (orgqr's), whose
    derivative Roberts and Roberts give (arXiv 2409.13374, eqs. 32-33; JAX's rule): with Z = Q1[n:]
    (Q1[:n] - I)^-1, dQ2 = dQ1 Z^H - (Q1 + Q2 Z) (dQ1[n:] - Z dQ1[:n])^H, and R's last m - n rows stay
    zero. Reverse mode of wide, complete or complex matrices: the JVP transposed."""
    m, n = a.shape[1:]
    complete_tall = rows > n

    def factor(a):
        scaled, exponent = in_safe_range(a)
        packed, tau = geqrf(scaled)
        return orgqr(packed, tau, rows), times_power_of_two(sh.triu(packed[:, :rows, :]), exponent)

    def thin(q, r, da):
        x = right_solve(da, r, transposed=False)
        c = adjoint(q) @ x
        w = sh.tril(c, -1) - adjoint(sh.tril(c, -1))
        if is_complex(c.type.dtype):
            w = w + cr.eye(c.shape[-1], dtype=c.dtype) * (c - el.real(c).astype(c.dtype))
        return q @ (w - c) + x, (c - w) @ r

    def complete(q, r, da):
        q1 = q[:, :, :n]
        dq1, dr = thin(q1, r[:, :n, :], da)
        z_h = solve_stack(adjoint(q1[:, :n, :] - cr.eye(n, dtype=q.dtype)), adjoint(q1[:, n:, :]))
        dq2 = dq1 @ z_h - (q1 + q[:, :, n:] @ adjoint(z_h)) @ adjoint(dq1[:, n:, :] - adjoint(z_h) @ dq1[:, :n, :])
        return (sh.concatenate([dq1, dq2], axis=2),
                sh.concatenate([dr, cr.zeros((dr.shape[0], m - n, n), dtype=dr.dtype)], axis=1))

    def jvp(primals, tangents, outs):
        (q, r), da = outs, tangents[0]
        if complete_tall:
            return complete(q, r, da)
        if m >= n:
            return thin(q, r, da)
        dq, dr1 = thin(q, r[:, :, :m], da[:, :, :m])
        return dq, sh.concatenate([dr1, adjoint(dq) @ primals[0][:, :, m:] + adjoint(q) @ da[:, :, m:]], axis=2)

    def vjp(primals, outs, cts):
        (q, r), (ct_q, ct_r) = outs, cts
        d = matrix_transpose(q) @ ct_q - ct_r @ matrix_transpose(r)
        return (right_solve(ct_q + q @ (sh.tril(d - matrix_transpose(d), -1) - d), r, transposed=True),)
    thin_tall = m >= n and not complete_tall
    return with_rules("linalg.qr", factor, jvp, complex_transposed(jvp, vjp) if thin_tall else transposed(jvp), a)


def symmetric(name: str, a, UPLO: str, symmetrize_input: bool) -> Tracer:
    """(a + a^H) / 2 when symmetrize_input, else the UPLO triangle mirrored (conjugated), the diagonal's
    imaginary part dropped (LAPACK's heevd does not read it)."""
    if UPLO not in ("L", "U"):
        raise TracingValueError(located(f"{name}: UPLO must be 'L' or 'U', got {UPLO!r}"))
    a = matrices(name, a)
    if symmetrize_input:
        return (a + adjoint(a)) / 2
    strict = sh.tril(a, -1) if UPLO == "L" else sh.triu(a, 1)
    diagonal = el.real(sh.diagonal(a, axis1=-2, axis2=-1))[..., None] * cr.eye(a.shape[-1], dtype=a.type.dtype)
    return strict + adjoint(strict) + diagonal


def eigh(a, UPLO: str = "L", symmetrize_input: bool = True):
    """jnp.linalg.eigh: (eigenvalues ascending, eigenvectors as columns) of symmetric (Hermitian)
    matrices (syev: tridiagonal reduction and implicit QR, one work-item per matrix); the eigenvalues
    are real."""
    a = symmetric("eigh", a, UPLO, symmetrize_input)
    w, v = eigh_stack(as_stack(a))
    return sh.reshape(w, a.shape[:-1]), from_stack(v, a.shape[:-2])


def eigh_stack(a: Tracer) -> tuple[Tracer, Tracer]:
    """(w, V) of a stack of symmetric (Hermitian) matrices, differentiable (a symmetric, or Hermitian,
    dA, as JAX's rule): with M = V^H dA V and F_ij = 1 / (w_j - w_i) off the diagonal (0 on it),
    dw = re diag(M), dV = V (F o M); ct_A = V (diag(ct_w) + F o (V^T ct_V)) V^T for real matrices
    (complex ones: the JVP transposed)."""
    def inverse_gaps(w):
        gaps = w[:, None, :] - w[:, :, None]
        eye = cr.eye(w.shape[-1], dtype=w.dtype)
        return (1 - eye) / (gaps + eye)

    def jvp(primals, tangents, outs):
        w, v = outs
        m = adjoint(v) @ tangents[0] @ v
        return el.real(sh.diagonal(m, axis1=1, axis2=2)), v @ (inverse_gaps(w) * m)

    def vjp(primals, outs, cts):
        (w, v), (ct_w, ct_v) = outs, cts
        inner = inverse_gaps(w) * (matrix_transpose(v) @ ct_v) + ct_w[..., None] * cr.eye(w.shape[-1], dtype=w.dtype)
        return (v @ inner @ matrix_transpose(v),)
    def factor(a):
        scaled, exponent = in_safe_range(a)
        w, v = symmetric_eigenproblem(scaled)
        return times_power_of_two(w, exponent[:, 0]), v
    return with_rules("linalg.eigh", factor, jvp, complex_transposed(jvp, vjp), a)


def eigvals(a):
    """jnp.linalg.eigvals: the complex eigenvalues of general matrices (f32 -> c64, f64 -> c128; complex
    matrices keep their dtype), as LAPACK's geev: balancing (gebal), then Hessenberg reduction and QR
    steps (geev without vectors: Francis double shifts for real matrices, single shifts for complex
    ones; one work-item per matrix), in LAPACK's order (where each deflated), not sorted."""
    a = matrices("eigvals", a)
    scaled, exponent = in_safe_range(as_stack(a))
    return sh.reshape(times_power_of_two(geev(scaled), exponent[:, 0]), a.shape[:-1])


def eig(a):
    """jnp.linalg.eig: (eigenvalues as eigvals gives them, right eigenvectors as columns) of general
    matrices: the balanced matrix's Schur form's eigenvectors (gebal, geev with vectors, then trevc's
    back substitution) mapped back by the Schur vectors and the balancing, each normalized as LAPACK's
    geev: unit 2-norm and its largest component real, for a complex matrix and for a real matrix's
    complex eigenvalue (a real matrix's real eigenvalue has a real vector, its sign as computed)."""
    a = matrices("eig", a)
    if a.size == 0:
        values = geev(as_stack(a))
        return sh.reshape(values, a.shape[:-1]), cr.zeros(a.shape, values.type.dtype)
    scaled, exponent = in_safe_range(as_stack(a))
    w, v = geev_vectors(scaled)
    w = times_power_of_two(w, exponent[:, 0])
    v = v / el.sqrt(red.sum(el.real(v * el.conj(v)), axis=1, keepdims=True))
    largest = red.argmax(el.real(v * el.conj(v)), axis=1, keepdims=True)
    component = take_along_axis(v, largest, axis=1)
    rotated = cr.full_like(el.real(w), True, dtype="bool") if is_complex(a.type.dtype) else el.not_equal(el.imag(w), 0)
    v = v * el.where(rotated[:, None, :], el.conj(component) / el.abs(component), 1)
    # The largest component's imaginary part is rounding left by the product: zero, as LAPACK sets it.
    at_largest = el.logical_and(rotated[:, None, :], el.equal(cr.arange(v.shape[1])[None, :, None], largest))
    v = el.where(at_largest, el.real(v).astype(v.type.dtype), v)
    return sh.reshape(w, a.shape[:-1]), from_stack(v, a.shape[:-2])


def eigvalsh(a, UPLO: str = "L", *, symmetrize_input: bool = True):
    """jnp.linalg.eigvalsh: eigh's eigenvalues, without its vectors where they cost extra
    (linalg_solver.symmetric_eigenvalues); differentiated as eigh's w: dw = re diag(V^H dA V)."""
    a = symmetric("eigvalsh", a, UPLO, symmetrize_input)
    return sh.reshape(eigvalsh_stack(as_stack(a)), a.shape[:-1])


def eigvalsh_stack(a: Tracer) -> Tracer:
    """w of a stack of symmetric (Hermitian) matrices, its rules from eigh's vectors (computed only when
    differentiated): dw = re diag(V^H dA V), ct_A = V diag(ct_w) V^T for real matrices."""
    def jvp(primals, tangents, w):
        _, v = symmetric_eigenproblem(primals[0])
        return el.real(sh.diagonal(adjoint(v) @ tangents[0] @ v, axis1=1, axis2=2))

    def vjp(primals, w, ct_w):
        _, v = symmetric_eigenproblem(primals[0])
        return ((v * ct_w[:, None, :]) @ matrix_transpose(v),)
    def factor(a):
        scaled, exponent = in_safe_range(a)
        return times_power_of_two(symmetric_eigenvalues(scaled), exponent[:, 0])
    return with_rules("linalg.eigvalsh", factor, jvp, complex_transposed(jvp, vjp), a)


def svd_stack(a: Tracer, full_matrices: bool, compute_uv: bool):
    """(U, s, V^H) of a stack [B, m, n] from the taller of a and a^H, scaled into in_safe_range's range: gesvd (bidiagonalization and
    implicit QR) where linalg_solver.takes_gesvd, else one-sided Jacobi (gesvdj) with U completed to
    an orthonormal basis (m x m when full_matrices) by a QR of its columns, whose R is diag(+-1)
    where s > 0 (geqrf's beta is real; the zero singular values' columns, sorted last, are zero
    until then)."""
    batch, m, n = a.shape
    if m < n:
        u, s, vt = svd_stack(adjoint(a), full_matrices, compute_uv)
        return (None if vt is None else adjoint(vt)), s, (None if u is None else adjoint(u))
    scaled, exponent = in_safe_range(a)
    u, s, vt = tall_svd(scaled, full_matrices, compute_uv)
    # A matrix with an inf or NaN gives NaNs, as JAX's svd does (gesdd fails on it).
    finite = red.all(el.isfinite(a), axis=(1, 2))
    u, vt = ((None, None) if u is None else (el.where(finite[:, None, None], u, np.nan),
                                              el.where(finite[:, None, None], vt, np.nan)))
    return u, el.where(finite[:, None], times_power_of_two(s, exponent[:, 0]), np.nan), vt


def tall_svd(a: Tracer, full_matrices: bool, compute_uv: bool):
    """svd_stack of a stack with m >= n in in_safe_range's range."""
    batch, m, n = a.shape
    if not is_empty(a) and takes_gesvd(a, compute_uv):
        s, u, vt = gesvd(a, (m if full_matrices else n) if compute_uv else None)
        return u, s, vt
    s, u, v = gesvdj(a)
    if not compute_uv:
        return None, s, None
    packed, tau = geqrf(u)
    q = orgqr(packed, tau, m if full_matrices else n)
    signs = el.where(el.less(el.real(sh.diagonal(packed, axis1=1, axis2=2)), 0), -1.0, 1.0).astype(a.type.dtype)
    signs = sh.concatenate([signs, cr.ones((batch, q.shape[2] - n), a.type.dtype)], axis=1)
    return q * signs[:, None, :], s, adjoint(v)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False, subset_by_index=None):
    """jnp.linalg.svd: (U, s descending, Vh) with a = U diag(s) Vh, or s alone; differentiable as JAX's
    (svd_with_rules)."""
    if subset_by_index is not None:
        raise NotImplementedError(located("svd: subset_by_index is not implemented"))
    a = matrices("svd", a, square=False)
    batch = a.shape[:-2]
    u, s, vt = svd_with_rules(as_stack(a), full_matrices, compute_uv)
    s = sh.reshape(s, (*batch, s.shape[1]))
    return (from_stack(u, batch), s, from_stack(vt, batch)) if compute_uv else s


def svd_with_rules(a: Tracer, full_matrices: bool, compute_uv: bool):
    """svd_stack with JAX's derivative. With dS = U^H dA V (reduced factors), ds = re diag(dS) and
    F_ij = 1 / (s_j^2 - s_i^2) off the diagonal (0 on it): dU = U (F o (dS S + S dS^H)), plus
    (I - U U^H) dA V S^-1 when m > n, plus U (dS - dS^H) S^-1 / 2 on the diagonal for complex
    matrices; dV = V (F o (S dS + dS^H S)), plus (I - V V^H) dA^H U S^-1 when n > m. Full U or V of
    a non-square matrix has no derivative (NotImplementedError, as JAX). The transpose is written for
    real matrices (complex ones: the JVP transposed)."""
    batch, m, n = a.shape

    def reduced(a):
        return svd_stack(a, False, True)

    def gaps(s):
        squares = (s * s)[:, None, :] - (s * s)[:, :, None]
        eye = cr.eye(s.shape[-1], dtype=s.dtype)
        return 1 / (squares + eye) - eye

    def jvp(primals, tangents, outs):
        da = tangents[0]
        if not compute_uv:
            u, s, vt = reduced(primals[0])
            return el.real(sh.diagonal(adjoint(u) @ da @ adjoint(vt), axis1=1, axis2=2))
        if full_matrices and m != n:
            raise NotImplementedError(located(f"svd: the derivative of U and Vh with full_matrices=True is defined "
                                              f"for square matrices only (as JAX's), got shape {(m, n)}"))
        u, s, vt = outs
        v = adjoint(vt)
        ds_matrix = adjoint(u) @ da @ v
        f = gaps(s)
        dss, sds = ds_matrix * s[:, None, :], s[:, :, None] * ds_matrix
        inner = f * (dss + adjoint(dss))
        if is_complex(da.type.dtype):
            zero = el.equal(s, 0).astype(s.dtype)
            inverse = 1 / (s + zero) - zero
            inner = inner + (ds_matrix - adjoint(ds_matrix)) * (inverse[:, :, None] * cr.eye(n if m > n else m, dtype=s.dtype)) / 2
        du = u @ inner
        dv = v @ (f * (sds + adjoint(sds)))
        if m > n:
            dav = da @ v
            du = du + (dav - u @ (adjoint(u) @ dav)) / s[:, None, :]
        if n > m:
            dau = adjoint(da) @ u
            dv = dv + (dau - v @ (adjoint(v) @ dau)) / s[:, None, :]
        return du, el.real(sh.diagonal(ds_matrix, axis1=1, axis2=2)), adjoint(dv)

    def real_vjp(primals, outs, cts):
        if not compute_uv:
            u, s, vt = reduced(primals[0])
            return ((u * cts[:, None, :]) @ vt,)
        if full_matrices and m != n:
            jvp(primals, [None], outs)   # raises
        (u, s, vt), (ct_u, ct_s, ct_vt) = outs, cts
        v, ct_v = matrix_transpose(vt), matrix_transpose(ct_vt)
        f = gaps(s)
        ct_x = f * (matrix_transpose(u) @ ct_u)
        ct_y = f * (matrix_transpose(v) @ ct_v)
        ct_ds = ((ct_x + matrix_transpose(ct_x)) * s[:, None, :] + s[:, :, None] * (ct_y + matrix_transpose(ct_y))
                 + ct_s[:, :, None] * cr.eye(s.shape[-1], dtype=s.dtype))
        ct_a = u @ ct_ds @ vt
        if m > n:
            scaled = ct_u / s[:, None, :]
            ct_a = ct_a + (scaled - u @ (matrix_transpose(u) @ scaled)) @ vt
        if n > m:
            scaled = ct_v / s[:, None, :]
            ct_a = ct_a + u @ matrix_transpose(scaled - v @ (matrix_transpose(v) @ scaled))
        return (ct_a,)
    vjp = complex_transposed(jvp, real_vjp)
    if not compute_uv:
        return None, with_rules("linalg.svdvals", lambda a: svd_stack(a, False, False)[1], jvp, vjp, a), None
    return with_rules("linalg.svd", lambda a: svd_stack(a, full_matrices, True), jvp, vjp, a)


def svdvals(x, /):
    return svd(x, compute_uv=False)


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """jnp.linalg.pinv: V diag(1/s) U^H over the singular values above rtol * s_max (rtol defaults
    to 10 max(m, n) eps, as JAX's). Differentiated as JAX's (not through the SVD): with P = pinv(A),
    dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P, its transpose for real matrices
    ct_A = -P^T ct P^T + (I - A P) ct^T P P^T + P^T P ct^T (I - P A) (complex: the JVP transposed)."""
    a = matrices("pinv", a, square=False)
    rtol = rcond if rcond is not None else rtol
    if rtol is None:
        rtol = 10 * max(a.shape[-2:]) * float(np.finfo(np.dtype(a.type.numpy_dtype)).eps)

    def inverse(a):
        u, s, vt = svd_stack(a, False, True)
        cutoff = rtol * red.max(s, axis=-1, keepdims=True, initial=0.0)
        s_inverse = el.where(el.greater(s, cutoff), 1 / el.where(el.greater(s, cutoff), s, 1), 0)
        return con.matmul(adjoint(vt) * s_inverse[..., None, :], adjoint(u))

    def jvp(primals, tangents, p):
        a, da = primals[0], tangents[0]
        dat, pt = adjoint(da), adjoint(p)
        return -(p @ da @ p) + p @ pt @ dat - p @ pt @ dat @ a @ p + dat @ pt @ p - p @ a @ dat @ pt @ p

    def vjp(primals, p, ct):
        a, ctt, pt = primals[0], matrix_transpose(ct), matrix_transpose(p)
        return (-(pt @ ct @ pt) + ctt @ p @ pt - a @ p @ ctt @ p @ pt + pt @ p @ ctt - pt @ p @ ctt @ p @ a,)
    return from_stack(with_rules("linalg.pinv", inverse, jvp, complex_transposed(jvp, vjp), as_stack(a)), a.shape[:-2])


def matrix_rank(M, rtol=None, *, tol=None):
    """jnp.linalg.matrix_rank: singular values above rtol * s_max (rtol defaults to max(m, n) eps)."""
    m = matrices("matrix_rank", M, square=False)
    s = svdvals(m)
    if tol is None:
        if rtol is None:
            rtol = max(m.shape[-2:]) * float(np.finfo(np.dtype(m.type.numpy_dtype)).eps)
        tol = rtol * red.max(s, axis=-1, keepdims=True, initial=0.0)
    return red.sum(el.greater(s, tol), axis=-1)


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """jnp.linalg.lstsq: (x minimising ||a x - b||, squared residual norms, rank, s), x = pinv(a) b
    over the singular values above rcond * s_max (rcond defaults to max(m, n) eps)."""
    a, b = promoted(a, b)
    if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise TracingValueError(located(f"lstsq: a must be 2-d and b (m,) or (m, k) with m = a's rows, got shapes "
                                        f"{a.shape} and {b.shape}"))
    if rcond is None:
        rcond = max(a.shape) * float(np.finfo(np.dtype(a.type.numpy_dtype)).eps)
    u, s, vt = svd(a, full_matrices=False)
    cutoff = rcond * red.max(s, initial=0.0)
    kept = el.greater(s, cutoff)
    inverse = el.where(kept, 1 / el.where(kept, s, 1), 0)
    x = con.matmul(adjoint(vt) * inverse[None, :], con.matmul(adjoint(u), b))
    resid = red.sum(el.abs(b - con.matmul(a, x)) ** 2, axis=0)
    rank = red.sum(kept)
    if numpy_resid and not (a.shape[0] > a.shape[1]):
        resid = cr.zeros((0,), resid.type.dtype)
    return x, resid, rank, s


# ---- products and shapes (the array API's linalg names) -------------------------------------------

def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    return con.matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def outer(x1, x2, /):
    """jnp.linalg.outer: of two vectors only."""
    x, y = cr.asarray(x1), cr.asarray(x2)
    if x.ndim != 1 or y.ndim != 1:
        raise TracingValueError(located(f"outer: x1 and x2 must be 1-d, got shapes {x.shape} and {y.shape}"))
    return con.outer(x, y)


def trace(x, /, *, offset=0, dtype=None):
    """jnp.linalg.trace: over the last two axes."""
    return con.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x, /, *, offset=0):
    """jnp.linalg.diagonal: of the last two axes."""
    return sh.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def cross(x1, x2, /, *, axis=-1):
    """jnp.linalg.cross: of 3-vectors only."""
    x, y = cr.asarray(x1), cr.asarray(x2)
    if x.shape[axis] != 3 or y.shape[axis] != 3:
        raise TracingValueError(located(f"cross: axis {axis} must have size 3 in both operands, got shapes "
                                        f"{x.shape} and {y.shape}"))
    return numpy_cross(x, y, axis=axis)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
    return con.tensordot(x1, x2, axes, precision=precision, preferred_element_type=preferred_element_type)


def multi_dot(arrays, *, precision=None):
    """jnp.linalg.multi_dot: the chain product (a first 1-d operand is a row, a last one a column),
    multiplied from the left."""
    arrays = [cr.asarray(x) for x in arrays]
    if len(arrays) < 2:
        raise TracingValueError(located(f"multi_dot: expected at least two arrays, got {len(arrays)}"))
    result = arrays[0]
    for x in arrays[1:]:
        result = con.dot(result, x, precision=precision)
    return result


def matrix_power(a, n):
    """jnp.linalg.matrix_power: a^n by repeated squaring (inv(a)^-n for n < 0, I for n = 0)."""
    a = cr.asarray(a)
    n = static_int(n, "matrix_power exponent")
    check_matrices("matrix_power", a)
    if n == 0:
        return sh.broadcast_to(cr.eye(a.shape[-1], dtype=a.type.dtype), a.shape)
    if n < 0:
        a, n = inv(a), -n
    result, square = None, a
    while n:
        if n & 1:
            result = square if result is None else con.matmul(result, square)
        n >>= 1
        if n:
            square = con.matmul(square, square)
    return result


def tensorinv(a, ind=2):
    """jnp.linalg.tensorinv: inv of a reshaped to a square matrix at `ind`, reshaped back swapped."""
    a = cr.asarray(a)
    rows, columns = math.prod(a.shape[:ind]), math.prod(a.shape[ind:])
    if ind <= 0 or rows != columns:
        raise TracingValueError(located(f"tensorinv: the dimensions of a {a.shape} before and after ind={ind} must "
                                        f"have equal products, got {rows} and {columns}"))
    return sh.reshape(inv(sh.reshape(a, (rows, columns))), a.shape[ind:] + a.shape[:ind])


def tensorsolve(a, b, axes=None):
    """jnp.linalg.tensorsolve: x with tensordot(a, x, x.ndim) = b."""
    a, b = cr.asarray(a), cr.asarray(b)
    if axes is not None:
        a = sh.moveaxis(a, axes, [a.ndim - len(axes) + i for i in range(len(axes))])
    x_shape = a.shape[b.ndim:]
    rows, columns = math.prod(b.shape), math.prod(x_shape)
    if a.shape[:b.ndim] != b.shape or rows != columns:
        raise TracingValueError(located(f"tensorsolve: a {a.shape} must be b's shape {b.shape} followed by x's, of "
                                        f"the same size"))
    return sh.reshape(solve(sh.reshape(a, (rows, columns)), sh.reshape(b, (rows,))), x_shape)


# ---- norms ------------------------------------------------------------------------------------------

def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """jnp.linalg.vector_norm: every ord (inf, -inf, 0: the count of nonzeros, p: (sum |x|^p)^(1/p))."""
    (x,) = promoted(x)
    if axis is None:
        axis = tuple(range(x.ndim))
    size = el.abs(x)
    if ord == math.inf:
        return red.max(size, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return red.min(size, axis=axis, keepdims=keepdims)
    if ord == 0:
        return red.sum(el.not_equal(x, 0).astype(size.type.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return red.sum(size, axis=axis, keepdims=keepdims)
    if ord == 2:
        return el.sqrt(red.sum(size * size, axis=axis, keepdims=keepdims))
    return el.power(red.sum(el.power(size, ord), axis=axis, keepdims=keepdims), 1.0 / ord)


SINGULAR_VALUE_ORDS = (2, -2, "nuc")


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """jnp.linalg.matrix_norm over the last two axes."""
    return norm(x, ord, axis=(-2, -1), keepdims=keepdims)


def norm(x, ord=None, axis=None, keepdims=False):
    """jnp.linalg.norm: a vector norm over one axis, a matrix norm over two."""
    (x,) = promoted(x)
    if axis is None:
        if ord is None:
            return vector_norm(x, axis=None, keepdims=keepdims)
        if x.ndim not in (1, 2):
            raise TracingValueError(located(f"norm: ord={ord!r} needs axis for an array of shape {x.shape}"))
        axis = tuple(range(x.ndim))
    axis = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(axis) == 1:
        return vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axis) != 2:
        raise TracingValueError(located(f"norm: axis must name one or two axes, got {axis}"))
    rows, columns = (a % x.ndim for a in axis)
    if ord in (None, "fro"):
        return el.sqrt(red.sum(el.abs(x) ** 2, axis=axis, keepdims=keepdims))
    if ord in SINGULAR_VALUE_ORDS:
        values = svdvals(sh.moveaxis(x, (rows, columns), (-2, -1)))
        result = red.sum(values, axis=-1) if ord == "nuc" else (red.max if ord == 2 else red.min)(values, axis=-1)
        return sh.expand_dims(result, sorted((rows, columns))) if keepdims else result
    if ord in (1, -1, math.inf, -math.inf):
        summed, then = (rows, columns) if ord in (1, -1) else (columns, rows)
        reduce = red.max if ord in (1, math.inf) else red.min
        sums = red.sum(el.abs(x), axis=summed, keepdims=True)
        result = reduce(sums, axis=then, keepdims=True)
        return result if keepdims else sh.squeeze(result, axis=(rows, columns))
    raise TracingValueError(located(f"norm: invalid ord {ord!r} for a matrix norm"))


def cond(x, p=None):
    """jnp.linalg.cond: s_max / s_min (p None or 2; s_min / s_max for -2), else norm(x, p) norm(inv(x), p)."""
    if p in (None, 2, -2):
        values = svdvals(matrices("cond", x, square=False))
        ratio = values[..., 0] / values[..., -1]
        return ratio if p != -2 else 1 / ratio
    x = matrices("cond", x)
    return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))
