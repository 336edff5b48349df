"""Graph op -> kernel IR: the table of kernel emitters, one entry per graph op (or op kind).

After the passes, every top-level op of a region is one of
  - host work the runtime does itself: `constant` (data it holds), `while` and `cond` (loops and
    branches run on the host, their regions executed op by op in turn);
  - a kernel: a `fusion` op (passes/fusion.py) or an op the fusion pass leaves on its own
    (dot_general, conv_general_dilated, gather, scatter, sort, fft, cumulative, ...).
For a kernel op, `emit_kernel(op, name)` returns a `Kernel` whose parameters are, in order, one
`GlobalBuffer` per operand (read-only, named `in0`, `in1`, ...) and one per result (`out0`, ...),
each holding the value's elements in row-major order (complex values as interleaved parts:
`value_buffer`). The runtime binds arrays by that order.
An emitter is registered with `@emitter("opname", ...)` in the module of its family. An emitter
whose kernel depends on the target (tiling against its budgets) registers with
`takes_target=True` and is called `(op, name, target)`, the others `(op, name)`.
"""
from __future__ import annotations

from typing import Callable

from ..ir.core import Op
from ..ir.ops.callback import CALLBACK_OPS
from ..ir.kernel import GlobalBuffer, Kernel
from ..ir.targets import Target, get_target
from ..ir.types import COMPLEX_PART, COMPLEXES, TensorType

# Ops the schedule runs itself, with no kernel: constants, loops, branches and host callbacks.
HOST_OPS = frozenset({"constant", "while", "cond"}) | CALLBACK_OPS

KERNEL_EMITTERS: dict[str, Callable[[Op, str], Kernel]] = {}


def emitter(*opnames: str, takes_target: bool = False):
    """Register the decorated function `(op, kernel_name) -> Kernel` for these graph ops
    (`(op, kernel_name, target) -> Kernel` with `takes_target`)."""
    def register(fn):
        fn.takes_target = takes_target
        for opname in opnames:
            if opname in KERNEL_EMITTERS:
                raise ValueError(f"a kernel emitter for {opname!r} is registered twice")
            KERNEL_EMITTERS[opname] = fn
        return fn
    return register


def value_buffer(name: str, type: TensorType, readonly: bool = False) -> GlobalBuffer:
    """The buffer of a value of `type`: its elements, row-major (one element for an empty value). The
    kernel IR has no complex dtype: a c64 (c128) value is 2 x size f32 (f64) elements, the real and
    imaginary parts of each element interleaved, numpy's layout of a C-contiguous complex array."""
    if type.dtype in COMPLEXES:
        return GlobalBuffer(name, COMPLEX_PART[type.dtype], 2 * max(type.size, 1), readonly=readonly)
    return GlobalBuffer(name, type.dtype, max(type.size, 1), readonly=readonly)


def operand_buffers(op: Op) -> list[GlobalBuffer]:
    """The kernel parameters of an op's operands then results, as the module docstring fixes them."""
    inputs = [value_buffer(f"in{i}", v.type, readonly=True) for i, v in enumerate(op.operands)]
    outputs = [value_buffer(f"out{i}", v.type) for i, v in enumerate(op.results)]
    return inputs + outputs


def emit_kernel(op: Op, name: str, target: Target | None = None) -> Kernel:
    """The kernel computing `op` on `target` (default gfx942); NotImplementedError names an op
    that has no emitter yet."""
    try:
        emit = KERNEL_EMITTERS[op.name]
    except KeyError:
        raise NotImplementedError(f"no kernel emitter for graph op '{op.name}' yet") from None
    if getattr(emit, "takes_target", False):
        return emit(op, name, target or get_target())
    return emit(op, name)
