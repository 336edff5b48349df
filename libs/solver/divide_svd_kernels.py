"""The kernel of divide and conquer's bidiagonal merge (divide_svd.py's lasd1): one work-item per merge,
running lasd1_reference's steps serially (a merge of n rows is O(n^2) work: the secular equation's
roots, Gu and Eisenstat's vector entries and U's and V's entries; the O(n^3) products with the halves'
vectors are the frontend's GEMMs)."""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.core import Op
from ...ir.kernel import Kernel
from .divide import SECULAR_STEPS
from .divide_kernels import merge_setup, neighbour_deflation, two_pole_step, work_fields
from .divide_svd import IWORK, WORK
from .kernels import INDEX, loop


def lasd1_kernel(op: Op, name: str) -> Kernel:
    dtype, eps, b, size, params, index, real, zero, one, run = merge_setup(
        op, name, "n", lambda b, size: [b * size, b * size, b, b, b * size, b * size * size, b * size * size,
                                        b * WORK * size, b * IWORK * size])
    half = size / 2
    o, last = half - 1, size - 1
    d, z, alpha, beta, s_out, u, v, work, iwork = params
    i, j, t, candidate, kept, rotations, origin, final, running, slot, count, p, q, column, rank = index(
        "i j t candidate kept rotations origin final running slot count p q column rank")
    (scale, tol, hyp, c, s, dp, di, gap, mid, at_mid, lo, hi, mu, tau, base, psi, phi, dpsi, dphi, inverse, term,
     value, bound, dj, dq, b1, b2, qa, qb, qc, root, y, product, right_norm, left_norm, x, zsq) = real(
        "scale tol hyp c s dp di gap mid at_mid lo hi mu tau base psi phi dpsi dphi inverse term value bound dj dq b1 "
        "b2 qa qb qc root y product right_norm left_norm x zsq")
    inside = lambda e: (lo < e) & (e < hi)
    squared_distance = lambda di_, origin_, tau_: ((di_ - origin_) - tau_) * ((di_ + origin_) + tau_)

    def body(g):
        (ds, set_ds), (ws, set_ws), (dl, set_dl), (zl, set_zl), (taus, set_tau), (zhat, set_zhat), \
            (values, set_value), (cosines, set_cosine), (sines, set_sine) = work_fields(work, WORK, g, size)
        (order, set_order), (kind, set_kind), (idx, set_idx), (origins, set_origin), (columns, set_column), \
            (firsts, set_first), (seconds, set_second), (both, set_both) = work_fields(iwork, IWORK, g, size)
        i32 = lambda e: e.cast("i32")
        at_matrix = lambda row, col: (g * size + row) * size + col
        structural = lambda e: e.eq(o) | e.eq(last)
        distance = lambda row, root_index: squared_distance(
            dl(row), dl(origins(root_index).cast(INDEX)), taus(root_index))

        def rotation(first, second, cosine, sine, two_sided):
            return [set_first(rotations, i32(first)), set_second(rotations, i32(second)), set_cosine(rotations, cosine),
                    set_sine(rotations, sine), set_both(rotations, K.Const(two_sided, "i32")),
                    K.Assign(rotations, rotations + 1)]

        # 1. scaled; columns o and last combined into o (rotation 0).
        scaled = [
            K.Let(scale, K.maximum(K.abs(alpha[g]), K.abs(beta[g]))),
            loop("i", 0, size, [K.If(~structural(i), [K.Assign(scale, K.maximum(scale, K.abs(d[g * size + i])))])]),
            K.Assign(scale, K.select(scale.eq(0), one, scale)),
            loop("i", 0, size, [
                set_ds(i, K.select(structural(i), zero, d[g * size + i] / scale)),
                set_ws(i, z[g * size + i] * K.select(i < half, alpha[g] / scale, beta[g] / scale)),
                set_kind(i, K.Const(0, "i32"))]),
            K.Let(tol, K.maximum(K.abs(alpha[g]) / scale, K.abs(beta[g]) / scale)),
            loop("i", 0, size, [K.Assign(tol, K.maximum(tol, ds(i)))]),
            K.Assign(tol, tol * (8 * eps)),
            K.Assign(hyp, K.sqrt(ws(o) * ws(o) + ws(last) * ws(last))),
            K.Assign(c, K.select(hyp.eq(0), one, ws(o) / hyp)), K.Assign(s, K.select(hyp.eq(0), zero, ws(last) / hyp)),
            set_ws(o, hyp), set_ws(last, zero),
            *rotation(o, last, c, s, 0)]
        # The arrow's other coordinates in ascending order of d (ties in index order).
        ordered = loop("i", 0, last, [K.If(~i.eq(o), [
            K.Assign(rank, K.Const(0, INDEX)),
            loop("j", 0, last, [K.If(~j.eq(o), [K.Assign(rank, rank + K.select(
                (ds(j) < ds(i)) | (ds(j).eq(ds(i)) & (j < i)), 1, 0).cast(INDEX))])]),
            set_order(rank, i32(i))])])
        # 2. deflation (divide_svd.deflated), the kept indices from idx's entry 1 on (entry 0: o).
        deflation = loop("t", 0, size - 2, [
            K.Assign(p, order(t).cast(INDEX)),
            K.If(K.abs(ws(p)) > tol, [
                K.If(ds(p) <= tol, [
                    K.Assign(hyp, K.sqrt(ws(o) * ws(o) + ws(p) * ws(p))),
                    K.Assign(c, ws(o) / hyp), K.Assign(s, ws(p) / hyp),
                    set_ws(o, hyp), set_ws(p, zero), set_ds(p, zero), *rotation(o, p, c, s, 0)],
                     neighbour_deflation(
                         p, candidate, kept, (ds, set_ds), (ws, set_ws),
                         lambda e: [set_idx(kept, i32(e)), set_kind(e, K.Const(1, "i32")), K.Assign(kept, kept + 1)],
                         tol, (hyp, c, s, dp, di), lambda cosine, sine: rotation(candidate, p, cosine, -sine, 1)))])])
        # One step of root j's iteration (divide_svd.singular_root's loop body).
        sums = [K.Assign(tau, mu / (base + K.sqrt(base * base + mu))), *[K.Assign(e, zero) for e in (psi, phi, dpsi, dphi)]]
        for low, high, total, slope in ((0, j + 1, psi, dpsi), (j + 1, kept, phi, dphi)):
            sums.append(loop("i", low, high, [
                K.Assign(inverse, 1 / squared_distance(dl(i), base, tau)), K.Assign(term, zl(i) * zl(i) * inverse),
                K.Assign(total, total + term), K.Assign(slope, slope + term * inverse)]))
        model = [
            K.Assign(dj, squared_distance(dl(j), base, tau)), K.Assign(b1, dpsi * dj * dj),
            K.Assign(qa, one + psi - b1 / dj),
            K.If(final.eq(1), [K.Assign(y, b1 / qa)], [
                K.Assign(dq, squared_distance(dl(j + 1), base, tau)), K.Assign(b2, dphi * dq * dq),
                K.Assign(qa, qa + phi - b2 / dq),
                *two_pole_step(y, origin.eq(j), qa, b1, b2, gap, (qb, qc, root), inside)]),
            K.Assign(mu, K.select(inside(y), y, (lo + hi) / 2))]
        iteration = [
            *sums,
            K.Assign(value, one + psi + phi),
            K.Assign(lo, K.select(value < 0, mu, lo)), K.Assign(hi, K.select(value < 0, hi, mu)),
            K.Assign(bound, eps * (kept + 8).cast(dtype) * (one + K.abs(psi) + K.abs(phi) + K.abs(mu) * (dpsi + dphi))),
            K.If((K.abs(value) <= bound) | (hi - lo <= 2 * eps * K.maximum(K.abs(lo), K.abs(hi))),
                 [K.Assign(running, K.Const(0, INDEX))], model)]
        secular = loop("j", 0, kept, [
            K.Assign(final, K.select(j.eq(kept - 1), 1, 0).cast(INDEX)),
            K.Assign(at_mid, one), K.Assign(gap, zero),
            K.If(final.eq(0), [
                K.Assign(gap, (dl(j + 1) - dl(j)) * (dl(j + 1) + dl(j))),
                loop("i", 0, kept, [K.Assign(at_mid, at_mid + zl(i) * zl(i) / ((dl(i) - dl(j)) * (dl(i) + dl(j)) - gap / 2))])]),
            K.Assign(mid, gap / 2),
            K.Assign(origin, K.select(final.eq(1) | (at_mid >= 0), j, j + 1)),
            K.Assign(base, dl(origin)),
            K.Assign(lo, K.select(origin.eq(j), zero, -mid)),
            K.Assign(hi, K.select(final.eq(1), zsq, K.select(origin.eq(j), mid, zero))),
            K.Assign(mu, (lo + hi) / 2), K.Assign(running, K.Const(1, INDEX)),
            loop("step", 0, SECULAR_STEPS, [K.If(running.eq(1), iteration)]),
            set_tau(j, mu / (base + K.sqrt(base * base + mu))), set_origin(j, i32(origin))])
        right = lambda row, root_index: zhat(row) / distance(row, root_index)
        left = lambda row, root_index: K.select(row.eq(0), -one, dl(row) * zhat(row) / distance(row, root_index))
        vectors = [
            loop("i", 0, kept, [
                K.Assign(product, distance(i, i)),
                loop("j", 0, i, [K.Assign(product, product * distance(i, j) / ((dl(i) - dl(j)) * (dl(i) + dl(j))))]),
                loop("j", i + 1, kept, [K.Assign(product, product * distance(i, j) / ((dl(i) - dl(j)) * (dl(i) + dl(j))))]),
                set_zhat(i, K.select(zl(i) >= 0, one, -one) * K.sqrt(K.maximum(-product, zero)))]),
            loop("j", 0, kept, [set_value(j, dl(origins(j).cast(INDEX)) + taus(j))]),
            K.Assign(slot, kept),
            loop("i", 0, last, [K.If(kind(i).eq(0), [set_value(slot, ds(i)), set_idx(slot, i32(i)),
                                                     K.Assign(slot, slot + 1)])]),
            # Each value's rank in descending order (ties in slot order) is its column.
            loop("i", 0, last, [
                K.Assign(count, K.Const(0, INDEX)),
                loop("j", 0, last, [K.Assign(count, count + K.select(
                    (values(j) > values(i)) | (values(j).eq(values(i)) & (j < i)), 1, 0).cast(INDEX))]),
                set_column(i, i32(count)), K.Store(s_out, g * size + count, values(i) * scale)]),
            K.Store(s_out, g * size + last, zero),
            loop("i", 0, size, [loop("j", 0, size, [K.Store(u, at_matrix(i, j), zero), K.Store(v, at_matrix(i, j), zero)])]),
            loop("j", 0, kept, [
                K.Assign(right_norm, zero), K.Assign(left_norm, zero),
                loop("i", 0, kept, [K.Assign(x, right(i, j)), K.Assign(right_norm, right_norm + x * x),
                                    K.Assign(x, left(i, j)), K.Assign(left_norm, left_norm + x * x)]),
                K.Assign(right_norm, K.sqrt(right_norm)), K.Assign(left_norm, K.sqrt(left_norm)),
                K.Assign(column, columns(j).cast(INDEX)),
                loop("i", 0, kept, [
                    K.Assign(p, idx(i).cast(INDEX)),
                    K.Store(v, at_matrix(p, column), right(i, j) / right_norm),
                    K.Store(u, at_matrix(p, column), left(i, j) / left_norm)])]),
            loop("i", kept, last, [
                K.Assign(p, idx(i).cast(INDEX)), K.Assign(column, columns(i).cast(INDEX)),
                K.Store(u, at_matrix(p, column), one), K.Store(v, at_matrix(p, column), one)]),
            K.Store(u, at_matrix(last, last), one), K.Store(v, at_matrix(last, last), one),
            # The rotations undone, last first: V's rows, and U's for those of rows and columns alike.
            loop("t", 0, rotations, [
                K.Assign(p, firsts(rotations - 1 - t).cast(INDEX)), K.Assign(q, seconds(rotations - 1 - t).cast(INDEX)),
                K.Assign(c, cosines(rotations - 1 - t)), K.Assign(s, sines(rotations - 1 - t)),
                loop("j", 0, size, [
                    K.Assign(x, v[at_matrix(p, j)]), K.Assign(y, v[at_matrix(q, j)]),
                    K.Store(v, at_matrix(p, j), c * x - s * y), K.Store(v, at_matrix(q, j), s * x + c * y)]),
                K.If(both(rotations - 1 - t).eq(1), [loop("j", 0, size, [
                    K.Assign(x, u[at_matrix(p, j)]), K.Assign(y, u[at_matrix(q, j)]),
                    K.Store(u, at_matrix(p, j), c * x - s * y), K.Store(u, at_matrix(q, j), s * x + c * y)])])])]
        return [
            *[K.Let(e, K.Const(0, INDEX)) for e in (origin, final, running, slot, count, p, q, column, rank)],
            *[K.Let(e, zero) for e in (hyp, c, s, dp, di, gap, mid, at_mid, lo, hi, mu, tau, base, psi, phi, dpsi, dphi,
                                       inverse, term, value, bound, dj, dq, b1, b2, qa, qb, qc, root, y, product,
                                       right_norm, left_norm, x, zsq)],
            K.Let(rotations, K.Const(0, INDEX)),
            *scaled, ordered,
            K.Let(kept, K.Const(1, INDEX)), K.Let(candidate, K.Const(-1, INDEX)),
            deflation,
            K.If(candidate >= 0, [set_idx(kept, i32(candidate)), set_kind(candidate, K.Const(1, "i32")),
                                  K.Assign(kept, kept + 1)]),
            # o kept (idx's entry 0), w[o] raised to tol, unless nothing else is kept and |w[o]| <= tol.
            K.If((kept > 1) & (K.abs(ws(o)) <= tol), [set_ws(o, tol)]),
            K.If((kept > 1) | (K.abs(ws(o)) > tol), [set_idx(0, i32(o)), set_kind(o, K.Const(1, "i32"))],
                 [K.Assign(kept, K.Const(0, INDEX))]),
            loop("i", 0, kept, [set_dl(i, ds(idx(i).cast(INDEX))), set_zl(i, ws(idx(i).cast(INDEX))),
                                K.Assign(zsq, zsq + zl(i) * zl(i))]),
            secular, *vectors]

    return run(body)


KERNELS = {"lasd1": lasd1_kernel}
