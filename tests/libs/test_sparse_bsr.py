"""BSR (cdnajit.sparse.BSR, sparse.csr2bsr_count / csr2bsr / bsrmv / bsrmm) against scipy.sparse's
bsr_matrix: the conversion exactly (same block order and values as scipy's tobsr with sorted
indices; duplicates summed, each block entry a sum of at most a few values, compared to
2 eps |value| per added duplicate), products with the error model |error| <= 2 k eps (|A| |x|),
k = the row's stored entries (block columns x C)."""
import numpy as np
import pytest
import scipy.sparse as sp

import cdnajit as cj
import cdnajit.sparse as cs
from cdnajit.errors import ConcretizationError, TracingValueError


def random_csr(m, n, density, seed, dtype=np.float64):
    a = sp.random(m, n, density=density, format="csr", random_state=seed, dtype=dtype)
    if m > 2:
        a = sp.lil_matrix(a)
        a[1, :] = 0                      # an empty row
        a[m - 1, :] = np.arange(1, n + 1)   # a dense row
        a = sp.csr_matrix(a)
    a.eliminate_zeros()
    return a


def assert_like_scipy(bsr, a, blocksize):
    ref = a.tobsr(blocksize=blocksize)
    ref.sort_indices()
    np.testing.assert_array_equal(np.asarray(bsr.indptr), ref.indptr)
    np.testing.assert_array_equal(np.asarray(bsr.indices), ref.indices)
    np.testing.assert_allclose(np.asarray(bsr.data), ref.data, rtol=4 * np.finfo(ref.dtype).eps, atol=0)


def assert_products(bsr, a, rng, dtype):
    m, n = a.shape
    width = bsr.blocksize[1]
    k = max(np.diff(a.tobsr(blocksize=bsr.blocksize).indptr), default=0) * width
    # 3 and 67 columns of B: bsrmm's workgroups of 64 columns, all below k (read unguarded) and the last partial
    for x in (rng.standard_normal(n).astype(dtype), rng.standard_normal((n, 3)).astype(dtype),
              rng.standard_normal((n, 67)).astype(dtype)):
        got = np.asarray(bsr @ x)
        want = a.astype(np.float64) @ x.astype(np.float64)
        bound = 2 * max(k, 1) * np.finfo(dtype).eps * (abs(a).astype(np.float64) @ np.abs(x.astype(np.float64)))
        assert got.shape == want.shape and np.all(np.abs(got - want) <= bound + 1e-30)


def test_bsr_smoke():
    """A CSR matrix to 2 x 3 blocks and back through a product, as scipy's tobsr (interpreter only)."""
    a = random_csr(6, 9, 0.3, seed=1)
    m = cs.csr_matrix((a.data, a.indices.astype(np.int32), a.indptr.astype(np.int32)), shape=a.shape)
    f = cj.jit(lambda m: (lambda b: (b.data, b.indices, b.indptr))(m.to_bsr((2, 3), nnzb=9)), backend="interpret")
    data, indices, indptr = f(m)
    ref = a.tobsr(blocksize=(2, 3))
    ref.sort_indices()
    count = ref.indptr[-1]
    np.testing.assert_array_equal(np.asarray(indptr), ref.indptr)
    np.testing.assert_array_equal(np.asarray(indices)[:count], ref.indices)
    np.testing.assert_array_equal(np.asarray(data)[:count], ref.data)
    assert not np.asarray(data)[count:].any()


def test_bsr_bad_input_is_named():
    ones = np.ones((2, 2, 3))
    with pytest.raises(TracingValueError, match=r"shape \(4, 7\) must be 2 block rows of 2 rows by a multiple of 3"):
        cs.bsr_matrix((ones, [0, 1], [0, 1, 2]), shape=(4, 7))
    with pytest.raises(TracingValueError, match=r"block column indices must be in \[0, 2\)"):
        cs.bsr_matrix((ones, [0, 2], [0, 1, 2]), shape=(4, 6))
    with pytest.raises(TracingValueError, match="indptr must start at 0, never decrease"):
        cs.bsr_matrix((ones, [0, 1], [0, 2, 1]), shape=(4, 6))
    with pytest.raises(TracingValueError, match="blocksize"):
        cs.bsr_matrix((ones, [0, 1], [0, 1, 2]), shape=(4, 6), blocksize=(3, 2))
    m = cs.csr_matrix((np.ones(2), [0, 1], [0, 1, 2]), shape=(2, 4))
    with pytest.raises(TracingValueError, match=r"not a multiple of blocksize \(2, 3\)"):
        m.to_bsr((2, 3))
    with pytest.raises(ConcretizationError, match="nnzb"):
        cj.jit(lambda m: m.to_bsr((2, 2)).data)(m)


