"""Fixed cross-lane moves (ir/kernel.py: WaveMove, GFX9's DPP row shifts and row broadcasts): each
pattern run on the host against a lane model written out here, the moves composed into rocPRIM's
wave scan against numpy's cumsum, and the same kernel's gfx942 instructions (DPP moves, no LDS
exchange, no spills) and PTX lowering."""
import re

import numpy as np
import pytest

from cdnajit.codegen import amdgpu, nvptx
from cdnajit.errors import VerifyError
from cdnajit.ir import kernel as K
from cdnajit.ir.kernel_verifier import verify_kernel
from cdnajit.runtime.launch import compile_kernel

WG, GROUPS = 128, 3
N = WG * GROUPS
PATTERNS = ("row_shr:1", "row_shr:2", "row_shr:4", "row_shr:8", "row_bcast:15", "row_bcast:31")   # in scan order


def lane_model(pattern: str, wave: int) -> np.ndarray:
    """Lane l's source lane: the DPP control's meaning (a lane without a source keeps its value)."""
    lane = np.arange(wave)
    if pattern.startswith("row_shr:"):
        shift = int(pattern.split(":")[1])
        return np.where(lane % 16 >= shift, lane - shift, lane)
    if pattern == "row_bcast:15":   # rows 1 and 3 read the last lane of the row before
        return np.where((lane // 16) % 2 == 1, (lane // 16) * 16 - 1, lane)
    assert pattern == "row_bcast:31"   # rows 2 and 3 read lane 31
    return np.where(lane >= 32, 31, lane)


def move_kernel(wave_size=64):
    """Stores each pattern's move of x * 2 (an expression: gathered lane by lane on the host), of k
    (an i64 variable living across the cuts: one vector load) and of k's parity (a bool variable:
    the bytes of its array), and the wave's inclusive scan of k
    by the moves in order (rocPRIM's warp_scan_dpp on GFX9), a lane combining where the pattern
    gives it a source."""
    x = K.GlobalBuffer("x", "f32", N, readonly=True)
    k = K.GlobalBuffer("k", "i64", N, readonly=True)
    moved_x = K.GlobalBuffer("moved_x", "f32", N * len(PATTERNS))
    moved_k = K.GlobalBuffer("moved_k", "i64", N * len(PATTERNS))
    moved_odd = K.GlobalBuffer("moved_odd", "bool", N * len(PATTERNS))
    scanned = K.GlobalBuffer("scanned", "i64", N)
    g, lane, value, total = K.Var("g", "i32"), K.Var("lane", "i32"), K.Var("value", "i64"), K.Var("total", "i64")
    odd = K.Var("odd", "bool")
    body = [K.Let(g, K.workgroup_id(0) * WG + K.workitem_id(0)), K.Let(lane, K.workitem_id(0) % wave_size),
            K.Let(value, k[g]), K.Let(total, value), K.Let(odd, (value & 1).eq(1))]
    for number, pattern in enumerate(PATTERNS):
        fx, fk, fo = K.Var(f"fx{number}", "f32"), K.Var(f"fk{number}", "i64"), K.Var(f"fo{number}", "bool")
        body += [K.WaveMove(fx, x[g] * 2.0, pattern), K.WaveMove(fk, value, pattern), K.WaveMove(fo, odd, pattern),
                 K.Store(moved_x, number * N + g, fx), K.Store(moved_k, number * N + g, fk),
                 K.Store(moved_odd, number * N + g, fo)]
    for number, pattern in enumerate(PATTERNS):
        moved = K.Var(f"scan{number}", "i64")
        body += [K.WaveMove(moved, total, pattern),
                 K.Assign(total, K.select(K.WAVE_MOVES[pattern][0](lane), moved + total, total))]
    body.append(K.Store(scanned, g, total))
    return K.Kernel("wave_moves", params=[x, k, moved_x, moved_k, moved_odd, scanned], grid=(GROUPS,), workgroup_size=(WG,),
                    body=body, wave_size=wave_size)


@pytest.mark.parametrize("wave_size", [64, 32])
def test_moves_and_the_wave_scan_on_the_host(wave_size):
    """Exact: values only move, and integer sums of any association are the cumsum."""
    rng = np.random.default_rng(wave_size)
    x = rng.standard_normal(N).astype(np.float32)
    k = rng.integers(-2**40, 2**40, N)
    moved_x, moved_k = np.zeros(N * len(PATTERNS), np.float32), np.zeros(N * len(PATTERNS), np.int64)
    moved_odd, scanned = np.zeros(N * len(PATTERNS), bool), np.zeros(N, np.int64)
    compile_kernel(move_kernel(wave_size))(x, k, moved_x, moved_k, moved_odd, scanned)
    waves = np.arange(N) // wave_size * wave_size
    for number, pattern in enumerate(PATTERNS):
        source = waves + lane_model(pattern, wave_size)[np.arange(N) % wave_size]
        np.testing.assert_array_equal(moved_x[number * N:(number + 1) * N], x[source] * np.float32(2), err_msg=pattern)
        np.testing.assert_array_equal(moved_k[number * N:(number + 1) * N], k[source], err_msg=pattern)
        np.testing.assert_array_equal(moved_odd[number * N:(number + 1) * N], k[source] % 2 == 1, err_msg=pattern)
    np.testing.assert_array_equal(scanned, np.cumsum(k.reshape(-1, wave_size), axis=1).ravel())


def test_gfx942_moves_are_dpp():
    compiled = amdgpu.compile_kernel(move_kernel(), "gfx942")
    moves = {move for line in compiled.assembly.splitlines() if "_dpp " in line
             for move in re.findall(r"row_shr:\d+|row_bcast:\d+", line)}
    assert moves == set(PATTERNS)
    assert "ds_bpermute" not in compiled.assembly and "ds_swizzle" not in compiled.assembly
    resources = compiled.resources
    assert (resources.vgpr_spill_count, resources.sgpr_spill_count) == (0, 0)


def test_ptx_moves_exchange_through_shared_memory():
    kernel = move_kernel()
    assert "ld.shared" in nvptx.ptx(kernel)
    assert nvptx.shared_bytes(kernel) == (WG // 64) * 64 * nvptx.LANE_SLOT_BYTES


def test_verifier_rules():
    value, moved = K.Var("value", "f32"), K.Var("moved", "f32")

    def kernel(*body, wave_size=64):
        return K.Kernel("k", params=[], grid=(1,), workgroup_size=(64,), body=[K.Let(value, K.Const(1.0, "f32")), *body],
                        wave_size=wave_size)
    verify_kernel(kernel(K.WaveMove(moved, value, "row_bcast:15")))
    for bad, message in [(K.WaveMove(moved, value, "row_shr:3"), "unknown lane pattern 'row_shr:3'"),
                         (K.WaveMove(K.Var("m", "f64"), value, "row_shr:1"), "differs from the value's dtype")]:
        with pytest.raises(VerifyError, match=message):
            verify_kernel(kernel(bad))
    with pytest.raises(VerifyError, match="waves of 8 lanes"):
        verify_kernel(kernel(K.WaveMove(moved, value, "row_shr:1"), wave_size=8))
