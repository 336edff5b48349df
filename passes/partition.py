"""Partitioning: a program over global arrays, some of its parameters sharded over a mesh, becomes the
per-device (SPMD) program each device runs on its shards, with the collectives (`library_call
ccl.*` in their per-device form) that make its results the unpartitioned program's. GSPMD's first
cases: data parallelism, and the row- and column-split matrix products of a Megatron MLP.
passes/spmd.py then unrolls the devices.

A sharding is a spec per dimension: the tuple of mesh axes the dimension is split over, row-major
(() replicated), as jax.sharding.PartitionSpec. Walking the ops in order, each value gets a local
value and a spec; an op's rule picks its result's spec and reshards operands that do not fit:
  - elementwise (operands of the result's shape): the first sharded operand's spec, the others
    resharded to it;
  - broadcast_in_dim, transpose: the operand's dims carry their specs to the dims they become;
  - reshape: a sharded dim k keeps its spec where the dims before it are unchanged and the new
    dim k is a multiple of its devices (each device's block is the same range of elements); else
    the op runs replicated;
  - reduce: the local reduce, then an all-reduce over the axes of the reduced sharded dims;
  - slice, dynamic_slice, concatenate: dims taken whole (the concatenated dim: never) keep their
    specs and the op runs on each device's block; the other dims are gathered first;
  - gather: the indices' batch dims and the operand's dims taken whole keep their specs (an
    embedding lookup stays split along the batch and the features); the indexed dims are gathered;
  - dot_general: batch dims sharded alike stay sharded, free dims keep their specs, contracting
    dims sharded alike on both sides give partial products and an all-reduce (sum) over their
    axes (Megatron's row split); contracting dims sharded unlike are gathered first;
  - conv_general_dilated: the batch and output-feature dims keep their specs, input features
    sharded alike on both sides are partial convolutions and an all-reduce; spatial dims gathered;
  - constant, iota: replicated;
  - while (fori_loop, scan), cond: the regions partitioned as the program is, the carries keeping
    their initial specs (the body's outputs resharded to them) and the predicate and branch index
    replicated, so that every device takes the same path (passes/spmd.py runs the devices' loops
    in lockstep when a body holds a collective);
  - anything else (and other ops with regions): every operand gathered, the op replicated on every
    device, with a warning naming it: slower, never wrong;
  - `ccl.sharding_constraint` (lax.with_sharding_constraint): its operand resharded to its spec;
  - shard_map (ir/ops/sharding.py): its per-device function inlined, operands resharded to its
    in_specs, results sharded as its out_specs.
Resharding gathers a dim whose axes change (`ccl.all_gather` along it, moved to axis 0 and back)
and then slices a dim newly sharded (each device's block, at `ccl.axis_index` times the block).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..ir.core import Module, Op, Region, Value, make_op
from ..ir.opdef import infer_types
from ..ir.ops.sharding import mesh_sizes, spec_of_text, specs_of_text
from ..ir.types import TensorType
from .opclasses import ELEMENTWISE
from .spmd import clone_op, holds_collective

REPLICATED_WARNING = "partitioning: {what}; it runs replicated on every device (its operands gathered)"


class Partitioner:
    def __init__(self, names: tuple[str, ...], sizes: tuple[int, ...]):
        self.sizes = dict(zip(names, sizes))
        self.ops: list[Op] = []
        self.location = None
        self.warned: set[str] = set()   # the replicated ops' warnings given

    def devices_of(self, axes) -> int:
        return math.prod(self.sizes[a] for a in axes)

    def local_type(self, t: TensorType, spec) -> TensorType:
        return TensorType(t.dtype, tuple(d // self.devices_of(axes) for d, axes in zip(t.shape, spec)))

    def emit(self, name: str, operands, **attrs) -> Value:
        types = infer_types(name, [v.type for v in operands], attrs)
        op = make_op(name, operands, attrs, types, (), self.location)
        self.ops.append(op)
        return op.result

    def collective(self, routine: str, operands, axes, **attrs) -> Value:
        if self.devices_of(axes) == 1 and routine in ("all_reduce", "all_gather"):
            return operands[0]   # a group of one device: the collective is its operand
        return self.emit("library_call", operands, library="ccl", routine=routine, solution="", axes=",".join(axes),
                         group_size=self.devices_of(axes), **attrs)

    def scalar(self, value: int) -> Value:
        return self.emit("constant", [], value=np.array(value, np.int32))

    def moved(self, x: Value, k: int, to: int) -> Value:
        """x with dim k moved to position `to`."""
        if k == to:
            return x
        order = [d for d in range(x.type.ndim) if d != k]
        order.insert(to, k)
        return self.emit("transpose", [x], permutation=tuple(order))

    def gather(self, x: Value, k: int, axes) -> Value:
        front = self.moved(x, k, 0)
        whole = self.collective("all_gather", [front], axes)
        order = list(range(1, x.type.ndim))
        order.insert(k, 0)
        return whole if k == 0 else self.emit("transpose", [whole], permutation=tuple(order))

    def block(self, x: Value, k: int, axes) -> Value:
        size = x.type.shape[k] // self.devices_of(axes)
        start = self.emit("mul", [self.collective("axis_index", [], axes), self.scalar(size)])
        starts = [start if d == k else self.scalar(0) for d in range(x.type.ndim)]
        sizes = tuple(size if d == k else n for d, n in enumerate(x.type.shape))
        return self.emit("dynamic_slice", [x, *starts], slice_sizes=sizes)

    def reshard(self, x: Value, have, want, global_type: TensorType) -> Value:
        for k, axes in enumerate(want):
            if axes and global_type.shape[k] % self.devices_of(axes):
                raise ValueError(f"a sharding of {global_type} over mesh axes {axes} ({self.devices_of(axes)} "
                                 f"devices) does not divide its dimension {k} ({global_type.shape[k]})")
        have = list(have)
        for k, (old, new) in enumerate(zip(have, want)):
            if old and old != new:
                x, have[k] = self.gather(x, k, old), ()
        for k, (old, new) in enumerate(zip(have, want)):
            if new and not old:
                x = self.block(x, k, new)
        return x


def replicated(t: TensorType) -> tuple:
    return ((),) * t.ndim


def used_axes(spec) -> list[str]:
    return [a for axes in spec for a in axes]


def partition(module: Module, names, sizes, param_specs, out_specs=None) -> tuple[Module, list]:
    """(the per-device module, its results' specs) of `module` whose parameters are sharded as
    `param_specs`; `out_specs` (None, or a spec or None per result) fixes the results' shardings."""
    p = Partitioner(tuple(names), tuple(sizes))
    body, specs = partition_region(p, module.body, {}, param_specs, out_specs)
    return Module(module.name, body), specs


def partition_region(p: Partitioner, region: Region, env: dict, param_specs, out_specs) -> tuple[Region, list]:
    """(the per-device region, its outputs' specs) of `region` whose parameters are sharded as
    `param_specs`; `env` maps the values it may capture from outside to their (local value, spec)."""
    outer, p.ops = p.ops, []
    params = []
    for value, spec in zip(region.params, param_specs):
        local = Value(p.local_type(value.type, spec))
        params.append(local)
        env[value] = (local, tuple(spec))

    def operand(v: Value, want) -> Value:
        local, have = env[v]
        return p.reshard(local, have, want, v.type)

    def run_replicated(op: Op, why: str):
        if why not in p.warned:
            p.warned.add(why)
            warnings.warn(REPLICATED_WARNING.format(what=why), stacklevel=4)
        scope = {v: operand(v, replicated(v.type)) for v in free_values(op, env)}
        p.ops.append(clone_op(op, scope))
        for result in op.results:
            env[result] = (scope[result], replicated(result.type))

    for op in region.ops:
        p.location = op.location
        rule = RULES.get(op.name)
        if op.name == "library_call" and op.attrs.get("routine") == "sharding_constraint" \
                and op.attrs.get("library") == "ccl":
            (x,) = op.operands
            spec = spec_of_text(op.attrs["spec"], x.type.ndim)
            env[op.result] = (operand(x, spec), spec)
        elif op.name in ELEMENTWISE and not op.regions:
            elementwise(p, op, env, operand)
        elif op.name in REGION_RULES:
            REGION_RULES[op.name](p, op, env, operand)
        elif rule is not None and not op.regions:
            if not rule(p, op, env, operand):
                run_replicated(op, f"{op.name} of {', '.join(str(v.type) for v in op.operands)} with these shardings "
                                   f"is not partitioned")
        else:
            run_replicated(op, f"{op.name} is not partitioned")
    wanted = out_specs or [None] * len(region.outputs)
    outputs, specs = [], []
    for value, want in zip(region.outputs, wanted):
        spec = env[value][1] if want is None else tuple(want)
        outputs.append(operand(value, spec))
        specs.append(spec)
    partitioned, p.ops = Region(params, p.ops, outputs), outer
    return partitioned, specs


def free_values(op: Op, env) -> list[Value]:
    """The values of `env` an op reads, its regions' captures included."""
    found, seen = [], set()

    def visit(o: Op):
        for v in o.operands:
            if v in env and v not in seen:
                seen.add(v)
                found.append(v)
        for region in o.regions:
            for inner in region.ops:
                visit(inner)
            for v in region.outputs:
                if v in env and v not in seen:
                    seen.add(v)
                    found.append(v)
    visit(op)
    return found


def elementwise(p: Partitioner, op: Op, env, operand):
    full = [v for v in op.operands if v.type.shape == op.result.type.shape]
    specs = [env[v][1] for v in full if any(env[v][1])]
    want = specs[0] if specs else replicated(op.result.type)
    locals_ = [operand(v, want) if v.type.shape == op.result.type.shape else operand(v, replicated(v.type))
               for v in op.operands]
    env[op.result] = (p.emit(op.name, locals_, **op.attrs), want)


def source(p: Partitioner, op: Op, env, operand) -> bool:
    env[op.result] = (p.emit(op.name, [], **op.attrs), replicated(op.result.type))
    return True


def broadcast_in_dim(p: Partitioner, op: Op, env, operand) -> bool:
    (x,) = op.operands
    local, spec = env[x]
    dims, shape = op.attrs["broadcast_dimensions"], op.attrs["shape"]
    result = [()] * len(shape)
    for i, d in enumerate(dims):
        if spec[i] and x.type.shape[i] != shape[d]:
            return False
        result[d] = spec[i]
    local_shape = tuple(n // p.devices_of(axes) for n, axes in zip(shape, result))
    env[op.result] = (p.emit("broadcast_in_dim", [local], shape=local_shape, broadcast_dimensions=dims), tuple(result))
    return True


def transpose(p: Partitioner, op: Op, env, operand) -> bool:
    local, spec = env[op.operands[0]]
    permutation = op.attrs["permutation"]
    env[op.result] = (p.emit("transpose", [local], permutation=permutation), tuple(spec[d] for d in permutation))
    return True


def reshape(p: Partitioner, op: Op, env, operand) -> bool:
    (x,) = op.operands
    local, spec = env[x]
    old, new = x.type.shape, tuple(op.attrs["new_sizes"])
    sharded = [k for k, axes in enumerate(spec) if axes]
    result = [()] * len(new)
    if len(sharded) > 1:
        return False
    if sharded:
        # Row-major, device b's block of dim k is one contiguous range of the dims from k on; with
        # the dims before k unchanged, it is device b's block of the new dim k when that dim divides.
        k = sharded[0]
        if old[:k] != new[:k] or k >= len(new) or new[k] % p.devices_of(spec[k]):
            return False
        result[k] = spec[k]
    local_shape = tuple(n // p.devices_of(axes) for n, axes in zip(new, result))
    env[op.result] = (p.emit("reshape", [local], new_sizes=local_shape), tuple(result))
    return True


def reduce(p: Partitioner, op: Op, env, operand) -> bool:
    (x,) = op.operands
    local, spec = env[x]
    reduced = op.attrs["axes"]
    value = p.emit("reduce", [local], **op.attrs)
    axes = [a for d in reduced for a in spec[d]]
    if axes:
        value = p.collective("all_reduce", [value], axes, reducer=op.attrs["reducer"])
    env[op.result] = (value, tuple(s for d, s in enumerate(spec) if d not in reduced))
    return True


def dot_general(p: Partitioner, op: Op, env, operand) -> bool:
    lhs, rhs = op.operands
    a = op.attrs
    lspec, rspec = list(env[lhs][1]), list(env[rhs][1])
    partial = []
    for i, j in zip(a["lhs_contracting"], a["rhs_contracting"]):
        if lspec[i] == rspec[j]:
            partial += list(lspec[i])
        else:
            lspec[i] = rspec[j] = ()
    for i, j in zip(a["lhs_batch"], a["rhs_batch"]):
        rspec[j] = lspec[i]
    lhs_free = [i for i in range(lhs.type.ndim) if i not in a["lhs_contracting"] and i not in a["lhs_batch"]]
    rhs_free = [j for j in range(rhs.type.ndim) if j not in a["rhs_contracting"] and j not in a["rhs_batch"]]
    taken = set(partial) | set(used_axes([lspec[i] for i in a["lhs_batch"]])) | set(used_axes(lspec[i] for i in lhs_free))
    for j in rhs_free:   # a mesh axis splits one dim of the result only
        if set(rspec[j]) & taken:
            rspec[j] = ()
        taken |= set(rspec[j])
    for i in lhs_free:
        if set(lspec[i]) & set(partial):
            lspec[i] = ()
    result_spec = tuple([lspec[i] for i in a["lhs_batch"]] + [lspec[i] for i in lhs_free] + [rspec[j] for j in rhs_free])
    if len(used_axes(result_spec) + partial) != len(set(used_axes(result_spec) + partial)):
        return False
    value = p.emit("dot_general", [operand(lhs, tuple(lspec)), operand(rhs, tuple(rspec))], **a)
    if partial:
        value = p.collective("all_reduce", [value], partial, reducer="sum")
    env[op.result] = (value, result_spec)
    return True


def kept_where(spec, unchanged) -> tuple:
    """`spec` with the dims that are not `unchanged` (a predicate of the dim) replicated."""
    return tuple(axes if unchanged(k) else () for k, axes in enumerate(spec))


def slice_(p: Partitioner, op: Op, env, operand) -> bool:
    (x,) = op.operands
    a = op.attrs
    spec = kept_where(env[x][1], lambda k: (a["start_indices"][k], a["limit_indices"][k], a["strides"][k])
                      == (0, x.type.shape[k], 1))
    local = operand(x, spec)
    limits = tuple(n if axes else hi for n, axes, hi in zip(local.type.shape, spec, a["limit_indices"]))
    env[op.result] = (p.emit("slice", [local], start_indices=a["start_indices"], limit_indices=limits,
                             strides=a["strides"]), spec)
    return True


def dynamic_slice(p: Partitioner, op: Op, env, operand) -> bool:
    x, *starts = op.operands
    # A dim taken whole starts at 0 whatever its index (starts are clamped into the operand).
    spec = kept_where(env[x][1], lambda k: op.attrs["slice_sizes"][k] == x.type.shape[k])
    local = operand(x, spec)
    indices = [operand(v, ()) for v in starts]
    sizes = tuple(n if axes else size for n, axes, size in zip(local.type.shape, spec, op.attrs["slice_sizes"]))
    env[op.result] = (p.emit("dynamic_slice", [local, *indices], slice_sizes=sizes), spec)
    return True


def concatenate(p: Partitioner, op: Op, env, operand) -> bool:
    dim = op.attrs["dimension"]
    specs = [env[v][1] for v in op.operands if any(env[v][1])]
    spec = kept_where(specs[0] if specs else replicated(op.result.type), lambda k: k != dim)
    env[op.result] = (p.emit("concatenate", [operand(v, spec) for v in op.operands], dimension=dim), spec)
    return True


def gather(p: Partitioner, op: Op, env, operand) -> bool:
    """result[b..., rest...] = x[indices[b...], rest...] (ir/ops/shape.py): the indices' batch dims and
    x's dims taken whole (`rest`) keep their specs, as an embedding table split along its features
    and token ids split along the batch do; x's indexed dims and the indices' last are gathered
    (a mesh axis the indices' batch dims use is taken from x's dims: one axis splits one dim)."""
    x, indices = op.operands
    k = indices.type.shape[-1]
    index_spec = env[indices][1][:-1] + ((),)
    taken = set(used_axes(index_spec))
    x_spec = tuple(() if d < k or set(axes) & taken else axes for d, axes in enumerate(env[x][1]))
    local = p.emit("gather", [operand(x, x_spec), operand(indices, index_spec)])
    env[op.result] = (local, index_spec[:-1] + x_spec[k:])
    return True


def emit_with_regions(p: Partitioner, op: Op, operands, regions, specs, env):
    """A copy of `op` over local operands and partitioned regions; its results get `specs`."""
    types = infer_types(op.name, [v.type for v in operands], op.attrs, regions)
    local = make_op(op.name, operands, op.attrs, types, regions, p.location)
    p.ops.append(local)
    for result, value, spec in zip(op.results, local.results, specs):
        env[result] = (value, tuple(spec))


def while_(p: Partitioner, op: Op, env, operand):
    """The carries keep their initial values' specs: the body's parameters have them and its
    outputs are resharded to them (a fixed point by construction); cond's predicate is replicated,
    so every device takes the same number of iterations."""
    specs = [env[v][1] for v in op.operands]
    cond, body = op.regions
    local_cond, _ = partition_region(p, cond, env, specs, [()])
    local_body, _ = partition_region(p, body, env, specs, specs)
    emit_with_regions(p, op, [operand(v, s) for v, s in zip(op.operands, specs)], [local_cond, local_body], specs, env)


def cond_(p: Partitioner, op: Op, env, operand):
    """The branch index replicated; every branch's parameters get the operands' specs and its
    outputs the first branch's."""
    index, *rest = op.operands
    specs = [env[v][1] for v in rest]
    first, out_specs = partition_region(p, op.regions[0], env, specs, None)
    branches = [first] + [partition_region(p, r, env, specs, out_specs)[0] for r in op.regions[1:]]
    emit_with_regions(p, op, [operand(index, ())] + [operand(v, s) for v, s in zip(rest, specs)], branches,
                      out_specs, env)


def conv(p: Partitioner, op: Op, env, operand) -> bool:
    """conv_general_dilated (batch_group_count 1): the lhs's batch dim keeps its spec (data
    parallel), the rhs's output-feature dim its spec (a split of the output channels), and input
    features sharded alike on both sides give partial convolutions and an all-reduce (sum), as
    dot_general's contracting dims do; spatial dims are gathered (a window crosses blocks)."""
    a = op.attrs
    if a["batch_group_count"] != 1:
        return False
    lhs, rhs = op.operands
    lspec, rspec = env[lhs][1], env[rhs][1]
    (batch_dim, lhs_features), (out_features_dim, rhs_features) = a["lhs_spec"][:2], a["rhs_spec"][:2]
    grouped = a["feature_group_count"] != 1    # each group's features: one block of both operands
    batch = lspec[batch_dim]
    partial = lspec[lhs_features] if not grouped and lspec[lhs_features] == rspec[rhs_features] else ()
    out_features = () if grouped or set(rspec[out_features_dim]) & set(batch) else rspec[out_features_dim]
    want_lhs, want_rhs, result = [[()] * lhs.type.ndim for _ in range(3)]
    want_lhs[batch_dim], want_lhs[lhs_features] = batch, partial
    want_rhs[out_features_dim], want_rhs[rhs_features] = out_features, partial
    result[a["out_spec"][0]], result[a["out_spec"][1]] = batch, out_features
    value = p.emit("conv_general_dilated", [operand(lhs, tuple(want_lhs)), operand(rhs, tuple(want_rhs))], **a)
    if partial:
        value = p.collective("all_reduce", [value], partial, reducer="sum")
    env[op.result] = (value, tuple(result))
    return True


def shard_map(p: Partitioner, op: Op, env, operand):
    """The per-device function inlined (ir/ops/sharding.py): each operand resharded to its in_spec,
    the region's ops (per-device already, its collectives in per-device form) run on every device,
    a value it captures from outside taken whole (replicated), each result sharded as its out_spec."""
    if mesh_sizes(op.attrs["mesh"]) != p.sizes:
        raise NotImplementedError(f"shard_map over mesh {op.attrs['mesh']!r} inside a program partitioned over "
                                  f"{','.join(f'{a}={n}' for a, n in p.sizes.items())}: one mesh per program")
    (body,) = op.regions
    for inner in body.ops:     # the devices' own predicates may differ: no lockstep (passes/spmd.py)
        if any(holds_collective(r) for r in inner.regions):
            raise NotImplementedError(f"a collective inside {inner.name}'s body within shard_map's per-device "
                                      f"function is not supported")
    in_specs = specs_of_text(op.attrs["in_specs"], [v.type.ndim for v in op.operands])
    scope = {param: operand(v, spec) for param, v, spec in zip(body.params, op.operands, in_specs)}
    for op_inside in body.ops:
        scope.update({v: operand(v, replicated(v.type)) for v in free_values(op_inside, env) if v not in scope})
        p.ops.append(clone_op(op_inside, scope))
    out_specs = specs_of_text(op.attrs["out_specs"], [v.type.ndim for v in body.outputs])
    for result, value, spec in zip(op.results, body.outputs, out_specs):
        env[result] = (scope[value], spec)


# Ops with regions: the regions are partitioned as the program is, nested.
REGION_RULES = {"while": while_, "cond": cond_, "shard_map": shard_map}

# op -> its rule (the module docstring); False from a rule: these shardings are not partitioned.
RULES = {
    "slice": slice_,
    "dynamic_slice": dynamic_slice,
    "concatenate": concatenate,
    "gather": gather,
    "constant": source,
    "iota": source,
    "broadcast_in_dim": broadcast_in_dim,
    "transpose": transpose,
    "reshape": reshape,
    "reduce": reduce,
    "dot_general": dot_general,
    "conv_general_dilated": conv,
}
