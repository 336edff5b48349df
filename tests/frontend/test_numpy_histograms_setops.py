"""searchsorted, digitize, bincount, the histograms and the set operations against numpy, eagerly and
under jit; dtypes and fills against JAX's answers (stored)."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp

RNG = np.random.default_rng(12)


SLOW = pytest.mark.slow


@pytest.mark.parametrize("n, side", [(0, "left"), (1, "right"), (2, "left"), (7, "right"),
                                     pytest.param(64, "left", marks=SLOW), (129, "right")])
def test_searchsorted_matches_numpy_with_ties_and_nans(n, side, run_both):
    a = np.sort(RNG.integers(0, 6, n).astype(np.float64))
    if n > 2:
        a[-1] = np.nan                       # NaNs sort last, as in jnp.sort
    v = np.array([-1.0, 0.0, 2.0, 2.5, 5.0, 9.0, np.nan])
    result = run_both(cnp.searchsorted, a, v, side=side)
    assert result.dtype == np.int32                          # JAX's index dtype
    np.testing.assert_array_equal(result, np.searchsorted(a, v, side=side))


def test_searchsorted_with_sorter_and_integers(run_both):
    a = RNG.integers(-50, 50, 33).astype(np.int32)
    sorter = np.argsort(a, kind="stable")
    v = RNG.integers(-60, 60, (3, 4)).astype(np.int32)
    np.testing.assert_array_equal(run_both(cnp.searchsorted, a, v, sorter=sorter), np.searchsorted(a, v, sorter=sorter))


@pytest.mark.parametrize("right, bins", [(False, np.array([0.0, 1.0, 2.5, 4.0])),
                                         (True, np.array([4.0, 2.5, 1.0, 0.0]))])
def test_digitize_increasing_and_decreasing_bins(right, bins, run_both):
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.5, 3.0, 4.0, 7.0])
    np.testing.assert_array_equal(run_both(cnp.digitize, x, bins, right=right), np.digitize(x, bins, right=right))


@pytest.mark.parametrize("n", [0, 9])
def test_bincount(n, run_both):
    x = RNG.integers(0, 5, n)
    w = RNG.normal(size=n).astype(np.float32)
    np.testing.assert_array_equal(run_both(cnp.bincount, x, length=6), np.bincount(x, minlength=6))
    result = run_both(cnp.bincount, x, w, length=6)
    assert result.dtype == np.float32
    np.testing.assert_allclose(result, np.bincount(x, w, minlength=6), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(cnp.bincount(x, minlength=2), np.bincount(x, minlength=2))  # eager: max + 1
    # As JAX: negative values count as 0, values past length are dropped (stored answer).
    np.testing.assert_array_equal(cnp.bincount(np.array([1, -1, 9]), minlength=3, length=4), [1, 1, 0, 0])


@pytest.mark.parametrize("dtype, n", [(np.float64, 1), (np.float32, 257), (np.int64, 10),
                                      pytest.param(np.float32, 10, marks=SLOW)])
def test_histogram_matches_numpy(dtype, n, run_both):
    a = (RNG.normal(size=n) * 4).astype(dtype)
    counts, edges = run_both(cnp.histogram, a, bins=7)
    expected_counts, expected_edges = np.histogram(a, 7)
    np.testing.assert_array_equal(counts, expected_counts)
    # an edge lo (1 - t) + hi t is off by a few roundings of the range's magnitude, not of its own value
    scale = np.abs(expected_edges[[0, -1]]).max()
    np.testing.assert_allclose(edges, expected_edges, rtol=0, atol=4 * np.finfo(edges.dtype).eps * scale)
    assert counts.dtype == edges.dtype == (np.float64 if dtype == np.int64 else dtype)  # JAX: counts are inexact
    w = RNG.random(n)
    counts, _ = run_both(cnp.histogram, a, np.array([-3.0, -1.0, 0.0, 2.0, 5.0]), weights=w, density=True)
    expected, _ = np.histogram(a, np.array([-3.0, -1.0, 0.0, 2.0, 5.0]), weights=w, density=True)
    np.testing.assert_allclose(counts, expected, rtol=1e-12)
    counts, _ = run_both(cnp.histogram, a, bins=4, range=(-1.0, 1.0))
    np.testing.assert_array_equal(counts, np.histogram(a, 4, range=(-1.0, 1.0))[0])


def test_histogram_edge_cases_as_jax():
    counts, edges = cnp.histogram(np.array([1.0, 1.0, 1.0]), 2)  # an empty range widens by 0.5 each side
    np.testing.assert_array_equal(edges, [0.5, 1.0, 1.5])
    np.testing.assert_array_equal(counts, [0.0, 3.0])
    counts, edges = cnp.histogram(np.array([3, 0, 1, 3, 0, 2], np.int32), 3)  # stored JAX answer
    assert counts.dtype == edges.dtype
    np.testing.assert_array_equal(counts, [2.0, 1.0, 3.0])
    with pytest.raises(NotImplementedError, match="bin-width estimator"):
        cnp.histogram(np.ones(3), "auto")


def test_histogram2d_and_histogramdd(run_both):
    x, y = RNG.normal(size=50), RNG.normal(size=50)
    counts, x_edges, y_edges = run_both(cnp.histogram2d, x, y, bins=(3, 4))
    expected, ex, ey = np.histogram2d(x, y, bins=(3, 4))
    np.testing.assert_array_equal(counts, expected)
    np.testing.assert_allclose(x_edges, ex, rtol=1e-15)
    np.testing.assert_allclose(y_edges, ey, rtol=1e-15)
    sample = RNG.random((40, 3))
    counts, edges = run_both(cnp.histogramdd, sample, bins=3, range=[(0, 1)] * 3, density=True)
    expected, expected_edges = np.histogramdd(sample, bins=3, range=[(0, 1)] * 3, density=True)
    np.testing.assert_allclose(counts, expected, rtol=1e-12)
    for e, ee in zip(edges, expected_edges):
        np.testing.assert_allclose(e, ee, rtol=1e-15)


@pytest.mark.parametrize("values", [
    np.array([3, 0, 1, 3, 0, 2], np.int32),
    np.array([], np.float64),
    np.array([2.0, np.nan, 1.0, np.nan, 2.0, -0.5]),
    np.array([[1, 1, 2], [5, 2, 1], [7, 7, 7]], np.int64),
    np.array([True, False, True]),
])
def test_unique_matches_numpy(values, run_both):
    expected = np.unique(values, return_index=True, return_inverse=True, return_counts=True)
    count = expected[0].size
    result = run_both(cnp.unique, values, return_index=True, return_inverse=True, return_counts=True,
                      size=count, fill_value=0 if not count else None)
    for r, e in zip(result, expected):
        np.testing.assert_array_equal(r, e.reshape(r.shape) if e.size == r.size else e)
    eager = cnp.unique(values)  # eagerly without size: the count from the values
    np.testing.assert_array_equal(eager, expected[0])
    if count:
        padded, index, counts = cnp.unique(values, return_index=True, return_counts=True, size=count + 2)
        np.testing.assert_array_equal(padded[count:], expected[0][0])  # JAX pads with the smallest value
        np.testing.assert_array_equal(counts[count:], 0)


def test_unique_options():
    x = np.array([np.nan, 1.0, np.nan])
    np.testing.assert_array_equal(cnp.unique(x, equal_nan=False), [1.0, np.nan, np.nan])
    rows = np.array([[1, 2], [0, 5], [1, 2]])
    values, counts = cnp.unique(rows, axis=0, return_counts=True)
    expected, expected_counts = np.unique(rows, axis=0, return_counts=True)
    np.testing.assert_array_equal(values, expected)
    np.testing.assert_array_equal(counts, expected_counts)
    f = np.array([0.5, 2.0, 1.0, np.nan, 2.0], np.float32)
    result = cnp.unique_all(f)
    np.testing.assert_array_equal(result.values, [0.5, 1.0, 2.0, np.nan])
    np.testing.assert_array_equal(result.indices, [0, 2, 1, 3])
    np.testing.assert_array_equal(result.inverse_indices, [0, 2, 1, 3, 2])
    np.testing.assert_array_equal(result.counts, [1, 1, 2, 1])
    np.testing.assert_array_equal(cnp.unique_counts(f).counts, [1, 1, 2, 1])
    np.testing.assert_array_equal(cnp.unique_inverse(f).inverse_indices, [0, 2, 1, 3, 2])
    np.testing.assert_array_equal(cnp.unique_values(f), [0.5, 1.0, 2.0, np.nan])


@pytest.mark.parametrize("n1, n2", [(0, 3), (9, 6), pytest.param(5, 0, marks=SLOW), pytest.param(17, 17, marks=SLOW)])
def test_set_operations_match_numpy(n1, n2, run_both):
    a = RNG.integers(0, 8, n1).astype(np.int32)
    b = RNG.integers(3, 12, n2)
    np.testing.assert_array_equal(run_both(cnp.isin, a, b), np.isin(a, b))
    np.testing.assert_array_equal(run_both(cnp.isin, a, b, invert=True), np.isin(a, b, invert=True))
    for ours, theirs in [(cnp.union1d, np.union1d), (cnp.intersect1d, np.intersect1d),
                         (cnp.setdiff1d, np.setdiff1d), (cnp.setxor1d, np.setxor1d)]:
        expected = theirs(a, b)
        result = run_both(ours, a, b, size=expected.size + 2, fill_value=-1)
        np.testing.assert_array_equal(result[:expected.size], expected)
        np.testing.assert_array_equal(result[expected.size:], -1)
        np.testing.assert_array_equal(ours(a, b), expected)  # eager without size
    values, index1, index2 = cnp.intersect1d(a, b, return_indices=True)
    expected = np.intersect1d(a, b, return_indices=True)
    for r, e in zip((values, index1, index2), expected):
        np.testing.assert_array_equal(r, e)


def test_set_operation_dtypes_and_fills_as_jax():
    x = np.array([3, 0, 1, 3, 0, 2], np.int32)
    # stored JAX answers
    result = cnp.setdiff1d(x, np.array([3]), size=4)
    assert result.dtype == np.int32 and result.tolist() == [0, 1, 2, 0]
    result = cnp.union1d(x, np.array([7]), size=7)
    assert result.dtype == np.int64 and result.tolist() == [0, 1, 2, 3, 7, 0, 0]
    assert cnp.setxor1d(x, np.array([3, 2, 9]), size=5).tolist() == [0, 1, 9, 0, 0]
    values, i1, i2 = cnp.intersect1d(x, np.array([3, 2, 9]), size=3, return_indices=True)
    assert (values.tolist(), i1.tolist(), i2.tolist()) == ([2, 3, 2], [5, 0, 6], [1, 0, 3])


def test_lexsort_partition_sort_complex(run_both):
    keys = (RNG.integers(0, 3, 11), RNG.integers(0, 3, 11), RNG.normal(size=11))
    np.testing.assert_array_equal(run_both(lambda *k: cnp.lexsort(k), *keys), np.lexsort(keys))
    x = np.array([5, 1, 4, 2, 3, 0])
    result = run_both(cnp.partition, x, kth=2)
    np.testing.assert_array_equal(result, [0, 1, 2, 5, 4, 3])              # JAX's order (stored)
    np.testing.assert_array_equal(run_both(cnp.argpartition, x, kth=2), [5, 1, 3, 0, 2, 4])
    y = RNG.normal(size=(3, 8))
    part = run_both(cnp.partition, y, kth=3, axis=1)
    np.testing.assert_array_equal(part[:, 3], np.sort(y, axis=1)[:, 3])
    assert (part[:, :3] <= part[:, 3:4]).all() and (part[:, 4:] >= part[:, 3:4]).all()
    c = np.array([1 + 2j, 1 - 1j, -3 + 0j])
    np.testing.assert_array_equal(run_both(cnp.sort_complex, c), np.sort_complex(c))
    assert cnp.sort_complex(np.array([3, 1], np.int32)).dtype == np.complex64  # JAX (stored)


def test_histogram_of_traced_data_and_range_under_jit():
    data = RNG.normal(size=100)
    counts, edges = cj.jit(lambda d: cnp.histogram(d, 5))(data)
    np.testing.assert_array_equal(counts, np.histogram(data, 5)[0])
    counts, edges = cj.jit(lambda d, lo: cnp.histogram(d, 4, range=(lo, 1.5)))(data, -0.5)
    np.testing.assert_array_equal(counts, np.histogram(data, 4, range=(-0.5, 1.5))[0])
