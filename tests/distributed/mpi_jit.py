"""Run under mpiexec by tests/distributed/test_mpi.py (2 devices per process): jitted programs over a
mesh of every process's devices, as a JAX user runs one program under `mpiexec -n P`. Each process
makes the same global data from the same seeds; each checks the partitioned program's results
(the parts its devices hold) against numpy, and prints "ok <rank>". With the argument "quick"
(make test), the data-parallel step only."""
import sys

import numpy as np

import cdnajit as cj
import cdnajit.lax as lax
import cdnajit.numpy as cnp
from cdnajit.sharding import Mesh, NamedSharding, PartitionSpec as P

cj.distributed.initialize()
rank, n = cj.process_index(), cj.process_count()
devices = cj.devices()
assert len(devices) == 2 * n and len(cj.local_devices()) == 2
rng = np.random.default_rng(7)
mesh = Mesh(devices, ("data",))
batch = rng.standard_normal((8 * n, 16)).astype(np.float32)
w = rng.standard_normal((16, 4)).astype(np.float32) * 0.3
labels = rng.standard_normal((8 * n, 4)).astype(np.float32)
# Error model: f32 sums of at most 16 * 8n O(1) terms, regrouped by device: well inside 1e-5 relative.
tolerance = dict(rtol=1e-5, atol=1e-6)


def loss(w, x, y):
    return cnp.mean((cnp.tanh(x @ w) - y) ** 2)


@cj.jit
def step(w, x, y):
    value, grad = cj.value_and_grad(loss)(w, x, y)
    return value, w - 0.1 * grad


def reference_step(w, x, y):
    h = np.tanh(x.astype(np.float64) @ w)
    grad = x.T.astype(np.float64) @ (2 * (h - y) * (1 - h ** 2)) / y.size
    return np.mean((h - y) ** 2), w - 0.1 * grad


x = cj.device_put(batch, NamedSharding(mesh, P("data")))
y = cj.device_put(labels, NamedSharding(mesh, P("data")))
assert [d.process_index for d, _ in x.addressable_shards] == [rank, rank]
value, new_w = step(w, x, y)
want_value, want_w = reference_step(w, batch, labels)
np.testing.assert_allclose(np.asarray(value), want_value, **tolerance)
np.testing.assert_allclose(np.asarray(new_w), want_w, **tolerance)
optimized = step.lower(w, x, y).compile().as_text("optimized")
assert "io_callback" in optimized and "library_call" in optimized, optimized
if sys.argv[1:] == ["quick"]:
    print(f"ok {rank}")
    sys.exit(0)

# A sharded result stays sharded: this process holds its devices' rows; gathering it is JAX's error.
doubled = cj.jit(lambda x: 2 * x)(x)
for device, shard in doubled.addressable_shards:
    k = devices.index(device)
    np.testing.assert_array_equal(shard, 2 * batch[8 * k // 2:8 * (k + 1) // 2])
try:
    np.asarray(doubled)
    raise AssertionError("a non-addressable array was gathered")
except RuntimeError as error:
    assert "other processes" in str(error), error
# Replicated out_shardings gather it inside the program (an all-gather between processes).
gathered = cj.jit(lambda x: 2 * x, out_shardings=NamedSharding(mesh, P()))(x)
np.testing.assert_array_equal(np.asarray(gathered), 2 * batch)

# shard_map's collectives between processes: psum, pmax, all_gather, psum_scatter, and axis_index.
def per_device(block):
    index = lax.axis_index("data").astype(np.float32)
    total = lax.psum(block, "data")
    top = lax.pmax(block, "data")
    everything = lax.all_gather(block, "data", tiled=True)
    scattered = lax.psum_scatter(block, "data", tiled=True)
    return total + index, top, everything, scattered


g = 2 * n                                       # the mesh's devices; each holds a block of g rows
blocks = rng.standard_normal((g * g, 3)).astype(np.float32)
mapped = cj.shard_map(per_device, mesh=mesh, in_specs=P("data"), out_specs=(P("data"), P("data"), P("data"), P("data")))
total, top, everything, scattered = cj.jit(mapped)(blocks)
parts = blocks.reshape(g, g, 3)
for device, shard in total.addressable_shards:
    k = devices.index(device)
    np.testing.assert_allclose(shard, parts.sum(0) + k, **tolerance)
for device, shard in top.addressable_shards:
    np.testing.assert_array_equal(shard, parts.max(0))
for device, shard in everything.addressable_shards:
    np.testing.assert_array_equal(shard, blocks)
summed = parts.sum(0)
for device, shard in scattered.addressable_shards:
    k = devices.index(device)
    np.testing.assert_allclose(shard, summed[k:k + 1], **tolerance)

# all_to_all and ppermute (a ring shift) between processes; a scalar ppermute, and one that sends
# only from the last device to the first (the others get zeros).
def exchanged(block):
    shifted = lax.ppermute(block, "data", [(k, (k + 1) % g) for k in range(g)])
    count = lax.ppermute(lax.axis_index("data"), "data", [(k, (k + 1) % g) for k in range(g)])
    last = lax.ppermute(block, "data", [(g - 1, 0)])
    return lax.all_to_all(block, "data", 0, 0, tiled=True), shifted, count[None], last


mapped = cj.shard_map(exchanged, mesh=mesh, in_specs=P("data"), out_specs=(P("data"),) * 4)
swapped, shifted, counts, last = cj.jit(mapped)(blocks)
for device, shard in last.addressable_shards:
    k = devices.index(device)
    np.testing.assert_array_equal(shard, parts[g - 1] if k == 0 else 0 * parts[0])
for device, shard in swapped.addressable_shards:
    k = devices.index(device)
    np.testing.assert_array_equal(shard, parts[:, k])     # block s of device k: device s's block k
for device, shard in shifted.addressable_shards:
    k = devices.index(device)
    np.testing.assert_array_equal(shard, parts[(k - 1) % g])
for device, shard in counts.addressable_shards:
    assert shard[0] == (devices.index(device) - 1) % g, shard

# A 2-D mesh: the model axis within a process, the data axis across processes.
grid = Mesh(np.array(devices, dtype=object).reshape(n, 2), ("data", "model"))
xs = cj.device_put(batch, NamedSharding(grid, P("data", None)))
ws = cj.device_put(w, NamedSharding(grid, P(None, "model")))
out = cj.jit(lambda x, w: cnp.sum(cnp.tanh(x @ w)), out_shardings=NamedSharding(grid, P()))(xs, ws)
np.testing.assert_allclose(np.asarray(out), np.tanh(batch.astype(np.float64) @ w).sum(), rtol=1e-5)
print(f"ok {rank}")
