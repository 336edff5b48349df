"""The IR math library against numpy: maximum error in ulp over dense ranges, and special values.

One kernel per dtype applies every function to its own input buffers (one compile each). The
reference is numpy in float64 for f32 results (the error is then the f32 result's distance to
the true value, in f32 ulps) and numpy in long double (x87 80-bit) for f64 results, or
math.erf, which glibc computes to within 1 ulp. Run with -s to see the table.
"""
import math

import numpy as np
import pytest

import cdnajit  # noqa: F401  (the package, as users import it)
from cdnajit.ir import kernel as K
from cdnajit.ir import numpy_dtype
from cdnajit.runtime.launch import compile_kernel

POINTS = 1 << 20
WORKGROUP = 256
RNG = np.random.default_rng(0)

# Maximum error in ulp allowed per function: (f32, f64). Looser bounds, and why:
# - pow f64 (not looser: the exp's 2): log|x| is a double-double good to ~2^-61 (measured), so
#   y*log|x| adds ~|y log x| 2^-61 relative, under 1 ulp in the dense range and up to ~1.5 ulp more
#   near the exp's limits (LOG_DOUBLE_DOUBLE_ERROR, test_pow_near_the_subnormal_range).
# - tan: a quotient of two polynomials, each with its own rounding.
# - asin, acos: atan2 of a square root, three roundings before atan's own error.
BOUNDS = {
    "exp": (2, 2), "exp2": (2, 2), "expm1": (3, 3), "log": (2, 2), "log2": (3, 3), "log10": (3, 3),
    "log1p": (3, 3), "tanh": (4, 4), "logistic": (3, 3), "sinh": (4, 4), "cosh": (3, 3),
    "sin": (2, 2), "cos": (2, 2), "tan": (4, 4), "atan": (3, 3), "atan2": (3, 3), "asin": (4, 4),
    "acos": (4, 4), "erf": (3, 3), "cbrt": (2, 2), "pow": (2, 2), "sqrt": (0.5, 0.5),
}
LOG_DOUBLE_DOUBLE_ERROR = 2.0 ** -60   # pow f64's log|x|, relative, with a factor 2 to spare


def logspace(low, high, n, signed=False):
    values = 10.0 ** RNG.uniform(low, high, n)
    return values * RNG.choice([-1.0, 1.0], n) if signed else values


def uniform(low, high, n):
    return RNG.uniform(low, high, n)


def mix(*parts):
    """Concatenate input ranges, cycled/truncated to POINTS."""
    values = np.concatenate(parts)
    return np.resize(values, POINTS)


