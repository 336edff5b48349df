"""cdnajit.sparse's arrays as pytrees (frontend/pytree.py's register_pytree_node): the arrays are
leaves, the shape is in the TreeDef (static in a jit signature); and the constructors' checks."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.sparse as cs
from cdnajit.errors import TracingValueError


def small_csr():
    return cs.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([0, 2, 1]), np.array([0, 2, 2, 3])), shape=(3, 4))


def test_sparse_arrays_are_pytrees_with_a_static_shape():
    a = small_csr()
    leaves, tree = cj.tree_flatten(a)
    assert [leaf.shape for leaf in leaves] == [(3,), (3,), (4,)]
    assert hash(tree) == hash(cj.tree_flatten(small_csr())[1])
    assert tree != cj.tree_flatten(cs.csr_matrix((a.data, a.indices, a.indptr), shape=(3, 5)))[1]
    b = cj.tree_unflatten(tree, leaves)
    assert isinstance(b, cs.BCSR) and b.shape == (3, 4) and b.nse == 3
    coo = cs.coo_matrix((np.ones(2), (np.array([0, 2]), np.array([1, 3]))), shape=(3, 4))
    leaves, tree = cj.tree_flatten({"m": coo})
    assert [leaf.shape for leaf in leaves] == [(2,), (2, 2)] and "BCOO" in str(tree)


def test_constructors_need_a_shape_and_a_matrix():
    with pytest.raises(ValueError, match="needs shape"):
        cs.csr_matrix((np.ones(1), np.zeros(1, int), np.array([0, 1])))
    with pytest.raises(NotImplementedError, match="only 2-D matrices"):
        cs.BCSR((np.ones(1), np.zeros(1, int), np.array([0, 1])), shape=(1, 1, 1))
    with pytest.raises(TracingValueError, match=r"csc_matrix of shape \(3, 2\), read as the CSR arrays of its "
                                                r"transpose .* indices are row indices\): BCSR: column indices must be in \[0, 3\)"):
        cs.csc_matrix((np.ones(1), np.array([5]), np.array([0, 1, 1])), shape=(3, 2))
    with pytest.raises(NotImplementedError, match="complex values"):
        cs.bsr_matrix((np.ones((1, 1, 1), np.complex64), np.zeros(1, int), np.array([0, 1])), shape=(1, 1)) @ np.ones(1)
    with pytest.raises(TracingValueError, match="dimension numbers"):
        cs.bcoo_dot_general(small_csr(), np.ones((3, 4)), dimension_numbers=(((0, 2), (0, 1)), ((), ())))
