"""cdnajit.sparse's arrays, as jax.experimental.sparse's: `BCSR` (data, indices, indptr) and `BCOO`
(data, indices[nse, 2]) of 2-D matrices; with batch or dense dimensions (n_batch, n_dense > 0,
read from the arrays' ranks as JAX does) they are batched.py's. Both are pytrees whose static
part, the shape, n_batch and n_dense (nse is the arrays' length), is part of a jit signature;
the arrays are data. Entries past a BCSR's indptr[-1] are padding (column 0, value 0),
as a fixed nse under jit leaves. Operations go through the sparse library (calls.py) inside and
outside jit; what needs a count known only from the data (fromdense without nse, sum_duplicates)
runs outside jit only, reading the count between compiled steps; a sparse-sparse product under
jit takes static upper bounds instead (spgemm_bounds), as JAX's.
"""
from __future__ import annotations

import numpy as np

from ...errors import ConcretizationError, TracingTypeError, TracingValueError
from .. import cnp
from ..pytree import register_pytree_node
from ..tracing import Tracer, located
from . import batched, calls, nsparse, products, structure
from .checked import record

FLOATS = ("float32", "float64")


def is_traced(*arrays) -> bool:
    return any(isinstance(a, Tracer) for a in arrays)


def value_dtype(*arrays, complex_ok=False) -> str:
    """The common float dtype of the values (integers compute in float64, as JAX's x64 promotes);
    complex only where the caller splits it into real products (`complex_ok`)."""
    name = np.result_type(*[np.dtype(str(a.dtype)) if isinstance(a, Tracer) else np.asarray(a).dtype
                            for a in arrays]).name
    if name.startswith("complex"):
        if complex_ok:
            return name
        raise NotImplementedError(located(f"cdnajit.sparse: complex values ({name}) are supported by fromdense, "
                                          "products (with dense arrays, SpGEMM, SDDMM, split into real ones) and the "
                                          "triangular solve only"))
    return name if name in FLOATS else "float64"


REAL_PART = {"complex64": "float32", "complex128": "float64"}


def as_dtype(x, dtype):
    return cnp.asarray(x).astype(dtype)


def index_dtype(*arrays) -> str:
    """int32 if every index array fits it by its dtype, else int64."""
    names = {np.dtype(str(a.dtype)).name for a in arrays}
    return "int32" if names <= {"int8", "int16", "int32", "uint8", "uint16"} else "int64"


def check_shape(what: str, shape) -> tuple[int, int]:
    shape = tuple(int(d) for d in shape)
    if len(shape) != 2 or min(shape) < 0:
        raise NotImplementedError(located(f"{what}: only 2-D matrices are supported (no batch or dense "
                                          f"dimensions), got shape {shape}"))
    return shape


def check_csr_values(what: str, data, indices, indptr, shape):
    """Clear errors for concrete CSR arrays that do not describe a matrix of `shape`."""
    m, n = shape
    if indptr.ndim != 1 or len(indptr) != m + 1:
        raise TracingValueError(located(f"{what}: indptr must have {m + 1} entries for {m} rows, got shape "
                                        f"{indptr.shape}"))
    if data.shape != indices.shape or data.ndim != 1:
        raise TracingValueError(located(f"{what}: data {data.shape} and indices {indices.shape} must be 1-D of "
                                        "one length"))
    if is_traced(data, indices, indptr):
        nse = indices.shape[0]
        record((indptr[0] != 0) | cnp.any(cnp.diff(indptr) < 0) | (indptr[-1] > nse),
               located(f"{what}: indptr must start at 0, never decrease and end at most at nse = {nse}"))
        used = cnp.arange(nse) < indptr[-1]
        record(cnp.any(used & ((indices < 0) | (indices >= n))),
               located(f"{what}: column indices must be in [0, {n})"))
        return
    if len(indptr) and (indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] > len(indices)):
        raise TracingValueError(located(f"{what}: indptr must start at 0, never decrease and end at most at "
                                        f"nse = {len(indices)}, got {np.asarray(indptr)[:8]}..."))
    used = indices[:int(indptr[-1])] if len(indptr) else indices
    if len(used) and (used.min() < 0 or used.max() >= n):
        raise TracingValueError(located(f"{what}: column indices must be in [0, {n}), got values from "
                                        f"{used.min()} to {used.max()}"))


