"""Eager calls: cdnajit.numpy and cdnajit.lax functions called outside `jit`.

As in JAX, a namespace function called on concrete values computes its result at once. It goes
through the compiler, not around it: the call is traced into a small module whose parameters are
the numpy arrays among the arguments (everything else, Python scalars included, is a static value
of the call, as it would be written inside `jit`), compiled once per signature, cached, and run.
The result is a numpy array (or a pytree of them).

A function that needs the value of an array argument (an axis, a shape, repeat counts...) cannot
trace it as a parameter; as in JAX, where eager values are concrete, such a call is traced again
with its arrays as constants, and cached by their contents.
"""
from __future__ import annotations

import abc
import contextlib
import functools
import struct

import numpy as np

from ..errors import TracingError
# cnp's family modules are loaded before this one: cnp/__init__ imports it after them.
from .cnp.creation import IndexGrid
from .cnp.elementwise import ufunc
from .cnp.indexing_funcs import AxisConcatenator
from .jit import Jitted
from .lru_cache import LRUCache
from .pytree import tree_flatten, tree_unflatten
from .tracing import Tracer, current_trace

NEEDS_VALUES = "needs values"  # cached for a signature whose arrays must be traced as constants
# Types that are pytree leaves: a call on positional leaves only (cnp.add(a, b)) skips tree_flatten,
# the largest cost of a cached eager call.
LEAF_TYPES = (np.ndarray, np.generic, int, float, complex, str)


@functools.lru_cache(maxsize=None)
def positional_call_tree(count: int):
    """The TreeDef of a call's (args, kwargs) for `count` positional leaves and no keywords."""
    return tree_flatten((tuple(range(count)), {}))[1]


def flatten_call(args, kwargs):
    if not kwargs and all([isinstance(arg, LEAF_TYPES) for arg in args]):
        return args, positional_call_tree(len(args))
    return tree_flatten((args, kwargs))


def static_leaf_key(value):
    """A hashable key telling static leaves apart exactly (TypeError if `value` is unhashable).

    Values that compare equal but trace differently get different keys: 1, 1.0 and True by
    their type, 0.0 and -0.0 by their bits, arrays by dtype, shape and contents.
    """
    if isinstance(value, (np.ndarray, np.generic)):  # before float: np.float64 is a float
        return type(value), value.dtype, value.shape, value.tobytes()
    if isinstance(value, float):
        return float, struct.pack("<d", value)
    if isinstance(value, complex):
        return complex, struct.pack("<2d", value.real, value.imag)
    if isinstance(value, slice):  # unhashable before Python 3.12
        return slice, tuple(static_leaf_key(v) for v in (value.start, value.stop, value.step))
    hash(value)
    return type(value), value


# Open `ensure_compile_time_eval` contexts (a count: they nest).
compile_time_eval_depth = 0


@contextlib.contextmanager
def ensure_compile_time_eval():
    """jax.ensure_compile_time_eval: inside jit, a namespace call on concrete values only (numpy arrays,
    Python scalars) is computed at once, as outside jit, and gives a numpy array, which Python control
    flow may read; calls on traced values are traced as usual."""
    global compile_time_eval_depth
    compile_time_eval_depth += 1
    try:
        yield
    finally:
        compile_time_eval_depth -= 1


