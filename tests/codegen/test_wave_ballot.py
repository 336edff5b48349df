"""Wave ballots and lane counts (ir/kernel.py: WaveBallot, WaveCountBelow): a per-wave stream
compaction run on the host against numpy's model of the lane semantics, and the same kernel's
gfx942 instructions (a ballot into an SGPR pair, v_mbcnt_lo/hi) and PTX lowering."""
import numpy as np
import pytest

from cdnajit.codegen import amdgpu, host, nvptx
from cdnajit.errors import VerifyError
from cdnajit.ir import kernel as K
from cdnajit.ir.kernel_verifier import verify_kernel
from cdnajit.runtime.launch import compile_kernel

WG, GROUPS, WAVE = 256, 3, 64
N = WG * GROUPS


def compaction_kernel():
    """Each wave writes its flagged values (x > 0) to the front of its own 64-element slot of `out`,
    in lane order: slot position = the flagged lanes below (WaveCountBelow of the ballot). Also
    stores each lane's ballot, its rank, and its rank among lanes that share both the flag and
    the parity of k (two ballots and-ed, as rocPRIM's match rank and-s a ballot per digit bit)."""
    x = K.GlobalBuffer("x", "f32", N, readonly=True)
    k = K.GlobalBuffer("k", "i32", N, readonly=True)
    out = K.GlobalBuffer("out", "f32", N)
    masks = K.GlobalBuffer("masks", "u64", N)
    ranks = K.GlobalBuffer("ranks", "i32", N)
    matched = K.GlobalBuffer("matched", "u32", N)
    g, wave_start, positive = K.Var("g", "i32"), K.Var("wave_start", "i32"), K.Var("positive", "bool")
    flagged, odd = K.Var("flagged", "u64"), K.Var("odd", "u64")
    rank, match_rank = K.Var("rank", "i32"), K.Var("match_rank", "u32")
    is_odd = (k[g] & 1).eq(1)
    same_parity = K.Select(is_odd, odd, ~odd)
    body = [
        K.Let(g, K.workgroup_id(0) * WG + K.workitem_id(0)),
        K.Let(wave_start, g - (g & (WAVE - 1))),
        K.Let(positive, x[g] > 0.0),
        K.WaveBallot(flagged, positive),      # a variable: on the host, the wave's flags as one vector
        K.WaveBallot(odd, is_odd),              # an expression: gathered lane by lane
        K.WaveCountBelow(rank, flagged),
        K.WaveCountBelow(match_rank, flagged & same_parity),
        K.If(positive, [K.Store(out, wave_start + rank, x[g])]),
        K.Store(masks, g, flagged), K.Store(ranks, g, rank), K.Store(matched, g, match_rank),
    ]
    return K.Kernel("wave_compaction", params=[x, k, out, masks, ranks, matched], grid=(GROUPS,),
                    workgroup_size=(WG,), body=body)


def lane_model(flags):
    """Per lane: its wave's mask (bit l = lane l's flag) and the count of set bits below the lane."""
    bits = flags.reshape(-1, WAVE).astype(np.uint64) << np.arange(WAVE, dtype=np.uint64)
    masks = np.repeat(np.bitwise_or.reduce(bits, axis=1), WAVE)
    below = np.cumsum(flags.reshape(-1, WAVE), axis=1) - flags.reshape(-1, WAVE)
    return masks, below.ravel()


