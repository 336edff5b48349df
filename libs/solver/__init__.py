"""libs/solver: dense factorizations and solves, as rocSOLVER provides them.

routines.py   the routines (getrf, getrs, getri, potrf, potrs, trsm, trtri, laswp, lapmr, geqrf, orgqr, syev,
              syevj, gesvdj, gebal, geev, trevc): attributes, shape rule, numpy reference.
kernels.py    their kernels (one work-item per matrix: the batched small-matrix solution) and the
              answers to the compiler's questions about a call.
bidiagonal.py, bidiagonal_kernels.py   gesvd's routines (gebrd, bdsqr, lasr) and their kernels.
tridiagonal.py, tridiagonal_kernels.py   eigh's routines for large matrices (sytrd, latrd, steqr) and their kernels.
divide.py, divide_kernels.py   divide and conquer's merge (laed1), the tridiagonal eigenvectors of eigh.
divide_svd.py, divide_svd_kernels.py   divide and conquer's bidiagonal merge (lasd1), the bidiagonal
              singular vectors of svd.
entries.py    real and complex matrix entries as the kernels compute with them.
The frontend (frontend/cnp/linalg*.py) emits the calls: a factorization of a large matrix is a
sequence of panel calls and libs/blas GEMMs it writes out, as rocSOLVER's host code does.
This file registers the library (ir/ops/library.py's contract).
"""
from ...ir.ops.library import Library, register_library
from . import bidiagonal, bidiagonal_kernels, divide, divide_kernels, divide_svd, divide_svd_kernels, kernels, \
    routines, tridiagonal, tridiagonal_kernels

ROUTINES = {**routines.ROUTINES, **bidiagonal.ROUTINES, **tridiagonal.ROUTINES, **divide.ROUTINES,
            **divide_svd.ROUTINES}
KERNELS = {**kernels.KERNELS, **bidiagonal_kernels.KERNELS, **tridiagonal_kernels.KERNELS,
           **divide_kernels.KERNELS, **divide_svd_kernels.KERNELS}


def emit(op, name, target):
    return KERNELS[op.attrs["routine"]](op, name)


LIBRARY = register_library(Library(
    name="solver", routines=ROUTINES, select=kernels.select, emit=emit, explain=kernels.explain,
    cache_stamp=lambda: "1"))
