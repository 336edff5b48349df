"""The solver's symmetric eigenvalue routines of the tridiagonal path (LAPACK's syev split in its steps,
as rocSOLVER's syev runs sytrd, then steqr), on stacks [B, n, n] of f32, f64, c64 and c128 matrices:

  sytrd(A[B, n, n]) -> packed[B, n, n], d[B, n] (real), e[B, n] (real), work[B, 2 n]
      Householder reduction of the Hermitian matrix of A's lower triangle (the diagonal's imaginary
      part not read) to tridiagonal form, Q^H A Q = S T S^H (routines.py's householder_tridiagonal
      and real_subdiagonal, syev's steps): T real with diagonal d and subdiagonal e (e[k] couples k and
      k + 1, non-negative; e[n - 1] = 0), S = diag(s_0 ..) unitary (s_0 = 1; all 1 for real A), Q =
      H_0 ... H_{n-3}, H_k = I - tau_k v_k v_k^H. packed holds them as syev {logged} does: tau_k in row 0,
      column k; v_k in column k, 1 at row k + 1 (not stored), the rest below it; s_k+1 at (k + 1, k);
      zeros elsewhere (and tau_k = 0, v_k = 0 where column k needed no reflector). work is zero.
  steqr(d[B, n], e[B, n]) -> w[B, n], f[B, n], pairs[B, R, 2] i32, cs[B, R, 2], count[B] i32
      the eigenvalues w, ascending, of the real symmetric tridiagonal (d, e) (e[k] couples d[k] and
      d[k + 1]; e[n - 1] not read) by implicit QR steps with Wilkinson's shift (routines.py's
      tridiagonal_qr; NaNs where the iteration did not converge); f is the work copy of e. Its
      rotations, then the sort's swaps, are logged (R = rotation_capacity(n)) as bidiagonal.py's lasr
      applies them: T = Z diag(w) Z^T with Z^T = lasr(I, pairs, cs, count).

eigh of a large matrix is sytrd, divide and conquer on T (steqr and lasr on its leaves, divide.py's laed1
merges) and Q's reflectors applied to T's vectors (frontend/cnp/linalg_solver.py). The references compute as the kernels (tridiagonal_kernels.py) do, in
the operands' dtype.
"""
from __future__ import annotations

import numpy as np

from ...ir.opdef import require
from ...ir.ops.library import Routine
from ...ir.types import COMPLEX_PART, TensorType
from .routines import (REAL, REAL_OR_COMPLEX, RotationLog, hermitian_of_lower, householder_tridiagonal,
                       real_subdiagonal, rotation_capacity, tridiagonal_qr)


def sytrd_infer(types, attrs):
    require(len(types) == 1, f"library_call: solver.sytrd takes 1 operand, got {len(types)}")
    (a,) = types
    require(a.ndim == 3 and a.dtype in REAL_OR_COMPLEX and a.shape[1] == a.shape[2],
            f"library_call: solver.sytrd takes a stack of square matrices [B, n, n] (f32, f64, c64, c128), got {a}")
    batch, n, _ = a.shape
    part = TensorType(COMPLEX_PART.get(a.dtype, a.dtype), (batch, n))
    return [a, part, part, TensorType(a.dtype, (batch, 2 * n))]


def sytrd_reference(a):
    h = hermitian_of_lower(a)
    batch, n, _ = h.shape
    part = np.finfo(h.dtype).dtype
    d, e = np.zeros((batch, n), part), np.zeros((batch, n), part)
    packed = np.zeros_like(h)
    with np.errstate(all="ignore"):
        for b in range(batch):
            for k, u, beta in householder_tridiagonal(h[b]):
                if beta != 0:
                    packed[b, 0, k], packed[b, k + 2:, k] = beta * abs(u[0]) ** 2, u[1:] / u[0]
            d[b] = np.real(np.diagonal(h[b]))
            for k, phase in real_subdiagonal(h[b], e[b]):
                packed[b, k + 1, k] = phase
    return packed, d, e, np.zeros((batch, 2 * n), h.dtype)


def steqr_infer(types, attrs):
    require(len(types) == 2 and all(t.ndim == 2 and t.dtype in REAL for t in types) and types[0] == types[1],
            f"library_call: solver.steqr takes real d[B, n] and e[B, n] of one dtype, got "
            f"{', '.join(map(str, types))}")
    d = types[0]
    batch, n = d.shape
    log = (batch, rotation_capacity(n), 2)
    return [d, d, TensorType("i32", log), TensorType(d.dtype, log), TensorType("i32", (batch,))]


def steqr_reference(d, e):
    w, f = np.array(d, copy=True), np.array(e, copy=True)
    batch, n = w.shape
    capacity = rotation_capacity(n)
    pairs, cs, counts = np.zeros((batch, capacity, 2), np.int32), np.zeros((batch, capacity, 2), w.dtype), np.zeros(
        batch, np.int32)
    with np.errstate(all="ignore"):
        for b in range(batch):
            log = RotationLog(pairs[b], cs[b])
            tridiagonal_qr(w[b], f[b], None, log, capacity)
            counts[b] = log.count
    return w, f, pairs, cs, counts


ROUTINES = {
    "sytrd": Routine({}, sytrd_infer, sytrd_reference, "Householder reduction to tridiagonal form "
                                                       "(libs/solver/tridiagonal.py)"),
    "steqr": Routine({}, steqr_infer, steqr_reference, "eigenvalues of a symmetric tridiagonal, implicit QR, "
                                                       "rotations logged (libs/solver/tridiagonal.py)"),
}
