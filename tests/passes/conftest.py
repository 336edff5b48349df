"""Helpers shared by the pass tests: random arguments for a module and an exact comparison.

Passes must not change results, so the comparison is exact: the same reference ops run on the
same dtypes before and after a pass. NaN compares equal to NaN, and -0.0 differs from 0.0.
"""
import numpy as np
import pytest

import cdnajit as cj

SPECIAL_FLOATS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0])


def random_argument(type, rng) -> np.ndarray:
    """Random values of an IR type; floats include the special values (about one element in ten)."""
    dtype = type.numpy_dtype
    if dtype.kind == "b":
        return rng.random(type.shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(int(info.min), -100), min(int(info.max), 100), size=type.shape,
                            endpoint=True).astype(dtype)
    values = rng.normal(size=type.shape) * 3
    values = np.where(rng.random(type.shape) < 0.1, rng.choice(SPECIAL_FLOATS, size=type.shape), values)
    if dtype.kind == "c":
        values = values + 1j * rng.normal(size=type.shape)
    return values.astype(dtype)


def assert_identical(actual: np.ndarray, expected: np.ndarray, nan_signs: bool = True):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)
    if expected.dtype.kind in "fc":
        compared = np.ones(expected.shape, bool) if nan_signs else ~np.isnan(expected)
        np.testing.assert_array_equal(np.signbit(actual.real) & compared, np.signbit(expected.real) & compared)


@pytest.fixture
def check_equivalent():
    """check(before, after): both modules give identical results on random arguments. With nan_signs=False
    a NaN may have either sign: IEEE leaves it unspecified, and it follows operand order (x * NaN)."""
    def check(before, after, trials=3, seed=0, nan_signs=True):
        rng = np.random.default_rng(seed)
        for _ in range(trials):
            args = [random_argument(p.type, rng) for p in before.params]
            expected = cj.ir.interpret(before, *args)
            actual = cj.ir.interpret(after, *args)
            assert len(actual) == len(expected)
            for a, e in zip(actual, expected):
                assert_identical(a, e, nan_signs)
    return check
