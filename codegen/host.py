"""Host codegen: a kernel IR `Kernel` -> LLVM IR (built with llvmlite.ir) -> native code.

The execution model of DESIGN.md on a CPU:
- one LLVM function `wg` runs one workgroup; the entry `run(void** args, i64* next, i64 last,
  i64 grab)` runs ranges of `grab` workgroups (linear ids, x fastest) that it takes from the
  counter `*next` (an atomic add) until the counter passes `last`: every thread of a launch
  calls it with the same counter, so a thread that runs slower takes fewer ranges.
  `args[i]` points to parameter i: the buffer's first element, or the scalar's value (as
  hipModuleLaunchKernel's kernelParams do).
- the body is cut at each barrier and wave op into regions; a region is a counted loop over the
  workgroup's work-items (the "work-item loop", which LLVM vectorizes); a barrier is simply the
  end of one loop and the start of the next. Any `for` or `if` marked uniform (with or without
  a cut inside) stays outside the work-item loops: they run once per workgroup, their bounds or
  condition evaluated as work-item 0 sees them, and their bodies are again cut into work-item loops.
- an `if` marked alongside (ir/kernel.py) waits for the next wave op of its block: the wave op's
  loop over waves runs, for each wave, that wave's work-items of it and then the wave's share of
  the op, so a GEMM's loads of the next tile overlap the current tile's math instead of stalling
  ahead of it. Without a wave op before the next barrier or cut, it runs there.
- a variable (or private array) used in one region lives in a stack slot that mem2reg turns into
  registers; one used in several regions lives in a per-work-item array of workgroup size.
- a Prefetch statement (a hint) runs at the workgroup level: one llvm.prefetch into L2 per cache
  line of its runs.
- LDS is one stack block per workgroup; wave ops run per wave over the 64 lanes' values (see
  `HostKernelBuilder.wave_op_lowerings`, where MFMA plugs in).
- f16/bf16 values live in f32 registers, rounded after each operation; bool is i1 (i8 in memory).
- a written buffer of ALIGNED_MIN_BYTES or more starts at a WRITTEN_BUFFER_ALIGNMENT boundary
  (the runtime allocates it so, as a device allocator does), so a vector store never splits a
  cache line; one of STREAMING_MIN_BYTES or more is written with non-temporal stores where the
  vectorized stores are aligned (`streaming_stores`).
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from collections import Counter
from contextlib import contextmanager
from functools import lru_cache
from typing import ClassVar

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np

from ..environment import compile_jobs
from ..ir.kernel import (LDS_ALIGNMENT, Assign, AtomicRMW, Barrier, Binary, Bitcast, Cast, Compare, Const, Expr, For,
                         ForSpan, GlobalBuffer, If, Kernel, Let, Load, Math, Prefetch, ScalarParam, Select, Special,
                         Store, Unary, Var, WaveBallot, WaveCountBelow, WaveMatchRank, WaveMove, WaveOp, WaveReduce,
                         WaveShuffle, While, contains_cut, span_offsets_resolved, wave_move_sources, walk)
from ..ir.opdef import OPS
from ..ir.kernel_verifier import control_expressions, sub_expressions, verify_kernel
from ..ir.types import INTS, NUMPY_DTYPES
from . import mathlib
from . import llvm_worker
from .llvm_kernel import (I1, I8, I32, I64, MEMORY_TYPES, PTR, REGISTER_TYPES, KernelBuilder, add_attribute, is_float,
                          is_power_of_two, is_signed)

ENTRY = "run"
# The kernel ABI's promise for written buffers (runtime/launch.py keeps it): a 64-byte boundary
# is a cache line and an AVX-512 vector. Smaller buffers are exempt, so that small calls need not
# pay for an aligned allocation.
WRITTEN_BUFFER_ALIGNMENT = 64
CACHE_LINE = 64
ALIGNED_MIN_BYTES = 1024
# The LDS block, private arrays and per-work-item values live in the entry block's allocas, which
# the loops read and write as whole AVX-512 vectors: aligned to a cache line, none splits across
# two (the prologue realigns the stack). At the ABI's 16, where they start within a line would
# follow the caller's stack, and a vector that straddles two lines costs two accesses.
STACK_ARRAY_ALIGNMENT = 64
# Written buffers this large bypass the caches: an output of this size would evict what the next
# call reads (the inputs, which stay in L3), and a streaming store needs no read of the line it
# overwrites.
STREAMING_MIN_BYTES = 8 << 20
# llvm.prefetch's locality for a Prefetch statement: 2 is x86's prefetcht1, into L2.
PREFETCH_L2 = 2


def buffer_bytes(dtype: str, count: int) -> int:
    return count * NUMPY_DTYPES[dtype].itemsize


def is_aligned_buffer(dtype: str, count, readonly: bool) -> bool:
    """Whether the kernel ABI promises this buffer parameter a WRITTEN_BUFFER_ALIGNMENT start. A
    count the launch decides (an extent) promises nothing: the code must hold for every size."""
    return not readonly and isinstance(count, int) and buffer_bytes(dtype, count) >= ALIGNED_MIN_BYTES


def streamed_buffers(kernel: Kernel) -> set[str]:
    """The written buffers stored with non-temporal stores (x86 hosts: elsewhere LLVM's lowering of
    the hint differs and this is untested)."""
    if not llvm.get_process_triple().startswith("x86_64"):
        return set()
    return {p.name for p in kernel.params if isinstance(p, GlobalBuffer) and not p.readonly
            and isinstance(p.count, int) and buffer_bytes(p.dtype, p.count) >= STREAMING_MIN_BYTES}


# ---- region planning --------------------------------------------------------------------

def variables_in(expr: Expr, out: set) -> set:
    """Add to `out` the (name, dtype) of every variable and the name of every private array read."""
    if isinstance(expr, Var):
        out.add((expr.name, expr.dtype))
    elif isinstance(expr, Load) and expr.buffer.space == "private":
        out.add(expr.buffer.name)
    for sub in sub_expressions(expr):
        variables_in(sub, out)
    return out


def statement_names(stmts, out: set) -> set:
    """Every variable and private array a list of cut-free statements defines or reads."""
    for stmt in stmts:
        if isinstance(stmt, (Let, Assign)):
            out.add((stmt.var.name, stmt.var.dtype))
            variables_in(stmt.value, out)
        elif isinstance(stmt, Store):
            if stmt.buffer.space == "private":
                out.add(stmt.buffer.name)
            variables_in(stmt.index, out)
            variables_in(stmt.value, out)
        elif isinstance(stmt, For):
            out.add((stmt.var.name, stmt.var.dtype))
            for e in (stmt.start, stmt.stop, stmt.step):
                variables_in(e, out)
            statement_names(stmt.body, out)
        elif isinstance(stmt, If):
            variables_in(stmt.cond, out)
            statement_names(stmt.then, out)
            statement_names(stmt.orelse, out)
        elif isinstance(stmt, AtomicRMW):
            out.add((stmt.var.name, stmt.var.dtype))
            variables_in(stmt.index, out)
            variables_in(stmt.value, out)
        elif isinstance(stmt, While):
            variables_in(stmt.cond, out)
            statement_names(stmt.body, out)
    return out


def split_regions(stmts):
    """Split a block into runs of cut-free statements and the statements that hold a cut:
    yields ("items", [stmts]) and ("cut", stmt) in order.

    A run also ends after a store to global memory that other statements follow (consecutive
    stores stay together): the work-items of a region are independent, so one loop per store
    is the same program, and a loop whose stores walk memory in order runs faster than one whose
    stores go to several places of a row at once.
    An `If` or `For` marked uniform is run like a cut-holding one, at the workgroup level, so each
    branch or iteration gets work-item loops of its own, the innermost loops that LLVM vectorizes
    (a GEMM's unchecked interior tiles against its bounds-checked edge tiles; an FFT pass's rounds
    of one butterfly per work-item)."""
    run = []
    for stmt, after in zip(stmts, list(stmts[1:]) + [None]):
        if contains_cut([stmt]) or (isinstance(stmt, (If, For)) and stmt.uniform):
            if run:
                yield "items", run
                run = []
            yield "cut", stmt
            continue
        run.append(stmt)
        if isinstance(stmt, Store) and stmt.buffer.space == "global" and after is not None \
                and not isinstance(after, Store):
            yield "items", run
            run = []
    if run:
        yield "items", run


def launch_invariant(expr: Expr) -> bool:
    """Whether an expression reads only constants, launch ids and scalar parameters."""
    return not isinstance(expr, (Var, Load)) and all(launch_invariant(sub) for sub in sub_expressions(expr))


def reloadable_loads(kernel: Kernel) -> dict:
    """(name, dtype) -> Load of the variables that every work-item sets once, at the top of the
    body, to a read-only buffer's element at a launch-invariant index: a region reloads such a
    variable (the same load, so the same value) instead of keeping it in a per-work-item array
    (which on a row kernel copies the whole row to the stack and back)."""
    assigned = {s.var.name for s in walk(kernel.body) if isinstance(s, Assign)}
    return {(s.var.name, s.var.dtype): s.value for s in kernel.body
            if isinstance(s, Let) and isinstance(s.value, Load) and s.var.name not in assigned
            and isinstance(s.value.buffer, GlobalBuffer) and s.value.buffer.readonly
            and launch_invariant(s.value.index)}


# An integer variable recomputed in each region stays at most this many expression nodes: a few
# adds and multiplies of the work-item id cost less than a per-work-item array's store and loads.
MAX_RECOMPUTED_NODES = 12
# The operand fields of the integer expressions a recomputed variable may hold.
OPERAND_FIELDS = {Unary: ("x",), Cast: ("x",), Bitcast: ("x",), Binary: ("a", "b"), Compare: ("a", "b"),
                  Select: ("cond", "on_true", "on_false")}


def recomputable_lets(kernel: Kernel) -> dict:
    """(name, dtype) -> value of the integer variables that every work-item sets once, at the top
    of the body, to a short expression of ids, constants, scalar parameters and earlier such
    variables (substituted): each region recomputes the value where it reads it, so an index built
    from the work-item id stays affine in the id there (a vector load) instead of coming back from
    a per-work-item array (a gather)."""
    assigned = {s.var.name for s in walk(kernel.body) if isinstance(s, Assign)}
    found: dict = {}

    def substituted(e: Expr):
        """e with earlier recomputable variables' values in place of them; None if it reads
        anything else per work-item (a load, another variable) or computes other than integers."""
        if isinstance(e, Var):
            return found.get((e.name, e.dtype))
        if isinstance(e, (Const, Special, ScalarParam)):
            return e
        fields = OPERAND_FIELDS.get(type(e))
        if fields is None or not all(x.dtype in INTS or x.dtype == "bool" for x in sub_expressions(e)):
            return None
        parts = [substituted(getattr(e, f)) for f in fields]
        return None if None in parts else dataclasses.replace(e, **dict(zip(fields, parts)))

    def size(e: Expr) -> int:
        return 1 + sum(size(x) for x in sub_expressions(e))

    for s in kernel.body:
        if isinstance(s, Let) and s.var.dtype in INTS and s.var.name not in assigned:
            value = substituted(s.value)
            if value is not None and size(value) <= MAX_RECOMPUTED_NODES:
                found[(s.var.name, s.var.dtype)] = value
    return found


# Wave ops whose lowering reads some operands straight from LDS when it can: class ->
# reads(op, key, load, workgroup_size), how many of op's operand reads of the variable `key`
# ((name, dtype), set to the LDS element `load`) it takes from LDS (mfma_host.py: an MFMA's A
# values, and its B values when each run of lanes reads consecutive elements).
LDS_OPERANDS: dict = {}


def expression_reads(stmt) -> list[Expr]:
    """The expressions a statement itself (not its nested blocks) evaluates."""
    if isinstance(stmt, (Let, Assign)):
        return [stmt.value]
    if isinstance(stmt, (Store, AtomicRMW)):
        return [stmt.index, stmt.value]
    if isinstance(stmt, WaveOp):
        return list(stmt.reads())
    return list(control_expressions(stmt))


def expression_counts(kernel: Kernel, key) -> Counter:
    """How many times each key(e) occurs over every expression e the kernel evaluates (sub-expressions
    included; a key of None is not counted)."""
    counts = Counter()

    def visit(expr):
        found = key(expr)
        if found is not None:
            counts[found] += 1
        for sub in sub_expressions(expr):
            visit(sub)

    for stmt in walk(kernel.body):
        for expr in expression_reads(stmt):
            visit(expr)
    return counts


def variable_reads(kernel: Kernel) -> Counter:
    """How many times each (name, dtype) is read in the kernel."""
    return expression_counts(kernel, lambda e: (e.name, e.dtype) if isinstance(e, Var) else None)


def writes_lds_or_syncs(stmt) -> bool:
    return any(isinstance(s, Barrier) or (isinstance(s, Store) and s.buffer.space == "lds") for s in walk([stmt]))


class StoragePlan:
    """Which variables and private arrays cross a cut (and so need per-work-item arrays), which
    are loop variables of workgroup-level loops (one value per workgroup), and which are
    reloaded in each region (`reloaded`, when `reload` is asked): recomputed from ids, reloaded
    from global memory, or from LDS by the wave ops that take them as LDS operands."""

    def __init__(self, kernel: Kernel, reload: bool = True):
        self.regions_of: dict = {}
        self.workgroup_level: set = set()
        self.wave_results: set = set()
        self.count = 1  # region 0 is the workgroup level: bounds and conditions of cut-holding statements
        self.plan(kernel.body)
        crossing = {name for name, regions in self.regions_of.items() if len(regions) > 1}
        recomputed = {key: value for key, value in recomputable_lets(kernel).items() if key in crossing}
        self.reloaded = {**recomputed, **reloadable_loads(kernel), **self.lds_operand_loads(kernel)} if reload else {}
        self.per_item = (crossing | self.wave_results) - self.workgroup_level - set(self.reloaded)

    def lds_operand_loads(self, kernel: Kernel) -> dict:
        """(name, dtype) -> Load of the variables a block sets once to an LDS element and then reads
        only as LDS operands (LDS_OPERANDS) of wave ops later in that block, with no barrier and no
        LDS store in between: LDS still holds the value there. The index may read ids, constants,
        scalar parameters and workgroup-level loop variables, which every lane can evaluate."""
        if not LDS_OPERANDS:
            return {}
        assigned = {s.var.name for s in walk(kernel.body) if isinstance(s, Assign)}
        reads = variable_reads(kernel)
        found = {}
        blocks = [kernel.body] + [block for s in walk(kernel.body) for block in s.children()]
        for block in blocks:
            for position, stmt in enumerate(block):
                if not (isinstance(stmt, Let) and isinstance(stmt.value, Load) and stmt.value.buffer.space == "lds"
                        and stmt.var.name not in assigned
                        and variables_in(stmt.value.index, set()) <= self.workgroup_level):
                    continue
                key, operand_reads = (stmt.var.name, stmt.var.dtype), 0
                for later in block[position + 1:]:
                    if writes_lds_or_syncs(later):
                        break
                    lds_reads = LDS_OPERANDS.get(type(later))
                    if lds_reads is not None:
                        operand_reads += lds_reads(later, key, stmt.value, kernel.workgroup_size)
                if operand_reads and operand_reads == reads[key]:
                    found[key] = stmt.value
        return found

    def note(self, names, region):
        for name in names:
            self.regions_of.setdefault(name, set()).add(region)

    def new_region(self, names):
        self.note(names, self.count)
        self.count += 1

    def plan(self, stmts):
        for kind, part in split_regions(stmts):
            if kind == "items":
                self.new_region(statement_names(part, set()))
            elif isinstance(part, WaveOp):
                names = set()
                for expr in part.reads():
                    variables_in(expr, names)
                results = {(v.name, v.dtype) for v in part.defines()}
                # A wave op writes every lane's result at once: its results live in per-work-item arrays.
                self.wave_results |= results
                self.new_region(names | results)
            elif isinstance(part, For):
                self.workgroup_level.add((part.var.name, part.var.dtype))
                self.note(set().union(*(variables_in(e, set()) for e in (part.start, part.stop, part.step))), 0)
                self.plan(part.body)
            elif isinstance(part, If):
                self.note(variables_in(part.cond, set()), 0)
                self.plan(part.then)
                self.plan(part.orelse)
            elif isinstance(part, Prefetch):
                self.note(variables_in(part.start, set()), 0)


# ---- which math functions are called, not inlined -----------------------------------------

# Transcendental calls a small kernel inlines at most. Each inlined call costs ~8 ms of LLVM
# (optimising and compiling ~40 vector instructions), a call of an outlined function ~0.5 ns per
# work-item: a long chain of math in a small kernel compiles far faster outlined.
MAX_INLINED_MATH_CALLS = 8
# Kernels of more work-items inline every call: over 2^17 work-items, an outlined call costs more
# than 1/100 of the compile time it saves, so a program run a hundred times loses.
MAX_OUTLINING_WORK_ITEMS = 1 << 17


def math_calls(kernel: Kernel) -> Counter:
    """How many calls of each (math function, dtype) the kernel's code holds."""
    return expression_counts(kernel, lambda e: (e.fn, e.args[0].dtype) if isinstance(e, Math) else None)


