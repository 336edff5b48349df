"""The algebraic simplification rules of canonicalize: a table of (pattern, rewrite) pairs.

A rewrite is called as `rewrite(b, **bindings)` and returns the value that replaces the matched
op's result (of the same type), or None to decline. `b` builds new ops (`b.op(name, *operands,
**attrs)`, `b.splat(scalar, type)`), which are simplified in turn. Float rules must hold for
every input, NaN, infinities and -0.0 included.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ..ir.opdef import compute_dtype
from ..ir.ops.reduce import reducer_identity
from ..ir.types import COMPLEX_PART, COMPLEXES, FLOATS, INTS, TensorType, dtype_name, numpy_dtype
from .opclasses import ELEMENTWISE
from .patterns import Pat

x, y, c = Pat.var("x"), Pat.var("y"), Pat.var("c")
INT_X, FLOAT_X, REAL_X = Pat.var("x", INTS), Pat.var("x", FLOATS), Pat.var("x", INTS + FLOATS)


def float_info(dtype: str):
    """finfo of a float dtype, or of a complex dtype's parts (ml_dtypes' finfo knows bf16)."""
    return ml_dtypes.finfo(numpy_dtype(COMPLEX_PART.get(dtype, dtype)))


def is_lossless(source: str, target: str) -> bool:
    """Whether every value of dtype `source` converts to `target` exactly (so a second convert sees it whole)."""
    if source == target or source == "bool":
        return True
    if target == "bool" or (source in COMPLEXES and target not in COMPLEXES) or (source not in INTS and target in INTS):
        return False
    if source in INTS:
        source_info = np.iinfo(numpy_dtype(source))
        if target in INTS:
            target_info = np.iinfo(numpy_dtype(target))
            return target_info.min <= source_info.min and target_info.max >= source_info.max
        magnitude_bits = source_info.bits - (source_info.min < 0)
        return float_info(target).nmant + 1 >= magnitude_bits
    source_info, target_info = float_info(source), float_info(target)
    return (target_info.nmant >= source_info.nmant and target_info.maxexp >= source_info.maxexp
            and target_info.minexp <= source_info.minexp)


# ---- rewrites that need more than a line ------------------------------------------------------

def compose_convert(b, x, inner, outer):
    source, middle, target = x.type.dtype, inner.attrs["dtype"], outer.attrs["dtype"]
    if not is_lossless(source, middle):
        return None
    # An integer through a float to an integer: the float -> int convert saturates where int -> int
    # wraps (int8 -5 through f64 to u8 is 0, directly 251), so they agree only where nothing overflows.
    if source in INTS and middle not in INTS and target in INTS and not is_lossless(source, target):
        return None
    return b.op("convert", x, dtype=target)


def compose_bitcasts(b, x, outer):
    """The bits pass through both unchanged, so one bitcast (or none) does, if it gives outer's type: a
    same-shaped result has x's width (the bytes are as many), so the single bitcast is legal."""
    if outer.result.type == x.type:
        return x
    if outer.result.type.shape == x.type.shape:
        return b.op("bitcast_convert", x, **outer.attrs)
    return None


def unit_dims_inserted(old_shape, new_shape):
    """Where `old_shape`'s dimensions sit in `new_shape` if the latter only adds 1-sized ones; else None."""
    dims, i = [], 0
    for j, size in enumerate(new_shape):
        if i < len(old_shape) and size == old_shape[i]:
            dims.append(j)
            i += 1
        elif size != 1:
            return None
    return tuple(dims) if i == len(old_shape) else None


def reshape_as_broadcast(b, x, r):
    dims = unit_dims_inserted(x.type.shape, r.result.type.shape)
    if dims is None or r.result.type.shape == x.type.shape:
        return None
    return b.op("broadcast_in_dim", x, shape=r.result.type.shape, broadcast_dimensions=dims)


