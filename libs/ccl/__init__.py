"""libs/ccl: collectives between devices, as RCCL provides them (all-reduce, all-gather,
reduce-scatter, broadcast, reduce, all-to-all, send/receive as ppermute).

routines.py   the routines: a group's operands (one per device) and results, shape rule, numpy reference.
kernels.py    the solutions (ring and tree all-reduce, the others' one each) and their kernels.
cost.py       the modelled time of each collective on an 8 x MI300X node (Infinity Fabric figures).
This file registers the library (ir/ops/library.py's contract). The library has no matcher rules:
calls come from the frontend's collectives (shard_map's lax.psum, ...) and the partitioner.
"""
from ...ir.ops.library import Library, register_library
from . import kernels, routines

LIBRARY = register_library(Library(name="ccl", routines=routines.ROUTINES, select=kernels.select, emit=kernels.emit,
                                   explain=kernels.explain))