def outlined_math(kernel: Kernel) -> set:
    """The (function, dtype) pairs to call through mathlib.outlined: in a kernel of at most
    MAX_OUTLINING_WORK_ITEMS, the most-called ones until the remaining inlined calls fit
    MAX_INLINED_MATH_CALLS (a function called once saves nothing)."""
    if not kernel.static_grid or kernel.num_workgroups * kernel.workgroup_items > MAX_OUTLINING_WORK_ITEMS:
        return set()
    # A 2-D or 3-D workgroup's work-item loops nest, and LLVM unrolls the short inner one: the SLP
    # vectorizer then bundles the unrolled calls of an outlined function into its vector variant,
    # which LLVM 22 (llvmlite 0.50) miscompiles: GEMM epilogues with tanh, sigmoid or silu on f16
    # and bf16 lose their stores or loop forever (tests/libs/test_blas_gemm.py has such epilogues).
    # Inlined, the same math is correct.
    if any(extent > 1 for extent in kernel.workgroup_size[1:]):
        return set()
    counts = [(n, key) for key, n in math_calls(kernel).items() if key[0] in mathlib.OUTLINABLE]
    inlined = sum(n for n, _ in counts)
    outlined = set()
    for n, key in sorted(counts, reverse=True):
        if inlined <= MAX_INLINED_MATH_CALLS or n == 1:
            break
        outlined.add(key)
        inlined -= n
    return outlined


