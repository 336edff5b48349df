"""cdnajit.numpy reductions, cumulative reductions, sorting and order statistics, against numpy.

The oracle computes in float64 (complex128) and casts to the dtype jax.numpy returns with
x64 enabled. Floating results are compared with the classic summation error bound: a sum
of n terms in precision eps is off by at most about n * eps * sum(|x|); half floats are
accumulated in f32 and rounded once, so their bound is one rounding of the result dtype.
"""
import math
import warnings

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_DTYPES = [np.float16, BF16, np.float32, np.float64]
ALL_DTYPES = FLOAT_DTYPES + [np.complex64, np.int32, np.uint8, np.bool_]
ORDERED_DTYPES = FLOAT_DTYPES + [np.int32, np.uint8, np.bool_]

# (shape, axis): 0-d, empty and size-1 dimensions, odd sizes, negative and tuple axes.
SHAPES_AXES = [
    ((), None), ((0,), None), ((1,), 0), ((7,), -1), ((3, 5), 0), ((3, 5), 1), ((3, 5), (0, 1)),
    ((2, 0, 3), 1), ((2, 0, 3), 2), ((2, 3, 5), (0, 2)), ((2, 3, 5), -2), ((1, 4, 1), (0, 2)),
]
NONEMPTY_SHAPES_AXES = [(s, a) for s, a in SHAPES_AXES if 0 not in s] + [((2, 0, 3), 2)]


def run(fn, *args):
    return cj.jit(fn, backend="interpret")(*args)


def sample(shape, dtype, seed=0, low=-3, high=4):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(max(low, 0) if dtype.kind == "u" else low, high, size=shape).astype(dtype)
    values = rng.standard_normal(shape)
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


def wide(x):
    """x in the oracle's precision."""
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def eps(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iub":
        return 0.0
    return float(ml_dtypes.finfo(dtype).eps) if dtype == BF16 else float(np.finfo(dtype).eps)


def assert_reduction_close(got, expected, dtype, n, magnitude):
    """Exact for integers; else one rounding of the result plus the summation bound n*eps*sum|x|."""
    expected = np.asarray(expected)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if np.dtype(dtype).kind in "iub":
        np.testing.assert_array_equal(got, expected)
        return
    accumulate_eps = eps(np.float32) if np.dtype(dtype).itemsize == 2 else eps(dtype)
    atol = 2 * n * accumulate_eps * magnitude + 1e-300
    np.testing.assert_allclose(wide(got), wide(expected.astype(dtype)), rtol=2 * eps(dtype), atol=atol, equal_nan=True)


def jnp_sum_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_ or dtype.kind == "i":
        return np.dtype(np.int64)
    return np.dtype(np.uint64) if dtype.kind == "u" else dtype


def reduced_size(shape, axis):
    axes = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
    return math.prod(shape[a] for a in axes)


# ---- sum, prod, max, min ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape,axis", SHAPES_AXES)
@pytest.mark.parametrize("name", ["sum", "prod"])
def test_sum_and_prod_match_numpy(name, shape, axis, dtype):
    x = sample(shape, dtype)
    got = run(lambda a: getattr(cnp, name)(a, axis=axis), x)
    expected_dtype = jnp_sum_dtype(dtype)
    exact = getattr(np, name)(x.astype(expected_dtype) if expected_dtype.kind in "iu" else wide(x), axis=axis)
    magnitude = np.max(np.abs(wide(x)), initial=1.0) ** (reduced_size(shape, axis) if name == "prod" else 1)
    assert_reduction_close(got, exact, expected_dtype, max(reduced_size(shape, axis), 1), magnitude)


@pytest.mark.parametrize("dtype", ORDERED_DTYPES)
@pytest.mark.parametrize("shape,axis", NONEMPTY_SHAPES_AXES)
@pytest.mark.parametrize("name", ["max", "min", "ptp"])
def test_max_min_ptp_match_numpy(name, shape, axis, dtype):
    if name == "ptp" and np.dtype(dtype) == np.bool_:
        pytest.skip("ptp subtracts, which bools do not support")
    x = sample(shape, dtype)
    got = run(lambda a: getattr(cnp, name)(a, axis=axis), x)
    assert got.dtype == np.dtype(dtype)
    # max/min are exact; ptp is one subtraction, rounded once in both.
    np.testing.assert_allclose(wide(got), wide(getattr(np, name)(x, axis=axis)), rtol=eps(dtype))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_propagate_nan(name):
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -1.0]], np.float32)
    np.testing.assert_array_equal(run(lambda a: getattr(cnp, name)(a, axis=1), x), getattr(np, name)(x, axis=1))


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape,axis", [((3, 5), 1), ((2, 3, 4), (0, 2)), ((2, 3), None), ((), None)])
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "any", "all", "argmax",
                                  "argmin", "count_nonzero", "nansum", "nanmax"])
