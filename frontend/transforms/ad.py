"""Automatic differentiation as graph-IR transformations: forward mode by the op table's `jvp` rules,
reverse mode by its `vjp` rules, and JAX's differentiation API on top.

`jvp_region` walks a traced region once, recording each op and, where an operand has a tangent, the
op's JVP rule. `vjp_region` records the region's ops (the forward pass), then walks them backward
from the outputs' cotangents through each op's VJP rule, adding up each value's cotangent. Values
of integer or bool type have no tangent (JAX's float0): the rules give them none, and the API gives
float0 zeros for them, as JAX (arrays of no data, never in a traced program: jit passes them around
it). Only values that depend on a differentiated input are walked backward.
"""
from __future__ import annotations

import numpy as np

from ...ir.ops.rules import is_differentiable
from ...ir.types import NUMPY_DTYPES
from ..dtypes import float0, is_float0
from ..pytree import tree_flatten, tree_map, tree_unflatten
from ..tracing import Tracer, located
from .core import (Scope, builder, captured, captured_values, emit, eval_region, leaves_of, outside_jit, recomputed,
                   rule_for, trace_function)


def rule_of(op, kind: str):
    rule = rule_for(op, kind)
    if rule is None:
        mode = "forward-mode" if kind == "jvp" else "reverse-mode"
        raise NotImplementedError(f"{mode} differentiation of {op.name} is not supported (at {op.location})")
    return rule


# ---- forward mode ----------------------------------------------------------------------------

def jvp_region(region, primals, tangents, primal_scope=None, tangent_scope=None):
    """Record `region` on `primals` and its tangent for `tangents` (None: zero); returns
    (outputs, output tangents)."""
    values = primal_scope.child() if primal_scope else Scope(default=captured)
    derivs = tangent_scope.child() if tangent_scope else Scope(default=lambda v: None)
    values.bind(region.params, primals)
    derivs.bind(region.params, tangents)
    # The rules' regions recompute what the op emitted on the primals computes (core.py).
    b = builder(values, jvp_region=recomputed(lambda r, p, t: jvp_region(r, p, t, values, derivs)),
                eval_region=recomputed(lambda r, operands: eval_region(r, operands, values)))
    for op in region.ops:
        operands = [values.lookup(v) for v in op.operands]
        operand_tangents = [derivs.lookup(v) for v in op.operands]
        outs = emit(op, operands, values)
        values.bind(op.results, outs)
        captures_tangents = op.regions and any(derivs.lookup(v) is not None for v in captured_values(op.regions))
        if any(t is not None for t in operand_tangents) or captures_tangents:
            out_tangents = rule_of(op, "jvp")(b, op, operands, operand_tangents, outs)
            derivs.bind(op.results, [t if is_differentiable(r.type) else None
                                     for t, r in zip(out_tangents, op.results)])
    return [values.lookup(v) for v in region.outputs], [derivs.lookup(v) for v in region.outputs]


# ---- reverse mode ----------------------------------------------------------------------------

