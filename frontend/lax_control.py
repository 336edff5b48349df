"""cdnajit.lax control flow: while_loop, fori_loop, scan, map, cond and switch, traced into regions.

Each user function is traced into a region of a `while` or `cond` op; ops in a region may use
tracers of the enclosing function (implicit capture). fori_loop and scan lower to `while`: the
loop counter and, for scan, the stacked outputs become extra loop-carried values.

Carries and operands are pytrees. A carry's type is fixed by its initial value, as in JAX: a
body output of another dtype is an error, except that a weakly typed output (a Python scalar)
converts to the carry's dtype, and a weakly typed initial value (`0.0`) becomes the strong type
the body gives it, of its dtype or a wider one (then the body is traced again with that carry).
"""
from __future__ import annotations

from typing import NamedTuple

from ..errors import TracingTypeError, TracingValueError
from ..ir.core import Value
from ..ir.types import TensorType
from .cnp.base import convert, result_type
from .dtypes import is_integer, promote
from .lax_elementwise import add, describe, lt, ne, static_int, sub
from .lax_shape import full, reshape
from .pytree import tree_flatten, tree_unflatten
from .tracing import Tracer, as_tracer, bind, bind1, constant, current_trace, located, new_trace

__all__ = ["while_loop", "fori_loop", "scan", "map", "cond", "switch"]

COUNTER_TYPE = TensorType("i64", ())


class Aval(NamedTuple):
    """The abstract value of a region parameter or result: its type and whether it is weakly typed."""
    type: TensorType
    weak: bool

    def __str__(self):
        return describe(str(self.type), self.weak)


def aval_of(x: Tracer) -> Aval:
    return Aval(x.type, x.weak_type)


def retype(x: Tracer, aval: Aval) -> Tracer:
    return convert(x, aval.type.dtype, aval.weak)


def trace_region(avals, fn):
    """Trace `fn(params) -> (output tracers, extra)` into a region with parameters of `avals`."""
    with new_trace() as trace:
        params = [Tracer(Value(a.type), trace, a.weak) for a in avals]
        trace.region.params = [p.value for p in params]
        outputs, extra = fn(params)
        trace.region.outputs = [o.value for o in outputs]
    return trace.region, extra


def tracer_leaves(tree, what: str) -> tuple[list[Tracer], object]:
    leaves, treedef = tree_flatten(tree)
    return [as_tracer(leaf, what) for leaf in leaves], treedef


def require_tree(name: str, what: str, treedef, expected, expected_what: str):
    if treedef != expected:
        raise TracingTypeError(located(
            f"lax.{name}: {what} has tree structure {treedef} but {expected_what} has {expected}"))


def carry_outputs(name: str, what: str, avals: list[Aval], outs: list[Tracer], init_what: str):
    """A body's carry outputs converted to the carry types, and the widened carry avals (None if unchanged)."""
    converted, widened = [], list(avals)
    for k, (aval, out) in enumerate(zip(avals, outs)):
        carry_dtype, out_dtype = aval.type.dtype, out.type.dtype
        fits = out.shape == aval.type.shape
        if (fits and aval.weak and (out_dtype != carry_dtype or not out.weak_type)
                and promote((carry_dtype, True), (out_dtype, out.weak_type))[0] == out_dtype):
            # A weak carry takes a strong output's type, its dtype's or a wider one: a weak `0` carried
            # through `(c + 1).astype(int64)` is a strong int64, as JAX promotes a weak initial value.
            widened[k] = Aval(out.type, out.weak_type)
            converted.append(out)
        elif fits and (out_dtype == carry_dtype or
                       out.weak_type and promote((carry_dtype, aval.weak), (out_dtype, True))[0] == carry_dtype):
            converted.append(retype(out, aval))
        else:
            raise TracingTypeError(located(
                f"lax.{name}: {what} returns {describe(str(out.type), out.weak_type)} for carry leaf {k} but the "
                f"carry is {aval} (fixed by {init_what}); make them match, e.g. with lax.convert_element_type"))
    return converted, (widened if widened != list(avals) else None)


