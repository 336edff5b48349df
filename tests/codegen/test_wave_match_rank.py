"""Lanes matched by the low bits of a value (ir/kernel.py: WaveMatchRank): each lane's rank among
the matching lanes below it and whether it is its group's last, run on the host against numpy's
model of the lane semantics, and the same kernel's gfx942 instructions (rocPRIM's match_any: a
ballot per bit into SGPR pairs, v_mbcnt) and PTX."""
import numpy as np
import pytest

from cdnajit.codegen import amdgpu, nvptx
from cdnajit.errors import VerifyError
from cdnajit.ir import kernel as K
from cdnajit.ir.kernel_verifier import verify_kernel
from cdnajit.runtime.launch import compile_kernel

WG, GROUPS, WAVE = 128, 3, 64
N = WG * GROUPS


def match_rank_kernel(dtype, bits):
    values = K.GlobalBuffer("values", dtype, N, readonly=True)
    ranks = K.GlobalBuffer("ranks", "i32", N)
    lasts = K.GlobalBuffer("lasts", "bool", N)
    g, rank, last = K.Var("g", "i32"), K.Var("rank", "i32"), K.Var("last", "bool")
    body = [K.Let(g, K.workgroup_id(0) * WG + K.workitem_id(0)),
            K.WaveMatchRank(rank, last, values[g], bits),
            K.Store(ranks, g, rank), K.Store(lasts, g, last)]
    return K.Kernel(f"match_rank_{dtype}_{bits}", params=[values, ranks, lasts], grid=(GROUPS,),
                    workgroup_size=(WG,), body=body)


def lane_model(values, bits):
    """Per lane: the lanes below it whose low `bits` bits equal its own, and whether none above does."""
    keys = (values.astype(np.uint64) & np.uint64((1 << bits) - 1)).reshape(-1, WAVE)
    same = keys[:, :, None] == keys[:, None, :]            # [wave, lane, other lane]
    lanes = np.arange(WAVE)
    below = (same & (lanes[None, :] < lanes[:, None])).sum(axis=2)
    above = (same & (lanes[None, :] > lanes[:, None])).any(axis=2)
    return below.ravel().astype(np.int32), ~above.ravel()


@pytest.mark.parametrize("dtype, bits, spread", [("u8", 8, 256), ("i32", 8, 7), ("i64", 3, 1 << 40),
                                                  ("u16", 16, 5), ("i32", 1, 100)])
def test_match_rank_on_the_host(dtype, bits, spread):
    """Exact: values with bits above the matched ones (ignored), few distinct values (large groups),
    a wave all alike and a wave all different."""
    rng = np.random.default_rng(bits)
    numpy_dtype = {"u8": np.uint8, "u16": np.uint16, "i32": np.int32, "i64": np.int64}[dtype]
    values = rng.integers(0, spread, N).astype(numpy_dtype)
    values[:WAVE] = 3                                        # one group of 64
    if bits >= 6:
        values[WAVE:2 * WAVE] = np.arange(WAVE)              # 64 groups of one
    ranks, lasts = np.full(N, -1, np.int32), np.zeros(N, bool)
    compile_kernel(match_rank_kernel(dtype, bits))(values, ranks, lasts)
    want_ranks, want_lasts = lane_model(values, bits)
    np.testing.assert_array_equal(ranks, want_ranks)
    np.testing.assert_array_equal(lasts, want_lasts)


def test_match_rank_twice_in_a_workgroup_starts_from_a_clear_table():
    """The host's table of counters is clear again after every op: a second op on the same values
    (a loop of two rounds) gives the same ranks."""
    values = K.GlobalBuffer("values", "u8", N, readonly=True)
    ranks = K.GlobalBuffer("ranks", "i32", 2 * N)
    g, r, rank, last = K.Var("g", "i32"), K.Var("r", "i32"), K.Var("rank", "i32"), K.Var("last", "bool")
    body = [K.Let(g, K.workgroup_id(0) * WG + K.workitem_id(0)),
            K.For(r, 0, 2, 1, [K.WaveMatchRank(rank, last, values[g], 8), K.Store(ranks, r * N + g, rank)],
                  uniform=True)]
    kernel = K.Kernel("match_rank_twice", params=[values, ranks], grid=(GROUPS,), workgroup_size=(WG,), body=body)
    x = np.random.default_rng(2).integers(0, 9, N).astype(np.uint8)
    got = np.zeros(2 * N, np.int32)
    compile_kernel(kernel)(x, got)
    want = lane_model(x, 8)[0]
    np.testing.assert_array_equal(got[:N], want)
    np.testing.assert_array_equal(got[N:], want)


def test_gfx942_match_rank_is_a_ballot_per_bit_and_mbcnt():
    compiled = amdgpu.compile_kernel(match_rank_kernel("i32", 8), "gfx942")
    text = compiled.assembly
    assert "v_mbcnt_lo_u32_b32" in text and "v_mbcnt_hi_u32_b32" in text
    compares_into_sgprs = [line for line in text.splitlines() if "v_cmp" in line and " s[" in line]
    assert len(compares_into_sgprs) >= 8, "a ballot (a compare into an SGPR pair) per bit"
    assert "ds_bpermute" not in text and "ds_write" not in text, "ballots need no LDS exchange"
    resources = compiled.resources
    assert (resources.vgpr_spill_count, resources.sgpr_spill_count, resources.scratch_bytes) == (0, 0, 0)


def test_ptx_match_rank_exchanges_through_shared_memory_and_counts_by_popc():
    kernel = match_rank_kernel("u16", 16)
    text = nvptx.ptx(kernel)
    assert "popc.b64" in text
    assert nvptx.shared_bytes(kernel) == (WG // WAVE) * WAVE * nvptx.LANE_SLOT_BYTES


def test_verifier_rules():
    rank, last, t = K.Var("rank", "i32"), K.Var("last", "bool"), K.workitem_id(0)

    def kernel(*body, wave_size=64):
        return K.Kernel("k", params=[], grid=(1,), workgroup_size=(64,), body=list(body), wave_size=wave_size)
    verify_kernel(kernel(K.WaveMatchRank(rank, last, t, 8)))
    for bad, message in [(K.WaveMatchRank(rank, last, t.cast("f32"), 8), "must be integers"),
                         (K.WaveMatchRank(rank, last, t.cast("u8"), 9), "9 bits of a u8"),
                         (K.WaveMatchRank(rank, last, t, 17), "1 to 16 bits"),
                         (K.WaveMatchRank(K.Var("r", "u64"), last, t, 8), "is i32"),
                         (K.WaveMatchRank(rank, K.Var("l", "i32"), t, 8), "is bool")]:
        with pytest.raises(VerifyError, match=message):
            verify_kernel(kernel(bad))
    with pytest.raises(VerifyError, match="waves of 32 lanes"):
        verify_kernel(kernel(K.WaveMatchRank(rank, last, t, 8), wave_size=32))
