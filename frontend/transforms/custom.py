"""Functions with rules of their own: stop_gradient, custom_jvp, custom_vjp, custom_vmap, checkpoint
(with jax.checkpoint_policies and checkpoint_name).

Each call is traced as a `cond` of one branch (the function's body) on a constant index: a call op
the passes inline (canonicalize folds a cond whose branch is known), whose region the
transformations see whole. The op is entered in core.CALL_RULES with the rules the user gave; the
transformations ask that table before the op table, and copying the op copies the entry.
"""
from __future__ import annotations

import functools
import types
from typing import NamedTuple

from ...ir.ops.rules import is_differentiable
from ..pytree import tree_flatten, tree_unflatten
from ..tracing import bind, constant, current_trace, located
from .ad import forward_pass
from .core import (CALL_RULES, CallRules, Scope, captured, emit, leaves_of, outside_jit, recomputation,
                   trace_function)


def call(fun, args: tuple, what: str, rules: CallRules | None):
    """fun(*args) recorded as one call op (entered in CALL_RULES with `rules`); returns its output pytree."""
    leaves, in_tree = leaves_of(args, f"argument of {what}")
    region, out_tree = trace_function(fun, leaves, in_tree, what)
    results = bind("cond", [constant(0, "i32"), *leaves], {}, [region])
    if rules is not None and results:
        CALL_RULES[results[0].value.producer] = rules
    return tree_unflatten(out_tree, results)


STOPPED = CallRules(jvp=lambda b, op, primals, tangents, outs: [None] * len(outs),
                    vjp=lambda b, op, primals, outs, cts: [None] * len(primals), lane_independent=True)


def stop_gradient(x):
    """jax.lax.stop_gradient: x (a pytree), with zero derivative."""
    if current_trace() is None:
        return x
    leaves, tree = tree_flatten(x)
    results = call(lambda *xs: xs, tuple(leaves), "stop_gradient", STOPPED)
    for result, leaf in zip(results, leaves):   # the identity keeps weak types
        result.weak_type = leaf.weak_type
    return tree_unflatten(tree, results)


def split_nondiff(args, nondiff_argnums):
    """(the nondiff arguments' values, the others, a function putting the others back in place)."""
    nondiff = [args[i] for i in nondiff_argnums]
    diff = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)

    def full(diff_args):
        it = iter(diff_args)
        return [args[i] if i in nondiff_argnums else next(it) for i in range(len(args))]
    return nondiff, diff, full


class custom_jvp:
    """jax.custom_jvp: `fun` differentiated by the rule given with `defjvp` (forward mode; reverse mode
    transposes the rule's tangent map, which is linear in the tangents)."""

    def __init__(self, fun, nondiff_argnums=()):
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None
        self._eager = outside_jit(self.traced, static_argnums=self.nondiff_argnums)
        functools.update_wrapper(self, fun)

    def defjvp(self, jvp, symbolic_zeros=False):
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps):
        """One tangent function per argument, jvp_i(g_i, ans, *args), summed."""
        def jvp(primals, tangents):
            out = self.fun(*primals)
            total = None
            for rule, t in zip(jvps, tangents):
                if rule is not None:
                    term = rule(t, out, *primals)
                    total = term if total is None else total + term
            return out, total
        self.defjvp(jvp)

    def __call__(self, *args):
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {self.__name__} using defjvp.")
        return self._eager(*args)

    def traced(self, *args):
        nondiff, diff, full = split_nondiff(args, self.nondiff_argnums)
        _, in_tree = tree_flatten(diff)

        def tangent_out(primals, tangents):
            """The rule's (output leaves, tangent leaves) at primal and tangent leaves."""
            out, t_out = self.jvp(*nondiff, tree_unflatten(in_tree, primals), tree_unflatten(in_tree, tangents))
            out_leaves, out_tree = tree_flatten(out)
            t_leaves, t_tree = tree_flatten(t_out)
            if t_tree != out_tree:
                raise TypeError(located(f"Custom JVP rule must produce primal and tangent outputs with equal "
                                        f"container (pytree) structures, but got {out_tree} and {t_tree} respectively."))
            return out_leaves, t_leaves

        # The call's operand 0 is its branch index: the rules see the arguments' leaves after it.
        def jvp(b, op, operands, tangents, outs):
            primals = operands[1:]
            _, t_leaves = tangent_out(primals, b.zeros_if_none(tangents[1:], primals))
            return [b.convert(leaves_of(t, "tangent")[0][0], o.type.dtype) for t, o in zip(t_leaves, outs)]

        def vjp(b, op, operands, outs, cts):
            primals = operands[1:]

            def tangent_map(*tangents):
                return [leaves_of(t, "tangent")[0][0] for t in tangent_out(primals, list(tangents))[1]]
            region, _ = trace_function(tangent_map, primals, tree_flatten(tuple(primals))[1], "a custom_jvp rule")
            _, backward = forward_pass(region, [b.zeros_like(p) for p in primals])
            return [None] + backward(cts)
        return call(lambda *xs: self.fun(*full(xs)), diff, self.__name__, CallRules(jvp=jvp, vjp=vjp))


