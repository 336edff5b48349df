"""cdnajit.numpy.fft against numpy.fft: numpy's n / s, axis / axes and norm semantics, JAX's dtypes, jitted
and eager, and numpy's messages for bad input.

Error model: each case is a few FFTs of at most 12 points per axis in float64 (libs/fft: a relative L2
error of a few eps x log2(N) per transform, tests/libs/test_fft.py), so results agree with numpy's
within TOLERANCE relative to the result's norm; the shifts and frequencies are exact.
"""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp

TOLERANCE = 1e-14
RNG = np.random.default_rng(0)
COMPLEX = RNG.standard_normal((4, 6, 10)) + 1j * RNG.standard_normal((4, 6, 10))
REAL = RNG.standard_normal((4, 6, 10))

CASES = [  # (function name, argument, keyword arguments)
    ("fft", COMPLEX, {}),
    ("fft", REAL, {"n": 12, "axis": 1}),
    ("ifft", COMPLEX, {"n": 7, "axis": 0}),
    ("fft2", COMPLEX, {"norm": "ortho"}),
    ("ifft2", COMPLEX, {"s": (3, 12)}),
    ("fftn", COMPLEX, {}),
    ("fftn", COMPLEX, {"axes": (2, 0), "norm": "forward"}),
    ("ifftn", COMPLEX, {"axes": (0, 2), "norm": "ortho"}),
    ("rfft", REAL, {}),
    ("rfft", REAL, {"n": 7, "axis": 0, "norm": "ortho"}),
    ("irfft", COMPLEX, {}),
    ("irfft", COMPLEX, {"n": 9, "axis": 1, "norm": "forward"}),
    ("rfft2", REAL, {"norm": "forward"}),
    ("irfft2", COMPLEX, {"s": (5, 8)}),
    ("rfftn", REAL, {"axes": (0, 1)}),
    ("irfftn", COMPLEX, {"s": (4, 5, 8), "axes": (0, 1, 2)}),
    ("hfft", COMPLEX, {}),
    ("hfft", COMPLEX, {"n": 7, "norm": "ortho"}),
    ("ihfft", REAL, {"n": 5}),
    ("ihfft", REAL, {"norm": "forward"}),
    ("fftshift", COMPLEX, {}),
    ("fftshift", REAL, {"axes": (0, 2)}),
    ("ifftshift", COMPLEX, {"axes": 1}),
]


def close(got, want):
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    assert np.linalg.norm(got - want) <= TOLERANCE * max(np.linalg.norm(want), 1.0)


@pytest.mark.parametrize("name,x,kwargs", CASES)
def test_jitted_and_eager_against_numpy(name, x, kwargs):
    want = getattr(np.fft, name)(x, **kwargs)
    close(cj.jit(lambda a: getattr(cnp.fft, name)(a, **kwargs))(x), want)
    close(getattr(cnp.fft, name)(x, **kwargs), want)


def test_more_than_three_axes():
    x = RNG.standard_normal((3, 4, 2, 5, 2)) + 1j * RNG.standard_normal((3, 4, 2, 5, 2))
    close(cnp.fft.fftn(x), np.fft.fftn(x))
    close(cnp.fft.irfftn(x, axes=(0, 1, 2, 4)), np.fft.irfftn(x, axes=(0, 1, 2, 4)))
    close(cnp.fft.rfftn(x.real), np.fft.rfftn(x.real))


@pytest.mark.parametrize("name,dtype,result", [  # JAX's result dtypes (x64 on)
    ("fft", np.float32, np.complex64), ("fft", np.float16, np.complex64), ("fft", np.int32, np.complex128),
    ("fft", np.float64, np.complex128), ("ifft", np.complex64, np.complex64), ("rfft", np.float32, np.complex64),
    ("rfft", np.int64, np.complex128), ("irfft", np.complex64, np.float32), ("irfft", np.float32, np.float32),
    ("irfft", np.complex128, np.float64), ("hfft", np.complex64, np.float32), ("ihfft", np.float32, np.complex64),
])
def test_dtypes(name, dtype, result):
    got = getattr(cnp.fft, name)(np.arange(1, 7).astype(dtype))
    assert np.asarray(got).dtype == result


@pytest.mark.parametrize("n,d", [(1, 1.0), (7, 0.5), (8, 2.0)])
def test_frequencies(n, d):
    np.testing.assert_array_equal(cnp.fft.fftfreq(n, d), np.fft.fftfreq(n, d))
    np.testing.assert_array_equal(cnp.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    np.testing.assert_array_equal(cj.jit(lambda: cnp.fft.fftfreq(n, d))(), np.fft.fftfreq(n, d))
    assert np.asarray(cnp.fft.fftfreq(n, d, dtype=np.float32)).dtype == np.float32


@pytest.mark.parametrize("call,error,message", [
    (lambda: cnp.fft.fft(np.ones(4), n=0), ValueError, "Invalid number of FFT data points (0) specified."),
    (lambda: cnp.fft.fft(np.ones((2, 0))), ValueError, "Invalid number of FFT data points (0) specified."),
    (lambda: cnp.fft.irfft(np.ones(1)), ValueError, "Invalid number of FFT data points (0) specified."),
    (lambda: cnp.fft.fft(np.ones(4), axis=3), ValueError, "axis 3 is out of bounds for an array of dimension 1"),
    (lambda: cnp.fft.fft2(np.ones(4)), ValueError, "axis -2 is out of bounds for an array of dimension 1"),
    (lambda: cnp.fft.fft(np.ones(4), norm="both"), ValueError, 'Invalid norm value both; should be "backward", '
                                                               '"ortho" or "forward".'),
    (lambda: cnp.fft.fftn(np.ones((2, 2)), s=(2,), axes=(0, 1)), ValueError, "Shape and axes have different lengths"),
    (lambda: cnp.fft.fftn(np.ones((2, 2)), axes=(0, 0)), ValueError, "repeated axes"),
    (lambda: cnp.fft.rfft(np.ones(4, np.complex64)), TypeError, "rfft: the input must be real, got c64"),
    (lambda: cnp.fft.fftfreq(0), ValueError, "Invalid number of FFT data points (0) specified."),
])
def test_bad_input(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


def test_bad_input_inside_jit_names_the_line():
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\) specified. \(at .*test_numpy_fft"):
        cj.jit(lambda a: cnp.fft.fft(a, n=0))(np.ones(4))


def test_the_optimized_graph_holds_library_calls():
    text = cj.jit(lambda a: cnp.fft.rfft2(a)).lower(np.ones((16, 12), np.float32)).compile().as_text("optimized")
    assert 'routine = "rfft_post"' in text and 'solution = "stockham_len16_radix[16]_per_group' in text
    assert " fft(" not in text


def test_numpy_code_dispatches_to_cdnajit_fft():
    """numpy.fft called on traced arrays runs cdnajit.numpy.fft (frontend's __array_function__ dispatch)."""
    def spectrum(a):
        return np.fft.irfft(np.fft.rfft(a) * 2.0, a.shape[-1])
    close(cj.jit(spectrum)(REAL), spectrum(REAL))
