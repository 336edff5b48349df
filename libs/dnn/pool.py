"""The pooling kernel of `library_call dnn.pool` (MIOpen's pooling forward): the window reductions
(max, min, sum; an average pool is the sum divided after the call), written as lax.reduce_window
writes them, of an array whose last dimension is not pooled (NHWC-like activations: the features run
consecutively through memory) or is (NCHW-like: the "features" are then one, past the last dimension).

    y[o..., c] = reduce over taps t... of x[o*stride + t*dilation - pad_low..., c]   (padding: identity)

A workgroup of LANES work-items walks ROWS steps of a uniform loop; at each step every lane reduces one
output over the window's taps, in row-major order as the reference does (f16/bf16 reduce in f32 and
round once). Where the last dimension is not pooled, the lanes take LANES consecutive features of one
row of y (the coordinates o... of the pooled dimensions), so every lane reads the same taps; where it
is (every dimension is a row's), they take LANES consecutive rows. The tap loops are uniform (their
bounds are the window's), so on the host the lanes are the innermost loop, which LLVM vectorizes: one
vector load of consecutive features per tap, the row's coordinates and bounds checks invariant in it
(on the GPU a wave reads 64 consecutive elements per tap). The rank and the last dimension's pooling
are code-level; every size, stride, padding and dilation is a scalar parameter.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...ir.types import FLOATS, TensorType
from ...lowering.elemental import identity_const
from ...lowering.emit_ops import all_of, combine
from ...lowering.emitters import operand_buffers
from ...lowering.tiling import accumulator_dtype
from .direct import unravel
from .im2col import offset_of
from .problem import product

LANES, ROWS = 64, 8
REDUCERS = ("max", "min", "sum")
POOL_SCALARS = ("in_size", "out_size", "window", "stride", "pad", "dilation")


def refuse(x: TensorType, attrs: dict) -> str | None:
    """None when dnn.pool computes this reduce_window, else why not."""
    last = x.ndim - 1
    if attrs["reducer"] not in REDUCERS:
        return f"the reducer {attrs['reducer']!r} (pooling takes {', '.join(REDUCERS)})"
    if x.dtype in ("bool",) or x.dtype.startswith("c"):
        return f"{x.dtype} operands"
    if x.ndim < 2 or x.size == 0:
        return "fewer than two dimensions or no elements"
    if any(b != 1 for b in attrs["base_dilation"]):
        return "base dilation"
    return None


def last_pooled(attrs: dict) -> bool:
    """Whether reduce_window reduces along the last dimension (an NCHW-like pool)."""
    return (attrs["window_dimensions"][-1], attrs["window_strides"][-1], tuple(attrs["padding"][-1]),
            attrs["window_dilation"][-1]) != (1, 1, (0, 0), 1)


def pool_kernel(op, name: str) -> K.Kernel:
    attrs, x_type, y_type = op.attrs, op.operands[0].type, op.result.type
    every = last_pooled(attrs)
    pooled, reducer = x_type.ndim - (not every), attrs["reducer"]
    dtype, wide = "i64", accumulator_dtype(x_type.dtype)
    c = K.ScalarParam("c", dtype)
    sizes = {key: [K.ScalarParam(f"{key}{d}", dtype) for d in range(pooled)] for key in POOL_SCALARS}
    values = {"in_size": x_type.shape[:pooled], "out_size": y_type.shape[:pooled],
              "window": attrs["window_dimensions"][:pooled], "stride": attrs["window_strides"][:pooled],
              "pad": [lo for lo, _ in attrs["padding"][:pooled]], "dilation": attrs["window_dilation"][:pooled]}
    arguments = [("c", 1 if every else x_type.shape[-1])] + [(f"{k}{d}", values[k][d]) for k in POOL_SCALARS for d in range(pooled)]
    x_buf, y_buf = operand_buffers(op)
    rows = product(sizes["out_size"])
    x_buf = K.GlobalBuffer(x_buf.name, x_buf.dtype, product(sizes["in_size"]) * c, True)
    y_buf = K.GlobalBuffer(y_buf.name, y_buf.dtype, rows * c)
    lane, step = K.workitem_id(0).cast(dtype), K.Var("step", dtype)
    # (feature, row) of the lane at the step: expressions, not variables, so that each work-item loop (the
    # acc's initial value, each tap, the store) computes them itself and nothing but the acc crosses them.
    if every:
        feature, row = K.Const(0, dtype), (K.workgroup_id(1).cast(dtype) * ROWS + step) * LANES + lane
    else:
        feature, row = K.workgroup_id(0).cast(dtype) * LANES + lane, K.workgroup_id(1).cast(dtype) * ROWS + step
    acc = K.Var("acc", wide)
    row_stmts, out_coords = unravel(row, sizes["out_size"], "o")
    taps = [K.Var(f"t{d}", dtype) for d in range(pooled)]
    positions = [o * sizes["stride"][d] + t * sizes["dilation"][d] - sizes["pad"][d]
                 for d, (o, t) in enumerate(zip(out_coords, taps))]
    inside = all_of([(p >= 0) & (p < sizes["in_size"][d]) for d, p in enumerate(positions)])
    present = (feature < c) & (row < rows)
    reduce = [*row_stmts,
              K.If(present & inside, [K.Assign(acc, combine(reducer, acc, x_buf[offset_of(positions, sizes["in_size"]) * c
                                                                              + feature].cast(wide)))])]
    for t, size in reversed(list(zip(taps, sizes["window"]))):
        reduce = [K.For(t, 0, size, 1, reduce, uniform=True)]
    # The scale multiplies the result rounded to y's dtype, as the graph's mul does (the product of two values of
    # y's dtype is exact in the wide dtype, so rounding it once more gives the graph's product).
    # Integer pools have no scale (the matcher scales float pools only).
    scaled = y_type.dtype in FLOATS
    scale = K.ScalarParam("scale", wide)
    result = (acc.cast(y_type.dtype).cast(wide) * scale).cast(y_type.dtype) if scaled else acc.cast(y_type.dtype)
    body = [K.For(step, 0, ROWS, 1, [K.Let(acc, identity_const(reducer, wide)), *reduce,
                                     K.If(present, [K.Store(y_buf, row * c + feature, result)])], uniform=True)]
    scalars = [c] + [s for k in POOL_SCALARS for s in sizes[k]] + [scale] * scaled
    arguments += [("scale", attrs["scale"])] * scaled
    row_groups = ROWS * LANES if every else ROWS
    grid = (1 if every else (c + (LANES - 1)) / LANES, (rows + (row_groups - 1)) / row_groups)
    return K.Kernel(name, params=(x_buf, y_buf, *scalars), grid=grid, workgroup_size=(LANES,), body=body,
                    arguments=tuple(arguments))
