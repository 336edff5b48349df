"""Kernels of the indexing ops: dynamic_update_slice, gather and scatter; the in-place forms of the
updates, and copy. (dynamic_slice is a leaf of fused kernels: lowering/elemental_indexing.py.)

Index values (start scalars, gather/scatter index rows) are read in their own integer dtype and
widened to i64 (u64 for unsigned) before they are clamped or bounds-checked, so no start value
wraps whatever its dtype. An in-place scatter-add of several rows into 32- or 64-bit integers or
f32/f64 runs every update at once, each a relaxed atomic add (ir/kernel.py: AtomicRMW): exact for
integers, and for floats a sum in no promised order. Every other scatter is deterministic and
race-free: every element of `x` is written by exactly one work-item, which applies the update rows
in index order, as the reference does (`set`: the last in-bounds update wins; add/mul/min/max
combine in row order).

An in-place update (passes/in_place.py) gets its operand's buffer as its result: its kernel writes
only the updated elements and never reads the operand parameter, which the executable binds to
the same array.
"""
from __future__ import annotations

import math

from ..ir import kernel as K
from ..ir.types import NUMPY_DTYPES, UNSIGNED_INTS
from .elemental import HALF_FLOATS, row_major_strides
from .emit_ops import (WORKGROUP_ITEMS, all_of, combine, index_dtype, offset, one_item_per_element,
                       reject_complex, unravel)
from .emitters import emitter, operand_buffers
from .tiling import accumulator_dtype, span_elements

# The dtypes a relaxed atomic adds (ir/kernel.py: AtomicRMW).
ATOMIC_ADD_DTYPES = ("i32", "u32", "i64", "u64", "f32", "f64")


def widened(value: K.Expr) -> K.Expr:
    return value.cast("u64" if value.dtype in UNSIGNED_INTS else "i64")


def clamped(value: K.Expr, low: int, high: int, dtype: str) -> K.Expr:
    """`value` clamped to [low, high] (high >= low >= 0), as an index of `dtype`."""
    wide = widened(value)
    return K.minimum(K.maximum(wide, low), high).cast(dtype)


def in_bounds(value: K.Expr, size: int) -> K.Expr:
    wide = widened(value)
    return (wide >= 0) & (wide < size)


def start_variables(start_buffers, sizes, shape, dtype: str) -> tuple[list[K.Stmt], list[K.Var]]:
    """Let statements for the clamped start of each dimension, read from the scalar operands."""
    stmts, starts = [], []
    for d, (buffer, size, dim) in enumerate(zip(start_buffers, sizes, shape)):
        start = K.Var(f"start{d}", dtype)
        stmts.append(K.Let(start, clamped(buffer[0], 0, dim - size, dtype)))
        starts.append(start)
    return stmts, starts


@emitter("dynamic_update_slice")
def emit_dynamic_update_slice(op, name):
    reject_complex(op)
    x, update = op.operands[0].type, op.operands[1].type
    params = operand_buffers(op)
    source, updates, start_buffers, result = params[0], params[1], params[2:-1], params[-1]
    dtype = index_dtype(x.size, update.size)

    def body(i):
        stmts, starts = start_variables(start_buffers, update.shape, x.shape, dtype)
        coord_stmts, coords = unravel(i, x.shape, "c")
        relative = [c - s for c, s in zip(coords, starts)]
        inside = all_of((r >= 0) & (r < size) for r, size in zip(relative, update.shape))
        update_index = offset(relative, row_major_strides(update.shape), dtype)
        # An If, not a select: the update is read only where the index is in its range.
        return stmts + coord_stmts + [K.If(inside, [K.Store(result, i, updates[update_index])],
                                           [K.Store(result, i, source[i])])]
    return one_item_per_element(name, params, x.size, body, dtype)


