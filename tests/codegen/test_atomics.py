"""Kernel-IR atomics (`AtomicRMW`) and `While`: an ordered tile id from an atomic counter and a
prefix chained from workgroup to workgroup, on the host's pool (the waits end: a workgroup waits
only for tiles whose ids were taken before its own), in gfx942 and PTX text, and the verifier's rules."""
import numpy as np
import pytest

from cdnajit.codegen import amdgpu, nvptx
from cdnajit.errors import VerifyError
from cdnajit.ir import kernel as K
from cdnajit.ir.kernel_printer import print_kernel
from cdnajit.ir.kernel_verifier import verify_kernel
from cdnajit.ir.targets import get_target
from cdnajit.ir.types import NUMPY_DTYPES
from cdnajit.runtime.launch import compile_kernel

ITEMS = 64


def chained_kernel(tiles):
    """Tile t (taken from `counter`) adds its ITEMS elements to tile t - 1's published prefix."""
    n = tiles * ITEMS
    x = K.GlobalBuffer("x", "u64", n, readonly=True)
    counter, flags = K.GlobalBuffer("counter", "u64", 1), K.GlobalBuffer("flags", "u64", tiles)
    prefixes, out = K.GlobalBuffer("prefixes", "u64", tiles), K.GlobalBuffer("out", "u64", n)
    taken, values = K.LdsBuffer("taken", "u64", 1), K.LdsBuffer("values", "u64", ITEMS)
    lid, k, j = K.Var("lid", "i32"), K.Var("k", "i32"), K.Var("j", "i32")
    first = lid.eq(K.Const(0, "i32"))
    ticket, tile, total, flag, seen, before, prefix, running = (
        K.Var("ticket", "u64"), K.Var("tile", "i64"), K.Var("total", "u64"), K.Var("flag", "u64"),
        K.Var("seen", "u64"), K.Var("before", "u64"), K.Var("prefix", "u64"), K.Var("running", "u64"))
    body = [
        K.Let(lid, K.workitem_id(0)),
        K.If(first, [K.AtomicRMW(ticket, "add", counter, 0, K.Const(1, "u64")), K.Store(taken, 0, ticket)]),
        K.Barrier(),
        K.Let(tile, taken[0].cast("i64")),
        K.Store(values, lid, x[tile * ITEMS + lid.cast("i64")]),
        K.Barrier(),
        K.If(first, [
            K.Let(total, K.Const(0, "u64")),
            K.For(j, 0, ITEMS, 1, [K.Assign(total, total + values[j])]),
            K.Let(prefix, K.Const(0, "u64")),
            K.If(tile > 0, [
                K.Let(flag, K.Const(0, "u64")),
                K.While(flag.eq(K.Const(0, "u64")), [K.AtomicRMW(seen, "add", flags, tile - 1, K.Const(0, "u64")),
                                                     K.Assign(flag, seen)]),
                K.AtomicRMW(before, "add", prefixes, tile - 1, K.Const(0, "u64")),   # an atomic read
                K.Assign(prefix, before)]),
            K.AtomicRMW(K.Var("old_prefix", "u64"), "exchange", prefixes, tile, prefix + total),
            K.AtomicRMW(K.Var("old_flag", "u64"), "exchange", flags, tile, K.Const(1, "u64")),
            K.Let(running, prefix),
            K.For(k, 0, ITEMS, 1, [K.Assign(running, running + values[k]),
                                   K.Store(out, tile * ITEMS + k.cast("i64"), running)])]),
    ]
    return K.Kernel("chained", params=[x, counter, flags, prefixes, out], grid=(tiles,), workgroup_size=(ITEMS,),
                    lds=[taken, values], body=body)


@pytest.mark.parametrize("tiles", [1, 3, 2000])
def test_chained_prefix_on_the_host(tiles):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 1000, tiles * ITEMS).astype(np.uint64)
    out = np.zeros_like(x)
    compile_kernel(chained_kernel(tiles))(x, np.zeros(1, np.uint64), np.zeros(tiles, np.uint64),
                                          np.zeros(tiles, np.uint64), out)
    np.testing.assert_array_equal(out, np.cumsum(x))


def test_atomics_in_gpu_text():
    kernel = chained_kernel(16)
    text = print_kernel(kernel)
    assert "atomic_exchange(flags[tile], 1:u64)" in text and "while (flag == 0:u64) {" in text, text
    ptx = nvptx.ptx(kernel)
    assert "atom.global.add.u64" in ptx or "atom.add.u64" in ptx, ptx[:2000]
    assert "atom.global.exch.b64" in ptx or "atom.exch.b64" in ptx
    asm = amdgpu.assembly(kernel, get_target("gfx942"))
    assert "global_atomic_add_x2" in asm and "global_atomic_swap_x2" in asm, asm[:3000]


def test_verifier_rules():
    x, lds = K.GlobalBuffer("x", "u32", 64, readonly=True), K.LdsBuffer("shared", "u32", 64)
    written = K.GlobalBuffer("w", "u32", 64)
    old = K.Var("old", "u32")
    kernel = lambda params, body, lds_buffers=(): K.Kernel("k", params=params, grid=(1,), workgroup_size=(64,),
                                                           lds=list(lds_buffers), body=body)
    with pytest.raises(VerifyError, match="atomics are add, exchange on written global or LDS buffers"):
        verify_kernel(kernel([x], [K.AtomicRMW(old, "add", x, 0, K.Const(1, "u32"))]))
    verify_kernel(kernel([x], [K.AtomicRMW(old, "add", lds, 0, K.Const(1, "u32"))], (lds,)))
    with pytest.raises(VerifyError, match="a while loop holds a barrier"):
        verify_kernel(kernel([written], [K.While(K.Const(False, "bool"), [K.Barrier()])]))


