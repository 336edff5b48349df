"""host_callback: a call of a Python function on the values of its operands while the program runs
(jax.debug.callback / jax.debug.print).

    %token = host_callback %x, %y {callback = 3}      # bool[]: a token nothing needs to read

`callback` names a function of this process's registry (`register_callback`); the op's reference
(what the interpreter runs) and the executable's callback step (runtime/native_schedule.py) call it
with numpy arrays of the operands' values. It is the one op with an effect, and the passes keep it:
never folded, merged (canonicalize), removed for want of readers (passes/rewrite.py `mark_live`),
moved out of a loop (licm) or fused; callbacks run in program order (passes/fusion.py orders the
effectful nodes of a region as the program does), and so does a `while`/`cond` containing one.
`has_effects` says which ops those are.

A callback id means a function of this process only: a program holding one is not stored in the
persistent compile cache (runtime/executable.py).
"""
from __future__ import annotations

import itertools

import numpy as np

from ..core import Op
from ..opdef import define, set_rules
from ..types import TensorType

EFFECT_OPS = frozenset({"host_callback"})

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
