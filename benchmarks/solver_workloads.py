"""W15: dense linear algebra through cdnajit.numpy.linalg (libs/solver, with libs/blas GEMMs in the
blocked factorizations), side by side with numpy (LAPACK) and JAX (LAPACK on the CPU), in f64 with
JAX's 64-bit types on where the workload is f64.

The matrices are well conditioned (a diagonal shift of 2 sqrt(n) on standard normal entries, or
X X^T + n I for Cholesky), so the peers agree to a few n eps (relative) and the tolerance says so.
"""
from __future__ import annotations

import math

import numpy as np

from loop_workloads import cdnajit_peer, jax_peer
from workloads import Case, Context, Workload, rng

F32_EPSILON = 2.0**-24
F64_EPSILON = 2.0**-53


def well_conditioned(n, batch=(), dtype=np.float64, seed=0):
    generator = rng(seed)
    return (generator.standard_normal((*batch, n, n)) + 2 * math.sqrt(n) * np.eye(n)).astype(dtype)


def positive_definite(n, batch=(), dtype=np.float64, seed=0):
    x = rng(seed).standard_normal((*batch, n, n))
    return (x @ np.swapaxes(x, -1, -2) + n * np.eye(n)).astype(dtype)


def solve(xp, lax, a, b):
    return xp.linalg.solve(a, b)


def inv(xp, lax, a):
    return xp.linalg.inv(a)


def det(xp, lax, a):
    return xp.linalg.det(a)


def cholesky(xp, lax, a):
    return xp.linalg.cholesky(a)


def qr(xp, lax, a):
    # R alone: its rows' signs are LAPACK's choice in every peer (Householder vectors with beta = -sign(alpha) ||x||).
    return xp.linalg.qr(a, mode="r")


def eigenvalue_magnitudes(xp, lax, a):
    # Each matrix's sum of |eigenvalue|: independent of the order the peers return them in.
    return xp.sum(xp.abs(xp.linalg.eigvals(a)), axis=-1)


def eigenvalues_ascending(xp, lax, a):
    # eigh's w (ascending in every peer), then the mean |entry| of V: the vectors are used (no peer may
    # skip them), in a way their signs do not change.
    w, v = xp.linalg.eigh(a)
    return xp.concatenate([w, xp.mean(xp.abs(v))[None]])


def singular_values(xp, lax, a):
    # svd's s (descending in every peer), then the mean |entry| of U and of Vh: both used (no peer may
    # skip them), in a way their signs do not change.
    u, s, vh = xp.linalg.svd(a)
    return xp.concatenate([s, (xp.mean(xp.abs(u)) + xp.mean(xp.abs(vh)))[None]])


def numpy_peer(program):
    def run(*arrays):
        return program(np, None, *arrays)
    return run


def linalg_case(ctx: Context, program, inputs, epsilon, flops, x64: bool, condition: float = 1.0) -> Case:
    """A case whose tolerance is 64 n eps times the matrices' largest condition number (1 for the
    large, shifted ones; computed for stacks of small ones, where a few of 10 000 random matrices
    are far less well conditioned), relative to the result's largest magnitude (n the order)."""
    n = inputs[0].shape[-1]
    scale = float(np.abs(numpy_peer(program)(*inputs)).max())
    return Case(inputs, cdnajit_peer(program), numpy=numpy_peer(program), jax=jax_peer(program, ctx, inputs, x64=x64),
                tolerance=(0.0, 64 * n * epsilon * condition * scale), flops=flops)


