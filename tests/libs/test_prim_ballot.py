"""libs/prim's kernels that rank by wave ballots (WaveBallot, WaveCountBelow): stream compaction
(select.py). Exact: values only move, so results equal numpy's selection bit for bit, over sizes
that end inside a stripe of 64, at a run's end (4096) and across runs."""
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
