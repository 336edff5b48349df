"""The solver library's kernels, and its answers to the compiler (ir/ops/library.py's contract).

Solution "workitem_per_matrix" (rocSOLVER's batched small-matrix kernels): every work-item runs,
serially as LAPACK's unblocked routines do, one matrix's factorization or decomposition (getrf:
getf2, potrf: potf2, geqrf/orgqr: geqr2/org2r, syev: sytd2 + implicit QR, syevj, gesvdj, gebal,
geev: gehd2 + Francis double-shift QR, or single-shift QR for complex matrices, laswp)
or one right-hand side column's substitution (trsm, getrs, potrs) or one column of an inverse
(getri, trtri) or one eigenvalue's vector (trevc); 64 work-items a workgroup, as many workgroups
as the batch needs, so a stack of 10 000 matrices is one launch. Each kernel is written once for
real and complex matrices (entries.py's Field: a complex entry is a (re, im) pair of expressions). The row gather lapmr is a plain copy, a
workgroup per row. Solution "workgroup_per_matrix" runs geqrf's steps for a few tall panels (the
recursive QR's leaves) a workgroup per matrix, each reflection a column per work-item; solution
"workgroup_per_column" getrs of few right-hand sides a workgroup per column. The sizes and the batch are scalar parameters: one kernel per routine,
attributes and dtype serves every problem. Large LU, Cholesky and triangular solves are not given
to one work-item: the frontend (frontend/cnp/linalg_solver.py) splits them recursively into leaves
that these kernels factor and GEMM updates that libs/blas runs (QR too, in compact WY form); the
reductions of eigh and svd have no blocked form yet: a large matrix's reduction is one workgroup's
steps (sytrd, tridiagonal_kernels.py; gebrd, bidiagonal_kernels.py), eig's (geev) one work-item's; svd's
and the leaves of eigh's divide and conquer have their rotations applied by lasr, a work-item per row. across and summed spread
a workgroup's work-items over a row's entries.
"""
from __future__ import annotations

import numpy as np

from ...ir import kernel as K
from ...ir.core import Op
from ...ir.kernel import Kernel
from ...ir.targets import Target
from ...ir.types import NUMPY_DTYPES
from ...lowering.emitters import operand_buffers
from .entries import Complex, Field
from .routines import MAX_BALANCING_SWEEPS, MAX_QR_STEPS, MAX_SWEEPS

SOLUTION = "workitem_per_matrix"
WORKGROUP_ITEMS = 64
INDEX = "i64"
WORKGROUP_GEBRD_FROM = 64   # columns; measured on the host (f64, loaded machine), one work-item vs a workgroup
# per matrix: 2000 4x4 0.26 vs 0.77 ms, 300 16x16 0.6 vs 2.6, 100 32x32 1.2 vs 1.6, 10 64x64 1.0 vs 0.8, one
# 128x128 0.9 vs 0.7, one 1000x1000 490 vs 320 ms (CPU time).


WORKGROUP_PER_COLUMN = "workgroup_per_column"
WORKGROUP_GETRS_FROM = 256   # rows; getrs of fewer right-hand side columns than a workgroup has work-items
# then takes a workgroup per column. Measured on the host (f64, one column, loaded machine): n = 2000
# 3.0 ms a work-item per column (one dependent multiply-add after another), 1.3 ms a workgroup.


WORKGROUP_PER_MATRIX = "workgroup_per_matrix"
WORKGROUP_PANEL_ROWS, WORKGROUP_PANEL_COLUMNS = 64, 32   # from these, a geqrf of fewer matrices than a
# workgroup has work-items takes a workgroup per matrix. Measured on the host (f64, one panel, loaded machine), a
# work-item vs a workgroup: 2000x32 2.9 vs 2.4 ms, 1000x32 1.4 vs 1.2, 300x32 0.39 vs 0.34, but 2000x16 0.59
# vs 0.88 (a step's reflection sweeps all 64 work-items, so narrow panels leave most of them idle).


def select(op: Op, target: Target) -> str:
    if substitutes_by_workgroup(op):
        return WORKGROUP_PER_COLUMN
    return WORKGROUP_PER_MATRIX if factors_by_workgroup(op) else SOLUTION


def factors_by_workgroup(op: Op) -> bool:
    """Whether a geqrf panel is spread over a workgroup per matrix: tall panels of too few matrices to
    fill the grid a work-item each (the recursive QR's leaves of a few large matrices)."""
    if op.attrs["routine"] != "geqrf":
        return False
    batch, m, n = op.operands[0].type.shape
    return m >= WORKGROUP_PANEL_ROWS and n >= WORKGROUP_PANEL_COLUMNS and batch < WORKGROUP_ITEMS


def substitutes_by_workgroup(op: Op) -> bool:
    """Whether getrs spreads each column's substitutions over a workgroup: long rows, and too few
    columns (the batch's together) to fill one workgroup a work-item each."""
    if op.attrs["routine"] != "getrs":
        return False
    batch, n, _ = op.operands[0].type.shape
    return n >= WORKGROUP_GETRS_FROM and batch * op.operands[2].type.shape[2] < WORKGROUP_ITEMS


def explain(op: Op, target: Target) -> tuple[str, str]:
    if op.attrs["routine"] == "lapmr":
        return SOLUTION, "a workgroup per row of the result (the library's only solution)"
    if substitutes_by_workgroup(op):
        return WORKGROUP_PER_COLUMN, (f"a workgroup per right-hand side column, its work-items on consecutive "
                                      f"entries of a row of L and U (from {WORKGROUP_GETRS_FROM} rows, fewer "
                                      f"columns than a workgroup's {WORKGROUP_ITEMS} work-items)")
    if factors_by_workgroup(op):
        return WORKGROUP_PER_MATRIX, (f"a workgroup per matrix, the reflections' work-items on consecutive columns "
                                      f"of a row (from {WORKGROUP_PANEL_ROWS} rows and {WORKGROUP_PANEL_COLUMNS} "
                                      f"columns, fewer matrices than a workgroup's {WORKGROUP_ITEMS} work-items)")
    unit = {"trsm": "right-hand side column", "getrs": "right-hand side column", "potrs": "right-hand side column",
            "getri": "column of the inverse", "trtri": "column of the inverse",
            "trevc": "eigenvalue's vector", "lasr": "row of the matrix turned",
            "laed1": "merge", "lasd1": "merge"}.get(op.attrs["routine"], "matrix")
    if op.attrs["routine"] in ("sytrd", "latrd") or (
            op.attrs["routine"] == "gebrd" and op.operands[0].type.shape[2] >= WORKGROUP_GEBRD_FROM):
        return SOLUTION, "a workgroup per matrix, its work-items on consecutive entries of a row, the batch in the grid"
    return SOLUTION, f"one work-item per {unit}, the batch in the grid (the library's only solution)"


def sizes(*names: str) -> list[K.ScalarParam]:
    return [K.ScalarParam(name, INDEX) for name in names]


def resized(op: Op, counts) -> list[K.GlobalBuffer]:
    """The op's buffers (operands then results) with `counts` entries each, extents of the size
    parameters (any problem size); a complex value's buffer holds two elements an entry."""
    types = [v.type for v in (*op.operands, *op.results)]
    return [K.GlobalBuffer(b.name, b.dtype, count * Field(t.dtype).width, b.readonly)
            for b, t, count in zip(operand_buffers(op), types, counts)]


def per_item(name, params, scalars, items, body, arguments) -> Kernel:
    """A kernel running body(g) for each g in [0, items), one work-item each."""
    g = K.Var("g", INDEX)
    linear = K.workgroup_id(0).cast(INDEX) * WORKGROUP_ITEMS + K.workitem_id(0).cast(INDEX)
    return K.Kernel(name, params=params + scalars, grid=(K.ceil_div(items, WORKGROUP_ITEMS),),
                    workgroup_size=(WORKGROUP_ITEMS,), body=[K.Let(g, linear), K.If(g < items, body(g))],
                    arguments=arguments)


def loop(var: str, start, stop, body) -> K.For:
    return K.For(K.Var(var, INDEX), start, stop, 1, body)


def copied(source, target, first, count) -> K.For:
    """Buffer elements first.. first + count of source copied to target."""
    e = K.Var("e", INDEX)
    return loop("e", first, first + count, [K.Store(target, e, source[e])])


def across(var: str, first, stop, body) -> K.For:
    """body(j) for j in first..stop - 1, the workgroup's work-items on consecutive j (a uniform loop
    over blocks of WORKGROUP_ITEMS: a vector loop on the host, coalesced on a GPU)."""
    lane, start = K.workitem_id(0).cast(INDEX), K.Var(var, INDEX)
    return K.For(start, first, stop, WORKGROUP_ITEMS, [K.If(start + lane < stop, body(start + lane))], uniform=True)


def summed(total: K.Var, partial: K.Var, var: str, first, stop, term) -> list:
    """total = the sum of term(j) over j in first..stop - 1, the same in every work-item of a one-wave
    workgroup (partial: a work-item's share)."""
    return [K.Assign(partial, K.Const(0, partial.dtype)),
            across(var, first, stop, lambda j: [K.Assign(partial, partial + term(j))]),
            K.WaveReduce(total, "sum", partial)]


