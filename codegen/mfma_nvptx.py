"""NVPTX lowering of the MFMA wave op (ir/kernel_mfma.py): CDNA's lane layout and the host's
arithmetic, emulated through the wave's scratch in shared memory (codegen/nvptx.py).

Per work-item, with tiles in the accumulation type (f32 for f32/f16/bf16 inputs, f64, i32 for i8:
f16/bf16 registers already hold f32 values, i8 is sign-extended), as codegen/mfma_host.py computes:
1. every lane writes its A and B values to the wave's tiles A[blocks][m][k] and B[blocks][k][n],
   where the instruction's layout puts them (`MfmaInstruction.lane_tables`, held as constant
   tables in global memory and read by lane);
2. after the wave's barrier, each lane computes its own D elements: for element e at D[b][i][j]
   (the lane's C element e sits at the same place), acc = C_e, then for k in order
   acc = fma(A[b][i][k], B[b][k][j], acc) (one rounding per step; integers wrap);
3. a second barrier keeps the tiles until every lane has read them; the lane's D values go to its
   result Vars or its private accumulator slice.
"""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from ..ir.kernel_mfma import Mfma
from .llvm_kernel import F32, F64, I32
from .mathlib import call_intrinsic
from .nvptx import GLOBAL, NvptxKernelBuilder, register_wave_op

ACCUMULATION_TYPES = {"f32": F32, "f64": F64, "i32": I32}


def lane_table(kb: NvptxKernelBuilder, inst, matrix: str):
    """The layout table of `matrix` ("a", "b" or "d") as a constant global [elements][64] of i32."""
    name = f"mfma.{inst.name}.{matrix}"
    table = kb.module.globals.get(name)
    if table is None:
        values = np.ascontiguousarray(inst.lane_tables[matrix].T).ravel()
        array_type = ir.ArrayType(I32, values.size)
        table = ir.GlobalVariable(kb.module, array_type, name=name, addrspace=GLOBAL)
        table.initializer = ir.Constant(array_type, [int(v) for v in values])
        table.global_constant = True
        table.linkage = "internal"
    return table


def lower_mfma(kb: NvptxKernelBuilder, op: Mfma):
    inst = op.spec
    b = kb.b
    value_type = ACCUMULATION_TYPES[inst.out_dtype]
    element_bytes = 8 if value_type == F64 else 4
    i32 = lambda value: ir.Constant(I32, value)
    wave, lane = kb.wave_and_lane()
    tile_a_bytes = inst.blocks * inst.m * inst.k * element_bytes

    def table_entry(matrix, element):
        table = lane_table(kb, inst, matrix)
        pointer = b.gep(table, [b.add(i32(element * kb.wave_size), lane)], inbounds=True, source_etype=I32)
        return b.load(pointer, typ=I32)

    def tile_pointer(start, index):
        return kb.wave_scratch_pointer(wave, b.add(i32(start), b.mul(index, i32(element_bytes))))

    def widen(value):
        return b.sext(value, I32) if inst.in_dtype == "i8" else value

    for matrix, values, start in (("a", op.a, 0), ("b", op.b, tile_a_bytes)):
        for element, expr in enumerate(values):
            b.store(widen(kb.expr(expr)), tile_pointer(start, table_entry(matrix, element)))
    kb.wave_barrier(wave)

    accumulator = kb.entry_alloca(value_type, name="mfma.acc")
    results = []
    for element, c in enumerate(op.accumulator):
        flat = table_entry("d", element)
        block = b.udiv(flat, i32(inst.m * inst.n))
        row = b.urem(b.udiv(flat, i32(inst.n)), i32(inst.m))
        column = b.urem(flat, i32(inst.n))
        a_row = b.mul(b.add(b.mul(block, i32(inst.m)), row), i32(inst.k))        # A[block][row][0]
        b_column = b.add(b.mul(block, i32(inst.k * inst.n)), column)            # B[block][0][column]
        b.store(kb.expr(c), accumulator)

        def step(kk):
            x = b.load(tile_pointer(0, b.add(a_row, kk)), typ=value_type)
            y = b.load(tile_pointer(tile_a_bytes, b.add(b_column, b.mul(kk, i32(inst.n)))), typ=value_type)
            old = b.load(accumulator, typ=value_type)
            if value_type == I32:
                b.store(b.add(old, b.mul(x, y)), accumulator)
            else:
                b.store(call_intrinsic(b, "fma", (x, y, old), [value_type]), accumulator)
        kb.counted_loop(i32(0), i32(inst.k), i32(1), step, name="mfma.k")
        results.append(b.load(accumulator, typ=value_type))
    kb.wave_barrier(wave)

    for element, value in enumerate(results):
        kb.write_result_element(op.dest, element, value, inst.out_dtype)


register_wave_op(Mfma, lower_mfma)
