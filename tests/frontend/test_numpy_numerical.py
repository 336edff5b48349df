"""Differences, integrals, interpolation, products, polynomials, windows, i0 and the integer and float
bit functions against numpy (and JAX's stored dtypes), eagerly and under jit.

Tolerances: a result that is a short sum of products of its inputs is off by a few roundings of
the magnitudes summed (bound = k eps max|terms|), k counting the operations."""
import numpy as np
import pytest

import cdnajit.numpy as cnp

RNG = np.random.default_rng(13)
SLOW = pytest.mark.slow


@pytest.mark.parametrize("shape, axis, n", [((0,), -1, 1), ((1,), 0, 1), ((7,), 0, 2), ((3, 5), 1, 1),
                                            ((3, 5), 0, 3), ((2, 0, 4), 2, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.bool_])
def test_diff(shape, axis, n, dtype, run_both):
    x = (RNG.normal(size=shape) * 5).astype(dtype)
    result = run_both(cnp.diff, x, n=n, axis=axis)
    np.testing.assert_array_equal(result, np.diff(x, n=n, axis=axis))
    assert result.dtype == dtype


def test_diff_prepend_append_and_ediff1d(run_both):
    x = RNG.normal(size=(3, 4))
    np.testing.assert_array_equal(run_both(cnp.diff, x, axis=0, prepend=0.5, append=x[:1]),
                                  np.diff(x, axis=0, prepend=0.5, append=x[:1]))
    i = np.array([3, 0, 1, 3, 0, 2], np.int32)
    result = run_both(cnp.ediff1d, i, to_begin=np.array([1.5]))  # to_begin takes ary's dtype, as JAX (stored)
    assert result.dtype == np.int32 and result.tolist() == [1, -3, 1, 2, -3, 2]
    np.testing.assert_array_equal(run_both(cnp.ediff1d, x, to_end=np.array([9.0, 8.0])),
                                  np.ediff1d(x, to_end=[9.0, 8.0]))


@pytest.mark.parametrize("shape", [(2,), (7,), (4, 6)])
def test_gradient_uniform_and_coordinates(shape, assert_close, run_both):
    f = RNG.normal(size=shape)
    result = run_both(cnp.gradient, f, 0.5)
    expected = np.gradient(f, 0.5)
    for r, e in zip(result if f.ndim > 1 else [result], expected if f.ndim > 1 else [expected]):
        assert_close(r, e, bound=4 * np.finfo(float).eps * np.abs(f).max() / 0.5)
    x = np.cumsum(RNG.random(shape[-1]) + 0.5)
    result = run_both(lambda v, c: cnp.gradient(v, c, axis=-1), f, x)
    expected = np.gradient(f, x, axis=-1)
    assert_close(result, expected, bound=64 * np.finfo(float).eps * np.abs(f).max() / np.diff(x).min())


def test_gradient_dtype_follows_the_inexact_rule():
    for dtype in (np.int64, np.float32, np.float16):
        assert cnp.gradient(np.arange(5, dtype=dtype)).dtype == cnp.sin(np.ones(1, dtype)).dtype


@pytest.mark.parametrize("shape, axis", [((5,), -1), ((3, 4), 0), ((3, 4), 1), ((2, 1), 1)])
def test_trapezoid(shape, axis, assert_close, run_both):
    y = RNG.normal(size=shape)
    assert_close(run_both(cnp.trapezoid, y, dx=0.25, axis=axis), np.trapezoid(y, dx=0.25, axis=axis),
                 bound=8 * np.finfo(float).eps * np.abs(y).sum())
    x = np.sort(RNG.random(shape[axis]))
    assert_close(run_both(lambda v, c: cnp.trapezoid(v, c, axis=axis), y, x), np.trapezoid(y, x, axis=axis),
                 bound=8 * np.finfo(float).eps * np.abs(y).sum())


@pytest.mark.parametrize("n", [1, 2, 9])
def test_interp(n, assert_close, run_both):
    xp = np.sort(RNG.random(n)) * 4
    fp = RNG.normal(size=n)
    x = np.concatenate([RNG.random(15) * 5 - 0.5, xp])
    bound = 8 * np.finfo(float).eps * np.abs(fp).max()
    assert_close(run_both(cnp.interp, x, xp, fp), np.interp(x, xp, fp), bound=bound)
    assert_close(run_both(cnp.interp, x, xp, fp, left=-9.0, right=9.0), np.interp(x, xp, fp, left=-9, right=9),
                 bound=bound)
    if n > 1:
        assert_close(run_both(cnp.interp, x, xp, fp, period=3.0), np.interp(x, xp, fp, period=3.0),
                     bound=bound * 4)


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")  # numpy's 2-d cross
def test_unwrap_kron_cross_vander(assert_close, run_both):
    p = np.cumsum(RNG.normal(size=(3, 9)) * 3, axis=1)
    assert_close(run_both(cnp.unwrap, p), np.unwrap(p), bound=16 * np.finfo(float).eps * np.abs(p).max())
    assert_close(run_both(cnp.unwrap, p, axis=0, period=5.0), np.unwrap(p, axis=0, period=5.0),
                 bound=16 * np.finfo(float).eps * np.abs(p).max())
    a, b = RNG.integers(-5, 5, (2, 3)), RNG.integers(-5, 5, (3, 1, 2))
    np.testing.assert_array_equal(run_both(cnp.kron, a, b), np.kron(a, b))
    u, v = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))
    assert_close(run_both(cnp.cross, u, v), np.cross(u, v), bound=4 * np.finfo(float).eps * 9)
    assert_close(run_both(cnp.cross, u[:, :2], v[:, :2]), np.cross(u[:, :2], v[:, :2]),
                 bound=4 * np.finfo(float).eps * 9)
    assert_close(run_both(cnp.cross, u[:, :2], v), np.cross(u[:, :2], v), bound=4 * np.finfo(float).eps * 9)
    x = np.array([3, 0, -1, 2], np.int32)
    result = run_both(cnp.vander, x, N=5, increasing=True)
    np.testing.assert_array_equal(result, np.vander(x, 5, increasing=True))
    assert result.dtype == np.int32