# sin, cos and tan branch around their Payne-Hanek call (mathlib.with_huge_arguments), and LLVM's
# loop vectorizer does not interleave a loop with that branch by itself: asked to, it runs two
# vectors at once, so the polynomials' fma chains of the two overlap.
INTERLEAVED_MATH = {(fn, dtype): 2 for fn in mathlib.HUGE_ARGUMENT_FUNCTIONS for dtype in ("f32", "f64")}


class AccessGroup(ir.values.MDValue):
    """A distinct empty metadata node: the work-item loop's llvm.access.group (the work-items of a
    region are independent, so the loop is parallel)."""

    def descr(self, buf):
        buf += ("distinct !{}", "\n")

    # each group is its own node: llvmlite's MDValues are equal when their operands are (none here),
    # and its metadata cache would then give every loop the property node naming the first group
    __eq__ = object.__eq__
    __hash__ = object.__hash__


def item_loop_hints(kernel: Kernel) -> dict | None:
    """The llvm.loop properties of the kernel's work-item loop."""
    counts = [INTERLEAVED_MATH[key] for key in math_calls(kernel) if key in INTERLEAVED_MATH]
    return {"interleave.count": max(counts)} if counts else None



@lru_cache(maxsize=1)
def vector_bits() -> int:
    """The width of the host's vector registers: the lanes of the math functions' vector variants."""
    features = llvm.get_host_cpu_features()
    return 512 if features.get("avx512f") else 256 if features.get("avx") else 128


# ---- the workgroup function -------------------------------------------------------------

# ---- 32-bit indices computed in 64 bits ----------------------------------------------------
# A u32 index such as `workgroup_id * 4 + workitem_id % 4` (a broadcast operand of a row kernel)
# emitted in i32 and zero-extended is vectorized wrongly by LLVM 22's loop vectorizer: it reads
# elements base .. base + 63 where the index repeats base .. base + 3 (a predicated zext of
# `invariant + (i & 3)`; fuzz seed 2323, program 2323016947). Computed in i64 from the start, the
# same index vectorizes correctly. That is exact when no intermediate value wraps, which
# `u32_bound` proves from the ids' and constants' ranges.
WIDENED_OPS = {"add": "add", "mul": "mul", "div": "udiv", "rem": "urem", "and": "and_"}


