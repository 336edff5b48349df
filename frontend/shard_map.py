"""`shard_map`: per-device code over a mesh, as jax.experimental.shard_map.

    f = shard_map(lambda x: lax.psum(x, "i"), mesh, in_specs=P("i"), out_specs=P())

The function is traced once on one device's shards (their shapes: the global ones divided by the
spec's mesh axes), its collectives recorded in their per-device form (frontend/collectives.py);
passes/spmd.py unrolls it over the mesh's devices and the result compiles as one program, once per
signature. A result comes back as a ShardedArray laid out by out_specs (a dimension whose spec omits
a mesh axis is taken to be equal on every device of that axis, as JAX's check_rep=False trusts).
Called inside jit (or a control-flow body under jit), it records one `shard_map` op instead, which
the partitioner inlines into the program partitioned over the mesh.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..ir.interpreter import interpret
from ..ir.ops.sharding import specs_text
from ..ir.types import TensorType
from ..passes.spmd import unroll
from ..runtime.executable import Executable
from .collectives import axis_env
from .jit import Jitted, array_key
from .lax_control import Aval, trace_region
from .lru_cache import LRUCache
from .pytree import tree_flatten, tree_unflatten
from .sharded_jit import call_leaf_signature
from .sharding import NamedSharding, PartitionSpec, run_unrolled, unrolled
from .tracing import as_tracer, bind, current_trace


def specs_per_leaf(specs, args, what: str) -> list:
    if isinstance(specs, PartitionSpec):
        return [specs] * len(tree_flatten(args)[0])
    if len(specs) != len(args):
        raise ValueError(f"shard_map: {what} has {len(specs)} entries for {len(args)} values")
    return [spec for arg, spec in zip(args, specs) for _ in tree_flatten(arg)[0]]


class ShardMapped:
    # No instance __dict__: jit(shard_map(...)) copies its function's __dict__ onto the Jitted
    # (functools.update_wrapper), which would replace the Jitted's own `fn` with the per-device one.
    __slots__ = ("fn", "mesh", "in_specs", "out_specs", "backend", "_cache")

    def __init__(self, fn, mesh, in_specs, out_specs, backend="compiled"):
        self.fn, self.mesh, self.in_specs, self.out_specs = fn, mesh, in_specs, out_specs
        self.backend = backend
        self._cache = LRUCache()

    def body(self, *args):
        with axis_env(self.mesh):
            return self.fn(*args)

    def lower(self, *args):
        leaves, tree = tree_flatten(args)
        shardings = [NamedSharding(self.mesh, s) for s in specs_per_leaf(self.in_specs, args, "in_specs")]
        stand_ins = [np.broadcast_to(np.zeros((), np.asarray(leaf).dtype), s.shard_shape(np.shape(leaf)))
                     for leaf, s in zip(leaves, shardings)]
        jitted = Jitted(self.body, backend=self.backend)
        lowered = jitted.lower(*tree_unflatten(tree, stand_ins))
        return lowered, shardings

    def traced(self, *args):
        """Inside a traced function: one `shard_map` op holding the function traced on the shards'
        shapes (ir/ops/sharding.py), which the partitioner inlines; the program is partitioned
        over this mesh (frontend/sharded_jit.py: constraint_mesh)."""
        leaves, tree = tree_flatten(args)
        tracers = [as_tracer(leaf, "shard_map argument") for leaf in leaves]
        shardings = [NamedSharding(self.mesh, s) for s in specs_per_leaf(self.in_specs, args, "in_specs")]
        avals = [Aval(TensorType(x.type.dtype, s.shard_shape(x.shape)), x.weak_type) for x, s in zip(tracers, shardings)]

        def body(params):
            outputs, out_tree = tree_flatten(self.body(*tree_unflatten(tree, params)))
            return [as_tracer(o, "shard_map result") for o in outputs], out_tree
        region, out_tree = trace_region(avals, body)
        outs = [self.out_specs] * len(region.outputs) if isinstance(self.out_specs, PartitionSpec) else \
            specs_per_leaf(self.out_specs, tuple(region.outputs), "out_specs")
        out_dims = [NamedSharding(self.mesh, spec).dims(v.type.ndim, f"result {v.type}")
                    for v, spec in zip(region.outputs, outs)]
        in_dims = [s.dims(x.ndim) for x, s in zip(tracers, shardings)]
        attrs = {"mesh": self.mesh.text(), "in_specs": specs_text(in_dims), "out_specs": specs_text(out_dims)}
        return tree_unflatten(out_tree, bind("shard_map", tracers, attrs, [region]))

    def __call__(self, *args):
        if current_trace() is not None:
            return self.traced(*args)
        # Arrays alone (numpy or sharded) are their own leaves, and their array_key (shapes, dtypes,
        # shardings) finds the entry without flattening them or building their signature.
        key = array_key(args)
        entry = self._cache.get(key) if key is not None else None
        if entry is not None:
            run, shardings, out_shardings, out_types, out_tree, _ = entry
            return tree_unflatten(out_tree, run_unrolled(run, shardings, args, out_shardings, out_types))
        leaves, _ = tree_flatten(args)
        signature = tuple(call_leaf_signature(leaf) for leaf in leaves)
        entry = self._cache.get(signature)
        if entry is None:
            lowered, shardings = self.lower(*args)
            module = unrolled(lowered.module, self.mesh)
            run = Executable.compile(module) if self.backend == "compiled" else functools.partial(interpret, module)
            outputs = lowered.module.outputs
            outs = [self.out_specs] * len(outputs) if isinstance(self.out_specs, PartitionSpec) else \
                specs_per_leaf(self.out_specs, tuple(outputs), "out_specs")
            out_types, out_shardings = [], []
            for value, spec in zip(outputs, outs):
                sharding = NamedSharding(self.mesh, spec)
                dims = sharding.dims(value.type.ndim, f"result {value.type}")
                shape = tuple(n * math.prod(self.mesh.shape[a] for a in axes) for n, axes in zip(value.type.shape, dims))
                out_types.append(TensorType(value.type.dtype, shape))
                out_shardings.append(sharding)
            entry = (run, shardings, out_shardings, out_types, lowered.out_tree, module)
            self._cache.put(signature, entry)
        if key is not None:
            self._cache.put(key, entry)
        run, shardings, out_shardings, out_types, out_tree, _ = entry
        results = run_unrolled(run, shardings, leaves, out_shardings, out_types)
        return tree_unflatten(out_tree, results)


def axis_spec(name: str, axis: int | None) -> PartitionSpec:
    """The PartitionSpec of a value mapped along `axis` over the mesh axis `name` (None: unmapped)."""
    return PartitionSpec() if axis is None else PartitionSpec(*([None] * axis), name)


def axes_per_leaf(axes, values, what: str) -> list:
    """One mapped axis (or None) per leaf of `values`: `axes` one int/None for all, or one per value."""
    if axes is None or isinstance(axes, int):
        return [axes] * len(tree_flatten(values)[0])
    if len(axes) != len(values):
        raise ValueError(f"pmap: {what} has {len(axes)} entries for {len(values)} values")
    return [axis for value, axis in zip(values, axes) for _ in tree_flatten(value)[0]]


def pmap(fn, axis_name=None, *, in_axes=0, out_axes=0, backend="compiled"):
    """jax.pmap for old code: fn runs on each of the first d devices with its slice of the arguments'
    mapped axis (`in_axes`: an int, or None for an argument every device gets whole; one for all or
    one per positional argument; the mapped axes of size d) and the results are stacked along
    `out_axes` (one for all or one per result leaf; None: a result equal on every device, returned
    once); collectives name `axis_name`. The per-device function is shard_map's over d devices."""
    from . import cnp
    from .sharding import make_mesh
    name = axis_name if axis_name is not None else "_pmap"
    if not (out_axes is None or isinstance(out_axes, int)) and any(a is not None and a < 0 for a in out_axes) \
            or isinstance(out_axes, int) and out_axes < 0:
        raise ValueError(f"pmap: out_axes {out_axes} must be non-negative (or None)")
    compiled = {}   # (tree, mapped axes, devices) -> its ShardMapped, which caches per signature

    def mapped(*args):
        leaves, tree = tree_flatten(args)
        axes = [a if a is None or a >= 0 else a + np.ndim(leaf)
                for leaf, a in zip(leaves, axes_per_leaf(in_axes, args, "in_axes"))]
        sizes = {np.shape(leaf)[a] if 0 <= a < np.ndim(leaf) else None for leaf, a in zip(leaves, axes) if a is not None}
        if len(sizes) != 1 or None in sizes:
            raise ValueError(f"pmap: every mapped argument needs the same size along its mapped axis (one entry per "
                             f"device); got shapes {[np.shape(leaf) for leaf in leaves]} with in_axes {axes}")
        (count,) = sizes

        def per_device(*local):
            squeezed = [leaf if a is None else cnp.squeeze(leaf, a) for leaf, a in zip(local, axes)]
            results, out_tree = tree_flatten(fn(*tree_unflatten(tree, squeezed)))
            outs = axes_per_leaf(out_axes, tuple(results), "out_axes")
            return tree_unflatten(out_tree, [r if a is None else cnp.expand_dims(r, a) for r, a in zip(results, outs)])

        out_specs = axis_spec(name, out_axes) if out_axes is None or isinstance(out_axes, int) else \
            tuple(axis_spec(name, a) for a in out_axes)
        key = (tree, tuple(axes), count)
        if key not in compiled:
            in_specs = tuple(axis_spec(name, a) for a in axes)
            compiled[key] = ShardMapped(per_device, make_mesh((count,), (name,)), in_specs, out_specs, backend)
        return compiled[key](*leaves)
    return mapped


def shard_map(fn, mesh, in_specs, out_specs, *, check_rep=False, backend="compiled"):
    """Per-device `fn` over `mesh` (module docstring): in_specs and out_specs a PartitionSpec for
    every value or one per argument / result."""
    return ShardMapped(fn, mesh, in_specs, out_specs, backend)
