"""Differentiating the linear-algebra functions whose kernels are solver-library calls (which have no
rules of their own): such a function is one call op (frontend/transforms/custom.py) with JVP and VJP
rules written with the linalg functions themselves (linalg.py), so they differentiate to any order,
as JAX's rules do. Every argument is a stack of matrices (or a stack of values per matrix) and so is
the output: vmap folds the batch into the stack."""
from __future__ import annotations

from ..transforms.core import CallRules
from ..transforms.custom import call
from .shaping import reshape


def with_rules(name: str, fun, jvp, vjp, *args):
    """fun(*args) (one output) as a call op differentiated by jvp(args, tangents, out) -> the output's
    tangent and vjp(args, out, ct) -> the arguments' cotangents (a tuple)."""
    def jvp_rule(b, op, operands, tangents, outs):
        primals = operands[1:]
        return [b.convert(jvp(primals, b.zeros_if_none(tangents[1:], primals), outs[0]), outs[0].type.dtype)]

    def vjp_rule(b, op, operands, outs, cts):
        (ct,) = b.zeros_if_none(cts, outs)
        return [None] + [b.convert(c, p.type.dtype) for c, p in zip(vjp(operands[1:], outs[0], ct), operands[1:])]
    def batch_rule(b, op, operands, batched):
        lanes = [b.move_batch_to_front(x, flag) for x, flag in zip(operands[1:], batched[1:])]
        out = with_rules(name, fun, jvp, vjp, *(reshape(x, (-1, *x.shape[2:])) for x in lanes))
        return [reshape(out, (b.axis_size, -1, *out.shape[1:]))], [True]
    return call(fun, args, name, CallRules(jvp=jvp_rule, vjp=vjp_rule, batch=batch_rule))
