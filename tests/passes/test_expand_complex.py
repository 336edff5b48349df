"""expand_complex: IR text in, IR text out for a few rules; interpreter equivalence of the expanded
module on random inputs, exact where the arithmetic is numpy's, within the formulas' bounds elsewhere."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.ir.core import walk
from cdnajit.ir.types import COMPLEXES
from cdnajit.passes.expand_complex import MOVED_WHOLE, expand_complex

# (name, input text, expected text after expand_complex)
CASES = [
    ("add_per_part_with_boundaries", """
func @f(%0: c64[3], %1: c64[3]) -> (c64[3]) {
  %2 = add(%0, %1) : c64[3]
  return %2
}""", """
func @f(%0: c64[3], %1: c64[3]) -> (c64[3]) {
  %2 = real(%0) : f32[3]
  %3 = imag(%0) : f32[3]
  %4 = real(%1) : f32[3]
  %5 = imag(%1) : f32[3]
  %6 = add(%2, %4) : f32[3]
  %7 = add(%3, %5) : f32[3]
  %8 = complex(%6, %7) : c64[3]
  return %8
}"""),
    ("mul_fuses_one_product_of_each_part", """
func @f(%0: c128[2], %1: c128[2]) -> (c128[2]) {
  %2 = mul(%0, %1) : c128[2]
  return %2
}""", """
func @f(%0: c128[2], %1: c128[2]) -> (c128[2]) {
  %2 = real(%0) : f64[2]
  %3 = imag(%0) : f64[2]
  %4 = real(%1) : f64[2]
  %5 = imag(%1) : f64[2]
  %6 = mul(%3, %5) : f64[2]
  %7 = neg(%6) : f64[2]
  %8 = fma(%2, %4, %7) : f64[2]
  %9 = mul(%2, %5) : f64[2]
  %10 = fma(%3, %4, %9) : f64[2]
  %11 = complex(%8, %10) : c128[2]
  return %11
}"""),
    ("constant_splits_and_convert_adds_a_zero_part", """
func @f(%0: f32[2]) -> (c64[2]) {
  %1 = constant() {value = dense<[(1.0, 2.0), (-0.5, 0.0)]>} : c64[2]
  %2 = convert(%0) {dtype = c64} : c64[2]
  %3 = sub(%1, %2) : c64[2]
  return %3
}""", """
func @f(%0: f32[2]) -> (c64[2]) {
  %1 = constant() {value = dense<[1.0, -0.5]>} : f32[2]
  %2 = constant() {value = dense<[2.0, 0.0]>} : f32[2]
  %3 = constant() {value = dense<0.0>} : f32[]
  %4 = broadcast_in_dim(%3) {shape = [2], broadcast_dimensions = []} : f32[2]
  %5 = sub(%1, %0) : f32[2]
  %6 = sub(%2, %4) : f32[2]
  %7 = complex(%5, %6) : c64[2]
  return %7
}"""),
    ("while_carries_parts", """
func @f(%0: c64[], %1: i32[]) -> (c64[]) {
  %2, %3 = while(%0, %1) : (c64[], i32[]) {
    ^(%4: c64[], %5: i32[]):
      %6 = constant() {value = dense<3>} : i32[]
      %7 = lt(%5, %6) : bool[]
      yield %7
    ^(%8: c64[], %9: i32[]):
      %10 = conj(%8) : c64[]
      %11 = constant() {value = dense<1>} : i32[]
      %12 = add(%9, %11) : i32[]
      yield %10, %12
  }
  return %2
}""", """
func @f(%0: c64[], %1: i32[]) -> (c64[]) {
  %2 = real(%0) : f32[]
  %3 = imag(%0) : f32[]
  %4, %5, %6 = while(%2, %3, %1) : (f32[], f32[], i32[]) {
    ^(%7: f32[], %8: f32[], %9: i32[]):
      %10 = constant() {value = dense<3>} : i32[]
      %11 = lt(%9, %10) : bool[]
      yield %11
    ^(%12: f32[], %13: f32[], %14: i32[]):
      %15 = neg(%13) : f32[]
      %16 = constant() {value = dense<1>} : i32[]
      %17 = add(%14, %16) : i32[]
      yield %12, %15, %17
  }
  %18 = complex(%4, %5) : c64[]
  return %18
}"""),
    ("fft_keeps_complex_operands_and_results", """
