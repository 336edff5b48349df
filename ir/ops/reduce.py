"""Reductions with a named reducer: reduce, argmax/argmin, cumulative scans, reduce_window.

f16 and bf16 are accumulated in f32 and rounded once, as the generated kernels will do. Float and
complex sums are pairwise (numpy's add.reduce along a contiguous last axis, where the reduced axes
are moved): the error grows as log2(n) roundings, and an f32 sum of equal terms keeps growing past
2**24 of them, as JAX's does. The kernels sum in blocks (lowering/elemental.py's SUM_BLOCK) and
combine the work-items' partials in a tree: the two agree within the n * eps * sum(|x|) bound,
not bit for bit.
"""
import math
from types import SimpleNamespace

import numpy as np

from ..opdef import compute_dtype, define, require, require_axes, require_dtype, round_to, set_rules
from ..types import FLOATS, INTS, NUMERIC, NUMPY_DTYPES, TensorType
from .rules import batch_by_attrs, shifted, zero_derivative
from .shape import pad_array, pad_transpose, slice_transpose

REDUCER_DTYPES = {
    "sum": NUMERIC, "prod": NUMERIC,
    "max": ("bool",) + INTS + FLOATS, "min": ("bool",) + INTS + FLOATS,
    "and": ("bool",) + INTS, "or": ("bool",) + INTS,
}
REDUCER_UFUNCS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
                  "and": np.bitwise_and, "or": np.bitwise_or}


def reducer_identity(reducer: str, dtype: np.dtype):
    """The value a reduction over no elements returns (and the padding of reduce_window)."""
    if reducer == "sum":
        return dtype.type(0)
    if reducer == "prod":
        return dtype.type(1)
    if reducer == "or":
        return dtype.type(0)
    if reducer == "and":  # all bits set
        return np.bool_(True) if dtype.kind == "b" else np.array(-1).astype(dtype)[()]
    low = reducer == "max"
    if dtype.kind == "b":
        return np.bool_(not low)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.min if low else info.max)
    return dtype.type(-np.inf if low else np.inf)


def check_reducer(opname, x: TensorType, reducer: str):
    require(reducer in REDUCER_DTYPES,
            f"{opname}: unknown reducer {reducer!r}; expected one of {', '.join(REDUCER_DTYPES)}")
    require_dtype(f"{opname} {reducer}", x, REDUCER_DTYPES[reducer])


def reduce_infer(types, attrs, regions):
    (x,) = types
    check_reducer("reduce", x, attrs["reducer"])
    require_axes("reduce", attrs["axes"], x.ndim, "axe")
    return [TensorType(x.dtype, tuple(d for i, d in enumerate(x.shape) if i not in attrs["axes"]))]


def settle_zero_signs(result, wide, reducer, combine):
    """A float max/min's zero results as JAX gives them (ops/elementwise.py's maximum): +0 for
    max where any +0 took part, -0 for min where any -0 did. `combine(mask)` folds a mask of the
    elements the way the reduction folded them."""
    if reducer not in ("max", "min") or wide.dtype.kind != "f":
        return result
    wanted = (wide == 0) & (np.signbit(wide) == (reducer == "min"))
    seen = combine(wanted)
    zero = np.asarray(0.0 if reducer == "max" else -0.0, wide.dtype)
    return np.where((result == 0) & seen, zero, result)


