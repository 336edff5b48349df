"""Every graph op, compiled, against the interpreter (the oracle) and numpy.

One record per op of the op table (`cdnajit.ir.opdef.OPS`); a test checks the table covers every op,
so a new op fails until it has a record. A record builds, for one dtype, a small program around its
op on random shapes drawn per case (sizes that are not multiples of 64, 0- and 1-sized dimensions,
0-d), with the op both alone and fed by another op (so it runs inside a fused kernel too). Operands
of elementwise ops are broadcast by `broadcast_in_dim`, and 131-element vectors hold the special
values (NaN, infinities, signed zeros, subnormals, extreme integers) and their pairs. Every float
dtype is run; integer dtypes rotate over the records (each op gets two of them).

The program is compiled by `Executable.compile` (the pass pipeline, the kernels and the runtime
that `cj.jit` runs) and its results compared with `cj.ir.interpret`'s and, where a record names
one, with numpy's own function (computed in f32 for f16/bf16 and rounded once, as XLA on the CPU).

Tolerances (the `assert_close` fixture, tests/conftest.py):
- exact, bits and signs of zeros: integers, bools, data movement, and float ops whose kernels
  compute what the reference computes in the same order (elementwise arithmetic, comparisons,
  max/min reductions, scans and scatter, which loop in the reference's order, sorts);
- TRANSCENDENTAL ops: 4 ulp in f32/f64, the math library's bound (codegen/mathlib.py measures at
  most 3.1 ulp against the true value; numpy's own f32 functions add up to ~1 ulp), and 1 ulp in
  f16/bf16, where both sides compute in f32 and round once: f32 results a few f32 ulp apart round
  to the same half float or to neighbours;
- SPECIAL ops (lgamma, digamma, erfc, erf_inv, zeta, bessel_i0e, bessel_i1e), compared with the
  interpreter's reference: both compute in f64 and round once, so 1 ulp below f64; in f64 the bound
  measured by tests/lowering/test_elemental_special.py plus 1 (the SPECIAL table);
- sums, products and contractions accumulate in another order than numpy's pairwise sums: each
  of the n terms is rounded at most once per addition, so the error is at most n eps S, with S
  the same sum over magnitudes (computed in f64 by the op's reference) and eps the accumulator's
  (f32 for f16/bf16, which then round once more: +1 ulp).
Ops the compiled backend cannot run yet are listed in UNSUPPORTED (complex cases in COMPLEX_PENDING),
with the reason; they must raise NotImplementedError naming the op, and fail this test when they
start to compile, so that they move out of those tables.
"""
import functools
import math
import zlib
from dataclasses import dataclass, field
from typing import Callable

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
from cdnajit import lax
from cdnajit.ir.core import Module, Region, Value, make_op
from cdnajit.ir.opdef import OPS, compute_dtype
from cdnajit.ir.ops.shape import clamped_starts
from cdnajit.ir.ops.elementwise import maximum, minimum  # numpy's, with JAX's order of signed zeros
from cdnajit.ir.types import COMPLEX_PART, COMPLEXES, FLOATS, INTS, NUMPY_DTYPES, SIGNED_INTS, type_of_array
from cdnajit.passes.manager import run_pipeline
from cdnajit.runtime.executable import Executable

HALVES = ("f16", "bf16")
REALS = ("bool",) + INTS + FLOATS
TRANSCENDENTAL = {"exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "cbrt", "tanh", "sinh", "cosh", "sin",
                  "cos", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh", "logistic", "erf", "pow", "atan2"}
# The special functions (lowering/elemental_special.py) against the interpreter's reference: the
# f64 bound in ulp is the README's measured one plus 1 for the reference's own rounding; for lgamma
# and digamma it is in ulp of max(|result|, 1), as measured (near their roots nothing keeps
# relative accuracy).
SPECIAL = {"lgamma": (6, True), "digamma": (9, True), "erfc": (4, False), "erf_inv": (4, False),
           "bessel_i0e": (13, False), "bessel_i1e": (12, False), "zeta": (6, False)}
UNSUPPORTED: dict[str, str] = {
    "shard_map": "jit partitions a program holding one (passes/partition.py inlines it): never compiled alone",
}
# (op, complex dtype) cases that do not compile yet: passes/expand_complex.py leaves these ops
# complex, and no kernel takes complex operands for them.
COMPLEX_PENDING = {
    **{(name, "c64"): "no complex expansion (passes/expand_complex.py) and no complex kernel yet"
       for name in ("asin", "acos", "atan", "asinh", "acosh", "atanh")},
    ("scatter", "c128"): "scatter `mul` of complex values has no expansion and no kernel yet",
}
# Complex ops that expand_complex computes as numpy does, step by step; the others use textbook
# formulas whose parts are within a few ulp of the result's magnitude (products of two real
# functions each within 4 ulp, or products rounded separately where numpy fuses them): 8 eps |result|.
COMPLEX_EXACT = {"neg", "add", "sub", "div", "real", "imag", "conj", "complex", "eq", "ne", "select", "convert"}
COMPLEX_ROUNDING = 8


# ---- programs ---------------------------------------------------------------------------------

class Program:
    """A graph module under construction: parameters bound to their argument arrays, then ops."""

    def __init__(self):
        self.params, self.args, self.ops = [], [], []

    def arg(self, array) -> Value:
        array = np.asarray(array)
        self.params.append(Value(type_of_array(array)))
        self.args.append(array)
        return self.params[-1]

    def op(self, name, operands, regions=(), **attrs):
        types = cj.ir.infer_types(name, [v.type for v in operands], attrs, regions)
        op = make_op(name, operands, attrs, types, regions)
        self.ops.append(op)
        return op.results[0] if len(op.results) == 1 else op.results

    def module(self, outputs) -> Module:
        return Module("case", Region(list(self.params), list(self.ops), list(outputs)))


@dataclass
class Case:
    """A program, its outputs, numpy's results (None where numpy has no such function) and the
    tolerance of each output (keyword arguments of check_close)."""
    program: Program
    outputs: list
    numpy: list
    tolerances: list = field(default_factory=list)


@dataclass(frozen=True)
class Record:
    build: Callable          # (rng, dtype name) -> Case
    dtypes: tuple


# ---- values and shapes --------------------------------------------------------------------------

SIZES = (0, 1, 1, 2, 3, 5, 7, 13, 64, 65, 130)


def random_shape(rng, max_rank=3, max_size=2000) -> tuple:
    """A shape of rank 0 to max_rank, its sizes biased to 0, 1 and sizes around multiples of 64."""
    while True:
        shape = tuple(int(rng.choice(SIZES)) for _ in range(rng.integers(0, max_rank + 1)))
        if math.prod(shape) <= max_size:
            return shape


def nonempty_shape(rng, min_rank=1, max_rank=3) -> tuple:
    while True:
        shape = random_shape(rng, max_rank)
        if len(shape) >= min_rank and 0 not in shape:
            return shape


def broadcast_source(rng, shape) -> tuple:
    """A shape that numpy broadcasts to `shape`: some leading dimensions dropped, some sizes 1."""
    kept = shape[rng.integers(0, len(shape) + 1):]
    return tuple(1 if rng.random() < 0.4 else d for d in kept)


def specials(dtype: str, domain="normal") -> np.ndarray:
    """The special values of a dtype: extreme integers; NaN, infinities, signed zeros, the smallest
    subnormal and the largest finite floats (but for sin, cos and tan: codegen/mathlib.py reduces
    their arguments accurately up to |x| ~ 1e5 only, it has no Payne-Hanek reduction)."""
    np_dtype = NUMPY_DTYPES[dtype]
    if dtype == "bool":
        return np.array([False, True])
    if dtype in INTS:
        info = np.iinfo(np_dtype)
        values = [info.min, info.min + 1, -7, -2, -1, 0, 1, 2, 3, 8, info.max - 1, info.max]
        return np.unique(np.array([v for v in values if info.min <= v <= info.max], np_dtype))
    info = ml_dtypes.finfo(np_dtype)
    values = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, float(info.smallest_subnormal)]
    values += [1e4, -1e4] if domain == "trig" else [float(info.max), -float(info.max)]
    return np.array(values, np.float64).astype(compute_dtype(np_dtype)).astype(np_dtype)


