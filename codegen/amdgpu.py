"""AMDGPU codegen: a kernel IR `Kernel` -> LLVM IR for `amdgcn-amd-amdhsa` -> gfx9 assembly and
an HSA code object, for gfx942 (MI300X, the default), gfx90a (MI250X) and gfx950 (MI355X).

The kernel runs as HIP would run it: one LLVM function with the `amdgpu_kernel` calling
convention per kernel, executed by every work-item of the grid.
- Arguments: one per kernel parameter, in `kernel.params` order, as hipModuleLaunchKernel's
  `kernelParams[i]` points to them (the host launcher uses the same order): a buffer is a
  `ptr addrspace(1)` (noalias, and readonly when the kernel IR says so), a scalar is passed by
  value (bool as i8, f16/bf16 as their 16 bits).
- Ids: `llvm.amdgcn.workitem.id.{x,y,z}` and `llvm.amdgcn.workgroup.id.{x,y,z}`; workgroup size
  and grid are constants of the kernel, and `amdgpu-flat-work-group-size` states the size.
- Memory: global = addrspace(1); LDS = one addrspace(3) block laid out by `kernel.lds_offsets()`
  (so the backend's group segment size equals `kernel.lds_bytes`); variables and private arrays
  are addrspace(5) allocas, which SROA turns into registers.
- `Barrier` is HIP's __syncthreads: a workgroup-scope release fence, `llvm.amdgcn.s.barrier`, an
  acquire fence. Uniform loops and branches are ordinary control flow.
- Wave ops have the host's lane semantics (ir/kernel.py): `WaveReduce` is the xor butterfly,
  offset 32 through `ds_bpermute`, 16/8/4 through `ds_swizzle` (bit-mask mode), 2/1 through DPP
  quad permutes; `WaveShuffle` is a `ds_bpermute` from lane src % 64; `WaveMove` a DPP move
  (`DPP_MOVES`: row_shr, row_bcast); `WaveBallot` is `llvm.amdgcn.ballot` (a compare
  into an SGPR pair), `WaveCountBelow` `v_mbcnt_lo/hi`, and `WaveMatchRank` rocPRIM's match_any (a
  ballot per bit of the value, and-ed) then v_mbcnt. f16/bf16 values are computed in f32
  and rounded as on the host; the math library (codegen/mathlib.py) is the same.
- Of the facts a kernel states for scheduling (Prefetch, `Kernel.streams`, `Kernel.grid_order`,
  `If.alongside`: ir/kernel.py), only `alongside` is used: an alongside if's global loads are
  issued before the statements that follow it and its LDS stores after them
  (codegen/gpu_kernel.py), behind a scheduling barrier that keeps the machine scheduler from
  moving the stores, and so the waits for the loads, up among the MFMAs. CDNA has no data
  prefetch instruction and the dispatcher picks the workgroups' order.

Expressions and work-item statements are lowered by the shared base (codegen/llvm_kernel.py's
`KernelBuilder`, of which the host builder is a sibling), so both targets compute the same
operations; this module provides the backend's hooks: the kernel function and its arguments,
address spaces, launch ids, barriers and wave ops.

Code object: LLVM emits a relocatable ELF (e_machine EM_AMDGPU = 224); HIP loads a *linked*
shared object, so `code_object` links it with ld.lld (`-shared`) of LLVM 16 or newer (older
ones reject code object v5: Debian 12's `lld` 14 does). The linker is found as $CDNAJIT_LD_LLD,
else the lld bundled in the `ziglang` Python package (`pip install ziglang`, run as
`zig ld.lld`; its LLVM matches llvmlite's), else `ld.lld` on PATH (ROCm's, or Debian 13's `lld`).
Without any of them `code_object` raises `LinkerNotFound`, and `relocatable_object` still
gives the unlinked ELF. Code objects are version 5 (ROCm 5.x and 6.x load them).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import ClassVar

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ..errors import CdnajitError
from ..ir.kernel import Kernel, WaveBallot, WaveCountBelow, WaveMatchRank, WaveMove, WaveReduce, WaveShuffle
from ..ir.kernel_verifier import verify_kernel
from ..ir.targets import Target, get_target
from .amdgpu_metadata import KernelResources, parse_resources
from .fork_safe import ForkSafeLock
from .fork_safe import LLVM_LOCK  # one lock for all LLVM work: llvmlite shares one global context
from .gpu_kernel import GpuKernelBuilder, optimised_module
from .llvm_kernel import I1, I8, I32, I64, is_float, is_signed

TRIPLE = "amdgcn-amd-amdhsa"
GLOBAL, LDS, PRIVATE = 1, 3, 5          # AMDGPU address spaces
CODE_OBJECT_VERSION = 500
EM_AMDGPU = 224


class PrivateAlloca(ir.instructions.AllocaInstr):
    """An alloca in the private address space (llvmlite's allocas are all in address space 0)."""

    def __init__(self, parent, typ, count, name):
        super().__init__(parent, typ, count, name)
        self.type = ir.PointerType(addrspace=PRIVATE)

    def descr(self, buf):
        super().descr(buf)
        buf.append(f", addrspace({PRIVATE})")


class AmdgpuKernelBuilder(GpuKernelBuilder):
    """Builds the LLVM module of one kernel for AMDGPU: one `amdgpu_kernel` function that every
    work-item runs."""

    target_label = "AMDGPU"
    # A launch runs on one GPU (agent): at that scope a relaxed f32 add is global_atomic_add_f32 (at
    # the system's, a compare-and-swap loop).
    relaxed_ordering = 'syncscope("agent") monotonic'
    # lower(builder, op): one wave op, for the calling work-item.
    wave_op_lowerings: ClassVar[dict] = {}

    def __init__(self, kernel: Kernel, machine: llvm.TargetMachine, target: Target):
        super().__init__(kernel, TRIPLE)
        self.target = target  # wave-op lowerings refuse instructions the target lacks (LLVM would abort)
        self.module.data_layout = str(machine.target_data)
        version = self.module.add_metadata([ir.Constant(I32, 1), "amdhsa_code_object_version",
                                            ir.Constant(I32, CODE_OBJECT_VERSION)])
        self.module.add_named_metadata("llvm.module.flags", version)

    # -- allocas --

    def entry_alloca(self, type_, count=None, name=""):
        block = self.fn.entry_basic_block
        with self.b.goto_block(block):
            self.at_entry_start()
            slot = PrivateAlloca(block, type_, None if count is None else ir.Constant(I32, count), name)
            slot.align = 16
            self.b._insert(slot)  # IRBuilder.alloca has no address space: insert ours as it would
        return slot

    # -- launch ids and barriers --

    def launch_id(self, kind, dimension):
        return self.intrinsic(f"llvm.amdgcn.{kind}.id.{dimension}", I32, [])

    def staging_fence(self):
        """llvm.amdgcn.sched.barrier(0): no instruction moves across it."""
        self.intrinsic("llvm.amdgcn.sched.barrier", ir.VoidType(), [ir.Constant(I32, 0)])

    def barrier(self):
        """HIP's __syncthreads: LDS writes before it are visible to the workgroup after it."""
        self.b.fence("release", "workgroup")
        self.intrinsic("llvm.amdgcn.s.barrier", ir.VoidType(), [])
        self.b.fence("acquire", "workgroup")

    # -- the kernel function --

    def build(self) -> ir.Module:
        k = self.kernel
        self.kernel_function("amdgpu_kernel", f'"amdgpu-flat-work-group-size"="{self.items},{self.items}"')
        self.lds_pointers = {}
        if k.lds:
            block_type = ir.ArrayType(I8, k.lds_bytes)
            block = ir.GlobalVariable(self.module, block_type, name=f"{k.name}.lds", addrspace=LDS)
            block.linkage = "internal"
            block.initializer = ir.Constant(block_type, ir.Undefined)  # LDS cannot be initialised
            block.align = 16
            block.type = ir.PointerType(addrspace=LDS)  # opaque, so element pointers take any type
            for buffer in k.lds:
                offset = ir.Constant(I32, k.lds_offsets()[buffer.name])
                self.lds_pointers[buffer.name] = self.b.gep(block, [ir.Constant(I32, 0), offset], inbounds=True,
                                                            source_etype=block_type)
        self.statements(k.body)
        self.b.ret_void()
        return self.module


# ---- wave ops -----------------------------------------------------------------------------

def lane_id(kb: AmdgpuKernelBuilder):
    """This work-item's lane in its wave: mbcnt counts the set bits of -1 below the lane."""
    low = kb.intrinsic("llvm.amdgcn.mbcnt.lo", I32, [ir.Constant(I32, -1), ir.Constant(I32, 0)])
    return kb.intrinsic("llvm.amdgcn.mbcnt.hi", I32, [ir.Constant(I32, -1), low])


def cross_lane(kb: AmdgpuKernelBuilder, value, move):
    """Apply `move` (an i32 -> i32 lane permutation) to a value of any register type, as one or
    two 32-bit parts."""
    b = kb.b
    type_ = value.type
    width = 64 if type_ in (ir.DoubleType(), I64) else 32
    bits = b.bitcast(value, ir.IntType(width)) if isinstance(type_, (ir.FloatType, ir.DoubleType)) else value
    if width == 64:
        parts = [b.trunc(bits, I32), b.trunc(b.lshr(bits, ir.Constant(I64, 32)), I32)]
        moved = [b.zext(move(p), I64) for p in parts]
        bits = b.or_(moved[0], b.shl(moved[1], ir.Constant(I64, 32)))
    elif bits.type.width < 32:
        bits = b.trunc(move(b.zext(bits, I32)), bits.type)
    else:
        bits = move(bits)
    return b.bitcast(bits, type_) if isinstance(type_, (ir.FloatType, ir.DoubleType)) else bits


def bpermute(kb, source_lane):
    """Read from lane `source_lane` (an i32 in [0, 64)) through ds_bpermute (byte addresses)."""
    address = kb.b.shl(source_lane, ir.Constant(I32, 2))
    return lambda part: kb.intrinsic("llvm.amdgcn.ds.bpermute", I32, [address, part])


def dpp_quad_perm(kb, lanes):
    """Lane i of each quad reads lane lanes[i] of the quad (a DPP quad_perm, all rows and banks)."""
    control = sum(lane << (2 * i) for i, lane in enumerate(lanes))
    return lambda part: kb.intrinsic("llvm.amdgcn.update.dpp.i32", I32, [
        part, part, ir.Constant(I32, control), ir.Constant(I32, 0xF), ir.Constant(I32, 0xF), ir.Constant(I1, 0)])


def swizzle_xor(kb, offset):
    """ds_swizzle in bit-mask mode within 32 lanes: and_mask 0x1F, or_mask 0, xor_mask offset."""
    pattern = 0x1F | (offset << 10)
    return lambda part: kb.intrinsic("llvm.amdgcn.ds.swizzle", I32, [part, ir.Constant(I32, pattern)])


# WaveMove's patterns (ir/kernel.py: WAVE_MOVES) as GFX9 DPP controls: pattern -> (dpp_ctrl, row_mask).
# The old value is the lane's own and bound_ctrl is off, so a lane without a source (or in a row the
# mask leaves out) keeps its value, as the pattern says.
DPP_MOVES = {
    "row_shr:1": (0x111, 0xF),
    "row_shr:2": (0x112, 0xF),
    "row_shr:4": (0x114, 0xF),
    "row_shr:8": (0x118, 0xF),
    "row_bcast:15": (0x142, 0xA),   # rows 1 and 3 read lane 15 of the row before
    "row_bcast:31": (0x143, 0xC),   # rows 2 and 3 read lane 31
}


def dpp_move(kb, pattern):
    control, row_mask = DPP_MOVES[pattern]
    return lambda part: kb.intrinsic("llvm.amdgcn.update.dpp.i32", I32, [
        part, part, ir.Constant(I32, control), ir.Constant(I32, row_mask), ir.Constant(I32, 0xF), ir.Constant(I1, 0)])


def xor_move(kb, offset):
    """The lane permutation l -> l ^ offset, by the cheapest mechanism for the offset."""
    if offset == 1:
        return dpp_quad_perm(kb, (1, 0, 3, 2))
    if offset == 2:
        return dpp_quad_perm(kb, (2, 3, 0, 1))
    if offset < 32:
        return swizzle_xor(kb, offset)
    return bpermute(kb, kb.b.xor(lane_id(kb), ir.Constant(I32, offset)))


def lower_wave_reduce(kb: AmdgpuKernelBuilder, op: WaveReduce):
    dtype = op.value.dtype
    reduce_op = "add" if op.op == "sum" else op.op
    value = kb.expr(op.value)
    offset = kb.wave_size // 2
    while offset:
        other = cross_lane(kb, value, xor_move(kb, offset))
        value = (kb.float_binary(reduce_op, value, other) if is_float(dtype)
                 else kb.int_binary(reduce_op, value, other, is_signed(dtype)))
        offset //= 2
    kb.write_var(op.dest, kb.round_to(dtype, value))  # f16/bf16 combined in f32, rounded once


def lower_wave_shuffle(kb: AmdgpuKernelBuilder, op: WaveShuffle):
    source = kb.source_lane(op.src_lane)
    kb.write_var(op.dest, cross_lane(kb, kb.expr(op.value), bpermute(kb, source)))


def lower_wave_move(kb: AmdgpuKernelBuilder, op: WaveMove):
    kb.write_var(op.dest, cross_lane(kb, kb.expr(op.value), dpp_move(kb, op.pattern)))


def lower_wave_ballot(kb: AmdgpuKernelBuilder, op: WaveBallot):
    kb.write_var(op.dest, kb.intrinsic("llvm.amdgcn.ballot.i64", I64, [kb.expr(op.predicate)]))


def count_below(kb: AmdgpuKernelBuilder, mask):
    """The set bits of an i64 lane mask below this lane: v_mbcnt_lo then v_mbcnt_hi."""
    b = kb.b
    low = kb.intrinsic("llvm.amdgcn.mbcnt.lo", I32, [b.trunc(mask, I32), ir.Constant(I32, 0)])
    high_half = b.trunc(b.lshr(mask, ir.Constant(I64, 32)), I32)
    return kb.intrinsic("llvm.amdgcn.mbcnt.hi", I32, [high_half, low])


def lower_wave_count_below(kb: AmdgpuKernelBuilder, op: WaveCountBelow):
    kb.write_var(op.dest, count_below(kb, kb.expr(op.mask)))


def lower_wave_match_rank(kb: AmdgpuKernelBuilder, op: WaveMatchRank):
    """rocPRIM's match_any: from the active lanes, a ballot per bit of the value keeps the lanes
    whose bit equals this lane's (the ballot, or its complement); the matching lanes' mask then
    gives the rank (v_mbcnt) and whether no lane above matches."""
    b, value = kb.b, kb.expr(op.value)
    ballot = lambda predicate: kb.intrinsic("llvm.amdgcn.ballot.i64", I64, [predicate])
    matched = ballot(ir.Constant(I1, 1))
    for bit in range(op.bits):
        is_set = b.icmp_unsigned("!=", b.and_(value, ir.Constant(value.type, 1 << bit)), ir.Constant(value.type, 0))
        votes = ballot(is_set)
        matched = b.and_(matched, b.select(is_set, votes, b.not_(votes)))
    kb.write_var(op.rank, count_below(kb, matched))
    above_and_own = b.lshr(matched, b.zext(lane_id(kb), I64))
    kb.write_var(op.last, b.icmp_unsigned("==", above_and_own, ir.Constant(I64, 1)))


register_wave_op = AmdgpuKernelBuilder.register_wave_op
register_wave_op(WaveReduce, lower_wave_reduce)
register_wave_op(WaveShuffle, lower_wave_shuffle)
register_wave_op(WaveMove, lower_wave_move)
register_wave_op(WaveBallot, lower_wave_ballot)
register_wave_op(WaveCountBelow, lower_wave_count_below)
register_wave_op(WaveMatchRank, lower_wave_match_rank)


# ---- compiling ------------------------------------------------------------------------------

class LinkerNotFound(CdnajitError, RuntimeError):
    """No ld.lld to link an HSA code object with."""


@lru_cache(maxsize=None)
def target_machine(target_name: str) -> llvm.TargetMachine:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=target_name, opt=3, reloc="pic")