def reduce(x, *, reducer, axes):
    if math.prod(x.shape[a] for a in axes) == 1:
        # One element (or no axes) reduced: the element itself, as XLA simplifies such a reduce to a
        # reshape. Combining it with the identity would not be: 0 + -0.0 is +0.0, 1 * (-inf + inf i)
        # is NaN, 1 * (-0 - i) is +0 - i.
        return np.squeeze(x, axis=tuple(axes)).copy()
    wide = x.astype(compute_dtype(x.dtype))
    ufunc = REDUCER_UFUNCS[reducer]
    if reducer == "sum" and wide.dtype.kind in "fc" and axes:
        # numpy sums pairwise only along a contiguous axis (other axes add row after row).
        kept = [d for d in range(wide.ndim) if d not in axes]
        rows = np.ascontiguousarray(wide.transpose(kept + list(axes)))
        wide = rows.reshape(rows.shape[:len(kept)] + (int(np.prod([wide.shape[a] for a in axes])),))
        axes = (wide.ndim - 1,)
    with np.errstate(all="ignore"):
        result = ufunc.reduce(wide, axis=tuple(axes), initial=reducer_identity(reducer, wide.dtype))
    result = settle_zero_signs(result, wide, reducer, lambda mask: mask.any(axis=tuple(axes)))
    return round_to(result, x.dtype)


define("reduce", infer=reduce_infer, reference=reduce, attrs={"reducer": "str", "axes": "ints"}, num_operands=1,
       doc="reducer is sum, prod, max, min, and or or; the axes are removed")


def kept_dims(op, x):
    return tuple(a for a in range(x.type.ndim) if a not in op.attrs["axes"])


def extreme_weights(b, op, x, out):
    """max/min: the elements equal to the result share its derivative equally (as JAX)."""
    hit = b.op("eq", x, b.broadcast(out, x.type.shape, kept_dims(op, x)))
    weights = b.convert(hit, x.type.dtype)
    count = b.broadcast(b.sum(weights, op.attrs["axes"]), x.type.shape, kept_dims(op, x))
    return b.div(weights, count)


def exclusive_products(b, op, x):
    """d prod / d x_i: the product of the other elements of its row, as the products of the elements
    before it times those after it (exact where x has zeros, unlike prod / x_i)."""
    if x.type.size == 0:
        return b.zeros_like(x)
    axes, kept = list(op.attrs["axes"]), list(kept_dims(op, x))
    moved = b.transpose(x, kept + axes)
    length = int(np.prod([x.type.shape[d] for d in axes], dtype=np.int64))
    rows = b.reshape(moved, tuple(x.type.shape[d] for d in kept) + (length,))
    last = rows.type.ndim - 1
    one = b.full((), 1, x.type.dtype)

    def shifted_products(reverse):
        products = b.op("cumulative", rows, reducer="prod", axis=last, reverse=reverse)
        n = rows.type.shape[last]
        # The products before each element: all but the last, shifted right with a 1 in front (and
        # the other way round for the products after it).
        cut = (1, n) if reverse else (0, n - 1)
        keep = [cut if d == last else (0, size) for d, size in enumerate(rows.type.shape)]
        part = b.op("slice", products, start_indices=tuple(k[0] for k in keep), limit_indices=tuple(k[1] for k in keep),
                    strides=(1,) * rows.type.ndim)
        edge = (0, 1) if reverse else (1, 0)
        pad = [edge if d == last else (0, 0) for d in range(rows.type.ndim)]
        return b.op("pad", part, one, low=tuple(p[0] for p in pad), high=tuple(p[1] for p in pad),
                    interior=(0,) * rows.type.ndim)
    others = b.mul(shifted_products(False), shifted_products(True))
    return b.transpose(b.reshape(others, moved.type.shape), np.argsort(kept + axes))


def reduce_partials(b, op, x, out):
    """d out / d x for the smooth reducers, as an array of x's shape."""
    if op.attrs["reducer"] == "prod":
        return exclusive_products(b, op, x)
    return extreme_weights(b, op, x, out)


def reduce_jvp(b, op, primals, tangents, outs):
    (x,), (t,) = primals, tangents
    if t is None or op.attrs["reducer"] in ("and", "or"):
        return [None]
    if op.attrs["reducer"] != "sum":
        t = b.mul(t, reduce_partials(b, op, x, outs[0]))
    return [b.sum(t, op.attrs["axes"])]


def reduce_vjp(b, op, primals, outs, cts):
    (x,), (ct,) = primals, cts
    if op.attrs["reducer"] in ("and", "or"):
        return [None]
    spread = b.broadcast(ct, x.type.shape, kept_dims(op, x))
    return [spread if op.attrs["reducer"] == "sum" else b.mul(spread, reduce_partials(b, op, x, outs[0]))]


