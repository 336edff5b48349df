"""How the op table's transformation rules are called, and the factories the op families use.

The transformations (frontend/transforms/) walk a traced region and call, for each op, the rule its
table entry holds (`set_rules` beside the op's `define`, as JAX keeps a primitive's rules beside it):

  jvp(b, op, primals, tangents, outs) -> tangents of the results
      forward mode: `tangents` has None for a zero tangent; `outs` are the op's primal results.
  vjp(b, op, primals, outs, cts) -> cotangents of the operands
      reverse mode: `cts` are the results' cotangents (None for zero, never all None); a None in the
      answer is a zero cotangent (integer operands, indices, predicates get None).
  batch(b, op, operands, batched) -> (results, batched flags)
      vmap: a batched operand carries the batch as its leading dimension, of size b.axis_size; an
      unbatched one is the same for every lane. Called only when some operand is batched.

`b` is a `Builder`: it records ops in the transformation's trace (`b.op`, `b.ops`) and gives the
region-holding ops' rules the transformations themselves (`b.trace_region`, `b.jvp_region`,
`b.vjp_region`, `b.batch_region`, `b.closure_convert`, `b.eval_region`), as JAX's control-flow rules call
ad.jvp_jaxpr. A region may read values of the regions around it; in reverse mode their cotangents
go back through `b.add_captured_cts`. The values are the transformation's handles: anything with a
graph-IR `type`.
"""
from __future__ import annotations

import numpy as np

from ..opdef import OPS, set_rules
from ..types import INEXACT, NUMPY_DTYPES


def is_differentiable(type_) -> bool:
    """Whether values of this type have tangents (integers and bools have JAX's float0 tangents: none)."""
    return type_.dtype in INEXACT


class Builder:
    """Records ops for the rules; the transformation supplies `bind` and its region transformations."""

    def __init__(self, bind, axis_size=None, trace_region=None, jvp_region=None, vjp_region=None,
                 batch_region=None, closure_convert=None, add_captured_cts=None, eval_region=None):
        self.bind = bind                  # (name, operands, attrs, regions) -> result handles
        self.axis_size = axis_size        # vmap's batch size
        self.trace_region = trace_region  # (param types, fn(params) -> outputs) -> Region
        self.jvp_region = jvp_region      # (region, primals, tangents) -> (outputs, output tangents)
        # (region, primals, output cts, saved=None) -> parameter cts (zeros filled in); `saved`: id of a
        # region op -> results to use instead of recomputing it (frontend/transforms/ad.py forward_pass)
        self.vjp_region = vjp_region
        self.batch_region = batch_region  # (region, operands, batched) -> (outputs, batched flags)
        # (regions) -> (the regions taking what they read from outside as extra parameters after
        # their own, the IR values read, their handles)
        self.closure_convert = closure_convert
        self.add_captured_cts = add_captured_cts  # (IR values read from outside, their cotangents)
        self.eval_region = eval_region    # (region, operands) -> its outputs, its ops recorded as they are

    def op(self, name, *operands, **attrs):
        (result,) = self.bind(name, list(operands), attrs, ())
        return result

    def ops(self, name, operands, attrs, regions=()):
        return self.bind(name, list(operands), attrs, list(regions))

    # ---- constants and the common ops, by shape ----------------------------------------------

    def full(self, shape, value, dtype):
        scalar = self.op("constant", value=np.array(value, NUMPY_DTYPES[dtype]))
        return self.broadcast(scalar, tuple(shape), ()) if shape else scalar

    def full_like(self, x, value):
        return self.full(x.type.shape, value, x.type.dtype)

    def zeros_like(self, x):
        return self.full_like(x, 0)

    def broadcast(self, x, shape, dims):
        if tuple(shape) == x.type.shape and tuple(dims) == tuple(range(len(shape))):
            return x
        return self.op("broadcast_in_dim", x, shape=tuple(shape), broadcast_dimensions=tuple(dims))

    def reshape(self, x, shape):
        return x if tuple(shape) == x.type.shape else self.op("reshape", x, new_sizes=tuple(shape))

    def transpose(self, x, permutation):
        permutation = tuple(permutation)
        return x if permutation == tuple(range(len(permutation))) else self.op("transpose", x, permutation=permutation)

    def sum(self, x, axes):
        return self.op("reduce", x, reducer="sum", axes=tuple(axes)) if axes else x

    def convert(self, x, dtype):
        return x if x.type.dtype == dtype else self.op("convert", x, dtype=dtype)

    def add(self, a, b):
        """a + b where None is zero."""
        return b if a is None else a if b is None else self.op("add", a, b)

    def mul(self, a, b):
        return self.op("mul", a, b)

    def div(self, a, b):
        return self.op("div", a, b)

    def neg(self, a):
        return self.op("neg", a)

    def scale(self, x, value):
        return self.op("mul", x, self.full_like(x, value))

    def zeros_if_none(self, values, likes):
        return [self.zeros_like(like) if v is None else v for v, like in zip(values, likes)]

    def move_batch_to_front(self, x, batched):
        """x as a batched value (the batch leading): an unbatched x broadcast to every lane."""
        if batched:
            return x
        shape = (self.axis_size,) + x.type.shape
        return self.broadcast(x, shape, tuple(range(1, len(shape))))

    def dot_general(self, lhs, rhs, lhs_contracting, rhs_contracting, lhs_batch, rhs_batch):
        """dot_general; with nothing to contract, the product of the operands broadcast to the result
        (as XLA's algebraic simplifier rewrites such a dot), which fuses with its neighbours."""
        if lhs_contracting:
            return self.op("dot_general", lhs, rhs, lhs_contracting=tuple(lhs_contracting),
                           rhs_contracting=tuple(rhs_contracting), lhs_batch=tuple(lhs_batch),
                           rhs_batch=tuple(rhs_batch), preferred_element_type=None)
        lhs_free = [d for d in range(lhs.type.ndim) if d not in lhs_batch]
        rhs_free = [d for d in range(rhs.type.ndim) if d not in rhs_batch]
        shape = (tuple(lhs.type.shape[d] for d in lhs_batch) + tuple(lhs.type.shape[d] for d in lhs_free)
                 + tuple(rhs.type.shape[d] for d in rhs_free))
        nb, nl = len(lhs_batch), len(lhs_free)
        lhs_dims = [lhs_batch.index(d) if d in lhs_batch else nb + lhs_free.index(d) for d in range(lhs.type.ndim)]
        rhs_dims = [rhs_batch.index(d) if d in rhs_batch else nb + nl + rhs_free.index(d)
                    for d in range(rhs.type.ndim)]
        return self.mul(self.broadcast(lhs, shape, lhs_dims), self.broadcast(rhs, shape, rhs_dims))

    def select(self, pred, on_true, on_false):
        return self.op("select", pred, on_true, on_false)


