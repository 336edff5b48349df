"""The elemental entry of `dynamic_slice`, a leaf of fused kernels (passes/fusion.py).

Element c of the slice is the operand's element c + s, with s the start scalars clamped to
[0, dim - size] as the op's reference (ir/ops/shape.py) and the standalone kernel
(emit_indexing.py's `clamped`: widened to i64/u64 first, so no start of any integer dtype wraps).
A start is read at the empty index: once per scope, from a 0-d buffer or a scalar computed in
the kernel.
"""
from __future__ import annotations

from .elemental import elemental
from .emit_indexing import clamped


@elemental("dynamic_slice")
def dynamic_slice(emitter, op, index, operand):
    x = op.operands[0].type
    scalar = emitter.index((), components=())
    comps = []
    for k, (c, size, dim) in enumerate(zip(index.components, op.attrs["slice_sizes"], x.shape)):
        start = operand(k + 1, scalar)
        comps.append(c + clamped(start, 0, dim - size, index.dtype) if dim > size else c)
    return operand(0, emitter.index(x.shape, components=comps))
