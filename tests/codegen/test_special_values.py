"""Special values (signed zeros, infinities, NaN) through compiled elementwise functions and
reductions, against answers stored from JAX 0.10.2 (jax_enable_x64) on the CPU, which cdnajit
follows where numpy differs (max/min of signed zeros)."""
import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp

INF, NAN = np.inf, np.nan
FLOAT_DTYPES = (np.float16, ml_dtypes.bfloat16, np.float32, np.float64)

# Each dividend against 0 and -0, in that order.
DIVIDENDS = [1, -1, INF, -INF, 0, -0.0, 2.5, -2.5, NAN]
BY_ZERO = {
    "floor_divide": [INF, -INF, -INF, INF, INF, -INF, -INF, INF, NAN, NAN, NAN, NAN, INF, -INF, -INF, INF, NAN, NAN],
    "remainder": [NAN] * 18,
    "fmod": [NAN] * 18,
}


def assert_same_values(got, want):
    """Equal values, NaN where NaN, and the same signs of zeros."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    both = ~np.isnan(want)
    np.testing.assert_array_equal(got[both], want[both])
    np.testing.assert_array_equal(np.signbit(got[both]), np.signbit(want[both]), err_msg="signs of zeros")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", sorted(BY_ZERO))
def test_floor_divide_family_by_signed_zeros(name, dtype):
    a = np.repeat(np.array(DIVIDENDS, dtype), 2)
    b = np.tile(np.array([0.0, -0.0], dtype), len(DIVIDENDS))
    assert_same_values(cj.jit(getattr(cnp, name))(a, b), BY_ZERO[name])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", ["sin", "tan", "expm1", "log1p", "sinh", "tanh", "arcsin", "arctan", "arcsinh",
                                  "arctanh", "cbrt", "sqrt"])
def test_odd_functions_keep_the_sign_of_zero(name, dtype):
    x = np.array([0.0, -0.0], dtype)
    assert_same_values(cj.jit(getattr(cnp, name))(x), [0.0, -0.0])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_maximum_and_minimum_order_signed_zeros_and_propagate_nan(dtype):
    a = np.array([0.0, -0.0, 0.0, -0.0, NAN, 1.0], dtype)
    b = np.array([-0.0, 0.0, 0.0, -0.0, 1.0, NAN], dtype)
    assert_same_values(cj.jit(cnp.maximum)(a, b), [0.0, 0.0, 0.0, -0.0, NAN, NAN])
    assert_same_values(cj.jit(cnp.minimum)(a, b), [-0.0, -0.0, 0.0, -0.0, NAN, NAN])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("values, largest, smallest", [
    ([0.0, -0.0], 0.0, -0.0), ([-0.0, 0.0], 0.0, -0.0), ([-0.0, -0.0], -0.0, -0.0), ([1.0, NAN, 2.0], NAN, NAN)])
def test_max_and_min_reductions_order_signed_zeros(dtype, values, largest, smallest):
    for n in (1, 300):  # one element of each, and long enough for several lanes and chains
        x = np.tile(np.array(values, dtype), n)
        assert_same_values(cj.jit(cnp.max)(x), largest)
        assert_same_values(cj.jit(cnp.min)(x), smallest)
