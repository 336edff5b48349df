"""Batched sparse @ sparse, bcoo_dot_general's general dimension numbers, dense @ sparse with dense
dimensions (frontend/sparse/products.py), 2-D complex fromdense and the batched operations that keep
an array sparse (frontend/sparse/structure.py), against numpy on the dense arrays they hold. Products
use test_sparse_batched's error model (a sum of k products: |error| <= 2 k eps sum|a x|; complex:
complex_k); structure operations and nse are exact."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.sparse as cs
from cdnajit.errors import ConcretizationError

from .test_sparse_batched import assert_product_close, complex_k, random_values, sparse_dense


def dense_of(rng, shape, dtype, density=0.35):
    return np.where(rng.random(shape) < density, random_values(rng, shape, dtype), 0).astype(dtype)


def padded_bcsr(d, pad_value):
    """A batched BCSR of d (*batch, m, n) built from arrays, every element's padding holding pad_value."""
    elements = d.reshape((int(np.prod(d.shape[:-2])),) + d.shape[-2:])
    nse = max([np.count_nonzero(e) for e in elements] + [1])
    indptr = np.stack([np.concatenate([[0], np.cumsum(np.count_nonzero(e, axis=1))]) for e in elements])
    indices = np.stack([np.pad(np.nonzero(e)[1], (0, nse - np.count_nonzero(e))) for e in elements])
    data = np.stack([np.pad(e[np.nonzero(e)], (0, nse - np.count_nonzero(e)), constant_values=pad_value)
                     for e in elements])
    batch = d.shape[:-2]
    return cs.BCSR((data.astype(d.dtype).reshape(batch + (nse,)), indices.reshape(batch + (nse,)),
                    indptr.reshape(batch + (d.shape[-2] + 1,))), shape=d.shape)


def stored(x):
    """Where x stores an entry (a BCOO's padding is one, at (0, 0); a BCSR's past indptr[-1] is not)."""
    ones = np.ones(x.data.shape)
    same = cs.BCOO((ones, x.indices), shape=x.shape) if isinstance(x, cs.BCOO) else \
        cs.BCSR((ones, x.indices, x.indptr), shape=x.shape)
    return np.asarray(same.todense()) != 0


def structural_nnz(a, b):
    """Per batch element, the entries of a @ b that some product of stored entries reaches (the SpGEMM's
    exact count)."""
    reach = np.einsum("...ik,...kj->...ij", a.astype(np.int64), b.astype(np.int64)) > 0
    return reach.reshape((int(np.prod(reach.shape[:-2])),) + reach.shape[-2:]).sum(axis=(1, 2))


SPGEMM_CASES = [((3, 4, 5), (3, 5, 6), np.float64), ((2, 3, 7, 9), (2, 3, 9, 4), np.float32),
                ((1, 1, 1), (1, 1, 1), np.float64), ((2, 0, 3), (2, 3, 4), np.float64),
                ((2, 3, 0), (2, 0, 4), np.float64),
                ((3, 33, 70), (3, 70, 20), np.complex128), ((1, 6, 5), (4, 5, 3), np.complex64),
                ((6, 5), (2, 5, 7), np.float64), ((2, 6, 5), (5, 7), np.float32)]


