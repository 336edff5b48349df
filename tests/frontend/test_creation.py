"""cdnajit.numpy array creation, differential against numpy (dtypes as jax.numpy with x64 enabled).

Integer-valued results (zeros, arange, eye, grids...) are compared exactly. linspace and friends
compute start * (1 - t) + stop * t as JAX does, where numpy computes start + i * step: the two
round differently, by a few ulp of the largest bound (tolerances below say so where used).
"""
import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.errors import ConcretizationError, TracingError


def run(fn, *args):
    return cj.jit(fn)(*args)


def assert_same(got, expected, dtype=None):
    expected = np.asarray(expected, dtype)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


def is_weak(fn, *args):
    """Whether fn's result is weakly typed: a weak result takes the float16 of what it is added to."""
    return run(lambda *a: fn(*a) + np.float16(1), *args).dtype == np.float16


# ---- array, asarray -----------------------------------------------------------------------------

@pytest.mark.parametrize("value, dtype", [
    (3, np.int64), (2.5, np.float64), (True, np.bool_), (1j, np.complex128),
    ([1, 2, 3], np.int64), ([1, 2.5], np.float64), ([True, False], np.bool_), ([True, 2], np.int64),
    ([[1, 2], [3, 4]], np.int64), ((1, 2), np.int64), ([], np.float64), ([[], []], np.float64),
    (np.arange(3, dtype=np.uint8), np.uint8), ([np.float32(1), 2.0], np.float32), (np.float16(2), np.float16),
    ([np.ones(2, np.int8), [3, 4]], np.int8),  # JAX: weak Python ints take the int8 (numpy: int64)
])
def test_asarray_of_concrete_values(value, dtype):
    got = run(lambda: cnp.asarray(value))
    assert_same(got, np.array(value, dtype))
    np.testing.assert_array_equal(run(lambda: cnp.array(value)), got)


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.bool_, np.float16, ml_dtypes.bfloat16, np.complex64])
def test_asarray_with_dtype(dtype):
    assert_same(run(lambda: cnp.asarray([[1, 0], [2, 3]], dtype=dtype)), np.array([[1, 0], [2, 3]], dtype))
    assert_same(run(lambda: cnp.asarray(7, dtype)), np.array(7, dtype))
    assert_same(run(lambda x: cnp.array(x, dtype=dtype), np.arange(3.0)), np.arange(3.0).astype(dtype))


def test_asarray_of_lists_mixing_tracers_and_scalars():
    f = cj.jit(lambda x, y: (cnp.asarray([x, 2.0, y]), cnp.array([[x, y], [y, 1]]), cnp.asarray([x, 1], "int8")))
    flat, nested, typed = f(np.float32(1.5), np.float32(3))
    assert_same(flat, np.array([1.5, 2.0, 3.0], np.float32))   # weak 2.0 takes the tracers' float32
    assert_same(nested, np.array([[1.5, 3], [3, 1]], np.float32))
    assert_same(typed, np.array([1, 1], np.int8))
    rows = cj.jit(lambda v: cnp.asarray([v, v * 2]))(np.arange(3.0))
    assert_same(rows, [np.arange(3.0), np.arange(3.0) * 2])


def test_asarray_keeps_weak_types_of_scalars_only():
    assert is_weak(lambda: cnp.asarray(2.0))
    assert not is_weak(lambda: cnp.asarray([2.0]))
    assert not is_weak(lambda: cnp.asarray(2.0, dtype=float))
    assert_same(run(lambda: cnp.array(5, ndmin=2)), np.array(5, ndmin=2))


# ---- filled arrays ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("shape", [3, (2, 3), (), (0, 4), [1, 1, 2]])
@pytest.mark.parametrize("dtype", [None, np.int32, bool, "float16", ml_dtypes.bfloat16, np.complex64])
def test_zeros_ones_empty(name, shape, dtype):
    expected = (np.ones if name == "ones" else np.zeros)(shape, dtype if dtype is not None else np.float64)
    assert_same(run(lambda: getattr(cnp, name)(shape, dtype)), expected)


@pytest.mark.parametrize("fill, dtype, expected_dtype", [
    (2, None, np.int64), (2.5, None, np.float64), (True, None, np.bool_), (2.5, np.int32, np.int32),
    (np.float32(3), None, np.float32), ([1, 2, 3], None, np.int64), (np.arange(3.0), np.float16, np.float16),
])
def test_full(fill, dtype, expected_dtype):
    assert_same(run(lambda: cnp.full((2, 3), fill, dtype)), np.full((2, 3), fill, expected_dtype))


def test_full_with_a_traced_fill_and_weak_types():
    assert_same(run(lambda v: cnp.full((2, 2), v), np.float32(4)), np.full((2, 2), 4, np.float32))
    assert_same(run(lambda v: cnp.full((2, 3), v), np.arange(3)), np.full((2, 3), np.arange(3)))
    assert is_weak(lambda: cnp.full(3, 2.0)) and not is_weak(lambda: cnp.full(3, 2.0, float))
    assert not is_weak(lambda: cnp.zeros(3))