DOMAINS = {  # float inputs per op: where the function is interesting, with out-of-domain values too
    "normal": lambda rng, n: rng.normal(size=n) * 3,
    "wide": lambda rng, n: 10.0 ** rng.uniform(-20, 20, n) * rng.choice([-1, 1], n),
    "unit": lambda rng, n: rng.uniform(-1.2, 1.2, n),
    "positive": lambda rng, n: np.where(rng.random(n) < 0.5, rng.uniform(0, 3, n), 10.0 ** rng.uniform(-20, 20, n)),
    "trig": lambda rng, n: rng.uniform(-50, 50, n),   # |x| >= 1e6 is outside the math library's range
    "near_one": lambda rng, n: rng.uniform(0.5, 2, n) * rng.choice([-1, 1], n),
}


def random_values(rng, dtype: str, shape, domain="normal") -> np.ndarray:
    """Random values of a dtype; about one integer in five and one float in eight is a special value."""
    np_dtype, n = NUMPY_DTYPES[dtype], math.prod(shape)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in INTS:
        values = rng.integers(-20 if dtype in SIGNED_INTS else 0, 21, n).astype(np_dtype)
        chosen = rng.random(n) < 0.2
        values[chosen] = rng.choice(specials(dtype), int(chosen.sum()))
        return values.reshape(shape)
    if dtype in COMPLEXES:
        return (DOMAINS[domain](rng, n) + 1j * DOMAINS[domain](rng, n)).astype(np_dtype).reshape(shape)
    values = DOMAINS[domain](rng, n)
    values = np.where(rng.random(n) < 0.125, rng.choice(specials(dtype, domain).astype(np.float64), n), values)
    with np.errstate(over="ignore"):
        return values.astype(np_dtype).reshape(shape)


def special_vector(rng, dtype: str, domain="normal", length=131) -> np.ndarray:
    """Every special value of the dtype, then random values: 131 elements, not a multiple of 64."""
    if dtype in COMPLEXES:
        return random_values(rng, dtype, (length,), domain)
    first = specials(dtype, domain)
    rest = random_values(rng, dtype, (length - first.size,), domain)
    return np.concatenate([first, rest])


def special_pairs(rng, dtype: str, domain="normal", length=131) -> tuple[np.ndarray, np.ndarray]:
    """Two vectors holding every pair of special values, then random pairs."""
    if dtype in COMPLEXES:
        return random_values(rng, dtype, (length,), domain), random_values(rng, dtype, (length,), domain)
    values = specials(dtype, domain)
    a, b = np.repeat(values, values.size), np.tile(values, values.size)
    extra = max(length - a.size, 37)
    return (np.concatenate([a, random_values(rng, dtype, (extra,), domain)]),
            np.concatenate([b, random_values(rng, dtype, (extra,), domain)]))


# ---- numpy and tolerances -----------------------------------------------------------------------

def with_numpy(fn, *arrays, result_dtype=None):
    """numpy's fn on the arrays, computed in f32 for f16/bf16 and rounded once (None if fn gives None)."""
    with np.errstate(all="ignore"):
        result = fn(*(a.astype(compute_dtype(a.dtype)) for a in arrays))
    if result is None:
        return None
    result = np.asarray(result)
    target = result_dtype or (arrays[0].dtype if result.dtype.kind == "f" else result.dtype)
    with np.errstate(over="ignore"):  # f32 results beyond a half float's range round to infinity
        return result.astype(target)


def eps_of(dtype: str) -> float:
    """The machine epsilon of the accumulator of `dtype` (f32 for f16/bf16, a part's for complex)."""
    return float(ml_dtypes.finfo(compute_dtype(NUMPY_DTYPES[COMPLEX_PART.get(dtype, dtype)])).eps)


def elementwise_tolerance(name: str, dtype: str, expected=None) -> dict:
    """The tolerance of an elementwise op's result (module docstring); complex ones need `expected`."""
    if dtype in COMPLEXES:
        if name in COMPLEX_EXACT:
            return {}
        magnitude = np.abs(expected.astype(np.complex128))
        if name == "log1p":  # log(1 + z), as numpy: 1 + z rounds by ~eps |1 + z|, an absolute ~eps in the log
            magnitude = magnitude + 1
        return {"bound": COMPLEX_ROUNDING * eps_of(dtype) * magnitude}
    if name in SPECIAL and dtype in FLOATS:
        return special_tolerance(name, dtype, expected)
    if name not in TRANSCENDENTAL or dtype not in FLOATS:
        return {}
    return {"ulps": 1 if dtype in HALVES else 4}


def special_tolerance(name: str, dtype: str, expected) -> dict:
    """SPECIAL ops (module docstring): 1 ulp below f64, SPECIAL's bound in f64."""
    if dtype != "f64":
        return {"ulps": 1}
    ulps, absolute_near_one = SPECIAL[name]
    if absolute_near_one:  # ulps of |result| above 1, an absolute ulps * eps below
        return {"ulps": ulps, "bound": ulps * eps_of(dtype)}
    return {"ulps": ulps}


def overflow_defined(unfused, extended) -> np.ndarray:
    """The elements of a product whose class (NaN, infinity or finite) evaluation in the dtype's
    range (`unfused`: each product and sum rounded) and in an extended range (`extended`:
    np.longdouble, where no f64 product overflows) agree on. Elsewhere a product or partial sum
    overflows, and kernels legitimately differ, as BLAS libraries do: a fused multiply-add (the
    MFMA kernels) keeps the exact product where separate operations (VALU kernels, numpy) make it
    an infinity, and inf - inf = NaN follows or not."""
    return (np.isnan(unfused) == np.isnan(extended)) & (np.isinf(unfused) == np.isinf(extended))


def summation_tolerance(dtype: str, terms: int, magnitudes) -> dict:
    """n eps S for n terms of magnitude sum S (module docstring); exact for integers and bools."""
    if dtype not in FLOATS + COMPLEXES:
        return {}
    return {"bound": terms * eps_of(dtype) * np.asarray(magnitudes, np.float64), "ulps": 1 if dtype in HALVES else 0}


def reference(name, *arrays, **attrs):
    """The op's own numpy reference on f64 magnitudes: the S of a summation bound."""
    return np.asarray(OPS[name].reference(*(np.abs(a).astype(np.float64) for a in arrays), **attrs), np.float64)


# ---- elementwise families -------------------------------------------------------------------------

def fed(program, value):
    """`value` computed inside the kernel: negated (logical not for bool)."""
    return program.op("not" if value.type.dtype == "bool" else "neg", [value])


def fed_numpy(array):
    return np.asarray(np.logical_not(array) if array.dtype == bool else np.negative(array))


def unary(name, numpy_fn, dtypes, domain="normal"):
    def build(rng, dtype):
        p = Program()
        arrays = [special_vector(rng, dtype, domain), random_values(rng, dtype, random_shape(rng), domain)]
        outputs = [p.op(name, [p.arg(a)]) for a in arrays]
        numpy = [None if numpy_fn is None else with_numpy(numpy_fn, a, result_dtype=out.type.numpy_dtype)
                 for a, out in zip(arrays, outputs)]
        return Case(p, outputs, numpy, [elementwise_tolerance(name, dtype, e) for e in numpy])
    return Record(build, dtypes)


