"""Host lowering of the MFMA wave op (ir/kernel_mfma.py): the CPU runs each instruction with its
exact lane layout.

Per wave of the workgroup, with tiles in the accumulation type (f32 for f32/f16/bf16 inputs, f64,
i32 for i8: f16/bf16 registers already hold f32 values, i8 is sign-extended):
1. gather: every lane's A, B and C values go to the tiles A^T[blocks][k][m], B[blocks][k][n] and
   D[blocks][m][n] where the instruction's layout (`MfmaInstruction.lane_tables`) puts them;
2. multiply-accumulate: for each block, k in order, row i: D[i][:] = fma(A^T[k][i], B[k][:], D[i][:])
   (one rounding per step, ir/kernel_mfma.py's arithmetic), integers wrapping;
3. scatter: every lane's D values go back from the tile into its result Vars or its private
   accumulator slice.
In every layout the 64 lanes split into runs of m (A) or n (B, C, D) consecutive lanes that hold
one element each of consecutive rows of A or columns of B and D: `runs` turns the layout tables
into (element, first lane, first tile index) triples, so each gather and scatter is a loop over a
run of lanes with contiguous tile indices, which LLVM vectorizes like a work-item loop (the
per-work-item values of consecutive lanes are consecutive in memory too).

A run of consecutive MFMAs (a GEMM's unrolled k steps over its wave tile) takes a faster path
when every accumulator is a private-array slice (two slices the same or disjoint) and every A and
B value a variable kept per work-item, or one that host.py's StoragePlan reloads from LDS (an
f32/f64 fragment loaded from LDS with no barrier before the MFMA: `lds_reads` below). The
micro-kernel then reads each A value where the kernel loaded it, and each run of n lanes' B values
as one vector from where the first lane loaded its value: B is read from LDS only when its index
provably gives the lanes of every run consecutive elements (`b_runs_consecutive`), as a GEMM's
K-major LDS tile does; otherwise it is copied per work-item.
The D values of one register element and one run of n lanes are one row D[i][0:n], contiguous in
the private array (element-major), cut into segments D[i][j:j + w] (`micro_tile`: w = n, or two
vector registers on 16-register hosts). For each accumulator, groups of segments of one column
range are loaded as vectors, every MFMA of the run on that accumulator is applied in order
(D[i][j:j + w] += A[i][k] * B[k][j:j + w], k in order, the same fma as above), and they are stored
once: a register-blocked GEMM micro-kernel, the accumulator leaving registers once per run instead
of once per instruction. The segments of a group share each B vector load. Groups read the same B
(and A) values, which LLVM would load once for all of them and keep, spilled, across groups, its
scheduler then running each accumulator's FMA chain on its own: on 16-register hosts a compiler
barrier (`fence`) after each group keeps them apart.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import llvmlite.ir as ir
import numpy as np

from ..ir.kernel import Binary, Cast, Const, Expr, Load, Special, Var
from ..ir.kernel_mfma import Mfma, MfmaInstruction, PrivateSlice
from ..ir.kernel_verifier import sub_expressions
from ..ir.types import NUMPY_DTYPES
from .host import HostKernelBuilder, register_wave_op, vector_bits
from .llvm_kernel import F32, F64, I32, I64, REGISTER_TYPES
from .mathlib import call_intrinsic

ACCUMULATION_TYPES = {"f32": F32, "f64": F64, "i32": I32}


@dataclass(frozen=True)
class MicroTile:
    """The register block of one micro-kernel step (lower_mfma_micro_kernel)."""
    width: int          # accumulator values per D row segment (a whole row: the instruction's n)
    rows: int           # row segments per group, kept in registers together
    fenced: bool        # whether a compiler barrier closes each group (`fence`)


@lru_cache(maxsize=None)
def micro_tile(n: int, value_bytes: int) -> MicroTile:
    """The micro-kernel's block for D rows of n accumulator values of `value_bytes` bytes each.
    AVX-512 (32 registers of 64 bytes): whole rows, 1024 bytes in all (half the register file,
    the rest for the A and B operands), not fenced.
    16-register hosts (AVX2: 32 bytes each): segments of two registers, six of them at a time: 12
    accumulator registers, 2 for a B row's two vectors and 1 for the A broadcast (BLIS's 6x16
    block on Haswell), with 12 independent FMA chains to hide the FMA latency; fenced, as LLVM
    otherwise merges the loads of different groups (module docstring). On a loaded AVX2 host a
    1024^3 f32 GEMM took 48.5 ms with whole rows two at a time unfenced, 47 ms fenced and 43.5 ms
    in fenced groups of six two-register segments (medians of three interleaved runs); idle, it
    had taken 33 ms with whole rows two at a time (64 values), 60 with 256, 51 with 128, 38 with 32."""
    if vector_bits() == 512:
        return MicroTile(n, max(1, 1024 // (n * value_bytes)), fenced=False)
    vector = vector_bits() // 8 // value_bytes
    width = min(n, 2 * vector)
    return MicroTile(width, max(1, 12 * vector // width), fenced=True)


def groups(segments: list, size: int) -> list[list]:
    """`segments` in consecutive groups of at most `size`, as even as can be (32 in groups of at
    most 6: 5, 5, 6, 5, 5, 6, not five of 6 and one of 2)."""
    count = -(-len(segments) // size)
    bounds = [len(segments) * i // count for i in range(count + 1)]
    return [segments[start:end] for start, end in zip(bounds, bounds[1:])]


def tile_tables(inst: MfmaInstruction) -> dict[str, np.ndarray]:
    """The layout tables as flat indices into the host tiles: A transposed to [blocks][k][m], so
    that, as in B and D, consecutive lanes of a run hold consecutive tile elements."""
    tables = dict(inst.lane_tables)
    block, i, k = np.unravel_index(tables["a"], (inst.blocks, inst.m, inst.k))
    tables["a"] = np.ravel_multi_index((block, k, i), (inst.blocks, inst.k, inst.m))
    return tables


def runs(table: np.ndarray, width: int) -> list[tuple[int, int, int]]:
    """(element, first lane, first tile index) of each run of `width` lanes whose tile indices are
    consecutive; the runs cover the table."""
    result = []
    for element in range(table.shape[1]):
        for first in range(0, table.shape[0], width):
            start = int(table[first, element])
            assert (table[first:first + width, element] == start + np.arange(width)).all(), "MFMA layout is not in runs"
            result.append((element, first, start))
    return result


class Poison(ir.FormattedConstant):
    """An undefined value printed as one word: llvmlite prints an undefined vector element by
    element, in each of a micro-kernel's hundreds of splats (text that LLVM then parses)."""

    def __init__(self, type_):
        self.type, self.constant = type_, "poison"   # Constant.__init__ would make a vector a list


