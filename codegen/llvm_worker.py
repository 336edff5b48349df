"""Where LLVM optimises host kernels: in this process for its first IN_PROCESS_COMPILES kernels,
then in a worker process that is replaced every COMPILES_PER_WORKER kernels; and, for several
kernels at once, also in forked copies of this process.

    run("object_code", text, streamed)    a codegen/host_llvm.py function's result
    map_in_forks(compile, kernels, jobs)  [compile(k) for k in kernels], on up to `jobs` CPUs

llvmlite 0.50 keeps about 70 KB of C++ memory per module it optimises and never frees it (its
PassBuilder's pipeline and instrumentation; measured, and reusing a built pipeline aborts). A
process that compiles thousands of programs would grow without bound. The worker takes the leak
with it when it is replaced. The first compiles stay here so that a short script never waits for
a worker to start (about 0.1 s); they leak at most IN_PROCESS_COMPILES times 70 KB.

The worker is codegen/host_llvm.py run as a script with this interpreter: it imports llvmlite
only. One request at a time goes to it, under a lock. A forked child forgets its parent's worker
and starts its own when it needs one. If the worker dies during a request (LLVM crashed on the
module), that request raises a RuntimeError and the next one starts a new worker.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import signal
import struct
import subprocess
import sys
import warnings
from pathlib import Path

from . import host_llvm
from .fork_safe import LLVM_LOCK, ForkSafeLock

IN_PROCESS_COMPILES = 32
COMPILES_PER_WORKER = 256
WORKER_SCRIPT = Path(host_llvm.__file__)


class Worker:
    """One worker process and the count of requests it has answered."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, str(WORKER_SCRIPT)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, close_fds=True)
        self.answered = 0

    def request(self, name: str, args: tuple):
        message = pickle.dumps((name, args))
        try:
            self.process.stdin.write(host_llvm.LENGTH.pack(len(message)) + message)
            self.process.stdin.flush()
            header = self.process.stdout.read(host_llvm.LENGTH.size)
            reply = self.process.stdout.read(host_llvm.LENGTH.unpack(header)[0]) if header else b""
        except BrokenPipeError:
            header = reply = b""
        if not reply:
            status = self.process.wait()
            raise RuntimeError(f"LLVM's worker process (codegen/host_llvm.py) ended with status {status} "
                               f"during {name}: LLVM crashed on this kernel's module")
        self.answered += 1
        ok, value = pickle.loads(reply)
        if not ok:
            raise value
        return value

    def close(self, kill: bool = False) -> None:
        """End the process: it exits when its requests end (or at once, killed)."""
        if kill:
            self.process.kill()
        try:
            self.process.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


_worker: Worker | None = None
_worker_lock = ForkSafeLock()
_in_process_left = IN_PROCESS_COMPILES


def run(name: str, *args):
    """host_llvm's function `name` on `args`, here or in the worker process."""
    global _worker, _in_process_left
    with _worker_lock:
        if _in_process_left == 0:
            if _worker is not None and _worker.answered >= COMPILES_PER_WORKER:
                _worker.close()
                _worker = None
            if _worker is None:
                _worker = Worker()
            try:
                return _worker.request(name, args)
            except RuntimeError:
                if _worker.process.poll() is not None:   # it died: the next request starts another
                    _worker = None
                raise
            except BaseException:
                # Interrupted between request and reply: the streams are out of step.
                _worker.close(kill=True)
                _worker = None
                raise
        _in_process_left -= 1
    with LLVM_LOCK:
        return host_llvm.REQUESTS[name](*args)


# Fork only on Linux: elsewhere a forked child of a process with threads may hang in the system's
# own libraries (macOS), or there is no fork.
FORK_AVAILABLE = sys.platform.startswith("linux") and hasattr(os, "fork")
# An item's index in the queue of tasks, a pipe: all are written before the first read, and a
# pipe holds 64 KiB; Linux reads a 4-byte record of a pipe whole, under the pipe's lock, so the
# processes taking tasks never split one.
TASK = struct.Struct("<I")
MAX_QUEUED_TASKS = 4096


