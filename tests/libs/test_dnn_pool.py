"""libs/dnn's pool routine: lax.reduce_window max/min/sum (and an average pool, the sum divided) becomes
`library_call dnn.pool`, the last dimension pooled (NCHW-like) or not (NHWC-like); compiled against the reference
interpreter of the same program over random windows, strides, paddings, window dilations, ranks and
dtypes, the kernel's variants (features a multiple of 8 or not, the last dimension pooled).

Error model: max and min select an element, exactly. A sum adds at most `taps` elements in the
accumulator dtype (f32 for f16/bf16) in the reference's order or another: within taps * eps(acc) *
sum|x| of it, then one rounding to the result dtype (eps(result) * |y|).
"""
import math

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.nn as nn
from cdnajit import lax
from cdnajit.ir.types import NUMPY_DTYPES
from cdnajit.libs.dnn.pool import pool_kernel
from cdnajit.ir.core import Value, make_op
from cdnajit.ir.opdef import infer_types
from cdnajit.ir.types import TensorType

REDUCERS = {"max": (lax.max, -np.inf), "min": (lax.min, np.inf), "sum": (lax.add, 0)}


def random_pool(rng):
    """(x shape, reducer, window, strides, padding, window dilation): the last dimension pooled in about a
    third of them (NCHW-like), else not (NHWC-like)."""
    ndim = int(rng.integers(2, 5))
    pooled = ndim if rng.random() < 0.3 else ndim - 1
    rest = ndim - pooled
    shape = [int(rng.integers(1, 9)) for _ in range(ndim - 1)] + [int(rng.choice([3, 8, 16, 5]))]
    window = [int(rng.integers(1, 4)) for _ in range(pooled)] + [1] * rest
    strides = [int(rng.integers(1, 3)) for _ in range(pooled)] + [1] * rest
    dilation = [int(rng.choice([1, 1, 2])) for _ in range(pooled)] + [1] * rest
    padding = [(int(rng.integers(0, 2)), int(rng.integers(0, 2))) for _ in range(pooled)] + [(0, 0)] * rest
    for d in range(pooled):  # at least one output along every dimension
        span = (window[d] - 1) * dilation[d] + 1
        lo, hi = padding[d]
        if shape[d] + lo + hi < span:
            padding[d] = (lo, hi + span - shape[d] - lo - hi)
    return tuple(shape), str(rng.choice(list(REDUCERS))), tuple(window), tuple(strides), tuple(padding), tuple(dilation)


def run_pools(seed, count):
    rng = np.random.default_rng(seed)
    dtype = ("f32", "f16", "bf16", "i32", "f64")[seed % 5]
    for _ in range(count):
        shape, reducer, window, strides, padding, dilation = random_pool(rng)
        if dtype == "i32":
            x = rng.integers(-50, 50, shape).astype(np.int32)
        else:
            x = rng.standard_normal(shape).astype(NUMPY_DTYPES[dtype])
        computation, init = REDUCERS[reducer]
        if dtype == "i32":
            init = {"max": -2**31, "min": 2**31 - 1, "sum": 0}[reducer]

        def pool(x):
            return lax.reduce_window(x, np.array(init).astype(x.dtype), computation, window, strides, padding,
                                     window_dilation=dilation)
        compiled = cj.jit(pool).lower(x).compile()
        assert 'routine = "pool"' in compiled.as_text("optimized")
        got = np.asarray(compiled(x)).astype(np.float64)
        want = np.asarray(cj.jit(pool, backend="interpret")(x)).astype(np.float64)
        if reducer != "sum" or dtype == "i32":
            np.testing.assert_array_equal(got, want)
            continue
        wide = "f64" if dtype == "f64" else "f32"
        magnitude = np.asarray(cj.jit(pool, backend="interpret")(np.abs(x).astype(NUMPY_DTYPES[wide]))).astype(np.float64)
        taps = math.prod(window)
        tolerance = taps * float(ml_dtypes.finfo(NUMPY_DTYPES[wide]).eps) * magnitude + \
            float(ml_dtypes.finfo(x.dtype).eps) * np.abs(want)
        assert (np.abs(got - want) <= tolerance).all(), (shape, window, strides, padding, dilation, dtype)


def test_pools_match_the_interpreter():
    run_pools(0, 3)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 11))
def test_pools_match_the_interpreter_long(seed):
    run_pools(seed, 15)


def test_average_pool_and_a_pool_of_the_last_dimension():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 6, 6, 8)).astype(np.float32)

    def avg_pool(x):  # flax's avg_pool: the window sum divided by its size
        return lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4
    # The division by 4 (or LeNet's * 0.25) is the pool's scale, in the one kernel; by 3 it stays a fusion.
    for divided, scale, fusions in [(lambda y: y / 4, 0.25, 0), (lambda y: y * 0.25, 0.25, 0), (lambda y: y / 3, 1.0, 1)]:
        def avg_pool(x):  # flax's avg_pool: the window sum divided by its size
            return divided(lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"))
        compiled = cj.jit(avg_pool).lower(x).compile()
        text = compiled.as_text("optimized")
        assert f"scale = {scale}" in text and text.count("fusion(") == fusions, text
        assert "pool (a work-item per output" in compiled.report()
        np.testing.assert_array_equal(compiled(x), cj.jit(avg_pool, backend="interpret")(x))

    def nchw_pool(x):  # the last dimension pooled: dnn.pool's variant of one feature; a relu after it stays apart
        return nn.relu(lax.reduce_window(x, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"))
    assert 'routine = "pool"' in cj.jit(nchw_pool).lower(x).compile().as_text("optimized")
    np.testing.assert_array_equal(cj.jit(nchw_pool)(x), np.maximum(x.reshape(2, 6, 3, 2, 4, 2).max(axis=(3, 5)), 0))


def test_one_kernel_text_for_pools_of_different_sizes():
    def call(shape, window, strides, padding):
        attrs = dict(library="dnn", routine="pool", solution="", reducer="max", window_dimensions=window,
                     window_strides=strides, padding=padding, base_dilation=(1,) * 4, window_dilation=(1,) * 4, scale=1.0)
        types = [TensorType("f32", shape)]
        return make_op("library_call", [Value(t) for t in types], attrs, infer_types("library_call", types, attrs))
    first = pool_kernel(call((8, 112, 112, 64), (1, 2, 2, 1), (1, 2, 2, 1), ((0, 0),) * 4), "pool").code_text()
    second = pool_kernel(call((3, 9, 7, 24), (1, 3, 3, 1), (1, 1, 2, 1), ((0, 0), (1, 1), (0, 1), (0, 0))),
                         "pool").code_text()
    assert first == second
