"""cdnajit.lax (all but control flow) against numpy and direct loop implementations.

Elementwise and data-movement functions are exact, so they compare equal (transcendentals
within a few ulp of numpy's libm). Contractions and window sums are checked against a float64
oracle with the classic bound for a sum of n terms in precision eps: |error| <= n * eps * sum|terms|
<= n^2 * eps * max|term|.
"""
import math

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
from cdnajit import lax

BF16 = np.dtype(ml_dtypes.bfloat16)


def run(fn, *args):
    return cj.jit(fn, backend="interpret")(*args)


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -5, 6, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def assert_sum_close(got, expected, dtype, terms, max_term):
    """got (a sum of `terms` terms of magnitude <= max_term in `dtype`) against a float64 oracle."""
    dtype = np.dtype(dtype)
    assert got.dtype == dtype and got.shape == expected.shape
    if dtype.kind in "iub":
        np.testing.assert_array_equal(got, expected.astype(dtype))
    else:
        np.testing.assert_allclose(got, expected, rtol=0, atol=terms ** 2 * float(np.finfo(dtype).eps) * max_term)


def max_abs(x):
    return float(np.max(np.abs(x), initial=0))


# ---- elementwise -------------------------------------------------------------------------------

UNARY = [  # (lax function, numpy oracle, dtypes)
    (lax.neg, np.negative, [np.float32, np.int32, np.int8]),
    (lax.abs, np.abs, [np.float64, np.int16, np.complex64]),
    (lax.sign, np.sign, [np.float32, np.int64]),
    (lax.floor, np.floor, [np.float32, np.float16]),
    (lax.ceil, np.ceil, [np.float64]),
    (lax.exp, np.exp, [np.float32, np.float64]),
    (lax.log, np.log, [np.float64]),
    (lax.tanh, np.tanh, [np.float32]),
    (lax.sqrt, np.sqrt, [np.float64]),
    (lax.rsqrt, lambda x: 1 / np.sqrt(x), [np.float64]),
    (lax.sin, np.sin, [np.float64]),
    (lax.cos, np.cos, [np.float32]),
    (lax.logistic, lambda x: 1 / (1 + np.exp(-x)), [np.float64]),
    (lax.is_finite, np.isfinite, [np.float32]),
    (lax.bitwise_not, np.invert, [np.int32, np.uint8, np.bool_]),
    (lax.square, np.square, [np.float32, np.int32]),
    (lax.reciprocal, np.reciprocal, [np.float64]),
]


@pytest.mark.parametrize("shape", [(), (1,), (3, 5), (2, 0)])
@pytest.mark.parametrize("fn, oracle, dtypes", UNARY, ids=[f.__name__ for f, _, _ in UNARY])
def test_unary_matches_numpy(fn, oracle, dtypes, shape):
    for dtype in dtypes:
        x = sample(shape, dtype)
        if fn in (lax.log, lax.sqrt, lax.rsqrt, lax.reciprocal):
            x = np.abs(x) + np.asarray(0.5, x.dtype)
        got = run(fn, x)
        expected = oracle(x)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        # Transcendentals may differ from numpy's libm by an ulp or two.
        np.testing.assert_allclose(got, expected, rtol=4 * np.finfo(np.float32).eps if x.dtype.kind in "fc" else 0)


BINARY = [
    (lax.add, np.add), (lax.sub, np.subtract), (lax.mul, np.multiply), (lax.max, np.maximum),
    (lax.min, np.minimum), (lax.eq, np.equal), (lax.ne, np.not_equal), (lax.lt, np.less), (lax.le, np.less_equal),
    (lax.gt, np.greater), (lax.ge, np.greater_equal),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.int64])
@pytest.mark.parametrize("fn, oracle", BINARY, ids=[f.__name__ for f, _ in BINARY])
def test_binary_matches_numpy(fn, oracle, dtype):
    x, y = sample((4, 3), dtype, 1), sample((4, 3), dtype, 2)
    got = run(fn, x, y)
    expected = oracle(x, y)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("fn, oracle", [(lax.bitwise_and, np.bitwise_and), (lax.bitwise_or, np.bitwise_or),
                                        (lax.bitwise_xor, np.bitwise_xor)])
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_])
def test_bitwise_matches_numpy(fn, oracle, dtype):
    x, y = sample((5,), dtype, 1), sample((5,), dtype, 2)
    np.testing.assert_array_equal(run(fn, x, y), oracle(x, y))


