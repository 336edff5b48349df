"""Sparse @ sparse beyond two sparse dimensions (frontend/sparse/products.py: sparse_dot_general's
views_product, sparse_matmul): bcoo_dot_general of two sparse operands with any number of sparse
dimensions, several or no contracted ones, batch dimensions paired or free, against numpy's einsum
on the dense arrays and against stored JAX answers for the result's layout under jit
(jax.experimental.sparse 0.10.2's bcoo_spdot_general: shape, n_batch, n_sparse, nse). Outside jit
the nse is exact: the most entries a batch element's structure reaches. Values use test_sparse_batched's
error model (a sum of k products: |error| <= 2 k eps sum|a b|; complex: complex_k)."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.sparse as cs
from cdnajit.errors import TracingValueError

from .test_sparse_batched import assert_product_close, complex_k, random_values
from .test_sparse_products import stored

# (lhs shape, lhs n_batch, rhs shape, rhs n_batch, dimension numbers, einsum of lhs, rhs -> result,
#  JAX's layout under jit of the product of PATTERN_SEED's patterns: shape, n_batch, n_sparse, nse)
SPDOT_CASES = [
    ((3, 4, 5), 0, (5, 6), 0, (((2,), (0,)), ((), ())), "ijk,kl->ijl", ((3, 4, 6), 0, 3, 72)),
    ((4,), 0, (4,), 0, (((0,), (0,)), ((), ())), "i,i->", ((), 0, 0, 1)),
    ((4, 5), 0, (5, 4), 0, (((0, 1), (1, 0)), ((), ())), "ij,ji->", ((), 0, 0, 1)),
    ((4, 5), 0, (3,), 0, (((), ()), ((), ())), "ij,k->ijk", ((4, 5, 3), 0, 3, 3)),
    ((2, 3, 4), 1, (4, 5), 0, (((2,), (0,)), ((), ())), "bij,jk->bik", ((2, 3, 5), 1, 2, 15)),
    ((2, 4), 1, (3, 4, 5), 1, (((1,), (1,)), ((), ())), "bj,cjk->bck", ((2, 3, 5), 2, 1, 5)),
    ((3, 4, 5, 6), 1, (3, 6, 5, 2), 1, (((2, 3), (2, 1)), ((0,), (0,))), "bijk,bkjl->bil", ((3, 4, 2), 1, 2, 8)),
    ((2, 4), 1, (4,), 0, (((1,), (0,)), ((), ())), "bj,j->b", ((2,), 1, 0, 1)),
    ((2, 3, 4, 5), 2, (3, 2, 5, 4), 2, (((2,), (3,)), ((1, 0), (0, 1))), "baji,abkj->abik", ((3, 2, 5, 5), 2, 2, 25)),
    ((5, 4), 0, (2, 4, 3, 3), 0, (((1,), (1,)), ((), ())), "ij,ajkl->iakl", ((5, 2, 3, 3), 0, 4, 90)),
    ((33, 70, 2), 0, (70, 9), 0, (((1,), (0,)), ((), ())), "ikj,kl->ijl", ((33, 2, 9), 0, 3, 594)),
    ((0, 4, 5), 0, (5, 3), 0, (((2,), (0,)), ((), ())), "ijk,kl->ijl", ((0, 4, 3), 0, 3, 0)),
    ((3, 0, 5), 0, (0, 3), 0, (((1,), (0,)), ((), ())), "ikj,kl->ijl", ((3, 5, 3), 0, 3, 0)),
]
PATTERN_SEED = 5


def patterns():
    """Each case's (lhs, rhs) patterns, as the stored JAX layouts were computed from."""
    rng = np.random.default_rng(PATTERN_SEED)
    return [(rng.random(case[0]) < 0.3, rng.random(case[2]) < 0.3) for case in SPDOT_CASES]


def reached(spec, lhs, rhs, n_batch):
    """Per result batch element, the entries some product of stored entries reaches (the exact nse is
    their most)."""
    reach = np.einsum(spec, lhs.astype(np.int64), rhs.astype(np.int64)) > 0
    return reach.reshape((int(np.prod(reach.shape[:n_batch])), -1)).sum(axis=1).max(initial=0)


def check_case(case, lhs_pattern, rhs_pattern, dtype, lhs_kind, jitted_only=False):
    lhs_shape, lhs_batch, rhs_shape, rhs_batch, numbers, spec, jax_layout = case
    rng = np.random.default_rng(len(spec))
    a = np.where(lhs_pattern, random_values(rng, lhs_shape, dtype), 0).astype(dtype)
    b = np.where(rhs_pattern, random_values(rng, rhs_shape, dtype), 0).astype(dtype)
    lhs = cs.fromdense(a, n_batch=lhs_batch)
    if lhs_kind == "bcsr" and lhs.n_sparse == 2:
        lhs = cs.bcsr_fromdense(a, n_batch=lhs_batch)
    rhs = cs.fromdense(b, n_batch=rhs_batch)
    (lhs_contract, _), _ = numbers
    k = int(np.prod([lhs_shape[d] for d in lhs_contract]))
    want, terms = np.einsum(spec, a, b), np.einsum(spec, np.abs(a), np.abs(b))

    def product(x, y):
        return cs.bcoo_dot_general(x, y, dimension_numbers=numbers)

    traced = cj.jit(product)(lhs, rhs)
    results = [traced] if jitted_only else [traced, product(lhs, rhs)]
    assert (traced.shape, traced.n_batch, traced.n_sparse, traced.nse) == jax_layout
    for c in results:
        assert isinstance(c, cs.BCOO) and c.shape == want.shape and c.dtype == want.dtype
        assert_product_close(np.asarray(c.todense()), want, terms, complex_k(k, dtype), np.finfo(dtype).dtype)
    if not jitted_only:
        assert results[1].nse == reached(spec, stored(lhs), stored(rhs), jax_layout[1])


