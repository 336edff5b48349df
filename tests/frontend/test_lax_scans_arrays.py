"""lax.associative_scan, cumlogsumexp, reduce_xor, top_k, approx_max_k/min_k, the array helpers
(split, stack, unstack, tile, index_take, broadcasts, empty, dtype) and the program-level functions,
against numpy, eagerly and under jit."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax

RNG = np.random.default_rng(9)


def eager_and_jit(fn, *args):
    eager = fn(*args)
    jitted = cj.jit(fn)(*args)
    for a, b in zip(eager if isinstance(eager, (tuple, list)) else [eager],
                    jitted if isinstance(jitted, (tuple, list)) else [jitted]):
        np.testing.assert_array_equal(a, b)
    return eager


@pytest.mark.parametrize("length", [0, 1, 2, 5, 8, 33])
@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan(length, reverse):
    x = RNG.integers(-5, 5, (3, length)).astype(np.int64)
    y = RNG.integers(1, 3, (3, length)).astype(np.int64)

    def pairs(a, b):   # (sum, product) componentwise, a pytree
        return a[0] + b[0], a[1] * b[1]
    got = eager_and_jit(lambda u, v: lax.associative_scan(pairs, (u, v), reverse=reverse, axis=1), x, y)
    flip = (lambda a: a[:, ::-1]) if reverse else (lambda a: a)
    np.testing.assert_array_equal(got[0], flip(np.cumsum(flip(x), axis=1)))
    np.testing.assert_array_equal(got[1], flip(np.cumprod(flip(y), axis=1)))


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-14), (np.float32, 1e-6), (np.float16, 2e-3)])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumlogsumexp(dtype, rtol, reverse):
    x = (RNG.standard_normal((4, 9)) * 30).astype(dtype)
    x[0, 3], x[1, :2], x[2, 5] = -np.inf, np.inf, np.nan
    got = eager_and_jit(lambda a: lax.cumlogsumexp(a, axis=1, reverse=reverse), x)
    assert got.dtype == dtype
    wide = x.astype(np.float64)[:, ::-1] if reverse else x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = np.logaddexp.accumulate(wide, axis=1)
    want = want[:, ::-1] if reverse else want
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 2), ()])
def test_reduce_xor(dtype, axes):
    x = RNG.integers(0, 100, (3, 7, 0 if axes == (0, 2) and dtype == np.int32 else 5)).astype(dtype)
    got = eager_and_jit(lambda a: lax.reduce_xor(a, axes), x)
    want = np.bitwise_xor.reduce(x, axis=axes) if axes else x
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
@pytest.mark.parametrize("k", [0, 1, 3, 6])
def test_top_k_and_approx(dtype, k):
    x = RNG.integers(0, 4, (5, 6)).astype(dtype)   # many ties: equal values keep index order
    values, indices = eager_and_jit(lambda a: lax.top_k(a, k), x)
    order = np.argsort(-x.astype(np.float64), axis=-1, kind="stable")[:, :k]
    assert indices.dtype == np.int32 and values.dtype == dtype
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(values, np.take_along_axis(x, order, -1))
    approx = lax.approx_max_k(x, k)
    np.testing.assert_array_equal(approx[1], order)
    low_values, low_indices = lax.approx_min_k(x, k)
    low_order = np.argsort(x, axis=-1, kind="stable")[:, :k]
    np.testing.assert_array_equal(low_indices, low_order)
    np.testing.assert_array_equal(low_values, np.take_along_axis(x, low_order, -1))


def test_top_k_nan_first_and_errors():
    values, indices = lax.top_k(np.array([3.0, 1, 3, np.nan, 2]), 2)   # JAX: [nan, 3], [3, 0]
    np.testing.assert_array_equal(values, [np.nan, 3])
    np.testing.assert_array_equal(indices, [3, 0])
    with pytest.raises(cj.TracingValueError, match="k = 6"):
        lax.top_k(np.ones(5), 6)


def test_split_stack_unstack_tile():
    x = RNG.standard_normal((3, 4))
    pieces = eager_and_jit(lambda a: lax.split(a, [1, 0, 2], axis=0), x)
    for piece, want in zip(pieces, np.split(x, [1, 1], axis=0)):
        np.testing.assert_array_equal(piece, want)
    with pytest.raises(cj.TracingValueError, match="sum to dimension"):
        lax.split(x, [1, 2], axis=1)
    np.testing.assert_array_equal(eager_and_jit(lambda a: lax.stack([a, 2 * a], 1), x), np.stack([x, 2 * x], 1))
    for got, want in zip(eager_and_jit(lambda a: lax.unstack(a, 1), x), np.moveaxis(x, 1, 0)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(eager_and_jit(lambda a: lax.tile(a, (2, 3)), x), np.tile(x, (2, 3)))
    np.testing.assert_array_equal(lax.tile(x, (0, 1)), np.tile(x, (0, 1)))
    with pytest.raises(cj.TracingTypeError, match="reps"):
        lax.tile(x, (2,))


def test_index_take_and_broadcasts():
    x = np.arange(24.0).reshape(2, 3, 4)
    rows, cols = np.array([0, 1, 1]), np.array([3, 0, 9])   # 9 clamps to 3
    got = eager_and_jit(lambda a, r, c: lax.index_take(a, (r, c), (0, 2)), x, rows, cols)
    np.testing.assert_array_equal(got, x[rows, :, np.minimum(cols, 3)])
    assert lax.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert lax.broadcast_to_rank(np.ones(3), 3).shape == (1, 1, 3)
    like = lax.broadcast_like(np.ones(3, np.float32), np.ones((2, 3)))
    assert like.shape == (2, 3) and like.dtype == np.float32
    empty = lax.empty((2, 0, 3), np.int8)
    assert empty.shape == (2, 0, 3) and empty.dtype == np.int8
    assert lax.dtype(1.0) == np.float64 and lax.dtype(np.ones(2, np.int8)) == np.int8 and lax.dtype(True) == np.bool_


def test_program_level_functions_keep_values():
    x = RNG.standard_normal(4)
    tree = eager_and_jit(lambda a: lax.optimization_barrier((a, 2 * a)), x)
    np.testing.assert_array_equal(tree[1], 2 * x)
    np.testing.assert_array_equal(eager_and_jit(lambda a: lax.with_sharding_constraint(a, None), x), x)
    np.testing.assert_array_equal(eager_and_jit(lax.stage, x), x)
    assert lax.dce_sink(x) is None
    np.testing.assert_array_equal(lax.shape_as_value((2, 3)), np.array([2, 3], np.int32))
    chosen = eager_and_jit(lambda a: lax.platform_dependent(a, cpu=lambda v: v - 1, rocm=lambda v: v + 1), x)
    np.testing.assert_array_equal(chosen, x + 1)
    np.testing.assert_array_equal(lax.platform_dependent(x, cuda=lambda v: v, default=lambda v: -v), -x)
    with pytest.raises(NotImplementedError, match="platform"):
        lax.platform_dependent(x, cuda=lambda v: v)
    double = lax.composite(lambda v: v * 2, "my.double")
    np.testing.assert_array_equal(cj.jit(double)(x), 2 * x)


def test_custom_root_and_linear_solve_run_the_solver():
    def solve_newton(f, guess):   # a fixed number of Newton steps on f(y) = y^2 - 2
        return lax.fori_loop(0, 30, lambda i, y: y - f(y) / (2 * y), guess)
    root = cj.jit(lambda g: lax.custom_root(lambda y: y * y - 2.0, g, solve_newton, None))(np.float64(1.0))
    np.testing.assert_allclose(root, np.sqrt(2), rtol=1e-15)
    matrix = np.array([[3.0, 1.0], [1.0, 2.0]])
    b = np.array([1.0, 4.0])
    solution = cj.jit(lambda m, v: lax.custom_linear_solve(lambda u: m @ u, v,
                                                           lambda mv, w: w / np.diag(matrix)))(matrix, b)
    np.testing.assert_allclose(solution, b / np.diag(matrix))
