"""Control flow with regions: while (cond and body regions) and cond (one region per branch).

fori_loop and scan are traced to `while`; lax.cond and lax.switch to `cond`.
"""
from ..opdef import define, fmt_types, require, set_rules
from ..types import INTS, TensorType
from .rules import is_differentiable


def while_infer(types, attrs, regions):
    cond, body = regions
    require(cond.param_types == types and body.param_types == types,
            f"while: cond and body parameters ({fmt_types(cond.param_types)}; {fmt_types(body.param_types)}) "
            f"must match the initial values ({fmt_types(types)})")
    require([str(t) for t in cond.output_types] == ["bool[]"],
            f"while: cond must yield one bool[], got ({fmt_types(cond.output_types)})")
    require(body.output_types == types,
            f"while: body yields ({fmt_types(body.output_types)}) but the loop carries ({fmt_types(types)})")
    return types


def while_loop(*init, regions):
    cond, body = regions
    carry = list(init)
    while bool(cond(*carry)[0]):
        carry = body(*carry)
    return tuple(carry)


define("while", infer=while_infer, reference=while_loop, num_regions=2,
       doc="regions: cond (carry -> bool[]), body (carry -> carry)")


def cond_infer(types, attrs, regions):
    require(len(types) >= 1, "cond needs an index operand")
    index, *operands = types
    require(index.shape == () and index.dtype in INTS, f"cond: the branch index must be an integer scalar, got {index}")
    outputs = regions[0].output_types
    for i, branch in enumerate(regions):
        require(branch.param_types == operands,
                f"cond: branch {i} takes ({fmt_types(branch.param_types)}) but the operands are ({fmt_types(operands)})")
        require(branch.output_types == outputs,
                f"cond: branch {i} yields ({fmt_types(branch.output_types)}) but branch 0 yields ({fmt_types(outputs)})")
    return outputs


def cond(index, *operands, regions):
    chosen = min(max(int(index), 0), len(regions) - 1)  # clamped, as lax.switch
    return tuple(regions[chosen](*operands))


define("cond", infer=cond_infer, reference=cond, num_regions=None,
       doc="operands: integer index (clamped to the branches), then the branches' operands")


# ---- transformation rules ---------------------------------------------------------------------
# Each rule makes a new control-flow op whose regions are the transformed old ones
# (ir/ops/rules.py: b.jvp_region, b.vjp_region, b.batch_region trace them). A carry or branch
# output of integer type has no tangent; others carry one, zero where nothing feeds it.

def differentiable_positions(types):
    return [i for i, t in enumerate(types) if is_differentiable(t)]


def with_tangents(b, primals, tangents, positions):
    """The primals, then the tangents of the differentiable ones (zeros where None)."""
    return list(primals) + [b.zeros_like(primals[i]) if tangents[i] is None else tangents[i] for i in positions]


def jvp_of_region(b, region, n, positions):
    """`region` taking (primals, tangents at `positions`) and giving (outputs, differentiable outputs' tangents)."""
    def body(params):
        tangents = [None] * n
        for i, t in zip(positions, params[n:]):
            tangents[i] = t
        outs, out_tangents = b.jvp_region(region, params[:n], tangents)
        out_positions = differentiable_positions(region.output_types)
        return with_tangents(b, outs, out_tangents, out_positions)
    types = region.param_types + [region.param_types[i] for i in positions]
    return b.trace_region(types, body)


def cond_jvp(b, op, primals, tangents, outs):
    index, operands = primals[0], primals[1:]
    positions = differentiable_positions([x.type for x in operands])
    regions = [jvp_of_region(b, r, len(operands), positions) for r in op.regions]
    results = b.ops("cond", [index] + with_tangents(b, operands, tangents[1:], positions), {}, regions)
    out_tangents = iter(results[len(outs):])
    return [next(out_tangents) if is_differentiable(o.type) else None for o in outs]


