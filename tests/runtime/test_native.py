"""runtime/native_pool.py: the native worker pool. A launch's helpers run on CPUs other than the
caller's, each pinned to one, and the caller waits for exactly the helpers that joined."""
import ctypes
import os
import threading

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
import pytest

from cdnajit.runtime.launch import worker_pool
from cdnajit.runtime.native import link_module
from cdnajit.runtime.native_pool import pool_code

I64, PTR = ir.IntType(64), ir.PointerType()
# Reads the thread that took range 0 makes at most while it waits for another thread to take one.
PATIENCE = 1 << 31


def recording_run():
    """A `run(args, next, last, grab)` (codegen/host.py) that records, at each range's first
    workgroup, the CPU and the thread (pthread_self) that took it: args[0] and args[1] are i64
    arrays of `last` elements. The thread that takes range 0 holds it until another thread has
    taken a range, so that a launch's caller always has a helper."""
    module = ir.Module(name="recording")
    module.triple = llvm.get_process_triple()
    sched_getcpu = ir.Function(module, ir.FunctionType(ir.IntType(32), []), name="sched_getcpu")
    pthread_self = ir.Function(module, ir.FunctionType(I64, []), name="pthread_self")
    run = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I64]), name="run")
    args, counter, last, grab = run.args
    entry, take, record, hold, done = (run.append_basic_block(name) for name in ("entry", "take", "record", "hold",
                                                                                   "done"))
    b = ir.IRBuilder(entry)
    counter = b.bitcast(counter, I64.as_pointer())
    cpus, threads = (b.load(b.gep(args, [ir.Constant(I64, i)], source_etype=PTR), typ=PTR) for i in (0, 1))
    b.branch(take)
    b.position_at_end(take)
    first = b.atomic_rmw("add", counter, grab, "acq_rel")
    b.cbranch(b.icmp_signed("<", first, last), record, done)
    b.position_at_end(record)
    b.store(b.sext(b.call(sched_getcpu, []), I64), b.gep(cpus, [first], source_etype=I64))
    b.store(b.call(pthread_self, []), b.gep(threads, [first], source_etype=I64))
    b.cbranch(b.icmp_signed("==", first, ir.Constant(I64, 0)), hold, take)
    b.position_at_end(hold)
    reads = b.phi(I64)
    reads.add_incoming(ir.Constant(I64, 0), record)
    taken_by_another = b.icmp_signed(">", b.load_atomic(counter, "acquire", 8, typ=I64), grab)
    counted = b.add(reads, ir.Constant(I64, 1))
    reads.add_incoming(counted, hold)
    b.cbranch(b.or_(taken_by_another, b.icmp_signed(">=", counted, ir.Constant(I64, PATIENCE))), take, hold)
    b.position_at_end(done)
    b.ret_void()
    return link_module(module, "run")


def test_a_launch_runs_its_helpers_on_other_cpus_one_each():
    pool = worker_pool()
    caller_cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    if len(pool.cpus) < 2 or len(caller_cpus) < 2:
        pytest.skip("one CPU: a launch has no helpers")
    library = recording_run()
    here = min(caller_cpus)
    total = 64
    cpus, threads = np.full(total, -1, np.int64), np.zeros(total, np.uint64)
    block = (ctypes.c_void_p * 2)(cpus.ctypes.data, threads.ctypes.data)
    os.sched_setaffinity(0, {here})     # the caller stays on one CPU: its helpers must not use it
    try:
        for _ in range(20):
            pool.launch(library["run"], ctypes.addressof(block), total)
    finally:
        os.sched_setaffinity(0, caller_cpus)
    taken = cpus >= 0
    by_thread = {}
    for cpu, thread in zip(cpus[taken], threads[taken]):
        by_thread.setdefault(int(thread), set()).add(int(cpu))
    caller = threading.get_ident()
    helpers = {thread: on for thread, on in by_thread.items() if thread != caller}
    assert by_thread.get(caller, {here}) == {here}
    assert helpers, "range 0 waits for another thread: a helper must have taken a range"
    assert all(len(on) == 1 and here not in on for on in helpers.values())
    assert len(set().union(*helpers.values())) == len(helpers)   # one CPU per helper


def test_the_pool_exposes_what_native_callers_need():
    pool = worker_pool()
    code = pool_code()
    assert pool.address % 128 == 0 and code.launch_address == ctypes.cast(code.launch, ctypes.c_void_p).value
    assert ctypes.c_int64.from_address(pool.address).value == len(pool.cpus)   # the pool's worker count

