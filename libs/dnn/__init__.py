"""libs/dnn: convolutions, as MIOpen provides them.

routines.py   the routine conv_fwd (y = epilogue(conv(x, w) + bias)): attributes, shape rule, reference.
matcher.py    the pattern table turning the graph's convolutions, and the bias and activation after them,
              into `library_call dnn.conv_fwd`.
problem.py    a call's problem (sizes, layouts, MIOpen's key) and its sizes as kernel scalar parameters.
solvers.py    the solvers (gemm_1x1, implicit_gemm, depthwise, direct): applicability, cost model, pick.
direct.py, implicit_gemm.py   the solvers' kernels (gemm_1x1 is libs/blas's GEMM kernel).
kernels.py    the answers to the compiler's questions about a call.
This file registers the library (ir/ops/library.py's contract).
"""
from ...ir.ops.library import Library, register_library
from . import kernels, matcher, routines

LIBRARY = register_library(Library(
    name="dnn", routines=routines.ROUTINES, rules=tuple(matcher.RULES), select=kernels.select, emit=kernels.emit,
    explain=kernels.explain))
