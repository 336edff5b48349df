"""lax.conv_transpose, conv_general_dilated_patches (stored JAX answers), conv_with_general_padding, the
conv/window shape helpers, ragged_dot, batch_matmul and fft (numpy oracles), eagerly and under jit."""
import pathlib

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax

ANSWERS = np.load(pathlib.Path(__file__).parent / "data" / "lax_answers.npz")
RNG = np.random.default_rng(3)

# The configurations of data/make_lax_answers.py, in its order.
CONV_TRANSPOSE = [
    ((2, 2), "SAME", None, None, False),
    ((3,), "VALID", None, None, False),
    ((2, 1), ((1, 2), (0, 1)), (1, 2), None, False),
    ((2, 2), "SAME", None, ("NCHW", "OIHW", "NCHW"), True),
    ((2, 2), "VALID", None, None, False),
]


def eager_and_jit(fn, *args):
    """fn's result eagerly and under jit, which must agree; the eager one is returned."""
    eager = fn(*args)
    jitted = cj.jit(fn)(*args)
    for a, b in zip(np.atleast_1d(eager) if not isinstance(eager, tuple) else eager,
                    np.atleast_1d(jitted) if not isinstance(jitted, tuple) else jitted):
        np.testing.assert_array_equal(a, b)
    return eager


@pytest.mark.parametrize("case", range(len(CONV_TRANSPOSE)))
def test_conv_transpose_matches_jax(case):
    strides, padding, dilation, dn, transpose = CONV_TRANSPOSE[case]
    lhs, rhs, want = (ANSWERS[f"conv_transpose/{case}/{k}"] for k in ("lhs", "rhs", "out"))
    got = eager_and_jit(lambda a, b: lax.conv_transpose(a, b, strides, padding, dilation, dn, transpose), lhs, rhs)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case, config", list(enumerate([((2, 3), (1, 1), "VALID", None),
                                                         ((3, 2), (2, 1), "SAME", ("NHWC", "OIHW", "NHWC"))])))
def test_conv_general_dilated_patches_matches_jax(case, config):
    filter_shape, strides, padding, dn = config
    lhs, want = ANSWERS[f"patches/{case}/lhs"], ANSWERS[f"patches/{case}/out"]
    got = eager_and_jit(lambda a: lax.conv_general_dilated_patches(a, filter_shape, strides, padding,
                                                                   dimension_numbers=dn), lhs)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)   # one product by 1 per output: exact


def test_conv_with_general_padding_is_conv_general_dilated():
    lhs, rhs = RNG.standard_normal((2, 3, 7, 6)), RNG.standard_normal((4, 3, 3, 2))
    args = ((2, 1), ((1, 0), (2, 1)), (1, 2), (2, 1))
    got = eager_and_jit(lambda a, b: lax.conv_with_general_padding(a, b, *args), lhs, rhs)
    np.testing.assert_array_equal(got, lax.conv_general_dilated(lhs, rhs, *args))


def test_shape_helpers_match_jax():
    """The values JAX 0.10.2 returns for these calls."""
    assert lax.conv_shape_tuple((1, 3, 10, 10), (4, 3, 3, 3), (1, 2), "SAME") == (1, 4, 10, 5)
    assert lax.conv_shape_tuple((1, 3, 10, 10), (4, 3, 3, 3), (1, 2), [(1, 1), (0, 0)]) == (1, 4, 10, 4)
    layouts = ("NHWC", "HWIO", "NHWC")
    assert lax.conv_general_shape_tuple((1, 10, 10, 3), (3, 3, 3, 4), (1, 2), "VALID", layouts) == (1, 8, 4, 4)
    assert lax.conv_transpose_shape_tuple((1, 10, 10, 3), (3, 3, 3, 4), (1, 2), "VALID", layouts) == (1, 12, 21, 4)
    assert lax.conv_transpose_shape_tuple((1, 10, 10, 3), (3, 3, 3, 4), (1, 2), "SAME", layouts) == (1, 10, 20, 4)
    assert lax.reduce_window_shape_tuple((10, 11), (3, 3), (2, 1), [(1, 1), (0, 0)]) == (5, 9)
    assert lax.reduce_window_shape_tuple((10, 11), (3, 3), (2, 1), [(1, 1), (0, 0)], (2, 1), (1, 2)) == (10, 7)
    assert lax.conv_general_permutations(("NHWC", "HWIO", "NCHW")) == ((0, 3, 1, 2), (3, 2, 0, 1), (0, 1, 2, 3))


def test_conv_transpose_shape_is_its_shape_tuple():
    lhs, rhs = RNG.standard_normal((1, 9, 7, 2)), RNG.standard_normal((3, 2, 2, 5))
    for padding in ("SAME", "VALID"):
        got = lax.conv_transpose(lhs, rhs, (2, 3), padding)
        assert got.shape == lax.conv_transpose_shape_tuple(lhs.shape, rhs.shape, (2, 3), padding,
                                                           ("NHWC", "HWIO", "NHWC"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("sizes", [(1, 2), (0, 3), (3, 0), (2, 1)])
def test_ragged_dot(dtype, sizes):
    lhs = (RNG.standard_normal((4, 3)) * 4).astype(dtype)
    rhs = (RNG.standard_normal((2, 3, 5)) * 4).astype(dtype)
    group_sizes = np.array(sizes, np.int32)
    want = np.zeros((4, 5), dtype)
    start = 0
    for g, size in enumerate(sizes):
        want[start:start + size] = lhs[start:start + size] @ rhs[g]
        start += size
    got = eager_and_jit(lax.ragged_dot, lhs, rhs, group_sizes)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 4, 5)), ((3, 4), (4, 5)), ((0, 2, 3), (0, 3, 1))])
def test_batch_matmul(shapes):
    a, b = (RNG.standard_normal(s) for s in shapes)
    got = eager_and_jit(lax.batch_matmul, a, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-12)
    with pytest.raises(cj.TracingTypeError, match="batch_matmul"):
        lax.batch_matmul(np.ones((2, 3, 4)), np.ones((3, 4, 5)))


@pytest.mark.parametrize("fft_type, numpy_fn, dtype, want_dtype", [
    ("fft", np.fft.fft, np.complex64, np.complex64), (lax.FftType.IFFT, np.fft.ifft, np.float64, np.complex128),
    ("RFFT", np.fft.rfft, np.float32, np.complex64)])
def test_fft(fft_type, numpy_fn, dtype, want_dtype):
    x = RNG.standard_normal((3, 8)).astype(dtype)
    got = eager_and_jit(lambda a: lax.fft(a, fft_type, (8,)), x)
    assert got.dtype == want_dtype
    np.testing.assert_allclose(got, numpy_fn(x.astype(np.complex128) if dtype != np.float32 else x), atol=1e-5)
    with pytest.raises(cj.TracingValueError, match="fft_type"):
        lax.fft(x, "dct", (8,))


@pytest.mark.parametrize("case, config", list(enumerate([((1, 1), "VALID", (2, 2), None),
                                                         ((2, 1), "SAME", (3, 2), ("NHWC", "IHWO", "NHWC"))])))
def test_conv_general_dilated_local_matches_jax(case, config):
    strides, padding, filter_shape, dn = config
    lhs, rhs, want = (ANSWERS[f"local/{case}/{k}"] for k in ("lhs", "rhs", "out"))
    got = eager_and_jit(lambda a, b: lax.conv_general_dilated_local(a, b, strides, padding, filter_shape,
                                                                    dimension_numbers=dn), lhs, rhs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
