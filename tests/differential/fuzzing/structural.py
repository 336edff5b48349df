"""Oracles of the ops that move, reduce, accumulate, contract or sort elements, with the error
propagation of the package docstring's model."""
from __future__ import annotations

import numpy as np

from .elementwise import convert
from .jaxtypes import kind, np_dtype, real_of, sum_dtype, to_inexact
from .values import UNKNOWN, ZERO_SIGN_FREE, Val, finfo, rounded, unit_roundoff


def moved(v: Val, fn) -> Val:
    """An op that only moves elements: the same function of the reference and of the bounds."""
    return Val(np.array(fn(v.ref)), v.dtype, np.array(fn(v.err), np.float64), v.weak)


def _terms(shape, axes):
    return int(np.prod([shape[a] for a in axes])) if axes else 1


def _finite_abs(x):
    """|x| of the finite values, for the summation bounds; a complex value's parts are summed
    apart, so one whose other part is inf or NaN still counts its finite part (sum(nan + 4j, ..)
    has an imaginary part to bound)."""
    if np.iscomplexobj(x):
        finite_part = lambda part: np.where(np.isfinite(part), part, 0.0)
        return np.hypot(finite_part(x.real), finite_part(x.imag)).astype(np.float64)
    m = np.abs(x).astype(np.float64)
    return np.where(np.isfinite(m), m, 0.0)


def reduce(name: str, v: Val, axes: tuple, keepdims: bool) -> Val:
    """sum, prod, max, min, mean, any, all over `axes` (a tuple of axes)."""
    n = _terms(v.shape, axes)
    unknown = np.any(np.isinf(v.err), axis=axes, keepdims=keepdims)
    with np.errstate(all="ignore"):
        if name in ("any", "all"):
            ref = getattr(np, name)(v.ref.astype(bool), axis=axes, keepdims=keepdims)
            return Val(ref, "bool", np.where(unknown | np.any(v.err > 0, axis=axes, keepdims=keepdims), UNKNOWN, 0.0))
        if name in ("max", "min"):
            fn = np.max if name == "max" else np.min
            ref = fn(v.ref, axis=axes, keepdims=keepdims)
            err = np.max(v.err, axis=axes, keepdims=keepdims) if v.err.size else np.zeros(ref.shape)
            if v.kind == "f":
                zeros = v.ref == 0
                mixed = np.any(zeros & np.signbit(v.ref.astype(np.float64)), axis=axes, keepdims=keepdims) & \
                    np.any(zeros & ~np.signbit(v.ref.astype(np.float64)), axis=axes, keepdims=keepdims)
                err = np.where(mixed & (ref == 0) & (err == 0), ZERO_SIGN_FREE, err)
            return Val(np.asarray(ref), v.dtype, np.asarray(err, np.float64))
        dtype = sum_dtype(v.dtype) if name in ("sum", "prod") else to_inexact(v.dtype)
        if not axes and v.shape:   # no axis reduced: JAX returns the (converted) operand, -0.0 kept, not weak
            kept = convert(v, dtype)
            return Val(kept.ref, kept.dtype, kept.err)
        if n == 1:   # one element reduced: XLA makes the reduce a reshape, so the element, -0.0 kept
            kept = convert(v, dtype)
            shape = np.sum(np.zeros(v.shape), axis=axes, keepdims=keepdims).shape
            return Val(kept.ref.reshape(shape), kept.dtype, kept.err.reshape(shape))
        if kind(dtype) in "iu":
            x = v.ref.astype(np_dtype(dtype))
            ref = np.sum(x, axis=axes, keepdims=keepdims) if name == "sum" else np.prod(x, axis=axes, keepdims=keepdims)
            return Val(np.asarray(ref), dtype, np.where(unknown | np.any(v.err > 0, axis=axes, keepdims=keepdims),
                                                        UNKNOWN, 0.0))
        x = v.wide().astype(np.complex128 if kind(dtype) == "c" else np.float64)
        if name == "mean" and kind(v.dtype) in "iub":
            x = v.ref.astype(np_dtype(dtype)).astype(np.float64)   # JAX converts first
        u = unit_roundoff(dtype)
        big = float(finfo(dtype).max)
        if name in ("sum", "mean"):
            ref = np.sum(x, axis=axes, keepdims=keepdims)
            total = np.sum(_finite_abs(x), axis=axes, keepdims=keepdims)
            err = np.sum(v.err, axis=axes, keepdims=keepdims) + 2 * n * u * total
            err = np.where(total > big, UNKNOWN, err)   # a partial sum may overflow in some order
            if name == "mean":
                # JAX divides by the count as a value of the dtype: a complex division (which spreads a
                # NaN part to both; a count of 1 is the element, above)
                count = np.complex128(n) if kind(dtype) == "c" else n
                ref, err = ref / count, err / max(n, 1)
                err = err + 2 * u * np.abs(ref)
        else:
            ref = np.prod(x, axis=axes, keepdims=keepdims)
            m = np.abs(x)
            relative = np.where(v.err > 0, v.err / m, 0.0)
            err = np.abs(ref) * (2 * n * u + np.sum(relative, axis=axes, keepdims=keepdims) * 1.01)
            with np.errstate(all="ignore"):
                high = np.prod(np.maximum(np.where(np.isfinite(m), m, 1.0), 1.0), axis=axes, keepdims=keepdims)
                low = np.prod(np.where((m > 0) & np.isfinite(m), np.minimum(m, 1.0), 1.0), axis=axes, keepdims=keepdims)
            err = np.where((high > big) | (low < float(finfo(dtype).tiny) / u), UNKNOWN, err)
        err = np.where(unknown, UNKNOWN, err)
        exact = np.all(v.err == 0, axis=axes, keepdims=keepdims) & (n <= 1)
        result = rounded(ref, dtype, np.where(exact, 0.0, err), np.where(exact, 0, 1))
        # the sign of a zero sum depends on the order (XLA sums [-0.0] to -0.0, [-0.0, -0.0] to 0.0)
        result.err = np.where((result.ref == 0) & (result.err == 0), ZERO_SIGN_FREE, result.err)
        return result


