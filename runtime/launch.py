"""Load compiled kernels and launch their grids on a thread pool.

    compiled = compile_kernel(kernel)      # object code through the compile cache (object_code)
    compiled(x, y, 3.5)                    # numpy arrays for buffers, numbers for scalars

A launch's threads (the caller and the pool's workers) each call the native
`run(args, next, last, grab)` with one shared counter: each takes ranges of `grab` consecutive
workgroups from it until none are left (codegen/host.py), so a thread that runs slower, on a
core another tenant is using, takes fewer ranges instead of holding up the launch. The pool and
its protocol are native code (runtime/native_pool.py: `pool_launch`, called here through ctypes,
which releases the GIL, and callable from compiled code as it is).

Buffers are numpy arrays of the parameter's dtype and element count, C-contiguous, in native byte
order; a buffer the kernel writes must not overlap any other buffer argument (the
codegen marks buffers noalias). A written buffer the ABI wants aligned (codegen/host.py:
`is_aligned_buffer`) must start at a WRITTEN_BUFFER_ALIGNMENT boundary: `aligned_empty` makes
such arrays, and a call given a misaligned one runs through an aligned copy of it.

Object code is linked into one process-wide ORC JIT, one library per kernel (libraries may all
export `run`); a library is unloaded when its `CompiledKernel` is garbage collected, which holds
no copy of the object code. (llvmlite 0.50 clears an unloaded library's JITDylib but cannot
remove it: about 8 KB per library stays in the process, tests/runtime/test_memory.py.)
"""
from __future__ import annotations

import ctypes
import functools
import itertools
import math
import os
import threading

import numpy as np

from ..codegen.fork_safe import ForkSafeLock
from ..codegen.host import ENTRY, WRITTEN_BUFFER_ALIGNMENT, compile_objects, is_aligned_buffer
from ..errors import AllocationError, CdnajitError
from ..ir.kernel import For, ForSpan, GlobalBuffer, Kernel, ScalarParam, evaluate_extent, is_extent, walk
from ..ir.types import NUMPY_DTYPES, format_bytes
from .cache import CompileCache, default_cache, library_cache
from .native import link_object
from .native_pool import WorkerPool

RUN_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)

# A launch runs on the worker pool from this many work-items (handing work to the pool and
# waiting for it costs tens of microseconds, as much as 100 K elements of a short elementwise
# chain on one thread; benchmarks/NOTES.md has the measurements)...
PARALLEL_MIN_WORK_ITEMS = 1 << 17
# ...or fewer work-items doing as much: statements per work-item (loops of constant trip count
# multiplied out) times work-items. A GEMM's few workgroups with a long K loop run in parallel.
PARALLEL_MIN_STATEMENTS = 1 << 20


class LaunchError(CdnajitError, ValueError):
    """Arguments that do not match a kernel's parameters."""


_pool: WorkerPool | None = None
_pool_lock = threading.Lock()


def _forget_pool_after_fork() -> None:
    """A forked child has none of its parent's threads: it starts a pool of its own when it launches
    (a data loader's worker process calling a jitted function would otherwise wait forever)."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def started_pool() -> WorkerPool | None:
    """The process's pool if it has started (a forked child's has not, until it launches)."""
    return _pool


def worker_pool() -> WorkerPool:
    """The process's pool, started on its first parallel launch; `.address` is what native code
    passes to `pool_launch` (runtime/native_pool.py)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = WorkerPool()
        return _pool


@functools.cache
def machine_memory() -> int | None:
    """Bytes of memory and swap this process may use (RAM within its cgroup's limit, plus swap), or
    None where the system does not say."""
    try:
        with open("/proc/meminfo") as file:
            info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in file if line.split()[1:2]}
        ram, swap = info["MemTotal"], info.get("SwapTotal", 0)
    except (OSError, KeyError, ValueError, IndexError):
        return None
    try:
        with open("/sys/fs/cgroup/memory.max") as file:  # cgroup v2; "max" when unlimited
            ram = min(ram, int(file.read()))
    except (OSError, ValueError):
        pass
    return ram + swap


