"""codegen/llvm_worker.py: host kernels optimised in a worker process give the objects optimised
here, the worker is replaced as it should be, and its failures are clear errors."""
import os
import signal
import time

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.codegen import host, host_llvm, llvm_worker
from cdnajit.ir import kernel as K


@pytest.fixture
def in_worker(monkeypatch):
    """Every compile in the worker, starting with a fresh one; the test's worker closed after."""
    monkeypatch.setattr(llvm_worker, "_in_process_left", 0)
    llvm_worker._close_worker()
    yield
    llvm_worker._close_worker()


def add_kernel(constant: float) -> K.Kernel:
    x = K.GlobalBuffer("x", "f32", 1000, readonly=True)
    y = K.GlobalBuffer("y", "f32", 1000)
    i = K.workgroup_id(0) * 256 + K.workitem_id(0)
    body = [K.If(i < 1000, [K.Store(y, i, x[i] + K.Const(constant, "f32"))])]
    return K.Kernel("add", params=[x, y], grid=(4,), workgroup_size=(256,), body=body)


def test_the_worker_emits_the_object_this_process_does(in_worker):
    kernel = add_kernel(2.5)
    text, streamed = str(host.llvm_module(kernel)), host.streamed_buffers(kernel)
    here = host_llvm.object_code(text, streamed)
    assert host.compile_object(kernel) == here
    assert llvm_worker.worker_pid() is not None


def test_programs_compiled_in_workers_run(in_worker, monkeypatch):
    monkeypatch.setattr(llvm_worker, "COMPILES_PER_WORKER", 2)
    x = np.linspace(-3, 3, 300, dtype=np.float32)
    pids = []
    for c in range(5):
        np.testing.assert_allclose(cj.jit(lambda x: cnp.tanh(x) * c)(x), np.tanh(x) * c, rtol=2e-6, atol=1e-6)
        pids.append(llvm_worker.worker_pid())
    assert len(set(pids)) == 3 and pids[0] == pids[1] != pids[2], pids   # replaced after two compiles


def test_an_error_in_the_worker_is_raised_here_and_the_worker_stays(in_worker):
    host.compile_object(add_kernel(1.0))
    pid = llvm_worker.worker_pid()
    with pytest.raises(RuntimeError, match="expected top-level entity"):
        llvm_worker.run("object_code", "this is not LLVM IR", set())
    assert llvm_worker.worker_pid() == pid


def test_a_dead_worker_fails_its_request_clearly_and_is_replaced(in_worker, monkeypatch):
    host.compile_object(add_kernel(1.0))
    pid = llvm_worker.worker_pid()
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(RuntimeError, match=r"LLVM's worker process .* ended with status -9"):
        host.compile_object(add_kernel(3.0))
    assert llvm_worker.worker_pid() is None
    host.compile_object(add_kernel(3.0))
    assert llvm_worker.worker_pid() not in (None, pid)


def test_a_forked_child_starts_its_own_worker(in_worker):
    host.compile_object(add_kernel(1.0))
    parent_worker = llvm_worker.worker_pid()
    child = os.fork()
    if child == 0:
        try:
            x = np.arange(7.0)
            ok = np.array_equal(cj.jit(lambda x: x * 11.0)(x), x * 11.0)
            os._exit(0 if ok and llvm_worker.worker_pid() not in (None, parent_worker) else 1)
        except BaseException:
            os._exit(2)
    assert os.waitpid(child, 0)[1] == 0
    host.compile_object(add_kernel(5.0))              # the parent's worker still answers it
    assert llvm_worker.worker_pid() == parent_worker


# ---- map_in_forks: a batch of kernels on several CPUs ----

def slow_square(item):
    time.sleep(0.05)
    return os.getpid(), item * item


@pytest.mark.skipif(not llvm_worker.FORK_AVAILABLE, reason="forks only on Linux")
def test_map_in_forks_shares_the_items_and_keeps_their_order():
    results = llvm_worker.map_in_forks(slow_square, list(range(9)), jobs=3)
    assert [square for _, square in results] == [i * i for i in range(9)]
    pids = {pid for pid, _ in results}
    assert os.getpid() in pids and len(pids) > 1
    for pid in pids - {os.getpid()}:   # each child was waited for
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def fails_on_five(item):
    time.sleep(0.02)
    if item == 5:
        raise ValueError("item five")
    return item


@pytest.mark.skipif(not llvm_worker.FORK_AVAILABLE, reason="forks only on Linux")
def test_map_in_forks_raises_a_call_s_error_whichever_process_made_it():
    for _ in range(3):
        with pytest.raises(ValueError, match="item five"):
            llvm_worker.map_in_forks(fails_on_five, list(range(8)), jobs=2)


@pytest.mark.skipif(not llvm_worker.FORK_AVAILABLE, reason="forks only on Linux")
def test_a_child_that_dies_fails_the_batch_clearly():
    parent = os.getpid()

    def dies_in_a_child(item):
        if os.getpid() != parent:
            os._exit(3)
        time.sleep(0.5)   # the parent is slow, so the child takes an item even when it starts late
        return item

    with pytest.raises(RuntimeError, match="forked compile process ended with status 3"):
        llvm_worker.map_in_forks(dies_in_a_child, list(range(6)), jobs=2)


@pytest.mark.skipif(not llvm_worker.FORK_AVAILABLE, reason="forks only on Linux")
def test_compile_objects_in_forks_gives_each_kernel_its_own_object(monkeypatch):
    monkeypatch.setenv("CDNAJIT_COMPILE_JOBS", "2")
    kernels = [add_kernel(float(c)) for c in range(4)]
    assert host.compile_objects(kernels) == [host.compile_object(k) for k in kernels]


def test_compile_jobs_must_be_a_positive_number(monkeypatch):
    monkeypatch.setenv("CDNAJIT_COMPILE_JOBS", "many")
    with pytest.raises(ValueError, match="CDNAJIT_COMPILE_JOBS='many'"):
        host.compile_objects([add_kernel(1.0), add_kernel(2.0)])
