"""The fused attention kernel of `library_call dnn.mha_fwd` (MIOpen's/cuDNN's fused multi-head attention
forward, FlashAttention's online softmax):

    y[b, t, n, :] = softmax_s(scale * q[b, t, n, :] . k[b, s, n // G, :], masked) @ v[b, s, n // G, :]

over (batch, seq, heads, head_dim) operands, G = query heads / key-value heads (grouped-query attention).
A masked logit (mask false, or s > t when causal) is -0.7 * the largest f32, as jax.nn writes it, so a
row with every key masked averages all values as the reference does.

A workgroup is one wave and computes QUERIES = 64 queries (t0 .. t0 + 63) of one (b, n), streaming the keys
in tiles of 32 (FlashAttention-2's loop, the S x S scores never stored):

    stage Q^T once (LDS, f32, the head dimension padded with zeros to whole 32-column MFMA blocks)
    per tile of 32 keys from s0:
        stage K and V (LDS, f32, row-major: each row one contiguous copy)
        S^T = K Q^T: 32 x 64 by MFMA (v_mfma_f32_32x32x2f32, two blocks of queries; the K tile is A, so
              each run of lanes reads consecutive queries of Q^T as B), written to LDS
        softmax step, a query per lane: masked logits, m' = max(m, the tile's), p = exp(score - m'),
              c = exp(m - m'), l = l c + sum p; P overwrites S^T in LDS and c goes to LDS
        O = O c + P V: O's rows rescaled in registers, then MFMA (P is A, the V tile B)
    y = O / l, rounded once to y's dtype

All arithmetic is f32 (f16/bf16 operands are widened as they are staged). On the host the two products
run as codegen/mfma_host.py's register-blocked micro-kernel, the softmax as vector loops over the
lanes. A causal attention without a mask skips the key tiles past its last query. The head dimension,
the mask and causality are code-level; batch, sequence lengths, heads and the scale are scalar
parameters.
"""
from __future__ import annotations

import numpy as np

from ...ir import kernel as K
from ...ir.kernel_mfma import INSTRUCTIONS, Mfma, PrivateSlice
from ...lowering.emitters import operand_buffers