def u32_bound(e: Expr, kernel: Kernel) -> int | None:
    """The largest value of a u32 expression of constants, launch ids (of a static grid) and +, *,
    / and % by positive constants, & with constants, when no intermediate value reaches 2^32;
    else None."""
    if e.dtype != "u32":
        return None
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Cast) and isinstance(e.x, Special):
        extent = {"workitem_id": kernel.workgroup_size, "workgroup_id": kernel.grid}.get(e.x.kind)
        bound = extent[e.x.dim] - 1 if extent is not None and isinstance(extent[e.x.dim], int) else None
    elif isinstance(e, Binary) and e.op in WIDENED_OPS:
        a, b = u32_bound(e.a, kernel), u32_bound(e.b, kernel)
        if a is None or b is None or (e.op in ("div", "rem") and not (isinstance(e.b, Const) and b > 0)):
            return None
        bound = {"add": a + b, "mul": a * b, "div": a // max(b, 1), "rem": min(a, b - 1), "and": min(a, b)}[e.op]
    else:
        return None
    return bound if bound is not None and bound < 2 ** 32 else None


# ---- index arithmetic of a known lane ----------------------------------------------------------
# A GEMM micro-kernel (codegen/mfma_host.py) reads each lane's operand at an LDS index computed from
# the work-item id; there the lane is a constant and only the wave varies. The part of such an index
# that depends on the work-item alone is evaluated here, for every wave, and emitted as v0 + wave *
# step where it is affine in the wave (always, for a GEMM's layouts): a few instructions where the
# expression tree would be dozens, for LLVM to build, optimize and fold away per operand.

ITEM_ONLY_SPECIALS = ("workitem_id", "workgroup_size")


def wrapped(value: int, bits: int) -> int:
    """`value` modulo 2^bits, as a signed integer (an LLVM constant of that width)."""
    value %= 2 ** bits
    return value - 2 ** bits if value >= 2 ** (bits - 1) else value


def item_values(e: Expr, operands: list[np.ndarray], items: np.ndarray, workgroup_size) -> np.ndarray:
    """An item-only expression's values at the linear work-item indices `items`, from its operands'
    values there, with the graph IR ops' references (the kernel IR's integers are the graph IR's:
    wrapping, x/0 = -1, ...)."""
    if isinstance(e, Const):
        return np.full(items.shape, e.value, NUMPY_DTYPES[e.dtype])
    if isinstance(e, Special):
        if e.kind == "workgroup_size":
            return np.full(items.shape, workgroup_size[e.dim], np.int32)
        stride = math.prod(workgroup_size[:e.dim])
        return ((items // stride) % workgroup_size[e.dim]).astype(np.int32)
    if isinstance(e, Cast):
        return OPS["convert"].reference(*operands, dtype=e.dtype)
    return OPS[e.op].reference(*operands)


# How a variable is held in its slot: as in registers, but a bool in a byte, so that the work-item
# loops' accesses to a per-work-item bool array vectorize (an i1 array's elements are bytes that
# LLVM loads one at a time).
VARIABLE_TYPES = {**REGISTER_TYPES, "bool": I8}


class HostKernelBuilder(KernelBuilder):
    """Builds the LLVM module of one kernel for the host CPU: `wg` (one workgroup, its body cut
    into work-item loops) and the `run` entry. Row values are reloaded from global memory rather
    than kept in per-work-item arrays (StoragePlan), and the most-called math functions of a small
    kernel are called as shared vector functions rather than inlined (`outlined_math`)."""

    target_label = "host"
    # lower(builder, ops): a run of consecutive wave ops of one class (one or more), lowered at the
    # workgroup level; it may interleave them as long as each lane's results are those of running
    # them in order (MFMA keeps an accumulator in registers).
    wave_op_lowerings: ClassVar[dict] = {}

    def __init__(self, kernel: Kernel):
        super().__init__(kernel, llvm.get_process_triple())
        self.plan = StoragePlan(kernel)
        self.outlined_math = outlined_math(kernel)
        self.item_loop_hints = item_loop_hints(kernel)
        # The GEMM library's MFMA kernels keep constant masks: their index forms are checked over
        # every tile edge by tests/libs, and hidden masks would make their staging loops gathers.
        self.hide_small_masks = not any(isinstance(s, WaveOp) for s in walk(kernel.body))
        # self.storage: (name, dtype) or private name -> (alloca, per_item)
        self.set_item(None)           # the i64 linear work-item index being generated (None: workgroup level)
        self.alongside = None         # an `alongside` if waiting for the next wave op's wave loop
        self.items_of_wave = None     # while set (an i64 wave index), work-item loops cover that wave only
        self.hidden_masks: dict = {}  # (type, mask) -> the mask as a value LLVM cannot see through
        self.item_for_depth = 0       # how many work-item level `for` loops enclose the code generated
        self.item_only_cache: dict = {}          # id(expr) -> (expr, is_item_only(expr))
        self.item_dependence_cache: dict = {}    # id(expr) -> (expr, depends_on_item(expr))
        self.item_tables: dict = {}              # id(expr) -> (expr, item_table(expr))
        self.expression_memo = None              # see memoized_expressions
        self.ordered_accesses: set = set()       # ids of the LDS atomics' loads and stores (lds_atomic)

    # -- small helpers --

    def math_lanes(self, fn, dtype):
        bits = 64 if dtype == "f64" else 32  # f16/bf16 compute in f32 registers
        return vector_bits() // bits if (fn, dtype) in self.outlined_math else None

    def entry_alloca(self, type_, count=None, name=""):
        """An alloca in the entry block (static, so LLVM promotes or hoists it)."""
        with self.b.goto_block(self.fn.entry_basic_block):
            if self.fn.entry_basic_block.instructions:
                self.b.position_before(self.fn.entry_basic_block.instructions[0])
            slot = self.b.alloca(type_, size=None if count is None else ir.Constant(I64, count), name=name)
            slot.align = STACK_ARRAY_ALIGNMENT
        return slot

    def low_bits(self, value, modulus: int):
        """value % modulus for an unsigned value and a power-of-two modulus: value & (modulus - 1).

        LLVM 22's loop vectorizer takes a constant mask of an induction, `(i + c) & m`, for a
        consecutive index even where it wraps inside the loop, when m + 1 is smaller than the
        loop's trip count (a 16-element row broadcast to (80, 16) loaded 64 consecutive elements
        of the 16-element input). There the mask is a value it cannot see through, an empty inline
        asm in the function's entry block (outside every loop), so the `and` stays opaque and the
        load a gather: moduli up to the work-item loop's trip count, and any inside a kernel's own
        loop, whose trip count may be anything. Larger moduli (a 1024-wide bias broadcast over
        256-item workgroups) keep the constant mask, which the vectorizer handles correctly, and
        their consecutive loads (hidden, they would be gathers). Only the host vectorizes work-item
        loops: other backends keep the base builder's plain mask."""
        mask = ir.Constant(value.type, modulus - 1)
        if not self.hide_small_masks or (modulus > self.items and not self.item_for_depth):
            return self.b.and_(value, mask)
        key = (str(value.type), modulus)
        if key not in self.hidden_masks:
            with self.b.goto_block(self.fn.entry_basic_block):
                if self.fn.entry_basic_block.instructions:
                    self.b.position_before(self.fn.entry_basic_block.instructions[0])
                hide = ir.InlineAsm(ir.FunctionType(value.type, [value.type]), "", "=r,0")
                self.hidden_masks[key] = self.b.call(hide, [mask], name="mask")
        return self.b.and_(value, self.hidden_masks[key])

    def set_item(self, index):
        """Generate code for work-item `index` (an i64 value), or for the workgroup level (None)."""
        self.item_index, self.item_ids_cache, self.lane_of_wave = index, {}, None

    def set_lane_item(self, wave, lane: int):
        """Generate code for the constant lane `lane` of wave `wave` (an i64 value): see
        "index arithmetic of a known lane" above."""
        self.set_item(self.b.add(self.b.mul(wave, ir.Constant(I64, self.wave_size)), ir.Constant(I64, lane)))
        self.lane_of_wave = (wave, lane)

    def expr(self, e: Expr):
        memo = self.expression_memo
        key = None if memo is None or isinstance(e, Const) else self.memo_key(e)
        if key is None:
            return self.expr_at_lane(e)
        key = (self.b.block, key)   # a value defined earlier in the block dominates the new use
        if key not in memo:
            memo[key] = self.expr_at_lane(e)
        return memo[key]

    def expr_at_lane(self, e: Expr):
        """e; at a constant lane (set_lane_item), its item-only part as v0 + wave * step."""
        values = self.lane_values(e) if not isinstance(e, Const) else None
        if values is not None:
            step = values[1] - values[0] if len(values) > 1 else 0
            if all(v == values[0] + w * step for w, v in enumerate(values)):
                type_ = REGISTER_TYPES[e.dtype]
                first = ir.Constant(type_, wrapped(values[0], type_.width))
                if step == 0:
                    return first
                wave = self.lane_of_wave[0]
                wave = self.b.trunc(wave, type_) if type_.width < 64 else wave
                return self.b.add(first, self.b.mul(wave, ir.Constant(type_, wrapped(step, type_.width))))
        return super().expr(e)

    @contextmanager
    def memoized_expressions(self):
        """While open, each expression is generated once per basic block: those that do not depend
        on the work-item by their identity, item-only ones at a constant lane by their values in
        every wave. Only for code that stores to no variable and no LDS or global buffer (an MFMA
        micro-kernel), so that equal expressions have equal values."""
        self.expression_memo = {}
        try:
            yield
        finally:
            self.expression_memo = None

    def memo_key(self, e: Expr):
        values = self.lane_values(e)
        if values is not None:
            return ("at lane", e.dtype, values)
        return None if self.depends_on_item(e) else ("same", id(e))

    def cached(self, table: dict, e: Expr, compute):
        """compute(e), once per expression: `table` maps id(e) to (e, value), e kept alive so
        that its id stays its own."""
        if id(e) not in table:
            table[id(e)] = (e, compute(e))
        return table[id(e)][1]

    def depends_on_item(self, e: Expr) -> bool:
        """Whether e's value may differ between work-items: a work-item id, a variable kept per
        work-item or reloaded, or a load from a private array."""
        def compute(e):
            if isinstance(e, Special):
                return e.kind == "workitem_id"
            if isinstance(e, Var):
                reloaded = self.plan.reloaded.get((e.name, e.dtype))
                if reloaded is not None and not isinstance(reloaded, Load):
                    return self.depends_on_item(reloaded)   # a recomputed id expression
                return (e.name, e.dtype) in self.plan.per_item or reloaded is not None
            return (isinstance(e, Load) and e.buffer.space == "private") or \
                any(self.depends_on_item(x) for x in sub_expressions(e))
        return self.cached(self.item_dependence_cache, e, compute)

    def is_item_only(self, e: Expr) -> bool:
        """Whether an integer expression depends on nothing but the work-item id."""
        def compute(e):
            if isinstance(e, Const):
                return True
            if isinstance(e, Special):
                return e.kind in ITEM_ONLY_SPECIALS
            if isinstance(e, (Binary, Unary, Cast)) and e.dtype in INTS:
                return all(x.dtype in INTS and self.is_item_only(x) for x in sub_expressions(e))
            return False
        return self.cached(self.item_only_cache, e, compute)

    def lane_values(self, e: Expr) -> tuple[int, ...] | None:
        """At a constant lane (set_lane_item), an item-only integer e's values there in each wave,
        as Python ints; else None."""
        if self.lane_of_wave is None or e.dtype not in INTS or not self.is_item_only(e):
            return None
        return tuple(int(v) for v in self.item_table(e)[self.lane_of_wave[1]::self.wave_size])

    def item_table(self, e: Expr) -> np.ndarray:
        """An item-only e's values at every work-item of the workgroup."""
        def compute(e):
            operands = [self.item_table(x) for x in sub_expressions(e)]
            return item_values(e, operands, np.arange(self.items), self.kernel.workgroup_size)
        return self.cached(self.item_tables, e, compute)

    def item_loop(self, body):
        """body() once per work-item of the workgroup: the work-item loop that LLVM vectorizes.

        A 1-D workgroup is one loop over the linear index. A 2-D or 3-D one is a nest of loops,
        z outermost and x innermost, so the x loop vectorizes with the y and z ids invariant in it
        (a GEMM's broadcast operand, a tile's row) instead of recomputed per lane by division."""
        sizes = self.kernel.workgroup_size
        if self.items_of_wave is not None:
            self.wave_item_loop(self.items_of_wave, body)
        elif all(extent == 1 for extent in sizes[1:]):
            def at(i):
                self.set_item(i)
                body()
            first_block = len(self.fn.blocks)
            group = AccessGroup(self.module, [], name=str(len(self.module.metadata)))
            hints = {**(self.item_loop_hints or {}), "parallel_accesses": group}
            self.counted_loop(ir.Constant(I64, 0), ir.Constant(I64, self.items), ir.Constant(I64, 1), at, name="item",
                              hints=hints)
            self.mark_independent_accesses(self.fn.blocks[first_block:], group)
        else:
            self.item_nest(sizes, 2, [], body)
        self.set_item(None)

    def mark_independent_accesses(self, blocks, group):
        """Put the work-item loop's loads and stores that no other work-item of the region touches
        in its access group, which the loop's llvm.loop.parallel_accesses names: the vectorizer
        then needs no proof that scattered LDS stores and gathered loads do not overlap.

        That the claim holds, access by access:
        - global and LDS buffers: the work-items of a region run with no barrier between them, in
          any order on the device, so a kernel where one reads or overwrites an element another
          writes in the same region is a race (undefined); the only same-element writes the
          generators emit store the same value (an FFT launch's spare slots copy its last
          transform), which any order keeps;
        - per-work-item arrays (variables and private arrays that cross a cut): one element per
          work-item.
        A variable or private array of one region lives in a single stack slot that every
        iteration reuses: those accesses stay outside the group. A scalar one becomes a register
        before the vectorizer runs; a private array that stays in memory leaves the loop unmarked
        in effect (LLVM treats a loop as parallel only when every access is in the group), so LLVM
        checks its dependences as for any loop. So do atomics (an LDS atomic's load and store
        included) and calls, which are not tagged."""
        shared_slots = {id(pointer) for pointer, per_item in self.storage.values() if not per_item}
        for block in blocks:
            for instruction in block.instructions:
                if isinstance(instruction, ir.LoadInstr):
                    pointer = instruction.operands[0]
                elif isinstance(instruction, ir.StoreInstr):
                    pointer = instruction.operands[1]
                else:
                    continue
                while isinstance(pointer, (ir.GEPInstr, ir.CastInstr)):
                    pointer = pointer.operands[0]
                if id(pointer) not in shared_slots and id(instruction) not in self.ordered_accesses:
                    instruction.set_metadata("llvm.access.group", group)

    def item_nest(self, sizes, dim, outer, body):
        """The loop of dimension `dim` inside those of `outer` (the ids of dims above it)."""
        def at(i):
            ids = outer + [i]
            if dim > 0:
                self.item_nest(sizes, dim - 1, ids, body)
                return
            z, y, x = ids
            linear = self.b.add(self.b.mul(self.b.add(self.b.mul(z, ir.Constant(I64, sizes[1])), y),
                                           ir.Constant(I64, sizes[0])), x)
            self.set_item(linear)
            self.item_ids_cache.update({d: self.b.trunc(v, I32) for d, v in zip((2, 1, 0), ids)})
            body()
        self.counted_loop(ir.Constant(I64, 0), ir.Constant(I64, sizes[dim]), ir.Constant(I64, 1), at,
                          name="item" + "xyz"[dim])

    def wave_item_loop(self, wave, body):
        """item_loop over the 64 work-items of one wave: the (y, x) nest at z = wave when an x-y
        plane is one wave (a GEMM's workgroups), else one loop over the wave's linear indices."""
        sizes = self.kernel.workgroup_size
        if sizes[0] * sizes[1] == self.wave_size:
            self.item_nest(sizes, 1, [wave], body)
            return

        def at(lane):
            self.set_item(self.b.add(self.b.mul(wave, ir.Constant(I64, self.wave_size)), lane))
            body()
        self.counted_loop(ir.Constant(I64, 0), ir.Constant(I64, self.wave_size), ir.Constant(I64, 1), at, name="item")

    def for_each_lane(self, wave, body):
        """body(lane) for each of the 64 lanes of wave `wave` (an i64), with the lane's work-item set."""
        def at(lane):
            self.set_item(self.b.add(self.b.mul(wave, ir.Constant(I64, self.wave_size)), lane))
            body(lane)
        self.counted_loop(ir.Constant(I64, 0), ir.Constant(I64, self.wave_size), ir.Constant(I64, 1), at, name="lane")
        self.set_item(None)

    def for_each_wave(self, body):
        """body(wave) for each wave of the workgroup, after the wave's work-items of a waiting
        `alongside` if (which the first wave loop after it takes)."""
        alongside, self.alongside = self.alongside, None

        def wave(w):
            if alongside is not None:
                self.items_of_wave = w
                self.workgroup_part("cut", alongside)
                self.items_of_wave = None
            body(w)
        self.counted_loop(ir.Constant(I64, 0), ir.Constant(I64, self.items // self.wave_size), ir.Constant(I64, 1), wave,
                          name="wave")

    def run_waiting_alongside(self):
        """Run a waiting `alongside` if now, whole."""
        if self.alongside is not None:
            waiting, self.alongside = self.alongside, None
            self.workgroup_part("cut", waiting)

    # -- storage --

    def slot(self, key, dtype, count=1):
        """The storage of a variable or private array: (pointer, per_item)."""
        if key not in self.storage:
            per_item = key in self.plan.per_item
            type_ = (VARIABLE_TYPES if count == 1 else MEMORY_TYPES)[dtype]
            total = count * (self.items if per_item else 1)
            self.storage[key] = (self.entry_alloca(type_, total if total > 1 else None, name=str(key)), per_item)
        return self.storage[key]

    def current_item(self):
        return self.item_index if self.item_index is not None else ir.Constant(I64, 0)

    def variable_pointer(self, var: Var):
        pointer, per_item = self.slot((var.name, var.dtype), var.dtype)
        if per_item:
            return self.b.gep(pointer, [self.current_item()], source_etype=VARIABLE_TYPES[var.dtype])
        return pointer

    def read_var(self, var: Var):
        reloaded = self.plan.reloaded.get((var.name, var.dtype))
        if reloaded is not None:
            return self.expr(reloaded)
        value = self.b.load(self.variable_pointer(var), typ=VARIABLE_TYPES[var.dtype])
        return self.b.trunc(value, I1) if var.dtype == "bool" else value

    def write_var(self, var: Var, value):
        self.b.store(self.b.zext(value, I8) if var.dtype == "bool" else value, self.variable_pointer(var))

    def index64(self, expr):
        """A buffer index as an i64: a u32 one u32_bound proves computed in i64 (WIDENED_OPS)."""
        if self.lane_of_wave is None and u32_bound(expr, self.kernel) is not None:
            return self.widened(expr)
        return super().index64(expr)

    def widened(self, e: Expr):
        if isinstance(e, Const):
            return ir.Constant(I64, e.value)
        if isinstance(e, Cast):   # of a launch id, which is never negative
            return self.b.zext(self.expr(e.x), I64)
        return getattr(self.b, WIDENED_OPS[e.op])(self.widened(e.a), self.widened(e.b))

    def element_pointer(self, buffer, index_expr):
        index = self.index64(index_expr)
        memory = MEMORY_TYPES[buffer.dtype]
        if buffer.space == "global":
            return self.b.gep(self.buffer_args[buffer.name], [index], source_etype=memory)
        if buffer.space == "lds":
            return self.b.gep(self.lds_pointers[buffer.name], [index], source_etype=memory)
        pointer, per_item = self.slot(buffer.name, buffer.dtype, buffer.count)
        if per_item:  # element-major, so consecutive work-items touch consecutive addresses
            index = self.b.add(self.b.mul(index, ir.Constant(I64, self.items)), self.current_item())
        return self.b.gep(pointer, [index], source_etype=memory)

    # -- launch ids --

    def expr_special(self, e: Special):
        if e.kind == "workgroup_id":
            return self.workgroup_ids[e.dim]
        if e.kind == "workgroup_size":
            return ir.Constant(I32, self.kernel.workgroup_size[e.dim])
        if e.kind == "num_workgroups":
            return self.b.trunc(self.grid_extent(e.dim), I32)
        return self.workitem_id(e.dim)

    def workitem_id(self, dim):
        """Local id along dim from the linear index (x fastest): constant divisors, so shifts for powers of 2."""
        if dim not in self.item_ids_cache:
            sx, sy, _ = self.kernel.workgroup_size
            value = self.current_item()
            stride = (1, sx, sx * sy)[dim]
            extent = self.kernel.workgroup_size[dim]
            if stride > 1:
                value = self.b.udiv(value, ir.Constant(I64, stride))
            if stride * extent < self.items:
                value = self.low_bits(value, extent) if is_power_of_two(extent) \
                    else self.b.urem(value, ir.Constant(I64, extent))
            self.item_ids_cache[dim] = self.b.trunc(value, I32)
        return self.item_ids_cache[dim]

    # -- statements inside a work-item loop --

    def statements(self, stmts):
        # Work-item ids first computed inside a nested block do not dominate the code after it.
        outer_ids = dict(self.item_ids_cache)
        super().statements(stmts)
        self.item_ids_cache = outer_ids

    def statement(self, s):
        if isinstance(s, (Let, Assign)) and (s.var.name, s.var.dtype) in self.plan.reloaded:
            return  # read_var loads the value where it is read
        if isinstance(s, For):
            self.item_for_depth += 1
            super().statement(s)
            self.item_for_depth -= 1
        elif isinstance(s, AtomicRMW) and s.buffer.space == "lds":
            self.lds_atomic(s)
        else:
            super().statement(s)

    def lds_atomic(self, s: AtomicRMW):
        """A workgroup runs on one thread, its work-items one after another, so an LDS atomic is a
        plain read-modify-write; its load and store stay out of the work-item loop's access group
        (`ordered_accesses`), since other work-items touch the element too."""
        pointer = self.element_pointer(s.buffer, s.index)
        old = self.b.load(pointer)
        value = self.expr(s.value)
        store = self.b.store(self.b.add(old, value) if s.op == "add" else value, pointer)
        self.ordered_accesses.update((id(old), id(store)))
        self.write_var(s.var, old)

    # -- the workgroup level: regions, cuts and uniform control --

    def workgroup_block(self, stmts):
        # Consecutive wave ops of one class are lowered together (an MFMA run); other parts one by one.
        def wave_class(kind_part):
            return type(kind_part[1]) if isinstance(kind_part[1], WaveOp) else None

        for cls, group in itertools.groupby(split_regions(stmts), key=wave_class):
            if cls is not None:
                self.wave_op_lowering(cls)(self, [part for _, part in group])
                self.run_waiting_alongside()  # a lowering without a wave loop leaves it waiting
                continue
            for kind, part in group:
                if kind == "items":  # work-item statements, which the waiting if's promise lets pass it
                    self.workgroup_part(kind, part)
                    continue
                self.run_waiting_alongside()
                if isinstance(part, If) and part.alongside:
                    self.alongside = part
                else:
                    self.workgroup_part(kind, part)
        self.run_waiting_alongside()

    def workgroup_part(self, kind, part):
        """One part of split_regions other than a wave op."""
        if kind == "items":
            self.item_loop(lambda: self.statements(part))
        elif isinstance(part, Barrier):
            pass  # the end of one work-item loop and the start of the next is the barrier
        elif isinstance(part, Prefetch):
            self.prefetch(part)
        elif isinstance(part, For):  # uniform: bounds as work-item 0 sees them
            start, stop, step = (self.expr(e) for e in (part.start, part.stop, part.step))
            self.counted_loop(start, stop, step,
                              lambda i: (self.write_var(part.var, i), self.workgroup_block(part.body)),
                              signed=is_signed(part.var.dtype), name="ufor." + part.var.name)
        elif isinstance(part, If):
            with self.b.if_else(self.expr(part.cond)) as (then, orelse):
                with then:
                    self.workgroup_block(part.then)
                with orelse:
                    self.workgroup_block(part.orelse)

    def build(self) -> ir.Module:
        k = self.kernel
        params = [PTR if isinstance(p, GlobalBuffer) else REGISTER_TYPES[p.dtype] for p in k.params]
        self.fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), params + [I32, I32, I32]), name="wg")
        self.fn.linkage = "internal"
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.bind_parameters(self.fn.args)
        for param in k.buffers:
            if is_aligned_buffer(param.dtype, param.count, param.readonly):
                self.buffer_args[param.name].attributes.align = WRITTEN_BUFFER_ALIGNMENT
        self.workgroup_ids = self.fn.args[len(k.params):]
        self.lds_pointers = {}
        # one stack object per LDS buffer (they never overlap), so LLVM's loop vectorizer sees that a
        # loop's loads from one buffer and stores to another are independent, whatever their indices
        for buffer in k.lds:
            size = -(-buffer.nbytes // LDS_ALIGNMENT) * LDS_ALIGNMENT
            block = self.entry_alloca(I8, size, name="lds." + buffer.name)
            self.lds_pointers[buffer.name] = self.b.bitcast(block, MEMORY_TYPES[buffer.dtype].as_pointer())
        self.workgroup_block(k.body)
        self.b.ret_void()
        self.build_entry()
        # LLVM's tuning for Intel's AVX-512 CPUs (rocketlake, sapphirerapids) has the vectorizers
        # prefer 256-bit vectors; the math functions' vector variants are declared at the full width
        # (vector_bits), and a loop vectorized at half of it calls the scalar function per lane.
        for fn in self.module.functions:
            if not fn.is_declaration:
                add_attribute(fn.attributes, f'"prefer-vector-width"="{vector_bits()}"')
        return self.module

    def prefetch_function(self) -> ir.Function:
        """llvm.prefetch(address, rw, locality, cache type)."""
        return self.module.globals.get("llvm.prefetch.p0") or ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [PTR, I32, I32, I32]), name="llvm.prefetch.p0")

    def prefetch(self, part: Prefetch):
        """A Prefetch statement: each cache line of its runs into L2 (x86's prefetcht1). L2, not L1:
        a GEMM's next tiles would evict the L1 lines the current one works on."""
        b, prefetch = self.b, self.prefetch_function()
        element = buffer_bytes(part.buffer.dtype, 1)
        start = self.element_pointer(part.buffer, part.start)
        lines = range(0, part.run_elements * element, CACHE_LINE)

        stride = b.mul(self.index64(part.run_stride), ir.Constant(I64, element))

        def run(r):
            first = b.gep(start, [b.mul(r, stride)], source_etype=I8)
            for line in lines:
                b.call(prefetch, [b.gep(first, [ir.Constant(I64, line)], source_etype=I8), ir.Constant(I32, 0),
                                  ir.Constant(I32, PREFETCH_L2), ir.Constant(I32, 1)])
        self.counted_loop(ir.Constant(I64, 0), ir.Constant(I64, part.runs), ir.Constant(I64, 1), run, name="prefetch")

    def prefetch_streams(self, values, group):
        """Prefetch workgroup `group`'s slice of each stream (Kernel.streams), one call per cache
        line, when there is such a workgroup."""
        k, b = self.kernel, self.b
        prefetch = self.prefetch_function()
        pointers = {p.name: v for p, v in zip(k.params, values)}
        dtypes = {p.name: p.dtype for p in k.params}
        with b.if_then(b.icmp_signed("<", group, ir.Constant(I64, k.num_workgroups))):
            for name, elements in k.streams:
                nbytes = buffer_bytes(dtypes[name], elements)
                start = b.gep(pointers[name], [b.mul(group, ir.Constant(I64, nbytes))], source_etype=I8)
                self.counted_loop(ir.Constant(I64, 0), ir.Constant(I64, nbytes), ir.Constant(I64, CACHE_LINE),
                                  lambda offset: b.call(prefetch, [b.gep(start, [offset], source_etype=I8),
                                                                   ir.Constant(I32, 0), ir.Constant(I32, 3),
                                                                   ir.Constant(I32, 1)]),
                                  name="prefetch")

    def build_entry(self):
        """`run(void** args, i64* next, i64 last, i64 grab)`: unpack the arguments, then take
        ranges of `grab` workgroups from the shared counter `*next` until it reaches `last`
        (with grab == last, the caller's thread runs the launch alone)."""
        k = self.kernel
        run = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I64]), name=ENTRY)
        args_pointer, next_pointer, last, grab = run.args
        self.fn, self.b = run, ir.IRBuilder(run.append_basic_block("entry"))
        values = []
        for i, param in enumerate(k.params):
            slot = self.b.load(self.b.gep(args_pointer, [ir.Constant(I64, i)], source_etype=PTR), typ=PTR)
            if isinstance(param, GlobalBuffer):
                if is_aligned_buffer(param.dtype, param.count, param.readonly):
                    # On the pointer itself: the wg parameter's `align` does not survive inlining.
                    slot.set_metadata("align", self.module.add_metadata([ir.Constant(I64, WRITTEN_BUFFER_ALIGNMENT)]))
                values.append(slot)
            else:
                values.append(self.from_memory(param.dtype, self.b.load(slot, typ=MEMORY_TYPES[param.dtype])))
        # Runtime extents are computed here, once per call, from the scalars just loaded.
        self.scalar_args = {p.name: v for p, v in zip(k.params, values) if not isinstance(p, GlobalBuffer)}
        one = ir.Constant(I64, 1)
        extent = []
        for dim, size in enumerate(k.grid):  # an empty grid never runs, but must still compile
            if isinstance(size, int):
                extent.append(ir.Constant(I64, max(size, 1)))
            else:
                size = self.grid_extent(dim)
                extent.append(self.b.select(self.b.icmp_signed("<", size, one), one, size))
        # The alternate walk's condition, once per call (Kernel.alternate_grid_order).
        alternate = self.expr(k.alternate_grid_order[0]) if k.alternate_grid_order else None

        def ids_in(order, linear):
            # The linear position in a walk of the grid in `order` -> the workgroup's ids.
            fastest, middle, slowest = order
            ids = [None, None, None]
            ids[fastest] = self.b.urem(linear, extent[fastest])
            ids[middle] = self.b.urem(self.b.udiv(linear, extent[fastest]), extent[middle])
            ids[slowest] = self.b.udiv(linear, self.b.mul(extent[fastest], extent[middle]))
            return ids

        def one_workgroup(linear):
            ids = ids_in(k.grid_order, linear)
            if alternate is not None:
                others = ids_in(k.alternate_grid_order[1], linear)
                ids = [self.b.select(alternate, other, own) for own, other in zip(ids, others)]
            self.b.call(wg_function, values + [self.b.trunc(v, I32) for v in ids])

        def prefetch_then_run(linear):
            self.prefetch_streams(values, self.b.add(linear, ir.Constant(I64, 1)))
            one_workgroup(linear)

        wg_function = self.module.globals["wg"]
        b = self.b
        take = self.fn.append_basic_block("take")
        taken = self.fn.append_basic_block("taken")
        done = self.fn.append_basic_block("done")
        b.branch(take)
        b.position_at_end(take)
        if streamed_buffers(k):
            # Non-temporal stores are weakly ordered: drain them before the take that may tell the
            # launch's caller this thread is done (runtime/launch.py), which then hands the buffers on.
            sfence = ir.Function(self.module, ir.FunctionType(ir.VoidType(), []), name="llvm.x86.sse.sfence")
            b.call(sfence, [])
        # Release: a caller that reads the counter's final value (acquire) sees every store before it.
        # A caller that takes the whole grid at once (grab == last) runs it alone: its counter is
        # private, and plain accesses let a caller that inlines `run` (codegen/native_loop.py)
        # keep the counter in a register.
        alone = b.icmp_signed("==", grab, last)
        with b.if_else(alone) as (private, shared):
            with private:
                private_block = b.block
                private_first = b.load(next_pointer, typ=I64)
                b.store(b.add(private_first, grab), next_pointer)
            with shared:
                shared_block = b.block
                shared_first = b.atomic_rmw("add", next_pointer, grab, "acq_rel")
        first = b.phi(I64)
        first.add_incoming(private_first, private_block)
        first.add_incoming(shared_first, shared_block)
        b.cbranch(b.icmp_signed("<", first, last), taken, done)
        b.position_at_end(taken)
        end = b.add(first, grab)
        end = b.select(b.icmp_signed("<", end, last), end, last)
        self.counted_loop(first, end, ir.Constant(I64, 1), prefetch_then_run if k.streams else one_workgroup,
                          name="workgroup")
        b.branch(take)
        b.position_at_end(done)
        self.b.ret_void()


