"""Bad and unusual inputs of compiled programs: signatures, layouts, empty arrays, NaN and Inf.

- A call whose arguments differ in shape or dtype from a compiled signature retraces; going back
  to an earlier signature reuses its executable, never a wrong one.
- Non-contiguous, negatively strided, transposed, broadcast (zero-stride), byte-swapped, read-only
  and misaligned numpy arrays give the results of their contiguous native copies; inputs are never
  written.
- Empty arrays run through every op family.
- NaN and infinities propagate as in numpy.
Each program runs compiled, interpreted (`backend="interpret"`, the oracle) and in numpy. The
functions use no transcendental ops and no reordered float sums unless said, so results must be
exact (the `assert_close` fixture, tests/conftest.py).
"""
import warnings

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax

# Programs of several op families, each with its numpy twin. Sums and matmuls are on small
# integers below, exact in any order.
PROGRAMS = {
    "elementwise": (lambda x: cnp.where(x > 1, x * 2 - 1, -x), lambda x: np.where(x > 1, x * 2 - 1, -x)),
    "reduction": (lambda x: (cnp.sum(x, axis=-1), cnp.max(x, axis=0)),
                  lambda x: (np.sum(x, axis=-1), np.max(x, axis=0))),
    "matmul": (lambda x: x @ x.T, lambda x: x @ x.T),
    "sort": (lambda x: cnp.sort(x, axis=0), lambda x: np.sort(x, axis=0)),
    "cumsum": (lambda x: cnp.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1)),
    "gather": (lambda x: x[np.array([2, 0, -1])], lambda x: x[np.array([2, 0, -1])]),
    "transpose": (lambda x: cnp.transpose(x)[1:, ::-1], lambda x: np.transpose(x)[1:, ::-1]),
}


def check_all(fn, numpy_fn, args, assert_close, ulps=0):
    """Compiled == interpreted == numpy (numpy's dtype, as JAX with 64-bit types would give)."""
    compiled = cj.tree_leaves(cj.jit(fn)(*args))
    interpreted = cj.tree_leaves(cj.jit(fn, backend="interpret")(*args))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "mean of empty slice"
        expected = cj.tree_leaves(numpy_fn(*args))
    assert len(compiled) == len(interpreted) == len(expected)
    for k, (c, i, e) in enumerate(zip(compiled, interpreted, expected)):
        assert_close(c, i, ulps=ulps, what=f"result {k} against the interpreter")
        assert_close(c, np.asarray(e, i.dtype), ulps=ulps, what=f"result {k} against numpy")


BASE = (np.arange(56, dtype=np.float32).reshape(7, 8) % 9 - 4) / 2


def misaligned(array):
    """A C-contiguous copy of `array` one byte past an aligned address."""
    raw = np.zeros(array.nbytes + 1, np.uint8)
    copy = np.frombuffer(raw.data, array.dtype, array.size, offset=1).reshape(array.shape)
    copy[...] = array
    return copy


def read_only(array):
    copy = array.copy()
    copy.flags.writeable = False
    return copy


