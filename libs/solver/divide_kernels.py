"""The kernel of divide and conquer's merge (divide.py's laed1): one work-item per merge, running
laed1_reference's steps serially (a merge of m rows is O(m^2) work: the secular equation's roots,
Gu and Eisenstat's vector entries and U's entries; the O(m^3) product with the halves' vectors is
the frontend's GEMM)."""
from __future__ import annotations

import numpy as np

from ...ir import kernel as K
from ...ir.core import Op
from ...ir.kernel import Kernel
from ...ir.types import NUMPY_DTYPES
from .divide import IWORK, SECULAR_STEPS, WORK
from .kernels import INDEX, loop, per_item, resized, sizes


def merge_setup(op: Op, name: str, size_name: str, extents):
    """What laed1's and lasd1's kernels start from: the dtype, its unit roundoff, the symbolic batch b and
    merge size (named size_name), the parameters resized to extents(b, size), makers of index and real
    variables (each takes a space-separated string of names), the dtype's 0 and 1, and run(body): the
    kernel running body(g) once per merge g."""
    groups, merge_size = op.operands[0].type.shape
    dtype = op.operands[0].type.dtype
    b, size = sizes("groups", size_name)
    params = resized(op, extents(b, size))
    index = lambda names: [K.Var(x, INDEX) for x in names.split()]
    real = lambda names: [K.Var(x, dtype) for x in names.split()]
    run = lambda body: per_item(name, params, [b, size], b, body, [("groups", groups), (size_name, merge_size)])
    return (dtype, float(np.finfo(NUMPY_DTYPES[dtype]).eps) / 2, b, size, params, index, real, K.Const(0, dtype),
            K.Const(1, dtype), run)


def work_fields(buffer, stride, g, size) -> list:
    """(read, write) of each of merge g's `stride` fields of `size` entries in a work array."""
    def field(k):
        at = lambda e: (g * stride + k) * size + e
        return (lambda e: buffer[at(e)]), (lambda e, v: K.Store(buffer, at(e), v))
    return [field(k) for k in range(stride)]


def neighbour_deflation(i, candidate, kept, d, z, keep, tol, scratch, rotated) -> list:
    """laed2's (and lasd2's) rule for entry i after the candidate before it (both undeflated): the rotation
    zeroing the candidate's z entry, z_c, z_i = 0, hypot(z_c, z_i), applied where it couples the two by
    |t c s| <= tol (t their distance; their d's turned with it, rotated(c, s) recording it), else the
    candidate kept (keep(candidate)); i is then the candidate. d and z: (read, write) pairs; scratch: the
    real variables (hyp, c, s, dp, di)."""
    (ds, set_ds), (zs, set_zs) = d, z
    hyp, c, s, dp, di = scratch
    return [
        K.If(candidate >= 0, [
            K.Assign(hyp, K.sqrt(zs(candidate) * zs(candidate) + zs(i) * zs(i))),
            K.Assign(c, zs(i) / hyp), K.Assign(s, zs(candidate) / hyp),
            K.If(K.abs((ds(i) - ds(candidate)) * c * s) <= tol, [
                set_zs(i, hyp), set_zs(candidate, K.Const(0, hyp.dtype)),
                K.Assign(dp, ds(candidate)), K.Assign(di, ds(i)),
                set_ds(candidate, c * c * dp + s * s * di), set_ds(i, s * s * dp + c * c * di), *rotated(c, s)],
                 keep(candidate))]),
        K.Assign(candidate, i)]


def two_pole_step(y, from_lower, qa, b1, b2, gap, scratch, inside) -> list:
    """y = the root inside the bracket of secular_root's quadratic a y^2 + b y + c = 0 (a = qa) from the
    lower pole (from_lower: -(a gap + b1 + b2), b1 gap) or the upper one (a gap - b1 - b2, -b2 gap), as
    model_step takes it (the other root form where the first is outside). scratch: (qb, qc, root)."""
    qb, qc, root = scratch
    return [K.Assign(qb, K.select(from_lower, -(qa * gap + b1 + b2), qa * gap - b1 - b2)),
            K.Assign(qc, K.select(from_lower, b1 * gap, -b2 * gap)),
            K.Assign(root, K.sqrt(qb * qb - 4 * qa * qc)),
            K.Assign(root, -(qb + K.select(qb >= 0, root, -root)) / 2),
            K.Assign(y, K.select(inside(root / qa), root / qa, qc / root))]


