"""Kernels of the bidiagonal singular value routines (bidiagonal.py): gebrd runs one work-item per
matrix below WORKGROUP_GEBRD_FROM columns and a workgroup per matrix from there (gebd2's serial steps,
each step's O(m n) work spread over its work-items), bdsqr one work-item per matrix (its serial QR
steps); lasr runs one work-item per row of the
matrix it turns (a column of its transpose X), all replaying the log in step: the rotations of U
and V, which LAPACK's bdsqr applies column pair by column pair as it goes, become independent
row updates (rocSOLVER's bdsqr likewise hands its rotations to a kernel parallel over rows), so
the O(n^2) rotation arithmetic per row runs on as many work-items as U and V have rows."""
from __future__ import annotations

import numpy as np

from ...ir import kernel as K
from ...ir.core import Op
from ...ir.kernel import Kernel
from ...ir.types import NUMPY_DTYPES
from .kernels import INDEX, WORKGROUP_GEBRD_FROM, WORKGROUP_ITEMS, across, copied, loop, per_item, resized, sizes, summed
from .routines import MAX_QR_STEPS, rotation_capacity


def gebrd_kernel(op: Op, name: str) -> Kernel:
    if op.operands[0].type.shape[2] < WORKGROUP_GEBRD_FROM:
        return gebrd_serial_kernel(op, name)
    return gebrd_workgroup_kernel(op, name)


def gebrd_serial_kernel(op: Op, name: str) -> Kernel:
    """bidiagonal.py's gebrd_reference, one work-item per matrix: step k reflects column k below the diagonal (larfg, H_k applied
    to the columns right of k, its row sums u^T A gathered in taup's entries right of k, not yet
    written), then row k right of the superdiagonal (G_k applied to the rows below k)."""
    batch, m, n = op.operands[0].type.shape
    dtype = op.operands[0].type.dtype
    b, rows, columns = sizes("batch", "m", "n")
    a, br, tauq, taup = params = resized(op, [b * rows * columns, b * rows * columns, b * columns, b * columns])
    i, j, k = (K.Var(x, INDEX) for x in "ijk")
    alpha, norm2, beta, tau, scale, w = (K.Var(x, dtype) for x in ("alpha", "norm2", "beta", "tau", "scale", "w"))
    zero = K.Const(0, dtype)

    def body(g):
        at = lambda r, c: g * rows * columns + r * columns + c
        entry = lambda r, c: br[at(r, c)]
        scratch = lambda c: g * columns + c

        def larfg(first, rest_first, rest_stop, read, write):
            """alpha = read(first); reflects it with read(rest) for rest in rest_first..rest_stop, as
            routines.householder: tau, beta on the first entry, the vector (without its 1) in the rest."""
            r = K.Var("r", INDEX)
            return [
                K.Assign(alpha, read(first)), K.Assign(norm2, zero), K.Assign(tau, zero),
                loop("r", rest_first, rest_stop, [K.Assign(norm2, norm2 + read(r) * read(r))]),
                K.If(norm2.ne(0), [
                    K.Assign(beta, K.sqrt(alpha * alpha + norm2)),
                    K.If(alpha >= 0, [K.Assign(beta, -beta)]),
                    K.Assign(tau, (beta - alpha) / beta), K.Assign(scale, 1 / (alpha - beta)),
                    loop("r", rest_first, rest_stop, [write(r, read(r) * scale)]),
                    write(first, beta)])]

        column = larfg(k, k + 1, rows, lambda r: entry(r, k), lambda r, value: K.Store(br, at(r, k), value))
        row = larfg(k + 1, k + 2, columns, lambda c: entry(k, c), lambda c, value: K.Store(br, at(k, c), value))
        # H_k A[k:, k+1:]: w^T = u^T A row by row into taup's entries right of k, then A -= tau u w^T.
        left = [
            loop("j", k + 1, columns, [K.Store(taup, scratch(j), entry(k, j))]),
            loop("i", k + 1, rows, [loop("j", k + 1, columns, [
                K.Store(taup, scratch(j), taup[scratch(j)] + entry(i, k) * entry(i, j))])]),
            loop("j", k + 1, columns, [K.Store(br, at(k, j), entry(k, j) - tau * taup[scratch(j)])]),
            loop("i", k + 1, rows, [loop("j", k + 1, columns, [
                K.Store(br, at(i, j), entry(i, j) - tau * entry(i, k) * taup[scratch(j)])])])]
        # A[k+1:, k+1:] G_k: each row's w = A v, then the row -= tau w v^T.
        right = [loop("i", k + 1, rows, [
            K.Assign(w, entry(i, k + 1)),
            loop("j", k + 2, columns, [K.Assign(w, w + entry(i, j) * entry(k, j))]),
            K.Assign(w, w * tau),
            K.Store(br, at(i, k + 1), entry(i, k + 1) - w),
            loop("j", k + 2, columns, [K.Store(br, at(i, j), entry(i, j) - w * entry(k, j))])])]
        return [
            *[K.Let(x, zero) for x in (alpha, norm2, beta, tau, scale, w)],
            copied(a, br, g * rows * columns, rows * columns),
            loop("k", 0, columns, [
                *column, K.Store(tauq, g * columns + k, tau), *left, K.Store(taup, g * columns + k, zero),
                K.If(k < columns - 1, [*row, K.Store(taup, g * columns + k, tau), *right])])]

    return per_item(name, params, [b, rows, columns], b, body, [("batch", batch), ("m", m), ("n", n)])


