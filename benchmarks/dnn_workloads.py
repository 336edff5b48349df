"""W6: the deep-learning workloads of libs/dnn and cdnajit.nn (convolutions, pooling, attention), run
under cdnajit (`cdnajit.lax`, `cdnajit.nn`), JAX (`jax.lax`, `jax.nn`) and numpy (im2col by strided
slices and one tensordot per tap, as a numpy user writes a convolution; scipy has no batched
multi-channel convolution).

Each program takes the namespaces `lax` and `nn` (cdnajit's or JAX's). Weights are scaled by
1/sqrt(fan-in), so that activations stay O(1) through the ResNet block, as initializers keep them.
"""
from __future__ import annotations

import math

import numpy as np

import cdnajit as cj
import cdnajit.lax as clax
import cdnajit.nn as cnn
from cdnajit.libs.dnn import winograd
from workloads import Case, Context, Workload, normal, rng

NHWC = ("NHWC", "HWIO", "NHWC")
NCHW = ("NCHW", "OIHW", "NCHW")


def conv_tolerance(terms: int) -> tuple[float, float]:
    # Each output sums `terms` products of O(1/sqrt(terms)) magnitude: its rounding, whatever the
    # order, is at most terms * sqrt(terms) * 2**-24 relative to the O(1) result.
    return 1e-4, terms * math.sqrt(terms) * 2.0**-24


def peers(program, ctx: Context, *static):
    """cdnajit's and JAX's jitted `program(lax, nn, *arrays, *static)`."""
    def bound(lax, nn):
        return lambda *arrays: program(lax, nn, *arrays, *static)
    jax_fn = ctx.jax.jit(bound(ctx.jax.lax, ctx.jax.nn)) if ctx.jax else None
    return cj.jit(bound(clax, cnn)), jax_fn


# ---- numpy peers -------------------------------------------------------------------------------

def numpy_conv_nhwc(x, w, stride=1, padding=((0, 0), (0, 0)), lhs_dilation=1):
    """NHWC x, HWIO w: dilate, pad, then one tensordot per tap of the strided slices."""
    if lhs_dilation > 1:
        n, h, wd, c = x.shape
        dilated = np.zeros((n, (h - 1) * lhs_dilation + 1, (wd - 1) * lhs_dilation + 1, c), x.dtype)
        dilated[:, ::lhs_dilation, ::lhs_dilation] = x
        x = dilated
    x = np.pad(x, ((0, 0), *padding, (0, 0)))
    r, s = w.shape[:2]
    out_h, out_w = (x.shape[1] - r) // stride + 1, (x.shape[2] - s) // stride + 1
    out = np.zeros((x.shape[0], out_h, out_w, w.shape[3]), x.dtype)
    for i in range(r):
        for j in range(s):
            patch = x[:, i:i + (out_h - 1) * stride + 1:stride, j:j + (out_w - 1) * stride + 1:stride]
            out += np.tensordot(patch, w[i, j], axes=1)
    return out


def numpy_depthwise(x, w):
    """3x3 SAME depthwise of NHWC x with HW1C w."""
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros_like(x)
    for i in range(3):
        for j in range(3):
            out += padded[:, i:i + x.shape[1], j:j + x.shape[2]] * w[i, j, 0]
    return out


def numpy_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ---- the programs ------------------------------------------------------------------------------

def conv3x3(lax, nn, x, w, dims):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dims)


def conv_weight_gradient(lax, nn, x, dy):
    """The weight gradient of conv3x3 (NHWC, SAME) as jax.grad writes it: x convolved with dy, batch and
    features swapped by the dimension numbers."""
    return lax.conv_general_dilated(x, dy, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("CHWN", "IHWO", "HWNC"))


def resnet_block(lax, nn, x, w1, b1, w2, b2):
    y = nn.relu(lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=NHWC) + b1)
    y = lax.conv_general_dilated(y, w2, (1, 1), "SAME", dimension_numbers=NHWC) + b2
    return nn.relu(y + x)


def depthwise(lax, nn, x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=NHWC, feature_group_count=x.shape[-1])


def conv_transpose(lax, nn, x, w):
    return lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=NHWC)