# ---- wave ops -----------------------------------------------------------------------------

def one_at_a_time(lower_one):
    """A run lowering (HostKernelBuilder.wave_op_lowerings) that lowers each op of the run by itself."""
    def lower(kb: HostKernelBuilder, ops):
        for op in ops:
            lower_one(kb, op)
    return lower


def wave_vector_loader(kb: HostKernelBuilder, value: Expr, name: str):
    """load(w): wave w's 64 lanes' values of `value` as one vector (bool: their bytes, as a bool
    array holds them). A per-work-item variable's array already holds the wave's values side by
    side; any other value is gathered lane by lane."""
    b, register = kb.b, REGISTER_TYPES[value.dtype]
    key = (value.name, value.dtype) if isinstance(value, Var) else None
    vector = ir.VectorType(I8 if value.dtype == "bool" else register, kb.wave_size)
    if key in kb.plan.per_item:
        lanes = kb.slot(key, value.dtype)[0]
        return lambda w: b.load(b.gep(lanes, [b.mul(w, ir.Constant(I64, kb.wave_size))], source_etype=vector.element),
                                typ=vector, align=16)   # the arrays' alignment (a vector's own would be its size)
    lanes = kb.entry_alloca(vector.element, kb.wave_size, name="wave." + name)

    def store(lane):
        lane_value = kb.expr(value)
        lane_value = b.zext(lane_value, I8) if value.dtype == "bool" else lane_value
        b.store(lane_value, b.gep(lanes, [lane], source_etype=vector.element))

    def load(w):
        kb.for_each_lane(w, store)
        return b.load(lanes, typ=vector, align=16)
    return load


