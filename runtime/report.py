"""Kernel reports: one `KernelReport` per kernel of a compiled program, on one AMDGPU target.

A report puts together what the backend says about the kernel's gfx9 code (registers, spills,
LDS, scratch: codegen/amdgpu_metadata.py), the occupancy those resources allow
(runtime/occupancy.py) and the kernel's roofline (runtime/roofline.py). The host time is filled
in once the kernel has run (`host_time_us`, None until then).

    report = kernel_report(kernel, "gfx942", source_ops=("exp", "add"), kind="fused")
    report.occupancy, report.occupancy_limiter, report.bound, report.modelled_us
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..codegen import amdgpu
from ..ir.kernel import Kernel
from ..ir.targets import Target
from .occupancy import occupancy
from .roofline import roofline

KINDS = ("fused", "library", "generated")


@dataclass
class KernelReport:
    name: str
    source_ops: tuple[str, ...]      # the graph ops the kernel computes
    kind: str                        # one of KINDS
    target: str
    grid: tuple[int, int, int]
    workgroup_size: tuple[int, int, int]
    lds_bytes: int                   # group segment, as the backend allocated it
    vgpr_count: int                  # unified (arch + acc) VGPRs per work-item
    agpr_count: int
    sgpr_count: int
    vgpr_spills: int
    sgpr_spills: int
    scratch_bytes: int               # private segment per work-item
    occupancy: float                 # waves per SIMD
    occupancy_limiter: str           # runtime.occupancy.LIMITERS
    flops: float
    transcendentals: float
    bytes: float                     # DRAM bytes of the roofline model
    intensity: float                 # FLOPs per byte
    bound: str                       # "memory" or "compute"
    compute_unit: str                # e.g. "vector f32"
    modelled_us: float
    counts_exact: bool               # False when data-dependent control flow made FLOPs/bytes bounds
    host_time_us: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def kernel_report(kernel: Kernel, target: Target | str | None = None, *, source_ops=(), kind: str = "generated"
                  ) -> KernelReport:
    """Compile `kernel` for `target` (default gfx942) and report its resources, occupancy and roofline."""
    if kind not in KINDS:
        raise ValueError(f"kernel kind {kind!r}; expected one of {', '.join(KINDS)}")
    target = amdgpu.resolve_target(target)
    resources = amdgpu.resources(kernel, target)
    occupied = occupancy(target, vgprs=resources.vgpr_count, sgprs=resources.sgpr_count,
                         lds_bytes=resources.lds_bytes, workgroup_items=kernel.workgroup_items)
    roof = roofline(kernel, target)
    return KernelReport(
        name=kernel.name, source_ops=tuple(source_ops), kind=kind, target=target.name, grid=kernel.grid,
        workgroup_size=kernel.workgroup_size, lds_bytes=resources.lds_bytes, vgpr_count=resources.vgpr_count,
        agpr_count=resources.agpr_count, sgpr_count=resources.sgpr_count, vgpr_spills=resources.vgpr_spill_count,
        sgpr_spills=resources.sgpr_spill_count, scratch_bytes=resources.scratch_bytes,
        occupancy=occupied.waves_per_simd, occupancy_limiter=occupied.limiter, flops=roof.flops,
        transcendentals=roof.transcendentals, bytes=roof.bytes, intensity=roof.intensity, bound=roof.bound,
        compute_unit=roof.compute_unit, modelled_us=roof.modelled_us, counts_exact=roof.exact)


def total_modelled_us(reports) -> float:
    """The whole program's modelled time: its kernels run one after another."""
    return sum(r.modelled_us for r in reports)
