"""W17: collectives between logical devices (libs/ccl) and a tensor-parallel MLP over them.

- W17.all_reduce.<bytes>: a float32 all-reduce (sum) of a message of <bytes> per device over 8
  logical devices, as users write it: `shard_map(lambda x: lax.psum(x, "i"))` on a ShardedArray.
  The numpy peer copies the same 8 messages (np.copy of each): the same bytes read and written, so
  cdnajit/numpy is the all-reduce's bandwidth against a plain copy's. rccl-tests' bus bandwidth of
  a time t is S/t * 2(n - 1)/n. The issue asks for sizes up to 256 MiB; this machine is shared, so
  the largest here is 64 MiB per device (1 GiB of operands and as much of results).
- W17.all_gather.<bytes>, W17.reduce_scatter.<bytes>: the same messages gathered
  (`lax.all_gather(x, "i", tiled=True)`: every device gets the 8 concatenated) against numpy
  concatenating them once per device, and reduce-scattered (`lax.psum_scatter(x, "i", tiled=True)`:
  device d gets block d of the sum) against numpy's sum of the 8 messages: in each pair the same
  bytes read and written. All-gather stops at 4 MiB per device (its results are 8 x 8 x 4 MiB).
- W17.tp_mlp.<n>: tanh(x @ w1) @ w2 with w1 split by columns and w2 by rows over n devices
  (Megatron), one all-reduce of the result, against numpy's and JAX's unsharded runs. Scaled down
  from the issue's 4096 x 16384 x 4096, batch 256, to 1024 x 4096 x 1024, batch 256 (a sixteenth of
  the work: the host has two cores).
JAX has no peer for the collectives: its CPU devices are set when it is imported
(--xla_force_host_platform_device_count), which the runner does once for every group.
"""
from __future__ import annotations

import os

import numpy as np

import cdnajit as cj
import cdnajit.numpy as cnp
from cdnajit import lax
from cdnajit.sharding import NamedSharding, PartitionSpec, make_mesh
from workloads import Case, Context, Workload, normal, rng

F32_EPSILON = 2.0**-24   # unit roundoff of float32
DEVICES = 8
NUM_DEVICES_VARIABLE = "CDNAJIT_NUM_DEVICES"


def logical_devices(n: int):
    """At least n logical devices for this process (the variable is read at each devices() call)."""
    if int(os.environ.get(NUM_DEVICES_VARIABLE, "1")) < n:
        os.environ[NUM_DEVICES_VARIABLE] = str(n)


def copy_each(*messages):
    return [np.copy(m) for m in messages]


