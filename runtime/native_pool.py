"""The worker pool, in native code: one thread per allowed CPU, pinned to it, waiting for launches
in native code, so that compiled code (a native loop) launches on the pool as Python does.

    void cdnajit_pool_serve(i64* pool, i64 worker)          a worker's whole life: never returns
    void cdnajit_pool_launch(i64* pool, void (*run)(void**, i64*, i64, i64), void** arg_block, i64 total)
                                                            one launch of a kernel's `run` (codegen/host.py)

Both (`serve` and `pool_launch` below) are built with llvmlite and linked into the process's JIT (runtime/native.py); `WorkerPool`
allocates the pool's memory, starts its threads (each calls `serve` through ctypes, which releases
the GIL) and is what `runtime/launch.py: worker_pool()` returns. A native caller calls
`pool_launch(pool.address, kernel's run, block, total)` at `pool_code().launch_address`.

A launch runs on the calling thread plus helpers, threads = min(total, workers), each taking
ranges of `grab` workgroups from one counter (codegen/host.py: build_entry). The pool's memory
(64-byte lines, i64 words; WORKER_BYTES per worker after the header):

    workers                  set once
    busy                     0 or 1: whether a launch holds the pool (one job at a time)
    generation, run, arg_block, total, grab     the job, written by the launch holding the pool
    seats                    (generation << 32) | seats left to claim
    counter                  the job's workgroup counter
    per worker: invite (the generation it was last invited to), sleeping, cpu; mutex; condition

Protocol. The launcher takes `busy` (compare-exchange 0 -> 1, acquire); a launcher that finds it
taken (another thread's launch, a concurrent native loop) runs its launch alone (grab = total, a
counter of its own) rather than wait. Holding the pool, it writes the job and the counter (0), then
`seats` (release), then each helper's `invite` (seq_cst; helpers are workers on CPUs other than the
caller's: a thread woken onto the caller's CPU would share its core), and signals the condition of
a helper whose `sleeping` it reads as 1 (seq_cst). It runs its own share, then closes the seats
(an exchange to (generation << 32) | 0): the seats left it returns tell how many helpers claimed
one, and it waits, spinning then yielding, for the counter to reach
(ceil(total / grab) + 1 + claimed) * grab (each thread ends with one take past the last range).
It then releases `busy` (release). A worker spins on its `invite` (acquire) for WORKER_SPIN_READS
reads, then blocks: under its mutex it sets `sleeping` (seq_cst), reads `invite` again (seq_cst)
and waits on its condition until `invite` changes. Seeing a new invite it claims a seat with a
compare-exchange on `seats` (acq_rel) that decrements the seats left only while the generation
in it is the invite's, then reads the job and runs it.

Why it is correct:
- A claimed helper sees the job: the fields and the counter's 0 are written before the release
  store of `seats`, and its claim (acquire) reads that store or an RMW after it.
- The caller waits only for helpers that claimed: every claim is a read-modify-write of `seats`
  before or after the closing exchange in its modification order; one before is counted (it took
  a seat), one after finds none left. So a worker that has not woken yet costs nothing.
- The caller's acquire read of the counter's final value comes after every helper's last take (a
  release RMW, after its workgroups' stores): it sees them all. A helper's last take is its last
  access to the job, so the pool can be handed to the next launch then.
- A stale worker (woken for an earlier generation, or slow between reading its invite and
  claiming) finds another generation or no seat in `seats` and runs nothing: it never joins a
  launch it was not invited to, which could put it on that caller's CPU. The generation in
  `seats` is 32 bits; a worker would have to stall for 2^32 launches to mistake one.
- No wake-up is lost: the launcher stores `invite` then reads `sleeping`, the worker stores
  `sleeping` then reads `invite`, all seq_cst, so at least one of them sees the other's store:
  the worker does not wait, or the launcher signals, taking the mutex, which the worker holds
  from before its store until the condition wait releases it.
Blocking uses a pthread mutex and condition per worker (POSIX: no architecture's syscall numbers,
and the textbook condition-variable argument above), paid for only when a worker sleeps; their
storage (MUTEX_BYTES each, zeroed and 128-byte aligned) is initialised with pthread_*_init.
"""
from __future__ import annotations

