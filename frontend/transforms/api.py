"""JAX's top-level helpers around the transformations: eval_shape, ShapeDtypeStruct, make_jaxpr,
block_until_ready, device_get, named_call, jax.debug and pure_callback (host callbacks inside
traced code too), Array and config."""
from __future__ import annotations

import abc
import functools

import numpy as np

from ...ir.ops.callback import checked_results, register_callback
from ...ir.types import TensorType, dtype_name, is_supported_dtype
from ..jit import Jitted
from ..pytree import tree_flatten, tree_map, tree_unflatten
from ..tracing import Tracer, bind, current_trace


class ShapeDtypeStruct:
    """jax.ShapeDtypeStruct: an array's shape and dtype, without its values."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, sharding=None, weak_type=False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type
        if not is_supported_dtype(self.dtype):
            raise TypeError(f"ShapeDtypeStruct: unsupported dtype {self.dtype}")

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype, self.weak_type)
                == (other.shape, other.dtype, other.weak_type))

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))


def stand_in(leaf):
    """An argument standing for `leaf` while tracing: a ShapeDtypeStruct (or anything with a shape and
    a dtype) becomes a zero-stride array of its type, which costs no memory."""
    if isinstance(leaf, (np.ndarray, np.generic, Tracer, bool, int, float, complex)):
        return leaf
    if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
        return np.broadcast_to(np.zeros((), leaf.dtype), tuple(leaf.shape))
    return leaf


def lower_abstract(fun, args, kwargs, static_argnums=()):
    leaves, tree = tree_flatten((args, kwargs))
    args, kwargs = tree_unflatten(tree, [stand_in(leaf) for leaf in leaves])
    return Jitted(fun, static_argnums=static_argnums).lower(*args, **kwargs)


def eval_shape(fun, *args, **kwargs):
    """jax.eval_shape: fun's output as ShapeDtypeStructs, found by tracing it (nothing runs)."""
    lowered = lower_abstract(fun, args, kwargs)
    outs = [ShapeDtypeStruct(v.type.shape, v.type.numpy_dtype) for v in lowered.module.outputs]
    return tree_unflatten(lowered.out_tree, outs)


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False, abstracted_axes=None):
    """jax.make_jaxpr: `make_jaxpr(f)(*args)` is the traced graph-IR module (printable as text);
    arguments may be ShapeDtypeStructs. With return_shape, also the output's ShapeDtypeStructs."""
    @functools.wraps(fun)
    def graph(*args, **kwargs):
        lowered = lower_abstract(fun, args, kwargs, static_argnums)
        if not return_shape:
            return lowered.module
        outs = [ShapeDtypeStruct(v.type.shape, v.type.numpy_dtype) for v in lowered.module.outputs]
        return lowered.module, tree_unflatten(lowered.out_tree, outs)
    return graph


def block_until_ready(x):
    """jax.block_until_ready: cdnajit's calls return when their results are written, so x itself."""
    return x


def device_get(x):
    """jax.device_get: the pytree's arrays as numpy arrays (cdnajit's arrays are host numpy arrays)."""
    return tree_map(np.asarray, x)


def named_call(fun, *, name=None):
    """jax.named_call: fun itself (cdnajit's graph IR has no named scopes; the ops keep their source lines)."""
    return fun


def debug_callback(callback, *args, ordered: bool = False, **kwargs):
    """jax.debug.callback: calls callback(*args, **kwargs) with the arguments' values (numpy arrays
    for traced values). Inside a traced function it is a `host_callback` op (ir/ops/callback.py),
    run when the program runs, in program order (`ordered` is accepted: cdnajit's callbacks are
    always ordered); under vmap once per lane, under grad on the primal values, in a loop's body
    each iteration. What the callback raises reaches the caller of the compiled program."""
    if current_trace() is None:
        callback(*args, **kwargs)
        return
    traced, call = on_traced_values(callback, args, kwargs)
    bind("host_callback", traced, {"callback": register_callback(call)})


def on_traced_values(callback, args, kwargs):
    """(the tracers among args and kwargs, a function of their values that calls callback with
    every argument: the traced ones replaced by those values)."""
    leaves, tree = tree_flatten((args, kwargs))
    traced = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tracer)]

    def call(*arrays):
        values = list(leaves)
        for i, array in zip(traced, arrays):
            values[i] = array
        call_args, call_kwargs = tree_unflatten(tree, values)
        return callback(*call_args, **call_kwargs)
    return [leaves[i] for i in traced], call