class SparseMatrix:
    """What BCSR and BCOO share: a shape (*batch, m, n, *dense), values `data` (nse per batch element)."""
    __array_ufunc__ = None   # numpy's operators defer to ours (dense @ sparse)
    nse = property(lambda self: int(self.data.shape[self.n_batch]))
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: len(self.shape))
    batch_shape = property(lambda self: self.shape[:self.n_batch])
    sparse_shape = property(lambda self: self.shape[self.n_batch:self.n_batch + self.n_sparse])
    dense_shape = property(lambda self: self.shape[self.n_batch + self.n_sparse:])
    batched = property(lambda self: bool(self.n_batch or self.n_dense))
    n_sparse = 2   # a BCOO may have any number (nsparse.py)

    def check_axes(self, axes):
        if axes not in (None, (1, 0), [1, 0]):
            raise TracingValueError(located(f"{type(self).__name__}.transpose: axes of a matrix are (1, 0), got {axes}"))

    def __repr__(self):
        return (f"{type(self).__name__}({np.dtype(str(self.dtype)).name}{list(self.shape)}, nse={self.nse}, "
                f"n_batch={self.n_batch}, n_sparse={self.n_sparse}, n_dense={self.n_dense})")


class BCSR(SparseMatrix):
    """A CSR matrix: row r's entries data[indptr[r]:indptr[r + 1]] at columns indices[...]."""

    def __init__(self, args, *, shape):
        data, indices, indptr = args
        data, indices, indptr = (a if isinstance(a, Tracer) else np.asarray(a) for a in (data, indices, indptr))
        self.n_batch, self.n_dense = max(indptr.ndim - 1, 0), max(data.ndim - indptr.ndim, 0)
        self.shape = batched.layout("BCSR", shape, self.n_batch, self.n_dense) if self.batched else \
            check_shape("BCSR", shape)
        if self.batched:
            data, indices, indptr = batched.broadcast_stored((data, indices, indptr), self.batch_shape)
        # The library takes one index dtype per call, int32 or int64: other or mixed ones are widened.
        index = index_dtype(indices, indptr)
        self.data, self.indices, self.indptr = data, *(a if np.dtype(str(a.dtype)).name == index else a.astype(index)
                                                       for a in (indices, indptr))
        if self.batched:
            batched.check_bcsr(self)
        else:
            check_csr_values("BCSR", self.data, self.indices, self.indptr, self.shape)

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype="int32", n_batch=0, n_dense=0):
        if n_batch or n_dense:
            mat = mat if isinstance(mat, Tracer) else np.asarray(mat)
            return batched.fromdense(mat, nse, n_batch, n_dense, np.dtype(index_dtype).name)
        return fromdense_csr(mat, nse=nse, index_dtype=index_dtype)

    @classmethod
    def from_bcoo(cls, coo: "BCOO"):
        if coo.batched:
            return batched.to_bcsr(coo)
        if coo.shape[0] * coo.shape[1] == 0:   # every entry is padding: none is kept
            index = np.dtype(str(coo.indices.dtype)).name
            return cls((cnp.asarray(coo.data)[:0], cnp.zeros((0,), index), cnp.zeros((coo.shape[0] + 1,), index)),
                       shape=coo.shape)
        data, indices, indptr = calls.coo_to_csr(coo.data, coo.indices[:, 0], coo.indices[:, 1], m=coo.shape[0])
        return cls((data, indices, indptr), shape=coo.shape)

    def todense(self):
        if self.batched:
            return batched.todense(batched.to_bcoo(self))
        return calls.csr_todense(self.data, self.indices, self.indptr, columns=self.shape[1])

    def to_bcoo(self) -> "BCOO":
        if self.batched:
            return batched.to_bcoo(self)
        return BCOO((self.data, cnp.stack([calls.row_ids(self.indptr, nnz=self.nse), cnp.asarray(self.indices)],
                                          axis=1)), shape=self.shape)

    def transpose(self, axes=None):
        if self.batched:
            return batched.transpose(self, axes=None if axes is None else tuple(axes))
        self.check_axes(axes)
        data, indices, indptr = calls.csr_transposed(self.data, self.indices, self.indptr, columns=self.shape[1])
        return BCSR((data, indices, indptr), shape=self.shape[::-1])

    T = property(transpose)

    def to_ell(self, width=None):
        """(columns[m, width], values[m, width]): each row's entries in ELL slots, padded with column -1
        (ell_matvec's operands). width defaults to the longest row; under jit it must be given, and a
        longer row keeps its first `width` entries."""
        not_batched("to_ell", self)
        if width is None:
            concrete("to_ell without width", self.indptr)
            width = int(calls.row_lengths_max(self.indptr))
        return calls.csr_to_ell(self.data, self.indices, self.indptr, width=int(width))

    def to_bsr(self, blocksize, nnzb=None):
        """The BSR form (bsr.py's from_csr: sparse.csr2bsr_count, csr2bsr), as scipy's tobsr."""
        from .bsr import from_csr   # bsr.py builds on this module
        return from_csr(self, blocksize, nnzb)

    def __matmul__(self, other):
        if isinstance(other, SparseMatrix):
            if other.n_sparse != 2:
                return products.sparse_matmul(self, other)
            if self.batched or other.batched:
                return products.in_format(products.spgemm(self, other), self, other)
            return products.in_format(spgemm(self, other if isinstance(other, BCSR) else BCSR.from_bcoo(other)),
                                      self, other)
        if self.batched:
            return batched.matmul(self, other)
        return csr_dot_dense(self, other)

    def __rmatmul__(self, other):   # dense @ sparse = (sparse^T @ dense^T)^T
        if self.batched:
            return batched.rmatmul(other, self)
        return cnp.transpose(csr_dot_dense(self.transpose(), cnp.transpose(cnp.asarray(other))))

    def __mul__(self, other):
        if self.batched:
            return batched.multiplied(self, other)
        return BCSR((multiplied(self, other), self.indices, self.indptr), shape=self.shape)

    __rmul__ = __mul__

    def __neg__(self):
        return BCSR((-cnp.asarray(self.data), self.indices, self.indptr), shape=self.shape)

    def sum(self, axis=None):
        """JAX's BCOO sum (nsparse.summed): a BCOO of the other axes, a dense scalar over all of them."""
        return nsparse.summed(self, axis)