def test_sparse_dot_general_layouts():
    """Two cases under jit (three sparse dimensions times two; two contracted dimensions out of order
    with a paired batch): JAX's layout and numpy's values."""
    cases = list(zip(SPDOT_CASES, patterns()))
    for i in (0, 6):
        case, (lhs_pattern, rhs_pattern) = cases[i]
        check_case(case, lhs_pattern, rhs_pattern, np.float64, "bcoo", jitted_only=True)


@pytest.mark.slow
@pytest.mark.parametrize("dtype, lhs_kind", [(np.float64, "bcoo"), (np.float32, "bcsr"), (np.complex64, "bcoo"),
                                             (np.complex128, "bcsr")])
def test_sparse_dot_general(dtype, lhs_kind):
    """Every case in and outside jit, each dtype, 2-sparse lhs operands as BCSR or BCOO."""
    for case, (lhs_pattern, rhs_pattern) in zip(SPDOT_CASES, patterns()):
        check_case(case, lhs_pattern, rhs_pattern, dtype, lhs_kind)


@pytest.mark.slow
def test_sparse_matmul_any_n_sparse():
    """`@` of two sparse arrays, one of n_sparse != 2, by numpy's matmul rules: vector @ vector (a 0-d
    BCOO), vector @ matrix, 3-sparse @ matrix, a batch of vectors @ a matrix, a BCSR @ a vector, matrix
    @ a batched 3-D array; in and outside jit, against numpy."""
    rng = np.random.default_rng(9)
    d = {shape: np.where(rng.random(shape) < 0.4, rng.standard_normal(shape), 0)
         for shape in [(4,), (4, 5), (3, 2, 4), (5, 4), (3, 5, 4)]}
    v, m, t = cs.fromdense(d[4,]), cs.fromdense(d[4, 5]), cs.fromdense(d[3, 2, 4])
    batch_of_vectors = cs.fromdense(d[3, 5, 4], n_batch=2)
    csr = cs.bcsr_fromdense(d[5, 4])

    def products(v, m, t, batch_of_vectors, csr):
        return v @ v, v @ m, t @ m, batch_of_vectors @ v, csr @ v

    want = [d[4,] @ d[4,], d[4,] @ d[4, 5], d[3, 2, 4] @ d[4, 5], d[3, 5, 4] @ d[4,], d[5, 4] @ d[4,]]
    for results in (products(v, m, t, batch_of_vectors, csr), cj.jit(products)(v, m, t, batch_of_vectors, csr)):
        for got, expected in zip(results, want):
            assert isinstance(got, cs.BCOO) and got.shape == expected.shape
            np.testing.assert_allclose(np.asarray(got.todense()), expected, rtol=1e-13, atol=1e-14)


def test_sparse_dot_general_bad_input():
    """JAX's bcoo_spdot_general rules, each named: dense dimensions, a sparse dimension as batch
    dimension, a batch dimension contracted, sizes that differ, free rhs batch with free lhs sparse
    dimensions; `@` of a matrix and a 3-D stack."""
    v = cs.BCOO((np.ones(2), np.array([[0], [3]])), shape=(4,))
    m = cs.BCOO((np.ones(1), np.array([[0, 1]])), shape=(4, 5))
    batched = cs.fromdense(np.ones((2, 4)), n_batch=1)
    t = cs.BCOO((np.ones(1), np.array([[0, 1, 2]])), shape=(3, 4, 5))
    with_dense = cs.fromdense(np.ones((4, 2)), n_dense=1)
    general = cs.bcoo_dot_general
    with pytest.raises(NotImplementedError, match="with dense dimensions"):
        general(with_dense, v, dimension_numbers=(((0,), (0,)), ((), ())))
    with pytest.raises(NotImplementedError, match="batch dimensions must be batch dimensions of both"):
        general(m, m, dimension_numbers=(((1,), (1,)), ((0,), (0,))))
    with pytest.raises(NotImplementedError, match="only sparse dimensions can be contracted"):
        general(batched, batched, dimension_numbers=(((0,), (0,)), ((), ())))
    with pytest.raises(TracingValueError, match=r"pair sizes \[5\] with \[4\]"):
        general(t, v, dimension_numbers=(((2,), (0,)), ((), ())))
    with pytest.raises(TracingValueError, match="leave rhs batch dimensions and lhs sparse dimensions free"):
        general(m, batched, dimension_numbers=(((0,), (1,)), ((), ())))
    with pytest.raises(TracingValueError, match="do not fit"):
        general(m, v, dimension_numbers=(((1, 0), (0,)), ((), ())))
    with pytest.raises(NotImplementedError, match="the rhs's leading dimensions would come after the lhs's rows"):
        m @ cs.fromdense(np.ones((2, 5, 3)))
