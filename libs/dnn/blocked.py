"""The blocked direct solver's kernel, for small convolutions (few input features times taps, few output
features: LeNet's, W18's), where im2col + GEMM writes patches as large as the work and the GEMM's tiles
are mostly idle. A work-item computes BLOCK consecutive output features of one output position,
their accumulators in registers, reading each input element of its window once for the BLOCK features:

    y[n, k0 + j, o...] = epilogue(sum over taps t, features c of x[n, c, o*stride + t*rdil - pad] * w[k0 + j, c, t])

A workgroup is POSITIONS consecutive output positions (n, o...) in row-major order of one block of
features (workgroup_id(1)), so its work-items read the same weights and consecutive inputs along the
output's last spatial dimension. On the host the block's accumulators are one vector where w's and y's
features are consecutive (HWIO, NHWC: the SLP vectorizer makes the BLOCK multiply-adds one, from a
vector load of w). A workgroup whose positions all lie inside y runs unguarded (a uniform branch), the
last one under a test per work-item. A tap on padding reads x at a
coordinate clamped inside it and selects zero (no branch in the tap loop). Ungrouped forward
convolutions without lhs dilation; every size is a scalar parameter (problem.py).
"""
from __future__ import annotations

import math

from ...ir import kernel as K
from ...lowering.emit_ops import all_of
from .direct import epilogue, unravel
from .problem import ConvParams, ConvProblem, product

POSITIONS = 64  # output positions of a workgroup
BLOCK = 8       # output features of a work-item
# The problems it is for (and the matcher sends to dnn.conv_fwd rather than im2col + GEMM): at most
# MAX_DEPTH input features times taps and MAX_FEATURES output features. Measured on the host on LeNet-5's
# convolutions (C*R*S = 25 and 150, K = 6 and 16); beyond them the GEMM's tiles fill.
MAX_DEPTH, MAX_FEATURES = 256, 32


def small(c: int, window, k: int) -> bool:
    return c * math.prod(window) <= MAX_DEPTH and k <= MAX_FEATURES


def refuse(p: ConvProblem) -> str | None:
    if p.direction != "F":
        return "a backward convolution (the kernel computes forward convolutions)"
    if p.groups != 1 or p.batch_groups != 1:
        return "the convolution is grouped"
    if p.dilated:
        return "lhs dilation (the sub-pixel rewrite takes those)"
    if p.in_dtype not in ("f64", "f32", "f16", "bf16"):
        return f"{p.in_dtype} operands: the kernel accumulates floats"
    if not small(p.c, p.window, p.k):
        return (f"C*R*S = {p.c}x{'x'.join(map(str, p.window))} or K = {p.k} larger than the kernel is for "
                f"({MAX_DEPTH}, {MAX_FEATURES})")
    return None


def block(p: ConvProblem) -> int:
    """The output features of a work-item: BLOCK, or K where K is fewer (a code-level fact, one kernel per
    value), so that a block never runs past K (the last block starts at K - block and overlaps the one
    before it, recomputing the same values): its weights' and outputs' indices are consecutive in the
    features where the layouts are (HWIO, NHWC), which the host's SLP vectorizer turns into vector loads,
    multiply-adds and stores."""
    return min(BLOCK, p.k)


def blocked_kernel(op, problem: ConvProblem, name: str) -> K.Kernel:
    params = ConvParams(op, problem)
    p, dtype, acc_dtype = problem, params.dtype, problem.acc_dtype
    x, w, y = params.buffers[0], params.buffers[1], params.buffers[-1]
    s = params.spatial
    width = block(p)
    positions = params.n * product(s["out_size"])
    position, first = K.Var("position", dtype), K.Var("first", dtype)
    lets = [K.Let(position, K.workgroup_id(0).cast(dtype) * POSITIONS + K.workitem_id(0).cast(dtype)),
            K.Let(first, K.minimum(K.workgroup_id(1).cast(dtype) * width, params.k - width))]
    coord_stmts, coords = unravel(position, [params.n, *s["out_size"]], "o")
    batch, out = coords[0], coords[1:]
    accs = [K.Var(f"acc{j}", acc_dtype) for j in range(width)]
    taps = [K.Var(f"t{d}", dtype) for d in range(p.spatial)]
    channel, value = K.Var("channel", dtype), K.Var("value", acc_dtype)
    coords_in, valid = [], []
    for d in range(p.spatial):
        at = out[d] * s["stride"][d] + taps[d] * s["rhs_dilation"][d] - s["pad"][d]
        valid.append((at >= 0) & (at < s["in_size"][d]))
        coords_in.append(K.minimum(K.maximum(at, K.Const(0, dtype)), s["in_size"][d] - 1))
    x_index = params.offset([batch, channel, *coords_in], params.x_strides, p.lhs_spec)
    tap_body = [K.Let(value, K.select(all_of(valid), x[x_index].cast(acc_dtype), K.Const(0, acc_dtype)))]
    for j, acc in enumerate(accs):
        w_index = params.offset([first + j, channel, *taps], params.w_strides, p.rhs_spec)
        tap_body.append(K.Assign(acc, acc + value * w[w_index].cast(acc_dtype)))
    loop = [K.For(channel, 0, params.c, 1, tap_body)]
    for t, size in reversed(list(zip(taps, s["window"]))):
        loop = [K.For(t, 0, size, 1, loop)]
    stores = [K.Store(y, params.offset([batch, first + j, *out], params.y_strides, p.out_spec),
                      epilogue(params, acc, first + j).cast(p.result_dtype)) for j, acc in enumerate(accs)]
    body = coord_stmts + [K.Let(acc, K.Const(0, acc_dtype)) for acc in accs] + loop + stores
    whole = (K.workgroup_id(0).cast(dtype) + 1) * POSITIONS <= positions
    guarded = K.If(whole, body, [K.If(position < positions, body)], uniform=True)
    grid = ((positions + (POSITIONS - 1)) / POSITIONS, (params.k + (width - 1)) / width)
    return K.Kernel(name, params=tuple(params.params), grid=grid, workgroup_size=(POSITIONS,),
                    body=lets + [guarded], arguments=tuple(params.arguments))
