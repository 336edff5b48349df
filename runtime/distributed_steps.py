"""The steps of an all-reduce, all-gather or reduce-scatter between processes driven from native
code (frontend/distributed.py: DoublingPlan, RingPlan), so that a step pays MPI's own latency and
not a Python round trip.

    i64 cdnajit_mpi_steps(i64* plan)        FINISHED, or TIMED_OUT / FAILED at step plan[STEP]

Per step, the function starts the step's transfers: MPI persistent requests (MPI_Startall:
recursive doubling's, whose buffers are the plan's own) or, where the step lists *posts*, one
MPI_Isend or MPI_Irecv per post (the ring's, on the caller's buffers of this call). It polls them
(MPI_Testall) until they complete, spinning for plan[SPIN_NS] and then yielding the CPU between
polls, compares the header received with the call's signature (a mismatch flag ORed in and written
to the header sent next), and, while nothing mismatched, runs the step's reduction: the compiled
CCL kernel's `run` over the step's argument block and grid, on this thread as CompiledKernel.launch
runs a small grid, or through the worker pool's `pool_launch` (runtime/native_pool.py) for a
grid worth it. It returns at the first error (a truncated receive: a partner's longer message) or
when a step outlasts plan[TIMEOUT_NS], leaving the rest to the caller. The MPI functions are called
through their addresses (plan words; MPICH's MPI_Request, MPI_Datatype and MPI_Comm are ints).

The plan, i64 words: MPI_Startall, MPI_Testall, MPI_Isend, MPI_Irecv, MPI_BYTE's and the
communicator's handles, the posts' tag, pool_launch and the pool (0 where no step is parallel), the
kernel's run (0: no reduction), its counter's address, the step count, SPIN_NS, TIMEOUT_NS, the
signature, the sent header's address (0: no header), the addresses of the INPUT, OUTPUT and
SCRATCH buffers (a call sets them), then MISMATCH and STEP (written back), then per step
STEP_WORDS: its request count, the address of its requests (int32s), its argument block (0: none),
the header it receives (0: none), its grid's workgroups, whether the pool runs it, its posts (0:
persistent requests) and its operands (0: the block is complete). A post is POST_WORDS: receive
(1) or send (0), a buffer (INPUT, OUTPUT, SCRATCH) and a byte offset into it, the bytes (below
2**31) and the peer; post j's request is the step's request j. Operands are OPERAND_WORDS: the
buffer and byte offset of the block's first three addresses (received, mine, out), which the
function writes into the block before the run. So a plan is made once, and a call on new buffers
sets three words.
"""
from __future__ import annotations

import ctypes
from functools import lru_cache

import llvmlite.binding as llvm
import llvmlite.ir as ir

from .native import link_module

(STARTALL, TESTALL, ISEND, IRECV, BYTE, COMM, TAG, POOL_LAUNCH, POOL, RUN, COUNTER, STEPS, SPIN_NS, TIMEOUT_NS,
 SIGNATURE, SENT_HEADER, INPUT_BASE, OUTPUT_BASE, SCRATCH_BASE, MISMATCH, STEP) = range(21)
HEADER_WORDS = 21
INPUT, OUTPUT, SCRATCH = range(3)      # the buffers whose addresses (the *_BASE words) posts and operands add to
(REQUEST_COUNT, REQUESTS, BLOCK, RECEIVED_HEADER, WORKGROUPS, PARALLEL, POSTS, OPERANDS) = range(8)
STEP_WORDS = 8
(RECEIVES, BUFFER, OFFSET, BYTES, PEER) = range(5)
POST_WORDS = 5
OPERAND_WORDS = 6                      # (buffer, offset) of the reduction's received, mine and out
FINISHED, TIMED_OUT, FAILED = 0, 1, 2
STATUSES_IGNORE = 1          # MPICH's MPI_STATUSES_IGNORE, (MPI_Status *) 1
CLOCK_MONOTONIC = 1
ENTRY = "cdnajit_mpi_steps"

I32, I64, PTR, VOID = ir.IntType(32), ir.IntType(64), ir.PointerType(), ir.VoidType()
STARTALL_TYPE = ir.FunctionType(I32, [I32, PTR])
TESTALL_TYPE = ir.FunctionType(I32, [I32, PTR, PTR, PTR])
# MPI_Isend(buffer, count, datatype, peer, tag, comm, request); MPI_Irecv's is the same.
POST_TYPE = ir.FunctionType(I32, [PTR, I32, I32, I32, I32, I32, PTR])
RUN_TYPE = ir.FunctionType(VOID, [PTR, PTR, I64, I64])     # codegen/host.py: build_entry
POOL_LAUNCH_TYPE = ir.FunctionType(VOID, [PTR, PTR, PTR, I64])   # runtime/native_pool.py: pool_launch


