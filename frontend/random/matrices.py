"""jax.random's samplers that factor a matrix: multivariate_normal (Cholesky) and orthogonal (QR).

cdnajit has no linalg library yet, so the factorizations are written here, unrolled over the
(static) matrix size, for the small matrices these samplers take: Cholesky-Banachiewicz column by
column, and Gram-Schmidt twice over (CGS2, orthogonal to working precision). Both factors are
unique (Cholesky's; QR's once R's diagonal is made positive, which is what JAX's sign correction
does), so the samples agree with JAX's to rounding.
"""
from __future__ import annotations

import numpy as np

from ...errors import TracingValueError
from .. import cnp
from ..tracing import located
from .continuous import canonical_shape, check_shape, compiled, float_dtype, normal_floats
from .keys import key_data_of


def cholesky_lower(a):
    """The lower Cholesky factor of symmetric positive definite matrices a (..., n, n); NaN where a
    is not positive definite (as LAPACK's potrf leaves XLA's result)."""
    n = a.shape[-1]
    columns = []
    for j in range(n):
        diagonal = a[..., j, j]
        for k in range(j):
            diagonal = cnp.subtract(diagonal, cnp.square(columns[k][..., j]))
        pivot = cnp.sqrt(diagonal)
        column = a[..., :, j]
        for k in range(j):
            column = cnp.subtract(column, cnp.multiply(columns[k], cnp.expand_dims(columns[k][..., j], -1)))
        column = cnp.divide(column, cnp.expand_dims(pivot, -1))
        below = cnp.greater_equal(cnp.arange(n), j)
        columns.append(cnp.where(below, column, cnp.zeros_like(column)))
    return cnp.stack(columns, axis=-1)


def orthonormal_columns(z):
    """Q of z = QR (..., m, k), m >= k, with R's diagonal positive: Gram-Schmidt, each column
    projected out twice."""
    columns = []
    for j in range(z.shape[-1]):
        v = z[..., :, j]
        for _ in range(2):
            for q in columns:
                v = cnp.subtract(v, cnp.multiply(q, cnp.sum(cnp.multiply(q, v), axis=-1, keepdims=True)))
        columns.append(cnp.divide(v, cnp.sqrt(cnp.sum(cnp.multiply(v, v), axis=-1, keepdims=True))))
    return cnp.stack(columns, axis=-1)


@compiled("shape", "dtype")
def multivariate_normal_core(key, mean, cov, shape, dtype):
    factor = cholesky_lower(cov)
    samples = normal_floats(key, (*shape, mean.shape[-1]), dtype)
    return cnp.add(mean, cnp.einsum("...ij,...j->...i", factor, samples))


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """jax.random.multivariate_normal: mean + L z with L the Cholesky factor of cov."""
    data, _ = key_data_of("multivariate_normal", key)
    if method not in ("svd", "eigh", "cholesky"):
        raise TracingValueError(located("method must be one of {'svd', 'eigh', 'cholesky'}"))
    if method != "cholesky":
        raise NotImplementedError(located(
            f"multivariate_normal method={method!r}: needs an eigen/singular value decomposition, which cdnajit "
            f"does not have yet; method='cholesky' is supported"))
    mean, cov = cnp.asarray(mean), cnp.asarray(cov)
    promoted = np.result_type(np.dtype(str(mean.dtype)), np.dtype(str(cov.dtype)), np.float16)
    dtype = float_dtype("multivariate_normal", promoted.name if dtype is None else dtype)
    if mean.ndim < 1:
        raise TracingValueError(located(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {mean.ndim}"))
    if cov.ndim < 2:
        raise TracingValueError(located(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}"))
    n = mean.shape[-1]
    if tuple(cov.shape[-2:]) != (n, n):
        raise TracingValueError(located(
            f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but got cov.shape == "
            f"{tuple(cov.shape)}."))
    if shape is None:
        shape = np.broadcast_shapes(tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    else:
        shape = canonical_shape(shape)
        check_shape("normal", shape, tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    # As JAX: mean and cov keep their promoted dtype, the normals take dtype, the result promotes both.
    return multivariate_normal_core(data, mean.astype(promoted), cov.astype(promoted), shape=shape, dtype=dtype)


@compiled("n", "m", "shape", "dtype")
def orthogonal_core(key, n, m, shape, dtype):
    q = orthonormal_columns(normal_floats(key, (*shape, max(n, m), min(n, m)), dtype))
    return cnp.swapaxes(q, -1, -2) if n < m else q


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """jax.random.orthogonal: Haar-distributed matrices with orthonormal columns (n x m; m = n)."""
    data, _ = key_data_of("orthogonal", key)
    n = int(n)
    m = n if m is None else int(m)
    return orthogonal_core(data, n=n, m=m, shape=canonical_shape(shape), dtype=float_dtype("orthogonal", dtype))