class BCOO(SparseMatrix):
    """A COO matrix: entry k is data[k] at (indices[k, 0], indices[k, 1]); duplicates add up."""

    def __init__(self, args, *, shape):
        data, indices = args
        self.data, self.indices = (a if isinstance(a, Tracer) else np.asarray(a) for a in (data, indices))
        self.n_sparse = nsparse.n_sparse_of(self.indices)
        if self.n_sparse != 2:
            nsparse.init(self, shape)
            return
        self.n_batch, self.n_dense = max(self.indices.ndim - 2, 0), max(self.data.ndim - self.indices.ndim + 1, 0)
        if self.batched:
            self.shape = batched.layout("BCOO", shape, self.n_batch, self.n_dense)
            self.data, self.indices = batched.broadcast_stored((self.data, self.indices), self.batch_shape)
            batched.check_bcoo(self)
            return
        self.shape = check_shape("BCOO", shape)
        if self.indices.ndim != 2 or self.indices.shape[1] != 2 or self.indices.shape[0] != self.data.shape[0]:
            raise TracingValueError(located(f"BCOO: indices must be (nse, 2) for data of shape {self.data.shape}, "
                                            f"got {self.indices.shape}"))
        if self.shape[0] * self.shape[1] == 0:
            return   # no index lies inside: every entry is padding (as batched.check_bcoo)
        if is_traced(self.indices):
            record(cnp.any((self.indices < 0) | (self.indices >= cnp.asarray(self.shape, self.indices.dtype))),
                   located(f"BCOO: indices must lie in the shape {self.shape}"))
        elif len(self.indices):
            bad = (self.indices < 0) | (self.indices >= np.array(self.shape))
            if bad.any():
                k = int(np.argmax(bad.any(axis=1)))
                raise TracingValueError(located(f"BCOO: index {tuple(self.indices[k].tolist())} of entry {k} is outside the "
                                                f"shape {self.shape}"))

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype="int32", n_batch=0, n_dense=0):
        if np.ndim(mat) - n_batch - n_dense != 2:
            return nsparse.fromdense(mat, nse, n_batch, n_dense, np.dtype(index_dtype).name)
        return BCSR.fromdense(mat, nse=nse, index_dtype=index_dtype, n_batch=n_batch, n_dense=n_dense).to_bcoo()

    def to_bcsr(self) -> BCSR:
        if self.n_sparse != 2:
            raise NotImplementedError(located(f"BCOO.to_bcsr: a BCSR holds two sparse dimensions, this array "
                                              f"{self.n_sparse} (shape {self.shape})"))
        return BCSR.from_bcoo(self)

    def todense(self):
        if self.n_sparse != 2:
            return nsparse.todense(self)
        if self.batched:
            return batched.todense(self)
        return self.to_bcsr().todense()

    def transpose(self, axes=None):
        if self.n_sparse != 2 or self.batched:
            return nsparse.transpose(self, axes=None if axes is None else tuple(axes))
        self.check_axes(axes)
        return BCOO((self.data, cnp.asarray(self.indices)[:, ::-1]), shape=self.shape[::-1])

    T = property(transpose)

    def reshape(self, *shape):
        """The same entries in an array of another shape of as many elements (row-major order; batch,
        sparse and dense dimensions each among themselves, as JAX's bcoo_reshape: nsparse.reshaped)."""
        shape = tuple(shape[0]) if len(shape) == 1 and np.ndim(shape[0]) == 1 else tuple(shape)
        return nsparse.reshaped(self, shape)

    def __matmul__(self, other):
        if self.n_sparse != 2:
            return nsparse.matmul(self, other)
        if isinstance(other, SparseMatrix):   # BCOO unless both are BCSR (BCSR.__matmul__)
            return products.in_format(self.to_bcsr() @ other, self, other)
        return self.to_bcsr() @ other

    def __rmatmul__(self, other):
        if self.n_sparse != 2:
            return nsparse.rmatmul(other, self)
        return other @ self.to_bcsr()

    def __mul__(self, other):
        if np.ndim(other) == 0 and not isinstance(other, Tracer):
            return BCOO((cnp.asarray(self.data) * other, self.indices), shape=self.shape)
        return BCOO((nsparse.scaled_values(self, other), self.indices), shape=self.shape)

    __rmul__ = __mul__

    def sum(self, axis=None):
        """JAX's sum (nsparse.summed): a BCOO of the other axes, a dense scalar over all of them."""
        return nsparse.summed(self, axis)

    def sum_duplicates(self, nse=None):
        if self.n_sparse != 2:
            return nsparse.sum_duplicates(self, nse=nse)
        return sum_duplicates(self, nse=nse)


