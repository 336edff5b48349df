"""vmap as a graph-IR transformation: the op table's `batch` rules.

The function is traced on one lane's arguments (the mapped axis removed); `batch_region` then walks
that region, recording each op on the whole batch: an op none of whose operands is batched is
recorded as it is, once for every lane; any other goes through its batch rule, where a batched value
carries the batch as its leading dimension. in_axes move the mapped axes first, out_axes move the
batch where the caller wants it.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import float0, is_float0
from ..pytree import LEAF, TreeDef, tree_flatten, tree_unflatten
from ..tracing import Tracer, as_tracer, current_trace, located
from .core import CALL_RULES, CallRules, Scope, builder, captured, captured_values, emit, outside_jit, rule_for, trace_function


def batch_region(region, operands, batched, axis_size, scope=None, flags=None):
    """Record `region` on `operands` (those flagged batched have the batch leading); returns
    (outputs, their batched flags)."""
    values = scope.child() if scope else Scope(default=captured)
    lanes = flags.child() if flags else Scope(default=lambda v: False)
    values.bind(region.params, operands)
    lanes.bind(region.params, batched)
    b = builder(values, axis_size=axis_size,
                batch_region=lambda r, o, f: batch_region(r, o, f, axis_size, values, lanes))
    for op in region.ops:
        operands_ = [values.lookup(v) for v in op.operands]
        flags_ = [lanes.lookup(v) for v in op.operands]
        if any(flags_) or any(captures_batched(r, lanes) for r in op.regions):
            rule = rule_for(op, "batch")
            if rule is None:
                raise NotImplementedError(f"vmap of {op.name} is not supported (at {op.location})")
            outs, out_flags = rule(b, op, operands_, flags_)
            if op in CALL_RULES and CALL_RULES[op].batch is None and outs:   # cond's rule made a call op
                rules = CALL_RULES[op]
                CALL_RULES[outs[0].value.producer] = rules if rules.lane_independent else UNSUPPORTED_BATCHED_CALL
        else:
            outs, out_flags = emit(op, operands_, values), [False] * len(op.results)
        values.bind(op.results, outs)
        lanes.bind(op.results, out_flags)
    return [values.lookup(v) for v in region.outputs], [lanes.lookup(v) for v in region.outputs]


def differentiate_batched_call(*args):
    raise NotImplementedError("differentiation of a vmapped custom_jvp or custom_vjp function is not supported; "
                              "apply vmap to the differentiated function instead (vmap(grad(f)))")


UNSUPPORTED_BATCHED_CALL = CallRules(jvp=differentiate_batched_call, vjp=differentiate_batched_call)


def captures_batched(region, lanes: Scope) -> bool:
    return any(lanes.lookup(v) for v in captured_values([region]))


def broadcast_prefix(axes, tree: TreeDef, what: str) -> list:
    """One axis (or None) per leaf of `tree`, from `axes` given as a prefix of the tree (as JAX)."""
    if axes is None or isinstance(axes, int):
        return [axes] * tree.num_leaves
    axes_leaves, axes_tree = tree_flatten(axes)
    if isinstance(axes, (tuple, list, dict)) and tree.kind in ("tuple", "list", "dict", "namedtuple"):
        children = axes if not isinstance(axes, dict) else [axes[k] for k in tree.aux] if set(axes) == set(tree.aux) else None
        if children is not None and len(children) == len(tree.children):
            return [a for child, sub in zip(children, tree.children) for a in broadcast_prefix(child, sub, what)]
    raise ValueError(located(f"vmap {what} specification must be a tree prefix of the corresponding value, got "
                             f"specification {axes!r} for value tree {tree}."))


def move_axis(b, x, source, target):
    order = [d for d in range(x.type.ndim) if d != source]
    order.insert(target, source)
    return b.transpose(x, order)


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """jax.vmap: `fun` mapped over the axes `in_axes` of its arguments, the results stacked on `out_axes`."""
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (in_axes is None or isinstance(in_axes, (int, tuple, dict))):
        raise TypeError(f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional "
                        f"arguments passed to the function, but got {in_axes}.")

    def mapped(*args):
        # float0 arguments (the tangents of integer values) have no data: they are not traced, the
        # function sees float0 zeros of one lane's shape.
        leaves, in_tree = tree_flatten(args)
        leaves = [leaf if is_float0(leaf) else as_tracer(leaf, "argument of vmap") for leaf in leaves]
        (args_tree,) = [in_tree]
        axes = broadcast_prefix(in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
                                if not isinstance(in_axes, dict) else in_axes, args_tree, "in_axes")
        sizes = {}
        for i, (leaf, axis) in enumerate(zip(leaves, axes)):
            if axis is not None:
                if not -leaf.ndim <= axis < max(leaf.ndim, 1) or leaf.ndim == 0:
                    raise ValueError(located(f"vmap was requested to map its argument along axis {axis}, which "
                                             f"implies that its rank should be at least {axis + 1 if axis >= 0 else -axis}, "
                                             f"but is only {leaf.ndim} (its shape is {leaf.shape})"))
                sizes[i] = leaf.shape[axis % leaf.ndim]
        size_set = set(sizes.values()) | ({axis_size} if axis_size is not None else set())
        if not size_set:
            raise ValueError(located("vmap must have at least one non-None value in in_axes"))
        if len(size_set) > 1:
            lines = "\n".join(f"  argument leaf {i} of type {type_name(leaves[i])} had size {n} for axis {axes[i]}"
                              for i, n in sizes.items())
            raise ValueError(located(f"vmap got inconsistent sizes for array axes to be mapped:\n{lines}"))
        (size,) = size_set
        b = builder(axis_size=size)
        traced = [i for i, leaf in enumerate(leaves) if not is_float0(leaf)]
        lanes = [leaf if not is_float0(leaf) or axes[i] is None
                 else np.zeros(np.delete(leaf.shape, axes[i] % leaf.ndim), float0) for i, leaf in enumerate(leaves)]
        moved = [leaves[i] if axes[i] is None else move_axis(b, leaves[i], axes[i] % leaves[i].ndim, 0) for i in traced]
        lane_leaves = [lane_aval(x) if axes[i] is not None else x for x, i in zip(moved, traced)]
        float0_outputs = {}   # output position -> one lane's float0 array (no data: no op makes it)

        def lane_fun(*traced_lanes):
            for i, lane in zip(traced, traced_lanes):
                lanes[i] = lane
            out_leaves, tree = tree_flatten(fun(*tree_unflatten(in_tree, lanes)))
            float0_outputs.update((i, leaf) for i, leaf in enumerate(out_leaves) if is_float0(leaf))
            return tree_unflatten(tree, [False if is_float0(leaf) else leaf for leaf in out_leaves])
        region, out_tree = trace_function(lane_fun, lane_leaves, tree_flatten(tuple(traced))[1],
                                          "the function given to vmap")
        outs, flags = batch_region(region, moved, [axes[i] is not None for i in traced], size)
        out_axes_list = broadcast_prefix(out_axes, out_tree, "out_axes")
        results = []
        for i, (out, flag, axis) in enumerate(zip(outs, flags, out_axes_list)):
            if i in float0_outputs:   # batched as JAX's: the batch axis inserted at out_axes
                lane = float0_outputs[i]
                results.append(lane if axis is None else
                               np.moveaxis(np.zeros((size, *lane.shape), float0), 0, axis % (lane.ndim + 1)))
                continue
            if axis is None:
                if flag:
                    raise ValueError(located("vmap has mapped output but out_axes is None"))
                results.append(out)
                continue
            out = b.move_batch_to_front(out, flag)
            results.append(move_axis(b, out, 0, axis % out.type.ndim))
        return tree_unflatten(out_tree, results)
    mapped.__name__ = f"vmap_{getattr(fun, '__name__', 'fun')}"
    return outside_jit(mapped)


def type_name(leaf) -> str:
    return str(leaf.type) if isinstance(leaf, Tracer) else f"float0{list(leaf.shape)}"


def lane_aval(x: Tracer) -> Tracer:
    """A stand-in with one lane's type (the leading batch dimension dropped), for tracing."""
    from ...ir.core import Value
    from ...ir.types import TensorType
    return Tracer(Value(TensorType(x.type.dtype, x.shape[1:])), current_trace(), x.weak_type)
