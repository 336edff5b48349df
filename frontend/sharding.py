"""`cdnajit.sharding`: jax.sharding's Mesh, PartitionSpec and NamedSharding, arrays that know their
sharding, and the sharded calls of `jit`.

    mesh = Mesh(cj.devices()[:8], ("data",))
    x = cj.device_put(batch, NamedSharding(mesh, P("data")))   # 8 shards of rows, one per device
    loss = cj.jit(step)(w, x)                                    # partitioned, with its all-reduce

A `ShardedArray` holds one array per device of its mesh (each device's own buffer); `np.asarray`
gathers it. `jit` partitions a program any of whose arguments is sharded (or given `in_shardings`):
the traced global program is partitioned (passes/partition.py), its devices unrolled
(passes/spmd.py) and the result compiled once per signature and shardings; unsharded arguments are
replicated. As in JAX, a sharded dimension must be a multiple of its mesh axes' devices.
Under MPI (`cj.distributed.initialize()`), a mesh may hold every process's devices: each process
holds and runs its own devices' shards, and the collectives between processes run over MPI
(ProcessCollectives), as JAX's multi-process programs.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..ir.ops.callback import register_callback
from ..ir.types import TensorType, dtype_name
from ..ir.ops.sharding import spec_text
from ..passes.partition import partition
from ..passes.spmd import Mesh as MeshShape
from ..passes.spmd import unroll
from ..runtime import devices as runtime_devices
from ..runtime.launch import aligned_copy


class Mesh:
    """Devices arranged on named axes (jax.sharding.Mesh): `devices` an array-like of devices whose
    shape is the mesh's, `axis_names` one name per dimension."""

    def __init__(self, devices, axis_names):
        array = np.empty(np.shape(devices), dtype=object)
        flat = list(np.asarray(devices, dtype=object).flat)
        for k, device in enumerate(flat):
            if not isinstance(device, runtime_devices.Device):
                raise TypeError(f"Mesh: {device!r} is not a device (cj.devices() lists them)")
            array.flat[k] = device
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if len(names) != array.ndim:
            raise ValueError(f"Mesh: {len(names)} axis names {names} for devices of shape {array.shape}")
        if len(set(names)) != len(names):
            raise ValueError(f"Mesh: axis names {names} repeat")
        if len(set(flat)) != len(flat):
            raise ValueError(f"Mesh: a device appears twice in {flat}")
        if not flat:
            raise ValueError("Mesh: no devices")
        self.devices, self.axis_names = array, names
        self.identity = (names, array.shape, tuple(flat))   # what equality and hashing compare (called per call)
        self.local_positions: dict[int, list[int]] = {}     # per process index: local_positions's answer

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def size(self) -> int:
        return self.devices.size

    @property
    def device_list(self) -> list:
        return list(self.devices.flat)

    def layout(self) -> MeshShape:
        return MeshShape(self.axis_names, self.devices.shape)

    def text(self) -> str:
        return ",".join(f"{n}={s}" for n, s in self.shape.items())

    def __eq__(self, other):
        return self is other or isinstance(other, Mesh) and self.identity == other.identity

    def __hash__(self):
        return self.hash_value

    @functools.cached_property
    def hash_value(self) -> int:
        return hash(self.identity)

    def __repr__(self):
        return f"Mesh({self.shape})"


def make_mesh(axis_shapes, axis_names) -> Mesh:
    """jax.make_mesh: a mesh of the first prod(axis_shapes) devices; more than exist is a ValueError."""
    axis_shapes = tuple(axis_shapes)
    needed, available = math.prod(axis_shapes), runtime_devices.device_count()
    if needed > available:
        raise ValueError(f"make_mesh: a mesh of shape {axis_shapes} needs {needed} devices; there are {available} "
                         f"(set {runtime_devices.NUM_DEVICES_ENV}, or start more processes under mpiexec)")
    return Mesh(np.array(runtime_devices.devices()[:needed], dtype=object).reshape(axis_shapes), axis_names)


class PartitionSpec(tuple):
    """Per dimension of an array: None (replicated), a mesh axis name, or a tuple of names."""

    def __new__(cls, *dims):
        for dim in dims:
            names = dim if isinstance(dim, tuple) else (dim,)
            if not all(n is None or isinstance(n, str) for n in names):
                raise TypeError(f"PartitionSpec: {dim!r} is not None, an axis name or a tuple of them")
        return super().__new__(cls, dims)

    def __repr__(self):
        return f"PartitionSpec{tuple.__repr__(self)}"


