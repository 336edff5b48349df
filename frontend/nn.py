"""cdnajit.nn: jax.nn's activations, normalizations and attention, traced into the graph IR.

Each function is jax.nn's definition (jax/_src/nn/functions.py) written with cdnajit.numpy and
cdnajit.lax, so its dtypes and numerics are JAX's: activations keep their operand's dtype (integers
promote where jnp's own ops promote), softmax subtracts the maximum first, gelu's default is the tanh
approximation, attention computes its logits and softmax in at least f32. Convolutions followed by
these activations, and attention, are what the dnn library matches (libs/dnn).

`nn.initializers` (nn_initializers.py) holds jax.nn.initializers, drawn with cdnajit.random.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import TracingTypeError, TracingValueError
from . import cnp, eager, lax
from . import nn_initializers as initializers
from .dtypes import is_inexact
from ..libs.dnn import mha
from .tracing import as_tracer, bind1, located

__all__ = ["identity", "relu", "relu6", "leaky_relu", "elu", "celu", "selu", "gelu", "silu", "swish", "sigmoid",
           "log_sigmoid", "softplus", "soft_sign", "hard_tanh", "hard_sigmoid", "hard_silu", "hard_swish", "mish",
           "squareplus", "tanh", "glu", "softmax", "log_softmax", "logsumexp", "standardize", "one_hot",
           "dot_product_attention", "initializers"]

# selu's constants: Klambauer et al., "Self-Normalizing Neural Networks" (2017), eq. 14.
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946

tanh = cnp.tanh


def to_inexact(x):
    """x as an array of an inexact dtype (jnp's promote_args_inexact for one operand)."""
    x = as_tracer(x)
    return x if is_inexact(x.type.dtype) else x.astype(cnp.promote_types(x.dtype, cnp.float32))


def typed_constant(value: float, like):
    """A constant in `like`'s dtype (jax.nn writes np.sqrt(...).astype(x.dtype): rounded to it first)."""
    return cnp.asarray(value, dtype=like.dtype)


# ---- activations: one line each, as jax.nn defines them ---------------------------------------

def identity(x):
    return cnp.asarray(x)


def relu(x):
    return cnp.maximum(x, 0)


def relu6(x):
    return cnp.minimum(cnp.maximum(x, 0), 6.0)


def leaky_relu(x, negative_slope=1e-2):
    x = cnp.asarray(x)
    return cnp.where(x >= 0, x, negative_slope * x)


def elu(x, alpha=1.0):
    x = cnp.asarray(x)
    # expm1 of the negative part only, so that a large positive x cannot overflow the unused branch.
    return cnp.where(x > 0, x, alpha * cnp.expm1(cnp.where(x > 0, 0.0, x)))


def celu(x, alpha=1.0):
    return cnp.maximum(x, 0.0) + alpha * cnp.expm1(cnp.minimum(x, 0.0) / alpha)


def selu(x):
    return SELU_SCALE * elu(x, SELU_ALPHA)


def gelu(x, approximate: bool = True):
    """x * Phi(x): the tanh approximation (Hendrycks and Gimpel 2016, section 2) by default, else erfc's."""
    x = to_inexact(x)
    if approximate:
        cdf = 0.5 * (1.0 + cnp.tanh(typed_constant(math.sqrt(2 / math.pi), x) * (x + 0.044715 * (x ** 3))))
        return x * cdf
    return (0.5 * x * lax.erfc(-x * typed_constant(math.sqrt(0.5), x))).astype(x.dtype)


def sigmoid(x):
    return lax.logistic(cnp.asarray(x))


def silu(x):
    x = cnp.asarray(x)
    return x * sigmoid(x)


swish = silu


def softplus(x):
    return cnp.logaddexp(x, 0)


def log_sigmoid(x):
    return -softplus(-cnp.asarray(x))


def soft_sign(x):
    x = cnp.asarray(x)
    return x / (cnp.abs(x) + 1)


def hard_tanh(x):
    x = cnp.asarray(x)
    return cnp.where(x > 1, 1, cnp.where(x < -1, -1, x))


def hard_sigmoid(x):
    return relu6(x + 3.0) / 6.0


def hard_silu(x):
    x = cnp.asarray(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def mish(x):
    x = cnp.asarray(x)
    return x * cnp.tanh(softplus(x))


def squareplus(x, b=4):
    x = cnp.asarray(x)
    return (x + cnp.sqrt(cnp.square(x) + b)) / 2


def glu(x, axis: int = -1):
    """The first half along `axis` gated by the sigmoid of the second (the axis must be even)."""
    x = cnp.asarray(x)
    size = x.shape[axis]
    if size % 2:
        raise TracingValueError(located(f"nn.glu splits axis {axis} in two halves; its size is {size} (odd) "
                                        f"in shape {x.shape}"))
    first, second = cnp.split(x, 2, axis)
    return first * sigmoid(second)


# ---- normalizations over axes -----------------------------------------------------------------

def softmax(x, axis=-1, where=None):
    """exp(x - max) / sum(exp(x - max)); masked-out elements (where=False) give 0."""
    x = cnp.asarray(x)
    x_max = cnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else cnp.where(where, x, -np.inf)
    unnormalized = cnp.exp(x_safe - lax.stop_gradient(x_max))
    result = unnormalized / cnp.sum(unnormalized, axis, where=where, keepdims=True)
    return result if where is None else cnp.where(where, result, 0)


def log_softmax(x, axis=-1, where=None):
    """x - max - log(sum(exp(x - max))); masked-out elements give -inf."""
    x = cnp.asarray(x)
    x_max = cnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else cnp.where(where, x, -np.inf)
    shifted = x_safe - lax.stop_gradient(x_max)
    result = shifted - cnp.log(cnp.sum(cnp.exp(shifted), axis, where=where, keepdims=True))
    return result if where is None else cnp.where(where, result, -np.inf)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """log(sum(b * exp(a))) without overflow (jax.nn.logsumexp, which is jax.scipy.special's)."""
    if where is not None:
        a = cnp.where(where, a, 0)
    if b is not None:
        a, b = promote_pair(a, b)
        a = cnp.where(b != 0, a, -np.inf)
    else:
        a = to_inexact(a)
    dims = tuple(range(a.ndim)) if axis is None else tuple(d % a.ndim for d in np.atleast_1d(axis).tolist())
    amax = cnp.max(cnp.real(a), axis=dims, keepdims=keepdims, where=where, initial=-np.inf)
    amax = lax.stop_gradient(cnp.where(cnp.isfinite(amax), amax, 0))
    amax_with_dims = amax if keepdims else lax.expand_dims(amax, dims)
    exp_a = cnp.exp(a - amax_with_dims.astype(a.dtype))
    if b is not None:
        exp_a = exp_a * b
    sumexp = cnp.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
    sign = cnp.sign(sumexp)
    if return_sign or not cnp.iscomplexobj(a):
        sumexp = cnp.abs(sumexp)
    out = cnp.log(sumexp) + amax.astype(sumexp.dtype)
    if return_sign:
        return out, sign
    if b is not None and not cnp.iscomplexobj(out):
        out = cnp.where(sign < 0, cnp.asarray(np.nan, dtype=out.dtype), out)
    return out


def promote_pair(a, b):
    """a and b promoted together, then to an inexact dtype (jnp's promote_args_inexact)."""
    a, b = cnp.asarray(a), cnp.asarray(b)
    dtype = cnp.result_type(a, b)
    if not cnp.issubdtype(dtype, cnp.inexact):
        dtype = cnp.promote_types(dtype, cnp.float32)
    return a.astype(dtype), b.astype(dtype)


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *, algorithm: str = "fast"):
    """(x - mean) / sqrt(variance + epsilon); "fast" takes mean(x^2) - mean^2 clipped at 0, "stable" two passes."""
    if mean is None:
        mean = cnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = cnp.mean(cnp.square(cnp.subtract(x, mean)), axis, keepdims=True, where=where)
        elif algorithm == "fast":
            variance = cnp.clip(cnp.mean(cnp.square(x), axis, keepdims=True, where=where) - cnp.square(mean), 0)
        else:
            raise TracingValueError(located(f"nn.standardize: unknown algorithm {algorithm!r}; "
                                            f"expected 'fast' or 'stable'"))
    return cnp.subtract(x, mean) * lax.rsqrt(variance + epsilon)


def one_hot(x, num_classes: int, *, dtype=None, axis: int = -1):
    """x[..., None] == arange(num_classes) along `axis`, in `dtype` (default float64: 64-bit types are on)."""
    x = cnp.asarray(x)
    if not isinstance(num_classes, (int, np.integer)) or isinstance(num_classes, bool):
        raise TracingTypeError(located(f"nn.one_hot: num_classes must be a static integer, got {num_classes!r}"))
    dtype = cnp.float_ if dtype is None else dtype
    out_axis = axis % (x.ndim + 1)
    classes = lax.broadcasted_iota(x.dtype, (1,) * out_axis + (int(num_classes),) + (1,) * (x.ndim - out_axis),
                                   out_axis)
    return (lax.expand_dims(x, (out_axis,)) == classes).astype(dtype)


# ---- attention ---------------------------------------------------------------------------------

def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None, is_causal: bool = False,
                          query_seq_lengths=None, key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual: bool = False):
    """softmax(Q K^T * scale + bias, masked) V over (batch, seq, heads, head_dim) arrays (BTNH).

    As jax.nn's "xla" implementation: logits and softmax in max(query dtype, f32), the probabilities
    cast to the key's dtype for the second product; masked logits take -0.7 * the largest f32; key and
    value may have fewer heads than the query (grouped-query attention). Rank-3 operands (TNH) get a
    batch of one. implementation="cudnn" runs one fused kernel instead, `library_call dnn.mha_fwd`
    (libs/dnn/mha.py: an online softmax, no S x S logits stored), for a mask and/or is_causal only.
    """
    if implementation not in (None, "xla", "cudnn"):
        raise NotImplementedError(f"nn.dot_product_attention: implementation={implementation!r}; cdnajit runs "
                                  f"the 'xla' formulation (None or 'xla') or the fused kernel dnn.mha_fwd ('cudnn')")
    query, key, value = cnp.asarray(query), cnp.asarray(key), cnp.asarray(value)
    output_shape = query.shape
    query, key, value = (rank4(t) for t in (query, key, value))
    bias = None if bias is None else rank4(cnp.asarray(bias))
    mask = None if mask is None else rank4(cnp.asarray(mask))
    B, S, K, H = key.shape
    check_attention_operand("value", value, (B, S, K, H), key.dtype)
    check_attention_operand("query", query, (B, -1, -1, H), key.dtype)
    check_attention_operand("mask", mask, (-1,) * 4, np.dtype(bool))
    check_attention_operand("bias", bias, (-1,) * 4, None)
    T, N = query.shape[1], query.shape[2]
    if N % K:
        raise TracingValueError(located(f"nn.dot_product_attention: the query's heads ({N}) must be a multiple of "
                                        f"the key/value heads ({K}); query {query.shape}, key {key.shape}"))
    G = N // K
    scale = 1.0 / math.sqrt(H) if scale is None else scale
    if implementation == "cudnn":
        fused = fused_attention(query, key, value, bias, mask, scale, is_causal, return_residual,
                                (query_seq_lengths, key_value_seq_lengths, local_window_size))
        return cnp.reshape(fused, output_shape)
    logits_dtype = cnp.promote_types(query.dtype, cnp.float32)
    grouped_query = cnp.reshape(query, (B, T, K, G, H))
    logits = cnp.einsum("BTKGH,BSKH->BKGTS", grouped_query, key, preferred_element_type=logits_dtype)
    logits = logits * cnp.asarray(scale, dtype=logits.dtype)
    if bias is not None:
        logits = (logits + grouped(bias, N, K, G)).astype(logits.dtype)
    keep = attention_mask(mask, is_causal, query_seq_lengths, key_value_seq_lengths, local_window_size, N, K, G, T, S)
    if keep is not None:
        large_negative = -0.7 * min(float(cnp.finfo(logits.dtype).max), float(cnp.finfo(cnp.float32).max))
        logits = cnp.where(keep, logits, cnp.asarray(large_negative, dtype=logits.dtype))
    logits = logits.astype(cnp.float32)  # jax.nn's softmax of attention is f32 whatever the operands
    probs = softmax(logits, axis=-1).astype(key.dtype)
    encoded = cnp.einsum("BKGTS,BSKH->BTKGH", probs, value)
    if query_seq_lengths is not None:
        valid_query = cnp.arange(T)[None, :] < cnp.asarray(query_seq_lengths)[:, None]
        encoded = encoded * valid_query[:, :, None, None, None].astype(encoded.dtype)
    encoded = cnp.reshape(encoded, output_shape)
    if not return_residual:
        return encoded
    residual = logsumexp(logits, axis=-1).astype(key.dtype)  # (B, K, G, T)
    residual = cnp.reshape(cnp.transpose(residual, (0, 3, 1, 2)), output_shape[:-1])
    return encoded, lax.stop_gradient(residual)