# The TreeDef holds (shape, n_batch, n_dense): static in a jit signature, as JAX's aux data.
register_pytree_node(BCSR, lambda x: ((x.data, x.indices, x.indptr), (x.shape, x.n_batch, x.n_dense)),
                     lambda static, children: BCSR(tuple(children), shape=static[0]))
register_pytree_node(BCOO, lambda x: ((x.data, x.indices), (x.shape, x.n_batch, x.n_dense)),
                     lambda static, children: BCOO(tuple(children), shape=static[0]))


def not_batched(what: str, *arrays):
    if any(a.batched for a in arrays):
        raise NotImplementedError(located(f"{what}: not supported for batched sparse arrays (n_batch or n_dense > 0; "
                                          "supported: fromdense, todense, @ with a dense or sparse array, "
                                          "bcoo_dot_general, transpose, sum, reshape, sum_duplicates, * dense or "
                                          "scalar)"))


def check_same_shape(what, shape, other):
    if tuple(shape) != tuple(other):
        raise TracingValueError(located(f"{what}: shapes {tuple(shape)} and {tuple(other)} differ"))


def csr_dot_dense(a: BCSR, x):
    x = cnp.asarray(x)
    m, n = a.shape
    if x.ndim not in (1, 2) or x.shape[0] != n:
        raise TracingValueError(located(f"sparse @ dense: a matrix of shape {a.shape} times an array of shape "
                                        f"{x.shape} (its first dimension must be {n})"))
    dtype = value_dtype(a.data, x, complex_ok=True)
    if dtype in REAL_PART:
        return complex_product(a, as_dtype(x, dtype), dtype)
    data, x = as_dtype(a.data, dtype), as_dtype(x, dtype)
    if x.ndim == 1:
        return calls.csr_matvec(data, a.indices, a.indptr, x)
    return calls.csr_matmat(data, a.indices, a.indptr, x)


