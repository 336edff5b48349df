"""Where LLVM optimises host kernels: in this process for its first IN_PROCESS_COMPILES kernels,
then in a worker process that is replaced every COMPILES_PER_WORKER kernels.

    run("object_code", text, streamed)    a codegen/host_llvm.py function's result

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
import os
import pickle
import subprocess
import sys
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
