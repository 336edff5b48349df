"""The DNN pattern table: convolutions in the graph become `library_call dnn.conv_fwd` (or, in the
backward forms, dnn.conv_bwd_data and dnn.conv_bwd_weights: see conv_from_graph), with the bias add
and the activation that follow them absorbed into the call's epilogue, as MIOpen's fusion API fuses
them (conv -> bias -> activation):

    y = activation(conv_general_dilated(x, w) + bias)

and window reductions (max, min, sum) become `library_call dnn.pool`.

Each rule is a (pattern, rewrite) pair, as in libs/blas/matcher.py, run by passes/match_libraries.py
op by op, so the rules see the conv already matched and absorb the following ops one at a time, each
only while the call has not yet applied a later step. Every real dtype matches: the direct solver
takes them all (integers accumulate in their own dtype, wrapping, as the graph op's reference does).
"""
from __future__ import annotations

import math

from ...ir.core import Op, Value
from ...ir.types import INTS, FLOATS
from ...passes.patterns import Pat, splat_value
from ..blas.matcher import activation_rules, bounded, clamp_bounds, hard_tanh_bounds
from ..blas.routines import ACTIVATIONS, split_epilogue
from . import attention, blocked, fft_conv, im2col, pool, subpixel, winograd

CONV_ATTR_NAMES = ("window_strides", "padding", "lhs_dilation", "rhs_dilation", "lhs_spec", "rhs_spec", "out_spec",
                   "feature_group_count", "batch_group_count", "preferred_element_type")


def conv_from_graph(m, lhs, rhs, conv):
    """In this order (each measured faster on the host than what follows it, where both apply): an
    lhs-dilated convolution's phases as stride-1 convolutions (subpixel.py), matched again; FFT convolution
    where its model beats im2col + GEMM's and Winograd's (fft_conv.py: large windows, 11x11 ran 1.3-1.8x
    faster than im2col + GEMM on the host); Winograd
    F(2x2, 3x3) or F(4x4, 3x3) for 3x3 stride-1 convolutions where its model beats im2col + GEMM's
    (winograd.py: W6's conv ran 2.5-3x faster than im2col + GEMM on the host); small forward convolutions
    (blocked.py: few input features times taps, few output features) as dnn.conv_fwd, whose blocked direct
    solver ran LeNet-5 1.4x faster than im2col + GEMM on the host; the im2col +
    GEMM rewrite where it applies (im2col.py; weight gradients too: on W6's and W18's it ran 17x and 2x
    faster than dnn.conv_bwd_weights' LDS-tiled kernel, which keeps the gradients whose patches exceed
    im2col's memory limit); a weight gradient's form as dnn.conv_bwd_weights; a convolution with a
    reversed kernel as dnn.conv_bwd_data; else a dnn.conv_fwd call."""
    if conv.result.type.dtype not in INTS + FLOATS:
        return None
    attrs = {name: conv.attrs[name] for name in CONV_ATTR_NAMES}
    if subpixel.refuse(lhs, rhs, attrs, conv.result.type) is None:
        return subpixel.sub_pixel(m, lhs, rhs, attrs, conv.result.type)
    if fft_conv.chosen(lhs, rhs, attrs, conv.result.type)[0]:
        return fft_conv.fft_conv(m, lhs, rhs, attrs, conv.result.type)
    im2col_applies = im2col.refuse(lhs, rhs, attrs) is None
    tile, _ = winograd.choose(lhs, rhs, attrs, im2col_applies)
    if tile is not None:
        return winograd.winograd_conv(m, lhs, rhs, attrs, conv.result.type, tile)
    if im2col_applies and (winograd.im2col_forced() or not small_forward(lhs, rhs, attrs, conv.result.type)):
        return im2col.im2col_gemm(m, lhs, rhs, attrs, conv.result.type)
    if is_weight_gradient(rhs, attrs, conv.result.type):
        return m.op("library_call", lhs, rhs, library="dnn", routine="conv_bwd_weights", solution="", **attrs)
    reversed_w = reversed_kernel(rhs, attrs)
    if reversed_w is not None:
        return m.op("library_call", lhs, reversed_w, library="dnn", routine="conv_bwd_data", solution="", **attrs)
    return m.op("library_call", lhs, rhs, library="dnn", routine="conv_fwd", solution="", epilogue="none",
                clamp_min=None, clamp_max=None, **attrs)


