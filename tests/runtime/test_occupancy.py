"""Occupancy against hand calculations with the targets' rules (runtime/occupancy.py's docstring),
and the unified VGPR rule against the backend's own count."""
import dataclasses

import llvmlite.binding as llvm
import pytest

from cdnajit.codegen import amdgpu
from cdnajit.codegen.amdgpu_metadata import KernelResources, parse_resources
from cdnajit.ir import kernel as K
from cdnajit.ir.targets import get_target
from cdnajit.runtime.occupancy import occupancy, unified_vgprs
from cdnajit.runtime.report import kernel_occupancy, kernel_report, total_modelled_us

# (target, vgprs, sgprs, lds bytes, workgroup items) -> (waves per SIMD, workgroups per CU, limiter).
# Hand calculations; a CU has 4 SIMDs x 8 wave slots = 32 waves.
CASES = [
    # VGPR: 100 -> 104 (granule 8); 512 // 104 = 4 waves/SIMD = 16 per CU = 4 workgroups of 4 waves.
    ("gfx942", 100, 20, 0, 256, 4.0, 4, "vgpr"),
    # AGPRs share the file: 128 arch + 128 acc = 256 -> 2 waves/SIMD; 1-wave workgroups: 8 per CU.
    ("gfx90a", unified_vgprs(128, 128), 20, 0, 64, 2.0, 8, "vgpr"),
    # LDS: 65536 // 24576 = 2 workgroups of 4 waves = 8 waves per CU = 2 per SIMD.
    ("gfx942", 16, 20, 24 * 1024, 256, 2.0, 2, "lds"),
    # The same LDS on MI355X's 160 KiB: 6 workgroups = 24 waves = 6 per SIMD.
    ("gfx950", 16, 20, 24 * 1024, 256, 6.0, 6, "lds"),
    # A workgroup of 12 waves: 32 // 12 = 2 fit, 24 waves = 6 per SIMD; 8 slots stay idle.
    ("gfx942", 16, 20, 0, 768, 6.0, 2, "workgroup"),
    # Three waves per workgroup: 10 workgroups = 30 waves, 7.5 per SIMD on average.
    ("gfx942", 16, 20, 0, 192, 7.5, 10, "workgroup"),
    # SGPRs: 102 > 100 -> 7 waves/SIMD = 28 one-wave workgroups.
    ("gfx942", 16, 102, 0, 64, 7.0, 28, "sgpr"),
    # Nothing limits: 8 workgroups of 4 waves fill the 32 slots.
    ("gfx942", 32, 20, 1024, 256, 8.0, 8, "waves"),
    # Fewer than one granule of VGPRs reaches the maximum.
    ("gfx950", 5, 10, 0, 1024, 8.0, 2, "waves"),
    # 12 VGPR-limited waves (512 // 40 = 12, capped at 8) and LDS of 40 KiB: 1 workgroup of 16 waves.
    ("gfx942", 40, 20, 40 * 1024, 1024, 4.0, 1, "lds"),
]


@pytest.mark.parametrize("target, vgprs, sgprs, lds, items, waves, groups, limiter", CASES)
def test_occupancy_matches_hand_calculation(target, vgprs, sgprs, lds, items, waves, groups, limiter):
    result = occupancy(get_target(target), vgprs=vgprs, sgprs=sgprs, lds_bytes=lds, workgroup_items=items)
    assert (result.waves_per_simd, result.workgroups_per_cu, result.limiter) == (waves, groups, limiter)


def test_more_lds_than_a_cu_has_fits_no_workgroup():
    result = occupancy(get_target("gfx942"), vgprs=8, sgprs=8, lds_bytes=65 * 1024, workgroup_items=64)
    assert (result.waves_per_simd, result.limiter) == (0.0, "lds")


