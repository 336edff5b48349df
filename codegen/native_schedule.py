"""An executable's whole schedule as one native function: its launches, loops (their conditions,
bodies, nested loops and branches) and branches, and the copies into its results, with no
Python between entry and return.

    layout = schedule_layout(plan["body"], plan["outputs"], slot_count)   # arena, address table
    text = schedule_module(plan["body"], layout, kernel_plans)  # LLVM IR of `schedule(slots, table)`
    code = compile_schedule(link_kernels(text, {k: kernel_text for k in direct}), optimize=bool(direct))

The plan and the kernel plans are plain data (runtime/executable.py's plan). The function reads
and writes one *address table*, `slots`: an i64 per SSA slot of the program, the address of that
value's elements, then two spare buffers per loop carry, then one buffer per copied result. The
caller fills the addresses of the program's parameters and constants (`layout.reads`) and of the
results' buffers (`layout.outputs`, allocated per call: results are arrays the caller owns), and
passes the address of one `arena` per call; the function sets the addresses of the arena's
buffers (`layout.buffers`: offsets into it) on entry, and the rest as it runs: an in-place
update's result and a reshape take their operand's address, a loop's or a branch's results its
carried or chosen values'.

A result is written where its kernel writes it when it is a top-level kernel's result (or a view
of one, an in-place update of one, or a loop carry kept in one), and no earlier result holds
that buffer: the caller gives that kernel the result's buffer. Any other result (a parameter
returned, a constant, a value in the arena) is copied into its buffer at the end.

A launch of one workgroup on this thread inside a loop (a loop counter's increment, a compare, a
one-element read or update) calls its kernel's `run` directly: the kernel's module is linked
into the schedule's (`link_kernels`), where LLVM inlines it, so that scalar work costs a few
instructions rather than an indirect call and a walk over a workgroup's items. Other launches
call through the table (at top level, a launch runs once: linking its kernel again would cost
compile time and gain nothing).

`table` is the executable's: i64 entries [the worker pool's `pool_launch` and the pool
(runtime/native_pool.py), Python's PyGILState_Ensure, PyErr_CheckSignals, PyErr_Clear and
PyGILState_Release, the host callback entry, each kernel's `run`, each kernel's bound scalar
addresses], so that the code
is the same in every process and is stored with the program. A launch builds its argument block
on the stack and calls the kernel's `run` (codegen/host.py) over its whole grid on this thread,
or, for a launch worth the worker pool (runtime/launch.py: `runs_in_parallel`), calls
`pool_launch(pool, run, block, workgroups)`, whose threads wait in native code. Consecutive
launches that may run at once (`side_by_side`: none reads what another makes; every device's copy
of an op, in a multi-device program) are one `pool_launch` of `together_run` over all their
workgroups, so that the devices run side by side and the pool's threads wait once, not per launch.

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

A host callback step (ir/ops/callback.py) calls the table's `host_callback(k, addresses) -> i32`
(runtime/native_schedule.py: a ctypes function that takes the GIL and runs the user's function on
copies of the values), k the step's position in `callback_steps`, `addresses` an array of its
inputs' addresses, then its results': the runtime writes the results (a pure callback's values, a
debug callback's token); a nonzero answer (the function raised) returns CALLBACK_FAILED at once, for
the runtime to raise what the function raised.
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
from .host_llvm import target_machine
from .llvm_kernel import I8, I32, I64, MEMORY_TYPES, PTR

SCHEDULE_ENTRY = "schedule"
FINISHED, INTERRUPTED, MISALIGNED, CALLBACK_FAILED = 0, 1, 2, 3
# Work between interrupt polls: about a millisecond of launched work-items, or of the iterations
# of a loop of scalar work (a poll takes the GIL: tens of nanoseconds when no thread holds it).
POLL_WORK = 1 << 20
# The table's entries before the kernels' `run` addresses.
POOL_LAUNCH, POOL, GIL_ENSURE, CHECK_SIGNALS, CLEAR_ERROR, GIL_RELEASE, HOST_CALLBACK = range(7)
TABLE_HEADER = 7


def blocks_of(step: dict) -> list[dict]:
    if step["op"] == "while":
        return [step["cond"], step["body"]]
    return step.get("branches", [])


def callback_steps(body: dict) -> list[dict]:
    """The program's host callback steps, in a fixed order (depth first): the k of each one's call."""
    found = []

    def visit(step):
        if step["op"] == "callback":
            found.append(step)
        for block in blocks_of(step):
            for inner in block["steps"]:
                visit(inner)
    for step in body["steps"]:
        visit(step)
    return found


def direct_kernels(body: dict, kernel_plans: list[dict]) -> list[int]:
    """The kernels the schedule calls directly (linked into its module): those launched on one
    workgroup, on this thread, inside a loop."""
    direct = set()

    def visit(step, in_loop: bool):
        if step["op"] == "kernel":
            plan = kernel_plans[step["kernel"]]
            if in_loop and math.prod(plan["grid"]) == 1 and not plan["parallel"]:
                direct.add(step["kernel"])
        for block in blocks_of(step):
            for inner in block["steps"]:
                visit(inner, in_loop or step["op"] == "while")
    for step in body["steps"]:
        visit(step, False)
    return sorted(direct)


def uses_pool(body: dict, kernel_plans: list[dict]) -> bool:
    """Whether the schedule launches on the worker pool: a launch worth it, or launches run together."""
    def visit(block: dict) -> bool:
        steps = block["steps"]
        return any(len(run) > 1 for run in side_by_side(steps, kernel_plans)) or any(
            step["op"] == "kernel" and kernel_plans[step["kernel"]]["parallel"] or any(map(visit, blocks_of(step)))
            for step in steps)
    return visit(body)


def direct_entry(kernel: int) -> str:
    return f"run_kernel{kernel}"


def value_bytes(dtype: str, shape) -> int:
    return math.prod(shape) * NUMPY_DTYPES[dtype].itemsize


# Steps that keep their place: nothing moves past them (side_by_side), as their effects (a host
# callback's) or the buffers they write (a loop's carry kept in its operand's) are in program order.
FIXED_STEPS = ("while", "cond", "callback")


def side_by_side(steps: list[dict], kernel_plans: list[dict]) -> list[list[int]]:
    """A block's step positions in runs, in the order the schedule runs them. A run of two or more
    is launches of a grid, none updating in place or reading a value another of them makes,
    together worth the worker pool (their plans' `pool_share`s, runtime/launch.py, add up to 1):
    every device's copy of an op in an unrolled program, or any such consecutive launches. Every
    other step is a run of its own. The layout gives a run's values buffers that no other value of
    the run shares, and the schedule launches the run as one job of the pool
    (`ScheduleBuilder.launch_together`).

    A launch moves up to join the latest earlier run that holds a launch of its own code (the plans'
    `key`) when it reads nothing made there or since, and no loop, branch or callback
    (FIXED_STEPS) lies between: so the devices' chains of an unrolled program, which the passes
    emit device by device (split_reductions' partial and final reduce), run op by op with every
    device's copy together. Else it joins the run just before it when that run is of launches it
    does not read. Moving a launch earlier only lengthens its results' lives, which the layout
    sees: it places values by the runs' order."""
    runs: list[list[int]] = []
    made: list[set[int]] = []      # the slots each run's steps make
    fixed = -1                     # the last run that nothing moves past

    def joinable(step):
        return step["op"] == "kernel" and not step["in_place"] and math.prod(kernel_plans[step["kernel"]]["grid"])

    def same_code(step, run):
        key = kernel_plans[step["kernel"]]["key"]
        return key is not None and any(kernel_plans[steps[k]["kernel"]]["key"] == key for k in run)

    def run_to_join(step) -> int | None:
        inputs = set(step["inputs"])
        for r in range(len(runs) - 1, fixed, -1):
            if inputs & made[r]:
                return None
            if all(joinable(steps[k]) for k in runs[r]) and same_code(step, runs[r]):
                return r
        return None

    for position, step in enumerate(steps):
        kind = step["op"]
        join = run_to_join(step) if joinable(step) else None
        if join is None and joinable(step) and runs and all(joinable(steps[k]) for k in runs[-1]) \
                and not made[-1] & set(step["inputs"]):
            join = len(runs) - 1
        if join is None:
            runs.append([])
            made.append(set())
            join = len(runs) - 1
        runs[join].append(position)
        if kind in ("kernel", "allocate", "callback"):
            made[join].update(slot for slot, _, _ in step["results"])
        elif kind == "reshape":
            made[join].add(step["result"])
        else:
            made[join].update(step["results"])
        if kind in FIXED_STEPS:
            fixed = join
    together = []
    for run in runs:
        if len(run) > 1 and sum(kernel_plans[steps[k]["kernel"]]["pool_share"] for k in run) < 1:
            together.extend([k] for k in run)   # small launches: one after another on this thread
        else:
            together.append(run)
    return together


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
class Output:
    """A result's buffer: at table slot `slot`, written there by the kernel that makes it
    (`copied_from` None) or copied from slot `copied_from` at the end. The caller allocates it, but
    where it is the array of the donated parameter `param`. `source` names the step that made the
    value (for an allocation error)."""
    slot: int
    copied_from: int | None
    dtype: str
    shape: tuple
    source: str
    param: int | None = None


@dataclass
class ScheduleLayout:
    reads: list[int]                               # the program's parameters and constants it reads
    buffers: list[tuple[int, int]]                 # (slot, arena offset): a buffer per value made inside
    arena_bytes: int
    table_slots: int                               # the address table's length
    outputs: list[Output]
    carries: dict[int, list[Carry]] = field(default_factory=dict)   # id(while step) -> its carries
    largest: tuple | None = None                   # (bytes, source, dtype, shape) of the largest arena buffer


def value_roots(block: dict) -> tuple[dict[int, int], set[int]]:
    """(root per slot of a block, the slots its own kernels make). A value's root is the value
    whose buffer holds it: an in-place update's or a reshape's is its operand's root, a loop's
    result of a carry kept in its buffer (a "same" carry) its operand's root."""
    roots, made = {}, set()
    for step in block["steps"]:
        kind = step["op"]
        if kind == "kernel" and step["in_place"]:
            source = step["inputs"][0]
            roots[step["results"][0][0]] = roots.get(source, source)
        elif kind == "reshape":
            roots[step["result"]] = roots.get(step["input"], step["input"])
        elif kind in ("kernel", "allocate", "callback"):
            made.update(slot for slot, _, _ in step["results"])
        elif kind == "while":
            body = step["body"]
            body_roots, _ = value_roots(body)
            for param, output, operand, result in zip(body["params"], body["outputs"], step["operands"],
                                                      step["results"]):
                if body_roots.get(output, output) == param:
                    roots[result] = roots.get(operand, operand)
    return roots, made


def aligned_bytes(nbytes: int) -> int:
    """An arena buffer's bytes: at least one, rounded up to the kernels' alignment."""
    return -(-max(nbytes, 1) // WRITTEN_BUFFER_ALIGNMENT) * WRITTEN_BUFFER_ALIGNMENT


def step_reads(step: dict) -> set[int]:
    """Every slot a step reads, inside its regions too (captured values included)."""
    kind = step["op"]
    if kind in ("kernel", "callback"):
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


def made_values(block: dict):
    """(slot, dtype, shape, source) of each value a block's steps make, inside their regions too,
    and the slots they define (results, regions' parameters)."""
    made, defined = [], set()

    def visit(step: dict, source: str) -> None:
        kind = step["op"]
        source = step.get("source", source)
        if kind in ("kernel", "allocate", "callback"):
            made.extend((slot, dtype, tuple(shape), source) for slot, dtype, shape in step["results"])
            defined.update(slot for slot, _, _ in step["results"])
        elif kind == "reshape":
            defined.add(step["result"])
        else:
            defined.update(step["results"])
            for block in blocks_of(step):
                defined.update(block["params"])
                for inner in block["steps"]:
                    visit(inner, source)
    for step in block["steps"]:
        visit(step, "the program")
    return made, defined


def schedule_layout(body: dict, outputs: list[list], slot_count: int, kernel_plans: list[dict],
                    donated=()) -> ScheduleLayout:
    """The arena and address table of a program's schedule (see the module's docstring).

    Buffers are assigned by liveness, block by block: a value made in a block lives from its step
    to the last step that reads it or a value held in its buffer (an in-place update of it, a
    view of it, a nested loop's or branch's result that may be it), or to the block's end if the
    block yields it; values that are never live together share bytes (the launches of a run that
    runs at once, `side_by_side`, count as one step). A nested loop or branch is
    one lifetime in its block, its region laid out the same way inside: a loop's region holds
    its carries' spare buffers, then its condition's and its body's buffers over the same bytes
    (they never live together: the condition's are dead once the body starts, and the body's once
    its results are carried); a branch's region holds its branches' over the same bytes. A
    result's own buffer (see the module's docstring) is not in the arena; nor is a result held in
    the array of a `donated` parameter (their indices), which is handed back as that result."""
    carries, spare_slot = {}, slot_count

    def block_region(block: dict, skipped: set[int]) -> tuple[int, list]:
        steps, lifetimes, roots = block["steps"], [], {}

        def read(slots, position):
            for slot in slots:
                for life in roots.get(slot, ()):
                    life.end = max(life.end, position)

        # A step's position is its run's place in the order the schedule runs them (side_by_side):
        # the steps of a run launched together share it, so that their values are live together.
        runs = side_by_side(steps, kernel_plans)
        at = {k: place for place, run in enumerate(runs) for k in run}
        for index, inner in enumerate(steps):
            position = at[index]
            read(step_reads(inner), position)
            kind = inner["op"]
            if kind == "reshape":
                roots[inner["result"]] = roots.get(inner["input"], [])
            elif kind == "kernel" and inner["in_place"]:
                roots[inner["results"][0][0]] = roots.get(inner["inputs"][0], [])
            elif kind in ("kernel", "allocate", "callback"):
                for slot, dtype, shape in inner["results"]:
                    if slot in skipped:      # a carry's root or a result's: a buffer of its own
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
        read(block["outputs"], len(runs))
        return first_fit(lifetimes)

    def branch_region(step: dict) -> tuple[int, list]:
        regions = [block_region(block, set()) for block in step["branches"]]
        return max(size for size, _ in regions), [p for _, placements in regions for p in placements]

    def loop_region(step: dict) -> tuple[int, list]:
        nonlocal spare_slot
        body = step["body"]
        roots, made = value_roots(body)
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

    values, defined = made_values(body)
    sources = {slot: source for slot, _, _, source in values}
    roots, made = value_roots(body)
    donated_slots = {body["params"][i]: i for i in donated}
    owned = {}   # root slot -> the result written in it
    for k, (slot, _, _) in enumerate(outputs):
        root = roots.get(slot, slot)
        if (root in made or root in donated_slots) and root not in owned:
            owned[root] = k
    arena_bytes, buffers = block_region(body, set(owned))
    result_buffers = []
    for k, (slot, dtype, shape) in enumerate(outputs):
        root = roots.get(slot, slot)
        source = sources.get(root, sources.get(slot, "the program"))
        if owned.get(root) == k:
            result_buffers.append(Output(root, None, dtype, tuple(shape), source, donated_slots.get(root)))
        else:
            result_buffers.append(Output(spare_slot, slot, dtype, tuple(shape), source))
            spare_slot += 1
    reads = set(body["params"]) | {slot for slot, _, _ in outputs}
    for step in body["steps"]:
        reads |= step_reads(step)
    arena_values = [(value_bytes(dtype, shape), source, dtype, shape) for slot, dtype, shape, source in values
                    if slot not in owned]
    return ScheduleLayout(sorted(reads - defined), buffers, arena_bytes, spare_slot, result_buffers, carries,
                          max(arena_values, default=None, key=lambda value: value[0]))


class ScheduleBuilder:
    """Builds `schedule(ptr slots, ptr table, i64 arena) -> i32` for a program's body."""

    def __init__(self, layout: ScheduleLayout, kernel_plans: list[dict], direct: list[int], callbacks: list[dict]):
        self.layout, self.kernel_plans = layout, kernel_plans
        self.callback_index = {id(step): k for k, step in enumerate(callbacks)}
        self.module = ir.Module(name="cdnajit_schedule")
        self.module.triple = llvm.get_process_triple()
        function = ir.Function(self.module, ir.FunctionType(I32, [PTR, PTR, I64]), name=SCHEDULE_ENTRY)
        self.function = function
        self.slots, self.table, self.arena = function.args
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

    def build(self, body: dict) -> str:
        for slot, offset in self.layout.buffers:
            # An arena past 2**63 bytes is never allocated (runtime/native_schedule.py refuses it
            # before the call): its offsets only need to be valid i64 constants.
            offset = (offset + (1 << 63)) % (1 << 64) - (1 << 63)
            self.set_address(slot, self.b.add(self.arena, ir.Constant(I64, offset)))
        self.block(body)
        for output in self.layout.outputs:
            nbytes = value_bytes(output.dtype, output.shape)
            if output.copied_from is not None and nbytes:
                self.copy(self.address(output.slot), self.address(output.copied_from), nbytes)
        self.b.ret(ir.Constant(I32, FINISHED))
        self.entry.branch(self.function.basic_blocks[1])
        return str(self.module)

    def block(self, block: dict) -> None:
        steps = block["steps"]
        for run in side_by_side(steps, self.kernel_plans):
            if len(run) > 1:
                self.launch_together([steps[k] for k in run])
            else:
                self.step(steps[run[0]])

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
        elif kind == "callback":
            self.callback(step)
        # "allocate": its results' buffers are in the arena already

    def callback(self, step: dict) -> None:
        b = self.b
        slots = step["inputs"] + [slot for slot, _, _ in step["results"]]
        addresses = self.entry.alloca(ir.ArrayType(I64, max(len(slots), 1)))
        for i, slot in enumerate(slots):
            b.store(self.address(slot), b.gep(addresses, [ir.Constant(I64, 0), ir.Constant(I64, i)]))
        status = self.call_entry(HOST_CALLBACK, I32, [ir.Constant(I64, self.callback_index[id(step)]),
                                                      b.bitcast(addresses, PTR)])
        with b.if_then(b.icmp_signed("!=", status, ir.Constant(I32, 0)), likely=False):
            b.ret(ir.Constant(I32, CALLBACK_FAILED))

    def launch(self, step: dict) -> None:
        plan, arguments = self.kernel_plans[step["kernel"]], self.argument_block(step)
        if arguments is None:
            return
        total = ir.Constant(I64, math.prod(plan["grid"]))
        if plan["parallel"]:
            run = self.b.inttoptr(self.table_entry(TABLE_HEADER + step["kernel"]), PTR)
            self.call_entry(POOL_LAUNCH, ir.VoidType(), [self.pointer(self.table_entry(POOL)), run, arguments, total])
        else:
            self.b.store(ir.Constant(I64, 0), self.counter)
            run_arguments = [arguments, self.counter, total, total]
            if step["kernel"] in self.direct:
                self.b.call(self.direct[step["kernel"]], run_arguments)
            else:
                self.call_entry(TABLE_HEADER + step["kernel"], ir.VoidType(), run_arguments)

    def argument_block(self, step: dict) -> ir.Value | None:
        """A launch's argument block (on the stack), its results' addresses set; None for an empty
        grid, which runs nothing."""
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
            return None
        self.count_work(total * math.prod(plan["workgroup_size"]))
        arguments = self.entry.alloca(ir.ArrayType(I64, max(len(addresses), 1)))
        for i, value in enumerate(addresses):
            b.store(value, b.gep(arguments, [ir.Constant(I64, 0), ir.Constant(I64, i)]))
        return b.bitcast(arguments, PTR)

    def launch_together(self, steps: list[dict]) -> None:
        """Launches that may run at once (side_by_side) as one job of the pool, whose workgroups are
        every launch's in turn: each range of them runs the part of each launch's grid it covers
        (`together_run`), so the pool's threads go on from one launch to the next without waiting
        at the end of each for the others."""
        b = self.b
        job = self.entry.alloca(ir.ArrayType(I64, 2 + 3 * len(steps)))   # together_run reads it

        def store(index: int, value: ir.Value) -> None:
            b.store(value, b.gep(job, [ir.Constant(I64, 0), ir.Constant(I64, index)]))
        store(0, ir.Constant(I64, len(steps)))
        first = 0
        for k, step in enumerate(steps):
            store(1 + 3 * k, ir.Constant(I64, first))
            store(2 + 3 * k, self.table_entry(TABLE_HEADER + step["kernel"]))
            store(3 + 3 * k, b.ptrtoint(self.argument_block(step), I64))
            first += math.prod(self.kernel_plans[step["kernel"]]["grid"])
        store(1 + 3 * len(steps), ir.Constant(I64, first))
        self.call_entry(POOL_LAUNCH, ir.VoidType(), [self.pointer(self.table_entry(POOL)), self.together_run(),
                                                     b.bitcast(job, PTR), ir.Constant(I64, first)])

    def together_run(self) -> ir.Function:
        """`run(i64* job, i64* next, i64 last, i64 grab)`: a kernel entry's signature and protocol
        (codegen/host.py: build_entry) over a job of launches, job = [count, then per launch its
        first workgroup in the job, its `run` and its argument block, then the job's workgroups].
        It takes ranges of `grab` workgroups from `*next` until it reaches `last`, and runs each
        launch's part of a range through that launch's `run`, on a counter of its own that starts
        at the part's first workgroup, taking the part as one range."""
        if "together_run" in self.module.globals:
            return self.module.globals["together_run"]
        function = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I64]), name="together_run")
        function.linkage = "internal"
        job, next_pointer, last, grab = function.args
        entry, take, taken, launch, part, after_part, done = (
            function.append_basic_block(name) for name in ("entry", "take", "taken", "launch", "part", "after_part",
                                                           "done"))
        b = ir.IRBuilder(entry)

        def word(index: ir.Value) -> ir.Value:
            return b.load(b.gep(job, [index], source_etype=I64), typ=I64)

        def at_most(x: ir.Value, y: ir.Value) -> ir.Value:
            return b.select(b.icmp_signed("<", x, y), x, y)
        counter = b.alloca(I64, name="part_counter")
        count = word(ir.Constant(I64, 0))
        b.branch(take)
        b.position_at_end(take)
        # Release, as a kernel's own take: the caller, reading the final count, sees every part's stores.
        first = b.atomic_rmw("add", next_pointer, grab, "acq_rel")
        b.cbranch(b.icmp_signed("<", first, last), taken, done)
        b.position_at_end(taken)
        end = at_most(b.add(first, grab), last)
        b.branch(launch)
        b.position_at_end(launch)
        k = b.phi(I64, name="launch")
        k.add_incoming(ir.Constant(I64, 0), taken)
        at = b.add(ir.Constant(I64, 1), b.mul(k, ir.Constant(I64, 3)))
        start, stop = word(at), word(b.add(at, ir.Constant(I64, 3)))   # this launch's workgroups in the job
        low = b.select(b.icmp_signed(">", first, start), first, start)
        high = at_most(end, stop)
        b.cbranch(b.icmp_signed("<", low, high), part, after_part)
        b.position_at_end(part)
        run = b.inttoptr(word(b.add(at, ir.Constant(I64, 1))), ir.PointerType(function.function_type))
        arguments = b.inttoptr(word(b.add(at, ir.Constant(I64, 2))), PTR)
        own_first = b.sub(low, start)
        b.store(own_first, counter)
        b.call(run, [arguments, counter, b.sub(high, start), b.sub(high, low)])
        b.branch(after_part)
        b.position_at_end(after_part)
        following = b.add(k, ir.Constant(I64, 1))
        k.add_incoming(following, after_part)
        b.cbranch(b.and_(b.icmp_signed("<", following, count), b.icmp_signed("<", stop, end)), launch, take)
        b.position_at_end(done)
        b.ret_void()
        return function

    def call_entry(self, entry: int, result, args: list) -> ir.Value:
        """Call the function whose address is the table's entry `entry`."""
        signature = ir.FunctionType(result, [a.type for a in args])
        return self.b.call(self.b.inttoptr(self.table_entry(entry), ir.PointerType(signature)), args)

    def copy(self, target: ir.Value, source: ir.Value, nbytes: int) -> None:
        self.b.call(self.memcpy, [self.pointer(target), self.pointer(source), ir.Constant(I64, nbytes),
                                  ir.Constant(ir.IntType(1), 0)])

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
                    self.copy(spare, source, carry.nbytes)
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


