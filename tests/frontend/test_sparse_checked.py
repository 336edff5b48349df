"""cdnajit.sparse.checked: the index arrays of sparse matrices built from traced arrays are
validated inside the compiled program, and a bad one raises an error naming the array; valid ones
run as plain jit. Interpreted (no kernel compiles: the checks are graph ops)."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.sparse as cs


def spmv(data, indices, indptr, x):
    return cs.BCSR((data, indices, indptr), shape=(3, 4)) @ x


def coo_dense(data, indices):
    return cs.BCOO((data, indices), shape=(2, 3)).todense()


def test_checked_raises_naming_the_array():
    run = cs.checked(spmv, backend="interpret")
    data, x = np.ones(3), np.arange(4.0)
    np.testing.assert_array_equal(run(data, np.array([0, 3, 1]), np.array([0, 1, 1, 3]), x), [0.0, 0.0, 4.0])
    named = r"BCSR: column indices must be in \[0, 4\) \(at .*test_sparse_checked"   # the array, bound and line
    with pytest.raises(cj.TracingValueError, match=named):
        run(data, np.array([0, 4, 1]), np.array([0, 1, 1, 3]), x)
    with pytest.raises(cj.TracingValueError, match="BCSR: column indices"):
        run(data, np.array([-1, 0, 1]), np.array([0, 1, 1, 3]), x)
    with pytest.raises(cj.TracingValueError, match="BCSR: indptr must start at 0, never decrease and end at most"):
        run(data, np.array([0, 1, 1]), np.array([0, 2, 1, 3]), x)
    with pytest.raises(cj.TracingValueError, match="BCSR: indptr"):
        run(data, np.array([0, 1, 1]), np.array([0, 1, 1, 4]), x)
    # a column past indptr[-1] is padding, not an error
    np.testing.assert_array_equal(run(data, np.array([0, 1, 9]), np.array([0, 1, 1, 2]), x), [0.0, 0.0, 1.0])


def test_checked_bcoo():
    run = cs.checked(coo_dense, backend="interpret")
    np.testing.assert_array_equal(run(np.array([1.0, 2.0]), np.array([[0, 2], [1, 0]])), [[0, 0, 1.0], [2.0, 0, 0]])
    with pytest.raises(cj.TracingValueError, match=r"BCOO: indices must lie in the shape \(2, 3\)"):
        run(np.array([1.0, 2.0]), np.array([[0, 3], [1, 0]]))


@pytest.mark.slow
def test_checked_compiled():
    """The same checks compiled (the codes are results of the compiled program)."""
    run = cs.checked(spmv)
    data, x = np.ones(3), np.arange(4.0)
    np.testing.assert_array_equal(run(data, np.array([0, 3, 1]), np.array([0, 1, 1, 3]), x), [0.0, 0.0, 4.0])
    with pytest.raises(cj.TracingValueError, match=r"BCSR: column indices must be in \[0, 4\)"):
        run(data, np.array([0, 4, 1]), np.array([0, 1, 1, 3]), x)


def test_checked_three_sparse_dimensions():
    """A BCOO of three sparse dimensions from traced indices: checked, a bad index is named; unchecked, an
    entry outside the shape is padding (it adds nothing to todense or to a sum)."""
    def dense_and_sum(data, indices):
        a = cs.BCOO((data, indices), shape=(2, 3, 4))
        return a.todense(), a.sum(1).todense()

    data, good, bad = np.array([1.0, 2.0]), np.array([[0, 2, 3], [1, 0, 1]]), np.array([[0, 3, 3], [1, 0, 1]])
    want = np.zeros((2, 3, 4))
    want[0, 2, 3], want[1, 0, 1] = 1.0, 2.0
    dense, summed = cs.checked(dense_and_sum, backend="interpret")(data, good)
    np.testing.assert_array_equal(dense, want)
    np.testing.assert_array_equal(summed, want.sum(1))
    with pytest.raises(cj.TracingValueError, match=r"BCOO: indices must lie in the sparse shape \(2, 3, 4\)"):
        cs.checked(dense_and_sum, backend="interpret")(data, bad)
    dense, summed = cj.jit(dense_and_sum, backend="interpret")(data, bad)
    want[0, 2, 3] = 0.0
    np.testing.assert_array_equal(dense, want)
    np.testing.assert_array_equal(summed, want.sum(1))
