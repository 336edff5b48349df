"""Host codegen and launch: hand-written kernels run on the CPU against numpy models."""
import dataclasses
import math
import re

import ml_dtypes
import numpy as np
import pytest

import cdnajit as cj
from cdnajit.codegen import host
from cdnajit.codegen.host import optimized_llvm_ir
from cdnajit.errors import VerifyError
from cdnajit.ir import kernel as K
from cdnajit.ir.ops.elementwise import convert, divide, remainder, shift_left
from cdnajit.ir.targets import get_target
from cdnajit.libs.blas.generator import gemm_call, gemm_kernel
from cdnajit.libs.blas.solutions import solution_by_name
from cdnajit.runtime.executable import Executable
from cdnajit.runtime.launch import LaunchError, aligned_empty, compile_kernel

RNG = np.random.default_rng(1)


def linear_index(workgroup):
    return K.workgroup_id(0) * workgroup + K.workitem_id(0)


# ---- elementwise with a tail, and vectorization ------------------------------------------

def elementwise_kernel(n, dtype="f32"):
    x = K.GlobalBuffer("x", dtype, n, readonly=True)
    y = K.GlobalBuffer("y", dtype, n)
    scale = K.ScalarParam("scale", dtype)
    i = K.Var("i", "i32")
    body = [K.Let(i, linear_index(64)), K.If(i < n, [K.Store(y, i, x[i] * scale + K.maximum(x[i], 0.5))])]
    return K.Kernel(f"axpy_{dtype}", params=[x, y, scale], grid=(-(-n // 64),), workgroup_size=(64,), body=body)


@pytest.mark.parametrize("n", [1, 64, 1000])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_elementwise_with_tail(n, dtype):
    np_dtype = cj.ir.numpy_dtype(dtype)
    x = RNG.standard_normal(n).astype(np_dtype)
    x[0] = np.nan  # NaN propagates through max as numpy.maximum
    y = np.full(n, -7, np_dtype)
    compile_kernel(elementwise_kernel(n, dtype))(x, y, 1.5)
    # Same operations in the same dtype and order: the results are identical.
    expected = x * np_dtype.type(1.5) + np.maximum(x, np_dtype.type(0.5))
    np.testing.assert_array_equal(y, expected)


def test_elementwise_work_item_loop_vectorizes():
    text = optimized_llvm_ir(elementwise_kernel(1000))
    assert re.search(r"<(4|8|16) x float>", text), "no float vectors (SSE, AVX or AVX-512 widths)"


def test_each_work_item_loop_names_its_own_access_group():
    """Two regions (a barrier between them) scatter through LDS by a permutation read from memory,
    which LLVM cannot bound: each work-item loop's llvm.loop.parallel_accesses must name the access
    group its own loads and stores carry (llvmlite's metadata cache once gave every loop the first
    one's, so only a kernel's first loop was parallel), and both loops vectorize."""
    items = 256
    x, y = K.GlobalBuffer("x", "f32", items, readonly=True), K.GlobalBuffer("y", "f32", items)
    perm = K.GlobalBuffer("perm", "i32", items, readonly=True)
    a, b = K.LdsBuffer("a", "f32", items), K.LdsBuffer("b", "f32", items)
    i = K.workitem_id(0)
    body = [K.Store(a, perm[i], x[i] * 2.0), K.Barrier(), K.Store(b, perm[i], a[i] + 1.0), K.Barrier(),
            K.Store(y, i, b[i])]
    kernel = K.Kernel("scatter2", params=[x, perm, y], grid=(1,), workgroup_size=(items,), body=body, lds=[a, b])
    module = str(host.llvm_module(kernel))
    nodes = dict(re.findall(r"^(![0-9]+) = (.*)$", module, re.M))
    named = [re.search(r'"llvm.loop.parallel_accesses", (![0-9]+)', nodes[re.search(r"(![0-9]+) }", nodes[loop]).group(1)])
             .group(1) for loop in re.findall(r"!llvm.loop (![0-9]+)", module)]
    tagged = set(re.findall(r"!llvm.access.group (![0-9]+)", module))
    assert len(named) >= 2 and len(set(named)) == len(named) and set(named) <= tagged, (named, tagged)
    vectorized = re.findall(r"<(?:4|8|16) x float>", optimized_llvm_ir(kernel))
    assert vectorized, "the scattering work-item loops did not vectorize"


def test_math_work_item_loop_vectorizes_without_calls():
    n = 4096
    x, y = K.GlobalBuffer("x", "f32", n, readonly=True), K.GlobalBuffer("y", "f32", n)
    i = K.Var("i", "i32")
    body = [K.Let(i, linear_index(256)), K.Store(y, i, K.tanh(x[i] * 1.5 + 0.25) * 0.5 + x[i])]
    text = optimized_llvm_ir(K.Kernel("w1", params=[x, y], grid=(16,), workgroup_size=(256,), body=body))
    assert re.search(r"<(4|8|16) x float>", text), "no float vectors (SSE, AVX or AVX-512 widths)"
    calls = {line.split("@")[1].split("(")[0] for line in text.splitlines() if " call " in line}
    assert all(name.startswith("llvm.") for name in calls), calls  # intrinsics only: no libm


# ---- LDS tree reduction with barriers inside a uniform loop ----------------------------------

WG = 256


def tree_sum_kernel(n, groups):
    x = K.GlobalBuffer("x", "f32", n, readonly=True)
    out = K.GlobalBuffer("out", "f32", groups)
    tile = K.LdsBuffer("tile", "f32", WG)
    t, g, k, s = K.Var("t", "i32"), K.Var("g", "i32"), K.Var("k", "i32"), K.Var("s", "i32")
    body = [
        K.Let(t, K.workitem_id(0)),
        K.Let(g, linear_index(WG)),
        K.Store(tile, t, K.select(g < n, x[g], 0.0)),
        K.Barrier(),
        K.For(k, 0, 8, 1, [
            K.Let(s, K.Const(WG // 2, "i32") >> k),
            K.If(t < s, [K.Store(tile, t, tile[t] + tile[t + s])]),
            K.Barrier(),
        ], uniform=True),
        K.If(t.eq(0), [K.Store(out, K.workgroup_id(0), tile[0])]),
    ]
    return K.Kernel("tree_sum", params=[x, out], grid=(groups,), workgroup_size=(WG,), body=body, lds=[tile])


def test_lds_tree_reduction_with_barriers_in_uniform_loop():
    n, groups = 1000, 4
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(groups, np.float32)
    compile_kernel(tree_sum_kernel(n, groups))(x, out)
    tiles = np.zeros(groups * WG, np.float32)
    tiles[:n] = x
    tiles = tiles.reshape(groups, WG)
    while tiles.shape[1] > 1:  # the same pairwise order, so the same rounding
        half = tiles.shape[1] // 2
        tiles = tiles[:, :half] + tiles[:, half:]
    np.testing.assert_array_equal(out, tiles[:, 0])


# ---- wave ops ----------------------------------------------------------------------------

def butterfly(values, op, wave_size=64):
    """The documented lane semantics: pairwise halving over each wave's lanes."""
    lanes = values.reshape(-1, wave_size)
    while lanes.shape[1] > 1:
        half = lanes.shape[1] // 2
        lanes = op(lanes[:, :half], lanes[:, half:])
    return np.repeat(lanes[:, 0], wave_size)


@pytest.fixture(scope="module")
def wave_kernel():
    wg, groups = 128, 3
    n = wg * groups
    x = K.GlobalBuffer("x", "f32", n, readonly=True)
    k = K.GlobalBuffer("k", "i32", n, readonly=True)
    outs = [K.GlobalBuffer(name, dtype, n) for name, dtype in
            [("sum", "f32"), ("max", "f32"), ("imin", "i32"), ("shuffled", "f32"), ("after", "f32")]]
    t, g, v = K.Var("t", "i32"), K.Var("g", "i32"), K.Var("v", "f32")
    results = {name: K.Var("r_" + name, dtype) for name, dtype in
               [("sum", "f32"), ("max", "f32"), ("imin", "i32"), ("shuffled", "f32")]}
    body = [
        K.Let(t, K.workitem_id(0)), K.Let(g, linear_index(wg)), K.Let(v, x[g] * 2.0),
        K.WaveReduce(results["sum"], "sum", v),
        K.WaveReduce(results["max"], "max", v),
        K.WaveReduce(results["imin"], "min", k[g]),
        K.WaveShuffle(results["shuffled"], v + 1.0, t * 5 + 3),
        *[K.Store(out, g, results[out.name]) for out in outs[:4]],
        K.Store(outs[4], g, v - results["sum"]),  # v lives across the cuts
    ]
    kernel = K.Kernel("waves", params=[x, k] + outs, grid=(groups,), workgroup_size=(wg,), body=body)
    return kernel, n


@pytest.mark.parametrize("wave_size", [64, 32])
def test_wave_reduce_and_shuffle_lane_semantics(wave_kernel, wave_size):
    """At the kernel's wave size: 64 is CDNA's; 32 shows the host reads it from the kernel."""
    kernel, n = wave_kernel
    kernel = dataclasses.replace(kernel, wave_size=wave_size)
    x = RNG.standard_normal(n).astype(np.float32)
    k = RNG.integers(-1000, 1000, n).astype(np.int32)
    outs = [np.zeros(n, np.float32), np.zeros(n, np.float32), np.zeros(n, np.int32), np.zeros(n, np.float32),
            np.zeros(n, np.float32)]
    compile_kernel(kernel)(x, k, *outs)
    v = x * np.float32(2)
    np.testing.assert_array_equal(outs[0], butterfly(v, np.add, wave_size))
    np.testing.assert_array_equal(outs[1], butterfly(v, np.maximum, wave_size))
    np.testing.assert_array_equal(outs[2], butterfly(k, np.minimum, wave_size))
    t = np.arange(n) % 128
    source = (np.arange(n) // wave_size) * wave_size + (t * 5 + 3) % wave_size
    np.testing.assert_array_equal(outs[3], (v + np.float32(1))[source])
    np.testing.assert_array_equal(outs[4], v - outs[0])


# ---- non-uniform control flow, 2-D launches, integer semantics ------------------------------

def test_non_uniform_if_and_loop():
    n = 300
    x = K.GlobalBuffer("x", "f32", n, readonly=True)
    y = K.GlobalBuffer("y", "f32", n)
    c = K.GlobalBuffer("c", "i32", n)
    i, j, count = K.Var("i", "i32"), K.Var("j", "i32"), K.Var("count", "i32")
    body = [K.Let(i, linear_index(64)),
            K.If(i < n, [
                K.If(x[i] > 0.0, [K.Store(y, i, K.sqrt(x[i]))], [K.Store(y, i, -x[i] * 2.0)]),
                K.Let(count, K.Const(0, "i32")),
                K.For(j, 0, i % 7, 1, [K.Assign(count, count + j)]),
                K.Store(c, i, count)])]
    kernel = K.Kernel("branches", params=[x, y, c], grid=(5,), workgroup_size=(64,), body=body)
    xs = RNG.standard_normal(n).astype(np.float32)
    ys, cs = np.zeros(n, np.float32), np.zeros(n, np.int32)
    compile_kernel(kernel)(xs, ys, cs)
    np.testing.assert_array_equal(ys, np.where(xs > 0, np.sqrt(np.abs(xs)), -xs * np.float32(2)))
    m = np.arange(n) % 7
    np.testing.assert_array_equal(cs, m * (m - 1) // 2)


def else_if_chain(value, slot):
    """slot = 0 below -1, 2 above 1, 3 at 0, else 1: an if whose else is an if whose else is an
    if, each assigning `slot`, defined before them."""
    return [K.Assign(slot, K.Const(1, "i32")),
            K.If(value < -1, [K.Assign(slot, slot - 1)],
                 [K.If(value > 1, [K.Assign(slot, slot + 1)], [K.If(value.eq(0), [K.Assign(slot, slot + 2)])])])]


def else_if_chain_model(values):
    return np.select([values < -1, values > 1, values == 0], [0, 2, 3], 1)


@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_else_if_chain_in_a_loop_of_each_work_item(dtype):
    """libs/prim's first equal-bins bin_counts shape, for 1, 2, 3 and 64 active work-items of a
    workgroup: in a `for` of each work-item, the else-if chain classifies each element of the
    work-item's run and the work-item counts the slots into its own row. Integers and small
    integer floats compare exactly, so the counts equal numpy's."""
    groups, run, active = 2, 5, K.ScalarParam("active", "i32")
    n = groups * 64 * run
    x = K.GlobalBuffer("x", dtype, n, readonly=True)
    counts = K.GlobalBuffer("counts", "i32", groups * 64 * 4)
    t, j, k, slot, value = (K.Var("t", "i32"), K.Var("j", "i32"), K.Var("k", "i32"), K.Var("slot", "i32"),
                            K.Var("value", dtype))
    row = lambda at: t * 4 + at
    body = [K.Let(t, linear_index(64)),
            K.If(K.workitem_id(0) < active, [
                K.Let(slot, K.Const(-1, "i32")),
                K.For(k, 0, 4, 1, [K.Store(counts, row(k), K.Const(0, "i32"))]),
                K.For(j, 0, run, 1, [K.Let(value, x[t * run + j]), *else_if_chain(value, slot),
                                     K.Store(counts, row(slot), counts[row(slot)] + 1)])])]
    compiled = compile_kernel(K.Kernel("else_if_loop", params=[x, counts, active], grid=(groups,),
                                       workgroup_size=(64,), body=body))
    xs = RNG.integers(-3, 4, n).astype(cj.ir.numpy_dtype(dtype))
    slots = else_if_chain_model(xs.reshape(groups, 64, run))
    for items in (1, 2, 3, 64):
        result = np.full(groups * 64 * 4, -5, np.int32)
        compiled(xs, result, items)
        expected = np.full((groups, 64, 4), -5, np.int32)
        expected[:, :items] = (slots[:, :items, :, None] == np.arange(4)).sum(axis=2)
        np.testing.assert_array_equal(result.reshape(groups, 64, 4), expected, err_msg=f"{items} active work-items")


@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_else_if_chain_in_the_vectorized_work_item_loop(dtype):
    """The same chain straight in the work-item loop, which vectorizes (the branches become
    selects), for 1, 2, 3 and 64 active work-items."""
    groups, active = 2, K.ScalarParam("active", "i32")
    n = groups * 64
    x, out = K.GlobalBuffer("x", dtype, n, readonly=True), K.GlobalBuffer("out", "i32", n)
    t, slot, value = K.Var("t", "i32"), K.Var("slot", "i32"), K.Var("value", dtype)
    body = [K.Let(t, linear_index(64)),
            K.If(K.workitem_id(0) < active, [
                K.Let(slot, K.Const(-1, "i32")), K.Let(value, x[t]), *else_if_chain(value, slot),
                K.Store(out, t, slot)])]
    kernel = K.Kernel("else_if_items", params=[x, out, active], grid=(groups,), workgroup_size=(64,), body=body)
    assert re.search(r"<(4|8|16) x i32>", optimized_llvm_ir(kernel)), "the work-item loop did not vectorize"
    compiled = compile_kernel(kernel)
    xs = RNG.integers(-3, 4, n).astype(cj.ir.numpy_dtype(dtype))
    slots = else_if_chain_model(xs.reshape(groups, 64))
    for items in (1, 2, 3, 64):
        result = np.full(n, -5, np.int32)
        compiled(xs, result, items)
        expected = np.where(np.arange(64) < items, slots, -5)
        np.testing.assert_array_equal(result.reshape(groups, 64), expected, err_msg=f"{items} active work-items")


def test_prefetch_is_one_l2_prefetch_per_cache_line_and_changes_nothing():
    n = 1024
    x, y = K.GlobalBuffer("x", "f32", n, readonly=True), K.GlobalBuffer("y", "f32", n)
    i = K.Var("i", "i32")
    # Two runs of 32 f32 (two cache lines each), 512 apart, in the next workgroup's half of x.
    ahead = K.Prefetch(x, (K.workgroup_id(0) + 1) % 2 * 512, 2, 512, 32)
    body = [ahead, K.Let(i, linear_index(256)), K.Store(y, i, x[i] + 1.0)]
    kernel = K.Kernel("prefetching", params=[x, y], grid=(4,), workgroup_size=(256,), body=body)
    text = optimized_llvm_ir(kernel)
    calls = re.findall(r"call void @llvm\.prefetch\.p0\(ptr [^,]+, i32 0, i32 (\d), i32 1\)", text)
    assert calls and set(calls) == {str(host.PREFETCH_L2)}, calls
    xs = RNG.standard_normal(n).astype(np.float32)
    ys = np.zeros(n, np.float32)
    compile_kernel(kernel)(xs, ys)
    np.testing.assert_array_equal(ys, xs + np.float32(1))


@pytest.mark.parametrize("workgroup_size", [(64, 1, 1), (256, 1, 1), (16, 4, 4), (8, 8, 2), (32, 4, 2), (64, 2, 1)])
def test_alongside_if_runs_in_the_next_wave_ops_wave_loop(workgroup_size):
    """An `alongside` if waits for the next wave op, whose loop over waves runs each wave's
    work-items of it: every work-item once (it increments), whatever the workgroup's shape."""
    sx, sy, sz = workgroup_size
    items, groups = sx * sy * sz, 3
    n = items * groups
    x, out = K.GlobalBuffer("x", "f32", n, readonly=True), K.GlobalBuffer("out", "f32", n)
    staged = K.LdsBuffer("staged", "f32", items)
    local, g, s = K.Var("local", "i32"), K.Var("g", "i32"), K.Var("s", "f32")
    body = [K.Let(local, (K.workitem_id(2) * sy + K.workitem_id(1)) * sx + K.workitem_id(0)),
            K.Let(g, K.workgroup_id(0) * items + local),
            K.Store(staged, local, 0.0), K.Barrier(),
            K.If(K.workgroup_id(0) >= 0, [K.Store(staged, local, staged[local] + x[g] * 3.0)], uniform=True,
                 alongside=True),
            K.WaveReduce(s, "sum", x[g]), K.Barrier(),
            K.Store(out, g, staged[local] + s)]
    kernel = K.Kernel("alongside", params=[x, out], grid=(groups,), workgroup_size=workgroup_size, body=body,
                      lds=[staged])
    # The if's blocks are named after the block it branches from: the body of the loop over waves.
    labels = re.findall(r"^([\w.]+):", str(host.llvm_module(kernel)), re.M)
    assert "wave.body.if" in labels, labels
    xs = RNG.standard_normal(n).astype(np.float32)
    result = np.zeros(n, np.float32)
    compile_kernel(kernel)(xs, result)
    np.testing.assert_array_equal(result, xs * np.float32(3) + butterfly(xs, np.add))


def test_two_dimensional_workgroups_and_grid():
    sx, sy, gx, gy = 16, 4, 2, 3
    n = sx * sy * gx * gy
    out = K.GlobalBuffer("out", "i32", n)
    lx, ly, wx, wy = (K.workitem_id(0), K.workitem_id(1), K.workgroup_id(0), K.workgroup_id(1))
    flat = ((wy * gx + wx) * sy + ly) * sx + lx
    code = lx + ly * 100 + wx * 10000 + wy * 1000000 + K.workgroup_size(1) * 0 + K.num_workgroups(0) * 0
    kernel = K.Kernel("ids", params=[out], grid=(gx, gy), workgroup_size=(sx, sy), body=[K.Store(out, flat, code)])
    result = np.zeros(n, np.int32)
    compile_kernel(kernel)(result)
    wy_, wx_, ly_, lx_ = np.unravel_index(np.arange(n), (gy, gx, sy, sx))
    np.testing.assert_array_equal(result, lx_ + ly_ * 100 + wx_ * 10000 + wy_ * 1000000)


@pytest.mark.parametrize("order", [(0, 1, 2), (1, 0, 2), (2, 1, 0)])
def test_the_host_runs_every_workgroup_once_in_the_kernels_grid_order(order):
    # Work-item 0 of each workgroup, on one thread (a small launch), records the workgroup's turn
    # from a counter the previous workgroup advanced: the result is the walk itself.
    grid = (3, 2, 2)
    turns = K.GlobalBuffer("turns", "i32", math.prod(grid))
    counter = K.GlobalBuffer("counter", "i32", 1)
    wx, wy, wz = (K.workgroup_id(d) for d in range(3))
    turn = K.Var("turn", "i32")
    body = [K.If(K.workitem_id(0).eq(0), [K.Let(turn, counter[0]), K.Store(turns, (wz * 2 + wy) * 3 + wx, turn),
                                          K.Store(counter, 0, turn + 1)])]
    kernel = K.Kernel("walk", params=[turns, counter], grid=grid, workgroup_size=(64,), body=body, grid_order=order)
    assert (f"grid order: {' then '.join('xyz'[d] for d in order)}" in str(kernel)) == (order != (0, 1, 2))
    result, count = np.full(math.prod(grid), -1, np.int32), np.zeros(1, np.int32)
    compile_kernel(kernel)(result, count)
    ids = np.stack(np.unravel_index(np.arange(result.size), grid[::-1])[::-1])   # (x, y, z) of each entry
    expected = np.ravel_multi_index(ids[list(order[::-1])], [grid[d] for d in order[::-1]])
    np.testing.assert_array_equal(result, expected)
    assert count[0] == result.size


def test_the_host_walks_the_alternate_grid_order_in_launches_whose_arguments_choose_it():
    # As above, with the order a scalar argument chooses at launch: one compiled kernel walks both.
    grid = (3, 2, 2)
    turns = K.GlobalBuffer("turns", "i32", math.prod(grid))
    counter = K.GlobalBuffer("counter", "i32", 1)
    m, n = K.ScalarParam("m", "i64"), K.ScalarParam("n", "i64")
    wx, wy, wz = (K.workgroup_id(d) for d in range(3))
    turn = K.Var("turn", "i32")
    body = [K.If(K.workitem_id(0).eq(0), [K.Let(turn, counter[0]), K.Store(turns, (wz * 2 + wy) * 3 + wx, turn),
                                          K.Store(counter, 0, turn + 1)])]
    kernel = K.Kernel("walk", params=[turns, counter, m, n], grid=grid, workgroup_size=(64,), body=body,
                      grid_order=(2, 0, 1), alternate_grid_order=(m < n, (1, 0, 2)))
    assert "grid order: z then x then y\n  grid order: y then x then z when (m < n)" in str(kernel)
    compiled = compile_kernel(kernel)
    ids = np.stack(np.unravel_index(np.arange(math.prod(grid)), grid[::-1])[::-1])   # (x, y, z) of each entry
    for m_value, n_value, order in [(1, 2, (1, 0, 2)), (2, 1, (2, 0, 1)), (2, 2, (2, 0, 1))]:
        result, count = np.full(math.prod(grid), -1, np.int32), np.zeros(1, np.int32)
        compiled(result, count, m_value, n_value)
        expected = np.ravel_multi_index(ids[list(order[::-1])], [grid[d] for d in order[::-1]])
        np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("alternate, message", [
    ((K.Const(True, "bool"), (1, 0, 2)), "not \\(condition, order\\) with a condition comparing two extents"),
    ((K.ScalarParam("m", "i64") < 2, (1, 1, 2)), r"alternate grid order \[1, 1, 2\]")])
def test_the_verifier_rejects_a_bad_alternate_grid_order(alternate, message):
    out = K.GlobalBuffer("out", "f32", 1)
    kernel = K.Kernel("bad", params=[out, K.ScalarParam("m", "i64")], grid=(1,), workgroup_size=(64,),
                      body=[K.Store(out, 0, 1.0)], alternate_grid_order=alternate)
    with pytest.raises(VerifyError, match=message):
        K.verify(kernel)


def test_the_verifier_rejects_a_grid_order_that_is_not_a_permutation():
    out = K.GlobalBuffer("out", "f32", 1)
    kernel = K.Kernel("bad", params=[out], grid=(1,), workgroup_size=(64,), body=[K.Store(out, 0, 1.0)],
                      grid_order=(0, 0, 2))
    with pytest.raises(VerifyError, match=r"grid order \[0, 0, 2\]"):
        K.verify(kernel)


def test_integer_division_shifts_and_saturating_casts_match_the_graph_ir():
    n = 256
    a, b = K.GlobalBuffer("a", "i32", n, readonly=True), K.GlobalBuffer("b", "i32", n, readonly=True)
    f = K.GlobalBuffer("f", "f32", n, readonly=True)
    outs = [K.GlobalBuffer(name, "i32", n) for name in ("quot", "rem", "shl", "sat")]
    i = K.Var("i", "i32")
    body = [K.Let(i, linear_index(256)),
            K.Store(outs[0], i, a[i] / b[i]), K.Store(outs[1], i, a[i] % b[i]),
            K.Store(outs[2], i, a[i] << (b[i] % 40)), K.Store(outs[3], i, f[i].cast("i32"))]
    kernel = K.Kernel("ints", params=[a, b, f] + outs, grid=(1,), workgroup_size=(256,), body=body)
    av = RNG.integers(-2 ** 31, 2 ** 31, n, dtype=np.int64).astype(np.int32)
    bv = RNG.integers(-5, 5, n).astype(np.int32)
    av[:3], bv[:3] = [np.iinfo(np.int32).min, 5, -7], [-1, 0, 0]  # MIN/-1 and x/0: XLA's values
    fv = (RNG.standard_normal(n) * 3e9).astype(np.float32)
    fv[:3] = [np.nan, np.inf, -np.inf]
    results = [np.zeros(n, np.int32) for _ in outs]
    compile_kernel(kernel)(av, bv, fv, *results)
    np.testing.assert_array_equal(results[0], divide(av, bv))
    np.testing.assert_array_equal(results[1], remainder(av, bv))
    np.testing.assert_array_equal(results[2], shift_left(av, (bv % 40).astype(np.int32)))
    np.testing.assert_array_equal(results[3], convert(fv, dtype="i32"))


# ---- f16 and bf16 --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_precision_loads_stores_and_per_op_rounding(dtype):
    n = 200
    x = K.GlobalBuffer("x", dtype, n, readonly=True)
    y = K.GlobalBuffer("y", dtype, n)
    wide = K.GlobalBuffer("wide", "f32", n)
    i = K.Var("i", "i32")
    body = [K.Let(i, linear_index(64)),
            K.If(i < n, [K.Store(y, i, (x[i] + 0.1) * x[i] - K.exp(x[i])),
                         K.Store(wide, i, x[i].cast("f32") * 3.0)])]
    kernel = K.Kernel("half_" + dtype, params=[x, y, wide], grid=(4,), workgroup_size=(64,), body=body)
    np_dtype = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
    xs = RNG.standard_normal(n).astype(np_dtype)
    xs[:3] = np.array([np.nan, np.inf, -0.0]).astype(np_dtype)
    ys, ws = np.zeros(n, np_dtype), np.zeros(n, np.float32)
    compile_kernel(kernel)(xs, ys, ws)
    # numpy and ml_dtypes also compute each op in f32 and round it: the same bits, but for exp,
    # whose f32 result may differ by an ulp of f32 before rounding to the half type.
    with np.errstate(all="ignore"):
        rounded_exp = np.exp(xs.astype(np.float32)).astype(np_dtype)
        expected = (xs + np_dtype(0.1)) * xs - rounded_exp
    np.testing.assert_array_equal(ys.astype(np.float32), expected.astype(np.float32))
    np.testing.assert_array_equal(ws, xs.astype(np.float32) * np.float32(3))


# ---- aligned and streaming stores of written buffers -----------------------------------------

def test_stores_into_large_written_buffers_are_aligned_vectors():
    text = optimized_llvm_ir(elementwise_kernel(4096))  # 16 KiB: the ABI promises a 64-byte start
    assert re.search(r"store <(8|16) x float> .*, align (32|64)", text), "no aligned vector stores"
    assert "!nontemporal" not in text  # far below STREAMING_MIN_BYTES


def test_stack_arrays_start_on_a_cache_line_whatever_the_callers_stack():
    """The LDS block and private arrays are allocas aligned to STACK_ARRAY_ALIGNMENT, so the GEMM
    micro-kernel's whole-vector loads of them are known aligned (aligned to 16 only, they would split
    across lines whenever the caller's stack put the frame 16-48 bytes into one)."""
    solution = solution_by_name("Cijk_MT64x64x16_MI32x32x2_W2x2_GRVW1_PAD4", "f32", "f32", get_target("gfx942"))
    text = optimized_llvm_ir(gemm_kernel(gemm_call(64, 64, 32, "f32", "f32"), solution, "gemm"))
    assert set(re.findall(r"= alloca .*, align (\d+)", text)) == {str(host.STACK_ARRAY_ALIGNMENT)}
    widths = {int(w) for w in re.findall(r"load <(\d+) x float>", text)}
    if max(widths, default=0) * 4 >= host.STACK_ARRAY_ALIGNMENT:   # vectors as wide as a line (AVX-512)
        line_aligned = rf"load <\d+ x float>, ptr %[\w.]+, align {host.STACK_ARRAY_ALIGNMENT}\b"
        assert re.search(line_aligned, text), "no line-aligned vector loads"


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_])
def test_a_row_reduction_reads_its_broadcast_operand_per_item(dtype):
    """Each workgroup reduces a row of 64 products x0[g, i] * x1[i % 4 + 4 g]: the broadcast
    operand's index `workgroup_id * 4 + workitem_id % 4` is computed in 64 bits (host.u32_bound),
    which LLVM's loop vectorizer reads as it is; in 32 bits, zero-extended, it read 64
    consecutive elements (past the end of x1)."""
    x1 = RNG.integers(0, 3, (2, 1, 1, 4)).astype(dtype)
    x0 = RNG.integers(0, 3, (1, 2, 8, 4)).astype(dtype)
    reduce = cj.numpy.any if dtype == np.bool_ else cj.numpy.sum
    got = cj.jit(lambda a, b: reduce(b * a, axis=(1, 2, 3)))(x0, x1)
    want = np.any(x1 * x0, axis=(1, 2, 3)) if dtype == np.bool_ else np.sum(x1 * x0, axis=(1, 2, 3), dtype=got.dtype)
    np.testing.assert_array_equal(got, want)


def test_outlined_math_of_two_widths_computes_its_row():
    """A row kernel calling log2 in f64 and cos in f32, both outlined, is optimised without the SLP
    vectorizer (host_llvm.optimize; with it, LLVM dropped the workgroup's body) and computes
    cos(f32(log2(f64 x))) over a row of 449."""
    x = (np.arange(449) % 7).astype(np.uint8)

    def program(v):
        return (cj.numpy.cos(cj.numpy.log2(v.astype(np.float64)).astype(np.float32)),
                cj.numpy.tanh(cj.numpy.sum(v, keepdims=True)))

    compiled = Executable.compile(cj.make_graph(program)(x))
    assert {dtype for _, dtype in host.outlined_math(compiled.kernels[0])} == {"f64", "f32"}
    with np.errstate(divide="ignore"):
        want = np.cos(np.log2(x.astype(np.float64)).astype(np.float32))
    got = compiled(x)[0]
    np.testing.assert_allclose(got, want, rtol=4 * 2.0 ** -23, atol=2.0 ** -24)


@pytest.mark.skipif(not host.llvm.get_process_triple().startswith("x86_64"), reason="x86 gathers")
def test_strided_reads_are_not_vectorized_into_gathers():
    """host_llvm.FEATURES: a strided read (x[:, ::3] of 15 columns) stays scalar loads, no
    llvm.masked.gather (whose instruction selection took seconds in a GEMM kernel), and the kernel
    computes the slice."""
    rows = 256
    x = K.GlobalBuffer("x", "f32", rows * 15, readonly=True)
    y = K.GlobalBuffer("y", "f32", rows * 5)
    i = K.Var("i", "u32")
    body = [K.Let(i, K.workgroup_id(0).cast("u32") * 64 + K.workitem_id(0).cast("u32")),
            K.Store(y, i, x[(i / 5) * 15 + (i % 5) * 3] * 2.0)]
    kernel = K.Kernel("strided", params=[x, y], grid=(rows * 5 // 64,), workgroup_size=(64,), body=body)
    assert "masked.gather" not in optimized_llvm_ir(kernel)
    xs = RNG.standard_normal(rows * 15).astype(np.float32)
    out = aligned_empty((rows * 5,), np.float32)
    compile_kernel(kernel)(xs, out)
    np.testing.assert_array_equal(out, xs.reshape(rows, 15)[:, ::3].ravel() * np.float32(2))


@pytest.mark.skipif(not host.llvm.get_process_triple().startswith("x86_64"), reason="x86 streaming stores")
def test_very_large_written_buffers_stream_and_misaligned_arrays_are_staged(monkeypatch):
    monkeypatch.setattr(host, "STREAMING_MIN_BYTES", 4096)
    n = 4096
    x = K.GlobalBuffer("x", "f32", n, readonly=True)
    y = K.GlobalBuffer("y", "f32", n)
    i = K.Var("i", "i32")
    body = [K.Let(i, linear_index(64)), K.Store(y, i, x[i] * 2.0 + 1.0)]
    kernel = K.Kernel("streamed", params=[x, y], grid=(n // 64,), workgroup_size=(64,), body=body)
    text = optimized_llvm_ir(kernel)
    assert re.search(r"store <(8|16) x float> .*!nontemporal", text), "no streaming vector store"
    assert "call void @llvm.x86.sse.sfence()" in text  # streaming stores are drained before each take
    xs = RNG.standard_normal(n).astype(np.float32)
    compiled = compile_kernel(kernel)
    misaligned = np.zeros(n + 1, np.float32)[1:]   # 4 bytes past numpy's 16-byte-aligned start
    aligned = aligned_empty((n,), np.float32)
    for out in (misaligned, aligned):
        compiled(xs, out)
        np.testing.assert_array_equal(out, xs * np.float32(2) + np.float32(1))


# ---- launch checks -------------------------------------------------------------------------

def test_launch_rejects_bad_buffers():
    compiled = compile_kernel(elementwise_kernel(1000))
    good = np.zeros(1000, np.float32)
    with pytest.raises(LaunchError, match="float32 array of 1000 elements, got float64"):
        compiled(np.zeros(1000), good, 1.0)
    with pytest.raises(LaunchError, match="C-contiguous"):
        compiled(np.zeros(2000, np.float32)[::2], good, 1.0)
    with pytest.raises(LaunchError, match="overlaps argument 0"):
        compiled(good, good, 1.0)
    with pytest.raises(LaunchError, match="takes 3 arguments"):
        compiled(good)


def test_private_arrays_and_uniform_if_across_barriers():
    """A private array and a variable live across barriers (per-work-item storage); a uniform if
    holding a barrier runs at the workgroup level; an i32 scalar parameter."""
    n, wg = 256, 64
    x = K.GlobalBuffer("x", "f32", n, readonly=True)
    y = K.GlobalBuffer("y", "f32", n)
    limit = K.ScalarParam("limit", "i32")
    acc = K.PrivateArray("acc", "f32", 4)
    scratch = K.PrivateArray("scratch", "f32", 2)  # used in one region only
    i, j, total = K.Var("i", "i32"), K.Var("j", "i32"), K.Var("total", "f32")
    body = [
        K.Let(i, linear_index(wg)),
        K.For(j, 0, 4, 1, [K.Store(acc, j, x[i] * j.cast("f32"))]),
        K.Barrier(),
        K.If(K.workgroup_id(0) < limit, [K.Store(acc, 3, acc[3] + 100.0), K.Barrier()], uniform=True),
        K.Store(scratch, 1, acc[0] + acc[1]),
        K.Let(total, scratch[1] + acc[2] + acc[3]),
        K.Store(y, i, total),
    ]
    kernel = K.Kernel("private", params=[x, y, limit], grid=(n // wg,), workgroup_size=(wg,), body=body,
                      private=[acc, scratch])
    xs = RNG.standard_normal(n).astype(np.float32)
    ys = np.zeros(n, np.float32)
    compile_kernel(kernel)(xs, ys, 2)
    acc3 = xs * np.float32(3) + np.where(np.arange(n) // wg < 2, np.float32(100), np.float32(0))
    np.testing.assert_array_equal(ys, ((xs * np.float32(0) + xs) + xs * np.float32(2)) + acc3)


def test_empty_grid_launches_nothing():
    x, y = np.zeros(0, np.float32), np.zeros(0, np.float32)
    compile_kernel(elementwise_kernel(0))(x, y, 2.0)


def test_half_precision_wave_sum_accumulates_in_f32():
    n = 128
    x, out = K.GlobalBuffer("x", "bf16", n, readonly=True), K.GlobalBuffer("out", "bf16", n)
    s, i = K.Var("s", "bf16"), K.Var("i", "i32")
    body = [K.Let(i, K.workitem_id(0)), K.WaveReduce(s, "sum", x[i]), K.Store(out, i, s)]
    kernel = K.Kernel("bf16_wave_sum", params=[x, out], grid=(1,), workgroup_size=(n,), body=body)
    xs = (RNG.standard_normal(n) * 100).astype(ml_dtypes.bfloat16)
    result = np.zeros(n, ml_dtypes.bfloat16)
    compile_kernel(kernel)(xs, result)
    # The butterfly in f32, rounded once: summing in bf16 would round at every step instead.
    expected = butterfly(xs.astype(np.float32), np.add).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(result.astype(np.float32), expected.astype(np.float32))


# ---- code shape: outlined math, reloaded loads, one store stream per loop ----------------------

def math_chain_kernel(n, dtype, links):
    """y = x through `links` steps of v = tanh(v) + sin(v) / 2: 2 * links math calls per work-item,
    with a guarded tail."""
    x, y = K.GlobalBuffer("x", dtype, n, readonly=True), K.GlobalBuffer("y", dtype, n)
    i = K.Var("i", "i32")
    steps = [K.Var(f"v{k}", dtype) for k in range(links + 1)]
    body = [K.Let(i, linear_index(256)),
            K.If(i < n, [K.Let(steps[0], x[i])]
                 + [K.Let(b, K.tanh(a) + K.sin(a) * 0.5) for a, b in zip(steps, steps[1:])]
                 + [K.Store(y, i, steps[-1])])]
    return K.Kernel(f"chain_{dtype}", params=[x, y], grid=(-(-n // 256),), workgroup_size=(256,), body=body)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_many_math_calls_call_shared_vector_functions(dtype, monkeypatch):
    from cdnajit.codegen import host
    from cdnajit.runtime.launch import CompiledKernel
    n = 1000
    kernel = math_chain_kernel(n, dtype, links=6)
    # 12 calls: the most-called function is outlined until 8 or fewer remain inlined.
    assert host.outlined_math(kernel) == {("tanh", dtype)}
    assert host.outlined_math(math_chain_kernel(1 << 18, dtype, links=6)) == set()  # large: all inlined
    text = optimized_llvm_ir(kernel)
    calls = {line.split("@")[1].split("(")[0] for line in text.splitlines() if " call " in line}
    lanes = host.vector_bits() // (64 if dtype == "f64" else 32)
    # The guarded loop vectorized: only the vector variant is called, never the scalar function.
    assert f"cdna.math.tanh.v{lanes}{dtype}" in calls and not any("outlined" in c for c in calls), calls
    x = RNG.uniform(-3, 3, n).astype(cj.ir.numpy_dtype(dtype))
    x[:3] = [np.nan, np.inf, -np.inf]
    outputs = []
    for limit in (host.MAX_INLINED_MATH_CALLS, 100):  # outlined, then everything inlined
        monkeypatch.setattr(host, "MAX_INLINED_MATH_CALLS", limit)
        y = np.zeros_like(x)
        CompiledKernel(kernel, host.compile_object(kernel))(x, y)
        outputs.append(y)
    np.testing.assert_array_equal(outputs[0], outputs[1])


def test_loads_of_read_only_buffers_are_reloaded_after_a_cut():
    from cdnajit.codegen.host import StoragePlan
    n, groups = 128, 3
    x, y = K.GlobalBuffer("x", "f32", n * groups, readonly=True), K.GlobalBuffer("y", "f32", n * groups)
    a, b, m = K.Var("a", "f32"), K.Var("b", "f32"), K.Var("m", "f32")
    index = K.workgroup_id(0) * n + K.workitem_id(0)
    body = [K.Let(a, x[index]), K.Let(b, x[index] * 2.0), K.WaveReduce(m, "max", a),
            K.Store(y, index, a - m + b)]
    kernel = K.Kernel("reload", params=[x, y], grid=(groups,), workgroup_size=(n,), body=body)
    plan = StoragePlan(kernel)
    assert set(plan.reloaded) == {("a", "f32")} and ("b", "f32") in plan.per_item
    values = RNG.standard_normal(n * groups).astype(np.float32)
    out = np.zeros_like(values)
    compile_kernel(kernel)(values, out)
    np.testing.assert_array_equal(out, values - butterfly(values, np.maximum) + values * np.float32(2))


def test_each_store_stream_gets_its_own_work_item_loop():
    from cdnajit.codegen.host import split_regions
    y = K.GlobalBuffer("y", "f32", 64)
    i, v = K.Var("i", "i32"), K.Var("v", "f32")
    stmts = [K.Let(i, K.workitem_id(0)), K.Let(v, y[i] * 2.0), K.Store(y, i, v), K.Store(y, i + 1, v),
             K.Assign(v, v + 1.0), K.Store(y, i, v)]
    # Consecutive stores stay in one loop; a store followed by other work ends its loop.
    assert [len(run) for kind, run in split_regions(stmts)] == [4, 2]