def complex_product(a: BCSR, x, dtype: str):
    """A complex product as four real ones on A's structure: (Ar + i Ai)(xr + i xi) =
    (Ar xr - Ai xi) + i (Ar xi + Ai xr)."""
    data = as_dtype(a.data, dtype)
    real, imag = (BCSR((part(data), a.indices, a.indptr), shape=a.shape) for part in (cnp.real, cnp.imag))
    xr, xi = cnp.real(x), cnp.imag(x)
    return as_dtype(csr_dot_dense(real, xr) - csr_dot_dense(imag, xi), dtype) + \
        1j * as_dtype(csr_dot_dense(real, xi) + csr_dot_dense(imag, xr), dtype)


def multiplied(a: BCSR, other):
    """a's values times a scalar, or times a dense matrix's entries at a's nonzeros."""
    other = cnp.asarray(other)
    if other.ndim == 0:
        return cnp.asarray(a.data) * other
    check_same_shape("BCSR * dense", a.shape, other.shape)
    rows = calls.row_ids(a.indptr, nnz=a.nse)
    return cnp.asarray(a.data) * other[rows, cnp.asarray(a.indices)]


def fromdense_csr(mat, *, nse=None, index_dtype="int32") -> BCSR:
    """The CSR form of a dense matrix: its nonzeros row by row. Under jit nse must be given (entries
    past the matrix's nonzeros are padding; a matrix with more than nse nonzeros keeps the first nse)."""
    mat = mat if isinstance(mat, Tracer) else np.asarray(mat)
    check_shape("fromdense", mat.shape)
    index = np.dtype(index_dtype).name
    if index not in ("int32", "int64"):
        raise TracingTypeError(located(f"fromdense: index_dtype must be int32 or int64, got {index}"))
    if np.dtype(str(mat.dtype)).kind == "c":   # complex: the pattern through a float one, as batched.fromdense
        return batched.fromdense(mat, nse, 0, 0, index)
    if str(np.dtype(str(mat.dtype))) not in FLOATS:
        mat = cnp.asarray(mat).astype(value_dtype(mat))
    indptr = calls.dense_row_counts(mat, index_dtype=index)
    if nse is None:
        if isinstance(indptr, Tracer):
            raise ConcretizationError(located("fromdense under jit needs nse (the number of stored entries) "
                                              "given statically, as jax.experimental.sparse's fromdense"))
        nse = int(np.asarray(indptr)[-1])
    indices, data = calls.dense_to_csr(mat, indptr, nse=int(nse))
    return BCSR((data, indices, indptr), shape=mat.shape)


def concrete(what: str, *arrays):
    if is_traced(*arrays):
        raise ConcretizationError(located(
            f"{what}: the result's number of entries depends on the values, so it runs outside jit only"))


def spgemm(a: BCSR, b: BCSR, bounds=None) -> BCSR:
    """A B for two CSR matrices (rocSPARSE's csrgemm): the hash tables' offsets, the symbolic pass
    (C's indptr), the numeric pass (C's columns, unsorted within a row as scipy's, and values).
    Complex values: four real numeric passes on the one structure (its column order depends on the
    structure only). Outside jit the tables and C have exactly the sizes the data gives (read between
    the passes); under jit static bounds (`bounds`, by default `spgemm_bounds`), C padded as a fixed
    nse leaves it."""
    if a.shape[1] != b.shape[0]:
        raise TracingValueError(located(f"sparse @ sparse: shapes {a.shape} and {b.shape} do not chain"))
    traced = is_traced(a.data, a.indices, a.indptr, b.data, b.indices, b.indptr)
    lib = cnp if traced else np
    dtype = value_dtype(a.data, b.data, complex_ok=True)
    index = index_dtype(a.indices, a.indptr, b.indices, b.indptr)
    a_indices, a_indptr, b_indices, b_indptr = (lib.asarray(x).astype(index) for x in
                                                (a.indices, a.indptr, b.indices, b.indptr))
    table_ptr = calls.spgemm_tables(a_indices, a_indptr, b_indptr)
    table, nse = (bounds or spgemm_bounds(a, b)) if traced else (int(table_ptr[-1]), None)
    c_indptr = calls.spgemm_symbolic(a_indices, a_indptr, b_indices, b_indptr, table_ptr, table=table)
    nse = int(c_indptr[-1]) if nse is None else nse

    def numeric(a_data, b_data):
        return calls.spgemm_numeric(a_data, a_indices, a_indptr, b_data, b_indices, b_indptr, table_ptr, c_indptr,
                                    nse=nse, table=table)

    a_data, b_data = (lib.asarray(x).astype(dtype) for x in (a.data, b.data))
    if dtype in REAL_PART:
        (ar, ai), (br, bi) = ((cnp.real(x), cnp.imag(x)) for x in (a_data, b_data))
        (rr, indices), (ii, _), (ri, _), (ir, _) = (numeric(x, y) for x, y in ((ar, br), (ai, bi), (ar, bi), (ai, br)))
        data = as_dtype(as_dtype(rr, dtype) - ii, dtype) + 1j * as_dtype(as_dtype(ri, dtype) + ir, dtype)
        return BCSR((as_dtype(data, dtype), indices, c_indptr), shape=(a.shape[0], b.shape[1]))
    data, indices = numeric(a_data, b_data)
    return BCSR((data, indices, c_indptr), shape=(a.shape[0], b.shape[1]))


