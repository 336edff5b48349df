"""A value as the oracle knows it (the reference array, its dtype, a bound on each element's error),
the input arrays, and the comparison of a computed array with a reference value.

See the package docstring for the error model these bounds follow.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .jaxtypes import kind, name_of, np_dtype, real_of

UNKNOWN = np.inf   # an element's error bound when the computation leaves its value open
ZERO_SIGN_FREE = 5e-324   # bound of an exact zero whose sign the computation leaves open


@dataclass
class Val:
    """`ref` holds the reference result in `dtype` (a numpy dtype name); `err` (float64, ref's shape)
    bounds |computed - ref| per element: 0 exact (bits and sign of zero compared), UNKNOWN not
    compared. Complex errors bound the modulus of the difference."""
    ref: np.ndarray
    dtype: str
    err: np.ndarray
    weak: bool = False   # weakly typed, as a Python scalar's results are (JAX's weak types)

    @property
    def type_name(self):
        """The dtype name for promotion: "i*", "f*" or "c*" when weak."""
        return {"i": "i*", "u": "i*", "f": "f*", "c": "c*"}.get(self.kind, self.dtype) if self.weak else self.dtype

    @property
    def shape(self):
        return self.ref.shape

    @property
    def kind(self):
        return kind(self.dtype)

    def wide(self) -> np.ndarray:
        """ref in the wide type the oracle computes in: float64, complex128, int64/uint64 or bool."""
        return self.ref.astype({"f": np.float64, "c": np.complex128}.get(self.kind, self.ref.dtype))


def exact(ref, dtype) -> Val:
    ref = np.asarray(ref).astype(np_dtype(dtype))
    return Val(ref, dtype, np.zeros(ref.shape))


def finfo(dtype: str):
    return ml_dtypes.finfo(np_dtype(real_of(dtype)))


def ulp(magnitude, dtype: str) -> np.ndarray:
    """The spacing of `dtype`'s numbers at |magnitude| (subnormals included)."""
    info = finfo(dtype)
    with np.errstate(all="ignore"):
        _, exponent = np.frexp(np.abs(np.asarray(magnitude, np.float64)))
    return np.exp2(np.maximum(exponent - 1, info.minexp) - info.nmant).astype(np.float64)


def unit_roundoff(dtype: str) -> float:
    return 2.0 ** -(finfo(dtype).nmant + 1)


def rounded(wide, dtype: str, err=0.0, ulps=0.0) -> Val:
    """The Val of `dtype` whose exact value is `wide` (computed in float64 or wider from the operands'
    references), given the error `err` the operands' errors propagate to, and `ulps` units in the last
    place the op itself may add (0: correctly rounded, so exact when the operands are).

    A result whose operands carry error is rounded once more (1 ulp); one that may cross the largest
    finite number becomes UNKNOWN (it may overflow or not)."""
    wide = np.asarray(wide)
    k = kind(dtype)
    with np.errstate(all="ignore"):
        if k in "iub":
            ref = wide.astype(np_dtype(dtype))
            err = np.broadcast_to(np.where(np.asarray(err) > 0, UNKNOWN, 0.0), ref.shape).astype(np.float64)
            return Val(ref, dtype, err)
        ref = wide.astype(np_dtype(dtype))
        err = np.broadcast_to(np.asarray(err, np.float64), ref.shape)
        err = np.where(np.isnan(err), UNKNOWN, err)
        magnitude = np.abs(wide) + err
        inexact = (err > 0) | (ulps > 0)
        err = err + np.where(inexact, (ulps + (err > 0)) * ulp(magnitude, dtype), 0.0)
        finite = np.isfinite(np.abs(wide))
        err = np.where(inexact & finite & ~(magnitude + err <= finfo(dtype).max), UNKNOWN, err)
    return Val(ref, dtype, np.array(err, np.float64))


def compare(actual, expected: Val, what: str, check_dtype=True) -> str | None:
    """None when `actual` matches `expected` (dtype, shape, and each element with a finite bound),
    else a one-line description of the first difference. With `check_dtype` False, an actual of
    another dtype is converted to the expected one first (so that values are checked past a dtype
    defect)."""
    actual = np.asarray(actual)
    want = np_dtype(expected.dtype)
    if actual.dtype != want:
        if check_dtype:
            return f"{what}: dtype {name_of(actual.dtype)}, JAX gives {expected.dtype}"
        with np.errstate(all="ignore"):
            actual = actual.real.astype(want) if actual.dtype.kind == "c" and kind(expected.dtype) != "c" \
                else actual.astype(want)
    if actual.shape != expected.shape:
        return f"{what}: shape {actual.shape}, expected {expected.shape}"
    known = np.isfinite(expected.err)
    if expected.kind in "iub":
        bad = known & (actual != expected.ref)
        return _report(what, bad, actual, expected) if bad.any() else None
    if expected.kind == "c":
        parts = [(actual.real, expected.ref.real), (actual.imag, expected.ref.imag)]
    else:
        parts = [(actual, expected.ref)]
    bad = np.zeros(actual.shape, bool)
    for got, ref in parts:
        got, ref = got.astype(np.float64), ref.astype(np.float64)
        nan = np.isnan(ref)
        with np.errstate(invalid="ignore"):
            off = np.where(np.isinf(ref), got != ref, np.abs(got - ref) > expected.err)
        off = np.where(nan, ~np.isnan(got), off | np.isnan(got))
        zero_sign = (expected.err == 0) & (ref == 0) & (np.signbit(got) != np.signbit(ref))
        bad |= known & (off | zero_sign)
    return _report(what, bad, actual, expected) if bad.any() else None


def _report(what, bad, actual, expected):
    where = tuple(int(i[0]) for i in np.nonzero(bad)) if bad.ndim else ()
    return (f"{what}: {int(bad.sum())} of {bad.size} elements differ, first at {where}: got {actual[where]!r}, "
            f"expected {expected.ref[where]!r} (bound {expected.err[where]:.3g})")


# ---- inputs -------------------------------------------------------------------------------------

def make_input(shape, dtype: str, seed: int, specials: bool = True) -> np.ndarray:
    """A reproducible input array: mostly small numbers (floats on a grid of 1/4, so sums are exact),
    some random normals, and with `specials` the edge values of the dtype (NaN, infinities, -0.0,
    subnormals, the largest finite numbers; for integers their extremes)."""
    rng = np.random.default_rng(seed)
    k = kind(dtype)
    shape = tuple(shape)
    if k == "b":
        return np.array(rng.random(shape) < 0.5)
    if k in "iu":
        info = np.iinfo(np_dtype(dtype))
        values = np.array(rng.integers(max(info.min, -8), 9, shape)).astype(np_dtype(dtype))
        if specials:
            pick = rng.random(shape) < 0.1
            edges = np.array([info.min, info.max, info.max // 2, 0, 1], np_dtype(dtype))
            values[pick] = rng.choice(edges, int(pick.sum()))
        return values
    part = real_of(dtype)

    def floats():
        values = np.array(rng.integers(-16, 17, shape) / 4.0)
        normal = rng.random(shape) < 0.3
        values[normal] = rng.standard_normal(int(normal.sum())) * 3
        if specials and k == "f":
            info = finfo(part)
            pick = rng.random(shape) < 0.08
            values[pick] = rng.choice([np.nan, np.inf, -np.inf, -0.0, float(info.smallest_subnormal),
                                       -float(info.smallest_subnormal) * 3, float(info.max), -float(info.max),
                                       float(info.tiny)], int(pick.sum()))
        return values

    if k == "c":
        return (floats() + 1j * floats()).astype(np_dtype(dtype))
    return floats().astype(np_dtype(dtype))


def literal(array: np.ndarray) -> str:
    """Python source that makes `array` (for small arrays in repros)."""
    name = "bfloat16" if array.dtype == np_dtype("bfloat16") else array.dtype.name
    dtype = "ml_dtypes.bfloat16" if name == "bfloat16" else f"np.{name}"
    if array.dtype.kind == "f" or name == "bfloat16":
        items = [float(v) for v in array.astype(np.float64).ravel()]
        text = "[" + ", ".join(repr(v) if np.isfinite(v) else f"{'-' * bool(np.signbit(v))}float('{abs(v)}')"
                               for v in items) + "]"
    elif array.dtype.kind == "c":
        text = "[" + ", ".join(f"complex({v.real!r}, {v.imag!r})" for v in array.ravel()) + "]"
    else:
        text = repr(array.ravel().tolist())
    return f"np.array({text}, {dtype}).reshape({array.shape})"