@pytest.mark.parametrize("n, m", [(1, 1), (5, 3), (3, 5), (8, 8)])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate(n, m, mode, assert_close, run_both):
    a, v = RNG.normal(size=n), RNG.normal(size=m)
    bound = 4 * max(n, m) * np.finfo(float).eps * np.abs(a).max() * np.abs(v).max()
    assert_close(run_both(cnp.convolve, a, v, mode=mode), np.convolve(a, v, mode=mode), bound=bound)
    assert_close(run_both(cnp.correlate, a, v, mode=mode), np.correlate(a, v, mode=mode), bound=bound)


def test_convolve_dtypes_as_jax():
    i = np.array([3, 0, 1], np.int32)
    assert cnp.convolve(i, i).dtype == np.float32  # jnp promotes to inexact: int32 -> float32 (stored)
    assert cnp.correlate(np.ones(3), np.array([1.0, 2j])).dtype == np.complex128
    np.testing.assert_allclose(cnp.correlate(np.array([3.0, 0, 1, 3, 0, 2]), np.array([1.0, 2, 3j])),
                               [3 - 3j, 2 - 9j, 7 + 0j, 3 - 6j])  # stored JAX answer


def test_polynomials(assert_close, run_both):
    p, q = RNG.normal(size=4), RNG.normal(size=2)
    x = RNG.normal(size=(2, 3))
    eps = np.finfo(float).eps
    assert_close(run_both(cnp.polyval, p, x), np.polyval(p, x), bound=16 * eps * 10)
    assert_close(run_both(cnp.polyadd, p, q), np.polyadd(p, q), bound=2 * eps * 4)
    assert_close(run_both(cnp.polysub, q, p), np.polysub(q, p), bound=2 * eps * 4)
    assert_close(run_both(cnp.polymul, p, q), np.polymul(p, q), bound=8 * eps * 16)
    quotient, remainder = run_both(cnp.polydiv, p, q)
    expected_q, expected_r = np.polydiv(p, q)
    scale = np.abs(p).max() / np.abs(q[0]) ** 3 * 16
    assert_close(quotient, expected_q, bound=64 * eps * scale)
    assert_close(remainder[-expected_r.size:], expected_r, bound=64 * eps * scale)
    assert_close(run_both(cnp.polyder, p, m=2), np.polyder(p, 2), bound=8 * eps * 20)
    assert_close(run_both(cnp.polyint, p, m=2, k=np.array([1.0, 2.0])), np.polyint(p, 2, [1.0, 2.0]),
                 bound=8 * eps * 20)
    roots = RNG.normal(size=3)
    assert_close(run_both(cnp.poly, roots), np.poly(roots), bound=32 * eps * 8)
    # roots and poly of a matrix (linalg.eigvals): tests/frontend/test_numpy_linalg_eig.py.


@pytest.mark.parametrize("m", [0, 1, 2, 7])
def test_windows(m, assert_close, run_both):
    for ours, theirs in [(cnp.bartlett, np.bartlett), (cnp.blackman, np.blackman), (cnp.hamming, np.hamming),
                         (cnp.hanning, np.hanning)]:
        assert_close(ours(m), theirs(m), bound=8 * np.finfo(float).eps)
    assert_close(cnp.kaiser(m, 3.5), np.kaiser(m, 3.5), bound=64 * np.finfo(float).eps)