def gebrd_workgroup_kernel(op: Op, name: str) -> Kernel:
    """bidiagonal.py's gebrd_reference, a workgroup of WORKGROUP_ITEMS work-items per matrix (as sytrd's,
    tridiagonal_kernels.py): step k reflects column k below the diagonal (larfg), applies H_k to the
    columns right of k (w^T = u^T A, the work-items on consecutive columns, kept scaled by tau in
    taup's entries right of k, not yet written; then A -= u w^T row by row), then reflects row k right
    of the superdiagonal and applies G_k to the rows below k (each row's w = A v summed over the
    work-items, then the row -= w v^T)."""
    batch, m, n = op.operands[0].type.shape
    dtype = op.operands[0].type.dtype
    b, rows, columns = sizes("batch", "m", "n")
    a, br, tauq, taup = params = resized(op, [b * rows * columns, b * rows * columns, b * columns, b * columns])
    i, k, block = (K.Var(x, INDEX) for x in ("i", "k", "block"))
    alpha, beta, tau, scale, w, ui, acc, partial, updated = (
        K.Var(x, dtype) for x in ("alpha", "beta", "tau", "scale", "w", "ui", "acc", "partial", "updated"))
    zero = K.Const(0, dtype)
    g, lane = K.workgroup_id(0).cast(INDEX), K.workitem_id(0).cast(INDEX)
    first_lane = lane.eq(0)
    at = lambda r, c: (g * rows + r) * columns + c
    entry = lambda r, c: br[at(r, c)]
    scratch = lambda c: g * columns + c

    def larfg(name, first, rest_first, rest_stop, place) -> list:
        """alpha = the entry at place(first); reflects it with the entries at place(rest), rest in
        rest_first..rest_stop, as routines.householder: tau, beta at the first, the vector (without
        its 1) in the rest."""
        norm2 = K.Var(f"{name}_norm2", dtype)   # each wave reduction defines its own
        return [
            K.Assign(alpha, br[place(first)]),
            *summed(norm2, partial, f"{name}_norm", rest_first, rest_stop, lambda r: br[place(r)] * br[place(r)]),
            # No reflection where the rest is zero: tau = 0, scale = 1, beta = alpha.
            K.Assign(beta, K.sqrt(alpha * alpha + norm2)),
            K.Assign(beta, K.select(norm2.eq(0), alpha, K.select(alpha >= 0, -beta, beta))),
            K.Assign(tau, K.select(norm2.eq(0), zero, (beta - alpha) / beta)),
            K.Assign(scale, K.select(norm2.eq(0), K.Const(1, dtype), 1 / (alpha - beta))),
            across(f"{name}_scaled", rest_first, rest_stop, lambda r: [K.Store(br, place(r), br[place(r)] * scale)]),
            K.If(first_lane, [K.Store(br, place(first), beta)]),
            K.Barrier()]

    # H_k A[k:, k+1:]: tau w^T = tau u^T A (u_k = 1) into taup's entries right of k, row k updated at once.
    left = [
        K.For(block, k + 1, columns, WORKGROUP_ITEMS, [
            K.If(block + lane < columns, [K.Assign(acc, entry(k, block + lane))]),
            K.For(i, k + 1, rows, 1, [
                K.Assign(ui, entry(i, k)),
                K.If(block + lane < columns, [K.Assign(acc, acc + ui * entry(i, block + lane))])], uniform=True),
            K.If(block + lane < columns, [
                K.Store(taup, scratch(block + lane), tau * acc),
                K.Store(br, at(k, block + lane), entry(k, block + lane) - tau * acc)])], uniform=True),
        K.Barrier()]
    # Then each further row in one pass: row -= u_i (tau w^T) (H_k), its w_i = row . v (v_k+1 = 1) summed over
    # the work-items, row -= tau_p w_i v^T (G_k; tau_p = 0 at the last column).
    v = lambda j: K.select(j.eq(k + 1), K.Const(1, dtype), entry(k, j))
    rows_updated = [
        K.For(i, k + 1, rows, 1, [
            K.Assign(ui, entry(i, k)), K.Assign(partial, zero),
            across("left", k + 1, columns, lambda j: [
                K.Assign(updated, entry(i, j) - ui * taup[scratch(j)]), K.Store(br, at(i, j), updated),
                K.Assign(partial, partial + updated * v(j))]),
            K.WaveReduce(w, "sum", partial),
            across("right", k + 1, columns, lambda j: [K.Store(br, at(i, j), entry(i, j) - w * tau * v(j))])],
              uniform=True),
        K.Barrier()]
    body = [
        *[K.Let(x, zero) for x in (alpha, beta, tau, scale, ui, acc, partial, updated)],
        K.For(i, 0, rows, 1, [across("copy", 0, columns, lambda j: [K.Store(br, at(i, j), a[at(i, j)])])],
              uniform=True),
        K.Barrier(),
        K.For(k, 0, columns, 1, [
            *larfg("column", k, k + 1, rows, lambda r: at(r, k)),
            K.If(first_lane, [K.Store(tauq, g * columns + k, tau)]), *left,
            K.If(k < columns - 1, larfg("row", k + 1, k + 2, columns, lambda c: at(k, c)), [K.Assign(tau, zero)],
                 uniform=True),
            K.If(first_lane, [K.Store(taup, g * columns + k, tau)]),
            *rows_updated], uniform=True)]
    return K.Kernel(name, params=params + [b, rows, columns], grid=(b,), workgroup_size=(WORKGROUP_ITEMS,),
                    body=body, arguments=[("batch", batch), ("m", m), ("n", n)])