def cond_vjp(b, op, primals, outs, cts):
    """A cond of the branches' reverse passes (each recomputes its forward pass), taking the operands,
    what the branches read from outside, and the results' cotangents."""
    regions, outside, extra = b.closure_convert(op.regions)
    index, operands = primals[0], list(primals[1:]) + extra
    positions = differentiable_positions([o.type for o in outs])
    n = len(operands)

    def backward(region):
        def body(params):
            output_cts = [None] * len(outs)
            for i, ct in zip(positions, params[n:]):
                output_cts[i] = ct
            return b.vjp_region(region, params[:n], output_cts)
        return b.trace_region(region.param_types + [outs[i].type for i in positions], body)
    operand_cts = b.ops("cond", [index] + operands
                        + [b.zeros_like(outs[i]) if cts[i] is None else cts[i] for i in positions],
                        {}, [backward(r) for r in regions])
    differentiable = [is_differentiable(x.type) for x in operands]
    operand_cts = [ct if d else None for ct, d in zip(operand_cts, differentiable)]
    b.add_captured_cts(outside, operand_cts[len(primals) - 1:])
    return [None] + operand_cts[:len(primals) - 1]


def batched_outputs_of_branches(b, op, operands, batched):
    """Which results are batched in some branch (all branches then give them batched)."""
    flags = [False] * len(op.results)
    for region in op.regions:
        def probe(params, region=region):
            outs, out_flags = b.batch_region(region, params, batched)
            flags[:] = [f or g for f, g in zip(flags, out_flags)]
            return outs
        b.trace_region([x.type for x in operands], probe)
    return flags


def batch_branch(b, region, operands, batched, flags):
    def body(params):
        outs, out_flags = b.batch_region(region, params, batched)
        return [b.move_batch_to_front(o, f) if want else o for o, f, want in zip(outs, out_flags, flags)]
    return b.trace_region([x.type for x in operands], body)


def cond_batch(b, op, operands, batched):
    """An unbatched index: one cond of the batched branches. A batched index: every branch on the
    batch, each lane's result chosen by its index (as JAX)."""
    index, rest, rest_batched = operands[0], operands[1:], batched[1:]
    if not batched[0]:
        flags = batched_outputs_of_branches(b, op, rest, rest_batched)
        regions = [batch_branch(b, r, rest, rest_batched, flags) for r in op.regions]
        return b.ops("cond", [index, *rest], {}, regions), flags
    last = b.full((), len(op.regions) - 1, index.type.dtype)
    index = b.op("clamp", b.full((), 0, index.type.dtype), index, last)
    chosen = None
    for k, region in enumerate(op.regions):
        outs, flags = b.batch_region(region, rest, rest_batched)
        outs = [b.move_batch_to_front(o, f) for o, f in zip(outs, flags)]
        if chosen is None:
            chosen = outs
            continue
        hit = b.op("eq", index, b.full_like(index, k))
        chosen = [b.select(b.broadcast(hit, o.type.shape, (0,)), o, c) for o, c in zip(outs, chosen)]
    return chosen, [True] * len(chosen)


set_rules("cond", jvp=cond_jvp, vjp=cond_vjp, batch=cond_batch)


def while_jvp(b, op, primals, tangents, outs):
    """Forward mode of a loop (as JAX's): the differentiable carries' tangents carried beside them."""
    cond, body = op.regions
    n = len(primals)
    positions = differentiable_positions([x.type for x in primals])
    types = cond.param_types + [cond.param_types[i] for i in positions]
    new_cond = b.trace_region(types, lambda params: b.jvp_region(cond, params[:n], [None] * n)[0])
    new_body = jvp_of_region(b, body, n, positions)
    results = b.ops("while", with_tangents(b, primals, tangents, positions), {}, [new_cond, new_body])
    out_tangents = [None] * n
    for i, t in zip(positions, results[n:]):
        out_tangents[i] = t
    return out_tangents


def constant_of(value):
    """The scalar a constant (maybe converted, reshaped or broadcast) always gives `value`, else None."""
    producer = value.producer
    while producer is not None and producer.name in ("convert", "broadcast_in_dim", "reshape"):
        producer = producer.operands[0].producer
    if producer is None or producer.name != "constant" or producer.attrs["value"].size != 1:
        return None
    return producer.attrs["value"].reshape(()).item()


