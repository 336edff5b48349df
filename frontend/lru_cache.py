"""The bounded caches of compiled programs that `jit` and eager calls keep (frontend/jit.py,
frontend/eager.py): each executable holds its kernels' native code and constants, so a function
called with ever new shapes or static values must forget the least recently used ones.

    cache = LRUCache(size)
    cache.get(key)            # the value, or None; marks the entry most recently used
    cache.put(key, value)     # then forgets the least recently used entries beyond `size`

Lock-free: each OrderedDict operation is atomic under the GIL, and an entry another thread evicts
between a lookup and its move to the end is simply not moved (the caller holds the value).
"""
from __future__ import annotations

import collections
import os

SIZE_ENV = "CDNAJIT_JIT_CACHE_SIZE"
DEFAULT_SIZE = 256


def default_size() -> int:
    """$CDNAJIT_JIT_CACHE_SIZE (read when a jitted or eager function is made), else DEFAULT_SIZE."""
    configured = os.environ.get(SIZE_ENV)
    if not configured:
        return DEFAULT_SIZE
    try:
        size = int(configured)
    except ValueError:
        size = 0
    if size < 1:
        raise ValueError(f"{SIZE_ENV}={configured!r}: expected a positive number of compiled programs")
    return size


class LRUCache:
    """At most `size` entries (a positive int, which may be changed at any time)."""

    def __init__(self, size: int | None = None):
        self.size = default_size() if size is None else size
        self.entries: collections.OrderedDict = collections.OrderedDict()
        # Bound once: a jitted call's lookup is on its fast path.
        self._lookup, self._touch = self.entries.get, self.entries.move_to_end

    def get(self, key):
        value = self._lookup(key)
        if value is not None:
            try:
                self._touch(key)
            except KeyError:  # evicted meanwhile by another thread
                pass
        return value

    def put(self, key, value) -> None:
        self.entries[key] = value
        while len(self.entries) > self.size:
            try:
                self.entries.popitem(last=False)
            except KeyError:  # emptied meanwhile by another thread
                break

    def __len__(self) -> int:
        return len(self.entries)