def laed1_kernel(op: Op, name: str) -> Kernel:
    dtype, eps, b, size, params, index, real, zero, one, run = merge_setup(
        op, name, "m", lambda b, size: [b * size, b * size, b, b * size, b * size * size, b * WORK * size,
                                        b * IWORK * size])
    half = size / 2
    d, z, rho, w, u, work, iwork = params
    i, j, t, first, second, take, took, candidate, kept, rotations, origin, last, running, step, slot, count, p, q, \
        column = index("i j t first second take took candidate kept rotations origin last running step slot count p q "
                       "column")
    (r, sign, dmax, zmax, tol, hyp, c, s, dp, di, gap, mid, at_mid, lo, hi, tau, psi, phi, dpsi, dphi, inverse, term,
     value, bound, dj, dq, b1, b2, qa, qb, qc, root, y, product, norm, x, zsq) = real(
        "r sign dmax zmax tol hyp c s dp di gap mid at_mid lo hi tau psi phi dpsi dphi inverse term value bound dj dq "
        "b1 b2 qa qb qc root y product norm x zsq")
    inside = lambda v: (lo < v) & (v < hi)

    def body(g):
        (ds, set_ds), (zs, set_zs), (dl, set_dl), (zl, set_zl), (taus, set_tau), (zhat, set_zhat), (values, set_value), \
            (cosines, set_cosine), (sines, set_sine) = work_fields(work, WORK, g, size)
        (perm, set_perm), (kind, set_kind), (idx, set_idx), (origins, set_origin), (columns, set_column), \
            (firsts, set_firsts), (seconds, set_seconds) = work_fields(iwork, IWORK, g, size)
        at_u = lambda row, col: (g * size + row) * size + col
        distance = lambda row, root_index: (dl(row) - dl(origins(root_index).cast(INDEX))) - taus(root_index)
        merged = (second >= size) | ((first < half) & (d[g * size + first] <= d[g * size + K.minimum(second, size - 1)]))
        deflation = [K.If(r * K.abs(zs(i)) > tol, neighbour_deflation(
            i, candidate, kept, (ds, set_ds), (zs, set_zs),
            lambda e: [set_idx(kept, e.cast("i32")), set_kind(e, K.Const(1, "i32")), K.Assign(kept, kept + 1)],
            tol, (hyp, c, s, dp, di),
            lambda cosine, sine: [set_firsts(rotations, candidate.cast("i32")), set_seconds(rotations, i.cast("i32")),
                                  set_cosine(rotations, cosine), set_sine(rotations, sine),
                                  K.Assign(rotations, rotations + 1)]))]
        # One step of root j's iteration (secular_root's loop body).
        pole = lambda e: dl(e) - dl(origin)
        sums = [K.Assign(v, zero) for v in (psi, phi, dpsi, dphi)]
        for low, high, total, slope in ((0, j + 1, psi, dpsi), (j + 1, kept, phi, dphi)):
            sums.append(loop("i", low, high, [
                K.Assign(inverse, 1 / (pole(i) - tau)), K.Assign(term, zl(i) * zl(i) * inverse),
                K.Assign(total, total + term), K.Assign(slope, slope + term * inverse)]))
        model = [
            K.Assign(dj, pole(j) - tau), K.Assign(b1, r * dpsi * dj * dj), K.Assign(qa, one + r * psi - b1 / dj),
            K.If(last.eq(1), [K.Assign(y, pole(j) + b1 / qa)], [
                K.Assign(dq, pole(j + 1) - tau), K.Assign(b2, r * dphi * dq * dq),
                K.Assign(qa, qa + r * phi - b2 / dq),
                *two_pole_step(y, origin.eq(j), qa, b1, b2, gap, (qb, qc, root), inside)]),
            K.Assign(tau, K.select(inside(y), y, (lo + hi) / 2))]
        iteration = [
            *sums,
            K.Assign(value, one + r * (psi + phi)),
            K.Assign(lo, K.select(value < 0, tau, lo)), K.Assign(hi, K.select(value < 0, hi, tau)),
            K.Assign(bound, eps * (kept + 8).cast(dtype) * (one + r * (K.abs(psi) + K.abs(phi))
                                                            + r * K.abs(tau) * (dpsi + dphi))),
            K.If((K.abs(value) <= bound) | (hi - lo <= 2 * eps * K.maximum(K.abs(lo), K.abs(hi))),
                 [K.Assign(running, K.Const(0, INDEX))], model)]
        secular = loop("j", 0, kept, [
            K.Assign(last, K.select(j.eq(kept - 1), 1, 0).cast(INDEX)),
            K.Assign(at_mid, one), K.Assign(gap, zero),
            K.If(last.eq(0), [
                K.Assign(gap, dl(j + 1) - dl(j)),
                loop("i", 0, kept, [K.Assign(at_mid, at_mid + r * zl(i) * zl(i) / ((dl(i) - dl(j)) - gap / 2))])]),
            K.Assign(mid, gap / 2),
            K.Assign(origin, K.select((last.eq(1)) | (at_mid >= 0), j, j + 1)),
            K.Assign(lo, K.select(origin.eq(j), zero, -mid)),
            K.Assign(hi, K.select(last.eq(1), r * zsq, K.select(origin.eq(j), mid, zero))),
            K.Assign(tau, (lo + hi) / 2), K.Assign(running, K.Const(1, INDEX)),
            loop("step", 0, SECULAR_STEPS, [K.If(running.eq(1), iteration)]),
            set_tau(j, tau), set_origin(j, origin.cast("i32"))])
        vectors = [
            loop("i", 0, kept, [
                K.Assign(product, distance(i, i)),
                loop("j", 0, i, [K.Assign(product, product * distance(i, j) / (dl(i) - dl(j)))]),
                loop("j", i + 1, kept, [K.Assign(product, product * distance(i, j) / (dl(i) - dl(j)))]),
                set_zhat(i, K.select(zl(i) >= 0, one, -one) * K.sqrt(K.maximum(-product, zero)))]),
            loop("j", 0, kept, [set_value(j, dl(origins(j).cast(INDEX)) + taus(j))]),
            K.Assign(slot, kept),
            loop("i", 0, size, [K.If(kind(i).eq(0), [set_value(slot, ds(i)), set_idx(slot, i.cast("i32")),
                                                     K.Assign(slot, slot + 1)])]),
            # Each value's rank (ties in slot order) is its column.
            loop("i", 0, size, [
                K.Assign(count, K.Const(0, INDEX)),
                loop("j", 0, size, [K.Assign(count, count + K.select(
                    (values(j) < values(i)) | (values(j).eq(values(i)) & (j < i)), 1, 0).cast(INDEX))]),
                set_column(i, count.cast("i32")), K.Store(w, g * size + count, values(i))]),
            loop("i", 0, size, [loop("j", 0, size, [K.Store(u, at_u(i, j), zero)])]),
            loop("j", 0, kept, [
                K.Assign(norm, zero),
                loop("i", 0, kept, [K.Assign(x, zhat(i) / distance(i, j)), K.Assign(norm, norm + x * x)]),
                K.Assign(norm, K.sqrt(norm)), K.Assign(column, columns(j).cast(INDEX)),
                loop("i", 0, kept, [K.Store(u, at_u(perm(idx(i).cast(INDEX)).cast(INDEX), column),
                                            zhat(i) / distance(i, j) / norm)])]),
            loop("i", kept, size, [K.Store(u, at_u(perm(idx(i).cast(INDEX)).cast(INDEX), columns(i).cast(INDEX)), one)]),
            # The deflation's rotations undone, last first, on the rows of their sorted coordinates.
            loop("t", 0, rotations, [
                K.Assign(p, perm(firsts(rotations - 1 - t).cast(INDEX)).cast(INDEX)),
                K.Assign(q, perm(seconds(rotations - 1 - t).cast(INDEX)).cast(INDEX)),
                K.Assign(c, cosines(rotations - 1 - t)), K.Assign(s, sines(rotations - 1 - t)),
                loop("j", 0, size, [
                    K.Assign(x, u[at_u(p, j)]), K.Assign(y, u[at_u(q, j)]),
                    K.Store(u, at_u(p, j), c * x + s * y), K.Store(u, at_u(q, j), -s * x + c * y)])])]
        return [
            *[K.Let(v, K.Const(0, INDEX)) for v in (take, took, origin, last, running, slot, count, p, q, column)],
            *[K.Let(v, zero) for v in (hyp, c, s, dp, di, gap, mid, at_mid, lo, hi, tau, psi, phi, dpsi, dphi,
                                       inverse, term, value, bound, dj, dq, b1, b2, qa, qb, qc, root, y, product,
                                       norm, x, zsq)],
            K.Let(r, 2 * K.abs(rho[g])), K.Let(sign, K.select(rho[g] < 0, -one, one)),
            # d's halves merged into ascending order; u = [z1, sign z2] / sqrt(2) in that order.
            K.Let(first, K.Const(0, INDEX)), K.Let(second, half),
            loop("t", 0, size, [
                K.Assign(took, K.select(merged, 1, 0).cast(INDEX)), K.Assign(take, K.select(took.eq(1), first, second)),
                set_perm(t, take.cast("i32")), set_ds(t, d[g * size + take]),
                set_zs(t, z[g * size + take] * K.select(take >= half, sign, one) * float(1 / np.sqrt(2))),
                set_kind(t, K.Const(0, "i32")),
                K.Assign(first, first + took), K.Assign(second, second + 1 - took)]),
            K.Let(dmax, zero), K.Let(zmax, zero),
            loop("i", 0, size, [K.Assign(dmax, K.maximum(dmax, K.abs(ds(i)))),
                                K.Assign(zmax, K.maximum(zmax, K.abs(zs(i))))]),
            K.Let(tol, 8 * eps * K.maximum(dmax, zmax)),
            K.Let(kept, K.Const(0, INDEX)), K.Let(rotations, K.Const(0, INDEX)), K.Let(candidate, K.Const(-1, INDEX)),
            K.If(r * zmax > tol, [
                loop("i", 0, size, deflation),
                K.If(candidate >= 0, [set_idx(kept, candidate.cast("i32")), set_kind(candidate, K.Const(1, "i32")),
                                      K.Assign(kept, kept + 1)])]),
            loop("i", 0, kept, [set_dl(i, ds(idx(i).cast(INDEX))), set_zl(i, zs(idx(i).cast(INDEX))),
                                K.Assign(zsq, zsq + zs(idx(i).cast(INDEX)) * zs(idx(i).cast(INDEX)))]),
            secular, *vectors]

    return run(body)


KERNELS = {"laed1": laed1_kernel}
