"""A recursive-doubling all-reduce's steps driven from native code (frontend/distributed.py:
DoublingPlan), so that a short message pays MPI's own latency and not a Python round trip per step.

    i64 cdnajit_mpi_steps(i64* plan)        FINISHED, or TIMED_OUT / FAILED at step plan[STEP]

Per step, the function starts the step's MPI persistent requests (MPI_Startall), polls them
(MPI_Testall) until they complete, spinning for plan[SPIN_NS] and then yielding the CPU between
polls, compares the header received with the call's signature (a mismatch flag ORed in and written
to the header sent next), and, while nothing mismatched, runs the step's reduction: the compiled
CCL kernel's `run` over its argument block on this thread (codegen/host.py: build_entry), as
CompiledKernel.launch runs a small grid. It returns at the first error (a truncated receive: a
partner's longer message) or when a step outlasts plan[TIMEOUT_NS], leaving the rest to the caller.
The MPI functions are called through their addresses (plan words; MPICH's MPI_Request is an int).

The plan, i64 words: MPI_Startall, MPI_Testall, the kernel's run (0: no reduction), its counter's
address, its workgroups, the step count, SPIN_NS, TIMEOUT_NS, the signature, the sent header's
address, then MISMATCH and STEP (written back), then per step STEP_WORDS: its request count, the
address of its requests (int32s), its argument block (0: none) and the header it receives (0: none).
"""
from __future__ import annotations

import ctypes
from functools import lru_cache

import llvmlite.binding as llvm
import llvmlite.ir as ir

from .native import link_module

(STARTALL, TESTALL, RUN, COUNTER, TOTAL, STEPS, SPIN_NS, TIMEOUT_NS, SIGNATURE, SENT_HEADER, MISMATCH,
 STEP) = range(12)
HEADER_WORDS = 12
STEP_WORDS = 4
FINISHED, TIMED_OUT, FAILED = 0, 1, 2
STATUSES_IGNORE = 1          # MPICH's MPI_STATUSES_IGNORE, (MPI_Status *) 1
CLOCK_MONOTONIC = 1
ENTRY = "cdnajit_mpi_steps"

I32, I64, PTR, VOID = ir.IntType(32), ir.IntType(64), ir.PointerType(), ir.VoidType()
STARTALL_TYPE = ir.FunctionType(I32, [I32, PTR])
TESTALL_TYPE = ir.FunctionType(I32, [I32, PTR, PTR, PTR])
RUN_TYPE = ir.FunctionType(VOID, [PTR, PTR, I64, I64])     # codegen/host.py: build_entry


def constant(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def build_module() -> ir.Module:
    module = ir.Module(name="cdnajit_mpi_steps")
    module.triple = llvm.get_process_triple()
    clock_gettime = ir.Function(module, ir.FunctionType(I32, [I32, PTR]), name="clock_gettime")
    sched_yield = ir.Function(module, ir.FunctionType(I32, []), name="sched_yield")
    function = ir.Function(module, ir.FunctionType(I64, [I64.as_pointer()]), name=ENTRY)
    (plan,) = function.args
    blocks = {name: function.append_basic_block(name) for name in (
        "entry", "step", "start", "poll", "polled", "waiting", "idle", "done_polling", "check", "reduce", "next",
        "finished", "timed_out", "failed")}
    b = ir.IRBuilder(blocks["entry"])

    def word(index) -> ir.Value:
        return b.gep(plan, [index if isinstance(index, ir.Value) else constant(index)])

    def load(index) -> ir.Value:
        return b.load(word(index), typ=I64)

    clock = b.alloca(ir.ArrayType(I64, 2))   # struct timespec: seconds, nanoseconds
    flag = b.alloca(I32)

    def now() -> ir.Value:
        b.call(clock_gettime, [ir.Constant(I32, CLOCK_MONOTONIC), clock])
        seconds, nanoseconds = (b.load(b.gep(clock, [ir.Constant(I32, 0), ir.Constant(I32, k)]), typ=I64) for k in (0, 1))
        return b.add(b.mul(seconds, constant(10 ** 9)), nanoseconds)
    startall = b.inttoptr(load(STARTALL), ir.PointerType(STARTALL_TYPE))
    testall = b.inttoptr(load(TESTALL), ir.PointerType(TESTALL_TYPE))
    run, counter, total, steps = load(RUN), b.inttoptr(load(COUNTER), I64.as_pointer()), load(TOTAL), load(STEPS)
    spin, timeout, signature = load(SPIN_NS), load(TIMEOUT_NS), load(SIGNATURE)
    sent_header = b.inttoptr(load(SENT_HEADER), I64.as_pointer())
    b.store(signature, sent_header)
    b.store(constant(0), b.gep(sent_header, [constant(1)]))
    b.branch(blocks["step"])

    b.position_at_end(blocks["step"])
    step = b.phi(I64, name="step")
    mismatch = b.phi(I64, name="mismatch")
    step.add_incoming(constant(0), blocks["entry"])
    mismatch.add_incoming(constant(0), blocks["entry"])
    b.store(step, word(STEP))
    b.store(mismatch, word(MISMATCH))
    b.cbranch(b.icmp_signed("<", step, steps), blocks["start"], blocks["finished"])

    b.position_at_end(blocks["start"])
    base = b.add(constant(HEADER_WORDS), b.mul(step, constant(STEP_WORDS)))
    count = b.trunc(load(base), I32)
    requests = b.inttoptr(load(b.add(base, constant(1))), PTR)
    started = b.call(startall, [count, requests])
    began = now()
    b.cbranch(b.icmp_signed("!=", started, ir.Constant(I32, 0)), blocks["failed"], blocks["poll"])

    b.position_at_end(blocks["poll"])
    tested = b.call(testall, [count, requests, flag, b.inttoptr(constant(STATUSES_IGNORE), PTR)])
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
    header = b.inttoptr(load(b.add(base, constant(3))), I64.as_pointer())
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
    block = load(b.add(base, constant(2)))
    wanted = b.and_(b.and_(b.icmp_signed("!=", block, constant(0)), b.icmp_signed("!=", run, constant(0))),
                    b.icmp_signed("==", now_mismatch, constant(0)))
    with b.if_then(wanted):
        b.store(constant(0), counter)
        b.call(b.inttoptr(run, ir.PointerType(RUN_TYPE)), [b.inttoptr(block, PTR), counter, total, total])
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
    """The driver, compiled and linked once per process: (ctypes function of the plan's address,
    its library, kept alive with it)."""
    library = link_module(build_module(), ENTRY)
    return ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(library[ENTRY]), library