def test_integer_division_and_remainder_round_toward_zero():
    x = np.array([7, -7, 7, -7, 0], np.int32)
    y = np.array([2, 2, -2, -2, 3], np.int32)
    np.testing.assert_array_equal(run(lax.div, x, y), [3, -3, -3, 3, 0])
    np.testing.assert_array_equal(run(lax.rem, x, y), [1, -1, 1, -1, 0])


def test_shifts():
    x = np.array([1, -8, 255, -1], np.int32)
    n = np.array([3, 1, 4, 31], np.int32)
    np.testing.assert_array_equal(run(lax.shift_left, x, n), x << n)
    np.testing.assert_array_equal(run(lax.shift_right_arithmetic, x, n), x >> n)
    np.testing.assert_array_equal(run(lax.shift_right_logical, x, n), (x.view(np.uint32) >> n.astype(np.uint32)).view(np.int32))


def test_pow_accepts_an_integer_exponent_array():
    x = np.array([1.5, -2.0, 3.0], np.float32)
    y = np.array([2, 3, -1], np.int32)
    got = run(lax.pow, x, y)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, x ** y.astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("y", [0, 1, 2, 3, 7, -2])
def test_integer_pow(y):
    x = np.array([1.5, -2.0, 0.75], np.float64)
    np.testing.assert_allclose(run(lambda a: lax.integer_pow(a, y), x), x ** float(y), rtol=1e-15)


def test_round_away_from_zero_and_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999999999999994, 2.4, -3.7], np.float64)
    np.testing.assert_array_equal(run(lax.round, x), [1, 2, 3, -1, -3, 0, 2, -4])
    np.testing.assert_array_equal(run(lambda a: lax.round(a, lax.RoundingMethod.TO_NEAREST_EVEN), x), np.round(x))


def test_weak_scalars_take_the_array_dtype():
    x = sample((3,), np.float16)
    got = run(lambda a: lax.mul(a, 2.0), x)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, x * np.float16(2))
    got = run(lambda a: lax.add(3, a), np.arange(3, dtype=np.uint8))
    assert got.dtype == np.uint8


@pytest.mark.parametrize("x, y", [
    (np.ones(3, np.float32), np.ones(3, np.float64)),
    (np.ones(3, np.int32), np.ones(3, np.float32)),
    (np.ones(3, np.int32), 1.5),
])
def test_mixed_dtypes_are_rejected(x, y):
    with pytest.raises(cj.TracingTypeError, match=r"lax.add requires arguments of one dtype.*test_lax.py"):
        run(lax.add, x, y)


def test_only_scalars_and_size_one_dimensions_broadcast():
    x = sample((2, 3), np.float32)
    np.testing.assert_array_equal(run(lax.add, x, np.float32(1)), x + 1)
    np.testing.assert_array_equal(run(lax.add, x, x[:1]), x + x[:1])
    with pytest.raises(cj.TracingTypeError, match="one rank"):
        run(lax.add, x, x[0])


def test_select_and_clamp():
    pred = np.array([True, False, True])
    a, b = sample((3,), np.float32, 1), sample((3,), np.float32, 2)
    np.testing.assert_array_equal(run(lax.select, pred, a, b), np.where(pred, a, b))
    np.testing.assert_array_equal(run(lambda p, x: lax.select(p, x, lax.full_like(x, 0.0)), np.True_, a), a)
    np.testing.assert_array_equal(run(lambda x: lax.clamp(-0.5, x, 0.5), a), np.clip(a, -0.5, 0.5))
    with pytest.raises(cj.TracingTypeError, match="must be bool or an integer"):
        run(lax.select, a, a, b)
    with pytest.raises(cj.TracingTypeError, match="one shape"):   # as jax.lax: no broadcasting of the cases
        run(lambda p, x: lax.select(p, x, 0.0), np.True_, a)


@pytest.mark.parametrize("src, dst", [(np.float64, np.int32), (np.int32, np.float16), (np.float32, np.bool_),
                                      (np.uint8, np.int64)])
def test_convert_element_type(src, dst):
    x = sample((4,), src) * (3 if np.dtype(src).kind == "f" else 1)
    got = run(lambda a: lax.convert_element_type(a, dst), x)
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(got, x.astype(dst))


