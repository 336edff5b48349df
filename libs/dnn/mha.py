"""The fused attention kernel of `library_call dnn.mha_fwd` (MIOpen's/cuDNN's fused multi-head attention
forward, FlashAttention's online softmax):

    y[b, t, n, :] = softmax_s(scale * q[b, t, n, :] . k[b, s, n // G, :], masked) @ v[b, s, n // G, :]

over (batch, seq, heads, head_dim) operands, G = query heads / key-value heads (grouped-query attention).
A masked logit (mask false, or s > t when causal) is -0.7 * the largest f32, as jax.nn writes it, so a
row with every key masked averages all values as the reference does.

A workgroup is WAVES waves of one (b, n); each wave computes QUERIES = 32 queries, and the waves share
each tile of 32 keys and values (FlashAttention-2's loop, the S x S scores never stored):

    load the wave's Q^T as MFMA B fragments (registers, f32, the head dimension padded with zeros to
        whole 32-column MFMA blocks)
    per tile of 32 keys from s0:
        stage K and V (LDS, f32, row-major: each row one contiguous copy; the workgroup's lanes together)
        S^T = K Q^T: 32 keys x 32 queries by MFMA (v_mfma_f32_32x32x2f32, the K tile as A), kept in
              registers in the instruction's D layout: lane l holds query l % 32 and 16 of its keys,
              the other 16 in lane l ^ 32
        softmax step in registers: masked logits, the tile's maximum and sum over the lane's 16 keys and,
              by a wave shuffle, its partner's 16; m' = max(m, the tile's), p = exp(score - m'),
              c = exp(m - m'), l = l c + sum p; P overwrites S^T; c goes to LDS for O's rows
        O = O c + P V: O's rows rescaled, then MFMA with P as A straight from S^T's registers: the
              instruction's K step kk takes from lane l key 8 (kk // 4) + kk % 4 + 4 (l // 32), the
              key S^T's element kk holds, and the V tile (B) is read at the same keys
    y = O / l, rounded once to y's dtype

So the LDS holds only the K and V tiles (shared by the waves) and a word per query: with 4 waves per
workgroup, several workgroups share a CU (gfx942: 2 waves per SIMD for a head dimension of 64, bounded
by the registers). All arithmetic is f32 (f16/bf16 operands are widened as they are staged). On the
host the two products run as codegen/mfma_host.py's register-blocked micro-kernel, the softmax as
vector loops over the lanes. A causal attention without a mask skips the key tiles past the
workgroup's last query. The head dimension, the mask and causality are code-level; batch, sequence
lengths, heads and the scale are scalar parameters.
"""
from __future__ import annotations

import numpy as np

from ...ir import kernel as K
from ...ir.kernel_mfma import INSTRUCTIONS, Mfma, PrivateSlice
from ...lowering.emitters import operand_buffers

BLOCK, WAVE = 32, 64            # keys per tile and queries per wave (the MFMA's 32 x 32 block); lanes per wave
WAVES = 4                       # waves per workgroup, sharing each K and V tile
QUERIES = WAVES * BLOCK         # queries per workgroup
INST = INSTRUCTIONS["v_mfma_f32_32x32x2f32"]
TILE_ELEMENTS = INST.d_elements  # the S^T elements (keys) a lane holds per tile: 16 of its query's 32
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


