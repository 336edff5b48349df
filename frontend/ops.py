"""cdnajit.ops: jax.ops's segment reductions.

`segment_sum(data, segment_ids, num_segments)` is the array of num_segments rows (data's trailing
shape) whose row s combines every data[i] with segment_ids[i] == s, starting from the reduction's
identity (0, 1, the dtype's lowest or highest value; a segment no id names keeps it). Ids outside
[0, num_segments) are dropped, as JAX's default mode (FILL_OR_DROP, with negative ids out of
bounds, not counted from the end). Real non-bool data: the prim library's segmented reduction
(libs/prim/segments.py: per-run blocks of partial results, then the graph's reduction of the
blocks; `indices_are_sorted=True` folds each segment's rows in a register, and then ids out of
order give a valid reduction with other rounding, where JAX leaves the result undefined);
complex and bool data combine by the graph's scatter with that reduction.
`num_segments` must be static under jit, as in JAX; without it, the ids must be concrete and it
is max(ids) + 1.

`run_length_encode(x, size=None, fill_value=0)` (no JAX counterpart; rocPRIM's run_length_encode):
the runs of equal consecutive elements of a 1-d x, as (values, counts), the first `size` runs, the
rest filled with fill_value and count 0. It is the prim library's stream compaction twice over the
runs' heads (x[i] != x[i - 1]): their values, and their positions, whose differences are the counts.
NaNs differ from each other, so each is a run of its own (numpy's x[1:] != x[:-1]).

`segmented_scan(x, heads, reducer="sum", exclusive=False, axis=0)` (JAX has none: its users write
lax.associative_scan over (flag, value) pairs; rocPRIM's segmented_inclusive/exclusive_scan with
head flags): the scan of x along axis restarting at each element whose head flag is true (the
first element along the axis always starts a segment); exclusive gives each element the
reduction of its segment's elements before it (the identity at a head). Reducers: sum, prod, max,
min, logaddexp; real non-bool x. It is the prim library's segmented scan (libs/prim/scan.py: one
pass for rows up to 4096, reduce-then-scan of runs beyond), sequential within a run, so a sum is
numpy's cumsum of each segment for one run.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConcretizationError, TracingValueError
from ..ir.ops.reduce import reducer_identity
from ..ir.types import COMPLEXES, NUMPY_DTYPES
from ..libs.prim.matcher import segmented_scan_along
from ..libs.prim.routines import SCAN_REDUCERS, accumulator_type
from .cnp import elementwise as el
from .cnp.base import DEFAULT_INT, canonical_axis, convert
from .cnp.creation import arange, asarray, full
from .cnp import shaping as sh
from .cnp.histograms import segment_blocks
from .cnp.indexing_funcs import packed, result_size
from .dtypes import is_integer
from .eager import make_namespace_eager
from .indexing import scatter
from .lax_elementwise import static_int
from .lax_scans import Tracing
from .tracing import Tracer, constant, located

__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min", "run_length_encode", "segmented_scan"]


def segment_reduction(name: str, reducer: str, scatter_reduction: str):
    def segment(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
                bucket_size=None, mode=None):
        if mode not in (None, "drop", "fill"):
            raise NotImplementedError(located(f"{name}: mode {mode!r} is not supported (ids outside the "
                                              f"segments are dropped)"))
        data, ids = asarray(data), asarray(segment_ids)
        if not is_integer(ids.type.dtype):
            raise TracingValueError(located(f"{name}: segment_ids must be integers, got {ids.type}"))
        if data.ndim == 0 or ids.shape != data.shape[:1]:
            raise TracingValueError(located(f"{name}: segment_ids of shape {ids.shape} must have one id per "
                                            f"row of data, of shape {data.shape}"))
        if num_segments is None:
            if isinstance(segment_ids, Tracer):
                raise ConcretizationError(located(f"{name}: num_segments must be given for traced segment_ids"))
            num_segments = int(np.max(segment_ids, initial=-1)) + 1
        num_segments = static_int(num_segments, f"{name}: num_segments")
        if data.type.dtype not in COMPLEXES + ("bool",):
            return segment_blocks(data, ids, num_segments, reducer, bool(indices_are_sorted))
        identity = reducer_identity(reducer, NUMPY_DTYPES[data.type.dtype]).item()
        initial = full((num_segments,) + data.shape[1:], identity, data.type.dtype)
        ids = convert(ids, DEFAULT_INT)
        # Negative ids are out of bounds (JAX does not count them from the end): move them past the last.
        ids = el.where(el.less(ids, 0), num_segments, ids)
        return scatter(initial, ids, data, scatter_reduction, mode="drop")
    segment.__name__ = segment.__qualname__ = name
    segment.__doc__ = f"jax.ops.{name}: the {reducer} of data's rows per segment id (see the module docstring)."
    return segment


segment_sum = segment_reduction("segment_sum", "sum", "add")
segment_prod = segment_reduction("segment_prod", "prod", "mul")
segment_max = segment_reduction("segment_max", "max", "max")
segment_min = segment_reduction("segment_min", "min", "min")

def run_length_encode(x, *, size=None, fill_value=0):
    """The runs of equal consecutive elements of 1-d x as (values, i64 counts): see the module docstring."""
    a = asarray(x)
    if a.ndim != 1:
        raise TracingValueError(located(f"run_length_encode: x must be 1-d, got shape {a.shape}"))
    n = a.shape[0]
    size = result_size(size, "run_length_encode", [x], lambda: int(n > 0) + int(np.count_nonzero(
        np.asarray(x)[1:] != np.asarray(x)[:-1])))
    heads = sh.concatenate([full((min(n, 1),), True, "bool"),
                            el.not_equal(a[1:], a[:-1])], 0)
    values = packed(heads, a, size, fill_value)
    starts = packed(heads, arange(n), size + 1, n)          # run s spans [starts[s], starts[s + 1])
    counts = el.subtract(starts[1:], starts[:-1])
    return values, convert(counts, DEFAULT_INT)


def segmented_scan(x, heads, *, reducer="sum", exclusive=False, axis=0):
    """The scan of x along axis restarting at each true head flag: see the module docstring."""
    a, flags = asarray(x), asarray(heads)
    if reducer not in SCAN_REDUCERS:
        raise TracingValueError(located(f"segmented_scan: reducer must be one of {', '.join(SCAN_REDUCERS)}, "
                                        f"got {reducer!r}"))
    if a.type.dtype in COMPLEXES + ("bool",):
        raise NotImplementedError(located(f"segmented_scan of {a.type.dtype} data is not supported (real numbers)"))
    if reducer == "logaddexp" and is_integer(a.type.dtype):
        raise TracingValueError(located(f"segmented_scan: logaddexp scans floats, got {a.type}"))
    if flags.shape != a.shape or a.ndim == 0:
        raise TracingValueError(located(f"segmented_scan: heads of shape {flags.shape} must have x's shape "
                                        f"{a.shape}, of rank at least 1"))
    axis = canonical_axis(axis, a.ndim, "segmented_scan axis")
    acc = accumulator_type(a.type)
    identity = -np.inf if reducer == "logaddexp" else reducer_identity(reducer, NUMPY_DTYPES[acc]).item()
    return segmented_scan_along(Tracing, a, convert(flags, "bool"), reducer, axis, bool(exclusive),
                                constant(identity, acc))


# Called outside jit, each computes eagerly through the compiler (frontend/eager.py).
make_namespace_eager(globals(), __all__, host_only=set())