def test_stop_gradient_is_the_identity_on_pytrees():
    x = sample((2,), np.float32)
    got = run(lambda a: lax.stop_gradient({"a": a, "b": (a,)}), x)
    np.testing.assert_array_equal(got["b"][0], x)


# ---- shapes and slices -----------------------------------------------------------------------------

def test_iota_and_broadcasts():
    np.testing.assert_array_equal(run(lambda: lax.iota(np.int32, 5)), np.arange(5, dtype=np.int32))
    np.testing.assert_array_equal(run(lambda: lax.broadcasted_iota(np.float32, (2, 3), 1)),
                                  np.broadcast_to(np.arange(3, dtype=np.float32), (2, 3)))
    x = sample((3,), np.int32)
    np.testing.assert_array_equal(run(lambda a: lax.broadcast_in_dim(a, (3, 2), (0,)), x), np.repeat(x[:, None], 2, 1))
    np.testing.assert_array_equal(run(lambda a: lax.broadcast(a, (2, 4)), x), np.broadcast_to(x, (2, 4, 3)))
    np.testing.assert_array_equal(run(lambda: lax.full((2, 2), 7, np.int8)), np.full((2, 2), 7, np.int8))
    got = run(lambda a: lax.full_like(a, 2.5), np.zeros((2, 3), np.float16))
    assert got.dtype == np.float16 and got.shape == (2, 3) and np.all(got == 2.5)
    got = run(lambda a: lax.full_like(a, 3, np.int8, (4,)), np.zeros((2, 3), np.float16))
    assert got.dtype == np.int8 and got.shape == (4,) and np.all(got == 3)


def test_reshape_transpose_and_friends():
    x = sample((2, 3, 4), np.float32)
    np.testing.assert_array_equal(run(lambda a: lax.reshape(a, (6, 4)), x), x.reshape(6, 4))
    np.testing.assert_array_equal(run(lambda a: lax.reshape(a, (4, 6), (2, 0, 1)), x), x.transpose(2, 0, 1).reshape(4, 6))
    np.testing.assert_array_equal(run(lambda a: lax.transpose(a, (1, 2, 0)), x), x.transpose(1, 2, 0))
    np.testing.assert_array_equal(run(lambda a: lax.rev(a, (0, 2)), x), x[::-1, :, ::-1])
    np.testing.assert_array_equal(run(lambda a: lax.collapse(a, 1), x), x.reshape(2, 12))
    np.testing.assert_array_equal(run(lambda a: lax.expand_dims(a, (0, -1)), x), x[None, ..., None])
    np.testing.assert_array_equal(run(lambda a: lax.squeeze(a, (0, 4)), x[None, ..., None]), x)
    with pytest.raises(cj.TracingValueError, match="size 1"):
        run(lambda a: lax.squeeze(a, (0,)), x)


def test_static_slices():
    x = sample((5, 7), np.int64)
    np.testing.assert_array_equal(run(lambda a: lax.slice(a, (1, 0), (5, 7), (2, 3)), x), x[1:5:2, 0:7:3])
    np.testing.assert_array_equal(run(lambda a: lax.slice_in_dim(a, -3, None, axis=1), x), x[:, -3:])
    np.testing.assert_array_equal(run(lambda a: lax.index_in_dim(a, -1, 0, keepdims=False), x), x[-1])


@pytest.mark.parametrize("start", [0, 2, 4, -1, -5, 9, -20])
def test_dynamic_slice_wraps_negative_and_clamps(start):
    x = sample((6, 4), np.float32)
    size = 3
    wrapped = start + 6 if start < 0 else start
    first = min(max(wrapped, 0), 6 - size)
    got = run(lambda a, s: lax.dynamic_slice(a, (s, 1), (size, 2)), x, np.int32(start))
    np.testing.assert_array_equal(got, x[first:first + size, 1:3])
    got = run(lambda a: lax.dynamic_slice_in_dim(a, start, size), x)
    np.testing.assert_array_equal(got, x[first:first + size])
    update = np.full((size, 4), -1, np.float32)
    expected = x.copy()
    expected[first:first + size] = update
    np.testing.assert_array_equal(run(lambda a, s: lax.dynamic_update_slice(a, update, (s, 0)), x, np.int64(start)),
                                  expected)


