"""Kernels of the tridiagonal eigenvalue routines (tridiagonal.py).

sytrd runs a workgroup of 64 work-items per matrix (rocSOLVER's sytd2 kernels likewise spread each
step over a workgroup): the steps are serial, but each step's vector work, above all the product
A22 u and the rank-2 update of A22 (the O(n^2) work of a step), is spread over the work-items, which
take consecutive entries of a row (the host runs them as one vector loop). The matrix is kept whole
(both triangles), so that A22 u reads A22's columns along its rows, and reflector k's vector sits in
row k while it is applied (row k is the conjugate of column k below the diagonal: contiguous).
latrd (a panel of blocked sytrd) likewise runs a workgroup per matrix, but reads A without writing it: a
column's product with the trailing matrix reads its lower triangle once, and the panel's reflections
reach the trailing matrix afterwards as a GEMM (the frontend's). steqr runs one work-item per matrix
(the QR steps are O(n) each, their rotations only logged)."""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...ir.kernel import Kernel
from .entries import Field
from .kernels import INDEX, WORKGROUP_ITEMS, across as lanes, loop, per_item, resized, sizes, summed as lanes_summed, \
    tridiagonal_qr
from .routines import rotation_capacity


def sytrd_kernel(op: Op, name: str) -> Kernel:
    """tridiagonal.py's sytrd_reference, a step at a time (routines.py's householder_tridiagonal). H
    (packed) holds the Hermitian matrix, A22 updated in both triangles; work holds p, then q, in its
    first n entries and the next step's A22 u in the others. One pass over A22 a step: row k + 1 is
    updated first (step k's rank-2 update), which makes reflector k + 1; then each further row is
    updated and at once multiplied into reflector k + 1's A22 u (LAPACK's sytrd reads A22 twice a
    step, in symv and in syr2k)."""
    batch, n, _ = op.operands[0].type.shape
    f = Field(op.operands[0].type.dtype)
    dtype = f.part
    b, size = sizes("batch", "n")
    a, h, d, e, work = params = resized(op, [b * size * size, b * size * size, b * size, b * size, b * 2 * size])
    g, lane = K.workgroup_id(0).cast(INDEX), K.workitem_id(0).cast(INDEX)
    at = lambda r, col: (g * size + r) * size + col
    m = lambda r, col: f.read(h, at(r, col))
    put = lambda r, col, value: f.write(h, at(r, col), value)
    lower = lambda r, col: f.read(a, at(r, col))
    vector = lambda j: f.read(work, g * 2 * size + j)   # p, then q
    set_vector = lambda j, value: f.write(work, g * 2 * size + j, value)
    following = lambda j: f.read(work, (g * 2 + 1) * size + j)   # the next step's A22 u
    set_following = lambda j, value: f.write(work, (g * 2 + 1) * size + j, value)
    i, k, block = (K.Var(x, INDEX) for x in ("i", "k", "block"))
    partial, norm2, norm, magnitude, beta, dot, half = (
        K.Var(x, dtype) for x in ("partial", "norm2", "norm", "magnitude", "beta", "dot", "half"))
    x0, u0, phase, ui, qi, un, acc, updated = (f.var(x) for x in ("x0", "u0", "phase", "ui", "qi", "un", "acc",
                                                                   "updated"))
    zero = K.Const(0, dtype)
    first_row = lane.eq(0)

    across = lambda var, first, body: lanes(var, first, size, body)
    summed = lambda total, var, first, term: lanes_summed(total, partial, var, first, size, term)

    def reflector(r) -> list:
        """d_r, then the reflector of column r below the diagonal (x, the conjugate of row r right of it):
        row r becomes u = x + phase ||x|| e1 and beta is set (complex_reflector; 0 for x = 0)."""
        return [
            K.If(first_row, [K.Store(d, g * size + r, f.real(m(r, r)))]),
            *summed(norm2, "j_norm", r + 1, lambda j: f.squared_magnitude(m(r, j))),
            K.Assign(norm, K.sqrt(norm2)),
            *f.assign(x0, f.conj(m(r, r + 1))),
            K.Assign(magnitude, K.sqrt(f.squared_magnitude(x0))),
            *f.assign(phase, f.select(magnitude.ne(0), x0 / magnitude, f.const(1))),
            K.Assign(beta, K.select(norm.ne(0), 1 / (norm * (norm + magnitude)), zero)),
            K.Barrier(),
            across("j_u", r + 1, lambda j: put(r, j, f.select(j.eq(r + 1), x0 + phase * norm, f.conj(m(r, j))))),
            K.Barrier()]

    first_product = [   # p = beta A22 u for reflector 0, p_j = beta sum_i conj(A22[i, j]) u_i (A22 Hermitian)
        K.For(block, 1, size, WORKGROUP_ITEMS, [
            *f.assign(acc, f.const(0)),
            K.For(i, 1, size, 1, [
                *f.assign(ui, m(0, i)),
                K.If(block + lane < size, f.assign(acc, acc + f.conj(m(i, block + lane)) * ui))], uniform=True),
            K.If(block + lane < size, set_vector(block + lane, acc * f.from_real(beta)))], uniform=True),
        K.Barrier()]
    rank_two = lambda r, j: m(r, j) - ui * f.conj(vector(j)) - qi * f.conj(m(k, j))   # A22 -= u q^H + q u^H
    step = [
        # q = p - (beta / 2) (u^H p) u.
        *summed(dot, "j_dot", k + 1, lambda j: f.real(f.conj(m(k, j)) * vector(j))),
        K.Assign(half, beta / 2 * dot),
        across("j_q", k + 1, lambda j: set_vector(j, vector(j) - m(k, j) * f.from_real(half))),
        K.Barrier(),
        *f.assign(ui, m(k, k + 1)), *f.assign(qi, vector(k + 1)),
        across("j_next", k + 1, lambda j: put(k + 1, j, rank_two(k + 1, j))),
        # Column k becomes (-phase ||x||, 0, ...): v = u / u0 below row k + 1, tau = beta |u0|^2 in row 0.
        *f.assign(u0, m(k, k + 1)),
        across("j_v", k + 2, lambda r: put(r, k, f.select(norm.ne(0), m(k, r) / u0, f.const(0)))),
        K.If(first_row, [*put(k + 1, k, f.select(norm.ne(0), phase * (-norm), m(k + 1, k))),
                         *put(K.Const(0, INDEX), k, f.from_real(beta * f.squared_magnitude(u0)))]),
        K.Barrier(),
        # Reflector k + 1 from the updated row (at k + 1 = n - 2, none: its row and products go unused).
        *reflector(k + 1),
        across("j_zero", k + 1, lambda j: set_following(j, f.const(0))),
        K.Barrier(),
        # The other rows of A22 updated, each multiplied into reflector k + 1's A22 u as it is written.
        K.For(i, k + 2, size, 1, [
            *f.assign(ui, m(k, i)), *f.assign(qi, vector(i)), *f.assign(un, m(k + 1, i)),
            across("j_update", k + 1, lambda j: [
                *f.assign(updated, rank_two(i, j)), *put(i, j, updated),
                *set_following(j, following(j) + f.conj(updated) * un)])], uniform=True),
        K.Barrier(),
        across("j_p", k + 2, lambda j: set_vector(j, following(j) * f.from_real(beta))),
        K.Barrier()]
    coupling = f.var("coupling")
    r = K.Var("r", INDEX)
    subdiagonal = [   # routines.py's real_subdiagonal; d's last two entries (all of them when n < 3)
        loop("r", K.maximum(size - 2, 0), size, [K.Store(d, g * size + r, f.real(m(r, r)))]),
        *f.assign(phase, f.const(1)),
        loop("r", 0, size - 1, [
            *f.let(coupling, m(r + 1, r)),
            K.Assign(magnitude, K.sqrt(f.squared_magnitude(coupling))),
            *f.assign(phase, f.select(magnitude.ne(0), phase * coupling / magnitude, phase)),
            *put(r + 1, r, phase),
            K.Store(e, g * size + r, magnitude)]),
        K.If(size > 0, [K.Store(e, g * size + size - 1, zero)])]
    body = [
        *[K.Let(var, zero) for var in (partial, norm, magnitude, beta, half)],
        *[statement for var in (x0, u0, phase, ui, qi, un, acc, updated) for statement in f.let(var, f.const(0))],
        # H = the Hermitian matrix of A's lower triangle (its diagonal's real part).
        K.For(i, 0, size, 1, [across("j_copy", 0, lambda j: put(i, j, f.select(
            i > j, lower(i, j), f.select(i.eq(j), f.from_real(f.real(lower(i, i))), f.conj(lower(j, i))))))],
              uniform=True),
        K.Barrier(),
        K.If(size > 2, [*reflector(K.Const(0, INDEX)), *first_product], uniform=True),
        K.For(k, 0, size - 2, 1, step, uniform=True),
        K.If(first_row, subdiagonal),
        K.Barrier(),
        # Zeros where packed holds neither a tau, a v nor a phase: row 0 right of the last tau, and on and
        # above the diagonal of the other rows.
        across("j_row0", K.maximum(size - 2, 0), lambda j: put(K.Const(0, INDEX), j, f.const(0))),
        K.For(i, 1, size, 1, [across("j_upper", i, lambda j: put(i, j, f.const(0)))], uniform=True),
        across("j_work", 0, lambda j: [*set_vector(j, f.const(0)), *set_following(j, f.const(0))])]
    return K.Kernel(name, params=params + [b, size], grid=(b,), workgroup_size=(WORKGROUP_ITEMS,), body=body,
                    arguments=[("batch", batch), ("n", n)])


