"""The direct solvers' kernel: one work-item per output element, looping over its window's taps and the
input features of its group (MIOpen's direct convolution, without LDS: each work-item's reads are
consecutive across work-items along the output's innermost dimension). Two variants of each kernel:
with and without lhs dilation (`ConvProblem.dilated`), whose holes cost divisions per tap.

    y[n, k, o...] = epilogue(sum over taps t, features c of x[n', g*C + c, o*stride + t*rdil - pad] * w[k, c, t])

A tap that lands on padding or between lhs-dilated elements is skipped (it reads zero). Feature
group g = k / (K/G) reads input features g*C...; batch group k / (K/BG) reads input batch
(k / (K/BG)) * N + n. Every size is a scalar parameter (problem.py); the depthwise variant (C = 1,
a code-level fact) drops the feature loop.
"""
from __future__ import annotations

from ...ir import kernel as K
from ...lowering.emit_ops import all_of
from ..blas.generator import activation_expr
from ..blas.routines import split_epilogue
from .problem import ConvParams

WORKGROUP = 256


def unravel(index: K.Expr, sizes, prefix: str) -> tuple[list[K.Stmt], list[K.Var]]:
    """Statements defining the row-major coordinates of `index` over runtime `sizes`."""
    stmts, coords = [], []
    inner = None
    for d in reversed(range(len(sizes))):
        coord = K.Var(f"{prefix}{d}", index.dtype)
        value = index if inner is None else index / inner
        if d > 0:
            value = value % sizes[d]
        stmts.insert(0, K.Let(coord, value))
        coords.insert(0, coord)
        inner = sizes[d] if inner is None else inner * sizes[d]
    return stmts, coords


def epilogue(params: ConvParams, acc: K.Expr, feature: K.Expr) -> K.Expr:
    """The problem's epilogue of output feature `feature` (problem.py's ConvParams: the bias is the third
    buffer, the clamp's bounds kernel parameters)."""
    return apply_epilogue(params.problem.epilogue, params.buffers[2], params.clamp, acc, feature)


def apply_epilogue(kind: str, bias: K.Buffer | None, clamp: tuple | None, acc: K.Expr, feature: K.Expr) -> K.Expr:
    """Epilogue `kind` (libs/blas/routines.py's EPILOGUES): the bias of output feature `feature` and the
    activation, in the accumulator's dtype; `clamp` the (low, high) bound expressions."""
    has_bias, activation = split_epilogue(kind)
    if has_bias:
        acc = acc + bias[feature].cast(acc.dtype)
    return activation_expr(activation, acc, clamp)


def tap_position(params, j: int, out_coord: K.Expr, tap: K.Expr, dilated: bool) -> tuple[K.Expr, K.Expr]:
    """(valid, input coordinate) along spatial dimension j of output coordinate `out_coord` and tap `tap`.
    Without lhs dilation (`dilated` False: the kernel variant of problems whose lhs_dilation is all 1s)
    there are no holes to skip and no division."""
    s = params.spatial
    padded = out_coord * s["stride"][j] + tap * s["rhs_dilation"][j] - s["pad"][j]
    if not dilated:
        return (padded >= 0) & (padded < s["in_size"][j]), padded
    dilation = s["lhs_dilation"][j]
    valid = (padded >= 0) & (padded <= (s["in_size"][j] - 1) * dilation) & (padded % dilation).eq(0)
    return valid, padded / dilation


def direct_kernel(op, problem, name: str, depthwise: bool) -> K.Kernel:
    params = ConvParams(op, problem)
    p, dtype, acc_dtype = problem, params.dtype, problem.acc_dtype
    x, w = params.buffers[0], params.buffers[1]
    y = params.buffers[-1]
    total = params.buffers[-1].count
    i = K.Var("i", dtype)
    body, coords = unravel(i, params.y_shape, "o")
    batch, feature = coords[p.out_spec[0]], coords[p.out_spec[1]]
    spatial_out = [coords[p.out_spec[2 + j]] for j in range(p.spatial)]
    in_batch, in_feature0 = K.Var("in_batch", dtype), K.Var("in_feature0", dtype)
    body += [K.Let(in_batch, (feature / params.k_per_batch_group) * params.n + batch),
             K.Let(in_feature0, (feature / params.k_per_group) * params.c)]
    acc, channel = K.Var("acc", acc_dtype), K.Var("channel", dtype)
    taps = [K.Var(f"t{j}", dtype) for j in range(p.spatial)]
    valid, x_coords = [], []
    for j in range(p.spatial):
        ok, coord = tap_position(params, j, spatial_out[j], taps[j], p.dilated)
        valid.append(ok)
        x_coords.append(coord)
    feature_term = K.Const(0, dtype) if depthwise else channel
    x_index = params.offset([in_batch, in_feature0 + feature_term] + x_coords, params.x_strides, p.lhs_spec)
    w_index = params.offset([feature, feature_term] + params.w_taps(taps), params.w_strides, p.rhs_spec)
    product = [K.Assign(acc, acc + x[x_index].cast(acc_dtype) * w[w_index].cast(acc_dtype))]
    tap = [K.If(all_of(valid), product if depthwise else [K.For(channel, 0, params.c, 1, product)])]
    for t, size in reversed(list(zip(taps, params.spatial["window"]))):
        tap = [K.For(t, 0, size, 1, tap)]
    body += [K.Let(acc, K.Const(0, acc_dtype))] + tap + \
        [K.Store(y, i, epilogue(params, acc, feature).cast(p.result_dtype))]
    stmts = [K.Let(i, K.workgroup_id(0).cast(dtype) * WORKGROUP + K.workitem_id(0).cast(dtype)),
             K.If(i < total, body)]
    return K.Kernel(name, params=tuple(params.params), grid=((total + (WORKGROUP - 1)) / WORKGROUP,),
                    workgroup_size=(WORKGROUP,), body=stmts, arguments=tuple(params.arguments))