func @f(%0: c64[4]) -> (c64[4]) {
  %1 = neg(%0) : c64[4]
  %2 = fft(%1) {fft_type = "FFT", fft_length = [4]} : c64[4]
  %3 = neg(%2) : c64[4]
  return %3
}""", """
func @f(%0: c64[4]) -> (c64[4]) {
  %1 = real(%0) : f32[4]
  %2 = imag(%0) : f32[4]
  %3 = neg(%1) : f32[4]
  %4 = neg(%2) : f32[4]
  %5 = complex(%3, %4) : c64[4]
  %6 = fft(%5) {fft_type = "FFT", fft_length = [4]} : c64[4]
  %7 = real(%6) : f32[4]
  %8 = imag(%6) : f32[4]
  %9 = neg(%7) : f32[4]
  %10 = neg(%8) : f32[4]
  %11 = complex(%9, %10) : c64[4]
  return %11
}"""),
    ("data_movement_of_a_parameter_moves_it_whole", """
func @f(%0: c64[2,3]) -> (c64[3,2]) {
  %1 = transpose(%0) {permutation = [1, 0]} : c64[3,2]
  %2 = conj(%1) : c64[3,2]
  return %2
}""", """
func @f(%0: c64[2,3]) -> (c64[3,2]) {
  %1 = transpose(%0) {permutation = [1, 0]} : c64[3,2]
  %2 = real(%1) : f32[3,2]
  %3 = imag(%1) : f32[3,2]
  %4 = neg(%3) : f32[3,2]
  %5 = complex(%2, %4) : c64[3,2]
  return %5
}"""),
    ("complex_values_passed_through_stay_whole", """