def latrd_kernel(op: Op, name: str) -> Kernel:
    """tridiagonal.py's latrd_reference, a workgroup of WORKGROUP_ITEMS work-items per matrix, a column at a
    time: column i of A_i (A's column i minus the panel's earlier reflections) is built in Vt's row i and
    made reflector i there; then A_i's product with it, p = tau (A v - V (W^H v) - W (V^H v)), is summed
    in Wt's row i: A v from A's lower triangle read once, a row at a time (the work-items on consecutive
    entries of the row, each row's dot product summed across the wave; LAPACK's symv likewise reads one
    triangle), then for each earlier k the two dot products and their corrections; then q = p - (tau /
    2) (v^H p) v. A is only read: its trailing rows and columns are the caller's to update (A - V W^H -
    W V^H, GEMMs)."""
    batch, m, _ = op.operands[0].type.shape
    f = Field(op.operands[0].type.dtype)
    dtype = f.part
    b, size, width = sizes("batch", "m", "columns")
    a, phase_in, vt, wt, tau, d, e, phases = params = resized(
        op, [b * size * size, b, b * width * size, b * width * size, b * width, b * width, b * width, b * width])
    g, lane = K.workgroup_id(0).cast(INDEX), K.workitem_id(0).cast(INDEX)
    entry = lambda r, c: f.read(a, (g * size + r) * size + c)
    v = lambda k, j: f.read(vt, (g * width + k) * size + j)
    set_v = lambda k, j, value: f.write(vt, (g * width + k) * size + j, value)
    w = lambda k, j: f.read(wt, (g * width + k) * size + j)
    set_w = lambda k, j, value: f.write(wt, (g * width + k) * size + j, value)
    i, k, r = (K.Var(x, INDEX) for x in ("i", "k", "r"))
    partial, norm2, norm, magnitude, beta, scale, dot, half = (
        K.Var(x, dtype) for x in ("partial", "norm2", "norm", "magnitude", "beta", "scale", "dot", "half"))
    x0, u0, phase, coupling, s, vi, wi, vr, y, z, row, py, pz = (f.var(x) for x in (
        "x0", "u0", "phase", "coupling", "s", "vi", "wi", "vr", "y", "z", "row", "py", "pz"))
    zero = K.Const(0, dtype)
    first_row = lane.eq(0)
    rest = i + 1

    def wave_summed(total, part) -> list:
        """total = the sum of part over the wave, in every work-item."""
        if not f.complex:
            return [K.WaveReduce(total, "sum", part)]
        return [K.WaveReduce(total.re, "sum", part.re), K.WaveReduce(total.im, "sum", part.im)]

    def dots(k) -> list:
        """y = (W^H v)_k and z = (V^H v)_k over the rows below i, in every work-item."""
        return [*f.assign(py, f.const(0)), *f.assign(pz, f.const(0)),
                lanes("j_dots", rest, size, lambda j: [*f.assign(py, py + f.conj(w(k, j)) * v(i, j)),
                                                         *f.assign(pz, pz + f.conj(v(k, j)) * v(i, j))]),
                *wave_summed(y, py), *wave_summed(z, pz)]

    column = [
        # Column i of A_i into Vt's row i, entries i..m - 1.
        lanes("j_column", i, size, lambda j: set_v(i, j, entry(j, i))),
        K.Barrier(),
        K.For(k, 0, i, 1, [*f.assign(wi, f.conj(w(k, i))), *f.assign(vi, f.conj(v(k, i))),
                           lanes("j_reflected", i, size, lambda j: set_v(i, j, v(i, j) - v(k, j) * wi - w(k, j) * vi))],
              uniform=True),
        K.Barrier(),
        # Its reflector (routines.py's complex_reflector of the entries below i), the subdiagonal it leaves
        # and the chained phase.
        K.If(first_row, [K.Store(d, g * width + i, f.real(v(i, i)))]),
        *lanes_summed(norm2, partial, "j_norm", rest, size, lambda j: f.squared_magnitude(v(i, j))),
        K.Assign(norm, K.sqrt(norm2)),
        *f.assign(x0, v(i, rest)),
        K.Assign(magnitude, K.sqrt(f.squared_magnitude(x0))),
        *f.assign(phase, f.select(magnitude.ne(0), x0 / magnitude, f.const(1))),
        K.Assign(beta, K.select(norm.ne(0), 1 / (norm * (norm + magnitude)), zero)),
        *f.assign(u0, x0 + phase * norm),
        *f.assign(coupling, phase * (-norm)),
        K.Assign(magnitude, K.sqrt(f.squared_magnitude(coupling))),
        *f.assign(s, f.select(magnitude.ne(0), s * coupling / magnitude, s)),
        K.If(first_row, [K.Store(e, g * width + i, magnitude), *f.write(phases, g * width + i, s),
                         *f.write(tau, g * width + i, f.from_real(beta * f.squared_magnitude(u0)))]),
        K.Barrier(),
        # v = u / u0 (e_1 where there is nothing to reflect, tau 0) after i's zeros; Wt's row i zero.
        lanes("j_v", 0, size, lambda j: [
            *set_v(i, j, f.select(j.eq(rest), f.const(1),
                                  f.select((j > rest) & norm.ne(0), v(i, j) / u0, f.const(0)))),
            *set_w(i, j, f.const(0))]),
        K.Barrier()]
    product = [
        # A v from A's lower triangle, a row at a time: row r's entries left of the diagonal add
        # conj(A[r, j]) v_r to p_j (A's column r) and their sum A[r, j] v_j to p_r (A's row r).
        K.For(r, rest, size, 1, [
            *f.assign(vr, v(i, r)), *f.assign(py, f.const(0)),
            lanes("j_product", rest, r, lambda j: [*set_w(i, j, w(i, j) + f.conj(entry(r, j)) * vr),
                                                   *f.assign(py, py + entry(r, j) * v(i, j))]),
            *wave_summed(row, py),
            K.If(first_row, set_w(i, r, w(i, r) + row + f.from_real(f.real(entry(r, r))) * vr)),
            K.Barrier()], uniform=True),
        # - V (W^H v) - W (V^H v), then scaled by tau.
        K.For(k, 0, i, 1, [
            *dots(k), lanes("j_corrected", rest, size, lambda j: set_w(i, j, w(i, j) - v(k, j) * y - w(k, j) * z))],
              uniform=True),
        K.Barrier(),
        K.Assign(scale, beta * f.squared_magnitude(u0)),
        lanes("j_scaled", rest, size, lambda j: set_w(i, j, w(i, j) * f.from_real(scale))),
        K.Barrier(),
        # q = p - (tau / 2) (v^H p) v.
        *lanes_summed(dot, partial, "j_dot", rest, size, lambda j: f.real(f.conj(v(i, j)) * w(i, j))),
        K.Assign(half, scale / 2 * dot),
        lanes("j_q", rest, size, lambda j: set_w(i, j, w(i, j) - v(i, j) * f.from_real(half))),
        K.Barrier()]
    body = [
        *[K.Let(var, zero) for var in (partial, norm, magnitude, beta, scale, half)],
        *[statement for var in (x0, u0, phase, coupling, vi, wi, vr, py, pz) for statement in f.let(var, f.const(0))],
        *f.let(s, f.read(phase_in, g)),
        K.For(i, 0, width, 1, [*column, *product], uniform=True)]
    return K.Kernel(name, params=params + [b, size, width], grid=(b,), workgroup_size=(WORKGROUP_ITEMS,), body=body,
                    arguments=[("batch", batch), ("m", m), ("columns", op.attrs["columns"])])