def test_keepdims_shapes_match_numpy(name, shape, axis, keepdims):
    if name.startswith("arg") and isinstance(axis, tuple):
        axis = -1
    x = sample(shape, np.float64)
    got = run(lambda a: getattr(cnp, name)(a, axis=axis, keepdims=keepdims), x)
    np.testing.assert_allclose(got, getattr(np, name)(x, axis=axis, keepdims=keepdims), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
@pytest.mark.parametrize("name,initial", [("sum", 10), ("prod", 2), ("max", 1), ("min", 1)])
def test_where_and_initial_match_numpy(name, initial, dtype):
    x = sample((3, 5), dtype)
    mask = sample((1, 5), np.bool_, seed=1)     # broadcast against x
    got = run(lambda a, m: getattr(cnp, name)(a, axis=0, where=m, initial=initial), x, mask)
    expected = getattr(np, name)(x, axis=0, where=mask, initial=initial)
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=1e-6)
    got_initial_only = run(lambda a: getattr(cnp, name)(a, axis=1, initial=initial), x)
    np.testing.assert_allclose(got_initial_only.astype(np.float64),
                               getattr(np, name)(x, axis=1, initial=initial).astype(np.float64), rtol=1e-6)


def test_amax_and_amin_are_max_and_min():
    assert cnp.amax is cnp.max and cnp.amin is cnp.min


def test_max_of_an_empty_axis_with_initial_is_initial():
    x = np.zeros((3, 0), np.float32)
    np.testing.assert_array_equal(run(lambda a: cnp.max(a, axis=1, initial=-5.0), x), np.full(3, -5.0, np.float32))


@pytest.mark.parametrize("dtype,requested", [(np.int32, np.float32), (np.float32, np.float64), (np.int32, np.int8),
                                             (np.int32, np.bool_), (np.uint8, None), (np.int16, None)])
def test_sum_dtype_argument(dtype, requested):
    x = sample((4, 6), dtype)
    got = run(lambda a: cnp.sum(a, axis=1, dtype=requested), x)
    expected_dtype = np.dtype(requested) if requested is not None else jnp_sum_dtype(dtype)
    assert got.dtype == expected_dtype
    if expected_dtype == np.bool_:
        np.testing.assert_array_equal(got, np.any(x != 0, axis=1))
    else:
        np.testing.assert_allclose(got, np.sum(x.astype(expected_dtype), axis=1), rtol=1e-6)


def test_sum_of_a_python_scalar_is_strongly_typed():
    """As jnp's reductions: sum(2.0) is a strong float64, which widens a float16 array it meets."""
    x = np.ones(3, np.float16)
    assert run(lambda a: a + cnp.sum(2.0), x).dtype == np.float64


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32, np.bool_])
@pytest.mark.parametrize("shape,axis", SHAPES_AXES)
@pytest.mark.parametrize("name", ["any", "all", "count_nonzero"])
def test_logical_reductions_match_numpy(name, shape, axis, dtype):
    x = sample(shape, dtype, low=-1, high=2)
    if x.dtype.kind == "c" and x.size:
        x.flat[0] = 1j          # nonzero with a zero real part
    got = run(lambda a: getattr(cnp, name)(a, axis=axis), x)
    expected = getattr(np, name)(x, axis=axis)
    assert got.dtype == (np.int64 if name == "count_nonzero" else np.bool_)
    np.testing.assert_array_equal(got, expected)


