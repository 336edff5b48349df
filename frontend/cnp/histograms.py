"""Counting and binning, as jax.numpy: searchsorted, digitize, bincount, histogram,
histogram_bin_edges, histogram2d and histogramdd.

searchsorted is a branch-free binary search: ceil(log2(n + 1)) rounds, each a gather of the
sorted array at every query's midpoint, so it costs O(m log n) for m queries; for many queries
(the default method 'scan' when `merge_path_pays`: at least 2^16 queries into at least 2^12
elements) or method='sort' (JAX's name for sorting the queries) it sorts the queries and merges them with the array by
prim's merge path (libs/prim/search.py), O(n + m) after the sorts. The order is jnp.sort's: NaNs sort last. The number of bins is static, as in JAX; the bin edges may be traced.
bincount of real weights is the prim library's segmented sum (libs/prim/segments.py); histogram
counts through the prim library (libs/prim: `bin_counts`, a binary search of the edges
per value and per-run sums, without a scatter); histogram2d/histogramdd combine bin indices.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ...errors import TracingTypeError, TracingValueError
from ...ir.types import COMPLEXES
from ...libs.prim.histogram import RUN_LENGTH as BIN_RUN_LENGTH
from ...libs.prim.segments import run_length_for
from ..dtypes import is_complex, is_inexact, is_integer, to_inexact
from ..indexing import getitem, scatter
from ..lax_elementwise import static_int
from ..tracing import Tracer, bind, bind1, located
from . import elementwise as el
from . import reductions as red
from . import shaping as sh
from .base import DEFAULT_INT, convert, promote_args, result_type
from .creation import arange, asarray, linspace, ones_like, zeros
from .indexing_funcs import ix_, ravel_multi_index, result_size

__all__ = ["searchsorted", "digitize", "bincount", "histogram", "histogram_bin_edges", "histogram2d",
           "histogramdd"]

SEARCH_DTYPE = "i32"  # jnp.searchsorted and digitize return int32 indices
MERGE_MIN_QUERIES = 1 << 16
MERGE_MIN_LENGTH = 1 << 12


# ---- searching ---------------------------------------------------------------------------------

def sorts_before(a: Tracer, b: Tracer, or_equal: bool) -> Tracer:
    """a < b (or a <= b) in jnp.sort's order, where NaN is greater than every number."""
    if or_equal:
        return el.logical_not(sorts_before(b, a, False))
    less = el.less(a, b)
    if not is_inexact(a.type.dtype) or is_complex(a.type.dtype):
        return less
    return el.logical_or(less, el.logical_and(el.isnan(b), el.logical_not(el.isnan(a))))


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """jnp.searchsorted: for each v, the int32 index where it would be inserted into the sorted 1-d a
    (before equal elements for side='left', after them for 'right'); `sorter` sorts an unsorted a."""
    if side not in ("left", "right"):
        raise TracingValueError(located(f"searchsorted: side must be 'left' or 'right', got {side!r}"))
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise TracingValueError(located(f"searchsorted: unknown method {method!r}"))
    sorted_a = asarray(a)
    if sorted_a.ndim != 1:
        raise TracingValueError(located(f"searchsorted: a must be 1-d, got shape {sorted_a.shape}"))
    if sorter is not None:
        sorted_a = getitem(sorted_a, asarray(sorter))
    dtype, weak = result_type(sorted_a, v)
    sorted_a, queries = convert(sorted_a, dtype), convert(asarray(v), dtype, weak)
    n = sorted_a.shape[0]
    merge = method == "sort" or (method == "scan" and merge_path_pays(n, queries.size))
    if merge and queries.type.dtype not in COMPLEXES + ("bool",):
        return merge_path_search(sorted_a, queries, side)
    low = zeros(queries.shape, DEFAULT_INT)
    high = el.add(low, n)
    for _ in range(math.ceil(math.log2(n + 1))):
        middle = el.floor_divide(el.add(low, high), 2)
        pivot = getitem(sorted_a, el.clip(middle, 0, max(n - 1, 0)))
        go_right = sorts_before(pivot, queries, or_equal=side == "right")
        active = el.less(low, high)
        low = el.where(el.logical_and(active, go_right), el.add(middle, 1), low)
        high = el.where(el.logical_and(active, el.logical_not(go_right)), middle, high)
    return convert(low, SEARCH_DTYPE)


def merge_path_pays(n: int, m: int) -> bool:
    """The heuristic between the searches: the merge path (two radix sorts of the queries and one
    merge, O(n + m)) for MERGE_MIN_QUERIES queries or more into an array of MERGE_MIN_LENGTH or more
    (below it, the binary search's log2(n) reads stay in the L1 cache and beat the sorts: measured on
    the host, 1 Mi f32 queries into 256 elements 1.6x faster by binary search, into 16 Ki 1.9x
    slower)."""
    return m >= MERGE_MIN_QUERIES and n >= MERGE_MIN_LENGTH


