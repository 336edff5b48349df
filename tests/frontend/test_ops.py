"""cdnajit.ops: jax.ops's segment reductions against numpy's ufunc.at (exact: each segment combines
its rows in id order, as ufunc.at does, and max/min/integer sums are exact in any order)."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.ops as ops

REDUCTIONS = {"segment_sum": (np.add, 0), "segment_prod": (np.multiply, 1),
              "segment_max": (np.maximum, None), "segment_min": (np.minimum, None)}


def expected(name, data, ids, num_segments):
    ufunc, identity = REDUCTIONS[name]
    if identity is None:
        info = np.iinfo(data.dtype) if data.dtype.kind in "iu" else np.finfo(data.dtype)
        identity = info.min if name == "segment_max" else info.max
        if data.dtype.kind == "f":
            identity = -np.inf if name == "segment_max" else np.inf
    result = np.full((num_segments,) + data.shape[1:], identity, data.dtype)
    keep = (ids >= 0) & (ids < num_segments)  # JAX drops ids outside the segments, negative ones too
    ufunc.at(result, ids[keep], data[keep])
    return result


@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_segment_reductions_match_ufunc_at(name, dtype):
    rng = np.random.default_rng(0)
    data = rng.integers(-3, 4, (40, 2)).astype(dtype)
    ids = rng.integers(-2, 7, 40)
    got = cj.jit(lambda d, i: getattr(ops, name)(d, i, num_segments=6))(data, ids)
    np.testing.assert_array_equal(got, expected(name, data, ids, 6))


def test_num_segments_from_concrete_ids_outside_jit():
    np.testing.assert_array_equal(ops.segment_sum(np.arange(5.0), np.array([0, 0, 2, 2, 2])), [1.0, 0.0, 9.0])


def test_traced_ids_need_num_segments():
    with pytest.raises(cj.ConcretizationError, match="num_segments must be given"):
        cj.jit(lambda d, i: ops.segment_sum(d, i))(np.ones(3), np.zeros(3, np.int32))


def test_ids_must_match_the_rows():
    with pytest.raises(cj.TracingValueError, match=r"segment_ids of shape \(2,\) must have one id per row"):
        ops.segment_max(np.ones((3, 2)), np.zeros(2, np.int32), num_segments=2)