@pytest.mark.slow
@pytest.mark.parametrize("lhs_shape, rhs_shape, dtype", SPGEMM_CASES)
def test_batched_spgemm(lhs_shape, rhs_shape, dtype):
    """sparse @ sparse with batch dimensions (numpy's matmul broadcasting; a 2-D operand shared), BCOO
    and BCSR (C a BCSR when both are, else a BCOO), padding values that must not reach C: outside jit C's nse is the most entries an element
    reaches (exact), under jit the bound min(nse_a nse_b, m n); every element's indptr is valid and C's
    padding is zero; C against numpy's product (error model above, k = the inner size)."""
    rng = np.random.default_rng(sum(lhs_shape) * 7 + sum(rhs_shape))
    a, b = dense_of(rng, lhs_shape, dtype), dense_of(rng, rhs_shape, dtype)
    lhs = padded_bcsr(a, 7.0) if a.ndim >= 3 else cs.bcsr_fromdense(a)
    lhs = lhs.to_bcoo() if dtype in (np.float32, np.complex64) else lhs      # BCOO operands too (none of 0 columns:
    # its padding index (0, 0) would be outside the shape)
    rhs = padded_bcsr(b, -5.0) if b.ndim >= 3 else cs.fromdense(b)
    k = a.shape[-1]
    want, terms = a @ b, np.abs(a) @ np.abs(b)
    batch = want.shape[:-2]
    eager = lhs @ rhs
    assert eager.nse == max(structural_nnz(np.broadcast_to(stored(lhs), batch + a.shape[-2:]), stored(rhs)).max(
        initial=0), 0)
    traced = cj.jit(lambda x, y: x @ y)(lhs, rhs)
    assert traced.nse == min(lhs.nse * rhs.nse, want.shape[-2] * want.shape[-1])
    both_csr = isinstance(lhs, cs.BCSR) and isinstance(rhs, cs.BCSR)
    for c in (eager, traced):
        assert c.shape == want.shape and c.n_batch == len(batch)
        assert isinstance(c, cs.BCSR if both_csr else cs.BCOO)    # BCSR only from two BCSR operands
        if both_csr:
            indptr = np.asarray(c.indptr).reshape(-1, want.shape[-2] + 1)
            assert np.all(indptr[:, 0] == 0) and np.all(np.diff(indptr, axis=1) >= 0)
            assert np.all(indptr[:, -1] <= c.nse)
            data = np.asarray(c.data).reshape(len(indptr), c.nse)
            assert all(np.all(row[end:] == 0) for row, end in zip(data, indptr[:, -1]))
        assert_product_close(np.asarray(c.todense()), want, terms, complex_k(k, dtype), np.finfo(dtype).dtype)


@pytest.mark.slow
def test_dot_general_two_sparse_operands():
    """bcoo_dot_general of two sparse operands: batch dimensions in another order, a matrix's rows
    contracted (transposes make it a @), in and outside jit."""
    rng = np.random.default_rng(11)
    a = sparse_dense(rng, (3, 5, 4), np.float64)
    lhs = cs.fromdense(np.transpose(a, (0, 2, 1)), n_batch=1)
    first = cs.fromdense(a[1])

    def both(lhs, first):
        return (cs.bcoo_dot_general(lhs, lhs, dimension_numbers=(((1,), (1,)), ((0,), (0,)))),
                cs.bcoo_dot_general(first, first, dimension_numbers=(((0,), (0,)), ((), ()))))

    want = [(np.einsum("bmk,bnk->bmn", a, a), np.einsum("bmk,bnk->bmn", np.abs(a), np.abs(a)), 4),
            (a[1].T @ a[1], np.abs(a[1]).T @ np.abs(a[1]), 5)]
    for results in (both(lhs, first), cj.jit(both)(lhs, first)):
        for got, (expected, terms, k) in zip(results, want):
            assert_product_close(np.asarray(got.todense()), expected, terms, k, np.float64)


