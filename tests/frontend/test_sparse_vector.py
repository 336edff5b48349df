"""1-D sparse vectors (a BCOO of shape (n,), n_sparse = 1: frontend/sparse/nsparse.py): fromdense and
todense, @ with a dense vector or matrix on either side, sum, * by a scalar or a dense vector, in and
out of jit, against numpy on the dense vector. Products use test_sparse_batched's error model (a sum
of k products: |error| <= 2 k eps sum|v x|; complex: complex_k; * by a vector: k = 1); fromdense,
todense and * by a real scalar are exact."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.sparse as cs
from cdnajit.errors import TracingValueError

from .test_sparse_batched import assert_product_close, complex_k, random_values


def operations(s, x, rows, columns):
    return (s.todense(), s @ x, s @ columns, rows @ s, x @ s, s.sum(), (s * x).todense(), (s * 3).todense())


@pytest.mark.slow
@pytest.mark.parametrize("n, dtype", [(37, np.float64), (1, np.float32), (70, np.complex128), (0, np.float64)])
def test_sparse_vector(n, dtype):
    rng = np.random.default_rng(n)
    v = np.where(rng.random(n) < 0.4, random_values(rng, n, dtype), 0).astype(dtype)
    v[:1] = 1 if n else v[:1]     # at least one entry
    x, columns, rows = (random_values(rng, shape, dtype) for shape in ((n,), (n, 5), (4, n)))
    nonzero = np.nonzero(v)[0]
    eager = cs.fromdense(v)
    assert (eager.shape, eager.n_sparse, eager.nse) == ((n,), 1, len(nonzero))
    np.testing.assert_array_equal(eager.indices[:, 0], nonzero)
    nse = len(nonzero) + 2 if n else 0     # padding (index 0) needs an index inside the vector
    traced = cj.jit(lambda v: cs.fromdense(v, nse=nse))(v)
    assert (traced.shape, traced.nse) == ((n,), nse)
    k = complex_k(len(nonzero), dtype)
    for s in (eager, traced):
        for got in (operations(s, x, rows, columns), cj.jit(operations)(s, x, rows, columns)):
            dense, dot, times_columns, rows_times, dot_left, total, product, scaled = (np.asarray(g) for g in got)
            np.testing.assert_array_equal(dense, v)
            assert_product_close(product, v * x, np.abs(v) * np.abs(x), complex_k(1, dtype), dtype)
            np.testing.assert_array_equal(scaled, v * 3)
            assert_product_close(dot, np.asarray(v @ x), np.abs(v) @ np.abs(x), k, dtype)
            assert_product_close(dot_left, np.asarray(x @ v), np.abs(x) @ np.abs(v), k, dtype)
            assert_product_close(times_columns, v @ columns, np.abs(v) @ np.abs(columns), k, dtype)
            assert_product_close(rows_times, rows @ v, np.abs(rows) @ np.abs(v), k, dtype)
            assert_product_close(total, np.asarray(v.sum()), np.asarray(np.abs(v).sum()), k, dtype)


def test_sparse_vector_bad_input_is_named():
    """Shapes, indices outside the vector, sparse operands: clear errors, no compile."""
    v = cs.BCOO((np.ones(2), np.array([[0], [3]])), shape=(4,))
    with pytest.raises(TracingValueError, match=r"index \(4,\) of entry \(1,\) is outside the sparse shape \(4,\)"):
        cs.BCOO((np.ones(2), np.array([[0], [4]])), shape=(4,))
    with pytest.raises(TracingValueError, match=r"n_dense = 1, so the shape must have 0 \+ 1 \+ 1 dimensions"):
        cs.BCOO((np.ones((2, 3)), np.array([[0], [3]])), shape=(4,))
    with pytest.raises(TracingValueError, match=r"shapes \(4,\) and \(5,\) differ"):
        v * np.ones(5)
    with pytest.raises(NotImplementedError, match="a BCSR holds two sparse dimensions"):
        v.to_bcsr()
    with pytest.raises(TracingValueError, match="axis 1 is out of range"):
        v.sum(1)
