"""Batched BCSR and BCOO (n_batch, n_dense > 0; frontend/sparse/batched.py) against numpy on the
dense arrays they hold. Structure operations (fromdense, todense, transpose, * dense) are exact.
Products and sums are compared with the error model of a sum of k products, each rounded:
|computed - exact| <= 2 k eps sum_k |a_k x_k| (k = the contracted length), per output entry."""
import numpy as np
import pytest
import scipy.sparse as sp

import cdnajit as cj
import cdnajit.sparse as cs
from cdnajit.errors import ConcretizationError, TracingValueError


def sparse_dense(rng, shape, dtype, density=0.35, full_row=True):
    """A dense array with ~density nonzeros; with more than one batch element, the first all zero and
    (full_row, no dense dimensions) the last one's first row full."""
    d = rng.standard_normal(shape).astype(dtype)
    d[rng.random(shape) > density] = 0
    if shape[0] > 1:
        d[0] = 0
        if full_row and shape[-2] > 0:
            d[-1, ..., 0, :] = 1
    return d


def assert_product_close(got, want, terms, k, dtype):
    """got vs want with |error| <= 2 k eps sum|a x| (terms: that sum of magnitudes, per entry)."""
    eps = np.finfo(dtype).eps
    assert got.shape == want.shape
    wide = np.asarray(got, np.complex128 if np.iscomplexobj(got) else np.float64)
    assert np.all(np.abs(wide - want) <= 2 * max(k, 1) * eps * terms + 1e-30)


def test_batched_arrays_are_pytrees_with_static_n_batch():
    data, indices, indptr = np.ones((2, 3)), np.array([[0, 1, 2], [2, 0, 0]]), np.array([[0, 2, 3], [0, 1, 1]])
    a = cs.BCSR((data, indices, indptr), shape=(2, 2, 3))
    assert (a.n_batch, a.n_dense, a.nse, a.batch_shape, a.sparse_shape) == (1, 0, 3, (2,), (2, 3))
    leaves, tree = cj.tree_flatten(a)
    assert [leaf.shape for leaf in leaves] == [(2, 3), (2, 3), (2, 3)]
    assert "((2, 2, 3), 1, 0)" in str(tree)
    flat = cs.BCSR((data.reshape(-1), indices.reshape(-1), np.array([0, 2, 3, 6])), shape=(3, 3))
    assert cj.tree_flatten(flat)[1] != tree
    b = cj.tree_unflatten(tree, leaves)
    assert isinstance(b, cs.BCSR) and (b.shape, b.n_batch) == ((2, 2, 3), 1)
    coo = cs.BCOO((np.ones((2, 3, 4)), np.zeros((2, 3, 2), np.int32)), shape=(2, 5, 6, 4))
    assert (coo.n_batch, coo.n_dense, coo.nse, coo.dense_shape) == (1, 1, 3, (4,))


def test_batched_bad_input_is_named():
    ones = np.ones((2, 3))
    with pytest.raises(TracingValueError, match=r"data, indices, indptr must have shapes"):
        cs.BCSR((ones, np.zeros((2, 3), int), np.zeros((2, 4), int)), shape=(2, 2, 3))
    with pytest.raises(TracingValueError, match=r"indptr must start at 0.*batch element \[1\]"):
        cs.BCSR((ones, np.zeros((2, 3), int), np.array([[0, 1, 3], [0, 2, 1]])), shape=(2, 2, 3))
    with pytest.raises(TracingValueError, match=r"column indices must be in \[0, 3\).*batch element \[0\]"):
        cs.BCSR((ones, np.array([[0, 3, 0], [0, 0, 0]]), np.array([[0, 1, 2], [0, 0, 0]])), shape=(2, 2, 3))
    with pytest.raises(NotImplementedError, match="n_batch = 1 and n_dense = 0, so the shape must have"):
        cs.BCSR((ones, np.zeros((2, 3), int), np.zeros((2, 3), int)), shape=(2, 3))
    with pytest.raises(TracingValueError, match=r"indices must lie in the sparse shape \(2, 3\)"):
        cs.BCOO((ones, np.full((2, 3, 2), 2)), shape=(2, 2, 3))
    with pytest.raises(TracingValueError, match="a stored batch dimension may be 1"):
        cs.BCOO((np.ones((3, 3)), np.zeros((2, 3, 2), int)), shape=(2, 2, 3))
    shared = cs.BCOO((np.ones((1, 3)), np.zeros((2, 3, 2), int)), shape=(2, 2, 3))   # size 1: broadcast, as JAX
    assert (shared.data.shape, shared.indices.shape) == ((2, 3), (2, 3, 2))
    a = cs.BCOO((ones, np.zeros((2, 3, 2), int)), shape=(2, 2, 3))
    with pytest.raises(TracingValueError, match="must permute the batch axes"):
        a.T
    with pytest.raises(TracingValueError, match=r"shapes \(2, 2, 3\) and \(2, 3\) do not chain"):
        a @ np.ones((2, 3))
    dense = cs.BCOO((np.ones((2, 3, 4)), np.zeros((2, 3, 2), int)), shape=(2, 2, 3, 4))
    with pytest.raises(NotImplementedError, match="a dense dimension can be contracted only alone"):
        cs.bcoo_dot_general(dense, np.ones((3, 4)), dimension_numbers=(((2, 3), (0, 1)), ((), ())))
    with pytest.raises(TracingValueError, match="leave rhs batch dimensions and lhs sparse dimensions free"):
        cs.bcoo_dot_general(a, a, dimension_numbers=(((1,), (1,)), ((), ())))
    with pytest.raises(NotImplementedError, match="sparse @ sparse: arrays with dense dimensions"):
        dense @ a
    with pytest.raises(NotImplementedError, match="reshape the batch dimensions"):
        a.reshape(4, 3)   # batch and sparse dimensions mixed (JAX refuses it too)


