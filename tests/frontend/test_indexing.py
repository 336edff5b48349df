"""Indexing (`x[idx]`) and functional updates (`x.at[idx]...`), differential against numpy.

Values are compared exactly: indexing moves elements and never computes with them. Where JAX
deliberately differs from numpy (out-of-bounds index arrays and traced ints clamp on reads and
are dropped on updates, instead of IndexError) the expected values are computed from numpy on
the clamped or filtered indices.
"""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.errors import ConcretizationError, TracingError

A = np.array([0, 2])
NEG = np.array([[-1, 0], [1, -2]])

# (shape, index): basic, advanced and mixed index expressions, incl. 0-size and 0-d arrays.
INDEX_CASES = [
    ((5,), 0), ((5,), -1), ((5,), 4), ((5,), slice(None)), ((5,), slice(1, 4)), ((5,), slice(None, None, 2)),
    ((5,), slice(None, None, -1)), ((5,), slice(-2, None, -2)), ((5,), slice(4, 0, -3)), ((5,), slice(3, 1)),
    ((5,), slice(10, 20)), ((5,), slice(-10, 2)), ((5,), slice(None, None, -7)), ((5,), None), ((5,), Ellipsis),
    ((5,), ()), ((5,), (None, slice(1, 3), None)),
    ((3, 4, 5), 1), ((3, 4, 5), (1, 2)), ((3, 4, 5), (1, 2, 3)), ((3, 4, 5), (-1, -2, -3)),
    ((3, 4, 5), (Ellipsis, 1)), ((3, 4, 5), (1, Ellipsis)), ((3, 4, 5), (0, Ellipsis, 0)),
    ((3, 4, 5), (slice(None), None, 2)), ((3, 4, 5), (None, Ellipsis, None)),
    ((3, 4, 5), (slice(None, None, -1), slice(1, None, 2), slice(None, 2))),
    ((3, 4, 5), (slice(2, None, -2), 3, slice(None, None, -3))),
    ((3, 4, 5), A), ((3, 4, 5), (A,)), ((3, 4, 5), [0, 2, 2]), ((3, 4, 5), NEG), ((3, 4, 5), (A, A)),
    ((3, 4, 5), (A, slice(None), A)), ((3, 4, 5), (slice(None), A, A)), ((3, 4, 5), (slice(None), A, None, A)),
    ((3, 4, 5), (0, slice(None), A)), ((3, 4, 5), (slice(None), A, 0)), ((3, 4, 5), (A, None, A)),
    ((3, 4, 5), (slice(None), A, Ellipsis, A)), ((3, 4, 5), (Ellipsis, A)), ((3, 4, 5), (Ellipsis, NEG, A)),
    ((3, 4, 5), (NEG, slice(1, 3), A[:, None])), ((3, 4, 5), (slice(None, None, -1), [[1], [3]], [0, 4])),
    ((3, 4, 5), ([1, 0], [0, 1], [2, 3])), ((3, 4, 5), (None, A, None)), ((3, 4, 5), (np.array([], int),)),
    ((3, 4, 5), []), ((3, 4, 5), (np.int64(1), np.array(2))),
    ((3, 4, 5), True), ((3, 4, 5), False), ((3, 4, 5), (0, True)), ((3, 4, 5), (slice(None), A, slice(None), True)),
    ((3, 4, 5), (slice(None), True, A)),
    ((3, 4, 5), np.arange(3) != 1), ((3, 4, 5), (slice(None), [True, False, True, True])),
    ((3, 4, 5), np.arange(12).reshape(3, 4) % 3 == 0), ((3, 4, 5), (1, np.arange(20).reshape(4, 5) % 7 == 0)),
    ((3, 4, 5), (Ellipsis, np.array([True, False, False, True, True]))), ((3, 4, 5), np.zeros((3, 4), bool)),
    ((), ()), ((), Ellipsis), ((), None), ((), (None, Ellipsis, None)), ((), True), ((), False), ((), (None, True)),
    ((0,), slice(None)), ((0, 3), (slice(None), 1)), ((3, 0), 1), ((3, 0), (A, slice(None))),
    ((0, 3), np.array([], int)), ((2, 0, 3), (slice(None), slice(None), [0, 2])),
    ((1, 1), (0, 0)), ((7, 1, 3), (slice(1, 6, 2), 0, [2, 0, 1])),
]


def case_id(case):
    shape, index = case
    return f"{shape}-{index!r}".replace("\n", "")[:80]


def source(shape, dtype=np.float64):
    return np.asarray(np.arange(int(np.prod(shape))).reshape(shape) * 1.5 - 7).astype(dtype)


