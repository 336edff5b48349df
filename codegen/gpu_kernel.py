"""What the GPU backends (AMDGPU, NVPTX) share beneath the target-neutral KernelBuilder: a kernel is
one function every work-item runs, so variables and private arrays are allocas of the work-item,
launch ids come from the target's intrinsics, and barriers and wave ops are the target's own."""
from __future__ import annotations

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ..ir.kernel import (Assign, AtomicRMW, Barrier, Expr, ForSpan, GlobalBuffer, If, Let, Load, Prefetch, SpanOffset,
                         Special, Store, WaveOp, walk)
from ..ir.kernel_verifier import sub_expressions
from ..ir.types import NUMPY_DTYPES
from .llvm_kernel import I32, MEMORY_TYPES, REGISTER_TYPES, KernelBuilder, add_attribute

DIMENSIONS = "xyz"
GLOBAL = 1  # the global address space, on AMDGPU and NVPTX alike


def span_vector_buffers(span: ForSpan) -> tuple[dict, dict]:
    """(loaded, stored): the global buffers, by name, whose accesses at the span's variable alone
    become one vector access per work-item. Loaded: one the body loads there in a statement at its
    top (which every element runs) and writes nowhere. Stored: one the body stores there at its top,
    and neither loads nor writes otherwise (its vector store waits for every element's body)."""
    top_loads, loaded, writes = {}, set(), []

    def visit(e, top):
        if isinstance(e, Load):
            loaded.add(e.buffer.name)
            if top and e.buffer.space == "global" and span.indexes_by_var(e.index):
                top_loads[e.buffer.name] = e.buffer
        for sub in sub_expressions(e):
            visit(sub, top)

    for statement in span.body:
        for inner in walk([statement]):
            for e in vars(inner).values():
                if isinstance(e, Expr):
                    visit(e, inner is statement and isinstance(inner, (Let, Assign, Store)))
            if isinstance(inner, (Store, AtomicRMW)):
                writes.append(inner)
    written = {w.buffer.name for w in writes}
    vector_stores = [w for w in writes if any(w is top for top in span.body) and isinstance(w, Store)
                     and w.buffer.space == "global" and span.indexes_by_var(w.index)]
    other_writes = {w.buffer.name for w in writes if not any(w is v for v in vector_stores)}
    stores = {w.buffer.name: w.buffer for w in vector_stores
              if w.buffer.name not in loaded and w.buffer.name not in other_writes}
    return {name: b for name, b in top_loads.items() if name not in written}, stores


