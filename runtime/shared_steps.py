"""The collectives between processes of one host through a shared-memory segment (frontend/distributed.py:
SharedSegment, SharedPlan), run by one native function, so that a short collective costs a few
cache-line transfers rather than MPI's transport and a Python round trip per step.

    i64 cdnajit_shared_steps(i64* plan)     FINISHED, or TIMED_OUT / MISMATCH at op plan[STEP]

The segment holds a control block of CONTROL_BYTES per process (its flags READY and REDUCED, one
64-byte line each, written by that process alone, read by the others), then two halves, each an
identity of IDENTITY_BYTES per process (its call's SIGNATURE first) and a data slot per process.
The processes number their calls alike (the caller's sequence number, plan[SEQUENCE]); call s uses
half s % 2, and a flag set to s says that its process has passed that point of call s. So a
process writes half s % 2 in call s only after every process was READY in call s - 1, that is done
with call s - 2, the last to read that half: no process waits for the others to finish reading.

A plan is a header of i64 words (the kernel's run and its counter, pool_launch and the pool, the
process count and this process's rank, the address of process 0's control block and of half 0,
the bytes between the halves, TIMEOUT_NS, the op count, SEQUENCE and the OUTPUT base (a
call sets both), the ABSOLUTE and SHARED bases (0; the call's half, which the function sets), the
INPUT base (the caller's message, where a plan reads it: a call sets it), then STEP written back)
and a list of ops, OP_WORDS each: the kind, three (buffer, byte offset) operands A, B and C, a
count, the reduction's workgroups and whether the worker pool runs it:

    COPY     C <- A, COUNT bytes
    REDUCE   C <- A <reducer> B, COUNT elements (the compiled CCL kernel: operand A first)
    SIGNAL   this process's flag A_OFFSET <- SEQUENCE (a release store)
    WAIT     until every process's flag A_OFFSET >= SEQUENCE (acquire loads), yielding the CPU between
             polls; TIMED_OUT after TIMEOUT_NS
    CHECK    MISMATCH unless every process's SIGNATURE (in the call's half) equals this process's

So a plan is made once per collective, shape, dtype and reducer, and a call sets two words (three
where the plan reads its input).

A waiter yields at once rather than spinning first: sched_yield returns at once where no other
thread wants the CPU, and a spinning waiter where the host is busy holds a CPU that the process
it waits for needs (measured on a loaded 2-CPU host: an 8-byte all-reduce took 8 us yielding at
once, 12, 28 and 3100 us spinning 5, 20 and 100 us first).
"""
from __future__ import annotations

from functools import lru_cache

import llvmlite.binding as llvm
import llvmlite.ir as ir

from .distributed_steps import POOL_LAUNCH_TYPE, RUN_TYPE, constant, monotonic_clock, plan_function

(RUN, COUNTER, POOL_LAUNCH, POOL, PROCESSES, RANK, CONTROL, HALVES, HALF_BYTES, TIMEOUT_NS, OP_COUNT,
 SEQUENCE, OUTPUT_BASE, ABSOLUTE_BASE, SHARED_BASE, INPUT_BASE, STEP) = range(17)
HEADER_WORDS = 17
OUTPUT, ABSOLUTE, SHARED, INPUT = range(4)    # the buffers whose addresses (the *_BASE words) operands add to
(KIND, A_BUFFER, A_OFFSET, B_BUFFER, B_OFFSET, C_BUFFER, C_OFFSET, COUNT, WORKGROUPS, PARALLEL) = range(10)
OP_WORDS = 10
COPY, REDUCE, SIGNAL, WAIT, CHECK = range(5)
READY, REDUCED = range(2)              # the flags, one 64-byte line each
FLAG_BYTES = 64
CONTROL_BYTES = 2 * FLAG_BYTES
IDENTITY_BYTES = 1024                  # its first word the call's signature
FINISHED, TIMED_OUT, MISMATCH = range(3)
ENTRY = "cdnajit_shared_steps"

I32, I64, PTR = ir.IntType(32), ir.IntType(64), ir.PointerType()