def small_forward(lhs: Value, rhs: Value, attrs, result_type) -> bool:
    """Whether dnn.conv_fwd's blocked direct solver takes the convolution (few input features times taps, few
    output features; blocked.py): it ran LeNet-5's convolutions faster than im2col + GEMM on the host."""
    spec = attrs["rhs_spec"]
    return ungrouped(attrs) and all(d == 1 for d in attrs["lhs_dilation"]) and lhs.type.dtype in FLOATS and \
        blocked.small(rhs.type.shape[spec[1]], [rhs.type.shape[d] for d in spec[2:]], rhs.type.shape[spec[0]]) and \
        reversed_kernel(rhs, attrs) is None and not is_weight_gradient(rhs, attrs, result_type)


def ungrouped(attrs) -> bool:
    return attrs["feature_group_count"] == 1 and attrs["batch_group_count"] == 1


def reversed_kernel(rhs: Value, attrs) -> Value | None:
    """w, where the convolution reads rev(w) along exactly its spatial dimensions with window strides 1 and
    no groups: the backward data of a convolution (cj.grad's form, lax.conv_transpose(transpose_kernel=True)'s)."""
    op = rhs.producer
    if op is None or op.name != "rev" or sorted(op.attrs["dimensions"]) != sorted(attrs["rhs_spec"][2:]):
        return None
    if any(s != 1 for s in attrs["window_strides"]) or not ungrouped(attrs):
        return None
    return op.operands[0]


def is_weight_gradient(rhs: Value, attrs, result_type) -> bool:
    """Whether an ungrouped convolution without lhs dilation has a window of more positions than its
    output (cj.grad's weight gradient: x convolved with dy, whose positions are the window, into the
    kernel's positions)."""
    spec, out_spec = attrs["rhs_spec"], attrs["out_spec"]
    window = math.prod(rhs.type.shape[d] for d in spec[2:])
    return ungrouped(attrs) and all(d == 1 for d in attrs["lhs_dilation"]) and \
        window > math.prod(result_type.shape[d] for d in out_spec[2:])


def pooled(m, x, window):
    """reduce_window -> library_call dnn.pool, where pool.py's kernel applies."""
    if pool.refuse(x.type, window.attrs) is not None:
        return None
    return m.op("library_call", x, library="dnn", routine="pool", solution="", scale=1.0, **window.attrs)


def scaled_pool(m, x, factor, divided=False):
    """dnn.pool(x) * c of a float constant c (an average pool: the sum times 1/window) -> the pool's scale;
    dnn.pool(x) / c too where c is a power of two (then x / c and x * (1 / c) round alike)."""
    op, value = x.producer, splat_value(factor)
    if divided:
        if value is None or not math.isfinite(value) or value == 0 or math.frexp(float(value))[0] not in (0.5, -0.5):
            return None
        value = 1 / float(value)
    if op is None or op.name != "library_call" or op.attrs["library"] != "dnn" or op.attrs["routine"] != "pool" \
            or op.attrs["scale"] != 1.0 or value is None or x.type.dtype not in FLOATS \
            or factor.type.dtype != x.type.dtype or not m.owns(x, [factor]):
        return None
    return rebuilt(m, op, scale=float(value))


def absorbable(m, value: Value, inputs=()) -> Op | None:
    """The call computing `value` that takes an epilogue (conv_fwd, winograd_output), if the matched ops are its
    only readers."""
    op = value.producer
    if op is None or op.name != "library_call" or op.attrs["library"] != "dnn" or op.attrs["routine"] not in EPILOGUE_ROUTINES \
            or not m.owns(value, inputs):
        return None
    return op


# The routines whose call applies a bias and an activation to its result.
EPILOGUE_ROUTINES = ("conv_fwd", "winograd_output")


def rebuilt(m, call: Op, operands=None, **changes) -> Value:
    return m.op("library_call", *(operands or call.operands), **{**call.attrs, **changes})


def bias_vector(m, bias: Value, row: Op, features_dim: int, features: int) -> Value | None:
    """The (K,) vector a broadcast adds along the output features: broadcast_in_dim of a (K,) array onto
    the features dimension, or of an array whose only dimension of size K lands there (b[:, None, None]);
    with one feature, any one-element array (it adds the same value everywhere)."""
    dims = row.attrs["broadcast_dimensions"]
    if features == 1 and math.prod(bias.type.shape) == 1:
        return bias if bias.type.shape == (1,) else m.op("reshape", bias, new_sizes=(1,))
    sized = [i for i, size in enumerate(bias.type.shape) if size != 1]
    if len(sized) != 1 or dims[sized[0]] != features_dim or bias.type.shape[sized[0]] != features:
        return None
    return bias if bias.type.ndim == 1 else m.op("reshape", bias, new_sizes=(features,))


