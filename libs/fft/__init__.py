"""libs/fft: FFTs, as rocFFT provides them.

butterfly.py  the radix butterflies (2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 16) as kernel IR.
plan.py       plans: the tree of kernel nodes a transform of a length runs, and the plan cache.
routines.py   the routines (twiddles, stockham): attributes, shape rule, numpy reference.
matcher.py    the pattern table that turns the graph's fft ops into plans of `library_call`s.
generator.py  the kernels: the twiddle table and the Stockham autosort FFT of a plan node.
kernels.py    the answers to the compiler's questions about a call (solution, reason, kernel).
This file registers the library (ir/ops/library.py's contract).
"""
from ...ir.ops.library import Library, register_library
from . import kernels, matcher, routines

LIBRARY = register_library(Library(
    name="fft", routines=routines.ROUTINES, rules=tuple(matcher.RULES), select=kernels.select, emit=kernels.emit,
    explain=kernels.explain))
