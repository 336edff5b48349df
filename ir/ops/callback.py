"""Calls of a Python function on the values of their operands while the program runs.

    %token = host_callback %x, %y {callback = 3}      # bool[]: a token nothing needs to read
    %r = pure_callback %x {callback = 4, num_results = 1, result0_dtype = f32, result0_shape = [3],
                           vmap_method = "sequential"}
    %s = io_callback %x {callback = 5, num_results = 1, result0_dtype = f32, result0_shape = [3]}

`host_callback` is jax.debug.callback / jax.debug.print: an effect, its result a token.
`pure_callback` is jax.pure_callback: its results are what the function returns (checked against
the declared types when it returns), and it is pure, as JAX's: the passes may merge two equal ones
or drop one nothing reads, but never run it at compile time (folding). `io_callback` is
jax.experimental.io_callback(ordered=True): results as pure_callback's, effects as host_callback's
(the partitioner's collectives between processes are such calls: every process must run them in the
same order, each exactly once).

`callback` names a function of this process's registry (`register_callback`); the op's reference
(what the interpreter runs) and the executable's callback step (runtime/native_schedule.py) call it
with numpy arrays of the operands' values. host_callback and io_callback are the ops with an effect, and the passes keep them:
never folded, merged (canonicalize), removed for want of readers (passes/rewrite.py `mark_live`),
moved out of a loop (licm) or fused; callbacks run in program order (passes/fusion.py orders the
effectful nodes of a region as the program does), and so does a `while`/`cond` containing one.
`has_effects` says which ops those are.

A callback id means a function of this process only: a program holding one (CALLBACK_OPS) is not
stored in the persistent compile cache (runtime/executable.py).
"""
from __future__ import annotations

import itertools

import numpy as np

from ..core import Op
from ..opdef import define, set_rules
from ..types import TensorType

EFFECT_OPS = frozenset({"host_callback", "io_callback"})
CALLBACK_OPS = frozenset({"host_callback", "pure_callback", "io_callback"})

# id -> the Python function. Held for the life of the process: a program compiled with an id may
# run at any later time (the registry grows by one entry per traced debug.print / callback).
CALLBACKS: dict[int, object] = {}
_ids = itertools.count()


def register_callback(function) -> int:
    """The id of `function` in the registry (a new one per call)."""
    key = next(_ids)
    CALLBACKS[key] = function
    return key


def has_effects(op: Op) -> bool:
    """Whether running `op` runs a callback: it is one, or one is in its regions."""
    return op.name in EFFECT_OPS or any(has_effects(inner) for region in op.regions for inner in region.ops)


TOKEN = TensorType("bool", ())


def host_callback_infer(types, attrs, regions):
    return [TOKEN]


def host_callback(*operands, callback):
    CALLBACKS[callback](*[np.array(x) for x in operands])
    return np.zeros((), np.bool_)


define("host_callback", infer=host_callback_infer, reference=host_callback, attrs={"callback": "int"},
       doc="calls the registry's Python function `callback` on its operands' values; a bool[] token")


def pure_callback_attrs(attrs: dict) -> dict:
    """Each result's dtype and shape: result<k>_dtype, result<k>_shape."""
    return {f"result{k}_{field}": kind for k in range(attrs.get("num_results", 0))
            for field, kind in (("dtype", "dtype"), ("shape", "ints"))}


def pure_callback_types(attrs: dict) -> list[TensorType]:
    return [TensorType(attrs[f"result{k}_dtype"], tuple(attrs[f"result{k}_shape"])) for k in range(attrs["num_results"])]


def pure_callback_infer(types, attrs, regions):
    return pure_callback_types(attrs)


def run_pure_callback(callback: int, arrays: list[np.ndarray], types: list[TensorType]) -> list[np.ndarray]:
    """The registry's function `callback` called on `arrays`: its results, checked against `types`
    (a mismatch is the user's error, a TypeError naming both, as JAX's runtime check)."""
    return checked_results(CALLBACKS[callback](*arrays), types)


def checked_results(results: list, types: list[TensorType]) -> list[np.ndarray]:
    """A pure callback's results as arrays, each checked against its declared type."""
    if len(results) != len(types):
        raise TypeError(f"pure_callback: the callback returned {len(results)} arrays, expected {len(types)}")
    checked = []
    for k, (result, want) in enumerate(zip(results, types)):
        result = np.asarray(result)
        if result.shape != want.shape or result.dtype != want.numpy_dtype:
            raise TypeError(f"pure_callback: result {k} of the callback is {result.dtype}{list(result.shape)}, "
                            f"expected {want.numpy_dtype}{list(want.shape)} (its result_shape_dtypes)")
        checked.append(result)
    return checked


def pure_callback(*operands, callback, num_results, vmap_method=None, **result_types):
    """pure_callback's and io_callback's reference: the function's results, checked."""
    types = pure_callback_types({"num_results": num_results, **result_types})
    return tuple(run_pure_callback(callback, [np.array(x) for x in operands], types))


