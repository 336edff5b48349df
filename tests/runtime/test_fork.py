"""A process forked while another thread compiles can compile and run (codegen/fork_safe.py).

Each child is forked with os.fork, does its work and leaves with os._exit (never returning into
pytest); the parent waits for it with a deadline and kills it past that, which fails the test.
"""
import os
import signal
import threading
import time

import numpy as np
import pytest

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit.codegen import amdgpu, fork_safe
from cdnajit.runtime import cache as cache_module
from cdnajit.runtime import executable as ex
from cdnajit.runtime import launch
from cdnajit.runtime.cache import CompileCache, default_cache

X = np.linspace(-2, 2, 1 << 16)  # large enough for a launch on the worker pool
CHILD_SECONDS = 60  # a child compiles one small program: seconds on a small, loaded machine


def in_child(work) -> int:
    """Fork; the child runs `work()` and exits 0 if it returns True, 1 otherwise. Returns the
    child's exit code, or -1 if it was still running after CHILD_SECONDS (and was killed)."""
    pid = os.fork()
    if pid == 0:
        code = 2
        try:
            code = 0 if work() else 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + CHILD_SECONDS
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return -1


LOCKS = {"llvm": fork_safe.LLVM_LOCK, "cache counts": cache_module._counts_lock,
         "cache folders": cache_module._caches_lock, "amdgpu kernels": amdgpu._cache_lock,
         "host kernels": launch._cache_lock}


@pytest.mark.parametrize("name", LOCKS)
def test_a_lock_held_by_another_thread_at_fork_is_free_in_the_child(tmp_path, name):
    """The fork waits for LLVM's lock (held for 0.2 s here); the others the child gets anew. Either
    way the child takes the lock and compiles and runs a program of its own."""
    lock, taken, release = LOCKS[name], threading.Event(), threading.Event()

    def hold():
        with lock:
            taken.set()
            release.wait()

    def work():
        with lock:
            pass
        graph = cj.make_graph(lambda v: v - 0.25)(X)
        return np.array_equal(ex.Executable.compile(graph, default_cache())(X)[0], X - 0.25)

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait()
    if lock is fork_safe.LLVM_LOCK:
        threading.Timer(0.2, release.set).start()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("CDNAJIT_CACHE_DIR", str(tmp_path))
            assert in_child(work) == 0
    finally:
        release.set()
        holder.join()


def test_a_kernel_launching_in_another_thread_at_fork_launches_in_the_child(tmp_path):
    """A kernel's launch lock (its argument block is shared) is held for the whole launch: a child
    forked meanwhile gets it free, and launches the kernel it inherited."""
    kernel = ex.Executable.compile(cj.make_graph(lambda v: v - 0.25)(X), CompileCache(tmp_path)).kernels[0]
    compiled = launch.compile_kernel(kernel)
    taken, release = threading.Event(), threading.Event()

    def hold():
        with compiled.lock:
            taken.set()
            release.wait()

    def work():
        result = np.empty_like(X)
        compiled(X, result)
        return np.array_equal(result, X - 0.25)

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait()
    try:
        assert in_child(work) == 0
    finally:
        release.set()
        holder.join()


def test_children_forked_while_a_thread_compiles_compile_and_run(tmp_path):
    """Unless LLVM's lock is held across the fork, most such children wait forever on a lock the
    compiling thread held when they were forked. Each child compiles a program of its own (a new constant, so no
    cache has it) that is large enough to run on the worker pool, which the child starts anew."""
    x = X
    stop = threading.Event()
    compiled = []

    def compile_in_a_loop():
        for i in range(1, 1000):
            if stop.is_set():
                return
            graph = cj.make_graph(lambda v, i=i: cnp.sin(v) * float(i) + v * v)(x[:100])
            compiled.append(ex.Executable.compile(graph, CompileCache(tmp_path / "parent")))

    def child_work(n):
        def work():
            graph = cj.make_graph(lambda v: (v + float(n)) * 0.5)(x)
            result = ex.Executable.compile(graph, CompileCache(tmp_path / f"child{n}"))(x)[0]
            return np.array_equal(result, (x + n) * 0.5)  # one rounding (the add), as numpy's
        return work

    ex.Executable.compile(cj.make_graph(lambda v: v + 1.0)(x), CompileCache(tmp_path / "parent"))(x)  # pool up
    compiler = threading.Thread(target=compile_in_a_loop)
    compiler.start()
    try:
        codes = [in_child(child_work(n)) for n in range(8)]
    finally:
        stop.set()
        compiler.join()
    assert len(compiled) >= 1
    assert codes == [0] * 8, "exit codes (-1: hung and killed)"
