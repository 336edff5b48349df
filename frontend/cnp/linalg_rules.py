"""Differentiating the linear-algebra functions whose kernels are solver-library calls (which have no
rules of their own): such a function is one call op (frontend/transforms/custom.py) with JVP and VJP
rules written with the linalg functions themselves (linalg.py), so they differentiate to any order,
as JAX's rules do. Every argument is a stack of matrices (or a stack of values per matrix) and so is
the output: vmap folds the batch into the stack.

Complex matrices are differentiated with JAX's JVP rules, whose reverse mode is their transpose:
`transposed` finds it by reverse mode through the JVP's tangent map (linear in the tangents, made of
ops whose transposes follow JAX's complex convention), as JAX transposes a linearized JVP."""
from __future__ import annotations

from ..dtypes import is_complex
from ..pytree import tree_flatten
from ..transforms.ad import forward_pass
from ..transforms.core import CallRules, builder, trace_function
from ..transforms.custom import call
from .shaping import reshape


def with_rules(name: str, fun, jvp, vjp, *args):
    """fun(*args) as a call op differentiated by jvp(args, tangents, out) -> the output's tangents and
    vjp(args, out, ct) -> the arguments' cotangents (a tuple); `out` and `ct` (and jvp's result) are
    the output itself when fun has one, else tuples."""
    def jvp_rule(b, op, operands, tangents, outs):
        primals = operands[1:]
        result = jvp(primals, b.zeros_if_none(tangents[1:], primals), outs[0] if len(outs) == 1 else outs)
        return [b.convert(t, o.type.dtype) for t, o in zip([result] if len(outs) == 1 else result, outs)]

    def vjp_rule(b, op, operands, outs, cts):
        cts = b.zeros_if_none(cts, outs)
        one = len(outs) == 1
        result = vjp(operands[1:], outs[0] if one else outs, cts[0] if one else cts)
        return [None] + [b.convert(c, p.type.dtype) for c, p in zip(result, operands[1:])]

    def batch_rule(b, op, operands, batched):
        lanes = [b.move_batch_to_front(x, flag) for x, flag in zip(operands[1:], batched[1:])]
        out = with_rules(name, fun, jvp, vjp, *(reshape(x, (-1, *x.shape[2:])) for x in lanes))
        outs = [out] if len(op.results) == 1 else list(out)
        return [reshape(o, (b.axis_size, -1, *o.shape[1:])) for o in outs], [True] * len(outs)
    return call(fun, args, name, CallRules(jvp=jvp_rule, vjp=vjp_rule, batch=batch_rule))


def transposed(jvp):
    """The vjp(args, out, ct) that is the transpose of jvp's tangent map at args (a with_rules vjp)."""
    def vjp(primals, outs, cts):
        one = not isinstance(cts, (list, tuple))

        def tangent_map(*tangents):
            result = jvp(primals, list(tangents), outs)
            return [result] if one else list(result)
        region, _ = trace_function(tangent_map, list(primals), tree_flatten(tuple(primals))[1], "a linalg JVP rule")
        b = builder()
        _, backward = forward_pass(region, [b.zeros_like(p) for p in primals])
        return tuple(b.zeros_if_none(backward([cts] if one else list(cts)), primals))
    return vjp


def complex_transposed(jvp, vjp):
    """`vjp` (written for real matrices) for real arguments, the transpose of `jvp` for complex ones."""
    def rule(primals, outs, cts):
        return (transposed(jvp) if is_complex(primals[0].type.dtype) else vjp)(primals, outs, cts)
    return rule