def bdsqr_kernel(op: Op, name: str) -> Kernel:
    """bidiagonal.py's bidiagonal_svd, statement for statement, d in s and e in the work copy f."""
    batch, n = op.operands[0].type.shape
    dtype = op.operands[0].type.dtype
    vectors = op.attrs["vectors"]
    b, size = sizes("batch", "n")
    capacity = rotation_capacity(size)
    counts = [b * size] * 4 + ([b * capacity * 2] * 4 + [b * 2] if vectors else [])
    params = resized(op, counts)
    d_in, e_in, s_out, f_out = params[:4]
    i, j, k, t = (K.Var(x, INDEX) for x in "ijkt")
    last, low, zero_at, best, left_count, right_count = (
        K.Var(x, INDEX) for x in ("last", "low", "zero_at", "best", "left_count", "right_count"))
    scale, y, z, c, s, r, f, sc, t11, t12, t22, delta, denominator, shift, dk, ek, dl, bulge, swap = (
        K.Var(x, dtype) for x in ("scale", "y", "z", "c", "s", "r", "f", "sc", "t11", "t12", "t22", "delta",
                                  "denominator", "shift", "dk", "ek", "dl", "bulge", "swap"))
    epsilon = float(np.finfo(NUMPY_DTYPES[dtype]).eps)
    zero, one = K.Const(0, dtype), K.Const(1, dtype)

    def body(g):
        at = lambda index: g * size + index
        d = lambda index: s_out[at(index)]
        e = lambda index: f_out[at(index)]
        set_d = lambda index, value: K.Store(s_out, at(index), value)
        set_e = lambda index, value: K.Store(f_out, at(index), value)

        def log(which, p, q, cosine, sine):
            if not vectors:
                return []
            pairs, cs = (params[4], params[5]) if which == "left" else (params[6], params[7])
            count = left_count if which == "left" else right_count
            entry = (g * capacity + count) * 2
            return [K.Store(pairs, entry, p.cast("i32")), K.Store(pairs, entry + 1, q.cast("i32")),
                    K.Store(cs, entry, cosine), K.Store(cs, entry + 1, sine), K.Assign(count, count + 1)]

        def rotation(first, second):   # bidiagonal.rotation
            return [K.Assign(sc, K.abs(first) + K.abs(second)),
                    K.Assign(r, K.select(sc.eq(0), zero, sc * K.sqrt((first / sc) * (first / sc)
                                                                     + (second / sc) * (second / sc)))),
                    K.Assign(c, K.select(sc.eq(0), one, first / r)), K.Assign(s, K.select(sc.eq(0), zero, second / r))]

        chase_row = [   # d[zero_at] = 0
            K.Assign(f, e(zero_at)), set_e(zero_at, zero),
            loop("j", zero_at + 1, last + 1, [
                *rotation(d(j), f), set_d(j, r), *log("left", j, zero_at, c, s),
                K.If(j < last, [K.Assign(f, -s * e(j)), set_e(j, c * e(j))])])]
        column_j = last - 1 - t
        chase_column = [   # d[last] = 0
            K.Assign(f, e(last - 1)), set_e(last - 1, zero),
            loop("t", 0, last - low, [
                *rotation(d(column_j), f), set_d(column_j, r), *log("right", column_j, last, c, s),
                K.If(column_j > low, [K.Assign(f, -s * e(column_j - 1)), set_e(column_j - 1, c * e(column_j - 1))])])]
        golub_kahan = [
            K.Assign(t11, d(last - 1) * d(last - 1)
                     + K.select(last - 1 > low, e(K.maximum(last - 2, 0)) * e(K.maximum(last - 2, 0)), zero)),
            K.Assign(t12, d(last - 1) * e(last - 1)), K.Assign(t22, d(last) * d(last) + e(last - 1) * e(last - 1)),
            K.Assign(delta, (t11 - t22) / 2),
            K.Assign(denominator, delta + K.select(delta >= 0, one, -one) * K.sqrt(delta * delta + t12 * t12)),
            K.Assign(shift, t22 - K.select(denominator.ne(0), t12 * t12 / denominator, zero)),
            K.Assign(y, d(low) * d(low) - shift), K.Assign(z, d(low) * e(low)),
            loop("k", low, last, [
                *rotation(y, z),
                K.If(k > low, [set_e(k - 1, r)]),
                K.Assign(dk, d(k)), K.Assign(ek, e(k)), K.Assign(dl, d(k + 1)),
                set_d(k, c * dk + s * ek), set_e(k, -s * dk + c * ek), K.Assign(bulge, s * dl), set_d(k + 1, c * dl),
                *log("right", k, k + 1, c, s),
                *rotation(d(k), bulge),
                set_d(k, r), K.Assign(ek, e(k)), K.Assign(dl, d(k + 1)),
                set_e(k, c * ek + s * dl), set_d(k + 1, -s * ek + c * dl),
                *log("left", k, k + 1, c, s),
                K.If(k < last - 1, [K.Assign(bulge, s * e(k + 1)), set_e(k + 1, c * e(k + 1)),
                                    K.Assign(y, e(k)), K.Assign(z, bulge)])])]
        step = [
            K.Assign(low, K.Const(0, INDEX)),
            loop("k", 1, last + 1, [
                K.If(K.abs(e(k - 1)) <= epsilon * (K.abs(d(k - 1)) + K.abs(d(k))), [set_e(k - 1, zero),
                                                                                  K.Assign(low, k)])]),
            K.If(low.eq(last), [K.Assign(last, last - 1)], [
                K.Assign(zero_at, K.Const(-1, INDEX)),
                loop("k", low, last + 1, [K.If(K.abs(d(k)) <= epsilon, [set_d(k, zero), K.Assign(zero_at, k)])]),
                K.If(zero_at.eq(last), chase_column, [K.If(zero_at >= 0, chase_row, golub_kahan)])])]
        room = K.maximum(left_count, right_count) + 4 * size <= capacity
        result = [
            loop("k", 0, size, [K.If(d(k) < 0, [set_d(k, -d(k)), *log("right", k, k, -one, zero)])]),
            loop("i", 0, size, [
                K.Assign(best, i),
                loop("j", i + 1, size, [K.If(d(j) > d(best), [K.Assign(best, j)])]),
                K.If(best.ne(i), [K.Assign(swap, d(i)), set_d(i, d(best)), set_d(best, swap),
                                  *log("left", i, best, zero, one), *log("right", i, best, zero, one)])]),
            loop("k", 0, size, [set_d(k, d(k) * scale)])]
        if vectors:
            result += [K.Store(params[8], g * 2, left_count.cast("i32")),
                       K.Store(params[8], g * 2 + 1, right_count.cast("i32"))]
        return [
            *[K.Let(x, zero) for x in (scale, y, z, c, s, r, f, sc, t11, t12, t22, delta, denominator, shift, dk, ek,
                                       dl, bulge, swap)],
            *[K.Let(x, K.Const(0, INDEX)) for x in (low, zero_at, best, left_count, right_count)],
            K.Let(last, size - 1),
            loop("k", 0, size, [set_d(k, d_in[at(k)]), set_e(k, K.select(k < size - 1, e_in[at(k)], zero))]),
            # Scaled to largest entry 1.
            loop("k", 0, size, [K.Assign(scale, K.maximum(scale, K.maximum(K.abs(d(k)), K.abs(e(k)))))]),
            K.If(scale.ne(0), [loop("k", 0, size, [set_d(k, d(k) / scale), set_e(k, e(k) / scale)])]),
            loop("step", 0, MAX_QR_STEPS * size, [K.If((last > 0) & room, step)]),
            K.If(last > 0, [loop("k", 0, size, [set_d(k, K.Const(float("nan"), dtype))])]),
            *result]

    return per_item(name, params, [b, size], b, body, [("batch", batch), ("n", n)])