def argreduce(name: str, v: Val, axis: int) -> Val:
    """argmax/argmin: the first extreme, NaN counting as the extreme (JAX's rule)."""
    x = np.moveaxis(v.ref, axis, -1)
    e = np.moveaxis(v.err, axis, -1)
    pick = np.argmax if name == "argmax" else np.argmin
    if v.kind != "f":
        return Val(pick(x, -1).astype(np.int64), "int64", np.where(np.isinf(e).any(-1) | (e > 0).any(-1), UNKNOWN, 0.0))
    key = (1.0 if name == "argmax" else -1.0) * x.astype(np.float64)
    nan = np.isnan(key)
    best = np.where(nan.any(-1), nan.argmax(-1), np.argmax(np.where(nan, -np.inf, key), -1))
    winner = np.take_along_axis(key, best[..., None], -1)
    werr = np.take_along_axis(e, best[..., None], -1)
    others = np.arange(x.shape[-1]) != best[..., None]
    with np.errstate(invalid="ignore"):
        contested = others & ~(key + e < winner - werr)
    undecided = (e > 0).any(-1) & contested.any(-1)
    undecided |= np.isinf(e).any(-1)
    return Val(best.astype(np.int64), "int64", np.where(undecided, UNKNOWN, 0.0))


def cumulative(name: str, v: Val, axis: int, reverse: bool) -> Val:
    """cumsum/cumprod (jnp: integers keep their dtype, bool becomes int64) and lax.cummax/cummin."""
    flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
    x, e = flip(v.wide()), flip(v.err)
    with np.errstate(all="ignore"):
        if name in ("cummax", "cummin"):
            fn = np.maximum if name == "cummax" else np.minimum
            ref = fn.accumulate(flip(v.ref) if v.kind != "f" else x, axis=axis) if x.shape[axis] else x
            if v.kind == "f":
                ref = flip(ref)
                err = flip(np.maximum.accumulate(e, axis=axis) if x.shape[axis] else e)
                zeros = (ref == 0)
                err = np.where(zeros & (err == 0), ZERO_SIGN_FREE, err)   # -0.0 vs 0.0 ties
                return rounded(ref, v.dtype, err)
            return Val(flip(np.asarray(ref)).astype(np_dtype(v.dtype)), v.dtype,
                       flip(np.maximum.accumulate(e, axis=axis)) if x.shape[axis] else v.err.copy())
        dtype = "int64" if v.dtype == "bool" else v.dtype
        if kind(dtype) in "iu":
            xi = flip(v.ref.astype(np_dtype(dtype)))
            ref = np.cumsum(xi, axis=axis) if name == "cumsum" else np.cumprod(xi, axis=axis)
            err = np.where(np.maximum.accumulate(e, axis=axis) > 0, UNKNOWN, 0.0) if x.shape[axis] else e
            return Val(flip(ref).astype(np_dtype(dtype)), dtype, flip(err))
        u = unit_roundoff(dtype)
        k = np.cumsum(np.ones(x.shape), axis=axis)
        if name == "cumsum":
            ref = np.cumsum(x, axis=axis)
            total = np.cumsum(_finite_abs(x), axis=axis)
            err = np.cumsum(e, axis=axis) + 2 * k * u * total
            err = np.where(total > float(finfo(dtype).max), UNKNOWN, err)
        else:
            ref = np.cumprod(x, axis=axis)
            m = np.abs(x)
            relative = np.cumsum(np.where(e > 0, e / m, 0.0), axis=axis)
            err = np.abs(ref) * (2 * k * u + relative * 1.01)
            high = np.cumprod(np.maximum(np.where(np.isfinite(m), m, 1.0), 1.0), axis=axis)
            low = np.cumprod(np.where((m > 0) & np.isfinite(m), np.minimum(m, 1.0), 1.0), axis=axis)
            err = np.where((high > float(finfo(dtype).max)) | (low < float(finfo(dtype).tiny) / u), UNKNOWN, err)
        first = (k == 1) & (e == 0)
        err = np.where(np.isinf(np.maximum.accumulate(e, axis=axis)) if x.shape[axis] else False, UNKNOWN, err)
        return rounded(flip(ref), dtype, flip(np.where(first, 0.0, err)), flip(np.where(first, 0, 1)))


