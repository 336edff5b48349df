"""cdnajit.numpy's index functions against numpy, eagerly and under jit: nonzero and friends with a
static size, take/take_along_axis/put/place (JAX's out-of-bounds rules), choose/select/piecewise,
the index builders and r_/c_/s_/index_exp."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp

RNG = np.random.default_rng(11)
SHAPES = [(0,), (1,), (7,), (3, 5), (2, 0, 3), (2, 3, 4)]


def sparse(shape, dtype):
    values = RNG.integers(-2, 3, shape) * (RNG.random(shape) < 0.4)
    return values.astype(dtype)


@pytest.mark.parametrize("shape, dtype", [((0,), np.float32), ((1,), np.int8), ((7,), np.bool_), ((3, 5), np.float32),
                                          ((2, 0, 3), np.int8), ((2, 3, 4), np.bool_)])
def test_nonzero_with_size_pads_with_fill_value(shape, dtype, run_both):
    x = sparse(shape, dtype)
    expected = np.nonzero(x)
    count = expected[0].size
    for size in (count + 3, max(count - 1, 0)):
        result = run_both(cnp.nonzero, x, size=size, fill_value=-1)
        for r, e in zip(result, expected):
            assert r.dtype == np.int64
            np.testing.assert_array_equal(r[:min(size, count)], e[:size])
            np.testing.assert_array_equal(r[count:], -1)
    default = run_both(cnp.nonzero, x, size=count + 2)
    assert all((d[count:] == 0).all() for d in default)  # JAX's default fill is 0


@pytest.mark.parametrize("shape", SHAPES)
def test_argwhere_flatnonzero_where_and_eager_without_size(shape, run_both):
    x = sparse(shape, np.int32)
    count = np.count_nonzero(x)
    np.testing.assert_array_equal(run_both(cnp.argwhere, x, size=count), np.argwhere(x))
    np.testing.assert_array_equal(run_both(cnp.flatnonzero, x, size=count), np.flatnonzero(x))
    np.testing.assert_array_equal(cnp.argwhere(x), np.argwhere(x))      # eager: the length from the values
    np.testing.assert_array_equal(cnp.flatnonzero(x), np.flatnonzero(x))
    for r, e in zip(cnp.where(x), np.where(x)):
        np.testing.assert_array_equal(r, e)


def test_where_with_one_argument_takes_size_under_jit():
    x = np.array([0, 3, 0, 1])
    (indices,) = cj.jit(lambda v: cnp.where(v > 0, size=3, fill_value=9))(x)
    np.testing.assert_array_equal(indices, [1, 3, 9])


def test_without_size_under_jit_is_a_concretization_error():
    x = np.array([1, 0, 2])
    for fn in (cnp.nonzero, cnp.argwhere, cnp.flatnonzero, lambda v: cnp.extract(v > 0, v), cnp.unique,
               lambda v: cnp.bincount(v), lambda v: cnp.setdiff1d(v, v)):
        with pytest.raises(cj.ConcretizationError, match="size="):
            cj.jit(fn)(x)


def test_argwhere_of_a_scalar():
    assert cnp.argwhere(np.int32(3)).shape == (1, 0)
    assert cnp.argwhere(np.int32(0)).shape == (0, 0)
    with pytest.raises(ValueError, match="0-d"):
        cnp.nonzero(np.int32(3))


@pytest.mark.parametrize("shape", [(0,), (5,), (3, 4)])
def test_extract_and_compress(shape, run_both):
    x = RNG.normal(size=shape)
    condition = x > 0
    count = np.count_nonzero(condition)
    result = run_both(cnp.extract, condition, x, size=count + 1, fill_value=7.5)
    np.testing.assert_array_equal(result, np.append(np.extract(condition, x), 7.5))
    if len(shape) == 2:
        columns = np.array([True, False, True, True])
        np.testing.assert_array_equal(run_both(cnp.compress, columns, x, axis=1, size=3),
                                      np.compress(columns, x, axis=1))
        np.testing.assert_array_equal(cnp.compress(columns[:2], x, axis=1), np.compress(columns[:2], x, axis=1))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8, np.bool_, np.complex64])
def test_take_fills_out_of_bounds_as_jax(dtype, run_both):
    x = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    indices = np.array([[-5, -1], [4, 2]])
    result = run_both(cnp.take, x, indices, axis=1)
    # JAX's fill: NaN, the smallest signed integer, the largest unsigned one, True (stored answers)
    fills = {np.float64: np.nan, np.float32: np.nan, np.int32: -2 ** 31, np.uint8: 255, np.bool_: True,
             np.complex64: np.nan}
    expected = np.take(x, np.clip(np.where(indices < 0, indices + 4, indices), 0, 3), axis=1).astype(dtype)
    valid = (indices >= -4) & (indices < 4)
    expected = np.where(valid[None], expected, np.array(fills[dtype]).astype(dtype))
    np.testing.assert_array_equal(result, expected)
    assert result.dtype == dtype
    np.testing.assert_array_equal(run_both(cnp.take, x, indices, mode="clip"),
                                  np.take(x, indices, mode="clip"))
    np.testing.assert_array_equal(run_both(cnp.take, x, indices, axis=0, mode="wrap"),
                                  np.take(x, indices, axis=0, mode="wrap"))


@pytest.mark.parametrize("shape, axis", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -1), ((2, 0, 3), 2)])
def test_take_along_axis_and_put_along_axis(shape, axis, run_both):
    x = RNG.normal(size=shape)
    indices = np.argsort(x, axis=axis)
    np.testing.assert_array_equal(run_both(cnp.take_along_axis, x, indices, axis=axis),
                                  np.take_along_axis(x, indices, axis=axis))
    if x.size:
        first = np.take(indices, [0], axis=axis)
        expected = x.copy()
        np.put_along_axis(expected, first, -1.0, axis=axis)
        np.testing.assert_array_equal(run_both(cnp.put_along_axis, x, first, -1.0, axis=axis, inplace=False),
                                      expected)


def test_put_place_fill_diagonal_are_functional(run_both):
    x = np.arange(6.0)
    expected = x.copy()
    np.put(expected, [0, -1], [7, 8])
    np.testing.assert_array_equal(run_both(cnp.put, x, np.array([0, -1]), np.array([7.0, 8.0]), inplace=False),
                                  expected)
    expected = x.copy()
    np.place(expected, x > 1, [10, 20, 30])
    np.testing.assert_array_equal(run_both(cnp.place, x, x > 1, np.array([10.0, 20.0, 30.0]), inplace=False),
                                  expected)
    for shape, wrap in [((3, 3), False), ((5, 3), True), ((5, 3), False), ((3, 3, 3), False)]:
        expected = np.zeros(shape)
        np.fill_diagonal(expected, 2.0, wrap=wrap)
        np.testing.assert_array_equal(run_both(cnp.fill_diagonal, np.zeros(shape), 2.0, wrap=wrap, inplace=False),
                                      expected)
    with pytest.raises(ValueError, match="inplace=False"):
        cnp.put(x, np.array([0]), 1.0)


def test_choose_select_piecewise(run_both):
    a = np.array([0, 2, 1, 2, 0])
    choices = [np.arange(5.0), np.full(5, -1.0), np.linspace(0, 1, 5)]
    np.testing.assert_array_equal(run_both(lambda i: cnp.choose(i, choices, mode="clip"), a), np.choose(a, choices))
    np.testing.assert_array_equal(cnp.choose(a, choices), np.choose(a, choices))  # mode='raise', concrete
    with pytest.raises(cj.ConcretizationError):
        cj.jit(lambda i: cnp.choose(i, choices))(a)
    x = np.linspace(-2, 2, 9)
    conditions = [x < -1, x > 1]
    result = run_both(lambda v: cnp.select([v < -1, v > 1], [v * 2, v ** 2], default=-7.0), x)
    np.testing.assert_array_equal(result, np.select(conditions, [x * 2, x ** 2], default=-7.0))
    result = run_both(lambda v: cnp.piecewise(v, [v < 0, v >= 0], [lambda t: -t, lambda t: t * 3]), x)
    np.testing.assert_array_equal(result, np.piecewise(x, [x < 0, x >= 0], [lambda t: -t, lambda t: t * 3]))
    result = run_both(lambda v: cnp.piecewise(v, [v < 0], [1.5, lambda t: t + 1]), x)
    np.testing.assert_array_equal(result, np.piecewise(x, [x < 0], [1.5, lambda t: t + 1]))


@pytest.mark.parametrize("n, k, m", [(0, 0, None), (1, 0, None), (4, 0, None), (4, 1, 6), (5, -2, 3), (3, 5, 3)])
def test_triangle_and_diagonal_indices(n, k, m):
    for ours, theirs in [(cnp.tril_indices, np.tril_indices), (cnp.triu_indices, np.triu_indices)]:
        for r, e in zip(ours(n, k, m), theirs(n, k, m)):
            np.testing.assert_array_equal(r, e)
            assert r.dtype == np.int64
    for r, e in zip(cnp.tril_indices_from(np.ones((n, m or n)), k), np.tril_indices_from(np.ones((n, m or n)), k)):
        np.testing.assert_array_equal(r, e)
    for r, e in zip(cnp.diag_indices(n, 3), np.diag_indices(n, 3)):
        np.testing.assert_array_equal(r, e)
    for r, e in zip(cnp.mask_indices(n, cnp.triu, k, size=len(np.mask_indices(n, np.triu, k)[0])),
                    np.mask_indices(n, np.triu, k)):
        np.testing.assert_array_equal(r, e)


@pytest.mark.parametrize("shape", [(7,), (2, 3), (4, 1, 5)])
def test_unravel_and_ravel_multi_index(shape, run_both):
    size = int(np.prod(shape))
    flat = np.array([0, size - 1, size // 2, -1, size + 3, -size - 4])
    result = run_both(cnp.unravel_index, flat, shape=shape)
    clipped = np.clip(np.where(flat < 0, flat + size, flat), 0, size - 1)  # JAX clips out-of-bounds indices
    for r, e in zip(result, np.unravel_index(clipped, shape)):
        np.testing.assert_array_equal(r, e)
    coords = tuple(RNG.integers(-2, d + 2, 6) for d in shape)
    for mode in ("wrap", "clip"):
        np.testing.assert_array_equal(run_both(lambda *c: cnp.ravel_multi_index(c, shape, mode=mode), *coords),
                                      np.ravel_multi_index(coords, shape, mode=mode))
    inside = tuple(np.clip(c, 0, d - 1) for c, d in zip(coords, shape))
    np.testing.assert_array_equal(cnp.ravel_multi_index(inside, shape), np.ravel_multi_index(inside, shape))
    np.testing.assert_array_equal(cnp.ravel_multi_index(inside, shape, order="F"),
                                  np.ravel_multi_index(inside, shape, order="F"))


def test_ix_and_index_expressions(run_both):
    rows, cols = np.array([0, 2]), np.array([1, 3, 4])
    for r, e in zip(run_both(cnp.ix_, rows, cols), np.ix_(rows, cols)):
        np.testing.assert_array_equal(r, e)
    assert cnp.s_[1:3, ::2] == np.s_[1:3, ::2] and cnp.index_exp[2] == np.index_exp[2] and cnp.s_[4] == 4
    np.testing.assert_array_equal(cnp.r_[1:4, [7, 8], 0:1:3j], np.r_[1:4, [7, 8], 0:1:3j])
    np.testing.assert_array_equal(cnp.r_["0,2", [1, 2], [3, 4]], np.r_["0,2", [1, 2], [3, 4]])
    np.testing.assert_array_equal(cnp.r_["r", [1, 2, 3]], np.r_["r", [1, 2, 3]])
    np.testing.assert_array_equal(cnp.c_[np.arange(3), np.ones(3)], np.c_[np.arange(3), np.ones(3)])
    np.testing.assert_array_equal(cnp.c_[np.ones((2, 2)), np.zeros((2, 1))], np.c_[np.ones((2, 2)), np.zeros((2, 1))])
    np.testing.assert_array_equal(cj.jit(lambda v: cnp.r_[v, 0:2])(np.ones(2)), np.r_[np.ones(2), 0:2])