def map_in_forks(function, items: list, jobs: int) -> list:
    """[function(item) for item in items], computed by this process and up to `jobs` - 1 forked
    copies of it at once. Each takes the next item left, in the given order (put the longest
    first), until none are. Raises what a call raised, or a RuntimeError where a child died."""
    if len(items) > MAX_QUEUED_TASKS:
        return [result for start in range(0, len(items), MAX_QUEUED_TASKS)
                for result in map_in_forks(function, items[start:start + MAX_QUEUED_TASKS], jobs)]
    forks = min(jobs, len(items)) - 1
    if forks < 1 or not FORK_AVAILABLE:
        return [function(item) for item in items]
    tasks, queue = os.pipe()
    os.write(queue, b"".join(TASK.pack(i) for i in range(len(items))))
    os.close(queue)
    children: dict[int, int] = {}   # pid -> the read end of its results
    results: dict[int, object] = {}
    try:
        for _ in range(forks):
            read_end, write_end = os.pipe()
            with warnings.catch_warnings():
                # JAX (when imported) and Python 3.12 warn that a fork of a process with threads
                # may deadlock in a lock another thread held. The child takes none: it runs this
                # file's compile requests (LLVM's lock is released in it, codegen/fork_safe.py)
                # and leaves by os._exit, never touching JAX or the launch threads' state.
                warnings.filterwarnings("ignore", r".*fork\(\)", category=RuntimeWarning)
                warnings.filterwarnings("ignore", r".*fork\(\)", category=DeprecationWarning)
                pid = os.fork()
            if pid == 0:
                os.close(read_end)
                _serve_forked(function, items, tasks, write_end)   # never returns
            os.close(write_end)
            children[pid] = read_end
        for index in _taken_tasks(tasks):
            results[index] = function(items[index])
        failure = None
        for pid, read_end in list(children.items()):
            message = _read_all(read_end)
            status = os.waitpid(pid, 0)[1]
            del children[pid]
            os.close(read_end)
            ok, value = _reply(message, status)
            if ok:
                results.update(value)
            failure = failure or (None if ok else value)
        if failure is not None:
            raise failure
    finally:
        os.close(tasks)
        for pid, read_end in children.items():   # left by an error or an interrupt here
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            os.close(read_end)
    return [results[i] for i in range(len(items))]


def _reply(message: bytes, status: int) -> tuple[bool, object]:
    """A child's (True, results) or (False, exception); a child that died sent nothing."""
    if not message:
        return False, RuntimeError(f"a forked compile process ended with status "
                                   f"{os.waitstatus_to_exitcode(status)}: LLVM crashed on one of the kernels")
    try:
        return pickle.loads(message)
    except Exception as error:   # an exception of a class that cannot be rebuilt from its arguments
        return False, RuntimeError(f"a forked compile process failed, and its error could not be read: {error}")


def _taken_tasks(tasks: int):
    while record := os.read(tasks, TASK.size):
        yield TASK.unpack(record)[0]


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _serve_forked(function, items: list, tasks: int, results: int) -> None:
    """A forked child's life: take tasks, send (True, [(index, result)...]) or (False, exception)
    pickled, exit. It compiles in its own process (its leak ends with it)."""
    global _in_process_left
    try:
        _in_process_left = len(items)
        message = pickle.dumps((True, [(index, function(items[index])) for index in _taken_tasks(tasks)]))
    except BaseException as error:
        try:
            message = pickle.dumps((False, error))
        except Exception:
            message = pickle.dumps((False, RuntimeError(f"{type(error).__name__}: {error}")))
    try:
        _write_all(results, message)
    finally:
        os._exit(0)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def worker_pid() -> int | None:
    """The worker process's id, or None while there is none."""
    with _worker_lock:
        return None if _worker is None else _worker.process.pid


def _close_worker() -> None:
    global _worker
    if _worker is not None:
        _worker.close()
        _worker = None


def _forget_worker_in_child() -> None:
    """The parent's worker answers the parent. The child's copies of its pipes become /dev/null,
    so that nothing the child flushes or closes reaches the parent's streams."""
    global _worker
    if _worker is not None:
        null = os.open(os.devnull, os.O_RDWR)
        for stream in (_worker.process.stdin, _worker.process.stdout):
            os.dup2(null, stream.fileno())
        os.close(null)
        _worker.process.returncode = 0   # not the child's to wait for
        _worker = None


atexit.register(_close_worker)
os.register_at_fork(after_in_child=_forget_worker_in_child)