def spgemm_bounds(a: BCSR, b: BCSR) -> tuple[int, int]:
    """(table slots, C's nse) known before the values, for SpGEMM under jit. Row r's products number
    p_r <= (its entries) x (b's nse), so all rows' products at most a.nse b.nse; its table is the least
    power of two of at least 2 p_r slots, so at most 4 p_r; C has at most min(a.nse b.nse, m n)
    distinct entries (JAX's bcoo_spdot_general takes a.nse b.nse)."""
    products = a.nse * b.nse
    return 4 * products, min(products, a.shape[0] * b.shape[1])


def sum_duplicates(coo: BCOO, nse=None) -> BCOO:
    """Entries sorted by (row, column), duplicates summed (scipy's sum_duplicates). Outside jit the
    result has exactly the distinct entries; under jit nse must be given (padding: index (0, 0), 0)."""
    if coo.batched:
        return structure.sum_duplicates(coo, nse)
    indices = cnp.asarray(coo.indices)
    data, rows, columns, slot = calls.sorted_entries(coo.data, indices[:, 0], indices[:, 1])
    if nse is None:
        concrete("sum_duplicates without nse", slot)
        nse = int(slot[-1]) + 1 if len(slot) else 0
    out, out_indices = calls.merged_entries(data, rows, columns, slot, nse=int(nse))
    return BCOO((out, out_indices), shape=coo.shape)


def spsolve_triangular(a: BCSR, b, lower=True, unit_diagonal=False):
    """x with T x = b for the lower (or upper) triangle of a (scipy.sparse.linalg.spsolve_triangular):
    rocSPARSE's csrsv, level-scheduled. b is a vector; f32, f64, c64 or c128 values."""
    b = cnp.asarray(b)
    if a.shape[0] != a.shape[1] or b.shape != (a.shape[0],):
        raise TracingValueError(located(f"spsolve_triangular: a square matrix and a vector of its size, got "
                                        f"{a.shape} and {b.shape}"))
    dtype = value_dtype(a.data, b, complex_ok=True)
    return calls.csr_triangular_solve(as_dtype(a.data, dtype), a.indices, a.indptr, as_dtype(b, dtype),
                                      lower=bool(lower), unit_diagonal=bool(unit_diagonal))


def sddmm(pattern: BCSR, a, b) -> BCSR:
    """(a @ b) at pattern's nonzeros, as a BCSR of pattern's structure (jax.experimental.sparse's
    bcoo_dot_general_sampled; rocSPARSE's sddmm with alpha 1, beta 0)."""
    a, b = cnp.asarray(a), cnp.asarray(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or (a.shape[0], b.shape[1]) != pattern.shape:
        raise TracingValueError(located(f"sddmm: a {a.shape} @ b {b.shape} must have the pattern's shape "
                                        f"{pattern.shape}"))
    dtype = value_dtype(a, b, complex_ok=True)
    a, b = as_dtype(a, dtype), as_dtype(b, dtype)
    sampled = lambda x, y: calls.csr_sampled(pattern.indices, pattern.indptr, x, cnp.transpose(y))
    if dtype in REAL_PART:   # four real samples: (ar br - ai bi) + i (ar bi + ai br)
        (ar, ai), (br, bi) = ((cnp.real(x), cnp.imag(x)) for x in (a, b))
        values = as_dtype(as_dtype(sampled(ar, br) - sampled(ai, bi), dtype) +
                          1j * as_dtype(sampled(ar, bi) + sampled(ai, br), dtype), dtype)
    else:
        values = sampled(a, b)
    return BCSR((values, pattern.indices, pattern.indptr), shape=pattern.shape)