def trace_loop_body(trace_body, avals):
    """Run `trace_body(avals) -> (region, widened avals or None, extra)` until no weak carry widens.

    Widening only moves a carry up the promotion lattice, so this ends after a few traces.
    """
    while True:
        region, widened, extra = trace_body(avals)
        if widened is None:
            return region, avals, extra
        avals = widened


def emit_while(cond_region, body_region, init: list[Tracer], avals: list[Aval]) -> list[Tracer]:
    results = bind("while", [retype(x, a) for x, a in zip(init, avals)], {}, [cond_region, body_region])
    return [Tracer(r.value, r.owner, a.weak) for r, a in zip(results, avals)]


# ---- loops -------------------------------------------------------------------------------------

def while_loop(cond_fun, body_fun, init_val):
    """jax.lax.while_loop: while cond_fun(carry): carry = body_fun(carry)."""
    init, tree = tracer_leaves(init_val, "lax.while_loop init_val")

    def trace_body(avals):
        def body(params):
            outs, out_tree = tracer_leaves(body_fun(tree_unflatten(tree, params)), "output of body_fun")
            require_tree("while_loop", "body_fun's output", out_tree, tree, "init_val")
            return carry_outputs("while_loop", "body_fun", avals, outs, "init_val")
        region, widened = trace_region(avals, body)
        return region, widened, None

    body_region, avals, _ = trace_loop_body(trace_body, [aval_of(x) for x in init])

    def cond(params):
        predicate = as_tracer(cond_fun(tree_unflatten(tree, params)), "output of cond_fun")
        if str(predicate.type) != "bool[]":
            raise TracingTypeError(located(f"lax.while_loop: cond_fun must return a bool scalar, got {predicate.type}"))
        return [predicate], None
    cond_region, _ = trace_region(avals, cond)
    return tree_unflatten(tree, emit_while(cond_region, body_region, init, avals))


def fori_loop(lower, upper, body_fun, init_val):
    """jax.lax.fori_loop: for i in range(lower, upper): carry = body_fun(i, carry)."""
    index_dtype, index_weak = result_type(lower, upper)
    lower, upper = (as_tracer(x) for x in (lower, upper))
    if not is_integer(index_dtype) or lower.ndim or upper.ndim:
        raise TracingTypeError(located(
            f"lax.fori_loop: lower and upper must be integer scalars, got {lower.type} and {upper.type}"))
    index = Aval(TensorType(index_dtype, ()), index_weak)
    lower, upper = retype(lower, index), retype(upper, index)
    init, tree = tracer_leaves(init_val, "lax.fori_loop init_val")

    def trace_body(avals):
        def body(params):
            i, carry = params[0], params[1:]
            outs, out_tree = tracer_leaves(body_fun(i, tree_unflatten(tree, carry)), "output of body_fun")
            require_tree("fori_loop", "body_fun's output", out_tree, tree, "init_val")
            converted, widened = carry_outputs("fori_loop", "body_fun", avals, outs, "init_val")
            return [add(i, 1), *converted], widened
        region, widened = trace_region([index, *avals], body)
        return region, widened, None

    body_region, avals, _ = trace_loop_body(trace_body, [aval_of(x) for x in init])
    cond_region, _ = trace_region([index, *avals], lambda params: ([lt(params[0], upper)], None))
    results = emit_while(cond_region, body_region, [lower, *init], [index, *avals])
    return tree_unflatten(tree, results[1:])


def scan_length(xs: list[Tracer], length) -> int:
    """The common leading size of the scanned arrays (and of `length`, when given)."""
    for x in xs:
        if not x.ndim:
            raise TracingValueError(located(f"lax.scan: every leaf of xs needs a leading axis to scan, got {x.type}"))
    sizes = {x.shape[0] for x in xs}
    if length is not None:
        sizes.add(static_int(length, "lax.scan length"))
    if len(sizes) != 1:
        raise TracingValueError(located(
            f"lax.scan: xs leaves {', '.join(str(x.type) for x in xs) or '(none)'} and length={length} must "
            f"agree on one number of iterations"))
    return sizes.pop()


