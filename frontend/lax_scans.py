"""cdnajit.lax associative scans and the functions built like them: associative_scan, cumlogsumexp
(the prim library's scan with a logaddexp reducer for real floats), reduce_xor (a pairwise tree) and
top_k (the prim library's top_k_rows, or a stable sort).

associative_scan is the odd/even recursion (Blelloch's work-efficient scan written with slices): combine
neighbouring pairs, scan those halves recursively (the results at odd positions), then combine each
with the next even element; every level is a few whole-array ops, log2(n) levels in all.
"""
from __future__ import annotations

import math

from ..errors import TracingTypeError, TracingValueError
from ..ir.ops.reduce import reducer_identity
from ..ir.types import NUMPY_DTYPES
from ..libs.prim.matcher import FEW_ROWS, MIN_RADIX_LENGTH, as_rows, from_rows, scan_along
from ..libs.prim.routines import SORT_KEY_DTYPES
from ..libs.prim.topk import MAX_K as MAX_TOP_K
from .cnp.base import canonical_axis
from .dtypes import is_inexact
from .lax_elementwise import (abs, add, bitwise_and, bitwise_xor, eq, exp, log1p, max, mul, neg, rem, select, static_int,
                              static_ints, sub)
from .lax_reduce import reduce_max, sort
from .lax_shape import (broadcast_in_dim, broadcasted_iota, concatenate, full, pad, reshape, rev, slice_in_dim,
                        transpose)
from .pytree import tree_flatten, tree_unflatten
from .tracing import Tracer, as_tracer, bind, bind1, constant, located

__all__ = ["associative_scan", "cumlogsumexp", "reduce_xor", "top_k", "approx_max_k", "approx_min_k"]


def interleave(evens: Tracer, odds: Tracer, axis: int) -> Tracer:
    """evens[0], odds[0], evens[1], ... along axis (evens has as many elements as odds, or one more)."""
    n = evens.shape[axis] + odds.shape[axis]
    zero = constant(0, evens.type.dtype, evens.weak_type)

    def spread(x: Tracer, low: int) -> Tracer:
        config = [(0, 0, 0)] * x.ndim
        config[axis] = (low, n - low - (2 * x.shape[axis] - 1) if x.shape[axis] else n - low, 1)
        return pad(x, zero, config)
    position = broadcasted_iota("i64", evens.shape[:axis] + (n,) + evens.shape[axis + 1:], axis)
    even = eq(bitwise_and(position, constant(1, "i64")), constant(0, "i64"))
    return select(even, spread(evens, 0), spread(odds, 1))


def associative_scan(fn, elems, reverse=False, axis=0):
    """jax.lax.associative_scan: the inclusive scan of `fn` (an associative function of two pytrees of
    arrays, applied elementwise) over elems (a pytree of arrays of one length along axis)."""
    leaves, tree = tree_flatten(elems)
    leaves = [as_tracer(x) for x in leaves]
    if not leaves:
        raise TracingValueError(located("lax.associative_scan needs at least one array"))
    axis = canonical_axis(axis, leaves[0].ndim, "lax.associative_scan axis")
    lengths = {x.shape[axis] if x.ndim > axis else None for x in leaves}
    if len(lengths) != 1 or None in lengths:
        raise TracingValueError(located(
            f"lax.associative_scan: the arrays must have one length along axis {axis}, got shapes "
            f"{[x.shape for x in leaves]}"))

    def combine(a: list[Tracer], b: list[Tracer]) -> list[Tracer]:
        out, out_tree = tree_flatten(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))
        out = [as_tracer(x) for x in out]
        if out_tree != tree or [x.shape for x in out] != [x.shape for x in a]:
            raise TracingTypeError(located(
                f"lax.associative_scan: fn must return the structure and shapes of its arguments ({tree}, "
                f"{[x.shape for x in a]}), got {out_tree}, {[x.shape for x in out]}"))
        return out

    def part(xs: list[Tracer], start: int, stop: int | None = None, step: int = 1) -> list[Tracer]:
        return [slice_in_dim(x, start, x.shape[axis] if stop is None else stop, step, axis) for x in xs]

    def scan(xs: list[Tracer]) -> list[Tracer]:
        n = xs[0].shape[axis]
        if n < 2:
            return xs
        odds = scan(combine(part(xs, 0, n - 1, 2), part(xs, 1, None, 2)))
        later_evens = combine(odds if n % 2 else part(odds, 0, odds[0].shape[axis] - 1), part(xs, 2, None, 2))
        evens = [concatenate([first, rest], axis) for first, rest in zip(part(xs, 0, 1), later_evens)]
        return [interleave(e, o, axis) for e, o in zip(evens, odds)]

    if reverse:
        leaves = [rev(x, (axis,)) for x in leaves]
    result = scan(leaves)
    if reverse:
        result = [rev(x, (axis,)) for x in result]
    return tree_unflatten(tree, result)