GENERAL_CASES = [
    # (sparse shape, n_batch, n_dense, dense shape, dimension numbers, einsum of sparse, dense -> result)
    ((4, 5), 0, 0, (4, 5, 2), (((0, 1), (0, 1)), ((), ())), "ij,ijk->k"),
    ((2, 3, 4, 5), 2, 0, (3, 2, 5, 2), (((3,), (2,)), ((1, 0), (0, 1))), "abij,bajk->baik"),
    ((3, 4, 5), 1, 0, (3, 7), (((0,), (0,)), ((), ())), "bij,bk->ijk"),
    ((2, 3, 4, 5), 2, 0, (2, 5, 6), (((3,), (1,)), ((0,), (0,))), "abij,ajk->abik"),
    ((3, 4, 5), 1, 0, (3, 5, 7), (((0, 2), (0, 1)), ((), ())), "bij,bjk->ik"),
    ((4, 5), 0, 0, (3,), (((), ()), ((), ())), "ij,k->ijk"),
    ((4, 5), 0, 0, (5, 4, 2), (((0,), (1,)), ((1,), (0,))), "ij,jik->jk"),
    ((3, 4, 5, 2), 1, 1, (5, 3, 6), (((0, 2), (1, 0)), ((), ())), "bijd,jbk->idk"),
]


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_general_dot_general(dtype):
    """bcoo_dot_general beyond one library product: several contracted dimensions, batch dimensions out of
    order or a subset, a batch dimension contracted, no contraction, a sparse dimension as batch
    dimension, free dense dimensions; the same with the dense operand on the left (its free dimensions
    first); BCOO and BCSR operands; under jit and eagerly, against np.einsum (k = the contracted size)."""
    rng = np.random.default_rng(3)
    for case, (shape, n_batch, n_dense, dense_shape, numbers, spec) in enumerate(GENERAL_CASES):
        pattern = rng.random(shape[:n_batch + 2] + (1,) * n_dense) < 0.4
        s = np.where(pattern, random_values(rng, shape, dtype), 0).astype(dtype)
        x = random_values(rng, dense_shape, dtype)
        a = (cs.bcsr_fromdense if case % 2 else cs.fromdense)(s, n_batch=n_batch, n_dense=n_dense)
        (lc, rc), (lb, rb) = numbers
        k = int(np.prod([shape[d] for d in lc]))
        want, terms = np.einsum(spec, s, x), np.einsum(spec, np.abs(s), np.abs(x))
        inputs, output = spec.split("->")
        left_spec = f"{inputs.split(',')[1]},{inputs.split(',')[0]}->" + "".join(
            [output[i] for i in range(len(lb))] + [c for c in output[len(lb):] if c in inputs.split(",")[1]] +
            [c for c in output[len(lb):] if c in inputs.split(",")[0]])

        def both(a, x):
            return (cs.bcoo_dot_general(a, x, dimension_numbers=numbers),
                    cs.bcoo_dot_general(x, a, dimension_numbers=((rc, lc), (rb, lb))))

        for results in (both(a, x), cj.jit(both)(a, x)):
            assert_product_close(np.asarray(results[0]), want, terms, complex_k(k, dtype), np.finfo(dtype).dtype)
            assert_product_close(np.asarray(results[1]), np.einsum(left_spec, x, s),
                                 np.einsum(left_spec, np.abs(x), np.abs(s)), complex_k(k, dtype), np.finfo(dtype).dtype)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["bcsr", "bcoo"])
def test_dense_at_sparse_with_dense_dimensions(kind):
    """x @ a with n_dense > 0 contracts a's second-to-last dimension (its column), as numpy's matmul and
    JAX's: x (k, n) and (n,), a 2-D and a batched a; a stack x raises (its batch would run along the
    sparse dimensions), as JAX."""
    rng = np.random.default_rng(8)
    fromdense = cs.bcsr_fromdense if kind == "bcsr" else cs.fromdense
    e2 = dense_of(rng, (4, 5, 2), np.float64)
    e3 = dense_of(rng, (3, 4, 5, 2), np.float32)
    a2, a3 = fromdense(e2, n_dense=1), fromdense(e3, n_batch=1, n_dense=1)
    x, v = rng.standard_normal((3, 5)), rng.standard_normal(5)

    def products(a2, a3, x, v):
        return x @ a2, v @ a2, x.astype("float32") @ a3, v.astype("float32") @ a3

    want = [(x @ e2, np.abs(x) @ np.abs(e2), np.float64), (v @ e2, np.abs(v) @ np.abs(e2), np.float64),
            (x @ e3, np.abs(x) @ np.abs(e3), np.float32), (v @ e3, np.abs(v) @ np.abs(e3), np.float32)]
    for results in (products(a2, a3, x, v), cj.jit(products)(a2, a3, x, v)):
        for got, (expected, terms, dtype) in zip(results, want):
            assert_product_close(np.asarray(got), expected, terms, 5, dtype)
    with pytest.raises(NotImplementedError, match="its batch would run along the sparse dimensions"):
        np.ones((2, 3, 5)) @ a2


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_fromdense(dtype):
    """2-D fromdense of complex values: exactly the nonzeros row by row (a value with a zero real part
    is one), as BCSR and BCOO; under jit with nse, a matrix with more keeps its first."""
    rng = np.random.default_rng(2)
    d = dense_of(rng, (6, 7), dtype)
    d[2, 3] = 1j
    d[5] = 0
    for a in (cs.bcsr_fromdense(d), cs.fromdense(d)):
        assert a.dtype == dtype and a.nse == np.count_nonzero(d)
        np.testing.assert_array_equal(np.asarray(a.todense()), d)
    csr = cs.bcsr_fromdense(d)
    np.testing.assert_array_equal(np.asarray(csr.data), d[np.nonzero(d)])
    np.testing.assert_array_equal(np.asarray(csr.indptr), np.concatenate([[0], np.cumsum(np.count_nonzero(d, 1))]))
    first = cj.jit(lambda d: cs.bcsr_fromdense(d, nse=5).todense())(d)
    kept = d.copy().reshape(-1)
    kept[np.flatnonzero(kept)[5:]] = 0
    np.testing.assert_array_equal(np.asarray(first), kept.reshape(d.shape))
    with pytest.raises(ConcretizationError):
        cj.jit(lambda d: cs.bcsr_fromdense(d).todense())(d)


