"""cov/corrcoef, the NaN-ignoring statistics, the array building and comparing functions and the
function transforms (vectorize, apply_along_axis, apply_over_axes) against numpy, eagerly and
under jit."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp

RNG = np.random.default_rng(14)
EPS = np.finfo(np.float64).eps


def with_nans(shape, fraction=0.3):
    x = RNG.normal(size=shape)
    x[RNG.random(shape) < fraction] = np.nan
    return x


@pytest.mark.parametrize("shape, rowvar", [((3, 8), True), ((8, 3), False), ((5,), True), ((1, 6), True)])
def test_cov_and_corrcoef(shape, rowvar, assert_close, run_both):
    m = RNG.normal(size=shape)
    n = shape[-1] if rowvar else shape[0]
    bound = 8 * n * EPS * np.abs(m).max() ** 2
    assert_close(run_both(cnp.cov, m, rowvar=rowvar), np.cov(m, rowvar=rowvar), bound=bound)
    assert_close(run_both(cnp.cov, m, rowvar=rowvar, ddof=0), np.cov(m, rowvar=rowvar, ddof=0), bound=bound)
    f = RNG.integers(1, 4, n)
    a = RNG.random(n) + 0.1
    assert_close(run_both(cnp.cov, m, rowvar=rowvar, fweights=f, aweights=a),
                 np.cov(m, rowvar=rowvar, fweights=f, aweights=a), bound=8 * bound)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.corrcoef(m, rowvar=rowvar)
    assert_close(run_both(cnp.corrcoef, m, rowvar=rowvar), expected, bound=64 * n * EPS)


def test_cov_of_integers_and_two_arguments(assert_close):
    x = np.array([[1, 2, 4], [0, 1, 1]])
    assert_close(cnp.cov(x), np.cov(x), bound=8 * EPS * 16)
    y = np.array([3.0, -1.0, 0.5])
    assert_close(cnp.cov(x[0], y), np.cov(x[0], y), bound=8 * EPS * 16)


@pytest.mark.parametrize("shape, axis", [((7,), None), ((4, 5), 1), ((4, 5), 0), ((2, 3, 4), (0, 2))])
def test_nanvar_nanstd(shape, axis, assert_close, run_both):
    x = with_nans(shape)
    x.reshape(-1)[0] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for ddof in (0, 1):
                assert_close(run_both(cnp.nanvar, x, axis=axis, ddof=ddof), np.nanvar(x, axis=axis, ddof=ddof),
                             bound=16 * EPS * 10)
                assert_close(run_both(cnp.nanstd, x, axis=axis, ddof=ddof), np.nanstd(x, axis=axis, ddof=ddof),
                             bound=16 * EPS * 10)


def test_nan_statistics_dtypes_as_jax():
    i = np.array([3, 0, 1, 3, 0, 2], np.int32)
    # stored JAX answers (int32 statistics are float32)
    assert cnp.nanvar(i).dtype == np.float32 and np.isclose(cnp.nanvar(i), 1.5833333730697632)
    assert cnp.nanmedian(i).dtype == np.float32 and cnp.nanmedian(i) == 1.5
    assert cnp.nanquantile(i, 0.3) == 0.5
    f = np.array([0.5, 2.0, 1.0, np.nan, 2.0], np.float32)
    assert cnp.nanpercentile(f, 30).dtype == np.float32 and np.isclose(cnp.nanpercentile(f, 30), 0.95)
    # 'nearest' takes the lower element on a tie (numpy rounds the position half to even)
    x = np.array([1.0, 2, 3, 4, 5, 6, np.nan])
    np.testing.assert_array_equal(cnp.nanquantile(x, np.array([0.5, 0.7, 0.1]), method="nearest"), [3.0, 4.0, 1.0])


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint"])  # nearest: numpy rounds ties to even
@pytest.mark.parametrize("shape, axis", [((9,), None), ((4, 6), 1), ((3, 2, 5), (0, 2))])
def test_nanquantile(method, shape, axis, assert_close, run_both):
    x = with_nans(shape)
    if len(shape) == 2:
        x[1] = np.nan  # an all-NaN slice gives NaN
    q = np.array([0.0, 0.25, 0.5, 0.9, 1.0])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np.nanquantile(x, q, axis=axis, method=method)
    assert_close(run_both(cnp.nanquantile, x, q, axis=axis, method=method), expected, bound=4 * EPS * 4)
    if method == "linear":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert_close(cnp.nanmedian(x, axis=axis), np.nanmedian(x, axis=axis), bound=4 * EPS * 4)
            assert_close(cnp.nanpercentile(x, 40, axis=axis, keepdims=True),
                         np.nanpercentile(x, 40, axis=axis, keepdims=True), bound=4 * EPS * 4)


@pytest.mark.parametrize("shape, axis", [((6,), None), ((3, 4), 0), ((3, 4), 1)])
def test_nanargmax_nanargmin(shape, axis, run_both):
    x = with_nans(shape)
    x[(0,) * len(shape)] = np.nan
    np.testing.assert_array_equal(run_both(cnp.nanargmax, x, axis=axis), np.nanargmax(x, axis=axis))
    np.testing.assert_array_equal(run_both(cnp.nanargmin, x, axis=axis), np.nanargmin(x, axis=axis))
    all_nan = np.full((2, 3), np.nan)
    np.testing.assert_array_equal(cnp.nanargmax(all_nan, axis=1), [-1, -1])  # JAX's answer for all-NaN slices


# ---- building and comparing ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape, new_shape", [((5,), (3, 4)), ((2, 3), (7,)), ((3,), (0,)), ((4,), (2, 2))])
def test_resize(shape, new_shape, run_both):
    x = RNG.normal(size=shape)
    np.testing.assert_array_equal(run_both(cnp.resize, x, new_shape=new_shape), np.resize(x, new_shape))


def test_trim_zeros_block_diagflat_unstack_rollaxis(run_both):
    for values in ([0, 0, 1, 0, 2, 0], [0, 0], [1, 2], []):
        v = np.array(values, np.int64)
        for trim in ("fb", "f", "b"):
            np.testing.assert_array_equal(cnp.trim_zeros(v, trim), np.trim_zeros(v, trim))
    with pytest.raises(cj.ConcretizationError):
        cj.jit(cnp.trim_zeros)(np.ones(3))
    a, b, c = np.ones((2, 2)), np.zeros((2, 1)), np.arange(3.0)
    np.testing.assert_array_equal(run_both(lambda p, q, r: cnp.block([[p, q], [r]]), a, b, c),
                                  np.block([[a, b], [c]]))
    np.testing.assert_array_equal(cnp.block([c, c]), np.block([c, c]))
    np.testing.assert_array_equal(run_both(cnp.diagflat, a * 3, k=-1), np.diagflat(a * 3, -1))
    cube = RNG.normal(size=(2, 3, 4))
    for r, e in zip(run_both(cnp.unstack, cube, axis=1), [cube[:, i] for i in range(3)]):
        np.testing.assert_array_equal(r, e)
    for axis, start in [(2, 0), (0, 3), (1, -1), (-1, 1)]:
        np.testing.assert_array_equal(run_both(cnp.rollaxis, cube, axis=axis, start=start),
                                      np.rollaxis(cube, axis, start))
    np.testing.assert_array_equal(run_both(cnp.matrix_transpose, cube), np.swapaxes(cube, -1, -2))
    np.testing.assert_array_equal(cnp.fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=int),
                                  np.fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=int))


def test_comparisons_and_predicates(run_both):
    x = np.array([1.0, np.nan, 3.0])
    assert not run_both(cnp.array_equal, x, x) and run_both(cnp.array_equal, x, x, equal_nan=True)
    assert not cnp.array_equal(x, x[:2])
    assert cnp.array_equiv(np.ones((2, 3)), np.ones(3)) and not cnp.array_equiv(np.ones((2, 3)), np.ones(2))
    c = np.array([1 + 0j, 2j, 3 - 1e-300j])
    np.testing.assert_array_equal(run_both(cnp.iscomplex, c), np.iscomplex(c))
    np.testing.assert_array_equal(run_both(cnp.isreal, c), np.isreal(c))
    np.testing.assert_array_equal(cnp.isreal(np.ones(2)), [True, True])
    assert cnp.iscomplexobj(c) and cnp.isrealobj(x) and cnp.isscalar(3.0) and not cnp.isscalar(x)
    assert cnp.iterable(x) and not cnp.iterable(3)
    assert cnp.isdtype(np.int32, "integral") and not cnp.isdtype(np.float32, "integral")
    assert cnp.isdtype(cnp.bfloat16, "real floating") and cnp.isdtype(np.complex64, ("bool", "complex floating"))


@pytest.mark.parametrize("a_shape, b_shape", [((2, 3, 1, 4), (3, 4, 1)), ((3, 1, 2, 4), (5, 4, 2)),
                                              ((1, 3, 2, 4), (5, 1, 4, 2))])
def test_matmul_with_batch_dimensions_broadcast_from_both_sides(a_shape, b_shape, assert_close):
    # A regression test: a batch dimension shared after one held by a alone was reshaped into place.
    a, b = RNG.normal(size=a_shape), RNG.normal(size=b_shape)
    assert_close(cnp.matmul(a, b), np.matmul(a, b), bound=8 * EPS * 16)


def test_array_api_products(assert_close, run_both):
    a, b = RNG.normal(size=(2, 3, 4)) + 1j * RNG.normal(size=(2, 3, 4)), RNG.normal(size=(3, 4))
    assert_close(run_both(cnp.vecdot, a, b), np.sum(np.conj(a) * b, axis=-1), bound=16 * EPS * 8)
    m, v = RNG.normal(size=(2, 3, 4)), RNG.normal(size=4)
    assert_close(run_both(cnp.matvec, m, v), m @ v, bound=16 * EPS * 8)
    assert_close(run_both(cnp.vecmat, v[:3], m), np.einsum("i,...ij->...j", v[:3], m), bound=16 * EPS * 8)


# ---- function transforms ----------------------------------------------------------------------------

def test_vectorize_elementwise_signature_and_excluded(assert_close):
    def clipped_square(a, limit):
        return cj.lax.cond(a > limit, lambda v: limit, lambda v: v * v, a)  # a scalar branch, as under vmap

    x = RNG.normal(size=(3, 4))
    expected = np.where(x > 0.5, 0.5, x * x)
    vectorized = cnp.vectorize(clipped_square, excluded={1})
    np.testing.assert_array_equal(vectorized(x, 0.5), expected)
    np.testing.assert_array_equal(cj.jit(lambda v: vectorized(v, 0.5))(x), expected)
    matvec = cnp.vectorize(lambda mat, vec: mat @ vec, signature="(m,n),(n)->(m)")
    mats, vecs = RNG.normal(size=(5, 1, 2, 3)), RNG.normal(size=(4, 3))
    assert_close(matvec(mats, vecs), np.einsum("...mn,...n->...m", mats, vecs), bound=16 * EPS * 8)
    normalized = cnp.vectorize(lambda row: row / row.sum(), signature="(n)->(n)")
    assert_close(cj.jit(normalized)(np.abs(x) + 1), (np.abs(x) + 1) / (np.abs(x) + 1).sum(-1, keepdims=True),
                 bound=16 * EPS * 8)
    assert cnp.vectorize(lambda a: a + 1)(np.zeros((0, 3))).shape == (0, 3)
    with pytest.raises(ValueError, match="core dimension"):
        matvec(np.ones((2, 3)), np.ones(4))


def test_apply_along_and_over_axes(assert_close, run_both):
    x = RNG.normal(size=(3, 4, 5))
    assert_close(run_both(lambda v: cnp.apply_along_axis(cnp.sum, 1, v), x), np.apply_along_axis(np.sum, 1, x),
                 bound=8 * EPS * 20)
    assert_close(run_both(lambda v: cnp.apply_along_axis(lambda r: r[::2] * 2, 2, v), x),
                 np.apply_along_axis(lambda r: r[::2] * 2, 2, x))
    assert_close(run_both(lambda v: cnp.apply_over_axes(cnp.sum, v, [0, 2]), x), np.apply_over_axes(np.sum, x, [0, 2]),
                 bound=8 * EPS * 60)
