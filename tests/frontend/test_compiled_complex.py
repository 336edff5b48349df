"""Complex programs under `cj.jit` (compiled: passes/expand_complex.py makes kernels real) give the
interpreter's results: exactly where the expansion does numpy's own real arithmetic, else within
the bounds argued in tests/passes/test_expand_complex.py plus the kernels' math library's."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.runtime.executable import Executable


@pytest.fixture(autouse=True, scope="module")
def private_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CDNAJIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


def random_complex(shape, dtype, rng):
    return ((rng.normal(size=shape) + 1j * rng.normal(size=shape)) * 2).astype(dtype)


def loop(a, b):
    def body(i, carry):
        z, total = carry
        return z * b, total + z
    return lax.fori_loop(0, 4, body, (a, cnp.zeros_like(a)))


# (name, fn, exact). Exact programs add, move, select, compare and divide (numpy's algorithm, step by
# step); the others multiply (numpy fuses the products) or call math functions (a few ulp apart).
PROGRAMS = [
    ("add_neg_conj_parts", lambda a, b: (a + b, -a, cnp.conj(a - b), cnp.real(a), cnp.imag(b)), True),
    ("compare_where", lambda a, b: (a == b, a != b[:1], cnp.where(cnp.real(a) > 0, a, b)), True),
    ("divide_broadcast", lambda a, b: (a / b[:1], 2.5 / a, a / 3), True),
    ("indexing", lambda a, b: (a[np.array([2, 0, 2])], a[::2, ::-1], a.T[1:], cnp.concatenate([a, b], axis=1)), True),
    ("at_updates", lambda a, b: (a.at[1].set(b[0]), a.at[np.array([0, 2, 0])].add(b), a.at[:, 1].set(7j)), True),
    ("dynamic_slices", lambda a, b: (lax.dynamic_slice(a, (1, 1), (2, 3)),
                                     lax.dynamic_update_slice(a, b[:1, :2], (2, 3))), True),
    ("sum_converts", lambda a, b: (a.sum(axis=1), a.astype(cnp.complex128), cnp.real(b).astype(cnp.complex64),
                                   cnp.abs(a) > 1), False),
    ("sort", lambda a, b: cnp.sort(a, axis=1), True),
    ("arithmetic", lambda a, b: (a * b + 1j * a, a * a, a ** 3), False),
    ("reductions", lambda a, b: (a.prod(axis=0), cnp.cumsum(a, axis=1), cnp.cumprod(b, axis=1), a.mean()), False),
    ("matmul", lambda a, b: (a @ b.T, cnp.einsum("ij,ij->j", a, b)), False),
    ("fori_loop_carry", loop, False),
    ("exp_abs", lambda a, b: (cnp.exp(a), cnp.abs(b)), False),
    ("log", lambda a, b: cnp.log(a), False),
    ("sqrt", lambda a, b: cnp.sqrt(a), False),
    ("tanh", lambda a, b: cnp.tanh(a), False),
]

# Inexact programs: within 64 eps of the largest magnitude in play (products of up to four
# factors of |z| ~ 3, sums of five terms, transcendental functions within a few ulp).
RELATIVE_BOUND = 64


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name, fn, exact", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_compiled_matches_the_interpreter(name, fn, exact, dtype):
    rng = np.random.default_rng(0)
    a, b = random_complex((3, 5), dtype, rng), random_complex((3, 5), dtype, rng)
    compiled = cj.jit(fn)(a, b)
    interpreted = cj.jit(fn, backend="interpret")(a, b)
    for got, want in zip(cj.tree_leaves(compiled), cj.tree_leaves(interpreted)):
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype and got.shape == want.shape
        if exact or want.dtype.kind not in "fc":
            np.testing.assert_array_equal(got, want)
        else:
            scale = max(np.max(np.abs(want), initial=0.0), 1.0)
            eps = np.finfo(want.dtype).eps
            assert np.max(np.abs(got - want), initial=0.0) <= RELATIVE_BOUND * eps * scale, name


@pytest.mark.parametrize("shape", [(), (0,), (1,), (4, 0), (65,)])
def test_odd_shapes(shape):
    rng = np.random.default_rng(1)
    a = random_complex(shape, np.complex64, rng)
    fn = lambda a: (a + 1, cnp.conj(a) * 2, cnp.real(a), a.sum())
    *exact, total = cj.jit(fn)(a)
    *exact_wanted, total_wanted = cj.jit(fn, backend="interpret")(a)
    for got, want in zip(exact + [total], exact_wanted + [total_wanted]):
        assert got.dtype == want.dtype and got.shape == want.shape
    for got, want in zip(exact, exact_wanted):
        np.testing.assert_array_equal(got, want)
    # summed in another order than numpy's pairwise sum: n roundings of the sum of magnitudes
    assert abs(total - total_wanted) <= a.size * np.finfo(np.float32).eps * np.abs(a).sum()


def test_parameters_and_results_keep_numpys_layout():
    # A complex parameter returned unchanged, a real view's parts, and a non-contiguous input.
    a = random_complex((4, 6), np.complex128, np.random.default_rng(2))[:, ::2]
    same, re, im = cj.jit(lambda z: (z, cnp.real(z), cnp.imag(z)))(a)
    np.testing.assert_array_equal(same, a)
    np.testing.assert_array_equal(re, a.real)
    np.testing.assert_array_equal(im, a.imag)


def test_fft_reads_and_writes_the_complex_buffers_of_fusions():
    module = cj.ir.parse("""
func @f(%0: c64[8], %1: c64[8]) -> (c64[8]) {
  %2 = mul(%0, %1) : c64[8]
  %3 = fft(%2) {fft_type = "FFT", fft_length = [8]} : c64[8]
  %4 = conj(%3) : c64[8]
  return %4
}""")
    rng = np.random.default_rng(3)
    a, b = random_complex(8, np.complex64, rng), random_complex(8, np.complex64, rng)
    (got,) = Executable.compile(module)(a, b)
    (want,) = cj.ir.interpret(module, a, b)
    # the fft sums 8 terms of |a b| ~ 8 in f64 and rounds once; the product is a few ulp apart
    np.testing.assert_allclose(got, want, rtol=0, atol=64 * np.finfo(np.float32).eps * 8)


def test_ops_left_complex_fail_clearly():
    a = random_complex((3,), np.complex64, np.random.default_rng(4))
    with pytest.raises(NotImplementedError, match="complex"):
        cj.jit(cnp.arcsin)(a)
