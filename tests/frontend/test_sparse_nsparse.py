"""BCOO arrays of n_sparse != 2 (frontend/sparse/nsparse.py): three and more sparse dimensions, batched
sparse vectors, and the sums that drop sparse axes, against numpy on the dense arrays they hold and
against stored JAX answers for the result's layout (jax.experimental.sparse 0.10: shape, n_batch,
n_sparse, n_dense, nse). Structure operations (fromdense, todense, transpose, reshape, * scalar) are
exact; products and sums use test_sparse_batched's error model (a sum of k products: |error| <=
2 k eps sum|a x|; complex: complex_k)."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.sparse as cs
from cdnajit.errors import TracingValueError

from .test_sparse_batched import assert_product_close, complex_k, random_values


def layout(x):
    return (tuple(x.shape), x.n_batch, x.n_sparse, x.n_dense, x.nse)


# (operation, JAX's layout of its result) on JAX_INPUT as BCOO.fromdense(n_batch=1), from jax 0.10.2.
JAX_LAYOUTS = [
    (lambda a: a, ((2, 3, 4, 5), 1, 3, 0, 3)),
    (lambda a: a.sum(1), ((2, 4, 5), 1, 2, 0, 3)),
    (lambda a: a.sum(0), ((3, 4, 5), 0, 3, 0, 6)),
    (lambda a: a.sum((1, 3)), ((2, 4), 1, 1, 0, 3)),
    (lambda a: a.sum((1, 2, 3)), ((2,), 1, 0, 0, 3)),
    (lambda a: a.transpose((0, 3, 1, 2)), ((2, 5, 3, 4), 1, 3, 0, 3)),
    (lambda a: a.reshape(2, 60), ((2, 60), 1, 1, 0, 3)),
    (lambda a: a.reshape(2, 3, 2, 2, 5), ((2, 3, 2, 2, 5), 1, 4, 0, 3)),
]


def jax_input():
    x = np.zeros((2, 3, 4, 5))
    x[0, 0, 1, 2], x[1, 2, 3, 4], x[1, 0, 1, 3], x[1, 2, 0, 0] = 1, 2, 5, -1
    return x


def test_layouts_match_jax():
    """Each operation's result has JAX's layout and holds numpy's dense answer; the sum over every
    axis is a dense scalar, as JAX's."""
    x = jax_input()
    a = cs.fromdense(x, n_batch=1)
    dense = [x, x.sum(1), x.sum(0), x.sum((1, 3)), x.sum((1, 2, 3)), x.transpose(0, 3, 1, 2), x.reshape(2, 60),
             x.reshape(2, 3, 2, 2, 5)]
    for (operation, want), expected in zip(JAX_LAYOUTS, dense):
        got = operation(a)
        assert isinstance(got, cs.BCOO) and layout(got) == want
        np.testing.assert_array_equal(np.asarray(got.todense()), expected)
    assert np.asarray(a.sum()) == x.sum() and np.ndim(a.sum()) == 0


def test_bad_input_is_named():
    x = jax_input()[0]
    with pytest.raises(TracingValueError, match=r"index \(0, 4, 0\) of entry \(1,\) is outside the sparse shape"):
        cs.BCOO((np.ones(2), np.array([[0, 1, 2], [0, 4, 0]])), shape=(3, 4, 5))
    with pytest.raises(TracingValueError, match=r"n_sparse = 3 and n_dense = 0, so the shape must have 0 \+ 3 \+ 0"):
        cs.BCOO((np.ones(2), np.zeros((2, 3), int)), shape=(3, 4))
    with pytest.raises(TracingValueError, match="must have shapes"):
        cs.BCOO((np.ones(3), np.zeros((2, 3), int)), shape=(3, 4, 5))
    a = cs.BCOO((np.ones(1), np.array([[0, 1, 2]])), shape=x.shape)
    v = cs.BCOO((np.ones(2), np.array([[0], [3]])), shape=(4,))
    with pytest.raises(TracingValueError, match=r"shapes \(3, 4, 5\) and \(3, 4\) differ"):
        a * np.ones((3, 4))
    with pytest.raises(TracingValueError, match=r"pair sizes \(5,\) with other ones"):
        a @ np.ones((4, 2))
    with pytest.raises(TracingValueError, match="axis 3 is out of range"):
        a.sum(3)
    with pytest.raises(NotImplementedError, match="a BCSR holds two sparse dimensions, this array 3"):
        a.to_bcsr()
    with pytest.raises(NotImplementedError, match="the stack's batch would run along sparse dimensions"):
        a @ np.ones((2, 5, 3))
    b = cs.fromdense(jax_input(), n_batch=1)
    with pytest.raises(TracingValueError, match="must permute the batch axes"):
        b.transpose((1, 0, 2, 3))
    with pytest.raises(NotImplementedError, match="reshape the batch dimensions"):
        b.reshape(6, 20)


