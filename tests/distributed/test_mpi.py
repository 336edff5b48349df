"""cdnajit.distributed under mpiexec (the MPICH wheel's, beside this interpreter): 2 processes in
make test, 3, 4 and a process that dies under test-all; jitted programs over every process's devices."""
import os
import re
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def mpiexec() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = beside if os.path.exists(beside) else shutil.which("mpiexec")
    assert found, "mpiexec not found: pip install mpich mpi4py (pyproject's test extra)"
    return found


def ranks_ok(out: str) -> list[int]:
    """The ranks that printed "ok <rank>" (mpiexec forwards each process's writes as they come, so
    two processes' lines may interleave within one line of the merged output)."""
    return sorted(int(rank) for rank in re.findall(r"ok (\d+)", out))


def run(processes: int, script: str, *args, timeout: float = 240, status: int = 0) -> str:
    env = {**os.environ, "CDNAJIT_NUM_DEVICES": "2", "CDNAJIT_COMPILE_JOBS": "1"}
    result = subprocess.run([mpiexec(), "-n", str(processes), sys.executable, os.path.join(HERE, script), *args],
                            capture_output=True, text=True, timeout=timeout, env=env)
    assert result.returncode == status, result.stdout + result.stderr
    return result.stdout


# mpi_collectives.py: cdnajit.distributed's collectives (their MPI algorithms asked for by name);
# mpi_shared.py: the collectives in shared memory (every process on this host) and their errors;
# mpi_jit.py: jitted programs over every process's devices. Each in its quick form on 2 processes in
# make test; in full on more under test-all (3: recursive doubling folds rank 0 into rank 1 and back,
# not a power of two).
@pytest.mark.parametrize("script, processes, quick", [
    ("mpi_collectives.py", 2, True),
    ("mpi_shared.py", 2, True),
    ("mpi_jit.py", 2, True),
    pytest.param("mpi_shared.py", 4, False, marks=pytest.mark.slow),
    pytest.param("mpi_collectives.py", 3, False, marks=pytest.mark.slow),
    pytest.param("mpi_collectives.py", 4, False, marks=pytest.mark.slow),
    pytest.param("mpi_jit.py", 2, False, marks=pytest.mark.slow),
    pytest.param("mpi_jit.py", 3, False, marks=pytest.mark.slow),
])
def test_every_process_checks_its_results(script, processes, quick):
    out = run(processes, script, *(["quick"] if quick else []))
    assert ranks_ok(out) == list(range(processes)), out


@pytest.mark.slow
def test_a_process_that_dies_ends_the_job():
    # mpiexec ends the others and reports the dead process's status; nothing waits forever (timeout=).
    run(2, "mpi_dying_process.py", "crash", timeout=120, status=3)


@pytest.mark.slow
def test_a_process_that_never_calls_the_collective_makes_the_others_time_out():
    out = run(2, "mpi_dying_process.py", "absent", timeout=120)
    assert "timeout after 2." in out and "did not complete within 2.0 s on process 0" in out, out
    assert "ring timeout after 2." in out and "ring all-reduce did not complete within 2.0 s" in out, out