@pytest.mark.parametrize("name, np_fn", [("zeros_like", np.zeros_like), ("ones_like", np.ones_like),
                                         ("empty_like", np.zeros_like)])
def test_like_functions(name, np_fn):
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    fn = getattr(cnp, name)
    assert_same(run(lambda x: fn(x), x), np_fn(x))
    assert_same(run(lambda x: fn(x, dtype=np.float32, shape=(4,)), x), np_fn(x, dtype=np.float32, shape=(4,)))
    assert_same(run(lambda x: fn(x, shape=()), x), np_fn(x, shape=()))
    assert_same(run(lambda: fn(np.ones((0, 2), bool))), np_fn(np.ones((0, 2), bool)))
    assert is_weak(lambda: fn(1.0)) and not is_weak(lambda x: fn(x), np.float64(1))


def test_full_like():
    x = np.zeros((2, 2), np.float32)
    assert_same(run(lambda x: cnp.full_like(x, 7), x), np.full_like(x, 7))
    assert_same(run(lambda x, v: cnp.full_like(x, v, dtype=int, shape=3), x, 2.0), np.full(3, 2))


# ---- ranges ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, kwargs", [
    ((5,), {}), ((0,), {}), ((-3,), {}), ((2, 10, 3), {}), ((10, 2, -3), {}), ((3, 3), {}), ((0.5, 3), {}),
    ((0, 1, 0.1), {}), ((5,), {"dtype": np.float32}), ((1, 4), {"dtype": np.float16}), ((np.int32(4),), {}),
    ((np.float32(2.5),), {}), ((1, 7, 2), {"dtype": np.uint8}), ((4.0,), {"dtype": int}),
])
def test_arange(args, kwargs):
    expected = np.arange(*args, **kwargs)
    if "dtype" not in kwargs:  # jnp infers int64 / float64 for Python numbers, keeps numpy scalars' dtypes
        expected = expected.astype(np.result_type(*args) if any(isinstance(a, np.generic) for a in args) else
                                   (np.float64 if any(isinstance(a, float) for a in args) else np.int64))
    assert_same(run(lambda: cnp.arange(*args, **kwargs)), expected)


def test_arange_from_zero_is_an_iota():
    text = cj.jit(lambda: cnp.arange(6, dtype=np.float32)).lower().as_text()
    assert "iota" in text and "constant" not in text


@pytest.mark.parametrize("start, stop, kwargs", [
    (0, 1, {}), (2, -3, {"num": 7}), (0, 10, {"num": 4, "endpoint": False}), (1, 2, {"num": 1}),
    (1, 2, {"num": 1, "endpoint": False}), (1, 2, {"num": 0}), (1, 2, {"num": 2}), (0, 9, {"num": 4, "dtype": int}),
    (np.float32(0), np.float32(1), {"num": 5}), (np.array([0.0, 1.0]), 5.0, {"num": 3}),
    (np.array([0.0, 1.0]), np.array([[5.0], [6.0]]), {"num": 4, "axis": -1}),
    (np.array([0.0, 1.0]), np.array([2.0, 4.0]), {"num": 3, "axis": 1, "endpoint": False}),
])
def test_linspace(start, stop, kwargs):
    got, step = run(lambda: cnp.linspace(start, stop, retstep=True, **kwargs))
    expected, expected_step = np.linspace(start, stop, retstep=True, **kwargs)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    # start * (1 - t) + stop * t vs numpy's start + i * step: a few ulp of the bounds apart.
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-14 * max(np.max(np.abs(start)), np.max(np.abs(stop))))
    np.testing.assert_allclose(step, expected_step, rtol=1e-14)


def test_linspace_with_traced_bounds():
    got = cj.jit(lambda a, b: cnp.linspace(a, b, 5))(np.float32(1), np.float32(3))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.linspace(1, 3, 5), rtol=1e-7)   # float32 arithmetic


@pytest.mark.parametrize("kwargs", [{}, {"num": 5, "base": 2.0}, {"num": 4, "endpoint": False}, {"dtype": np.float32}])
def test_logspace(kwargs):
    got = run(lambda: cnp.logspace(0, 3, **kwargs))
    expected = np.logspace(0, 3, **kwargs)
    assert got.dtype == expected.dtype
    # rtol: the exponent's rounding (see linspace) is magnified by ln(base) * exponent <= 7.
    np.testing.assert_allclose(got, expected, rtol=1e-13 if got.dtype == np.float64 else 1e-6)


@pytest.mark.parametrize("start, stop, kwargs", [(1, 1000, {"num": 4}), (-2, -32, {"num": 5}),
                                                 (2, 3, {"num": 6, "endpoint": False})])
def test_geomspace(start, stop, kwargs):
    got = run(lambda: cnp.geomspace(start, stop, **kwargs))
    # JAX's formula (sign * 10 ** linspace(log10 |start|, log10 |stop|)) does not pin the end points
    # as numpy does: a few ulp of relative error.
    np.testing.assert_allclose(got, np.geomspace(start, stop, **kwargs), rtol=1e-13)