def test_batched_smoke():
    """A batched BCSR built from arrays times a stack of matrices: one csrmm call under jit."""
    rng = np.random.default_rng(1)
    d = sparse_dense(rng, (3, 5, 4), np.float64)
    nse = max(np.count_nonzero(e) for e in d)
    indptr = np.stack([np.concatenate([[0], np.cumsum(np.count_nonzero(e, axis=1))]) for e in d])
    indices = np.stack([np.pad(np.nonzero(e)[1], (0, nse - np.count_nonzero(e))) for e in d])
    data = np.stack([np.pad(e[np.nonzero(e)], (0, nse - np.count_nonzero(e)), constant_values=7.0) for e in d])
    x = rng.standard_normal((3, 4, 2))
    y = cj.jit(lambda a, x: a @ x)(cs.BCSR((data, indices, indptr), shape=d.shape), x)
    assert_product_close(np.asarray(y), d @ x, np.abs(d) @ np.abs(x), 4, np.float64)


def check_operations(a, d, rng, dtype, eager):
    """Every batched operation of a (holding d, n_dense = 0) against numpy, under jit (and eagerly)."""
    nb = a.n_batch
    m, n = d.shape[nb:nb + 2]
    swap = tuple(range(nb))[::-1] + (nb + 1, nb)
    x_vec = rng.standard_normal(n).astype(dtype)
    x_mat = rng.standard_normal(d.shape[:nb] + (n, 3)).astype(dtype)
    x_rows = rng.standard_normal(d.shape[:nb] + (m, 3)).astype(dtype)
    dense = rng.standard_normal(d.shape).astype(dtype)

    def everything(a, x_vec, x_mat, x_rows, dense):
        return (a.todense(), a @ x_vec, a @ x_mat, a.transpose(swap).todense(), a.sum(nb + 1).todense(),
                a.sum(), a.sum(tuple(range(nb)) + (nb,)).todense(), (a * dense).todense(), (a * 2.0).todense(),
                cs.bcoo_dot_general(a, x_rows, dimension_numbers=(((nb,), (nb,)), (tuple(range(nb)),) * 2)))

    dt = np.swapaxes(d, nb, nb + 1)
    want = [(d, 0), (d @ x_vec, n), (d @ x_mat, n), (np.transpose(d, swap), 0), (d.sum(nb + 1), n),
            (d.sum(), d.size), (d.sum(tuple(range(nb)) + (nb,)), d.size), (d * dense, 0), (d * 2, 0),
            (dt @ x_rows, m)]
    terms = [0, np.abs(d) @ np.abs(x_vec), np.abs(d) @ np.abs(x_mat), 0, np.abs(d).sum(nb + 1), np.abs(d).sum(),
             np.abs(d).sum(tuple(range(nb)) + (nb,)), 0, 0, np.abs(dt) @ np.abs(x_rows)]
    operands = (a, x_vec, x_mat, x_rows, dense)
    for results in ((everything(*operands),) if eager else ()) + (cj.jit(everything)(*operands),):
        for got, (expected, k), term in zip(results, want, terms):
            if k == 0:
                np.testing.assert_array_equal(np.asarray(got), expected)
            else:
                assert_product_close(np.asarray(got), np.asarray(expected), term, k, dtype)


CASES = [((3, 5, 4), 1, np.float64, "bcsr"), ((3, 5, 4), 1, np.float32, "bcoo"), ((2, 3, 7, 9), 2, np.float32, "bcsr"),
         ((2, 3, 7, 9), 2, np.float64, "bcoo"), ((1, 1, 1), 1, np.float64, "bcsr"), ((4, 0, 3), 1, np.float64, "bcoo"),
         ((4, 3, 0), 1, np.float32, "bcsr"), ((2, 6, 1), 1, np.float64, "bcoo"), ((2, 33, 70), 1, np.float64, "bcsr"),
         ((3, 40, 65), 1, np.float32, "bcoo")]