def getrf_kernel(op: Op, name: str) -> Kernel:
    batch, m, n = op.operands[0].type.shape
    f = Field(op.operands[0].type.dtype)
    b, rows, columns = sizes("batch", "m", "n")
    steps = K.minimum(rows, columns)
    a, lu, pivots, permutation = params = resized(op, [b * rows * columns, b * rows * columns, b * steps, b * rows])
    i, j, k, p = (K.Var(v, INDEX) for v in "ijkp")
    best, magnitude = K.Var("best", f.part), K.Var("magnitude", f.part)
    pivot, multiplier, swap = f.var("pivot"), f.var("multiplier"), f.var("swap")

    def body(g):
        base = g * rows * columns
        at = lambda r, c: base + r * columns + c
        entry = lambda r, c: f.read(lu, at(r, c))
        swap_index = K.Var("swap_index", "i32")
        return [
            copied(a, lu, base * f.width, rows * columns * f.width),
            loop("i", 0, rows, [K.Store(permutation, g * rows + i, i.cast("i32"))]),
            loop("k", 0, steps, [
                # The pivot: the first entry of largest magnitude in column k, on or below the diagonal.
                K.Let(p, k), K.Let(best, f.magnitude(entry(k, k))),
                loop("i", k + 1, rows, [
                    K.Let(magnitude, f.magnitude(entry(i, k))),
                    K.If(magnitude > best, [K.Assign(best, magnitude), K.Assign(p, i)])]),
                K.Store(pivots, g * steps + k, p.cast("i32")),
                K.If(p.ne(k), [
                    loop("j", 0, columns, [
                        *f.let(swap, entry(k, j)), *f.write(lu, at(k, j), entry(p, j)), *f.write(lu, at(p, j), swap)]),
                    K.Let(swap_index, permutation[g * rows + k]),
                    K.Store(permutation, g * rows + k, permutation[g * rows + p]),
                    K.Store(permutation, g * rows + p, swap_index)]),
                # L's column k (a zero pivot leaves it unscaled, as getf2), then the rank-1 update.
                *f.let(pivot, entry(k, k)),
                K.If(f.nonzero(pivot), [loop("i", k + 1, rows, f.write(lu, at(i, k), entry(i, k) / pivot))]),
                loop("i", k + 1, rows, [
                    *f.let(multiplier, entry(i, k)),
                    loop("j", k + 1, columns, f.write(lu, at(i, j), entry(i, j) - multiplier * entry(k, j)))])])]

    return per_item(name, params, [b, rows, columns], b, body, [("batch", batch), ("m", m), ("n", n)])


def potrf_kernel(op: Op, name: str) -> Kernel:
    """potf2, left-looking; for a complex (Hermitian) A, L L^H with a real diagonal (the imaginary
    part of A's diagonal is not read)."""
    batch, n, _ = op.operands[0].type.shape
    f = Field(op.operands[0].type.dtype)
    b, size = sizes("batch", "n")
    a, l = params = resized(op, [b * size * size] * 2)
    i, j, k = (K.Var(v, INDEX) for v in "ijk")
    total, diagonal = f.var("total"), K.Var("diagonal", f.part)

    def body(g):
        at = lambda r, c: g * size * size + r * size + c
        entry = lambda r, c: f.read(l, at(r, c))
        return [
            loop("i", 0, size, [loop("j", 0, size, f.write(l, at(i, j), f.select(j <= i, f.read(a, at(i, j)),
                                                                                  f.const(0))))]),
            loop("j", 0, size, [
                # Column j from the columns before it (left-looking, potf2's order).
                *f.let(total, entry(j, j)),
                loop("k", 0, j, f.assign(total, total - entry(j, k) * f.conj(entry(j, k)))),
                K.Let(diagonal, K.sqrt(f.real(total))), *f.write(l, at(j, j), f.from_real(diagonal)),
                loop("i", j + 1, size, [
                    *f.assign(total, entry(i, j)),
                    loop("k", 0, j, f.assign(total, total - entry(i, k) * f.conj(entry(j, k)))),
                    *f.write(l, at(i, j), total / diagonal)])])]

    return per_item(name, params, [b, size], b, body, [("batch", batch), ("n", n)])


def substitution(f: Field, op_a, y, at, size, forward: bool, unit: bool, total):
    """Statements solving op_a(i, j) y = y in place for one column (y the buffer, at(row) the
    index of its entry in row), rows in order for a lower triangular op_a (forward), else in
    reverse."""
    t, j = K.Var("t", INDEX), K.Var("j", INDEX)
    i = t if forward else size - 1 - t
    done = (0, i) if forward else (i + 1, size)
    solved = total if unit else total / op_a(i, i)
    return [loop("t", 0, size, [
        *f.let(total, f.read(y, at(i))),
        loop("j", *done, f.assign(total, total - op_a(i, j) * f.read(y, at(j)))),
        *f.write(y, at(i), solved)])]


def trsm_kernel(op: Op, name: str) -> Kernel:
    batch, n, _ = op.operands[0].type.shape
    columns = op.operands[1].type.shape[2]
    f = Field(op.operands[0].type.dtype)
    lower, trans, unit = (op.attrs[key] for key in ("lower", "trans", "unit_diagonal"))
    b, size, rhs = sizes("batch", "n", "k")
    a, x, y = params = resized(op, [b * size * size, b * size * rhs, b * size * rhs])
    total = f.var("total")

    def body(g):
        matrix, column = g / rhs, g % rhs
        entry = lambda r, c: f.read(a, matrix * size * size + r * size + c)
        op_a = (lambda r, c: f.conj(entry(c, r))) if trans else entry
        at = lambda r: matrix * size * rhs + r * rhs + column
        return [copied_column(x, y, at, size, f), *substitution(f, op_a, y, at, size, lower != trans, unit, total)]

    return per_item(name, params, [b, size, rhs], b * rhs, body, [("batch", batch), ("n", n), ("k", columns)])


def copied_column(x, y, at, size, f: Field) -> K.For:
    """One right-hand side column's entries (at(row) their index) copied from x to y."""
    t = K.Var("t", INDEX)
    return loop("t", 0, size, f.write(y, at(t), f.read(x, at(t))))


def getrs_kernel(op: Op, name: str) -> Kernel:
    """One work-item per right-hand side column: its rows permuted, then L's and U's substitutions
    (a workgroup per column: getrs_workgroup_kernel)."""
    if op.attrs["solution"] == WORKGROUP_PER_COLUMN:
        return getrs_workgroup_kernel(op, name)
    batch, n, _ = op.operands[0].type.shape
    columns = op.operands[2].type.shape[2]
    f = Field(op.operands[0].type.dtype)
    b, size, rhs = sizes("batch", "n", "k")
    lu, permutation, x, y = params = resized(op, [b * size * size, b * size, b * size * rhs, b * size * rhs])
    rows_of_x = lambda matrix, row, column: f.read(x, matrix * size * rhs + row * rhs + column)
    return lu_substitutions(f, name, params, lu, permutation, y, [b, size, rhs], rows_of_x,
                            [("batch", batch), ("n", n), ("k", columns)])


def getrs_workgroup_kernel(op: Op, name: str) -> Kernel:
    """A workgroup per right-hand side column (grid: the batch's columns): its rows permuted, then
    L's and U's substitutions a row at a time, each row's dot product with the solved entries spread
    over the work-items (consecutive entries of the row: a vector loop on the host, coalesced on a
    GPU) and summed across the wave; work-item 0 writes the row's entry, then a barrier."""
    batch, n, _ = op.operands[0].type.shape
    columns = op.operands[2].type.shape[2]
    f = Field(op.operands[0].type.dtype)
    b, size, rhs = sizes("batch", "n", "k")
    lu, permutation, x, y = params = resized(op, [b * size * size, b * size, b * size * rhs, b * size * rhs])
    g, lane = K.workgroup_id(0).cast(INDEX), K.workitem_id(0).cast(INDEX)
    matrix, column = g / rhs, g % rhs
    factor = lambda r, c: f.read(lu, matrix * size * size + r * size + c)
    at = lambda r: matrix * size * rhs + r * rhs + column
    t = K.Var("t", INDEX)
    total, partial = f.var("total"), f.var("partial")

    def dot(first, stop, row) -> list:
        """total = the sum of factor(row, j) y_j over j in first..stop - 1, in every work-item."""
        term = lambda j: f.assign(partial, partial + factor(row, j) * f.read(y, at(j)))
        if not f.complex:
            return summed(total, partial, "j", first, stop, lambda j: factor(row, j) * f.read(y, at(j)))
        return [*f.assign(partial, f.const(0)), across("j", first, stop, term),
                K.WaveReduce(total.re, "sum", partial.re), K.WaveReduce(total.im, "sum", partial.im)]

    def substitution_step(row, first, stop, unit: bool) -> list:
        value = f.read(y, at(row)) - total
        return [*dot(first, stop, row),
                K.If(lane.eq(0), f.write(y, at(row), value if unit else value / factor(row, row))),
                K.Barrier()]

    backward = size - 1 - t
    body = [
        *f.let(partial, f.const(0)),
        across("i", 0, size, lambda i: f.write(y, at(i), f.read(x, matrix * size * rhs + permutation[
            matrix * size + i].cast(INDEX) * rhs + column))),
        K.Barrier(),
        K.For(t, 0, size, 1, substitution_step(t, 0, t, True), uniform=True),
        K.For(t, 0, size, 1, substitution_step(backward, backward + 1, size, False), uniform=True)]
    return K.Kernel(name, params=params + [b, size, rhs], grid=(b * rhs,), workgroup_size=(WORKGROUP_ITEMS,),
                    body=body, arguments=[("batch", batch), ("n", n), ("k", columns)])


def getri_kernel(op: Op, name: str) -> Kernel:
    """getrs of the identity: column j's right-hand side P e_j made in the kernel (row t is 1 where
    permutation[t] = j)."""
    batch, n, _ = op.operands[0].type.shape
    f = Field(op.operands[0].type.dtype)
    b, size = sizes("batch", "n")
    lu, permutation, y = params = resized(op, [b * size * size, b * size, b * size * size])
    identity = lambda matrix, row, column: f.from_real(K.select(row.eq(column), 1, 0).cast(f.part))
    return lu_substitutions(f, name, params, lu, permutation, y, [b, size], identity,
                            [("batch", batch), ("n", n)], rhs=size)


def lu_substitutions(f: Field, name, params, lu, permutation, y, scalars, rows_of_x, arguments, rhs=None) -> Kernel:
    """A kernel solving L U y = P x for each right-hand side column (one work-item each): x's rows
    permuted (rows_of_x(matrix, row, column) reads x), then L's and U's substitutions."""
    b, size = scalars[:2]
    rhs = scalars[2] if rhs is None else rhs
    t = K.Var("t", INDEX)
    total = f.var("total")

    def body(g):
        matrix, column = g / rhs, g % rhs
        factor = lambda r, c: f.read(lu, matrix * size * size + r * size + c)
        at = lambda r: matrix * size * rhs + r * rhs + column
        return [loop("t", 0, size, f.write(y, at(t), rows_of_x(matrix, permutation[matrix * size + t].cast(INDEX),
                                                               column))),
                *substitution(f, factor, y, at, size, True, True, total),
                *substitution(f, factor, y, at, size, False, False, total)]

    return per_item(name, params, scalars, b * rhs, body, arguments)