def llvm_module(kernel: Kernel, target: Target | str | None = None, verify: bool = True) -> ir.Module:
    """The unoptimised LLVM module of a kernel for an AMDGPU target."""
    target = resolve_target(target)
    if kernel.wave_size != target.wave_size:
        raise ValueError(f"kernel {kernel.name} was built for waves of {kernel.wave_size} lanes; {target.name}'s "
                         f"have {target.wave_size}")
    if verify:
        verify_kernel(kernel, target.max_lds_bytes_per_workgroup)
    return AmdgpuKernelBuilder(kernel, target_machine(target.name), target).build()


def resolve_target(target: Target | str | None) -> Target:
    """A Target, given one or its name (None: the default, gfx942)."""
    return target if isinstance(target, Target) else get_target(target)


@dataclass(frozen=True)
class AmdgpuKernel:
    """One kernel compiled for one target: optimised LLVM IR, assembly and the relocatable ELF."""
    name: str
    target: str
    llvm_ir: str
    assembly: str
    relocatable_object: bytes

    @cached_property
    def resources(self) -> KernelResources:
        return parse_resources(self.assembly)[self.name]

    @cached_property
    def code_object(self) -> bytes:
        return link(self.relocatable_object)


_cache: dict = {}
_cache_lock = ForkSafeLock()