def lower_wave_reduce(kb: HostKernelBuilder, op: WaveReduce):
    """Per wave: the 64 lanes' values as one vector, combined as the xor butterfly does (pairwise:
    v[:32] op v[32:], then halves again, each step one vector operation), the result written to
    every lane."""
    b, dtype = kb.b, op.value.dtype
    load = wave_vector_loader(kb, op.value, op.dest.name)
    reduce_op = "add" if op.op == "sum" else op.op

    def combine(x, y):
        return kb.float_binary(reduce_op, x, y) if is_float(dtype) else kb.int_binary(reduce_op, x, y, is_signed(dtype))

    def wave(w):
        values = load(w)
        width = kb.wave_size
        while width > 1:
            width //= 2
            halves = [b.shuffle_vector(values, values, ir.Constant(ir.VectorType(I32, width), list(range(start, start + width))))
                      for start in (0, width)]
            values = combine(*halves)
        result = kb.round_to(dtype, b.extract_element(values, ir.Constant(I32, 0)))  # f16/bf16: combined in f32
        kb.for_each_lane(w, lambda lane: kb.write_var(op.dest, result))

    kb.for_each_wave(wave)


def lower_wave_shuffle(kb: HostKernelBuilder, op: WaveShuffle):
    """Per wave: gather the lanes' values, then lane l reads the value of lane src_lane(l) % 64."""
    b, dtype = kb.b, op.value.dtype
    lanes = kb.entry_alloca(REGISTER_TYPES[dtype], kb.wave_size, name="wave." + op.dest.name)
    element = lambda lane: b.gep(lanes, [lane], source_etype=REGISTER_TYPES[dtype])

    def wave(w):
        kb.for_each_lane(w, lambda lane: b.store(kb.expr(op.value), element(lane)))

        def read(lane):
            source = b.and_(kb.index64(op.src_lane), ir.Constant(I64, kb.wave_size - 1))
            kb.write_var(op.dest, b.load(element(source), typ=REGISTER_TYPES[dtype]))
        kb.for_each_lane(w, read)

    kb.for_each_wave(wave)


