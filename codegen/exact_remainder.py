"""C's fmod, exactly, in integer and float instructions: for targets whose `frem` is not exact.

LLVM lowers `frem` for NVPTX as x - trunc(x / y) * y, which rounds (and gives -inf where fmod
gives NaN); the host calls libm's fmod, which is exact (the result is always representable). So
the NVPTX backend computes fmod itself, by long division of the significands:
|x| = mx * 2^qx and |y| = my * 2^qy with integer significands (the implicit bit included for
normals; subnormals have the smallest q), and where |x| >= |y| (so qx >= qy),
fmod(|x|, |y|) = 2^qy * ((mx * 2^(qx - qy)) mod my): start from r = mx mod my and, qx - qy times,
double r and subtract my once if r >= my (at most 277 steps for f32, 2098 for f64). r * 2^qy is
then exact in float arithmetic (the product is representable, and so is 2^qy, subnormal or not).
Special cases as C: NaN for a NaN operand, an infinite x or a zero y; x itself where |x| < |y|
(an infinite y included); the result takes x's sign (so fmod(-6, 3) is -0).
"""
from __future__ import annotations

import llvmlite.ir as ir

F32, F64 = ir.FloatType(), ir.DoubleType()
# float type -> (integer type of its bits, stored significand bits, exponent bias)
FORMATS = {str(F32): (ir.IntType(32), 23, 127), str(F64): (ir.IntType(64), 52, 1023)}


def fmod(b: ir.IRBuilder, x, y):
    """fmod(x, y) of two f32 or two f64 scalars (module docstring)."""
    bits, mantissa, bias = FORMATS[str(x.type)]
    width = bits.width
    c = lambda value: ir.Constant(bits, value)
    sign = c(-(1 << (width - 1)))
    ax, ay = (b.and_(b.bitcast(v, bits), c((1 << (width - 1)) - 1)) for v in (x, y))
    smallest_q = 1 - bias - mantissa

    def split(magnitude):
        """(integer significand, exponent) with magnitude = significand * 2^exponent."""
        field = b.lshr(magnitude, c(mantissa))
        fraction = b.and_(magnitude, c((1 << mantissa) - 1))
        normal = b.icmp_unsigned("!=", field, c(0))
        significand = b.select(normal, b.or_(fraction, c(1 << mantissa)), fraction)
        return significand, b.add(b.select(normal, field, c(1)), c(smallest_q - 1))

    mx, qx = split(ax)
    my, qy = split(ay)
    infinity = (1 << (width - 1)) - (1 << mantissa)                       # the bits of +inf
    nan = b.or_(b.or_(b.icmp_unsigned(">=", ax, c(infinity)), b.icmp_unsigned(">", ay, c(infinity))),
                b.icmp_unsigned("==", ay, c(0)))
    smaller = b.icmp_unsigned("<", ax, ay)                                 # |x| < |y|: x itself
    divide = b.not_(b.or_(nan, smaller))
    divisor = b.select(divide, my, c(1))                                   # no division by zero on other paths
    steps = b.select(divide, b.sub(qx, qy), c(0))

    before = b.block
    head = b.function.append_basic_block("fmod.head")
    body = b.function.append_basic_block("fmod.body")
    done = b.function.append_basic_block("fmod.done")
    first = b.urem(b.select(divide, mx, c(0)), divisor)
    b.branch(head)
    b.position_at_end(head)
    step = b.phi(bits, name="fmod.step")
    remainder = b.phi(bits, name="fmod.r")
    step.add_incoming(c(0), before)
    remainder.add_incoming(first, before)
    b.cbranch(b.icmp_signed("<", step, steps), body, done)
    b.position_at_end(body)
    doubled = b.shl(remainder, c(1))
    reduced = b.select(b.icmp_unsigned(">=", doubled, divisor), b.sub(doubled, divisor), doubled)
    step.add_incoming(b.add(step, c(1)), body)
    remainder.add_incoming(reduced, body)
    b.branch(head)
    b.position_at_end(done)

    # 2^qy: a normal float's bits where qy + bias + mantissa >= 1, else the subnormal 1 << (that - 1).
    biased = b.sub(qy, c(smallest_q - 1))
    scale_bits = b.select(b.icmp_signed(">", biased, c(mantissa)), b.shl(b.sub(biased, c(mantissa)), c(mantissa)),
                          b.shl(c(1), b.sub(biased, c(1))))
    magnitude = b.fmul(b.uitofp(remainder, x.type), b.bitcast(scale_bits, x.type))
    result = b.bitcast(b.or_(b.bitcast(magnitude, bits), b.and_(b.bitcast(x, bits), sign)), x.type)
    result = b.select(smaller, x, result)
    return b.select(nan, ir.Constant(x.type, float("nan")), result)