q = POINTS // 4
# Inputs per function and dtype: the useful domain, densely, including overflow/underflow edges.
DOMAINS = {
    "exp": {"f32": lambda: mix(uniform(-104, 89, 3 * q), uniform(-1, 1, q)),
            "f64": lambda: mix(uniform(-746, 710, 3 * q), uniform(-1, 1, q))},
    "exp2": {"f32": lambda: mix(uniform(-151, 129, 3 * q), uniform(-1, 1, q)),
             "f64": lambda: mix(uniform(-1076, 1025, 3 * q), uniform(-1, 1, q))},
    "expm1": {"f32": lambda: mix(uniform(-20, 89, 2 * q), logspace(-30, 0, 2 * q, signed=True)),
              "f64": lambda: mix(uniform(-40, 709, 2 * q), logspace(-300, 0, 2 * q, signed=True))},
    "log": {"f32": lambda: mix(logspace(-45, 38, 2 * q), uniform(0.7, 1.4, 2 * q)),
            "f64": lambda: mix(logspace(-320, 308, 2 * q), uniform(0.7, 1.4, 2 * q))},
    "log1p": {"f32": lambda: mix(uniform(-0.999, 10, 2 * q), logspace(-30, 30, 2 * q)),
              "f64": lambda: mix(uniform(-0.999, 10, 2 * q), logspace(-300, 300, 2 * q))},
    "tanh": {"f32": lambda: mix(uniform(-12, 12, 2 * q), logspace(-30, 0, 2 * q, signed=True)),
             "f64": lambda: mix(uniform(-25, 25, 2 * q), logspace(-300, 0, 2 * q, signed=True))},
    "logistic": {"f32": lambda: uniform(-100, 100, POINTS), "f64": lambda: uniform(-700, 700, POINTS)},
    "sinh": {"f32": lambda: mix(uniform(-89, 89, 2 * q), logspace(-30, 0, 2 * q, signed=True)),
             "f64": lambda: mix(uniform(-710, 710, 2 * q), logspace(-300, 0, 2 * q, signed=True))},
    "cosh": {"f32": lambda: uniform(-89, 89, POINTS), "f64": lambda: uniform(-710, 710, POINTS)},
    # Trigonometry up to the largest float (Payne-Hanek reduction from 2^20 on).
    "sin": {"f32": lambda: mix(uniform(-10, 10, q), uniform(-1e5, 1e5, q), logspace(-30, 0, q, signed=True),
                               logspace(5, 38.53, q, signed=True)),
            "f64": lambda: mix(uniform(-10, 10, q), uniform(-1e5, 1e5, q), logspace(-300, 0, q, signed=True),
                               logspace(5, 308.25, q, signed=True))},
    "atan": {"any": lambda: mix(uniform(-10, 10, 2 * q), logspace(-30, 30, 2 * q, signed=True))},
    "asin": {"any": lambda: mix(uniform(-1, 1, 3 * q), 1 - logspace(-7, -1, q))},
    "erf": {"any": lambda: mix(uniform(-7, 7, 3 * q), logspace(-30, 0, q, signed=True))},
    "cbrt": {"f32": lambda: logspace(-45, 38, POINTS, signed=True),
             "f64": lambda: logspace(-320, 308, POINTS, signed=True)},
    "sqrt": {"f32": lambda: logspace(-45, 38, POINTS), "f64": lambda: logspace(-320, 308, POINTS)},
    # Two operands: (first, second).
    "atan2": {"any": lambda: (mix(uniform(-10, 10, 2 * q), logspace(-20, 20, 2 * q, signed=True)),
                              mix(uniform(-10, 10, 2 * q), logspace(-20, 20, 2 * q, signed=True)))},
    "pow": {"any": lambda: (mix(logspace(-3, 3, 3 * q), -np.floor(uniform(1, 100, q))),
                            mix(uniform(-30, 30, 3 * q), np.floor(uniform(-15, 15, q))))},
}
DOMAINS.update({"log2": DOMAINS["log"], "log10": DOMAINS["log"], "cos": DOMAINS["sin"], "tan": DOMAINS["sin"],
                "acos": DOMAINS["asin"]})
FUNCTIONS = sorted(DOMAINS)
BINARY = ("atan2", "pow")
TRIG = ("sin", "cos", "tan")


def inputs(fn, dtype):
    domain = DOMAINS[fn]
    values = (domain.get(dtype) or domain["any"])()
    values = values if isinstance(values, tuple) else (values,)
    return tuple(np.asarray(v, numpy_dtype(dtype)) for v in values)


def erf_reference(x):
    return np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)).astype(np.float64)


NUMPY_NAMES = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "atan2": np.arctan2, "pow": np.power,
               "logistic": lambda x: 1 / (1 + np.exp(-x)), "erf": None}


def reference(fn, args, dtype):
    """The function's value in float64 (f32 results) or long double (f64 results)."""
    if fn == "erf":
        return erf_reference(args[0])
    wide = np.float64 if dtype == "f32" else np.longdouble
    numpy_fn = NUMPY_NAMES.get(fn) or getattr(np, fn)
    with np.errstate(all="ignore"):
        return numpy_fn(*(a.astype(wide) for a in args))


def ulp_error(result, exact, dtype):
    """|result - exact| in ulps of the dtype at `exact` (infinite when only one side is inf or NaN)."""
    np_dtype = numpy_dtype(dtype)
    with np.errstate(all="ignore"):
        rounded = exact.astype(np_dtype)
        both_nan = np.isnan(result) & np.isnan(rounded)
        same_inf = np.isinf(result) & (result == rounded)
        ulp = np.spacing(np.abs(rounded)).astype(np.longdouble)
        error = np.abs(result.astype(np.longdouble) - exact.astype(np.longdouble)) / ulp
        error = np.where(both_nan | same_inf, 0.0, error)
        return np.where(np.isnan(error), np.inf, error).astype(np.float64)


