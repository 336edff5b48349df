"""libs/prim's kernels that work a wave at a time: stream compaction (select.py) and the radix
sort's scatter (radix.py), ranking by wave ballots (WaveBallot, WaveCountBelow), and the segmented
scan of integers (segmented_waves.py), scanning across lanes by shuffles. All exact: compaction
and sorts only move values, and integer scans wrap or pick, so results equal numpy's bit for bit,
over sizes that end inside a stripe of 64, at a run's end (4096) and across runs."""
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.codegen import amdgpu
from cdnajit.ir.targets import get_target
from cdnajit.lowering.emitters import emit_kernel
from cdnajit.passes.manager import DEFAULT_PIPELINE, run_pipeline

RUN, STRIPE = 4096, 64
SIZES = [0, 1, 63, 64, 65, RUN - 1, RUN, RUN + 1, 3 * RUN + STRIPE + 5]


def compaction(condition, values, size):
    return (cnp.nonzero(condition, size=size, fill_value=-1)[0],
            cnp.compress(condition, values, axis=0, size=size, fill_value=7))


def numpy_compaction(condition, values, size):
    index = np.full(size, -1)
    chosen = np.flatnonzero(condition)[:size]
    index[:chosen.size] = chosen
    picked = np.full((size,) + values.shape[1:], 7, values.dtype)
    picked[:chosen.size] = values[chosen]
    return index, picked


