"""Run under mpiexec by tests/distributed/test_mpi.py: the collectives in shared memory (every process
on this host: distributed.SharedPlan), checked by every process against numpy on the data every
process makes from the same seeds, and across processes byte for byte; then the errors (mismatched
shapes, dtypes, collectives), after which the processes carry on in step; last, the highest rank
skips a collective and the others time out. Prints "ok <rank>". With the argument "quick" (make
test), the integer reductions (one kernel per reducer) and the gathers of every dtype."""
import sys

import numpy as np
from mpi4py import MPI

import cdnajit as cj
from cdnajit.frontend import distributed

cj.distributed.initialize()
rank, n = cj.process_index(), cj.process_count()
quick = sys.argv[1:] == ["quick"]
assert distributed._state["shared"] is not None, "the processes of one host share no segment"
world = MPI.COMM_WORLD


def same_everywhere(result: np.ndarray):
    """Every process's result byte for byte equal (each reduces in the same order)."""
    results = world.allgather(result.tobytes())
    assert all(r == results[0] for r in results), f"process {rank}: results differ across processes"


def made(p: int, shape: tuple, dtype) -> np.ndarray:
    """Process p's array (any process can make any process's)."""
    rng, kind = np.random.default_rng(p), np.dtype(dtype).kind
    if kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if kind in "iu":
        return rng.integers(0, 100, shape).astype(dtype)
    if kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return (rng.standard_normal(shape) * 10).astype(dtype)


