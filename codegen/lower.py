"""Graph op -> kernel IR: the table of kernel emitters, one entry per graph op (or op kind).

After the passes, every top-level op of a region is one of
  - host work the runtime does itself: `constant` (data it holds), `while` and `cond` (loops and
    branches run on the host, their regions executed op by op in turn);
  - a kernel: a `fusion` op (passes/fusion.py) or an op the fusion pass leaves on its own
    (dot_general, conv_general_dilated, gather, scatter, sort, fft, cumulative, ...).
For a kernel op, `emit_kernel(op, name)` returns a `Kernel` whose parameters are, in order, one
`GlobalBuffer` per operand (read-only, named `in0`, `in1`, ...) and one per result (`out0`, ...),
each holding the value's elements in row-major order. The runtime binds arrays by that order.
An emitter is registered with `@emitter("opname", ...)` in the module of its family.
"""
from __future__ import annotations

from typing import Callable

from ..ir.core import Op
from ..ir.kernel import GlobalBuffer, Kernel

HOST_OPS = frozenset({"constant", "while", "cond"})

KERNEL_EMITTERS: dict[str, Callable[[Op, str], Kernel]] = {}


def emitter(*opnames: str):
    """Register the decorated function `(op, kernel_name) -> Kernel` for these graph ops."""
    def register(fn):
        for opname in opnames:
            if opname in KERNEL_EMITTERS:
                raise ValueError(f"a kernel emitter for {opname!r} is registered twice")
            KERNEL_EMITTERS[opname] = fn
        return fn
    return register


def operand_buffers(op: Op) -> list[GlobalBuffer]:
    """The kernel parameters of an op's operands then results, as the module docstring fixes them."""
    inputs = [GlobalBuffer(f"in{i}", v.type.dtype, max(v.type.size, 1), readonly=True)
              for i, v in enumerate(op.operands)]
    outputs = [GlobalBuffer(f"out{i}", v.type.dtype, max(v.type.size, 1)) for i, v in enumerate(op.results)]
    return inputs + outputs


def emit_kernel(op: Op, name: str) -> Kernel:
    """The kernel computing `op`; NotImplementedError names an op that has no emitter yet."""
    try:
        emit = KERNEL_EMITTERS[op.name]
    except KeyError:
        raise NotImplementedError(f"no kernel emitter for graph op '{op.name}' yet") from None
    return emit(op, name)
