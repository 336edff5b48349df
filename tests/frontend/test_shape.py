"""cdnajit.numpy shape operations, differential against numpy.

Each case is one function `f(m, *arrays)` written against the numpy API and run twice: with
m=numpy on the arrays, and with m=cdnajit.numpy inside jit. Shape operations only move or
copy elements, so results must be equal exactly, dtype included.
"""
import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.errors import ConcretizationError, TracingError

RNG = np.random.default_rng(0)


def sample(shape, dtype):
    values = RNG.integers(-5, 6, size=shape)
    return values.astype(dtype)


def assert_same(got, expected):
    if isinstance(expected, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same(g, e)
        return
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


def run_both(fn, arrays):
    expected = fn(np, *arrays)
    got = cj.jit(lambda *xs: fn(cnp, *xs))(*arrays)
    assert_same(got, expected)


# (name, f(m, *arrays), [input shapes for one call, ...])
CASES = [
    ("reshape", lambda m, x: m.reshape(x, (3, -1)), [[(2, 6)], [(3, 0)], [(6, 1)]]),
    ("reshape_int", lambda m, x: m.reshape(x, -1), [[(2, 3)], [()], [(0, 4)]]),
    ("reshape_to_0d", lambda m, x: m.reshape(x, ()), [[(1, 1)]]),
    ("ravel", lambda m, x: m.ravel(x), [[(2, 3, 4)], [()], [(0,)]]),
    ("transpose", lambda m, x: m.transpose(x), [[(2, 3, 4)], [(5,)], [()]]),
    ("transpose_axes", lambda m, x: m.transpose(x, (1, -1, 0)), [[(2, 3, 4)], [(1, 0, 2)]]),
    ("moveaxis", lambda m, x: m.moveaxis(x, 0, -1), [[(2, 3, 4)]]),
    ("moveaxis_many", lambda m, x: m.moveaxis(x, (0, 1), (2, 0)), [[(2, 3, 4)], [(1, 0, 5, 2)]]),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, 2), [[(2, 3, 4)]]),
    ("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 3, 4)), [[(3, 1)], [()], [(4,)], [(1, 3, 4)]]),
    ("broadcast_arrays", lambda m, x, y: m.broadcast_arrays(x, y), [[(3, 1), (4,)], [(), (2, 2)], [(0, 1), (3,)]]),
    ("expand_dims", lambda m, x: m.expand_dims(x, -1), [[(2, 3)], [()]]),
    ("expand_dims_tuple", lambda m, x: m.expand_dims(x, (0, -1, 2)), [[(2, 3)], [(0,)]]),
    ("squeeze", lambda m, x: m.squeeze(x), [[(1, 3, 1)], [(1,)], [(2, 0)]]),
    ("squeeze_axis", lambda m, x: m.squeeze(x, axis=(0, -1)), [[(1, 3, 1)]]),
    ("concatenate", lambda m, x, y: m.concatenate([x, y]), [[(2, 3), (4, 3)], [(0, 3), (1, 3)], [(2,), (3,)]]),
    ("concatenate_axis", lambda m, x, y: m.concatenate((x, y, x), axis=-1), [[(2, 3), (2, 1)], [(2, 0), (2, 2)]]),
    ("concatenate_none", lambda m, x, y: m.concatenate([x, y], axis=None), [[(2, 3), (4,)], [(), (1, 1)]]),
    ("stack", lambda m, x, y: m.stack([x, y]), [[(2, 3), (2, 3)], [(), ()], [(0,), (0,)]]),
    ("stack_axis", lambda m, x, y: m.stack((x, y), axis=-1), [[(2, 3), (2, 3)]]),
    ("hstack", lambda m, x, y: m.hstack([x, y]), [[(2,), (3,)], [(2, 1), (2, 3)], [(), ()]]),
    ("vstack", lambda m, x, y: m.vstack([x, y]), [[(3,), (3,)], [(2, 3), (1, 3)], [(), ()]]),
    ("dstack", lambda m, x, y: m.dstack([x, y]), [[(3,), (3,)], [(2, 3), (2, 3)], [(2, 2, 1), (2, 2, 2)]]),
    ("column_stack", lambda m, x, y: m.column_stack([x, y]), [[(3,), (3,)], [(3, 2), (3,)]]),
    ("append", lambda m, x, y: m.append(x, y), [[(2, 3), (2,)], [(), (3,)]]),
    ("append_axis", lambda m, x, y: m.append(x, y, axis=0), [[(2, 3), (1, 3)]]),
    ("split", lambda m, x: m.split(x, 3), [[(6, 2)], [(3,)], [(0,)]]),
    ("split_indices", lambda m, x: m.split(x, [1, 4, -1, 20], axis=1), [[(2, 7)], [(1, 3)]]),
    ("split_unsorted", lambda m, x: m.split(x, [3, 1]), [[(5,)]]),
    ("array_split", lambda m, x: m.array_split(x, 3, axis=-1), [[(2, 7)], [(2, 2)], [(1, 0)]]),
    ("hsplit", lambda m, x: m.hsplit(x, 2), [[(3, 4)], [(4,)]]),
    ("vsplit", lambda m, x: m.vsplit(x, [1]), [[(3, 4)]]),
    ("dsplit", lambda m, x: m.dsplit(x, 2), [[(1, 2, 4)]]),
    ("flip", lambda m, x: m.flip(x), [[(2, 3)], [()], [(0, 2)]]),
    ("flip_axis", lambda m, x: m.flip(x, 1), [[(2, 3, 4)]]),
    ("flip_axes", lambda m, x: m.flip(x, (0, -1)), [[(2, 3, 4)]]),
    ("fliplr", lambda m, x: m.fliplr(x), [[(2, 3)], [(2, 3, 4)]]),
    ("flipud", lambda m, x: m.flipud(x), [[(2,)], [(2, 3)]]),
    ("roll", lambda m, x: m.roll(x, 2), [[(2, 3)], [(0,)], [()]]),
    ("roll_axis", lambda m, x: m.roll(x, -4, axis=1), [[(2, 3)], [(2, 0)]]),
    ("roll_tuple", lambda m, x: m.roll(x, (1, 5), axis=(0, 1)), [[(3, 4)]]),
    ("roll_same_axis", lambda m, x: m.roll(x, (1, 2), axis=0), [[(5, 2)]]),
    ("roll_broadcast", lambda m, x: m.roll(x, 1, axis=(0, 1)), [[(3, 4)]]),
    ("rot90", lambda m, x: m.rot90(x), [[(2, 3)], [(2, 3, 4)]]),
    ("rot90_k", lambda m, x: (m.rot90(x, 2), m.rot90(x, 3), m.rot90(x, -1, axes=(1, 2)), m.rot90(x, 4)),
     [[(2, 3, 4)]]),
    ("tile", lambda m, x: m.tile(x, 2), [[(2, 3)], [()], [(0,)]]),
    ("tile_tuple", lambda m, x: m.tile(x, (2, 1, 3)), [[(2, 3)], [(4,)]]),
    ("tile_short", lambda m, x: m.tile(x, (2,)), [[(2, 3, 2)]]),
    ("repeat", lambda m, x: m.repeat(x, 3), [[(2, 3)], [()]]),
    ("repeat_axis", lambda m, x: m.repeat(x, 2, axis=-1), [[(2, 3)], [(2, 0)]]),
    ("repeat_counts", lambda m, x: m.repeat(x, [1, 0, 3], axis=1), [[(2, 3)]]),
    ("repeat_counts_flat", lambda m, x: m.repeat(x, np.array([2, 1, 0, 1])), [[(2, 2)]]),
    ("pad_int", lambda m, x: m.pad(x, 2), [[(2, 3)], [()], [(0, 1)]]),
    ("pad_pairs", lambda m, x: m.pad(x, ((1, 0), (2, 3))), [[(2, 3)]]),
    ("pad_pair", lambda m, x: m.pad(x, (1, 2), constant_values=3), [[(2, 3)]]),
    ("pad_values", lambda m, x: m.pad(x, ((1, 2), (2, 1)), constant_values=((1, 2), (3, 4))), [[(2, 3)]]),
    ("pad_edge", lambda m, x: m.pad(x, ((3, 1), (2, 4)), mode="edge"), [[(2, 3)], [(1, 1)]]),
    ("pad_wrap", lambda m, x: m.pad(x, ((3, 7), (0, 2)), mode="wrap"), [[(2, 3)], [(1, 4)]]),
    ("pad_reflect", lambda m, x: m.pad(x, ((3, 7), (5, 2)), mode="reflect"), [[(2, 3)], [(1, 4)], [(4, 1)]]),
    ("pad_symmetric", lambda m, x: m.pad(x, ((3, 7), (5, 2)), mode="symmetric"), [[(2, 3)], [(1, 4)]]),
    ("pad_empty_axis", lambda m, x: m.pad(x, ((0, 0), (1, 1)), mode="edge"), [[(0, 3)]]),
    ("triu", lambda m, x: (m.triu(x), m.triu(x, 1), m.triu(x, -2)), [[(3, 4)], [(2, 4, 3)], [(0, 2)]]),
    ("tril", lambda m, x: (m.tril(x), m.tril(x, 2), m.tril(x, -1)), [[(3, 4)], [(2, 4, 3)]]),
    ("diag_vector", lambda m, x: (m.diag(x), m.diag(x, 2), m.diag(x, -1)), [[(3,)], [(1,)], [(0,)]]),
    ("diag_matrix", lambda m, x: (m.diag(x), m.diag(x, 1), m.diag(x, -2), m.diag(x, 9)), [[(3, 4)], [(4, 2)]]),
    ("diagonal", lambda m, x: (m.diagonal(x), m.diagonal(x, 1, 0, 2), m.diagonal(x, -1, 2, 1)),
     [[(3, 4, 5)], [(2, 2, 2)], [(2, 0, 3)]]),
    ("atleast_1d", lambda m, x, y: m.atleast_1d(x, y), [[(), (2, 3)]]),
    ("atleast_2d", lambda m, x, y: m.atleast_2d(x, y), [[(), (3,)], [(2, 3), (1, 1, 1)]]),
    ("atleast_3d", lambda m, x, y, z: m.atleast_3d(x, y, z), [[(), (3,), (2, 3)]]),
    ("atleast_one_arg", lambda m, x: m.atleast_3d(x), [[(2, 3, 4, 5)]]),
    ("copy", lambda m, x: m.copy(x), [[(2, 3)]]),
    ("delete", lambda m, x: (m.delete(x, 1), m.delete(x, [0, 2], axis=1), m.delete(x, slice(None, None, 2), 0)),
     [[(3, 4)]]),
    ("insert", lambda m, x: (m.insert(x, 1, 7), m.insert(x, [0, 2, 2], 9, axis=1), m.insert(x, 3, [5, 6], axis=0)),
     [[(3, 2)]]),
]


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_, np.float16, ml_dtypes.bfloat16],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name, fn, shape_sets", CASES, ids=[c[0] for c in CASES])
def test_shape_op_matches_numpy(name, fn, shape_sets, dtype):
    for shapes in shape_sets:
        run_both(fn, [sample(s, dtype) for s in shapes])


