"""The collectives of per-device code (jax.lax's psum, pmean, pmax, pmin, all_gather, psum_scatter,
all_to_all, ppermute, axis_index) and lax.with_sharding_constraint.

Inside `shard_map` (frontend/shard_map.py) the function is traced once, on one device's shards; a
collective records a `library_call ccl.*` in its per-device form (libs/ccl/routines.py), which
passes/spmd.py turns into one call per group of devices. The axis names are the mesh's; a name the
enclosing shard_map's mesh lacks, or a collective outside shard_map, is a NameError, as in JAX.
"""
from __future__ import annotations

import math
import threading

from .pytree import tree_map
from .tracing import as_tracer, bind1, located

_axes = threading.local()


def current_mesh():
    return getattr(_axes, "mesh", None)


class axis_env:
    """The mesh whose axis names the collectives of a shard_map body use."""

    def __init__(self, mesh):
        self.mesh = mesh

    def __enter__(self):
        self.outer, _axes.mesh = current_mesh(), self.mesh

    def __exit__(self, *exc):
        _axes.mesh = self.outer


def group_of(axis_name, what: str) -> tuple[tuple[str, ...], int]:
    """(the axes, their device count) an axis_name (a name or a tuple of names) denotes."""
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    mesh = current_mesh()
    if mesh is None:
        raise NameError(located(f"{what}: unbound axis name {axis_name!r}: collectives run inside shard_map, "
                                f"whose mesh names the axes"))
    for name in names:
        if name not in mesh.axis_names:
            raise NameError(located(f"{what}: unbound axis name {name!r}; the mesh's axes are {mesh.axis_names}"))
    return names, math.prod(mesh.shape[n] for n in names)


def collective(routine: str, x, axis_name, **attrs):
    axes, size = group_of(axis_name, f"lax.{routine}")
    if size == 1 and routine in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"):
        return as_tracer(x)   # a group of one device: the collective is its operand
    return bind1("library_call", [as_tracer(x)], {"library": "ccl", "routine": routine, "solution": "",
                                                  "axes": ",".join(axes), "group_size": size, **attrs})


def psum(x, axis_name):
    return tree_map(lambda leaf: collective("all_reduce", leaf, axis_name, reducer="sum"), x)


def pmax(x, axis_name):
    return tree_map(lambda leaf: collective("all_reduce", leaf, axis_name, reducer="max"), x)


def pmin(x, axis_name):
    return tree_map(lambda leaf: collective("all_reduce", leaf, axis_name, reducer="min"), x)


def pmean(x, axis_name):
    _, size = group_of(axis_name, "lax.pmean")
    return tree_map(lambda leaf: psum(leaf, axis_name) / size, x)


def all_gather(x, axis_name, *, axis=0, tiled=False):
    """Every device's x along `axis`: stacked on a new axis (tiled=False) or concatenated (True)."""
    from . import cnp
    x = as_tracer(x)
    if not tiled:
        x = cnp.expand_dims(x, axis)
    gathered = collective("all_gather", cnp.moveaxis(x, axis, 0), axis_name)
    return cnp.moveaxis(gathered, 0, axis)


def psum_scatter(x, axis_name, *, scatter_dimension=0, tiled=False):
    """The sum over devices, device i keeping block i of `scatter_dimension` (tiled), or its index i
    of a dimension of the group's size (tiled=False, the dimension removed)."""
    from . import cnp
    x = as_tracer(x)
    _, size = group_of(axis_name, "lax.psum_scatter")
    if not tiled and x.shape[scatter_dimension] != size:
        raise ValueError(located(f"psum_scatter: dimension {scatter_dimension} of {x.shape} must be the axis size "
                                 f"{size} (or pass tiled=True)"))
    front = cnp.moveaxis(x, scatter_dimension, 0)
    scattered = cnp.moveaxis(collective("reduce_scatter", front, axis_name, reducer="sum"), 0, scatter_dimension)
    return scattered if tiled else cnp.squeeze(scattered, scatter_dimension)


def all_to_all(x, axis_name, split_axis, concat_axis, *, tiled=False):
    """x split along split_axis into one chunk per device, chunk i sent to device i, the chunks
    received concatenated along concat_axis (tiled), or stacked on a new axis there with the split
    axis, of the group's size, removed (tiled=False), as jax.lax.all_to_all."""
    from . import cnp
    x = as_tracer(x)
    _, size = group_of(axis_name, "lax.all_to_all")
    if x.shape[split_axis] % size or (not tiled and x.shape[split_axis] != size):
        raise ValueError(located(f"all_to_all: split_axis {split_axis} of {x.shape} must be "
                                 f"{'a multiple of ' if tiled else ''}the axis size {size}"))
    front = cnp.moveaxis(x, split_axis, 0)
    received = collective("all_to_all", front, axis_name)          # block s: device s's chunk
    chunks = cnp.reshape(received, (size, front.shape[0] // size) + front.shape[1:])
    chunks = cnp.moveaxis(chunks, 1, split_axis + 1)                # (devices, chunk's shape)
    if not tiled:
        return cnp.moveaxis(cnp.squeeze(chunks, split_axis + 1), 0, concat_axis)
    stacked = cnp.moveaxis(chunks, 0, concat_axis)
    shape = list(stacked.shape)
    shape[concat_axis:concat_axis + 2] = [shape[concat_axis] * shape[concat_axis + 1]]
    return cnp.reshape(stacked, tuple(shape))


def ppermute(x, axis_name, perm):
    """Device `source`'s x to device `destination` for each (source, destination) of perm; zeros
    where no pair sends."""
    pairs = tuple((int(s), int(d)) for s, d in perm)
    return tree_map(lambda leaf: collective("ppermute", leaf, axis_name, pairs=pairs), x)


def axis_index(axis_name):
    axes, size = group_of(axis_name, "lax.axis_index")
    return bind1("library_call", [], {"library": "ccl", "routine": "axis_index", "solution": "",
                                      "axes": ",".join(axes), "group_size": size})


def with_sharding_constraint(x, sharding):
    """Inside jit: x, resharded as `sharding` by the partitioner; outside: cj.device_put(x, sharding).
    Without a sharding (None), x itself."""
    from .sharding import constraint_attrs, put
    from .tracing import Tracer
    if sharding is None:
        return x

    def constrain(leaf):
        if not isinstance(leaf, Tracer):
            return put(leaf, sharding)
        sharding.check(leaf.shape, "constrained value")
        return bind1("library_call", [leaf], constraint_attrs(sharding.mesh, sharding.dims(leaf.ndim)))
    return tree_map(constrain, x)