def debug_print(fmt: str, *args, ordered: bool = False, **kwargs):
    """jax.debug.print: prints fmt.format(*args, **kwargs) with the arguments' values (numpy arrays,
    formatted as numpy formats them, as JAX's), when the program runs (see debug_callback)."""
    debug_callback(lambda *values, **named: print(fmt.format(*values, **named)), *args, ordered=ordered, **kwargs)


def pure_callback(callback, result_shape_dtypes, *args, vmap_method=None, **kwargs):
    """jax.pure_callback: callback(*args, **kwargs), whose results must match result_shape_dtypes (a
    tree of ShapeDtypeStructs or arrays) in tree, shapes and dtypes. Inside a traced function it is a
    `pure_callback` op (ir/ops/callback.py) run when the program runs, with numpy arrays for the
    traced arguments; it has no derivative, and vmap runs it as `vmap_method` says (JAX's
    'sequential', 'expand_dims', 'broadcast_all')."""
    return bind_callback("pure_callback", callback, result_shape_dtypes, args, kwargs, {"vmap_method": vmap_method})


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False, **kwargs):
    """jax.experimental.io_callback: pure_callback's call with an effect: inside a traced function an
    `io_callback` op, run exactly once per execution and in program order (ordered or not: cdnajit
    orders every effect); no derivative; vmap calls it once per lane. `sharding` is not supported."""
    if sharding is not None:
        raise NotImplementedError("io_callback: sharding= is not supported (the callback runs on the host)")
    return bind_callback("io_callback", callback, result_shape_dtypes, args, kwargs, {})


def bind_callback(name, callback, result_shape_dtypes, args, kwargs, attrs):
    """`name` (pure_callback or io_callback) of callback(*args, **kwargs): called now outside a trace,
    else an op of the trace; its results checked against result_shape_dtypes."""
    expected, expected_tree = tree_flatten(result_shape_dtypes)
    types = []
    for k, want in enumerate(expected):
        if not (hasattr(want, "shape") and hasattr(want, "dtype")):
            raise TypeError(f"{name}: result_shape_dtypes holds {want!r}, not a ShapeDtypeStruct or array")
        if not is_supported_dtype(np.dtype(want.dtype)):
            raise TypeError(f"{name}: result {k} has unsupported dtype {np.dtype(want.dtype)}")
        types.append(TensorType(dtype_name(np.dtype(want.dtype)), tuple(int(d) for d in want.shape)))

    def leaves_of(result) -> list:
        """The callback's result as the list of its leaves, its tree checked."""
        leaves, tree = tree_flatten(result)
        if tree != expected_tree:
            raise TypeError(f"{name}: the callback returned a tree {tree}, expected {expected_tree}")
        return leaves

    if current_trace() is None:
        return tree_unflatten(expected_tree, checked_results(leaves_of(callback(*args, **kwargs)), types))
    traced, call = on_traced_values(callback, args, kwargs)
    attrs = {"callback": register_callback(lambda *arrays: leaves_of(call(*arrays))), **attrs,
             "num_results": len(types)}
    for k, t in enumerate(types):
        attrs[f"result{k}_dtype"], attrs[f"result{k}_shape"] = t.dtype, t.shape
    return tree_unflatten(expected_tree, bind(name, traced, attrs))


class Array(abc.ABC):
    """jax.Array, for isinstance checks and annotations: the arrays cdnajit's functions give, numpy
    arrays outside traced code and tracers inside."""


Array.register(np.ndarray)
Array.register(Tracer)


class Config:
    """jax.config for the flags cdnajit has: jax_enable_x64, always on (the type rules are JAX's with
    64-bit types, frontend/dtypes.py). Setting a flag to a value cdnajit does not implement raises
    NotImplementedError; an unknown flag raises AttributeError, as JAX's."""
    FLAGS = {"jax_enable_x64": True}

    def update(self, name: str, value):
        if name not in self.FLAGS:
            raise AttributeError(f"Unrecognized config option: {name}")
        if value != self.FLAGS[name]:
            raise NotImplementedError(f"config.update({name!r}, {value!r}): cdnajit supports only "
                                      f"{name} = {self.FLAGS[name]!r}")

    def __getattr__(self, name: str):
        if name in Config.FLAGS:
            return Config.FLAGS[name]
        raise AttributeError(f"Unrecognized config option: {name}")


config = Config()