set_rules("reduce", jvp=reduce_jvp, vjp=reduce_vjp)
batch_by_attrs("reduce", lambda attrs, size: {"reducer": attrs["reducer"], "axes": shifted(attrs["axes"])})


def arg_reduce_infer(name):
    def infer(types, attrs, regions):
        (x,) = types
        axis = attrs["axis"]
        require_dtype(name, x, ("bool",) + INTS + FLOATS)
        require(0 <= axis < x.ndim, f"{name}: axis {axis} out of range for {x}")
        require(x.shape[axis] > 0, f"{name}: axis {axis} of {x} is empty; an empty sequence has no {name}")
        require_dtype(name, TensorType(attrs["index_dtype"], ()), INTS, "index_dtype")
        return [TensorType(attrs["index_dtype"], tuple(d for i, d in enumerate(x.shape) if i != axis))]
    return infer


def arg_reduce(select_index):
    def reference(x, *, axis, index_dtype):
        # Half floats widen exactly; numpy's argmax/argmin return the first NaN, as XLA does.
        return np.asarray(select_index(x.astype(compute_dtype(x.dtype)), axis=axis)).astype(NUMPY_DTYPES[index_dtype])
    return reference


for _name, _select_index in [("argmax", np.argmax), ("argmin", np.argmin)]:
    define(_name, infer=arg_reduce_infer(_name), reference=arg_reduce(_select_index),
           attrs={"axis": "int", "index_dtype": "dtype"}, num_operands=1,
           doc="index of the first extreme element (the first NaN, if any) along axis")
    zero_derivative(_name)
    batch_by_attrs(_name, lambda attrs, size: {**attrs, "axis": attrs["axis"] + 1})

CUMULATIVE_UFUNCS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def cumulative_infer(types, attrs, regions):
    (x,) = types
    require(attrs["reducer"] in CUMULATIVE_UFUNCS, f"cumulative: unknown reducer {attrs['reducer']!r}")
    check_reducer("cumulative", x, attrs["reducer"])
    require(0 <= attrs["axis"] < x.ndim, f"cumulative: axis {attrs['axis']} out of range for {x}")
    return [x]


def cumulative(x, *, reducer, axis, reverse):
    wide = x.astype(compute_dtype(x.dtype))
    if reverse:
        wide = np.flip(wide, axis)
    with np.errstate(all="ignore"):
        result = CUMULATIVE_UFUNCS[reducer].accumulate(wide, axis=axis, dtype=wide.dtype)
    result = settle_zero_signs(result, wide, reducer, lambda mask: np.logical_or.accumulate(mask, axis=axis))
    if reverse:
        result = np.flip(result, axis)
    return round_to(result, x.dtype)


define("cumulative", infer=cumulative_infer, reference=cumulative,
       attrs={"reducer": "str", "axis": "int", "reverse": "bool"}, num_operands=1,
       doc="inclusive scan (cumsum, cumprod, cummax, cummin) along axis")


def extreme_sources(b, op, x, out):
    """cummax/cummin: gather indices (x's shape + (rank,)) of the element each result is: along the axis,
    the nearest element before it (after it, reverse) that equals the running extreme where it stands.
    Each result's derivative is that element's (with distinct values, JAX's; at ties JAX's associative
    scan shares it between the tied elements, this gives it to the nearest)."""
    axis, reverse, shape = op.attrs["axis"], op.attrs["reverse"], x.type.shape
    position = b.op("iota", dtype="i64", shape=shape, dimension=axis)
    attains = b.op("eq", x, out)
    none = b.full_like(position, shape[axis] if reverse else -1)
    source = b.op("cumulative", b.select(attains, position, none), reducer="min" if reverse else "max", axis=axis,
                  reverse=reverse)
    coordinates = [source if d == axis else b.op("iota", dtype="i64", shape=shape, dimension=d)
                   for d in range(len(shape))]
    column = shape + (1,)
    return b.op("concatenate", *[b.reshape(c, column) for c in coordinates], dimension=len(shape))


