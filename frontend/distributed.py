"""`cdnajit.distributed`: processes started by `mpiexec`, and collectives between them.

    import cdnajit as cj
    cj.distributed.initialize()                  # under mpiexec -n 4 python train.py
    total = cj.distributed.all_reduce(local)     # every process's `local` summed, on every process
    mine = cj.distributed.reduce_scatter(local)  # this process's block of that sum (also all_gather, broadcast)

`initialize()` reads the rank and the number of processes from MPI (mpi4py over the MPICH wheel:
`pip install mpich mpi4py` brings `mpiexec`), after which `cj.devices()` lists every process's
devices, process p's numbered from p * CDNAJIT_NUM_DEVICES, and `cj.process_index()` is the rank.

Where every process of the job runs on this host (the usual `mpiexec -n P` on one machine), the
collectives skip MPI's transport: `initialize()` maps a shared-memory segment of them all
(`SharedSegment`: a file in /dev/shm, unlinked once mapped), and a collective of a message up to
SHARED_SLOT_BYTES per process runs as RCCL's and MPICH's intranode algorithms do (`SharedPlan`,
its steps run by one native call, runtime/shared_steps.py): each process copies its message into
its slot, sets a flag and waits for the others' (yielding the CPU between polls), then reduces or
gathers straight from their slots into its result, every process reducing in rank order, so that
all compute the same values; a long all-reduce of more than 2 processes has each process reduce
1/n of the message and the others copy that part (reduce-scatter then all-gather in shared memory).
Where a process reduces only a part (a reduce-scatter, a split all-reduce; from INPUT_READ_BYTES),
its slot holds only the parts the others reduce, and it reads its own from its input. An
all-reduce of a longer message runs as calls of a slot's piece each (`PiecesPlan`).
Calls alternate between two halves of the segment, so no process waits for the others to finish
reading. The identity a process writes beside its message (a signature of the collective, its
arguments, the shape and dtype) is the shape check: any difference is a ValueError on every
process, naming the first process whose shape differs or the calls.

Otherwise (processes on several hosts, another collective's message over a slot, or an
`algorithm` asked for) the
collectives run RCCL's and MPICH's algorithms between processes over MPI point-to-point
transfers: the ring (the message in one chunk per process; n - 1 reduce-scatter steps, each
receiving a chunk from the left neighbour while sending one to the right, then n - 1 all-gather
steps; no copies: partials are reduced straight into the result) for large messages, recursive
doubling (log2 n exchanges of the whole message; for n not a power of two, MPICH's fold of the
extra processes into their neighbours) for small ones, and a binomial tree (reduce to rank 0 in
ceil(log2 n) steps, then broadcast down), as an alpha-beta model of the host's steps chooses
(`host_all_reduce_algorithm`). Every reduction step is a compiled kernel: the CCL library's
`reduce` of two operands (the partial received and the process's own), written in place.

An all-reduce of a shape, dtype and reducer seen before reuses its plan (`AllReducePlan`: buffers,
persistent MPI requests, the reduction's argument blocks); the processes' shapes are compared in
the headers of recursive doubling's messages rather than by a collective of their own; recursive
doubling's steps (requests started and polled, headers compared, reductions run) are driven from
native code (runtime/distributed_steps.py), so a short all-reduce costs one native call between
copying its message in and its result out. The ring's and the tree's steps (all_reduce's,
all_gather's, reduce_scatter's and broadcast's; `StepPlan`) run in that native driver too, as one
call on the caller's buffers. A transfer that does not complete within `timeout`
seconds (a process that died or never called the collective) raises TimeoutError on the
processes waiting for it, rather than hanging; on one host the processes' shared-memory calls are
then out of step, and each later one raises RuntimeError.

A jitted program over a mesh of several processes' devices runs its collectives between processes
through these (frontend/sharding.py: ProcessCollectives), its all_to_all and ppermute through
`transfer`'s point-to-point messages.
"""
from __future__ import annotations

import atexit
import ctypes
import hashlib
import math
import mmap
import os
import tempfile
import time

import numpy as np

from ..codegen.host import WRITTEN_BUFFER_ALIGNMENT
from ..ir.core import Value, make_op
from ..ir.opdef import infer_types
from ..ir.targets import get_target
from ..ir.types import TensorType, dtype_name
from ..libs.ccl import LIBRARY, cost
from ..libs.ccl.kernels import ITEMS
from ..runtime import devices
from ..runtime import distributed_steps as steps
from ..runtime import shared_steps as shared
from ..runtime.distributed_steps import INPUT, OUTPUT, SCRATCH
from ..runtime.launch import (PARALLEL_MIN_WORK_ITEMS, STAGGER_BYTES, address, aligned_empty, aligned_empty_at,
                              compile_kernel, worker_pool)
from ..runtime.native_pool import pool_code

DEFAULT_TIMEOUT_S = 60.0
SPIN_S = 2e-3   # polling back to back for this long, then yielding the CPU between polls
# MPI: the mpi4py module, once initialized; spin_s: SPIN_S, or 0 where this host runs more of the
# job's processes than this process has CPUs, oversubscribed (a spinning poller then holds the CPU
# its partner needs: 4 processes on 2 CPUs took 5-15 ms per 8-byte all-reduce spinning, 0.2-5 ms
# yielding at once).
# shared: the SharedSegment of the job's processes where they all run on this host, else None.
_state = {"comm": None, "MPI": None, "spin_s": SPIN_S, "shared": None}


def comm():
    if _state["comm"] is None:
        raise RuntimeError("cdnajit.distributed: call cj.distributed.initialize() first (under mpiexec)")
    return _state["comm"]


def initialize():
    """Join the processes mpiexec started: this process's rank and their count from MPI."""
    try:
        from mpi4py import MPI
    except ImportError:
        raise ImportError("cdnajit.distributed needs mpi4py and an MPI: pip install mpich mpi4py") from None
    if _state["MPI"] is None:
        atexit.register(free_plans)
    _state["comm"], _state["MPI"] = MPI.COMM_WORLD, MPI
    host = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED)
    on_this_host = host.Get_size()
    host.Free()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    _state["spin_s"] = 0.0 if on_this_host > cpus else SPIN_S
    everyone_here = on_this_host == MPI.COMM_WORLD.Get_size() > 1
    _state["shared"] = SharedSegment.create(MPI.COMM_WORLD) if everyone_here else None
    devices.Processes.index, devices.Processes.count = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()


def is_initialized() -> bool:
    return _state["comm"] is not None


def shutdown():
    """Back to one process (the MPI library stays initialized until the interpreter exits)."""
    free_plans()
    _state["comm"], _state["shared"] = None, None
    devices.Processes.index, devices.Processes.count = 0, 1


class ReductionStep:
    """The compiled step `out = received <reducer> mine` (ccl.reduce of a group of 2, root 1: operand
    0 first), which may run in place (out is mine): one kernel per reducer and dtype, the element
    count its scalar parameter, run by the native driver with an argument block of the plan's
    (received, mine, out, the count's address)."""
    steps: dict = {}

    def __init__(self, reducer: str, dtype: np.dtype):
        t = TensorType(dtype_name(dtype), (1,))
        attrs = {"library": "ccl", "routine": "reduce", "solution": "", "axes": "processes", "group_size": 2,
                 "root": 1, "reducer": reducer}
        op = make_op("library_call", [Value(t), Value(t)], attrs, infer_types("library_call", [t, t], attrs))
        self.kernel = compile_kernel(LIBRARY.emit(op, f"ccl_{reducer}_step", get_target()))

    @classmethod
    def get(cls, reducer: str, dtype: np.dtype) -> "ReductionStep":
        key = (reducer, dtype.str)
        if key not in cls.steps:
            cls.steps[key] = cls(reducer, dtype)
        return cls.steps[key]


def timed_out(what: str, timeout: float) -> TimeoutError:
    return TimeoutError(f"cdnajit.distributed: {what} did not complete within {timeout} s on process "
                        f"{comm().Get_rank()} (a process died, or did not call the same collective)")


def wait(requests, timeout: float, what: str):
    """Wait for MPI requests, polling; TimeoutError after `timeout` s. The requests stay pending (MPI
    cannot cancel a collective's): the process should end, or MPI.COMM_WORLD.Abort() the job.
    Polling never sleeps: MPI moves a large message through its shared-memory cells only while a
    call of the process polls it (as its own blocking calls do), so a sleep between polls stalls the
    transfer; after SPIN_S (at once on an oversubscribed host) the poller yields its CPU between polls."""
    test_all = _state["MPI"].Request.Testall
    if test_all(requests):
        return
    start = time.monotonic()
    deadline, spin_until = start + timeout, start + _state["spin_s"]
    while not test_all(requests):
        now = time.monotonic()
        if now < spin_until:        # a transfer between processes of one host completes in microseconds
            continue
        if now > deadline:
            raise timed_out(what, timeout)
        os.sched_yield()