def potrs_kernel(op: Op, name: str) -> Kernel:
    """One work-item per right-hand side column: L's substitution, then L^H's (L = C, or C^H)."""
    batch, n, _ = op.operands[0].type.shape
    columns = op.operands[1].type.shape[2]
    f = Field(op.operands[0].type.dtype)
    lower = op.attrs["lower"]
    b, size, rhs = sizes("batch", "n", "k")
    c, x, y = params = resized(op, [b * size * size, b * size * rhs, b * size * rhs])
    total = f.var("total")

    def body(g):
        matrix, column = g / rhs, g % rhs
        entry = lambda r, col: f.read(c, matrix * size * size + r * size + col)
        l = entry if lower else (lambda r, col: f.conj(entry(col, r)))
        at = lambda r: matrix * size * rhs + r * rhs + column
        return [copied_column(x, y, at, size, f),
                *substitution(f, l, y, at, size, True, False, total),
                *substitution(f, lambda r, col: f.conj(l(col, r)), y, at, size, False, False, total)]

    return per_item(name, params, [b, size, rhs], b * rhs, body, [("batch", batch), ("n", n), ("k", columns)])


def trtri_kernel(op: Op, name: str) -> Kernel:
    """One work-item per column j of the inverse: A x = e_j by substitution from row j on (rows
    before it, lower, or after it, upper, are zero), so n^3 / 6 multiply-adds per matrix, not n^3 / 2."""
    batch, n, _ = op.operands[0].type.shape
    f = Field(op.operands[0].type.dtype)
    lower, unit = op.attrs["lower"], op.attrs["unit_diagonal"]
    b, size = sizes("batch", "n")
    a, x = params = resized(op, [b * size * size] * 2)
    t, i, k = K.Var("t", INDEX), K.Var("i", INDEX), K.Var("k", INDEX)
    total = f.var("total")

    def body(g):
        matrix, column = g / size, g % size
        entry = lambda r, c: f.read(a, matrix * size * size + r * size + c)
        at = lambda r: matrix * size * size + r * size + column
        row = column + t if lower else column - t
        done = (column, row) if lower else (row + 1, column + 1)
        rhs = f.from_real(K.select(t.eq(0), 1, 0).cast(f.part))
        return [
            loop("i", 0, size, f.write(x, at(i), f.const(0))),
            loop("t", 0, (size - column) if lower else (column + 1), [
                *f.let(total, rhs),
                loop("k", *done, f.assign(total, total - entry(row, k) * f.read(x, at(k)))),
                *f.write(x, at(row), total if unit else total / entry(row, row))])]

    return per_item(name, params, [b, size], b * size, body, [("batch", batch), ("n", n)])


def laswp_kernel(op: Op, name: str) -> Kernel:
    batch, steps = op.operands[0].type.shape
    b, count, rows = sizes("batch", "pivots", "m")
    pivots, permutation, inverse = params = resized(op, [b * count, b * rows, b * rows])
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
    """A workgroup per row of Y (grid: rows, matrices), each work-item copying one contiguous run of
    about columns / WORKGROUP_ITEMS of its elements (a loop the host vectorizes), with no index
    division per element; X's rows are read from column `first` on."""
    x_type, permutation_type = (v.type for v in op.operands)
    width = Field(x_type.dtype).width   # buffer elements an entry
    b, rows, columns, picked, first, count = sizes("batch", "m", "n", "p", "first", "columns")
    x, permutation, y = params = resized(op, [b * rows * columns, b * picked, b * picked * count])
    elements = count * width   # buffer elements a row of Y
    row, matrix = K.workgroup_id(0).cast(INDEX), K.workgroup_id(1).cast(INDEX)
    run = (elements + (WORKGROUP_ITEMS - 1)) / WORKGROUP_ITEMS
    start = K.workitem_id(0).cast(INDEX) * run
    source, target, column = K.Var("source", INDEX), K.Var("target", INDEX), K.Var("column", INDEX)
    body = [
        K.Let(source, ((matrix * rows + permutation[matrix * picked + row].cast(INDEX)) * columns + first) * width),
        K.Let(target, (matrix * picked + row) * elements),
        K.For(column, start, K.minimum(start + run, elements), 1, [K.Store(y, target + column, x[source + column])])]
    batch, m, n = x_type.shape
    return K.Kernel(name, params=params + [b, rows, columns, picked, first, count], grid=(picked, b),
                    workgroup_size=(WORKGROUP_ITEMS,), body=body,
                    arguments=[("batch", batch), ("m", m), ("n", n), ("p", permutation_type.shape[1]),
                               ("first", op.attrs["first"]), ("columns", op.attrs["columns"])])


def reflection(f: Field, x, subtract, v, tau, first_row, rows, columns, first_column):
    """Statements applying H = I - tau v v^H to the matrix x(row, column) in rows first_row.. and
    columns first_column..: v(row) reads v below first_row, where v is 1; subtract(row, column,
    amount) gives the statements writing x(row, column) - amount."""
    c, i = K.Var("c", INDEX), K.Var("i", INDEX)
    w = f.var("w")
    return [loop("c", first_column, columns, [
        *f.let(w, x(first_row, c)),
        loop("i", first_row + 1, rows, f.assign(w, w + f.conj(v(i)) * x(i, c))),
        *f.assign(w, w * tau),
        *subtract(first_row, c, w),
        loop("i", first_row + 1, rows, subtract(i, c, w * v(i)))])]


def geqrf_kernel(op: Op, name: str) -> Kernel:
    """geqr2: H_j from larfg, then H_j^H (tau conjugated) applied to the columns right of j (a
    workgroup per matrix: geqrf_workgroup_kernel)."""
    if op.attrs["solution"] == WORKGROUP_PER_MATRIX:
        return geqrf_workgroup_kernel(op, name)
    batch, m, n = op.operands[0].type.shape
    f = Field(op.operands[0].type.dtype)
    b, rows, columns = sizes("batch", "m", "n")
    steps = K.minimum(rows, columns)
    a, qr, taus = params = resized(op, [b * rows * columns, b * rows * columns, b * steps])
    j, i = K.Var("j", INDEX), K.Var("i", INDEX)
    norm2, beta = K.Var("norm2", f.part), K.Var("beta", f.part)
    alpha, tau, scale = f.var("alpha"), f.var("tau"), f.var("scale")

    def body(g):
        at = lambda r, c: g * rows * columns + r * columns + c
        entry = lambda r, c: f.read(qr, at(r, c))
        below = lambda r: entry(r, j)
        subtract = lambda r, c, amount: f.write(qr, at(r, c), entry(r, c) - amount)
        # larfg reflects unless the column below the diagonal is zero and alpha real.
        reflects = norm2.ne(0) | alpha.im.ne(0) if f.complex else norm2.ne(0)
        return [
            copied(a, qr, g * rows * columns * f.width, rows * columns * f.width),
            loop("j", 0, steps, [
                # larfg: beta = -sign(re alpha) ||column||, v = column below / (alpha - beta),
                # tau = (beta - alpha) / beta
                *f.let(alpha, entry(j, j)), K.Let(norm2, K.Const(0, f.part)),
                loop("i", j + 1, rows, [K.Assign(norm2, norm2 + f.squared_magnitude(below(i)))]),
                *f.let(tau, f.const(0)),
                K.If(reflects, [
                    K.Let(beta, K.sqrt(f.squared_magnitude(alpha) + norm2)),
                    K.If(f.real(alpha) >= 0, [K.Assign(beta, -beta)]),
                    *f.assign(tau, (f.from_real(beta) - alpha) / beta),
                    *f.let(scale, f.const(1) / (alpha - f.from_real(beta))),
                    loop("i", j + 1, rows, f.write(qr, at(i, j), below(i) * scale)),
                    *f.write(qr, at(j, j), f.from_real(beta))]),
                *f.write(taus, g * steps + j, tau),
                *reflection(f, entry, subtract, below, f.conj(tau), j, rows, columns, j + 1)])]

    return per_item(name, params, [b, rows, columns], b, body, [("batch", batch), ("m", m), ("n", n)])


def geqrf_workgroup_kernel(op: Op, name: str) -> Kernel:
    """geqr2 with a workgroup per matrix (grid: the batch), its steps in order: larfg's norm and the
    scaling of v spread over the work-items along column j, then H_j^H applied to the columns right
    of it a work-item per column (consecutive entries of each row: one vector loop on the host,
    coalesced on a GPU), the rows in turn."""
    batch, m, n = op.operands[0].type.shape
    f = Field(op.operands[0].type.dtype)
    b, rows, columns = sizes("batch", "m", "n")
    steps = K.minimum(rows, columns)
    a, qr, taus = params = resized(op, [b * rows * columns, b * rows * columns, b * steps])
    g, lane = K.workgroup_id(0).cast(INDEX), K.workitem_id(0).cast(INDEX)
    j, i, block = (K.Var(v, INDEX) for v in ("j", "i", "block"))
    partial, norm2, beta = (K.Var(v, f.part) for v in ("partial", "norm2", "beta"))
    alpha, tau, scale, w, v = (f.var(x) for x in ("alpha", "tau", "scale", "w", "v"))
    at = lambda r, c: (g * rows + r) * columns + c
    entry = lambda r, c: f.read(qr, at(r, c))
    column = block + lane
    inside = column < columns
    reflects = norm2.ne(0) | alpha.im.ne(0) if f.complex else norm2.ne(0)
    step = [
        # larfg, as geqrf_kernel's: beta = -sign(re alpha) ||column||, v = column below / (alpha - beta).
        *f.assign(alpha, entry(j, j)),
        *summed(norm2, partial, "i_norm", j + 1, rows, lambda r: f.squared_magnitude(entry(r, j))),
        # Whether it reflects is a select and a per-work-item if, not a uniform branch: the kernel verifier
        # does not count a wave's sum (norm2) as uniform.
        K.Assign(beta, K.sqrt(f.squared_magnitude(alpha) + norm2)),
        K.Assign(beta, K.select(f.real(alpha) >= 0, -beta, beta)),
        *f.assign(tau, f.select(reflects, (f.from_real(beta) - alpha) / beta, f.const(0))),
        *f.assign(scale, f.const(1) / (alpha - f.from_real(beta))),
        across("i_scale", j + 1, rows, lambda r: [K.If(reflects, f.write(qr, at(r, j), entry(r, j) * scale))]),
        K.If(lane.eq(0), [*f.write(taus, g * steps + j, tau),
                          K.If(reflects, f.write(qr, at(j, j), f.from_real(beta)))]),
        K.Barrier(),
        # Column c -= conj(tau) (x_jc + sum_i conj(v_i) x_ic) v, v_j = 1.
        K.For(block, j + 1, columns, WORKGROUP_ITEMS, [
            K.If(inside, f.assign(w, entry(j, column))),
            K.For(i, j + 1, rows, 1, [
                *f.assign(v, entry(i, j)), K.If(inside, f.assign(w, w + f.conj(v) * entry(i, column)))], uniform=True),
            *f.assign(w, w * f.conj(tau)),
            K.If(inside, f.write(qr, at(j, column), entry(j, column) - w)),
            K.For(i, j + 1, rows, 1, [
                *f.assign(v, entry(i, j)), K.If(inside, f.write(qr, at(i, column), entry(i, column) - w * v))],
                  uniform=True)], uniform=True),
        K.Barrier()]
    elements = rows * columns * f.width
    body = [
        *[K.Let(var, K.Const(0, f.part)) for var in (partial, beta)],
        *[statement for var in (alpha, tau, scale, w, v) for statement in f.let(var, f.const(0))],
        across("e", 0, elements, lambda e: [K.Store(qr, g * elements + e, a[g * elements + e])]),
        K.Barrier(),
        K.For(j, 0, steps, 1, step, uniform=True)]
    return K.Kernel(name, params=params + [b, rows, columns], grid=(b,), workgroup_size=(WORKGROUP_ITEMS,),
                    body=body, arguments=[("batch", batch), ("m", m), ("n", n)])


