"""Occupancy: how many waves of a kernel each SIMD holds at once, and which resource limits it.

The inputs are what the backend reports (codegen/amdgpu_metadata.py): unified VGPRs and SGPRs per
wave, LDS bytes per workgroup, and the launch's workgroup size. The rules are those of LLVM's
AMDGPU backend (GCNSubtarget / AMDGPUBaseInfo) for the gfx9 CDNA targets, whose figures live in
ir/targets.py:

- VGPRs: gfx90a, gfx942 and gfx950 have one unified file of 512 registers per SIMD lane shared by
  architectural and accumulation registers. A wave uses `unified_vgprs(arch, agprs)` of them
  (arch rounded up to 4, then the AGPRs; the backend's `.vgpr_count` is already this total),
  allocated in granules of 8: waves per SIMD = 512 // round_up(vgprs, 8), at least 1 and at most
  the target's maximum, which a wave using fewer than 8 registers reaches.
- SGPRs (gfx9): at most 80 -> 10 waves, 88 -> 9, 100 -> 8, more -> 7 (LLVM's table), capped.
- LDS: a CU holds lds_bytes_per_cu // lds_bytes workgroups (LLVM does not round LDS to an
  allocation granule either).
- Workgroups: a workgroup of more than one wave takes one of the CU's 16 barrier slots, and all
  of its waves must fit in the CU's wave slots (max waves per SIMD x SIMDs per CU).

The CU is modelled as a pool: each resource allows some number of resident workgroups; the
smallest wins, and waves per SIMD = workgroups x waves per workgroup / SIMDs per CU. That is
exact for the launch (LLVM's own estimate rounds the per-SIMD figure up). Scratch is not a
limit here (the backend reports it; generated kernels use none).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.targets import Target

AGPR_ALIGNMENT = 4             # AGPRs start at the arch VGPR count rounded up to 4 (accum_offset)
BARRIER_SLOTS_PER_CU = 16      # workgroups of more than one wave per CU
# gfx9's SGPR rule: (most SGPRs, waves per SIMD), checked in order; beyond the last, 7 waves.
SGPR_OCCUPANCY = ((80, 10), (88, 9), (100, 8))
SGPR_OCCUPANCY_ABOVE = 7

# Limiter names, in the order a tie is blamed.
LIMITERS = ("vgpr", "sgpr", "lds", "workgroup", "waves")


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def unified_vgprs(arch_vgprs: int, agprs: int = 0) -> int:
    """Registers a wave takes from the unified file for `arch_vgprs` VGPRs and `agprs` AGPRs."""
    return round_up(max(arch_vgprs, 1), AGPR_ALIGNMENT) + agprs if agprs else arch_vgprs


def waves_by_vgprs(target: Target, vgprs: int) -> int:
    if vgprs < target.vgpr_granule:
        return target.max_waves_per_simd
    waves = target.vgprs_per_simd_lane // round_up(vgprs, target.vgpr_granule)
    return min(max(waves, 1), target.max_waves_per_simd)


def waves_by_sgprs(target: Target, sgprs: int) -> int:
    waves = next((w for most, w in SGPR_OCCUPANCY if sgprs <= most), SGPR_OCCUPANCY_ABOVE)
    return min(waves, target.max_waves_per_simd)


@dataclass(frozen=True)
class Occupancy:
    waves_per_simd: float            # resident waves per SIMD, averaged over the CU's SIMDs
    workgroups_per_cu: int
    limiter: str                     # one of LIMITERS; "waves" when the hardware maximum is reached
    workgroups_by: dict              # resource -> workgroups per CU it allows (absent: no limit)


def occupancy(target: Target, *, vgprs: int, sgprs: int, lds_bytes: int, workgroup_items: int) -> Occupancy:
    """Waves per SIMD of a kernel using `vgprs` unified VGPRs and `sgprs` SGPRs per wave and
    `lds_bytes` of LDS per workgroup of `workgroup_items` work-items."""
    simds = target.simds_per_cu
    waves_per_group = -(-workgroup_items // target.wave_size)
    by_waves = lambda per_simd: per_simd * simds // waves_per_group
    limits = {"vgpr": by_waves(waves_by_vgprs(target, vgprs)), "sgpr": by_waves(waves_by_sgprs(target, sgprs)),
              "waves": by_waves(target.max_waves_per_simd)}
    if lds_bytes:
        limits["lds"] = target.lds_bytes_per_cu // lds_bytes
    if waves_per_group > 1:
        limits["workgroup"] = BARRIER_SLOTS_PER_CU
    groups = min(limits.values())
    waves = groups * waves_per_group
    below_cap = [name for name in LIMITERS if limits.get(name) == groups and groups < limits["waves"]]
    if below_cap:
        limiter = below_cap[0]
    elif waves < target.max_waves_per_simd * simds:
        limiter = "workgroup"   # the wave slots left over are too few for another workgroup
    else:
        limiter = "waves"
    return Occupancy(waves / simds, groups, limiter, limits)
