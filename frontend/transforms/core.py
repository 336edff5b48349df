"""What the transformations share: tracing a function into a scratch region, scopes of values, and
re-emitting a region's ops into the current trace.

A transformation (ad.py, batching.py) traces the user's function once into a region of its own (a
child trace that is never inserted anywhere), then walks that region's ops and records, in the
trace it was called from, what the transformation makes of each: the op itself with its regions
copied (`emit`), and whatever the op table's rule for the transformation adds. Because the function
is traced first and transformed after, transformations compose (grad of vmap, jacfwd of grad): each
one's output is ops in a trace, which the next one reads.

A rule that traces a region again (a loop's or branch's JVP, the reverse pass of a loop, a branch or
a checkpoint) recomputes what the op, emitted once on the primals, already computed: there host
callbacks (jax.debug.print) are left out (`recomputation`), so they run once, on primal values.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import weakref

import numpy as np
from typing import Callable, NamedTuple

from ...ir.core import Region, Value
from ...ir.opdef import get_opdef
from ...ir.ops.rules import Builder
from ..jit import Jitted
from ..pytree import tree_flatten, tree_unflatten
from ..tracing import Tracer, as_tracer, bind, current_trace, new_trace


class Scope:
    """What a transformation knows of each value of a region (its new tracer, its tangent, whether it
    is batched), falling back to the scope of the enclosing region: a region's ops may use the
    values of the regions around it. `default` answers for values defined outside the transformed
    function (constants to it)."""

    def __init__(self, parent: "Scope | None" = None, default=None):
        self.parent = parent
        self.default = default
        self.values: dict[int, object] = {}

    def bind(self, values, items):
        for value, item in zip(values, items):
            self.values[id(value)] = item

    def lookup(self, value: Value):
        scope = self
        while scope is not None:
            if id(value) in scope.values:
                return scope.values[id(value)]
            scope = scope.parent
        return self.default(value)

    def child(self) -> "Scope":
        return Scope(self, self.default)


def captured(value: Value) -> Tracer:
    """A value the traced function read from the trace around it (a closure): used as it is."""
    return Tracer(value, current_trace())


def new_region(types, fn) -> Region:
    """A region with parameters of `types` whose outputs are `fn(parameter tracers)`."""
    with new_trace() as trace:
        params = [Tracer(Value(t), trace) for t in types]
        trace.region.params = [p.value for p in params]
        trace.region.outputs = [as_tracer(o).value for o in fn(params)]
    return trace.region


class CallRules(NamedTuple):
    """The rules of a call op (custom.py), with the op table's signatures; one left None is the op
    table's (cond's: the body transformed). `lane_independent`: the rules hold as they are for the
    call that cond's batch rule makes of it (else differentiating that is not supported). `name`:
    the name checkpoint_name gave the call's values."""
    jvp: Callable | None = None
    vjp: Callable | None = None
    batch: Callable | None = None
    lane_independent: bool = False
    name: str | None = None   # checkpoint_name's name, which checkpoint policies read


# Call ops with rules of their own (custom_jvp, custom_vjp, stop_gradient), by op.
CALL_RULES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def rule_for(op, kind: str):
    """The op's own rule of `kind` if it is a call with rules, else its op table entry's (maybe None)."""
    rules = CALL_RULES.get(op)
    own = getattr(rules, kind) if rules is not None else None
    return own if own is not None else getattr(get_opdef(op.name), kind)


RECOMPUTING = contextvars.ContextVar("recomputing", default=False)


@contextlib.contextmanager
def recomputation():
    """While a rule traces a region again: host callbacks emitted meanwhile are left out."""
    token = RECOMPUTING.set(True)
    try:
        yield
    finally:
        RECOMPUTING.reset(token)


def recomputed(transform):
    """`transform` (a region transformation a rule calls) run as a recomputation."""
    def run(*args):
        with recomputation():
            return transform(*args)
    return run