def is_identity_broadcast(op) -> bool:
    (operand,) = op.operands
    return (op.result.type.shape == operand.type.shape
            and op.attrs["broadcast_dimensions"] == tuple(range(operand.type.ndim)))


def is_unit_insertion(op) -> bool:
    """A broadcast that adds only 1-sized dimensions, in order: the same elements, reshaped."""
    (operand,) = op.operands
    return unit_dims_inserted(operand.type.shape, op.result.type.shape) == op.attrs["broadcast_dimensions"]


def compose_broadcasts(b, x, inner, outer):
    dims = tuple(outer.attrs["broadcast_dimensions"][d] for d in inner.attrs["broadcast_dimensions"])
    return b.op("broadcast_in_dim", x, shape=outer.attrs["shape"], broadcast_dimensions=dims)


def compose_transposes(b, x, inner, outer):
    permutation = tuple(inner.attrs["permutation"][p] for p in outer.attrs["permutation"])
    return b.op("transpose", x, permutation=permutation)


def is_full_slice(op) -> bool:
    shape = op.operands[0].type.shape
    return (all(s == 0 for s in op.attrs["start_indices"]) and op.attrs["limit_indices"] == shape
            and all(s == 1 for s in op.attrs["strides"]))


def compose_slices(b, x, inner, outer):
    strides = tuple(s1 * s2 for s1, s2 in zip(inner.attrs["strides"], outer.attrs["strides"]))
    starts = tuple(s1 + s2 * st1 for s1, s2, st1 in
                   zip(inner.attrs["start_indices"], outer.attrs["start_indices"], inner.attrs["strides"]))
    limits = tuple(start + (n - 1) * stride + 1 if n > 0 else start
                   for start, n, stride in zip(starts, outer.result.type.shape, strides))
    return b.op("slice", x, start_indices=starts, limit_indices=limits, strides=strides)


def hoist_over_broadcasts(b, op):
    """f(broadcast(a), broadcast(b)) -> broadcast(f(a, b)) when the broadcasts agree: no more elements to compute,
    and broadcasts meet (and compose) as they move towards the consumers.

    Broadcasts of scalars agree with any broadcast: the scalar is broadcast to the other's source shape instead.
    """
    broadcasts = [v.producer for v in op.operands]
    if not all(p is not None and p.name == "broadcast_in_dim" for p in broadcasts):
        return None
    shaped = [p for p in broadcasts if p.operands[0].type.ndim > 0] or broadcasts
    first = shaped[0]
    source_shape = first.operands[0].type.shape
    if any(p.operands[0].type.shape != source_shape or p.attrs != first.attrs for p in shaped):
        return None
    if math.prod(source_shape) > first.result.type.size:
        return None
    sources = [p.operands[0] if p in shaped else
               b.op("broadcast_in_dim", p.operands[0], shape=source_shape, broadcast_dimensions=())
               for p in broadcasts]
    return b.op("broadcast_in_dim", b.op(op.name, *sources, **op.attrs), **first.attrs)


def float_sum_of_copies(b, x, copies: int):
    """The sum of `copies` copies of float x: copies * x rounded once (in f64), plus the sum's +0.0."""
    product = b.op("mul", b.op("convert", x, dtype="f64"), b.splat(float(copies), TensorType("f64", x.type.shape)))
    return b.op("add", b.op("convert", product, dtype=x.type.dtype), b.splat(0.0, x.type))


def reduce_of_one_element(b, x, op):
    if math.prod(x.type.shape[a] for a in op.attrs["axes"]) != 1:
        return None
    return x if x.type == op.result.type else b.op("reshape", x, new_sizes=op.result.type.shape)