def test_dynamic_index_with_an_index_array():
    x = sample((3, 4, 5), np.int32)
    got = run(lambda a, idx: lax.dynamic_slice(a, idx, (2, 2, 2)), x, np.array([1, 3, 0], np.int32))
    np.testing.assert_array_equal(got, x[1:3, 2:4, 0:2])
    got = run(lambda a, i: lax.dynamic_index_in_dim(a, i, 1, keepdims=False), x, np.int32(2))
    np.testing.assert_array_equal(got, x[:, 2])
    got = run(lambda a, i: lax.dynamic_update_index_in_dim(a, np.zeros((3, 5), np.int32), i, 1), x, np.int32(3))
    expected = x.copy()
    expected[:, 3] = 0
    np.testing.assert_array_equal(got, expected)


def test_concatenate_and_pad():
    a, b = sample((2, 3), np.float32, 1), sample((2, 1), np.float32, 2)
    np.testing.assert_array_equal(run(lambda x, y: lax.concatenate([x, y], 1), a, b), np.concatenate([a, b], 1))
    with pytest.raises(cj.TracingTypeError, match="one dtype"):
        run(lambda x, y: lax.concatenate([x, y], 1), a, b.astype(np.float64))
    x = sample((3, 4), np.int32)
    got = run(lambda v: lax.pad(v, -9, [(1, 2, 1), (-1, 0, 0)]), x)
    expected = np.full((1 + 3 + 2 + 2, 3), -9, np.int32)
    expected[1:6:2] = x[:, 1:]
    np.testing.assert_array_equal(got, expected)


# ---- contractions ----------------------------------------------------------------------------------

DOT_CASES = [  # (lhs shape, rhs shape, dimension numbers, einsum spec)
    ((3, 4), (4, 5), (((1,), (0,)), ((), ())), "ij,jk->ik"),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,))), "bij,bjk->bik"),
    ((4, 3), (5, 4), (((0,), (1,)), ((), ())), "ji,kj->ik"),
    ((2, 3, 4), (3, 2), (((1,), (0,)), ((0,), (1,))), "bik,ib->bk"),
    ((0, 3), (3, 2), (((1,), (0,)), ((), ())), "ij,jk->ik"),
    ((3,), (3,), (((0,), (0,)), ((), ())), "i,i->"),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("lhs_shape, rhs_shape, dnums, spec", DOT_CASES)
def test_dot_general_matches_einsum(lhs_shape, rhs_shape, dnums, spec, dtype):
    lhs, rhs = sample(lhs_shape, dtype, 1), sample(rhs_shape, dtype, 2)
    got = run(lambda a, b: lax.dot_general(a, b, dnums), lhs, rhs)
    terms = math.prod(lhs_shape[d] for d in dnums[0][0])
    expected = np.einsum(spec, lhs.astype(np.float64), rhs.astype(np.float64))
    assert_sum_close(got, expected, dtype, terms, max_abs(lhs) * max_abs(rhs))


def test_dot_and_preferred_element_type():
    a, b = sample((3, 4), np.int8, 1), sample((4,), np.int8, 2)
    got = run(lambda x, y: lax.dot(x, y, preferred_element_type=np.int32), a, b)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32))
    with pytest.raises(cj.TracingTypeError, match="1-D or 2-D"):
        run(lax.dot, sample((2, 2, 2), np.float32), b.astype(np.float32))


def dilate_and_pad(x, dilation, pads, fill):
    """Trailing dimensions of x dilated (holes = fill) then padded (negative pads crop)."""
    lead = x.ndim - len(dilation)
    shape = x.shape[:lead] + tuple((d - 1) * r + 1 if d else 0 for d, r in zip(x.shape[lead:], dilation))
    out = np.full(shape, fill, x.dtype)
    out[(Ellipsis,) + tuple(slice(None, None, r) for r in dilation)] = x
    out = np.pad(out, [(0, 0)] * lead + [(max(lo, 0), max(hi, 0)) for lo, hi in pads], constant_values=fill)
    return out[(Ellipsis,) + tuple(slice(max(-lo, 0), out.shape[lead + i] - max(-hi, 0)) for i, (lo, hi) in enumerate(pads))]


