"""In-place scatter-adds as relaxed atomic adds (lowering/emit_indexing.py: atomic_scatter_add):
every update at once over spans of the updates, against the reference interpreter. Integer sums
(i32, u32, i64, u64, wrapping included) are exact in any order; float sums (f32, f64) are within
the bound of an unordered sum of each element's terms: |computed - exact| <= (m - 1) eps sum |terms|
for m terms (Higham's gamma bound to first order), the exact sum in float64 (whose own error, at
float64's eps, is added for f64). Indices out of range (and negative ones, which index from the
end as in JAX) follow the reference."""
import numpy as np
import pytest

import cdnajit as cj
from cdnajit.passes import run_pipeline
from cdnajit.runtime.executable import emit_kernels
from cdnajit.survey import survey

RNG = np.random.default_rng(11)


def case(dtype, n, rows, window=()):
    x = (RNG.standard_normal((n,) + window) * 10).astype(dtype)
    indices = RNG.integers(-3, n + 3, rows).astype(np.int32)
    updates = (RNG.standard_normal((rows,) + window) * 10).astype(dtype)
    if np.dtype(dtype).kind in "iu":   # large values, so that sums wrap
        info = np.iinfo(dtype)
        updates = RNG.integers(info.min // 2, info.max // 2, (rows,) + window, dtype=dtype, endpoint=True)
    return x, indices, updates


def check(dtype, n, rows, window=()):
    x, indices, updates = case(dtype, n, rows, window)
    f = lambda x, i, u: x.at[i].add(u)
    got = np.asarray(cj.jit(f, donate_argnums=0)(x.copy(), indices, updates))
    want = np.asarray(cj.jit(f, backend="interpret")(x, indices, updates))
    if np.dtype(dtype).kind in "iu":
        np.testing.assert_array_equal(got, want)
        return
    exact, scale, terms = x.astype(np.float64), np.abs(x).astype(np.float64), np.ones(x.shape)
    kept = (indices >= -n) & (indices < n)
    np.add.at(exact, indices[kept], updates[kept].astype(np.float64))
    np.add.at(scale, indices[kept], np.abs(updates[kept]).astype(np.float64))
    np.add.at(terms, indices[kept], 1)
    bound = (terms - 1) * (np.finfo(dtype).eps + np.finfo(np.float64).eps) * scale
    assert np.all(np.abs(got - exact) <= bound)
    assert np.all(np.abs(want - exact) <= bound)   # the interpreter's row order too


@pytest.mark.parametrize("dtype, n, rows, window", [
    (np.float32, 100, 5000, ()),          # many duplicates; 5000 is no multiple of the span (a tail)
    (np.int32, 7, 1000, ()),              # wrapping sums, exact
])
def test_scatter_adds_as_atomics(dtype, n, rows, window):
    check(dtype, n, rows, window)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize("n, rows, window", [(1, 2, ()), (1000, 1024, ()), (50, 4097, ()), (30, 300, (3,)),
                                             (9, 1025, (2, 5))])
def test_scatter_adds_as_atomics_long(dtype, n, rows, window):
    check(dtype, n, rows, window)


@pytest.mark.slow
def test_the_scatter_add_kernel_fills_the_gpu():
    """The survey's scatter-add of 1 Mi f32 updates: a span grid of 4 updates per work-item (16-byte
    reads of the updates and indices), no flags; a sequential scatter (a set) keeps its loop."""
    row = survey("gfx942", ["scatter_add_f32"])[-1]
    assert row.grid[0] >= 304 and row.flags == () and row.load_bytes[0] == 16
    f = lambda x, i, u: x.at[i].set(u)
    module = run_pipeline(cj.jit(f).lower(np.zeros(100, np.float32), np.zeros(50, np.int32),
                                          np.zeros(50, np.float32)).module).module
    assert "atomic" not in str(emit_kernels(module)[-1])
