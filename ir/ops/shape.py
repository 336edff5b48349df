"""Data-movement ops: broadcast, reshape, transpose, slices, concatenate, pad, rev, bitcast_convert, gather,
scatter; and the in-place forms of the updates with the copy that makes them safe."""
import math

import numpy as np

from ..opdef import OPS, compute_dtype, define, fmt_types, require, require_axes, require_dtype, set_rules
from .rules import batch_by_attrs, batch_elementwise, is_differentiable, linear, shifted, zero_derivative
from ..types import FLOATS, INTS, NUMERIC, NUMPY_DTYPES, TensorType, dtype_name

ALL_DTYPES = tuple(NUMPY_DTYPES)


def broadcast_in_dim_infer(types, attrs, regions):
    (x,) = types
    shape, dims = attrs["shape"], attrs["broadcast_dimensions"]
    require(len(dims) == x.ndim, f"broadcast_in_dim: operand {x} needs {x.ndim} broadcast_dimensions, got {list(dims)}")
    require(all(d >= 0 for d in shape), f"broadcast_in_dim: negative dimension in shape {list(shape)}")
    require_axes("broadcast_in_dim", dims, len(shape), "broadcast dimension")
    for i, d in enumerate(dims):
        require(x.shape[i] in (1, shape[d]),
                f"broadcast_in_dim: operand {x} dimension {i} (size {x.shape[i]}) cannot broadcast to "
                f"size {shape[d]} of shape {list(shape)}")
    return [TensorType(x.dtype, tuple(shape))]


def broadcast_in_dim(x, *, shape, broadcast_dimensions):
    order = np.argsort(broadcast_dimensions)
    x = np.transpose(x, order)
    sorted_dims = [broadcast_dimensions[i] for i in order]
    expanded = [1] * len(shape)
    for i, d in enumerate(sorted_dims):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape).copy()


define("broadcast_in_dim", infer=broadcast_in_dim_infer, reference=broadcast_in_dim,
       attrs={"shape": "ints", "broadcast_dimensions": "ints"}, num_operands=1,
       doc="operand dimension i becomes result dimension broadcast_dimensions[i]")


def broadcast_in_dim_transpose(b, op, primals, ct):
    """Sum the cotangent over the dimensions the broadcast made: new ones and size-1 ones it stretched."""
    (x,) = primals
    dims, shape = op.attrs["broadcast_dimensions"], op.attrs["shape"]
    stretched = {dims[i] for i in range(x.type.ndim) if x.type.shape[i] == 1 and shape[dims[i]] != 1}
    summed = [a for a in range(len(shape)) if a not in dims or a in stretched]
    kept = sorted((i for i in range(x.type.ndim) if dims[i] not in stretched), key=lambda i: dims[i])
    reduced = b.sum(ct, summed)
    return [b.reshape(b.transpose(reduced, [kept.index(i) for i in sorted(kept)]), x.type.shape)]


linear("broadcast_in_dim", broadcast_in_dim_transpose)
batch_by_attrs("broadcast_in_dim", lambda attrs, size: {
    "shape": (size,) + attrs["shape"], "broadcast_dimensions": (0,) + shifted(attrs["broadcast_dimensions"])})


def reshape_infer(types, attrs, regions):
    (x,) = types
    new = attrs["new_sizes"]
    require(all(d >= 0 for d in new) and int(np.prod(new, dtype=np.int64)) == x.size,
            f"reshape: cannot reshape {x} ({x.size} elements) to {list(new)}")
    return [TensorType(x.dtype, tuple(new))]


define("reshape", infer=reshape_infer, reference=lambda x, *, new_sizes: x.reshape(new_sizes),
       attrs={"new_sizes": "ints"}, num_operands=1, doc="row-major reshape")
linear("reshape", lambda b, op, primals, ct: [b.reshape(ct, primals[0].type.shape)])
batch_by_attrs("reshape", lambda attrs, size: {"new_sizes": (size,) + attrs["new_sizes"]})


def transpose_infer(types, attrs, regions):
    (x,) = types
    perm = attrs["permutation"]
    require(sorted(perm) == list(range(x.ndim)), f"transpose: {list(perm)} is not a permutation of {x}'s dimensions")
    return [TensorType(x.dtype, tuple(x.shape[p] for p in perm))]


