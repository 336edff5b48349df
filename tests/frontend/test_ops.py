"""cdnajit.ops: jax.ops's segment reductions against numpy's ufunc.at. Exact where the order does not
matter or is ufunc.at's: max/min, integer sums and products, and float sums of one run (the prim
library's segmented reduction combines each run of rows in id order, as ufunc.at does). Float
sums over several runs add the runs' partial sums: by the recursive-summation bound each order is
within (n - 1) eps sum|x| of the exact sum over the segment, so the two within twice that (numpy's
sum in f64 as the exact one). The interpreter runs the routine's reference: bit for bit the kernel,
but the graph's reduction of the runs' blocks may take another order, so held to the same bound.
"""
import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.ops as ops

RUN = 4096   # libs/prim/segments.py's RUN_LENGTH: the shortest run, for up to 256 segments (16 rows a slot)

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


def prim_calls(f, *args, routine="segment_reduce") -> int:
    return f.lower(*args).compile().as_text("optimized").count(f'routine = "{routine}"')


SEGMENT_CASES = [(np.float32, 2 * RUN + 5, 37, (3,)), (np.int64, 65 * RUN + 1, 4, ()), (np.float64, 2 * 16 * RUN + 7, 4096, ()),
                 (np.uint8, 1000, 9, (2, 2)), (np.int16, RUN + 1, 5, ()), (np.float16, 700, 6, ()),
                 (ml_dtypes.bfloat16, 300, 3, (2,)), (np.float32, 2 * 32 * 16 * RUN + 3, 20000, ())]


@pytest.mark.parametrize("name, dtype, n, segments, inner", [
    pytest.param(name, *case, marks=() if (name, case[0]) in (("segment_sum", np.float32), ("segment_max", np.int64))
                 and case[1] < 10**6 else pytest.mark.slow) for name in REDUCTIONS for case in SEGMENT_CASES])
def test_segmented_reduction_across_runs(name, dtype, n, segments, inner):
    """prim.segment_reduce over runs and workgroups (64 runs), ids out of range on both sides; 20000
    segments (runs of 2^19 rows: few runs, each a large block)."""
    rng = np.random.default_rng(1)
    data = (rng.integers(-3, 4, (n,) + inner) if np.dtype(dtype).kind in "iu" and name != "segment_prod"
            else rng.standard_normal((n,) + inner) * 2)
    if name == "segment_prod" and np.dtype(dtype).kind not in "iu":
        data = 1 + data / 64                          # products that neither overflow nor vanish
    data = data.astype(dtype)
    ids = rng.integers(-2, segments + 2, n)
    f = cj.jit(lambda d, i: getattr(ops, name)(d, i, num_segments=segments))
    assert prim_calls(f, data, ids) == 1
    got = f(data, ids)
    want = expected(name, data, ids, segments)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_segments_close(name, data, ids, segments, got, want)
    interpreted = cj.jit(lambda d, i: getattr(ops, name)(d, i, num_segments=segments), backend="interpret")
    # The graph's reduction of the runs' blocks may add them in another order than the interpreter's.
    assert_segments_close(name, data, ids, segments, got, interpreted(data, ids))


def assert_segments_close(name, data, ids, segments, got, want):
    """Exact, but for float sums and products: within the recursive-summation bound (the module docstring)."""
    n, dtype = data.shape[0], data.dtype
    inexact = dtype.kind == "f" or dtype == ml_dtypes.bfloat16
    if name in ("segment_sum", "segment_prod") and inexact:
        eps = float(ml_dtypes.finfo(dtype).eps)
        keep = (ids >= 0) & (ids < segments)
        absolute = np.zeros((segments,) + data.shape[1:])
        np.add.at(absolute, ids[keep], np.abs(data[keep].astype(np.float64)))
        if name == "segment_prod":                    # |log| errors add as the sum's: relative
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=4 * n * eps)
        else:
            assert np.all(np.abs(got.astype(np.float64) - want.astype(np.float64)) <= 2 * (n - 1) * eps * absolute + eps)
    else:
        np.testing.assert_array_equal(got, want)


RLE_CASES = [(np.int32, 9000, 3, 5000), pytest.param(np.float32, 1, 2, 1, marks=pytest.mark.slow),
             pytest.param(np.float64, 4097, 2, 3000, marks=pytest.mark.slow),
             pytest.param(np.bool_, 20000, 1, 50, marks=pytest.mark.slow),
             pytest.param(np.int8, 0, 2, 3, marks=pytest.mark.slow)]


