"""Every sparse routine against scipy.sparse on the matrices the issue names: random with empty rows
and a dense row, a single dense row (every other row empty), and zero nnz. Through cdnajit.sparse
(csrmv, csrmm, sddmm, spgemm, csr2ell + ellmv, csrmv_ell through the fori_loop idiom, dense2csr,
csr2coo + coo2csr through the transpose, csr2bsr + bsrmv/bsrmm, csrsv, COO products). Tolerances:
a sum of k products in order errs by at most k eps (|A| |x|) per entry (Higham's gamma_k), k the
longest row (or K for SDDMM); structure and conversions exactly."""
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spl

import cdnajit as cj
import cdnajit.lax as clax
import cdnajit.numpy as cnp
import cdnajit.sparse as cs

M = 66   # rows and columns: BSR blocks of 2 x 3 tile it


def mixed():
    a = sp.random(M, M, density=0.06, random_state=3, format="lil")
    a[7, :] = np.arange(1, M + 1) / M
    for r in (0, 30, M - 1):
        a[r, :] = 0
    return a.tocsr()


def one_dense_row():
    a = sp.lil_matrix((M, M))
    a[40, :] = np.linspace(-1, 1, M) + 0.01
    return a.tocsr()


def zero_nnz():
    return sp.csr_matrix((np.zeros(0), np.zeros(0, np.int32), np.zeros(M + 1, np.int32)), shape=(M, M))


MATRICES = {"mixed": mixed, "one_dense_row": one_dense_row, "zero_nnz": zero_nnz}


def ours(a):
    return cs.csr_matrix((a.data, a.indices, a.indptr), shape=a.shape)


def bound(a, x):
    """k eps (|A| |x|), k the longest row (at least 1)."""
    k = max(int(np.diff(a.indptr).max(initial=0)), 1)
    return k * np.finfo(np.float64).eps * (abs(a) @ np.abs(x)) + np.finfo(np.float64).tiny


def within(got, want, tolerance):
    got = np.asarray(got)
    assert got.shape == want.shape and np.all(np.abs(got - want) <= tolerance), (got, want)


def rows_loop(indptr, columns, values, x, width):
    """The dense CSR idiom (a fori_loop over rows gathering `width` entries, masked), which the sparse
    matcher makes csrmv_ell."""
    def row(i, y):
        at = indptr[i] + cnp.arange(width)
        return y.at[i].set(cnp.sum(cnp.where(at < indptr[i + 1], values[at] * x[columns[at]], 0.0)))

    return clax.fori_loop(0, indptr.shape[0] - 1, row, cnp.zeros(indptr.shape[0] - 1, values.dtype))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MATRICES))
def test_every_routine_on_edge_matrices(name):
    a = MATRICES[name]()
    a.sort_indices()
    rng = np.random.default_rng(5)
    x, b = rng.standard_normal(M), rng.standard_normal((M, 67))

    within(ours(a) @ x, a @ x, bound(a, x))                                         # csrmv
    within(ours(a) @ b, a @ b, bound(a, b))                                         # csrmm
    coo = a.tocoo()
    within(cs.coo_matrix((coo.data, (coo.row, coo.col)), shape=a.shape) @ x, a @ x, bound(a, x))

    left, right = rng.standard_normal((M, 16)), rng.standard_normal((16, M))       # sddmm
    sampled = np.asarray(cs.sddmm(ours(a), left, right).todense())
    mask = np.zeros((M, M), bool)
    mask[np.repeat(np.arange(M), np.diff(a.indptr)), a.indices] = True
    within(sampled, (left @ right) * mask, 16 * np.finfo(float).eps * (np.abs(left) @ np.abs(right)))

    c = ours(a) @ ours(a.T.tocsr())                                                 # spgemm
    want = (a @ a.T).tocsr()
    want.sort_indices()
    got = sp.csr_matrix((np.asarray(c.data), np.asarray(c.indices), np.asarray(c.indptr)), shape=c.shape)
    got.sort_indices()
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    within(got.data, want.data, M * np.finfo(float).eps * (abs(a) @ abs(a.T)).toarray()[got.nonzero()])

    columns, values = ours(a).to_ell()                                              # csr2ell, ellmv
    assert np.asarray(columns).shape == (M, int(np.diff(a.indptr).max(initial=0)))
    within(cs.ell_matvec(columns, values, x), a @ x, bound(a, x))

    width = max(int(np.diff(a.indptr).max(initial=0)), 1)                          # csrmv_ell
    f = cj.jit(lambda p, c, v, y: rows_loop(p, c, v, y, width))
    assert 'routine = "csrmv_ell"' in f.lower(a.indptr, a.indices, a.data, x).compile().as_text("optimized")
    within(f(a.indptr, a.indices, a.data, x), a @ x, bound(a, x))

    dense = a.toarray()                                                             # dense2csr
    made = cs.bcsr_fromdense(dense)
    np.testing.assert_array_equal(np.asarray(made.indptr), a.indptr)
    np.testing.assert_array_equal(np.asarray(made.indices), a.indices)
    np.testing.assert_array_equal(np.asarray(made.data), a.data)

    t = ours(a).T                                                                   # csr2coo, coo2csr
    np.testing.assert_array_equal(np.asarray(t.indptr), a.T.tocsr().indptr)
    np.testing.assert_array_equal(np.asarray(t.todense()), dense.T)

    bsr = ours(a).to_bsr((2, 3))                                                    # csr2bsr, bsrmv, bsrmm
    want_bsr = a.tobsr(blocksize=(2, 3))
    np.testing.assert_array_equal(np.asarray(bsr.indptr), want_bsr.indptr)
    within(bsr @ x, a @ x, 2 * bound(a, x))
    within(bsr @ b, a @ b, 2 * bound(a, b))

    lower = sp.tril(a, k=-1).tocsr()                                                # csrsv
    solved = cs.spsolve_triangular(ours(lower), x, lower=True, unit_diagonal=True)
    want_x = spl.spsolve_triangular((lower + sp.eye(M)).tocsr(), x, lower=True)
    residual = np.abs(x - (lower + sp.eye(M)) @ np.asarray(solved))
    k = np.diff(lower.indptr) + 2
    assert np.all(residual <= 2 * k * np.finfo(float).eps * (abs(lower + sp.eye(M)) @ np.abs(np.asarray(solved))))
    assert np.allclose(np.asarray(solved), want_x, rtol=1e-9, atol=1e-12)