def merge_path_search(sorted_a: Tracer, queries: Tracer, side: str) -> Tracer:
    """searchsorted by prim's merge path: the queries sorted with their positions (stable, NaN last)
    and merged with sorted_a, the merge storing each query's index at its position."""
    flat = sh.reshape(queries, (queries.size,))
    positions = arange(queries.size, dtype=SEARCH_DTYPE)
    ordered, order = bind("sort", [flat, positions], {"dimension": 0, "is_stable": True, "num_keys": 1})
    found = bind1("library_call", [sorted_a, ordered, order],
                  {"library": "prim", "routine": "merge_search", "solution": "", "side": side})
    return sh.reshape(found, queries.shape)


def digitize(x, bins, right=False, *, method=None):
    """jnp.digitize: the int32 index of the bin of each x, for increasing or decreasing 1-d bins."""
    edges = asarray(bins)
    if edges.ndim != 1:
        raise TracingValueError(located(f"digitize: bins must be 1-d, got shape {edges.shape}"))
    values = asarray(x)
    if edges.shape[0] == 0:
        return zeros(values.shape, SEARCH_DTYPE)
    side = "left" if right else "right"
    kwargs = {} if method is None else {"method": method}
    increasing = searchsorted(edges, values, side=side, **kwargs)
    decreasing = el.subtract(edges.shape[0], searchsorted(sh.flip(edges), values, side=side, **kwargs))
    return el.where(el.greater_equal(edges[-1], edges[0]), increasing, convert(decreasing, SEARCH_DTYPE))


# ---- counting ------------------------------------------------------------------------------------

def bincount(x, weights=None, minlength=0, *, length=None):
    """jnp.bincount: occurrences (or summed weights) of each non-negative integer in x; negative
    values count as 0 and values from `length` on are dropped, as in JAX. Without length the
    count needs concrete x."""
    values = asarray(x)
    if not is_integer(values.type.dtype):
        raise TracingTypeError(located(f"bincount: x must be integers, got {values.type}"))
    if values.ndim != 1:
        raise TracingValueError(located(f"bincount: x must be 1-d, got shape {values.shape}"))
    minlength = static_int(minlength, "bincount minlength")
    if minlength < 0:
        raise TracingValueError(located(f"bincount: minlength must be non-negative, got {minlength}"))
    if length is None:
        length = result_size(None, "bincount (without length=)", [x],
                             lambda: max(minlength, int(np.max(np.asarray(x), initial=-1)) + 1))
    else:
        length = result_size(length, "bincount length", [], None)
    if weights is None:
        weights = ones_like(values, dtype=DEFAULT_INT)
    else:
        weights = asarray(weights)
        if weights.shape != values.shape:
            raise TracingValueError(located(f"bincount: weights (shape {weights.shape}) must have the shape of "
                                            f"x ({values.shape})"))
    if weights.type.dtype not in COMPLEXES + ("bool",):
        return segment_blocks(weights, el.maximum(values, 0), length, "sum")
    counts = zeros((length,), weights.type.dtype)
    return scatter(counts, el.maximum(values, 0), weights, "add", mode="drop")


def segment_blocks(data: Tracer, ids: Tracer, num_segments: int, reducer: str, ids_sorted: bool = False) -> Tracer:
    """prim.segment_reduce's per-run blocks of data rows (the rows along the first axis), reduced over
    the runs; segment_reduce_sorted for ids promised in ascending order."""
    routine = "segment_reduce_sorted" if ids_sorted else "segment_reduce"
    blocks = bind1("library_call", [data, ids], {"library": "prim", "routine": routine, "solution": "",
                                                 "reducer": reducer,
                                                 "run_length": run_length_for(num_segments),
                                                 "num_segments": num_segments})
    reduced = bind1("reduce", [blocks], {"reducer": reducer, "axes": (0,)})
    return sh.reshape(convert(reduced, data.type.dtype), (num_segments,) + data.shape[1:])


# ---- histograms ----------------------------------------------------------------------------------

def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """jnp.histogram_bin_edges: `bins` (a 1-d array) as given, or bins + 1 equal-width edges over
    range (default: a's min to max; an empty range is widened by 0.5 each side)."""
    x = asarray(a)
    dtype = to_inexact(x.type.dtype)
    if np.ndim(bins) == 1 or (isinstance(bins, Tracer) and bins.ndim == 1):
        return convert(asarray(bins), dtype)
    if isinstance(bins, str):
        raise NotImplementedError(located(f"histogram: bins={bins!r} (a bin-width estimator) is not supported, "
                                          f"as in JAX; pass a number of bins or the edges"))
    count = static_int(bins, "histogram bins")
    if count < 1:
        raise TracingValueError(located(f"histogram: bins must be positive, got {count}"))
    if range is None:
        if x.size == 0:
            low, high = asarray(0.0, dtype), asarray(1.0, dtype)
        else:
            low, high = red.min(x), red.max(x)
    else:  # a pair, whose bounds may be traced
        pair = range if isinstance(range, (list, tuple, Tracer)) else np.asarray(range)
        if getattr(pair, "ndim", 1) != 1 or len(pair) != 2:
            raise TracingValueError(located(f"histogram: range must be a (min, max) pair, got {range!r}"))
        low, high = pair[0], pair[1]
    low, high = convert(asarray(low), dtype), convert(asarray(high), dtype)
    empty = el.equal(low, high)
    low, high = el.where(empty, el.subtract(low, 0.5), low), el.where(empty, el.add(high, 0.5), high)
    return linspace(low, high, count + 1, dtype=dtype)