def rotation_logger(pairs, cs, first, count):
    """log(p, q, c, s): statements writing a rotation at entry `count` of the log whose entries start
    at `first` (pairs and cs buffers, two elements an entry), then counting it."""
    def log(p, q, cosine, sine):
        entry = (first + count) * 2
        return [K.Store(pairs, entry, p.cast("i32")), K.Store(pairs, entry + 1, q.cast("i32")),
                K.Store(cs, entry, cosine), K.Store(cs, entry + 1, sine), K.Assign(count, count + 1)]
    return log


def sorted_logged(w, first, size, log) -> list:
    """w[first:first + size] sorted ascending by selection sort (sorted_by's), the swaps logged as
    rotations (i, best, 0, 1)."""
    i, j, best = (K.Var(x, INDEX) for x in ("i", "j", "best"))
    swap = K.Var("swap", w.dtype)
    return [loop("i", 0, size, [
        K.Let(best, i),
        loop("j", i + 1, size, [K.If(w[first + j] < w[first + best], [K.Assign(best, j)])]),
        K.If(best.ne(i), [K.Let(swap, w[first + i]), K.Store(w, first + i, w[first + best]),
                          K.Store(w, first + best, swap),
                          *log(i, best, K.Const(0, w.dtype), K.Const(1, w.dtype))])])]


