"""The performance model (runtime/perf_model.py) on kernels written in kernel IR, without compiling
them: the occupancy comes from assumed register counts (runtime/occupancy.py's rules).

CALIBRATION holds published MI300X figures, each with its source; the model of a kernel that does
what the measurement did must come within 25 % of the figure. The limiter tests check that the
model names what is wrong with a kernel in words, and that the fixed kernel is modelled faster.
"""
import numpy as np
import pytest

import cdnajit as cj
from cdnajit.ir import kernel as K
from cdnajit.ir.targets import get_target
from cdnajit.lowering import emit_fusion
from cdnajit.lowering.tiling import launch_config, loop_by_rows_config
from cdnajit.passes import run_pipeline
from cdnajit.runtime.occupancy import occupancy
from cdnajit.runtime.perf_model import LAUNCH_S, model
from cdnajit.runtime.roofline import count

MI300X = get_target("gfx942")
LANES = 256
FULL_GRID = MI300X.compute_units * 8   # workgroups of 256: 8 per CU fill its 4 SIMDs x 8 waves


def modelled(kernel, vgprs=16):
    occupied = occupancy(MI300X, vgprs=vgprs, sgprs=16, lds_bytes=kernel.lds_bytes,
                         workgroup_items=kernel.workgroup_items)
    return model(kernel, MI300X, count(kernel), occupied)


def global_lane():
    return K.workgroup_id(0) * LANES + K.workitem_id(0)


def copy_kernel(n, per_lane, dtype="f32", groups=FULL_GRID):
    """A grid-stride copy, each lane moving `per_lane` consecutive elements per trip."""
    x, y = K.GlobalBuffer("x", dtype, n, readonly=True), K.GlobalBuffer("y", dtype, n)
    j = K.Var("j", "i32")
    body = [K.For(j, global_lane() * per_lane, n, groups * LANES * per_lane,
                  [K.Store(y, j + e, x[j + e]) for e in range(per_lane)])]
    return K.Kernel("copy", params=[x, y], grid=(groups,), workgroup_size=(LANES,), body=body)


def fma_kernel(steps):
    n = FULL_GRID * LANES
    x, y = K.GlobalBuffer("x", "f32", n, readonly=True), K.GlobalBuffer("y", "f32", n)
    i, j, v = K.Var("i", "i32"), K.Var("j", "i32"), K.Var("v", "f32")
    body = [K.Let(i, global_lane()), K.Let(v, x[i]),
            K.For(j, 0, steps, 1, [K.Assign(v, v * 0.999 + 0.5)], uniform=True), K.Store(y, i, v)]
    return K.Kernel("fma", params=[x, y], grid=(FULL_GRID,), workgroup_size=(LANES,), body=body)


def bandwidth(kernel, nbytes):
    return nbytes / (modelled(kernel).modelled_us * 1e-6 - LAUNCH_S)


# (what was measured, the published figure, its unit, its source)
CALIBRATION = {
    "copy": (4.3e12, "B/s", "a STREAM-style device copy sustains about 81 % of the 5.3 TB/s HBM3 peak "
             "(MI300X memory bandwidth utilization, https://aiweekly.co/alerts/amd-mi300x-hits-only-45-of-peak-"
             "flops-in-practice; the 5.3 TB/s peak: AMD Instinct MI300X data sheet)"),
    "f32 fma": (163.4e12, "FLOP/s", "peak f32 vector FLOP/s, AMD Instinct MI300X data sheet / CDNA 3 white paper"),
}


def test_copy_of_16_bytes_per_lane_matches_the_published_copy_bandwidth():
    n = 2**28   # 1 GiB of f32 each way
    figure, _, source = CALIBRATION["copy"]
    assert bandwidth(copy_kernel(n, 4), 2 * 4 * n) == pytest.approx(figure, rel=0.25), source


def test_fma_loop_on_a_full_grid_matches_the_vector_peak():
    steps = 100_000
    figure, _, source = CALIBRATION["f32 fma"]
    m = modelled(fma_kernel(steps))
    assert m.limiter == "vector"
    flops = 2 * steps * FULL_GRID * LANES
    assert flops / (m.modelled_us * 1e-6) == pytest.approx(figure, rel=0.25), source


def test_narrow_loads_are_limited_by_bytes_in_flight():
    """One 2-byte load per lane per trip keeps 1/8 of the bytes of 16-byte loads in flight."""
    n = 2**28
    narrow, wide = modelled(copy_kernel(n, 1, "f16")), modelled(copy_kernel(n, 8, "f16"))
    assert narrow.limiter == "hbm" and narrow.modelled_us > 2 * wide.modelled_us
    assert any("loads are 2-byte per lane: 8x the load instructions" in f for f in narrow.findings)
    assert any("by Little's law" in f for f in narrow.findings)


