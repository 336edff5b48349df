"""LLVM's work on a host kernel's module: parse and verify its text, optimise at O3, mark the
streaming stores, emit the object file.

    object_code(text, streamed) -> bytes     text: the unoptimised module codegen/host.py built;
    optimized_ir(text, streamed) -> str      streamed: the buffers stored non-temporally

Both are plain functions of their arguments, so that they can run in another process: this file
imports only llvmlite and the standard library, and run as a script it is the worker of
codegen/llvm_worker.py (`serve`), which answers pickled requests. Callers in this process hold
LLVM_LOCK (codegen/fork_safe.py); the worker is single-threaded.
"""
from __future__ import annotations

import os
import pickle
import re
import signal
import struct
import sys
from functools import lru_cache

import llvmlite.binding as llvm


# Vector gathers stay scalar loads. x86's instruction selection of AVX-512 gathers is slow: 13 s for
# a single-wave MFMA GEMM kernel whose B values are copied per work-item at a stride of 17, 0.5 s
# without. Scalar loads cost no more than gathers at run time (a stride-3 slice takes a fifth).
FEATURES = ",+prefer-no-gather"


@lru_cache(maxsize=1)
def target_machine() -> llvm.TargetMachine:
    """The host CPU's target machine, at O3 with every feature of this CPU (and FEATURES)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    features = llvm.get_host_cpu_features().flatten() + FEATURES
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=features, opt=3, codemodel="jitdefault")


COMPILER_USED = re.compile(r"^@llvm\.compiler\.used = .*$", re.M)
VECTOR_VARIANT = '"vector-function-abi-variant"'


def optimize(text: str) -> llvm.ModuleRef:
    """Parse, verify and optimise at O3 (loop and SLP vectorizers on)."""
    parsed = llvm.parse_assembly(text)
    parsed.verify()
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.loop_vectorization = True
    # The SLP vectorizer miscompiles calls of outlined math functions (codegen/mathlib.outlined,
    # marked with their vector variants for the loop vectorizer) in LLVM 22: with it, a row kernel
    # calling cosh 16 times computed garbage (fuzz seed 2525, program 2525015111), and one calling
    # log2 in f64 and cos in f32 lost its whole body (2323011023). Such modules go without it.
    options.slp_vectorization = VECTOR_VARIANT not in text
    builder = llvm.create_pass_builder(target_machine(), options)
    builder.getModulePassManager().run(parsed, builder)
    if COMPILER_USED.search(str(parsed)):
        # The math library's vector variants were kept for the loop vectorizer; the ones it did not
        # call go now, before the inliner and the backend spend time on them.
        parsed = llvm.parse_assembly(COMPILER_USED.sub("", str(parsed)))
    # Inline what the loop vectorizer called and asks to be (mathlib.huge_variant's lane tests).
    after = llvm.create_new_module_pass_manager()
    after.add_always_inliner_pass()
    after.add_global_dead_code_eliminate_pass()
    after.add_simplify_cfg_pass()
    after.run(parsed, builder)
    return parsed


# An optimized module's alias scopes of `wg`'s buffer parameters (LLVM names them when it inlines
# `wg` into `run`), the scope lists that stores carry, and the vector stores themselves.
SCOPE = re.compile(r'^!(\d+) = distinct !\{!\d+, !\d+, !"wg: %([\w.]+)"\}$', re.M)
SCOPE_LIST = re.compile(r'^!(\d+) = !\{!(\d+)\}$', re.M)
VECTOR_STORE = re.compile(r'^(\s*store <(\d+) x (\w+)> [^\n]*?, align (\d+), !alias\.scope !(\d+))(.*)$', re.M)
ELEMENT_BYTES = {"i8": 1, "i16": 2, "half": 2, "bfloat": 2, "i32": 4, "float": 4, "i64": 8, "double": 8}


def streaming_stores(module: llvm.ModuleRef, buffers: set[str]) -> llvm.ModuleRef:
    """`module` with its vector stores into `buffers` marked !nontemporal where their alignment is
    at least their size (what x86's streaming stores need; LLVM's loop vectorizer refuses to
    vectorize a loop whose scalar stores carry the hint, so it is added after optimization, on the
    module's text: llvmlite cannot set metadata on a parsed instruction)."""
    text = str(module)
    scopes = {number for number, name in SCOPE.findall(text) if name in buffers}
    lists = {number for number, member in SCOPE_LIST.findall(text) if member in scopes}
    if not lists:
        return module
    hint = 1 + max(int(n) for n in re.findall(r"^!(\d+) =", text, re.M))

    def mark(store: re.Match) -> str:
        head, lanes, element, align, scope, rest = store.groups()
        size = int(lanes) * ELEMENT_BYTES.get(element, 0)
        if scope not in lists or size < 16 or int(align) < size:
            return store.group(0)
        return f"{head}{rest}, !nontemporal !{hint}"

    marked = VECTOR_STORE.sub(mark, text)
    if marked == text:
        return module
    streamed = llvm.parse_assembly(f"{marked}\n!{hint} = !{{i32 1}}\n")
    streamed.verify()
    return streamed


def optimized_module(text: str, streamed: set[str]) -> llvm.ModuleRef:
    optimized = optimize(text)
    return streaming_stores(optimized, streamed) if streamed else optimized


def optimized_ir(text: str, streamed: set[str]) -> str:
    return str(optimized_module(text, streamed))


def object_code(text: str, streamed: set[str]) -> bytes:
    return target_machine().emit_object(optimized_module(text, streamed))


REQUESTS = {"optimized_ir": optimized_ir, "object_code": object_code}
LENGTH = struct.Struct("<Q")


def serve(requests, replies) -> None:
    """The worker's loop: read (function name, arguments) and write (True, result) or (False,
    exception), each pickled after its length, until `requests` ends."""
    while header := requests.read(LENGTH.size):
        name, args = pickle.loads(requests.read(LENGTH.unpack(header)[0]))
        try:
            reply = (True, REQUESTS[name](*args))
        except Exception as error:      # the caller raises it as its own
            reply = (False, error)
        message = pickle.dumps(reply)
        replies.write(LENGTH.pack(len(message)) + message)
        replies.flush()


if __name__ == "__main__":
    # The replies get a descriptor of their own, and fd 1 becomes stderr: whatever LLVM prints
    # cannot corrupt them. An interrupt is the parent's to handle (it ends this process).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    reply_stream = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(sys.stdin.buffer, reply_stream)
