"""Unrolling the devices: a per-device (SPMD) program over a mesh becomes one program over every
device's values, which the pipeline compiles as any other.

The per-device module's parameters and results are one device's shards; its collectives are
`library_call ccl.*` in their per-device form (one operand, `axes` naming the mesh axes the group
spans, libs/ccl/routines.py). Unrolled, every value has one copy per device (device k of the mesh's
row-major order), the module takes each parameter's copies in device order (parameter 0 of every
device, then parameter 1, ...) and returns each result's copies the same way; each op is repeated
per device, and each collective becomes one call per group: the devices that share their
coordinates on the mesh's other axes, in row-major order of the named axes, each call taking the
group's operands and giving each device its result. `ccl.axis_index` becomes each device's constant.
A while or cond whose regions hold a collective runs in lockstep (`unroll`'s `lockstep`): one op
over every device's values, its regions unrolled in turn.

Under MPI a process unrolls only its own devices (`local`). A collective whose group holds devices of
other processes becomes the local members' part (their all-reduce, their operands stacked or the
root's operand: CROSS_PROCESS_PARTS) and an `io_callback` running the part between processes
(frontend/sharding.py: ProcessCollectives): an effect, so every process runs its collectives once
each, in program order, and the processes' messages meet.
"""
from __future__ import annotations

import math

import numpy as np

from typing import Callable

from ..ir.core import Module, Op, Region, Value, make_op


class Mesh:
    """The mesh's shape as the unrolling needs it: axis names and sizes, devices row-major."""

    def __init__(self, names: tuple[str, ...], sizes: tuple[int, ...]):
        self.names, self.sizes = tuple(names), tuple(sizes)
        self.coords = list(np.ndindex(*self.sizes)) if self.sizes else [()]

    @property
    def count(self) -> int:
        return math.prod(self.sizes)

    def axes_of(self, op: Op) -> list[int]:
        axes = [a for a in op.attrs["axes"].split(",") if a]
        unknown = [a for a in axes if a not in self.names]
        if unknown:
            raise ValueError(f"ccl.{op.attrs['routine']} names mesh axes {unknown} the mesh {self.names} lacks")
        return [self.names.index(a) for a in axes]

    def groups(self, axes: list[int]) -> list[list[int]]:
        """The devices of each group spanning `axes`, each in row-major order of those axes."""
        groups: dict[tuple, list[tuple[tuple, int]]] = {}
        for device, coord in enumerate(self.coords):
            rest = tuple(c for a, c in enumerate(coord) if a not in axes)
            groups.setdefault(rest, []).append((tuple(coord[a] for a in axes), device))
        return [[device for _, device in sorted(members)] for members in groups.values()]

    def position(self, device: int, axes: list[int]) -> int:
        coord = self.coords[device]
        position = 0
        for a in axes:
            position = position * self.sizes[a] + coord[a]
        return position


def is_collective(op: Op) -> bool:
    return op.name == "library_call" and op.attrs.get("library") == "ccl"


def holds_collective(region: Region) -> bool:
    return any(is_collective(op) or any(holds_collective(r) for r in op.regions) for op in region.ops)


def clone_region(region: Region, env: dict) -> Region:
    params = [Value(p.type) for p in region.params]
    env.update(zip(region.params, params))
    ops = [clone_op(op, env) for op in region.ops]
    return Region(params, ops, [env[v] for v in region.outputs])


def clone_op(op: Op, env: dict) -> Op:
    copy = make_op(op.name, [env[v] for v in op.operands], op.attrs, [r.type for r in op.results],
                   [clone_region(r, env) for r in op.regions], op.location)
    env.update(zip(op.results, copy.results))
    return copy


# across(op, group, members) -> the registry id of the host function that runs collective `op` of
# `group` (mesh positions, group order) between processes, given the local members' part.
CrossProcess = Callable[[Op, list[int], list[int]], int]


def unroll(module: Module, mesh: Mesh, lockstep: bool = False, local: list[int] | None = None,
           across: CrossProcess | None = None) -> Module:
    """The program over the devices `local` of `mesh` (mesh positions; all of them by default) that
    runs `module` on each (module docstring). `lockstep`: whether a while or cond whose regions hold
    a collective may run as one op over every device's values, taking the first device's predicate or
    branch index, which the caller guarantees equal on every device (the partitioner replicates
    them); else such an op is NotImplementedError. `across` makes the collectives whose groups reach
    devices outside `local`."""
    envs = {device: {} for device in (range(mesh.count) if local is None else local)}
    params = []
    for p in module.params:
        for env in envs.values():
            env[p] = Value(p.type)
            params.append(env[p])
    ops = unroll_ops(module.body.ops, envs, Unrolling(mesh, lockstep, across))
    outputs = [env[v] for v in module.outputs for env in envs.values()]
    return Module(module.name, Region(params, ops, outputs))


class Unrolling:
    """What unrolling a block needs besides its ops and the devices' environments."""

    def __init__(self, mesh: Mesh, lockstep: bool, across: CrossProcess | None):
        self.mesh, self.lockstep, self.across = mesh, lockstep, across


