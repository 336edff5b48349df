"""lax.select_n (and select on it), population_count, clz and mulhi against numpy, eagerly and under jit."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax

RNG = np.random.default_rng(5)


def eager_and_jit(fn, *args):
    eager = fn(*args)
    np.testing.assert_array_equal(cj.jit(fn)(*args), eager)
    return eager


@pytest.mark.parametrize("which_dtype", [np.int32, np.int8, np.uint32, np.int64])
@pytest.mark.parametrize("cases", [1, 2, 3, 5])
@pytest.mark.parametrize("shape", [(), (7,), (0, 3), (2, 33)])
def test_select_n_integer_which(which_dtype, cases, shape):
    """Out-of-range `which` picks the nearest case, as XLA's tree of selects (JAX: -1 -> case 0, 5 -> last)."""
    low = 0 if which_dtype == np.uint32 else -2
    which = RNG.integers(low, cases + 2, shape).astype(which_dtype)
    options = [RNG.standard_normal(shape).astype(np.float32) for _ in range(cases)]
    got = eager_and_jit(lambda w, *c: lax.select_n(w, *c), which, *options)
    want = np.choose(np.clip(which.astype(np.int64), 0, cases - 1), options) if shape else \
        options[int(np.clip(which, 0, cases - 1))]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_select_n_scalar_which_and_bool():
    a, b = np.arange(6.0).reshape(2, 3), -np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(eager_and_jit(lax.select_n, np.int32(1), a, b), b)
    np.testing.assert_array_equal(eager_and_jit(lax.select_n, np.array([[True, False, True]] * 2), a, b),
                                  np.where([[True, False, True]] * 2, b, a))
    np.testing.assert_array_equal(lax.select(np.array([1, 0], np.int8), np.ones(2), np.zeros(2)), [1, 0])
    assert lax.select_n(np.int32(1), 1.0, 2.0) == 2.0


@pytest.mark.parametrize("call, message", [
    (lambda: lax.select_n(np.array([True]), np.ones(1), np.ones(1), np.ones(1)), "at most 2 cases"),
    (lambda: lax.select_n(np.array([1])), "at least one case"),
    (lambda: lax.select_n(np.float32(1), np.ones(2), np.ones(2)), "bool or an integer"),
    (lambda: lax.select_n(np.array([1, 0]), np.ones(2, np.float32), np.ones(2)), "one dtype"),
    (lambda: lax.select_n(np.array([1, 0]), np.ones((2, 1)), np.ones((2, 2))), "one shape"),
    (lambda: lax.select_n(np.array([1, 0]), np.ones((2, 2)), np.ones((2, 2))), "0-d or have the cases' shape"),
])
def test_select_n_errors(call, message):
    with pytest.raises(cj.TracingError, match=message):
        call()


INT_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def random_ints(dtype, shape):
    info = np.iinfo(dtype)
    values = RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    values.reshape(-1)[:3] = [0, info.max, info.min][:values.size]
    return values


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("shape", [(0,), (37,)])
def test_population_count_and_clz(dtype, shape):
    x = random_ints(dtype, shape)
    bits = np.dtype(dtype).itemsize * 8
    unsigned = x.view(f"u{np.dtype(dtype).itemsize}").astype(object)
    want_count = np.array([bin(int(v)).count("1") for v in unsigned], dtype)
    want_clz = np.array([bits - int(v).bit_length() for v in unsigned], dtype)
    np.testing.assert_array_equal(eager_and_jit(lax.population_count, x), want_count)
    np.testing.assert_array_equal(eager_and_jit(lax.clz, x), want_clz)
    with pytest.raises(cj.TracingTypeError, match="integer operands"):
        lax.clz(np.array([True]))


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_mulhi(dtype):
    x, y = random_ints(dtype, (41,)), random_ints(dtype, (41,))
    bits = np.dtype(dtype).itemsize * 8
    want = np.array([(int(a) * int(b)) >> bits for a, b in zip(x, y)], dtype=object)
    want = np.array([int(v) % (1 << bits) for v in want], dtype=np.uint64 if bits == 64 else np.int64)
    got = eager_and_jit(lax.mulhi, x, y)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.view(f"u{np.dtype(dtype).itemsize}").astype(np.uint64), want.astype(np.uint64))
