"""A top-level `while` step of a schedule run as native code (codegen/native_loop.py): one call
per loop, however many iterations and launches it makes.

    loop = NativeLoop(step, plan["kernels"], compiled_kernels, plan["slots"], kernel_text, cache)
    loop.run(env)      # as the Python steps do: reads its operands from env, sets its results

Each run takes one arena (every buffer the loop's values and spare carries need: no allocation
inside the loop) and one address table, so concurrent calls share nothing but the executable's
table of kernel entries. Arenas are kept for later runs (`ArenaPool`): a large fresh allocation
costs a page fault per 4 KiB on its first touch, as much as the loop's own work for a short one.
The results are views into the arena, or the arrays the loop was given when a carry is updated
in place or left as it was.
"""
from __future__ import annotations

import ctypes
import sys
import threading
import time

import numpy as np

from ..codegen.host import WRITTEN_BUFFER_ALIGNMENT
from ..codegen.native_loop import (INTERRUPTED, LOOP_ENTRY, MISALIGNED, compile_loop, direct_kernels, link_kernels,
                                   loop_layout, loop_module, value_bytes)
from ..errors import AllocationError, CdnajitError
from ..ir.types import NUMPY_DTYPES, format_bytes
from .cache import CompileCache
from .launch import CompiledKernel, address, aligned_copy, aligned_empty, machine_memory
from .native import link_object

# Arenas a loop keeps: one per concurrent call, up to this many.
KEPT_ARENAS = 4


class ArenaPool:
    """The arenas of one loop, each an aligned view of an allocation it owns (launch.aligned_empty).
    An arena is free when nothing but the pool refers to its allocation: every view of it (an
    array of a call in progress, a result handed to a caller) refers to the allocation itself,
    as numpy's views do to the array that owns their memory. `source` names the loop when the
    machine cannot hold an arena."""

    def __init__(self, nbytes: int, source: str = "a loop"):
        self.nbytes, self.source = nbytes, source
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
                machine = f" (it has {format_bytes(available)} of memory and swap)" if available is not None else ""
                raise AllocationError(f"{self.source}: cannot allocate the loop's buffers, {format_bytes(self.nbytes)}: "
                                      f"more memory than this machine gives{machine}") from None
            if len(self.arenas) < KEPT_ARENAS:
                self.arenas.append(arena)
            return arena[:]


LOOP_SIGNATURE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)
PARALLEL_LAUNCH_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p)


def function_address(function) -> int:
    return ctypes.cast(function, ctypes.c_void_p).value


def loop_object_code(step: dict, layout, kernel_plans: list[dict], kernel_text,
                     cache: CompileCache) -> tuple[bytes, float]:
    """(the loop's object code, seconds of LLVM spent on it), through the cache: its key is the
    loop's text and the cache keys of the kernels it links in, so that a stored program's loops
    load without the kernels' IR. `kernel_text(index)`: a kernel's unoptimised LLVM text, asked
    for only on a miss."""
    text = loop_module(step, layout, kernel_plans)
    direct = direct_kernels(step, kernel_plans)
    key = cache.key("loop", "\n".join([text] + [kernel_plans[k]["key"] for k in direct]))
    entry = cache.load(key)
    if entry is not None:
        return entry[1], 0.0
    start = time.perf_counter()
    code = compile_loop(link_kernels(text, {k: kernel_text(k) for k in direct}))
    seconds = time.perf_counter() - start
    cache.store(key, {"kind": "object"}, code)
    return code, seconds


class NativeLoop:
    __slots__ = ("layout", "library", "function", "launch_in_pool", "table", "reads", "buffer_slots",
                 "buffer_offsets", "results", "source", "kept_operands", "arenas", "llvm_seconds")

    def __init__(self, step: dict, kernel_plans: list[dict], kernels: list[CompiledKernel], slot_count: int,
                 kernel_text, cache: CompileCache):
        self.layout = layout = loop_layout(step, slot_count)
        self.arenas = ArenaPool(layout.arena_bytes, step["source"])
        code, self.llvm_seconds = loop_object_code(step, layout, kernel_plans, kernel_text, cache)
        self.library = link_object(code, LOOP_ENTRY)
        self.function = LOOP_SIGNATURE(self.library[LOOP_ENTRY])
        # A launch worth the worker pool comes back here (the pool's threads are Python's).
        self.launch_in_pool = PARALLEL_LAUNCH_SIGNATURE(lambda index, block: kernels[index].launch(block))
        api = ctypes.pythonapi
        table = [function_address(self.launch_in_pool)]
        table += [function_address(f) for f in (api.PyGILState_Ensure, api.PyErr_CheckSignals, api.PyErr_Clear,
                                                 api.PyGILState_Release)]
        table += [function_address(kernel.run) for kernel in kernels]
        table += [bound for kernel in kernels for bound in kernel.bound_addresses]
        self.table = np.array(table, np.uint64)
        self.reads = np.array(layout.reads, np.intp)
        self.buffer_slots = np.array([slot for slot, _ in layout.buffers], np.intp)
        self.buffer_offsets = np.array([offset for _, offset in layout.buffers], np.uint64)
        self.results = tuple((slot, tuple(shape), NUMPY_DTYPES[dtype], value_bytes(dtype, shape))
                             for slot, (dtype, shape) in zip(step["results"], step["types"]))
        self.source = step["source"]
        # The operands of carries the loop keeps in their buffers, which its updates may write in place.
        self.kept_operands = tuple(operand for operand, carry in zip(step["operands"], layout.carries[id(step)])
                                   if carry.kind == "same")

    def run(self, env: list) -> None:
        for slot in self.kept_operands:
            # An update in place writes the buffer with the kernels' alignment. The pass gave the
            # loop a buffer of its own (a kernel's, aligned) unless it was donated by the caller.
            if address(env[slot]) % WRITTEN_BUFFER_ALIGNMENT and env[slot].size:
                env[slot] = aligned_copy(env[slot])
        arena = self.arenas.take()
        base = address(arena)
        slots = np.zeros(self.layout.table_slots, np.uint64)
        given = {}
        for slot in self.reads:
            array = env[slot]
            slots[slot] = start = address(array)
            if array.nbytes:   # an empty array may share its address with another array
                given.setdefault(start, array)
        slots[self.buffer_slots] = base + self.buffer_offsets
        status = self.function(slots.ctypes.data, self.table.ctypes.data)
        if status == INTERRUPTED:
            raise KeyboardInterrupt
        if status == MISALIGNED:
            raise CdnajitError(f"{self.source}: an in-place update inside the loop was given a misaligned buffer "
                               "(a compiler bug: the loop's own buffers are aligned)")
        for slot, shape, dtype, nbytes in self.results:
            start = int(slots[slot])
            if nbytes == 0:
                env[slot] = np.empty(shape, dtype)
            elif start in given and given[start].nbytes == nbytes and given[start].dtype == dtype:
                env[slot] = given[start].reshape(shape)
            elif base <= start and start + nbytes <= base + arena.size:
                env[slot] = arena[start - base:start - base + nbytes].view(dtype).reshape(shape)
            else:
                raise CdnajitError(f"{self.source}: the loop's result is at an address it was not given "
                                   "(a compiler bug in codegen/native_loop.py)")