def lower_wave_move(kb: HostKernelBuilder, op: WaveMove):
    """Per wave: the lanes' values as one vector, permuted by the pattern's constant lane map (one
    shufflevector) and stored as the result's lanes (a wave op's result lives in a per-work-item array)."""
    b, register = kb.b, VARIABLE_TYPES[op.value.dtype]
    load = wave_vector_loader(kb, op.value, op.dest.name)
    sources = ir.Constant(ir.VectorType(I32, kb.wave_size), wave_move_sources(op.pattern, kb.wave_size))
    results = kb.slot((op.dest.name, op.dest.dtype), op.dest.dtype)[0]

    def wave(w):
        values = load(w)
        first = b.gep(results, [b.mul(w, ir.Constant(I64, kb.wave_size))], source_etype=register)
        b.store(b.shuffle_vector(values, values, sources), b.bitcast(first, values.type.as_pointer()), align=16)

    kb.for_each_wave(wave)


def lower_wave_ballot(kb: HostKernelBuilder, op: WaveBallot):
    """Per wave: bit l of the mask is lane l's predicate (HIP's __ballot, as llvm.amdgcn.ballot gives
    it), written to every lane. A predicate variable's per-work-item array holds the wave's 64 flags
    side by side (a byte each, the flag in its low bit): one vector load, truncated to 64 bits;
    any other predicate is gathered lane by lane."""
    b = kb.b
    key = (op.predicate.name, "bool") if isinstance(op.predicate, Var) else None
    dest = (op.dest.name, op.dest.dtype)
    mask = kb.entry_alloca(I64, name="ballot." + op.dest.name)

    def wave(w):
        if key in kb.plan.per_item:
            flags = b.gep(kb.slot(key, "bool")[0], [b.mul(w, ir.Constant(I64, kb.wave_size))], source_etype=I8)
            lanes = b.load(flags, typ=ir.VectorType(I8, kb.wave_size), align=1)
            b.store(b.bitcast(b.trunc(lanes, ir.VectorType(I1, kb.wave_size)), I64), mask)
        else:
            b.store(ir.Constant(I64, 0), mask)

            def gather(lane):
                bit = b.shl(b.zext(kb.expr(op.predicate), I64), lane)
                b.store(b.or_(b.load(mask, typ=I64), bit), mask)
            kb.for_each_lane(w, gather)
        whole = b.load(mask, typ=I64)
        if dest in kb.plan.per_item:   # the wave's lanes of the result side by side: one vector store
            splat = ir.VectorType(I64, kb.wave_size)
            lanes = b.gep(kb.slot(dest, "u64")[0], [b.mul(w, ir.Constant(I64, kb.wave_size))], source_etype=I64)
            b.store(b.shuffle_vector(b.insert_element(ir.Constant(splat, None), whole, ir.Constant(I32, 0)),
                                     ir.Constant(splat, None), ir.Constant(ir.VectorType(I32, kb.wave_size), None)),
                    b.bitcast(lanes, splat.as_pointer()), align=16)
        else:
            kb.for_each_lane(w, lambda lane: kb.write_var(op.dest, whole))

    kb.for_each_wave(wave)


