"""The fused attention kernel of `library_call dnn.mha_fwd` (MIOpen's/cuDNN's fused multi-head attention
forward, FlashAttention's online softmax):

    y[b, t, n, :] = softmax_s(scale * q[b, t, n, :] . k[b, s, n // G, :], masked) @ v[b, s, n // G, :]

over (batch, seq, heads, head_dim) operands, G = query heads / key-value heads (grouped-query attention).
A masked logit (mask false, or s > t when causal) is -0.7 * the largest f32, as jax.nn writes it, so a
row with every key masked averages all values as the reference does.

Work-item r of a workgroup of ROWS computes one query row (b, t, n): it keeps the query row, the running
maximum m, the running sum l and the output row acc in registers (f32), and streams the keys once:

    score = scale * q . k_s;  m' = max(m, score);  c = exp(m - m');  p = exp(score - m')
    l = l * c + p;  acc = acc * c + p * v_s;  m = m'          and at the end y = acc / l

so the S x S scores are never stored. Keys and values are read from global memory (through the caches),
not staged in LDS. The head dimension and whether there is a mask or a causal mask are code-level (the
registers are sized by the head dimension); batch, sequence lengths, heads and the scale are scalar
parameters.
"""
from __future__ import annotations

import numpy as np

from ...ir import kernel as K
from ...lowering.emitters import operand_buffers

ROWS = 64
MASKED = -0.7 * float(np.finfo(np.float32).max)
DTYPES = ("f32", "f16", "bf16")


def refuse(q, k, v, mask) -> str | None:
    """None when the kernel computes this attention, else why not."""
    if q.dtype not in DTYPES or k.dtype != q.dtype or v.dtype != q.dtype:
        return f"{q.dtype}/{k.dtype}/{v.dtype} operands (the kernel takes one of {', '.join(DTYPES)})"
    if q.ndim != 4 or k.shape != v.shape or q.shape[3] != k.shape[3] or q.shape[0] != k.shape[0]:
        return f"shapes q {q.shape}, k {k.shape}, v {v.shape} (B, T, N, H / B, S, K, H)"
    if k.shape[2] == 0 or q.shape[2] % k.shape[2]:
        return f"{q.shape[2]} query heads over {k.shape[2]} key/value heads"
    if mask is not None and (mask.dtype != "bool" or mask.shape != (q.shape[0], q.shape[2], q.shape[1], k.shape[1])):
        return f"a mask {mask} (the kernel reads a bool (B, N, T, S) mask)"
    return None


def mha_kernel(op, name: str) -> K.Kernel:
    q_type, k_type = op.operands[0].type, op.operands[1].type
    heads_dim, has_mask, causal = q_type.shape[3], len(op.operands) == 4, op.attrs["is_causal"]
    i64, f32 = "i64", "f32"
    batch, t_len, heads, s_len, kv_heads = (K.ScalarParam(n, i64) for n in ("batch", "t_len", "heads", "s_len", "kv_heads"))
    scale = K.ScalarParam("scale", f32)
    arguments = (("batch", q_type.shape[0]), ("t_len", q_type.shape[1]), ("heads", q_type.shape[2]),
                 ("s_len", k_type.shape[1]), ("kv_heads", k_type.shape[2]), ("scale", float(op.attrs["scale"])))
    buffers = operand_buffers(op)
    rows = batch * t_len * heads
    kv_count = batch * s_len * kv_heads * heads_dim
    q = K.GlobalBuffer(buffers[0].name, buffers[0].dtype, rows * heads_dim, True)
    k = K.GlobalBuffer(buffers[1].name, buffers[1].dtype, kv_count, True)
    v = K.GlobalBuffer(buffers[2].name, buffers[2].dtype, kv_count, True)
    mask = K.GlobalBuffer(buffers[3].name, "bool", rows * s_len, True) if has_mask else None
    y = K.GlobalBuffer(buffers[-1].name, buffers[-1].dtype, rows * heads_dim)
    query, acc = K.PrivateArray("query", f32, heads_dim), K.PrivateArray("acc", f32, heads_dim)
    row, b, t, n, kh = (K.Var(x, i64) for x in ("row", "b", "t", "n", "kh"))
    s, h, base = K.Var("s", i64), K.Var("h", i64), K.Var("base", i64)
    m, total, dot, score, fresh, corr, p = (K.Var(x, f32) for x in ("m", "total", "dot", "score", "fresh", "corr", "p"))
    keep = []
    if has_mask:
        keep.append(mask[((b * heads + n) * t_len + t) * s_len + s])
    if causal:
        keep.append(s <= t)
    masked_score = dot * scale
    for condition in keep:
        masked_score = K.select(condition, masked_score, K.Const(MASKED, f32))
    key_loop = [
        K.Let(base, ((b * s_len + s) * kv_heads + kh) * heads_dim),
        K.Let(dot, K.Const(0.0, f32)),
        K.For(h, 0, heads_dim, 1, [K.Assign(dot, dot + query[h] * k[base + h].cast(f32))]),
        K.Let(score, masked_score),
        K.Let(fresh, K.maximum(m, score)),
        K.Let(corr, K.exp(m - fresh)),
        K.Let(p, K.exp(score - fresh)),
        K.Assign(total, total * corr + p),
        K.For(h, 0, heads_dim, 1, [K.Store(acc, h, acc[h] * corr + p * v[base + h].cast(f32))]),
        K.Assign(m, fresh)]
    per_row = [
        K.Let(n, row % heads), K.Let(t, (row / heads) % t_len), K.Let(b, row / (heads * t_len)),
        K.Let(kh, n / (heads / kv_heads)),
        K.For(h, 0, heads_dim, 1, [K.Store(query, h, q[row * heads_dim + h].cast(f32)),
                                   K.Store(acc, h, K.Const(0.0, f32))]),
        K.Let(m, K.Const(-np.inf, f32)), K.Let(total, K.Const(0.0, f32)),
        K.For(s, 0, s_len, 1, key_loop),
        K.For(h, 0, heads_dim, 1, [K.Store(y, row * heads_dim + h, (acc[h] / total).cast(y.dtype))])]
    body = [K.Let(row, K.workgroup_id(0).cast(i64) * ROWS + K.workitem_id(0).cast(i64)),
            K.If(row < rows, per_row)]
    params = (q, k, v, *([mask] if has_mask else []), y, batch, t_len, heads, s_len, kv_heads, scale)
    return K.Kernel(name, params=params, grid=((rows + (ROWS - 1)) / ROWS,), workgroup_size=(ROWS,), body=body,
                    private=(query, acc), arguments=arguments)
