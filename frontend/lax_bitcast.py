"""cdnajit.lax functions on bit patterns, built on the `bitcast_convert` op: bitcast_convert_type, and
nextafter and reduce_precision, which step and round floats as integers (XLA's NextAfter and
ReducePrecision, so NaN, signed zeros and infinities come out as in JAX).
"""
from __future__ import annotations

from ..errors import TracingTypeError, TracingValueError
from ..ir.types import COMPLEXES, FLOATS, NUMPY_DTYPES
from .cnp.base import convert, to_dtype_name
from .lax_elementwise import (add, bitwise_and, bitwise_or, eq, gt, le, ne, select, shift_right_logical,
                              static_int, strict_operands, sub)
from .lax_shape import full
from .tracing import Tracer, as_tracer, bind1, constant, located

__all__ = ["bitcast_convert_type", "nextafter", "reduce_precision"]

# (exponent bits, mantissa bits) of each float dtype: IEEE 754 binary16/32/64 and bfloat16.
FLOAT_FORMATS = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52)}


def bit_width(dtype: str) -> int:
    return NUMPY_DTYPES[dtype].itemsize * 8


def bits_dtype(dtype: str) -> str:
    """The unsigned integer dtype of dtype's width: its bit pattern's type."""
    return f"u{bit_width(dtype)}"


def bitcast_convert_type(operand, new_dtype):
    """jax.lax.bitcast_convert_type: operand's bits as new_dtype (strongly typed). Equal widths keep the
    shape; a wider operand gains a trailing dimension of the width ratio (its little-endian pieces), a
    narrower one loses its trailing dimension, which must be that ratio."""
    x = as_tracer(operand)
    source, target = x.type.dtype, to_dtype_name(new_dtype)
    if source == target:
        return convert(x, target)
    if {source, target} & {"bool", *COMPLEXES}:
        raise TracingTypeError(located(f"lax.bitcast_convert_type does not take bool or complex values unless "
                                       f"both dtypes are equal, got {source} to {target}"))
    ratio = bit_width(target) // bit_width(source)
    if ratio > 1 and (x.ndim == 0 or x.shape[-1] != ratio):
        raise TracingValueError(located(
            f"lax.bitcast_convert_type of {x.type} to the wider {target} needs a last dimension of {ratio}"))
    return bind1("bitcast_convert", [x], {"dtype": target})


def float_operand(name: str, x: Tracer):
    if x.type.dtype not in FLOATS:
        raise TracingTypeError(located(f"lax.{name} takes floating-point operands, got {x.type}"))


def nextafter(x1, x2):
    """jax.lax.nextafter: the float after x1 in the direction of x2; x2 where they are equal (so
    nextafter(0.0, -0.0) = -0.0), the smallest subnormal of x2's sign from a zero, NaN if either is."""
    (x, y), weak = strict_operands("nextafter", x1, x2)
    float_operand("nextafter", x)
    dtype, bits = x.type.dtype, bits_dtype(x.type.dtype)
    xi, yi = bitcast_convert_type(x, bits), bitcast_convert_type(y, bits)
    sign_mask = constant(1 << (bit_width(dtype) - 1), bits)
    magnitude_mask = constant((1 << (bit_width(dtype) - 1)) - 1, bits)
    one, zero = constant(1, bits), constant(0, bits)
    x_magnitude, y_magnitude = bitwise_and(xi, magnitude_mask), bitwise_and(yi, magnitude_mask)
    # Sign and magnitude: the next float away from zero is the bit pattern plus one, towards zero minus one.
    toward_zero = bitwise_or(ne(bitwise_and(xi, sign_mask), bitwise_and(yi, sign_mask)), gt(x_magnitude, y_magnitude))
    stepped = select(toward_zero, sub(xi, one), add(xi, one))
    from_zero = bitwise_or(bitwise_and(yi, sign_mask), one)
    result = bitcast_convert_type(select(eq(x_magnitude, zero), from_zero, stepped), dtype)
    result = select(eq(x, y), y, result)
    either_nan = bitwise_or(ne(x, x), ne(y, y))
    return convert(select(either_nan, full(x.shape, float("nan"), dtype), result), dtype, weak)


def reduce_precision(operand, exponent_bits, mantissa_bits):
    """jax.lax.reduce_precision: operand rounded to a float format of exponent_bits and mantissa_bits, kept
    in its dtype: the mantissa rounds to nearest even, a too large exponent gives inf, a too small one
    signed zero (the format has no subnormals), NaN stays itself."""
    x = as_tracer(operand)
    float_operand("reduce_precision", x)
    exponent_bits = static_int(exponent_bits, "reduce_precision exponent_bits")
    mantissa_bits = static_int(mantissa_bits, "reduce_precision mantissa_bits")
    if exponent_bits < 1 or mantissa_bits < 0:
        raise TracingValueError(located(f"lax.reduce_precision needs exponent_bits >= 1 and mantissa_bits >= 0, "
                                        f"got {exponent_bits} and {mantissa_bits}"))
    dtype, bits = x.type.dtype, bits_dtype(x.type.dtype)
    source_exponent, source_mantissa = FLOAT_FORMATS[dtype]

    def const(value):
        return constant(value, bits)
    xi = bitcast_convert_type(x, bits)
    if mantissa_bits < source_mantissa:
        dropped = source_mantissa - mantissa_bits
        # Adding half an ulp of the new format less one, plus the last kept bit, rounds half to even;
        # a carry out of the mantissa correctly bumps the exponent.
        last_kept = bitwise_and(shift_right_logical(xi, const(dropped)), const(1))
        rounded = add(xi, add(const((1 << (dropped - 1)) - 1), last_kept))
        xi = bitwise_and(rounded, const(((1 << bit_width(dtype)) - 1) ^ ((1 << dropped) - 1)))
    if exponent_bits < source_exponent:
        exponent_mask = ((1 << source_exponent) - 1) << source_mantissa
        bias, reduced_bias = (1 << (source_exponent - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        exponent = bitwise_and(xi, const(exponent_mask))
        signed_zero = bitwise_and(xi, const(1 << (bit_width(dtype) - 1)))
        signed_inf = bitwise_or(signed_zero, const(exponent_mask))
        xi = select(le(exponent, const((bias - reduced_bias) << source_mantissa)), signed_zero, xi)
        xi = select(gt(exponent, const((bias + reduced_bias) << source_mantissa)), signed_inf, xi)
    result = bitcast_convert_type(xi, dtype)
    return convert(select(ne(x, x), x, result), dtype, x.weak_type)
