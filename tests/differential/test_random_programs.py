"""Random programs (tests/differential/fuzzing: its docstring gives the generator, the oracle and the
error model), compiled and interpreted, checked against numpy evaluated with JAX's dtype rules.

`make test` checks a fixed set of programs; `make test-all` (the slow marker) ten thousand;
`make fuzz N=... SEED=...` any number, from the command line, with a repro for each failure.
"""
import os
import sys

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp

sys.path.insert(0, os.path.dirname(__file__))
from fuzzing.__main__ import run  # noqa: E402


def check_programs(n, seed, quick=False):
    kinds, examples, programs, ops, seconds = run(n, seed, quiet=True, out=sys.stderr, quick=quick)
    assert not kinds, "failures (repros above): " + "; ".join(
        f"{count} x {kind}: {examples[kind][2].detail}" for kind, count in kinds.items())


def test_random_programs():
    check_programs(100, seed=1, quick=True)   # about 35 s of one core (cold compile cache), measured


@pytest.mark.slow
@pytest.mark.parametrize("part", range(10))
def test_random_programs_many(part):
    check_programs(1000, seed=100 + part)


@pytest.mark.slow   # make test's time: each program compiles its own kernels (about 60 s in all)
@pytest.mark.parametrize("program_seed", [
    101004052,   # mean of one c64 element nan - 0.19j: JAX's division by 1 + 0i is simplified away, not Smith's
    202009511,   # the oracle called power(0.001, traced uint64) weak (jit gives lax.pow's strong result)
    202010157,   # fusion copied convert(slice(broadcast(0))) into a kernel scheduled before the slice a cond read
    404004460,   # the oracle kept a weak type through a sum over no axes
    505002751,   # the oracle called int64 @ uint64 a strong f64 (JAX: weak, as their promotion)
    106000545,   # the oracle's fori_loop index was a strong int64 (JAX's is weak: uint64 + i stays uint64)
    104000727,   # the same index, in a program whose oracle shape followed the wrong promotion
    107001189,   # the oracle dropped the weak type through lax.cummin (lax's cummax/cummin keep it)
    303007002,   # prod over no axes of -inf + inf i: the product of one element is the element, not 1 * x
    404001631,   # uint64 == -1 in a loop body: a Python int wraps to the array's dtype, as JAX's
    101001519,   # cumprod of c64 whose first element is -0 - 1j: the compiled scan multiplied it by 1 + 0i
    202000732,   # |x| / cumprod(x) of 476 c128: the oracle's division bound overflowed (|y|^2 > f64 max)
    202001814,   # int8 -> f64 -> u32 composed into one int8 -> u32 convert, which wraps where f64 -> u32 saturates
    202002758,   # the same through u8
    202003167,   # the oracle called concatenate(weak f64, f32) weak (only both-weak operands make a weak result)
    pytest.param(104000575, marks=pytest.mark.slow),   # einsum of -x0 with K = 0: the negation went to alpha and made the empty sum -0 (JAX: +0)
    107001120,   # a weak fori_loop init carried through astype(int64) stayed weak (JAX: strong, so where(.., int8) is int64)
    707004754,   # (-1.396e154 - 9.558e153j)**2 rounded both products, so inf - inf = nan (JAX: fma, finite)
    1313006593,  # cnp.sort dropped the weak type of int64 * -2.5, so f32 @ it was f64 (JAX: f32)
    1616011759,  # mean of complex 1 - 0j (0-d): the oracle added the identity; JAX keeps the element, -0.0 too
    pytest.param(1818012459, marks=pytest.mark.slow),  # oracle: log10 of a weak f64 taken as weak; JAX's log10 (log times a typed constant) is strong
    2121007794,  # (x * 1e30) @ x.T: the operand's factor went to alpha, so -0 * -max gave 0, not -0 * -inf = NaN
    1919007186,  # interpreter: x.at[i].min(0.) over -0. kept numpy's +0 (JAX: -0); oracle: 0 * a zero of open sign
    1111012866,  # oracle: trunc of cummax's sign-free zero (max of 0 and -0) compared the zero's sign
    2323016947,  # any(x1 * x0) over a row of one wave: LLVM vectorized in0[wg * 4 + item % 4] as contiguous
    2323011023,  # cos(f32(log2(f64 x))): LLVM's SLP vectorizer on outlined math dropped the kernel's body
    2525015111,  # cosh(x) >= argmin(x) and its sum, one row kernel: the SLP vectorizer on outlined cosh, garbage
    2424010611,  # oracle: lax.cumprod(reverse=True) of a weak f64 taken as strong; lax's cumulative functions keep it
    2626008085,  # oracle: power(weak f64, 2) taken as strong; lax.integer_pow keeps the weak type
    2828011404,  # oracle: -0 / complex64 9.2e-41: XLA's |y|^2 underflows to 0, so NaN (numpy: -0)
    2929010023,  # oracle: uint64 ** int8 (arrays) taken as strong; JAX promotes them to a weak f64 first
    1010003516,  # oracle: power(1e30, bool) taken as strong f64; JAX keeps it weak (+ f16 is f16)
    1010003692,  # oracle: arctan of an undetermined product (possibly inf * 0 = NaN) was bounded by pi/2
    909012001,   # interpreter: logistic(-96.0) in f32 gave 0 (exp(96) overflowed), JAX 2.03e-42
    pytest.param(909006462, marks=pytest.mark.slow),   # oracle: a sum of (nan + yj) terms bounded its finite imaginary part by 0 (|nan + yj| dropped)
    606005669,   # cnp.pad dropped the weak type of minimum(int16, 1e30), so its product with bf16 was f64 (JAX: bf16)
])
def test_programs_that_failed(program_seed):
    from fuzzing.programs import check, generate
    assert check(generate(program_seed)) is None