class GpuKernelBuilder(KernelBuilder):
    """A subclass provides `entry_alloca`, `launch_id(kind, dim)` (the id intrinsic of a work-item or
    workgroup along x, y or z), `barrier()` and `build()`."""

    span_loaded = None   # while lowering a span: buffer name -> the work-item's vector of its elements
    span_lowered = None  # ... the span, and which of its elements the body is being lowered for
    span_element = 0

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

    # -- spans: a work-item's consecutive elements, as vector accesses --

    def span(self, s: ForSpan):
        """A span in the GPU's assignment (ir/kernel.py: ForSpan): work-item i takes elements
        start + i x per_item + k. The loads and stores `span_vector_buffers` finds are one vector
        access of the per_item elements each (a 16-byte global_load_dwordx4 for 4 f32 or 8 f16), the
        body lowered per element between them; the vectors claim only the element's alignment, so
        any start is correct (gfx9 accesses global memory at dword alignment, and LLVM splits what
        a target cannot). With a stop, a work-item whose elements do not all come before it runs
        them one by one, each under its guard."""
        items = self.kernel.workgroup_items
        first = s.element(0, items, item_major=True)
        if s.stop is None:
            self.span_vectors(s, first)
            return
        with self.b.if_else(self.expr(first + (s.per_item - 1) < s.stop)) as (whole, part):
            with whole:
                self.span_vectors(s, first)
            with part:
                for k in range(s.per_item):
                    self.write_var(s.var, self.expr(s.element(k, items, item_major=True)))
                    with self.b.if_then(self.expr(s.var < s.stop)):
                        self.statements(s.body)

    def expr_spanoffset(self, e: SpanOffset):
        """The GPU's assignment: consecutive offsets per work-item, whose accesses LLVM's load/store
        vectorizer merges into one vector access (global_load_dwordx4 for 4 f32 or 8 f16)."""
        return self.expr(e.offset(self.kernel.workgroup_items, item_major=True))

    def span_vectors(self, s: ForSpan, first):
        loads, stores = span_vector_buffers(s)
        self.span_lowered = s
        self.span_loaded = {name: self.b.load(self.element_pointer(buffer, first), typ=self.span_vector(buffer, s),
                                              align=NUMPY_DTYPES[buffer.dtype].itemsize)
                            for name, buffer in loads.items()}
        stored = [{} for _ in range(s.per_item)]
        for k in range(s.per_item):
            self.span_element = k
            self.write_var(s.var, self.expr(s.element(k, self.kernel.workgroup_items, item_major=True)))
            for stmt in s.body:
                if isinstance(stmt, Store) and stmt.buffer.name in stores and s.indexes_by_var(stmt.index):
                    stored[k][stmt.buffer.name] = self.to_memory(stmt.buffer.dtype, self.expr(stmt.value))
                else:
                    self.statement(stmt)
        self.span_loaded = None
        for name, buffer in stores.items():
            vector = ir.Constant(self.span_vector(buffer, s), ir.Undefined)
            for k in range(s.per_item):
                vector = self.b.insert_element(vector, stored[k][name], ir.Constant(I32, k))
            self.b.store(vector, self.element_pointer(buffer, first), align=NUMPY_DTYPES[buffer.dtype].itemsize)

    def span_vector(self, buffer, span: ForSpan):
        return ir.VectorType(MEMORY_TYPES[buffer.dtype], span.per_item)

    def expr_load(self, e: Load):
        if self.span_loaded is not None and e.buffer.name in self.span_loaded \
                and self.span_lowered.indexes_by_var(e.index):
            vector = self.span_loaded[e.buffer.name]
            return self.from_memory(e.dtype, self.b.extract_element(vector, ir.Constant(I32, self.span_element)))
        return super().expr_load(e)

    # -- staging beside other work: an alongside if's loads first, its LDS stores at the barrier --

    def statements(self, stmts):
        """The block's statements in order, except an alongside if (ir/kernel.py: If) of ifs and
        LDS stores only: its promise lets its work and that of the statements after it, up to the
        next barrier, run in any order, so where its condition holds its loads are issued first,
        then those statements run, then its stores (where it does not, those statements alone).
        Its global loads' latency is then hidden by that work, where storing at once would wait
        for them first (a GEMM's next tile behind this tile's MFMAs: Tensile's PrefetchGlobalRead).
        The loaded values wait in registers, in the same basic block as the work when the if's
        inner conditions are constants (a phi of 16-bit values would unpack them at the loads)."""
        position = 0
        while position < len(stmts):
            stmt = stmts[position]
            position += 1
            if not (isinstance(stmt, If) and stmt.alongside and not stmt.orelse
                    and all(isinstance(inner, (If, Store)) for inner in walk([stmt]))):
                self.statement(stmt)
                continue
            end = position
            while end < len(stmts) and not any(isinstance(inner, Barrier) for inner in walk([stmts[end]])):
                end += 1
            following, position = stmts[position:end], end
            with self.b.if_else(self.expr(stmt.cond)) as (staging, alone):
                with staging:
                    slots = self.load_staged(stmt.then)
                    self.statements(following)
                    self.staging_fence()
                    self.store_staged(stmt.then, slots)
                with alone:
                    self.statements(following)

    def staging_fence(self):
        """Where a target's instruction scheduler could move a staged if's stores (and so its waits
        for the loads) back up into the work they should follow, an instruction that stops it."""

    def load_staged(self, stmts) -> dict:
        """The values the stores of `stmts` (ifs and stores) would store, each kept in a slot (a
        register once promoted), by store."""
        slots = {}
        for s in stmts:
            if isinstance(s, Store):
                value = self.to_memory(s.buffer.dtype, self.expr(s.value))
                slots[id(s)] = self.entry_alloca(value.type, name="staged")
                self.b.store(value, slots[id(s)])
            else:
                with self.b.if_else(self.expr(s.cond)) as (then, orelse):
                    with then:
                        slots.update(self.load_staged(s.then))
                    with orelse:
                        slots.update(self.load_staged(s.orelse))
        return slots

    def store_staged(self, stmts, slots: dict):
        """The stores of `stmts`, of the values load_staged kept, under the same conditions (which
        the statements in between do not change: the alongside if's promise)."""
        for s in stmts:
            if isinstance(s, Store):
                self.b.store(self.b.load(slots[id(s)]), self.element_pointer(s.buffer, s.index))
            else:
                with self.b.if_else(self.expr(s.cond)) as (then, orelse):
                    with then:
                        self.store_staged(s.then, slots)
                    with orelse:
                        self.store_staged(s.orelse, slots)

    # -- statements: barriers and wave ops inline, the rest by the base --

    def statement(self, s):
        if isinstance(s, Barrier):
            self.barrier()
        elif isinstance(s, ForSpan):
            self.span(s)
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