def orgqr_kernel(op: Op, name: str) -> Kernel:
    batch, m, n = op.operands[0].type.shape
    f = Field(op.operands[0].type.dtype)
    b, rows, columns, wanted = sizes("batch", "m", "n", "q")
    steps = K.minimum(rows, columns)
    qr, taus, q = params = resized(op, [b * rows * columns, b * steps, b * rows * wanted])
    t, i, c = K.Var("t", INDEX), K.Var("i", INDEX), K.Var("c", INDEX)

    def body(g):
        at = lambda r, col: g * rows * wanted + r * wanted + col
        j = steps - 1 - t
        v = lambda r: f.read(qr, g * rows * columns + r * columns + j)
        entry = lambda r, col: f.read(q, at(r, col))
        subtract = lambda r, col, amount: f.write(q, at(r, col), entry(r, col) - amount)
        return [
            loop("i", 0, rows, [loop("c", 0, wanted, f.write(q, at(i, c),
                                                             f.from_real(K.select(i.eq(c), 1, 0).cast(f.part))))]),
            # H_{k-1}, then ... H_0 applied to the identity's columns (org2r's order); H_j leaves
            # the columns before j, which are zero from row j down, as they are.
            loop("t", 0, steps, reflection(f, entry, subtract, v, f.read(taus, g * steps + j), j, rows, wanted, j))]

    return per_item(name, params, [b, rows, columns, wanted], b, body,
                    [("batch", batch), ("m", m), ("n", n), ("q", op.attrs["columns"])])


def rotated(f: Field, x, first, second, c, s, along_rows: bool, count, phase=None):
    """Statements turning columns first and second of x(row, column) by U = [[c, s e*], [-s e, c]]
    (x U), or its rows by U^H (U^H x); e = phase, a unit complex number (1 when None), e* its conjugate."""
    k = K.Var("k", INDEX)
    one, two = f.var("one"), f.var("two")
    place = (lambda index: (index, k)) if along_rows else (lambda index: (k, index))
    read, write = x
    if phase is None:
        turned_two, turned_one = two, one
    else:
        e = f.conj(phase) if along_rows else phase
        turned_two, turned_one = two * e, one * f.conj(e)
    return [loop("k", 0, count, [
        *f.let(one, read(*place(first))), *f.let(two, read(*place(second))),
        *write(*place(first), one * c - turned_two * s), *write(*place(second), turned_one * s + two * c)])]


def jacobi_rotation(app, aqq, apq, c, s, t):
    """Statements setting c and s of the rotation [[c, s], [-s, c]] that zeroes apq of a symmetric
    2x2 (Golub and Van Loan's sym.schur2; t is a scratch variable)."""
    dtype = c.dtype
    theta = (aqq - app) / (2 * apq)
    return [K.Let(t, K.select(theta >= 0, K.Const(1, dtype), K.Const(-1, dtype))
                  / (K.abs(theta) + K.sqrt(theta * theta + 1))),
            K.Let(c, 1 / K.sqrt(t * t + 1)), K.Let(s, t * c)]


def column_swaps(f: Field, values, matrices, i, best):
    """Statements swapping entries i and best of `values` (a real buffer and its base) and columns i
    and best of each (read, write, rows) matrix of entries of field f."""
    buffer, base = values
    k = K.Var("k", INDEX)
    swap, swap_column = K.Var("swap", buffer.dtype), f.var("swap_column")
    return [K.Let(swap, buffer[base + i]), K.Store(buffer, base + i, buffer[base + best]),
            K.Store(buffer, base + best, swap),
            *[loop("k", 0, rows, [*f.let(swap_column, read(k, i)), *write(k, i, read(k, best)),
                                  *write(k, best, swap_column)]) for read, write, rows in matrices]]


def sorted_by(f: Field, values, size, matrices, descending: bool):
    """Selection sort of `values` (buffer, base) of `size` entries, with the (read, write, rows)
    matrices' columns."""
    i, j, best = K.Var("i", INDEX), K.Var("j", INDEX), K.Var("best", INDEX)
    buffer, base = values
    better = (lambda x, y: x > y) if descending else (lambda x, y: x < y)
    return [loop("i", 0, size, [
        K.Let(best, i),
        loop("j", i + 1, size, [K.If(better(buffer[base + j], buffer[base + best]), [K.Assign(best, j)])]),
        K.If(best.ne(i), column_swaps(f, values, matrices, i, best))])]


def syevj_kernel(op: Op, name: str) -> Kernel:
    """Cyclic Jacobi; for a complex (Hermitian) A, each rotation is U = D J D^H, D = diag(1, e) with e
    the phase of conj(a_pq) (D^H A D's 2x2 is real symmetric), J its real Jacobi rotation; U tends
    to I with J, so a converged matrix's vectors keep their phases."""
    batch, n, _ = op.operands[0].type.shape
    f = Field(op.operands[0].type.dtype)
    b, size = sizes("batch", "n")
    a, w, v, d = params = resized(op, [b * size * size, b * size, b * size * size, b * size * size])
    dtype = f.part
    i, j, p, q = (K.Var(x, INDEX) for x in ("i", "j", "p", "q"))
    total, off, t, c, s, magnitude = (K.Var(x, dtype) for x in ("total", "off", "t", "c", "s", "magnitude"))
    apq, phase = f.var("apq"), f.var("phase")
    epsilon = float(np.finfo(NUMPY_DTYPES[dtype]).eps)

    def body(g):
        at = lambda r, col: g * size * size + r * size + col
        entry = lambda r, col: f.read(d, at(r, col))
        matrix = (entry, lambda r, col, value: f.write(d, at(r, col), value))
        vectors = (lambda r, col: f.read(v, at(r, col)), lambda r, col, value: f.write(v, at(r, col), value))
        turn = lambda x, along_rows: rotated(f, x, p, q, c, s, along_rows, size, phase if f.complex else None)
        # A real a_pq is rotated as it is (signed); a complex one by its magnitude, after the phase.
        rotation = [
            *([K.Let(magnitude, K.sqrt(f.squared_magnitude(apq))), *f.let(phase, f.conj(apq) / magnitude)]
              if f.complex else [K.Let(magnitude, apq)]),
            *jacobi_rotation(f.real(entry(p, p)), f.real(entry(q, q)), magnitude, c, s, t),
            *turn(matrix, False), *turn(matrix, True), *turn(vectors, False)]
        return [
            K.Let(total, K.Const(0, dtype)),
            loop("i", 0, size, [loop("j", 0, size, [
                *f.write(d, at(i, j), f.read(a, at(i, j))),
                *f.write(v, at(i, j), f.from_real(K.select(i.eq(j), 1, 0).cast(dtype))),
                K.Assign(total, total + f.squared_magnitude(f.read(a, at(i, j))))])]),
            loop("sweep", 0, MAX_SWEEPS, [
                K.Let(off, K.Const(0, dtype)),
                loop("i", 0, size, [loop("j", 0, size, [
                    K.If(i.ne(j), [K.Assign(off, off + f.squared_magnitude(entry(i, j)))])])]),
                K.If(off > epsilon * epsilon * total, [
                    loop("p", 0, size, [loop("q", p + 1, size, [
                        *f.let(apq, entry(p, q)), K.If(f.nonzero(apq), rotation)])])])]),
            # Eigenvalues ascending (the diagonal's real parts), the vectors' columns with them.
            loop("i", 0, size, [K.Store(w, g * size + i, f.real(entry(i, i)))]),
            *sorted_by(f, (w, g * size), size, [(*vectors, size)], descending=False)]

    return per_item(name, params, [b, size], b, body, [("batch", batch), ("n", n)])