@pytest.mark.parametrize("share", [0.0, 0.3, 1.0])
def test_ballot_and_count_below_compact_each_wave_on_the_host(share):
    """Exact: integers and a permutation of the inputs; empty and full waves included."""
    rng = np.random.default_rng(int(share * 10))
    x = np.where(rng.random(N) < share, rng.random(N) + 0.5, -rng.random(N)).astype(np.float32)
    x[:WAVE] = 1.0                              # one wave all flagged
    x[WAVE:2 * WAVE] = -1.0                     # one wave none
    k = rng.integers(-50, 50, N).astype(np.int32)
    out = np.full(N, np.nan, np.float32)
    masks, ranks, matched = np.zeros(N, np.uint64), np.zeros(N, np.int32), np.zeros(N, np.uint32)
    kernel = compaction_kernel()
    assert "bitcast <64 x i1>" in str(host.llvm_module(kernel))    # the variable's ballot, vectorized
    compile_kernel(kernel)(x, k, out, masks, ranks, matched)
    flags = x > 0
    want_masks, want_ranks = lane_model(flags)
    np.testing.assert_array_equal(masks, want_masks)
    np.testing.assert_array_equal(ranks, want_ranks)
    odd = (k & 1) == 1
    matched_want = sum(lane_model(flags & (odd == parity))[1] * (odd == parity) for parity in (False, True))
    np.testing.assert_array_equal(matched, matched_want)
    for wave in range(N // WAVE):
        chosen = x[wave * WAVE:(wave + 1) * WAVE]
        chosen = chosen[chosen > 0]
        np.testing.assert_array_equal(out[wave * WAVE:wave * WAVE + chosen.size], chosen)


def test_host_bool_variables_are_bytes_and_a_ballot_broadcasts_as_one_vector():
    """The per-work-item array of `positive` is read by the work-item loops as vectors of bytes
    (an i1 array's elements would be loaded one at a time, and the loops built lane by lane), and
    the ballot's mask reaches its wave's 64 lanes by one vector store."""
    optimized = host.optimized_llvm_ir(compaction_kernel())
    assert "load i1," not in optimized and "store i1 " not in optimized
    assert "store <64 x i64>" in optimized


def test_gfx942_ballot_is_a_compare_into_an_sgpr_pair_and_mbcnt():
    compiled = amdgpu.compile_kernel(compaction_kernel(), "gfx942")
    text = compiled.assembly
    assert "v_mbcnt_lo_u32_b32" in text and "v_mbcnt_hi_u32_b32" in text
    assert "v_cmp_lt_f32_e64 s[" in text or "v_cmp_gt_f32_e64 s[" in text, "the ballot's mask in SGPRs"
    assert "ds_bpermute" not in text and "ds_write" not in text, "a ballot needs no LDS exchange"
    resources = compiled.resources
    assert (resources.vgpr_spill_count, resources.sgpr_spill_count, resources.scratch_bytes) == (0, 0, 0)


def test_ptx_ballot_exchanges_through_shared_memory_and_counts_by_popc():
    kernel = compaction_kernel()
    text = nvptx.ptx(kernel)
    assert "popc.b64" in text
    assert nvptx.shared_bytes(kernel) == (WG // WAVE) * WAVE * nvptx.LANE_SLOT_BYTES


def test_verifier_rules():
    mask, count = K.Var("mask", "u64"), K.Var("count", "i32")
    t = K.workitem_id(0)

    def kernel(*body, wave_size=64):
        return K.Kernel("k", params=[], grid=(1,), workgroup_size=(64,), body=list(body), wave_size=wave_size)
    verify_kernel(kernel(K.WaveBallot(mask, t < 3), K.WaveCountBelow(count, mask)))
    for bad, message in [((K.WaveBallot(K.Var("m", "u32"), t < 3),), "a lane mask is u64"),
                         ((K.WaveBallot(mask, t),), "predicate must be bool"),
                         ((K.WaveCountBelow(count, t),), "lane mask must be u64"),
                         ((K.WaveBallot(mask, t < 3), K.WaveCountBelow(K.Var("c", "f32"), mask)), "i32 or u32")]:
        with pytest.raises(VerifyError, match=message):
            verify_kernel(kernel(*bad))
    with pytest.raises(VerifyError, match="waves of 32 lanes"):
        verify_kernel(kernel(K.WaveBallot(mask, t < 3), wave_size=32))
