"""W17's cross-process part, run by hand under mpiexec (run.py times one process):

    .venv/bin/mpiexec -n 4 .venv/bin/python benchmarks/ccl_mpi.py [--quick]

Times cdnajit.distributed.all_reduce (float32 sum; the ring or tree the cost model picks) against
mpi4py's own Allreduce on the same buffers, each the best of several rounds, and prints one table
row per size on rank 0: times and rccl-tests' bus bandwidth, S/t * 2(n - 1)/n.
"""
from __future__ import annotations

import sys
import time

import numpy as np
from mpi4py import MPI

import cdnajit as cj

SIZES = [8, 4 << 10, 256 << 10, 4 << 20, 64 << 20]
ROUNDS = 5


def best_time(fn, comm) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        comm.Barrier()
        start = time.perf_counter()
        fn()
        elapsed = comm.allreduce(time.perf_counter() - start, op=MPI.MAX)
        best = min(best, elapsed)
    return best


def main():
    cj.distributed.initialize()
    comm = MPI.COMM_WORLD
    n, rank = comm.Get_size(), comm.Get_rank()
    sizes = SIZES[:4] if "--quick" in sys.argv else SIZES
    rows = []
    for size in sizes:
        x = np.random.default_rng(rank).standard_normal(max(1, size // 4)).astype(np.float32)
        out = np.empty_like(x)
        ours = cj.distributed.all_reduce(x)                 # compiles the reduction step once
        comm.Allreduce(x, out)
        assert np.allclose(ours, out, rtol=0, atol=n * 2 ** -23 * float(np.abs(out).max() + n * 4))
        t_ours = best_time(lambda: cj.distributed.all_reduce(x), comm)
        t_mpi = best_time(lambda: comm.Allreduce(x, out), comm)
        factor = 2 * (n - 1) / n
        rows.append((size, t_ours, t_mpi, x.nbytes / t_ours * factor / 1e9, x.nbytes / t_mpi * factor / 1e9))
    if rank == 0:
        print(f"{n} processes, float32 sum all-reduce, best of {ROUNDS}")
        print("bytes/process  cdnajit     mpi4py      cdnajit/mpi  busbw cdnajit GB/s  busbw mpi4py GB/s")
        for size, t_ours, t_mpi, bw_ours, bw_mpi in rows:
            print(f"{size:>13}  {t_ours * 1e6:>9.1f}us {t_mpi * 1e6:>9.1f}us {t_ours / t_mpi:>11.2f}  "
                  f"{bw_ours:>17.3f}  {bw_mpi:>17.3f}")


if __name__ == "__main__":
    main()