def multiply_add(kb: HostKernelBuilder, x, y, accumulator):
    """accumulator + x * y: one fused multiply-add for floats (llvm.fma, scalar or vector), a
    wrapping multiply and add for integers."""
    element = accumulator.type.element if isinstance(accumulator.type, ir.VectorType) else accumulator.type
    if isinstance(element, ir.IntType):
        return kb.b.add(accumulator, kb.b.mul(x, y))
    return call_intrinsic(kb.b, "fma", (x, y, accumulator), [accumulator.type])


def lower_mfma(kb: HostKernelBuilder, op: Mfma):
    inst = op.spec
    b = kb.b
    value_type = ACCUMULATION_TYPES[inst.out_dtype]
    m, n, k, blocks = inst.m, inst.n, inst.k, inst.blocks
    tiles = {"a": kb.entry_alloca(value_type, blocks * k * m, name="mfma.a"),
             "b": kb.entry_alloca(value_type, blocks * k * n, name="mfma.b"),
             "d": kb.entry_alloca(value_type, blocks * m * n, name="mfma.d")}
    operands = {"a": op.a, "b": op.b, "d": op.accumulator}
    run_widths = {"a": m, "b": n, "d": n}
    tables = tile_tables(inst)
    constant = lambda value: ir.Constant(I64, value)

    def tile_element(matrix, index):
        return b.gep(tiles[matrix], [index], source_etype=value_type)

    def lane_run(wave, first, width, body):
        """body(offset) for the lanes first .. first+width-1 of the wave, each lane's work-item set."""
        def at(offset):
            kb.set_item(b.add(b.mul(wave, constant(kb.wave_size)), b.add(constant(first), offset)))
            body(offset)
        kb.counted_loop(constant(0), constant(width), constant(1), at, name="mfma.lanes")
        kb.set_item(None)

    def gather(wave):
        for matrix, values in operands.items():
            for element, first, start in runs(tables[matrix], run_widths[matrix]):
                def store(offset, expr=values[element], start=start):
                    value = kb.expr(expr)
                    if expr.dtype == "i8":
                        value = b.sext(value, I32)
                    b.store(value, tile_element(matrix, b.add(constant(start), offset)))
                lane_run(wave, first, run_widths[matrix], store)

    def multiply_accumulate():
        # k outermost: each D element still sums its products in k order, and the contiguous j
        # loop vectorizes well for every instruction shape (rows innermost-but-one measured best).
        def block(blk):
            def step(kk):
                ab_row = b.add(b.mul(blk, constant(k)), kk)

                def row(i):
                    a = b.load(tile_element("a", b.add(b.mul(ab_row, constant(m)), i)), typ=value_type)
                    d_row = b.mul(b.add(b.mul(blk, constant(m)), i), constant(n))

                    def column(j):
                        d = tile_element("d", b.add(d_row, j))
                        x = b.load(tile_element("b", b.add(b.mul(ab_row, constant(n)), j)), typ=value_type)
                        old = b.load(d, typ=value_type)
                        b.store(multiply_add(kb, a, x, old), d)
                    kb.counted_loop(constant(0), constant(n), constant(1), column, name="mfma.j")
                kb.counted_loop(constant(0), constant(m), constant(1), row, name="mfma.i")
            kb.counted_loop(constant(0), constant(k), constant(1), step, name="mfma.k")
        kb.counted_loop(constant(0), constant(blocks), constant(1), block, name="mfma.block")

    def scatter(wave):
        for element, first, start in runs(tables["d"], n):
            def load(offset, element=element, start=start):
                value = b.load(tile_element("d", b.add(constant(start), offset)), typ=value_type)
                kb.write_result_element(op.dest, element, value, inst.out_dtype)
            lane_run(wave, first, n, load)

    def wave(w):
        gather(w)
        multiply_accumulate()
        scatter(w)

    kb.for_each_wave(wave)