def max_pool(lax, nn, x):
    return lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def lenet5(lax, nn, x, w1, b1, w2, b2, w3, b3, w4, b4, w5, b5):
    """LeNet-5 on 32x32x1 NHWC images: conv 5x5 -> 6, relu, 2x2 average pool, conv 5x5 -> 16, relu, pool,
    then dense 400 -> 120 -> 84 -> 10 with relu between."""
    def pool(y):
        return lax.reduce_window(y, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") * 0.25
    y = pool(nn.relu(lax.conv_general_dilated(x, w1, (1, 1), "VALID", dimension_numbers=NHWC) + b1))
    y = pool(nn.relu(lax.conv_general_dilated(y, w2, (1, 1), "VALID", dimension_numbers=NHWC) + b2))
    y = y.reshape(y.shape[0], -1)
    y = nn.relu(lax.dot(y, w3) + b3)
    y = nn.relu(lax.dot(y, w4) + b4)
    return lax.dot(y, w5) + b5


def attention(lax, nn, q, k, v):
    return nn.dot_product_attention(q, k, v)


def attention_by_hand(lax, nn, q, k, v):
    """softmax(q k^T / sqrt(d)) v written out, as a user writes it without nn.dot_product_attention."""
    logits = lax.dot_general(q, k, (((3,), (3,)), ((0, 2), (0, 2)))) / math.sqrt(q.shape[-1])  # (b, h, t, s)
    weights = nn.softmax(logits, axis=-1)
    return lax.dot_general(weights, v, (((3,), (1,)), ((0, 1), (0, 2)))).transpose(0, 2, 1, 3)  # (b, t, h, d)


# ---- the cases ---------------------------------------------------------------------------------

def forcing(rewrite: str, fn):
    """fn (a cj.jit function) compiled and run with libs/dnn's convolution rewrite `rewrite` forced."""
    def forced(*arrays):
        with winograd.forced(rewrite):
            return fn(*arrays)
    return forced


def conv_builder(layout: str, rewrite: str | None = None):
    """W6's 3x3 conv in `layout`, with the rewrite the heuristic picks or `rewrite` forced."""
    def build(ctx: Context) -> Case:
        n, c, h = (2, 16, 14) if ctx.quick else (8, 64, 56)
        generator = rng(60)
        x_nhwc = normal(generator, (n, h, h, c))
        w_hwio = normal(generator, (3, 3, c, c), scale=1 / math.sqrt(9 * c))
        if layout == "NHWC":
            inputs, dims, numpy_fn = (x_nhwc, w_hwio), NHWC, lambda x, w: numpy_conv_nhwc(x, w, padding=((1, 1),) * 2)
        else:
            inputs, dims = (x_nhwc.transpose(0, 3, 1, 2).copy(), w_hwio.transpose(3, 2, 0, 1).copy()), NCHW
            numpy_fn = lambda x, w: numpy_conv_nhwc(x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0),
                                                    padding=((1, 1),) * 2).transpose(0, 3, 1, 2)
        cdnajit_fn, jax_fn = peers(conv3x3, ctx, dims)
        cdnajit_fn = cdnajit_fn if rewrite is None else forcing(rewrite, cdnajit_fn)
        return Case(inputs, cdnajit_fn, numpy_fn, jax_fn, tolerance=conv_tolerance(9 * c),
                    flops=2 * n * h * h * c * c * 9)
    return build


def large_window_conv(lax, nn, x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=NHWC)


