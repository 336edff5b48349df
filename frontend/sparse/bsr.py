"""scipy.sparse's bsr_matrix as a pytree (`BSR`): block row i's R x C blocks data[indptr[i]:indptr[i + 1]]
at block columns indices[...] (columns C indices[p] ... C indices[p] + C - 1). The shape is static
(in the TreeDef), the arrays are data. `@` with a vector or a matrix runs sparse.bsrmv / bsrmm;
`BCSR.to_bsr` and `bsr_matrix(csr or dense, blocksize=...)` convert with sparse.csr2bsr_count and
csr2bsr (blocks in block-column order, duplicates summed; under jit the block count nnzb must be
given, as fromdense's nse)."""
from __future__ import annotations

import numpy as np

from ...errors import ConcretizationError, TracingValueError
from .. import cnp
from ..pytree import register_pytree_node
from ..tracing import Tracer, located
from . import calls, formats
from .checked import record


class BSR(formats.SparseMatrix):
    n_batch = n_dense = 0

    def __init__(self, args, *, shape, blocksize=None):
        data, indices, indptr = (a if isinstance(a, Tracer) else np.asarray(a) for a in args)
        self.shape = formats.check_shape("BSR", shape)
        if data.ndim != 3 or indices.ndim != 1 or indptr.ndim != 1 or data.shape[0] != indices.shape[0]:
            raise TracingValueError(located(f"BSR: data[blocks, R, C], indices[blocks] and indptr[mb + 1], got shapes "
                                            f"{tuple(data.shape)}, {tuple(indices.shape)}, {tuple(indptr.shape)}"))
        rows, width = int(data.shape[1]), int(data.shape[2])
        if blocksize is not None and tuple(blocksize) != (rows, width):
            raise TracingValueError(located(f"BSR: blocksize {tuple(blocksize)} differs from data's blocks "
                                            f"{(rows, width)}"))
        m, n = self.shape
        if rows * width == 0 or m != (indptr.shape[0] - 1) * rows or n % width:
            raise TracingValueError(located(f"BSR: shape {self.shape} must be {indptr.shape[0] - 1} block rows of "
                                            f"{rows} rows by a multiple of {width} columns (blocks {(rows, width)})"))
        index = formats.index_dtype(indices, indptr)
        self.data, self.indices, self.indptr = data, *(a if np.dtype(str(a.dtype)).name == index else a.astype(index)
                                                       for a in (indices, indptr))
        self.check_indices()

    blocksize = property(lambda self: tuple(int(d) for d in self.data.shape[1:]))

    def check_indices(self):
        blocks, block_columns = self.data.shape[0], self.shape[1] // self.blocksize[1]
        lib = cnp if formats.is_traced(self.indices, self.indptr) else np
        indptr = self.indptr
        bad_ptr = (indptr[0] != 0) | lib.any(indptr[1:] < indptr[:-1]) | (indptr[-1] > blocks)
        used = lib.arange(blocks) < indptr[-1]
        bad_column = lib.any(used & ((self.indices < 0) | (self.indices >= block_columns)))
        messages = (f"BSR: indptr must start at 0, never decrease and end at most at {blocks} blocks",
                    f"BSR: block column indices must be in [0, {block_columns})")
        for bad, message in zip((bad_ptr, bad_column), messages):
            if lib is cnp:
                record(bad, located(message))
            elif bad:
                raise TracingValueError(located(message))

    def todense(self):
        return calls.bsr_todense(self.data, self.indices, self.indptr, columns=self.shape[1])

    def __matmul__(self, other):
        if isinstance(other, formats.SparseMatrix):
            raise NotImplementedError(located("BSR @ sparse: not supported (BSR times dense vectors and matrices)"))
        x = cnp.asarray(other)
        if x.ndim not in (1, 2) or x.shape[0] != self.shape[1]:
            raise TracingValueError(located(f"BSR @ dense: a matrix of shape {self.shape} times an array of shape "
                                            f"{tuple(x.shape)} (its first dimension must be {self.shape[1]})"))
        dtype = formats.value_dtype(self.data, x)
        data, x = formats.as_dtype(self.data, dtype), formats.as_dtype(x, dtype)
        call = calls.bsr_matvec if x.ndim == 1 else calls.bsr_matmat
        return call(data, self.indices, self.indptr, x)


register_pytree_node(BSR, lambda x: ((x.data, x.indices, x.indptr), x.shape),
                     lambda shape, children: BSR(tuple(children), shape=shape))


def from_csr(a: formats.BCSR, blocksize, nnzb=None) -> BSR:
    """a's blocks (rocSPARSE's csr2bsr_nnz, then csr2bsr). The shape must be a multiple of blocksize
    (scipy's rule); under jit nnzb (the block count) must be given; a matrix with more blocks keeps
    its first nnzb."""
    formats.not_batched("to_bsr", a)
    rows, width = (int(d) for d in blocksize)
    m, n = a.shape
    if rows <= 0 or width <= 0 or m % rows or n % width:
        raise TracingValueError(located(f"to_bsr: shape {a.shape} is not a multiple of blocksize {(rows, width)}"))
    indptr = calls.bsr_indptr(a.indices, a.indptr, block_rows=rows, block_columns=width, columns=n)
    if nnzb is None:
        if isinstance(indptr, Tracer):
            raise ConcretizationError(located("to_bsr under jit needs nnzb (the number of blocks) given statically, "
                                              "as fromdense needs nse"))
        nnzb = int(np.asarray(indptr)[-1])
    indptr = cnp.minimum(indptr, nnzb) if isinstance(indptr, Tracer) else np.minimum(np.asarray(indptr), nnzb)
    dtype = formats.value_dtype(a.data)
    indices, data = calls.csr_to_bsr(formats.as_dtype(a.data, dtype), a.indices, a.indptr, indptr, block_rows=rows,
                                     block_columns=width, columns=n, nnzb=int(nnzb))
    return BSR((data, indices, indptr), shape=a.shape)