def compile_kernel(kernel: Kernel, target: Target | str | None = None) -> AmdgpuKernel:
    """The kernel compiled for `target` (default gfx942), cached in memory by (kernel text, target)."""
    target = resolve_target(target)
    key = (str(kernel), target.name)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    module = llvm_module(kernel, target)
    machine = target_machine(target.name)
    with LLVM_LOCK:
        parsed = optimised_module(module, machine)
        # Code generation rewrites the module it runs on (control flow annotation): one copy each.
        compiled = AmdgpuKernel(kernel.name, target.name, str(parsed), machine.emit_assembly(parsed.clone()),
                                machine.emit_object(parsed.clone()))
    with _cache_lock:
        return _cache.setdefault(key, compiled)


def assembly(kernel: Kernel, target: Target | str | None = None) -> str:
    return compile_kernel(kernel, target).assembly


def loop_bodies(assembly_text: str):
    """The text from each label of an assembly listing to the last branch back to it: its loops (what a
    check of a main loop's instructions reads)."""
    lines = assembly_text.splitlines()
    labels = {m.group(1): i for i, line in enumerate(lines) if (m := re.match(r"(\.LBB\d+_\d+):", line))}
    for label, start in labels.items():
        back = [i for i, line in enumerate(lines) if i > start and re.search(rf"s_c?branch\w*\s+{label}\b", line)]
        if back:
            yield "\n".join(lines[start:back[-1] + 1])