def constant(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def monotonic_clock(module: ir.Module, b: ir.IRBuilder):
    """now(): emits a read of CLOCK_MONOTONIC in nanoseconds at the builder's position (its timespec
    allocated where the builder is now: the function's entry)."""
    clock_gettime = ir.Function(module, ir.FunctionType(I32, [I32, PTR]), name="clock_gettime")
    clock = b.alloca(ir.ArrayType(I64, 2))   # struct timespec: seconds, nanoseconds

    def now() -> ir.Value:
        b.call(clock_gettime, [ir.Constant(I32, CLOCK_MONOTONIC), clock])
        seconds, nanoseconds = (b.load(b.gep(clock, [ir.Constant(I32, 0), ir.Constant(I32, k)]), typ=I64) for k in (0, 1))
        return b.add(b.mul(seconds, constant(10 ** 9)), nanoseconds)
    return now


def plan_function(module: ir.Module, entry: str):
    """A driver `i64 entry(i64* plan)` compiled and linked: (its ctypes function of the plan's
    address, its library, kept alive with it)."""
    library = link_module(module, entry)
    return ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(library[entry]), library


def build_module() -> ir.Module:
    module = ir.Module(name="cdnajit_mpi_steps")
    module.triple = llvm.get_process_triple()
    sched_yield = ir.Function(module, ir.FunctionType(I32, []), name="sched_yield")
    function = ir.Function(module, ir.FunctionType(I64, [I64.as_pointer()]), name=ENTRY)
    (plan,) = function.args
    blocks = {name: function.append_basic_block(name) for name in (
        "entry", "step", "start", "persistent", "post", "started", "poll", "polled", "waiting", "idle",
        "done_polling", "check", "reduce", "next", "finished", "timed_out", "failed")}
    b = ir.IRBuilder(blocks["entry"])

    def word(index, words=plan) -> ir.Value:
        return b.gep(words, [index if isinstance(index, ir.Value) else constant(index)])

    def load(index, words=plan) -> ir.Value:
        return b.load(word(index, words), typ=I64)

    def function_at(index, kind: ir.FunctionType) -> ir.Value:
        return b.inttoptr(load(index), ir.PointerType(kind))

    def i32(value: ir.Value) -> ir.Value:
        return b.trunc(value, I32)

    def buffer_address(buffer: ir.Value, offset: ir.Value) -> ir.Value:
        return b.add(load(b.add(constant(INPUT_BASE), buffer)), offset)

    now = monotonic_clock(module, b)
    flag = b.alloca(I32)
    startall, testall = function_at(STARTALL, STARTALL_TYPE), function_at(TESTALL, TESTALL_TYPE)
    isend, irecv = function_at(ISEND, POST_TYPE), function_at(IRECV, POST_TYPE)
    byte, comm, tag = i32(load(BYTE)), i32(load(COMM)), i32(load(TAG))
    pool_launch, pool = function_at(POOL_LAUNCH, POOL_LAUNCH_TYPE), b.inttoptr(load(POOL), PTR)
    run, counter, steps = load(RUN), b.inttoptr(load(COUNTER), I64.as_pointer()), load(STEPS)
    spin, timeout, signature = load(SPIN_NS), load(TIMEOUT_NS), load(SIGNATURE)
    sent_header = b.inttoptr(load(SENT_HEADER), I64.as_pointer())
    with b.if_then(b.icmp_signed("!=", load(SENT_HEADER), constant(0))):
        b.store(signature, sent_header)
        b.store(constant(0), b.gep(sent_header, [constant(1)]))
    entry_end = b.block
    b.branch(blocks["step"])

    b.position_at_end(blocks["step"])
    step = b.phi(I64, name="step")
    mismatch = b.phi(I64, name="mismatch")
    step.add_incoming(constant(0), entry_end)
    mismatch.add_incoming(constant(0), entry_end)
    b.store(step, word(STEP))
    b.store(mismatch, word(MISMATCH))
    b.cbranch(b.icmp_signed("<", step, steps), blocks["start"], blocks["finished"])

    b.position_at_end(blocks["start"])
    this = b.gep(plan, [b.add(constant(HEADER_WORDS), b.mul(step, constant(STEP_WORDS)))])
    count = load(REQUEST_COUNT, this)
    requests = b.inttoptr(load(REQUESTS, this), PTR)
    posts = load(POSTS, this)
    b.cbranch(b.icmp_signed("==", posts, constant(0)), blocks["persistent"], blocks["post"])

    b.position_at_end(blocks["persistent"])
    started = b.call(startall, [i32(count), requests])
    b.cbranch(b.icmp_signed("!=", started, ir.Constant(I32, 0)), blocks["failed"], blocks["started"])

    # One MPI_Isend or MPI_Irecv per post, its request the step's request j.
    b.position_at_end(blocks["post"])
    j = b.phi(I64, name="post")
    j.add_incoming(constant(0), blocks["start"])
    with b.if_else(b.icmp_signed("<", j, count)) as (then, otherwise):
        with then:
            at = b.gep(b.inttoptr(posts, I64.as_pointer()), [b.mul(j, constant(POST_WORDS))])
            request = b.gep(b.inttoptr(load(REQUESTS, this), I32.as_pointer()), [j])
            buffer = b.inttoptr(buffer_address(load(BUFFER, at), load(OFFSET, at)), PTR)
            arguments = [buffer, i32(load(BYTES, at)), byte, i32(load(PEER, at)), tag, comm, request]
            receives = b.icmp_signed("!=", load(RECEIVES, at), constant(0))
            posted = b.call(b.select(receives, irecv, isend), arguments)
            j.add_incoming(b.add(j, constant(1)), b.block)
            b.cbranch(b.icmp_signed("!=", posted, ir.Constant(I32, 0)), blocks["failed"], blocks["post"])
        with otherwise:
            b.branch(blocks["started"])
    b.unreachable()

    b.position_at_end(blocks["started"])
    began = now()
    b.branch(blocks["poll"])

    b.position_at_end(blocks["poll"])
    tested = b.call(testall, [i32(count), requests, flag, b.inttoptr(constant(STATUSES_IGNORE), PTR)])
    b.cbranch(b.icmp_signed("!=", tested, ir.Constant(I32, 0)), blocks["failed"], blocks["polled"])
    b.position_at_end(blocks["polled"])
    b.cbranch(b.icmp_signed("!=", b.load(flag, typ=I32), ir.Constant(I32, 0)), blocks["done_polling"], blocks["waiting"])
    b.position_at_end(blocks["waiting"])
    waited = b.sub(now(), began)
    b.cbranch(b.icmp_signed(">", waited, timeout), blocks["timed_out"], blocks["idle"])
    b.position_at_end(blocks["idle"])
    with b.if_then(b.icmp_signed(">", waited, spin)):
        b.call(sched_yield, [])
    b.branch(blocks["poll"])

    b.position_at_end(blocks["done_polling"])
    header = b.inttoptr(load(RECEIVED_HEADER, this), I64.as_pointer())
    checked = b.block
    b.cbranch(b.icmp_signed("!=", b.ptrtoint(header, I64), constant(0)), blocks["check"], blocks["reduce"])
    b.position_at_end(blocks["check"])
    differs = b.zext(b.icmp_signed("!=", b.load(header, typ=I64), signature), I64)
    flagged = b.or_(mismatch, b.or_(differs, b.load(b.gep(header, [constant(1)]), typ=I64)))
    b.store(flagged, b.gep(sent_header, [constant(1)]))
    b.branch(blocks["reduce"])

    b.position_at_end(blocks["reduce"])
    now_mismatch = b.phi(I64, name="now_mismatch")
    now_mismatch.add_incoming(mismatch, checked)
    now_mismatch.add_incoming(flagged, blocks["check"])
    block, workgroups = load(BLOCK, this), load(WORKGROUPS, this)
    wanted = b.and_(b.and_(b.icmp_signed("!=", block, constant(0)), b.icmp_signed("!=", run, constant(0))),
                    b.icmp_signed("==", now_mismatch, constant(0)))
    with b.if_then(wanted):
        operands = load(OPERANDS, this)
        with b.if_then(b.icmp_signed("!=", operands, constant(0))):
            pairs, arguments = b.inttoptr(operands, I64.as_pointer()), b.inttoptr(block, I64.as_pointer())
            for k in range(3):
                b.store(buffer_address(load(2 * k, pairs), load(2 * k + 1, pairs)), word(k, arguments))
        kernel = b.inttoptr(run, ir.PointerType(RUN_TYPE))
        with b.if_else(b.icmp_signed("!=", load(PARALLEL, this), constant(0))) as (parallel, alone):
            with parallel:
                b.call(pool_launch, [pool, b.bitcast(kernel, PTR), b.inttoptr(block, PTR), workgroups])
            with alone:
                b.store(constant(0), counter)
                b.call(kernel, [b.inttoptr(block, PTR), counter, workgroups, workgroups])
    b.branch(blocks["next"])
    b.position_at_end(blocks["next"])
    step.add_incoming(b.add(step, constant(1)), blocks["next"])
    mismatch.add_incoming(now_mismatch, blocks["next"])
    b.branch(blocks["step"])

    for name, status in (("finished", FINISHED), ("timed_out", TIMED_OUT), ("failed", FAILED)):
        b.position_at_end(blocks[name])
        b.ret(constant(status))
    return module


@lru_cache(maxsize=1)
def steps_function():
    """The driver, compiled and linked once per process (plan_function)."""
    return plan_function(build_module(), ENTRY)
