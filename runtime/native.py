"""The ORC JIT that native code is linked into: kernels (runtime/launch.py), programs' schedules
(runtime/native_schedule.py) and the worker pool (runtime/native_pool.py), one library each."""
from __future__ import annotations

import itertools

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ..codegen.fork_safe import LLVM_LOCK
from ..codegen.host_llvm import target_machine

_jit: llvm.LLJIT | None = None
_libraries = itertools.count()


def link_object(object_code: bytes, *symbols: str) -> llvm.ResourceTracker:
    """Load object code as a new JIT library; `tracker[symbol]` is each symbol's address while
    `tracker` lives."""
    global _jit
    with LLVM_LOCK:  # held across fork (codegen/fork_safe.py): a forked child links into the JIT it inherits
        if _jit is None:
            target_machine()  # initialises the native target
            _jit = llvm.create_lljit_compiler()
        library = llvm.JITLibraryBuilder().add_object_img(object_code).add_current_process()
        for symbol in symbols:
            library.export_symbol(symbol)
        return library.link(_jit, f"library{next(_libraries)}")


def link_module(module: ir.Module, *symbols: str) -> llvm.ResourceTracker:
    """Compile a small llvmlite module (unoptimised: hand-written code such as the worker pool's)
    and load it as `link_object` does."""
    parsed = llvm.parse_assembly(str(module))
    parsed.verify()
    return link_object(target_machine().emit_object(parsed), *symbols)
