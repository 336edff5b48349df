"""cdnajit.lax functions about the program rather than the data: barriers and staging markers,
platform dispatch, composites, custom_root and custom_linear_solve, sharding constraints.

cdnajit compiles one device's program, so these keep jax.lax's values: optimization_barrier is an op
of its own (the passes do not optimize across it), the other markers are identities, a composite
runs its decomposition, and custom_root / custom_linear_solve run the given solver (their custom
derivative rules are not used).
"""
from __future__ import annotations

import numpy as np

from ..errors import TracingValueError
from .lax_elementwise import static_ints
from .pytree import tree_flatten, tree_map, tree_unflatten
from .tracing import as_tracer, bind, located

__all__ = ["optimization_barrier", "dce_sink", "stage", "platform_dependent", "composite", "custom_root",
           "custom_linear_solve", "shape_as_value"]

# The platform name a platform_dependent call dispatches on: kernels are compiled for AMD GPUs.
PLATFORM = "rocm"


def optimization_barrier(operand, /):
    """jax.lax.optimization_barrier: its operand (a pytree), unchanged, through one
    `optimization_barrier` op: the compiler does not share or fuse computations across it."""
    leaves, tree = tree_flatten(operand)
    tracers = [as_tracer(leaf) for leaf in leaves]
    results = bind("optimization_barrier", tracers, {}) if tracers else []
    for result, tracer in zip(results, tracers):   # the identity keeps weak types
        result.weak_type = tracer.weak_type
    return tree_unflatten(tree, results)


def dce_sink(val, *, prevent_mlir_dce=False):
    """jax.lax.dce_sink: keeps `val` alive in JAX's program; returns None."""
    tree_map(as_tracer, val)


def stage(x, /):
    """jax.lax.stage: x, unchanged."""
    return as_tracer(x)


def platform_dependent(*args, default=None, **per_platform):
    """jax.lax.platform_dependent: the function given for this platform ('rocm'), else `default`."""
    chosen = per_platform.get(PLATFORM, default)
    if chosen is None:
        raise NotImplementedError(located(
            f"lax.platform_dependent: no function for platform {PLATFORM!r} and no default (given: "
            f"{', '.join(sorted(per_platform))})"))
    return chosen(*args)


def composite(decomposition, name, version=0):
    """jax.lax.composite: a function that runs `decomposition` (cdnajit has no composite op to keep)."""
    if not isinstance(name, str):
        raise TracingValueError(located(f"lax.composite: name must be a string, got {name!r}"))

    def run(*args, **kwargs):
        return decomposition(*args, **kwargs)
    run.__name__ = run.__qualname__ = name
    return run


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """jax.lax.custom_root: solve(f, initial_guess) (with its aux output when has_aux)."""
    return solve(f, initial_guess)


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
    """jax.lax.custom_linear_solve: solve(matvec, b) (with its aux output when has_aux)."""
    return solve(matvec, b)


def shape_as_value(shape):
    """jax.lax.shape_as_value: a static shape as an int32 array (a host function)."""
    return np.array(static_ints(shape, "lax.shape_as_value shape"), np.int32)