LAYOUTS = {
    "contiguous": lambda a: a.copy(),
    "strided": lambda a: np.repeat(a, 2, axis=1)[:, ::2],
    "negative strides": lambda a: a[::-1, ::-1].copy()[::-1, ::-1],
    "transposed": lambda a: np.ascontiguousarray(a.T).T,
    "fortran": np.asfortranarray,
    "byte-swapped": lambda a: a.astype(a.dtype.newbyteorder(">")),
    "broadcast": lambda a: np.broadcast_to(a[:1], a.shape),   # zero strides: every row is the first
    "read-only": read_only,
    "misaligned": misaligned,
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("program", PROGRAMS)
def test_unusual_layouts_give_the_results_of_contiguous_arrays(program, layout, assert_close):
    fn, numpy_fn = PROGRAMS[program]
    x = LAYOUTS[layout](BASE)
    before = x.copy()
    check_all(fn, numpy_fn, (x,), assert_close)
    np.testing.assert_array_equal(x, before)  # inputs are never written


def test_layouts_of_other_dtypes(assert_close):
    for dtype in (np.float16, np.float64, np.int16, np.uint64, np.int8):
        x = BASE.astype(dtype)
        for layout in ("negative strides", "byte-swapped", "misaligned"):
            check_all(*PROGRAMS["elementwise"], (LAYOUTS[layout](x),), assert_close)


def test_a_new_shape_or_dtype_retraces_and_an_old_one_reuses_its_executable(assert_close):
    fn, numpy_fn = PROGRAMS["reduction"]
    jitted = cj.jit(fn)
    signatures = [BASE, BASE[:3], BASE.astype(np.float64), BASE.astype(np.int32), BASE[:3, :1], BASE[:, :0]]
    for count, x in enumerate(signatures, start=1):
        expected = numpy_fn(x)
        for result, e in zip(jitted(x), expected):
            assert_close(result, np.asarray(e))
        assert jitted.trace_count == count
    for x in reversed(signatures):  # every signature again: no retrace, the right executable
        for result, e in zip(jitted(x), numpy_fn(x)):
            assert_close(result, np.asarray(e))
    assert jitted.trace_count == len(signatures)


def test_weak_scalars_retrace_against_arrays_and_keep_their_dtype(assert_close):
    scale = cj.jit(lambda x, s: x * s)
    x16 = BASE.astype(np.float16)
    assert scale(x16, 3.0).dtype == np.float16          # a Python float is weakly typed
    assert scale(x16, np.float64(3.0)).dtype == np.float64  # a numpy scalar is not
    assert scale(x16, 2).dtype == np.float16
    assert scale.trace_count == 3
    assert_close(scale(x16, 3.0), x16 * np.float16(3))
    assert scale.trace_count == 3


def test_static_arguments_retrace_per_value():
    f = cj.jit(lambda x, axis: cnp.sum(x, axis=axis), static_argnums=1)
    np.testing.assert_array_equal(f(BASE, 0), BASE.sum(0))
    np.testing.assert_array_equal(f(BASE, 1), BASE.sum(1))
    np.testing.assert_array_equal(f(BASE, 0), BASE.sum(0))
    assert f.trace_count == 2


EMPTY_PROGRAMS = {
    "elementwise": (lambda x: x * 2 + 1, lambda x: x * 2 + 1),
    "sum": (lambda x: (cnp.sum(x), cnp.sum(x, axis=0), cnp.prod(x, axis=1)),
            lambda x: (np.sum(x), np.sum(x, axis=0), np.prod(x, axis=1))),
    "mean": (lambda x: cnp.mean(x, axis=0), lambda x: np.mean(x, axis=0)),
    "matmul": (lambda x: x.T @ x, lambda x: x.T @ x),
    "sort": (lambda x: (cnp.sort(x, axis=0), cnp.argsort(x, axis=1)),
             lambda x: (np.sort(x, axis=0), np.argsort(x, axis=1, kind="stable"))),
    "cumsum": (lambda x: cnp.cumsum(x, axis=0), lambda x: np.cumsum(x, axis=0)),
    "concatenate": (lambda x: cnp.concatenate([x, x, x[:, :1]], axis=1),
                    lambda x: np.concatenate([x, x, x[:, :1]], axis=1)),
    "pad": (lambda x: cnp.pad(x, ((1, 2), (0, 1))), lambda x: np.pad(x, ((1, 2), (0, 1)))),
    "gather": (lambda x: x.T[np.array([0, 2])], lambda x: x.T[np.array([0, 2])]),
    "scatter": (lambda x: x.T.at[np.array([1, 1])].add(1.0), lambda x: x.T + np.array([[0.0], [2.0], [0.0]])),
    "loop": (lambda x: lax.fori_loop(0, 3, lambda i, c: c + i, x), lambda x: x + 3),
}


@pytest.mark.parametrize("program", EMPTY_PROGRAMS)
@pytest.mark.parametrize("shape", [(0, 3), (3, 0)])
def test_empty_arrays(program, shape, assert_close):
    fn, numpy_fn = EMPTY_PROGRAMS[program]
    if program in ("gather", "scatter") and shape == (3, 0):
        shape = (0, 3)  # the rows indexed must exist
    check_all(fn, numpy_fn, (np.ones(shape, np.float32),), assert_close)


SPECIALS = np.array([[np.nan, 1.0, -np.inf, 0.0], [np.inf, -0.0, 2.0, np.nan], [-1.0, np.inf, -np.inf, 3.0]],
                    np.float32)

NAN_PROGRAMS = {  # name -> (cdnajit, numpy, ulps: 0, or the transcendental bound of test_ops_compiled.py)
    "arithmetic": (lambda x, y: (x + y, x - y, x * y, x / y, -x, cnp.abs(x)),
                   lambda x, y: (x + y, x - y, x * y, x / y, -x, np.abs(x)), 0),
    "max and min": (lambda x, y: (cnp.maximum(x, y), cnp.minimum(x, y), cnp.clip(x, -1, 1)),
                    lambda x, y: (np.maximum(x, y), np.minimum(x, y), np.clip(x, -1, 1)), 0),
    "compare and where": (lambda x, y: (x < y, x == x, x != y, cnp.where(x > y, x, y), cnp.isnan(x)),
                          lambda x, y: (x < y, x == x, x != y, np.where(x > y, x, y), np.isnan(x)), 0),
    # (max and min of 0.0 and -0.0 may return either: no reduced row below holds both.)
    "reductions": (lambda x, y: (cnp.sum(x, axis=1), cnp.max(x, axis=0), cnp.min(y, axis=0), cnp.prod(y, axis=0)),
                   lambda x, y: (np.sum(x, axis=1), np.max(x, axis=0), np.min(y, axis=0), np.prod(y, axis=0)), 0),
    "argmax": (lambda x, y: (cnp.argmax(x, axis=1), cnp.argmin(x, axis=0), cnp.argmax(y)),
               lambda x, y: (np.argmax(x, axis=1), np.argmin(x, axis=0), np.argmax(y)), 0),
    "sort": (lambda x, y: (cnp.sort(x, axis=1), cnp.sort(y, axis=None), cnp.argsort(x, axis=0)),  # stable: -0.0, 0.0
             lambda x, y: (np.sort(x, axis=1, kind="stable"), np.sort(y, axis=None, kind="stable"),
                           np.argsort(x, axis=0, kind="stable")), 0),
    "cumsum": (lambda x, y: cnp.cumsum(x, axis=1), lambda x, y: np.cumsum(x, axis=1), 0),
    "matmul": (lambda x, y: x @ y.T, lambda x, y: x @ y.T, 0),
    "transcendental": (lambda x, y: (cnp.exp(x), cnp.log(y), cnp.tanh(x), cnp.sqrt(y), cnp.sin(y)),
                       lambda x, y: (np.exp(x), np.log(y), np.tanh(x), np.sqrt(y), np.sin(y)), 4),
}


@pytest.mark.parametrize("program", NAN_PROGRAMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_nan_and_inf_propagate_as_in_numpy(program, dtype, assert_close):
    fn, numpy_fn, ulps = NAN_PROGRAMS[program]
    x = SPECIALS.astype(dtype)
    y = np.roll(SPECIALS, 1).astype(dtype)
    # numpy computes f16 functions in f32 and rounds once, as the op references do: 1 ulp for f16.
    check_all(fn, numpy_fn, (x, y), assert_close, ulps=min(ulps, 1) if dtype == np.float16 else ulps)