def logaddexp(a: Tracer, b: Tracer) -> Tracer:
    """log(exp(a) + exp(b)) = max + log1p(exp(-|a - b|)); equal operands (infinities too) give max + log 2."""
    largest = max(a, b)
    gap = select(eq(a, b), full(a.shape, 0, a.type.dtype), neg(abs(sub(a, b))))
    return add(largest, log1p(exp(gap)))


class Tracing:
    """Builds graph ops in the current trace, as a library matcher's match builds them (`op`, `ops`),
    so the frontend can call a library's rewrite directly (libs/prim's scan_along)."""

    @staticmethod
    def op(name, *operands, **attrs):
        return bind1(name, list(operands), attrs)

    @staticmethod
    def ops(name, *operands, **attrs):
        return bind(name, list(operands), attrs)


def cumlogsumexp(operand, axis=0, reverse=False):
    """jax.lax.cumlogsumexp: the running log(sum(exp(x))) along axis, without overflow. Real floats: the
    prim library's sequential logaddexp scan (reduce-then-scan for long rows); complex: the
    associative scan of logaddexp."""
    operand = as_tracer(operand)
    if not is_inexact(operand.type.dtype):
        raise TracingTypeError(located(f"lax.cumlogsumexp needs a floating operand, got {operand.type}"))
    if operand.ndim == 0:
        raise TracingValueError(located(f"lax.cumlogsumexp needs an operand of rank at least 1, got {operand.type}"))
    axis = canonical_axis(axis, operand.ndim, "lax.cumlogsumexp axis")
    if operand.type.dtype in ("c64", "c128"):
        return associative_scan(logaddexp, operand, reverse, axis)
    return scan_along(Tracing, operand, "logaddexp", axis, bool(reverse))


def reduce_xor(operand, axes):
    """jax.lax.reduce_xor: the bitwise (or logical, for bool) xor over axes, as a tree of halves."""
    operand = as_tracer(operand)
    axes = sorted({canonical_axis(a, operand.ndim, "lax.reduce_xor axis") for a in static_ints(axes, "lax.reduce_xor axes")})
    kept = [d for d in range(operand.ndim) if d not in axes]
    kept_shape = tuple(operand.shape[d] for d in kept)
    count = math.prod(operand.shape[d] for d in axes)
    x = reshape(transpose(operand, kept + axes), kept_shape + (count,))
    zero = constant(0, x.type.dtype, x.weak_type)
    if count == 0:
        return full(kept_shape, zero)
    last = len(kept_shape)
    while x.shape[last] > 1:
        if x.shape[last] % 2:
            x = pad(x, zero, [(0, 0, 0)] * last + [(0, 1, 0)])
        half = x.shape[last] // 2
        x = bitwise_xor(slice_in_dim(x, 0, half, 1, last), slice_in_dim(x, half, 2 * half, 1, last))
    return reshape(x, kept_shape)


CHUNKED_TOP_K_LENGTH = 1 << 16   # few rows this long: chunks of it run on many work-items (chunked_top_k)


