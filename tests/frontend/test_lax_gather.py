"""lax.gather and the scatter family against a loop oracle written from XLA's operation semantics,
eagerly and under jit, over window shapes, batching dimensions, index dtypes, modes and empty cases."""
import itertools

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax

RNG = np.random.default_rng(11)
GDN, SDN = lax.GatherDimensionNumbers, lax.ScatterDimensionNumbers


def window_start(indices, batch, index_map, operand_shape, window, clip):
    """Per operand dimension, the start of one window, and whether it lies wholly in bounds."""
    start, ok = [0] * len(operand_shape), True
    for k, d in enumerate(index_map):
        s = int(indices[tuple(batch) + (k,)])
        limit = operand_shape[d] - window[d]
        if clip:
            s = min(max(s, 0), limit)
        ok &= 0 <= s <= limit
        start[d] = s
    return start, ok


def gather_oracle(operand, indices, dn, slice_sizes, clip, fill):
    batch_shape = indices.shape[:-1]
    windowed = [d for d in range(operand.ndim) if d not in dn.collapsed_slice_dims + dn.operand_batching_dims]
    out_rank = len(batch_shape) + len(windowed)
    batch_positions = [p for p in range(out_rank) if p not in dn.offset_dims]
    shape = [0] * out_rank
    for p, size in zip(batch_positions, batch_shape):
        shape[p] = size
    for p, d in zip(sorted(dn.offset_dims), windowed):
        shape[p] = slice_sizes[d]
    out = np.empty(shape, operand.dtype)
    for position in itertools.product(*map(range, shape)):
        batch = [position[p] for p in batch_positions]
        start, ok = window_start(indices, batch, dn.start_index_map, operand.shape, slice_sizes, clip)
        for d, j in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
            start[d] = batch[j]
        for d, p in zip(windowed, sorted(dn.offset_dims)):
            start[d] += position[p]
        out[position] = operand[tuple(start)] if ok else fill
    return out


def scatter_oracle(operand, indices, updates, dn, combine, clip):
    out = operand.copy()
    windowed = [d for d in range(operand.ndim) if d not in dn.inserted_window_dims + dn.operand_batching_dims]
    scatter_positions = [p for p in range(updates.ndim) if p not in dn.update_window_dims]
    window = [1] * operand.ndim
    for d, p in zip(windowed, sorted(dn.update_window_dims)):
        window[d] = updates.shape[p]
    for position in itertools.product(*map(range, updates.shape)):
        batch = [position[p] for p in scatter_positions]
        start, ok = window_start(indices, batch, dn.scatter_dims_to_operand_dims, operand.shape, window, clip)
        if not ok:
            continue
        for d, j in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims):
            start[d] = batch[j]
        for d, p in zip(windowed, sorted(dn.update_window_dims)):
            start[d] += position[p]
        out[tuple(start)] = combine(out[tuple(start)], updates[position])
    return out


def eager_and_jit(fn, *args):
    eager = fn(*args)
    np.testing.assert_array_equal(cj.jit(fn)(*args), eager)
    return eager


# (operand shape, indices shape, dimension numbers, slice sizes)
GATHERS = [
    ((7,), (4, 1), GDN((), (0,), (0,)), (1,)),                           # x[idx]
    ((5, 6), (3, 1), GDN((1,), (0,), (0,)), (1, 6)),                     # rows
    ((5, 6), (2, 3, 2), GDN((2, 3), (), (0, 1)), (2, 3)),                # 2-D windows, 2-D batch
    ((5, 6), (4, 1), GDN((0,), (0,), (1,)), (1, 2)),                     # offset dim before the batch dim
    ((3, 4, 5), (3, 2, 1), GDN((2,), (2,), (2,), (0,), (0,)), (1, 2, 1)),  # batching dimensions
    ((4, 3), (0, 1), GDN((1,), (0,), (0,)), (1, 3)),                     # no indices
    ((4, 3), (2, 0), GDN((0, 1), (), ()), (2, 2)),                       # empty index vectors
]


