"""libs/sparse against scipy.sparse, through cdnajit.sparse, compiled (and interpreted where said).

Matrices: random CSR with empty rows, one dense row, nnz = 0, and a power-law matrix (rows from 1
to hundreds of entries, several crossing csrmv's chunks). Tolerances from the error model of a
sum of k products in order (Higham's gamma_k): |computed - exact| <= k eps (|A| |x|) per entry,
k the row's length; conversions, transposes and the triangular solve of a unit-free matrix with
exact entries are compared exactly or with the same model.
"""
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spl

import cdnajit as cj
import cdnajit.sparse as cs


def random_csr(m, n, density, seed, dtype=np.float64, dense_row=None, empty_rows=()):
    a = sp.random(m, n, density=density, random_state=seed, format="lil", dtype=dtype)
    if dense_row is not None:
        a[dense_row, :] = np.arange(1, n + 1, dtype=dtype) / n
    for r in empty_rows:
        a[r, :] = 0
    a = a.tocsr()
    a.eliminate_zeros()
    return a


def power_law_csr(m, n, seed, dtype=np.float64):
    """Row lengths drawn from a Pareto law (1 to n), columns uniform: very uneven rows."""
    rng = np.random.default_rng(seed)
    lengths = np.minimum(np.ceil(rng.pareto(1.2, m)).astype(int) + 1, n)
    lengths[rng.integers(m)] = n   # one full row, many chunks long
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    indices = np.concatenate([np.sort(rng.choice(n, k, replace=False)) for k in lengths]).astype(np.int32)
    return sp.csr_matrix((rng.standard_normal(indptr[-1]).astype(dtype), indices, indptr), shape=(m, n))


def ours(a):
    return cs.csr_matrix((a.data, a.indices, a.indptr), shape=a.shape)


def model_tolerance(a, x):
    """k eps (|A| |x|), k = the longest row, per entry of A x."""
    eps = np.finfo(a.dtype).eps
    k = max(np.diff(a.indptr).max(initial=0), 1)
    return k * eps * (abs(a) @ np.abs(x)) + np.finfo(a.dtype).tiny


def check_spmv(a, x):
    y = ours(a) @ x
    np.testing.assert_array_less(np.abs(y - a @ x), model_tolerance(a, x) * 1.0001 + 1e-300)
    assert y.dtype == a.dtype


def test_spmv_smoke():
    """Empty rows, a dense row, 2774 nonzeros in three chunks of csrmv: a row starts exactly at the
    first boundary and one crosses the second; f64, int32 indices."""
    a = random_csr(300, 400, 0.02, seed=1, dense_row=7, empty_rows=(0, 5, 299))
    check_spmv(a, np.random.default_rng(0).standard_normal(400))


def test_bad_input_is_named():
    with pytest.raises(cj.TracingValueError, match="column indices must be in"):
        cs.csr_matrix((np.ones(2), np.array([0, 5]), np.array([0, 1, 2])), shape=(2, 3))
    with pytest.raises(cj.TracingValueError, match="never decrease"):
        cs.csr_matrix((np.ones(2), np.array([0, 1]), np.array([0, 2, 1])), shape=(2, 3))
    with pytest.raises(cj.TracingValueError, match="indptr must have 3 entries"):
        cs.csr_matrix((np.ones(2), np.array([0, 1]), np.array([0, 2])), shape=(2, 3))
    with pytest.raises(cj.TracingValueError, match=r"index \(2, 0\) of entry 1 is outside"):
        cs.coo_matrix((np.ones(2), (np.array([0, 2]), np.array([0, 0]))), shape=(2, 3))
    a = ours(random_csr(4, 3, 0.5, seed=0))
    with pytest.raises(cj.TracingValueError, match=r"shape \(4, 3\) times an array of shape \(4,\)"):
        a @ np.ones(4)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, n, density", [(1, 1, 1.0), (65, 33, 0.1), (1000, 700, 0.01), (257, 3000, 0.05)])