def build_solve(ctx: Context) -> Case:
    n = 128 if ctx.quick else 2000
    a, b = well_conditioned(n), rng(1).standard_normal(n)
    return linalg_case(ctx, solve, (a, b), F64_EPSILON, 2 * n**3 // 3 + 2 * n**2, x64=True)


def build_cholesky(ctx: Context) -> Case:
    n = 256 if ctx.quick else 4000
    return linalg_case(ctx, cholesky, (positive_definite(n),), F64_EPSILON, n**3 // 3, x64=True)


def build_inv(ctx: Context) -> Case:
    n = 128 if ctx.quick else 1000
    return linalg_case(ctx, inv, (well_conditioned(n, dtype=np.float32),), F32_EPSILON, 2 * n**3, x64=False)


def build_det(ctx: Context) -> Case:
    n = 128 if ctx.quick else 2000
    # Scaled so that the determinant stays within f64's range (a product of n diagonal values near 1).
    a = well_conditioned(n) / (2 * math.sqrt(n))
    return linalg_case(ctx, det, (a,), F64_EPSILON, 2 * n**3 // 3, x64=True)


def build_qr(ctx: Context) -> Case:
    m, n = (256, 128) if ctx.quick else (2000, 1000)
    a = rng(0).standard_normal((m, n))
    return linalg_case(ctx, qr, (a,), F64_EPSILON, 2 * m * n**2 - 2 * n**3 // 3, x64=True,
                       condition=float(np.linalg.cond(a)))


def build_batched_inv(ctx: Context) -> Case:
    batch = 100 if ctx.quick else 10000
    a = well_conditioned(4, (batch,), np.float32)
    return linalg_case(ctx, inv, (a,), F32_EPSILON, batch * 2 * 4**3, x64=False,
                       condition=float(np.linalg.cond(a.astype(np.float64)).max()))


def build_batched_cholesky(ctx: Context) -> Case:
    batch = 10 if ctx.quick else 1000
    return linalg_case(ctx, cholesky, (positive_definite(32, (batch,)),), F64_EPSILON, batch * 32**3 // 3, x64=True)


def build_batched_eigvals(ctx: Context) -> Case:
    batch = 10 if ctx.quick else 1000
    # Random matrices' eigenvalues: condition numbers up to about 1e3 among 1000 of them.
    return linalg_case(ctx, eigenvalue_magnitudes, (rng(2).standard_normal((batch, 16, 16)),), F64_EPSILON,
                       batch * 10 * 16**3, x64=True, condition=1e3)


def build_eigh(ctx: Context) -> Case:
    n = 128 if ctx.quick else 1000
    x = rng(3).standard_normal((n, n))
    return linalg_case(ctx, eigenvalues_ascending, (x + x.T,), F64_EPSILON, 9 * n**3, x64=True)


def build_svd(ctx: Context) -> Case:
    n = 128 if ctx.quick else 1000
    return linalg_case(ctx, singular_values, (well_conditioned(n),), F64_EPSILON, 12 * n**3, x64=True)


SOLVER_WORKLOADS = (
    Workload("W15.solve", "linalg.solve, 2000x2000 f64 and one right-hand side: recursive LU (leaves of 128 "
             "columns, BLAS GEMM Schur complements), getrs", build_solve),
    Workload("W15.cholesky", "linalg.cholesky, 4000x4000 f64: recursive Cholesky, syrk-shaped GEMM updates",
             build_cholesky),
    Workload("W15.qr", "linalg.qr(mode='r'), 2000x1000 f64: recursive Householder QR, compact-WY updates by GEMMs",
             build_qr),
    Workload("W15.inv", "linalg.inv, 1000x1000 f32: recursive LU, then getri (recursive trtri and trsm by GEMMs)",
             build_inv),
    Workload("W15.det", "linalg.det, 2000x2000 f64: recursive LU, the product of U's diagonal", build_det),
    Workload("W15.inv_4x4", "linalg.inv of 10 000 4x4 f32 matrices: one launch per routine for the whole stack",
             build_batched_inv),
    Workload("W15.cholesky_32", "linalg.cholesky of 1000 32x32 f64 matrices: one potrf launch",
             build_batched_cholesky),
    Workload("W15.eigvals_16", "linalg.eigvals of 1000 16x16 f64 matrices (sum of |w| each): one gebal and one "
             "geev launch, balancing, Hessenberg + Francis QR a work-item per matrix", build_batched_eigvals),
    Workload("W15.eigh", "linalg.eigh, 1000x1000 f64 (w and mean |V| compared): blocked tridiagonal reduction "
             "(latrd panels of 64 columns, a workgroup each, GEMM updates; sytrd on the last 360 rows), divide and "
             "conquer on the tridiagonal (steqr leaves, laed1 merges, GEMMs), Q's reflectors "
             "applied to its vectors in blocks (GEMMs)",
             build_eigh),
    Workload("W15.svd", "linalg.svd, 1000x1000 f64 (s and mean |U|, |Vh| compared): gesdd's steps, gebrd "
             "bidiagonalization (a workgroup), the bidiagonal's vectors by divide and conquer (bdsqr leaves, lasd1 "
             "merges, GEMMs), U and V by gebrd's reflectors (GEMMs)", build_svd),
)
