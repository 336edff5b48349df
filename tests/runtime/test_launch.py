"""runtime/launch.py: when a launch wakes the thread pool (many work-items, or few work-items with
long loops of known trip count; never a single workgroup or a small, short grid), how its threads
share the grid (ranges taken from one counter), launches on the native pool (back to back, while
its workers sleep, from many threads at once, from compiled code, in a forked child;
tests/runtime/test_native.py has the pool's own), and the alignment of written buffers."""
import ctypes
import multiprocessing
import os
import threading
import time

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
import pytest

import cdnajit as cj
from cdnajit.codegen.host import WRITTEN_BUFFER_ALIGNMENT
from cdnajit.errors import VerifyError
from cdnajit.ir import kernel as K
from cdnajit.runtime.launch import (PARALLEL_MIN_WORK_ITEMS, STAGGER_BYTES, STAGGER_COLOURS, STAGGER_FROM_BYTES,
                                    aligned_empty, compile_kernel, runs_in_parallel, statements_per_item, worker_pool)
from cdnajit.runtime.native import link_module
from cdnajit.runtime.native_pool import pool_code

I64, PTR = ir.IntType(64), ir.PointerType()


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


def row_kernel(expected_trips=None):
    """Each work-item sums its row of x, from starts[i] to starts[i + 1]: trips the data decide."""
    starts, x, y = K.GlobalBuffer("starts", "i64", 65, readonly=True), K.GlobalBuffer("x", "f32", 1000, readonly=True), \
        K.GlobalBuffer("y", "f32", 64)
    i, j, acc, width = K.Var("i", "i64"), K.Var("j", "i64"), K.Var("acc", "f32"), K.ScalarParam("width", "i64")
    body = [K.Let(i, K.workitem_id(0).cast("i64")), K.Let(acc, K.Const(0, "f32")),
            K.For(j, starts[i], starts[i + 1], 1, [K.Assign(acc, acc + x[j])], expected_trips=expected_trips),
            K.Store(y, i, acc)]
    return K.Kernel("rows", params=[starts, x, y, width], grid=(1,), workgroup_size=(64,), body=body,
                    arguments=[("width", 10)])


def test_a_loop_of_data_bounds_counts_its_expected_trips():
    assert statements_per_item(row_kernel().body) == 2 + 1 + 1 + 1          # the body once
    kernel = row_kernel(K.ScalarParam("width", "i64") / 2)
    assert statements_per_item(kernel.body, dict(kernel.arguments)) == 2 + 1 + 5 + 1
    assert "in range(starts[i], starts[(i + 1:i64)], 1:i64) expecting (width / 2:i64) trips {" in str(kernel)
    K.verify(kernel)
    with pytest.raises(VerifyError, match="expected trips .* must be an extent"):
        K.verify(row_kernel(K.Var("i", "i64")))


def test_parallel_by_work_items_or_by_work():
    many_items = PARALLEL_MIN_WORK_ITEMS // 64
    assert runs_in_parallel(looping_kernel(many_items, 1))
    assert not runs_in_parallel(looping_kernel(4, 1))           # 256 work-items, a few statements each
    assert runs_in_parallel(looping_kernel(4, 5000))             # the same grid with a long loop
    assert not runs_in_parallel(looping_kernel(1, 10 ** 6))      # one workgroup: nothing to share


def counting_kernel(workgroups: int):
    """Work-item 0 of each workgroup adds 1 to y[workgroup id]."""
    y = K.GlobalBuffer("y", "i32", workgroups)
    g = K.workgroup_id(0)
    body = [K.If(K.workitem_id(0).eq(0), [K.Store(y, g, y[g] + 1)])]
    return K.Kernel("count", params=[y], grid=(workgroups,), workgroup_size=(64,), body=body)