def forward_pass(region, primals, scope=None, saved=None):
    """Record `region` on `primals`; returns (outputs, backward) where backward(output cotangents)
    records the reverse pass and returns the parameters' cotangents (None: zero). `saved` (id of an
    op of the region -> its results): values computed already, used instead of recording those ops
    (a checkpoint policy's saved values); their rules still run in the reverse pass."""
    values = scope.child() if scope else Scope(default=captured)
    values.bind(region.params, primals)
    active = {id(p) for p, x in zip(region.params, primals) if is_differentiable(x.type)}
    walked = []
    for op in region.ops:
        operands = [values.lookup(v) for v in op.operands]
        outs = saved[id(op)] if saved and id(op) in saved else emit(op, operands, values)
        values.bind(op.results, outs)
        reads = op.operands + (captured_values(op.regions) if op.regions else [])
        if any(id(v) in active for v in reads):
            walked.append((op, operands, outs))
            active.update(id(r) for r in op.results if is_differentiable(r.type))

    def backward(output_cts):
        cts: dict[int, Tracer] = {}

        def add(value, ct):
            if ct is not None and id(value) in active:
                cts[id(value)] = b.add(cts.get(id(value)), ct)
        b = builder(values, vjp_region=recomputed(lambda r, p, c, saved=None: vjp_region(r, p, c, values, saved)),
                    eval_region=recomputed(lambda r, operands: eval_region(r, operands, values)),
                    add_captured_cts=lambda outside, outside_cts: [add(v, c) for v, c in zip(outside, outside_cts)])
        for value, ct in zip(region.outputs, output_cts):
            add(value, ct)
        for op, operands, outs in reversed(walked):
            result_cts = [cts.pop(id(r), None) for r in op.results]
            if all(ct is None for ct in result_cts):
                continue
            for value, ct in zip(op.operands, rule_of(op, "vjp")(b, op, operands, outs, result_cts)):
                add(value, ct)
        return [cts.get(id(p)) for p in region.params]
    return [values.lookup(v) for v in region.outputs], backward


def vjp_region(region, primals, output_cts, scope=None, saved=None):
    """The parameters' cotangents of `region` at `primals` (zeros filled in), forward pass included
    (but the `saved` ops': see forward_pass)."""
    _, backward = forward_pass(region, primals, scope, saved)
    b = builder()
    return b.zeros_if_none(backward(output_cts), primals)


# ---- the API ---------------------------------------------------------------------------------

def dtype_of(leaf) -> np.dtype:
    return leaf.dtype if isinstance(leaf, (Tracer, np.ndarray, np.generic)) else np.asarray(leaf).dtype


def has_tangents(dtype: np.dtype) -> bool:
    return np.issubdtype(dtype, np.inexact)


def check_tangent_tree(name, primals, tangents):
    """JAX's checks of jvp's tangents: the primals' tree and shapes, and float0 tangents exactly for the
    integer and bool primals."""
    p_leaves, p_tree = tree_flatten(primals)
    t_leaves, t_tree = tree_flatten(tangents)
    if p_tree != t_tree:
        raise TypeError(located(f"{name}: primal and tangent arguments to {name} do not match; dtypes must be equal, "
                                f"or in case of int/bool primal dtype the tangent dtype must be float0. Got primal "
                                f"tree {p_tree} and tangent tree {t_tree}"))
    for p, t in zip(p_leaves, t_leaves):
        p_dtype, t_dtype = dtype_of(p), dtype_of(t)
        if has_tangents(p_dtype) == (t_dtype == float0):
            expected = "float0" if t_dtype != float0 else f"{p_dtype.name} (the primal dtype)"
            raise TypeError(located(f"primal and tangent arguments to jax.{name} do not match; dtypes must be equal, "
                                    f"or in case of int/bool primal dtype the tangent dtype must be float0. Got primal "
                                    f"dtype {p_dtype.name} and so looking for tangent dtype {expected}, but got "
                                    f"tangent dtype {'float0' if t_dtype == float0 else t_dtype.name} instead."))
        p_shape, t_shape = tuple(getattr(p, "shape", ())), tuple(getattr(t, "shape", ()))
        if p_shape != t_shape:
            raise ValueError(located(f"{name} called with different primal and tangent shapes; got primal shape "
                                     f"{p_shape} and tangent shape as {t_shape}"))


def api_tangents(values, likes):
    """The tangents (or cotangents) the API returns: float0 zeros for integer and bool `likes`, zeros of
    the like's type for the others' None."""
    b = builder()
    return [np.zeros(like.shape, float0) if not is_differentiable(like.type) else b.zeros_like(like) if v is None
            else v for v, like in zip(values, likes)]


def float0_as_bool(tree):
    """`tree` with its float0 leaves as bool zeros: what carries no data enters a traced function as the
    smallest array of its shape (the transformations give integer and bool values no tangent anyway)."""
    return tree_map(lambda leaf: np.zeros(leaf.shape, bool) if is_float0(leaf) else leaf, tree)