class custom_vjp:
    """jax.custom_vjp: `fun` differentiated in reverse mode by `fwd` and `bwd` (defvjp)."""

    def __init__(self, fun, nondiff_argnums=()):
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = self.bwd = None
        self._eager = outside_jit(self.traced, static_argnums=self.nondiff_argnums)
        functools.update_wrapper(self, fun)

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {self.__name__} using defvjp.")
        return self._eager(*args)

    def traced(self, *args):
        nondiff, diff, full = split_nondiff(args, self.nondiff_argnums)
        _, in_tree = tree_flatten(diff)
        name = self.__name__

        def jvp(b, op, primals, tangents, outs):
            raise TypeError(located(f"can't apply forward-mode autodiff (jvp) to a custom_vjp function ({name})."))

        def vjp(b, op, operands, outs, cts):
            primals = operands[1:]
            out, residuals = self.fwd(*full(tree_unflatten(in_tree, primals)))
            out_tree = tree_flatten(out)[1]
            ct_args = self.bwd(*nondiff, residuals, tree_unflatten(out_tree, b.zeros_if_none(cts, outs)))
            ct_leaves, ct_tree = tree_flatten(ct_args)
            if not isinstance(ct_args, tuple) or len(ct_args) != len(diff) or ct_tree != tree_flatten(tuple(diff))[1]:
                raise TypeError(located(
                    f"Custom VJP bwd rule must produce an output with the same container (pytree) structure as the "
                    f"args tuple of the primal function, and in particular must produce a tuple of length equal to "
                    f"the number of arguments to the primal function, but got bwd output structure {ct_tree} for "
                    f"primal input structure {tree_flatten(tuple(diff))[1]}."))
            return [None] + [None if ct is None else b.convert(leaves_of(ct, "cotangent")[0][0], p.type.dtype)
                             for ct, p in zip(ct_leaves, primals)]
        return call(lambda *xs: self.fun(*full(xs)), diff, name, CallRules(jvp=jvp, vjp=vjp))


class custom_vmap:
    """jax.custom_batching.custom_vmap: `fun` batched by the rule given with `def_vmap`,
    rule(axis_size, in_batched, *args) -> (out, out_batched), in_batched and out_batched pytrees of
    bools like the arguments and the output, the batch leading. Differentiation goes through `fun`."""

    def __init__(self, fun):
        self.fun = fun
        self.rule = None
        self._eager = outside_jit(self.traced)
        functools.update_wrapper(self, fun)

    def def_vmap(self, rule):
        self.rule = rule
        return rule

    def __call__(self, *args):
        if self.rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function {self.__name__} using def_vmap.")
        return self._eager(*args)

    def traced(self, *args):
        _, in_tree = tree_flatten(args)

        def batch(b, op, operands, batched):
            leaves, flags = operands[1:], batched[1:]
            out, out_batched = self.rule(b.axis_size, tree_unflatten(in_tree, flags), *tree_unflatten(in_tree, leaves))
            out_leaves, out_tree = leaves_of(out, f"output of the vmap rule of {self.__name__}")
            flag_leaves, flag_tree = tree_flatten(out_batched)
            if flag_tree != out_tree or len(out_leaves) != len(op.results):
                raise ValueError(located(f"custom_vmap rule of {self.__name__} returned output tree {out_tree} and "
                                         f"out_batched tree {flag_tree}; they must match the function's output"))
            return out_leaves, [bool(f) for f in flag_leaves]
        return call(self.fun, args, self.__name__, CallRules(batch=batch))


# ---- checkpoint ---------------------------------------------------------------------------------
# jax.checkpoint: the call's reverse pass recomputes its body from its inputs. A policy (JAX's
# signature: policy(prim, *operand types, **params) -> bool, `prim.name` the op's name) marks the
# body's ops whose results are saved instead: the reverse pass takes those from a copy of the body
# on the call's own inputs, which canonicalize's CSE merges with the forward pass (the call is
# inlined there), so they are the forward pass's values, kept alive until the reverse pass; the rest
# is recomputed from the barriered inputs. The body's top-level ops are what the policy sees (ops
# inside its loops, branches and nested calls are recomputed with them).

class Primitive(NamedTuple):
    """What a policy's first argument is: JAX's primitive, here by the graph-IR op's name
    ("name" for checkpoint_name, as JAX's name_p)."""
    name: str


NAME = Primitive("name")


def policy_params(op) -> dict:
    """The op's attributes as a policy reads them: dot_general's as JAX's dimension_numbers too."""
    params = dict(op.attrs)
    if op.name == "dot_general":
        params["dimension_numbers"] = ((tuple(op.attrs["lhs_contracting"]), tuple(op.attrs["rhs_contracting"])),
                                       (tuple(op.attrs["lhs_batch"]), tuple(op.attrs["rhs_batch"])))
    return params