@pytest.mark.parametrize("case", INDEX_CASES, ids=case_id)
def test_getitem_matches_numpy(case):
    shape, index = case
    x = source(shape)
    expected = x[index]
    got = cj.jit(lambda x: x[index])(x)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint32, np.float16, ml_dtypes.bfloat16, np.complex64])
@pytest.mark.parametrize("index", [(slice(None, None, -2), 1), (A, slice(1, 3)), (slice(None), NEG), (None, 2, A)],
                         ids=repr)
def test_getitem_keeps_every_dtype(dtype, index):
    x = source((3, 4), dtype)
    got = cj.jit(lambda x: x[index])(x)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, x[index])


def is_integer_array(item):
    return isinstance(item, np.ndarray) and item.dtype.kind == "i" and item.size


def as_tuple(index):
    return index if isinstance(index, tuple) else (index,)


@pytest.mark.parametrize("case", [c for c in INDEX_CASES if any(map(is_integer_array, as_tuple(c[1])))], ids=case_id)
def test_traced_integer_index_arrays_match_static_ones(case):
    shape, index = case
    index = as_tuple(index)
    traced = [i for i in index if is_integer_array(i)]

    def f(x, *arrays):
        supply = iter(arrays)
        return x[tuple(next(supply) if is_integer_array(i) else i for i in index)]
    x = source(shape)
    np.testing.assert_array_equal(cj.jit(f)(x, *traced), x[index])


@pytest.mark.parametrize("i", [0, 2, -1, -3, 3, 7, -4, -100])
def test_traced_scalar_index_is_wrapped_then_clamped(i):
    x = source((3, 4))
    clamped = min(max(i + 3 if i < 0 else i, 0), 2)
    np.testing.assert_array_equal(cj.jit(lambda x, i: x[i])(x, i), x[clamped])
    np.testing.assert_array_equal(cj.jit(lambda x, i: x[1:, i])(x, i), x[1:, min(max(i + 4 if i < 0 else i, 0), 3)])
    np.testing.assert_array_equal(cj.jit(lambda x, i: x[[0, 2], i])(x, np.int32(i)),
                                  x[[0, 2], min(max(i + 4 if i < 0 else i, 0), 3)])


def test_traced_scalar_index_uses_dynamic_slice():
    text = cj.jit(lambda x, i: x[i, ::2]).lower(source((3, 4)), 1).as_text()
    assert "dynamic_slice" in text and "gather" not in text


def test_basic_indexing_uses_no_gather():
    text = cj.jit(lambda x: x[::-2, None, 1, ...]).lower(source((5, 4, 3))).as_text()
    assert "gather" not in text and "slice" in text and "rev" in text


def test_out_of_bounds_index_arrays_are_clamped_as_jax():
    x = source((4, 3))
    index = np.array([-9, -1, 3, 4, 100])
    rows, columns = (np.clip(np.where(index < 0, index + n, index), 0, n - 1) for n in x.shape)
    np.testing.assert_array_equal(cj.jit(lambda x: x[index])(x), x[rows])
    np.testing.assert_array_equal(cj.jit(lambda x, i: x[:, i])(x, index), x[:, columns])


def test_list_of_traced_scalars_is_an_index_array():
    x = source((5, 2))
    np.testing.assert_array_equal(cj.jit(lambda x, i, j: x[[i, j, 0]])(x, 3, -1), x[[3, -1, 0]])


def test_weak_type_survives_indexing():
    f = cj.jit(lambda s, h: (cnp.full(3, s)[1:] + h, cnp.full((2, 2), s)[0, [1, 0]] + h))
    assert all(r.dtype == np.float16 for r in f(2.0, np.float16(1)))


# ---- random index expressions ---------------------------------------------------------------------

@st.composite
def index_expressions(draw):
    """A shape and an index tuple of ints, slices, None, an Ellipsis, integer arrays and masks."""
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    items, dim = [], 0
    used_ellipsis = False
    # Items after an Ellipsis index the trailing dimensions, so once it is drawn every remaining
    # dimension gets an item.
    while dim < len(shape) and (used_ellipsis or draw(st.booleans())):
        size = shape[dim]
        kind = draw(st.sampled_from(["int", "slice", "none", "array", "ellipsis", "mask"]))
        if kind == "int" and size:
            items.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            bounds = st.none() | st.integers(-size - 2, size + 2)
            items.append(slice(draw(bounds), draw(bounds), draw(st.none() | st.integers(-3, 3).filter(bool))))
        elif kind == "none":
            items.append(None)
            continue
        elif kind == "array" and size:
            index_shape = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
            items.append(np.array(draw(st.lists(st.integers(-size, size - 1), min_size=int(np.prod(index_shape)),
                                                max_size=int(np.prod(index_shape))))).reshape(index_shape))
        elif kind == "mask":
            items.append(np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)), bool))
        elif kind == "ellipsis" and not used_ellipsis:
            used_ellipsis = True
            items.append(Ellipsis)
            dim = draw(st.integers(dim, len(shape)))  # the dimensions the Ellipsis stands for end here
            continue
        else:
            items.append(slice(None))
        dim += 1
    return shape, tuple(items)


