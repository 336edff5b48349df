"""The DNN library's routines (ir/ops/library.py's contract), as MIOpen's convolution API names them.

    conv_fwd:  y = epilogue(conv_general_dilated(x, w) + bias)

Operands: x and w as lax.conv_general_dilated takes them (any dimension numbers, 1-D to 3-D,
strides, padding, lhs/rhs dilation, feature and batch groups), then the bias (one value per output
feature, of y's dtype) when the epilogue starts with "bias". Attributes, beside library_call's own
(`library` = "dnn", `routine`, `solution`): conv_general_dilated's own (ir/ops/linalg.py's
CONV_ATTRS) and `epilogue`: "none", "bias", an activation of libs/blas (relu, sigmoid, tanh, silu,
gelu_tanh, gelu_erf) or "bias_" + one.

The reference computes as the graph ops the matcher replaced did: the convolution's reference
(accumulated in the accumulator dtype, rounded once), then the bias and the activation, each rounded
to y's dtype; a kernel keeps the epilogue in the accumulator and rounds once.
"""
from __future__ import annotations

import numpy as np

from ...ir.opdef import require
from ...ir.ops.library import Routine
from ...ir.ops.linalg import CONV_ATTRS, conv_general_dilated, conv_infer
from ...ir.types import TensorType
from ..blas.routines import ACTIVATIONS, EPILOGUES, apply, split_epilogue


def conv_fwd_infer(types, attrs):
    epilogue = attrs["epilogue"]
    require(epilogue in EPILOGUES, f"library_call: epilogue {epilogue!r} is not one of {', '.join(EPILOGUES)}")
    has_bias, activation = split_epilogue(epilogue)
    require(len(types) == 2 + has_bias, f"library_call: dnn.conv_fwd with epilogue {epilogue!r} takes "
                                        f"{2 + has_bias} operands (x, w{', bias' if has_bias else ''}), got {len(types)}")
    [result] = conv_infer(types[:2], attrs, ())
    features = result.shape[attrs["out_spec"][1]]
    if has_bias:
        require(types[2] == TensorType(result.dtype, (features,)),
                f"library_call: dnn.conv_fwd's bias must be {result.dtype}[{features}], got {types[2]}")
    if activation is not None:
        require(result.dtype in ACTIVATIONS[activation][1],
                f"library_call: epilogue {epilogue!r} is not defined on {result.dtype}")
    return [result]


def conv_fwd_reference(x, w, *bias, epilogue, **conv_attrs):
    y = conv_general_dilated(x, w, **conv_attrs)
    has_bias, activation = split_epilogue(epilogue)
    if has_bias:
        shape = [1] * y.ndim
        shape[conv_attrs["out_spec"][1]] = -1
        y = apply("add", y, np.broadcast_to(bias[0].reshape(shape), y.shape))
    return y if activation is None else ACTIVATIONS[activation][0](y)


ROUTINES = {"conv_fwd": Routine({**CONV_ATTRS, "epilogue": "str"}, conv_fwd_infer, conv_fwd_reference,
                                "y = epilogue(conv_general_dilated(x, w) + bias) (libs/dnn/routines.py)")}