@pytest.mark.parametrize("dtype, n, longest, size", RLE_CASES)
def test_run_length_encode_matches_numpy(dtype, n, longest, size):
    """ops.run_length_encode against numpy's heads (x[1:] != x[:-1]) and their np.diff: exact. Sizes
    across stream compaction's runs of 4096; size below and above the number of runs; NaNs."""
    rng = np.random.default_rng(3)
    x = np.repeat(rng.integers(0, 3, n), rng.integers(1, longest + 1, n))[:n].astype(dtype)
    if dtype in (np.float32, np.float64) and n > 1:
        x[rng.integers(0, n, 5)] = np.nan
    heads = np.flatnonzero(np.concatenate([[n > 0], x[1:] != x[:-1]]))
    counts = np.diff(np.append(heads, n))
    values = x[heads]
    f = cj.jit(lambda a: ops.run_length_encode(a, size=size, fill_value=7))
    got_values, got_counts = f(x)
    k = min(size, heads.size)
    want_values = np.concatenate([values[:k], np.full(size - k, 7, dtype)])
    np.testing.assert_array_equal(got_values, want_values)
    np.testing.assert_array_equal(got_counts, np.concatenate([counts[:k], np.zeros(size - k, np.int64)]))
    assert got_counts.dtype == np.int64 and f.lower(x).compile().as_text("optimized").count('routine = "select_runs"') == 2


def test_run_length_encode_without_size_outside_jit():
    values, counts = ops.run_length_encode(np.array([4, 4, 1, 4, 4, 4], np.int16))
    np.testing.assert_array_equal(values, [4, 1, 4])
    np.testing.assert_array_equal(counts, [2, 1, 3])
    with pytest.raises(ValueError, match="must be 1-d"):
        ops.run_length_encode(np.zeros((2, 2)))


@pytest.mark.parametrize("name, dtype, n, segments, inner", [
    ("segment_sum", np.float32, 2 * RUN + 5, 37, ()), ("segment_sum", np.float64, 3 * RUN + 1, 300, (3,)),
    pytest.param("segment_max", np.int32, 3 * 16 * RUN + 9, 9000, (), marks=pytest.mark.slow),
    pytest.param("segment_prod", np.float32, 3000, 4, (), marks=pytest.mark.slow),
    pytest.param("segment_min", np.float16, 0, 4, (), marks=pytest.mark.slow)])
def test_sorted_ids_fold_each_segment_in_a_register(name, dtype, n, segments, inner):
    """indices_are_sorted=True: prim.segment_reduce_sorted, sorted ids from below 0 to past the last
    segment, segments spanning runs and empty ones. For sorted ids the register's fold is the
    reference's element order, so within a run the result is numpy's exactly; float sums and
    products over several runs are held to the bound of the module docstring."""
    rng = np.random.default_rng(2)
    data = rng.standard_normal((n,) + inner) * 2
    data = (1 + data / 64 if name == "segment_prod" else data).astype(dtype)
    ids = rng.integers(-2, segments + 2, n)
    ids[n // 3:n // 2] = segments // 2                 # a segment across runs
    ids = np.sort(ids)
    f = cj.jit(lambda d, i: getattr(ops, name)(d, i, num_segments=segments, indices_are_sorted=True))
    assert prim_calls(f, data, ids, routine="segment_reduce_sorted") == 1
    got, want = f(data, ids), expected(name, data, ids, segments)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_segments_close(name, data, ids, segments, got, want)
    interpreted = cj.jit(lambda d, i: getattr(ops, name)(d, i, num_segments=segments, indices_are_sorted=True),
                         backend="interpret")
    assert_segments_close(name, data, ids, segments, got, interpreted(data, ids))


def test_complex_data_scatter():
    """Complex data combine by the graph's scatter (prim's kernels move real elements)."""
    data, ids = np.arange(10, dtype=np.complex64) * (1 + 2j), np.arange(10) * 500
    f = cj.jit(lambda d, i: ops.segment_sum(d, i, num_segments=5000))
    assert prim_calls(f, data, ids) == 0
    np.testing.assert_array_equal(f(data, ids), expected("segment_sum", data, ids, 5000))