def reduce_of_broadcast(b, x, broadcast, op):
    """reduce(broadcast(x)) -> broadcast(combine(reduce(x), n)): x is reduced over the dimensions the
    reduction keeps of it, and the n copies the broadcast made along the reduced axes are combined
    algebraically.

    max, min, and, or of n copies are the value; a sum is n times it (integers wrap as n additions
    do; floats are multiplied in f64, one rounding, and +0.0 is added as the sum's 0.0 start value
    does, so -0.0 sums to +0.0; complex numbers part by part, since (inf + 0j) * n is not a sum);
    an integer prod is a power when n fits the dtype (square and multiply wraps as n
    multiplications do). Float and complex prods of copies are left: a power rounds differently
    from n multiplications. A float sum over x's own axes and copies is n times x's sum: as a
    summation order would, it rounds within the sum's error bound, not as any one order does.
    """
    axes, reducer = set(op.attrs["axes"]), op.attrs["reducer"]
    shape, dims = broadcast.result.type.shape, broadcast.attrs["broadcast_dimensions"]
    dtype = x.type.dtype
    copies = math.prod(shape[d] for d in axes if d not in dims or x.type.shape[dims.index(d)] != shape[d])
    if copies == 1 and x.type.size == broadcast.result.type.size:
        return None    # the broadcast makes no copies: nothing to gain
    if copies == 0:
        return b.splat(reducer_identity(reducer, op.result.type.numpy_dtype), op.result.type)
    if copies > 1 and reducer == "prod" and dtype not in INTS:
        return None
    if reducer == "prod" and copies > 1 and copies > np.iinfo(numpy_dtype(dtype)).max:
        return None
    reduced = b.op("reduce", x, reducer=reducer, axes=tuple(i for i, d in enumerate(dims) if d in axes))
    if copies > 1 and reducer == "sum" and dtype in INTS:
        # n wraps to the dtype: n * y and n additions of y agree modulo 2**bits.
        reduced = b.op("mul", reduced, b.splat(np.array(copies).astype(numpy_dtype(dtype)), reduced.type))
    elif copies > 1 and reducer == "sum" and dtype in COMPLEXES:
        reduced = b.op("complex", float_sum_of_copies(b, b.op("real", reduced), copies),
                       float_sum_of_copies(b, b.op("imag", reduced), copies))
    elif copies > 1 and reducer == "sum":
        reduced = float_sum_of_copies(b, reduced, copies)
    elif copies > 1 and reducer == "prod":
        reduced = b.op("pow", reduced, b.splat(copies, reduced.type))
    kept = [d for d in range(len(shape)) if d not in axes]
    return b.op("broadcast_in_dim", reduced, shape=op.result.type.shape,
                broadcast_dimensions=tuple(kept.index(d) for d in dims if d not in axes))


def dot_as_reduction(b, lhs, rhs, op):
    """A dot_general whose operands' free dimensions all have size 1 (dot products of vectors, as
    `a @ b` of two vectors traces) -> the sum over the contracting axes of their product, in the
    accumulator's dtype and rounded once, as dot_general's reference: a reduction that fuses with
    its neighbours rather than a GEMM of one row and one column (XLA's algebraic simplifier
    reduces such dots too)."""
    lc, rc, lb, rb = (op.attrs[k] for k in ("lhs_contracting", "rhs_contracting", "lhs_batch", "rhs_batch"))
    result = op.result.type
    real = set(INTS + FLOATS)
    if not lc or not {lhs.type.dtype, rhs.type.dtype, result.dtype} <= real:
        return None
    wide = dtype_name(compute_dtype(numpy_dtype(result.dtype)))
    operands = []
    for x, contracting, batch in ((lhs, lc, lb), (rhs, rc, rb)):
        free = tuple(i for i in range(x.type.ndim) if i not in contracting and i not in batch)
        if any(x.type.shape[i] != 1 for i in free):
            return None
        # (batch..., contracting...), paired as dot_general pairs them; the 1-sized free dims dropped.
        ordered = b.op("transpose", x, permutation=tuple(batch) + tuple(contracting) + free)
        kept = tuple(x.type.shape[i] for i in tuple(batch) + tuple(contracting))
        operands.append(b.op("convert", b.op("reshape", ordered, new_sizes=kept), dtype=wide))
    total = b.op("reduce", b.op("mul", *operands), reducer="sum", axes=tuple(range(len(lb), len(lb) + len(lc))))
    if total.type.dtype in FLOATS:
        # A dot accumulates from +0.0, a reduction from its first term: products that are all -0.0
        # sum to -0.0, their dot to +0.0.
        total = b.op("add", total, b.splat(0.0, total.type))
    return b.op("reshape", b.op("convert", total, dtype=result.dtype), new_sizes=result.shape)


