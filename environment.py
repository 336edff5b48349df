"""Settings every stage reads from the environment.

CDNAJIT_CACHE_DIR is the folder of the persistent compile cache (runtime/cache.py) and of the GEMM
tuning database (libs/blas/tuning.py); unset, it is the user's cache folder.
CDNAJIT_LIBRARY_DIR is the folder of the libraries' prebuilt kernels (`python -m cdnajit warm`,
runtime/warm.py); unset, it is share/cdnajit/kernels under the Python environment cdnajit is
installed in, so the kernels come and go with the installation, as a ROCm library's do.
CDNAJIT_COMPILE_JOBS is how many processes compile a program's kernels at once
(codegen/llvm_worker.py: map_in_forks); unset, one per CPU this process may run on.
"""
import os
import sys

CACHE_DIR_ENV = "CDNAJIT_CACHE_DIR"
LIBRARY_DIR_ENV = "CDNAJIT_LIBRARY_DIR"
COMPILE_JOBS_ENV = "CDNAJIT_COMPILE_JOBS"


def cache_directory() -> str:
    """$CDNAJIT_CACHE_DIR, else $XDG_CACHE_HOME/cdnajit, else ~/.cache/cdnajit (read at each call,
    so a program may point it elsewhere at any time)."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cdnajit")


def library_directory() -> str:
    """$CDNAJIT_LIBRARY_DIR, else <sys.prefix>/share/cdnajit/kernels (read at each call)."""
    return os.environ.get(LIBRARY_DIR_ENV) or os.path.join(sys.prefix, "share", "cdnajit", "kernels")


def compile_jobs() -> int:
    """$CDNAJIT_COMPILE_JOBS (a positive integer), else the number of CPUs this process may run on."""
    configured = os.environ.get(COMPILE_JOBS_ENV)
    if configured is None or configured == "":
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if not configured.strip().isdigit() or int(configured) < 1:
        raise ValueError(f"{COMPILE_JOBS_ENV}={configured!r}: expected a positive number of processes")
    return int(configured)