def sparse_array(rng, shape, dtype, n_batch):
    """A dense array of ~30% nonzeros; with a batch, element 0 all zero (zero nnz) and the last one's
    first sparse row full."""
    d = np.where(rng.random(shape) < 0.3, random_values(rng, shape, dtype), 0).astype(dtype)
    if n_batch and shape[0] > 1:
        d[0] = 0
        d[-1, 0] = random_values(rng, shape[2:], dtype)
    return d


CASES = [((3, 4, 5), 0, 0, np.float64), ((2, 3, 4, 5), 1, 0, np.float32), ((3, 4, 5, 2), 0, 1, np.complex128),
         ((2, 7), 1, 0, np.float64), ((3, 9), 1, 0, np.complex64), ((2, 3, 1, 6, 2), 1, 0, np.float64),
         ((3, 0, 4), 0, 0, np.float64), ((4, 3, 0, 2), 1, 0, np.float32)]


@pytest.mark.slow
@pytest.mark.parametrize("shape, n_batch, n_dense, dtype", CASES)
def test_operations_against_numpy(shape, n_batch, n_dense, dtype):
    """fromdense/todense, sum over each axis, a transpose, reshape, * dense and * scalar, bcoo_dot_general
    contracting each sparse axis, @ on either side, sum_duplicates; in and out of jit (nse given)."""
    rng = np.random.default_rng(sum(shape) + n_batch)
    d = sparse_array(rng, shape, dtype, n_batch)
    nb, k = n_batch, len(shape) - n_batch - n_dense
    sparse = shape[nb:nb + k]
    other = random_values(rng, shape, dtype)
    right = random_values(rng, (shape[nb + k - 1], 3) if not n_dense else (shape[-1],), dtype)
    left = random_values(rng, (2, shape[-2]), dtype)
    slices = [random_values(rng, (sparse[i], 2), dtype) for i in range(k)]
    perm = tuple(range(nb)) + tuple(nb + i for i in range(k))[::-1] + tuple(range(nb + k, len(shape)))
    new_shape = shape[:nb] + (int(np.prod(sparse)),) + shape[nb + k:]
    elements = d.reshape((int(np.prod(shape[:nb])), int(np.prod(sparse)), int(np.prod(shape[nb + k:]))))
    nse = max([int(np.count_nonzero(np.any(e != 0, axis=-1))) for e in elements] + [0])

    def operations(a, other, right, left, slices):
        sums = [a.sum(axis).todense() for axis in range(a.ndim)]
        products = [cs.bcoo_dot_general(a, slices[i], dimension_numbers=(((nb + i,), (0,)), ((), ())))
                    for i in range(k)]
        return (a.todense(), sums, a.sum(), a.transpose(perm).todense(), a.reshape(new_shape).todense(),
                (a * other).todense(), (a * 3).todense(), products, a @ right, left @ a if not n_dense else None)

    eager = cs.fromdense(d, n_batch=n_batch, n_dense=n_dense)
    assert layout(eager) == (shape, nb, k, n_dense, nse)
    traced = cj.jit(lambda d: cs.fromdense(d, nse=nse + 1, n_batch=n_batch, n_dense=n_dense))(d)
    assert traced.nse == nse + 1
    merged = cs.BCOO((np.concatenate([eager.data] * 2, axis=nb), np.concatenate([eager.indices] * 2, axis=nb)),
                     shape=shape).sum_duplicates()
    np.testing.assert_array_equal(np.asarray(merged.todense()), 2 * d)
    assert merged.nse == nse
    for a in (eager, traced):
        for got in (operations(a, other, right, left, slices), cj.jit(operations)(a, other, right, left, slices)):
            dense, sums, total, transposed, reshaped, times, scaled, products, times_right, left_times = got
            np.testing.assert_array_equal(np.asarray(dense), d)
            for axis, s in enumerate(sums):
                assert_product_close(np.asarray(s), d.sum(axis), np.abs(d).sum(axis),
                                     complex_k(d.shape[axis], dtype), dtype)
            assert_product_close(np.asarray(total), np.asarray(d.sum()), np.abs(d).sum(), complex_k(d.size, dtype),
                                 dtype)
            np.testing.assert_array_equal(np.asarray(transposed), np.transpose(d, perm))
            np.testing.assert_array_equal(np.asarray(reshaped), d.reshape(new_shape))
            assert_product_close(np.asarray(times), d * other, np.abs(d * other), complex_k(1, dtype), dtype)
            np.testing.assert_array_equal(np.asarray(scaled), d * 3)
            for i, p in enumerate(products):
                spec = "".join(chr(97 + j) for j in range(len(shape)))
                product = f"{spec},{spec[nb + i]}z->{spec.replace(spec[nb + i], '')}z"
                assert_product_close(np.asarray(p), np.einsum(product, d, slices[i]),
                                     np.einsum(product, np.abs(d), np.abs(slices[i])), complex_k(sparse[i], dtype),
                                     dtype)
            contracted = shape[-1]
            assert_product_close(np.asarray(times_right), d @ right, np.abs(d) @ np.abs(right),
                                 complex_k(contracted, dtype), dtype)
            if left_times is not None:
                assert_product_close(np.asarray(left_times), left @ d, np.abs(left) @ np.abs(d),
                                     complex_k(left.shape[-1], dtype), dtype)