def schedule_module(body: dict, layout: ScheduleLayout, kernel_plans: list[dict]) -> str:
    """The LLVM IR text of a program's schedule (unoptimised), declaring the entries of its direct
    kernels (`link_kernels` brings their code)."""
    return ScheduleBuilder(layout, kernel_plans, direct_kernels(body, kernel_plans), callback_steps(body)).build(body)


def link_kernels(schedule_text: str, kernel_texts: dict[int, str]) -> str:
    """The schedule's module with each direct kernel's module (kernel index -> its unoptimised LLVM
    text, codegen/host.py) linked in, its entry renamed to the schedule's name for it and made
    internal, so that LLVM may inline it and drop it. The kernels' own internal symbols are
    renamed apart by the linker."""
    with LLVM_LOCK:
        schedule = llvm.parse_assembly(schedule_text)
        for index, text in kernel_texts.items():
            kernel = llvm.parse_assembly(text)
            kernel.get_function(ENTRY).name = direct_entry(index)
            schedule.link_in(kernel)
            schedule.get_function(direct_entry(index)).linkage = "internal"
        schedule.verify()
        return str(schedule)


def compile_schedule(text: str, optimize: bool) -> bytes:
    """The object code of a schedule_module text, its symbol SCHEDULE_ENTRY the entry. `optimize`:
    through the kernels' pipeline (codegen/host_llvm.py), which inlines the linked kernels; a
    schedule without any is a few loads, stores and calls, and only goes through code generation
    (here, in a millisecond or two: W9's compile time counts every program's schedule)."""
    if optimize:
        return llvm_worker.run("object_code", text, set())
    with LLVM_LOCK:
        parsed = llvm.parse_assembly(text)
        parsed.verify()
        return target_machine().emit_object(parsed)
