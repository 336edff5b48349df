"""Compiled `astype` between every pair of real dtypes, alone and fused into a kernel that goes on
to a transcendental function, against an exact reference: to a float type, the value rounded once
to nearest even (numpy's astype, computed here on Python's exact rationals: numpy and ml_dtypes
round some int64 -> bf16 conversions twice); to an integer type, XLA's saturating convert (NaN -> 0)
for floats and wrapping for integers; to bool, x != 0.

Operands are the values where conversions go wrong: NaN, +-inf, +-0, denormals of the source, the
target's smallest subnormal and largest finite values and the halfway points beside them, ties
that a conversion through f32 rounds twice, and every integer type's extremes."""
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.ir.ops.elementwise import saturate_to_int

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)]
DTYPES = [np.dtype(np.bool_)] + INTS + FLOATS


def float_format(dtype):
    """(significand bits including the implicit one, smallest normal exponent, largest exponent)."""
    info = ml_dtypes.finfo(dtype) if dtype == BF16 else np.finfo(dtype)
    return info.nmant + 1, info.minexp, info.maxexp - 1


def round_exact(value, dtype) -> float:
    """`value` (a Python int or float) rounded once to nearest even in the float type `dtype`."""
    if isinstance(value, float) and (np.isnan(value) or np.isinf(value) or value == 0):
        return value
    if value == 0:
        return 0.0
    precision, min_exponent, max_exponent = float_format(dtype)
    exact = Fraction(value)
    magnitude = abs(exact)
    exponent = max(magnitude.numerator.bit_length() - magnitude.denominator.bit_length() - 1, min_exponent)
    while Fraction(2) ** exponent > magnitude:
        exponent -= 1
    while Fraction(2) ** (exponent + 1) <= magnitude:
        exponent += 1
    ulp = Fraction(2) ** (max(exponent, min_exponent) - precision + 1)
    units = magnitude / ulp
    whole = int(units)
    if units - whole > Fraction(1, 2) or (units - whole == Fraction(1, 2) and whole % 2):
        whole += 1
    rounded = whole * ulp
    if rounded >= Fraction(2) ** (max_exponent + 1):
        rounded = float("inf")
    return float(rounded) if exact > 0 else -float(rounded)


def reference(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype == np.bool_:
        return x != 0
    if dtype in FLOATS:
        values = [v.item() if x.dtype.kind in "iub" else float(v) for v in x]
        return np.array([round_exact(int(v) if isinstance(v, (bool, int)) else v, dtype) for v in values],
                        np.float64).astype(dtype)
    if x.dtype in FLOATS:
        return saturate_to_int(x.astype(np.float64), dtype)
    return x.astype(dtype)  # integers wrap


def halfway_points(dtype):
    """For a float target: values just beside and at the halfway points of its extremes and of 1."""
    precision, min_exponent, max_exponent = float_format(dtype)
    tiny = 2.0 ** (min_exponent - precision + 1)                 # smallest subnormal
    largest = (2 - 2.0 ** (1 - precision)) * 2.0 ** max_exponent
    ulp_one = 2.0 ** (1 - precision)
    points = [tiny, tiny / 2, tiny * 1.5, tiny * 2.5, 2.0 ** min_exponent, 2.0 ** min_exponent - tiny / 2,
              largest, largest + largest * 2.0 ** -precision, 1 + ulp_one / 2, 1 + ulp_one * 1.5]
    nudged = []
    for p in points:
        nudged += [p, np.nextafter(p, np.inf), np.nextafter(p, 0.0)]
    # Ties after a first rounding to f32: just above and below a halfway point of the target.
    nudged += [1 + ulp_one / 2 + 2.0 ** -40, 1 + ulp_one / 2 - 2.0 ** -40, 6.078125089971231]
    return nudged


def operands(source: np.dtype) -> np.ndarray:
    if source == np.bool_:
        return np.array([False, True])
    if source in INTS:
        info = np.iinfo(source)
        values = {info.min, info.min + 1, info.max, info.max - 1, 0, 1, 2, 3, 127, 128, 255, 256, 2049, 2051,
                  65504, 65519, 65520, 65535, 2 ** 24 + 1, 2 ** 24 + 3, 2 ** 24 + 2 ** 16 + 1, 2 ** 31 - 2 ** 6,
                  2 ** 53 + 1, 2 ** 62 + 2 ** 54 + 1, 2 ** 63 - 2 ** 39, 2 ** 64 - 2 ** 39, 2 ** 64 - 2 ** 40}
        values |= {-v for v in values}
        return np.array(sorted(v for v in values if info.min <= v <= info.max), source)
    finfo = ml_dtypes.finfo(source) if source == BF16 else np.finfo(source)
    values = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.5, 2.5, 0.5, 1e-8, -3.7,
              float(finfo.tiny), float(finfo.smallest_subnormal), float(finfo.max), float(-finfo.max),
              127.5, 128.5, 255.5, -128.5, 32767.5, 2147483647.5, -2147483648.6, 4294967296.0, 2.0 ** 63,
              -(2.0 ** 63), 2.0 ** 64, 1.8e19, -9.3e18, 65504.0, 65520.0, 1e300, -1e-300]
    for target in FLOATS:
        values += halfway_points(target)
    values = np.array(values, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.unique(values.astype(source))


def assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    if want.dtype.kind == "f" or want.dtype == BF16:
        g, w = got.astype(np.float64), want.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        both = ~np.isnan(w)
        np.testing.assert_array_equal(g[both], w[both])
        np.testing.assert_array_equal(np.signbit(g[both]), np.signbit(w[both]), err_msg="signs of zeros")
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", DTYPES, ids=str)
@pytest.mark.parametrize("source", DTYPES, ids=str)
def test_astype(source, target):
    x = operands(source)
    assert_same(cj.jit(lambda v: v.astype(target))(x), reference(x, target))


# Fused pairs with a 16-bit float on one side in the default run (where LLVM's folds reach for
# compiler-rt's half conversions); the others are slow.
FUSED_PAIRS = [pytest.param(s, t, id=f"{s}-{t}",
                            marks=() if {s, t} & {np.dtype(np.float16), BF16} else pytest.mark.slow)
               for s in DTYPES for t in DTYPES]


@pytest.mark.parametrize(("source", "target"), FUSED_PAIRS)
def test_astype_fused_with_a_transcendental(source, target):
    """The conversion inside the kernel of the arctan2 that uses it (the kernel that once linked
    compiler-rt's __truncdfhf2, which the JIT does not have)."""
    x = operands(source)

    def convert_then_arctan2(v):
        converted = v.astype(target)
        return converted, cnp.arctan2(converted, converted)

    converted, angle = cj.jit(convert_then_arctan2)(x)
    want = reference(x, target)
    assert_same(converted, want)
    # arctan2(v, v) is pi/4 for v > 0, -3pi/4 for v < 0, 0 or -pi for +-0, NaN for NaN: within a
    # few units of the result type's last place (f16/bf16 compute in f32 and round once).
    wide = want.astype(np.float64)
    exact = np.arctan2(wide, wide)
    eps = float((ml_dtypes.finfo(angle.dtype) if angle.dtype == BF16 else np.finfo(angle.dtype)).eps)
    np.testing.assert_allclose(angle.astype(np.float64), exact, rtol=2 * eps, atol=0)
