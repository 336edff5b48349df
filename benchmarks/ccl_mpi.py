"""W17's cross-process part, run by hand under mpiexec (run.py times one process):

    .venv/bin/mpiexec -n 4 .venv/bin/python benchmarks/ccl_mpi.py [--quick]

Times cdnajit.distributed.all_reduce (float32 sum; the algorithm the host model picks) against
mpi4py's own Allreduce on the same buffers, the two interleaved round by round, and prints one table
row per size on rank 0: the best and the median round (many rounds for small messages, whose
times a loaded host scatters widely) and rccl-tests' bus bandwidth of the best, S/t * 2(n - 1)/n.
"""
from __future__ import annotations

import sys
import time

import numpy as np
from mpi4py import MPI

import cdnajit as cj

SIZES = [8, 4 << 10, 32 << 10, 256 << 10, 4 << 20, 64 << 20]


def rounds(nbytes: int) -> int:
    return 200 if nbytes <= 256 << 10 else 5


def timed(fn, comm) -> float:
    """One round: the slowest process's time."""
    comm.Barrier()
    start = time.perf_counter()
    fn()
    return comm.allreduce(time.perf_counter() - start, op=MPI.MAX)


def main():
    cj.distributed.initialize()
    comm = MPI.COMM_WORLD
    n, rank = comm.Get_size(), comm.Get_rank()
    sizes = SIZES[:5] if "--quick" in sys.argv else SIZES
    rows = []
    for size in sizes:
        x = np.random.default_rng(rank).standard_normal(max(1, size // 4)).astype(np.float32)
        out = np.empty_like(x)
        ours = cj.distributed.all_reduce(x)                 # compiles the reduction step once
        comm.Allreduce(x, out)
        assert np.allclose(ours, out, rtol=0, atol=n * 2 ** -23 * float(np.abs(out).max() + n * 4))
        ours, theirs = [], []
        for _ in range(rounds(size)):
            ours.append(timed(lambda: cj.distributed.all_reduce(x), comm))
            theirs.append(timed(lambda: comm.Allreduce(x, out), comm))
        factor = 2 * (n - 1) / n
        rows.append((size, len(ours), min(ours), min(theirs), np.median(ours), np.median(theirs),
                     x.nbytes / min(ours) * factor / 1e9, x.nbytes / min(theirs) * factor / 1e9))
    if rank == 0:
        print(f"{n} processes, float32 sum all-reduce (us; best and median of the rounds)")
        print("bytes/process rounds  cdnajit best  mpi4py best  ratio  cdnajit median  mpi4py median  ratio  "
              "busbw GB/s cdnajit  mpi4py")
        for size, count, best_ours, best_mpi, median_ours, median_mpi, bw_ours, bw_mpi in rows:
            print(f"{size:>13} {count:>6}  {best_ours * 1e6:>12.1f}  {best_mpi * 1e6:>11.1f}  {best_ours / best_mpi:>5.2f}  "
                  f"{median_ours * 1e6:>14.1f}  {median_mpi * 1e6:>13.1f}  {median_ours / median_mpi:>5.2f}  "
                  f"{bw_ours:>18.3f}  {bw_mpi:>6.3f}")


if __name__ == "__main__":
    main()
