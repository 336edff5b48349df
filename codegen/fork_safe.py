"""Locks that a child process forked while other threads compile finds free.

    with LLVM_LOCK:            # every sequence of LLVM calls that must not interleave with another
        ...
    _table_lock = ForkSafeLock()   # a short critical section over Python data

os.fork copies only the thread that calls it: a lock another thread holds at that moment stays
held in the child forever, and LLVM's state may be copied half-updated. So:

- LLVM_LOCK is llvmlite's own lock (reentrant), which each call into LLVM takes: the compiler takes
  it around its multi-call sequences (parse, verify, optimize, emit; JIT linking) too. It is taken
  before a fork and released after it, in the parent and in the child, so no thread is inside LLVM
  when the process is copied (a fork waits for a compile step in progress) and the child finds it
  free. Being llvmlite's, it is one lock however many copies of the compiler a process imported.
- A ForkSafeLock guards Python data only, for moments: the child gets a fresh lock in place of
  each, since the thread that may have held one is gone (a fork need not wait for it).

Worker threads do not survive a fork either: runtime/launch.py starts a new pool in the child.
"""
from __future__ import annotations

import os
import threading
import weakref

from llvmlite.binding import ffi

LLVM_LOCK = ffi.lib._lock  # llvmlite's _LLVMLock: a threading.RLock and lock callbacks, a context manager


class ForkSafeLock:
    """A threading.Lock for `with`, renewed (free) in a forked child."""

    __slots__ = ("_lock", "__weakref__")

    def __init__(self):
        self._lock = threading.Lock()
        _fork_safe_locks.add(self)

    def __enter__(self):
        self._lock.acquire()

    def __exit__(self, *exc_info):
        self._lock.release()


_fork_safe_locks: weakref.WeakSet = weakref.WeakSet()


def _take_llvm_lock() -> None:
    LLVM_LOCK.__enter__()


def _release_llvm_lock() -> None:
    LLVM_LOCK.__exit__(None, None, None)


def _child_after_fork() -> None:
    _release_llvm_lock()
    for lock in list(_fork_safe_locks):
        lock._lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX: elsewhere there is no fork
    os.register_at_fork(before=_take_llvm_lock, after_in_parent=_release_llvm_lock, after_in_child=_child_after_fork)