def emit(op, operands, scope: Scope) -> list[Tracer]:
    """Record `op` on new operands in the current trace, its regions copied with `scope`'s values (a
    call with rules keeps them); a host callback in a recomputation is a constant token instead."""
    if op.name == "host_callback" and RECOMPUTING.get():
        return bind("constant", [], {"value": np.zeros((), np.bool_)})
    results = bind(op.name, operands, op.attrs, [copy_region(r, scope) for r in op.regions])
    if op in CALL_RULES and results:
        CALL_RULES[results[0].value.producer] = CALL_RULES[op]
    return results


def copy_region(region: Region, scope: Scope) -> Region:
    def body(params):
        inner = scope.child()
        inner.bind(region.params, params)
        return eval_region_ops(region, inner)
    return new_region(region.param_types, body)


def eval_region_ops(region: Region, scope: Scope) -> list[Tracer]:
    for op in region.ops:
        scope.bind(op.results, emit(op, [scope.lookup(v) for v in op.operands], scope))
    return [scope.lookup(v) for v in region.outputs]


def captured_values(regions) -> list[Value]:
    """The values the regions read from outside themselves, in first-use order."""
    found, seen = [], set()

    def visit(region, defined):
        defined = defined | {id(p) for p in region.params}
        for op in region.ops:
            for v in op.operands:
                if id(v) not in defined and id(v) not in seen:
                    seen.add(id(v))
                    found.append(v)
            for inner in op.regions:
                visit(inner, defined)
            defined = defined | {id(r) for r in op.results}
        for v in region.outputs:
            if id(v) not in defined and id(v) not in seen:
                seen.add(id(v))
                found.append(v)
    for region in regions:
        visit(region, frozenset())
    return found


def closure_convert(regions, scope: Scope):
    """The regions with what they read from outside as extra parameters (after their own), those
    values, and their tracers in `scope`: for a rule that must know every input of a region."""
    outside = captured_values(regions)
    extra = [scope.lookup(v) for v in outside]

    def convert(region):
        def body(params):
            inner = scope.child()
            inner.bind(list(region.params) + outside, params)
            return eval_region_ops(region, inner)
        return new_region(region.param_types + [v.type for v in outside], body)
    return [convert(r) for r in regions], outside, extra


def builder(scope: Scope | None = None, **hooks) -> Builder:
    """A rule builder recording in the current trace; with `scope`, regions can be closure-converted."""
    scope = scope if scope is not None else Scope(default=captured)
    hooks.setdefault("eval_region", lambda region, operands: eval_region(region, operands, scope))
    return Builder(bind, trace_region=new_region, closure_convert=lambda regions: closure_convert(regions, scope),
                   **hooks)


def eval_region(region: Region, operands, scope: Scope) -> list[Tracer]:
    """Record `region`'s ops on `operands` in the current trace."""
    inner = scope.child()
    inner.bind(region.params, operands)
    return eval_region_ops(region, inner)


# ---- functions of pytrees -------------------------------------------------------------------

def leaves_of(tree, what: str) -> tuple[list[Tracer], object]:
    leaves, treedef = tree_flatten(tree)
    return [as_tracer(leaf, what) for leaf in leaves], treedef


def trace_function(fn, in_leaves: list[Tracer], in_tree, what: str):
    """Trace `fn(*unflatten(in_tree, params))` into a scratch region whose parameters have the types
    of `in_leaves`; returns (region, output tree)."""
    out_tree = None

    def body(params):
        nonlocal out_tree
        for param, leaf in zip(params, in_leaves):
            param.weak_type = leaf.weak_type
        args = tree_unflatten(in_tree, params)
        outs, out_tree = leaves_of(fn(*args), f"output of {what}")
        return outs
    region = new_region([leaf.type for leaf in in_leaves], body)
    return region, out_tree


def outside_jit(transformed=None, static_argnums=()):
    """`transformed` as JAX users call it: inside a trace it records ops there; called on concrete
    arrays it is compiled (once per signature, as jit, `static_argnums` its static arguments) and run."""
    if transformed is None:
        return functools.partial(outside_jit, static_argnums=static_argnums)
    jitted = None

    @functools.wraps(transformed)
    def call(*args, **kwargs):
        nonlocal jitted
        if current_trace() is not None:
            return transformed(*args, **kwargs)
        if jitted is None:
            jitted = Jitted(transformed, static_argnums=static_argnums)
        return jitted(*args, **kwargs)
    return call
