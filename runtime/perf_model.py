"""The performance model of one kernel launch on a CDNA target, derived from the kernel itself.

The roofline (runtime/roofline.py) says what a kernel must do; this model says how long the
GPU takes to do it the way the kernel does it, and what limits it. Its inputs are the counts of
the roofline walk (FLOPs, MFMA FLOPs, LDS bytes, barriers, and per global access its bytes and
the 64-byte segments a sample wave touches), the launch (grid and workgroup size) and the
occupancy the backend's registers and LDS allow (runtime/occupancy.py). Each term is a time;
the launch's time is the launch cost plus the largest term, and that term is the limiter (or
"launch" when the launch cost exceeds them all):

- parallelism: workgroups resident at once = CUs x workgroups per CU (the occupancy); a grid
  of fewer workgroups than CUs leaves CUs idle, and the last of several rounds runs partly empty
  (its "tail"). Every per-CU rate below counts only the CUs the grid keeps busy.
- hbm: the bytes that reach DRAM (each buffer's issued bytes, at most its size: the 256 MB
  Infinity Cache serves rereads) at the achievable HBM bandwidth, or at what the waves in flight
  can request: by Little's law, bandwidth = bytes in flight / latency, bytes in flight = resident
  waves x the global loads a wave issues before it waits for the first (its straight-line loads)
  x the bytes one such wave load moves. Narrow loads move few bytes each, so a kernel of one
  2-byte load per lane needs 8x the waves of one of 16 bytes to keep HBM busy.
- cache: the issued bytes (whole 64-byte segments: an uncoalesced or strided access moves a
  segment for each element it uses) beyond the DRAM bytes. The unused parts of segments of a
  buffer larger than an XCD's L2 (4 MB) come back from the Infinity Cache at its bandwidth (the
  neighbours a strided access skips are read long after); the rest (tiles reread by workgroups
  running together) from the L2 at its bandwidth.
- cu memory: each busy CU's vector memory path moves at most 64 bytes per clock (one segment).
- lds: LDS bytes at 128 bytes per clock per busy CU, each access's bytes times its bank conflict
  degree in a sample wave (runtime/roofline.py's `bank_conflict`).
- vector, matrix: FLOPs at the unit's peak times the fraction of SIMDs holding a wave; each MFMA
  instruction's FLOPs at its share of the matrix peak (ir/kernel_mfma.py `peak_share`: gfx942's
  f16/bf16 instructions reach half of gfx950's).
- latency: a workgroup that waits for its global loads before a barrier (load, write LDS,
  barrier, compute: a "load phase", once per trip of such a loop; not a GEMM's staging of the
  next tile, whose loads wait after this tile's MFMAs: roofline.prefetched) pays a memory latency per
  phase (the L2's for bytes reread from it, HBM's for the rest), hidden only by the other
  workgroups its CU holds: workgroups per CU x phases x latency / workgroups in flight per CU.

MI300X figures: peaks, CUs and HBM bandwidth from ir/targets.py (AMD's data sheet), which also keeps
the memory latency under load and the achievable HBM fraction (calibrated; libs/blas's GEMM heuristic
shares them); the L2 of
2 KB per clock per XCD (16 channels of 128 bytes) over 8 XCDs, 4 MB each, and the Infinity
Cache's 17.2 TB/s peak (AMD CDNA 3 white paper); the
achievable HBM fraction (copy kernels reach about 81 % of the 5.3 TB/s) and the constants
below are calibrated against the published figures in tests/runtime/test_perf_model.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..ir.kernel import Kernel
from ..ir.kernel_mfma import INSTRUCTIONS, peak_share
from ..ir.targets import Target
from ..ir.types import NUMPY_DTYPES
from .occupancy import Occupancy
from .roofline import SEGMENT_BYTES, Counts

L2_LATENCY_S = 0.3e-6               # a load that hits the L2 (an assumed figure, not yet calibrated)
LAUNCH_S = 2.0e-6                   # one kernel dispatch, back to back in a stream
L2_BYTES_PER_CLOCK_PER_CU = 2048 * 8 / 304   # 2 KB per clock per XCD, 8 XCDs, shared by the CUs
L2_BYTES = 4 * 2**20                # per XCD: a buffer larger than this is reread from the Infinity Cache
INFINITY_CACHE_BANDWIDTH = 17.2e12
CU_MEMORY_BYTES_PER_CLOCK = SEGMENT_BYTES    # one 64-byte segment per clock per CU
LDS_BYTES_PER_CLOCK = 128
# A GEMM main loop's sustained matrix issue (address, loop and barrier work between the MFMAs):
# rocBLAS/hipBLASLt reach about 85-92 % of the MI300X peak on large problems.
SUSTAINED_MATRIX_ISSUE = 0.92
WIDEST_LOAD_BYTES = 16              # global_load_dwordx4

TERMS = ("hbm", "cache", "cu memory", "lds", "vector", "matrix", "latency", "launch")


@dataclass(frozen=True)
class PerfModel:
    modelled_us: float
    limiter: str                     # one of TERMS
    terms_us: dict                   # term -> microseconds
    busy_cus: int
    workgroups: int
    workgroups_in_flight: int        # at once, over the GPU
    rounds: int
    waves_in_flight: int
    bytes_in_flight: float
    dram_bytes: float
    issued_bytes: float
    findings: tuple[str, ...]        # what limits the kernel, in words, the limiter first

    @property
    def explanation(self) -> str:
        return "; ".join(self.findings)


def load_bytes_per_lane(counts: Counts) -> int:
    """The narrowest global load the kernel executes per lane, in bytes, as the GPU issues it (0: no global
    loads; a branch no work-item takes, such as the edge path of a launch without edges, loads nothing)."""
    widths = [a.lane_bytes for a in counts.accesses.values() if a.kind == "load" and a.bytes]
    return min(widths) if widths else 0


def model(kernel: Kernel, target: Target, counts: Counts, occupied: Occupancy) -> PerfModel:
    clock = target.peak_clock_mhz * 1e6
    workgroups = max(kernel.num_workgroups, 1)
    waves_per_group = -(-kernel.workgroup_items // target.wave_size)
    per_cu = max(occupied.workgroups_per_cu, 1)
    in_flight = min(workgroups, target.compute_units * per_cu)
    busy_cus = min(workgroups, target.compute_units)
    rounds = -(-workgroups // (target.compute_units * per_cu))
    waves_in_flight = in_flight * waves_per_group
    # Work per busy CU: the busiest CU runs ceil(workgroups / CUs) of them.
    cu_share = -(-workgroups // target.compute_units) / workgroups if workgroups else 0.0
    simd_fill = min(1.0, min(per_cu, -(-workgroups // target.compute_units)) * waves_per_group / target.simds_per_cu)

    sizes = {b.name: kernel.launch_count(b) * NUMPY_DTYPES[b.dtype].itemsize for b in kernel.buffers}
    issued_by_buffer: dict = {}
    for access in counts.accesses.values():
        issued_by_buffer[access.buffer] = issued_by_buffer.get(access.buffer, 0.0) + access.issued_bytes
    dram = sum(min(issued, sizes.get(name, issued)) for name, issued in issued_by_buffer.items())
    issued = sum(issued_by_buffer.values())
    # Bytes beyond DRAM's: partly used segments of a buffer larger than an L2 (a strided access's
    # neighbours come back long after) from the Infinity Cache, the rest (tiles reread by the
    # workgroups running together) from the L2.
    wasted = {}
    for access in counts.accesses.values():
        wasted[access.buffer] = wasted.get(access.buffer, 0.0) + access.issued_bytes - access.bytes
    from_infinity_cache = sum(min(n, max(issued_by_buffer[name] - min(issued_by_buffer[name], sizes.get(name, 0)), 0))
                              for name, n in wasted.items() if sizes.get(name, 0) > L2_BYTES)
    from_l2 = max(issued - dram - from_infinity_cache, 0.0)
    cache_s = max(from_l2 * cu_share / (L2_BYTES_PER_CLOCK_PER_CU * clock), from_infinity_cache / INFINITY_CACHE_BANDWIDTH)

    loads = [a for a in counts.accesses.values() if a.kind == "load" and a.bytes]
    wave_load_bytes = (sum(min(a.segments * SEGMENT_BYTES, a.lanes * a.element_bytes) if a.known
                           else target.wave_size * a.element_bytes for a in loads) / len(loads)) if loads else 0.0
    bytes_in_flight = waves_in_flight * max(counts.loads_in_flight, 1) * wave_load_bytes
    achievable = target.achievable_hbm_bandwidth
    latency_bound_bandwidth = bytes_in_flight / target.memory_latency_s if loads else achievable
    hbm_bandwidth = min(achievable, latency_bound_bandwidth)

    latency = (dram * target.memory_latency_s + (issued - dram) * L2_LATENCY_S) / issued if issued else 0.0
    by_unit = {}
    for dtype, flops in counts.flops.items():
        by_unit["vector"] = by_unit.get("vector", 0.0) + flops / target.peak(dtype, "vector")
    for name, flops in counts.instruction_flops.items():
        rate = target.peak(INSTRUCTIONS[name].in_dtype, "matrix") * peak_share(name, target.name)
        by_unit["matrix"] = by_unit.get("matrix", 0.0) + flops / (rate * SUSTAINED_MATRIX_ISSUE)
    # Per-CU rates: the GPU's peak spread over its CUs, the busiest CU doing cu_share of the work.
    compute_scale = cu_share * target.compute_units / simd_fill if simd_fill else math.inf
    terms = {
        "hbm": dram / hbm_bandwidth if dram else 0.0,
        "cache": cache_s,
        "cu memory": issued * cu_share / (CU_MEMORY_BYTES_PER_CLOCK * clock),
        "lds": counts.lds_clock_bytes * cu_share / (LDS_BYTES_PER_CLOCK * clock),
        "vector": by_unit.get("vector", 0.0) * compute_scale,
        "matrix": by_unit.get("matrix", 0.0) * compute_scale,
        "latency": -(-workgroups // target.compute_units) / per_cu * counts.load_phases * latency,
        "launch": LAUNCH_S,
    }
    limiter = max(TERMS, key=lambda t: terms[t])
    seconds = LAUNCH_S + max(v for t, v in terms.items() if t != "launch")
    result = PerfModel(
        modelled_us=seconds * 1e6, limiter=limiter, terms_us={t: v * 1e6 for t, v in terms.items()},
        busy_cus=busy_cus, workgroups=workgroups, workgroups_in_flight=in_flight, rounds=rounds,
        waves_in_flight=waves_in_flight, bytes_in_flight=bytes_in_flight, dram_bytes=dram, issued_bytes=issued,
        findings=())
    return PerfModel(**{**result.__dict__, "findings": findings(kernel, target, counts, result, hbm_bandwidth)})


def findings(kernel: Kernel, target: Target, counts: Counts, m: PerfModel, hbm_bandwidth: float) -> tuple[str, ...]:
    """The model's reasons, in words: the limiter first, then what else holds the kernel back."""
    said = [f"{m.limiter}-bound ({m.terms_us[m.limiter]:.3g} us of {m.modelled_us:.3g})"]
    if m.busy_cus < target.compute_units:
        plural = "s" * (m.workgroups != 1)
        said.append(f"grid of {m.workgroups} workgroup{plural} uses {m.busy_cus} of {target.compute_units} CUs")
    elif m.rounds > 1 and 0 < m.workgroups % m.workgroups_in_flight < m.workgroups_in_flight / 2:
        tail = m.workgroups % m.workgroups_in_flight / m.workgroups_in_flight
        said.append(f"{m.rounds} rounds of {m.workgroups_in_flight} workgroups, the last {tail:.0%} full")
    width = load_bytes_per_lane(counts)
    if width and width < WIDEST_LOAD_BYTES and m.limiter in ("hbm", "cu memory"):
        said.append(f"loads are {width}-byte per lane: {WIDEST_LOAD_BYTES // width}x the load instructions and "
                    f"1/{WIDEST_LOAD_BYTES // width} of the bytes in flight of 16-byte loads")
    if hbm_bandwidth < target.achievable_hbm_bandwidth and m.limiter == "hbm":
        said.append(f"{m.waves_in_flight} wave{'s' * (m.waves_in_flight != 1)} in flight keep "
                    f"{m.bytes_in_flight:.3g} bytes in flight: {hbm_bandwidth / 1e9:.3g} GB/s by Little's law")
    # The access that moves the most bytes it does not use, when that is a tenth of the traffic or more.
    worst = max(counts.accesses.values(), key=lambda a: a.issued_bytes - a.bytes, default=None)
    if (worst is not None and worst.issued_bytes - worst.bytes > 0.1 * m.issued_bytes
            and m.limiter in ("hbm", "cache", "cu memory")):
        said.append(f"{worst.kind}s of {worst.buffer} move {worst.segment_ratio:.3g}x the bytes they use: "
                    f"{worst.segments} segment{'s' * (worst.segments != 1)} of 64 bytes for {worst.lanes} "
                    f"lane{'s' * (worst.lanes != 1)} of {worst.element_bytes} bytes")
    conflicted = max(counts.lds_accesses.values(), key=lambda a: a.bytes * (a.conflict - 1), default=None)
    if conflicted is not None and conflicted.conflict > 1.5:
        said.append(f"LDS {conflicted.kind}s of {conflicted.buffer} conflict {conflicted.conflict:.3g}-way in its banks")
    if m.limiter == "latency":
        said.append(f"each workgroup waits for its loads {counts.load_phases:.3g} times before a barrier, "
                    f"with {m.workgroups_in_flight // max(m.busy_cus, 1)} workgroups per CU to hide it")
    return tuple(said)
