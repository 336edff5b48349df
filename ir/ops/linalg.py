"""Contractions: dot_general and conv_general_dilated, with lax's dimension conventions."""
import numpy as np

from ..opdef import compute_dtype, define, require, require_axes, require_dtype, round_to, set_rules
from ..types import COMPLEXES, FLOATS, INTS, NUMERIC, NUMPY_DTYPES, TensorType, dtype_name
from .rules import bilinear_jvp, is_differentiable
from .shape import pad_array


def contraction_result_dtype(opname, lhs: TensorType, rhs: TensorType, preferred):
    require(lhs.dtype == rhs.dtype, f"{opname}: operands must have one dtype, got {lhs} and {rhs}")
    require_dtype(opname, lhs, NUMERIC)
    if preferred is None:
        return lhs.dtype
    require_dtype(opname, TensorType(preferred, ()), NUMERIC, "preferred_element_type")
    family = next(f for f in (INTS, FLOATS, COMPLEXES) if lhs.dtype in f)
    require(preferred in family,
            f"{opname}: preferred_element_type {preferred} does not fit operands of dtype {lhs.dtype}")
    require(NUMPY_DTYPES[preferred].itemsize >= NUMPY_DTYPES[lhs.dtype].itemsize,
            f"{opname}: preferred_element_type {preferred} is narrower than the operands' {lhs.dtype}")
    return preferred


def dot_general_infer(types, attrs, regions):
    lhs, rhs = types
    lc, rc, lb, rb = (attrs[k] for k in ("lhs_contracting", "rhs_contracting", "lhs_batch", "rhs_batch"))
    require(len(lc) == len(rc) and len(lb) == len(rb),
            f"dot_general: contracting dims {list(lc)}/{list(rc)} and batch dims {list(lb)}/{list(rb)} must pair up")
    require_axes("dot_general", tuple(lc) + tuple(lb), lhs.ndim, "lhs contracting/batch dimension")
    require_axes("dot_general", tuple(rc) + tuple(rb), rhs.ndim, "rhs contracting/batch dimension")
    for a, b in zip(lc, rc):
        require(lhs.shape[a] == rhs.shape[b],
                f"dot_general: contracting dimension {a} of lhs {lhs} (size {lhs.shape[a]}) does not match "
                f"dimension {b} of rhs {rhs} (size {rhs.shape[b]})")
    for a, b in zip(lb, rb):
        require(lhs.shape[a] == rhs.shape[b],
                f"dot_general: batch dimension {a} of lhs {lhs} does not match dimension {b} of rhs {rhs}")
    dtype = contraction_result_dtype("dot_general", lhs, rhs, attrs["preferred_element_type"])
    lhs_free = [d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb]
    rhs_free = [d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb]
    return [TensorType(dtype, tuple(lhs.shape[i] for i in lb) + tuple(lhs_free) + tuple(rhs_free))]


def dot_general(lhs, rhs, *, lhs_contracting, rhs_contracting, lhs_batch, rhs_batch, preferred_element_type):
    result_dtype = NUMPY_DTYPES[preferred_element_type or dtype_name(lhs.dtype)]
    wide = compute_dtype(result_dtype)  # the accumulator
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    lhs_labels = [next(letters) for _ in range(lhs.ndim)]
    rhs_labels = [next(letters) for _ in range(rhs.ndim)]
    for a, b in zip(lhs_contracting, rhs_contracting):
        rhs_labels[b] = lhs_labels[a]
    for a, b in zip(lhs_batch, rhs_batch):
        rhs_labels[b] = lhs_labels[a]
    out = [lhs_labels[i] for i in lhs_batch]
    out += [l for i, l in enumerate(lhs_labels) if i not in lhs_contracting and i not in lhs_batch]
    out += [l for i, l in enumerate(rhs_labels) if i not in rhs_contracting and i not in rhs_batch]
    spec = f"{''.join(lhs_labels)},{''.join(rhs_labels)}->{''.join(out)}"
    with np.errstate(all="ignore"):
        result = np.einsum(spec, lhs.astype(wide), rhs.astype(wide))
    return round_to(result, result_dtype)