def placed_messages(seed: int, message_bytes: int, multiple: int = 1):
    """(the mesh, the 8 messages as rows, their ShardedArray: row d on device d); each message
    float32, `message_bytes` rounded down to whole `multiple`s of elements (at least one)."""
    logical_devices(DEVICES)
    mesh = make_mesh((DEVICES,), ("i",))
    count = max(multiple, message_bytes // 4) // multiple * multiple
    whole = normal(rng(seed), (DEVICES * count,))
    return mesh, whole.reshape(DEVICES, count), cj.device_put(whole, NamedSharding(mesh, PartitionSpec("i")))


def build_all_reduce(message_bytes: int):
    def build(ctx: Context) -> Case:
        mesh, messages, sharded = placed_messages(170, message_bytes)
        all_reduce = cj.shard_map(lambda x: lax.psum(x, "i"), mesh, in_specs=PartitionSpec("i"),
                                  out_specs=PartitionSpec())
        # Error model: 8 float32 terms summed in the ring's order against numpy's pairwise sum:
        # within 2 * 7 * eps * sum(|x|) of each other.
        bound = 2 * 7 * F32_EPSILON * float(np.abs(messages).sum(axis=0).max())
        return Case((sharded,), all_reduce, numpy=lambda _: copy_each(*messages), jax=None,
                    tolerance=(0.0, bound), reference=lambda _: messages.sum(axis=0))
    return build


def build_all_gather(message_bytes: int):
    def build(ctx: Context) -> Case:
        mesh, messages, sharded = placed_messages(174, message_bytes)
        all_gather = cj.shard_map(lambda x: lax.all_gather(x, "i", tiled=True), mesh, in_specs=PartitionSpec("i"),
                                  out_specs=PartitionSpec())
        # Data movement only: exact.
        return Case((sharded,), all_gather, numpy=lambda _: [np.concatenate(messages) for _ in range(DEVICES)],
                    jax=None, tolerance=(0.0, 0.0), reference=lambda _: messages.reshape(-1))
    return build


def build_reduce_scatter(message_bytes: int):
    def build(ctx: Context) -> Case:
        mesh, messages, sharded = placed_messages(175, message_bytes, multiple=DEVICES)
        reduce_scatter = cj.shard_map(lambda x: lax.psum_scatter(x, "i", tiled=True), mesh,
                                      in_specs=PartitionSpec("i"), out_specs=PartitionSpec("i"))
        # Error model: as the all-reduce's, 8 terms in the ring's order against numpy's.
        bound = 2 * 7 * F32_EPSILON * float(np.abs(messages).sum(axis=0).max())
        return Case((sharded,), reduce_scatter, numpy=lambda _: messages.sum(axis=0), jax=None,
                    tolerance=(0.0, bound), reference=lambda _: messages.sum(axis=0))
    return build


def mlp(xp, x, w1, w2):
    return xp.tanh(x @ w1) @ w2


def build_tp_mlp(devices: int):
    def build(ctx: Context) -> Case:
        logical_devices(devices)
        batch, model, hidden = (64, 256, 1024) if ctx.quick else (256, 1024, 4096)
        x = normal(rng(171), (batch, model))
        w1 = normal(rng(172), (model, hidden), scale=model ** -0.5)
        w2 = normal(rng(173), (hidden, model), scale=hidden ** -0.5)
        mesh = make_mesh((devices,), ("model",))
        shardings = (NamedSharding(mesh, PartitionSpec()), NamedSharding(mesh, PartitionSpec(None, "model")),
                     NamedSharding(mesh, PartitionSpec("model", None)))
        placed = tuple(cj.device_put(a, s) for a, s in zip((x, w1, w2), shardings))
        ours = cj.jit(lambda x, w1, w2: mlp(cnp, x, w1, w2))
        jax_fn = ctx.jax.jit(lambda x, w1, w2: mlp(ctx.jax.numpy, x, w1, w2)) if ctx.jax is not None else None
        # Error model: each result sums `hidden` products of tanh values (|.| <= 1) and w2 entries,
        # in GEMM blocks and then across devices: within 2 * hidden * eps * sum|terms|.
        bound = 2 * hidden * F32_EPSILON * float((np.abs(w2)).sum(axis=0).max())
        # The weights are placed on the devices once, as a user places them; the runner's inputs
        # (which it also hands to JAX) are the unsharded arrays.
        return Case((x, w1, w2), lambda *_: ours(*placed), numpy=lambda *a: mlp(np, *a), jax=jax_fn,
                    tolerance=(0.0, bound),
                    flops=2 * 2 * batch * model * hidden)
    return build


SIZES = [8, 4 << 10, 256 << 10, 4 << 20, 64 << 20]


def size_name(n: int) -> str:
    return f"{n >> 20}MiB" if n >= 1 << 20 else f"{n >> 10}KiB" if n >= 1 << 10 else f"{n}B"


CCL_WORKLOADS = (
    *(Workload(f"W17.all_reduce.{size_name(n)}", f"f32 all-reduce of {size_name(n)} per device over 8 logical "
               f"devices (shard_map psum) vs numpy copying the 8 messages", build_all_reduce(n)) for n in SIZES),
    *(Workload(f"W17.all_gather.{size_name(n)}", f"f32 all-gather of {size_name(n)} per device over 8 logical "
               f"devices (shard_map all_gather) vs numpy concatenating them per device", build_all_gather(n))
      for n in SIZES if n <= 4 << 20),
    *(Workload(f"W17.reduce_scatter.{size_name(n)}", f"f32 reduce-scatter of {size_name(n)} per device over 8 "
               f"logical devices (shard_map psum_scatter) vs numpy summing the 8", build_reduce_scatter(n))
      for n in SIZES),
    *(Workload(f"W17.tp_mlp.{d}dev", f"tanh(x @ w1) @ w2, 256 x 1024 x 4096 f32, Megatron-split over {d} logical "
               f"devices vs unsharded numpy and JAX", build_tp_mlp(d)) for d in (1, 2, 4, 8)),
)