def contract(a: Val, b: Val, dtype: str, a_axes: str, b_axes: str, out_axes: str) -> Val:
    """An einsum `a_axes,b_axes->out_axes` of operands already converted to `dtype`, summing every
    product in float64 (or wrapping integers), with the summation bound of a sum of K products."""
    spec = f"{a_axes},{b_axes}->{out_axes}"
    k = kind(dtype)
    with np.errstate(all="ignore"):
        if k == "b":
            ref = np.einsum(spec, a.ref.astype(np.int64), b.ref.astype(np.int64)) > 0
            err = np.einsum(spec, (a.err > 0).astype(np.int64) + 0, np.ones(b.shape, np.int64)) + \
                np.einsum(spec, np.ones(a.shape, np.int64), (b.err > 0).astype(np.int64))
            return Val(ref, dtype, np.where(err > 0, UNKNOWN, 0.0))
        if k in "iu":
            ref = _einsum_products(spec, a.ref, b.ref)
            err = _einsum_products(spec, np.where(a.err > 0, 1.0, 0.0), np.ones(b.shape)) + \
                _einsum_products(spec, np.ones(a.shape), np.where(b.err > 0, 1.0, 0.0))
            return Val(np.asarray(ref).astype(np_dtype(dtype)), dtype, np.where(err > 0, UNKNOWN, 0.0))
        x, y = a.wide(), b.wide()
        ref = _einsum_products(spec, x, y)
        mx, my = _finite_abs(x), _finite_abs(y)
        terms = {c: n for s, shape in ((a_axes, a.shape), (b_axes, b.shape)) for c, n in zip(s, shape)}
        kk = int(np.prod([terms[c] for c in set(a_axes) & set(b_axes) - set(out_axes)]))
        products = _einsum_products(spec, mx, my)
        u = unit_roundoff(real_of(dtype))
        ea, eb = np.where(np.isinf(a.err), 1e308, a.err), np.where(np.isinf(b.err), 1e308, b.err)
        err = (2 * (kk + 2) * u * products + _einsum_products(spec, mx, eb) + _einsum_products(spec, ea, my)
               + _einsum_products(spec, ea, eb))
        unknown = _einsum_products(spec, np.isinf(a.err).astype(float), np.ones(b.shape)) + \
            _einsum_products(spec, np.ones(a.shape), np.isinf(b.err).astype(float))
        err = np.where((unknown > 0) | (products > float(finfo(dtype).max)), UNKNOWN, err)
        exact = (kk <= 1) & (err == 0)
        return rounded(ref, dtype, err, np.where(exact, 0, 1))