BLOCK, WAVE = 32, 64            # keys per tile (the MFMA's 32 x 32 block); one wave per workgroup
QUERY_BLOCKS = 2                # blocks of BLOCK queries per workgroup: a query per lane in the softmax
QUERIES = QUERY_BLOCKS * BLOCK
INST = INSTRUCTIONS["v_mfma_f32_32x32x2f32"]
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
    head_dim, has_mask, causal = q_type.shape[3], len(op.operands) == 4, op.attrs["is_causal"]
    i64, f32 = "i64", "f32"
    batch, t_len, heads, s_len, kv_heads = (K.ScalarParam(n, i64) for n in ("batch", "t_len", "heads", "s_len", "kv_heads"))
    scale = K.ScalarParam("scale", f32)
    arguments = (("batch", q_type.shape[0]), ("t_len", q_type.shape[1]), ("heads", q_type.shape[2]),
                 ("s_len", k_type.shape[1]), ("kv_heads", k_type.shape[2]), ("scale", float(op.attrs["scale"])))
    buffers = operand_buffers(op)
    rows = batch * t_len * heads
    kv_count = batch * s_len * kv_heads * head_dim
    q = K.GlobalBuffer(buffers[0].name, buffers[0].dtype, rows * head_dim, True)
    k = K.GlobalBuffer(buffers[1].name, buffers[1].dtype, kv_count, True)
    v = K.GlobalBuffer(buffers[2].name, buffers[2].dtype, kv_count, True)
    mask = K.GlobalBuffer(buffers[3].name, "bool", rows * s_len, True) if has_mask else None
    y = K.GlobalBuffer(buffers[-1].name, buffers[-1].dtype, rows * head_dim)

    padded = -(-head_dim // BLOCK) * BLOCK          # the head dimension in whole MFMA column blocks
    col_blocks = padded // BLOCK
    qt_stride, kv_stride, s_stride = QUERIES + 1, padded + 1, QUERIES + 1
    qt_lds = K.LdsBuffer("qt_lds", f32, padded * qt_stride)      # Q[i][h] at h * qt_stride + i (transposed)
    k_lds = K.LdsBuffer("k_lds", f32, BLOCK * kv_stride)         # K[j][h] at j * kv_stride + h
    v_lds = K.LdsBuffer("v_lds", f32, BLOCK * kv_stride)         # V[j][h] at j * kv_stride + h
    s_lds = K.LdsBuffer("s_lds", f32, BLOCK * s_stride)          # S[i][j], then P[i][j], at j * s_stride + i
    corr_lds = K.LdsBuffer("corr_lds", f32, QUERIES)             # each query's rescaling of O (at the end its sum l)
    scores = K.PrivateArray("scores", f32, QUERY_BLOCKS * INST.d_elements)
    out = K.PrivateArray("out", f32, QUERY_BLOCKS * col_blocks * INST.d_elements)

    lane = K.workitem_id(0).cast(i64)
    in_run, run = lane % BLOCK, lane / BLOCK                  # an MFMA operand's row (or column) and its k
    t0 = K.workgroup_id(0).cast(i64) * QUERIES
    b, n = K.workgroup_id(1).cast(i64) / heads, K.workgroup_id(1).cast(i64) % heads
    kh = n / (heads / kv_heads)
    s0, j, u, r = K.Var("s0", i64), K.Var("j", i64), K.Var("u", i64), K.Var("r", i64)
    m, total, row_max, row_sum = (K.Var(x, f32) for x in ("m", "total", "row_max", "row_sum"))
    score, p = K.Var("score", f32), K.Var("p", f32)

    def by_half(e, stmt):
        """stmt(row, column) for D's element e of this lane (ir/kernel_mfma.py: 32x32x2f32's layout, row
        8 (e // 4) + e % 4 + 4 (lane // 32), column lane % 32 of its 32 x 32 block), as two statements, one per
        half of the wave, each affine in the lane: so that the host's lanes loop stores (or loads) consecutive
        elements, not one lane at a time."""
        first = e // 4 * 8 + e % 4
        return K.If(lane < BLOCK, stmt(first, lane), stmt(first + 4, lane - BLOCK))

    def source_row(position, limit, kv_head):
        """The first element of row `position` of a (B, L, heads, head_dim) operand's head kv_head = (heads, head).
        Computed before any condition: its divisions (b, n, kh) are invariant in the lanes' loop, where LLVM hoists
        them only out of unconditional code."""
        return ((b * limit + position) * kv_head[0] + kv_head[1]) * head_dim

    def staged(lds, source, position, limit, kv_head):
        """Rows position .. position + BLOCK - 1 of a (B, L, heads, head_dim) operand (those below limit, else
        zeros) into LDS as f32, row-major, the head dimension padded with zeros: a row per step of a uniform loop,
        the lanes on consecutive elements of it (contiguous reads and writes)."""
        h, first = u + lane, K.Var(f"{lds.name}_row", i64)
        inside = (h < head_dim) & (position + r < limit)
        element = source[first + h].cast(f32)
        return K.For(r, 0, BLOCK, 1, [K.For(u, 0, padded, WAVE, [
            K.Let(first, source_row(position + r, limit, kv_head)),
            K.If(h < padded, [K.If(inside, [K.Store(lds, r * kv_stride + h, element)],
                                   [K.Store(lds, r * kv_stride + h, K.Const(0.0, f32))])])], uniform=True)], uniform=True)

    def staged_transposed(lds, source, position, limit, kv_head):
        """Rows position .. position + QUERIES - 1, transposed: element (row, h) at h * qt_stride + row (once per
        workgroup: Q)."""
        element = u * WAVE + lane
        row, h = element / padded, element % padded
        value = K.select((position + row < limit) & (h < head_dim), source[
            source_row(K.minimum(position + row, limit - 1), limit, kv_head) + K.minimum(h, head_dim - 1)
        ].cast(f32), K.Const(0.0, f32))
        return K.For(u, 0, QUERIES * padded // WAVE, 1, [K.Store(lds, h * qt_stride + row, value)], uniform=True)

    # Scores S^T = K Q^T of the tile (A = the K tile, B = Q^T: each run of lanes reads consecutive queries and
    # writes its row of S^T to consecutive elements of s_lds), then (a query per lane) the online softmax's step.
    # The fragments are loaded first, then the MFMAs issued in one run (the host's register-blocked micro-kernel,
    # which reads each fragment from LDS where it was loaded: codegen/mfma_host.py).
    score_loads, score_mfmas = [], []
    for step in range(padded // INST.k):
        a_var = K.Var(f"ka{step}", f32)
        score_loads.append(K.Let(a_var, k_lds[in_run * kv_stride + (step * INST.k + run)]))
        for qb in range(QUERY_BLOCKS):
            b_var = K.Var(f"qb{step}_{qb}", f32)
            score_loads.append(K.Let(b_var, qt_lds[(step * INST.k + run) * qt_stride + (qb * BLOCK + in_run)]))
            accumulator = PrivateSlice(scores, qb * INST.d_elements, INST.d_elements)
            score_mfmas.append(Mfma(INST.name, accumulator, (a_var,), (b_var,), accumulator))
    value_loads, value_mfmas = [], []
    for step in range(BLOCK // INST.k):
        a_vars = [K.Var(f"pa{step}_{qb}", f32) for qb in range(QUERY_BLOCKS)]
        b_vars = [K.Var(f"vb{step}_{cb}", f32) for cb in range(col_blocks)]
        value_loads += [K.Let(a_var, s_lds[(step * INST.k + run) * s_stride + (qb * BLOCK + in_run)])
                        for qb, a_var in enumerate(a_vars)]
        value_loads += [K.Let(b_var, v_lds[(step * INST.k + run) * kv_stride + (cb * BLOCK + in_run)])
                        for cb, b_var in enumerate(b_vars)]
        for qb, a_var in enumerate(a_vars):
            for cb, b_var in enumerate(b_vars):
                accumulator = PrivateSlice(out, (qb * col_blocks + cb) * INST.d_elements, INST.d_elements)
                value_mfmas.append(Mfma(INST.name, accumulator, (a_var,), (b_var,), accumulator))

    t = K.minimum(t0 + lane, t_len - 1)       # the lane's query (queries past t_len are computed, not stored)
    key = s0 + j
    masked = s_lds[j * s_stride + lane] * scale
    mask_row = K.Var("mask_row", i64)
    if has_mask:
        masked = K.select(mask[mask_row + K.minimum(key, s_len - 1)], masked, K.Const(MASKED, f32))
    if causal:
        masked = K.select(key <= t0 + lane, masked, K.Const(MASKED, f32))
    # Keys past s_len (the last tile's padding) weigh nothing: -inf, against a running maximum that key 0 made finite.
    masked = K.select(key < s_len, masked, K.Const(-np.inf, f32))
    softmax = [
        K.Let(row_max, m), K.Let(row_sum, K.Const(0.0, f32)),
        K.For(j, 0, BLOCK, 1, [*[K.Let(mask_row, ((b * heads + n) * t_len + t) * s_len)] * has_mask,
                               K.Let(score, masked), K.Store(s_lds, j * s_stride + lane, score),
                               K.Assign(row_max, K.maximum(row_max, score))], uniform=True),
        K.For(j, 0, BLOCK, 1, [K.Let(p, K.exp(s_lds[j * s_stride + lane] - row_max)), K.Store(s_lds, j * s_stride + lane, p),
                               K.Assign(row_sum, row_sum + p)], uniform=True),
        K.Let(p, K.exp(m - row_max)), K.Store(corr_lds, lane, p), K.Assign(total, total * p + row_sum), K.Assign(m, row_max)]

    def rescaled(qb, cb, e):
        index = (qb * col_blocks + cb) * INST.d_elements + e
        return by_half(e, lambda row, column: [K.Store(out, index, out[index] * corr_lds[qb * BLOCK + row])])
    # A causal attention without a mask skips the tiles of keys past the block's last query: their weights are
    # exp(MASKED - m) = 0 exactly. With a mask, a query whose every key is masked averages every key, so none is skipped.
    keys = K.minimum(s_len, t0 + QUERIES) if causal and not has_mask else s_len
    tile = [staged(k_lds, k, s0, s_len, (kv_heads, kh)), staged(v_lds, v, s0, s_len, (kv_heads, kh)),
            *(K.Store(scores, e, K.Const(0.0, f32)) for e in range(scores.count)),
            K.Barrier(), *score_loads, *score_mfmas,
            *(by_half(e, lambda row, column, qb=qb, e=e: [
                K.Store(s_lds, row * s_stride + qb * BLOCK + column, scores[qb * INST.d_elements + e])])
              for qb in range(QUERY_BLOCKS) for e in range(INST.d_elements)),
            K.Barrier(), *softmax, K.Barrier(),
            *(rescaled(qb, cb, e) for qb in range(QUERY_BLOCKS) for cb in range(col_blocks) for e in range(INST.d_elements)),
            *value_loads, *value_mfmas, K.Barrier()]
    body = [staged_transposed(qt_lds, q, t0, t_len, (heads, n)),
            *(K.Store(out, e, K.Const(0.0, f32)) for e in range(out.count)),
            K.Let(m, K.Const(-np.inf, f32)), K.Let(total, K.Const(0.0, f32)),
            K.For(s0, 0, keys, BLOCK, tile, uniform=True),
            K.Store(corr_lds, lane, total), K.Barrier()]
    y_head = K.Var("y_head", i64)
    body.append(K.Let(y_head, b * t_len * heads + n))
    for qb in range(QUERY_BLOCKS):
        for cb in range(col_blocks):
            for e in range(INST.d_elements):
                def stored(row, column, qb=qb, cb=cb, e=e):
                    query, h = t0 + qb * BLOCK + row, cb * BLOCK + column
                    value = out[(qb * col_blocks + cb) * INST.d_elements + e] / corr_lds[qb * BLOCK + row]
                    return [K.If((query < t_len) & (h < head_dim),
                                 [K.Store(y, (y_head + query * heads) * head_dim + h, value.cast(y.dtype))])]
                body.append(by_half(e, stored))
    params = (q, k, v, *([mask] if has_mask else []), y, batch, t_len, heads, s_len, kv_heads, scale)
    return K.Kernel(name, params=params, grid=((t_len + (QUERIES - 1)) / QUERIES, batch * heads), workgroup_size=(WAVE,),
                    body=body, lds=(qt_lds, k_lds, v_lds, s_lds, corr_lds), private=(scores, out), arguments=arguments)
