"""cdnajit.sparse: jax.experimental.sparse's BCOO and BCSR (batched too), their operations, and scipy.sparse-
style constructors, on the sparse library (libs/sparse). See formats.py."""
from __future__ import annotations

import numpy as np

from ...errors import TracingValueError
from .. import cnp
from ..tracing import Tracer
from . import calls, products
from .bsr import BSR
from .checked import checked
from .sparsify import sparsify
from .formats import BCOO, BCSR, check_shape, sddmm, spsolve_triangular, sum_duplicates

__all__ = ["BCOO", "BCSR", "fromdense", "todense", "bcoo_fromdense", "bcoo_todense", "bcsr_fromdense",
           "bcsr_todense", "bcoo_dot_general", "bcoo_transpose", "bcoo_sum_duplicates", "csr_matrix", "coo_matrix",
           "csc_matrix", "sddmm", "spsolve_triangular", "ell_matvec", "sum_duplicates", "bcoo_reshape", "checked",
           "sparsify", "bsr_matvec", "BSR", "bsr_matrix"]

ell_matvec = calls.ell_matvec
bsr_matvec = calls.bsr_matvec


def fromdense(mat, *, nse=None, index_dtype="int32", n_batch=0, n_dense=0) -> BCOO:
    """jax.experimental.sparse.fromdense: a BCOO of mat's nonzeros (nse needed under jit); with n_batch
    leading batch and n_dense trailing dense dimensions around the sparse ones (any number of them:
    mat.ndim - n_batch - n_dense)."""
    return BCOO.fromdense(mat, nse=nse, index_dtype=index_dtype, n_batch=n_batch, n_dense=n_dense)


bcoo_fromdense = fromdense


def bcsr_fromdense(mat, *, nse=None, index_dtype="int32", n_batch=0, n_dense=0) -> BCSR:
    return BCSR.fromdense(mat, nse=nse, index_dtype=index_dtype, n_batch=n_batch, n_dense=n_dense)


def todense(arr):
    return arr.todense() if isinstance(arr, (BCOO, BCSR)) else arr


bcoo_todense = bcsr_todense = todense


def bcoo_transpose(mat: BCOO, *, permutation):
    return mat.transpose(tuple(permutation))


def bcoo_sum_duplicates(mat: BCOO, nse=None) -> BCOO:
    return sum_duplicates(mat, nse=nse)


def bcoo_dot_general(lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
    """lax.dot_general with a sparse operand (products.dot_general)."""
    return products.dot_general(lhs, rhs, dimension_numbers)


def csr_matrix(arg, shape=None) -> BCSR:
    """scipy.sparse.csr_matrix((data, indices, indptr), shape) as a BCSR; a dense matrix is converted."""
    if isinstance(arg, tuple) and len(arg) == 3:
        if shape is None:
            raise ValueError("csr_matrix((data, indices, indptr)) needs shape")
        return BCSR(arg, shape=shape)
    return bcsr_fromdense(arg)


def csc_matrix(arg, shape=None) -> BCSR:
    """scipy.sparse.csc_matrix((data, indices, indptr), shape): column c's entries data[indptr[c]:
    indptr[c + 1]] at rows indices[...], converted to a BCSR (the transpose's CSR, transposed)."""
    if isinstance(arg, tuple) and len(arg) == 3:
        if shape is None:
            raise ValueError("csc_matrix((data, indices, indptr)) needs shape")
        m, n = check_shape("csc_matrix", shape)
        try:
            transposed = BCSR(arg, shape=(n, m))
        except TracingValueError as error:   # its message speaks of the transpose's rows and columns
            raise TracingValueError(f"csc_matrix of shape {(m, n)}, read as the CSR arrays of its transpose "
                                    f"(shape {(n, m)}: indptr per column, indices are row indices): {error}") from None
        return transposed.transpose()
    return bcsr_fromdense(arg)


def bsr_matrix(arg, shape=None, blocksize=None) -> BSR:
    """scipy.sparse.bsr_matrix((data, indices, indptr), shape, blocksize) as a BSR; a BCSR, BCOO or dense
    matrix is converted (sparse.csr2bsr; blocksize needed, outside jit: the block count depends on
    the values)."""
    if isinstance(arg, tuple) and len(arg) == 3:
        if shape is None:
            raise ValueError("bsr_matrix((data, indices, indptr)) needs shape")
        return BSR(arg, shape=shape, blocksize=blocksize)
    if blocksize is None:
        raise ValueError("bsr_matrix of a matrix needs blocksize")
    csr = arg.to_bcsr() if isinstance(arg, BCOO) else arg if isinstance(arg, BCSR) else bcsr_fromdense(arg)
    return csr.to_bsr(blocksize)


def coo_matrix(arg, shape=None) -> BCOO:
    """scipy.sparse.coo_matrix((data, (row, col)), shape) as a BCOO (duplicates add up)."""
    if isinstance(arg, tuple) and len(arg) == 2 and isinstance(arg[1], tuple):
        data, (row, col) = arg
        if shape is None:
            raise ValueError("coo_matrix((data, (row, col))) needs shape")
        traced = isinstance(row, Tracer) or isinstance(col, Tracer)
        indices = (cnp.stack if traced else np.stack)([row, col], axis=1)
        return BCOO((data, indices), shape=shape)
    return fromdense(arg)


def bcoo_reshape(mat: BCOO, *, new_sizes):
    return mat.reshape(tuple(new_sizes))
