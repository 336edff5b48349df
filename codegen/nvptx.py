"""NVPTX codegen: a kernel IR `Kernel` -> LLVM IR for `nvptx64-nvidia-cuda` -> PTX for sm_90 (Hopper:
the H100 and H200), which the CUDA driver compiles at load (runtime/nvptx_runner.py runs it).

What it is for: validation on real SIMT hardware. The kernel IR is written for CDNA, and the CPU
runs a workgroup one region at a time, so a missing barrier, an LDS race or an out-of-bounds index
never shows there; on an NVIDIA GPU the work-items of a workgroup really run concurrently, and
compute-sanitizer (racecheck, synccheck, memcheck) checks every shared and global access. The
results are CDNA's, not NVIDIA's: a wave is 64 lanes whatever the hardware's warp (32).

The kernel runs as CUDA would run it: one `ptx_kernel` function per kernel, executed by every
work-item, a workgroup being a thread block (work-items linearised x fastest, as CUDA numbers the
threads of a block, so a wave of 64 is two consecutive warps).
- Arguments: one per kernel parameter, in `kernel.params` order, as cuLaunchKernel's
  `kernelParams[i]` points to them: a buffer is a `ptr addrspace(1)` (global memory; noalias, and
  readonly where the kernel IR says so), a scalar is passed by value (bool as i8, f16/bf16 as their
  16 bits).
- Ids: `llvm.nvvm.read.ptx.sreg.tid.*` and `llvm.nvvm.read.ptx.sreg.ctaid.*`; workgroup size and
  grid are constants of the kernel, or extents of its scalar arguments (as on AMDGPU).
- Memory: global = addrspace(1). Shared memory (addrspace 3) is one dynamic block (`.extern
  .shared`), sized at launch by `shared_bytes(kernel)`: the kernel's LDS laid out by
  `kernel.lds_offsets()`, then one scratch area per wave for the wave ops (`WaveScratch`). Dynamic,
  because CDNA's 64 KiB of LDS is more than PTX's 48 KiB of static shared memory (the runner raises
  the launch's limit where it needs more). Variables and private arrays are allocas, which the
  backend keeps in registers or local memory.
- `Barrier` is `llvm.nvvm.barrier0` (`bar.sync 0`, __syncthreads: shared and global accesses before
  it are visible to the block after it).
- Wave ops are emulated through the wave's scratch in shared memory, with a barrier over the wave's
  64 threads (`bar.sync 1 + wave, 64`, a named barrier per wave) before and after the exchange, so
  lane i sees lane j's value whatever the warps' interleaving: `WaveReduce` writes each lane's value
  and every lane combines the 64 in the host's order (v[:32] op v[32:], then halves again, the xor
  butterfly's result; f16/bf16 combined in f32 and rounded once), `WaveShuffle` reads lane
  src % 64's value, `WaveMove` the lane its pattern names, `WaveBallot` gathers the 64 predicates into a u64 (`WaveCountBelow` needs no
  exchange: a popcount of the mask below the lane), `WaveMatchRank` the mask of the lanes whose
  value equals the lane's (then a popcount below the lane, and a shift for the lanes above), and MFMA (codegen/mfma_nvptx.py) gathers A and B into tiles and computes each
  lane's D elements with the exact CDNA lane layout and the host's arithmetic. PTX has 16 named
  barriers; barrier 0 is the block's, so a workgroup of 16 waves (1024 work-items) synchronises its
  wave ops on barrier 0, which is correct too: wave ops stand only under workgroup-uniform control
  flow (ir/kernel_verifier.py), so every work-item of the block reaches each of them.
- Floating point as the host computes it: `rem` is C's fmod computed exactly
  (codegen/exact_remainder.py: LLVM's NVPTX `frem` rounds); PTX's `add`/`mul` without a rounding modifier may be
  fused into fma by ptxas, so the backend runs with LLVM's NVPTX FMA contraction off
  (`-nvptx-fma-level=0`: every f32/f64 add and mul is emitted `.rn`, which ptxas never fuses);
  division and square root are IEEE (LLVM's defaults for NVPTX), denormals are kept (no ftz).
- Prefetch, `Kernel.streams`, `Kernel.grid_order` and `If.alongside` go unused, as on AMDGPU.

Expressions and work-item statements are lowered by the shared base (codegen/llvm_kernel.py); this
module provides the backend's hooks.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ..ir.kernel import (Kernel, Special, WaveBallot, WaveCountBelow, WaveMatchRank, WaveMove, WaveOp, WaveReduce,
                         WaveShuffle, wave_move_sources, walk)
from ..ir.kernel_mfma import Mfma
from ..ir.kernel_verifier import verify_kernel
from . import exact_remainder
from .fork_safe import LLVM_LOCK, ForkSafeLock
from .gpu_kernel import GpuKernelBuilder, optimised_module
from .llvm_kernel import I8, I32, I64, is_float, is_signed

TRIPLE = "nvptx64-nvidia-cuda"
ARCHITECTURE = "sm_90"
PTX_VERSION = "+ptx80"      # PTX ISA 8.0 (CUDA 12.0): sm_90's first; every newer driver loads it
GLOBAL, SHARED = 1, 3       # NVPTX address spaces
WARP = 32
NAMED_BARRIERS = 16         # bar.sync ids 0..15; 0 is the block's
SHARED_ALIGNMENT = 16
LANE_SLOT_BYTES = 8         # a lane's value in a WaveReduce/WaveShuffle exchange (the widest register)


@dataclass(frozen=True)
class WaveScratch:
    """The shared memory the wave ops of a kernel use: `per_wave` bytes for each of its waves,
    starting at `offset` (after the kernel's LDS)."""
    offset: int
    per_wave: int
    waves: int

    @property
    def end(self) -> int:
        return self.offset + self.per_wave * self.waves


def mfma_scratch_bytes(op: Mfma) -> int:
    """A wave's A and B tiles of one MFMA, in its accumulation type (codegen/mfma_nvptx.py)."""
    inst = op.spec
    element = 8 if inst.out_dtype == "f64" else 4
    return (inst.blocks * inst.m * inst.k + inst.blocks * inst.k * inst.n) * element


def wave_scratch(kernel: Kernel) -> WaveScratch:
    per_wave = 0
    for stmt in walk(kernel.body):
        if isinstance(stmt, (WaveReduce, WaveShuffle, WaveMove, WaveBallot, WaveMatchRank)):
            per_wave = max(per_wave, kernel.wave_size * LANE_SLOT_BYTES)
        elif isinstance(stmt, WaveCountBelow):
            pass  # the lane's own arithmetic: no exchange
        elif isinstance(stmt, Mfma):
            per_wave = max(per_wave, mfma_scratch_bytes(stmt))
        elif isinstance(stmt, WaveOp):
            raise NotImplementedError(f"NVPTX codegen: no lowering for wave op {type(stmt).__name__}")
    offset = -(-kernel.lds_bytes // SHARED_ALIGNMENT) * SHARED_ALIGNMENT
    return WaveScratch(offset, per_wave, kernel.workgroup_items // kernel.wave_size)


def shared_bytes(kernel: Kernel) -> int:
    """The dynamic shared memory a launch of the kernel needs: its LDS and its waves' scratch."""
    return wave_scratch(kernel).end


class NvptxKernelBuilder(GpuKernelBuilder):
    """Builds the LLVM module of one kernel for NVPTX: one `ptx_kernel` function that every
    work-item runs."""

    target_label = "NVPTX"
    # lower(builder, op): one wave op, for the calling work-item.
    wave_op_lowerings: ClassVar[dict] = {}

    def __init__(self, kernel: Kernel, machine: llvm.TargetMachine):
        super().__init__(kernel, TRIPLE)
        self.module.data_layout = str(machine.target_data)
        self.scratch = wave_scratch(kernel)

    # -- allocas --

    def entry_alloca(self, type_, count=None, name=""):
        with self.b.goto_block(self.fn.entry_basic_block):
            self.at_entry_start()
            slot = self.b.alloca(type_, None if count is None else ir.Constant(I32, count), name=name)
            slot.align = 16
        return slot

    # -- launch ids and barriers --

    def launch_id(self, kind, dimension):
        register = "tid" if kind == "workitem" else "ctaid"
        return self.intrinsic(f"llvm.nvvm.read.ptx.sreg.{register}.{dimension}", I32, [])

    def barrier(self):
        self.intrinsic("llvm.nvvm.barrier0", ir.VoidType(), [])

    def flat_item(self):
        """The work-item's index in its workgroup, x fastest (CUDA's thread numbering)."""
        x, y, _ = self.kernel.workgroup_size
        ids = [self.expr_special(Special("workitem_id", dim)) for dim in range(3)]
        return self.b.add(ids[0], self.b.mul(ir.Constant(I32, x), self.b.add(ids[1], self.b.mul(ir.Constant(I32, y),
                                                                                              ids[2]))))

    def wave_and_lane(self):
        item = self.flat_item()
        size = ir.Constant(I32, self.wave_size)
        return self.b.udiv(item, size), self.b.urem(item, size)

    def float_binary(self, op, a, b):
        """As the base, but `rem` exactly: LLVM's NVPTX frem rounds (codegen/exact_remainder.py)."""
        if op == "rem":
            return exact_remainder.fmod(self.b, a, b)
        return super().float_binary(op, a, b)

    # -- wave ops: an exchange through the wave's scratch between named barriers --

    def wave_barrier(self, wave):
        """Wait for the other 63 lanes of the wave; their shared-memory accesses before it are
        visible after it (bar.sync orders the memory accesses of the threads taking part)."""
        if self.scratch.waves >= NAMED_BARRIERS or self.wave_size % WARP:
            self.intrinsic("llvm.nvvm.barrier0", ir.VoidType(), [])  # the block's (module docstring)
            return
        asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [I32, I32]), "bar.sync $0, $1;", "r,r,~{memory}",
                           side_effect=True)
        # convergent: LLVM must not move it into control flow that only some threads take.
        self.b.call(asm, [self.b.add(wave, ir.Constant(I32, 1)), ir.Constant(I32, self.wave_size)], attrs=("convergent",))

    def wave_scratch_pointer(self, wave, byte_offset):
        """The byte `byte_offset` (i32) of the wave's scratch area."""
        start = self.b.add(ir.Constant(I32, self.scratch.offset), self.b.mul(wave, ir.Constant(I32, self.scratch.per_wave)))
        return self.b.gep(self.shared, [self.b.add(start, byte_offset)], inbounds=True, source_etype=I8)

    # -- the kernel function --

    def build(self) -> ir.Module:
        k = self.kernel
        x, y, z = k.workgroup_size
        self.kernel_function("ptx_kernel", f'"nvvm.reqntid"="{x},{y},{z}"')
        self.shared = ir.GlobalVariable(self.module, ir.ArrayType(I8, 0), name="cdnajit_shared", addrspace=SHARED)
        self.shared.linkage = "external"
        self.shared.align = SHARED_ALIGNMENT
        self.shared.type = ir.PointerType(addrspace=SHARED)  # opaque, so element pointers take any type
        offsets = k.lds_offsets()
        self.lds_pointers = {buffer.name: self.b.gep(self.shared, [ir.Constant(I32, offsets[buffer.name])],
                                                     inbounds=True, source_etype=I8) for buffer in k.lds}
        self.statements(k.body)
        self.b.ret_void()
        return self.module


# ---- wave ops -----------------------------------------------------------------------------

def exchange(kb: NvptxKernelBuilder, value, read):
    """Every lane writes `value` to its slot of the wave's scratch; after the wave's barrier,
    read(slot_pointer) computes the lane's result from the 64 slots; a second barrier keeps the
    slots until every lane has read them (the next wave op writes them again)."""
    b = kb.b
    wave, lane = kb.wave_and_lane()
    slot = lambda lane_index: kb.wave_scratch_pointer(wave, b.mul(lane_index, ir.Constant(I32, LANE_SLOT_BYTES)))
    stored = b.zext(value, I8) if value.type == ir.IntType(1) else value
    b.store(stored, slot(lane))
    kb.wave_barrier(wave)

    def load(lane_index):
        loaded = b.load(slot(lane_index), typ=stored.type)
        return b.trunc(loaded, value.type) if value.type != stored.type else loaded
    result = read(load, lane)
    kb.wave_barrier(wave)
    return result


def lower_wave_reduce(kb: NvptxKernelBuilder, op: WaveReduce):
    dtype = op.value.dtype
    reduce_op = "add" if op.op == "sum" else op.op

    def combine(load, lane):
        values = [load(ir.Constant(I32, i)) for i in range(kb.wave_size)]
        while len(values) > 1:  # v[:half] op v[half:], as the host (and lane 0 of the xor butterfly)
            half = len(values) // 2
            values = [kb.float_binary(reduce_op, a, c) if is_float(dtype) else kb.int_binary(reduce_op, a, c, is_signed(dtype))
                      for a, c in zip(values[:half], values[half:])]
        return values[0]
    kb.write_var(op.dest, kb.round_to(dtype, exchange(kb, kb.expr(op.value), combine)))


def lower_wave_shuffle(kb: NvptxKernelBuilder, op: WaveShuffle):
    source = kb.source_lane(op.src_lane)
    kb.write_var(op.dest, exchange(kb, kb.expr(op.value), lambda load, lane: load(source)))


def lower_wave_move(kb: NvptxKernelBuilder, op: WaveMove):
    """The pattern's lane map a constant vector, indexed by the lane."""
    sources = ir.Constant(ir.VectorType(I32, kb.wave_size), wave_move_sources(op.pattern, kb.wave_size))
    kb.write_var(op.dest, exchange(kb, kb.expr(op.value), lambda load, lane: load(kb.b.extract_element(sources, lane))))


def lower_wave_ballot(kb: NvptxKernelBuilder, op: WaveBallot):
    """The 64 lanes' predicates (bytes in the exchange's slots) as bits 0..63, every lane alike."""
    b = kb.b

    def gather(load, lane):
        mask = ir.Constant(I64, 0)
        for i in range(kb.wave_size):
            mask = b.or_(mask, b.shl(b.zext(load(ir.Constant(I32, i)), I64), ir.Constant(I64, i)))
        return mask
    kb.write_var(op.dest, exchange(kb, kb.expr(op.predicate), gather))


def lower_wave_count_below(kb: NvptxKernelBuilder, op: WaveCountBelow):
    """ctpop of the mask's bits below the lane of the 64-lane wave (the IR's lanes, not the warp's)."""
    b = kb.b
    lane = b.zext(kb.wave_and_lane()[1], I64)
    below = b.sub(b.shl(ir.Constant(I64, 1), lane), ir.Constant(I64, 1))
    kb.write_var(op.dest, b.trunc(b.ctpop(b.and_(kb.expr(op.mask), below)), I32))


def lower_wave_match_rank(kb: NvptxKernelBuilder, op: WaveMatchRank):
    """The 64 lanes' values (their low `bits` bits) exchanged; each lane gathers the mask of the
    lanes whose value equals its own, then counts it below its lane and looks for one above."""
    b = kb.b
    value = kb.expr(op.value)
    value = b.and_(value, ir.Constant(value.type, (1 << op.bits) - 1))
    value = b.zext(value, I32) if value.type.width < 32 else b.trunc(value, I32) if value.type.width > 32 else value

    def gather(load, lane):
        mask = ir.Constant(I64, 0)
        for i in range(kb.wave_size):
            matches = b.zext(b.icmp_unsigned("==", load(ir.Constant(I32, i)), value), I64)
            mask = b.or_(mask, b.shl(matches, ir.Constant(I64, i)))
        return mask
    matched = exchange(kb, value, gather)
    lane = b.zext(kb.wave_and_lane()[1], I64)
    below = b.sub(b.shl(ir.Constant(I64, 1), lane), ir.Constant(I64, 1))
    kb.write_var(op.rank, b.trunc(b.ctpop(b.and_(matched, below)), I32))
    kb.write_var(op.last, b.icmp_unsigned("==", b.lshr(matched, lane), ir.Constant(I64, 1)))


register_wave_op = NvptxKernelBuilder.register_wave_op
register_wave_op(WaveReduce, lower_wave_reduce)
register_wave_op(WaveShuffle, lower_wave_shuffle)
register_wave_op(WaveMove, lower_wave_move)
register_wave_op(WaveBallot, lower_wave_ballot)
register_wave_op(WaveCountBelow, lower_wave_count_below)
register_wave_op(WaveMatchRank, lower_wave_match_rank)


# ---- compiling ------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def target_machine() -> llvm.TargetMachine:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    # Fused multiply-adds only where the kernel IR asks for one (llvm.fma): module docstring.
    llvm.set_option("", "-nvptx-fma-level=0")
    return llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=ARCHITECTURE, features=PTX_VERSION, opt=3)


def llvm_module(kernel: Kernel, verify: bool = True) -> ir.Module:
    """The unoptimised LLVM module of a kernel for NVPTX."""
    from . import mfma_nvptx  # noqa: F401 - registers the MFMA lowering
    if verify:
        verify_kernel(kernel)
    return NvptxKernelBuilder(kernel, target_machine()).build()


_cache: dict = {}
_cache_lock = ForkSafeLock()


def ptx(kernel: Kernel) -> str:
    """The kernel's PTX (sm_90), optimised at O3; cached in memory by the kernel's text."""
    key = str(kernel)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    module = llvm_module(kernel)
    machine = target_machine()
    with LLVM_LOCK:
        parsed = optimised_module(module, machine)
        text = machine.emit_assembly(parsed)
    with _cache_lock:
        return _cache.setdefault(key, text)
