"""Hand-written attention -> `library_call dnn.mha_fwd` (mha.py's fused kernel), as a rule of the DNN
pattern table: softmax(q k^T * scale [masked]) v over (batch, seq, heads, head_dim) operands, as a user
writes it in lax or cnp:

    logits = dot_general(q, k, contracting head_dim, batch (b, n)) * scale     (or / c)
    logits = where(mask, logits, fill)                  optional, fill <= -1e9 (f16: <= finfo.min / 2)
    weights = nn.softmax(logits, axis=-1)        exp(logits - max) / sum(exp(logits - max))
    y = dot_general(weights, v, contracting s, batch (b, n)), transposed back to (b, t, n, h)

The BLAS rules see both products first (libs register in order; blas before dnn), so the rule is
rooted at the second product's `library_call blas.strided_batched_gemm` and walks back through the
reshapes and transposes the BLAS rewrite put around its operands, to q, k, v and the mask.

When: the fused kernel never stores the B x N x T x S logits, which the default formulation writes
and reads three times (the logits, the exponentials, the probabilities). On the host the two ran at
par (B=4 S=1024 N=8 H=64 f32: the fused kernel 0.95-1.13x the default's time, interleaved on a
loaded host; at B=1 S=6144 N=8 H=64, 1.2 GiB of logits, 5.7 s against 4.8 s, JAX 15.2 s), so the rule
takes the fused kernel where memory decides: logits above MAX_LOGIT_BYTES (im2col's limit for its
patches), or where `fused()` forces it (tests, a user's choice).
A fill of -inf is left alone (a row with every key masked is NaN there, the kernel's average of v);
so are other dtypes than the kernel's, products with a preferred element type, and operands with a
sequence or head count of 1 (the BLAS rewrite views them without the transposes the rule follows).
"""
from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np

from ...ir.core import Op, Value
from ...ir.types import NUMPY_DTYPES
from ...passes.patterns import splat_value
from . import mha

MAX_LOGIT_BYTES = 1 << 30
# A masked logit must vanish in exp(logit - max) as the kernel's does: a fill of at most -1e9, or half
# the dtype's most negative value (f16's -1e9 is -inf: users write finfo(f16).min).
MOST_FILL = -1e9

FORCED = {"fused": False}


@contextmanager
def fused():
    """Within the block, every hand-written attention the rule recognizes becomes dnn.mha_fwd whatever
    its size (stamp() puts it in compiled programs' cache keys)."""
    before, FORCED["fused"] = FORCED["fused"], True
    try:
        yield
    finally:
        FORCED["fused"] = before


def stamp() -> str:
    return " attention fused" if FORCED["fused"] else ""


def made_by(value: Value, name: str) -> Op | None:
    op = value.producer
    return op if op is not None and op.name == name else None


def unreshaped(value: Value) -> Value:
    while made_by(value, "reshape") is not None:
        value = value.producer.operands[0]
    return value


def transposed_from(value: Value, permutation) -> Value | None:
    """x, where value is reshape(transpose(x, permutation)) (the BLAS rewrite's operand view)."""
    op = made_by(unreshaped(value), "transpose")
    return op.operands[0] if op is not None and tuple(op.attrs["permutation"]) == permutation else None


def plain_gemm(op: Op | None) -> bool:
    """A blas strided batched GEMM of untransposed operands with nothing applied but alpha."""
    if op is None or op.name != "library_call" or op.attrs["library"] != "blas":
        return False
    a = op.attrs
    return a["routine"] == "strided_batched_gemm" and not a["trans_a"] and not a["trans_b"] and a["beta"] == 0.0 \
        and a["epilogue"] == "none"


def row_broadcast(value: Value, rows: Value, reducer: str) -> bool:
    """Whether value is broadcast_in_dim(reduce(rows, reducer, last axis)) along (b, n, t)."""
    op = made_by(value, "broadcast_in_dim")
    if op is None or tuple(op.attrs["broadcast_dimensions"]) != (0, 1, 2):
        return False
    inner = op.operands[0]
    clamp = made_by(inner, "max")   # nn.softmax's max(reduce_max, -inf) of the row maxima
    if reducer == "max" and clamp is not None and splat_value(clamp.operands[1]) == -math.inf:
        inner = clamp.operands[0]
    reduce = made_by(inner, "reduce")
    return reduce is not None and reduce.operands[0] is rows and reduce.attrs["reducer"] == reducer \
        and tuple(reduce.attrs["axes"]) == (3,)


