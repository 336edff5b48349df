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
  latrd(A[B, m, m], s[B]; columns = b) -> Vt[B, b, m], Wt[B, b, m], tau[B, b], d[B, b] (real), e[B, b] (real),
      phases[B, b]
      sytrd's first b steps on the Hermitian matrix of A's lower triangle (the diagonal's imaginary part
      not read; LAPACK's latrd, a panel of blocked sytrd; 0 < b <= m - 2): reflector i (H_i = I - tau_i
      v_i v_i^H, tau real, v_i row i of Vt: 0 up to entry i, 1 at i + 1) reduces column i of A_i = A -
      V_i W_i^H - W_i V_i^H, V_i and W_i the first i columns of V = Vt^T and W = Wt^T (w_i = row i of Wt,
      sytrd's q of the step: zero up to entry i), so that A - V W^H - W V^H is H_b-1 ... H_0 A H_0 ...
      H_b-1, whose trailing m - b rows and columns the next panel reduces. d_i is A_i's diagonal entry
      i, e_i the magnitude of the subdiagonal it leaves at (i + 1, i), phases_i the real-subdiagonal
      phase of row i + 1 chained from s, that of row 0 (sytrd's s_k+1 = s_k c_k / |c_k|).
  steqr(d[B, n], e[B, n]) -> w[B, n], f[B, n], pairs[B, R, 2] i32, cs[B, R, 2], count[B] i32
      the eigenvalues w, ascending, of the real symmetric tridiagonal (d, e) (e[k] couples d[k] and
      d[k + 1]; e[n - 1] not read) by implicit QR steps with Wilkinson's shift (routines.py's
      tridiagonal_qr; NaNs where the iteration did not converge); f is the work copy of e. Its
      rotations, then the sort's swaps, are logged (R = rotation_capacity(n)) as bidiagonal.py's lasr
      applies them: T = Z diag(w) Z^T with Z^T = lasr(I, pairs, cs, count).

eigh of a large matrix is sytrd (above BLOCKED_FROM rows latrd panels and GEMM updates, then sytrd on
the rest), divide and conquer on T (steqr and lasr on its leaves, divide.py's laed1
merges) and Q's reflectors applied to T's vectors (frontend/cnp/linalg_solver.py). The references compute as the kernels (tridiagonal_kernels.py) do, in
the operands' dtype.
"""
from __future__ import annotations

import numpy as np

from ...ir.opdef import require
from ...ir.ops.library import Routine
from ...ir.types import COMPLEX_PART, TensorType
from .routines import (REAL, REAL_OR_COMPLEX, RotationLog, complex_reflector, hermitian_of_lower,
                       householder_tridiagonal, real_subdiagonal, rotation_capacity, tridiagonal_qr)


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


def latrd_infer(types, attrs):
    require(len(types) == 2, f"library_call: solver.latrd takes 2 operands, got {len(types)}")
    a, phase = types
    require(a.ndim == 3 and a.dtype in REAL_OR_COMPLEX and a.shape[1] == a.shape[2],
            f"library_call: solver.latrd takes a stack of square matrices [B, m, m] (f32, f64, c64, c128), got {a}")
    batch, m, _ = a.shape
    columns = attrs["columns"]
    require(0 < columns <= m - 2, f"library_call: solver.latrd reduces 1 to m - 2 = {m - 2} columns, got {columns}")
    require(phase == TensorType(a.dtype, (batch,)),
            f"library_call: solver.latrd takes the phases s[{batch}] of {a.dtype} beside {a}, got {phase}")
    part = TensorType(COMPLEX_PART.get(a.dtype, a.dtype), (batch, columns))
    panel = TensorType(a.dtype, (batch, columns))
    return [TensorType(a.dtype, (batch, columns, m))] * 2 + [panel, part, part, panel]


def latrd_reference(a, phase, columns):
    a = hermitian_of_lower(a)
    batch, m, _ = a.shape
    part = np.finfo(a.dtype).dtype
    vt, wt = np.zeros((batch, columns, m), a.dtype), np.zeros((batch, columns, m), a.dtype)
    tau, phases = np.zeros((batch, columns), a.dtype), np.zeros((batch, columns), a.dtype)
    d, e = np.zeros((batch, columns), part), np.zeros((batch, columns), part)
    with np.errstate(all="ignore"):
        for b in range(batch):
            s = phase[b]
            for i in range(columns):
                v, w = vt[b, :i], wt[b, :i]
                column = a[b, i:, i] - v[:, i:].T @ np.conj(w[:, i]) - w[:, i:].T @ np.conj(v[:, i])
                d[b, i] = column[0].real
                x = column[1:]
                u, beta = complex_reflector(x)
                coupling = -(x[0] / abs(x[0]) if x[0] != 0 else 1) * np.sqrt(np.sum(np.abs(x) ** 2))
                e[b, i] = abs(coupling)
                s = s * coupling / abs(coupling) if coupling != 0 else s
                phases[b, i] = s
                vt[b, i, i + 1] = 1
                if beta != 0:
                    vt[b, i, i + 2:], tau[b, i] = u[1:] / u[0], beta * abs(u[0]) ** 2
                y = vt[b, i, i + 1:]
                rest = slice(i + 1, None)
                p = tau[b, i] * (a[b, rest, rest] @ y - v[:, rest].T @ (np.conj(w[:, rest]) @ y)
                                 - w[:, rest].T @ (np.conj(v[:, rest]) @ y))
                wt[b, i, rest] = p - (tau[b, i] / 2 * np.real(np.vdot(y, p))) * y
    return vt, wt, tau, d, e, phases


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
    "latrd": Routine({"columns": "int"}, latrd_infer, latrd_reference,
                     "a panel of blocked Householder reduction to tridiagonal form (libs/solver/tridiagonal.py)"),
    "steqr": Routine({}, steqr_infer, steqr_reference, "eigenvalues of a symmetric tridiagonal, implicit QR, "
                                                       "rotations logged (libs/solver/tridiagonal.py)"),
}
