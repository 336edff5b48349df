"""The CCL library's routines (ir/ops/library.py's contract): RCCL's collectives between the devices
of one group, as graph ops.

A call's operands are the group's values, one per device in the group's order, and its results are
one per device as well (the reduce: the root's only). Before the devices are unrolled
(passes/spmd.py), a per-device program (shard_map's body, the partitioner's output) holds the same
call with ONE operand, the device's own, as XLA's SPMD programs hold an all-reduce with its replica
groups: `group_size` says how many devices the group has and `axes` which mesh axes it spans
(comma-separated). Such a call is a shape-checked placeholder; only its unrolled form runs.

Every collective moves or combines whole messages along axis 0 of the operands:
  - all_reduce {reducer}: every device gets the reduction of all operands, elementwise;
  - all_gather: every device gets the operands concatenated along axis 0 (shape (g * d0, ...));
  - reduce_scatter {reducer}: operands (g * m, ...); device d gets the reduction of block d (m, ...);
  - broadcast {root}: every device gets operand `root`;
  - reduce {root, reducer}: the root's result only: the reduction of all operands;
  - all_to_all: operands (g * m, ...); device d's result block s is operand s's block d;
  - ppermute {pairs}: (source, destination) pairs of group positions: a destination gets its
    source's operand, a device that no pair names gets zeros (jax.lax.ppermute);
  - sharding_constraint {mesh, spec}: the operand, which the partitioner (passes/partition.py)
    reshards to `spec` over `mesh` ("name=size,..."); it never reaches a kernel;
  - axis_index: no operands; the device's position along `axes` (i32 scalar); replaced by a
    constant when the devices are unrolled.
Reducers: sum, prod, max, min (and, or on bool as numpy's ufuncs). The reference combines in device
order; the kernels combine in their algorithm's order (kernels.py), so float results differ from it
by reassociation only.
"""
from __future__ import annotations

import numpy as np

from ...ir.opdef import fmt_types, require
from ...ir.ops.library import Routine
from ...ir.ops.reduce import check_reducer
from ...ir.types import COMPLEXES, TensorType

GROUP = {"axes": "str", "group_size": "int"}
REDUCERS = ("sum", "prod", "max", "min")


def check_group(name: str, types, attrs, operands=True):
    size = attrs["group_size"]
    require(size >= 1, f"ccl.{name}: group_size must be positive, got {size}")
    if not operands:
        require(not types, f"ccl.{name} takes no operands, got {fmt_types(types)}")
        return
    require(len(types) in (1, size), f"ccl.{name}: a group of {size} devices takes 1 operand (per-device form) "
                                     f"or {size} (one per device), got {len(types)}")
    require(all(t == types[0] for t in types), f"ccl.{name}: the devices' operands differ: {fmt_types(types)}")
    require(types[0].dtype not in COMPLEXES, f"ccl.{name}: complex operands are not supported ({types[0]})")


def check_blocks(name: str, t: TensorType, size: int):
    require(t.ndim >= 1 and t.shape[0] % size == 0,
            f"ccl.{name}: axis 0 of the operand {t} must be a multiple of the group's {size} devices")


def per_device(name):
    def unrolled_only(*arrays, group_size, **attrs):
        require(len(arrays) == group_size,
                f"ccl.{name}: the per-device form (one operand of a group of {group_size}) runs only once the "
                f"devices are unrolled (passes/spmd.py)")
        return reference_of[name](*arrays, group_size=group_size, **attrs)
    return unrolled_only


def combine_all(arrays, reducer):
    ufunc = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[reducer]
    if arrays[0].dtype == np.bool_ and reducer in ("sum", "prod"):
        ufunc = np.logical_or if reducer == "sum" else np.logical_and
    acc = arrays[0].copy()
    with np.errstate(all="ignore"):
        for array in arrays[1:]:
            acc = ufunc(acc, array).astype(arrays[0].dtype)
    return acc


def all_reduce_infer(types, attrs):
    check_group("all_reduce", types, attrs)
    check_reducer("ccl.all_reduce", types[0], attrs["reducer"])
    return list(types)


def all_reduce(*arrays, reducer, **_):
    total = combine_all(arrays, reducer)
    return [total.copy() for _ in arrays]


def all_gather_infer(types, attrs):
    check_group("all_gather", types, attrs)
    t = types[0]
    require(t.ndim >= 1, f"ccl.all_gather: the operand {t} must have an axis 0 to gather along")
    return [TensorType(t.dtype, (attrs["group_size"] * t.shape[0],) + t.shape[1:])] * len(types)


def all_gather(*arrays, **_):
    whole = np.concatenate(arrays, axis=0)
    return [whole.copy() for _ in arrays]


