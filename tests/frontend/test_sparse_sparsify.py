"""cdnajit.sparse.sparsify: a dense-written function on sparse matrices, against the same function on
the dense matrices (numpy). Entries are small integers, so every result is exact in f64."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
import cdnajit.sparse as cs

DENSE = np.array([[1.0, 0, 2, 0], [0, 0, 0, 3], [4, 0, 0, 0]])


def test_an_op_without_a_rule_is_named():
    """Raised while tracing: nothing compiles."""
    a = cs.BCOO((np.array([1.0, 2.0]), np.array([[0, 0], [2, 3]])), shape=DENSE.shape)
    b = cs.BCSR((np.array([1.0]), np.array([1]), np.array([0, 1, 1, 1])), shape=DENSE.shape)
    with pytest.raises(NotImplementedError, match="sparsify: exp has no sparse rule"):
        cs.sparsify(lambda a: cnp.exp(a))(a)
    with pytest.raises(NotImplementedError, match="sparsify: mul of two sparse matrices"):
        cs.sparsify(lambda a, b: a * b)(a, b)
    with pytest.raises(NotImplementedError, match="sparsify: reduce max"):
        cs.sparsify(lambda a: cnp.max(a))(b)


@pytest.mark.slow
@pytest.mark.parametrize("fromdense", [cs.fromdense, cs.bcsr_fromdense])
def test_rules(fromdense):
    """matmul both ways, * scalar and * dense, transpose, neg, sum over each axis and all; a sparse
    result (-(2 A).T) comes back sparse."""
    x, y = np.arange(6.0).reshape(3, 2), np.arange(12.0).reshape(4, 3)

    def f(a, x, y):
        return -(cnp.sum((a * 2.0).T @ x, axis=0) + cnp.sum(a @ y) + cnp.sum(a * y.T[:3, :4])), \
            cnp.sum(a, axis=1), x.T @ a

    for got, want in zip(cs.sparsify(f)(fromdense(DENSE), x, y), f(DENSE, x, y)):   # a sum over one axis: sparse
        np.testing.assert_array_equal(got.todense() if isinstance(got, cs.BCOO) else got, want)
    negated = cs.sparsify(lambda a: -(2 * a).T)(fromdense(DENSE))
    assert isinstance(negated, cs.BCOO | cs.BCSR)
    np.testing.assert_array_equal(negated.todense(), -2 * DENSE.T)
    inside = cj.jit(lambda a, x: cs.sparsify(lambda a, x: a @ x + 1.0)(a, x))
    np.testing.assert_array_equal(inside(fromdense(DENSE), np.arange(4.0)),
                                  DENSE @ np.arange(4.0) + 1.0)


@pytest.mark.slow
def test_rules_on_batched_arrays():
    """A batched array (n_batch = 1) through sparsify: a batched matmul, a sum over a sparse axis, over
    the batch axis (a sparse result), a permutation of the batch and sparse axes, a reshape."""
    d = np.stack([DENSE, 2 * DENSE[::-1]])
    x = np.arange(16.0).reshape(2, 4, 2)

    def f(a, x):
        return cnp.matmul(a, x), cnp.sum(a, axis=2), cnp.sum(a, axis=0), -cnp.transpose(a, (0, 2, 1)), \
            cnp.reshape(a, (2, 4, 3))

    got = cs.sparsify(f)(cs.fromdense(d, n_batch=1), x)
    for value, want in zip(got, f(d, x)):
        np.testing.assert_array_equal(value.todense() if isinstance(value, cs.BCOO | cs.BCSR) else value, want)