def check_sizes(dtype, inner, densities, sizes=SIZES, cuts=(True, False)):
    """Every size of `sizes` with a result shorter (cut) and longer (filled) than the selection:
    one kernel per dtype serves them all (sizes are scalar parameters)."""
    rng = np.random.default_rng(11)
    for n in sizes:
        for density in densities:
            condition = rng.random(n) < density
            values = rng.integers(-100, 100, (n,) + inner).astype(dtype)
            count = int(condition.sum())
            for size in [max(count // 2, 1) if cut else count + 70 for cut in cuts]:
                f = cj.jit(lambda c, v: compaction(c, v, size))
                got_index, got_values = f(condition, values)
                want_index, want_values = numpy_compaction(condition, values, size)
                np.testing.assert_array_equal(got_index, want_index, err_msg=f"n {n}, size {size}")
                assert got_values.dtype == want_values.dtype
                np.testing.assert_array_equal(got_values, want_values, err_msg=f"n {n}, size {size}")


def test_compaction_across_stripes_and_runs():
    check_sizes("int16", (), (0.4,), sizes=(3 * RUN + STRIPE + 5,), cuts=(True,))
    check_sizes("int16", (), (0.4,), sizes=(RUN + 1,), cuts=(False,))
    report = cj.jit(lambda c, v: compaction(c, v, 9)).lower(np.ones(RUN + 1, bool), np.ones(RUN + 1, np.int16)).compile()
    assert "ranked by ballot" in report.report()


@pytest.mark.slow
@pytest.mark.parametrize("dtype, inner", [("int8", (3,)), ("float64", ()), ("uint64", (2, 2)), ("bool", ())])
def test_compaction_of_every_width_and_density(dtype, inner):
    check_sizes(dtype, inner, (0.0, 0.03, 0.5, 1.0))


def select_kernel():
    graph = cj.make_graph(lambda a: cnp.nonzero(a, size=100)[0])(np.zeros(5000, np.float32))
    (call,) = [op for op in run_pipeline(graph, DEFAULT_PIPELINE).module.body.ops
               if op.name == "library_call" and op.attrs["routine"] == "select_runs"]
    return emit_kernel(call, "k")


@pytest.mark.slow
def test_compaction_ranks_by_ballot_and_mbcnt_on_gfx942():
    kernel = select_kernel()
    text = amdgpu.assembly(kernel, get_target("gfx942"))
    assert "v_mbcnt_lo_u32_b32" in text and "v_mbcnt_hi_u32_b32" in text
    assert "v_readlane_b32" in text    # the stripe's count: a shuffle from one lane, which LLVM reads by readlane
    resources = amdgpu.resources(kernel, get_target("gfx942"))
    assert resources.vgpr_spill_count == 0 and resources.sgpr_spill_count == 0


@pytest.mark.slow
@pytest.mark.parametrize("dtype, shape, routine", [
    (np.float32, (1 << 17,), "radix_scatter"), (np.int64, (1 << 17,), "radix_scatter"),
    (np.float16, (1 << 17,), "radix_scatter"), (np.float32, (10, 3000), "radix_sort_rows"),
    (np.float64, (10, 3000), "radix_sort_rows")])
def test_radix_sort_ranks_by_matching_on_gfx942(dtype, shape, routine):
    """The radix sort's scatter and its whole-row sort: a wave per run (row) ranking keys by 8
    ballots and mbcnt, 256 digit counters in 1 KiB of LDS, no spills; the report names the ranking."""
    x = np.ones(shape, dtype)
    graph = cj.make_graph(cnp.sort)(x)
    calls = [op for op in run_pipeline(graph, DEFAULT_PIPELINE).module.body.ops
             if op.name == "library_call" and op.attrs["routine"] == routine]
    assert calls
    kernel = emit_kernel(calls[0], "k")
    assert kernel.lds_bytes == 256 * 4
    resources = amdgpu.resources(kernel, get_target("gfx942"))
    assert resources.vgpr_spill_count == 0 and resources.sgpr_spill_count == 0
    text = amdgpu.assembly(kernel, get_target("gfx942"))
    assert "v_mbcnt_lo_u32_b32" in text and "v_mbcnt_hi_u32_b32" in text
    # A workgroup of one wave: LLVM drops its barriers (a wave's LDS accesses stay in order).
    assert "ds_read_b32" in text and "ds_write_b32" in text
    if routine == "radix_sort_rows":
        assert "ds_add_u32" in text or "ds_add_rtn_u32" in text     # each pass's block histogram
    assert "ranked by" in cj.jit(cnp.sort).lower(x).compile().report()


def segmented_reference(x, heads, reducer, exclusive):
    """numpy's accumulate over each segment of each row (a row's first element starts one), in a
    wide integer wrapped back to x's dtype, as the kernels' accumulator wraps."""
    ufunc = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[reducer]
    wide = x.astype(np.uint64 if x.dtype.kind == "u" else np.int64)
    out = np.empty_like(wide)
    for r in range(x.shape[0]):
        starts = sorted({0, *np.flatnonzero(heads[r])})
        for a, b in zip(starts, starts[1:] + [x.shape[1]]):
            out[r, a:b] = ufunc.accumulate(wide[r, a:b])
    return out.astype(x.dtype)


def check_segmented(dtype, shape, reducer, exclusive):
    """Against numpy (inclusive) and the interpreter's reference (both forms: its identity for the
    exclusive first element of a segment); the wave kernel must serve the call."""
    import cdnajit.ops as ops
    rng = np.random.default_rng(3)
    x = rng.integers(-9, 10, shape).astype(dtype) if np.dtype(dtype).kind != "b" else rng.random(shape) < 0.5
    heads = rng.random(shape) < 0.02
    heads[:, [p for p in (63, 64, 127, 255, RUN, RUN + 64) if p < shape[1]]] = True   # heads at stripes' edges
    heads[0, :] = False                                                              # a row without heads
    f = lambda a, h: ops.segmented_scan(a, h, reducer=reducer, exclusive=exclusive, axis=1)
    compiled = cj.jit(f)
    assert "segmented_scan_runs_waves_w64" in compiled.lower(x, heads).compile().as_text("optimized")
    got = compiled(x, heads)
    if not exclusive:
        np.testing.assert_array_equal(got, segmented_reference(x, heads, reducer, exclusive))
    np.testing.assert_array_equal(got, cj.jit(f, backend="interpret")(x, heads))


def test_segmented_integer_scan_by_waves():
    check_segmented("int32", (3, RUN + STRIPE + 7), "sum", False)    # runs: the carries cross runs and stripes


@pytest.mark.slow
@pytest.mark.parametrize("dtype, shape, reducer, exclusive", [
    ("int32", (3, 2 * RUN + 5), "sum", True), ("int8", (2, 1000), "sum", False), ("uint16", (4, 300), "max", True),
    ("int64", (2, 3 * RUN + 65), "min", False), ("uint64", (2, 700), "prod", True), ("int16", (1, 4 * STRIPE), "max", False)])
def test_segmented_integer_scans_of_every_width(dtype, shape, reducer, exclusive):
    check_segmented(dtype, shape, reducer, exclusive)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_segmented_wave_scan_shuffles_on_gfx942(dtype):
    """gfx942: the lanes' steps are ds_bpermute, the carry a readlane; no spills."""
    import cdnajit.ops as ops
    graph = cj.make_graph(lambda a, h: ops.segmented_scan(a, h))(np.ones(3 * RUN, dtype), np.ones(3 * RUN, bool))
    calls = [op for op in run_pipeline(graph, DEFAULT_PIPELINE).module.body.ops
             if op.name == "library_call" and op.attrs["solution"] == "segmented_scan_runs_waves_w64"]
    assert len(calls) == 1      # the runs (their 3 carries: a work-item per row)
    for call in calls:
        kernel = emit_kernel(call, "k")
        resources = amdgpu.resources(kernel, get_target("gfx942"))
        assert resources.vgpr_spill_count == 0 and resources.sgpr_spill_count == 0
        text = amdgpu.assembly(kernel, get_target("gfx942"))
        assert "ds_bpermute_b32" in text and "v_readlane_b32" in text


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_top_k_wave_per_row_on_gfx942(dtype):
    """gfx942: the lanes' lists in LDS, the rounds' choices by wave reductions (DPP and swizzles,
    no LDS exchange for them), no spills."""
    import cdnajit.lax as lax
    graph = cj.make_graph(lambda a: lax.top_k(a, 8))(np.ones((4, 3000), dtype))
    (call,) = [op for op in run_pipeline(graph, DEFAULT_PIPELINE).module.body.ops
               if op.name == "library_call" and op.attrs["routine"] == "top_k_rows"]
    kernel = emit_kernel(call, "k")
    resources = amdgpu.resources(kernel, get_target("gfx942"))
    assert resources.vgpr_spill_count == 0 and resources.sgpr_spill_count == 0
    text = amdgpu.assembly(kernel, get_target("gfx942"))
    assert "ds_swizzle_b32" in text and "quad_perm" in text    # the butterfly's swizzles and DPP steps
    assert "ds_write" in text and "ds_read" in text