def added_bias(m, x, bias, row):
    call = absorbable(m, x, inputs=[bias])
    if call is None or call.attrs["epilogue"] != "none" or bias.type.dtype != x.type.dtype:
        return None
    features_dim = call.attrs["out_spec"][1]
    vector = bias_vector(m, bias, row, features_dim, x.type.shape[features_dim])
    return None if vector is None else rebuilt(m, call, [*call.operands, vector], epilogue="bias")


def activated(name):
    """The rewrite applying activation `name` to the conv_fwd call bound to x."""
    def rewrite(m, x):
        call = absorbable(m, x)
        if call is None or split_epilogue(call.attrs["epilogue"])[1] is not None \
                or x.type.dtype not in ACTIVATIONS[name][1]:
            return None
        return rebuilt(m, call, epilogue=name if call.attrs["epilogue"] == "none" else f"bias_{name}")
    return rewrite


def clamped(side: str):
    """The rewrite absorbing max(x, c) or min(x, c) of a constant c into the conv_fwd call bound to x
    (lax.clamp, cnp.clip, nn.relu6 write them), as its clamp epilogue (only floats: the bounds are floats;
    only finite bounds: max and min of a NaN propagate it, which the clamp epilogue does not)."""
    def rewrite(m, x, bound):
        call = absorbable(m, x, inputs=[bound])
        value = splat_value(bound)
        if call is None or value is None or not math.isfinite(value) or x.type.dtype not in FLOATS \
                or bound.type.dtype != x.type.dtype or clamp_bounds(call.attrs) is None:
            return None
        low, high = bounded(side, float(value), *clamp_bounds(call.attrs))
        has_bias = split_epilogue(call.attrs["epilogue"])[0]
        return rebuilt(m, call, epilogue="bias_clamp" if has_bias else "clamp", clamp_min=low, clamp_max=high)
    return rewrite


def hard_tanh(m, x, high, high_value, low, low_value):
    """where(x > hi, hi, where(x < lo, lo, x)) of constants lo <= hi (nn.hard_tanh's form) = clamp(lo, x, hi)."""
    bounds = hard_tanh_bounds(high, high_value, low, low_value)
    call = absorbable(m, x, inputs=[high, high_value, low, low_value])
    if bounds is None or call is None or x.type.dtype not in FLOATS or clamp_bounds(call.attrs) != (None, None) \
            or any(v.type.dtype != x.type.dtype for v in (high, high_value, low, low_value)):
        return None
    has_bias = split_epilogue(call.attrs["epilogue"])[0]
    return rebuilt(m, call, epilogue="bias_clamp" if has_bias else "clamp", clamp_min=bounds[0], clamp_max=bounds[1])


x = Pat.var("x")
RULES = [
    # conv_general_dilated(x, w) -> library_call dnn.conv_fwd
    (Pat.op("conv_general_dilated", Pat.var("lhs"), Pat.var("rhs"), name="conv"), conv_from_graph),
    # softmax(q k^T * scale [masked]) v: the second product's BLAS GEMM -> library_call dnn.mha_fwd (attention.py)
    (Pat.op("library_call", Pat.var("probs"), Pat.var("values"), name="gemm"), attention.attention),
    # reduce_window(x) max/min/sum -> library_call dnn.pool
    (Pat.op("reduce_window", Pat.var("x"), name="window"), pooled),
    # pool * c (canonicalize puts the constant second), pool / 2^k -> the pool's scale
    (Pat.op("mul", x, Pat.var("factor")), scaled_pool),
    (Pat.op("div", x, Pat.var("factor")), lambda m, x, factor: scaled_pool(m, x, factor, divided=True)),
    # conv + broadcast(bias) along the output features (either operand order) -> epilogue "bias"
    (Pat.op("add", x, Pat.op("broadcast_in_dim", Pat.var("bias"), name="row")), added_bias),
    (Pat.op("add", Pat.op("broadcast_in_dim", Pat.var("bias"), name="row"), x), added_bias),
    # gelu (tanh and erf forms), silu, relu = max(x, 0), tanh, sigmoid -> the epilogue's activation (before
    # the clamp rules: max(x, 0) is relu, which a following min(., c) makes a clamp)
    *activation_rules(activated),
    # max(x, c), min(x, c) of a constant (either operand order) -> the clamp epilogue, the bounds composed
    *[(Pat.op(side, *operands), clamped(side)) for side in ("max", "min")
      for operands in [(x, Pat.var("bound")), (Pat.var("bound"), x)]],
    # where(x > hi, hi, where(x < lo, lo, x)) (nn.hard_tanh) -> the clamp epilogue
    (Pat.op("select", Pat.op("gt", x, Pat.var("high")), Pat.var("high_value"),
            Pat.op("select", Pat.op("lt", x, Pat.var("low")), Pat.var("low_value"), x)), hard_tanh),
]