class NamedSharding:
    def __init__(self, mesh: Mesh, spec: PartitionSpec = PartitionSpec()):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding: {mesh!r} is not a Mesh")
        spec = PartitionSpec(*spec) if not isinstance(spec, PartitionSpec) else spec
        named = [n for dim in spec for n in (dim if isinstance(dim, tuple) else (dim,)) if n is not None]
        for name in named:
            if name not in mesh.axis_names:
                raise ValueError(f"NamedSharding: PartitionSpec {spec} names axis {name!r}, which the mesh "
                                 f"{mesh.axis_names} lacks")
        if len(set(named)) != len(named):
            raise ValueError(f"NamedSharding: PartitionSpec {spec} uses a mesh axis twice")
        self.mesh, self.spec = mesh, spec

    def dims(self, ndim: int, what="array") -> tuple:
        """The spec per dimension of a rank-`ndim` array: a tuple of axis names each."""
        if len(self.spec) > ndim:
            raise ValueError(f"NamedSharding: PartitionSpec {self.spec} has {len(self.spec)} entries, more than the "
                             f"{what}'s {ndim} dimensions")
        spec = list(self.spec) + [None] * (ndim - len(self.spec))
        return tuple(() if d is None else (d,) if isinstance(d, str) else tuple(n for n in d if n) for d in spec)

    def check(self, shape, what="array"):
        for k, axes in enumerate(self.dims(len(shape), what)):
            devices = math.prod(self.mesh.shape[a] for a in axes)
            if shape[k] % devices:
                raise ValueError(f"NamedSharding {self.spec} of the {what} of shape {tuple(shape)}: dimension {k} "
                                 f"({shape[k]}) is not a multiple of the {devices} devices of mesh axes {axes}")

    def shard_shape(self, shape) -> tuple:
        self.check(shape)
        return tuple(n // math.prod(self.mesh.shape[a] for a in axes) for n, axes in zip(shape, self.dims(len(shape))))

    def index(self, position: int, shape) -> tuple:
        """The global slice of the device at `position` (row-major) of the mesh."""
        coord = dict(zip(self.mesh.axis_names, np.unravel_index(position, self.mesh.devices.shape)))
        index = []
        for n, size, axes in zip(shape, self.shard_shape(shape), self.dims(len(shape))):
            block = 0
            for a in axes:
                block = block * self.mesh.shape[a] + int(coord[a])
            index.append(slice(block * size, (block + 1) * size))
        return tuple(index)

    def devices_indices_map(self, shape) -> dict:
        return {d: self.index(k, shape) for k, d in enumerate(self.mesh.device_list)}

    @functools.cached_property
    def identity(self) -> tuple:
        """What equality and hashing compare (a sharded call compares its arguments' shardings)."""
        return self.mesh.identity, self.dims(8)

    def __eq__(self, other):
        return self is other or isinstance(other, NamedSharding) and self.identity == other.identity

    def __hash__(self):
        return self.hash_value

    @functools.cached_property
    def hash_value(self) -> int:
        """hash(identity), once: a sharded call hashes its arguments' shardings (jit's array_key)."""
        return hash(self.identity)

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh.shape}, spec={self.spec})"


class ShardedArray:
    """A global array as one shard per device of its sharding's mesh (mesh order); under MPI, the
    shards of other processes' devices are None (they live there)."""

    def __init__(self, shards: list[np.ndarray], sharding: NamedSharding, shape, dtype):
        self.shards, self.sharding = shards, sharding
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    @property
    def addressable_shards(self) -> list[tuple]:
        """(device, shard) of this process's devices (under MPI the others' shards live elsewhere: None)."""
        return [(d, shard) for d, shard in zip(self.sharding.mesh.device_list, self.shards) if shard is not None]

    @property
    def is_fully_replicated(self) -> bool:
        return not any(self.sharding.dims(self.ndim))

    def __array__(self, dtype=None, copy=None):
        if any(shard is None for shard in self.shards):
            if not self.is_fully_replicated or all(shard is None for shard in self.shards):
                raise RuntimeError(f"Fetching the value of an array sharded as {self.sharding.spec} over devices of "
                                   f"other processes is not possible (as in JAX): its shards live there; gather it "
                                   f"inside the program (out_shardings replicated) or use its addressable_shards")
            whole = next(shard for shard in self.shards if shard is not None)
            return whole.copy() if dtype is None else whole.astype(dtype)
        whole = np.empty(self.shape, self.dtype)
        for k, shard in enumerate(self.shards):
            whole[self.sharding.index(k, self.shape)] = shard
        return whole if dtype is None else whole.astype(dtype)

    def __repr__(self):
        return f"ShardedArray({np.asarray(self)!r}, sharding={self.sharding})"


