"""libs/prim: device-wide parallel primitives, as rocPRIM and hipCUB provide them.

routines.py   the routines (radix_histogram, radix_scatter, radix_sort_rows, run_totals, scan,
              scan_runs, lookback_init, lookback_scan, segmented_run_totals, segmented_scan_runs,
              bin_counts, segment_reduce, segment_reduce_sorted, select_runs, top_k_rows,
              merge_search) on rows: attributes, shape rule, numpy reference.
matcher.py    the pattern table: the graph's sorts (any number of keys) become LSD radix sorts, its
              cumulative ops scans (the single-pass scan for few long rows); `scan_along` also serves
              lax.cumlogsumexp, which the frontend calls directly, and `segmented_scan_along`
              cdnajit.ops.segmented_scan.
radix.py      the radix sort's kernels (digit histogram, stable scatter, whole rows); scan.py the
              scans' (segmented too); lookback.py the single-pass scan's (decoupled look-back);
              histogram.py bin_counts'; segments.py the segmented reductions' (cdnajit.ops);
              select.py stream compaction's (nonzero, compress, unique with size=; ballots); topk.py
              lax.top_k's; search.py the merge path's (searchsorted of many queries).
kernels.py    the answers to the compiler's questions about a call (solution, reason, kernel).
This file registers the library (ir/ops/library.py's contract).
"""
from ...ir.ops.library import Library, register_library
from . import kernels, matcher, routines

LIBRARY = register_library(Library(
    name="prim", routines=routines.ROUTINES, rules=tuple(matcher.RULES), select=kernels.select, emit=kernels.emit,
    explain=kernels.explain))