def large_window_builder(rewrite: str | None = None):
    """An 11x11 SAME conv, 8x64x64x32 -> 32 NHWC (the heuristic's pick: FFT convolution), or `rewrite` forced."""
    def build(ctx: Context) -> Case:
        n, c, h, r = (2, 8, 16, 5) if ctx.quick else (8, 32, 64, 11)
        generator = rng(68)
        x = normal(generator, (n, h, h, c))
        w = normal(generator, (r, r, c, c), scale=1 / math.sqrt(r * r * c))
        cdnajit_fn, jax_fn = peers(large_window_conv, ctx)
        cdnajit_fn = cdnajit_fn if rewrite is None else forcing(rewrite, cdnajit_fn)
        numpy_fn = lambda x, w: numpy_conv_nhwc(x, w, padding=(((r - 1) // 2, r // 2),) * 2)
        return Case((x, w), cdnajit_fn, numpy_fn, jax_fn, tolerance=conv_tolerance(r * r * c),
                    flops=2 * n * h * h * c * c * r * r)
    return build


def build_conv_weight_gradient(ctx: Context) -> Case:
    n, c, h = (2, 16, 14) if ctx.quick else (8, 64, 56)
    generator = rng(67)
    x, dy = normal(generator, (n, h, h, c)), normal(generator, (n, h, h, c), scale=1 / math.sqrt(n * h * h))

    def numpy_fn(x, dy):
        padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
        return np.stack([np.stack([np.tensordot(padded[:, i:i + h, j:j + h], dy, axes=([0, 1, 2], [0, 1, 2]))
                                   for j in range(3)]) for i in range(3)])
    cdnajit_fn, jax_fn = peers(conv_weight_gradient, ctx)
    return Case((x, dy), cdnajit_fn, numpy_fn, jax_fn, tolerance=conv_tolerance(n * h * h),
                flops=2 * n * h * h * c * c * 9)


def build_resnet_block(ctx: Context) -> Case:
    n, c, h = (2, 16, 14) if ctx.quick else (8, 64, 56)
    generator = rng(61)
    x = normal(generator, (n, h, h, c))
    w1, w2 = (normal(generator, (3, 3, c, c), scale=1 / math.sqrt(9 * c)) for _ in range(2))
    b1, b2 = (normal(generator, (c,), scale=0.1) for _ in range(2))

    def numpy_fn(x, w1, b1, w2, b2):
        y = np.maximum(numpy_conv_nhwc(x, w1, padding=((1, 1),) * 2) + b1, 0)
        return np.maximum(numpy_conv_nhwc(y, w2, padding=((1, 1),) * 2) + b2 + x, 0)
    cdnajit_fn, jax_fn = peers(resnet_block, ctx)
    rtol, atol = conv_tolerance(9 * c)
    # Two chained convolutions: the first's error passes through the second (O(1) gain) and adds its own.
    return Case((x, w1, b1, w2, b2), cdnajit_fn, numpy_fn, jax_fn, tolerance=(rtol, 2 * atol),
                flops=2 * 2 * n * h * h * c * c * 9)


def build_depthwise(ctx: Context) -> Case:
    n, c, h = (2, 16, 14) if ctx.quick else (8, 128, 56)
    generator = rng(62)
    x = normal(generator, (n, h, h, c))
    w = normal(generator, (3, 3, 1, c), scale=1 / 3)
    cdnajit_fn, jax_fn = peers(depthwise, ctx)
    return Case((x, w), cdnajit_fn, numpy_depthwise, jax_fn, tolerance=conv_tolerance(9), flops=2 * n * h * h * c * 9)


def build_conv_transpose(ctx: Context) -> Case:
    n, c, h = (2, 16, 8) if ctx.quick else (8, 64, 32)
    generator = rng(63)
    x = normal(generator, (n, h, h, c))
    w = normal(generator, (3, 3, c, c), scale=1 / math.sqrt(9 * c))
    # lax.conv_transpose's SAME padding for a 3-tap window at stride 2: the input dilated by 2, padded (2, 1).
    numpy_fn = lambda x, w: numpy_conv_nhwc(x, w, padding=((2, 1),) * 2, lhs_dilation=2)
    cdnajit_fn, jax_fn = peers(conv_transpose, ctx)
    return Case((x, w), cdnajit_fn, numpy_fn, jax_fn, tolerance=conv_tolerance(9 * c),
                flops=2 * n * (2 * h) ** 2 * c * c * 9)


def build_max_pool(ctx: Context) -> Case:
    n, c, h = (2, 16, 16) if ctx.quick else (8, 64, 112)
    x = normal(rng(64), (n, h, h, c))
    numpy_fn = lambda x: x.reshape(n, h // 2, 2, h // 2, 2, c).max(axis=(2, 4))
    cdnajit_fn, jax_fn = peers(max_pool, ctx)
    return Case((x,), cdnajit_fn, numpy_fn, jax_fn, tolerance=(0.0, 0.0))


def build_lenet5(ctx: Context) -> Case:
    n = 8 if ctx.quick else 64
    generator = rng(66)
    x = normal(generator, (n, 32, 32, 1))
    shapes = [(5, 5, 1, 6), (6,), (5, 5, 6, 16), (16,), (400, 120), (120,), (120, 84), (84,), (84, 10), (10,)]
    fan_in = [25, 25, 150, 150, 400, 400, 120, 120, 84, 84]
    params = [normal(generator, shape, scale=1 / math.sqrt(f)) for shape, f in zip(shapes, fan_in)]

    def numpy_fn(x, w1, b1, w2, b2, w3, b3, w4, b4, w5, b5):
        def pool(y):
            return y.reshape(y.shape[0], y.shape[1] // 2, 2, y.shape[2] // 2, 2, y.shape[3]).mean(axis=(2, 4))
        y = pool(np.maximum(numpy_conv_nhwc(x, w1) + b1, 0))
        y = pool(np.maximum(numpy_conv_nhwc(y, w2) + b2, 0)).reshape(n, -1)
        y = np.maximum(np.maximum(y @ w3 + b3, 0) @ w4 + b4, 0)
        return y @ w5 + b5
    cdnajit_fn, jax_fn = peers(lenet5, ctx)
    rtol, atol = conv_tolerance(400)
    # Five layers, each adding its own rounding to the O(1) error passed on (gain O(1)).
    flops = 2 * n * (28 * 28 * 6 * 25 + 10 * 10 * 16 * 150 + 400 * 120 + 120 * 84 + 84 * 10)
    return Case((x, *params), cdnajit_fn, numpy_fn, jax_fn, tolerance=(rtol, 5 * atol), flops=flops)


def attention_builder(program):
    return lambda ctx: build_attention(ctx, program)


def build_attention(ctx: Context, program) -> Case:
    b, s, heads, d = (1, 128, 2, 64) if ctx.quick else (4, 1024, 8, 64)
    generator = rng(65)
    q, k, v = (normal(generator, (b, s, heads, d)) for _ in range(3))

    def numpy_fn(q, k, v):
        logits = np.einsum("bthd,bshd->bhts", q, k) / np.float32(math.sqrt(d))
        return np.einsum("bhts,bshd->bthd", numpy_softmax(logits), v)
    cdnajit_fn, jax_fn = peers(program, ctx)
    # Logits sum d products (|q.k| ~ sqrt(d)), outputs s probabilities times O(1) values.
    return Case((q, k, v), cdnajit_fn, numpy_fn, jax_fn, tolerance=(1e-4, (d + s) * 2.0**-24 * 16),
                flops=4 * b * heads * s * s * d)


DNN_WORKLOADS = (
    Workload("W6.conv_nchw", "conv 3x3 stride 1 SAME, 8x64x56x56 -> 64 channels, f32, NCHW/OIHW",
             conv_builder("NCHW")),
    Workload("W6.conv_nhwc", "the same conv in NHWC/HWIO", conv_builder("NHWC")),
    Workload("W6.conv_nhwc_im2col", "W6.conv_nhwc with im2col + GEMM forced (the heuristic's choice is Winograd F(4x4))",
             conv_builder("NHWC", "im2col")),
    Workload("W6.conv_11x11", "conv 11x11 stride 1 SAME, 8x64x64x32 -> 32 channels, f32, NHWC (the heuristic's "
             "choice: FFT convolution)", large_window_builder()),
    Workload("W6.conv_11x11_im2col", "W6.conv_11x11 with im2col + GEMM forced", large_window_builder("im2col")),
    Workload("W6.conv_weight_grad", "the 3x3 conv's weight gradient (x convolved with dy), 8x56x56x64 NHWC",
             build_conv_weight_gradient),
    Workload("W6.resnet_block", "ResNet basic block: two 3x3 convs with bias, relu, residual; 8x56x56x64 NHWC",
             build_resnet_block),
    Workload("W6.depthwise", "depthwise 3x3 SAME conv, 8x56x56x128 NHWC", build_depthwise),
    Workload("W6.conv_transpose", "transposed conv, stride 2, 3x3, 8x32x32x64 -> 64 channels NHWC",
             build_conv_transpose),
    Workload("W6.max_pool", "max pooling 2x2 stride 2 on 8x112x112x64 NHWC (lax.reduce_window)", build_max_pool),
    Workload("W6.lenet5", "LeNet-5 forward, batch 64, 32x32x1 NHWC: two 5x5 convs with relu and average pools, "
             "three dense layers", build_lenet5),
    Workload("W6.attention", "nn.dot_product_attention B=4 S=1024 H=8 D=64 f32", attention_builder(attention)),
    Workload("W6.attention_by_hand", "softmax(q k^T / sqrt(d)) v written by hand, B=4 S=1024 H=8 D=64 f32",
             attention_builder(attention_by_hand)),
)