# Sizes: none, one, odd ones, and (not quick) ones across SHARED_SPLIT_BYTES (for more than 2
# processes each reducing its own chunk, chunks of odd lengths) and long enough for the worker pool
# (2**17 elements a chunk).
split = distributed.SHARED_SPLIT_BYTES
sizes = [0, 1, 5, 1023] + ([] if quick else [split // 4 - 1, split // 4 + 17, n << 17 | 3])
# (dtype, reducer): every dtype's sum, every reducer on int32 and float32 (a kernel each, compiled once).
cases = [(np.int32, "sum"), (np.int32, "max")] if quick else \
    [(dtype, "sum") for dtype in (np.int64, np.uint8, np.float64, np.float16)] + \
    [(dtype, op) for dtype in (np.int32, np.float32) for op in ("sum", "prod", "max", "min")]
for dtype, op in cases:
    for size in sizes:
        data = [made(p, (size,), dtype) for p in range(n)]
        got = cj.distributed.all_reduce(data[rank], op)
        assert got.dtype == dtype and got.shape == (size,), (got.dtype, got.shape)
        same_everywhere(got)
        expected = data[0].copy()
        for p in range(1, n):             # rank order, as the processes reduce
            expected = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[op](
                expected, data[p]).astype(dtype)
        if np.dtype(dtype).kind == "f":
            # Error model: the same sums or products in the same order as numpy's, each operation
            # rounded once: within n eps of the terms' magnitudes (sum) or of the result (prod).
            eps = np.finfo(dtype).eps
            scale = np.abs(np.array(data, np.float64)).sum(0) if op == "sum" else np.abs(expected.astype(np.float64))
            np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=0,
                                       atol=float((n * eps * scale).max(initial=0)))
        else:
            np.testing.assert_array_equal(got, expected)
for dtype in (np.int32,) if quick else (np.int32, np.float32):
    # reduce_scatter: blocks of one row and of three (not aligned in the slots), and from
    # INPUT_READ_BYTES blocks of odd lengths that the processes read from their own input (not
    # quick: long enough for the worker pool), summed in rank order as numpy's does.
    input_rows = distributed.INPUT_READ_BYTES // (12 * n) + 1
    for rows in (1, 3, input_rows) + (() if quick else (input_rows + 2, (1 << 17) // 3 + 5)):
        blocks = [made(p, (n * rows, 3), dtype) for p in range(n)]
        got = cj.distributed.reduce_scatter(blocks[rank], "max")
        np.testing.assert_array_equal(got, np.max(blocks, axis=0)[rows * rank:rows * (rank + 1)])
        expected = blocks[0][rows * rank:rows * (rank + 1)]
        for p in range(1, n):
            expected = expected + blocks[p][rows * rank:rows * (rank + 1)]
        np.testing.assert_array_equal(cj.distributed.reduce_scatter(blocks[rank]), expected)
# all_gather and broadcast move every byte: every dtype (bool and complex too), a 0-d array, NaN payloads.
for dtype in (np.int8, np.uint16, np.int32, np.int64, np.float16, np.float32, np.float64, np.complex64, np.bool_):
    for shape in ((), (1,), (3, 5), (1001,)):
        got = cj.distributed.all_gather(made(rank, shape, dtype))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, np.concatenate([np.atleast_1d(made(p, shape, dtype)) for p in range(n)]))
        for root in range(n):
            np.testing.assert_array_equal(cj.distributed.broadcast(made(rank, shape, dtype), root=root),
                                          made(root, shape, dtype))
# Over SHARED_SLOT_BYTES a process: all_reduce in pieces of a slot (the last of 5 elements); all_gather
# over MPI after the shared-memory check.
long = distributed.SHARED_SLOT_BYTES // 4 + 5
data = [made(p, (long,), np.int32) for p in range(n)]
got = cj.distributed.all_reduce(data[rank])
same_everywhere(got)
np.testing.assert_array_equal(got, np.sum(data, axis=0, dtype=np.int32))
np.testing.assert_array_equal(cj.distributed.all_gather(data[rank].reshape(-1, 1)[:long - 1]),
                              np.concatenate([d[:long - 1] for d in data]).reshape(-1, 1))
odd = np.array([-0.0, np.nan, np.inf, rank], np.float32)
odd[1] = np.frombuffer(np.uint32(0x7FC00000 + rank).tobytes(), np.float32)[0]
gathered = cj.distributed.all_gather(odd).view(np.uint32).reshape(n, 4)
assert all(gathered[p, 1] == 0x7FC00000 + p and gathered[p, 0] == 0x80000000 for p in range(n)), gathered
# Mismatches: a ValueError on every process naming what differs, after which the processes carry on.
for call, expected in ((lambda: cj.distributed.all_reduce(np.zeros(3 + rank, np.int32)), "has ("),
                       (lambda: cj.distributed.all_reduce(np.zeros(3, np.int32 if rank else np.int64)), "has (3,)"),
                       (lambda: cj.distributed.all_reduce(np.zeros(3, np.int32), "max" if rank else "sum"),
                        "different arguments"),
                       (lambda: cj.distributed.all_gather(np.zeros(3)) if rank else cj.distributed.broadcast(np.zeros(3)),
                        "different collectives"),
                       (lambda: cj.distributed.reduce_scatter(np.zeros((2 * n + 1, 3))), "not a multiple"),
                       (lambda: cj.distributed.reduce_scatter(np.zeros((n * (input_rows + rank), 3), np.float32)),
                        "has ("),
                       (lambda: cj.distributed.broadcast(np.zeros(3), root=n), "is not a process"),
                       (lambda: cj.distributed.all_reduce(np.zeros(long - 5 + rank, np.int32)), "has ("),
                       (lambda: cj.distributed.all_gather(np.zeros(long + rank, np.int32)), "has ("),
                       (lambda: cj.distributed.all_gather(np.zeros(long - 5 + rank, np.int32)), "has (")):
    try:
        call()
        raise AssertionError(f"a mismatch was accepted ({expected})")
    except ValueError as error:
        assert expected in str(error), error
np.testing.assert_array_equal(cj.distributed.all_reduce(np.full(7, rank, np.int32)), np.full(7, n * (n - 1) // 2))
# A process that skips a collective: the others time out (TimeoutError, not a hang), and their
# shared-memory collectives then refuse to run out of step.
if rank == n - 1:
    print(f"ok {rank}")
    sys.exit(0)
try:
    cj.distributed.all_reduce(np.ones(5, np.int32), timeout=0.5)
    raise AssertionError("no timeout")
except TimeoutError as error:
    assert "did not complete within 0.5 s" in str(error), error
try:
    cj.distributed.all_gather(np.ones(5, np.int32))
    raise AssertionError("ran out of step")
except RuntimeError as error:
    assert "out of step" in str(error), error
print(f"ok {rank}")
sys.stdout.flush()