def static_trip_count(op):
    """(trip count, first counter value) of a fori_loop or scan with static bounds: carry 0 a counter
    starting at a constant, the body adding 1 to it, the cond comparing it `lt` a constant. Else None."""
    cond, body = op.regions
    test, step = cond.outputs[0].producer, body.outputs[0].producer if body.outputs else None
    if (not cond.params or test is None or test.name != "lt" or test.operands[0] is not cond.params[0]
            or step is None or step.name != "add" or step.operands[0] is not body.params[0]
            or constant_of(step.operands[1]) != 1):
        return None
    lower, upper = constant_of(op.operands[0]), constant_of(test.operands[1])
    if lower is None or upper is None:
        return None
    return max(0, int(upper) - int(lower)), int(lower)


def row(b, stack, t):
    """stack[t] (t an i64 scalar)."""
    zero = b.full((), 0, "i64")
    sliced = b.ops("dynamic_slice", [stack, t] + [zero] * (stack.type.ndim - 1),
                   {"slice_sizes": (1,) + stack.type.shape[1:]})[0]
    return b.reshape(sliced, stack.type.shape[1:])


def while_vjp(b, op, primals, outs, cts):
    """Reverse mode of a loop of static trip count T (fori_loop, scan): the loop again, storing each
    step's carries, then a loop from step T-1 down to 0 through the body's reverse pass (which
    recomputes that step's forward pass from its stored carries)."""
    counted = static_trip_count(op)
    if counted is None:
        raise NotImplementedError(
            "reverse-mode differentiation of a while_loop is not supported (as in JAX); fori_loop and scan "
            "with static bounds are. Use forward mode (jvp, jacfwd) for a while_loop")
    trips, lower = counted
    cond, body = op.regions
    (body,), outside, extra = b.closure_convert([body])
    n = len(primals)
    types = [x.type for x in primals]

    # The forward loop again, each step's carries stored in stacks of T rows.
    def store_body(params):
        carry, stacks = params[:n], params[n:]
        t = b.op("sub", b.convert(carry[0], "i64"), b.full((), lower, "i64"))
        zero = b.full((), 0, "i64")
        stacks = [b.ops("dynamic_update_slice", [s, b.reshape(c, (1,) + c.type.shape), t] + [zero] * c.type.ndim,
                        {})[0] for s, c in zip(stacks, carry)]
        return b.eval_region(body, list(carry) + extra) + stacks
    stack_types = [TensorType(t.dtype, (trips,) + t.shape) for t in types]
    store_cond = b.trace_region(types + stack_types, lambda params: b.eval_region(cond, params[:n]))
    stored = b.ops("while", list(primals) + [b.full(t.shape, 0, t.dtype) for t in stack_types], {},
                   [store_cond, b.trace_region(types + stack_types, store_body)])[n:]

    positions = differentiable_positions(types)
    extra_positions = differentiable_positions([x.type for x in extra])

    # The reverse loop: counter r = 0..T-1 for step T-1-r; the carries' cotangents; the cotangents of
    # what the body reads from outside, summed over the steps.
    def reverse_body(params):
        r, carry_cts, extra_cts = params[0], params[1:1 + len(positions)], params[1 + len(positions):]
        t = b.op("sub", b.full((), trips - 1, "i64"), r)
        carry = [row(b, s, t) for s in stored]
        output_cts = [None] * n
        for i, ct in zip(positions, carry_cts):
            output_cts[i] = ct
        step_cts = b.vjp_region(body, carry + extra, output_cts)
        summed = [b.add(acc, step_cts[n + j]) for acc, j in zip(extra_cts, extra_positions)]
        return [b.add(r, b.full((), 1, "i64"))] + [step_cts[i] for i in positions] + summed
    reverse_types = ([TensorType("i64", ())] + [types[i] for i in positions]
                     + [extra[j].type for j in extra_positions])
    reverse_cond = b.trace_region(reverse_types, lambda params: [b.op("lt", params[0], b.full((), trips, "i64"))])
    init = ([b.full((), 0, "i64")] + [b.zeros_like(outs[i]) if cts[i] is None else cts[i] for i in positions]
            + [b.zeros_like(extra[j]) for j in extra_positions])
    results = b.ops("while", init, {}, [reverse_cond, b.trace_region(reverse_types, reverse_body)])
    operand_cts = [None] * n
    for i, ct in zip(positions, results[1:1 + len(positions)]):
        operand_cts[i] = ct
    b.add_captured_cts([outside[j] for j in extra_positions], results[1 + len(positions):])
    return operand_cts


