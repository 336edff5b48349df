"""The GEMM heuristic's model (libs/blas/heuristic.py) on gfx942: what it charges for registers,
LDS bank conflicts, occupancy, small problems and small grids on large inputs, and what it picks."""
import pytest

from cdnajit.ir.targets import get_target
from cdnajit.libs.blas.generator import GemmProblem, gemm_call
from cdnajit.libs.blas.heuristic import (LOW_OCCUPANCY_PENALTY, candidates, estimate, estimated_vgprs, hbm_bytes, pick,
                                         ranked, select, small_grid, smallest_tile_edge, tile_count)
from cdnajit.libs.blas.solutions import solution_by_name

GFX942 = get_target("gfx942")


def problem(m, n, k, dtype="f32", result="f32", trans_a=False, trans_b=False, batch=1):
    return GemmProblem.from_op(gemm_call(m, n, k, dtype, result, batch=batch, trans_a=trans_a, trans_b=trans_b))


def solution(name, dtype="f32"):
    return solution_by_name(name, dtype, "f32", GFX942)


def test_registers_grow_with_the_tile():
    small = solution("Cijk_MT64x64x16_MI32x32x2_W2x2_GRVW1_PAD4")
    large = solution("Cijk_MT128x128x16_MI32x32x2_W2x2_GRVW1_PAD4")
    assert estimated_vgprs(small, "f32") < estimated_vgprs(large, "f32")


def test_the_lds_layout_follows_each_operands_contiguous_dimension():
    s = solution("Cijk_MT64x64x16_MI32x32x2_W2x2_GRVW1_PAD4")
    assert s.local_read_vector_width == 4                            # a lane reads 4 K values at once
    assert s.lds_tile(64, k_contiguous=True) == 64 * (16 + 4)       # row-major: DepthU + 4 per row
    assert s.lds_tile(64, k_contiguous=False) == 16 * (64 + 4)      # K-major: rows + pad per K value
    packed = solution("Cijk_MT64x64x16_MI32x32x8_W2x2_GRVW1_PAD4", "f16")
    assert packed.lds_tile(64, k_contiguous=True) == packed.lds_tile(64, k_contiguous=False)  # f16: K-major
    nn, tn = problem(1024, 1024, 1024), problem(1024, 1024, 1024, trans_a=True)
    assert nn.k_contiguous == (True, False) and tn.k_contiguous == (False, False)
    # Neither layout transposes in staging, so neither pays bank conflicts: the same modelled time.
    assert estimate(nn, s, GFX942).seconds == estimate(tn, s, GFX942).seconds


def test_a_one_wave_workgroup_leaves_simds_idle():
    one_wave = solution("Cijk_MT64x64x32_MI32x32x2_W1x1_GRVW1_PAD4")
    est = estimate(problem(4096, 4096, 4096), one_wave, GFX942)
    assert est.waves_per_simd < 1


def test_small_problems_get_small_tiles_and_large_ones_large_tiles():
    assert ranked(problem(256, 10, 1024), GFX942)[0].solution.mt1 <= 32
    big = ranked(problem(4096, 4096, 4096, "f16"), GFX942)[0]
    assert big.solution.kind == "mfma" and big.solution.mt0 * big.solution.mt1 >= 128 * 64
    assert 0.8 < big.efficiency < 0.95       # rocBLAS reaches 85-92 % on this problem


def test_among_equal_estimates_less_padding_wins():
    """256x10: four workgroups either way; a 64x16 tile pads N to 16 where 64x32 pads it to 32."""
    ranking = ranked(problem(256, 10, 1024), GFX942)
    best = ranking[0]
    tied = [e for e in ranking if e.seconds == best.seconds]
    assert any(e.solution.mt1 == 32 for e in tied)   # the wider tile is modelled as fast
    assert (best.solution.mt0, best.solution.mt1) == (64, 16)


def test_a_tuned_solution_wins_and_says_so():
    p = problem(100, 100, 100)
    valu = solution("Cijk_MT64x64x16_TT4x4_VALU_GRVW1_PAD4")
    chosen = select(p, GFX942, valu)
    assert chosen.solution == valu and chosen.reason.startswith("tuned")
    assert pick(p, GFX942).reason.startswith("heuristic")   # the test cache holds no tuning database


def test_a_small_grid_on_large_inputs_takes_smaller_tiles_that_fill_the_cus():
    """Attention's second product, 1024x64x1024 f16 over 8 heads (17 MiB of inputs, memory-bound):
    64x64 tiles make 128 workgroups for 304 CUs, whose bytes in flight cannot reach the HBM
    bandwidth; smaller tiles fill the CUs and are modelled faster."""
    p = problem(1024, 64, 1024, "f16", "f16", batch=8)
    assert small_grid(p, GFX942)
    assert min(s.mt0 for s in candidates(p, GFX942)) == min(s.mt1 for s in candidates(p, GFX942)) == 16
    best = ranked(p, GFX942)[0]
    assert tile_count(p, best.solution) >= GFX942.compute_units and best.bound == "hbm"
    large = [e for e in ranked(p, GFX942) if min(e.solution.mt0, e.solution.mt1) >= 64]
    assert tile_count(p, large[0].solution) < GFX942.compute_units
    assert best.seconds < large[0].seconds
    assert pick(p, GFX942).reason.startswith("heuristic")


def test_littles_law_bounds_a_small_grids_bandwidth_by_its_bytes_in_flight():
    """The same problem on 32x32 tiles: DepthU 16 keeps a quarter of DepthU 64's bytes in flight."""
    p = problem(1024, 64, 1024, "f16", "f16", batch=8)
    shallow = estimate(p, solution("Cijk_MT32x32x16_MI16x16x16_W2x2_GRVW1_PAD4", "f16"), GFX942)
    deep = estimate(p, solution("Cijk_MT32x32x64_MI16x16x16_W2x2_GRVW8_PAD4", "f16"), GFX942)
    assert shallow.bound == deep.bound == "hbm"
    assert shallow.seconds > 2 * deep.seconds
    assert deep.seconds >= hbm_bytes(p) / GFX942.achievable_hbm_bandwidth


@pytest.mark.parametrize("m, n, k, batch, dtype", [
    (256, 256, 256, 1, "f32"),      # small inputs
    (64, 64, 64, 1, "f16"),
    (100, 300, 50, 1, "f32"),
    (1024, 1024, 1024, 1, "f32"),   # 256 workgroups of 64x64 on 8 MiB, but compute-bound
    (4096, 4096, 4096, 1, "f16"),   # a grid that fills the CUs
    (1024, 1024, 64, 8, "f16"),     # attention's first product: 512 workgroups of 128x128
])
def test_other_problems_keep_the_large_tiles_and_the_peak_bandwidth(m, n, k, batch, dtype):
    p = problem(m, n, k, dtype, dtype, batch=batch)
    assert not small_grid(p, GFX942)
    assert all(s.mt0 >= smallest_tile_edge(m) and s.mt1 >= smallest_tile_edge(n) for s in candidates(p, GFX942))
    for e in ranked(p, GFX942)[:5]:
        if e.bound == "hbm":
            assert e.seconds <= hbm_bytes(p) / GFX942.hbm_bandwidth * LOW_OCCUPANCY_PENALTY