def jvp(fun, primals, tangents, has_aux=False):
    """jax.jvp: (fun(*primals), the directional derivative along tangents); integer and bool primals take
    float0 tangents, and integer and bool outputs have float0 tangents."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(located(f"primal and tangent arguments to jax.jvp must be tuples or lists; found "
                                f"{type(primals).__name__} and {type(tangents).__name__}."))
    check_tangent_tree("jvp", tuple(primals), tuple(tangents))
    return checked_jvp(fun, tuple(primals), float0_as_bool(tuple(tangents)), has_aux)


@outside_jit(static_argnums=(0, 3))
def checked_jvp(fun, primals, tangents, has_aux):
    p_leaves, in_tree = leaves_of(tuple(primals), "primal")
    t_leaves, _ = leaves_of(tuple(tangents), "tangent")
    region, out_tree = trace_function(fun, p_leaves, in_tree, "the function given to jvp")
    outs, out_tangents = jvp_region(region, p_leaves, [t if is_differentiable(p.type) else None
                                                       for p, t in zip(p_leaves, t_leaves)])
    out_tangents = api_tangents(out_tangents, outs)
    out, out_t = tree_unflatten(out_tree, outs), tree_unflatten(out_tree, out_tangents)
    if has_aux:
        (out, aux), (out_t, _) = out, out_t
        return out, out_t, aux
    return out, out_t


def linearize(fun, *primals):
    """jax.linearize: (fun(*primals), f_jvp) with f_jvp(*tangents) the JVP at primals."""
    return forward(fun, primals, False), lambda *tangents: jvp(fun, primals, tangents)[1]


def vjp(fun, *primals, has_aux=False):
    """jax.vjp: (fun(*primals), vjp_fun[, aux]) with vjp_fun(cotangent) the primals' cotangents."""
    out = forward(fun, primals, has_aux)

    def vjp_fun(cotangent):
        return pullback(fun, primals, float0_as_bool(cotangent), has_aux)
    return (out[0], vjp_fun, out[1]) if has_aux else (out, vjp_fun)


@outside_jit(static_argnums=(0, 2))
def forward(fun, primals, has_aux):
    return fun(*primals)


@outside_jit(static_argnums=(0, 3))
def pullback(fun, primals, cotangent, has_aux):
    p_leaves, in_tree = leaves_of(tuple(primals), "primal")
    region, out_tree = trace_function(fun, p_leaves, in_tree, "the function given to vjp")
    outs, backward = forward_pass(region, p_leaves)
    if has_aux:
        out_tree = out_tree.children[0]
        outs = outs[:out_tree.num_leaves]
    ct_leaves, ct_tree = leaves_of(cotangent, "cotangent")
    if ct_tree != out_tree:
        raise TypeError(located(f"Tree structure of cotangent input {ct_tree}, does not match structure of "
                                f"primal output {out_tree}."))
    for out, ct in zip(outs, ct_leaves):
        if out.shape != ct.shape:
            raise ValueError(located(f"Shape of cotangent input to vjp pullback function {ct.shape} must be the "
                                     f"same as the shape of corresponding primal input {out.shape}."))
    b = builder()
    cts = backward([b.convert(ct, out.type.dtype) if is_differentiable(out.type) else None
                    for ct, out in zip(ct_leaves, outs)] + [None] * (len(region.outputs) - len(outs)))
    return tree_unflatten(in_tree, api_tangents(cts, p_leaves))


def argnums_tuple(argnums, nargs, name):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not -nargs <= i < nargs:
            raise TypeError(located(f"{name}: argnums={argnums} but the function was called with only {nargs} "
                                    f"positional argument(s)"))
    return nums


def require_inexact_inputs(leaves, allow_int, name="grad"):
    for leaf in leaves:
        if not is_differentiable(leaf.type) and not allow_int:
            raise TypeError(located(
                f"{name} requires real- or complex-valued inputs (input dtype that is a sub-dtype of np.inexact), "
                f"but got {leaf.dtype.name}. If you want to use Boolean- or integer-valued inputs, use vjp or set "
                f"allow_int to True."))