@settings(max_examples=150, deadline=None)
@given(index_expressions())
def test_random_index_expressions_match_numpy(case):
    shape, index = case
    x = source(shape)
    try:
        expected = x[index]
    except IndexError:  # e.g. index arrays that do not broadcast together
        with pytest.raises(IndexError):
            cj.jit(lambda x: x[index])(x)
        return
    got = cj.jit(lambda x: x[index])(x)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@settings(max_examples=80, deadline=None)
@given(index_expressions(), st.sampled_from(["set", "add", "multiply", "min", "max"]))
def test_random_updates_match_numpy(case, method):
    shape, index = case
    x = source(shape)
    try:
        values = np.arange(x[index].size).reshape(x[index].shape) - 3.0
    except IndexError:
        return
    if method != "set" and any(i is None for i in index):  # numpy's ufunc.at takes no None
        return
    np.testing.assert_array_equal(cj.jit(lambda x, v: getattr(x.at[index], method)(v))(x, values),
                                  numpy_update(x, index, method, values))


# ---- x.at[...] -------------------------------------------------------------------------------------

NUMPY_UFUNC_AT = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum,
                  "divide": np.divide, "power": np.power}


def numpy_update(x, index, method, values):
    out = x.copy()
    if method == "set":
        out[index] = values
        return out
    indexed_ndim = x[index].ndim
    if values.ndim > indexed_ndim:  # ufunc.at does not drop leading size-1 dimensions as assignment does
        values = values.reshape(values.shape[values.ndim - indexed_ndim:])
    NUMPY_UFUNC_AT[method].at(out, index, values)
    return out


UPDATE_CASES = [
    ((5,), 2, 10.0), ((5,), -1, 10.0), ((5,), slice(None, None, -2), np.array([1.0, 2.0, 3.0])),
    ((5,), np.array([0, 2, 0, 0]), np.array([1.0, 2.0, 3.0, 4.0])), ((5,), [1, 1, -4], 2.5),
    ((3, 4), (slice(None), 1), np.array([7.0, 8.0, 9.0])), ((3, 4), (A, slice(1, 3)), 3.0),
    ((3, 4), (A, A), np.array([5.0, 6.0])), ((3, 4), np.arange(12).reshape(3, 4) % 5 == 0, -1.0),
    ((3, 4), (NEG, slice(None)), 2.0), ((3, 4), (1, Ellipsis), np.ones((1, 1, 4))),
    ((2, 3, 4), (0, slice(None), [1, 1, 2]), np.arange(9.0).reshape(3, 3) + 1), ((), (), 4.0), ((), None, [4.0]),
    ((3, 0), (1,), 1.0), ((4,), np.array([], int), 1.0), ((3, 4), 1, np.ones((1, 4)) * 2),
    ((6,), slice(1, -1), np.arange(4.0)), ((2, 3, 4), (slice(0, 2), None, -1, slice(1, 3)), np.ones((2, 1, 2))),
    ((4, 5), (slice(2, 2), slice(None)), 1.0),
]


@pytest.mark.parametrize("method", ["set", "add", "multiply", "min", "max", "divide", "power"])
@pytest.mark.parametrize("case", UPDATE_CASES, ids=lambda c: case_id(c[:2]))
def test_at_updates_match_numpy(case, method):
    shape, index, values = case
    x = np.asarray(source(shape) / 4 + 2)  # positive, so that power is defined
    got = cj.jit(lambda x, v: getattr(x.at[index], method)(v))(x, np.asarray(values))
    expected = numpy_update(x, index, method, np.asarray(values))
    # divide and power run as x / ones.at[i].multiply(v) (as JAX): rounding may differ from numpy's
    # repeated in-place updates by an ulp or so.
    np.testing.assert_allclose(got, expected, rtol=1e-14 if method in ("divide", "power") else 0)


def test_static_box_updates_are_dynamic_update_slices():
    text = cj.jit(lambda x: (x.at[1:-1].set(x[:-2]), x.at[2, 1:3].set(0.0))).lower(np.zeros((5, 4))).as_text()
    assert text.count("dynamic_update_slice(") == 2 and "scatter" not in text


def test_at_set_with_duplicates_last_wins_and_add_accumulates():
    x = np.zeros(4)
    index, values = np.array([1, 3, 1, 1]), np.array([1.0, 2.0, 3.0, 4.0])
    f = cj.jit(lambda x, i, v: (x.at[i].set(v), x.at[i].add(v), x.at[i].get()))
    got_set, got_add, got_get = f(x, index, values)
    np.testing.assert_array_equal(got_set, [0, 4, 0, 2])
    np.testing.assert_array_equal(got_add, [0, 8, 0, 2])
    np.testing.assert_array_equal(got_get, x[index])


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int64, np.float16, ml_dtypes.bfloat16,
                                   np.complex128])