def while_batch(b, op, operands, batched):
    """The carries batched where the initial values or the body make them so. A batched predicate (lanes
    stop at different steps) runs the loop while any lane goes on, each lane keeping its carry once its
    predicate is false (as JAX)."""
    cond, body = op.regions
    flags = list(batched)
    lane_types = lambda: [TensorType(x.type.dtype, (b.axis_size,) + x.type.shape) if f and not g else x.type
                          for x, f, g in zip(operands, flags, batched)]
    while True:
        found = []
        b.trace_region(lane_types(), lambda params: probe(b, body, params, flags, found))
        widened = [f or g for f, g in zip(flags, found[0])]
        if widened == flags:
            break
        flags = widened
    found = []
    b.trace_region(lane_types(), lambda params: probe(b, cond, params, flags, found))
    if found[0][0]:
        flags = [True] * len(operands)
    carries = [b.move_batch_to_front(x, was) if f else x for x, f, was in zip(operands, flags, batched)]
    carry_types = [x.type for x in carries]

    def lane_outputs(region, params):
        outs, out_flags = b.batch_region(region, params, flags)
        return [b.move_batch_to_front(o, f) if want else o for o, f, want in zip(outs, out_flags, flags)]
    if not found[0][0]:
        new_cond = b.trace_region(carry_types, lambda params: b.batch_region(cond, params, flags)[0])
        new_body = b.trace_region(carry_types, lambda params: lane_outputs(body, params))
        return b.ops("while", carries, {}, [new_cond, new_body]), flags

    def predicate(params):
        (going,), (going_batched,) = b.batch_region(cond, params, flags)
        return b.move_batch_to_front(going, going_batched)

    def masked_body(params):
        going = predicate(params)
        return [b.select(b.broadcast(going, new.type.shape, (0,)), new, old)
                for new, old in zip(lane_outputs(body, params), params)]
    any_going = b.trace_region(carry_types, lambda params: [b.op("reduce", predicate(params), reducer="or", axes=(0,))])
    return b.ops("while", carries, {}, [any_going, b.trace_region(carry_types, masked_body)]), flags


def probe(b, region, params, flags, found):
    """Batch `region` once to learn which outputs come out batched (recorded in `found`)."""
    outs, out_flags = b.batch_region(region, params, flags)
    found.append(out_flags)
    return outs


set_rules("while", jvp=while_jvp, vjp=while_vjp, batch=while_batch)


# ---- optimization_barrier -----------------------------------------------------------------------
# The identity on its operands, as lax.optimization_barrier: canonicalize neither folds nor CSEs it
# and fusion never groups it, so what is computed from its results is not shared with what is
# computed from its operands (checkpoint's recomputation stays apart from the forward pass).
# passes/remove_barriers.py replaces it by its operands after fusion, before anything runs.

def barrier_infer(types, attrs, regions):
    return list(types)


def optimization_barrier(*operands):
    return tuple(operands)


define("optimization_barrier", infer=barrier_infer, reference=optimization_barrier,
       doc="its operands unchanged; the passes do not optimize across it (removed after fusion)")


def through_barrier(b, values):
    """values (None where absent) with the present ones through one barrier of their own."""
    given = [v for v in values if v is not None]
    barriered = iter(b.ops("optimization_barrier", given, {}) if given else ())
    return [None if v is None else next(barriered) for v in values]


def barrier_jvp(b, op, primals, tangents, outs):
    """The tangents kept apart as the primals are (JAX's rule)."""
    return through_barrier(b, tangents)


def barrier_vjp(b, op, primals, outs, cts):
    """The cotangents kept apart (the JVP's transpose)."""
    return through_barrier(b, cts)


def barrier_batch(b, op, operands, batched):
    return b.ops("optimization_barrier", operands, {}), list(batched)


set_rules("optimization_barrier", jvp=barrier_jvp, vjp=barrier_vjp, batch=barrier_batch)