def relocatable_object(kernel: Kernel, target: Target | str | None = None) -> bytes:
    return compile_kernel(kernel, target).relocatable_object


def code_object(kernel: Kernel, target: Target | str | None = None) -> bytes:
    """The HSA code object (a linked ELF shared object) that hipModuleLoadData loads."""
    return compile_kernel(kernel, target).code_object


def resources(kernel: Kernel, target: Target | str | None = None) -> KernelResources:
    """Registers, spills, LDS and scratch of the kernel, as the backend reports them."""
    return compile_kernel(kernel, target).resources


def linker_command() -> list[str] | None:
    """How to run ld.lld here, or None (see the module docstring for the search order)."""
    explicit = os.environ.get("CDNAJIT_LD_LLD")
    if explicit:
        return [explicit]
    try:
        import ziglang
        zig = os.path.join(os.path.dirname(ziglang.__file__), "zig")
        if os.path.exists(zig):
            return [zig, "ld.lld"]
    except ImportError:
        pass
    on_path = shutil.which("ld.lld")
    return [on_path] if on_path else None


def link(relocatable: bytes) -> bytes:
    """Link a relocatable AMDGPU ELF into a loadable code object with `ld.lld -shared`."""
    command = linker_command()
    if command is None:
        raise LinkerNotFound("linking an HSA code object needs ld.lld: `pip install ziglang` (bundles lld), "
                             "`apt-get install lld`, or set CDNAJIT_LD_LLD; relocatable_object() gives the "
                             "unlinked ELF")
    with tempfile.TemporaryDirectory(prefix="cdnajit-lld-") as folder:
        source, output = os.path.join(folder, "kernel.o"), os.path.join(folder, "kernel.hsaco")
        with open(source, "wb") as f:
            f.write(relocatable)
        result = subprocess.run(command + ["-shared", "--no-undefined", "-o", output, source],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise CdnajitError(f"ld.lld failed to link the code object: {result.stderr.strip()}")
        with open(output, "rb") as f:
            return f.read()