def held_key(e: int, half: K.Expr) -> K.Expr:
    """The key (row of S^T's 32 x 32 block) of D element e in a lane of wave half `half` (lane // 32):
    ir/kernel_mfma.py's 32x32x2f32 layout, row 8 (e // 4) + e % 4 + 4 (lane // 32)."""
    return half * 4 + (e // 4 * 8 + e % 4)


def from_partner(dest: K.Var, value: K.Var) -> K.Stmt:
    """dest = `value` of the lane in the other half of the wave (lane ^ 32): the same query's other 16 keys."""
    return K.WaveShuffle(dest, value, K.workitem_id(0) + BLOCK)


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
    col_blocks, q_steps = padded // BLOCK, padded // INST.k
    kv_stride = padded + 1
    k_lds = K.LdsBuffer("k_lds", f32, BLOCK * kv_stride)         # K[j][h] at j * kv_stride + h
    v_lds = K.LdsBuffer("v_lds", f32, BLOCK * kv_stride)         # V[j][h] at j * kv_stride + h
    row_lds = K.LdsBuffer("row_lds", f32, QUERIES)               # each query's rescaling of O (at the end its sum l)
    q_fragments = K.PrivateArray("q_fragments", f32, q_steps)   # Q^T's B operand, one per MFMA K step
    scores = K.PrivateArray("scores", f32, TILE_ELEMENTS)        # S^T, then P, in the MFMA's D layout
    out = K.PrivateArray("out", f32, col_blocks * INST.d_elements)

    lane, wave = K.workitem_id(0).cast(i64), K.workitem_id(1).cast(i64)
    in_run, half = lane % BLOCK, lane / BLOCK            # an MFMA operand's row (or column) and its k
    t0 = K.workgroup_id(0).cast(i64) * QUERIES
    wave_t0 = t0 + wave * BLOCK                          # the wave's first query; the lane's is wave_t0 + in_run
    b, n = K.workgroup_id(1).cast(i64) / heads, K.workgroup_id(1).cast(i64) % heads
    kh = n / (heads / kv_heads)
    s0, u, r = K.Var("s0", i64), K.Var("u", i64), K.Var("r", i64)
    m, total, row_max, row_sum, partner_max, partner_sum = (
        K.Var(x, f32) for x in ("m", "total", "row_max", "row_sum", "partner_max", "partner_sum"))

    def by_half(e, stmt):
        """stmt(row, column) for D's element e of this lane (row held_key(e, lane // 32), column lane % 32 of its
        32 x 32 block), as two statements, one per half of the wave, each affine in the lane: so that the host's
        lanes loop stores (or loads) consecutive elements, not one lane at a time."""
        return K.If(lane < BLOCK, stmt(held_key(e, 0), lane), stmt(held_key(e, 1), lane - BLOCK))

    def source_row(position, limit, kv_head):
        """The first element of row `position` of a (B, L, heads, head_dim) operand's head kv_head = (heads, head).
        Computed before any condition: its divisions (b, n, kh) are invariant in the lanes' loop, where LLVM hoists
        them only out of unconditional code."""
        return ((b * limit + position) * kv_head[0] + kv_head[1]) * head_dim

    def staged(lds, source, position, limit, kv_head):
        """Rows position .. position + BLOCK - 1 of a (B, L, heads, head_dim) operand (those below limit, else
        zeros) into LDS as f32, row-major, the head dimension padded with zeros: each wave a row per step of a
        uniform loop, its lanes on consecutive elements of it (contiguous reads and writes)."""
        row, h, first = r * WAVES + wave, u + lane, K.Var(f"{lds.name}_row", i64)
        inside = (h < head_dim) & (position + row < limit)
        element = source[first + h].cast(f32)
        return K.For(r, 0, BLOCK // WAVES, 1, [K.For(u, 0, padded, WAVE, [
            K.Let(first, source_row(position + row, limit, kv_head)),
            K.If(h < padded, [K.If(inside, [K.Store(lds, row * kv_stride + h, element)],
                                   [K.Store(lds, row * kv_stride + h, K.Const(0.0, f32))])])], uniform=True)], uniform=True)

    # Q^T's B fragments: K step `step` reads Q^T[step * 2 + lane // 32][query lane % 32] (zeros past the head
    # dimension and the queries, which are computed, not stored).
    query = K.minimum(wave_t0 + in_run, t_len - 1)
    q_first = K.Var("q_first", i64)
    load_q = [K.Let(q_first, source_row(query, t_len, (heads, n)))]
    for step in range(q_steps):
        h = step * INST.k + half
        load_q.append(K.Store(q_fragments, step, K.select(
            (wave_t0 + in_run < t_len) & (h < head_dim), q[q_first + K.minimum(h, head_dim - 1)].cast(f32),
            K.Const(0.0, f32))))

    # Scores S^T = K Q^T of the tile (A = the K tile, B = Q^T). The fragments are loaded first, then the MFMAs
    # issued in one run (the host's register-blocked micro-kernel: codegen/mfma_host.py).
    score_loads, score_mfmas = [], []
    accumulator = PrivateSlice(scores, 0, INST.d_elements)
    for step in range(q_steps):
        a_var, b_var = K.Var(f"ka{step}", f32), K.Var(f"qb{step}", f32)
        score_loads += [K.Let(a_var, k_lds[in_run * kv_stride + (step * INST.k + half)]),
                        K.Let(b_var, q_fragments[step])]
        score_mfmas.append(Mfma(INST.name, accumulator, (a_var,), (b_var,), accumulator))
    # O += P V: K step kk takes P's column (key) held_key(kk, lane // 32) from this lane's S^T element kk, and
    # V's row of the same key.
    value_loads, value_mfmas = [], []
    for step in range(BLOCK // INST.k):
        a_var = K.Var(f"pa{step}", f32)
        value_loads.append(K.Let(a_var, scores[step]))
        for cb in range(col_blocks):
            b_var = K.Var(f"vb{step}_{cb}", f32)
            value_loads.append(K.Let(b_var, v_lds[held_key(step, half) * kv_stride + (cb * BLOCK + in_run)]))
            accumulator = PrivateSlice(out, cb * INST.d_elements, INST.d_elements)
            value_mfmas.append(Mfma(INST.name, accumulator, (a_var,), (b_var,), accumulator))

    # The online softmax's step, in S^T's registers: lane l's query wave_t0 + l % 32 and its keys held_key(e, l // 32).
    mask_row = K.Var("mask_row", i64)

    def logit(e):
        key = s0 + held_key(e, half)
        masked = scores[e] * scale
        if has_mask:
            masked = K.select(mask[mask_row + K.minimum(key, s_len - 1)], masked, K.Const(MASKED, f32))
        if causal:
            masked = K.select(key <= wave_t0 + in_run, masked, K.Const(MASKED, f32))
        # Keys past s_len (the last tile's padding) weigh nothing: -inf, against a running maximum that key 0 made finite.
        return K.select(key < s_len, masked, K.Const(-np.inf, f32))
    softmax = [*[K.Let(mask_row, ((b * heads + n) * t_len + query) * s_len)] * has_mask, K.Let(row_max, m)]
    for e in range(TILE_ELEMENTS):
        softmax += [K.Store(scores, e, logit(e)), K.Assign(row_max, K.maximum(row_max, scores[e]))]
    softmax += [from_partner(partner_max, row_max), K.Assign(row_max, K.maximum(row_max, partner_max)),
                K.Let(row_sum, K.Const(0.0, f32))]
    for e in range(TILE_ELEMENTS):
        softmax += [K.Store(scores, e, K.exp(scores[e] - row_max)), K.Assign(row_sum, row_sum + scores[e])]
    rescale = K.Var("rescale", f32)
    softmax += [from_partner(partner_sum, row_sum), K.Let(rescale, K.exp(m - row_max)),
                K.If(lane < BLOCK, [K.Store(row_lds, wave * BLOCK + lane, rescale)]),
                K.Assign(total, total * rescale + row_sum + partner_sum), K.Assign(m, row_max)]

    def rescaled(cb, e):
        index = cb * INST.d_elements + e
        return by_half(e, lambda row, column: [K.Store(out, index, out[index] * row_lds[wave * BLOCK + row])])
    # A causal attention without a mask skips the tiles of keys past the workgroup's last query: their weights are
    # exp(MASKED - m) = 0 exactly. With a mask, a query whose every key is masked averages every key, so none is skipped.
    keys = K.minimum(s_len, t0 + QUERIES) if causal and not has_mask else s_len
    tile = [staged(k_lds, k, s0, s_len, (kv_heads, kh)), staged(v_lds, v, s0, s_len, (kv_heads, kh)),
            *(K.Store(scores, e, K.Const(0.0, f32)) for e in range(scores.count)),
            K.Barrier(), *score_loads, *score_mfmas, *softmax, K.Barrier(),
            *(rescaled(cb, e) for cb in range(col_blocks) for e in range(INST.d_elements)),
            *value_loads, *value_mfmas, K.Barrier()]
    body = [*load_q, *(K.Store(out, e, K.Const(0.0, f32)) for e in range(out.count)),
            K.Let(m, K.Const(-np.inf, f32)), K.Let(total, K.Const(0.0, f32)),
            K.For(s0, 0, keys, BLOCK, tile, uniform=True),
            K.If(lane < BLOCK, [K.Store(row_lds, wave * BLOCK + lane, total)]), K.Barrier()]
    y_head = K.Var("y_head", i64)
    body.append(K.Let(y_head, b * t_len * heads + n))
    for cb in range(col_blocks):
        for e in range(INST.d_elements):
            def stored(row, column, cb=cb, e=e):
                query, h = wave_t0 + row, cb * BLOCK + column
                value = out[cb * INST.d_elements + e] / row_lds[wave * BLOCK + row]
                return [K.If((query < t_len) & (h < head_dim),
                             [K.Store(y, (y_head + query * heads) * head_dim + h, value.cast(y.dtype))])]
            body.append(by_half(e, stored))
    params = (q, k, v, *([mask] if has_mask else []), y, batch, t_len, heads, s_len, kv_heads, scale)
    return K.Kernel(name, params=params, grid=((t_len + (QUERIES - 1)) / QUERIES, batch * heads),
                    workgroup_size=(WAVE, WAVES), body=body, lds=(k_lds, v_lds, row_lds),
                    private=(q_fragments, scores, out), arguments=arguments)