define("dot_general", infer=dot_general_infer, reference=dot_general,
       attrs={"lhs_contracting": "ints", "rhs_contracting": "ints", "lhs_batch": "ints", "rhs_batch": "ints",
              "preferred_element_type": "dtype?"}, num_operands=2,
       doc="result dimensions: batch, lhs free, rhs free (as lax.dot_general)")


def free_dims(ndim, contracting, batch):
    return [d for d in range(ndim) if d not in contracting and d not in batch]


def consecutive(*lengths):
    """Consecutive ranges of these lengths: the positions of a dot_general result's groups of dimensions."""
    ranges, start = [], 0
    for n in lengths:
        ranges.append(list(range(start, start + n)))
        start += n
    return ranges


def dot_ct_lhs(b, ct, lhs_type, rhs, lc, rc, lb, rb, result_rhs_first=False):
    """The lhs cotangent of dot_general: ct contracted with rhs over rhs's free dimensions (as JAX's
    transpose rule), then put back in lhs's dimension order. `result_rhs_first`: ct's free dimensions
    have rhs's before lhs's (used for the rhs cotangent, with the roles swapped)."""
    lhs_free = free_dims(lhs_type.ndim, lc, lb)
    rhs_free = free_dims(rhs.type.ndim, rc, rb)
    if result_rhs_first:
        ct_batch, ct_rhs_free, _ = consecutive(len(lb), len(rhs_free), len(lhs_free))
    else:
        ct_batch, _, ct_rhs_free = consecutive(len(lb), len(lhs_free), len(rhs_free))
    product = b.dot_general(ct, rhs, ct_rhs_free, rhs_free, ct_batch, list(rb))
    # product's dimensions: lhs batch, lhs free, then lhs's contracting ones in rhs's order.
    contracting_by_rhs = [lc[i] for i in np.argsort(rc)]
    return b.transpose(b.convert(product, lhs_type.dtype), np.argsort(list(lb) + lhs_free + contracting_by_rhs))


def dot_general_vjp(b, op, primals, outs, cts):
    lhs, rhs = primals
    (ct,) = cts
    lc, rc, lb, rb = (op.attrs[k] for k in ("lhs_contracting", "rhs_contracting", "lhs_batch", "rhs_batch"))
    ct = b.convert(ct, lhs.type.dtype)
    return [dot_ct_lhs(b, ct, lhs.type, rhs, lc, rc, lb, rb) if is_differentiable(lhs.type) else None,
            dot_ct_lhs(b, ct, rhs.type, lhs, rc, lc, rb, lb, result_rhs_first=True)
            if is_differentiable(rhs.type) else None]


def dot_general_batch(b, op, operands, batched):
    """Both operands batched: the batch is one more batch dimension (first in the result). One operand
    batched: the batch is one of its free dimensions, moved first in the result."""
    lhs, rhs = operands
    lc, rc, lb, rb = (op.attrs[k] for k in ("lhs_contracting", "rhs_contracting", "lhs_batch", "rhs_batch"))
    up = lambda dims, flag: tuple(d + 1 for d in dims) if flag else tuple(dims)
    attrs = {"lhs_contracting": up(lc, batched[0]), "rhs_contracting": up(rc, batched[1]),
             "lhs_batch": up(lb, batched[0]), "rhs_batch": up(rb, batched[1]),
             "preferred_element_type": op.attrs["preferred_element_type"]}
    if all(batched):
        attrs["lhs_batch"], attrs["rhs_batch"] = (0,) + attrs["lhs_batch"], (0,) + attrs["rhs_batch"]
        return b.ops("dot_general", [lhs, rhs], attrs), [True]
    (result,) = b.ops("dot_general", [lhs, rhs], attrs)
    position = len(lb) if batched[0] else len(lb) + len(free_dims(lhs.type.ndim, lc, lb))
    order = [position] + [d for d in range(result.type.ndim) if d != position]
    return [b.transpose(result, order)], [True]


