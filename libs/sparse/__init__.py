"""libs/sparse: sparse matrices as rocSPARSE provides them (CSR, with COO, CSC, ELL and BSR through
conversions): SpMV, SpMM, SDDMM, SpGEMM, triangular solve, format conversions.

routines.py   the routines: attributes, shape rule, numpy reference.
common.py     what the kernels share (sizes as scalar parameters, a binary search, bounded index reads).
spmv.py       csrmv (nonzeros split evenly: load-balanced), bsrmv, ellmv, csrmm, sddmm.
convert.py    csr2coo, coo2csr, csr2ell, dense2csr_count, dense2csr.
bsr.py        csr2bsr_count, csr2bsr (block columns by repeated minimum searches), bsrmm.
spgemm.py     spgemm_bound, spgemm_symbolic, spgemm_numeric (hash tables per row).
csrsv.py      csrsv_levels, csrsv (level scheduling).
kernels.py    the solutions and the answers to the compiler's questions.
matcher.py    the dense CSR idioms: segment_sum of vals * x[cols] by row ids as csrmv, and (row_loop.py)
              a fori_loop over rows gathering each row as csrmv_ell (csr2ell + ellmv in one pass).
The frontend (frontend/sparse/) holds the formats and chains the calls; this file registers the
library (ir/ops/library.py's contract).
"""
from ...ir.ops.library import Library, register_library
from . import kernels, matcher, routines

LIBRARY = register_library(Library(
    name="sparse", routines=routines.ROUTINES, rules=tuple(matcher.RULES), select=kernels.select, emit=kernels.emit, explain=kernels.explain,
    cache_stamp=lambda: "1"))
