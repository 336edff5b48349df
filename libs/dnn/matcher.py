"""The DNN pattern table: convolutions in the graph become `library_call dnn.conv_fwd`, with the bias add
and the activation that follow them absorbed into the call's epilogue, as MIOpen's fusion API fuses
them (conv -> bias -> activation):

    y = activation(conv_general_dilated(x, w) + bias)

and window reductions (max, min, sum) whose last dimension is not pooled become `library_call dnn.pool`.

Each rule is a (pattern, rewrite) pair, as in libs/blas/matcher.py, run by passes/match_libraries.py
op by op, so the rules see the conv already matched and absorb the following ops one at a time, each
only while the call has not yet applied a later step. Every real dtype matches: the direct solver
takes them all (integers accumulate in their own dtype, wrapping, as the graph op's reference does).
"""
from __future__ import annotations

from ...ir.core import Op, Value
from ...ir.types import INTS, FLOATS
from ...passes.patterns import Pat
from ..blas.matcher import activation_rules
from ..blas.routines import ACTIVATIONS, split_epilogue
from . import im2col, pool, subpixel

CONV_ATTR_NAMES = ("window_strides", "padding", "lhs_dilation", "rhs_dilation", "lhs_spec", "rhs_spec", "out_spec",
                   "feature_group_count", "batch_group_count", "preferred_element_type")


def conv_from_graph(m, lhs, rhs, conv):
    """An lhs-dilated convolution's phases as stride-1 convolutions (subpixel.py), matched again; the im2col +
    GEMM rewrite where it applies (im2col.py); else a dnn.conv_fwd call."""
    if conv.result.type.dtype not in INTS + FLOATS:
        return None
    attrs = {name: conv.attrs[name] for name in CONV_ATTR_NAMES}
    if subpixel.refuse(lhs, rhs, attrs, conv.result.type) is None:
        return subpixel.sub_pixel(m, lhs, rhs, attrs, conv.result.type)
    if im2col.refuse(lhs, rhs, attrs) is None:
        return im2col.im2col_gemm(m, lhs, rhs, attrs, conv.result.type)
    return m.op("library_call", lhs, rhs, library="dnn", routine="conv_fwd", solution="", epilogue="none", **attrs)


def pooled(m, x, window):
    """reduce_window -> library_call dnn.pool, where pool.py's kernel applies."""
    if pool.refuse(x.type, window.attrs) is not None:
        return None
    return m.op("library_call", x, library="dnn", routine="pool", solution="", **window.attrs)


def absorbable(m, value: Value, inputs=()) -> Op | None:
    """The conv_fwd call computing `value`, if the matched ops are its only readers."""
    op = value.producer
    if op is None or op.name != "library_call" or op.attrs["library"] != "dnn" or not m.owns(value, inputs):
        return None
    return op


def rebuilt(m, call: Op, operands=None, **changes) -> Value:
    return m.op("library_call", *(operands or call.operands), **{**call.attrs, **changes})


def bias_vector(m, bias: Value, row: Op, features_dim: int, features: int) -> Value | None:
    """The (K,) vector a broadcast adds along the output features: broadcast_in_dim of a (K,) array onto
    the features dimension, or of an array whose only dimension of size K lands there (b[:, None, None])."""
    dims = row.attrs["broadcast_dimensions"]
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


x = Pat.var("x")
RULES = [
    # conv_general_dilated(x, w) -> library_call dnn.conv_fwd
    (Pat.op("conv_general_dilated", Pat.var("lhs"), Pat.var("rhs"), name="conv"), conv_from_graph),
    # reduce_window(x) max/min/sum, the last dimension not pooled -> library_call dnn.pool
    (Pat.op("reduce_window", Pat.var("x"), name="window"), pooled),
    # conv + broadcast(bias) along the output features (either operand order) -> epilogue "bias"
    (Pat.op("add", x, Pat.op("broadcast_in_dim", Pat.var("bias"), name="row")), added_bias),
    (Pat.op("add", Pat.op("broadcast_in_dim", Pat.var("bias"), name="row"), x), added_bias),
    # gelu (tanh and erf forms), silu, relu = max(x, 0), tanh, sigmoid -> the epilogue's activation
    *activation_rules(activated),
]