@pytest.mark.parametrize("function, x, want", [
    # (program, input, JAX 0.10.2's answer under jax_enable_x64, stored here)
    (lambda x: cnp.sum(x, axis=0), np.array([[-0.0, -0.0]]), np.array([-0.0, -0.0])),
    (lambda x: cnp.sum(x), np.array([-0.0]), np.array(-0.0)),
    (lambda x: cnp.sum(x), np.array([[-0.0, -0.0]]), np.array(0.0)),
    (lambda x: cnp.mean(x), np.array([complex(1.0, -0.0)]), np.array(complex(1.0, -0.0))),
    (lambda x: cnp.mean(x), np.array(complex(1.0, -0.0)), np.array(complex(1.0, -0.0))),
    (lambda x: cnp.prod(x, axis=1), np.array([[complex(-0.0, -1.0)]], np.complex64),
     np.array([complex(-0.0, -1.0)], np.complex64)),
])
def test_a_reduction_of_one_element_is_the_element_as_in_jax(function, x, want):
    """XLA simplifies a reduce whose axes hold one element to a reshape: the element, its zero's sign
    kept (fuzz seed 1616, program 1616011759); of two or more, the sum starts from +0."""
    got = cj.jit(function)(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(np.real(got)), np.signbit(np.real(want)))
    np.testing.assert_array_equal(np.signbit(np.imag(got)), np.signbit(np.imag(want)))


def test_complex_products_near_overflow_match_jax():
    # Each part fuses one of its products into an fma, as XLA's: re = fma(xr, yr, -(xi*yi)), im =
    # fma(xi, yr, xr*yi). (-1.396e154 - 9.558e153j)**2 has a finite real part though 1.396e154**2
    # alone overflows (fuzz seed 707004754 found it); the last two products cancel exactly in one
    # part, which is then the rounding error of the other product: its sign says which was fused.
    z = np.array([-1.396e154 - 9.558e153j, 3 - 4j, 1.3e154 + 1.3e154j, 1.3e154 + 0.7e154j], np.complex128)
    w = np.array([-1.396e154 - 9.558e153j, 1e300 + 1e300j, 1.3e154 - 1.3e154j, 0.7e154 + 1.3e154j], np.complex128)
    jax_answer = [complex(1.0352623600000002e+308, np.inf), 7e+300 - 1e+300j, complex(np.inf, 5.095988158258485e+291),
                  complex(-4.979011328355966e+291, np.inf)]
    got = cj.jit(lambda x, y: x * y)(z, w)
    np.testing.assert_array_equal(got.real, np.real(jax_answer))
    np.testing.assert_array_equal(got.imag, np.imag(jax_answer))
