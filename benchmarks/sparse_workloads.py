"""W16: sparse matrices through cdnajit.sparse (libs/sparse), side by side with scipy.sparse (the
numpy column) and JAX's jax.experimental.sparse BCSR/BCOO on the CPU, in f64 (JAX with 64-bit
types on) unless said.

Matrices are built once per workload from a seeded generator: uniform rows of 10 (or 8) random
columns, or a power-law matrix (row lengths 1 to 10 000, Pareto-distributed, of about the same
nnz). Tolerances: a sum of k products in order errs by at most k eps sum |a x| (Higham's gamma_k),
k the longest row, taken over the result's largest magnitude.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import cdnajit as cj
import cdnajit.lax as clax
import cdnajit.numpy as cnp
import cdnajit.ops as cops
import cdnajit.sparse as cs
from workloads import Case, Context, Workload, jax_call_x64, rng

F64_EPSILON = 2.0**-53
F32_EPSILON = 2.0**-24


def uniform_csr(m, per_row, seed, dtype=np.float64) -> sp.csr_matrix:
    generator = rng(seed)
    indices = generator.integers(0, m, (m, per_row)).astype(np.int32)
    indices.sort(axis=1)
    indptr = np.arange(0, m * per_row + 1, per_row, dtype=np.int32)
    a = sp.csr_matrix((generator.standard_normal(m * per_row).astype(dtype), indices.reshape(-1), indptr),
                      shape=(m, m))
    a.sum_duplicates()
    return a


def power_law_csr(m, nnz, seed, longest=10_000) -> sp.csr_matrix:
    """Row lengths from a Pareto law, clipped to [1, longest], scaled to about nnz in all."""
    generator = rng(seed)
    lengths = np.clip(generator.pareto(1.1, m) + 1, 1, longest)
    lengths = np.clip(np.round(lengths * nnz / lengths.sum()), 1, longest).astype(np.int64)
    lengths[0] = longest
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    indices = generator.integers(0, m, indptr[-1]).astype(np.int32)
    a = sp.csr_matrix((generator.standard_normal(indptr[-1]), indices, indptr), shape=(m, m))
    a.sum_duplicates()
    return a


def csr_arrays(a) -> tuple:
    """The CSR arrays the peers take (the runner hands JAX plain arrays); cdnajit builds its BCSR
    from them inside jit."""
    return a.data, a.indices, a.indptr


def jax_bcsr(ctx: Context, a):
    from jax.experimental import sparse as jsparse
    with ctx.jax.enable_x64(True):
        return jsparse.BCSR((a.data, a.indices, a.indptr), shape=a.shape)


def product_tolerance(a, b, epsilon):
    k = max(int(np.diff(a.indptr).max(initial=0)), 1)
    return (0.0, k * epsilon * float(np.abs(abs(a) @ np.abs(b)).max()))


def spmv_case(ctx: Context, a) -> Case:
    x = rng(1).standard_normal(a.shape[1])
    matvec = cj.jit(lambda data, indices, indptr, v: cs.csr_matrix((data, indices, indptr), shape=a.shape) @ v)
    jax_fn = None
    if ctx.jax:
        jax_fn = jax_call_x64(ctx.jax, ctx.jax.jit(lambda m, v: m @ v), (jax_bcsr(ctx, a), x))
    return Case((*csr_arrays(a), x), matvec, numpy=lambda *arrays: a @ x, jax=jax_fn,
                reference=lambda *arrays: a @ x, tolerance=product_tolerance(a, x, F64_EPSILON), flops=2 * a.nnz)


def build_spmv_uniform(ctx: Context) -> Case:
    return spmv_case(ctx, uniform_csr(4096 if ctx.quick else 1 << 20, 10, seed=0))


def build_spmv_power_law(ctx: Context) -> Case:
    m = 4096 if ctx.quick else 1 << 20
    return spmv_case(ctx, power_law_csr(m, 10 * m, seed=2, longest=min(10_000, m)))


def build_spmm(ctx: Context) -> Case:
    m = 4096 if ctx.quick else 1 << 17
    a = uniform_csr(m, 10, seed=3)
    b = rng(4).standard_normal((m, 64))
    matmat = cj.jit(lambda data, indices, indptr, d: cs.csr_matrix((data, indices, indptr), shape=a.shape) @ d)
    jax_fn = None
    if ctx.jax:
        jax_fn = jax_call_x64(ctx.jax, ctx.jax.jit(lambda s, d: s @ d), (jax_bcsr(ctx, a), b))
    return Case((*csr_arrays(a), b), matmat, numpy=lambda *arrays: a @ b, jax=jax_fn, reference=lambda *arrays: a @ b,
                tolerance=product_tolerance(a, b, F64_EPSILON), flops=2 * a.nnz * 64)


def build_spgemm(ctx: Context) -> Case:
    m = 2048 if ctx.quick else 100 * 1024
    a = uniform_csr(m, 8, seed=5)

    def ours_product(data, indices, indptr):
        s = cs.csr_matrix((data, indices, indptr), shape=a.shape)
        return s @ s

    # The product's columns are unsorted within a row (as scipy's), so the runner cannot compare its
    # arrays entry by entry: the build checks one product against scipy's, both sorted, once.
    c = ours_product(*csr_arrays(a))
    got = sp.csr_matrix((c.data, c.indices, c.indptr), shape=c.shape)
    got.sort_indices()
    want = (a @ a).tocsr()
    want.sort_indices()
    error = float(np.abs(got.data - want.data).max(initial=0))
    bound = 8 * F64_EPSILON * float(np.abs(abs(a) @ abs(a)).max())
    if not (np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices) and error <= bound):
        raise AssertionError(f"W16.spgemm: the product differs from scipy's (largest error {error}, bound {bound})")
    # JAX has no CSR x CSR product (BCSR @ BCSR is not implemented; BCOO @ BCOO sizes its result by
    # nse(A) * nse(B) entries, 4.3e11 here), so the JAX column is empty.
    return Case(csr_arrays(a), ours_product, numpy=lambda *arrays: a @ a, jax=None, tolerance=None,
                note=lambda: "checked against scipy once in the build (sorted columns)")


def build_sddmm(ctx: Context) -> Case:
    n, depth = (512, 64) if ctx.quick else (4096, 64)
    pattern = sp.random(n, n, density=0.01, random_state=6, format="csr", dtype=np.float32)
    pattern.sort_indices()
    generator = rng(7)
    x, y = generator.standard_normal((n, depth)).astype(np.float32), generator.standard_normal((depth, n)).astype(np.float32)
    rows = np.repeat(np.arange(n), np.diff(pattern.indptr))
    columns = pattern.indices
    sampled = cj.jit(lambda indices, indptr, a, b: cs.sddmm(
        cs.csr_matrix((cnp.zeros(indices.shape, a.dtype), indices, indptr), shape=(n, n)), a, b).data)
    jax_fn = None
    if ctx.jax:
        from jax.experimental import sparse as jsparse
        coo_indices = np.stack([rows, columns], axis=1).astype(np.int32)
        jitted = ctx.jax.jit(lambda a, b, i: jsparse.bcoo_dot_general_sampled(
            a, b, i, dimension_numbers=(((1,), (0,)), ((), ()))))
        jax_fn = lambda *arrays: jitted(x, y, coo_indices)
    # scipy has no SDDMM: the numpy column gathers the rows and columns and takes their dot products.
    numpy_fn = lambda *arrays: np.einsum("ij,ij->i", x[rows], y.T[columns])
    return Case((pattern.indices, pattern.indptr, x, y), sampled, numpy=numpy_fn, jax=jax_fn,
                tolerance=(0.0, depth * F32_EPSILON * float((np.abs(x) @ np.abs(y)).max())),
                flops=2 * depth * pattern.nnz)


def csr_rows_loop(xp, lax, indptr, columns, values, x, width):
    """A JAX user's CSR SpMV without a sparse type: a fori_loop over rows, each gathering `width`
    entries from its start and masking those past its end."""
    offsets = xp.arange(width)

    def row(i, y):
        at = indptr[i] + offsets
        kept = at < indptr[i + 1]
        at = xp.minimum(at, values.shape[0] - 1)
        return y.at[i].set(xp.sum(xp.where(kept, values[at] * x[columns[at]], 0.0)))

    return lax.fori_loop(0, indptr.shape[0] - 1, row, xp.zeros(indptr.shape[0] - 1, values.dtype))


def build_fori_spmv(ctx: Context) -> Case:
    n = 1000 if ctx.quick else 10_000
    a = uniform_csr(n, 10, seed=8)
    width = int(np.diff(a.indptr).max())
    x = rng(9).standard_normal(n)
    inputs = (a.indptr, a.indices, a.data, x)
    program = lambda xp, lax: lambda *arrays: csr_rows_loop(xp, lax, *arrays, width)
    jax_fn = None
    if ctx.jax:
        jax_fn = jax_call_x64(ctx.jax, ctx.jax.jit(program(ctx.jax.numpy, ctx.jax.lax)), inputs)
    return Case(inputs, cj.jit(program(cnp, clax)), numpy=lambda *arrays: a @ x, jax=jax_fn,
                reference=lambda *arrays: a @ x, tolerance=product_tolerance(a, x, F64_EPSILON), flops=2 * a.nnz)


def segment_spmv(ops, rows, columns, values, x):
    return ops.segment_sum(values * x[columns], rows, num_segments=x.shape[0])


def build_segment_spmv(ctx: Context) -> Case:
    n = 4096 if ctx.quick else 1 << 20
    a = uniform_csr(n, 10, seed=10)
    x = rng(11).standard_normal(n)
    rows = np.repeat(np.arange(n, dtype=np.int32), np.diff(a.indptr))
    inputs = (rows, a.indices, a.data, x)
    jax_fn = None
    if ctx.jax:
        jitted = ctx.jax.jit(lambda *arrays: segment_spmv(ctx.jax.ops, *arrays))
        jax_fn = jax_call_x64(ctx.jax, jitted, inputs)
    return Case(inputs, cj.jit(lambda *arrays: segment_spmv(cops, *arrays)), numpy=lambda *arrays: a @ x, jax=jax_fn,
                reference=lambda *arrays: a @ x, tolerance=product_tolerance(a, x, F64_EPSILON), flops=2 * a.nnz)


SPARSE_WORKLOADS = (
    Workload("W16.spmv_uniform", "CSR SpMV, 1Mi x 1Mi, 10 nonzeros per row, f64 (scipy: csr @ x; JAX: BCSR @ x)",
             build_spmv_uniform),
    Workload("W16.spmv_power_law", "CSR SpMV, 1Mi x 1Mi, power-law rows (1 to 10 000), ~10 Mi nonzeros, f64",
             build_spmv_power_law),
    Workload("W16.spmm", "CSR x dense, 128Ki x 128Ki (10 per row) times 128Ki x 64, f64 (scaled down from 1Mi rows: "
             "the dense operands are 64 MiB here)", build_spmm),
    Workload("W16.spgemm", "CSR x CSR, A @ A for 100Ki x 100Ki with 8 per row, f64, outside jit (no JAX peer)",
             build_spgemm),
    Workload("W16.sddmm", "SDDMM, 4096 x 4096 at 1 % density, K = 64, f32 (JAX: bcoo_dot_general_sampled)",
             build_sddmm),
    Workload("W16.fori_spmv", "the dense idiom: a fori_loop over 10 000 rows of 10 (masked gathers), f64 "
             "(the sparse matcher makes it csrmv_ell)",
             build_fori_spmv),
    Workload("W16.segment_spmv", "the dense idiom segment_sum(vals * x[cols], rows), 1Mi rows of 10, f64 "
             "(the sparse matcher makes it coo2csr and csrmv)", build_segment_spmv),
)
