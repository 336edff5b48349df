"""lax.lgamma, digamma, erfc, erf_inv, zeta, polygamma, bessel_i0e and bessel_i1e compiled, against scipy.special's values (glibc's for erfc:
scipy's is ~500 ulp off near 25) stored in data/special_answers.npz (made by
data/make_special_answers.py), and their special values.

Errors are in ulp of the dtype. For lgamma and digamma in f64 the measure is mixed, |got - want|
in ulp of max(|want|, 1): near their roots (lgamma at 1 and 2 and between the negative poles,
digamma between the poles) no formula keeps relative accuracy, and scipy's own values are not
relatively accurate there either (its gammaln near 2 is off by ~1e4 ulp of the value: checked
against lgamma's Taylor series at 50 digits). erfc and erf_inv are measured relatively, with the
ulp floored at the smallest normal. digamma's
negative values are scipy's psi(1 - x) with the reflection term computed in long double: scipy's
own reflection rounds pi * x before its tangent (~20 ulp off at x = -46.9).

f32 results are computed in f64 and rounded once: within half an ulp (plus the f64 error).
"""
import pathlib

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax

ANSWERS = np.load(pathlib.Path(__file__).parent / "data" / "special_answers.npz")

# Maximum f64 error (ulp, as the module docstring measures it) per (function, domain), as measured
# (README's table); f32 is 0.5 ulp for all, allowed 0.51 for the f64 value's own error.
F64_BOUNDS = {("lgamma", "positive"): 2, ("lgamma", "negative"): 5, ("digamma", "positive"): 8,
              ("digamma", "negative"): 6, ("erfc", "all"): 3, ("erf_inv", "all"): 3,
              ("bessel_i0e", "all"): 12, ("bessel_i1e", "all"): 11}
MIXED = {"lgamma", "digamma"}


def error_ulp(name: str, got: np.ndarray, want: np.ndarray, dtype) -> np.ndarray:
    rounded = want.astype(dtype)   # finite: points() keeps those
    floor = np.float64(1.0) if (name in MIXED and dtype == np.float64) else np.finfo(dtype).tiny
    scale = np.spacing(np.maximum(np.abs(rounded), dtype(floor))).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / scale


def points(name: str, domain: str, dtype):
    suffix = ("x", "f64") if dtype == np.float64 else ("x32", "f32")
    x = ANSWERS[f"{name}/{domain}/{suffix[0]}"].astype(dtype)
    want = ANSWERS[f"{name}/{domain}/{suffix[1]}"]
    with np.errstate(over="ignore"):
        keep = np.isfinite(want.astype(dtype)) & np.isfinite(x)   # overflow to inf is tested apart
    return x[keep], want[keep]


