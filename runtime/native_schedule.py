"""An executable's schedule run as native code (codegen/native_schedule.py): one call per program
call, however many launches, loops and branches it makes.

    schedule = NativeSchedule(plan, compiled_kernels, constants, kernel_text, object_code)
    outputs = schedule.run(inputs)      # C-contiguous arrays of the parameters' types -> fresh results

Each run takes one arena (every buffer the program's intermediate values and loop carries need:
no allocation inside a call) and one address table, so concurrent calls share nothing but the
executable's table of kernel entries. Arenas are kept for later runs (`ArenaPool`): a large fresh
allocation costs a page fault per 4 KiB on its first touch, as much as a short program's own work.
The results are allocated per run, so that the caller owns them.

Host callbacks (ir/ops/callback.py) come back through `HostCallbacks`, a ctypes function in the
table: it takes the GIL (the schedule runs without it), copies the step's values into numpy arrays
and calls the registered function on them. What the function raises is kept for the calling thread
and raised from `run` once the schedule has returned, with a note naming the callback's op.
"""
from __future__ import annotations

import ctypes
import math
import sys
import threading
import time

import numpy as np

from ..codegen.host import WRITTEN_BUFFER_ALIGNMENT
from ..codegen.native_schedule import (CALLBACK_FAILED, INTERRUPTED, MISALIGNED, POOL, SCHEDULE_ENTRY,
                                       callback_steps, compile_schedule, direct_kernels, link_kernels,
                                       schedule_layout, schedule_module, uses_pool, value_bytes)
from ..ir.ops.callback import CALLBACKS, run_pure_callback
from ..errors import AllocationError, CdnajitError
from ..ir.types import NUMPY_DTYPES, TensorType, format_bytes
from .launch import (CompiledKernel, address, aligned_empty, allocation_error, machine_memory, result_allocator,
                     started_pool, worker_pool)
from .native import link_object
from .native_pool import pool_code

# Arenas an executable keeps: one per concurrent call, up to this many.
KEPT_ARENAS = 4
# Results that together take at most this many bytes share one allocation (`ResultBlock`): a
# program with many small results (a collective's one per device) would otherwise spend more of
# its call allocating them one by one than running; a kept result keeps at most this much alive.
RESULT_BLOCK_MAX_BYTES = 256 << 10
# Each result in a block starts this much further into its 4 KiB page than a packed layout would
# put it, so equal-sized results do not share their addresses' low 12 bits (launch.py: STAGGER_BYTES).
RESULT_BLOCK_GAP = 256


class ArenaPool:
    """The arenas of one executable, each an aligned view of an allocation it owns
    (launch.aligned_empty). An arena is free when nothing but the pool refers to its allocation:
    every view of it (a call in progress holds one) refers to the allocation itself, as numpy's
    views do to the array that owns their memory. `unholdable` is the error to raise when the
    machine cannot hold an arena."""

    def __init__(self, nbytes: int, unholdable):
        self.nbytes, self.unholdable = nbytes, unholdable
        self.arenas: list[np.ndarray] = []
        self.lock = threading.Lock()

    def take(self) -> np.ndarray:
        with self.lock:
            for arena in self.arenas:
                # References to the allocation: the arena's, and getrefcount's argument.
                if sys.getrefcount(arena.base) == 2:
                    return arena[:]
            available = machine_memory()
            try:
                # Beyond memory and swap, allocating would only end in the out-of-memory killer.
                if available is not None and self.nbytes > available:
                    raise MemoryError
                arena = aligned_empty((self.nbytes,), np.uint8)
            except MemoryError:
                raise self.unholdable() from None
            if len(self.arenas) < KEPT_ARENAS:
                self.arenas.append(arena)
            return arena[:]


SCHEDULE_SIGNATURE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64)
HOST_CALLBACK_SIGNATURE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.POINTER(ctypes.c_uint64))


def value_at(address: int, dtype: str, shape) -> np.ndarray:
    """A copy of the value of `dtype` and `shape` whose elements are at `address`."""
    nbytes = value_bytes(dtype, shape)
    if not nbytes:
        return np.zeros(shape, NUMPY_DTYPES[dtype])
    data = (ctypes.c_char * nbytes).from_address(address)
    return np.frombuffer(data, NUMPY_DTYPES[dtype]).reshape(shape).copy()