def terms(index: Expr) -> list[Expr]:
    """The terms of a sum (the index itself when it is not one)."""
    if isinstance(index, Binary) and index.op == "add":
        return terms(index.a) + terms(index.b)
    return [index]


def item_value(expr: Expr, ids: tuple[int, int, int], workgroup_size) -> int | None:
    """An integer expression of work-item ids and constants at work-item `ids`; None when it reads
    anything else (a variable, a parameter, a workgroup id, a load) or an operation not modelled."""
    if isinstance(expr, Const) and isinstance(expr.value, int):
        return expr.value
    if isinstance(expr, Special):
        return {"workitem_id": ids, "workgroup_size": workgroup_size}.get(expr.kind, (None,) * 3)[expr.dim]
    if isinstance(expr, Cast) and expr.dtype.startswith("i"):
        return item_value(expr.x, ids, workgroup_size)
    if not isinstance(expr, Binary) or expr.op not in ("add", "sub", "mul", "div", "rem"):
        return None
    a, b = item_value(expr.a, ids, workgroup_size), item_value(expr.b, ids, workgroup_size)
    if a is None or b is None:
        return None
    if expr.op in ("div", "rem"):
        if b == 0:
            return None
        quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)   # C's: rounded toward zero
        return quotient if expr.op == "div" else a - b * quotient
    return a + b if expr.op == "add" else a - b if expr.op == "sub" else a * b


def reads_ids(expr: Expr) -> bool:
    return (isinstance(expr, Special) and expr.kind == "workitem_id") or any(map(reads_ids, sub_expressions(expr)))