def binary(name, numpy_fn, dtypes, domain="normal", rhs=None):
    """The op on special pairs, and on a random shape with one operand broadcast by broadcast_in_dim.
    `rhs(rng, dtype, shape)` draws the right operand when the op needs a special range (shifts)."""
    def build(rng, dtype):
        p = Program()
        shape = random_shape(rng)
        small = broadcast_source(rng, shape)
        draw = lambda s, side: (rhs(rng, dtype, s) if rhs and side else random_values(rng, dtype, s, domain))
        va, vb = special_pairs(rng, dtype, domain)
        if rhs:
            vb = rhs(rng, dtype, va.shape)
        swap = rng.random() < 0.5
        a, b = (draw(small, 0), draw(shape, 1)) if swap else (draw(shape, 0), draw(small, 1))
        pa, pb = p.arg(a), p.arg(b)
        lead = len(shape) - len(small)
        widened = p.op("broadcast_in_dim", [pa if swap else pb], shape=shape,
                       broadcast_dimensions=tuple(range(lead, len(shape))))
        outputs = [p.op(name, [p.arg(va), p.arg(vb)]),
                   p.op(name, [widened, pb] if swap else [pa, widened])]
        numpy = [None if numpy_fn is None else with_numpy(numpy_fn, x, y, result_dtype=out.type.numpy_dtype)
                 for (x, y), out in zip([(va, vb), (a, b)], outputs)]
        return Case(p, outputs, numpy, [elementwise_tolerance(name, dtype, e) for e in numpy])
    return Record(build, dtypes)


def floats_only(fn):
    """numpy's function where its semantics are the op's on floats; integers keep XLA's values
    (x / 0, shifts by the bit width and more) which only the interpreter's reference holds."""
    return lambda *arrays: fn(*arrays) if arrays[0].dtype.kind in "fc" else None


def shift_amounts(rng, dtype, shape):
    bits = NUMPY_DTYPES[dtype].itemsize * 8
    low = -2 if dtype in SIGNED_INTS else 0
    return rng.integers(low, bits + 3, shape).astype(NUMPY_DTYPES[dtype])


def int_exponents(rng, dtype, shape):
    if dtype not in INTS:
        return random_values(rng, dtype, shape)
    return rng.integers(-2 if dtype in SIGNED_INTS else 0, 9, shape).astype(NUMPY_DTYPES[dtype])


def numpy_sign(x):
    return np.where(x == 0, x, np.sign(x))


def rotate(name: str, choices, count=2) -> tuple:
    """`count` of `choices`, different per op name: across the table every choice is tested."""
    start = zlib.crc32(name.encode())
    return tuple(choices[(start + i * 3) % len(choices)] for i in range(count))


def numeric(name):
    return rotate(name, INTS) + FLOATS + ("c64",)


def real_numeric(name):
    return rotate(name, INTS) + FLOATS


def logical(name):
    return ("bool",) + rotate(name, INTS, 3)


INEXACT_UNARY = {  # op -> (numpy function, input domain)
    "exp": (np.exp, "normal"), "log": (np.log, "positive"), "log1p": (np.log1p, "positive"),
    "expm1": (np.expm1, "normal"), "sqrt": (np.sqrt, "positive"), "rsqrt": (lambda x: 1 / np.sqrt(x), "positive"),
    "tanh": (np.tanh, "normal"), "sinh": (np.sinh, "normal"), "cosh": (np.cosh, "normal"),
    "sin": (np.sin, "trig"), "cos": (np.cos, "trig"), "tan": (np.tan, "trig"), "asin": (np.arcsin, "unit"),
    "acos": (np.arccos, "unit"), "atan": (np.arctan, "wide"), "asinh": (np.arcsinh, "wide"),
    "acosh": (np.arccosh, "positive"), "atanh": (np.arctanh, "unit"),
    "logistic": (lambda x: 1 / (1 + np.exp(-x)), "normal"),
}
FLOAT_UNARY = {
    "floor": (np.floor, "normal"), "ceil": (np.ceil, "normal"), "round": (np.round, "normal"),
    "trunc": (np.trunc, "normal"), "exp2": (np.exp2, "normal"), "log2": (np.log2, "positive"),
    "log10": (np.log10, "positive"), "cbrt": (np.cbrt, "wide"), "erf": (None, "normal"),
    "is_finite": (np.isfinite, "normal"),
}

RECORDS: dict[str, Record] = {}
for _name, (_fn, _domain) in INEXACT_UNARY.items():
    RECORDS[_name] = unary(_name, _fn, FLOATS + ("c64",), _domain)
for _name, (_fn, _domain) in FLOAT_UNARY.items():
    RECORDS[_name] = unary(_name, _fn, FLOATS, _domain)
for _name, _domain in [("lgamma", "positive"), ("digamma", "positive"), ("erfc", "normal"), ("erf_inv", "unit"),
                      ("bessel_i0e", "normal"), ("bessel_i1e", "normal")]:
    RECORDS[_name] = unary(_name, None, FLOATS, _domain)
RECORDS["zeta"] = binary("zeta", None, FLOATS, "positive")
RECORDS |= {
    "neg": unary("neg", np.negative, numeric("neg")),
    "abs": unary("abs", np.abs, numeric("abs")),
    "sign": unary("sign", numpy_sign, numeric("sign")),
    "not": unary("not", np.invert, logical("not")),
    "real": unary("real", np.real, COMPLEXES),
    "imag": unary("imag", np.imag, COMPLEXES),
    "conj": unary("conj", np.conj, COMPLEXES),
    "add": binary("add", np.add, numeric("add")),
    "sub": binary("sub", np.subtract, numeric("sub")),
    "mul": binary("mul", np.multiply, numeric("mul")),
    "div": binary("div", floats_only(np.true_divide), numeric("div")),
    "rem": binary("rem", floats_only(np.fmod), real_numeric("rem")),
    "pow": binary("pow", floats_only(np.power), real_numeric("pow"), rhs=int_exponents),
    "max": binary("max", maximum, ("bool",) + real_numeric("max")),
    "min": binary("min", minimum, ("bool",) + real_numeric("min")),
    "atan2": binary("atan2", np.arctan2, FLOATS),
    "and": binary("and", np.bitwise_and, logical("and")),
    "or": binary("or", np.bitwise_or, logical("or")),
    "xor": binary("xor", np.bitwise_xor, logical("xor")),
    "shift_left": binary("shift_left", None, rotate("shift_left", INTS, 4), rhs=shift_amounts),
    "shift_right_logical": binary("shift_right_logical", None, rotate("shift_right_logical", INTS, 4),
                                  rhs=shift_amounts),
    "shift_right_arithmetic": binary("shift_right_arithmetic", None, rotate("shift_right_arithmetic", INTS, 4),
                                     rhs=shift_amounts),
    "complex": binary("complex", lambda a, b: np.asarray(np.frompyfunc(complex, 2, 1)(a, b), complex), ("f32", "f64")),
}
for _name, _fn in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                   ("gt", np.greater), ("ge", np.greater_equal)]:
    RECORDS[_name] = binary(_name, _fn, ("bool",) + real_numeric(_name) + (("c64",) if _name in ("eq", "ne") else ()))


def record(name, dtypes):
    """Register the decorated `build(rng, dtype) -> Case` as the record of op `name`."""
    def register(build):
        RECORDS[name] = Record(build, dtypes)
        return build
    return register


@record("select", ("bool",) + real_numeric("select") + ("c64",))
def build_select(rng, dtype):
    p = Program()
    shape = random_shape(rng)
    pred, a, b = random_values(rng, "bool", shape), random_values(rng, dtype, shape), random_values(rng, dtype, shape)
    pp, pa, pb = p.arg(pred), p.arg(a), p.arg(b)
    outputs = [p.op("select", [pp, pa, pb]), p.op("select", [p.op("not", [pp]), fed(p, pa), pb])]
    return Case(p, outputs, [np.where(pred, a, b), np.where(~pred, fed_numpy(a), b)])


@record("fma", ("f32", "f64"))
def build_fma(rng, dtype):
    """Special triples, and products that cancel c: the kernel's fma against the reference, exactly."""
    p = Program()
    shape = random_shape(rng)
    a, b = special_pairs(rng, dtype)
    c = np.roll(special_vector(rng, dtype, length=a.size), 1)
    x, y, z = (random_values(rng, dtype, shape) for _ in range(3))
    with np.errstate(all="ignore"):
        z = np.where(rng.random(shape) < 0.5, z, -(x * y)).astype(x.dtype)
    px = p.arg(x)
    outputs = [p.op("fma", [p.arg(a), p.arg(b), p.arg(c)]), p.op("fma", [fed(p, px), p.arg(y), p.arg(z)])]
    return Case(p, outputs, [None, None])