def refuse(shape, dtype):
    """The allocator of a result larger than the machine's memory and swap."""
    raise MemoryError


def result_allocator(dtype: str, shape):
    """How a result of `dtype` and `shape` is allocated: aligned where a kernel writing it wants
    (codegen/host.py: is_aligned_buffer), and refused beyond the machine's memory and swap. A
    kernel writes every element of its results, so where the system overcommits, allocating more
    would only end in the out-of-memory killer."""
    available = machine_memory()
    if available is not None and math.prod(shape) * NUMPY_DTYPES[dtype].itemsize > available:
        return refuse
    return aligned_empty if is_aligned_buffer(dtype, math.prod(shape), readonly=False) else np.empty


def allocation_error(source: str, shape, dtype) -> AllocationError:
    """The error of a result of `shape` and `dtype` that the machine cannot hold; `source` names the
    op that makes it and the user's line."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    available = machine_memory()
    machine = f" (it has {format_bytes(available)} of memory and swap)" if available is not None else ""
    return AllocationError(f"{source}: cannot allocate its result of shape {tuple(shape)} and dtype {np.dtype(dtype)}, "
                           f"{format_bytes(nbytes)}: more memory than this machine gives{machine}")


def known_extent(expr, arguments: dict) -> int | None:
    """An expression's value when it is an extent of known arguments (or a constant), else None."""
    if not is_extent(expr):
        return None
    try:
        return evaluate_extent(expr, arguments)
    except KeyError:  # a scalar the arguments do not bind
        return None


