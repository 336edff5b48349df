"""Solution selection: a model of each solution's time on the target, and the pick.

`pick(problem, target)` returns a `Selection`: the tuned winner when the tuning database
(tuning.py) has one for the problem's key, else the pool's solution (solutions.py) of least
modelled time (`select`). The model, per solution, on the target's published figures (ir/targets.py):
  - registers: accumulators, the fragments of one DepthU block and the staged elements, with
    weights fitted to the AMDGPU backend's counts (`estimated_vgprs`) -> VGPRs per lane; with the
    LDS of two buffers this gives waves per SIMD (the occupancy, a fraction when a CU's workgroups
    do not fill its four SIMDs, whose compute then idles);
  - compute: the padded problem (macro tiles x DepthU steps) at the matrix (MFMA) or vector
    (VALU) peak for the dtype (an MFMA at its share of it, ir/kernel_mfma.py `peak_share`: half
    on gfx950 for the f16/bf16 instructions of gfx942's K), times SUSTAINED_ISSUE, the busiest CU running ceil(tiles / CUs)
    workgroups with as many SIMDs busy as the waves it holds at once fill;
  - LDS: the bytes the staging writes and every wave reads per step, at 128 bytes per clock per
    CU (each operand's LDS layout follows its contiguous dimension, generator.py, so neither
    conflicts in the banks);
  - L2 -> CU: each workgroup's A and B panels, at 64 bytes per clock per CU;
  - HBM: A, B (and C) read once and D written once, at the HBM bandwidth; for a small-grid problem
    (below) as runtime/perf_model.py models it: at the achievable bandwidth, or at what the grid's
    requests sustain by Little's law, the bytes in flight (a DepthU block of each panel per
    workgroup in flight) over the target's memory latency;
  - latency: below 2 running waves per SIMD, nothing hides the LDS and global latency: x1.25.
The time is the largest of compute, LDS, L2 and HBM, times the latency factor; the efficiency is
the problem's own flops at the peak over that time. Ties go to fewer workgroups, then to less
padding (a 256x10 problem's four workgroups of 64x16 rather than of 64x32: the same modelled time
on the GPU, where half of the wider tile's SIMDs would multiply zeros, and half the work on the host).
Candidates: macro tiles of at least 64 along M and N, or the power of two covering a smaller M or
N (`smallest_tile_edge`); for a small-grid problem down to SMALL_TILE_EDGE. A small-grid problem
(`small_grid`) is a memory-bound one whose grid of those tiles leaves CUs idle on inputs over
LARGE_INPUT_BYTES (attention's second product, 1024x64x1024 f16 over 8 heads: 128 workgroups of
64x64 on 304 CUs), for which Tensile's libraries keep smaller tiles: the model then weighs the HBM
bandwidth a grid of few workgroups reaches against the smaller tiles' rereads of A and B.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ...ir.kernel_mfma import peak_share
from ...ir.targets import Target
from .generator import GemmProblem
from .solutions import ELEMENT_BYTES, Solution, solution_pool
from .tuning import tuned_solution

LDS_BYTES_PER_CLOCK = 128
L2_BYTES_PER_CLOCK = 64
# Calibrated against the AMDGPU backend's VGPR counts (codegen/amdgpu.py) of 128 f16 and f32 solutions
# (1024^3, those that do not spill) on gfx942, when the main loop held each accumulator about twice:
# a least-squares fit gave 2.06 per accumulator, 0.26 per fragment register, 0.62 per staged element
# and 26.5 for addresses and indices, with an RMS error of 18 VGPRs; rounded up here. The loop's MFMAs
# now accumulate in place (generator.py): on 37 kernels drawn from the f16 and f32 pools these weights
# overestimate the backend's counts by 35 VGPRs on average (about 1.1 per accumulator), so the model
# errs towards fewer waves until they are fitted again.
ACCUMULATOR_VGPRS = 2.1
FRAGMENT_VGPRS = 0.3
STAGED_VGPRS = 0.7
BASE_VGPRS = 27
LOW_OCCUPANCY_PENALTY = 1.25
HIDING_WAVES = 2              # waves per SIMD below which LOW_OCCUPANCY_PENALTY applies
# The best sustained issue rate of the matrix and vector units in a GEMM main loop (barriers, address
# and loop work between the math): rocBLAS reaches 85-92 % of the MI300X peak on large problems.
SUSTAINED_ISSUE = 0.92
LARGE_TILE_EDGE = 64
SMALL_TILE_EDGE = 16          # the MFMA instructions' least edge (16x16xK)
# Inputs from which a grid that leaves CUs idle is modelled as such (the size from which survey.py
# flags a "small grid"): their bytes come from HBM (they exceed an XCD's 4 MB L2), where a grid of
# few workgroups cannot keep enough loads in flight, and the kernel takes several launches' time.
# Smaller problems keep the large tiles and the bandwidth bound alone: they take about a launch
# whatever the tile, and the host, which runs the same kernels, runs the large tiles faster.
LARGE_INPUT_BYTES = 4 * 2**20


@dataclass(frozen=True)
class Estimate:
    solution: Solution
    vgprs: int
    waves_per_simd: float
    seconds: float
    efficiency: float               # problem flops at peak / modelled seconds
    bound: str                      # compute, lds, l2 or hbm

    def describe(self) -> str:
        return (f"{self.solution.name}: modelled {self.seconds * 1e6:.1f} us, {self.efficiency:.0%} of peak, "
                f"{self.bound}-bound, ~{self.vgprs} VGPRs, {self.waves_per_simd:g} waves/SIMD")


@dataclass(frozen=True)
class Selection:
    solution: Solution
    estimate: Estimate
    reason: str


def estimated_vgprs(solution: Solution, in_dtype: str) -> int:
    """VGPRs per lane: ACCUMULATOR_VGPRS per accumulator register, FRAGMENT_VGPRS per operand
    fragment register of one DepthU block, STAGED_VGPRS per element a work-item stages (the value
    held across the math for the prefetch), and BASE_VGPRS."""
    wide = 2 if (solution.spec.out_dtype if solution.kind == "mfma" else in_dtype) == "f64" else 1
    accumulators = solution.accumulators() * wide
    if solution.kind == "mfma":
        inst = solution.spec
        fragments = solution.depth_u // inst.k * sum(solution.blocks) * inst.a_registers
    else:
        fragments = solution.depth_u * sum(solution.thread_tile) * max(ELEMENT_BYTES[in_dtype] // 4, 1)
    staged = (solution.mt0 + solution.mt1) * solution.depth_u / solution.workgroup_items
    return math.ceil(ACCUMULATOR_VGPRS * accumulators + FRAGMENT_VGPRS * fragments + STAGED_VGPRS * staged
                     + BASE_VGPRS)


def estimate(problem: GemmProblem, solution: Solution, target: Target) -> Estimate:
    bytes_in = ELEMENT_BYTES[problem.in_dtype]
    clock = target.peak_clock_mhz * 1e6
    vgprs = estimated_vgprs(solution, problem.in_dtype)
    waves_per_group = solution.workgroup_items // target.wave_size
    lds = solution.lds_bytes(problem.in_dtype, *problem.k_contiguous)
    granule = target.vgpr_granule
    by_vgprs = min(target.max_waves_per_simd, target.vgprs_per_simd_lane // (-(-vgprs // granule) * granule))
    groups_by_lds = target.lds_bytes_per_cu // lds if lds else target.max_waves_per_simd
    groups_per_cu = max(1, min(by_vgprs * target.simds_per_cu // waves_per_group, groups_by_lds))
    # Waves per SIMD may be a fraction: one 1-wave workgroup per CU leaves three of its four SIMDs idle.
    waves_per_simd = min(by_vgprs, groups_per_cu * waves_per_group / target.simds_per_cu)

    tiles = tile_count(problem, solution)
    # The busiest CU runs ceil(tiles / CUs) workgroups, up to groups_per_cu of them at once: a small
    # problem runs fewer waves than the occupancy allows, and its idle SIMDs compute nothing.
    per_cu_groups = math.ceil(tiles / target.compute_units)
    running_waves = min(waves_per_simd, min(groups_per_cu, per_cu_groups) * waves_per_group / target.simds_per_cu)
    busy_simds = min(1.0, running_waves)
    padded_k = math.ceil(problem.k / solution.depth_u) * solution.depth_u
    unit = "matrix" if solution.kind == "mfma" else "vector"
    peak = target.peak(problem.in_dtype, unit)
    rate = peak * (peak_share(solution.instruction, target.name) if solution.kind == "mfma" else 1.0)
    tile_flops = 2 * solution.mt0 * solution.mt1 * padded_k
    # A kernel over the VGPR file would spill: modelled as never finishing, so it is never picked.
    compute = per_cu_groups * tile_flops / (rate / target.compute_units * busy_simds * SUSTAINED_ISSUE) \
        if busy_simds else math.inf
    if solution.kind == "mfma":
        lds_read = (sum(solution.wave_tile) * padded_k * bytes_in) * waves_per_group
    else:
        lds_read = (solution.mt0 + solution.mt1) * padded_k * bytes_in * solution.workgroup_items / 16
    lds_write = (solution.mt0 + solution.mt1) * padded_k * bytes_in
    lds_time = per_cu_groups * (lds_read + lds_write) / (LDS_BYTES_PER_CLOCK * clock)
    l2_time = per_cu_groups * (solution.mt0 + solution.mt1) * padded_k * bytes_in / (L2_BYTES_PER_CLOCK * clock)
    bandwidth = target.hbm_bandwidth
    if small_grid(problem, target):
        # runtime/perf_model.py's HBM bandwidth: the achievable one, or by Little's law what the
        # requests in flight sustain, each workgroup in flight having one DepthU block of its A and B
        # panels requested (the staging of the next block, issued before this block's math).
        groups_in_flight = min(tiles, target.compute_units * groups_per_cu)
        bytes_in_flight = groups_in_flight * (solution.mt0 + solution.mt1) * solution.depth_u * bytes_in
        bandwidth = min(target.achievable_hbm_bandwidth, bytes_in_flight / target.memory_latency_s)
    hbm_time = hbm_bytes(problem) / bandwidth
    times = {"compute": compute, "lds": lds_time, "l2": l2_time, "hbm": hbm_time}
    bound = max(times, key=times.get)
    seconds = times[bound] * (LOW_OCCUPANCY_PENALTY if running_waves < HIDING_WAVES else 1.0)
    efficiency = problem.flops / peak / seconds if seconds else 0.0
    return Estimate(solution, vgprs, waves_per_simd, seconds, efficiency, bound)


def smallest_tile_edge(size: int) -> int:
    """The least macro tile edge a problem dimension of `size` is given: 64, or the power of two
    that covers a smaller size (as Tensile's libraries keep small tiles for small or skinny problems,
    larger ones being the tiles whose L2 and LDS reuse the kernels are built around)."""
    return min(LARGE_TILE_EDGE, 1 << max(size - 1, 0).bit_length())


def small_grid(problem: GemmProblem, target: Target) -> bool:
    """Whether the grid of the problem's least large tiles (`smallest_tile_edge`) leaves CUs idle on
    inputs over LARGE_INPUT_BYTES, the problem being memory-bound. A compute-bound problem keeps the
    large tiles: a smaller tile issues more loads, LDS traffic and barriers per MFMA than the tiles
    SUSTAINED_ISSUE and the VGPR weights were calibrated on, so the compute term would flatter it.
    A grid that fills the CUs is charged the peak bandwidth alone, as its picks were measured (the
    benchmarks' GEMMs): `estimate`'s Little's-law bound counts one DepthU block per workgroup in
    flight and no L2 hit, a floor that would rank such a grid's candidates by DepthU."""
    grid = math.ceil(problem.m / smallest_tile_edge(problem.m)) * math.ceil(problem.n / smallest_tile_edge(problem.n))
    return (grid * problem.batch < target.compute_units and input_bytes(problem) > LARGE_INPUT_BYTES
            and memory_bound(problem, target))


def memory_bound(problem: GemmProblem, target: Target) -> bool:
    """Whether the problem is below the target's ridge point: its HBM bytes take longer at the
    bandwidth than its flops at the matrix peak."""
    return hbm_bytes(problem) / target.hbm_bandwidth > problem.flops / target.peak(problem.in_dtype, "matrix")


def candidates(problem: GemmProblem, target: Target) -> list[Solution]:
    """The pool's solutions with macro tiles fit for the problem's sizes: from `smallest_tile_edge`,
    or from SMALL_TILE_EDGE for a small-grid problem."""
    edge_m, edge_n = smallest_tile_edge(problem.m), smallest_tile_edge(problem.n)
    if small_grid(problem, target):
        edge_m, edge_n = min(edge_m, SMALL_TILE_EDGE), min(edge_n, SMALL_TILE_EDGE)
    return [s for s in solution_pool(problem.in_dtype, problem.compute_dtype, target)
            if s.mt0 >= edge_m and s.mt1 >= edge_n]


def ranked(problem: GemmProblem, target: Target) -> list[Estimate]:
    """The candidates' estimates, fastest first (ties: fewer workgroups, less padding, waves per SIMD up
    to HIDING_WAVES, larger instructions). A second wave per SIMD hides the global and LDS latency
    the model leaves out when the grid is too small to run them all (a 256^3 f64 GEMM: 16 workgroups
    of DepthU 8 or 16, at 3 or 1 waves per SIMD)."""
    pool = candidates(problem, target)
    if not pool:
        raise NotImplementedError(f"blas: no GEMM solution for {problem.in_dtype} inputs accumulated in "
                                  f"{problem.compute_dtype} on {target.name}")
    estimates = [estimate(problem, s, target) for s in pool]
    # Solutions over the VGPR budget (modelled as never finishing) go only when nothing else fits.
    fitting = [e for e in estimates if math.isfinite(e.seconds)] or estimates
    return sorted(fitting, key=lambda e: (e.seconds, tile_count(problem, e.solution), padded_area(problem, e.solution),
                                          -min(e.waves_per_simd, HIDING_WAVES), -e.solution.global_read_vector_width,
                                          -instruction_size(e.solution),
                                          e.solution.name))


def input_bytes(problem: GemmProblem) -> int:
    """The bytes the kernel reads: A and B, and C when beta != 0."""
    c_bytes = problem.m * problem.n * ELEMENT_BYTES.get(problem.result_dtype, 4) if problem.beta != 0 else 0
    return problem.batch * ((problem.m + problem.n) * problem.k * ELEMENT_BYTES[problem.in_dtype] + c_bytes)


def hbm_bytes(problem: GemmProblem) -> int:
    """The bytes the kernel moves to and from HBM: its inputs read once, D written once."""
    return input_bytes(problem) + problem.batch * problem.m * problem.n * ELEMENT_BYTES.get(problem.result_dtype, 4)


def tile_count(problem: GemmProblem, solution: Solution) -> int:
    """Workgroups of the problem's grid."""
    return math.ceil(problem.m / solution.mt0) * math.ceil(problem.n / solution.mt1) * problem.batch


def padded_area(problem: GemmProblem, solution: Solution) -> int:
    """Elements of D the grid computes, padding included."""
    return tile_count(problem, solution) * solution.mt0 * solution.mt1


def instruction_size(solution: Solution) -> int:
    """Multiply-adds per operand register of the solution's instruction (0 for VALU): among equal
    estimates the larger MFMA reads fewer registers per multiply (32x32x2: 2048 per A and B
    register, 16x16x4: 1024), leaving register-file bandwidth to the rest of the loop."""
    if solution.kind != "mfma":
        return 0
    inst = solution.spec
    return inst.m * inst.n * inst.k * inst.blocks // (inst.a_registers + inst.b_registers)


def select(problem: GemmProblem, target: Target, tuned: Solution | None = None) -> Selection:
    """The solution for `problem` on `target`: `tuned` (the tuning database's) when given, else the
    model's fastest."""
    if tuned is not None:
        est = estimate(problem, tuned, target)
        return Selection(tuned, est, f"tuned: the fastest measured for {problem.describe()} (blas.tune)")
    best = ranked(problem, target)[0]
    return Selection(best.solution, best, f"heuristic: least modelled time of {len(candidates(problem, target))} "
                                          f"solutions for {problem.describe()} on {target.name} ({best.bound}-bound, "
                                          f"{best.efficiency:.0%} of peak)")


def pick(problem: GemmProblem, target: Target) -> Selection:
    """The solution a library call of `problem` runs on `target`: the tuning database's winner for
    it, else the model's fastest."""
    return select(problem, target, tuned_solution(problem, target))
