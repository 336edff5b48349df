"""cdnajit.lax integer bit functions built from shifts, masks and products: population_count, clz, mulhi.

Signed operands are read as their unsigned bit patterns (an integer convert of one width wraps, which
keeps the bits) and the result converted back.
"""
from __future__ import annotations

from ..errors import TracingTypeError
from ..ir.types import NUMPY_DTYPES, SIGNED_INTS
from .cnp.base import convert
from .lax_elementwise import (add, bitwise_and, bitwise_or, lt, mul, select, shift_right_logical, strict_operands,
                              sub)
from .lax_shape import full
from .tracing import Tracer, as_tracer, constant, located

__all__ = ["population_count", "clz", "mulhi"]


def integer_operand(name: str, x) -> Tracer:
    x = as_tracer(x)
    if x.type.dtype == "bool" or NUMPY_DTYPES[x.type.dtype].kind not in "iu":
        raise TracingTypeError(located(f"lax.{name} takes integer operands, got {x.type}"))
    return x


def unsigned_of(dtype: str) -> str:
    return "u" + dtype[1:] if dtype in SIGNED_INTS else dtype


def bits_of(dtype: str) -> int:
    return NUMPY_DTYPES[dtype].itemsize * 8


def repeated_byte(byte: int, dtype: str) -> Tracer:
    return constant(int.from_bytes(bytes([byte]) * (bits_of(dtype) // 8), "little"), dtype)


def population_count(x):
    """jax.lax.population_count: the number of set bits of each element, in its dtype (SWAR sums)."""
    x = integer_operand("population_count", x)
    dtype, unsigned = x.type.dtype, unsigned_of(x.type.dtype)
    return convert(count_bits(convert(x, unsigned)), dtype, x.weak_type)


def count_bits(u: Tracer) -> Tracer:
    """Set bits of unsigned u: pairs, nibbles, then bytes summed by a multiply into the top byte."""
    dtype = u.type.dtype

    def shifted(value, amount):
        return shift_right_logical(value, constant(amount, dtype))
    u = sub(u, bitwise_and(shifted(u, 1), repeated_byte(0x55, dtype)))
    u = add(bitwise_and(u, repeated_byte(0x33, dtype)), bitwise_and(shifted(u, 2), repeated_byte(0x33, dtype)))
    u = bitwise_and(add(u, shifted(u, 4)), repeated_byte(0x0F, dtype))
    bits = bits_of(dtype)
    return u if bits == 8 else shifted(mul(u, repeated_byte(0x01, dtype)), bits - 8)


def clz(x):
    """jax.lax.clz: the number of leading zero bits of each element (its width for 0), in its dtype."""
    x = integer_operand("clz", x)
    dtype, unsigned = x.type.dtype, unsigned_of(x.type.dtype)
    u = convert(x, unsigned)
    bits = bits_of(unsigned)
    shift = 1
    while shift < bits:  # smear the highest set bit into every lower one
        u = bitwise_or(u, shift_right_logical(u, constant(shift, unsigned)))
        shift *= 2
    return convert(sub(constant(bits, unsigned), count_bits(u)), dtype, x.weak_type)


def mulhi(x, y, /):
    """jax.lax.mulhi: the high half of the double-width product of x and y (signed or unsigned)."""
    (x, y), weak = strict_operands("mulhi", integer_operand("mulhi", x), integer_operand("mulhi", y))
    dtype = x.type.dtype
    bits = bits_of(dtype)
    if bits < 64:
        wide = ("i" if dtype in SIGNED_INTS else "u") + str(2 * bits)
        product = mul(convert(x, wide), convert(y, wide))
        return convert(shift_right_logical(product, constant(bits, wide)), dtype, weak)
    a, b = convert(x, "u64"), convert(y, "u64")
    high = unsigned_high_64(a, b)
    if dtype in SIGNED_INTS:
        # The signed high half: subtract b where a < 0 and a where b < 0 (mod 2^64).
        zero = full(x.shape, 0, "u64")
        high = sub(high, select(lt(x, constant(0, dtype)), b, zero))
        high = sub(high, select(lt(y, constant(0, dtype)), a, zero))
    return convert(high, dtype, weak)


def unsigned_high_64(a: Tracer, b: Tracer) -> Tracer:
    """The high 64 bits of the 128-bit product of u64 a and b, from 32-bit halves."""
    low_mask, thirty_two = constant(0xFFFFFFFF, "u64"), constant(32, "u64")

    def low(v):
        return bitwise_and(v, low_mask)

    def high(v):
        return shift_right_logical(v, thirty_two)
    a_low, a_high, b_low, b_high = low(a), high(a), low(b), high(b)
    low_high, high_low = mul(a_low, b_high), mul(a_high, b_low)
    middle = add(add(high(mul(a_low, b_low)), low(low_high)), low(high_low))
    return add(add(add(mul(a_high, b_high), high(low_high)), high(high_low)), high(middle))
