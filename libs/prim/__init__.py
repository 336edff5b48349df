"""libs/prim: device-wide parallel primitives, as rocPRIM and hipCUB provide them.

routines.py   the routines (radix_histogram, radix_scatter, run_totals, scan, scan_runs) on rows:
              attributes, shape rule, numpy reference.
matcher.py    the pattern table: the graph's sort (one key) becomes an LSD radix sort, its
              cumulative ops reduce-then-scan.
radix.py      the radix sort's kernels (digit histogram, stable scatter); scan.py the scans'.
kernels.py    the answers to the compiler's questions about a call (solution, reason, kernel).
This file registers the library (ir/ops/library.py's contract).
"""
from ...ir.ops.library import Library, register_library
from . import kernels, matcher, routines

LIBRARY = register_library(Library(
    name="prim", routines=routines.ROUTINES, rules=tuple(matcher.RULES), select=kernels.select, emit=kernels.emit,
    explain=kernels.explain))