def test_i0_against_numpy_across_both_expansions(assert_close, run_both):
    x = np.concatenate([np.linspace(-40, 40, 161), [1e-3, 29.999, 30.0, 30.001, 100.0, 700.0]])
    expected = np.i0(x)
    assert_close(run_both(cnp.i0, x), expected, ulps=64)
    result = run_both(cnp.i0, x[:100].astype(np.float32))
    assert result.dtype == np.float32
    assert_close(result, np.i0(x[:100]).astype(np.float32), ulps=64)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.int64])
def test_gcd_lcm_bitwise_count(dtype, run_both):
    info = np.iinfo(dtype)
    a = RNG.integers(max(info.min, -1000), min(info.max, 1000), 30).astype(dtype)
    b = RNG.integers(max(info.min, -60), 60, 30).astype(dtype)
    a[:3] = 0
    b[2:4] = 0
    np.testing.assert_array_equal(run_both(cnp.gcd, a, b), np.gcd(a, b))
    small_a, small_b = (a % 12).astype(dtype), (b % 10).astype(dtype)  # lcm fits int8
    np.testing.assert_array_equal(run_both(cnp.lcm, small_a, small_b), np.lcm(small_a, small_b))
    result = run_both(cnp.bitwise_count, a)
    assert result.dtype == np.uint8
    np.testing.assert_array_equal(result, np.bitwise_count(np.abs(a.astype(np.int64))).astype(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ldexp_and_frexp(dtype, run_both):
    info = np.finfo(dtype)
    x = np.array([0.0, -0.0, 1.0, -3.5, 0.1, info.max, info.tiny, info.tiny / 8, np.inf, -np.inf, np.nan],
                 dtype)
    mantissa, exponent = run_both(cnp.frexp, x)
    expected_m, expected_e = np.frexp(x)
    np.testing.assert_array_equal(mantissa, expected_m)
    np.testing.assert_array_equal(exponent, expected_e)
    assert exponent.dtype == np.int32
    e = np.array([0, 1, -1, 3, -100, 1, 2, 0, 5, 5, 1], np.int32)
    with np.errstate(over="ignore"):  # max * 2 overflows to inf, in both
        expected = np.ldexp(x, e)
    np.testing.assert_array_equal(run_both(cnp.ldexp, x, e), expected)
    big = np.array([0.5], dtype)
    np.testing.assert_array_equal(cnp.ldexp(big, np.array([info.maxexp])), np.ldexp(big, info.maxexp))


def test_packbits_unpackbits(run_both):
    bits = RNG.random((3, 13)) < 0.5
    for axis in (None, 1, 0):
        for order in ("big", "little"):
            packed = run_both(cnp.packbits, bits, axis=axis, bitorder=order)
            np.testing.assert_array_equal(packed, np.packbits(bits, axis=axis, bitorder=order))
            np.testing.assert_array_equal(run_both(cnp.unpackbits, packed, axis=axis, bitorder=order),
                                          np.unpackbits(packed, axis=axis, bitorder=order))
    packed = np.packbits(bits, axis=1)
    np.testing.assert_array_equal(cnp.unpackbits(packed, axis=1, count=13), np.unpackbits(packed, axis=1, count=13))




def test_polyfit_against_numpy(assert_close, run_both):
    """Least squares through an SVD of the column-scaled Vandermonde matrix (backward stable): the
    coefficients agree with numpy's to about cond(V) * n * eps, far below the bound at these sizes."""
    x = np.linspace(-1.0, 2.0, 23)
    y = np.stack([np.cos(x), x ** 3 - x], axis=1) + 0.01 * RNG.normal(size=(23, 2))
    w = RNG.uniform(0.5, 2.0, size=23)
    for deg in (0, 1, 3):
        assert_close(run_both(cnp.polyfit, x, y[:, 0], deg=deg), np.polyfit(x, y[:, 0], deg), bound=1e-10)
        assert_close(run_both(cnp.polyfit, x, y, deg=deg, w=w), np.polyfit(x, y, deg, w=w), bound=1e-10)
    c, cov = cnp.polyfit(x, y[:, 0], 2, cov=True)
    expected_c, expected_cov = np.polyfit(x, y[:, 0], 2, cov=True)
    assert_close(c, expected_c, bound=1e-10)
    assert_close(cov, expected_cov, bound=1e-12)
    with pytest.raises(TypeError, match="polyfit"):
        cnp.polyfit(x, y[:5, 0], 1)