@pytest.mark.parametrize("name,domain", sorted(F64_BOUNDS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_against_scipy(name, domain, dtype):
    x, want = points(name, domain, dtype)
    got = cj.jit(getattr(lax, name))(x)
    assert got.dtype == dtype
    err = error_ulp(name, got, want, dtype)
    bound = F64_BOUNDS[name, domain] if dtype == np.float64 else 0.51
    worst = int(np.argmax(err))
    assert err[worst] <= bound, f"{name}({x[worst]!r}) = {got[worst]!r}, scipy {want[worst]!r}: {err[worst]:.1f} ulp"


INF, NAN = np.inf, np.nan
# JAX's values (jax_enable_x64) at -inf, inf, nan, 0, -0, -1, 1.
SPECIAL_X = np.array([-INF, INF, NAN, 0.0, -0.0, -1.0, 1.0])
SPECIAL = {
    "lgamma": [INF, INF, NAN, INF, INF, INF, 0.0],
    "digamma": [NAN, INF, NAN, NAN, NAN, NAN, -0.5772156649015329],
    "erfc": [2.0, 0.0, NAN, 1.0, 1.0, 1.8427007929497148, 0.15729920705028513],
    "erf_inv": [NAN, NAN, NAN, 0.0, -0.0, -INF, INF],
    "bessel_i0e": [0.0, 0.0, NAN, 1.0, 1.0, 0.46575960759364043, 0.46575960759364043],
    "bessel_i1e": [-0.0, 0.0, NAN, 0.0, -0.0, -0.2079104153497085, 0.2079104153497085],
}


@pytest.mark.parametrize("name", sorted(SPECIAL))
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_special_values(name, dtype):
    got = getattr(lax, name)(SPECIAL_X.astype(dtype))
    want = np.array(SPECIAL[name]).astype(dtype)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=float(np.finfo(dtype).eps) * 8, atol=0)
    numbers = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_half_precision_rounds_the_f32_value(name):
    """bf16 and f16 compute in f64 and round once: the f32 result, rounded, within the half type's ulp."""
    import ml_dtypes
    x = np.linspace(-0.99, 6.0, 257).astype(np.float32)
    x = x[np.abs(x) < 0.99] if name == "erf_inv" else x
    x = x[np.abs(x - np.round(x)) > 1e-2] if name in MIXED else x
    for dtype in (np.float16, ml_dtypes.bfloat16):
        reference = getattr(lax, name)(x.astype(dtype).astype(np.float32))
        got = getattr(lax, name)(x.astype(dtype))
        assert got.dtype == dtype
        close = np.abs(got.astype(np.float32) - reference) <= np.spacing(np.abs(reference).astype(dtype)).astype(np.float32)
        assert close[np.isfinite(reference)].all(), name


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_interpreter_agrees(name):
    """The op table's reference (the interpreter) and the kernels agree to the kernels' bound."""
    x = np.concatenate([np.linspace(-5.5, 8.0, 61), [0.3, 1.0 - 1e-9, 2.5]])
    if name in ("erf_inv",):
        x = np.linspace(-0.999, 0.999, 61)
    fn = getattr(lax, name)
    compiled = cj.jit(fn)(x)
    interpreted = cj.jit(fn, backend="interpret")(x)
    finite = np.isfinite(interpreted)
    assert np.array_equal(np.isnan(compiled), np.isnan(interpreted))
    np.testing.assert_allclose(compiled[finite], interpreted[finite], rtol=1e-13, atol=1e-13)


def test_lgamma_overflows_to_inf():
    """lgamma(x) ~ x log x: finite up to about 4e36 in f32 and 2.5e305 in f64."""
    with np.errstate(over="ignore"):
        single = lax.lgamma(np.array([4e36, 1e38, 3e38], np.float32))
    double = lax.lgamma(np.array([2e305, 1e307, 1e308]))
    assert np.isfinite(single[0]) and np.isposinf(single[1:]).all()
    assert np.isfinite(double[0]) and np.isposinf(double[1:]).all()


def test_integer_operand_is_an_error():
    with pytest.raises(cj.TracingError, match="lgamma"):
        lax.lgamma(np.arange(3))


def test_empty_and_odd_shapes():
    for shape in [(0,), (3, 0), (5, 7)]:
        x = np.full(shape, 0.25)
        np.testing.assert_allclose(lax.erf_inv(x), np.full(shape, 0.2253120550121781), rtol=1e-15)


def test_tables_match_their_derivation():
    from cdnajit.lowering import elemental_special, special_coefficients
    for name, derived in special_coefficients.tables().items():
        stored = getattr(elemental_special, name)
        assert (tuple(stored) if isinstance(stored, tuple) else stored) == (
            tuple(derived) if isinstance(derived, (list, tuple)) else derived), name


# Two-argument functions: (bound in f64 ulp, measured; f32 within 0.51 ulp for zeta, computed in f64 and
# rounded once, and 1.5 for polygamma, whose m! and zeta round separately in f32).
PAIR_BOUNDS = {"zeta": (0.51, 5), "polygamma": (1.5, 6)}


@pytest.mark.parametrize("name", sorted(PAIR_BOUNDS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_two_argument_functions_against_scipy(name, dtype):
    """zeta(s, q) over s in (1, 31], q in (1e-3, 50) and negative q with integer s; polygamma(m, x) for
    m = 1..5 and x > 0 (m = 0 is digamma, tested above)."""
    suffix = ("a", "b", "f64") if dtype == np.float64 else ("a32", "b32", "f32")
    a, b, want = (ANSWERS[f"{name}/all/{s}"] for s in suffix)
    a, b = a.astype(dtype), b.astype(dtype)
    got = cj.jit(getattr(lax, name))(a, b)
    assert got.dtype == dtype
    with np.errstate(over="ignore"):
        rounded = want.astype(dtype)
    overflow = np.isinf(rounded) & np.isfinite(want)
    assert np.isinf(got[overflow]).all()
    keep = np.isfinite(rounded) & ((a >= 1) & (b > 0) if name == "polygamma" else True)
    err = error_ulp(name, got[keep], want[keep], dtype)
    bound = PAIR_BOUNDS[name][dtype == np.float64]
    worst = int(np.argmax(err))
    assert err[worst] <= bound, f"{name}({a[keep][worst]!r}, {b[keep][worst]!r}) = {got[keep][worst]!r}, " \
                                f"scipy {want[keep][worst]!r}: {err[worst]:.1f} ulp"


def test_zeta_and_polygamma_special_values():
    """JAX's values: zeta is NaN for s < 1 and infinite arguments, inf at s = 1 and the poles q = 0, -1, ...;
    polygamma is NaN for a negative or fractional order."""
    s = np.array([2.0, 1.0, 0.5, 2.0, 2.0, np.inf, 2.0])
    q = np.array([1.0, 1.0, 1.0, -1.0, 0.0, 2.0, np.inf])
    np.testing.assert_allclose(lax.zeta(s, q), [np.pi ** 2 / 6, np.inf, np.nan, np.inf, np.inf, np.nan, np.nan],
                               rtol=4e-16)
    got = lax.polygamma(np.array([1.5, -1.0, 1.0, 0.0]), np.array([2.0, 2.0, 0.0, 1.0]))
    np.testing.assert_array_equal(got[:3], [np.nan, np.nan, np.inf])
    np.testing.assert_allclose(got[3], -0.5772156649015329, rtol=1e-15)