def syev_kernel(op: Op, name: str) -> Kernel:
    """routines.py's syev_reference, statement for statement. H holds the symmetric (Hermitian) matrix,
    then the tridiagonal form (d on its diagonal, e below it); while a reflector is applied, its vector
    u sits in column k below the diagonal and its p and q vectors in row k right of it (the upper
    triangle, not read again); V holds (Q S)^H (its columns as rows, contiguous for the rotations),
    and for a real matrix w holds u^T Q^T's row until the end (a complex one's is summed per column)."""
    batch, n, _ = op.operands[0].type.shape
    f = Field(op.operands[0].type.dtype)
    b, size = sizes("batch", "n")
    a, w, v, h = params = resized(op, [b * size * size, b * size, b * size * size, b * size * size])
    dtype = f.part
    i, j, k = (K.Var(x, INDEX) for x in ("i", "j", "k"))
    norm, magnitude, beta, half = (K.Var(v_, dtype) for v_ in ("norm", "magnitude", "beta", "half"))
    phase, dot, one, two = (f.var(v_) for v_ in ("phase", "dot", "one", "two"))
    zero = K.Const(0, dtype)

    def body(g):
        at = lambda r, col: g * size * size + r * size + col
        m = lambda r, col: f.read(h, at(r, col))
        put = lambda r, col, value: f.write(h, at(r, col), value)

        qt = lambda r, col: f.read(v, at(r, col))
        qput = lambda r, col, value: f.write(v, at(r, col), value)
        d = lambda r: f.real(m(r, r))
        e = lambda r: f.real(m(r + 1, r))
        set_real = lambda r, col, value: put(r, col, f.from_real(value))
        if f.complex:   # u^H Q^H, column by column
            update_vectors = [loop("j", 0, size, [
                *f.assign(dot, f.const(0)),
                loop("i", k + 1, size, f.assign(dot, dot + f.conj(m(i, k)) * qt(i, j))),
                *f.assign(dot, dot * beta),
                loop("i", k + 1, size, qput(i, j, qt(i, j) - m(i, k) * dot))])]
        else:   # u^T Q^T gathered in w first, then the rows updated: contiguous loops
            scratch = lambda col: w[g * size + col]
            update_vectors = [
                loop("j", 0, size, [K.Store(w, g * size + j, zero)]),
                loop("i", k + 1, size, [loop("j", 0, size, [
                    K.Store(w, g * size + j, scratch(j) + m(i, k) * qt(i, j))])]),
                loop("i", k + 1, size, [loop("j", 0, size, qput(i, j, qt(i, j) - m(i, k) * (beta * scratch(j))))])]
        reduction = loop("k", 0, size - 2, reflected_column(f, m, put, k, size, (norm, magnitude, beta, phase), [
            # p = beta A22 u (row k), then q = p - (beta / 2) (u^H p) u, A22 -= u q^H + q u^H.
            loop("i", k + 1, size, [
                *f.assign(dot, f.const(0)), loop("j", k + 1, size, f.assign(dot, dot + m(i, j) * m(j, k))),
                *put(k, i, dot * beta)]),
            K.Assign(half, zero),
            loop("i", k + 1, size, [K.Assign(half, half + f.real(f.conj(m(i, k)) * m(k, i)))]),
            K.Assign(half, beta / 2 * half),
            loop("i", k + 1, size, put(k, i, m(k, i) - m(i, k) * half)),
            loop("i", k + 1, size, [loop("j", k + 1, size,
                                         put(i, j, m(i, j) - m(i, k) * f.conj(m(k, j)) - m(k, i) * f.conj(m(j, k))))]),
            # (Q S)^H's rows k + 1.. -= beta u (u^H Q^H).
            *update_vectors]))
        # T = S T_r S^H: the subdiagonal's phases moved into (Q S)^H's rows (conjugated), e = |e|.
        real_subdiagonal = [
            *f.assign(phase, f.const(1)),
            loop("k", 0, size - 1, [
                K.Assign(magnitude, K.sqrt(f.squared_magnitude(m(k + 1, k)))),
                *f.assign(phase, f.select(magnitude.ne(0), phase * m(k + 1, k) / magnitude, phase)),
                loop("j", 0, size, qput(k + 1, j, qt(k + 1, j) * f.conj(phase))),
                *set_real(k + 1, k, magnitude)])]
        rotated = lambda k, c, s: [loop("j", 0, size, [
            *f.assign(one, qt(k, j)), *f.assign(two, qt(k + 1, j)),
            *qput(k, j, one * c + two * s), *qput(k + 1, j, two * c - one * s)])]
        vectors = (lambda r, col: qt(col, r), lambda r, col, value: qput(col, r, value))
        lower = lambda r, col: f.read(a, at(r, col))
        return [
            *[K.Let(var, zero) for var in (norm, magnitude, beta, half)],
            *[statement for var in (phase, dot, one, two) for statement in f.let(var, f.const(0))],
            # The Hermitian matrix of A's lower triangle (its diagonal's real part); (Q S)^H = I.
            loop("i", 0, size, [loop("j", 0, size, [
                *put(i, j, f.select(i > j, lower(i, j), f.select(i.eq(j), f.from_real(f.real(lower(i, i))),
                                                                   f.conj(lower(K.maximum(i, j), K.minimum(i, j)))))),
                *qput(i, j, f.from_real(K.select(i.eq(j), 1, 0).cast(dtype)))])]),
            reduction,
            *real_subdiagonal,
            *tridiagonal_qr(dtype, size, d, lambda r, value: set_real(r, r, value), e,
                            lambda r, value: set_real(r + 1, r, value), rotated),
            loop("i", 0, size, [K.Store(w, g * size + i, d(i))]),
            *sorted_by(f, (w, g * size), size, [(*vectors, size)], descending=False),
            # V = ((Q S)^H)^H in place.
            loop("i", 0, size, [loop("j", i, size, [
                *f.assign(one, qt(i, j)), *qput(i, j, f.conj(qt(j, i))), *qput(j, i, f.conj(one))])])]

    return per_item(name, params, [b, size], b, body, [("batch", batch), ("n", n)])


def tridiagonal_qr(dtype: str, size, d, set_d, e, set_e, rotated, room=None) -> list:
    """routines.py's tridiagonal_qr without its sort, on a real tridiagonal: d(r) and e(r) read its
    diagonal and subdiagonal (e(r) couples r and r + 1), set_d(r, value) and set_e(r, value) return
    statements writing them; rotated(k, c, s) returns the statements applying (or logging, as lasr
    takes it: c and -s) the QR step's rotation of rows k and k + 1; room, a condition checked before
    each step (a log's capacity). The eigenvalues not found are set to NaN."""
    k, low, last = (K.Var(x, INDEX) for x in ("k", "low", "last"))
    t, coupling, denominator, shift, x, z, c, sine, tau, dk, dl, ek = (
        K.Var(v_, dtype) for v_ in ("t", "coupling", "denominator", "shift", "x", "z", "c", "sine", "tau", "dk",
                                    "dl", "ek"))
    epsilon = float(np.finfo(NUMPY_DTYPES[dtype]).eps)
    zero = K.Const(0, dtype)
    sign = lambda value: K.select(value >= 0, K.Const(1, dtype), K.Const(-1, dtype))
    rotation = [
        # givens(x, z): c x - s z = r, s x + c z = 0.
        K.Assign(tau, K.select(K.abs(z) > K.abs(x), -x / z, -z / x)),
        K.Assign(t, 1 / K.sqrt(1 + tau * tau)),
        K.Assign(c, K.select(z.eq(0), K.Const(1, dtype), K.select(K.abs(z) > K.abs(x), t * tau, t))),
        K.Assign(sine, K.select(z.eq(0), zero, K.select(K.abs(z) > K.abs(x), t, t * tau)))]
    qr_step = [
        K.Assign(t, (d(last - 1) - d(last)) / 2), K.Assign(coupling, e(last - 1)),
        K.Assign(denominator, t + sign(t) * K.sqrt(t * t + coupling * coupling)),
        K.Assign(shift, d(last) - K.select(denominator.ne(0), coupling * coupling / denominator, zero)),
        K.Assign(x, d(low) - shift), K.Assign(z, e(low)),
        loop("k", low, last, [
            *rotation,
            K.If(k > low, set_e(k - 1, c * e(k - 1) - sine * z)),
            K.Assign(dk, d(k)), K.Assign(dl, d(k + 1)), K.Assign(ek, e(k)),
            *set_d(k, c * c * dk - 2 * c * sine * ek + sine * sine * dl),
            *set_d(k + 1, sine * sine * dk + 2 * c * sine * ek + c * c * dl),
            *set_e(k, c * sine * (dk - dl) + (c * c - sine * sine) * ek),
            K.If(k < last - 1, [K.Assign(x, e(k)), K.Assign(z, -sine * e(k + 1)), *set_e(k + 1, c * e(k + 1))]),
            *rotated(k, c, -sine)])]
    step = [
        K.Assign(low, K.Const(0, INDEX)),
        loop("k", 1, last + 1, [
            K.If(K.abs(e(k - 1)) <= epsilon * (K.abs(d(k - 1)) + K.abs(d(k))), [*set_e(k - 1, zero),
                                                                              K.Assign(low, k)])]),
        K.If(low.eq(last), [K.Assign(last, last - 1)], qr_step)]
    return [
        *[K.Let(var, zero) for var in (t, coupling, denominator, shift, x, z, c, sine, tau, dk, dl, ek)],
        K.Let(low, K.Const(0, INDEX)), K.Let(last, size - 1),
        loop("step", 0, MAX_QR_STEPS * size, [K.If(last > 0 if room is None else (last > 0) & room, step)]),
        # Not converged: NaNs for the eigenvalues not found.
        K.If(last > 0, [loop("i", 0, last + 1, set_d(K.Var("i", INDEX), K.Const(float("nan"), dtype)))])]