def block_histogram_kernel(n, bins=256, items=256):
    """Each workgroup's work-items count their elements' bins into shared LDS counters (atomic
    adds), then write the workgroup's counts: rocPRIM's block histogram."""
    x = K.GlobalBuffer("x", "u32", n, readonly=True)
    out = K.GlobalBuffer("out", "i32", -(-n // items) * bins)
    counts = K.LdsBuffer("counts", "i32", bins)
    lid, g, i, b = K.Var("lid", "i32"), K.Var("g", "i32"), K.Var("i", "i32"), K.Var("b", "i32")
    body = [K.Let(lid, K.workitem_id(0)), K.Let(g, K.workgroup_id(0)),
            K.For(b, lid, bins, items, [K.Store(counts, b, K.Const(0, "i32"))]),
            K.Barrier(),
            K.Let(i, g * items + lid),
            K.If(i < n, [K.AtomicRMW(K.Var("old", "i32"), "add", counts, (x[i] % bins).cast("i32"),
                                     K.Const(1, "i32"))]),
            K.Barrier(),
            K.For(b, lid, bins, items, [K.Store(out, g * bins + b, counts[b])])]
    return K.Kernel("block_histogram", params=[x, out], grid=(-(-n // items),), workgroup_size=(items,),
                    lds=[counts], body=body)


def test_lds_atomics_count_a_block_histogram():
    """Many work-items of a workgroup hit the same LDS counters; every count is exact (integers)."""
    n = 3 * 256 + 17
    x = np.random.default_rng(1).integers(0, 12, n).astype(np.uint32)   # few bins: many collisions
    out = np.full(4 * 256, -1, np.int32)
    compile_kernel(block_histogram_kernel(n))(x, out)
    padded = np.concatenate([x, np.full(4 * 256 - n, 1 << 20, np.uint32)])
    expected = [np.bincount(padded[g * 256:(g + 1) * 256] % 256, minlength=256) for g in range(4)]
    expected[3][0] -= 4 * 256 - n   # the padding's bin 0 is not counted
    np.testing.assert_array_equal(out.reshape(4, 256), np.array(expected))
    asm = amdgpu.assembly(block_histogram_kernel(n), get_target("gfx942"))
    assert "ds_add_u32" in asm or "ds_add_rtn_u32" in asm, asm[:3000]
    assert "global_atomic" not in asm


def relaxed_sum_kernel(n, bins, dtype="f32"):
    """out[i % bins] += x[i] for every i < n, each a relaxed atomic add (a scatter-add's form)."""
    x, out = K.GlobalBuffer("x", dtype, n, readonly=True), K.GlobalBuffer("out", dtype, bins)
    i = K.Var("i", "i32")
    body = [K.Let(i, K.workgroup_id(0) * 256 + K.workitem_id(0)),
            K.If(i < n, [K.AtomicRMW(K.Var("old", dtype), "add", out, i % bins, x[i], relaxed=True)])]
    return K.Kernel("relaxed_sum", params=[x, out], grid=(-(-n // 256),), workgroup_size=(256,), body=body)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_relaxed_float_adds_sum_within_the_bound_of_an_unordered_sum(dtype):
    """m adds in any order: |computed - exact| <= (m - 1) eps sum |terms| (each partial sum rounds
    once: Higham's gamma bound to first order, m eps << 1). The reference is numpy's float64 sum,
    whose own error is within the same bound at float64's eps (so counted twice for f64 terms)."""
    n, bins = 20000, 7
    x = np.random.default_rng(3).standard_normal(n).astype(NUMPY_DTYPES[dtype])
    out = np.zeros(bins, x.dtype)
    compile_kernel(relaxed_sum_kernel(n, bins, dtype))(x, out)
    exact = np.array([x[b::bins].astype(np.float64).sum() for b in range(bins)])
    scale = np.array([np.abs(x[b::bins]).astype(np.float64).sum() for b in range(bins)])
    m = -(-n // bins) + 1   # the adds into a bin, the initial zero included
    bound = (m - 1) * (np.finfo(x.dtype).eps + np.finfo(np.float64).eps) * scale
    assert np.all(np.abs(out - exact) <= bound)


def test_relaxed_float_adds_are_hardware_atomics_on_gfx942():
    text = amdgpu.assembly(relaxed_sum_kernel(1000, 7), "gfx942")
    assert "global_atomic_add_f32" in text
    assert "global_atomic_cmpswap" not in text and "buffer_wbl2" not in text   # no CAS loop, no fences
    assert "atomic_add_relaxed(out[(i % 7)], x[i])" in print_kernel(relaxed_sum_kernel(1000, 7))
    assert "atom.global.add.f32" in nvptx.ptx(relaxed_sum_kernel(1000, 7))


def test_only_relaxed_adds_take_floats():
    out = K.GlobalBuffer("out", "f32", 4)
    lds = K.LdsBuffer("shared", "f32", 4)
    kernel = lambda body, lds_buffers=(): K.Kernel("k", params=[out], grid=(1,), workgroup_size=(64,),
                                                   lds=list(lds_buffers), body=body)
    old = K.Var("old", "f32")
    verify_kernel(kernel([K.AtomicRMW(old, "add", out, 0, 1.0, relaxed=True)]))
    for body, lds_buffers in (([K.AtomicRMW(old, "add", out, 0, 1.0)], ()),
                              ([K.AtomicRMW(old, "exchange", out, 0, 1.0, relaxed=True)], ()),
                              ([K.AtomicRMW(old, "add", lds, 0, 1.0, relaxed=True)], (lds,))):
        with pytest.raises(VerifyError, match="or relaxed adds on global f32 or f64 buffers"):
            verify_kernel(kernel(body, lds_buffers))