def cumulative_jvp(b, op, primals, tangents, outs):
    if tangents[0] is None:
        return [None]
    if op.attrs["reducer"] in ("max", "min"):
        return [b.op("gather", tangents[0], extreme_sources(b, op, primals[0], outs[0]))]
    if op.attrs["reducer"] == "prod":
        x, axis, reverse = primals[0], op.attrs["axis"], op.attrs["reverse"]
        before = shift_along(b, outs[0], axis, 1, reverse, 1)
        return [linear_recurrence(b, x, b.mul(before, tangents[0]), axis, reverse)]
    return [b.op("cumulative", tangents[0], **op.attrs)]


def cumulative_vjp(b, op, primals, outs, cts):
    """A cumulative sum's transpose is the cumulative sum the other way; cummax's and cummin's adds each
    result's cotangent to the element it is (a scatter-add, the gather's transpose); cumprod's is its
    tangent recurrence run backwards (see linear_recurrence)."""
    x = primals[0]
    if op.attrs["reducer"] in ("max", "min"):
        return [b.op("scatter", b.zeros_like(x), extreme_sources(b, op, x, outs[0]), cts[0], reduction="add")]
    if op.attrs["reducer"] == "prod":
        # The tangent is y[i] = x[i] y[i-1] + out[i-1] t[i]; its transpose z[j] = ct[j] + x[j+1] z[j+1],
        # the recurrence the other way, and t's cotangent is out[j-1] z[j].
        axis, reverse = op.attrs["axis"], op.attrs["reverse"]
        after = shift_along(b, x, axis, 1, not reverse, 0)
        before = shift_along(b, outs[0], axis, 1, reverse, 1)
        return [b.mul(before, linear_recurrence(b, after, cts[0], axis, not reverse))]
    return [b.op("cumulative", cts[0], **{**op.attrs, "reverse": not op.attrs["reverse"]})]


def shift_along(b, x, axis, by, reverse, fill):
    """x moved `by` places along axis, toward the end (toward the start if reverse), `fill` coming in."""
    low = [0] * x.type.ndim
    high = [0] * x.type.ndim
    low[axis], high[axis] = (-by, by) if reverse else (by, -by)
    return b.op("pad", x, b.full((), fill, x.type.dtype), low=tuple(low), high=tuple(high),
                interior=(0,) * x.type.ndim)


def linear_recurrence(b, a, c, axis, reverse):
    """y[i] = a[i] y[i-1] + c[i] along axis (y[-1] = 0; from the end if reverse), as JAX's cumprod
    derivative (the JVP of its associative scan): a Hillis-Steele scan of the pairs (a, c) under
    (a1, c1) then (a2, c2) -> (a1 a2, a2 c1 + c2), ceil(log2 n) rounds of elementwise ops. No division,
    so zeros in the operand give exact derivatives."""
    by = 1
    while by < a.type.shape[axis]:
        c = b.add(b.mul(a, shift_along(b, c, axis, by, reverse, 0)), c)
        a = b.mul(a, shift_along(b, a, axis, by, reverse, 1))
        by *= 2
    return c


set_rules("cumulative", jvp=cumulative_jvp, vjp=cumulative_vjp)
batch_by_attrs("cumulative", lambda attrs, size: {**attrs, "axis": attrs["axis"] + 1})