define("pure_callback", infer=pure_callback_infer, reference=pure_callback,
       attrs={"callback": "int", "vmap_method": "str?", "num_results": "int"}, more_attrs=pure_callback_attrs,
       doc="the registry's Python function `callback` on its operands' values: its results, of the declared types")


define("io_callback", infer=pure_callback_infer, reference=pure_callback,
       attrs={"callback": "int", "num_results": "int"}, more_attrs=pure_callback_attrs,
       doc="pure_callback's call with an effect: run once, in program order, never merged, moved or dropped")


# ---- transformation rules ---------------------------------------------------------------------
# The callback sees primal values only, as JAX's debug callbacks: forward mode emits it once on the
# primals (the transformation re-emits the op itself), reverse mode gives its operands no cotangent.
# vmap calls it once per lane, in lane order, with that lane's values (JAX's rule for debug_callback).

def host_callback_jvp(b, op, primals, tangents, outs):
    return [None]


def host_callback_vjp(b, op, primals, outs, cts):
    return [None] * len(primals)


def lane(b, x, batched: bool, k: int):
    """Lane k of x (its leading dimension when batched)."""
    if not batched:
        return x
    shape = x.type.shape
    row = b.op("slice", x, start_indices=(k,) + (0,) * (len(shape) - 1), limit_indices=(k + 1,) + shape[1:],
               strides=(1,) * len(shape))
    return b.reshape(row, shape[1:])


def host_callback_batch(b, op, operands, batched):
    tokens = [b.ops("host_callback", [lane(b, x, f, k) for x, f in zip(operands, batched)], op.attrs)[0]
              for k in range(b.axis_size)]
    return tokens[-1:] if tokens else [b.full((), False, "bool")], [False]


set_rules("host_callback", jvp=host_callback_jvp, vjp=host_callback_vjp, batch=host_callback_batch)


# JAX's rules for pure_callback: no derivative (the callback is opaque: use custom_jvp around it);
# vmap as `vmap_method` says, and not at all without one.

def pure_callback_jvp(b, op, primals, tangents, outs):
    raise ValueError(f"Pure callbacks do not support JVP (pure_callback at {op.location}). Please use "
                     f"`custom_jvp` to use callbacks while taking gradients.")


def pure_callback_vjp(b, op, primals, outs, cts):
    pure_callback_jvp(b, op, primals, None, outs)


def stacked(b, lanes, t: TensorType):
    """The lanes' values of type t, stacked along a new leading dimension."""
    rows = [b.reshape(x, (1,) + t.shape) for x in lanes]
    return rows[0] if len(rows) == 1 else b.op("concatenate", *rows, dimension=0)


def pure_callback_batch(b, op, operands, batched, method=None, name="pure_callback"):
    method, n, types = method or op.attrs["vmap_method"], b.axis_size, pure_callback_types(op.attrs)
    if method in ("sequential", "sequential_unrolled"):
        if n == 0:
            return [b.full((0,) + t.shape, 0, t.dtype) for t in types], [True] * len(types)
        lanes = [b.ops(name, [lane(b, x, f, k) for x, f in zip(operands, batched)], op.attrs)
                 for k in range(n)]
        return [stacked(b, [results[i] for results in lanes], t) for i, t in enumerate(types)], [True] * len(types)
    if method in ("expand_dims", "broadcast_all"):
        # The callback gets every operand with a leading batch dimension: of size 1 for an unbatched
        # one under expand_dims, broadcast to the batch under broadcast_all; it returns batched results.
        def with_batch_dim(x, is_batched):
            if is_batched:
                return x
            shape = x.type.shape
            if method == "expand_dims":
                return b.reshape(x, (1,) + shape)
            return b.op("broadcast_in_dim", x, shape=(n,) + shape, broadcast_dimensions=tuple(range(1, len(shape) + 1)))
        attrs = {**op.attrs, **{f"result{k}_shape": (n,) + t.shape for k, t in enumerate(types)}}
        results = b.ops("pure_callback", [with_batch_dim(x, f) for x, f in zip(operands, batched)], attrs)
        return results, [True] * len(types)
    raise NotImplementedError(
        f"vmap of pure_callback (at {op.location}) needs vmap_method 'sequential', 'sequential_unrolled', "
        f"'expand_dims' or 'broadcast_all', as JAX's; got vmap_method={method!r}")


set_rules("pure_callback", jvp=pure_callback_jvp, vjp=pure_callback_vjp, batch=pure_callback_batch)


# io_callback, as JAX's: no derivative; vmap calls it once per lane, in lane order.

def io_callback_jvp(b, op, primals, tangents, outs):
    raise ValueError(f"IO callbacks do not support JVP (io_callback at {op.location}).")


def io_callback_vjp(b, op, primals, outs, cts):
    io_callback_jvp(b, op, primals, None, outs)


def io_callback_batch(b, op, operands, batched):
    return pure_callback_batch(b, op, operands, batched, method="sequential", name="io_callback")


set_rules("io_callback", jvp=io_callback_jvp, vjp=io_callback_vjp, batch=io_callback_batch)