define("transpose", infer=transpose_infer, reference=lambda x, *, permutation: np.transpose(x, permutation),
       attrs={"permutation": "ints"}, num_operands=1)
linear("transpose", lambda b, op, primals, ct: [b.transpose(ct, np.argsort(op.attrs["permutation"]))])
batch_by_attrs("transpose", lambda attrs, size: {"permutation": (0,) + shifted(attrs["permutation"])})


def slice_infer(types, attrs, regions):
    (x,) = types
    start, limit, strides = attrs["start_indices"], attrs["limit_indices"], attrs["strides"]
    require(len(start) == len(limit) == len(strides) == x.ndim,
            f"slice: operand {x} needs {x.ndim} start, limit and stride values, got {list(start)}, {list(limit)}, {list(strides)}")
    for i in range(x.ndim):
        require(0 <= start[i] <= limit[i] <= x.shape[i] and strides[i] >= 1,
                f"slice: dimension {i} of {x}: start {start[i]}, limit {limit[i]}, stride {strides[i]} out of range")
    return [TensorType(x.dtype, tuple(-(-(hi - lo) // s) for lo, hi, s in zip(start, limit, strides)))]


define("slice", infer=slice_infer,
       reference=lambda x, *, start_indices, limit_indices, strides:
           x[tuple(slice(a, b, s) for a, b, s in zip(start_indices, limit_indices, strides))].copy(),
       attrs={"start_indices": "ints", "limit_indices": "ints", "strides": "ints"}, num_operands=1)


def slice_transpose(b, op, primals, ct):
    """The cotangent padded with zeros back to the operand's shape (strides as interior padding)."""
    (x,) = primals
    if ct.type.size == 0:
        return [b.zeros_like(x)]
    start, strides = op.attrs["start_indices"], op.attrs["strides"]
    high = tuple(d - (s + (n - 1) * k + 1) for d, s, n, k in zip(x.type.shape, start, ct.type.shape, strides))
    return [b.op("pad", ct, b.full((), 0, ct.type.dtype), low=tuple(start), high=high,
                 interior=tuple(k - 1 for k in strides))]


linear("slice", slice_transpose)
batch_by_attrs("slice", lambda attrs, size: {"start_indices": (0,) + attrs["start_indices"],
                                             "limit_indices": (size,) + attrs["limit_indices"],
                                             "strides": (1,) + attrs["strides"]})


def require_index_scalars(opname, index_types, ndim):
    require(len(index_types) == ndim, f"{opname}: needs {ndim} start indices, got {len(index_types)}")
    for t in index_types:
        require(t.shape == () and t.dtype in INTS, f"{opname}: start indices must be integer scalars, got {t}")


def clamped_starts(starts, sizes, shape):
    """XLA clamps dynamic start indices so the slice stays in bounds."""
    return [int(min(max(int(s), 0), dim - size)) for s, size, dim in zip(starts, sizes, shape)]


def dynamic_slice_infer(types, attrs, regions):
    x, *indices = types
    sizes = attrs["slice_sizes"]
    require_index_scalars("dynamic_slice", indices, x.ndim)
    require(len(sizes) == x.ndim and all(0 <= s <= d for s, d in zip(sizes, x.shape)),
            f"dynamic_slice: slice_sizes {list(sizes)} do not fit operand {x}")
    return [TensorType(x.dtype, tuple(sizes))]


def dynamic_slice(x, *starts, slice_sizes):
    starts = clamped_starts(starts, slice_sizes, x.shape)
    return x[tuple(slice(s, s + n) for s, n in zip(starts, slice_sizes))].copy()


define("dynamic_slice", infer=dynamic_slice_infer, reference=dynamic_slice, attrs={"slice_sizes": "ints"},
       doc="operands: array, then one integer scalar start per dimension (clamped in bounds)")


def dynamic_slice_jvp(b, op, primals, tangents, outs):
    return [None if tangents[0] is None else b.ops("dynamic_slice", [tangents[0], *primals[1:]], op.attrs)[0]]


def dynamic_slice_vjp(b, op, primals, outs, cts):
    x, *starts = primals
    return [b.ops("dynamic_update_slice", [b.zeros_like(x), cts[0], *starts], {})[0]] + [None] * len(starts)


def window_indices(b, x_type, starts, batched, sizes, lanes):
    """gather/scatter indices (lanes, *sizes, rank) of each lane's window: its starts clamped as
    dynamic_slice clamps them (into [0, dim - size]), plus the position in the window."""
    rank = len(sizes)
    columns = []
    for k, (start, flag) in enumerate(zip(starts, batched)):
        start = b.op("clamp", b.full((), 0, "i64"), b.convert(start, "i64"),
                     b.full((), x_type.shape[k] - sizes[k], "i64"))
        shape = (lanes,) + tuple(sizes)
        spread = b.broadcast(start, shape, (0,) if flag else ())
        offset = b.op("iota", dtype="i64", shape=shape, dimension=k + 1)
        columns.append(b.reshape(b.add(spread, offset), shape + (1,)))
    if not columns:
        return b.full((lanes,) + tuple(sizes) + (0,), 0, "i64")
    return columns[0] if rank == 1 else b.op("concatenate", *columns, dimension=rank + 1)


def dynamic_slice_batch(b, op, operands, batched):
    """Batched starts: each lane's window gathered (the lane number first where the operand is batched
    too); otherwise a slice of every lane at once."""
    x, starts = operands[0], operands[1:]
    sizes = op.attrs["slice_sizes"]
    if not any(batched[1:]):
        dtype = starts[0].type.dtype if starts else "i32"
        x = b.move_batch_to_front(x, batched[0])
        return b.ops("dynamic_slice", [x, b.full((), 0, dtype), *starts],
                     {"slice_sizes": (b.axis_size,) + sizes}), [True]
    lane_type = x.type if not batched[0] else TensorType(x.type.dtype, x.type.shape[1:])
    indices = window_indices(b, lane_type, starts, batched[1:], sizes, b.axis_size)
    if batched[0]:
        indices = with_batch_coordinate(b, indices, True)
    return [b.op("gather", x, indices)], [True]


set_rules("dynamic_slice", jvp=dynamic_slice_jvp, vjp=dynamic_slice_vjp, batch=dynamic_slice_batch)


def dynamic_update_slice_infer(types, attrs, regions):
    x, update, *indices = types
    require(update.dtype == x.dtype and update.ndim == x.ndim and all(u <= d for u, d in zip(update.shape, x.shape)),
            f"dynamic_update_slice: update {update} does not fit operand {x}")
    require_index_scalars("dynamic_update_slice", indices, x.ndim)
    return [x]


def dynamic_update_slice(x, update, *starts):
    starts = clamped_starts(starts, update.shape, x.shape)
    out = x.copy()
    out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
    return out


define("dynamic_update_slice", infer=dynamic_update_slice_infer, reference=dynamic_update_slice,
       doc="operands: array, update, then one integer scalar start per dimension (clamped in bounds)")


def dynamic_update_slice_jvp(b, op, primals, tangents, outs):
    if tangents[0] is None and tangents[1] is None:
        return [None]
    x_t, update_t = b.zeros_if_none(tangents[:2], primals[:2])
    return b.ops("dynamic_update_slice", [x_t, update_t, *primals[2:]], {})


def dynamic_update_slice_vjp(b, op, primals, outs, cts):
    x, update, *starts = primals
    (ct,) = cts
    ct_x = b.ops("dynamic_update_slice", [ct, b.zeros_like(update), *starts], {})[0]
    ct_update = b.ops("dynamic_slice", [ct, *starts], {"slice_sizes": update.type.shape})[0]
    return [ct_x, ct_update] + [None] * len(starts)


def dynamic_update_slice_batch(b, op, operands, batched):
    """Batched starts: each lane's update scattered into its window; otherwise one update of every lane."""
    x, update = (b.move_batch_to_front(v, f) for v, f in zip(operands[:2], batched[:2]))
    starts = operands[2:]
    if not any(batched[2:]):
        dtype = starts[0].type.dtype if starts else "i32"
        return b.ops("dynamic_update_slice", [x, update, b.full((), 0, dtype), *starts], {}), [True]
    lane_type = TensorType(x.type.dtype, x.type.shape[1:])
    indices = window_indices(b, lane_type, starts, batched[2:], update.type.shape[1:], b.axis_size)
    return [b.op("scatter", x, with_batch_coordinate(b, indices, True), update, reduction="set")], [True]


set_rules("dynamic_update_slice", jvp=dynamic_update_slice_jvp, vjp=dynamic_update_slice_vjp,
          batch=dynamic_update_slice_batch)


def concatenate_infer(types, attrs, regions):
    dim = attrs["dimension"]
    require(len(types) >= 1, "concatenate needs at least one operand")
    first = types[0]
    require(0 <= dim < first.ndim, f"concatenate: dimension {dim} out of range for {first}")
    for t in types:
        require(t.dtype == first.dtype and t.ndim == first.ndim and
                all(a == b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != dim),
                f"concatenate: operands {fmt_types(types)} differ outside dimension {dim}")
    shape = list(first.shape)
    shape[dim] = sum(t.shape[dim] for t in types)
    return [TensorType(first.dtype, tuple(shape))]


define("concatenate", infer=concatenate_infer,
       reference=lambda *xs, dimension: np.concatenate(xs, axis=dimension), attrs={"dimension": "int"})


def concatenate_transpose(b, op, primals, ct):
    dim, start, cts = op.attrs["dimension"], 0, []
    for x in primals:
        size = x.type.shape[dim]
        starts = tuple(start if a == dim else 0 for a in range(ct.type.ndim))
        limits = tuple(start + size if a == dim else n for a, n in enumerate(ct.type.shape))
        cts.append(b.op("slice", ct, start_indices=starts, limit_indices=limits, strides=(1,) * ct.type.ndim))
        start += size
    return cts


def concatenate_batch(b, op, operands, batched):
    operands = [b.move_batch_to_front(x, f) for x, f in zip(operands, batched)]
    return b.ops("concatenate", operands, {"dimension": op.attrs["dimension"] + 1}), [True]


linear("concatenate", concatenate_transpose)
set_rules("concatenate", batch=concatenate_batch)


def pad_infer(types, attrs, regions):
    x, value = types
    low, high, interior = attrs["low"], attrs["high"], attrs["interior"]
    require(value.shape == () and value.dtype == x.dtype, f"pad: padding value {value} must be a scalar of {x.dtype}")
    require(len(low) == len(high) == len(interior) == x.ndim,
            f"pad: operand {x} needs {x.ndim} low, high and interior values")
    require(all(i >= 0 for i in interior), f"pad: negative interior padding {list(interior)}")
    shape = tuple(lo + hi + d + max(d - 1, 0) * i for d, lo, hi, i in zip(x.shape, low, high, interior))
    require(all(d >= 0 for d in shape), f"pad: padding {list(low)}, {list(high)} of {x} gives a negative size")
    return [TensorType(x.dtype, shape)]


def pad_array(x, fill, low, high, interior):
    """lax.pad on numpy (also the padding of reduce_window and convolutions): `interior` fill values
    between neighbours, then `low`/`high` fill values at the edges; negative edges crop."""
    dilated = [d + max(d - 1, 0) * i for d, i in zip(x.shape, interior)]
    grown = [max(lo, 0) + d + max(hi, 0) for d, lo, hi in zip(dilated, low, high)]
    out = np.full(grown, fill, dtype=x.dtype)
    out[tuple(slice(max(lo, 0), max(lo, 0) + d, i + 1) for lo, d, i in zip(low, dilated, interior))] = x
    # The leading Ellipsis keeps a 0-d result an array rather than a scalar.
    return out[(Ellipsis,) + tuple(slice(max(-lo, 0), g + min(hi, 0)) for g, lo, hi in zip(grown, low, high))]


def pad(x, value, *, low, high, interior):
    return pad_array(x, value, low, high, interior)


define("pad", infer=pad_infer, reference=pad, attrs={"low": "ints", "high": "ints", "interior": "ints"},
       num_operands=2, doc="operands: array, scalar padding value")


def pad_transpose(b, op, primals, ct):
    """The operand's cotangent is the cotangent at the operand's elements: negative edges (crops) padded
    back with zeros, then a strided slice; the padding value's is the sum of the rest."""
    x, value = primals
    low, high, interior = op.attrs["low"], op.attrs["high"], op.attrs["interior"]
    zero = b.full((), 0, ct.type.dtype)
    if any(lo < 0 for lo in low) or any(hi < 0 for hi in high):
        ct = b.op("pad", ct, zero, low=tuple(max(-lo, 0) for lo in low), high=tuple(max(-hi, 0) for hi in high),
                  interior=(0,) * ct.type.ndim)
    if x.type.size == 0:
        ct_x = b.zeros_like(x)
    else:
        starts = tuple(max(lo, 0) for lo in low)
        limits = tuple(s + (d - 1) * (i + 1) + 1 for s, d, i in zip(starts, x.type.shape, interior))
        ct_x = b.op("slice", ct, start_indices=starts, limit_indices=limits, strides=tuple(i + 1 for i in interior))
    everything = tuple(range(ct.type.ndim))
    ct_value = b.op("sub", b.sum(ct, everything), b.sum(ct_x, everything))
    return [ct_x, ct_value]




def pad_batch(b, op, operands, batched):
    """The batch is a dimension padded by nothing; a batched padding value is added where the padding
    is (a padded mask of ones, times each lane's value)."""
    x, value = operands
    attrs = {"low": (0,) + op.attrs["low"], "high": (0,) + op.attrs["high"], "interior": (0,) + op.attrs["interior"]}
    x = b.move_batch_to_front(x, batched[0])
    if not batched[1]:
        return b.ops("pad", [x, value], attrs), [True]
    zero = b.full((), 0, x.type.dtype)
    padded = b.ops("pad", [x, zero], attrs)[0]
    mask = b.ops("pad", [b.full(x.type.shape, 0, x.type.dtype), b.full((), 1, x.type.dtype)], attrs)[0]
    values = b.broadcast(value, padded.type.shape, (0,))
    return [b.add(padded, b.mul(mask, values))], [True]


linear("pad", pad_transpose)
set_rules("pad", batch=pad_batch)


def rev_infer(types, attrs, regions):
    (x,) = types
    require_axes("rev", attrs["dimensions"], x.ndim)
    return [x]


define("rev", infer=rev_infer, reference=lambda x, *, dimensions: np.flip(x, dimensions).copy(),
       attrs={"dimensions": "ints"}, num_operands=1, doc="reverse the order of elements along dimensions")
linear("rev", lambda b, op, primals, ct: [b.op("rev", ct, **op.attrs)])
batch_by_attrs("rev", lambda attrs, size: {"dimensions": shifted(attrs["dimensions"])})


BITCAST_DTYPES = INTS + FLOATS


def bit_width(dtype: str) -> int:
    return NUMPY_DTYPES[dtype].itemsize * 8


def bitcast_convert_infer(types, attrs, regions):
    """XLA's BitcastConvertType: equal widths keep the shape; a wider operand gains a trailing dimension of
    the width ratio; a narrower one loses its trailing dimension, which must be that ratio."""
    (x,) = types
    target = attrs["dtype"]
    require_dtype("bitcast_convert", x, BITCAST_DTYPES)
    require_dtype("bitcast_convert", TensorType(target, x.shape), BITCAST_DTYPES, "result")
    source_bits, target_bits = bit_width(x.dtype), bit_width(target)
    if source_bits >= target_bits:
        ratio = source_bits // target_bits
        return [TensorType(target, x.shape + ((ratio,) if ratio > 1 else ()))]
    ratio = target_bits // source_bits
    require(x.ndim >= 1 and x.shape[-1] == ratio,
            f"bitcast_convert: {x} to {target} needs a last dimension of {ratio} ({target_bits} / {source_bits} bits)")
    return [TensorType(target, x.shape[:-1])]


def bitcast_convert(x, *, dtype):
    """numpy's .view of the elements' bytes in memory order: little-endian here, as on the GPU and in XLA."""
    (result_type,) = bitcast_convert_infer([TensorType(dtype_name(x.dtype), x.shape)], {"dtype": dtype}, [])
    return np.ascontiguousarray(x).reshape(-1).view(NUMPY_DTYPES[dtype]).reshape(result_type.shape)


define("bitcast_convert", infer=bitcast_convert_infer, reference=bitcast_convert, attrs={"dtype": "dtype"},
       num_operands=1, doc="the operand's bits read as dtype (bool and complex excluded); see the shape rule")
zero_derivative("bitcast_convert")
set_rules("bitcast_convert", batch=batch_elementwise)


def gather_infer(types, attrs, regions):
    x, indices = types
    require_dtype("gather", indices, INTS, "indices")
    require(indices.ndim >= 1 and indices.shape[-1] <= x.ndim,
            f"gather: indices {indices} must end in a dimension of at most {x.ndim} (the rank of {x})")
    k = indices.shape[-1]
    return [TensorType(x.dtype, indices.shape[:-1] + x.shape[k:])]


def gather(x, indices):
    """result[b..., rest...] = x[indices[b..., 0], ..., indices[b..., k-1], rest...], indices clamped."""
    k = indices.shape[-1]
    result_shape = indices.shape[:-1] + x.shape[k:]
    if any(x.shape[j] == 0 for j in range(k)):  # nothing to clamp into: XLA leaves this undefined
        return np.zeros(result_shape, x.dtype)
    clamped = tuple(np.clip(indices[..., j], 0, x.shape[j] - 1) for j in range(k))
    return np.broadcast_to(x[clamped], result_shape).copy()  # broadcast: k = 0 repeats all of x


define("gather", infer=gather_infer, reference=gather, num_operands=2,
       doc="indices[..., k] select along x's first k dimensions (clamped in bounds)")


def clamped_indices(b, x, indices):
    """gather's indices clamped into x's bounds, as gather itself clamps them."""
    k = indices.type.shape[-1]
    dtype = indices.type.dtype
    high = b.broadcast(b.op("constant", value=np.array([d - 1 for d in x.type.shape[:k]], NUMPY_DTYPES[dtype])),
                       indices.type.shape, (indices.type.ndim - 1,))
    return b.op("clamp", b.zeros_like(indices), indices, high)


def gather_jvp(b, op, primals, tangents, outs):
    return [None if tangents[0] is None else b.op("gather", tangents[0], primals[1])]


def gather_vjp(b, op, primals, outs, cts):
    """Each gathered element's cotangent is added where it came from (a scatter-add)."""
    x, indices = primals
    return [b.op("scatter", b.zeros_like(x), clamped_indices(b, x, indices), cts[0], reduction="add"), None]


def with_batch_coordinate(b, indices, batched):
    """Indices of a batched operand: each lane's indices with its lane number in front."""
    indices = b.move_batch_to_front(indices, batched)
    shape = indices.type.shape
    lane = b.op("iota", dtype=indices.type.dtype, shape=shape[:-1] + (1,), dimension=0)
    return b.op("concatenate", lane, indices, dimension=len(shape) - 1)


def gather_batch(b, op, operands, batched):
    x, indices = operands
    if batched[0]:
        indices = with_batch_coordinate(b, indices, batched[1])
    return [b.op("gather", x, indices)], [True]


set_rules("gather", jvp=gather_jvp, vjp=gather_vjp, batch=gather_batch)

SCATTER_REDUCTIONS = {"set": None, "add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}
SCATTER_DTYPES = {"set": ALL_DTYPES, "add": ("bool",) + NUMERIC, "mul": ("bool",) + NUMERIC,
                  "min": ("bool",) + INTS + FLOATS, "max": ("bool",) + INTS + FLOATS}


def scatter_infer(types, attrs, regions):
    x, indices, updates = types
    reduction = attrs["reduction"]
    require(reduction in SCATTER_REDUCTIONS,
            f"scatter: reduction {reduction!r} is not one of {', '.join(SCATTER_REDUCTIONS)}")
    require_dtype(f"scatter {reduction}", x, SCATTER_DTYPES[reduction])
    (expected,) = gather_infer([x, indices], {}, [])
    require(updates == expected,
            f"scatter: updates {updates} must have type {expected} for operand {x} and indices {indices}")
    return [x]


def scatter(x, indices, updates, *, reduction):
    """Functional x.at[indices].<reduction>(updates); out-of-bounds updates are dropped, as in JAX.
    Where indices repeat, `set` keeps the last update; half floats combine in f32."""
    out = x.astype(compute_dtype(x.dtype))
    k = indices.shape[-1]
    count = int(np.prod(indices.shape[:-1], dtype=np.int64))  # explicit: -1 cannot be inferred from 0 elements
    flat_indices = indices.reshape(count, k)
    flat_updates = updates.reshape((count,) + x.shape[k:]).astype(out.dtype)
    in_bounds = np.all((flat_indices >= 0) & (flat_indices < np.array(x.shape[:k], dtype=np.int64)), axis=1)
    # A leading axis of length one makes k = 0 (every update covers all of x) index like k > 0.
    out = out[np.newaxis]
    where = (np.zeros(int(in_bounds.sum()), np.int64),) + tuple(flat_indices[in_bounds].T)
    chosen = flat_updates[in_bounds]
    if SCATTER_REDUCTIONS[reduction] is None:
        out[where] = chosen
        return out[0].astype(x.dtype)
    settles_zeros = reduction in ("min", "max") and out.dtype.kind == "f"
    before = out.copy() if settles_zeros else None
    with np.errstate(all="ignore"):  # IEEE results (inf * 0 = NaN), integer wrap-around
        SCATTER_REDUCTIONS[reduction].at(out, where, chosen)
    if settles_zeros:
        # Zeros of both signs settle as JAX's minimum and maximum settle them, not as numpy's ufunc
        # (which keeps its first operand): min takes -0.0 where any -0.0 met, max +0.0.
        negative = reduction == "min"
        seen = (before == 0) & (np.signbit(before) == negative)
        np.logical_or.at(seen, where, (chosen == 0) & (np.signbit(chosen) == negative))
        out = np.where((out == 0) & seen, np.asarray(-0.0 if negative else 0.0, out.dtype), out)
    return out[0].astype(x.dtype)


define("scatter", infer=scatter_infer, reference=scatter, attrs={"reduction": "str"}, num_operands=3,
       doc="indices as in gather; reduction is set, add, mul, min or max")


def scatter_jvp(b, op, primals, tangents, outs):
    """add and set: the same scatter of the tangents (which update lands, for set the last of repeated
    indices, depends on the indices alone). mul and min/max: see their own rules."""
    if tangents[0] is None and tangents[2] is None:
        return [None]
    reduction = op.attrs["reduction"]
    if reduction == "mul":
        return [scatter_mul_jvp(b, primals, tangents)]
    x_t, updates_t = b.zeros_if_none([tangents[0], tangents[2]], [primals[0], primals[2]])
    if reduction in ("min", "max"):
        x, indices, updates = primals
        count, retained, successful = extreme_shares(b, x, indices, updates, outs[0])
        return [b.div(b.add(masked(b, retained, x_t), b.op("scatter", b.zeros_like(x), indices,
                                                              masked(b, successful, updates_t), reduction="add")),
                      count)]
    return [b.op("scatter", x_t, primals[1], updates_t, **op.attrs)]


def masked(b, mask, value):
    """`value` where `mask` (of value's leading dimensions) holds, 0 elsewhere."""
    mask = b.broadcast(mask, value.type.shape, tuple(range(mask.type.ndim)))
    return b.select(mask, value, b.zeros_like(value))


def landed(b, x, indices):
    """Whether each update lands (its indices in x's bounds; scatter drops the others)."""
    in_bounds = b.op("eq", clamped_indices(b, x, indices), indices)
    return b.op("reduce", in_bounds, reducer="and", axes=(indices.type.ndim - 1,))


def landed_where(b, x, indices, mask):
    """`mask` (of the updates' shape) and the update landed."""
    if not indices.type.shape[-1]:
        return mask
    return b.op("and", mask, b.broadcast(landed(b, x, indices), mask.type.shape, tuple(range(indices.type.ndim - 1))))


def others_product(b, x, indices, updates):
    """For scatter mul: per update, the product of the OTHER updates landing where it lands (an update's
    derivative is x there times it). Without dividing by zero: the product of the nonzero updates there,
    divided by this update when it is nonzero and none there is zero; itself when this update is the only
    zero there; 0 when another is zero. JAX differentiates the updates only with unique_indices (the
    product of the others is then 1); this is exact with repeated indices too."""
    one, zero = b.full_like(updates, 1), b.zeros_like(updates)
    is_zero = b.op("eq", updates, zero)
    nonzero = b.select(is_zero, one, updates)
    nonzero_product = b.op("gather", b.op("scatter", b.full_like(x, 1), indices, nonzero, reduction="mul"), indices)
    zeros_there = b.op("gather", b.op("scatter", b.zeros_like(x), indices, b.select(is_zero, one, zero),
                                      reduction="add"), indices)
    return b.select(is_zero, b.select(b.op("eq", zeros_there, one), nonzero_product, zero),
                    b.select(b.op("eq", zeros_there, zero), b.div(nonzero_product, nonzero), zero))


def scatter_mul_jvp(b, primals, tangents):
    """out = x * (the product of the updates landing there): x's tangent scattered the same way, plus x
    times the scatter-add of each update's tangent times the product of the others."""
    x, indices, updates = primals
    x_t, updates_t = tangents[0], tangents[2]
    from_x = None if x_t is None else b.op("scatter", x_t, indices, updates, reduction="mul")
    from_updates = None if updates_t is None else b.mul(x, b.op(
        "scatter", b.zeros_like(x), indices, b.mul(updates_t, others_product(b, x, indices, updates)),
        reduction="add"))
    return b.add(from_x, from_updates)


def extreme_shares(b, x, indices, updates, out):
    """For scatter min/max, as JAX: each result's derivative is the average of the derivatives of the
    values attaining it (x where x is the result, and the landed updates equal to it). Returns the count
    of those per result (x's shape), whether x attains its result, and whether each update attains its."""
    retained = b.op("eq", x, out)
    successful = landed_where(b, x, indices, b.op("eq", updates, b.op("gather", out, indices)))
    one, zero = b.full_like(updates, 1), b.zeros_like(updates)
    count = b.op("scatter", b.select(retained, b.full_like(x, 1), b.zeros_like(x)), indices,
                 b.select(successful, one, zero), reduction="add")
    return count, retained, successful


def scatter_vjp(b, op, primals, outs, cts):
    """add: x's cotangent passes through; an update's is the cotangent where it landed, 0 where it was
    dropped (out of bounds). set (JAX's rule): x's cotangent is 0 where an update overwrote it, and an
    update's is the cotangent where it landed only if it is the one that stayed: each update's number
    scattered the same way tells which stayed. mul, min and max: the transposes of their JVPs."""
    x, indices, updates = primals
    (ct,) = cts
    k = indices.type.shape[-1]
    reduction = op.attrs["reduction"]
    if reduction == "mul":
        to_updates = b.mul(b.op("gather", b.mul(ct, x), indices), others_product(b, x, indices, updates))
        return [b.op("scatter", ct, indices, updates, reduction="mul"), None,
                masked(b, landed(b, x, indices), to_updates) if k else to_updates]
    if reduction in ("min", "max"):
        count, retained, successful = extreme_shares(b, x, indices, updates, outs[0])
        share = b.div(ct, count)
        return [masked(b, retained, share), None, masked(b, successful, b.op("gather", share, indices))]
    gathered = b.op("gather", ct, indices)
    if reduction == "set":
        ids_shape = indices.type.shape[:-1]
        ids = b.reshape(b.op("iota", dtype="i64", shape=(math.prod(ids_shape),), dimension=0), ids_shape)
        none = b.full(x.type.shape[:k], -1, "i64")
        stayed = b.op("eq", b.op("gather", b.op("scatter", none, indices, ids, reduction="set"), indices), ids)
        return [b.op("scatter", ct, indices, b.zeros_like(updates), reduction="set"), None,
                masked(b, stayed, gathered)]
    if not k:
        return [ct, None, gathered]
    return [ct, None, masked(b, landed(b, x, indices), gathered)]


def scatter_batch(b, op, operands, batched):
    x, indices, updates = operands
    x = b.move_batch_to_front(x, batched[0])
    indices = with_batch_coordinate(b, indices, batched[1])
    updates = b.move_batch_to_front(updates, batched[2])
    return [b.op("scatter", x, indices, updates, **op.attrs)], [True]


set_rules("scatter", jvp=scatter_jvp, vjp=scatter_vjp, batch=scatter_batch)


# ---- in place -------------------------------------------------------------------------------
# passes/in_place.py, the last pass, turns an update whose operand nothing reads afterwards into
# its in-place form, and puts a `copy` before a loop whose carried array the loop updates in place
# when the loop's initial array is still needed. An in-place op computes what its plain form
# computes; the executable writes its result into the operand's buffer (only the updated elements).
IN_PLACE_FORMS = {"dynamic_update_slice": "dynamic_update_slice_in_place", "scatter": "scatter_in_place"}
IN_PLACE_OPS = frozenset(IN_PLACE_FORMS.values())

for plain, in_place in IN_PLACE_FORMS.items():
    opdef = OPS[plain]
    define(in_place, infer=opdef.infer, reference=opdef.reference, attrs=opdef.attrs,
           num_operands=opdef.num_operands, doc=f"{plain}, written into the operand's buffer")

define("copy", infer=lambda types, attrs, regions: [types[0]], reference=lambda x: x.copy(), num_operands=1,
       doc="the operand in a buffer of its own")
linear("copy", lambda b, op, primals, ct: [ct])
set_rules("copy", batch=batch_elementwise)