@pytest.mark.parametrize("case", GATHERS, ids=range(len(GATHERS)))
@pytest.mark.parametrize("mode", [None, "clip", "fill"])
@pytest.mark.parametrize("dtype, index_dtype", [(np.float32, np.int32), (np.int64, np.int8), (np.bool_, np.uint32)])
def test_gather(case, mode, dtype, index_dtype):
    shape, index_shape, dn, slice_sizes = case
    operand = (RNG.standard_normal(shape) * 5).astype(dtype)
    high = 9 if index_dtype != np.uint32 else 9
    low = 0 if index_dtype == np.uint32 else -3
    indices = RNG.integers(low, high, index_shape).astype(index_dtype)
    got = eager_and_jit(lambda x, i: lax.gather(x, i, dn, slice_sizes, mode=mode), operand, indices)
    fill = {np.float32: np.nan, np.int64: np.iinfo(np.int64).min, np.bool_: True}[dtype]
    want = gather_oracle(operand, indices, dn, slice_sizes, clip=mode != "fill", fill=fill)
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_gather_fill_value_and_errors():
    x = np.arange(10.0)
    dn = GDN((1,), (), (0,))
    got = lax.gather(x, np.array([[0], [8], [-1]]), dn, (3,), mode="fill", fill_value=-3)
    np.testing.assert_array_equal(got, [[0, 1, 2], [-3, -3, -3], [-3, -3, -3]])
    with pytest.raises(cj.TracingValueError, match="slice_sizes"):
        lax.gather(x, np.array([[0]]), dn, (11,))
    with pytest.raises(cj.TracingTypeError, match="indices must be integers"):
        lax.gather(x, np.array([[0.0]]), dn, (3,))
    with pytest.raises(cj.TracingValueError, match="mode"):
        lax.gather(x, np.array([[0]]), dn, (3,), mode="wrap")


# (operand shape, indices shape, updates shape, dimension numbers)
SCATTERS = [
    ((7,), (5, 1), (5,), SDN((), (0,), (0,))),
    ((5, 6), (3, 1), (3, 6), SDN((1,), (0,), (0,))),
    ((5, 6), (2, 2), (2, 2, 3), SDN((1, 2), (), (0, 1))),
    ((3, 4, 5), (3, 2, 1), (3, 2, 2), SDN((2,), (2,), (2,), (0,), (0,))),
    ((4, 3), (0, 1), (0, 3), SDN((1,), (0,), (0,))),
]
COMBINES = {"scatter": lambda a, b: b, "scatter_add": np.add, "scatter_sub": np.subtract,
            "scatter_mul": np.multiply, "scatter_min": np.minimum, "scatter_max": np.maximum}


@pytest.mark.parametrize("case", SCATTERS, ids=range(len(SCATTERS)))
@pytest.mark.parametrize("name", sorted(COMBINES))
@pytest.mark.parametrize("mode", [None, "clip"])
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_scatter(case, name, mode, dtype):
    shape, index_shape, update_shape, dn = case
    operand = (RNG.standard_normal(shape) * 5).astype(dtype)
    updates = (RNG.standard_normal(update_shape) * 5).astype(dtype)
    indices = RNG.integers(-2, 8, index_shape).astype(np.int32)
    if name == "scatter" and index_shape[0]:   # repeated windows leave `set` unordered in XLA: keep them apart
        indices = indices[:1]
        updates = updates[:1]
    fn = getattr(lax, name)
    got = eager_and_jit(lambda x, i, u: fn(x, i, u, dn, mode=mode), operand, indices, updates)
    want = scatter_oracle(operand, indices, updates, dn, COMBINES[name], clip=mode == "clip")
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_scatter_apply_applies_once_per_hit():
    dn = SDN((), (0,), (0,))
    got = eager_and_jit(lambda x, i: lax.scatter_apply(x, i, lambda v: v * 2, dn, update_shape=(3,)),
                        np.ones(4), np.array([[0], [0], [2]]))
    np.testing.assert_array_equal(got, [4, 1, 2, 1])   # JAX's answer
    with pytest.raises(cj.TracingTypeError, match="dtypes|one dtype"):
        lax.scatter_add(np.ones(3), np.array([[0]]), np.ones(1, np.float32), dn)
