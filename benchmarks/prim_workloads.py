"""W14: the parallel primitives (libs/prim) as numpy and JAX users call them: sorts, a scan, a
segmented scan, unique with size= and a histogram, top_k, segment_sum and nonzero with size=, under cdnajit, numpy
and JAX.

Sorts and integer results are exact (tolerance (0, 0)); the float cumsum's order differs from
numpy's sequential sum (the single-pass scan chains tiles of 16384), so it is held to the
recursive-summation bound.
"""
from __future__ import annotations

import numpy as np

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.numpy as cnp
import cdnajit.ops as ops
from workloads import Case, Context, Workload, jax_call_x64, jitted_peers, rng

F32_EPSILON = 2.0**-24   # unit roundoff of float32


def sort(xp, x):
    return xp.sort(x)


def argsort(xp, x):
    return xp.argsort(x, stable=True)


def sort_rows(xp, x):
    return xp.sort(x, axis=-1)


def cumsum(xp, x):
    return xp.cumsum(x)


UNIQUE_VALUES = 1 << 20


def unique(xp, x):
    return xp.unique(x, size=UNIQUE_VALUES, fill_value=-1)


def histogram(xp, x):
    return xp.histogram(x, bins=256, range=(-4.0, 4.0))[0]


def x64_jax(program, ctx: Context, inputs):
    """JAX's jit of the program with 64-bit types (for f64 inputs), on inputs placed under them."""
    if ctx.jax is None:
        return None
    jitted = ctx.jax.jit(lambda *a: program(ctx.jax.numpy, *a))
    return jax_call_x64(ctx.jax, jitted, inputs)


def exact_case(program, inputs, ctx: Context, x64: bool = False) -> Case:
    ours, numpy_fn, jax_fn = jitted_peers(program, ctx)
    if x64:
        jax_fn = x64_jax(program, ctx, inputs)
    return Case(inputs, ours, numpy=numpy_fn, jax=jax_fn, tolerance=(0.0, 0.0))


def build_sort(ctx: Context) -> Case:
    return exact_case(sort, (rng(40).standard_normal(1 << (16 if ctx.quick else 24)).astype(np.float32),), ctx)


def build_argsort(ctx: Context) -> Case:
    x = rng(41).standard_normal(1 << (14 if ctx.quick else 22))
    ours, numpy_fn, _ = jitted_peers(argsort, ctx)
    return Case((x,), ours, numpy=lambda x: np.argsort(x, kind="stable"), jax=x64_jax(argsort, ctx, (x,)),
                tolerance=(0.0, 0.0))


def build_sort_rows(ctx: Context) -> Case:
    rows = 10 if ctx.quick else 1000
    return exact_case(sort_rows, (rng(42).standard_normal((rows, 10_000)).astype(np.float32),), ctx)


def build_cumsum(ctx: Context) -> Case:
    x = rng(43).standard_normal(1 << (16 if ctx.quick else 24)).astype(np.float32)
    # Recursive summation in either order is within (n - 1) u sum|x| of the exact prefix sums.
    atol = 2 * x.size * F32_EPSILON * float(np.sum(np.abs(x), dtype=np.float64))
    ours, numpy_fn, jax_fn = jitted_peers(cumsum, ctx)
    return Case((x,), ours, numpy=numpy_fn, jax=jax_fn, tolerance=(0.0, atol))


def build_unique(ctx: Context) -> Case:
    x = rng(44).integers(0, UNIQUE_VALUES, 1 << (14 if ctx.quick else 22)).astype(np.int32)
    ours, _, jax_fn = jitted_peers(unique, ctx)

    def numpy_fn(x):
        values = np.unique(x)
        return np.concatenate([values, np.full(UNIQUE_VALUES - values.size, -1, x.dtype)])
    return Case((x,), ours, numpy=numpy_fn, jax=jax_fn, tolerance=(0.0, 0.0))