set_rules("dot_general", jvp=bilinear_jvp, vjp=dot_general_vjp, batch=dot_general_batch)


CONV_ATTRS = {"window_strides": "ints", "padding": "int_pairs", "lhs_dilation": "ints", "rhs_dilation": "ints",
              "lhs_spec": "ints", "rhs_spec": "ints", "out_spec": "ints",
              "feature_group_count": "int", "batch_group_count": "int", "preferred_element_type": "dtype?"}


def conv_infer(types, attrs, regions):
    lhs, rhs = types
    n = lhs.ndim - 2
    require(n >= 0 and rhs.ndim == lhs.ndim, f"conv_general_dilated: lhs {lhs} and rhs {rhs} must have one rank >= 2")
    lhs_spec, rhs_spec, out_spec = attrs["lhs_spec"], attrs["rhs_spec"], attrs["out_spec"]
    for name, spec in [("lhs_spec", lhs_spec), ("rhs_spec", rhs_spec), ("out_spec", out_spec)]:
        require(sorted(spec) == list(range(lhs.ndim)), f"conv_general_dilated: {name} {list(spec)} is not a permutation")
    for key in ("window_strides", "padding", "lhs_dilation", "rhs_dilation"):
        require(len(attrs[key]) == n, f"conv_general_dilated: {key} needs {n} entries, got {list(attrs[key])}")
    require(all(v >= 1 for v in attrs["window_strides"] + attrs["lhs_dilation"] + attrs["rhs_dilation"]),
            "conv_general_dilated: strides and dilations must be positive")
    groups, batch_groups = attrs["feature_group_count"], attrs["batch_group_count"]
    batch, in_features = lhs.shape[lhs_spec[0]], lhs.shape[lhs_spec[1]]
    out_features, kernel_in = rhs.shape[rhs_spec[0]], rhs.shape[rhs_spec[1]]
    require(groups >= 1 and batch_groups >= 1 and (groups == 1 or batch_groups == 1),
            "conv_general_dilated: feature_group_count and batch_group_count must be >= 1, and one of them 1")
    require(in_features == kernel_in * groups,
            f"conv_general_dilated: lhs {lhs} has {in_features} input features (dimension {lhs_spec[1]} of "
            f"lhs_spec {list(lhs_spec)}) but rhs {rhs} expects {kernel_in} (dimension {rhs_spec[1]} of rhs_spec "
            f"{list(rhs_spec)}) x feature_group_count {groups}")
    require(out_features % groups == 0 and out_features % batch_groups == 0 and batch % batch_groups == 0,
            f"conv_general_dilated: {out_features} output features / batch {batch} do not divide into the groups")
    dtype = contraction_result_dtype("conv_general_dilated", lhs, rhs, attrs["preferred_element_type"])
    spatial = []
    for i in range(n):
        size = lhs.shape[lhs_spec[2 + i]]
        dilated = (size - 1) * attrs["lhs_dilation"][i] + 1 if size > 0 else 0
        lo, hi = attrs["padding"][i]
        window = (rhs.shape[rhs_spec[2 + i]] - 1) * attrs["rhs_dilation"][i] + 1
        padded = dilated + lo + hi
        spatial.append(max((padded - window) // attrs["window_strides"][i] + 1, 0) if padded >= window else 0)
    out_shape = [0] * lhs.ndim
    out_shape[out_spec[0]] = batch // batch_groups
    out_shape[out_spec[1]] = out_features
    for i in range(n):
        out_shape[out_spec[2 + i]] = spatial[i]
    return [TensorType(dtype, tuple(out_shape))]


def conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, lhs_spec, rhs_spec,
                         out_spec, feature_group_count, batch_group_count, preferred_element_type):
    result_dtype = NUMPY_DTYPES[preferred_element_type or dtype_name(lhs.dtype)]
    wide = compute_dtype(result_dtype)  # the accumulator
    x = np.transpose(lhs, lhs_spec).astype(wide)      # N, C, spatial...
    w = np.transpose(rhs, rhs_spec).astype(wide)      # O, I, spatial...
    # Dilate and pad the spatial dimensions with zeros (negative padding crops).
    padded = pad_array(x, 0, [0, 0] + [lo for lo, _ in padding], [0, 0] + [hi for _, hi in padding],
                       [0, 0] + [r - 1 for r in lhs_dilation])
    out_spatial = [max((p - ((k - 1) * r + 1)) // s + 1, 0) if p >= (k - 1) * r + 1 else 0
                   for p, k, r, s in zip(padded.shape[2:], w.shape[2:], rhs_dilation, window_strides)]
    batch, channels = x.shape[:2]
    out_features = w.shape[0]
    if batch_group_count > 1:
        # Split the batch into groups; each group of output features sees one batch group.
        xs = padded.reshape((batch_group_count, batch // batch_group_count) + padded.shape[1:])
        ws = w.reshape((batch_group_count, out_features // batch_group_count) + w.shape[1:])
        parts = [conv_plain(xs[g], ws[g], out_spatial, window_strides, rhs_dilation, 1) for g in range(batch_group_count)]
        out = np.concatenate(parts, axis=1)
    else:
        out = conv_plain(padded, w, out_spatial, window_strides, rhs_dilation, feature_group_count)
    inverse = np.argsort(out_spec)
    return round_to(np.transpose(out, inverse), result_dtype)


def conv_plain(x, w, out_spatial, strides, rhs_dilation, groups):
    """Grouped cross-correlation of padded NC... input with OI... kernels: one einsum per kernel tap."""
    batch, channels = x.shape[:2]
    out_features, kernel_in = w.shape[:2]
    xg = x.reshape((batch, groups, channels // groups) + x.shape[2:])
    wg = w.reshape((groups, out_features // groups, kernel_in) + w.shape[2:])
    out = np.zeros((batch, groups, out_features // groups) + tuple(out_spatial), x.dtype)
    for tap in np.ndindex(*w.shape[2:]):
        window = tuple(slice(t * r, t * r + (o - 1) * s + 1, s) if o > 0 else slice(0, 0)
                       for t, r, o, s in zip(tap, rhs_dilation, out_spatial, strides))
        patch = xg[(slice(None), slice(None), slice(None)) + window]
        kernel = wg[(slice(None), slice(None), slice(None)) + tap]
        out += np.einsum("bgi...,goi->bgo...", patch, kernel)
    return out.reshape((batch, out_features) + tuple(out_spatial))


define("conv_general_dilated", infer=conv_infer, reference=conv_general_dilated, attrs=CONV_ATTRS, num_operands=2,
       doc="lax.conv_general_dilated; *_spec list (batch|out-feature, feature|in-feature, spatial...) dimensions")


# ---- conv_general_dilated's rules ---------------------------------------------------------------
# The cotangents are convolutions themselves (the transposed convolutions): the input's is the
# output cotangent convolved with the reversed kernel, its in and out features swapped, strides
# becoming input dilation; the kernel's is the input convolved with the output cotangent, batch and
# features swapped, strides becoming kernel dilation.

def dilated(sizes, dilation):
    return [0 if d == 0 else (d - 1) * k + 1 for d, k in zip(sizes, dilation)]


def spatial(shape, spec):
    return [shape[d] for d in spec[2:]]


def swap_first_two(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def reshape_axis_out_of(b, src, size, x):
    """Axis `src` split in two, (size, rest), size major (JAX's helper of the same name)."""
    shape = list(x.type.shape)
    return b.reshape(x, tuple(shape[:src] + [size, shape[src] // size] + shape[src + 1:]))


def reshape_axis_into(b, src, dst, x):
    """Axis `src` merged into axis `dst` (numbered without src), src major (JAX's helper of the same name)."""
    order = [d for d in range(x.type.ndim) if d != src]
    order.insert(dst, src)
    shape = [size for d, size in enumerate(x.type.shape) if d != src]
    shape[dst] *= x.type.shape[src]
    return b.reshape(b.transpose(x, order), tuple(shape))


def conv_vjp(b, op, primals, outs, cts):
    """The two transposed convolutions (JAX's). Feature groups G: the input's cotangent convolves with the
    kernel's groups moved from its output features into its input features, G groups again; the kernel's
    is the grouped convolution's batch_group_count = G form. Batch groups G: the same kernel move and G
    feature groups give the input's cotangent with (group, feature) features, the groups then moved
    back into its batch; the kernel's has feature_group_count = G (the batch being its features)."""
    groups, batch_groups = op.attrs["feature_group_count"], op.attrs["batch_group_count"]
    lhs, rhs = primals
    (ct,) = cts
    a = op.attrs
    strides, padding, lhs_dilation, rhs_dilation = (a["window_strides"], a["padding"], a["lhs_dilation"],
                                                    a["rhs_dilation"])
    lhs_spec, rhs_spec, out_spec = a["lhs_spec"], a["rhs_spec"], a["out_spec"]
    in_sizes = dilated(spatial(lhs.type.shape, lhs_spec), lhs_dilation)
    window = dilated(spatial(rhs.type.shape, rhs_spec), rhs_dilation)
    out_sizes = dilated(spatial(ct.type.shape, out_spec), strides)
    ct = b.convert(ct, lhs.type.dtype)
    common = {"feature_group_count": 1, "batch_group_count": 1, "preferred_element_type": None}
    before = [w - low - 1 for w, (low, _) in zip(window, padding)]
    lhs_padding = tuple((lo, i + w - 1 - o - lo) for lo, i, w, o in zip(before, in_sizes, window, out_sizes))
    kernel_groups = max(groups, batch_groups)   # at most one of them exceeds 1 (conv_infer)
    kernel = rhs
    if kernel_groups > 1:
        kernel = reshape_axis_into(b, rhs_spec[0], rhs_spec[1], reshape_axis_out_of(b, rhs_spec[0], kernel_groups, rhs))
    flipped = b.op("rev", kernel, dimensions=tuple(rhs_spec[2:]))
    ct_lhs = b.op("conv_general_dilated", ct, flipped, window_strides=tuple(lhs_dilation), padding=lhs_padding,
                  lhs_dilation=tuple(strides), rhs_dilation=tuple(rhs_dilation), lhs_spec=tuple(out_spec),
                  rhs_spec=swap_first_two(rhs_spec), out_spec=tuple(lhs_spec),
                  **{**common, "feature_group_count": kernel_groups})
    if batch_groups > 1:
        # Its features are (batch group, input feature): the groups go back into the batch, group-major.
        ct_lhs = reshape_axis_into(b, lhs_spec[1], lhs_spec[0], reshape_axis_out_of(b, lhs_spec[1], batch_groups, ct_lhs))
    rhs_padding = tuple((low, o - i + w - low - 1) for (low, _), i, w, o in zip(padding, in_sizes, window, out_sizes))
    ct_rhs = b.op("conv_general_dilated", lhs, ct, window_strides=tuple(rhs_dilation), padding=rhs_padding,
                  lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(strides), lhs_spec=swap_first_two(lhs_spec),
                  rhs_spec=swap_first_two(out_spec), out_spec=swap_first_two(rhs_spec),
                  **{**common, "feature_group_count": batch_groups, "batch_group_count": groups})
    return [ct_lhs if is_differentiable(lhs.type) else None, ct_rhs if is_differentiable(rhs.type) else None]


def merge_lanes(b, x, dim):
    """x (lanes leading, then an operand of the lane's shape) with the lanes merged into the lane
    dimension `dim`, lane-major."""
    order = [d for d in range(1, x.type.ndim) if d != dim + 1]
    order[dim:dim] = [0, dim + 1]
    moved = b.transpose(x, order)
    shape = list(moved.type.shape)
    return b.reshape(moved, tuple(shape[:dim] + [shape[dim] * shape[dim + 1]] + shape[dim + 2:]))


def split_lanes(b, x, dim, lanes):
    """The inverse of merge_lanes: dimension `dim` split lane-major, the lanes moved first."""
    shape = list(x.type.shape)
    split = b.reshape(x, tuple(shape[:dim] + [lanes, shape[dim] // lanes] + shape[dim + 1:]))
    return b.transpose(split, [dim] + [d for d in range(split.type.ndim) if d != dim])


def grouped_conv_of_lanes(b, op, lhs, rhs, groups):
    """A convolution of G feature groups, both operands batched (lanes leading), as JAX batches it: one
    convolution of G * lanes groups, the features ordered (group, lane, feature of the group)."""
    lhs_spec, rhs_spec, out_spec = op.attrs["lhs_spec"], op.attrs["rhs_spec"], op.attrs["out_spec"]
    lanes = b.axis_size

    def lanes_into_groups(x, features):   # lanes, then features -> (group, lane, feature) features
        x = reshape_axis_out_of(b, features + 1, groups, x)
        return reshape_axis_into(b, features, features, reshape_axis_into(b, 0, features + 1, x))
    (out,) = b.ops("conv_general_dilated", [lanes_into_groups(lhs, lhs_spec[1]), lanes_into_groups(rhs, rhs_spec[0])],
                   {**op.attrs, "feature_group_count": groups * lanes})
    features = out_spec[1]
    out = reshape_axis_out_of(b, features + 1, lanes, reshape_axis_out_of(b, features, groups, out))
    out = reshape_axis_into(b, features, features + 1, out)   # (lane, group * feature) at `features`
    return b.transpose(out, [features] + [d for d in range(out.type.ndim) if d != features])


def conv_batch(b, op, operands, batched):
    """A batched input with one kernel: the lanes are more images, merged into the batch dimension. A
    batched kernel: the lanes are feature groups (each lane's input features convolved with its own
    kernel), or batch groups when the convolution has them, as JAX batches it."""
    lhs, rhs = operands
    lhs_spec, rhs_spec, out_spec = op.attrs["lhs_spec"], op.attrs["rhs_spec"], op.attrs["out_spec"]
    lanes = b.axis_size
    groups, batch_groups = op.attrs["feature_group_count"], op.attrs["batch_group_count"]
    if not batched[1]:
        if batch_groups > 1:
            # The lanes join each batch group's images, so the groups stay the batch's major part.
            images = lhs_spec[0]
            lhs = reshape_axis_out_of(b, images + 1, batch_groups, lhs)
            lhs = reshape_axis_into(b, images, images, reshape_axis_into(b, 0, images + 1, lhs))
        else:
            lhs = merge_lanes(b, lhs, lhs_spec[0])
        (out,) = b.ops("conv_general_dilated", [lhs, rhs], op.attrs)
        return [split_lanes(b, out, out_spec[0], lanes)], [True]
    if batch_groups > 1:
        # Lane-major batch and output features: batch group l * G + g of the merged input meets the
        # output features of lane l's group g.
        lhs = merge_lanes(b, b.move_batch_to_front(lhs, batched[0]), lhs_spec[0])
        (out,) = b.ops("conv_general_dilated", [lhs, merge_lanes(b, rhs, rhs_spec[0])],
                       {**op.attrs, "batch_group_count": batch_groups * lanes})
        return [split_lanes(b, out, out_spec[1], lanes)], [True]
    if groups > 1:
        return [grouped_conv_of_lanes(b, op, b.move_batch_to_front(lhs, batched[0]), rhs, groups)], [True]
    lhs = merge_lanes(b, b.move_batch_to_front(lhs, batched[0]), lhs_spec[1])
    rhs = merge_lanes(b, rhs, rhs_spec[0])
    (out,) = b.ops("conv_general_dilated", [lhs, rhs], {**op.attrs, "feature_group_count": lanes})
    return [split_lanes(b, out, out_spec[1], lanes)], [True]


set_rules("conv_general_dilated", jvp=bilinear_jvp, vjp=conv_vjp, batch=conv_batch)