def require_scalar_output(out_leaves, out_tree, holomorphic):
    if len(out_leaves) != 1 or out_tree.kind != "leaf":
        raise TypeError(located(f"Gradient only defined for scalar-output functions. Output was {out_tree}."))
    (out,) = out_leaves
    if out.shape != ():
        raise TypeError(located(f"Gradient only defined for scalar-output functions. Output had shape: "
                                f"{out.shape}."))
    require_real_output(out, holomorphic, "grad")


def require_real_output(out, holomorphic, name):
    if out.type.dtype not in ("f16", "bf16", "f32", "f64") and not holomorphic:
        raise TypeError(located(f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
                                f"np.floating), but got {out.dtype.name}. For holomorphic differentiation, pass "
                                f"holomorphic=True. For differentiation of non-holomorphic functions involving "
                                f"complex outputs, use jax.vjp directly."))


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """jax.value_and_grad: fun's value and its gradient with respect to the arguments `argnums`."""
    def value_and_grad_fun(*args, **kwargs):
        nums = argnums_tuple(argnums, len(args), "value_and_grad")
        chosen = tuple(args[i] for i in nums)
        d_leaves, d_tree = leaves_of(chosen, "differentiated argument")
        require_inexact_inputs(d_leaves, allow_int)

        def of_chosen(*xs):
            full = list(args)
            for i, x in zip(nums, xs):
                full[i] = x
            return fun(*full, **kwargs)
        region, out_tree = trace_function(of_chosen, d_leaves, d_tree, f"the function given to grad")
        outs, backward = forward_pass(region, d_leaves)
        value_tree = out_tree.children[0] if has_aux else out_tree
        if has_aux and (out_tree.kind not in ("tuple", "list") or len(out_tree.children) != 2):
            raise TypeError(located("has_aux=True requires the function to return a pair (output, auxiliary data)"))
        count = value_tree.num_leaves
        require_scalar_output(outs[:count], value_tree, holomorphic)
        b = builder()
        cts = api_tangents(backward([b.full_like(outs[0], 1)] + [None] * (len(outs) - 1)), d_leaves)
        grads = tree_unflatten(d_tree, cts)
        grads = grads[0] if isinstance(argnums, int) else grads
        value = tree_unflatten(out_tree, outs)
        return ((value[0], value[1]), grads) if has_aux else (value, grads)
    return outside_jit(value_and_grad_fun)


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """jax.grad: the gradient of scalar-valued `fun` with respect to the arguments `argnums`."""
    value_and_grad_fun = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    def grad_fun(*args, **kwargs):
        (value, grads) = value_and_grad_fun(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads
    grad_fun.__name__ = f"grad_{getattr(fun, '__name__', 'fun')}"
    return grad_fun


# ---- Jacobians -------------------------------------------------------------------------------

def basis(leaf):
    """The standard basis of leaf's space: an identity of leaf.size stacked as (size, *leaf.shape)."""
    n = leaf.type.size
    eye = np.eye(n, dtype=NUMPY_DTYPES[leaf.type.dtype]).reshape((n,) + leaf.shape)
    return builder().op("constant", value=eye)


def stacked_to_jacobian(stacked, out_shape, in_shape, stack_first_is_input):
    """A vmapped JVP's (n_in, *out) or VJP's (n_out, *in) stack as the Jacobian (*out, *in); float0
    (an integer input's or output's) as float0 zeros of that shape."""
    if is_float0(stacked):
        return np.zeros(tuple(out_shape) + tuple(in_shape), float0)
    b = builder()
    if stack_first_is_input:   # (n_in, *out) -> (*out, n_in) -> (*out, *in)
        moved = b.transpose(stacked, list(range(1, stacked.type.ndim)) + [0])
        return b.reshape(moved, tuple(out_shape) + tuple(in_shape))
    return b.reshape(stacked, tuple(out_shape) + tuple(in_shape))


def chosen_args(fun, args, argnums, has_aux=False):
    """(the differentiated arguments as a tuple, fun of them alone, its auxiliary data or None):
    with has_aux, fun's output is a pair and the function differentiated is its first part."""
    nums = argnums_tuple(argnums, len(args), "jacobian")

    def of_chosen(*xs):
        full = list(args)
        for i, x in zip(nums, xs):
            full[i] = x
        out = fun(*full)
        if has_aux and not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(located("has_aux=True requires the function to return a pair (output, auxiliary data)"))
        return out[0] if has_aux else out
    chosen = tuple(args[i] for i in nums)
    return chosen, of_chosen, (fun(*args)[1] if has_aux else None)


def with_aux(jacobian, aux, has_aux):
    return (jacobian, aux) if has_aux else jacobian


def jacobian_tree(out_tree, in_tree, blocks, argnums):
    """blocks[j][i]: d out leaf j / d in leaf i, as JAX nests them: the output's tree of the inputs'."""
    in_part = lambda row: (lambda tree: tree[0] if isinstance(argnums, int) else tree)(tree_unflatten(in_tree, row))
    return tree_unflatten(out_tree, [in_part(row) for row in blocks])


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """jax.jacfwd: the Jacobian by forward mode, one vmapped JVP over each input's basis."""
    from .batching import vmap

    def jacobian(*args):
        xs, of_chosen, aux = chosen_args(fun, args, argnums, has_aux)
        x_leaves, in_tree = leaves_of(xs, "differentiated argument")
        require_inexact_inputs(x_leaves, False, "jacfwd")
        columns, out_tree, outs = [], None, None
        for i, leaf in enumerate(x_leaves):
            def push(t, i=i):
                tangents = [t if k == i else builder().zeros_like(x) for k, x in enumerate(x_leaves)]
                return jvp(of_chosen, tuple(tree_unflatten(in_tree, x_leaves)), tuple(tree_unflatten(in_tree, tangents)))
            out, stacked = vmap(push, out_axes=(None, 0))(basis(leaf))
            out_leaves, out_tree = tree_flatten(out)
            outs = out_leaves
            columns.append([stacked_to_jacobian(s, o.shape, leaf.shape, True)
                            for s, o in zip(tree_flatten(stacked)[0], out_leaves)])
        blocks = [[columns[i][j] for i in range(len(x_leaves))] for j in range(len(outs))]
        return with_aux(jacobian_tree(out_tree, in_tree, blocks, argnums), aux, has_aux)
    return outside_jit(jacobian)


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """jax.jacrev: the Jacobian by reverse mode, one vmapped VJP over each output's basis."""
    from .batching import vmap

    def jacobian(*args):
        xs, of_chosen, aux = chosen_args(fun, args, argnums, has_aux)
        x_leaves, in_tree = leaves_of(xs, "differentiated argument")
        require_inexact_inputs(x_leaves, allow_int, "jacrev")
        out = of_chosen(*xs)
        out_leaves, out_tree = leaves_of(out, "output")
        for o in out_leaves:
            require_real_output(o, holomorphic, "jacrev")
        blocks = []
        for j, o in enumerate(out_leaves):
            def pull(ct, j=j):
                cts = [ct if k == j else builder().zeros_like(y) for k, y in enumerate(out_leaves)]
                return pullback(of_chosen, xs, tree_unflatten(out_tree, cts), False)
            stacked = tree_flatten(vmap(pull)(basis(o)))[0]
            blocks.append([stacked_to_jacobian(s, o.shape, x.shape, False) for s, x in zip(stacked, x_leaves)])
        return with_aux(jacobian_tree(out_tree, in_tree, blocks, argnums), aux, has_aux)
    return outside_jit(jacobian)


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """jax.hessian: jacfwd of jacrev."""
    return jacfwd(jacrev(fun, argnums, has_aux), argnums, has_aux)
