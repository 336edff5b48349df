"""libs/blas: GEMMs, as rocBLAS and hipBLASLt provide them.

matcher.py holds the pattern table that turns the graph's contractions (and the scaling, C term,
bias and activation around them) into `library_call` ops (ir/ops/library.py); the pass that runs
it is passes/match_libraries.py.
"""