import ctypes
import os
import threading
from functools import lru_cache
from typing import NamedTuple

import llvmlite.binding as llvm
import llvmlite.ir as ir

from .native import link_module

# Ranges per thread in a parallel launch: enough that a thread slowed to half speed (a shared
# core, for tens of milliseconds at a time on a shared host) costs the launch
# a range or so rather than half its time, few enough that ranges of consecutive workgroups keep
# their locality (a GEMM's row of tiles sharing an A panel, a stream prefetching the next row).
RANGES_PER_THREAD = 8
# Reads of a spin-wait (tens of nanoseconds each): a worker watches for the next launch for about
# 200 us after a job before it blocks (waking a blocked thread costs tens of microseconds, and an
# MLP's launches come tens of microseconds apart), a launch's caller for its helpers' last
# workgroups for about 1 ms before it yields between reads.
WORKER_SPIN_READS = 8000
CALLER_SPIN_READS = 40000

LINE = 64
WORKERS, BUSY, GENERATION, RUN, ARG_BLOCK, TOTAL, GRAB, SEATS, COUNTER = (
    0, LINE, 2 * LINE, 2 * LINE + 8, 2 * LINE + 16, 2 * LINE + 24, 2 * LINE + 32, 3 * LINE, 4 * LINE)
HEADER_BYTES = 6 * LINE
# A worker's record: its words, then its mutex and condition, each in storage larger than any C
# library's pthread_mutex_t and pthread_cond_t.
INVITE, SLEEPING, CPU = 0, 8, 16
MUTEX_BYTES = 128
MUTEX, CONDITION = 2 * LINE, 2 * LINE + MUTEX_BYTES
WORKER_BYTES = 2 * LINE + 2 * MUTEX_BYTES
ALIGNMENT = 128
SEAT_BITS = 32
SEATS_MASK = (1 << SEAT_BITS) - 1

SERVE, LAUNCH = "cdnajit_pool_serve", "cdnajit_pool_launch"
SERVE_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)
LAUNCH_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)

I32, I64, PTR, VOID = ir.IntType(32), ir.IntType(64), ir.PointerType(), ir.VoidType()
POOL_POINTER = I64.as_pointer()   # the pool's memory as i64 words
RUN_POINTER = ir.PointerType(ir.FunctionType(VOID, [PTR, PTR, I64, I64]))   # codegen/host.py: build_entry