def row_starts(t: Tracer, ndim: int) -> list[Tracer]:
    """The start indices (t, 0, 0, ...) of row t of a rank-`ndim` array."""
    zero = constant(0, "i64") if ndim > 1 else None
    return [t] + [zero] * (ndim - 1)


def scan_row(x: Tracer, t: Tracer, length: int) -> Tracer:
    """x[t], the slice of one iteration (t is in bounds; a zero-length scan never reads it)."""
    if length == 0:
        return retype(full(x.shape[1:], 0, x.type.dtype), aval_of(x))
    row = bind1("dynamic_slice", [x, *row_starts(t, x.ndim)], {"slice_sizes": (1,) + x.shape[1:]},
                weak_type=x.weak_type)
    return reshape(row, x.shape[1:])


def scan_store(stacked: Tracer, y: Tracer, t: Tracer, length: int) -> Tracer:
    """stacked with row t set to y."""
    if length == 0:
        return stacked
    row = reshape(y, (1,) + y.shape)
    return bind1("dynamic_update_slice", [stacked, row, *row_starts(t, stacked.ndim)], weak_type=stacked.weak_type)


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """jax.lax.scan: carry, y = f(carry, x) over the leading axis of xs; returns (carry, stacked ys).

    `unroll` is accepted as the hint it is in JAX and does not change the result.
    """
    carry_init, carry_tree = tracer_leaves(init, "lax.scan init")
    xs_leaves, xs_tree = tracer_leaves(xs, "lax.scan xs")
    n = scan_length(xs_leaves, length)
    counter = Aval(COUNTER_TYPE, False)

    def trace_body(avals):
        def body(params):
            i, carry = params[0], params[1:]
            t = sub(n - 1, i) if reverse else i
            x = tree_unflatten(xs_tree, [scan_row(leaf, t, n) for leaf in xs_leaves])
            out = f(tree_unflatten(carry_tree, carry), x)
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TracingTypeError(located(f"lax.scan: f must return a pair (carry, y), got {type(out).__name__}"))
            outs, out_tree = tracer_leaves(out[0], "carry output of f")
            require_tree("scan", "f's carry output", out_tree, carry_tree, "init")
            converted, widened = carry_outputs("scan", "f", avals, outs, "init")
            ys, ys_tree = tracer_leaves(out[1], "y output of f")
            # The stacked outputs are carried too; their types are known only now, so their
            # parameters join the region after the carry's.
            trace = current_trace()
            stacked = [Tracer(Value(TensorType(y.type.dtype, (n,) + y.shape)), trace, y.weak_type) for y in ys]
            trace.region.params.extend(s.value for s in stacked)
            stored = [scan_store(s, y, t, n) for s, y in zip(stacked, ys)]
            return [add(i, 1), *converted, *stored], (widened, ys_tree, [aval_of(s) for s in stacked])
        region, (widened, ys_tree, stacked_avals) = trace_region([counter, *avals], body)
        return region, widened, (ys_tree, stacked_avals)

    body_region, avals, (ys_tree, stacked_avals) = trace_loop_body(trace_body, [aval_of(x) for x in carry_init])
    loop_avals = [counter, *avals, *stacked_avals]
    cond_region, _ = trace_region(loop_avals, lambda params: ([lt(params[0], n)], None))
    stacked_init = [full(a.type.shape, 0, a.type.dtype) for a in stacked_avals]
    results = emit_while(cond_region, body_region, [constant(0, "i64"), *carry_init, *stacked_init], loop_avals)
    carry_out, ys = results[1:1 + len(avals)], results[1 + len(avals):]
    return tree_unflatten(carry_tree, carry_out), tree_unflatten(ys_tree, ys)


