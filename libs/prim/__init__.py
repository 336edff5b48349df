"""libs/prim: device-wide parallel primitives, as rocPRIM and hipCUB provide them.

routines.py   the routines (radix_histogram, radix_scatter, radix_sort_rows, run_totals, scan,
              scan_runs, bin_counts, segment_reduce, select_runs, top_k_rows) on rows: attributes,
              shape rule, numpy reference.
matcher.py    the pattern table: the graph's sorts (any number of keys) become LSD radix sorts, its
              cumulative ops scans (reduce-then-scan for few long rows); `scan_along` also serves
              lax.cumlogsumexp, which the frontend calls directly.
radix.py      the radix sort's kernels (digit histogram, stable scatter, whole rows); scan.py the
              scans'; histogram.py bin_counts'; segments.py the segmented reduction's (cdnajit.ops);
              select.py stream compaction's (nonzero, compress, unique with size=); topk.py lax.top_k's.
kernels.py    the answers to the compiler's questions about a call (solution, reason, kernel).
This file registers the library (ir/ops/library.py's contract).
"""
from ...ir.ops.library import Library, register_library
from . import kernels, matcher, routines

LIBRARY = register_library(Library(
    name="prim", routines=routines.ROUTINES, rules=tuple(matcher.RULES), select=kernels.select, emit=kernels.emit,
    explain=kernels.explain))
