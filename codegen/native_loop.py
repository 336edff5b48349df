"""A `while` step of an executable's schedule as one native function: the loop, its condition,
its body's launches, nested loops and branches, with no Python between entry and return.

    layout = loop_layout(step, slot_count)         # the arena and the address table's layout
    text = loop_module(step, layout, kernel_plans) # LLVM IR of `loop(slots, table) -> status`
    code = compile_loop(link_kernels(text, {k: kernel_text for k in direct_kernels(...)}))

The step and the kernel plans are plain data (runtime/executable.py's plan). The function reads
and writes one *address table*, `slots`: an i64 per SSA slot of the program, the address of that
value's elements, then two spare buffers per loop carry. The caller fills the addresses of the
values made outside the loop (`layout.reads`) and of the arena's buffers (`layout.buffers`,
offsets into one allocation per call); the function sets the rest as it runs, as the Python
schedule sets its environment: an in-place update's result and a reshape take their operand's
address, a loop's or a branch's results its carried or chosen values'. On return the loop's
result slots hold its results' addresses.

A launch of one workgroup on this thread (a loop counter's increment, a compare, a one-element
read or update) calls its kernel's `run` directly: the kernel's module is linked into the loop's
(`link_kernels`), where LLVM inlines it, so that scalar work costs a few instructions rather
than an indirect call and a walk over a workgroup's items. Other launches call through the table.

`table` is the executable's: i64 entries [the parallel launch callback, Python's
PyGILState_Ensure, PyErr_CheckSignals, PyErr_Clear and PyGILState_Release, each kernel's `run`,
each kernel's bound scalar addresses], so that the code is the same in every process and is
cached by its text. A launch builds its argument block on the stack and calls the
kernel's `run` (codegen/host.py) over its whole grid on this thread, or, for a launch worth the
worker pool (runtime/launch.py: `runs_in_parallel`), calls back into the runtime to run it there.

Loop carries. A body's output k that is its parameter k (or an in-place update of it) needs
nothing. One that the body makes with a kernel of its own is written into one of the carry's two
spare buffers, the one not holding the current value (the slot of the value that it updates in
place, its *root*, is pointed there before the body runs): the carry alternates between them and
never writes the loop's initial operand, which may be the caller's. Any other output (another
parameter, a value from outside, a nested loop's or branch's result, a root that two outputs
share) is copied into the spare buffer that does not hold the current value, unless it is that
value. Every carry's new address is read before any is set, so that a body that swaps its
carries reads the old ones.

A long loop stays interruptible: the function counts its work (a work-item per launched item, one
per loop iteration) and, every POLL_WORK, takes the GIL and runs Python's pending signal handlers
(PyErr_CheckSignals, as a C extension's long loop does); when one raised (Ctrl-C's
KeyboardInterrupt), it drops the exception and returns INTERRUPTED at once, for the runtime to
raise KeyboardInterrupt.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ..ir.types import NUMPY_DTYPES, SIGNED_INTS
from . import llvm_worker
from .fork_safe import LLVM_LOCK
from .host import ENTRY, WRITTEN_BUFFER_ALIGNMENT, is_aligned_buffer
from .llvm_kernel import I8, I32, I64, MEMORY_TYPES, PTR

LOOP_ENTRY = "loop"
FINISHED, INTERRUPTED, MISALIGNED = 0, 1, 2
# Work between interrupt polls: about a millisecond of launched work-items, or of the iterations
# of a loop of scalar work (a poll takes the GIL: tens of nanoseconds when no thread holds it).
POLL_WORK = 1 << 20
# The table's entries before the kernels' `run` addresses.
PARALLEL_LAUNCH, GIL_ENSURE, CHECK_SIGNALS, CLEAR_ERROR, GIL_RELEASE = range(5)
TABLE_HEADER = 5


def direct_kernels(step: dict, kernel_plans: list[dict]) -> list[int]:
    """The kernels the loop calls directly (linked into its module): those it launches on one
    workgroup, on this thread."""
    direct = set()

    def visit(step):
        if step["op"] == "kernel":
            plan = kernel_plans[step["kernel"]]
            if math.prod(plan["grid"]) == 1 and not plan["parallel"]:
                direct.add(step["kernel"])
        for block in blocks_of(step):
            for inner in block["steps"]:
                visit(inner)
    visit(step)
    return sorted(direct)


def direct_entry(kernel: int) -> str:
    return f"run_kernel{kernel}"


def value_bytes(dtype: str, shape) -> int:
    return math.prod(shape) * NUMPY_DTYPES[dtype].itemsize


def blocks_of(step: dict) -> list[dict]:
    if step["op"] == "while":
        return [step["cond"], step["body"]]
    return step.get("branches", [])


@dataclass
class Carry:
    """How a loop's carry k gets its next value: "same" (the body's output is the parameter, or an
    in-place update of it), "alternate" (the body's own kernel result `root`, written into the
    spare that does not hold the current value) or "copy" (copied into that spare). `spares`:
    the slots of its two spare buffers in the address table."""
    kind: str
    nbytes: int
    root: int | None = None
    spares: tuple[int, int] | None = None


@dataclass
class LoopLayout:
    reads: list[int]                               # slots made outside the loop that it reads
    buffers: list[tuple[int, int]]                 # (slot, arena offset): a buffer per value made inside
    arena_bytes: int
    table_slots: int                               # the address table's length
    carries: dict[int, list[Carry]] = field(default_factory=dict)   # id(while step) -> its carries


def body_roots(block: dict) -> tuple[dict[int, int], set[int]]:
    """(root per slot of a body block, the slots its own kernels make). A value's root is the value
    whose buffer holds it: an in-place update's or a reshape's is its operand's root."""
    roots, made = {}, set()
    for step in block["steps"]:
        if step["op"] == "kernel" and step["in_place"]:
            source = step["inputs"][0]
            roots[step["results"][0][0]] = roots.get(source, source)
        elif step["op"] == "reshape":
            roots[step["result"]] = roots.get(step["input"], step["input"])
        elif step["op"] in ("kernel", "allocate"):
            made.update(slot for slot, _, _ in step["results"])
    return roots, made