def map(f, xs):
    """jax.lax.map: f applied to each slice of xs along its leading axis, results stacked."""
    return scan(lambda carry, x: (carry, f(x)), None, xs)[1]


# ---- branches ---------------------------------------------------------------------------------

def join_branch_avals(name: str, labels: list[str], branch_avals: list[list[Aval]]) -> list[Aval]:
    """The common output types of the branches: equal, but for weak outputs, which take the others' dtype."""
    joined = []
    for k, leaf_avals in enumerate(zip(*branch_avals)):
        dtype, weak = promote(*((a.type.dtype, a.weak) for a in leaf_avals))
        shapes = {a.type.shape for a in leaf_avals}
        if len(shapes) > 1 or any(a.type.dtype != dtype for a in leaf_avals if not a.weak):
            outputs = "; ".join(f"{label} returns {a}" for label, a in zip(labels, leaf_avals))
            raise TracingTypeError(located(f"lax.{name}: the branches' output leaf {k} must have one type: {outputs}"))
        joined.append(Aval(TensorType(dtype, leaf_avals[0].type.shape), weak))
    return joined


def emit_branches(name: str, branches, labels: list[str], index: Tracer, operands) -> object:
    """A `cond` op choosing branches[index] (clamped) applied to the operands pytree."""
    for label, branch in zip(labels, branches):
        if not callable(branch):
            raise TracingTypeError(located(f"lax.{name}: {label} must be callable, got {type(branch).__name__}"))
    args, tree = tracer_leaves(tuple(operands), f"lax.{name} operand")
    arg_avals = [aval_of(a) for a in args]

    def trace_branch(branch, label, targets=None):
        def run(params):
            outs, out_tree = tracer_leaves(branch(*tree_unflatten(tree, params)), f"output of {label}")
            if targets is not None:
                outs = [retype(o, a) for o, a in zip(outs, targets)]
            return outs, (out_tree, [aval_of(o) for o in outs])
        return trace_region(arg_avals, run)

    traced = [trace_branch(branch, label) for branch, label in zip(branches, labels)]
    out_tree = traced[0][1][0]
    for label, (_, (branch_tree, _)) in zip(labels[1:], traced[1:]):
        require_tree(name, f"the output of {label}", branch_tree, out_tree, f"that of {labels[0]}")
    targets = join_branch_avals(name, labels, [avals for _, (_, avals) in traced])
    regions = [region if [a.type for a in avals] == [a.type for a in targets] else trace_branch(branch, label, targets)[0]
               for branch, label, (region, (_, avals)) in zip(branches, labels, traced)]
    results = bind("cond", [index, *args], {}, regions)
    return tree_unflatten(out_tree, [Tracer(r.value, r.owner, a.weak) for r, a in zip(results, targets)])


def cond(pred, true_fun, false_fun, *operands):
    """jax.lax.cond: true_fun(*operands) if pred else false_fun(*operands); pred is a bool or integer scalar."""
    pred = as_tracer(pred)
    if pred.ndim or not (pred.type.dtype == "bool" or is_integer(pred.type.dtype)):
        raise TracingTypeError(located(f"lax.cond: pred must be a bool or integer scalar, got {pred.type}"))
    if pred.type.dtype != "bool":
        pred = ne(pred, 0)
    index = convert(pred, "i32")
    return emit_branches("cond", [false_fun, true_fun], ["false_fun", "true_fun"], index, operands)


def switch(index, branches, *operands):
    """jax.lax.switch: branches[index](*operands), index clamped to the branches."""
    index = as_tracer(index)
    if index.ndim or not is_integer(index.type.dtype):
        raise TracingTypeError(located(f"lax.switch: index must be an integer scalar, got {index.type}"))
    branches = list(branches)
    if not branches:
        raise TracingValueError(located("lax.switch needs at least one branch"))
    return emit_branches("switch", branches, [f"branches[{k}]" for k in range(len(branches))], index, operands)
