"""What the GPU backends (AMDGPU, NVPTX) share beneath the target-neutral KernelBuilder: a kernel is
one function every work-item runs, so variables and private arrays are allocas of the work-item,
launch ids come from the target's intrinsics, and barriers and wave ops are the target's own."""
from __future__ import annotations

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ..ir.kernel import Barrier, GlobalBuffer, Prefetch, Special, WaveOp
from .llvm_kernel import I32, MEMORY_TYPES, REGISTER_TYPES, KernelBuilder, add_attribute

DIMENSIONS = "xyz"
GLOBAL = 1  # the global address space, on AMDGPU and NVPTX alike


class GpuKernelBuilder(KernelBuilder):
    """A subclass provides `entry_alloca`, `launch_id(kind, dim)` (the id intrinsic of a work-item or
    workgroup along x, y or z), `barrier()` and `build()`."""

    def intrinsic(self, name, result_type, args):
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(result_type, [a.type for a in args]), name=name)
        return self.b.call(fn, list(args))

    def at_entry_start(self):
        """Position the builder (inside a `goto_block(entry)`) before the entry block's first
        instruction, where allocas belong."""
        block = self.fn.entry_basic_block
        if block.instructions:
            self.b.position_before(block.instructions[0])

    def kernel_function(self, calling_convention: str, attribute: str):
        """The kernel's function (global buffers in address space 1 on both GPU targets, scalars by
        value), with its calling convention and launch-bounds attribute; its parameters bound and
        its read-only buffers marked, the builder at its entry."""
        k = self.kernel
        params = [ir.PointerType(addrspace=GLOBAL) if isinstance(p, GlobalBuffer) else MEMORY_TYPES[p.dtype]
                  for p in k.params]
        self.fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), params), name=k.name)
        self.fn.calling_convention = calling_convention
        add_attribute(self.fn.attributes, attribute)
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.bind_parameters(self.fn.args)
        for param in k.buffers:
            if param.readonly:
                add_attribute(self.buffer_args[param.name].attributes, "readonly")

    # -- storage: every variable and private array is one alloca per work-item --

    def private_slot(self, key, type_, count=None):
        if key not in self.storage:
            self.storage[key] = self.entry_alloca(type_, count, name=str(key))
        return self.storage[key]

    def variable_pointer(self, var):
        return self.private_slot((var.name, var.dtype), REGISTER_TYPES[var.dtype])

    def element_pointer(self, buffer, index_expr):
        index = self.index64(index_expr)
        memory = MEMORY_TYPES[buffer.dtype]
        if buffer.space == "global":
            base = self.buffer_args[buffer.name]
        elif buffer.space == "lds":
            base = self.lds_pointers[buffer.name]
        else:
            base = self.private_slot(buffer.name, memory, buffer.count)
        return self.b.gep(base, [index], inbounds=True, source_etype=memory)

    # -- launch indices --

    def expr_special(self, e: Special):
        size = (self.kernel.workgroup_size if e.kind in ("workitem_id", "workgroup_size") else self.kernel.grid)[e.dim]
        if e.kind == "num_workgroups" and not isinstance(size, int):  # a runtime extent
            return self.b.trunc(self.grid_extent(e.dim), I32)
        if e.kind in ("workgroup_size", "num_workgroups"):
            return ir.Constant(I32, size)
        if size == 1:  # a dimension of extent 1: the id is 0
            return ir.Constant(I32, 0)
        return self.launch_id("workitem" if e.kind == "workitem_id" else "workgroup", DIMENSIONS[e.dim])

    # -- wave ops --

    def source_lane(self, lane_expr):
        """A WaveShuffle's source lane as an i32 within the wave: the IR's index modulo the wave size
        (ir/kernel.py: WaveShuffle), whatever integer type it has."""
        lane = self.expr(lane_expr)
        if lane.type.width != 32:
            lane = self.b.trunc(lane, I32) if lane.type.width > 32 else self.b.zext(lane, I32)
        return self.b.and_(lane, ir.Constant(I32, self.wave_size - 1))

    # -- statements: barriers and wave ops inline, the rest by the base --

    def statement(self, s):
        if isinstance(s, Barrier):
            self.barrier()
        elif isinstance(s, Prefetch):
            pass  # a statement of intent for the host's scheduling (ir/kernel.py: Prefetch); no GPU instruction
        elif isinstance(s, WaveOp):
            self.wave_op_lowering(type(s))(self, s)
        else:
            super().statement(s)


def optimised_module(module: ir.Module, machine: llvm.TargetMachine) -> llvm.ModuleRef:
    """`module` parsed, verified and optimised at O3 for `machine` (the caller holds LLVM_LOCK)."""
    parsed = llvm.parse_assembly(str(module))
    parsed.verify()
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(parsed, builder)
    return parsed
