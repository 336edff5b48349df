"""The solver library's kernels, and its answers to the compiler (ir/ops/library.py's contract).

Solution "workitem_per_matrix" (rocSOLVER's batched small-matrix kernels): every work-item runs
one matrix's factorization (getrf, potrf), one right-hand side column's substitution (trsm) (the
row gather lapmr is a plain copy, a workgroup per row segment),
serially, as LAPACK's unblocked routines (getf2, potf2, trsv) do; 64 work-items a workgroup, as
many workgroups as the batch needs, so a stack of 10 000 matrices is one launch. The sizes and the
batch are scalar parameters: one kernel per routine, attributes and dtype serves every problem.
Large matrices are not given to one work-item: the frontend (frontend/cnp/linalg_blocked.py)
splits them into panels that these kernels factor and GEMM updates that libs/blas runs.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...ir.kernel import Kernel
from ...ir.targets import Target
from ...lowering.emitters import operand_buffers

SOLUTION = "workitem_per_matrix"
WORKGROUP_ITEMS = 64
INDEX = "i64"


def select(op: Op, target: Target) -> str:
    return SOLUTION


def explain(op: Op, target: Target) -> tuple[str, str]:
    if op.attrs["routine"] == "lapmr":
        return SOLUTION, "a workgroup per row segment of the result (the library's only solution)"
    unit = "right-hand side column" if op.attrs["routine"] == "trsm" else "matrix"
    return SOLUTION, f"one work-item per {unit}, the batch in the grid (the library's only solution)"


def sizes(*names: str) -> list[K.ScalarParam]:
    return [K.ScalarParam(name, INDEX) for name in names]


def resized(buffers, counts) -> list[K.GlobalBuffer]:
    """The op's buffers with counts that are extents of the size parameters (any problem size)."""
    return [K.GlobalBuffer(b.name, b.dtype, count, b.readonly) for b, count in zip(buffers, counts)]


def per_item(name, params, scalars, items, body, arguments) -> Kernel:
    """A kernel running body(g) for each g in [0, items), one work-item each."""
    g = K.Var("g", INDEX)
    linear = K.workgroup_id(0).cast(INDEX) * WORKGROUP_ITEMS + K.workitem_id(0).cast(INDEX)
    return K.Kernel(name, params=params + scalars, grid=(K.ceil_div(items, WORKGROUP_ITEMS),),
                    workgroup_size=(WORKGROUP_ITEMS,), body=[K.Let(g, linear), K.If(g < items, body(g))],
                    arguments=arguments)


def loop(var: str, start, stop, body) -> K.For:
    return K.For(K.Var(var, INDEX), start, stop, 1, body)


def getrf_kernel(op: Op, name: str) -> Kernel:
    batch, m, n = op.operands[0].type.shape
    b, rows, columns = sizes("batch", "m", "n")
    steps = K.minimum(rows, columns)
    a, lu, pivots, permutation = params = resized(
        operand_buffers(op), [b * rows * columns, b * rows * columns, b * steps, b * rows])
    i, j, k, p = (K.Var(v, INDEX) for v in "ijkp")
    best, value, pivot = (K.Var(v, a.dtype) for v in ("best", "value", "pivot"))

    def body(g):
        base = g * rows * columns
        at = lambda r, c: base + r * columns + c
        swap = K.Var("swap", a.dtype)
        swap_index = K.Var("swap_index", "i32")
        return [
            loop("e", 0, rows * columns, [K.Store(lu, base + K.Var("e", INDEX), a[base + K.Var("e", INDEX)])]),
            loop("i", 0, rows, [K.Store(permutation, g * rows + i, i.cast("i32"))]),
            loop("k", 0, steps, [
                # The pivot: the first entry of largest magnitude in column k, on or below the diagonal.
                K.Let(p, k), K.Let(best, K.abs(lu[at(k, k)])),
                loop("i", k + 1, rows, [
                    K.Let(value, K.abs(lu[at(i, k)])),
                    K.If(value > best, [K.Assign(best, value), K.Assign(p, i)])]),
                K.Store(pivots, g * steps + k, p.cast("i32")),
                K.If(p.ne(k), [
                    loop("j", 0, columns, [
                        K.Let(swap, lu[at(k, j)]), K.Store(lu, at(k, j), lu[at(p, j)]), K.Store(lu, at(p, j), swap)]),
                    K.Let(swap_index, permutation[g * rows + k]),
                    K.Store(permutation, g * rows + k, permutation[g * rows + p]),
                    K.Store(permutation, g * rows + p, swap_index)]),
                # L's column k (a zero pivot leaves it unscaled, as getf2), then the rank-1 update.
                K.Let(pivot, lu[at(k, k)]),
                K.If(pivot.ne(0), [loop("i", k + 1, rows, [K.Store(lu, at(i, k), lu[at(i, k)] / pivot)])]),
                loop("i", k + 1, rows, [
                    K.Let(value, lu[at(i, k)]),
                    loop("j", k + 1, columns, [K.Store(lu, at(i, j), lu[at(i, j)] - value * lu[at(k, j)])])])])]

    return per_item(name, params, [b, rows, columns], b, body, [("batch", batch), ("m", m), ("n", n)])