def chunked_top_k(rows: Tracer, k: int) -> list[Tracer]:
    """top_k_rows of few long rows as two passes: each row cut into FEW_ROWS chunks (padded at the end
    with the dtype's lowest value, which a real element of equal value precedes in index order), the
    top k of every chunk, then the top k of those candidates; the candidates' row positions are then
    picked by the second pass's indices (a one-hot selection over the few candidates)."""
    count, n = rows.shape
    chunk = -(-n // FEW_ROWS)
    lowest = constant(reducer_identity("max", NUMPY_DTYPES[rows.type.dtype]), rows.type.dtype)
    padded = pad(rows, lowest, [(0, 0, 0), (0, chunk * FEW_ROWS - n, 0)])
    chunks = reshape(padded, (count * FEW_ROWS, chunk))
    values, indices = Tracing.ops("library_call", chunks, library="prim", routine="top_k_rows", solution="", k=k)
    first = mul(rem(broadcasted_iota("i32", (count * FEW_ROWS, k), 0), constant(FEW_ROWS, "i32")),
                constant(chunk, "i32"))
    candidates = reshape(values, (count, FEW_ROWS * k))
    positions = reshape(add(indices, first), (count, FEW_ROWS * k))
    best, picked = Tracing.ops("library_call", candidates, library="prim", routine="top_k_rows", solution="", k=k)
    shape = (count, k, FEW_ROWS * k)
    chosen = eq(broadcasted_iota("i32", shape, 2), broadcast_in_dim(picked, shape, (0, 1)))
    spread = select(chosen, broadcast_in_dim(positions, shape, (0, 2)), full(shape, 0, "i32"))
    return [best, reduce_max(spread, (2,))]


def top_k(operand, k, *, axis=-1):
    """jax.lax.top_k: the k largest values along axis (NaN largest), descending, with their int32
    indices; equal values keep index order. Rows of 1024 or more and k up to 32: the prim library's
    one-pass top_k_rows; otherwise a stable ascending sort of the reversed array, reversed."""
    operand = as_tracer(operand)
    if operand.ndim == 0:
        raise TracingTypeError(located(f"lax.top_k needs an operand of rank at least 1, got {operand.type}"))
    axis = canonical_axis(axis, operand.ndim, "lax.top_k axis")
    k = static_int(k, "lax.top_k k")
    n = operand.shape[axis]
    if not 0 <= k <= n:
        raise TracingValueError(located(f"lax.top_k: k = {k} must be in [0, {n}] for {operand.type} along axis {axis}"))
    if operand.type.dtype in SORT_KEY_DTYPES and k <= MAX_TOP_K and n >= MIN_RADIX_LENGTH:
        (rows,) = as_rows(Tracing, [operand], axis)
        top = Tracing.ops("library_call", rows, library="prim", routine="top_k_rows", solution="", k=k)
        if rows.shape[0] < FEW_ROWS and n >= CHUNKED_TOP_K_LENGTH:
            top = chunked_top_k(rows, k)
        return tuple(from_rows(Tracing, top, operand.shape[:axis] + (k,) + operand.shape[axis + 1:], axis))
    indices = rev(broadcasted_iota("i32", operand.shape, axis), (axis,))
    values, order = sort((rev(operand, (axis,)), indices), axis, True, 1)
    return (slice_in_dim(rev(values, (axis,)), 0, k, 1, axis), slice_in_dim(rev(order, (axis,)), 0, k, 1, axis))



def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True):
    """jax.lax.approx_max_k: the exact top_k (full recall, as JAX computes it on CPU)."""
    return top_k(operand, k, axis=reduction_dimension)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True):
    """jax.lax.approx_min_k: the exact k smallest values (NaN last) ascending, with int32 indices;
    equal values keep index order (a stable ascending sort)."""
    operand = as_tracer(operand)
    axis = canonical_axis(reduction_dimension, operand.ndim, "lax.approx_min_k reduction_dimension")
    k = static_int(k, "lax.approx_min_k k")
    if not 0 <= k <= operand.shape[axis]:
        raise TracingValueError(located(f"lax.approx_min_k: k = {k} must be in [0, {operand.shape[axis]}] for "
                                        f"{operand.type} along axis {axis}"))
    values, order = sort((operand, broadcasted_iota("i32", operand.shape, axis)), axis, True, 1)
    return slice_in_dim(values, 0, k, 1, axis), slice_in_dim(order, 0, k, 1, axis)