def math_kernel(dtype, n):
    """out_<fn>[i] = fn(in_<fn>[i], ...) for every function, over n elements."""
    params, body = [], []
    i = K.Var("i", "i32")
    body.append(K.Let(i, K.workgroup_id(0) * WORKGROUP + K.workitem_id(0)))
    for fn in FUNCTIONS:
        operands = [K.GlobalBuffer(f"{fn}_in{k}", dtype, n, readonly=True) for k in range(2 if fn in BINARY else 1)]
        out = K.GlobalBuffer(f"{fn}_out", dtype, n)
        params += operands + [out]
        body.append(K.Store(out, i, K.math(fn, *(b[i] for b in operands))))
    return K.Kernel(f"mathlib_{dtype}", params=params, grid=(n // WORKGROUP,), workgroup_size=(WORKGROUP,), body=body)


def run_all(dtype, n, make_inputs):
    kernel = math_kernel(dtype, n)
    compiled = compile_kernel(kernel)
    args, outputs, operands = [], {}, {}
    for fn in FUNCTIONS:
        operands[fn] = make_inputs(fn)
        outputs[fn] = np.zeros(n, numpy_dtype(dtype))
        args += list(operands[fn]) + [outputs[fn]]
    compiled(*args)
    return operands, outputs


@pytest.fixture(scope="module", params=["f32", "f64"])
def measured(request):
    dtype = request.param
    operands, outputs = run_all(dtype, POINTS, lambda fn: inputs(fn, dtype))
    errors = {fn: float(ulp_error(outputs[fn], reference(fn, operands[fn], dtype), dtype).max()) for fn in FUNCTIONS}
    return dtype, errors, operands, outputs


def test_max_ulp_error(measured):
    dtype, errors, operands, outputs = measured
    column = 0 if dtype == "f32" else 1
    print(f"\nmax ulp error ({dtype}, {POINTS} points each)")
    for fn in FUNCTIONS:
        print(f"  {fn:9s} {errors[fn]:6.2f}   (bound {BOUNDS[fn][column]})")
    worst = {fn: e for fn, e in errors.items() if e > BOUNDS[fn][column]}
    assert not worst, f"{dtype}: functions over their ulp bound: {worst}"


SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 1e-40, -1e-310,
            1e-6, 100.0, -100.0, 1e30, -1e30, 1e300, -1e300]
# Huge trigonometric arguments: the reduction's edges, the largest floats, and the double
# nearest a multiple of pi/2 (J.-M. Muller, Elementary Functions, ch. 11: 6381956970095103 2^797).
HUGE = [2.0 ** 20, -(2.0 ** 20), 2.0 ** 20 - 1, 3e16, -3e16, 6e16, 1e30, -1e30, 3.4028235e38, -3.4028235e38,
        1e300, 1.7976931348623157e308, -1.7976931348623157e308, 6381956970095103.0 * 2.0 ** 797]


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_special_values(dtype):
    """NaN, +-inf, +-0, huge and tiny inputs (every pair of them for the binary functions) as numpy."""
    values = list({repr(v): v for v in SPECIALS + VARIANT_SPECIALS}.values())  # by repr: 0.0 and -0.0 both
    pairs = [(a, b) for a in values for b in values]
    n = POINTS  # the size of the measuring kernel, so its compiled code is reused
    firsts = np.resize(np.array([a for a, _ in pairs]), n)
    seconds = np.resize(np.array([b for _, b in pairs]), n)
    with np.errstate(all="ignore"):
        make = lambda fn: (firsts.astype(numpy_dtype(dtype)), seconds.astype(numpy_dtype(dtype))) if fn in BINARY \
            else (firsts.astype(numpy_dtype(dtype)),)
        operands, outputs = run_all(dtype, n, make)
    column = 0 if dtype == "f32" else 1
    for fn in FUNCTIONS:
        keep = slice(None, len(pairs))
        operands[fn] = tuple(a[keep] for a in operands[fn])
        expected = reference(fn, operands[fn], dtype)
        error = ulp_error(outputs[fn][:len(pairs)], expected, dtype)
        bad = np.nonzero(error > BOUNDS[fn][column])[0]
        assert len(bad) == 0, (f"{fn}({', '.join(str(a[bad[0]]) for a in operands[fn])}) = {outputs[fn][bad[0]]}, "
                               f"numpy gives {expected[bad[0]]}")


# ---- outlined vector variants: the same results as the inlined functions -------------------

VARIANT_SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 1e-40, -1e-40, 1e-310, 3e38, -3e38, 1e300,
                    88.7, -103.9, 709.7, -745.0, 1e6, -1e6]