def potrf_kernel(op: Op, name: str) -> Kernel:
    batch, n, _ = op.operands[0].type.shape
    b, size = sizes("batch", "n")
    a, l = params = resized(operand_buffers(op), [b * size * size] * 2)
    i, j, k = (K.Var(v, INDEX) for v in "ijk")
    total, diagonal = K.Var("total", a.dtype), K.Var("diagonal", a.dtype)

    def body(g):
        at = lambda r, c: g * size * size + r * size + c
        return [
            loop("i", 0, size, [loop("j", 0, size, [K.Store(l, at(i, j), K.select(j <= i, a[at(i, j)], 0))])]),
            loop("j", 0, size, [
                # Column j from the columns before it (left-looking, potf2's order).
                K.Let(total, l[at(j, j)]),
                loop("k", 0, j, [K.Assign(total, total - l[at(j, k)] * l[at(j, k)])]),
                K.Let(diagonal, K.sqrt(total)), K.Store(l, at(j, j), diagonal),
                loop("i", j + 1, size, [
                    K.Assign(total, l[at(i, j)]),
                    loop("k", 0, j, [K.Assign(total, total - l[at(i, k)] * l[at(j, k)])]),
                    K.Store(l, at(i, j), total / diagonal)])])]

    return per_item(name, params, [b, size], b, body, [("batch", batch), ("n", n)])


def trsm_kernel(op: Op, name: str) -> Kernel:
    batch, n, _ = op.operands[0].type.shape
    columns = op.operands[1].type.shape[2]
    lower, trans, unit = (op.attrs[key] for key in ("lower", "trans", "unit_diagonal"))
    b, size, rhs = sizes("batch", "n", "k")
    a, x, y = params = resized(operand_buffers(op), [b * size * size, b * size * rhs, b * size * rhs])
    t, j = K.Var("t", INDEX), K.Var("j", INDEX)
    total = K.Var("total", a.dtype)
    forward = lower != trans        # op(A) is lower triangular: rows in order

    def body(g):
        matrix, column = g / rhs, g % rhs
        op_a = lambda r, c: a[matrix * size * size + (c * size + r if trans else r * size + c)]
        at = lambda r: matrix * size * rhs + r * rhs + column
        i = t if forward else size - 1 - t
        done = (0, i) if forward else (i + 1, size)
        solved = total if unit else total / op_a(i, i)
        return [
            loop("t", 0, size, [K.Store(y, at(t), x[at(t)])]),
            loop("t", 0, size, [
                K.Let(total, y[at(i)]),
                loop("j", *done, [K.Assign(total, total - op_a(i, j) * y[at(j)])]),
                K.Store(y, at(i), solved)])]

    return per_item(name, params, [b, size, rhs], b * rhs, body, [("batch", batch), ("n", n), ("k", columns)])


def laswp_kernel(op: Op, name: str) -> Kernel:
    batch, steps = op.operands[0].type.shape
    b, count, rows = sizes("batch", "pivots", "m")
    pivots, permutation, inverse = params = resized(operand_buffers(op), [b * count, b * rows, b * rows])
    i, k = K.Var("i", INDEX), K.Var("k", INDEX)
    p, swap = K.Var("p", INDEX), K.Var("swap", "i32")

    def body(g):
        at = lambda r: g * rows + r
        return [
            loop("i", 0, rows, [K.Store(permutation, at(i), i.cast("i32"))]),
            loop("k", 0, count, [
                K.Let(p, pivots[g * count + k].cast(INDEX)),
                K.Let(swap, permutation[at(k)]), K.Store(permutation, at(k), permutation[at(p)]),
                K.Store(permutation, at(p), swap)]),
            loop("i", 0, rows, [K.Store(inverse, at(permutation[at(i)].cast(INDEX)), i.cast("i32"))])]

    return per_item(name, params, [b, count, rows], b, body,
                    [("batch", batch), ("pivots", steps), ("m", op.attrs["rows"])])


def lapmr_kernel(op: Op, name: str) -> Kernel:
    """A workgroup per WORKGROUP_ITEMS columns of one row of Y (grid: columns, rows, matrices): a copy
    with no index division."""
    x_type, permutation_type = (v.type for v in op.operands)
    b, rows, columns, picked = sizes("batch", "m", "n", "p")
    x, permutation, y = params = resized(operand_buffers(op), [b * rows * columns, b * picked, b * picked * columns])
    column = K.workgroup_id(0).cast(INDEX) * WORKGROUP_ITEMS + K.workitem_id(0).cast(INDEX)
    row, matrix = K.workgroup_id(1).cast(INDEX), K.workgroup_id(2).cast(INDEX)
    source = matrix * rows + permutation[matrix * picked + row].cast(INDEX)
    body = [K.If(column < columns, [
        K.Store(y, (matrix * picked + row) * columns + column, x[source * columns + column])])]
    batch, m, n = x_type.shape
    return K.Kernel(name, params=params + [b, rows, columns, picked],
                    grid=(K.ceil_div(columns, WORKGROUP_ITEMS), picked, b), workgroup_size=(WORKGROUP_ITEMS,),
                    body=body, arguments=[("batch", batch), ("m", m), ("n", n), ("p", permutation_type.shape[1])])


KERNELS = {"getrf": getrf_kernel, "lapmr": lapmr_kernel, "potrf": potrf_kernel, "trsm": trsm_kernel, "laswp": laswp_kernel}


def emit(op: Op, name: str, target: Target) -> Kernel:
    return KERNELS[op.attrs["routine"]](op, name)