@emitter("dynamic_update_slice_in_place")
def emit_dynamic_update_slice_in_place(op, name):
    """One work-item per element of the update, storing it at its place in the result."""
    reject_complex(op)
    x, update = op.operands[0].type, op.operands[1].type
    params = operand_buffers(op)
    updates, start_buffers, result = params[1], params[2:-1], params[-1]
    dtype = index_dtype(x.size, update.size)

    def body(i):
        stmts, starts = start_variables(start_buffers, update.shape, x.shape, dtype)
        coord_stmts, coords = unravel(i, update.shape, "c")
        target = offset([c + s for c, s in zip(coords, starts)], row_major_strides(x.shape), dtype)
        return stmts + coord_stmts + [K.Store(result, target, updates[i])]
    return one_item_per_element(name, params, update.size, body, dtype)


@emitter("copy")
def emit_copy(op, name):
    source, result = operand_buffers(op)
    dtype = index_dtype(op.result.type.size)
    return one_item_per_element(name, [source, result], op.result.type.size,
                                lambda i: [K.Store(result, i, source[i])], dtype)


@emitter("gather")
def emit_gather(op, name):
    reject_complex(op)
    x, indices, out = op.operands[0].type, op.operands[1].type, op.result.type
    params = operand_buffers(op)
    source, index_rows, result = params
    k = indices.shape[-1]
    batch_shape = indices.shape[:-1]
    dtype = index_dtype(x.size, indices.size, out.size)
    if any(x.shape[j] == 0 for j in range(k)):
        # Nothing to clamp into: the reference (XLA leaves it undefined) gives zeros.
        return one_item_per_element(name, params, out.size, lambda i: [K.Store(result, i, K.Const(0, out.dtype))],
                                    dtype)

    def body(i):
        stmts, coords = unravel(i, out.shape, "c")
        batch, rest = coords[:len(batch_shape)], coords[len(batch_shape):]
        row = K.Var("row", dtype)
        stmts.append(K.Let(row, offset(batch, row_major_strides(batch_shape), dtype) * k))
        chosen = []
        for j in range(k):
            chosen.append(K.Var(f"index{j}", dtype))
            stmts.append(K.Let(chosen[j], clamped(index_rows[row + j], 0, x.shape[j] - 1, dtype)))
        source_index = offset(chosen + rest, row_major_strides(x.shape), dtype)
        return stmts + [K.Store(result, i, source[source_index])]
    return one_item_per_element(name, params, out.size, body, dtype)


