"""Run under mpiexec by tests/distributed/test_mpi.py: every process checks cdnajit.distributed's
collectives against numpy on the data every process makes from the same seeds, and prints "ok".
With the argument "quick" (make test), only the integer sums (one reduction kernel), the
reduce-scatters and the gathers."""
import sys

import numpy as np

import cdnajit as cj

cj.distributed.initialize()
rank, n = cj.process_index(), cj.process_count()
assert cj.device_count() == n * len(cj.local_devices()), cj.devices()
assert all(d.process_index == rank for d in cj.local_devices())
data = [np.random.default_rng(p).integers(-1000, 1000, 1001).astype(np.int32) for p in range(n)]
quick = sys.argv[1:] == ["quick"]
for algorithm in ("ring", "tree", "doubling"):
    for op, fold in (("sum", np.sum),) if quick else (("sum", np.sum), ("max", np.max)):
        got = cj.distributed.all_reduce(data[rank], op, algorithm=algorithm)
        np.testing.assert_array_equal(got, fold(data, axis=0))
rows = [np.random.default_rng(p).integers(-1000, 1000, (2 * n, 3)).astype(np.int32) for p in range(n)]
np.testing.assert_array_equal(cj.distributed.reduce_scatter(rows[rank]), np.sum(rows, axis=0)[2 * rank:2 * rank + 2])
floats = [np.random.default_rng(p).standard_normal((3, 5)).astype(np.float32) for p in range(n)]
np.testing.assert_array_equal(cj.distributed.all_gather(floats[rank]), np.concatenate(floats))
# Both algorithms of each (the host model picks recursive doubling for short messages, the ring
# for longer ones: distributed.runs_doubling).
wide = [np.random.default_rng(p).integers(-1000, 1000, (4 * n, 100)).astype(np.int32) for p in range(n)]
for algorithm in ("ring", "doubling"):
    np.testing.assert_array_equal(cj.distributed.all_gather(wide[rank], algorithm=algorithm), np.concatenate(wide))
    np.testing.assert_array_equal(cj.distributed.reduce_scatter(wide[rank], algorithm=algorithm),
                                  np.sum(wide, axis=0)[4 * rank:4 * (rank + 1)])
if quick:
    print(f"ok {rank}")
    sys.exit(0)
# The ring's edge cases: chunks of no elements (5 elements in chunks of 16), no elements at all, a
# 0-d all_gather, and chunks and blocks long enough for the reduction to take the worker pool
# (PARALLEL_MIN_WORK_ITEMS elements, 2**17), float sums within the error model below.
for size in (5, 0):
    np.testing.assert_array_equal(cj.distributed.all_reduce(data[rank][:size], "max", algorithm="ring"),
                                  np.max([d[:size] for d in data], axis=0))
np.testing.assert_array_equal(cj.distributed.all_gather(np.array(rank * 2.5), algorithm="ring"),
                              [p * 2.5 for p in range(n)])
long = [np.random.default_rng(p).standard_normal((n, 1 << 17)).astype(np.float32) for p in range(n)]
bound = (n - 1) * 2 ** -23 * np.abs(long).sum(0)
for algorithm in ("ring", "tree"):
    np.testing.assert_allclose(cj.distributed.all_reduce(long[rank], algorithm=algorithm), np.sum(long, axis=0),
                               rtol=0, atol=bound.max())
np.testing.assert_allclose(cj.distributed.reduce_scatter(long[rank], algorithm="ring"),
                           np.sum(long, axis=0)[rank:rank + 1], rtol=0, atol=bound.max())
total = cj.distributed.all_reduce(floats[rank])            # 60 B: recursive doubling
# Error model: n f32 terms in any order are within (n - 1) eps sum|x| of each other.
np.testing.assert_allclose(total, np.sum(floats, axis=0), rtol=0, atol=(n - 1) * 2 ** -23 * np.abs(floats).sum(0).max())
np.testing.assert_array_equal(cj.distributed.broadcast(floats[rank], root=n - 1), floats[n - 1])
for root in range(n):   # every root of the tree: a 0-d array and bools too, every byte exact
    assert cj.distributed.broadcast(np.array(rank * 1.5), root=root) == root * 1.5
    np.testing.assert_array_equal(cj.distributed.broadcast(np.arange(5) % (rank + 2) == 0, root=root),
                                  np.arange(5) % (root + 2) == 0)
