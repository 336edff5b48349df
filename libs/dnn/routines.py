"""The DNN library's routines (ir/ops/library.py's contract), as MIOpen's convolution API names them.

    conv_fwd:  y = epilogue(conv_general_dilated(x, w) + bias)
    conv_bwd_data:     dx = conv_general_dilated(dy, rev(w))  (window strides 1: a transposed convolution)
    conv_bwd_weights:  dw = conv_general_dilated(x, dy)       (lhs dilation 1: a weight gradient's form)
    pool:      y = reduce_window(x) (max, min or sum)
    mha_fwd:   y = softmax(q k^T * scale, masked) v, fused (attention over (B, T, N, H) operands)

Operands: x and w as lax.conv_general_dilated takes them (any dimension numbers, 1-D to 3-D,
strides, padding, lhs/rhs dilation, feature and batch groups), then the bias (one value per output
feature, of y's dtype) when the epilogue starts with "bias". Attributes, beside library_call's own
(`library` = "dnn", `routine`, `solution`): conv_general_dilated's own (ir/ops/linalg.py's
CONV_ATTRS), and libs/blas's `epilogue` (EPILOGUES: "none", "bias", relu, relu6, sigmoid, tanh, silu,
gelu_tanh, gelu_erf or "clamp", or "bias_" + one), `clamp_min` and `clamp_max` (the clamp's bounds,
min(max(y, clamp_min), clamp_max), a float of y's dtype or None for no bound on that side; both None
unless the activation is clamp). The kernels take the bounds as scalar parameters, so one kernel serves
every bound.

The backward routines take the convolution attributes of the graph's convolution they replace, as
cj.grad's transpose rule (ir/ops/linalg.py: conv_vjp) writes it: conv_bwd_data's w is the forward
convolution's kernel, read with its spatial taps reversed (the rev the matcher absorbed), its lhs
dilation the forward stride; conv_bwd_weights's x and dy have batch and features swapped by the
specs, dy's rhs dilation is the forward stride. Both are ungrouped and have no epilogue; problem.py's
`ConvProblem.forward` names the forward convolution, as MIOpen's keys do.

The reference computes as the graph ops the matcher replaced did: the convolution's reference
(accumulated in the accumulator dtype, rounded once), then the bias and the activation, each rounded
to y's dtype; a kernel keeps the epilogue in the accumulator and rounds once.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ...ir.opdef import compute_dtype, require
from ...ir.ops.library import Routine
from ...ir.ops.linalg import CONV_ATTRS, conv_general_dilated, conv_infer
from ...ir.ops.reduce import reduce_window, reduce_window_infer
from ...ir.ops.shape import pad_array
from ...ir.types import FLOATS, NUMPY_DTYPES, TensorType
from ..blas.routines import EPILOGUES, activated, activation_dtypes, apply, check_clamp_bounds, splat, split_epilogue
from . import mha, winograd




def conv_fwd_infer(types, attrs):
    epilogue = attrs["epilogue"]
    require(epilogue in EPILOGUES,
            f"library_call: epilogue {epilogue!r} is not one of {', '.join(EPILOGUES)}")
    has_bias, activation = split_epilogue(epilogue)
    require(len(types) == 2 + has_bias, f"library_call: dnn.conv_fwd with epilogue {epilogue!r} takes "
                                        f"{2 + has_bias} operands (x, w{', bias' if has_bias else ''}), got {len(types)}")
    [result] = conv_infer(types[:2], attrs, ())
    features = result.shape[attrs["out_spec"][1]]
    if has_bias:
        require(types[2] == TensorType(result.dtype, (features,)),
                f"library_call: dnn.conv_fwd's bias must be {result.dtype}[{features}], got {types[2]}")
    if activation is not None:
        require(result.dtype in activation_dtypes(activation),
                f"library_call: epilogue {epilogue!r} is not defined on {result.dtype}")
    check_clamp_bounds("library_call: dnn.conv_fwd", activation, attrs)
    return [result]


def conv_fwd_reference(x, w, *bias, epilogue, clamp_min, clamp_max, **conv_attrs):
    y = conv_general_dilated(x, w, **conv_attrs)
    return with_epilogue(y, bias, epilogue, clamp_min, clamp_max, conv_attrs["out_spec"][1])


def with_epilogue(y, bias, epilogue, clamp_min, clamp_max, features_dim):
    """y's bias (along `features_dim`) and activation, as the graph ops the matcher absorbed compute them."""
    has_bias, activation = split_epilogue(epilogue)
    if has_bias:
        shape = [1] * y.ndim
        shape[features_dim] = -1
        y = apply("add", y, np.broadcast_to(bias[0].reshape(shape), y.shape))
    return activated(y, activation, clamp_min, clamp_max)