def test_a_sum_on_one_workgroup_names_its_grid():
    """A 256 MB sum by one workgroup, then by a full grid (each lane's partial sum stored)."""
    n = 2**26

    def partial_sums(groups):
        x, out = K.GlobalBuffer("x", "f32", n, readonly=True), K.GlobalBuffer("out", "f32", groups * LANES)
        j, acc = K.Var("j", "i32"), K.Var("acc", "f32")
        body = [K.Let(acc, K.Const(0.0, "f32")),
                K.For(j, global_lane(), n, groups * LANES, [K.Assign(acc, acc + x[j])]),
                K.Store(out, global_lane(), acc)]
        return K.Kernel("sum", params=[x, out], grid=(groups,), workgroup_size=(LANES,), body=body)

    serial, parallel = modelled(partial_sums(1)), modelled(partial_sums(FULL_GRID))
    assert serial.findings[1] == "grid of 1 workgroup uses 1 of 304 CUs"
    assert serial.limiter in ("hbm", "cu memory") and serial.busy_cus == 1
    assert serial.modelled_us > 100 * parallel.modelled_us
    assert not any("CUs" in f for f in parallel.findings)


def test_a_strided_transpose_names_its_uncoalesced_loads():
    """y = x.T over 4096 x 4096 f32: reading x down its columns touches a segment per lane."""
    rows = 4096
    x, y = K.GlobalBuffer("x", "f32", rows * rows, readonly=True), K.GlobalBuffer("y", "f32", rows * rows)
    r, c = K.Var("r", "i32"), K.Var("c", "i32")
    launch = dict(grid=(rows // LANES, rows), workgroup_size=(LANES,))
    column = [K.Let(r, K.workgroup_id(1)), K.Let(c, K.workgroup_id(0) * LANES + K.workitem_id(0))]
    strided = K.Kernel("transpose", params=[x, y], body=column + [K.Store(y, r * rows + c, x[c * rows + r])], **launch)
    copy = K.Kernel("copy", params=[x, y], body=column + [K.Store(y, r * rows + c, x[r * rows + c])], **launch)
    slow, fast = modelled(strided), modelled(copy)
    assert slow.limiter == "cache"
    assert "loads of x move 16x the bytes they use: 64 segments of 64 bytes for 64 lanes of 4 bytes" in slow.findings
    assert slow.modelled_us > 1.25 * fast.modelled_us


def test_the_tiled_transpose_fusion_is_modelled_faster_than_the_strided_one():
    """x.T + 1 over 2048 x 2048 f32 as lowering/ emits it: by rows (before LDS tiles: each lane reads
    x down a column, the report names the cache and the 16x segments), and through LDS tiles
    (lowering/tiling.py: transpose_tiles; contiguous 16-byte loads, conflict-free tile columns)."""
    module = run_pipeline(cj.make_graph(lambda a: a.T + 1.0)(np.zeros((2048, 2048), np.float32))).module
    (op,) = [o for o in module.body.ops if o.name == "fusion"]
    kernels = {}
    for config in (launch_config(op, MI300X), loop_by_rows_config(op.results[0].type, 2048)):
        builder = emit_fusion.FusionKernel(op, "k", config, MI300X)
        emit_fusion.BUILDERS[config.strategy](builder)
        kernels[config.strategy] = builder.kernel()
    strided, tiled = modelled(kernels["loop_by_rows"]), modelled(kernels["transpose_tiles"])
    assert strided.limiter == "cache"
    assert any("loads of in0 move 16x the bytes they use" in f for f in strided.findings)
    assert tiled.limiter == "hbm" and not any("move" in f or "loads are" in f or "conflict" in f for f in tiled.findings)
    assert tiled.modelled_us < 0.75 * strided.modelled_us


def test_a_tiny_kernel_is_launch_bound():
    """4 KB copied by 16 waves: the dispatch, then one memory latency per load."""
    m = modelled(copy_kernel(1024, 1, groups=4))
    assert m.limiter == "launch" and LAUNCH_S * 1e6 < m.modelled_us < 2 * LAUNCH_S * 1e6


def test_lds_bank_conflicts_of_a_column_read_and_its_padding():
    """A wave reads column 0 of a 64 x `stride` f32 LDS tile: with stride 64 every lane's dword is
    in bank 0 (32-way: each pass of 32 lanes takes 32 clocks); a stride of 65 spreads them."""
    def column_reader(stride):
        tile = K.LdsBuffer("tile", "f32", 64 * stride)
        out = K.GlobalBuffer("out", "f32", FULL_GRID * 64)
        t = K.Var("t", "i32")
        body = [K.Let(t, K.workitem_id(0)), K.Store(tile, t * stride, 1.0), K.Barrier(),
                K.Store(out, K.workgroup_id(0) * 64 + t, tile[t * stride])]
        return K.Kernel("column", params=[out], grid=(FULL_GRID,), workgroup_size=(64,), body=body, lds=[tile])

    conflicted, padded = count(column_reader(64)), count(column_reader(65))
    assert sorted(a.conflict for a in conflicted.lds_accesses.values()) == [32, 32]
    assert [a.conflict for a in padded.lds_accesses.values()] == [1, 1]
    assert conflicted.lds_clock_bytes == 32 * padded.lds_clock_bytes
    assert any(f.startswith("LDS ") and f.endswith("s of tile conflict 32-way in its banks")
               for f in modelled(column_reader(64)).findings)


def test_a_lanes_consecutive_lds_elements_count_as_one_wide_access():
    """Each lane reads 4 consecutive f32 of a row of 256: as single dwords the lanes' reads fall
    4 to a bank (lane stride 16 bytes), but the backend merges them into one ds_read_b128, whose
    passes of 8 lanes cover 128 contiguous bytes: no conflict. Reading only the first of the four
    keeps the 4-way conflict."""
    def reader(elements):
        tile = K.LdsBuffer("tile", "f32", 256)
        out = K.GlobalBuffer("out", "f32", 64)
        t = K.Var("t", "i32")
        total = tile[t * 4]
        for e in range(1, elements):
            total = total + tile[t * 4 + e]
        body = [K.Let(t, K.workitem_id(0)), K.Store(out, t, total)]
        return K.Kernel("wide", params=[out], grid=(1,), workgroup_size=(64,), body=body, lds=[tile])

    (wide,), (narrow,) = count(reader(4)).lds_accesses.values(), count(reader(1)).lds_accesses.values()
    assert (wide.conflict, narrow.conflict) == (1, 4)


def test_a_lanes_elements_at_offsets_that_differ_between_lanes_stay_single_accesses():
    """Each lane reads the same 4 f32 of a row of 256 as above, in an order rotated by its number
    (element (e + t) % 4 in the e-th read): each read's addresses differ from the next one's by
    other amounts in other lanes, so no backend merges them, and each single-dword read of 32
    lanes 16 bytes apart falls 4 to a bank."""
    tile = K.LdsBuffer("tile", "f32", 256)
    out = K.GlobalBuffer("out", "f32", 64)
    t = K.Var("t", "i32")
    reads = [tile[t * 4 + (t + e) % 4] for e in range(4)]
    body = [K.Let(t, K.workitem_id(0)), K.Store(out, t, reads[0] + reads[1] + reads[2] + reads[3])]
    kernel = K.Kernel("rotated", params=[out], grid=(1,), workgroup_size=(64,), body=body, lds=[tile])
    (rotated,) = count(kernel).lds_accesses.values()
    assert rotated.conflict == 4


def test_runs_from_an_index_read_from_data_count_as_vector_loads():
    """A work-item's 4 consecutive f32 from a start the kernel read from memory (a tile taken from a
    counter): no address is known, but the four indices differ only in their constant terms, so
    LLVM merges them into one 16-byte load, as the model counts; every other element (x + 0,
    x + 2) is no run."""
    def reader(offsets):
        source = K.GlobalBuffer("in0", "f32", 1 << 20, readonly=True)
        starts = K.GlobalBuffer("in1", "i32", 1, readonly=True)
        out = K.GlobalBuffer("out", "f32", 1 << 20)
        t, start = K.Var("t", "i32"), K.Var("start", "i32")
        total = source[start + t * 4]
        for offset in offsets:
            total = total + source[start + (t * 4 + offset)]
        body = [K.Let(t, K.workitem_id(0)), K.Let(start, starts[0]), K.Store(out, start + t, total)]
        return K.Kernel("runs", params=[source, starts, out], grid=(1,), workgroup_size=(64,), body=body)

    def widths(kernel):
        return [a.lane_bytes for a in count(kernel).accesses.values() if a.buffer == "in0"]

    assert widths(reader([1, 2, 3])) == [16]
    assert widths(reader([2])) == [4]


def test_a_gemms_next_tile_loads_hidden_by_its_mfmas_are_no_load_phase():
    """The GEMM's staging of the next K tile is an alongside if before the MFMAs: the GPU backends
    wait for its loads after the math (codegen/gpu_kernel.py), so of the 256^3 f32 GEMM's load
    phases only the first tile's, before the loop, remains (16 trips of the loop were 16 more)."""
    from cdnajit.lowering.emitters import emit_kernel
    a = np.ones((256, 256), np.float32)
    module = run_pipeline(cj.make_graph(lambda x, y: x @ y)(a, a), target=MI300X).module
    op = next(op for op in module.body.ops if op.name == "library_call")
    kernel = emit_kernel(op, "gemm", MI300X)
    assert "if uniform alongside" in str(kernel) and count(kernel).load_phases == 1