@record("clamp", ("bool",) + real_numeric("clamp"))
def build_clamp(rng, dtype):
    """Scalar bounds and bounds of the operand's shape; low > high at some elements."""
    p = Program()
    shape = random_shape(rng)
    x, low, high = (random_values(rng, dtype, shape) for _ in range(3))
    scalar_low, scalar_high = (random_values(rng, dtype, ()) for _ in range(2))
    px = p.arg(x)
    outputs = [p.op("clamp", [p.arg(scalar_low), px, p.arg(scalar_high)]),
               p.op("clamp", [p.arg(low), fed(p, px), p.arg(high)])]
    clamp = lambda lo, v, hi: minimum(maximum(v, lo), hi)
    return Case(p, outputs, [with_numpy(clamp, scalar_low, x, scalar_high), with_numpy(clamp, low, fed_numpy(x), high)])


@record("convert", REALS + ("c64",))
def build_convert(rng, dtype):
    """From `dtype` to every dtype, on special values (saturation, NaN -> 0, rounding) and a random shape."""
    p = Program()
    arrays = [special_vector(rng, dtype, "wide"), random_values(rng, dtype, random_shape(rng), "wide")]
    params = [p.arg(a) for a in arrays]
    outputs = [p.op("convert", [v], dtype=target) for v in params for target in REALS + COMPLEXES]
    return Case(p, outputs, [None] * len(outputs))


BITCAST_DTYPES = tuple(d for d in REALS if d != "bool")


