"""Target descriptions: the public specifications of the CDNA accelerators cdnajit compiles for.

Targets are data. Tiling (lowering/) reads the budgets and the wave size (which the kernels it
builds record as `Kernel.wave_size`), the AMDGPU backend (codegen/) the LLVM processor name, and
the reports (runtime/) the peaks for occupancy and the roofline, and the performance models
(runtime/perf_model.py, libs/blas/heuristic.py) the bandwidth and memory latency. The figures are
the vendors' published ones, as DESIGN.md lists them, but for the calibrated memory figures.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Target:
    name: str                      # the LLVM processor, e.g. "gfx942"
    product: str                   # e.g. "MI300X"
    architecture: str              # e.g. "CDNA3"
    compute_units: int
    peak_clock_mhz: int
    simds_per_cu: int
    wave_size: int                 # lanes of a wave: 64 on every CDNA accelerator
    vgprs_per_simd_lane: int       # VGPRs (arch + acc) one lane of a SIMD holds, shared by its waves
    vgpr_granule: int              # waves are allocated VGPRs in multiples of this
    sgprs_per_simd: int
    max_sgprs_per_wave: int
    max_waves_per_simd: int
    max_workgroup_size: int
    lds_bytes_per_cu: int
    max_lds_bytes_per_workgroup: int
    hbm_bytes: int
    hbm_bandwidth: float           # bytes/s
    # The memory figures of the performance models (runtime/perf_model.py, libs/blas/heuristic.py), not
    # published ones: MI300X's, calibrated in tests/runtime/test_perf_model.py, taken for the others too.
    # A global load's latency at HBM under load (several hundred ns unloaded): with the bytes the waves
    # keep in flight it bounds the bandwidth a grid reaches (Little's law).
    memory_latency_s: float
    # The fraction of hbm_bandwidth that a STREAM-style copy of 16-byte loads reaches (MI300X: ~4.3 of 5.3 TB/s).
    achievable_hbm_fraction: float
    # Peak dense throughput in FLOP/s (OP/s for integers) by (dtype, unit), unit "vector" or "matrix".
    peak_flops: dict = field(default_factory=dict)

    @property
    def achievable_hbm_bandwidth(self) -> float:
        """Bytes/s a kernel can sustain from HBM."""
        return self.hbm_bandwidth * self.achievable_hbm_fraction

    def peak(self, dtype: str, unit: str = "vector") -> float:
        """FLOP/s (OP/s) of `unit` for operands of `dtype`. The vector unit computes f16 and bf16 in
        f32 and has no integer figure of its own: all but f64 count at its f32 rate."""
        if unit == "vector" and dtype != "f64":
            dtype = "f32"
        return self.peak_flops[(dtype, unit)]


TERA = 1e12

TARGETS: dict[str, Target] = {
    "gfx942": Target(
        name="gfx942", product="MI300X", architecture="CDNA3", compute_units=304, peak_clock_mhz=2100,
        simds_per_cu=4, wave_size=64, vgprs_per_simd_lane=512, vgpr_granule=8, sgprs_per_simd=800,
        max_sgprs_per_wave=102, max_waves_per_simd=8, max_workgroup_size=1024, lds_bytes_per_cu=64 * 1024,
        max_lds_bytes_per_workgroup=64 * 1024, hbm_bytes=192 * 10**9, hbm_bandwidth=5.3 * TERA,
        memory_latency_s=0.8e-6, achievable_hbm_fraction=0.81,
        peak_flops={("f64", "vector"): 81.7 * TERA, ("f64", "matrix"): 163.4 * TERA,
                    ("f32", "vector"): 163.4 * TERA, ("f32", "matrix"): 163.4 * TERA,
                    ("f16", "matrix"): 1307.4 * TERA, ("bf16", "matrix"): 1307.4 * TERA,
                    ("i8", "matrix"): 2614.9 * TERA, ("fp8", "matrix"): 2614.9 * TERA}),
    "gfx90a": Target(
        name="gfx90a", product="MI250X", architecture="CDNA2", compute_units=220, peak_clock_mhz=1700,
        simds_per_cu=4, wave_size=64, vgprs_per_simd_lane=512, vgpr_granule=8, sgprs_per_simd=800,
        max_sgprs_per_wave=102, max_waves_per_simd=8, max_workgroup_size=1024, lds_bytes_per_cu=64 * 1024,
        max_lds_bytes_per_workgroup=64 * 1024, hbm_bytes=128 * 10**9, hbm_bandwidth=3.2 * TERA,
        memory_latency_s=0.8e-6, achievable_hbm_fraction=0.81,
        peak_flops={("f64", "vector"): 47.9 * TERA, ("f64", "matrix"): 95.7 * TERA,
                    ("f32", "vector"): 47.9 * TERA, ("f32", "matrix"): 95.7 * TERA,
                    ("f16", "matrix"): 383.0 * TERA, ("bf16", "matrix"): 383.0 * TERA,
                    ("i8", "matrix"): 383.0 * TERA}),
    "gfx950": Target(
        name="gfx950", product="MI355X", architecture="CDNA4", compute_units=256, peak_clock_mhz=2400,
        simds_per_cu=4, wave_size=64, vgprs_per_simd_lane=512, vgpr_granule=8, sgprs_per_simd=800,
        max_sgprs_per_wave=102, max_waves_per_simd=8, max_workgroup_size=1024, lds_bytes_per_cu=160 * 1024,
        max_lds_bytes_per_workgroup=160 * 1024, hbm_bytes=288 * 10**9, hbm_bandwidth=8.0 * TERA,
        memory_latency_s=0.8e-6, achievable_hbm_fraction=0.81,
        peak_flops={("f64", "vector"): 78.6 * TERA, ("f64", "matrix"): 78.6 * TERA,
                    ("f32", "vector"): 157.3 * TERA, ("f32", "matrix"): 157.3 * TERA,
                    ("f16", "matrix"): 2516.0 * TERA, ("bf16", "matrix"): 2516.0 * TERA,
                    ("fp8", "matrix"): 5033.0 * TERA}),
}

DEFAULT_TARGET = "gfx942"


def get_target(name: str | None = None) -> Target:
    name = name or DEFAULT_TARGET
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; known targets: {', '.join(TARGETS)}") from None
