"""What a compiled program's schedule does, as a reader sees it: how often each kernel launches in a
call, and the schedule as text (`compiled.as_text("schedule")`).

    launches_per_call(module)   # per kernel op, in schedule order: "1", "300", "per iteration", ...
    schedule_text(executable)   # the native schedule's steps and arena, loops, in-place updates

A `while` has a known trip count when it is a counted loop, as `fori_loop` traces: a carry that
starts at a constant, grows by a constant step each iteration, and is compared (`lt`) with a
constant in the condition. Its body's kernels launch that many times per run of the loop, its
condition's kernels once more; a kernel in a loop of unknown trip count launches "per iteration",
one in a branch "at most" its count.
"""
from __future__ import annotations

import numpy as np

from ..codegen.native_schedule import direct_kernels, schedule_layout, side_by_side
from ..ir.core import Module, Op, Region, Value
from ..ir.types import format_bytes
from ..lowering.emitters import HOST_OPS

# ---- trip counts ----------------------------------------------------------------------------------


def scalar_form(value: Value, carries: dict, bindings: dict):
    """A scalar integer value as a small tree over the loop's carries: ("carry", k), ("const", n),
    or (op name, forms...) for add, sub and lt; None when it is anything else. `bindings` maps a
    fusion region's parameters to the values they stand for (and those values' own bindings)."""
    if id(value) in bindings:
        outer, outer_bindings = bindings[id(value)]
        return scalar_form(outer, carries, outer_bindings)
    if id(value) in carries:
        return ("carry", carries[id(value)])
    op = value.producer
    if op is None or value.type.shape != ():
        return None
    if op.name == "constant":
        constant = np.asarray(op.attrs["value"])
        return ("const", int(constant.reshape(-1)[0])) if constant.dtype.kind in "iub" else None
    if op.name == "fusion":
        region = op.regions[0]
        inner = {id(param): (operand, bindings) for param, operand in zip(region.params, op.operands)}
        return scalar_form(region.outputs[[id(r) for r in op.results].index(id(value))], carries, inner)
    if op.name in ("add", "sub", "lt"):
        forms = [scalar_form(operand, carries, bindings) for operand in op.operands]
        return None if None in forms else (op.name, *forms)
    return None