# ---- the table ---------------------------------------------------------------------------------

RULES = [
    # x + 0 -> x: exact for integers
    (Pat.op("add", INT_X, Pat.splat(0)), lambda b, x: x),
    # x + -0.0 -> x for floats, x = -0.0 included (x + 0.0 is not: -0.0 + 0.0 = +0.0)
    (Pat.op("add", FLOAT_X, Pat.splat(-0.0)), lambda b, x: x),
    # x - 0 -> x for integers and floats (-0.0 - 0.0 = -0.0)
    (Pat.op("sub", REAL_X, Pat.splat(0)), lambda b, x: x),
    # x * 1 -> x, x / 1 -> x (not complex: (inf+1j)*(1+0j) has a NaN real part)
    (Pat.op(("mul", "div"), REAL_X, Pat.splat(1)), lambda b, x: x),
    # x ** 1 -> x
    (Pat.op("pow", REAL_X, Pat.splat(1)), lambda b, x: x),
    # x * 0 -> 0 for integers (not floats: inf * 0 is NaN and -1.0 * 0 is -0.0)
    (Pat.op("mul", INT_X, Pat.splat(0, name="zero")), lambda b, x, zero: zero),
    # x - x -> 0 and x ^ x -> 0 for integers (not floats: inf - inf is NaN)
    (Pat.op(("sub", "xor"), INT_X, x), lambda b, x: b.splat(0, x.type)),
    # x & x, x | x, max(x, x), min(x, x) -> x
    (Pat.op(("and", "or", "max", "min"), x, x), lambda b, x: x),
    # x | 0 -> x and x ^ 0 -> x (for bools: x | false, x ^ false)
    (Pat.op(("or", "xor"), x, Pat.splat(0)), lambda b, x: x),
    # x & true -> x for bools
    (Pat.op("and", Pat.var("x", ("bool",)), Pat.splat(True)), lambda b, x: x),
    # f(f(x)) -> x for the involutions neg, not and conj (-(-INT_MIN) wraps back to INT_MIN)
    *[(Pat.op(name, Pat.op(name, x)), lambda b, x: x) for name in ("neg", "not", "conj")],
    # abs(neg(x)) -> abs(x) and abs(abs(x)) -> abs(x) for reals
    (Pat.op("abs", Pat.op(("neg", "abs"), REAL_X)), lambda b, x: b.op("abs", x)),
    # select(c, x, x) -> x
    (Pat.op("select", c, x, x), lambda b, c, x: x),
    # select(true, x, y) -> x
    (Pat.op("select", Pat.splat(True), x, y), lambda b, x, y: x),
    # select(false, x, y) -> y
    (Pat.op("select", Pat.splat(False), x, y), lambda b, x, y: y),
    # select(!c, x, y) -> select(c, y, x)
    (Pat.op("select", Pat.op("not", c), x, y), lambda b, c, x, y: b.op("select", c, y, x)),
    # convert(x) to x's own dtype -> x
    (Pat.op("convert", x, name="op"), lambda b, x, op: x if op.result.type == x.type else None),
    # convert(convert(x)) -> convert(x) when the inner convert loses nothing
    (Pat.op("convert", Pat.op("convert", x, name="inner"), name="outer"), compose_convert),
    # bitcast_convert(x) to x's own dtype -> x
    (Pat.op("bitcast_convert", x, name="op"), lambda b, x, op: x if op.result.type == x.type else None),
    # bitcast_convert(bitcast_convert(x)) -> x, or one bitcast_convert of the same shape
    (Pat.op("bitcast_convert", Pat.op("bitcast_convert", x), name="outer"), compose_bitcasts),
    # reshape(x) to x's own shape -> x
    (Pat.op("reshape", x, name="op"), lambda b, x, op: x if op.result.type == x.type else None),
    # reshape(reshape(x)) -> reshape(x)
    (Pat.op("reshape", Pat.op("reshape", x), name="op"), lambda b, x, op: b.op("reshape", x, **op.attrs)),
    # reshape(broadcast(x)) -> reshape(x) when the broadcast only inserts 1-sized dimensions
    (Pat.op("reshape", Pat.op("broadcast_in_dim", x, name="inner"), name="op"),
     lambda b, x, inner, op: b.op("reshape", x, **op.attrs) if is_unit_insertion(inner) else None),
    # a reshape that only inserts 1-sized dimensions (keepdims) -> broadcast_in_dim: one form, which fuses
    (Pat.op("reshape", x, name="r"), reshape_as_broadcast),
    # broadcast_in_dim(x) to x's own shape, dimensions in order -> x
    (Pat.op("broadcast_in_dim", x, name="op"), lambda b, x, op: x if is_identity_broadcast(op) else None),
    # broadcast_in_dim(broadcast_in_dim(x)) -> broadcast_in_dim(x), dimensions composed
    (Pat.op("broadcast_in_dim", Pat.op("broadcast_in_dim", x, name="inner"), name="outer"), compose_broadcasts),
    # transpose(x) by the identity permutation -> x
    (Pat.op("transpose", x, name="op"),
     lambda b, x, op: x if op.attrs["permutation"] == tuple(range(x.type.ndim)) else None),
    # transpose(transpose(x)) -> transpose(x), permutations composed
    (Pat.op("transpose", Pat.op("transpose", x, name="inner"), name="outer"), compose_transposes),
    # slice of all of x -> x
    (Pat.op("slice", x, name="op"), lambda b, x, op: x if is_full_slice(op) else None),
    # slice(slice(x)) -> slice(x), starts and strides composed
    (Pat.op("slice", Pat.op("slice", x, name="inner"), name="outer"), compose_slices),
    # rev(x) over no dimensions -> x
    (Pat.op("rev", x, name="op"), lambda b, x, op: x if not op.attrs["dimensions"] else None),
    # rev(rev(x, d), d) -> x
    (Pat.op("rev", Pat.op("rev", x, name="inner"), name="outer"),
     lambda b, x, inner, outer: x if sorted(inner.attrs["dimensions"]) == sorted(outer.attrs["dimensions"]) else None),
    # reduce(x) over axes of one element in all (or none) -> reshape(x): the element, as XLA simplifies
    # it (adding the identity would turn -0.0 into +0.0)
    (Pat.op("reduce", x, name="op"), reduce_of_one_element),
    # reduce(broadcast(x)) -> broadcast(reduce(x)) with the copies combined: n * x, x ** n, x
    (Pat.op("reduce", Pat.op("broadcast_in_dim", x, name="broadcast"), name="op"), reduce_of_broadcast),
    # concatenate(x) of one operand -> x
    (Pat.op("concatenate", x), lambda b, x: x),
    # pad(x) by nothing -> x
    (Pat.op("pad", x, y, name="op"), lambda b, x, y, op: x if not any(op.attrs["low"] + op.attrs["high"]
                                                                       + op.attrs["interior"]) else None),
    # dot_general of vectors (no free dimensions) -> reduce(mul(x, y)) in the accumulator's dtype
    (Pat.op("dot_general", Pat.var("lhs"), Pat.var("rhs"), name="op"), dot_as_reduction),
    # f(broadcast(a), broadcast(b)) -> broadcast(f(a, b)) for elementwise f, when the broadcasts agree
    (Pat.any_op(ELEMENTWISE, name="op"), hoist_over_broadcasts),
]