def gesvdj_kernel(op: Op, name: str) -> Kernel:
    """One-sided Jacobi; for complex columns, each pair's Gram matrix [[alpha, gamma], [gamma*, beta]]
    is Hermitian and turned as syevj turns a_pq (U = D J D^H, e the phase of gamma*)."""
    batch, m, n = op.operands[0].type.shape
    f = Field(op.operands[0].type.dtype)
    b, rows, columns = sizes("batch", "m", "n")
    a, sv, u, v = params = resized(op, [b * rows * columns, b * columns, b * rows * columns, b * columns * columns])
    dtype = f.part
    i, j, k, p, q = (K.Var(x, INDEX) for x in ("i", "j", "k", "p", "q"))
    rotations = K.Var("rotations", INDEX)
    alpha, beta, magnitude, t, c, s, norm = (K.Var(x, dtype)
                                             for x in ("alpha", "beta", "magnitude", "t", "c", "s", "norm"))
    gamma, phase = f.var("gamma"), f.var("phase")
    epsilon = float(np.finfo(NUMPY_DTYPES[dtype]).eps)

    def body(g):
        at_u = lambda r, col: g * rows * columns + r * columns + col
        at_v = lambda r, col: g * columns * columns + r * columns + col
        column = lambda r, col: f.read(u, at_u(r, col))
        left = (column, lambda r, col, value: f.write(u, at_u(r, col), value))
        right = (lambda r, col: f.read(v, at_v(r, col)), lambda r, col, value: f.write(v, at_v(r, col), value))
        turn = lambda x, count: rotated(f, x, p, q, c, s, False, count, phase if f.complex else None)
        pair = [
            K.Let(alpha, K.Const(0, dtype)), K.Let(beta, K.Const(0, dtype)), *f.let(gamma, f.const(0)),
            loop("k", 0, rows, [K.Assign(alpha, alpha + f.squared_magnitude(column(k, p))),
                                K.Assign(beta, beta + f.squared_magnitude(column(k, q))),
                                *f.assign(gamma, gamma + f.conj(column(k, p)) * column(k, q))]),
            K.Let(magnitude, K.sqrt(f.squared_magnitude(gamma)) if f.complex else gamma),
            K.If(K.abs(magnitude) > epsilon * K.sqrt(alpha * beta), [
                K.Assign(rotations, rotations + 1),
                *(f.let(phase, f.conj(gamma) / magnitude) if f.complex else []),
                *jacobi_rotation(alpha, beta, magnitude, c, s, t),
                *turn(left, rows), *turn(right, columns)])]
        return [
            copied(a, u, g * rows * columns * f.width, rows * columns * f.width),
            loop("i", 0, columns, [loop("j", 0, columns, f.write(v, at_v(i, j),
                                                                 f.from_real(K.select(i.eq(j), 1, 0).cast(dtype))))]),
            K.Let(rotations, K.Const(1, INDEX)),
            loop("sweep", 0, MAX_SWEEPS, [K.If(rotations > 0, [
                K.Assign(rotations, K.Const(0, INDEX)),
                loop("p", 0, columns, [loop("q", p + 1, columns, pair)])])]),
            # s = the columns' norms, U = the columns normalised (a zero column stays zero), descending.
            loop("j", 0, columns, [
                K.Let(norm, K.Const(0, dtype)),
                loop("k", 0, rows, [K.Assign(norm, norm + f.squared_magnitude(column(k, j)))]),
                K.Assign(norm, K.sqrt(norm)), K.Store(sv, g * columns + j, norm),
                K.If(norm.ne(0), [loop("k", 0, rows, f.write(u, at_u(k, j), column(k, j) / norm))])]),
            *sorted_by(f, (sv, g * columns), columns, [(*left, rows), (*right, columns)], descending=True)]

    return per_item(name, params, [b, rows, columns], b, body, [("batch", batch), ("m", m), ("n", n)])


def reflected_column(f: Field, m, put, k, size, variables, applied) -> list:
    """Statements reflecting column k of m(row, column) below the diagonal onto its first entry (a
    Householder reflector I - beta u u^H, as routines.py's complex_reflector; real for a real field):
    u = the column + phase ||column|| e1 (phase = x0 / |x0|, 1 where x0 = 0) sits in the column while
    the statements `applied` (reading it there, and beta) apply the reflector elsewhere; then the
    column becomes (-phase ||column||, 0, ...). variables: (norm, magnitude, beta) of the part dtype
    and phase, an entry variable; put(row, column, value) returns statements."""
    norm, magnitude, beta, phase = variables
    i = K.Var("i", INDEX)
    zero = K.Const(0, norm.dtype)
    return [
        K.Assign(norm, zero),
        loop("i", k + 1, size, [K.Assign(norm, norm + f.squared_magnitude(m(i, k)))]),
        K.Assign(norm, K.sqrt(norm)),
        K.If(norm.ne(0), [
            K.Assign(magnitude, K.sqrt(f.squared_magnitude(m(k + 1, k)))),
            *f.assign(phase, f.select(magnitude.ne(0), m(k + 1, k) / magnitude, f.const(1))),
            *put(k + 1, k, m(k + 1, k) + phase * norm),
            K.Assign(beta, 1 / (norm * (norm + magnitude))),
            *applied,
            *put(k + 1, k, phase * (-norm)), loop("i", k + 2, size, put(i, k, f.const(0)))])]


def geev_kernel(op: Op, name: str) -> Kernel:
    complex_matrices = Field(op.operands[0].type.dtype).complex
    return (complex_geev_kernel if complex_matrices else real_geev_kernel)(op, name)


def real_geev_kernel(op: Op, name: str) -> Kernel:
    """routines.py's real_geev_reference, statement for statement (Hessenberg reduction, then a flat loop of
    at most MAX_QR_STEPS * n steps, each deflating one or two eigenvalues or running one Francis step).
    With `vectors`, the reflections act on whole rows and columns (the real Schur form) and are
    accumulated in the Schur vectors Z."""
    batch, n, _ = op.operands[0].type.shape
    schur = op.attrs["vectors"]
    b, size = sizes("batch", "n")
    a, wr, wi, h, *schur_vectors = params = resized(op, [b * size * size, b * size, b * size, b * size * size,
                                                         b * size * size])
    dtype = a.dtype
    i, j, k, low, last, steps = (K.Var(x, INDEX) for x in ("i", "j", "k", "low", "last", "steps"))
    norm, magnitude, beta, dot, x, y, z, total, product, s, p, disc, root = (
        K.Var(v, dtype) for v in ("norm", "magnitude", "beta", "dot", "x", "y", "z", "total", "product", "s", "p",
                                  "disc", "root"))
    u = [K.Var(f"u{t}", dtype) for t in range(3)]
    epsilon = float(np.finfo(NUMPY_DTYPES[dtype]).eps)
    zero = K.Const(0, dtype)
    sign = lambda value: K.select(value >= 0, K.Const(1, dtype), K.Const(-1, dtype))

    def body(g):
        at = lambda r, c: g * size * size + r * size + c
        m = lambda r, c: h[at(r, c)]
        put = lambda r, c, value: K.Store(h, at(r, c), value)
        zm = lambda r, c: schur_vectors[0][at(r, c)]
        zput = lambda r, c, value: K.Store(schur_vectors[0], at(r, c), value)

        def reflect(count):
            """u, beta of the reflector of (x, y, z)[:count]; applied to rows k.. of columns
            max(low, k - 1)..last, then to columns k.. of rows low..min(k + 3, last)."""
            vector = [x, y, z][:count]
            return [
                K.Assign(norm, K.sqrt(sum((v * v for v in vector[1:]), vector[0] * vector[0]))),
                K.Assign(u[0], x + sign(x) * norm), K.Assign(u[1], y), K.Assign(u[2], z if count == 3 else zero),
                K.Assign(beta, K.select(norm.ne(0), 2 / (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]), zero)),
                loop("j", K.maximum(low, k - 1), size if schur else last + 1, [
                    K.Assign(dot, sum((u[t] * m(k + t, j) for t in range(1, count)), u[0] * m(k, j))),
                    *[put(k + t, j, m(k + t, j) - beta * u[t] * dot) for t in range(count)]]),
                loop("i", 0 if schur else low, K.minimum(k + 3, last) + 1, [
                    K.Assign(dot, sum((u[t] * m(i, k + t) for t in range(1, count)), u[0] * m(i, k))),
                    *[put(i, k + t, m(i, k + t) - beta * dot * u[t]) for t in range(count)]]),
                *([loop("i", 0, size, [
                    K.Assign(dot, sum((u[t] * zm(i, k + t) for t in range(1, count)), u[0] * zm(i, k))),
                    *[zput(i, k + t, zm(i, k + t) - beta * dot * u[t]) for t in range(count)]])] if schur else [])]

        hessenberg = loop("k", 0, size - 2, reflected_column(Field(dtype), m, lambda r, c, value: [put(r, c, value)],
                                                             k, size, (norm, magnitude, beta, s), [
            loop("j", k + 1, size, [
                K.Assign(dot, zero), loop("i", k + 1, size, [K.Assign(dot, dot + m(i, k) * m(i, j))]),
                loop("i", k + 1, size, [put(i, j, m(i, j) - beta * m(i, k) * dot)])]),
            loop("i", 0, size, [
                K.Assign(dot, zero), loop("j", k + 1, size, [K.Assign(dot, dot + m(i, j) * m(j, k))]),
                loop("j", k + 1, size, [put(i, j, m(i, j) - beta * dot * m(j, k))])]),
            *([loop("i", 0, size, [
                K.Assign(dot, zero), loop("j", k + 1, size, [K.Assign(dot, dot + zm(i, j) * m(j, k))]),
                loop("j", k + 1, size, [zput(i, j, zm(i, j) - beta * dot * m(j, k))])])] if schur else [])]))
        two_by_two = [
            K.Assign(p, (m(low, low) - m(last, last)) / 2),
            K.Assign(disc, p * p + m(low, last) * m(last, low)),
            K.If(disc < 0, [
                K.Store(wr, g * size + low, m(last, last) + p), K.Store(wi, g * size + low, K.sqrt(-disc)),
                K.Store(wr, g * size + last, m(last, last) + p), K.Store(wi, g * size + last, -K.sqrt(-disc))], [
                K.Assign(root, p + sign(p) * K.sqrt(disc)),
                K.Store(wr, g * size + low, m(last, last) + root), K.Store(wi, g * size + low, zero),
                K.Store(wr, g * size + last, K.select(root.ne(0), m(last, last) - m(low, last) * m(last, low) / root,
                                                      m(last, last) + root)),
                K.Store(wi, g * size + last, zero)]),
            K.Assign(last, last - 2), K.Assign(steps, K.Const(0, INDEX))]
        exceptional = [
            K.Assign(s, K.abs(m(last, last - 1)) + K.abs(m(last - 1, last - 2))),
            K.Assign(total, 2 * (0.75 * s + m(last, last))),
            K.Assign(product, (0.75 * s + m(last, last)) * (0.75 * s + m(last, last)) + 0.4375 * s * s)]
        francis = [
            K.Assign(steps, steps + 1),
            K.Assign(total, m(last - 1, last - 1) + m(last, last)),
            K.Assign(product, m(last - 1, last - 1) * m(last, last) - m(last - 1, last) * m(last, last - 1)),
            K.If(steps.eq(10), exceptional), K.If(steps.eq(20), exceptional),
            K.Assign(x, m(low, low) * m(low, low) + m(low, low + 1) * m(low + 1, low) - total * m(low, low) + product),
            K.Assign(y, m(low + 1, low) * (m(low, low) + m(low + 1, low + 1) - total)),
            K.Assign(z, m(low + 1, low) * m(low + 2, low + 1)),
            loop("k", low, last, [
                K.If(k < last - 1, reflect(3), reflect(2)),
                K.Assign(x, m(k + 1, k)), K.Assign(y, zero), K.Assign(z, zero),
                K.If(k + 2 <= last, [K.Assign(y, m(k + 2, k))]), K.If(k + 3 <= last, [K.Assign(z, m(k + 3, k))])])]
        step = [
            K.Assign(low, K.Const(0, INDEX)),
            loop("k", 1, last + 1, [
                K.If(K.abs(m(k, k - 1)) <= epsilon * (K.abs(m(k - 1, k - 1)) + K.abs(m(k, k))),
                     [put(k, k - 1, zero), K.Assign(low, k)])]),
            K.If(low.eq(last), [
                K.Store(wr, g * size + last, m(last, last)), K.Store(wi, g * size + last, zero),
                K.Assign(last, last - 1), K.Assign(steps, K.Const(0, INDEX))],
                 [K.If(low.eq(last - 1), two_by_two, francis)])]
        return [
            *[K.Let(v, zero) for v in (norm, magnitude, beta, dot, x, y, z, total, product, s, p, disc, root, *u)],
            K.Let(low, K.Const(0, INDEX)), K.Let(last, size - 1), K.Let(steps, K.Const(0, INDEX)),
            copied(a, h, g * size * size, size * size),
            *([loop("i", 0, size, [loop("j", 0, size, [zput(i, j, K.select(i.eq(j), 1, 0).cast(dtype))])])]
              if schur else []),
            hessenberg,
            loop("step", 0, MAX_QR_STEPS * size, [K.If(last >= 0, step)]),
            # Not converged: NaNs for the eigenvalues not found.
            loop("i", 0, last + 1, [K.Store(wr, g * size + i, K.Const(float("nan"), dtype)),
                                    K.Store(wi, g * size + i, K.Const(float("nan"), dtype))])]

    return per_item(name, params, [b, size], b, body, [("batch", batch), ("n", n)])