def build_module() -> ir.Module:
    module = ir.Module(name="cdnajit_shared_steps")
    module.triple = llvm.get_process_triple()
    sched_yield = ir.Function(module, ir.FunctionType(I32, []), name="sched_yield")
    memcpy = module.declare_intrinsic("llvm.memcpy", [PTR, PTR, I64])
    function = ir.Function(module, ir.FunctionType(I64, [I64.as_pointer()]), name=ENTRY)
    (plan,) = function.args
    blocks = {name: function.append_basic_block(name) for name in (
        "entry", "op", "dispatch", "copy", "reduce", "signal", "wait", "scan", "polled", "unready", "idle",
        "check", "compare", "next", "finished", "timed_out", "mismatch")}
    b = ir.IRBuilder(blocks["entry"])

    def word(index, words=plan) -> ir.Value:
        return b.gep(words, [index if isinstance(index, ir.Value) else constant(index)])

    def load(index, words=plan) -> ir.Value:
        return b.load(word(index, words), typ=I64)

    def operand(this, buffer: int) -> ir.Value:
        """The address of an op's operand: its buffer's base (a plan word) plus its offset."""
        base = load(b.add(constant(OUTPUT_BASE), load(buffer, this)))
        return b.add(base, load(buffer + 1, this))

    def flag(process: ir.Value, index: ir.Value) -> ir.Value:
        at = b.add(control, b.add(b.mul(process, constant(CONTROL_BYTES)), b.mul(index, constant(FLAG_BYTES))))
        return b.inttoptr(at, I64.as_pointer())

    now = monotonic_clock(module, b)
    block = b.alloca(ir.ArrayType(I64, 4))   # the reduction's argument block: A, B, C, the count's address
    count_word = b.alloca(I64)
    run, counter = load(RUN), b.inttoptr(load(COUNTER), I64.as_pointer())
    pool_launch = b.inttoptr(load(POOL_LAUNCH), ir.PointerType(POOL_LAUNCH_TYPE))
    pool = b.inttoptr(load(POOL), PTR)
    processes, rank, control = load(PROCESSES), load(RANK), load(CONTROL)
    timeout, ops, sequence = load(TIMEOUT_NS), load(OP_COUNT), load(SEQUENCE)
    half = b.add(load(HALVES), b.mul(b.and_(sequence, constant(1)), load(HALF_BYTES)))
    b.store(half, word(SHARED_BASE))
    b.branch(blocks["op"])

    b.position_at_end(blocks["op"])
    step = b.phi(I64, name="step")
    step.add_incoming(constant(0), blocks["entry"])
    b.store(step, word(STEP))
    b.cbranch(b.icmp_signed("<", step, ops), blocks["dispatch"], blocks["finished"])

    b.position_at_end(blocks["dispatch"])
    this = b.gep(plan, [b.add(constant(HEADER_WORDS), b.mul(step, constant(OP_WORDS)))])
    switch = b.switch(load(KIND, this), blocks["next"])
    for kind, name in ((COPY, "copy"), (REDUCE, "reduce"), (SIGNAL, "signal"), (WAIT, "wait"), (CHECK, "check")):
        switch.add_case(constant(kind), blocks[name])

    b.position_at_end(blocks["copy"])
    source, destination = b.inttoptr(operand(this, A_BUFFER), PTR), b.inttoptr(operand(this, C_BUFFER), PTR)
    b.call(memcpy, [destination, source, load(COUNT, this), ir.Constant(ir.IntType(1), 0)])
    b.branch(blocks["next"])

    b.position_at_end(blocks["reduce"])
    for k, buffer in enumerate((A_BUFFER, B_BUFFER, C_BUFFER)):
        b.store(operand(this, buffer), b.gep(block, [ir.Constant(I32, 0), ir.Constant(I32, k)]))
    b.store(load(COUNT, this), count_word)
    b.store(b.ptrtoint(count_word, I64), b.gep(block, [ir.Constant(I32, 0), ir.Constant(I32, 3)]))
    kernel, workgroups = b.inttoptr(run, ir.PointerType(RUN_TYPE)), load(WORKGROUPS, this)
    with b.if_else(b.icmp_signed("!=", load(PARALLEL, this), constant(0))) as (parallel, alone):
        with parallel:
            b.call(pool_launch, [pool, b.bitcast(kernel, PTR), b.bitcast(block, PTR), workgroups])
        with alone:             # on this thread, as CompiledKernel.launch runs a small grid
            b.store(constant(0), counter)
            b.call(kernel, [b.bitcast(block, PTR), counter, workgroups, workgroups])
    b.branch(blocks["next"])

    b.position_at_end(blocks["signal"])
    b.store_atomic(sequence, flag(rank, load(A_OFFSET, this)), "release", 8)
    b.branch(blocks["next"])

    # WAIT: scan the processes' flags from the first not yet seen set, remembering where it stopped.
    b.position_at_end(blocks["wait"])
    index = load(A_OFFSET, this)
    began = now()
    b.branch(blocks["scan"])
    b.position_at_end(blocks["scan"])
    process = b.phi(I64, name="process")
    process.add_incoming(constant(0), blocks["wait"])
    b.cbranch(b.icmp_signed("<", process, processes), blocks["polled"], blocks["next"])
    b.position_at_end(blocks["polled"])
    value = b.load_atomic(flag(process, index), "acquire", 8, typ=I64)
    process.add_incoming(b.add(process, constant(1)), blocks["polled"])
    b.cbranch(b.icmp_signed(">=", value, sequence), blocks["scan"], blocks["unready"])
    b.position_at_end(blocks["unready"])
    waited = b.sub(now(), began)
    b.cbranch(b.icmp_signed(">", waited, timeout), blocks["timed_out"], blocks["idle"])
    b.position_at_end(blocks["idle"])
    b.call(sched_yield, [])
    process.add_incoming(process, blocks["idle"])
    b.branch(blocks["scan"])

    b.position_at_end(blocks["check"])
    def signature(process: ir.Value) -> ir.Value:
        return b.load(b.inttoptr(b.add(half, b.mul(process, constant(IDENTITY_BYTES))), I64.as_pointer()), typ=I64)
    mine = signature(rank)
    b.branch(blocks["compare"])
    b.position_at_end(blocks["compare"])
    other = b.phi(I64, name="other")
    other.add_incoming(constant(0), blocks["check"])
    with b.if_then(b.icmp_signed(">=", other, processes)):
        b.branch(blocks["next"])
    theirs = signature(other)
    other.add_incoming(b.add(other, constant(1)), b.block)
    b.cbranch(b.icmp_signed("==", theirs, mine), blocks["compare"], blocks["mismatch"])

    b.position_at_end(blocks["next"])
    step.add_incoming(b.add(step, constant(1)), blocks["next"])
    b.branch(blocks["op"])

    for name, status in (("finished", FINISHED), ("timed_out", TIMED_OUT), ("mismatch", MISMATCH)):
        b.position_at_end(blocks[name])
        b.ret(constant(status))
    return module


@lru_cache(maxsize=1)
def shared_steps_function():
    """The driver, compiled and linked once per process (plan_function)."""
    return plan_function(build_module(), ENTRY)