MATH_ARITY = {name: arity for name, (arity, _) in K.MATH_FUNCTIONS.items()}


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_outlined_vector_variants_match_inlined_functions(dtype, monkeypatch):
    """Every outlinable function called through its vector variant (host.outlined_math) gives the
    bits the inlined function gives: the same operations, lane by lane."""
    from cdnajit.codegen import host, mathlib
    from cdnajit.runtime.launch import CompiledKernel
    names = sorted(mathlib.OUTLINABLE)
    n = 4 * WORKGROUP
    np_dtype = numpy_dtype(dtype)
    with np.errstate(over="ignore"):
        values = np.resize(np.concatenate([np.array(VARIANT_SPECIALS, np_dtype),
                                           RNG.uniform(-30, 30, n).astype(np_dtype)]), n)
    second = RNG.permutation(values)
    x, y = K.GlobalBuffer("x", dtype, n, readonly=True), K.GlobalBuffer("y", dtype, n, readonly=True)
    outs = [K.GlobalBuffer(f"out_{name}", "bool" if name == "is_finite" else dtype, n) for name in names]
    i = K.Var("i", "i32")
    body = [K.Let(i, K.workgroup_id(0) * WORKGROUP + K.workitem_id(0))]
    body += [K.Store(out, i, K.math(name, *([x[i], y[i]] if MATH_ARITY[name] == 2 else [x[i]])))
             for name, out in zip(names, outs)]
    kernel = K.Kernel(f"outlined_{dtype}", params=[x, y] + outs, grid=(n // WORKGROUP,),
                      workgroup_size=(WORKGROUP,), body=body)
    results = []
    for outline in (False, True):
        monkeypatch.setattr(host, "outlined_math", lambda k: {(name, dtype) for name in names} if outline else set())
        arrays = [np.zeros(n, numpy_dtype(o.dtype)) for o in outs]
        CompiledKernel(kernel, host.compile_object(kernel))(values, second, *arrays)
        results.append(arrays)
    for name, inlined, outlined in zip(names, *results):
        np.testing.assert_array_equal(outlined, inlined, err_msg=name)



@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16"])
def test_trigonometry_of_huge_arguments(dtype):
    """sin, cos, tan of huge finite arguments within their ulp bounds (f32 bounds for f16/bf16,
    which compute in f32 and round once, plus that rounding), against long double numpy."""
    import ml_dtypes
    import cdnajit as cj
    import cdnajit.numpy as cnp
    np_dtype = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}[dtype]
    with np.errstate(over="ignore"):
        x = np.array([v for v in HUGE if abs(v) <= float(np.finfo(np.float32).max) or dtype == "f64"], np_dtype)
    x = x[np.isfinite(x.astype(np.float64))]
    column = 1 if dtype == "f64" else 0
    for fn in TRIG:
        got = np.asarray(cj.jit(getattr(cnp, fn))(x)).astype(np.float64)
        exact = getattr(np, fn)(x.astype(np.longdouble))
        if dtype in ("f16", "bf16"):  # the f32 result rounded once more: within half an ulp of it
            error = np.abs(got - exact.astype(np.float64)) / np.spacing(np.abs(exact.astype(np_dtype))).astype(np.float64)
            assert (error <= 1.0).all(), f"{fn}({x[np.argmax(error)]}) = {got[np.argmax(error)]}"
        else:
            error = ulp_error(got.astype(np_dtype), exact, dtype)
            assert (error <= BOUNDS[fn][column]).all(), f"{fn}({x[np.argmax(error)]}) = {got[np.argmax(error)]}"


def test_ordinary_arguments_after_a_huge_one_in_a_row_loop():
    """A row kernel's vectorized loop over a row: after a chunk with a huge argument (its lanes
    computed one by one, out of line), the following chunks' and rows' results are still the
    ordinary ones (fuzz seed 3636012190: a call convention that kept vector registers across the
    out-of-line call lost them)."""
    import cdnajit as cj
    import cdnajit.numpy as cnp
    x = np.tile(np.array([1, 0, 3, 1, 8, 2, 2, 8, 6, 2, 4, 5, 0, 4, 0, 5, 1, 7, 7, 3, 2, 3, 2.0**32, 7, 1, 7, 3, 4],
                         np.float32), (2, 1))
    for fn in TRIG:
        _, got = cj.jit(lambda v: (cnp.sum(v, axis=1), getattr(cnp, fn)(v)))(x)
        np.testing.assert_allclose(got, getattr(np, fn)(x.astype(np.float64)), rtol=1e-6, atol=1e-6, err_msg=fn)


