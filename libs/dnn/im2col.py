"""The im2col + GEMM solver (MIOpen's GemmFwd), as a graph rewrite: the convolution becomes

    patches[(n, o...), (t..., c)] = x[n, c, o*stride + t*rdil - pad]   library_call dnn.im2col
    y = patches @ reshape(w in (taps, c, k) order, (R*S*C, K))           a dot_general

whose dot_general the BLAS matcher makes a GEMM (MFMA on gfx942, its bias and activation absorbed by
the BLAS rules that follow: the bias of a feature-last output is the GEMM's row bias), then the result
transposed to the output's dimension numbers. The patches are written to memory once (R*S times x),
which the GEMM's speed repays; this is what runs the ungrouped float convolutions with a window larger
than 1x1 (1x1 and the grouped ones, and integers, stay library_call dnn.conv_fwd, whose solvers write
no patches). A rewrite at match time, because a library call is one kernel and this solver is two.
"""
from __future__ import annotations

import math

from types import SimpleNamespace

from ...ir import kernel as K
from ...ir.core import Value
from ...lowering.emit_ops import all_of
from ...lowering.emitters import operand_buffers
from ...ir.types import NUMPY_DTYPES
from ..blas.matcher import SUPPORTED
from .direct import tap_position, unravel
from .problem import SPATIAL_SCALARS, ConvParams, product, row_major
from .routines import im2col_sizes

# Larger patches than this stay with the routines whose kernels form the patches in LDS (a big
# weight gradient's patches are R*S times x as well): memory, not speed, decides there.
MAX_PATCH_BYTES = 1 << 30
WORKGROUP = 64
NARROW = 16  # fewer input features than this: the narrow variant (a work-item per row and feature)
ROWS, CHUNKS, VEC = 8, 8, 8  # otherwise: a workgroup of 8 rows x 8 runs of 8 features (if a multiple of 8, else 1)


def refuse(lhs: Value, rhs: Value, attrs: dict) -> str | None:
    """None when the im2col + GEMM rewrite applies, else why not."""
    dtype = lhs.type.dtype
    spec = attrs["rhs_spec"]
    window = [rhs.type.shape[d] for d in spec[2:]]
    if attrs["feature_group_count"] != 1 or attrs["batch_group_count"] != 1:
        return "grouped"
    if dtype not in ("f64", "f32", "f16", "bf16") or (attrs["preferred_element_type"] or dtype) not in SUPPORTED[dtype]:
        return f"{dtype} operands"
    if math.prod(window) == 1:
        return "a 1x1 window (dnn.conv_fwd's gemm_1x1 reads x as it lies)"
    if lhs.type.size == 0 or rhs.type.size == 0:
        return "empty operands"
    batch, out, features = im2col_sizes(lhs.type, {**attrs, "window": window})
    patch_bytes = batch * math.prod(out) * math.prod(window) * features * NUMPY_DTYPES[dtype].itemsize
    if patch_bytes > MAX_PATCH_BYTES:
        return f"patches of {patch_bytes / 2**20:.0f} MiB (more than {MAX_PATCH_BYTES >> 20} MiB)"
    return None


def im2col_gemm(m, lhs: Value, rhs: Value, attrs: dict, result_type) -> Value:
    ndim = lhs.type.ndim
    spatial = ndim - 2
    rhs_spec, out_spec = attrs["rhs_spec"], attrs["out_spec"]
    window = tuple(rhs.type.shape[rhs_spec[2 + j]] for j in range(spatial))
    patches = m.op("library_call", lhs, library="dnn", routine="im2col", solution="", window=window,
                   **{k: attrs[k] for k in ("window_strides", "padding", "lhs_dilation", "rhs_dilation", "lhs_spec")})
    out_shape = result_type.shape
    batch, features = out_shape[out_spec[0]], rhs.type.shape[rhs_spec[0]]
    out_size = [out_shape[out_spec[2 + j]] for j in range(spatial)]
    depth = patches.type.shape[1]
    w_order = (*rhs_spec[2:], rhs_spec[1], rhs_spec[0])
    w = rhs if w_order == tuple(range(ndim)) else m.op("transpose", rhs, permutation=w_order)
    b = m.op("reshape", w, new_sizes=(depth, features))
    product = m.op("dot_general", patches, b, lhs_contracting=(1,), rhs_contracting=(0,), lhs_batch=(), rhs_batch=(),
                   preferred_element_type=attrs["preferred_element_type"])
    y = m.op("reshape", product, new_sizes=(batch, *out_size, features))
    # y's dimensions are (batch, spatial..., features); the output's dimension d holds the one out_spec puts there.
    logical = {out_spec[0]: 0, out_spec[1]: ndim - 1, **{out_spec[2 + j]: 1 + j for j in range(spatial)}}
    permutation = tuple(logical[d] for d in range(ndim))
    return y if permutation == tuple(range(ndim)) else m.op("transpose", y, permutation=permutation)


def offset_of(coords, sizes) -> K.Expr:
    """The row-major index of `coords` in runtime `sizes`, by multiplications."""
    index = coords[0]
    for coord, size in zip(coords[1:], sizes[1:]):
        index = index * size + coord
    return index


