"""libs/dnn's mha_fwd routine: nn.dot_product_attention(implementation="cudnn") runs one fused kernel
(`library_call dnn.mha_fwd`: 4 waves of 32 queries sharing tiles of 32 keys, both products by MFMA, an
online softmax) and agrees with the naive formula (the interpreter of nn.dot_product_attention's unfused
form, and the routine's numpy reference) over random shapes (odd sizes, sequences crossing the 32-query
wave, the 128-query workgroup and the 32-key tile, head dimensions of one and two MFMA column blocks,
grouped-query heads), causal and padding masks, f32/f16/bf16.

Error model: the logits are f32 dot products of H terms (H * eps32 * |q||k|), the online softmax
rescales each term by at most S exp factors (a few eps32 each), and the output rounds once to the
operand dtype; the unfused form also rounds the probabilities to the operand dtype before the second
product. So |y - y_ref| <= (4 * eps(dtype) + 64 * S * eps32) * max|v|.
"""
import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
import cdnajit.nn as nn
from cdnajit.libs.dnn.routines import mha_fwd_reference

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
