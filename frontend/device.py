"""`cj.device_put`: arrays laid out as the runtime allocates its own buffers.

jax.device_put copies an array to a device, where the runtime's allocator aligns it. On the host,
cdnajit's "device memory" is numpy memory: its results start on a 64-byte boundary (a cache line,
an AVX-512 vector; runtime/launch.py: aligned_copy), while numpy aligns large arrays to 16 bytes
only. Kernels read both, but a GEMM whose operand rows start mid-line fetches more lines: a
256x1024x1024 f32 GEMM ran about 10 % faster on an aligned A (benchmarks/README.md). Arrays a
program reuses over many calls (weights, a batch) are worth placing once, as with JAX.
"""
from __future__ import annotations

import numpy as np

from ..runtime.launch import aligned_copy
from .pytree import tree_map


def device_put(tree, sharding=None):
    """A copy of every array leaf of `tree` (any pytree; numbers and array-likes become arrays),
    C-contiguous, in native byte order, starting on a 64-byte boundary; with a NamedSharding
    (frontend/sharding.py), a ShardedArray: one such copy of each device's shard. A ShardedArray
    leaf without a sharding stays as it is."""
    if sharding is not None:
        from .sharding import NamedSharding, put
        if not isinstance(sharding, NamedSharding):
            raise TypeError(f"device_put: {sharding!r} is not a NamedSharding")
        return tree_map(lambda leaf: put(leaf, sharding), tree)

    from .sharding import ShardedArray

    def place(leaf):
        if isinstance(leaf, ShardedArray):   # already on its devices
            return leaf
        array = np.asarray(leaf)
        if array.dtype.hasobject:
            raise TypeError(f"device_put: cannot place an array of Python objects ({array.dtype}, "
                            f"shape {array.shape})")
        return aligned_copy(array)

    return tree_map(place, tree)