def lower_wave_count_below(kb: HostKernelBuilder, op: WaveCountBelow):
    """Lane l: the set bits of the mask in lanes 0 .. l-1 (v_mbcnt_lo/hi's count)."""
    b = kb.b

    def count(lane):
        below = b.sub(b.shl(ir.Constant(I64, 1), lane), ir.Constant(I64, 1))
        kb.write_var(op.dest, b.trunc(b.ctpop(b.and_(kb.expr(op.mask), below)), I32))

    kb.for_each_wave(lambda w: kb.for_each_lane(w, count))


def lower_wave_match_rank(kb: HostKernelBuilder, op: WaveMatchRank):
    """Per wave, a table of 2^bits counters (zero between ops): a walk of the lanes upwards gives
    each lane its counter's value (its rank: the matching lanes below) and counts it, the one
    serial loop; then, lane by lane independently (a loop LLVM may vectorize), a lane is its
    group's last when its counter ended at its rank + 1; then the table is cleared: whole when it
    is no larger than the lanes' stores would be, else at the lanes' counters."""
    b, size = kb.b, 1 << op.bits
    table = kb.entry_alloca(I32, size, name="match." + op.rank.name)
    memset = kb.module.globals.get("llvm.memset.p0.i64") or ir.Function(
        kb.module, ir.FunctionType(ir.VoidType(), [PTR, I8, I64, I1]), name="llvm.memset.p0.i64")
    clear_whole = size <= 4 * kb.wave_size
    with b.goto_block(kb.fn.entry_basic_block):
        b.position_after(table)   # zeroed once per workgroup, at its entry
        b.call(memset, [b.bitcast(table, PTR), ir.Constant(I8, 0), ir.Constant(I64, 4 * size), ir.Constant(I1, 0)])

    def counter():
        value = kb.expr(op.value)
        value = b.and_(value, ir.Constant(value.type, size - 1))
        value = b.zext(value, I64) if value.type.width < 64 else value
        return b.gep(table, [value], source_etype=I32)

    def wave(w):
        def rank(lane):
            entry = counter()
            below = b.load(entry, typ=I32)
            kb.write_var(op.rank, below)
            b.store(b.add(below, ir.Constant(I32, 1)), entry)

        def last(lane):
            final = b.load(counter(), typ=I32)
            kb.write_var(op.last, b.icmp_unsigned("==", final, b.add(kb.read_var(op.rank), ir.Constant(I32, 1))))

        kb.for_each_lane(w, rank)
        kb.for_each_lane(w, last)
        if clear_whole:
            b.call(memset, [b.bitcast(table, PTR), ir.Constant(I8, 0), ir.Constant(I64, 4 * size), ir.Constant(I1, 0)])
        else:
            kb.for_each_lane(w, lambda lane: b.store(ir.Constant(I32, 0), counter()))

    kb.for_each_wave(wave)


def register_wave_op(cls, lower, lds_reads=None) -> None:
    """Add the host lowering of a new WaveOp subclass: lower(builder, run of consecutive ops); and
    `lds_reads`, how many operand reads of a variable it can take straight from LDS (`LDS_OPERANDS`)."""
    HostKernelBuilder.register_wave_op(cls, lower)
    if lds_reads is not None:
        LDS_OPERANDS[cls] = lds_reads


register_wave_op(WaveReduce, one_at_a_time(lower_wave_reduce))
register_wave_op(WaveShuffle, one_at_a_time(lower_wave_shuffle))
register_wave_op(WaveMove, one_at_a_time(lower_wave_move))
register_wave_op(WaveBallot, one_at_a_time(lower_wave_ballot))
register_wave_op(WaveCountBelow, one_at_a_time(lower_wave_count_below))
register_wave_op(WaveMatchRank, one_at_a_time(lower_wave_match_rank))


# ---- compiling --------------------------------------------------------------------------

def spans_as_loops(kernel: Kernel) -> Kernel:
    """The kernel with each span (ir/kernel.py: ForSpan, at the top of the body) in the host's
    assignment: a uniform loop over k, outside the work-item loops, in which work-item i takes element
    start + k x workgroup size + i, so that consecutive work-items read and write consecutive elements
    (the work-item loop vectorizes, as one element per work-item does); and each span offset
    (ir/kernel.py: SpanOffset) in the same assignment, k x workgroup size + i."""
    kernel = span_offsets_resolved(kernel, item_major=False)
    def as_loop(span: ForSpan) -> For:
        k = Var(f"{span.var.name}_k", span.var.dtype)
        element = span.element(0, kernel.workgroup_items, item_major=False) + k * kernel.workgroup_items
        body = span.body if span.stop is None else (If(span.var < span.stop, span.body),)
        return For(k, 0, span.per_item, 1, (Let(span.var, element),) + body, uniform=True)
    if not any(isinstance(s, ForSpan) for s in kernel.body):
        return kernel
    return dataclasses.replace(kernel, body=tuple(as_loop(s) if isinstance(s, ForSpan) else s for s in kernel.body))


def llvm_module(kernel: Kernel, verify: bool = True) -> ir.Module:
    """The unoptimised LLVM module of a kernel."""
    if verify:
        verify_kernel(kernel)
    return HostKernelBuilder(spans_as_loops(kernel)).build()


def optimized_llvm_ir(kernel: Kernel) -> str:
    """The kernel's LLVM module, optimized, with its streaming stores marked."""
    return llvm_worker.run("optimized_ir", str(llvm_module(kernel)), streamed_buffers(kernel))


def compile_object(kernel: Kernel) -> bytes:
    """The kernel as a host object file whose symbol `run` is the entry."""
    return llvm_worker.run("object_code", str(llvm_module(kernel)), streamed_buffers(kernel))


def compile_objects(kernels: list[Kernel]) -> list[bytes]:
    """[compile_object(k) for k in kernels], on $CDNAJIT_COMPILE_JOBS CPUs at once (by default all
    this process may use), each taking the next kernel in the given order: put the longest first,
    so that no CPU is left with one at the end."""
    return llvm_worker.map_in_forks(compile_object, kernels, compile_jobs())

