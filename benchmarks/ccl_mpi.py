"""W17's cross-process part, run by hand under mpiexec (run.py times one process):

    .venv/bin/mpiexec -n 4 .venv/bin/python benchmarks/ccl_mpi.py [--quick] [all_reduce all_gather reduce_scatter]

Times cdnajit.distributed's all_reduce (float32 sum; the algorithm the host model picks),
all_gather and reduce_scatter (sum) against mpi4py's own Allreduce, Allgather and
Reduce_scatter_block on the same buffers, the two interleaved round by round, and prints one table
per collective on rank 0, a row per size: the best and the median round (many rounds for small
messages, whose times a loaded host scatters widely) and rccl-tests' bus bandwidth of the best. The
size is each process's message (the all-gather's and the reduce-scatter's input); with S that size
in bytes, n processes and t the time, the bus bandwidth is S/t * 2(n - 1)/n for the all-reduce,
n S/t * (n - 1)/n for the all-gather (its output is n S) and S/t * (n - 1)/n for the reduce-scatter.
"""
from __future__ import annotations

import sys
import time

import numpy as np
from mpi4py import MPI

import cdnajit as cj

SIZES = [8, 4 << 10, 32 << 10, 256 << 10, 4 << 20, 64 << 20]
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


def rounds(nbytes: int) -> int:
    return 200 if nbytes <= 256 << 10 else 5


def timed(fn, comm) -> float:
    """One round: the slowest process's time."""
    comm.Barrier()
    start = time.perf_counter()
    fn()
    return comm.allreduce(time.perf_counter() - start, op=MPI.MAX)


def peers(collective: str, x: np.ndarray, comm):
    """(cdnajit's call, mpi4py's call writing its output buffer, that buffer, bus bandwidth factor)."""
    n = comm.Get_size()
    if collective == "all_reduce":
        out = np.empty_like(x)
        return (lambda: cj.distributed.all_reduce(x)), (lambda: comm.Allreduce(x, out)), out, 2 * (n - 1) / n
    if collective == "all_gather":
        out = np.empty(n * x.size, x.dtype)
        return (lambda: cj.distributed.all_gather(x)), (lambda: comm.Allgather(x, out)), out, n * (n - 1) / n
    out = np.empty(x.size // n, x.dtype)
    return (lambda: cj.distributed.reduce_scatter(x)), (lambda: comm.Reduce_scatter_block(x, out)), out, (n - 1) / n


def main():
    cj.distributed.initialize()
    comm = MPI.COMM_WORLD
    n, rank = comm.Get_size(), comm.Get_rank()
    sizes = SIZES[:5] if "--quick" in sys.argv else SIZES
    collectives = [c for c in COLLECTIVES if c in sys.argv] or COLLECTIVES
    for collective in collectives:
        rows = []
        for size in sizes:
            count = max(n, size // 4 // n * n)   # the reduce-scatter's blocks: whole elements, one per process
            x = np.random.default_rng(rank).standard_normal(count).astype(np.float32)
            ours, theirs, out, factor = peers(collective, x, comm)
            result = ours()                      # compiles the reduction step once
            theirs()
            # Error model: n float32 terms summed in other orders: within n eps (sum |terms|) of each other.
            assert np.allclose(result, out, rtol=0, atol=n * 2 ** -23 * float(np.abs(out).max() + n * 4))
            times_ours, times_theirs = [], []
            for _ in range(rounds(size)):
                times_ours.append(timed(ours, comm))
                times_theirs.append(timed(theirs, comm))
            rows.append((x.nbytes, len(times_ours), min(times_ours), min(times_theirs), np.median(times_ours),
                         np.median(times_theirs), x.nbytes / min(times_ours) * factor / 1e9,
                         x.nbytes / min(times_theirs) * factor / 1e9))
        if rank == 0:
            print(f"{n} processes, float32 {collective} (us; best and median of the rounds)")
            print("bytes/process rounds  cdnajit best  mpi4py best  ratio  cdnajit median  mpi4py median  ratio  "
                  "busbw GB/s cdnajit  mpi4py")
            for nbytes, count, best_ours, best_mpi, median_ours, median_mpi, bw_ours, bw_mpi in rows:
                print(f"{nbytes:>13} {count:>6}  {best_ours * 1e6:>12.1f}  {best_mpi * 1e6:>11.1f}  "
                      f"{best_ours / best_mpi:>5.2f}  {median_ours * 1e6:>14.1f}  {median_mpi * 1e6:>13.1f}  "
                      f"{median_ours / median_mpi:>5.2f}  {bw_ours:>18.3f}  {bw_mpi:>6.3f}")


if __name__ == "__main__":
    main()
