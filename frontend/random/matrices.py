"""jax.random's samplers that factor a matrix: multivariate_normal (Cholesky, eigh or SVD of cov)
and orthogonal (QR), through cdnajit.numpy.linalg as JAX goes through jax.numpy.linalg.

Cholesky's factor is unique, and so is QR's once R's diagonal is made positive (JAX's sign
correction), so those samples agree with JAX's to rounding; eigh's and SVD's vectors are unique
only up to sign, so those samples agree with JAX's in distribution.
"""
from __future__ import annotations

import numpy as np

from ...errors import TracingValueError
from .. import cnp
from ..tracing import located
from .continuous import canonical_shape, check_shape, compiled, float_dtype, normal_floats
from .keys import key_data_of


def covariance_factor(cov, method: str):
    """F with F F^T = cov, as jax.random.multivariate_normal computes it for each method."""
    if method == "cholesky":
        return cnp.linalg.cholesky(cov)
    if method == "eigh":
        w, v = cnp.linalg.eigh(cov)
        return cnp.multiply(v, cnp.expand_dims(cnp.sqrt(w), -2))
    u, s, _ = cnp.linalg.svd(cov)
    return cnp.multiply(u, cnp.expand_dims(cnp.sqrt(s), -2))


@compiled("shape", "dtype", "method")
def multivariate_normal_core(key, mean, cov, shape, dtype, method):
    factor = covariance_factor(cov, method)
    samples = normal_floats(key, (*shape, mean.shape[-1]), dtype)
    return cnp.add(mean, cnp.einsum("...ij,...j->...i", factor, samples))


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """jax.random.multivariate_normal: mean + F z with F F^T = cov (F by `method`)."""
    data, _ = key_data_of("multivariate_normal", key)
    if method not in ("svd", "eigh", "cholesky"):
        raise TracingValueError(located("method must be one of {'svd', 'eigh', 'cholesky'}"))
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
    return multivariate_normal_core(data, mean.astype(promoted), cov.astype(promoted), shape=shape, dtype=dtype,
                                    method=method)


@compiled("n", "m", "shape", "dtype")
def orthogonal_core(key, n, m, shape, dtype):
    q, r = cnp.linalg.qr(normal_floats(key, (*shape, max(n, m), min(n, m)), dtype))
    q = cnp.multiply(q, cnp.expand_dims(cnp.sign(cnp.diagonal(r, 0, -2, -1)), -2))  # R's diagonal made positive
    return cnp.swapaxes(q, -1, -2) if n < m else q


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """jax.random.orthogonal: Haar-distributed matrices with orthonormal columns (n x m; m = n)."""
    data, _ = key_data_of("orthogonal", key)
    n = int(n)
    m = n if m is None else int(m)
    return orthogonal_core(data, n=n, m=m, shape=canonical_shape(shape), dtype=float_dtype("orthogonal", dtype))