def test_unified_vgpr_rule_matches_the_backend():
    """9 arch VGPRs and 32 AGPRs: the backend allocates 44 (arch rounded to 4, then the AGPRs)."""
    source = """
    define amdgpu_kernel void @k() {
      call void asm sideeffect "", "~{v8}"()
      call void asm sideeffect "", "~{a31}"()
      ret void
    }"""
    for target in ("gfx90a", "gfx942", "gfx950"):
        module = llvm.parse_assembly(f'target triple = "{amdgpu.TRIPLE}"\n{source}')
        resources = parse_resources(amdgpu.target_machine(target).emit_assembly(module))["k"]
        assert (resources.vgpr_count, resources.agpr_count) == (unified_vgprs(9, 32), 32) == (44, 32)
        assert resources.allocated_vgprs == 44   # the descriptor allocates what the code uses


def tree_sum_kernel(groups=4):
    x = K.GlobalBuffer("x", "f32", 256 * groups, readonly=True)
    out = K.GlobalBuffer("out", "f32", groups)
    tile = K.LdsBuffer("tile", "f32", 256)
    t, k = K.Var("t", "i32"), K.Var("k", "i32")
    body = [K.Let(t, K.workitem_id(0)), K.Store(tile, t, x[K.workgroup_id(0) * 256 + t]), K.Barrier(),
            K.For(k, 0, 8, 1, [K.If(t < (K.Const(128, "i32") >> k), [K.Store(tile, t, tile[t] + tile[t + (
                K.Const(128, "i32") >> k)])]), K.Barrier()], uniform=True),
            K.If(t.eq(0), [K.Store(out, K.workgroup_id(0), tile[0])])]
    return K.Kernel("tree", params=[x, out], grid=(groups,), workgroup_size=(256,), body=body, lds=[tile])


def test_kernel_report_combines_backend_resources_occupancy_and_roofline():
    kernel = tree_sum_kernel()
    report = kernel_report(kernel, "gfx942", source_ops=("reduce",), kind="fused")
    assert (report.name, report.kind, report.source_ops, report.target) == ("tree", "fused", ("reduce",), "gfx942")
    assert report.lds_bytes == 1024 and report.vgpr_spills == 0 and report.host_time_us is None
    expected = occupancy(get_target("gfx942"), vgprs=report.vgpr_allocated, sgprs=report.sgpr_count, lds_bytes=1024,
                         workgroup_items=256)
    assert (report.occupancy, report.occupancy_limiter) == (expected.waves_per_simd, expected.limiter)
    # A few registers and 1 KiB of LDS: nothing but the wave slots limits this kernel.
    assert (report.occupancy, report.occupancy_limiter) == (8.0, "waves")
    assert report.bound == "memory" and report.flops == 4 * 255
    assert total_modelled_us([report, report]) == pytest.approx(2 * report.modelled_us)
    with pytest.raises(ValueError, match="kind"):
        kernel_report(kernel, kind="handwritten")


def test_allocated_vgprs_set_the_occupancy_and_the_cause_is_blamed():
    """The backend allocates an MFMA kernel more VGPRs than it uses, up to what its LDS leaves:
    48 used, 129 allocated, 17408 bytes of LDS per 256-item workgroup: 3 workgroups per CU by
    LDS and 3 waves per SIMD by the allocation, so the LDS is the cause. An allocation that costs
    waves by itself is blamed on the VGPRs."""
    resources = KernelResources("k", vgpr_count=48, agpr_count=0, sgpr_count=30, vgpr_spill_count=0,
                                sgpr_spill_count=0, lds_bytes=17408, scratch_bytes=0, wavefront_size=64,
                                kernarg_bytes=60, max_flat_workgroup_size=256, allocated_vgprs=129)
    target = get_target("gfx942")
    occupied = kernel_occupancy(target, resources, 256)
    assert (occupied.waves_per_simd, occupied.limiter) == (3, "lds")
    small_lds = dataclasses.replace(resources, lds_bytes=1024)
    occupied = kernel_occupancy(target, small_lds, 256)
    assert (occupied.waves_per_simd, occupied.limiter) == (3, "vgpr")