@pytest.mark.slow
def test_batched_structure_stays_sparse():
    """Sums over batch and dense axes (a BCOO of the summed elements' entries side by side), reshape
    of batch, sparse and dense dimensions among themselves, sum_duplicates (each element sorted,
    duplicates added, nse the most distinct entries; under jit nse given), in and outside jit: structure
    and small-integer sums exact, sums of random values with the error model."""
    rng = np.random.default_rng(4)
    d = sparse_dense(rng, (3, 4, 5), np.float64)
    e = dense_of(rng, (2, 4, 5, 3), np.float64)
    a, b = cs.fromdense(d, n_batch=1), cs.bcsr_fromdense(e, n_batch=1, n_dense=1)
    indices = np.array([[[0, 1], [2, 3], [0, 1], [2, 3]], [[3, 4], [3, 4], [0, 0], [3, 4]]])
    values = np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    dup = cs.BCOO((values, indices), shape=(2, 4, 5))

    def everything(a, b, dup):
        return (a.sum(0), b.sum(3), b.sum((0, 3)), a.reshape(3, 5, 4), a.reshape((3, 1, 2, 10)),
                dup.sum_duplicates(nse=2))

    eager = everything(a, b, dup)[:-1] + (dup.sum_duplicates(),)
    for results in (eager, cj.jit(everything)(a, b, dup)):
        s0, s3, s03, r1, r2, merged = results
        assert isinstance(s0, cs.BCOO) and (s0.shape, s0.nse) == ((4, 5), 3 * a.nse)
        assert (s3.shape, s3.n_batch, s3.n_dense) == ((2, 4, 5), 1, 0)
        assert_product_close(np.asarray(s0.todense()), d.sum(0), np.abs(d).sum(0), 3, np.float64)
        assert_product_close(np.asarray(s3.todense()), e.sum(3), np.abs(e).sum(3), 3, np.float64)
        assert_product_close(np.asarray(s03.todense()), e.sum((0, 3)), np.abs(e).sum((0, 3)), 6, np.float64)
        assert (r1.n_batch, r2.n_batch) == (1, 2)
        np.testing.assert_array_equal(np.asarray(r1.todense()), d.reshape(3, 5, 4))
        np.testing.assert_array_equal(np.asarray(r2.todense()), d.reshape(3, 1, 2, 10))
        assert merged.nse == 2
        np.testing.assert_array_equal(np.asarray(merged.indices), [[[0, 1], [2, 3]], [[0, 0], [3, 4]]])
        np.testing.assert_array_equal(np.asarray(merged.data), [[4.0, 6.0], [7.0, 19.0]])
    with pytest.raises(ConcretizationError):
        cj.jit(lambda dup: dup.sum_duplicates())(dup)