def put(x, sharding: NamedSharding) -> ShardedArray:
    """The shards of `x` on `sharding`'s devices of this process, each a copy in its own aligned
    buffer (under MPI, as JAX's device_put of a global array: every process holds its own devices'
    shards, taken from its copy of `x`)."""
    if isinstance(x, ShardedArray):
        x = np.asarray(x)
    array = np.asarray(x)
    if array.dtype.hasobject:
        raise TypeError(f"device_put: cannot place an array of Python objects ({array.dtype}, shape {array.shape})")
    sharding.check(array.shape)
    local = set(local_positions(sharding.mesh))
    shards = [aligned_copy(array[sharding.index(k, array.shape)]) if k in local else None
              for k in range(sharding.mesh.size)]
    return ShardedArray(shards, sharding, array.shape, array.dtype)


def local_positions(mesh: Mesh) -> list[int]:
    """The mesh positions of this process's devices (kept in the mesh: every sharded call asks)."""
    me = runtime_devices.process_index()
    positions = mesh.local_positions.get(me)
    if positions is None:
        positions = mesh.local_positions[me] = [k for k, d in enumerate(mesh.device_list) if d.process_index == me]
    return positions


def global_type(leaf) -> TensorType:
    return TensorType(dtype_name(np.dtype(leaf.dtype)), tuple(leaf.shape))


def run_unrolled(executable, leaf_shardings, leaves, out_shardings, out_types):
    """Call the unrolled program on each leaf's shards of this process; the results as ShardedArrays."""
    flat = []
    for leaf, sharding in zip(leaves, leaf_shardings):
        placed = leaf if isinstance(leaf, ShardedArray) and leaf.sharding == sharding else put(leaf, sharding)
        flat.extend(shard for shard in placed.shards if shard is not None)
    results = executable(*flat)
    if not out_shardings:
        return []
    mesh = out_shardings[0].mesh
    local = local_positions(mesh)
    arrays = []
    for k, (sharding, t) in enumerate(zip(out_shardings, out_types)):
        shards = [None] * mesh.size
        for position, shard in zip(local, results[k * len(local):(k + 1) * len(local)]):
            shards[position] = shard
        arrays.append(ShardedArray(shards, sharding, t.shape, t.numpy_dtype))
    return arrays


