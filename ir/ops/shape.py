"""Data-movement ops: broadcast, reshape, transpose, slices, concatenate, pad, rev, bitcast_convert, gather,
scatter; and the in-place forms of the updates with the copy that makes them safe."""
import numpy as np

from ..opdef import OPS, compute_dtype, define, fmt_types, require, require_axes, require_dtype
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


def reshape_infer(types, attrs, regions):
    (x,) = types
    new = attrs["new_sizes"]
    require(all(d >= 0 for d in new) and int(np.prod(new, dtype=np.int64)) == x.size,
            f"reshape: cannot reshape {x} ({x.size} elements) to {list(new)}")
    return [TensorType(x.dtype, tuple(new))]


define("reshape", infer=reshape_infer, reference=lambda x, *, new_sizes: x.reshape(new_sizes),
       attrs={"new_sizes": "ints"}, num_operands=1, doc="row-major reshape")


def transpose_infer(types, attrs, regions):
    (x,) = types
    perm = attrs["permutation"]
    require(sorted(perm) == list(range(x.ndim)), f"transpose: {list(perm)} is not a permutation of {x}'s dimensions")
    return [TensorType(x.dtype, tuple(x.shape[p] for p in perm))]


define("transpose", infer=transpose_infer, reference=lambda x, *, permutation: np.transpose(x, permutation),
       attrs={"permutation": "ints"}, num_operands=1)


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


def rev_infer(types, attrs, regions):
    (x,) = types
    require_axes("rev", attrs["dimensions"], x.ndim)
    return [x]


define("rev", infer=rev_infer, reference=lambda x, *, dimensions: np.flip(x, dimensions).copy(),
       attrs={"dimensions": "ints"}, num_operands=1, doc="reverse the order of elements along dimensions")


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