def atomic_scatter_add(op, name, dtype, window: int, row_target) -> K.Kernel:
    """Update element u (of R rows x W window elements) added into its element of x by a relaxed
    atomic: every update at once, over spans of the updates (so their reads are vectors on the GPU;
    integer sums are exact in any order; float sums round in the order the adds come, as JAX's GPU
    scatter-add does)."""
    params = operand_buffers(op)
    index_rows, updates, result = params[1], params[2], params[3]
    count = op.operands[2].type.size
    per_item = span_elements([NUMPY_DTYPES[index_rows.dtype].itemsize, NUMPY_DTYPES[updates.dtype].itemsize])
    span = WORKGROUP_ITEMS * per_item
    u, w, update = K.Var("u", dtype), K.Var("w", dtype), K.Var("update", updates.dtype)
    row = u if window == 1 else K.Var("r", dtype)
    stmts = [K.Let(update, updates[u])]
    if window > 1:
        stmts += [K.Let(row, u / window), K.Let(w, u % window)]
    valid, target = row_target(row, stmts)
    position = target * window + (w if window > 1 else 0)
    stmts.append(K.If(valid, [K.AtomicRMW(K.Var("old", updates.dtype), "add", result, position, update, relaxed=True)]))
    body = [K.ForSpan(u, K.workgroup_id(0).cast(dtype) * span, per_item, stmts, stop=count if count % span else None)]
    return K.Kernel(name, params=params, grid=(-(-count // span),), workgroup_size=(WORKGROUP_ITEMS,), body=body)


@emitter("scatter", "scatter_in_place")
def emit_scatter(op, name):
    """x = operand, indices rows of k indices into x's first k dimensions, updates one window of
    x.shape[k:] per row. With P windows in x, W elements per window and R rows: work-item w owns
    element w of every window (of x and of the updates), so no two work-items write one element.
    In place, x is the result already: the kernel only applies the rows."""
    reject_complex(op)
    in_place = op.name == "scatter_in_place"
    x, indices = op.operands[0].type, op.operands[1].type
    reduction = op.attrs["reduction"]
    k = indices.shape[-1]
    windows, window, rows = math.prod(x.shape[:k]), math.prod(x.shape[k:]), math.prod(indices.shape[:-1])
    dtype = index_dtype(x.size, indices.size, op.operands[2].type.size)
    params = operand_buffers(op)
    source, index_rows, updates, result = params
    window_strides = row_major_strides(x.shape[:k])

    def row_target(r, stmts) -> tuple[K.Expr, K.Expr]:
        """Append the reads of row r's indices; return (row in bounds, its window's number)."""
        chosen = []
        for j in range(k):
            chosen.append(K.Var(f"index{j}", index_rows.dtype))
            stmts.append(K.Let(chosen[j], index_rows[r * k + j]))
        valid = all_of(in_bounds(c, size) for c, size in zip(chosen, x.shape))
        target = offset([c.cast(dtype) for c in chosen], window_strides, dtype)
        return valid, target

    if in_place and reduction == "add" and x.dtype in ATOMIC_ADD_DTYPES and rows > 1:
        return atomic_scatter_add(op, name, dtype, window, row_target)

    if x.dtype in HALF_FLOATS and reduction in ("add", "mul"):
        # f16/bf16 sums and products combine in f32 and round once (as the reference): each
        # work-item owns one element of x and keeps its f32 accumulator while it scans the rows.
        wide = accumulator_dtype(x.dtype)

        def body(i):
            p, w, r, acc = K.Var("p", dtype), K.Var("w", dtype), K.Var("r", dtype), K.Var("acc", wide)
            row_stmts = []
            valid, target = row_target(r, row_stmts)
            update = updates[r * window + w].cast(wide)
            row_stmts.append(K.If(valid & target.eq(p), [K.Assign(acc, combine(reduction, acc, update))]))
            initial = (result if in_place else source)[i]
            return [K.Let(p, i / window), K.Let(w, i % window), K.Let(acc, initial.cast(wide)),
                    K.For(r, 0, rows, 1, row_stmts), K.Store(result, i, acc.cast(x.dtype))]
        return one_item_per_element(name, params, x.size, body, dtype)

    # Workgroup g owns the window elements w in [g * 256, g * 256 + width): its work-items first
    # copy those columns of x together (so a small window still copies in parallel), then, after
    # a barrier, work-item w applies every row to element w of its window, in row order.
    t, g, width, e, w, r = (K.Var(n, dtype) for n in ("t", "g", "width", "e", "w", "r"))
    first = g * WORKGROUP_ITEMS
    column = first + e % width
    copy = K.Store(result, (e / width) * window + column, source[(e / width) * window + column])
    row_stmts = []
    valid, target = row_target(r, row_stmts)
    position = K.Var("position", dtype)
    new = updates[r * window + w]
    if reduction != "set":
        new = combine(reduction, result[position], new)
    row_stmts.append(K.If(valid, [K.Let(position, target * window + w), K.Store(result, position, new)]))
    copy_columns = [
        K.Let(width, K.minimum(K.Const(WORKGROUP_ITEMS, dtype), window - first)),
        K.For(e, t, width * windows, WORKGROUP_ITEMS, [copy]),
        K.Barrier(),
    ]
    body = [
        K.Let(t, K.workitem_id(0).cast(dtype)),
        K.Let(g, K.workgroup_id(0).cast(dtype)),
        *([] if in_place else copy_columns),
        K.Let(w, first + t),
        K.If(w < window, [K.For(r, 0, rows, 1, row_stmts)]),
    ]
    return K.Kernel(name, params=params, grid=(-(-window // WORKGROUP_ITEMS),), workgroup_size=(WORKGROUP_ITEMS,),
                    body=body)
