"""Function transforms of jax.numpy: vectorize, apply_along_axis and apply_over_axes.

JAX builds vectorize and apply_along_axis on vmap, which cdnajit does not have: here the function
is applied to one element (or core slice) at a time inside a `lax.map` loop over the flattened
batch, which gives vmap's results for any function (elementwise or not), one slice per iteration.
"""
from __future__ import annotations

import functools
import math
import re

from ...errors import TracingTypeError, TracingValueError
from ..lax_control import map as lax_map
from ..pytree import tree_flatten, tree_unflatten
from ..tracing import current_trace, located
from . import shaping as sh
from .base import broadcast_shapes, canonical_axis
from .creation import asarray

__all__ = ["vectorize", "apply_along_axis", "apply_over_axes"]

HOST_ONLY = {"vectorize"}  # it builds a function, which itself works eagerly and traced

CORE_DIMS = re.compile(r"\(([^()]*)\)")


def parse_signature(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """A gufunc signature '(m,n),(n)->(m)' as core dimension names of the inputs and outputs."""
    parts = signature.replace(" ", "").split("->")
    if len(parts) != 2:
        raise TracingValueError(located(f"vectorize: not a valid gufunc signature: {signature!r}"))

    def arguments(text):
        found = CORE_DIMS.findall(text)
        if "".join(f"({f})" for f in found).replace(",", "") != text.replace(",", ""):
            raise TracingValueError(located(f"vectorize: not a valid gufunc signature: {signature!r}"))
        return [tuple(d for d in f.split(",") if d) for f in found]

    return arguments(parts[0]), arguments(parts[1])


def map_over_batch(fn, arrays, core_shapes, batch_shape):
    """fn applied to each batch element's core slices of `arrays`, results stacked as batch_shape + ..."""
    size = math.prod(batch_shape)
    flat = [sh.reshape(sh.broadcast_to(x, batch_shape + core), (size,) + core) for x, core in zip(arrays, core_shapes)]
    out = lax_map(lambda xs: fn(*xs), tuple(flat))
    leaves, tree = tree_flatten(out)
    return tree_unflatten(tree, [sh.reshape(leaf, batch_shape + leaf.shape[1:]) for leaf in leaves])


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """jnp.vectorize: pyfunc mapped over the broadcast leading (batch) dimensions of its array
    arguments; `signature` names the trailing core dimensions each argument keeps."""
    if not callable(pyfunc):
        raise TracingTypeError(located(f"vectorize: expected a callable, got {type(pyfunc).__name__}"))
    excluded = frozenset(excluded)
    input_cores, _ = parse_signature(signature) if signature is not None else (None, None)

    @functools.wraps(pyfunc)
    def traced(*args, **kwargs):
        positions = [i for i in range(len(args)) if i not in excluded]
        names = [k for k in kwargs if k not in excluded]
        arrays = [asarray(args[i]) for i in positions] + [asarray(kwargs[k]) for k in names]
        cores = input_cores if input_cores is not None else [()] * len(arrays)
        if len(cores) != len(arrays):
            raise TracingValueError(located(f"vectorize: the signature {signature!r} has {len(cores)} inputs, got "
                                            f"{len(arrays)} array arguments"))
        sizes: dict[str, int] = {}
        core_shapes, batch_shapes = [], []
        for x, core in zip(arrays, cores):
            if x.ndim < len(core):
                raise TracingValueError(located(f"vectorize: input of shape {x.shape} has fewer dimensions than its "
                                                f"core dimensions {core}"))
            shape = x.shape[x.ndim - len(core):]
            for name, d in zip(core, shape):
                if sizes.setdefault(name, d) != d:
                    raise TracingValueError(located(f"vectorize: inconsistent size for core dimension {name!r}: "
                                                    f"{sizes[name]} vs {d}"))
            core_shapes.append(shape)
            batch_shapes.append(x.shape[:x.ndim - len(core)])
        batch = broadcast_shapes(*batch_shapes, what="vectorize: batch dimensions")

        def call(*slices):
            call_args, call_kwargs = list(args), dict(kwargs)
            for slot, value in zip(positions + names, slices):
                if isinstance(slot, int):
                    call_args[slot] = value
                else:
                    call_kwargs[slot] = value
            return pyfunc(*call_args, **call_kwargs)

        return map_over_batch(call, arrays, core_shapes, batch)

    from ..eager import EagerFunction  # eager.py imports this package: bound when the function is made
    eager = EagerFunction(traced)

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        return traced(*args, **kwargs) if current_trace() is not None else eager(*args, **kwargs)
    return wrapped


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """jnp.apply_along_axis: func1d applied to each 1-d slice of arr along axis; the result's
    dimensions replace that axis."""
    x = asarray(arr)
    axis = canonical_axis(axis, x.ndim)
    moved = sh.moveaxis(x, axis, -1)
    batch = moved.shape[:-1]
    result = map_over_batch(lambda row: func1d(row, *args, **kwargs), [moved], [moved.shape[-1:]], batch)
    leaves, tree = tree_flatten(result)
    placed = []
    for leaf in leaves:
        extra = leaf.ndim - len(batch)
        placed.append(sh.moveaxis(leaf, tuple(range(len(batch), leaf.ndim)), tuple(range(axis, axis + extra)))
                      if extra else leaf)
    return tree_unflatten(tree, placed)


def apply_over_axes(func, a, axes):
    """jnp.apply_over_axes: a = func(a, axis) for each axis, keeping the dimension func reduces."""
    x = asarray(a)
    for axis in ([axes] if isinstance(axes, int) else axes):
        result = asarray(func(x, axis))
        if result.ndim == x.ndim - 1:
            result = sh.expand_dims(result, axis)
        elif result.ndim != x.ndim:
            raise TracingValueError(located(f"apply_over_axes: func must keep or reduce the dimension; got shape "
                                            f"{result.shape} from {x.shape}"))
        x = result
    return x