class ProcessCollectives:
    """The host steps of the collectives whose groups span processes (passes/spmd.py's
    between_processes): each gets this process's members' part and runs the rest over MPI
    (frontend/distributed.py), so a jitted program over a mesh of every process's devices runs as
    JAX's multi-process programs do, each process running its own devices' share."""

    def __init__(self, mesh: Mesh):
        self.owner = [d.process_index for d in mesh.device_list]

    def __call__(self, op, group: list[int], members: list[int]) -> int:
        from . import distributed
        routine = op.attrs["routine"]
        owners = [self.owner[d] for d in group]
        counts = [owners.count(p) for p in range(runtime_devices.process_count())]
        if len(set(counts)) != 1:
            raise NotImplementedError(f"ccl.{routine} over mesh devices {group}: the processes hold {counts} of them; "
                                      f"a collective between processes needs each to hold as many")
        if routine in ("all_reduce", "reduce_scatter"):
            reducer = {"or": "max", "and": "min"}.get(op.attrs["reducer"], op.attrs["reducer"])
        if routine == "all_reduce":
            step = lambda x: [distributed.all_reduce(x, reducer)]
        elif routine == "reduce_scatter":
            positions = [group.index(d) for d in members]

            def step(x):
                blocks = distributed.all_reduce(x, reducer).reshape((len(group), -1) + x.shape[1:])
                return [blocks[k].copy() for k in positions]
        elif routine == "all_gather":
            step = lambda x: [self.gathered(x, owners).reshape((-1,) + x.shape[2:])]
        elif routine == "all_to_all":
            step = self.all_to_all(group, members)
        elif routine == "ppermute":
            step = self.ppermute(group, members, op.attrs["pairs"])
        else:   # broadcast
            root = owners[op.attrs["root"]]
            step = lambda x: [distributed.broadcast(x, root)]
        return register_callback(step)

    def all_to_all(self, group: list[int], members: list[int]):
        """The host step of an all-to-all: block d of group member s's operand becomes block s of
        member d's result, sent straight to d's process (distributed.transfer) unless d is here."""
        from . import distributed
        owners = [self.owner[d] for d in group]
        local = {group.index(d): k for k, d in enumerate(members)}   # group position -> row of x
        g = len(group)

        def step(x):
            rows = x.shape[1] // g
            results = [np.empty_like(x[0]) for _ in members]
            outgoing, incoming = [], []
            for s in range(g):        # every process lists the blocks in this one order
                for d in range(g):
                    if s in local and d in local:
                        results[local[d]][s * rows:(s + 1) * rows] = x[local[s], d * rows:(d + 1) * rows]
                    elif s in local:
                        outgoing.append((owners[d], x[local[s], d * rows:(d + 1) * rows]))
                    elif d in local:
                        incoming.append((owners[s], results[local[d]][s * rows:(s + 1) * rows]))
            distributed.transfer(x, outgoing, incoming, "all_to_all")
            return results
        return step

    def ppermute(self, group: list[int], members: list[int], pairs):
        """The host step of a permutation: member s's operand becomes member d's result for each
        pair (s, d), sent straight to d's process (distributed.transfer) unless d is here; a member
        no pair sends to gets zeros."""
        from . import distributed
        owners = [self.owner[d] for d in group]
        local = {group.index(d): k for k, d in enumerate(members)}   # group position -> row of x

        def step(x):
            results = [np.zeros_like(x[k, ...]) for k in range(len(members))]
            outgoing, incoming = [], []
            for s, d in pairs:        # every process lists the pairs in this one order
                if s in local and d in local:
                    results[local[d]][...] = x[local[s], ...]
                elif s in local:
                    outgoing.append((owners[d], x[local[s], ...]))
                elif d in local:
                    incoming.append((owners[s], results[local[d]]))
            distributed.transfer(x, outgoing, incoming, "ppermute")
            return results
        return step

    @staticmethod
    def gathered(x, owners: list[int]) -> np.ndarray:
        """Every group member's operand, stacked in group order, from this process's members' operands
        stacked (`x`): the processes' parts arrive in rank order, each its members in group order."""
        from . import distributed
        parts = distributed.all_gather(x)
        arrival = sorted(range(len(owners)), key=lambda k: (owners[k], k))
        return np.ascontiguousarray(parts[np.argsort(arrival)])


def partitioned(module, mesh: Mesh, in_shardings, out_shardings):
    """(the unrolled module, the results' NamedShardings) of a global `module`: the program over this
    process's devices of `mesh`."""
    param_specs = [s.dims(p.type.ndim, f"argument {p.type}") for p, s in zip(module.params, in_shardings)]
    for p, s in zip(module.params, in_shardings):
        s.check(p.type.shape, f"argument {p.type}")
    out_specs = None
    if out_shardings is not None:
        out_specs = [None if s is None else s.dims(v.type.ndim, f"result {v.type}")
                     for v, s in zip(module.outputs, out_shardings)]
    spmd, specs = partition(module, mesh.axis_names, mesh.devices.shape, param_specs, out_specs)
    shardings = [NamedSharding(mesh, PartitionSpec(*(axes[0] if len(axes) == 1 else axes or None for axes in spec)))
                 for spec in specs]
    return unrolled(spmd, mesh, lockstep=True), shardings


def unrolled(module, mesh: Mesh, lockstep: bool = False):
    """The per-device `module` unrolled over this process's devices of `mesh` (passes/spmd.py), its
    collectives with other processes' devices run over MPI."""
    local = local_positions(mesh)
    if not local:
        raise ValueError(f"a program over {mesh}: the mesh holds none of this process's devices "
                         f"(process {runtime_devices.process_index()}: {runtime_devices.local_devices()})")
    across = ProcessCollectives(mesh) if len(local) < mesh.size else None
    return unroll(module, mesh.layout(), lockstep=lockstep, local=local, across=across)


def constraint_attrs(mesh: Mesh, spec) -> dict:
    return {"library": "ccl", "routine": "sharding_constraint", "solution": "", "mesh": mesh.text(),
            "spec": spec_text(spec)}