def test_static_properties_work_on_tracers_and_arrays():
    x = np.zeros((2, 3))

    @cj.jit
    def f(x):
        assert cnp.shape(x) == (2, 3) and cnp.ndim(x) == 2 and cnp.size(x) == 6 and cnp.size(x, -1) == 3
        return x
    f(x)
    assert cnp.shape(x) == (2, 3) and cnp.ndim(3.0) == 0 and cnp.size(x, 0) == 2


def test_broadcast_shapes_is_static():
    assert cnp.broadcast_shapes((3, 1), (4,), 1) == (3, 4) == np.broadcast_shapes((3, 1), (4,), 1)


def test_concatenate_promotes_as_jax():
    f = cj.jit(lambda x, y: (cnp.concatenate([x, y]), cnp.stack([x, cnp.full(2, 1.0)]), cnp.hstack([x, [1.5, 2]])))
    x = np.ones(2, np.float16)
    mixed, weak, listed = f(x, np.ones(2, np.int32))
    assert mixed.dtype == np.float16        # JAX: integers join floats at the float's width (numpy: f64)
    assert weak.dtype == np.float16         # weakly typed Python scalars do not widen
    assert listed.dtype == np.float64       # a list is a strongly typed float64 array


@pytest.mark.parametrize("how", [dict(), dict(constant_values=3), dict(mode="edge"), dict(mode="wrap")])
def test_pad_keeps_the_weak_type(how):
    # JAX: minimum(int16, 1e30) is a weak f64, padded it stays weak, so @ a bf16 matrix is bf16.
    f = cj.jit(lambda x, w: cnp.pad(cnp.minimum(x, 1e30), (0, 1), **how) @ w)
    got = f(np.arange(3, dtype=np.int16), np.ones((4, 2), ml_dtypes.bfloat16))
    assert got.dtype == ml_dtypes.bfloat16