def fused_attention(query, key, value, bias, mask, scale, is_causal, return_residual, unsupported):
    """implementation="cudnn": one `library_call dnn.mha_fwd` (libs/dnn/mha.py), the mask broadcast to
    (B, N, T, S) bool; what the kernel does not take raises NotImplementedError naming it."""
    if bias is not None or return_residual or any(u is not None for u in unsupported):
        raise NotImplementedError("nn.dot_product_attention(implementation='cudnn'): the fused kernel dnn.mha_fwd "
                                  "takes no bias, sequence lengths, local window or residual; use implementation=None")
    B, T, N, _ = query.shape
    if mask is not None:
        mask = cnp.broadcast_to(mask, (B, N, T, key.shape[1]))
    operands = [as_tracer(t) for t in (query, key, value, *([] if mask is None else [mask]))]
    reason = mha.refuse(*(t.type for t in operands[:3]), None if mask is None else operands[3].type)
    if reason is not None:
        raise NotImplementedError(f"nn.dot_product_attention(implementation='cudnn'): dnn.mha_fwd does not take {reason}")
    return bind1("library_call", operands, dict(library="dnn", routine="mha_fwd", solution="", scale=float(scale),
                                                 is_causal=bool(is_causal)))


def rank4(t):
    return t if t.ndim >= 4 else cnp.expand_dims(t, tuple(range(4 - t.ndim)))