def loop_trips(loop: For, arguments: dict) -> int | None:
    """A loop's trips where its bounds are constants or extents of the scalar `arguments`, else the
    trips its producer expects (For.expected_trips: a CSR row's entries), else None."""
    bounds = [known_extent(e, arguments) for e in (loop.start, loop.stop, loop.step)]
    if None not in bounds:
        start, stop, step = bounds
        return max(0, -(-(stop - start) // step)) if step > 0 else 0
    expected = known_extent(loop.expected_trips, arguments) if loop.expected_trips is not None else None
    return None if expected is None else max(expected, 0)


def statements_per_item(stmts, arguments: dict | None = None) -> int:
    """Statements one work-item executes: a loop whose trips are known or expected (loop_trips)
    counts its body that many times (a span its per_item), any other loop its body once, and an if
    both branches."""
    arguments = arguments or {}
    total = 0
    for stmt in stmts:
        total += 1
        if isinstance(stmt, ForSpan):
            total += stmt.per_item * statements_per_item(stmt.body, arguments)
            continue
        trips = loop_trips(stmt, arguments) if isinstance(stmt, For) else None
        if trips is not None:
            total += trips * statements_per_item(stmt.body, arguments)
        else:
            total += sum(statements_per_item(body, arguments) for body in stmt.children())
    return total


def pool_share(kernel: Kernel, arguments: dict | None = None) -> float:
    """A launch's work (with these scalar arguments, by default the kernel's own) as a share of the
    least worth waking the pool's threads (tens of microseconds): its work-items over
    PARALLEL_MIN_WORK_ITEMS or its statements over PARALLEL_MIN_STATEMENTS, whichever is more.
    Launches that run together (codegen/native_schedule.py: side_by_side) take the pool when their
    shares add up to 1."""
    arguments = dict(kernel.arguments) if arguments is None else arguments
    # A span's work-item takes per_item elements: the work of that many work-items of one each.
    per_item = max((stmt.per_item for stmt in walk(kernel.body) if isinstance(stmt, ForSpan)), default=1)
    items = math.prod(kernel.launch_grid(arguments)) * kernel.workgroup_items * per_item
    share = items / PARALLEL_MIN_WORK_ITEMS
    return share if share >= 1 else max(share, items * statements_per_item(kernel.body, arguments)
                                        / PARALLEL_MIN_STATEMENTS)


def runs_in_parallel(kernel: Kernel, arguments: dict | None = None) -> bool:
    """Whether a launch (with these scalar arguments, by default the kernel's own) is worth waking
    the pool's threads: more than one workgroup, and a whole pool_share."""
    arguments = dict(kernel.arguments) if arguments is None else arguments
    return math.prod(kernel.launch_grid(arguments)) > 1 and pool_share(kernel, arguments) >= 1


def address(array: np.ndarray) -> int:
    """The address of an array's first element. Through the buffer protocol for a writeable,
    non-empty array: ten times cheaper than `ndarray.ctypes`, which read-only and empty ones take."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))
    except (TypeError, ValueError):
        return array.ctypes.data


# Large allocations come straight from mmap, so every large buffer would start at the same offset
# within its 4 KiB page. A kernel that reads one such buffer and writes another at the same element
# then loads from addresses whose low 12 bits equal those of stores still in flight, which the
# CPU's store-to-load check treats as a possible dependence and stalls on ("4K aliasing": an
# 8-device all-reduce of 64 MiB messages ran 4x slower than with staggered buffers). Each
# large buffer therefore starts STAGGER_BYTES further into its page than the one before, cycling
# through STAGGER_COLOURS offsets: any two of 16 consecutive buffers are at least 256 B apart.
STAGGER_FROM_BYTES = 1 << 16
STAGGER_BYTES = 256
STAGGER_COLOURS = 16
_stagger = itertools.count()


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts at a WRITTEN_BUFFER_ALIGNMENT boundary
    (a view into a slightly larger allocation: numpy's own are 16-byte aligned); a large one
    staggered within its page (STAGGER_BYTES)."""
    return aligned_empty_at(shape, dtype)[0]


def aligned_empty_at(shape, dtype) -> tuple[np.ndarray, int]:
    """aligned_empty's array and its address (for a caller that needs both: one lookup fewer)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    stagger = STAGGER_BYTES * (next(_stagger) % STAGGER_COLOURS) if nbytes >= STAGGER_FROM_BYTES else 0
    raw = np.empty(nbytes + WRITTEN_BUFFER_ALIGNMENT + stagger, np.uint8)
    raw_address = address(raw)
    start = -raw_address % WRITTEN_BUFFER_ALIGNMENT + stagger
    return raw[start:start + nbytes].view(dtype).reshape(shape), raw_address + start


def aligned_copy(array) -> np.ndarray:
    """A copy of an array (or array-like) as aligned_empty lays it out, in native byte order."""
    array = np.asarray(array)
    copy = aligned_empty(array.shape, array.dtype.newbyteorder("="))
    np.copyto(copy, array)
    return copy


class CompiledKernel:
    """A kernel loaded as native code, callable with its arguments."""

    def __init__(self, kernel: Kernel, object_code: bytes, parallel: bool | None = None):
        """`parallel`: whether launches use the thread pool (runs_in_parallel(kernel) by default,
        which needs the kernel's body). A kernel with runtime extents (ir/kernel.py) launches with
        its `arguments` from `launch`, which the caller's argument block then ends with
        (`bound_addresses`), or with the scalars a call passes."""
        self.kernel = kernel
        self.library = link_object(object_code, ENTRY)  # a copy: the bytes are not kept
        self.run_address = self.library[ENTRY]
        self.run = RUN_SIGNATURE(self.run_address)
        params = kernel.params
        self.arg_pointers = (ctypes.c_void_p * max(len(params), 1))()
        # Scalars live in one 8-byte slot each; args[i] points at the slot, as kernelParams do.
        self.scalar_slots = np.zeros(max(len(params), 1), np.uint64)
        self.scalar_views = {}
        for i, param in enumerate(params):
            if not isinstance(param, GlobalBuffer):
                self.arg_pointers[i] = self.scalar_slots.ctypes.data + 8 * i
                self.scalar_views[i] = scalar_view(self.scalar_slots, i, param.dtype)
        # The kernel's own arguments, in slots of their own (a call's scalars go to scalar_slots).
        scalars = [p for p in params if not isinstance(p, GlobalBuffer)]
        bound = dict(kernel.arguments)
        self.bound_slots = np.zeros(max(len(scalars), 1), np.uint64)
        self.bound_addresses = tuple(self.bound_slots.ctypes.data + 8 * i for i in range(len(scalars)))
        if all(p.name in bound for p in scalars):
            for i, param in enumerate(scalars):
                scalar_view(self.bound_slots, i, param.dtype)[0] = bound[param.name]
        self.written = [i for i, p in enumerate(params) if isinstance(p, GlobalBuffer) and not p.readonly]
        self.aligned = [i for i in self.written if is_aligned_buffer(params[i].dtype, params[i].count, False)]
        # Known without a call's scalars when the grid is static or the kernel binds them.
        launchable = kernel.static_grid or all(p.name in bound for p in scalars)
        self.total = kernel.num_workgroups if launchable else None
        self.parallel = parallel if parallel is not None or not launchable else runs_in_parallel(kernel)
        self.lock = ForkSafeLock()  # the argument block is shared: one launch at a time

    def __call__(self, *args) -> None:
        """Launch with one argument per parameter; the trailing scalars the kernel's arguments bind
        may be left out."""
        kernel = self.kernel
        bound = dict(kernel.arguments)
        omitted = kernel.params[len(args):]
        if omitted and all(isinstance(p, ScalarParam) and p.name in bound for p in omitted):
            args += tuple(bound[p.name] for p in omitted)
        if len(args) != len(kernel.params):
            raise LaunchError(f"kernel {kernel.name} takes {len(kernel.params)} arguments, got {len(args)}")
        arguments = {p.name: arg for p, arg in zip(kernel.params, args) if not isinstance(p, GlobalBuffer)}
        with self.lock:
            for i, (param, arg) in enumerate(zip(kernel.params, args)):
                if isinstance(param, GlobalBuffer):
                    self.arg_pointers[i] = self.buffer_address(param, arg, i, arguments)
                else:
                    self.scalar_views[i][0] = arg
            self.check_overlap(args)
            staged = []
            for i in self.aligned:
                if self.arg_pointers[i] % WRITTEN_BUFFER_ALIGNMENT:
                    copy = aligned_empty(args[i].shape, args[i].dtype)
                    np.copyto(copy, args[i])
                    staged.append((args[i], copy))
                    self.arg_pointers[i] = copy.ctypes.data
            if kernel.static_grid:
                self.launch()
            else:
                self.launch(total=math.prod(kernel.launch_grid(arguments)),
                            parallel=self.parallel if self.parallel is not None else runs_in_parallel(kernel, arguments))
            for array, copy in staged:
                np.copyto(array, copy)

    def buffer_address(self, param: GlobalBuffer, array, position: int, arguments: dict) -> int:
        if not isinstance(array, np.ndarray):
            raise LaunchError(f"argument {position} ({param.name}) must be a numpy array, got {type(array).__name__}")
        expected = NUMPY_DTYPES[param.dtype]
        count = self.kernel.launch_count(param, arguments)
        flags = array.flags
        if array.dtype != expected or array.size != count or not flags.c_contiguous \
                or not array.dtype.isnative or (not param.readonly and not flags.writeable):
            raise LaunchError(f"argument {position} ({param.name}) must be a C-contiguous, native-byte-order"
                              f"{'' if param.readonly else ', writeable'} {expected} array of {count} "
                              f"elements, got {array.dtype}{list(array.shape)}")
        return array.ctypes.data

    def check_overlap(self, args):
        for i in self.written:
            for j, other in enumerate(args):
                if j != i and isinstance(other, np.ndarray) and np.may_share_memory(args[i], other):
                    raise LaunchError(f"kernel {self.kernel.name}: buffer {self.kernel.params[i].name} is written "
                                      f"and overlaps argument {j} ({self.kernel.params[j].name})")

    def launch(self, arg_block: int | None = None, total: int | None = None, parallel: bool | None = None) -> None:
        """Run the grid with the argument block at address `arg_block` (by default this kernel's own,
        which `__call__` fills); a caller with its own block needs no lock. `total` and `parallel`
        (by default the kernel's) are for a call that brings its own scalars."""
        total = self.total if total is None else total
        if total == 0:
            return
        if arg_block is None:
            arg_block = ctypes.addressof(self.arg_pointers)
        # Waking a pool thread costs tens of microseconds: small launches run on the calling thread.
        if self.parallel if parallel is None else parallel:
            worker_pool().launch(self.run_address, arg_block, total)
        else:
            counter = ctypes.c_int64(0)
            self.run(arg_block, ctypes.addressof(counter), total, total)


def scalar_view(slots: np.ndarray, i: int, dtype: str) -> np.ndarray:
    """Slot i of an array of 8-byte scalar slots, as a one-element array of `dtype`."""
    return slots[i:i + 1].view(np.uint8)[:NUMPY_DTYPES[dtype].itemsize].view(NUMPY_DTYPES[dtype])


_cache: dict[str, CompiledKernel] = {}
_cache_lock = ForkSafeLock()  # a forked child finds it free (codegen/fork_safe.py)


def object_codes(kernels: list[Kernel], cache: CompileCache) -> list[tuple[str, bytes]]:
    """(cache key, object code) of each kernel; the key is its code's text (Kernel.code_text),
    without the name, which only labels it, and the arguments, which one launch binds. A kernel the
    cache lacks may be one of the libraries' prebuilt ones (library_cache); the rest compile at
    once (compile_objects), each distinct code once."""
    texts = [kernel.code_text() for kernel in kernels]
    keys = [cache.key("kernel", text) for text in texts]
    codes: dict[str, bytes] = {}
    missing: dict[str, tuple[int, Kernel]] = {}   # key -> (code text length, kernel)
    for key, text, kernel in zip(keys, texts, kernels):
        if key not in codes and key not in missing:
            entry = cache.load(key) or library_cache().load(key)
            if entry is None:
                missing[key] = (len(text), kernel)
            else:
                codes[key] = entry[1]
    if missing:
        # The longest first (a kernel's code text is a fair measure of its LLVM time).
        order = sorted(missing, key=lambda key: -missing[key][0])
        for key, code in zip(order, compile_objects([missing[key][1] for key in order])):
            cache.store(key, {"kind": "object"}, code)
            codes[key] = code
    return [(key, codes[key]) for key in keys]


def object_code(kernel: Kernel, cache: CompileCache) -> tuple[str, bytes]:
    """(cache key, object code) of one kernel (`object_codes`)."""
    return object_codes([kernel], cache)[0]


def compile_kernel(kernel: Kernel) -> CompiledKernel:
    """The kernel loaded for the host, cached in memory by its printed text (name and arguments
    included); its object code comes through the compile cache (`object_code`), so a kernel that
    differs from a compiled one only in its arguments (a library solution's new problem) or its
    name costs no LLVM compile."""
    key = str(kernel)
    with _cache_lock:
        compiled = _cache.get(key)
    if compiled is None:
        compiled = CompiledKernel(kernel, object_code(kernel, default_cache())[1])
        with _cache_lock:
            compiled = _cache.setdefault(key, compiled)
    return compiled


def launch(kernel: Kernel, *args) -> None:
    """Compile (or reuse) and run a kernel over its whole grid."""
    compile_kernel(kernel)(*args)
