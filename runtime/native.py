"""Native code in the process: the ORC JIT that kernels are linked into, and a spin-wait for the
worker pool (runtime/launch.py), built with llvmlite like the kernels.

    wait_at_least(word, target, limit) -> value

reads the i64 at `word` (an acquire load) until it is at least `target` or `limit` reads have
been made, pausing between reads (x86's `pause`, which also lets a sibling hyperthread run), and
returns the last value read. Called through ctypes, it spins with the GIL released: a Python loop
would hold the GIL the thread it waits for needs. Waking a thread blocked in the kernel takes
tens of microseconds in a virtual machine: a wait that spins first sees the word change
within a fraction of a microsecond.
"""
from __future__ import annotations

import ctypes
import itertools
from functools import lru_cache

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ..codegen.fork_safe import LLVM_LOCK
from ..codegen.host import ENTRY
from ..codegen.host_llvm import target_machine

I1, I64 = ir.IntType(1), ir.IntType(64)
NAME = "wait_at_least"
SIGNATURE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


_jit: llvm.LLJIT | None = None
_libraries = itertools.count()


def link_object(object_code: bytes, symbol: str = ENTRY) -> llvm.ResourceTracker:
    """Load object code as a new JIT library; `tracker[symbol]` is the symbol's address while
    `tracker` lives."""
    global _jit
    with LLVM_LOCK:  # held across fork (codegen/fork_safe.py): a forked child links into the JIT it inherits
        if _jit is None:
            target_machine()  # initialises the native target
            _jit = llvm.create_lljit_compiler()
        library = llvm.JITLibraryBuilder().add_object_img(object_code).add_current_process().export_symbol(symbol)
        return library.link(_jit, f"library{next(_libraries)}")


def spin_module() -> ir.Module:
    module = ir.Module(name="cdnajit_spin")
    module.triple = llvm.get_process_triple()
    function = ir.Function(module, ir.FunctionType(I64, [ir.PointerType(), I64, I64]), name=NAME)
    word, target, limit = function.args
    entry, loop, done = (function.append_basic_block(name) for name in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    reads = b.phi(I64, name="reads")
    reads.add_incoming(ir.Constant(I64, 0), entry)
    value = b.load_atomic(word, "acquire", 8, typ=I64, name="value")
    if module.triple.startswith("x86_64"):
        pause = ir.Function(module, ir.FunctionType(ir.VoidType(), []), name="llvm.x86.sse2.pause")
        b.call(pause, [])
    counted = b.add(reads, ir.Constant(I64, 1))
    reads.add_incoming(counted, loop)
    finished = b.or_(b.icmp_signed(">=", value, target), b.icmp_signed(">=", counted, limit))
    b.cbranch(finished, done, loop)
    b.position_at_end(done)
    b.ret(value)
    return module


@lru_cache(maxsize=1)
def native_wait():
    """(wait_at_least as a ctypes function, the JIT library that holds it)."""
    parsed = llvm.parse_assembly(str(spin_module()))
    parsed.verify()
    library = link_object(target_machine().emit_object(parsed), NAME)
    return SIGNATURE(library[NAME]), library