def aligned_bytes(nbytes: int) -> int:
    """An arena buffer's bytes: at least one, rounded up to the kernels' alignment."""
    return -(-max(nbytes, 1) // WRITTEN_BUFFER_ALIGNMENT) * WRITTEN_BUFFER_ALIGNMENT


def step_reads(step: dict) -> set[int]:
    """Every slot a step reads, inside its regions too (captured values included)."""
    kind = step["op"]
    if kind == "kernel":
        return set(step["inputs"])
    if kind == "reshape":
        return {step["input"]}
    if kind == "allocate":
        return set()
    reads = set(step["operands"]) | ({step["index"]} if kind == "cond" else set())
    for block in blocks_of(step):
        reads.update(block["outputs"])
        for inner in block["steps"]:
            reads |= step_reads(inner)
    return reads


@dataclass
class Lifetime:
    """A buffer (or a nested step's whole region) of a block: live from the step that makes it to
    the last step that reads it or a value it holds; `placements` are (slot, offset) within it."""
    start: int
    end: int
    nbytes: int
    placements: list


def first_fit(lifetimes: list[Lifetime]) -> tuple[int, list[tuple[int, int]]]:
    """(bytes, (slot, offset) per buffer): each lifetime, in order, at the lowest offset where it
    overlaps no placed one that is live at the same time."""
    placed, placements, size = [], [], 0
    for life in lifetimes:
        offset = 0
        for other_offset, other in sorted(placed, key=lambda p: p[0]):
            live_together = other.start <= life.end and life.start <= other.end
            if live_together and other_offset < offset + life.nbytes and offset < other_offset + other.nbytes:
                offset = other_offset + other.nbytes
        placed.append((offset, life))
        size = max(size, offset + life.nbytes)
        placements += [(slot, offset + inner) for slot, inner in life.placements]
    return size, placements


def loop_layout(step: dict, slot_count: int) -> LoopLayout:
    """The arena and address table of a top-level `while` step (see the module's docstring).

    Buffers are assigned by liveness, block by block: a value made in a block lives from its step
    to the last step that reads it or a value held in its buffer (an in-place update of it, a
    view of it, a nested loop's or branch's result that may be it), or to the block's end if the
    block yields it; values that are never live together share bytes. A nested loop or branch is
    one lifetime in its block, its region laid out the same way inside: a loop's region holds
    its carries' spare buffers, then its condition's and its body's buffers over the same bytes
    (they never live together: the condition's are dead once the body starts, and the body's once
    its results are carried); a branch's region holds its branches' over the same bytes."""
    carries, spare_slot = {}, slot_count

    def block_region(block: dict, skipped: set[int]) -> tuple[int, list]:
        steps, lifetimes, roots = block["steps"], [], {}

        def read(slots, position):
            for slot in slots:
                for life in roots.get(slot, ()):
                    life.end = max(life.end, position)

        for position, inner in enumerate(steps):
            read(step_reads(inner), position)
            kind = inner["op"]
            if kind == "reshape":
                roots[inner["result"]] = roots.get(inner["input"], [])
            elif kind == "kernel" and inner["in_place"]:
                roots[inner["results"][0][0]] = roots.get(inner["inputs"][0], [])
            elif kind in ("kernel", "allocate"):
                for slot, dtype, shape in inner["results"]:
                    if slot in skipped:      # a carry's root: its bytes are the carry's spares
                        roots[slot] = []
                        continue
                    life = Lifetime(position, position, aligned_bytes(value_bytes(dtype, shape)), [(slot, 0)])
                    lifetimes.append(life)
                    roots[slot] = [life]
            else:
                nbytes, placements = loop_region(inner) if kind == "while" else branch_region(inner)
                life = Lifetime(position, position, nbytes, placements)
                lifetimes.append(life)
                # A result may also be an operand or a captured value (a carry kept in place, a
                # loop that did not run, a branch yielding what it was given).
                held = [life] + [other for slot in step_reads(inner) for other in roots.get(slot, ())]
                for slot in inner["results"]:
                    roots[slot] = held
        read(block["outputs"], len(steps))
        return first_fit(lifetimes)

    def branch_region(step: dict) -> tuple[int, list]:
        regions = [block_region(block, set()) for block in step["branches"]]
        return max(size for size, _ in regions), [p for _, placements in regions for p in placements]

    def loop_region(step: dict) -> tuple[int, list]:
        nonlocal spare_slot
        body = step["body"]
        roots, made = body_roots(body)
        claimed, loop_carries, placements, offset = set(), [], [], 0
        for k, (param, output) in enumerate(zip(body["params"], body["outputs"])):
            nbytes = value_bytes(*step["types"][k])
            root = roots.get(output, output)
            if root == param:
                loop_carries.append(Carry("same", nbytes))
                continue
            spares = (spare_slot, spare_slot + 1)
            spare_slot += 2
            for slot in spares:
                placements.append((slot, offset))
                offset += aligned_bytes(nbytes)
            if root in made and root not in claimed:
                claimed.add(root)
                loop_carries.append(Carry("alternate", nbytes, root, spares))
            else:
                loop_carries.append(Carry("copy", nbytes, None, spares))
        carries[id(step)] = loop_carries
        cond_bytes, cond_placements = block_region(step["cond"], set())
        body_bytes, body_placements = block_region(body, claimed)
        placements += [(slot, offset + inner) for slot, inner in cond_placements + body_placements]
        return offset + max(cond_bytes, body_bytes), placements

    arena_bytes, buffers = loop_region(step)
    defined = set()

    def define(step: dict) -> None:
        kind = step["op"]
        if kind in ("kernel", "allocate"):
            defined.update(slot for slot, _, _ in step["results"])
        elif kind == "reshape":
            defined.add(step["result"])
        else:
            defined.update(step["results"])
            for block in blocks_of(step):
                defined.update(block["params"])
                for inner in block["steps"]:
                    define(inner)
    define(step)
    return LoopLayout(sorted(step_reads(step) - defined), buffers, arena_bytes, spare_slot, carries)


class LoopBuilder:
    """Builds `loop(ptr slots, ptr table) -> i32` for one top-level while step."""

    def __init__(self, layout: LoopLayout, kernel_plans: list[dict], direct: list[int]):
        self.layout, self.kernel_plans = layout, kernel_plans
        self.module = ir.Module(name="cdnajit_loop")
        self.module.triple = llvm.get_process_triple()
        function = ir.Function(self.module, ir.FunctionType(I32, [PTR, PTR]), name=LOOP_ENTRY)
        self.function = function
        self.slots, self.table = function.args
        self.entry = ir.IRBuilder(function.append_basic_block("entry"))   # stack slots only
        self.b = ir.IRBuilder(function.append_basic_block("start"))
        self.counter = self.entry.alloca(I64, name="counter")
        self.work = self.entry.alloca(I64, name="work")
        self.memcpy = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, ir.IntType(1)]),
                                  name="llvm.memcpy.p0.p0.i64")
        self.b.store(ir.Constant(I64, 0), self.work)
        run_type = ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I64])
        self.direct = {k: ir.Function(self.module, run_type, name=direct_entry(k)) for k in direct}
        bound, self.bound_base = TABLE_HEADER + len(kernel_plans), []
        for plan in kernel_plans:
            self.bound_base.append(bound)
            bound += len(plan["scalars"])

    # -- the address table

    def address(self, slot: int) -> ir.Value:
        return self.b.load(self.b.gep(self.slots, [ir.Constant(I64, slot)], source_etype=I64), typ=I64)

    def set_address(self, slot: int, value: ir.Value) -> None:
        self.b.store(value, self.b.gep(self.slots, [ir.Constant(I64, slot)], source_etype=I64))

    def table_entry(self, index: int) -> ir.Value:
        return self.b.load(self.b.gep(self.table, [ir.Constant(I64, index)], source_etype=I64), typ=I64)

    def pointer(self, address: ir.Value) -> ir.Value:
        return self.b.inttoptr(address, PTR)

    # -- steps

    def build(self, step: dict) -> str:
        self.step(step)
        self.b.ret(ir.Constant(I32, FINISHED))
        self.entry.branch(self.function.basic_blocks[1])
        return str(self.module)

    def block(self, block: dict) -> None:
        for step in block["steps"]:
            self.step(step)

    def step(self, step: dict) -> None:
        kind = step["op"]
        if kind == "kernel":
            self.launch(step)
        elif kind == "reshape":
            self.set_address(step["result"], self.address(step["input"]))
        elif kind == "while":
            self.loop(step)
        elif kind == "cond":
            self.branch(step)
        # "allocate": its results' buffers are in the arena already

    def launch(self, step: dict) -> None:
        b, plan = self.b, self.kernel_plans[step["kernel"]]
        addresses = [self.address(slot) for slot in step["inputs"]]
        for slot, dtype, shape in step["results"]:
            if step["in_place"]:
                target = addresses[0]
                self.set_address(slot, target)
                if is_aligned_buffer(dtype, math.prod(shape), readonly=False):
                    # The update's operand came from a launch (passes/in_place.py), which aligned it.
                    misaligned = b.icmp_unsigned("!=", b.urem(target, ir.Constant(I64, WRITTEN_BUFFER_ALIGNMENT)),
                                                 ir.Constant(I64, 0))
                    with b.if_then(misaligned, likely=False):
                        b.ret(ir.Constant(I32, MISALIGNED))
                addresses.append(target)
            else:
                addresses.append(self.address(slot))
        base = self.bound_base[step["kernel"]]
        addresses += [self.table_entry(base + i) for i in range(len(plan["scalars"]))]
        total = math.prod(plan["grid"])
        if total == 0:
            return
        self.count_work(total * math.prod(plan["workgroup_size"]))
        arguments = self.entry.alloca(ir.ArrayType(I64, max(len(addresses), 1)))
        for i, value in enumerate(addresses):
            b.store(value, b.gep(arguments, [ir.Constant(I64, 0), ir.Constant(I64, i)]))
        arguments = b.bitcast(arguments, PTR)
        if plan["parallel"]:
            self.call_entry(PARALLEL_LAUNCH, ir.VoidType(), [ir.Constant(I64, step["kernel"]), arguments])
        else:
            b.store(ir.Constant(I64, 0), self.counter)
            run_arguments = [arguments, self.counter, ir.Constant(I64, total), ir.Constant(I64, total)]
            if step["kernel"] in self.direct:
                b.call(self.direct[step["kernel"]], run_arguments)
            else:
                self.call_entry(TABLE_HEADER + step["kernel"], ir.VoidType(), run_arguments)

    def call_entry(self, entry: int, result, args: list) -> ir.Value:
        """Call the function whose address is the table's entry `entry`."""
        signature = ir.FunctionType(result, [a.type for a in args])
        return self.b.call(self.b.inttoptr(self.table_entry(entry), ir.PointerType(signature)), args)

    def count_work(self, amount: int) -> ir.Value:
        total = self.b.add(self.b.load(self.work, typ=I64), ir.Constant(I64, amount))
        self.b.store(total, self.work)
        return total

    def poll(self) -> None:
        """Count an iteration; run Python's pending signal handlers when POLL_WORK has been done
        since they last ran, and return INTERRUPTED when one raised."""
        b = self.b
        due = b.icmp_signed(">=", self.count_work(1), ir.Constant(I64, POLL_WORK))
        with b.if_then(due, likely=False):
            b.store(ir.Constant(I64, 0), self.work)
            gil = self.call_entry(GIL_ENSURE, I32, [])
            raised = b.icmp_signed("<", self.call_entry(CHECK_SIGNALS, I32, []), ir.Constant(I32, 0))
            with b.if_then(raised, likely=False):
                self.call_entry(CLEAR_ERROR, ir.VoidType(), [])
            self.call_entry(GIL_RELEASE, ir.VoidType(), [gil])
            with b.if_then(raised, likely=False):
                b.ret(ir.Constant(I32, INTERRUPTED))

    def other_spare(self, carry: Carry, current: ir.Value) -> ir.Value:
        first, second = (self.address(slot) for slot in carry.spares)
        return self.b.select(self.b.icmp_unsigned("==", current, first), second, first)

    def loop(self, step: dict) -> None:
        b, cond, body = self.b, step["cond"], step["body"]
        carries = self.layout.carries[id(step)]
        for k, operand in enumerate(step["operands"]):
            value = self.address(operand)
            self.set_address(cond["params"][k], value)
            self.set_address(body["params"][k], value)
        header = self.function.append_basic_block("while")
        run_body = self.function.append_basic_block("body")
        done = self.function.append_basic_block("done")
        b.branch(header)
        b.position_at_end(header)
        self.poll()
        self.block(cond)
        predicate = b.load(self.pointer(self.address(cond["outputs"][0])), typ=I8)
        b.cbranch(b.icmp_unsigned("!=", predicate, ir.Constant(I8, 0)), run_body, done)
        b.position_at_end(run_body)
        for k, carry in enumerate(carries):
            if carry.kind == "alternate":
                self.set_address(carry.root, self.other_spare(carry, self.address(body["params"][k])))
        self.block(body)
        updated = []
        for k, carry in enumerate(carries):
            current = self.address(body["params"][k])
            if carry.kind == "same":
                updated.append(current)
            elif carry.kind == "alternate":
                updated.append(self.address(body["outputs"][k]))
            else:
                source, spare = self.address(body["outputs"][k]), self.other_spare(carry, current)
                moved = b.icmp_unsigned("!=", source, current)
                with b.if_then(moved):
                    b.call(self.memcpy, [self.pointer(spare), self.pointer(source), ir.Constant(I64, carry.nbytes),
                                         ir.Constant(ir.IntType(1), 0)])
                updated.append(b.select(moved, spare, current))
        for k, value in enumerate(updated):
            self.set_address(cond["params"][k], value)
            self.set_address(body["params"][k], value)
        b.branch(header)
        b.position_at_end(done)
        for k, result in enumerate(step["results"]):
            self.set_address(result, self.address(body["params"][k]))

    def branch(self, step: dict) -> None:
        b, branches = self.b, step["branches"]
        dtype = step["index_dtype"]
        index = b.load(self.pointer(self.address(step["index"])), typ=MEMORY_TYPES[dtype])
        last = ir.Constant(I64, len(branches) - 1)
        if dtype in SIGNED_INTS:
            index = b.sext(index, I64) if index.type != I64 else index
            index = b.select(b.icmp_signed("<", index, ir.Constant(I64, 0)), ir.Constant(I64, 0), index)
            chosen = b.select(b.icmp_signed(">", index, last), last, index)
        else:
            index = b.zext(index, I64) if index.type != I64 else index
            chosen = b.select(b.icmp_unsigned(">", index, last), last, index)
        join = self.function.append_basic_block("joined")
        targets = [self.function.append_basic_block(f"branch{i}") for i in range(len(branches))]
        switch = b.switch(chosen, targets[-1])
        for i, (target, region) in enumerate(zip(targets, branches)):
            switch.add_case(ir.Constant(I64, i), target)
            b.position_at_end(target)
            for param, operand in zip(region["params"], step["operands"]):
                self.set_address(param, self.address(operand))
            self.block(region)
            for result, output in zip(step["results"], region["outputs"]):
                self.set_address(result, self.address(output))
            b.branch(join)
        b.position_at_end(join)


def loop_module(step: dict, layout: LoopLayout, kernel_plans: list[dict]) -> str:
    """The LLVM IR text of the step's native loop (unoptimised), declaring the entries of its
    direct kernels (`link_kernels` brings their code)."""
    return LoopBuilder(layout, kernel_plans, direct_kernels(step, kernel_plans)).build(step)


def link_kernels(loop_text: str, kernel_texts: dict[int, str]) -> str:
    """The loop's module with each direct kernel's module (kernel index -> its unoptimised LLVM
    text, codegen/host.py) linked in, its entry renamed to the loop's name for it and made
    internal, so that LLVM may inline it and drop it. The kernels' own internal symbols are
    renamed apart by the linker."""
    with LLVM_LOCK:
        loop = llvm.parse_assembly(loop_text)
        for index, text in kernel_texts.items():
            kernel = llvm.parse_assembly(text)
            kernel.get_function(ENTRY).name = direct_entry(index)
            loop.link_in(kernel)
            loop.get_function(direct_entry(index)).linkage = "internal"
        loop.verify()
        return str(loop)


def compile_loop(text: str) -> bytes:
    """The object code of a loop_module text, its symbol LOOP_ENTRY the entry."""
    return llvm_worker.run("object_code", text, set())