def test_any_all_with_where():
    x = np.array([[True, False, True], [False, False, True]])
    mask = np.array([True, False, True])
    assert run(lambda a, m: cnp.all(a, axis=1, where=m), x, mask).tolist() == np.all(x, axis=1, where=mask).tolist()
    assert run(lambda a, m: cnp.any(a, axis=0, where=m), x, mask).tolist() == np.any(x, axis=0, where=mask).tolist()


# ---- statistics ---------------------------------------------------------------------------------

STAT_DTYPES = [np.float16, BF16, np.float32, np.float64, np.complex64, np.int32, np.bool_]


def jnp_mean_dtype(dtype):
    """jnp's to-inexact rule: bools and integers up to 32 bits -> float32, 64-bit integers -> float64."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fc" or dtype == BF16:
        return dtype
    return np.dtype(np.float64 if dtype.itemsize == 8 else np.float32)


def oracle(fn, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


@pytest.mark.parametrize("dtype", STAT_DTYPES)
@pytest.mark.parametrize("shape,axis", SHAPES_AXES)
def test_mean_matches_numpy(shape, axis, dtype):
    x = sample(shape, dtype)
    got = run(lambda a: cnp.mean(a, axis=axis), x)
    n = max(reduced_size(shape, axis), 1)
    assert_reduction_close(got, oracle(np.mean, wide(x), axis=axis), jnp_mean_dtype(dtype), n,
                           np.max(np.abs(wide(x)), initial=1.0))


@pytest.mark.parametrize("ddof", [0, 1])
@pytest.mark.parametrize("dtype", STAT_DTYPES)
@pytest.mark.parametrize("shape,axis", [s for s in NONEMPTY_SHAPES_AXES if 0 not in s[0]])
@pytest.mark.parametrize("name", ["var", "std"])
def test_var_and_std_match_numpy(name, shape, axis, dtype, ddof):
    x = sample(shape, dtype)
    got = run(lambda a: getattr(cnp, name)(a, axis=axis, ddof=ddof), x)
    expected_dtype = jnp_mean_dtype(dtype)
    expected_dtype = np.dtype({np.complex64: np.float32}.get(expected_dtype.type, expected_dtype))
    n = reduced_size(shape, axis)
    expected = oracle(getattr(np, name), wide(x), axis=axis, ddof=ddof)
    if n - ddof <= 0:
        return  # jnp divides by (n - ddof) <= 0 where numpy clamps to zero: not compared
    # Squared deviations are summed: the bound scales with max|x - mean|^2, twice the terms' error.
    assert_reduction_close(got, expected, expected_dtype, 4 * n, 4 * np.max(np.abs(wide(x)), initial=1.0) ** 2)


def test_mean_and_var_with_where_and_correction():
    x = sample((4, 6), np.float64)
    mask = sample((4, 6), np.bool_, seed=3)
    mask[:, 0] = True
    np.testing.assert_allclose(run(lambda a, m: cnp.mean(a, axis=1, where=m), x, mask),
                               np.mean(x, axis=1, where=mask), rtol=1e-12)
    np.testing.assert_allclose(run(lambda a, m: cnp.var(a, axis=0, where=m), x, mask),
                               oracle(np.var, x, axis=0, where=mask), rtol=1e-12)
    np.testing.assert_allclose(run(lambda a: cnp.std(a, axis=1, correction=1), x), np.std(x, axis=1, ddof=1),
                               rtol=1e-12)


def test_f16_mean_accumulates_in_f32():
    # A sequential f16 running sum of 4096 ones stalls at 2048 (its spacing there is 2).
    x = np.ones(4096, np.float16)
    assert run(cnp.mean, x) == np.float16(1.0)
    assert "f32" in str(cj.make_graph(cnp.mean)(x))


@pytest.mark.parametrize("shape,axis,weights_shape", [((3, 5), None, (3, 5)), ((3, 5), 1, (5,)), ((3, 5), 0, (3,)),
                                                      ((2, 3, 4), (0, 2), (2, 3, 4)), ((4,), 0, (4,))])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_average_matches_numpy(shape, axis, weights_shape, dtype):
    x = sample(shape, dtype)
    w = sample(weights_shape, np.float64, seed=2) ** 2 + 0.1
    avg, scale = run(lambda a, b: cnp.average(a, axis=axis, weights=b, returned=True), x, w)
    expected_avg, expected_scale = np.average(x, axis=axis, weights=w, returned=True)
    np.testing.assert_allclose(avg, expected_avg, rtol=1e-12)
    np.testing.assert_allclose(scale, expected_scale, rtol=1e-12)
    np.testing.assert_allclose(run(lambda a: cnp.average(a, axis=axis), x), np.average(x, axis=axis), rtol=1e-6)


# ---- NaN-ignoring reductions ----------------------------------------------------------------------

def with_nans(shape, dtype=np.float64):
    x = sample(shape, dtype)
    x[..., ::3] = np.nan
    if x.ndim == 2:
        x[1, :] = np.nan     # an all-NaN row
    return x


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmax", "nanmin", "nanmean"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_nan_reductions_match_numpy(name, axis, dtype):
    x = with_nans((3, 5), dtype) if np.dtype(dtype).kind == "f" else sample((3, 5), dtype)
    got = run(lambda a: getattr(cnp, name)(a, axis=axis), x)
    np.testing.assert_allclose(got, oracle(getattr(np, name), x, axis=axis), rtol=1e-6)


# ---- arg-reductions ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ORDERED_DTYPES)
@pytest.mark.parametrize("shape,axis", [((), None), ((1,), 0), ((7,), None), ((3, 5), 0), ((3, 5), -1),
                                        ((2, 3, 5), 1), ((2, 3, 5), None), ((4, 1), 1)])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions_match_numpy(name, shape, axis, dtype, keepdims):
    x = sample(shape, dtype, low=-2, high=3)      # small range: ties, where the first index wins
    got = run(lambda a: getattr(cnp, name)(a, axis=axis, keepdims=keepdims), x)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, getattr(np, name)(x, axis=axis, keepdims=keepdims))


def test_argmax_returns_the_first_nan():
    x = np.array([[1.0, np.nan, 5.0, np.nan], [2.0, 7.0, 7.0, 0.0]])
    np.testing.assert_array_equal(run(lambda a: cnp.argmax(a, axis=1), x), [1, 1])
    np.testing.assert_array_equal(run(lambda a: cnp.argmin(a, axis=1), x), [1, 3])


# ---- cumulative reductions -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("shape,axis", [((), None), ((0,), 0), ((1,), 0), ((7,), -1), ((3, 5), 0), ((3, 5), 1),
                                        ((2, 3, 4), None), ((2, 0, 3), 2)])
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_cumulative_reductions_match_numpy(name, shape, axis, dtype):
    x = sample(shape, dtype, low=-2, high=3)
    got = run(lambda a: getattr(cnp, name)(a, axis=axis), x)
    expected_dtype = np.dtype(np.int64) if np.dtype(dtype) == np.bool_ else np.dtype(dtype)  # jnp keeps ints
    exact = getattr(np, name)(x.astype(expected_dtype) if expected_dtype.kind in "iu" else wide(x), axis=axis)
    n = x.size if axis is None else (shape[axis] if shape else 1)
    magnitude = np.max(np.abs(wide(x)), initial=1.0) ** (n if name == "cumprod" else 1)
    assert_reduction_close(got, exact, expected_dtype, max(n, 1), magnitude)


def test_cumsum_with_dtype_and_nan_variants():
    x = with_nans((3, 5))
    np.testing.assert_allclose(run(lambda a: cnp.nancumsum(a, axis=1), x), np.nancumsum(x, axis=1), rtol=1e-12)
    np.testing.assert_allclose(run(lambda a: cnp.nancumprod(a, axis=0), x), np.nancumprod(x, axis=0), rtol=1e-12)
    i = sample((3, 5), np.int32)
    got = run(lambda a: cnp.cumsum(a, axis=1, dtype=np.float32), i)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.cumsum(i, axis=1, dtype=np.float32))
    flags = run(lambda a: cnp.cumsum(a, axis=1, dtype=bool), i)
    np.testing.assert_array_equal(flags, np.cumsum(i != 0, axis=1) != 0)


@pytest.mark.parametrize("include_initial", [False, True])
@pytest.mark.parametrize("name,np_name", [("cumulative_sum", "cumsum"), ("cumulative_prod", "cumprod")])
def test_array_api_cumulative(name, np_name, include_initial):
    x = sample((3, 4), np.int32)
    got = run(lambda a: getattr(cnp, name)(a, axis=1, include_initial=include_initial), x)
    # As jnp: cumulative_sum widens integers as sum does, cumulative_prod keeps them.
    dtype = np.int64 if name == "cumulative_sum" else np.int32
    expected = getattr(np, np_name)(x.astype(dtype), axis=1)
    if include_initial:
        expected = np.concatenate([np.full((3, 1), 0 if np_name == "cumsum" else 1), expected], axis=1)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == dtype


# ---- bad input ---------------------------------------------------------------------------------

def raises_here(error, fn, *args, match=None):
    """The error is a cdnajit error of `error`'s kind whose message names this test file's line."""
    with pytest.raises(error, match=match) as info:
        run(fn, *args)
    assert isinstance(info.value, cj.CdnajitError)
    assert "test_reductions.py:" in str(info.value), str(info.value)
    return str(info.value)


@pytest.mark.parametrize("name", ["max", "min", "amax", "nanmax"])
def test_extremum_of_an_empty_axis_raises(name):
    message = raises_here(ValueError, lambda a: getattr(cnp, name)(a, axis=1), np.zeros((3, 0), np.float32),
                          match="zero-size array to reduction operation")
    assert "(3, 0)" in message


def test_bad_reduction_arguments_raise_clear_errors():
    x = np.ones((3, 4), np.float32)
    raises_here(ValueError, lambda a: cnp.sum(a, axis=2), x, match="axis 2 is out of bounds")
    raises_here(ValueError, lambda a: cnp.sum(a, axis=(1, -1)), x, match="repeated axis")
    raises_here(ValueError, lambda a: cnp.max(a, where=a > 0), x, match="specify 'initial'")
    raises_here(ValueError, lambda a: cnp.argmax(a, axis=0), np.ones((0, 3)), match="empty sequence")
    raises_here(TypeError, lambda a: cnp.sum(a, where=a), x, match="where must be a boolean")
    raises_here(ValueError, lambda a: cnp.sum(a, axis=0, where=np.ones((2, 4), bool)), x, match="broadcast")
    raises_here(ValueError, lambda a: cnp.average(a, axis=1, weights=np.ones(3)), x, match="weights")
    raises_here(ValueError, lambda a: cnp.cumulative_sum(a), x, match="axis")
    with pytest.raises(NotImplementedError, match="out"):
        run(lambda a: cnp.sum(a, out=a), x)


# ---- sorting and order statistics --------------------------------------------------------------

SORT_DTYPES = [np.float16, BF16, np.float32, np.float64, np.complex64, np.int32, np.uint8, np.bool_]
SORT_SHAPES_AXES = [((0,), -1), ((1,), 0), ((9,), -1), ((4, 7), 0), ((4, 7), 1), ((2, 3, 5), None), ((2, 0, 3), 1)]


def with_special_values(x):
    """Ties from a small value range, plus NaNs (and a -0.0) for floats."""
    if x.size and x.dtype.kind in "fcV":
        flat = x.reshape(-1)
        flat[::4] = np.nan
        flat[1::5] = -0.0
    return x


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", SORT_DTYPES)
@pytest.mark.parametrize("shape,axis", SORT_SHAPES_AXES)
def test_sort_matches_numpy(shape, axis, dtype, descending):
    x = with_special_values(sample(shape, dtype, low=-2, high=3))
    got = run(lambda a: cnp.sort(a, axis=axis, descending=descending), x)
    expected = np.sort(x, axis=axis)     # NaNs last, as jnp
    if descending:
        expected = np.flip(expected, axis=-1 if axis is None else axis)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
@pytest.mark.parametrize("shape,axis", SORT_SHAPES_AXES)
def test_argsort_is_stable_and_matches_numpy(shape, axis, dtype, descending):
    x = with_special_values(sample(shape, dtype, low=-2, high=3))
    got = run(lambda a: cnp.argsort(a, axis=axis, descending=descending), x)
    flat_axis = -1 if axis is None else axis
    source = x.reshape(-1) if axis is None else x
    if descending:
        # Stable descending order, ties in their original order: sort the reversed array.
        n = source.shape[flat_axis]
        expected = n - 1 - np.flip(np.argsort(np.flip(source, flat_axis), axis=flat_axis, kind="stable"), flat_axis)
    else:
        expected = np.argsort(source, axis=flat_axis, kind="stable")
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("q", [0.3, [0.0, 0.1, 0.62, 1.0], [[0.9], [0.05]]])
@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("shape,axis", [((7,), None), ((4, 7), 1), ((4, 7), 0), ((3, 4, 5), (0, 2)), ((1,), 0)])
def test_quantile_matches_numpy(shape, axis, method, q, keepdims):
    # No q * (n - 1) here falls halfway between two elements, where jnp's "nearest" picks the
    # lower one and numpy rounds half to even.
    x = sample(shape, np.float64)
    q = np.asarray(q)
    got = run(lambda a, b: cnp.quantile(a, b, axis=axis, method=method, keepdims=keepdims), x, q)
    np.testing.assert_allclose(got, np.quantile(x, q, axis=axis, method=method, keepdims=keepdims), rtol=1e-12)


@pytest.mark.parametrize("dtype,expected_dtype", [(np.float32, np.float32), (np.float16, np.float16),
                                                  (np.int32, np.float32), (np.bool_, np.float32),
                                                  (np.int64, np.float64)])
def test_median_and_percentile_dtypes_and_values(dtype, expected_dtype):
    x = sample((5, 6), dtype)
    median = run(lambda a: cnp.median(a, axis=1), x)
    assert median.dtype == expected_dtype
    np.testing.assert_allclose(median.astype(np.float64), np.median(x.astype(np.float64), axis=1),
                               rtol=eps(expected_dtype))  # an average of two elements, rounded once
    percentile = run(lambda a: cnp.percentile(a, 30.0, axis=0), x)
    assert percentile.dtype == expected_dtype
    np.testing.assert_allclose(percentile.astype(np.float64), np.percentile(x.astype(np.float64), 30.0, axis=0),
                               rtol=4 * eps(expected_dtype), atol=4 * eps(expected_dtype))


def test_quantile_of_a_slice_with_nan_is_nan():
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(run(lambda a: cnp.median(a, axis=1), x), [np.nan, 5.0])


def test_bad_sort_and_quantile_arguments():
    x = np.ones((3, 4), np.float32)
    raises_here(ValueError, lambda a: cnp.sort(a, axis=2), x, match="axis 2 is out of bounds")
    raises_here(ValueError, lambda a: cnp.quantile(a, 0.5, method="bogus"), x, match="method")
    raises_here(ValueError, lambda a: cnp.median(a, axis=1), np.ones((3, 0)), match="empty")
    raises_here(ValueError, lambda a: cnp.median(a), x.astype(np.complex64), match="complex")  # as jnp


# ---- compiled kernels ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,result_dtype", [(np.float32, np.float32), (np.float64, np.float64),
                                                (np.int8, np.int64), (np.uint32, np.uint64),
                                                (np.complex64, np.complex64)])
def test_sum_of_a_huge_broadcast_is_the_count_times_the_value(dtype, result_dtype):
    # 10**12 elements: only the algebraic rewrite (no kernel loops over them) answers in time.
    # Integer sums widen to 64 bits (jnp's sum); the float sum is 3 * 10**12 rounded once.
    got = cj.jit(lambda x: cnp.broadcast_to(x, (10**6, 10**6)).sum())(dtype(3))
    assert got.dtype == result_dtype
    assert got == np.asarray(3 * 10**12).astype(result_dtype)
    if dtype != np.complex64:
        assert cj.jit(lambda x: cnp.broadcast_to(x, (10**6, 10**6)).max())(dtype(3)) == 3


# Compiled float sums add SUM_BLOCK terms into a block partial, then the partial into the
# work-item's total, then combine work-items in a tree (at most 1024 of them): each term meets at
# most SUM_BLOCK + n / SUM_BLOCK + 10 roundings, so |error| <= that many eps times sum(|x|).
SUM_BLOCK = 4096


def blocked_sum_bound(n: int, dtype, magnitude):
    return (SUM_BLOCK + n / SUM_BLOCK + 10) * float(np.finfo(dtype).eps) * magnitude


@pytest.mark.parametrize("shape,axis", [((2**25 + 3,), None), ((2**25 + 3, 2), 0), ((2, 2**25 + 3), 1)])
def test_compiled_f32_sum_of_more_than_2_24_ones_keeps_counting(shape, axis):
    # The ones are computed in the kernel (an iota compared with zero): no 2**25-element input.
    def ones_sum(x):
        ones = (cj.lax.broadcasted_iota(np.int32, shape, 0) >= 0).astype(np.float32)
        return cnp.sum(ones, axis=axis) + x
    got = cj.jit(ones_sum)(np.float32(0))
    np.testing.assert_array_equal(got, np.full(got.shape, 2**25 + 3, np.float32))


@pytest.mark.parametrize("shape,axis", [((3 * 4096 + 5, 3), 0), ((3, 3 * 4096 + 5), 1), ((5 * 4096 + 1,), None)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_long_float_sums_within_the_blocked_bound(shape, axis, dtype):
    x = sample(shape, dtype)
    got = cj.jit(lambda a: cnp.sum(a, axis=axis))(x)
    n = x.size if axis is None else shape[axis]
    exact = np.sum(x.astype(np.float64), axis=axis)
    bound = blocked_sum_bound(n, dtype, np.sum(np.abs(x.astype(np.float64)), axis=axis))
    assert got.dtype == dtype
    assert np.all(np.abs(got - exact) <= bound)


@pytest.mark.slow
def test_compiled_mean_of_a_large_f32_array_matches_numpy():
    x = np.random.default_rng(0).random(2**25 + 7, dtype=np.float32)
    got = cj.jit(cnp.mean)(x)
    exact = np.mean(x.astype(np.float64))
    # numpy's pairwise mean is within a few eps; the blocked one within the bound (plus the division).
    assert abs(float(got) - exact) <= blocked_sum_bound(x.size, np.float32, exact) + 2 * np.finfo(np.float32).eps * exact
    assert abs(float(np.mean(x)) - exact) <= blocked_sum_bound(x.size, np.float32, exact)


def test_mean_of_one_complex_element_is_the_element():
    # JAX's answer (0.10.2, x64): jnp.mean over one element divides by 1 + 0i, which XLA simplifies
    # away, so a NaN real part leaves the imaginary part alone; over two elements the complex
    # division spreads it (inf - 0.2j and 1 + 1j average to inf + nan j).
    x = np.array([[complex(np.nan, -0.1928466)]], np.complex64)
    for backend in ("compiled", "interpret"):
        got = cj.jit(lambda v: cnp.mean(v, axis=0), backend=backend)(x)
        np.testing.assert_array_equal(got.imag, np.float32([-0.1928466]))
        pair = cj.jit(cnp.mean, backend=backend)(np.array([complex(np.inf, -0.2), 1 + 1j], np.complex64))
        assert np.isinf(pair.real) and np.isnan(pair.imag)