def constant(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


class PoolModule:
    """The IR of `serve` and `pool_launch`."""

    def __init__(self):
        self.module = module = ir.Module(name="cdnajit_pool")
        module.triple = llvm.get_process_triple()

        def declare(name, result, args):
            return ir.Function(module, ir.FunctionType(result, args), name=name)
        self.pause = declare("llvm.x86.sse2.pause", VOID, []) if module.triple.startswith("x86_64") else None
        self.mutex_lock = declare("pthread_mutex_lock", I32, [PTR])
        self.mutex_unlock = declare("pthread_mutex_unlock", I32, [PTR])
        self.cond_wait = declare("pthread_cond_wait", I32, [PTR, PTR])
        self.cond_signal = declare("pthread_cond_signal", I32, [PTR])
        self.sched_getcpu = declare("sched_getcpu", I32, [])
        self.sched_yield = declare("sched_yield", I32, [])
        self.build_serve()
        self.build_launch()

    @staticmethod
    def field(b: ir.IRBuilder, base: ir.Value, offset: int) -> ir.Value:
        """The i64 word `offset` bytes after `base` (an i64 pointer, which atomic stores want)."""
        return b.gep(base, [constant(offset // 8)])

    @staticmethod
    def worker(b: ir.IRBuilder, pool: ir.Value, index: ir.Value) -> ir.Value:
        return b.gep(pool, [b.add(constant(HEADER_BYTES // 8), b.mul(index, constant(WORKER_BYTES // 8)))])

    def spin(self, b: ir.IRBuilder, function: ir.Function, word: ir.Value, finished, limit: int) -> ir.Value:
        """Read `word` (acquire), pausing between reads, until finished(b, value) or `limit` reads;
        the builder ends after the loop, and the last value read is returned."""
        before = b.block
        loop, after = function.append_basic_block("spin"), function.append_basic_block("spun")
        b.branch(loop)
        b.position_at_end(loop)
        reads = b.phi(I64, name="reads")
        reads.add_incoming(constant(0), before)
        value = b.load_atomic(word, "acquire", 8, typ=I64)
        if self.pause is not None:
            b.call(self.pause, [])   # also lets a sibling hyperthread run
        counted = b.add(reads, constant(1))
        reads.add_incoming(counted, loop)
        b.cbranch(b.or_(finished(b, value), b.icmp_signed(">=", counted, constant(limit))), after, loop)
        b.position_at_end(after)
        return value

    def build_serve(self):
        function = ir.Function(self.module, ir.FunctionType(VOID, [POOL_POINTER, I64]), name=SERVE)
        pool, index = function.args
        block = function.append_basic_block
        entry, wait, block_on_condition, check, sleep, woken, claim, try_claim, stale, claim_seat, run_job = (
            block(name) for name in ("entry", "wait", "block", "check", "sleep", "woken", "claim", "try_claim",
                                     "stale", "claim_seat", "run_job"))
        b = ir.IRBuilder(entry)
        worker = self.worker(b, pool, index)
        invite, sleeping = self.field(b, worker, INVITE), self.field(b, worker, SLEEPING)
        mutex, condition = self.field(b, worker, MUTEX), self.field(b, worker, CONDITION)
        seats = self.field(b, pool, SEATS)
        first_seen = b.load_atomic(invite, "acquire", 8, typ=I64)
        b.branch(wait)

        b.position_at_end(wait)
        seen = b.phi(I64, name="seen")
        seen.add_incoming(first_seen, entry)
        spun = self.spin(b, function, invite, lambda b, value: b.icmp_signed("!=", value, seen), WORKER_SPIN_READS)
        spun_block = b.block
        b.cbranch(b.icmp_signed("!=", spun, seen), claim, block_on_condition)

        b.position_at_end(block_on_condition)
        b.call(self.mutex_lock, [mutex])
        b.store_atomic(constant(1), sleeping, "seq_cst", 8)
        b.branch(check)
        b.position_at_end(check)
        checked = b.load_atomic(invite, "seq_cst", 8, typ=I64)
        b.cbranch(b.icmp_signed("!=", checked, seen), woken, sleep)
        b.position_at_end(sleep)
        b.call(self.cond_wait, [condition, mutex])   # may wake spuriously: check again
        b.branch(check)
        b.position_at_end(woken)
        b.store_atomic(constant(0), sleeping, "seq_cst", 8)
        b.call(self.mutex_unlock, [mutex])
        b.branch(claim)

        b.position_at_end(claim)
        invited = b.phi(I64, name="invited")
        invited.add_incoming(spun, spun_block)
        invited.add_incoming(checked, woken)
        generation = b.and_(invited, constant(SEATS_MASK))
        first_offer = b.load_atomic(seats, "acquire", 8, typ=I64)
        b.branch(try_claim)

        b.position_at_end(try_claim)
        offer = b.phi(I64, name="offer")
        offer.add_incoming(first_offer, claim)
        open_seat = b.and_(b.icmp_signed("==", b.lshr(offer, constant(SEAT_BITS)), generation),
                           b.icmp_signed(">", b.and_(offer, constant(SEATS_MASK)), constant(0)))
        b.cbranch(open_seat, claim_seat, stale)
        b.position_at_end(stale)   # another generation's seats, or none left: back to waiting
        seen.add_incoming(invited, stale)
        b.branch(wait)
        b.position_at_end(claim_seat)
        result = b.cmpxchg(seats, offer, b.sub(offer, constant(1)), "acq_rel", "acquire")
        offer.add_incoming(b.extract_value(result, 0), claim_seat)
        b.cbranch(b.extract_value(result, 1), run_job, try_claim)

        b.position_at_end(run_job)
        run, arg_block, total, grab = (b.load(self.field(b, pool, offset), typ=I64)
                                       for offset in (RUN, ARG_BLOCK, TOTAL, GRAB))
        run, arg_block = b.inttoptr(run, RUN_POINTER), b.inttoptr(arg_block, PTR)
        b.call(run, [arg_block, self.field(b, pool, COUNTER), total, grab])
        seen.add_incoming(invited, run_job)
        b.branch(wait)

    def build_launch(self):
        function = ir.Function(self.module, ir.FunctionType(VOID, [POOL_POINTER, RUN_POINTER, PTR, I64]), name=LAUNCH)
        pool, run, arg_block, total = function.args
        block = function.append_basic_block
        entry, try_pool, alone, posting, invite_loop, consider, invite_one, wake, next_worker, invited_all, yield_loop, done = (
            block(name) for name in ("entry", "try_pool", "alone", "posting", "invite_loop", "consider", "invite_one", "wake",
                                     "next_worker", "invited_all", "yield", "done"))
        b = ir.IRBuilder(entry)
        own_counter = b.alloca(I64)
        workers = b.load(self.field(b, pool, WORKERS), typ=I64)
        threads = b.select(b.icmp_signed("<", total, workers), total, workers)
        b.cbranch(b.icmp_signed(">", threads, constant(1)), try_pool, alone)

        b.position_at_end(try_pool)
        taken = b.cmpxchg(self.field(b, pool, BUSY), constant(0), constant(1), "acquire", "monotonic")
        b.cbranch(b.extract_value(taken, 1), posting, alone)

        # One thread: the whole grid in one range, on a counter of its own.
        b.position_at_end(alone)
        b.store(constant(0), own_counter)
        b.call(run, [arg_block, own_counter, total, total])
        b.ret_void()

        b.position_at_end(posting)
        generation_word = self.field(b, pool, GENERATION)
        generation = b.add(b.load(generation_word, typ=I64), constant(1))
        b.store(generation, generation_word)
        divided = b.sdiv(total, b.mul(threads, constant(RANGES_PER_THREAD)))
        grab = b.select(b.icmp_signed("<", divided, constant(1)), constant(1), divided)
        for offset, value in ((RUN, b.ptrtoint(run, I64)), (ARG_BLOCK, b.ptrtoint(arg_block, I64)), (TOTAL, total),
                              (GRAB, grab)):
            b.store(value, self.field(b, pool, offset))
        counter = self.field(b, pool, COUNTER)
        b.store(constant(0), counter)   # no helper of an earlier launch takes from it any more
        helpers = b.sub(threads, constant(1))
        seats = self.field(b, pool, SEATS)
        seat_generation = b.shl(generation, constant(SEAT_BITS))
        b.store_atomic(b.or_(seat_generation, helpers), seats, "release", 8)
        here = b.sext(b.call(self.sched_getcpu, []), I64)   # -1 where it cannot say: any worker helps
        b.branch(invite_loop)

        # Invite the first `helpers` workers not on this CPU (there are enough: threads <= workers).
        b.position_at_end(invite_loop)
        worker_index = b.phi(I64, name="worker")
        invited = b.phi(I64, name="invited")
        worker_index.add_incoming(constant(0), posting)
        invited.add_incoming(constant(0), posting)
        b.cbranch(b.and_(b.icmp_signed("<", invited, helpers), b.icmp_signed("<", worker_index, workers)),
                  consider, invited_all)
        b.position_at_end(consider)
        worker = self.worker(b, pool, worker_index)
        cpu = b.load(self.field(b, worker, CPU), typ=I64)
        b.cbranch(b.icmp_signed("!=", cpu, here), invite_one, next_worker)
        b.position_at_end(invite_one)
        one_more = b.add(invited, constant(1))
        b.store_atomic(generation, self.field(b, worker, INVITE), "seq_cst", 8)
        sleeping = b.load_atomic(self.field(b, worker, SLEEPING), "seq_cst", 8, typ=I64)
        b.cbranch(b.icmp_signed("!=", sleeping, constant(0)), wake, next_worker)
        b.position_at_end(wake)
        mutex = self.field(b, worker, MUTEX)
        b.call(self.mutex_lock, [mutex])
        b.call(self.cond_signal, [self.field(b, worker, CONDITION)])
        b.call(self.mutex_unlock, [mutex])
        b.branch(next_worker)
        b.position_at_end(next_worker)
        counted = b.phi(I64)
        counted.add_incoming(invited, consider)
        counted.add_incoming(one_more, invite_one)
        counted.add_incoming(one_more, wake)
        worker_index.add_incoming(b.add(worker_index, constant(1)), next_worker)
        invited.add_incoming(counted, next_worker)
        b.branch(invite_loop)

        b.position_at_end(invited_all)
        b.call(run, [arg_block, counter, total, grab])
        # Close the seats: the helpers that claimed one are those this launch waits for.
        left = b.and_(b.atomic_rmw("xchg", seats, seat_generation, "acq_rel"), constant(SEATS_MASK))
        claimed = b.sub(helpers, left)
        ranges = b.sdiv(b.add(total, b.sub(grab, constant(1))), grab)
        final = b.mul(b.add(ranges, b.add(constant(1), claimed)), grab)

        def reached(b, value):
            return b.icmp_signed(">=", value, final)
        spun = self.spin(b, function, counter, reached, CALLER_SPIN_READS)
        b.cbranch(reached(b, spun), done, yield_loop)
        b.position_at_end(yield_loop)
        b.call(self.sched_yield, [])   # a helper is slow (a descheduled thread): lend this CPU meanwhile
        b.cbranch(reached(b, b.load_atomic(counter, "acquire", 8, typ=I64)), done, yield_loop)
        b.position_at_end(done)
        b.store_atomic(constant(0), self.field(b, pool, BUSY), "release", 8)
        b.ret_void()


class PoolCode(NamedTuple):
    serve: object           # serve, through ctypes (SERVE_SIGNATURE)
    launch: object          # pool_launch, through ctypes (LAUNCH_SIGNATURE)
    launch_address: int     # of pool_launch, for compiled code that launches on the pool
    library: llvm.ResourceTracker


@lru_cache(maxsize=1)
def pool_code() -> PoolCode:
    """The pool's functions, compiled and linked once per process (a forked child's copy works)."""
    library = link_module(PoolModule().module, SERVE, LAUNCH)
    launch_address = library[LAUNCH]
    return PoolCode(SERVE_SIGNATURE(library[SERVE]), LAUNCH_SIGNATURE(launch_address), launch_address, library)


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on (a `taskset` or container limit included)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


class WorkerPool:
    """One worker thread per allowed CPU, pinned to it, serving launches (`pool_launch`) from
    native code. Pinned, a worker can never be woken onto the caller's CPU: an unpinned one often
    is (Linux favours the waker's CPU), and the two then share one core for tens of milliseconds
    until the load balancer moves one, so that a 2-thread GEMM takes its 1-thread time in about a
    third of its calls. The pool's memory is never freed: its threads use it until the process
    ends, after Python's objects are gone."""

    def __init__(self):
        self.code = pool_code()
        self.cpus = allowed_cpus()
        libc = ctypes.CDLL(None)
        size = HEADER_BYTES + len(self.cpus) * WORKER_BYTES
        memory = ctypes.c_void_p()
        if libc.posix_memalign(ctypes.byref(memory), ALIGNMENT, size):
            raise MemoryError("cannot allocate the worker pool")
        self.address = memory.value
        ctypes.memset(self.address, 0, size)
        ctypes.c_int64.from_address(self.address + WORKERS).value = len(self.cpus)
        for index, cpu in enumerate(self.cpus):
            worker = self.address + HEADER_BYTES + index * WORKER_BYTES
            ctypes.c_int64.from_address(worker + CPU).value = cpu
            libc.pthread_mutex_init(ctypes.c_void_p(worker + MUTEX), None)
            libc.pthread_cond_init(ctypes.c_void_p(worker + CONDITION), None)
        for index, cpu in enumerate(self.cpus):
            threading.Thread(target=self.serve, args=(index, cpu), name=f"cdnajit-cpu{cpu}", daemon=True).start()

    def serve(self, index: int, cpu: int):
        try:
            os.sched_setaffinity(0, {cpu})   # 0: this thread
        except (AttributeError, OSError):    # no affinity on this system, or the CPU is gone: unpinned
            pass
        self.code.serve(self.address, index)

    def launch(self, run: int, arg_block: int, total: int) -> None:
        """Run the `run` entry at address `run` over `total` workgroups on this thread and the
        workers of other CPUs (or on this thread alone while another launch holds the pool)."""
        self.code.launch(self.address, run, arg_block, total)