def lasr_kernel(op: Op, name: str) -> Kernel:
    """A workgroup per matrix and WORKGROUP_ITEMS columns of X (rows of M), a work-item per column:
    the rotations' loop is uniform (each rotation read once a workgroup), and each rotation is a
    loop over the work-items' contiguous entries of rows p and q (coalesced on a GPU, vectorized
    on the host)."""
    batch, c_rows, r_columns = op.operands[0].type.shape
    dtype = op.operands[0].type.dtype
    b, rows, columns, entries = sizes("batch", "m", "n", "R")
    x_in, pairs, cs, count, x_out = params = resized(
        op, [b * rows * columns, b * entries * 2, b * entries * 2, b, b * rows * columns])
    t, k = K.Var("t", INDEX), K.Var("k", INDEX)
    p, q = K.Var("p", INDEX), K.Var("q", INDEX)
    c, s, x, y = (K.Var(v, dtype) for v in ("c", "s", "x", "y"))
    matrix = K.workgroup_id(1).cast(INDEX)
    column = K.workgroup_id(0).cast(INDEX) * WORKGROUP_ITEMS + K.workitem_id(0).cast(INDEX)
    at = lambda row: (matrix * rows + row) * columns + column
    entry = (matrix * entries + t) * 2
    turned = [K.Let(x, x_out[at(p)]), K.Let(y, x_out[at(q)]),
              K.Store(x_out, at(p), c * x + s * y), K.Store(x_out, at(q), -s * x + c * y)]
    replayed = lambda work: K.For(t, 0, count[matrix].cast(INDEX), 1, [
        K.Let(p, pairs[entry].cast(INDEX)), K.Let(q, pairs[entry + 1].cast(INDEX)),
        K.Let(c, cs[entry]), K.Let(s, cs[entry + 1]), *work], uniform=True)
    whole = (K.workgroup_id(0).cast(INDEX) + 1) * WORKGROUP_ITEMS <= columns
    body = [
        K.If(column < columns, [loop("k", 0, rows, [K.Store(x_out, at(k), x_in[at(k)])])]),
        # A workgroup whose columns are all in X (all but the last) runs unguarded: a plain vector loop.
        K.If(whole, [replayed(turned)], [replayed([K.If(column < columns, turned)])], uniform=True)]
    return K.Kernel(name, params=params + [b, rows, columns, entries], grid=(K.ceil_div(columns, WORKGROUP_ITEMS), b),
                    workgroup_size=(WORKGROUP_ITEMS,), body=body,
                    arguments=[("batch", batch), ("m", c_rows), ("n", r_columns), ("R", op.operands[1].type.shape[1])])


KERNELS = {"gebrd": gebrd_kernel, "bdsqr": bdsqr_kernel, "lasr": lasr_kernel}
