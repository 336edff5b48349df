"""libs/dnn's mha_fwd routine: nn.dot_product_attention(implementation="cudnn") runs one fused kernel
(`library_call dnn.mha_fwd`: 4 waves of 32 queries sharing tiles of 32 keys, both products by MFMA, an
online softmax) and agrees with the naive formula (the interpreter of nn.dot_product_attention's unfused
form, and the routine's numpy reference) over random shapes (odd sizes, sequences crossing the 32-query
wave, the 128-query workgroup and the 32-key tile, head dimensions of one and two MFMA column blocks,
grouped-query heads), causal and padding masks, f32/f16/bf16. The same for softmax(q k^T * scale) v written by
hand, which libs/dnn/attention.py's rule makes dnn.mha_fwd (forced here: it takes logits above 1 GiB).

Error model: the logits are f32 dot products of H terms (H * eps32 * |q||k|), the online softmax
rescales each term by at most S exp factors (a few eps32 each), and the output rounds once to the
operand dtype; the unfused form also rounds the probabilities to the operand dtype before the second
product. So |y - y_ref| <= (4 * eps(dtype) + 64 * S * eps32) * max|v|.
"""
import math

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.nn as nn
import cdnajit.numpy as cnp
from cdnajit.ir.core import walk
from cdnajit.libs.dnn import attention
from cdnajit.libs.dnn.routines import mha_fwd_reference
from cdnajit.passes import match_libraries
from cdnajit.passes.manager import DEFAULT_PIPELINE, run_pipeline

DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def random_attention(rng):
    B, T, S = int(rng.integers(1, 3)), int(rng.choice([1, 5, 17, 70, 130])), int(rng.choice([1, 6, 33, 65]))
    K = int(rng.choice([1, 2]))
    N, H = K * int(rng.choice([1, 3])), int(rng.choice([1, 8, 16, 40, 64]))  # 40: two MFMA column blocks, padded
    return B, T, S, N, K, H


def check(rng, dtype, B, T, S, N, K, H, masked, causal):
    np_dtype = DTYPES[dtype]
    q = rng.standard_normal((B, T, N, H)).astype(np_dtype)
    k = rng.standard_normal((B, S, K, H)).astype(np_dtype)
    v = rng.standard_normal((B, S, K, H)).astype(np_dtype)
    lengths = rng.integers(0, S + 1, size=B)  # a padding mask: keys past each batch's length are masked
    mask = np.broadcast_to((np.arange(S)[None, :] < lengths[:, None])[:, None, None, :], (B, N, T, S)).copy()
    args = (q, k, v) + ((mask,) if masked else ())

    def attention(implementation):
        def f(q, k, v, *mask):
            return nn.dot_product_attention(q, k, v, mask=mask[0] if mask else None, is_causal=causal,
                                            implementation=implementation)
        return f

    fused = cj.jit(attention("cudnn"))
    assert "dnn.mha_fwd" in fused.lower(*args).compile().report()
    got = np.asarray(fused(*args)).astype(np.float64)
    unfused = np.asarray(cj.jit(attention(None), backend="interpret")(*args)).astype(np.float64)
    reference = mha_fwd_reference(q, k, v, *((mask,) if masked else ()), scale=1 / np.sqrt(H),
                                  is_causal=causal).astype(np.float64)
    eps = float(np.finfo(np_dtype).eps)
    bound = (4 * eps + 64 * S * float(np.finfo(np.float32).eps)) * max(1.0, float(np.abs(v.astype(np.float64)).max()))
    np.testing.assert_allclose(got, reference, rtol=0, atol=bound)
    np.testing.assert_allclose(got, unfused, rtol=0, atol=bound + 4 * eps)


@pytest.mark.parametrize("dtype, masked, causal", [("f32", True, True), ("f16", False, False)])
def test_fused_attention_matches_the_naive_formula(dtype, masked, causal):
    check(np.random.default_rng(0), dtype, 2, 70, 65, 6, 2, 8, masked, causal)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 9))
def test_fused_attention_matches_the_naive_formula_long(seed):
    rng = np.random.default_rng(seed)
    for _ in range(4):
        check(rng, str(rng.choice(list(DTYPES))), *random_attention(rng), bool(rng.integers(2)), bool(rng.integers(2)))