def bin_indices(values: Tracer, edges: Tracer) -> Tracer:
    """The 1-based bin of each value (0: below, len(edges): above); the last edge closes the last bin."""
    index = convert(searchsorted(edges, values, side="right"), DEFAULT_INT)
    return el.where(el.equal(values, edges[-1]), el.subtract(index, 1), index)


def bin_sums(x: Tracer, edges: Tracer, weights: Tracer | None, even: bool) -> Tracer:
    """The summed weights of x's values per bin of the edges (the last bin closed; without weights,
    counts in the edges' dtype), by the prim library's histogram: each run of the values sums its
    own row of slots, then the rows are summed. `even`: the edges are equally spaced (a number of
    bins was given)."""
    x = convert(x, edges.type.dtype)  # the edges have x's inexact dtype
    counted = edges if weights is None else weights
    operands = [x, edges] + ([] if weights is None else [weights])
    partials = bind1("library_call", operands, {"library": "prim", "routine": "bin_counts", "solution": "",
                                                "run_length": BIN_RUN_LENGTH, "even": even})
    return convert(red.sum(partials, axis=0), counted.type.dtype)[1:]


def histogram(a, bins=10, range=None, weights=None, density=None):
    """jnp.histogram: (counts or summed weights per bin, bin edges); density divides by the total
    and the bin widths. Counts have the weights' dtype (a's inexact dtype without weights)."""
    x = sh.ravel(a)
    if weights is not None:
        weights = sh.ravel(weights)
        if weights.shape != x.shape:
            raise TracingValueError(located(f"histogram: weights (shape {weights.shape}) must have the shape of "
                                            f"a ({x.shape})"))
        x, weights = promote_args("histogram", x, weights, inexact=True)
    edges = histogram_bin_edges(x, bins, range, weights)
    even = not (np.ndim(bins) == 1 or (isinstance(bins, Tracer) and bins.ndim == 1))
    counts = bin_sums(x, edges, weights, even)
    if density:
        widths = el.subtract(edges[1:], edges[:-1])
        counts = el.divide(el.divide(counts, widths), red.sum(counts))
    return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """jnp.histogramdd: counts of the N points of sample (N, D) in a D-dimensional grid of bins."""
    points = asarray(sample)
    if points.ndim != 2:
        raise TracingValueError(located(f"histogramdd: sample must be 2-d (N, D), got shape {points.shape}"))
    n, d = points.shape
    if range is not None and (len(range) != d or any(r is not None and np.shape(r)[0] != 2 for r in range)):
        raise TracingValueError(located(f"histogramdd: range should be a list of {d} (min, max) pairs"))
    if isinstance(bins, (int, np.integer)):
        bins = [bins] * d
    elif len(bins) != d:
        raise TracingValueError(located(f"histogramdd: bins should have one entry per dimension ({d})"))
    edges_by_dim, index_by_dim = [], []
    for i in builtins.range(d):  # the `range` argument shadows the builtin
        column = points[:, i]
        edges = histogram_bin_edges(column, bins[i], None if range is None else range[i], weights)
        edges_by_dim.append(edges)
        index_by_dim.append(bin_indices(column, edges))
    counts_shape = tuple(e.shape[0] + 1 for e in edges_by_dim)
    flat = ravel_multi_index(tuple(index_by_dim), counts_shape, mode="clip")
    counts = bincount(flat, None if weights is None else asarray(weights), length=math.prod(counts_shape))
    counts = sh.reshape(counts, counts_shape)[(slice(1, -1),) * d]
    if density:
        counts = el.divide(counts, red.sum(counts))
        for width in ix_(*(el.subtract(e[1:], e[:-1]) for e in edges_by_dim)):
            counts = el.divide(counts, width)
    return counts, edges_by_dim


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    """jnp.histogram2d: (counts, x edges, y edges) of the points (x[i], y[i])."""
    points = sh.stack(promote_args("histogram2d", x, y), axis=1)
    if not isinstance(bins, (int, np.integer)) and len(bins) != 2:
        bins = [bins, bins]  # one array of edges for both dimensions
    counts, (x_edges, y_edges) = histogramdd(points, bins, range, weights, density)
    return counts, x_edges, y_edges

