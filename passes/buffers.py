"""Buffer assignment: which values of a module's top level may share memory, by liveness.

It applies after fusion, when each top-level op is one kernel (or library call, or host loop)
and the top level is the schedule. A value is live from the op that makes it to the last op that
reads it (a read inside an op's regions counts as a read by that op); the module's outputs stay
live to the end. A kernel reads its inputs while it writes its results, so a value made by op i and a
value last read by op i overlap. Values whose live ranges do not overlap may share a buffer.

Parameters (the caller's arrays) and constants (the executable's data) get no buffer. Values
inside regions (a `while` body's temporaries) are the host loop's business and are not assigned.
The assignment is a linear scan in schedule order: a value takes the smallest free buffer that
holds it, else the largest free buffer (grown to fit), else a new buffer. Nothing in the IR
changes: the result is a `BufferAssignment`.

It is an analysis, not a pass of the pipeline (passes/manager.py): the executable allocates each
call's results afresh (runtime/executable.py), and nothing in the compiler reads an assignment.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.core import Module, Value
from .rewrite import uses_of


@dataclass
class BufferAssignment:
    buffer_of: dict[Value, int]                 # value -> buffer id
    buffer_sizes: list[int]                     # bytes, by buffer id
    live_ranges: dict[Value, tuple[int, int]]   # value -> (index of the op making it, of the last reader)

    @property
    def total_bytes(self) -> int:
        return sum(self.buffer_sizes)

    @property
    def naive_bytes(self) -> int:
        """The bytes needed with one buffer per value."""
        return sum(value_bytes(v) for v in self.buffer_of)

    def __str__(self):
        lines = [f"{len(self.buffer_sizes)} buffers for {len(self.buffer_of)} values, "
                 f"{self.total_bytes} bytes (one buffer per value: {self.naive_bytes})"]
        for buffer, size in enumerate(self.buffer_sizes):
            ranges = [f"{v.type}@{self.live_ranges[v]}" for v, b in self.buffer_of.items() if b == buffer]
            lines.append(f"  buffer {buffer} ({size} bytes): " + ", ".join(ranges))
        return "\n".join(lines)


def value_bytes(value: Value) -> int:
    return value.type.size * value.type.numpy_dtype.itemsize


def live_ranges(module: Module) -> dict[Value, tuple[int, int]]:
    """(first, last) op index of every top-level op result but constants' (outputs: last = len(ops))."""
    ops = module.body.ops
    ranges = {v: (i, i) for i, op in enumerate(ops) if op.name != "constant" for v in op.results}
    by_id = {id(v): v for v in ranges}
    for j, op in enumerate(ops):
        for used in uses_of(op):
            if id(used) in by_id:
                value = by_id[id(used)]
                ranges[value] = (ranges[value][0], max(ranges[value][1], j))
    for output in module.outputs:
        if id(output) in by_id:
            ranges[by_id[id(output)]] = (ranges[by_id[id(output)]][0], len(ops))
    return ranges


def assign_buffers(module: Module) -> BufferAssignment:
    """Share buffers between the top-level values whose live ranges do not overlap."""
    ranges = live_ranges(module)
    buffer_of: dict[Value, int] = {}
    sizes: list[int] = []
    busy_until: list[int] = []   # by buffer: the last op index at which its current value is live
    for value, (first, last) in sorted(ranges.items(), key=lambda item: item[1][0]):
        needed = value_bytes(value)
        free = [b for b in range(len(sizes)) if busy_until[b] < first]
        fitting = [b for b in free if sizes[b] >= needed]
        if fitting:
            buffer = min(fitting, key=lambda b: (sizes[b], b))
        elif free:
            buffer = max(free, key=lambda b: (sizes[b], -b))
            sizes[buffer] = needed
        else:
            buffer = len(sizes)
            sizes.append(needed)
            busy_until.append(last)
        busy_until[buffer] = last
        buffer_of[value] = buffer
    return BufferAssignment(buffer_of, sizes, ranges)
