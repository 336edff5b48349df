"""AMDGPU codegen: hand-written kernels compile to gfx9 code whose instructions, resources and ELF
are what the kernel IR asks for. (No GPU here: the lane semantics are checked on the assembler's
own spelling of the cross-lane patterns; the host tests check the same kernels' results.)"""
import dataclasses
import re
import struct

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.codegen import amdgpu
from cdnajit.codegen.amdgpu_metadata import parse_resources
from cdnajit.ir import kernel as K

TARGETS = ["gfx942", "gfx90a", "gfx950"]
# EF_AMDGPU_MACH_AMDGCN_* of each target (the low byte of e_flags), from LLVM's ELF.h.
ELF_MACH = {"gfx90a": 0x3F, "gfx942": 0x4C, "gfx950": 0x4F}
WG = 256


def linear_index(workgroup):
    return K.workgroup_id(0) * workgroup + K.workitem_id(0)


def elementwise_kernel(n=1000):
    x = K.GlobalBuffer("x", "f32", n, readonly=True)
    y = K.GlobalBuffer("y", "f32", n)
    scale = K.ScalarParam("scale", "f32")
    i = K.Var("i", "i32")
    body = [K.Let(i, linear_index(64)), K.If(i < n, [K.Store(y, i, K.tanh(x[i] * scale) + x[i])])]
    return K.Kernel("tanh_axpy", params=[x, y, scale], grid=(-(-n // 64),), workgroup_size=(64,), body=body)


def tree_sum_kernel(n=1000, groups=4):
    """Each workgroup sums its 256 elements: LDS, a barrier, a uniform loop holding barriers."""
    x = K.GlobalBuffer("x", "f32", n, readonly=True)
    out = K.GlobalBuffer("out", "f32", groups)
    tile = K.LdsBuffer("tile", "f32", WG)
    flags = K.LdsBuffer("flags", "u8", 3)  # an odd size: the LDS block pads it to 16 bytes
    t, g, k, s = K.Var("t", "i32"), K.Var("g", "i32"), K.Var("k", "i32"), K.Var("s", "i32")
    body = [
        K.Let(t, K.workitem_id(0)), K.Let(g, linear_index(WG)),
        K.Store(tile, t, 0.0),
        K.If(g < n, [K.Store(tile, t, x[g])]),
        K.If(t < 3, [K.Store(flags, t, K.Const(1, "u8"))]),
        K.Barrier(),
        K.For(k, 0, 8, 1, [
            K.Let(s, K.Const(WG // 2, "i32") >> k),
            K.If(t < s, [K.Store(tile, t, tile[t] + tile[t + s])]),
            K.Barrier(),
        ], uniform=True),
        K.If(t.eq(0), [K.Store(out, K.workgroup_id(0), tile[0] * flags[2].cast("f32"))]),
    ]
    return K.Kernel("tree_sum", params=[x, out], grid=(groups,), workgroup_size=(WG,), body=body, lds=[tile, flags])


def wave_kernel(dtype="f32"):
    wg, groups = 128, 3
    n = wg * groups
    x = K.GlobalBuffer("x", dtype, n, readonly=True)
    out = K.GlobalBuffer("out", dtype, n)
    t, g = K.Var("t", "i32"), K.Var("g", "i32")
    total, largest, moved = K.Var("total", dtype), K.Var("largest", dtype), K.Var("moved", dtype)
    body = [K.Let(t, K.workitem_id(0)), K.Let(g, linear_index(wg)),
            K.WaveReduce(total, "sum", x[g]), K.WaveReduce(largest, "max", x[g]),
            K.WaveShuffle(moved, x[g], t * 5 + 3),
            K.Store(out, g, total + largest + moved)]
    return K.Kernel(f"waves_{dtype}", params=[x, out], grid=(groups,), workgroup_size=(wg,), body=body)


KERNELS = {"elementwise": elementwise_kernel, "tree_sum": tree_sum_kernel, "waves": wave_kernel}


def instructions(assembly):
    return set(re.findall(r"^\s+([a-z][a-z0-9_]*)", assembly, re.M))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", KERNELS)
def test_every_target_compiles_without_spills_or_scratch(name, target):
    kernel = KERNELS[name]()
    compiled = amdgpu.compile_kernel(kernel, target)
    assert f'.amdgcn_target "amdgcn-amd-amdhsa--{target}' in compiled.assembly
    resources = compiled.resources
    assert (resources.vgpr_spill_count, resources.sgpr_spill_count, resources.scratch_bytes) == (0, 0, 0)
    assert resources.lds_bytes == kernel.lds_bytes
    assert resources.wavefront_size == 64
    assert resources.max_flat_workgroup_size == kernel.workgroup_items


def test_elementwise_gfx942_instruction_classes():
    ops = instructions(amdgpu.assembly(elementwise_kernel()))
    assert {"global_load_dword", "global_store_dword"} <= ops
    assert any(op.startswith(("v_fma", "v_pk_fma")) for op in ops), ops  # the math library's fma chains
    assert not any(op.startswith(("ds_", "s_barrier", "s_swappc", "flat_")) for op in ops), ops


def test_lds_reduction_gfx942_instruction_classes_and_lds_size():
    kernel = tree_sum_kernel()
    assert kernel.lds_bytes == 256 * 4 + 16
    compiled = amdgpu.compile_kernel(kernel)
    ops = instructions(compiled.assembly)
    assert any(op.startswith(("ds_write", "ds_store")) for op in ops), ops
    assert any(op.startswith(("ds_read", "ds_load")) for op in ops), ops
    assert "s_barrier" in ops
    assert {"global_load_dword", "global_store_dword"} <= ops
    assert compiled.resources.lds_bytes == kernel.lds_bytes
    assert f".amdhsa_group_segment_fixed_size {kernel.lds_bytes}" in compiled.assembly


def softmax(x):
    e = cnp.exp(x - cnp.max(x, axis=-1, keepdims=True))
    return e / cnp.sum(e, axis=-1, keepdims=True)


def test_pipeline_softmax_kernels_compile_for_gfx942():
    """The kernels the compiler itself generates (fusion, tiling) lower to spill-free gfx942 code,
    whose loads and stores of the rows are 16 bytes per lane (4 f32 at the span offsets)."""
    compiled = cj.jit(softmax).lower(np.zeros((256, 1024), np.float32)).compile()
    kernels = compiled.executable.kernels
    assert kernels
    for kernel in kernels:
        result = amdgpu.compile_kernel(kernel)
        ops = instructions(result.assembly)
        assert {op for op in ops if op.startswith(("global_load", "global_store"))} == {
            "global_load_dwordx4", "global_store_dwordx4"}
        assert any(op.startswith(("v_fma", "v_pk_fma")) for op in ops), ops  # exp's polynomial
        assert (result.resources.vgpr_spill_count, result.resources.scratch_bytes) == (0, 0)
        assert result.resources.lds_bytes == kernel.lds_bytes


def bit_functions(x, packed):
    return (cj.lax.bitcast_convert_type(x, np.uint8), cj.lax.bitcast_convert_type(packed, np.float32),
            cj.lax.nextafter(x, -x), cj.lax.reduce_precision(x, 5, 10), cnp.signbit(x.astype(np.float16)))


def test_pipeline_bitcast_kernels_compile_for_gfx942():
    """bitcast_convert of equal widths (fused into nextafter, reduce_precision, f16 signbit) and between
    widths (byte stores of shifted pieces; LLVM merges the four byte loads of a widening one into a
    dword load) lowers to spill-free gfx942 code."""
    compiled = cj.jit(bit_functions).lower(np.zeros(1000, np.float32), np.zeros((1000, 4), np.uint8)).compile()
    all_ops = set()
    for kernel in compiled.executable.kernels:
        result = amdgpu.compile_kernel(kernel)
        all_ops |= instructions(result.assembly)
        assert (result.resources.vgpr_spill_count, result.resources.scratch_bytes) == (0, 0)
    assert {"global_store_byte", "global_load_dword", "global_store_dword"} <= all_ops, all_ops
    assert any(op.startswith(("v_lshrrev", "v_bfe", "v_lshlrev", "v_perm", "v_or")) for op in all_ops), all_ops


@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16", "i32", "i64", "u8"])
def test_wave_ops_use_the_butterfly_patterns(dtype):
    """xor 32 by ds_bpermute, xor 16/8/4 by ds_swizzle, xor 2/1 by DPP quad permutes, and the
    shuffle by ds_bpermute, as the assembler spells them."""
    compiled = amdgpu.compile_kernel(wave_kernel(dtype))
    text = compiled.assembly
    for pattern in ("swizzle(SWAP,16)", "swizzle(SWAP,8)", "swizzle(SWAP,4)", "quad_perm:[2,3,0,1]",
                    "quad_perm:[1,0,3,2]", "ds_bpermute_b32"):
        assert pattern in text, pattern
    assert compiled.resources.vgpr_spill_count == 0 and compiled.resources.scratch_bytes == 0


def test_a_kernel_built_for_another_wave_size_is_refused():
    kernel = dataclasses.replace(wave_kernel("f32"), wave_size=32)
    with pytest.raises(ValueError, match="built for waves of 32 lanes; gfx942's have 64"):
        amdgpu.llvm_module(kernel)


def test_kernel_arguments_as_hip_lays_them_out():
    """Buffers are 8-byte global pointers, then the scalar, in parameter order; readonly kept."""
    ir_text = str(amdgpu.llvm_module(elementwise_kernel()))
    assert re.search(r'define amdgpu_kernel void @"tanh_axpy"\(ptr addrspace\(1\) noalias readonly %"x", '
                     r'ptr addrspace\(1\) noalias %"y", float %"scale"\) "amdgpu-flat-work-group-size"="64,64"',
                     ir_text), ir_text.splitlines()[4]
    assert amdgpu.resources(elementwise_kernel()).kernarg_bytes == 8 + 8 + 4
    metadata = amdgpu.assembly(elementwise_kernel()).split(".amdgpu_metadata")[1]
    arguments = re.findall(r"\.name:\s+(\w+)\s+\.offset:\s+(\d+)\s+\.size:\s+(\d+)\s+\.value_kind:\s+(\w+)", metadata)
    assert arguments == [("x", "0", "8", "global_buffer"), ("y", "8", "8", "global_buffer"),
                         ("scale", "16", "4", "by_value")]


def test_barrier_is_syncthreads_and_ids_come_from_intrinsics():
    text = str(amdgpu.llvm_module(tree_sum_kernel()))
    assert re.search(r'fence syncscope\("workgroup"\) release\s+call void @"llvm.amdgcn.s.barrier"\(\)\s+'
                     r'fence syncscope\("workgroup"\) acquire', text)
    assert "llvm.amdgcn.workitem.id.x" in text and "llvm.amdgcn.workgroup.id.x" in text
    assert "addrspace(3) global [1040 x i8]" in text and "addrspace(5)" in text


def elf_header(data):
    """(EI_CLASS, EI_OSABI, EI_ABIVERSION, e_type, e_machine, e_flags) of a 64-bit little-endian ELF."""
    assert data[:4] == b"\x7fELF"
    e_type, e_machine, _, _, _, _, e_flags = struct.unpack_from("<HHIQQQI", data, 16)
    return data[4], data[7], data[8], e_type, e_machine, e_flags


@pytest.mark.parametrize("target", TARGETS)
def test_relocatable_object_is_an_amdgpu_elf(target):
    ei_class, osabi, abi_version, e_type, machine, flags = elf_header(amdgpu.relocatable_object(tree_sum_kernel(),
                                                                                               target))
    # ELFCLASS64, ELFOSABI_AMDGPU_HSA, code object v5, ET_REL, EM_AMDGPU, the target's processor
    assert (ei_class, osabi, abi_version, e_type, machine) == (2, 64, 3, 1, amdgpu.EM_AMDGPU)
    assert flags & 0xFF == ELF_MACH[target]


@pytest.mark.skipif(amdgpu.linker_command() is None, reason="no ld.lld: `pip install ziglang` or `apt-get install lld`")
@pytest.mark.parametrize("target", TARGETS)
def test_code_object_is_a_linked_amdgpu_shared_object(target):
    data = amdgpu.code_object(elementwise_kernel(), target)
    ei_class, osabi, abi_version, e_type, machine, flags = elf_header(data)
    assert (ei_class, osabi, abi_version, e_type, machine) == (2, 64, 3, 3, amdgpu.EM_AMDGPU)  # ET_DYN
    assert flags & 0xFF == ELF_MACH[target]
    assert b"tanh_axpy.kd" in data  # the kernel descriptor symbol hipModuleGetFunction finds


def test_missing_linker_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(amdgpu, "linker_command", lambda: None)
    with pytest.raises(amdgpu.LinkerNotFound, match="ld.lld"):
        amdgpu.link(amdgpu.relocatable_object(elementwise_kernel()))


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_the_whole_math_library_compiles_inline(dtype):
    """One kernel calling every math function: all inlined (no calls), no scratch, and erf's
    coefficient table read from the constant address space (global loads, not flat)."""
    n = 256
    i = K.Var("i", "i32")
    x, y = K.GlobalBuffer("x", dtype, n, readonly=True), K.GlobalBuffer("y", dtype, n, readonly=True)
    outs, body = [], [K.Let(i, K.workitem_id(0))]
    for fn, (arity, _) in K.MATH_FUNCTIONS.items():
        out = K.GlobalBuffer(f"o_{fn}", "bool" if fn == "is_finite" else dtype, n)
        outs.append(out)
        body.append(K.Store(out, i, K.math(fn, *[x[i], y[i], x[i]][:arity])))
    compiled = amdgpu.compile_kernel(K.Kernel(f"math_{dtype}", params=[x, y] + outs, grid=(1,),
                                              workgroup_size=(n,), body=body))
    ops = instructions(compiled.assembly)
    assert not any(op.startswith(("s_swappc", "s_setpc", "flat_load")) for op in ops), ops
    assert compiled.resources.scratch_bytes == 0


DESCRIPTOR = """
\t.amdhsa_kernel mm
\t\t.amdhsa_group_segment_fixed_size 2048
\t\t.amdhsa_next_free_vgpr 65
\t\t.amdhsa_accum_offset 12
\t.end_amdhsa_kernel
"""
METADATA = DESCRIPTOR + """
\t.amdgpu_metadata
---
amdhsa.kernels:
  - .agpr_count:     32
    .args:
      - .address_space:  global
        .name:           x
        .offset:         0
        .size:           8
        .value_kind:     global_buffer
    .group_segment_fixed_size: 2048
    .kernarg_segment_align: 8
    .kernarg_segment_size: 8
    .max_flat_workgroup_size: 256
    .name:           mm
    .private_segment_fixed_size: 16
    .sgpr_count:     22
    .sgpr_spill_count: 1
    .symbol:         mm.kd
    .vgpr_count:     44
    .vgpr_spill_count: 2
    .wavefront_size: 64
amdhsa.target:   amdgcn-amd-amdhsa--gfx942
amdhsa.version:
  - 1
  - 2
...
\t.end_amdgpu_metadata
"""


def test_metadata_parser_reads_the_kernel_map_not_its_arguments():
    (name, r), = parse_resources(METADATA).items()
    assert name == "mm"
    assert (r.vgpr_count, r.agpr_count, r.arch_vgpr_count, r.sgpr_count) == (44, 32, 12, 22)
    assert (r.vgpr_spill_count, r.sgpr_spill_count, r.lds_bytes, r.scratch_bytes) == (2, 1, 2048, 16)
    assert (r.kernarg_bytes, r.max_flat_workgroup_size, r.wavefront_size) == (8, 256, 64)
    assert r.allocated_vgprs == 65   # the descriptor's, beyond the 44 the code uses


def test_metadata_parser_requires_the_kernel_descriptor():
    with pytest.raises(ValueError, match="kernel mm: no .amdhsa_next_free_vgpr"):
        parse_resources(METADATA.replace(DESCRIPTOR, ""))


def test_metadata_parser_rejects_text_without_metadata():
    with pytest.raises(ValueError, match="amdgpu_metadata"):
        parse_resources("\ts_endpgm\n")


def double_buffered_kernel(steps=8):
    """Each step: the next tile's copy from global memory to LDS (an alongside if) beside this
    tile's arithmetic, then a barrier."""
    x = K.GlobalBuffer("x", "f32", steps * WG, readonly=True)
    out = K.GlobalBuffer("out", "f32", WG)
    tile = K.LdsBuffer("tile", "f32", 2 * WG)
    t, s, acc = K.Var("t", "i32"), K.Var("s", "i32"), K.Var("acc", "f32")
    body = [K.Let(t, K.workitem_id(0)), K.Store(tile, t, x[t]), K.Barrier(), K.Let(acc, K.Const(0.0, "f32")),
            K.For(s, 0, steps, 1, [
                K.If(s + 1 < steps, [K.Store(tile, (s + 1) % 2 * WG + t, x[(s + 1) * WG + t])], uniform=True,
                     alongside=True),
                K.Assign(acc, acc * tile[s % 2 * WG + (t + 1) % WG] + 1.5),
                K.Barrier()], uniform=True),
            K.Store(out, t, acc)]
    return K.Kernel("double_buffered", params=[x, out], grid=(1,), workgroup_size=(WG,), body=body, lds=[tile])


def test_an_alongside_copy_loads_before_the_work_after_it_and_stores_after_it():
    # Each step loads the next tile from global memory, reads this tile from LDS, and only then
    # waits for the load (behind a scheduling barrier) to store it to LDS: in order, the store and
    # its wait would come before the read.
    kernel = double_buffered_kernel()
    assert "llvm.amdgcn.sched.barrier" in str(amdgpu.llvm_module(kernel))
    steps = amdgpu.assembly(kernel, "gfx942").split("s_barrier")[1:]
    staged = [step for step in steps if "global_load_dword" in step]
    assert len(staged) == 7
    for step in staged:
        order = [step.index(instruction) for instruction in
                 ("global_load_dword", "ds_read_b32", "s_waitcnt vmcnt(0)", "ds_write_b32")]
        assert order == sorted(order), step
