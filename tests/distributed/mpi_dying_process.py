"""Run under mpiexec -n 2 by tests/distributed/test_mpi.py. With argument "crash", process 1 dies
(exit status 3) before the collective; with "absent", it never calls it (it sleeps past process 0's
timeout). Process 0's all-reduce must fail, not hang: killed by mpiexec with the job in the first
case, a TimeoutError within its timeout in the second, from the shape check and from the ring's
steps."""
import os
import sys
import time

import numpy as np

import cdnajit as cj
from cdnajit.frontend import distributed

cj.distributed.initialize()
if cj.process_index() == 1:
    if sys.argv[1] == "crash":
        os._exit(3)
    time.sleep(6)
    sys.exit(0)
start = time.monotonic()
try:
    cj.distributed.all_reduce(np.ones(1 << 16, np.float32), algorithm="ring", timeout=2.0)
    print("no error")
except TimeoutError as error:
    print(f"timeout after {time.monotonic() - start:.1f} s: {error}")
if sys.argv[1] == "absent":   # the ring's native steps time out too (its shape check, above, ran first)
    start = time.monotonic()
    try:
        distributed.stepped("all_reduce", np.ones(1 << 16, np.float32), "sum", 2.0, "ring all-reduce")
        print("no error")
    except TimeoutError as error:
        print(f"ring timeout after {time.monotonic() - start:.1f} s: {error}")
sys.stdout.flush()
os._exit(0)