def ungrouped_conv_infer(routine: str, fixed: str, types, attrs):
    """A backward routine's shape rule: conv_general_dilated's, with attribute `fixed` (window_strides
    or lhs_dilation) all 1s and no groups."""
    require(len(types) == 2, f"library_call: dnn.{routine} takes two operands, got {len(types)}")
    require(all(v == 1 for v in attrs[fixed]) and attrs["feature_group_count"] == attrs["batch_group_count"] == 1,
            f"library_call: dnn.{routine} takes convolutions of {fixed} 1 without groups, got {fixed} "
            f"{list(attrs[fixed])}, feature_group_count {attrs['feature_group_count']}, batch_group_count "
            f"{attrs['batch_group_count']}")
    return conv_infer(types, attrs, ())


def conv_bwd_data_reference(dy, w, **conv_attrs):
    return conv_general_dilated(dy, np.flip(w, axis=tuple(conv_attrs["rhs_spec"][2:])), **conv_attrs)


IM2COL_ATTRS = {"window": "ints", "window_strides": "ints", "padding": "int_pairs", "lhs_dilation": "ints",
                "rhs_dilation": "ints", "lhs_spec": "ints"}


def im2col_sizes(x: TensorType, attrs) -> tuple[int, list[int], int]:
    """(batch, output sizes, features) of im2col's x."""
    spec = attrs["lhs_spec"]
    out = []
    for j, window in enumerate(attrs["window"]):
        size = x.shape[spec[2 + j]]
        dilated = (size - 1) * attrs["lhs_dilation"][j] + 1 if size > 0 else 0
        padded = dilated + sum(attrs["padding"][j])
        span = (window - 1) * attrs["rhs_dilation"][j] + 1
        out.append((padded - span) // attrs["window_strides"][j] + 1 if padded >= span else 0)
    return x.shape[spec[0]], out, x.shape[spec[1]]


def im2col_infer(types, attrs):
    require(len(types) == 1, f"library_call: dnn.im2col takes one operand (x), got {len(types)}")
    [x] = types
    require(len(attrs["lhs_spec"]) == x.ndim and len(attrs["window"]) == x.ndim - 2,
            f"library_call: dnn.im2col's lhs_spec and window do not fit x {x}")
    batch, out, features = im2col_sizes(x, attrs)
    return [TensorType(x.dtype, (batch * int(np.prod(out)), int(np.prod(attrs["window"])) * features))]


def im2col_reference(x, *, window, window_strides, padding, lhs_dilation, rhs_dilation, lhs_spec):
    """patches[(n, o...), (t..., c)] = x[n, c, o*stride + t*rdil - pad] (zero on padding and dilation holes)."""
    xt = np.transpose(x, (lhs_spec[0], *lhs_spec[2:], lhs_spec[1]))
    padded = pad_array(xt, 0, [0] + [lo for lo, _ in padding] + [0], [0] + [hi for _, hi in padding] + [0],
                       [0] + [d - 1 for d in lhs_dilation] + [0])
    batch, out, features = im2col_sizes(TensorType("f32", x.shape), dict(
        window=window, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, lhs_spec=lhs_spec))
    taps = []
    for tap in np.ndindex(*window):
        index = tuple(slice(t * r, t * r + (o - 1) * s + 1, s) for t, r, o, s in zip(tap, rhs_dilation, out, window_strides))
        taps.append(padded[(slice(None), *index, slice(None))])
    return np.stack(taps, axis=-2).reshape(batch * int(np.prod(out)), -1)


# scale: the result times a constant after the reduction (an average pool's 1/window), 1.0 for none.
POOL_ATTRS = {"reducer": "str", "window_dimensions": "ints", "window_strides": "ints", "padding": "int_pairs",
              "base_dilation": "ints", "window_dilation": "ints", "scale": "float"}


def pool_infer(types, attrs):
    require(len(types) == 1, f"library_call: dnn.pool takes one operand (x), got {len(types)}")
    require(attrs["scale"] == 1.0 or types[0].dtype in FLOATS,
            f"library_call: dnn.pool scales float results only, got scale {attrs['scale']} of {types[0].dtype}")
    return reduce_window_infer(types, {k: v for k, v in attrs.items() if k != "scale"}, ())


def pool_reference(x, *, scale, **window):
    """reduce_window, then the graph's multiplication by the scale in the result's dtype."""
    y = reduce_window(x, **window)
    return y if scale == 1.0 else apply("mul", y, splat(scale, y))


def winograd_input_infer(types, attrs):
    require(len(types) == 1 and types[0].ndim == 4, f"library_call: dnn.winograd_input takes one 2-D convolution's x, got {types}")
    [x] = types
    spec = attrs["lhs_spec"]
    out = [x.shape[spec[2 + j]] + sum(attrs["padding"][j]) - 2 for j in range(2)]
    require(attrs["tile"] in winograd.TRANSFORMS and min(out) > 0,
            f"library_call: dnn.winograd_input takes tiles {list(winograd.TRANSFORMS)} and a nonempty output, got "
            f"tile {attrs['tile']}, output {out}")
    window = winograd.row_window(x, spec, attrs["tile"])
    require(attrs["row_window"] in (0, window),
            f"library_call: dnn.winograd_input's row_window is 0 or {window} for x {x} with lhs_spec {list(spec)}, "
            f"got {attrs['row_window']}")
    count = x.shape[spec[0]] * int(np.prod(winograd.tiles(out, attrs["tile"])))
    return [TensorType(x.dtype, (winograd.points(attrs["tile"]), count, x.shape[spec[1]]))]


def winograd_input_reference(x, *, tile, padding, lhs_spec, row_window):
    """V[p, t, c]: B^T d B of each input tile d (zero outside x), in the accumulator dtype, rounded once
    (row_window is how the kernel reads x, not what it computes)."""
    a, acc = tile + 2, compute_dtype(x.dtype)
    xt = np.transpose(x, (lhs_spec[0], lhs_spec[1], *lhs_spec[2:])).astype(acc)
    out = [xt.shape[2 + j] + sum(padding[j]) - 2 for j in range(2)]
    rows, cols = winograd.tiles(out, tile)
    padded = pad_array(xt, 0, [0, 0, padding[0][0], padding[1][0]],
                       [0, 0, rows * tile + 2 - xt.shape[2] - padding[0][0], cols * tile + 2 - xt.shape[3] - padding[1][0]],
                       [0, 0, 0, 0])
    d = np.stack([np.stack([padded[:, :, r * tile:r * tile + a, s * tile:s * tile + a] for s in range(cols)], 1)
                  for r in range(rows)], 1)       # (N, rows, cols, C, a, a)
    v = winograd.numpy_transform(winograd.TRANSFORMS[tile][0], d).astype(x.dtype)
    return np.moveaxis(v.reshape(-1, xt.shape[1], a * a), 2, 0).copy()


def winograd_filter_infer(types, attrs):
    require(len(types) == 1 and types[0].ndim == 4 and [types[0].shape[d] for d in attrs["rhs_spec"][2:]] == [3, 3]
            and attrs["tile"] in winograd.TRANSFORMS,
            f"library_call: dnn.winograd_filter takes a 3x3 kernel and tile {list(winograd.TRANSFORMS)}, got {types}, "
            f"tile {attrs['tile']}")
    [w] = types
    return [TensorType(w.dtype, (winograd.points(attrs["tile"]), w.shape[attrs["rhs_spec"][1]], w.shape[attrs["rhs_spec"][0]]))]


def winograd_filter_reference(w, *, tile, rhs_spec):
    """U[p, c, k]: G g G^T of each 3x3 kernel g, in the accumulator dtype, rounded once."""
    g = np.transpose(w, (rhs_spec[1], rhs_spec[0], *rhs_spec[2:])).astype(compute_dtype(w.dtype))
    u = winograd.numpy_transform(winograd.TRANSFORMS[tile][1], g).astype(w.dtype)
    return np.moveaxis(u.reshape(g.shape[0], g.shape[1], -1), 2, 0).copy()


WINOGRAD_OUTPUT_ATTRS = {"tile": "int", "out_spec": "ints", "out_size": "ints", "result_dtype": "str", "epilogue": "str",
                         "clamp_min": "float?", "clamp_max": "float?"}


def winograd_output_infer(types, attrs):
    tile, out = attrs["tile"], attrs["out_size"]
    counts = int(np.prod(winograd.tiles(out, tile))) if tile in winograd.TRANSFORMS and min(out) > 0 else 0
    product = types[0]
    require(counts and product.ndim == 3 and product.shape[0] == winograd.points(tile) and product.shape[1] % counts == 0,
            f"library_call: dnn.winograd_output takes M[(tile + 2)^2, N * tiles, K] for tile {tile}, output {list(out)}, "
            f"got {product}")
    has_bias, activation = split_epilogue(attrs["epilogue"])
    dtype, features = attrs["result_dtype"], product.shape[2]
    require(attrs["epilogue"] in EPILOGUES and len(types) == 1 + has_bias and
            (not has_bias or types[1] == TensorType(dtype, (features,))),
            f"library_call: dnn.winograd_output with epilogue {attrs['epilogue']!r} takes M and "
            f"{'a bias ' + dtype + f'[{features}]' if has_bias else 'no bias'}, got {types}")
    shape = [0] * 4
    for dim, size in zip(attrs["out_spec"], (product.shape[1] // counts, features, *out)):
        shape[dim] = size
    return [TensorType(dtype, tuple(shape))]


def winograd_output_reference(product, *bias, tile, out_spec, out_size, result_dtype, epilogue, clamp_min, clamp_max):
    """y: A^T M A of each tile, cut to the output, rounded to y's dtype, then the epilogue."""
    rows, cols = winograd.tiles(out_size, tile)
    points = product.reshape(tile + 2, tile + 2, -1, rows, cols, product.shape[2])   # (a, a, N, rows, cols, K)
    y = winograd.numpy_transform(winograd.TRANSFORMS[tile][2], np.transpose(points, (2, 5, 3, 4, 0, 1)))
    y = np.transpose(y, (0, 1, 2, 4, 3, 5)).reshape(y.shape[0], y.shape[1], rows * tile, cols * tile)
    y = y[:, :, :out_size[0], :out_size[1]].astype(NUMPY_DTYPES[result_dtype])
    y = np.transpose(y, np.argsort(out_spec))
    return with_epilogue(y, bias, epilogue, clamp_min, clamp_max, out_spec[1])


MHA_ATTRS = {"scale": "float", "is_causal": "bool"}


def mha_fwd_infer(types, attrs):
    require(len(types) in (3, 4), f"library_call: dnn.mha_fwd takes q, k, v and an optional mask, got {len(types)} operands")
    reason = mha.refuse(*types[:3], types[3] if len(types) == 4 else None)
    require(reason is None, f"library_call: dnn.mha_fwd does not take {reason}")
    return [types[0]]


def mha_fwd_reference(q, k, v, *mask, scale, is_causal):
    """The naive formula: the (B, N, T, S) logits in f32, masked logits -0.7 * max f32, the softmax in f32,
    the probabilities times v accumulated in f32 and rounded once to q's dtype."""
    B, T, N, H = q.shape
    S, G = k.shape[1], N // k.shape[2]
    kf, vf = (np.repeat(a.astype(np.float32), G, axis=2) for a in (k, v))
    logits = np.einsum("btnh,bsnh->bnts", q.astype(np.float32), kf) * np.float32(scale)
    keep = np.ones((B, N, T, S), bool) if not mask else mask[0].copy()
    if is_causal:
        keep &= np.tril(np.ones((T, S), bool))
    logits = np.where(keep, logits, np.float32(mha.MASKED))
    e = np.exp(logits - logits.max(axis=-1, keepdims=True)) if S else logits
    probs = e / e.sum(axis=-1, keepdims=True)
    return np.einsum("bnts,bsnh->btnh", probs, vf).astype(q.dtype)


ROUTINES = {"winograd_input": Routine({"tile": "int", "padding": "int_pairs", "lhs_spec": "ints", "row_window": "int"},
                                      winograd_input_infer, winograd_input_reference, "V[p, t, c] = (B^T d B)[p] of x's tiles (libs/dnn/winograd.py)"),
            "winograd_filter": Routine({"tile": "int", "rhs_spec": "ints"}, winograd_filter_infer, winograd_filter_reference,
                                       "U[p, c, k] = (G g G^T)[p] of w's 3x3 kernels (libs/dnn/winograd.py)"),
            "winograd_output": Routine(WINOGRAD_OUTPUT_ATTRS, winograd_output_infer, winograd_output_reference,
                                       "y = epilogue(A^T M A + bias) of M's tiles (libs/dnn/winograd.py)"),
            "mha_fwd": Routine(MHA_ATTRS, mha_fwd_infer, mha_fwd_reference,
                               "y = softmax(q k^T * scale, masked) v, one fused kernel (libs/dnn/mha.py)"),
            "pool": Routine(POOL_ATTRS, pool_infer, pool_reference,
                            "y = reduce_window(x) with max, min or sum, times scale (libs/dnn/pool.py)"),
            "im2col": Routine(IM2COL_ATTRS, im2col_infer, im2col_reference,
                              "patches[(n, o...), (t..., c)] of x: im2col + GEMM's first step (libs/dnn/im2col.py)"),
            "conv_fwd": Routine({**CONV_ATTRS, "epilogue": "str", "clamp_min": "float?", "clamp_max": "float?"}, conv_fwd_infer, conv_fwd_reference,
                                "y = epilogue(conv_general_dilated(x, w) + bias) (libs/dnn/routines.py)"),
            "conv_bwd_data": Routine(CONV_ATTRS, partial(ungrouped_conv_infer, "conv_bwd_data", "window_strides"),
                                     conv_bwd_data_reference,
                "dx = conv_general_dilated(dy, rev(w)), a convolution's backward data (libs/dnn/routines.py)"),
            "conv_bwd_weights": Routine(CONV_ATTRS, partial(ungrouped_conv_infer, "conv_bwd_weights", "lhs_dilation"),
                                        conv_general_dilated,
                "dw = conv_general_dilated(x, dy), a convolution's backward weights (libs/dnn/routines.py)")}