def test_fused_attention_names_what_it_does_not_take():
    q = np.zeros((1, 4, 2, 8), np.float32)
    with pytest.raises(NotImplementedError, match="bias"):
        cj.jit(lambda q: nn.dot_product_attention(q, q, q, bias=np.zeros((1, 2, 4, 4), np.float32),
                                                  implementation="cudnn"))(q)
    with pytest.raises(NotImplementedError, match="f64"):
        nn.dot_product_attention(q.astype(np.float64), q.astype(np.float64), q.astype(np.float64),
                                 implementation="cudnn")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_fused_attention_on_gfx942_uses_mfma_at_two_waves_per_simd(dtype):
    """The issue's gfx942 criteria for the attention kernel (head dimension 64): MFMA in its key loop,
    no spills, at least 2 waves per SIMD (its registers and LDS), its modelled efficiency reported.
    Slow: the AMDGPU backend compiles the unrolled kernel in ~10 s. The kernel's code depends on the head dimension, the dtype and the masks, not on the other sizes."""
    q = np.zeros((1, 1, 1, 64), DTYPES[dtype])
    compiled = cj.jit(lambda q, k, v: nn.dot_product_attention(q, k, v, implementation="cudnn")).lower(q, q, q).compile()
    (kernel,) = compiled.kernels
    assert kernel.target == "gfx942" and "dnn.mha_fwd" in kernel.source_ops
    assert kernel.vgpr_spills == 0 and kernel.sgpr_spills == 0 and kernel.scratch_bytes == 0, kernel
    assert kernel.occupancy >= 2, (kernel.occupancy, kernel.occupancy_limiter, kernel.vgpr_count, kernel.lds_bytes)
    assert 0 < kernel.efficiency <= 1
    assert "v_mfma_f32_32x32x2" in compiled.as_text("asm")


# ---- hand-written attention -> dnn.mha_fwd (libs/dnn/attention.py) ----------------------------------

# softmax(q k^T / sqrt(8), masked by -1e9) v as lax and nn.softmax write it, after canonicalize
HAND_WRITTEN = """
func @attention(%0: f32[2,16,4,8], %1: f32[2,16,4,8], %2: f32[2,16,4,8], %3: bool[2,4,16,16]) -> (f32[2,16,4,8]) {
  %4 = dot_general(%0, %1) {lhs_contracting = [3], rhs_contracting = [3], lhs_batch = [0, 2], rhs_batch = [0, 2], preferred_element_type = none} : f32[2,4,16,16]
  %5 = constant() {value = dense<2.828427>} : f32[]
  %6 = broadcast_in_dim(%5) {shape = [2, 4, 16, 16], broadcast_dimensions = []} : f32[2,4,16,16]
  %7 = div(%4, %6) : f32[2,4,16,16]
  %8 = constant() {value = dense<FILL>} : f32[]
  %9 = broadcast_in_dim(%8) {shape = [2, 4, 16, 16], broadcast_dimensions = []} : f32[2,4,16,16]
  %10 = select(%3, %7, %9) : f32[2,4,16,16]
  %11 = reduce(%10) {reducer = "max", axes = [3]} : f32[2,4,16]
  %12 = constant() {value = dense<-inf>} : f32[]
  %13 = broadcast_in_dim(%12) {shape = [2, 4, 16], broadcast_dimensions = []} : f32[2,4,16]
  %14 = max(%11, %13) : f32[2,4,16]
  %15 = broadcast_in_dim(%14) {shape = [2, 4, 16, 16], broadcast_dimensions = [0, 1, 2]} : f32[2,4,16,16]
  %16 = sub(%10, %15) : f32[2,4,16,16]
  %17 = exp(%16) : f32[2,4,16,16]
  %18 = reduce(%17) {reducer = "sum", axes = [3]} : f32[2,4,16]
  %19 = broadcast_in_dim(%18) {shape = [2, 4, 16, 16], broadcast_dimensions = [0, 1, 2]} : f32[2,4,16,16]
  %20 = div(%17, %19) : f32[2,4,16,16]
  %21 = dot_general(%20, %2) {lhs_contracting = [3], rhs_contracting = [1], lhs_batch = [0, 1], rhs_batch = [0, 2], preferred_element_type = none} : f32[2,4,16,8]
  %22 = transpose(%21) {permutation = [0, 2, 1, 3]} : f32[2,16,4,8]
  return %22
}
"""

FUSED = """
func @attention(%0: f32[2,16,4,8], %1: f32[2,16,4,8], %2: f32[2,16,4,8], %3: bool[2,4,16,16]) -> (f32[2,16,4,8]) {
  %4 = library_call(%0, %1, %2, %3) {library = "dnn", routine = "mha_fwd", solution = "", scale = 0.3535533966440824, is_causal = false} : f32[2,16,4,8]
  %5 = transpose(%4) {permutation = [0, 2, 1, 3]} : f32[2,4,16,8]
  %6 = reshape(%5) {new_sizes = [8, 16, 8]} : f32[8,16,8]
  %7 = reshape(%6) {new_sizes = [2, 4, 16, 8]} : f32[2,4,16,8]
  %8 = transpose(%7) {permutation = [0, 2, 1, 3]} : f32[2,16,4,8]
  return %8
}
"""