def test_at_set_and_add_keep_the_dtype(dtype):
    x = source((3, 4), dtype)
    values = np.ones(2, dtype)
    f = cj.jit(lambda x, v: (x.at[A, 1].set(v), x.at[1, A].add(v)))
    got_set, got_add = f(x, values)
    assert got_set.dtype == got_add.dtype == x.dtype
    np.testing.assert_array_equal(got_set, numpy_update(x, (A, 1), "set", values))
    if dtype is not np.bool_:  # numpy has no add.at for bool
        np.testing.assert_array_equal(got_add, numpy_update(x, (1, A), "add", values))


def test_at_update_value_is_converted_to_the_array_dtype():
    x = np.arange(4, dtype=np.int32)
    got = cj.jit(lambda x: x.at[1].set(2.0))(x)
    assert got.dtype == np.int32 and got[1] == 2


def test_traced_out_of_bounds_updates_are_dropped_as_jax():
    x = np.zeros(4)
    index = np.array([0, 4, -5, 100, -1])
    got = cj.jit(lambda x, i: x.at[i].add(1.0))(x, index)
    np.testing.assert_array_equal(got, [1, 0, 0, 1])
    got = cj.jit(lambda x, i: x.at[i].set(5.0))(x, 9)
    np.testing.assert_array_equal(got, x)


def test_clip_mode_clamps_updates():
    got = cj.jit(lambda x, i: x.at[i].set(1.0, mode="clip"))(np.zeros(3), np.array([-9, 7]))
    np.testing.assert_array_equal(got, [1, 0, 1])   # -9 wraps to -6, then clamps to 0; 7 clamps to 2


# ---- bad input --------------------------------------------------------------------------------------

def test_static_int_out_of_bounds_raises_index_error_naming_axis_size_and_line():
    message = r"index 3 is out of bounds for axis 1 with size 3 \(an array of shape \(2, 3\)\).*test_indexing.py:\d+"
    with pytest.raises(IndexError, match=message):
        cj.jit(lambda x: x[0, 3])(source((2, 3)))
    with pytest.raises(TracingError):
        cj.jit(lambda x: x[-3])(source((2, 3)))


@pytest.mark.parametrize("index, error, message", [
    ((0, 0, 0), IndexError, r"too many indices for an array of shape \(2, 3\)"),
    ((Ellipsis, 0, Ellipsis), IndexError, "single ellipsis"),
    (np.array([True, False, True]), IndexError, r"boolean index of shape \(3,\) does not match .* \(2,\)"),
    ((A, np.array([0, 1, 2])), IndexError, r"shapes \(2,\) \(3,\) cannot be broadcast together"),
    (1.5, TypeError, "index of type float"),
    (np.array([0.5]), TypeError, "integer or boolean dtype"),
    ("a", TypeError, "index of type str"),
    (slice(None, None, 0), ValueError, "slice step cannot be zero"),
])
def test_bad_static_indices(index, error, message):
    with pytest.raises(error, match=message) as info:
        cj.jit(lambda x: x[index])(source((2, 3)))
    assert isinstance(info.value, TracingError) and "test_indexing.py:" in str(info.value)


def test_traced_boolean_mask_is_a_data_dependent_shape_error():
    with pytest.raises(IndexError, match=r"traced mask bool\[3\].*depend on the mask's values.*where") as info:
        cj.jit(lambda x: x[x > 0])(np.arange(3.0))
    assert isinstance(info.value, TracingError)
    with pytest.raises(IndexError, match="traced mask"):
        cj.jit(lambda x: x.at[x > 0].set(0.0))(np.arange(3.0))


def test_traced_slice_bounds_and_float_index_arrays():
    with pytest.raises(ConcretizationError, match="slice bounds must be static.*dynamic_slice"):
        cj.jit(lambda x, i: x[i:])(np.arange(3.0), 1)
    with pytest.raises(TypeError, match=r"integer or boolean dtype, got f64\[2\]"):
        cj.jit(lambda x, i: x[i])(np.arange(3.0), np.array([0.0, 1.0]))


def test_update_values_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"values of shape \(3,\) cannot be broadcast to the indexed shape \(2,\)"
                                         r".*test_indexing.py:\d+"):
        cj.jit(lambda x: x.at[:2].set(np.ones(3)))(np.zeros(4))


def test_unsupported_update_mode():
    with pytest.raises(NotImplementedError, match="mode='fill'"):
        cj.jit(lambda x: x.at[0].get(mode="fill"))(np.zeros(4))