@pytest.mark.slow
@pytest.mark.parametrize("shape, n_batch, dtype, kind", CASES)
def test_batched_operations(shape, n_batch, dtype, kind):
    rng = np.random.default_rng(len(shape) * 7 + shape[-1])
    d = sparse_dense(rng, shape, dtype)
    fromdense = cs.bcsr_fromdense if kind == "bcsr" else cs.fromdense
    a = fromdense(d, n_batch=n_batch)
    elements = d.reshape((int(np.prod(shape[:n_batch])),) + shape[n_batch:])
    assert a.nse == max([np.count_nonzero(e) for e in elements], default=0)
    check_operations(a, d, rng, dtype, eager=shape == (3, 5, 4))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["bcsr", "bcoo"])
def test_batched_dense_dimensions(kind):
    """n_dense = 1: each entry a block of 2 values; products over the sparse columns keep the block."""
    rng = np.random.default_rng(5)
    e = sparse_dense(rng, (2, 4, 6, 2), np.float64, full_row=False)
    e[0, 1, 2] = [0.0, 3.0]                         # a block with one zero stays an entry
    fromdense = cs.bcsr_fromdense if kind == "bcsr" else cs.fromdense
    a = fromdense(e, n_batch=1, n_dense=1)
    assert a.nse == max(np.count_nonzero(np.any(b != 0, axis=-1)) for b in e)
    np.testing.assert_array_equal(np.asarray(a.todense()), e)
    np.testing.assert_array_equal(np.asarray(a.transpose((0, 2, 1, 3)).todense()), e.transpose(0, 2, 1, 3))
    x = rng.standard_normal((2, 6, 3))
    got = cs.bcoo_dot_general(a, x, dimension_numbers=(((2,), (1,)), ((0,), (0,))))
    assert_product_close(np.asarray(got), np.einsum("bmnd,bnk->bmdk", e, x),
                         np.einsum("bmnd,bnk->bmdk", np.abs(e), np.abs(x)), 6, np.float64)
    assert_product_close(np.asarray(a.sum((1, 2)).todense()), e.sum((1, 2)), np.abs(e).sum((1, 2)), 24, np.float64)
    with pytest.raises(NotImplementedError, match="dense dimensions"):
        a @ x


@pytest.mark.slow
def test_batched_fromdense_under_jit_needs_nse_and_keeps_the_first():
    rng = np.random.default_rng(6)
    d = sparse_dense(rng, (3, 4, 5), np.float64, density=0.6)
    most = max(np.count_nonzero(e) for e in d)
    full = cj.jit(lambda d: cs.bcsr_fromdense(d, n_batch=1, nse=most + 2).todense())(d)
    np.testing.assert_array_equal(np.asarray(full), d)
    few = np.asarray(cj.jit(lambda d: cs.fromdense(d, n_batch=1, nse=3).todense())(d))
    for element, kept in zip(d, few):         # each element's first 3 nonzeros, row-major
        first = np.flatnonzero(element)[:3]
        np.testing.assert_array_equal(kept.reshape(-1)[first], element.reshape(-1)[first])
        assert np.count_nonzero(kept) == len(first)
    with pytest.raises(ConcretizationError, match="nse"):
        cj.jit(lambda d: cs.fromdense(d, n_batch=1).todense())(d)


@pytest.mark.slow
def test_batched_traced_indices_checked_and_safe():
    """Under jit a bad index in one element never reaches another (padding column outside the
    diagonal matrix); cs.checked names it."""
    data = np.ones((2, 3))
    indices = np.array([[0, 5, 1], [-1, 1, 2]])
    indptr = np.array([[0, 2, 3], [0, 3, 3]])
    f = lambda d, i, p, x: cs.BCSR((d, i, p), shape=(2, 2, 3)) @ x
    x = np.arange(1.0, 7.0).reshape(2, 3)
    got = np.asarray(cj.jit(f)(data, indices, indptr, x[:, :, None] * np.ones(1)))[..., 0]
    np.testing.assert_array_equal(got, [[1.0, 2.0], [11.0, 0.0]])
    with pytest.raises(TracingValueError, match=r"column indices must be in \[0, 3\)"):
        cs.checked(f)(data, indices, indptr, x[:, :, None])


def complex_k(k, dtype):
    """A complex product is four real ones combined: each part's error is the real model's for k + 1
    terms over |a_r||x_r| + |a_i||x_i| <= |a||x|, and the modulus of both parts' errors is sqrt(2) times."""
    return (k + 1) * np.sqrt(2) if np.dtype(dtype).kind == "c" else k