def _einsum_products(spec, x, y):
    """einsum summing the elementwise products explicitly, so 0 * inf gives NaN as IEEE says (a BLAS
    may skip zeros)."""
    inputs, out = spec.split("->")
    sa, sb = inputs.split(",")
    letters = "".join(dict.fromkeys(sa + sb))
    sizes = {c: n for s, shape in ((sa, x.shape), (sb, y.shape)) for c, n in zip(s, shape)}
    def spread(arr, s):
        view = np.einsum(f"{s}->{''.join(c for c in letters if c in s)}", arr) if len(set(s)) == len(s) else arr
        present = "".join(c for c in letters if c in s)
        return view.reshape([sizes[c] if c in present else 1 for c in letters])
    product = spread(x, sa) * spread(y, sb)
    summed = tuple(i for i, c in enumerate(letters) if c not in out)
    total = product.sum(axis=summed) if summed else product
    kept = "".join(c for c in letters if c in out)
    return np.einsum(f"{kept}->{out}", total) if kept != out else total


def sort(v: Val, axis: int) -> Val:
    """jnp.sort: stable, NaNs last, -0.0 and 0.0 equal; each output element is within the largest
    bound of its row."""
    ref = np.sort(v.ref, axis=axis, kind="stable")
    spread = np.max(v.err, axis=axis, keepdims=True) if v.shape[axis] else v.err
    err = np.broadcast_to(spread, ref.shape)
    if v.kind == "f":
        err = np.where((ref == 0) & (err == 0), ZERO_SIGN_FREE, err)   # tied zeros keep their order, fine
    return Val(ref, v.dtype, np.array(err, np.float64))


def argsort(v: Val, axis: int) -> Val:
    ref = np.argsort(v.ref, axis=axis, kind="stable").astype(np.int64)
    inexact = np.any(v.err > 0, axis=axis, keepdims=True) if v.shape[axis] else v.err > 0
    return Val(ref, "int64", np.array(np.broadcast_to(np.where(inexact, UNKNOWN, 0.0), ref.shape), np.float64))


def gather(v: Val, index: Val, axis: int) -> Val:
    """v indexed by integer array `index` (values in [-n, n)) along `axis`."""
    idx = index.ref.astype(np.int64)
    ok = np.isfinite(index.err) & (index.err == 0)
    n = v.shape[axis]
    safe = np.where(ok, idx, 0) if n else idx
    ref = np.take(v.ref, safe, axis=axis)
    err = np.take(v.err, safe, axis=axis)
    bad = np.expand_dims(~ok, tuple(range(axis))) if axis else ~ok
    bad = bad.reshape(bad.shape + (1,) * (ref.ndim - bad.ndim))
    return Val(ref, v.dtype, np.where(bad, UNKNOWN, err).astype(np.float64))


def scatter(mode: str, v: Val, index: np.ndarray, update: Val) -> Val:
    """v.at[index].set/add/min/max(update) along axis 0, duplicates included: a set through a
    duplicate index may keep either update (JAX leaves it open), an add sums them in any order."""
    n = v.shape[0]
    idx = np.where(index < 0, index + n, index)
    target = (len(idx),) + v.shape[1:]
    upd = np.broadcast_to(update.ref, target)
    uerr = np.broadcast_to(update.err, target)
    ref = v.ref.copy()
    err = v.err.copy()
    counts = np.bincount(idx, minlength=n)
    with np.errstate(all="ignore"):
        if mode == "set":
            ref[idx] = upd
            err[idx] = uerr
            for j in np.nonzero(counts > 1)[0]:
                rows = upd[idx == j]
                if not all(np.array_equal(rows[0], r, equal_nan=v.kind in "fc") for r in rows[1:]):
                    err[j] = UNKNOWN
            return Val(ref, v.dtype, err)
        if kind(v.dtype) in "iub" or mode in ("min", "max"):
            fn = {"add": np.add, "min": np.minimum, "max": np.maximum}[mode]
            if kind(v.dtype) == "b":
                fn = {"add": np.logical_or, "min": np.logical_and, "max": np.logical_or}[mode]
            fn.at(ref, idx, upd)
            np.maximum.at(err, idx, uerr)
            if kind(v.dtype) in "iub":
                err = np.where(err > 0, UNKNOWN, 0.0)
            else:
                err = np.where((ref == 0) & (err == 0), ZERO_SIGN_FREE, err)
            return Val(ref, v.dtype, err)
        x = v.wide().copy()
        np.add.at(x, idx, upd.astype(x.dtype))
        total = _finite_abs(v.wide()).copy()
        np.add.at(total, idx, _finite_abs(upd))
        np.add.at(err, idx, uerr)
        count = counts.reshape((n,) + (1,) * (v.ref.ndim - 1)) if n else counts
        u = unit_roundoff(v.dtype)
        err = np.where(count > 0, err + 2 * (count + 1) * u * total, err)
        return rounded(x, v.dtype, err, np.where(count > 0, 1, 0))
