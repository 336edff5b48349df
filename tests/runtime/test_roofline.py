"""Roofline figures against hand calculations (runtime/roofline.py's counting rules)."""
import pytest

from cdnajit.ir import kernel as K
from cdnajit.ir.targets import get_target
from cdnajit.runtime.roofline import count, math_flops, roofline

MI300X = get_target("gfx942")


def linear_index(workgroup):
    return K.workgroup_id(0) * workgroup + K.workitem_id(0)


def axpb_kernel(n):
    """y = x * 2 + 1 over n elements with a tail: 1024 work-items for n = 1000."""
    x, y = K.GlobalBuffer("x", "f32", n, readonly=True), K.GlobalBuffer("y", "f32", n)
    i = K.Var("i", "i32")
    body = [K.Let(i, linear_index(64)), K.If(i < n, [K.Store(y, i, x[i] * 2.0 + 1.0)])]
    return K.Kernel("axpb", params=[x, y], grid=(-(-n // 64),), workgroup_size=(64,), body=body)


def test_elementwise_roofline_by_hand():
    r = roofline(axpb_kernel(1000), MI300X)
    # Only the 1000 work-items with i < n run the body: 2 FLOPs, a 4-byte load and a 4-byte store each.
    assert (r.flops, r.load_bytes, r.store_bytes, r.bytes) == (2000, 4000, 4000, 8000)
    assert r.intensity == 2000 / 8000
    assert r.bound == "memory" and r.compute_unit == "vector f32" and r.exact
    # 8000 B at 5.3 TB/s against 2000 FLOP at 163.4 TFLOP/s.
    assert r.memory_us == pytest.approx(8000 / 5.3e12 * 1e6)
    assert r.compute_us == pytest.approx(2000 / 163.4e12 * 1e6)
    assert r.modelled_us == pytest.approx(8000 / 5.3e12 * 1e6)


def tree_sum_kernel(n, groups):
    x = K.GlobalBuffer("x", "f32", n, readonly=True)
    out = K.GlobalBuffer("out", "f32", groups)
    tile = K.LdsBuffer("tile", "f32", 256)
    t, g, k, s = K.Var("t", "i32"), K.Var("g", "i32"), K.Var("k", "i32"), K.Var("s", "i32")
    body = [K.Let(t, K.workitem_id(0)), K.Let(g, linear_index(256)),
            K.Store(tile, t, 0.0), K.If(g < n, [K.Store(tile, t, x[g])]), K.Barrier(),
            K.For(k, 0, 8, 1, [K.Let(s, K.Const(128, "i32") >> k),
                               K.If(t < s, [K.Store(tile, t, tile[t] + tile[t + s])]), K.Barrier()], uniform=True),
            K.If(t.eq(0), [K.Store(out, K.workgroup_id(0), tile[0])])]
    return K.Kernel("tree", params=[x, out], grid=(groups,), workgroup_size=(256,), body=body, lds=[tile])


def test_lds_tree_reduction_roofline_by_hand():
    r = roofline(tree_sum_kernel(1000, 4), get_target("gfx90a"))
    # Per workgroup 128 + 64 + ... + 1 = 255 adds; 1000 elements loaded once; 4 sums stored.
    assert (r.flops, r.load_bytes, r.store_bytes, r.bytes) == (4 * 255, 4000, 16, 4016)
    # LDS: 1024 zero stores + 1000 copies + per add two reads and a write, + 4 final reads.
    assert r.lds_bytes == 4 * (1024 + 1000 + 3 * 4 * 255 + 4)
    assert r.modelled_us == pytest.approx(4016 / 3.2e12 * 1e6) and r.bound == "memory"


def test_grid_stride_loop_counts_each_work_items_trips():
    n = 1000  # one workgroup of 256 strides over 1000 elements: trips differ per work-item
    x, out = K.GlobalBuffer("x", "f64", n, readonly=True), K.GlobalBuffer("out", "f64", 256)
    t, j, acc = K.Var("t", "i32"), K.Var("j", "i32"), K.Var("acc", "f64")
    body = [K.Let(t, K.workitem_id(0)), K.Let(acc, K.Const(0.0, "f64")),
            K.For(j, t, n, 256, [K.Assign(acc, acc + x[j] * x[j])]), K.Store(out, t, acc)]
    c = count(K.Kernel("norm", params=[x, out], grid=(1,), workgroup_size=(256,), body=body))
    assert (c.flops, c.load_bytes, c.store_bytes, c.exact) == ({"f64": 2 * n}, 2 * 8 * n, 8 * 256, True)


def test_compute_bound_kernel_by_hand():
    """A long uniform loop of multiply-adds on each of 1024 elements: compute-bound."""
    n, steps = 1024, 10_000
    x, y = K.GlobalBuffer("x", "f32", n, readonly=True), K.GlobalBuffer("y", "f32", n)
    i, j, v = K.Var("i", "i32"), K.Var("j", "i32"), K.Var("v", "f32")
    body = [K.Let(i, linear_index(256)), K.Let(v, x[i]),
            K.For(j, 0, steps, 1, [K.Assign(v, v * 0.999 + 0.5)], uniform=True), K.Store(y, i, v)]
    r = roofline(K.Kernel("spin", params=[x, y], grid=(4,), workgroup_size=(256,), body=body), MI300X)
    flops = 2 * steps * n
    assert (r.flops, r.bytes, r.bound) == (flops, 8 * n, "compute")
    assert r.intensity == flops / (8 * n)
    assert r.modelled_us == pytest.approx(flops / 163.4e12 * 1e6)


def test_math_functions_count_their_implementation_and_a_transcendental():
    n = 512
    x, y = K.GlobalBuffer("x", "f16", n, readonly=True), K.GlobalBuffer("y", "f16", n)
    i = K.Var("i", "i32")
    kernel = K.Kernel("t", params=[x, y], grid=(2,), workgroup_size=(256,),
                      body=[K.Let(i, linear_index(256)), K.Store(y, i, K.tanh(x[i]) + x[i])])
    c = count(kernel)
    # f16 is computed in f32: the f32 tanh plus one add per element, at the f32 vector peak.
    assert c.flops == {"f32": n * (math_flops("tanh", "f32") + 1)}
    assert c.transcendentals == n
    assert 20 < math_flops("tanh", "f32") < 80  # a range reduction and a polynomial, not one op
    # x[i] is read twice by the kernel IR (the backend merges them): twice the loads, the same DRAM bytes.
    assert (c.load_bytes, c.store_bytes) == (2 * 2 * n, 2 * n)
    assert roofline(kernel, MI300X).bytes == 2 * n + 2 * n


def test_repeated_reads_are_capped_at_the_buffer_size():
    """Every work-item reads the same 4 weights: 4096 loads of 16 bytes, but 16 bytes of DRAM."""
    n = 1024
    w, x, y = (K.GlobalBuffer("w", "f32", 4, readonly=True), K.GlobalBuffer("x", "f32", n, readonly=True),
               K.GlobalBuffer("y", "f32", n))
    i = K.Var("i", "i32")
    value = x[i] * w[0] + w[1] * w[2] - w[3]
    r = roofline(K.Kernel("affine", params=[w, x, y], grid=(4,), workgroup_size=(256,),
                          body=[K.Let(i, linear_index(256)), K.Store(y, i, value)]), MI300X)
    assert (r.load_bytes, r.bytes, r.flops) == (n * 20, 16 + 2 * 4 * n, 4 * n)


def test_data_dependent_control_flow_is_an_upper_bound():
    n = 256
    x, y = K.GlobalBuffer("x", "f32", n, readonly=True), K.GlobalBuffer("y", "f32", n)
    i = K.Var("i", "i32")
    body = [K.Let(i, K.workitem_id(0)),
            K.If(x[i] > 0.0, [K.Store(y, i, x[i] * 3.0)], [K.Store(y, i, x[i] - 1.0)])]
    c = count(K.Kernel("branch", params=[x, y], grid=(1,), workgroup_size=(256,), body=body))
    # The comparison runs everywhere; both branches are counted as if every work-item took them.
    assert (c.flops["f32"], c.exact) == (3 * n, False)


def test_wave_reduce_counts_one_operation_per_butterfly_step():
    x, y = K.GlobalBuffer("x", "f32", 128, readonly=True), K.GlobalBuffer("y", "f32", 128)
    i, s = K.Var("i", "i32"), K.Var("s", "f32")
    body = [K.Let(i, K.workitem_id(0)), K.WaveReduce(s, "sum", x[i]), K.Store(y, i, s)]
    c = count(K.Kernel("wave", params=[x, y], grid=(1,), workgroup_size=(128,), body=body))
    assert c.flops == {"f32": 128 * 6}  # offsets 32, 16, 8, 4, 2, 1