def im2col_kernel(op, name: str) -> K.Kernel:
    """Work-item (f, r) writes VEC consecutive features from f*VEC of every tap of one row r of the patches,
    the taps nested loops (no division per tap), the VEC copies unrolled in the loop body (vector copies
    on the host, whose work-item loop the taps' runtime loops keep from vectorizing); VEC is 1 where the
    features are not a multiple of it. With fewer than NARROW features (a network's first layers: 1 or
    3) the narrow variant runs a work-item per row and feature instead (a division each). Sizes are
    scalar parameters; lhs dilation, narrowness and the vector width are variants."""
    attrs, x_type = op.attrs, op.operands[0].type
    spatial = x_type.ndim - 2
    dtype = "i64"
    param = lambda label: K.ScalarParam(label, dtype)
    n, c = param("n"), param("c")
    sizes = {key: [param(f"{key}{j}") for j in range(spatial)] for key in SPATIAL_SCALARS}
    batch, out, features = im2col_sizes(x_type, attrs)
    values = {"in_size": [x_type.shape[attrs["lhs_spec"][2 + j]] for j in range(spatial)], "out_size": out,
              "window": attrs["window"], "stride": attrs["window_strides"], "pad": [lo for lo, _ in attrs["padding"]],
              "lhs_dilation": attrs["lhs_dilation"], "rhs_dilation": attrs["rhs_dilation"]}
    arguments = [("n", batch), ("c", features)] + [(f"{k}{j}", values[k][j]) for k in SPATIAL_SCALARS
                                                   for j in range(spatial)]
    x_shape = [None] * x_type.ndim
    for d, size in zip(attrs["lhs_spec"], [n, c] + sizes["in_size"]):
        x_shape[d] = size
    rows, taps = n * product(sizes["out_size"]), product(sizes["window"])
    x_buf, out_buf = operand_buffers(op)
    x_buf = K.GlobalBuffer(x_buf.name, x_buf.dtype, product(x_shape), True)
    out_buf = K.GlobalBuffer(out_buf.name, out_buf.dtype, rows * taps * c)
    feature, row = (K.Var(label, dtype) for label in ("feature", "row"))
    narrow = features < NARROW
    vec = VEC if not narrow and features % VEC == 0 else 1
    if narrow:
        item = K.Var("item", dtype)
        body = [K.Let(item, K.workgroup_id(0).cast(dtype) * WORKGROUP + K.workitem_id(0).cast(dtype)),
                K.Let(row, item / c), K.Let(feature, item - row * c)]
        grid, workgroup = ((rows * c + (WORKGROUP - 1)) / WORKGROUP,), (WORKGROUP,)
    else:
        body = [K.Let(feature, (K.workgroup_id(0).cast(dtype) * CHUNKS + K.workitem_id(0).cast(dtype)) * vec),
                K.Let(row, K.workgroup_id(1).cast(dtype) * ROWS + K.workitem_id(1).cast(dtype))]
        grid, workgroup = ((c + (CHUNKS * vec - 1)) / (CHUNKS * vec), (rows + (ROWS - 1)) / ROWS), (CHUNKS, ROWS)
    row_stmts, row_coords = unravel(row, [n] + sizes["out_size"], "r")
    taps_at = [K.Var(f"t{j}", dtype) for j in range(spatial)]
    geometry = SimpleNamespace(spatial=sizes)
    valid, x_coords = [], []
    dilated = any(d > 1 for d in attrs["lhs_dilation"])
    for j in range(spatial):
        ok, coord = tap_position(geometry, j, row_coords[1 + j], taps_at[j], dilated)
        valid.append(ok)
        x_coords.append(coord)
    tap = offset_of(taps_at, sizes["window"])  # the taps' row-major index, by multiplications
    x_strides = row_major(x_shape)
    x_index = ConvParams.offset([row_coords[0], feature] + x_coords, x_strides, attrs["lhs_spec"])
    start = K.Var("start", dtype)
    values = [K.Var(f"value{v}", x_type.dtype) for v in range(vec)]
    feature_stride = x_strides[attrs["lhs_spec"][1]]
    copy = [*(K.Let(value, K.Const(0, x_type.dtype)) for value in values),
            K.If(all_of(valid), [K.Let(start, x_index),
                                 *(K.Assign(value, x_buf[start + feature_stride * v if v else start])
                                   for v, value in enumerate(values))]),
            *(K.Store(out_buf, (row * taps + tap) * c + feature + v, value) for v, value in enumerate(values))]
    for t, size in reversed(list(zip(taps_at, sizes["window"]))):
        copy = [K.For(t, 0, size, 1, copy)]
    body += [K.If(row < rows if narrow else (feature < c) & (row < rows), row_stmts + copy)]
    scalars = [n, c] + [s for k in SPATIAL_SCALARS for s in sizes[k]]
    return K.Kernel(name, params=(x_buf, out_buf, *scalars), grid=grid, workgroup_size=workgroup, body=body,
                    arguments=tuple(arguments))