@record("bitcast_convert", BITCAST_DTYPES)
def build_bitcast_convert(rng, dtype):
    """From `dtype` to every dtype of its width and of the others (a trailing dimension of the width
    ratio gained or lost), on special values and a random shape; numpy's .view is the oracle."""
    p = Program()
    width = NUMPY_DTYPES[dtype].itemsize
    arrays = [special_vector(rng, dtype, "wide"), random_values(rng, dtype, random_shape(rng) + (8,), "wide")]
    outputs, numpy = [], []
    for a in arrays:
        v = p.arg(a)
        for target in BITCAST_DTYPES:
            ratio = NUMPY_DTYPES[target].itemsize / width
            if ratio > 1 and a.shape[-1] % ratio:
                continue
            source, operand = a, v
            if ratio > 1:   # the operand's last dimension must be the ratio: split it first
                shape = a.shape[:-1] + (a.shape[-1] // int(ratio), int(ratio))
                source, operand = a.reshape(shape), p.op("reshape", [v], new_sizes=shape)
            outputs.append(p.op("bitcast_convert", [operand], dtype=target))
            expected = np.ascontiguousarray(source).view(NUMPY_DTYPES[target])
            numpy.append(expected.reshape(source.shape[:-1]) if ratio > 1 else
                         expected.reshape(source.shape + ((int(1 / ratio),) if ratio < 1 else ())))
    return Case(p, outputs, numpy)


@record("constant", real_numeric("constant") + ("bool", "c64"))
def build_constant(rng, dtype):
    """Constants of one value, of up to 16 values (a select tree) and of more (an LDS table), added in kernels."""
    p = Program()
    shape = random_shape(rng)
    arrays = [np.full(shape, random_values(rng, dtype, ())), random_values(rng, dtype, shape)]
    small = random_values(rng, dtype, (min(3, shape[-1]) if shape else 1,))
    outputs = [p.op("constant", [], value=a) for a in arrays]
    x = p.arg(random_values(rng, dtype, shape))
    combine = "or" if dtype == "bool" else "add"
    for constant in arrays:
        outputs.append(p.op(combine, [x, p.op("constant", [], value=constant)]))
    outputs.append(p.op("constant", [], value=small))
    return Case(p, outputs, [arrays[0], arrays[1]] + [None] * 3)


@record("iota", real_numeric("iota"))
def build_iota(rng, dtype):
    p = Program()
    shape = random_shape(rng)
    if not shape:
        shape = (int(rng.choice(SIZES)),)
    dimension = int(rng.integers(0, len(shape)))
    iota = p.op("iota", [], dtype=dtype, shape=shape, dimension=dimension)
    expected = np.broadcast_to(np.arange(shape[dimension]).reshape(
        [-1 if i == dimension else 1 for i in range(len(shape))]), shape).astype(NUMPY_DTYPES[dtype])
    return Case(p, [iota, p.op("neg", [iota])], [expected, with_numpy(np.negative, expected)])


# ---- data movement: the op alone, and on values computed in the same kernel ------------------------

MOVEMENT_DTYPES = ("bool", "i8", "u16", "i32", "u64") + FLOATS + ("c64",)


def movement(name, dtypes=MOVEMENT_DTYPES):
    """A record of a data-movement op: `draw(rng, shape) -> (attrs, numpy function or None)` picks
    its attributes for an operand shape; the op runs on a parameter and on a fed value."""
    def register(draw):
        def build(rng, dtype):
            p = Program()
            x = random_values(rng, dtype, random_shape(rng))
            attrs, numpy_fn = draw(rng, x.shape)
            px = p.arg(x)
            outputs = [p.op(name, [px], **attrs), p.op(name, [fed(p, px)], **attrs)]
            numpy = [None, None] if numpy_fn is None else [numpy_fn(x), numpy_fn(fed_numpy(x))]
            return Case(p, outputs, numpy)
        RECORDS[name] = Record(build, dtypes)
        return draw
    return register


@movement("broadcast_in_dim")
def draw_broadcast(rng, shape):
    """New dimensions inserted anywhere; size-1 dimensions stretched."""
    result, dims = [], []
    for d in shape:
        while rng.random() < 0.3:
            result.append(int(rng.choice(SIZES[:8])))
        dims.append(len(result))
        result.append(int(rng.choice((1, 2, 5))) if d == 1 else d)
    result += [int(rng.choice(SIZES[:8])) for _ in range(rng.integers(0, 2))]
    expanded = [1] * len(result)
    for i, d in zip(dims, shape):
        expanded[i] = d
    attrs = {"shape": tuple(result), "broadcast_dimensions": tuple(dims)}
    return attrs, lambda x: np.broadcast_to(x.reshape(expanded), result)


@movement("reshape")
def draw_reshape(rng, shape):
    size = math.prod(shape)
    divisors = [d for d in range(1, size + 1) if size % d == 0] or [0]
    first = int(rng.choice(divisors))
    new = (first, size // first if first else int(rng.choice((0, 3)))) if rng.random() < 0.7 else (size,)
    return {"new_sizes": new}, lambda x: x.reshape(new)


@movement("transpose")
def draw_transpose(rng, shape):
    permutation = tuple(int(i) for i in rng.permutation(len(shape)))
    return {"permutation": permutation}, lambda x: np.transpose(x, permutation)


@movement("slice")
def draw_slice(rng, shape):
    starts, limits, strides = [], [], []
    for d in shape:
        start = int(rng.integers(0, d + 1))
        starts.append(start)
        limits.append(int(rng.integers(start, d + 1)))
        strides.append(int(rng.choice((1, 1, 2, 3))))
    attrs = {"start_indices": tuple(starts), "limit_indices": tuple(limits), "strides": tuple(strides)}
    return attrs, lambda x: x[tuple(slice(*s) for s in zip(starts, limits, strides))]


@movement("rev")
def draw_rev(rng, shape):
    dimensions = tuple(i for i in range(len(shape)) if rng.random() < 0.6)
    return {"dimensions": dimensions}, lambda x: np.flip(x, dimensions)


@record("pad", MOVEMENT_DTYPES)
def build_pad(rng, dtype):
    """Edges of -2..3 elements (negative ones crop) and interior padding of 0..2."""
    p = Program()
    x = random_values(rng, dtype, random_shape(rng))
    low, high, interior = [], [], []
    for d in x.shape:
        interior.append(int(rng.integers(0, 3)))
        dilated = d + max(d - 1, 0) * interior[-1]
        low.append(int(rng.integers(-min(2, dilated), 4)))
        high.append(int(rng.integers(-min(2, dilated + low[-1]), 4)))
    fill = random_values(rng, dtype, ())
    px, pf = p.arg(x), p.arg(fill)
    attrs = {"low": tuple(low), "high": tuple(high), "interior": tuple(interior)}
    outputs = [p.op("pad", [px, pf], **attrs), p.op("pad", [fed(p, px), pf], **attrs)]
    simple = x.ndim and all(v >= 0 for v in low + high) and not any(interior)
    numpy_pad = lambda a: np.pad(a, list(zip(low, high)), constant_values=fill) if simple else None
    return Case(p, outputs, [numpy_pad(x), numpy_pad(fed_numpy(x))])


@record("concatenate", MOVEMENT_DTYPES)
def build_concatenate(rng, dtype):
    p = Program()
    shape = nonempty_shape(rng) if rng.random() < 0.8 else random_shape(rng, max_rank=3) or (0,)
    dimension = int(rng.integers(0, len(shape)))
    arrays = []
    for _ in range(rng.integers(1, 4)):
        piece = list(shape)
        piece[dimension] = int(rng.choice((0, 1, 2, 7, 65)))
        arrays.append(random_values(rng, dtype, tuple(piece)))
    params = [p.arg(a) for a in arrays]
    outputs = [p.op("concatenate", params, dimension=dimension),
               p.op("concatenate", [fed(p, v) for v in params], dimension=dimension)]
    return Case(p, outputs, [np.concatenate(arrays, dimension),
                             np.concatenate([fed_numpy(a) for a in arrays], dimension)])


def start_scalars(rng, shape, sizes):
    """One start per dimension, signed or unsigned, sometimes negative or past the end (clamped)."""
    dtype = NUMPY_DTYPES[str(rng.choice(["i32", "i64", "u32", "u8"]))]
    starts = [int(rng.integers(-3, d + 4)) for d in shape]
    if dtype.kind == "u":
        starts = [abs(s) for s in starts]
    clamped = [min(max(s, 0), d - n) for s, d, n in zip(starts, shape, sizes)]
    return [np.array(s, dtype) for s in starts], clamped


@record("dynamic_slice", MOVEMENT_DTYPES)
def build_dynamic_slice(rng, dtype):
    p = Program()
    x = random_values(rng, dtype, random_shape(rng))
    sizes = tuple(int(rng.integers(0, d + 1)) for d in x.shape)
    starts, clamped = start_scalars(rng, x.shape, sizes)
    px, ps = p.arg(x), [p.arg(s) for s in starts]
    # Alone, fed, and read by a fused consumer whose kernel computes the starts (s + 1, wrapping).
    ones = [p.op("constant", [], value=np.ones((), s.dtype)) for s in starts]
    shifted = [p.op("add", [s, one]) for s, one in zip(ps, ones)]
    outputs = [p.op("dynamic_slice", [px] + ps, slice_sizes=sizes),
               p.op("dynamic_slice", [fed(p, px)] + ps, slice_sizes=sizes),
               fed(p, p.op("dynamic_slice", [px] + shifted, slice_sizes=sizes))]
    window = tuple(slice(s, s + n) for s, n in zip(clamped, sizes))
    shifted_starts = [(np.atleast_1d(s) + s.dtype.type(1))[0] for s in starts]
    shifted_window = tuple(slice(s, s + n) for s, n in zip(clamped_starts(shifted_starts, sizes, x.shape), sizes))
    return Case(p, outputs, [x[window], fed_numpy(x)[window], fed_numpy(x[shifted_window])])


@record("dynamic_update_slice", MOVEMENT_DTYPES)
def build_dynamic_update_slice(rng, dtype, name="dynamic_update_slice"):
    """The update of an argument, which stays a copy, and of a computed value, which the compiled
    program updates in place (passes/in_place.py)."""
    p = Program()
    x = random_values(rng, dtype, random_shape(rng))
    update = random_values(rng, dtype, tuple(int(rng.integers(0, d + 1)) for d in x.shape))
    starts, clamped = start_scalars(rng, x.shape, update.shape)
    px, pu, ps = p.arg(x), p.arg(update), [p.arg(s) for s in starts]
    outputs = [p.op(name, [px, pu] + ps),
               p.op(name, [fed(p, px), fed(p, pu)] + ps)]
    window = tuple(slice(s, s + n) for s, n in zip(clamped, update.shape))
    expected = []
    for base, piece in [(x, update), (fed_numpy(x), fed_numpy(update))]:
        base = base.copy()
        base[window] = piece
        expected.append(base)
    return Case(p, outputs, expected)


# The in-place forms, written by hand: an argument's update goes back to the plain form (the
# caller's array is never written; the test checks the arguments), a computed value's stays.
record("dynamic_update_slice_in_place", MOVEMENT_DTYPES)(
    functools.partial(build_dynamic_update_slice, name="dynamic_update_slice_in_place"))


@record("copy", MOVEMENT_DTYPES)
def build_copy(rng, dtype):
    p = Program()
    x = random_values(rng, dtype, random_shape(rng))
    px = p.arg(x)
    return Case(p, [p.op("copy", [px]), p.op("copy", [fed(p, px)])], [x, fed_numpy(x)])


@record("optimization_barrier", MOVEMENT_DTYPES)
def build_optimization_barrier(rng, dtype):
    """Removed after fusion: its results are its operands, a parameter and a kernel's result."""
    p = Program()
    x = random_values(rng, dtype, random_shape(rng))
    px = p.arg(x)
    return Case(p, list(p.op("optimization_barrier", [px, fed(p, px)])), [x, fed_numpy(x)])


@record("host_callback", MOVEMENT_DTYPES)
def build_host_callback(rng, dtype):
    """A callback on a parameter and a kernel's result: it checks the values it is given (what it
    raises fails the run); its token is false."""
    from cdnajit.ir.ops.callback import register_callback
    p = Program()
    x = random_values(rng, dtype, random_shape(rng))
    px = p.arg(x)

    def check(given, fed_given):
        np.testing.assert_array_equal(given, x)
        np.testing.assert_array_equal(fed_given, fed_numpy(x))
    token = p.op("host_callback", [px, fed(p, px)], callback=register_callback(check))
    return Case(p, [token, fed(p, px)], [np.zeros((), bool), fed_numpy(x)])


@record("pure_callback", MOVEMENT_DTYPES)
def build_pure_callback(rng, dtype):
    """A callback on a parameter and a kernel's result giving them back swapped: its results are
    written where the schedule keeps them, and a kernel reads one of them."""
    from cdnajit.ir.ops.callback import register_callback
    p = Program()
    x = random_values(rng, dtype, random_shape(rng))
    px = p.arg(x)
    shape = tuple(x.shape)
    swapped = p.op("pure_callback", [px, fed(p, px)], callback=register_callback(lambda a, b: [b, a]),
                   vmap_method=None, num_results=2, result0_dtype=dtype, result0_shape=shape,
                   result1_dtype=dtype, result1_shape=shape)
    return Case(p, [swapped[0], fed(p, swapped[1])], [fed_numpy(x), fed_numpy(x)])


@record("io_callback", MOVEMENT_DTYPES)
def build_io_callback(rng, dtype):
    """A callback on a kernel's result giving it back: written where the schedule keeps it, read by
    a kernel (tests/transforms/test_pure_callback.py checks its effects: once each, in order)."""
    from cdnajit.ir.ops.callback import register_callback
    p = Program()
    x = random_values(rng, dtype, random_shape(rng))
    px = p.arg(x)
    echoed = p.op("io_callback", [fed(p, px)], callback=register_callback(lambda a: [a]), num_results=1,
                  result0_dtype=dtype, result0_shape=tuple(x.shape))
    return Case(p, [fed(p, echoed)], [fed_numpy(fed_numpy(x))])


def random_indices(rng, shape, count_shape, k, out_of_bounds=True):
    """Index rows (count_shape + (k,)) into the first k dimensions of `shape`, some out of bounds."""
    columns = [rng.integers(-2 if out_of_bounds else 0, d + (2 if out_of_bounds else 0), count_shape)
               if d else np.zeros(count_shape, int) for d in shape[:k]]
    dtype = NUMPY_DTYPES[str(rng.choice(["i32", "i64", "u8"]))]
    stacked = np.stack(columns, -1) if columns else np.zeros(count_shape + (0,), int)
    return (np.abs(stacked) if dtype.kind == "u" else stacked).astype(dtype)


@record("gather", MOVEMENT_DTYPES)
def build_gather(rng, dtype):
    p = Program()
    x = random_values(rng, dtype, nonempty_shape(rng))
    k = int(rng.integers(0, x.ndim + 1))
    indices = random_indices(rng, x.shape, random_shape(rng, max_rank=2, max_size=200), k)
    px, pi = p.arg(x), p.arg(indices)
    outputs = [p.op("gather", [px, pi]), p.op("gather", [fed(p, px), pi])]
    clamped = tuple(np.clip(indices[..., j].astype(np.int64), 0, x.shape[j] - 1) for j in range(k))
    shape = indices.shape[:-1] + x.shape[k:]
    return Case(p, outputs, [np.broadcast_to(a[clamped], shape) for a in (x, fed_numpy(x))])


SCATTER_REDUCTIONS = ("set", "add", "mul", "min", "max")


@record("scatter", MOVEMENT_DTYPES + ("c128",))
def build_scatter(rng, dtype, name="scatter"):
    """Every reduction the dtype has, with repeated and out-of-bounds indices: the kernel applies
    the updates in index order, as the reference, so even float add/mul are exact."""
    p = Program()
    x = random_values(rng, dtype, nonempty_shape(rng))
    k = int(rng.integers(0, x.ndim + 1))
    indices = random_indices(rng, x.shape, random_shape(rng, max_rank=2, max_size=40), k)
    updates = random_values(rng, dtype, indices.shape[:-1] + x.shape[k:], "near_one")
    px, pi, pu = p.arg(x), p.arg(indices), p.arg(updates)
    allowed = {"c64": ["set", "add"], "c128": ["mul"]}.get(dtype, SCATTER_REDUCTIONS)  # c128: COMPLEX_PENDING
    outputs = [p.op(name, [px, pi, pu], reduction=r) for r in allowed]
    outputs.append(p.op(name, [fed(p, px), pi, fed(p, pu)], reduction=str(rng.choice(allowed))))
    return Case(p, outputs, [None] * len(outputs))


record("scatter_in_place", MOVEMENT_DTYPES)(functools.partial(build_scatter, name="scatter_in_place"))


# ---- reductions, scans, sorts ------------------------------------------------------------------

REDUCERS = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "and": None, "or": None}


def reducers_of(dtype):
    if dtype == "bool":
        return ("and", "or", "max", "min")
    if dtype in INTS:
        return ("sum", "prod", "max", "min", "and", "or")
    if dtype in COMPLEXES:
        return ("sum", "prod")
    return ("sum", "prod", "max", "min")


@record("reduce", real_numeric("reduce") + ("bool", "c64"))
def build_reduce(rng, dtype):
    """Each reducer over random axes: rows of one kernel per row, or loops per output element."""
    p = Program()
    shape = random_shape(rng)
    axes = tuple(i for i in range(len(shape)) if rng.random() < 0.5)
    cases = []
    for reducer in reducers_of(dtype):
        x = random_values(rng, dtype, shape, "near_one" if reducer == "prod" else "normal")
        outputs = [p.op("reduce", [p.arg(x)], reducer=reducer, axes=axes)]
        terms = math.prod(shape[a] for a in axes)
        tolerance = summation_tolerance(dtype, terms, reference("reduce", x, reducer=reducer, axes=axes)) \
            if reducer in ("sum", "prod") else {}
        fn = REDUCERS[reducer]
        expected = None if fn is None or dtype == "bool" else with_numpy(lambda a: fn(a, axis=axes), x)
        cases.append((outputs[0], expected, tolerance))
    outputs, numpy, tolerances = map(list, zip(*cases))
    return Case(p, outputs, numpy, tolerances)


@record("argmax", ("bool",) + real_numeric("argmax"))
def build_argmax(rng, dtype):
    return arg_reduce("argmax", np.argmax, rng, dtype)


@record("argmin", ("bool",) + real_numeric("argmin"))
def build_argmin(rng, dtype):
    return arg_reduce("argmin", np.argmin, rng, dtype)


def arg_reduce(name, numpy_fn, rng, dtype):
    """Ties and NaNs: the first extreme element (the first NaN) wins, as numpy."""
    p = Program()
    x = random_values(rng, dtype, nonempty_shape(rng))
    if dtype in INTS or dtype == "bool":
        x = x % 3 if dtype != "bool" else x  # many ties
    axis, index_dtype = int(rng.integers(0, x.ndim)), str(rng.choice(["i32", "i64"]))
    px = p.arg(x)
    outputs = [p.op(name, [px], axis=axis, index_dtype=index_dtype),
               p.op(name, [fed(p, px)], axis=axis, index_dtype=index_dtype)]
    numpy = [numpy_fn(a.astype(compute_dtype(a.dtype)), axis=axis).astype(NUMPY_DTYPES[index_dtype])
             for a in (x, fed_numpy(x))]
    return Case(p, outputs, numpy)


@record("cumulative", real_numeric("cumulative") + ("c64",))
def build_cumulative(rng, dtype):
    """Each scan, forward and reversed: the kernel loops in the reference's order, so exact."""
    p = Program()
    shape = nonempty_shape(rng) if rng.random() < 0.8 else random_shape(rng) or (0,)
    axis = int(rng.integers(0, len(shape)))
    ufuncs = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
    reducers = ("sum", "prod") if dtype in COMPLEXES else tuple(ufuncs)
    outputs, numpy = [], []
    for reducer in reducers:
        reverse = bool(rng.random() < 0.5)
        x = random_values(rng, dtype, shape, "near_one")
        outputs.append(p.op("cumulative", [p.arg(x)], reducer=reducer, axis=axis, reverse=reverse))
        flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
        numpy.append(flip(with_numpy(lambda a: ufuncs[reducer].accumulate(flip(a), axis=axis), x)))
    # Complex products multiply as a tree of pairwise products (passes/expand_complex.py), numpy
    # in sequence: each of the n products is within a few eps of the result's magnitude.
    tolerances = [{"bound": COMPLEX_ROUNDING * shape[axis] * eps_of(dtype) * np.abs(e)}
                  if reducer == "prod" and dtype in COMPLEXES else {} for reducer, e in zip(reducers, numpy)]
    return Case(p, outputs, numpy, tolerances)


@record("reduce_window", real_numeric("reduce_window") + ("c64",))
def build_reduce_window(rng, dtype):
    p = Program()
    x = random_values(rng, dtype, nonempty_shape(rng, max_rank=3))
    attrs = {"window_dimensions": tuple(int(rng.integers(1, min(d, 3) + 1)) for d in x.shape),
             "window_strides": tuple(int(rng.integers(1, 3)) for _ in x.shape),
             "padding": tuple((int(rng.integers(0, 2)), int(rng.integers(0, 2))) for _ in x.shape),
             "base_dilation": tuple(int(rng.integers(1, 3)) for _ in x.shape),
             "window_dilation": tuple(int(rng.integers(1, 3)) for _ in x.shape)}
    outputs, tolerances = [], []
    for reducer in [r for r in reducers_of(dtype) if r in ("sum", "max", "min")]:  # no `prod` of complex windows yet
        outputs.append(p.op("reduce_window", [p.arg(x)], reducer=reducer, **attrs))
        # The kernel loops over each window in the reference's order of window offsets: exact.
        tolerances.append({})
    return Case(p, outputs, [None] * len(outputs), tolerances)


@record("sort", ("bool",) + real_numeric("sort") + ("c64",))
def build_sort(rng, dtype):
    """By one key (NaNs last, -0.0 equal to 0.0, stable), and by two keys carrying a third operand."""
    p = Program()
    shape = nonempty_shape(rng) if rng.random() < 0.8 else random_shape(rng) or (0,)
    dimension = int(rng.integers(0, len(shape)))
    keys = random_values(rng, dtype, shape)
    if dtype in INTS:
        keys = keys % 4  # ties, so stability shows
    second, payload = random_values(rng, "i32", shape) % 3, np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
    pk, p2, pp = p.arg(keys), p.arg(second), p.arg(payload)
    one = p.op("sort", [pk, pp], dimension=dimension, is_stable=True, num_keys=1)
    two = p.op("sort", [p2, pk, pp], dimension=dimension, is_stable=True, num_keys=2)
    alone = p.op("sort", [pk], dimension=dimension, is_stable=False, num_keys=1)
    numpy_order = np.argsort(keys.astype(compute_dtype(keys.dtype)), axis=dimension, kind="stable")
    numpy = [np.take_along_axis(keys, numpy_order, dimension), np.take_along_axis(payload, numpy_order, dimension)]
    return Case(p, list(one) + list(two) + [alone], numpy + [None, None, None, None])


# ---- contractions -------------------------------------------------------------------------------

@record("dot_general", real_numeric("dot_general") + ("c64",))
def build_dot_general(rng, dtype):
    """Batch, free and contracting dimensions in random positions; a wider preferred type sometimes."""
    p = Program()
    batch, m, k, n = (int(rng.choice(s)) for s in ((1, 2, 3), (1, 3, 65), (0, 1, 7, 33), (1, 5, 66)))
    lhs_dims = ["b", "m", "k"] if rng.random() < 0.5 else ["m", "k"]
    rhs_dims = [d for d in ("b",) if "b" in lhs_dims] + ["k", "n"]
    lhs_dims, rhs_dims = list(rng.permutation(lhs_dims)), list(rng.permutation(rhs_dims))
    size = {"b": batch, "m": m, "k": k, "n": n}
    a = random_values(rng, dtype, tuple(size[d] for d in lhs_dims))
    b = random_values(rng, dtype, tuple(size[d] for d in rhs_dims))
    wider = {"f16": "f32", "bf16": "f32", "f32": "f64", "i8": "i32", "u8": "u16", "i32": "i64"}
    preferred = wider.get(dtype) if rng.random() < 0.4 else None
    attrs = {"lhs_contracting": (lhs_dims.index("k"),), "rhs_contracting": (rhs_dims.index("k"),),
             "lhs_batch": tuple(lhs_dims.index(d) for d in "b" if d in lhs_dims),
             "rhs_batch": tuple(rhs_dims.index(d) for d in "b" if d in rhs_dims), "preferred_element_type": preferred}
    out = p.op("dot_general", [p.arg(a), p.arg(b)], **attrs)
    spec = f"{''.join(lhs_dims)},{''.join(rhs_dims)}->{''.join(d for d in 'bmn' if d in lhs_dims + rhs_dims)}"
    result_dtype = out.type.dtype
    # A complex product's part is a difference of two real sums of k terms: 2k terms.
    terms = 2 * k if dtype in COMPLEXES else k
    tolerance = summation_tolerance(result_dtype, terms, reference("dot_general", a, b, **attrs))
    expected = with_numpy(lambda x, y: np.einsum(spec, x, y), a.astype(NUMPY_DTYPES[result_dtype]),
                          b.astype(NUMPY_DTYPES[result_dtype]))
    if result_dtype == "f64":
        with np.errstate(all="ignore"):
            extended = np.einsum(spec, a.astype(np.longdouble), b.astype(np.longdouble)).astype(np.float64)
        tolerance["compared"] = overflow_defined(expected, extended)
    return Case(p, [out], [expected], [tolerance])


@record("conv_general_dilated", real_numeric("conv_general_dilated"))
def build_conv(rng, dtype):
    """1-D or 2-D windows, strides, padding, both dilations, feature groups."""
    p = Program()
    spatial = int(rng.integers(1, 3))
    groups = int(rng.choice((1, 2)))
    batch = int(rng.integers(1, 3))
    features, outputs = groups * int(rng.integers(1, 3)), groups * int(rng.integers(1, 3))
    window = tuple(int(rng.integers(1, 4)) for _ in range(spatial))
    lhs = random_values(rng, dtype, (batch, features) + tuple(int(rng.integers(w, w + 9)) for w in window), "near_one")
    rhs = random_values(rng, dtype, (outputs, features // groups) + window, "near_one")
    attrs = {"window_strides": tuple(int(rng.integers(1, 3)) for _ in window),
             "padding": tuple((int(rng.integers(0, 2)), int(rng.integers(0, 2))) for _ in window),
             "lhs_dilation": tuple(int(rng.integers(1, 3)) for _ in window),
             "rhs_dilation": tuple(int(rng.integers(1, 3)) for _ in window),
             "lhs_spec": tuple(range(spatial + 2)), "rhs_spec": tuple(range(spatial + 2)),
             "out_spec": tuple(range(spatial + 2)), "feature_group_count": groups, "batch_group_count": 1,
             "preferred_element_type": None}
    out = p.op("conv_general_dilated", [p.arg(lhs), p.arg(rhs)], **attrs)
    terms = features // groups * math.prod(window)
    tolerance = summation_tolerance(dtype, terms, reference("conv_general_dilated", lhs, rhs, **attrs))
    return Case(p, [out], [None], [tolerance])


@record("fft", ("c64", "c128", "f32", "f64"))
def build_fft(rng, dtype):
    """FFT and IFFT of complex dtypes; RFFT of real ones and IRFFT of its spectrum. A DFT output is
    a sum of N terms |x_j| in magnitude, so any evaluation order is within ~N eps sum|x| (times the
    1/N of the inverse transforms), plus the twiddle factors' rounding: 2 N eps sum|x| in all."""
    p = Program()
    rank = int(rng.integers(1, 3))
    lengths = tuple(int(rng.choice((1, 2, 5, 8, 12, 17))) for _ in range(rank))
    batch = tuple(int(rng.choice((1, 2, 3))) for _ in range(rng.integers(0, 2)))
    real = dtype in FLOATS
    eps = float(np.finfo(NUMPY_DTYPES["f32" if dtype in ("c64", "f32") else "f64"]).eps)
    axes = tuple(range(len(batch), len(batch) + rank))
    n = math.prod(lengths)
    x = rng.normal(size=batch + lengths) + (0 if real else 1j * rng.normal(size=batch + lengths))
    x = x.astype(NUMPY_DTYPES[dtype])
    magnitude = np.abs(x).astype(np.float64).sum(axis=axes, keepdims=True)
    if real:
        spectrum = p.op("fft", [p.arg(x)], fft_type="RFFT", fft_length=lengths)
        back = p.op("fft", [spectrum], fft_type="IRFFT", fft_length=lengths)
        outputs, numpy = [spectrum, back], [np.fft.rfftn(x, axes=axes), x]
        bounds = [2 * n * eps * magnitude, 8 * n * eps * magnitude]  # the spectrum's error, then the inverse's
    else:
        px = p.arg(x)
        outputs = [p.op("fft", [px], fft_type="FFT", fft_length=lengths),
                   p.op("fft", [px], fft_type="IFFT", fft_length=lengths)]
        numpy = [np.fft.fftn(x, axes=axes), np.fft.ifftn(x, axes=axes)]
        bounds = [2 * n * eps * magnitude, 2 * eps * magnitude]
    numpy = [e.astype(out.type.numpy_dtype) for e, out in zip(numpy, outputs)]
    return Case(p, outputs, numpy, [{"bound": b} for b in bounds])


# ---- control flow, fusion, library calls ----------------------------------------------------

def traced(fn, *args):
    """A Case from a traced function: its graph module over `args`."""
    module = cj.make_graph(fn)(*args)
    p = Program()
    p.params, p.args, p.ops = list(module.params), [np.asarray(a) for a in args], list(module.body.ops)
    return p, list(module.outputs)


@record("while", ("i32", "f32", "f64", "f16"))
def build_while(rng, dtype):
    """A counted loop (fori_loop) and one whose trip count is an argument, read back on the host."""
    x = random_values(rng, dtype, random_shape(rng), "near_one")
    if dtype in INTS:
        x = x % 5
    trips = int(rng.integers(0, 5))

    def loops(v, limit):
        counted = lax.fori_loop(0, trips, lambda i, c: c * 2 - i, v)
        doubled = lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] + 1, c[1] + c[1]), (0, v))
        return counted, doubled[1]

    limit = np.int64(rng.integers(0, 4))
    p, outputs = traced(loops, x, limit)
    counted, doubled = x, x
    with np.errstate(all="ignore"):  # integers wrap, floats overflow to infinity, in both
        for i in range(trips):
            counted = with_numpy(lambda c: c * 2 - i, counted)
        for _ in range(int(limit)):
            doubled = with_numpy(lambda d: d + d, doubled)
    return Case(p, outputs, [counted, doubled])