@pytest.mark.slow
def test_batched_vectors_and_sparsify():
    """A batch of sparse vectors (n_batch = 1, n_sparse = 1) in bcoo_dot_general with its batch dimension
    paired (one library product) and by @ with a stack; sparsify on a BCOO of three sparse dimensions
    (sums over a sparse axis come back sparse)."""
    rng = np.random.default_rng(5)
    v = sparse_array(rng, (4, 9), np.float64, n_batch=1)
    y, stack = rng.standard_normal((4, 9)), rng.standard_normal((3, 9, 2))
    x = jax_input()[1]
    w = rng.standard_normal((5, 2))

    def vectors(a, y, stack):
        return cs.bcoo_dot_general(a, y, dimension_numbers=(((1,), (1,)), ((0,), (0,)))), a @ stack

    for paired, stacked in (vectors(cs.fromdense(v, n_batch=1), y, stack),
                            cj.jit(vectors)(cs.fromdense(v, n_batch=1), y, stack)):
        assert_product_close(np.asarray(paired), np.einsum("bn,bn->b", v, y), np.einsum("bn,bn->b", abs(v), abs(y)),
                             9, np.float64)
        assert_product_close(np.asarray(stacked), v @ stack, np.abs(v) @ np.abs(stack), 9, np.float64)

    def f(a, w):
        return cj.numpy.sum(a, axis=1), a @ w, cj.numpy.transpose(a, (2, 0, 1)), a * 2.0, -a

    got = cs.sparsify(f)(cs.fromdense(x), w)
    summed, product, transposed, doubled, negated = (np.asarray(g.todense() if isinstance(g, cs.BCOO) else g)
                                                     for g in got)
    assert isinstance(got[0], cs.BCOO) and got[0].n_sparse == 2
    for value, want in ((summed, x.sum(1)), (transposed, x.transpose(2, 0, 1)), (doubled, 2 * x), (negated, -x)):
        np.testing.assert_array_equal(value, want)   # small integers: exact
    assert_product_close(product, x @ w, np.abs(x) @ np.abs(w), 5, np.float64)
