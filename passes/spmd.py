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
"""
from __future__ import annotations

import math

import numpy as np

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


def unroll(module: Module, mesh: Mesh, lockstep: bool = False) -> Module:
    """The program over every device of `mesh` that runs `module` on each (module docstring).
    `lockstep`: whether a while or cond whose regions hold a collective may run as one op over every
    device's values, taking device 0's predicate or branch index, which the caller guarantees equal
    on every device (the partitioner replicates them); else such an op is NotImplementedError."""
    envs = [{} for _ in range(mesh.count)]
    params = []
    for p in module.params:
        for env in envs:
            env[p] = Value(p.type)
            params.append(env[p])
    ops = unroll_ops(module.body.ops, envs, mesh, lockstep)
    outputs = [env[v] for v in module.outputs for env in envs]
    return Module(module.name, Region(params, ops, outputs))


def unroll_ops(block: list[Op], envs: list[dict], mesh: Mesh, lockstep: bool) -> list[Op]:
    ops = []
    for op in block:
        if any(holds_collective(r) for r in op.regions):
            if not lockstep or op.name not in ("while", "cond"):
                raise NotImplementedError(f"a collective inside {op.name}'s body (control flow of a per-device "
                                          f"program) is not supported")
            ops.append(in_lockstep(op, envs, mesh))
            continue
        if not is_collective(op):
            ops.extend(clone_op(op, env) for env in envs)
            continue
        axes = mesh.axes_of(op)
        if op.attrs["routine"] == "axis_index":
            for device, env in enumerate(envs):
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
            call = make_op(op.name, [envs[d][op.operands[0]] for d in group], op.attrs,
                           [op.results[0].type] * len(group), (), op.location)
            for device, result in zip(group, call.results):
                envs[device][op.result] = result
            ops.append(call)
    return ops


def every_device(values, envs: list[dict]) -> list[Value]:
    """Each device's copies of `values`, device by device."""
    return [env[v] for env in envs for v in values]


def unroll_region(region: Region, envs: list[dict], mesh: Mesh, first_output_only: bool = False) -> Region:
    """`region` over every device's values (parameters and outputs device by device); with
    `first_output_only`, its output is device 0's (a while's predicate)."""
    params = []
    for env in envs:
        env.update({p: Value(p.type) for p in region.params})
        params.extend(env[p] for p in region.params)
    ops = unroll_ops(region.ops, envs, mesh, True)
    outputs = [envs[0][v] for v in region.outputs] if first_output_only else every_device(region.outputs, envs)
    return Region(params, ops, outputs)


def in_lockstep(op: Op, envs: list[dict], mesh: Mesh) -> Op:
    """A while or cond over every device's values at once, so that the collectives in its regions
    meet every device in the same iteration or branch."""
    if op.name == "while":
        cond, body = op.regions
        operands = every_device(op.operands, envs)
        regions = [unroll_region(cond, envs, mesh, first_output_only=True), unroll_region(body, envs, mesh)]
    else:
        index, *rest = op.operands
        operands = [envs[0][index]] + every_device(rest, envs)
        regions = [unroll_region(r, envs, mesh) for r in op.regions]
    types = [r.type for _ in envs for r in op.results]
    copy = make_op(op.name, operands, op.attrs, types, regions, op.location)
    count = len(op.results)
    for device, env in enumerate(envs):
        env.update(zip(op.results, copy.results[device * count:(device + 1) * count]))
    return copy