# ---- factories -------------------------------------------------------------------------------

def elementwise_derivatives(name, *partials):
    """jvp and vjp of an elementwise op from its partial derivatives: `partials[i](b, operands, out)` is
    d out / d operand i, elementwise (None: the op does not depend smoothly on that operand)."""
    def jvp(b, op, primals, tangents, outs):
        total = None
        for partial, t in zip(partials, tangents):
            if t is not None and partial is not None:
                total = b.add(total, b.mul(t, partial(b, primals, outs[0])))
        return [total]

    def vjp(b, op, primals, outs, cts):
        (ct,) = cts
        return [None if partial is None or not is_differentiable(x.type) else b.mul(ct, partial(b, primals, outs[0]))
                for partial, x in zip(partials, primals)]
    set_rules(name, jvp=jvp, vjp=vjp)


def linear(name, transpose):
    """jvp and vjp of an op linear in its operands (zero tangents filled in as zeros): the tangent is
    the op applied to the tangents; `transpose(b, op, primals, ct)` gives the operands' cotangents."""
    def jvp(b, op, primals, tangents, outs):
        if all(t is None for t in tangents):
            return [None]
        return b.ops(op.name, b.zeros_if_none(tangents, primals), op.attrs)

    def vjp(b, op, primals, outs, cts):
        return transpose(b, op, primals, cts[0])
    set_rules(name, jvp=jvp, vjp=vjp)


def bilinear_jvp(b, op, primals, tangents, outs):
    """The JVP of an op linear in each of its two operands (dot_general, convolutions): the op of
    each tangent with the other operand, summed."""
    lhs, rhs = primals
    total = None
    if tangents[0] is not None:
        total = b.ops(op.name, [tangents[0], rhs], op.attrs)[0]
    if tangents[1] is not None:
        total = b.add(total, b.ops(op.name, [lhs, tangents[1]], op.attrs)[0])
    return [total]


def zero_derivative(*names):
    """Ops whose results are piecewise constant (floor, sign, comparisons) or not differentiable values
    (integers, bools): zero tangents and cotangents."""
    for name in names:
        set_rules(name, jvp=lambda b, op, primals, tangents, outs: [None] * len(outs),
                  vjp=lambda b, op, primals, outs, cts: [None] * len(primals))


def batch_elementwise(b, op, operands, batched):
    """An elementwise op of same-shape operands: the unbatched ones broadcast to every lane."""
    operands = [b.move_batch_to_front(x, f) for x, f in zip(operands, batched)]
    return b.ops(op.name, operands, op.attrs), [True] * len(op.results)


def batch_elementwise_ops(*names):
    for name in names:
        set_rules(name, batch=batch_elementwise)


def batch_by_attrs(name, shift):
    """An op of one batched operand whose attributes name its dimensions: `shift(attrs, size)` gives the
    attributes of the op on the operand with the batch (of `size`) as a new leading dimension."""
    def batch(b, op, operands, batched):
        require_batched_only_first(op, batched)
        return b.ops(op.name, operands, shift(op.attrs, b.axis_size)), [True] * len(op.results)
    set_rules(name, batch=batch)


def require_batched_only_first(op, batched):
    if any(batched[1:]):
        raise NotImplementedError(f"vmap of {op.name} with batched operands after the first is not supported")


def shifted(axes):
    return tuple(a + 1 for a in axes)


def defined_rules(kind: str) -> list[str]:
    """The ops that have a rule of `kind` ("jvp", "vjp" or "batch"), for the tests."""
    return sorted(name for name, opdef in OPS.items() if getattr(opdef, kind) is not None)