def test_hand_written_attention_becomes_the_fused_kernel_as_ir_text():
    """IR text in and out: the masked softmax attention, forced (its logits are small), is one mha_fwd with
    the mask and 1 / 2.828427 as the scale; a fill of -inf (NaN rows where every key is masked, which the
    kernel averages) and an unforced small attention keep the two GEMMs."""
    with attention.fused():
        result = match_libraries(cj.ir.parse(HAND_WRITTEN.replace("FILL", "-1e+09")))
        assert str(result) == str(cj.ir.parse(FUSED))
        kept = str(match_libraries(cj.ir.parse(HAND_WRITTEN.replace("FILL", "-inf"))))
        assert "mha_fwd" not in kept and kept.count("strided_batched_gemm") == 2
    small = str(match_libraries(cj.ir.parse(HAND_WRITTEN.replace("FILL", "-1e+09"))))
    assert "mha_fwd" not in small and small.count("strided_batched_gemm") == 2


def by_hand(q, k, v, mask=None, fill=-1e9, scale=None):
    """softmax(q k^T * scale, masked) v in (b, t, n, h), as a user writes it."""
    logits = lax.dot_general(q, k, (((3,), (3,)), ((0, 2), (0, 2))))
    logits = logits / math.sqrt(q.shape[-1]) if scale is None else logits * scale
    if mask is not None:
        logits = cnp.where(mask, logits, fill)
    return lax.dot_general(nn.softmax(logits, axis=-1), v, (((3,), (1,)), ((0, 1), (0, 2)))).transpose(0, 2, 1, 3)


def matched(f, *args):
    """f's graph through the passes up to match_libraries."""
    passes = [name for name, _ in DEFAULT_PIPELINE]
    return run_pipeline(cj.jit(f).lower(*args).module, DEFAULT_PIPELINE[:passes.index("match_libraries") + 1]).module


def test_large_hand_written_attention_takes_the_fused_kernel_unforced():
    """B=4 N=8 T=S=4096 f32: logits of 2 GiB, above MAX_LOGIT_BYTES; the logits also returned stay unfused."""
    q = np.zeros((4, 4096, 8, 64), np.float32)
    module = matched(by_hand, q, q, q)
    assert [op.attrs["routine"] for op in walk(module.body) if op.name == "library_call"] == ["mha_fwd"]

    def also_logits(q, k, v):
        return by_hand(q, k, v), lax.dot_general(q, k, (((3,), (3,)), ((0, 2), (0, 2)))) / 8.0
    assert "mha_fwd" not in str(matched(also_logits, q, q, q))


def check_hand_written(rng, dtype, B, T, S, N, H, mask_kind):
    np_dtype = DTYPES[dtype]
    q, k, v = (rng.standard_normal((B, length, N, H)).astype(np_dtype) for length in (T, S, S))
    lengths = rng.integers(0, S + 1, size=B)
    padding = np.broadcast_to((np.arange(S)[None, :] < lengths[:, None])[:, None, None, :], (B, N, T, S))
    causal = np.broadcast_to(np.tril(np.ones((T, S), bool)), (B, N, T, S))
    mask = {"none": None, "padding": padding, "causal": causal}[mask_kind]

    fill = float(np.finfo(np_dtype).min)   # as users write it for any dtype (f16's -1e9 would be -inf)

    def f(q, k, v):
        # the causal mask a constant, the padding mask broadcast from per-batch lengths, as users write them
        if mask_kind == "causal":
            return by_hand(q, k, v, cnp.tril(cnp.ones((T, S), bool)), fill)
        if mask_kind == "padding":
            return by_hand(q, k, v, (cnp.arange(S)[None, :] < cnp.asarray(lengths)[:, None])[:, None, None, :], fill)
        return by_hand(q, k, v)
    with attention.fused():
        compiled = cj.jit(f).lower(q, k, v).compile()
        assert "dnn.mha_fwd" in compiled.report()
        got = np.asarray(compiled(q, k, v)).astype(np.float64)
    reference = mha_fwd_reference(q, k, v, *(() if mask is None else (mask.copy(),)), scale=1 / np.sqrt(H),
                                  is_causal=False).astype(np.float64)
    unfused = np.asarray(cj.jit(f, backend="interpret")(q, k, v)).astype(np.float64)
    eps = float(np.finfo(np_dtype).eps)
    bound = (4 * eps + 64 * S * float(np.finfo(np.float32).eps)) * max(1.0, float(np.abs(v.astype(np.float64)).max()))
    np.testing.assert_allclose(got, reference, rtol=0, atol=bound)
    np.testing.assert_allclose(got, unfused, rtol=0, atol=bound + 4 * eps)


@pytest.mark.parametrize("mask_kind", ["causal", "padding"])
def test_hand_written_attention_matches_the_naive_formula(mask_kind):
    check_hand_written(np.random.default_rng(3), "f32", 2, 37, 45, 3, 16, mask_kind)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 7))
def test_hand_written_attention_matches_the_naive_formula_long(seed):
    rng = np.random.default_rng(seed)
    for _ in range(4):
        B, T, S, _, _, H = random_attention(rng)    # sequences and heads of 2 or more (attention.py's docstring)
        check_hand_written(rng, str(rng.choice(list(DTYPES))), B, max(T, 2), max(S, 2), int(rng.integers(2, 4)), H,
                           str(rng.choice(["none", "padding", "causal"])))
