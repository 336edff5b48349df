"""AMDGPU lowering of the MFMA wave op (ir/kernel_mfma.py): one call of the instruction's LLVM
intrinsic per work-item, with cbsz = abid = blgp = 0, so the hardware's lane layout is the one the
kernel IR (and the host lowering) assumes.

Operands: f32 and f64 fragments of one element go as the scalar; f16 as <E x half>, bf16 as
<E x i16> (their 16 bits; gfx950's double-K bf16 intrinsics take the same bits as <E x bfloat>), i8 as <E x i8> bitcast to an integer of 8E bits; C as <E_D x float|i32|
double>. Element e is vector element e, which the backend places in the low bits first, as the
registers hold them.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ..ir.kernel_mfma import Mfma
from ..ir.targets import Target
from .amdgpu import AmdgpuKernelBuilder, register_wave_op
from .llvm_kernel import I8, I16, I32, REGISTER_TYPES

FRAGMENT_ELEMENT_TYPES = {"f16": ir.HalfType(), "bf16": I16, "i8": I8}


class BFloatType(ir.Type):
    """LLVM's `bfloat`, which llvmlite's IR builder does not name: only a bitcast target here."""

    def _to_string(self):
        return "bfloat"


BFLOAT = BFloatType()   # one instance: llvmlite compares types of this kind by identity

# The intrinsics whose bf16 operands are <E x bfloat> (the older `.1k` ones take <E x i16>).
BFLOAT_OPERANDS = ("llvm.amdgcn.mfma.f32.32x32x16.bf16", "llvm.amdgcn.mfma.f32.16x16x32.bf16")


def fragment(kb: AmdgpuKernelBuilder, dtype: str, values, intrinsic: str):
    """A lane's A or B values as the intrinsic's operand."""
    b = kb.b
    if dtype in ("f32", "f64"):
        (value,) = values  # the supported f32/f64 instructions take one element per lane
        return value
    if dtype == "f16":
        values = [b.fptrunc(v, ir.HalfType()) for v in values]  # exact: the registers hold f16 values
    elif dtype == "bf16":
        values = [kb.to_memory("bf16", v) for v in values]
    packed = vector(kb, FRAGMENT_ELEMENT_TYPES[dtype], values)
    if dtype == "i8":
        return b.bitcast(packed, ir.IntType(8 * len(values)))
    if intrinsic in BFLOAT_OPERANDS:
        return b.bitcast(packed, ir.VectorType(BFLOAT, len(values)))
    return packed


def vector(kb: AmdgpuKernelBuilder, element_type, values):
    result = ir.Constant(ir.VectorType(element_type, len(values)), ir.Undefined)
    for index, value in enumerate(values):
        result = kb.b.insert_element(result, value, ir.Constant(I32, index))
    return result


def target_name(kb: AmdgpuKernelBuilder) -> str | None:
    """The builder's target, when codegen/amdgpu.py records it as `target` (a Target or a name)."""
    target = getattr(kb, "target", None)
    return target.name if isinstance(target, Target) else target


def lower_mfma(kb: AmdgpuKernelBuilder, op: Mfma):
    inst = op.spec
    target = target_name(kb)
    if target is not None and target not in inst.targets:
        # LLVM would abort the process ("Cannot select") on an intrinsic the target lacks.
        raise NotImplementedError(f"{inst.name} does not exist on {target}; it runs on {', '.join(inst.targets)}")
    b = kb.b
    a = fragment(kb, inst.in_dtype, [kb.expr(e) for e in op.a], inst.intrinsic)
    b_operand = fragment(kb, inst.in_dtype, [kb.expr(e) for e in op.b], inst.intrinsic)
    c = vector(kb, REGISTER_TYPES[inst.out_dtype], [kb.expr(e) for e in op.accumulator])
    zero = ir.Constant(I32, 0)
    d = kb.intrinsic(inst.intrinsic, c.type, [a, b_operand, c, zero, zero, zero])
    for element in range(inst.d_elements):
        value = b.extract_element(d, ir.Constant(I32, element))
        kb.write_result_element(op.dest, element, value, inst.out_dtype)


register_wave_op(Mfma, lower_mfma)