def trip_count(op: Op) -> int | None:
    """The iterations of a counted `while` (see the module's docstring), else None."""
    cond, body = op.regions
    compare = scalar_form(cond.outputs[0], {id(p): k for k, p in enumerate(cond.params)}, {})
    if not compare or compare[0] != "lt" or compare[1][0] != "carry" or compare[2][0] != "const":
        return None
    k, bound = compare[1][1], compare[2][1]
    start = scalar_form(op.operands[k], {}, {})
    step = scalar_form(body.outputs[k], {id(body.params[k]): k}, {})
    if start is None or start[0] != "const" or step is None or step[0] != "add":
        return None
    increments = [form[1] for form in step[1:] if form[0] == "const"]
    if ("carry", k) not in step[1:] or len(increments) != 1 or increments[0] <= 0:
        return None
    return max(0, -(-(bound - start[1]) // increments[0]))


def launches_per_call(module: Module) -> list[str]:
    """How often each kernel op (in schedule order, runtime/executable.py's kernel_ops) launches in
    one call: a count, "at most" a count inside a branch, or "per iteration" inside a loop of
    unknown trip count."""
    counts = []

    def visit(region: Region, times: int | None, branch: bool) -> None:
        for op in region.ops:
            if op.name == "while":
                trips = trip_count(op) if times is not None else None
                cond, body = op.regions
                visit(cond, None if trips is None else times * (trips + 1), branch)
                visit(body, None if trips is None else times * trips, branch)
            elif op.name in HOST_OPS:
                for inner in op.regions:
                    visit(inner, times, True)
            elif needs_kernel(op):
                counts.append("per iteration" if times is None else f"at most {times}" if branch else str(times))
    visit(module.body, 1, False)
    return counts


# Ops the schedule runs as views of their operand (every array it holds is C-contiguous): a
# bitcast, as in XLA.
ALIAS_OPS = frozenset({"reshape"})


def needs_kernel(op: Op) -> bool:
    return op.name not in HOST_OPS and op.name not in ALIAS_OPS and any(v.type.size for v in op.results)


# ---- the schedule as text --------------------------------------------------------------------------

def launch_text(dims) -> str:
    """A launch shape without its trailing 1s: 256, 16x16."""
    dims = list(dims)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return "x".join(map(str, dims))


def slots_text(slots) -> str:
    return ", ".join(f"s{slot}" for slot in slots)


def schedule_text(executable) -> str:
    """The native schedule of an executable (codegen/native_schedule.py): its arena, each step with
    the slots it reads and writes (s0, s1, ...: the executable's values), kernel launches with
    their grid, whether they run on the worker pool, are linked into the schedule (inlined) or
    update their first operand in place; launches that run together, as one job of the pool; loops
    with their carries; which results are copied."""
    plan = executable.plan
    kernels = plan["kernels"]
    layout = schedule_layout(plan["body"], plan["outputs"], plan["slots"], plan["kernels"], plan["donated"])
    direct = frozenset(direct_kernels(plan["body"], kernels))
    lines = [f"schedule @{plan['name']}({slots_text(plan['body']['params'])}): {len(kernels)} kernels, "
             f"one native function; arena {format_bytes(layout.arena_bytes)}"]
    for constant in plan["constants"]:
        lines.append(f"  s{constant['slot']} = constant {constant['dtype']}{constant['shape']}")

    def step_lines(step: dict, indent: str, together: bool = False) -> None:
        kind = step["op"]
        if kind == "kernel":
            kernel = kernels[step["kernel"]]
            results = slots_text(slot for slot, _, _ in step["results"])
            how = ["in place on s%d" % step["inputs"][0]] if step["in_place"] else []
            how += ["in the job" if together else "worker pool" if kernel["parallel"]
                    else "inlined" if step["kernel"] in direct else "this thread"]
            grid = f"{launch_text(kernel['grid'])} x {launch_text(kernel['workgroup_size'])}"
            lines.append(f"{indent}{results} = launch {kernel['name']}({slots_text(step['inputs'])})  "
                         f"grid {grid}; {', '.join(how)}")
        elif kind == "allocate":
            lines.append(f"{indent}{slots_text(s for s, _, _ in step['results'])} = allocate (empty)")
        elif kind == "reshape":
            lines.append(f"{indent}s{step['result']} = view of s{step['input']} as {step['shape']}")
        elif kind == "callback":
            lines.append(f"{indent}s{step['results'][0][0]} = host callback {step['callback']}"
                         f"({slots_text(step['inputs'])})")
        else:
            if kind == "while":
                carries = ", ".join(f"s{p}: {c.kind}" for p, c in zip(step["body"]["params"], layout.carries[id(step)]))
                lines.append(f"{indent}loop carries {carries}")
                head = f"while ({slots_text(step['operands'])})"
                blocks = [("cond", step["cond"]), ("body", step["body"])]
            else:
                head = f"cond s{step['index']} ({slots_text(step['operands'])})"
                blocks = [(f"branch {i}", block) for i, block in enumerate(step["branches"])]
            lines.append(f"{indent}{slots_text(step['results'])} = {head} {{")
            for name, block in blocks:
                lines.append(f"{indent}  {name}({slots_text(block['params'])}):")
                block_lines(block["steps"], indent + "    ")
                lines.append(f"{indent}    yield {slots_text(block['outputs'])}")
            lines.append(f"{indent}}}")

    def block_lines(steps: list[dict], indent: str) -> None:
        for run in side_by_side(steps, kernels):
            if len(run) > 1:
                lines.append(f"{indent}together, one job of the worker pool:")
            for k in run:
                step_lines(steps[k], indent + "  " * (len(run) > 1), together=len(run) > 1)

    block_lines(plan["body"]["steps"], "  ")
    outputs = ", ".join(f"s{slot}" + (" (copied)" if output.copied_from is not None else
                                      " (the donated array)" if output.param is not None else "")
                        for (slot, _, _), output in zip(plan["outputs"], layout.outputs))
    lines.append(f"  return {outputs}")
    return "\n".join(lines) + "\n"