# ---- diagonal structures ---------------------------------------------------------------------------

@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2, 1), (3, 3, -2), (3, 5, 7), (0,), (2, 0)])
@pytest.mark.parametrize("dtype", [None, np.int8, bool, np.float16])
def test_eye_and_tri(args, dtype):
    assert_same(run(lambda: cnp.eye(*args, dtype=dtype)), np.eye(*args, dtype=dtype or np.float64))
    # jnp.tri defaults to float32 even with 64-bit types enabled, unlike jnp.eye.
    assert_same(run(lambda: cnp.tri(*args, dtype=dtype)), np.tri(*args, dtype=dtype or np.float32))


def test_identity_and_traced_diagonal_offset():
    assert_same(run(lambda: cnp.identity(3, np.int32)), np.identity(3, np.int32))
    f = cj.jit(lambda k: cnp.eye(3, 4, k))
    for k in (-1, 0, 2, 9):
        assert_same(f(k), np.eye(3, 4, k))


# ---- grids ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("sizes", [(3,), (2, 3), (2, 3, 4), (0, 2)])
def test_meshgrid(indexing, sparse, sizes):
    arrays = [np.arange(n, dtype=np.float32) * (i + 1) for i, n in enumerate(sizes)]
    got = cj.jit(lambda *xs: cnp.meshgrid(*xs, indexing=indexing, sparse=sparse))(*arrays)
    expected = np.meshgrid(*arrays, indexing=indexing, sparse=sparse)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert_same(g, e)


@pytest.mark.parametrize("key", [np.s_[0:5], np.s_[0:4, 1:3], np.s_[-1:2, 0:6:2, 3:0:-1], np.s_[0:1:5j],
                                 np.s_[0:2, 0:1:3j], np.s_[0:1:0.25, 2:4], np.s_[:3]])
def test_mgrid_and_ogrid(key):
    got_dense = run(lambda: cnp.mgrid[key])
    expected_dense = np.mgrid[key]
    assert got_dense.shape == expected_dense.shape and got_dense.dtype == expected_dense.dtype
    np.testing.assert_allclose(got_dense, expected_dense, rtol=1e-15, atol=1e-15)  # linspace: see module doc
    got_sparse, expected_sparse = run(lambda: cnp.ogrid[key]), np.ogrid[key]
    if isinstance(key, slice):
        got_sparse, expected_sparse = [got_sparse], [expected_sparse]
    for g, e in zip(got_sparse, expected_sparse, strict=True):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("dims", [(2, 3), (4,), (), (2, 0, 3)])
def test_indices(dims):
    assert_same(run(lambda: cnp.indices(dims)), np.indices(dims))
    for g, e in zip(run(lambda: cnp.indices(dims, np.int8, sparse=True)), np.indices(dims, np.int8, sparse=True),
                    strict=True):
        assert_same(g, e)


# ---- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fn, error, message", [
    (lambda: cnp.zeros((2, -1)), ValueError, r"negative dimensions are not allowed, got shape \(2, -1\)"),
    (lambda: cnp.ones("abc"), TypeError, "must be an integer"),
    (lambda: cnp.zeros(3, dtype="float128"), TypeError, "unsupported dtype"),
    (lambda: cnp.asarray([[1, 2], [3]]), ValueError, "cannot convert the sequence"),
    (lambda: cnp.asarray("text"), TypeError, "not an array or a scalar"),
    (lambda: cnp.asarray([1, "a"]), TypeError, "not an array or a scalar"),
    (lambda: cnp.arange(0, 5, 0), ValueError, "step must not be zero"),
    (lambda: cnp.arange(np.arange(3)), ValueError, r"must be a scalar, got an array of shape \(3,\)"),
    (lambda: cnp.linspace(0, 1, -1), ValueError, "must be non-negative"),
    (lambda: cnp.eye(-2), ValueError, "negative dimensions"),
    (lambda: cnp.meshgrid(np.ones((2, 2))), ValueError, r"must be 1-D, got shape \(2, 2\)"),
    (lambda: cnp.meshgrid(np.ones(2), indexing="xx"), ValueError, "indexing must be 'xy' or 'ij'"),
    (lambda: cnp.mgrid[0:3, 1], TypeError, "takes slices"),
])
def test_bad_arguments_raise_clear_errors(fn, error, message):
    with pytest.raises(error, match=message) as info:
        run(fn)
    assert isinstance(info.value, TracingError) and "test_creation.py:" in str(info.value)


@pytest.mark.parametrize("fn", [
    lambda n: cnp.zeros(n), lambda n: cnp.full((n, 2), 1.0), lambda n: cnp.arange(n), lambda n: cnp.arange(0, n),
    lambda n: cnp.linspace(0, 1, n), lambda n: cnp.eye(n), lambda n: cnp.ones_like(n, shape=(n,)),
    lambda n: cnp.mgrid[0:n],
])
def test_traced_sizes_are_concretization_errors(fn):
    with pytest.raises(ConcretizationError, match="test_creation.py:"):
        run(fn, 3)