def reduce_scatter_infer(types, attrs):
    check_group("reduce_scatter", types, attrs)
    check_reducer("ccl.reduce_scatter", types[0], attrs["reducer"])
    t, size = types[0], attrs["group_size"]
    check_blocks("reduce_scatter", t, size)
    return [TensorType(t.dtype, (t.shape[0] // size,) + t.shape[1:])] * len(types)


def reduce_scatter(*arrays, reducer, **_):
    total = combine_all(arrays, reducer)
    return [block.copy() for block in np.split(total, len(arrays), axis=0)]


def broadcast_infer(types, attrs):
    check_group("broadcast", types, attrs)
    require(0 <= attrs["root"] < attrs["group_size"], f"ccl.broadcast: root {attrs['root']} is not a device of a "
                                                      f"group of {attrs['group_size']}")
    return list(types)


def broadcast(*arrays, root, **_):
    return [arrays[root].copy() for _ in arrays]


def reduce_infer(types, attrs):
    check_group("reduce", types, attrs)
    check_reducer("ccl.reduce", types[0], attrs["reducer"])
    require(0 <= attrs["root"] < attrs["group_size"], f"ccl.reduce: root {attrs['root']} is not a device of a "
                                                      f"group of {attrs['group_size']}")
    return [types[0]]


def reduce(*arrays, reducer, **_):
    return [combine_all(arrays, reducer)]


def all_to_all_infer(types, attrs):
    check_group("all_to_all", types, attrs)
    check_blocks("all_to_all", types[0], attrs["group_size"])
    return list(types)


def all_to_all(*arrays, **_):
    blocks = [np.split(a, len(arrays), axis=0) for a in arrays]
    return [np.concatenate([blocks[s][d] for s in range(len(arrays))], axis=0) for d in range(len(arrays))]


def ppermute_infer(types, attrs):
    check_group("ppermute", types, attrs)
    pairs, size = attrs["pairs"], attrs["group_size"]
    require(all(0 <= s < size and 0 <= d < size for s, d in pairs),
            f"ccl.ppermute: pairs {list(pairs)} name a device outside the group of {size}")
    require(len({d for _, d in pairs}) == len(pairs) and len({s for s, _ in pairs}) == len(pairs),
            f"ccl.ppermute: pairs {list(pairs)} send from or to a device twice")
    return list(types)


def ppermute(*arrays, pairs, **_):
    results = [np.zeros_like(a) for a in arrays]
    for source, destination in pairs:
        results[destination] = arrays[source].copy()
    return results


def axis_index_infer(types, attrs):
    check_group("axis_index", types, attrs, operands=False)
    return [TensorType("i32", ())]


def axis_index(**attrs):
    raise NotImplementedError("ccl.axis_index runs only once the devices are unrolled (passes/spmd.py), "
                              "which replaces it by each device's constant")


def sharding_constraint_infer(types, attrs):
    require(len(types) == 1, f"ccl.sharding_constraint takes 1 operand, got {fmt_types(types)}")
    return list(types)


def sharding_constraint(x, **_):
    return [x.copy()]


reference_of = {"all_reduce": all_reduce, "all_gather": all_gather, "reduce_scatter": reduce_scatter,
                "broadcast": broadcast, "reduce": reduce, "all_to_all": all_to_all, "ppermute": ppermute}

ROUTINES = {
    "all_reduce": Routine({**GROUP, "reducer": "str"}, all_reduce_infer, per_device("all_reduce"),
                          "every device gets the reduction of the group's operands"),
    "all_gather": Routine(GROUP, all_gather_infer, per_device("all_gather"),
                          "every device gets the operands concatenated along axis 0"),
    "reduce_scatter": Routine({**GROUP, "reducer": "str"}, reduce_scatter_infer, per_device("reduce_scatter"),
                              "device d gets block d of the reduction"),
    "broadcast": Routine({**GROUP, "root": "int"}, broadcast_infer, per_device("broadcast"),
                         "every device gets the root's operand"),
    "reduce": Routine({**GROUP, "root": "int", "reducer": "str"}, reduce_infer, per_device("reduce"),
                      "the root gets the reduction of the group's operands"),
    "all_to_all": Routine(GROUP, all_to_all_infer, per_device("all_to_all"),
                          "device d's block s is device s's block d"),
    "ppermute": Routine({**GROUP, "pairs": "int_pairs"}, ppermute_infer, per_device("ppermute"),
                        "each destination gets its source's operand; others zeros"),
    "sharding_constraint": Routine({"mesh": "str", "spec": "str"}, sharding_constraint_infer, sharding_constraint,
                                   "the operand, to be sharded as `spec` (passes/partition.py)"),
    "axis_index": Routine(GROUP, axis_index_infer, axis_index, "the device's position along the axes"),
}
