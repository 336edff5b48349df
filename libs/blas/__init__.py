"""libs/blas: GEMMs, as rocBLAS and hipBLASLt provide them.

routines.py   the routines (gemm, gemv, batched_gemm, strided_batched_gemm): attributes, shape rule,
              numpy reference.
matcher.py    the pattern table that turns the graph's contractions (and the scaling, C term, bias and
              activation around them) into `library_call` ops.
solutions.py  the solution pool (Tensile-like macro tiles on MFMA instructions); heuristic.py picks
              one per problem by a model, tuning.py remembers what the find mode
              (runtime/blas_tune.py, `cj.libs.blas.tune`) measured.
generator.py  the kernel of a solution; kernels.py answers the compiler's questions about a call.
This file registers the library (ir/ops/library.py's contract).
"""
from ...ir.ops.library import Library, register_library
from . import kernels, matcher, routines, tuning

LIBRARY = register_library(Library(
    name="blas", routines=routines.ROUTINES, rules=tuple(matcher.RULES), select=kernels.select, emit=kernels.emit,
    explain=kernels.explain, cache_stamp=tuning.database_stamp))