def test_roll_with_a_traced_shift():
    x = np.arange(12).reshape(3, 4)
    f = cj.jit(lambda x, s: (cnp.roll(x, s, axis=1), cnp.roll(x, s)))
    for shift in (0, 1, -1, 5, -13, 4):
        rolled_axis, rolled_flat = f(x, shift)
        np.testing.assert_array_equal(rolled_axis, np.roll(x, shift, axis=1))
        np.testing.assert_array_equal(rolled_flat, np.roll(x, shift))


def test_weak_type_is_kept_by_shape_ops():
    f = cj.jit(lambda s, h: (cnp.reshape(cnp.full((2, 2), s), -1) + h, cnp.tile(cnp.full(2, s), 2) + h))
    assert all(r.dtype == np.float16 for r in f(2.0, np.float16(1)))


def test_diagonal_and_triangles_are_built_without_gather():
    text = cj.jit(lambda x: (cnp.diagonal(x, 1), cnp.triu(x))).lower(np.zeros((4, 5))).as_text()
    assert "gather" not in text


# ---- bad input --------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn, error, message", [
    (lambda x: cnp.reshape(x, (4, 2)), ValueError, r"cannot reshape an array of shape \(2, 3\) \(size 6\) into shape "
                                                   r"\(4, 2\)"),
    (lambda x: cnp.reshape(x, (-1, -1)), ValueError, r"shape \(-1, -1\)"),
    (lambda x: cnp.reshape(x, (4, -1)), ValueError, r"into shape \(4, -1\)"),
    (lambda x: cnp.reshape(x, 6, order="F"), NotImplementedError, "order='F'"),
    (lambda x: cnp.squeeze(x, 1), ValueError, r"axis 1 of an array of shape \(2, 3\) has size 3, not 1"),
    (lambda x: cnp.transpose(x, (0, 0)), ValueError, "not a permutation"),
    (lambda x: cnp.concatenate([x, x.T]), ValueError, r"shapes \(2, 3\), \(3, 2\) differ outside axis 0"),
    (lambda x: cnp.concatenate([x[0, 0], x[0, 0]]), ValueError, "zero-dimensional"),
    (lambda x: cnp.concatenate([]), ValueError, "at least one array"),
    (lambda x: cnp.stack([x, x[0]]), ValueError, r"same shape, got \(2, 3\), \(3,\)"),
    (lambda x: cnp.split(x, 2, axis=1), ValueError, "size 3 does not split into 2 equal sections"),
    (lambda x: cnp.broadcast_to(x, (3, 3)), ValueError, r"cannot broadcast shape \(2, 3\) to \(3, 3\)"),
    (lambda x: cnp.expand_dims(x, 3), ValueError, "out of bounds"),
    (lambda x: cnp.moveaxis(x, (0, 1), 0), ValueError, "equally many distinct axes"),
    (lambda x: cnp.pad(x, 1, mode="median"), NotImplementedError, "mode='median'"),
    (lambda x: cnp.pad(x, 1, mode="reflect", reflect_type="odd"), NotImplementedError, "reflect_type"),
    (lambda x: cnp.pad(x, -1), ValueError, "non-negative"),
    (lambda x: cnp.pad(x, ((1, 2, 3),)), ValueError, "does not fit an array of 2 dimensions"),
    (lambda x: cnp.pad(x[:0], 1, mode="wrap"), ValueError, "cannot extend the empty axis 0"),
    (lambda x: cnp.repeat(x, [1, 2]), ValueError, "2 repeats do not match axis 0 of size 6"),
    (lambda x: cnp.repeat(x, -1), ValueError, "non-negative"),
    (lambda x: cnp.triu(x[0]), ValueError, r"at least 2 dimensions, got shape \(3,\)"),
    (lambda x: cnp.diag(x[None]), ValueError, r"1-d or 2-d, got shape \(1, 2, 3\)"),
    (lambda x: cnp.diagonal(x, axis1=1, axis2=-1), ValueError, "must differ"),
    (lambda x: cnp.rot90(x, axes=(0, 0)), ValueError, "must be different"),
    (lambda x: cnp.delete(x, 7, axis=1), ValueError, "delete from an array of shape"),
    (lambda x: cnp.tile(x, (-1,)), ValueError, "negative repetitions"),
])
def test_bad_arguments_raise_clear_errors(fn, error, message):
    with pytest.raises(error, match=message) as info:
        cj.jit(fn)(np.zeros((2, 3)))
    assert isinstance(info.value, (TracingError, NotImplementedError)) and "test_shape.py:" in str(info.value)


@pytest.mark.parametrize("fn", [
    lambda x, n: cnp.reshape(x, (n, -1)),
    lambda x, n: cnp.split(x, n),
    lambda x, n: cnp.repeat(x, n),
    lambda x, n: cnp.tile(x, n),
    lambda x, n: cnp.pad(x, n),
    lambda x, n: cnp.expand_dims(x, n),
    lambda x, n: cnp.triu(x[None], n),
    lambda x, n: cnp.concatenate([x, x], axis=n),
    lambda x, n: cnp.cumsum(x, axis=n),
    lambda x, n: cnp.argsort(x, axis=n),
    lambda x, n: cnp.sum(x, axis=n),
    lambda x, n: cnp.round(x, n),
    lambda x, n: cnp.delete(x, n),
    lambda x, n: cnp.insert(x, n, 1.0),
])
def test_traced_static_arguments_are_concretization_errors(fn):
    with pytest.raises(ConcretizationError, match="test_shape.py:") as info:
        cj.jit(fn)(np.zeros(6), 2)
    assert str(info.value).count("(at ") == 1