@pytest.mark.parametrize("workgroups, grab", [(1, 1), (7, 1), (7, 3), (7, 7), (7, 100), (64, 4)])
def test_threads_sharing_one_counter_run_every_workgroup_once(workgroups, grab):
    compiled = compile_kernel(counting_kernel(workgroups))
    y = np.zeros(workgroups, np.int32)
    compiled.arg_pointers[0] = y.ctypes.data
    counter = ctypes.c_int64(0)
    threads = [threading.Thread(target=compiled.run, args=(ctypes.addressof(compiled.arg_pointers),
                                                           ctypes.addressof(counter), workgroups, grab))
               for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    np.testing.assert_array_equal(y, 1)
    # Each thread ended with one take past the last range: a launch's caller waits for this value.
    assert counter.value == (-(-workgroups // grab) + len(threads)) * grab


def parallel_counting_kernel(workgroups: int):
    """The counting kernel, launched on the pool, and a zeroed buffer for it."""
    compiled = compile_kernel(counting_kernel(workgroups))
    compiled.parallel = True
    return compiled, np.zeros(workgroups, np.int32)


# Launches back to back; thousands of small ones (the caller often done before a worker claims
# its seat); and launches 0.1 s apart, far past the workers' spin: they block on their conditions.
@pytest.mark.parametrize("workgroups, launches, pause", [(1000, 5, 0.0), (16, 5000, 0.0), (1000, 3, 0.1)])
def test_a_parallel_launch_runs_every_workgroup_once(workgroups, launches, pause):
    compiled, y = parallel_counting_kernel(workgroups)
    for _ in range(launches):
        time.sleep(pause)
        compiled(y)
    np.testing.assert_array_equal(y, launches)


def test_concurrent_launches_from_many_threads():
    """One launch holds the pool at a time; the others run alone on their own threads."""
    compiled, _ = parallel_counting_kernel(1000)
    results = [np.zeros(1000, np.int32) for _ in range(8)]
    blocks = [(ctypes.c_void_p * 1)(y.ctypes.data) for y in results]

    def launch_many(block):
        for _ in range(200):
            compiled.launch(ctypes.addressof(block))
    threads = [threading.Thread(target=launch_many, args=(block,)) for block in blocks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for y in results:
        np.testing.assert_array_equal(y, 200)


def launching_loop():
    """`launch_times(pool_launch, pool, run, block, total, times)`: compiled code that calls
    pool_launch `times` times through its address, as a native loop does."""
    module = ir.Module(name="launching")
    module.triple = llvm.get_process_triple()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, PTR, PTR, PTR, I64, I64]), name="launch_times")
    launch_address, pool, run, block, total, times = function.args
    entry, loop, done = (function.append_basic_block(name) for name in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    pool_launch = b.inttoptr(launch_address, ir.PointerType(ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR, I64])))
    b.branch(loop)
    b.position_at_end(loop)
    count = b.phi(I64)
    count.add_incoming(ir.Constant(I64, 0), entry)
    b.call(pool_launch, [pool, run, block, total])
    counted = b.add(count, ir.Constant(I64, 1))
    count.add_incoming(counted, loop)
    b.cbranch(b.icmp_signed("<", counted, times), loop, done)
    b.position_at_end(done)
    b.ret_void()
    return link_module(module, "launch_times")


def test_compiled_code_launches_on_the_pool_through_its_address():
    compiled = compile_kernel(counting_kernel(1000))
    y = np.zeros(1000, np.int32)
    block = (ctypes.c_void_p * 1)(y.ctypes.data)
    library = launching_loop()
    launch_times = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_int64, ctypes.c_int64)(library["launch_times"])
    launch_times(pool_code().launch_address, worker_pool().address, compiled.run_address, ctypes.addressof(block),
                 1000, 300)
    np.testing.assert_array_equal(y, 300)


def count_in_child(connection):
    compiled, y = parallel_counting_kernel(1000)
    compiled(y)
    connection.send(int(y.sum()))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
def test_a_forked_child_launches_on_a_pool_of_its_own():
    """The parent's pool threads do not exist in a forked child: its launch must not wait for them."""
    worker_pool()                              # the parent's pool exists before the fork
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=count_in_child, args=(sender,))
    child.start()
    child.join(timeout=120)
    if child.is_alive():
        child.kill()
        pytest.fail("a parallel launch in a forked child hung")
    assert child.exitcode == 0 and receiver.recv() == 1000


@pytest.mark.parametrize("shape", [(0,), (1,), (3, 5), (1000, 7)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.complex64])
def test_aligned_empty(shape, dtype):
    array = aligned_empty(shape, dtype)
    assert array.shape == shape and array.dtype == dtype and array.flags.c_contiguous and array.flags.writeable
    assert array.size == 0 or array.ctypes.data % WRITTEN_BUFFER_ALIGNMENT == 0  # an empty one is never written


def test_large_buffers_are_staggered_within_their_pages():
    """Consecutive large buffers start at different offsets past their allocation's start, at least
    STAGGER_BYTES apart (mmap gives every large allocation the same offset within its page, and
    buffers at equal page offsets make a kernel's loads wait on its stores: 4K aliasing)."""
    arrays = [aligned_empty((STAGGER_FROM_BYTES // 4,), np.float32) for _ in range(STAGGER_COLOURS)]
    offsets = {(a.ctypes.data - a.base.ctypes.data) // STAGGER_BYTES for a in arrays}
    assert len(offsets) == STAGGER_COLOURS
    assert all(a.ctypes.data % WRITTEN_BUFFER_ALIGNMENT == 0 for a in arrays)


def test_a_misaligned_written_buffer_is_staged_with_its_contents():
    """y += x three times: the kernel reads the buffer it writes, so the aligned copy starts as y."""
    kernel = looping_kernel(16, 3)   # 1024 f32: 4 KiB, a buffer the ABI aligns
    x = np.arange(1024, dtype=np.float32)
    y = np.ones(1025, np.float32)[1:]
    assert y.ctypes.data % WRITTEN_BUFFER_ALIGNMENT
    compile_kernel(kernel)(x, y)
    np.testing.assert_array_equal(y, 1 + 3 * x)


def test_executables_allocate_aligned_results():
    result = cj.jit(lambda a: a * 2.0)(np.ones((33, 31), np.float32))
    assert result.ctypes.data % WRITTEN_BUFFER_ALIGNMENT == 0
    np.testing.assert_array_equal(result, 2.0)