def reduce_window_infer(types, attrs, regions):
    (x,) = types
    check_reducer("reduce_window", x, attrs["reducer"])
    window, strides, padding = attrs["window_dimensions"], attrs["window_strides"], attrs["padding"]
    base, dilation = attrs["base_dilation"], attrs["window_dilation"]
    require(len(window) == len(strides) == len(padding) == len(base) == len(dilation) == x.ndim,
            f"reduce_window: operand {x} needs {x.ndim} window dimensions, strides, padding pairs and dilations")
    require(all(v >= 1 for v in window + strides + base + dilation),
            f"reduce_window: window {list(window)}, strides {list(strides)} and dilations must be positive")
    shape = []
    for d, w, s, (lo, hi), b, r in zip(x.shape, window, strides, padding, base, dilation):
        padded = (d - 1) * b + 1 + lo + hi if d > 0 else lo + hi
        extent = (w - 1) * r + 1
        shape.append(max((padded - extent) // s + 1, 0) if padded >= extent else 0)
    return [TensorType(x.dtype, tuple(shape))]


def reduce_window(x, *, reducer, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    wide = x.astype(compute_dtype(x.dtype))
    identity = reducer_identity(reducer, wide.dtype)
    # Base dilation and padding fill with the identity, which leaves every window's reduction unchanged.
    padded = pad_array(wide, identity, [lo for lo, _ in padding], [hi for _, hi in padding],
                       [b - 1 for b in base_dilation])
    (out_type,) = reduce_window_infer([TensorType("f32", x.shape)], dict(
        reducer="sum", window_dimensions=window_dimensions, window_strides=window_strides, padding=padding,
        base_dilation=base_dilation, window_dilation=window_dilation), [])
    out = np.full(out_type.shape, identity, wide.dtype)
    ufunc = REDUCER_UFUNCS[reducer]
    # Accumulate one window offset at a time: a strided view per offset.
    for offset in np.ndindex(*window_dimensions):
        starts = [o * r for o, r in zip(offset, window_dilation)]
        view = padded[(Ellipsis,) + tuple(slice(st, st + (n - 1) * s + 1, s) if n > 0 else slice(0, 0)
                                          for st, n, s in zip(starts, out_type.shape, window_strides))]
        with np.errstate(all="ignore"):
            out = ufunc(out, view)
    return round_to(out, x.dtype)


define("reduce_window", infer=reduce_window_infer, reference=reduce_window,
       attrs={"reducer": "str", "window_dimensions": "ints", "window_strides": "ints", "padding": "int_pairs",
              "base_dilation": "ints", "window_dilation": "ints"}, num_operands=1,
       doc="a reduction over sliding windows (pooling), padding with the reducer's identity")


# reduce_window's rules, written as its reference computes it: the operand padded (with base
# dilation as interior padding), one strided slice of it per window offset, combined. The tangent
# and the cotangent go through the same slices: a sum spreads to every element of each window, a
# max or min to the first element of the window that equals the result (as XLA's select_and_scatter).

def window_views(b, op, padded):
    """(offset slice attrs, the strided slice of `padded` at that window offset) per window offset."""
    out_shape = reduce_window_infer([TensorType("f32", padded.type.shape)], {
        **op.attrs, "padding": tuple((0, 0) for _ in padded.type.shape),
        "base_dilation": (1,) * padded.type.ndim}, [])[0].shape
    views = []
    for offset in np.ndindex(*op.attrs["window_dimensions"]):
        starts = tuple(o * r for o, r in zip(offset, op.attrs["window_dilation"]))
        limits = tuple(s + (n - 1) * k + 1 if n else s for s, n, k in zip(starts, out_shape, op.attrs["window_strides"]))
        attrs = {"start_indices": starts, "limit_indices": limits, "strides": tuple(op.attrs["window_strides"])}
        views.append((attrs, b.op("slice", padded, **attrs)))
    return views


def padding_attrs(op):
    return {"low": tuple(lo for lo, _ in op.attrs["padding"]), "high": tuple(hi for _, hi in op.attrs["padding"]),
            "interior": tuple(d - 1 for d in op.attrs["base_dilation"])}


def padded_operand(b, op, x, fill):
    return b.op("pad", x, b.full((), fill, x.type.dtype), **padding_attrs(op))


def first_hits(b, views, out):
    """Per offset, where its element is the window's result and no earlier offset's was."""
    taken, hits = None, []
    for _, view in views:
        hit = b.op("eq", view, out)
        if taken is not None:
            hit = b.op("and", hit, b.op("not", taken))
        taken = hit if taken is None else b.op("or", taken, hit)
        hits.append(hit)
    return hits


def require_window_reducer(op):
    if op.attrs["reducer"] not in ("sum", "max", "min"):
        raise NotImplementedError(f"differentiation of reduce_window {op.attrs['reducer']} is not supported")


def reduce_window_jvp(b, op, primals, tangents, outs):
    require_window_reducer(op)
    (x,), (t,) = primals, tangents
    if t is None:
        return [None]
    if op.attrs["reducer"] == "sum":
        return b.ops("reduce_window", [t], op.attrs)
    identity = reducer_identity(op.attrs["reducer"], NUMPY_DTYPES[x.type.dtype]).item()
    hits = first_hits(b, window_views(b, op, padded_operand(b, op, x, identity)), outs[0])
    total = None
    for hit, (_, view) in zip(hits, window_views(b, op, padded_operand(b, op, t, 0))):
        total = b.add(total, b.select(hit, view, b.zeros_like(view)))
    return [total]


def tiles_exactly(op):
    """Whether the windows tile the operand: each element in at most one window, none padded in."""
    a = op.attrs
    return (a["window_dimensions"] == a["window_strides"] and all(d == 1 for d in a["window_dilation"])
            and all(d == 1 for d in a["base_dilation"]) and all(p == (0, 0) for p in a["padding"]))


def interleave(b, parts, window, shape):
    """The operand-shaped cotangent from one output-shaped part per window offset (windows tiling the
    operand): the parts interleaved dimension by dimension, the uncovered remainder zero."""
    n = parts[0].type.shape
    spread = {offset: b.reshape(part, tuple(s for d in n for s in (d, 1)))
              for offset, part in zip(np.ndindex(*window), parts)}

    def combine(prefix):
        dim = len(prefix)
        if dim == len(window):
            return spread[prefix]
        pieces = [combine(prefix + (k,)) for k in range(window[dim])]
        return pieces[0] if len(pieces) == 1 else b.op("concatenate", *pieces, dimension=2 * dim + 1)
    tiled = b.reshape(combine(()), tuple(d * w for d, w in zip(n, window)))
    high = tuple(full - d * w for full, d, w in zip(shape, n, window))
    if not any(high):
        return tiled
    return b.op("pad", tiled, b.full((), 0, tiled.type.dtype), low=(0,) * len(shape), high=high,
                interior=(0,) * len(shape))


def reduce_window_vjp(b, op, primals, outs, cts):
    require_window_reducer(op)
    (x,), (ct,) = primals, cts
    identity = reducer_identity(op.attrs["reducer"], NUMPY_DTYPES[x.type.dtype]).item()
    padded = padded_operand(b, op, x, identity)
    views = window_views(b, op, padded)
    hits = first_hits(b, views, outs[0]) if op.attrs["reducer"] != "sum" else [None] * len(views)
    parts = [ct if hit is None else b.select(hit, ct, b.zeros_like(ct)) for hit in hits]
    if tiles_exactly(op) and ct.type.size:
        return [interleave(b, parts, op.attrs["window_dimensions"], x.type.shape)]
    total = None
    for part, (attrs, _) in zip(parts, views):
        (spread,) = slice_transpose(b, SimpleNamespace(attrs=attrs), [padded], part)
        total = b.add(total, spread)
    return [pad_transpose(b, SimpleNamespace(attrs=padding_attrs(op)), [x, None], total)[0]]


set_rules("reduce_window", jvp=reduce_window_jvp, vjp=reduce_window_vjp)
batch_by_attrs("reduce_window", lambda attrs, size: {
    "reducer": attrs["reducer"], "window_dimensions": (1,) + attrs["window_dimensions"],
    "window_strides": (1,) + attrs["window_strides"], "padding": ((0, 0),) + attrs["padding"],
    "base_dilation": (1,) + attrs["base_dilation"], "window_dilation": (1,) + attrs["window_dilation"]})