try:
    cj.distributed.all_reduce(np.zeros(3 + rank, np.float32))
    raise AssertionError("mismatched shapes were accepted")
except ValueError as error:
    assert "process 0 has (3,) float32" in str(error) or rank == 0 and "process 1 has (4,)" in str(error), error
# The shape check travels in the messages' headers: a process whose size picks another algorithm, or
# one that asks for another algorithm, makes every process raise rather than wait.
try:
    cj.distributed.all_reduce(np.zeros(2 if rank else 1 << 20, np.float32))    # doubling on 1.. / ring on 0
    raise AssertionError("mismatched sizes (and algorithms) were accepted")
except ValueError as error:
    assert "has (1048576,) float32" in str(error) or rank == 0 and "has (2,) float32" in str(error), error
try:
    cj.distributed.all_reduce(floats[rank], algorithm="ring" if rank == n - 1 else "doubling")
    raise AssertionError("mismatched algorithms were accepted")
except ValueError as error:
    assert "different arguments" in str(error) or "different reducers or algorithms" in str(error), error
np.testing.assert_array_equal(cj.distributed.all_reduce(data[rank], algorithm="doubling"), np.sum(data, axis=0))
# Every collective checks in its messages' headers: different roots, different collectives or
# different shapes are a ValueError on every process, not a wait until the timeout.
for call, expected in ((lambda: cj.distributed.broadcast(floats[rank], root=rank % 2), "different arguments"),
                       (lambda: cj.distributed.all_gather(floats[rank]) if rank else cj.distributed.broadcast(floats[rank]),
                        "different collectives"),
                       (lambda: cj.distributed.all_gather(np.zeros(3 + rank, np.float32)), "has (")):
    try:
        call()
        raise AssertionError(f"a mismatch was accepted ({expected})")
    except ValueError as error:
        assert expected in str(error), error
# Short all_gathers and reduce_scatters run as recursive doubling's all-reduce: the gather moves
# every byte exactly (a negative zero, a NaN's payload, bools, a 0-d array), and arrays of one size
# but other shapes on different processes are a ValueError.
odd = np.array([-0.0, np.nan, np.inf, rank], np.float32)
odd[1] = np.frombuffer(np.uint32(0x7FC00000 + rank).tobytes(), np.float32)[0]
got = cj.distributed.all_gather(odd)
assert got.tobytes() == b"".join(np.array([-0.0, 0, np.inf, p], np.float32).tobytes()[:4] +
                                  np.uint32(0x7FC00000 + p).tobytes() + np.array([np.inf, p], np.float32).tobytes()
                                  for p in range(n)), got
np.testing.assert_array_equal(cj.distributed.all_gather(np.array(rank % 2 == 0)), [p % 2 == 0 for p in range(n)])
np.testing.assert_array_equal(cj.distributed.reduce_scatter(floats[rank][:1].repeat(n, 0), "max"),
                              np.max(floats, axis=0)[:1])
try:
    cj.distributed.all_gather(np.zeros((2, 3) if rank else (3, 2), np.float32))
    raise AssertionError("an all_gather of other shapes of one size was accepted")
except ValueError as error:
    assert "has (" in str(error), error
try:
    cj.distributed.reduce_scatter(np.zeros((2 * n + 1, 3), np.float32))
    raise AssertionError("an indivisible reduce_scatter was accepted")
except ValueError as error:
    assert f"not a multiple of the {n} processes" in str(error), error
for size in list(range(1, 71)) + [1]:   # more shapes than the plans kept: the oldest are freed, then made again
    np.testing.assert_array_equal(cj.distributed.all_reduce(np.full(size, rank + 1, np.int32)),
                                  np.full(size, n * (n + 1) // 2, np.int32))
print(f"ok {rank}")
sys.stdout.flush()