func @f(%0: c64[4], %1: f32[4]) -> (c64[4], f32[4]) {
  %2 = exp(%1) : f32[4]
  return %0, %2
}""", """
func @f(%0: c64[4], %1: f32[4]) -> (c64[4], f32[4]) {
  %2 = exp(%1) : f32[4]
  return %0, %2
}"""),
]


@pytest.mark.parametrize("name, before, after", CASES, ids=[c[0] for c in CASES])
def test_rule_text(name, before, after, check_equivalent):
    module = cj.ir.parse(before)
    expanded = expand_complex(module)
    assert str(expanded).strip() == after.strip()
    cj.ir.verify(expanded)
    check_equivalent(module, expanded, nan_signs=False)


def test_a_module_without_complex_values_is_returned_as_is():
    module = cj.ir.parse("func @f(%0: f32[3]) -> (f32[3]) {\n  %1 = neg(%0) : f32[3]\n  return %1\n}")
    assert expand_complex(module) is module


def kept_complex_ops(module):
    """The ops that still make or read complex values, but for the boundary: real, imag, complex, and
    data movement of whole values (parameters)."""
    boundary = {"real", "imag", "complex"} | MOVED_WHOLE
    return [op.name for op in walk(module.body) if op.name not in boundary
            and any(v.type.dtype in COMPLEXES for v in list(op.operands) + list(op.results))]


# ---- interpreter equivalence -----------------------------------------------------------------
# Exact: the expansion performs numpy's own real arithmetic (parts added, moved, compared, selected,
# converted; division by numpy's scaled algorithm step by step). Special values included
# (conftest's random arguments); a NaN's sign is unspecified.

EXACT = {
    "add_sub_neg_conj": lambda a, b: (a + b, a - b, -a, cnp.conj(b)),
    "parts_and_compare": lambda a, b: (cnp.real(a), cnp.imag(b), a == b, a != a, a.astype(cnp.float32)),
    "div": lambda a, b: (a / b, b / a),
    "broadcast_where": lambda a, b: cnp.where(cnp.real(a) > 0, a, b[:1]) + b[:1],
    "data_movement": lambda a, b: (a.T, a[::-1, 1:], cnp.concatenate([a, b]), cnp.pad(a, 1), a.reshape(-1), a[None],
                                   cnp.flip(b, 1)),
    "gather_and_updates": lambda a, b: (a[np.array([2, 0, 2])], a.at[1].set(b[0]), a.at[np.array([0, 0])].add(b[:2]),
                                        lax.dynamic_slice(a, (1, 2), (2, 2)),
                                        lax.dynamic_update_slice(a, b[:1, :2], (2, 1))),
    "convert": lambda a, b: (a.astype(cnp.complex128), cnp.real(a).astype(cnp.complex64), cnp.real(b).astype(cnp.int32)),
    "cumsum_and_loop": lambda a, b: (cnp.cumsum(a, axis=1), lax.fori_loop(0, 3, lambda i, c: (c[0] + c[1], -c[1]), (a, b))),
    "sort": lambda a, b: cnp.sort(a, axis=1),
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", EXACT)
def test_exact_expansions_match_the_interpreter(name, dtype, check_equivalent):
    example = np.zeros((3, 5), dtype)
    module = cj.make_graph(EXACT[name])(example, example)
    expanded = expand_complex(module)
    cj.ir.verify(expanded)
    assert kept_complex_ops(expanded) == []
    check_equivalent(module, expanded, trials=2, nan_signs=False)


# Within bounds, as multiples of the part dtype's eps: the error allowed for a result w is
# ulps * eps * scale, scale per element given by `scale(inputs, w)`. Inputs are finite (normal, x2).
def magnitude(_, w):
    return np.abs(w)


def magnitude_at_least_one(_, w):
    return np.maximum(np.abs(w), 1)


APPROXIMATE = [
    # c64 from exact f64 squares (0.5 ulp) vs numpy's hypot (1 ulp); c128 m*sqrt(1 + r^2): 2 ulp more
    ("abs", lambda a, b: cnp.abs(a), 4, magnitude),
    ("sign", lambda a, b: cnp.sign(a), 4, magnitude_at_least_one),
    # exp(x) (cos y, sin y): a few ulp of each real function, relative to |exp z| (cos y may cancel)
    ("exp", lambda a, b: cnp.exp(a), 6, magnitude),
    # numpy's formula, (expm1(x) cos y - 2 sin^2(y/2), exp(x) sin y), but numpy rounds c64 differently
    ("expm1", lambda a, b: cnp.expm1(a), 6, magnitude_at_least_one),
    # log|z| absolute within a few eps (relative for large |log|z||); atan2 is the same function
    ("log", lambda a, b: (cnp.log(a), cnp.log1p(a)), 6, magnitude_at_least_one),
    ("sqrt", lambda a, b: (cnp.sqrt(a), lax.rsqrt(a)), 6, magnitude),
    # products of two real functions each; tanh's Kahan formula (numpy's) with its own roundings
    ("trig", lambda a, b: (cnp.sin(a), cnp.cos(a), cnp.sinh(a), cnp.cosh(a)), 6, magnitude_at_least_one),
    ("tanh_tan", lambda a, b: (cnp.tanh(a), cnp.tan(a), lax.logistic(a)), 16, magnitude_at_least_one),
    # exp(b log a): the error of b log a (a few eps of its size) is multiplied into the result
    ("pow", lambda a, b: a ** b, 16, lambda x, w: np.abs(w) * (1 + np.abs(x[1] * np.log(x[0])))),
    # n - 1 products, each within 4 eps of the product of magnitudes, as a tree or in sequence
    ("prod", lambda a, b: (cnp.prod(a, axis=1), cnp.cumprod(a, axis=0), cnp.prod(a)), 60,
     lambda x, w: np.ones_like(np.abs(w)) * np.prod(np.abs(x[0]))),
    # four real products summed over k = 5 terms: k + 2 roundings of the sum of |a||b|
    ("matmul", lambda a, b: a @ b.T, 16, lambda x, w: np.abs(x[0]) @ np.abs(x[1]).T),
    ("sum", lambda a, b: (cnp.sum(a, axis=0), cnp.sum(a)), 16, lambda x, w: np.ones_like(np.abs(w)) * np.abs(x[0]).sum()),
]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name, fn, ulps, scale", APPROXIMATE, ids=[c[0] for c in APPROXIMATE])
def test_formulas_match_the_interpreter_within_their_bounds(name, fn, ulps, scale, dtype):
    rng = np.random.default_rng(1)
    inputs = [((rng.normal(size=(3, 5)) + 1j * rng.normal(size=(3, 5))) * 2).astype(dtype) for _ in range(2)]
    module = cj.make_graph(fn)(*inputs)
    expanded = expand_complex(module)
    cj.ir.verify(expanded)
    assert kept_complex_ops(expanded) == []
    eps = np.finfo(dtype).eps
    for want, got in zip(cj.ir.interpret(module, *inputs), cj.ir.interpret(expanded, *inputs)):
        assert got.dtype == want.dtype and got.shape == want.shape
        bound = ulps * eps * scale(inputs, want.astype(np.complex128))
        assert np.all(np.abs(got.real - want.real) <= bound) and np.all(np.abs(got.imag - want.imag) <= bound), name


@pytest.mark.parametrize("fn, expected", [
    # numpy's edge values: |inf + nan i| = inf, sqrt(inf + nan i) = inf + nan i, sqrt(-0 - 0i) = 0 - 0i,
    # sqrt(x + inf i) = inf + inf i
    (lambda z: cnp.abs(z), [np.inf, 0.0, np.inf, np.inf]),
    (lambda z: cnp.sqrt(z), [complex(np.inf, np.nan), complex(0.0, -0.0), complex(np.inf, np.inf),
                             complex(np.inf, np.inf)]),
])
def test_special_values(fn, expected):
    z = np.array([complex(np.inf, np.nan), complex(-0.0, -0.0), complex(3.0, np.inf), complex(np.inf, np.inf)])
    module = cj.make_graph(fn)(z)
    (got,) = cj.ir.interpret(expand_complex(module), z)
    np.testing.assert_array_equal(got, np.array(expected))
    np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(np.array(expected, complex).imag))


def test_exp_log_pow_edges():
    z = np.array([complex(np.inf, 0.0), 0j, complex(710.0, 1.0), complex(-2.0, -0.0)])
    module = cj.make_graph(lambda z: (cnp.exp(z), cnp.log(z), z ** 2.5, z ** 0.0))(z)
    exp, log, power, unit = cj.ir.interpret(expand_complex(module), z)
    assert exp[0] == complex(np.inf, 0.0) and exp[1] == 1
    # exp(710) overflows, exp(710) cos 1 does not (exp(710) sin 1 does): computed as exp(355)^2 cos 1
    with np.errstate(over="ignore"):
        expected = np.exp(z[2])
    assert np.isfinite(expected.real) and exp[2].imag == expected.imag == np.inf
    assert abs(exp[2].real - expected.real) <= 8 * np.finfo(float).eps * expected.real
    assert log[1].real == -np.inf and np.signbit(log[3].imag)   # the branch cut side of -0.0
    assert power[1] == 0 and np.all(unit == 1)


@pytest.mark.parametrize("fn", [
    lambda z: cnp.cumprod(z, axis=0),
    lambda z: cnp.cumprod(z[::-1], axis=0)[::-1],
    lambda z: lax.cumprod(z, axis=0, reverse=True),
    lambda z: cnp.prod(z[:1], axis=0),
    lambda z: cnp.prod(z, axis=0),
])
def test_products_keep_the_signed_zeros_numpy_keeps(fn):
    # A running or reduced product's elements that take one factor are that factor itself, as in JAX
    # (1 + 0i times -0 - 1i would be +0 - 1i); so is an odd count's last, carried element. (Products
    # with zero parts may differ in their sign from numpy's, as the association differs: a tree of
    # pairwise products here, left to right there; none of these has one.)
    z = np.array([complex(-0.0, -1.0), complex(2.5, 0.25), complex(1.0, -0.0)], np.complex64)
    expected = np.asarray(cj.jit(fn, backend="interpret")(z))
    got = np.asarray(cj.jit(fn)(z))
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got.real), np.signbit(expected.real))
    np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(expected.imag))
