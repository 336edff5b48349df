"""When a launch wakes the thread pool (runtime/launch.py): many work-items, or few work-items with
long loops of known trip count; never a single workgroup or a small, short grid."""
from cdnajit.ir import kernel as K
from cdnajit.runtime.launch import PARALLEL_MIN_WORK_ITEMS, runs_in_parallel, statements_per_item


def looping_kernel(workgroups: int, trips: int):
    """Each work-item adds x[i] to y[i] `trips` times."""
    n = workgroups * 64
    x, y = K.GlobalBuffer("x", "f32", n, readonly=True), K.GlobalBuffer("y", "f32", n)
    i, t = K.Var("i", "i32"), K.Var("t", "i32")
    body = [K.Let(i, K.workgroup_id(0) * 64 + K.workitem_id(0)),
            K.For(t, 0, trips, 1, [K.Store(y, i, y[i] + x[i])], uniform=True)]
    return K.Kernel("loop", params=[x, y], grid=(workgroups,), workgroup_size=(64,), body=body)


def test_statements_multiply_out_constant_loops():
    assert statements_per_item(looping_kernel(2, 10).body) == 1 + 1 + 10
    assert statements_per_item(looping_kernel(2, 0).body) == 2


def test_parallel_by_work_items_or_by_work():
    many_items = PARALLEL_MIN_WORK_ITEMS // 64
    assert runs_in_parallel(looping_kernel(many_items, 1))
    assert not runs_in_parallel(looping_kernel(4, 1))           # 256 work-items, a few statements each
    assert runs_in_parallel(looping_kernel(4, 5000))             # the same grid with a long loop
    assert not runs_in_parallel(looping_kernel(1, 10 ** 6))      # one workgroup: nothing to share
