"""`jit` of sharded arguments: the global program traced as any other, partitioned, its devices
unrolled and compiled (frontend/sharding.py's module docstring)."""
from __future__ import annotations

import numpy as np

from ..ir.ops.sharding import mesh_sizes
from ..ir.types import TensorType, dtype_name
from ..runtime.executable import Executable
from .jit import Compiled, Lowered, leaf_signature
from .pytree import tree_flatten, tree_unflatten
from .sharding import NamedSharding, ShardedArray, make_mesh, partitioned, run_unrolled


class ShardedCompiled(Compiled):
    """A partitioned program: called with global arrays (sharded or not), returns ShardedArrays."""

    def __init__(self, lowered: "ShardedLowered", executable):
        super().__init__(lowered.module, lowered.out_tree, lowered.backend, executable, lowered.float0_outputs)
        self.in_shardings, self.out_shardings = lowered.in_shardings, lowered.out_shardings
        self.out_types = lowered.out_types
        self.float0_inputs = lowered.float0_inputs
        # `run` takes the global leaves, as a Compiled's does; the unrolled program takes the shards.
        self.run_devices, self.run = self.run, lambda *leaves: self.call_flat(leaves)

    def call_flat(self, leaves):
        """The program's outputs; float0 leaves (no program parameters: they hold no data) left out."""
        leaves = [leaf for i, leaf in enumerate(leaves) if i not in self.float0_inputs]
        return run_unrolled(self.run_devices, self.in_shardings, leaves, self.out_shardings, self.out_types)

    def __call__(self, *args, **kwargs):
        leaves, _ = tree_flatten((args, kwargs))
        return self.unflatten(self.call_flat(leaves))


class ShardedLowered(Lowered):
    """The unrolled program over every device (`as_text()`), and the shardings of its program's
    parameters (the argument leaves but float0 ones, which are none)."""

    def __init__(self, lowered: Lowered, mesh, in_shardings, out_shardings):
        in_shardings = [s for i, s in enumerate(in_shardings) if i not in lowered.float0_inputs]
        module, self.out_shardings = partitioned(lowered.module, mesh, in_shardings, out_shardings)
        super().__init__(module, lowered.out_tree, lowered.backend, lowered.target, lowered.float0_outputs,
                         lowered.float0_inputs)
        self.in_shardings = in_shardings
        self.out_types = [v.type for v in lowered.module.outputs]

    def compile(self) -> ShardedCompiled:
        executable = None if self.backend == "interpret" else Executable.compile(self.module, target=self.target)
        return ShardedCompiled(self, executable)


def constraint_mesh(module):
    """The mesh of the first ccl.sharding_constraint or shard_map of `module` (its regions
    included), or None."""
    for op in module.body.ops if hasattr(module, "body") else module.ops:
        if op.name == "library_call" and op.attrs.get("routine") == "sharding_constraint" \
                and op.attrs.get("library") == "ccl" or op.name == "shard_map":
            names, sizes = zip(*mesh_sizes(op.attrs["mesh"]).items())
            return make_mesh(tuple(sizes), names)
        for region in op.regions:
            mesh = constraint_mesh(region)
            if mesh is not None:
                return mesh
    return None


def compile_constrained(lowered: Lowered, mesh) -> ShardedCompiled:
    """A program of unsharded arguments whose values are constrained to shardings of `mesh`."""
    shardings = [NamedSharding(mesh)] * (len(lowered.module.params) + len(lowered.float0_inputs))
    return ShardedLowered(lowered, mesh, shardings, None).compile()


def is_sharded(leaves) -> bool:
    return any(isinstance(leaf, ShardedArray) for leaf in leaves)


def leaf_shardings(jitted, dyn_args, leaves) -> list:
    """Each flat leaf's sharding: jit's in_shardings (one for all, or one per positional argument,
    None leaving the argument's own), else a ShardedArray's own, else replicated on the mesh."""
    given = jitted.in_shardings
    per_leaf = [None] * len(leaves)
    if isinstance(given, NamedSharding):
        per_leaf = [given] * len(leaves)
    elif given is not None:
        if len(given) != len(dyn_args):
            raise ValueError(f"jit of {jitted.name}: in_shardings has {len(given)} entries for {len(dyn_args)} "
                             f"positional arguments")
        start = 0
        for arg, sharding in zip(dyn_args, given):
            count = len(tree_flatten(arg)[0])
            per_leaf[start:start + count] = [sharding] * count
            start += count
    per_leaf = [s if s is not None else leaf.sharding if isinstance(leaf, ShardedArray) else None
                for s, leaf in zip(per_leaf, leaves)]
    meshes = {s.mesh for s in per_leaf if s is not None}
    if len(meshes) > 1:
        raise ValueError(f"jit of {jitted.name}: the arguments are sharded over different meshes {list(meshes)}")
    (mesh,) = meshes
    return [s if s is not None else NamedSharding(mesh) for s in per_leaf], mesh


def lower_sharded(jitted, args, kwargs) -> ShardedLowered:
    _, dyn_args, dyn_kwargs = jitted._split(args, kwargs)
    leaves, _ = tree_flatten((dyn_args, dyn_kwargs))
    shardings, mesh = leaf_shardings(jitted, dyn_args, leaves)
    # The global program is traced on stand-ins of the global shapes (a broadcast zero: no memory).
    stand_ins = [np.broadcast_to(np.zeros((), leaf.dtype), leaf.shape) if isinstance(leaf, ShardedArray) else leaf
                 for leaf in leaves]
    traced_args, traced_kwargs = restore(args, kwargs, jitted, stand_ins)
    signature, _ = jitted._signature(traced_args, traced_kwargs)
    lowered = jitted._trace(traced_args, traced_kwargs, signature)
    out_shardings = jitted.out_shardings
    if isinstance(out_shardings, NamedSharding):
        out_shardings = [out_shardings] * len(lowered.module.outputs)
    return ShardedLowered(lowered, mesh, shardings, out_shardings)


def restore(args, kwargs, jitted, stand_ins):
    """(args, kwargs) with each dynamic leaf replaced by its stand-in, static arguments kept."""
    _, dyn_args, dyn_kwargs = jitted._split(args, kwargs)
    _, tree = tree_flatten((dyn_args, dyn_kwargs))
    new_args, new_kwargs = tree_unflatten(tree, stand_ins)
    new_args = tuple(args[i] if a is None and i < len(args) and args[i] is not None else a
                     for i, a in enumerate(new_args))
    return new_args, {**kwargs, **new_kwargs}


def call_leaf_signature(leaf):
    """jit's leaf_signature; a ShardedArray's from its global dtype and shape, never gathered."""
    if isinstance(leaf, ShardedArray):
        return TensorType(dtype_name(leaf.dtype), tuple(leaf.shape)), False
    return leaf_signature(leaf)


def signature_key(jitted, args, kwargs):
    """The cache key of a sharded call: the leaves' types and shardings, and the static arguments."""
    static_key, dyn_args, dyn_kwargs = jitted._split(args, kwargs)
    leaves, tree = tree_flatten((dyn_args, dyn_kwargs))
    shardings, _ = leaf_shardings(jitted, dyn_args, leaves)
    types = tuple(call_leaf_signature(leaf) for leaf in leaves)
    return ("sharded", tree, types, static_key, tuple(shardings)), leaves