@record("cond", ("i8", "f32", "bf16", "f64"))
def build_cond(rng, dtype):
    """Three branches; the index is clamped, so out-of-range indices take the first or last."""
    x = random_values(rng, dtype, random_shape(rng))
    index = np.int32(rng.integers(-2, 5))
    branches = [lambda v: v + v, lambda v: v * v, lambda v: -v]
    p, outputs = traced(lambda i, v: lax.switch(i, branches, v), index, x)
    chosen = [np.add, np.multiply, lambda a, b: np.negative(a)][min(max(int(index), 0), 2)]
    return Case(p, outputs, [with_numpy(chosen, x, x)])


@record("shard_map", ("f32",))
def build_shard_map(rng, dtype):
    """shard_map in a traced function over a mesh of one device (jit's Lowered.compile partitions it)."""
    from cdnajit.sharding import PartitionSpec, make_mesh
    x = random_values(rng, dtype, nonempty_shape(rng))
    doubled = cj.shard_map(lambda v: v + v, make_mesh((1,), ("i",)), in_specs=PartitionSpec("i"),
                           out_specs=PartitionSpec("i"))
    p, outputs = traced(lambda v: doubled(v), x)
    return Case(p, outputs, [with_numpy(np.add, x, x)])


@record("fusion", ("f32", "bf16", "i32"))
def build_fusion(rng, dtype):
    """Modules already in the optimized form: the pass pipeline's fusion ops, compiled as given."""
    x = random_values(rng, dtype, nonempty_shape(rng, min_rank=2))
    module = run_pipeline(cj.make_graph(lambda v: (v * 2 + 1, cnp_sum_rows(v) - v))(x)).module
    assert any(op.name == "fusion" for op in module.body.ops)
    p = Program()
    p.params, p.args, p.ops = list(module.params), [x], list(module.body.ops)
    return Case(p, list(module.outputs), [None, None], [{}, summation_tolerance(
        dtype, x.shape[-1], np.abs(x).astype(np.float64).sum(-1, keepdims=True) + np.abs(x))])


