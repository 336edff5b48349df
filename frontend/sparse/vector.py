"""1-D sparse vectors: a BCOO of one sparse dimension (n_sparse = 1), as jax.experimental.sparse's
BCOO of shape (n,): data (nse,) and indices (nse, 1), entry k data[k] at indices[k, 0],
duplicates adding up. Each operation views the vector as a 1 x n matrix (`as_row`, row 0) or an
n x 1 one (`as_column`), takes the matrix's path (its sparse library calls), and reshapes the
result back. Batched vectors, dense dimensions and the operations not listed in BCOO (reshape,
to_bcsr, sum_duplicates, sparse @ sparse, bcoo_dot_general) raise NotImplementedError."""
from __future__ import annotations

import numpy as np

from ...errors import TracingValueError
from .. import cnp
from ..tracing import Tracer, located
from .checked import record


def is_vector(shape, indices) -> bool:
    return len(tuple(shape)) == 1 and np.ndim(indices) == 2 and indices.shape[1] == 1


def check(v):
    """Shapes of a vector's arrays and (concrete, or recorded for cs.checked) its indices in range."""
    (n,) = v.shape
    if n < 0 or v.data.ndim != 1 or v.indices.shape[0] != v.data.shape[0]:
        raise NotImplementedError(located(
            f"BCOO: a sparse vector of shape {v.shape} takes data (nse,) and indices (nse, 1) (no batch or dense "
            f"dimensions), got data {v.data.shape} and indices {v.indices.shape}"))
    if isinstance(v.indices, Tracer):
        record(cnp.any((v.indices < 0) | (v.indices >= n)), located(f"BCOO: indices must lie in the shape {v.shape}"))
    elif len(v.indices) and ((v.indices < 0) | (v.indices >= n)).any():
        k = int(np.argmax(((v.indices < 0) | (v.indices >= n))[:, 0]))
        raise TracingValueError(located(f"BCOO: index {int(v.indices[k, 0])} of entry {k} is outside the shape "
                                        f"{v.shape}"))


def paired(v, at_row: bool):
    zeros = cnp.zeros(v.indices.shape, v.indices.dtype)
    parts = [zeros, v.indices] if at_row else [v.indices, zeros]
    return type(v)((v.data, cnp.concatenate(parts, axis=1)), shape=(1, v.shape[0]) if at_row else (v.shape[0], 1))


def as_row(v):
    return paired(v, True)


def as_column(v):
    return paired(v, False)


def fromdense(cls, vec, nse, index_dtype):
    """The nonzeros of a 1-D array, in order: those of the 1 x n matrix (nse needed under jit)."""
    row = cls.fromdense(cnp.reshape(vec, (1, -1)), nse=nse, index_dtype=index_dtype)
    return cls((row.data, cnp.asarray(row.indices)[:, 1:]), shape=(row.shape[1],))


def todense(v):
    return cnp.reshape(as_row(v).todense(), v.shape)


def dense_operand(what: str, v, other):
    if isinstance(other, type(v)) or hasattr(other, "indptr"):
        raise NotImplementedError(located(f"{what}: a sparse vector times a sparse array is not supported "
                                          f"(make one of them dense)"))
    other = cnp.asarray(other)
    if other.ndim not in (1, 2):
        raise NotImplementedError(located(f"{what}: a sparse vector of shape {v.shape} takes a dense vector or "
                                          f"matrix, got shape {other.shape}"))
    return other


def matmul(v, other):
    """v @ x: x (n,) gives a scalar, x (n, k) a vector (k,), as numpy's matmul of a 1-D lhs."""
    other = dense_operand("sparse vector @ dense", v, other)
    product = as_row(v) @ other
    return product[0] if other.ndim == 1 else cnp.reshape(product, (other.shape[1],))


def rmatmul(v, other):
    """x @ v: x (n,) gives a scalar, x (m, n) a vector (m,), as numpy's matmul of a 1-D rhs."""
    other = dense_operand("dense @ sparse vector", v, other)
    product = other @ as_column(v)
    return product[0] if other.ndim == 1 else cnp.reshape(product, (other.shape[0],))


def multiplied(v, other):
    """v * scalar or v * x (x of v's shape): a sparse vector of the same entries."""
    if np.ndim(other) == 0 and not isinstance(other, Tracer):
        return type(v)((cnp.asarray(v.data) * other, v.indices), shape=v.shape)
    other = cnp.asarray(other)
    if other.ndim == 0:
        return type(v)((cnp.asarray(v.data) * other, v.indices), shape=v.shape)
    if tuple(other.shape) != v.shape:
        raise TracingValueError(located(f"sparse vector * dense: shapes {v.shape} and {tuple(other.shape)} differ"))
    return type(v)((cnp.asarray(v.data) * other[cnp.asarray(v.indices)[:, 0]], v.indices), shape=v.shape)


def summed(v, axis):
    if axis not in (None, 0, -1, (0,)):
        raise TracingValueError(located(f"BCOO.sum: a sparse vector has axis 0 only, got {axis}"))
    return as_row(v).sum()