def build_histogram(ctx: Context) -> Case:
    x = rng(45).standard_normal(1 << (16 if ctx.quick else 24)).astype(np.float32)
    ours, numpy_fn, jax_fn = jitted_peers(histogram, ctx)
    # jnp.histogram counts in floats (the weights' dtype): f32 holds every count below 2^24 exactly.
    return Case((x,), ours, numpy=lambda x: numpy_fn(x).astype(np.float32), jax=jax_fn, tolerance=(0.0, 0.0))


TOP_K, SEGMENTS, MANY_SEGMENTS, NONZERO_SIZE = 8, 1000, 1 << 20, 1 << 22


def size(ctx: Context) -> int:
    return 1 << (16 if ctx.quick else 24)


def build_top_k(ctx: Context) -> Case:
    """lax.top_k (numpy: argpartition of the negated values, then a sort of the k; distinct values, so
    the indices are unique)."""
    x = rng(46).permutation(size(ctx)).astype(np.float32)

    def numpy_fn(x):
        top = np.argpartition(-x, TOP_K)[:TOP_K]
        top = top[np.argsort(-x[top], kind="stable")]
        return x[top], top.astype(np.int32)
    jax_fn = ctx.jax.jit(lambda x: ctx.jax.lax.top_k(x, TOP_K)) if ctx.jax else None
    return Case((x,), cj.jit(lambda x: lax.top_k(x, TOP_K)), numpy=numpy_fn, jax=jax_fn, tolerance=(0.0, 0.0))


def segment_case(ctx: Context, segments: int, ids_sorted: bool) -> Case:
    """cdnajit.ops.segment_sum (numpy: bincount with weights, in f64; JAX: jax.ops.segment_sum), f32
    data: held to the recursive-summation bound over the largest segment."""
    generator = rng(47)
    x = generator.standard_normal(size(ctx)).astype(np.float32)
    ids = generator.integers(0, segments, x.size).astype(np.int32)
    if ids_sorted:
        ids.sort()
    atol = 2 * x.size * F32_EPSILON * float(np.abs(x).sum())

    def segment_sum(namespace):
        return lambda x, i: namespace.segment_sum(x, i, num_segments=segments, indices_are_sorted=ids_sorted)
    jax_fn = ctx.jax.jit(segment_sum(ctx.jax.ops)) if ctx.jax else None
    return Case((x, ids), cj.jit(segment_sum(ops)),
                numpy=lambda x, i: np.bincount(i, weights=x, minlength=segments).astype(np.float32), jax=jax_fn,
                tolerance=(0.0, atol))


def build_segment_sum(ctx: Context) -> Case:
    return segment_case(ctx, SEGMENTS, ids_sorted=False)


def build_segment_sum_sorted(ctx: Context) -> Case:
    return segment_case(ctx, SEGMENTS, ids_sorted=True)


def build_segment_sum_many(ctx: Context) -> Case:
    return segment_case(ctx, MANY_SEGMENTS, ids_sorted=False)


SEARCH_LENGTH = 1 << 20


def build_searchsorted(ctx: Context) -> Case:
    """searchsorted of 4 Mi f32 queries into 1 Mi sorted f32 (cdnajit: the merge path after sorting
    the queries, the default method's heuristic; numpy and JAX a binary search per query). Exact."""
    generator = rng(49)
    a = np.sort(generator.standard_normal(SEARCH_LENGTH >> (6 if ctx.quick else 0)).astype(np.float32))
    v = generator.standard_normal(size(ctx) >> 2).astype(np.float32)
    ours, _, jax_fn = jitted_peers(lambda xp, a, v: xp.searchsorted(a, v), ctx)
    return Case((a, v), ours, numpy=lambda a, v: np.searchsorted(a, v).astype(np.int32), jax=jax_fn,
                tolerance=(0.0, 0.0))


def nonzero(xp, x):
    return xp.nonzero(x, size=NONZERO_SIZE, fill_value=-1)[0]