def unroll_ops(block: list[Op], envs: dict[int, dict], how: Unrolling) -> list[Op]:
    ops, mesh = [], how.mesh
    for op in block:
        if any(holds_collective(r) for r in op.regions):
            if not how.lockstep or op.name not in ("while", "cond"):
                raise NotImplementedError(f"a collective inside {op.name}'s body (control flow of a per-device "
                                          f"program) is not supported")
            ops.append(in_lockstep(op, envs, how))
            continue
        if not is_collective(op):
            ops.extend(clone_op(op, env) for env in envs.values())
            continue
        axes = mesh.axes_of(op)
        if op.attrs["routine"] == "axis_index":
            for device, env in envs.items():
                constant = make_op("constant", [], {"value": np.array(mesh.position(device, axes), np.int32)},
                                   [op.result.type], (), op.location)
                env[op.result] = constant.result
                ops.append(constant)
            continue
        if op.attrs["routine"] == "reduce":
            raise NotImplementedError("ccl.reduce has no per-device form (its result is the root's only)")
        for group in mesh.groups(axes):
            if len(group) != op.attrs["group_size"]:
                raise ValueError(f"ccl.{op.attrs['routine']}: group_size {op.attrs['group_size']}, but mesh axes "
                                 f"{op.attrs['axes']!r} span {len(group)} devices")
            members = [d for d in group if d in envs]
            if len(members) == len(group):
                call = make_op(op.name, [envs[d][op.operands[0]] for d in group], op.attrs,
                               [op.results[0].type] * len(group), (), op.location)
                for device, result in zip(group, call.results):
                    envs[device][op.result] = result
                ops.append(call)
            elif members:
                ops.extend(between_processes(op, group, members, envs, how))
    return ops


# A collective between processes: what the local members contribute (an op list making one value
# from their operands) and how many results the host step gives them (one shared, or one each).
def local_all_reduce(op, operands):
    if len(operands) == 1:
        return [], operands[0]
    attrs = {**op.attrs, "routine": "all_reduce", "group_size": len(operands)}
    call = make_op(op.name, operands, attrs, [operands[0].type] * len(operands), (), op.location)
    return [call], call.results[0]


def local_stack(op, operands):
    """The members' operands stacked along a new leading axis (members, ...)."""
    t = operands[0].type
    rows = [make_op("reshape", [x], {"new_sizes": (1,) + t.shape}, [t.with_shape((1,) + t.shape)], (), op.location)
            for x in operands]
    if len(rows) == 1:
        return rows, rows[0].result
    stacked = make_op("concatenate", [r.result for r in rows], {"dimension": 0},
                      [t.with_shape((len(rows),) + t.shape)], (), op.location)
    return rows + [stacked], stacked.result


def first_operand(op, operands):
    return [], operands[0]


CROSS_PROCESS_PARTS = {   # routine -> (the local part, results per member of the host step)
    "all_reduce": (local_all_reduce, "shared"),
    "all_gather": (local_stack, "shared"),
    "reduce_scatter": (local_all_reduce, "each"),
    "broadcast": (first_operand, "shared"),   # the root's process sends its operand, the others' is ignored
    "all_to_all": (local_stack, "each"),   # each block sent to its destination's process
    "ppermute": (local_stack, "each"),
}


def between_processes(op: Op, group: list[int], members: list[int], envs: dict[int, dict], how: Unrolling) -> list[Op]:
    routine = op.attrs["routine"]
    if how.across is None or routine not in CROSS_PROCESS_PARTS:
        raise NotImplementedError(f"ccl.{routine} between devices of different processes is not supported "
                                  f"(supported: {', '.join(CROSS_PROCESS_PARTS)})")
    local_part, results = CROSS_PROCESS_PARTS[routine]
    ops, contribution = local_part(op, [envs[d][op.operands[0]] for d in members])
    result_type = op.results[0].type
    count = len(members) if results == "each" else 1
    attrs = {"callback": how.across(op, group, members), "num_results": count}
    for k in range(count):
        attrs[f"result{k}_dtype"], attrs[f"result{k}_shape"] = result_type.dtype, result_type.shape
    step = make_op("io_callback", [contribution], attrs, [result_type] * count, (), op.location)
    for k, device in enumerate(members):
        envs[device][op.result] = step.results[k if results == "each" else 0]
    return ops + [step]


def every_device(values, envs: dict[int, dict]) -> list[Value]:
    """Each device's copies of `values`, device by device."""
    return [env[v] for env in envs.values() for v in values]


def unroll_region(region: Region, envs: dict[int, dict], how: Unrolling, first_output_only: bool = False) -> Region:
    """`region` over every device's values (parameters and outputs device by device); with
    `first_output_only`, its output is the first device's (a while's predicate)."""
    params = []
    for env in envs.values():
        env.update({p: Value(p.type) for p in region.params})
        params.extend(env[p] for p in region.params)
    ops = unroll_ops(region.ops, envs, Unrolling(how.mesh, True, how.across))
    first = next(iter(envs.values()))
    outputs = [first[v] for v in region.outputs] if first_output_only else every_device(region.outputs, envs)
    return Region(params, ops, outputs)


def in_lockstep(op: Op, envs: dict[int, dict], how: Unrolling) -> Op:
    """A while or cond over every device's values at once, so that the collectives in its regions
    meet every device in the same iteration or branch."""
    if op.name == "while":
        cond, body = op.regions
        operands = every_device(op.operands, envs)
        regions = [unroll_region(cond, envs, how, first_output_only=True), unroll_region(body, envs, how)]
    else:
        index, *rest = op.operands
        operands = [next(iter(envs.values()))[index]] + every_device(rest, envs)
        regions = [unroll_region(r, envs, how) for r in op.regions]
    types = [r.type for _ in envs for r in op.results]
    copy = make_op(op.name, operands, op.attrs, types, regions, op.location)
    count = len(op.results)
    for k, env in enumerate(envs.values()):
        env.update(zip(op.results, copy.results[k * count:(k + 1) * count]))
    return copy