def complex_geev_kernel(op: Op, name: str) -> Kernel:
    """routines.py's complex_geev_reference, statement for statement (Hessenberg reduction, then a flat
    loop of at most MAX_QR_STEPS * n steps, each deflating one eigenvalue or running one single-shift
    step). With `vectors`, the rotations act on whole rows and columns (the Schur form) and are
    accumulated in the Schur vectors Z."""
    batch, n, _ = op.operands[0].type.shape
    f = Field(op.operands[0].type.dtype)
    schur = op.attrs["vectors"]
    b, size = sizes("batch", "n")
    a, w, h, *schur_vectors = params = resized(op, [b * size * size, b * size, b * size * size, b * size * size])
    part = f.part
    i, j, k, low, last, steps = (K.Var(v, INDEX) for v in ("i", "j", "k", "low", "last", "steps"))
    norm, beta, magnitude, c = (K.Var(v, part) for v in ("norm", "beta", "magnitude", "c"))
    dot, phase, x, y, s, p, r, shift, one, two = (f.var(v) for v in ("dot", "phase", "x", "y", "s", "p", "r", "shift",
                                                                      "one", "two"))
    epsilon = float(np.finfo(NUMPY_DTYPES[part]).eps)
    zero = K.Const(0, part)

    def body(g):
        at = lambda row, col: g * size * size + row * size + col
        m = lambda row, col: f.read(h, at(row, col))
        put = lambda row, col, value: f.write(h, at(row, col), value)
        zm = lambda row, col: f.read(schur_vectors[0], at(row, col))
        zput = lambda row, col, value: f.write(schur_vectors[0], at(row, col), value)

        def turned(read, write, first, second, conjugated):
            """Statements setting (first, second) to (c one + s two, c two - s* one) (rows) or, with
            conjugated, to (c one + s* two, c two - s one) (columns, G^H applied on the right)."""
            left, right = (f.conj(s), s) if conjugated else (s, f.conj(s))
            return [*f.let(one, read(*first)), *f.let(two, read(*second)),
                    *write(*first, one * c + two * left), *write(*second, two * c - one * right)]

        hessenberg = loop("k", 0, size - 2, reflected_column(f, m, put, k, size, (norm, magnitude, beta, phase), [
            loop("j", k + 1, size, [
                *f.assign(dot, f.const(0)),
                loop("i", k + 1, size, f.assign(dot, dot + f.conj(m(i, k)) * m(i, j))),
                *f.assign(dot, dot * beta),
                loop("i", k + 1, size, put(i, j, m(i, j) - m(i, k) * dot))]),
            loop("i", 0, size, [
                *f.assign(dot, f.const(0)),
                loop("j", k + 1, size, f.assign(dot, dot + m(i, j) * m(j, k))),
                *f.assign(dot, dot * beta),
                loop("j", k + 1, size, put(i, j, m(i, j) - dot * f.conj(m(j, k))))]),
            *([loop("i", 0, size, [
                *f.assign(dot, f.const(0)),
                loop("j", k + 1, size, f.assign(dot, dot + zm(i, j) * m(j, k))),
                *f.assign(dot, dot * beta),
                loop("j", k + 1, size, zput(i, j, zm(i, j) - dot * f.conj(m(j, k))))])] if schur else [])]))
        wilkinson = [
            # The eigenvalue of the trailing 2x2 [[a, b], [c, d]] nearer d: d - bc / (p + r).
            *f.assign(p, (m(last - 1, last - 1) - m(last, last)) * 0.5),
            *f.assign(r, (p * p + m(last - 1, last) * m(last, last - 1)).sqrt()),
            *f.assign(r, f.select((p.re * r.re + p.im * r.im) < 0, r * -1.0, r)),
            *f.assign(p, p + r),
            *f.assign(shift, f.select(f.nonzero(p), m(last, last) - m(last - 1, last) * m(last, last - 1) / p,
                                      m(last, last)))]
        exceptional = lambda row: f.assign(shift, m(row, row) + f.from_real(0.75 * f.magnitude(m(row, row - 1))))
        rotation = [
            # (c, s) with [[c, s], [-s*, c]] (x, y) = (r, 0), c real.
            K.Assign(magnitude, x.abs()), K.Assign(norm, K.sqrt(f.squared_magnitude(x) + f.squared_magnitude(y))),
            K.Assign(c, K.select(norm.ne(0), K.select(magnitude.ne(0), magnitude / norm, zero), K.Const(1, part))),
            *f.assign(s, f.select(norm.ne(0), f.select(magnitude.ne(0), x / magnitude * f.conj(y) / norm,
                                                       f.conj(y) / norm), f.const(0)))]
        single_shift = [
            K.Assign(steps, steps + 1),
            *wilkinson,
            K.If(steps.eq(10), exceptional(low + 1)), K.If(steps.eq(20), exceptional(last)),
            *f.assign(x, m(low, low) - shift), *f.assign(y, m(low + 1, low)),
            loop("k", low, last, [
                K.If(k > low, [*f.assign(x, m(k, k - 1)), *f.assign(y, m(k + 1, k - 1))]),
                *rotation,
                loop("j", K.maximum(low, k - 1), size if schur else last + 1,
                     turned(m, put, (k, j), (k + 1, j), False)),
                K.If(k > low, put(k + 1, k - 1, f.const(0))),
                loop("i", 0 if schur else low, K.minimum(k + 2, last) + 1, turned(m, put, (i, k), (i, k + 1), True)),
                *([loop("i", 0, size, turned(zm, zput, (i, k), (i, k + 1), True))] if schur else [])])]
        step = [
            K.Assign(low, K.Const(0, INDEX)),
            loop("k", 1, last + 1, [
                K.If(f.magnitude(m(k, k - 1)) <= epsilon * (f.magnitude(m(k - 1, k - 1)) + f.magnitude(m(k, k))),
                     [*put(k, k - 1, f.const(0)), K.Assign(low, k)])]),
            K.If(low.eq(last), [*f.write(w, g * size + last, m(last, last)),
                                K.Assign(last, last - 1), K.Assign(steps, K.Const(0, INDEX))], single_shift)]
        return [
            *[K.Let(v, zero) for v in (norm, beta, magnitude, c)],
            *[statement for v in (dot, phase, x, y, s, p, r, shift) for statement in f.let(v, f.const(0))],
            K.Let(low, K.Const(0, INDEX)), K.Let(last, size - 1), K.Let(steps, K.Const(0, INDEX)),
            copied(a, h, g * size * size * f.width, size * size * f.width),
            *([loop("i", 0, size, [loop("j", 0, size, zput(i, j, f.from_real(K.select(i.eq(j), 1, 0).cast(part))))])]
              if schur else []),
            hessenberg,
            loop("step", 0, MAX_QR_STEPS * size, [K.If(last >= 0, step)]),
            # Not converged: NaNs for the eigenvalues not found.
            loop("i", 0, last + 1, f.write(w, g * size + i, f.from_real(K.Const(float("nan"), part))))]

    return per_item(name, params, [b, size], b, body, [("batch", batch), ("n", n)])