def cnp_sum_rows(v):
    return lax.broadcast_in_dim(lax.reduce_sum(v, (v.ndim - 1,)), v.shape, tuple(range(v.ndim - 1)))


@record("library_call", ("f32", "f64", "f16", "bf16", "i8"))
def build_library_call(rng, dtype):
    """A GEMM with random sizes (1 and primes included), layouts, alpha, C and bias; i8 accumulates
    and returns i32, f16/bf16 accumulate in f32. (tests/libs/test_blas_gemm.py covers the rest.)"""
    p = Program()
    m, n, k = (int(rng.choice([1, 2, 7, 16, 33, 70])) for _ in range(3))
    trans_a, trans_b = bool(rng.integers(2)), bool(rng.integers(2))
    result = "i32" if dtype == "i8" else dtype
    compute = "i32" if dtype == "i8" else "f64" if dtype == "f64" else "f32"
    a = random_values(rng, dtype, (k, m) if trans_a else (m, k))
    b = random_values(rng, dtype, (n, k) if trans_b else (k, n))
    c, bias = random_values(rng, result, (m, n)), random_values(rng, result, (n,))
    alpha, beta = (2, -1) if dtype == "i8" else (0.5, 2.0)
    out = p.op("library_call", [p.arg(a), p.arg(b), p.arg(c), p.arg(bias)], library="blas", routine="gemm",
               solution="", trans_a=trans_a, trans_b=trans_b, alpha=alpha, beta=beta, epilogue="bias_relu",
               result_dtype=result, compute_dtype=compute, clamp_min=None, clamp_max=None)
    wide = np.int64 if dtype == "i8" else np.float64
    op_a, op_b = (a.T if trans_a else a).astype(wide), (b.T if trans_b else b).astype(wide)
    with np.errstate(over="ignore", invalid="ignore"):  # f64's extreme values: `compared` below says where
        expected = np.maximum(alpha * (op_a @ op_b) + beta * c.astype(wide) + bias.astype(wide), 0)
        scale = np.abs(op_a) @ np.abs(op_b) * abs(alpha) + np.abs(beta * c.astype(wide)) + np.abs(bias.astype(wide))
    tolerance = summation_tolerance(result, k + 3, scale)
    if result == "f64":
        with np.errstate(all="ignore"):
            wider = [x.astype(np.longdouble) for x in (op_a, op_b, c, bias)]
            extended = np.maximum(alpha * (wider[0] @ wider[1]) + beta * wider[2] + wider[3], 0).astype(np.float64)
        tolerance["compared"] = overflow_defined(expected, extended)
    if result in HALVES:  # the reference rounds the product, alpha*, +C and +bias to the half float: 4 more roundings
        tolerance["bound"] = tolerance["bound"] + 4 * float(ml_dtypes.finfo(NUMPY_DTYPES[result]).eps) / 2 * scale
    with np.errstate(over="ignore"):
        return Case(p, [out], [expected.astype(NUMPY_DTYPES[result])], [tolerance])


