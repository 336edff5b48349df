"""Shared by every test: a private compile cache per test session, the hypothesis profile, and the
differential comparison.

The compile cache (runtime/cache.py) lives in a temporary folder made when the session starts and
removed when it ends, so tests never read or fill the user's cache, and a kernel compiled by one
test is loaded from disk by the next. The library's prebuilt kernels (`python -m cdnajit warm`)
point at an empty folder beside it, so a test compiles what it counts whether or not the
installation has them. Under pytest-xdist the controller makes the folders before it starts the
workers, which inherit the environment and so share them (entries are written atomically, so
concurrent writers are safe).
"""
import os
import shutil
import tempfile

import ml_dtypes
import numpy as np
import pytest
from hypothesis import settings

CACHE_VARIABLE = "CDNAJIT_CACHE_DIR"
LIBRARY_VARIABLE = "CDNAJIT_LIBRARY_DIR"

# CI (which sets CI=true) runs the same hypothesis examples every time, so a submission is judged on
# a fixed set; local runs draw new examples and keep exploring.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker: the controller set the folders up
        return
    root = tempfile.mkdtemp(prefix="cdnajit-test-cache-")
    config.cdnajit_folders = root, {name: os.environ.get(name) for name in (CACHE_VARIABLE, LIBRARY_VARIABLE)}
    os.environ[CACHE_VARIABLE] = os.path.join(root, "cache")
    os.environ[LIBRARY_VARIABLE] = os.path.join(root, "library")


def pytest_unconfigure(config):
    if not hasattr(config, "cdnajit_folders"):
        return
    root, previous = config.cdnajit_folders
    shutil.rmtree(root, ignore_errors=True)
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def ulp_of(expected: np.ndarray, dtype) -> np.ndarray:
    """The spacing of `dtype`'s numbers at each (finite) expected value, subnormals included."""
    info = ml_dtypes.finfo(dtype)
    _, exponent = np.frexp(np.abs(expected.astype(np.float64)))
    return np.exp2(np.maximum(exponent - 1, info.minexp) - info.nmant)


def check_close(actual, expected, ulps=0.0, bound=None, what="result", compared=None):
    """`actual` has `expected`'s dtype and shape, and its values within the tolerance.

    Integers and bools must be equal. For floats, NaN must meet NaN (of either sign: IEEE leaves
    it open) and an infinity the same infinity; finite values may differ by `ulps` units in the
    last place of the expected value plus `bound` (a number or an array broadcasting to the
    result, default 0). With no tolerance at all the bits must agree, so the signs of zeros too.
    Complex values are compared part by part. `compared` (a bool mask) limits the comparison to
    the elements whose value the computation defines (the builder of the case says why).
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, expected {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    if compared is not None:
        if bound is not None:
            bound = np.broadcast_to(np.asarray(bound, np.float64), expected.shape)[compared]
        actual, expected = actual[compared], expected[compared]
    if expected.dtype.kind == "c":
        for part in ("real", "imag"):
            check_close(getattr(actual, part), getattr(expected, part), ulps, bound, f"{what} ({part} part)")
        return
    if expected.dtype.kind not in "f" and expected.dtype != ml_dtypes.bfloat16:
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    wide, wide_expected = actual.astype(np.float64), expected.astype(np.float64)
    nan = np.isnan(wide_expected)
    np.testing.assert_array_equal(np.isnan(wide), nan, err_msg=f"{what}: NaNs at other places")
    infinite = np.isinf(wide_expected)
    np.testing.assert_array_equal(wide[infinite], wide_expected[infinite], err_msg=f"{what}: infinities differ")
    finite = ~nan & ~infinite
    if not ulps and bound is None:
        np.testing.assert_array_equal(wide[finite], wide_expected[finite], err_msg=what)
        np.testing.assert_array_equal(np.signbit(wide[finite]), np.signbit(wide_expected[finite]),
                                      err_msg=f"{what}: signs of zeros differ")
        return
    tolerance = ulps * ulp_of(wide_expected, expected.dtype)
    if bound is not None:
        tolerance = tolerance + np.broadcast_to(np.asarray(bound, np.float64), wide.shape)
    with np.errstate(invalid="ignore"):  # inf - inf where the values are not finite, not compared
        error = np.abs(wide - wide_expected)
    bad = finite & ~(error <= tolerance)
    assert not bad.any(), (f"{what}: {bad.sum()} of {bad.size} values off, e.g. {wide[bad][:4]} where "
                           f"{wide_expected[bad][:4]} was expected (tolerance {tolerance[bad][:4]})")


@pytest.fixture(scope="session")
def assert_close():
    """The comparison of `check_close`, for tests in any folder."""
    return check_close