@lru_cache(maxsize=4096)
def b_runs_consecutive(inst: MfmaInstruction, index: Expr, workgroup_size: tuple[int, int, int]) -> bool:
    """Whether an LDS index, as the B value of `inst`, gives the n lanes of each of its B runs
    (lanes b_lane .. b_lane + n - 1 for each k, in every wave) consecutive elements: its terms that
    read work-item ids read nothing else but constants, and their sum goes up by one from lane to
    lane. The other terms are the same in every lane: an LDS operand's index reads no per-work-item
    variable (StoragePlan.lds_operand_loads)."""
    varying = [term for term in terms(index) if reads_ids(term)]
    x_size, y_size, z_size = workgroup_size
    for wave in range(x_size * y_size * z_size // inst.wave_size):
        for kk in range(inst.k):
            first = wave * inst.wave_size + inst.b_layout(0, kk, 0)[0]
            offsets = []
            for item in range(first, first + inst.n):
                ids = (item % x_size, item // x_size % y_size, item // (x_size * y_size))
                values = [item_value(term, ids, workgroup_size) for term in varying]
                if None in values:
                    return False
                offsets.append(sum(values))
            if offsets != list(range(offsets[0], offsets[0] + inst.n)):
                return False
    return True


def lds_reads(op: Mfma, key, load: Load, workgroup_size) -> int:
    """How many of the MFMA's operand reads of variable `key`, set to the LDS element `load`, its
    lowering takes from LDS: A values (broadcast one at a time) and B values (a run of lanes at once,
    when consecutive) of f32 and f64, whose registers hold what LDS holds (a converted value is
    better converted once)."""
    if op.spec.in_dtype not in ("f32", "f64"):
        return 0
    reads = sum((v.name, v.dtype) == key for v in op.a)
    b_reads = sum((v.name, v.dtype) == key for v in op.b)
    if b_reads and b_runs_consecutive(op.spec, load.index, workgroup_size):
        reads += b_reads
    return reads


def fast_path_applies(kb: HostKernelBuilder, ops: list[Mfma]) -> bool:
    """Whether a run of MFMAs can take the micro-kernel path (module docstring)."""
    first = ops[0]
    if first.spec.blocks != 1 or any(op.instruction != first.instruction for op in ops):
        return False
    slices = {}
    for op in ops:
        if not isinstance(op.c, PrivateSlice) or op.c.array.name not in kb.plan.per_item:
            return False
        if not all(isinstance(v, Var) and ((v.name, v.dtype) in kb.plan.per_item or (v.name, v.dtype) in kb.plan.reloaded)
                   for v in (*op.a, *op.b)):
            return False
        slices.setdefault((op.c.array.name, op.c.start), op.c)
    spans = sorted((s.array.name, s.start, s.start + s.count) for s in slices.values())
    return all(a[0] != b[0] or a[2] <= b[1] for a, b in zip(spans, spans[1:]))


def fence(kb: HostKernelBuilder, pointers: list):
    """A compiler barrier: an empty asm statement that may read and write the memory of `pointers`
    (their allocas: the accumulators, LDS), so LLVM neither reuses a load of that memory from before
    it nor moves a load or store of it across."""
    asm_type = ir.FunctionType(ir.VoidType(), [pointer.type for pointer in pointers])
    constraints = ",".join(["r"] * len(pointers) + ["~{memory}"])
    kb.b.call(ir.InlineAsm(asm_type, "", constraints, side_effect=True), pointers)


def lower_mfma_micro_kernel(kb: HostKernelBuilder, ops: list[Mfma]):
    """The run of MFMAs `ops` (fast_path_applies) as one micro-kernel per wave (module docstring)."""
    inst = ops[0].spec
    b = kb.b
    n, k = inst.n, inst.k
    value_type = ACCUMULATION_TYPES[inst.out_dtype]
    tile = micro_tile(n, NUMPY_DTYPES[inst.out_dtype].itemsize)
    width = tile.width
    segment_type = ir.VectorType(value_type, width)
    constant = lambda value: ir.Constant(I64, value)
    # The D segments: (register element, first lane, row i, first column j); in groups of one
    # column range, which share its B row vectors. Every group is generated on its own (no loop
    # over them): lanes and rows are constants, so LLVM folds the A operands' addresses (in LDS,
    # or in per-work-item arrays) to fixed offsets.
    rows = [(element, first, start // n) for element, first, start in runs(tile_tables(inst)["d"], n)]
    column_groups = [groups([(element, first + column, row, column) for element, first, row in rows], tile.rows)
                     for column in range(0, n, width)]
    by_slice: dict = {}
    for op in ops:
        by_slice.setdefault((op.c.array.name, op.c.start), []).append(op)

    def lane_item(wave, lane):
        """The work-item of a lane of a wave."""
        return b.add(b.mul(wave, constant(kb.wave_size)), lane)

    def lanes_pointer(var: Var, wave, lane):
        base, _ = kb.slot((var.name, var.dtype), var.dtype)
        return b.gep(base, [lane_item(wave, lane)], source_etype=REGISTER_TYPES[var.dtype])

    def lanes_vector(var: Var, wave, lane):
        """The values of `var` in lanes lane .. lane + width - 1 of the wave, as one vector: from its
        per-work-item array, or from LDS where the first of them loaded it (b_runs_consecutive)."""
        reloaded = kb.plan.reloaded.get((var.name, var.dtype))
        if reloaded is None:
            pointer = lanes_pointer(var, wave, constant(lane))
        else:
            kb.set_lane_item(wave, lane)
            pointer = kb.element_pointer(reloaded.buffer, reloaded.index)
            kb.set_item(None)
        vector_type = ir.VectorType(REGISTER_TYPES[var.dtype], width)
        return b.load(b.bitcast(pointer, vector_type.as_pointer()), typ=vector_type, align=1)

    def lane_value(var: Var, wave, lane):
        """A lane's value of `var`: from its per-work-item array, or reloaded from LDS."""
        if (var.name, var.dtype) in kb.plan.reloaded:
            kb.set_lane_item(wave, lane)
            value = kb.read_var(var)
            kb.set_item(None)
            return value
        return b.load(lanes_pointer(var, wave, constant(lane)), typ=REGISTER_TYPES[var.dtype])

    def widen(value, dtype):
        if dtype != "i8":
            return value
        return b.sext(value, ir.VectorType(I32, width) if isinstance(value.type, ir.VectorType) else I32)

    poison = Poison(segment_type)
    broadcast = ir.Constant(ir.VectorType(I32, width), [0] * width)

    def splat(value):
        return b.shuffle_vector(b.insert_element(poison, value, ir.Constant(I32, 0)), poison, broadcast)

    def wave(w):
        for accumulator_ops in by_slice.values():
            accumulator = accumulator_ops[0].c
            acc_base, _ = kb.slot(accumulator.array.name, accumulator.array.dtype, accumulator.array.count)

            def segment_pointer(element, lane):
                first = (element + accumulator.start) * kb.items + lane
                flat = b.add(b.mul(w, constant(kb.wave_size)), constant(first))
                pointer = b.gep(acc_base, [flat], source_etype=value_type)
                return b.bitcast(pointer, segment_type.as_pointer())

            def segments_at(chosen):
                pointers = [segment_pointer(element, lane) for element, lane, _, _ in chosen]
                column = chosen[0][3]
                sums = [b.load(p, typ=segment_type, align=4, name="mfma.segment") for p in pointers]
                for op in accumulator_ops:
                    for kk in range(k):
                        b_lane, b_element = inst.b_layout(0, kk, 0)  # lane of B[kk][0]; column j adds j
                        row_of_b = widen(lanes_vector(op.b[b_element], w, b_lane + column), inst.in_dtype)
                        a_lane, a_element = inst.a_layout(0, 0, kk)  # lane of A[0][kk]; row i adds i
                        for s, (_, _, row, _) in enumerate(chosen):
                            a = lane_value(op.a[a_element], w, row + a_lane)
                            sums[s] = multiply_add(kb, splat(widen(a, inst.in_dtype)), row_of_b, sums[s])
                for pointer, total in zip(pointers, sums):
                    b.store(total, pointer, align=4)
                if tile.fenced:
                    fence(kb, [acc_base, *kb.lds_pointers.values()])

            with kb.memoized_expressions():
                for column_group in column_groups:
                    for chosen in column_group:
                        segments_at(chosen)

    kb.for_each_wave(wave)


def lower_mfmas(kb: HostKernelBuilder, ops: list[Mfma]):
    if len(ops) > 1 and fast_path_applies(kb, ops):
        lower_mfma_micro_kernel(kb, ops)
    else:
        for op in ops:
            lower_mfma(kb, op)


register_wave_op(Mfma, lower_mfmas, lds_reads=lds_reads)