# ---- the tests -------------------------------------------------------------------------------

def case_rng(opname, dtype) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{opname}/{dtype}".encode()))


def pending(opname, dtype) -> str | None:
    """Why the compiled backend cannot run this case yet, or None."""
    if opname in UNSUPPORTED:
        return UNSUPPORTED[opname]
    return COMPLEX_PENDING.get((opname, dtype))


def test_every_op_has_a_record():
    missing = set(OPS) - set(RECORDS)
    assert not missing, f"graph ops without a record in RECORDS: {sorted(missing)}"
    assert not set(RECORDS) - set(OPS), "records of ops that are not in the op table"
    assert set(UNSUPPORTED) <= set(OPS)


CASES = [(name, dtype) for name, r in RECORDS.items() for dtype in r.dtypes]
# make test checks each op in these dtypes (or its first); make test-all in every dtype (make test's time)
CORE_DTYPES = ("f32", "i32", "c64", "bool")


def case_param(opname, dtype):
    core = dtype in CORE_DTYPES or dtype == RECORDS[opname].dtypes[0]
    return pytest.param(opname, dtype, id=f"{opname}-{dtype}", marks=() if core else pytest.mark.slow)


@pytest.mark.parametrize("opname, dtype", [case_param(n, d) for n, d in CASES])
def test_compiled_matches_interpreter_and_numpy(opname, dtype, assert_close):
    case = RECORDS[opname].build(case_rng(opname, dtype), dtype)
    module = case.program.module(case.outputs)
    reason = pending(opname, dtype)
    if reason is not None:
        with pytest.raises(NotImplementedError, match=rf"\b{opname}\b"):
            Executable.compile(module)(*case.program.args)
        return
    expected = cj.ir.interpret(module, *case.program.args)
    arguments = [np.copy(a) for a in case.program.args]
    actual = Executable.compile(module)(*case.program.args)
    for i, (after, before) in enumerate(zip(case.program.args, arguments)):
        np.testing.assert_array_equal(after, before, err_msg=f"the compiled program wrote argument {i}")
    tolerances = case.tolerances or [{}] * len(case.outputs)
    assert len(actual) == len(expected) == len(case.numpy) == len(tolerances)
    for i, (result, oracle, numpy, tolerance) in enumerate(zip(actual, expected, case.numpy, tolerances)):
        assert_close(result, oracle, **tolerance, what=f"output {i} against the interpreter")
        if numpy is not None:
            assert_close(result, np.asarray(numpy, oracle.dtype), **tolerance, what=f"output {i} against numpy")