MAX_RANK = 32


def describe(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """An array's rank, shape and dtype as int64s, for the processes to compare."""
    if len(shape) > MAX_RANK:
        raise ValueError(f"cdnajit.distributed: arrays of rank above {MAX_RANK} are not supported ({shape})")
    code = int.from_bytes(dtype.str.encode().ljust(8, b" ")[:8], "little", signed=True)
    return np.array([len(shape), code, *shape] + [0] * (MAX_RANK - len(shape)), np.int64)


def described(words: np.ndarray) -> tuple[tuple, np.dtype]:
    """The shape and dtype that describe() wrote as `words`."""
    shape = tuple(int(d) for d in words[2:2 + int(words[0])])
    return shape, np.dtype(int(words[1]).to_bytes(8, "little", signed=True).decode().strip())


def check_same(x: np.ndarray, what: str, timeout: float):
    """Every process's shape and dtype equal (ValueError naming the first that differs); a
    non-blocking all-gather of the descriptions, so that a missing process times out here too."""
    mine = describe(x.shape, x.dtype)
    everyone = np.empty((comm().Get_size(), mine.size), np.int64)
    wait([comm().Iallgather(mine, everyone)], timeout, f"{what}'s shape check")
    for rank, theirs in enumerate(everyone):
        if not np.array_equal(theirs, mine):
            shape, dtype = described(theirs)
            raise ValueError(f"cdnajit.distributed.{what}: process {rank} has {shape} {dtype}, process "
                             f"{comm().Get_rank()} {x.shape} {x.dtype}")


def chunk_bounds(size: int, n: int, dtype: np.dtype) -> list[tuple[int, int]]:
    """n chunks of `size` elements, each starting at a WRITTEN_BUFFER_ALIGNMENT boundary of an aligned
    buffer (a kernel writing a misaligned one would go through a copy)."""
    step = max(1, WRITTEN_BUFFER_ALIGNMENT // dtype.itemsize)
    length = -(-size // (n * step)) * step
    return [(min(c * length, size), min((c + 1) * length, size)) for c in range(n)]


# Messages up to SHARED_SLOT_BYTES per process run in the shared-memory segment of the processes of
# one host. An all_reduce of more than 2 processes from SHARED_SPLIT_BYTES splits the reduction
# between them, each reducing 1/n of the message (RCCL's and MPICH's intranode reduce-scatter then
# all-gather) rather than every process reducing all of it, for one wait and two copies of the
# message more: n - 1 passes over 3S/n bytes and 2S copied, against n - 1 passes over 3S. For 2
# processes that moves more bytes, not fewer (measured on a loaded 2-CPU host: every process
# reducing all of it 1.1-1.3x faster from 16 KiB to 4 MiB); for 4, splitting was 1.2x faster at
# 4 MiB and 1.5x slower at 256 KiB. A result up to OWNED_RESULT_BYTES is
# written into the plan's own buffer and copied out (a copy of a short array costs less than
# allocating an aligned one for the kernel to write). From INPUT_READ_BYTES a process that reduces
# only a part of the message (a reduce_scatter's block, a split all_reduce's chunk) copies into its
# slot only the parts the others reduce and reads its own from its input: for 2 processes a 4 MiB
# reduce_scatter then copies 2 MiB rather than 4 (best of 40 calls on the loaded 2-CPU host:
# 1.32-1.34 -> 0.84-0.94 ms; its input's address costs 0.3 us more than a short message's copy).
# Moving a message in parts, each signalled once written and read one part behind while still in
# the caches, measured no faster on that host (more waits, each a chance to lose the CPU).
SHARED_SLOT_BYTES = 16 << 20
SHARED_SPLIT_BYTES = 1 << 20
OWNED_RESULT_BYTES = 16 << 10
INPUT_READ_BYTES = 16 << 10
SHM_DIRECTORY = "/dev/shm"


def free_bytes(directory: str) -> int:
    status = os.statvfs(directory)
    return status.f_bavail * status.f_frsize


class SharedSegment:
    """A shared-memory segment of every process of the job, all on this host (runtime/shared_steps.py:
    the processes' flags, then two halves, each the processes' identities and a data slot of
    SHARED_SLOT_BYTES per process, each slot STAGGER_BYTES further into its page than the one
    before: slots read together never alias in the CPU's 4 KiB store-to-load check). Rank 0 creates
    a file in /dev/shm, every process maps it, and rank 0 unlinks it once all have: nothing is left
    behind, however the job ends.

    `sequence` counts this process's calls (every process's count alike). A call that timed out
    leaves the processes out of step: `broken`, after which every shared-memory collective raises."""

    def __init__(self, mapping: mmap.mmap, n: int, rank: int):
        self.mapping, self.n, self.rank, self.sequence, self.broken = mapping, n, rank, 0, False
        self.base = ctypes.addressof(ctypes.c_char.from_buffer(mapping))
        self.halves, self.half_bytes = self.layout(n)

    @staticmethod
    def layout(n: int) -> tuple[int, int]:
        """(the byte offset of half 0, the bytes of a half) of a segment of n processes."""
        def pages(nbytes: int) -> int:
            return -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE
        return pages(n * shared.CONTROL_BYTES), pages(n * shared.IDENTITY_BYTES + n * (SHARED_SLOT_BYTES + STAGGER_BYTES))

    def slot(self, p: int) -> int:
        """The byte offset of process p's slot in a half."""
        return self.n * shared.IDENTITY_BYTES + p * (SHARED_SLOT_BYTES + STAGGER_BYTES)

    def array(self, half: int, offset: int, shape: tuple, dtype: np.dtype) -> np.ndarray:
        """The segment's bytes at `offset` in half `half` as an array."""
        start = self.halves + half * self.half_bytes + offset
        return np.frombuffer(self.mapping, dtype, math.prod(shape), start).reshape(shape)

    @classmethod
    def create(cls, world) -> "SharedSegment | None":
        """The job's segment (a collective call of every process), or None where /dev/shm is missing or has
        less room than the segment could fill (a container's 64 MiB, say: a page touched past a tmpfs's
        room is a SIGBUS, not an error)."""
        n, rank = world.Get_size(), world.Get_rank()
        halves, half_bytes = cls.layout(n)
        size, path = halves + 2 * half_bytes, None
        if rank == 0 and os.path.isdir(SHM_DIRECTORY) and free_bytes(SHM_DIRECTORY) >= size:
            descriptor, path = tempfile.mkstemp(prefix="cdnajit-", dir=SHM_DIRECTORY)
            os.ftruncate(descriptor, size)
            os.close(descriptor)
        path = world.bcast(path)
        if path is None:
            return None
        try:
            descriptor = os.open(path, os.O_RDWR)
            try:
                mapping = mmap.mmap(descriptor, size)
            finally:
                os.close(descriptor)
        finally:
            world.Barrier()
            if rank == 0:
                os.unlink(path)
        return cls(mapping, n, rank)

    def mismatch(self, what: str, shape: tuple, dtype: np.dtype) -> ValueError:
        """The error of a call whose processes' signatures differed (a CHECK's MISMATCH), from their
        identities in the call's half."""
        identities = self.array(self.sequence % 2, 0, (self.n, shared.IDENTITY_BYTES // 8), np.dtype(np.int64))
        mine = identities[self.rank, DESCRIPTION:CALL]
        for p, theirs in enumerate(identities):
            if not np.array_equal(theirs[DESCRIPTION:CALL], mine):
                other_shape, other_dtype = described(theirs[DESCRIPTION:CALL])
                return ValueError(f"cdnajit.distributed.{what}: process {p} has {other_shape} {other_dtype}, process "
                                  f"{self.rank} {shape} {dtype}")
        calls = "; ".join(f"process {p}: {words[CALL:].tobytes().rstrip(bytes(1)).decode(errors='replace')}"
                          for p, words in enumerate(identities))
        return ValueError(f"cdnajit.distributed.{what}: the processes called different collectives, or with "
                          f"different arguments ({calls})")


# A call's identity, IDENTITY_BYTES: its signature, the message's shape and dtype (describe), and the
# call (the collective and its arguments) as text, for a mismatch's error.
DESCRIPTION = 1
CALL = DESCRIPTION + MAX_RANK + 2
CALL_BYTES = shared.IDENTITY_BYTES - 8 * CALL


class SharedPlan:
    """A collective of one shape, dtype and set of arguments through the SharedSegment, kept between
    calls (PLANS): the ops of runtime/shared_steps.py, run as one native call. Each process copies
    its message into its slot of the call's half (here, before the native call), writes its
    identity there, sets READY, waits until every process is READY and compares their signatures
    (a mismatch: a ValueError on every process); then

    - all_reduce: every process reduces the slots in rank order into its result (so each computes
      the same values); for more than 2 processes from SHARED_SPLIT_BYTES, process p reduces only
      chunk p (chunk_bounds) into
      its result and its own slot, sets REDUCED, waits until every process is REDUCED, and copies
      the other chunks from their slots;
    - reduce_scatter: process p reduces block p of the slots in rank order;
    - all_gather: every process copies the slots into its result; broadcast: the root's slot;
    - a check (`message` False): nothing more: the identity alone, before an MPI algorithm's steps
      (the other collectives of a message over SHARED_SLOT_BYTES, or those of an `algorithm`
      asked for).

    `error`: raised once every process has compared the calls (an indivisible reduce_scatter, a
    broadcast's unknown root). `whole`: the plan is of a piece of a longer message of that shape
    (PiecesPlan), which its identity describes, and whose result a call writes into the caller's
    array."""

    def __init__(self, what: str, arguments: str, shape: tuple, dtype: np.dtype, reducer: str = "sum",
                 root: int = 0, message: bool = True, error: str | None = None, whole: tuple | None = None):
        segment = _state["shared"]
        n, rank = segment.n, segment.rank
        count, size = math.prod(shape), dtype.itemsize
        nbytes = count * size
        self.what, self.shape, self.dtype, self.error, self.described = what, shape, dtype, error, whole or shape
        text = f"{what} {arguments}".encode()[:CALL_BYTES]
        self.identity = np.zeros(shared.IDENTITY_BYTES // 8, np.int64)
        self.identity[0] = signature_of(text, shape, dtype.str)
        self.identity[DESCRIPTION:CALL] = describe(self.described, dtype)
        self.identity.view(np.uint8)[8 * CALL:][:len(text)] = np.frombuffer(text, np.uint8)
        message = message and error is None
        reduces = message and what in ("all_reduce", "reduce_scatter") and count > 0
        splits = what == "all_reduce" and n > 2 and nbytes >= SHARED_SPLIT_BYTES
        # Where a process reduces only a part of the message, its slot holds the other parts alone, and
        # its own part is read from its input (this process's message, the call's INPUT).
        self.reads_input = message and (what == "reduce_scatter" or splits) and nbytes >= INPUT_READ_BYTES
        self.kernel = ReductionStep.get(reducer, dtype).kernel if reduces else None
        self.slots = [segment.array(half, segment.slot(rank), shape, dtype) for half in (0, 1)] \
            if message and (what != "broadcast" or rank == root) and not self.reads_input else None
        self.output_shape = None
        if message:
            self.output_shape = {"all_reduce": shape, "broadcast": shape,
                                 "reduce_scatter": (shape[0] // n,) + shape[1:] if shape else shape,
                                 "all_gather": (n * shape[0],) + shape[1:] if shape else (n,)}[what]
        self.copies_input = message and what == "broadcast" and rank == root
        result_bytes = math.prod(self.output_shape or ()) * size
        self.result = aligned_empty(self.output_shape, dtype) if message and result_bytes <= OWNED_RESULT_BYTES \
            and not self.copies_input and whole is None else None
        result = (shared.ABSOLUTE, address(self.result)) if self.result is not None and result_bytes else \
            (shared.OUTPUT, 0)
        ops = []

        def op(kind, a=(0, 0), b=(0, 0), c=(0, 0), count=0):
            parallel = kind == shared.REDUCE and count >= PARALLEL_MIN_WORK_ITEMS
            ops.append([kind, *a, *b, *c, count, -(-count // ITEMS) if kind == shared.REDUCE else 0, parallel])

        def slot(p: int, byte_offset: int = 0):
            return shared.SHARED, segment.slot(p) + byte_offset

        def message_of(p: int, byte_offset: int):
            """Where process p's message is read from: this process's input, else p's slot."""
            return (shared.INPUT, byte_offset) if p == rank and self.reads_input else slot(p, byte_offset)

        def out(byte_offset: int):
            return result[0], result[1] + byte_offset

        def reduce_slots(first: int, stop: int, out_offset: int):
            """The result at out_offset <- elements first..stop of every message, reduced in rank order."""
            if stop > first:
                op(shared.REDUCE, message_of(0, first * size), message_of(1, first * size), out(out_offset),
                   stop - first)
                for p in range(2, n):
                    op(shared.REDUCE, out(out_offset), message_of(p, first * size), out(out_offset), stop - first)

        def write_parts(bounds: list[tuple[int, int]]):
            """This process's slot <- the parts of its input that the others reduce."""
            for p, (first, stop) in enumerate(bounds):
                if p != rank and stop > first:
                    op(shared.COPY, (shared.INPUT, first * size), c=slot(rank, first * size),
                       count=(stop - first) * size)
        if self.reads_input:
            write_parts(chunk_bounds(count, n, dtype) if splits else
                        [(p * (count // n), (p + 1) * (count // n)) for p in range(n)])
        op(shared.COPY, (shared.ABSOLUTE, address(self.identity)), c=(shared.SHARED, rank * shared.IDENTITY_BYTES),
           count=self.identity.nbytes)
        op(shared.SIGNAL, (0, shared.READY))
        if message and what == "all_gather" and nbytes:     # its own part while the others may still write theirs
            op(shared.COPY, slot(rank), c=out(rank * nbytes), count=nbytes)
        op(shared.WAIT, (0, shared.READY))
        op(shared.CHECK)
        if not message:
            pass
        elif splits:
            bounds = chunk_bounds(count, n, dtype)
            first, stop = bounds[rank]
            reduce_slots(first, stop, first * size)
            if stop > first:
                op(shared.COPY, out(first * size), c=slot(rank, first * size), count=(stop - first) * size)
            op(shared.SIGNAL, (0, shared.REDUCED))
            op(shared.WAIT, (0, shared.REDUCED))
            for p, (first, stop) in enumerate(bounds):
                if p != rank and stop > first:
                    op(shared.COPY, slot(p, first * size), c=out(first * size), count=(stop - first) * size)
        elif what == "all_reduce":
            reduce_slots(0, count, 0)
        elif what == "reduce_scatter":
            block = count // n
            reduce_slots(rank * block, (rank + 1) * block, 0)
        elif what == "all_gather":
            for p in range(n):
                if nbytes and p != rank:
                    op(shared.COPY, slot(p), c=out(p * nbytes), count=nbytes)
        elif rank != root and nbytes:     # a broadcast's; the root's result is its input's copy
            op(shared.COPY, slot(root), c=out(0), count=nbytes)
        self.counter = ctypes.c_int64(0)
        self.plan = np.zeros(shared.HEADER_WORDS + shared.OP_WORDS * len(ops), np.int64)
        parallel = any(row[-1] for row in ops)
        self.plan[:shared.HEADER_WORDS] = [
            self.kernel.run_address if self.kernel else 0, ctypes.addressof(self.counter),
            pool_code().launch_address if parallel else 0, worker_pool().address if parallel else 0,
            n, rank, segment.base, segment.base + segment.halves, segment.half_bytes, 0, len(ops), 0, 0, 0, 0, 0, 0]
        self.plan[shared.HEADER_WORDS:] = np.array(ops, np.int64).reshape(-1)
        self.words, self.timeout = memoryview(self.plan).cast("B").cast("q"), None
        self.driver, self.plan_address = shared.shared_steps_function()[0], address(self.plan)

    def __call__(self, x: np.ndarray, timeout: float, into: np.ndarray | None = None) -> np.ndarray | None:
        """The collective of x, in a new array (None for a check), or for a piece (`whole`), into
        `into` (the whole message's result, from this piece's first element)."""
        segment, words = _state["shared"], self.words
        if segment.broken:
            raise RuntimeError("cdnajit.distributed: a collective between the processes timed out before: they are "
                               "out of step (end the job)")
        segment.sequence += 1
        sequence = segment.sequence
        if self.slots is not None:
            self.slots[sequence % 2][...] = x
        elif self.reads_input:
            words[shared.INPUT_BASE] = address(x)
        output = into
        if into is not None:
            words[shared.OUTPUT_BASE] = address(into)
        elif self.result is None and self.kernel is not None:
            output, words[shared.OUTPUT_BASE] = aligned_empty_at(self.output_shape, self.dtype)
        elif self.result is None and self.output_shape is not None and not self.copies_input:
            output = np.empty(self.output_shape, self.dtype)
            words[shared.OUTPUT_BASE] = address(output) if output.size else 0
        words[shared.SEQUENCE] = sequence
        if timeout != self.timeout:
            words[shared.TIMEOUT_NS], self.timeout = int(timeout * 1e9), timeout
        status = self.driver(self.plan_address)
        if status == shared.TIMED_OUT:
            segment.broken = True
            raise timed_out(self.what, timeout)
        if status == shared.MISMATCH:
            raise segment.mismatch(self.what, self.described, x.dtype)
        if self.error is not None:
            raise ValueError(f"cdnajit.distributed.{self.what}: {self.error}")
        if self.copies_input:
            return x.copy()
        return self.result.copy() if self.result is not None else output

    def free(self):
        """Nothing to free: the segment is the job's."""


class PiecesPlan:
    """An all_reduce of a message over SHARED_SLOT_BYTES per process, in the SharedSegment: pieces of
    SHARED_SLOT_BYTES of the flattened message, each one call of a SharedPlan (a call of every
    process, the halves alternating as ever), reduced into one result. Every piece's identity names
    the whole shape, so processes with different messages differ at the first piece. (An all_gather
    over a slot stays on MPI's ring: MPICH's transfer of a long message measured 1.3x faster than
    copying it through a slot, 64 MiB on the loaded 2-CPU host.)"""

    def __init__(self, arguments: str, shape: tuple, dtype: np.dtype, reducer: str):
        count, piece = math.prod(shape), SHARED_SLOT_BYTES // dtype.itemsize
        self.shape, self.dtype = shape, dtype
        self.bounds = [(first, min(first + piece, count)) for first in range(0, count, piece)]
        self.plans = {stop - first: SharedPlan("all_reduce", f"{arguments}, pieces of {shape}", (stop - first,),
                                               dtype, reducer, whole=shape)
                      for first, stop in self.bounds}

    def __call__(self, x: np.ndarray, timeout: float) -> np.ndarray:
        result = aligned_empty(self.shape, self.dtype)
        flat, into = x.reshape(-1), result.reshape(-1)
        for first, stop in self.bounds:
            self.plans[stop - first](flat[first:stop], timeout, into[first:])
        return result

    def free(self):
        """Nothing to free: the segment is the job's."""


class DoublingPlan:
    """Recursive doubling (MPICH's all-reduce for short messages) of one message shape, dtype and
    reducer, set up once and reused by every call with them: at step k every process swaps its
    partial with the process whose rank differs in bit k and both combine them, the lower rank's
    partial first, so every process computes the same values in log2 n steps. For n not a power of
    two, MPICH's fold: with p the largest power of two below n, the first 2(n - p) ranks pair up,
    each even one sending its message to the odd one above it (which reduces them and takes part
    in the doubling over p processes, numbered in rank order) and receiving the result from it.

    A short all-reduce is latency-bound, and setting a call up (buffers, requests, the reduction's
    argument block, a separate collective to compare shapes) cost more than its transfers. The plan
    holds a send and a receive buffer, each a header (HEADER_BYTES: the call's signature and a
    mismatch flag) followed by the message; MPI persistent requests (Send_init/Recv_init) for each
    step's partner; and each step's argument block of the compiled reduction (the partials reduced
    in place into the send buffer), so a call copies the message in, starts, polls and reduces per
    step, and copies the result out.

    The header is the shape check: each process compares the signature it receives with its own and
    ORs the received flag into its own, so at the end every process's flag is set iff some
    process's signature differs (each doubling step joins two groups whose members agree by
    comparing one member of each; a folded rank hears its partner's flag with the result). A
    partner's longer message (a larger array) arrives truncated: a mismatch too. A plan of no
    elements is the check alone (before a ring or tree all-reduce)."""

    def __init__(self, signature: int, shape: tuple, dtype: np.dtype, reducer: str):
        n, rank = comm().Get_size(), comm().Get_rank()
        count = math.prod(shape)
        nbytes = HEADER_BYTES + count * dtype.itemsize
        self.send, self.received = aligned_empty((nbytes,), np.uint8), aligned_empty((nbytes,), np.uint8)
        # The header's two int64s through memoryviews: Python ints, without numpy scalars per step.
        self.send_header = memoryview(self.send)[:16].cast("q")
        self.received_header = memoryview(self.received)[:16].cast("q")
        self.signature = signature
        self.data = self.send[HEADER_BYTES:].view(dtype).reshape(shape)    # the message, then the result
        self.kernel = ReductionStep.get(reducer, dtype).kernel if count else None
        self.total, self.parallel = -(-count // ITEMS), count >= PARALLEL_MIN_WORK_ITEMS
        self.size, self.counter = ctypes.c_int64(count), ctypes.c_int64(0)
        size, out = ctypes.addressof(self.size), address(self.data) if count else 0
        mine, theirs = out, address(self.received[HEADER_BYTES:]) if count else 0
        self.blocks = []

        def reduction(partner: int) -> int:
            """The step's argument block: (received, mine) in rank order, the lower rank's first."""
            self.blocks.append((ctypes.c_void_p * 4)(*((theirs, mine) if partner < rank else (mine, theirs)), out, size))
            return ctypes.addressof(self.blocks[-1])

        def receive(partner: int, into=None):
            return comm().Recv_init(self.received if into is None else into, partner, DOUBLING_TAG)

        def send(partner: int):
            return comm().Send_init(self.send, partner, DOUBLING_TAG)
        power = 1 << (n.bit_length() - 1)
        folded = 2 * (n - power)         # ranks below it pair up
        # Steps: (requests, the reduction's argument block or 0, the header received or None).
        if rank < folded and rank % 2 == 0:
            self.steps = [([send(rank + 1)], 0, None), ([receive(rank + 1, into=self.send)], 0, self.send_header)]
        else:
            new = rank // 2 if rank < folded else rank - folded // 2
            self.steps = [([receive(rank - 1)], reduction(rank - 1), self.received_header)] if rank < folded else []
            for k in range(power.bit_length() - 1):
                other = new ^ (1 << k)
                partner = 2 * other + 1 if 2 * other < folded else other + folded // 2
                self.steps.append(([receive(partner), send(partner)], reduction(partner), self.received_header))
            if rank < folded:
                self.steps.append(([send(rank - 1)], 0, None))
        self.requests = [request for requests, _, _ in self.steps for request in requests]
        self.plan = None if self.parallel else self.native_plan()
        if self.plan is not None:
            self.driver, self.plan_address = steps.steps_function()[0], address(self.plan)
            self.plan_words, self.timeout = memoryview(self.plan).cast("B").cast("q"), None

    def native_plan(self) -> np.ndarray:
        """The steps as runtime/distributed_steps.py's native driver reads them (its plan)."""
        self.handles = [np.array([r.handle & 0xFFFFFFFF for r in requests], np.uint32).view(np.int32)
                        for requests, _, _ in self.steps]
        plan = np.zeros(steps.HEADER_WORDS + steps.STEP_WORDS * len(self.steps), np.int64)
        plan[:steps.HEADER_WORDS] = driver_header(len(self.steps), self.kernel.run_address if self.kernel else 0,
                                                  ctypes.addressof(self.counter), self.signature, address(self.send))
        for k, ((_, block, header), handles) in enumerate(zip(self.steps, self.handles)):
            at = steps.HEADER_WORDS + steps.STEP_WORDS * k
            header_address = 0 if header is None else address(self.send if header is self.send_header else self.received)
            plan[at:at + steps.STEP_WORDS] = [len(handles), address(handles), block, header_address, self.total, 0, 0, 0]
        return plan

    def __call__(self, message: np.ndarray | None, timeout: float, what: str) -> bool:
        """Run the steps on `message` (None for the check alone); whether every process's signature
        matched. The result is in self.data. The native driver runs them (all but a parallel
        reduction's); a step it stops at with an MPI error (a truncated receive) is a mismatch,
        and the steps after it run here."""
        mpi = _state["MPI"]
        if message is not None:
            np.copyto(self.data, message)
        first, mismatch = 0, 0
        if self.plan is not None:
            words = self.plan_words
            if timeout != self.timeout:
                words[steps.SPIN_NS], words[steps.TIMEOUT_NS] = int(_state["spin_s"] * 1e9), int(timeout * 1e9)
                self.timeout = timeout
            status = self.driver(self.plan_address)
            if status == steps.FINISHED:
                return not words[steps.MISMATCH]
            if status == steps.TIMED_OUT:
                raise timed_out(what, timeout)
            first = words[steps.STEP]
            wait(self.steps[first][0], timeout, what)
            mismatch, first = 1, first + 1
            self.send_header[1] = 1
        else:
            self.send_header[0], self.send_header[1] = self.signature, 0   # a folded rank's result overwrote them
        kernel = self.kernel
        for requests, block, header in self.steps[first:]:
            mpi.Prequest.Startall(requests)
            try:
                wait(requests, timeout, what)
            except mpi.Exception as error:       # a longer message than ours: its array is larger
                if error.Get_error_class() not in (mpi.ERR_TRUNCATE, mpi.ERR_IN_STATUS):
                    raise
                wait(requests, timeout, what)
                mismatch = 1
            if header is not None:
                mismatch |= (header[0] != self.signature) | header[1]
                self.send_header[1] = mismatch
            if not block or kernel is None or mismatch:
                continue
            if self.parallel:
                kernel.launch(block, self.total, True)
            else:                  # on this thread, as CompiledKernel.launch runs a small grid
                self.counter.value = 0
                kernel.run(block, ctypes.addressof(self.counter), self.total, self.total)
        return not mismatch

    def free(self):
        for request in self.requests:
            request.Free()


def driver_header(step_count: int, run: int, counter: int, signature: int, sent_header: int,
                  parallel: bool = False) -> list[int]:
    """The header words of a plan of runtime/distributed_steps.py's native driver, SPIN_NS and
    TIMEOUT_NS left 0 (a call sets them)."""
    mpi = _state["MPI"]
    functions = ctypes.CDLL(mpi.__file__)   # dlsym through mpi4py's module finds its MPI library's
    entries = [ctypes.cast(getattr(functions, name), ctypes.c_void_p).value
               for name in ("MPI_Startall", "MPI_Testall", "MPI_Isend", "MPI_Irecv")]
    pool = (pool_code().launch_address, worker_pool().address) if parallel else (0, 0)
    return entries + [mpi.BYTE.handle, comm().handle, STEP_TAG, *pool, run, counter, step_count, 0, 0, signature,
                      sent_header, 0, 0, 0, 0, 0]


MAX_POST_BYTES = 1 << 30               # a longer transfer is posted in pieces (MPI counts are int32s)


# The steps of each collective that StepPlan runs, for process `rank` of n and a message of `count`
# elements of `size` bytes (`root`: a broadcast's): (the output's shape, the scratch's elements,
# the steps, whether the output's block `rank` (the whole output for a broadcast's root) is the
# input's copy, made after the steps). A step is (posts, reduction or None): a post (receives,
# buffer, byte offset, bytes, peer), a reduction ((buffer, element offset) received, mine and out,
# element count); buffers are INPUT (the caller's), OUTPUT (the result) and SCRATCH.

def ring_all_reduce_steps(n, rank, shape, count, size, dtype, root):
    """RCCL's ring: the message in one chunk per process (chunk_bounds); n - 1 reduce-scatter steps,
    each receiving a chunk's partial from the left neighbour into SCRATCH while sending one to the
    right, and reducing it with this process's own chunk into OUTPUT, which the next step sends on
    (no copies); then n - 1 all-gather steps receiving the reduced chunks into OUTPUT itself."""
    right, left = (rank + 1) % n, (rank - 1) % n
    bounds = chunk_bounds(count, n, dtype)
    sequence = []
    for s in range(n - 1):
        (out_start, out_stop), (in_start, in_stop) = bounds[(rank - s) % n], bounds[(rank - s - 1) % n]
        posts = [(1, SCRATCH, 0, (in_stop - in_start) * size, left),
                 (0, INPUT if s == 0 else OUTPUT, out_start * size, (out_stop - out_start) * size, right)]
        sequence.append((posts, ((SCRATCH, 0), (INPUT, in_start), (OUTPUT, in_start), in_stop - in_start)))
    for s in range(n - 1):
        (out_start, out_stop), (in_start, in_stop) = bounds[(rank + 1 - s) % n], bounds[(rank - s) % n]
        posts = [(1, OUTPUT, in_start * size, (in_stop - in_start) * size, left),
                 (0, OUTPUT, out_start * size, (out_stop - out_start) * size, right)]
        sequence.append((posts, None))
    return shape, max(stop - start for start, stop in bounds), sequence, False


def ring_reduce_scatter_steps(n, rank, shape, count, size, dtype, root):
    """The ring's first half: block d starts at process d + 1 and ends at d; each step receives the
    partial into SCRATCH, reduces it with this process's own block into OUTPUT (once the step's
    send of OUTPUT is complete) and sends that on."""
    right, left = (rank + 1) % n, (rank - 1) % n
    block = count // n
    sequence = []
    for s in range(n - 1):
        sent = (INPUT, (rank - 1) % n * block * size) if s == 0 else (OUTPUT, 0)
        posts = [(1, SCRATCH, 0, block * size, left), (0, *sent, block * size, right)]
        sequence.append((posts, ((SCRATCH, 0), (INPUT, (rank - s - 2) % n * block), (OUTPUT, 0), block)))
    return (shape[0] // n,) + shape[1:], block, sequence, False


def ring_all_gather_steps(n, rank, shape, count, size, dtype, root):
    """OUTPUT holds every process's block; n - 1 steps pass them around the ring, the first sending
    this process's from INPUT."""
    right, left, nbytes = (rank + 1) % n, (rank - 1) % n, count * size
    sequence = []
    for s in range(n - 1):
        sent = (INPUT, 0) if s == 0 else (OUTPUT, (rank - s) % n * nbytes)
        sequence.append(([(1, OUTPUT, (rank - s - 1) % n * nbytes, nbytes, left), (0, *sent, nbytes, right)], None))
    return ((n * shape[0],) + shape[1:] if shape else (n,)), 0, sequence, True


def binomial_broadcast(n, me, root, nbytes, source):
    """The binomial tree's broadcast steps from `root` (`me`: this rank renumbered from the root),
    the root sending `source`, the others receiving into OUTPUT and sending it on."""
    sequence, distance = [], 1
    while distance < n:
        distance *= 2
    while distance > 1:
        distance //= 2
        if me % (2 * distance) == 0 and me + distance < n:
            sequence.append(([(0, *(source if me == 0 else (OUTPUT, 0)), nbytes, (me + distance + root) % n)], None))
        elif me % (2 * distance) == distance:
            sequence.append(([(1, OUTPUT, 0, nbytes, (me - distance + root) % n)], None))
    return sequence


def tree_all_reduce_steps(n, rank, shape, count, size, dtype, root):
    """The binomial tree: a reduction to rank 0 in ceil(log2 n) steps (a parent receives a child's
    partial into SCRATCH and reduces it with its own into OUTPUT; a child sends its partial to its
    parent), then the broadcast down from rank 0."""
    sequence, partial, distance = [], (INPUT, 0), 1
    while distance < n:
        if rank % (2 * distance) == distance:
            sequence.append(([(0, *partial, count * size, rank - distance)], None))
            break
        if rank % (2 * distance) == 0 and rank + distance < n:
            reduction = ((SCRATCH, 0), partial, (OUTPUT, 0), count)
            sequence.append(([(1, SCRATCH, 0, count * size, rank + distance)], reduction))
            partial = (OUTPUT, 0)
        distance *= 2
    return shape, count, sequence + binomial_broadcast(n, rank, 0, count * size, partial), False


def broadcast_steps(n, rank, shape, count, size, dtype, root):
    """The binomial tree's broadcast from `root`, which keeps its input's copy."""
    return shape, 0, binomial_broadcast(n, (rank - root) % n, root, count * size, (INPUT, 0)), rank == root


STEPS = {"all_reduce": ring_all_reduce_steps, "reduce_scatter": ring_reduce_scatter_steps,
         "all_gather": ring_all_gather_steps, "tree_all_reduce": tree_all_reduce_steps, "broadcast": broadcast_steps}
REDUCES = ("all_reduce", "reduce_scatter", "tree_all_reduce")


class StepPlan:
    """The steps of one collective between processes (STEPS: the ring's all-reduce, reduce-scatter
    and all-gather, the binomial tree's all-reduce and broadcast), shape, dtype, reducer and root,
    set up once and run by the native driver (runtime/distributed_steps.py) as one call, each
    step's transfers posted there (MPI_Isend, MPI_Irecv) on the buffers of the call: the caller's
    INPUT, the OUTPUT it returns (allocated per call, aligned for the kernel where one writes it)
    and the plan's SCRATCH (one received chunk, block or message).

    Every address in the plan's posts and reductions is one of the three buffers' plus an offset, so
    a call writes two words (INPUT's and OUTPUT's addresses) and makes one native call however many
    steps it has. The processes' shapes are checked before (the caller's)."""

    def __init__(self, collective: str, shape: tuple, dtype: np.dtype, reducer: str, root: int = 0):
        n, rank = comm().Get_size(), comm().Get_rank()
        count, size = math.prod(shape), dtype.itemsize
        self.output_shape, scratch, plan_steps, self.copies_input = STEPS[collective](
            n, rank, shape, count, size, dtype, root)
        self.dtype, self.rank, self.processes = dtype, rank, n
        self.whole = collective == "broadcast"      # the input's copy is the whole output, not block `rank`
        self.scratch = aligned_empty((max(scratch, 1),), dtype)
        self.kernel = ReductionStep.get(reducer, dtype).kernel if collective in REDUCES else None
        self.counter = ctypes.c_int64(0)
        pieces = [[(receives, buffer, offset + piece, min(MAX_POST_BYTES, nbytes - piece), peer)
                   for receives, buffer, offset, nbytes, peer in posts
                   for piece in range(0, max(nbytes, 1), MAX_POST_BYTES)]
                  for posts, _ in plan_steps]
        parallel = any(r is not None and r[3] >= PARALLEL_MIN_WORK_ITEMS for _, r in plan_steps)
        # One int64 array: the header, the steps, their posts, the reductions' operands and argument
        # blocks (received, mine, out, the count's address) and counts; the posts' requests in an
        # int32 array.
        posts_at = steps.HEADER_WORDS + steps.STEP_WORDS * len(plan_steps)
        blocks_at = posts_at + steps.POST_WORDS * sum(map(len, pieces))
        block_words = steps.OPERAND_WORDS + 5
        self.plan = np.zeros(blocks_at + block_words * len(plan_steps), np.int64)
        self.requests = np.zeros((len(plan_steps), max(map(len, pieces), default=1)), np.int32)
        plan_address = address(self.plan)
        self.plan[:steps.HEADER_WORDS] = driver_header(len(plan_steps), self.kernel.run_address if self.kernel else 0,
                                                       ctypes.addressof(self.counter), 0, 0, parallel)
        self.plan[steps.SCRATCH_BASE] = address(self.scratch)
        post = posts_at
        for k, ((_, reduction), step_posts) in enumerate(zip(plan_steps, pieces)):
            step_at, operands_at = steps.HEADER_WORDS + steps.STEP_WORDS * k, blocks_at + block_words * k
            block_at = operands_at + steps.OPERAND_WORDS
            self.plan[step_at:step_at + steps.STEP_WORDS] = [
                len(step_posts), address(self.requests[k]), 0, 0, 0, 0, plan_address + 8 * post, 0]
            for receives, buffer, byte_offset, nbytes, peer in step_posts:
                self.plan[post:post + steps.POST_WORDS] = [receives, buffer, byte_offset, nbytes, peer]
                post += steps.POST_WORDS
            if reduction is not None and reduction[3]:
                *operands, elements = reduction
                self.plan[operands_at:block_at] = [word for buffer, element_offset in operands
                                                   for word in (buffer, element_offset * size)]
                self.plan[block_at + 3], self.plan[block_at + 4] = plan_address + 8 * (block_at + 4), elements
                self.plan[step_at + steps.BLOCK] = plan_address + 8 * block_at
                self.plan[step_at + steps.OPERANDS] = plan_address + 8 * operands_at
                self.plan[step_at + steps.WORKGROUPS] = -(-elements // ITEMS)
                self.plan[step_at + steps.PARALLEL] = elements >= PARALLEL_MIN_WORK_ITEMS
        self.words = memoryview(self.plan).cast("B").cast("q")
        self.driver, self.plan_address = steps.steps_function()[0], plan_address

    def __call__(self, x: np.ndarray, timeout: float, what: str) -> np.ndarray:
        """The collective of x (C-contiguous), in a new array."""
        words = self.words
        if self.kernel is None:      # no kernel writes the output
            output = np.empty(self.output_shape, self.dtype)
            words[steps.OUTPUT_BASE] = address(output)
        else:
            output, words[steps.OUTPUT_BASE] = aligned_empty_at(self.output_shape, self.dtype)
        words[steps.INPUT_BASE] = address(x)
        words[steps.SPIN_NS], words[steps.TIMEOUT_NS] = int(_state["spin_s"] * 1e9), int(timeout * 1e9)
        status = self.driver(self.plan_address)
        if status != steps.FINISHED:
            # Its transfers may still be pending: never run again, and its buffers never freed.
            forget(self)
            ABANDONED.append((self, x, output))
        if status == steps.TIMED_OUT:
            raise timed_out(what, timeout)
        if status != steps.FINISHED:
            raise RuntimeError(f"cdnajit.distributed: {what}: an MPI call failed at step {words[steps.STEP]} "
                               f"on process {self.rank}")
        if self.copies_input:        # sent from x, never received: the input's copy
            (output if self.whole else output.reshape((self.processes, -1))[self.rank])[...] = \
                x if self.whole else x.reshape(-1)
        return output

    def free(self):
        """Nothing to free: the posts' requests end with their transfers."""


def stepped(collective: str, x: np.ndarray, reducer: str, timeout: float, what: str, root: int = 0) -> np.ndarray:
    """The `collective` of x by StepPlan, its plan kept between calls."""
    x = np.ascontiguousarray(x)
    key = ("steps", collective, x.shape, x.dtype, reducer, root)
    plan = PLANS.get(key) or plan_for(key, lambda: StepPlan(collective, x.shape, x.dtype, reducer, root))
    return plan(x, timeout, what)


HEADER_BYTES = WRITTEN_BUFFER_ALIGNMENT    # so that the message after it is aligned for the kernel
MAX_PLANS = 64                             # all-reduce plans kept (a program's few message shapes)
DOUBLING_TAG = 19
STEP_TAG = 17      # the ring's and the tree's transfers


PLANS: dict = {}   # the plans kept between calls (AllReducePlan, ShapeCheck, StepPlan), oldest first
ABANDONED: list = []   # the plans (and buffers) of calls that failed with transfers pending


def plan_for(key, make):
    """The plan of `key`, made by make() the first time; at most MAX_PLANS are kept, the oldest
    freed (its buffers and requests are this process's own)."""
    plan = PLANS.get(key)
    if plan is None:
        if len(PLANS) >= MAX_PLANS:
            PLANS.pop(next(iter(PLANS))).free()
        plan = PLANS[key] = make()
    return plan


def forget(plan):
    """Drop a plan whose requests may still be pending (a timeout): never started again."""
    for key, kept in list(PLANS.items()):
        if kept is plan:
            del PLANS[key]


def free_plans():
    """Free every plan's MPI requests (before MPI finalizes, which warns of requests left)."""
    for plan in PLANS.values():
        plan.free()
    PLANS.clear()


def signature_of(*parts) -> int:
    """A call's signature, equal on two processes iff the parts are (the headers carry it)."""
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "little", signed=True)


class ShapeCheck:
    """Every process passed the same shape and dtype to the same collective (`what`, with `extra`:
    a broadcast's root): a recursive-doubling exchange of headers alone (DoublingPlan of no
    elements). On a mismatch every process learns of it and check_same names the process that
    differs, or the collectives (or roots) differ: a ValueError everywhere, where calling different
    collectives would otherwise wait until a timeout."""

    def __init__(self, what: str, extra, shape: tuple, dtype: np.dtype):
        self.what = what
        self.doubling = DoublingPlan(signature_of(what, extra, dtype.str, shape), (0,), dtype, "sum")

    def __call__(self, x: np.ndarray, timeout: float):
        try:
            matched = self.doubling(None, timeout, self.what)
        except TimeoutError:
            forget(self)
            raise
        if not matched:
            check_same(x, self.what, timeout)
            raise ValueError(f"cdnajit.distributed.{self.what}: the processes called different collectives, or "
                             f"with different arguments")

    def free(self):
        self.doubling.free()


def checked(x: np.ndarray, what: str, timeout: float, extra=None):
    """x's shape and dtype, and the collective with its arguments (`extra`), checked across processes:
    a SharedPlan's check where every process is on this host, else ShapeCheck (nothing to compare
    for one process)."""
    key = ("check", what, extra, x.shape, x.dtype)
    if _state["shared"] is not None:
        plan_for(key, lambda: SharedPlan(what, repr(extra), x.shape, x.dtype, message=False))(x, timeout)
    elif comm().Get_size() > 1:
        plan_for(key, lambda: ShapeCheck(what, extra, x.shape, x.dtype))(x, timeout)


def in_shared_memory(nbytes: int, algorithm: str | None) -> bool:
    """Whether a collective of `nbytes` per process runs in the SharedSegment (SharedPlan): where
    every process is on this host, for a message that fits a slot, unless `algorithm` asks for one
    of MPI point-to-point."""
    return _state["shared"] is not None and algorithm is None and nbytes <= SHARED_SLOT_BYTES


class AllReducePlan:
    """What an all-reduce of one shape, dtype, reducer and requested algorithm needs, kept between
    calls (PLANS): the algorithm the host model picks (or the caller asks for), and the
    recursive-doubling plan that runs it or (ring, tree) checks the processes' shapes before it,
    where a SharedPlan's check does not (processes of one host). `what` is the collective a caller
    runs through it (a short all_gather or reduce_scatter) and `given` the shape and dtype that
    caller was given: both are in the processes' signatures, and a mismatch's error names them."""

    def __init__(self, shape: tuple, dtype: np.dtype, reducer: str, algorithm: str | None, what: str = "all_reduce",
                 given: tuple = ()):
        n = comm().Get_size()
        if algorithm is not None and algorithm not in ALGORITHMS:
            raise ValueError(f"cdnajit.distributed.all_reduce: algorithm {algorithm!r} is not one of {ALGORITHMS}")
        self.shape, self.reducer, self.what = shape, reducer, what
        self.algorithm = algorithm or host_all_reduce_algorithm(n, math.prod(shape) * dtype.itemsize)
        signature = signature_of(what, self.algorithm, reducer, dtype.str, shape, given)
        # Where every process is on this host, a SharedPlan's check compares the processes' calls
        # first (as it does for the collectives in shared memory, so that a process running one never
        # waits for another running this), and the ring and the tree need no header exchange.
        self.shared_check = _state["shared"] is not None
        self.runs_doubling = n > 1 and self.algorithm == "doubling"
        self.doubling = DoublingPlan(signature, shape if self.runs_doubling else (0,), dtype, reducer) \
            if self.runs_doubling or n > 1 and not self.shared_check else None

    def __call__(self, x: np.ndarray | None, timeout: float, given: np.ndarray | None = None) -> np.ndarray:
        """x reduced over the processes; `given` (x by default) is the array a mismatch's error describes.
        x None: the message is already in the doubling plan's buffer (`self.doubling.data`, written
        there by the caller: a short all_gather's blocks); the result is that buffer, not a copy."""
        if self.shared_check:
            checked(x if given is None else given, self.what, timeout, (self.reducer, self.algorithm))
        elif self.doubling is None:                  # one process
            return x.copy()
        matched = True
        if self.doubling is not None:
            try:
                matched = self.doubling(x if self.runs_doubling else None, timeout, self.what)
            except TimeoutError:
                forget(self)       # its requests may still be pending
                raise
        if not matched:
            check_same(x if given is None else given, self.what, timeout)
            raise ValueError(f"cdnajit.distributed.{self.what}: the processes called different collectives, or with "
                             f"different reducers or algorithms (process {comm().Get_rank()}: {self.reducer!r}, "
                             f"{self.algorithm})")
        if self.runs_doubling:
            return self.doubling.data if x is None else self.doubling.data.copy()
        if self.algorithm == "ring":
            return stepped("all_reduce", x, self.reducer, timeout, "ring all-reduce")
        return stepped("tree_all_reduce", x, self.reducer, timeout, "tree all-reduce")

    def free(self):
        if self.doubling is not None:
            self.doubling.free()


# The algorithm between processes, by an alpha-beta model of MPI point-to-point steps on a host.
# Assumptions, from measurements on a loaded 2-core host: a step, driven from native code
# (runtime/distributed_steps.py), costs NATIVE_STEP_S; a ring or tree step about
# OVERSUBSCRIBED_STEP_S where the host runs more of the job's processes than it has CPUs (4 on 2:
# each step waits for the scheduler). HOST_BW is a shared-memory copy's bandwidth, for a transfer,
# a reduction and doubling's copies of the message in and out alike. Ring: 2(n - 1) transfers of
# S/n and n - 1 reductions of S/n; recursive doubling: log2 p transfers and reductions of S (p the
# largest power of two <= n; 2 steps more to fold the others in and out) and the two copies; tree:
# 2 log2 n transfers and log2 n reductions of S. The ring and the tree first compare the processes'
# shapes (recursive doubling of headers alone). For 2 processes doubling wins below
# 2 NATIVE_STEP_S HOST_BW / 2.5, about 24 KB (measured: between 32 and 128 KiB, the ring 1.2x slower
# at 32 KiB and 1.3x faster at 128 KiB), and below about 16 MB on an oversubscribed host (measured
# with 4 processes on 2 CPUs and the ring's steps in Python: doubling 2-3x faster than the ring from
# 256 KiB to 1 MiB, 1.4x at 4 MiB).
OVERSUBSCRIBED_STEP_S = 1e-3
NATIVE_STEP_S = 3e-6
HOST_BW = 10e9
ALGORITHMS = ("ring", "tree", "doubling")


def step_s() -> float:
    """A ring or tree step's modelled cost on this host (above)."""
    return OVERSUBSCRIBED_STEP_S if _state["spin_s"] == 0 else NATIVE_STEP_S


def runs_doubling(collective: str, nbytes: int) -> bool:
    """Whether an all_gather or a reduce_scatter of `nbytes` per process is modelled faster as
    recursive doubling's all-reduce (of the n processes' blocks for the all_gather, n times the
    bytes; the message itself for the reduce_scatter) than as the shape check and the ring's n - 1
    steps (each moving nbytes, or a block of nbytes / n reduced on arrival): as MPICH does, short
    messages take the algorithm of fewer exchanges."""
    n = comm().Get_size()
    if n == 1 or nbytes == 0:
        return False
    moved = nbytes if collective == "all_gather" else 2 * nbytes / n
    ring_s = doubling_seconds(n, 0) + (n - 1) * (step_s() + moved / HOST_BW)
    return doubling_seconds(n, n * nbytes if collective == "all_gather" else nbytes) < ring_s


def doubling_seconds(n: int, nbytes: int) -> float:
    """Recursive doubling's modelled all-reduce of `nbytes` over n processes."""
    power = 1 << (n.bit_length() - 1)
    steps = power.bit_length() - 1 + (2 if power < n else 0)
    return steps * (NATIVE_STEP_S + 2 * nbytes / HOST_BW) + 2 * nbytes / HOST_BW


def host_all_reduce_algorithm(n: int, nbytes: int) -> str:
    """The modelled fastest all-reduce of `nbytes` over n processes."""
    steps, chunk, check = cost.steps_tree(n), nbytes / n / HOST_BW, doubling_seconds(n, 0)
    modelled = {"ring": check + 2 * (n - 1) * (step_s() + chunk) + (n - 1) * chunk,
                "tree": check + steps * (2 * step_s() + 3 * nbytes / HOST_BW),
                "doubling": doubling_seconds(n, nbytes)}
    return min(modelled, key=modelled.get)


def all_reduce(x, op: str = "sum", *, algorithm: str | None = None, timeout: float = DEFAULT_TIMEOUT_S):
    """Every process's x reduced elementwise (op: sum, prod, max, min), on every process: in shared
    memory where every process is on this host and x fits a slot (SharedPlan), else the ring, the
    tree or recursive doubling over MPI as the host model above picks for the size; `algorithm`
    (ring, tree, doubling) asks for one of those over MPI on any host."""
    x = np.asarray(x, order="C")   # keeps a 0-d array 0-d (ascontiguousarray makes it 1-d)
    key = ("all_reduce", x.shape, x.dtype, op, algorithm)
    return (PLANS.get(key) or plan_for(key, lambda: all_reduce_plan(x.shape, x.dtype, op, algorithm)))(x, timeout)


def all_reduce_plan(shape: tuple, dtype: np.dtype, reducer: str, algorithm: str | None):
    nbytes = math.prod(shape) * dtype.itemsize
    if in_shared_memory(nbytes, algorithm):
        return SharedPlan("all_reduce", f"{reducer}, shared memory", shape, dtype, reducer)
    if in_shared_memory(SHARED_SLOT_BYTES, algorithm):    # a longer message, in pieces of a slot
        return PiecesPlan(f"{reducer}, shared memory", shape, dtype, reducer)
    return AllReducePlan(shape, dtype, reducer, algorithm)


def broadcast(x, root: int = 0, *, timeout: float = DEFAULT_TIMEOUT_S):
    """Process `root`'s x on every process (SharedPlan on one host, else a binomial tree over MPI)."""
    x = np.asarray(x, order="C")
    n = comm().Get_size()
    unknown = None if 0 <= root < n else f"root {root} is not a process of {n}"
    if in_shared_memory(x.nbytes, None):
        key = ("broadcast", x.shape, x.dtype, root)
        return (PLANS.get(key) or plan_for(key, lambda: SharedPlan("broadcast", f"root {root}", x.shape, x.dtype,
                                                                   root=root, error=unknown)))(x, timeout)
    checked(x, "broadcast", timeout, extra=root)
    if unknown:
        raise ValueError(f"cdnajit.distributed.broadcast: {unknown}")
    return stepped("broadcast", x, "sum", timeout, "broadcast", root)


def chosen(collective: str, nbytes: int, algorithm: str | None) -> bool:
    """Whether an all_gather or reduce_scatter of `nbytes` per process runs as recursive doubling: as
    `algorithm` says ("ring" or "doubling"), else as runs_doubling's model picks."""
    if algorithm not in (None, "ring", "doubling"):
        raise ValueError(f"cdnajit.distributed.{collective}: algorithm {algorithm!r} is not 'ring' or 'doubling'")
    if algorithm is None:
        return runs_doubling(collective, nbytes)
    return algorithm == "doubling" and comm().Get_size() > 1 and nbytes > 0


class GatherPlan:
    """An all_gather of one shape, dtype and requested algorithm, kept between calls (PLANS): the
    ring after the shape check, or for a short message (runs_doubling, or `algorithm`) recursive
    doubling's all-reduce of the processes' bytes, each process's in its own block of zeros, summed
    as u64 words (integers of which all but one are 0: every byte exact; words, not bytes, so the
    reduction handles an eighth of the elements). The blocks are the doubling plan's own message
    buffer: a call zeroes it, writes its bytes into its block and gathers the blocks' bytes out."""

    def __init__(self, shape: tuple, dtype: np.dtype, algorithm: str | None):
        n, rank = comm().Get_size(), comm().Get_rank()
        nbytes = math.prod(shape) * dtype.itemsize
        self.dtype, self.shape = dtype, ((n * shape[0],) + shape[1:] if shape else (n,))
        self.short = chosen("all_gather", nbytes, algorithm)
        if self.short:
            words = -(-nbytes // 8)
            self.reduce = AllReducePlan((n, words), np.dtype(np.uint64), "sum", "doubling", "all_gather",
                                        (shape, dtype.str))
            self.blocks = self.reduce.doubling.data.view(np.uint8)
            self.mine, self.gathered = self.blocks[rank, :nbytes], self.blocks[:, :nbytes]

    def __call__(self, x: np.ndarray, timeout: float) -> np.ndarray:
        if not self.short:
            checked(x, "all_gather", timeout, "ring")
            return stepped("all_gather", x, "sum", timeout, "ring all-gather")
        self.blocks.fill(0)
        self.mine[...] = x.reshape(-1).view(np.uint8)
        try:
            self.reduce(None, timeout, x)
        except TimeoutError:
            forget(self)       # its requests may still be pending
            raise
        return self.gathered.copy().view(self.dtype).reshape(self.shape)

    def free(self):
        if self.short:
            self.reduce.free()


def all_gather(x, *, algorithm: str | None = None, timeout: float = DEFAULT_TIMEOUT_S):
    """Every process's x concatenated along axis 0 in rank order, on every process (SharedPlan on one
    host, else GatherPlan: the ring, or recursive doubling for a short message, or as `algorithm`
    says on any host)."""
    x = np.asarray(x, order="C")
    key = ("all_gather", x.shape, x.dtype, algorithm)
    return (PLANS.get(key) or plan_for(key, lambda: SharedPlan("all_gather", "shared memory", x.shape, x.dtype)
                                       if in_shared_memory(x.nbytes, algorithm)
                                       else GatherPlan(x.shape, x.dtype, algorithm)))(x, timeout)


TRANSFER_TAG = 23


def transfer(x: np.ndarray, outgoing, incoming, what: str, *, timeout: float = DEFAULT_TIMEOUT_S):
    """The point-to-point part of an all-to-all or a permutation between processes (a jitted
    program's all_to_all and ppermute, frontend/sharding.py: ProcessCollectives): each (process,
    array) of `outgoing` sent to that process, each (process, array) of `incoming` received into
    that array (C-contiguous and writeable: a block of a result), all at once. Messages between two
    processes share one tag, and MPI's do not overtake each other, so they match in the order both
    processes list them. `x` (this process's operands) is first checked to have every process's
    shape and dtype, `what` naming the collective in the error."""
    checked(x, what, timeout)
    requests = [comm().Irecv(array, source=process, tag=TRANSFER_TAG) for process, array in incoming]
    requests += [comm().Isend(np.ascontiguousarray(array), dest=process, tag=TRANSFER_TAG)
                 for process, array in outgoing]
    wait(requests, timeout, f"{what} between processes")


class ReduceScatterPlan:
    """A reduce_scatter of one shape, dtype, reducer and requested algorithm, kept between calls
    (PLANS): the ring's reduce-scatter after the shape check, block d starting at process d + 1 and
    ending at d, each step's partial the received one reduced with the process's own block, the
    received first; for a short message (runs_doubling, or `algorithm`), this process's block of
    recursive doubling's all-reduce (whose headers compare the shapes)."""

    def __init__(self, shape: tuple, dtype: np.dtype, reducer: str, algorithm: str | None):
        n = comm().Get_size()
        self.reducer, self.n, self.rank = reducer, n, comm().Get_rank()
        self.short = chosen("reduce_scatter", math.prod(shape) * dtype.itemsize, algorithm) and len(shape) > 0
        self.divisible = len(shape) > 0 and shape[0] % n == 0
        self.block_shape = (shape[0] // n,) + shape[1:] if self.divisible else None
        self.reduce = AllReducePlan(shape, dtype, reducer, "doubling", "reduce_scatter", (shape, dtype.str)) \
            if self.short else None

    def __call__(self, x: np.ndarray, timeout: float) -> np.ndarray:
        # Either way every process's shape and dtype are compared before the divisibility is.
        try:
            summed = self.reduce(x, timeout) if self.short else None
        except TimeoutError:
            forget(self)       # its requests may still be pending
            raise
        if not self.short:
            checked(x, "reduce_scatter", timeout, (self.reducer, "ring"))
        if not self.divisible:
            raise ValueError(f"cdnajit.distributed.reduce_scatter: the leading dimension of {x.shape} is not a "
                             f"multiple of the {self.n} processes")
        if summed is not None:
            return summed.reshape((self.n, -1))[self.rank].reshape(self.block_shape).copy()
        if self.n == 1:
            return x.copy()
        return stepped("reduce_scatter", x, self.reducer, timeout, "ring reduce-scatter")

    def free(self):
        if self.short:
            self.reduce.free()


def reduce_scatter(x, op: str = "sum", *, algorithm: str | None = None, timeout: float = DEFAULT_TIMEOUT_S):
    """Block p (of n equal blocks along axis 0) of every process's x reduced elementwise, on process
    p (MPI_Reduce_scatter_block, lax.psum_scatter): SharedPlan on one host, else ReduceScatterPlan
    (or as `algorithm` says on any host)."""
    x = np.asarray(x, order="C")
    key = ("reduce_scatter", x.shape, x.dtype, op, algorithm)
    return (PLANS.get(key) or plan_for(key, lambda: reduce_scatter_plan(x.shape, x.dtype, op, algorithm)))(x, timeout)


def reduce_scatter_plan(shape: tuple, dtype: np.dtype, reducer: str, algorithm: str | None):
    n = comm().Get_size()
    if in_shared_memory(math.prod(shape) * dtype.itemsize, algorithm):
        indivisible = None if shape and shape[0] % n == 0 else \
            f"the leading dimension of {shape} is not a multiple of the {n} processes"
        return SharedPlan("reduce_scatter", f"{reducer}, shared memory", shape, dtype, reducer, error=indivisible)
    return ReduceScatterPlan(shape, dtype, reducer, algorithm)