class EagerFunction:
    """A namespace function: called as is under a trace; outside one, traced, compiled and run.

    `cache` maps call signatures to compiled executables, the most recently used ones only (static
    values, Python scalars and callables, are part of a signature, so a loop over values compiles
    once per value); `trace_count` counts traces, as `Jitted.trace_count` does.
    """

    def __init__(self, fn):
        self.fn = fn
        self.cache = LRUCache()
        self.trace_count = 0
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        if current_trace() is not None and not compile_time_eval_depth:
            return self.fn(*args, **kwargs)
        leaves, tree = flatten_call(args, kwargs)
        if current_trace() is not None and any([isinstance(leaf, Tracer) for leaf in leaves]):
            return self.fn(*args, **kwargs)
        is_parameter = tuple([isinstance(leaf, (np.ndarray, np.generic)) for leaf in leaves])
        compiled = self.compiled(tree, leaves, is_parameter)
        if compiled is NEEDS_VALUES:
            is_parameter = (False,) * len(leaves)
            compiled = self.compiled(tree, leaves, is_parameter)
        parameters = [leaf for leaf, p in zip(leaves, is_parameter) if p]
        return tree_unflatten(compiled.out_tree, compiled.call_flat(parameters))

    def compiled(self, tree, leaves, is_parameter):
        """The call's executable, from the cache or compiled; NEEDS_VALUES if its parameters cannot be traced.

        Tracing with parameters depends on their shapes and dtypes only, so a failure holds for the
        whole signature: the arrays are then traced as constants, whose error (if any) is the one
        the same call written inside `jit` raises.
        """
        signature = self.signature(tree, leaves, is_parameter)
        compiled = self.lookup(signature)
        if compiled is None:
            try:
                compiled = self.compile(tree, leaves, is_parameter)
            except TracingError:
                if not any(is_parameter):
                    raise
                compiled = NEEDS_VALUES
            self.store(signature, compiled)
        return compiled

    @staticmethod
    def signature(tree, leaves, is_parameter):
        """The cache key of a call, or None when a static leaf is unhashable (the call is not cached)."""
        try:
            leaf_keys = tuple([(leaf.dtype, leaf.shape) if p else static_leaf_key(leaf)
                               for leaf, p in zip(leaves, is_parameter)])
        except TypeError:
            return None
        return tree, is_parameter, leaf_keys

    def lookup(self, signature):
        return None if signature is None else self.cache.get(signature)

    def store(self, signature, compiled):
        if signature is not None:
            self.cache.put(signature, compiled)

    def compile(self, tree, leaves, is_parameter):
        """Trace the call with the parameter leaves as arguments and the others as constants."""
        self.trace_count += 1
        constants = [leaf for leaf, p in zip(leaves, is_parameter) if not p]

        def flat_call(*parameters):
            parameter_iter, constant_iter = iter(parameters), iter(constants)
            args, kwargs = tree_unflatten(
                tree, [next(parameter_iter) if p else next(constant_iter) for p in is_parameter])
            return self.fn(*args, **kwargs)

        flat_call.__name__ = getattr(self, "__name__", "eager")
        return Jitted(flat_call).lower(*[leaf for leaf, p in zip(leaves, is_parameter) if p]).compile()

    def __repr__(self):
        return f"<eager {self.fn!r}>"


class EagerUfunc(ufunc):
    """A cdnajit.numpy ufunc whose call and methods also work eagerly."""

    METHODS = ("outer", "reduce", "accumulate", "at")

    def __init__(self, traced: ufunc):
        vars(self).update(vars(traced))
        self.eager_call = EagerFunction(traced.__call__)
        self.eager_call.__name__ = traced.__name__
        for method in self.METHODS:  # instance attributes shadow the traced methods
            setattr(self, method, EagerFunction(getattr(traced, method)))

    def __call__(self, x1, x2, /):
        return self.eager_call(x1, x2)

    @property
    def trace_count(self) -> int:
        """Traces of eager calls (each method counts its own: `cnp.add.outer.trace_count`)."""
        return self.eager_call.trace_count


class EagerIndexing:
    """Mixin of mgrid, ogrid, r_ and c_'s eager versions: indexing also works eagerly."""

    def __init__(self, traced):
        vars(self).update(vars(traced))
        self.eager_getitem = EagerFunction(traced.__getitem__)

    def __getitem__(self, key):
        return self.eager_getitem(key)


class EagerIndexGrid(EagerIndexing, IndexGrid):
    """cdnajit.numpy.mgrid / ogrid."""


class EagerAxisConcatenator(EagerIndexing, AxisConcatenator):
    """cdnajit.numpy.r_ / c_."""


def eager_version(value):
    """`value` made to work eagerly: functions, ufuncs, index grids and r_/c_; anything else as is."""
    if isinstance(value, ufunc):
        return EagerUfunc(value)
    if isinstance(value, IndexGrid):
        return EagerIndexGrid(value)
    if isinstance(value, AxisConcatenator):
        return EagerAxisConcatenator(value)
    if callable(value) and not isinstance(value, type):
        return EagerFunction(value)
    return value


def make_namespace_eager(namespace: dict, names, host_only: set):
    """Replace every function, ufunc and index grid listed in `names` (but the host-only ones)."""
    wrapped = {}  # aliases (amax is max) stay aliases
    for name in names:
        value = namespace[name]
        if name in host_only:
            continue
        if id(value) not in wrapped:
            wrapped[id(value)] = eager_version(value)
        namespace[name] = wrapped[id(value)]


class ndarray(abc.ABC):
    """`cdnajit.numpy.ndarray`: what annotations and isinstance checks expect of an array.

    numpy arrays (what eager calls and jitted functions return) and tracers (the arrays seen
    inside `jit`) are both instances, as jax.Array covers concrete and traced arrays.
    """


ndarray.register(np.ndarray)
ndarray.register(Tracer)