def saveable(policy, op) -> bool:
    rules = CALL_RULES.get(op)
    operand_types = [v.type for v in (op.operands[1:] if op.name == "cond" else op.operands)]   # a call: its arguments
    if rules is not None and rules.name is not None:
        return bool(policy(NAME, *operand_types, name=rules.name))
    return bool(policy(Primitive(op.name), *operand_types, **policy_params(op)))


def saved_by_policy(region, inputs, policy) -> dict:
    """(id of each op of `region` the policy saves -> its results) of a copy of the region recorded
    on `inputs` (the forward pass's own values: CSE merges the copy with it)."""
    scope, saved = Scope(default=captured), {}
    scope.bind(region.params, inputs)
    with recomputation():
        for op in region.ops:
            results = emit(op, [scope.lookup(v) for v in op.operands], scope)
            scope.bind(op.results, results)
            if saveable(policy, op):
                saved[id(op)] = results
    return saved


def checkpoint_vjp(b, op, operands, outs, cts, prevent_cse=True, policy=None):
    """The body's reverse pass, recomputing its forward pass from its inputs (but what `policy`
    saves); with prevent_cse (JAX's default) read through an optimization_barrier: the passes cannot
    merge the recomputation with the forward pass, so the body's intermediate values live only
    within each pass."""
    (region,), outside, extra = b.closure_convert(op.regions)
    inputs = list(operands[1:]) + extra
    saved = saved_by_policy(region, inputs, policy) if policy is not None else None
    if prevent_cse and inputs:
        inputs = b.ops("optimization_barrier", inputs, {})
    input_cts = [ct if is_differentiable(x.type) else None
                 for ct, x in zip(b.vjp_region(region, inputs, cts, saved), inputs)]
    b.add_captured_cts(outside, input_cts[len(operands) - 1:])
    return [None] + input_cts[:len(operands) - 1]


def checkpoint(fun, prevent_cse=True, policy=None, static_argnums=()):
    """jax.checkpoint (remat): `fun` as one call whose reverse pass recomputes its body from its
    arguments instead of keeping its intermediate values (`checkpoint_vjp`), but those `policy`
    saves (checkpoint_policies). With prevent_cse=False the passes may share the recomputation with
    the forward pass (as XLA may in JAX)."""
    if policy is not None and not callable(policy):
        raise TypeError(located(f"checkpoint: policy must be a callable (one of checkpoint_policies), got {policy!r}"))
    rules = CallRules(vjp=functools.partial(checkpoint_vjp, prevent_cse=bool(prevent_cse), policy=policy),
                      lane_independent=True)

    @functools.wraps(fun)
    def remat(*args):
        nondiff, diff, full = split_nondiff(args, tuple(static_argnums))
        return call(lambda *xs: fun(*full(xs)), diff, "checkpoint", rules)
    return outside_jit(remat, static_argnums=tuple(static_argnums))


def checkpoint_name(x, name: str):
    """jax.ad_checkpoint.checkpoint_name: x (a pytree) named for checkpoint policies
    (save_only_these_names, ...): an identity call carrying the name."""
    if current_trace() is None:
        return x
    leaves, tree = tree_flatten(x)
    results = call(lambda *xs: xs, tuple(leaves), "checkpoint_name", CallRules(lane_independent=True, name=str(name)))
    for result, leaf in zip(results, leaves):   # the identity keeps weak types
        result.weak_type = getattr(leaf, "weak_type", False)
    return tree_unflatten(tree, results)


# ---- jax.checkpoint_policies ----------------------------------------------------------------------

def everything_saveable(*_, **__) -> bool:
    return True


def nothing_saveable(*_, **__) -> bool:
    return False


def dots_saveable(prim, *_, **__) -> bool:
    """Matrix products and convolutions."""
    return prim.name in ("dot_general", "conv_general_dilated")


def dots_with_no_batch_dims_saveable(prim, *_, **params) -> bool:
    if prim.name != "dot_general":
        return False
    _, (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch


def save_only_these_names(*names):
    """Only values named (checkpoint_name) with one of `names`."""
    names = frozenset(names)
    return lambda prim, *_, **params: prim.name == "name" and params["name"] in names


def save_any_names_but_these(*names):
    """Named values, but those with one of `names`."""
    names = frozenset(names)
    return lambda prim, *_, **params: prim.name == "name" and params["name"] not in names


def save_anything_except_these_names(*names):
    """Every value, but those named with one of `names`."""
    names = frozenset(names)
    return lambda prim, *_, **params: prim.name != "name" or params["name"] not in names


def save_from_both_policies(policy_1, policy_2):
    return lambda prim, *args, **params: bool(policy_1(prim, *args, **params)) or bool(policy_2(prim, *args, **params))


def offloading_not_supported(*_, **__):
    raise NotImplementedError(located("checkpoint_policies: offloading saved values to another memory is not "
                                      "supported (cdnajit has one memory space per device)"))


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable, nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable, checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_only_these_names=save_only_these_names, save_any_names_but_these=save_any_names_but_these,
    save_anything_except_these_names=save_anything_except_these_names,
    save_from_both_policies=save_from_both_policies,
    offload_dot_with_no_batch_dims=offloading_not_supported,
    save_and_offload_only_these_names=offloading_not_supported)