def build_nonzero(ctx: Context) -> Case:
    """nonzero with size= of a 16 Mi f32 array with a quarter of it nonzero (stream compaction); JAX
    under x64, so that its indices are int64 as numpy's and cdnajit's."""
    x = rng(48).standard_normal(size(ctx)).astype(np.float32)
    x[x < 0.67] = 0.0

    def numpy_fn(x):
        found = np.flatnonzero(x)[:NONZERO_SIZE]
        return np.concatenate([found, np.full(NONZERO_SIZE - found.size, -1)])
    ours, _, _ = jitted_peers(nonzero, ctx)
    return Case((x,), ours, numpy=numpy_fn, jax=x64_jax(nonzero, ctx, (x,)), tolerance=(0.0, 0.0))


SEGMENT_HEAD_RATE = 0.001


def build_segmented_scan(ctx: Context) -> Case:
    """cdnajit.ops.segmented_scan of f32 with a head every 1000 elements on average (numpy: the f64
    cumsum less each segment's start, vectorized; JAX, which has no segmented scan:
    lax.associative_scan of (value, head) pairs, as its users write one). Held to the
    recursive-summation bound over the whole row, which the numpy peer's subtraction needs."""
    generator = rng(50)
    x = generator.standard_normal(size(ctx)).astype(np.float32)
    heads = generator.random(x.size) < SEGMENT_HEAD_RATE
    atol = 2 * x.size * F32_EPSILON * float(np.sum(np.abs(x), dtype=np.float64))

    def numpy_fn(x, heads):
        heads = heads.copy()
        heads[0] = True
        sums = np.cumsum(x, dtype=np.float64)
        starts = np.flatnonzero(heads)
        before = np.concatenate([[0.0], sums[starts[1:] - 1]])
        return (sums - before[np.cumsum(heads) - 1]).astype(np.float32)

    jax_fn = None
    if ctx.jax is not None:
        jnp = ctx.jax.numpy

        def joined(a, b):
            return jnp.where(b[1], b[0], a[0] + b[0]), a[1] | b[1]
        jax_fn = ctx.jax.jit(lambda x, heads: ctx.jax.lax.associative_scan(joined, (x, heads))[0])
    return Case((x, heads), cj.jit(lambda x, heads: ops.segmented_scan(x, heads)), numpy=numpy_fn, jax=jax_fn,
                tolerance=(0.0, atol))


PRIM_WORKLOADS = (
    Workload("W14.sort", "sort 16 Mi f32 (radix sort: 4 passes of digit histogram, scan, stable scatter)",
             build_sort),
    Workload("W14.argsort", "argsort 4 Mi f64, stable (radix sort of keys with an index payload, 8 passes)",
             build_argsort),
    Workload("W14.sort_rows", "sort 1000 rows of 10 000 f32 along the last axis", build_sort_rows),
    Workload("W14.cumsum", "cumsum of 16 Mi f32 (single-pass scan: decoupled look-back over tiles of 16384)",
             build_cumsum),
    Workload("W14.segmented_scan", "ops.segmented_scan of 16 Mi f32, a head per 1000 elements (single-pass "
             "look-back over (value, head) pairs)", build_segmented_scan),
    Workload("W14.unique", "unique of 4 Mi i32 with size=2^20", build_unique),
    Workload("W14.histogram", "histogram of 16 Mi f32 into 256 even bins", build_histogram),
    Workload("W14.top_k", "lax.top_k of 16 Mi f32, k = 8 (one ordered insertion pass)", build_top_k),
    Workload("W14.segment_sum", "ops.segment_sum of 16 Mi f32 into 1000 segments (per-run blocks)", build_segment_sum),
    Workload("W14.segment_sum_sorted", "ops.segment_sum of 16 Mi f32, sorted ids (indices_are_sorted), 1000 "
             "segments (a register per segment)", build_segment_sum_sorted),
    Workload("W14.segment_sum_many", "ops.segment_sum of 16 Mi f32 into 1 Mi segments (blocks of 1 Mi: a work-item "
             "walks every row)", build_segment_sum_many),
    Workload("W14.searchsorted", "searchsorted of 4 Mi f32 queries into 1 Mi sorted f32 (merge path)",
             build_searchsorted),
    Workload("W14.nonzero", "nonzero of 16 Mi f32 (a quarter nonzero) with size=2^22 (stream compaction)",
             build_nonzero),
)
