"""`cj.jit` runs compiled kernels by default: signatures, unusual inputs, stages, special values.

Compiled results are compared with `backend="interpret"` (the oracle) and numpy, exactly: the
functions here use no transcendental ops, so every backend must give the same bits.
"""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax


@pytest.fixture(autouse=True, scope="module")
def private_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CDNAJIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


def both_backends(fn, *args):
    compiled = cj.jit(fn)(*args)
    interpreted = cj.jit(fn, backend="interpret")(*args)
    for c, i in zip(cj.tree_leaves(compiled), cj.tree_leaves(interpreted)):
        assert isinstance(c, np.ndarray) and c.dtype == i.dtype and c.shape == i.shape
        np.testing.assert_array_equal(c, i)
    return compiled


def affine(a, b):
    return a * 2.0 - b


def test_compiled_is_the_default_backend():
    x = np.arange(5.0)
    compiled = cj.jit(affine).lower(x, x).compile()
    assert compiled.backend == "compiled" and compiled.executable is not None
    assert cj.jit(affine, backend="interpret").lower(x, x).compile().executable is None
    with pytest.raises(ValueError, match="unknown backend"):
        cj.jit(affine, backend="gpu")


@pytest.mark.parametrize("shape_a, shape_b", [
    ((), ()), ((1,), ()), ((0,), (0,)), ((3, 0), (0,)), ((65,), (65,)), ((4, 1), (1, 5)), ((2, 3, 7), (7,)),
])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int16, np.int64, np.uint8])
def test_matches_the_interpreter(shape_a, shape_b, dtype):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 9, shape_a).astype(dtype)
    b = rng.integers(0, 9, shape_b).astype(dtype)
    result = both_backends(lambda a, b: (a * b + a, cnp.maximum(a, b)), a, b)
    np.testing.assert_array_equal(result[0], a * b + a)


def test_trace_count_and_retrace_on_a_new_signature():
    f = cj.jit(affine)
    x32, x64 = np.arange(6, dtype=np.float32), np.arange(6, dtype=np.float64)
    for _ in range(3):
        f(x32, x32)
    assert f.trace_count == 1
    f(x32.astype(">f4"), x32)  # another byte order: the same signature
    assert f.trace_count == 1
    np.testing.assert_array_equal(f(x64, x64), x64)  # another dtype
    np.testing.assert_array_equal(f(x32[:4], x32[:4]), x32[:4])  # another shape
    f(x32, 1.0)  # a weakly typed scalar
    assert f.trace_count == 4
    assert f(x64, x64).dtype == np.float64 and f(x32, x32).dtype == np.float32
    assert f.trace_count == 4


BASE = np.arange(60, dtype=np.float32).reshape(6, 10) - 17.5


@pytest.mark.parametrize("make", [
    lambda: BASE[:, ::3],                     # strided
    lambda: BASE[::-1, ::-2],                 # negatively strided
    lambda: BASE.astype(">f4"),               # byte-swapped
    lambda: BASE.T,                           # transposed view
    lambda: np.asfortranarray(BASE),          # column-major
    lambda: BASE[2:4],                        # a view into the middle
    lambda: np.broadcast_to(BASE[0], (3, 10)),  # zero strides
], ids=["strided", "negative", "byteswapped", "transposed", "fortran", "view", "broadcast"])
def test_unusual_inputs(make):
    x = make()
    original = x.copy()
    result = both_backends(lambda v: v * 0.5 + v, x)
    np.testing.assert_array_equal(result, x * np.float32(0.5) + x)
    np.testing.assert_array_equal(x, original)  # inputs are never written


def test_empty_inputs():
    x = np.zeros((0, 3), np.float32)
    out = both_backends(lambda v: (v + 1, cnp.sum(v, axis=0)), x)
    assert out[0].shape == (0, 3)
    np.testing.assert_array_equal(out[1], np.zeros(3, np.float32))


def test_nan_and_inf_propagate_as_in_numpy():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, np.nan], np.float32)
    y = np.array([1.0, -np.inf, -np.inf, np.inf, np.nan, np.nan, np.inf], np.float32)
    with np.errstate(all="ignore"):
        expected = (x + y, x * y, x - y, x / y, np.maximum(x, y), np.minimum(x, y), x < y)
    result = both_backends(lambda a, b: (a + b, a * b, a - b, a / b, cnp.maximum(a, b), cnp.minimum(a, b), a < b),
                           x, y)
    for r, e in zip(result, expected):
        np.testing.assert_array_equal(r, e)


def test_outputs_keep_their_pytree_and_are_fresh():
    x = np.arange(4.0)
    out = cj.jit(lambda v: {"same": v, "twice": (v + 1, [v * 2, None])})(x)
    assert set(out) == {"same", "twice"} and out["twice"][1][1] is None
    np.testing.assert_array_equal(out["twice"][1][0], x * 2)
    assert not np.shares_memory(out["same"], x)


def test_static_arguments_and_keywords():
    f = cj.jit(lambda v, n, scale=1.0: v * n * scale, static_argnums=1)
    x = np.arange(3.0)
    np.testing.assert_array_equal(f(x, 3), x * 3)
    np.testing.assert_array_equal(f(x, 4, scale=0.5), x * 2)
    assert f.trace_count == 2


def test_host_loops_run_compiled():
    f = cj.jit(lambda v: lax.fori_loop(0, 10, lambda i, c: c + i, v))
    np.testing.assert_array_equal(f(np.zeros(3, np.int64)), np.full(3, 45))


def test_stages_as_text():
    x = np.arange(8, dtype=np.float32)
    compiled = cj.jit(affine).lower(x, x).compile()
    assert compiled.as_text() == compiled.as_text("graph") == cj.jit(affine).lower(x, x).as_text()
    assert "fusion" in compiled.as_text("optimized")
    assert compiled.as_text("kernel").startswith("kernel ")
    with pytest.raises(ValueError, match="unknown stage"):
        compiled.as_text("assembly")
    with pytest.raises(ValueError, match="no 'kernel' stage"):
        cj.jit(affine, backend="interpret").lower(x, x).compile().as_text("kernel")