def steqr_kernel(op: Op, name: str) -> Kernel:
    """tridiagonal.py's steqr_reference: d and e copied to w and f, the QR steps on them (kernels.py's
    tridiagonal_qr), their rotations and the sort's swaps logged."""
    batch, n = op.operands[0].type.shape
    dtype = op.operands[0].type.dtype
    b, size = sizes("batch", "n")
    capacity = rotation_capacity(size)
    d, e, w, f, pairs, cs, counts = params = resized(
        op, [b * size, b * size, b * size, b * size, b * capacity * 2, b * capacity * 2, b])
    count = K.Var("count", INDEX)

    def body(g):
        log = rotation_logger(pairs, cs, g * capacity, count)
        read = lambda buffer: lambda r: buffer[g * size + r]
        write = lambda buffer: lambda r, value: [K.Store(buffer, g * size + r, value)]
        i = K.Var("i", INDEX)
        return [
            loop("i", 0, size, [K.Store(w, g * size + i, d[g * size + i]), K.Store(f, g * size + i, e[g * size + i])]),
            K.Let(count, K.Const(0, INDEX)),
            *tridiagonal_qr(dtype, size, read(w), write(w), read(f), write(f),
                            lambda k, c, s: log(k, k + 1, c, s), count + 2 * size <= capacity),
            *sorted_logged(w, g * size, size, log),
            K.Store(counts, g, count.cast("i32"))]

    return per_item(name, params, [b, size], b, body, [("batch", batch), ("n", n)])


KERNELS = {"sytrd": sytrd_kernel, "latrd": latrd_kernel, "steqr": steqr_kernel}