def softmax_of(probs: Value) -> Value | None:
    """logits, where probs = exp(logits - rowmax) / rowsum(exp(logits - rowmax)) along the last axis."""
    div = made_by(probs, "div")
    exp = div and made_by(div.operands[0], "exp")
    sub = exp and made_by(exp.operands[0], "sub")
    if not sub or not row_broadcast(div.operands[1], div.operands[0], "sum"):
        return None
    logits = sub.operands[0]
    return logits if row_broadcast(sub.operands[1], logits, "max") else None


def scaled(logits: Value) -> tuple[Value, float] | None:
    """(product, scale), where logits = product * c or product / c of a constant c (or the product)."""
    op = logits.producer
    if op is not None and op.name in ("mul", "div"):
        value = splat_value(op.operands[1])
        if value is None or not math.isfinite(value) or value == 0:
            return None
        return op.operands[0], float(value) if op.name == "mul" else 1.0 / float(value)
    return logits, 1.0


def readers_are_the_pattern(m, counts: list[tuple[Value, int]]) -> bool:
    """Whether each of the graph's values is read only by the pattern's ops, as many times as given (so
    that no logit or probability is needed elsewhere; m.owns cannot say so here: the BLAS rewrite's
    reshapes stand between the root and them)."""
    return all(m.matcher.input_reads(value) == n for value, n in counts)


def attention(m, probs: Value, values: Value, gemm: Op) -> Value | None:
    """The second product's GEMM (probs (B*N, T, S) @ v (B*N, S, H)) of a softmax attention ->
    dnn.mha_fwd, transposed and reshaped to the GEMM's result."""
    if not plain_gemm(gemm) or gemm.attrs["alpha"] != 1.0:
        return None
    p = unreshaped(probs)
    logits = softmax_of(p) if p.type.ndim == 4 else None
    if logits is None:
        return None
    mask, masked = None, logits
    select = made_by(logits, "select")
    if select is not None:
        fill = splat_value(select.operands[2])
        most = max(MOST_FILL, 0.5 * float(np.finfo(NUMPY_DTYPES[logits.type.dtype]).min))
        if fill is None or not math.isfinite(fill) or fill > most or select.operands[0].type.dtype != "bool" \
                or select.operands[0].type.shape != logits.type.shape:
            return None
        mask, masked = select.operands[0], select.operands[1]
    found = scaled(masked)
    if found is None:
        return None
    product, scale = found
    first = unreshaped(product).producer
    if not plain_gemm(first):
        return None
    q = transposed_from(first.operands[0], (0, 2, 1, 3))
    k = transposed_from(first.operands[1], (0, 2, 3, 1))
    v = transposed_from(values, (0, 2, 1, 3))
    if q is None or k is None or v is None or q.type.ndim != 4 or k.type.shape != v.type.shape \
            or k.type.shape[2] != q.type.shape[2] or gemm.result.type.dtype != q.type.dtype \
            or first.result.type.dtype != q.type.dtype \
            or mha.refuse(q.type, k.type, v.type, None if mask is None else mask.type) is not None:
        return None
    b, t, n, h = q.type.shape
    if p.type.shape != (b, n, t, k.type.shape[1]):
        return None
    # the pattern's S x S values, with the pattern's reads of each (other readers would keep them computed)
    reads = [(p, 1), (logits, 2)] + ([(masked, 1)] if mask is not None else []) \
        + ([(product, 1)] if product is not masked else [])
    if not readers_are_the_pattern(m, reads):
        return None
    logit_bytes = p.type.size * NUMPY_DTYPES[p.type.dtype].itemsize
    if not FORCED["fused"] and logit_bytes <= MAX_LOGIT_BYTES:
        return None
    y = m.op("library_call", q, k, v, *([mask] if mask is not None else []), library="dnn", routine="mha_fwd",
             solution="", scale=float(scale * first.attrs["alpha"]), is_causal=False)
    return m.op("reshape", m.op("transpose", y, permutation=(0, 2, 1, 3)), new_sizes=gemm.result.type.shape)
