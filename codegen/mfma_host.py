"""Host lowering of the MFMA wave op (ir/kernel_mfma.py): the CPU runs each instruction with its
exact lane layout.

Per wave of the workgroup, with tiles in the accumulation type (f32 for f32/f16/bf16 inputs, f64,
i32 for i8: f16/bf16 registers already hold f32 values, i8 is sign-extended):
1. gather: every lane's A, B and C values go to the tiles A^T[blocks][k][m], B[blocks][k][n] and
   D[blocks][m][n] where the instruction's layout (`MfmaInstruction.lane_tables`) puts them;
2. multiply-accumulate: for each block, k in order, row i: D[i][:] += A^T[k][i] * B[k][:], one
   rounding per product and per sum (no contraction into fma), integers wrapping;
3. scatter: every lane's D values go back from the tile into its result Vars or its private
   accumulator slice.
In every layout the 64 lanes split into runs of m (A) or n (B, C, D) consecutive lanes that hold
one element each of consecutive rows of A or columns of B and D: `runs` turns the layout tables
into (element, first lane, first tile index) triples, so each gather and scatter is a loop over a
run of lanes with contiguous tile indices, which LLVM vectorizes like a work-item loop (the
per-work-item values of consecutive lanes are consecutive in memory too).
"""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from ..ir.kernel import WAVE_SIZE, Const
from ..ir.kernel_mfma import Mfma, MfmaInstruction, PrivateSlice
from .host import F32, F64, I32, I64, HostKernelBuilder, register_wave_op

ACCUMULATION_TYPES = {"f32": F32, "f64": F64, "i32": I32}


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
        for first in range(0, WAVE_SIZE, width):
            start = int(table[first, element])
            assert (table[first:first + width, element] == start + np.arange(width)).all(), "MFMA layout is not in runs"
            result.append((element, first, start))
    return result


def lower_mfma(kb: HostKernelBuilder, op: Mfma):
    inst = op.spec
    b = kb.b
    value_type = ACCUMULATION_TYPES[inst.out_dtype]
    is_float = inst.out_dtype != "i32"
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
            kb.set_item(b.add(b.mul(wave, constant(WAVE_SIZE)), b.add(constant(first), offset)))
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
                        b.store(b.fadd(old, b.fmul(a, x)) if is_float else b.add(old, b.mul(a, x)), d)
                    kb.counted_loop(constant(0), constant(n), constant(1), column, name="mfma.j")
                kb.counted_loop(constant(0), constant(m), constant(1), row, name="mfma.i")
            kb.counted_loop(constant(0), constant(k), constant(1), step, name="mfma.k")
        kb.counted_loop(constant(0), constant(blocks), constant(1), block, name="mfma.block")

    def scatter(wave):
        for element, first, start in runs(tables["d"], n):
            def load(offset, element=element, start=start):
                value = b.load(tile_element("d", b.add(constant(start), offset)), typ=value_type)
                if isinstance(op.dest, PrivateSlice):
                    index = Const(op.dest.start + element, "i32")
                    b.store(kb.to_memory(inst.out_dtype, value), kb.element_pointer(op.dest.array, index))
                else:
                    kb.write_var(op.dest[element], value)
            lane_run(wave, first, n, load)

    def wave(w):
        gather(w)
        multiply_accumulate()
        scatter(w)

    kb.for_each_wave(wave)


register_wave_op(Mfma, lower_mfma)