@pytest.mark.slow
@pytest.mark.parametrize("shape, density, blocksize", [((12, 15), 0.2, (3, 5)), ((12, 15), 0.2, (1, 1)),
                                                       ((12, 15), 0.2, (4, 15)), ((12, 15), 0.2, (12, 5)),
                                                       ((70, 66), 0.05, (2, 3)), ((8, 8), 0.0, (2, 2)),
                                                       ((0, 6), 0.0, (1, 2))])
@pytest.mark.parametrize("dtype, index", [(np.float64, np.int32), (np.float32, np.int64)])
def test_csr_to_bsr_and_products(shape, density, blocksize, dtype, index):
    rng = np.random.default_rng(shape[0] + blocksize[0])
    a = random_csr(*shape, density, seed=shape[1], dtype=dtype)
    m = cs.csr_matrix((a.data, a.indices.astype(index), a.indptr.astype(index)), shape=a.shape)
    bsr = m.to_bsr(blocksize)
    assert_like_scipy(bsr, a, blocksize)
    np.testing.assert_array_equal(np.asarray(bsr.todense()), a.toarray())
    assert_products(bsr, a, rng, dtype)


@pytest.mark.slow
def test_bsr_under_jit_and_duplicates():
    """Unsorted and duplicate CSR entries sum into their block (as scipy's sum_duplicates then tobsr);
    to_bsr under jit with nnzb, the BSR a pytree, compiled equal to interpreted bit for bit."""
    rng = np.random.default_rng(3)
    data = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    indices = np.array([5, 0, 5, 2, 1, 3], np.int32)
    indptr = np.array([0, 3, 3, 6, 6], np.int32)
    a = sp.csr_matrix((data, indices, indptr), shape=(4, 6))
    want = sp.csr_matrix(a.toarray())
    m = cs.csr_matrix((data, indices, indptr), shape=(4, 6))
    assert_like_scipy(m.to_bsr((2, 2)), want, (2, 2))
    x = rng.standard_normal((6, 5))
    outs = [cj.jit(lambda m, x: (lambda b: (b @ x, b @ x[:, 0], b.todense()))(m.to_bsr((2, 3), nnzb=7)),
                   backend=backend)(m, x) for backend in ("compiled", "interpret")]
    for compiled, interpreted in zip(*outs):
        np.testing.assert_array_equal(np.asarray(compiled), np.asarray(interpreted))
    np.testing.assert_array_equal(np.asarray(outs[0][2]), a.toarray())
    ref = want.tobsr(blocksize=(2, 3))
    b = cs.bsr_matrix((ref.data, ref.indices, ref.indptr), shape=ref.shape)
    leaves, tree = cj.tree_flatten(b)
    assert "BSR" in str(tree) and len(leaves) == 3
    assert_products(cj.tree_unflatten(tree, leaves), want, rng, np.float64)
    text = cj.jit(lambda m: m.to_bsr((2, 3), nnzb=7).data).lower(m).compile().as_text("optimized")
    assert 'routine = "csr2bsr_count"' in text and 'routine = "csr2bsr"' in text
    assert 'routine = "bsrmm"' in cj.jit(lambda b, x: b @ x).lower(b, x).compile().as_text("optimized")


@pytest.mark.slow
def test_bsr_traced_bad_indices_checked():
    ones = np.ones((2, 2, 3))
    f = lambda d, i, p, x: cs.bsr_matrix((d, i, p), shape=(4, 6)) @ x
    got = cj.jit(f)(ones, np.array([0, 7]), np.array([0, 1, 2]), np.ones(6))
    np.testing.assert_array_equal(np.asarray(got), [3.0, 3.0, 0.0, 0.0])     # block column 7: dropped
    with pytest.raises(TracingValueError, match=r"block column indices must be in \[0, 2\)"):
        cs.checked(f)(ones, np.array([0, 7]), np.array([0, 1, 2]), np.ones(6))