def random_values(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


BROADCAST_CASES = [((5, 4), np.float64, "bcsr"), ((5, 4), np.complex64, "bcoo"), ((1, 1), np.float32, "bcoo"),
                   ((0, 3), np.float64, "bcsr"), ((3, 0), np.complex128, "bcoo"), ((33, 70), np.float32, "bcsr"),
                   ((9, 13), np.complex128, "bcsr")]


@pytest.mark.slow
@pytest.mark.parametrize("sparse_shape, dtype, kind", BROADCAST_CASES)
def test_batched_broadcast_and_dense_operands(sparse_shape, dtype, kind):
    """Size-1 stored batch dimensions (one pattern for every element), a sparse batch of 1 broadcast
    against a dense stack, dense @ batched sparse, n_dense > 0 in @ and bcoo_dot_general over a dense
    dimension, a dense lhs in bcoo_dot_general, a matrix's rows contracted; under jit and eagerly, against numpy's products of
    the dense arrays (error model: the module's, complex_k for complex values)."""
    m, n = sparse_shape
    rng = np.random.default_rng(m * 31 + n)
    pattern = sparse_dense(rng, (1, m, n), np.float64, full_row=False)[0] != 0
    d = np.where(pattern, random_values(rng, (3, m, n), dtype), 0).astype(dtype)
    fromdense = cs.bcsr_fromdense if kind == "bcsr" else cs.fromdense
    stored = fromdense(d[:1], n_batch=1)             # one element's pattern, stored with batch size 1
    values = np.stack([e[pattern] for e in d])       # row-major, the pattern's order
    if kind == "bcsr":
        shared = cs.BCSR((values, stored.indices, stored.indptr), shape=d.shape)
    else:
        shared = cs.BCOO((values, stored.indices), shape=d.shape)
    one = fromdense(d[:1], n_batch=1)
    e = np.where(rng.random((2, m, n, 1)) < 0.4, random_values(rng, (2, m, n, 3), dtype), 0).astype(dtype)
    with_dense = fromdense(e, n_batch=1, n_dense=1)
    stack, rows, left = (random_values(rng, s, dtype) for s in ((2, 3, n, 2), (2, m), (3, 4, m)))
    x_dense, v_dense = random_values(rng, (3, 2), dtype), random_values(rng, (3,), dtype)
    y = random_values(rng, (2, 3, 5), dtype)

    first = sp.csr_matrix(d[0])
    plain = cs.BCSR((first.data, first.indices, first.indptr), shape=first.shape)

    def everything(shared, one, with_dense, stack, rows, left, x_dense, v_dense, y, plain):
        return (shared.todense(), one @ stack, rows @ shared, left @ shared, rows[0] @ shared, with_dense @ x_dense,
                with_dense @ v_dense,
                cs.bcoo_dot_general(with_dense, y, dimension_numbers=(((3,), (1,)), ((0,), (0,)))),
                cs.bcoo_dot_general(left, shared, dimension_numbers=(((2,), (1,)), ((0,), (0,)))),
                cs.bcoo_dot_general(plain, rows[0], dimension_numbers=(((0,), (0,)), ((), ()))))

    want = [(d, 0, 0), (d[:1] @ stack, np.abs(d[:1]) @ np.abs(stack), n), (rows @ d, np.abs(rows) @ np.abs(d), m),
            (left @ d, np.abs(left) @ np.abs(d), m), (rows[0] @ d, np.abs(rows[0]) @ np.abs(d), m),
            (e @ x_dense, np.abs(e) @ np.abs(x_dense), 3), (e @ v_dense, np.abs(e) @ np.abs(v_dense), 3),
            (np.einsum("bmnd,bdk->bmnk", e, y), np.einsum("bmnd,bdk->bmnk", np.abs(e), np.abs(y)), 3),
            (np.einsum("bkm,bmn->bkn", left, d), np.einsum("bkm,bmn->bkn", np.abs(left), np.abs(d)), m),
            (rows[0] @ d[0], np.abs(rows[0]) @ np.abs(d[0]), m)]
    operands = (shared, one, with_dense, stack, rows, left, x_dense, v_dense, y, plain)
    eager = sparse_shape == (5, 4)
    for results in ((everything(*operands),) if eager else ()) + (cj.jit(everything)(*operands),):
        for got, (expected, terms, k) in zip(results, want):
            if k == 0:
                np.testing.assert_array_equal(np.asarray(got), expected)
            else:
                assert np.asarray(got).dtype == dtype
                assert_product_close(np.asarray(got), expected, terms, complex_k(k, dtype), np.finfo(dtype).dtype)
