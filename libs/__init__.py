"""libs: the built-in libraries (see DESIGN.md, "Libraries").

A library is a pattern table that matches graph ops into `library_call`s (ir/ops/library.py), run
by passes/match_libraries.py, plus (later) its solutions, heuristic and kernel generator.
Today: blas/ (GEMM).
"""