def conv_reference(x, w, strides, pads, lhs_dilation, rhs_dilation, groups, batch_groups):
    """Direct loop over output positions: NC... input, OI... kernel, NC... output."""
    x = dilate_and_pad(x.astype(np.float64), lhs_dilation, pads, 0)
    n, out_features, kernel_in = x.shape[0] // batch_groups, w.shape[0], w.shape[1]
    windows = [(k - 1) * r + 1 for k, r in zip(w.shape[2:], rhs_dilation)]
    out_spatial = [max((p - k) // s + 1, 0) for p, k, s in zip(x.shape[2:], windows, strides)]
    out = np.zeros((n, out_features, *out_spatial))
    for b, o in np.ndindex(n, out_features):
        group = o // (out_features // groups)
        batch = o // (out_features // batch_groups) * n + b
        for position in np.ndindex(*out_spatial):
            window = tuple(slice(p * s, p * s + k, r) for p, s, k, r in zip(position, strides, windows, rhs_dilation))
            patch = x[(batch, slice(group * kernel_in, (group + 1) * kernel_in)) + window]
            out[(b, o) + position] = np.sum(patch * w[o])
    return out


def same_pads(sizes, windows, strides):
    """SAME padding, from its definition: out = ceil(in / stride), the odd element padded high."""
    pads = []
    for size, window, stride in zip(sizes, windows, strides):
        total = max((math.ceil(size / stride) - 1) * stride + window - size, 0)
        pads.append((total // 2, total - total // 2))
    return pads


CONV_CASES = [  # (lhs NC..., rhs OI..., strides, padding, lhs_dilation, rhs_dilation, groups, batch_groups)
    ((2, 3, 7, 6), (4, 3, 3, 2), (1, 1), "VALID", None, None, 1, 1),
    ((1, 2, 8, 7), (3, 2, 3, 3), (2, 3), ((1, 2), (0, 1)), None, None, 1, 1),
    ((2, 4, 5, 5), (6, 2, 2, 2), (1, 2), "SAME", None, (2, 1), 2, 1),
    ((1, 3, 4, 5), (2, 3, 2, 2), (1, 1), ((1, 1), (2, -1)), (2, 1), (1, 2), 1, 1),
    ((4, 2, 5, 4), (6, 2, 3, 2), (1, 1), ((0, 1), (1, 0)), None, None, 1, 2),
    ((3, 6, 9), (6, 1, 4), (2,), "SAME", None, (2,), 6, 1),
    ((2, 2, 3, 4, 3), (2, 2, 2, 2, 1), (1, 2, 1), "VALID", None, None, 1, 1),
    ((1, 1, 2, 2), (1, 1, 3, 3), (1, 1), "VALID", None, None, 1, 1),
]
LAYOUTS = {4: [None, ("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"), ("HWCN", "OHWI", "CNWH")],
           3: [None, ("NWC", "WIO", "NWC")], 5: [("NCDHW", "OIDHW", "NDHWC")]}


def to_layout(x, canonical, layout):
    """x given in `canonical` letter order, transposed to `layout`."""
    return x.transpose([canonical.index(c) for c in layout])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_general_dilated_matches_direct_loops(case, dtype):
    lhs_shape, rhs_shape, strides, padding, lhs_dilation, rhs_dilation, groups, batch_groups = case
    x, w = sample(lhs_shape, dtype, 1), sample(rhs_shape, dtype, 2)
    spatial = len(lhs_shape) - 2
    ones = (1,) * spatial
    if padding == "SAME":
        windows = [(k - 1) * r + 1 for k, r in zip(rhs_shape[2:], rhs_dilation or ones)]
        pads = same_pads(lhs_shape[2:], windows, strides)
    else:
        pads = [(0, 0)] * spatial if padding == "VALID" else padding
    expected = conv_reference(x, w, strides, pads, lhs_dilation or ones, rhs_dilation or ones, groups, batch_groups)
    letters = "DHW"[3 - spatial:]
    for layout in LAYOUTS[len(lhs_shape)]:
        lhs_layout, rhs_layout, out_layout = layout or ("NC" + letters, "OI" + letters, "NC" + letters)
        got = run(lambda a, b: lax.conv_general_dilated(
            a, b, strides, padding, lhs_dilation, rhs_dilation, layout, groups, batch_groups),
            to_layout(x, "NC" + letters, lhs_layout), to_layout(w, "OI" + letters, rhs_layout))
        assert_sum_close(got, to_layout(expected, "NC" + letters, out_layout), dtype, w[0].size,
                         max_abs(x) * max_abs(w))


def test_conv_shorthand_and_dimension_numbers():
    x, w = sample((1, 2, 5, 5), np.float64, 1), sample((3, 2, 2, 2), np.float64, 2)
    np.testing.assert_allclose(run(lambda a, b: lax.conv(a, b, (1, 1), "VALID"), x, w),
                               conv_reference(x, w, (1, 1), [(0, 0)] * 2, (1, 1), (1, 1), 1, 1), rtol=1e-12)
    dnums = lax.conv_dimension_numbers((1, 5, 5, 2), (2, 2, 2, 3), ("NHWC", "HWIO", "NHWC"))
    assert dnums == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    with pytest.raises(cj.TracingValueError, match="layout"):
        run(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "VALID", dimension_numbers=("NCHW", "OIHX", "NCHW")),
            x, w)
    with pytest.raises(cj.TracingValueError, match="transposed convolution"):
        run(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME", lhs_dilation=(2, 2)), x, w)


# ---- reductions ------------------------------------------------------------------------------------

@pytest.mark.parametrize("computation, init, oracle", [
    (lax.add, 0.0, lambda x, axes: np.sum(x, axes)),
    (lax.add, 5.0, lambda x, axes: 5 + np.sum(x, axes)),
    (lambda a, b: lax.mul(b, a), 1.0, lambda x, axes: np.prod(x, axes)),
    (lax.max, -np.inf, lambda x, axes: np.max(x, axes, initial=-np.inf)),
    (lambda a, b: lax.max(a, b), 0.25, lambda x, axes: np.maximum(np.max(x, axes, initial=-np.inf), 0.25)),
    (lax.min, 0.0, lambda x, axes: np.minimum(np.min(x, axes, initial=np.inf), 0)),
])
@pytest.mark.parametrize("shape, axes", [((4, 5), (0,)), ((4, 5), (0, 1)), ((2, 3, 4), (2, 0)), ((3, 0), (1,)),
                                         ((3,), ())])
def test_reduce_with_init(computation, init, oracle, shape, axes):
    x = sample(shape, np.float64)
    np.testing.assert_allclose(run(lambda a: lax.reduce(a, init, computation, axes), x), oracle(x, axes), rtol=1e-13)


def test_reduce_integer_and_bitwise():
    x = sample((3, 4), np.int32)
    np.testing.assert_array_equal(run(lambda a: lax.reduce(a, np.int32(-1), lax.bitwise_and, (1,)), x),
                                  np.bitwise_and.reduce(x, 1))
    np.testing.assert_array_equal(run(lambda a: lax.reduce(a, 3, lax.bitwise_or, (0,)), x),
                                  np.bitwise_or.reduce(x, 0) | 3)
    np.testing.assert_array_equal(run(lambda a: lax.reduce_max(a, (0,)), x), x.max(0))


def test_reduce_rejects_unknown_computations():
    with pytest.raises(NotImplementedError, match="computation .*is not supported"):
        run(lambda a: lax.reduce(a, 0.0, lambda p, q: lax.add(lax.mul(p, 2.0), q), (0,)), np.ones(3))
    with pytest.raises(NotImplementedError, match="variadic"):
        run(lambda a: lax.reduce((a, a), (0.0, 0.0), lax.add, (0,)), np.ones(3))


def reduce_window_reference(x, ufunc, init, window, strides, pads, base_dilation, window_dilation):
    """Direct loops: pad and dilate with init (as jax.lax does), then reduce each window from init."""
    padded = dilate_and_pad(x, base_dilation, pads, init)
    extents = [(w - 1) * r + 1 for w, r in zip(window, window_dilation)]
    out_shape = [max((p - e) // s + 1, 0) for p, e, s in zip(padded.shape, extents, strides)]
    out = np.full(out_shape, init, x.dtype)
    for position in np.ndindex(*out_shape):
        view = padded[tuple(slice(p * s, p * s + e, r) for p, s, e, r in zip(position, strides, extents, window_dilation))]
        out[position] = ufunc.reduce(view.ravel(), initial=init)
    return out


WINDOW_CASES = [  # (shape, window, strides, padding, base_dilation, window_dilation)
    ((2, 3, 6, 7), (1, 1, 2, 2), (1, 1, 2, 2), "VALID", None, None),          # 2x2 pool
    ((2, 3, 6, 7), (1, 1, 3, 3), (1, 1, 2, 2), "SAME", None, None),
    ((5, 6), (2, 3), (1, 2), ((1, 0), (2, 1)), None, None),
    ((5, 6), (2, 2), (2, 1), ((0, 0), (1, -1)), (2, 1), (1, 2)),
    ((7,), (3,), (1,), "SAME", None, (2,)),
    ((0, 4), (1, 2), (1, 1), "VALID", None, None),
]


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("case", WINDOW_CASES)
def test_reduce_window_max_and_avg_pool(case, dtype):
    shape, window, strides, padding, base, dilation = case
    x = sample(shape, dtype)
    ones = (1,) * len(shape)
    pads = (same_pads(shape, window, strides) if padding == "SAME" else
            [(0, 0)] * len(shape) if padding == "VALID" else padding)
    low = np.array(-np.inf if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min, dtype)
    got = run(lambda a: lax.reduce_window(a, low, lax.max, window, strides, padding, base, dilation), x)
    expected = reduce_window_reference(x, np.maximum, low, window, strides, pads, base or ones, dilation or ones)
    np.testing.assert_array_equal(got, expected)
    # Average pooling: window sums divided by the window size.
    got = run(lambda a: lax.div(lax.reduce_window(a, 0, lax.add, window, strides, padding, base, dilation),
                                np.array(math.prod(window), dtype)), x)
    expected = reduce_window_reference(x, np.add, np.array(0, dtype), window, strides, pads, base or ones,
                                       dilation or ones)
    if np.dtype(dtype).kind == "f":
        assert_sum_close(got, expected.astype(np.float64) / math.prod(window), dtype, math.prod(window), max_abs(x))
    else:  # integer division rounds toward zero, as lax.div
        np.testing.assert_array_equal(got, np.trunc(expected / math.prod(window)).astype(dtype))


@pytest.mark.parametrize("case", WINDOW_CASES[:5])
def test_reduce_window_with_a_non_identity_init(case):
    shape, window, strides, padding, base, dilation = case
    x = sample(shape, np.float64)
    ones = (1,) * len(shape)
    pads = (same_pads(shape, window, strides) if padding == "SAME" else
            [(0, 0)] * len(shape) if padding == "VALID" else padding)
    got = run(lambda a: lax.reduce_window(a, 0.5, lambda p, q: lax.add(p, q), window, strides, padding, base, dilation), x)
    expected = reduce_window_reference(x, np.add, 0.5, window, strides, pads, base or ones, dilation or ones)
    np.testing.assert_allclose(got, expected, rtol=1e-13)


@pytest.mark.parametrize("fn, ufunc", [(lax.cumsum, np.add), (lax.cumprod, np.multiply), (lax.cummax, np.maximum),
                                       (lax.cummin, np.minimum)])
@pytest.mark.parametrize("axis, reverse", [(0, False), (1, True), (-1, False)])
def test_cumulative(fn, ufunc, axis, reverse):
    x = sample((3, 5), np.int32)
    expected = np.flip(ufunc.accumulate(np.flip(x, axis), axis), axis) if reverse else ufunc.accumulate(x, axis)
    np.testing.assert_array_equal(run(lambda a: fn(a, axis, reverse), x), expected)


def test_argmax_argmin():
    x = sample((4, 5), np.float32)
    got = run(lambda a: lax.argmax(a, 1, np.int32), x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.argmax(x, 1))
    np.testing.assert_array_equal(run(lambda a: lax.argmin(a, 0, np.int64), x), np.argmin(x, 0))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("dimension", [0, -1])
def test_sort_and_sort_key_val(dtype, dimension):
    keys, values = sample((4, 6), dtype, 1), sample((4, 6), np.int64, 2)
    np.testing.assert_array_equal(run(lambda k: lax.sort(k, dimension), keys), np.sort(keys, dimension))
    order = np.argsort(keys, dimension, kind="stable")
    got_keys, got_values = run(lambda k, v: lax.sort_key_val(k, v, dimension), keys, values)
    np.testing.assert_array_equal(got_keys, np.take_along_axis(keys, order, dimension))
    np.testing.assert_array_equal(got_values, np.take_along_axis(values, order, dimension))
    # Two keys: order by the first, break ties by the second.
    got = run(lambda k, v: lax.sort((k, v), dimension, num_keys=2), keys, values)
    order = np.lexsort((values, keys), axis=dimension)
    np.testing.assert_array_equal(got[1], np.take_along_axis(values, order, dimension))
