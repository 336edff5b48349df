"""Triangular solve kernels (routines.py's csrsv_levels, csrsv), rocSPARSE's csrsv with level
scheduling.

csrsv_levels (the analysis): one work-item walks the rows in dependency order, a row's level one
more than the highest level among the rows it reads, then counts the rows per level, scans the
counts into level_ptr and places each row at its level's cursor (the cursors end as the next
level's starts, then move up one place). It is sequential, O(m + nnz), run once per matrix.
csrsv (the solve): one workgroup of SOLVE_ITEMS work-items walks the levels in order; the rows of
a level depend only on earlier levels, so its work-items solve them side by side, then meet at a
barrier before the next level (complex values: the same schedule, arithmetic on their parts).
rocSPARSE instead lets each row wait on the rows it reads (a
flag in global memory per row); the kernel IR has no atomics or memory ordering between
work-items other than the barrier, so the levels are the synchronisation.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...ir.types import COMPLEXES
from ..solver.entries import Complex
from .common import INDEX, ITEMS, buffers, clamped, in_range, loop, sizes, variables, widened

SOLVE_ITEMS = 256


def in_triangle(column, r, lower: bool):
    return column < r if lower else column > r


def levels_kernel(op: Op, name: str) -> K.Kernel:
    m, total = params = sizes("m", "total")
    indptr, indices, order, level_ptr, levels, row_level = buffers(op, [m + 1, total, m, m + 1, 1, m])
    lower = op.attrs["lower"]
    t, r, p, column, level, highest, l, cursor = variables("t", "r", "p", "column", "level", "highest", "l", "cursor")
    index = order.dtype
    body = [
        K.Let(highest, K.Const(-1, INDEX)),
        loop(t, 0, m, [
            K.Let(r, t if lower else m - 1 - t), K.Let(level, K.Const(0, INDEX)),
            loop(p, clamped(indptr[r], total), clamped(indptr[r + 1], total), [
                K.Let(column, widened(indices[p])),
                K.If(in_triangle(column, r, lower) & in_range(column, m), [
                    K.Assign(level, K.maximum(level, widened(row_level[column]) + 1))])]),
            K.Store(row_level, r, level.cast(index)), K.Assign(highest, K.maximum(highest, level))]),
        K.Store(levels, 0, (highest + 1).cast(index)),
        # level_ptr[l + 1] = rows of level l, then the exclusive scan: level_ptr[l] = the first place of level l.
        loop(l, 0, m + 1, [K.Store(level_ptr, l, 0)]),
        loop(t, 0, m, [K.Let(l, widened(row_level[t]) + 1),
                       K.Store(level_ptr, l, level_ptr[l] + 1)]),
        loop(t, 0, m, [K.Store(level_ptr, t + 1, level_ptr[t + 1] + level_ptr[t])]),
        loop(t, 0, m, [K.Let(l, widened(row_level[t])), K.Let(cursor, widened(level_ptr[l])),
                       K.Store(order, cursor, t.cast(index)), K.Store(level_ptr, l, (cursor + 1).cast(index))]),
        loop(t, 0, m, [K.Store(level_ptr, m - t, level_ptr[m - 1 - t])]),
        K.Store(level_ptr, 0, 0)]
    rows = op.operands[0].type.shape[0] - 1
    return K.Kernel(name, params=[indptr, indices, order, level_ptr, levels, row_level, *params], grid=(1,),
                    workgroup_size=(ITEMS,), body=[K.If(K.workitem_id(0).eq(0), body)],
                    arguments=[("m", rows), ("total", op.operands[1].type.shape[0])])


def solve_kernel(op: Op, name: str) -> K.Kernel:
    """Real values: y[r] = (x[r] - sum data[p] y[column]) / diagonal. Complex values (c64, c128) are
    their interleaved parts (lowering.emitters.value_buffer), so counts double and the arithmetic is
    written on parts (complex_parts)."""
    complex_values = op.operands[2].type.dtype in COMPLEXES
    width = 2 if complex_values else 1
    m, total = params = sizes("m", "total")
    indptr, indices, data, order, level_ptr, levels, x, y = buffers(
        op, [m + 1, total, width * total, m, m + 1, 1, width * m, width * m])
    lower, unit = op.attrs["lower"], op.attrs["unit_diagonal"]
    l, q, r, p, column = variables("l", "q", "r", "p", "column")
    item = K.workitem_id(0).cast(INDEX)
    arithmetic = complex_parts(data, x, y) if complex_values else real_parts(data, x, y)
    start, subtract, take_diagonal, store = arithmetic
    row_solve = [
        K.Let(r, widened(order[q])), *start(r),
        loop(p, clamped(indptr[r], total), clamped(indptr[r + 1], total), [
            K.Let(column, widened(indices[p])),
            K.If(in_triangle(column, r, lower) & in_range(column, m), subtract(p, column),
                 [] if unit else [K.If(column.eq(r), take_diagonal(p))])]),
        *store(r)]
    body = [K.For(l, 0, widened(levels[0]), 1, [
        K.For(q, widened(level_ptr[l]) + item, widened(level_ptr[l + 1]), SOLVE_ITEMS, row_solve),
        K.Barrier()], uniform=True)]
    rows = op.operands[0].type.shape[0] - 1
    return K.Kernel(name, params=[indptr, indices, data, order, level_ptr, levels, x, y, *params], grid=(1,),
                    workgroup_size=(SOLVE_ITEMS,), body=body,
                    arguments=[("m", rows), ("total", op.operands[1].type.shape[0])])


def real_parts(data, x, y):
    """(start, subtract, take_diagonal, store) statement builders for real values."""
    acc, diagonal = K.Var("acc", x.dtype), K.Var("diagonal", x.dtype)
    return ((lambda r: [K.Let(acc, x[r]), K.Let(diagonal, K.Const(1, x.dtype))]),
            (lambda p, column: [K.Assign(acc, acc - data[p] * y[column])]),
            (lambda p: [K.Assign(diagonal, data[p])]),
            (lambda r: [K.Store(y, r, acc / diagonal)]))


def complex_parts(data, x, y):
    """The same for complex values on parts: acc -= t y as (tr yr - ti yi, tr yi + ti yr); the
    division by the diagonal d by Smith's algorithm (libs/solver/entries.py's Complex: no part is
    squared, so no overflow or underflow a |d|^2 would bring). routines.csrsv_complex does the same
    operations in the same order."""
    part = x.dtype
    ar, ai, dr, di, tr, ti = variables("ar", "ai", "dr", "di", "tr", "ti", dtype=part)
    quotient = Complex(ar, ai) / Complex(dr, di)
    return ((lambda r: [K.Let(ar, x[2 * r]), K.Let(ai, x[2 * r + 1]),
                        K.Let(dr, K.Const(1, part)), K.Let(di, K.Const(0, part))]),
            (lambda p, column: [K.Let(tr, data[2 * p]), K.Let(ti, data[2 * p + 1]),
                                K.Assign(ar, ar - (tr * y[2 * column] - ti * y[2 * column + 1])),
                                K.Assign(ai, ai - (tr * y[2 * column + 1] + ti * y[2 * column]))]),
            (lambda p: [K.Assign(dr, data[2 * p]), K.Assign(di, data[2 * p + 1])]),
            (lambda r: [K.Store(y, 2 * r, quotient.re), K.Store(y, 2 * r + 1, quotient.im)]))