def test_spmv_random(m, n, density, dtype):
    a = random_csr(m, n, density, seed=m, dtype=dtype, dense_row=m // 2, empty_rows=(0,))
    check_spmv(a, np.random.default_rng(m).standard_normal(n).astype(dtype))


@pytest.mark.slow
def test_spmv_power_law_and_zero_nnz():
    a = power_law_csr(2000, 1500, seed=3)
    x = np.random.default_rng(3).standard_normal(1500)
    check_spmv(a, x)
    mixed = cs.csr_matrix((a.data, a.indices.astype(np.int64), a.indptr.astype(np.uint32)), shape=a.shape)
    assert mixed.indices.dtype == mixed.indptr.dtype == np.int64
    np.testing.assert_array_less(np.abs(mixed @ x - a @ x), model_tolerance(a, x) * 1.0001 + 1e-300)
    # Rows of exactly one chunk (routines.CHUNK) between empty rows: chunk boundaries at row starts.
    from cdnajit.libs.sparse.routines import CHUNK
    lengths = np.array([0, CHUNK, 0, 0, CHUNK, 0, CHUNK // 2, CHUNK // 2, 0, 3 * CHUNK, 0])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    rng = np.random.default_rng(4)
    aligned = sp.csr_matrix((rng.standard_normal(indptr[-1]), rng.integers(0, 50, indptr[-1]), indptr),
                            shape=(len(lengths), 50))
    check_spmv(aligned, rng.standard_normal(50))
    empty = sp.csr_matrix((5, 4))
    np.testing.assert_array_equal(ours(empty) @ np.ones(4), np.zeros(5))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_products(dtype):
    """Four real products on one structure; the error model of each real part's two sums of k products."""
    rng = np.random.default_rng(6)
    a = random_csr(70, 50, 0.1, seed=6, dense_row=3)
    a = sp.csr_matrix(((a.data + 1j * rng.standard_normal(a.nnz)).astype(dtype), a.indices, a.indptr), shape=a.shape)
    x = (rng.standard_normal(50) + 1j * rng.standard_normal(50)).astype(dtype)
    b = (rng.standard_normal((50, 3)) + 1j * rng.standard_normal((50, 3))).astype(dtype)
    eps = np.finfo(dtype).eps
    for operand in (x, b):
        got = ours(a) @ operand
        assert got.dtype == dtype
        bound = 2 * 50 * eps * (abs(a) @ np.abs(operand)) + np.finfo(dtype).tiny
        assert np.all(np.abs(got - a @ operand) <= bound)
    np.testing.assert_array_equal(ours(a).T.todense(), a.toarray().T)
    np.testing.assert_allclose(ours(a).sum(0).todense(), a.toarray().sum(0), atol=2 * 70 * eps * abs(a).sum(0).max())


@pytest.mark.slow
def test_spmv_interpreted_equals_compiled():
    """The routine's reference (chunks, carries) and its kernel agree bit for bit."""
    a = power_law_csr(300, 200, seed=5)
    x = np.random.default_rng(5).standard_normal(200)
    f = lambda m, v: m @ v
    np.testing.assert_array_equal(cj.jit(f)(ours(a), x), cj.jit(f, backend="interpret")(ours(a), x))


def test_kernels_are_per_solution_not_per_problem():
    """Two matrices of other sizes and nnz give every sparse call the same kernel code (sizes are
    scalar arguments), so the second compiles no kernel."""
    from cdnajit.ir.core import walk
    from cdnajit.lowering.emitters import emit_kernel
    from cdnajit.passes import run_pipeline
    from cdnajit.passes.manager import DEFAULT_PIPELINE

    def code_texts(m, n):
        a = random_csr(m, n, 0.1, seed=m)
        program = lambda d, i, p, v: cs.csr_matrix((d, i, p), shape=a.shape) @ v
        module = run_pipeline(cj.make_graph(program)(a.data, a.indices, a.indptr, np.ones(n)), DEFAULT_PIPELINE).module
        return [emit_kernel(op, "k").code_text() for op in walk(module.body)
                if op.name == "library_call" and op.attrs["library"] == "sparse"]

    first, second = code_texts(50, 40), code_texts(333, 97)
    assert len(first) == 1 and first == second


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spmm_sddmm_ell(dtype):
    rng = np.random.default_rng(7)
    a = random_csr(129, 70, 0.08, seed=7, dtype=dtype, dense_row=3, empty_rows=(0, 128))
    b = rng.standard_normal((70, 67)).astype(dtype)
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(ours(a) @ b, a @ b, atol=70 * eps * (abs(a) @ np.abs(b)).max())
    x, y = rng.standard_normal((129, 16)).astype(dtype), rng.standard_normal((16, 70)).astype(dtype)
    sampled = cs.sddmm(ours(a), x, y).todense()
    np.testing.assert_allclose(sampled, (x @ y) * (a.toarray() != 0), atol=16 * eps * (np.abs(x) @ np.abs(y)).max())
    columns = np.where(rng.random((40, 6)) < 0.7, rng.integers(0, 30, (40, 6)), -1)
    values = rng.standard_normal((40, 6)).astype(dtype)
    v = rng.standard_normal(30).astype(dtype)
    dense = np.zeros((40, 30), dtype)
    for r, c in zip(*np.nonzero(columns >= 0)):
        dense[r, columns[r, c]] += values[r, c]
    np.testing.assert_allclose(cs.ell_matvec(columns, values, v), dense @ v, atol=6 * eps * 10)
    ell_columns, ell_values = ours(a).to_ell()
    assert ell_columns.shape == (129, np.diff(a.indptr).max())
    np.testing.assert_allclose(cs.ell_matvec(ell_columns, ell_values, b[:, 0]), a @ b[:, 0],
                               atol=70 * eps * (abs(a) @ np.abs(b[:, 0])).max())


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spmm_column_blocks(dtype):
    """csrmm's workgroups of 64 columns of B: all below k (B's rows read unguarded), the last partial,
    or k below 64; a matrix with empty rows and a dense row, and one with nnz = 0."""
    rng = np.random.default_rng(11)
    a = random_csr(70, 90, 0.05, seed=11, dtype=dtype, dense_row=5, empty_rows=(0, 69))
    eps = np.finfo(dtype).eps
    for k in (1, 64, 67, 130):
        b = rng.standard_normal((90, k)).astype(dtype)
        got = np.asarray(ours(a) @ b)
        bound = 90 * eps * (abs(a) @ np.abs(b))
        assert got.shape == (70, k) and np.all(np.abs(got - a @ b) <= bound + np.finfo(dtype).tiny)
    empty = sp.csr_matrix((np.zeros(0, dtype), np.zeros(0, np.int32), np.zeros(71, np.int32)), shape=(70, 90))
    np.testing.assert_array_equal(ours(empty) @ rng.standard_normal((90, 67)).astype(dtype), np.zeros((70, 67), dtype))


@pytest.mark.slow
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_conversions(index_dtype):
    a = random_csr(90, 61, 0.1, seed=9, dense_row=4, empty_rows=(0, 89))
    dense = a.toarray()
    csr = cs.bcsr_fromdense(dense, index_dtype=index_dtype)
    assert csr.indices.dtype == index_dtype and csr.nse == a.nnz
    np.testing.assert_array_equal(csr.indptr, a.indptr)
    np.testing.assert_array_equal(csr.indices, a.indices)
    np.testing.assert_array_equal(csr.todense(), dense)
    t = ours(a).T
    np.testing.assert_array_equal(t.indptr, a.T.tocsr().indptr)
    np.testing.assert_array_equal(t.todense(), dense.T)
    csc = a.tocsc()
    np.testing.assert_array_equal(cs.csc_matrix((csc.data, csc.indices, csc.indptr), shape=a.shape).todense(), dense)
    np.testing.assert_array_equal(cs.fromdense(dense).todense(), dense)
    np.testing.assert_array_equal(cs.bcsr_fromdense(np.zeros((3, 4))).todense(), np.zeros((3, 4)))


def test_coo2csr_entry_pass():
    """sparse.coo2csr compiled against np.searchsorted on sorted row ids: empty rows, one row of 300
    entries, ids below 0 and past the last row, zero nnz, rows crossing workgroups of entries; row_map
    "unsigned_min" (the matcher's: a negative id read as the last row) on ids sorted once so read."""
    from cdnajit.frontend.sparse import calls
    rng = np.random.default_rng(3)
    crossing = np.repeat(np.arange(3), [59, 75, 7])   # row 1 starts inside the first workgroup, ends in the third
    cases = [(np.sort(rng.integers(0, 200, 900)), 200), (np.concatenate([np.full(300, 7), np.arange(8, 40)]), 129),
             (np.sort(rng.integers(-3, 70, 50)), 64), (np.array([], np.int64), 65), (np.array([5, 5, 5]), 0),
             (np.sort(rng.integers(0, 1000, 20)), 1000), (crossing, 4), (crossing + 1, 2)]
    for rows, m in cases:
        for dtype in (np.int32, np.int64):
            got = cj.jit(lambda r: calls.coo_indptr(r, rows=m))(rows.astype(dtype))
            np.testing.assert_array_equal(got, np.searchsorted(rows, np.arange(m + 1), side="left"))
    ids = np.array([0, 0, 2, 2, 3, 9, -1, -7], np.int32)        # read as 0 0 2 2 3 5 5 5 for 5 rows
    got = cj.jit(lambda r: calls.sparse_call("coo2csr", r, rows=5, row_map="unsigned_min")[0])(ids)
    np.testing.assert_array_equal(got, [0, 2, 2, 4, 5, 5])


@pytest.mark.slow
def test_coo_duplicates_and_unsorted_are_summed():
    rng = np.random.default_rng(11)
    rows, columns = rng.integers(0, 20, 300), rng.integers(0, 15, 300)
    data = rng.standard_normal(300)
    reference = sp.coo_matrix((data, (rows, columns)), shape=(20, 15))
    coo = cs.coo_matrix((data, (rows, columns)), shape=(20, 15))
    np.testing.assert_allclose(coo.todense(), reference.toarray(), atol=1e-13)
    np.testing.assert_allclose(coo @ np.ones(15), reference @ np.ones(15), atol=1e-13)
    merged = coo.sum_duplicates()
    reference.sum_duplicates()
    expected = reference.tocsr().tocoo()
    assert merged.nse == expected.nnz
    np.testing.assert_array_equal(merged.indices, np.stack([expected.row, expected.col], axis=1))
    np.testing.assert_allclose(merged.data, expected.data, atol=1e-13)


@pytest.mark.slow
def test_spgemm():
    a = random_csr(200, 150, 0.03, seed=12, dense_row=1, empty_rows=(0,))
    b = random_csr(150, 170, 0.03, seed=13, dense_row=2)
    c = ours(a) @ ours(b)
    expected = (a @ b).tocsr()
    expected.sort_indices()
    np.testing.assert_array_equal(c.indptr, expected.indptr)
    got = sp.csr_matrix((c.data, c.indices, c.indptr), shape=c.shape)
    got.sort_indices()
    np.testing.assert_array_equal(got.indices, expected.indices)
    np.testing.assert_allclose(got.data, expected.data, atol=150 * np.finfo(float).eps * (abs(a) @ abs(b)).max())
    check_spgemm_under_jit(a, b, c)


def check_spgemm_under_jit(a, b, c):
    """Under jit C has a static nse, min(nse_a nse_b, m n) (formats.spgemm_bounds), its entries past
    indptr[-1] padding (column 0, value 0): compiled and interpreted equal the eager product exactly
    (the same passes, the same order of sums)."""
    nse = min(a.nnz * b.nnz, a.shape[0] * b.shape[1])
    product = lambda x, y: x @ y
    for backend in ("interpret", None):
        jitted = cj.jit(product, backend=backend) if backend else cj.jit(product)
        d = jitted(ours(a), ours(b))
        assert (d.nse, d.shape) == (nse, c.shape)
        np.testing.assert_array_equal(np.asarray(d.indptr), np.asarray(c.indptr))
        used = int(np.asarray(c.indptr)[-1])
        np.testing.assert_array_equal(np.asarray(d.indices)[:used], np.asarray(c.indices))
        np.testing.assert_array_equal(np.asarray(d.data)[:used], np.asarray(c.data))
        assert not np.any(np.asarray(d.data)[used:]) and not np.any(np.asarray(d.indices)[used:])


@pytest.mark.slow
@pytest.mark.parametrize("dtype, index", [(np.float64, np.int32), (np.float32, np.int64)])
def test_spgemm_lds_and_global_tables(dtype, index):
    """Rows of 0, 1, 31, 32, 33, 63, 64, 65, 130 and 200 products around the LDS tables' bound
    (libs/sparse/spgemm.py): rows of at most 64 products (half the 128 slots) hash in their
    work-item's LDS slice (spgemm_bound gives them no global table), longer ones in the global
    table. B with one entry per row, all columns distinct: every product a new key; B with two
    entries per row among 40 columns: repeated columns (within a row of B too) summed. Against
    scipy (indptr, sorted columns exact; values by the model 2 k eps (|A| |B|), k the row's
    products, in the working dtype); compiled == interpreted == eager bit for bit, under jit."""
    from cdnajit.frontend.sparse import calls
    rng = np.random.default_rng(21)
    lengths = [0, 1, 31, 32, 33, 63, 64, 65, 130, 200]
    k = 200
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.concatenate([np.sort(rng.choice(k, length, replace=False)) for length in lengths])
    a = sp.csr_matrix((rng.standard_normal(indptr[-1]).astype(dtype), indices, indptr), shape=(len(lengths), k))
    distinct = sp.csr_matrix((rng.standard_normal(k).astype(dtype), rng.permutation(300)[:k], np.arange(k + 1)),
                             shape=(k, 300))
    repeated = sp.csr_matrix((rng.standard_normal(2 * k).astype(dtype), rng.integers(0, 40, 2 * k),
                              np.arange(0, 2 * k + 1, 2)), shape=(k, 40))
    # Our operands own copies: scipy's products merge a B with repeated columns in place.
    wide = lambda x: cs.csr_matrix((x.data.copy(), x.indices.astype(index), x.indptr.astype(index)), shape=x.shape)
    for b, per_row in ((distinct, 1), (repeated, 2)):
        products = np.array(lengths) * per_row
        ours_a, ours_b = wide(a), wide(b)
        tables = np.diff(np.asarray(calls.spgemm_tables(ours_a.indices, ours_a.indptr, ours_b.indptr)))
        np.testing.assert_array_equal(tables == 0, products <= 64)
        c = ours_a @ ours_b
        expected = (a @ b.copy()).tocsr()
        expected.sort_indices()
        got = sp.csr_matrix((np.array(c.data), np.array(c.indices), np.array(c.indptr)), shape=c.shape).sorted_indices()
        np.testing.assert_array_equal(got.indptr, expected.indptr)
        np.testing.assert_array_equal(got.indices, expected.indices)
        rows = np.repeat(np.arange(len(lengths)), np.diff(expected.indptr))
        bound = 2 * products.max() * np.finfo(dtype).eps * (abs(a) @ abs(b.copy())).toarray()[rows, expected.indices]
        np.testing.assert_array_less(np.abs(got.data - expected.data), bound + np.finfo(dtype).tiny)
        product = lambda x, y: x @ y
        for backend in ("interpret", None):
            d = (cj.jit(product, backend=backend) if backend else cj.jit(product))(ours_a, ours_b)
            used = int(np.asarray(c.indptr)[-1])
            np.testing.assert_array_equal(np.asarray(d.indptr), np.asarray(c.indptr))
            np.testing.assert_array_equal(np.asarray(d.indices)[:used], np.asarray(c.indices))
            np.testing.assert_array_equal(np.asarray(d.data)[:used], np.asarray(c.data))


@pytest.mark.slow
def test_spgemm_under_jit_bad_indices_stay_inside():
    """Traced index arrays that were not checked (indptr decreasing, so rows overlap and the products
    exceed the static bound) never make a pass write outside its tables or C: compiled and
    interpreted agree (the kernels leave a row whose table would not fit empty); cs.checked names it."""
    data, indices = np.ones(4), np.array([0, 1, 1, 0], np.int32)
    indptr = np.array([0, 4, 0, 4, 0], np.int32)          # rows 1 and 3 reread rows 0 and 2's entries
    f = lambda d, i, p: (cs.BCSR((d, i, p), shape=(4, 2)) @ cs.BCSR((d[:2], i[:2], p[:3] // 2), shape=(2, 2)))
    results = [cj.jit(f, backend=backend)(data, indices, indptr) if backend else cj.jit(f)(data, indices, indptr)
               for backend in ("interpret", None)]
    for x, y in zip(*(cj.tree_flatten(r)[0] for r in results)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    with pytest.raises(cj.errors.TracingValueError, match="indptr must start at 0, never decrease"):
        cs.checked(f)(data, indices, indptr)


@pytest.mark.slow
@pytest.mark.parametrize("lower", [True, False])
def test_triangular_solve(lower):
    m = 300
    t = sp.random(m, m, density=0.02, random_state=14) + sp.eye(m) * 4
    t = (sp.tril(t) if lower else sp.triu(t)).tocsr()
    b = np.random.default_rng(14).standard_normal(m)
    x = cs.spsolve_triangular(ours(t), b, lower=lower)
    np.testing.assert_allclose(x, spl.spsolve_triangular(t, b, lower=lower), rtol=1e-12, atol=1e-12)
    f = cj.jit(lambda a, v: cs.spsolve_triangular(a, v, lower=lower), backend="interpret")
    np.testing.assert_allclose(f(ours(t), b), x, rtol=1e-12, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("dtype, lower, unit", [(np.complex64, True, False), (np.complex128, False, False),
                                                (np.complex128, True, True)])
def test_complex_triangular_solve(dtype, lower, unit):
    """Complex csrsv against scipy through the residual: substitution is backward stable, each row's
    y_r satisfying its equation with |dT| <= gamma_(k+2) |T| (Higham, Thm 8.5; k the row's length, a
    complex product or division costing at most 2 sqrt 2 eps), so |b - T y| <= 2 sqrt 2 (k + 2) eps
    (|T| |y|) per row, the residual taken in complex128 (whose own rounding the same bound covers
    for c128, hence a factor 2); against scipy through |T^-1| times that bound. Compiled equals
    interpreted bit for bit (the same operations)."""
    m = 257
    rng = np.random.default_rng(21)
    t = sp.random(m, m, density=0.03, random_state=21) * (1 - 2j) + sp.random(m, m, density=0.03, random_state=22) * 1j
    t = (t + sp.diags(rng.uniform(2, 4, m) * np.exp(1j * rng.uniform(0, 6.3, m)))).astype(dtype)
    t = (sp.tril(t) if lower else sp.triu(t)).tocsr()
    if unit:
        t.setdiag(0)
        t.eliminate_zeros()
    b = (rng.standard_normal(m) + 1j * rng.standard_normal(m)).astype(dtype)
    solve = lambda a, v: cs.spsolve_triangular(a, v, lower=lower, unit_diagonal=unit)
    y = cj.jit(solve)(ours(t), b)
    assert np.asarray(y).dtype == dtype
    np.testing.assert_array_equal(np.asarray(cj.jit(solve, backend="interpret")(ours(t), b)), np.asarray(y))
    full = t.astype(np.complex128) + (sp.eye(m) if unit else 0)
    k = np.diff(full.tocsr().indptr)
    residual = np.abs(b.astype(np.complex128) - full @ np.asarray(y, np.complex128))
    bound = 2 * 2 * np.sqrt(2) * (k + 2) * np.finfo(dtype).eps * (abs(full) @ np.abs(np.asarray(y)))
    assert np.all(residual <= bound)
    # y - y* = T^-1 (T y - b): |y - scipy's| <= |T^-1| bound, twice for scipy's own error of that model.
    expected = spl.spsolve_triangular(full.tocsr(), b.astype(np.complex128), lower=lower)
    assert np.all(np.abs(np.asarray(y) - expected) <= 2 * np.abs(np.linalg.inv(full.toarray())) @ bound)


@pytest.mark.slow
def test_bcoo_api_under_jit():
    a = random_csr(50, 40, 0.1, seed=15)
    dense = a.toarray()
    x = np.random.default_rng(15).standard_normal(40)

    @cj.jit
    def f(d, v):
        m = cs.fromdense(d, nse=a.nnz + 3)
        return (m @ v, m.T @ cs.bcoo_dot_general(m, v, dimension_numbers=(((1,), (0,)), ((), ()))),
                (m * 2.0).sum(), (m * d).todense(), m.sum(0).todense(), m.reshape(25, 80).todense())

    y, z, total, squared, columns, reshaped = f(dense, x)
    np.testing.assert_array_equal(reshaped, dense.reshape(25, 80))
    np.testing.assert_allclose(y, dense @ x, atol=1e-12)
    np.testing.assert_allclose(z, dense.T @ (dense @ x), atol=1e-12)
    np.testing.assert_allclose(total, 2 * dense.sum(), atol=1e-12)
    np.testing.assert_array_equal(squared, dense * dense)
    np.testing.assert_allclose(columns, dense.sum(0), atol=1e-12)


@pytest.mark.slow
def test_every_routine_builds_for_amdgpu():
    """Each routine's kernel goes through the AMDGPU backend into the program's kernel reports."""
    from cdnajit.frontend.sparse import calls
    from cdnajit.libs.sparse.routines import ROUTINES

    a = random_csr(40, 40, 0.1, seed=16) + sp.eye(40, format="csr")
    arrays = (a.data, a.indices.astype(np.int32), a.indptr.astype(np.int32))
    table_ptr = np.zeros(41, np.int32)
    programs = [
        (lambda d, i, p, v: cs.csr_matrix((d, i, p), shape=a.shape).T @ v, (*arrays, np.ones((40, 3)))),
        (lambda d, i, p, x: cs.csr_matrix((d, i, p), shape=a.shape) @ x, (*arrays, np.ones(40))),
        (lambda d, i, p, v: cs.spsolve_triangular(cs.csr_matrix((d, i, p), shape=a.shape), v[0]),
         (*arrays, np.ones((40, 40)))),
        (lambda d, i, p, v: cs.sddmm(cs.csr_matrix((d, i, p), shape=a.shape), v, v).data @ d, (*arrays, np.ones((40, 40)))),
        (lambda d: cs.bcsr_fromdense(d, nse=300).indices, (a.toarray(),)),
        (lambda d, i, p: cs.csr_matrix((d, i, p), shape=a.shape).to_ell(width=4), arrays),
        (lambda c, v, x: cs.ell_matvec(c, v, x), (np.zeros((4, 3), np.int32), np.ones((4, 3)), np.ones(5))),
        (lambda d, i, p, x: cs.bsr_matvec(d, i, p, x), (np.ones((2, 2, 3)), np.array([0, 1], np.int32),
                                                        np.array([0, 1, 2], np.int32), np.ones(6))),
        (lambda d, i, p, x: cs.csr_matrix((d, i, p), shape=a.shape).to_bsr((4, 5), nnzb=90) @ x,
         (*arrays, np.ones((40, 2)))),
        (lambda d, i, p, x: calls.sparse_call("csrmv_ell", p, i, d, x, width=3, column_map="wrap_clamp")[0],
         (*arrays, np.ones(40))),
        (lambda i, p: calls.spgemm_tables(i, p, p), arrays[1:]),
        (lambda i, p, t: calls.spgemm_symbolic(i, p, i, p, t, table=20), (*arrays[1:], table_ptr)),
        (lambda d, i, p, t: calls.spgemm_numeric(d, i, p, d, i, p, t, t, nse=10, table=20), (*arrays, table_ptr)),
        # i64 keys and f64 values: the numeric pass's LDS tables take the whole 64 KiB
        (lambda d, i, p, t: calls.spgemm_numeric(d, i, p, d, i, p, t, t, nse=10, table=20),
         (arrays[0], *(v.astype(np.int64) for v in (*arrays[1:], table_ptr)))),
        (lambda r, c, d, x: ops_segment_spmv(r, c, d, x), (np.zeros(30, np.int32), np.zeros(30, np.int32), np.ones(30),
                                                          np.ones(40))),
    ]
    reported = set()
    for program, inputs in programs:
        for kernel in cj.jit(program).lower(*inputs).compile().kernels:
            routines = {op.split(".")[1] for op in kernel.source_ops if op.startswith("sparse.")}
            assert not routines or kernel.vgpr_count > 0, kernel   # the AMDGPU backend's resource usage
            reported |= routines
    assert reported == set(ROUTINES)


def ops_segment_spmv(rows, columns, values, x):
    return cj.ops.segment_sum(values * x[columns], rows, num_segments=40)


def unchecked_csr(data, indices, indptr, n):
    """A BCSR of traced arrays (inside jit): nothing checks them, the kernels read them safely."""
    return cs.BCSR((data, indices, indptr), shape=(len(indptr) - 1, n))


def test_out_of_range_indices_never_read_outside():
    """Under jit, columns -1 and n (and far beyond) contribute nothing and an indptr ending past nse
    is read as nse (routines.py's contract, JAX BCOO's padding): y is the product of the in-range
    entries, exactly (every row has at most one in-range entry, so no rounding), compiled and
    interpreted alike."""
    data = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    indices = np.array([0, -1, 3, 1 << 30, 2], np.int32)
    indptr = np.array([0, 2, 3, 4, 9], np.int32)   # ends past nse = 5
    x = np.array([1.0, 10.0, 100.0])
    expected = np.array([1.0, 0.0, 0.0, 1600.0])
    spmv = lambda d, i, p, v: unchecked_csr(d, i, p, 3) @ v
    np.testing.assert_array_equal(cj.jit(spmv)(data, indices, indptr, x), expected)
    np.testing.assert_array_equal(cj.jit(spmv, backend="interpret")(data, indices, indptr, x), expected)


@pytest.mark.slow
def test_out_of_range_indices_spmm_sddmm_ell():
    """The other gathers: SpMM's rows of B, SDDMM's rows of Bt (value 0), ELL's columns: an index
    outside [0, n) contributes nothing; exact (one in-range entry per row)."""
    data = np.array([1.0, 2.0, 4.0, 8.0])
    indices = np.array([1, 7, -3, 0], np.int64)
    indptr = np.array([0, 2, 3, 7], np.int64)
    b = np.array([[1.0, 2.0], [3.0, 5.0]])
    product = cj.jit(lambda d, i, p, v: unchecked_csr(d, i, p, 2) @ v)(data, indices, indptr, b)
    np.testing.assert_array_equal(product, [[3.0, 5.0], [0.0, 0.0], [8.0, 16.0]])
    sampled = cj.jit(lambda i, p, u, v: cs.sddmm(unchecked_csr(np.ones(4), i, p, 2), u, v).data)(
        indices, indptr, np.ones((3, 2)), b.T.copy())
    np.testing.assert_array_equal(sampled, [8.0, 0.0, 0.0, 3.0])   # ones @ b.T: row sums of b
    columns = np.array([[0, 2, -1], [5, 1, 1 << 40]])
    ell = cs.ell_matvec(columns, np.array([[1.0, 2.0, 4.0], [8.0, 16.0, 32.0]]), np.array([1.0, 10.0]))
    np.testing.assert_array_equal(ell, [1.0, 160.0])


@pytest.mark.slow
def test_out_of_range_indices_csrsv_and_transpose():
    """csrsv (levels and solve) and csr2coo/csr2ell under jit with columns -1 and m and an indptr
    ending past nse: the out-of-range entries drop out, so the answers are those of the matrix
    without them (exact: powers of two)."""
    data = np.array([2.0, 4.0, 8.0, 0.5, 1.0, 16.0])
    indices = np.array([0, -1, 4, 0, 1, 3], np.int32)   # -1 and 4 are outside the 4 x 4 matrix
    indptr = np.array([0, 1, 3, 5, 9], np.int32)          # row 3 reads past nse = 6
    kept = sp.csr_matrix((np.array([2.0, 8.0, 0.5, 1.0, 0, 0]), np.array([0, 1, 0, 1, 2, 3]),
                          np.array([0, 1, 2, 4, 6])), shape=(4, 4))   # what the kernels see (rows 1 and 3 diagonal 1)
    b = np.array([2.0, 4.0, 8.0, 16.0])
    solve = cj.jit(lambda d, i, p, v: cs.spsolve_triangular(unchecked_csr(d, i, p, 4), v, unit_diagonal=True))
    np.testing.assert_array_equal(solve(data, indices, indptr, b),
                                  spl.spsolve_triangular(kept, b, lower=True, unit_diagonal=True))
    in_range_columns = np.array([0, 0, 2, 0, 1, 3], np.int32)
    transposed = cj.jit(lambda d, i, p: unchecked_csr(d, i, p, 4).T.todense())(data, in_range_columns, indptr)
    np.testing.assert_array_equal(transposed, sp.csr_matrix((data, [0, 0, 2, 0, 1, 3], [0, 1, 3, 5, 6]),
                                                            shape=(4, 4)).toarray().T)


def test_bsr_matvec():
    """BSR SpMV against scipy's bsr_matrix, 2 x 3 blocks, an empty block row, f64, compiled and
    interpreted; tolerance: k eps (|A| |x|), k = the longest row's entries."""
    dense = sp.random(10, 12, density=0.3, random_state=4).toarray()
    dense[4:6] = 0
    a = sp.csr_matrix(dense)
    b = sp.bsr_matrix(dense, blocksize=(2, 3))
    x = np.random.default_rng(4).standard_normal(12)
    args = (b.data, b.indices.astype(np.int32), b.indptr.astype(np.int32), x)
    tolerance = 12 * np.finfo(np.float64).eps * (abs(a) @ np.abs(x)) + 1e-300
    for backend in ("compiled", "interpret"):
        y = cj.jit(lambda *v: cs.bsr_matvec(*v), backend=backend)(*args)
        np.testing.assert_array_less(np.abs(y - a @ x), tolerance)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_spgemm_and_sddmm(dtype):
    """Complex SpGEMM and SDDMM as four real products on one structure, against scipy / numpy: each
    entry a sum of k complex products (4 k real roundings): |error| <= 4 k eps (|A| |B|)."""
    rng = np.random.default_rng(7)
    a = (random_csr(9, 7, 0.3, seed=1) * (1 + 2j) + random_csr(9, 7, 0.3, seed=2) * 1j).astype(dtype).tocsr()
    b = (random_csr(7, 8, 0.3, seed=3) * (2 - 1j)).astype(dtype).tocsr()
    eps = np.finfo(dtype).eps
    ca, cb = (cs.csr_matrix((m.data, m.indices, m.indptr), shape=m.shape) for m in (a, b))
    c = ca @ cb
    assert np.asarray(c.data).dtype == dtype
    check_spgemm_under_jit(a, b, c)
    bound = 4 * 7 * eps * (abs(a) @ abs(b)).toarray()
    assert np.all(np.abs(np.asarray(c.todense()) - (a @ b).toarray()) <= bound + 1e-30)
    x = (rng.standard_normal((9, 4)) + 1j * rng.standard_normal((9, 4))).astype(dtype)
    y = (rng.standard_normal((4, 7)) + 1j * rng.standard_normal((4, 7))).astype(dtype)
    rows = np.repeat(np.arange(9), np.diff(a.indptr))
    want, size = (x @ y)[rows, a.indices], (np.abs(x) @ np.abs(y))[rows, a.indices]
    for got in (cs.sddmm(ca, x, y).data, cj.jit(lambda m, x, y: cs.sddmm(m, x, y).data)(ca, x, y)):
        assert np.asarray(got).dtype == dtype and np.all(np.abs(np.asarray(got) - want) <= 4 * 4 * eps * size)