def check_attention_operand(name, t, shape, dtype):
    if t is None:
        return
    if t.ndim != len(shape) or any(want not in (-1, got) for want, got in zip(shape, t.shape)):
        wanted = tuple("*" if s == -1 else s for s in shape)
        raise TracingValueError(located(f"nn.dot_product_attention: {name} must have shape {wanted}, got {t.shape}"))
    if dtype is not None and t.dtype != dtype:
        raise TracingTypeError(located(f"nn.dot_product_attention: {name} must be {np.dtype(dtype).name}, "
                                       f"got {t.dtype}"))


def grouped(t, N, K, G):
    """A (b, n, t, s) bias or mask as (b, K, G, t, s) against the grouped logits (n is 1 or N)."""
    tB, tN, tT, tS = t.shape
    if tN == 1:
        return t[:, :, None]
    if tN != N:
        raise TracingValueError(located(f"nn.dot_product_attention: a bias or mask of shape {t.shape} has {tN} "
                                        f"heads; the query has {N}"))
    return cnp.reshape(t, (tB, K, G, tT, tS))


def attention_mask(mask, is_causal, q_seqlen, kv_seqlen, local_window_size, N, K, G, T, S):
    """The logits kept, (b, K, G, T, S) broadcastable, or None where every logit is kept."""
    keep = None if mask is None else grouped(mask, N, K, G)
    query_pos, key_pos = cnp.arange(T)[:, None], cnp.arange(S)[None, :]
    if is_causal:
        keep = combine(keep, query_pos >= key_pos)
    if local_window_size is not None:
        left, right = ((local_window_size, local_window_size) if isinstance(local_window_size, int)
                       else local_window_size)
        keep = combine(keep, (query_pos <= key_pos + left) & (query_pos >= key_pos - right))
    if q_seqlen is not None:
        keep = combine(keep, (cnp.arange(T)[None, :, None] < cnp.asarray(q_seqlen)[:, None, None])[:, None, None])
    if kv_seqlen is not None:
        keep = combine(keep, (cnp.arange(S)[None, None, :] < cnp.asarray(kv_seqlen)[:, None, None])[:, None, None])
    return keep


def combine(keep, more):
    return more if keep is None else cnp.logical_and(keep, more)


# Called outside jit, every function computes eagerly through the compiler (frontend/eager.py).
eager.make_namespace_eager(globals(), __all__, host_only=set())