def gebal_kernel(op: Op, name: str) -> Kernel:
    """routines.py's gebal_reference: each search for an isolating row (column) is a scan of the
    window, repeated at most n times, a found one swapped to the window's edge; then at most
    MAX_BALANCING_SWEEPS scaling sweeps; `rows` is the permutation inverted."""
    batch, n, _ = op.operands[0].type.shape
    f = Field(op.operands[0].type.dtype)
    b, size = sizes("batch", "n")
    a, h, scale, permutations, rows = params = resized(op, [b * size * size, b * size * size, b * size, b * size,
                                                           b * size])
    part = f.part
    i, j, t, low, high, found, pick = (K.Var(v, INDEX) for v in ("i", "j", "t", "low", "high", "found", "pick"))
    c, r, factor, exponent, changed = (K.Var(v, part) for v in ("c", "r", "factor", "exponent", "changed"))
    swapped, index = f.var("swapped"), K.Var("index", "i32")
    limit = float(np.finfo(NUMPY_DTYPES[part]).maxexp // 2)
    zero = K.Const(0, part)

    def body(g):
        at = lambda row, col: g * size * size + row * size + col
        m = lambda row, col: f.read(h, at(row, col))
        put = lambda row, col, value: f.write(h, at(row, col), value)
        permutation = lambda k: permutations[g * size + k]

        def swap(first, second):
            return [
                loop("j", 0, size, [*f.let(swapped, m(first, j)), *put(first, j, m(second, j)),
                                    *put(second, j, swapped)]),
                loop("i", 0, size, [*f.let(swapped, m(i, first)), *put(i, first, m(i, second)),
                                    *put(i, second, swapped)]),
                K.Let(index, permutation(first)), K.Store(permutations, g * size + first, permutation(second)),
                K.Store(permutations, g * size + second, index)]

        def isolating(along_row: bool, candidate):
            """Statements setting found to candidate if its row (column) is zero off the diagonal
            within the window and none was found yet."""
            entry = (lambda k: m(candidate, k)) if along_row else (lambda k: m(k, candidate))
            return [K.If(found < 0, [
                K.Assign(pick, candidate),
                loop("i", low, high + 1, [K.If(i.ne(candidate) & f.nonzero(entry(i)),
                                               [K.Assign(pick, K.Const(-1, INDEX))])]),
                K.Assign(found, pick)])]

        search_rows = K.If(high > low, [
            K.Assign(found, K.Const(-1, INDEX)),
            loop("t", 0, high - low + 1, isolating(True, high - t)),
            K.If(found >= 0, [*swap(found, high), K.Assign(high, high - 1)])])
        search_columns = K.If(high > low, [
            K.Assign(found, K.Const(-1, INDEX)),
            loop("t", 0, high - low + 1, isolating(False, low + t)),
            K.If(found >= 0, [*swap(found, low), K.Assign(low, low + 1)])])
        norms_off_diagonal = [
            K.Assign(c, zero), K.Assign(r, zero),
            loop("j", low, high + 1, [K.If(j.ne(i), [K.Assign(c, c + f.squared_magnitude(m(j, i))),
                                                      K.Assign(r, r + f.squared_magnitude(m(i, j)))])]),
            K.Assign(c, K.sqrt(c)), K.Assign(r, K.sqrt(r))]
        scaled = [
            # f: the power of 2 nearest sqrt(r / c), its exponent clamped to half the float's range.
            K.Assign(exponent, K.floor(K.log2(r / c) / 2 + 0.5)),
            K.Assign(factor, K.exp2(K.minimum(K.maximum(exponent, -limit), limit))),
            K.If(c * factor + r / factor < 0.95 * (c + r), [
                K.Store(scale, g * size + i, scale[g * size + i] * factor), K.Assign(changed, K.Const(1, part)),
                loop("j", 0, size, put(i, j, m(i, j) / factor)),
                loop("j", 0, size, put(j, i, m(j, i) * factor))])]
        sweep = [
            K.Assign(changed, zero),
            loop("i", low, high + 1, [
                *norms_off_diagonal,
                K.If(c.ne(0) & r.ne(0) & K.is_finite(c + r), scaled)])]
        return [
            K.Let(low, K.Const(0, INDEX)), K.Let(high, size - 1), K.Let(found, K.Const(-1, INDEX)),
            K.Let(pick, K.Const(-1, INDEX)),
            *[K.Let(v, zero) for v in (c, r, factor, exponent)], K.Let(changed, K.Const(1, part)),
            copied(a, h, g * size * size * f.width, size * size * f.width),
            loop("i", 0, size, [K.Store(scale, g * size + i, K.Const(1, part)),
                                K.Store(permutations, g * size + i, i.cast("i32"))]),
            loop("pass", 0, size, [search_rows]),
            loop("pass", 0, size, [search_columns]),
            loop("sweep", 0, MAX_BALANCING_SWEEPS, [K.If(changed.ne(0), sweep)]),
            loop("i", 0, size, [K.Store(rows, g * size + permutation(i).cast(INDEX), i.cast("i32"))])]

    return per_item(name, params, [b, size], b, body, [("batch", batch), ("n", n)])


def trevc_kernel(op: Op, name: str) -> Kernel:
    """routines.py's quasi_triangular_vector, one work-item per column j of X (an eigenvalue): its
    block's vector, then back substitution upward in complex arithmetic, a real T's 2x2 block's two
    rows at once (its second row skipped), each quotient rescaled against overflow; then X's column
    divided by its largest entry (|re| + |im|)."""
    batch, n, _ = op.operands[0].type.shape
    f = Field(op.results[0].type.dtype)
    complex_t = Field(op.operands[0].type.dtype).complex
    b, size = sizes("batch", "n")
    t_buffer, *values, x = params = resized(op, [b * size * size] + [b * size] * (len(op.operands) - 1)
                                            + [b * size * size])
    dtype = f.part
    i, k, top, bottom, row, skip = (K.Var(v, INDEX) for v in ("i", "k", "top", "bottom", "row", "skip"))
    smin, numerator, divisor_magnitude, scale, largest = (
        K.Var(v, dtype) for v in ("smin", "numerator", "divisor_magnitude", "scale", "largest"))
    total, other, divisor, determinant, first, second = (f.var(v) for v in ("total", "other", "divisor", "determinant",
                                                                             "first", "second"))
    epsilon, tiny, largest_float = (float(v) for v in (np.finfo(NUMPY_DTYPES[dtype]).eps,
                                                       np.finfo(NUMPY_DTYPES[dtype]).tiny,
                                                       np.finfo(NUMPY_DTYPES[dtype]).max))
    rescale = largest_float ** 0.5

    def body(g):
        matrix, j = g / size, g % size
        t_real = lambda r, c: t_buffer[matrix * size * size + r * size + c]
        # T's entries as factors (a real T's are real: half the multiplications) and as entries.
        entry = (lambda r, c: f.read(t_buffer, matrix * size * size + r * size + c)) if complex_t else t_real
        t = entry if complex_t else (lambda r, c: f.from_real(t_real(r, c)))
        at = lambda r: matrix * size * size + r * size + j
        value = f.read(values[0], matrix * size + j) if complex_t else \
            Complex(values[0][matrix * size + j], values[1][matrix * size + j])
        shifted = lambda r: t(r, r) - value
        # Subdiagonal entries read at clamped indices (the first row has none); a complex T has none.
        below_diagonal = lambda r: (r > 0) & t_real(r, K.maximum(r - 1, 0)).ne(0)
        guarded = lambda d: f.select(f.magnitude(d) >= smin, d, f.from_real(smin))

        def rescaled(first_row, *quotients):
            """Statements scaling x's rows first_row..bottom and the quotients' numerators (variables)
            where a quotient would exceed `rescale` (by the factor making it `rescale`)."""
            return [K.If(numerator > rescale * divisor_magnitude, [
                K.Assign(scale, rescale * divisor_magnitude / numerator),
                loop("k", first_row, bottom + 1, f.write(x, at(k), f.read(x, at(k)) * scale)),
                *[statement for q in quotients for statement in f.assign(q, q * scale)]])]

        one_row = [
            *f.let(total, f.const(0)),
            loop("k", row + 1, bottom + 1, f.assign(total, total - f.read(x, at(k)) * entry(row, k))),
            *f.let(divisor, guarded(shifted(row))),
            K.Assign(numerator, f.magnitude(total)), K.Assign(divisor_magnitude, f.magnitude(divisor)),
            *rescaled(row + 1, total),
            *f.write(x, at(row), total / divisor)]
        two_rows = [
            *f.let(total, f.const(0)), *f.let(other, f.const(0)),
            loop("k", row + 1, bottom + 1, [
                *f.assign(total, total - f.read(x, at(k)) * entry(row - 1, k)),
                *f.assign(other, other - f.read(x, at(k)) * entry(row, k))]),
            *f.let(determinant, guarded(shifted(row - 1) * shifted(row) - t(row - 1, row) * entry(row, row - 1))),
            # Cramer's numerators.
            *f.let(first, total * shifted(row) - other * entry(row - 1, row)),
            *f.let(second, shifted(row - 1) * other - total * entry(row, row - 1)),
            K.Assign(numerator, K.maximum(f.magnitude(first), f.magnitude(second))),
            K.Assign(divisor_magnitude, f.magnitude(determinant)),
            *rescaled(row + 1, first, second),
            *f.write(x, at(row - 1), first / determinant), *f.write(x, at(row), second / determinant),
            K.Assign(skip, K.Const(1, INDEX))]
        # A real T's block at row j: 1x1 (x_j = 1) or 2x2, rows a < c, whose null vector is taken from
        # its larger row (magnitudes |re| + |im|).
        a, c = top, bottom
        first_row = f.magnitude(shifted(a)) + K.abs(t_real(a, c))
        second_row = K.abs(t_real(c, a)) + f.magnitude(shifted(c))
        block = [
            K.If(below_diagonal(j), [K.Assign(top, j - 1)]),
            K.If((j < size - 1) & below_diagonal(K.minimum(j + 1, size - 1)), [K.Assign(bottom, j + 1)]),
            K.If(top.eq(bottom), f.write(x, at(j), f.const(1)), [
                K.If(first_row >= second_row,
                     [*f.write(x, at(a), t(a, c)), *f.write(x, at(c), value - t(a, a))],
                     [*f.write(x, at(a), value - t(c, c)), *f.write(x, at(c), t(c, a))])])]
        return [
            K.Let(smin, K.maximum(epsilon * f.magnitude(value), K.Const(tiny, dtype))),
            *[K.Let(v, K.Const(0, dtype)) for v in (numerator, divisor_magnitude, scale, largest)],
            loop("i", 0, size, f.write(x, at(i), f.const(0))),
            K.Let(top, j), K.Let(bottom, j), K.Let(skip, K.Const(0, INDEX)),
            *(f.write(x, at(j), f.const(1)) if complex_t else block),
            loop("s", 0, top, [
                K.Let(row, top - 1 - K.Var("s", INDEX)),
                K.If(skip.eq(1), [K.Assign(skip, K.Const(0, INDEX))],
                     one_row if complex_t else [K.If(below_diagonal(row), two_rows, one_row)])]),
            loop("i", 0, bottom + 1, [K.Assign(largest, K.maximum(largest, f.magnitude(f.read(x, at(i)))))]),
            loop("i", 0, bottom + 1, f.write(x, at(i), f.read(x, at(i)) / largest))]

    return per_item(name, params, [b, size], b * size, body, [("batch", batch), ("n", n)])


KERNELS = {"trevc": trevc_kernel, "getri": getri_kernel, "potrs": potrs_kernel, "trtri": trtri_kernel,
           "geev": geev_kernel, "syev": syev_kernel, "getrs": getrs_kernel, "gesvdj": gesvdj_kernel,
           "syevj": syevj_kernel, "gebal": gebal_kernel,
           "geqrf": geqrf_kernel, "orgqr": orgqr_kernel, "getrf": getrf_kernel, "lapmr": lapmr_kernel,
           "potrf": potrf_kernel, "trsm": trsm_kernel, "laswp": laswp_kernel}
