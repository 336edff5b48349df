"""Conversions to f16 and bf16 that round once, in plain integer and f32/f64 instructions.

f16/bf16 values live in f32 registers (codegen/host.py), so a conversion to them goes through f32,
which rounds twice where the source has more bits than f32: f64 (f64 -> f32 -> f16 turns
1 + 2^-11 + 2^-40 into 1, not 1 + 2^-10) and, for bf16, integers wider than 24 bits. LLVM also
folds f64 -> f32 -> f16 into one f64 -> half truncation, which x86 lowers to compiler-rt's
__truncdfhf2, a symbol the JIT does not link. So:

- f64 -> f16/bf16 rounds the f64 bits at the target's last place, to nearest even, with integer
  adds and shifts (normal results), |x| in units of the target's smallest subnormal through
  roundeven (subnormal results), and compares of the bits for overflow and NaN;
- integer -> bf16 first keeps the integer's 24 leading bits and folds the bits below them into the
  lowest kept bit (a sticky bit: a tie stays a tie only when every lost bit was 0), which f32
  holds exactly; rounding that to bf16 then rounds once.
"""
from __future__ import annotations

import llvmlite.ir as ir

from .mathlib import call_intrinsic

I16, I32, I64 = ir.IntType(16), ir.IntType(32), ir.IntType(64)
F32, F64 = ir.FloatType(), ir.DoubleType()
# (stored mantissa bits, exponent bias) of the 16-bit float formats.
FORMATS = {"f16": (10, 15), "bf16": (7, 127)}
F64_MANTISSA, F64_BIAS = 52, 1023
F32_KEPT_BITS = 24


def f64_to_narrow_bits(b: ir.IRBuilder, x, dtype: str):
    """The 16 bits of the f16 or bf16 nearest to the f64 `x` (ties to even; NaN -> a quiet NaN of
    x's sign, overflow -> inf)."""
    mantissa, bias = FORMATS[dtype]
    shift = F64_MANTISSA - mantissa
    c64 = lambda v: ir.Constant(I64, v)
    bits = b.bitcast(x, I64)
    magnitude = b.and_(bits, c64(2 ** 63 - 1))
    # Normal results: round the bits at the target's last place, then rebias the exponent field
    # (a carry out of the mantissa lands in the exponent, as it should).
    odd = b.and_(b.lshr(magnitude, c64(shift)), c64(1))
    rounded = b.lshr(b.add(magnitude, b.add(c64((1 << (shift - 1)) - 1), odd)), c64(shift))
    normal = b.sub(rounded, c64((F64_BIAS - bias) << mantissa))
    # Subnormal results: |x| in units of the smallest subnormal, exact below the smallest normal
    # (the clamp keeps the conversion of lanes that take the other results defined).
    smallest_normal = 2.0 ** (1 - bias)
    clamped = b.bitcast(b.select(b.icmp_unsigned("<", magnitude, b.bitcast(ir.Constant(F64, smallest_normal), I64)),
                                 magnitude, b.bitcast(ir.Constant(F64, smallest_normal), I64)), F64)
    units = call_intrinsic(b, "roundeven", [b.fmul(clamped, ir.Constant(F64, 2.0 ** (bias - 1 + mantissa)))], [F64])
    subnormal = b.zext(b.fptosi(units, I32), I64)
    infinity = ((1 << (16 - 1 - mantissa)) - 1) << mantissa
    # |x| at or above the halfway point between the largest finite value and 2^(bias+1) overflows.
    overflow = ((bias + F64_BIAS) << F64_MANTISSA) | (((1 << mantissa) - 1) << shift) | (1 << (shift - 1))
    is_normal = b.icmp_unsigned(">=", magnitude, c64((F64_BIAS - bias + 1) << F64_MANTISSA))
    finite = b.select(is_normal, normal, subnormal)
    is_nan = b.icmp_unsigned(">", magnitude, c64(0x7FF << F64_MANTISSA))
    special = b.select(is_nan, c64(infinity | (1 << (mantissa - 1))), c64(infinity))
    result = b.select(b.icmp_unsigned(">=", magnitude, c64(overflow)), special, finite)
    sign = b.and_(b.lshr(bits, c64(48)), c64(0x8000))
    return b.trunc(b.or_(result, sign), I16)


def int_to_sticky_f32(b: ir.IRBuilder, x, signed: bool):
    """An f32 whose rounding to bf16 is the integer `x`'s: x itself where it has at most 24
    significant bits, else its 24 leading bits with the lowest one or-ed with every bit below."""
    width = x.type.width
    c = lambda v: ir.Constant(x.type, v)
    negative = b.icmp_signed("<", x, c(0)) if signed else None
    magnitude = b.select(negative, b.neg(x), x) if signed else x      # the minimum's wraps to 2^(width-1), right unsigned
    used = b.sub(c(width), call_intrinsic(b, "ctlz", [magnitude, ir.Constant(ir.IntType(1), 0)], [x.type]))
    dropped = b.select(b.icmp_unsigned(">", used, c(F32_KEPT_BITS)), b.sub(used, c(F32_KEPT_BITS)), c(0))
    lost = b.and_(magnitude, b.sub(b.shl(c(1), dropped), c(1)))
    kept = b.or_(b.lshr(magnitude, dropped), b.zext(b.icmp_unsigned("!=", lost, c(0)), x.type))
    value = b.sitofp(b.trunc(kept, I32) if width > 32 else kept, F32)    # below 2^24: exact
    scale = b.bitcast(b.shl(b.add(b.trunc(dropped, I32) if width > 32 else dropped, ir.Constant(I32, 127)),
                            ir.Constant(I32, 23)), F32)                   # 2^dropped
    value = b.fmul(value, scale)                                           # exact
    return b.select(negative, b.fneg(value), value) if signed else value
