"""Eager calls: cdnajit.numpy and cdnajit.lax functions called outside `jit`.

As in JAX, a namespace function called on concrete values computes its result at once. It goes
through the compiler, not around it: the call is traced into a small module whose parameters are
the numpy arrays among the arguments (everything else, Python scalars included, is a static value
of the call), compiled once per signature, cached, and run. The result is a numpy array (or a
pytree of them).
"""
from __future__ import annotations

import abc
import functools

import numpy as np

from .jit import Jitted, leaf_signature
from .pytree import tree_flatten, tree_unflatten
from .tracing import Tracer, current_trace


def static_key(values):
    """A hashable key for the static leaves of a call, or None when one is unhashable."""
    try:
        key = tuple((type(v), v) for v in values)
        hash(key)
        return key
    except TypeError:
        return None


def call_eagerly(fn, cache: dict, args, kwargs):
    leaves, tree = tree_flatten((args, kwargs))
    is_dynamic = tuple(isinstance(leaf, (np.ndarray, np.generic)) for leaf in leaves)
    dynamic = [leaf for leaf, d in zip(leaves, is_dynamic) if d]
    static = [leaf for leaf, d in zip(leaves, is_dynamic) if not d]
    statics = static_key(static)
    key = None if statics is None else (tree, is_dynamic, statics, tuple(map(leaf_signature, dynamic)))
    compiled = cache.get(key) if key is not None else None
    if compiled is None:
        def flat_call(*dynamic_values):
            dynamic_iter, static_iter = iter(dynamic_values), iter(static)
            call_args, call_kwargs = tree_unflatten(
                tree, [next(dynamic_iter) if d else next(static_iter) for d in is_dynamic])
            return fn(*call_args, **call_kwargs)

        flat_call.__name__ = getattr(fn, "__name__", "eager")
        compiled = Jitted(flat_call).lower(*dynamic).compile()
        if key is not None:
            cache[key] = compiled
    return tree_unflatten(compiled.out_tree, compiled.call_flat(dynamic))


def eager(fn):
    """`fn` as is under a trace; outside one, traced, compiled (cached per signature) and run."""
    cache: dict = {}

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if current_trace() is not None:
            return fn(*args, **kwargs)
        return call_eagerly(fn, cache, args, kwargs)

    call.__wrapped__ = fn
    return call


class EagerUfunc:
    """A cdnajit.numpy ufunc object whose call and methods (outer, reduce, ...) also work eagerly."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self._call = eager(ufunc.__call__)
        self._methods = {}
        functools.update_wrapper(self, ufunc, assigned=("__doc__",), updated=())

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, name):
        attribute = getattr(self._ufunc, name)
        if not callable(attribute):
            return attribute
        if name not in self._methods:
            self._methods[name] = eager(attribute)
        return self._methods[name]

    def __repr__(self):
        return repr(self._ufunc)


def make_namespace_eager(namespace: dict, names, host_only: set):
    """Wrap every function and ufunc listed in `names` (but the host-only ones) for eager calls."""
    from .cnp.elementwise import ufunc
    wrapped = {}  # aliases (amax is max) stay aliases
    for name in names:
        value = namespace[name]
        if name in host_only or isinstance(value, type) or not callable(value):
            continue
        if id(value) not in wrapped:
            wrapped[id(value)] = EagerUfunc(value) if isinstance(value, ufunc) else eager(value)
        namespace[name] = wrapped[id(value)]


class ndarray(abc.ABC):
    """`cdnajit.numpy.ndarray`: what annotations and isinstance checks expect of an array.

    numpy arrays (what eager calls and jitted functions return) and tracers (the arrays seen
    inside `jit`) are both instances, as jax.Array covers concrete and traced arrays.
    """


ndarray.register(np.ndarray)
ndarray.register(Tracer)