def run_callback(step: dict, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Call the step's registered function on `arrays`: the values of the step's results (a pure
    callback's, checked against their types; a debug callback's token, false)."""
    if step["pure"]:
        return run_pure_callback(step["callback"], arrays, [TensorType(dtype, tuple(shape))
                                                            for _, dtype, shape in step["results"]])
    CALLBACKS[step["callback"]](*arrays)
    return [np.zeros((), np.bool_)]


def store_at(address: int, value: np.ndarray) -> None:
    """Write `value`'s elements, row-major, at `address`."""
    if value.nbytes:
        ctypes.memmove(address, np.ascontiguousarray(value).ctypes.data, value.nbytes)


class HostCallbacks:
    """The table's `host_callback(k, addresses) -> i32` for a program's callback steps (in
    codegen's `callback_steps` order): 0 when the function returned, 1 when it raised (kept in
    `failures` for the calling thread: `raise_failure` raises it)."""

    def __init__(self, steps: list[dict]):
        self.steps = steps
        self.failures = threading.local()
        self.function = HOST_CALLBACK_SIGNATURE(self.call)   # kept alive as long as the table holds it

    def call(self, k: int, addresses) -> int:
        step = self.steps[k]
        try:
            values = run_callback(step, [value_at(addresses[i], dtype, shape)
                                         for i, (dtype, shape) in enumerate(step["types"])])
            for k, value in enumerate(values, start=len(step["types"])):
                store_at(addresses[k], value)
            return 0
        except BaseException as error:   # noqa: B036  (the schedule returns at once; `run` raises it)
            self.failures.error = (error, step["source"])
            return 1

    def raise_failure(self):
        error, source = self.failures.error
        del self.failures.error
        error.add_note(f"raised by the host callback of {source}, while the compiled program ran")
        raise error


def function_address(function) -> int:
    return ctypes.cast(function, ctypes.c_void_p).value


def schedule_object_code(plan: dict, layout, kernel_text) -> bytes:
    """The schedule's object code, its direct kernels linked in. `kernel_text(index)`: a kernel's
    unoptimised LLVM text (codegen/host.py)."""
    direct = direct_kernels(plan["body"], plan["kernels"])
    text = schedule_module(plan["body"], layout, plan["kernels"])
    return compile_schedule(link_kernels(text, {k: kernel_text(k) for k in direct}), optimize=bool(direct))


class ResultBlock:
    """One allocation holding every result of a run, each at a WRITTEN_BUFFER_ALIGNMENT boundary
    (so any kernel may write it) and RESULT_BLOCK_GAP past the previous one; None where the
    results are few or large enough to be allocated one by one. Results of one shape and dtype (a
    collective's, one per device) are the rows of one view (`row_strides`: its strides), which
    numpy makes faster than as many arrays."""

    def __init__(self, offsets: list[int], nbytes: int, row_strides: tuple | None):
        self.offsets, self.nbytes, self.row_strides = offsets, nbytes, row_strides

    @classmethod
    def of(cls, results) -> "ResultBlock | None":
        sizes = [math.prod(shape) * dtype.itemsize for _, shape, dtype, _, _ in results]
        if len(results) < 2 or sum(sizes) + RESULT_BLOCK_GAP * len(sizes) > RESULT_BLOCK_MAX_BYTES:
            return None
        offsets, end = [], 0
        for size in sizes:
            offsets.append(end)
            end += -(size + RESULT_BLOCK_GAP) % WRITTEN_BUFFER_ALIGNMENT + size + RESULT_BLOCK_GAP
        # Rows of a view of rank 1 or more (a 0-d result would be a numpy scalar as a row).
        _, shape, dtype, _, _ = results[0]
        rows = len({(shape, dtype) for _, shape, dtype, _, _ in results}) == 1 and shape and sizes[0]
        return cls(offsets, end, (offsets[1], *np.empty(shape, dtype).strides) if rows else None)

    def allocate(self, results, slots) -> list[np.ndarray]:
        """The results, viewing one fresh allocation, their addresses written to `slots`."""
        raw = np.empty(self.nbytes + WRITTEN_BUFFER_ALIGNMENT, np.uint8)
        base = address(raw)
        start = -base % WRITTEN_BUFFER_ALIGNMENT
        if self.row_strides is not None:
            _, shape, dtype, _, _ = results[0]
            outputs = list(np.ndarray((len(results), *shape), dtype, raw, start, self.row_strides))
        else:
            outputs = [np.ndarray(shape, dtype, raw, start + offset)
                       for (_, shape, dtype, _, _), offset in zip(results, self.offsets)]
        for (slot, _, _, _, _), offset in zip(results, self.offsets):
            slots[slot] = base + start + offset
        return outputs


class NativeSchedule:
    """`object_code`: the schedule's, where the compile cache held it; else it is compiled
    (`llvm_seconds` is the time that took) and kept in `object_code` for the cache."""
    __slots__ = ("layout", "object_code", "library", "function", "pool", "table", "table_address",
                 "template_type", "template", "params", "results", "result_block", "donated_results", "arenas",
                 "llvm_seconds", "name", "callbacks")

    def __init__(self, plan: dict, kernels: list[CompiledKernel], constants: dict[int, np.ndarray], kernel_text,
                 object_code: bytes | None = None):
        self.name = plan["name"]
        self.layout = layout = schedule_layout(plan["body"], plan["outputs"], plan["slots"], plan["kernels"],
                                               plan["donated"])
        self.arenas = ArenaPool(layout.arena_bytes, self.unholdable_arena)
        start = time.perf_counter()
        self.object_code = object_code if object_code is not None else schedule_object_code(plan, layout, kernel_text)
        self.llvm_seconds = time.perf_counter() - start if object_code is None else 0.0
        self.library = link_object(self.object_code, SCHEDULE_ENTRY)
        self.function = SCHEDULE_SIGNATURE(self.library[SCHEDULE_ENTRY])
        # The pool is started with the first schedule that launches on it.
        parallel = uses_pool(plan["body"], plan["kernels"])
        self.pool = worker_pool() if parallel else None
        table = [pool_code().launch_address, self.pool.address if parallel else 0]
        api = ctypes.pythonapi
        table += [function_address(f) for f in (api.PyGILState_Ensure, api.PyErr_CheckSignals, api.PyErr_Clear,
                                                 api.PyGILState_Release)]
        steps = callback_steps(plan["body"])
        self.callbacks = HostCallbacks(steps) if steps else None
        table.append(function_address(self.callbacks.function) if steps else 0)
        table += [kernel.run_address for kernel in kernels]
        table += [bound for kernel in kernels for bound in kernel.bound_addresses]
        self.table = np.array(table, np.uint64)
        self.table_address = address(self.table)
        # The address table before a run: the constants' addresses (the constants live as long as
        # the executable); a run adds its parameters' and results'. A ctypes array: its items are
        # set and its address taken faster than a numpy array's.
        self.template_type = ctypes.c_uint64 * layout.table_slots
        self.template = self.template_type()
        for slot, array in constants.items():
            self.template[slot] = address(array)
        self.params = tuple(plan["body"]["params"])
        missing = set(layout.reads) - set(self.params) - set(constants)
        if missing:
            raise CdnajitError(f"{self.name}: the schedule reads slots {sorted(missing)} that no step, parameter "
                               "or constant sets (a compiler bug in codegen/native_schedule.py)")
        # (slot, shape, dtype, allocator, source) of each result the run allocates, and the
        # donated parameter of each it hands back.
        self.results = tuple((output.slot, output.shape, NUMPY_DTYPES[output.dtype],
                              result_allocator(output.dtype, output.shape), output.source)
                             for output in layout.outputs if output.param is None)
        self.result_block = ResultBlock.of(self.results)
        self.donated_results = tuple((k, output.param, output.shape) for k, output in enumerate(layout.outputs)
                                     if output.param is not None)

    def unholdable_arena(self) -> AllocationError:
        """The error of an arena the machine cannot hold: naming the largest value in it where that
        alone is more than the machine gives, else the program and the arena's size."""
        available = machine_memory()
        largest = self.layout.largest
        if largest is not None and available is not None and largest[0] > available:
            _, source, dtype, shape = largest
            return allocation_error(source, shape, NUMPY_DTYPES[dtype])
        machine = f" (it has {format_bytes(available)} of memory and swap)" if available is not None else ""
        return AllocationError(f"{self.name}: cannot allocate the buffers of its intermediate values, "
                               f"{format_bytes(self.layout.arena_bytes)}: more memory than this machine gives{machine}")

    def run(self, inputs) -> list[np.ndarray]:
        if self.pool is not None and self.pool is not started_pool():
            # A forked child: its parent's pool has no threads here (and may have been forked
            # with a worker's mutex held). The child's own pool takes the launches.
            self.pool = worker_pool()
            self.table[POOL] = self.pool.address
        slots = self.template_type.from_buffer_copy(self.template)
        for slot, array in zip(self.params, inputs):
            slots[slot] = address(array)
        arena = self.arenas.take() if self.layout.buffers else None
        if self.result_block is not None:
            outputs = self.result_block.allocate(self.results, slots)
        else:
            outputs = []
            for slot, shape, dtype, allocate, source in self.results:
                try:
                    array = allocate(shape, dtype)
                except MemoryError:
                    raise allocation_error(source, shape, dtype) from None
                slots[slot] = address(array)
                outputs.append(array)
        status = self.function(ctypes.addressof(slots), self.table_address,
                               address(arena) if arena is not None else 0)
        del arena   # free for the next run
        if status == INTERRUPTED:
            raise KeyboardInterrupt
        if status == CALLBACK_FAILED:
            self.callbacks.raise_failure()
        if status == MISALIGNED:
            raise CdnajitError(f"{self.name}: an in-place update was given a misaligned buffer (a compiler bug: "
                               "the schedule's own buffers are aligned, and a donated one is aligned before the call)")
        for k, param, shape in self.donated_results:
            outputs.insert(k, inputs[param].reshape(shape))
        return outputs