def test_the_bits_of_two_over_pi_are_fdlibms():
    """The Payne-Hanek table's first bits against fdlibm's published `ipio2` (k_rem_pio2.c), 24 bits
    an entry, and the table against 2/pi computed once more, independently, from math.pi's bits
    (good to 2^-53, so only the first word is compared)."""
    from cdnajit.codegen.mathlib import TWO_OVER_PI
    ipio2 = [0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1, 0xF534DD, 0xC0DB62, 0x95993C, 0x439041, 0xFE5163]
    fdlibm = 0
    for entry in ipio2:
        fdlibm = fdlibm << 24 | entry
    ours = 0
    for word in TWO_OVER_PI[1:5]:
        ours = ours << 64 | word
    assert TWO_OVER_PI[0] == 0
    assert ours >> (256 - 24 * len(ipio2)) == fdlibm
    assert abs(TWO_OVER_PI[1] / 2.0 ** 64 - 2 / math.pi) < 2.0 ** -52


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_pow_near_the_subnormal_range(dtype):
    """pow whose results are subnormal or near the smallest normal, within its ulp bound (the ulp
    of a subnormal result is the smallest subnormal): y log|x| near the exp's lower limit, where
    the product's rounding error must still reach the exp."""
    import cdnajit as cj
    import cdnajit.numpy as cnp
    np_dtype = numpy_dtype(dtype)
    info = np.finfo(np_dtype)
    n = 4096
    # Results 2^t with t from a few binades above the smallest normal to below the smallest subnormal.
    t = RNG.uniform(np.log2(float(info.smallest_subnormal)) - 1, np.log2(float(info.tiny)) + 4, n)
    x = logspace(-3, 3, n)
    x = x[np.abs(np.log(x)) > 0.01]
    y = t[:len(x)] * np.log(2) / np.log(x)
    # Negative bases with integer exponents (odd ones keep the sign).
    bases = -logspace(-2, 2, n // 4)
    bases = bases[np.abs(np.log(-bases)) > 0.1]
    powers = np.round(t[:len(bases)] * np.log(2) / np.log(-bases))
    keep = np.abs(powers) < 2 ** 24
    largest = float(info.max)
    x = np.concatenate([x, bases[keep], [-largest, largest, 2.0, 2.0, 0.5, -0.5]])
    y = np.concatenate([y, powers[keep], [-1.0, -1.0, float(np.log2(float(info.smallest_subnormal))),
                                          float(np.log2(float(info.smallest_subnormal))) - 1, 1000.0, 1001.0]])
    x, y = x.astype(np_dtype), y.astype(np_dtype)
    got = np.asarray(cj.jit(cnp.power)(x, y))
    exact = reference("pow", (x, y), dtype)
    error = ulp_error(got, exact, dtype)
    # f64: the exp's 2 ulps, plus log|x|'s relative error (LOG_DOUBLE_DOUBLE_ERROR) times
    # |y log|x|| (up to 745 here), relative to the result: in ulps of a subnormal result, less.
    if dtype == "f64":
        ulp = np.spacing(np.abs(exact.astype(np_dtype))).astype(np.float64)
        allowed = 2 + np.abs(exact.astype(np.float64)) * np.abs(y * np.log(np.abs(x))) * LOG_DOUBLE_DOUBLE_ERROR / ulp
    else:
        allowed = BOUNDS["pow"][0]
    worst = int(np.argmax(error - allowed))
    assert (error <= allowed).all(), \
        f"pow({x[worst]!r}, {y[worst]!r}) = {got[worst]!r}: {error[worst]:.2f} ulp"
    assert got[-6] == np.power(np.longdouble(x[-6]), np.longdouble(y[-6])).astype(np_dtype)  # -1/max, exactly


@pytest.mark.parametrize("fn", ["sin", "exp"])
def test_loops_of_huge_argument_functions_are_interleaved(fn):
    """A work-item loop calling sin/cos/tan asks LLVM to interleave it twice (the branch around
    their Payne-Hanek call stops the vectorizer doing it by itself); after optimization its
    vector body holds the polynomial twice. Other loops keep LLVM's own choice."""
    from cdnajit.codegen import host
    x, out = K.GlobalBuffer("x", "f64", 4096, readonly=True), K.GlobalBuffer("out", "f64", 4096)
    i = K.Var("i", "i32")
    kernel = K.Kernel(f"loop_{fn}", params=[x, out], grid=(4096 // WORKGROUP,), workgroup_size=(WORKGROUP,),
                      body=[K.Let(i, K.workgroup_id(0) * WORKGROUP + K.workitem_id(0)),
                            K.Store(out, i, K.math(fn, x[i]))])
    text = str(host.llvm_module(kernel))
    assert ('"llvm.loop.interleave.count", i32 2' in text) == (fn == "sin")
    if fn == "sin":
        optimized = host.optimized_llvm_ir(kernel)
        body = optimized[optimized.index("vector.body:"):]
        body = body[:body.index("\n\n")]
        # sin's polynomial has 8 terms (7 fma) and cos's 7 (6), for each of two vectors
        assert body.count("@llvm.fma.v") >= 2 * 13
